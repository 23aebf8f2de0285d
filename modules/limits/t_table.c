/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/limits/table.c: keys found again, a full group
 * evicting its least recently used key without members, a group full of
 * members sending new keys to the class's overflow entry, class slots
 * across "reloads", and two processes taking from one bucket through the
 * shared mapping without losing or inventing a token. Last, the time of
 * one limit check (printed as a TAP comment, never asserted).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "modules/limits/bucket.h"
#include "modules/limits/table.h"
#include "t/unit/check.h"
#include "modules/limits/t_suites.h"

static struct table_params
t_params(uint64_t req_rate, uint64_t req_burst)
{
	struct table_params	 p;

	memset(&p, 0, sizeof(p));
	p.rate[LB_REQ] = req_rate;
	p.burst[LB_REQ] = req_burst;
	return p;
}

static int
t_class(struct table *t, const char *name, struct table_params *p)
{
	int	 slot = table_class_set(t, name, 1, p, 0);

	table_class_read(t, slot, p);
	return slot;
}

static void
test_table_finds_keys_again(void)
{
	struct table		 t;
	struct table_params	 p = t_params(10, 10);
	struct table_entry	*a, *b, *a2;
	uint32_t		 ia, ib, ia2;
	uint64_t		 ka, kb;
	int			 slot;

	CU_ASSERT_FATAL(table_open(&t, 1024) == 0);
	slot = t_class(&t, "c", &p);
	CU_ASSERT(slot >= 0);
	ka = table_key(&t, slot, table_class_instance(&t, slot), "alice", 5);
	kb = table_key(&t, slot, table_class_instance(&t, slot), "bob", 3);
	CU_ASSERT(ka != kb && ka != 0 && kb != 0);
	a = table_get(&t, slot, ka, &p, 1, &ia);
	b = table_get(&t, slot, kb, &p, 1, &ib);
	a2 = table_get(&t, slot, ka, &p, 2, &ia2);
	CU_ASSERT(a == a2 && ia == ia2 && a != b);
	CU_ASSERT(table_entry_at(&t, ia, ka, &p, 3) == a);
	CU_ASSERT(table_entry_at(&t, ia, kb, &p, 3) == NULL);
	CU_ASSERT(!table_is_overflow(&t, ia));
	table_close(&t);
}

/* One group (8 keys): the ninth key takes the place of the least
 * recently used key without members; with every key held by a
 * connection it goes to the class's overflow entry instead, which all
 * such keys share (never unlimited, never a failure). */
static void
test_table_full_evicts_then_overflows(void)
{
	struct table		 t;
	struct table_params	 p = t_params(10, 10);
	struct table_entry	*e[TABLE_GROUP], *x, *y;
	uint64_t		 k[TABLE_GROUP + 2];
	uint32_t		 idx[TABLE_GROUP], ix, iy;
	char			 name[16];
	int			 slot, i;

	CU_ASSERT_FATAL(table_open(&t, TABLE_GROUP) == 0);
	CU_ASSERT(t.ngroups == 1 && t.nentries == TABLE_GROUP);
	slot = t_class(&t, "c", &p);
	for (i = 0; i < TABLE_GROUP + 2; i++) {
		snprintf(name, sizeof(name), "u%d", i);
		k[i] = table_key(&t, slot, table_class_instance(&t, slot),
		    name, strlen(name));
	}
	/* Key i last used at time 100 + i, key 3 the oldest. */
	for (i = 0; i < TABLE_GROUP; i++)
		e[i] = table_get(&t, slot, k[i], &p, i == 3 ? 50 :
		    100 + (uint64_t)i * 2000000, &idx[i]);
	x = table_get(&t, slot, k[TABLE_GROUP], &p, 1ULL << 40, &ix);
	CU_ASSERT(x == e[3] && ix == idx[3]);
	CU_ASSERT(table_entry_at(&t, idx[3], k[3], &p, 1ULL << 40) == NULL);
	for (i = 0; i < TABLE_GROUP; i++)
		if (i != 3)
			CU_ASSERT(table_entry_at(&t, idx[i], k[i], &p,
			    1ULL << 40) == e[i]);
	/* Now every key has a member: nothing may be evicted. */
	for (i = 0; i < TABLE_GROUP; i++)
		atomic_store(&e[i]->conns, 1);
	y = table_get(&t, slot, k[TABLE_GROUP + 1], &p, 1ULL << 41, &iy);
	CU_ASSERT(table_is_overflow(&t, iy));
	CU_ASSERT(t.overflowed == 1);
	/* Its buckets are real: the overflow key is limited like any. */
	CU_ASSERT(bucket_take(&y->tat[LB_REQ], 0, 10, 100, 1, NULL) == 10);
	CU_ASSERT(bucket_take(&y->tat[LB_REQ], 0, 10, 1, 1, NULL) == 0);
	/* Another subject lands on the same overflow entry. */
	CU_ASSERT(table_get(&t, slot, k[0] ^ 0x5a5a, &p, 1ULL << 41, &iy) ==
	    y);
	CU_ASSERT(table_entry_at(&t, iy, 12345, &p, 1ULL << 41) == y);
	table_close(&t);
}

