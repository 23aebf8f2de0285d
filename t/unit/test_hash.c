/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hash values and index-linked chains (include/portico/hash.h). The
 * values are pinned: FNV-1a's published vectors, and finaliser outputs
 * computed from MurmurHash3's fmix64 as the ACL host set and the limits
 * table wrote it before they shared this one, so a table built from the
 * same input files its entries where it did. The chains: entries filed
 * under colliding hashes, found and taken out at every place in a chain.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "portico/hash.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

static void
test_hash_fnv64_gives_the_published_values(void)
{
	static const struct {
		const char	*in;
		uint64_t	 want;
	} v[] = {
		{ "", 0xcbf29ce484222325ULL },
		{ "a", 0xaf63dc4c8601ec8cULL },
		{ "foobar", 0x85944171f73967e8ULL },
	};
	uint64_t	 h;
	size_t		 i, k;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		h = pt_hash_fnv64(PT_HASH_FNV64_BASIS, v[i].in,
		    strlen(v[i].in));
		CHECKF(h == v[i].want, "\"%s\": %#llx, want %#llx", v[i].in,
		    (unsigned long long)h, (unsigned long long)v[i].want);
		/* Byte by byte, as the host set hashes suffixes. */
		h = PT_HASH_FNV64_BASIS;
		for (k = 0; v[i].in[k] != '\0'; k++)
			h = pt_hash_fnv64_byte(h, (unsigned char)v[i].in[k]);
		CHECKF(h == v[i].want, "\"%s\" by bytes: %#llx", v[i].in,
		    (unsigned long long)h);
	}
}

static void
test_hash_mix64_keeps_the_values_tables_used(void)
{
	static const struct {
		uint64_t	 in, want;
	} v[] = {
		{ 0, 0 },
		{ 1, 0xb456bcfc34c2cb2cULL },
		{ 0x8000000000000000ULL, 0x8f780810af31a493ULL },
		{ 0xcbf29ce484222325ULL, 0xefd01f60ba992926ULL },
		{ UINT64_MAX, 0x64b5720b4b825f21ULL },
	};
	uint64_t	 h;
	size_t		 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		h = pt_hash_mix64(v[i].in);
		CHECKF(h == v[i].want, "mix64(%#llx): %#llx, want %#llx",
		    (unsigned long long)v[i].in, (unsigned long long)h,
		    (unsigned long long)v[i].want);
	}
}

/* Neighbouring inputs land far apart: in 4096 consecutive ones, no two
 * share their top 16 bits or their low 12 more often than chance. */
static void
test_hash_mix64_spreads_neighbours(void)
{
	static uint8_t	 top[65536], low[4096];
	unsigned	 same_top = 0, same_low = 0;
	uint64_t	 h, i;

	memset(top, 0, sizeof(top));
	memset(low, 0, sizeof(low));
	for (i = 0; i < 4096; i++) {
		h = pt_hash_mix64(i);
		same_top += top[h >> 48]++ != 0;
		same_low += low[h & 4095]++ != 0;
	}
	/* About 125 expected for the top bits, about 1507 for the low. */
	CHECKF(same_top < 250, "%u collisions in the top 16 bits", same_top);
	CHECKF(same_low < 1700, "%u collisions in the low 12 bits",
	    same_low);
}

static void
test_hash_chain_buckets_are_powers_of_two(void)
{
	static const struct {
		uint32_t	 n, want;
	} v[] = {
		{ 0, 1 }, { 1, 1 }, { 2, 2 }, { 3, 4 }, { 64, 64 },
		{ 65, 128 }, { 1000000, 1048576 },
		{ (UINT32_C(1) << 31) + 1, UINT32_C(1) << 31 },
		{ UINT32_MAX, UINT32_C(1) << 31 },
	};
	size_t		 i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CHECKF(pt_chain_buckets(v[i].n) == v[i].want, "%u entries: "
		    "%u buckets, want %u", v[i].n, pt_chain_buckets(v[i].n),
		    v[i].want);
}

#define CH_N	8

struct ch_ent {
	uint16_t	 tag;
	uint32_t	 next;
	uint32_t	 hash;
};

static struct ch_ent	 ch_ents[CH_N];
static uint32_t		 ch_buckets[4];

