/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verified-credential cache (see cache.h for the caller's rules).
 *
 * Layout: one array of <max> entries allocated at creation, threaded on
 * two index lists: a hash chain per bucket (keyed by the credential MAC,
 * for O(1) lookup; portico/hash.h) and one doubly linked LRU list (head
 * = most recently used, tail = next to evict; portico/lru.h); unused
 * entries sit on a free list through the same <e_hnext> link. Indexes
 * are 32-bit so an entry stays small.
 *
 * The bucket of a MAC is taken from its first bytes: the MAC is keyed, so
 * a client cannot choose credentials that pile into one chain.
 *
 * It deliberately does not do: locking (one loop thread), eviction by
 * expiry ahead of LRU order (an expired entry is removed when it is next
 * looked up, or ages to the LRU tail), or anything with failures.
 */
#include "modules/auth/cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <portico/hash.h>
#include <portico/lru.h>

#define CACHE_NIL	PT_LRU_NIL	/* and PT_CHAIN_NIL: both UINT32_MAX */
#define CACHE_MAC_LEN	32
/* The user tag only has to tell users apart for drop_user: 128 bits of a
 * keyed MAC make a collision (dropping a stranger's entry early, which is
 * harmless anyway) out of reach. */
#define CACHE_TAG_LEN	16

/* Domain bytes: a credential MAC and a user tag are never computed over
 * the same input, whatever the user name. */
#define CACHE_DOM_CRED	'C'
#define CACHE_DOM_USER	'U'

struct auth_cache_ent {
	uint8_t			 e_mac[CACHE_MAC_LEN];
	uint8_t			 e_tag[CACHE_TAG_LEN];
	uint64_t		 e_expires_ms;
	uint32_t		 e_hnext;	/* hash chain, or free list */
	struct pt_lru_link	 e_lru;
};

struct auth_cache {
	uint32_t		 max;
	uint32_t		 nlive;
	uint64_t		 ttl_ms;	/* 0: disabled */
	uint32_t		 mask;		/* buckets - 1 */
	uint32_t		 lru_head;
	uint32_t		 lru_tail;
	uint32_t		 free_head;
	uint32_t		*buckets;
	struct auth_cache_ent	*ents;
	EVP_MAC_CTX		*mac;		/* keyed once, re-initialised */
};

/* ---- MACs ----------------------------------------------------------------- */

static void
cache_put_len(uint8_t out[8], size_t len)
{
	uint64_t	 v = len;
	int		 i;

	for (i = 7; i >= 0; i--, v >>= 8)
		out[i] = (uint8_t)v;
}

/*
 * HMAC(key, dom || len64(user) || user [|| len64(pass) || pass]) into
 * <out>, cut to <outlen>. The user's length, a fixed 8 bytes, is what
 * makes every split of the same bytes between user and password a
 * different input; the password's is there so the input stays
 * unambiguous if a field is ever appended. Returns false when libcrypto
 * fails; the caller then treats it as a miss.
 */
static bool
cache_mac(struct auth_cache *c, uint8_t dom, const char *user, size_t ulen,
    const char *pass, size_t plen, bool with_pass, uint8_t *out,
    size_t outlen)
{
	uint8_t		 hdr[1 + 8], plenb[8], full[CACHE_MAC_LEN];
	size_t		 n;
	bool		 ok;

	hdr[0] = dom;
	cache_put_len(hdr + 1, ulen);
	/* A NULL key re-initialises with the key given at creation. */
	ok = EVP_MAC_init(c->mac, NULL, 0, NULL) == 1 &&
	    EVP_MAC_update(c->mac, hdr, sizeof(hdr)) == 1 &&
	    EVP_MAC_update(c->mac, (const uint8_t *)user, ulen) == 1;
	if (ok && with_pass) {
		cache_put_len(plenb, plen);
		ok = EVP_MAC_update(c->mac, plenb, sizeof(plenb)) == 1 &&
		    EVP_MAC_update(c->mac, (const uint8_t *)pass, plen) == 1;
	}
	ok = ok && EVP_MAC_final(c->mac, full, &n, sizeof(full)) == 1 &&
	    n == sizeof(full);
	if (ok)
		memcpy(out, full, outlen);
	OPENSSL_cleanse(full, sizeof(full));
	return ok;
}

/* The hash a MAC is filed under: its first bytes. */
static uint32_t
cache_hash(const uint8_t mac[CACHE_MAC_LEN])
{
	uint32_t	 h;

	memcpy(&h, mac, sizeof(h));
	return h;
}

/* ---- lists -------------------------------------------------------------- */

static struct pt_chain
cache_chain(const struct auth_cache *c)
{
	return PT_CHAIN(c->ents, e_hnext, c->buckets, c->mask);
}

static struct pt_lru
cache_lru(struct auth_cache *c)
{
	return PT_LRU(c->ents, e_lru, &c->lru_head, &c->lru_tail);
}

/* Finds the entry whose MAC is <mac>; every candidate in the chain is
 * compared in constant time, so the position of a mismatching byte never
 * shows in the time taken. */
static uint32_t
cache_find(const struct auth_cache *c, const uint8_t mac[CACHE_MAC_LEN])
{
	uint32_t	 i;

	for (i = pt_chain_first(cache_chain(c), cache_hash(mac));
	    i != CACHE_NIL; i = pt_chain_next(cache_chain(c), i))
		if (CRYPTO_memcmp(c->ents[i].e_mac, mac, CACHE_MAC_LEN) == 0)
			return i;
	return CACHE_NIL;
}

/* Unlinks entry <i> from its chain and the LRU list and frees its slot. */
static void
cache_remove(struct auth_cache *c, uint32_t i)
{
	struct auth_cache_ent	*e = &c->ents[i];

	pt_chain_del(cache_chain(c), i, cache_hash(e->e_mac));
	pt_lru_unlink(cache_lru(c), i);
	OPENSSL_cleanse(e, sizeof(*e));
	e->e_hnext = c->free_head;
	c->free_head = i;
	c->nlive--;
}

/* ---- API ---------------------------------------------------------------- */

/* Puts every slot on the free list and empties every bucket. */
static void
cache_reset(struct auth_cache *c)
{
	uint32_t	 i;

	OPENSSL_cleanse(c->ents, (size_t)c->max * sizeof(*c->ents));
	for (i = 0; i < c->max; i++)
		c->ents[i].e_hnext = i + 1 < c->max ? i + 1 : CACHE_NIL;
	pt_chain_clear(cache_chain(c));
	c->free_head = c->max > 0 ? 0 : CACHE_NIL;
	pt_lru_init(cache_lru(c));
	c->nlive = 0;
}

static EVP_MAC_CTX *
cache_mac_new(const uint8_t key[32])
{
	EVP_MAC		*alg;
	EVP_MAC_CTX	*ctx;
	OSSL_PARAM	 params[2];
	char		 digest[] = "SHA256";

	if ((alg = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL)
		return NULL;
	ctx = EVP_MAC_CTX_new(alg);
	/* The context keeps its own reference to the algorithm. */
	EVP_MAC_free(alg);
	if (ctx == NULL)
		return NULL;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(ctx, key, 32, params) != 1) {
		EVP_MAC_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

struct auth_cache *
auth_cache_new(unsigned max_entries, unsigned ttl_s, const uint8_t key[32])
{
	struct auth_cache	*c;

	if (max_entries > AUTH_CACHE_MAX_ENTRIES || ttl_s > AUTH_CACHE_MAX_TTL) {
		errno = EINVAL;
		return NULL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->lru_head = c->lru_tail = c->free_head = CACHE_NIL;
	if (max_entries == 0 || ttl_s == 0)
		return c;	/* disabled: ttl_ms stays 0, nothing else kept */
	c->max = max_entries;
	c->ttl_ms = (uint64_t)ttl_s * 1000;
	/* At most one entry per bucket on average at full load. */
	c->mask = pt_chain_buckets(max_entries) - 1;
	c->ents = calloc(c->max, sizeof(*c->ents));
	c->buckets = calloc((size_t)c->mask + 1, sizeof(*c->buckets));
	if (c->ents == NULL || c->buckets == NULL) {
		auth_cache_free(c);
		errno = ENOMEM;
		return NULL;
	}
	if ((c->mac = cache_mac_new(key)) == NULL) {
		auth_cache_free(c);
		errno = EIO;
		return NULL;
	}
	cache_reset(c);
	return c;
}

bool
auth_cache_hit(struct auth_cache *c, const char *user, size_t ulen,
    const char *pass, size_t plen, uint64_t now_ms)
{
	uint8_t		 mac[CACHE_MAC_LEN];
	uint32_t	 i;

	if (c == NULL || c->ttl_ms == 0 || c->nlive == 0)
		return false;
	if (!cache_mac(c, CACHE_DOM_CRED, user, ulen, pass, plen, true, mac,
	    sizeof(mac)))
		return false;
	i = cache_find(c, mac);
	OPENSSL_cleanse(mac, sizeof(mac));
	if (i == CACHE_NIL)
		return false;
	if (now_ms >= c->ents[i].e_expires_ms) {
		cache_remove(c, i);
		return false;
	}
	pt_lru_touch(cache_lru(c), i);
	return true;
}

void
auth_cache_put(struct auth_cache *c, const char *user, size_t ulen,
    const char *pass, size_t plen, uint64_t now_ms)
{
	struct auth_cache_ent	*e;
	uint8_t			 mac[CACHE_MAC_LEN], tag[CACHE_TAG_LEN];
	uint32_t		 i;

	if (c == NULL || c->ttl_ms == 0)
		return;
	if (!cache_mac(c, CACHE_DOM_CRED, user, ulen, pass, plen, true, mac,
	    sizeof(mac)))
		return;
	if ((i = cache_find(c, mac)) != CACHE_NIL) {
		/* Verified again (after a miss on an expired entry elsewhere,
		 * or two logins racing to verification): renew in place. */
		pt_lru_unlink(cache_lru(c), i);
	} else {
		if (!cache_mac(c, CACHE_DOM_USER, user, ulen, NULL, 0, false,
		    tag, sizeof(tag))) {
			OPENSSL_cleanse(mac, sizeof(mac));
			return;
		}
		if (c->free_head == CACHE_NIL)
			cache_remove(c, c->lru_tail);
		i = c->free_head;
		e = &c->ents[i];
		c->free_head = e->e_hnext;
		memcpy(e->e_mac, mac, sizeof(mac));
		memcpy(e->e_tag, tag, sizeof(tag));
		pt_chain_add(cache_chain(c), i, cache_hash(mac));
		c->nlive++;
		OPENSSL_cleanse(tag, sizeof(tag));
	}
	c->ents[i].e_expires_ms = now_ms + c->ttl_ms;
	pt_lru_push(cache_lru(c), i);
	OPENSSL_cleanse(mac, sizeof(mac));
}

void
auth_cache_drop_user(struct auth_cache *c, const char *user, size_t ulen)
{
	uint8_t		 tag[CACHE_TAG_LEN];
	uint32_t	 i, next;

	if (c == NULL || c->nlive == 0)
		return;
	if (!cache_mac(c, CACHE_DOM_USER, user, ulen, NULL, 0, false, tag,
	    sizeof(tag))) {
		/* Cannot tell this user's entries apart: drop them all
		 * rather than keep a password the userlist no longer has. */
		auth_cache_clear(c);
		return;
	}
	for (i = c->lru_head; i != CACHE_NIL; i = next) {
		next = pt_lru_older(cache_lru(c), i);
		if (CRYPTO_memcmp(c->ents[i].e_tag, tag, sizeof(tag)) == 0)
			cache_remove(c, i);
	}
	OPENSSL_cleanse(tag, sizeof(tag));
}

void
auth_cache_clear(struct auth_cache *c)
{
	if (c == NULL || c->ttl_ms == 0)
		return;
	cache_reset(c);
}

void
auth_cache_free(struct auth_cache *c)
{
	if (c == NULL)
		return;
	/* EVP_MAC_CTX_free wipes the key it holds. */
	EVP_MAC_CTX_free(c->mac);
	if (c->ents != NULL)
		OPENSSL_cleanse(c->ents, (size_t)c->max * sizeof(*c->ents));
	free(c->ents);
	free(c->buckets);
	free(c);
}
