/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/tls/tls_ticket.c: ticket keys are a pure function
 * of secret, listener name and period (so workers and hosts agree without
 * talking), differ when any of the three differs, and match known values
 * computed independently (python's hmac), which pins the derivation: a
 * change to it would silently stop hosts of two versions from resuming
 * each other's sessions. Key files: too short refused, else SHA-256.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "modules/tls/tls_ticket.h"
#include "t/unit/check.h"

static void
t_hex(const unsigned char *b, size_t n, char *out)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void
test_tls_ticket_known_answer(void)
{
	unsigned char		 secret[TLS_TICKET_SECRET_LEN];
	struct tls_ticket_keys	 k;
	char			 hex[65];
	int			 i;

	for (i = 0; i < TLS_TICKET_SECRET_LEN; i++)
		secret[i] = (unsigned char)i;
	CU_ASSERT_FATAL(tls_ticket_derive(secret, "tls", 123456789, &k) == 0);
	t_hex(k.name, sizeof(k.name), hex);
	CHECKF(strcmp(hex, "460dac323a26307f14d9cb122de0992b") == 0,
	    "name %s", hex);
	t_hex(k.aes, sizeof(k.aes), hex);
	CHECKF(strcmp(hex, "df3f605ed67bc1d75f2f4eccdbd45376"
	    "9319bb5f85394620155b3ac2b7a3f0e2") == 0, "aes %s", hex);
	t_hex(k.mac, sizeof(k.mac), hex);
	CHECKF(strcmp(hex, "69d315b4887b75072cba1523c772ed95"
	    "503357ed71a8e1ea5ad8550d1e6eac96") == 0, "mac %s", hex);
}

static void
test_tls_ticket_inputs_matter(void)
{
	unsigned char		 s1[TLS_TICKET_SECRET_LEN];
	unsigned char		 s2[TLS_TICKET_SECRET_LEN];
	struct tls_ticket_keys	 a, b, c, d, e;

	memset(s1, 0x11, sizeof(s1));
	memcpy(s2, s1, sizeof(s2));
	s2[31] ^= 1;
	CU_ASSERT_FATAL(tls_ticket_derive(s1, "tls", 7, &a) == 0);
	CU_ASSERT_FATAL(tls_ticket_derive(s1, "tls", 7, &b) == 0);
	CU_ASSERT_FATAL(tls_ticket_derive(s1, "tls", 8, &c) == 0);
	CU_ASSERT_FATAL(tls_ticket_derive(s1, "tls2", 7, &d) == 0);
	CU_ASSERT_FATAL(tls_ticket_derive(s2, "tls", 7, &e) == 0);
	CU_ASSERT(memcmp(&a, &b, sizeof(a)) == 0);
	CU_ASSERT(memcmp(a.name, c.name, sizeof(a.name)) != 0);
	CU_ASSERT(memcmp(a.aes, c.aes, sizeof(a.aes)) != 0);
	CU_ASSERT(memcmp(a.name, d.name, sizeof(a.name)) != 0);
	CU_ASSERT(memcmp(a.mac, d.mac, sizeof(a.mac)) != 0);
	CU_ASSERT(memcmp(a.name, e.name, sizeof(a.name)) != 0);
	CU_ASSERT(memcmp(a.aes, e.aes, sizeof(a.aes)) != 0);
	/* the three keys of one period are not one another */
	CU_ASSERT(memcmp(a.aes, a.mac, sizeof(a.aes)) != 0);
	CU_ASSERT(memcmp(a.name, a.aes, sizeof(a.name)) != 0);
	/* a label is cut at 255 bytes, never read past */
	{
		char	 long1[400], long2[400];

		memset(long1, 'a', sizeof(long1) - 1);
		long1[sizeof(long1) - 1] = '\0';
		memcpy(long2, long1, sizeof(long2));
		long2[300] = 'b';
		CU_ASSERT(tls_ticket_derive(s1, long1, 1, &a) == 0);
		CU_ASSERT(tls_ticket_derive(s1, long2, 1, &b) == 0);
		CU_ASSERT(memcmp(&a, &b, sizeof(a)) == 0);
	}
}

static void
test_tls_ticket_secret_from_file_bytes(void)
{
	static const unsigned char bytes[] =
	    "0123456789abcdef0123456789abcdef";
	unsigned char	 out[TLS_TICKET_SECRET_LEN];
	char		 hex[65];

	CU_ASSERT(tls_ticket_secret_from(bytes, 31, out) == -1);
	CU_ASSERT(tls_ticket_secret_from(bytes, 0, out) == -1);
	CU_ASSERT_FATAL(tls_ticket_secret_from(bytes, 32, out) == 0);
	t_hex(out, sizeof(out), hex);
	CHECKF(strcmp(hex, "3eb1bd439947eb762998e566ccc2e099"
	    "c791118b2f40579cc4f7da2b5061b7f9") == 0, "sha256 %s", hex);
}

void	register_tls_ticket_suite(void);

void
register_tls_ticket_suite(void)
{
	CU_pSuite	 s = CU_add_suite("tls_ticket", NULL, NULL);

	CU_add_test(s, "known_answer", test_tls_ticket_known_answer);
	CU_add_test(s, "inputs_matter", test_tls_ticket_inputs_matter);
	CU_add_test(s, "secret_from_file_bytes",
	    test_tls_ticket_secret_from_file_bytes);
}
