/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A worker's whole life after fork(), in this order: keep only its own
 * listening sockets, drop privileges, pin its CPU, name itself, set up
 * pools, modules and listeners, then loop until told to stop. It reads no
 * file and loads no module: everything came from the master's memory.
 *
 * Stopping: SIGQUIT drains (stop accepting, finish what is open, at most
 * shutdown_timeout), SIGTERM/SIGINT close everything now, and a worker
 * whose master died drains too (PR_SET_PDEATHSIG), so orphans never keep
 * a port.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "worker/worker.h"
#include "worker/parent.h"
#include "worker/worker_self.h"
#include "common/counters.h"
#include "common/egress.h"
#include "common/log.h"
#include "common/modlife.h"
#include "common/conf_types.h"
#include "worker/accept.h"
#include "worker/conn.h"
#include "worker/loop.h"
#include "worker/modloop.h"
#include "worker/phase.h"
#include "worker/buf.h"
#include "worker/dns.h"
#include "worker/http.h"
#include "worker/h2.h"
#include "worker/linger.h"
#include "worker/socks.h"
#include "worker/relay.h"
#include "worker/proxy_read.h"
#include "worker/req.h"

/* Descriptors kept free of connections: signalfd, epoll, log, pooled
 * pipes, whatever modules open. */
#define WORKER_FD_RESERVE	64

static struct pt_worker	 worker;
static struct loop_io	 worker_sigio;
static struct pt_timer	 worker_drain_timer;
static char		 worker_role[32];
/* The process's CPUs before worker_pin narrowed them (pt_worker_cpuset). */
static cpu_set_t	 worker_cpus;
/* What conn.c, below every other layer of the worker, calls in them. */
static const struct conn_upcalls worker_conn_upcalls = {
	.run_phase = phase_run,
	.release_dirs = relay_release,
	.nofile = accept_pause_nofile,
	.release_route = parent_route_release,
};

int
pt_worker_id(const struct pt_worker *w)
{
	return w->slot;
}

static void
worker_drop_privileges(const struct pt_config *conf)
{
	if (geteuid() != 0 || conf->gid == (gid_t)-1)
		return;
	if (setgroups(1, &conf->gid) < 0 || setgid(conf->gid) < 0)
		fatal("dropping privileges to group %u: %s",
		    (unsigned)conf->gid, strerror(errno));
	if (conf->uid != (uid_t)-1 && setuid(conf->uid) < 0)
		fatal("dropping privileges to %s: %s", conf->user,
		    strerror(errno));
	/* Dropping privileges clears the dumpable flag; a worker that crashes
	 * should still leave a core for the operator. */
	prctl(PR_SET_DUMPABLE, 1);
}

static void
worker_pin(const struct pt_config *conf, int slot)
{
	cpu_set_t	 set;
	long		 n, i;

	worker.cpu = -1;
	/* Recorded before pinning so a module thread can run elsewhere; if
	 * the kernel will not say, every online CPU is the best guess. */
	if (sched_getaffinity(0, sizeof(worker_cpus), &worker_cpus) < 0) {
		CPU_ZERO(&worker_cpus);
		n = sysconf(_SC_NPROCESSORS_ONLN);
		for (i = 0; i < n && i < CPU_SETSIZE; i++)
			CPU_SET(i, &worker_cpus);
	}
	if (!conf->pin)
		return;
	CPU_ZERO(&set);
	CPU_SET(conf->cpus[slot], &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		pt_log_err(PT_LOG_WARNING, errno, "sched_setaffinity cpu %d",
		    conf->cpus[slot]);
		return;
	}
	worker.cpu = conf->cpus[slot];
}

int
pt_worker_cpuset(cpu_set_t *out)
{
	*out = worker_cpus;
	return CPU_COUNT(out);
}

static void
worker_on_drain_timeout(struct pt_timer *t, void *arg)
{
	pt_log(PT_LOG_NOTICE, "shutdown_timeout: closing %u connections",
	    conn_count());
	conn_close_all("shutdown timeout");
}

