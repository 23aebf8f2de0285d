/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parent proxies' configuration (common/parent_conf.c): `parents` and
 * `via` read from configuration text, good and bad, each refusal naming
 * the setting at fault (its line) and what is wrong; defaults; the
 * identity that keeps a parent's health across a reload.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <libconfig.h>

#include "common/parent.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

struct pc_try {
	config_t		 cfg;
	struct conf_parent	*ps;
	int			 n;
	struct pt_via		*via;
	const config_setting_t	*where;
	char			 err[256];
	int			 rc;
};

/* Parses <text>: its `parents`, then the `via` of its group `l`. */
static void
pc_try(struct pc_try *t, const char *text)
{
	const config_setting_t	*l;

	memset(t, 0, sizeof(*t));
	config_init(&t->cfg);
	CHECKF_FATAL(config_read_string(&t->cfg, text) == CONFIG_TRUE,
	    "%s: %s", text, config_error_text(&t->cfg));
	t->rc = parent_conf_parse(config_lookup(&t->cfg, "parents"), 7000,
	    &t->ps, &t->n, &t->where, t->err, sizeof(t->err));
	if (t->rc == 0 && (l = config_lookup(&t->cfg, "l")) != NULL)
		t->rc = via_parse(l, &t->via, &t->where, t->err,
		    sizeof(t->err));
}

static void
pc_done(struct pc_try *t)
{
	parent_conf_free(t->ps, t->n);
	free(t->via);
	config_destroy(&t->cfg);
}

static void
test_parent_conf_reads_parents_and_defaults(void)
{
	struct pc_try	 t;

	pc_try(&t, "parents = (\n"
	    " { name = \"corp\"; address = \"proxy.example:3128\";\n"
	    "   user = \"svc\"; password = \"pw\"; },\n"
	    " { name = \"eu\"; address = \"[2001:db8::5]:1080\";\n"
	    "   protocol = \"socks5\"; resolve = \"local\";\n"
	    "   send_proxy = \"v2\"; max_fails = 1; down_time = 3;\n"
	    "   connect_timeout = 2; },\n"
	    " { name = \"s\"; address = \"edge:443\"; protocol = \"https\";\n"
	    "   verify = false; } );\n");
	CHECKF_FATAL(t.rc == 0 && t.n == 3, "rc %d: %s", t.rc, t.err);
	CU_ASSERT_STRING_EQUAL(t.ps[0].host, "proxy.example");
	CU_ASSERT_EQUAL(t.ps[0].port, 3128);
	CU_ASSERT_EQUAL(t.ps[0].proto, PARENT_HTTP);
	CU_ASSERT_STRING_EQUAL(t.ps[0].password, "pw");
	CU_ASSERT_EQUAL(t.ps[0].max_fails, 3);
	CU_ASSERT_EQUAL(t.ps[0].down_time_ms, 10000);
	CU_ASSERT_EQUAL(t.ps[0].connect_timeout_ms, 7000);
	CU_ASSERT_FALSE(t.ps[0].resolve_local);
	CU_ASSERT_STRING_EQUAL(t.ps[1].host, "2001:db8::5");
	CU_ASSERT_EQUAL(t.ps[1].proto, PARENT_SOCKS5);
	CU_ASSERT_TRUE(t.ps[1].resolve_local);
	CU_ASSERT_EQUAL(t.ps[1].send_proxy, 2);
	CU_ASSERT_EQUAL(t.ps[1].max_fails, 1);
	CU_ASSERT_EQUAL(t.ps[1].down_time_ms, 3000);
	CU_ASSERT_EQUAL(t.ps[1].connect_timeout_ms, 2000);
	CU_ASSERT_FALSE(t.ps[2].verify);
	/* SNI: the parent's host unless given. */
	CU_ASSERT_STRING_EQUAL(t.ps[2].sni, "edge");
	CU_ASSERT_NOT_EQUAL(t.ps[0].identity, t.ps[1].identity);
	pc_done(&t);
}

/* The same parent written twice (a reload) keeps its identity; another
 * address or user does not. */
static void
test_parent_conf_identity_follows_what_matters(void)
{
	struct pc_try	 a, b, c;

	pc_try(&a, "parents = ({ name = \"p\"; address = \"h:1\"; });");
	pc_try(&b, "parents = ({ name = \"p\"; address = \"h:1\";\n"
	    " max_fails = 9; });");
	pc_try(&c, "parents = ({ name = \"p\"; address = \"h:2\"; });");
	CHECKF_FATAL(a.rc == 0 && b.rc == 0 && c.rc == 0, "%s %s %s", a.err,
	    b.err, c.err);
	CU_ASSERT_EQUAL(a.ps[0].identity, b.ps[0].identity);
	CU_ASSERT_NOT_EQUAL(a.ps[0].identity, c.ps[0].identity);
	pc_done(&a);
	pc_done(&b);
	pc_done(&c);
}

static void
test_parent_conf_password_file(void)
{
	char		 path[] = "/tmp/pt-parent-pwXXXXXX", text[300];
	struct pc_try	 t;
	FILE		*f;
	int		 fd;

	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	f = fdopen(fd, "w");
	fputs("s3cret\nignored\n", f);
	fclose(f);
	snprintf(text, sizeof(text), "parents = ({ name = \"p\"; address = "
	    "\"h:1\"; user = \"u\"; password_file = \"%s\"; });", path);
	pc_try(&t, text);
	CHECKF(t.rc == 0 && strcmp(t.ps[0].password, "s3cret") == 0, "%s",
	    t.err);
	pc_done(&t);
	unlink(path);
	/* Gone: refused, naming the file and why. */
	pc_try(&t, text);
	CHECKF(t.rc < 0 && strstr(t.err, path) != NULL &&
	    strstr(t.err, "No such file") != NULL && t.where != NULL &&
	    config_setting_source_line(t.where) == 1, "%s", t.err);
	pc_done(&t);
}

