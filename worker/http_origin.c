/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The origin path of an HTTP transaction (the interface: http_client.h):
 * the phases and the dial path as HTTP needs them (target_ops), the
 * upstream connection kept for the next request to the same origin
 * (parked here) or given to the worker's pool, the response head read
 * and checked, and the one retry when a reused connection turns out to
 * be closed by its origin.
 *
 * What this file does not do: write anything to the client. The heads
 * the client is sent, the proxy's own answers and the tunnel's start are
 * the client side's, reached through h->client.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/http_origin.h"
#include "common/conf_types.h"
#include "worker/http_parse.h"
#include "worker/loop.h"
#include "worker/outbound.h"
#include "worker/parent.h"
#include "worker/parent_wire.h"
#include "worker/phase.h"
#include "worker/target.h"
#include "worker/upstream.h"

static void
http_origin_fail(struct pt_conn *c, int status, const char *detail)
{
	http_st(c)->client->fail(c, status, detail, NULL, 0);
}

void
http_origin_init(const struct pt_config *conf)
{
	upstream_init(conf->http.upstream_keepalive,
	    conf->http.upstream_idle_timeout_ms);
}

void
http_origin_fini(void)
{
	upstream_fini();
}

/* ---- the upstream connection ---------------------------------------- */

static void
http_upstream_close(struct pt_conn *c)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];

	if (s->io.fd < 0)
		return;
	/* Its TLS session (an https parent) writes its close first. */
	conn_up_transport_free(c);
	loop_io_stop(&s->io);
	close(s->io.fd);
	s->io.fd = -1;
	s->ready = 0;
	s->rd_eof = s->wr_shut = s->hup = s->reset = false;
}

/*
 * Whether an origin connection may carry another request: nothing came
 * from it beyond the response just read (a body longer than its framing
 * said, a close). Bytes waiting there would answer the next request, and
 * every later one would get the answer before its own. Known from the
 * events when the last read was short (the usual case, no system call);
 * otherwise a read came to the exact end of the response with more
 * possibly behind it, and one peek tells. Asked again of a parked one
 * when the next request comes (http_access_ok, http_unpark): an EPOLLIN
 * noted meanwhile may be stale, an event of the batch in which the
 * response's last bytes were read by another's handler, and one peek
 * tells that too rather than the origin connection being thrown away.
 */
static bool
http_upstream_clean(struct pt_conn *c, struct conn_side *up)
{
	char	 b;

	/* Through TLS, bytes decrypted and not read count too; a record
	 * waiting in the socket is seen by the peek below, and is as
	 * unwanted as any byte. */
	if (up->hup || conn_pending(c, up) > 0)
		return false;
	if (!(up->ready & EPOLLIN))
		return true;
	if (recv(up->io.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK)) {
		up->ready &= ~(uint32_t)EPOLLIN;
		return true;
	}
	return false;
}

/* The pool's key of the upstream connection: the origin, or the parent
 * it goes to (any origin's requests can ride on it). */
static void
http_up_key(struct http_state *h, char *buf, size_t cap, const char **key,
    size_t *keylen, uint16_t *port)
{
	const struct conf_parent	*p;

	if (h->up_parent == 0) {
		*key = h->host;
		*keylen = h->hostlen;
		*port = h->port;
		return;
	}
	p = parent_conf(h->up_parent - 1);
	*key = buf;
	*keylen = parent_pool_key(p, buf, cap);
	*port = p->port;
}

/* Whether the upstream connection may serve another client's request:
 * not one that told a parent who its client was (send_proxy). */
static bool
http_up_shareable(const struct http_state *h)
{
	return h->up_parent == 0 ||
	    parent_conf(h->up_parent - 1)->send_proxy == 0;
}

