/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the auth module's userlist parser (userlist.c), run by
 * `make check` through the TAP driver: accepted and refused hash schemes
 * (each refusal names its scheme), comments and blank lines, errors as
 * FILE:LINE, duplicate users, lookups, each hash's estimated cost and
 * which entry is the costliest. crypt(3) support is not asked
 * (crypt_ok NULL): the module's own check is exercised by the
 * integration tests with real hashes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <CUnit/TestRun.h>

#include "modules/auth/userlist.h"

#define A2ID	"$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQxMg$" \
		"K0e3oAgxirBhyQW6BrJJyNvmHyMiQ/T68YjsJ2S9vCo"
#define BCRYPT	"$2b$05$F4zj8kgQbUdPY1HRo8Lia.fBTfcaX0PCY423jUzQ9v36TTAtOYAHi"
#define YESC	"$y$j9T$Cwj3AUzUEYrMWImXQhgvD.$WER/xqj2wqSoX86FxGA." \
		"OHKknI9qjYIyR8gB.oWsoQ0"

/* An Argon2id hash with these costs (the costs are what is read). */
#define A2(m, t, p) "$argon2id$v=19$m=" #m ",t=" #t ",p=" #p \
		"$c2FsdHNhbHQxMg$K0e3oAgxirBhyQW6BrJJyNvmHyMiQ/T68YjsJ2S9vCo"

static char	 err[512];

