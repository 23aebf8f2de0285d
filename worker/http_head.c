/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Head writers. Every head portico sends is built here in one pass into a
 * caller's buffer, from a parsed message and a few flags. What is dropped
 * (hop-by-hop fields, the client's Host) and what is added (Via, framing,
 * Connection) is decided by RFC 9110 7.6 and RFC 9112 6-9; the callers
 * decide only which flags apply.
 */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "worker/http_head.h"

/* RFC 9110 7.6.3: the protocol of the message as received, and our
 * name (http.via_pseudonym: http_head_set_via). */
static char	 http_via_10[300] = "Via: 1.0 portico\r\n";
static char	 http_via_11[300] = "Via: 1.1 portico\r\n";

void
http_head_set_via(const char *pseudonym)
{
	snprintf(http_via_10, sizeof(http_via_10), "Via: 1.0 %s\r\n",
	    pseudonym);
	snprintf(http_via_11, sizeof(http_via_11), "Via: 1.1 %s\r\n",
	    pseudonym);
}

struct head_out {
	char	*p;
	size_t	 len, cap;
	bool	 overflow;
};

static void
head_put(struct head_out *o, const char *s, size_t n)
{
	if (o->overflow || n > o->cap - o->len) {
		o->overflow = true;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void
head_puts(struct head_out *o, const char *s)
{
	head_put(o, s, strlen(s));
}

static void
head_str(struct head_out *o, struct pt_str s)
{
	head_put(o, s.ptr, s.len);
}

/* <v> in decimal: every forwarded response with a length writes one,
 * and vsnprintf cost 840 instructions of a 1 KiB GET's 11,000
 * (callgrind). */
static void
head_u64(struct head_out *o, uint64_t v)
{
	char	 d[20];
	size_t	 i = sizeof(d);

	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	head_put(o, d + i, sizeof(d) - i);
}

static void __attribute__((format(printf, 2, 3)))
head_printf(struct head_out *o, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->cap - o->len) {
		o->overflow = true;
		return;
	}
	o->len += (size_t)n;
}

static ssize_t
head_done(struct head_out *o)
{
	head_put(o, "\r\n", 2);
	return o->overflow ? -1 : (ssize_t)o->len;
}

/* The fields every forwarded head ends with: connection management,
 * framing, Via. A chunked body passed through keeps the sender's coding
 * list ("gzip, chunked"): only the framing is ours to redo, not the
 * content's codings. The list is every Transfer-Encoding field of the
 * message, in order (the parser reads them as one list, RFC 9110 5.3),
 * so "gzip" then "chunked" on two lines goes on as "gzip, chunked":
 * forwarding the first line alone would tell the next hop the body ends
 * at the close while the chunks and the connection go on. */
static void
head_trailer_fields(struct head_out *o, const struct http_msg *m,
    unsigned flags)
{
	unsigned	 i, n = 0;
	size_t		 dlen;
	const char	*date;

	if (flags & HTTP_HEAD_UPGRADE)
		head_puts(o, "Connection: upgrade\r\n");
	else if (flags & HTTP_HEAD_CLOSE)
		head_puts(o, "Connection: close\r\n");
	if (flags & (HTTP_HEAD_CHUNKED | HTTP_HEAD_TE)) {
		for (i = 0; m != NULL && i < m->nheaders; i++) {
			if (!http_str_ieq(m->headers[i].name,
			    "transfer-encoding"))
				continue;
			head_puts(o, n++ == 0 ? "Transfer-Encoding: " : ", ");
			head_str(o, m->headers[i].value);
		}
		if (n > 0)
			head_puts(o, "\r\n");
		else if (flags & HTTP_HEAD_CHUNKED)
			head_puts(o, "Transfer-Encoding: chunked\r\n");
	}
	if (flags & HTTP_HEAD_DATE) {
		date = http_date_field(&dlen);
		head_put(o, date, dlen);
	}
	if (flags & HTTP_HEAD_VIA)
		head_puts(o, m != NULL && m->version == 10 ? http_via_10 :
		    http_via_11);
}

const char *
http_date_field(size_t *len_out)
{
	static const char *const days[7] = {
		"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"
	};
	static const char *const months[12] = {
		"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug",
		"Sep", "Oct", "Nov", "Dec"
	};
	static char	 field[48];
	static size_t	 len;
	static time_t	 made = -1;
	time_t		 now = time(NULL);
	struct tm	 tm;
	int		 n;

	if (now != made && gmtime_r(&now, &tm) != NULL) {
		n = snprintf(field, sizeof(field), "Date: %s, %02d %s %04d "
		    "%02d:%02d:%02d GMT\r\n", days[tm.tm_wday % 7], tm.tm_mday,
		    months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour,
		    tm.tm_min, tm.tm_sec);
		len = n > 0 && (size_t)n < sizeof(field) ? (size_t)n : 0;
		made = now;
	}
	*len_out = len;
	return field;
}

/* "Content_Length" is a valid field name, and some servers read it as
 * Content-Length: dropped, so a smuggled length cannot reach them. */
static bool
head_is_framing_lookalike(struct pt_str name)
{
	char	 norm[32];
	size_t	 i;

	if (name.len >= sizeof(norm) || memchr(name.ptr, '_', name.len) == NULL)
		return false;
	for (i = 0; i < name.len; i++)
		norm[i] = name.ptr[i] == '_' ? '-' : name.ptr[i];
	name.ptr = norm;
	return http_str_ieq(name, "content-length") ||
	    http_str_ieq(name, "transfer-encoding") ||
	    http_str_ieq(name, "host") || http_str_ieq(name, "connection");
}

/* What head_copy_fields leaves out besides hop-by-hop fields and Host. */
#define HEAD_SKIP_LENGTH	0x01	/* every Content-Length (1xx, 204) */
#define HEAD_SKIP_EXPECT	0x02	/* Expect (an HTTP/1.0 request) */

/* Copies the end-to-end fields of <m>, minus Host and, unless
 * upgrading, Upgrade; Content-Length once (the parser made sure every
 * copy agrees: RFC 9110 8.6 lets one stand for them). Returns whether
 * <m> has a Date field. */
static bool
head_copy_fields(struct head_out *o, const struct http_msg *m,
    unsigned flags, bool rewrite_max_forwards, unsigned skip)
{
	const struct http_header	*h;
	unsigned			 i;
	bool				 length = false, date = false;
	char				 c0;

	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		/* Length and first letter first: most fields are none of
		 * these, and "Host" has Date's length. */
		c0 = (char)(h->name.ptr[0] | 0x20);
		if (h->name.len == 14 && c0 == 'c' &&
		    http_str_ieq(h->name, "content-length")) {
			if (length || (skip & HEAD_SKIP_LENGTH))
				continue;
			length = true;
			/* As parsed, not as spelt ("005", "+5" never reach
			 * a parser that might read them otherwise). */
			if (m->body == HTTP_BODY_LENGTH) {
				head_puts(o, "Content-Length: ");
				head_u64(o, m->content_length);
				head_puts(o, "\r\n");
				continue;
			}
		} else if (h->name.len == 4 && c0 == 'd' &&
		    http_str_ieq(h->name, "date"))
			date = true;
		else if ((skip & HEAD_SKIP_EXPECT) && h->name.len == 6 &&
		    http_str_ieq(h->name, "expect"))
			continue;
		if ((flags & HTTP_HEAD_UPGRADE) &&
		    http_str_ieq(h->name, "upgrade")) {
			head_str(o, h->name);
			head_puts(o, ": ");
			head_str(o, h->value);
			head_puts(o, "\r\n");
			continue;
		}
		if (http_header_is_hop(m, h->name) ||
		    http_str_ieq(h->name, "host") ||
		    head_is_framing_lookalike(h->name))
			continue;
		if (rewrite_max_forwards &&
		    http_str_ieq(h->name, "max-forwards")) {
			head_printf(o, "Max-Forwards: %d\r\n",
			    m->max_forwards - 1);
			continue;
		}
		head_str(o, h->name);
		head_puts(o, ": ");
		head_str(o, h->value);
		head_puts(o, "\r\n");
	}
	return date;
}

