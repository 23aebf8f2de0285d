/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An HTTP/2 stream as the client side of a transaction.
 *
 * Each stream that carries a request gets a pt_conn of its own
 * (conn_new_stream) with no socket: its client leg is this file's
 * transport, which reads the request as HTTP/1.1 bytes (the head
 * h2_head.c wrote, then the DATA the client sent, chunked where the
 * client gave no length) and takes the response as HTTP/1.1 bytes (a head
 * it parses into HEADERS, then the body it hands nghttp2 as DATA). The
 * HTTP/1.1 code serves that connection exactly as it serves one with a
 * socket: the phases, auth, the ACL, the origin pool, CONNECT and
 * WebSocket through the relay, the access log. Nothing of the origin path
 * is written twice.
 *
 * Flow control is the memory bound: a stream receives at most its window
 * (relay.buffer_size), and WINDOW_UPDATE gives the client more only as
 * the transaction reads (nghttp2_session_consume); a response's bytes
 * wait in one buffer of the same size (a large one for a tunnel moving
 * bulk: tx_bulk), which the HTTP/1.1 side stops filling (its write says
 * EAGAIN) until nghttp2 took them within the client's window. So a
 * stream holds at most two buffers, and none while idle. A tunnel's
 * relay moves bytes between these two buffers and the target's socket
 * itself (h2_stream_rx_peek, h2_stream_tx_room: worker/h2.h), so its
 * own ring holds none.
 *
 * Readiness: the HTTP/1.1 code registers the virtual socket (loop_io.virt)
 * and reads until EAGAIN, as with a socket; this file notes what changed
 * (DATA, END_STREAM, room to write, a reset) and calls the registered
 * callback from a posted task, never from inside nghttp2.
 *
 * The end: the HTTP/1.1 side ends a response it completed with
 * conn_shutdown_wr (http.c), so the stream ends with END_STREAM once its
 * bytes are out; a transaction that closes otherwise (cut, timed out,
 * failed mid-body) resets the stream, CONNECT_ERROR for a tunnel whose
 * target reset (RFC 9113 8.5).
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "worker/h2_conn.h"
#include "worker/h2.h"
#include "common/conf_types.h"
#include "worker/buf.h"
#include "worker/conn.h"
#include "worker/http.h"
#include "worker/http_parse.h"
#include "worker/pool.h"
#include "worker/proxy_read.h"
#include "worker/upstream.h"

static struct pool	 h2_stream_pool;
/* Response heads are parsed here, not in http_scratch: the HTTP/1.1 code
 * that writes them may still hold a parse of its own there. */
static struct http_msg	 h2_resp_msg;

void
h2_stream_pool_init(unsigned max)
{
	pool_init(&h2_stream_pool, "http2 stream", sizeof(struct h2_stream),
	    max);
}

void
h2_stream_pool_fini(void)
{
	pool_fini(&h2_stream_pool);
}

static struct h2_stream *
h2_stream_of_task(struct loop_task *t)
{
	return (struct h2_stream *)((char *)t - offsetof(struct h2_stream,
	    wake));
}

/* The stream's memory goes once nghttp2 closed it and its transaction is
 * gone, and no task of its own is pending. */
static void
h2_stream_release(struct h2_stream *st)
{
	struct h2_conn	*h2 = st->h2;

	/* A connection closing keeps every stream until its free
	 * (h2_free, h2_stream_detach): h2_on_close walks the list while
	 * it cuts their transactions, which may have ended already. */
	if (!st->closed || !st->gone || st->in_wake || st->wake.posted ||
	    st->tx_queued > 0 || (h2 != NULL && h2->closing))
		return;
	h2_head_drop(st);
	buf_put(st->head);
	buf_put(st->rx);
	buf_put(st->resp);
	buf_put(st->tx);
	/* Detached (h2_stream_detach): its connection is gone already. */
	if (h2 != NULL) {
		if (st->prev != NULL)
			st->prev->next = st->next;
		else
			h2->streams = st->next;
		if (st->next != NULL)
			st->next->prev = st->prev;
	}
	pool_put(&h2_stream_pool, st);
}

