/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HTTP/1.1 message syntax (RFC 9112) as a proxy must read it: request and
 * status lines, header fields, message framing (RFC 9112 6.3), request
 * targets and the chunked transfer coding. It only reads bytes the caller
 * owns and fills caller-owned structs: no I/O, no allocation, no logging,
 * no policy (which schemes, ports or hosts are allowed is the caller's).
 *
 * Anything two HTTP implementations could read two ways is refused, since a
 * proxy that forwards such a message is how request smuggling works. Where
 * the RFCs leave a choice, this file chooses:
 *
 * - Lines end in CRLF only. A bare LF ending a line and a CR anywhere but
 *   before LF are errors (RFC 9112 2.2 allows accepting bare LF; we don't).
 * - Up to HTTP_LEADING_CRLF_MAX empty lines before a request-line are
 *   skipped (RFC 9112 2.2) and counted in head_len; more are a 400. A
 *   response gets no such allowance.
 * - request-target: printable ASCII except '#' (RFC 9112 3.2 has no
 *   fragment). The RFC 3986 character set is not enforced beyond that,
 *   since clients send "|", "{" and friends unencoded and no framing
 *   depends on them. "*" only with OPTIONS; CONNECT needs an authority-form
 *   accepted by http_parse_authority; other methods need origin-form ("/")
 *   or absolute-form (scheme "://"); anything else is a 400.
 * - HTTP-version: "HTTP/1.0" and "HTTP/1.1"; a later 1.x is read as 1.1,
 *   the highest minor version we conform to (RFC 9110 2.5); another
 *   well-formed "HTTP/d.d" is a 505 for a request (502 for a response),
 *   anything else malformed (400).
 * - Field lines: token name, colon with no whitespace before it, value of
 *   VCHAR, obs-text, SP and HTAB only (every other control, DEL included,
 *   is refused rather than replaced by SP). A line starting with SP or HTAB
 *   (obs-fold, or whitespace right after the start-line) is refused.
 * - Content-Length: 1*DIGIT up to INT64_MAX. A list ("5, 5") is refused;
 *   repeated fields must carry the same number ("5" and "05" agree).
 *   Content-Length: 0 gives HTTP_BODY_NONE, so HTTP_BODY_LENGTH always
 *   means content_length > 0; content_length is 0 unless body is LENGTH.
 * - Transfer-Encoding (all fields read as one list): a request must say
 *   exactly "chunked" (case-insensitive). chunked repeated, not last, with
 *   parameters, or an empty list element or other syntax error: 400
 *   (stricter than RFC 9110 5.6.1 on empty elements, because a next hop
 *   might read "chunked," differently). Any other coding: 501. With
 *   Content-Length too, or in HTTP/1.0: 400. A response: Content-Length too,
 *   HTTP/1.0, bad syntax or chunked twice: 502; chunked last: CHUNKED;
 *   otherwise read until close.
 * - A CONNECT request with content (Content-Length > 0 or
 *   Transfer-Encoding) is a 400: RFC 9110 9.3.6 gives it no meaning, and
 *   those bytes would otherwise go down the tunnel.
 * - Host: more than one is a 400 in either version (RFC 9112 3.2), none a
 *   400 in HTTP/1.1. The value must be empty or uri-host [":" port] with
 *   the host a DNS-style name (letters, digits, "-", ".", "_") or a
 *   bracketed IPv6 address, and the port empty or 1-65535.
 * - Connection is a list of tokens (empty elements ignored); anything else
 *   there is a 400/502. Upgrade and Expect only have their interesting
 *   element looked for ("websocket" as protocol name, "100-continue" as a
 *   whole element); the rest of them is not validated since it frames
 *   nothing.
 * - Max-Forwards: 1*DIGIT, clamped to INT_MAX; invalid or repeated is -1,
 *   the same as absent.
 * - http_header_is_hop never calls Content-Length or Host hop-by-hop, even
 *   when Connection names them: dropping them would change the framing or
 *   the target of what the proxy forwards.
 * - A status-line may end right after the status code (no SP, no reason),
 *   which some origins send. The status code must be 100-599. Every
 *   response error, a too large head included, is a 502.
 * - A response to HEAD, a 1xx, 204 or 304, or a 2xx to CONNECT has no body
 *   and its framing fields are not examined (RFC 9112 6.3 rules 1 and 2
 *   come before the others).
 * - URIs: the host is a DNS-style name or "[IPv6]" (no zone, no IPvFuture,
 *   no percent-encoding, at most 255 bytes); userinfo, an empty host, a
 *   fragment and port 0 are refused. "http://h?q" (query with an empty
 *   path) gives the path "?q": the origin-form "/?q" is not a slice of the
 *   input, so the head writer adds the slash. The default port is 80 for http, 443 for https and 0 for
 *   any other scheme (callers refuse those anyway).
 * - Chunked: at most 16 hex digits; chunk extensions checked against the
 *   grammar (BWS, token, quoted-string), the size line bounded to
 *   CHUNK_LINE_MAX bytes; trailer fields follow the header field rules and
 *   <max_trailer> bounds their bytes, the final CRLF not counted.
 *
 * Heads are checked line by line as each line completes, so a bad
 * request-line is refused before the rest of the head arrives. Only the
 * first <max_head> bytes are ever looked at, which is what makes the
 * verdict the same however the bytes were split.
 *
 * Cost: one memchr per line plus one table lookup per byte, nothing
 * allocated, struct http_msg's header array not cleared (about 65 ns for
 * a 130-byte request on the development machine). The head parsers keep
 * no state between calls, so a head that arrives in pieces is read again
 * from its first byte on each call; heads are small and mostly arrive in
 * one read, and resuming would need state in struct http_msg that every
 * caller would then have to keep intact between calls (the proxy shares
 * one scratch struct). A caller that wants to bound the cost of a client
 * dripping a large head can skip the call until a new LF has arrived. The
 * chunked decoder is fully incremental.
 */
#include "config.h"

#include "worker/http_parse.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <string.h>

#define HTTP_LEADING_CRLF_MAX	4
#define CHUNK_LINE_MAX		4096	/* chunk-size and extensions */
#define CHUNK_DIGITS_MAX	16	/* 64 bits: no overflow possible */
#define HOST_MAX		255

/* Character classes, one bit each, for http_class[]. */
#define C_TCHAR		0x01	/* token (RFC 9110 5.6.2) */
#define C_VALUE		0x02	/* field-vchar, SP, HTAB */
#define C_TARGET	0x04	/* VCHAR but '#' */
#define C_HEX		0x08
#define C_HOST		0x10	/* ALPHA DIGIT "-" "." "_" */
#define C_SCHEME	0x20	/* ALPHA DIGIT "+" "-" "." */
#define C_DIGIT		0x40
#define C_QDTEXT	0x80	/* quoted-string content but quoted-pair */

static const uint8_t http_class[256] = {
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* 00 */
	0x00, 0x82, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* 08 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* 10 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* 18 */
	0x82, 0x87, 0x06, 0x83, 0x87, 0x87, 0x87, 0x87,	/* 20 */
	0x86, 0x86, 0x87, 0xa7, 0x86, 0xb7, 0xb7, 0x86,	/* 28 */
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,	/* 30 */
	0xff, 0xff, 0x86, 0x86, 0x86, 0x86, 0x86, 0x86,	/* 38 */
	0x86, 0xbf, 0xbf, 0xbf, 0xbf, 0xbf, 0xbf, 0xb7,	/* 40 */
	0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7,	/* 48 */
	0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7,	/* 50 */
	0xb7, 0xb7, 0xb7, 0x86, 0x06, 0x86, 0x87, 0x97,	/* 58 */
	0x87, 0xbf, 0xbf, 0xbf, 0xbf, 0xbf, 0xbf, 0xb7,	/* 60 */
	0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7,	/* 68 */
	0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7, 0xb7,	/* 70 */
	0xb7, 0xb7, 0xb7, 0x86, 0x87, 0x86, 0x87, 0x00,	/* 78 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* 80 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* 88 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* 90 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* 98 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* a0 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* a8 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* b0 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* b8 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* c0 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* c8 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* d0 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* d8 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* e0 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* e8 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* f0 */
	0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,	/* f8 */
};

/* Slices must never have a NULL pointer, even when empty. */
static const char	 http_empty[] = "";
static const char	 http_slash[] = "/";

/* Framing facts gathered field by field, judged once the head is whole. */
struct http_frame {
	bool		 cl_seen;
	bool		 cl_bad;
	const char	*cl_why;
	uint64_t	 cl;
	bool		 te_seen;
	bool		 te_bad;	/* syntax, or parameters on chunked */
	bool		 te_unknown;	/* a coding other than chunked */
	bool		 te_last_chunked;
	unsigned	 te_chunked;	/* times chunked was listed */
	unsigned	 mf_seen;
};

/* The chunked decoder's states; zero must be the start. */
enum http_chunk_state {
	CH_SIZE = 0,		/* hex digits */
	CH_EXT_WS,		/* BWS, a ';' must follow */
	CH_EXT_NAME_PRE,	/* after ';' */
	CH_EXT_NAME,
	CH_EXT_NAME_WS,		/* BWS after a name: '=' or ';' follows */
	CH_EXT_VAL_PRE,		/* after '=' */
	CH_EXT_TOKEN,
	CH_EXT_QUOTED,
	CH_EXT_QPAIR,		/* after a backslash in a quoted-string */
	CH_EXT_QEND,		/* after the closing quote */
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER,		/* start of a trailer line or final CRLF */
	CH_TRAILER_NAME,
	CH_TRAILER_VALUE,
	CH_TRAILER_LF,
	CH_END_LF,
	CH_DONE,
	CH_ERROR,
};

static inline bool
cls_is(char c, unsigned cls)
{
	return (http_class[(unsigned char)c] & cls) != 0;
}

static inline unsigned char
ascii_lower(char c)
{
	unsigned char	 u = (unsigned char)c;

	return (unsigned)(u - 'A') < 26u ? u | 0x20 : u;
}

/* ascii_lower of each byte of <x>: a byte whose top bit is clear and
 * that is at least 'A' (adding 0x3f carries into bit 7) but not above
 * 'Z' (adding 0x25 does not) gets 0x20 set. No carry crosses a byte:
 * each sum is of a byte below 0x80 and one below 0x40. */
static inline uint64_t
ascii_lower8(uint64_t x)
{
	const uint64_t	 low7 = x & 0x7f7f7f7f7f7f7f7fULL;
	const uint64_t	 ge_a = low7 + 0x3f3f3f3f3f3f3f3fULL;
	const uint64_t	 gt_z = low7 + 0x2525252525252525ULL;
	const uint64_t	 upper = ~x & (ge_a ^ gt_z) & 0x8080808080808080ULL;

	return x | (upper >> 2);
}

static inline bool
ows_is(char c)
{
	return c == ' ' || c == '\t';
}

static bool
slice_ieq(struct pt_str a, struct pt_str b)
{
	return a.len == b.len && http_mem_ieq(a.ptr, b.ptr, a.len);
}

/* Methods are case-sensitive (RFC 9110 9.1). */
static bool
method_is(struct pt_str method, const char *lit, size_t litlen)
{
	return method.len == litlen && memcmp(method.ptr, lit, litlen) == 0;
}

static struct pt_str
ows_trim(const char *p, size_t n)
{
	while (n > 0 && ows_is(p[0])) {
		p++;
		n--;
	}
	while (n > 0 && ows_is(p[n - 1]))
		n--;
	return (struct pt_str){ p, n };
}

/*
 * Walks a comma-separated list (RFC 9110 5.6.1) one element at a time,
 * OWS trimmed, empty elements included; a comma inside a quoted-string
 * does not split, so an Expect parameter cannot fake an element. Start
 * with *<pos> = 0; false once the list is exhausted.
 */
static bool
list_next(struct pt_str v, size_t *pos, struct pt_str *elem_out)
{
	size_t	 i = *pos, start = i, end;
	bool	 quoted = false;

	if (i > v.len)
		return false;
	for (; i < v.len; i++) {
		if (quoted) {
			if (v.ptr[i] == '\\')
				i++;
			else if (v.ptr[i] == '"')
				quoted = false;
		} else if (v.ptr[i] == '"')
			quoted = true;
		else if (v.ptr[i] == ',')
			break;
	}
	end = i < v.len ? i : v.len;
	*elem_out = ows_trim(v.ptr + start, end - start);
	*pos = i + 1;
	return true;
}

static int
msg_fail(struct http_msg *m, int status, const char *why)
{
	m->error_status = status;
	m->error = why;
	return PARSE_BAD;
}

static void
msg_reset(struct http_msg *m)
{
	struct pt_str	 none = { http_empty, 0 };

	m->method = none;
	m->target = none;
	m->target_form = HTTP_TARGET_ORIGIN;
	m->status = 0;
	m->reason = none;
	m->version = 0;
	m->nheaders = 0;
	m->head_len = 0;
	m->body = HTTP_BODY_NONE;
	m->content_length = 0;
	m->conn_flags = 0;
	m->conn_names = false;
	m->upgrade_websocket = false;
	m->expect_continue = false;
	m->te_close = m->te_coded = false;
	m->host_count = 0;
	m->proxy_auth_count = 0;
	m->host = none;
	m->max_forwards = -1;
	m->error_status = 0;
	m->error = NULL;
}

/*
 * host [":" port] where host is a DNS-style name or "[IPv6]". <u>->host
 * and host_is_ipv6 are set; *<port_out> is 0 when the port is absent or
 * empty (allowed unless <port_required>). 0 or -1.
 */
static int
hostport_parse(const char *p, size_t n, bool port_required,
    struct http_uri *u, unsigned *port_out)
{
	char		 a6[INET6_ADDRSTRLEN];
	struct in6_addr	 in6;
	const char	*rb;
	size_t		 i, hs, he;
	unsigned	 port = 0;

	*port_out = 0;
	u->host_is_ipv6 = false;
	if (n > 0 && p[0] == '[') {
		rb = memchr(p, ']', n);
		if (rb == NULL)
			return -1;
		hs = 1;
		he = (size_t)(rb - p);
		if (he == hs || he - hs >= sizeof(a6))
			return -1;
		/* inet_pton reads a C string: an embedded NUL would cut the
		 * address short and let trailing bytes through. */
		for (i = hs; i < he; i++)
			if (!cls_is(p[i], C_HEX) && p[i] != ':' && p[i] != '.')
				return -1;
		memcpy(a6, p + hs, he - hs);
		a6[he - hs] = '\0';
		if (inet_pton(AF_INET6, a6, &in6) != 1)
			return -1;
		u->host_is_ipv6 = true;
		i = he + 1;
	} else {
		for (i = 0; i < n && cls_is(p[i], C_HOST); i++)
			;
		hs = 0;
		he = i;
		if (he == 0 || he > HOST_MAX)
			return -1;
	}
	u->host = (struct pt_str){ p + hs, he - hs };
	if (i == n)
		return port_required ? -1 : 0;
	if (p[i] != ':')
		return -1;
	if (++i == n)
		return port_required ? -1 : 0;
	for (; i < n; i++) {
		if (!cls_is(p[i], C_DIGIT))
			return -1;
		port = port * 10 + (unsigned)(p[i] - '0');
		if (port > 65535)
			return -1;
	}
	if (port == 0)
		return -1;
	*port_out = port;
	return 0;
}

/* Length of a leading scheme followed by "://", or 0. */
static size_t
scheme_len(struct pt_str t)
{
	size_t	 i;

	if (t.len == 0 || !cls_is(t.ptr[0], C_SCHEME) ||
	    cls_is(t.ptr[0], C_DIGIT) || t.ptr[0] == '+' ||
	    t.ptr[0] == '-' || t.ptr[0] == '.')
		return 0;
	for (i = 1; i < t.len && cls_is(t.ptr[i], C_SCHEME); i++)
		;
	if (t.len - i < 3 || memcmp(t.ptr + i, "://", 3) != 0)
		return 0;
	return i;
}

int
http_parse_absolute_uri(struct pt_str target, struct http_uri *out)
{
	const char	*p = target.ptr;
	size_t		 n = target.len, s, a, e, i;
	unsigned	 port;

	if ((s = scheme_len(target)) == 0)
		return -1;
	a = s + 3;
	for (e = a; e < n && p[e] != '/' && p[e] != '?' && p[e] != '#'; e++)
		;
	/* '@' (userinfo) is not a host character, so it fails here. */
	if (hostport_parse(p + a, e - a, false, out, &port) != 0)
		return -1;
	out->scheme = (struct pt_str){ p, s };
	out->authority = (struct pt_str){ p + a, e - a };
	if (port == 0) {
		if (http_str_ieq(out->scheme, "http"))
			port = 80;
		else if (http_str_ieq(out->scheme, "https"))
			port = 443;
	}
	out->port = (uint16_t)port;
	out->path_empty = e == n;
	if (e == n) {
		out->path = (struct pt_str){ http_slash, 1 };
		return 0;
	}
	if (p[e] != '/' && p[e] != '?')
		return -1;
	for (i = e; i < n; i++)
		if (!cls_is(p[i], C_TARGET))
			return -1;
	out->path = (struct pt_str){ p + e, n - e };
	return 0;
}

int
http_parse_authority(struct pt_str target, struct http_uri *out)
{
	unsigned	 port;

	if (hostport_parse(target.ptr, target.len, true, out, &port) != 0)
		return -1;
	out->scheme = (struct pt_str){ http_empty, 0 };
	out->path = (struct pt_str){ http_empty, 0 };
	out->path_empty = true;
	out->authority = target;
	out->port = (uint16_t)port;
	return 0;
}

/* 11 or 10; 0 for another well-formed version; -1 when malformed. HTTP/1.2
 * and later minors are 11: RFC 9110 2.5 has a recipient process a higher
 * minor version as the highest it conforms to. */
static int
version_parse(const char *p, size_t n)
{
	if (n != 8 || memcmp(p, "HTTP/", 5) != 0 || !cls_is(p[5], C_DIGIT) ||
	    p[6] != '.' || !cls_is(p[7], C_DIGIT))
		return -1;
	if (p[5] == '1' && p[7] >= '1')
		return 11;
	if (p[5] == '1' && p[7] == '0')
		return 10;
	return 0;
}

static int
target_classify(struct http_msg *m)
{
	struct http_uri	 u;

	if (method_is(m->method, "CONNECT", 7)) {
		if (http_parse_authority(m->target, &u) != 0)
			return msg_fail(m, 400, "CONNECT needs host:port");
		m->target_form = HTTP_TARGET_AUTHORITY;
	} else if (m->target.len == 1 && m->target.ptr[0] == '*') {
		if (!method_is(m->method, "OPTIONS", 7))
			return msg_fail(m, 400, "asterisk-form needs OPTIONS");
		m->target_form = HTTP_TARGET_ASTERISK;
	} else if (m->target.ptr[0] == '/')
		m->target_form = HTTP_TARGET_ORIGIN;
	else if (scheme_len(m->target) > 0)
		m->target_form = HTTP_TARGET_ABSOLUTE;
	else
		return msg_fail(m, 400, "request-target form not allowed");
	return PARSE_OK;
}

/* <p>[0..<n>): the request-line without its CRLF. */
static int
reqline_parse(const char *p, size_t n, struct http_msg *m)
{
	size_t	 i = 0, t;
	int	 v;

	while (i < n && cls_is(p[i], C_TCHAR))
		i++;
	if (i == 0 || i == n || p[i] != ' ')
		return msg_fail(m, 400, "malformed method");
	m->method = (struct pt_str){ p, i };
	t = ++i;
	while (i < n && cls_is(p[i], C_TARGET))
		i++;
	if (i == t || i == n || p[i] != ' ')
		return msg_fail(m, 400, "malformed request-target");
	m->target = (struct pt_str){ p + t, i - t };
	i++;
	v = version_parse(p + i, n - i);
	if (v < 0)
		return msg_fail(m, 400, "malformed HTTP-version");
	if (v == 0)
		return msg_fail(m, 505, "HTTP version not supported");
	m->version = v;
	return target_classify(m);
}

/* <p>[0..<n>): the status-line without its CRLF. */
static int
statusline_parse(const char *p, size_t n, struct http_msg *m)
{
	size_t	 i;
	int	 v;

	if (n < 12 || p[8] != ' ' || !cls_is(p[9], C_DIGIT) ||
	    !cls_is(p[10], C_DIGIT) || !cls_is(p[11], C_DIGIT))
		return msg_fail(m, 502, "malformed status-line");
	if ((v = version_parse(p, 8)) < 0)
		return msg_fail(m, 502, "malformed HTTP-version");
	if (v == 0)
		return msg_fail(m, 502, "HTTP version not supported");
	m->version = v;
	m->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (m->status < 100 || m->status > 599)
		return msg_fail(m, 502, "status code out of range");
	if (n == 12)
		return PARSE_OK;
	if (p[12] != ' ')
		return msg_fail(m, 502, "malformed status-line");
	for (i = 13; i < n; i++)
		if (!cls_is(p[i], C_VALUE))
			return msg_fail(m, 502, "control character in reason");
	m->reason = (struct pt_str){ p + 13, n - 13 };
	return PARSE_OK;
}

static const char *
value_why(char c)
{
	if (c == '\r')
		return "bare CR";
	if (c == '\0')
		return "NUL in field value";
	return "control character in field value";
}

/* <p>[0..<n>), n > 0: one field line without its CRLF. */
static int
field_parse(const char *p, size_t n, struct http_header *h, struct http_msg *m)
{
	size_t	 i = 0, v;

	/* RFC 9112 5.2 and 2.2: obs-fold and whitespace-preceded lines are
	 * rejected, never unfolded, so no next hop can see another field. */
	if (ows_is(p[0]))
		return msg_fail(m, 400, "obs-fold");
	while (i < n && cls_is(p[i], C_TCHAR))
		i++;
	if (i == n)
		return msg_fail(m, 400, "field line without colon");
	if (p[i] != ':') {
		if (ows_is(p[i]))
			return msg_fail(m, 400, "whitespace before colon");
		if (p[i] == '\r')
			return msg_fail(m, 400, "bare CR");
		return msg_fail(m, 400, "invalid field name");
	}
	if (i == 0)
		return msg_fail(m, 400, "empty field name");
	for (v = i + 1; v < n; v++)
		if (!cls_is(p[v], C_VALUE))
			return msg_fail(m, 400, value_why(p[v]));
	h->name = (struct pt_str){ p, i };
	h->value = ows_trim(p + i + 1, n - i - 1);
	return PARSE_OK;
}

static void
cl_note(struct pt_str v, struct http_frame *f)
{
	uint64_t	 n = 0;
	size_t		 i;
	unsigned	 d;

	if (f->cl_bad)
		return;
	if (v.len == 0) {
		f->cl_bad = true;
		f->cl_why = "empty Content-Length";
	}
	for (i = 0; i < v.len && !f->cl_bad; i++) {
		if (!cls_is(v.ptr[i], C_DIGIT)) {
			f->cl_bad = true;
			f->cl_why = "invalid Content-Length";
			break;
		}
		d = (unsigned)(v.ptr[i] - '0');
		if (n > ((uint64_t)INT64_MAX - d) / 10) {
			f->cl_bad = true;
			f->cl_why = "Content-Length too large";
			break;
		}
		n = n * 10 + d;
	}
	if (!f->cl_bad && f->cl_seen && n != f->cl) {
		f->cl_bad = true;
		f->cl_why = "conflicting Content-Length";
	}
	f->cl_seen = true;
	f->cl = n;
}

static void
te_note(struct pt_str v, struct http_frame *f)
{
	struct pt_str	 e, name;
	size_t		 pos = 0, i, j;
	bool		 quoted = false;

	f->te_seen = true;
	/* A quoted string that never closes (a parameter's value) would,
	 * once the writer joins the fields into one list, swallow what
	 * follows it, chunked included: the next hop would frame the body
	 * otherwise than we do (found by t/fuzz/http_head). */
	for (i = 0; i < v.len; i++) {
		if (quoted && v.ptr[i] == '\\')
			i++;
		else if (v.ptr[i] == '"')
			quoted = !quoted;
	}
	if (quoted)
		f->te_bad = true;
	while (list_next(v, &pos, &e)) {
		for (i = 0; i < e.len && cls_is(e.ptr[i], C_TCHAR); i++)
			;
		for (j = i; j < e.len && ows_is(e.ptr[j]); j++)
			;
		if (i == 0 || (j < e.len && e.ptr[j] != ';')) {
			f->te_bad = true;
			continue;
		}
		name = (struct pt_str){ e.ptr, i };
		if (http_str_ieq(name, "chunked")) {
			/* chunked takes no parameters (RFC 9112 7.1). */
			if (j < e.len)
				f->te_bad = true;
			f->te_chunked++;
			f->te_last_chunked = true;
		} else {
			f->te_unknown = true;
			f->te_last_chunked = false;
		}
	}
}

static int
conn_note(struct pt_str v, struct http_msg *m)
{
	struct pt_str	 e;
	size_t		 pos = 0, i;

	while (list_next(v, &pos, &e)) {
		if (e.len == 0)
			continue;
		for (i = 0; i < e.len; i++)
			if (!cls_is(e.ptr[i], C_TCHAR))
				return msg_fail(m, 400, "malformed Connection");
		if (http_str_ieq(e, "close"))
			m->conn_flags |= HTTP_CONN_CLOSE;
		else if (http_str_ieq(e, "keep-alive"))
			m->conn_flags |= HTTP_CONN_KEEPALIVE;
		else if (http_str_ieq(e, "upgrade"))
			m->conn_flags |= HTTP_CONN_UPGRADE;
		else
			m->conn_names = true;
	}
	return PARSE_OK;
}

static void
upgrade_note(struct pt_str v, struct http_msg *m)
{
	struct pt_str	 e;
	size_t		 pos = 0, i;

	while (list_next(v, &pos, &e)) {
		/* protocol-name ["/" protocol-version] */
		for (i = 0; i < e.len && e.ptr[i] != '/'; i++)
			;
		if (http_str_ieq((struct pt_str){ e.ptr, i }, "websocket"))
			m->upgrade_websocket = true;
	}
}

static void
expect_note(struct pt_str v, struct http_msg *m)
{
	struct pt_str	 e;
	size_t		 pos = 0;

	while (list_next(v, &pos, &e))
		if (http_str_ieq(e, "100-continue"))
			m->expect_continue = true;
}

static void
maxfwd_note(struct pt_str v, struct http_msg *m, struct http_frame *f)
{
	size_t	 i;
	int	 n = 0;

	/* A singleton field sent twice means nothing reliable. */
	if (++f->mf_seen > 1 || v.len == 0) {
		m->max_forwards = -1;
		return;
	}
	for (i = 0; i < v.len; i++) {
		if (!cls_is(v.ptr[i], C_DIGIT)) {
			m->max_forwards = -1;
			return;
		}
		if (n > (INT_MAX - (v.ptr[i] - '0')) / 10)
			n = INT_MAX;
		else
			n = n * 10 + (v.ptr[i] - '0');
	}
	m->max_forwards = n;
}

/* Records what the proxy acts on from one field; PARSE_OK or PARSE_BAD. */
static int
field_note(struct http_msg *m, const struct http_header *h,
    struct http_frame *f)
{
	switch (h->name.len) {
	case 4:
		if (http_str_ieq(h->name, "host")) {
			if (m->host_count++ == 0)
				m->host = h->value;
		}
		break;
	case 6:
		if (http_str_ieq(h->name, "expect"))
			expect_note(h->value, m);
		break;
	case 7:
		if (http_str_ieq(h->name, "upgrade"))
			upgrade_note(h->value, m);
		break;
	case 10:
		if (http_str_ieq(h->name, "connection"))
			return conn_note(h->value, m);
		break;
	case 12:
		if (http_str_ieq(h->name, "max-forwards"))
			maxfwd_note(h->value, m, f);
		break;
	case 14:
		if (http_str_ieq(h->name, "content-length"))
			cl_note(h->value, f);
		break;
	case 17:
		if (http_str_ieq(h->name, "transfer-encoding"))
			te_note(h->value, f);
		break;
	case 19:
		if (http_str_ieq(h->name, "proxy-authorization"))
			m->proxy_auth_count++;
		break;
	}
	return PARSE_OK;
}

/*
 * The head up to its empty line: start-line, fields, head_len. Framing is
 * left to the callers. Error statuses are those of a request; the response
 * parser turns every one into 502.
 */
static int
head_parse(const char *buf, size_t len, size_t max_head, bool request,
    struct http_msg *m, struct http_frame *f)
{
	const char	*lf, *line;
	size_t		 limit = len < max_head ? len : max_head;
	size_t		 pos = 0, eol, n;
	unsigned	 skipped = 0;
	bool		 started = false;
	int		 rc;

	for (;;) {
		/* Only the first <max_head> bytes may hold the head, so a
		 * too large head is refused the same way however it was
		 * split. */
		lf = pos < limit ? memchr(buf + pos, '\n', limit - pos) : NULL;
		if (lf == NULL && len < max_head)
			return PARSE_AGAIN;
		/* RFC 9112 3: a request-target too long is 414, a method
		 * longer than any we know 501; the rest of a head 431. */
		if (lf == NULL && request && !started)
			return memchr(buf + pos, ' ', limit - pos) == NULL ?
			    msg_fail(m, 501, "method too long") :
			    msg_fail(m, 414, "request-target too long");
		if (lf == NULL)
			return msg_fail(m, 431, "head too large");
		eol = (size_t)(lf - buf);
		if (eol == pos || buf[eol - 1] != '\r')
			return msg_fail(m, 400, "bare LF");
		line = buf + pos;
		n = eol - 1 - pos;
		pos = eol + 1;
		if (!started) {
			if (n == 0 && request &&
			    skipped < HTTP_LEADING_CRLF_MAX) {
				skipped++;
				continue;
			}
			rc = request ? reqline_parse(line, n, m) :
			    statusline_parse(line, n, m);
			if (rc != PARSE_OK)
				return rc;
			started = true;
			continue;
		}
		if (n == 0) {
			m->head_len = pos;
			return PARSE_OK;
		}
		if (m->nheaders == HTTP_MAX_HEADERS)
			return msg_fail(m, 431, "too many header fields");
		rc = field_parse(line, n, &m->headers[m->nheaders], m);
		if (rc != PARSE_OK)
			return rc;
		rc = field_note(m, &m->headers[m->nheaders], f);
		if (rc != PARSE_OK)
			return rc;
		m->nheaders++;
	}
}

static int
host_check(struct pt_str v)
{
	struct http_uri	 u;
	unsigned	 port;

	if (v.len == 0)
		return 0;
	return hostport_parse(v.ptr, v.len, false, &u, &port);
}

/* Why Transfer-Encoding makes the framing unusable for either kind of
 * message, or NULL. */
static const char *
te_judge(const struct http_msg *m, const struct http_frame *f)
{
	/* RFC 9112 6.1: faulty framing, even with a Content-Length. */
	if (m->version == 10)
		return "Transfer-Encoding in HTTP/1.0";
	if (f->cl_seen)
		return "Content-Length with Transfer-Encoding";
	if (f->te_bad)
		return "malformed Transfer-Encoding";
	if (f->te_chunked > 1)
		return "chunked applied twice";
	return NULL;
}

static int
req_finish(struct http_msg *m, const struct http_frame *f)
{
	const char	*why;

	if (m->host_count > 1)
		return msg_fail(m, 400, "more than one Host");
	/* Which one a front proxy checked and which one we would is
	 * anybody's guess: neither. */
	if (m->proxy_auth_count > 1)
		return msg_fail(m, 400, "more than one Proxy-Authorization");
	if (m->host_count == 0 && m->version == 11)
		return msg_fail(m, 400, "missing Host");
	if (host_check(m->host) != 0)
		return msg_fail(m, 400, "invalid Host");
	if (f->te_seen) {
		if ((why = te_judge(m, f)) != NULL)
			return msg_fail(m, 400, why);
		/* RFC 9112 6.3 rule 4: chunked before another coding leaves
		 * the length unknowable. A list without chunked is only an
		 * unknown coding, the 501 of RFC 9112 6.1. */
		if (f->te_chunked == 1 && !f->te_last_chunked)
			return msg_fail(m, 400,
			    "chunked is not the last coding");
		if (f->te_unknown)
			return msg_fail(m, 501, "unsupported transfer coding");
		m->body = HTTP_BODY_CHUNKED;
	} else if (f->cl_bad)
		return msg_fail(m, 400, f->cl_why);
	else if (f->cl_seen && f->cl > 0) {
		m->body = HTTP_BODY_LENGTH;
		m->content_length = f->cl;
	}
	if (m->target_form == HTTP_TARGET_AUTHORITY &&
	    m->body != HTTP_BODY_NONE)
		return msg_fail(m, 400, "CONNECT with content");
	return PARSE_OK;
}

static int
resp_finish(struct http_msg *m, const struct http_frame *f,
    struct pt_str req_method)
{
	const char	*why;

	if (method_is(req_method, "HEAD", 4) || m->status < 200 ||
	    m->status == 204 || m->status == 304)
		return PARSE_OK;
	if (method_is(req_method, "CONNECT", 7) && m->status < 300)
		return PARSE_OK;
	if (f->te_seen) {
		if ((why = te_judge(m, f)) != NULL)
			return msg_fail(m, 502, why);
		m->body = f->te_last_chunked ? HTTP_BODY_CHUNKED :
		    HTTP_BODY_CLOSE;
		m->te_close = !f->te_last_chunked;
		m->te_coded = f->te_unknown;
	} else if (f->cl_bad)
		return msg_fail(m, 502, f->cl_why);
	else if (f->cl_seen) {
		if (f->cl > 0) {
			m->body = HTTP_BODY_LENGTH;
			m->content_length = f->cl;
		}
	} else
		m->body = HTTP_BODY_CLOSE;
	return PARSE_OK;
}

int
http_parse_request(const char *buf, size_t len, size_t max_head,
    struct http_msg *m)
{
	struct http_frame	 f;
	int			 rc;

	msg_reset(m);
	memset(&f, 0, sizeof(f));
	rc = head_parse(buf, len, max_head, true, m, &f);
	if (rc != PARSE_OK)
		return rc;
	return req_finish(m, &f);
}

int
http_parse_response(const char *buf, size_t len, size_t max_head,
    struct pt_str req_method, struct http_msg *m)
{
	struct http_frame	 f;
	int			 rc;

	msg_reset(m);
	memset(&f, 0, sizeof(f));
	rc = head_parse(buf, len, max_head, false, m, &f);
	if (rc == PARSE_OK)
		rc = resp_finish(m, &f, req_method);
	/* Whatever is wrong with an origin's answer, the client gets a 502
	 * (RFC 9112 5.2, 6.3). */
	if (rc == PARSE_BAD)
		m->error_status = 502;
	return rc;
}

static inline unsigned
hex_val(char c)
{
	if (c <= '9')
		return (unsigned)(c - '0');
	return (unsigned)(ascii_lower(c) - 'a' + 10);
}

/* One byte of a chunk-size line, its extensions or its CRLF. */
static int
chunk_line_byte(struct http_chunked *ch, char c)
{
	/* The bound is on the line's content; its CRLF is not counted. */
	if (ch->state != CH_SIZE_LF && c != '\r' &&
	    ++ch->line_len > CHUNK_LINE_MAX)
		return -1;
	switch (ch->state) {
	case CH_SIZE:
		/* line_len counts the digits so far (and <c> unless CR),
		 * since nothing else comes before them. */
		if (cls_is(c, C_HEX)) {
			if (ch->line_len > CHUNK_DIGITS_MAX)
				return -1;
			ch->remaining = ch->remaining << 4 | hex_val(c);
			return 0;
		}
		if (ch->line_len == (c == '\r' ? 0u : 1u))
			return -1;
		if (c == '\r')
			ch->state = CH_SIZE_LF;
		else if (c == ';')
			ch->state = CH_EXT_NAME_PRE;
		else if (ows_is(c))
			ch->state = CH_EXT_WS;
		else
			return -1;
		return 0;
	case CH_EXT_WS:
		if (c == ';')
			ch->state = CH_EXT_NAME_PRE;
		else if (!ows_is(c))
			return -1;
		return 0;
	case CH_EXT_NAME_PRE:
		if (cls_is(c, C_TCHAR))
			ch->state = CH_EXT_NAME;
		else if (!ows_is(c))
			return -1;
		return 0;
	case CH_EXT_NAME:
		if (cls_is(c, C_TCHAR))
			return 0;
		if (c == '=')
			ch->state = CH_EXT_VAL_PRE;
		else if (c == ';')
			ch->state = CH_EXT_NAME_PRE;
		else if (c == '\r')
			ch->state = CH_SIZE_LF;
		else if (ows_is(c))
			ch->state = CH_EXT_NAME_WS;
		else
			return -1;
		return 0;
	case CH_EXT_NAME_WS:
		if (c == '=')
			ch->state = CH_EXT_VAL_PRE;
		else if (c == ';')
			ch->state = CH_EXT_NAME_PRE;
		else if (!ows_is(c))
			return -1;
		return 0;
	case CH_EXT_VAL_PRE:
		if (c == '"')
			ch->state = CH_EXT_QUOTED;
		else if (cls_is(c, C_TCHAR))
			ch->state = CH_EXT_TOKEN;
		else if (!ows_is(c))
			return -1;
		return 0;
	case CH_EXT_TOKEN:
	case CH_EXT_QEND:
		if (ch->state == CH_EXT_TOKEN && cls_is(c, C_TCHAR))
			return 0;
		if (c == ';')
			ch->state = CH_EXT_NAME_PRE;
		else if (c == '\r')
			ch->state = CH_SIZE_LF;
		else if (ows_is(c))
			ch->state = CH_EXT_WS;
		else
			return -1;
		return 0;
	case CH_EXT_QUOTED:
		if (c == '"')
			ch->state = CH_EXT_QEND;
		else if (c == '\\')
			ch->state = CH_EXT_QPAIR;
		else if (!cls_is(c, C_QDTEXT))
			return -1;
		return 0;
	case CH_EXT_QPAIR:
		if (!cls_is(c, C_VALUE))
			return -1;
		ch->state = CH_EXT_QUOTED;
		return 0;
	case CH_SIZE_LF:
		if (c != '\n')
			return -1;
		ch->line_len = 0;
		if (ch->remaining == 0) {
			ch->trailer_len = 0;
			ch->state = CH_TRAILER;
		} else
			ch->state = CH_DATA;
		return 0;
	}
	return -1;
}

/* One byte after the data of a chunk, or of the trailer section. */
static int
chunk_tail_byte(struct http_chunked *ch, char c, size_t max_trailer)
{
	/* The final CRLF is not counted, so max_trailer 0 means "no
	 * trailer fields" rather than "no end". */
	if (ch->state >= CH_TRAILER && ch->state <= CH_TRAILER_LF &&
	    !(ch->state == CH_TRAILER && c == '\r') &&
	    ++ch->trailer_len > max_trailer)
		return -1;
	switch (ch->state) {
	case CH_DATA_CR:
		if (c != '\r')
			return -1;
		ch->state = CH_DATA_LF;
		return 0;
	case CH_DATA_LF:
		if (c != '\n')
			return -1;
		ch->remaining = 0;
		ch->line_len = 0;
		ch->state = CH_SIZE;
		return 0;
	case CH_TRAILER:
		if (c == '\r')
			ch->state = CH_END_LF;
		else if (cls_is(c, C_TCHAR))
			ch->state = CH_TRAILER_NAME;
		else
			return -1;
		return 0;
	case CH_TRAILER_NAME:
		if (c == ':')
			ch->state = CH_TRAILER_VALUE;
		else if (!cls_is(c, C_TCHAR))
			return -1;
		return 0;
	case CH_TRAILER_VALUE:
		if (c == '\r')
			ch->state = CH_TRAILER_LF;
		else if (!cls_is(c, C_VALUE))
			return -1;
		return 0;
	case CH_TRAILER_LF:
		if (c != '\n')
			return -1;
		ch->state = CH_TRAILER;
		return 0;
	case CH_END_LF:
		if (c != '\n')
			return -1;
		ch->state = CH_DONE;
		ch->done = true;
		return 0;
	}
	return -1;
}

/*
 * "Consumed" is every byte the decoder has accounted for: framing (size
 * lines, extensions, CRLFs, trailers) and data alike. A call returns
 * framing bytes followed by at most one data span, which then ends the
 * consumed bytes (data_off + data_len == consumed), so a pass-through
 * caller forwards buf[0..consumed) and a de-chunking one forwards
 * buf[data_off..data_off + data_len). Framing is consumed as soon as it is
 * seen, even half a size line, so it is never offered twice. The bytes
 * after the final CRLF belong to the next message and are not consumed.
 * After an error every call fails.
 */
ssize_t
http_chunked_feed(struct http_chunked *ch, const char *buf, size_t len,
    size_t max_trailer, size_t *data_off_out, size_t *data_len_out)
{
	size_t	 i = 0, take;
	int	 rc;

	*data_off_out = 0;
	*data_len_out = 0;
	while (i < len) {
		if (ch->state == CH_DATA) {
			take = len - i;
			if (take > ch->remaining)
				take = (size_t)ch->remaining;
			*data_off_out = i;
			*data_len_out = take;
			ch->remaining -= take;
			if (ch->remaining == 0)
				ch->state = CH_DATA_CR;
			return (ssize_t)(i + take);
		}
		if (ch->state == CH_DONE)
			break;
		if (ch->state == CH_ERROR)
			return -1;
		if (ch->state <= CH_SIZE_LF)
			rc = chunk_line_byte(ch, buf[i]);
		else
			rc = chunk_tail_byte(ch, buf[i], max_trailer);
		if (rc != 0) {
			ch->state = CH_ERROR;
			return -1;
		}
		i++;
	}
	return ch->state == CH_ERROR ? -1 : (ssize_t)i;
}

int
http_parse_basic(struct pt_str value, char *out, size_t cap,
    size_t *len_out)
{
	static const char	 b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const char		*p = value.ptr, *end = value.ptr + value.len;
	const char		*q;
	unsigned		 acc = 0, bits = 0;
	size_t			 n = 0, nchars = 0, npad = 0;

	*len_out = 0;
	if (value.len < 5 || !http_mem_ieq(p, "basic", 5) ||
	    (value.len > 5 && p[5] != ' '))
		return 1;
	for (p += 5; p < end && *p == ' '; p++)
		;
	for (; p < end && (q = memchr(b64, *p, 64)) != NULL; p++, nchars++) {
		acc = acc << 6 | (unsigned)(q - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n == cap)
				return -1;
			out[n++] = (char)(acc >> bits & 0xff);
		}
	}
	for (; p < end && *p == '=' && npad < 2; p++)
		npad++;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	/* One token68 and nothing after it (no second credential, no junk
	 * after the padding); padded to a multiple of 4 when padded at
	 * all, and never one character short of a byte. */
	if (p != end || nchars == 0 || nchars % 4 == 1 ||
	    (npad > 0 && (nchars + npad) % 4 != 0))
		return -1;
	*len_out = n;
	return 0;
}

