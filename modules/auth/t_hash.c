/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of password verification (modules/auth/hash.c) with real
 * libargon2 and crypt(3): the right password matches, a wrong one does
 * not, and a password holding a NUL is refused even where the hash of
 * its bytes (Argon2id) or of the bytes before the NUL (crypt) matches.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <argon2.h>
#include <crypt.h>

#include "modules/auth/hash.h"
#include "t/unit/check.h"

void	register_auth_hash_suite(void);

static void
test_auth_hash_argon2id_nul_refused(void)
{
	struct hash_scratch	*hs = hash_scratch_new();
	char			 enc[128];
	static const char	 pw[] = "pw\0x";

	CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
	CU_ASSERT_EQUAL_FATAL(argon2id_hash_encoded(1, 64, 1, pw, 4,
	    "saltsaltsalt", 12, 32, enc, sizeof(enc)), ARGON2_OK);
	CU_ASSERT(!hash_verify(hs, UL_ARGON2ID, enc, pw, 4));
	CU_ASSERT(!hash_verify(hs, UL_ARGON2ID, enc, "pw", 2));
	CU_ASSERT_EQUAL_FATAL(argon2id_hash_encoded(1, 64, 1, "pw", 2,
	    "saltsaltsalt", 12, 32, enc, sizeof(enc)), ARGON2_OK);
	CU_ASSERT(hash_verify(hs, UL_ARGON2ID, enc, "pw", 2));
	CU_ASSERT(!hash_verify(hs, UL_ARGON2ID, enc, "pX", 2));
	hash_scratch_free(hs);
}

static void
test_auth_hash_crypt_nul_refused(void)
{
	struct hash_scratch	*hs = hash_scratch_new();
	struct crypt_data	 cd;
	char			 h[CRYPT_OUTPUT_SIZE];
	const char		*out;

	CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
	memset(&cd, 0, sizeof(cd));
	out = crypt_rn("pw", "$6$saltsalt$", &cd, sizeof(cd));
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_FATAL(strlen(out) < sizeof(h));
	strcpy(h, out);
	CU_ASSERT(hash_verify(hs, UL_CRYPT, h, "pw", 2));
	/* crypt(3) would hash "pw" and match: refused all the same. */
	CU_ASSERT(!hash_verify(hs, UL_CRYPT, h, "pw\0x", 4));
	CU_ASSERT(!hash_verify(hs, UL_CRYPT, h, "pX", 2));
	hash_scratch_free(hs);
}

void
register_auth_hash_suite(void)
{
	CU_pSuite	 s = CU_add_suite("auth_hash", NULL, NULL);

	CU_add_test(s, "argon2id: a NUL refused",
	    test_auth_hash_argon2id_nul_refused);
	CU_add_test(s, "crypt: a NUL refused",
	    test_auth_hash_crypt_nul_refused);
}
