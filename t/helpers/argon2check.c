/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * argon2check ENCODED: reads one password from stdin (everything, as is)
 * and exits 0 when libargon2 verifies it against the PHC string ENCODED
 * ($argon2id$...), 1 when it does not, 2 on a usage or decoding error.
 * Used by t/integ/passwd.py to check what portico-passwd wrote with the
 * library's own decoder, not with portico-passwd's code.
 */
#include <argon2.h>
#include <stdio.h>
#include <string.h>

int
main(int argc, char **argv)
{
	char pw[8192];
	size_t n;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: argon2check ENCODED < password\n");
		return 2;
	}
	n = fread(pw, 1, sizeof(pw), stdin);
	rc = argon2id_verify(argv[1], pw, n);
	if (rc == ARGON2_OK)
		return 0;
	fprintf(stderr, "argon2check: %s\n", argon2_error_message(rc));
	return rc == ARGON2_VERIFY_MISMATCH ? 1 : 2;
}
