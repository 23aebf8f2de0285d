/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the helper backend's pure parts (helper.c): the escaping
 * Squid's helpers expect, the answer lines they write, the command split
 * and what auth_helpers_verify() refuses before any process is involved.
 * The processes themselves are driven by t/integ/auth_helper.py through
 * the real binary. helper.c is included, so its static functions are
 * reachable; the few core functions it calls are stubbed here and never
 * reached by these tests (they would fail them).
 *
 * Output is TAP (one line per test), like t/unit/run.
 */
#include "helper.c"

#include <stdarg.h>

#include <CUnit/CUnit.h>
#include <CUnit/TestRun.h>

/* ---- stubs of the core ------------------------------------------------ */

static unsigned	 stub_calls;

void
pt_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
	stub_calls++;
}

void
pt_log_err(int level, int err, const char *fmt, ...)
{
	(void)level;
	(void)err;
	(void)fmt;
	stub_calls++;
}

int
pt_io_start(struct pt_io *io, int fd, uint32_t events, pt_io_fn fn,
    void *arg)
{
	(void)io, (void)fd, (void)events, (void)fn, (void)arg;
	stub_calls++;
	return -ENOSYS;
}

int
pt_io_modify(struct pt_io *io, uint32_t events)
{
	(void)io, (void)events;
	stub_calls++;
	return -EINVAL;
}

void
pt_io_stop(struct pt_io *io)
{
	(void)io;
	stub_calls++;
}

void
pt_timer_start(struct pt_timer *t, uint64_t after_ms, pt_timer_fn fn,
    void *arg)
{
	(void)t, (void)after_ms, (void)fn, (void)arg;
	stub_calls++;
}

void
pt_timer_stop(struct pt_timer *t)
{
	(void)t;
	stub_calls++;
}

uint64_t
pt_now_ms(void)
{
	stub_calls++;
	return 0;
}

/* ---- escaping ----------------------------------------------------------- */

static void
check_escape(const char *in, size_t len, const char *want)
{
	char	 out[256];
	long	 n = auth_helper_escape(out, sizeof(out), in, len);

	CU_ASSERT_FATAL(n >= 0);
	out[n] = '\0';
	if (strcmp(out, want) != 0)
		fprintf(stderr, "escape: got \"%s\", want \"%s\"\n", out, want);
	CU_ASSERT_STRING_EQUAL(out, want);
}

static void
test_escape_plain(void)
{
	check_escape("alice", 5, "alice");
	/* RFC 1738 reserved characters stay as they are (Squid escapes
	 * only the unsafe ones for helpers). */
	check_escape("a:b@c/d?e=f&g+h;i$j,k!l*m(n)o.p-q_r", 35,
	    "a:b@c/d?e=f&g+h;i$j,k!l*m(n)o.p-q_r");
	check_escape("", 0, "");
}

static void
test_escape_unsafe(void)
{
	check_escape("pa ss%word", 10, "pa%20ss%25word");
	check_escape("<>\"#{}|\\^~[]`'", 14,
	    "%3C%3E%22%23%7B%7D%7C%5C%5E%7E%5B%5D%60%27");
	/* Controls, DEL and every byte of UTF-8 text. */
	check_escape("\t\x01\x1f\x7f", 4, "%09%01%1F%7F");
	check_escape("caf\xc3\xa9", 5, "caf%C3%A9");
	/* A NUL is escaped too (verify refuses it before, though). */
	check_escape("a\0b", 3, "a%00b");
}

static void
test_escape_bounds(void)
{
	char	 out[8];

	CU_ASSERT_EQUAL(auth_helper_escape(out, 5, "abcde", 5), 5);
	CU_ASSERT_EQUAL(auth_helper_escape(out, 4, "abcde", 5), -1);
	CU_ASSERT_EQUAL(auth_helper_escape(out, 3, "%", 1), 3);
	CU_ASSERT_EQUAL(auth_helper_escape(out, 2, "%", 1), -1);
	CU_ASSERT_EQUAL(auth_helper_escape(out, 5, "a b", 3), 5);
	CU_ASSERT_EQUAL(auth_helper_escape(out, 4, "a b", 3), -1);
}

/* ---- answers ------------------------------------------------------------ */

struct reply_case {
	const char	*line;
	bool		 with_id;
	int		 rc;
	unsigned	 id;
	int		 result;
};

