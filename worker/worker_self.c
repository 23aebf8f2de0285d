/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which worker this process runs, for the parts of the worker that read
 * its configuration or ask whether it stops. Only worker.c sets it; it
 * holds nothing else.
 */
#include "config.h"

#include <stddef.h>

#include "worker/worker_self.h"

static struct pt_worker	*worker_cur;

struct pt_worker *
worker_self(void)
{
	return worker_cur;
}

void
worker_self_set(struct pt_worker *w)
{
	worker_cur = w;
}
