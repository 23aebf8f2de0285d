/* SPDX-License-Identifier: BSD-2-Clause */
/* STUB in branch `auth` only: the real throttle.[ch] come from another
 * helper's branch; the lead replaces this file with theirs at merge. */
#ifndef PT_AUTH_THROTTLE_H
#define PT_AUTH_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct auth_throttle;

struct auth_throttle *auth_throttle_new(unsigned threshold, unsigned window_s,
		    unsigned penalty_s, unsigned max_sources);
bool		 auth_throttle_blocked(struct auth_throttle *t,
		    const struct sockaddr *peer, uint64_t now_ms);
void		 auth_throttle_fail(struct auth_throttle *t,
		    const struct sockaddr *peer, uint64_t now_ms);
void		 auth_throttle_free(struct auth_throttle *t);

#endif
