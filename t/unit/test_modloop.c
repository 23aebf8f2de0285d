/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/modloop.c: the post queue other threads hand work to the worker
 * with (pt_post), and a module's descriptors on the loop (pt_io_*), driven
 * through the real epoll loop (loop_init, loop_once) and real threads.
 *
 * Every wait is bounded: a post that never wakes the loop shows as a test
 * that ran out of rounds, never as a hang.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "worker/loop.h"
#include "worker/modloop.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define POST_THREADS	4
#define POST_EACH	20000

struct post_item {
	struct pt_post	 p;
	int		 thread;
	int		 seq;
};

static struct post_item	 items[POST_THREADS][POST_EACH];
static int		 next_seq[POST_THREADS];	/* expected next */
static int		 ran_total;
static int		 out_of_order;
static int		 ran_twice;
static unsigned char	 ran[POST_THREADS][POST_EACH];

static uint64_t
wall_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
item_run(void *arg)
{
	struct post_item	*it = arg;

	if (ran[it->thread][it->seq]++)
		ran_twice++;
	if (it->seq != next_seq[it->thread])
		out_of_order++;
	next_seq[it->thread] = it->seq + 1;
	ran_total++;
}

static void *
poster(void *arg)
{
	int	 t = (int)(intptr_t)arg, i;

	for (i = 0; i < POST_EACH; i++) {
		items[t][i].thread = t;
		items[t][i].seq = i;
		pt_post(&items[t][i].p, item_run, &items[t][i]);
		/* Now and then let the worker catch up, so the list goes
		 * empty and the "first push wakes" path runs many times. */
		if (i % 1000 == 999)
			sched_yield();
	}
	return NULL;
}

static void
reset_counts(void)
{
	memset(next_seq, 0, sizeof(next_seq));
	memset(ran, 0, sizeof(ran));
	ran_total = out_of_order = ran_twice = 0;
}

static void
test_modloop_posts_from_threads_run_once_in_order(void)
{
	pthread_t	 th[POST_THREADS];
	uint64_t	 deadline;
	int		 i, started = 0;

	reset_counts();
	for (i = 0; i < POST_THREADS; i++)
		if (pthread_create(&th[i], NULL, poster,
		    (void *)(intptr_t)i) == 0)
			started++;
	CHECKF_FATAL(started == POST_THREADS, "started %d threads", started);
	/* Only loop_once runs posts here: each round blocks in epoll_wait
	 * until the eventfd says there is work. */
	deadline = wall_ms() + check_bound_ms(20000);
	while (ran_total < POST_THREADS * POST_EACH && wall_ms() < deadline)
		CU_ASSERT_EQUAL_FATAL(loop_once(), 0);
	for (i = 0; i < POST_THREADS; i++)
		pthread_join(th[i], NULL);
	CHECKF(ran_total == POST_THREADS * POST_EACH,
	    "%d of %d posts ran", ran_total, POST_THREADS * POST_EACH);
	CHECKF(ran_twice == 0, "%d posts ran twice", ran_twice);
	CHECKF(out_of_order == 0, "%d posts ran out of their thread's order",
	    out_of_order);
	CU_ASSERT_EQUAL(modloop_run_posts(), 0);
}

static void
test_modloop_drain_keeps_post_order(void)
{
	int	 i;

	reset_counts();
	for (i = 0; i < 100; i++) {
		items[0][i].thread = 0;
		items[0][i].seq = i;
		pt_post(&items[0][i].p, item_run, &items[0][i]);
	}
	CU_ASSERT_EQUAL(modloop_run_posts(), 100);
	CU_ASSERT_EQUAL(out_of_order, 0);
	CU_ASSERT_EQUAL(ran_total, 100);
	CU_ASSERT_EQUAL(modloop_run_posts(), 0);
	/* The eventfd was written by the first post and is still set:
	 * the next round takes it and finds nothing (a harmless spurious
	 * wake-up, never a lost one). */
	CU_ASSERT_EQUAL(loop_once(), 0);
}

struct repost {
	struct pt_post	 p;
	int		 left;
	int		 runs;
};

static void
repost_run(void *arg)
{
	struct repost	*r = arg;

	r->runs++;
	if (--r->left > 0)
		pt_post(&r->p, repost_run, r);
}

