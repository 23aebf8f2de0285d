/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The HTTP/1.1 forward proxy: one client connection, a sequence of
 * transactions on it, each forwarded to an origin over a fresh or reused
 * upstream connection, CONNECT and WebSocket upgrades handed to the relay.
 *
 * A transaction has two flows, the request (client to origin) and the
 * response (origin to client). Each flow owns an input buffer, where bytes
 * from its source are read and framed in place, and an output buffer for
 * the head portico rewrote, which is written before the framed body bytes.
 * Bodies stream: a flow reads again only when everything it read has been
 * written, so each flow holds at most one buffer of body in flight.
 *
 * Heads are parsed into one scratch struct per worker and rewritten at
 * once; nothing of the scratch survives a callback. Framing is decided by
 * http_parse.c; the strict rules against smuggling live there. What this
 * file decides: when a connection may be kept, reused, or must close, and
 * what status a failure becomes (RFC 9110 15, RFC 9112 9).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "worker/http.h"
#include "common/counters.h"
#include "common/log.h"
#include "common/conf_types.h"
#include "worker/buf.h"
#include "worker/dns.h"
#include "worker/http_head.h"
#include "worker/host.h"
#include "worker/http_parse.h"
#include "worker/phase.h"
#include "worker/pool.h"
#include "worker/relay.h"
#include "worker/req.h"
#include "worker/target.h"
#include "worker/upstream.h"
#include "worker/worker_self.h"

/* Reads and writes per event, as in relay.c. */
#define HTTP_ROUNDS		32
/* A draining worker that has just finished a response promising
 * keep-alive waits this long for the request its client may be sending
 * already, and answers it with Connection: close, before it closes. */
#define HTTP_DRAIN_GRACE_MS	1000
#define HTTP_HOST_MAX		256
#define HTTP_CRED_MAX		256

/* OPTIONS or TRACE with Max-Forwards: 0: the proxy is the last recipient
 * and answers itself (RFC 9110 7.6.2), once AUTH and ACCESS passed. */
#define HTTP_LOCAL_NONE		0
#define HTTP_LOCAL_OPTIONS	1
#define HTTP_LOCAL_TRACE	2

enum http_stage {
	HS_REQ_HEAD = 0,	/* waiting for / reading a request head */
	HS_WAIT,		/* phases, resolver or dial in progress */
	HS_FORWARD,		/* request and response flowing */
	HS_REPLY,		/* writing a response of our own */
	HS_TUNNEL,		/* writing 200/101, then hand over to relay */
};

/* One direction of a transaction. Invariants: in_start <= in_fwd <=
 * in_raw <= in_len <= buf_size(in); bytes [in_start, in_fwd) are framed
 * body ready to write; [in_raw, in_len) are read and not yet framed;
 * [in_fwd, in_raw) is chunk framing removed while de-chunking. */
struct http_flow {
	char		*in;
	uint32_t	 in_start, in_fwd, in_raw, in_len;
	char		*out;
	uint32_t	 out_start, out_len;
	enum http_body	 body;
	uint64_t	 remaining;
	struct http_chunked chunk;
	bool		 dechunk;	/* drop chunk framing on the way */
	bool		 keep_out;	/* written head kept for a retry */
	uint32_t	 scan;		/* head: searched for its end up to */
	bool		 seen_lf;	/* head: its first line is complete */
	bool		 head_done;	/* head parsed and out built */
	bool		 body_done;	/* every body byte framed */
	/* Body bytes in the connection's pipe for this flow (c_dir[source
	 * side].pipe_fill): spliced from the source, not yet to the
	 * destination. Only once the buffers hold nothing, so they are
	 * younger than anything in <in> or <out>. */
	size_t		 piped;
	bool		 pipe_full;	/* splice in said EAGAIN with bytes
					 * piped: read again after a write */
	/* Request: the raw head, kept at the front of <in> from its parse
	 * on, for pt_req_header; 0 once <in> was given back or shifted. */
	uint32_t	 head_len;
};

struct http_state {
	struct pt_conn		*conn;
	enum http_stage		 stage;
	struct http_flow	 req, resp;
	int			 client_version;	/* 10 or 11 */
	bool			 first;		/* first request of the conn */
	bool			 keep_client;	/* client allows another one */
	bool			 close_after;	/* we close after this one */
	bool			 is_head, is_connect, is_websocket;
	bool			 reused, retried;
	bool			 resp_started;	/* bytes went to the client */
	bool			 origin_keep;	/* origin allows reuse */
	bool			 parked;	/* upstream kept from the last */
	bool			 resp_wait;	/* c_timer counts response_timeout */
	bool			 txn_logged;	/* c_req.txn has had its LOG */
	/* The request-target's path and query, copied for c_req.path (the
	 * head's buffer may go before LOG); only when modules run. */
	char			*path;
	/* User-Agent then Referer, PT_LOG_HEADER_MAX bytes each at most,
	 * kept from the head to LOG while a module has PT_MODF_LOG_HEADERS
	 * (http_keep_log_headers); NULL when neither was sent. */
	char			*loghdr;
	uint16_t		 ua_len, ref_len;
	uint8_t			 local;		/* HTTP_LOCAL_*: answered here */
	uint32_t		 head_len;	/* of the request in req.in */
	struct pt_addr		 addrs[DNS_MAX_ADDRS];	/* target.c's */
	uint16_t		 port;
	size_t			 hostlen;
	char			 host[HTTP_HOST_MAX];
	char			 method[32];
	char			 cred[HTTP_CRED_MAX];
};

static struct pool		 http_pool;
/* c_req.path copies of up to HTTP_PATH_SMALL bytes, most of them; longer
 * ones take a buffer. buf_put gives either back (pool_of). */
#define HTTP_PATH_SMALL		256
static struct pool		 http_path_pool;
static struct pool		 http_loghdr_pool;
static const struct pt_config	*http_conf;
/* One parse at a time per worker: nothing keeps it across callbacks. */
static struct http_msg		 http_scratch;

static void	http_on_event(struct loop_io *io, uint32_t events);
static void	http_pump(struct pt_conn *c);
static void	http_on_posted(struct loop_task *t);
static void	http_next_request(struct pt_conn *c);
static void	http_upstream_close(struct pt_conn *c);
static void	http_drop_log_headers(struct http_state *h);

