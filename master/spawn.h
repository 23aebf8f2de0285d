/* SPDX-License-Identifier: BSD-2-Clause */
/* Forking workers and supervising them: respawn, reload, stop. */
#ifndef PT_MASTER_SPAWN_H
#define PT_MASTER_SPAWN_H

#include "master/listen.h"

struct pt_config;

/* ---- master/spawn.c -------------------------------------------------- */

/*
 * Forks one worker per slot of <conf> on the sockets of <ls>, then
 * supervises until stopped: respawns dead workers with backoff, reloads on
 * SIGHUP, reopens logs on SIGUSR1, stops on SIGQUIT (graceful) or
 * SIGTERM/SIGINT (fast). Takes ownership of <conf> and <ls>. Returns the
 * master's exit status. Master only.
 */
int	 spawn_run(struct pt_config *conf, struct listen_set *ls, int sigfd);

#endif
