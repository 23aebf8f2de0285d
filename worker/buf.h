/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Payload buffers in two size classes, pooled per worker. A buffer knows
 * its class, so whoever ends up holding it (a relay direction, an HTTP
 * head) can give it back without knowing where it came from.
 */
#ifndef PT_WORKER_BUF_H
#define PT_WORKER_BUF_H

#include <stddef.h>

enum buf_class {
	BUF_SMALL = 0,	/* relay.buffer_size: bodies, tunnels, most heads */
	BUF_LARGE,	/* http.max_header_size and some: large heads */
	BUF_CLASSES
};

/* ---- worker/buf.c ---------------------------------------------------- */

/* Sizes both classes; at most <max_each> buffers of each. Worker, before
 * the loop. */
void	 buf_init(size_t small, size_t large, unsigned max_each);
void	 buf_fini(void);
/* A buffer of class <cls> owned by the caller, or NULL when the class is
 * exhausted or memory is short. */
char	*buf_get(enum buf_class cls);
/* Returns <b> to its pool. NULL is fine. */
void	 buf_put(char *b);
/* Usable bytes in <b>. */
size_t	 buf_size(const char *b);
size_t	 buf_class_size(enum buf_class cls);
/* Buffers of every class currently handed out. */
unsigned buf_in_use(void);

#endif
