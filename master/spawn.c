/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Supervision. The master forks one worker per slot and then only waits
 * for signals: it never touches client traffic.
 *
 * - A worker that dies is replaced in the same slot, on the same CPU and
 *   the same sockets; the first time at once, and with a doubling delay
 *   (capped) while it keeps dying young, so a crash loop cannot eat a CPU.
 *   During such a delay the slot's sockets are closed where the kernel
 *   moves their queues (listen_slot_vacate), so its share of new
 *   connections goes to the live workers; the next worker gets new ones.
 * - Reload: the new configuration is loaded and its new sockets bound
 *   before anything running is touched; any failure leaves the running
 *   generation exactly as it was. Then the new generation is forked on
 *   the carried-over sockets, and only once all its workers accept is the
 *   old one told to drain: until then both serve, sharing the kernel
 *   queues of carried-over sockets, so no connection is refused or reset
 *   in between, and a new generation that cannot start (a module failing
 *   in its workers, which -t cannot see) leaves the old one serving.
 * - Stop: the master closes its copies of the listening sockets, so once
 *   the workers have taken what was queued and closed theirs, new clients
 *   are refused at once instead of waiting in a queue nobody reads.
 * - Readiness: each worker writes its pid to a pipe once it watches its
 *   listeners. A generation is up when every slot's current worker has
 *   said so; that is when systemd hears READY=1 (at start and after a
 *   reload) and when a new binary tells the old master it is ready.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "master/spawn.h"
#include "common/counters.h"
#include "common/log.h"
#include "master/conf.h"
#include "common/modlife.h"
#include "master/modload.h"
#include "master/notify.h"
#include "master/pidfile.h"
#include "master/signal.h"
#include "master/upgrade.h"
#include "worker/worker.h"

#define SPAWN_YOUNG_MS		10000	/* died younger: counts as a crash */
#define SPAWN_BACKOFF_MIN_MS	100
#define SPAWN_BACKOFF_MAX_MS	30000
#define SPAWN_KILL_GRACE_MS	5000	/* after shutdown_timeout, SIGKILL */

struct spawn_slot {
	pid_t		 pid;		/* 0: not running */
	uint64_t	 started_ms;
	unsigned	 crashes;	/* deaths in a row, each young */
	uint64_t	 respawn_at;	/* 0: nothing pending */
	bool		 ready;		/* pid reported it accepts */
};

/* What systemd waits to hear when the generation is up. */
enum spawn_wait {
	SPAWN_WAIT_NONE,
	SPAWN_WAIT_START,	/* READY=1 */
	SPAWN_WAIT_RELOAD,	/* READY=1 after RELOADING=1 */
};

/* A worker of an older generation: serving on until the new generation
 * is ready (told false), then draining. */
struct spawn_old {
	pid_t		 pid;
	uint64_t	 kill_at;	/* UINT64_MAX until told */
	uint64_t	 kept;		/* listen_kept_mask of its slot */
	bool		 told;		/* SIGQUIT sent: draining */
	struct counters_worker	 rec;	/* as the status listener shows it */
};

static struct pt_config		*spawn_conf;
static struct listen_set	 spawn_ls;
static struct spawn_slot	 spawn_slots[CONF_MAX_WORKERS];
static struct spawn_old		*spawn_olds;
static int			 spawn_nolds;
static int			 spawn_generation = 1;
static bool			 spawn_stopping;
static uint64_t			 spawn_stop_kill_at;
static int			 spawn_ready_fd[2] = { -1, -1 };
static enum spawn_wait		 spawn_waiting = SPAWN_WAIT_START;

