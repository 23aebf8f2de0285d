/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the verified-credential cache (modules/auth/cache.c):
 * hits and misses, the length prefix, expiry to the millisecond, the LRU
 * bound, drop_user, the disabled cache, what an entry holds (the HMAC,
 * never the password) and no allocation after creation.
 *
 * The allocation count needs the runner linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc: the wrappers below then
 * see every allocation made by cache.o and this file (not libcrypto's).
 * The test proves the wrappers are live by seeing auth_cache_new allocate.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

/* Included, not linked, so the tests can see what an entry holds and
 * check the MAC against libcrypto's one-shot HMAC(). */
#include "modules/auth/cache.c"
#include "t/unit/check.h"

void	register_auth_cache_suite(void);

void	*__real_malloc(size_t);
void	*__real_calloc(size_t, size_t);
void	*__real_realloc(void *, size_t);
void	*__wrap_malloc(size_t);
void	*__wrap_calloc(size_t, size_t);
void	*__wrap_realloc(void *, size_t);

static unsigned long	 t_allocs;

void *
__wrap_malloc(size_t n)
{
	t_allocs++;
	return __real_malloc(n);
}

void *
__wrap_calloc(size_t n, size_t m)
{
	t_allocs++;
	return __real_calloc(n, m);
}

void *
__wrap_realloc(void *p, size_t n)
{
	t_allocs++;
	return __real_realloc(p, n);
}

static const uint8_t	 t_key[32] = "0123456789abcdef0123456789abcde";

#define S(s)	(s), strlen(s)

static void
test_auth_cache_hits_after_put(void)
{
	struct auth_cache	*c = auth_cache_new(16, 300, t_key);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("secret"), 1000));
	auth_cache_put(c, S("alice"), S("secret"), 1000);
	CU_ASSERT_TRUE(auth_cache_hit(c, S("alice"), S("secret"), 1001));
	/* A hit does not consume the entry. */
	CU_ASSERT_TRUE(auth_cache_hit(c, S("alice"), S("secret"), 1002));
	auth_cache_free(c);
}

static void
test_auth_cache_misses_other_password_or_user(void)
{
	struct auth_cache	*c = auth_cache_new(16, 300, t_key);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	auth_cache_put(c, S("alice"), S("secret"), 0);
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("secreT"), 1));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("secret2"), 1));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S(""), 1));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("bob"), S("secret"), 1));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("Alice"), S("secret"), 1));
	/* A NUL inside the password is a byte like any other. */
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), "secret\0", 7, 1));
	CU_ASSERT_TRUE(auth_cache_hit(c, S("alice"), S("secret"), 1));
	auth_cache_free(c);
}

static void
test_auth_cache_length_prefix_separates_splits(void)
{
	struct auth_cache	*c = auth_cache_new(16, 300, t_key);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	auth_cache_put(c, S("ab"), S("c"), 0);
	CU_ASSERT_FALSE(auth_cache_hit(c, S("a"), S("bc"), 1));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("abc"), S(""), 1));
	CU_ASSERT_FALSE(auth_cache_hit(c, S(""), S("abc"), 1));
	CU_ASSERT_TRUE(auth_cache_hit(c, S("ab"), S("c"), 1));
	/* Without the user's length, "ab" + len(9) + "c\0..." would read
	 * the same as the user "ab" + len(9) + "c" with an empty password. */
	auth_cache_put(c, "ab", 2, "c\0\0\0\0\0\0\0\0", 9, 2);
	CU_ASSERT_FALSE(auth_cache_hit(c, "ab\0\0\0\0\0\0\0\x09" "c", 11,
	    "", 0, 3));
	CU_ASSERT_TRUE(auth_cache_hit(c, "ab", 2, "c\0\0\0\0\0\0\0\0", 9, 3));
	auth_cache_free(c);
}

static void
test_auth_cache_expires_at_exactly_ttl(void)
{
	struct auth_cache	*c = auth_cache_new(16, 5, t_key);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	auth_cache_put(c, S("alice"), S("secret"), 10000);
	CU_ASSERT_TRUE(auth_cache_hit(c, S("alice"), S("secret"), 14999));
	/* A hit does not extend the life of the entry. */
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("secret"), 15000));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("secret"), 15001));
	/* A put renews it. */
	auth_cache_put(c, S("alice"), S("secret"), 20000);
	CU_ASSERT_TRUE(auth_cache_hit(c, S("alice"), S("secret"), 24999));
	auth_cache_put(c, S("alice"), S("secret"), 24999);
	CU_ASSERT_TRUE(auth_cache_hit(c, S("alice"), S("secret"), 29998));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("secret"), 29999));
	auth_cache_free(c);
}

