/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The worker's resolver: c-ares run by our epoll loop, in front of a
 * bounded cache of answers.
 *
 * c-ares says through its socket-state callback which descriptors it wants
 * watched; we register them with the loop and hand readiness back through
 * ares_process_fd(). One loop timer, re-armed from ares_timeout() after
 * every call into c-ares, drives its retransmissions. Nothing here blocks
 * or reads a file after dns_init: /etc/hosts is read then (dns_hosts.c)
 * and c-ares asks DNS only. Nothing here allocates once warmed up either:
 * lookups and handles are recycled, the cache is allocated whole, and
 * c-ares allocates from dns_mem.c's free lists.
 *
 * Callers asking for a name that is already being looked up wait on that
 * lookup: one c-ares query per name, one handle per caller. Answers reach
 * callers from a loop timer, never from inside c-ares or dns_resolve(), so
 * a callback may call back into this file (resolve, cancel) freely.
 *
 * It deliberately does not apply resolv.conf search domains (a proxy
 * resolves what the client named, like Squid's default dns_defnames off),
 * serve stale answers, or cache timeouts and server failures: those are
 * worth asking again at once.
 *
 * Cache: cache_max entries allocated at dns_init() and recycled through a
 * free list, found through a chained hash table (one bucket per entry at
 * least, rounded to a power of two), and evicted least recently used when
 * full. LRU rather than "expiring first" because it is O(1) without a
 * second heap, and a hot name whose TTL is short is refreshed on its next
 * use anyway; stale entries sink to the old end and are the first to go,
 * and one found stale by a lookup is dropped on the spot.
 */
#include "config.h"

#include "worker/dns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <ares.h>

#include "common/counters.h"
#include "common/log.h"
#include "portico/hash.h"
#include "portico/lru.h"
#include "worker/dns_hosts.h"
#include "worker/dns_mem.h"
#include "worker/host.h"
#include "worker/loop.h"

#define DNS_NAME_MAX		253	/* RFC 1035 2.3.4, without the dot */
#define DNS_LABEL_MAX		63
/* The end of a chain, a list or the free list (PT_CHAIN_NIL, PT_LRU_NIL). */
#define DNS_NIL			UINT32_MAX
#define DNS_DEFAULT_TIMEOUT_MS	5000
/* Two tries per server: one lost datagram should not fail a lookup. */
#define DNS_TRIES		2
/* Below this per try, retrying cannot help: one try gets the whole time. */
#define DNS_MIN_TRY_MS		100

struct dns_lookup;

/* A caller's handle: waits on one lookup, or sits on the free list. */
struct dns_query {
	struct dns_query	*q_next;
	struct dns_query	*q_prev;
	struct dns_lookup	*q_lookup;	/* NULL while free */
	dns_done_fn		 q_done;
	void			*q_arg;
};

/*
 * One c-ares query, shared by everyone who asks for its name meanwhile.
 * It lives on dns_lookups from start until both c-ares has called back
 * (l_in_cares false) and its callers were told (no waiters, not
 * delivering). A lookup whose guard timer fired has told its callers
 * ETIMEDOUT and stays, unjoinable, until c-ares lets go of it.
 */
struct dns_lookup {
	struct dns_lookup	*l_next;	/* dns_lookups, or free list */
	struct dns_lookup	*l_prev;
	struct dns_query	*l_waiters;
	struct pt_timer		 l_timer;	/* guard, then delivery */
	bool			 l_joinable;	/* new callers may wait */
	bool			 l_in_cares;	/* c-ares owes a callback */
	bool			 l_delivering;
	int			 l_err;
	uint64_t		 l_start_us;	/* asked c-ares */
	uint32_t		 l_hash;
	size_t			 l_namelen;
	char			 l_name[DNS_NAME_MAX + 1];
	struct dns_result	 l_res;
};

/*
 * A cached answer. e_naddrs 0 is a negative entry (ENOENT). Addresses are
 * kept compact, ports being always 0, and expanded on a hit, so an entry
 * is ~400 bytes instead of a dns_result's ~1 KiB.
 */
struct dns_entry {
	uint32_t		 e_hash;
	uint32_t		 e_chain;	/* bucket chain, or free list */
	struct pt_lru_link	 e_lru;
	uint64_t		 e_expires;	/* loop_now() ms, stale from */
	uint8_t			 e_naddrs;
	uint8_t			 e_namelen;
	uint8_t			 e_family[DNS_MAX_ADDRS];	/* 4 or 6 */
	uint8_t			 e_addr[DNS_MAX_ADDRS][16];
	char			 e_name[DNS_NAME_MAX + 1];
};

/* A descriptor c-ares asked us to watch. Never freed before dns_fini: the
 * loop may still hold an event for it in the batch being run. */
struct dns_sock {
	struct loop_io		 s_io;
	struct dns_sock		*s_next;
	bool			 s_used;
};

static ares_channel		 dns_channel;
static bool			 dns_closing;
static struct dns_conf		 dns_cf;	/* servers not kept */
static struct pt_timer		 dns_ares_timer;
static struct dns_sock		*dns_socks;
static struct dns_lookup	*dns_lookups;
static struct dns_lookup	*dns_free_lookups;
static struct dns_query		*dns_free_queries;

static struct dns_entry		*dns_cache;
static uint32_t			*dns_buckets;
static uint32_t			 dns_bucket_mask;
static uint32_t			 dns_cache_free;
static uint32_t			 dns_lru_newest;
static uint32_t			 dns_lru_oldest;
static unsigned			 dns_cache_used;

/* ---- names and results ----------------------------------------------- */

/*
 * Copies <name> into <out> lower-cased, without one trailing dot, and
 * checks it is a name as host.c decides one (labels of 1..63 letters,
 * digits, '-' or '_', 253 bytes in all). Every protocol gives only such
 * names (host_parse at its edge); this is the second lock: a byte that
 * c-ares would read another way (a backslash escape) or send as it is
 * never reaches it. Returns false for a name no server could know.
 */
static bool
dns_name_norm(const char *name, size_t len, char *out, size_t *len_out)
{
	size_t		 i, label = 0;
	unsigned char	 c;

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > DNS_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		c = (unsigned char)name[i];
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c + 'a' - 'A');
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (!host_is_name_byte(c) || ++label > DNS_LABEL_MAX) {
			return false;
		}
		out[i] = (char)c;
	}
	if (label == 0)
		return false;
	out[len] = '\0';
	*len_out = len;
	return true;
}