/* Gives the parked upstream to the worker's pool. */
static void
http_unpark(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];
	const struct pt_addr	*a = target_addr(c);
	char			 kb[PARENT_NAME_MAX + 2];
	const char		*key;
	size_t			 keylen;
	uint16_t		 port;

	if (!h->parked)
		return;
	h->parked = false;
	if (up->io.fd < 0)
		return;
	/* Something came while it was parked: stray bytes or a close. A
	 * TLS session (an https parent's) stays with its client connection:
	 * the pool keeps plain sockets only. */
	if (!http_upstream_clean(c, up) || a == NULL ||
	    c->c_up_transport != NULL) {
		http_upstream_close(c);
		return;
	}
	http_up_key(h, kb, sizeof(kb), &key, &keylen, &port);
	upstream_put(key, keylen, port, &up->io, a, &c->c_up_local);
	up->io.fd = -1;
	up->ready = 0;
	up->hup = up->reset = false;
}

void
http_origin_done(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];

	/* One with a transport (an https parent's TLS) is kept for this
	 * client connection's next request only (http_unpark closes it:
	 * the pool keeps plain sockets). Not a tunnel through a SOCKS
	 * parent (a parent that is not the HTTP peer): it reaches one
	 * origin, but would be parked and pooled under the origin's name
	 * alone, where a request routed otherwise (direct, or another
	 * parent) would ride on it. */
	if (up->io.fd >= 0 &&
	    h->origin_keep && h->req.body_done &&
	    h->resp.body_done && h->resp.in_raw == h->resp.in_len &&
	    http_up_shareable(h) &&
	    http_conf->http.upstream_keepalive > 0 &&
	    (c->c_parent == 0 || h->up_parent != 0) &&
	    http_upstream_clean(c, up)) {
		/* The next request on this client connection most likely
		 * goes to the same origin: keep the upstream parked here,
		 * still registered, and pool it only when it is not. */
		h->parked = true;
		if (h->close_after || !h->req.body_done)
			http_unpark(c);
	} else {
		http_upstream_close(c);
	}
}

void
http_origin_drop(struct pt_conn *c)
{
	target_stop(c);
	http_unpark(c);
	http_upstream_close(c);
}

void
http_origin_close(struct pt_conn *c)
{
	http_unpark(c);
}

/* ---- the request: phases and the dial path (target.c) ---------------- */

void
http_origin_target(struct pt_conn *c, const struct host *hp, uint16_t port)
{
	struct http_state	*h = http_st(c);

	/* h->host still names the parked upstream's origin. One to a
	 * parent stays parked whatever the origin: whether this request
	 * goes through that parent is known after ACCESS. */
	if (h->parked && (h->is_connect || h->is_websocket ||
	    (h->up_parent == 0 && (port != h->port || hp->len != h->hostlen ||
	    memcmp(hp->text, h->host, hp->len) != 0))))
		http_unpark(c);
	memcpy(h->host, hp->text, hp->len + 1);
	h->hostlen = hp->len;
	h->port = port;
	c->c_req.host.ptr = h->host;
	c->c_req.host.len = h->hostlen;
	c->c_req.port = port;
}

void
http_origin_on_auth(struct pt_conn *c, enum pt_verdict v)
{
	if (target_auth_refused(c, v))
		return;
	target_access(c);
}

/* How a refusal reads on the wire: at ACCEPT there is no request to
 * answer, only a close, which logs the refusal (c_logged is false until
 * ACCEPT passes); a module's ERROR is a 500; a DENY is the module's answer, or
 * 407 with a challenge at AUTH and 403 elsewhere. */
