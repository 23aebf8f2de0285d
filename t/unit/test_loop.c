/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/loop.c timers: the heap behind pt_timer_start/pt_timer_stop, driven
 * with a frozen clock (loop_set_time), so nothing here sleeps or reads the
 * wall clock. The epoll half of the loop is left to the integration tests;
 * timers need no loop_init().
 *
 * The heap is a process-wide singleton, so every test leaves it empty.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "worker/loop.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

/* An arbitrary origin far from 0, so "deadline 0" bugs cannot hide. */
#define T0		1000000
#define MANY		300
#define SPAN_MS		5000
#define FIRE_LOG_MAX	4096

struct rec_timer {
	struct pt_timer	 t;
	uint64_t	 deadline;	/* what the test asked for */
	int		 id;
	int		 fired;
	uint64_t	 fired_at;
};

/* Firing log shared by the callbacks of one test. */
static int		 fire_log[FIRE_LOG_MAX];
static int		 fire_n;

/* xorshift32 from a fixed seed: the same "random" deadlines every run. */
static uint32_t
rng_next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void
rec_on_fire(struct pt_timer *t, void *arg)
{
	struct rec_timer	*r = arg;

	CU_ASSERT_PTR_EQUAL(t, &r->t);
	r->fired++;
	r->fired_at = loop_now();
	if (fire_n < FIRE_LOG_MAX)
		fire_log[fire_n++] = r->id;
}

static void
rec_start(struct rec_timer *r, int id, uint64_t after_ms)
{
	r->id = id;
	r->deadline = loop_now() + after_ms;
	pt_timer_start(&r->t, after_ms, rec_on_fire, r);
}

static int
loop_suite_init(void)
{
	loop_set_time(T0);
	return loop_timer_count() == 0 ? 0 : -1;
}

static int
loop_suite_fini(void)
{
	loop_fini();
	return 0;
}

static void
loop_reset(void)
{
	loop_set_time(T0);
	fire_n = 0;
	memset(fire_log, 0, sizeof(fire_log));
}

static struct rec_timer *
rec_array(size_t n)
{
	struct rec_timer	*r = calloc(n, sizeof(*r));

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	return r;
}

/*
 * Moves the clock to <now> and runs the timers: each one that fires must
 * have come due since the run at <prev>, none before one that fired
 * earlier (*last, updated), and loop_run_timers must count just those.
 */
static void
run_and_check(const struct rec_timer *r, uint64_t now, uint64_t prev,
    uint64_t *last)
{
	int	 k, ran, first = fire_n;

	loop_set_time(now);
	ran = loop_run_timers();
	CHECKF(ran == fire_n - first, "run_timers said %d, %d fired", ran,
	    fire_n - first);
	for (k = first; k < fire_n; k++) {
		const struct rec_timer *f = &r[fire_log[k]];

		CHECKF(f->deadline <= now && f->deadline > prev,
		    "timer %d (deadline %llu) fired at %llu, last run %llu",
		    f->id, (unsigned long long)f->deadline,
		    (unsigned long long)now, (unsigned long long)prev);
		CHECKF(f->deadline >= *last, "timer %d (deadline %llu) fired "
		    "after one due at %llu", f->id,
		    (unsigned long long)f->deadline, (unsigned long long)*last);
		*last = f->deadline;
	}
}

/*
 * Arms <n> timers with pseudo-random deadlines (with <moved>, then moves
 * every armed timer to another one, earlier or later, in place), then
 * walks the clock forward in uneven steps and checks each step fires
 * exactly the timers whose deadline it passed, earliest first.
 */
