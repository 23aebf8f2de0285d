/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * common/counters.c, the module half: pt_counter_register's name registry
 * (same name, same id; bad names and names beyond PT_COUNTERS_MAX
 * refused) and pt_counter_add landing in the shared slots the master
 * totals; then, as a worker, histogram buckets, transactions by class and
 * the text a status listener answers (worker/status_fmt.c). The registry
 * is a process-wide singleton: each test starts from
 * counters_forget_names(), and the ones that play a worker run last.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "common/counters.h"
#include "worker/status_fmt.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

static void
test_counters_same_name_same_id(void)
{
	int	 a, b;

	counters_forget_names();
	a = pt_counter_register("auth_ok");
	b = pt_counter_register("auth_failed");
	CU_ASSERT(a >= 0);
	CU_ASSERT(b >= 0);
	CU_ASSERT_NOT_EQUAL(a, b);
	/* A reload registers again. */
	CU_ASSERT_EQUAL(pt_counter_register("auth_ok"), a);
	CU_ASSERT_EQUAL(pt_counter_register("auth_failed"), b);
}

static void
test_counters_bad_names_refused(void)
{
	static const char *const bad[] = {
		"", "Upper", "with-dash", "sp ace", "dot.ted", "tab\t",
		"caf\xc3\xa9",
		"a_name_of_thirty_two_bytes_xxxxx",	/* 32 */
	};
	size_t	 i;

	counters_forget_names();
	CU_ASSERT_EQUAL(pt_counter_register(NULL), -EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECKF(pt_counter_register(bad[i]) == -EINVAL,
		    "\"%s\" was accepted", bad[i]);
	CHECKF(pt_counter_register("a_name_of_thirty_one_bytes_xxxx") >= 0,
	    "a 31-byte name was refused");
	CU_ASSERT(pt_counter_register("0_digits_9") >= 0);
}

static void
test_counters_limit(void)
{
	char	 name[32];
	int	 i, id;

	counters_forget_names();
	for (i = 0; i < PT_COUNTERS_MAX; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		id = pt_counter_register(name);
		CHECKF(id == i, "%s got id %d", name, id);
	}
	CU_ASSERT_EQUAL(pt_counter_register("one_too_many"), -ENOSPC);
	/* Names already there are still found when full. */
	CU_ASSERT_EQUAL(pt_counter_register("c0"), 0);
	snprintf(name, sizeof(name), "c%d", PT_COUNTERS_MAX - 1);
	CU_ASSERT_EQUAL(pt_counter_register(name), PT_COUNTERS_MAX - 1);
	CU_ASSERT_EQUAL(pt_counter_register_label("c0", "rule", "x"), -ENOSPC);
}

static void
test_counters_labels(void)
{
	int	 a, b, c;

	counters_forget_names();
	a = pt_counter_register_label("acl_rule_denied", "rule", "lan");
	b = pt_counter_register_label("acl_rule_denied", "rule", "web.x-1:2");
	c = pt_counter_register("acl_rule_denied");
	CU_ASSERT(a >= 0 && b >= 0 && c >= 0 && a != b && b != c && a != c);
	CU_ASSERT_EQUAL(pt_counter_register_label("acl_rule_denied", "rule",
	    "lan"), a);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", NULL, "v"), -EINVAL);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", "Rule", "v"), -EINVAL);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", "worker", "v"),
	    -EINVAL);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", "k", ""), -EINVAL);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", "k", "a b"), -EINVAL);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", "k", "a\"b"), -EINVAL);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", "k", "a\\b"), -EINVAL);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", "k", "\xc3\xa9"),
	    -EINVAL);
	CU_ASSERT(pt_counter_register_label("x", "k", "0123456789012345678901"
	    "234567890123456789012345678901234567890123") >= 0);
	CU_ASSERT_EQUAL(pt_counter_register_label("x", "k", "0123456789012345"
	    "6789012345678901234567890123456789012345678901234567890123456789"
	    "0"), -EINVAL);
}

static int	 rh;

static void
test_counters_add_shows_in_totals_and_workers_cannot_register(void)
{
	char	 buf[PT_COUNTERS_MAX * 64];
	int	 a, b;

	counters_forget_names();
	a = pt_counter_register("posts");
	b = pt_counter_register("resumes");
	/* Labelled: for the text test below, never in the totals line. */
	rh = pt_counter_register_label("rule_hits", "rule", "a");
	CU_ASSERT(pt_counter_register_label("rule_hits", "rule", "b") >= 0);
	CU_ASSERT_FATAL(a >= 0 && b >= 0 && rh >= 0);
	CU_ASSERT_EQUAL_FATAL(counters_map(2), 0);
	counters_use_slot(0);
	pt_counter_add(a, 5);
	counters_use_slot(1);
	pt_counter_add(a, 2);
	pt_counter_add(b, 7);
	pt_counter_add(b, -3);
	pt_counter_add(PT_COUNTERS_MAX, 1);	/* ignored */
	pt_counter_add(-1, 1);
	counters_fmt_modules(buf, sizeof(buf));
	CHECKF(strcmp(buf, " posts=7 resumes=4") == 0, "totals \"%s\"", buf);
	/* Cut at a whole " name=sum", never in the middle of one. */
	counters_fmt_modules(buf, 12);
	CHECKF(strcmp(buf, " posts=7") == 0, "cut totals \"%s\"", buf);
	/* A worker (counters_use_slot ran) may add but not register. */
	CU_ASSERT_EQUAL(pt_counter_register("late"), -EPERM);
	CU_ASSERT_EQUAL(pt_counter_register("posts"), -EPERM);
}