/* ---- waking the transaction ---------------------------------------- */

static void	h2_stream_begin(struct h2_stream *st);

static void
h2_stream_on_wake(struct loop_task *t)
{
	struct h2_stream	*st = h2_stream_of_task(t);
	struct loop_io		*io;
	uint32_t		 ev = st->wake_ev;

	st->wake_ev = 0;
	if (st->h2 == NULL) {
		/* Its connection went while this was posted. */
		h2_stream_release(st);
		return;
	}
	st->in_wake = true;
	if (st->start) {
		st->start = false;
		h2_stream_begin(st);
	} else if (st->c != NULL) {
		io = &st->c->c_side[SIDE_CLIENT].io;
		if (io->added && io->fn != NULL)
			io->fn(io, ev);
	}
	st->in_wake = false;
	h2_stream_release(st);
}

static void
h2_stream_wake(struct h2_stream *st, uint32_t ev)
{
	st->wake_ev |= ev;
	loop_post(&st->wake, h2_stream_on_wake);
}

/* ---- the transport: the request, as HTTP/1.1 bytes ----------------- */

/* Gives back the receive buffer once the transaction took everything. */
static void
h2_stream_rx_compact(struct h2_stream *st)
{
	if (st->rx != NULL && st->rx_head == st->rx_tail) {
		buf_put(st->rx);
		st->rx = NULL;
		st->rx_head = st->rx_tail = 0;
	}
}

static size_t
h2_take(char *dst, size_t room, const char *src, size_t n)
{
	if (n > room)
		n = room;
	memcpy(dst, src, n);
	return n;
}

/* Fills <buf> from what is due in order: the head, chunk framing, DATA.
 * Returns bytes written; *data the part of them that was DATA (what the
 * client's window gets back). */
static size_t
h2_stream_fill(struct h2_stream *st, char *buf, size_t len, size_t *data)
{
	size_t		 n = 0, k, avail;

	*data = 0;
	while (n < len) {
		if (st->head != NULL) {
			if (st->rx_held)
				break;
			k = h2_take(buf + n, len - n, st->head + st->head_off,
			    st->head_len - st->head_off);
			st->head_off += (uint32_t)k;
			n += k;
			if (st->head_off == st->head_len) {
				buf_put(st->head);
				st->head = NULL;
			}
			continue;
		}
		if (st->frag_off < st->frag_len) {
			k = h2_take(buf + n, len - n, st->frag + st->frag_off,
			    st->frag_len - st->frag_off);
			st->frag_off = (uint8_t)(st->frag_off + k);
			n += k;
			continue;
		}
		avail = st->rx_tail - st->rx_head;
		if (st->rx_chunked && st->chunk_left == 0 && avail > 0) {
			/* One chunk for what is here now: its size line,
			 * its bytes, then its CRLF. */
			st->chunk_left = (uint32_t)avail;
			st->frag_len = (uint8_t)snprintf(st->frag,
			    sizeof(st->frag), "%zx\r\n", avail);
			st->frag_off = 0;
			continue;
		}
		if (avail > 0) {
			if (st->rx_chunked && avail > st->chunk_left)
				avail = st->chunk_left;
			k = h2_take(buf + n, len - n, st->rx + st->rx_head,
			    avail);
			st->rx_head += (uint32_t)k;
			*data += k;
			n += k;
			if (st->rx_chunked && (st->chunk_left -= (uint32_t)k) ==
			    0) {
				memcpy(st->frag, "\r\n", 2);
				st->frag_off = 0;
				st->frag_len = 2;
			}
			continue;
		}
		if (st->rx_eof && st->rx_chunked && !st->rx_last_sent) {
			st->rx_last_sent = true;
			memcpy(st->frag, "0\r\n\r\n", 5);
			st->frag_off = 0;
			st->frag_len = 5;
			continue;
		}
		break;
	}
	return n;
}

