/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit test of mac.c: the precomputed-state HMAC-SHA-256 equals the
 * textbook one (the expected value is Python's hmac.new(key,
 * b"bob\0s3cret", sha256) with RFC 4231 case 2's key "Jefe", zero-padded
 * to 32 bytes as HMAC pads it anyway), and any change of user or
 * password, or of where the user ends, changes it. TAP on stdout.
 */
#include <stdio.h>
#include <string.h>

#include "modules/auth/mac.h"

static unsigned	 n, bad;

static void
ok(int cond, const char *what)
{
	n++;
	bad += !cond;
	printf("%s %u - mac: %s\n", cond ? "ok" : "not ok", n, what);
}

int
main(void)
{
	static const uint8_t want[32] = {
		0xfa, 0x7f, 0xdc, 0xc3, 0x5f, 0xb7, 0x30, 0x78, 0x55, 0xdc,
		0x46, 0x45, 0x55, 0x2c, 0x9f, 0x3b, 0xb4, 0x5c, 0x60, 0xbb,
		0xd1, 0xe4, 0x77, 0xa3, 0x76, 0xc3, 0xdb, 0x95, 0x47, 0x86,
		0x2b, 0xd0
	};
	struct auth_mac_key	 mk;
	uint8_t			 key[32] = "Jefe", a[32], b[32];

	auth_mac_key_init(&mk, key);
	auth_mac(&mk, "bob", 3, "s3cret", 6, a);
	ok(memcmp(a, want, 32) == 0, "HMAC-SHA-256(key, user NUL pass)");
	auth_mac(&mk, "bob", 3, "s3cret", 6, b);
	ok(memcmp(a, b, 32) == 0, "the same input gives the same MAC");
	auth_mac(&mk, "bob", 3, "s3creT", 6, b);
	ok(memcmp(a, b, 32) != 0, "another password, another MAC");
	auth_mac(&mk, "bo", 2, "bs3cret", 7, b);
	ok(memcmp(a, b, 32) != 0, "the user/password boundary counts");
	key[0] ^= 1;
	auth_mac_key_init(&mk, key);
	auth_mac(&mk, "bob", 3, "s3cret", 6, b);
	ok(memcmp(a, b, 32) != 0, "another key, another MAC");
	printf("1..%u\n", n);
	return bad ? 1 : 0;
}
