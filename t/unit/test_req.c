/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/req.c: what modules name on a connection (user, label, tags),
 * without sockets: copies and their bounds, the tag slots and return
 * codes, the block taken on the first set and given back by
 * req_names_clear, and a pool that is out of blocks.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "worker/req.h"
#include "worker/conn.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

/* A connection inside a transaction (AUTH on): what modules set is the
 * transaction's. */
static struct pt_conn *
req_test_conn(void)
{
	struct pt_conn	*c = calloc(1, sizeof(struct pt_conn));

	if (c != NULL)
		c->c_phase = PT_PHASE_AUTH;
	return c;
}

static bool
req_str_is(struct pt_str s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

static void
test_req_user_and_label_are_copied_and_bounded(void)
{
	struct pt_conn	*c = req_test_conn();
	char		 big[PT_NAME_MAX + 50], name[8];

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	req_init(4);
	CU_ASSERT_PTR_NULL(c->c_names);
	strcpy(name, "alice");
	pt_req_set_user(c, name, 5);
	strcpy(name, "XXXXX");
	CU_ASSERT(req_str_is(c->c_req.user, "alice"));
	CU_ASSERT_PTR_NOT_NULL(c->c_names);
	memset(big, 'u', sizeof(big));
	pt_req_set_user(c, big, sizeof(big));
	CU_ASSERT_EQUAL(c->c_req.user.len, PT_NAME_MAX);
	pt_req_set_label(c, "rule-1", 6);
	pt_req_set_label(c, "rule-22", 7);
	CU_ASSERT(req_str_is(c->c_req.label, "rule-22"));
	req_names_clear(c);
	CU_ASSERT_PTR_NULL(c->c_names);
	CU_ASSERT_EQUAL(c->c_req.user.len, 0);
	CU_ASSERT_PTR_NULL(c->c_req.user.ptr);
	CU_ASSERT_EQUAL(c->c_req.label.len, 0);
	req_fini();
	free(c);
}

static void
test_req_tags_slots_and_errors(void)
{
	struct pt_conn	*c = req_test_conn();
	struct pt_str	 v;
	char		 val[64];

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	req_init(4);
	CU_ASSERT_FALSE(pt_req_tag(c, "class", &v));
	/* Removing what is not there takes no block. */
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "class", "", 0), 0);
	CU_ASSERT_PTR_NULL(c->c_names);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "class", "per-user", 8), 0);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "a", "1", 1), 0);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "b", "2", 1), 0);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "c", "3", 1), 0);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "d", "4", 1), -ENOSPC);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "", "4", 1), -EINVAL);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "0123456789abcdef", "4", 1),
	    -EINVAL);
	memset(val, 'v', sizeof(val));
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "a", val, 64), -EINVAL);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "a", val, 63), 0);
	CU_ASSERT_TRUE_FATAL(pt_req_tag(c, "a", &v));
	CU_ASSERT_EQUAL(v.len, 63);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "b", "", 0), 0);
	CU_ASSERT_FALSE(pt_req_tag(c, "b", &v));
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "d", "4", 1), 0);
	CU_ASSERT_TRUE(pt_req_tag(c, "d", &v) && req_str_is(v, "4"));
	CU_ASSERT_TRUE(pt_req_tag(c, "class", &v) && req_str_is(v, "per-user"));
	/* Names are exact: no prefix or case folding. */
	CU_ASSERT_FALSE(pt_req_tag(c, "Class", &v));
	CU_ASSERT_FALSE(pt_req_tag(c, "clas", &v));
	req_names_clear(c);
	CU_ASSERT_FALSE(pt_req_tag(c, "class", &v));
	req_fini();
	free(c);
}

static void
test_req_pool_exhausted_drops_values(void)
{
	struct pt_conn	*a = req_test_conn(), *b = req_test_conn();

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	req_init(1);
	CU_ASSERT_EQUAL(pt_req_set_tag(a, "x", "1", 1), 0);
	CU_ASSERT_EQUAL(pt_req_set_tag(b, "x", "1", 1), -ENOSPC);
	pt_req_set_user(b, "bob", 3);
	CU_ASSERT_EQUAL(b->c_req.user.len, 0);
	/* A block given back serves the next connection. */
	req_names_clear(a);
	pt_req_set_user(b, "bob", 3);
	CU_ASSERT(req_str_is(b->c_req.user, "bob"));
	req_names_clear(b);
	req_fini();
	free(a);
	free(b);
}

static void
test_req_clear_keeps_a_user_set_elsewhere(void)
{
	struct pt_conn	*c = req_test_conn();
	static char	 cred[] = "socksuser";

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	req_init(2);
	CU_ASSERT_EQUAL(pt_req_set_tag(c, "t", "v", 1), 0);
	/* The protocol's own user (SOCKS credentials) is not the block's. */
	c->c_req.user.ptr = cred;
	c->c_req.user.len = strlen(cred);
	req_names_clear(c);
	CU_ASSERT(req_str_is(c->c_req.user, "socksuser"));
	req_fini();
	free(c);
}

/* Before any transaction (a transport's handshake, an ACCEPT hook) the
 * user is the connection's: it survives the per-transaction clear, is
 * what req_user_reset starts each transaction with, and a transaction's
 * own user replaces it only until then. */
static void
test_req_user_before_transactions_is_the_connections(void)
{
	struct pt_conn	*c = req_test_conn();

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	req_init(4);
	c->c_phase = PT_PHASE_ACCEPT;
	pt_req_set_user(c, "cn=alice", 8);
	CU_ASSERT(req_str_is(c->c_req.user, "cn=alice"));
	CU_ASSERT_PTR_NOT_NULL(c->c_conn_names);
	CU_ASSERT_PTR_NULL(c->c_names);
	c->c_phase = PT_PHASE_AUTH;
	pt_req_set_user(c, "bob", 3);
	CU_ASSERT(req_str_is(c->c_req.user, "bob"));
	req_names_clear(c);
	req_user_reset(c);
	CU_ASSERT(req_str_is(c->c_req.user, "cn=alice"));
	req_names_free(c);
	CU_ASSERT_PTR_NULL(c->c_conn_names);
	req_user_reset(c);
	CU_ASSERT_EQUAL(c->c_req.user.len, 0);
	req_fini();
	free(c);
}

void
register_req_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("req", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "user_and_label_are_copied_and_bounded",
	    test_req_user_and_label_are_copied_and_bounded);
	CU_add_test(s, "tags_slots_and_errors", test_req_tags_slots_and_errors);
	CU_add_test(s, "pool_exhausted_drops_values",
	    test_req_pool_exhausted_drops_values);
	CU_add_test(s, "clear_keeps_a_user_set_elsewhere",
	    test_req_clear_keeps_a_user_set_elsewhere);
	CU_add_test(s, "user_before_transactions_is_the_connections",
	    test_req_user_before_transactions_is_the_connections);
}
