/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fixed-size object pools. An object is allocated once, the first time the
 * pool is empty, and from then on only moves between users and the free
 * list: in steady state no connection and no buffer costs a malloc.
 */
#ifndef PT_WORKER_POOL_H
#define PT_WORKER_POOL_H

#include <stddef.h>

struct pool_item {
	struct pool_item	*next;
};

struct pool {
	const char		*name;
	size_t			 size;		/* bytes per object */
	unsigned		 limit;		/* objects at most, 0: none */
	unsigned		 allocated;	/* ever made */
	unsigned		 in_use;
	unsigned		 nfree;
	unsigned		 keep;		/* free objects kept, 0: all */
	struct pool_item	*free;
};

/* ---- worker/pool.c --------------------------------------------------- */

/* Sets up an empty pool of <size>-byte objects, at most <limit> of them
 * (0: no limit). Allocates nothing yet. */
void	 pool_init(struct pool *p, const char *name, size_t size,
	    unsigned limit);
/* Keeps at most <keep> free objects (0: all): a burst of a thousand
 * connections must not leave a thousand buffers' worth of memory behind
 * once they go idle. */
void	 pool_set_keep(struct pool *p, unsigned keep);
/* Releases every free object; objects still in use must be put first. */
void	 pool_fini(struct pool *p);
/* Takes an object (contents undefined), or NULL when the limit is reached
 * or memory is short. The caller owns it until pool_put. */
void	*pool_get(struct pool *p);
void	 pool_put(struct pool *p, void *obj);
/* Makes <n> objects now so the first connections don't pay for them. */
void	 pool_prealloc(struct pool *p, unsigned n);

#endif
