/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An HTTP/2 client connection: nghttp2's server session driven by the
 * worker's loop, on the pt_conn that was accepted (its socket, its
 * transport, its timer). What is read goes to nghttp2 whole; frames
 * nghttp2 has to send are gathered and written with one call per round
 * (on a plain socket a writev, DATA payloads taken from their streams'
 * buffers where they are: h2_seg); streams become transactions
 * (h2_stream.c).
 *
 * Limits (RFC 9113 10.5, and the attacks since): at most the listener's
 * http2_max_streams streams at once, each with a window of
 * relay.buffer_size and the connection with room for all of them, so a
 * stalled stream never stops the others; heads bounded by
 * http.max_header_size; nghttp2's own guards against SETTINGS, PING and
 * RST_STREAM floods and CONTINUATION floods are set explicitly. An idle
 * connection (no stream) lives for limits.idle_timeout; a draining
 * worker sends GOAWAY and lets the streams in flight finish.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "worker/h2.h"
#include "worker/h2_conn.h"
#include "common/conf_types.h"
#include "common/counters.h"
#include "worker/conn.h"
#include "worker/pool.h"
#include "worker/upstream.h"
#include "worker/worker_self.h"

/* Reads per event before others get a turn, as in http.c. */
#define H2_ROUNDS	16
/* A draining connection's grace between its two GOAWAYs, as long as an
 * HTTP/1.1 connection's (http.c's HTTP_DRAIN_GRACE_MS). */
#define H2_DRAIN_GRACE_MS	1000
/* Frames are gathered up to about this much before a write. */
#define H2_OUT_HIGH	(64 * 1024)

static const struct pt_config	*h2_config;
static struct pool		 h2_pool;
static nghttp2_session_callbacks *h2_callbacks;
static nghttp2_option		*h2_options;
/* One read at a time per worker: nghttp2 takes all of it at once. */
static uint8_t			 h2_in[65536];

const struct pt_config *
h2_conf(void)
{
	return h2_config;
}

static struct h2_conn *
h2_of(struct pt_conn *c)
{
	return c->c_proto;
}

static struct h2_stream *
h2_stream_of(nghttp2_session *s, int32_t id)
{
	return nghttp2_session_get_stream_user_data(s, id);
}

/* ---- nghttp2's callbacks -------------------------------------------- */

/* Whether stream <id> is open, or half-closed, in nghttp2: not closed
 * (nghttp2 keeps none) and not idle (one a PRIORITY frame named). */
static bool
h2_open(nghttp2_session *s, int32_t id)
{
	nghttp2_stream	*stream = nghttp2_session_find_stream(s, id);

	return stream != NULL &&
	    nghttp2_stream_get_state(stream) != NGHTTP2_STREAM_STATE_IDLE &&
	    nghttp2_stream_get_state(stream) != NGHTTP2_STREAM_STATE_CLOSED;
}

/*
 * A HEADERS frame on a client stream below the highest opened that is not
 * open: closed, or skipped. nghttp2 keeps no closed stream and would
 * ignore it; RFC 9113 5.1 says when ignoring is right (h2_ids.c), and the
 * rest are connection errors. A HEADERS above every stream before opens
 * one. (DATA frames: h2_ids_recv.)
 */