void
http_init(const struct pt_config *conf, unsigned max_conns)
{
	http_conf = conf;
	pool_init(&http_pool, "http state", sizeof(struct http_state),
	    max_conns);
	pool_init(&http_path_pool, "http path", HTTP_PATH_SMALL, max_conns);
	pool_init(&http_loghdr_pool, "http log headers",
	    2 * PT_LOG_HEADER_MAX, max_conns);
	upstream_init(conf->http.upstream_keepalive,
	    conf->http.upstream_idle_timeout_ms);
}

void
http_fini(void)
{
	upstream_fini();
	pool_fini(&http_loghdr_pool);
	pool_fini(&http_path_pool);
	pool_fini(&http_pool);
}

static struct http_state *
http_st(struct pt_conn *c)
{
	return c->c_proto;
}

/* ---- buffers -------------------------------------------------------- */

/* Room for a rewritten head: what we add (Host, Via, Connection,
 * Transfer-Encoding) is far less than this. */
#define HTTP_HEAD_SLACK		512

/* A buffer for a head rewritten from one of <head_len> bytes: small when
 * it fits, so common requests never touch the large class. */
static char *
http_head_buf(size_t head_len)
{
	return buf_get(head_len + HTTP_HEAD_SLACK <= buf_class_size(BUF_SMALL) ?
	    BUF_SMALL : BUF_LARGE);
}

/* Moves what <f> has yet to write to a buffer of the largest class;
 * false when out of buffers. */
static bool
http_out_grow(struct http_flow *f)
{
	size_t	 pending = f->out_len - f->out_start;
	char	*big;

	/* Already the largest class: the write says whether it fits. */
	if (buf_size(f->out) >= buf_class_size(BUF_LARGE))
		return true;
	if ((big = buf_get(BUF_LARGE)) == NULL)
		return false;
	memcpy(big, f->out + f->out_start, pending);
	buf_put(f->out);
	f->out = big;
	f->out_start = 0;
	f->out_len = (uint32_t)pending;
	return true;
}

static void
http_flow_release(struct http_flow *f)
{
	buf_put(f->in);
	buf_put(f->out);
	f->in = f->out = NULL;
	f->in_start = f->in_fwd = f->in_raw = f->in_len = 0;
	f->out_start = f->out_len = 0;
	f->scan = 0;
	f->seen_lf = false;
	f->head_len = 0;
}

/* Drops what has been written; gives the input buffer back when it holds
 * nothing, so an idle connection keeps no payload memory. */
static void
http_flow_compact(struct http_flow *f)
{
	if (f->out != NULL && f->out_start == f->out_len && !f->keep_out) {
		buf_put(f->out);
		f->out = NULL;
		f->out_start = f->out_len = 0;
	}
	if (f->in == NULL || f->in_start < f->in_fwd)
		return;
	if (f->in_raw == f->in_len) {
		buf_put(f->in);
		f->in = NULL;
		f->in_start = f->in_fwd = f->in_raw = f->in_len = 0;
		f->scan = 0;
		f->seen_lf = false;
		f->head_len = 0;
	}
}

/* Moves unframed bytes to the front of the input buffer (the start of the
 * next message, pipelined). */
static void
http_flow_shift(struct http_flow *f)
{
	uint32_t	 n;

	if (f->in == NULL || f->in_raw == 0)
		return;
	n = f->in_len - f->in_raw;
	memmove(f->in, f->in + f->in_raw, n);
	f->in_start = f->in_fwd = f->in_raw = 0;
	f->in_len = n;
	f->scan = 0;
	f->seen_lf = false;
	f->head_len = 0;
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
	buf_put(h->path);
	http_drop_log_headers(h);
	pool_put(&http_pool, h);
	c->c_proto = NULL;
}

/* ---- timers --------------------------------------------------------- */

static void	http_fail(struct pt_conn *c, int status, const char *detail);
static void	http_txn_open(struct pt_conn *c);
static bool	http_awaiting_response(const struct http_state *h);
static bool	http_flow_has_output(const struct http_flow *f);

/*
 * http.response_timeout ran out: the whole request went to the origin and
 * not one byte of a response came back. The origin is not retried (it had
 * the request; a second wait would double the client's) and its
 * connection is closed by http_fail, never pooled.
 */
static void
http_response_timeout(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	char			 addr[SOCKADDR_STRLEN];

	pt_clog(c, PT_LOG_WARNING, "origin %s (%.*s) sent no response within "
	    "response_timeout (%u s): 504", sockaddr_fmt((const struct
	    sockaddr *)&c->c_req.target, addr, sizeof(addr)),
	    (int)h->hostlen, h->host,
	    http_conf->http.response_timeout_ms / 1000);
	/* What reached the client so far can only be whole interim (1xx)
	 * responses, which a final one may follow (RFC 9110 15.2). */
	if (!http_flow_has_output(&h->resp))
		h->resp_started = false;
	http_fail(c, 504, "origin sent no response in time");
}

static void
http_on_timer(struct pt_timer *t, void *arg)
{
	struct pt_conn		*c = arg;
	struct http_state	*h = http_st(c);
	uint64_t		 idle = http_conf->limits.idle_timeout_ms;
	uint64_t		 quiet = loop_now() - c->c_last_active;
	bool			 waiting;

	switch (h->stage) {
	case HS_REQ_HEAD:
		/* A head that does not arrive in time gets 408; a keep-alive
		 * connection idle between requests is closed without a word
		 * (RFC 9112 9.5 allows it). */
		if (h->req.in_len > 0 || h->first)
			http_fail(c, 408, "request head not received in time");
		else
			conn_close(c, "idle keep-alive connection");
		return;
	case HS_WAIT:
		http_fail(c, 504, "timed out before reaching the origin");
		return;
	default:
		break;
	}
	/* Lazy, like the relay: bytes moving only set c_last_active. The
	 * wait for a response is measured from the last request byte
	 * written (or interim response passed on) against
	 * response_timeout, everything else against idle_timeout. */
	waiting = http_awaiting_response(h);
	h->resp_wait = waiting;
	if (waiting)
		idle = http_conf->http.response_timeout_ms;
	if (quiet < idle) {
		pt_timer_start(&c->c_timer, idle - quiet, http_on_timer, c);
		return;
	}
	if (waiting) {
		http_response_timeout(c);
		return;
	}
	if (!h->resp_started && h->stage == HS_FORWARD)
		http_fail(c, 504, "origin did not answer in time");
	else
		conn_abort(c, "idle timeout");
}

static void
http_timer(struct pt_conn *c, uint64_t ms)
{
	pt_timer_start(&c->c_timer, ms, http_on_timer, c);
}

/* ---- interest ------------------------------------------------------- */

