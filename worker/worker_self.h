/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The running worker as every part of it sees it: its slot, its CPU, the
 * configuration it serves and whether it stops. A leaf: worker.c, which
 * includes every other part, sets it; the others only read it, so none of
 * them needs worker.h.
 */
#ifndef PT_WORKER_WORKER_SELF_H
#define PT_WORKER_WORKER_SELF_H

#include <stdbool.h>

struct pt_config;

struct pt_worker {
	int			 slot;
	int			 cpu;		/* -1: not pinned */
	const struct pt_config	*conf;
	bool			 stopping;
};

/* ---- worker/worker_self.c -------------------------------------------- */

/* The running worker (NULL in the master). */
struct pt_worker *worker_self(void);
/* Makes <w> the running worker: worker_main, right after fork. */
void		 worker_self_set(struct pt_worker *w);

#endif