static void
test_modloop_repost_from_callback_waits_a_round(void)
{
	struct repost	 r = { .left = 3 };

	pt_post(&r.p, repost_run, &r);
	CU_ASSERT_EQUAL(modloop_run_posts(), 1);
	CU_ASSERT_EQUAL(r.runs, 1);
	CU_ASSERT_EQUAL(modloop_run_posts(), 1);
	CU_ASSERT_EQUAL(modloop_run_posts(), 1);
	CU_ASSERT_EQUAL(modloop_run_posts(), 0);
	CU_ASSERT_EQUAL(r.runs, 3);
	CU_ASSERT_EQUAL(loop_once(), 0);	/* eat the pending wake-up */
}

static struct post_item	 late;

static void *
late_poster(void *arg)
{
	struct timespec	 ts = { 0, 100 * 1000000 };

	(void)arg;
	nanosleep(&ts, NULL);
	pt_post(&late.p, item_run, &late);
	return NULL;
}

static void
on_safety(struct pt_timer *t, void *arg)
{
	(void)t;
	(void)arg;
}

static void
test_modloop_post_wakes_a_blocked_loop(void)
{
	struct pt_timer	 safety = { 0 };
	pthread_t	 th;
	uint64_t	 t0, took;

	reset_counts();
	late.thread = 0;
	late.seq = 0;
	/* Nothing else can wake this round but the post (the timer only
	 * bounds the test if the wake-up is lost). */
	pt_timer_start(&safety, check_bound_ms(5000), on_safety, NULL);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, late_poster, NULL), 0);
	t0 = wall_ms();
	while (ran_total == 0 && wall_ms() - t0 < check_bound_ms(5000))
		CU_ASSERT_EQUAL(loop_once(), 0);
	took = wall_ms() - t0;
	pthread_join(th, NULL);
	pt_timer_stop(&safety);
	CU_ASSERT_EQUAL(ran_total, 1);
	CHECKF(took < check_bound_ms(2000), "the post woke the loop after "
	    "%llu ms", (unsigned long long)took);
}

/* ---- pt_io ------------------------------------------------------------ */

struct watched {
	struct pt_io	 io;
	struct watched	*other;
	int		 fds[2];
	int		 calls;
	uint32_t	 events;
};

static int	 stray_calls;

static void
stray_run(struct pt_io *io, uint32_t events, void *arg)
{
	(void)io;
	(void)events;
	(void)arg;
	stray_calls++;
}

static void
watched_run(struct pt_io *io, uint32_t events, void *arg)
{
	struct watched	*w = arg;
	char		 b[16];

	CU_ASSERT_PTR_EQUAL(io, &w->io);
	w->calls++;
	w->events = events;
	if (read(w->fds[0], b, sizeof(b)) < 0)
		CU_FAIL("read");
}

/* Stops the other io and reuses its storage for a quiet pipe, as a
 * module that frees and reallocates would: an event of the old
 * registration still in this batch must not reach the new one. */
static void
watched_stop_other(struct pt_io *io, uint32_t events, void *arg)
{
	struct watched	*w = arg, *o = w->other;

	(void)io;
	(void)events;
	w->calls++;
	if (o->calls > 0)
		return;
	pt_io_stop(&o->io);
	memset(&o->io, 0, sizeof(o->io));
	/* The read end of a pipe never becomes writable: quiet. */
	CU_ASSERT_EQUAL(pt_io_start(&o->io, o->fds[0], EPOLLOUT, stray_run,
	    NULL), 0);
}

static int
watched_open(struct watched *w)
{
	memset(w, 0, sizeof(*w));
	return pipe2(w->fds, O_NONBLOCK | O_CLOEXEC);
}

static void
watched_close(struct watched *w)
{
	pt_io_stop(&w->io);
	close(w->fds[0]);
	close(w->fds[1]);
}

