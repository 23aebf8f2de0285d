/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/limits/bucket.c: the token bucket in one word.
 * Time is handed in, never read: burst, refill, a flood's exact count,
 * long idle, a clock that steps back, and the 64-bit edges.
 */
#include "config.h"

#include <stdint.h>

#include <CUnit/CUnit.h>

#include "modules/limits/bucket.h"
#include "t/unit/check.h"
#include "modules/limits/t_suites.h"

#define MS	1000000ULL
#define S	1000000000ULL

static void
test_bucket_starts_full_and_gives_burst(void)
{
	_Atomic uint64_t	 tat = 0;
	uint64_t		 u = bucket_units(5 * S, 0, 100), shortby = 0;
	int			 i, got = 0;

	for (i = 0; i < 20; i++)
		got += (int)bucket_take(&tat, u, 10, 1, 1, NULL);
	CHECKF(got == 10, "a full bucket of 10 gave %d at one instant", got);
	CU_ASSERT(bucket_take(&tat, u, 10, 1, 1, &shortby) == 0);
	CU_ASSERT(shortby == 1);
	CU_ASSERT(bucket_level(&tat, u, 10) == 0);
}

/* 100/s with a burst of 10 under 1,000 attempts a second for 10 s admits
 * burst + rate * 10 s, not one more or less. */
static void
test_bucket_flood_admits_exactly(void)
{
	_Atomic uint64_t	 tat = 0;
	uint64_t		 epoch = 123456789, t, admitted = 0;

	for (t = 0; t <= 10 * S; t += MS)
		admitted += bucket_take(&tat, bucket_units(epoch + t, epoch,
		    100), 10, 1, 1, NULL);
	CHECKF(admitted == 10 + 100 * 10, "admitted %llu, want 1010",
	    (unsigned long long)admitted);
}

/* A rate that does not divide a second: 3/s over 1 s gives 3 after the
 * burst, and the wait for the next token is exact to the nanosecond. */
static void
test_bucket_refill_is_exact(void)
{
	_Atomic uint64_t	 tat = 0;
	uint64_t		 u, shortby = 0, wait;

	CU_ASSERT(bucket_units(333333333, 0, 3) == 0);
	CU_ASSERT(bucket_units(333333334, 0, 3) == 1);
	CU_ASSERT(bucket_units(S, 0, 3) == 3);
	u = bucket_units(0, 0, 3);
	CU_ASSERT(bucket_take(&tat, u, 1, 1, 1, NULL) == 1);
	CU_ASSERT(bucket_take(&tat, u, 1, 1, 1, &shortby) == 0);
	wait = bucket_ns_until(0, 0, 3, u + shortby);
	CHECKF(wait == 333333334, "wait %llu ns", (unsigned long long)wait);
	CU_ASSERT(bucket_take(&tat, bucket_units(wait - 1, 0, 3), 1, 1, 1,
	    NULL) == 0);
	CU_ASSERT(bucket_take(&tat, bucket_units(wait, 0, 3), 1, 1, 1,
	    NULL) == 1);
}

/* Partial takes: up to <want>, only when <min> is there. */
static void
test_bucket_partial_take(void)
{
	_Atomic uint64_t	 tat = 0;
	uint64_t		 shortby = 0;

	CU_ASSERT(bucket_take(&tat, 1000, 100, 70, 10, NULL) == 70);
	CU_ASSERT(bucket_take(&tat, 1000, 100, 70, 10, NULL) == 30);
	CU_ASSERT(bucket_take(&tat, 1005, 100, 70, 10, &shortby) == 0);
	CU_ASSERT(shortby == 5);
	CU_ASSERT(bucket_take(&tat, 1010, 100, 70, 10, NULL) == 10);
}

/* Idle for days, the bucket holds its burst, not what the days earned. */
static void
test_bucket_long_idle_caps_at_burst(void)
{
	_Atomic uint64_t	 tat = 0;
	uint64_t		 u;

	CU_ASSERT(bucket_take(&tat, 0, 50, 50, 50, NULL) == 50);
	u = bucket_units(86400 * 30 * S, 0, 1000000);
	CU_ASSERT(bucket_level(&tat, u, 50) == 50);
	CU_ASSERT(bucket_take(&tat, u, 50, 1000, 1, NULL) == 50);
	CU_ASSERT(bucket_take(&tat, u, 50, 1, 1, NULL) == 0);
}

/* A clock read before the epoch, or going back: no tokens appear, no
 * wrap, and time going forward again refills as before. */
