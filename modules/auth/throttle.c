/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The brute-force throttle (see throttle.h for what a source is and the
 * counting rules).
 *
 * Layout: one array of <max> sources and one array of <max> * <threshold>
 * failure times (a ring per source), both allocated at creation; sources
 * are threaded on a hash chain per bucket (portico/hash.h) and on one
 * doubly linked list in order of last failure (head = most recent;
 * portico/lru.h), unused ones on a free list through the chain's link.
 *
 * Source keys are chosen by clients (any IPv6 /64 they hold), so buckets
 * come from SipHash-2-4 under a random key drawn at creation: a client
 * cannot aim its addresses at one chain.
 *
 * It deliberately does not do: locking (one loop thread), name or user
 * based counting (that is the caller's), or any I/O.
 */
#include "modules/auth/throttle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <portico/hash.h>
#include <portico/lru.h>

#define THR_NIL		PT_LRU_NIL	/* and PT_CHAIN_NIL: both UINT32_MAX */
#define THR_KEY_LEN	16
/* How many of the oldest sources eviction looks at for an idle one. */
#define THR_EVICT_SCAN	8

struct throttle_src {
	uint8_t			 s_key[THR_KEY_LEN];
	uint64_t		 s_blocked_until_ms;
	uint64_t		 s_last_fail_ms;
	uint32_t		 s_nfail;	/* in the ring, <= threshold */
	uint32_t		 s_ring_pos;	/* next ring entry to write */
	uint32_t		 s_hnext;	/* hash chain, or free list */
	struct pt_lru_link	 s_lru;		/* order of last failure */
};

struct auth_throttle {
	uint32_t		 threshold;	/* 0: disabled */
	uint32_t		 max;
	uint64_t		 window_ms;	/* 0: no window */
	uint64_t		 penalty_ms;
	uint32_t		 mask;		/* buckets - 1 */
	uint32_t		 head;
	uint32_t		 tail;
	uint32_t		 free_head;
	uint64_t		 hkey[2];
	uint32_t		*buckets;
	struct throttle_src	*srcs;
	uint64_t		*times;		/* threshold per source */
};

/* ---- keys and hashing ---------------------------------------------------- */

/*
 * Writes the source key of <sa> into <key>: IPv4 (plain or mapped) as
 * ::ffff:a.b.c.d, IPv6 as its /64 followed by zeros. The two never meet:
 * an IPv4 key has non-zero low 64 bits, a /64 key zero ones. Returns false
 * for any other family.
 */
static bool
throttle_key(const struct sockaddr *sa, uint8_t key[THR_KEY_LEN])
{
	memset(key, 0, THR_KEY_LEN);
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		key[10] = key[11] = 0xff;
		memcpy(key + 12, &sin->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			memcpy(key, &sin6->sin6_addr, THR_KEY_LEN);
			return true;
		}
		memcpy(key, &sin6->sin6_addr, 8);
		return true;
	}
	return false;
}

/* SipHash-2-4 of the 16-byte <key> under <t->hkey>. */
static uint64_t
throttle_hash(const struct auth_throttle *t, const uint8_t key[THR_KEY_LEN])
{
	return pt_siphash24(t->hkey[0], t->hkey[1], key, THR_KEY_LEN);
}

/* ---- lists -------------------------------------------------------------- */

static struct pt_chain
throttle_chain(const struct auth_throttle *t)
{
	return PT_CHAIN(t->srcs, s_hnext, t->buckets, t->mask);
}

static struct pt_lru
throttle_lru(struct auth_throttle *t)
{
	return PT_LRU(t->srcs, s_lru, &t->head, &t->tail);
}

static uint32_t
throttle_find(const struct auth_throttle *t, const uint8_t key[THR_KEY_LEN])
{
	uint32_t	 i;

	for (i = pt_chain_first(throttle_chain(t), throttle_hash(t, key));
	    i != THR_NIL; i = pt_chain_next(throttle_chain(t), i))
		if (memcmp(t->srcs[i].s_key, key, THR_KEY_LEN) == 0)
			return i;
	return THR_NIL;
}

static void
throttle_remove(struct auth_throttle *t, uint32_t i)
{
	struct throttle_src	*s = &t->srcs[i];

	pt_chain_del(throttle_chain(t), i, throttle_hash(t, s->s_key));
	pt_lru_unlink(throttle_lru(t), i);
	s->s_hnext = t->free_head;
	t->free_head = i;
}

/* ---- policy --------------------------------------------------------------- */

/* True when source <i> carries no state worth keeping at <now_ms>: no
 * penalty running and no failure that still counts. */
static bool
throttle_is_idle(const struct auth_throttle *t, uint32_t i, uint64_t now_ms)
{
	const struct throttle_src	*s = &t->srcs[i];

	if (now_ms < s->s_blocked_until_ms)
		return false;
	if (s->s_nfail == 0)
		return true;
	return t->window_ms != 0 && now_ms - s->s_last_fail_ms >= t->window_ms;
}

/* Frees one slot of a full table: an idle source among the oldest few if
 * there is one, else the oldest. */
