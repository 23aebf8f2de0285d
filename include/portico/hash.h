/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hashing for tables a module or the core builds for itself: hash
 * values (FNV-1a over bytes, and a 64-bit finaliser that spreads every
 * input bit over the whole word), and the chains of a hash table linked
 * by index (pt_chain).
 *
 * FNV-1a and the finaliser are not keyed: they spread honest keys, but
 * a client that chooses its keys can aim them at one bucket unless the
 * table mixes in a secret seed first (as limits/table.c does) or hashes
 * with SipHash-2-4 under a secret key (pt_siphash24).
 *
 * A chained table keeps its entries in one array its owner allocated;
 * each entry embeds the uint32_t index of the next one in its bucket,
 * and the owner keeps the buckets (a power of two of them) and the
 * entries' hashes. Nothing here allocates, compares keys or decides
 * when to grow. The owner usually also orders its entries by use
 * (portico/lru.h).
 *
 * Static inline: no symbol, nothing for a module to link and nothing in
 * the module ABI's signature; each user holds its own copy. Any process;
 * a table belongs to the one thread that uses it.
 */
#ifndef PORTICO_HASH_H
#define PORTICO_HASH_H

#include <stddef.h>
#include <stdint.h>

/* ---- hash values ----------------------------------------------------- */

/* FNV-1a, 64 bits: the hash of no bytes, and the multiplier. */
#define PT_HASH_FNV64_BASIS	0xcbf29ce484222325ULL
#define PT_HASH_FNV64_PRIME	0x100000001b3ULL

/* <h> (PT_HASH_FNV64_BASIS to start) with byte <c> hashed in. */
static inline uint64_t
pt_hash_fnv64_byte(uint64_t h, unsigned char c)
{
	return (h ^ c) * PT_HASH_FNV64_PRIME;
}

/* <h> with the <len> bytes at <data> hashed in, first to last. */
static inline uint64_t
pt_hash_fnv64(uint64_t h, const void *data, size_t len)
{
	const unsigned char	*p = data;
	size_t			 i;

	for (i = 0; i < len; i++)
		h = pt_hash_fnv64_byte(h, p[i]);
	return h;
}

/*
 * MurmurHash3's 64-bit finaliser (fmix64): a bijection on 64-bit words
 * in which each input bit flips each output bit with probability close
 * to one half. A product's low bits depend only on its factors' low
 * bits, so FNV-1a's low bits ignore the high bits of every byte; after
 * this, any bits of the result (the top ones as a tag, the low ones as
 * a bucket) are as good as any other. 0 stays 0.
 */
static inline uint64_t
pt_hash_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/*
 * SipHash-2-4 (Aumasson and Bernstein) of the <len> bytes at <data>
 * under the 128-bit key <k0>, <k1> (its bytes 0-7 and 8-15, read little
 * endian): a keyed pseudo-random function. Where the output must not be
 * guessed or aimed from outside (a client choosing keys to collide, an
 * address derived from a user name), hash under a secret key drawn with
 * getrandom(2); FNV-1a and the finaliser above are no defence there.
 */
#define PT_SIP_ROTL(x, b)	(((x) << (b)) | ((x) >> (64 - (b))))
#define PT_SIP_ROUND(v0, v1, v2, v3) do {				\
	v0 += v1; v1 = PT_SIP_ROTL(v1, 13); v1 ^= v0;			\
	v0 = PT_SIP_ROTL(v0, 32);					\
	v2 += v3; v3 = PT_SIP_ROTL(v3, 16); v3 ^= v2;			\
	v0 += v3; v3 = PT_SIP_ROTL(v3, 21); v3 ^= v0;			\
	v2 += v1; v1 = PT_SIP_ROTL(v1, 17); v1 ^= v2;			\
	v2 = PT_SIP_ROTL(v2, 32);					\
} while (0)