static int
h2_on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *arg)
{
	struct h2_conn	*h2 = arg;
	uint32_t	 error;

	if (hd->type != NGHTTP2_HEADERS || !(hd->stream_id & 1))
		return 0;
	if (hd->stream_id > h2->ids.last) {
		h2_ids_open(&h2->ids, hd->stream_id);
		return 0;
	}
	if (h2_open(s, hd->stream_id) ||
	    (error = h2_ids_judge(&h2->ids, hd->stream_id)) ==
	    NGHTTP2_NO_ERROR)
		return 0;
	return nghttp2_session_terminate_session(s, error) == 0 ? 0 :
	    NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int
h2_on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
	struct h2_conn		*h2 = arg;
	struct h2_stream	*st;

	if (f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if ((st = h2_stream_new(h2, f->hd.stream_id)) == NULL)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	nghttp2_session_set_stream_user_data(s, f->hd.stream_id, st);
	return 0;
}

static int
h2_on_header(nghttp2_session *s, const nghttp2_frame *f, nghttp2_rcbuf *name,
    nghttp2_rcbuf *value, uint8_t flags, void *arg)
{
	struct h2_stream	*st = h2_stream_of(s, f->hd.stream_id);

	(void)flags;
	(void)arg;
	/* Trailers are not passed on (the chunked body ends without). */
	if (st == NULL || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	return h2_head_field(st, name, value);
}

/* A request head this proxy refuses before it is a transaction: the
 * answer without a body, and the stream ends. */
static void
h2_refuse(struct h2_conn *h2, struct h2_stream *st, const char *status)
{
	nghttp2_nv	 nv = { (uint8_t *)":status", (uint8_t *)status, 7, 3,
			    NGHTTP2_NV_FLAG_NONE };

	st->gone = true;
	nghttp2_submit_response(h2->session, st->id, &nv, 1, NULL);
}

static int
h2_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
	struct h2_conn		*h2 = arg;
	struct h2_stream	*st = h2_stream_of(s, f->hd.stream_id);
	bool			 end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
	int			 rv;

	if (f->hd.type == NGHTTP2_RST_STREAM || (end &&
	    (f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA)))
		h2_ids_done(&h2->ids, f->hd.stream_id);
	if (st == NULL)
		return 0;
	/* Answered already: only whether the client is done counts
	 * (h2_on_frame_sent). */
	if (st->gone) {
		st->rx_eof = st->rx_eof || end;
		return 0;
	}
	switch (f->hd.type) {
	case NGHTTP2_HEADERS:
		if (f->headers.cat != NGHTTP2_HCAT_REQUEST) {
			/* A tunnel carries DATA only (RFC 9113 8.5): trailers
			 * on it are a stream error, and the reset ends the
			 * tunnel (h2_on_stream_close). nghttp2 resets those
			 * without END_STREAM itself. */
			if (st->tunnel)
				nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE,
				    f->hd.stream_id, NGHTTP2_PROTOCOL_ERROR);
			else if (end)
				h2_stream_end(st);
			break;
		}
		rv = h2_head_finish(st, end);
		if (st->rh.malformed) {
			/* RFC 9113 8.1.1: a stream error PROTOCOL_ERROR. */
			st->gone = st->rx_eof = true;
			nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE,
			    f->hd.stream_id, NGHTTP2_PROTOCOL_ERROR);
			break;
		}
		if (rv < 0) {
			/* A request that ended gets no RST_STREAM after the
			 * answer (h2_on_frame_sent): the stream is closed. */
			st->rx_eof = end;
			h2_refuse(h2, st, st->rh.too_large ? "431" : "501");
			break;
		}
		h2_stream_headers_done(st, end);
		break;
	case NGHTTP2_DATA:
		if (end)
			h2_stream_end(st);
		break;
	default:
		break;
	}
	return 0;
}

static int
h2_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *b,
    size_t n, void *arg)
{
	struct h2_stream	*st = h2_stream_of(s, id);

	(void)flags;
	(void)arg;
	if (st != NULL && !st->gone && h2_stream_data(st, b, n))
		return 0;
	/* Nobody reads it (the transaction ended first) or it does not
	 * fit (a client past its window, which nghttp2 already refuses):
	 * the window is the client's again. */
	nghttp2_session_consume(s, id, n);
	return 0;
}

/*
 * The response ended (END_STREAM sent) with the request still coming and
 * nobody left to read it (a 407 or 413 to a body being uploaded): RST_STREAM
 * NO_ERROR tells the client to stop sending (RFC 9113 8.1), rather than
 * the stream staying half-open, one of the 100, until it does. And a
 * GOAWAY of ours is noted (h2_send).
 */
static int
h2_on_frame_sent(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
	struct h2_conn		*h2 = arg;
	struct h2_stream	*st;

	if (f->hd.type == NGHTTP2_GOAWAY)
		h2->goaway_sent = true;
	if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
	    (f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS))
		return 0;
	st = h2_stream_of(s, f->hd.stream_id);
	if (st != NULL && st->gone && !st->rx_eof)
		nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE,
		    f->hd.stream_id, NGHTTP2_NO_ERROR);
	return 0;
}

