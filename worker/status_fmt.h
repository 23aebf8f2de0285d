/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a status listener answers: the shared counters and the master's
 * record (common/counters.h) as Prometheus text or as one JSON object.
 */
#ifndef PT_WORKER_STATUS_FMT_H
#define PT_WORKER_STATUS_FMT_H

#include <stdbool.h>
#include <stddef.h>

/* A growing text buffer. Zero it to start; free p when done. */
struct status_out {
	char	*p;
	size_t	 len, cap;
	bool	 oom;		/* an allocation failed: the text is cut */
};

/* ---- worker/status_fmt.c --------------------------------------------- */

/* Appends printf-style text; on allocation failure sets o->oom. */
void	 status_printf(struct status_out *o, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/*
 * The Prometheus text exposition format (version 0.0.4) of everything
 * the mapping holds, read now. Any process with the mapping (a worker,
 * the unit tests). Returns 0, or -ENOMEM (o->oom).
 */
int	 status_fmt_metrics(struct status_out *o);
/* The same as one JSON object (the keys are in portico.conf(5)). */
int	 status_fmt_json(struct status_out *o);

#endif
