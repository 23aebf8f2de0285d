/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tunnel pump: moves bytes between the two legs of a connection in both
 * directions, either through a pooled pipe with splice() (no copy through
 * user space) or through a pooled buffer with read()/write(). Which is
 * faster depends on transfer sizes (bench/), so it is a setting.
 *
 * Each direction reads only when it has nothing left to write, so at most
 * one buffer (or one pipe) per direction is in flight, and it goes back to
 * the pool as soon as the source would block with nothing pending: an
 * idle tunnel holds no payload memory. EOF is passed on with shutdown()
 * once everything before it has been written (half-close); the connection
 * ends when both directions have passed EOF, or at the first error.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/relay.h"
#include "common/counters.h"
#include "common/log.h"
#include "master/conf.h"
#include "worker/buf.h"
#include "worker/worker.h"

/* Reads and writes per direction per event, so one fast tunnel cannot
 * starve the others sharing the worker. */
#define RELAY_ROUNDS		16
#define RELAY_SPLICE_CHUNK	65536
/* Idle pipes kept open for reuse; beyond that they are closed, so pooled
 * pipes cannot eat the descriptors clients need. */
#define RELAY_PIPES_KEPT	64

static bool		 relay_use_splice;
static int		 relay_pipes[RELAY_PIPES_KEPT][2];
static int		 relay_npipes;

static void	relay_on_event(struct loop_io *io, uint32_t events);

void
relay_init(bool splice)
{
	relay_use_splice = splice;
}

void
relay_fini(void)
{
	while (relay_npipes > 0) {
		relay_npipes--;
		close(relay_pipes[relay_npipes][0]);
		close(relay_pipes[relay_npipes][1]);
	}
}