static const struct reply_case reply_cases[] = {
	{ "OK", false, 0, 0, AUTH_HELPER_OK },
	{ "OK ", false, 0, 0, AUTH_HELPER_OK },	/* basic_ncsa_auth's */
	{ "OK\r", false, 0, 0, AUTH_HELPER_OK },
	{ "OK user=alice", false, 0, 0, AUTH_HELPER_OK },
	{ "ERR", false, 0, 0, AUTH_HELPER_ERR },
	{ "ERR No such user", false, 0, 0, AUTH_HELPER_ERR },
	{ "ERR\tmessage=\"x\"", false, 0, 0, AUTH_HELPER_ERR },
	{ "BH", false, 0, 0, -EIO },
	{ "BH message=\"ldap down\"", false, 0, 0, -EIO },
	{ "", false, -EPROTO, 0, 0 },
	{ "ok", false, -EPROTO, 0, 0 },
	{ "OKAY", false, -EPROTO, 0, 0 },
	{ "ERROR", false, -EPROTO, 0, 0 },
	{ " OK", false, -EPROTO, 0, 0 },
	{ "0 OK", false, -EPROTO, 0, 0 },
	{ "0 OK", true, 0, 0, AUTH_HELPER_OK },
	{ "7 ERR No such user", true, 0, 7, AUTH_HELPER_ERR },
	{ "255  BH", true, 0, 255, -EIO },
	{ "12\tOK\r", true, 0, 12, AUTH_HELPER_OK },
	{ "OK", true, -EPROTO, 0, 0 },
	{ "7OK", true, -EPROTO, 0, 0 },
	{ "7", true, -EPROTO, 0, 0 },
	{ "7 ", true, -EPROTO, 0, 0 },
	{ "x OK", true, -EPROTO, 0, 0 },
	{ "-1 OK", true, -EPROTO, 0, 0 },
	{ "99999999999 OK", true, -EPROTO, 0, 0 },
	{ "3 NO", true, -EPROTO, 0, 0 },
};

static void
test_reply_parse(void)
{
	const struct reply_case	*c;
	unsigned		 i, id;
	int			 rc, result;

	for (i = 0; i < sizeof(reply_cases) / sizeof(reply_cases[0]); i++) {
		c = &reply_cases[i];
		id = 12345;
		result = 12345;
		rc = auth_helper_reply_parse(c->line, strlen(c->line),
		    c->with_id, &id, &result);
		if (rc != c->rc || (rc == 0 && (result != c->result ||
		    (c->with_id && id != c->id))))
			fprintf(stderr, "reply \"%s\" id=%d: rc=%d id=%u "
			    "result=%d\n", c->line, c->with_id, rc, id, result);
		CU_ASSERT_EQUAL(rc, c->rc);
		if (rc == 0) {
			CU_ASSERT_EQUAL(result, c->result);
			if (c->with_id)
				CU_ASSERT_EQUAL(id, c->id);
		}
	}
}

/* ---- the command and what verify refuses -------------------------------- */

static void
test_split(void)
{
	struct auth_helpers	 h;

	memset(&h, 0, sizeof(h));
	CU_ASSERT_EQUAL(ah_split(&h, "  /usr/lib/squid/basic_ncsa_auth\t"
	    "/etc/p w  "), 0);
	CU_ASSERT_STRING_EQUAL(h.argv[0], "/usr/lib/squid/basic_ncsa_auth");
	CU_ASSERT_STRING_EQUAL(h.argv[1], "/etc/p");
	CU_ASSERT_STRING_EQUAL(h.argv[2], "w");
	CU_ASSERT_PTR_NULL(h.argv[3]);
	free(h.args);

	memset(&h, 0, sizeof(h));
	CU_ASSERT_EQUAL(ah_split(&h, " \t "), -EINVAL);
	free(h.args);

	CU_ASSERT_PTR_NULL(auth_helpers_start("", 1, 0, 1000));
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_PTR_NULL(auth_helpers_start("/bin/true", 0, 0, 1000));
	CU_ASSERT_PTR_NULL(auth_helpers_start("/bin/true", 1, 0, 0));
	CU_ASSERT_PTR_NULL(auth_helpers_start("/bin/true",
	    AUTH_HELPER_CHILDREN_MAX + 1, 0, 1000));
	CU_ASSERT_PTR_NULL(auth_helpers_start("/bin/true", 1,
	    AUTH_HELPER_CONCURRENCY_MAX + 1, 1000));
}

static void
never_done(void *arg, int result)
{
	(void)arg;
	(void)result;
	CU_FAIL("done() called");
}

