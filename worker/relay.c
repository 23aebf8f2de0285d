/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tunnel pump: moves bytes between the two legs of a connection in both
 * directions, either through a pooled pipe with splice() (no copy through
 * user space) or through a pooled buffer used as a ring, read and written
 * over at most two segments. A pipe costs the worker a fraction of a
 * copy's CPU per byte in bulk and nothing saved on small messages, so by
 * default (relay.method "auto") each direction copies until it carries
 * bulk, splices while it does, and copies again once its messages are
 * small (relay.h). HTTP bodies borrow the same pipes (relay_splice_in/out).
 *
 * Within a direction, reading and writing overlap: while a write waits
 * for the destination, the source is read into the free part of the ring
 * or the room left in the pipe, so the data waiting is one buffer or one
 * pipe per direction, not one read's worth. Both sockets are registered
 * once, edge-triggered, for everything (as in http.c); conn_side.ready
 * remembers what epoll said until an EAGAIN uses it up, so a tunnel costs
 * no epoll_ctl once it runs. A direction holding nothing with its source
 * drained gives its buffer and pipe back: an idle tunnel holds no payload
 * memory. EOF is passed on with shutdown() once everything before it has
 * been written (half-close); the connection ends when both directions
 * have passed EOF, or at the first error.
 *
 * The invariants are written at struct relay_dir (worker/conn.h) and in
 * doc/internals.md section 11.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "worker/relay.h"
#include "common/counters.h"
#include "common/log.h"
#include "common/conf_types.h"
#include "worker/buf.h"
#include "worker/h2.h"
#include "worker/worker_self.h"

/* Rounds (a write and a read per direction) per event, so one fast
 * tunnel cannot starve the others sharing the worker; a tunnel that
 * uses them all posts itself to go on after the others. */
#define RELAY_ROUNDS		16
/* Idle pipes kept open for reuse; beyond that they are closed, so pooled
 * pipes cannot eat the descriptors clients need. */
#define RELAY_PIPES_KEPT	64
/* Registered once for the tunnel's life: the same set as http.c, socks.c
 * and dial.c use, so a connection handed over costs no epoll_ctl. */
#define RELAY_EVENTS		CONN_SIDE_EVENTS

static enum conf_relay	 relay_method;
/*
 * Pipes count against the user's pipe-user-pages-soft quota by capacity,
 * empty or not (16,384 pages by default, shared by every process of the
 * user; beyond it new pipes get 2 slots and cannot grow). So a pipe is
 * made at the kernel's default size and grown to RELAY_PIPE_SIZE only
 * when it fills up (a bulk transfer), and at most RELAY_BIG_KEPT grown
 * pipes wait in the idle stack: idle pipes cost a worker about as much
 * quota as 64 default ones.
 */
#define RELAY_BIG_KEPT		16

struct relay_pipe {
	int	 r, w;
	bool	 big;
};

static struct relay_pipe relay_pipes[RELAY_PIPES_KEPT];
static int		 relay_npipes, relay_nbig;

static void	relay_on_event(struct loop_io *io, uint32_t events);
static void	relay_on_timer(struct pt_timer *t, void *arg);

/* How often a transport's close that said -EAGAIN is tried again when
 * no EPOLLOUT edge comes first (relay_on_timer). */
#define RELAY_SHUT_RETRY_MS	50

void
relay_init(enum conf_relay method)
{
	relay_method = method;
}

void
relay_fini(void)
{
	while (relay_npipes > 0) {
		relay_npipes--;
		close(relay_pipes[relay_npipes].r);
		close(relay_pipes[relay_npipes].w);
	}
	relay_nbig = 0;
}