static void
test_bucket_clock_steps_back(void)
{
	_Atomic uint64_t	 tat = 0;
	uint64_t		 epoch = 10 * S;

	CU_ASSERT(bucket_units(5 * S, epoch, 100) == 0);
	CU_ASSERT(bucket_units(epoch, epoch, 100) == 0);
	CU_ASSERT(bucket_take(&tat, bucket_units(epoch + S, epoch, 100), 10,
	    10, 10, NULL) == 10);
	/* Half a second back: the bucket looks emptier, never fuller. */
	CU_ASSERT(bucket_level(&tat, bucket_units(epoch + S / 2, epoch, 100),
	    10) == 0);
	CU_ASSERT(bucket_take(&tat, bucket_units(epoch + S / 2, epoch, 100),
	    10, 1, 1, NULL) == 0);
	CU_ASSERT(bucket_take(&tat, bucket_units(epoch + S + 10 * MS, epoch,
	    100), 10, 5, 1, NULL) == 1);
}

/* The largest rate for the longest span, and a clock at UINT64_MAX:
 * products are 128-bit, results saturate, nothing wraps to a small
 * number (which would be a full bucket forever, or never). */
static void
test_bucket_64bit_edges(void)
{
	_Atomic uint64_t	 tat = 0;
	uint64_t		 u;

	u = bucket_units(UINT64_MAX, 0, LIMITS_RATE_MAX);
	CU_ASSERT(u == LIMITS_UNITS_MAX);
	u = bucket_units(UINT64_MAX, 0, 1);
	CHECKF(u == UINT64_MAX / S, "units %llu", (unsigned long long)u);
	/* 2^36 per second for two years stays below the cap. */
	u = bucket_units(2ULL * 365 * 86400 * S, 0, LIMITS_RATE_MAX);
	CU_ASSERT(u < LIMITS_UNITS_MAX);
	CU_ASSERT(u == 2ULL * 365 * 86400 * LIMITS_RATE_MAX);
	CU_ASSERT(bucket_take(&tat, LIMITS_UNITS_MAX, LIMITS_RATE_MAX,
	    LIMITS_RATE_MAX, 1, NULL) == LIMITS_RATE_MAX);
	CU_ASSERT(bucket_level(&tat, LIMITS_UNITS_MAX, LIMITS_RATE_MAX) == 0);
	CU_ASSERT(bucket_ns_until(0, UINT64_MAX - 5, 1, 10) == UINT64_MAX);
	CU_ASSERT(bucket_ns_until(0, 0, 0, 10) == 0);
}

/* What is given back returns tokens, never beyond a full bucket. */
static void
test_bucket_give_back(void)
{
	_Atomic uint64_t	 tat = 0;

	CU_ASSERT(bucket_take(&tat, 100, 10, 10, 10, NULL) == 10);
	bucket_give(&tat, 100, 4);
	CU_ASSERT(bucket_level(&tat, 100, 10) == 4);
	bucket_give(&tat, 100, 1000);
	CU_ASSERT(bucket_level(&tat, 100, 10) == 10);
	CU_ASSERT(bucket_take(&tat, 100, 10, 11, 1, NULL) == 10);
}

/* Reservations: the first within the burst is due at once; later ones
 * queue, each due when the rate has earned it, in the order made; over a
 * span the tokens reserved and due add up to burst + rate * span. */
static void
test_bucket_reserve_queues_in_order(void)
{
	_Atomic uint64_t	 tat = 0;
	uint64_t		 at[4], due = 0, now, t, n;
	int			 i;

	for (i = 0; i < 4; i++)
		at[i] = bucket_reserve(&tat, 1000, 100, 100);
	CU_ASSERT(at[0] <= 1000);
	CU_ASSERT(at[1] == 1100 && at[2] == 1200 && at[3] == 1300);
	/* One taker, always back for more once its grant is due: what is
	 * due by each instant never exceeds burst + rate * span. */
	tat = 0;
	now = 0;
	n = 0;
	for (t = 0; t < 100000; t++) {
		if (due <= t) {
			due = bucket_reserve(&tat, t, 50, 25);
			if (due > t)
				now = due;
			n += 25;
		}
		CHECKF(n <= 50 + t + 25, "at %llu: %llu reserved",
		    (unsigned long long)t, (unsigned long long)n);
	}
	CHECKF(n >= 50 + 100000 - 25 && n <= 50 + 100000 + 25,
	    "%llu over 100000 token-times with a burst of 50",
	    (unsigned long long)n);
	(void)now;
}

void
register_limits_bucket_suite(void)
{
	CU_pSuite	 s = CU_add_suite("limits_bucket", NULL, NULL);

	CU_add_test(s, "starts full and gives its burst",
	    test_bucket_starts_full_and_gives_burst);
	CU_add_test(s, "a flood is admitted exactly",
	    test_bucket_flood_admits_exactly);
	CU_add_test(s, "refill is exact", test_bucket_refill_is_exact);
	CU_add_test(s, "partial take", test_bucket_partial_take);
	CU_add_test(s, "long idle caps at burst",
	    test_bucket_long_idle_caps_at_burst);
	CU_add_test(s, "clock steps back", test_bucket_clock_steps_back);
	CU_add_test(s, "64-bit edges", test_bucket_64bit_edges);
	CU_add_test(s, "give back", test_bucket_give_back);
	CU_add_test(s, "reservations queue in order",
	    test_bucket_reserve_queues_in_order);
}