static void
check_fire_order(unsigned n, uint32_t seed, bool moved)
{
	struct rec_timer	*r = rec_array(n);
	uint64_t		 now, prev, last_deadline = 0;
	unsigned		 i, due;

	loop_reset();
	for (i = 0; i < n; i++)
		rec_start(&r[i], (int)i, rng_next(&seed) % SPAN_MS);
	for (i = 0; moved && i < n; i++)
		rec_start(&r[i], (int)i, rng_next(&seed) % SPAN_MS);
	CU_ASSERT_EQUAL(loop_timer_count(), n);

	prev = T0 - 1;
	for (now = T0; now <= T0 + SPAN_MS; now += 1 + rng_next(&seed) % 53) {
		run_and_check(r, now, prev, &last_deadline);
		for (i = 0, due = 0; i < n; i++)
			if (r[i].deadline <= now)
				due++;
		CHECKF(loop_timer_count() == n - due,
		    "at %llu: %u timers armed, want %u",
		    (unsigned long long)now, loop_timer_count(), n - due);
		prev = now;
	}
	loop_set_time(T0 + SPAN_MS);
	loop_run_timers();
	CU_ASSERT_EQUAL(fire_n, (int)n);
	for (i = 0; i < n; i++)
		CHECKF(r[i].fired == 1, "timer %u fired %d times", i,
		    r[i].fired);
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
	free(r);
}

static void
test_loop_timers_fire_in_deadline_order(void)
{
	check_fire_order(MANY, 0x5eed1234u, false);
}

/* Past the heap's first allocation (1024 slots), order must hold too. */
static void
test_loop_timers_fire_in_order_after_heap_grows(void)
{
	check_fire_order(2500, 0xc0ffee01u, false);
}

/* Re-arming an armed timer moves it within the heap; order must hold
 * whichever way each one moved. */
static void
test_loop_timers_moved_while_armed_keep_order(void)
{
	check_fire_order(MANY, 0xfeedbeefu, true);
	check_fire_order(2500, 0x0badf00du, true);
}

/*
 * Timers re-armed while the clock moves, as a connection's timer is at
 * every step of every request: mostly later than the heap's key (kept
 * lazily, loop.c), sometimes earlier. Each must fire exactly once, at the
 * first run on or after its last deadline, never at an older one;
 * loop_run_timers counts only what fired.
 */
static void
test_loop_timers_rearmed_as_clock_moves_fire_at_last_deadline(void)
{
	struct rec_timer	*r = rec_array(MANY);
	uint32_t		 seed = 0x7e57ab1eu;
	uint64_t		 now, prev, end = T0 + 4 * SPAN_MS, last = 0;
	unsigned		 i, armed;

	loop_reset();
	for (i = 0; i < MANY; i++)
		rec_start(&r[i], (int)i, 1 + rng_next(&seed) % SPAN_MS);
	prev = T0;
	for (now = T0 + 1; now <= end; now += 1 + rng_next(&seed) % 37) {
		run_and_check(r, now, prev, &last);
		for (i = 0, armed = 0; i < MANY; i++) {
			if (r[i].t.heap_idx != 0)
				armed++;
			CHECKF(r[i].t.heap_idx != 0 || r[i].deadline <= now,
			    "timer %u (deadline %llu) not armed at %llu", i,
			    (unsigned long long)r[i].deadline,
			    (unsigned long long)now);
		}
		CHECKF(loop_timer_count() == armed, "%u timers counted, %u "
		    "armed", loop_timer_count(), armed);
		/* A few armed timers re-armed: three in four later than
		 * before, the others anywhere from now on. */
		for (i = rng_next(&seed) % 7; i < MANY && now < end - SPAN_MS;
		    i += 1 + rng_next(&seed) % 13) {
			if (r[i].t.heap_idx == 0)
				continue;
			if (rng_next(&seed) % 4 != 0)
				rec_start(&r[i], (int)i, r[i].deadline - now +
				    rng_next(&seed) % 300);
			else
				rec_start(&r[i], (int)i,
				    1 + rng_next(&seed) % SPAN_MS);
		}
		prev = now;
	}
	loop_set_time(end + SPAN_MS);
	loop_run_timers();
	for (i = 0; i < MANY; i++)
		CHECKF(r[i].fired == 1, "timer %u fired %d times", i,
		    r[i].fired);
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
	free(r);
}

