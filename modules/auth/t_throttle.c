/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the brute-force throttle (modules/auth/throttle.c): the
 * threshold, the penalty's end, the sliding window, independence of
 * sources, IPv4-mapped and IPv6 /64 keys, the disabled table, and a full
 * table that evicts instead of growing.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <CUnit/CUnit.h>

#include "modules/auth/throttle.h"
#include "t/unit/check.h"

void	register_auth_throttle_suite(void);

/* Storage for one peer address; sa() gives the pointer the API takes. */
struct t_peer {
	struct sockaddr_storage	 ss;
};

static const struct sockaddr *
t_addr(struct t_peer *p, const char *text, unsigned port)
{
	struct sockaddr_in	*sin = (void *)&p->ss;
	struct sockaddr_in6	*sin6 = (void *)&p->ss;

	memset(p, 0, sizeof(*p));
	if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
	} else {
		CU_ASSERT_FATAL(inet_pton(AF_INET6, text,
		    &sin6->sin6_addr) == 1);
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
	}
	return (const struct sockaddr *)&p->ss;
}

/* <n> failures from <text>, <step_ms> apart from <t0>. */
static void
t_fail_n(struct auth_throttle *t, const char *text, unsigned n,
    uint64_t t0, uint64_t step_ms)
{
	struct t_peer	 p;
	unsigned	 i;

	for (i = 0; i < n; i++)
		auth_throttle_fail(t, t_addr(&p, text, 40000 + i),
		    t0 + i * step_ms);
}

static bool
t_blocked(struct auth_throttle *t, const char *text, uint64_t now)
{
	struct t_peer	 p;

	return auth_throttle_blocked(t, t_addr(&p, text, 1), now);
}

static void
test_auth_throttle_blocks_at_threshold(void)
{
	struct auth_throttle	*t = auth_throttle_new(3, 60, 300, 16);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_fail_n(t, "192.0.2.1", 2, 0, 1000);
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.1", 2000));
	t_fail_n(t, "192.0.2.1", 1, 2000, 0);
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.1", 2000));
	/* Another port of the same address is the same source. */
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.1", 2001));
	auth_throttle_free(t);
}

