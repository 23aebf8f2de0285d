/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Signals as data: every signal the master acts on is blocked and read
 * from a signalfd in the supervision loop, so nothing runs in a handler
 * and no signal is lost between two checks.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "master/signal.h"

static int	 signal_fd = -1;

int
signal_setup(void)
{
	sigset_t	 set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (signal_fd < 0)
		return -errno;
	return signal_fd;
}

void
signal_read(int fd, struct signal_flags *flags)
{
	struct signalfd_siginfo	 si;

	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			flags->reload = true;
			break;
		case SIGQUIT:
			flags->quit = true;
			break;
		case SIGTERM:
		case SIGINT:
			flags->terminate = true;
			break;
		case SIGUSR1:
			flags->reopen = true;
			break;
		case SIGUSR2:
			flags->upgrade = true;
			break;
		case SIGCHLD:
			flags->child = true;
			break;
		}
	}
}

void
signal_close_in_child(void)
{
	if (signal_fd >= 0)
		close(signal_fd);
	signal_fd = -1;
}