static void
http_refuse(struct pt_conn *c, const struct target_refusal *r)
{
	const struct pt_answer	*a = r->answer;
	const char		*detail;
	int			 status;

	if (r->phase == PT_PHASE_ACCEPT) {
		conn_close(c, r->verdict == PT_VERDICT_DENY ?
		    "denied by module" : "module error");
		return;
	}
	if (r->verdict != PT_VERDICT_DENY) {
		http_origin_fail(c, 500, "module error");
		return;
	}
	status = r->phase == PT_PHASE_AUTH ? 407 : 403;
	detail = r->why != NULL ? r->why : r->phase == PT_PHASE_AUTH ?
	    "authentication required" : r->phase == PT_PHASE_DIAL ?
	    "destination denied by policy" : "denied by policy";
	if (a->http_status != 0) {
		/* The module's status speaks for itself in the body; the log
		 * still gets a reason. */
		status = a->http_status;
		if (c->c_req.error == NULL)
			c->c_req.error = detail;
		detail = NULL;
	}
	http_st(c)->client->fail(c, status, detail, a->realm, a->retry_after);
}

static void
http_target_fail(struct pt_conn *c, enum target_fail what, int err)
{
	const struct parent_route	*r = c->c_route;

	switch (what) {
	case TARGET_FAIL_NO_PARENT:
		http_st(c)->client->fail(c, 503, "every parent proxy of this "
		    "route is down", NULL, parent_route_retry_after(c));
		return;
	case TARGET_FAIL_PARENT:
		http_origin_fail(c, err == ETIMEDOUT ? 504 : 502,
		    c->c_req.error);
		return;
	case TARGET_FAIL_PARENT_REFUSED:
		/* A CONNECT's refusal by the parent reads like the target's
		 * own: a 502 naming the parent, never the parent's 403 (the
		 * client could not tell it from the target's). */
		http_origin_fail(c, r != NULL && r->rep != 0 ?
		    socks5c_rep_http_status(r->rep) : err == ETIMEDOUT ? 504 :
		    502, c->c_req.error);
		return;
	default:
		break;
	}
	if (what == TARGET_FAIL_RESOLVE) {
		http_origin_fail(c, err == ETIMEDOUT ? 504 : 502,
		    err == ENOENT ? "cannot resolve the host name" :
		    "name resolution failed");
		return;
	}
	c->c_req.error = strerror(err);
	http_origin_fail(c, err == ETIMEDOUT ? 504 : 502, err == ETIMEDOUT ?
	    "connecting to the origin timed out" :
	    "cannot connect to the origin");
}

static bool
http_connect_port_allowed(uint16_t port)
{
	const struct conf_http	*ch = &http_conf->http;
	int			 i;

	if (ch->connect_any)
		return true;
	for (i = 0; i < ch->nconnect_ports; i++)
		if (ch->connect_ports[i] == port)
			return true;
	return false;
}

/* Takes an upstream to the request's origin, or to the route's parent,
 * that <fits> accepts from the worker's pool: the request rides on it
 * (target_reuse). */
static bool
http_take_kept(struct pt_conn *c, upstream_fits_fn fits)
{
	struct http_state	*h = http_st(c);
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];
	const struct parent_route *r = c->c_route;
	char			 kb[PARENT_NAME_MAX + 2];
	const char		*key;
	size_t			 keylen;
	uint16_t		 port;

	h->up_parent = r != NULL && r->via != NULL && r->parent >= 0 ?
	    r->parent + 1 : 0;
	http_up_key(h, kb, sizeof(kb), &key, &keylen, &port);
	if (upstream_take(key, keylen, port, fits, c, &h->addrs[0],
	    &c->c_up_local, &up->io, CONN_SIDE_EVENTS,
	    h->client->on_event) < 0)
		return false;
	h->reused = true;
	h->req.keep_out = true;
	up->ready = EPOLLOUT;
	up->hup = up->reset = false;
	target_reuse(c, &h->addrs[0]);
	return true;
}

/* The route's first member is a parent (target.c chose it). */
static bool
http_via_parent(const struct pt_conn *c)
{
	return c->c_route != NULL && c->c_route->via != NULL &&
	    c->c_route->parent >= 0;
}

/* What a kept upstream must be to carry this request: the route's
 * parent (its index + 1), or 0 (the origin itself). */