static void
test_verify_refuses(void)
{
	struct auth_helpers	 h;
	static char		 big[AUTH_HELPER_LINE_MAX];
	unsigned		 before = stub_calls;

	memset(&h, 0, sizeof(h));
	memset(big, '%', sizeof(big));	/* escapes to three times that */
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, "", 0, "p", 1, never_done,
	    NULL), -EINVAL);
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, "a\nb", 3, "p", 1,
	    never_done, NULL), -EINVAL);
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, "a\0b", 3, "p", 1,
	    never_done, NULL), -EINVAL);
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, "a", 1, "p\r", 2,
	    never_done, NULL), -EINVAL);
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, "a", 1, "p\0", 2,
	    never_done, NULL), -EINVAL);
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, "a", 1, big, 1400,
	    never_done, NULL), -EINVAL);
	h.concurrency = 8;
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, big, 1400, "p", 1,
	    never_done, NULL), -EINVAL);
	/* Sendable, but no process runs: refused at once, not queued. */
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, "a", 1, "", 0, never_done,
	    NULL), -ENOTCONN);
	CU_ASSERT_EQUAL(auth_helpers_verify(&h, "a", 1, big, 1300,
	    never_done, NULL), -ENOTCONN);
	CU_ASSERT_EQUAL(stub_calls, before);
}

/* ---- slots, lines and answers without processes --------------------------- */

/* Helpers that look running to verify() (a pid no one will signal: only
 * the failure paths, not taken here, touch it). */
static struct auth_helpers *
fake_helpers(unsigned children, unsigned concurrency)
{
	struct auth_helpers	*h = calloc(1, sizeof(*h));
	unsigned		 i;

	CU_ASSERT_FATAL(h != NULL);
	h->nchildren = children;
	h->concurrency = concurrency;
	h->nslots = concurrency > 0 ? concurrency : 1;
	h->timeout_ms = 1000;
	h->argv[0] = "fake";
	h->children = calloc(children, sizeof(*h->children));
	h->slots = calloc((size_t)children * h->nslots, sizeof(*h->slots));
	CU_ASSERT_FATAL(h->children != NULL && h->slots != NULL);
	for (i = 0; i < children; i++) {
		h->children[i].h = h;
		h->children[i].idx = i;
		h->children[i].pid = 999999;
		h->children[i].wfd = h->children[i].rfd = -1;
		h->children[i].slots = h->slots + (size_t)i * h->nslots;
	}
	return h;
}

static void
fake_free(struct auth_helpers *h)
{
	free(h->children);
	free(h->slots);
	free(h);
}

static int	 got[8];
static unsigned	 got_calls;

static void
record_done(void *arg, int result)
{
	got[(int *)arg - got] = result;
	got_calls++;
}

static bool
wbuf_is(const struct ah_child *c, const char *want)
{
	if (c->wlen != strlen(want) || memcmp(c->wbuf, want, c->wlen) != 0) {
		fprintf(stderr, "wbuf: \"%.*s\", want \"%s\"\n", (int)c->wlen,
		    c->wbuf, want);
		return false;
	}
	return true;
}

static void
answer(struct ah_child *c, const char *line)
{
	ah_child_line(c, line, strlen(line));
}

static void
test_channel_ids(void)
{
	struct auth_helpers	*h = fake_helpers(2, 2);
	struct ah_child		*c0 = &h->children[0], *c1 = &h->children[1];
	unsigned		 i;

	for (i = 0; i < 8; i++)
		got[i] = 100;
	got_calls = 0;
	CU_ASSERT_EQUAL(auth_helpers_verify(h, "alice", 5, "pa ss", 5,
	    record_done, &got[0]), 0);
	CU_ASSERT_EQUAL(auth_helpers_verify(h, "bob", 3, "x", 1,
	    record_done, &got[1]), 0);
	CU_ASSERT_EQUAL(auth_helpers_verify(h, "carol", 5, "", 0,
	    record_done, &got[2]), 0);
	CU_ASSERT_EQUAL(auth_helpers_verify(h, "dave", 4, "d", 1,
	    record_done, &got[3]), 0);
	/* Least busy first: the requests alternate between the two. */
	CU_ASSERT(wbuf_is(c0, "0 alice pa%20ss\n1 carol \n"));
	CU_ASSERT(wbuf_is(c1, "0 bob x\n1 dave d\n"));
	CU_ASSERT_EQUAL(c0->inflight, 2);
	CU_ASSERT_EQUAL(c1->inflight, 2);
	/* Every slot taken: overload, not a queue. */
	CU_ASSERT_EQUAL(auth_helpers_verify(h, "erin", 4, "e", 1,
	    record_done, &got[4]), -EAGAIN);
	CU_ASSERT_EQUAL(got_calls, 0);

	/* Answers in any order, matched by ID. */
	answer(c0, "1 OK");
	CU_ASSERT_EQUAL(got[2], AUTH_HELPER_OK);
	answer(c1, "1 BH message=\"down\"");
	CU_ASSERT_EQUAL(got[3], -EIO);
	answer(c1, "0 ERR No such user");
	CU_ASSERT_EQUAL(got[1], AUTH_HELPER_ERR);
	CU_ASSERT_EQUAL(got_calls, 3);

	/* Cancelled: its answer is read and dropped, the slot stays taken
	 * until then (a late answer is never someone else's). */
	auth_helpers_cancel(h, &got[0]);
	CU_ASSERT_EQUAL(c0->inflight, 1);
	CU_ASSERT_TRUE(c0->slots[0].busy);
	answer(c0, "0 OK");
	CU_ASSERT_EQUAL(got[0], 100);
	CU_ASSERT_EQUAL(got_calls, 3);
	CU_ASSERT_EQUAL(c0->inflight, 0);
	CU_ASSERT_EQUAL(c1->inflight, 0);
	fake_free(h);
}

