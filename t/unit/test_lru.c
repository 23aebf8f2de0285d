/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The index-linked LRU list (include/portico/lru.h) over an array of
 * entries made here, its link inside each entry between other fields:
 * the order of use, eviction from the old end, unlinking at either end
 * and in the middle, and a long pseudo-random run checked step by step
 * against a plain array kept in order of use.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "portico/lru.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define LRU_N	16

/* The link sits between two fields that must never change. */
struct lru_ent {
	uint64_t		 before;
	struct pt_lru_link	 lru;
	uint32_t		 after;
};

static struct lru_ent	 lru_ents[LRU_N];
static uint32_t		 lru_newest, lru_oldest;

static struct pt_lru
lru_list(void)
{
	return PT_LRU(lru_ents, lru, &lru_newest, &lru_oldest);
}

static void
lru_fresh(void)
{
	uint32_t	 i;

	for (i = 0; i < LRU_N; i++) {
		lru_ents[i].before = 0x1111111111111111ULL * i;
		lru_ents[i].after = 0x22222222u ^ i;
	}
	pt_lru_init(lru_list());
}

/* The list, newest first, into <out>; its length. Checks the links both
 * ways and the ends as it goes. */
static unsigned
lru_walk(uint32_t *out)
{
	uint32_t	 i, prev = PT_LRU_NIL;
	unsigned	 n = 0;

	for (i = lru_newest; i != PT_LRU_NIL && n <= LRU_N;
	    i = pt_lru_older(lru_list(), i)) {
		CHECKF(pt_lru_newer(lru_list(), i) == prev, "entry %u: newer "
		    "is %u, want %u", i, pt_lru_newer(lru_list(), i), prev);
		out[n++] = i;
		prev = i;
	}
	CHECKF(lru_oldest == prev, "oldest is %u, the walk ended at %u",
	    lru_oldest, prev);
	return n;
}

static void
lru_expect(const uint32_t *want, unsigned nwant, unsigned line)
{
	uint32_t	 got[LRU_N + 1];
	unsigned	 n = lru_walk(got), k;

	CHECKF_AT(__FILE__, line, n == nwant, "%u entries, want %u", n,
	    nwant);
	for (k = 0; k < n && k < nwant; k++)
		CHECKF_AT(__FILE__, line, got[k] == want[k], "position %u: "
		    "%u, want %u", k, got[k], want[k]);
}

#define LRU_EXPECT(...) do {						\
	static const uint32_t	 w_[] = { __VA_ARGS__ };		\
	lru_expect(w_, sizeof(w_) / sizeof(w_[0]), __LINE__);		\
} while (0)

static void
test_lru_starts_empty(void)
{
	uint32_t	 got[LRU_N + 1];

	lru_fresh();
	CU_ASSERT_EQUAL(lru_newest, PT_LRU_NIL);
	CU_ASSERT_EQUAL(lru_oldest, PT_LRU_NIL);
	CU_ASSERT_EQUAL(lru_walk(got), 0);
}

static void
test_lru_pushes_newest_first_and_evicts_oldest(void)
{
	lru_fresh();
	pt_lru_push(lru_list(), 3);
	CU_ASSERT_EQUAL(lru_newest, 3);
	CU_ASSERT_EQUAL(lru_oldest, 3);
	pt_lru_push(lru_list(), 7);
	pt_lru_push(lru_list(), 0);
	LRU_EXPECT(0, 7, 3);
	/* The owner evicts what the old end names. */
	pt_lru_unlink(lru_list(), lru_oldest);
	LRU_EXPECT(0, 7);
	pt_lru_unlink(lru_list(), lru_oldest);
	pt_lru_unlink(lru_list(), lru_oldest);
	CU_ASSERT_EQUAL(lru_newest, PT_LRU_NIL);
	CU_ASSERT_EQUAL(lru_oldest, PT_LRU_NIL);
}

static void
test_lru_touch_moves_to_the_new_end(void)
{
	lru_fresh();
	pt_lru_push(lru_list(), 1);
	pt_lru_push(lru_list(), 2);
	pt_lru_push(lru_list(), 3);
	pt_lru_touch(lru_list(), 1);	/* the oldest */
	LRU_EXPECT(1, 3, 2);
	pt_lru_touch(lru_list(), 3);	/* in the middle */
	LRU_EXPECT(3, 1, 2);
	pt_lru_touch(lru_list(), 3);	/* already the newest */
	LRU_EXPECT(3, 1, 2);
	pt_lru_push(lru_list(), 9);
	LRU_EXPECT(9, 3, 1, 2);
	CU_ASSERT_EQUAL(lru_oldest, 2);
}