/* A socket without a transport: its readiness follows its byte queues. */
static bool
http_plain(const struct pt_conn *c, const struct conn_side *s)
{
	return s != &c->c_side[SIDE_CLIENT] || c->c_transport == NULL;
}

/* Bytes to write from the flow's buffers (its head, framed body). */
static bool
http_flow_has_buffered(const struct http_flow *f)
{
	return (f->out != NULL && f->out_start < f->out_len) ||
	    (f->in != NULL && f->in_start < f->in_fwd);
}

static bool
http_flow_has_output(const struct http_flow *f)
{
	return http_flow_has_buffered(f) || f->piped > 0;
}

/* May the flow read from its source now? Only with nothing left to write
 * (one buffer in flight), or while a head is incomplete. A body going
 * through the pipe reads while the pipe has room, overlapping the writes
 * as the tunnel relay does. */
static bool
http_flow_wants_read(const struct http_flow *f)
{
	if (f->body_done)
		return false;
	if (!f->head_done)
		return f->in == NULL || f->in_len < buf_size(f->in);
	if (f->piped > 0)
		return !f->pipe_full && f->piped < RELAY_PIPE_HIGH;
	return !http_flow_has_output(f) && f->in_raw == f->in_len;
}

static bool
http_client_wants_read(const struct http_state *h)
{
	if (h->stage == HS_REQ_HEAD)
		return h->req.in == NULL || h->req.in_len < buf_size(h->req.in);
	return h->stage == HS_FORWARD && h->req.head_done &&
	    http_flow_wants_read(&h->req);
}

static bool
http_upstream_wants_read(const struct http_state *h)
{
	return h->stage == HS_FORWARD && http_flow_wants_read(&h->resp);
}

/*
 * Sockets are registered once, edge-triggered, for everything: the ready
 * bits (conn_side.ready) remember what epoll reported until an EAGAIN
 * uses it up, and the pump tries only what may succeed. Interest never
 * changes, so a request costs no epoll_ctl at all.
 */
#define HTTP_EVENTS	CONN_SIDE_EVENTS

static void
http_watch_side(struct pt_conn *c, struct conn_side *s)
{
	if (s->io.fd < 0)
		return;
	if (!s->io.added) {
		if (loop_io_start(&s->io, s->io.fd, HTTP_EVENTS,
		    http_on_event) < 0)
			conn_close(c, "epoll_ctl");
		return;
	}
	s->io.fn = http_on_event;
	if (loop_io_set(&s->io, HTTP_EVENTS) < 0)
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

/* ---- failures and our own responses -------------------------------- */

/*
 * Whether an origin connection may carry another request: nothing came
 * from it beyond the response just read (a body longer than its framing
 * said, a close). Bytes waiting there would answer the next request, and
 * every later one would get the answer before its own. Known from the
 * events when the last read was short (the usual case, no system call);
 * otherwise a read came to the exact end of the response with more
 * possibly behind it, and one peek tells.
 */
static bool
http_upstream_clean(struct conn_side *up)
{
	char	 b;

	if (up->hup)
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

/* Gives the parked upstream to the worker's pool. */
static void
http_unpark(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];
	const struct pt_addr	*a = target_addr(c);

	if (!h->parked)
		return;
	h->parked = false;
	if (up->io.fd < 0)
		return;
	/* Something came while it was parked: stray bytes or a close. */
	if (up->hup || (up->ready & EPOLLIN) || a == NULL) {
		http_upstream_close(c);
		return;
	}
	upstream_put(h->host, h->hostlen, h->port, &up->io, a);
	up->io.fd = -1;
	up->ready = 0;
	up->hup = up->reset = false;
}

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
 * Connection: close (http_response_head and http_next_request read
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
		http_unpark(c);
}

static void
http_upstream_close(struct pt_conn *c)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];

	if (s->io.fd < 0)
		return;
	loop_io_stop(&s->io);
	close(s->io.fd);
	s->io.fd = -1;
	s->ready = 0;
	s->rd_eof = s->wr_shut = s->hup = s->reset = false;
}

/* The head's length in a response of ours (head and body in <p>). */
static int32_t
http_head_length(const char *p, size_t n)
{
	const char	*e = memmem(p, n, "\r\n\r\n", 4);

	return e != NULL ? (int32_t)(e + 4 - p) : (int32_t)n;
}

/*
 * Answers the current request with <status> (one of ours), unless part of
 * a response already went out, in which case all that is left is to
 * close. After it, the connection closes, except after a 407 to a request
 * without a body, so that a client can retry with credentials. A 407
 * carries a challenge for <realm> ("portico" when NULL); <retry_after>
 * seconds, when not 0, become Retry-After (429, 503).
 */
static void
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
	target_stop(c);
	pt_timer_stop(&c->c_timer);
	http_unpark(c);
	http_upstream_close(c);
	/* A client that asked for credentials may send them on the same
	 * connection. Not one whose refused CONNECT already has bytes
	 * behind it: those were meant for the tunnel (a TLS hello), and
	 * must not be read as its next request. */
	if (!(status == 407 && h->req.body_done && h->keep_client) ||
	    (h->is_connect && h->req.in != NULL &&
	    h->req.in_len > h->req.in_raw) || worker_self()->stopping)
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
	http_pump(c);
}

static void
http_fail(struct pt_conn *c, int status, const char *detail)
{
	http_fail_answer(c, status, detail, NULL, 0);
}

/* ---- the end of a transaction -------------------------------------- */

/*
 * A transaction starts: LOG will run for it (at its end or at the close).
 * The connection's first one keeps the number conn_new took; each later
 * one takes the next. Callers set start_ms.
 */
static void
http_txn_open(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);

	c->c_logged = false;
	if (h->txn_logged) {
		c->c_req.txn = conn_txn_next();
		h->txn_logged = false;
	}
}

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
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];

	http_log_transaction(c);
	if (up->io.fd >= 0 && h->origin_keep && h->req.body_done &&
	    h->resp.body_done && h->resp.in_raw == h->resp.in_len &&
	    http_conf->http.upstream_keepalive > 0 &&
	    http_upstream_clean(up)) {
		/* The next request on this client connection most likely
		 * goes to the same origin: keep the upstream parked here,
		 * still registered, and pool it only when it is not. */
		h->parked = true;
		if (h->close_after || !h->req.body_done)
			http_unpark(c);
	} else {
		http_upstream_close(c);
	}
	buf_put(h->resp.in);
	buf_put(h->resp.out);
	h->resp.in = h->resp.out = NULL;
	if (h->close_after || !h->req.body_done) {
		http_close_answered(c);
		return;
	}
	http_next_request(c);
}