static int
relay_pipe_get(struct relay_dir *r)
{
	int	 p[2];

	if (r->pipe_r >= 0)
		return 0;
	if (relay_npipes > 0) {
		relay_npipes--;
		r->pipe_r = relay_pipes[relay_npipes][0];
		r->pipe_w = relay_pipes[relay_npipes][1];
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	r->pipe_r = p[0];
	r->pipe_w = p[1];
	return 0;
}

/* Returns the direction's pipe or buffer; only ever called when empty. */
static void
relay_dir_idle(struct relay_dir *r)
{
	if (r->pipe_r >= 0) {
		if (r->pipe_fill == 0 && relay_npipes < RELAY_PIPES_KEPT) {
			relay_pipes[relay_npipes][0] = r->pipe_r;
			relay_pipes[relay_npipes][1] = r->pipe_w;
			relay_npipes++;
		} else {
			close(r->pipe_r);
			close(r->pipe_w);
		}
		r->pipe_r = r->pipe_w = -1;
		r->pipe_fill = 0;
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
	/* A pipe still holding bytes is closed, never pooled. */
	relay_dir_idle(&c->c_dir[0]);
	relay_dir_idle(&c->c_dir[1]);
}

static size_t
relay_pending(const struct relay_dir *r)
{
	return r->pipe_fill + (r->tail - r->head);
}

/* Moves pending bytes of a direction to side <dst>: bytes written, or
 * -errno (-EAGAIN: destination full). */
static ssize_t
relay_write(struct pt_conn *c, struct relay_dir *r, struct conn_side *dst)
{
	ssize_t	 n;

	if (r->pipe_fill > 0) {
		n = splice(r->pipe_r, NULL, dst->io.fd, NULL, r->pipe_fill,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0)
			return -errno;
		r->pipe_fill -= (size_t)n;
		return n;
	}
	n = conn_send(c, dst, r->buf + r->head, r->tail - r->head);
	if (n < 0)
		return n;
	r->head += (uint32_t)n;
	if (r->head == r->tail)
		r->head = r->tail = 0;
	return n;
}

/* Reads from side <src> into the direction's pipe or buffer: bytes read,
 * 0 at EOF, or -errno (-EAGAIN: nothing to read). */
static ssize_t
relay_read(struct pt_conn *c, struct relay_dir *r, struct conn_side *src)
{
	ssize_t	 n;

	/* Splice needs plain sockets at both ends. Out of descriptors for a
	 * pipe, this read goes through a buffer instead: the tunnel must
	 * not die for an optimisation. */
	if (relay_use_splice && c->c_transport == NULL &&
	    relay_pipe_get(r) == 0) {
		n = splice(src->io.fd, NULL, r->pipe_w, NULL,
		    RELAY_SPLICE_CHUNK, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0)
			return -errno;
		r->pipe_fill += (size_t)n;
		return n;
	}
	if (r->buf == NULL) {
		if ((r->buf = buf_get(BUF_SMALL)) == NULL)
			return -ENOBUFS;
		r->head = r->tail = 0;
	}
	n = conn_recv(c, src, r->buf, buf_size(r->buf));
	if (n < 0)
		return n;
	r->tail = (uint32_t)n;
	return n;
}

/*
 * Pumps direction <d> (from side d to side 1-d) as far as it goes without
 * blocking. Returns 0, or -errno on a failure that ends the connection.
 */
static int
relay_pump(struct pt_conn *c, enum conn_side_id d)
{
	struct relay_dir	*r = &c->c_dir[d];
	struct conn_side	*src = &c->c_side[d], *dst = &c->c_side[1 - d];
	ssize_t			 n;
	int			 i;

	for (i = 0; i < RELAY_ROUNDS && !r->done; i++) {
		if (relay_pending(r) > 0) {
			n = relay_write(c, r, dst);
			if (n == -EAGAIN)
				return 0;
			if (n < 0)
				return (int)n;
			c->c_last_active = loop_now();
			continue;
		}
		n = relay_read(c, r, src);
		if (n == -EAGAIN) {
			relay_dir_idle(r);
			return 0;
		}
		if (n < 0)
			return (int)n;
		if (n == 0) {
			/* Nothing is pending (reads happen only then), so the
			 * EOF goes on now: left for a later round, it would
			 * wait for an event that never comes. */
			src->rd_eof = true;
			relay_dir_idle(r);
			r->done = true;
			return conn_shutdown_wr(c, dst);
		}
		c->c_last_active = loop_now();
		if (d == SIDE_CLIENT) {
			c->c_req.bytes_in += (uint64_t)n;
			counters_add(CTR_BYTES_IN, n);
		} else {
			c->c_req.bytes_out += (uint64_t)n;
			counters_add(CTR_BYTES_OUT, n);
		}
	}
	return 0;
}

/*
 * Watches side <s> for what the relay needs from it now. A side that hung
 * up is reported by epoll whatever the interest set, so when nothing is
 * wanted from it any more it is taken out of epoll altogether.
 */
static void
relay_watch(struct pt_conn *c, enum conn_side_id id, bool hup)
{
	struct conn_side	*s = &c->c_side[id];
	uint32_t		 want = 0;

	if (!c->c_dir[id].done && !s->rd_eof &&
	    relay_pending(&c->c_dir[id]) == 0)
		want |= EPOLLIN;
	if (relay_pending(&c->c_dir[1 - id]) > 0)
		want |= EPOLLOUT;
	/* A transport may need the other readiness to make progress (TLS
	 * reads that must write first, and the reverse). */
	want |= s->t_want;
	if (want == 0 && hup) {
		loop_io_stop(&s->io);
		return;
	}
	if (!s->io.added) {
		if (want != 0 && loop_io_start(&s->io, s->io.fd, want,
		    relay_on_event) < 0)
			conn_close(c, "epoll_ctl");
		return;
	}
	loop_io_set(&s->io, want);
}

static void
relay_on_event(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;
	struct pt_conn		*c = s->conn;
	enum conn_side_id	 id = s == &c->c_side[SIDE_CLIENT] ?
				    SIDE_CLIENT : SIDE_UPSTREAM;
	bool			 hup = (events & (EPOLLHUP | EPOLLERR)) != 0;
	int			 rc = 0;

	/* Error and hang-up are handled by trying both directions: the
	 * system calls then report what exactly happened. */
	/* A transport's readiness does not map to one direction: try both. */
	if (s->t_want != 0)
		events |= EPOLLIN | EPOLLOUT;
	if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		rc = relay_pump(c, 1 - id);
	if (rc == 0 && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		rc = relay_pump(c, id);
	if (rc < 0) {
		conn_close(c, rc == -ECONNRESET || rc == -EPIPE ?
		    "reset by peer" : "relay error");
		return;
	}
	if (c->c_dir[0].done && c->c_dir[1].done) {
		conn_close(c, NULL);
		return;
	}
	relay_watch(c, id, hup);
	if (c->c_state != CONN_CLOSED)
		relay_watch(c, 1 - id, false);
}

static void
relay_on_timer(struct pt_timer *t, void *arg)
{
	struct pt_conn	*c = arg;
	uint64_t	 idle = worker_self()->conf->limits.idle_timeout_ms;
	uint64_t	 quiet = loop_now() - c->c_last_active;

	/* Activity only stamps c_last_active; the deadline moves here, once
	 * per timeout period at most, instead of on every read. */
	if (quiet < idle) {
		pt_timer_start(&c->c_timer, idle - quiet, relay_on_timer, c);
		return;
	}
	conn_close(c, "idle timeout");
}

void
relay_start(struct pt_conn *c)
{
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];

	c->c_state = CONN_RELAY;
	c->c_last_active = loop_now();
	/* relay_watch adds a leg not yet in epoll with its interest set in
	 * one call. */
	cl->io.fn = relay_on_event;
	up->io.fn = relay_on_event;
	pt_timer_start(&c->c_timer, worker_self()->conf->limits.idle_timeout_ms,
	    relay_on_timer, c);
	relay_watch(c, SIDE_CLIENT, false);
	if (c->c_state != CONN_CLOSED)
		relay_watch(c, SIDE_UPSTREAM, false);
}