static int
http_route_parent(const struct pt_conn *c)
{
	return http_via_parent(c) ? c->c_route->parent + 1 : 0;
}

/*
 * A CONNECT's own Via entries (http_request.c kept them) go to the
 * parent before ours (parent_dial.c), so that a loop of proxies through
 * CONNECT comes back with our name in it and is refused (508) as a GET
 * is. Where they do not all fit, the first entries go: the latest are
 * kept, a loop's repeated entry among them.
 */
static void
http_route_client_via(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	char			*dst = c->c_route->client_via;
	const char		*s = h->via_in, *p;
	size_t			 n;

	dst[0] = '\0';
	if (!h->is_connect || s == NULL)
		return;
	n = strlen(s);
	while (n >= sizeof(c->c_route->client_via) &&
	    (p = strstr(s, ", ")) != NULL) {
		s = p + 2;
		n = strlen(s);
	}
	if (n < sizeof(c->c_route->client_via))
		memcpy(dst, s, n + 1);
}

/*
 * ACCESS passed. What only HTTP has: the CONNECT port rule, requests the
 * proxy answers itself, and upstream connections kept alive (the parked
 * one from the last request to the same origin, or one from the worker's
 * pool), which skip resolve and connect but still run DIAL and
 * ESTABLISHED.
 */
static bool
http_access_ok(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];

	if (h->is_connect && !http_connect_port_allowed(h->port)) {
		target_deny(c, PT_PHASE_ACCESS,
		    "CONNECT to this port is not allowed");
		return false;
	}
	if (h->local != HTTP_LOCAL_NONE) {
		h->client->answer_local(c);
		return false;
	}
	if (c->c_route != NULL && c->c_route->via != NULL)
		http_route_client_via(c);
	if (h->parked && !h->is_connect && !h->is_websocket &&
	    h->up_parent == http_route_parent(c) &&
	    http_upstream_clean(c, up) && target_addr(c) != NULL &&
	    outbound_fits(c, target_addr(c), &c->c_up_local)) {
		/* Same origin as the last request, or the same parent
		 * (http_origin_target pooled it otherwise), and nothing came
		 * from it while parked (that would be the answer to no
		 * request: http_unpark closes it), and this request leaves
		 * from where it did (else the pool keeps it for one that
		 * does). */
		h->parked = false;
		h->reused = true;
		h->req.keep_out = true;
		up->ready |= EPOLLOUT;
		target_reuse(c, target_addr(c));
		return true;
	}
	http_unpark(c);
	h->reused = false;
	if (http_via_parent(c)) {
		/* Kept connections to the parent serve any origin. */
		if (!h->is_connect && !h->is_websocket && !h->retried &&
		    parent_conf(c->c_route->parent)->proto <= PARENT_HTTPS &&
		    parent_conf(c->c_route->parent)->send_proxy == 0 &&
		    http_take_kept(c, outbound_fits))
			return true;
		target_known(c, NULL, 0);
		return true;
	}
	if (!h->is_connect && !h->is_websocket && !h->retried &&
	    http_take_kept(c, outbound_fits))
		return true;
	h->reused = false;
	h->up_parent = 0;
	target_known(c, NULL, 0);
	return true;
}

/*
 * The request waited (a hook, the resolver) and is about to be dialed. A
 * client whose FIN came with its request raised no event since: it is
 * seen here, before anything goes out for it. Without a wait a FIN is a
 * half-close, and the response is still wanted (http_strict).
 */
static bool
http_may_dial(struct pt_conn *c)
{
	if (!c->c_side[SIDE_CLIENT].hup)
		return true;
	conn_close(c, "client closed while its request waited");
	return false;
}

/* A kept upstream for the request whose address DIAL judged: to that
 * very address, and leaving from where the request now would. */