/* ---- bodies through a pipe ------------------------------------------ */

/*
 * Large bodies of known length, and bodies delimited by close, move from
 * socket to socket through a pooled pipe (relay_splice_in/out) instead of
 * being copied through a buffer, as HAProxy does: nothing in portico or
 * its modules reads body bytes. Not with a transport (its bytes must pass
 * through the module), not for chunked bodies (the framing is checked),
 * and only once the buffers hold nothing of the flow, so the order of the
 * bytes holds. A body of known length is read exactly: never a byte of
 * the next message. Which bodies are worth a pipe: relay_body_splices.
 */

static struct relay_dir *
http_flow_dir(struct pt_conn *c, const struct http_flow *f)
{
	return f == &http_st(c)->req ? &c->c_dir[SIDE_CLIENT] :
	    &c->c_dir[SIDE_UPSTREAM];
}

static bool
http_flow_splices(const struct pt_conn *c, const struct http_flow *f)
{
	if (f->piped > 0)
		return true;
	if (c->c_transport != NULL || !f->head_done ||
	    f->body_done || http_flow_has_buffered(f) ||
	    (f->in != NULL && f->in_raw < f->in_len))
		return false;
	if (f->body == HTTP_BODY_CLOSE)
		return relay_body_splices(UINT64_MAX);
	return f->body == HTTP_BODY_LENGTH &&
	    relay_body_splices(f->remaining);
}

/* The budget a read from <src> spends: PT_DIR_UP from the client. */
static int
http_src_dir(const struct pt_conn *c, const struct conn_side *src)
{
	return src == &c->c_side[SIDE_CLIENT] ? PT_DIR_UP : PT_DIR_DOWN;
}

/* May <src> be read now: readiness noted or bytes in its transport, and
 * budget left (without it the socket is not read, and
 * pt_conn_budget_add resumes the pump). */
static bool
http_may_read(struct pt_conn *c, struct conn_side *src)
{
	return conn_readable(c, src) &&
	    c->c_budget[http_src_dir(c, src)].left != 0;
}

/* <n> bytes were read from <src>: the connection is active, the
 * direction's budget pays for them, and what the client sent counts as
 * bytes_in. */
static void
http_count_read(struct pt_conn *c, struct conn_side *src, ssize_t n)
{
	c->c_last_active = loop_now();
	conn_budget_take(c, http_src_dir(c, src), (uint64_t)n);
	if (src == &c->c_side[SIDE_CLIENT]) {
		c->c_req.bytes_in += (uint64_t)n;
		counters_add(CTR_BYTES_IN, n);
	}
}

/* Reads body bytes from <src> into the flow's pipe: as http_flow_read. */
static ssize_t
http_flow_splice_in(struct pt_conn *c, struct http_flow *f,
    struct conn_side *src)
{
	struct relay_dir	*d = http_flow_dir(c, f);
	size_t			 len = SIZE_MAX;
	ssize_t			 n;

	if (f->body == HTTP_BODY_LENGTH)
		len = (size_t)f->remaining;
	n = relay_splice_in(d, src->io.fd,
	    conn_budget_cap(c, http_src_dir(c, src), len));
	if (n == -EAGAIN) {
		/* Socket empty, or pipe full: only an empty pipe tells. */
		if (d->pipe_fill == 0)
			src->ready &= ~(uint32_t)EPOLLIN;
		else
			f->pipe_full = true;
		return n;
	}
	if (n <= 0)
		return n;
	f->piped = d->pipe_fill;
	if (f->body == HTTP_BODY_LENGTH) {
		f->remaining -= (uint64_t)n;
		if (f->remaining == 0)
			f->body_done = true;
	}
	http_count_read(c, src, n);
	return n;
}

/* A write to <dst> failed. A client that reset has its reset passed on
 * to the origin (conn_cut), so a request body cut short is not taken for
 * complete there. An origin that stopped taking the request may have
 * answered it already (a 413 before the body's end): its client is not
 * reset, which could cost it that answer; an abortive close. */
static void
http_send_failed(struct pt_conn *c, struct conn_side *dst, ssize_t err)
{
	if ((err == -EPIPE || err == -ECONNRESET) &&
	    dst == &c->c_side[SIDE_CLIENT])
		conn_cut(c, "reset by peer");
	else
		conn_abort(c, err == -EPIPE || err == -ECONNRESET ?
		    "reset by peer" : "send failed");
}

/* Writes the flow's piped bytes to <dst>: as http_flow_write. */
static int
http_flow_splice_out(struct pt_conn *c, struct http_flow *f,
    struct conn_side *dst)
{
	struct relay_dir	*d = http_flow_dir(c, f);
	ssize_t			 n;

	n = relay_splice_out(d, dst->io.fd);
	f->piped = d->pipe_fill;
	if (n == -EAGAIN) {
		dst->ready &= ~(uint32_t)EPOLLOUT;
		return 0;
	}
	if (n < 0) {
		http_send_failed(c, dst, n);
		return -1;
	}
	if (n == 0)
		return 0;
	f->pipe_full = false;
	c->c_last_active = loop_now();
	if (dst == &c->c_side[SIDE_CLIENT]) {
		c->c_req.bytes_out += (uint64_t)n;
		counters_add(CTR_BYTES_OUT, n);
		http_st(c)->resp_started = true;
	}
	return 1;
}

/* Reads from <src> into the flow: through the pipe when the body may go
 * that way, else into the buffer (also when no pipe can be had). */
static ssize_t	http_flow_read(struct pt_conn *c, struct http_flow *f,
		    struct conn_side *src);

static ssize_t
http_flow_fill(struct pt_conn *c, struct http_flow *f, struct conn_side *src)
{
	ssize_t	 n;

	if (http_flow_splices(c, f)) {
		n = http_flow_splice_in(c, f, src);
		/* pipe2 failed: no pipe is held, so nothing is piped, and
		 * the buffer keeps the order. */
		if (n != -EMFILE && n != -ENFILE)
			return n;
	}
	return http_flow_read(c, f, src);
}

/* ---- writing -------------------------------------------------------- */

/* Writes flow <f> to side <dst>. 1 when something moved, 0 when blocked
 * or nothing to do, -1 after closing the connection. */
