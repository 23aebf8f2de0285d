/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The upstream leg wrapped by a module's client TLS session (an https
 * parent): the handshake on the connected socket, then every conn_* I/O
 * on SIDE_UPSTREAM goes through the module's upstream_transport.
 */
#ifndef PT_WORKER_UPSTREAM_TLS_H
#define PT_WORKER_UPSTREAM_TLS_H

#include "portico/module.h"
#include "worker/conn.h"

/* ---- worker/upstream_tls.c ------------------------------------------- */

/*
 * Starts a client TLS session on <c>'s upstream socket, which must be
 * connected (dial_start's <done> said 0) and still registered as dial.c
 * left it (CONN_SIDE_EVENTS, edge-triggered, events noted by
 * dial_on_event). <m> is the module upstream_tls_conf found in the
 * master, <uctx> what its upstream_conf made; <sni> the upstream's host
 * (pt_module.upstream_new says what it may be), copied by the module.
 *
 * The handshake runs on the socket's events, bounded by c->c_timer with
 * limits.connect_timeout, and <done> is called exactly once, possibly
 * before this returns, unless the connection closes first (as with
 * dial_start): <err> 0 once the handshake is complete, the socket back
 * with dial_on_event and s->ready noting EPOLLIN and EPOLLOUT (the
 * handshake took edges that may announce bytes after it), and from then
 * on conn_recv/conn_send and the rest go through the session until
 * conn_up_transport_free (conn_close, or whoever closes the upstream
 * socket first). Or a positive errno: EPROTO for a TLS or verification
 * failure (the module logged why), ETIMEDOUT, a socket error, ENOMEM;
 * then the session is freed and the upstream socket closed, as
 * dial_start leaves it after a failure, so the caller may dial again.
 * The timer is stopped either way. Worker only.
 */
void	 upstream_tls_start(struct pt_conn *c, const struct pt_module *m,
	    void *uctx, const char *sni,
	    void (*done)(struct pt_conn *c, int err));

#endif
