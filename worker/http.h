/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * protocol = "http": the HTTP/1.1 forward proxy, CONNECT and WebSocket,
 * as the rest of the worker starts it. The files it is made of, and how
 * they depend on each other: doc/internals.md section 13.
 */
#ifndef PT_WORKER_HTTP_H
#define PT_WORKER_HTTP_H

#include "worker/conn.h"

struct pt_config;

/* ---- worker/http.c --------------------------------------------------- */

/* Sizes the per-connection HTTP state pool. Worker, before the loop. */
void	 http_init(const struct pt_config *conf, unsigned max_conns);
void	 http_fini(void);
/* Serves HTTP on a freshly accepted (and transport-ready) connection. */
void	 http_start(struct pt_conn *c);

#endif