static void
test_auth_throttle_penalty_expires(void)
{
	struct auth_throttle	*t = auth_throttle_new(3, 60, 300, 16);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_fail_n(t, "192.0.2.1", 3, 10000, 0);
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.1", 10000));
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.1", 10000 + 300000 - 1));
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.1", 10000 + 300000));
	/* The count restarted with the penalty: a fresh <threshold>. */
	t_fail_n(t, "192.0.2.1", 2, 310000, 1);
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.1", 310002));
	t_fail_n(t, "192.0.2.1", 1, 310002, 0);
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.1", 310002));
	auth_throttle_free(t);
	/* A penalty shorter than the window: the failures that earned it
	 * are still inside the window when it ends, yet do not count. */
	t = auth_throttle_new(3, 60, 5, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_fail_n(t, "192.0.2.1", 3, 0, 0);
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.1", 4999));
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.1", 5000));
	t_fail_n(t, "192.0.2.1", 1, 5001, 0);
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.1", 5001));
	auth_throttle_free(t);
}

static void
test_auth_throttle_window_slides(void)
{
	struct auth_throttle	*t = auth_throttle_new(3, 10, 300, 16);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	/* 0, 5000, 10000: the first is exactly a window old, so only two
	 * count. */
	t_fail_n(t, "192.0.2.1", 3, 0, 5000);
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.1", 10000));
	/* 5000, 10000, 14999: all inside 10 s. */
	t_fail_n(t, "192.0.2.1", 1, 14999, 0);
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.1", 14999));
	/* A slow, steady guesser never gets there. */
	t_fail_n(t, "192.0.2.2", 100, 0, 5000);
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.2", 500000));
	auth_throttle_free(t);
}

static void
test_auth_throttle_other_sources_unaffected(void)
{
	struct auth_throttle	*t = auth_throttle_new(2, 60, 300, 16);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_fail_n(t, "192.0.2.1", 2, 0, 1);
	t_fail_n(t, "192.0.2.2", 1, 0, 1);
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.1", 10));
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.2", 10));
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.3", 10));
	CU_ASSERT_FALSE(t_blocked(t, "2001:db8::1", 10));
	/* Failures are not pooled across sources. */
	t_fail_n(t, "192.0.2.3", 1, 11, 0);
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.2", 12));
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.3", 12));
	auth_throttle_free(t);
}

static void
test_auth_throttle_mapped_ipv4_is_ipv4(void)
{
	struct auth_throttle	*t = auth_throttle_new(2, 60, 300, 16);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_fail_n(t, "::ffff:192.0.2.7", 1, 0, 0);
	t_fail_n(t, "192.0.2.7", 1, 1, 0);
	CU_ASSERT_TRUE(t_blocked(t, "192.0.2.7", 2));
	CU_ASSERT_TRUE(t_blocked(t, "::ffff:192.0.2.7", 2));
	CU_ASSERT_FALSE(t_blocked(t, "::ffff:192.0.2.8", 2));
	/* Not a prefix rule for IPv4: the neighbour is its own source. */
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.6", 2));
	auth_throttle_free(t);
}

static void
test_auth_throttle_ipv6_counts_per_64(void)
{
	struct auth_throttle	*t = auth_throttle_new(2, 60, 300, 16);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_fail_n(t, "2001:db8:1:2::1", 1, 0, 0);
	t_fail_n(t, "2001:db8:1:2:aaaa:bbbb:cccc:dddd", 1, 1, 0);
	CU_ASSERT_TRUE(t_blocked(t, "2001:db8:1:2::99", 2));
	CU_ASSERT_FALSE(t_blocked(t, "2001:db8:1:3::1", 2));
	/* ::1 is in ::/64, apart from every IPv4 key. */
	t_fail_n(t, "::1", 2, 3, 0);
	CU_ASSERT_TRUE(t_blocked(t, "::1", 4));
	CU_ASSERT_FALSE(t_blocked(t, "0.0.0.1", 4));
	CU_ASSERT_FALSE(t_blocked(t, "::ffff:0.0.0.0", 4));
	auth_throttle_free(t);
}

static void
test_auth_throttle_zero_threshold_is_disabled(void)
{
	struct auth_throttle	*t = auth_throttle_new(0, 60, 300, 16);
	struct sockaddr_un	 sun;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_fail_n(t, "192.0.2.1", 50, 0, 1);
	CU_ASSERT_FALSE(t_blocked(t, "192.0.2.1", 50));
	auth_throttle_free(t);
	CU_ASSERT_FALSE(auth_throttle_blocked(NULL, NULL, 0));
	auth_throttle_fail(NULL, NULL, 0);
	auth_throttle_free(NULL);
	/* Other families are never counted. */
	t = auth_throttle_new(1, 60, 300, 16);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	auth_throttle_fail(t, (struct sockaddr *)&sun, 0);
	CU_ASSERT_FALSE(auth_throttle_blocked(t, (struct sockaddr *)&sun, 0));
	auth_throttle_free(t);
	CU_ASSERT_PTR_NULL(auth_throttle_new(AUTH_THROTTLE_MAX_THRESHOLD + 1,
	    60, 300, 16));
	CU_ASSERT_PTR_NULL(auth_throttle_new(3, 60, 300,
	    AUTH_THROTTLE_MAX_SOURCES + 1));
}

/* A full table takes new sources by evicting old ones: an idle source
 * first, even ahead of an older blocked one; then the oldest. */
static void
test_auth_throttle_full_table_evicts(void)
{
	enum { MAX = 4 };
	struct auth_throttle	*t = auth_throttle_new(2, 10, 300, MAX);
	char			 a[32];
	unsigned		 i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_fail_n(t, "198.51.100.1", 2, 0, 1);		/* blocked, oldest */
	t_fail_n(t, "198.51.100.2", 1, 100, 0);		/* idle at 20000 */
	t_fail_n(t, "198.51.100.3", 1, 15000, 0);
	t_fail_n(t, "198.51.100.4", 1, 15001, 0);
	t_fail_n(t, "198.51.100.5", 1, 20000, 0);	/* evicts .2 */
	CU_ASSERT_TRUE(t_blocked(t, "198.51.100.1", 20000));
	/* .3 kept its failure: a second one blocks it. */
	t_fail_n(t, "198.51.100.3", 1, 20001, 0);
	CU_ASSERT_TRUE(t_blocked(t, "198.51.100.3", 20001));
	/* A flood of new sources, nothing idle: the oldest go, the table
	 * never grows and nothing crashes. */
	for (i = 0; i < 1000; i++) {
		snprintf(a, sizeof(a), "203.0.113.%u", i % 250);
		t_fail_n(t, a, 1, 20002 + i, 0);
	}
	CU_ASSERT_FALSE(t_blocked(t, "198.51.100.1", 21002));
	/* The most recent sources are still counted. */
	t_fail_n(t, "203.0.113.249", 1, 21003, 0);
	CU_ASSERT_TRUE(t_blocked(t, "203.0.113.249", 21003));
	auth_throttle_free(t);
}

void
register_auth_throttle_suite(void)
{
	CU_pSuite	 s = CU_add_suite("auth_throttle", NULL, NULL);

	CU_add_test(s, "blocks at threshold",
	    test_auth_throttle_blocks_at_threshold);
	CU_add_test(s, "penalty expires", test_auth_throttle_penalty_expires);
	CU_add_test(s, "window slides", test_auth_throttle_window_slides);
	CU_add_test(s, "other sources unaffected",
	    test_auth_throttle_other_sources_unaffected);
	CU_add_test(s, "mapped ipv4 is ipv4",
	    test_auth_throttle_mapped_ipv4_is_ipv4);
	CU_add_test(s, "ipv6 counts per /64",
	    test_auth_throttle_ipv6_counts_per_64);
	CU_add_test(s, "zero threshold is disabled",
	    test_auth_throttle_zero_threshold_is_disabled);
	CU_add_test(s, "full table evicts",
	    test_auth_throttle_full_table_evicts);
}