ssize_t
http_head_request(char *out, size_t cap, const struct http_msg *m,
    const struct http_uri *u, unsigned flags)
{
	struct head_out	 o = { out, 0, cap, false };
	bool		 mf;

	/* RFC 9110 7.6.2: a proxy decrements Max-Forwards on TRACE and
	 * OPTIONS (a zero is answered before we get here). */
	mf = m->max_forwards > 0 && (http_method_is(m->method, "TRACE") ||
	    http_method_is(m->method, "OPTIONS"));
	head_str(&o, m->method);
	/* RFC 9112 3.2.4: OPTIONS to an authority with no path asks about
	 * the server itself: "*" to the origin. */
	if (u->path_empty && m->method.len == 7 &&
	    memcmp(m->method.ptr, "OPTIONS", 7) == 0)	/* case matters */
		head_puts(&o, " *");
	else {
		head_puts(&o, u->path.ptr[0] == '?' ? " /" : " ");
		head_str(&o, u->path);
	}
	head_puts(&o, " HTTP/1.1\r\nHost: ");
	head_str(&o, u->authority);
	head_puts(&o, "\r\n");
	/* RFC 9110 10.1.1: an HTTP/1.0 request's 100-continue is ignored,
	 * so the origin does not wait on it either. */
	head_copy_fields(&o, m, flags, mf,
	    m->version == 10 ? HEAD_SKIP_EXPECT : 0);
	head_trailer_fields(&o, m, flags & ~(unsigned)HTTP_HEAD_DATE);
	return head_done(&o);
}

