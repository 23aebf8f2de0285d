/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters in shared anonymous memory. The mapping is made once by the
 * master and inherited by every worker it forks, so no worker ever has to
 * be asked for its numbers and a worker that crashes leaves them behind.
 *
 * Module counters (pt_counter_register) live in the same slots. Their
 * names are registered in the master, from a module's conf() or
 * init_master, and kept in its ordinary memory: a worker inherits the
 * names it was forked with and needs no others, since it only adds by id.
 * A name stays registered for the life of the master, so a reload that
 * registers it again gets the same id and the totals go on counting.
 * The names are also copied into the mapping, so that a worker serving
 * a status listener knows names registered after it was forked.
 *
 * The same mapping holds what a status listener shows of the master
 * (generation, reloads, the worker table): written by the master alone,
 * one relaxed atomic store per field, read by workers the same way.
 *
 * Histograms keep one counter per bucket, not cumulative ones: an
 * observation is one atomic add to its bucket and one to the sum, in the
 * worker's own slot, and a scrape adds the buckets up.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/counters.h"

static struct counters_master	*counters_m;
static struct counters_slot	*counters_base;
static int			 counters_nslots;
static struct counters_slot	 counters_local;	/* before mapping */
static struct counters_slot	*counters_mine = &counters_local;
static bool			 counters_in_worker;
static struct counters_mname	 counters_mnames[PT_COUNTERS_MAX];
static int			 counters_mcount;

static const char *const counters_names[CTR_COUNT] = {
	"accepted", "active", "closed", "bytes_in", "bytes_out",
	"accept_paused", "upstream_failed", "denied", "udp_denied",
	"dns_hits", "dns_misses", "dns_failures", "udp_up", "udp_down",
	"udp_drop_invalid", "udp_drop_resolving", "udp_drop_send",
	"udp_drop_too_big", "udp_drop_module", "udp_drop_unsolicited",
	"spliced", "pp_v1", "pp_v2", "pp_refused_signature",
	"pp_refused_malformed", "pp_refused_too_long", "pp_refused_crc",
	"pp_refused_source", "pp_refused_timeout", "pp_refused_closed",
};

/* 0.5 ms to 30 s: loopback connects and cached lookups fall in the
 * first buckets, a slow origin or resolver in the last ones. */
const uint64_t counters_bounds_us[COUNTERS_BUCKETS - 1] = {
	500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
	500000, 1000000, 2500000, 5000000, 10000000, 30000000,
};

#define STORE(field, v)	__atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

int
counters_map(int nslots)
{
	size_t	 head, len;
	void	*p;
	int	 i;

	/* The master's record first, padded so the slots stay aligned. */
	head = (sizeof(struct counters_master) + 63) & ~(size_t)63;
	len = head + sizeof(struct counters_slot) * (size_t)nslots;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	    -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	counters_m = p;
	counters_base = (struct counters_slot *)((char *)p + head);
	counters_nslots = nslots;
	for (i = 0; i < counters_mcount; i++)
		counters_m->mnames[i] = counters_mnames[i];
	__atomic_store_n(&counters_m->mcount, counters_mcount,
	    __ATOMIC_RELEASE);
	return 0;
}

void
counters_use_slot(int slot)
{
	counters_in_worker = true;
	if (counters_base != NULL && slot >= 0 && slot < counters_nslots)
		counters_mine = &counters_base[slot];
}

void
counters_add(enum counter_id id, int64_t delta)
{
	__atomic_add_fetch(&counters_mine->c[id], (uint64_t)delta,
	    __ATOMIC_RELAXED);
}

void
counters_txn(int proto, int status, uint64_t us)
{
	int	 cls = status >= 100 && status <= 599 ? status / 100 : 0;

	if (proto < 0 || proto >= COUNTERS_PROTOS)
		return;
	__atomic_add_fetch(&counters_mine->txn[proto][cls], 1,
	    __ATOMIC_RELAXED);
	counters_observe(HIST_REQUEST, us);
}

