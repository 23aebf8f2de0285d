/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The request an HTTP/1.1 client sends, as the client side of
 * http_origin.h: the head read until it is complete (http_flow.c) and
 * parsed (http_parse.c, where the rules against smuggling live), what
 * the proxy checks and takes from it (the target, Basic credentials, the
 * path and the fields a log keeps), the head rewritten for the origin
 * (http_head.c), and the request delivered to the origin path. Also
 * pt_req_header's HTTP side, which reads the raw head while the phases
 * judge it.
 *
 * What it does not do: read a request body (the pump in http.c does, as
 * the origin takes it) or answer anything but a head it refuses.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "worker/http_request.h"
#include "worker/h2.h"
#include "common/conf_types.h"
#include "common/counters.h"
#include "worker/host.h"
#include "worker/http_answer.h"
#include "worker/http_head.h"
#include "worker/http_origin.h"
#include "worker/phase.h"
#include "worker/pool.h"
#include "worker/req.h"

/* c_req.path copies of up to HTTP_PATH_SMALL bytes, most of them; longer
 * ones take a buffer. buf_put gives either back (pool_of). */
#define HTTP_PATH_SMALL		256
static struct pool		 http_path_pool;
static struct pool		 http_loghdr_pool;

void
http_request_init(unsigned max_conns)
{
	pool_init(&http_path_pool, "http path", HTTP_PATH_SMALL, max_conns);
	pool_init(&http_loghdr_pool, "http log headers",
	    2 * PT_LOG_HEADER_MAX, max_conns);
}

void
http_request_fini(void)
{
	pool_fini(&http_loghdr_pool);
	pool_fini(&http_path_pool);
}

/* ---- what the proxy keeps of a head --------------------------------- */

/* Decodes "Basic base64(user:pass)" into h->cred; sets c_req user and
 * password. Other schemes leave them empty for a module to judge; so
 * does a malformed Basic credential (http_parse_basic), which AUTH then
 * answers as none (407) rather than as a part of it. */
static void
http_credentials(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	const struct http_header *a;
	const char		*colon;
	size_t			 n;

	/* Nothing of the last request's credentials may reach this one's
	 * AUTH (keep-alive): the user is the connection's, if any. */
	req_user_reset(c);
	memset(&c->c_req.password, 0, sizeof(c->c_req.password));
	a = http_header_find(m, "proxy-authorization");
	if (a == NULL || http_parse_basic(a->value, h->cred,
	    sizeof(h->cred) - 1, &n) != 0 ||
	    (colon = memchr(h->cred, ':', n)) == NULL)
		return;
	c->c_req.user.ptr = h->cred;
	c->c_req.user.len = (size_t)(colon - h->cred);
	c->c_req.password.ptr = colon + 1;
	c->c_req.password.len = n - (size_t)(colon - h->cred) - 1;
}

/*
 * Copies the request-target's path and query for c_req.path into pooled
 * memory of its own: the head's buffer may be given back (or handed to
 * the relay) before LOG reads it. No module, no copy. Out of memory, the
 * path stays empty rather than failing a request over a log field.
 */
static void
http_set_path(struct pt_conn *c, struct pt_str path)
{
	struct http_state	*h = http_st(c);

	if (!phase_any_hooks() || path.len == 0)
		return;
	if (h->path == NULL)
		h->path = path.len <= HTTP_PATH_SMALL ?
		    pool_get(&http_path_pool) : buf_get(path.len <=
		    buf_class_size(BUF_SMALL) ? BUF_SMALL : BUF_LARGE);
	if (h->path == NULL)
		return;
	if (path.len > buf_size(h->path))
		path.len = buf_size(h->path);
	memcpy(h->path, path.ptr, path.len);
	c->c_req.path.ptr = h->path;
	c->c_req.path.len = path.len;
}

/*
 * PT_MODF_LOG_HEADERS: copies the request's User-Agent and Referer (the
 * first of each) out of the parsed head, whose buffer may be gone by
 * LOG. One pooled block for both, only when one was sent; out of
 * memory, the log goes without them.
 */