static uint64_t
spawn_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
spawn_log_totals(void)
{
	uint64_t	 t[CTR_COUNT];
	/* " name=sum" of the unlabelled module counters, in registration
	 * order; the log line is cut at its own limit anyway. */
	char		 mods[8192];

	counters_total(t);
	counters_fmt_modules(mods, sizeof(mods));
	pt_log(PT_LOG_NOTICE, "totals: accepted=%llu active=%llu closed=%llu "
	    "bytes_in=%llu bytes_out=%llu accept_paused=%llu "
	    "upstream_failed=%llu denied=%llu udp_denied=%llu udp_up=%llu "
	    "udp_down=%llu udp_dropped=%llu%s",
	    (unsigned long long)t[CTR_ACCEPTED],
	    (unsigned long long)t[CTR_ACTIVE],
	    (unsigned long long)t[CTR_CLOSED],
	    (unsigned long long)t[CTR_BYTES_IN],
	    (unsigned long long)t[CTR_BYTES_OUT],
	    (unsigned long long)t[CTR_ACCEPT_PAUSED],
	    (unsigned long long)t[CTR_UPSTREAM_FAILED],
	    (unsigned long long)t[CTR_DENIED],
	    (unsigned long long)t[CTR_UDP_DENIED],
	    (unsigned long long)t[CTR_UDP_UP],
	    (unsigned long long)t[CTR_UDP_DOWN],
	    (unsigned long long)(t[CTR_UDP_DROP_INVALID] +
	    t[CTR_UDP_DROP_RESOLVING] + t[CTR_UDP_DROP_SEND] +
	    t[CTR_UDP_DROP_TOO_BIG] + t[CTR_UDP_DROP_MODULE] +
	    t[CTR_UDP_DROP_UNSOLICITED]), mods);
}

/* The draining table the status listener shows. */
static void
spawn_publish_olds(void)
{
	struct counters_worker	 ws[COUNTERS_OLD_MAX];
	int			 i;

	for (i = 0; i < spawn_nolds && i < COUNTERS_OLD_MAX; i++)
		ws[i] = spawn_olds[i].rec;
	counters_m_old(i, ws);
}

static void
spawn_fork(int slot)
{
	struct spawn_slot	*s = &spawn_slots[slot];
	char			 err[256];
	pid_t			 pid;

	s->respawn_at = 0;
	if (listen_slot_vacant(&spawn_ls, slot) && listen_slot_bind(spawn_conf,
	    &spawn_ls, slot, err, sizeof(err)) < 0) {
		pt_log(PT_LOG_ERR, "worker %d: %s (trying again in 1 s)", slot,
		    err);
		s->respawn_at = spawn_now() + 1000;
		return;
	}
	pid = fork();
	if (pid < 0) {
		pt_log_err(PT_LOG_ERR, errno, "fork worker %d", slot);
		s->respawn_at = spawn_now() + SPAWN_BACKOFF_MAX_MS / 10;
		return;
	}
	if (pid == 0) {
		signal_close_in_child();
		upgrade_close_in_child();
		close(spawn_ready_fd[0]);
		worker_main(spawn_conf, slot, spawn_ls.nslots, spawn_ls.fds,
		    spawn_ready_fd[1]);
	}
	s->pid = pid;
	s->ready = false;
	s->started_ms = spawn_now();
	counters_m_worker(slot, pid, spawn_generation,
	    spawn_conf->pin ? spawn_conf->cpus[slot] : -1, WSTATE_RUNNING);
}

static void
spawn_all(void)
{
	int	 i;

	for (i = 0; i < spawn_conf->workers; i++) {
		spawn_slots[i].crashes = 0;
		spawn_fork(i);
	}
}

static void
spawn_old_add(int slot, pid_t pid, uint64_t kill_at, uint64_t kept)
{
	const struct counters_master	*m = counters_master_get();
	struct spawn_old	*grown;

	grown = realloc(spawn_olds, sizeof(*grown) * (size_t)(spawn_nolds + 1));
	if (grown == NULL) {
		/* Without a record it would never be killed at the deadline;
		 * it still drains and exits on its own. */
		pt_log(PT_LOG_WARNING, "out of memory tracking pid %d", pid);
		return;
	}
	spawn_olds = grown;
	spawn_olds[spawn_nolds].pid = pid;
	spawn_olds[spawn_nolds].kill_at = kill_at;
	spawn_olds[spawn_nolds].kept = kept;
	spawn_olds[spawn_nolds].told = false;
	memset(&spawn_olds[spawn_nolds].rec, 0, sizeof(struct counters_worker));
	if (m != NULL)
		spawn_olds[spawn_nolds].rec = m->w[slot];
	spawn_olds[spawn_nolds].rec.pid = pid;
	spawn_olds[spawn_nolds].rec.slot = slot;
	spawn_nolds++;
}