static void
test_plain_protocol(void)
{
	struct auth_helpers	*h = fake_helpers(1, 0);
	struct ah_child		*c = &h->children[0];

	got_calls = 0;
	got[0] = got[1] = 100;
	CU_ASSERT_EQUAL(auth_helpers_verify(h, "caf\xc3\xa9", 5, "a%b", 3,
	    record_done, &got[0]), 0);
	CU_ASSERT(wbuf_is(c, "caf%C3%A9 a%25b\n"));
	/* One request at a time per process. */
	CU_ASSERT_EQUAL(auth_helpers_verify(h, "x", 1, "y", 1,
	    record_done, &got[1]), -EAGAIN);
	answer(c, "OK ");
	CU_ASSERT_EQUAL(got[0], AUTH_HELPER_OK);
	CU_ASSERT_EQUAL(auth_helpers_verify(h, "x", 1, "y", 1,
	    record_done, &got[1]), 0);
	answer(c, "ERR\r");
	CU_ASSERT_EQUAL(got[1], AUTH_HELPER_ERR);
	CU_ASSERT_EQUAL(got_calls, 2);
	fake_free(h);
}

/* ---- runner ------------------------------------------------------------- */

static unsigned	 tap_count, tap_failed;

static void
tap_on_test_complete(const CU_pTest test, const CU_pSuite suite,
    const CU_pFailureRecord failures)
{
	CU_pFailureRecord	 f;
	bool			 failed = false;

	for (f = failures; f != NULL; f = f->pNext)
		if (f->pTest == test) {
			failed = true;
			printf("# %s:%u: %s\n", f->strFileName,
			    f->uiLineNumber, f->strCondition);
		}
	tap_count++;
	tap_failed += failed;
	printf("%s %u - %s: %s\n", failed ? "not ok" : "ok", tap_count,
	    suite->pName, test->pName);
	fflush(stdout);
}

int
main(void)
{
	CU_pSuite	 s;

	if (CU_initialize_registry() != CUE_SUCCESS ||
	    (s = CU_add_suite("auth_helper", NULL, NULL)) == NULL) {
		printf("Bail out! CUnit: %s\n", CU_get_error_msg());
		return 1;
	}
	CU_add_test(s, "escape plain", test_escape_plain);
	CU_add_test(s, "escape unsafe", test_escape_unsafe);
	CU_add_test(s, "escape bounds", test_escape_bounds);
	CU_add_test(s, "reply parse", test_reply_parse);
	CU_add_test(s, "command split", test_split);
	CU_add_test(s, "verify refuses", test_verify_refuses);
	CU_add_test(s, "channel IDs, overload, cancel", test_channel_ids);
	CU_add_test(s, "plain protocol", test_plain_protocol);
	CU_set_error_action(CUEA_IGNORE);
	CU_set_test_complete_handler(tap_on_test_complete);
	if (CU_run_all_tests() != CUE_SUCCESS && tap_failed == 0) {
		tap_count++;
		tap_failed++;
		printf("not ok %u - runner: %s\n", tap_count,
		    CU_get_error_msg());
	}
	printf("1..%u\n", tap_count);
	CU_cleanup_registry();
	return tap_failed == 0 ? 0 : 1;
}
