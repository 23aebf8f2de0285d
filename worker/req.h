/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The strings modules give the core about a transaction (user, label,
 * tags), kept in a small block taken from a pool on the first set.
 */
#ifndef PT_WORKER_REQ_H
#define PT_WORKER_REQ_H

#include "portico/module.h"

struct pt_conn;

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

#endif
