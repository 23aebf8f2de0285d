/* SPDX-License-Identifier: BSD-2-Clause */
/* Moves bytes both ways between the two legs of a connection. */
#ifndef PT_WORKER_RELAY_H
#define PT_WORKER_RELAY_H

#include "worker/conn.h"

/* ---- worker/relay.c -------------------------------------------------- */

/* Sets the method (splice or copy) and buffer size for this worker and
 * sizes the buffer and pipe pools. Worker, before the loop. */
void	 relay_init(bool splice, unsigned buffer_size, unsigned max_conns);
void	 relay_fini(void);
/* Both sockets are open: start pumping. Closes <c> when both directions
 * are done or on any error. */
void	 relay_start(struct pt_conn *c);
/* Returns buffers and pipes held by <c> (conn_close). */
void	 relay_release(struct pt_conn *c);
/* Pool usage, for tests and stats. */
unsigned relay_buffers_in_use(void);

#endif