static int
h2_on_stream_close(nghttp2_session *s, int32_t id, uint32_t error, void *arg)
{
	struct h2_stream	*st = h2_stream_of(s, id);

	(void)arg;
	if (st != NULL)
		h2_stream_closed(st, error);
	return 0;
}

/* ---- the socket ----------------------------------------------------- */

static void	h2_pump(struct pt_conn *c);

static void
h2_on_posted(struct loop_task *t)
{
	struct pt_conn	*c = (struct pt_conn *)((char *)t -
			    offsetof(struct pt_conn, c_post));

	if (c->c_state != CONN_CLOSED)
		h2_pump(c);
}

void
h2_flush_soon(struct h2_conn *h2)
{
	if (!h2->closing)
		loop_post(&h2->c->c_post, h2_on_posted);
}

/* Room for <n> more bytes of output; false when out of memory. */
static bool
h2_out_room(struct h2_conn *h2, size_t n)
{
	char	*more;

	if (h2->out_len + n <= h2->out_size)
		return true;
	if ((more = realloc(h2->out, h2->out_len + n + H2_OUT_HIGH)) == NULL)
		return false;
	h2->out = more;
	h2->out_size = h2->out_len + (uint32_t)n + H2_OUT_HIGH;
	return true;
}

/*
 * A DATA frame of a stream's body (h2_stream_read_body said NO_COPY). On
 * a plain socket its header goes into the output and its payload stays
 * in the stream's buffer, queued (h2_seg) for the writev that takes both:
 * the payload's bytes are copied only by the kernel, out of the origin's
 * socket and into the client's. Through a transport (TLS), which writes
 * one buffer at a time, header and payload are copied into the output.
 * We ask for no padding; a frame with some gets its bytes.
 */
static int
h2_on_send_data(nghttp2_session *s, nghttp2_frame *f, const uint8_t *hd,
    size_t len, nghttp2_data_source *src, void *arg)
{
	struct h2_conn		*h2 = arg;
	struct h2_stream	*st = src->ptr;
	const char		*p = st->tx + st->tx_head + st->tx_queued;
	struct h2_seg		*g;
	size_t			 pad = f->data.padlen;

	(void)s;
	if (h2->c->c_transport == NULL && pad == 0) {
		if (!h2_out_room(h2, 9) || (h2->segs == NULL &&
		    (h2->segs = calloc(1, sizeof(*h2->segs))) == NULL))
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		memcpy(h2->out + h2->out_len, hd, 9);
		h2->out_len += 9;
		g = &h2->segs->s[h2->segs->n++];
		g->st = st;
		g->p = p;
		g->len = (uint32_t)len;
		g->at = h2->out_len;
		h2->segs->bytes += (uint32_t)len;
		st->tx_queued += (uint32_t)len;
		/* Full: nghttp2 stops here, and the frames are written. */
		return h2->segs->n == H2_SEGS ? NGHTTP2_ERR_PAUSE : 0;
	}
	if (!h2_out_room(h2, 9 + pad + len))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	memcpy(h2->out + h2->out_len, hd, 9);
	h2->out_len += 9;
	if (pad > 0)
		h2->out[h2->out_len++] = (char)(pad - 1);
	memcpy(h2->out + h2->out_len, p, len);
	h2->out_len += (uint32_t)len;
	if (pad > 1) {
		memset(h2->out + h2->out_len, 0, pad - 1);
		h2->out_len += (uint32_t)(pad - 1);
	}
	h2_stream_sent(st, len);
	return 0;
}

/* Bytes waiting to be written: out's and the queued payloads'. */
static size_t
h2_out_pending(const struct h2_conn *h2)
{
	return (size_t)(h2->out_len - h2->out_start) +
	    (h2->segs != NULL ? h2->segs->bytes : 0);
}

