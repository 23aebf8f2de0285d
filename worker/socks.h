/* SPDX-License-Identifier: BSD-2-Clause */
/* protocol = "socks5": SOCKS5 (RFC 1928, 1929) and SOCKS4/4a. */
#ifndef PT_WORKER_SOCKS_H
#define PT_WORKER_SOCKS_H

#include "worker/conn.h"

struct pt_config;

/* ---- worker/socks.c -------------------------------------------------- */

/* Sizes the per-connection SOCKS state pool. Worker, before the loop. */
void	 socks_init(const struct pt_config *conf, unsigned max_conns);
void	 socks_fini(void);
/* Serves SOCKS on a freshly accepted (and transport-ready) connection. */
void	 socks_start(struct pt_conn *c);

#endif
