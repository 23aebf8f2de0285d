/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The HTTP/1.1 forward proxy: one client connection, a sequence of
 * transactions on it, each forwarded to an origin over a fresh or reused
 * upstream connection, CONNECT and WebSocket upgrades handed to the relay.
 *
 * This file is the HTTP/1.1 connection's life: its state (from a pool),
 * the socket events and the pump that moves every byte that can move,
 * the end of a transaction (log, keep the connections or close them),
 * the tunnel hand-off, keep-alive, drain and the start. With
 * http_request.c (the request head) and http_answer.c (the heads the
 * client is sent) it is the HTTP/1.1 client side of http_client.h; the
 * origin path is http_origin.c, the bytes of one direction http_flow.c,
 * the state and the timer they all share http_txn.c. Map:
 * doc/internals.md section 13.
 *
 * What this file decides: when a connection may be kept, or must close
 * (RFC 9112 9), and when the timer counts response_timeout.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>

#include "worker/http.h"
#include "common/conf_types.h"
#include "worker/h2.h"
#include "worker/http_answer.h"
#include "worker/http_origin.h"
#include "worker/http_request.h"
#include "worker/http_txn.h"
#include "worker/phase.h"
#include "worker/pool.h"
#include "worker/relay.h"
#include "worker/req.h"
#include "worker/target.h"
#include "worker/worker_self.h"

/* Reads and writes per event, as in relay.c. */
#define HTTP_ROUNDS		32
/* A draining worker that has just finished a response promising
 * keep-alive waits this long for the request its client may be sending
 * already, and answers it with Connection: close, before it closes. */
#define HTTP_DRAIN_GRACE_MS	1000

static struct pool		 http_pool;

static void	http_pump(struct pt_conn *c);
static void	http_on_event(struct loop_io *io, uint32_t events);
static void	http_on_posted(struct loop_task *t);
static void	http_next_request(struct pt_conn *c);

/* The HTTP/1.1 client side, as the origin path sees it. */
static const struct http_client_ops http1_client = {
	.response_head = http_answer_response,
	.connected = http_answer_connected,
	.answer_local = http_answer_locally,
	.fail = http_fail_answer,
	.resume = http_pump,
	.on_event = http_on_event,
};

void
http_init(const struct pt_config *conf, unsigned max_conns)
{
	http_txn_init(conf);
	pool_init(&http_pool, "http state", sizeof(struct http_state),
	    max_conns);
	http_request_init(max_conns);
	http_origin_init(conf);
}

void
http_fini(void)
{
	http_origin_fini();
	http_request_fini();
	pool_fini(&http_pool);
}

static void
http_state_free(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);

	if (h == NULL)
		return;
	target_stop(c);
	http_flow_release(&h->req);
	http_flow_release(&h->resp);
	http_request_forget(h);
	pool_put(&http_pool, h);
	c->c_proto = NULL;
}

/* ---- timers --------------------------------------------------------- */

/*
 * Keeps c_timer counting the right limit in HS_FORWARD: response_timeout
 * from the moment the request is all written (an idle timer armed at
 * ESTABLISHED may be due later), idle_timeout again once the origin
 * answers, re-armed only when that is due earlier than the running
 * timer. Two heap moves per transaction at most; none per byte.
 */
static void
http_response_wait_sync(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	bool			 waiting = http_awaiting_response(h);

	if (waiting == h->resp_wait)
		return;
	h->resp_wait = waiting;
	if (waiting)
		http_timer(c, http_conf->http.response_timeout_ms);
	else if (h->stage == HS_FORWARD && http_conf->http.response_timeout_ms
	    > http_conf->limits.idle_timeout_ms)
		http_timer(c, http_conf->limits.idle_timeout_ms);
}

/* ---- interest ------------------------------------------------------- */

static bool
http_client_wants_read(const struct http_state *h)
{
	if (h->stage == HS_REQ_HEAD)
		return h->req.in == NULL || h->req.in_len < buf_size(h->req.in);
	return h->stage == HS_FORWARD && h->req.head_done &&
	    http_flow_wants_read(&h->req);
}

/*
 * Sockets are registered once, edge-triggered, for everything
 * (CONN_SIDE_EVENTS): the ready bits (conn_side.ready) remember what
 * epoll reported until an EAGAIN uses it up, and the pump tries only
 * what may succeed. Interest never changes, so a request costs no
 * epoll_ctl at all.
 */
static void
http_watch_side(struct pt_conn *c, struct conn_side *s)
{
	/* No socket yet (an upstream not dialed), unless it is an HTTP/2
	 * stream's side, which has none to have (loop_io.virt). */
	if (s->io.fd < 0 && !s->io.virt)
		return;
	if (!s->io.added) {
		if (loop_io_start(&s->io, s->io.fd, CONN_SIDE_EVENTS,
		    http_on_event) < 0)
			conn_close(c, "epoll_ctl");
		return;
	}
	s->io.fn = http_on_event;
	if (loop_io_set(&s->io, CONN_SIDE_EVENTS) < 0)
		conn_close(c, "epoll_ctl");
}

