/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The request an HTTP/1.1 client sends: its head read and parsed, what
 * the proxy takes from it (target, credentials, path, the fields a log
 * keeps), the head rewritten for the origin, and the request delivered
 * to the origin path (http_client.h). pt_req_header's HTTP side too.
 */
#ifndef PT_WORKER_HTTP_REQUEST_H
#define PT_WORKER_HTTP_REQUEST_H

#include <stdbool.h>

#include "worker/http_txn.h"

/* ---- worker/http_request.c ------------------------------------------- */

/* Sizes the pools of path and log header copies. Worker, before the
 * loop. */
void	 http_request_init(unsigned max_conns);
void	 http_request_fini(void);
/*
 * Reads and parses request heads while the stage is HS_REQ_HEAD: a
 * complete one is checked and delivered (http_origin_request; HS_WAIT),
 * or answered here (a failure, OPTIONS *). Closes the connection at the
 * client's EOF or a read error.
 */
void	 http_request_read(struct pt_conn *c);
/* http_request_forget when there is a copy to give back. */
void	 http_request_forget_copies(struct http_state *h);
/* pt_req_header for an HTTP connection (req.c checks the phase): the
 * head while it is being judged (AUTH to DIAL), else (and with
 * <kept_only>) User-Agent or Referer as PT_MODF_LOG_HEADERS keeps them.
 * The value points into the head or the kept copy. */
bool	 http_req_header(struct pt_conn *c, const char *name, bool kept_only,
	    struct pt_str *value_out);

/* Gives back the copies the last request's head left for LOG (path,
 * User-Agent, Referer), at its end or the connection's. Inline: only
 * modules make copies, and a request without one costs a test. */
static inline void
http_request_forget(struct http_state *h)
{
	if (h->path != NULL || h->loghdr != NULL)
		http_request_forget_copies(h);
}

#endif
