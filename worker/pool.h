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
	unsigned		 limit;		/* in use at most, 0: none */
	unsigned		 allocated;	/* carved, in live slabs */
	unsigned		 in_use;
	unsigned		 nfree;		/* on the slabs' free lists */
	/* pool_trim leaves at least this many free objects (and never
	 * unmaps the last slab with room). */
	unsigned		 keep;
	unsigned		 peak;		/* top in_use since pool_trim */
	size_t			 bytes;		/* carved, headers included */
	struct pool_slab	*partial;	/* with room, emptiest last */
	struct pool_slab	*full;
	struct pool		*next_pool;	/* all pools: pool_trim_all */
};

/* ---- worker/pool.c --------------------------------------------------- */

/* Sets up an empty pool of <size>-byte objects, at most <limit> in use at
 * once (0: no limit). Maps nothing yet. */
void	 pool_init(struct pool *p, const char *name, size_t size,
	    unsigned limit);
/* Keeps at least <keep> free objects when trimming (default: one slab's
 * worth). */
void	 pool_set_keep(struct pool *p, unsigned keep);
/* Unmaps every slab with no object in use and forgets the pool; objects
 * still in use must be put first. */
void	 pool_fini(struct pool *p);
/*
 * Unmaps empty slabs the pool has not needed since the last trim: it
 * keeps enough free objects for the peak seen since then (and <keep>),
 * so a pool busy in waves never maps and unmaps in a loop, and a burst's
 * memory goes back one to two trims after the burst is over. Returns true
 * while empty slabs remain that a later trim may unmap.
 */
bool	 pool_trim(struct pool *p);
/* pool_trim on every pool not yet finished. */
bool	 pool_trim_all(void);
/* Set when a slab became empty since the last pool_trim_all: the caller
 * (conn_reap) then schedules one. */
bool	 pool_trim_wanted(void);
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
