/* SPDX-License-Identifier: BSD-2-Clause */
/* Listening sockets in a worker: accept, pause when out of resources. */
#ifndef PT_WORKER_ACCEPT_H
#define PT_WORKER_ACCEPT_H

#include <stdbool.h>
#include <stdint.h>

#include "worker/loop.h"

struct conf_listener;

struct worker_listener {
	struct loop_io			 io;
	const struct conf_listener	*conf;
	int				 fd;
};

/* ---- worker/accept.c ------------------------------------------------- */

/* Starts accepting on <n> listeners (fds inherited from the master).
 * Worker, before the loop. 0 or -errno. */
int	 accept_start(const struct conf_listener *conf, const int *fds, int n);
/* Resumes accepting if it was paused for want of a connection slot. */
void	 accept_slot_freed(void);
/* Out of descriptors for an accepted connection's upstream socket:
 * pauses as accept's own EMFILE does (those not accepted yet wait in the
 * listen queue, not in the worker). */
void	 accept_pause_nofile(void);
/*
 * Graceful stop: takes every connection already queued on a listener
 * whose bit is clear in <kept> (its socket closes when this copy does:
 * none may be lost), then stops watching and closes the worker's copies
 * of the listening sockets. Bit l set: the new generation serves
 * listener l's socket, whose queue is left to it.
 */
void	 accept_stop(uint64_t kept);

#endif
