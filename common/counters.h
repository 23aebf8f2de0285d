/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared counters: one cache-line-aligned slot per worker slot in memory
 * the master maps before forking, so it can total them without asking.
 */
#ifndef PT_COMMON_COUNTERS_H
#define PT_COMMON_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "portico/module.h"

enum counter_id {
	CTR_ACCEPTED = 0,	/* client connections accepted */
	CTR_ACTIVE,		/* open now (old and new generation) */
	CTR_CLOSED,
	CTR_BYTES_IN,		/* client -> upstream payload */
	CTR_BYTES_OUT,		/* upstream -> client payload */
	CTR_ACCEPT_PAUSED,	/* accept() paused: out of fds or conns */
	CTR_UPSTREAM_FAILED,	/* connect to the target failed or timed out */
	CTR_DENIED,		/* a module, or connect_ports, said DENY */
	CTR_UDP_DENIED,		/* datagrams to a destination DATAGRAM denied */
	CTR_COUNT
};

struct counters_slot {
	/* Old and new generation of one slot share it during a reload, so
	 * every update is an atomic add. */
	uint64_t	 c[CTR_COUNT];
	/* Modules' counters by pt_counter_register id: sized for the limit
	 * because the mapping is made once, before any module registers. */
	uint64_t	 m[PT_COUNTERS_MAX];
} __attribute__((aligned(64)));

#define COUNTERS_NAME_MAX	31	/* a module counter's name, bytes */

/* ---- common/counters.c ----------------------------------------------- */

/* Maps <nslots> zeroed slots shared with future children. Master, before
 * the first fork. Returns 0 or -errno. */
int		 counters_map(int nslots);
/* The slot a worker writes to. */
void		 counters_use_slot(int slot);
void		 counters_add(enum counter_id id, int64_t delta);
/* Sum of every slot, for the master's reports. */
void		 counters_total(uint64_t out[CTR_COUNT]);
const char	*counters_name(enum counter_id id);
/* Appends " <name>=<sum>" for every module counter registered to
 * <buf> (<cap> bytes, NUL-terminated, cut when full). Master. Returns
 * the length written. */
size_t		 counters_fmt_modules(char *buf, size_t cap);
/* Tests only: forgets every module counter name. */
void		 counters_forget_names(void);

#endif
