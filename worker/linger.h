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
/* Sockets lingering now: a stopping worker waits for them (each ends
 * within 2 s), since its exit would close them with the client's bytes
 * unread, a reset. */
unsigned	 linger_count(void);
/* Closes every lingering socket (a fast stop). */
void		 linger_close_all(void);

#endif
