/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/pool.c: LIFO reuse, no allocation in steady state, the object
 * limit, pre-allocation, and memory given back after a burst. Leaks are
 * left to valgrind and ASan: every test puts back what it took and calls
 * pool_fini.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "worker/pool.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

static void
test_pool_get_returns_last_put_first(void)
{
	struct pool	 p;
	void		*a, *b, *c;

	pool_init(&p, "test", 64, 0);
	a = pool_get(&p);
	b = pool_get(&p);
	c = pool_get(&p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT(a != b && b != c && a != c);
	CU_ASSERT_EQUAL(p.allocated, 3);
	CU_ASSERT_EQUAL(p.in_use, 3);

	pool_put(&p, a);
	pool_put(&p, c);
	CU_ASSERT_EQUAL(p.in_use, 1);
	CU_ASSERT_PTR_EQUAL(pool_get(&p), c);
	CU_ASSERT_PTR_EQUAL(pool_get(&p), a);
	CU_ASSERT_EQUAL(p.allocated, 3);
	CU_ASSERT_EQUAL(p.in_use, 3);

	pool_put(&p, a);
	pool_put(&p, b);
	pool_put(&p, c);
	CU_ASSERT_EQUAL(p.in_use, 0);
	pool_fini(&p);
	CU_ASSERT_EQUAL(p.allocated, 0);
}

/* The point of the pool: a connection that comes and goes forever costs
 * one malloc in total. */
static void
test_pool_get_put_loop_does_not_allocate(void)
{
	struct pool	 p;
	void		*first, *o[4];
	int		 i, j;

	pool_init(&p, "test", 256, 0);
	first = pool_get(&p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(first);
	pool_put(&p, first);
	for (i = 0; i < 10000; i++) {
		void *obj = pool_get(&p);

		if (!CHECKF(obj == first, "round %d: got %p, want %p", i, obj,
		    first))
			break;
		memset(obj, 0xa5, 256);
		pool_put(&p, obj);
	}
	CU_ASSERT_EQUAL(p.allocated, 1);
	CU_ASSERT_EQUAL(p.in_use, 0);

	/* Same with several in flight at once. */
	for (i = 0; i < 1000; i++) {
		for (j = 0; j < 4; j++)
			o[j] = pool_get(&p);
		for (j = 0; j < 4; j++)
			pool_put(&p, o[j]);
	}
	CU_ASSERT_EQUAL(p.allocated, 4);
	CU_ASSERT_EQUAL(p.in_use, 0);
	pool_fini(&p);
}

static void
test_pool_refuses_get_at_limit_until_put(void)
{
	struct pool	 p;
	void		*o[3], *again;
	int		 i;

	pool_init(&p, "test", 32, 3);
	for (i = 0; i < 3; i++) {
		o[i] = pool_get(&p);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o[i]);
	}
	CU_ASSERT_PTR_NULL(pool_get(&p));
	CU_ASSERT_PTR_NULL(pool_get(&p));
	CU_ASSERT_EQUAL(p.allocated, 3);
	CU_ASSERT_EQUAL(p.in_use, 3);

	pool_put(&p, o[1]);
	again = pool_get(&p);
	CU_ASSERT_PTR_EQUAL(again, o[1]);
	CU_ASSERT_PTR_NULL(pool_get(&p));
	CU_ASSERT_EQUAL(p.allocated, 3);

	for (i = 0; i < 3; i++)
		pool_put(&p, o[i]);
	CU_ASSERT_EQUAL(p.in_use, 0);
	pool_fini(&p);
}

static void
test_pool_prealloc_makes_objects_up_front(void)
{
	struct pool	 p;
	void		*o[5];
	int		 i;

	pool_init(&p, "test", 128, 0);
	CU_ASSERT_EQUAL(p.allocated, 0);
	pool_prealloc(&p, 4);
	CU_ASSERT_EQUAL(p.allocated, 4);
	CU_ASSERT_EQUAL(p.in_use, 0);
	for (i = 0; i < 4; i++) {
		o[i] = pool_get(&p);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o[i]);
		CHECKF(p.allocated == 4, "get %d allocated: %u objects", i,
		    p.allocated);
	}
	o[4] = pool_get(&p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o[4]);
	CU_ASSERT_EQUAL(p.allocated, 5);
	for (i = 0; i < 5; i++)
		pool_put(&p, o[i]);
	pool_fini(&p);
	CU_ASSERT_EQUAL(p.allocated, 0);
}

static void
test_pool_prealloc_stops_at_limit(void)
{
	struct pool	 p;
	void		*a, *b;

	pool_init(&p, "test", 128, 2);
	pool_prealloc(&p, 5);
	CU_ASSERT_EQUAL(p.allocated, 2);
	a = pool_get(&p);
	b = pool_get(&p);
	CU_ASSERT_PTR_NOT_NULL(a);
	CU_ASSERT_PTR_NOT_NULL(b);
	CU_ASSERT_PTR_NULL(pool_get(&p));
	pool_put(&p, a);
	pool_put(&p, b);
	pool_fini(&p);
}

