/* SPDX-License-Identifier: BSD-2-Clause */
/* Runs the modules' hooks for one phase of one connection. */
#ifndef PT_WORKER_PHASE_H
#define PT_WORKER_PHASE_H

#include <stddef.h>

#include "portico/module.h"
#include "worker/conn.h"

struct pt_config;

/* ---- worker/phase.c -------------------------------------------------- */

/* Builds the per-phase hook tables from the configuration's modules and
 * lays out their per-connection state. Returns the bytes of state each
 * connection needs. Worker, before the loop. */
size_t		 phase_init(const struct pt_config *conf);
void		 phase_fini(void);
/* True when some module hooks <phase> (the core may skip work if not). */
bool		 phase_has_hooks(enum pt_phase phase);
/* Whether a hook of <phase> runs for <c>: one of a module that applies
 * to its listener. */
bool		 phase_applies(const struct pt_conn *c, enum pt_phase phase);
/* True when any module hooks any phase. */
bool		 phase_any_hooks(void);
/* Whether a loaded module has PT_MODF_LOG_HEADERS. */
bool		 phase_log_headers(void);
/*
 * Runs the hooks of <phase> in priority order, then calls <done> with
 * CONTINUE (all passed), ALLOW, DENY or ERROR. <done> may run before
 * phase_run returns, or later when a hook answered AGAIN. The LOG
 * and CLOSE phases never wait: AGAIN there counts as CONTINUE, and at
 * CLOSE every hook runs whatever the others answer.
 */
void		 phase_run(struct pt_conn *c, enum pt_phase phase,
		    conn_phase_done_fn done);
/*
 * Runs the hooks of <phase> to the end before returning, for phases that
 * cannot wait (DATAGRAM): returns CONTINUE (all passed), ALLOW, DENY or
 * ERROR. A hook that answers AGAIN there counts as DENY (and the walk
 * stops); no pt_conn_resume() is expected for it. The connection's own
 * phase walk (c_phase, c_hook) is left as it was.
 */
enum pt_verdict	 phase_run_now(struct pt_conn *c, enum pt_phase phase);
/* Whether a module with a datagram callback (pt_module.datagram)
 * applies to <c>'s listener: the UDP relay asks once per association. */
bool		 phase_datagram_applies(const struct pt_conn *c);
/* Runs the datagram callbacks that apply to <c> for one datagram of
 * <len> payload bytes in direction <dir>; true when it may go on (all
 * answered CONTINUE, or one ALLOW), false when one refused it. */
bool		 phase_datagram_run(struct pt_conn *c, enum pt_dir dir,
		    size_t len);

#endif
