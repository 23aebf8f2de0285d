/* SPDX-License-Identifier: BSD-2-Clause */
/* STUB in branch `auth` only (never blocks): replaced at merge by the
 * brute-force throttle from its own branch. */
#include "modules/auth/throttle.h"

#include <stdlib.h>

struct auth_throttle {
	unsigned	 unused;
};

struct auth_throttle *
auth_throttle_new(unsigned threshold, unsigned window_s, unsigned penalty_s,
    unsigned max_sources)
{
	(void)threshold; (void)window_s; (void)penalty_s; (void)max_sources;
	return calloc(1, sizeof(struct auth_throttle));
}

bool
auth_throttle_blocked(struct auth_throttle *t, const struct sockaddr *peer,
    uint64_t now_ms)
{
	(void)t; (void)peer; (void)now_ms;
	return false;
}

void
auth_throttle_fail(struct auth_throttle *t, const struct sockaddr *peer,
    uint64_t now_ms)
{
	(void)t; (void)peer; (void)now_ms;
}

void
auth_throttle_free(struct auth_throttle *t)
{
	free(t);
}
