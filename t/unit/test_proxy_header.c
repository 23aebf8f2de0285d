/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/proxy_header.c: PROXY protocol v1 lines from tables, v2 headers
 * built field by field (with their CRC32C when a case wants one), the
 * refusal names and the CRC32C itself. Every input is parsed from a heap
 * copy of exactly its size, so ASan and valgrind see any read past the
 * end, and from each of its prefixes: a prefix of a good header gives 0,
 * a prefix of a refused one 0 or the same refusal, and once refused,
 * every longer prefix is refused alike.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <CUnit/CUnit.h>

#include "worker/proxy_header.h"
#include "common/sockaddr.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

#define SIGNATURE	(-PROXY_REFUSED_SIGNATURE)
#define MALFORMED	(-PROXY_REFUSED_MALFORMED)
#define TOO_LONG	(-PROXY_REFUSED_TOO_LONG)
#define CRC		(-PROXY_REFUSED_CRC)

/* proxy_header_parse on an exact heap copy of <buf>[0..<n>). */
static int
parse_copy(const uint8_t *buf, size_t n)
{
	struct proxy_header	 h;
	uint8_t			*b = malloc(n > 0 ? n : 1);
	int			 rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	if (n > 0)
		memcpy(b, buf, n);
	rc = proxy_header_parse(b, n, &h);
	free(b);
	return rc;
}

/*
 * Parses <buf>[0..<len>) whole into *<h> (pointing into <buf>) and from
 * every prefix; checks the whole against <want> (a length or a negative
 * refusal) and the prefixes against the stream property. Returns the
 * shortest prefix refused (0: none), to show how early a fault is seen.
 */
static size_t
expect_at(const char *file, unsigned line, const char *what,
    const uint8_t *buf, size_t len, int want, struct proxy_header *h)
{
	size_t	 k, bad_at = 0;
	int	 rc, prc;
	bool	 ok;

	rc = parse_copy(buf, len);
	CHECKF_AT(file, line, rc == want, "%s: rc %d, want %d", what, rc,
	    want);
	CHECKF_AT(file, line, proxy_header_parse(buf, len, h) == rc,
	    "%s: another answer from the caller's buffer", what);
	for (k = 0; k < len; k++) {
		prc = parse_copy(buf, k);
		if (rc > 0)
			ok = prc == ((int)k < rc ? 0 : rc);
		else
			ok = bad_at == 0 ? prc == 0 || prc == rc : prc == rc;
		if (prc < 0 && bad_at == 0)
			bad_at = k;
		CHECKF_AT(file, line, ok, "%s: cut at %zu: rc %d, whole %d",
		    what, k, prc, rc);
		if (!ok)
			break;
	}
	return rc < 0 && bad_at == 0 ? len : bad_at;
}

#define EXPECT(what, buf, len, want, h)					\
	expect_at(__FILE__, __LINE__, (what), (buf), (len), (want), (h))

/* Checks an address of <h> formatted as "1.2.3.4:80" or "[::1]:80". */
static void
check_addr(const char *what, const char *which,
    const struct sockaddr_storage *ss, const char *want)
{
	char	 text[SOCKADDR_STRLEN];

	if (want == NULL) {
		CHECKF(ss->ss_family == AF_UNSPEC, "%s: %s has family %d",
		    what, which, ss->ss_family);
		return;
	}
	sockaddr_fmt((const struct sockaddr *)ss, text, sizeof(text));
	CHECKF(strcmp(text, want) == 0, "%s: %s %s, want %s", what, which,
	    text, want);
}

/* ---- version 1 -------------------------------------------------------- */

struct v1_case {
	const char	*what;
	const char	*in;
	size_t		 in_len;
	int		 rc;		/* 0: the input's length */
	size_t		 bad_at;	/* refused: the shortest prefix */
	bool		 local;
	const char	*src, *dst;	/* NULL: AF_UNSPEC */
};