static void
test_loop_timer_does_not_fire_before_deadline(void)
{
	struct rec_timer	 r;

	loop_reset();
	memset(&r, 0, sizeof(r));
	rec_start(&r, 0, 100);
	loop_set_time(T0 + 99);
	CU_ASSERT_EQUAL(loop_run_timers(), 0);
	CU_ASSERT_EQUAL(r.fired, 0);
	CU_ASSERT_EQUAL(loop_timer_count(), 1);
	loop_set_time(T0 + 100);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(r.fired, 1);
	CU_ASSERT_EQUAL(r.fired_at, T0 + 100);
	CU_ASSERT_EQUAL(r.t.heap_idx, 0);
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
	/* Fired means disarmed: later runs leave it alone. */
	loop_set_time(T0 + 1000);
	CU_ASSERT_EQUAL(loop_run_timers(), 0);
	CU_ASSERT_EQUAL(r.fired, 1);
}

static void
test_loop_zero_delay_timer_fires_on_next_run(void)
{
	struct rec_timer	 r;

	loop_reset();
	memset(&r, 0, sizeof(r));
	rec_start(&r, 0, 0);
	CU_ASSERT_EQUAL(loop_next_timeout(), 0);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(r.fired, 1);
}

static void
test_loop_next_timeout_tracks_earliest_timer(void)
{
	struct rec_timer	 a, b;
	int			 ms;

	loop_reset();
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CU_ASSERT_EQUAL(loop_next_timeout(), -1);
	rec_start(&a, 0, 500);
	rec_start(&b, 1, 200);
	/* One coarse-clock tick of slack is allowed (see loop.c). */
	ms = loop_next_timeout();
	CHECKF(ms >= 200 && ms <= 201, "next timeout %d, want 200 or 201", ms);
	pt_timer_stop(&b.t);
	ms = loop_next_timeout();
	CHECKF(ms >= 500 && ms <= 501, "next timeout %d, want 500 or 501", ms);
	loop_set_time(T0 + 499);
	ms = loop_next_timeout();
	CHECKF(ms >= 1 && ms <= 2, "next timeout %d, want 1 or 2", ms);
	loop_set_time(T0 + 600);
	CU_ASSERT_EQUAL(loop_next_timeout(), 0);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(loop_next_timeout(), -1);
}

/*
 * pt_timer_start takes any uint64_t delay from a module. A deadline more
 * than INT_MAX ms (24.8 days) away must still give epoll_wait a positive
 * wait, not a negative one (which epoll reads as "forever").
 */
static void
test_loop_next_timeout_stays_positive_for_far_timers(void)
{
	struct rec_timer	 r;
	int			 ms;

	loop_reset();
	memset(&r, 0, sizeof(r));
	rec_start(&r, 0, 3000000000ull);
	ms = loop_next_timeout();
	CHECKF(ms > 0, "next timeout %d for a timer 3e9 ms away", ms);
	pt_timer_stop(&r.t);
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
}

/*
 * Removes the timers sitting at the root, at the last heap slot and in the
 * middle, alternately, then fires the rest: the stopped ones must never
 * run and the others must still come out in order.
 */
static void
test_loop_stop_removes_timer_anywhere_in_heap(void)
{
	struct rec_timer	*r = rec_array(MANY);
	uint32_t		 seed = 0xabad1dea;
	unsigned		 i, k, want, count;
	uint64_t		 last = 0;
	int			 stopped = 0;

	loop_reset();
	for (i = 0; i < MANY; i++)
		rec_start(&r[i], (int)i, 1 + rng_next(&seed) % SPAN_MS);
	for (k = 0; k < 60; k++) {
		count = loop_timer_count();
		want = k % 3 == 0 ? 1 : k % 3 == 1 ? count : count / 2;
		for (i = 0; i < MANY; i++)
			if (r[i].t.heap_idx == want)
				break;
		if (!CHECKF(i < MANY, "no timer at heap slot %u", want))
			break;
		pt_timer_stop(&r[i].t);
		r[i].deadline = 0;	/* marks "stopped" for the check */
		stopped++;
		CHECKF(r[i].t.heap_idx == 0, "stopped timer keeps slot %u",
		    r[i].t.heap_idx);
		CHECKF(loop_timer_count() == count - 1,
		    "%u timers after a stop, want %u", loop_timer_count(),
		    count - 1);
		/* Stopping again is a no-op. */
		pt_timer_stop(&r[i].t);
		CU_ASSERT_EQUAL(loop_timer_count(), count - 1);
	}
	loop_set_time(T0 + SPAN_MS);
	CU_ASSERT_EQUAL(loop_run_timers(), MANY - stopped);
	for (k = 0; k < (unsigned)fire_n; k++) {
		struct rec_timer *f = &r[fire_log[k]];

		CHECKF(f->deadline != 0, "stopped timer %d fired", f->id);
		CHECKF(f->deadline >= last, "timer %d out of order", f->id);
		last = f->deadline;
	}
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
	free(r);
}