/* What waits, in order, as iovecs (at most 2 * H2_SEGS + 1). */
static int
h2_out_iov(const struct h2_conn *h2, struct iovec *iov)
{
	const struct h2_segs	*q = h2->segs;
	const struct h2_seg	*g;
	uint32_t		 pos = h2->out_start, i, off;
	int			 n = 0;

	for (i = q != NULL ? q->first : 0; q != NULL && i < q->n; i++) {
		g = &q->s[i];
		if (g->at > pos) {
			iov[n].iov_base = h2->out + pos;
			iov[n++].iov_len = g->at - pos;
			pos = g->at;
		}
		off = i == q->first ? q->off : 0;
		iov[n].iov_base = (char *)(uintptr_t)(g->p + off);
		iov[n++].iov_len = g->len - off;
	}
	if (h2->out_len > pos) {
		iov[n].iov_base = h2->out + pos;
		iov[n++].iov_len = h2->out_len - pos;
	}
	return n;
}

/* <n> bytes of what waits were written: a payload done is its stream's
 * to let go of (h2_stream_sent). */
static void
h2_out_sent(struct h2_conn *h2, size_t n)
{
	struct h2_segs	*q = h2->segs;
	struct h2_seg	*g;
	uint32_t	 lim, k;

	while (n > 0) {
		if (q != NULL && q->first < q->n &&
		    q->s[q->first].at == h2->out_start) {
			g = &q->s[q->first];
			k = n < g->len - q->off ? (uint32_t)n : g->len - q->off;
			q->off += k;
			q->bytes -= k;
			n -= k;
			if (q->off == g->len) {
				q->first++;
				q->off = 0;
				h2_stream_sent(g->st, g->len);
			}
			continue;
		}
		lim = q != NULL && q->first < q->n ? q->s[q->first].at :
		    h2->out_len;
		k = n < lim - h2->out_start ? (uint32_t)n :
		    lim - h2->out_start;
		h2->out_start += k;
		n -= k;
	}
	if (q != NULL && q->first == q->n)
		q->first = q->n = 0;
}

/* Frames to the client: what is left of the last write, then what
 * nghttp2 has, gathered. False when the connection closed. */
static bool
h2_send(struct h2_conn *h2)
{
	struct pt_conn		*c = h2->c;
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];
	struct iovec		 iov[2 * H2_SEGS + 1];
	const uint8_t		*data;
	size_t			 want;
	ssize_t			 n;

	for (;;) {
		while (h2->out_len < H2_OUT_HIGH && (h2->segs == NULL ||
		    h2->segs->n < H2_SEGS)) {
			n = nghttp2_session_mem_send(h2->session, &data);
			if (n < 0) {
				conn_close(c, "http2 session error");
				return false;
			}
			if (n == 0)
				break;
			h2->big_idle = false;
			if (!h2_out_room(h2, (size_t)n)) {
				conn_close(c, "out of memory");
				return false;
			}
			memcpy(h2->out + h2->out_len, data, (size_t)n);
			h2->out_len += (uint32_t)n;
		}
		if ((want = h2_out_pending(h2)) == 0)
			break;
		if (!(s->ready & EPOLLOUT))
			return true;
		if (h2->segs != NULL && h2->segs->n > 0)
			n = conn_sendv(c, s, iov, h2_out_iov(h2, iov));
		else
			n = conn_send(c, s, h2->out + h2->out_start,
			    h2->out_len - h2->out_start);
		if (n == -EAGAIN) {
			s->ready &= ~EPOLLOUT;
			return true;
		}
		if (n < 0) {
			conn_abort(c, "write failed");
			return false;
		}
		h2_out_sent(h2, (size_t)n);
		if ((size_t)n < want) {
			/* A plain socket that took less is full; a transport
			 * (TLS) takes a record at a time: write on. */
			if (c->c_transport == NULL) {
				s->ready &= ~EPOLLOUT;
				return true;
			}
			continue;
		}
		h2->out_start = h2->out_len = 0;
	}
	/* Nothing waits: an idle connection holds no output buffer. */
	free(h2->out);
	h2->out = NULL;
	h2->out_size = 0;
	free(h2->segs);
	h2->segs = NULL;
	/* The last GOAWAY is written. The client may have sent more
	 * meanwhile: a lingering close keeps those unread bytes from
	 * turning the close into a reset, which could lose the GOAWAY and
	 * the end of the last stream. */
	if (!nghttp2_session_want_read(h2->session) &&
	    !nghttp2_session_want_write(h2->session)) {
		/* Done because the client's GOAWAY came: ours goes first
		 * (RFC 9113 6.8, SHOULD), naming the last stream taken. */
		if (!h2->goaway_sent) {
			h2->goaway_sent = true;
			if (nghttp2_submit_goaway(h2->session,
			    NGHTTP2_FLAG_NONE,
			    nghttp2_session_get_last_proc_stream_id(h2->session),
			    NGHTTP2_NO_ERROR, NULL, 0) == 0 &&
			    nghttp2_session_want_write(h2->session))
				return h2_send(h2);
		}
		conn_close_linger(c, NULL);
		return false;
	}
	return true;
}

