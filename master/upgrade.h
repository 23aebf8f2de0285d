/* SPDX-License-Identifier: BSD-2-Clause */
/* Binary upgrade: SIGUSR2 execs the binary again, handing it the sockets. */
#ifndef PT_MASTER_UPGRADE_H
#define PT_MASTER_UPGRADE_H

#include <stdbool.h>
#include <sys/types.h>

#include "master/listen.h"

struct pt_config;

/* The environment that names the handed-over sockets and the pipe the new
 * master reports its readiness on. */
#define UPGRADE_ENV_LISTENERS	"PORTICO_LISTENERS"
#define UPGRADE_ENV_FD		"PORTICO_UPGRADE_FD"

/* ---- master/upgrade.c ------------------------------------------------ */

/*
 * At start, before getopt reorders <argv>: remembers the arguments and the
 * binary's absolute path (argv[0] made absolute against the working
 * directory or PATH, else /proc/self/exe), so that SIGUSR2 runs whatever
 * file is at that path then. Returns 0 or -ENOMEM. Master only.
 */
int	 upgrade_init(int argc, char *const argv[]);
/*
 * New side: when a previous master started this one, takes the sockets it
 * named (listen_inherit) and its status pipe out of the environment.
 * Returns true when started by an upgrade. Master only, once, before
 * listen_open.
 */
bool	 upgrade_take_env(void);
/* New side, on the way out before ready: <why> goes to the previous
 * master, which logs it (its error log may not be this one's). */
void	 upgrade_report_failure(const char *why);
/* The pid file this master wrote (NULL: none). */
void	 upgrade_set_pid_file(const char *path);
/* New side: the first generation accepts; tells the previous master so
 * (once; nothing when not started by an upgrade). */
void	 upgrade_report_ready(void);

/*
 * Old side, on SIGUSR2: renames the pid file to <pid_file>.oldbin, then
 * forks and execs the binary with the same arguments, every socket of
 * <ls> inherited and named in PORTICO_LISTENERS. Refused (logged) while
 * an upgrade runs, or while this master's own predecessor still runs.
 */
void	 upgrade_start(const struct pt_config *conf,
	    const struct listen_set *ls);
/* The status pipe from a starting new master, to poll; -1 when none. */
int	 upgrade_status_fd(void);
/* Reads what the new master said ("ready", or why its exec failed). */
void	 upgrade_on_status(void);
/*
 * True when <pid> was the new master: logs how it ended and, the upgrade
 * being over, gives the pid file back to this master.
 */
bool	 upgrade_reaped(pid_t pid, int status);
/* The new master while it runs (0: none): at exit this master leaves the
 * pid file and systemd's MAINPID to it. */
pid_t	 upgrade_successor(void);
/* The pid file to remove when this master exits: its own, or the .oldbin
 * one when a successor runs. NULL when there is none. */
const char *upgrade_exit_pid_file(void);
/* Closes the upgrade pipes in a freshly forked worker. */
void	 upgrade_close_in_child(void);

#endif
