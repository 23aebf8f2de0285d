/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * protocol = "status": a small HTTP/1.1 server on the worker's loop that
 * answers GET (or HEAD) /metrics with the Prometheus text format and
 * /status with one JSON object (worker/status_fmt.c builds both from the
 * shared mapping). Other paths are 404, other methods 405, a request
 * with a body is answered and the connection closed (its body is not
 * read), a head larger than STATUS_MAX_HEAD is 431.
 *
 * Each request is a transaction of protocol PT_PROTO_STATUS: ACCEPT runs
 * once per connection, ACCESS per request (so an ACL on the source, the
 * listener or the protocol applies; a DENY answers 403 and closes), then
 * LOG. AUTH does not run: a scraper sends no proxy credentials.
 *
 * Nothing here blocks: the answer is built in memory in one go (a few
 * tens of KiB) and written as the socket takes it; a slow scraper holds
 * only its own buffer, bounded in time by idle_timeout. Keep-alive as
 * HTTP/1.1 says (HTTP/1.0 only with Connection: keep-alive); pipelined
 * requests are answered in order, one at a time.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "worker/status.h"
#include "common/counters.h"
#include "common/conf_types.h"
#include "worker/buf.h"
#include "worker/http_head.h"
#include "worker/http_parse.h"
#include "worker/phase.h"
#include "worker/req.h"
#include "worker/status_fmt.h"
#include "worker/target.h"
#include "worker/worker_self.h"

#define STATUS_MAX_HEAD		8192

enum status_stage {
	ST_READ = 0,		/* waiting for a request head */
	ST_HOOKS,		/* ACCESS is running */
	ST_WRITE,		/* sending the answer */
};

struct status_state {
	enum status_stage	 stage;
	char			*in;		/* BUF_SMALL, or NULL */
	size_t			 in_len;
	struct http_msg		 msg;
	bool			 close_after;
	bool			 head_only;	/* HEAD */
	bool			 txn_logged;	/* the last one ran LOG */
	char			 head[384];
	size_t			 head_len;
	struct status_out	 body;
	size_t			 sent;		/* of head + body */
};

static void	status_read(struct pt_conn *c);
static void	status_on_post(struct loop_task *t);

static struct status_state *
status_st(struct pt_conn *c)
{
	return c->c_proto;
}

static void
status_free(struct pt_conn *c)
{
	struct status_state	*st = status_st(c);

	if (st == NULL)
		return;
	buf_put(st->in);
	free(st->body.p);
	free(st);
	c->c_proto = NULL;
}

static void
status_on_timeout(struct pt_timer *t, void *arg)
{
	struct pt_conn		*c = arg;
	struct status_state	*st = status_st(c);

	conn_close(c, st->stage == ST_WRITE ? "status answer timed out" :
	    st->in_len > 0 ? "request head timed out" : NULL);
}

static void
status_timer(struct pt_conn *c, unsigned ms)
{
	pt_timer_start(&c->c_timer, ms, status_on_timeout, c);
}

/* The transaction ends: LOG once, with the status answered. */
static void
status_log(struct pt_conn *c)
{
	struct status_state	*st = status_st(c);

	if (c->c_logged)
		return;
	st->txn_logged = true;
	conn_log_txn(c);
}