static bool
spawn_old_del(pid_t pid)
{
	int	 i;

	for (i = 0; i < spawn_nolds; i++)
		if (spawn_olds[i].pid == pid) {
			spawn_olds[i] = spawn_olds[--spawn_nolds];
			spawn_publish_olds();
			return true;
		}
	return false;
}

static void
spawn_describe_exit(int slot, pid_t pid, int status)
{
	if (WIFSIGNALED(status))
		pt_log(PT_LOG_ERR, "worker %d (pid %d) killed by signal %d",
		    slot, (int)pid, WTERMSIG(status));
	else
		pt_log(PT_LOG_ERR, "worker %d (pid %d) exited with status %d",
		    slot, (int)pid, WEXITSTATUS(status));
}

/* Whether a worker of another slot is up and accepting. */
static bool
spawn_other_live(int slot)
{
	int	 i;

	for (i = 0; i < spawn_conf->workers; i++)
		if (i != slot && spawn_slots[i].pid > 0 && spawn_slots[i].ready)
			return true;
	return false;
}

static void
spawn_schedule_respawn(int slot)
{
	struct spawn_slot	*s = &spawn_slots[slot];
	uint64_t		 now = spawn_now(), delay = 0;
	unsigned		 shift;

	if (now - s->started_ms < SPAWN_YOUNG_MS)
		s->crashes++;
	else
		s->crashes = 1;
	/* The first death is replaced at once; a worker that keeps dying
	 * young waits 100 ms, 200 ms, ... up to 30 s. */
	if (s->crashes > 1) {
		shift = s->crashes - 2 > 16 ? 16 : s->crashes - 2;
		delay = (uint64_t)SPAWN_BACKOFF_MIN_MS << shift;
		if (delay > SPAWN_BACKOFF_MAX_MS)
			delay = SPAWN_BACKOFF_MAX_MS;
		pt_log(PT_LOG_WARNING, "worker %d keeps dying (%u times in a "
		    "row): next restart in %llu ms", slot, s->crashes,
		    (unsigned long long)delay);
		/* Meanwhile its share of new connections goes to the live
		 * workers, not into a queue nobody reads. */
		if (spawn_other_live(slot) &&
		    listen_slot_vacate(spawn_conf, &spawn_ls, slot))
			pt_log(PT_LOG_NOTICE, "worker %d: its listening "
			    "sockets are closed until it restarts, so new "
			    "connections go to the other workers", slot);
	}
	s->respawn_at = now + delay;
	if (s->respawn_at == 0)
		s->respawn_at = 1;
}

/* Whether old workers still serve, waiting for this generation. */
static bool
spawn_olds_serving(void)
{
	int	 i;

	for (i = 0; i < spawn_nolds; i++)
		if (!spawn_olds[i].told)
			return true;
	return false;
}

static void
spawn_reap(void)
{
	pid_t	 pid;
	int	 status, i;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (spawn_old_del(pid) || upgrade_reaped(pid, status))
			continue;
		for (i = 0; i < CONF_MAX_WORKERS; i++)
			if (spawn_slots[i].pid == pid)
				break;
		if (i == CONF_MAX_WORKERS)
			continue;
		spawn_slots[i].pid = 0;
		counters_m_worker(i, 0, 0, -1, spawn_stopping ? WSTATE_NONE :
		    WSTATE_RESTARTING);
		if (spawn_stopping)
			continue;
		spawn_describe_exit(i, pid, status);
		if (!spawn_slots[i].ready && spawn_olds_serving())
			pt_log(PT_LOG_ERR, "generation %d is not up (worker %d "
			    "died starting): the previous generation keeps "
			    "serving until it is, or until a reload",
			    spawn_generation, i);
		spawn_schedule_respawn(i);
	}
}

static void
spawn_respawn_due(void)
{
	uint64_t	 now = spawn_now();
	int		 i;

	for (i = 0; i < spawn_conf->workers; i++) {
		if (spawn_slots[i].respawn_at == 0 ||
		    spawn_slots[i].respawn_at > now)
			continue;
		pt_log(PT_LOG_NOTICE, "respawning worker %d", i);
		spawn_fork(i);
	}
}

