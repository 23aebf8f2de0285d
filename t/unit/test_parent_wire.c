/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/parent_wire.c: what portico sends a parent proxy, compared byte
 * for byte with what the documents say, then read back by the server-side
 * parsers (worker/http_parse.c's Basic decoder, worker/socks_parse.c's
 * requests) so both sides are held to one reading; and the parent's
 * replies from tables. Every reply is parsed from each of its prefixes,
 * each copied to a heap buffer of exactly its size so ASan and valgrind
 * see a read past the end: a prefix shorter than the point where the
 * bytes decide gives WIRE_MORE, every longer one the whole's answer.
 * Builders with a short <cap> write into a heap buffer of exactly that
 * size, so a write past it is caught too.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <CUnit/CUnit.h>

#include "worker/parent_wire.h"
#include "worker/http_parse.h"
#include "worker/socks_parse.h"
#include "common/sockaddr.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))
#define LIT(s)		(s), (sizeof(s) - 1)

/* Checks that a builder returned <n> and wrote <want>[0..<wantlen>). */
static void
check_bytes_at(const char *file, unsigned line, const char *what,
    ssize_t n, const void *got, const void *want, size_t wantlen)
{
	char		 hex[3 * 48 + 1];
	const uint8_t	*g = got;
	size_t		 i;

	if (n == (ssize_t)wantlen && memcmp(got, want, wantlen) == 0) {
		CHECKF_AT(file, line, true, "%s", what);
		return;
	}
	hex[0] = '\0';
	for (i = 0; n > 0 && i < (size_t)n && i < 48; i++)
		snprintf(hex + 3 * i, 4, "%02x ", g[i]);
	CHECKF_AT(file, line, false, "%s: %zd bytes, want %zu: %s", what, n,
	    wantlen, hex);
}

/* (..., want, wantlen): variadic so LIT("...") may stand for both. */
#define CHECK_BYTES(what, n, got, ...)					\
	check_bytes_at(__FILE__, __LINE__, (what), (n), (got), __VA_ARGS__)

static struct sockaddr_in
sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in	 sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	CU_ASSERT_FATAL(inet_pton(AF_INET, ip, &sin.sin_addr) == 1);
	return sin;
}

static struct sockaddr_in6
sin6_of(const char *ip, uint16_t port)
{
	struct sockaddr_in6	 sin6;

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(port);
	CU_ASSERT_FATAL(inet_pton(AF_INET6, ip, &sin6.sin6_addr) == 1);
	return sin6;
}

/* ---- base64 and Basic ------------------------------------------------- */

