/* SPDX-License-Identifier: BSD-2-Clause */
/* Checks shared by the HTTP head targets (see http_msg.h). */
#include "config.h"

#include "t/fuzz/http_msg.h"

#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"

int
fuzz_http_parse(const char *buf, size_t len, size_t max_head,
    struct pt_str method, struct http_msg *m)
{
	if (method.ptr == NULL)
		return http_parse_request(buf, len, max_head, m);
	return http_parse_response(buf, len, max_head, method, m);
}

/* Whether <s> lies inside <buf>[0..<len>) (or is the parser's own empty
 * or "/" constant, which has no offset). */
static bool
slice_in(const char *buf, size_t len, struct pt_str s)
{
	FUZZ_CHECK(s.ptr != NULL, "NULL slice");
	if (s.len == 0)
		return true;
	return s.ptr >= buf && s.ptr + s.len <= buf + len;
}

static bool
slice_same(const char *a, struct pt_str sa, const char *b, struct pt_str sb)
{
	if (sa.len != sb.len || memcmp(sa.ptr, sb.ptr, sa.len) != 0)
		return false;
	/* Same offset too, unless empty (any pointer will do then). */
	return sa.len == 0 || sa.ptr - a == sb.ptr - b;
}

void
fuzz_http_same(const char *a, const struct http_msg *ma, int ra,
    const char *b, const struct http_msg *mb, int rb, const char *what)
{
	unsigned	 i;

	FUZZ_CHECK(ra == rb, "%s: rc %d then %d", what, ra, rb);
	if (ra == PARSE_BAD) {
		FUZZ_CHECK(ma->error_status == mb->error_status &&
		    strcmp(ma->error, mb->error) == 0, "%s: %d %s then %d %s",
		    what, ma->error_status, ma->error, mb->error_status,
		    mb->error);
		return;
	}
	if (ra != PARSE_OK)
		return;
	FUZZ_CHECK(ma->head_len == mb->head_len && ma->nheaders ==
	    mb->nheaders && ma->version == mb->version && ma->status ==
	    mb->status && ma->target_form == mb->target_form && ma->body ==
	    mb->body && ma->content_length == mb->content_length &&
	    ma->conn_flags == mb->conn_flags && ma->upgrade_websocket ==
	    mb->upgrade_websocket && ma->expect_continue ==
	    mb->expect_continue && ma->host_count == mb->host_count &&
	    ma->max_forwards == mb->max_forwards, "%s: messages differ", what);
	FUZZ_CHECK(slice_same(a, ma->method, b, mb->method) &&
	    slice_same(a, ma->target, b, mb->target) &&
	    slice_same(a, ma->reason, b, mb->reason) &&
	    slice_same(a, ma->host, b, mb->host), "%s: slices differ", what);
	for (i = 0; i < ma->nheaders; i++)
		FUZZ_CHECK(slice_same(a, ma->headers[i].name, b,
		    mb->headers[i].name) && slice_same(a, ma->headers[i].value,
		    b, mb->headers[i].value), "%s: field %u differs", what, i);
}

