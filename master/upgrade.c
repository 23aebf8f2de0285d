/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Binary upgrade, nginx style. On SIGUSR2 the master renames its pid file
 * to <pid_file>.oldbin and forks a child that execs the binary at the path
 * it was started from, with the same arguments. Every listening socket is
 * inherited (close-on-exec cleared on those only) and named in
 * PORTICO_LISTENERS as "fd:address:slot;..."; a pipe named by
 * PORTICO_UPGRADE_FD carries the new master's "ready" (its first
 * generation of workers accepts) or the reason its exec failed.
 *
 * The new master loads its own configuration, adopts for each listener
 * address and worker slot the inherited socket instead of binding one
 * (the kernel's queue, and the SO_REUSEPORT group, stay the same), closes
 * what it did not adopt, forks its workers and writes the pid file. Both
 * generations then accept on the same sockets; nothing is refused or
 * reset. The old master keeps serving until the operator sends it
 * SIGQUIT (it drains, leaves the pid file and systemd's MAINPID to the new
 * one), or rolls back by stopping the new one: when the new master dies,
 * before or after it was ready, the old one logs why and takes its pid
 * file back. This file does not decide when to hand over: the operator
 * does, after checking the new binary serves.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "master/upgrade.h"
#include "common/conf_types.h"
#include "common/log.h"
#include "master/notify.h"

extern char	**environ;

enum upgrade_state {
	UPGRADE_NONE,
	UPGRADE_STARTING,	/* forked, not ready yet */
	UPGRADE_READY,		/* the new master's workers accept */
};

static char		 *upgrade_path;		/* absolute binary path */
static char		**upgrade_argv;
static char		 *upgrade_pidf;		/* as written at start */
static char		 *upgrade_oldbin;	/* <pid_file>.oldbin */
static bool		  upgrade_renamed;	/* pid file is .oldbin now */

/* Old side: the new master. */
static enum upgrade_state upgrade_st;
static pid_t		  upgrade_pid;
static int		  upgrade_rd = -1;
static char		  upgrade_why[256];	/* from the new side */

/* New side: the pipe to the previous master, and who that was. */
static int		  upgrade_wr = -1;
static pid_t		  upgrade_parent;

/* <argv0> as an absolute path: against the working directory when it has
 * a slash, else the first executable of that name in PATH. NULL: not
 * found. */
static char *
upgrade_resolve(const char *argv0)
{
	char		 cwd[PATH_MAX], *buf = NULL;
	const char	*path, *p, *colon;
	size_t		 n;

	if (argv0[0] == '/')
		return strdup(argv0);
	if (strchr(argv0, '/') != NULL) {
		/* "./portico" reads better in the log as <cwd>/portico. */
		while (argv0[0] == '.' && argv0[1] == '/')
			argv0 += 2;
		if (getcwd(cwd, sizeof(cwd)) == NULL ||
		    asprintf(&buf, "%s/%s", cwd, argv0) < 0)
			return NULL;
		return buf;
	}
	if ((path = getenv("PATH")) == NULL)
		return NULL;
	for (p = path; ; p = colon + 1) {
		colon = strchr(p, ':');
		n = colon != NULL ? (size_t)(colon - p) : strlen(p);
		/* An empty PATH entry means the working directory. */
		if (asprintf(&buf, "%.*s%s%s", (int)n, n > 0 ? p : ".",
		    "/", argv0) < 0)
			return NULL;
		if (access(buf, X_OK) == 0) {
			if (buf[0] != '/') {
				char	*abs = upgrade_resolve(buf);

				free(buf);
				return abs;
			}
			return buf;
		}
		free(buf);
		buf = NULL;
		if (colon == NULL)
			return NULL;
	}
}

int
upgrade_init(int argc, char *const argv[])
{
	char	 self[PATH_MAX];
	ssize_t	 n;
	int	 i;

	if ((upgrade_argv = calloc((size_t)argc + 1, sizeof(char *))) == NULL)
		return -ENOMEM;
	for (i = 0; i < argc; i++)
		if ((upgrade_argv[i] = strdup(argv[i])) == NULL)
			return -ENOMEM;
	if (argc > 0)
		upgrade_path = upgrade_resolve(argv[0]);
	if (upgrade_path == NULL &&
	    (n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		upgrade_path = strdup(self);
	}
	return 0;
}

bool
upgrade_take_env(void)
{
	const char	*ls = getenv(UPGRADE_ENV_LISTENERS);
	const char	*fd = getenv(UPGRADE_ENV_FD);
	char		*end;
	long		 v;
	int		 rc;

	if (fd != NULL) {
		v = strtol(fd, &end, 10);
		if (*end == '\0' && v > 2 && v < INT_MAX &&
		    fcntl((int)v, F_SETFD, FD_CLOEXEC) == 0) {
			upgrade_wr = (int)v;
			upgrade_parent = getppid();
		}
	}
	if (ls != NULL && (rc = listen_inherit(ls)) >= 0)
		pt_log(PT_LOG_NOTICE, "binary upgrade: %d listening sockets "
		    "inherited from pid %d", rc, (int)getppid());
	else if (ls != NULL)
		pt_log_err(PT_LOG_ERR, -rc, "binary upgrade: inheriting "
		    "sockets");
	unsetenv(UPGRADE_ENV_LISTENERS);
	unsetenv(UPGRADE_ENV_FD);
	return ls != NULL || upgrade_wr >= 0;
}

void
upgrade_report_failure(const char *why)
{
	const char	*fd = upgrade_wr < 0 ? getenv(UPGRADE_ENV_FD) : NULL;
	int		 w = upgrade_wr;

	if (fd != NULL)
		w = atoi(fd);
	if (w <= 2 || fcntl(w, F_GETFD) < 0)
		return;
	if (write(w, why, strnlen(why, sizeof(upgrade_why) - 1)) < 0)
		pt_log_err(PT_LOG_WARNING, errno, "binary upgrade: telling the "
		    "previous master why this one stops");
}

void
upgrade_set_pid_file(const char *path)
{
	free(upgrade_pidf);
	free(upgrade_oldbin);
	upgrade_pidf = upgrade_oldbin = NULL;
	if (path == NULL)
		return;
	upgrade_pidf = strdup(path);
	if (asprintf(&upgrade_oldbin, "%s.oldbin", path) < 0)
		upgrade_oldbin = NULL;
}

void
upgrade_report_ready(void)
{
	if (upgrade_wr < 0)
		return;
	if (write(upgrade_wr, "R", 1) != 1)
		pt_log_err(PT_LOG_WARNING, errno, "binary upgrade: telling "
		    "pid %d that this master is ready", (int)upgrade_parent);
	close(upgrade_wr);
	upgrade_wr = -1;
}

/* The environment for the new binary: ours without the upgrade's own
 * variables, plus them and NOTIFY_SOCKET (taken out of ours at start). */
static char **
upgrade_env(const char *listeners, int fd)
{
	char	**env;
	size_t	  n = 0, i, j = 0;

	while (environ[n] != NULL)
		n++;
	if ((env = calloc(n + 4, sizeof(char *))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], UPGRADE_ENV_LISTENERS "=",
		    sizeof(UPGRADE_ENV_LISTENERS)) != 0 &&
		    strncmp(environ[i], UPGRADE_ENV_FD "=",
		    sizeof(UPGRADE_ENV_FD)) != 0 &&
		    strncmp(environ[i], "NOTIFY_SOCKET=", 14) != 0)
			env[j++] = environ[i];
	if (asprintf(&env[j++], "%s=%s", UPGRADE_ENV_LISTENERS,
	    listeners) < 0 ||
	    asprintf(&env[j++], "%s=%d", UPGRADE_ENV_FD, fd) < 0 ||
	    (notify_socket() != NULL && asprintf(&env[j++], "NOTIFY_SOCKET=%s",
	    notify_socket()) < 0)) {
		/* Only the child, about to exec or exit, uses it. */
		return NULL;
	}
	return env;
}

/* In the forked child: never returns. */
static noreturn void
upgrade_exec(const struct listen_set *ls, const char *listeners, int fd)
{
	char	**env;
	char	  msg[sizeof(upgrade_why)];
	int	  n;

	listen_set_inheritable(ls);
	fcntl(fd, F_SETFD, 0);
	if ((env = upgrade_env(listeners, fd)) == NULL) {
		n = snprintf(msg, sizeof(msg), "out of memory");
	} else {
		execve(upgrade_path, upgrade_argv, env);
		n = snprintf(msg, sizeof(msg), "exec %s: %s", upgrade_path,
		    strerror(errno));
	}
	if (n > 0 && write(fd, msg, (size_t)n) < 0)
		_exit(126);
	_exit(127);
}

/* The pid file back to its own name: the upgrade is over or never was. */
static void
upgrade_restore_pid_file(void)
{
	if (!upgrade_renamed)
		return;
	upgrade_renamed = false;
	if (rename(upgrade_oldbin, upgrade_pidf) < 0)
		pt_log_err(PT_LOG_ERR, errno, "rename %s to %s", upgrade_oldbin,
		    upgrade_pidf);
}

void
upgrade_start(const struct pt_config *conf, const struct listen_set *ls)
{
	char	*listeners;
	int	 p[2];
	pid_t	 pid;

	if (upgrade_st != UPGRADE_NONE) {
		pt_log(PT_LOG_WARNING, "binary upgrade: already running as pid "
		    "%d: SIGUSR2 ignored", (int)upgrade_pid);
		return;
	}
	if (upgrade_parent > 0 && getppid() == upgrade_parent) {
		pt_log(PT_LOG_WARNING, "binary upgrade: the previous master "
		    "(pid %d) still runs: SIGUSR2 ignored until it exits "
		    "(SIGQUIT it first)", (int)upgrade_parent);
		return;
	}
	if (upgrade_path == NULL) {
		pt_log(PT_LOG_ERR, "binary upgrade: the binary's path is "
		    "unknown: SIGUSR2 ignored");
		return;
	}
	/* Before the fork: the new master refuses to start while the pid
	 * file names a live portico. */
	upgrade_renamed = false;
	if (upgrade_pidf != NULL && upgrade_oldbin != NULL) {
		if (rename(upgrade_pidf, upgrade_oldbin) == 0)
			upgrade_renamed = true;
		else if (errno != ENOENT) {
			pt_log_err(PT_LOG_ERR, errno, "binary upgrade: rename "
			    "%s to %s", upgrade_pidf, upgrade_oldbin);
			return;
		}
	}
	if ((listeners = listen_fmt_handover(conf, ls)) == NULL ||
	    pipe2(p, O_CLOEXEC) < 0) {
		pt_log_err(PT_LOG_ERR, listeners ? errno : ENOMEM,
		    "binary upgrade");
		free(listeners);
		upgrade_restore_pid_file();
		return;
	}
	if ((pid = fork()) < 0) {
		pt_log_err(PT_LOG_ERR, errno, "binary upgrade: fork");
		close(p[0]);
		close(p[1]);
		free(listeners);
		upgrade_restore_pid_file();
		return;
	}
	if (pid == 0) {
		close(p[0]);
		upgrade_exec(ls, listeners, p[1]);
	}
	close(p[1]);
	free(listeners);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	upgrade_rd = p[0];
	upgrade_pid = pid;
	upgrade_st = UPGRADE_STARTING;
	upgrade_why[0] = '\0';
	pt_log(PT_LOG_NOTICE, "binary upgrade: started %s as pid %d",
	    upgrade_path, (int)pid);
	notify_send("STATUS=binary upgrade: new master pid %d starting",
	    (int)pid);
}

int
upgrade_status_fd(void)
{
	return upgrade_rd;
}

void
upgrade_on_status(void)
{
	char	 buf[sizeof(upgrade_why)];
	ssize_t	 n;

	if (upgrade_rd < 0)
		return;
	n = read(upgrade_rd, buf, sizeof(buf) - 1);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0 && buf[0] == 'R') {
		upgrade_st = UPGRADE_READY;
		pt_log(PT_LOG_NOTICE, "binary upgrade: new master pid %d is "
		    "ready; SIGQUIT this master (pid %d) to finish, or stop "
		    "pid %d to go back", (int)upgrade_pid, (int)getpid(),
		    (int)upgrade_pid);
		notify_send("STATUS=binary upgrade: new master pid %d ready, "
		    "old master pid %d still serving", (int)upgrade_pid,
		    (int)getpid());
	} else if (n > 0) {
		buf[n] = '\0';
		snprintf(upgrade_why, sizeof(upgrade_why), "%s", buf);
	}
	/* One message per pipe: then EOF, or the exit comes by SIGCHLD. */
	close(upgrade_rd);
	upgrade_rd = -1;
}