static struct pt_chain
ch_table(void)
{
	return PT_CHAIN(ch_ents, next, ch_buckets, 3);
}

/* Whether entry <want> is filed under <hash>, and how long the walk. */
static bool
ch_has(uint32_t want, uint32_t hash, unsigned *len)
{
	uint32_t	 i;
	bool		 found = false;

	*len = 0;
	for (i = pt_chain_first(ch_table(), hash); i != PT_CHAIN_NIL &&
	    *len <= CH_N; i = pt_chain_next(ch_table(), i)) {
		(*len)++;
		if (i == want)
			found = true;
	}
	return found;
}

static void
test_hash_chain_files_finds_and_deletes(void)
{
	unsigned	 len;
	uint32_t	 i;

	pt_chain_clear(ch_table());
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(ch_buckets[i], PT_CHAIN_NIL);
	/* Entries 0..7 under hashes whose low two bits are i % 3: buckets
	 * 0, 1 and 2 share, bucket 3 stays empty. */
	for (i = 0; i < CH_N; i++) {
		ch_ents[i].tag = (uint16_t)(0xabc0 + i);
		ch_ents[i].hash = (i % 3) | (i << 8);
		pt_chain_add(ch_table(), i, ch_ents[i].hash);
	}
	CU_ASSERT_EQUAL(ch_buckets[3], PT_CHAIN_NIL);
	/* The newest first in its chain. */
	CU_ASSERT_EQUAL(pt_chain_first(ch_table(), 0), 6);
	CU_ASSERT_EQUAL(pt_chain_first(ch_table(), 1), 7);
	CU_ASSERT_EQUAL(pt_chain_first(ch_table(), 2), 5);
	for (i = 0; i < CH_N; i++)
		CHECKF(ch_has(i, ch_ents[i].hash, &len), "entry %u not found",
		    i);
	CU_ASSERT_TRUE(ch_has(0, 0, &len));
	CU_ASSERT_EQUAL(len, 3);	/* 6, 3, 0 */
	/* Out of a chain's middle, its head, its tail. */
	pt_chain_del(ch_table(), 3, ch_ents[3].hash);
	CU_ASSERT_FALSE(ch_has(3, 0, &len));
	CU_ASSERT_EQUAL(len, 2);
	pt_chain_del(ch_table(), 7, ch_ents[7].hash);
	CU_ASSERT_FALSE(ch_has(7, 1, &len));
	CU_ASSERT_TRUE(ch_has(4, 1, &len));
	CU_ASSERT_EQUAL(len, 2);
	pt_chain_del(ch_table(), 2, ch_ents[2].hash);
	CU_ASSERT_FALSE(ch_has(2, 2, &len));
	CU_ASSERT_TRUE(ch_has(5, 2, &len));
	CU_ASSERT_EQUAL(len, 1);
	pt_chain_del(ch_table(), 5, ch_ents[5].hash);
	CU_ASSERT_EQUAL(ch_buckets[2], PT_CHAIN_NIL);
	/* Back in, under another hash. */
	pt_chain_add(ch_table(), 5, 3);
	CU_ASSERT_EQUAL(pt_chain_first(ch_table(), 3), 5);
	CU_ASSERT_EQUAL(pt_chain_next(ch_table(), 5), PT_CHAIN_NIL);
	/* The fields around the link are the owner's. */
	for (i = 0; i < CH_N; i++)
		CHECKF((uint32_t)ch_ents[i].tag == 0xabc0 + i, "entry %u: "
		    "tag changed", i);
	pt_chain_clear(ch_table());
	CU_ASSERT_FALSE(ch_has(0, 0, &len));
	CU_ASSERT_EQUAL(len, 0);
}

void
register_hash_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("hash", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "fnv64_gives_the_published_values",
	    test_hash_fnv64_gives_the_published_values);
	CU_add_test(s, "mix64_keeps_the_values_tables_used",
	    test_hash_mix64_keeps_the_values_tables_used);
	CU_add_test(s, "mix64_spreads_neighbours",
	    test_hash_mix64_spreads_neighbours);
	CU_add_test(s, "chain_buckets_are_powers_of_two",
	    test_hash_chain_buckets_are_powers_of_two);
	CU_add_test(s, "chain_files_finds_and_deletes",
	    test_hash_chain_files_finds_and_deletes);
}
