/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Verifying one password against one userlist hash: libargon2 for
 * Argon2id, crypt_rn(3) for the crypt schemes. Runs on the auth module's
 * verification threads, never on a worker's loop (tens of milliseconds).
 */
#ifndef PT_AUTH_HASH_H
#define PT_AUTH_HASH_H

#include <stdbool.h>
#include <stddef.h>

#include "modules/auth/userlist.h"

/* Per-thread scratch for crypt_rn (struct crypt_data is ~32 KiB). */
struct hash_scratch;

/* ---- hash.c ----------------------------------------------------------- */
struct hash_scratch *hash_scratch_new(void);
void		 hash_scratch_free(struct hash_scratch *hs);
/* Whether <pass> (<plen> bytes, NUL at pass[plen]) matches <hash>. The
 * time spent depends on the hash's costs, not on where they differ nor
 * on what the password holds (one with a NUL is hashed, then refused). */
bool		 hash_verify(struct hash_scratch *hs, enum ul_scheme scheme,
		    const char *hash, const char *pass, size_t plen);
/* About 30 us of CPU spent hashing, for nothing: pool.c pads a failed
 * login with it until it lasted what a costliest verification lasts. */
void		 hash_burn(void);
/* crypt_checksalt: the system's crypt(3) verifies this setting. */
bool		 hash_crypt_ok(const char *hash);

#endif /* PT_AUTH_HASH_H */
