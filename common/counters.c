/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters in shared anonymous memory. The mapping is made once by the
 * master and inherited by every worker it forks, so no worker ever has to
 * be asked for its numbers and a worker that crashes leaves them behind.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

#include "common/counters.h"

static struct counters_slot	*counters_base;
static int			 counters_nslots;
static struct counters_slot	 counters_local;	/* before mapping */
static struct counters_slot	*counters_mine = &counters_local;

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
