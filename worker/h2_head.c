/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Heads between HTTP/2 and the HTTP/1.1 code that serves each stream.
 *
 * A request's HEADERS become one HTTP/1.1 request head, written as the
 * fields arrive, which the stream then hands to the HTTP/1.1 code as if
 * a client had sent it: the same parser, the same checks, the same
 * phases judge it. This is where a request's form is decided, once: the
 * ACL, auth, the resolver and the origin all read what this file wrote,
 * never HTTP/2's fields themselves. nghttp2 has already refused what RFC
 * 9113 8.2 forbids (connection-specific fields, CR, LF or NUL in a value,
 * upper case in a name, pseudo-fields out of place), so what is written
 * here cannot smuggle a line.
 *
 *   :method GET, :scheme http, :authority a:80, :path /p
 *       -> "GET http://a:80/p HTTP/1.1", "Host: a:80"
 *   :method CONNECT, :authority a:443
 *       -> "CONNECT a:443 HTTP/1.1", "Host: a:443"
 *   :method CONNECT, :protocol websocket, :scheme http, :path /p (RFC 8441)
 *       -> "GET http://a:80/p HTTP/1.1" with the fields of an RFC 6455
 *          upgrade (a Sec-WebSocket-Key of our own; the origin's 101
 *          becomes the client's 200)
 *
 * A body without content-length is sent chunked; whether there is one is
 * known from the HEADERS' END_STREAM, or else from the next frame.
 *
 * A response head from the HTTP/1.1 code (the origin's, rewritten for a
 * client, or the proxy's own answer) becomes HEADERS without the
 * connection-specific fields.
 */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "worker/h2_conn.h"
#include "common/conf_types.h"
#include "worker/buf.h"
#include "worker/http_parse.h"

enum { PS_METHOD, PS_SCHEME, PS_AUTHORITY, PS_PATH, PS_PROTOCOL, PS_N };

static const char *const h2_pseudo_names[PS_N] = {
	":method", ":scheme", ":authority", ":path", ":protocol"
};

static struct pt_str
h2_rc(nghttp2_rcbuf *rc)
{
	nghttp2_vec	 v = nghttp2_rcbuf_get_buf(rc);
	struct pt_str	 s = { (const char *)v.base, v.len };

	return s;
}

static bool
h2_is(struct pt_str s, const char *lit)
{
	size_t	 n = strlen(lit);

	return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

/* ---- the request head ----------------------------------------------- */

/* Appends <n> bytes to the head, in a large buffer once a small one is
 * full; a head past max_header_size marks the request too large (it is
 * refused at its end, after nghttp2 read the whole block). */
static void
h2_put(struct h2_stream *st, const char *s, size_t n)
{
	size_t	 max = h2_conf()->http.max_header_size;
	char	*big;

	/* An absent pseudo-field is { NULL, 0 }: nothing to copy, and
	 * memcpy may not be handed a null pointer (found by t/fuzz/h2_head). */
	if (st->rh.too_large || n == 0)
		return;
	if (st->head_len + n > max) {
		st->rh.too_large = true;
		return;
	}
	if (st->head == NULL && (st->head = buf_get(BUF_SMALL)) == NULL) {
		st->rh.too_large = true;
		return;
	}
	if (st->head_len + n > buf_size(st->head)) {
		if (buf_size(st->head) >= buf_class_size(BUF_LARGE) ||
		    (big = buf_get(BUF_LARGE)) == NULL) {
			st->rh.too_large = true;
			return;
		}
		memcpy(big, st->head, st->head_len);
		buf_put(st->head);
		st->head = big;
	}
	memcpy(st->head + st->head_len, s, n);
	st->head_len += (uint32_t)n;
}

static void
h2_puts(struct h2_stream *st, const char *s)
{
	h2_put(st, s, strlen(s));
}

static void
h2_put_str(struct h2_stream *st, struct pt_str s)
{
	h2_put(st, s.ptr, s.len);
}

/* A Sec-WebSocket-Key for the origin (RFC 6455 4.1: 16 bytes, base64).
 * The proxy is the client of that handshake, and the key only has to be
 * new per request: a counter and the stream, not a secret. */
static void
h2_put_ws_key(struct h2_stream *st)
{
	static const char	 b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	static uint64_t		 count;
	unsigned char		 raw[18];
	char			 out[25];
	uint64_t		 a = ++count * 0x9e3779b97f4a7c15ULL;
	uint64_t		 b = ((uint64_t)st->id << 32 ^ a) *
				    0xbf58476d1ce4e5b9ULL;
	int			 i, o = 0;

	memcpy(raw, &a, 8);
	memcpy(raw + 8, &b, 8);
	raw[16] = raw[17] = 0;
	for (i = 0; i < 18; i += 3) {
		out[o++] = b64[raw[i] >> 2];
		out[o++] = b64[(raw[i] & 3) << 4 | raw[i + 1] >> 4];
		out[o++] = b64[(raw[i + 1] & 15) << 2 | raw[i + 2] >> 6];
		out[o++] = b64[raw[i + 2] & 63];
	}
	/* 16 bytes are 22 characters and "==". */
	out[22] = out[23] = '=';
	out[24] = '\0';
	h2_puts(st, "Sec-WebSocket-Key: ");
	h2_puts(st, out);
	h2_puts(st, "\r\n");
}

/* Host, from :authority, and where it is kept for h2_host_same. */
static void
h2_put_host(struct h2_stream *st, struct pt_str authority)
{
	st->rh.has_host = true;
	h2_puts(st, "Host: ");
	st->rh.host_off = st->head_len;
	h2_put_str(st, authority);
	st->rh.host_len = (uint32_t)authority.len;
	h2_puts(st, "\r\n");
}

/* <a> without ":<port>" when that is <port> (80 or 443). */
static struct pt_str
h2_host_trim(struct pt_str a, uint16_t port)
{
	const char	*tail = port == 443 ? ":443" : ":80";
	size_t		 n = strlen(tail);

	if (port != 0 && a.len > n && memcmp(a.ptr + a.len - n, tail, n) == 0)
		a.len -= n;
	return a;
}

/* Whether a Host field <v> names the entity :authority does (RFC 9113
 * 8.3.1): the same, but for case and the scheme's default port. */
static bool
h2_host_same(const struct h2_stream *st, struct pt_str v)
{
	const struct h2_reqhead	*rh = &st->rh;
	struct pt_str		 a = { st->head + rh->host_off, rh->host_len };

	a = h2_host_trim(a, rh->default_port);
	v = h2_host_trim(v, rh->default_port);
	return a.len == v.len && strncasecmp(a.ptr, v.ptr, a.len) == 0;
}

static void
h2_pseudo_drop(struct h2_reqhead *rh)
{
	int	 i;

	for (i = 0; i < PS_N; i++) {
		if (rh->pseudo[i] != NULL)
			nghttp2_rcbuf_decref(rh->pseudo[i]);
		rh->pseudo[i] = NULL;
	}
}

/* The request line and Host, from the pseudo-fields (all of them have
 * arrived: they come first, RFC 9113 8.3). -1 for a request this proxy
 * cannot serve as HTTP/1.1 (an extended CONNECT but for websocket). */
static int
h2_line(struct h2_stream *st)
{
	struct h2_reqhead	*rh = &st->rh;
	struct pt_str		 ps[PS_N] = { { NULL, 0 } };
	int			 i;

	rh->line_done = true;
	for (i = 0; i < PS_N; i++)
		if (rh->pseudo[i] != NULL)
			ps[i] = h2_rc(rh->pseudo[i]);
	st->is_head = h2_is(ps[PS_METHOD], "HEAD");
	if (h2_is(ps[PS_METHOD], "CONNECT")) {
		st->tunnel = true;
		if (ps[PS_PROTOCOL].ptr == NULL) {
			h2_puts(st, "CONNECT ");
			h2_put_str(st, ps[PS_AUTHORITY]);
			h2_puts(st, " HTTP/1.1\r\n");
			h2_put_host(st, ps[PS_AUTHORITY]);
			goto out;
		}
		/* RFC 8441: a protocol the origin switches to. */
		if (!h2_is(ps[PS_PROTOCOL], "websocket")) {
			h2_pseudo_drop(rh);
			return -1;
		}
		st->ext_connect = true;
		h2_puts(st, "GET ");
	} else {
		h2_put_str(st, ps[PS_METHOD]);
		h2_puts(st, " ");
	}
	/* :path is an absolute path, or "*" for OPTIONS (RFC 9113 8.3.1).
	 * nghttp2 checks it for http and https only; anything else (an
	 * absolute URI, which the HTTP/1.1 code would take over
	 * :authority) makes the request malformed, whatever :scheme. */
	if (!(ps[PS_PATH].len > 0 && ps[PS_PATH].ptr[0] == '/') &&
	    !(h2_is(ps[PS_PATH], "*") && h2_is(ps[PS_METHOD], "OPTIONS")))
		rh->malformed = true;
	/* The absolute form a forward proxy reads; "*" goes as it is, and
	 * the HTTP/1.1 code answers it. */
	if (ps[PS_AUTHORITY].ptr != NULL && ps[PS_PATH].len > 0 &&
	    ps[PS_PATH].ptr[0] == '/') {
		h2_put_str(st, ps[PS_SCHEME]);
		h2_puts(st, "://");
		h2_put_str(st, ps[PS_AUTHORITY]);
	}
	h2_put_str(st, ps[PS_PATH]);
	h2_puts(st, " HTTP/1.1\r\n");
	if (ps[PS_AUTHORITY].ptr != NULL) {
		rh->default_port = h2_is(ps[PS_SCHEME], "https") ? 443 :
		    h2_is(ps[PS_SCHEME], "http") ? 80 : 0;
		h2_put_host(st, ps[PS_AUTHORITY]);
	}
	if (st->ext_connect) {
		h2_puts(st, "Connection: Upgrade\r\nUpgrade: websocket\r\n");
		h2_put_ws_key(st);
	}
out:
	h2_pseudo_drop(rh);
	return 0;
}

/* Cookie fields are joined into one (RFC 9113 8.2.3), in a buffer of
 * their own until the head's end. */
static void
h2_cookie(struct h2_stream *st, struct pt_str v)
{
	struct h2_reqhead	*rh = &st->rh;
	size_t			 sep = rh->cookie_len > 0 ? 2 : 0;

	if (rh->cookie == NULL && (rh->cookie = buf_get(BUF_SMALL)) == NULL) {
		rh->too_large = true;
		return;
	}
	if (rh->cookie_len + sep + v.len > buf_size(rh->cookie)) {
		rh->too_large = true;
		return;
	}
	memcpy(rh->cookie + rh->cookie_len, "; ", sep);
	memcpy(rh->cookie + rh->cookie_len + sep, v.ptr, v.len);
	rh->cookie_len += (uint32_t)(sep + v.len);
}

int
h2_head_field(struct h2_stream *st, nghttp2_rcbuf *name, nghttp2_rcbuf *value)
{
	struct h2_reqhead	*rh = &st->rh;
	struct pt_str		 n = h2_rc(name), v = h2_rc(value);
	int			 i;

	/* Past max_header_size the stream is reset at the next field:
	 * nghttp2 then decodes the rest of the block without handing (and
	 * checking) each field, so an HPACK bomb (one large table entry
	 * referenced thousands of times) costs the decoding only. Handed
	 * on, each reference costs nghttp2's check of its 4,000 bytes: 89
	 * ms a bomb against 20 (h2_attacks.py). A head whose last field
	 * crosses the limit is answered 431. */
	if (rh->too_large)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;

	if (n.len > 0 && n.ptr[0] == ':') {
		for (i = 0; i < PS_N; i++)
			if (h2_is(n, h2_pseudo_names[i]))
				break;
		/* nghttp2 refuses unknown and repeated ones; a late one
		 * (after a regular field) too. */
		if (i == PS_N || rh->line_done || rh->pseudo[i] != NULL)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		nghttp2_rcbuf_incref(value);
		rh->pseudo[i] = value;
		return 0;
	}
	if (!rh->line_done && h2_line(st) < 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	/* Host comes from :authority when there is one, and a Host that
	 * names another makes the request malformed (RFC 9113 8.3.1): one
	 * request, one name, whoever reads it; TE ("trailers" at most,
	 * nghttp2 checks) is hop-by-hop here. */
	if (h2_is(n, "host") && rh->has_host) {
		if (!rh->too_large && !h2_host_same(st, v))
			rh->malformed = true;
		return 0;
	}
	if (h2_is(n, "te"))
		return 0;
	if (h2_is(n, "cookie")) {
		h2_cookie(st, v);
		return 0;
	}
	if (h2_is(n, "content-length"))
		rh->has_length = true;
	else if (h2_is(n, "expect") && h2_is(v, "100-continue"))
		rh->expect_continue = true;
	h2_put_str(st, n);
	h2_puts(st, ": ");
	h2_put_str(st, v);
	h2_puts(st, "\r\n");
	return 0;
}

int
h2_head_frame(struct h2_stream *st, bool body)
{
	st->rx_held = false;
	if (body) {
		st->rx_chunked = true;
		h2_puts(st, "Transfer-Encoding: chunked\r\n");
	}
	h2_puts(st, "\r\n");
	return st->rh.too_large ? -1 : 0;
}

int
h2_head_finish(struct h2_stream *st, bool end)
{
	struct h2_reqhead	*rh = &st->rh;

	if (!rh->line_done && h2_line(st) < 0)
		return -1;
	if (rh->cookie_len > 0) {
		h2_puts(st, "Cookie: ");
		h2_put(st, rh->cookie, rh->cookie_len);
		h2_puts(st, "\r\n");
	}
	buf_put(rh->cookie);
	rh->cookie = NULL;
	/* A tunnel's bytes are not a body; a length says where one ends;
	 * END_STREAM says there is none. A client that expects 100 (RFC
	 * 9110 10.1.1) sends its body only after the head went on and an
	 * answer came: it has one. Else the next frame tells. */
	if (st->tunnel || end || rh->has_length)
		return h2_head_frame(st, false);
	if (rh->expect_continue)
		return h2_head_frame(st, true);
	st->rx_held = true;
	return rh->too_large ? -1 : 0;
}

void
h2_head_drop(struct h2_stream *st)
{
	h2_pseudo_drop(&st->rh);
	buf_put(st->rh.cookie);
	st->rh.cookie = NULL;
}

/* ---- the response head ---------------------------------------------- */

/* Fields of an HTTP/1.1 response that HTTP/2 does not carry (RFC 9113
 * 8.2.2), and the RFC 6455 answer the client of an RFC 8441 upgrade has
 * no use for. Proxy-Authenticate stays: it is the proxy's own. */
static bool
h2_resp_drop(const struct http_msg *m, struct pt_str n)
{
	const char	*d;

	/* By length first: most fields are none of these, and a response
	 * has a dozen of them. */
	switch (n.len) {
	case 2:		d = "te";			break;
	case 7:		d = n.ptr[0] == 'u' || n.ptr[0] == 'U' ?
			    "upgrade" : "trailer";	break;
	case 10:	d = n.ptr[0] == 'k' || n.ptr[0] == 'K' ?
			    "keep-alive" : "connection"; break;
	case 16:	d = "proxy-connection";		break;
	case 17:	d = "transfer-encoding";	break;
	case 20:	d = "sec-websocket-accept";	break;
	default:	d = NULL;			break;
	}
	if (d != NULL && http_mem_ieq(n.ptr, d, n.len))
		return true;
	return m->conn_names && http_header_is_hop(m, n) &&
	    !(n.len == 18 && http_mem_ieq(n.ptr, "proxy-authenticate", 18));
}

int
h2_head_response(struct h2_stream *st, const struct http_msg *m)
{
	static nghttp2_nv	 nva[HTTP_MAX_HEADERS + 1];
	static char		 names[65536];
	nghttp2_data_provider	 prd;
	char			 status[4];
	size_t			 used = 0, k;
	unsigned		 i, n = 0;
	int			 code = m->status, rc;
	bool			 body;

	/* RFC 8441 5: the switch is a 2xx in HTTP/2. */
	if (code == 101 && st->ext_connect)
		code = 200;
	status[0] = (char)('0' + code / 100 % 10);
	status[1] = (char)('0' + code / 10 % 10);
	status[2] = (char)('0' + code % 10);
	status[3] = '\0';
	nva[n++] = (nghttp2_nv){ (uint8_t *)":status", (uint8_t *)status, 7,
	    3, NGHTTP2_NV_FLAG_NONE };
	for (i = 0; i < m->nheaders; i++) {
		const struct http_header *f = &m->headers[i];

		if (h2_resp_drop(m, f->name) || used + f->name.len >
		    sizeof(names))
			continue;
		/* HTTP/2 field names are lower case (RFC 9113 8.2.1). */
		for (k = 0; k < f->name.len; k++) {
			char ch = f->name.ptr[k];

			names[used + k] = ch >= 'A' && ch <= 'Z' ?
			    (char)(ch + 32) : ch;
		}
		nva[n++] = (nghttp2_nv){ (uint8_t *)names + used,
		    (uint8_t *)(uintptr_t)f->value.ptr, f->name.len,
		    f->value.len, NGHTTP2_NV_FLAG_NONE };
		used += f->name.len;
	}
	if (code >= 100 && code < 200)
		return nghttp2_submit_headers(st->h2->session,
		    NGHTTP2_FLAG_NONE, st->id, NULL, nva, n, NULL) < 0 ? -1 : 0;
	st->resp_final = true;
	/* A tunnel's bytes follow its 2xx; a refused tunnel has the
	 * proxy's answer as its body. */
	if (st->tunnel && code >= 200 && code < 300)
		body = true;
	else
		body = !st->is_head && code != 204 && code != 304 &&
		    m->body != HTTP_BODY_NONE && !(m->body ==
		    HTTP_BODY_LENGTH && m->content_length == 0);
	st->tx_length = m->body == HTTP_BODY_LENGTH && !st->is_head ?
	    m->content_length : UINT64_MAX;
	st->resp_body = body;
	if (!body) {
		st->tx_eof = true;
		rc = nghttp2_submit_response(st->h2->session, st->id, nva, n,
		    NULL);
	} else {
		prd.source.ptr = st;
		prd.read_callback = h2_stream_read_body;
		rc = nghttp2_submit_response(st->h2->session, st->id, nva, n,
		    &prd);
	}
	return rc < 0 ? -1 : 0;
}
