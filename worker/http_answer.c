/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every head an HTTP/1.1 client is sent, as the client side of
 * http_client.h: the origin's response rewritten for this client (an
 * interim one passed on or not, the final one's framing, its head), and
 * the proxy's own answers: a failure's status (RFC 9110 15), OPTIONS and
 * TRACE when the proxy is their last recipient, CONNECT's 200.
 *
 * http_head.c writes the bytes of each head; this file decides which
 * head, with which framing, and what becomes of the connection after it.
 * Nothing here reads from a socket.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "worker/http_answer.h"
#include "common/conf_types.h"
#include "worker/http_head.h"
#include "worker/http_origin.h"
#include "worker/worker_self.h"

/* ---- failures ------------------------------------------------------- */

/* The head's length in a response of ours (head and body in <p>). */
static int32_t
http_head_length(const char *p, size_t n)
{
	const char	*e = memmem(p, n, "\r\n\r\n", 4);

	return e != NULL ? (int32_t)(e + 4 - p) : (int32_t)n;
}

void
http_fail_answer(struct pt_conn *c, int status, const char *detail,
    const char *realm, uint32_t retry_after)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	unsigned		 flags;
	ssize_t			 n;

	/* Our answer is a transaction even when no byte of a request came
	 * (408 to a silent first connection). */
	if (c->c_logged)
		http_txn_open(c);
	c->c_req.status = status;
	if (detail != NULL && c->c_req.error == NULL)
		c->c_req.error = detail;
	/* A module still working on this request (AGAIN) will resume it;
	 * the transaction cannot go on under its feet. */
	if (h->resp_started || c->c_waiting) {
		conn_close(c, detail);
		return;
	}
	http_origin_drop(c);
	pt_timer_stop(&c->c_timer);
	/* A client that asked for credentials may send them on the same
	 * connection. Not one whose refused CONNECT already has bytes
	 * behind it: those were meant for the tunnel (a TLS hello), and
	 * must not be read as its next request. */
	if (!(status == 407 && h->req.body_done && h->keep_client) ||
	    (h->is_connect && h->req.in != NULL &&
	    h->req.in_len > h->req.in_raw) || worker_self()->stopping ||
	    c->c_stream != 0)
		h->close_after = true;
	flags = h->close_after ? HTTP_HEAD_CLOSE : 0;
	if (status == 407)
		flags |= HTTP_HEAD_AUTH;
	if (h->is_head)
		flags |= HTTP_HEAD_NOBODY;
	buf_put(r->in);
	r->in = NULL;
	r->in_start = r->in_fwd = r->in_raw = r->in_len = 0;
	if (r->out == NULL && (r->out = buf_get(BUF_SMALL)) == NULL) {
		conn_close(c, "out of buffers");
		return;
	}
	if (status == 407 && realm == NULL)
		realm = "portico";
	n = http_head_error(r->out, buf_size(r->out), status, detail, flags,
	    realm, retry_after);
	if (n < 0) {
		conn_close(c, "error response does not fit");
		return;
	}
	r->out_start = 0;
	r->out_len = (uint32_t)n;
	r->head_done = r->body_done = true;
	c->c_req.resp_head += http_head_length(r->out, (size_t)n);
	h->stage = HS_REPLY;
	http_timer(c, http_conf->limits.idle_timeout_ms);
	h->client->resume(c);
}

void
http_fail(struct pt_conn *c, int status, const char *detail)
{
	http_fail_answer(c, status, detail, NULL, 0);
}

/* ---- OPTIONS, TRACE, CONNECT ---------------------------------------- */

/* Whether the field line at <p> (<l> bytes) stays out of a TRACE echo:
 * the fields that were for us (Proxy-Authorization holds the client's
 * credentials; Proxy-* fields are hop-by-hop to the proxy) and those
 * likely to hold secrets, which RFC 9110 9.3.8 says the last recipient
 * should leave out (Authorization, Cookie). */