static void
status_write(struct pt_conn *c)
{
	struct status_state	*st = status_st(c);
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];
	struct iovec		 iov[2];
	size_t			 total, blen;
	ssize_t			 n;
	int			 k;

	blen = st->head_only ? 0 : st->body.len;
	total = st->head_len + blen;
	while (st->sent < total) {
		k = 0;
		if (st->sent < st->head_len) {
			iov[k].iov_base = st->head + st->sent;
			iov[k++].iov_len = st->head_len - st->sent;
		}
		if (blen > 0) {
			size_t	 off = st->sent > st->head_len ?
			    st->sent - st->head_len : 0;

			iov[k].iov_base = st->body.p + off;
			iov[k++].iov_len = blen - off;
		}
		n = conn_sendv(c, s, iov, k);
		if (n == -EAGAIN) {
			if (loop_io_set(&s->io, s->t_want ? s->t_want :
			    EPOLLOUT) < 0)
				conn_close(c, "epoll_ctl");
			return;
		}
		if (n < 0) {
			conn_close(c, "write failed");
			return;
		}
		st->sent += (size_t)n;
		c->c_req.bytes_out += (uint64_t)n;
		/* A slow reader gets idle_timeout per step, not in all. */
		status_timer(c, worker_self()->conf->limits.idle_timeout_ms);
	}
	status_log(c);
	if (st->close_after || worker_self()->stopping) {
		/* An error may leave the request unread (a 431's head): a
		 * plain close would reset, and could take the answer. */
		if (c->c_req.status >= 400)
			conn_close_linger(c, NULL);
		else
			conn_close(c, NULL);
		return;
	}
	/* The next request: the bytes after this head are its start. */
	free(st->body.p);
	memset(&st->body, 0, sizeof(st->body));
	st->in_len -= st->msg.head_len;
	memmove(st->in, st->in + st->msg.head_len, st->in_len);
	st->stage = ST_READ;
	st->head_only = false;
	/* A pipelined request started when this answer ended. */
	req_txn_reset(c);
	status_timer(c, worker_self()->conf->limits.idle_timeout_ms);
	if (st->in_len > 0) {
		/* Pipelined: from the loop, so a client sending many at
		 * once cannot recurse here. */
		loop_io_set(&s->io, 0);
		loop_post(&c->c_post, status_on_post);
		return;
	}
	if (loop_io_set(&s->io, EPOLLIN) < 0)
		conn_close(c, "epoll_ctl");
}

/* Answers <status> with <body> (already in st->body) of <type>. */
static void
status_answer(struct pt_conn *c, int status, const char *type,
    const char *extra)
{
	struct status_state	*st = status_st(c);
	const char		*reason, *date;
	size_t			 dlen;
	int			 n;

	switch (status) {
	case 200: reason = "OK"; break;
	case 400: reason = "Bad Request"; break;
	case 403: reason = "Forbidden"; break;
	case 404: reason = "Not Found"; break;
	case 405: reason = "Method Not Allowed"; break;
	case 429: reason = "Too Many Requests"; break;
	case 431: reason = "Request Header Fields Too Large"; break;
	case 500: reason = "Internal Server Error"; break;
	case 503: reason = "Service Unavailable"; break;
	case 505: reason = "HTTP Version Not Supported"; break;
	default: reason = "Error"; break;
	}
	c->c_req.status = status;
	if (status >= 400 && st->body.len == 0)
		status_printf(&st->body, "%d %s\n", status, reason);
	if (st->body.oom) {
		conn_close(c, "out of memory");
		return;
	}
	/* RFC 9110 6.6.1: a server with a clock sends Date. */
	date = http_date_field(&dlen);
	n = snprintf(st->head, sizeof(st->head), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: %s\r\nContent-Length: %zu\r\n"
	    "Cache-Control: no-store\r\n%.*s%s%s\r\n", status, reason, type,
	    st->body.len, (int)dlen, date, extra != NULL ? extra : "",
	    st->close_after ? "Connection: close\r\n" : st->msg.version == 10 ?
	    "Connection: keep-alive\r\n" : "");
	st->head_len = (size_t)n < sizeof(st->head) ? (size_t)n :
	    sizeof(st->head) - 1;
	st->sent = 0;
	st->stage = ST_WRITE;
	status_write(c);
}

static void
status_refuse(struct pt_conn *c, const struct target_refusal *r)
{
	struct status_state	*st = status_st(c);
	char			 retry[40] = "";

	/* At ACCEPT there is no request to answer yet. */
	if (r->phase == PT_PHASE_ACCEPT || st == NULL) {
		conn_close(c, r->verdict == PT_VERDICT_DENY ?
		    "denied by module" : "module error");
		return;
	}
	pt_timer_stop(&c->c_timer);
	st->close_after = true;
	/* A limit's 429 (or an overload's 503) says when to come back, as
	 * on an HTTP listener. */
	if (r->answer->retry_after != 0)
		snprintf(retry, sizeof(retry), "Retry-After: %u\r\n",
		    (unsigned)r->answer->retry_after);
	if (r->verdict == PT_VERDICT_DENY)
		status_answer(c, r->answer->http_status != 0 ?
		    r->answer->http_status : 403, "text/plain; charset=utf-8",
		    retry[0] != '\0' ? retry : NULL);
	else
		status_answer(c, 500, "text/plain; charset=utf-8", NULL);
}

