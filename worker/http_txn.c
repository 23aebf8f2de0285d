/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every worker/http*.c file shares about a transaction: the
 * configuration and the parse scratch, and the one timer of a client
 * connection (c_timer), whose meaning follows the transaction's stage:
 * header_timeout while a request head comes and while the phases run,
 * response_timeout while the origin has the whole request and has not
 * answered, idle_timeout otherwise (doc/internals.md section 13, Timers).
 *
 * The answer to a timer that ran out is the client side's (its fail
 * operation, or a close): this file writes nothing to a socket.
 */
#include "config.h"

#include <sys/socket.h>

#include "worker/http_txn.h"
#include "worker/http_head.h"
#include "common/conf_types.h"
#include "common/log.h"
#include "common/sockaddr.h"
#include "worker/loop.h"

const struct pt_config		*http_conf;
struct http_msg			 http_scratch;

void
http_txn_init(const struct pt_config *conf)
{
	http_conf = conf;
	http_head_set_via(conf->http.via_pseudonym);
}

static void
http_txn_fail(struct pt_conn *c, int status, const char *detail)
{
	http_st(c)->client->fail(c, status, detail, NULL, 0);
}

/*
 * http.response_timeout ran out: the whole request went to the origin and
 * not one byte of a response came back. The origin is not retried (it had
 * the request; a second wait would double the client's) and its
 * connection is closed by the answer (http_origin_drop), never pooled.
 */
static void
http_response_timeout(struct pt_conn *c)
{
	struct http_state	*h = http_st(c);
	char			 addr[SOCKADDR_STRLEN];

	pt_clog(c, PT_LOG_WARNING, "origin %s (%.*s) sent no response within "
	    "response_timeout (%u s): 504", sockaddr_fmt((const struct
	    sockaddr *)&c->c_req.target, addr, sizeof(addr)),
	    (int)h->hostlen, h->host,
	    http_conf->http.response_timeout_ms / 1000);
	/* What reached the client so far can only be whole interim (1xx)
	 * responses, which a final one may follow (RFC 9110 15.2). */
	if (!http_flow_has_output(&h->resp))
		h->resp_started = false;
	http_txn_fail(c, 504, "origin sent no response in time");
}

void
http_on_timer(struct pt_timer *t, void *arg)
{
	struct pt_conn		*c = arg;
	struct http_state	*h = http_st(c);
	uint64_t		 idle = http_conf->limits.idle_timeout_ms;
	uint64_t		 quiet = loop_now() - c->c_last_active;
	bool			 waiting;

	switch (h->stage) {
	case HS_REQ_HEAD:
		/* A head that does not arrive in time gets 408; a keep-alive
		 * connection idle between requests is closed without a word
		 * (RFC 9112 9.5 allows it). */
		if (h->req.in_len > 0 || h->first)
			http_txn_fail(c, 408,
			    "request head not received in time");
		else
			conn_close(c, "idle keep-alive connection");
		return;
	case HS_WAIT:
		http_txn_fail(c, 504, "timed out before reaching the origin");
		return;
	default:
		break;
	}
	/* Lazy, like the relay: bytes moving only set c_last_active. The
	 * wait for a response is measured from the last request byte
	 * written (or interim response passed on) against
	 * response_timeout, everything else against idle_timeout. */
	waiting = http_awaiting_response(h);
	h->resp_wait = waiting;
	if (waiting)
		idle = http_conf->http.response_timeout_ms;
	if (quiet < idle) {
		pt_timer_start(&c->c_timer, idle - quiet, http_on_timer, c);
		return;
	}
	if (waiting) {
		http_response_timeout(c);
		return;
	}
	if (!h->resp_started && h->stage == HS_FORWARD)
		http_txn_fail(c, 504, "origin did not answer in time");
	else
		conn_abort(c, "idle timeout");
}