static int
http_flow_write(struct pt_conn *c, struct http_flow *f, struct conn_side *dst)
{
	ssize_t		 n;

	struct iovec	 iov[2];
	int		 niov = 0;
	size_t		 outn;

	if (!(dst->ready & EPOLLOUT) || !http_flow_has_output(f))
		return 0;
	if (!http_flow_has_buffered(f))
		return http_flow_splice_out(c, f, dst);
	/* The head and the body bytes behind it go in one system call. */
	outn = f->out != NULL ? f->out_len - f->out_start : 0;
	if (outn > 0) {
		iov[niov].iov_base = f->out + f->out_start;
		iov[niov++].iov_len = outn;
	}
	if (f->in != NULL && f->in_start < f->in_fwd) {
		iov[niov].iov_base = f->in + f->in_start;
		iov[niov++].iov_len = f->in_fwd - f->in_start;
	}
	n = conn_sendv(c, dst, iov, niov);
	/* Likewise a short write filled the socket buffer. */
	if (n >= 0 && (size_t)n < iov[0].iov_len +
	    (niov == 2 ? iov[1].iov_len : 0) && http_plain(c, dst))
		dst->ready &= ~(uint32_t)EPOLLOUT;
	if (n == -EAGAIN) {
		dst->ready &= ~(uint32_t)EPOLLOUT;
		return 0;
	}
	if (n < 0) {
		http_send_failed(c, dst, n);
		return -1;
	}
	if ((size_t)n <= outn) {
		f->out_start += (uint32_t)n;
	} else {
		f->out_start += (uint32_t)outn;
		f->in_start += (uint32_t)((size_t)n - outn);
	}
	c->c_last_active = loop_now();
	if (dst == &c->c_side[SIDE_CLIENT]) {
		c->c_req.bytes_out += (uint64_t)n;
		counters_add(CTR_BYTES_OUT, n);
		http_st(c)->resp_started = true;
	}
	http_flow_compact(f);
	return 1;
}

/* ---- framing -------------------------------------------------------- */

/* Frames what was read of a body: advances in_raw and in_fwd. 0, or -1
 * on a framing error. */
static int
http_flow_frame(struct http_flow *f, bool eof)
{
	size_t		 off, dlen, avail;
	ssize_t		 n;

	while (!f->body_done && f->in_raw < f->in_len) {
		avail = f->in_len - f->in_raw;
		switch (f->body) {
		case HTTP_BODY_NONE:
			f->body_done = true;
			break;
		case HTTP_BODY_LENGTH:
			if (avail > f->remaining)
				avail = (size_t)f->remaining;
			f->in_raw += (uint32_t)avail;
			f->in_fwd = f->in_raw;
			f->remaining -= avail;
			if (f->remaining == 0)
				f->body_done = true;
			break;
		case HTTP_BODY_CHUNKED:
			n = http_chunked_feed(&f->chunk, f->in + f->in_raw,
			    avail, http_conf->http.max_header_size, &off, &dlen);
			if (n < 0)
				return -1;
			if (f->dechunk && dlen > 0) {
				memmove(f->in + f->in_fwd,
				    f->in + f->in_raw + off, dlen);
				f->in_fwd += (uint32_t)dlen;
			}
			f->in_raw += (uint32_t)n;
			if (!f->dechunk)
				f->in_fwd = f->in_raw;
			if (f->chunk.done)
				f->body_done = true;
			if (n == 0)
				return 0;
			break;
		case HTTP_BODY_CLOSE:
			f->in_raw = f->in_fwd = f->in_len;
			break;
		}
	}
	if (f->body == HTTP_BODY_NONE)
		f->body_done = true;
	if (eof && f->body == HTTP_BODY_CLOSE)
		f->body_done = true;
	return 0;
}

/* ---- reading -------------------------------------------------------- */

/*
 * Should the head in <f> be parsed now? When its first line is complete
 * (garbage is refused at once) and when a blank line may end it (CRLFCRLF,
 * or LFLF, which the parser refuses). Heads are parsed whole, so a client
 * dribbling 64 KiB a byte at a time costs a few parses, not one per byte.
 */
static bool
http_head_ready(struct http_flow *f)
{
	const char	*lf;
	uint32_t	 i = f->scan, at;
	bool		 ready = false;

	while (i < f->in_len &&
	    (lf = memchr(f->in + i, '\n', f->in_len - i)) != NULL) {
		at = (uint32_t)(lf - f->in);
		if (!f->seen_lf)
			ready = f->seen_lf = true;
		if ((at >= 1 && f->in[at - 1] == '\n') ||
		    (at >= 3 && memcmp(f->in + at - 3, "\r\n\r", 3) == 0))
			ready = true;
		i = at + 1;
	}
	f->scan = f->in_len;
	return ready;
}

/* What a transport took from the socket and hands out in pieces raises
 * no epoll event: it is read into the flow's buffer while there is room
 * and budget (relay.c does the same; http_count_read charges it). Bytes
 * added; a failure waits for the next read. */
static ssize_t
http_flow_read_pending(struct pt_conn *c, struct http_flow *f,
    struct conn_side *src)
{
	ssize_t	 n, total = 0;

	while (f->in_len < buf_size(f->in) && conn_pending(c, src) > 0 &&
	    c->c_budget[http_src_dir(c, src)].left != 0) {
		n = conn_recv(c, src, f->in + f->in_len,
		    conn_budget_cap(c, http_src_dir(c, src),
		    buf_size(f->in) - f->in_len));
		if (n <= 0)
			break;
		f->in_len += (uint32_t)n;
		http_count_read(c, src, n);
		total += n;
	}
	return total;
}

/* Reads from <src> into flow <f>'s input. Bytes read, 0 at EOF, -EAGAIN,
 * or another -errno. */
static ssize_t
http_flow_read(struct pt_conn *c, struct http_flow *f, struct conn_side *src)
{
	ssize_t	 n;
	size_t	 want;

	if (f->in == NULL) {
		if ((f->in = buf_get(BUF_SMALL)) == NULL)
			return -ENOBUFS;
		f->in_start = f->in_fwd = f->in_raw = f->in_len = 0;
	}
	/* Capped by the budget, a full read says nothing of the socket. */
	want = conn_budget_cap(c, http_src_dir(c, src),
	    buf_size(f->in) - f->in_len);
	n = conn_recv(c, src, f->in + f->in_len, want);
	/* A short read from a plain socket emptied its queue: edge-triggered
	 * epoll reports the next byte, so no recv needs to hit EAGAIN to
	 * learn it. Not after the peer's FIN was reported, though: the EOF
	 * may still be behind those bytes, and it raises no new edge. */
	if (n == -EAGAIN || (n > 0 && (size_t)n < want &&
	    http_plain(c, src) && !src->hup)) {
		src->ready &= ~(uint32_t)EPOLLIN;
		if (n == -EAGAIN)
			return n;
	}
	if (n > 0) {
		f->in_len += (uint32_t)n;
		http_count_read(c, src, n);
	}
	if (n > 0 && !http_plain(c, src))
		n += http_flow_read_pending(c, f, src);
	return n;
}