static void
dns_addr_set(struct pt_addr *a, int family, const void *addr)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)&a->sa;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&a->sa;

	memset(a, 0, sizeof(*a));
	if (family == AF_INET) {
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, addr, 4);
		a->len = sizeof(*sin);
	} else {
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, addr, 16);
		a->len = sizeof(*sin6);
	}
}

/* The raw address bytes of <a> (4 or 16 of them). */
static const void *
dns_addr_bytes(const struct pt_addr *a)
{
	if (a->sa.ss_family == AF_INET)
		return &((const struct sockaddr_in *)&a->sa)->sin_addr;
	return &((const struct sockaddr_in6 *)&a->sa)->sin6_addr;
}

/*
 * An address written as a name: answered at once, never asked of DNS.
 * Also with a final dot ("192.0.2.1.", no name is all digits) and an
 * IPv6 one in brackets ("[2001:db8::1]", as URLs write it and some SOCKS
 * clients send it as a domain): as names they would only leak a query.
 */
static bool
dns_literal(const char *name, size_t len, struct dns_result *res)
{
	char		 buf[INET6_ADDRSTRLEN];
	unsigned char	 addr[16];

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len >= 2 && name[0] == '[' && name[len - 1] == ']') {
		name++;
		len -= 2;
		if (memchr(name, ':', len) == NULL)
			return false;	/* brackets hold IPv6 only */
	}
	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, addr) == 1)
		dns_addr_set(&res->addrs[0], AF_INET, addr);
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		dns_addr_set(&res->addrs[0], AF_INET6, addr);
	else
		return false;
	res->naddrs = 1;
	return true;
}

static const struct ares_addrinfo_node *
dns_node_next(const struct ares_addrinfo_node *n, int family)
{
	while (n != NULL && n->ai_family != family)
		n = n->ai_next;
	return n;
}

static bool
dns_result_has(const struct dns_result *res, int family, const void *addr)
{
	int	 i;

	for (i = 0; i < res->naddrs; i++)
		if (res->addrs[i].sa.ss_family == family &&
		    memcmp(dns_addr_bytes(&res->addrs[i]), addr,
		    family == AF_INET ? 4 : 16) == 0)
			return true;
	return false;
}

/*
 * Fills <res> from c-ares' list, which it sorted by RFC 6724: the two
 * families alternate, the one c-ares put first leading (RFC 8305 4), each
 * keeping c-ares' order, duplicates dropped. Returns how many it took.
 */
