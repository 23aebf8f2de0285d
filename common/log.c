/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The error log. Every line is built in one stack buffer and written with a
 * single write() to a descriptor opened with O_APPEND, so lines from the
 * master and all workers never interleave mid-line. It is not the access
 * log: that is a module and must never block a worker.
 *
 * pt_log is one of the two calls a module's own threads may make, so the
 * line path uses no shared buffer (strerror_r, localtime_r, the stack),
 * and reopening swaps the file under the same descriptor number (dup3)
 * instead of closing it: a thread that read the number just before never
 * writes to a closed or reused descriptor.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static int		 log_fd_cur = 2;
static int		 log_min = PT_LOG_NOTICE;
static const char	*log_role = "master";
static char		*log_path;
static bool		 log_tee;
/* Lines logged before log_open (warnings while the configuration loads,
 * such as a certificate about to expire): stderr has them, and so does
 * the log file once it is open. Whole lines, the first ones that fit;
 * only the master logs that early. */
static char		 log_early[4096];
static size_t		 log_early_len;

static const char *const log_names[] = {
	[PT_LOG_ERR] = "error", [PT_LOG_WARNING] = "warn",
	[PT_LOG_NOTICE] = "notice", [PT_LOG_INFO] = "info",
	[PT_LOG_DEBUG] = "debug",
};

void
log_set_level(int level)
{
	log_min = level;
}

int
log_level_parse(const char *name)
{
	int	 i;

	for (i = PT_LOG_ERR; i <= PT_LOG_DEBUG; i++)
		if (strcasecmp(name, log_names[i]) == 0)
			return i;
	if (strcasecmp(name, "warning") == 0)
		return PT_LOG_WARNING;
	return -1;
}

static bool
log_same_file(int fd1, int fd2)
{
	struct stat	 a, b;

	return fstat(fd1, &a) == 0 && fstat(fd2, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Not when standard error is the log file itself (started with 2>> the
 * same file, or a binary upgrade inheriting such a stderr): each line
 * would be there twice. */
void
log_set_tee(bool on)
{
	log_tee = on && !(log_fd_cur != 2 && log_same_file(log_fd_cur, 2));
}

void
log_set_role(const char *role)
{
	log_role = role;
}

int
log_fd(void)
{
	return log_fd_cur;
}

static int
log_open_path(const char *path, uid_t owner, gid_t group)
{
	int	 fd;

	if (strcmp(path, "stderr") == 0)
		return 2;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (owner != (uid_t)-1 && fchown(fd, owner, group) < 0) {
		int	 err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

int
log_open(const char *path, uid_t owner, gid_t group)
{
	char	*copy;
	int	 fd;

	fd = log_open_path(path, owner, group);
	if (fd < 0)
		return fd;
	if ((copy = strdup(path)) == NULL) {
		if (fd != 2)
			close(fd);
		return -ENOMEM;
	}
	if (log_fd_cur != 2)
		close(log_fd_cur);
	if (log_path == NULL && fd != 2 && log_early_len > 0 &&
	    !log_same_file(fd, 2) && write(fd, log_early, log_early_len) < 0) {
		/* Nowhere better to say so: they are on stderr already. */
	}
	log_early_len = 0;
	free(log_path);
	log_path = copy;
	log_fd_cur = fd;
	return 0;
}

int
log_reopen(void)
{
	int	 fd;

	if (log_path == NULL || strcmp(log_path, "stderr") == 0)
		return 0;
	fd = log_open_path(log_path, (uid_t)-1, (gid_t)-1);
	if (fd < 0)
		return fd;
	if (log_fd_cur == 2) {
		log_fd_cur = fd;
		return 0;
	}
	if (dup3(fd, log_fd_cur, O_CLOEXEC) < 0) {
		int	 err = errno;

		close(fd);
		return -err;
	}
	close(fd);
	return 0;
}

/* Appends to line[<n>..<cap - 1>] and returns the new length, clamped:
 * a long message is cut, never lost whole. */
static size_t __attribute__((format(printf, 4, 0)))
log_vappend(char *line, size_t n, size_t cap, const char *fmt, va_list ap)
{
	int	 r;

	if (n >= cap - 1)
		return n;
	r = vsnprintf(line + n, cap - n, fmt, ap);
	if (r < 0)
		return n;
	return n + (size_t)r < cap - 1 ? n + (size_t)r : cap - 1;
}

static size_t __attribute__((format(printf, 4, 5)))
log_append(char *line, size_t n, size_t cap, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	n = log_vappend(line, n, cap, fmt, ap);
	va_end(ap);
	return n;
}

static void __attribute__((format(printf, 4, 0)))
log_vline(int level, int err, const char *prefix, const char *fmt,
    va_list ap)
{
	/* Room for the master's totals line with every module counter. */
	char		 line[4096];
	char		 ebuf[128];
	struct timespec	 ts;
	struct tm	 tm;
	size_t		 n;

	if (level > log_min)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	/* One byte stays free for the newline. */
	n = strftime(line, sizeof(line) - 1, "%Y/%m/%d %H:%M:%S", &tm);
	n = log_append(line, n, sizeof(line) - 1, " [%s] %d %s: %s",
	    log_names[level], (int)getpid(), log_role, prefix ? prefix : "");
	n = log_vappend(line, n, sizeof(line) - 1, fmt, ap);
	if (err != 0)
		n = log_append(line, n, sizeof(line) - 1, ": %s",
		    strerror_r(err, ebuf, sizeof(ebuf)));
	line[n++] = '\n';
	if (log_path == NULL && log_early_len + n <= sizeof(log_early)) {
		memcpy(log_early + log_early_len, line, n);
		log_early_len += n;
	}
	/* A failed log write has nowhere better to be reported. */
	if (write(log_fd_cur, line, n) < 0)
		return;
	if (log_tee && log_fd_cur != 2 && write(2, line, n) < 0)
		return;
}

void
pt_log(int level, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vline(level, 0, NULL, fmt, ap);
	va_end(ap);
}

void
pt_log_err(int level, int err, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vline(level, err, NULL, fmt, ap);
	va_end(ap);
}

bool
log_wants(int level)
{
	return level <= log_min;
}

void
log_vprefixed(int level, const char *prefix, const char *fmt, va_list ap)
{
	log_vline(level, 0, prefix, fmt, ap);
}

noreturn void
fatal(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vline(PT_LOG_ERR, 0, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}