static void
http_keep_log_headers(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	const struct pt_str	*ua = NULL, *ref = NULL;
	unsigned		 i;

	if (!phase_log_headers())
		return;
	for (i = 0; i < m->nheaders && (ua == NULL || ref == NULL); i++) {
		const struct http_header *f = &m->headers[i];

		if (ua == NULL && f->name.len == 10 &&
		    http_str_ieq(f->name, "user-agent"))
			ua = &f->value;
		else if (ref == NULL && f->name.len == 7 &&
		    http_str_ieq(f->name, "referer"))
			ref = &f->value;
	}
	if ((ua == NULL && ref == NULL) ||
	    (h->loghdr == NULL &&
	    (h->loghdr = pool_get(&http_loghdr_pool)) == NULL))
		return;
	h->ua_len = ua == NULL ? 0 : (uint16_t)(ua->len < PT_LOG_HEADER_MAX ?
	    ua->len : PT_LOG_HEADER_MAX);
	h->ref_len = ref == NULL ? 0 : (uint16_t)(ref->len <
	    PT_LOG_HEADER_MAX ? ref->len : PT_LOG_HEADER_MAX);
	if (ua != NULL)
		memcpy(h->loghdr, ua->ptr, h->ua_len);
	if (ref != NULL)
		memcpy(h->loghdr + PT_LOG_HEADER_MAX, ref->ptr, h->ref_len);
}

void
http_request_forget_copies(struct http_state *h)
{
	buf_put(h->path);
	h->path = NULL;
	free(h->via_in);
	h->via_in = NULL;
	if (h->loghdr != NULL)
		pool_put(&http_loghdr_pool, h->loghdr);
	h->loghdr = NULL;
	h->ua_len = h->ref_len = 0;
}

/* ---- pt_req_header -------------------------------------------------- */

/* Trims optional white space (RFC 9110 5.6.3) from both ends. */
static void
http_trim_ows(const char **p, const char **end)
{
	while (*p < *end && (**p == ' ' || **p == '\t'))
		(*p)++;
	while (*end > *p && ((*end)[-1] == ' ' || (*end)[-1] == '\t' ||
	    (*end)[-1] == '\r'))
		(*end)--;
}

/* User-Agent or Referer from http_keep_log_headers' copy (any phase
 * from the head to LOG); false for other names or one not sent. */
static bool
http_log_header(const struct http_state *h, const char *name, size_t nlen,
    struct pt_str *value_out)
{
	if (nlen == 10 && strcasecmp(name, "user-agent") == 0 &&
	    h->ua_len > 0) {
		*value_out = (struct pt_str){ h->loghdr, h->ua_len };
		return true;
	}
	if (nlen == 7 && strcasecmp(name, "referer") == 0 && h->ref_len > 0) {
		*value_out = (struct pt_str){ h->loghdr + PT_LOG_HEADER_MAX,
		    h->ref_len };
		return true;
	}
	return false;
}

/*
 * pt_req_header for HTTP: scans the raw head, still at the front of the
 * request buffer while the phases run (HS_WAIT reads no body), so the
 * value points into it and stays valid until the phase ends. The parser
 * already refused obsolete line folding and bad field names.
 */
bool
http_req_header(struct pt_conn *c, const char *name, bool kept_only,
    struct pt_str *value_out)
{
	struct http_state	*h = http_st(c);
	const char		*p, *end, *eol, *v, *vend;
	size_t			 nlen = strlen(name);
	char			 first;

	if (h == NULL || nlen == 0)
		return false;
	/* The head itself while it is there (whole values); then the copy
	 * kept for LOG. */
	if (kept_only || h->stage != HS_WAIT || h->req.in == NULL ||
	    h->req.head_len == 0)
		return h->loghdr != NULL &&
		    http_log_header(h, name, nlen, value_out);
	p = h->req.in;
	end = p + h->req.head_len;
	/* Skip the request line. */
	if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
		return false;
	/* A field name is a token (no ':' and no space before it): the
	 * name matches where its length puts the colon, which one byte
	 * compared first rules out for most lines. */
	first = (char)(name[0] | 0x20);
	for (p = eol + 1; p < end; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		if ((size_t)(eol - p) <= nlen || p[nlen] != ':' ||
		    (char)(p[0] | 0x20) != first || strncasecmp(p, name, nlen))
			continue;
		v = p + nlen + 1;
		vend = eol;
		http_trim_ows(&v, &vend);
		value_out->ptr = v;
		value_out->len = (size_t)(vend - v);
		return true;
	}
	return false;
}

