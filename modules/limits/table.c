/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared key table and class slots (see table.h for the model and
 * its guarantees). The master maps and writes the class slots; every
 * process finds and updates keys. What this file does not do: decide
 * what a limit means for a connection (limits.c) or parse anything.
 */
#include "modules/limits/table.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>

#include <portico/hash.h>

/* How long an inserter spins for its group's lock before it settles for
 * the class's overflow entry (the holder only writes a few words). */
#define TABLE_LOCK_SPINS	4096

static size_t
table_align(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

int
table_open(struct table *t, uint32_t nentries)
{
	size_t		 off_classes, off_locks, off_entries, size;
	uint32_t	 ngroups;
	void		*base;

	memset(t, 0, sizeof(*t));
	ngroups = nentries / TABLE_GROUP + (nentries % TABLE_GROUP != 0);
	if (ngroups == 0)
		ngroups = 1;
	off_classes = 0;
	off_locks = table_align(off_classes +
	    sizeof(struct table_class) * TABLE_CLASSES);
	off_entries = table_align(off_locks + sizeof(uint64_t) * ngroups);
	size = off_entries + sizeof(struct table_entry) *
	    ((size_t)ngroups * TABLE_GROUP + TABLE_CLASSES);
	base = mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return -errno;
	t->base = base;
	t->size = size;
	t->ngroups = ngroups;
	t->nentries = ngroups * TABLE_GROUP;
	t->classes = (struct table_class *)((char *)base + off_classes);
	t->locks = (_Atomic uint64_t *)((char *)base + off_locks);
	t->entries = (struct table_entry *)((char *)base + off_entries);
	/* Subjects are the clients' choice (user names): a secret seed
	 * keeps them from aiming many keys at one group. */
	if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(t->seed))
		t->seed = (uint64_t)(uintptr_t)base ^ (uint64_t)time(NULL);
	return 0;
}

void
table_close(struct table *t)
{
	if (t->base != NULL)
		munmap(t->base, t->size);
	memset(t, 0, sizeof(*t));
}

/* ---- class slots ------------------------------------------------------ */

static bool
table_params_same(const struct table_class *c, const struct table_params *p)
{
	int	 b;

	for (b = 0; b < LB_COUNT; b++)
		if (atomic_load(&c->rate[b]) != p->rate[b] ||
		    atomic_load(&c->burst[b]) != p->burst[b])
			return false;
	return atomic_load(&c->max_conns) == p->max_conns;
}

int
table_class_set(struct table *t, const char *name, uint64_t shape,
    const struct table_params *p, uint64_t now_ns)
{
	struct table_class	*c;
	int			 i, slot = -1, b;
	bool			 fresh = false;

	for (i = 0; i < TABLE_CLASSES; i++) {
		c = &t->classes[i];
		if (atomic_load(&c->used) &&
		    strcmp(c->name, name) == 0) {
			slot = i;
			break;
		}
	}
	if (slot < 0) {
		for (i = 0; i < TABLE_CLASSES; i++)
			if (!atomic_load(&t->classes[i].used)) {
				slot = i;
				fresh = true;
				break;
			}
		if (slot < 0)
			return -1;
	}
	c = &t->classes[slot];
	if (!fresh && c->shape == shape && table_params_same(c, p))
		return slot;
	/* Writers are the master alone; readers retry while seq is odd
	 * or moved under them. */
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (b = 0; b < LB_COUNT; b++) {
		atomic_store_explicit(&c->rate[b], p->rate[b],
		    memory_order_relaxed);
		atomic_store_explicit(&c->burst[b], p->burst[b],
		    memory_order_relaxed);
	}
	atomic_store_explicit(&c->max_conns, p->max_conns,
	    memory_order_relaxed);
	atomic_store_explicit(&c->epoch_ns, now_ns, memory_order_relaxed);
	atomic_store_explicit(&c->gen, atomic_load(&c->gen) + 1,
	    memory_order_relaxed);
	if (fresh || c->shape != shape)
		atomic_store_explicit(&c->instance,
		    atomic_load(&c->instance) + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_relaxed);
	if (fresh) {
		strncpy(c->name, name, sizeof(c->name) - 1);
		c->name[sizeof(c->name) - 1] = '\0';
		atomic_store(&c->used, 1);
	}
	c->shape = shape;
	return slot;
}

