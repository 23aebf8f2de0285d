/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Non-blocking connect of the upstream leg. The connection's one timer
 * bounds the attempt; the socket is watched for writability, and only a
 * failure (EPOLLERR) costs a SO_ERROR read to learn why. Names are
 * resolved before this (by the master for a tcp listener's target, by
 * the worker's resolver, dns.c, for HTTP): dial only ever sees addresses.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/dial.h"
#include "common/counters.h"
#include "worker/phase.h"

static void
dial_finish(struct pt_conn *c, int err)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];
	dial_done_fn		 done = c->c_dial_done;

	pt_timer_stop(&c->c_timer);
	c->c_dial_done = NULL;
	counters_observe(HIST_CONNECT, counters_now_us() - c->c_dial_us);
	if (err != 0) {
		counters_add(CTR_UPSTREAM_FAILED, 1);
		loop_io_close(&s->io);
	} else if (phase_has_hooks(PT_PHASE_ESTABLISHED)) {
		/* A hook may park the connection (AGAIN); a connected socket
		 * left watched for EPOLLOUT would wake the loop forever. The
		 * relay sets the real interest later. */
		loop_io_set(&s->io, 0);
	}
	done(c, err);
}

static void
dial_on_writable(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;
	int			 err = 0;
	socklen_t		 len = sizeof(err);

	/* A failed connect always raises EPOLLERR (the socket's error is
	 * set), so writable without it means connected: SO_ERROR is only
	 * read to learn why it failed. */
	if ((events & (EPOLLERR | EPOLLHUP)) == 0) {
		dial_finish(s->conn, 0);
		return;
	}
	if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0)
		err = ECONNREFUSED;
	dial_finish(s->conn, err);
}

static void
dial_on_timeout(struct pt_timer *t, void *arg)
{
	dial_finish(arg, ETIMEDOUT);
}

void
dial_start(struct pt_conn *c, const struct pt_addr *to, unsigned timeout_ms,
    dial_done_fn done)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];
	int			 fd, one = 1, rc;

	c->c_dial_done = done;
	c->c_state = CONN_CONNECTING;
	c->c_dial_us = counters_now_us();
	fd = socket(to->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0) {
		dial_finish(c, errno);
		return;
	}
	s->io.fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)&to->sa, to->len) == 0) {
		rc = loop_io_start(&s->io, fd, 0, dial_on_writable);
		dial_finish(c, rc < 0 ? -rc : 0);
		return;
	}
	if (errno != EINPROGRESS) {
		dial_finish(c, errno);
		return;
	}
	if ((rc = loop_io_start(&s->io, fd, EPOLLOUT, dial_on_writable)) < 0) {
		dial_finish(c, -rc);
		return;
	}
	pt_timer_start(&c->c_timer, timeout_ms, dial_on_timeout, c);
}