static bool
http_refits(const void *arg, const struct pt_addr *to,
    const union egress_addr *local)
{
	const struct pt_conn	*c = arg;
	struct pt_addr		 a, judged;

	sockaddr_unmap((const struct sockaddr *)&to->sa, &a);
	sockaddr_unmap((const struct sockaddr *)&c->c_req.target, &judged);
	return sockaddr_equal(&a, &judged) && outbound_fits(c, to, local);
}

/*
 * DIAL chose an egress the kept upstream did not leave from (an acl
 * rule on the destination address decides only there, after the pool
 * was asked with the listener's egress): it goes back to the pool,
 * under its own, and another to the same address that fits is taken if
 * there is one. False: the request dials afresh.
 */
static bool
http_unreuse(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];

	h->reused = false;
	h->req.keep_out = false;
	upstream_put(h->host, h->hostlen, h->port, &up->io, target_addr(c),
	    &c->c_up_local);
	up->io.fd = -1;
	up->ready = 0;
	up->hup = up->reset = false;
	return !h->retried && http_take_kept(c, http_refits);
}

/*
 * The request head as an HTTP parent reads it: the request-target in
 * absolute form (RFC 9112 3.2.2), our credentials for the parent after
 * the request line. The client's own Proxy-Authorization never got into
 * the head (a hop-by-hop field). Once per request: a retry keeps it.
 */
static bool
http_parent_head(struct pt_conn *c, const struct conf_parent *p)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req;
	const char		*sp, *lf, *b = q->out;
	char			 port[8], *nb, *o;
	size_t			 plen = 0, blen, need, rest;
	bool			 v6 = memchr(h->host, ':', h->hostlen) != NULL;
	unsigned		 v;

	if (h->head_absolute || q->out == NULL || q->out_start != 0)
		return true;
	/* "METHOD SP origin-form SP version CRLF": the head is ours (http_head.c
	 * wrote it), so its first LF ends the request line. */
	if ((sp = memchr(b, ' ', q->out_len)) == NULL ||
	    (lf = memchr(sp, '\n', q->out_len - (size_t)(sp - b))) == NULL)
		return false;
	/* The port's digits, backwards: no printf on the hot path. */
	if (h->port != 80) {
		for (v = h->port; v > 0 && plen < sizeof(port); v /= 10)
			port[sizeof(port) - 1 - plen++] = (char)('0' + v % 10);
	}
	blen = p->basic != NULL ? strlen(p->basic) : 0;
	need = q->out_len + 7 + h->hostlen + (v6 ? 2 : 0) +
	    (plen > 0 ? plen + 1 : 0) + blen;
	if ((nb = buf_get(need <= buf_class_size(BUF_SMALL) ? BUF_SMALL :
	    BUF_LARGE)) == NULL || need > buf_size(nb)) {
		buf_put(nb);
		return false;
	}
	o = nb;
	memcpy(o, b, (size_t)(sp + 1 - b));
	o += sp + 1 - b;
	memcpy(o, "http://", 7);
	o += 7;
	if (v6)
		*o++ = '[';
	memcpy(o, h->host, h->hostlen);
	o += h->hostlen;
	if (v6)
		*o++ = ']';
	if (plen > 0) {
		*o++ = ':';
		memcpy(o, port + sizeof(port) - plen, plen);
		o += plen;
	}
	memcpy(o, sp + 1, (size_t)(lf + 1 - (sp + 1)));
	o += lf + 1 - (sp + 1);
	if (blen > 0) {
		memcpy(o, p->basic, blen);
		o += blen;
	}
	rest = (size_t)(b + q->out_len - (lf + 1));
	memcpy(o, lf + 1, rest);
	o += rest;
	buf_put(q->out);
	q->out = nb;
	q->out_len = (uint32_t)(o - nb);
	h->head_absolute = true;
	return true;
}