/* The idle limit runs while no stream is open; GOAWAY, then the close. */
static void
h2_on_timer(struct pt_timer *t, void *arg)
{
	struct pt_conn	*c = arg;
	struct h2_conn	*h2 = h2_of(c);

	(void)t;
	if (h2->nstreams > 0)
		return;
	nghttp2_session_terminate_session(h2->session, NGHTTP2_NO_ERROR);
	if (h2_send(h2))
		conn_close_linger(c, "idle timeout");
}

static void
h2_pump(struct pt_conn *c)
{
	struct h2_conn		*h2 = h2_of(c);
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];
	ssize_t			 n, rv;
	bool			 more;
	int			 i;

	for (i = 0; i < H2_ROUNDS; i++) {
		/* Frames not yet written hold the client back, as TCP
		 * would: nothing more is read until they are out. The
		 * socket's EPOLLIN stays noted, so the write that drains
		 * them (its EPOLLOUT event comes here) reads on. */
		more = h2_out_pending(h2) <= H2_OUT_HIGH &&
		    conn_readable(c, s);
		if (more) {
			n = conn_recv(c, s, h2_in, sizeof(h2_in));
			if (n == -EAGAIN) {
				s->ready &= ~EPOLLIN;
				more = false;
			} else if (n <= 0) {
				/* What is queued (our SETTINGS, a GOAWAY) goes
				 * out if it can: the client may only have
				 * half-closed. */
				if (n == 0 && !h2_send(h2))
					return;
				conn_close(c, n == 0 ? NULL : "read failed");
				return;
			} else {
				c->c_last_active = loop_now();
				/* What nghttp2 reads may touch its pages
				 * (h2_mem_idle looks again). */
				h2->big_idle = false;
				rv = h2_ids_recv(h2, h2_in, (size_t)n);
				if (rv < 0) {
					/* A protocol error or a flood: nghttp2
					 * queued a GOAWAY saying which; it goes
					 * out, then the close. */
					if (h2_send(h2))
						conn_close_linger(c,
						    nghttp2_strerror((int)rv));
					return;
				}
				if ((size_t)n < sizeof(h2_in) &&
				    c->c_transport == NULL)
					s->ready &= ~EPOLLIN;
			}
		}
		if (!h2_send(h2))
			return;
		if (!more)
			break;
	}
	if (i == H2_ROUNDS)
		loop_post(&c->c_post, h2_on_posted);
	if (h2->nstreams == 0 && h2->draining && h2->out_len == 0) {
		conn_close_linger(c, "draining");
		return;
	}
	/* No stream, every frame written, and the client's bytes all taken
	 * (the last read drained the socket: nghttp2 is between frames only
	 * then, as far as h2_mem.c needs to know): idle. */
	if (h2->nstreams == 0 && h2->out_len == 0 &&
	    !(s->ready & EPOLLIN) && !nghttp2_session_want_write(h2->session))
		h2_mem_idle(h2);
	/* Draining, the timer is the drain's (h2_on_drain). */
	if (h2->notice)
		return;
	if (h2->nstreams == 0 && c->c_timer.heap_idx == 0)
		pt_timer_start(&c->c_timer, h2_config->limits.idle_timeout_ms,
		    h2_on_timer, c);
	else if (h2->nstreams > 0)
		pt_timer_stop(&c->c_timer);
}

