/* SPDX-License-Identifier: BSD-2-Clause */
/* protocol = "status": GET /metrics (Prometheus) and /status (JSON). */
#ifndef PT_WORKER_STATUS_H
#define PT_WORKER_STATUS_H

#include "worker/conn.h"

/* ---- worker/status.c ------------------------------------------------- */

/* Serves a status listener's freshly accepted connection (proto.c's
 * table). Worker only. */
void	 status_start(struct pt_conn *c);

#endif
