/* SPDX-License-Identifier: BSD-2-Clause */
/* Moves bytes both ways between the two legs of a connection. */
#ifndef PT_WORKER_RELAY_H
#define PT_WORKER_RELAY_H

#include "worker/conn.h"

/* ---- worker/relay.c -------------------------------------------------- */

/* Sets the method (splice or copy) for this worker. Buffers come from
 * worker/buf.h. Worker, before the loop. */
void	 relay_init(bool splice);
void	 relay_fini(void);
/* Both sockets are open: start pumping. Bytes already in c_dir[d].buf
 * (head..tail, a buffer from worker/buf.h) are written first: an HTTP
 * tunnel hands over what the client sent after its CONNECT head. Closes
 * <c> when both directions are done or on any error. */
void	 relay_start(struct pt_conn *c);
/* Returns buffers and pipes held by <c> (conn_close). */
void	 relay_release(struct pt_conn *c);

#endif
