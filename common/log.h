/* SPDX-License-Identifier: BSD-2-Clause */
/* Error log: one line per event, to stderr or a file, master and worker. */
#ifndef PT_COMMON_LOG_H
#define PT_COMMON_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdnoreturn.h>
#include <sys/types.h>

#include "portico/module.h"

/* ---- common/log.c ---------------------------------------------------- */

/* Logs to stderr at level notice until log_open() says otherwise. */
void		log_set_level(int level);
int		log_level_parse(const char *name);
/* While on, lines also go to standard error: start-up failures must reach
 * the operator's terminal, not only a log file. */
void		log_set_tee(bool on);
/* "master" or "worker 3": shown on every line. Not copied. */
void		log_set_role(const char *role);
/*
 * Opens <path> ("stderr" for standard error) for appending and makes it the
 * log. Returns 0, or -errno with the old log still in place. When <owner> is
 * not (uid_t)-1 the file is chowned to it, so a worker that has dropped
 * privileges can reopen it later. Master and worker.
 */
int		log_open(const char *path, uid_t owner, gid_t group);
/* Reopens the current path (SIGUSR1). Returns 0 or -errno. */
int		log_reopen(void);
/* The descriptor lines go to (for dup2 onto stderr when daemonizing). */
int		log_fd(void);
/* True when a line at <level> would be written: lets a caller skip
 * formatting what nobody reads. */
bool		log_wants(int level);
/* pt_log with a fixed prefix after the role (a connection's id). */
void		log_vprefixed(int level, const char *prefix, const char *fmt,
		    va_list ap) __attribute__((format(printf, 3, 0)));
/* Logs at err and exits 1. Before the loop only. */
noreturn void	fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
