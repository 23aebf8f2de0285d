/* SPDX-License-Identifier: BSD-2-Clause */
/* The master's signals, read from a signalfd in its supervision loop. */
#ifndef PT_MASTER_SIGNAL_H
#define PT_MASTER_SIGNAL_H

#include <stdbool.h>

struct signal_flags {
	bool	 reload;	/* SIGHUP */
	bool	 quit;		/* SIGQUIT: graceful */
	bool	 terminate;	/* SIGTERM, SIGINT: fast */
	bool	 reopen;	/* SIGUSR1 */
	bool	 upgrade;	/* SIGUSR2: exec the binary again */
	bool	 child;		/* SIGCHLD */
};

/* ---- master/signal.c ------------------------------------------------- */

/*
 * Blocks the master's signals (children inherit the mask, so a worker
 * cannot die of SIGHUP before it sets up its own handling), ignores
 * SIGPIPE, and returns a signalfd for them, or -errno.
 */
int	 signal_setup(void);
/* Reads every pending signal from <fd> into <flags> (ORed in). */
void	 signal_read(int fd, struct signal_flags *flags);
/* Closes the master's signalfd in a freshly forked child. */
void	 signal_close_in_child(void);

#endif