/* <kept>: the master's word on which listeners' sockets live on
 * (accept_stop); 0 from a plain SIGQUIT. */
static void
worker_drain(uint64_t kept)
{
	if (worker.stopping)
		return;
	worker.stopping = true;
	accept_stop(kept);
	modlife_drain(worker.conf, &worker);
	conn_drain_all();
	/* Renamed only now: "portico-drain" promises it accepts no more. */
	prctl(PR_SET_NAME, "portico-drain");
	pt_timer_start(&worker_drain_timer, worker.conf->shutdown_timeout_ms,
	    worker_on_drain_timeout, NULL);
}

static void
worker_on_signal(struct loop_io *io, uint32_t events)
{
	struct signalfd_siginfo	 si;

	while (read(io->fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGQUIT:
			/* Only the master's sigqueue carries a value; a
			 * SIGQUIT from anyone else keeps nothing. */
			worker_drain(si.ssi_code == SI_QUEUE &&
			    (pid_t)si.ssi_pid == getppid() ? si.ssi_ptr : 0);
			break;
		case SIGTERM:
		case SIGINT:
			/* on_drain once: a SIGQUIT may have drained already. */
			if (!worker.stopping) {
				worker.stopping = true;
				accept_stop(0);
				modlife_drain(worker.conf, &worker);
			}
			conn_close_all("fast stop");
			linger_close_all();
			break;
		case SIGUSR1:
			if (log_reopen() < 0)
				pt_log(PT_LOG_ERR, "reopening the error log "
				    "failed");
			modlife_reopen(worker.conf);
			break;
		default:
			break;
		}
	}
}

static void
worker_signals(void)
{
	sigset_t	 set;
	int		 fd;

	sigemptyset(&set);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGHUP);
	/* The master blocked these before fork; the worker keeps them
	 * blocked and reads them from its loop. */
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0 || loop_io_start(&worker_sigio, fd, EPOLLIN,
	    worker_on_signal) < 0)
		fatal("worker signalfd: %s", strerror(errno));
}

static void
worker_keep_own_sockets(int slot, int nslots, int nlisteners, const int *fds,
    int *mine)
{
	int	 l, s;

	for (l = 0; l < nlisteners; l++)
		for (s = 0; s < nslots; s++) {
			if (s == slot)
				mine[l] = fds[l * nslots + s];
			else
				close(fds[l * nslots + s]);
		}
}

/*
 * Connections this worker may hold at once: max_connections, lowered when
 * the descriptor limit could not serve that many (two sockets each, plus
 * a reserve for pipes, logs and modules). Accepting a client whose
 * upstream socket would then fail is worse than leaving it queued.
 */
static unsigned
worker_max_connections(const struct pt_config *conf)
{
	struct rlimit	 rl;
	unsigned	 max = conf->limits.max_connections, fit;
	rlim_t		 reserve;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return max;
	reserve = rl.rlim_cur / 4 < WORKER_FD_RESERVE ?
	    rl.rlim_cur / 4 : WORKER_FD_RESERVE;
	fit = rl.rlim_cur > reserve + 2 ?
	    (unsigned)((rl.rlim_cur - reserve) / 2) : 1;
	if (fit < max) {
		pt_log(PT_LOG_WARNING, "max_connections %u lowered to %u by "
		    "the descriptor limit (%llu)", max, fit,
		    (unsigned long long)rl.rlim_cur);
		max = fit;
	}
	return max;
}

/* limits.worker_memory resolved: "auto" is half the machine's (or the
 * cgroup's) memory shared among the workers. */
static size_t
worker_memory(const struct pt_config *conf, int nslots)
{
	long long	 v = conf->limits.worker_memory;
	size_t		 m;

	if (v != CONF_MEMORY_AUTO)
		return (size_t)v;
	m = conn_memory_auto(nslots);
	pt_log(PT_LOG_INFO, "worker_memory auto: %zu MiB", m >> 20);
	return m;
}

/* Tells the master this worker accepts: its pid, one atomic write on the
 * pipe every worker shares. The master counts a generation up when every
 * slot has said so. */
