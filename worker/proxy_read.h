/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A proxy_protocol listener's first step: the PROXY header read off the
 * client's socket before any transport or protocol sees it.
 */
#ifndef PT_WORKER_PROXY_READ_H
#define PT_WORKER_PROXY_READ_H

#include "portico/module.h"
#include "worker/proxy_info.h"

/* ---- worker/proxy_read.c --------------------------------------------- */

/* Sizes the pool of struct proxy_info. Worker, before the loop. */
void		 proxy_read_init(unsigned max_conns);
/*
 * Reads <c>'s PROXY header (its listener has proxy_protocol), bounded by
 * header_timeout, then calls <next>; or closes <c> without an answer,
 * counted by reason. On return the client's socket is not registered
 * with the loop, so <next> starts it afresh.
 */
void		 proxy_read_start(struct pt_conn *c,
		    void (*next)(struct pt_conn *));

/* A copy of <pi> from the same pool (an HTTP/2 stream's, of its
 * connection's), or NULL. conn.c gives it back with the connection. */
struct proxy_info *proxy_info_dup(const struct proxy_info *pi);

#endif