static const struct target_ops status_target_ops = {
	.refuse = status_refuse,
	.on_timer = status_on_timeout,
};

/* The path of the request-target, without its query. */
static struct pt_str
status_path(const struct http_msg *m)
{
	struct pt_str	 p = { NULL, 0 };
	struct http_uri	 u;
	const char	*q;

	if (m->target_form == HTTP_TARGET_ORIGIN)
		p = m->target;
	else if (m->target_form == HTTP_TARGET_ABSOLUTE &&
	    http_parse_absolute_uri(m->target, &u) == 0)
		p = u.path;
	if (p.ptr != NULL && (q = memchr(p.ptr, '?', p.len)) != NULL)
		p.len = (size_t)(q - p.ptr);
	return p;
}

static bool
status_is(struct pt_str s, const char *lit)
{
	return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0;
}

static void
status_serve(struct pt_conn *c)
{
	struct status_state	*st = status_st(c);
	struct pt_str		 path = status_path(&st->msg);
	bool			 metrics, json;
	int			 rc;

	/* Methods and paths are case-sensitive (RFC 9110 9.1, 4.2.3). */
	metrics = status_is(path, "/metrics");
	json = status_is(path, "/status");
	st->head_only = status_is(st->msg.method, "HEAD");
	if (!metrics && !json) {
		st->head_only = false;
		status_answer(c, 404, "text/plain; charset=utf-8", NULL);
		return;
	}
	if (!st->head_only && !status_is(st->msg.method, "GET")) {
		status_answer(c, 405, "text/plain; charset=utf-8",
		    "Allow: GET, HEAD\r\n");
		return;
	}
	rc = metrics ? status_fmt_metrics(&st->body) :
	    status_fmt_json(&st->body);
	if (rc < 0) {
		conn_close(c, "out of memory");
		return;
	}
	status_answer(c, 200, metrics ? "text/plain; version=0.0.4; "
	    "charset=utf-8" : "application/json", NULL);
}

static void
status_on_access(struct pt_conn *c, enum pt_verdict v)
{
	if (target_refused(c, PT_PHASE_ACCESS, v))
		return;
	status_serve(c);
}

/* A complete head in st->in: one transaction. */
static void
status_request(struct pt_conn *c)
{
	struct status_state	*st = status_st(c);
	struct http_msg		*m = &st->msg;

	pt_timer_stop(&c->c_timer);
	loop_io_set(&c->c_side[SIDE_CLIENT].io, 0);
	req_txn_open(c, &st->txn_logged);
	c->c_req.method = m->method;
	c->c_req.path = m->target_form == HTTP_TARGET_ORIGIN ? m->target :
	    status_path(m);
	c->c_req.bytes_in = m->head_len;
	if (m->version == 10 ? !(m->conn_flags & HTTP_CONN_KEEPALIVE) :
	    (m->conn_flags & HTTP_CONN_CLOSE) != 0)
		st->close_after = true;
	/* A body is never read: answer, then close. */
	if (m->body != HTTP_BODY_NONE)
		st->close_after = true;
	st->stage = ST_HOOKS;
	status_timer(c, worker_self()->conf->limits.header_timeout_ms);
	phase_run(c, PT_PHASE_ACCESS, status_on_access);
}

static void
status_parse(struct pt_conn *c)
{
	struct status_state	*st = status_st(c);
	size_t			 max = buf_size(st->in);
	int			 rc;

	if (max > STATUS_MAX_HEAD)
		max = STATUS_MAX_HEAD;
	rc = http_parse_request(st->in, st->in_len, max, &st->msg);
	if (rc == PARSE_AGAIN)
		return;
	if (rc == PARSE_OK) {
		status_request(c);
		return;
	}
	/* A head we cannot read: the transaction is this answer. */
	pt_timer_stop(&c->c_timer);
	loop_io_set(&c->c_side[SIDE_CLIENT].io, 0);
	req_txn_open(c, &st->txn_logged);
	c->c_req.error = st->msg.error;
	c->c_req.bytes_in = st->in_len;
	st->close_after = true;
	status_answer(c, st->msg.error_status != 0 ? st->msg.error_status :
	    400, "text/plain; charset=utf-8", NULL);
}

