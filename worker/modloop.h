/* SPDX-License-Identifier: BSD-2-Clause */
/* The module's own access to the worker's loop: pt_io_*, pt_post. */
#ifndef PT_WORKER_MODLOOP_H
#define PT_WORKER_MODLOOP_H

/* ---- worker/modloop.c ------------------------------------------------ */

/* Makes the eventfd other threads wake the loop with and watches it.
 * Worker, after loop_init, before modules' init_worker. 0 or -errno. */
int		 modloop_init(void);
/* Stops watching the eventfd; posts still queued never run. Worker,
 * after the modules' exit_worker (their threads are joined). */
void		 modloop_fini(void);
/* Runs every post queued so far, oldest first; posts made meanwhile wait
 * for the next wake-up. Worker thread. Returns how many ran. */
unsigned	 modloop_run_posts(void);

#endif
