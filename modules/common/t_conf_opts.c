/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/common/conf_opts.c: a configuration error's text
 * (its lead, a buffer too small for it) and the setting it points at;
 * an option table read over a group parsed by libconfig, each kind of
 * row taking and refusing values, defaults kept for absent keys, and an
 * unknown key named.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <libconfig.h>

#include "modules/common/conf_opts.h"
#include "modules/common/t_suites.h"
#include "t/unit/check.h"

static config_t		 t_cfg;

/* The group "g" of <text>, parsed into t_cfg (t_done frees it). */
static const config_setting_t *
t_group(const char *text)
{
	const config_setting_t	*g;

	config_init(&t_cfg);
	CHECKF_FATAL(config_read_string(&t_cfg, text) == CONFIG_TRUE,
	    "libconfig: %s on line %d", config_error_text(&t_cfg),
	    config_error_line(&t_cfg));
	g = config_lookup(&t_cfg, "g");
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	return g;
}

static void
t_done(void)
{
	config_destroy(&t_cfg);
}

static void
test_conf_fail_leads_with_the_prefix(void)
{
	const config_setting_t	*where = NULL, *g = t_group("g = { a = 1; };");
	const config_setting_t	*a = config_setting_get_member(g, "a");
	char			 buf[128];
	struct conf_err		 e = { buf, sizeof(buf), &where, "" };

	CU_ASSERT_EQUAL(conf_fail(&e, a, "a: %d is %s", 1, "odd"), -1);
	CU_ASSERT_STRING_EQUAL(buf, "a: 1 is odd");
	CU_ASSERT_PTR_EQUAL(where, a);
	snprintf(e.prefix, sizeof(e.prefix), "rule %d (\"%s\")", 3, "web");
	CU_ASSERT_EQUAL(conf_fail(&e, NULL, "out of memory"), -1);
	CU_ASSERT_STRING_EQUAL(buf, "rule 3 (\"web\"): out of memory");
	CU_ASSERT_PTR_NULL(where);
	t_done();
}

/* Cut to the buffer; a lead that leaves no room is left out rather
 * than leave no message at all. */
static void
test_conf_fail_fits_the_buffer(void)
{
	const config_setting_t	*where = NULL;
	char			 buf[12];
	struct conf_err		 e = { buf, sizeof(buf), &where, "accesslog" };

	conf_fail(&e, NULL, "%s", "no such user");
	CU_ASSERT_STRING_EQUAL(buf, "accesslog: ");
	strcpy(e.prefix, "a lead longer than the buffer");
	conf_fail(&e, NULL, "%s", "out of memory");
	CU_ASSERT_STRING_EQUAL(buf, "out of memo");
}

struct t_opts {
	const config_setting_t	*name;
	const config_setting_t	*list;
	bool			 on;
	bool			 off;
	int			 level;
};

/* level: 1 to 9, as "L<n>". */
static int
t_level(struct conf_err *e, const config_setting_t *s, void *field)
{
	const char	*v = config_setting_get_string(s);

	if (v == NULL || v[0] != 'L' || v[1] < '1' || v[1] > '9' ||
	    v[2] != '\0')
		return conf_fail(e, s, "expected \"L1\" to \"L9\"");
	*(int *)field = v[1] - '0';
	return 0;
}

static const struct conf_opt t_table[] = {
	{ "skipped", CONF_OPT_SKIP, 0, NULL, NULL },
	{ "name", CONF_OPT_STRING, offsetof(struct t_opts, name),
	    "expected a name", NULL },
	{ "list", CONF_OPT_LIST, offsetof(struct t_opts, list),
	    "expected a list", NULL },
	{ "on", CONF_OPT_BOOL, offsetof(struct t_opts, on),
	    "expected true or false", NULL },
	{ "off", CONF_OPT_BOOL, offsetof(struct t_opts, off),
	    "expected true or false", NULL },
	{ "level", CONF_OPT_FN, offsetof(struct t_opts, level), NULL,
	    t_level },
	{ NULL, CONF_OPT_SKIP, 0, NULL, NULL }
};

/* <text>'s group "g" read with t_table over defaults; 0 or -1, the
 * message in <buf> and the setting at fault in <where>. */
static int
t_read(const char *text, struct t_opts *o, char *buf, size_t size,
    const config_setting_t **where)
{
	struct conf_err	 e = { buf, size, where, "" };

	memset(o, 0, sizeof(*o));
	o->on = true;
	o->level = 5;
	buf[0] = '\0';
	*where = NULL;
	return conf_opts_read(&e, t_group(text), t_table, o);
}

