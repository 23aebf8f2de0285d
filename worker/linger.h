/* SPDX-License-Identifier: BSD-2-Clause */
/* Lingering close: answered clients that may still be sending. */
#ifndef PT_WORKER_LINGER_H
#define PT_WORKER_LINGER_H

#include <stdbool.h>

#include "worker/loop.h"

/* ---- worker/linger.c ------------------------------------------------- */

/*
 * Takes over <io>'s plain socket, its answer written: shutdown(SHUT_WR),
 * then reads and drops what the client sends until it closes, 2 s pass
 * or 1 MiB was dropped, and closes it. <io> is left without a descriptor
 * (fd -1). False when the table is full or the socket failed: the caller
 * closes it as before.
 */
bool		 linger_take(struct loop_io *io);

#endif