static void
spawn_signal_all(int sig)
{
	int	 i;

	for (i = 0; i < CONF_MAX_WORKERS; i++)
		if (spawn_slots[i].pid > 0)
			kill(spawn_slots[i].pid, sig);
	for (i = 0; i < spawn_nolds; i++)
		kill(spawn_olds[i].pid, sig);
}

/*
 * Tells an old worker to drain, with the listeners whose socket the new
 * generation took over as the signal's value: it leaves their queues to
 * the new workers instead of taking connections there only to serve them
 * with the old configuration, under shutdown_timeout. A plain SIGQUIT
 * (graceful stop, the master's death) means none is kept.
 */
static void
spawn_quit_old(struct spawn_old *o)
{
	union sigval	 v;

	v.sival_ptr = (void *)(uintptr_t)o->kept;
	if (sigqueue(o->pid, SIGQUIT, v) < 0 && errno != ESRCH)
		kill(o->pid, SIGQUIT);
	o->told = true;
	o->kill_at = spawn_now() + spawn_conf->shutdown_timeout_ms +
	    SPAWN_KILL_GRACE_MS;
}

/* The new generation accepts in every slot: the old workers still
 * serving since the reload drain now. */
static void
spawn_drain_olds(void)
{
	int	 i, n = 0;

	for (i = 0; i < spawn_nolds; i++)
		if (!spawn_olds[i].told) {
			spawn_quit_old(&spawn_olds[i]);
			n++;
		}
	if (n > 0 || spawn_waiting == SPAWN_WAIT_RELOAD)
		pt_log(PT_LOG_NOTICE, "reloaded %s: generation %d, %d workers "
		    "accepting, %d old ones draining", spawn_conf->file,
		    spawn_generation, spawn_conf->workers, n);
}

/* The running generation serves on: systemd hears it is ready again,
 * and why the reload did not happen. */
static void
spawn_reload_failed(const char *err)
{
	notify_send("READY=1\nSTATUS=reload failed: %s; generation %d "
	    "serving", err, spawn_generation);
}

/*
 * Reads the pids workers report once they accept; when every slot's
 * current worker has, tells whoever waits for this generation.
 */
static void
spawn_on_ready(void)
{
	pid_t	 pids[64];
	ssize_t	 n;
	int	 i, j;

	while ((n = read(spawn_ready_fd[0], pids, sizeof(pids))) > 0)
		for (j = 0; j < (int)(n / (ssize_t)sizeof(pid_t)); j++)
			for (i = 0; i < CONF_MAX_WORKERS; i++)
				if (spawn_slots[i].pid == pids[j])
					spawn_slots[i].ready = true;
	if (spawn_stopping)
		return;
	for (i = 0; i < spawn_conf->workers; i++)
		if (spawn_slots[i].pid <= 0 || !spawn_slots[i].ready)
			return;
	spawn_drain_olds();
	if (spawn_waiting == SPAWN_WAIT_NONE)
		return;
	pt_log(PT_LOG_NOTICE, "generation %d ready: %d workers accepting",
	    spawn_generation, spawn_conf->workers);
	notify_send("READY=1\nSTATUS=%s: generation %d, %d workers, %d "
	    "listeners", spawn_waiting == SPAWN_WAIT_START ? "serving" :
	    "reloaded", spawn_generation, spawn_conf->workers,
	    spawn_conf->nlisteners);
	spawn_waiting = SPAWN_WAIT_NONE;
	upgrade_report_ready();
}

/*
 * A reload that names another pid_file: the new one is written and the
 * old one removed, so `portico -s` with the new file finds this master.
 * Not during a binary upgrade, whose .oldbin renaming owns the file.
 */
static void
spawn_move_pid_file(const char *old, const char *new)
{
	int	 rc;

	if (new == NULL || (old != NULL && strcmp(old, new) == 0))
		return;
	if (upgrade_successor() > 0) {
		pt_log(PT_LOG_WARNING, "reload: pid_file %s not written during "
		    "a binary upgrade", new);
		return;
	}
	if ((rc = pidfile_write(new)) < 0) {
		pt_log_err(PT_LOG_ERR, -rc, "reload: pid_file %s: keeping %s",
		    new, old != NULL ? old : "none");
		return;
	}
	if (old != NULL)
		unlink(old);
	upgrade_set_pid_file(new);
	pt_log(PT_LOG_NOTICE, "pid file now %s", new);
}