static ssize_t
h2s_read(struct pt_conn *c, int fd, void *tctx, void *buf, size_t len,
    uint32_t *want)
{
	struct h2_stream	*st = tctx;
	size_t			 n, data;

	(void)c;
	(void)fd;
	if (st->reset)
		return -ECONNRESET;
	n = h2_stream_fill(st, buf, len, &data);
	if (data > 0) {
		nghttp2_session_consume(st->h2->session, st->id, data);
		h2_flush_soon(st->h2);
	}
	h2_stream_rx_compact(st);
	if (n > 0)
		return (ssize_t)n;
	if (st->rx_eof && st->head == NULL && st->frag_off == st->frag_len)
		return 0;
	*want = EPOLLIN;
	return -EAGAIN;
}

static size_t
h2s_pending(struct pt_conn *c, void *tctx)
{
	struct h2_stream	*st = tctx;

	(void)c;
	if (st->head != NULL && !st->rx_held)
		return st->head_len - st->head_off;
	return (size_t)(st->frag_len - st->frag_off) +
	    (st->rx_tail - st->rx_head);
}

bool
h2_stream_data(struct h2_stream *st, const uint8_t *b, size_t n)
{
	uint32_t	 left;

	if (n == 0)
		return true;
	if (st->rx == NULL && (st->rx = buf_get(BUF_SMALL)) == NULL)
		return false;
	if (st->rx_tail + n > buf_size(st->rx)) {
		left = st->rx_tail - st->rx_head;
		memmove(st->rx, st->rx + st->rx_head, left);
		st->rx_head = 0;
		st->rx_tail = left;
		if (left + n > buf_size(st->rx))
			return false;
	}
	memcpy(st->rx + st->rx_tail, b, n);
	st->rx_tail += (uint32_t)n;
	if (st->rx_held && h2_head_frame(st, true) < 0)
		return false;
	h2_stream_wake(st, EPOLLIN);
	return true;
}

void
h2_stream_end(struct h2_stream *st)
{
	st->rx_eof = true;
	if (st->rx_held)
		(void)h2_head_frame(st, false);
	h2_stream_wake(st, EPOLLIN);
}

/* ---- the transport: the response ------------------------------------ */

/* The request method, for the response parser's framing rules. */
static struct pt_str
h2_stream_method(const struct h2_stream *st)
{
	struct pt_str	 m = { "GET", 3 };

	if (st->is_head)
		m = (struct pt_str){ "HEAD", 4 };
	else if (st->tunnel && !st->ext_connect)
		m = (struct pt_str){ "CONNECT", 7 };
	return m;
}

/*
 * Takes head bytes until a head is complete, then submits it: an
 * interim one is dropped from <resp> and the next is looked for; a final
 * one leaves what followed it as the body's first bytes (moved to tx).
 * Returns bytes taken of <b>, or -errno.
 */
static ssize_t
h2_stream_resp_head(struct h2_stream *st, const char *b, size_t len)
{
	struct http_msg	*m = &h2_resp_msg;
	size_t		 max = h2_conf()->http.max_header_size;
	size_t		 take, cap, from;
	const char	*end;
	uint32_t	 hl, rest;
	int		 rc;

	if (st->resp == NULL && (st->resp = buf_get(BUF_LARGE)) == NULL)
		return -ENOBUFS;
	cap = buf_size(st->resp);
	take = len < cap - st->resp_len ? len : cap - st->resp_len;
	from = st->resp_len > 3 ? st->resp_len - 3 : 0;
	memcpy(st->resp + st->resp_len, b, take);
	st->resp_len += (uint32_t)take;
	while (!st->resp_final) {
		end = memmem(st->resp + from, st->resp_len - from,
		    "\r\n\r\n", 4);
		if (end == NULL)
			return st->resp_len < cap ? (ssize_t)take : -EPROTO;
		hl = (uint32_t)(end + 4 - st->resp);
		rc = http_parse_response(st->resp, hl, max,
		    h2_stream_method(st), m);
		if (rc != PARSE_OK || h2_head_response(st, m) < 0)
			return -EPROTO;
		rest = st->resp_len - hl;
		memmove(st->resp, st->resp + hl, rest);
		st->resp_len = rest;
		from = 0;
	}
	/* The body's first bytes came with the head. */
	if (st->resp_len > 0) {
		if (st->tx == NULL && (st->tx = buf_get(BUF_LARGE)) == NULL)
			return -ENOBUFS;
		memcpy(st->tx, st->resp, st->resp_len);
		st->tx_head = 0;
		st->tx_tail = st->resp_len;
	}
	buf_put(st->resp);
	st->resp = NULL;
	st->resp_len = 0;
	return (ssize_t)take;
}

