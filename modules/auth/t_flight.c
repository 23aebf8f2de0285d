/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the single-flight bookkeeping (modules/auth/flight.c):
 * a flight is found by MAC and user length only, not once removed; its
 * waiters come back oldest first; a waiter that left (head, middle, tail,
 * twice) is never handed back and the list stays whole after it.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "modules/auth/flight.h"
#include "t/unit/check.h"

void	register_auth_flight_suite(void);

static void
t_mac(uint8_t mac[32], unsigned seed)
{
	unsigned	 i;

	for (i = 0; i < 32; i++)
		mac[i] = (uint8_t)(seed * 31 + i);
}

static void
test_auth_flight_find_by_mac_and_length(void)
{
	struct auth_flights	 s = { NULL };
	struct auth_flight	 a, b;
	uint8_t			 ma[32], mb[32];

	t_mac(ma, 1);
	t_mac(mb, 2);
	flight_init(&a, ma, 3);
	flight_init(&b, mb, 3);
	CU_ASSERT_PTR_NULL(flights_find(&s, ma, 3));
	CU_ASSERT_FALSE(flight_is_joinable(&a));
	flights_add(&s, &a);
	flights_add(&s, &b);
	CU_ASSERT_TRUE(flight_is_joinable(&a));
	CU_ASSERT_PTR_EQUAL(flights_find(&s, ma, 3), &a);
	CU_ASSERT_PTR_EQUAL(flights_find(&s, mb, 3), &b);
	/* Same MAC, another user length: another login. */
	CU_ASSERT_PTR_NULL(flights_find(&s, ma, 4));
	/* One bit off anywhere in the MAC. */
	mb[31] ^= 1;
	CU_ASSERT_PTR_NULL(flights_find(&s, mb, 3));
	mb[31] ^= 1;
	mb[0] ^= 0x80;
	CU_ASSERT_PTR_NULL(flights_find(&s, mb, 3));
	mb[0] ^= 0x80;
	/* Removed (ended or abandoned): not joinable, the other still is;
	 * removing twice is harmless. */
	flights_remove(&a);
	CU_ASSERT_FALSE(flight_is_joinable(&a));
	CU_ASSERT_PTR_NULL(flights_find(&s, ma, 3));
	CU_ASSERT_PTR_EQUAL(flights_find(&s, mb, 3), &b);
	flights_remove(&a);
	flights_remove(&b);
	CU_ASSERT_PTR_NULL(s.head);
	/* Added again (a reused slot): found again. */
	flights_add(&s, &b);
	flights_add(&s, &b);
	CU_ASSERT_PTR_EQUAL(flights_find(&s, mb, 3), &b);
	flights_remove(&b);
	CU_ASSERT_PTR_NULL(s.head);
}

static void
test_auth_flight_waiters_oldest_first(void)
{
	struct auth_flight	 f;
	struct auth_waiter	 w[5];
	uint8_t			 m[32];
	unsigned		 i;

	memset(w, 0, sizeof(w));
	t_mac(m, 3);
	flight_init(&f, m, 5);
	CU_ASSERT_PTR_NULL(flight_pop(&f));
	for (i = 0; i < 5; i++)
		flight_wait(&f, &w[i]);
	CU_ASSERT_EQUAL(f.nwaiters, 5);
	for (i = 0; i < 5; i++) {
		CHECKF(flight_pop(&f) == &w[i], "pop %u is waiter %u", i, i);
		CU_ASSERT_PTR_NULL(w[i].flight);
	}
	CU_ASSERT_EQUAL(f.nwaiters, 0);
	CU_ASSERT_PTR_NULL(flight_pop(&f));
	/* The list works again after it emptied (the tail came back). */
	flight_wait(&f, &w[2]);
	flight_wait(&f, &w[0]);
	CU_ASSERT_PTR_EQUAL(flight_pop(&f), &w[2]);
	CU_ASSERT_PTR_EQUAL(flight_pop(&f), &w[0]);
	CU_ASSERT_PTR_NULL(flight_pop(&f));
}

static void
test_auth_flight_left_never_returned(void)
{
	struct auth_flight	 f;
	struct auth_waiter	 w[6];
	uint8_t			 m[32];
	unsigned		 i;

	memset(w, 0, sizeof(w));
	t_mac(m, 4);
	flight_init(&f, m, 1);
	/* Not waiting: nothing to leave. */
	CU_ASSERT_PTR_NULL(flight_unwait(&w[0]));
	for (i = 0; i < 6; i++)
		flight_wait(&f, &w[i]);
	/* The oldest, one in the middle, the newest leave. */
	CU_ASSERT_PTR_EQUAL(flight_unwait(&w[0]), &f);
	CU_ASSERT_PTR_EQUAL(flight_unwait(&w[3]), &f);
	CU_ASSERT_PTR_EQUAL(flight_unwait(&w[5]), &f);
	/* Leaving twice (a CLOSE after the wake-up) finds nothing. */
	CU_ASSERT_PTR_NULL(flight_unwait(&w[3]));
	CU_ASSERT_EQUAL(f.nwaiters, 3);
	/* One joins after the newest left: it goes after w[4]. */
	flight_wait(&f, &w[5]);
	CU_ASSERT_PTR_EQUAL(flight_pop(&f), &w[1]);
	CU_ASSERT_PTR_EQUAL(flight_pop(&f), &w[2]);
	CU_ASSERT_PTR_EQUAL(flight_pop(&f), &w[4]);
	CU_ASSERT_PTR_EQUAL(flight_pop(&f), &w[5]);
	CU_ASSERT_PTR_NULL(flight_pop(&f));
	CU_ASSERT_EQUAL(f.nwaiters, 0);
	/* Everyone leaves: the flight has no one to wake. */
	flight_wait(&f, &w[0]);
	flight_wait(&f, &w[1]);
	flight_unwait(&w[1]);
	flight_unwait(&w[0]);
	CU_ASSERT_EQUAL(f.nwaiters, 0);
	CU_ASSERT_PTR_NULL(flight_pop(&f));
	flight_wait(&f, &w[1]);
	CU_ASSERT_PTR_EQUAL(flight_pop(&f), &w[1]);
}

void
register_auth_flight_suite(void)
{
	CU_pSuite	 s = CU_add_suite("auth_flight", NULL, NULL);

	CU_add_test(s, "find by mac and length",
	    test_auth_flight_find_by_mac_and_length);
	CU_add_test(s, "waiters oldest first",
	    test_auth_flight_waiters_oldest_first);
	CU_add_test(s, "left never returned",
	    test_auth_flight_left_never_returned);
}