ssize_t
http_head_response(char *out, size_t cap, const struct http_msg *m,
    unsigned flags)
{
	struct head_out	 o = { out, 0, cap, false };
	char		 line[] = "HTTP/1.1 000 ";

	/* Every forwarded response starts here: three digits by hand, not
	 * vsnprintf (a tenth of a 1 KiB GET's user time). The parser took
	 * exactly three digits. */
	line[9] = (char)('0' + m->status / 100 % 10);
	line[10] = (char)('0' + m->status / 10 % 10);
	line[11] = (char)('0' + m->status % 10);
	head_put(&o, line, sizeof(line) - 1);
	head_str(&o, m->reason);
	head_puts(&o, "\r\n");
	/* RFC 9110 8.6: no Content-Length in a 1xx or 204. RFC 9110 6.6.1:
	 * a proxy adds the Date an origin left out. */
	if (!head_copy_fields(&o, m, flags, false, m->status < 200 ||
	    m->status == 204 ? HEAD_SKIP_LENGTH : 0))
		flags |= HTTP_HEAD_DATE;
	head_trailer_fields(&o, m, flags);
	return head_done(&o);
}

const char *
http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

/* Longest realm sent: a challenge is one short header line. */
#define HTTP_REALM_MAX	128

/* Proxy-Authenticate: Basic realm="<realm>", charset="UTF-8", the
 * realm as a quoted-string (RFC 9110 5.6.4): quotes and backslashes
 * escaped, control characters (a CR or LF would end the field) dropped.
 * The charset parameter (RFC 7617 2.1) tells clients to send user and
 * password as UTF-8 rather than guess a legacy encoding. */
static void
head_challenge(struct head_out *o, const char *realm)
{
	char	 q[2 * HTTP_REALM_MAX];
	size_t	 n = 0, i;

	for (i = 0; realm[i] != '\0' && i < HTTP_REALM_MAX; i++) {
		if ((unsigned char)realm[i] < 0x20 || realm[i] == 0x7f)
			continue;
		if (realm[i] == '"' || realm[i] == '\\')
			q[n++] = '\\';
		q[n++] = realm[i];
	}
	head_puts(o, "Proxy-Authenticate: Basic realm=\"");
	head_put(o, q, n);
	head_puts(o, "\", charset=\"UTF-8\"\r\n");
}

ssize_t
http_head_error(char *out, size_t cap, int status, const char *detail,
    unsigned flags, const char *realm, uint32_t retry_after)
{
	struct head_out	 o = { out, 0, cap, false };
	char		 body[256];
	int		 n;

	n = snprintf(body, sizeof(body), "%d %s%s%s\n", status,
	    http_reason(status), detail ? ": " : "", detail ? detail : "");
	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)sizeof(body) - 1;
	head_printf(&o, "HTTP/1.1 %d %s\r\n", status, http_reason(status));
	flags |= HTTP_HEAD_DATE;
	head_puts(&o, "Content-Type: text/plain\r\n");
	head_printf(&o, "Content-Length: %d\r\n", n);
	if (flags & HTTP_HEAD_AUTH)
		head_challenge(&o, realm != NULL ? realm : "portico");
	if (retry_after > 0)
		head_printf(&o, "Retry-After: %u\r\n", (unsigned)retry_after);
	head_trailer_fields(&o, NULL, flags & ~(unsigned)HTTP_HEAD_CHUNKED);
	head_put(&o, "\r\n", 2);
	/* A response to HEAD has the length of the body it would have had
	 * and no body (RFC 9110 9.3.2). */
	if (!(flags & HTTP_HEAD_NOBODY))
		head_put(&o, body, (size_t)n);
	return o.overflow ? -1 : (ssize_t)o.len;
}
