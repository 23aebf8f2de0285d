/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Password verification against the userlist's hashes. Argon2id goes
 * through libargon2's argon2id_verify (which compares in constant time);
 * bcrypt, yescrypt and SHA-crypt through crypt_rn with a per-thread
 * scratch area, the result compared with CRYPTO_memcmp so the position
 * of the first differing byte does not show in the time taken; and the
 * padding a failed login burns (hash_burn). Called only from the
 * verification threads (pool.c): nothing here touches the worker's loop
 * or portico's API.
 */
#include "modules/auth/hash.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <argon2.h>
#include <crypt.h>
#include <openssl/crypto.h>

struct hash_scratch {
	struct crypt_data	 cd;
};

struct hash_scratch *
hash_scratch_new(void)
{
	return calloc(1, sizeof(struct hash_scratch));
}

void
hash_scratch_free(struct hash_scratch *hs)
{
	if (hs != NULL) {
		OPENSSL_cleanse(hs, sizeof(*hs));
		free(hs);
	}
}

bool
hash_crypt_ok(const char *hash)
{
	return crypt_checksalt(hash) == CRYPT_SALT_OK;
}

bool
hash_verify(struct hash_scratch *hs, enum ul_scheme scheme,
    const char *hash, const char *pass, size_t plen)
{
	const char	*out;
	size_t		 hlen;
	bool		 ok, nul;

	/* A NUL inside the password cannot be what crypt(3) hashed (it
	 * would hash the bytes before it). Refused, but after hashing like
	 * any other password: an unknown user's answer at once would stand
	 * apart from a known user's, which pool.c pads. */
	nul = memchr(pass, '\0', plen) != NULL;
	switch (scheme) {
	case UL_ARGON2ID:
		return argon2id_verify(hash, pass, plen) == ARGON2_OK && !nul;
	case UL_CRYPT:
		out = crypt_rn(pass, hash, &hs->cd, sizeof(hs->cd));
		hlen = strlen(hash);
		ok = out != NULL && out[0] != '*' && strlen(out) == hlen &&
		    CRYPTO_memcmp(out, hash, hlen) == 0;
		OPENSSL_cleanse(hs->cd.output, sizeof(hs->cd.output));
		return ok && !nul;
	}
	return false;
}

void
hash_burn(void)
{
	static const char	 salt[16] = "portico-padding";
	uint8_t			 out[32];

	/* One pass over 64 KiB: about 30 us, in the CPU's caches. */
	(void)argon2id_hash_raw(1, 64, 1, "", 0, salt, sizeof(salt), out,
	    sizeof(out));
}
