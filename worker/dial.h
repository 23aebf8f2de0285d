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

#endif