static void
test_modloop_io_start_modify_stop(void)
{
	struct watched	 w;
	int		 i;

	CU_ASSERT_EQUAL_FATAL(watched_open(&w), 0);
	CU_ASSERT_EQUAL(pt_io_start(&w.io, w.fds[0], EPOLLIN | EPOLLET,
	    watched_run, &w), -EINVAL);
	memset(&w.io, 0, sizeof(w.io));
	CU_ASSERT_EQUAL(pt_io_modify(&w.io, EPOLLIN), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(pt_io_start(&w.io, w.fds[0], EPOLLIN,
	    watched_run, &w), 0);
	CU_ASSERT_EQUAL(w.io.fd, w.fds[0]);
	CU_ASSERT_EQUAL(w.io.events, EPOLLIN);
	CU_ASSERT_EQUAL(write(w.fds[1], "x", 1), 1);
	for (i = 0; i < 10 && w.calls == 0; i++)
		loop_once();
	CU_ASSERT_EQUAL(w.calls, 1);
	CU_ASSERT(w.events & EPOLLIN);

	/* Interest 0: readable bytes wake nobody. */
	CU_ASSERT_EQUAL(pt_io_modify(&w.io, 0), 0);
	CU_ASSERT_EQUAL(w.io.events, 0);
	CU_ASSERT_EQUAL(write(w.fds[1], "y", 1), 1);
	{
		struct post_item	 wake = { .thread = 0, .seq = 0 };

		/* A post makes the round return at once. */
		reset_counts();
		pt_post(&wake.p, item_run, &wake);
		loop_once();
		CU_ASSERT_EQUAL(ran_total, 1);
	}
	CU_ASSERT_EQUAL(w.calls, 1);
	CU_ASSERT_EQUAL(pt_io_modify(&w.io, EPOLLIN), 0);
	for (i = 0; i < 10 && w.calls == 1; i++)
		loop_once();
	CU_ASSERT_EQUAL(w.calls, 2);

	pt_io_stop(&w.io);
	pt_io_stop(&w.io);	/* idempotent */
	CU_ASSERT_EQUAL(w.io.events, 0);
	CU_ASSERT_EQUAL(pt_io_modify(&w.io, EPOLLIN), -EINVAL);
	watched_close(&w);
}

static void
test_modloop_io_stopped_in_batch_gets_no_stale_event(void)
{
	struct watched	 a, b;
	int		 i;

	CU_ASSERT_EQUAL_FATAL(watched_open(&a), 0);
	CU_ASSERT_EQUAL_FATAL(watched_open(&b), 0);
	a.other = &b;
	b.other = &a;
	stray_calls = 0;
	CU_ASSERT_EQUAL_FATAL(pt_io_start(&a.io, a.fds[0], EPOLLIN,
	    watched_stop_other, &a), 0);
	CU_ASSERT_EQUAL_FATAL(pt_io_start(&b.io, b.fds[0], EPOLLIN,
	    watched_stop_other, &b), 0);
	/* Both readable: one epoll batch holds both events. */
	CU_ASSERT_EQUAL(write(a.fds[1], "a", 1), 1);
	CU_ASSERT_EQUAL(write(b.fds[1], "b", 1), 1);
	for (i = 0; i < 10 && a.calls + b.calls == 0; i++)
		loop_once();
	CHECKF(a.calls + b.calls == 1, "a ran %d times, b %d times",
	    a.calls, b.calls);
	CHECKF(stray_calls == 0, "the reused storage got %d stale events",
	    stray_calls);
	watched_close(&a);
	watched_close(&b);
}

static int
modloop_suite_init(void)
{
	if (loop_init() < 0 || modloop_init() < 0)
		return -1;
	return 0;
}

static int
modloop_suite_fini(void)
{
	modloop_fini();
	loop_fini();
	return 0;
}

void
register_modloop_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("modloop", modloop_suite_init,
	    modloop_suite_fini)) == NULL)
		return;
	CU_add_test(s, "posts_from_threads_run_once_in_order",
	    test_modloop_posts_from_threads_run_once_in_order);
	CU_add_test(s, "drain_keeps_post_order",
	    test_modloop_drain_keeps_post_order);
	CU_add_test(s, "repost_from_callback_waits_a_round",
	    test_modloop_repost_from_callback_waits_a_round);
	CU_add_test(s, "post_wakes_a_blocked_loop",
	    test_modloop_post_wakes_a_blocked_loop);
	CU_add_test(s, "io_start_modify_stop",
	    test_modloop_io_start_modify_stop);
	CU_add_test(s, "io_stopped_in_batch_gets_no_stale_event",
	    test_modloop_io_stopped_in_batch_gets_no_stale_event);
}
