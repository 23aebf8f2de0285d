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
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "common/counters.h"

static struct counters_slot	*counters_base;
static int			 counters_nslots;
static struct counters_slot	 counters_local;	/* before mapping */
static struct counters_slot	*counters_mine = &counters_local;
static bool			 counters_in_worker;
static char		 counters_mnames[PT_COUNTERS_MAX][COUNTERS_NAME_MAX + 1];
static int			 counters_mcount;

static const char *const counters_names[CTR_COUNT] = {
	"accepted", "active", "closed", "bytes_in", "bytes_out",
	"accept_paused", "upstream_failed", "denied", "udp_denied",
};

int
counters_map(int nslots)
{
	void	*p;

	p = mmap(NULL, sizeof(struct counters_slot) * (size_t)nslots,
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	counters_base = p;
	counters_nslots = nslots;
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

int
pt_counter_register(const char *name)
{
	int	 i;

	/* A name registered in a worker would be unknown to the master
	 * that sums and prints it. */
	if (counters_in_worker)
		return -EPERM;
	if (!counters_name_ok(name))
		return -EINVAL;
	for (i = 0; i < counters_mcount; i++)
		if (strcmp(counters_mnames[i], name) == 0)
			return i;
	if (counters_mcount >= PT_COUNTERS_MAX)
		return -ENOSPC;
	strcpy(counters_mnames[counters_mcount], name);
	return counters_mcount++;
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
		sum = 0;
		for (i = 0; i < counters_nslots; i++)
			sum += __atomic_load_n(&counters_base[i].m[j],
			    __ATOMIC_RELAXED);
		r = snprintf(buf + n, cap - n, " %s=%llu", counters_mnames[j],
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
}