static void
test_loop_stop_on_unarmed_timer_is_noop(void)
{
	struct pt_timer		 t;
	struct rec_timer	 r;

	loop_reset();
	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	rec_start(&r, 0, 10);
	pt_timer_stop(&t);
	pt_timer_stop(&t);
	CU_ASSERT_EQUAL(loop_timer_count(), 1);
	CU_ASSERT_EQUAL(r.t.heap_idx, 1);
	pt_timer_stop(&r.t);
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
}

static void
test_loop_restart_rearms_with_new_deadline(void)
{
	struct rec_timer	 r, other;

	loop_reset();
	memset(&r, 0, sizeof(r));
	memset(&other, 0, sizeof(other));
	rec_start(&other, 1, 300);
	rec_start(&r, 0, 100);
	rec_start(&r, 0, 500);		/* later: pushed back */
	CU_ASSERT_EQUAL(loop_timer_count(), 2);
	loop_set_time(T0 + 100);
	CU_ASSERT_EQUAL(loop_run_timers(), 0);
	loop_set_time(T0 + 300);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(other.fired, 1);
	CU_ASSERT_EQUAL(r.fired, 0);
	rec_start(&r, 0, 50);		/* earlier: pulled in, from now */
	CU_ASSERT_EQUAL(loop_timer_count(), 1);
	loop_set_time(T0 + 349);
	CU_ASSERT_EQUAL(loop_run_timers(), 0);
	loop_set_time(T0 + 350);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(r.fired, 1);
	loop_set_time(T0 + 500);
	CU_ASSERT_EQUAL(loop_run_timers(), 0);
	CU_ASSERT_EQUAL(r.fired, 1);

	/* A timer that already fired can be armed again. */
	rec_start(&r, 0, 10);
	loop_set_time(T0 + 510);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(r.fired, 2);
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
}

struct chain {
	struct pt_timer	 a, b;
	int		 a_fired, b_fired;
	uint64_t	 b_fired_at;
};

static void
chain_on_b(struct pt_timer *t, void *arg)
{
	struct chain	*c = arg;

	c->b_fired++;
	c->b_fired_at = loop_now();
}

static void
chain_on_a(struct pt_timer *t, void *arg)
{
	struct chain	*c = arg;

	c->a_fired++;
	pt_timer_start(&c->b, 40, chain_on_b, c);
}

static void
test_loop_callback_can_arm_another_timer(void)
{
	struct chain	 c;

	loop_reset();
	memset(&c, 0, sizeof(c));
	pt_timer_start(&c.a, 10, chain_on_a, &c);
	loop_set_time(T0 + 10);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(c.a_fired, 1);
	CU_ASSERT_EQUAL(c.b_fired, 0);
	CU_ASSERT_EQUAL(loop_timer_count(), 1);
	loop_set_time(T0 + 49);
	CU_ASSERT_EQUAL(loop_run_timers(), 0);
	loop_set_time(T0 + 50);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(c.b_fired, 1);
	CU_ASSERT_EQUAL(c.b_fired_at, T0 + 50);
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
}

static void
periodic_on_fire(struct pt_timer *t, void *arg)
{
	int	*left = arg;

	if (--*left > 0)
		pt_timer_start(t, 10, periodic_on_fire, arg);
}

