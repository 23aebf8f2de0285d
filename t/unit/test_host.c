/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/host.c: destination hosts read once. A table of {input, kind,
 * canonical text}: names (lower-cased, the final dot dropped), the bytes
 * no name may hold (each one refused wherever it stands), IPv4 addresses
 * in every form the WHATWG URL standard reads (its own examples among
 * them) and the forms it refuses, IPv6 in and out of brackets. Each input
 * is copied to a heap buffer of exactly its size, with no NUL after it,
 * so ASan sees any read past the end.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <CUnit/CUnit.h>

#include "worker/host.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

struct host_case {
	const char	*in;
	size_t		 len;		/* 0: strlen(in) */
	enum host_kind	 kind;
	const char	*text;		/* canonical text, when not BAD */
};

static const struct host_case host_cases[] = {
	/* Names. */
	{ "example.org", 0, HOST_NAME, "example.org" },
	{ "Example.ORG", 0, HOST_NAME, "example.org" },
	{ "example.org.", 0, HOST_NAME, "example.org" },
	{ "a", 0, HOST_NAME, "a" },
	{ "localhost", 0, HOST_NAME, "localhost" },
	{ "_dmarc.x-y.example", 0, HOST_NAME, "_dmarc.x-y.example" },
	{ "xn--bcher-kva.example", 0, HOST_NAME, "xn--bcher-kva.example" },
	{ "123.example", 0, HOST_NAME, "123.example" },
	{ "1.2.3.a", 0, HOST_NAME, "1.2.3.a" },
	{ "0x1g", 0, HOST_NAME, "0x1g" },
	{ "a.0xg", 0, HOST_NAME, "a.0xg" },
	/* Not names. */
	{ "bl\\ocked.test", 0, HOST_BAD, NULL },
	{ "blocked.test\\", 0, HOST_BAD, NULL },
	{ "\\098locked.test", 0, HOST_BAD, NULL },
	{ "bl%6fcked.test", 0, HOST_BAD, NULL },
	{ "a b", 0, HOST_BAD, NULL },
	{ "a\tb", 0, HOST_BAD, NULL },
	{ "a*.test", 0, HOST_BAD, NULL },
	{ "b\xc3\xbc" "cher.example", 0, HOST_BAD, NULL },
	{ "a\0b", 3, HOST_BAD, NULL },
	{ "a.test\0", 7, HOST_BAD, NULL },
	{ "", 0, HOST_BAD, NULL },
	{ ".", 0, HOST_BAD, NULL },
	{ "..", 0, HOST_BAD, NULL },
	{ ".a", 0, HOST_BAD, NULL },
	{ "a..b", 0, HOST_BAD, NULL },
	{ "a.b..", 0, HOST_BAD, NULL },
	{ "a@b", 0, HOST_BAD, NULL },
	{ "a/b", 0, HOST_BAD, NULL },
	{ "[a.b]", 0, HOST_BAD, NULL },
	/* IPv4, strict and in the forms URLs allow (WHATWG's examples). */
	{ "127.0.0.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "127.0.0.1.", 0, HOST_IPV4, "127.0.0.1" },
	{ "0177.0.0.2", 0, HOST_IPV4, "127.0.0.2" },
	{ "0177.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "0x7f.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "0X7F.0X0.0.0X1", 0, HOST_IPV4, "127.0.0.1" },
	{ "2130706433", 0, HOST_IPV4, "127.0.0.1" },
	{ "0x7f000001", 0, HOST_IPV4, "127.0.0.1" },
	{ "017700000001", 0, HOST_IPV4, "127.0.0.1" },
	{ "127.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "127.0.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "192.168.257", 0, HOST_IPV4, "192.168.1.1" },
	{ "0", 0, HOST_IPV4, "0.0.0.0" },
	{ "0x", 0, HOST_IPV4, "0.0.0.0" },
	{ "1.2.3.0x", 0, HOST_IPV4, "1.2.3.0" },
	{ "000000000000000000000000001.2.3.4", 0, HOST_IPV4, "1.2.3.4" },
	{ "255.255.255.255", 0, HOST_IPV4, "255.255.255.255" },
	{ "4294967295", 0, HOST_IPV4, "255.255.255.255" },
	{ "0xffffffff", 0, HOST_IPV4, "255.255.255.255" },
	/* Ends in a number, yet no address: refused, never a name. */
	{ "4294967296", 0, HOST_BAD, NULL },
	{ "0x100000000", 0, HOST_BAD, NULL },
	{ "99999999999999999999999", 0, HOST_BAD, NULL },
	{ "256.0.0.1", 0, HOST_BAD, NULL },
	{ "1.256.0.1", 0, HOST_BAD, NULL },
	{ "1.2.3.256", 0, HOST_BAD, NULL },
	{ "1.2.65536", 0, HOST_BAD, NULL },
	{ "1.2.3.4.5", 0, HOST_BAD, NULL },
	{ "08.0.0.1", 0, HOST_BAD, NULL },
	{ "1.09", 0, HOST_BAD, NULL },
	{ "1..2", 0, HOST_BAD, NULL },
	{ "1.2.3.4..", 0, HOST_BAD, NULL },
	{ "foo.123", 0, HOST_BAD, NULL },
	{ "foo.0x1f", 0, HOST_BAD, NULL },
	{ "bl\\ocked.1", 0, HOST_BAD, NULL },
	{ "1.2.3.4\\", 0, HOST_BAD, NULL },
	/* IPv6. */
	{ "::1", 0, HOST_IPV6, "::1" },
	{ "[::1]", 0, HOST_IPV6, "::1" },
	{ "[2001:DB8:0:0:0:0:0:1]", 0, HOST_IPV6, "2001:db8::1" },
	{ "::ffff:127.0.0.1", 0, HOST_IPV6, "::ffff:127.0.0.1" },
	{ "[::1", 0, HOST_BAD, NULL },
	{ "[]", 0, HOST_BAD, NULL },
	{ "fe80::1%eth0", 0, HOST_BAD, NULL },
	{ "[fe80::1%25eth0]", 0, HOST_BAD, NULL },
	{ "::1\0", 4, HOST_BAD, NULL },
	{ "1:2", 0, HOST_BAD, NULL },
	{ "a.b:80", 0, HOST_BAD, NULL },
};

/* host_parse on an exact-size heap copy of <in>. */
static enum host_kind
parse_copy(const char *in, size_t len, struct host *h)
{
	char		*buf = malloc(len ? len : 1);
	enum host_kind	 k;

	CU_ASSERT_FATAL(buf != NULL);
	memcpy(buf, in, len);
	k = host_parse(buf, len, h);
	free(buf);
	return k;
}

static void
test_host_table(void)
{
	const struct host_case	*t;
	struct host		 h;
	enum host_kind		 k;
	size_t			 i, len;

	for (i = 0; i < NELEM(host_cases); i++) {
		t = &host_cases[i];
		len = t->len ? t->len : strlen(t->in);
		k = parse_copy(t->in, len, &h);
		CHECKF(k == t->kind, "row %zu \"%s\": kind %d, want %d", i,
		    t->in, (int)k, (int)t->kind);
		if (k != t->kind || k == HOST_BAD)
			continue;
		CHECKF(h.len == strlen(t->text) &&
		    strcmp(h.text, t->text) == 0,
		    "row %zu \"%s\": text \"%s\", want \"%s\"", i, t->in,
		    h.text, t->text);
	}
}

/* The address matches the text, in the family the kind says. */
static void
test_host_addresses_match_text(void)
{
	struct host	 h;
	char		 back[INET6_ADDRSTRLEN];
	const void	*bytes;

	CU_ASSERT_FATAL(parse_copy("0x7f.1", 6, &h) == HOST_IPV4);
	CU_ASSERT(h.addr.sa.ss_family == AF_INET);
	CU_ASSERT(h.addr.len == sizeof(struct sockaddr_in));
	bytes = &((struct sockaddr_in *)&h.addr.sa)->sin_addr;
	CU_ASSERT(inet_ntop(AF_INET, bytes, back, sizeof(back)) != NULL);
	CU_ASSERT_STRING_EQUAL(back, "127.0.0.1");
	CU_ASSERT(((struct sockaddr_in *)&h.addr.sa)->sin_port == 0);

	CU_ASSERT_FATAL(parse_copy("[::2]", 5, &h) == HOST_IPV6);
	CU_ASSERT(h.addr.sa.ss_family == AF_INET6);
	bytes = &((struct sockaddr_in6 *)&h.addr.sa)->sin6_addr;
	CU_ASSERT(inet_ntop(AF_INET6, bytes, back, sizeof(back)) != NULL);
	CU_ASSERT_STRING_EQUAL(back, "::2");
}

/* An IPv4 literal's text is inet_ntop's (host.c formats it by hand):
 * every value of every byte, in each position, with the others at
 * values of one, two and three digits. */
static void
test_host_v4_text_is_inet_ntop(void)
{
	static const unsigned	 others[] = { 0, 7, 42, 255 };
	struct host		 h;
	uint8_t			 b[4];
	char			 in[32], want[INET_ADDRSTRLEN];
	unsigned		 v, pos, k, bad = 0;
	int			 n;

	for (pos = 0; pos < 4; pos++)
		for (k = 0; k < 4; k++)
			for (v = 0; v < 256; v++) {
				memset(b, (int)others[k], sizeof(b));
				b[pos] = (uint8_t)v;
				n = snprintf(in, sizeof(in), "%u.%u.%u.%u",
				    b[0], b[1], b[2], b[3]);
				inet_ntop(AF_INET, b, want, sizeof(want));
				if (parse_copy(in, (size_t)n, &h) != HOST_IPV4 ||
				    strcmp(h.text, want) != 0 ||
				    h.len != strlen(want))
					bad++;
			}
	CU_ASSERT_EQUAL(bad, 0);
}

/* Every byte value in every position of "ab.cd": a name only when the
 * byte may stand in a label (then the text is the input lower-cased,
 * byte for byte), or is a dot that leaves no label empty (the final one
 * dropped); refused otherwise. */
static void
test_host_every_byte_everywhere(void)
{
	char		 in[5], want[6];
	struct host	 h;
	enum host_kind	 k;
	unsigned	 b, pos;
	unsigned char	 lc;

	for (pos = 0; pos < 5; pos++) {
		for (b = 0; b < 256; b++) {
			memcpy(in, "ab.cd", 5);
			in[pos] = (char)b;
			lc = b >= 'A' && b <= 'Z' ? (unsigned char)(b + 32) :
			    (unsigned char)b;
			k = parse_copy(in, 5, &h);
			memcpy(want, in, 5);
			want[pos] = (char)lc;
			want[5] = '\0';
			if (b == '.' && (pos == 2 || pos == 4)) {
				if (pos == 4)
					want[4] = '\0';
				CHECKF(k == HOST_NAME &&
				    strcmp(h.text, want) == 0, "pos %u "
				    "byte %u: kind %d", pos, b, (int)k);
			} else if (host_is_name_byte(lc)) {
				CHECKF(k == HOST_NAME && h.len == 5 &&
				    strcmp(h.text, want) == 0, "pos %u byte "
				    "%u: kind %d text \"%s\"", pos, b, (int)k,
				    k == HOST_BAD ? "" : h.text);
			} else {
				CHECKF(k == HOST_BAD, "pos %u byte %u: kind "
				    "%d, want bad", pos, b, (int)k);
			}
		}
	}
}

/* 253 bytes is the longest name, 63 the longest label. */
static void
test_host_lengths(void)
{
	char		 in[300];
	struct host	 h;
	size_t		 i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (i % 64) == 63 ? '.' : 'a';
	CU_ASSERT(parse_copy(in, 253, &h) == HOST_NAME && h.len == 253);
	CU_ASSERT(parse_copy(in, 254, &h) == HOST_BAD);
	memcpy(in + 253, ".", 1);
	CU_ASSERT(parse_copy(in, 254, &h) == HOST_NAME && h.len == 253);
	memset(in, 'a', 64);
	CU_ASSERT(parse_copy(in, 63, &h) == HOST_NAME);
	CU_ASSERT(parse_copy(in, 64, &h) == HOST_BAD);
}

void
register_host_suite(void)
{
	CU_pSuite	 s = CU_add_suite("host", NULL, NULL);

	CU_add_test(s, "host_parse_table", test_host_table);
	CU_add_test(s, "host_addresses_match_text",
	    test_host_addresses_match_text);
	CU_add_test(s, "host_every_byte_everywhere",
	    test_host_every_byte_everywhere);
	CU_add_test(s, "host_lengths", test_host_lengths);
	CU_add_test(s, "host_v4_text_is_inet_ntop",
	    test_host_v4_text_is_inet_ntop);
}