/* Parses a copy of <s> (the parser writes into its text). */
static int
parse(struct userlist *ul, const char *s)
{
	size_t	 n = strlen(s);
	char	*t = malloc(n + 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	memcpy(t, s, n + 1);
	err[0] = '\0';
	return ul_parse(ul, t, n, "users", NULL, err, sizeof(err));
}

static void
test_accepts_schemes_comments_blanks(void)
{
	struct userlist		 ul;
	const struct ul_entry	*e;

	CU_ASSERT_EQUAL_FATAL(parse(&ul, "# users\n\n  \nbob:" A2ID "\n"
	    "  # indented comment\ncarol:" BCRYPT "  \r\ndave:" YESC
	    "\nerin:$6$salt$abc\nfrank:$2y$05$x\ngus:$5$s$h"), 0);
	CU_ASSERT_EQUAL(ul.n, 6);
	e = ul_find(&ul, "bob", 3);
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT_EQUAL(e->scheme, UL_ARGON2ID);
	CU_ASSERT_EQUAL(e->mem_kib, 1024);
	CU_ASSERT_EQUAL(e->line, 4);
	CU_ASSERT_STRING_EQUAL(e->hash, A2ID);
	e = ul_find(&ul, "carol", 5);
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT_EQUAL(e->scheme, UL_CRYPT);
	CU_ASSERT_STRING_EQUAL(e->hash, BCRYPT);	/* \r and spaces cut */
	CU_ASSERT_PTR_NOT_NULL(ul_find(&ul, "dave", 4));
	CU_ASSERT_PTR_NULL(ul_find(&ul, "bo", 2));
	CU_ASSERT_PTR_NULL(ul_find(&ul, "bobb", 4));
	CU_ASSERT_PTR_NULL(ul_find(&ul, "Bob", 3));
	ul_free(&ul);

	CU_ASSERT_EQUAL(parse(&ul, ""), 0);
	CU_ASSERT_EQUAL(ul.n, 0);
	CU_ASSERT_PTR_NULL(ul_find(&ul, "bob", 3));
	CU_ASSERT_PTR_NULL(ul.costliest);
	ul_free(&ul);
}

/* The unknown users' hash is the costliest by passes x memory, not by
 * memory alone (b's 4 passes over 4 MiB outlast a's one over 8 MiB);
 * of equal ones the first by name; the rest are padded (cheaper). */
static void
test_costliest_by_passes_and_memory(void)
{
	struct userlist		 ul;
	const struct ul_entry	*a, *b, *c, *d;

	CU_ASSERT_EQUAL_FATAL(parse(&ul, "a:" A2(8192, 1, 1) "\nd:"
	    A2(4096, 4, 1) "\nc:" A2(1024, 1, 1) "\nb:" A2(4096, 4, 1)), 0);
	a = ul_find(&ul, "a", 1);
	b = ul_find(&ul, "b", 1);
	c = ul_find(&ul, "c", 1);
	d = ul_find(&ul, "d", 1);
	CU_ASSERT_FATAL(a && b && c && d);
	CU_ASSERT_EQUAL(a->cost, 2 * 8192);
	CU_ASSERT_EQUAL(b->cost, 5 * 4096);
	CU_ASSERT_EQUAL(c->cost, 2 * 1024);
	CU_ASSERT_PTR_EQUAL(ul.costliest, b);
	CU_ASSERT(a->cheaper);
	CU_ASSERT(c->cheaper);
	CU_ASSERT(!b->cheaper);
	CU_ASSERT(!d->cheaper);		/* as costly: never padded */
	ul_free(&ul);
}

/* Equal passes x memory: fewer lanes last longer (they run on fewer
 * CPUs), so the p=1 hash is the costliest and the p=4 one is padded. */
static void
test_costliest_fewer_lanes_on_ties(void)
{
	struct userlist		 ul;
	const struct ul_entry	*x, *y;

	CU_ASSERT_EQUAL_FATAL(parse(&ul, "x:" A2(4096, 4, 4) "\ny:"
	    A2(4096, 4, 1)), 0);
	x = ul_find(&ul, "x", 1);
	y = ul_find(&ul, "y", 1);
	CU_ASSERT_FATAL(x && y);
	CU_ASSERT_EQUAL(x->cost, y->cost);
	CU_ASSERT_EQUAL(x->lanes, 4);
	CU_ASSERT_EQUAL(y->lanes, 1);
	CU_ASSERT_PTR_EQUAL(ul.costliest, y);
	CU_ASSERT(x->cheaper);
	CU_ASSERT(!y->cheaper);
	ul_free(&ul);
}

/* Each scheme's estimate (userlist.h, ul_cost), and a list mixing them. */
static void
test_cost_of_each_scheme(void)
{
	static const struct {
		const char	*hash;
		uint64_t	 cost;
	} rows[] = {
		{ A2(19456, 2, 1), 3 * 19456 },
		{ BCRYPT, 1u << 12 },			/* $2b$05$ */
		{ "$2y$10$x", 1u << 17 },
		{ "$2a$x", 1u << 11 },			/* unread: cost 4 */
		{ "$6$salt$abc", 2500 },
		{ "$6$rounds=50000$salt$abc", 25000 },
		{ "$5$rounds=10$s$h", 500 },		/* clamped to 1000 */
		{ "$6$rounds=99999999999$s$h", 499999999 },
		{ YESC, 4096 * 32 },			/* N=2^12, r=32 */
		{ "$y$j9T/.$s$h", 4096 * 32 * 9 / 8 },	/* t=1 */
		{ "$y$j9T//$s$h", 4096 * 32 * 12 / 8 },	/* t=2 */
		{ "$y$j9T.0$s$h", 4096 * 32 * 4 },	/* p=4 */
		{ "$y$!$s$h", 0 },			/* unread */
	};
	struct userlist	 ul;
	char		 line[256];
	size_t		 i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(line, sizeof(line), "u:%s", rows[i].hash);
		CU_ASSERT_EQUAL_FATAL(parse(&ul, line), 0);
		if (ul.v[0].cost != rows[i].cost) {
			fprintf(stderr, "row %zu: cost %llu, want %llu\n", i,
			    (unsigned long long)ul.v[0].cost,
			    (unsigned long long)rows[i].cost);
			CU_FAIL("cost");
		}
		CU_ASSERT_PTR_EQUAL(ul.costliest, &ul.v[0]);
		CU_ASSERT(!ul.v[0].cheaper);
		ul_free(&ul);
	}
	CU_ASSERT_EQUAL_FATAL(parse(&ul, "argon:" A2(19456, 2, 1) "\n"
	    "sha:$6$salt$abc\nbcrypt:$2b$12$x\nyes:" YESC), 0);
	CU_ASSERT_PTR_EQUAL(ul.costliest, ul_find(&ul, "bcrypt", 6));
	CU_ASSERT(ul_find(&ul, "argon", 5)->cheaper);
	CU_ASSERT(ul_find(&ul, "yes", 3)->cheaper);
	ul_free(&ul);
}

