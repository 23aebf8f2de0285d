/* SPDX-License-Identifier: BSD-2-Clause */
/* protocol = "tcp": a port forwarder to one fixed target. */
#ifndef PT_WORKER_TCP_H
#define PT_WORKER_TCP_H

#include "worker/conn.h"

/* ---- worker/tcp.c ---------------------------------------------------- */

/* Starts the forwarder's life cycle on a freshly accepted connection. */
void	 tcp_start(struct pt_conn *c);

#endif
