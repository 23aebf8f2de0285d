/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/http_head.c: the responses portico writes itself. A refusal's
 * challenge carries the module's realm as a quoted-string whatever bytes
 * it holds (a realm must never end the field or start another), and
 * Retry-After appears exactly when asked for. Each head is written to a
 * heap buffer of the exact size it needs, and one byte short must fail.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "worker/http_head.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

/* The head of http_head_error(...) up to its blank line, in <out>. */
static ssize_t
head_of(char *out, size_t cap, int status, unsigned flags,
    const char *realm, uint32_t retry_after)
{
	return http_head_error(out, cap, status, "why", flags, realm,
	    retry_after);
}

static void
test_http_head_error_quotes_realm(void)
{
	static const struct {
		const char	*realm;		/* NULL: the default */
		const char	*field;
	} rows[] = {
		{ NULL, "Proxy-Authenticate: Basic realm=\"portico\", "
		    "charset=\"UTF-8\"\r\n" },
		{ "staff", "Proxy-Authenticate: Basic realm=\"staff\", "
		    "charset=\"UTF-8\"\r\n" },
		{ "a \"b\" c", "Proxy-Authenticate: Basic "
		    "realm=\"a \\\"b\\\" c\", charset=\"UTF-8\"\r\n" },
		{ "back\\slash", "Proxy-Authenticate: Basic "
		    "realm=\"back\\\\slash\", charset=\"UTF-8\"\r\n" },
		{ "x\r\nSet-Cookie: y", "Proxy-Authenticate: Basic "
		    "realm=\"xSet-Cookie: y\", charset=\"UTF-8\"\r\n" },
		{ "", "Proxy-Authenticate: Basic realm=\"\", "
		    "charset=\"UTF-8\"\r\n" },
	};
	char		 buf[2048], *exact;
	ssize_t		 n;
	size_t		 i;

	for (i = 0; i < NELEM(rows); i++) {
		n = head_of(buf, sizeof(buf), 407, HTTP_HEAD_AUTH,
		    rows[i].realm, 0);
		CHECKF_FATAL(n > 0, "row %zu: written", i);
		buf[n] = '\0';
		CHECKF(strstr(buf, rows[i].field) != NULL,
		    "row %zu: %s has %s", i, buf, rows[i].field);
		CHECKF(strstr(buf, "\r\nSet-Cookie") == NULL,
		    "row %zu: no field injected", i);
		CHECKF(strncmp(buf, "HTTP/1.1 407 Proxy Authentication "
		    "Required\r\n", 42) == 0, "row %zu: status line", i);
		/* Exactly as long as it says, and refused one byte short. */
		exact = malloc((size_t)n);
		CU_ASSERT_PTR_NOT_NULL_FATAL(exact);
		CHECKF(head_of(exact, (size_t)n, 407, HTTP_HEAD_AUTH,
		    rows[i].realm, 0) == n, "row %zu: fits exactly", i);
		CHECKF(head_of(exact, (size_t)n - 1, 407, HTTP_HEAD_AUTH,
		    rows[i].realm, 0) == -1, "row %zu: one byte short", i);
		free(exact);
	}
}

static void
test_http_head_error_retry_after_only_when_set(void)
{
	char		 buf[2048];
	ssize_t		 n;

	n = head_of(buf, sizeof(buf), 429, 0, NULL, 30);
	CU_ASSERT_FATAL(n > 0);
	buf[n] = '\0';
	CU_ASSERT(strncmp(buf, "HTTP/1.1 429 Too Many Requests\r\n", 32) == 0);
	CU_ASSERT(strstr(buf, "\r\nRetry-After: 30\r\n") != NULL);
	CU_ASSERT(strstr(buf, "Proxy-Authenticate") == NULL);
	n = head_of(buf, sizeof(buf), 503, 0, "ignored", 0);
	CU_ASSERT_FATAL(n > 0);
	buf[n] = '\0';
	CU_ASSERT(strstr(buf, "Retry-After") == NULL);
	CU_ASSERT(strstr(buf, "ignored") == NULL);
}

/* Two Transfer-Encoding lines are one list: "gzip" then "chunked" is a
 * chunked body, and the client must be told "gzip, chunked", not "gzip"
 * (read until the close) while the chunks go through (found by
 * t/fuzz/http_head). */