/*
 * A head did not fit the small buffer: moves it to a large one, up to
 * http.max_header_size. Returns false when it is already large.
 */
static bool
http_flow_grow(struct http_flow *f)
{
	char	*big;

	if (buf_size(f->in) >= buf_class_size(BUF_LARGE) ||
	    (big = buf_get(BUF_LARGE)) == NULL)
		return false;
	memcpy(big, f->in, f->in_len);
	buf_put(f->in);
	f->in = big;
	return true;
}

/* ---- the request head ----------------------------------------------- */

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

/* Answers OPTIONS or TRACE with Max-Forwards: 0 ourselves: we are the
 * last recipient. Runs after ACCESS, so it answers only requests the
 * modules let through. */
static void
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
	http_pump(c);
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

static void
http_drop_log_headers(struct http_state *h)
{
	if (h->loghdr != NULL)
		pool_put(&http_loghdr_pool, h->loghdr);
	h->loghdr = NULL;
	h->ua_len = h->ref_len = 0;
}

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

static void	http_on_auth(struct pt_conn *c, enum pt_verdict v);

/*
 * A complete request head is in h->req.in. Checks what the parser leaves
 * to the proxy, rewrites the head for the origin, and starts the phases.
 */
static void
http_request_head(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req;
	struct http_uri		 u;
	struct host		 hp;
	unsigned		 flags;
	ssize_t			 n;

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

	if (h->is_connect) {
		if (http_parse_authority(m->target, &u) < 0) {
			http_fail(c, 400, "bad CONNECT target");
			return;
		}
		c->c_req.proto = PT_PROTO_CONNECT;
		/* A CONNECT body has no defined meaning (RFC 9110 9.3.6):
		 * whatever follows the head belongs to the tunnel. */
		q->body = HTTP_BODY_NONE;
	} else if (m->target_form == HTTP_TARGET_ASTERISK &&
	    http_method_is(m->method, "OPTIONS")) {
		/* RFC 9110 9.3.7: "OPTIONS *" asks about the server it is
		 * sent to, us: what we forward, without a phase (no target,
		 * nothing to judge). */
		http_set_path(c, m->target);
		h->local = HTTP_LOCAL_OPTIONS;
		h->head_len = (uint32_t)m->head_len;
		http_answer_locally(c);
		return;
	} else if (m->target_form != HTTP_TARGET_ABSOLUTE) {
		http_set_path(c, m->target);
		http_fail(c, 400, "a proxy needs an absolute URI "
		    "(http://host/path)");
		return;
	} else if (http_parse_absolute_uri(m->target, &u) < 0) {
		http_fail(c, 400, "bad URI");
		return;
	} else if (!http_str_ieq(u.scheme, "http")) {
		http_fail(c, 501, "only http:// URIs are forwarded; use "
		    "CONNECT for https");
		return;
	} else {
		c->c_req.proto = h->is_websocket ? PT_PROTO_WEBSOCKET :
		    PT_PROTO_HTTP;
		http_set_path(c, u.path);
	}
	/* The host as the modules, the resolver and the log all read it
	 * (worker/host.h): a name that one of them could read another way
	 * is refused here, before any phase. */
	if (host_parse(u.host.ptr, u.host.len, &hp) == HOST_BAD ||
	    hp.len >= sizeof(h->host)) {
		http_fail(c, 400, "bad host");
		return;
	}
	/* h->host still names the parked upstream's origin. */
	if (h->parked && (h->is_connect || h->is_websocket ||
	    u.port != h->port || hp.len != h->hostlen ||
	    memcmp(hp.text, h->host, hp.len) != 0))
		http_unpark(c);
	memcpy(h->host, hp.text, hp.len + 1);
	h->hostlen = hp.len;
	h->port = u.port;
	c->c_req.host.ptr = h->host;
	c->c_req.host.len = h->hostlen;
	c->c_req.port = u.port;
	http_credentials(c, m);

	if (http_flow_frame(q, false) < 0) {
		http_fail(c, 400, "bad chunked request body");
		return;
	}
	h->local = HTTP_LOCAL_NONE;
	if (m->max_forwards == 0 && http_method_is(m->method, "OPTIONS"))
		h->local = HTTP_LOCAL_OPTIONS;
	else if (m->max_forwards == 0 && http_method_is(m->method, "TRACE"))
		h->local = HTTP_LOCAL_TRACE;
	h->head_len = (uint32_t)m->head_len;
	/* A wait at ACCEPT or for an earlier request is not this one's. */
	c->c_waited = false;
	if (!h->is_connect && h->local == HTTP_LOCAL_NONE) {
		flags = (http_conf->http.via ? HTTP_HEAD_VIA : 0) |
		    (h->is_websocket ? HTTP_HEAD_UPGRADE : 0) |
		    (q->body == HTTP_BODY_CHUNKED ? HTTP_HEAD_CHUNKED : 0);
		if ((q->out = http_head_buf(m->head_len)) == NULL) {
			conn_close(c, "out of buffers");
			return;
		}
		n = http_head_request(q->out, buf_size(q->out), m, &u, flags);
		if (n < 0) {
			http_fail(c, 431, "request head too large to forward");
			return;
		}
		q->out_start = 0;
		q->out_len = (uint32_t)n;
	}
	h->stage = HS_WAIT;
	pt_timer_start(&c->c_timer, http_conf->limits.header_timeout_ms,
	    http_on_timer, c);
	phase_run(c, PT_PHASE_AUTH, http_on_auth);
}