static void
worker_report_ready(int fd)
{
	pid_t	 pid = getpid();

	if (fd < 0)
		return;
	if (write(fd, &pid, sizeof(pid)) != (ssize_t)sizeof(pid))
		pt_log_err(PT_LOG_WARNING, errno, "telling the master this "
		    "worker is ready");
	close(fd);
}

/* The resolver settings of <conf>, as dns_init takes them. */
void
worker_dns_conf(const struct pt_config *conf, struct dns_conf *dns)
{
	dns->servers = conf->resolver.servers;
	dns->cache_max = conf->resolver.cache_size;
	dns->min_ttl_s = conf->resolver.min_ttl;
	dns->max_ttl_s = conf->resolver.max_ttl;
	dns->neg_ttl_s = conf->resolver.negative_ttl;
	dns->timeout_ms = conf->resolver.timeout_ms;
}

noreturn void
worker_main(const struct pt_config *conf, int slot, int nslots,
    const int *fds, int ready_fd)
{
	int		 mine[conf->nlisteners];
	size_t		 modctx;
	unsigned	 maxconn;
	struct dns_conf	 dns;
	int		 rc;

	snprintf(worker_role, sizeof(worker_role), "worker %d", slot);
	log_set_role(worker_role);
	worker.slot = slot;
	worker.conf = conf;
	worker_self_set(&worker);
	prctl(PR_SET_PDEATHSIG, SIGQUIT);
	worker_keep_own_sockets(slot, nslots, conf->nlisteners, fds, mine);
	worker_drop_privileges(conf);
	worker_pin(conf, slot);
	{
		char	 name[16];

		snprintf(name, sizeof(name), "portico-w%d", slot);
		prctl(PR_SET_NAME, name);
	}
	counters_use_slot(slot);
	if (loop_init() < 0)
		fatal("epoll_create1: %s", strerror(errno));
	worker_signals();
	if ((rc = modloop_init()) < 0)
		fatal("post eventfd: %s", strerror(-rc));
	modctx = phase_init(conf);
	maxconn = worker_max_connections(conf);
	conn_pool_init(maxconn, modctx, worker_memory(conf, nslots));
	conn_upcalls_set(&worker_conn_upcalls);
	/* Large buffers hold a head of up to max_header_size plus what a
	 * rewrite adds. */
	buf_init(conf->buffer_size, conf->http.max_header_size + 4096,
	    2 * maxconn);
	relay_init(conf->relay);
	req_init(maxconn);
	proxy_read_init(maxconn);
	/* Not the master's: workers must not share one sequence. */
	if (egress_random_seed() < 0)
		pt_log_err(PT_LOG_WARNING, errno, "egress: getrandom");
	http_init(conf, maxconn);
	h2_init(conf, maxconn);
	socks_init(conf, maxconn);
	worker_dns_conf(conf, &dns);
	if (dns_init(&dns) < 0)
		fatal("resolver initialisation failed");
	if (parent_init(conf) < 0)
		fatal("parent proxies: out of memory");
	if (modlife_init_worker(conf, &worker) < 0)
		fatal("module initialisation failed");
	if (accept_start(conf->listeners, mine, conf->nlisteners) < 0)
		fatal("watching listeners: %s", strerror(errno));
	/* The role prefix ("worker N: ") already names the worker. */
	pt_log(PT_LOG_NOTICE, "started on cpu %d", worker.cpu);
	worker_report_ready(ready_fd);

	/* Stopping, the sockets that linger are waited for too: an exit
	 * would close them with the client's bytes unread, a reset. */
	while (!worker.stopping || conn_count() > 0 || linger_count() > 0) {
		if (loop_once() < 0)
			fatal("epoll_wait: %s", strerror(errno));
		if (conn_reap())
			accept_slot_freed();
	}
	modlife_exit_worker(conf, &worker);
	modloop_fini();
	relay_fini();
	pt_log(PT_LOG_INFO, "exiting");
	/* _exit: the master's atexit handlers and stdio buffers belong to
	 * the master, not to this copy of it. */
	_exit(0);
}