void
table_class_retire(struct table *t, const uint64_t *keep)
{
	int	 i;

	for (i = 0; i < TABLE_CLASSES; i++)
		if (!(keep[i / 64] >> (i % 64) & 1))
			atomic_store(&t->classes[i].used, 0);
}

void
table_class_read(const struct table *t, int slot, struct table_params *out)
{
	struct table_class	*c = &t->classes[slot];
	uint32_t		 s0, s1;
	int			 b;

	do {
		s0 = atomic_load_explicit(&c->seq, memory_order_acquire);
		for (b = 0; b < LB_COUNT; b++) {
			out->rate[b] = atomic_load_explicit(&c->rate[b],
			    memory_order_relaxed);
			out->burst[b] = atomic_load_explicit(&c->burst[b],
			    memory_order_relaxed);
		}
		out->max_conns = atomic_load_explicit(&c->max_conns,
		    memory_order_relaxed);
		out->epoch_ns = atomic_load_explicit(&c->epoch_ns,
		    memory_order_relaxed);
		out->gen = atomic_load_explicit(&c->gen,
		    memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		s1 = atomic_load_explicit(&c->seq, memory_order_relaxed);
	} while (s0 != s1 || (s0 & 1) != 0);
}

uint32_t
table_class_instance(const struct table *t, int slot)
{
	return atomic_load_explicit(&t->classes[slot].instance,
	    memory_order_relaxed);
}

/* ---- keys ------------------------------------------------------------- */

uint64_t
table_key(const struct table *t, int slot, uint32_t instance,
    const void *subject, size_t len)
{
	uint64_t	 h = t->seed ^ PT_HASH_FNV64_BASIS;

	h = pt_hash_mix64(h ^ ((uint64_t)(unsigned)slot << 32 | instance));
	h = pt_hash_fnv64(h, subject, len);
	h = pt_hash_mix64(h ^ len);
	return h != 0 ? h : 1;
}

/* The key of slot <slot>'s overflow entry: the same whatever the
 * instance, so connections holding it find it again. */
static uint64_t
table_overflow_key(const struct table *t, int slot)
{
	return table_key(t, slot, UINT32_MAX, "\0overflow", 9);
}

bool
table_is_overflow(const struct table *t, uint32_t idx)
{
	return idx >= t->nentries;
}

/* Brings <e>'s buckets to generation <p>->gen: whoever moves the
 * generation resets the buckets (full, on the new token clock). */
static void
table_entry_sync(struct table_entry *e, const struct table_params *p)
{
	uint32_t	 g = atomic_load_explicit(&e->gen,
			    memory_order_acquire);
	int		 b;

	if (g == p->gen)
		return;
	if (!atomic_compare_exchange_strong(&e->gen, &g, p->gen))
		return;
	for (b = 0; b < LB_COUNT; b++)
		atomic_store_explicit(&e->tat[b], 0, memory_order_relaxed);
}

static void
table_touch(struct table_entry *e, uint64_t now_ns)
{
	/* A store per millisecond at most: the line is shared. */
	if (now_ns - atomic_load_explicit(&e->last_ns, memory_order_relaxed) >
	    1000000)
		atomic_store_explicit(&e->last_ns, now_ns,
		    memory_order_relaxed);
}

static struct table_entry *
table_find(struct table *t, uint32_t g, uint64_t key, uint32_t *idx_out)
{
	struct table_entry	*e = &t->entries[(size_t)g * TABLE_GROUP];
	int			 i;

	for (i = 0; i < TABLE_GROUP; i++)
		if (atomic_load_explicit(&e[i].key, memory_order_acquire) ==
		    key) {
			*idx_out = g * TABLE_GROUP + (uint32_t)i;
			return &e[i];
		}
	return NULL;
}

static bool
table_lock(struct table *t, uint32_t g, uint64_t now_ns)
{
	uint64_t	 held;
	int		 i;

	for (i = 0; i < TABLE_LOCK_SPINS; i++) {
		held = 0;
		if (atomic_compare_exchange_weak_explicit(&t->locks[g], &held,
		    now_ns != 0 ? now_ns : 1, memory_order_acquire,
		    memory_order_relaxed))
			return true;
		/* A holder that died holding it: take it over. */
		if (held != 0 && now_ns > held &&
		    now_ns - held > TABLE_LOCK_STALE_NS &&
		    atomic_compare_exchange_strong_explicit(&t->locks[g],
		    &held, now_ns, memory_order_acquire,
		    memory_order_relaxed))
			return true;
	}
	return false;
}

static void
table_unlock(struct table *t, uint32_t g)
{
	atomic_store_explicit(&t->locks[g], 0, memory_order_release);
}

static struct table_entry *
table_overflow(struct table *t, int slot, const struct table_params *p,
    uint64_t now_ns, uint32_t *idx_out)
{
	struct table_entry	*e = &t->entries[t->nentries + (uint32_t)slot];
	uint64_t		 k = table_overflow_key(t, slot);

	t->overflowed++;
	if (atomic_load_explicit(&e->key, memory_order_acquire) != k) {
		/* First use: the class's buckets start full. Racing first
		 * users write the same values. */
		atomic_store(&e->gen, p->gen);
		atomic_store(&e->key, k);
	}
	table_entry_sync(e, p);
	table_touch(e, now_ns);
	*idx_out = t->nentries + (uint32_t)slot;
	return e;
}

struct table_entry *
table_get(struct table *t, int slot, uint64_t key,
    const struct table_params *p, uint64_t now_ns, uint32_t *idx_out)
{
	struct table_entry	*e, *grp, *victim = NULL;
	uint32_t		 g = (uint32_t)(key >> 32) % t->ngroups;
	uint64_t		 k, oldest = UINT64_MAX, last;
	int			 i;

	if ((e = table_find(t, g, key, idx_out)) != NULL)
		goto found;
	if (!table_lock(t, g, now_ns))
		return table_overflow(t, slot, p, now_ns, idx_out);
	/* Another process may have made it while we waited. */
	if ((e = table_find(t, g, key, idx_out)) != NULL) {
		table_unlock(t, g);
		goto found;
	}
	grp = &t->entries[(size_t)g * TABLE_GROUP];
	for (i = 0; i < TABLE_GROUP; i++) {
		k = atomic_load_explicit(&grp[i].key, memory_order_relaxed);
		if (k == 0) {
			victim = &grp[i];
			break;
		}
		if (atomic_load_explicit(&grp[i].conns,
		    memory_order_acquire) != 0)
			continue;
		last = atomic_load_explicit(&grp[i].last_ns,
		    memory_order_relaxed);
		if (last < oldest) {
			oldest = last;
			victim = &grp[i];
		}
	}
	if (victim == NULL) {
		table_unlock(t, g);
		return table_overflow(t, slot, p, now_ns, idx_out);
	}
	/* Off the old key first, so no lookup finds it half made. */
	atomic_store_explicit(&victim->key, 0, memory_order_release);
	atomic_store_explicit(&victim->conns, 0, memory_order_relaxed);
	atomic_store_explicit(&victim->gen, p->gen, memory_order_relaxed);
	atomic_store_explicit(&victim->last_ns, now_ns, memory_order_relaxed);
	for (i = 0; i < LB_COUNT; i++)
		atomic_store_explicit(&victim->tat[i], 0,
		    memory_order_relaxed);
	atomic_store_explicit(&victim->key, key, memory_order_release);
	table_unlock(t, g);
	*idx_out = (uint32_t)(victim - t->entries);
	return victim;
found:
	table_entry_sync(e, p);
	table_touch(e, now_ns);
	return e;
}

struct table_entry *
table_entry_at(struct table *t, uint32_t idx, uint64_t key,
    const struct table_params *p, uint64_t now_ns)
{
	struct table_entry	*e;

	if (idx >= t->nentries + TABLE_CLASSES)
		return NULL;
	e = &t->entries[idx];
	if (table_is_overflow(t, idx)) {
		if (atomic_load_explicit(&e->key, memory_order_acquire) !=
		    table_overflow_key(t, (int)(idx - t->nentries)))
			return NULL;
	} else if (atomic_load_explicit(&e->key, memory_order_acquire) !=
	    key)
		return NULL;
	table_entry_sync(e, p);
	table_touch(e, now_ns);
	return e;
}
