/* SPDX-License-Identifier: BSD-2-Clause */
/* protocol = "http": the HTTP/1.1 forward proxy, CONNECT and WebSocket. */
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
/* pt_req_header for an HTTP connection (req.c checks the phase): the
 * head while it is being judged (AUTH to DIAL), else (and with
 * <kept_only>) User-Agent or Referer as PT_MODF_LOG_HEADERS keeps them. */
bool	 http_req_header(struct pt_conn *c, const char *name, bool kept_only,
	    struct pt_str *value_out);

#endif
