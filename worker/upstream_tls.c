/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The upstream leg's TLS handshake (an https parent): after dial.c
 * connected the socket, a module's client session (pt_module.upstream_new,
 * the tls module) is put on it as c_up_transport, and its handshake is
 * driven on the socket's events until it completes, fails or runs out of
 * connect_timeout. From then on the upstream leg is read and written
 * through the session exactly as a TLS listener's client leg is (conn.c).
 *
 * The core never links a TLS library: every TLS call is the module's.
 * What this file does not do: choose the parent, configure the session
 * (master/upstream_tls.c asks the module for that in the master), or say
 * anything on the wire itself.
 */
#include "config.h"

#include <errno.h>
#include <sys/epoll.h>

#include "worker/upstream_tls.h"
#include "common/conf_types.h"
#include "common/counters.h"
#include "worker/dial.h"
#include "worker/worker_self.h"

/*
 * The end of the opening, once: the timer goes, and a failure leaves the
 * upstream side as dial.c leaves a failed connect (no socket, nothing
 * noted), its session freed first (nothing of it went out but what the
 * handshake wrote, an alert included). A success hands the socket back
 * to dial.c's noting callback for whoever takes it next.
 */
static void
upstream_tls_finish(struct pt_conn *c, int err)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];
	void			(*done)(struct pt_conn *, int) = c->c_dial_done;

	pt_timer_stop(&c->c_timer);
	c->c_dial_done = NULL;
	s->t_want = 0;
	if (err != 0) {
		counters_add(CTR_UPSTREAM_FAILED, 1);
		conn_up_transport_free(c);
		loop_io_close(&s->io);
		s->ready = 0;
		s->hup = s->reset = false;
	} else {
		s->io.fn = dial_on_event;
		/* The handshake used the edges: bytes behind its last
		 * record (a TLS 1.3 ticket, the parent's first answer) raise
		 * no new one, so the next owner must try a read. Its reads
		 * never clear EPOLLIN; said here as the contract. */
		s->ready |= EPOLLIN | EPOLLOUT;
	}
	done(c, err);
}

/* One handshake call; -EAGAIN waits for the edge it asked for. */
static void
upstream_tls_step(struct pt_conn *c)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];
	uint32_t		 want = 0;
	int			 rc;

	rc = c->c_up_transport->handshake(c, s->io.fd, c->c_up_tctx, &want);
	if (rc == -EAGAIN) {
		s->t_want = want != 0 ? want : EPOLLIN;
		return;
	}
	upstream_tls_finish(c, rc == 0 ? 0 : rc < 0 ? -rc : EPROTO);
}

/*
 * The socket is edge-triggered and registered for everything: each
 * event is noted (for the next owner), and the handshake is called again
 * on the edge it waits for, or on an error or hang-up, which its next
 * system call reports. Any other edge means nothing to it now: the
 * session's own EAGAIN armed the edge it waits for.
 */
static void
upstream_tls_on_io(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;

	conn_side_note_events(s, events);
	if (events & (s->t_want | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
		upstream_tls_step(s->conn);
}

static void
upstream_tls_on_timeout(struct pt_timer *t, void *arg)
{
	(void)t;
	upstream_tls_finish(arg, ETIMEDOUT);
}

void
upstream_tls_start(struct pt_conn *c, const struct pt_module *m, void *uctx,
    const char *sni, void (*done)(struct pt_conn *c, int err))
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];
	void			*tctx = NULL;
	int			 rc;

	c->c_dial_done = done;
	if ((rc = m->upstream_new(c, uctx, sni, &tctx)) != 0) {
		upstream_tls_finish(c, rc < 0 ? -rc : EPROTO);
		return;
	}
	c->c_up_transport = m->upstream_transport;
	c->c_up_tctx = tctx;
	if (c->c_up_transport->handshake == NULL) {
		upstream_tls_finish(c, 0);
		return;
	}
	s->io.fn = upstream_tls_on_io;
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.connect_timeout_ms,
	    upstream_tls_on_timeout, c);
	upstream_tls_step(c);
}
