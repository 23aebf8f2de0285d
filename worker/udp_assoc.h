/* SPDX-License-Identifier: BSD-2-Clause */
/* SOCKS5 UDP ASSOCIATE: the datagram relay of one control connection. */
#ifndef PT_WORKER_UDP_ASSOC_H
#define PT_WORKER_UDP_ASSOC_H

#include "common/sockaddr.h"
#include "worker/conn.h"

struct udp_assoc;

/* ---- worker/udp_assoc.c ---------------------------------------------- */

/*
 * Opens the relay for control connection <c>: a UDP socket on <local>'s
 * address (port chosen by the kernel), which accepts datagrams only from
 * the control connection's peer IP (and from <client_port> when it is
 * not 0). Writes the address to advertise in *bound_out: the socket's
 * own, or <advertise>[0] to an IPv4 client and [1] to an IPv6 one where
 * that is set (a listener's udp_advertise; NULL: none). Returns the
 * association, owned by <c> (udp_assoc_free at close), or NULL with
 * errno set.
 */
struct udp_assoc *udp_assoc_open(struct pt_conn *c,
		    const struct sockaddr_storage *local, uint16_t client_port,
		    const struct pt_addr *advertise, struct pt_addr *bound_out);
/*
 * Sends every datagram of <a> through a parent's UDP relay at <relay>
 * (an association portico opened with a SOCKS5 parent), each with a
 * SOCKS5 UDP header naming its destination, and takes datagrams from
 * that address only, passing their header (naming the source) on to the
 * client as it is. <resolve_local>: names are resolved here, judged with
 * their address, and sent to the parent as that address; else sent as
 * names, judged by name only. Before the first datagram. Worker.
 */
void		 udp_assoc_via(struct udp_assoc *a, const struct pt_addr *relay,
		    bool resolve_local);
/* Watches or ignores its sockets as their direction's budget allows
 * (a spent budget got more). NULL is fine. */
void		 udp_assoc_budget(struct udp_assoc *a);
/* Closes its sockets, cancels its lookups, frees it. NULL is fine. */
void		 udp_assoc_free(struct udp_assoc *a);
/* Sets up the pools of associations and parked datagrams, at most <max>
 * of each (one per connection). Worker, before the loop. */
int		 udp_assoc_init(unsigned max);
void		 udp_assoc_fini(void);

#endif
