/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The strings modules give the core about a transaction (user, label,
 * tags), kept in a small block taken from a pool on the first set; and
 * a transaction's opening and reset.
 */
#ifndef PT_WORKER_REQ_H
#define PT_WORKER_REQ_H

#include <stdbool.h>
#include <string.h>

#include "portico/module.h"
#include "common/counters.h"
#include "worker/conn.h"
#include "worker/loop.h"

/* ---- worker/req.c ---------------------------------------------------- */

/* Sizes the pool of name blocks. Worker, before the loop. */
void	 req_init(unsigned max_conns);
void	 req_fini(void);
/*
 * Forgets the user, label and tags set for the transaction that just
 * ended (HTTP keep-alive, after LOG) and gives the block back, so an idle
 * connection holds none. Clears req->user and req->label when they point
 * into it.
 */
void	 req_names_clear(struct pt_conn *c);
/*
 * Points req->user at the connection's own user (one a transport or an
 * ACCEPT hook set: a TLS client certificate's subject), or empties it:
 * how every transaction on a connection starts.
 */
void	 req_user_reset(struct pt_conn *c);
/* Gives back every block the connection holds (at reaping). */
void	 req_names_free(struct pt_conn *c);

/* ---- transactions (inline: once per HTTP request) -------------------- */

/*
 * A transaction starts on a connection that may have had others (HTTP
 * and status keep-alive): LOG will run for it. The connection's first
 * one keeps the number conn_new took; a later one takes the next once
 * LOG ran for the last (<*logged>, the protocol's record of that, which
 * this clears). Callers set start_ms.
 */
static inline void
req_txn_open(struct pt_conn *c, bool *logged)
{
	c->c_logged = false;
	if (*logged) {
		c->c_req.txn = conn_txn_next();
		*logged = false;
	}
}

/*
 * The transaction that ended (LOG ran) leaves nothing to the next one:
 * empties every per-transaction field of c_req, the module's answer, the
 * user, label and tags (the connection's user comes back), and starts
 * the next one's clock (start_ms, c_start_us). The one list of those
 * fields: a new one is reset here.
 */
static inline void
req_txn_reset(struct pt_conn *c)
{
	memset(&c->c_req.method, 0, sizeof(c->c_req.method));
	memset(&c->c_req.host, 0, sizeof(c->c_req.host));
	memset(&c->c_req.password, 0, sizeof(c->c_req.password));
	memset(&c->c_req.target, 0, sizeof(c->c_req.target));
	memset(&c->c_req.path, 0, sizeof(c->c_req.path));
	/* User, label and tags were the last transaction's. */
	req_names_clear(c);
	req_user_reset(c);
	memset(&c->c_req.label, 0, sizeof(c->c_req.label));
	memset(&c->c_answer, 0, sizeof(c->c_answer));
	c->c_egress = NULL;
	c->c_egress_shown = false;
	c->c_via = NULL;
	c->c_parent = 0;
	c->c_req.port = 0;
	c->c_req.status = 0;
	c->c_req.bytes_in = c->c_req.bytes_out = 0;
	c->c_req.resp_head = 0;
	c->c_req.error = NULL;
	c->c_req.start_ms = loop_now();
	c->c_start_us = counters_now_us();
}

#endif