static void
test_parent_conf_reads_via_forms(void)
{
	static const struct {
		const char	*via;
		const char	*text;
		enum via_strategy strategy;
		int		 n, first;
	} cases[] = {
		{ "\"b\"", "b", VIA_ORDERED, 1, 1 },
		{ "[ \"a\", \"direct\" ]", "a,direct", VIA_ORDERED, 2, 0 },
		{ "{ parents = [ \"a\", \"b\" ]; strategy = \"round-robin\"; }",
		  "round-robin(a,b)", VIA_ROUND_ROBIN, 2, 0 },
		{ "{ parents = [ \"b\", \"a\" ]; strategy = \"hash-user\";\n"
		  "  weights = [ 3, 1 ]; }", "hash-user(b,a)", VIA_HASH_USER,
		  2, 1 },
	};
	struct pc_try	 t;
	char		 text[400];
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "parents = ({ name = \"a\"; "
		    "address = \"h:1\"; }, { name = \"b\"; address = "
		    "\"h:2\"; });\nl = { via = %s; };", cases[i].via);
		pc_try(&t, text);
		CHECKF_FATAL(t.rc == 0 && t.via != NULL, "%s: %s",
		    cases[i].via, t.err);
		CHECKF(strcmp(t.via->text, cases[i].text) == 0 &&
		    t.via->strategy == cases[i].strategy &&
		    t.via->n == cases[i].n &&
		    t.via->member[0] == cases[i].first, "%s: %s %d %d",
		    cases[i].via, t.via->text, t.via->n, t.via->member[0]);
		pc_done(&t);
	}
	/* "direct" is no parent; weights kept in order. */
	pc_try(&t, "parents = ({ name = \"a\"; address = \"h:1\"; });\n"
	    "l = { via = { parents = [ \"direct\", \"a\" ];\n"
	    "  strategy = \"random\"; weights = [ 1, 7 ]; }; };");
	CHECKF_FATAL(t.rc == 0, "%s", t.err);
	CU_ASSERT_EQUAL(t.via->member[0], VIA_DIRECT);
	CU_ASSERT_EQUAL(t.via->weight[1], 7);
	pc_done(&t);
}

static void
test_parent_conf_refuses_naming_the_setting(void)
{
	static const struct {
		const char	*text;
		const char	*what;
		int		 line;
	} cases[] = {
		{ "parents = ({ name = \"a\";\n address = \"h\"; });",
		  "port", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\";\n"
		  " colour = 1; });", "unknown option", 2 },
		{ "parents = ({ address = \"h:1\"; });", "missing \"name\"",
		  1 },
		{ "parents = ({ name = \"direct\"; address = \"h:1\"; });",
		  "not \"direct\"", 1 },
		{ "parents = ({ name = \"a\"; address = \"h:1\"; },\n"
		  "{ name = \"a\"; address = \"h:2\"; });", "line 1 too", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\";\n"
		  " user = \"u\"; });", "needs \"password_file\"", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\";\n"
		  " password = \"p\"; });", "without \"user\"", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\";\n"
		  " user = \"u:v\"; password = \"p\"; });", "':'", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\";\n"
		  " resolve = \"local\"; });", "only for socks", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\";\n"
		  " protocol = \"socks4\"; user = \"u\"; password = \"p\"; });",
		  "user id only", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\";\n"
		  " ca = \"/x\"; });", "only for protocol \"https\"", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\";\n"
		  " protocol = \"ftp\"; });", "unknown \"ftp\"", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\"; });\n"
		  "l = { via = \"b\"; };", "no parent is named \"b\"", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\"; });\n"
		  "l = { via = [ \"a\", \"a\" ]; };", "named twice", 2 },
		{ "parents = ({ name = \"a\"; address = \"h:1\"; });\n"
		  "l = { via = { parents = [ \"a\" ];\n weights = [ 1, 2 ]; }; };",
		  "2 of them for 1", 3 },
		{ "parents = ({ name = \"a\"; address = \"h:1\"; });\n"
		  "l = { via = { parents = [ \"a\" ];\n strategy = \"best\"; }; };",
		  "unknown \"best\"", 3 },
		{ "parents = ({ name = \"a\"; address = \"h:1\"; });\n"
		  "l = { via = { parents = [ \"a\" ];\n weights = [ 2 ]; }; };",
		  "only for strategy", 3 },
	};
	struct pc_try	 t;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pc_try(&t, cases[i].text);
		CHECKF(t.rc < 0 && strstr(t.err, cases[i].what) != NULL &&
		    t.where != NULL && (int)config_setting_source_line(t.where)
		    == cases[i].line, "case %zu: rc %d \"%s\" line %d", i,
		    t.rc, t.err, t.where != NULL ?
		    (int)config_setting_source_line(t.where) : -1);
		pc_done(&t);
	}
}

void
register_parent_conf_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("parent_conf", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "reads_parents_and_defaults",
	    test_parent_conf_reads_parents_and_defaults);
	CU_add_test(s, "identity_follows_what_matters",
	    test_parent_conf_identity_follows_what_matters);
	CU_add_test(s, "password_file", test_parent_conf_password_file);
	CU_add_test(s, "reads_via_forms", test_parent_conf_reads_via_forms);
	CU_add_test(s, "refuses_naming_the_setting",
	    test_parent_conf_refuses_naming_the_setting);
}