static void
test_parent_base64_rfc4648_vectors(void)
{
	/* RFC 4648, section 10. */
	static const struct {
		const char	*in, *out;
	} v[] = {
		{ "", "" },
		{ "f", "Zg==" },
		{ "fo", "Zm8=" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	char	 out[16];
	size_t	 i;
	ssize_t	 n;

	for (i = 0; i < NELEM(v); i++) {
		memset(out, 'x', sizeof(out));
		n = parent_base64(v[i].in, strlen(v[i].in), out, sizeof(out));
		CHECKF(n == (ssize_t)strlen(v[i].out) &&
		    strcmp(out, v[i].out) == 0, "\"%s\": %zd \"%.16s\", want "
		    "\"%s\"", v[i].in, n, out, v[i].out);
	}
}

static void
test_parent_base64_all_bytes_and_cap(void)
{
	uint8_t		 in[256];
	char		 out[400], *b, field[420];
	size_t		 i, len, dlen;
	ssize_t		 n;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(255 - i);
	/* Every byte value and each padding, read back by the decoder the
	 * server side uses for Proxy-Authorization. */
	for (len = 250; len <= 256; len++) {
		n = parent_base64(in, len, out, sizeof(out));
		CHECKF_FATAL(n == (ssize_t)((len + 2) / 3 * 4), "%zu bytes: "
		    "%zd characters", len, n);
		snprintf(field, sizeof(field), "Basic %s", out);
		CHECKF(http_parse_basic((struct pt_str){ field, strlen(field) },
		    out, sizeof(out), &dlen) == 0 && dlen == len &&
		    memcmp(out, in, len) == 0, "%zu bytes: not read back", len);
	}
	/* "foob" takes 8 characters and the NUL. */
	b = malloc(9);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(parent_base64("foob", 4, b, 9), 8);
	CU_ASSERT_STRING_EQUAL(b, "Zm9vYg==");
	free(b);
	b = malloc(8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(parent_base64("foob", 4, b, 8), -1);
	CU_ASSERT_EQUAL(b[0], '\0');
	free(b);
	CU_ASSERT_EQUAL(parent_base64("", 0, out, 0), -1);
}

static void
test_parent_basic_field_exact(void)
{
	static const char	 want[] =
	    "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n";
	char			 out[128];
	int			 n;

	/* RFC 7617, section 2. */
	n = parent_basic_field("Aladdin", "open sesame", out, sizeof(out));
	CHECK_BYTES("Aladdin", n, out, LIT(want));
	CU_ASSERT_EQUAL(out[n], '\0');
	n = parent_basic_field("user", "", out, sizeof(out));
	CHECK_BYTES("empty password", n, out,
	    LIT("Proxy-Authorization: Basic dXNlcjo=\r\n"));
	/* Only the user may not hold a ':' (RFC 7617: the first splits). */
	n = parent_basic_field("u", "a:b", out, sizeof(out));
	CHECK_BYTES("':' in the password", n, out,
	    LIT("Proxy-Authorization: Basic dTphOmI=\r\n"));
}

static void
test_parent_basic_field_reads_back(void)
{
	static const char	 pw[] = "p4ssw:rd";
	char			 out[128], pass[16], dec[64], want[64];
	size_t			 plen, n;
	int			 len;

	/* Each password length to 8 covers every padding twice. */
	for (plen = 0; plen <= 8; plen++) {
		memcpy(pass, pw, plen);
		pass[plen] = '\0';
		snprintf(want, sizeof(want), "alice:%s", pass);
		len = parent_basic_field("alice", pass, out, sizeof(out));
		CHECKF_FATAL(len > 29 && memcmp(out + len - 2, "\r\n", 2) == 0,
		    "password of %zu: %d", plen, len);
		CHECKF(http_parse_basic((struct pt_str){ out + 21,
		    (size_t)len - 23 }, dec, sizeof(dec), &n) == 0 &&
		    n == strlen(want) && memcmp(dec, want, n) == 0,
		    "password of %zu: read back as %.*s", plen, (int)n, dec);
	}
}

static void
test_parent_basic_field_refuses(void)
{
	static const char	 want[] = "Proxy-Authorization: Basic YTpi\r\n";
	char			 out[64], *b;
	int			 n;

	CU_ASSERT_EQUAL(parent_basic_field("a:b", "c", out, sizeof(out)), -1);
	CU_ASSERT_EQUAL(out[0], '\0');
	CU_ASSERT_EQUAL(parent_basic_field("a\r", "c", out, sizeof(out)), -1);
	CU_ASSERT_EQUAL(parent_basic_field("a\nb", "c", out, sizeof(out)),
	    -1);
	CU_ASSERT_EQUAL(parent_basic_field("a", "c\r\n", out, sizeof(out)),
	    -1);
	CU_ASSERT_EQUAL(parent_basic_field("a", "\n", out, sizeof(out)), -1);
	CU_ASSERT_EQUAL(parent_basic_field(NULL, "c", out, sizeof(out)), -1);
	CU_ASSERT_EQUAL(parent_basic_field("a", NULL, out, sizeof(out)), -1);
	CU_ASSERT_EQUAL(parent_basic_field("a", "b", out, 0), -1);

	/* The field and its NUL exactly, then one byte less. */
	b = malloc(sizeof(want));
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	n = parent_basic_field("a", "b", b, sizeof(want));
	CHECK_BYTES("exact fit", n, b, LIT(want));
	free(b);
	b = malloc(sizeof(want) - 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(parent_basic_field("a", "b", b, sizeof(want) - 1), -1);
	CU_ASSERT_EQUAL(b[0], '\0');
	free(b);
}

/* ---- HTTP CONNECT ----------------------------------------------------- */

static void
test_parent_http_connect_name(void)
{
	char	 out[256];
	ssize_t	 n;

	n = parent_http_connect(out, sizeof(out), LIT("example.org"), 443,
	    NULL);
	CHECK_BYTES("name", n, out, LIT("CONNECT example.org:443 HTTP/1.1\r\n"
	    "Host: example.org:443\r\n\r\n"));
	n = parent_http_connect(out, sizeof(out), LIT("192.0.2.1"), 0, "");
	CHECK_BYTES("IPv4, port 0, empty extra", n, out,
	    LIT("CONNECT 192.0.2.1:0 HTTP/1.1\r\nHost: 192.0.2.1:0\r\n\r\n"));
	/* <host> is a slice: the bytes after it are not read. */
	n = parent_http_connect(out, sizeof(out), "a.example:80", 9, 65535,
	    NULL);
	CHECK_BYTES("a slice", n, out, LIT("CONNECT a.example:65535 HTTP/1.1"
	    "\r\nHost: a.example:65535\r\n\r\n"));
}

static void
test_parent_http_connect_brackets_ipv6(void)
{
	char	 out[256];
	ssize_t	 n;

	n = parent_http_connect(out, sizeof(out), "2001:db8::1 and more", 11,
	    8443, NULL);
	CHECK_BYTES("IPv6", n, out, LIT("CONNECT [2001:db8::1]:8443 HTTP/1.1"
	    "\r\nHost: [2001:db8::1]:8443\r\n\r\n"));
	n = parent_http_connect(out, sizeof(out), LIT("::ffff:192.0.2.1"), 1,
	    NULL);
	CHECK_BYTES("IPv6, embedded IPv4", n, out,
	    LIT("CONNECT [::ffff:192.0.2.1]:1 HTTP/1.1\r\n"
	    "Host: [::ffff:192.0.2.1]:1\r\n\r\n"));
}

static void
test_parent_http_connect_with_fields(void)
{
	static const char	 want[] = "CONNECT example.org:443 HTTP/1.1\r\n"
	    "Host: example.org:443\r\n"
	    "Proxy-Authorization: Basic YTpi\r\n"
	    "X-Trace: 1\r\n"
	    "\r\n";
	char			 extra[128], out[256];
	int			 n;
	ssize_t			 m;

	n = parent_basic_field("a", "b", extra, sizeof(extra));
	CU_ASSERT_FATAL(n > 0);
	memcpy(extra + n, "X-Trace: 1\r\n", 13);
	m = parent_http_connect(out, sizeof(out), LIT("example.org"), 443,
	    extra);
	CHECK_BYTES("with fields", m, out, LIT(want));
}

static void
test_parent_http_connect_cap(void)
{
	static const char	 want[] = "CONNECT [::1]:443 HTTP/1.1\r\n"
	    "Host: [::1]:443\r\nX: y\r\n\r\n";
	char			*b;
	ssize_t			 n;

	b = malloc(sizeof(want) - 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	n = parent_http_connect(b, sizeof(want) - 1, LIT("::1"), 443,
	    "X: y\r\n");
	CHECK_BYTES("exact fit", n, b, LIT(want));
	free(b);
	b = malloc(sizeof(want) - 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(parent_http_connect(b, sizeof(want) - 2, LIT("::1"),
	    443, "X: y\r\n"), -1);
	free(b);
}

static void
test_parent_http_connect_refuses(void)
{
	static const struct {
		const char	*what;
		const char	*host;
		size_t		 hostlen;
		const char	*extra;
	} bad[] = {
		{ "empty host", "", 0, NULL },
		{ "NULL host", NULL, 0, NULL },
		{ "CRLF in host", LIT("a\r\nX: y"), NULL },
		{ "space in host", LIT("a b"), NULL },
		{ "NUL in host", LIT("a\0b"), NULL },
		{ "host in brackets", LIT("[::1]"), NULL },
		{ "path in host", LIT("a/b"), NULL },
		{ "userinfo in host", LIT("u@a"), NULL },
		{ "extra without CRLF", LIT("a"), "X: y" },
		{ "extra ending in LF", LIT("a"), "X: y\n" },
		{ "extra with a bare CR", LIT("a"), "X: y\rZ: w\r\n" },
		{ "extra is an empty line", LIT("a"), "\r\n" },
		{ "extra holds an empty line", LIT("a"),
		    "X: y\r\n\r\nZ: w\r\n" },
		{ "extra ends in an empty line", LIT("a"), "X: y\r\n\r\n" },
	};
	char	 out[256];
	size_t	 i;
	ssize_t	 n;

	for (i = 0; i < NELEM(bad); i++) {
		n = parent_http_connect(out, sizeof(out), bad[i].host,
		    bad[i].hostlen, 80, bad[i].extra);
		CHECKF(n == -1, "%s: %zd", bad[i].what, n);
	}
	CU_ASSERT_EQUAL(parent_http_connect(out, 0, LIT("a"), 80, NULL), -1);
}

/* ---- replies, from every prefix --------------------------------------- */

typedef int (*reply_fn)(const uint8_t *, size_t);

static int
run_method(const uint8_t *in, size_t len)
{
	uint8_t	 m = 0xee;

	return socks5c_method_reply(in, len, false, &m);
}

static int
run_method_creds(const uint8_t *in, size_t len)
{
	uint8_t	 m = 0xee;

	return socks5c_method_reply(in, len, true, &m);
}

static int
run_reply5(const uint8_t *in, size_t len)
{
	struct sockaddr_storage	 ss;
	const uint8_t		*name;
	size_t			 namelen, consumed;
	uint8_t			 rep;
	int			 rc;

	rc = socks5c_reply(in, len, &rep, &ss, &name, &namelen, &consumed);
	/* Nothing is left behind by an answer that is not WIRE_OK. */
	if (rc != WIRE_OK && (consumed != 0 || ss.ss_family != 0 ||
	    name != NULL || namelen != 0 || rep != 0))
		return 99;
	return rc;
}

static int
run_reply4(const uint8_t *in, size_t len)
{
	uint8_t	 code = 0xee;
	int	 rc;

	rc = socks4c_reply(in, len, &code);
	if (rc == WIRE_MORE && code != 0)
		return 99;
	return rc;
}

struct reply_case {
	const char	*what;
	reply_fn	 fn;
	const char	*in;
	size_t		 len;
	int		 want;
	/* The shortest prefix answered <want>: the reply's length, or the
	 * byte that shows it is bad. Every shorter prefix is WIRE_MORE. */
	size_t		 at;
};

#define IN(lit)		(lit), sizeof(lit) - 1

static const struct reply_case reply_cases[] = {
	/* SOCKS5 method choice. */
	{ "no auth", run_method, IN("\x05\x00"), WIRE_OK, 2 },
	{ "no auth, offered both", run_method_creds, IN("\x05\x00"),
	    WIRE_OK, 2 },
	{ "user/pass", run_method_creds, IN("\x05\x02"), WIRE_OK, 2 },
	{ "then the next message", run_method_creds, IN("\x05\x02\x01\x00"),
	    WIRE_OK, 2 },
	{ "no acceptable method", run_method, IN("\x05\xff"), WIRE_REFUSED,
	    2 },
	{ "no acceptable method, offered both", run_method_creds,
	    IN("\x05\xff"), WIRE_REFUSED, 2 },
	{ "user/pass, not offered", run_method, IN("\x05\x02"), WIRE_BAD, 2 },
	{ "GSSAPI, not offered", run_method_creds, IN("\x05\x01"), WIRE_BAD,
	    2 },
	{ "method 3", run_method_creds, IN("\x05\x03"), WIRE_BAD, 2 },
	{ "VER 4", run_method, IN("\x04\x00"), WIRE_BAD, 1 },
	{ "HTTP instead", run_method, IN("HTTP/1.1 400"), WIRE_BAD, 1 },

	/* RFC 1929 reply. */
	{ "auth success", socks5c_auth_reply, IN("\x01\x00"), WIRE_OK, 2 },
	{ "auth success, then more", socks5c_auth_reply,
	    IN("\x01\x00\x05\x00"), WIRE_OK, 2 },
	{ "auth failure", socks5c_auth_reply, IN("\x01\x01"), WIRE_REFUSED,
	    2 },
	{ "auth failure 0xff", socks5c_auth_reply, IN("\x01\xff"),
	    WIRE_REFUSED, 2 },
	{ "auth VER 5", socks5c_auth_reply, IN("\x05\x00"), WIRE_BAD, 1 },
	{ "auth VER 0", socks5c_auth_reply, IN("\x00\x00"), WIRE_BAD, 1 },

	/* SOCKS5 reply. */
	{ "IPv4 bound", run_reply5,
	    IN("\x05\x00\x00\x01\xc0\x00\x02\x01\x1f\x90"), WIRE_OK, 10 },
	{ "IPv6 bound", run_reply5,
	    IN("\x05\x00\x00\x04\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01"
	    "\x00\x50"), WIRE_OK, 22 },
	{ "name bound", run_reply5, IN("\x05\x00\x00\x03\x05" "hello"
	    "\x01\xbb"), WIRE_OK, 12 },
	{ "empty name bound", run_reply5, IN("\x05\x00\x00\x03\x00\x00\x00"),
	    WIRE_OK, 7 },
	{ "255-byte name bound", run_reply5, IN("\x05\x00\x00\x03\xff"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"
	    "\x00\x01"), WIRE_OK, 4 + 1 + 255 + 2 },
	{ "refused, still read whole", run_reply5,
	    IN("\x05\x05\x00\x01\0\0\0\0\0\0"), WIRE_OK, 10 },
	{ "then tunnel bytes", run_reply5,
	    IN("\x05\x00\x00\x01\x7f\0\0\x01\0\x50" "HTTP/1.1 200 OK\r\n"),
	    WIRE_OK, 10 },
	{ "VER 4", run_reply5, IN("\x04\x00\x00\x01\0\0\0\0\0\0"), WIRE_BAD,
	    1 },
	{ "RSV 1", run_reply5, IN("\x05\x00\x01\x01\0\0\0\0\0\0"), WIRE_BAD,
	    3 },
	{ "ATYP 0", run_reply5, IN("\x05\x00\x00\x00\0\0\0\0\0\0"), WIRE_BAD,
	    4 },
	{ "ATYP 2", run_reply5, IN("\x05\x00\x00\x02\0\0\0\0\0\0"), WIRE_BAD,
	    4 },
	{ "ATYP 5", run_reply5, IN("\x05\x00\x00\x05\0\0\0\0\0\0"), WIRE_BAD,
	    4 },

	/* SOCKS4 reply. */
	{ "granted", run_reply4, IN("\x00\x5a\x00\x50\xc0\x00\x02\x01"),
	    WIRE_OK, 8 },
	{ "granted, VN 4", run_reply4, IN("\x04\x5a\0\0\0\0\0\0"), WIRE_OK,
	    8 },
	{ "granted, then tunnel bytes", run_reply4,
	    IN("\x00\x5a\0\0\0\0\0\0" "SSH-2.0"), WIRE_OK, 8 },
	{ "rejected", run_reply4, IN("\x00\x5b\0\0\0\0\0\0"), WIRE_REFUSED,
	    8 },
	{ "no identd", run_reply4, IN("\x00\x5c\0\0\0\0\0\0"), WIRE_REFUSED,
	    8 },
	{ "identd disagrees", run_reply4, IN("\x04\x5d\0\0\0\0\0\0"),
	    WIRE_REFUSED, 8 },
	{ "CD 89", run_reply4, IN("\x00\x59\0\0\0\0\0\0"), WIRE_BAD, 2 },
	{ "CD 94", run_reply4, IN("\x00\x5e\0\0\0\0\0\0"), WIRE_BAD, 2 },
	{ "CD 0", run_reply4, IN("\x00\x00\0\0\0\0\0\0"), WIRE_BAD, 2 },
	{ "VN 5", run_reply4, IN("\x05\x5a\0\0\0\0\0\0"), WIRE_BAD, 1 },
	{ "VN 1", run_reply4, IN("\x01\x5a\0\0\0\0\0\0"), WIRE_BAD, 1 },
};

static void
test_parent_replies_from_every_prefix(void)
{
	const struct reply_case	*c;
	uint8_t			*b;
	size_t			 i, k;
	int			 rc, want;

	for (i = 0; i < NELEM(reply_cases); i++) {
		c = &reply_cases[i];
		CHECKF_FATAL(c->at <= c->len, "%s: table row", c->what);
		for (k = 0; k <= c->len; k++) {
			/* malloc(0) gives a block ASan flags on any read. */
			b = malloc(k);
			if (k > 0) {
				CU_ASSERT_PTR_NOT_NULL_FATAL(b);
				memcpy(b, c->in, k);
			}
			rc = c->fn(b, k);
			free(b);
			want = k < c->at ? WIRE_MORE : c->want;
			if (!CHECKF(rc == want, "%s: %zu of %zu bytes: %d, "
			    "want %d", c->what, k, c->len, rc, want))
				break;
		}
	}
}

/* ---- SOCKS5 ----------------------------------------------------------- */

static void
test_parent_socks5_greeting_and_method(void)
{
	uint8_t	 out[4];
	uint8_t	 m;

	CHECK_BYTES("no creds", (ssize_t)socks5c_greeting(out, false), out,
	    LIT("\x05\x01\x00"));
	CHECK_BYTES("creds", (ssize_t)socks5c_greeting(out, true), out,
	    LIT("\x05\x02\x00\x02"));

	m = 0xee;
	CU_ASSERT_EQUAL(socks5c_method_reply((const uint8_t *)"\x05\x00", 2,
	    true, &m), WIRE_OK);
	CU_ASSERT_EQUAL(m, 0x00);
	CU_ASSERT_EQUAL(socks5c_method_reply((const uint8_t *)"\x05\x02", 2,
	    true, &m), WIRE_OK);
	CU_ASSERT_EQUAL(m, 0x02);
}

static void
test_parent_socks5_auth_bytes(void)
{
	struct socks_userpass	 up;
	uint8_t			 out[SOCKS5C_AUTH_MAX], want[SOCKS5C_AUTH_MAX];
	uint8_t			*b;
	char			 u[256], p[256];
	ssize_t			 n;

	n = socks5c_auth(out, sizeof(out), LIT("alice"), LIT("s3cret"));
	CHECK_BYTES("alice", n, out, LIT("\x01\x05" "alice" "\x06" "s3cret"));

	memset(u, 'u', sizeof(u));
	memset(p, 'p', sizeof(p));
	want[0] = 0x01;
	want[1] = 255;
	memset(want + 2, 'u', 255);
	want[257] = 255;
	memset(want + 258, 'p', 255);
	b = malloc(SOCKS5C_AUTH_MAX);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	n = socks5c_auth(b, SOCKS5C_AUTH_MAX, u, 255, p, 255);
	CHECK_BYTES("255 and 255, exact cap", n, b, want, sizeof(want));
	free(b);
	b = malloc(SOCKS5C_AUTH_MAX - 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(socks5c_auth(b, SOCKS5C_AUTH_MAX - 1, u, 255, p, 255),
	    -1);
	free(b);

	CU_ASSERT_EQUAL(socks5c_auth(out, sizeof(out), u, 256, p, 1), -1);
	CU_ASSERT_EQUAL(socks5c_auth(out, sizeof(out), u, 1, p, 256), -1);
	CU_ASSERT_EQUAL(socks5c_auth(out, sizeof(out), u, 0, p, 1), -1);
	CU_ASSERT_EQUAL(socks5c_auth(out, sizeof(out), u, 1, p, 0), -1);
	CU_ASSERT_EQUAL(socks5c_auth(out, sizeof(out), NULL, 1, p, 1), -1);

	/* Read back as the server side reads it. */
	n = socks5c_auth(out, sizeof(out), LIT("bob"), LIT("pw"));
	CU_ASSERT_FATAL(n == 8);
	CU_ASSERT_EQUAL(socks5_parse_userpass(out, (size_t)n, &up), PARSE_OK);
	CU_ASSERT(up.len == 8 && up.user.len == 3 &&
	    memcmp(up.user.ptr, "bob", 3) == 0 && up.password.len == 2 &&
	    memcmp(up.password.ptr, "pw", 2) == 0);
}

/* Checks that the server side reads <out>[0..<n>) back as <cmd> to <want>
 * ("1.2.3.4:80", "[::1]:80") or to the name <name>. */
static void
check_request5_at(const char *file, unsigned line, const char *what,
    const uint8_t *out, ssize_t n, uint8_t cmd, const char *want,
    const char *name, uint16_t port)
{
	struct socks5_request	 r;
	char			 text[SOCKADDR_STRLEN];
	bool			 ok;

	if (!CHECKF_AT(file, line, n > 0 && socks5_parse_request(out,
	    (size_t)n, &r) == PARSE_OK && r.len == (size_t)n && r.cmd == cmd &&
	    r.dest.port == port, "%s: not read back", what))
		return;
	if (name != NULL) {
		ok = r.dest.atyp == SOCKS_ATYP_DOMAIN &&
		    r.dest.name.len == strlen(name) &&
		    memcmp(r.dest.name.ptr, name, r.dest.name.len) == 0;
		CHECKF_AT(file, line, ok, "%s: not read back as %s", what,
		    name);
		return;
	}
	sockaddr_fmt((const struct sockaddr *)&r.dest.addr.sa, text,
	    sizeof(text));
	CHECKF_AT(file, line, strcmp(text, want) == 0, "%s: read back as %s, "
	    "want %s", what, text, want);
}

#define CHECK_REQUEST5(what, out, n, cmd, want, name, port)		\
	check_request5_at(__FILE__, __LINE__, (what), (out), (n), (cmd), \
	    (want), (name), (port))

static void
test_parent_socks5_request_addresses(void)
{
	struct sockaddr_in	 sin = sin_of("192.0.2.1", 9);
	struct sockaddr_in6	 sin6 = sin6_of("2001:db8::1", 9);
	struct sockaddr_in6	 mapped = sin6_of("::ffff:192.0.2.7", 9);
	struct sockaddr_in	 any = sin_of("0.0.0.0", 0);
	struct sockaddr_un	 sun;
	uint8_t			 out[SOCKS5C_REQUEST_MAX];
	ssize_t			 n;

	/* The port is <port>, never the address's (9 here). */
	n = socks5c_request(out, sizeof(out), 1, "ignored", 7,
	    (struct sockaddr *)&sin, 443);
	CHECK_BYTES("IPv4", n, out,
	    LIT("\x05\x01\x00\x01\xc0\x00\x02\x01\x01\xbb"));
	CHECK_REQUEST5("IPv4", out, n, 1, "192.0.2.1:443", NULL, 443);

	n = socks5c_request(out, sizeof(out), 1, NULL, 0,
	    (struct sockaddr *)&sin6, 80);
	CHECK_BYTES("IPv6", n, out, LIT("\x05\x01\x00\x04"
	    "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01" "\x00\x50"));
	CHECK_REQUEST5("IPv6", out, n, 1, "[2001:db8::1]:80", NULL, 80);

	n = socks5c_request(out, sizeof(out), 1, NULL, 0,
	    (struct sockaddr *)&mapped, 8080);
	CHECK_BYTES("IPv4-mapped", n, out,
	    LIT("\x05\x01\x00\x01\xc0\x00\x02\x07\x1f\x90"));

	n = socks5c_request(out, sizeof(out), 3, NULL, 0,
	    (struct sockaddr *)&any, 0);
	CHECK_BYTES("UDP ASSOCIATE", n, out,
	    LIT("\x05\x03\x00\x01\0\0\0\0\0\0"));
	CHECK_REQUEST5("UDP ASSOCIATE", out, n, 3, "0.0.0.0:0", NULL, 0);

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	CU_ASSERT_EQUAL(socks5c_request(out, sizeof(out), 1, LIT("a"),
	    (struct sockaddr *)&sun, 80), -1);
	CU_ASSERT_EQUAL(socks5c_request(out, sizeof(out), 2, NULL, 0,
	    (struct sockaddr *)&sin, 80), -1);
	CU_ASSERT_EQUAL(socks5c_request(out, sizeof(out), 0, NULL, 0,
	    (struct sockaddr *)&sin, 80), -1);
	CU_ASSERT_EQUAL(socks5c_request(out, 9, 1, NULL, 0,
	    (struct sockaddr *)&sin, 80), -1);
}

static void
test_parent_socks5_request_names(void)
{
	uint8_t		 out[SOCKS5C_REQUEST_MAX + 8];
	uint8_t		 want[SOCKS5C_REQUEST_MAX];
	uint8_t		*b;
	char		 name[256], name255[256];
	ssize_t		 n;

	n = socks5c_request(out, sizeof(out), 1, "example.org.uk", 11, NULL,
	    443);
	CHECK_BYTES("name", n, out,
	    LIT("\x05\x01\x00\x03\x0b" "example.org" "\x01\xbb"));
	CHECK_REQUEST5("name", out, n, 1, NULL, "example.org", 443);

	memset(name, 'a', sizeof(name));
	memset(name255, 'a', 255);
	name255[255] = '\0';
	memcpy(want, "\x05\x01\x00\x03\xff", 5);
	memset(want + 5, 'a', 255);
	memcpy(want + 260, "\x00\x50", 2);
	b = malloc(SOCKS5C_REQUEST_MAX);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	n = socks5c_request(b, SOCKS5C_REQUEST_MAX, 1, name, 255, NULL, 80);
	CHECK_BYTES("255-byte name, exact cap", n, b, want, sizeof(want));
	CHECK_REQUEST5("255-byte name", b, n, 1, NULL, name255, 80);
	free(b);
	b = malloc(SOCKS5C_REQUEST_MAX - 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(socks5c_request(b, SOCKS5C_REQUEST_MAX - 1, 1, name,
	    255, NULL, 80), -1);
	free(b);

	CU_ASSERT_EQUAL(socks5c_request(out, sizeof(out), 1, name, 256, NULL,
	    80), -1);
	CU_ASSERT_EQUAL(socks5c_request(out, sizeof(out), 1, name, 0, NULL,
	    80), -1);
	CU_ASSERT_EQUAL(socks5c_request(out, sizeof(out), 1, NULL, 3, NULL,
	    80), -1);
	CU_ASSERT_EQUAL(socks5c_request(out, sizeof(out), 1, LIT("a\0b"),
	    NULL, 80), -1);
}

/* The header of a datagram through the parent's relay, read back by the
 * server side's own parser (worker/socks_parse.c) with the payload behind
 * it. */
static void
test_parent_socks5_udp_header(void)
{
	struct sockaddr_in		 sin = sin_of("192.0.2.1", 9);
	struct sockaddr_in6		 sin6 = sin6_of("2001:db8::1", 9);
	struct sockaddr_in6		 mapped = sin6_of("::ffff:192.0.2.7", 9);
	struct socks5_udp_header	 h;
	uint8_t				 out[SOCKS5C_REQUEST_MAX + 4];
	uint8_t				*b;
	char				 name[256], text[SOCKADDR_STRLEN];
	ssize_t				 n;

	n = socks5c_udp_header(out, sizeof(out), NULL, 0,
	    (struct sockaddr *)&sin, 53);
	CHECK_BYTES("IPv4", n, out,
	    LIT("\x00\x00\x00\x01\xc0\x00\x02\x01\x00\x35"));
	memcpy(out + n, "data", 4);
	CU_ASSERT_EQUAL_FATAL(socks5_parse_udp(out, (size_t)n + 4, &h),
	    PARSE_OK);
	CU_ASSERT(h.frag == 0 && h.len == (size_t)n && h.dest.port == 53);
	CU_ASSERT_STRING_EQUAL(sockaddr_fmt((struct sockaddr *)&h.dest.addr.sa,
	    text, sizeof(text)), "192.0.2.1:53");

	n = socks5c_udp_header(out, sizeof(out), NULL, 0,
	    (struct sockaddr *)&sin6, 443);
	CHECK_BYTES("IPv6", n, out, LIT("\x00\x00\x00\x04"
	    "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01" "\x01\xbb"));
	n = socks5c_udp_header(out, sizeof(out), NULL, 0,
	    (struct sockaddr *)&mapped, 7);
	CHECK_BYTES("IPv4-mapped", n, out,
	    LIT("\x00\x00\x00\x01\xc0\x00\x02\x07\x00\x07"));

	n = socks5c_udp_header(out, sizeof(out), LIT("localhost"), NULL, 7);
	CHECK_BYTES("name", n, out,
	    LIT("\x00\x00\x00\x03\x09" "localhost" "\x00\x07"));
	memcpy(out + n, "x", 1);
	CU_ASSERT_EQUAL_FATAL(socks5_parse_udp(out, (size_t)n + 1, &h),
	    PARSE_OK);
	CU_ASSERT(h.dest.atyp == SOCKS_ATYP_DOMAIN && h.dest.name.len == 9 &&
	    memcmp(h.dest.name.ptr, "localhost", 9) == 0 &&
	    h.len == (size_t)n);

	/* The longest, at an exact cap and one short of it. */
	memset(name, 'a', sizeof(name));
	b = malloc(SOCKS5C_REQUEST_MAX);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(socks5c_udp_header(b, SOCKS5C_REQUEST_MAX, name, 255,
	    NULL, 80), SOCKS5C_REQUEST_MAX);
	free(b);
	b = malloc(SOCKS5C_REQUEST_MAX - 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(socks5c_udp_header(b, SOCKS5C_REQUEST_MAX - 1, name,
	    255, NULL, 80), -1);
	free(b);
	CU_ASSERT_EQUAL(socks5c_udp_header(out, sizeof(out), name, 256, NULL,
	    80), -1);
	CU_ASSERT_EQUAL(socks5c_udp_header(out, sizeof(out), NULL, 0, NULL,
	    80), -1);
	CU_ASSERT_EQUAL(socks5c_udp_header(out, 9, NULL, 0,
	    (struct sockaddr *)&sin, 80), -1);
}

static void
test_parent_socks5_reply_outputs(void)
{
	static const uint8_t	 v4[] = "\x05\x00\x00\x01\xc0\x00\x02\x01"
	    "\x1f\x90" "tunnel";
	static const uint8_t	 v6[] = "\x05\x03\x00\x04"
	    "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01" "\x00\x50" "\x16";
	static const uint8_t	 nm[] = "\x05\x00\x00\x03\x05" "hello"
	    "\x01\xbb" "x";
	struct sockaddr_storage	 ss;
	const uint8_t		*name;
	char			 text[SOCKADDR_STRLEN];
	size_t			 namelen, consumed;
	uint8_t			 rep;

	CU_ASSERT_EQUAL_FATAL(socks5c_reply(v4, sizeof(v4) - 1, &rep, &ss,
	    &name, &namelen, &consumed), WIRE_OK);
	CU_ASSERT_EQUAL(rep, 0);
	CU_ASSERT_EQUAL(consumed, 10);
	CU_ASSERT_STRING_EQUAL(sockaddr_fmt((struct sockaddr *)&ss, text,
	    sizeof(text)), "192.0.2.1:8080");
	CU_ASSERT(name == NULL && namelen == 0);

	CU_ASSERT_EQUAL_FATAL(socks5c_reply(v6, sizeof(v6) - 1, &rep, &ss,
	    &name, &namelen, &consumed), WIRE_OK);
	CU_ASSERT_EQUAL(rep, 3);
	CU_ASSERT_EQUAL(consumed, 22);
	CU_ASSERT_STRING_EQUAL(sockaddr_fmt((struct sockaddr *)&ss, text,
	    sizeof(text)), "[2001:db8::1]:80");

	CU_ASSERT_EQUAL_FATAL(socks5c_reply(nm, sizeof(nm) - 1, &rep, &ss,
	    &name, &namelen, &consumed), WIRE_OK);
	CU_ASSERT_EQUAL(consumed, 12);
	CU_ASSERT_EQUAL(ss.ss_family, 0);
	CU_ASSERT(name == nm + 5 && namelen == 5);

	/* The optional outputs may be left out. */
	CU_ASSERT_EQUAL(socks5c_reply(nm, sizeof(nm) - 1, &rep, NULL, NULL,
	    NULL, &consumed), WIRE_OK);
	CU_ASSERT_EQUAL(consumed, 12);
	CU_ASSERT_EQUAL(socks5c_reply(v4, sizeof(v4) - 1, &rep, NULL, NULL,
	    NULL, &consumed), WIRE_OK);
	CU_ASSERT_EQUAL(consumed, 10);
}

static void
test_parent_socks5_rep_http_status(void)
{
	static const struct {
		uint8_t	 rep;
		int	 status;
	} map[] = {
		{ 0x01, 502 }, { 0x02, 502 }, { 0x03, 502 }, { 0x04, 502 },
		{ 0x05, 502 }, { 0x06, 504 }, { 0x07, 502 }, { 0x08, 502 },
		{ 0x09, 502 }, { 0xff, 502 },
	};
	size_t	 i;
	int	 st;

	for (i = 0; i < NELEM(map); i++) {
		st = socks5c_rep_http_status(map[i].rep);
		CHECKF(st == map[i].status, "REP 0x%02x: %d, want %d",
		    map[i].rep, st, map[i].status);
	}
}

/* ---- SOCKS4 ----------------------------------------------------------- */

/* Checks that the server side reads <out>[0..<n>) back as a CONNECT. */
static void
check_request4_at(const char *file, unsigned line, const char *what,
    const uint8_t *out, ssize_t n, const char *userid, const char *name)
{
	struct socks4_request	 r;
	bool			 ok;

	ok = n > 0 && socks4_parse_request(out, (size_t)n, &r) == PARSE_OK &&
	    r.len == (size_t)n && r.cmd == 1 &&
	    r.userid.len == strlen(userid) &&
	    memcmp(r.userid.ptr, userid, r.userid.len) == 0 &&
	    (name == NULL ? r.dest.atyp == SOCKS_ATYP_IPV4 :
	    r.dest.atyp == SOCKS_ATYP_DOMAIN &&
	    r.dest.name.len == strlen(name) &&
	    memcmp(r.dest.name.ptr, name, r.dest.name.len) == 0);
	CHECKF_AT(file, line, ok, "%s: not read back", what);
}

#define CHECK_REQUEST4(what, out, n, userid, name)			\
	check_request4_at(__FILE__, __LINE__, (what), (out), (n), (userid), \
	    (name))

static void
test_parent_socks4_request_bytes(void)
{
	struct sockaddr_in	 sin = sin_of("192.0.2.1", 9);
	uint8_t			 out[SOCKS4C_REQUEST_MAX];
	ssize_t			 n;

	n = socks4c_request(out, sizeof(out), "ignored", 7, &sin, 80, "bob");
	CHECK_BYTES("SOCKS4", n, out,
	    LIT("\x04\x01\x00\x50\xc0\x00\x02\x01" "bob" "\x00"));
	CHECK_REQUEST4("SOCKS4", out, n, "bob", NULL);
	n = socks4c_request(out, sizeof(out), NULL, 0, &sin, 443, NULL);
	CHECK_BYTES("SOCKS4, no userid", n, out,
	    LIT("\x04\x01\x01\xbb\xc0\x00\x02\x01\x00"));
	CHECK_REQUEST4("SOCKS4, no userid", out, n, "", NULL);
	/* 0.0.0.0 is an address; 0.0.0.x is the 4a marker. */
	sin = sin_of("0.0.0.0", 0);
	n = socks4c_request(out, sizeof(out), NULL, 0, &sin, 1, "");
	CHECK_BYTES("SOCKS4 to 0.0.0.0", n, out,
	    LIT("\x04\x01\x00\x01\0\0\0\0\x00"));
	sin = sin_of("0.0.0.5", 0);
	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), NULL, 0, &sin, 1,
	    NULL), -1);
	sin = sin_of("0.0.0.255", 0);
	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), NULL, 0, &sin, 1,
	    NULL), -1);
	sin = sin_of("0.0.1.0", 0);
	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), NULL, 0, &sin, 1,
	    NULL), 9);
	sin.sin_family = AF_INET6;
	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), NULL, 0, &sin, 1,
	    NULL), -1);

	n = socks4c_request(out, sizeof(out), "example.org/", 11, NULL, 443,
	    "bob");
	CHECK_BYTES("SOCKS4a", n, out, LIT("\x04\x01\x01\xbb\0\0\0\x01"
	    "bob" "\x00" "example.org" "\x00"));
	CHECK_REQUEST4("SOCKS4a", out, n, "bob", "example.org");
	n = socks4c_request(out, sizeof(out), LIT("a"), NULL, 80, NULL);
	CHECK_BYTES("SOCKS4a, no userid", n, out,
	    LIT("\x04\x01\x00\x50\0\0\0\x01\x00" "a" "\x00"));
	CHECK_REQUEST4("SOCKS4a, no userid", out, n, "", "a");
}

