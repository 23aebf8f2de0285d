/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One epoll instance and one binary min-heap of timers per worker. Time is
 * read once per iteration (CLOCK_MONOTONIC_COARSE is plenty for timeouts
 * counted in seconds) and everyone uses that reading, so a burst of events
 * costs one clock read, and tests can freeze the clock.
 *
 * Timers are armed rarely: a connection keeps one timer and pushes its
 * idle deadline forward lazily (reads and writes only stamp
 * c_last_active; the timer callback of relay.c, of http.c, or of
 * socks.c for a UDP association moves the deadline when it fires), so
 * the heap is not touched on every read.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "worker/loop.h"

#define LOOP_MAX_EVENTS	256
#define LOOP_MAX_WAIT_MS	3600000

static int		 loop_epfd = -1;
static uint64_t		 loop_now_ms;
static bool		 loop_frozen;
/* 1-based heap: heap_idx 0 means "not armed". */
static struct pt_timer	**loop_heap;
static unsigned		 loop_heap_len;
static unsigned		 loop_heap_cap;
static struct loop_task	*loop_posted;
/* The batch loop_once is delivering, so loop_io_forget can drop events
 * of an io whose owner frees it before the batch ends. */
static struct epoll_event	*loop_batch;
static int			 loop_batch_len;

int
loop_init(void)
{
	loop_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop_epfd < 0)
		return -errno;
	loop_update_time();
	return 0;
}

void
loop_fini(void)
{
	if (loop_epfd >= 0)
		close(loop_epfd);
	loop_epfd = -1;
	free(loop_heap);
	loop_heap = NULL;
	loop_heap_len = loop_heap_cap = 0;
}