void
counters_observe(enum counters_hist h, uint64_t us)
{
	struct counters_hist_slot	*hs = &counters_mine->h[h];
	int				 i;

	/* A linear walk: most observations stop in the first buckets. */
	for (i = 0; i < COUNTERS_BUCKETS - 1; i++)
		if (us <= counters_bounds_us[i])
			break;
	__atomic_add_fetch(&hs->b[i], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&hs->sum_us, us, __ATOMIC_RELAXED);
}

uint64_t
counters_now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void
counters_total(uint64_t out[CTR_COUNT])
{
	int	 i, j;

	for (j = 0; j < CTR_COUNT; j++)
		out[j] = 0;
	for (i = 0; i < counters_nslots; i++)
		for (j = 0; j < CTR_COUNT; j++)
			out[j] += __atomic_load_n(&counters_base[i].c[j],
			    __ATOMIC_RELAXED);
}

const char *
counters_name(enum counter_id id)
{
	return counters_names[id];
}

static bool
counters_name_ok(const char *name)
{
	size_t		 n;
	const char	*p;

	if (name == NULL)
		return false;
	for (p = name, n = 0; *p != '\0'; p++, n++)
		if (n >= COUNTERS_NAME_MAX ||
		    !((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '_'))
			return false;
	return n > 0;
}

/* A label value: what Prometheus takes without escaping. */
static bool
counters_value_ok(const char *v)
{
	size_t	 n;

	if (v == NULL)
		return false;
	for (n = 0; v[n] != '\0'; n++)
		if (n >= COUNTERS_VALUE_MAX || v[n] < 0x21 || v[n] > 0x7e ||
		    v[n] == '"' || v[n] == '\\')
			return false;
	return n > 0;
}

static int
counters_register(const char *name, const char *key, const char *value,
    bool core)
{
	struct counters_mname	*e;
	int			 i;

	/* A name registered in a worker would be unknown to the master
	 * that sums and prints it. */
	if (counters_in_worker)
		return -EPERM;
	/* "worker" is the status listener's own label. */
	if (!counters_name_ok(name) || (key != NULL &&
	    (!counters_name_ok(key) || !counters_value_ok(value) ||
	    strcmp(key, "worker") == 0)))
		return -EINVAL;
	if (key == NULL)
		key = value = "";
	for (i = 0; i < counters_mcount; i++) {
		e = &counters_mnames[i];
		if (e->core == core && strcmp(e->name, name) == 0 &&
		    strcmp(e->key, key) == 0 && strcmp(e->value, value) == 0)
			return i;
	}
	if (counters_mcount >= PT_COUNTERS_MAX)
		return -ENOSPC;
	e = &counters_mnames[counters_mcount];
	e->core = core;
	strcpy(e->name, name);
	strcpy(e->key, key);
	strcpy(e->value, value);
	if (counters_m != NULL) {
		/* The name before the count that makes it visible. */
		counters_m->mnames[counters_mcount] = *e;
		__atomic_store_n(&counters_m->mcount, counters_mcount + 1,
		    __ATOMIC_RELEASE);
	}
	return counters_mcount++;
}

int
pt_counter_register(const char *name)
{
	return counters_register(name, NULL, NULL, false);
}

int
pt_counter_register_label(const char *name, const char *key,
    const char *value)
{
	if (key == NULL)
		return -EINVAL;
	return counters_register(name, key, value, false);
}

int
counters_register_core(const char *name, const char *key, const char *value)
{
	if (key == NULL)
		return -EINVAL;
	return counters_register(name, key, value, true);
}

void
pt_counter_add(int id, int64_t delta)
{
	/* The id came from the master, before this worker was forked; a
	 * bad one is a module bug, not worth a crash. */
	if (id < 0 || id >= PT_COUNTERS_MAX)
		return;
	__atomic_add_fetch(&counters_mine->m[id], (uint64_t)delta,
	    __ATOMIC_RELAXED);
}

size_t
counters_fmt_modules(char *buf, size_t cap)
{
	uint64_t	 sum;
	size_t		 n = 0;
	int		 i, j, r;

	if (cap == 0)
		return 0;
	buf[0] = '\0';
	for (j = 0; j < counters_mcount; j++) {
		/* Labelled counters are for the status listener: one per
		 * ACL rule would drown the line. */
		if (counters_mnames[j].key[0] != '\0')
			continue;
		sum = 0;
		for (i = 0; i < counters_nslots; i++)
			sum += __atomic_load_n(&counters_base[i].m[j],
			    __ATOMIC_RELAXED);
		r = snprintf(buf + n, cap - n, " %s=%llu", counters_mnames[j].name,
		    (unsigned long long)sum);
		if (r < 0 || (size_t)r >= cap - n) {
			buf[n] = '\0';
			break;
		}
		n += (size_t)r;
	}
	return n;
}

void
counters_forget_names(void)
{
	counters_mcount = 0;
	if (counters_m != NULL)
		__atomic_store_n(&counters_m->mcount, 0, __ATOMIC_RELEASE);
}

const struct counters_slot *
counters_slots(int *nslots_out)
{
	*nslots_out = counters_nslots;
	return counters_base;
}

const struct counters_master *
counters_master_get(void)
{
	return counters_m;
}

struct counters_parent *
counters_parents(void)
{
	return counters_m != NULL ? counters_m->parents : NULL;
}

void
counters_m_start(void)
{
	if (counters_m == NULL)
		return;
	STORE(counters_m->pid, (int64_t)getpid());
	STORE(counters_m->start_time, (int64_t)time(NULL));
}

void
counters_m_generation(int generation, int workers)
{
	if (counters_m == NULL)
		return;
	STORE(counters_m->generation, generation);
	STORE(counters_m->workers, workers);
	if (workers > counters_m->slots_used)
		STORE(counters_m->slots_used, workers);
}

void
counters_m_reload(bool ok)
{
	if (counters_m == NULL)
		return;
	if (ok)
		STORE(counters_m->reloads_ok, counters_m->reloads_ok + 1);
	else
		STORE(counters_m->reloads_failed,
		    counters_m->reloads_failed + 1);
	STORE(counters_m->last_reload_time, (int64_t)time(NULL));
	STORE(counters_m->last_reload_ok, ok ? 1 : 0);
}

void
counters_m_worker(int slot, pid_t pid, int generation, int cpu,
    enum counters_wstate state)
{
	struct counters_worker	*w;

	if (counters_m == NULL || slot < 0 || slot >= CONF_MAX_WORKERS)
		return;
	w = &counters_m->w[slot];
	STORE(w->slot, slot);
	STORE(w->state, state);
	if (state == WSTATE_RUNNING) {
		STORE(w->pid, (int64_t)pid);
		STORE(w->generation, generation);
		STORE(w->cpu, cpu);
		STORE(w->started, (int64_t)time(NULL));
	} else if (state == WSTATE_NONE) {
		STORE(w->pid, 0);
	}
}

void
counters_m_old(int n, const struct counters_worker *ws)
{
	int	 i;

	if (counters_m == NULL)
		return;
	for (i = 0; i < COUNTERS_OLD_MAX; i++) {
		if (i < n) {
			STORE(counters_m->old[i].pid, ws[i].pid);
			STORE(counters_m->old[i].slot, ws[i].slot);
			STORE(counters_m->old[i].generation, ws[i].generation);
			STORE(counters_m->old[i].cpu, ws[i].cpu);
			STORE(counters_m->old[i].started, ws[i].started);
		}
		STORE(counters_m->old[i].state, i < n ? WSTATE_DRAINING :
		    WSTATE_NONE);
	}
}