static int
dns_result_fill(struct dns_result *res, const struct ares_addrinfo *ai)
{
	const struct ares_addrinfo_node	*cur[2], *n;
	const void			*addr;
	int				 fam[2], turn = 0;

	res->naddrs = 0;
	n = ai->nodes;
	while (n != NULL && n->ai_family != AF_INET &&
	    n->ai_family != AF_INET6)
		n = n->ai_next;
	if (n == NULL)
		return 0;
	fam[0] = n->ai_family;
	fam[1] = fam[0] == AF_INET ? AF_INET6 : AF_INET;
	cur[0] = n;
	cur[1] = dns_node_next(ai->nodes, fam[1]);
	while (res->naddrs < DNS_MAX_ADDRS &&
	    (cur[0] != NULL || cur[1] != NULL)) {
		if (cur[turn] == NULL)
			turn ^= 1;
		n = cur[turn];
		cur[turn] = dns_node_next(n->ai_next, fam[turn]);
		if (fam[turn] == AF_INET)
			addr = &((const struct sockaddr_in *)
			    (const void *)n->ai_addr)->sin_addr;
		else
			addr = &((const struct sockaddr_in6 *)
			    (const void *)n->ai_addr)->sin6_addr;
		/* A duplicate gives its family's turn to the next one of the
		 * same family, so the alternation holds. */
		if (dns_result_has(res, fam[turn], addr))
			continue;
		dns_addr_set(&res->addrs[res->naddrs++], fam[turn], addr);
		turn ^= 1;
	}
	return res->naddrs;
}

/* The smallest TTL of the answer's records, aliases included. */
static unsigned
dns_answer_ttl(const struct ares_addrinfo *ai)
{
	const struct ares_addrinfo_node		*n;
	const struct ares_addrinfo_cname	*c;
	int					 ttl = INT32_MAX;

	for (n = ai->nodes; n != NULL; n = n->ai_next)
		if (n->ai_ttl < ttl)
			ttl = n->ai_ttl;
	for (c = ai->cnames; c != NULL; c = c->next)
		if (c->ttl < ttl)
			ttl = c->ttl;
	return ttl < 0 ? 0 : (unsigned)ttl;
}

static unsigned
dns_ttl_clamp(unsigned ttl)
{
	if (ttl > dns_cf.max_ttl_s)
		ttl = dns_cf.max_ttl_s;
	if (ttl < dns_cf.min_ttl_s)
		ttl = dns_cf.min_ttl_s;
	return ttl;
}

static int
dns_err_from_ares(int status)
{
	switch (status) {
	case ARES_SUCCESS:
		return 0;
	case ARES_ENOTFOUND:
	case ARES_ENODATA:
		return ENOENT;
	case ARES_ETIMEOUT:
		return ETIMEDOUT;
	case ARES_ECANCELLED:
	case ARES_EDESTRUCTION:
		return ECANCELED;
	default:
		return EIO;
	}
}

/* ---- cache ----------------------------------------------------------- */

static struct pt_chain
dns_chain(void)
{
	return PT_CHAIN(dns_cache, e_chain, dns_buckets, dns_bucket_mask);
}

static struct pt_lru
dns_lru(void)
{
	return PT_LRU(dns_cache, e_lru, &dns_lru_newest, &dns_lru_oldest);
}

static void
dns_cache_reset(void)
{
	unsigned	 i;

	pt_chain_clear(dns_chain());
	for (i = 0; i < dns_cf.cache_max; i++)
		dns_cache[i].e_chain = i + 1 < dns_cf.cache_max ? i + 1 :
		    DNS_NIL;
	dns_cache_free = 0;
	pt_lru_init(dns_lru());
	dns_cache_used = 0;
}

static uint32_t
dns_cache_find(const char *key, size_t len, uint32_t hash)
{
	const struct dns_entry	*e;
	uint32_t		 i;

	if (dns_cache == NULL)
		return DNS_NIL;
	for (i = pt_chain_first(dns_chain(), hash); i != DNS_NIL;
	    i = pt_chain_next(dns_chain(), i)) {
		e = &dns_cache[i];
		if (e->e_hash == hash && e->e_namelen == len &&
		    memcmp(e->e_name, key, len) == 0)
			return i;
	}
	return DNS_NIL;
}

static void
dns_cache_remove(uint32_t i)
{
	struct dns_entry	*e = &dns_cache[i];

	pt_chain_del(dns_chain(), i, e->e_hash);
	pt_lru_unlink(dns_lru(), i);
	e->e_chain = dns_cache_free;
	dns_cache_free = i;
	dns_cache_used--;
}

/* Gives a free entry, evicting the least recently used one when full. */
static uint32_t
dns_cache_take(void)
{
	uint32_t	 i;

	if (dns_cache_free == DNS_NIL)
		dns_cache_remove(dns_lru_oldest);
	i = dns_cache_free;
	dns_cache_free = dns_cache[i].e_chain;
	dns_cache_used++;
	return i;
}

