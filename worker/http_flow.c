/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The bytes of one direction of an HTTP transaction: reading them from
 * the source into the flow's input buffer, framing a body in place
 * (http_parse.c's decoder checks every chunk), writing the rewritten head
 * and the framed body to the destination in one system call, and moving
 * a large body socket to socket through a pooled pipe instead.
 *
 * Bodies stream: a flow reads again only when everything it read has been
 * written, so each flow holds at most one buffer of body in flight.
 *
 * What this file does not decide: which side of a transaction a flow
 * serves, when a connection is kept, what a failure is answered with
 * (http.c, http_origin.c, http_answer.c). It touches the connection only
 * through its sides, its budgets and the byte counters of c_req.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "worker/http_flow.h"
#include "common/counters.h"
#include "worker/loop.h"

/* ---- buffers -------------------------------------------------------- */

bool
http_flow_out_grow(struct http_flow *f)
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

bool
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

void
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

/* ---- heads ---------------------------------------------------------- */

bool
http_flow_head_ready(struct http_flow *f)
{
	const char	*lf;
	uint32_t	 i = f->scan, at;
	bool		 ready = false;

	/* A blank line ends a head: CRLFCRLF, or LFLF, which the parser
	 * refuses. */
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

/* ---- reading -------------------------------------------------------- */

/* A socket without a transport (a TLS listener's client, an https
 * parent's upstream have one): its readiness follows its byte queues. */
static bool
http_flow_plain(const struct pt_conn *c, const struct conn_side *s)
{
	return conn_transport(c, s) == NULL;
}

/* <n> bytes were read from <src>: the connection is active, the
 * direction's budget pays for them, and what the client sent counts as
 * bytes_in. */
static void
http_flow_count_read(struct pt_conn *c, struct conn_side *src, ssize_t n)
{
	c->c_last_active = loop_now();
	conn_budget_take(c, http_flow_src_dir(c, src), (uint64_t)n);
	if (src == &c->c_side[SIDE_CLIENT]) {
		c->c_req.bytes_in += (uint64_t)n;
		counters_add(CTR_BYTES_IN, n);
	}
}

/* What a transport took from the socket and hands out in pieces raises
 * no epoll event: it is read into the flow's buffer while there is room
 * and budget (relay.c does the same; http_flow_count_read charges it).
 * Bytes added; a failure waits for the next read. */
static ssize_t
http_flow_read_pending(struct pt_conn *c, struct http_flow *f,
    struct conn_side *src)
{
	ssize_t	 n, total = 0;

	while (f->in_len < buf_size(f->in) && conn_pending(c, src) > 0 &&
	    c->c_budget[http_flow_src_dir(c, src)].left != 0) {
		n = conn_recv(c, src, f->in + f->in_len,
		    conn_budget_cap(c, http_flow_src_dir(c, src),
		    buf_size(f->in) - f->in_len));
		if (n <= 0)
			break;
		f->in_len += (uint32_t)n;
		http_flow_count_read(c, src, n);
		total += n;
	}
	return total;
}

ssize_t
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
	want = conn_budget_cap(c, http_flow_src_dir(c, src),
	    buf_size(f->in) - f->in_len);
	n = conn_recv(c, src, f->in + f->in_len, want);
	/* A short read from a plain socket emptied its queue: edge-triggered
	 * epoll reports the next byte, so no recv needs to hit EAGAIN to
	 * learn it. Not after the peer's FIN was reported, though: the EOF
	 * may still be behind those bytes, and it raises no new edge. */
	if (n == -EAGAIN || (n > 0 && (size_t)n < want &&
	    http_flow_plain(c, src) && !src->hup)) {
		src->ready &= ~(uint32_t)EPOLLIN;
		if (n == -EAGAIN)
			return n;
	}
	if (n > 0) {
		f->in_len += (uint32_t)n;
		http_flow_count_read(c, src, n);
	}
	if (n > 0 && !http_flow_plain(c, src))
		n += http_flow_read_pending(c, f, src);
	return n;
}

/* ---- bodies through a pipe ------------------------------------------ */

/*
 * Large bodies of known length, and bodies delimited by close, move from
 * socket to socket through a pooled pipe (relay_splice_in/out) instead of
 * being copied through a buffer, as HAProxy does: nothing in portico or
 * its modules reads body bytes. Not with a transport on either leg (its
 * bytes must pass through the module), not for chunked bodies (the
 * framing is checked), and only once the buffers hold nothing of the
 * flow, so the order of the bytes holds. A body of known length is read
 * exactly: never a byte of the next message. Which bodies are worth a
 * pipe: relay_body_splices.
 */
static bool
http_flow_splices(const struct pt_conn *c, const struct http_flow *f)
{
	if (f->piped > 0)
		return true;
	if (conn_transport(c, &c->c_side[SIDE_CLIENT]) != NULL ||
	    conn_transport(c, &c->c_side[SIDE_UPSTREAM]) != NULL ||
	    !f->head_done ||
	    f->body_done || http_flow_has_buffered(f) ||
	    (f->in != NULL && f->in_raw < f->in_len))
		return false;
	if (f->body == HTTP_BODY_CLOSE)
		return relay_body_splices(UINT64_MAX);
	return f->body == HTTP_BODY_LENGTH &&
	    relay_body_splices(f->remaining);
}

/* Reads body bytes from <src> into <d>'s pipe: as http_flow_read. */
static ssize_t
http_flow_splice_in(struct pt_conn *c, struct http_flow *f,
    struct relay_dir *d, struct conn_side *src)
{
	size_t	 len = SIZE_MAX;
	ssize_t	 n;

	if (f->body == HTTP_BODY_LENGTH)
		len = (size_t)f->remaining;
	n = relay_splice_in(d, src->io.fd,
	    conn_budget_cap(c, http_flow_src_dir(c, src), len));
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
	http_flow_count_read(c, src, n);
	return n;
}

ssize_t
http_flow_fill(struct pt_conn *c, struct http_flow *f, struct relay_dir *d,
    struct conn_side *src)
{
	ssize_t	 n;

	if (http_flow_splices(c, f)) {
		n = http_flow_splice_in(c, f, d, src);
		/* pipe2 failed: no pipe is held, so nothing is piped, and
		 * the buffer keeps the order. */
		if (n != -EMFILE && n != -ENFILE)
			return n;
	}
	return http_flow_read(c, f, src);
}

/* ---- writing -------------------------------------------------------- */

/* A write to <dst> failed. A client that reset has its reset passed on
 * to the origin (conn_cut), so a request body cut short is not taken for
 * complete there. An origin that stopped taking the request may have
 * answered it already (a 413 before the body's end): its client is not
 * reset, which could cost it that answer; an abortive close. */
static void
http_flow_send_failed(struct pt_conn *c, struct conn_side *dst, ssize_t err)
{
	if ((err == -EPIPE || err == -ECONNRESET) &&
	    dst == &c->c_side[SIDE_CLIENT])
		conn_cut(c, "reset by peer");
	else
		conn_abort(c, err == -EPIPE || err == -ECONNRESET ?
		    "reset by peer" : "send failed");
}

/* <n> bytes went to <dst>: the connection is active, and what the client
 * was sent counts as bytes_out. */
static void
http_flow_count_write(struct pt_conn *c, struct conn_side *dst, ssize_t n)
{
	c->c_last_active = loop_now();
	if (dst == &c->c_side[SIDE_CLIENT]) {
		c->c_req.bytes_out += (uint64_t)n;
		counters_add(CTR_BYTES_OUT, n);
	}
}

/* Writes <d>'s piped bytes to <dst>: as http_flow_write. */
static ssize_t
http_flow_splice_out(struct pt_conn *c, struct http_flow *f,
    struct relay_dir *d, struct conn_side *dst)
{
	ssize_t	 n;

	n = relay_splice_out(d, dst->io.fd);
	f->piped = d->pipe_fill;
	if (n == -EAGAIN) {
		dst->ready &= ~(uint32_t)EPOLLOUT;
		return 0;
	}
	if (n < 0) {
		http_flow_send_failed(c, dst, n);
		return -1;
	}
	if (n == 0)
		return 0;
	f->pipe_full = false;
	http_flow_count_write(c, dst, n);
	return n;
}

ssize_t
http_flow_send(struct pt_conn *c, struct http_flow *f, struct relay_dir *d,
    struct conn_side *dst)
{
	ssize_t		 n;
	struct iovec	 iov[2];
	int		 niov = 0;
	size_t		 outn;

	if (!http_flow_has_buffered(f))
		return http_flow_splice_out(c, f, d, dst);
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
	    (niov == 2 ? iov[1].iov_len : 0) && http_flow_plain(c, dst))
		dst->ready &= ~(uint32_t)EPOLLOUT;
	if (n == -EAGAIN) {
		dst->ready &= ~(uint32_t)EPOLLOUT;
		return 0;
	}
	if (n < 0) {
		http_flow_send_failed(c, dst, n);
		return -1;
	}
	if ((size_t)n <= outn) {
		f->out_start += (uint32_t)n;
	} else {
		f->out_start += (uint32_t)outn;
		f->in_start += (uint32_t)((size_t)n - outn);
	}
	http_flow_count_write(c, dst, n);
	http_flow_compact(f);
	return n;
}

/* ---- framing -------------------------------------------------------- */

/* http_flow_frame for a chunked body. Out of line, so that framing the
 * other bodies (one call per keep-alive request) calls nothing and saves
 * no registers. */
static int __attribute__((noinline))
http_flow_frame_chunked(struct http_flow *f, size_t max_trailer)
{
	size_t		 off, dlen;
	ssize_t		 n;

	while (!f->body_done && f->in_raw < f->in_len) {
		n = http_chunked_feed(&f->chunk, f->in + f->in_raw,
		    f->in_len - f->in_raw, max_trailer, &off, &dlen);
		if (n < 0)
			return -1;
		if (f->dechunk && dlen > 0) {
			memmove(f->in + f->in_fwd, f->in + f->in_raw + off,
			    dlen);
			f->in_fwd += (uint32_t)dlen;
		}
		f->in_raw += (uint32_t)n;
		if (!f->dechunk)
			f->in_fwd = f->in_raw;
		if (f->chunk.done)
			f->body_done = true;
		if (n == 0)
			return 0;
	}
	return 0;
}

int
http_flow_frame(struct http_flow *f, bool eof, size_t max_trailer)
{
	size_t		 avail;

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
			return http_flow_frame_chunked(f, max_trailer);
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