static bool
has_line(const struct status_out *o, const char *line)
{
	const char	*p = o->p;
	size_t		 n = strlen(line);

	while (p != NULL && (p = strstr(p, line)) != NULL) {
		if ((p == o->p || p[-1] == '\n') && p[n] == '\n')
			return true;
		p += n;
	}
	return false;
}

/* Runs after the test above (a worker in slot 1, "posts" = 7 shared). */
static void
test_counters_histograms_and_transactions_in_the_text(void)
{
	struct status_out	 o = { 0 };
	static const char *const want[] = {
		"portico_upstream_connect_duration_seconds_bucket{le=\"0.0005\"} 2",
		"portico_upstream_connect_duration_seconds_bucket{le=\"0.001\"} 3",
		"portico_upstream_connect_duration_seconds_bucket{le=\"30\"} 3",
		"portico_upstream_connect_duration_seconds_bucket{le=\"+Inf\"} 4",
		"portico_upstream_connect_duration_seconds_sum 40.001401",
		"portico_upstream_connect_duration_seconds_count 4",
		"portico_transactions_total{protocol=\"http\",class=\"2xx\"} 1",
		"portico_transactions_total{protocol=\"socks5\",class=\"none\"} 2",
		"portico_transactions_total{protocol=\"status\",class=\"4xx\"} 1",
		"portico_request_duration_seconds_count 4",
		"portico_module_posts_total 7",
		"portico_worker_module_posts_total{worker=\"0\"} 5",
		"portico_worker_module_posts_total{worker=\"1\"} 2",
		"portico_bytes_total{direction=\"up\"} 300",
		"portico_worker_bytes_total{worker=\"1\",direction=\"up\"} 300",
		"portico_connections_active -1",
		"portico_module_rule_hits_total{rule=\"a\"} 3",
		"portico_module_rule_hits_total{rule=\"b\"} 0",
		"portico_worker_module_rule_hits_total{worker=\"1\",rule=\"a\"} 3",
	};
	size_t			 i;

	counters_use_slot(1);
	pt_counter_add(rh, 3);
	counters_observe(HIST_CONNECT, 400);
	counters_observe(HIST_CONNECT, 500);	/* le is inclusive */
	counters_observe(HIST_CONNECT, 501);
	counters_observe(HIST_CONNECT, 40000000);	/* past 30 s */
	counters_txn(PT_PROTO_HTTP, 204, 10);
	counters_txn(PT_PROTO_SOCKS5, 0, 10);
	counters_txn(PT_PROTO_SOCKS5, 700, 10);	/* not a status: none */
	counters_txn(PT_PROTO_STATUS, 404, 10);
	counters_txn(99, 200, 10);		/* ignored */
	counters_add(CTR_BYTES_IN, 300);
	counters_add(CTR_ACTIVE, -1);
	counters_m_generation(1, 2);
	CU_ASSERT_EQUAL(status_fmt_metrics(&o), 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECKF(has_line(&o, want[i]), "no line \"%s\"", want[i]);
	/* One family for the name: HELP and TYPE once. */
	{
		const char	*t = "# TYPE portico_module_rule_hits_total";
		const char	*f = o.p != NULL ? strstr(o.p, t) : NULL;

		CU_ASSERT(f != NULL && strstr(f + 1, t) == NULL);
	}
	free(o.p);
	memset(&o, 0, sizeof(o));
	CU_ASSERT_EQUAL(status_fmt_json(&o), 0);
	CHECKF(o.p != NULL && strstr(o.p, "\"posts\":7") != NULL &&
	    strstr(o.p, "\"+Inf\":4") != NULL, "json %.200s", o.p);
	free(o.p);
}

void
register_counters_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("counters", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "same_name_same_id", test_counters_same_name_same_id);
	CU_add_test(s, "bad_names_refused", test_counters_bad_names_refused);
	CU_add_test(s, "limit", test_counters_limit);
	CU_add_test(s, "labels", test_counters_labels);
	CU_add_test(s, "add_shows_in_totals_and_workers_cannot_register",
	    test_counters_add_shows_in_totals_and_workers_cannot_register);
	CU_add_test(s, "histograms_and_transactions_in_the_text",
	    test_counters_histograms_and_transactions_in_the_text);
}