/* A class keeps its slot (and its keys' counts) when its numbers change;
 * the new numbers reset its keys' buckets at their next use. A class
 * whose match changed keeps the slot with a new instance; one dropped
 * frees its slot for another. */
static void
test_table_class_slots_across_reloads(void)
{
	struct table		 t;
	struct table_params	 p = t_params(10, 10), q;
	struct table_entry	*e;
	uint64_t		 keep[TABLE_CLASSES / 64] = { 0 }, k;
	uint32_t		 idx, inst;
	int			 a, b;

	CU_ASSERT_FATAL(table_open(&t, 64) == 0);
	a = table_class_set(&t, "a", 1, &p, 0);
	b = table_class_set(&t, "b", 1, &p, 0);
	CU_ASSERT(a >= 0 && b >= 0 && a != b);
	table_class_read(&t, a, &q);
	inst = table_class_instance(&t, a);
	k = table_key(&t, a, inst, "x", 1);
	e = table_get(&t, a, k, &q, 1, &idx);
	atomic_store(&e->conns, 2);
	CU_ASSERT(bucket_take(&e->tat[LB_REQ], 0, 10, 10, 10, NULL) == 10);
	/* Same numbers: nothing moves. */
	CU_ASSERT(table_class_set(&t, "a", 1, &p, 5) == a);
	table_class_read(&t, a, &q);
	CU_ASSERT(table_entry_at(&t, idx, k, &q, 2) == e);
	CU_ASSERT(bucket_level(&e->tat[LB_REQ], 0, 10) == 0);
	/* New rate: same slot, same instance, the bucket starts full. */
	p.rate[LB_REQ] = 20;
	CU_ASSERT(table_class_set(&t, "a", 1, &p, 7) == a);
	table_class_read(&t, a, &q);
	CU_ASSERT(q.rate[LB_REQ] == 20 && q.epoch_ns == 7);
	CU_ASSERT(table_class_instance(&t, a) == inst);
	CU_ASSERT(table_entry_at(&t, idx, k, &q, 8) == e);
	CU_ASSERT(atomic_load(&e->conns) == 2);
	CU_ASSERT(bucket_level(&e->tat[LB_REQ], 0, 10) == 10);
	/* New match: a new instance, so new keys. */
	CU_ASSERT(table_class_set(&t, "a", 2, &p, 9) == a);
	CU_ASSERT(table_class_instance(&t, a) != inst);
	/* Dropping "b" frees its slot for "c". */
	keep[a / 64] |= 1ULL << (a % 64);
	table_class_retire(&t, keep);
	CU_ASSERT(table_class_set(&t, "c", 1, &p, 10) == b);
	table_close(&t);
}