static void
test_auth_cache_evicts_least_recently_used(void)
{
	struct auth_cache	*c = auth_cache_new(3, 300, t_key);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	auth_cache_put(c, S("u1"), S("p"), 1);
	auth_cache_put(c, S("u2"), S("p"), 2);
	auth_cache_put(c, S("u3"), S("p"), 3);
	/* u1 used last: u2 is now the least recently used. */
	CU_ASSERT_TRUE(auth_cache_hit(c, S("u1"), S("p"), 4));
	auth_cache_put(c, S("u4"), S("p"), 5);
	CU_ASSERT_FALSE(auth_cache_hit(c, S("u2"), S("p"), 6));
	CU_ASSERT_TRUE(auth_cache_hit(c, S("u1"), S("p"), 6));
	CU_ASSERT_TRUE(auth_cache_hit(c, S("u3"), S("p"), 6));
	CU_ASSERT_TRUE(auth_cache_hit(c, S("u4"), S("p"), 6));
	/* Order now u4 u3 u1 (most recent first): u1 goes next. */
	auth_cache_put(c, S("u5"), S("p"), 7);
	CU_ASSERT_FALSE(auth_cache_hit(c, S("u1"), S("p"), 8));
	CU_ASSERT_TRUE(auth_cache_hit(c, S("u3"), S("p"), 8));
	auth_cache_free(c);
}

/* Many more puts than slots: the cache never holds more than its bound,
 * and the most recent <max> are all there. */
static void
test_auth_cache_stays_bounded(void)
{
	enum { MAX = 64, N = 1000 };
	struct auth_cache	*c = auth_cache_new(MAX, 300, t_key);
	char			 u[32];
	unsigned		 i, hits = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	for (i = 0; i < N; i++) {
		snprintf(u, sizeof(u), "user%u", i);
		auth_cache_put(c, S(u), S("pw"), i);
	}
	for (i = 0; i < N; i++) {
		snprintf(u, sizeof(u), "user%u", i);
		if (auth_cache_hit(c, S(u), S("pw"), N)) {
			hits++;
			CHECKF(i >= N - MAX, "user%u survived eviction", i);
		}
	}
	CHECKF(hits == MAX, "%u hits, want %u", hits, (unsigned)MAX);
	auth_cache_free(c);
}

static void
test_auth_cache_drop_user_removes_every_password(void)
{
	struct auth_cache	*c = auth_cache_new(16, 300, t_key);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	auth_cache_put(c, S("alice"), S("old"), 0);
	auth_cache_put(c, S("alice"), S("new"), 0);
	auth_cache_put(c, S("alic"), S("eold"), 0);
	auth_cache_put(c, S("bob"), S("pw"), 0);
	auth_cache_drop_user(c, S("alice"));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("old"), 1));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("new"), 1));
	CU_ASSERT_TRUE(auth_cache_hit(c, S("alic"), S("eold"), 1));
	CU_ASSERT_TRUE(auth_cache_hit(c, S("bob"), S("pw"), 1));
	/* The freed slots are reused. */
	auth_cache_put(c, S("alice"), S("new"), 2);
	CU_ASSERT_TRUE(auth_cache_hit(c, S("alice"), S("new"), 3));
	auth_cache_clear(c);
	CU_ASSERT_FALSE(auth_cache_hit(c, S("bob"), S("pw"), 4));
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("new"), 4));
	auth_cache_put(c, S("bob"), S("pw"), 5);
	CU_ASSERT_TRUE(auth_cache_hit(c, S("bob"), S("pw"), 6));
	auth_cache_free(c);
}

static void
test_auth_cache_ttl_zero_is_disabled(void)
{
	struct auth_cache	*c = auth_cache_new(16, 0, t_key);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	auth_cache_put(c, S("alice"), S("secret"), 0);
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("secret"), 0));
	auth_cache_drop_user(c, S("alice"));
	auth_cache_clear(c);
	auth_cache_free(c);
	c = auth_cache_new(0, 300, t_key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	auth_cache_put(c, S("alice"), S("secret"), 0);
	CU_ASSERT_FALSE(auth_cache_hit(c, S("alice"), S("secret"), 0));
	auth_cache_free(c);
	/* NULL is a disabled cache too. */
	auth_cache_put(NULL, S("alice"), S("secret"), 0);
	CU_ASSERT_FALSE(auth_cache_hit(NULL, S("alice"), S("secret"), 0));
	auth_cache_free(NULL);
}