/* Remembers <l>'s answer (<err> 0 or ENOENT) for <ttl_s> seconds. */
static void
dns_cache_put(const struct dns_lookup *l, int err, unsigned ttl_s)
{
	struct dns_entry	*e;
	uint32_t		 i;
	int			 k;

	if (dns_cache == NULL)
		return;
	i = dns_cache_find(l->l_name, l->l_namelen, l->l_hash);
	if (i != DNS_NIL) {
		pt_lru_unlink(dns_lru(), i);
	} else {
		if (ttl_s == 0)
			return;
		i = dns_cache_take();
		e = &dns_cache[i];
		e->e_hash = l->l_hash;
		e->e_namelen = (uint8_t)l->l_namelen;
		memcpy(e->e_name, l->l_name, l->l_namelen + 1);
		pt_chain_add(dns_chain(), i, e->e_hash);
	}
	e = &dns_cache[i];
	pt_lru_push(dns_lru(), i);
	if (ttl_s == 0) {
		/* An older answer must not outlive the one replacing it. */
		dns_cache_remove(i);
		return;
	}
	e->e_expires = loop_now() + (uint64_t)ttl_s * 1000;
	e->e_naddrs = err == 0 ? (uint8_t)l->l_res.naddrs : 0;
	for (k = 0; k < e->e_naddrs; k++) {
		e->e_family[k] = l->l_res.addrs[k].sa.ss_family == AF_INET ?
		    4 : 6;
		memcpy(e->e_addr[k], dns_addr_bytes(&l->l_res.addrs[k]),
		    e->e_family[k] == 4 ? 4 : 16);
	}
}

/* A fresh entry for <key> into <err_out> and <res>, or false. */
static bool
dns_cache_get(const char *key, size_t len, uint32_t hash, int *err_out,
    struct dns_result *res)
{
	struct dns_entry	*e;
	uint32_t		 i;
	int			 k;

	i = dns_cache_find(key, len, hash);
	if (i == DNS_NIL)
		return false;
	e = &dns_cache[i];
	if (loop_now() >= e->e_expires) {
		dns_cache_remove(i);
		return false;
	}
	pt_lru_touch(dns_lru(), i);
	*err_out = e->e_naddrs == 0 ? ENOENT : 0;
	res->naddrs = e->e_naddrs;
	for (k = 0; k < e->e_naddrs; k++)
		dns_addr_set(&res->addrs[k],
		    e->e_family[k] == 4 ? AF_INET : AF_INET6, e->e_addr[k]);
	return true;
}

/* ---- c-ares in the loop ---------------------------------------------- */

static void
dns_on_ares_timer(struct pt_timer *t, void *arg);

/* After every call into c-ares: its next retransmission or timeout. */
static void
dns_timer_update(void)
{
	struct timeval	 tv, *tvp;
	uint64_t	 ms;

	tvp = ares_timeout(dns_channel, NULL, &tv);
	if (tvp == NULL) {
		pt_timer_stop(&dns_ares_timer);
		return;
	}
	/* Rounded up: waking before c-ares' deadline would only make it do
	 * nothing and ask for the remainder. */
	ms = (uint64_t)tvp->tv_sec * 1000 + ((uint64_t)tvp->tv_usec + 999) /
	    1000;
	pt_timer_start(&dns_ares_timer, ms, dns_on_ares_timer, NULL);
}

static void
dns_on_ares_timer(struct pt_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	ares_process_fd(dns_channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	dns_timer_update();
}

static void
dns_on_sock(struct loop_io *io, uint32_t events)
{
	ares_socket_t	 rfd = ARES_SOCKET_BAD, wfd = ARES_SOCKET_BAD;

	/* An error or hang-up is reported by the read (or the pending
	 * write) that c-ares then attempts. */
	if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0)
		rfd = io->fd;
	if ((events & EPOLLOUT) != 0 || ((events & (EPOLLERR | EPOLLHUP))
	    != 0 && (io->events & EPOLLOUT) != 0))
		wfd = io->fd;
	ares_process_fd(dns_channel, rfd, wfd);
	dns_timer_update();
}

static void
dns_on_sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct dns_sock	*s, *spare = NULL;
	uint32_t	 events;
	int		 rc;

	(void)data;
	events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
	for (s = dns_socks; s != NULL; s = s->s_next) {
		if (s->s_used && s->s_io.fd == fd)
			break;
		if (!s->s_used && spare == NULL)
			spare = s;
	}
	if (s != NULL) {
		if (events == 0) {
			loop_io_stop(&s->s_io);
			s->s_used = false;
		} else if ((rc = loop_io_set(&s->s_io, events)) < 0) {
			pt_log_err(PT_LOG_ERR, -rc, "dns: epoll_ctl fd %d", fd);
		}
		return;
	}
	if (events == 0)
		return;
	if (spare == NULL) {
		/* c-ares keeps a socket or two per server: setup-sized. */
		if ((spare = calloc(1, sizeof(*spare))) == NULL) {
			pt_log(PT_LOG_ERR, "dns: out of memory for a socket");
			return;
		}
		spare->s_next = dns_socks;
		dns_socks = spare;
	}
	/* Unwatched, the socket's queries simply time out. */
	if ((rc = loop_io_start(&spare->s_io, fd, events, dns_on_sock)) < 0)
		pt_log_err(PT_LOG_ERR, -rc, "dns: epoll_ctl add fd %d", fd);
	else
		spare->s_used = true;
}

