/* SPDX-License-Identifier: BSD-2-Clause */
/* The protocols a listener may speak, by configured name. */
#ifndef PT_WORKER_PROTO_H
#define PT_WORKER_PROTO_H

#include "common/conf_types.h"
#include "worker/conn.h"

/* Serves a freshly accepted (and transport-ready) connection. */
typedef void (*proto_start_fn)(struct pt_conn *c);

/* ---- worker/proto.c -------------------------------------------------- */

/* The start function of protocol <p> (never NULL for a value conf.c
 * accepts). Worker only. */
proto_start_fn	 proto_start(enum conf_proto p);

#endif