static const struct pt_transport h2_stream_transport;

/* <c>'s stream when its client leg is one, else NULL. */
static struct h2_stream *
h2_stream_of_conn(struct pt_conn *c)
{
	return c->c_transport == &h2_stream_transport ? c->c_tctx : NULL;
}

/* Room at the end of <tx> for the response body's next bytes. */
static size_t
h2_stream_tx_room_of(struct h2_stream *st, char **p)
{
	uint32_t	 left;
	size_t		 room;

	/* A tunnel moving bulk reads a large buffer's worth at a time:
	 * fewer system calls per byte, as a spliced tunnel's grown pipe. */
	if (st->tx == NULL && (!st->tx_bulk ||
	    (st->tx = buf_get(BUF_LARGE)) == NULL) &&
	    (st->tx = buf_get(BUF_SMALL)) == NULL)
		return 0;
	/* Not while queued DATA frames refer to its bytes (h2_seg). */
	if (st->tx_head > 0 && st->tx_queued == 0) {
		left = st->tx_tail - st->tx_head;
		memmove(st->tx, st->tx + st->tx_head, left);
		st->tx_head = 0;
		st->tx_tail = left;
	}
	room = buf_size(st->tx) - st->tx_tail;
	if (room == 0)
		st->tx_blocked = true;	/* h2_stream_sent wakes the writer */
	*p = st->tx + st->tx_tail;
	return room;
}

/* <n> more bytes of the body at the end of <tx>: DATA for nghttp2. */
static void
h2_stream_tx_added(struct h2_stream *st, size_t n)
{
	st->tx_tail += (uint32_t)n;
	if (st->tx_deferred) {
		st->tx_deferred = false;
		nghttp2_session_resume_data(st->h2->session, st->id);
	}
	h2_flush_soon(st->h2);
}

static ssize_t
h2s_write(struct pt_conn *c, int fd, void *tctx, const void *buf, size_t len,
    uint32_t *want)
{
	struct h2_stream	*st = tctx;
	size_t			 room;
	ssize_t			 n;
	char			*p;

	(void)c;
	(void)fd;
	if (st->reset)
		return -ECONNRESET;
	if (!st->resp_final) {
		n = h2_stream_resp_head(st, buf, len);
		h2_flush_soon(st->h2);
		return n;
	}
	/* A response without a body (HEAD, 204, 304) ended with its
	 * HEADERS: nothing more goes to the client. */
	if (!st->resp_body || st->tx_eof)
		return (ssize_t)len;
	if (st->tx == NULL && (st->tx = buf_get(BUF_SMALL)) == NULL)
		return -ENOBUFS;
	if ((room = h2_stream_tx_room_of(st, &p)) == 0) {
		*want = EPOLLOUT;
		return -EAGAIN;
	}
	if (len > room)
		len = room;
	memcpy(p, buf, len);
	h2_stream_tx_added(st, len);
	return (ssize_t)len;
}

ssize_t
h2_stream_tx_room(struct pt_conn *c, char **p)
{
	struct h2_stream	*st = h2_stream_of_conn(c);
	size_t			 room;

	/* The head, an end or a failure: write() says what to do. */
	if (st == NULL || st->reset || !st->resp_final || !st->resp_body ||
	    st->tx_eof)
		return -ENOTSUP;
	room = h2_stream_tx_room_of(st, p);
	/* Out of buffers: write() says so. */
	return st->tx == NULL ? -ENOTSUP : (ssize_t)room;
}

void
h2_stream_tx_add(struct pt_conn *c, size_t n)
{
	struct h2_stream	*st = c->c_tctx;

	/* Half a small buffer or more at once is bulk; less than a page,
	 * interactive (as relay.c's guess for splicing). */
	if (n >= buf_class_size(BUF_SMALL) / 2)
		st->tx_bulk = true;
	else if (n < 4096)
		st->tx_bulk = false;
	h2_stream_tx_added(st, n);
}