static void
test_auth_cache_refuses_out_of_range(void)
{
	CU_ASSERT_PTR_NULL(auth_cache_new(AUTH_CACHE_MAX_ENTRIES + 1, 300,
	    t_key));
	CU_ASSERT_PTR_NULL(auth_cache_new(16, AUTH_CACHE_MAX_TTL + 1, t_key));
}

/* An entry is HMAC-SHA-256(key, 'C' || be64(ulen) || user || be64(plen) ||
 * pass), computed here with libcrypto's one-shot HMAC() from the spec;
 * the password's bytes appear nowhere in the cache. */
static void
test_auth_cache_entry_is_hmac_not_password(void)
{
	static const uint8_t	 in[] = { 'C', 0, 0, 0, 0, 0, 0, 0, 5,
				    'a', 'l', 'i', 'c', 'e', 0, 0, 0, 0, 0, 0,
				    0, 15, 'h', 'u', 'n', 't', 'e', 'r', '2',
				    'h', 'u', 'n', 't', 'e', 'r', '2', '!' };
	uint8_t			 want[32], k2[32];
	unsigned		 wlen = 0;
	struct auth_cache	*c = auth_cache_new(4, 300, t_key), *d;
	uint32_t		 i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_FATAL(HMAC(EVP_sha256(), t_key, 32, in, sizeof(in), want,
	    &wlen) != NULL && wlen == 32);
	auth_cache_put(c, S("alice"), S("hunter2hunter2!"), 0);
	i = c->lru_head;
	CU_ASSERT_FATAL(i != CACHE_NIL);
	CU_ASSERT(memcmp(c->ents[i].e_mac, want, 32) == 0);
	CU_ASSERT_PTR_NULL(memmem(c->ents, (size_t)c->max * sizeof(*c->ents),
	    "hunter2", 7));
	CU_ASSERT_PTR_NULL(memmem(c, sizeof(*c), "hunter2", 7));
	/* Another key, another MAC for the same credentials. */
	memcpy(k2, t_key, sizeof(k2));
	k2[31] ^= 1;
	d = auth_cache_new(4, 300, k2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	auth_cache_put(d, S("alice"), S("hunter2hunter2!"), 0);
	CU_ASSERT(memcmp(d->ents[d->lru_head].e_mac, want, 32) != 0);
	auth_cache_free(c);
	auth_cache_free(d);
}

static void
test_auth_cache_allocates_nothing_after_new(void)
{
	enum { MAX = 32 };
	struct auth_cache	*c;
	unsigned long		 before;
	char			 u[32];
	unsigned		 i;

	before = t_allocs;
	c = auth_cache_new(MAX, 300, t_key);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CHECKF_FATAL(t_allocs > before, "the allocation wrappers are not "
	    "linked in (-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc)");
	before = t_allocs;
	for (i = 0; i < 4 * MAX; i++) {
		snprintf(u, sizeof(u), "u%u", i);
		auth_cache_put(c, S(u), S("pw"), i);
		(void)auth_cache_hit(c, S(u), S("pw"), i);
		(void)auth_cache_hit(c, S(u), S("other"), i);
		if (i % 7 == 0)
			auth_cache_drop_user(c, S(u));
	}
	auth_cache_clear(c);
	auth_cache_put(c, S("a"), S("b"), 0);
	CHECKF(t_allocs == before, "%lu allocations after auth_cache_new",
	    t_allocs - before);
	auth_cache_free(c);
}

void
register_auth_cache_suite(void)
{
	CU_pSuite	 s = CU_add_suite("auth_cache", NULL, NULL);

	CU_add_test(s, "hits after put", test_auth_cache_hits_after_put);
	CU_add_test(s, "misses other password or user",
	    test_auth_cache_misses_other_password_or_user);
	CU_add_test(s, "length prefix separates splits",
	    test_auth_cache_length_prefix_separates_splits);
	CU_add_test(s, "expires at exactly ttl",
	    test_auth_cache_expires_at_exactly_ttl);
	CU_add_test(s, "evicts least recently used",
	    test_auth_cache_evicts_least_recently_used);
	CU_add_test(s, "stays bounded", test_auth_cache_stays_bounded);
	CU_add_test(s, "drop_user removes every password",
	    test_auth_cache_drop_user_removes_every_password);
	CU_add_test(s, "ttl 0 is disabled",
	    test_auth_cache_ttl_zero_is_disabled);
	CU_add_test(s, "refuses out of range",
	    test_auth_cache_refuses_out_of_range);
	CU_add_test(s, "entry is hmac, not password",
	    test_auth_cache_entry_is_hmac_not_password);
	CU_add_test(s, "allocates nothing after new",
	    test_auth_cache_allocates_nothing_after_new);
}
