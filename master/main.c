/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * portico's entry point: the command line, then the master's start-up in
 * the order the design requires: load and validate everything, open the
 * log, bind every listener, map the counters, initialise modules,
 * daemonize, write the pid file, and hand over to the supervisor. Any
 * failure before the fork stops here with a message naming its cause.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/counters.h"
#include "common/log.h"
#include "master/conf.h"
#include "common/modlife.h"
#include "master/listen.h"
#include "master/notify.h"
#include "master/pidfile.h"
#include "master/signal.h"
#include "master/spawn.h"
#include "master/upgrade.h"

#define MAIN_DEFAULT_CONF	PT_SYSCONFDIR "/portico/portico.conf"

#define MAIN_USAGE	"usage: portico [-fhtV] [-c file] " \
			"[-s reload|stop|quit|reopen|upgrade]\n"

static noreturn void
main_usage(void)
{
	fputs(MAIN_USAGE, stderr);
	exit(2);
}

/* -h: what nginx -h gives, on stdout, exit 0. */
static void
main_help(void)
{
	printf(MAIN_USAGE
	    "  -c file  configuration file (default %s)\n"
	    "  -f       stay in the foreground\n"
	    "  -h       this help\n"
	    "  -s sig   send a signal to the running master (its pid_file):\n"
	    "           reload (HUP), stop (TERM), quit (QUIT, graceful),\n"
	    "           reopen (USR1, log files), upgrade (USR2, new binary)\n"
	    "  -t       check the configuration and exit\n"
	    "  -V       version, module ABI and modules, and exit\n",
	    MAIN_DEFAULT_CONF);
}

static void
main_version(void)
{
	DIR		*d;
	struct dirent	*e;
	size_t		 n;

	printf("portico %s (module ABI %d.%d)\n", PACKAGE_VERSION,
	    PT_ABI_MAJOR, PT_ABI_MINOR);
	printf("configuration: %s\nmodule_dir: %s\nmodules:", MAIN_DEFAULT_CONF,
	    PT_MODULEDIR);
	if ((d = opendir(PT_MODULEDIR)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			n = strlen(e->d_name);
			if (n > 3 && strcmp(e->d_name + n - 3, ".so") == 0)
				printf(" %.*s", (int)(n - 3), e->d_name);
		}
		closedir(d);
	}
	printf("\n");
}


/* True when <pid> is a live portico: a stale pid file must not stop a
 * start, and a live master must not get a twin sharing its ports. */
static bool
main_is_portico(pid_t pid)
{
	char	 path[64], comm[32] = "";
	FILE	*f;

	if (pid <= 0 || kill(pid, 0) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return true;
	if (fgets(comm, sizeof(comm), f) == NULL)
		comm[0] = '\0';
	fclose(f);
	return strncmp(comm, "portico", 7) == 0;
}

static int
main_signal(const struct pt_config *conf, const char *what)
{
	static const struct { const char *name; int sig; } sigs[] = {
		{ "reload", SIGHUP }, { "stop", SIGTERM },
		{ "quit", SIGQUIT }, { "reopen", SIGUSR1 },
		{ "upgrade", SIGUSR2 },
	};
	pid_t	 pid;
	size_t	 i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (strcmp(what, sigs[i].name) == 0)
			break;
	if (i == sizeof(sigs) / sizeof(sigs[0])) {
		fprintf(stderr, "portico: -s %s: expected reload, stop, quit, "
		    "reopen or upgrade\n", what);
		return 2;
	}
	if (conf->pid_file == NULL) {
		fprintf(stderr, "portico: -s needs pid_file in %s\n",
		    conf->file);
		return 1;
	}
	if ((pid = pidfile_read(conf->pid_file)) <= 0) {
		fprintf(stderr, "portico: %s: no pid: is portico running?\n",
		    conf->pid_file);
		return 1;
	}
	/* A stale file's pid may be anyone's by now. */
	if (!main_is_portico(pid)) {
		fprintf(stderr, "portico: %s names pid %d, which is not a "
		    "running portico (a stale pid file?): nothing signalled\n",
		    conf->pid_file, (int)pid);
		return 1;
	}
	if (kill(pid, sigs[i].sig) < 0) {
		fprintf(stderr, "portico: kill %d: %s\n", (int)pid,
		    strerror(errno));
		return 1;
	}
	return 0;
}

/*
 * Detaches from the terminal. The parent waits until the daemon reports
 * that it runs (pid file written), so "portico && next-step" and systemd's
 * Type=forking see a failure as a failure. Returns the descriptor the
 * daemon writes its "ready" byte to.
 */
static int
main_daemonize(void)
{
	pid_t	 pid;
	int	 fd, ready[2];
	char	 c;

	if (pipe2(ready, O_CLOEXEC) < 0)
		fatal("pipe: %s", strerror(errno));
	if ((pid = fork()) < 0)
		fatal("fork: %s", strerror(errno));
	if (pid > 0) {
		close(ready[1]);
		_exit(read(ready[0], &c, 1) == 1 ? 0 : 1);
	}
	close(ready[0]);
	if (setsid() < 0)
		fatal("setsid: %s", strerror(errno));
	if ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		fatal("/dev/null: %s", strerror(errno));
	dup2(fd, 0);
	dup2(fd, 1);
	/* Standard error follows the error log, or goes nowhere. */
	dup2(log_fd() != 2 ? log_fd() : fd, 2);
	close(fd);
	/* No chdir("/"): relative paths in the configuration keep meaning
	 * what they meant when it was checked, on every reload too. */
	return ready[1];
}

/* Each connection costs descriptors; the hard limit is what the operator
 * allowed, the soft one is only a default. */
static void
main_raise_nofile(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			pt_log_err(PT_LOG_WARNING, errno, "setrlimit NOFILE");
	}
}

