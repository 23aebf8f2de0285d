/* SPDX-License-Identifier: BSD-2-Clause */
/* Idle upstream HTTP connections kept for reuse, per worker. */
#ifndef PT_WORKER_UPSTREAM_H
#define PT_WORKER_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "common/sockaddr.h"

/* ---- worker/upstream.c ----------------------------------------------- */

/* Keeps at most <max> idle connections, each at most <idle_ms>. Worker,
 * before the loop. */
void	 upstream_init(unsigned max, unsigned idle_ms);
/* Closes every idle connection. */
void	 upstream_fini(void);
/*
 * Takes an idle connection to <host>:<port> (the origin as the client
 * named it, case-insensitive), most recently used first. Returns its fd,
 * owned by the caller, with its peer in *addr_out; or -1.
 */
int	 upstream_take(const char *host, size_t hostlen, uint16_t port,
	    struct pt_addr *addr_out);
/* Gives <fd> (an upstream connection at a message boundary) to the pool,
 * which owns it from now on: closes it when full (evicting the oldest),
 * when the origin closes or sends anything, or after the idle time. */
void	 upstream_put(const char *host, size_t hostlen, uint16_t port, int fd,
	    const struct pt_addr *addr);
unsigned upstream_idle_count(void);

#endif