/* ---- the request head ----------------------------------------------- */

/* Why a request head cannot go on: the <status> it is answered with, or
 * 0 when nothing can be answered (out of buffers: a close); <why> for
 * the answer and the log. */
struct http_refusal {
	int		 status;
	const char	*why;
};

static bool
http_refused(struct http_refusal *e, int status, const char *why)
{
	e->status = status;
	e->why = why;
	return false;
}

/* The one way a refused head ends. */
static void
http_request_refuse(struct pt_conn *c, const struct http_refusal *e)
{
	if (e->status == 0)
		conn_close(c, e->why);
	else
		http_fail(c, e->status, e->why);
}

/* Takes from a parsed head what outlives it: the version and whether
 * the client may be kept, the kind of request, the body's framing, the
 * method, whether the proxy is the last recipient, the fields a log
 * keeps. */
static void
http_request_note(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req;

	h->client_version = m->version;
	/* RFC 9112 9.3: 1.1 persists unless "close"; and "a proxy server
	 * MUST NOT maintain a persistent connection with an HTTP/1.0
	 * client", whatever its Keep-Alive says. */
	h->keep_client = m->version == 11 &&
	    !(m->conn_flags & HTTP_CONN_CLOSE);
	h->is_connect = http_method_is(m->method, "CONNECT");
	h->is_head = http_method_is(m->method, "HEAD");
	/* RFC 9110 7.8: Upgrade in an HTTP/1.0 request is ignored (it goes
	 * on as a plain request, its Upgrade field dropped). */
	h->is_websocket = m->upgrade_websocket && m->version == 11 &&
	    (m->conn_flags & HTTP_CONN_UPGRADE) && !h->is_connect;
	h->local = HTTP_LOCAL_NONE;
	if (m->max_forwards == 0 && http_method_is(m->method, "OPTIONS"))
		h->local = HTTP_LOCAL_OPTIONS;
	else if (m->max_forwards == 0 && http_method_is(m->method, "TRACE"))
		h->local = HTTP_LOCAL_TRACE;
	h->head_len = (uint32_t)m->head_len;
	q->body = m->body;
	q->remaining = m->content_length;
	q->head_done = true;
	q->in_start = q->in_fwd = q->in_raw = (uint32_t)m->head_len;
	q->head_len = (uint32_t)m->head_len;
	c->c_req.method.ptr = h->method;
	c->c_req.method.len = m->method.len < sizeof(h->method) ?
	    m->method.len : sizeof(h->method) - 1;
	memcpy(h->method, m->method.ptr, c->c_req.method.len);
	http_keep_log_headers(c, m);
}

/* The request-target: an authority for CONNECT, else an absolute URI of
 * scheme http (a proxy is sent no other form, RFC 9112 3.2.2). Sets the
 * protocol and the path. */
static bool
http_request_target(struct pt_conn *c, const struct http_msg *m,
    struct http_uri *u, struct http_refusal *e)
{
	struct http_state	*h = http_st(c);

	if (h->is_connect) {
		if (http_parse_authority(m->target, u) < 0)
			return http_refused(e, 400, "bad CONNECT target");
		c->c_req.proto = PT_PROTO_CONNECT;
		/* A CONNECT body has no defined meaning (RFC 9110 9.3.6):
		 * whatever follows the head belongs to the tunnel. */
		h->req.body = HTTP_BODY_NONE;
		return true;
	}
	if (m->target_form != HTTP_TARGET_ABSOLUTE) {
		http_set_path(c, m->target);
		return http_refused(e, 400, "a proxy needs an absolute URI "
		    "(http://host/path)");
	}
	if (http_parse_absolute_uri(m->target, u) < 0)
		return http_refused(e, 400, "bad URI");
	if (!http_str_ieq(u->scheme, "http"))
		return http_refused(e, 501, "only http:// URIs are forwarded; "
		    "use CONNECT for https");
	c->c_req.proto = h->is_websocket ? PT_PROTO_WEBSOCKET : PT_PROTO_HTTP;
	http_set_path(c, u->path);
	return true;
}

