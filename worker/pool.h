/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fixed-size object pools. Objects are carved from slabs the pool maps
 * itself (mmap), never from the malloc heap: a connection's state and a
 * payload buffer never share a page with a stranger, so memory a burst
 * made can go back to the system whole once the burst is over. In steady
 * state an object only moves between users and its slab's free list: no
 * connection and no buffer costs a system call or a malloc.
 */
#ifndef PT_WORKER_POOL_H
#define PT_WORKER_POOL_H

#include <stdbool.h>
#include <stddef.h>

struct pool_item {
	struct pool_item	*next;
};

struct pool_slab;

struct pool {
	const char		*name;
	size_t			 size;		/* usable bytes per object */
	size_t			 stride;	/* object and its header */
	unsigned		 per_slab;	/* objects in one slab */
	unsigned		 limit;		/* objects in use at most, 0: none */
	unsigned		 allocated;	/* carved, in live slabs */
	unsigned		 in_use;
	unsigned		 nfree;		/* on the slabs' free lists */
	/* An empty slab goes back to the system only when the other slabs
	 * still hold this many free objects: a pool busy at one slab's
	 * worth never maps and unmaps in a loop. */
	unsigned		 keep;
	size_t			 bytes;		/* carved bytes, headers included */
	struct pool_slab	*partial;	/* slabs with room, emptiest last */
	struct pool_slab	*full;
};

/* ---- worker/pool.c --------------------------------------------------- */

/* Sets up an empty pool of <size>-byte objects, at most <limit> in use at
 * once (0: no limit). Maps nothing yet. */
void	 pool_init(struct pool *p, const char *name, size_t size,
	    unsigned limit);
/* Keeps at least <keep> free objects before an empty slab is unmapped
 * (default: one slab's worth). */
void	 pool_set_keep(struct pool *p, unsigned keep);
/* Unmaps every slab with no object in use; objects still in use must be
 * put first. */
void	 pool_fini(struct pool *p);
/* Takes an object (contents undefined), or NULL when the limit is reached
 * or memory is short. The caller owns it until pool_put. */
void	*pool_get(struct pool *p);
void	 pool_put(struct pool *p, void *obj);
/* The pool <obj> came from. */
struct pool *pool_of(const void *obj);
/* Carves <n> objects now so the first connections don't pay for them. */
void	 pool_prealloc(struct pool *p, unsigned n);
/* Bytes of the objects in use in every pool of this process (connections,
 * protocol state, buffers, headers included): what the worker's memory
 * ceiling counts. Free objects kept for reuse are not counted. */
size_t	 pool_bytes_total(void);

#endif