#define IN(lit)		.in = (lit), .in_len = sizeof(lit) - 1

static const struct v1_case v1_good[] = {
	{ "TCP4", IN("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"),
	    0, 0, false, "192.168.0.1:56324", "192.168.0.11:443" },
	{ "TCP4, longest",
	    IN("PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n"),
	    0, 0, false, "255.255.255.255:65535", "255.255.255.255:65535" },
	{ "TCP4, zeros", IN("PROXY TCP4 0.0.0.0 10.0.0.1 0 0\r\n"),
	    0, 0, false, "0.0.0.0:0", "10.0.0.1:0" },
	{ "TCP6", IN("PROXY TCP6 2001:db8::1 2001:db8::2 4000 443\r\n"),
	    0, 0, false, "[2001:db8::1]:4000", "[2001:db8::2]:443" },
	{ "TCP6, longest, both cases",
	    IN("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
	    "FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF 65535 65535\r\n"),
	    0, 0, false, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
	    "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535" },
	{ "TCP6, embedded IPv4",
	    IN("PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n"),
	    0, 0, false, "[::ffff:192.0.2.1]:1", "[::1]:2" },
	{ "UNKNOWN", IN("PROXY UNKNOWN\r\n"), 0, 0, true, NULL, NULL },
	{ "UNKNOWN, 107 bytes",
	    IN("PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
	    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n"),
	    0, 0, true, NULL, NULL },
	{ "UNKNOWN, anything after", IN("PROXY UNKNOWNxy \x01\xff\t\r\n"),
	    0, 0, true, NULL, NULL },
	{ "TCP4, then a request",
	    IN("PROXY TCP4 192.0.2.1 192.0.2.2 1 2\r\nGET / HTTP/1.1\r\n"),
	    36, 0, false, "192.0.2.1:1", "192.0.2.2:2" },
	{ "UNKNOWN, then CRLF and a v2 signature",
	    IN("PROXY UNKNOWN\r\n\r\n\r\n\x00\r\nQUIT\n"),
	    15, 0, true, NULL, NULL },
};

static const struct v1_case v1_bad[] = {
	{ "HTTP", IN("GET / HTTP/1.1\r\n"), SIGNATURE, 0 },
	{ "TLS", IN("\x16\x03\x01\x02\x00"), SIGNATURE, 0 },
	{ "lower case", IN("PROXy TCP4"), SIGNATURE, 5 },
	{ "tab for the space", IN("PROXY\tTCP4"), SIGNATURE, 6 },
	{ "no space", IN("PROXYTCP4"), SIGNATURE, 6 },
	{ "v2 signature broken", IN("\r\n\r\nX"), SIGNATURE, 5 },
	{ "two spaces", IN("PROXY TCP4 192.0.2.1  192.0.2.2 1 2\r\n"),
	    MALFORMED, 0 },
	{ "space before the protocol",
	    IN("PROXY  TCP4 1.2.3.4 1.2.3.4 1 2\r\n"), MALFORMED, 7 },
	{ "space before CRLF", IN("PROXY TCP4 1.2.3.4 1.2.3.4 1 2 \r\n"),
	    MALFORMED, 0 },
	{ "three fields", IN("PROXY TCP4 1.2.3.4 1.2.3.4 1\r\n"), MALFORMED,
	    0 },
	{ "five fields", IN("PROXY TCP4 1.2.3.4 1.2.3.4 1 2 3\r\n"), MALFORMED,
	    0 },
	{ "protocol alone", IN("PROXY TCP4\r\n"), MALFORMED, 0 },
	{ "no protocol", IN("PROXY \r\n"), MALFORMED, 0 },
	{ "UDP4", IN("PROXY UDP4 1.2.3.4 1.2.3.4 1 2\r\n"), MALFORMED, 8 },
	{ "TCP5", IN("PROXY TCP5 1.2.3.4 1.2.3.4 1 2\r\n"), MALFORMED, 10 },
	{ "UNKNOW", IN("PROXY UNKNOW\r\n"), MALFORMED, 0 },
	{ "octet 256", IN("PROXY TCP4 192.0.2.256 192.0.2.2 1 2\r\n"),
	    MALFORMED, 0 },
	{ "three octets", IN("PROXY TCP4 192.0.2 192.0.2.2 1 2\r\n"),
	    MALFORMED, 0 },
	{ "leading zero in an octet",
	    IN("PROXY TCP4 01.2.3.4 192.0.2.2 1 2\r\n"), MALFORMED, 0 },
	{ "leading zero in the last octet",
	    IN("PROXY TCP4 1.2.3.04 192.0.2.2 1 2\r\n"), MALFORMED, 0 },
	{ "name for an address", IN("PROXY TCP4 localhost 1.2.3.4 1 2\r\n"),
	    MALFORMED, 12 },
	{ "port 65536", IN("PROXY TCP4 1.2.3.4 1.2.3.4 65536 2\r\n"),
	    MALFORMED, 0 },
	{ "port 100000", IN("PROXY TCP4 1.2.3.4 1.2.3.4 100000 2\r\n"),
	    MALFORMED, 0 },
	{ "leading zero port", IN("PROXY TCP4 1.2.3.4 1.2.3.4 0443 2\r\n"),
	    MALFORMED, 0 },
	{ "signed port", IN("PROXY TCP4 1.2.3.4 1.2.3.4 +443 2\r\n"),
	    MALFORMED, 28 },
	{ "lone CR", IN("PROXY TCP4 1.2.3.4 1.2.3.4 1 2\rX"), MALFORMED, 32 },
	{ "lone LF", IN("PROXY TCP4 1.2.3.4 1.2.3.4 1 2\n"), MALFORMED, 31 },
	{ "lone LF after UNKNOWN", IN("PROXY UNKNOWN\n"), MALFORMED, 14 },
	{ "CR inside UNKNOWN's rest", IN("PROXY UNKNOWN a\rb\r\n"), MALFORMED,
	    17 },
	{ "CRLF reversed", IN("PROXY UNKNOWN\n\r"), MALFORMED, 14 },
	{ "TCP6 line, IPv4 addresses",
	    IN("PROXY TCP6 192.0.2.1 192.0.2.2 1 2\r\n"), MALFORMED, 0 },
	{ "TCP4 line, IPv6 addresses", IN("PROXY TCP4 ::1 ::1 1 2\r\n"),
	    MALFORMED, 12 },
	{ "TCP6, two ::", IN("PROXY TCP6 1::2::3 ::1 1 2\r\n"), MALFORMED, 0 },
	{ "TCP6 with a scope", IN("PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n"),
	    MALFORMED, 19 },
};

static void
v1_check(const struct v1_case *c)
{
	struct proxy_header	 h;
	size_t			 bad_at;
	int			 want;

	want = c->rc != 0 ? c->rc : (int)c->in_len;
	bad_at = EXPECT(c->what, (const uint8_t *)c->in, c->in_len, want,
	    &h);
	if (want < 0) {
		if (c->bad_at != 0)
			CHECKF(bad_at == c->bad_at, "%s: refused at %zu, "
			    "want %zu", c->what, bad_at, c->bad_at);
		return;
	}
	CHECKF(h.version == 1 && h.local == c->local, "%s: version %u "
	    "local %d", c->what, h.version, h.local);
	check_addr(c->what, "src", &h.src, c->src);
	check_addr(c->what, "dst", &h.dst, c->dst);
	CHECKF(h.authority.len == 0 && h.unique_id.len == 0,
	    "%s: TLVs from a v1 line", c->what);
}

static void
test_proxy_v1_accepts_table(void)
{
	size_t	 i;

	for (i = 0; i < NELEM(v1_good); i++)
		v1_check(&v1_good[i]);
}

static void
test_proxy_v1_refuses_table(void)
{
	size_t	 i;

	for (i = 0; i < NELEM(v1_bad); i++)
		v1_check(&v1_bad[i]);
}

/* "PROXY UNKNOWN " then filler up to <n> bytes, then <tail>. */
static size_t
v1_long(uint8_t *b, size_t n, const char *tail)
{
	memcpy(b, "PROXY UNKNOWN ", 14);
	memset(b + 14, 'a', n - 14);
	memcpy(b + n, tail, strlen(tail));
	return n + strlen(tail);
}

static void
test_proxy_v1_refuses_past_107_bytes(void)
{
	struct proxy_header	 h;
	uint8_t			 b[300];
	size_t			 n;

	n = v1_long(b, 105, "\r\n");
	EXPECT("CRLF ending at 107", b, n, 107, &h);
	n = v1_long(b, 106, "");
	EXPECT("106 bytes, no CRLF yet", b, n, 0, &h);
	n = v1_long(b, 107, "");
	CHECKF(EXPECT("107 bytes without CRLF", b, n, TOO_LONG, &h) == 107,
	    "refused before the 107th byte");
	n = v1_long(b, 106, "\r\n");
	CHECKF(EXPECT("CR as the 107th byte", b, n, TOO_LONG, &h) == 107,
	    "the CR in the last place is not refused at once");
	n = v1_long(b, 250, "\r\n");
	EXPECT("252 bytes", b, n, TOO_LONG, &h);
}

/* ---- version 2 -------------------------------------------------------- */

struct v2 {
	uint8_t	 b[PROXY_V2_MAX + 64];
	size_t	 n;
	size_t	 crc_at;	/* the CRC32C value's offset, or 0 */
};

static void
v2_add(struct v2 *m, const void *p, size_t n)
{
	CU_ASSERT_FATAL(m->n + n <= sizeof(m->b));
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void
v2_add16(struct v2 *m, uint16_t v)
{
	uint8_t	 p[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	v2_add(m, p, 2);
}

static void
v2_start(struct v2 *m, uint8_t ver_cmd, uint8_t fam)
{
	m->n = m->crc_at = 0;
	v2_add(m, "\r\n\r\n\0\r\nQUIT\n", 12);
	v2_add(m, &ver_cmd, 1);
	v2_add(m, &fam, 1);
	v2_add16(m, 0);
}

/* Two addresses of family <af> and two ports. */
static void
v2_addrs(struct v2 *m, int af, const char *src, const char *dst,
    uint16_t sport, uint16_t dport)
{
	uint8_t	 ip[16];
	size_t	 n = af == AF_INET ? 4 : 16;

	CU_ASSERT_FATAL(inet_pton(af, src, ip) == 1);
	v2_add(m, ip, n);
	CU_ASSERT_FATAL(inet_pton(af, dst, ip) == 1);
	v2_add(m, ip, n);
	v2_add16(m, sport);
	v2_add16(m, dport);
}

static void
v2_tlv(struct v2 *m, uint8_t type, const void *v, size_t n)
{
	v2_add(m, &type, 1);
	v2_add16(m, (uint16_t)n);
	v2_add(m, v, n);
}

/* A CRC32C TLV whose value v2_end fills in. */
static void
v2_crc(struct v2 *m)
{
	v2_tlv(m, 0x03, "\0\0\0\0", 4);
	m->crc_at = m->n - 4;
}

/* Sets the length field to what was added; fills a CRC32C TLV in. */
static void
v2_end(struct v2 *m)
{
	uint32_t	 crc;

	m->b[14] = (uint8_t)((m->n - 16) >> 8);
	m->b[15] = (uint8_t)(m->n - 16);
	if (m->crc_at == 0)
		return;
	memset(m->b + m->crc_at, 0, 4);
	crc = proxy_crc32c(0, m->b, m->n);
	m->b[m->crc_at] = (uint8_t)(crc >> 24);
	m->b[m->crc_at + 1] = (uint8_t)(crc >> 16);
	m->b[m->crc_at + 2] = (uint8_t)(crc >> 8);
	m->b[m->crc_at + 3] = (uint8_t)crc;
}

/* Checks that <s> is the <want> bytes at <m>->b + <at>. */
static void
check_tlv(const char *what, const struct v2 *m, const struct pt_str *s,
    size_t at, size_t want)
{
	CHECKF(s->ptr == (const char *)m->b + at && s->len == want,
	    "%s: slice at %td, %zu bytes; want %zu, %zu", what,
	    s->ptr != NULL ? s->ptr - (const char *)m->b : -1, s->len, at,
	    want);
}

static void
test_proxy_v2_inet_with_tlvs_and_crc(void)
{
	struct proxy_header	 h;
	struct v2		 m;

	v2_start(&m, 0x21, 0x11);
	v2_addrs(&m, AF_INET, "192.0.2.1", "198.51.100.7", 56324, 443);
	v2_tlv(&m, 0x02, "www.example.org", 15);
	v2_tlv(&m, 0x05, "conn-42", 7);
	v2_tlv(&m, 0x04, "\0\0", 2);
	v2_crc(&m);
	v2_end(&m);
	EXPECT("INET with TLVs", m.b, m.n, (int)m.n, &h);
	CHECKF(h.version == 2 && !h.local, "version %u local %d", h.version,
	    h.local);
	check_addr("INET", "src", &h.src, "192.0.2.1:56324");
	check_addr("INET", "dst", &h.dst, "198.51.100.7:443");
	check_tlv("AUTHORITY", &m, &h.authority, 28 + 3, 15);
	check_tlv("UNIQUE_ID", &m, &h.unique_id, 28 + 18 + 3, 7);

	m.b[m.crc_at + 3] ^= 1;
	EXPECT("INET, CRC off by a bit", m.b, m.n, CRC, &h);
	m.b[m.crc_at + 3] ^= 1;
	m.b[20] ^= 0x80;
	EXPECT("INET, an address changed under the CRC", m.b, m.n, CRC, &h);
}

static void
test_proxy_v2_inet6_with_tlvs_and_crc(void)
{
	static const char	 ssl[] = "\x05\0\0\0\0" "\x21\0\x07TLSv1.3";
	struct proxy_header	 h;
	struct v2		 m;

	v2_start(&m, 0x21, 0x21);
	v2_addrs(&m, AF_INET6, "2001:db8::1", "2001:db8::443", 1, 65535);
	v2_crc(&m);
	v2_tlv(&m, 0x20, ssl, sizeof(ssl) - 1);
	v2_tlv(&m, 0x05, "0123456789abcdef0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef", 128);
	v2_tlv(&m, 0x02, "", 0);
	v2_tlv(&m, 0xe0, "custom", 6);
	v2_end(&m);
	EXPECT("INET6 with TLVs", m.b, m.n, (int)m.n, &h);
	CHECKF(h.version == 2 && !h.local, "version %u local %d", h.version,
	    h.local);
	check_addr("INET6", "src", &h.src, "[2001:db8::1]:1");
	check_addr("INET6", "dst", &h.dst, "[2001:db8::443]:65535");
	check_tlv("UNIQUE_ID of 128 bytes", &m, &h.unique_id,
	    52 + 7 + 3 + sizeof(ssl) - 1 + 3, 128);
	CHECKF(h.authority.len == 0, "empty AUTHORITY has %zu bytes",
	    h.authority.len);
}

static void
test_proxy_v2_local_skips_whole_length(void)
{
	struct proxy_header	 h;
	struct v2		 m;

	/* A family byte and TLVs that PROXY would refuse: LOCAL ignores
	 * both, and a wrong CRC with them. */
	v2_start(&m, 0x20, 0xff);
	v2_add(&m, "anything at all", 15);
	v2_tlv(&m, 0x03, "\x01\x02", 2);
	v2_end(&m);
	EXPECT("LOCAL, 20 bytes after", m.b, m.n, (int)m.n, &h);
	CHECKF(h.version == 2 && h.local, "version %u local %d", h.version,
	    h.local);
	check_addr("LOCAL", "src", &h.src, NULL);
	check_addr("LOCAL", "dst", &h.dst, NULL);
	v2_start(&m, 0x20, 0x00);
	v2_end(&m);
	EXPECT("LOCAL, empty", m.b, m.n, 16, &h);
	CHECKF(h.local, "LOCAL not local");
}

static void
test_proxy_v2_unspec_and_unix_are_local(void)
{
	struct proxy_header	 h;
	struct v2		 m;
	uint8_t			 path[216];

	v2_start(&m, 0x21, 0x00);
	v2_add(&m, "\x01\x02\x03", 3);
	v2_end(&m);
	EXPECT("PROXY UNSPEC, bytes skipped", m.b, m.n, (int)m.n, &h);
	CHECKF(h.local, "UNSPEC not local");
	check_addr("UNSPEC", "src", &h.src, NULL);

	memset(path, 0, sizeof(path));
	memcpy(path, "/run/a.sock", 11);
	memcpy(path + 108, "/run/b.sock", 11);
	v2_start(&m, 0x21, 0x31);
	v2_add(&m, path, sizeof(path));
	v2_tlv(&m, 0x02, "unix.example", 12);
	v2_crc(&m);
	v2_end(&m);
	EXPECT("PROXY UNIX stream", m.b, m.n, (int)m.n, &h);
	CHECKF(h.local, "UNIX not local");
	check_addr("UNIX", "dst", &h.dst, NULL);
	check_tlv("UNIX AUTHORITY", &m, &h.authority, 16 + 216 + 3, 12);
	m.b[m.crc_at] ^= 0x10;
	EXPECT("PROXY UNIX stream, CRC wrong", m.b, m.n, CRC, &h);
}

/* A PROXY TCP4 header to change one thing in. */
static void
v2_tcp4(struct v2 *m)
{
	v2_start(m, 0x21, 0x11);
	v2_addrs(m, AF_INET, "192.0.2.1", "192.0.2.2", 1000, 80);
}

static void
test_proxy_v2_refuses_fixed_part(void)
{
	struct proxy_header	 h;
	struct v2		 m;

	v2_tcp4(&m);
	v2_end(&m);
	m.b[12] = 0x11;
	CHECKF(EXPECT("version 1", m.b, m.n, MALFORMED, &h) == 13,
	    "version not refused at byte 13");
	m.b[12] = 0x31;
	EXPECT("version 3", m.b, m.n, MALFORMED, &h);
	m.b[12] = 0x22;
	CHECKF(EXPECT("command 2", m.b, m.n, MALFORMED, &h) == 13,
	    "command not refused at byte 13");
	m.b[12] = 0x21;
	m.b[13] = 0x12;
	CHECKF(EXPECT("UDP over IPv4", m.b, m.n, MALFORMED, &h) == 14,
	    "DGRAM not refused at byte 14");
	m.b[13] = 0x22;
	EXPECT("UDP over IPv6", m.b, m.n, MALFORMED, &h);
	m.b[13] = 0x10;
	EXPECT("INET, transport UNSPEC", m.b, m.n, MALFORMED, &h);
	m.b[13] = 0x32;
	EXPECT("UNIX datagram", m.b, m.n, MALFORMED, &h);
	m.b[13] = 0x41;
	EXPECT("family 4", m.b, m.n, MALFORMED, &h);
	m.b[13] = 0x13;
	EXPECT("transport 3", m.b, m.n, MALFORMED, &h);
	m.b[13] = 0x03;
	EXPECT("UNSPEC, transport 3", m.b, m.n, MALFORMED, &h);
	m.b[13] = 0x21;
	CHECKF(EXPECT("INET6 family, 12-byte block", m.b, m.n, MALFORMED,
	    &h) == 16, "short length not refused at byte 16");
	m.b[13] = 0x11;
	m.b[15] = 11;
	EXPECT("INET, length 11", m.b, m.n, MALFORMED, &h);
}

static void
test_proxy_v2_refuses_bad_tlvs(void)
{
	static const uint8_t	 big[300];
	struct proxy_header	 h;
	struct v2		 m;

	v2_tcp4(&m);
	v2_tlv(&m, 0x02, "abc", 3);
	v2_end(&m);
	m.n--;
	m.b[15]--;
	EXPECT("TLV value cut", m.b, m.n, MALFORMED, &h);
	v2_tcp4(&m);
	v2_add(&m, "\x04\x00", 2);
	v2_end(&m);
	EXPECT("TLV head cut", m.b, m.n, MALFORMED, &h);
	v2_tcp4(&m);
	v2_tlv(&m, 0x02, big, 256);
	v2_end(&m);
	EXPECT("AUTHORITY of 256 bytes", m.b, m.n, MALFORMED, &h);
	v2_tcp4(&m);
	v2_tlv(&m, 0x02, big, 255);
	v2_end(&m);
	EXPECT("AUTHORITY of 255 bytes", m.b, m.n, (int)m.n, &h);
	v2_tcp4(&m);
	v2_tlv(&m, 0x05, big, 129);
	v2_end(&m);
	EXPECT("UNIQUE_ID of 129 bytes", m.b, m.n, MALFORMED, &h);
	v2_tcp4(&m);
	v2_tlv(&m, 0x02, "a", 1);
	v2_tlv(&m, 0x02, "b", 1);
	v2_end(&m);
	EXPECT("AUTHORITY twice", m.b, m.n, MALFORMED, &h);
	v2_tcp4(&m);
	v2_tlv(&m, 0x05, "", 0);
	v2_tlv(&m, 0x05, "", 0);
	v2_end(&m);
	EXPECT("UNIQUE_ID twice, empty", m.b, m.n, MALFORMED, &h);
	v2_tcp4(&m);
	v2_tlv(&m, 0x03, "\0\0\0", 3);
	v2_end(&m);
	EXPECT("CRC32C of 3 bytes", m.b, m.n, MALFORMED, &h);
	v2_tcp4(&m);
	v2_crc(&m);
	v2_crc(&m);
	v2_end(&m);
	EXPECT("CRC32C twice", m.b, m.n, MALFORMED, &h);
	/* Structure before checksum: a cut TLV after a wrong CRC. */
	v2_tcp4(&m);
	v2_tlv(&m, 0x03, "\1\2\3\4", 4);
	v2_add(&m, "\x04", 1);
	v2_end(&m);
	EXPECT("wrong CRC, then a cut TLV", m.b, m.n, MALFORMED, &h);
}

static void
test_proxy_v2_length_limit(void)
{
	static const uint8_t	 pad[PROXY_V2_MAX];
	struct proxy_header	 h;
	struct v2		 m;

	v2_tcp4(&m);
	v2_tlv(&m, 0x04, pad, PROXY_V2_MAX - m.n - 3 - 7);
	v2_crc(&m);
	v2_end(&m);
	CHECKF(m.n == PROXY_V2_MAX, "built %zu bytes", m.n);
	EXPECT("PROXY_V2_MAX bytes", m.b, m.n, PROXY_V2_MAX, &h);
	v2_tcp4(&m);
	v2_tlv(&m, 0x04, pad, PROXY_V2_MAX - m.n - 3 + 1);
	v2_end(&m);
	CHECKF(EXPECT("one byte more", m.b, m.n, TOO_LONG, &h) == 16,
	    "not refused as soon as the length is there");
	v2_start(&m, 0x20, 0);
	m.b[14] = m.b[15] = 0xff;
	CHECKF(EXPECT("LOCAL, length 65535", m.b, m.n, TOO_LONG, &h) == 16,
	    "not refused as soon as the length is there");
}

static void
test_proxy_v2_reads_nothing_after_the_header(void)
{
	struct proxy_header	 h;
	struct v2		 m;
	size_t			 n;

	v2_tcp4(&m);
	v2_tlv(&m, 0x02, "a.example", 9);
	v2_end(&m);
	n = m.n;
	v2_add(&m, "\x16\x03\x01\x02\x00", 5);
	EXPECT("then TLS", m.b, m.n, (int)n, &h);
	check_tlv("AUTHORITY", &m, &h.authority, 31, 9);
	m.n = n;
	v2_add(&m, "\r\n\r\n\0\r\nQUIT\n\x21\x11\xff\xff", 16);
	EXPECT("then another header", m.b, m.n, (int)n, &h);
}

/* ---- names and the checksum ------------------------------------------- */

static void
test_proxy_refusal_names(void)
{
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(PROXY_REFUSED_SIGNATURE),
	    "signature");
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(PROXY_REFUSED_MALFORMED),
	    "malformed");
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(PROXY_REFUSED_TOO_LONG),
	    "too_long");
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(PROXY_REFUSED_CRC), "crc");
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(PROXY_REFUSED_SOURCE),
	    "source");
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(PROXY_REFUSED_TIMEOUT),
	    "timeout");
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(PROXY_REFUSED_CLOSED),
	    "closed");
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(PROXY_REFUSED_COUNT),
	    "unknown");
	CU_ASSERT_STRING_EQUAL(proxy_refusal_name(0), "unknown");
}