static void
throttle_evict(struct auth_throttle *t, uint64_t now_ms)
{
	uint32_t	 i, n;

	for (i = t->tail, n = 0; i != THR_NIL && n < THR_EVICT_SCAN;
	    i = pt_lru_newer(throttle_lru(t), i), n++)
		if (throttle_is_idle(t, i, now_ms)) {
			throttle_remove(t, i);
			return;
		}
	throttle_remove(t, t->tail);
}

/* Returns the slot of a new source with <key>, at the head of the list. */
static uint32_t
throttle_add(struct auth_throttle *t, const uint8_t key[THR_KEY_LEN],
    uint64_t now_ms)
{
	struct throttle_src	*s;
	uint32_t		 i;

	if (t->free_head == THR_NIL)
		throttle_evict(t, now_ms);
	i = t->free_head;
	s = &t->srcs[i];
	t->free_head = s->s_hnext;
	memset(s, 0, sizeof(*s));
	memcpy(s->s_key, key, THR_KEY_LEN);
	pt_chain_add(throttle_chain(t), i, throttle_hash(t, key));
	pt_lru_push(throttle_lru(t), i);
	return i;
}

/* ---- API ---------------------------------------------------------------- */

struct auth_throttle *
auth_throttle_new(unsigned threshold, unsigned window_s, unsigned penalty_s,
    unsigned max_sources)
{
	struct auth_throttle	*t;
	uint32_t		 i;

	if (threshold > AUTH_THROTTLE_MAX_THRESHOLD ||
	    max_sources > AUTH_THROTTLE_MAX_SOURCES ||
	    window_s > AUTH_THROTTLE_MAX_SECONDS ||
	    penalty_s > AUTH_THROTTLE_MAX_SECONDS) {
		errno = EINVAL;
		return NULL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->head = t->tail = t->free_head = THR_NIL;
	if (threshold == 0 || max_sources == 0 || penalty_s == 0)
		return t;	/* disabled: threshold stays 0 */
	t->threshold = threshold;
	t->max = max_sources;
	t->window_ms = (uint64_t)window_s * 1000;
	t->penalty_ms = (uint64_t)penalty_s * 1000;
	t->mask = pt_chain_buckets(max_sources) - 1;
	t->srcs = calloc(t->max, sizeof(*t->srcs));
	t->times = calloc((size_t)t->max * threshold, sizeof(*t->times));
	t->buckets = malloc(((size_t)t->mask + 1) * sizeof(*t->buckets));
	if (t->srcs == NULL || t->times == NULL || t->buckets == NULL) {
		auth_throttle_free(t);
		errno = ENOMEM;
		return NULL;
	}
	/* The hash key only spreads chains; if the kernel has no entropy
	 * yet, the address of the table is a weak but nonzero stand-in. */
	if (getrandom(t->hkey, sizeof(t->hkey), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(t->hkey))
		t->hkey[0] = (uint64_t)(uintptr_t)t;
	pt_chain_clear(throttle_chain(t));
	for (i = 0; i < t->max; i++)
		t->srcs[i].s_hnext = i + 1 < t->max ? i + 1 : THR_NIL;
	t->free_head = 0;
	return t;
}

bool
auth_throttle_blocked(struct auth_throttle *t, const struct sockaddr *peer,
    uint64_t now_ms)
{
	uint8_t		 key[THR_KEY_LEN];
	uint32_t	 i;

	if (t == NULL || t->threshold == 0 || !throttle_key(peer, key))
		return false;
	if ((i = throttle_find(t, key)) == THR_NIL)
		return false;
	if (now_ms < t->srcs[i].s_blocked_until_ms)
		return true;
	/* Forget a source as soon as nothing about it counts any more, so
	 * the table holds the sources that matter when it fills. */
	if (throttle_is_idle(t, i, now_ms))
		throttle_remove(t, i);
	return false;
}

void
auth_throttle_fail(struct auth_throttle *t, const struct sockaddr *peer,
    uint64_t now_ms)
{
	struct throttle_src	*s;
	uint64_t		*ring, oldest;
	uint8_t			 key[THR_KEY_LEN];
	uint32_t		 i;

	if (t == NULL || t->threshold == 0 || !throttle_key(peer, key))
		return;
	if ((i = throttle_find(t, key)) == THR_NIL)
		i = throttle_add(t, key, now_ms);
	else
		pt_lru_touch(throttle_lru(t), i);
	s = &t->srcs[i];
	ring = t->times + (size_t)i * t->threshold;
	ring[s->s_ring_pos] = now_ms;
	s->s_ring_pos = (s->s_ring_pos + 1) % t->threshold;
	if (s->s_nfail < t->threshold)
		s->s_nfail++;
	s->s_last_fail_ms = now_ms;
	if (s->s_nfail < t->threshold)
		return;
	/* The ring is full: the entry about to be overwritten is the oldest
	 * of the last <threshold> failures. All of them count when it is
	 * still inside the window. */
	oldest = ring[s->s_ring_pos];
	if (t->window_ms != 0 && now_ms - oldest >= t->window_ms)
		return;
	s->s_blocked_until_ms = now_ms + t->penalty_ms;
	s->s_nfail = 0;
	s->s_ring_pos = 0;
}

void
auth_throttle_free(struct auth_throttle *t)
{
	if (t == NULL)
		return;
	free(t->srcs);
	free(t->times);
	free(t->buckets);
	free(t);
}
