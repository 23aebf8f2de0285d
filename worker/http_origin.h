/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The origin path of an HTTP transaction: what a client side calls on it
 * (the interface, both ways, and who owns which buffer: http_client.h).
 */
#ifndef PT_WORKER_HTTP_ORIGIN_H
#define PT_WORKER_HTTP_ORIGIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/conf_types.h"
#include "worker/host.h"
#include "worker/http_txn.h"
#include "worker/phase.h"

struct pt_config;

/* ---- worker/http_origin.c -------------------------------------------- */

/* Sizes the upstream pool. Worker, before the loop. */
void	 http_origin_init(const struct pt_config *conf);
void	 http_origin_fini(void);
/* Gives a new connection HTTP's dial path (target_init: how refusals,
 * failures and ESTABLISHED are answered). Before ACCEPT runs. */
void	 http_origin_start(struct pt_conn *c);
/* The request's target is <hp> (checked: shorter than HTTP_HOST_MAX),
 * port <port>: an upstream kept from the last request to another origin
 * (or kept for a CONNECT or WebSocket request) goes to the pool; sets
 * c_req.host and c_req.port. */
void	 http_origin_target(struct pt_conn *c, const struct host *hp,
	    uint16_t port);
/* AUTH ended with <v> (phase_run's callback): the dial path, unless it
 * refused. */
void	 http_origin_on_auth(struct pt_conn *c, enum pt_verdict v);
/* http_origin_receive once the origin may be read. */
int	 http_origin_read(struct pt_conn *c);
/* The transaction is over (LOG ran): the upstream is kept for the next
 * request when the origin allows it and nothing stray came from it,
 * else closed. */
void	 http_origin_done(struct pt_conn *c);
/* The client side answers the request itself: a pending dial stops, a
 * kept upstream goes to the pool, the one in use is closed. */
void	 http_origin_drop(struct pt_conn *c);
/* The connection closes (conn_close, sockets still open): a kept
 * upstream outlives its client, in the pool. */
void	 http_origin_close(struct pt_conn *c);

/* Writes the request (head, then the framed body) to the origin: as
 * http_flow_write. Inline: the pump calls it every round. */
static inline ssize_t
http_origin_send(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);

	return http_flow_write(c, &h->req, &c->c_dir[SIDE_CLIENT],
	    &c->c_side[SIDE_UPSTREAM]);
}

/* The request is delivered (http_client.h): runs AUTH, then the dial
 * path; the outcome comes back through h->client. Inline: once per
 * request, from the client side's parse. */
static inline void
http_origin_request(struct pt_conn *c)
{
	/* A wait at ACCEPT or for an earlier request is not this one's. */
	c->c_waited = false;
	http_st(c)->stage = HS_WAIT;
	http_timer(c, http_conf->limits.header_timeout_ms);
	phase_run(c, PT_PHASE_AUTH, http_origin_on_auth);
}

/* Reads what the origin sent, when the response wants more and the
 * origin may be read: the response head (then response_head), the
 * framed body. 1 progress, 0 none, -1 when the connection closed or the
 * transaction left HS_FORWARD (answered, retried). Inline: the pump asks
 * every round, and most rounds have nothing to read. */
static inline int
http_origin_receive(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);

	if (h->stage != HS_FORWARD || !http_flow_wants_read(&h->resp) ||
	    !http_flow_may_read(c, &c->c_side[SIDE_UPSTREAM]))
		return 0;
	return http_origin_read(c);
}

/* The next request on the client connection starts: the origin path's
 * per-transaction state goes (the kept upstream stays). */
static inline void
http_origin_reset(struct http_state *h)
{
	h->reused = h->retried = h->origin_keep = h->head_absolute = false;
}

#endif