static void
h2_on_event(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;

	conn_side_note_events(s, events);
	h2_pump(s->conn);
}

/* ---- the connection's life ------------------------------------------ */

/* conn_close, first: every transaction on it is cut while the session
 * still exists. */
static void
h2_on_close(struct pt_conn *c)
{
	struct h2_conn		*h2 = h2_of(c);
	struct h2_stream	*st;

	if (h2 == NULL)
		return;
	h2->closing = true;
	for (st = h2->streams; st != NULL; st = st->next)
		h2_stream_cut(st);
}

static void
h2_free(struct pt_conn *c)
{
	struct h2_conn		*h2 = h2_of(c);
	struct h2_stream	*st, *next;

	if (h2 == NULL)
		return;
	for (st = h2->streams; st != NULL; st = next) {
		next = st->next;
		h2_stream_detach(st);
	}
	nghttp2_session_del(h2->session);
	h2_mem_fini(h2);
	free(h2->out);
	free(h2->segs);
	upstream_unreserve(h2->pool_reserved);
	pool_put(&h2_pool, h2);
	c->c_proto = NULL;
}

/* The drain's second step: GOAWAY naming the last stream taken. Streams
 * the client opened after it are refused, and it retries them on a new
 * connection (RFC 9113 6.8); those before it finish, then the close
 * (h2_pump). */
static void
h2_on_drain_timer(struct pt_timer *t, void *arg)
{
	struct pt_conn	*c = arg;
	struct h2_conn	*h2 = h2_of(c);

	(void)t;
	h2->draining = true;
	nghttp2_submit_goaway(h2->session, NGHTTP2_FLAG_NONE,
	    nghttp2_session_get_last_proc_stream_id(h2->session),
	    NGHTTP2_NO_ERROR, NULL, 0);
	h2_pump(c);
}

/*
 * A draining worker (reload, stop): first a GOAWAY that refuses nothing
 * yet (stream 2^31-1, RFC 9113 6.8's graceful shutdown), so requests
 * already on their way are still served, as HTTP/1.1's drain serves one
 * that crossed its Connection: close; the final GOAWAY follows after the
 * same grace (h2_on_drain_timer).
 */
static void
h2_on_drain(struct pt_conn *c)
{
	struct h2_conn	*h2 = h2_of(c);

	if (h2 == NULL || h2->notice)
		return;
	h2->notice = true;
	nghttp2_submit_shutdown_notice(h2->session);
	pt_timer_start(&c->c_timer, H2_DRAIN_GRACE_MS, h2_on_drain_timer, c);
	h2_pump(c);
}

/* Our SETTINGS: the limits above, and RFC 8441's extended CONNECT. */
static int
h2_settings(struct h2_conn *h2)
{
	uint32_t		 streams = h2->c->c_listener->http2_max_streams;
	nghttp2_settings_entry	 iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, streams },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
		  h2_config->buffer_size },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
		  h2_config->http.max_header_size },
		{ NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1 },
	};

	if (nghttp2_submit_settings(h2->session, NGHTTP2_FLAG_NONE, iv,
	    sizeof(iv) / sizeof(iv[0])) != 0)
		return -1;
	return nghttp2_session_set_local_window_size(h2->session,
	    NGHTTP2_FLAG_NONE, 0,
	    (int32_t)(streams * h2_config->buffer_size));
}