int
main(int argc, char *argv[])
{
	struct pt_config	*conf;
	struct listen_set	 ls;
	const char		*file = MAIN_DEFAULT_CONF, *sig = NULL;
	char			 err[CONF_ERRSZ];
	bool			 test = false, foreground = false, upgraded;
	int			 ch, sigfd, rc, ready = -1;

	/* Before getopt reorders argv: a binary upgrade runs it again. */
	if (upgrade_init(argc, argv) < 0) {
		fprintf(stderr, "portico: out of memory\n");
		return 1;
	}
	/* Before any child exists: only the master speaks to systemd. */
	notify_init();
	while ((ch = getopt(argc, argv, "c:fhs:tV")) != -1) {
		switch (ch) {
		case 'c':
			file = optarg;
			break;
		case 'f':
			foreground = true;
			break;
		case 'h':
			main_help();
			return 0;
		case 's':
			sig = optarg;
			break;
		case 't':
			test = true;
			break;
		case 'V':
			main_version();
			return 0;
		default:
			main_usage();
		}
	}
	if (optind != argc)
		main_usage();

	if ((conf = conf_load(file, err)) == NULL) {
		fprintf(stderr, "portico: %s\n", err);
		upgrade_report_failure(err);
		return 1;
	}
	if (test) {
		fprintf(stderr, "portico: %s: configuration is valid\n", file);
		conf_free(conf);
		return 0;
	}
	if (sig != NULL) {
		rc = main_signal(conf, sig);
		conf_free(conf);
		return rc;
	}

	if ((rc = log_open(conf->error_log, conf->uid, conf->gid)) < 0) {
		fprintf(stderr, "portico: error_log %s: %s\n", conf->error_log,
		    strerror(-rc));
		return 1;
	}
	log_set_level(conf->log_level);
	log_set_tee(true);
	if ((conf->user != NULL || conf->group != NULL) && geteuid() != 0)
		pt_log(PT_LOG_WARNING, "not started as root: \"user\" and "
		    "\"group\" are ignored");
	if (conf->pid_file != NULL &&
	    main_is_portico(pidfile_read(conf->pid_file)))
		fatal("already running as pid %d (%s)",
		    (int)pidfile_read(conf->pid_file), conf->pid_file);
	main_raise_nofile();
	if ((sigfd = signal_setup()) < 0)
		fatal("signalfd: %s", strerror(-sigfd));
	/* Started by a binary upgrade: the previous master's sockets are
	 * adopted instead of bound, and this one is already detached. */
	upgraded = upgrade_take_env();
	if (listen_open(conf, &ls, NULL, NULL, err, sizeof(err)) < 0) {
		upgrade_report_failure(err);
		fatal("%s", err);
	}
	if (upgraded)
		pt_log(PT_LOG_NOTICE, "binary upgrade: %d sockets adopted",
		    listen_inherit_done());
	if ((rc = counters_map(CONF_MAX_WORKERS)) < 0)
		fatal("mapping counters: %s", strerror(-rc));
	if (modlife_init_master(conf, err, sizeof(err)) < 0)
		fatal("%s", err);
	if (!foreground) {
		log_set_tee(false);
		if (!upgraded)
			ready = main_daemonize();
	}
	if (conf->pid_file != NULL && (rc = pidfile_write(conf->pid_file)) < 0)
		fatal("pid_file %s: %s", conf->pid_file, strerror(-rc));
	upgrade_set_pid_file(conf->pid_file);
	if (ready >= 0) {
		if (write(ready, "", 1) != 1)
			pt_log(PT_LOG_WARNING, "start-up: parent went away");
		close(ready);
	}

	log_set_tee(false);
	rc = spawn_run(conf, &ls, sigfd);
	/* Its own pid file, or the .oldbin one when a new binary took over. */
	if (upgrade_exit_pid_file() != NULL)
		unlink(upgrade_exit_pid_file());
	return rc;
}