static void
http_watch(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);

	http_watch_side(c, &c->c_side[SIDE_CLIENT]);
	/* While dialing, the upstream socket belongs to dial.c. */
	if (c->c_state == CONN_CLOSED || h->stage == HS_WAIT)
		return;
	http_watch_side(c, &c->c_side[SIDE_UPSTREAM]);
}

/* ---- drain and close ------------------------------------------------ */

/*
 * May a draining worker close this connection now? Only one idle between
 * two of its client's transactions, with no byte of the next request
 * read or waiting in the kernel. A connection whose first request has not
 * arrived (just accepted, perhaps from the queue accept_stop emptied) is
 * served like any other, within header_timeout: its client has no reason
 * to expect a close and would see it as a lost request.
 */
static bool
http_may_close_idle(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);

	return h->stage == HS_REQ_HEAD && !h->first && h->req.in_len == 0 &&
	    !conn_has_unread(c);
}

/* A drain started: a keep-alive connection idle between requests goes
 * now; every other one is served and finishes its transaction with
 * Connection: close (http_answer.c's framing and http_next_request read
 * worker_self()->stopping). Unread bytes raise an edge of their own, so
 * nothing needs waking here. */
static void
http_on_drain(struct pt_conn *c)
{
	uint64_t	 quiet = loop_now() - c->c_last_active;

	if (http_st(c) == NULL || !http_may_close_idle(c))
		return;
	/* Its last response went out a moment ago: the next request may be
	 * on its way (http_next_request). */
	if (quiet < HTTP_DRAIN_GRACE_MS) {
		http_timer(c, HTTP_DRAIN_GRACE_MS - quiet);
		return;
	}
	conn_close(c, "draining");
}

/* conn_close calls this first: a parked upstream outlives its client. */
static void
http_on_close(struct pt_conn *c)
{
	if (http_st(c) != NULL)
		http_origin_close(c);
}

/* ---- the end of a transaction -------------------------------------- */

static void
http_log_transaction(struct pt_conn *c)
{
	if (!c->c_logged) {
		http_st(c)->txn_logged = true;
		conn_log_txn(c);
	} else {
		c->c_req.end_ms = loop_now();
	}
}

/* Closes a client whose answer is all written: lingering (conn.c) when
 * it may still be sending the request (a head or a body we did not read
 * to its end), since a close with unread bytes is a reset that can cost
 * the client the answer; plainly otherwise, at no extra cost. */
static void
http_close_answered(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req;

	/* An HTTP/2 stream ends with END_STREAM once its bytes are out
	 * (h2_stream.c): closing without it would reset the stream. */
	if (c->c_stream != 0) {
		(void)conn_shutdown_wr(c, &c->c_side[SIDE_CLIENT]);
		conn_close(c, NULL);
		return;
	}
	/* Later requests already here (pipelined behind one answered with
	 * close, as a draining worker answers) are unread bytes too. */
	if (!q->head_done || !q->body_done ||
	    (q->in != NULL && q->in_len > q->in_raw) ||
	    (worker_self()->stopping && conn_has_unread(c)))
		conn_close_linger(c, NULL);
	else
		conn_close(c, NULL);
}

/* Both flows are through: log, keep or drop the upstream, and either
 * close or wait for the next request. */
static void
http_transaction_done(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);

	http_log_transaction(c);
	http_origin_done(c);
	buf_put(h->resp.in);
	buf_put(h->resp.out);
	h->resp.in = h->resp.out = NULL;
	if (h->close_after || !h->req.body_done) {
		http_close_answered(c);
		return;
	}
	http_next_request(c);
}

/* The tunnel's answer (200 to CONNECT, the origin's 101) is out: hand
 * the connection to the relay with whatever each side already sent past
 * its head. */
static void
http_tunnel(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req, *r = &h->resp;
	struct relay_dir	*d;

	/* From the first byte not yet written to the origin: the rest of a
	 * request body the 101 came before (still in HTTP/1.1 framing, as
	 * the origin expects it before the switch), then whatever followed
	 * it. Only what the origin was already sent is behind us. */
	d = &c->c_dir[SIDE_CLIENT];
	if (q->in != NULL && q->in_start < q->in_len) {
		d->buf = q->in;
		d->head = q->in_start;
		d->tail = q->in_len;
		q->in = NULL;
	}
	d = &c->c_dir[SIDE_UPSTREAM];
	if (r->in != NULL && r->in_raw < r->in_len) {
		d->buf = r->in;
		d->head = r->in_raw;
		d->tail = r->in_len;
		r->in = NULL;
	}
	/* The tunnel is one transaction: LOG runs when it closes, and reads
	 * the host and method from the HTTP state, which stays until then
	 * without its buffers. */
	http_flow_release(q);
	http_flow_release(r);
	/* As before the bits were kept (relay_watch): what http.c left
	 * unread is tried once. */
	c->c_side[SIDE_CLIENT].ready = c->c_side[SIDE_UPSTREAM].ready =
	    EPOLLIN | EPOLLOUT;
	relay_start(c);
}