static void
test_parent_socks4_request_limits(void)
{
	uint8_t	 want[SOCKS4C_REQUEST_MAX], out[SOCKS4C_REQUEST_MAX + 8];
	uint8_t	*b;
	char	 name[256], user[257];
	ssize_t	 n;

	memset(name, 'n', sizeof(name));
	memset(user, 'u', 255);
	user[255] = '\0';
	memcpy(want, "\x04\x01\x00\x50\0\0\0\x01", 8);
	memset(want + 8, 'u', 255);
	want[263] = 0;
	memset(want + 264, 'n', 255);
	want[519] = 0;
	b = malloc(SOCKS4C_REQUEST_MAX);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	n = socks4c_request(b, SOCKS4C_REQUEST_MAX, name, 255, NULL, 80,
	    user);
	CHECK_BYTES("255 and 255, exact cap", n, b, want, sizeof(want));
	free(b);
	b = malloc(SOCKS4C_REQUEST_MAX - 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(socks4c_request(b, SOCKS4C_REQUEST_MAX - 1, name, 255,
	    NULL, 80, user), -1);
	free(b);

	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), name, 256, NULL, 80,
	    NULL), -1);
	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), name, 0, NULL, 80,
	    NULL), -1);
	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), NULL, 1, NULL, 80,
	    NULL), -1);
	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), LIT("a\0b"), NULL,
	    80, NULL), -1);
	memset(user, 'u', 256);
	user[256] = '\0';
	CU_ASSERT_EQUAL(socks4c_request(out, sizeof(out), LIT("a"), NULL, 80,
	    user), -1);
	CU_ASSERT_EQUAL(socks4c_request(out, 11, LIT("a"), NULL, 80, NULL),
	    11);
	CU_ASSERT_EQUAL(socks4c_request(out, 10, LIT("a"), NULL, 80, NULL),
	    -1);
}