/* The host as the modules, the resolver and the log all read it
 * (worker/host.h): a name that one of them could read another way is
 * refused here, before any phase. Then the credentials, which AUTH
 * judges. */
static bool
http_request_host(struct pt_conn *c, const struct http_msg *m,
    const struct http_uri *u, struct http_refusal *e)
{
	struct host	 hp;

	if (host_parse(u->host.ptr, u->host.len, &hp) == HOST_BAD ||
	    hp.len >= HTTP_HOST_MAX)
		return http_refused(e, 400, "bad host");
	http_origin_target(c, &hp, u->port);
	http_credentials(c, m);
	return true;
}

/* Frames the body bytes that came with the head. */
static bool
http_request_body(struct pt_conn *c, struct http_refusal *e)
{
	if (http_flow_frame(&http_st(c)->req, false,
	    http_conf->http.max_header_size) < 0)
		return http_refused(e, 400, "bad chunked request body");
	return true;
}

/* Writes the head for the origin into req.out: none for CONNECT, none
 * for a request the proxy answers itself. */
static bool
http_request_rewrite(struct pt_conn *c, const struct http_msg *m,
    const struct http_uri *u, struct http_refusal *e)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req;
	unsigned		 flags;
	ssize_t			 n;

	if (h->is_connect || h->local != HTTP_LOCAL_NONE)
		return true;
	flags = (http_conf->http.via ? HTTP_HEAD_VIA : 0) |
	    (h->is_websocket ? HTTP_HEAD_UPGRADE : 0) |
	    (q->body == HTTP_BODY_CHUNKED ? HTTP_HEAD_CHUNKED : 0);
	if ((q->out = http_flow_head_buf(m->head_len)) == NULL)
		return http_refused(e, 0, "out of buffers");
	n = http_head_request(q->out, buf_size(q->out), m, u, flags);
	if (n < 0)
		return http_refused(e, 431, "request head too large to "
		    "forward");
	q->out_start = 0;
	q->out_len = (uint32_t)n;
	return true;
}

/*
 * Whether a Via entry of <m> names us (http.via_pseudonym): the request
 * came round a loop of proxies back here, and forwarding it would go
 * round again until something runs out (RFC 9110 7.6.3, 15.5.x: 508 is
 * the answer WebDAV gave it). A CONNECT's Via list is kept for the
 * parent (h->via_in), so a loop through CONNECT is seen too.
 */
static bool
http_via_loop(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	const char		*me = http_conf->http.via_pseudonym;
	const char		*p, *end, *e, *by;
	size_t			 melen = strlen(me), total = 0, n;
	unsigned		 i;

	for (i = 0; i < m->nheaders; i++) {
		if (!http_str_ieq(m->headers[i].name, "via"))
			continue;
		p = m->headers[i].value.ptr;
		end = p + m->headers[i].value.len;
		total += m->headers[i].value.len + 2;
		while (p < end) {
			while (p < end && (*p == ' ' || *p == '\t' ||
			    *p == ','))
				p++;
			/* received-protocol, then received-by */
			while (p < end && *p != ' ' && *p != '\t' && *p != ',')
				p++;
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			for (by = p; p < end && *p != ' ' && *p != '\t' &&
			    *p != ','; p++)
				;
			if ((size_t)(p - by) == melen &&
			    strncasecmp(by, me, melen) == 0)
				return true;
			/* a comment, up to the next entry */
			while (p < end && *p != ',')
				p++;
		}
	}
	if (!h->is_connect || total == 0 || http_conf->nparents == 0)
		return false;
	if ((h->via_in = malloc(total)) == NULL)
		return false;
	for (i = 0, n = 0; i < m->nheaders; i++) {
		if (!http_str_ieq(m->headers[i].name, "via"))
			continue;
		e = m->headers[i].value.ptr;
		if (n > 0) {
			memcpy(h->via_in + n, ", ", 2);
			n += 2;
		}
		memcpy(h->via_in + n, e, m->headers[i].value.len);
		n += m->headers[i].value.len;
	}
	h->via_in[n] = '\0';
	return false;
}

