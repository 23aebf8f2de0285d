/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Brute-force slow-down of the auth module, per source address: after
 * <threshold> failed logins from one source within <window_s> seconds,
 * that source is refused for <penalty_s> seconds without verifying
 * anything; other sources are unaffected.
 *
 * What a "source" is:
 * - an IPv4 address; an IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a
 *   dual-stack [::] listener sees for an IPv4 client) is that IPv4 address;
 * - for IPv6, the /64 prefix: one host is normally given a whole /64 and
 *   can pick any address in it (privacy addresses), so counting per /128
 *   would let it try 2^64 times as often. The cost: hosts sharing a /64
 *   share a penalty, as hosts behind one IPv4 NAT do;
 * - any other family (a Unix socket): never counted, never blocked.
 *
 * Counting: the last <threshold> failure times of each source are kept, so
 * the window slides exactly: failures <window_s> or more before now do not
 * count. When a source reaches the threshold its count restarts, and after
 * the penalty it has <threshold> tries again. A success does not reset the
 * count (there is no call for it): an attacker holding one valid account
 * must not be able to wipe its failures on another.
 *
 * The table holds <max_sources> sources, allocated at creation. When it is
 * full, a new source replaces the least recently failed one, preferring
 * one that is neither serving a penalty nor has a failure in the window
 * among the 8 oldest. Flooding from many addresses can therefore push a
 * blocked source out early; it cannot grow memory or crash.
 *
 * Thread: one table per worker, used by its loop thread only (no locks).
 * <now_ms> is a monotonic clock in milliseconds and never goes backwards.
 */
#ifndef PT_AUTH_THROTTLE_H
#define PT_AUTH_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

struct sockaddr;
struct auth_throttle;

/* Bounds auth_throttle_new accepts. */
#define AUTH_THROTTLE_MAX_THRESHOLD	1000u
#define AUTH_THROTTLE_MAX_SOURCES	(1u << 20)
#define AUTH_THROTTLE_MAX_SECONDS	86400u	/* window_s, penalty_s */

/* ---- modules/auth/throttle.c ------------------------------------------ */

/*
 * Returns a table for <max_sources> sources. <threshold> == 0,
 * <max_sources> == 0 or <penalty_s> == 0 give a disabled table (blocked is
 * always false). <window_s> == 0 means failures count forever, until a
 * penalty or eviction. Memory: about 64 + 8 * threshold bytes per source.
 * Returns NULL with errno set: EINVAL when a value is above its
 * AUTH_THROTTLE_MAX_*, ENOMEM. The caller owns it (auth_throttle_free).
 * Any thread, typically init_worker.
 */
struct auth_throttle	*auth_throttle_new(unsigned threshold,
			    unsigned window_s, unsigned penalty_s,
			    unsigned max_sources);

/* True while <peer> serves a penalty: refuse its login at once, without
 * verifying. NULL <t>: false. */
bool			 auth_throttle_blocked(struct auth_throttle *t,
			    const struct sockaddr *peer, uint64_t now_ms);

/* Counts one failed login from <peer> at <now_ms>; the failure that
 * reaches the threshold starts the penalty. NULL <t>: nothing. */
void			 auth_throttle_fail(struct auth_throttle *t,
			    const struct sockaddr *peer, uint64_t now_ms);

/* Releases the table; takes NULL. */
void			 auth_throttle_free(struct auth_throttle *t);

#endif
