/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Buffer pools. A pool object knows its pool (pool_of), so buf_put needs
 * no size argument and a buffer can change hands (an HTTP head buffer
 * becoming a tunnel's first payload) without a copy.
 */
#include "config.h"

#include "worker/buf.h"
#include "worker/pool.h"

static struct pool	 buf_pools[BUF_CLASSES];
static size_t		 buf_sizes[BUF_CLASSES];

void
buf_init(size_t small, size_t large, unsigned max_each)
{
	buf_sizes[BUF_SMALL] = small;
	buf_sizes[BUF_LARGE] = large < small ? small : large;
	pool_init(&buf_pools[BUF_SMALL], "small buffer", buf_sizes[BUF_SMALL],
	    max_each);
	pool_init(&buf_pools[BUF_LARGE], "large buffer", buf_sizes[BUF_LARGE],
	    max_each);
	/* Enough for the steady state of a busy worker; beyond that, empty
	 * slabs of buffers go back to the system (an idle connection holds
	 * none). */
	pool_set_keep(&buf_pools[BUF_SMALL], 64);
	pool_set_keep(&buf_pools[BUF_LARGE], 16);
}

void
buf_fini(void)
{
	pool_fini(&buf_pools[BUF_SMALL]);
	pool_fini(&buf_pools[BUF_LARGE]);
}

char *
buf_get(enum buf_class cls)
{
	return pool_get(&buf_pools[cls]);
}

void
buf_put(char *b)
{
	if (b != NULL)
		pool_put(pool_of(b), b);
}

size_t
buf_size(const char *b)
{
	return pool_of(b)->size;
}

size_t
buf_class_size(enum buf_class cls)
{
	return buf_sizes[cls];
}

unsigned
buf_in_use(void)
{
	return buf_pools[BUF_SMALL].in_use + buf_pools[BUF_LARGE].in_use;
}