/*
 * A complete request head is in h->req.in. Checks what the parser leaves
 * to the proxy, rewrites the head for the origin and delivers the
 * request to the origin path; a head it refuses is answered here.
 */
static void
http_request_head(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	struct http_uri		 u;
	struct http_refusal	 e;

	http_request_note(c, m);
	if (m->target_form == HTTP_TARGET_ASTERISK &&
	    http_method_is(m->method, "OPTIONS")) {
		/* RFC 9110 9.3.7: "OPTIONS *" asks about the server it is
		 * sent to, us: what we forward, without a phase (no target,
		 * nothing to judge). */
		http_set_path(c, m->target);
		h->local = HTTP_LOCAL_OPTIONS;
		http_answer_locally(c);
		return;
	}
	if (http_conf->http.via_loop_check && http_via_loop(c, m)) {
		c->c_req.status = 508;
		http_fail(c, 508, "loop detected: the request came back "
		    "through this proxy (its Via names us)");
		return;
	}
	if (!http_request_target(c, m, &u, &e) ||
	    !http_request_host(c, m, &u, &e) ||
	    !http_request_body(c, &e) ||
	    !http_request_rewrite(c, m, &u, &e)) {
		http_request_refuse(c, &e);
		return;
	}
	http_origin_request(c);
}

/*
 * Does the connection open with the HTTP/2 client preface (RFC 9113
 * 3.4), as far as it has come? Only as its first bytes, on a listener
 * with http2, and never on a stream of HTTP/2 itself. Looked at before
 * the parser, which would take "PRI * HTTP/2.0" for a bad request.
 */
static bool
http_request_h2(struct pt_conn *c, const struct http_state *h)
{
	const struct http_flow	*q = &h->req;
	size_t			 n = q->in_len;

	if (!h->first || n == 0 || q->in[0] != 'P' ||
	    !c->c_listener->http2 || c->c_stream != 0)
		return false;
	return memcmp(q->in, H2_PREFACE, n < H2_PREFACE_LEN ? n :
	    H2_PREFACE_LEN) == 0;
}

void
http_request_read(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req;
	struct http_msg		*m = &http_scratch;
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	ssize_t			 n;
	int			 rc;

	for (;;) {
		if (http_request_h2(c, h)) {
			if (q->in_len >= H2_PREFACE_LEN) {
				h->h2_preface = true;
				return;
			}
		} else if (q->in_len > 0 && (http_flow_head_ready(q) ||
		    q->in_len == buf_size(q->in))) {
			rc = http_parse_request(q->in, q->in_len,
			    http_conf->http.max_header_size, m);
			if (rc == PARSE_OK) {
				http_request_head(c, m);
				return;
			}
			if (rc == PARSE_BAD) {
				http_fail(c, m->error_status, m->error);
				return;
			}
			if (q->in_len == buf_size(q->in) && !http_flow_grow(q)) {
				http_fail(c, 431, "request head too large");
				return;
			}
		}
		if (!http_flow_may_read(c, cl))
			return;
		n = http_flow_read(c, q, cl);
		if (n == -EAGAIN) {
			/* No byte of a head yet: an idle connection, new or
			 * kept alive, holds no buffer. */
			http_flow_compact(q);
			return;
		}
		if (n <= 0) {
			/* EOF between requests is the normal end of a
			 * keep-alive connection (no LOG); inside a head, an
			 * aborted transaction, logged as 400. */
			if (q->in_len > 0) {
				c->c_req.status = 400;
				if (n == 0)
					c->c_req.error = "client closed "
					    "inside the request head";
			}
			conn_close(c, n == 0 ? NULL : "read failed");
			return;
		}
		if (c->c_logged) {
			/* The first byte of a request starts a transaction
			 * for the LOG phase. */
			http_txn_open(c);
			c->c_req.start_ms = loop_now();
			c->c_start_us = counters_now_us();
			http_timer(c, http_conf->limits.header_timeout_ms);
		}
	}
}