/* ---- lookups and handles --------------------------------------------- */

static struct dns_query *
dns_query_get(void)
{
	struct dns_query	*q = dns_free_queries;

	if (q != NULL)
		dns_free_queries = q->q_next;
	else if ((q = malloc(sizeof(*q))) == NULL)
		return NULL;
	q->q_lookup = NULL;
	return q;
}

static void
dns_query_put(struct dns_query *q)
{
	q->q_lookup = NULL;
	q->q_next = dns_free_queries;
	dns_free_queries = q;
}

static void
dns_waiter_add(struct dns_lookup *l, struct dns_query *q)
{
	q->q_lookup = l;
	q->q_prev = NULL;
	q->q_next = l->l_waiters;
	if (l->l_waiters != NULL)
		l->l_waiters->q_prev = q;
	l->l_waiters = q;
}

static void
dns_waiter_del(struct dns_query *q)
{
	if (q->q_prev != NULL)
		q->q_prev->q_next = q->q_next;
	else
		q->q_lookup->l_waiters = q->q_next;
	if (q->q_next != NULL)
		q->q_next->q_prev = q->q_prev;
}

static struct dns_lookup *
dns_lookup_get(void)
{
	struct dns_lookup	*l = dns_free_lookups;

	if (l != NULL)
		dns_free_lookups = l->l_next;
	else if ((l = malloc(sizeof(*l))) == NULL)
		return NULL;
	memset(&l->l_timer, 0, sizeof(l->l_timer));
	l->l_waiters = NULL;
	l->l_joinable = l->l_in_cares = l->l_delivering = false;
	l->l_err = 0;
	l->l_hash = 0;
	l->l_namelen = 0;
	l->l_name[0] = '\0';
	l->l_res.naddrs = 0;
	l->l_prev = NULL;
	l->l_next = dns_lookups;
	if (dns_lookups != NULL)
		dns_lookups->l_prev = l;
	dns_lookups = l;
	return l;
}

static void
dns_lookup_put(struct dns_lookup *l)
{
	pt_timer_stop(&l->l_timer);
	if (l->l_prev != NULL)
		l->l_prev->l_next = l->l_next;
	else
		dns_lookups = l->l_next;
	if (l->l_next != NULL)
		l->l_next->l_prev = l->l_prev;
	l->l_next = dns_free_lookups;
	dns_free_lookups = l;
}

/*
 * Tells every waiter of <l>. Each is taken off the list before its
 * callback runs, so the callback may cancel the others or ask again (the
 * lookup is no longer joinable: that starts afresh or hits the cache).
 */
static void
dns_lookup_deliver(struct dns_lookup *l, int err)
{
	struct dns_query	*q;
	dns_done_fn		 done;
	void			*arg;

	l->l_joinable = false;
	l->l_delivering = true;
	while ((q = l->l_waiters) != NULL) {
		dns_waiter_del(q);
		done = q->q_done;
		arg = q->q_arg;
		dns_query_put(q);
		done(arg, err, err == 0 ? &l->l_res : NULL);
	}
	l->l_delivering = false;
	if (!l->l_in_cares)
		dns_lookup_put(l);
}

static void
dns_on_deliver(struct pt_timer *t, void *arg)
{
	struct dns_lookup	*l = arg;

	(void)t;
	dns_lookup_deliver(l, l->l_err);
}

/* timeout_ms after the start: c-ares' own retries should have ended just
 * before; this bounds the lookup whatever they do. */
static void
dns_on_guard(struct pt_timer *t, void *arg)
{
	(void)t;
	counters_add(CTR_DNS_FAILURES, 1);
	counters_observe(HIST_DNS, counters_now_us() -
	    ((struct dns_lookup *)arg)->l_start_us);
	dns_lookup_deliver(arg, ETIMEDOUT);
}

static void
dns_on_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *ai)
{
	struct dns_lookup	*l = arg;
	int			 err;

	(void)timeouts;
	l->l_in_cares = false;
	if (dns_closing) {
		/* ares_destroy() from dns_fini(), which frees <l>. */
		if (ai != NULL)
			ares_freeaddrinfo(ai);
		return;
	}
	err = dns_err_from_ares(status);
	if (err == 0 && (ai == NULL || dns_result_fill(&l->l_res, ai) == 0))
		err = ENOENT;
	if (l->l_joinable) {
		/* Not timed out (the guard counted that one). */
		counters_observe(HIST_DNS, counters_now_us() - l->l_start_us);
		if (err != 0)
			counters_add(CTR_DNS_FAILURES, 1);
	}
	if (err == 0)
		dns_cache_put(l, 0, dns_ttl_clamp(dns_answer_ttl(ai)));
	else if (err == ENOENT)
		dns_cache_put(l, ENOENT, dns_cf.neg_ttl_s);
	if (ai != NULL)
		ares_freeaddrinfo(ai);
	if (!l->l_joinable) {
		/* The guard fired: its callers already heard ETIMEDOUT, and
		 * the answer served only the cache. */
		if (!l->l_delivering)
			dns_lookup_put(l);
		return;
	}
	l->l_err = err;
	/* Even an answer c-ares found at once (/etc/hosts) reaches the
	 * callers from the loop, as the contract promises. */
	pt_timer_start(&l->l_timer, 0, dns_on_deliver, l);
}