static void
spawn_reload(void)
{
	struct pt_config	*conf;
	struct listen_set	 ls;
	char			 err[CONF_ERRSZ];
	int			 i;

	pt_log(PT_LOG_NOTICE, "reloading %s", spawn_conf->file);
	notify_send("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
	    notify_monotonic_usec(), spawn_conf->file);
	if ((conf = conf_load(spawn_conf->file, err)) == NULL) {
		pt_log(PT_LOG_ERR, "reload failed: %s; keeping the running "
		    "configuration", err);
		spawn_reload_failed(err);
		counters_m_reload(false);
		return;
	}
	if (modlife_init_master(conf, err, sizeof(err)) < 0 ||
	    listen_open(conf, &ls, spawn_conf, &spawn_ls, err,
	    sizeof(err)) < 0) {
		pt_log(PT_LOG_ERR, "reload failed: %s; keeping the running "
		    "configuration", err);
		spawn_reload_failed(err);
		counters_m_reload(false);
		conf_free(conf);
		return;
	}
	listen_migrate(conf, spawn_ls.nslots);
	if (strcmp(conf->error_log, spawn_conf->error_log) != 0 &&
	    log_open(conf->error_log, conf->uid, conf->gid) < 0)
		pt_log(PT_LOG_ERR, "reload: cannot open error_log %s: keeping "
		    "the old one", conf->error_log);
	spawn_move_pid_file(spawn_conf->pid_file, conf->pid_file);
	log_set_level(conf->log_level);

	/* Old workers first become "old", then the new ones are forked on
	 * the same sockets, and the old ones are told to drain when the new
	 * ones all accept (spawn_on_ready). Workers of an earlier reload's
	 * generation that never got that far (still starting, or failing
	 * to) become old too, and drain with the rest. */
	for (i = 0; i < CONF_MAX_WORKERS; i++) {
		if (spawn_slots[i].pid > 0)
			spawn_old_add(i, spawn_slots[i].pid, UINT64_MAX,
			    listen_kept_mask(&spawn_ls, &ls, i));
		if (spawn_slots[i].pid > 0 || spawn_slots[i].respawn_at != 0)
			counters_m_worker(i, 0, 0, -1, WSTATE_NONE);
		memset(&spawn_slots[i], 0, sizeof(spawn_slots[i]));
	}
	spawn_publish_olds();
	listen_close_unused(&spawn_ls, &ls);
	spawn_ls = ls;
	conf_free(spawn_conf);
	spawn_conf = conf;
	spawn_generation++;
	if (spawn_waiting == SPAWN_WAIT_NONE)
		spawn_waiting = SPAWN_WAIT_RELOAD;
	counters_m_generation(spawn_generation, conf->workers);
	counters_m_reload(true);
	spawn_all();
	pt_log(PT_LOG_NOTICE, "generation %d starting: %d workers",
	    spawn_generation, conf->workers);
	spawn_log_totals();
}

static void
spawn_reopen(void)
{
	if (log_open(spawn_conf->error_log, spawn_conf->uid,
	    spawn_conf->gid) < 0)
		pt_log(PT_LOG_ERR, "reopening %s failed", spawn_conf->error_log);
	modlife_reopen(spawn_conf);
	spawn_signal_all(SIGUSR1);
	pt_log(PT_LOG_NOTICE, "logs reopened");
}

static void
spawn_stop(bool graceful)
{
	uint64_t	 grace;
	pid_t		 next;

	if (spawn_stopping && graceful)
		return;
	/* After a binary upgrade the service goes on in the new master:
	 * systemd follows it instead of stopping. */
	if (!spawn_stopping && (next = upgrade_successor()) > 0)
		notify_send("MAINPID=%d\nSTATUS=binary upgrade: pid %d serves, "
		    "pid %d drains", (int)next, (int)next, (int)getpid());
	else if (!spawn_stopping)
		notify_send("STOPPING=1\nSTATUS=%s",
		    graceful ? "draining" : "stopping");
	spawn_stopping = true;
	/* The workers take what is queued and close theirs (accept_stop);
	 * with ours closed too, the next client is refused at once. */
	listen_close(&spawn_ls);
	if (graceful) {
		pt_log(PT_LOG_NOTICE, "shutting down gracefully");
		grace = spawn_conf->shutdown_timeout_ms + SPAWN_KILL_GRACE_MS;
		spawn_signal_all(SIGQUIT);
	} else {
		pt_log(PT_LOG_NOTICE, "shutting down");
		grace = SPAWN_KILL_GRACE_MS;
		spawn_signal_all(SIGTERM);
	}
	spawn_stop_kill_at = spawn_now() + grace;
}