static void
test_lru_unlinks_at_either_end_and_in_the_middle(void)
{
	lru_fresh();
	pt_lru_push(lru_list(), 4);
	pt_lru_push(lru_list(), 5);
	pt_lru_push(lru_list(), 6);
	pt_lru_push(lru_list(), 8);
	pt_lru_unlink(lru_list(), 5);
	LRU_EXPECT(8, 6, 4);
	pt_lru_unlink(lru_list(), 8);
	LRU_EXPECT(6, 4);
	pt_lru_unlink(lru_list(), 4);
	LRU_EXPECT(6);
	/* An entry taken off may come back. */
	pt_lru_push(lru_list(), 5);
	LRU_EXPECT(5, 6);
}

static void
test_lru_leaves_the_rest_of_the_entry_alone(void)
{
	uint32_t	 i;

	lru_fresh();
	for (i = 0; i < LRU_N; i++)
		pt_lru_push(lru_list(), i);
	for (i = 0; i < LRU_N; i += 3)
		pt_lru_touch(lru_list(), i);
	for (i = 1; i < LRU_N; i += 4)
		pt_lru_unlink(lru_list(), i);
	for (i = 0; i < LRU_N; i++) {
		CHECKF(lru_ents[i].before == 0x1111111111111111ULL * i,
		    "entry %u: the field before the link changed", i);
		CHECKF(lru_ents[i].after == (0x22222222u ^ i),
		    "entry %u: the field after the link changed", i);
	}
}

/* A list of no entries at all may be described (NULL array). */
static void
test_lru_describes_a_null_array(void)
{
	struct lru_ent	*none = NULL;
	uint32_t	 newest = 5, oldest = 5;
	struct pt_lru	 l = PT_LRU(none, lru, &newest, &oldest);

	pt_lru_init(l);
	CU_ASSERT_EQUAL(newest, PT_LRU_NIL);
	CU_ASSERT_EQUAL(oldest, PT_LRU_NIL);
	CU_ASSERT_EQUAL(l.size, sizeof(struct lru_ent));
	CU_ASSERT_EQUAL(l.link, offsetof(struct lru_ent, lru));
}

/* xorshift32: the same run every time, no clock. */
static uint32_t
lru_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * A cache's life: use an entry (touch it, or list it when it is not),
 * drop one, evict the oldest; after every step the list equals a plain
 * array kept in order of use.
 */
static void
test_lru_matches_a_model_in_a_long_run(void)
{
	uint32_t	 model[LRU_N] = { 0 }, got[LRU_N + 1], i;
	uint32_t	 seed = 0x9e3779b9;
	bool		 listed[LRU_N] = { false };
	unsigned	 n = 0, step, k, m, bad = 0;

	lru_fresh();
	for (step = 0; step < 20000 && bad == 0; step++) {
		i = lru_rand(&seed) % LRU_N;
		switch (lru_rand(&seed) % 4) {
		case 0:
		case 1:		/* used */
			if (listed[i]) {
				pt_lru_touch(lru_list(), i);
				for (k = 0; model[k] != i; k++)
					;
				memmove(model + 1, model, k * sizeof(*model));
			} else {
				pt_lru_push(lru_list(), i);
				memmove(model + 1, model, n * sizeof(*model));
				listed[i] = true;
				n++;
			}
			model[0] = i;
			break;
		case 2:		/* dropped */
			if (!listed[i])
				break;
			pt_lru_unlink(lru_list(), i);
			for (k = 0; model[k] != i; k++)
				;
			memmove(model + k, model + k + 1, (n - k - 1) *
			    sizeof(*model));
			listed[i] = false;
			n--;
			break;
		default:	/* evicted */
			if (n == 0)
				break;
			CHECKF(lru_oldest == model[n - 1], "step %u: oldest "
			    "%u, want %u", step, lru_oldest, model[n - 1]);
			listed[lru_oldest] = false;
			pt_lru_unlink(lru_list(), lru_oldest);
			n--;
			break;
		}
		m = lru_walk(got);
		if (m != n || memcmp(got, model, n * sizeof(*model)) != 0)
			bad = step + 1;
	}
	CHECKF(bad == 0, "the list left the model at step %u", bad - 1);
}

void
register_lru_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("lru", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "starts_empty", test_lru_starts_empty);
	CU_add_test(s, "pushes_newest_first_and_evicts_oldest",
	    test_lru_pushes_newest_first_and_evicts_oldest);
	CU_add_test(s, "touch_moves_to_the_new_end",
	    test_lru_touch_moves_to_the_new_end);
	CU_add_test(s, "unlinks_at_either_end_and_in_the_middle",
	    test_lru_unlinks_at_either_end_and_in_the_middle);
	CU_add_test(s, "leaves_the_rest_of_the_entry_alone",
	    test_lru_leaves_the_rest_of_the_entry_alone);
	CU_add_test(s, "describes_a_null_array",
	    test_lru_describes_a_null_array);
	CU_add_test(s, "matches_a_model_in_a_long_run",
	    test_lru_matches_a_model_in_a_long_run);
}
