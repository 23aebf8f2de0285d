/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sd_notify without libsystemd: a notification is one datagram of
 * "KEY=value" lines sent to the AF_UNIX socket named by NOTIFY_SOCKET (a
 * path, or an abstract name when it starts with '@'). The master tells
 * systemd when its first generation of workers accepts (READY=1), when a
 * reload starts and ends (RELOADING=1, READY=1), that it stops
 * (STOPPING=1), and who the main process is after a binary upgrade
 * (MAINPID=). It does not implement the watchdog, the file descriptor
 * store or credentials passing.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "master/notify.h"
#include "common/log.h"

/* How long a notification may wait for room in systemd's queue. */
#define NOTIFY_WAIT_MS	200

static char	*notify_path;
static bool	 notify_warned;

void
notify_init(void)
{
	const char	*v = getenv("NOTIFY_SOCKET");

	free(notify_path);
	notify_path = NULL;
	notify_warned = false;
	if (v != NULL && v[0] != '\0' && (v[0] == '/' || v[0] == '@') &&
	    strlen(v) < sizeof(((struct sockaddr_un *)0)->sun_path))
		notify_path = strdup(v);
	unsetenv("NOTIFY_SOCKET");
}

const char *
notify_socket(void)
{
	return notify_path;
}

bool
notify_enabled(void)
{
	return notify_path != NULL;
}

unsigned long long
notify_monotonic_usec(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000;
}

void
notify_send(const char *fmt, ...)
{
	struct sockaddr_un	 sun;
	struct pollfd		 pfd;
	char			 msg[1024];
	va_list			 ap;
	socklen_t		 len;
	size_t			 n;
	int			 fd, rc;

	if (notify_path == NULL)
		return;
	va_start(ap, fmt);
	rc = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rc < 0)
		return;
	n = (size_t)rc < sizeof(msg) ? (size_t)rc : sizeof(msg) - 1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, notify_path, strlen(notify_path));
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(notify_path));
	/* An abstract name has no terminating NUL; a path counts its own. */
	if (sun.sun_path[0] == '@')
		sun.sun_path[0] = '\0';
	else
		len++;
	/* Never blocking: a receiver that does not read (its queue full)
	 * must not stop the master supervising. Connected, so that poll
	 * can wait a moment for room in that queue. */
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	rc = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sun, len);
	if (rc == 0 && (rc = (int)send(fd, msg, n, MSG_NOSIGNAL)) < 0 &&
	    errno == EAGAIN) {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, NOTIFY_WAIT_MS) == 1)
			rc = (int)send(fd, msg, n, MSG_NOSIGNAL);
		else
			errno = EAGAIN;
	}
	if (rc < 0 && !notify_warned) {
		/* Once: systemd gone, a full queue or a wrong path is not
		 * worth a line per reload. */
		notify_warned = true;
		pt_log_err(PT_LOG_WARNING, errno, "NOTIFY_SOCKET %s",
		    notify_path);
	}
	if (fd >= 0)
		close(fd);
}