static void
test_conf_opts_read_stores_each_kind(void)
{
	const config_setting_t	*where;
	struct t_opts		 o;
	char			 buf[128];

	CU_ASSERT_EQUAL(t_read("g = { skipped = (1, \"x\"); name = \"n\"; "
	    "list = (1, 2); on = false; off = true; level = \"L7\"; };", &o,
	    buf, sizeof(buf), &where), 0);
	CU_ASSERT_STRING_EQUAL(buf, "");
	CU_ASSERT_PTR_NULL(where);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o.name);
	CU_ASSERT_STRING_EQUAL(config_setting_get_string(o.name), "n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o.list);
	CU_ASSERT_EQUAL(config_setting_length(o.list), 2);
	CU_ASSERT_FALSE(o.on);
	CU_ASSERT_TRUE(o.off);
	CU_ASSERT_EQUAL(o.level, 7);
	t_done();
}

static void
test_conf_opts_read_keeps_defaults_of_absent_keys(void)
{
	const config_setting_t	*where;
	struct t_opts		 o;
	char			 buf[128];

	CU_ASSERT_EQUAL(t_read("g = { off = true; };", &o, buf, sizeof(buf),
	    &where), 0);
	CU_ASSERT_PTR_NULL(o.name);
	CU_ASSERT_PTR_NULL(o.list);
	CU_ASSERT_TRUE(o.on);
	CU_ASSERT_TRUE(o.off);
	CU_ASSERT_EQUAL(o.level, 5);
	t_done();
	CU_ASSERT_EQUAL(t_read("g = { };", &o, buf, sizeof(buf), &where), 0);
	t_done();
}

/* Each bad value gives its row's message, pointing at the value. */
static void
test_conf_opts_read_refuses_values_of_another_kind(void)
{
	static const struct {
		const char	*text, *key, *msg;
	} rows[] = {
		{ "g = { name = 3; };", "name", "expected a name" },
		{ "g = { list = [1, 2]; };", "list", "expected a list" },
		{ "g = { list = \"a\"; };", "list", "expected a list" },
		{ "g = { on = 1; };", "on", "expected true or false" },
		{ "g = { off = \"true\"; };", "off", "expected true or false" },
		{ "g = { level = \"L0\"; };", "level",
		    "expected \"L1\" to \"L9\"" },
		{ "g = { level = 7; };", "level", "expected \"L1\" to \"L9\"" },
	};
	const config_setting_t	*where;
	struct t_opts		 o;
	char			 buf[128];
	size_t			 i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CHECKF(t_read(rows[i].text, &o, buf, sizeof(buf), &where) ==
		    -1, "%s: accepted", rows[i].text);
		CHECKF(strcmp(buf, rows[i].msg) == 0, "%s: \"%s\"",
		    rows[i].text, buf);
		CHECKF(where != NULL && strcmp(config_setting_name(where),
		    rows[i].key) == 0, "%s: points elsewhere", rows[i].text);
		t_done();
	}
}

/* In the group's order: the first problem is the one reported. */
static void
test_conf_opts_read_names_the_first_unknown_key(void)
{
	const config_setting_t	*where;
	struct t_opts		 o;
	char			 buf[128];

	CU_ASSERT_EQUAL(t_read("g = { on = true; colour = \"red\"; "
	    "name = 3; size = 1; };", &o, buf, sizeof(buf), &where), -1);
	CU_ASSERT_STRING_EQUAL(buf, "unknown option \"colour\"");
	CU_ASSERT_PTR_NOT_NULL_FATAL(where);
	CU_ASSERT_STRING_EQUAL(config_setting_name(where), "colour");
	t_done();
	CU_ASSERT_EQUAL(t_read("g = { name = 3; colour = \"red\"; };", &o,
	    buf, sizeof(buf), &where), -1);
	CU_ASSERT_STRING_EQUAL(buf, "expected a name");
	t_done();
}

void
register_conf_opts_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("conf_opts", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "fail_leads_with_the_prefix",
	    test_conf_fail_leads_with_the_prefix);
	CU_add_test(s, "fail_fits_the_buffer", test_conf_fail_fits_the_buffer);
	CU_add_test(s, "read_stores_each_kind",
	    test_conf_opts_read_stores_each_kind);
	CU_add_test(s, "read_keeps_defaults_of_absent_keys",
	    test_conf_opts_read_keeps_defaults_of_absent_keys);
	CU_add_test(s, "read_refuses_values_of_another_kind",
	    test_conf_opts_read_refuses_values_of_another_kind);
	CU_add_test(s, "read_names_the_first_unknown_key",
	    test_conf_opts_read_names_the_first_unknown_key);
}