static inline uint64_t
pt_siphash24(uint64_t k0, uint64_t k1, const void *data, size_t len)
{
	const unsigned char	*p = data;
	uint64_t		 v0 = 0x736f6d6570736575ULL ^ k0;
	uint64_t		 v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t		 v2 = 0x6c7967656e657261ULL ^ k0;
	uint64_t		 v3 = 0x7465646279746573ULL ^ k1;
	uint64_t		 m;
	size_t			 i, left;
	int			 b;

	for (i = 0; i + 8 <= len; i += 8) {
		for (m = 0, b = 7; b >= 0; b--)
			m = (m << 8) | p[i + (size_t)b];
		v3 ^= m;
		PT_SIP_ROUND(v0, v1, v2, v3);
		PT_SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	/* The last word: the 0 to 7 bytes left, the length's low byte on
	 * top. */
	m = (uint64_t)(len & 0xff) << 56;
	for (left = len - i; left > 0; left--)
		m |= (uint64_t)p[i + left - 1] << (8 * (left - 1));
	v3 ^= m;
	PT_SIP_ROUND(v0, v1, v2, v3);
	PT_SIP_ROUND(v0, v1, v2, v3);
	v0 ^= m;
	v2 ^= 0xff;
	PT_SIP_ROUND(v0, v1, v2, v3);
	PT_SIP_ROUND(v0, v1, v2, v3);
	PT_SIP_ROUND(v0, v1, v2, v3);
	PT_SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- chains of a hash table ------------------------------------------ */

/* No entry: an empty bucket, the end of a chain. */
#define PT_CHAIN_NIL	UINT32_MAX

/* One table as a call sees it: where its entries and buckets are. */
struct pt_chain {
	char		*base;		/* the owner's array of entries */
	size_t		 size;		/* of one entry */
	size_t		 link;		/* offset of the entry's next index */
	uint32_t	*buckets;	/* mask + 1 of them */
	uint32_t	 mask;		/* a power of two, less one */
};

/*
 * The table whose entries are <array> (a pointer to the first entry,
 * NULL allowed while nothing is called with an index), chained through
 * their uint32_t <member>, with <mask> + 1 <buckets>. Made where it is
 * used, or in a one-line accessor, the description folds into constants.
 */
#define PT_CHAIN(array, member, buckets, mask)				\
	((struct pt_chain){ (char *)(array), sizeof(*(array)),		\
	    offsetof(__typeof__(*(array)), member), (buckets), (mask) })

/* How many buckets for <n> entries, so that chains average one entry
 * at most when full: the least power of two >= <n> (1 for 0), at most
 * 2^31. */
static inline uint32_t
pt_chain_buckets(uint32_t n)
{
	uint32_t	 b = 1;

	while (b < n && b < (UINT32_C(1) << 31))
		b <<= 1;
	return b;
}

/* The next-index word of entry <i>. */
static inline uint32_t *
pt_chain_link(struct pt_chain t, uint32_t i)
{
	return (uint32_t *)(void *)(t.base + (size_t)i * t.size + t.link);
}

/* Empties every bucket; the entries are left as they are. */
static inline void
pt_chain_clear(struct pt_chain t)
{
	uint32_t	 b;

	for (b = 0; b <= t.mask; b++)
		t.buckets[b] = PT_CHAIN_NIL;
}

/*
 * The first entry in the bucket of <hash>, or PT_CHAIN_NIL; the rest
 * follow by pt_chain_next. Entries of other hashes share the chain: the
 * caller compares keys (and its stored hash first, if it keeps one).
 */
static inline uint32_t
pt_chain_first(struct pt_chain t, uint64_t hash)
{
	return t.buckets[hash & t.mask];
}

static inline uint32_t
pt_chain_next(struct pt_chain t, uint32_t i)
{
	return *pt_chain_link(t, i);
}

/* Files entry <i>, not in the table, under <hash>: first of its chain. */
static inline void
pt_chain_add(struct pt_chain t, uint32_t i, uint64_t hash)
{
	uint32_t	*bucket = &t.buckets[hash & t.mask];

	*pt_chain_link(t, i) = *bucket;
	*bucket = i;
}

/* Takes entry <i>, filed under <hash>, out of the table. Walks its
 * chain: as long as the chains are short. */
static inline void
pt_chain_del(struct pt_chain t, uint32_t i, uint64_t hash)
{
	uint32_t	*link = &t.buckets[hash & t.mask];

	while (*link != i)
		link = pt_chain_link(t, *link);
	*link = *pt_chain_link(t, i);
}

#endif /* PORTICO_HASH_H */
