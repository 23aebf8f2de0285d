/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Accepting connections on the worker's own SO_REUSEPORT sockets. When the
 * worker runs out of descriptors (EMFILE/ENFILE) or connection slots it
 * stops watching its listeners for a moment instead of spinning on a
 * readable socket it cannot serve; the connections wait in the kernel's
 * queue, which belongs to this worker's socket alone, and are taken when
 * resources come back. Nothing is accepted only to be closed.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/accept.h"
#include "common/counters.h"
#include "common/log.h"
#include "common/conf_types.h"
#include "worker/conn.h"
#include "worker/proto.h"
#include "worker/proxy_read.h"
#include "worker/upstream.h"

/* Accepts per readiness event: enough to amortise epoll_wait, few enough
 * that one busy listener cannot starve established connections. */
#define ACCEPT_BATCH		64
#define ACCEPT_PAUSE_MS		100

static struct worker_listener	*accept_ls;
static int			 accept_nls;
static bool			 accept_paused;
static bool			 accept_stopped;
static struct pt_timer		 accept_resume_timer;
static uint64_t			 accept_last_warn;

static void	accept_on_readable(struct loop_io *io, uint32_t events);

static void
accept_watch(bool on)
{
	int	 i;

	for (i = 0; i < accept_nls; i++)
		loop_io_set(&accept_ls[i].io, on ? EPOLLIN : 0);
}

static void
accept_on_resume(struct pt_timer *t, void *arg)
{
	if (accept_stopped)
		return;
	accept_paused = false;
	accept_watch(true);
}

static void
accept_pause(uint64_t ms)
{
	if (accept_paused)
		return;
	accept_paused = true;
	counters_add(CTR_ACCEPT_PAUSED, 1);
	accept_watch(false);
	if (ms > 0)
		pt_timer_start(&accept_resume_timer, ms, accept_on_resume, NULL);
}

void
accept_pause_nofile(void)
{
	accept_pause(ACCEPT_PAUSE_MS);
}

void
accept_slot_freed(void)
{
	/* Paused for want of a slot (no timer armed): resume now. */
	if (accept_paused && accept_resume_timer.heap_idx == 0 &&
	    !accept_stopped) {
		accept_paused = false;
		accept_watch(true);
	}
}

/* Once a minute at most: a worker at its limit must not also flood the
 * log; the counters keep the exact number of pauses. */
static void
accept_warn(const struct worker_listener *l, int err, const char *what)
{
	if (accept_last_warn != 0 && loop_now() - accept_last_warn < 60000)
		return;
	accept_last_warn = loop_now();
	if (err != 0)
		pt_log_err(PT_LOG_WARNING, err, "%s on %s: pausing", what,
		    l->conf->address);
	else
		pt_log(PT_LOG_WARNING, "%s reached on %s: pausing", what,
		    l->conf->address);
}

/* Takes one connection; returns false when the listener should be left
 * alone until the next event. */
static bool
accept_one(struct worker_listener *l)
{
	struct sockaddr_storage	 peer;
	struct pt_conn		*c;
	socklen_t		 len = sizeof(peer);
	int			 fd;

	if (conn_pool_full()) {
		accept_warn(l, 0, conn_pool_limit());
		accept_pause(0);
		return false;
	}
	fd = accept4(l->fd, (struct sockaddr *)&peer, &len,
	    SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		switch (errno) {
		case EAGAIN:
		case EINTR:
			return false;
		case EMFILE:
		case ENFILE:
			/* Idle kept-alive upstream connections go first: two
			 * descriptors, a client's and its upstream's. */
			if (upstream_shed(2) > 0)
				return true;
			/* FALLTHROUGH */
		case ENOBUFS:
		case ENOMEM:
			accept_warn(l, errno, "accept");
			accept_pause(ACCEPT_PAUSE_MS);
			return false;
		default:
			/* ECONNABORTED and friends: that client gave up. */
			return true;
		}
	}
	if ((c = conn_new(l->conf, fd, &peer)) == NULL)
		return true;
	if (l->conf->proxy_protocol)
		proxy_read_start(c, proto_start(l->conf->proto));
	else
		conn_start(c, proto_start(l->conf->proto));
	return true;
}

static void
accept_on_readable(struct loop_io *io, uint32_t events)
{
	struct worker_listener	*l = (struct worker_listener *)io;
	int			 n;

	for (n = 0; n < ACCEPT_BATCH && !accept_paused; n++)
		if (!accept_one(l))
			break;
}

int
accept_start(const struct conf_listener *conf, const int *fds, int n)
{
	int	 i, rc;

	accept_ls = calloc((size_t)n, sizeof(*accept_ls));
	if (accept_ls == NULL)
		return -ENOMEM;
	accept_nls = n;
	for (i = 0; i < n; i++) {
		accept_ls[i].conf = &conf[i];
		accept_ls[i].fd = fds[i];
		rc = loop_io_start(&accept_ls[i].io, fds[i], EPOLLIN,
		    accept_on_readable);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void
accept_stop(uint64_t kept)
{
	int	 i, n;

	if (accept_stopped)
		return;
	accept_stopped = true;
	pt_timer_stop(&accept_resume_timer);
	for (i = 0; i < accept_nls; i++) {
		/* Whatever the kernel already queued on our socket would be
		 * reset when the last copy of a removed socket closes: take
		 * it and serve it. Bounded so a flood cannot keep a
		 * draining worker alive. A socket the new generation took
		 * over keeps its queue for the new workers. */
		accept_paused = i < 64 && (kept >> i & 1) != 0;
		for (n = 0; n < 4096 && !accept_paused; n++)
			if (!accept_one(&accept_ls[i]))
				break;
		loop_io_stop(&accept_ls[i].io);
		close(accept_ls[i].fd);
	}
	accept_paused = true;
}