static void
test_http_head_response_keeps_every_coding(void)
{
	static const char	 in[] = "HTTP/1.1 200 OK\r\n"
	    "Transfer-Encoding: gzip\r\nX-A: b\r\n"
	    "Transfer-Encoding: chunked\r\nDate: x\r\n\r\n";
	static struct http_msg	 m, again;
	char			 buf[1024];
	ssize_t			 n;

	CU_ASSERT_FATAL(http_parse_response(in, sizeof(in) - 1, 4096,
	    (struct pt_str){ "GET", 3 }, &m) == PARSE_OK);
	CU_ASSERT_FATAL(m.body == HTTP_BODY_CHUNKED);
	n = http_head_response(buf, sizeof(buf), &m, HTTP_HEAD_CHUNKED);
	CU_ASSERT_FATAL(n > 0);
	buf[n] = '\0';
	CHECKF(strcmp(buf, "HTTP/1.1 200 OK\r\nX-A: b\r\nDate: x\r\n"
	    "Transfer-Encoding: gzip, chunked\r\n\r\n") == 0, "wrote %s", buf);
	CU_ASSERT(http_parse_response(buf, (size_t)n, 4096,
	    (struct pt_str){ "GET", 3 }, &again) == PARSE_OK &&
	    again.body == HTTP_BODY_CHUNKED);
}

/* Parses response <in> (to a GET), rewrites it with <flags> into <buf>. */
static ssize_t
rewrite_response(const char *in, unsigned flags, char *buf, size_t cap,
    struct http_msg *m)
{
	ssize_t	 n;