static int
relay_pipe_get(struct relay_dir *r)
{
	int	 p[2];

	if (r->pipe_r >= 0)
		return 0;
	if (relay_npipes > 0) {
		relay_npipes--;
		r->pipe_r = relay_pipes[relay_npipes].r;
		r->pipe_w = relay_pipes[relay_npipes].w;
		r->pipe_big = relay_pipes[relay_npipes].big;
		if (r->pipe_big)
			relay_nbig--;
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	r->pipe_r = p[0];
	r->pipe_w = p[1];
	r->pipe_big = false;
	return 0;
}

/* Reads of this size mean a bulk transfer, worth a larger pipe. */
#define RELAY_GROW_AT		32768

/* The pipe filled up, or took a large read: a bulk transfer, worth a
 * larger pipe (asked once). */
static void
relay_pipe_grow(struct relay_dir *r)
{
	if (r->pipe_big)
		return;
	/* Refused (EPERM past the user's quota): the default size still
	 * works, with more system calls per byte; not asked again. */
	(void)fcntl(r->pipe_w, F_SETPIPE_SZ, RELAY_PIPE_SIZE);
	r->pipe_big = true;
}

/* Gives back the direction's pipe and buffer; called only when empty,
 * or at close (a pipe still holding bytes is closed, never reused, or
 * those bytes would reach another connection). */
static void
relay_dir_idle(struct relay_dir *r)
{
	if (r->pipe_r >= 0) {
		if (r->pipe_fill == 0 && relay_npipes < RELAY_PIPES_KEPT &&
		    (!r->pipe_big || relay_nbig < RELAY_BIG_KEPT)) {
			relay_pipes[relay_npipes].r = r->pipe_r;
			relay_pipes[relay_npipes].w = r->pipe_w;
			relay_pipes[relay_npipes].big = r->pipe_big;
			relay_nbig += r->pipe_big;
			relay_npipes++;
		} else {
			close(r->pipe_r);
			close(r->pipe_w);
		}
		r->pipe_r = r->pipe_w = -1;
		r->pipe_fill = 0;
		r->pipe_full = false;
	}
	if (r->buf != NULL) {
		buf_put(r->buf);
		r->buf = NULL;
		r->head = r->tail = 0;
	}
}

void
relay_release(struct pt_conn *c)
{
	relay_dir_idle(&c->c_dir[0]);
	relay_dir_idle(&c->c_dir[1]);
}

bool
relay_body_splices(uint64_t len)
{
	switch (relay_method) {
	case CONF_RELAY_SPLICE:
		return len >= RELAY_BODY_MIN;
	case CONF_RELAY_AUTO:
		return len >= RELAY_AUTO_BODY_MIN;
	default:
		return false;
	}
}

/*
 * relay.method "auto": a read of direction <r> that says it is in the
 * other mode (<against>: bulk while copying, interactive while splicing)
 * adds to the streak, one that agrees ends it; a long enough streak
 * turns the direction over (relay.h).
 */
static void
relay_auto_note(struct relay_dir *r, bool against)
{
	if (relay_method != CONF_RELAY_AUTO)
		return;
	if (!against) {
		r->streak = 0;
		return;
	}
	if (++r->streak >= (r->bulk ? RELAY_SMALL_READS : RELAY_BULK_READS)) {
		r->bulk = !r->bulk;
		r->streak = 0;
	}
}

/*
 * The splice read both users of a pipe make (relay_read for tunnels,
 * relay_splice_in for bodies): at most <len> bytes from socket <fd> into
 * the pipe <d> holds, counted. The pipe grows when the read was large or
 * when it filled (EAGAIN with bytes in it): a bulk transfer. Bytes, 0 at
 * EOF, or -errno; what an error means is the caller's to decide.
 */
static ssize_t
relay_pipe_in(struct relay_dir *d, int fd, size_t len)
{
	ssize_t	 n;

	if (len > RELAY_PIPE_SIZE)
		len = RELAY_PIPE_SIZE;
	n = splice(fd, NULL, d->pipe_w, NULL, len,
	    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0) {
		n = -errno;
		if (n == -EAGAIN && d->pipe_fill > 0)
			relay_pipe_grow(d);
		return n;
	}
	d->pipe_fill += (size_t)n;
	counters_add(CTR_SPLICED, n);
	if (n >= RELAY_GROW_AT)
		relay_pipe_grow(d);
	return n;
}

ssize_t
relay_splice_in(struct relay_dir *d, int fd, size_t len)
{
	ssize_t	 n;
	int	 rc;

	if ((rc = relay_pipe_get(d)) < 0)
		return rc;
	n = relay_pipe_in(d, fd, len);
	/* A body's direction holds nothing else: an empty pipe goes back. */
	if (d->pipe_fill == 0)
		relay_dir_idle(d);
	return n;
}

ssize_t
relay_splice_out(struct relay_dir *d, int fd)
{
	ssize_t	 n;

	if (d->pipe_fill == 0)
		return 0;
	n = splice(d->pipe_r, NULL, fd, NULL, d->pipe_fill,
	    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0)
		return -errno;
	d->pipe_fill -= (size_t)n;
	if (d->pipe_fill == 0)
		relay_dir_idle(d);
	return n;
}

static size_t
relay_pending(const struct relay_dir *r)
{
	return r->pipe_fill + (r->tail - r->head);
}

/* A side without a transport (either leg may have one: a TLS listener,
 * an https parent): a short read or write tells that its queue is
 * drained or full, which a transport's buffering would hide. */
static bool
relay_plain(const struct pt_conn *c, const struct conn_side *s)
{
	return conn_transport(c, s) == NULL;
}

/* The ring's bytes as at most two segments; returns how many. */
static int
relay_ring_data(const struct relay_dir *r, struct iovec *iov)
{
	uint32_t	 size = (uint32_t)buf_size(r->buf);

	iov[0].iov_base = r->buf + r->head;
	if (r->tail <= size) {
		iov[0].iov_len = r->tail - r->head;
		return 1;
	}
	iov[0].iov_len = size - r->head;
	iov[1].iov_base = r->buf;
	iov[1].iov_len = r->tail - size;
	return 2;
}

/* The ring's free space as at most two segments (0: full). */
static int
relay_ring_room(const struct relay_dir *r, struct iovec *iov)
{
	uint32_t	 size = (uint32_t)buf_size(r->buf);
	int		 n = 0;

	if (r->tail < size) {
		iov[n].iov_base = r->buf + r->tail;
		iov[n++].iov_len = size - r->tail;
		if (r->head > 0) {
			iov[n].iov_base = r->buf;
			iov[n++].iov_len = r->head;
		}
		return n;
	}
	if (r->tail - size < r->head) {
		iov[n].iov_base = r->buf + (r->tail - size);
		iov[n++].iov_len = r->head - (r->tail - size);
	}
	return n;
}

/*
 * Writes pending bytes of a direction to side <dst>, the ring first (its
 * bytes are older than the pipe's). Bytes written, or -errno. Clears
 * dst's EPOLLOUT when the socket buffer is full.
 */
static ssize_t
relay_write(struct pt_conn *c, struct relay_dir *r, struct conn_side *dst)
{
	struct iovec	 iov[2];
	size_t		 want;
	ssize_t		 n;
	uint32_t	 size;
	int		 niov;

	if (r->tail > r->head) {
		niov = relay_ring_data(r, iov);
		want = iov[0].iov_len + (niov == 2 ? iov[1].iov_len : 0);
		n = conn_sendv(c, dst, iov, niov);
		if (n < 0) {
			if (n == -EAGAIN)
				dst->ready &= ~(uint32_t)EPOLLOUT;
			return n;
		}
		/* A short write to a plain socket filled its buffer. */
		if ((size_t)n < want && relay_plain(c, dst))
			dst->ready &= ~(uint32_t)EPOLLOUT;
		size = (uint32_t)buf_size(r->buf);
		r->head += (uint32_t)n;
		if (r->head == r->tail)
			r->head = r->tail = 0;
		else if (r->head >= size) {
			r->head -= size;
			r->tail -= size;
		}
		return n;
	}
	/* Only EAGAIN proves the socket buffer full (and so an EPOLLOUT
	 * edge to come): a short splice may stop at a pipe slot. */
	n = splice(r->pipe_r, NULL, dst->io.fd, NULL, r->pipe_fill,
	    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0) {
		n = -errno;
		if (n == -EAGAIN)
			dst->ready &= ~(uint32_t)EPOLLOUT;
		return n;
	}
	r->pipe_fill -= (size_t)n;
	return n;
}

/* Shortens <iov> to <max> bytes (max > 0); returns its new count. */
static int
relay_iov_cap(struct iovec *iov, int niov, size_t max)
{
	if (iov[0].iov_len >= max) {
		iov[0].iov_len = max;
		return 1;
	}
	if (niov == 2 && iov[1].iov_len > max - iov[0].iov_len)
		iov[1].iov_len = max - iov[0].iov_len;
	return niov;
}

/*
 * A transport may hand out what it took from the socket in pieces, and
 * the rest raises no epoll event: reads it into the ring while it holds
 * some, there is room and the budget allows (<max>), so a tunnel never
 * waits for an event that will not come. Bytes added; a failure is left
 * for the next read.
 */
static ssize_t
relay_read_pending(struct pt_conn *c, struct relay_dir *r,
    struct conn_side *src, size_t max)
{
	struct iovec	 iov[2];
	ssize_t		 n, total = 0;

	while (max > 0 && conn_pending(c, src) > 0 &&
	    relay_ring_room(r, iov) > 0) {
		n = conn_recv(c, src, iov[0].iov_base,
		    iov[0].iov_len < max ? iov[0].iov_len : max);
		if (n <= 0)
			break;
		r->tail += (uint32_t)n;
		total += n;
		max -= (size_t)n;
	}
	return total;
}

/*
 * Whether direction <r> may splice from <src> to <dst> now: the method is
 * splice, or auto with the direction bulk, and both sockets carry the
 * bytes as they are, plain sockets or a transport that says so (kTLS:
 * pt_transport.plain) with nothing held of its own (held bytes are older,
 * and come through read() first).
 */
static bool
relay_can_splice(struct pt_conn *c, const struct relay_dir *r,
    struct conn_side *src, struct conn_side *dst)
{
	if (relay_method == CONF_RELAY_COPY ||
	    (relay_method == CONF_RELAY_AUTO && !r->bulk))
		return false;
	return (conn_plain(c, src) & PT_PLAIN_RX) &&
	    (conn_plain(c, dst) & PT_PLAIN_TX) && conn_pending(c, src) == 0;
}

/*
 * A tunnel whose client is an HTTP/2 stream: its bytes move between the
 * stream's own buffer and the other socket, with no stop in the ring
 * (worker/h2.h), when the stream says they may. The client's DATA is
 * written to the target as it is; the target's bytes are read into the
 * stream's buffer. Bytes moved (as relay_read counts them), or -errno;
 * -ENOTSUP: not now, the ring's way.
 */
static ssize_t
relay_h2(struct pt_conn *c, struct conn_side *src, struct conn_side *dst,
    size_t max)
{
	const char	*p;
	char		*q;
	size_t		 len;
	ssize_t		 n;

	if (src == &c->c_side[SIDE_CLIENT]) {
		if ((len = h2_stream_rx_peek(c, &p)) == 0)
			return -ENOTSUP;
		if (!(dst->ready & EPOLLOUT))
			return -EAGAIN;
		n = conn_send(c, dst, p, len < max ? len : max);
		/* A short write to a plain socket filled its buffer. */
		if (n == -EAGAIN || (n > 0 && (size_t)n < len &&
		    (size_t)n < max && relay_plain(c, dst)))
			dst->ready &= ~(uint32_t)EPOLLOUT;
		if (n > 0)
			h2_stream_rx_take(c, (size_t)n);
		return n;
	}
	if ((n = h2_stream_tx_room(c, &q)) == -ENOTSUP || n == 0)
		return n == 0 ? -EAGAIN : n;
	len = (size_t)n < max ? (size_t)n : max;
	n = conn_recv(c, src, q, len);
	/* As relay_read: a short read from a plain socket drained it. */
	if (n == -EAGAIN || (n > 0 && (size_t)n < len &&
	    relay_plain(c, src) && !src->hup))
		src->ready &= ~(uint32_t)EPOLLIN;
	if (n > 0)
		h2_stream_tx_add(c, (size_t)n);
	return n;
}

/*
 * Reads at most <max> bytes (the budget, > 0) from side <src> into the
 * direction's pipe or ring: bytes read, 0 at EOF, or -errno (-EAGAIN:
 * nothing to read, or no room). Clears src's EPOLLIN only when the socket
 * is known drained.
 */
static ssize_t
relay_read(struct pt_conn *c, struct relay_dir *r, struct conn_side *src,
    size_t max)
{
	struct conn_side *dst = &c->c_side[src == &c->c_side[SIDE_CLIENT] ?
			    SIDE_UPSTREAM : SIDE_CLIENT];
	struct iovec	 iov[2];
	size_t		 want, room;
	ssize_t		 n;
	int		 niov;
	bool		 can = relay_can_splice(c, r, src, dst);
	bool		 empty;

	/* The ring's bytes go out before the pipe's (relay_write), so the
	 * ring takes no bytes while the pipe holds older ones: a side that
	 * stopped being spliceable (its transport holds bytes now) waits
	 * until the pipe is written out. */
	if (!can && r->pipe_fill > 0)
		return -EAGAIN;
	/* Out of descriptors for a pipe, this read goes through the ring
	 * instead (a pipe held has bytes or is taken first, so order holds):
	 * the tunnel must not die for an optimisation. */
	if (can && relay_pipe_get(r) == 0) {
		/* Unlike relay_splice_in, an empty pipe is kept whatever the
		 * read gave: the ring may still hold older bytes, and
		 * relay_step gives both back once the direction is drained. */
		empty = r->pipe_fill == 0;
		n = relay_pipe_in(r, src->io.fd, max);
		if (n >= 0) {
			/* Only an empty pipe offered all the room there was,
			 * and a read the budget cut short says nothing. */
			if (empty && n > 0 &&
			    ((size_t)n < max || n >= RELAY_SMALL))
				relay_auto_note(r, n < RELAY_SMALL);
			return n;
		}
		/* kTLS: a record splice cannot return (an alert, a key
		 * update) is the transport's to read, once the pipe's older
		 * bytes are out (pt_transport.plain). */
		if ((n == -EINVAL || n == -EIO) && !relay_plain(c, src)) {
			if (r->pipe_fill > 0)
				return -EAGAIN;
			goto ring;
		}
		/* EAGAIN says "socket empty" or "pipe full", and only an
		 * empty pipe tells them apart. With bytes in the pipe (grown
		 * by relay_pipe_in), the source stays ready and is read
		 * again after a write. */
		if (n == -EAGAIN) {
			if (r->pipe_fill > 0)
				r->pipe_full = true;
			else
				src->ready &= ~(uint32_t)EPOLLIN;
		}
		return n;
	}
ring:
	/* The ring's older bytes go first. */
	if (r->tail == r->head && (n = relay_h2(c, src, dst, max)) != -ENOTSUP)
		return n;
	if (r->buf == NULL) {
		if ((r->buf = buf_get(BUF_SMALL)) == NULL)
			return -ENOBUFS;
		r->head = r->tail = 0;
	}
	niov = relay_ring_room(r, iov);
	if (niov == 0)
		return -EAGAIN;
	want = room = iov[0].iov_len + (niov == 2 ? iov[1].iov_len : 0);
	/* Capped by the budget, a full read says nothing of the socket. */
	if (want > max) {
		niov = relay_iov_cap(iov, niov, max);
		want = max;
	}
	n = conn_recvv(c, src, iov, relay_plain(c, src) ? niov : 1);
	if (!relay_plain(c, src))
		want = iov[0].iov_len;
	/* A short read from a plain socket emptied its queue: the next byte
	 * raises a new edge. Not once a FIN was reported: the EOF may sit
	 * behind those bytes, and it raises no new edge. */
	if (n == -EAGAIN || (n > 0 && (size_t)n < want &&
	    relay_plain(c, src) && !src->hup))
		src->ready &= ~(uint32_t)EPOLLIN;
	if (n > 0)
		r->tail += (uint32_t)n;
	if (n > 0 && !relay_plain(c, src))
		n += relay_read_pending(c, r, src, max - (size_t)n);
	/* Unless the budget capped it: a read of half a buffer or more
	 * says the source has bulk waiting, a short one of less than
	 * RELAY_SMALL from a plain socket that it has not. */
	if (n > 0 && room <= max) {
		if ((size_t)n >= buf_size(r->buf) / 2)
			relay_auto_note(r, true);
		else if ((size_t)n < RELAY_SMALL && (size_t)n < want &&
		    relay_plain(c, src))
			relay_auto_note(r, false);
	}
	return n;
}

/* May the direction read more now? (RELAY_PIPE_HIGH: relay.h) */

static bool
relay_has_room(const struct relay_dir *r)
{
	if (r->pipe_r >= 0)
		return !r->pipe_full && r->pipe_fill < RELAY_PIPE_HIGH;
	return r->buf == NULL || r->tail - r->head < buf_size(r->buf);
}

/*
 * One round of direction <d> (from side d to side 1-d): a write of what
 * is pending, the EOF passed on once nothing is, a read while there is
 * room and budget (c_budget[d]; without budget the source is not read,
 * its EPOLLIN stays noted, and pt_conn_budget_add resumes the pump).
 * Returns 1 when something moved, 0 when it is stuck until an event, or
 * -errno on a failure that ends the connection.
 */
static int
relay_step(struct pt_conn *c, enum conn_side_id d)
{
	struct relay_dir	*r = &c->c_dir[d];
	struct conn_side	*src = &c->c_side[d], *dst = &c->c_side[1 - d];
	uint64_t		 budget = c->c_budget[d].left;
	ssize_t			 n;
	int			 moved = 0;

	if (r->done)
		return 0;
	if (relay_pending(r) > 0 && (dst->ready & EPOLLOUT)) {
		n = relay_write(c, r, dst);
		if (n < 0 && n != -EAGAIN)
			return (int)n;
		if (n > 0) {
			moved = 1;
			r->pipe_full = false;
			c->c_last_active = loop_now();
		}
	}
	if (relay_pending(r) == 0 && src->rd_eof) {
		/* A transport that must write its close first (TLS
		 * close_notify) is called again when the socket is writable
		 * (relay_on_timer bounds the wait). */
		relay_dir_idle(r);
		/* The other way is done too, so the connection closes now,
		 * and a close sends the FIN a shutdown would: <dst>'s own
		 * EOF was read, so nothing unread turns it into a reset.
		 * A transport's close (TLS close_notify) is still written. */
		if (c->c_dir[1 - d].done && relay_plain(c, dst)) {
			r->done = true;
			return 1;
		}
		if (r->shut_wait && !(dst->ready & EPOLLOUT))
			return 0;
		n = conn_shutdown_wr(c, dst);
		if (n == -EAGAIN) {
			dst->ready &= ~(uint32_t)EPOLLOUT;
			if (!r->shut_wait) {
				r->shut_wait = true;
				r->shut_since = loop_now();
				pt_timer_start(&c->c_timer, RELAY_SHUT_RETRY_MS,
				    relay_on_timer, c);
			}
			return 0;
		}
		r->done = true;
		r->shut_wait = false;
		return n < 0 ? (int)n : 1;
	}
	if (!src->rd_eof && conn_readable(c, src) && relay_has_room(r) &&
	    budget != 0) {
		n = relay_read(c, r, src, budget < SIZE_MAX ? (size_t)budget :
		    SIZE_MAX);
		if (n < 0 && n != -EAGAIN)
			return (int)n;
		if (n == 0) {
			src->rd_eof = true;
			moved = 1;
		} else if (n > 0) {
			moved = 1;
			c->c_last_active = loop_now();
			conn_budget_take(c, d, (uint64_t)n);
			if (d == SIDE_CLIENT) {
				c->c_req.bytes_in += (uint64_t)n;
				counters_add(CTR_BYTES_IN, n);
			} else {
				c->c_req.bytes_out += (uint64_t)n;
				counters_add(CTR_BYTES_OUT, n);
			}
		}
	}
	/* Drained, or waiting for budget: hold no payload memory. */
	if (relay_pending(r) == 0 && (!(src->ready & EPOLLIN) ||
	    c->c_budget[d].left == 0))
		relay_dir_idle(r);
	return moved;
}

static void
relay_on_posted(struct loop_task *t)
{
	struct pt_conn	*c = (struct pt_conn *)((char *)t -
			    offsetof(struct pt_conn, c_post));

	if (c->c_state == CONN_RELAY)
		relay_on_event(&c->c_side[SIDE_CLIENT].io, 0);
}

/* Moves both directions as far as they go now, for at most RELAY_ROUNDS
 * rounds; closes <c> when both are done or on an error. */
static void
relay_pump(struct pt_conn *c)
{
	int	 a, b, i;

	for (i = 0; i < RELAY_ROUNDS; i++) {
		a = relay_step(c, SIDE_CLIENT);
		b = a < 0 ? 0 : relay_step(c, SIDE_UPSTREAM);
		if (a < 0 || b < 0) {
			a = a < 0 ? a : b;
			if (a == -ECONNRESET || a == -EPIPE)
				conn_cut(c, "reset by peer");
			else
				conn_abort(c, "relay error");
			return;
		}
		if (c->c_dir[0].done && c->c_dir[1].done) {
			conn_close(c, NULL);
			return;
		}
		if (a == 0 && b == 0)
			return;
	}
	/* Out of rounds with bytes still moving: edge-triggered epoll will
	 * not report readiness we have not used up, so come back after the
	 * other connections had their turn. The task may still be posted by
	 * http.c, whose handler ignores a tunnel: take it over. */
	if (c->c_post.posted)
		c->c_post.fn = relay_on_posted;
	else
		loop_post(&c->c_post, relay_on_posted);
}

/* A spent budget got more (conn.c's c_budget_task). */
static void
relay_on_budget(struct pt_conn *c)
{
	if (c->c_state == CONN_RELAY)
		relay_pump(c);
}

static void
relay_on_event(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;

	conn_side_note_events(s, events);
	/* A client that reset is gone, whatever either direction holds:
	 * one blocked on a destination that does not read would never
	 * read the reset (the other leg could be held to idle_timeout). */
	if (conn_client_failed(s->conn, s, events)) {
		conn_cut(s->conn, "reset by peer");
		return;
	}
	relay_pump(s->conn);
}

/*
 * A direction whose EOF waits for its destination's transport to close
 * (shutdown said -EAGAIN), or -1. The leg is writable again either with
 * an EPOLLOUT edge (a full socket drained) or, when the transport waited
 * for something of its own, without one: the timer tries again every
 * RELAY_SHUT_RETRY_MS, for header_timeout at most, like the opening
 * handshake (conn_start).
 */
static int
relay_shut_waiting(const struct pt_conn *c)
{
	if (c->c_dir[SIDE_UPSTREAM].shut_wait)
		return SIDE_UPSTREAM;
	if (c->c_dir[SIDE_CLIENT].shut_wait)
		return SIDE_CLIENT;
	return -1;
}

static void
relay_on_timer(struct pt_timer *t, void *arg)
{
	struct pt_conn	*c = arg;
	uint64_t	 idle = worker_self()->conf->limits.idle_timeout_ms;
	uint64_t	 quiet = loop_now() - c->c_last_active;
	int		 d;

	(void)t;
	if ((d = relay_shut_waiting(c)) >= 0) {
		if (loop_now() - c->c_dir[d].shut_since >=
		    worker_self()->conf->limits.header_timeout_ms) {
			conn_close(c, "transport shutdown timed out");
			return;
		}
		/* Armed before the pump, which may close the connection. */
		pt_timer_start(&c->c_timer, RELAY_SHUT_RETRY_MS,
		    relay_on_timer, c);
		c->c_side[1 - d].ready |= EPOLLOUT;
		relay_pump(c);
		return;
	}
	/* Activity only stamps c_last_active; the deadline moves here, once
	 * per timeout period at most, instead of on every read. */
	if (quiet < idle) {
		pt_timer_start(&c->c_timer, idle - quiet, relay_on_timer, c);
		return;
	}
	conn_abort(c, "idle timeout");
}

/*
 * Takes side <s> over. A side its previous owner registered with
 * RELAY_EVENTS had every edge noted in s->ready: those bits are kept, so
 * a socket known drained is not read just to hear EAGAIN (after a SOCKS
 * reply the client says nothing until the tunnel carries data). Any
 * other side raised its edges before this registration, unseen: it is
 * tried once both ways. Writable is assumed either way; a write is only
 * tried with bytes to write, and a full socket answers EAGAIN.
 */
static int
relay_watch(struct conn_side *s)
{
	s->io.fn = relay_on_event;
	if (s->io.added && s->io.events == RELAY_EVENTS) {
		s->ready |= EPOLLOUT;
		return 0;
	}
	s->ready = EPOLLIN | EPOLLOUT;
	if (!s->io.added)
		return loop_io_start(&s->io, s->io.fd, RELAY_EVENTS,
		    relay_on_event);
	return loop_io_set(&s->io, RELAY_EVENTS);
}

void
relay_start(struct pt_conn *c)
{
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];

	c->c_state = CONN_RELAY;
	c->c_budget_resume = relay_on_budget;
	c->c_last_active = loop_now();
	pt_timer_start(&c->c_timer, worker_self()->conf->limits.idle_timeout_ms,
	    relay_on_timer, c);
	if (relay_watch(cl) < 0 || relay_watch(up) < 0) {
		conn_close(c, "epoll_ctl");
		return;
	}
	relay_pump(c);
}