static bool
http_trace_secret(const char *p, size_t l)
{
	return (l >= 6 && strncasecmp(p, "proxy-", 6) == 0) ||
	    (l >= 14 && strncasecmp(p, "authorization:", 14) == 0) ||
	    (l >= 7 && strncasecmp(p, "cookie:", 7) == 0);
}

/*
 * The body of a TRACE reply: the request head as received (RFC 9110
 * 9.3.8), less the lines http_trace_secret names. The head was parsed
 * strictly, so it is whole lines ending in LF. Writes to <out> when not
 * NULL; returns the length either way.
 */
static size_t
http_trace_copy(const char *head, size_t len, char *out)
{
	const char	*p = head, *end = head + len, *lf;
	size_t		 n = 0, l;
	bool		 first = true;

	while (p < end) {
		lf = memchr(p, '\n', (size_t)(end - p));
		l = lf != NULL ? (size_t)(lf - p) + 1 : (size_t)(end - p);
		if (first || !http_trace_secret(p, l)) {
			if (out != NULL)
				memcpy(out + n, p, l);
			n += l;
		}
		first = false;
		p += l;
	}
	return n;
}

/* Runs after ACCESS (but for OPTIONS *, which names no target), so it
 * answers only requests the modules let through. */
void
http_answer_locally(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	size_t			 len = 0, dlen;
	const char		*date;
	int			 n;

	if ((r->out = buf_get(BUF_LARGE)) == NULL) {
		conn_close(c, "out of buffers");
		return;
	}
	date = http_date_field(&dlen);
	if (h->local == HTTP_LOCAL_OPTIONS) {
		n = snprintf(r->out, buf_size(r->out), "HTTP/1.1 200 OK\r\n"
		    "Allow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, "
		    "TRACE, CONNECT\r\nContent-Length: 0\r\n%.*s%s\r\n",
		    (int)dlen, date, h->keep_client ? "" :
		    "Connection: close\r\n");
	} else {
		len = http_trace_copy(h->req.in, h->head_len, NULL);
		n = snprintf(r->out, buf_size(r->out), "HTTP/1.1 200 OK\r\n"
		    "Content-Type: message/http\r\nContent-Length: %zu\r\n"
		    "%.*s%s\r\n", len, (int)dlen, date, h->keep_client ? "" :
		    "Connection: close\r\n");
	}
	if (n < 0 || (size_t)n + len >= buf_size(r->out)) {
		conn_close(c, "TRACE reply does not fit");
		return;
	}
	if (len > 0)
		http_trace_copy(h->req.in, h->head_len, r->out + n);
	r->out_start = 0;
	r->out_len = (uint32_t)((size_t)n + len);
	c->c_req.resp_head += n;
	r->head_done = r->body_done = true;
	c->c_req.status = 200;
	h->close_after = !h->keep_client || h->req.body != HTTP_BODY_NONE;
	h->stage = HS_REPLY;
	http_timer(c, http_conf->limits.idle_timeout_ms);
	h->client->resume(c);
}

void
http_answer_connected(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	static const char	 ok[] = "HTTP/1.1 200 Connection established\r\n";
	const char		*date;
	size_t			 dlen;

	if ((r->out = buf_get(BUF_SMALL)) == NULL) {
		conn_close(c, "out of buffers");
		return;
	}
	/* RFC 9110 6.6.1: a response of ours carries a Date. */
	date = http_date_field(&dlen);
	memcpy(r->out, ok, sizeof(ok) - 1);
	memcpy(r->out + sizeof(ok) - 1, date, dlen);
	memcpy(r->out + sizeof(ok) - 1 + dlen, "\r\n", 2);
	r->out_start = 0;
	r->out_len = (uint32_t)(sizeof(ok) - 1 + dlen + 2);
	c->c_req.resp_head += (int32_t)r->out_len;
	c->c_req.status = 200;
	h->stage = HS_TUNNEL;
	h->client->resume(c);
}

/* ---- the origin's response ------------------------------------------ */

/* Appends <m>'s head, rewritten with <flags> for the client, to resp.out
 * (taken, sized for the head, when there is none). False after a 502
 * (<too_large>: it does not fit) or a close (out of buffers). */