/* The client spoke the HTTP/2 preface: the connection is HTTP/2's from
 * here on, with the bytes read so far. No transaction of ours began. */
static void
http_to_h2(struct pt_conn *c)
{
#ifdef HAVE_NGHTTP2
	struct http_state	*h = http_st(c);
	char			*b = h->req.in;
	uint32_t		 n = h->req.in_len;

	h->req.in = NULL;
	h->req.in_len = h->req.in_raw = 0;
	http_state_free(c);
	c->c_proto_free = NULL;
	c->c_proto_close = NULL;
	c->c_proto_drain = NULL;
	c->c_proto_header = NULL;
	h2_start(c, b, n);
	buf_put(b);
#else
	conn_close(c, "HTTP/2 not built");
#endif
}

/* ---- the pump ------------------------------------------------------- */

/* Writes the response to the client: as http_flow_write. A byte out and
 * the response has started (no retry, no answer of ours any more). */
static ssize_t
http_write_client(struct pt_conn *c, struct http_state *h)
{
	ssize_t	 n;

	n = http_flow_write(c, &h->resp, &c->c_dir[SIDE_UPSTREAM],
	    &c->c_side[SIDE_CLIENT]);
	if (n > 0)
		h->resp_started = true;
	return n;
}

/* Client side: request body bytes. 1 progress, 0 none, -1 closed. */
static int
http_pump_request_body(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	ssize_t			 n;

	if (!http_client_wants_read(h) || !http_flow_may_read(c, cl))
		return 0;
	n = http_flow_fill(c, &h->req, &c->c_dir[SIDE_CLIENT], cl);
	if (n == -EAGAIN)
		return 0;
	if (n <= 0) {
		conn_close(c, n == 0 ? "client closed inside a request body" :
		    "read failed");
		return -1;
	}
	if (http_flow_frame(&h->req, false,
	    http_conf->http.max_header_size) < 0) {
		http_fail(c, 400, "bad chunked request body");
		return -1;
	}
	return 1;
}

static void
http_pump(struct pt_conn *c)
{
	struct http_state	*h;
	ssize_t			 n;
	int			 i, progress, rc;

	for (i = 0; i < HTTP_ROUNDS; i++) {
		h = http_st(c);
		progress = 0;
		switch (h->stage) {
		case HS_REQ_HEAD:
			http_request_read(c);
			if (c->c_state == CONN_CLOSED)
				return;
			h = http_st(c);
			if (h->h2_preface) {
				http_to_h2(c);
				return;
			}
			if (h->stage == HS_REQ_HEAD)
				goto out;
			continue;
		case HS_WAIT:
			goto out;
		case HS_REPLY:
		case HS_TUNNEL:
			if (http_write_client(c, h) < 0)
				return;
			if (http_flow_has_output(&h->resp))
				goto out;
			if (h->stage == HS_TUNNEL) {
				http_tunnel(c);
				return;
			}
			http_log_transaction(c);
			if (h->close_after) {
				http_close_answered(c);
				return;
			}
			http_next_request(c);
			return;
		case HS_FORWARD:
			break;
		}
		if ((n = http_origin_send(c)) < 0)
			return;
		progress |= n > 0;
		if ((n = http_write_client(c, h)) < 0)
			return;
		progress |= n > 0;
		if ((rc = http_pump_request_body(c)) < 0)
			return;
		progress |= rc;
		if ((rc = http_origin_receive(c)) < 0)
			return;
		progress |= rc;
		h = http_st(c);
		if (h->stage == HS_TUNNEL)
			continue;
		if (http_flow_finished(&h->resp) &&
		    (http_flow_finished(&h->req) || h->close_after)) {
			http_transaction_done(c);
			return;
		}
		if (!progress)
			goto out;
	}
	/* Out of rounds with bytes still moving: edge-triggered epoll will
	 * not call again for readiness we have not used up, so come back
	 * after the other connections had their turn. */
	loop_post(&c->c_post, http_on_posted);
out:
	if (c->c_state != CONN_CLOSED) {
		http_response_wait_sync(c);
		http_watch(c);
	}
}

static void
http_on_posted(struct loop_task *t)
{
	struct pt_conn	*c = (struct pt_conn *)((char *)t -
			    offsetof(struct pt_conn, c_post));

	/* Closed, or handed to the relay, since it was posted: nothing to
	 * do (the memory lives until the end of the round). */
	if (c->c_state != CONN_CLOSED && c->c_state != CONN_RELAY)
		http_pump(c);
}

