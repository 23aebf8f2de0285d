/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the padding of failed logins (modules/auth/pad.c): no
 * duration kept means "verify against the costliest instead"; kept ones
 * are taken each in turn, the newest PAD_SAMPLES only; after
 * PAD_REFRESH paddings without a new duration the next asks for a fresh
 * one again.
 */
#include "config.h"

#include <stdint.h>

#include <CUnit/CUnit.h>

#include "modules/auth/pad.h"
#include "t/unit/check.h"

void	register_auth_pad_suite(void);

static void
test_auth_pad_none_kept_asks_for_costliest(void)
{
	struct auth_pad	 p = { { 0 }, 0, 0, 0, 0 };

	CU_ASSERT_EQUAL(pad_target(&p), 0);
	CU_ASSERT_EQUAL(pad_target(&p), 0);
	pad_sample(&p, 0);
	CU_ASSERT_EQUAL(pad_target(&p), 1);	/* 0 would say "none" */
}

static void
test_auth_pad_durations_in_turn(void)
{
	struct auth_pad	 p = { { 0 }, 0, 0, 0, 0 };
	uint64_t	 seen[3] = { 0 }, t;
	unsigned	 i;

	pad_sample(&p, 100);
	pad_sample(&p, 200);
	pad_sample(&p, 300);
	for (i = 0; i < 6; i++) {
		t = pad_target(&p);
		CHECKF(t == 100 || t == 200 || t == 300, "target %llu",
		    (unsigned long long)t);
		if (t >= 100 && t <= 300)
			seen[t / 100 - 1]++;
	}
	CU_ASSERT(seen[0] == 2 && seen[1] == 2 && seen[2] == 2);
}

static void
test_auth_pad_keeps_the_newest(void)
{
	struct auth_pad	 p = { { 0 }, 0, 0, 0, 0 };
	uint64_t	 t;
	unsigned	 i;

	for (i = 1; i <= PAD_SAMPLES + 3; i++)
		pad_sample(&p, i);
	CU_ASSERT_EQUAL(p.n, PAD_SAMPLES);
	for (i = 0; i < PAD_SAMPLES; i++) {
		t = pad_target(&p);
		CHECKF(t > 3 && t <= PAD_SAMPLES + 3, "target %llu: not one "
		    "of the newest %u", (unsigned long long)t, PAD_SAMPLES);
	}
}

static void
test_auth_pad_refresh_after_many(void)
{
	struct auth_pad	 p = { { 0 }, 0, 0, 0, 0 };
	unsigned	 i;

	pad_sample(&p, 50);
	for (i = 0; i < PAD_REFRESH; i++)
		CU_ASSERT_EQUAL(pad_target(&p), 50);
	CU_ASSERT_EQUAL(pad_target(&p), 0);
	CU_ASSERT_EQUAL(pad_target(&p), 0);	/* until a new duration */
	pad_sample(&p, 60);
	CU_ASSERT(pad_target(&p) != 0);
}

void
register_auth_pad_suite(void)
{
	CU_pSuite	 s = CU_add_suite("auth_pad", NULL, NULL);

	CU_add_test(s, "none kept asks for the costliest",
	    test_auth_pad_none_kept_asks_for_costliest);
	CU_add_test(s, "durations in turn", test_auth_pad_durations_in_turn);
	CU_add_test(s, "keeps the newest", test_auth_pad_keeps_the_newest);
	CU_add_test(s, "refresh after many", test_auth_pad_refresh_after_many);
}