	if (http_parse_response(in, strlen(in), 4096,
	    (struct pt_str){ "GET", 3 }, m) != PARSE_OK)
		return -2;
	n = http_head_response(buf, cap - 1, m, flags);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* RFC 9110 6.6.1: a Date the origin left out is added, in IMF-fixdate,
 * once; one the origin sent is kept and none added. RFC 9110 8.6: one
 * Content-Length for several equal ones, none in a 204. RFC 9110 7.6.3:
 * Via names the protocol the message came in. */
static void
test_http_head_response_date_length_via(void)
{
	static struct http_msg	 m;
	char			 buf[1024], *d;
	ssize_t			 n;

	n = rewrite_response("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "Content-Length: 2\r\n\r\n", HTTP_HEAD_VIA, buf, sizeof(buf), &m);
	CU_ASSERT_FATAL(n > 0);
	d = strstr(buf, "\r\nDate: ");
	CHECKF(d != NULL && strstr(d + 1, "\r\nDate: ") == NULL &&
	    strlen(d) > 39 && d[11] == ',' && memcmp(d + 33, " GMT\r\n", 6)
	    == 0, "one IMF-fixdate Date: %s", buf);
	CHECKF(strstr(buf, "Content-Length: 2\r\n") != NULL &&
	    strstr(strstr(buf, "Content-Length") + 1, "Content-Length") ==
	    NULL, "one Content-Length: %s", buf);
	CHECKF(strstr(buf, "\r\nVia: 1.1 portico\r\n") != NULL, "%s", buf);
	n = rewrite_response("HTTP/1.0 200 OK\r\nDate: Mon, 30 Nov 2026 "
	    "10:00:00 GMT\r\nContent-Length: 2\r\n\r\n", HTTP_HEAD_VIA, buf,
	    sizeof(buf), &m);
	CU_ASSERT_FATAL(n > 0);
	CHECKF(strstr(buf, "Date: Mon, 30 Nov 2026 10:00:00 GMT\r\n") != NULL
	    && strstr(strstr(buf, "Date: ") + 1, "Date: ") == NULL,
	    "the origin's Date only: %s", buf);
	CHECKF(strstr(buf, "\r\nVia: 1.0 portico\r\n") != NULL,
	    "Via of an HTTP/1.0 response: %s", buf);
	n = rewrite_response("HTTP/1.1 204 No Content\r\nContent-Length: 5"
	    "\r\nDate: x\r\n\r\n", 0, buf, sizeof(buf), &m);
	CU_ASSERT_FATAL(n > 0);
	CHECKF(strstr(buf, "Content-Length") == NULL,
	    "no Content-Length in a 204: %s", buf);
}

/* A coded body without chunked runs to the close: its Transfer-Encoding
 * goes on with it (HTTP_HEAD_TE), or the coded bytes would pass for the
 * content (found by an RFC audit: "gzip" was dropped). */
static void
test_http_head_response_close_coding_kept(void)
{
	static struct http_msg	 m, again;
	char			 buf[1024];
	ssize_t			 n;

	n = rewrite_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
	    "Date: x\r\n\r\n", HTTP_HEAD_TE | HTTP_HEAD_CLOSE, buf,
	    sizeof(buf), &m);
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT(m.body == HTTP_BODY_CLOSE && m.te_close);
	CHECKF(strstr(buf, "\r\nTransfer-Encoding: gzip\r\n") != NULL,
	    "wrote %s", buf);
	CU_ASSERT(http_parse_response(buf, (size_t)n, 4096,
	    (struct pt_str){ "GET", 3 }, &again) == PARSE_OK &&
	    again.body == HTTP_BODY_CLOSE && again.te_close);
}

/* Parses request <in>, rewrites it into <buf>. */
static ssize_t
rewrite_request(const char *in, char *buf, size_t cap, struct http_msg *m)
{
	struct http_uri	 u;
	ssize_t		 n;

	if (http_parse_request(in, strlen(in), 4096, m) != PARSE_OK ||
	    http_parse_absolute_uri(m->target, &u) != 0)
		return -2;
	n = http_head_request(buf, cap - 1, m, &u, HTTP_HEAD_VIA);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* RFC 9112 3.2.4: OPTIONS to an authority with no path becomes
 * "OPTIONS *"; "/" stays "/". RFC 9110 10.1.1: an HTTP/1.0 request's
 * Expect is not passed on; Via says 1.0. */
static void
test_http_head_request_options_expect_via(void)
{
	static struct http_msg	 m;
	char			 buf[1024];

	CU_ASSERT_FATAL(rewrite_request("OPTIONS http://o.test:81 HTTP/1.1"
	    "\r\nHost: o.test:81\r\n\r\n", buf, sizeof(buf), &m) > 0);
	CHECKF(strncmp(buf, "OPTIONS * HTTP/1.1\r\n", 20) == 0, "%s", buf);
	/* Methods are case-sensitive (RFC 9110 9.1): "options" is another
	 * method, whose empty path is "/" (found by t/fuzz/http_head). */
	CU_ASSERT_FATAL(rewrite_request("options http://o.test:81 HTTP/1.1"
	    "\r\nHost: o.test:81\r\n\r\n", buf, sizeof(buf), &m) > 0);
	CHECKF(strncmp(buf, "options / HTTP/1.1\r\n", 20) == 0, "%s", buf);
	CU_ASSERT_FATAL(rewrite_request("OPTIONS http://o.test/ HTTP/1.1"
	    "\r\nHost: o.test\r\n\r\n", buf, sizeof(buf), &m) > 0);
	CHECKF(strncmp(buf, "OPTIONS / HTTP/1.1\r\n", 20) == 0, "%s", buf);
	CU_ASSERT_FATAL(rewrite_request("GET http://o.test HTTP/1.1"
	    "\r\nHost: o.test\r\n\r\n", buf, sizeof(buf), &m) > 0);
	CHECKF(strncmp(buf, "GET / HTTP/1.1\r\n", 16) == 0, "%s", buf);
	CU_ASSERT_FATAL(rewrite_request("POST http://o.test/p HTTP/1.0\r\n"
	    "Expect: 100-continue\r\nContent-Length: 1\r\n\r\n", buf,
	    sizeof(buf), &m) > 0);
	CHECKF(strstr(buf, "Expect") == NULL && strstr(buf,
	    "\r\nVia: 1.0 portico\r\n") != NULL &&
	    strstr(buf, "Content-Length: 1\r\n") != NULL, "%s", buf);
	CU_ASSERT_FATAL(rewrite_request("POST http://o.test/p HTTP/1.1\r\n"
	    "Host: o.test\r\nExpect: 100-continue\r\nContent-Length: 1\r\n"
	    "\r\n", buf, sizeof(buf), &m) > 0);
	CHECKF(strstr(buf, "Expect: 100-continue\r\n") != NULL &&
	    strstr(buf, "\r\nVia: 1.1 portico\r\n") != NULL, "%s", buf);
}

/* Ours carry a Date too. */
static void
test_http_head_error_has_date(void)
{
	char	 buf[1024];
	ssize_t	 n;

	n = head_of(buf, sizeof(buf) - 1, 400, 0, NULL, 0);
	CU_ASSERT_FATAL(n > 0);
	buf[n] = '\0';
	CHECKF(strstr(buf, "\r\nDate: ") != NULL, "%s", buf);
}

void
register_http_head_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("http_head", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "error_quotes_realm",
	    test_http_head_error_quotes_realm);
	CU_add_test(s, "error_retry_after_only_when_set",
	    test_http_head_error_retry_after_only_when_set);
	CU_add_test(s, "response_keeps_every_coding",
	    test_http_head_response_keeps_every_coding);
	CU_add_test(s, "response_date_length_via",
	    test_http_head_response_date_length_via);
	CU_add_test(s, "response_close_coding_kept",
	    test_http_head_response_close_coding_kept);
	CU_add_test(s, "request_options_expect_via",
	    test_http_head_request_options_expect_via);
	CU_add_test(s, "error_has_date", test_http_head_error_has_date);
}