/* A spent budget got more (conn.c's c_budget_task). */
static void
http_on_budget(struct pt_conn *c)
{
	if (c->c_state != CONN_CLOSED && c->c_state != CONN_RELAY)
		http_pump(c);
}

static void
http_on_event(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;
	struct pt_conn		*c = s->conn;

	/* A peer that shut its side (s->hup) makes an idle upstream
	 * unusable. */
	conn_side_note_events(s, events);
	/* The client left while its request waited on a module (AGAIN) or
	 * on the resolver: nothing may be dialed or sent for it. Only
	 * then: a FIN that came with the request, or while dialing, is a
	 * half-close, and the response is still wanted. */
	if (s == &c->c_side[SIDE_CLIENT] && http_st(c)->stage == HS_WAIT &&
	    (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
	    (c->c_waiting || target_resolving(c))) {
		conn_close(c, "client closed while its request waited");
		return;
	}
	/* A client that reset once its request head was in is gone: a
	 * body blocked on an origin that does not read would never read the
	 * reset, and the origin connection would be held to idle_timeout.
	 * (Before that, the read sees the reset, as doc/internals.md's
	 * close-path table says.) */
	if (http_st(c)->req.head_done && conn_client_failed(c, s, events)) {
		conn_cut(c, "reset by peer");
		return;
	}
	http_pump(c);
}

/* ---- keep-alive ----------------------------------------------------- */

/* Resets for the next request on the same client connection, and serves
 * it at once if it was pipelined behind the last one. */
static void
http_next_request(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req;
	bool			 drain_wait;

	http_flow_shift(q);
	/* Draining: the next request belongs to the new generation, unless
	 * some of it has already come here (pipelined, or sent before our
	 * last response could say close): that one is served, then we
	 * close. The response just finished promised keep-alive, so the
	 * client may be sending that request right now: it gets
	 * HTTP_DRAIN_GRACE_MS to arrive (http_on_timer closes after), not a
	 * close it would meet with the request in flight. */
	drain_wait = worker_self()->stopping && q->in_len == 0 &&
	    !conn_has_unread(c);
	buf_put(q->out);
	q->out = NULL;
	q->out_start = q->out_len = 0;
	memset(&h->resp, 0, sizeof(h->resp));
	q->head_done = q->body_done = q->dechunk = q->keep_out = false;
	q->scan = 0;
	q->seen_lf = false;
	memset(&q->chunk, 0, sizeof(q->chunk));
	q->body = HTTP_BODY_NONE;
	h->stage = HS_REQ_HEAD;
	http_origin_reset(h);
	h->first = h->close_after = h->resp_started = false;
	h->is_connect = h->is_head = h->is_websocket = false;
	http_request_forget(h);
	req_txn_reset(c);
	if (q->in_len > 0) {
		http_txn_open(c);
		http_timer(c, http_conf->limits.header_timeout_ms);
		c->c_side[SIDE_CLIENT].ready |= EPOLLIN;
	} else {
		http_flow_release(q);
		http_timer(c, drain_wait && HTTP_DRAIN_GRACE_MS <
		    http_conf->limits.idle_timeout_ms ? HTTP_DRAIN_GRACE_MS :
		    http_conf->limits.idle_timeout_ms);
	}
	http_pump(c);
}

static void
http_on_accept(struct pt_conn *c, enum pt_verdict v)
{
	if (target_refused(c, PT_PHASE_ACCEPT, v))
		return;
	/* No transaction until the first byte of a request arrives. */
	c->c_logged = true;
	http_pump(c);
}

void
http_start(struct pt_conn *c)
{
	struct http_state	*h;

	if ((h = pool_get(&http_pool)) == NULL) {
		conn_close(c, "out of HTTP state");
		return;
	}
	memset(h, 0, sizeof(*h));
	h->conn = c;
	h->client = &http1_client;
	h->first = true;
	h->stage = HS_REQ_HEAD;
	c->c_proto = h;
	c->c_proto_free = http_state_free;
	c->c_proto_close = http_on_close;
	c->c_proto_drain = http_on_drain;
	c->c_proto_header = http_req_header;
	c->c_budget_resume = http_on_budget;
	c->c_req.proto = PT_PROTO_HTTP;
	http_origin_start(c);
	/* ACCEPT is part of the first transaction: a refusal there is
	 * logged; http_on_accept marks it logged when it passes. */
	c->c_logged = false;
	c->c_side[SIDE_CLIENT].ready = EPOLLIN | EPOLLOUT;
	http_timer(c, http_conf->limits.header_timeout_ms);
	phase_run(c, PT_PHASE_ACCEPT, http_on_accept);
}
