/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Non-blocking connect of the upstream leg. The connection's one timer
 * bounds the attempt; the socket is registered once for its whole life
 * with CONN_SIDE_EVENTS (edge-triggered, everything), so the relay or
 * http.c takes it over without an epoll_ctl, and the events that come
 * between the connect and that hand-over are noted in conn_side.ready.
 * Writable means connected; only a failure (EPOLLERR) costs a SO_ERROR
 * read to learn why. Before the connect the socket is bound to the
 * connection's egress, if it has one (outbound.c). Names are
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
#include "worker/outbound.h"
#include "worker/upstream.h"
#include "common/counters.h"

void
dial_on_event(struct loop_io *io, uint32_t events)
{
	conn_side_note_events((struct conn_side *)io, events);
}

static void
dial_finish(struct pt_conn *c, int err)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];
	dial_done_fn		 done = c->c_dial_done;
	/* No descriptor for the socket (only socket() fails so) is the
	 * worker's shortage, not the upstream's: target.c waits for one. */
	bool			 nofile = err == EMFILE || err == ENFILE;

	pt_timer_stop(&c->c_timer);
	c->c_dial_done = NULL;
	if (!nofile)
		counters_observe(HIST_CONNECT, counters_now_us() - c->c_dial_us);
	if (err != 0) {
		if (!nofile)
			counters_add(CTR_UPSTREAM_FAILED, 1);
		loop_io_close(&s->io);
		s->ready = 0;
		s->hup = s->reset = false;
	} else {
		/* Until the protocol takes the socket (an ESTABLISHED hook
		 * may park the connection first): edge-triggered, so each
		 * edge comes once, and none is lost. */
		s->io.fn = dial_on_event;
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
	 * read to learn why it failed. What came with it (the origin's
	 * first bytes, or its FIN) is noted for the next owner. */
	if ((events & (EPOLLERR | EPOLLHUP)) == 0) {
		if ((events & EPOLLOUT) == 0)
			return;
		conn_side_note_events(s, events);
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
	fd = upstream_socket(to->sa.ss_family,
	    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		dial_finish(c, errno);
		return;
	}
	s->io.fd = fd;
	s->ready = 0;
	s->hup = s->reset = false;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Where it leaves from: the egress, else the kernel's choice. */
	if ((rc = outbound_bind(c, fd, to->sa.ss_family, true)) < 0) {
		dial_finish(c, -rc);
		return;
	}
	if (connect(fd, (const struct sockaddr *)&to->sa, to->len) == 0) {
		/* What is readable already is reported by the registration
		 * itself, to the owner of the moment. */
		rc = loop_io_start(&s->io, fd, CONN_SIDE_EVENTS,
		    dial_on_writable);
		s->ready = EPOLLOUT;
		dial_finish(c, rc < 0 ? -rc : 0);
		return;
	}
	if (errno != EINPROGRESS) {
		dial_finish(c, errno);
		return;
	}
	if ((rc = loop_io_start(&s->io, fd, CONN_SIDE_EVENTS,
	    dial_on_writable)) < 0) {
		dial_finish(c, -rc);
		return;
	}
	pt_timer_start(&c->c_timer, timeout_ms, dial_on_timeout, c);
}