static bool
spawn_children_left(void)
{
	int	 i;

	for (i = 0; i < CONF_MAX_WORKERS; i++)
		if (spawn_slots[i].pid > 0)
			return true;
	return spawn_nolds > 0;
}

/* Milliseconds until the next deadline the loop must act on, or -1. */
static int
spawn_next_timeout(void)
{
	uint64_t	 now = spawn_now(), next = UINT64_MAX;
	int		 i;

	for (i = 0; i < CONF_MAX_WORKERS && !spawn_stopping; i++)
		if (spawn_slots[i].respawn_at != 0 &&
		    spawn_slots[i].respawn_at < next)
			next = spawn_slots[i].respawn_at;
	for (i = 0; i < spawn_nolds; i++)
		if (spawn_olds[i].kill_at < next)
			next = spawn_olds[i].kill_at;
	if (spawn_stopping && spawn_stop_kill_at < next)
		next = spawn_stop_kill_at;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)(next - now);
}

static void
spawn_kill_overdue(void)
{
	uint64_t	 now = spawn_now();
	int		 i;

	for (i = 0; i < spawn_nolds; i++)
		if (spawn_olds[i].kill_at <= now) {
			pt_log(PT_LOG_WARNING, "old worker pid %d still "
			    "draining after shutdown_timeout: killing it",
			    (int)spawn_olds[i].pid);
			kill(spawn_olds[i].pid, SIGKILL);
			spawn_olds[i].kill_at = UINT64_MAX;
		}
	if (spawn_stopping && spawn_stop_kill_at <= now) {
		pt_log(PT_LOG_WARNING, "workers still running: killing them");
		spawn_signal_all(SIGKILL);
		spawn_stop_kill_at = UINT64_MAX;
	}
}

int
spawn_run(struct pt_config *conf, struct listen_set *ls, int sigfd)
{
	struct signal_flags	 f;
	struct pollfd		 pfd[3];

	spawn_conf = conf;
	spawn_ls = *ls;
	counters_m_start();
	counters_m_generation(spawn_generation, conf->workers);
	/* Each worker's write of its pid is atomic (below PIPE_BUF); the
	 * master reads without blocking. */
	if (pipe2(spawn_ready_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		fatal("pipe: %s", strerror(errno));
	spawn_all();
	pt_log(PT_LOG_NOTICE, "started: %d workers, %d listeners",
	    conf->workers, conf->nlisteners);
	pfd[0].fd = sigfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = spawn_ready_fd[0];
	pfd[1].events = POLLIN;
	pfd[2].events = POLLIN;
	while (!spawn_stopping || spawn_children_left()) {
		pfd[2].fd = upgrade_status_fd();
		if (poll(pfd, 3, spawn_next_timeout()) < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		memset(&f, 0, sizeof(f));
		signal_read(sigfd, &f);
		if (pfd[2].fd >= 0 && pfd[2].revents != 0)
			upgrade_on_status();
		if (f.child)
			spawn_reap();
		if (pfd[1].revents != 0)
			spawn_on_ready();
		if (f.terminate)
			spawn_stop(false);
		else if (f.quit)
			spawn_stop(true);
		if (f.reload && !spawn_stopping)
			spawn_reload();
		if (f.reopen)
			spawn_reopen();
		if (f.upgrade && !spawn_stopping)
			upgrade_start(spawn_conf, &spawn_ls);
		if (!spawn_stopping)
			spawn_respawn_due();
		spawn_kill_overdue();
	}
	spawn_log_totals();
	listen_close(&spawn_ls);
	conf_free(spawn_conf);
	modload_close_all();
	free(spawn_olds);
	close(spawn_ready_fd[0]);
	close(spawn_ready_fd[1]);
	pt_log(PT_LOG_NOTICE, "exiting");
	return 0;
}