static bool
is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') || (c != 0 && strchr("!#$%&'*+-.^_`|~",
	    c) != NULL);
}

static bool
is_token(struct pt_str s)
{
	size_t	 i;

	if (s.len == 0)
		return false;
	for (i = 0; i < s.len; i++)
		if (!is_tchar((unsigned char)s.ptr[i]))
			return false;
	return true;
}

/* field-value after OWS trimming: no CR, LF, NUL or other control but
 * HTAB, no leading or trailing whitespace. */
static bool
is_value(struct pt_str s)
{
	size_t	 i;

	for (i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.ptr[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return s.len == 0 || (s.ptr[0] != ' ' && s.ptr[0] != '\t' &&
	    s.ptr[s.len - 1] != ' ' && s.ptr[s.len - 1] != '\t');
}

void
fuzz_http_sane(const char *buf, size_t len, int rc, const struct http_msg *m,
    bool request)
{
	struct http_uri	 u;
	unsigned	 i;

	FUZZ_CHECK(rc == PARSE_OK || rc == PARSE_AGAIN || rc == PARSE_BAD,
	    "rc %d", rc);
	if (rc == PARSE_BAD) {
		FUZZ_CHECK(m->error != NULL && m->error[0] != '\0',
		    "PARSE_BAD without a reason");
		if (request)
			FUZZ_CHECK(m->error_status == 400 || m->error_status ==
			    414 || m->error_status == 431 || m->error_status ==
			    501 || m->error_status == 505,
			    "request error status %d", m->error_status);
		else
			FUZZ_CHECK(m->error_status == 502,
			    "response error status %d", m->error_status);
		return;
	}
	if (rc != PARSE_OK)
		return;
	FUZZ_CHECK(m->head_len >= 4 && m->head_len <= len &&
	    memcmp(buf + m->head_len - 4, "\r\n\r\n", 4) == 0,
	    "head_len %zu of %zu does not end in CRLFCRLF", m->head_len, len);
	FUZZ_CHECK(m->version == 10 || m->version == 11, "version %d",
	    m->version);
	FUZZ_CHECK(m->nheaders <= HTTP_MAX_HEADERS, "%u fields", m->nheaders);
	FUZZ_CHECK(slice_in(buf, m->head_len, m->method) &&
	    slice_in(buf, m->head_len, m->target) &&
	    slice_in(buf, m->head_len, m->reason) &&
	    slice_in(buf, m->head_len, m->host), "slice outside the head");
	for (i = 0; i < m->nheaders; i++) {
		FUZZ_CHECK(slice_in(buf, m->head_len, m->headers[i].name) &&
		    slice_in(buf, m->head_len, m->headers[i].value),
		    "field %u outside the head", i);
		FUZZ_CHECK(is_token(m->headers[i].name), "field %u name", i);
		FUZZ_CHECK(is_value(m->headers[i].value), "field %u value", i);
	}
	FUZZ_CHECK((m->body == HTTP_BODY_LENGTH) == (m->content_length > 0),
	    "body %d with content_length %llu", (int)m->body,
	    (unsigned long long)m->content_length);
	FUZZ_CHECK(m->content_length <= INT64_MAX, "content_length");
	if (request) {
		FUZZ_CHECK(is_token(m->method), "method not a token");
		FUZZ_CHECK(m->target.len > 0, "empty target");
		FUZZ_CHECK(m->body != HTTP_BODY_CLOSE, "request read to close");
		FUZZ_CHECK(m->host_count <= 1 && (m->version == 10 ||
		    m->host_count == 1), "%d Host fields in HTTP/1.%d",
		    m->host_count, m->version - 10);
		if (m->target_form == HTTP_TARGET_ABSOLUTE &&
		    http_parse_absolute_uri(m->target, &u) == 0) {
			FUZZ_CHECK(u.host.len > 0 && slice_in(m->target.ptr,
			    m->target.len, u.host) && slice_in(m->target.ptr,
			    m->target.len, u.authority), "URI host");
			FUZZ_CHECK(u.path.len > 0 && (u.path.ptr[0] == '/' ||
			    u.path.ptr[0] == '?'), "URI path");
			if (http_str_ieq(u.scheme, "http"))
				FUZZ_CHECK(u.port != 0, "http URI port 0");
		}
		if (m->target_form == HTTP_TARGET_AUTHORITY) {
			FUZZ_CHECK(http_parse_authority(m->target, &u) == 0 &&
			    u.port != 0 && u.host.len > 0, "CONNECT target");
			FUZZ_CHECK(m->body == HTTP_BODY_NONE,
			    "CONNECT with a body");
		}
	} else {
		FUZZ_CHECK(m->status >= 100 && m->status <= 599, "status %d",
		    m->status);
	}
}

void
fuzz_http_prefixes(const uint8_t *data, size_t len, size_t max_head,
    struct pt_str method)
{
	static struct http_msg	 whole, part;
	char			*full, *p;
	size_t			 k, step;
	int			 rc, rp;

	full = fuzz_dup(data, len, false);
	rc = fuzz_http_parse(full, len, max_head, method, &whole);
	fuzz_http_sane(full, len, rc, &whole, method.ptr == NULL);
	/* Every prefix of a short input; of a long one, those ending at or
	 * next to a CR or LF (where a verdict can change) and a sample of
	 * the rest: the parser reads a head again from its start on each
	 * call, so all of them would cost the square of the length. */
	step = len <= 256 ? 1 : len / 64;
	for (k = 0; k < len; k++) {
		if (k % step != 0 && !(data[k] == '\r' || data[k] == '\n' ||
		    (k > 0 && (data[k - 1] == '\r' || data[k - 1] == '\n'))))
			continue;
		p = fuzz_dup(data, k, false);
		rp = fuzz_http_parse(p, k, max_head, method, &part);
		fuzz_http_sane(p, k, rp, &part, method.ptr == NULL);
		if (rc == PARSE_OK && k >= whole.head_len)
			fuzz_http_same(full, &whole, rc, p, &part, rp,
			    "prefix holding the head");
		else if (rp != PARSE_AGAIN)
			fuzz_http_same(full, &whole, rc, p, &part, rp,
			    "prefix");
		free(p);
	}
	if (rc == PARSE_OK) {
		/* The head alone, and the head with max_head at its size. */
		p = fuzz_dup(data, whole.head_len, false);
		rp = fuzz_http_parse(p, whole.head_len, whole.head_len, method,
		    &part);
		fuzz_http_same(full, &whole, rc, p, &part, rp,
		    "max_head == head_len");
		rp = fuzz_http_parse(full, len, whole.head_len - 1, method,
		    &part);
		FUZZ_CHECK(rp == PARSE_BAD && part.error_status ==
		    (method.ptr == NULL ? 431 : 502), "max_head one short: rc "
		    "%d status %d", rp, part.error_status);
		free(p);
	}
	free(full);
}