size_t
h2_stream_rx_peek(struct pt_conn *c, const char **p)
{
	struct h2_stream	*st = h2_stream_of_conn(c);

	/* The head and chunk framing come through read(). */
	if (st == NULL || st->reset || st->rx == NULL || st->head != NULL ||
	    st->rx_chunked || st->frag_off < st->frag_len)
		return 0;
	*p = st->rx + st->rx_head;
	return st->rx_tail - st->rx_head;
}

void
h2_stream_rx_take(struct pt_conn *c, size_t n)
{
	struct h2_stream	*st = c->c_tctx;

	st->rx_head += (uint32_t)n;
	nghttp2_session_consume(st->h2->session, st->id, n);
	h2_flush_soon(st->h2);
	h2_stream_rx_compact(st);
}

/*
 * nghttp2 asks how much of the body goes in the next DATA frame (within
 * the client's windows and <len>): as much as <tx> holds, marked NO_COPY,
 * so nghttp2 copies nothing and h2_stream_send_data writes the frame's
 * header and these bytes straight into the connection's output.
 */
ssize_t
h2_stream_read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
    uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct h2_stream	*st = src->ptr;
	size_t			 left = st->tx_tail - st->tx_head - st->tx_queued;
	size_t			 avail = left;

	(void)s;
	(void)id;
	(void)buf;
	(void)arg;
	if (avail == 0 && !st->tx_eof) {
		st->tx_deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	if (avail > len)
		avail = len;
	if (st->tx_eof && avail == left)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (avail > 0)
		*flags |= NGHTTP2_DATA_FLAG_NO_COPY;
	return (ssize_t)avail;
}

void
h2_stream_sent(struct h2_stream *st, size_t n)
{
	st->tx_head += (uint32_t)n;
	if (st->tx_queued > 0)
		st->tx_queued -= (uint32_t)n;
	if (st->tx_head == st->tx_tail) {
		buf_put(st->tx);
		st->tx = NULL;
		st->tx_head = st->tx_tail = 0;
	}
	/* Kept for its queued bytes alone (no transaction to wake). */
	if (st->tx_queued == 0 && st->closed && st->gone) {
		h2_stream_release(st);
		return;
	}
	if (st->tx_blocked) {
		st->tx_blocked = false;
		h2_stream_wake(st, EPOLLOUT);
	}
}

/* The transaction is done with its response: END_STREAM once its bytes
 * are out. */
static int
h2s_shutdown(struct pt_conn *c, int fd, void *tctx)
{
	struct h2_stream	*st = tctx;

	(void)c;
	(void)fd;
	if (st->reset)
		return -ECONNRESET;
	st->tx_eof = true;
	if (st->tx_deferred) {
		st->tx_deferred = false;
		nghttp2_session_resume_data(st->h2->session, st->id);
	}
	h2_flush_soon(st->h2);
	return 0;
}

static void
h2s_free(struct pt_conn *c, void *tctx)
{
	struct h2_stream	*st = tctx;
	struct h2_conn		*h2 = st->h2;
	uint32_t		 code;

	st->c = NULL;
	st->gone = true;
	h2->nstreams--;
	buf_put(st->head);
	st->head = NULL;
	if (!st->closed && !h2->closing) {
		/* What the client sent and the transaction did not read is
		 * the client's window back. */
		if (st->rx_tail > st->rx_head)
			nghttp2_session_consume(h2->session, st->id,
			    st->rx_tail - st->rx_head);
		if (st->tx_eof && st->resp_final && !c->c_cut) {
			if (st->tx_deferred) {
				st->tx_deferred = false;
				nghttp2_session_resume_data(h2->session,
				    st->id);
			}
		} else if (!st->reset) {
			code = st->tunnel && c->c_cut ? NGHTTP2_CONNECT_ERROR :
			    NGHTTP2_INTERNAL_ERROR;
			if (!st->resp_final && !c->c_cut)
				code = NGHTTP2_CANCEL;
			nghttp2_submit_rst_stream(h2->session,
			    NGHTTP2_FLAG_NONE, st->id, code);
		}
		h2_flush_soon(h2);
	}
	buf_put(st->rx);
	st->rx = NULL;
	st->rx_head = st->rx_tail = 0;
	h2_stream_release(st);
}

