/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The master's pid file: written at start-up (main.c) and when a reload
 * names another one (spawn.c), read by -s and by the start-up check.
 */
#ifndef PT_MASTER_PIDFILE_H
#define PT_MASTER_PIDFILE_H

#include <sys/types.h>

/* The pid in <path>; 0 when missing or unreadable. */
pid_t	 pidfile_read(const char *path);
/* Writes this process's pid to <path> (created 0644, truncated). 0 or
 * -errno. */
int	 pidfile_write(const char *path);

#endif /* PT_MASTER_PIDFILE_H */
