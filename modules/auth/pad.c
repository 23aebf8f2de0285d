/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How long a failed login must last. An unknown user is verified
 * against the userlist's costliest entry; a wrong password for a user
 * whose hash is cheaper would answer sooner and name a user who exists.
 * So each worker keeps the durations of its last verifications of the
 * costliest entry (unknown users, and logins of users with the same
 * costs), and a failed cheaper verification lasts one of them, each in
 * turn: failures then last what unknown users' do, spread and all, not
 * only in the median (a padding always of the median would be told
 * apart by its narrow spread), and one verification preempted for a
 * while stretches one padding in PAD_SAMPLES, as it did its own login.
 * Durations are measured, not computed from the hash's parameters,
 * because the same costs last very different times on different
 * machines (a 32 MiB Argon2id spends more on first touching its memory
 * than on a pass over it on some VMs).
 *
 * It deliberately holds no lock and reads no clock but pad_now: the
 * verification threads (pool.c) call it under their pool's lock, and
 * unit tests run it alone.
 */
#include "modules/auth/pad.h"

#include <time.h>

void
pad_sample(struct auth_pad *p, uint64_t ns)
{
	p->ns[p->next] = ns;
	p->next = (p->next + 1) % PAD_SAMPLES;
	if (p->n < PAD_SAMPLES)
		p->n++;
	p->since = 0;
}

uint64_t
pad_target(struct auth_pad *p)
{
	uint64_t	 ns;

	if (p->n == 0 || p->since >= PAD_REFRESH)
		return 0;
	p->since++;
	p->pick = (p->pick + 1) % p->n;
	ns = p->ns[p->pick];
	/* 0 means "none": a duration too short to read is 1 ns. */
	return ns > 0 ? ns : 1;
}

uint64_t
pad_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