/* Two processes take one token at a time from one bucket at a frozen
 * instant until it is empty: together exactly the burst. */
static void
test_table_two_processes_share_exactly(void)
{
	struct table		 t;
	struct table_params	 p = t_params(1, 200000);
	struct table_entry	*e;
	uint64_t		 k, mine = 0, theirs = 0;
	uint32_t		 idx;
	int			 slot, fds[2], status;
	pid_t			 pid;

	CU_ASSERT_FATAL(table_open(&t, 64) == 0);
	slot = t_class(&t, "c", &p);
	k = table_key(&t, slot, 1, "k", 1);
	e = table_get(&t, slot, k, &p, 1, &idx);
	CU_ASSERT_FATAL(pipe(fds) == 0);
	if ((pid = fork()) == 0) {
		while (bucket_take(&e->tat[LB_REQ], 0, 200000, 1, 1, NULL))
			mine++;
		if (write(fds[1], &mine, sizeof(mine)) < 0)
			_exit(1);
		_exit(0);
	}
	CU_ASSERT_FATAL(pid > 0);
	while (bucket_take(&e->tat[LB_REQ], 0, 200000, 1, 1, NULL))
		mine++;
	CU_ASSERT(read(fds[0], &theirs, sizeof(theirs)) ==
	    (ssize_t)sizeof(theirs));
	waitpid(pid, &status, 0);
	CHECKF(mine + theirs == 200000, "%llu + %llu tokens taken, want "
	    "200000", (unsigned long long)mine, (unsigned long long)theirs);
	close(fds[0]);
	close(fds[1]);
	table_close(&t);
}

static uint64_t
t_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One request_rate check as the ACCESS hook makes it: the clock, the
 * class's numbers, the key's hash, its entry, one take. Printed, not
 * asserted (a shared machine's timing is no test): the best and the
 * median of 20 batches, since other processes only ever add time. */
static int
t_cmp_u64(const void *a, const void *b)
{
	uint64_t	 x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
test_table_check_timing(void)
{
	struct table		 t;
	struct table_params	 p = t_params(1000000000, 1000000000);
	struct table_entry	*e;
	uint64_t		 t0, k, now, ok = 0, batch[20];
	uint32_t		 idx;
	int			 slot, i, b, n = 100000;

	CU_ASSERT_FATAL(table_open(&t, 16384) == 0);
	slot = t_class(&t, "bench", &p);
	for (b = 0; b < 20; b++) {
		t0 = t_ns();
		for (i = 0; i < n; i++) {
			now = t_ns();
			table_class_read(&t, slot, &p);
			k = table_key(&t, slot, table_class_instance(&t, slot),
			    "someuser", 8);
			e = table_get(&t, slot, k, &p, now, &idx);
			ok += bucket_take(&e->tat[LB_REQ], bucket_units(now,
			    p.epoch_ns, p.rate[LB_REQ]), p.burst[LB_REQ], 1, 1,
			    NULL);
		}
		batch[b] = t_ns() - t0;
	}
	qsort(batch, 20, sizeof(batch[0]), t_cmp_u64);
	printf("# limits: one check (clock, class read, key hash, lookup, "
	    "take): best %.1f ns, median %.1f ns (20 batches of %d)\n",
	    (double)batch[0] / n, (double)batch[10] / n, n);
	CU_ASSERT(ok > 0);
	table_close(&t);
}

void
register_limits_table_suite(void)
{
	CU_pSuite	 s = CU_add_suite("limits_table", NULL, NULL);

	CU_add_test(s, "finds keys again", test_table_finds_keys_again);
	CU_add_test(s, "full: evicts the oldest, then overflows",
	    test_table_full_evicts_then_overflows);
	CU_add_test(s, "class slots across reloads",
	    test_table_class_slots_across_reloads);
	CU_add_test(s, "two processes share a bucket exactly",
	    test_table_two_processes_share_exactly);
	CU_add_test(s, "time of one check (printed)",
	    test_table_check_timing);
}