static const struct pt_transport h2_stream_transport = {
	.name = "h2",
	.read = h2s_read,
	.write = h2s_write,
	.shutdown = h2s_shutdown,
	.free = h2s_free,
	.pending = h2s_pending,
};

/* ---- life ----------------------------------------------------------- */

struct h2_stream *
h2_stream_new(struct h2_conn *h2, int32_t id)
{
	struct h2_stream	*st;

	if ((st = pool_get(&h2_stream_pool)) == NULL)
		return NULL;
	memset(st, 0, sizeof(*st));
	st->h2 = h2;
	st->id = id;
	st->tx_length = UINT64_MAX;
	st->next = h2->streams;
	if (h2->streams != NULL)
		h2->streams->prev = st;
	h2->streams = st;
	return st;
}

/* The stream's transaction starts, as a connection accepted on the h2
 * connection's listener (its peer, local address and PROXY header). */
static void
h2_stream_begin(struct h2_stream *st)
{
	struct h2_conn	*h2 = st->h2;
	struct pt_conn	*c;

	/* Reset by the client before its turn came. */
	if (h2->closing || st->closed) {
		st->gone = true;
		return;
	}
	c = conn_new_stream(h2->c, (uint32_t)st->id, &h2_stream_transport, st);
	if (c == NULL || (h2->c->c_proxy != NULL &&
	    (c->c_proxy = proxy_info_dup(h2->c->c_proxy)) == NULL)) {
		if (c != NULL)
			conn_close(c, "out of memory");
		else
			st->gone = true;
		nghttp2_submit_rst_stream(h2->session, NGHTTP2_FLAG_NONE,
		    st->id, NGHTTP2_REFUSED_STREAM);
		h2_flush_soon(h2);
		return;
	}
	st->c = c;
	/* Each stream in flight may bring back an origin connection worth
	 * keeping, as each HTTP/1.1 client connection does. */
	if (++h2->nstreams > h2->pool_reserved) {
		upstream_reserve(1);
		h2->pool_reserved++;
	}
	http_start(c);
}

void
h2_stream_headers_done(struct h2_stream *st, bool end)
{
	st->rx_eof = end;
	st->start = true;
	h2_stream_wake(st, 0);
}

void
h2_stream_closed(struct h2_stream *st, uint32_t error)
{
	(void)error;
	st->closed = true;
	if (st->c != NULL) {
		/* The client reset it, or the stream ended before its
		 * transaction did: reads and writes now say so. */
		st->reset = true;
		h2_stream_wake(st, EPOLLIN | EPOLLOUT);
		return;
	}
	/* Closed before its transaction began (a rapid reset: HEADERS and
	 * RST_STREAM in one read): its head goes now, not when its posted
	 * start runs, so a flood of them holds no buffer. */
	h2_head_drop(st);
	buf_put(st->head);
	buf_put(st->rx);
	st->head = st->rx = NULL;
	st->rx_head = st->rx_tail = 0;
	memset(&st->rh, 0, sizeof(st->rh));
	st->gone = true;
	h2_stream_release(st);
}

void
h2_stream_cut(struct h2_stream *st)
{
	/* Its memory stays through the transaction's free (h2s_free), even
	 * when nghttp2 closed the stream already: the connection is
	 * closing (h2_stream_release), and h2_free lets go of every stream
	 * after. */
	if (st->c != NULL) {
		/* A module's resume may come after the connection is gone. */
		st->c->c_owner = NULL;
		conn_cut(st->c, "http2 connection closed");
	}
	st->closed = true;
	st->gone = true;
}

void
h2_stream_detach(struct h2_stream *st)
{
	/* The output that referred to its bytes went with the connection. */
	st->tx_queued = 0;
	st->h2 = NULL;
	h2_stream_release(st);
}