const struct http_header *
http_header_find(const struct http_msg *m, const char *name)
{
	unsigned	 i;

	for (i = 0; i < m->nheaders; i++)
		if (http_str_ieq(m->headers[i].name, name))
			return &m->headers[i];
	return NULL;
}

bool
http_header_is_hop(const struct http_msg *m, struct pt_str name)
{
#define HOP(s)	{ s, sizeof(s) - 1 }
	static const struct pt_str fixed[] = {
		HOP("connection"), HOP("keep-alive"), HOP("proxy-connection"),
		HOP("proxy-authorization"), HOP("proxy-authenticate"),
		HOP("te"), HOP("trailer"), HOP("transfer-encoding"),
		HOP("upgrade"),
	};
#undef HOP
	struct pt_str	 e;
	size_t		 i, pos;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (slice_ieq(name, fixed[i]))
			return true;
	/* "Connection: Content-Length" must not make the proxy forward a
	 * body without its length, nor "Connection: Host" a request without
	 * its target. */
	if (http_str_ieq(name, "content-length") || http_str_ieq(name, "host"))
		return false;
	/* Most messages name no field in Connection (conn_note saw every
	 * token): no scan of every header for each one copied. */
	if (!m->conn_names)
		return (m->conn_flags & HTTP_CONN_CLOSE) &&
		    http_str_ieq(name, "close");
	for (i = 0; i < m->nheaders; i++) {
		if (!http_str_ieq(m->headers[i].name, "connection"))
			continue;
		pos = 0;
		while (list_next(m->headers[i].value, &pos, &e))
			if (e.len > 0 && slice_ieq(e, name))
				return true;
	}
	return false;
}

bool
http_mem_ieq(const char *a, const char *b, size_t n)
{
	uint64_t	 x, y;
	size_t		 i = 0;

	/* Eight bytes a step, each word folded to lower case as a whole
	 * (ascii_lower8): field names compared per request are mostly
	 * longer than eight bytes ("content-length", "transfer-encoding"). */
	for (; n - i >= 8; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y && ascii_lower8(x) != ascii_lower8(y))
			return false;
	}
	for (; i < n; i++)
		if (ascii_lower(a[i]) != ascii_lower(b[i]))
			return false;
	return true;
}