static void
http_established(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	const struct conf_parent *p = parent_serving(c);

	/* A new socket: dial.c noted what came with the connect (its
	 * registration is the one http.c would make). */
	if (!c->c_target.reused)
		c->c_side[SIDE_UPSTREAM].ready |= EPOLLOUT;
	c->c_last_active = loop_now();
	http_timer(c, http_conf->limits.idle_timeout_ms);
	h->resp_wait = false;
	if (h->is_connect) {
		h->client->connected(c);
		return;
	}
	h->up_parent = 0;
	if (p != NULL && !h->is_websocket && p->proto <= PARENT_HTTPS) {
		h->up_parent = c->c_parent;
		if (!http_parent_head(c, p)) {
			http_origin_fail(c, 502, "the request head does not fit "
			    "a buffer in the form a parent proxy reads");
			return;
		}
	}
	h->stage = HS_FORWARD;
	h->resp.head_done = false;
	h->client->resume(c);
}

static const struct target_ops http_target_ops = {
	.refuse = http_refuse,
	.fail = http_target_fail,
	.access_ok = http_access_ok,
	.may_dial = http_may_dial,
	.unreuse = http_unreuse,
	.established = http_established,
	.on_timer = http_on_timer,
};

void
http_origin_start(struct pt_conn *c)
{
	target_init(c, &http_target_ops, http_st(c)->addrs);
}

/* ---- the response head ---------------------------------------------- */

/*
 * A complete response head is in h->resp.in. Checks what the origin
 * path answers for (a switch of protocols must be the one asked for),
 * sets the response's body framing and whether the origin connection
 * may be kept, and hands the head to the client side.
 */
static void
http_origin_response_head(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;

	r->in_start = r->in_fwd = r->in_raw = (uint32_t)m->head_len;
	if (m->status >= 100 && m->status < 200 && m->status != 101) {
		/* Interim: the final response follows on the same flow. */
		if (h->client->response_head(c, m))
			http_flow_shift(r);
		return;
	}
	if (m->status == 101 && !h->is_websocket) {
		http_origin_fail(c, 502, "origin switched protocols unasked");
		return;
	}
	/* RFC 9110 7.8: the 101 names the protocol switched to, which
	 * must be one the client asked for (the only one we pass on). */
	if (m->status == 101 && !m->upgrade_websocket) {
		http_origin_fail(c, 502, "origin switched to a protocol other "
		    "than websocket");
		return;
	}
	c->c_req.status = m->status;
	/* An answer came: no retry any more, the request head can go. */
	h->req.keep_out = false;
	http_flow_compact(&h->req);
	r->body = m->body;
	r->remaining = m->content_length;
	r->head_done = true;
	h->origin_keep = m->version == 11 && !(m->conn_flags & HTTP_CONN_CLOSE)
	    && m->body != HTTP_BODY_CLOSE && m->status != 101;
	if (m->status == 101)
		h->stage = HS_TUNNEL;
	h->client->response_head(c, m);
}

/* Reads and parses the response head. 1 when the head is complete, 0 when
 * more is needed (or blocked), -1 when the connection was closed or
 * failed over. */
static int
http_read_response_head(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	struct http_msg		*m = &http_scratch;
	struct pt_str		 method;
	int			 rc;

	method.ptr = h->method;
	method.len = c->c_req.method.len;
	while (r->in_len > r->in_raw && !r->head_done) {
		if (!http_flow_head_ready(r) && r->in_len < buf_size(r->in))
			break;
		rc = http_parse_response(r->in + r->in_raw, r->in_len -
		    r->in_raw, http_conf->http.max_header_size, method, m);
		if (rc == PARSE_BAD) {
			http_origin_fail(c, 502, m->error ? m->error :
			    "invalid response from the origin");
			return -1;
		}
		if (rc == PARSE_AGAIN) {
			if (r->in_len == buf_size(r->in) && !http_flow_grow(r)) {
				http_origin_fail(c, 502,
				    "response head too large");
				return -1;
			}
			break;
		}
		m->head_len += r->in_raw;
		http_origin_response_head(c, m);
		if (c->c_state == CONN_CLOSED || h->stage == HS_REPLY)
			return -1;
	}
	return r->head_done ? 1 : 0;
}

