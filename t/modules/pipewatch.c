/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pipewatch: a test-only module that watches a descriptor of its own on
 * the worker's loop, to prove pt_io_start/pt_io_modify/pt_io_stop.
 *
 *	modules = ( { name = "pipewatch";
 *		      interval_ms = 50;	# a tick written every interval
 *		      ticks = 6;	# how many
 *		      pause_at = 3;	# after reading this tick, stop
 *					# reading for 3 intervals
 *		    } );
 *
 * init_worker makes a non-blocking pipe and watches its read end
 * (EPOLLIN). A timer writes "tick <n>\n" to the write end. The io
 * callback reads whatever is there and logs each tick. After tick
 * <pause_at> it sets the interest to 0 (pt_io_modify): the ticks written
 * meanwhile stay in the pipe, unread, until a timer sets EPOLLIN again,
 * so the log shows them only after "resumed". exit_worker stops the
 * timers and the io, then closes the pipe.
 *
 * Error log lines (notice):
 *	pipewatch: read tick=<n> worker=<id>
 *	pipewatch: paused after tick=<n>  /  pipewatch: resumed
 *	pipewatch: stopped worker=<id> read=<n>
 * Counter in the master's totals: pipewatch_ticks (ticks read).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "portico/module.h"

struct pw_conf {
	unsigned	 interval_ms;
	unsigned	 ticks;
	unsigned	 pause_at;
	int		 ctr_ticks;
};

/* Worker state. */
static struct pt_io	 pw_io;
static struct pt_timer	 pw_tick_timer;
static struct pt_timer	 pw_resume_timer;
static int		 pw_fds[2] = { -1, -1 };
static unsigned		 pw_written, pw_read;
static char		 pw_partial[64];
static size_t		 pw_partial_len;
static int		 pw_worker;

static int
pw_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct pw_conf	*pc;
	int		 v;

	if ((pc = calloc(1, sizeof(*pc))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	pc->interval_ms = 50;
	pc->ticks = 6;
	pc->pause_at = 3;
	if (config_setting_lookup_int(node, "interval_ms", &v) && v > 0)
		pc->interval_ms = (unsigned)v;
	if (config_setting_lookup_int(node, "ticks", &v) && v >= 0)
		pc->ticks = (unsigned)v;
	if (config_setting_lookup_int(node, "pause_at", &v) && v >= 0)
		pc->pause_at = (unsigned)v;
	if ((pc->ctr_ticks = pt_counter_register("pipewatch_ticks")) < 0) {
		free(pc);
		*errstr = "pt_counter_register failed";
		return -1;
	}
	mc->ctx = pc;
	return 0;
}

static void
pw_conf_free(void *ctx)
{
	free(ctx);
}

static void
pw_on_resume(struct pt_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	pt_log(PT_LOG_NOTICE, "pipewatch: resumed");
	if (pt_io_modify(&pw_io, EPOLLIN) < 0)
		pt_log(PT_LOG_ERR, "pipewatch: pt_io_modify EPOLLIN failed");
}

/* One "tick <n>" line, complete. */
static void
pw_line(struct pw_conf *pc, const char *line)
{
	unsigned	 n;

	n = (unsigned)strtoul(line + 5, NULL, 10);
	pw_read++;
	pt_counter_add(pc->ctr_ticks, 1);
	pt_log(PT_LOG_NOTICE, "pipewatch: read tick=%u worker=%d", n,
	    pw_worker);
	if (n == pc->pause_at && pc->pause_at > 0) {
		pt_log(PT_LOG_NOTICE, "pipewatch: paused after tick=%u", n);
		if (pt_io_modify(&pw_io, 0) < 0)
			pt_log(PT_LOG_ERR, "pipewatch: pt_io_modify 0 failed");
		pt_timer_start(&pw_resume_timer, 3 * pc->interval_ms,
		    pw_on_resume, pc);
	}
}

static void
pw_on_readable(struct pt_io *io, uint32_t events, void *arg)
{
	char	 c;

	(void)events;
	/* At most one line per event, a byte at a time: the io is level-
	 * triggered, so the rest comes with the next event, and a pause
	 * (interest 0) after a line leaves every later line in the pipe. */
	while (read(io->fd, &c, 1) == 1) {
		if (c != '\n') {
			if (pw_partial_len < sizeof(pw_partial) - 1)
				pw_partial[pw_partial_len++] = c;
			continue;
		}
		pw_partial[pw_partial_len] = '\0';
		pw_partial_len = 0;
		if (strncmp(pw_partial, "tick ", 5) == 0)
			pw_line(arg, pw_partial);
		return;
	}
}

static void
pw_on_tick(struct pt_timer *t, void *arg)
{
	struct pw_conf	*pc = arg;
	char		 line[32];
	int		 n;

	n = snprintf(line, sizeof(line), "tick %u\n", ++pw_written);
	if (write(pw_fds[1], line, (size_t)n) != n)
		pt_log_err(PT_LOG_ERR, errno, "pipewatch: write");
	if (pw_written < pc->ticks)
		pt_timer_start(t, pc->interval_ms, pw_on_tick, pc);
}

static int
pw_init_worker(struct pt_worker *w, void *ctx)
{
	struct pw_conf	*pc = ctx;
	int		 rc;

	pw_worker = pt_worker_id(w);
	if (pipe2(pw_fds, O_NONBLOCK | O_CLOEXEC) < 0) {
		pt_log_err(PT_LOG_ERR, errno, "pipewatch: pipe2");
		return -1;
	}
	memset(&pw_io, 0, sizeof(pw_io));
	if ((rc = pt_io_start(&pw_io, pw_fds[0], EPOLLIN, pw_on_readable,
	    pc)) < 0) {
		pt_log_err(PT_LOG_ERR, -rc, "pipewatch: pt_io_start");
		return -1;
	}
	if (pc->ticks > 0)
		pt_timer_start(&pw_tick_timer, pc->interval_ms, pw_on_tick,
		    pc);
	return 0;
}

static void
pw_exit_worker(struct pt_worker *w, void *ctx)
{
	(void)ctx;
	pt_timer_stop(&pw_tick_timer);
	pt_timer_stop(&pw_resume_timer);
	pt_io_stop(&pw_io);
	if (pw_fds[0] >= 0)
		close(pw_fds[0]);
	if (pw_fds[1] >= 0)
		close(pw_fds[1]);
	pw_fds[0] = pw_fds[1] = -1;
	pt_log(PT_LOG_NOTICE, "pipewatch: stopped worker=%d read=%u",
	    pt_worker_id(w), pw_read);
}

static const struct pt_hook pw_hooks[] = {
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_pipewatch = {
	PT_MODULE_INIT,
	.name = "pipewatch",
	.conf = pw_conf,
	.conf_free = pw_conf_free,
	.init_worker = pw_init_worker,
	.exit_worker = pw_exit_worker,
	.hooks = pw_hooks,
};
