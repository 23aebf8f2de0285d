/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Byte budgets (worker/conn.c: pt_conn_budget_set/add, conn_budget_cap,
 * conn_budget_take) on a connection made by hand, without sockets: what
 * a read may take, when the spent callback and the protocol's resume
 * run (from the posted task, once), the debt a datagram leaves, and that
 * the default costs nothing. The posted task runs through loop_once(),
 * with a timer due at once so that it never sleeps.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "worker/conn.h"
#include "worker/loop.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

static int		 spent_calls[2], resume_calls;
static void		*spent_arg;
/* What a spent callback does: add this much at once (0: nothing). */
static uint64_t		 spent_adds;

static void
on_spent(struct pt_conn *c, enum pt_dir dir, void *arg)
{
	spent_calls[dir]++;
	spent_arg = arg;
	if (spent_adds != 0)
		pt_conn_budget_add(c, dir, spent_adds);
}

static void
on_resume(struct pt_conn *c)
{
	(void)c;
	resume_calls++;
}

/* A connection as conn_new leaves it, for budgets' purposes. */
static struct pt_conn *
budget_conn(void)
{
	struct pt_conn	*c = calloc(1, sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	c->c_state = CONN_RELAY;
	c->c_budget[PT_DIR_UP].left = c->c_budget[PT_DIR_DOWN].left =
	    UINT64_MAX;
	c->c_budget_resume = on_resume;
	memset(spent_calls, 0, sizeof(spent_calls));
	resume_calls = 0;
	spent_arg = NULL;
	spent_adds = 0;
	return c;
}

static void
on_wake(struct pt_timer *t, void *arg)
{
	(void)t;
	(void)arg;
}

/* One loop round that cannot sleep: a timer due now bounds the wait
 * when nothing is posted. */
static void
one_round(void)
{
	static struct pt_timer	 wake;

	pt_timer_start(&wake, 0, on_wake, NULL);
	loop_once();
	pt_timer_stop(&wake);
}

/* Runs what was posted (a few rounds, so a task posted by a task runs
 * too). */
static void
run_posted(void)
{
	int	 i;

	for (i = 0; i < 3; i++)
		one_round();
}

static void
test_budget_unlimited_by_default(void)
{
	struct pt_conn	*c = budget_conn();

	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_UP, 65536), 65536);
	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_DOWN, SIZE_MAX), SIZE_MAX);
	conn_budget_take(c, PT_DIR_UP, 1u << 30);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].left, UINT64_MAX);
	CU_ASSERT_FALSE(c->c_budget_task.posted);
	run_posted();
	CU_ASSERT_EQUAL(spent_calls[0] + spent_calls[1] + resume_calls, 0);
	free(c);
}

static void
test_budget_caps_reads_and_calls_spent_once(void)
{
	struct pt_conn	*c = budget_conn();
	int		 tag;

	pt_conn_budget_set(c, PT_DIR_DOWN, 1000, on_spent, &tag);
	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_DOWN, 65536), 1000);
	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_DOWN, 10), 10);
	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_UP, 65536), 65536);
	conn_budget_take(c, PT_DIR_DOWN, 600);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_DOWN].left, 400);
	run_posted();
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_DOWN], 0);
	conn_budget_take(c, PT_DIR_DOWN, 400);
	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_DOWN, 65536), 0);
	/* Not from inside the reader: after the round. */
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_DOWN], 0);
	run_posted();
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_DOWN], 1);
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_UP], 0);
	CU_ASSERT_PTR_EQUAL(spent_arg, &tag);
	run_posted();
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_DOWN], 1);
	CU_ASSERT_EQUAL(resume_calls, 0);
	free(c);
}

static void
test_budget_add_resumes_the_pump(void)
{
	struct pt_conn	*c = budget_conn();

	pt_conn_budget_set(c, PT_DIR_UP, 100, on_spent, NULL);
	/* Adding to a budget not spent resumes nothing. */
	pt_conn_budget_add(c, PT_DIR_UP, 50);
	run_posted();
	CU_ASSERT_EQUAL(resume_calls, 0);
	conn_budget_take(c, PT_DIR_UP, 150);
	run_posted();
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_UP], 1);
	CU_ASSERT_EQUAL(resume_calls, 0);
	pt_conn_budget_add(c, PT_DIR_UP, 70);
	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_UP, 65536), 70);
	CU_ASSERT_EQUAL(resume_calls, 0);
	run_posted();
	CU_ASSERT_EQUAL(resume_calls, 1);
	/* Spent again: the callback runs again, once. */
	conn_budget_take(c, PT_DIR_UP, 70);
	run_posted();
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_UP], 2);
	free(c);
}