static inline bool
http_answer_append(struct pt_conn *c, const struct http_msg *m,
    unsigned flags, const char *too_large)
{
	struct http_flow	*r = &http_st(c)->resp;
	ssize_t			 n;

	if (r->out == NULL && (r->out = http_flow_head_buf(m->head_len)) ==
	    NULL) {
		conn_close(c, "out of buffers");
		return false;
	}
	n = http_head_response(r->out + r->out_len, buf_size(r->out) -
	    r->out_len, m, flags);
	if (n < 0) {
		http_fail(c, 502, too_large);
		return false;
	}
	r->out_len += (uint32_t)n;
	c->c_req.resp_head += (int32_t)n;
	return true;
}

/* Interim (1xx but 101): passed to an HTTP/1.1 client only (RFC 9110
 * 15.2), then the final response follows. */
static bool
http_answer_interim(struct pt_conn *c, const struct http_msg *m)
{
	if (http_st(c)->client_version != 11)
		return true;
	return http_answer_append(c, m, http_conf->http.via ? HTTP_HEAD_VIA :
	    0, "interim response too large");
}

/*
 * How the final response reaches this client: the flags of its head,
 * de-chunked for an HTTP/1.0 client, and whether the connection closes
 * after it (RFC 9112 6, 9.3). -1 after answering 502 instead.
 */
static int
http_answer_framing(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	unsigned		 flags = 0;

	if (m->status == 101) {
		flags = HTTP_HEAD_UPGRADE;
	} else if ((m->te_close || m->te_coded) && (h->client_version == 10 ||
	    c->c_stream != 0)) {
		/* A body in a coding besides chunked (running to the close,
		 * or chunked on top: "gzip, chunked"): a 1.1 client gets its
		 * Transfer-Encoding, which a 1.0 client must not be sent (RFC
		 * 9112 6.1), and without it the coded bytes would pass for the
		 * content. */
		http_fail(c, 502, "transfer coding an HTTP/1.0 client cannot "
		    "take");
		return -1;
	} else {
		if (m->te_close)
			flags |= HTTP_HEAD_TE;
		/* HTTP/2 frames the body itself (h2_stream.c): no chunks. */
		if (r->body == HTTP_BODY_CHUNKED && (h->client_version == 10 ||
		    c->c_stream != 0))
			r->dechunk = true;
		/* The client can find the end of this response only if it
		 * is framed for it: a length, chunks to a 1.1 client, or
		 * nothing at all. Otherwise the close is the frame. */
		if (r->body == HTTP_BODY_CLOSE || r->dechunk ||
		    !h->req.body_done)
			h->close_after = true;
		/* A draining worker finishes this response and closes: the
		 * next request belongs to the new generation. */
		if (!h->keep_client || worker_self()->stopping)
			h->close_after = true;
		/* An HTTP/2 stream is one transaction. */
		if (c->c_stream != 0)
			h->close_after = true;
		if (r->body == HTTP_BODY_CHUNKED && !r->dechunk)
			flags |= HTTP_HEAD_CHUNKED;
		if (h->close_after)
			flags |= HTTP_HEAD_CLOSE;
	}
	if (http_conf->http.via)
		flags |= HTTP_HEAD_VIA;
	return (int)flags;
}

bool
http_answer_response(struct pt_conn *c, const struct http_msg *m)
{
	struct http_flow	*r = &http_st(c)->resp;
	int			 flags;

	if (!r->head_done)
		return http_answer_interim(c, m);
	if ((flags = http_answer_framing(c, m)) < 0)
		return false;
	/* An interim response still waiting to go out sized the buffer for
	 * itself: a large final head behind it gets a buffer of its size. */
	if (r->out != NULL && buf_size(r->out) - r->out_len < m->head_len +
	    HTTP_HEAD_SLACK && !http_flow_out_grow(r)) {
		conn_close(c, "out of buffers");
		return false;
	}
	return http_answer_append(c, m, (unsigned)flags,
	    "response head too large to forward");
}