static void
test_parent_socks4_reply_code(void)
{
	uint8_t	 code;

	CU_ASSERT_EQUAL(socks4c_reply((const uint8_t *)"\x00\x5a\0\0\0\0\0\0",
	    8, &code), WIRE_OK);
	CU_ASSERT_EQUAL(code, 90);
	CU_ASSERT_EQUAL(socks4c_reply((const uint8_t *)"\x00\x5b\0\0\0\0\0\0",
	    8, &code), WIRE_REFUSED);
	CU_ASSERT_EQUAL(code, 91);
	CU_ASSERT_EQUAL(socks4c_reply((const uint8_t *)"\x04\x5d\0\0\0\0\0\0",
	    8, &code), WIRE_REFUSED);
	CU_ASSERT_EQUAL(code, 93);
}

void
register_parent_wire_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("parent_wire", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "base64_rfc4648_vectors",
	    test_parent_base64_rfc4648_vectors);
	CU_add_test(s, "base64_all_bytes_and_cap",
	    test_parent_base64_all_bytes_and_cap);
	CU_add_test(s, "basic_field_exact", test_parent_basic_field_exact);
	CU_add_test(s, "basic_field_reads_back",
	    test_parent_basic_field_reads_back);
	CU_add_test(s, "basic_field_refuses", test_parent_basic_field_refuses);
	CU_add_test(s, "http_connect_name", test_parent_http_connect_name);
	CU_add_test(s, "http_connect_brackets_ipv6",
	    test_parent_http_connect_brackets_ipv6);
	CU_add_test(s, "http_connect_with_fields",
	    test_parent_http_connect_with_fields);
	CU_add_test(s, "http_connect_cap", test_parent_http_connect_cap);
	CU_add_test(s, "http_connect_refuses",
	    test_parent_http_connect_refuses);
	CU_add_test(s, "replies_from_every_prefix",
	    test_parent_replies_from_every_prefix);
	CU_add_test(s, "socks5_greeting_and_method",
	    test_parent_socks5_greeting_and_method);
	CU_add_test(s, "socks5_auth_bytes", test_parent_socks5_auth_bytes);
	CU_add_test(s, "socks5_request_addresses",
	    test_parent_socks5_request_addresses);
	CU_add_test(s, "socks5_request_names",
	    test_parent_socks5_request_names);
	CU_add_test(s, "socks5_udp_header", test_parent_socks5_udp_header);
	CU_add_test(s, "socks5_reply_outputs",
	    test_parent_socks5_reply_outputs);
	CU_add_test(s, "socks5_rep_http_status",
	    test_parent_socks5_rep_http_status);
	CU_add_test(s, "socks4_request_bytes",
	    test_parent_socks4_request_bytes);
	CU_add_test(s, "socks4_request_limits",
	    test_parent_socks4_request_limits);
	CU_add_test(s, "socks4_reply_code", test_parent_socks4_reply_code);
}