/* RFC 9110 9.2.2: methods a client expects may be repeated. */
static bool
http_idempotent(struct pt_str method)
{
	static const char *const safe[] = {
		"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", NULL
	};
	int	 i;

	for (i = 0; safe[i] != NULL; i++)
		if (method.len == strlen(safe[i]) &&
		    memcmp(method.ptr, safe[i], method.len) == 0)
			return true;
	return false;
}

/*
 * The origin closed or failed before a response head. A reused
 * connection may have been closed by the origin just as we picked it
 * (RFC 9112 9.3.1): the request is retried once on a fresh connection
 * when that is safe, i.e. the method is idempotent and the whole request
 * (no body) is still in our buffers.
 */
static void
http_origin_gone(struct pt_conn *c, const char *why)
{
	struct http_state	*h = http_st(c);

	if (h->reused && !h->retried && h->resp.in_len == 0 &&
	    h->req.body == HTTP_BODY_NONE && !h->resp_started &&
	    http_idempotent(c->c_req.method)) {
		h->retried = true;
		h->reused = false;
		http_upstream_close(c);
		h->req.out_start = 0;
		h->stage = HS_WAIT;
		/* The timer counted this origin's response_timeout; the
		 * fresh one is reached within header_timeout, and gets its
		 * own response_timeout once the request is written again. */
		http_timer(c, http_conf->limits.header_timeout_ms);
		target_redial(c);
		return;
	}
	/* Before a final head, what reached the client can only be whole
	 * interim responses (a 100 Continue), which a final 502 may follow
	 * (RFC 9110 15.2). */
	if (!http_flow_has_output(&h->resp))
		h->resp_started = false;
	if (parent_serving(c) != NULL) {
		/* Sent to a parent: never to another (it may have acted on
		 * it); the answer names the parent. */
		static char	 reason[160];

		snprintf(reason, sizeof(reason), "parent \"%s\": %s",
		    parent_serving(c)->name, why);
		why = reason;
	}
	http_origin_fail(c, 502, why);
}

/* ---- the response: reading ------------------------------------------ */

int
http_origin_read(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];
	ssize_t			 n;

	n = http_flow_fill(c, r, &c->c_dir[SIDE_UPSTREAM], up);
	if (n == -EAGAIN)
		return 0;
	if (n < 0 && !r->head_done) {
		http_origin_gone(c, "the origin reset the connection");
		return -1;
	}
	if (n < 0) {
		/* What the client has is not the whole response: a FIN after
		 * a body that runs to the close would say it was. */
		conn_cut(c, "origin reset inside a response");
		return -1;
	}
	if (n == 0) {
		up->rd_eof = true;
		h->origin_keep = false;
		if (!r->head_done) {
			http_origin_gone(c, r->in_len == 0 ?
			    "the origin closed without a response" :
			    "the origin closed inside the response head");
			return -1;
		}
		http_flow_frame(r, true, http_conf->http.max_header_size);
		if (!r->body_done) {
			conn_close(c, "origin closed inside a response body");
			return -1;
		}
		return 1;
	}
	if (!r->head_done) {
		if (http_read_response_head(c) <= 0)
			return c->c_state == CONN_CLOSED ||
			    h->stage != HS_FORWARD ? -1 : 1;
		if (h->stage == HS_TUNNEL)
			return 1;
	}
	if (http_flow_frame(r, false, http_conf->http.max_header_size) < 0) {
		/* Nothing of the response sent yet (its head came with the
		 * bad chunk): the client can still be told, 502. */
		if (!h->resp_started)
			http_origin_fail(c, 502,
			    "bad chunked response from the origin");
		else
			conn_close(c, "bad chunked response from the origin");
		return -1;
	}
	return 1;
}
