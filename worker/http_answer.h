/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The heads an HTTP/1.1 client is sent: the origin's response rewritten
 * for it, and the proxy's own answers. With http.c and http_request.c,
 * the HTTP/1.1 client side of http_client.h: these are its operations
 * that write.
 */
#ifndef PT_WORKER_HTTP_ANSWER_H
#define PT_WORKER_HTTP_ANSWER_H

#include <stdbool.h>
#include <stdint.h>

#include "worker/http_parse.h"
#include "worker/http_txn.h"

/* ---- worker/http_answer.c -------------------------------------------- */

/*
 * Answers the current request with <status> (one of ours), unless part of
 * a response already went out, in which case all that is left is to
 * close. After it, the connection closes, except after a 407 to a request
 * without a body, so that a client can retry with credentials. A 407
 * carries a challenge for <realm> ("portico" when NULL); <retry_after>
 * seconds, when not 0, become Retry-After (429, 503). The fail operation.
 */
void	 http_fail_answer(struct pt_conn *c, int status, const char *detail,
	    const char *realm, uint32_t retry_after);
/* http_fail_answer without a realm or a Retry-After. */
void	 http_fail(struct pt_conn *c, int status, const char *detail);
/* Answers OPTIONS or TRACE with Max-Forwards: 0 (or OPTIONS *) ourselves:
 * we are the last recipient (h->local). The answer_local operation. */
void	 http_answer_locally(struct pt_conn *c);
/* CONNECT's "200 Connection established", then the tunnel (HS_TUNNEL).
 * The connected operation. */
void	 http_answer_connected(struct pt_conn *c);
/* The origin's response head <m>, rewritten for this client into
 * resp.out: an interim one for an HTTP/1.1 client only, a final one
 * framed so that the client can find its end. False after answering
 * otherwise or closing. The response_head operation. */
bool	 http_answer_response(struct pt_conn *c, const struct http_msg *m);

#endif