static void
test_loop_callback_can_rearm_its_own_timer(void)
{
	struct pt_timer	 t;
	int		 left = 3, step;

	loop_reset();
	memset(&t, 0, sizeof(t));
	pt_timer_start(&t, 10, periodic_on_fire, &left);
	for (step = 1; step <= 3; step++) {
		loop_set_time(T0 + 10 * (uint64_t)step - 1);
		CU_ASSERT_EQUAL(loop_run_timers(), 0);
		loop_set_time(T0 + 10 * (uint64_t)step);
		CU_ASSERT_EQUAL(loop_run_timers(), 1);
		CU_ASSERT_EQUAL(left, 3 - step);
	}
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
}

struct stopper {
	struct pt_timer	 a, b;
	int		 b_fired;
};

static void
stopper_on_b(struct pt_timer *t, void *arg)
{
	struct stopper	*s = arg;

	s->b_fired++;
}

static void
stopper_on_a(struct pt_timer *t, void *arg)
{
	struct stopper	*s = arg;

	pt_timer_stop(&s->b);
}

/* A connection closed by one timer may own another timer due in the same
 * run: stopping it from the callback must keep it from firing. */
static void
test_loop_callback_can_stop_a_due_timer(void)
{
	struct stopper	 s;

	loop_reset();
	memset(&s, 0, sizeof(s));
	pt_timer_start(&s.a, 10, stopper_on_a, &s);
	pt_timer_start(&s.b, 20, stopper_on_b, &s);
	loop_set_time(T0 + 100);
	CU_ASSERT_EQUAL(loop_run_timers(), 1);
	CU_ASSERT_EQUAL(s.b_fired, 0);
	CU_ASSERT_EQUAL(loop_timer_count(), 0);
}

static void
test_loop_pt_now_ms_follows_frozen_clock(void)
{
	loop_set_time(T0 + 12345);
	CU_ASSERT_EQUAL(loop_now(), T0 + 12345);
	CU_ASSERT_EQUAL(pt_now_ms(), T0 + 12345);
	/* Frozen: re-reading the clock must not move it. */
	loop_update_time();
	CU_ASSERT_EQUAL(loop_now(), T0 + 12345);
	loop_reset();
}

void
register_loop_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("loop", loop_suite_init, loop_suite_fini))
	    == NULL)
		return;
	CU_add_test(s, "timers_fire_in_deadline_order",
	    test_loop_timers_fire_in_deadline_order);
	CU_add_test(s, "timers_fire_in_order_after_heap_grows",
	    test_loop_timers_fire_in_order_after_heap_grows);
	CU_add_test(s, "timer_does_not_fire_before_deadline",
	    test_loop_timer_does_not_fire_before_deadline);
	CU_add_test(s, "zero_delay_timer_fires_on_next_run",
	    test_loop_zero_delay_timer_fires_on_next_run);
	CU_add_test(s, "next_timeout_tracks_earliest_timer",
	    test_loop_next_timeout_tracks_earliest_timer);
	CU_add_test(s, "next_timeout_stays_positive_for_far_timers",
	    test_loop_next_timeout_stays_positive_for_far_timers);
	CU_add_test(s, "stop_removes_timer_anywhere_in_heap",
	    test_loop_stop_removes_timer_anywhere_in_heap);
	CU_add_test(s, "stop_on_unarmed_timer_is_noop",
	    test_loop_stop_on_unarmed_timer_is_noop);
	CU_add_test(s, "timers_moved_while_armed_keep_order",
	    test_loop_timers_moved_while_armed_keep_order);
	CU_add_test(s, "timers_rearmed_as_clock_moves_fire_at_last_deadline",
	    test_loop_timers_rearmed_as_clock_moves_fire_at_last_deadline);
	CU_add_test(s, "restart_rearms_with_new_deadline",
	    test_loop_restart_rearms_with_new_deadline);
	CU_add_test(s, "callback_can_arm_another_timer",
	    test_loop_callback_can_arm_another_timer);
	CU_add_test(s, "callback_can_rearm_its_own_timer",
	    test_loop_callback_can_rearm_its_own_timer);
	CU_add_test(s, "callback_can_stop_a_due_timer",
	    test_loop_callback_can_stop_a_due_timer);
	CU_add_test(s, "pt_now_ms_follows_frozen_clock",
	    test_loop_pt_now_ms_follows_frozen_clock);
}