static void
test_proxy_crc32c_matches_vectors(void)
{
	static const uint8_t	 zeros[32], ones[32] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	const uint8_t		*s = (const uint8_t *)"123456789";

	CU_ASSERT_EQUAL(proxy_crc32c(0, s, 9), 0xe3069283);
	CU_ASSERT_EQUAL(proxy_crc32c(proxy_crc32c(0, s, 4), s + 4, 5),
	    0xe3069283);
	CU_ASSERT_EQUAL(proxy_crc32c(0, s, 0), 0);
	/* RFC 3720, B.4. */
	CU_ASSERT_EQUAL(proxy_crc32c(0, zeros, 32), 0x8a9136aa);
	CU_ASSERT_EQUAL(proxy_crc32c(0, ones, 32), 0x62a8ab43);
}

void
register_proxy_header_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("proxy_header", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "v1_accepts_table", test_proxy_v1_accepts_table);
	CU_add_test(s, "v1_refuses_table", test_proxy_v1_refuses_table);
	CU_add_test(s, "v1_refuses_past_107_bytes",
	    test_proxy_v1_refuses_past_107_bytes);
	CU_add_test(s, "v2_inet_with_tlvs_and_crc",
	    test_proxy_v2_inet_with_tlvs_and_crc);
	CU_add_test(s, "v2_inet6_with_tlvs_and_crc",
	    test_proxy_v2_inet6_with_tlvs_and_crc);
	CU_add_test(s, "v2_local_skips_whole_length",
	    test_proxy_v2_local_skips_whole_length);
	CU_add_test(s, "v2_unspec_and_unix_are_local",
	    test_proxy_v2_unspec_and_unix_are_local);
	CU_add_test(s, "v2_refuses_fixed_part",
	    test_proxy_v2_refuses_fixed_part);
	CU_add_test(s, "v2_refuses_bad_tlvs", test_proxy_v2_refuses_bad_tlvs);
	CU_add_test(s, "v2_length_limit", test_proxy_v2_length_limit);
	CU_add_test(s, "v2_reads_nothing_after_the_header",
	    test_proxy_v2_reads_nothing_after_the_header);
	CU_add_test(s, "refusal_names", test_proxy_refusal_names);
	CU_add_test(s, "crc32c_matches_vectors",
	    test_proxy_crc32c_matches_vectors);
}
