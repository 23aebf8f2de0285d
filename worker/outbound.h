/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The local address of a connection's outgoing sockets (its egress):
 * which egress applies, binding a socket to it, the order of the
 * addresses to try, and whether a kept-alive upstream fits.
 */
#ifndef PT_WORKER_OUTBOUND_H
#define PT_WORKER_OUTBOUND_H

#include <stdbool.h>

#include "common/egress.h"
#include "common/sockaddr.h"
#include "worker/conn.h"

/* ---- worker/outbound.c ----------------------------------------------- */

/* The egress of <c>'s next outgoing connection: the one a module chose
 * for this transaction (pt_conn_set_egress), else its listener's, else
 * NULL (the kernel's choice). */
const struct pt_egress *outbound_egress(const struct pt_conn *c);
/*
 * Binds <fd>, a new socket of <family> not yet connected, to the egress
 * address for <c>: IP_FREEBIND (IPV6_FREEBIND), and for a <stream>
 * socket IP_BIND_ADDRESS_NO_PORT (the port is the kernel's at connect,
 * so bound sockets do not use up ephemeral ports), then bind() with port
 * 0. Records the address in c->c_up_local (none when there is no
 * egress). 0, or -errno: -EAFNOSUPPORT when the egress has no address of
 * <family>, else what setsockopt or bind said; each failure is counted
 * (egress_failures) and logged, at most once a minute per worker and
 * kind. Worker.
 */
int	 outbound_bind(struct pt_conn *c, int fd, int family, bool stream);
/*
 * Orders the <n> addresses at <addrs> for <c>'s egress: when it can
 * leave from one family only, the addresses of that family first, the
 * others dropped (they could not be reached from it); when none is of
 * that family, the first alone stays, so the dial fails once, with the
 * reason logged. Returns how many to try. Worker.
 */
int	 outbound_order(const struct pt_conn *c, struct pt_addr *addrs, int n);
/* The index of the first of the <n> addresses at <addrs> that <c>'s
 * egress can reach (0 when none can). Worker. */
int	 outbound_first(const struct pt_conn *c, const struct pt_addr *addrs,
	    int n);
/*
 * Whether an upstream connection to <to> bound to <local> (none: the
 * kernel's choice) may carry <c>'s request: its egress would pick that
 * very address. A random pick inside a prefix never matches: such a
 * connection is new each time. <c> is a const struct pt_conn * (the
 * shape of upstream_take's test). Worker.
 */
bool	 outbound_fits(const void *c, const struct pt_addr *to,
	    const union egress_addr *local);
/* The transaction's outgoing connection now stands on c_up_local:
 * pt_conn_egress() shows it until the transaction ends. <fresh>: a new
 * socket, counted in egress_connects when an egress bound it. */
void	 outbound_established(struct pt_conn *c, bool fresh);

#endif
