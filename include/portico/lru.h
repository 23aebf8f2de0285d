/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A least-recently-used list linked by index, for a table of fixed size
 * (a cache) whose entries sit in one array its owner allocated: each
 * entry embeds a struct pt_lru_link, the owner keeps the list's two ends
 * (two indexes) where it likes, and nothing here allocates, frees or
 * evicts. Like nginx's ngx_queue.h, but linked by 32-bit index rather
 * than pointer, so an entry carries 8 bytes of links and the array may
 * be moved whole (realloc). The owner usually also files its entries in
 * a chained hash (pt_chain in portico/hash.h), and keeps its free slots
 * on a list of its own: an entry off the list may use its link's words.
 *
 * Each call is handed the list as PT_LRU() describes it (the array, the
 * link's member, the two ends); made in the same function, or in a
 * one-line accessor the compiler inlines, that description folds into
 * constants, and the functions compile to the loads and stores of a list
 * written by hand for that array.
 *
 * Static inline: no symbol, nothing for a module to link and nothing in
 * the module ABI's signature; each user holds its own copy. For the one
 * thread that owns the list, in any process.
 */
#ifndef PORTICO_LRU_H
#define PORTICO_LRU_H

#include <stddef.h>
#include <stdint.h>

/* No entry: the end of the list in either direction. */
#define PT_LRU_NIL	UINT32_MAX

/* Embedded in each entry; meaningful only while the entry is listed. */
struct pt_lru_link {
	uint32_t	 newer;		/* towards the newest, or PT_LRU_NIL */
	uint32_t	 older;		/* towards the oldest, or PT_LRU_NIL */
};

/* One list as a call sees it: where its entries are, and its ends. */
struct pt_lru {
	char		*base;		/* the owner's array */
	size_t		 size;		/* of one entry */
	size_t		 link;		/* offset of the entry's pt_lru_link */
	uint32_t	*newest;	/* most recently used, or PT_LRU_NIL */
	uint32_t	*oldest;	/* next to evict, or PT_LRU_NIL */
};

/*
 * The list of the entries of <array> (a pointer to its first entry,
 * NULL allowed while nothing is called with an index) linked through
 * their struct pt_lru_link <member>, whose ends are the uint32_t that
 * <newest> and <oldest> point to.
 */
#define PT_LRU(array, member, newest, oldest)				\
	((struct pt_lru){ (char *)(array), sizeof(*(array)),		\
	    offsetof(__typeof__(*(array)), member), (newest), (oldest) })

/* The link of entry <i>. */
static inline struct pt_lru_link *
pt_lru_at(struct pt_lru l, uint32_t i)
{
	return (struct pt_lru_link *)(void *)(l.base + (size_t)i * l.size +
	    l.link);
}

/* Makes the list empty; the entries' links are left as they are. */
static inline void
pt_lru_init(struct pt_lru l)
{
	*l.newest = *l.oldest = PT_LRU_NIL;
}

/* Takes listed entry <i> off the list. */
static inline void
pt_lru_unlink(struct pt_lru l, uint32_t i)
{
	struct pt_lru_link	*e = pt_lru_at(l, i);

	if (e->newer != PT_LRU_NIL)
		pt_lru_at(l, e->newer)->older = e->older;
	else
		*l.newest = e->older;
	if (e->older != PT_LRU_NIL)
		pt_lru_at(l, e->older)->newer = e->newer;
	else
		*l.oldest = e->newer;
}

/* Lists entry <i>, which is not listed, as the newest. */
static inline void
pt_lru_push(struct pt_lru l, uint32_t i)
{
	struct pt_lru_link	*e = pt_lru_at(l, i);

	e->newer = PT_LRU_NIL;
	e->older = *l.newest;
	if (*l.newest != PT_LRU_NIL)
		pt_lru_at(l, *l.newest)->newer = i;
	else
		*l.oldest = i;
	*l.newest = i;
}

/* Listed entry <i> was used: it becomes the newest. */
static inline void
pt_lru_touch(struct pt_lru l, uint32_t i)
{
	pt_lru_unlink(l, i);
	pt_lru_push(l, i);
}

/* The entry used just before listed entry <i>, or PT_LRU_NIL. */
static inline uint32_t
pt_lru_older(struct pt_lru l, uint32_t i)
{
	return pt_lru_at(l, i)->older;
}

/* The entry used just after listed entry <i>, or PT_LRU_NIL. */
static inline uint32_t
pt_lru_newer(struct pt_lru l, uint32_t i)
{
	return pt_lru_at(l, i)->newer;
}

#endif /* PORTICO_LRU_H */