/* Reads and parses the request head. */
static void
http_read_request(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*q = &h->req;
	struct http_msg		*m = &http_scratch;
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	ssize_t			 n;
	int			 rc;

	for (;;) {
		if (q->in_len > 0 && (http_head_ready(q) ||
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
		if (!http_may_read(c, cl))
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

/* ---- phases and the dial path (target.c) ---------------------------- */

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
		http_fail(c, 500, "module error");
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
	http_fail_answer(c, status, detail, a->realm, a->retry_after);
}

static void
http_target_fail(struct pt_conn *c, enum target_fail what, int err)
{
	if (what == TARGET_FAIL_RESOLVE) {
		http_fail(c, err == ETIMEDOUT ? 504 : 502, err == ENOENT ?
		    "cannot resolve the host name" : "name resolution failed");
		return;
	}
	c->c_req.error = strerror(err);
	http_fail(c, err == ETIMEDOUT ? 504 : 502, err == ETIMEDOUT ?
	    "connecting to the origin timed out" :
	    "cannot connect to the origin");
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
	int			 fd;

	if (h->is_connect && !http_connect_port_allowed(h->port)) {
		target_deny(c, PT_PHASE_ACCESS,
		    "CONNECT to this port is not allowed");
		return false;
	}
	if (h->local != HTTP_LOCAL_NONE) {
		http_answer_locally(c);
		return false;
	}
	if (h->parked && !h->is_connect && !h->is_websocket && !up->hup &&
	    !(up->ready & EPOLLIN) && target_addr(c) != NULL) {
		/* Same origin as the last request (http_request_head pooled
		 * it otherwise), and nothing came from it while parked (that
		 * would be the answer to no request: http_unpark closes it). */
		h->parked = false;
		h->reused = true;
		h->req.keep_out = true;
		up->ready |= EPOLLOUT;
		target_reuse(c, target_addr(c));
		return true;
	}
	http_unpark(c);
	if (!h->is_connect && !h->is_websocket && !h->retried) {
		fd = upstream_take(h->host, h->hostlen, h->port, &h->addrs[0],
		    &up->io, HTTP_EVENTS, http_on_event);
		if (fd >= 0) {
			h->reused = true;
			h->req.keep_out = true;
			up->ready = EPOLLOUT;
			up->hup = up->reset = false;
			target_reuse(c, &h->addrs[0]);
			return true;
		}
	}
	h->reused = false;
	target_known(c, NULL, 0);
	return true;
}

static void
http_established(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	static const char	 ok[] = "HTTP/1.1 200 Connection established\r\n";
	const char		*date;
	size_t			 dlen;

	/* A new socket: dial.c noted what came with the connect (its
	 * registration is the one http.c would make). */
	if (!c->c_target.reused)
		c->c_side[SIDE_UPSTREAM].ready |= EPOLLOUT;
	c->c_last_active = loop_now();
	http_timer(c, http_conf->limits.idle_timeout_ms);
	h->resp_wait = false;
	if (h->is_connect) {
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
		http_pump(c);
		return;
	}
	h->stage = HS_FORWARD;
	h->resp.head_done = false;
	http_pump(c);
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

static const struct target_ops http_target_ops = {
	.refuse = http_refuse,
	.fail = http_target_fail,
	.access_ok = http_access_ok,
	.may_dial = http_may_dial,
	.established = http_established,
	.on_timer = http_on_timer,
};

static void
http_on_auth(struct pt_conn *c, enum pt_verdict v)
{
	/* The credentials are the proxy's; they never go upstream and
	 * should not outlive the phase that judged them, whatever it
	 * said (LOG hooks must not see a refused password either). */
	c->c_req.password.ptr = NULL;
	c->c_req.password.len = 0;
	if (target_refused(c, PT_PHASE_AUTH, v))
		return;
	/* A name no module judged is only a claim: later phases (an ACL's
	 * user rules) and the log must not take it for a user. */
	if (!phase_applies(c, PT_PHASE_AUTH))
		req_user_reset(c);
	target_access(c);
}

/* ---- the response head ---------------------------------------------- */

/* The request and response are framed; hand the connection to the relay
 * with whatever each side already sent past its head. */
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

/*
 * A complete response head is in h->resp.in. Decides the framing towards
 * the client and whether either connection survives the transaction.
 */
static void
http_response_head(struct pt_conn *c, const struct http_msg *m)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	unsigned		 flags = 0;
	ssize_t			 n;

	r->in_start = r->in_fwd = r->in_raw = (uint32_t)m->head_len;
	if (m->status >= 100 && m->status < 200 && m->status != 101) {
		/* Interim: passed to an HTTP/1.1 client only (RFC 9110 15.2),
		 * then the final response follows on the same flow. */
		if (h->client_version == 11) {
			flags = http_conf->http.via ? HTTP_HEAD_VIA : 0;
			if (r->out == NULL && (r->out =
			    http_head_buf(m->head_len)) == NULL) {
				conn_close(c, "out of buffers");
				return;
			}
			n = http_head_response(r->out + r->out_len,
			    buf_size(r->out) - r->out_len, m, flags);
			if (n < 0) {
				http_fail(c, 502, "interim response too large");
				return;
			}
			r->out_len += (uint32_t)n;
			c->c_req.resp_head += (int32_t)n;
		}
		http_flow_shift(r);
		return;
	}
	if (m->status == 101 && !h->is_websocket) {
		http_fail(c, 502, "origin switched protocols unasked");
		return;
	}
	/* RFC 9110 7.8: the 101 names the protocol switched to, which
	 * must be one the client asked for (the only one we pass on). */
	if (m->status == 101 && !m->upgrade_websocket) {
		http_fail(c, 502, "origin switched to a protocol other than "
		    "websocket");
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

	if (m->status == 101) {
		flags = HTTP_HEAD_UPGRADE;
		h->stage = HS_TUNNEL;
	} else if ((m->te_close || m->te_coded) && h->client_version == 10) {
		/* A body in a coding besides chunked (running to the close,
		 * or chunked on top: "gzip, chunked"): a 1.1 client gets its
		 * Transfer-Encoding, which a 1.0 client must not be sent (RFC
		 * 9112 6.1), and without it the coded bytes would pass for the
		 * content. */
		http_fail(c, 502, "transfer coding an HTTP/1.0 client cannot "
		    "take");
		return;
	} else {
		if (m->te_close)
			flags |= HTTP_HEAD_TE;
		if (r->body == HTTP_BODY_CHUNKED && h->client_version == 10)
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
		if (r->body == HTTP_BODY_CHUNKED && !r->dechunk)
			flags |= HTTP_HEAD_CHUNKED;
		if (h->close_after)
			flags |= HTTP_HEAD_CLOSE;
	}
	if (http_conf->http.via)
		flags |= HTTP_HEAD_VIA;
	if (r->out == NULL && (r->out = http_head_buf(m->head_len)) == NULL) {
		conn_close(c, "out of buffers");
		return;
	}
	/* An interim response still waiting to go out sized the buffer for
	 * itself: a large final head behind it gets a buffer of its size. */
	if (buf_size(r->out) - r->out_len < m->head_len + HTTP_HEAD_SLACK &&
	    !http_out_grow(r)) {
		conn_close(c, "out of buffers");
		return;
	}
	n = http_head_response(r->out + r->out_len, buf_size(r->out) -
	    r->out_len, m, flags);
	if (n < 0) {
		http_fail(c, 502, "response head too large to forward");
		return;
	}
	r->out_len += (uint32_t)n;
	c->c_req.resp_head += (int32_t)n;
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
		if (!http_head_ready(r) && r->in_len < buf_size(r->in))
			break;
		rc = http_parse_response(r->in + r->in_raw, r->in_len -
		    r->in_raw, http_conf->http.max_header_size, method, m);
		if (rc == PARSE_BAD) {
			http_fail(c, 502, m->error ? m->error :
			    "invalid response from the origin");
			return -1;
		}
		if (rc == PARSE_AGAIN) {
			if (r->in_len == buf_size(r->in) && !http_flow_grow(r)) {
				http_fail(c, 502, "response head too large");
				return -1;
			}
			break;
		}
		m->head_len += r->in_raw;
		http_response_head(c, m);
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
		target_resolve(c);
		return;
	}
	/* Before a final head, what reached the client can only be whole
	 * interim responses (a 100 Continue), which a final 502 may follow
	 * (RFC 9110 15.2). */
	if (!http_flow_has_output(&h->resp))
		h->resp_started = false;
	http_fail(c, 502, why);
}

/* ---- the pump ------------------------------------------------------- */

/* Client side: request body bytes. 1 progress, 0 none, -1 closed. */
static int
http_pump_request_body(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	ssize_t			 n;

	if (!http_client_wants_read(h) || !http_may_read(c, cl))
		return 0;
	n = http_flow_fill(c, &h->req, cl);
	if (n == -EAGAIN)
		return 0;
	if (n <= 0) {
		conn_close(c, n == 0 ? "client closed inside a request body" :
		    "read failed");
		return -1;
	}
	if (http_flow_frame(&h->req, false) < 0) {
		http_fail(c, 400, "bad chunked request body");
		return -1;
	}
	return 1;
}

/* Upstream side: response bytes. 1 progress, 0 none, -1 closed. */
static int
http_pump_response(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	struct http_flow	*r = &h->resp;
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];
	ssize_t			 n;

	if (!http_upstream_wants_read(h) || !http_may_read(c, up))
		return 0;
	n = http_flow_fill(c, r, up);
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
		http_flow_frame(r, true);
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
	if (http_flow_frame(r, false) < 0) {
		/* Nothing of the response sent yet (its head came with the
		 * bad chunk): the client can still be told, 502. */
		if (!h->resp_started)
			http_fail(c, 502, "bad chunked response from the origin");
		else
			conn_close(c, "bad chunked response from the origin");
		return -1;
	}
	return 1;
}

static bool
http_flow_finished(const struct http_flow *f)
{
	return f->head_done && f->body_done && !http_flow_has_output(f);
}

/*
 * The origin has the whole request (head and body written) and has sent
 * no byte of a final response head yet (an interim 1xx was passed on and
 * shifted out). A request body still uploading, or held back by a client
 * waiting for 100 Continue, is not a wait for the origin.
 */
static bool
http_awaiting_response(const struct http_state *h)
{
	return h->stage == HS_FORWARD && !h->resp.head_done &&
	    (h->resp.in == NULL || h->resp.in_len == 0) &&
	    http_flow_finished(&h->req);
}

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

static void
http_pump(struct pt_conn *c)
{
	struct http_state	*h;
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];
	int			 i, progress, rc;

	for (i = 0; i < HTTP_ROUNDS; i++) {
		h = http_st(c);
		progress = 0;
		switch (h->stage) {
		case HS_REQ_HEAD:
			http_read_request(c);
			if (c->c_state == CONN_CLOSED)
				return;
			h = http_st(c);
			if (h->stage == HS_REQ_HEAD)
				goto out;
			continue;
		case HS_WAIT:
			goto out;
		case HS_REPLY:
		case HS_TUNNEL:
			if ((rc = http_flow_write(c, &h->resp, cl)) < 0)
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
		if ((rc = http_flow_write(c, &h->req, up)) < 0)
			return;
		progress |= rc;
		if ((rc = http_flow_write(c, &h->resp, cl)) < 0)
			return;
		progress |= rc;
		if ((rc = http_pump_request_body(c)) < 0)
			return;
		progress |= rc;
		if ((rc = http_pump_response(c)) < 0)
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
	h->first = h->close_after = h->reused = h->retried = false;
	h->resp_started = h->origin_keep = false;
	h->is_connect = h->is_head = h->is_websocket = false;
	memset(&c->c_req.method, 0, sizeof(c->c_req.method));
	memset(&c->c_req.host, 0, sizeof(c->c_req.host));
	memset(&c->c_req.password, 0, sizeof(c->c_req.password));
	memset(&c->c_req.target, 0, sizeof(c->c_req.target));
	memset(&c->c_req.path, 0, sizeof(c->c_req.path));
	buf_put(h->path);
	h->path = NULL;
	http_drop_log_headers(h);
	/* User, label and tags were the last request's. */
	req_names_clear(c);
	req_user_reset(c);
	memset(&c->c_req.label, 0, sizeof(c->c_req.label));
	memset(&c->c_answer, 0, sizeof(c->c_answer));
	c->c_req.port = 0;
	c->c_req.status = 0;
	c->c_req.bytes_in = c->c_req.bytes_out = 0;
	c->c_req.resp_head = 0;
	c->c_req.error = NULL;
	c->c_req.start_ms = loop_now();
	c->c_start_us = counters_now_us();
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
	h->first = true;
	h->stage = HS_REQ_HEAD;
	c->c_proto = h;
	c->c_proto_free = http_state_free;
	c->c_proto_close = http_on_close;
	c->c_proto_drain = http_on_drain;
	c->c_proto_header = http_req_header;
	c->c_budget_resume = http_on_budget;
	c->c_req.proto = PT_PROTO_HTTP;
	target_init(c, &http_target_ops, h->addrs);
	/* ACCEPT is part of the first transaction: a refusal there is
	 * logged; http_on_accept marks it logged when it passes. */
	c->c_logged = false;
	c->c_side[SIDE_CLIENT].ready = EPOLLIN | EPOLLOUT;
	http_timer(c, http_conf->limits.header_timeout_ms);
	phase_run(c, PT_PHASE_ACCEPT, http_on_accept);
}