static void
test_refuses_weak_schemes_by_name(void)
{
	static const struct {
		const char	*line;
		const char	*want;
	} rows[] = {
		{ "a:$apr1$salt$hash", "users:1: Apache MD5 ($apr1$)" },
		{ "a:$1$salt$hash", "users:1: MD5-crypt ($1$)" },
		{ "a:abJnggxhB/yWI", "users:1: DES crypt" },
		{ "a:_J9..rasmBYk8r9AiWNc", "users:1: DES crypt" },
		{ "a:hunter2", "users:1: plain-text password" },
		{ "a:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "users:1: unsalted "
		    "SHA-1" },
		{ "a:$7$CU..../....salt$hash", "users:1: unknown hash scheme" },
		{ "a:$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaA",
		    "users:1: argon2i/argon2d" },
		{ "a:$argon2id$v=16$m=1024,t=1,p=1$c2FsdHNhbHQxMg$"
		    "K0e3oAgxirBhyQW6BrJJyNvmHyMiQ/T68YjsJ2S9vCo",
		    "users:1: argon2id hash with a version" },
		{ "a:$argon2id$v=19$m=1024,t=1$c2FsdHNhbHQxMg$"
		    "K0e3oAgxirBhyQW6BrJJyNvmHyMiQ/T68YjsJ2S9vCo",
		    "users:1: malformed argon2id" },
		{ "a:$argon2id$v=19$m=1024,t=1,p=1$c2FsdHNhbHQxMg$short",
		    "users:1: malformed argon2id" },
		{ "a:", "users:1: empty hash" },
		{ "just a line", "users:1: not user:hash" },
		{ ":" BCRYPT, "users:1: empty user name" },
		{ "a:" BCRYPT " trailing", "users:1: white space" },
		{ "a\tb:" BCRYPT, "users:1: control character" },
	};
	struct userlist	 ul;
	size_t		 i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CU_ASSERT_EQUAL(parse(&ul, rows[i].line), -1);
		if (strncmp(err, rows[i].want, strlen(rows[i].want)) != 0) {
			fprintf(stderr, "row %zu: got \"%s\", want \"%s...\"\n",
			    i, err, rows[i].want);
			CU_FAIL("error message");
		}
		CU_ASSERT_PTR_NULL(ul.v);
		ul_free(&ul);
	}
}

static void
test_error_names_line_and_duplicates(void)
{
	struct userlist	 ul;

	CU_ASSERT_EQUAL(parse(&ul, "# c\nbob:" BCRYPT "\n\nbad\n"), -1);
	CU_ASSERT_STRING_EQUAL(err, "users:4: not user:hash");
	ul_free(&ul);
	CU_ASSERT_EQUAL(parse(&ul, "bob:" BCRYPT "\ncarol:" YESC "\n#\n"
	    "bob:" A2ID "\n"), -1);
	CU_ASSERT_STRING_EQUAL(err, "users:4: duplicate user \"bob\" (also "
	    "on line 1)");
	ul_free(&ul);
	/* A NUL byte inside a line is an error, not a silent cut. */
	{
		char	 t[] = "bob:" BCRYPT "\0x\n";
		char	*c = malloc(sizeof(t));

		CU_ASSERT_PTR_NOT_NULL_FATAL(c);
		memcpy(c, t, sizeof(t));
		CU_ASSERT_EQUAL(ul_parse(&ul, c, sizeof(t) - 1, "users", NULL,
		    err, sizeof(err)), -1);
		CU_ASSERT_STRING_EQUAL(err, "users:1: NUL byte");
		ul_free(&ul);
	}
}

static void
test_load_missing_file(void)
{
	struct userlist	 ul;

	CU_ASSERT_EQUAL(ul_load(&ul, "/nonexistent/users", NULL, err,
	    sizeof(err)), -1);
	CU_ASSERT(strstr(err, "/nonexistent/users: ") == err);
}

/* TAP on stdout for the automake driver: one line per test. */
static unsigned	 tap_n, tap_bad;

static void
tap_done(const CU_pTest test, const CU_pSuite suite,
    const CU_pFailureRecord failures)
{
	CU_pFailureRecord	 f;
	bool			 bad = false;

	(void)suite;
	for (f = failures; f != NULL; f = f->pNext)
		if (f->pTest == test) {
			bad = true;
			printf("# %s:%u: %s\n", f->strFileName, f->uiLineNumber,
			    f->strCondition);
		}
	tap_n++;
	tap_bad += bad;
	printf("%s %u - userlist: %s\n", bad ? "not ok" : "ok", tap_n,
	    test->pName);
}

int
main(void)
{
	CU_pSuite	 s;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("userlist", NULL, NULL);
	CU_add_test(s, "accepts_schemes_comments_blanks",
	    test_accepts_schemes_comments_blanks);
	CU_add_test(s, "refuses_weak_schemes_by_name",
	    test_refuses_weak_schemes_by_name);
	CU_add_test(s, "error_names_line_and_duplicates",
	    test_error_names_line_and_duplicates);
	CU_add_test(s, "load_missing_file", test_load_missing_file);
	CU_add_test(s, "costliest_by_passes_and_memory",
	    test_costliest_by_passes_and_memory);
	CU_add_test(s, "costliest_fewer_lanes_on_ties",
	    test_costliest_fewer_lanes_on_ties);
	CU_add_test(s, "cost_of_each_scheme", test_cost_of_each_scheme);
	CU_set_test_complete_handler(tap_done);
	CU_run_all_tests();
	printf("1..%u\n", tap_n);
	CU_cleanup_registry();
	return tap_bad ? 1 : 0;
}
