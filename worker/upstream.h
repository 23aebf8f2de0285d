/* SPDX-License-Identifier: BSD-2-Clause */
/* Idle upstream HTTP connections kept for reuse, per worker. */
#ifndef PT_WORKER_UPSTREAM_H
#define PT_WORKER_UPSTREAM_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/egress.h"
#include "common/sockaddr.h"
#include "worker/loop.h"

/* ---- worker/upstream.c ----------------------------------------------- */

/* Keeps at most <max> idle connections, each at most <idle_ms>. Worker,
 * before the loop. */
void	 upstream_init(unsigned max, unsigned idle_ms);
/* Closes every idle connection. */
void	 upstream_fini(void);
/* Whether a kept connection to <to>, bound to <local> (none: the
 * kernel's choice), may serve the caller's request (<arg>). */
typedef bool (*upstream_fits_fn)(const void *arg, const struct pt_addr *to,
    const union egress_addr *local);
/*
 * Takes an idle connection to <host>:<port> (the origin as the client
 * named it, case-insensitive) that <fits> accepts, most recently used
 * first: the key is the origin and the local address the connection
 * left from, so a request never goes out from another egress than its
 * own. Its fd, owned by the caller from now on, is watched through <to>
 * with <events> and <fn> (the registration moves, no new one); its peer
 * is in *addr_out, its local address in *local_out. Returns the fd, or
 * -1.
 */
int	 upstream_take(const char *host, size_t hostlen, uint16_t port,
	    upstream_fits_fn fits, const void *arg, struct pt_addr *addr_out,
	    union egress_addr *local_out, struct loop_io *to,
	    uint32_t events, loop_io_fn fn);
/* Gives the connection watched through <io> (at a message boundary),
 * bound to <local>, to the pool, which owns it from now on: closes it
 * when full (evicting the oldest), when the origin closes or sends
 * anything, or after the idle time. <io> is left unregistered; its fd is
 * no longer the caller's. */
void	 upstream_put(const char *host, size_t hostlen, uint16_t port,
	    struct loop_io *io, const struct pt_addr *addr,
	    const union egress_addr *local);
/*
 * Room for <n> more connections beyond upstream_keepalive, and back.
 * An HTTP/1.1 client connection keeps its origin connection between its
 * requests (parked, outside the pool); an HTTP/2 connection's streams
 * each end, so their origin connections come here: the connection
 * reserves as many entries as it had streams at once (h2_stream.c) and
 * gives them back when it closes, evicting the oldest beyond the room
 * left. Nothing while the pool is off (upstream_keepalive = 0).
 */
void	 upstream_reserve(unsigned n);
void	 upstream_unreserve(unsigned n);
unsigned upstream_idle_count(void);
/* Closes up to <n> idle connections, least recently used first; returns
 * how many. Called where a socket or accept failed for want of
 * descriptors: a kept connection is worth less than a client's. */
unsigned upstream_shed(unsigned n);
/* A socket(2) or accept4(2) error that upstream_shed() can relieve. */
#define UPSTREAM_SHEDDABLE(err)	((err) == EMFILE || (err) == ENFILE)
/* socket(2) (flags in <type>), tried once more after shedding an idle
 * connection when descriptors ran out. -1 with errno set on failure. */
int	 upstream_socket(int family, int type);

#endif