static void
status_read(struct pt_conn *c)
{
	struct status_state	*st = status_st(c);
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];
	size_t			 max = buf_size(st->in);
	ssize_t			 n;

	if (max > STATUS_MAX_HEAD)
		max = STATUS_MAX_HEAD;
	/* A close frees <st>: the connection stays until the reap. */
	while (c->c_state != CONN_CLOSED && st->stage == ST_READ) {
		if (st->in_len >= max) {
			status_parse(c);	/* 431 */
			return;
		}
		n = conn_recv(c, s, st->in + st->in_len, max - st->in_len);
		if (n == -EAGAIN) {
			if (loop_io_set(&s->io, s->t_want ? s->t_want :
			    EPOLLIN) < 0)
				conn_close(c, "epoll_ctl");
			return;
		}
		if (n <= 0) {
			/* Between requests a close is the normal end. */
			conn_close(c, n == 0 && st->in_len == 0 ? NULL :
			    n == 0 ? "client closed mid-request" :
			    "read failed");
			return;
		}
		if (st->in_len == 0) {
			c->c_req.start_ms = loop_now();
			c->c_start_us = counters_now_us();
			status_timer(c,
			    worker_self()->conf->limits.header_timeout_ms);
		}
		st->in_len += (size_t)n;
		status_parse(c);
	}
}

static void
status_on_io(struct loop_io *io, uint32_t events)
{
	struct pt_conn		*c = ((struct conn_side *)io)->conn;
	struct status_state	*st = status_st(c);

	if (st->stage == ST_READ)
		status_read(c);
	else if (st->stage == ST_WRITE)
		status_write(c);
}

static void
status_on_post(struct loop_task *t)
{
	struct pt_conn	*c = (struct pt_conn *)((char *)t -
	    offsetof(struct pt_conn, c_post));

	if (c->c_state == CONN_CLOSED)
		return;
	status_parse(c);
	if (c->c_state != CONN_CLOSED && status_st(c)->stage == ST_READ)
		status_read(c);
}

/* Draining: a connection idle between requests goes now; one in the
 * middle of a request is answered, then closed (status_write). */
static void
status_on_drain(struct pt_conn *c)
{
	struct status_state	*st = status_st(c);

	if (st != NULL && st->stage == ST_READ && st->in_len == 0 &&
	    !conn_has_unread(c))
		conn_close(c, "draining");
}

static void
status_on_accept(struct pt_conn *c, enum pt_verdict v)
{
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];
	struct status_state	*st;

	if (target_refused(c, PT_PHASE_ACCEPT, v))
		return;
	/* One small state per connection, the answer apart: status
	 * listeners are few and scraped seldom, so plain malloc. */
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->in = buf_get(BUF_SMALL)) == NULL) {
		free(st);
		conn_close(c, "out of memory");
		return;
	}
	c->c_proto = st;
	c->c_proto_free = status_free;
	c->c_proto_drain = status_on_drain;
	/* The connection's first transaction keeps conn_new's number. */
	status_timer(c, worker_self()->conf->limits.header_timeout_ms);
	if (s->io.added) {
		/* A transport's handshake left it registered. */
		s->io.fn = status_on_io;
		if (loop_io_set(&s->io, EPOLLIN) < 0) {
			conn_close(c, "epoll_ctl");
			return;
		}
	} else if (loop_io_start(&s->io, s->io.fd, EPOLLIN,
	    status_on_io) < 0) {
		conn_close(c, "epoll_ctl");
		return;
	}
	status_read(c);
}

void
status_start(struct pt_conn *c)
{
	c->c_req.proto = PT_PROTO_STATUS;
	target_init(c, &status_target_ops, NULL);
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.header_timeout_ms, status_on_timeout,
	    c);
	phase_run(c, PT_PHASE_ACCEPT, status_on_accept);
}
