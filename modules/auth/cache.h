/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verified-credential cache of the auth module: remembers, for
 * <ttl_s> seconds, that a user name and password pair was verified, so a
 * client logging in again skips the Argon2id (or crypt, or helper) round.
 *
 * What it keeps per entry is an HMAC-SHA-256 of the pair under a 32-byte
 * key the caller supplies (the master generates it at start), never the
 * password: a memory dump of a worker yields MACs that cannot be checked
 * offline without the key. The pair is length-prefixed before it is MACed,
 * so "ab" + "c" and "a" + "bc" differ.
 *
 * Rules for the caller:
 * - Only successful verifications are put. Failures are never cached: a
 *   wrong password must cost a full verification every time, or the cache
 *   would turn into a fast oracle for guessing.
 * - One cache per worker, used by that worker's loop thread only: there
 *   are no locks. Verification threads must not call it; they post their
 *   result back to the loop, which then puts.
 * - <now_ms> is a monotonic clock in milliseconds (the loop's time); it
 *   must not go backwards between calls.
 *
 * Memory: everything is allocated by auth_cache_new (about
 * 72 + 2 * 4 bytes per entry); hit, put, drop_user and clear allocate
 * nothing themselves. (libcrypto 3.0 makes two short-lived allocations of
 * its own inside each MAC, freed before it returns.)
 */
#ifndef PT_AUTH_CACHE_H
#define PT_AUTH_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest <max_entries> auth_cache_new accepts (about 300 MiB). */
#define AUTH_CACHE_MAX_ENTRIES	(1u << 22)
/* Largest <ttl_s> auth_cache_new accepts: one day. */
#define AUTH_CACHE_MAX_TTL	86400u

struct auth_cache;

/* ---- modules/auth/cache.c --------------------------------------------- */

/*
 * Returns a cache of at most <max_entries> credentials, each valid <ttl_s>
 * seconds after it was last put, MACed with a copy of <key>. <ttl_s> == 0
 * or <max_entries> == 0 gives a disabled cache: hit is always false, put
 * does nothing. Returns NULL with errno set: EINVAL when <max_entries> or
 * <ttl_s> is above its AUTH_CACHE_MAX_*, ENOMEM, or EIO when libcrypto has
 * no HMAC-SHA-256. The caller owns the result (auth_cache_free). Any
 * thread, typically the worker's init_worker.
 */
struct auth_cache	*auth_cache_new(unsigned max_entries, unsigned ttl_s,
			    const uint8_t key[32]);

/*
 * True when <user>/<pass> (<ulen>/<plen> bytes, not NUL-terminated) was put
 * less than ttl_s seconds before <now_ms>; it then becomes the most
 * recently used entry. An entry found expired is removed. The expiry is
 * counted from the put, never from a hit, so a password changed behind a
 * helper backend stops being accepted at most ttl_s after its last
 * verification however busy the client is. NULL <c>: false.
 */
bool			 auth_cache_hit(struct auth_cache *c, const char *user,
			    size_t ulen, const char *pass, size_t plen,
			    uint64_t now_ms);

/*
 * Remembers that <user>/<pass> was verified at <now_ms>: a new entry, or
 * the existing one with its expiry renewed, made the most recently used.
 * When the cache is full, the least recently used entry is evicted.
 * Successes only (see above). NULL <c> or a disabled cache: nothing.
 */
void			 auth_cache_put(struct auth_cache *c, const char *user,
			    size_t ulen, const char *pass, size_t plen,
			    uint64_t now_ms);

/*
 * Removes every entry for <user>, whatever its password: called when the
 * userlist changed that user (or on any reload, user by user). Walks the
 * whole cache, O(max_entries): for reloads, not for the request path.
 */
void			 auth_cache_drop_user(struct auth_cache *c,
			    const char *user, size_t ulen);

/* Removes every entry (a reload that cannot tell which users changed). */
void			 auth_cache_clear(struct auth_cache *c);

/* Wipes the key and the MACs and releases everything; takes NULL. */
void			 auth_cache_free(struct auth_cache *c);

#endif