void
h2_start(struct pt_conn *c, const char *b, size_t n)
{
	struct h2_conn		*h2;
	struct conn_side	*s;
	ssize_t			 rv;

	if ((h2 = pool_get(&h2_pool)) == NULL) {
		conn_close(c, "out of HTTP/2 state");
		return;
	}
	memset(h2, 0, sizeof(*h2));
	h2->c = c;
	h2->ids.skip = NGHTTP2_CLIENT_MAGIC_LEN;
	h2_mem_init(h2);
	h2->mem_creating = true;
	rv = nghttp2_session_server_new3(&h2->session, h2_callbacks, h2,
	    h2_options, &h2->mem);
	h2->mem_creating = false;
	if (rv != 0) {
		h2_mem_fini(h2);
		pool_put(&h2_pool, h2);
		conn_close(c, "out of memory");
		return;
	}
	c->c_proto = h2;
	c->c_proto_free = h2_free;
	c->c_proto_close = h2_on_close;
	c->c_proto_drain = h2_on_drain;
	c->c_proto_header = NULL;
	c->c_budget_resume = h2_pump;
	/* The connection is no transaction: its streams are. */
	c->c_logged = true;
	counters_add(CTR_H2_CONNS, 1);
	pt_timer_stop(&c->c_timer);
	/* The preface may have come with the first read, before http.c
	 * registered the socket (or, behind TLS, while the handshake's
	 * registration still asked for nothing): it is watched for
	 * everything here, as http.c would have. No system call when it
	 * is so already. */
	s = &c->c_side[SIDE_CLIENT];
	s->io.fn = h2_on_event;
	if ((!s->io.added ? loop_io_start(&s->io, s->io.fd, CONN_SIDE_EVENTS,
	    h2_on_event) : loop_io_set(&s->io, CONN_SIDE_EVENTS)) < 0) {
		conn_close(c, "epoll_ctl");
		return;
	}
	if (h2_settings(h2) < 0) {
		conn_close(c, "out of memory");
		return;
	}
	rv = h2_ids_recv(h2, (const uint8_t *)b, n);
	if (rv < 0) {
		if (h2_send(h2))
			conn_close(c, nghttp2_strerror((int)rv));
		return;
	}
	h2_pump(c);
}

void
h2_init(const struct pt_config *conf, unsigned max_conns)
{
	nghttp2_session_callbacks	*cb;

	h2_config = conf;
	pool_init(&h2_pool, "http2 connection", sizeof(struct h2_conn),
	    max_conns);
	h2_stream_pool_init(2 * max_conns);
	if (nghttp2_session_callbacks_new(&cb) != 0 ||
	    nghttp2_option_new(&h2_options) != 0)
		abort();
	nghttp2_session_callbacks_set_on_begin_frame_callback(cb,
	    h2_on_begin_frame);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb,
	    h2_on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback2(cb, h2_on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, h2_on_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
	    h2_on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb,
	    h2_on_stream_close);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb,
	    h2_on_frame_sent);
	nghttp2_session_callbacks_set_send_data_callback(cb, h2_on_send_data);
	h2_callbacks = cb;
	/* The window goes back as the transaction reads (h2_stream.c). */
	nghttp2_option_set_no_auto_window_update(h2_options, 1);
	/* A closed stream is freed. nghttp2 would keep up to
	 * MAX_CONCURRENT_STREAMS of them (240 bytes each, and they hold the
	 * stream map's page, h2_mem.c) for RFC 7540's priority tree, which
	 * nothing here uses. Frames on closed streams: h2_ids.c. */
	nghttp2_option_set_no_closed_streams(h2_options, 1);
	/* The guards nghttp2 has, at the values its authors chose, set
	 * here so that a library built otherwise cannot lower them: queued
	 * SETTINGS/PING answers (a flood that does not read them), SETTINGS
	 * entries, RST_STREAM rate (CVE-2023-44487), CONTINUATION frames
	 * per head (CVE-2024-28182). */
	nghttp2_option_set_max_outbound_ack(h2_options, 1000);
	nghttp2_option_set_max_settings(h2_options, 32);
	nghttp2_option_set_stream_reset_rate_limit(h2_options, 1000, 33);
	nghttp2_option_set_max_continuations(h2_options, 8);
}

void
h2_fini(void)
{
	nghttp2_session_callbacks_del(h2_callbacks);
	nghttp2_option_del(h2_options);
	h2_callbacks = NULL;
	h2_options = NULL;
	h2_stream_pool_fini();
	pool_fini(&h2_pool);
}