/* The free list lives inside free objects, so tiny ones are widened. */
static void
test_pool_widens_objects_smaller_than_a_link(void)
{
	struct pool	 p;
	void		*a, *b;

	pool_init(&p, "test", 1, 0);
	CU_ASSERT(p.size >= sizeof(struct pool_item));
	a = pool_get(&p);
	b = pool_get(&p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	memset(a, 0xff, p.size);
	pool_put(&p, a);
	pool_put(&p, b);
	CU_ASSERT_PTR_EQUAL(pool_get(&p), b);
	CU_ASSERT_PTR_EQUAL(pool_get(&p), a);
	pool_put(&p, a);
	pool_put(&p, b);
	pool_fini(&p);
}

static void
test_pool_put_null_is_noop(void)
{
	struct pool	 p;

	pool_init(&p, "test", 64, 1);
	pool_put(&p, NULL);
	CU_ASSERT_EQUAL(p.in_use, 0);
	CU_ASSERT_EQUAL(p.nfree, 0);
	pool_fini(&p);
}

/* A burst maps slabs; once every object is back, the first trim keeps
 * them (the burst was the last interval's peak), the second gives all but
 * keep's worth back to the system. The in-use count follows at once. */
static void
test_pool_gives_back_empty_slabs_after_a_burst(void)
{
	struct pool	 p;
	void		*o[1000];
	size_t		 before = pool_bytes_total();
	int		 i;

	pool_init(&p, "test", 1000, 0);
	pool_set_keep(&p, 10);
	for (i = 0; i < 1000; i++) {
		o[i] = pool_get(&p);
		CU_ASSERT_PTR_NOT_NULL_FATAL(o[i]);
		CU_ASSERT_PTR_EQUAL(pool_of(o[i]), &p);
		memset(o[i], 0x5a, 1000);
	}
	CU_ASSERT(p.bytes >= 1000u * 1000u);
	CU_ASSERT_EQUAL(pool_bytes_total() - before, 1000u * p.stride);
	for (i = 0; i < 1000; i++)
		pool_put(&p, o[i]);
	CU_ASSERT_EQUAL(p.in_use, 0);
	CU_ASSERT_EQUAL(pool_bytes_total(), before);
	CU_ASSERT(pool_trim_wanted());
	CU_ASSERT(pool_trim(&p));
	CHECKF(p.allocated == 1000, "the first trim after the peak kept %u "
	    "of 1000", p.allocated);
	CU_ASSERT_FALSE(pool_trim(&p));
	CHECKF(p.allocated <= 10 + 2 * p.per_slab, "%u objects kept, "
	    "keep 10, %u per slab", p.allocated, p.per_slab);
	CHECKF(p.bytes < 1000u * 1000u / 4, "%zu bytes kept", p.bytes);
	CU_ASSERT_EQUAL(p.nfree, p.allocated);
	pool_fini(&p);
	CU_ASSERT_EQUAL(p.allocated, 0);
}

/* A pool busy in waves keeps what its waves need: no unmapping while the
 * peak between two trims is still there to serve. */
static void
test_pool_trim_keeps_what_the_peak_needed(void)
{
	struct pool	 p;
	void		*o[200];
	unsigned	 kept;
	int		 i, round;

	pool_init(&p, "test", 1000, 0);
	pool_set_keep(&p, 0);
	for (round = 0; round < 5; round++) {
		for (i = 0; i < 200; i++)
			o[i] = pool_get(&p);
		for (i = 0; i < 200; i++)
			pool_put(&p, o[i]);
		kept = p.allocated;
		pool_trim(&p);
		if (!CHECKF(p.allocated == kept && kept >= 200, "round %d: "
		    "trim left %u of %u", round, p.allocated, kept))
			break;
	}
	pool_trim(&p);
	CHECKF(p.allocated <= p.per_slab, "after a quiet interval, %u kept",
	    p.allocated);
	pool_fini(&p);
}

/* One connection coming and going must not map and unmap a slab each
 * time: the pool's only slab stays. */
static void
test_pool_keeps_its_last_slab(void)
{
	struct pool	 p;
	void		*a, *b;
	int		 i;

	pool_init(&p, "test", 4096, 0);
	pool_set_keep(&p, 0);
	a = pool_get(&p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	for (i = 0; i < 100; i++) {
		pool_put(&p, a);
		b = pool_get(&p);
		if (!CHECKF(b == a, "round %d: a new object", i))
			break;
	}
	CU_ASSERT_EQUAL(p.allocated, 1);
	pool_put(&p, a);
	pool_fini(&p);
}

void
register_pool_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("pool", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "get_returns_last_put_first",
	    test_pool_get_returns_last_put_first);
	CU_add_test(s, "get_put_loop_does_not_allocate",
	    test_pool_get_put_loop_does_not_allocate);
	CU_add_test(s, "refuses_get_at_limit_until_put",
	    test_pool_refuses_get_at_limit_until_put);
	CU_add_test(s, "prealloc_makes_objects_up_front",
	    test_pool_prealloc_makes_objects_up_front);
	CU_add_test(s, "prealloc_stops_at_limit",
	    test_pool_prealloc_stops_at_limit);
	CU_add_test(s, "widens_objects_smaller_than_a_link",
	    test_pool_widens_objects_smaller_than_a_link);
	CU_add_test(s, "put_null_is_noop", test_pool_put_null_is_noop);
	CU_add_test(s, "gives_back_empty_slabs_after_a_burst",
	    test_pool_gives_back_empty_slabs_after_a_burst);
	CU_add_test(s, "keeps_its_last_slab", test_pool_keeps_its_last_slab);
	CU_add_test(s, "trim_keeps_what_the_peak_needed",
	    test_pool_trim_keeps_what_the_peak_needed);
}