static void
test_budget_callback_adding_resumes_in_the_same_task(void)
{
	struct pt_conn	*c = budget_conn();

	spent_adds = 300;
	pt_conn_budget_set(c, PT_DIR_DOWN, 10, on_spent, NULL);
	conn_budget_take(c, PT_DIR_DOWN, 10);
	one_round();
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_DOWN], 1);
	CU_ASSERT_EQUAL(resume_calls, 1);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_DOWN].left, 300);
	run_posted();
	CU_ASSERT_EQUAL(resume_calls, 1);
	free(c);
}

static void
test_budget_datagram_debt_is_paid_first(void)
{
	struct pt_conn	*c = budget_conn();

	pt_conn_budget_set(c, PT_DIR_UP, 100, on_spent, NULL);
	/* A datagram of 1,000 bytes read on a budget of 100. */
	conn_budget_take(c, PT_DIR_UP, 1000);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].left, 0);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].debt, 900);
	run_posted();
	pt_conn_budget_add(c, PT_DIR_UP, 500);
	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_UP, 65536), 0);
	run_posted();
	CU_ASSERT_EQUAL(resume_calls, 0);
	pt_conn_budget_add(c, PT_DIR_UP, 500);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].left, 100);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].debt, 0);
	run_posted();
	CU_ASSERT_EQUAL(resume_calls, 1);
	/* set forgets the debt. */
	conn_budget_take(c, PT_DIR_UP, 300);
	pt_conn_budget_set(c, PT_DIR_UP, 40, on_spent, NULL);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].left, 40);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].debt, 0);
	run_posted();
	free(c);
}

static void
test_budget_limits_and_closed_connections(void)
{
	struct pt_conn	*c = budget_conn();

	pt_conn_budget_set(c, PT_DIR_UP, 10, on_spent, NULL);
	/* Sums stop below "unlimited"; adding UINT64_MAX lifts the limit. */
	pt_conn_budget_add(c, PT_DIR_UP, UINT64_MAX - 5);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].left, UINT64_MAX - 1);
	pt_conn_budget_add(c, PT_DIR_UP, UINT64_MAX);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_UP].left, UINT64_MAX);
	/* set 0: spent at once, and said so. */
	pt_conn_budget_set(c, PT_DIR_DOWN, 0, on_spent, NULL);
	CU_ASSERT_EQUAL(conn_budget_cap(c, PT_DIR_DOWN, 100), 0);
	run_posted();
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_DOWN], 1);
	/* A bad direction is ignored. */
	pt_conn_budget_set(c, (enum pt_dir)7, 1, on_spent, NULL);
	pt_conn_budget_add(c, (enum pt_dir)-1, 1);
	/* Closing: no call does anything, no callback runs. */
	conn_budget_take(c, PT_DIR_UP, 1);
	pt_conn_budget_set(c, PT_DIR_UP, 5, on_spent, NULL);
	conn_budget_take(c, PT_DIR_UP, 5);
	c->c_state = CONN_CLOSED;
	pt_conn_budget_add(c, PT_DIR_DOWN, 100);
	CU_ASSERT_EQUAL(c->c_budget[PT_DIR_DOWN].left, 0);
	run_posted();
	CU_ASSERT_EQUAL(spent_calls[PT_DIR_UP], 0);
	CU_ASSERT_EQUAL(resume_calls, 0);
	free(c);
}

static int
budget_suite_init(void)
{
	return loop_init() < 0 ? -1 : 0;
}

static int
budget_suite_fini(void)
{
	loop_fini();
	return 0;
}

void
register_budget_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("budget", budget_suite_init, budget_suite_fini))
	    == NULL)
		return;
	CU_add_test(s, "unlimited_by_default", test_budget_unlimited_by_default);
	CU_add_test(s, "caps_reads_and_calls_spent_once",
	    test_budget_caps_reads_and_calls_spent_once);
	CU_add_test(s, "add_resumes_the_pump",
	    test_budget_add_resumes_the_pump);
	CU_add_test(s, "callback_adding_resumes_in_the_same_task",
	    test_budget_callback_adding_resumes_in_the_same_task);
	CU_add_test(s, "datagram_debt_is_paid_first",
	    test_budget_datagram_debt_is_paid_first);
	CU_add_test(s, "limits_and_closed_connections",
	    test_budget_limits_and_closed_connections);
}