bool
upgrade_reaped(pid_t pid, int status)
{
	char	 how[64];

	if (upgrade_st == UPGRADE_NONE || pid != upgrade_pid)
		return false;
	if (upgrade_rd >= 0)
		upgrade_on_status();
	if (WIFSIGNALED(status))
		snprintf(how, sizeof(how), "was killed by signal %d",
		    WTERMSIG(status));
	else
		snprintf(how, sizeof(how), "exited with status %d",
		    WEXITSTATUS(status));
	if (upgrade_st == UPGRADE_STARTING) {
		pt_log(PT_LOG_ERR, "binary upgrade failed: new master pid %d "
		    "%s before it was ready%s%s%s; pid %d keeps serving with "
		    "the old binary", (int)pid, how,
		    upgrade_why[0] ? " (" : " (see its messages above)",
		    upgrade_why, upgrade_why[0] ? ")" : "", (int)getpid());
		notify_send("STATUS=binary upgrade failed: new master %s",
		    how);
	} else {
		pt_log(PT_LOG_WARNING, "binary upgrade: new master pid %d %s; "
		    "pid %d serves on and takes back the pid file", (int)pid,
		    how, (int)getpid());
		notify_send("STATUS=binary upgrade undone: new master %s",
		    how);
	}
	upgrade_restore_pid_file();
	if (upgrade_rd >= 0)
		close(upgrade_rd);
	upgrade_rd = -1;
	upgrade_st = UPGRADE_NONE;
	upgrade_pid = 0;
	return true;
}

pid_t
upgrade_successor(void)
{
	return upgrade_st != UPGRADE_NONE ? upgrade_pid : 0;
}

const char *
upgrade_exit_pid_file(void)
{
	return upgrade_successor() > 0 ? upgrade_oldbin : upgrade_pidf;
}

void
upgrade_close_in_child(void)
{
	if (upgrade_rd >= 0)
		close(upgrade_rd);
	if (upgrade_wr >= 0)
		close(upgrade_wr);
	upgrade_rd = upgrade_wr = -1;
}
