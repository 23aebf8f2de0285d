/* SPDX-License-Identifier: BSD-2-Clause */
/* Opens the upstream leg: non-blocking connect with a timeout. */
#ifndef PT_WORKER_DIAL_H
#define PT_WORKER_DIAL_H

#include "common/sockaddr.h"
#include "worker/conn.h"

/* <err> is 0 on success or a positive errno (ETIMEDOUT on timeout). */
typedef void (*dial_done_fn)(struct pt_conn *c, int err);

/* ---- worker/dial.c --------------------------------------------------- */

/*
 * Connects the upstream side of <c> to <to>, with the connect timeout.
 * Calls <done> exactly once, possibly before returning. On success the
 * upstream socket is c->c_side[SIDE_UPSTREAM].io.fd, TCP_NODELAY set,
 * bound to the connection's egress (c->c_up_local; outbound_bind's
 * errors, EAFNOSUPPORT for an egress of the other family, go to <done>).
 */
void	 dial_start(struct pt_conn *c, const struct pt_addr *to,
	    unsigned timeout_ms, dial_done_fn done);
/*
 * The io callback of a connected upstream socket that nobody has taken
 * yet: notes each event in conn_side.ready (edge-triggered, so none is
 * lost before the next owner takes the socket). upstream_tls.c puts it
 * back after the handshake.
 */
void	 dial_on_event(struct loop_io *io, uint32_t events);

#endif