static struct dns_lookup *
dns_lookup_find(const char *key, size_t len, uint32_t hash)
{
	struct dns_lookup	*l;

	for (l = dns_lookups; l != NULL; l = l->l_next)
		if (l->l_joinable && l->l_hash == hash &&
		    l->l_namelen == len && memcmp(l->l_name, key, len) == 0)
			return l;
	return NULL;
}

static struct dns_lookup *
dns_lookup_start(const char *key, size_t len, uint32_t hash)
{
	struct ares_addrinfo_hints	 hints;
	struct dns_lookup		*l;

	if ((l = dns_lookup_get()) == NULL)
		return NULL;
	l->l_hash = hash;
	l->l_namelen = len;
	memcpy(l->l_name, key, len + 1);
	l->l_joinable = true;
	l->l_in_cares = true;
	l->l_start_us = counters_now_us();
	pt_timer_start(&l->l_timer, dns_cf.timeout_ms, dns_on_guard, l);
	/* Sorted (no ARES_AI_NOSORT): RFC 6724 puts the family this host
	 * can reach first, which is where RFC 8305 starts interleaving. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	ares_getaddrinfo(dns_channel, l->l_name, NULL, &hints,
	    dns_on_addrinfo, l);
	dns_timer_update();
	return l;
}

/* A lookup that already knows its answer (<err>, and <res> when 0),
 * told from the loop. */
static struct dns_lookup *
dns_lookup_known(int err, const struct dns_result *res)
{
	struct dns_lookup	*l;

	if ((l = dns_lookup_get()) == NULL)
		return NULL;
	l->l_err = err;
	if (res != NULL)
		l->l_res = *res;
	pt_timer_start(&l->l_timer, 0, dns_on_deliver, l);
	return l;
}

/* ---- API ------------------------------------------------------------- */

/*
 * How many servers c-ares will use (they share the timeout budget), and
 * the first <max> of them into <out>, port 53 where c-ares keeps its
 * default. A c-ares status. dns_servers_probe gives it to the master.
 */
static int
dns_count_servers(const char *servers, struct pt_addr *out, int max,
    int *n_out)
{
	struct ares_addr_port_node	*list, *n;
	struct sockaddr_in		*sin;
	struct sockaddr_in6		*sin6;
	ares_channel			 probe;
	int				 rc;

	if ((rc = ares_init(&probe)) != ARES_SUCCESS)
		return rc;
	if (servers != NULL &&
	    (rc = ares_set_servers_ports_csv(probe, servers)) != ARES_SUCCESS) {
		ares_destroy(probe);
		return rc;
	}
	if ((rc = ares_get_servers_ports(probe, &list)) != ARES_SUCCESS) {
		ares_destroy(probe);
		return rc;
	}
	*n_out = 0;
	for (n = list; n != NULL; n = n->next, (*n_out)++) {
		if (*n_out >= max)
			continue;
		memset(&out[*n_out], 0, sizeof(out[*n_out]));
		if (n->family == AF_INET) {
			sin = (struct sockaddr_in *)&out[*n_out].sa;
			sin->sin_family = AF_INET;
			memcpy(&sin->sin_addr, &n->addr.addr4, 4);
			sin->sin_port = htons((uint16_t)(n->udp_port ?
			    n->udp_port : 53));
			out[*n_out].len = sizeof(*sin);
		} else {
			sin6 = (struct sockaddr_in6 *)&out[*n_out].sa;
			sin6->sin6_family = AF_INET6;
			memcpy(&sin6->sin6_addr, &n->addr.addr6, 16);
			sin6->sin6_port = htons((uint16_t)(n->udp_port ?
			    n->udp_port : 53));
			out[*n_out].len = sizeof(*sin6);
		}
	}
	ares_free_data(list);
	ares_destroy(probe);
	return ARES_SUCCESS;
}

/* Undoes ares_library_init_mem, and gives the free blocks back to the
 * heap: only free ones, so a block c-ares still holds (were it initialised
 * twice) stays valid and simply goes to a free list when freed. */
static void
dns_library_done(void)
{
	ares_library_cleanup();
	dns_mem_fini();
}

static int
dns_cache_alloc(unsigned max)
{
	uint32_t	 nb;

	if (max == 0)
		return 0;
	nb = pt_chain_buckets(max);
	dns_cache = calloc(max, sizeof(*dns_cache));
	dns_buckets = calloc(nb, sizeof(*dns_buckets));
	if (dns_cache == NULL || dns_buckets == NULL)
		return -ENOMEM;
	dns_bucket_mask = nb - 1;
	dns_cache_reset();
	return 0;
}

static void
dns_free_all(void)
{
	struct dns_lookup	*l;
	struct dns_query	*q;
	struct dns_sock		*s;

	while ((l = dns_lookups) != NULL)
		dns_lookup_put(l);
	while ((l = dns_free_lookups) != NULL) {
		dns_free_lookups = l->l_next;
		free(l);
	}
	while ((q = dns_free_queries) != NULL) {
		dns_free_queries = q->q_next;
		free(q);
	}
	while ((s = dns_socks) != NULL) {
		dns_socks = s->s_next;
		loop_io_stop(&s->s_io);
		free(s);
	}
	free(dns_cache);
	free(dns_buckets);
	dns_hosts_free();
	dns_cache = NULL;
	dns_buckets = NULL;
	dns_bucket_mask = 0;
	dns_cache_used = 0;
}

int
dns_init(const struct dns_conf *conf)
{
	struct ares_options	 o;
	unsigned		 per_try, tries = DNS_TRIES;
	int			 rc, nservers = 0;

	if (dns_channel != NULL)
		return -EBUSY;
	dns_cf = *conf;
	dns_cf.servers = NULL;
	if (dns_cf.timeout_ms == 0)
		dns_cf.timeout_ms = DNS_DEFAULT_TIMEOUT_MS;
	/*
	 * c-ares allocates for every query: from size-class free lists, so a
	 * warmed-up worker resolves without touching the heap. The allocator
	 * is process-wide, and whatever c-ares made with another one must
	 * not reach dns_mem_free: nothing of c-ares' may outlive the fork
	 * (c-ares cannot tell: ares_library_initialized is always true
	 * outside Windows).
	 */
	if ((rc = ares_library_init_mem(ARES_LIB_INIT_ALL, dns_mem_alloc,
	    dns_mem_free, dns_mem_realloc)) != ARES_SUCCESS) {
		pt_log(PT_LOG_ERR, "dns: c-ares: %s", ares_strerror(rc));
		return -EIO;
	}
	if ((rc = dns_count_servers(conf->servers, NULL, 0, &nservers)) !=
	    ARES_SUCCESS || nservers == 0) {
		pt_log(PT_LOG_ERR, "dns: servers %s: %s", conf->servers != NULL
		    ? conf->servers : "from resolv.conf", rc != ARES_SUCCESS ?
		    ares_strerror(rc) : "none");
		dns_library_done();
		return -EINVAL;
	}
	/*
	 * c-ares gives try k (0-based, over all servers) timeout << (k /
	 * nservers): with T tries the last answer can come nservers *
	 * timeout * (2^T - 1) after the start. Split timeout_ms so.
	 */
	per_try = dns_cf.timeout_ms / ((unsigned)nservers * ((1u << tries) -
	    1));
	if (per_try < DNS_MIN_TRY_MS) {
		tries = 1;
		per_try = dns_cf.timeout_ms / (unsigned)nservers;
	}
	memset(&o, 0, sizeof(o));
	/* No search list, no HOSTALIASES: the name the client gave is the
	 * name asked, and no environment file is read per lookup. */
	o.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
	o.timeout = per_try > 0 ? (int)per_try : 1;
	o.tries = (int)tries;
	o.ndomains = 0;
	o.domains = NULL;
	o.sock_state_cb = dns_on_sock_state;
	o.sock_state_cb_data = NULL;
	/* DNS only: the hosts file is ours (dns_hosts.c). */
	o.lookups = (char *)(uintptr_t)"b";
	rc = ares_init_options(&dns_channel, &o, ARES_OPT_FLAGS |
	    ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_DOMAINS |
	    ARES_OPT_SOCK_STATE_CB | ARES_OPT_LOOKUPS);
	if (rc == ARES_SUCCESS && conf->servers != NULL)
		rc = ares_set_servers_ports_csv(dns_channel, conf->servers);
	if (rc != ARES_SUCCESS) {
		pt_log(PT_LOG_ERR, "dns: c-ares init: %s", ares_strerror(rc));
		if (dns_channel != NULL)
			ares_destroy(dns_channel);
		dns_channel = NULL;
		dns_library_done();
		return rc == ARES_ENOMEM ? -ENOMEM : -EIO;
	}
	if ((rc = dns_hosts_load(DNS_HOSTS_PATH)) < 0) {
		pt_log(PT_LOG_ERR, "dns: %s: out of memory", DNS_HOSTS_PATH);
		dns_fini();
		return rc;
	}
	if ((rc = dns_cache_alloc(dns_cf.cache_max)) < 0) {
		pt_log(PT_LOG_ERR, "dns: cache of %u entries: out of memory",
		    dns_cf.cache_max);
		dns_fini();
		return rc;
	}
	return 0;
}

void
dns_fini(void)
{
	struct dns_lookup	*l;
	struct dns_query	*q;
	dns_done_fn		 done;
	void			*arg;

	if (dns_channel == NULL)
		return;
	/* From here dns_resolve() refuses, so callbacks cannot add lookups
	 * to the list being walked. */
	dns_closing = true;
	for (l = dns_lookups; l != NULL; l = l->l_next) {
		pt_timer_stop(&l->l_timer);
		l->l_joinable = false;
		while ((q = l->l_waiters) != NULL) {
			dns_waiter_del(q);
			done = q->q_done;
			arg = q->q_arg;
			dns_query_put(q);
			done(arg, ECANCELED, NULL);
		}
	}
	pt_timer_stop(&dns_ares_timer);
	/* Calls back every query still in c-ares (dns_on_addrinfo ignores
	 * them now) and closes its sockets through dns_on_sock_state. */
	ares_destroy(dns_channel);
	dns_channel = NULL;
	dns_library_done();
	dns_free_all();
	dns_closing = false;
}

struct dns_query *
dns_resolve(const char *name, size_t namelen, dns_done_fn done, void *arg)
{
	char			 key[DNS_NAME_MAX + 1];
	struct dns_result	 res;
	struct dns_lookup	*l;
	struct dns_query	*q;
	size_t			 len;
	uint32_t		 hash;
	int			 err;

	if (dns_literal(name, namelen, &res)) {
		done(arg, 0, &res);
		return NULL;
	}
	if (dns_channel == NULL || dns_closing) {
		done(arg, ECANCELED, NULL);
		return NULL;
	}
	if ((q = dns_query_get()) == NULL) {
		done(arg, EIO, NULL);
		return NULL;
	}
	if (!dns_name_norm(name, namelen, key, &len)) {
		l = dns_lookup_known(ENOENT, NULL);
	} else {
		hash = dns_name_hash(key, len);
		if (dns_cache_get(key, len, hash, &err, &res)) {
			counters_add(CTR_DNS_HITS, 1);
			dns_query_put(q);
			done(arg, err, err == 0 ? &res : NULL);
			return NULL;
		}
		counters_add(CTR_DNS_MISSES, 1);
		/* A hosts answer comes from the loop, as c-ares' did. */
		if (dns_hosts_find(key, len, &res))
			l = dns_lookup_known(0, &res);
		else if ((l = dns_lookup_find(key, len, hash)) == NULL)
			l = dns_lookup_start(key, len, hash);
	}
	if (l == NULL) {
		dns_query_put(q);
		done(arg, EIO, NULL);
		return NULL;
	}
	q->q_done = done;
	q->q_arg = arg;
	dns_waiter_add(l, q);
	return q;
}

void
dns_cancel(struct dns_query *q)
{
	/* A handle on the free list was already answered or cancelled. */
	if (q == NULL || q->q_lookup == NULL)
		return;
	dns_waiter_del(q);
	dns_query_put(q);
}

unsigned
dns_cache_count(void)
{
	return dns_cache_used;
}

void
dns_cache_clear(void)
{
	if (dns_cache != NULL)
		dns_cache_reset();
}

int
dns_addrs_with_port(const struct dns_result *res, uint16_t port,
    struct pt_addr *out)
{
	int	 i;

	for (i = 0; i < res->naddrs && i < DNS_MAX_ADDRS; i++) {
		out[i] = res->addrs[i];
		/* sin_port and sin6_port sit at the same offset. */
		((struct sockaddr_in *)&out[i].sa)->sin_port = htons(port);
	}
	return i;
}

int
dns_servers_probe(const char *servers, struct pt_addr *out, int max,
    int *n_out, const char **errstr)
{
	int	 rc;

	*n_out = 0;
	/* Counted by c-ares: in a worker after dns_init this leaves the
	 * library (and its allocator) as it was; in the master it leaves
	 * nothing of c-ares behind for a worker to inherit. */
	if ((rc = ares_library_init(ARES_LIB_INIT_ALL)) == ARES_SUCCESS) {
		rc = dns_count_servers(servers, out, max, n_out);
		ares_library_cleanup();
	}
	*errstr = rc == ARES_SUCCESS ? NULL : ares_strerror(rc);
	return rc == ARES_SUCCESS ? 0 : -1;
}
