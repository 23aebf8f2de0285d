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
	    "Transfer-Encoding: chunked\r\n\r\n";
	static struct http_msg	 m, again;
	char			 buf[1024];
	ssize_t			 n;

	CU_ASSERT_FATAL(http_parse_response(in, sizeof(in) - 1, 4096,
	    (struct pt_str){ "GET", 3 }, &m) == PARSE_OK);
	CU_ASSERT_FATAL(m.body == HTTP_BODY_CHUNKED);
	n = http_head_response(buf, sizeof(buf), &m, HTTP_HEAD_CHUNKED);
	CU_ASSERT_FATAL(n > 0);
	buf[n] = '\0';
	CHECKF(strcmp(buf, "HTTP/1.1 200 OK\r\nX-A: b\r\n"
	    "Transfer-Encoding: gzip, chunked\r\n\r\n") == 0, "wrote %s", buf);
	CU_ASSERT(http_parse_response(buf, (size_t)n, 4096,
	    (struct pt_str){ "GET", 3 }, &again) == PARSE_OK &&
	    again.body == HTTP_BODY_CHUNKED);
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
}