int
loop_io_start(struct loop_io *io, int fd, uint32_t events, loop_io_fn fn)
{
	struct epoll_event	 ev;

	io->fn = fn;
	io->events = events;
	if (io->virt) {
		io->added = true;
		return 0;
	}
	io->fd = fd;
	ev.events = events;
	ev.data.ptr = io;
	if (epoll_ctl(loop_epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	io->added = true;
	return 0;
}

int
loop_io_set(struct loop_io *io, uint32_t events)
{
	struct epoll_event	 ev;

	if (!io->added || io->events == events)
		return 0;
	if (io->virt) {
		io->events = events;
		return 0;
	}
	ev.events = events;
	ev.data.ptr = io;
	if (epoll_ctl(loop_epfd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
		return -errno;
	io->events = events;
	return 0;
}

int
loop_io_move(struct loop_io *from, struct loop_io *to, uint32_t events,
    loop_io_fn fn)
{
	struct epoll_event	 ev;

	if (!from->added)
		return loop_io_start(to, from->fd, events, fn);
	ev.events = events;
	ev.data.ptr = to;
	if (epoll_ctl(loop_epfd, EPOLL_CTL_MOD, from->fd, &ev) < 0)
		return -errno;
	to->fd = from->fd;
	to->fn = fn;
	to->events = events;
	to->added = true;
	from->added = false;
	from->events = 0;
	return 0;
}

void
loop_io_stop(struct loop_io *io)
{
	if (!io->added)
		return;
	if (!io->virt)
		epoll_ctl(loop_epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->added = false;
	io->events = 0;
}

void
loop_io_forget(struct loop_io *io)
{
	int	 i;

	for (i = 0; i < loop_batch_len; i++)
		if (loop_batch[i].data.ptr == io)
			loop_batch[i].data.ptr = NULL;
}

void
loop_io_close(struct loop_io *io)
{
	/* "added == false" is what loop_once checks before delivering a
	 * later event of the same batch. */
	io->added = false;
	io->events = 0;
	if (io->fd >= 0)
		close(io->fd);
	io->fd = -1;
}

void
loop_update_time(void)
{
	struct timespec	 ts;

	if (loop_frozen)
		return;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	loop_now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t
loop_now(void)
{
	return loop_now_ms;
}

uint64_t
pt_now_ms(void)
{
	return loop_now_ms;
}

void
loop_set_time(uint64_t ms)
{
	loop_frozen = true;
	loop_now_ms = ms;
}

static void
loop_heap_swap(unsigned a, unsigned b)
{
	struct pt_timer	*t = loop_heap[a];

	loop_heap[a] = loop_heap[b];
	loop_heap[b] = t;
	loop_heap[a]->heap_idx = a;
	loop_heap[b]->heap_idx = b;
}

static void
loop_heap_up(unsigned i)
{
	while (i > 1 && loop_heap[i / 2]->when > loop_heap[i]->when) {
		loop_heap_swap(i, i / 2);
		i /= 2;
	}
}

static void
loop_heap_down(unsigned i)
{
	unsigned	 l, m;

	for (;;) {
		l = i * 2;
		m = i;
		if (l <= loop_heap_len && loop_heap[l]->when < loop_heap[m]->when)
			m = l;
		if (l + 1 <= loop_heap_len &&
		    loop_heap[l + 1]->when < loop_heap[m]->when)
			m = l + 1;
		if (m == i)
			return;
		loop_heap_swap(i, m);
		i = m;
	}
}

void
pt_timer_stop(struct pt_timer *t)
{
	struct pt_timer	*moved;
	unsigned	 i = t->heap_idx;

	if (i == 0)
		return;
	t->heap_idx = 0;
	if (i != loop_heap_len) {
		moved = loop_heap[loop_heap_len];
		loop_heap[i] = moved;
		moved->heap_idx = i;
		loop_heap_len--;
		loop_heap_up(i);
		loop_heap_down(moved->heap_idx);
	} else {
		loop_heap_len--;
	}
}

void
pt_timer_start(struct pt_timer *t, uint64_t after_ms, pt_timer_fn fn,
    void *arg)
{
	struct pt_timer	**grown;
	unsigned	 cap;
	uint64_t	 old = t->when, when = loop_now_ms + after_ms;

	t->fn = fn;
	t->arg = arg;
	if (t->heap_idx != 0) {
		/* A connection's one timer is re-armed several times per
		 * request, mostly to a later deadline: that only notes how
		 * much later (the heap keeps the old key, and the timer
		 * takes its real place when the old one comes up, in
		 * loop_run_timers), so a keep-alive request costs no sift
		 * for it. Earlier: one sift up from where it is. */
		if (when >= old && when - old <= UINT32_MAX) {
			t->later = (uint32_t)(when - old);
			return;
		}
		t->when = when;
		t->later = 0;
		if (when < old)
			loop_heap_up(t->heap_idx);
		else
			loop_heap_down(t->heap_idx);
		return;
	}
	t->when = when;
	t->later = 0;
	if (loop_heap_len + 1 >= loop_heap_cap) {
		/* Grows to the high-water mark once; steady state reuses it.
		 * Failing to grow would lose a timeout, which is worse than
		 * dying: the worker is respawned. */
		cap = loop_heap_cap ? loop_heap_cap * 2 : 1024;
		grown = realloc(loop_heap, cap * sizeof(*grown));
		if (grown == NULL)
			abort();
		loop_heap = grown;
		loop_heap_cap = cap;
	}
	loop_heap[++loop_heap_len] = t;
	t->heap_idx = loop_heap_len;
	loop_heap_up(loop_heap_len);
}

int
loop_run_timers(void)
{
	struct pt_timer	*t;
	int		 n = 0;

	while (loop_heap_len > 0 && loop_heap[1]->when <= loop_now_ms) {
		t = loop_heap[1];
		if (t->later != 0) {	/* re-armed later: to its place */
			t->when += t->later;
			t->later = 0;
			loop_heap_down(1);
			continue;
		}
		pt_timer_stop(t);
		t->fn(t, t->arg);
		n++;
	}
	return n;
}

int
loop_next_timeout(void)
{
	uint64_t	 when;

	if (loop_heap_len == 0)
		return -1;
	when = loop_heap[1]->when;
	if (when <= loop_now_ms)
		return 0;
	/* epoll_wait takes an int; a timer days away just means "wake up
	 * in an hour and look again". */
	if (when - loop_now_ms > LOOP_MAX_WAIT_MS)
		return LOOP_MAX_WAIT_MS;
	/* The coarse clock ticks every few ms; never wait less than one
	 * tick too few, or the loop wakes early and spins once. */
	return (int)(when - loop_now_ms) + 1;
}

unsigned
loop_timer_count(void)
{
	return loop_heap_len;
}

void
loop_post(struct loop_task *t, loop_task_fn fn)
{
	if (t->posted)
		return;
	t->fn = fn;
	t->posted = true;
	t->next = loop_posted;
	loop_posted = t;
}

static void
loop_run_posted(void)
{
	struct loop_task	*t, *list = loop_posted;

	/* Tasks posted while these run wait for the next round, so one
	 * that keeps posting itself cannot starve epoll. */
	loop_posted = NULL;
	while ((t = list) != NULL) {
		list = t->next;
		t->posted = false;
		t->fn(t);
	}
}

int
loop_once(void)
{
	struct epoll_event	 evs[LOOP_MAX_EVENTS];
	struct loop_io		*io;
	int			 i, n;

	n = epoll_wait(loop_epfd, evs, LOOP_MAX_EVENTS,
	    loop_posted != NULL ? 0 : loop_next_timeout());
	if (n < 0 && errno != EINTR)
		return -errno;
	loop_update_time();
	loop_batch = evs;
	loop_batch_len = n;
	for (i = 0; i < n; i++) {
		io = evs[i].data.ptr;
		/* An earlier callback of this batch may have stopped it; its
		 * memory stays valid until the end of the iteration because
		 * connections are freed late (conn_reap). A module's io may
		 * be freed at once: pt_io_stop forgot it (NULL). */
		if (io != NULL && io->added)
			io->fn(io, evs[i].events);
	}
	loop_batch = NULL;
	loop_batch_len = 0;
	loop_run_timers();
	loop_run_posted();
	return 0;
}
