/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/socks_parse.c: the SOCKS5 greeting, RFC 1929 sub-negotiation,
 * SOCKS5 request, SOCKS4/4a request and SOCKS5 UDP header, then the reply
 * formatters read back the way a client reads them. Tables of {input,
 * expected}; every input is parsed whole and from each of its prefixes,
 * each copied to a heap buffer of exactly its size so ASan and valgrind
 * see any read past the end. Inputs are byte strings, so a hex escape is
 * always closed ("\x0b" "example") before a letter that could extend it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <CUnit/CUnit.h>

#include "worker/socks_parse.h"
#include "common/sockaddr.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * A test input: <head>, then <fill_n> copies of <fill>, then <tail>, so a
 * table row can hold a 255-byte name without spelling it out.
 */
struct input {
	const char	*head;
	size_t		 head_len;
	uint8_t		 fill;
	size_t		 fill_n;
	const char	*tail;
	size_t		 tail_len;
};

#define IN(lit)		{ (lit), sizeof(lit) - 1, 0, 0, "", 0 }
#define IN_FILL(h, c, n, t)						\
	{ (h), sizeof(h) - 1, (c), (n), (t), sizeof(t) - 1 }

/* Expected outcomes; BAD's argument is the shortest prefix that must
 * already be refused (0: not checked). */
#define OK(n)		.rc = PARSE_OK, .len = (n)
#define AGAIN		.rc = PARSE_AGAIN
#define BAD(at)		.rc = PARSE_BAD, .bad_at = (at)

/* What a parser left, whichever parser it was. */
struct parsed {
	union {
		struct socks5_greeting		 greeting;
		struct socks_userpass		 userpass;
		struct socks5_request		 request;
		struct socks4_request		 socks4;
		struct socks5_udp_header	 udp;
	} u;
	size_t	 len;
	int	 reply;		/* socks5_parse_request only */
};

typedef int (*parse_fn)(const uint8_t *, size_t, struct parsed *);

/* Expected destination; a DOMAIN name of NULL means "the input's fill". */
struct dest_want {
	enum socks_atyp	 atyp;
	const char	*addr;		/* IPV4, IPV6: as formatted */
	const char	*name;
	size_t		 name_len;
	uint16_t	 port;
};

#define WANT_V4(a, p)							\
	{ .atyp = SOCKS_ATYP_IPV4, .addr = (a), .port = (p) }
#define WANT_V6(a, p)							\
	{ .atyp = SOCKS_ATYP_IPV6, .addr = (a), .port = (p) }
#define WANT_NAME(n, p)							\
	{ .atyp = SOCKS_ATYP_DOMAIN, .name = (n), .name_len = sizeof(n) - 1, \
	.port = (p) }
#define WANT_FILLED(n, p)						\
	{ .atyp = SOCKS_ATYP_DOMAIN, .name_len = (n), .port = (p) }

static uint8_t *
dup_exact(const uint8_t *p, size_t n)
{
	/* malloc(0) gives a block that ASan and valgrind flag on any read. */
	uint8_t	*b = malloc(n);

	if (n > 0) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(b);
		memcpy(b, p, n);
	}
	return b;
}

static uint8_t *
input_build(const struct input *in, size_t *len_out)
{
	size_t	 n = in->head_len + in->fill_n + in->tail_len;
	uint8_t	*b = malloc(n);

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	memcpy(b, in->head, in->head_len);
	memset(b + in->head_len, in->fill, in->fill_n);
	memcpy(b + in->head_len + in->fill_n, in->tail, in->tail_len);
	*len_out = n;
	return b;
}

static int
run_greeting(const uint8_t *b, size_t n, struct parsed *p)
{
	int	 rc = socks5_parse_greeting(b, n, &p->u.greeting);

	p->len = p->u.greeting.len;
	p->reply = 0;
	return rc;
}

static int
run_userpass(const uint8_t *b, size_t n, struct parsed *p)
{
	int	 rc = socks5_parse_userpass(b, n, &p->u.userpass);

	p->len = p->u.userpass.len;
	p->reply = 0;
	return rc;
}

static int
run_request(const uint8_t *b, size_t n, struct parsed *p)
{
	int	 rc = socks5_parse_request(b, n, &p->u.request);

	p->len = p->u.request.len;
	p->reply = p->u.request.reply;
	return rc;
}

static int
run_socks4(const uint8_t *b, size_t n, struct parsed *p)
{
	int	 rc = socks4_parse_request(b, n, &p->u.socks4);

	p->len = p->u.socks4.len;
	p->reply = 0;
	return rc;
}

static int
run_udp(const uint8_t *b, size_t n, struct parsed *p)
{
	int	 rc = socks5_parse_udp(b, n, &p->u.udp);

	p->len = p->u.udp.len;
	p->reply = 0;
	return rc;
}

/*
 * Parses <buf> (<len> bytes of heap, exactly) into *whole, then each of
 * its proper prefixes from an exact heap copy. For a stream parser a
 * prefix must give PARSE_AGAIN while shorter than the message and
 * PARSE_OK with the same len once it holds it; when the whole is bad, a
 * prefix gives PARSE_AGAIN or the same PARSE_BAD and reply, and once bad
 * stays bad. A datagram parser never gives PARSE_AGAIN: a prefix shorter
 * than the header is bad. Returns the whole's rc, and in *bad_at_out the
 * shortest prefix found bad (0: none), to show how early a fault is seen.
 */
static int
parse_prefixes(const char *file, unsigned line, const char *what,
    parse_fn fn, bool datagram, const uint8_t *buf, size_t len,
    struct parsed *whole, size_t *bad_at_out)
{
	struct parsed	 part;
	uint8_t		*b;
	size_t		 k;
	int		 rc, prc;
	bool		 ok;

	*bad_at_out = 0;
	rc = fn(buf, len, whole);
	CHECKF_AT(file, line, !datagram || rc != PARSE_AGAIN,
	    "%s: a datagram parser said PARSE_AGAIN", what);
	for (k = 0; k < len; k++) {
		b = dup_exact(buf, k);
		prc = fn(b, k, &part);
		free(b);
		if (prc == PARSE_BAD && *bad_at_out == 0)
			*bad_at_out = k;
		if (rc == PARSE_OK && k < whole->len)
			ok = prc == (datagram ? PARSE_BAD : PARSE_AGAIN);
		else if (rc == PARSE_OK)
			ok = prc == PARSE_OK && part.len == whole->len;
		else if (rc == PARSE_AGAIN)
			ok = prc == PARSE_AGAIN;
		else if (datagram)
			ok = prc == PARSE_BAD;
		else if (prc == PARSE_AGAIN)
			ok = *bad_at_out == 0;
		else
			ok = prc == PARSE_BAD && part.reply == whole->reply;
		CHECKF_AT(file, line, ok, "%s: cut at %zu: rc %d len %zu reply "
		    "%d; whole rc %d len %zu reply %d", what, k, prc, part.len,
		    part.reply, rc, whole->len, whole->reply);
		if (!ok)
			break;
	}
	if (rc == PARSE_BAD && *bad_at_out == 0)
		*bad_at_out = len;
	return rc;
}

/* Checks <d>, parsed from <buf> (<len> bytes built from <in>), against <w>. */
static void
check_dest(const char *what, const struct socks_dest *d, const uint8_t *buf,
    size_t len, const struct input *in, const struct dest_want *w)
{
	char	 text[SOCKADDR_STRLEN];
	size_t	 i;
	bool	 same;

	CHECKF(d->atyp == w->atyp, "%s: atyp %d, want %d", what, d->atyp,
	    w->atyp);
	CHECKF(d->port == w->port, "%s: port %u, want %u", what, d->port,
	    w->port);
	if (w->atyp == SOCKS_ATYP_DOMAIN) {
		CHECKF(d->addr.len == 0, "%s: addr set for a name", what);
		CHECKF_FATAL(d->name.len == w->name_len,
		    "%s: name length %zu, want %zu", what, d->name.len,
		    w->name_len);
		CHECKF_FATAL(d->name.ptr >= (const char *)buf &&
		    d->name.ptr + d->name.len <= (const char *)buf + len,
		    "%s: name is not a slice of the input", what);
		if (w->name != NULL)
			same = memcmp(d->name.ptr, w->name, w->name_len) == 0;
		else
			for (same = true, i = 0; i < d->name.len; i++)
				same = same && (uint8_t)d->name.ptr[i] ==
				    in->fill;
		CHECKF(same, "%s: name \"%.*s\"", what, (int)d->name.len,
		    d->name.ptr);
		return;
	}
	CHECKF(d->name.len == 0, "%s: name set for an address", what);
	CHECKF(d->addr.len == (w->atyp == SOCKS_ATYP_IPV4 ?
	    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)),
	    "%s: addr len %u", what, (unsigned)d->addr.len);
	CHECKF(d->addr.sa.ss_family == (w->atyp == SOCKS_ATYP_IPV4 ?
	    AF_INET : AF_INET6), "%s: family %d", what, d->addr.sa.ss_family);
	sockaddr_fmt((const struct sockaddr *)&d->addr.sa, text,
	    sizeof(text));
	CHECKF(strcmp(text, w->addr) == 0, "%s: addr %s, want %s", what, text,
	    w->addr);
}

/* ---- greeting --------------------------------------------------------- */

struct greeting_case {
	const char	*what;
	struct input	 in;
	int		 rc;
	size_t		 len;
	size_t		 bad_at;	/* 0: not checked */
	uint8_t		 nmethods;
	uint8_t		 method0;
};

static const struct greeting_case greeting_cases[] = {
	{ .what = "one method", .in = IN("\x05\x01\x00"),
	    OK(3), .nmethods = 1, .method0 = SOCKS5_METHOD_NONE },
	{ .what = "two methods, then the next message",
	    .in = IN("\x05\x02\x02\x00" "\x01\x04"),
	    OK(4), .nmethods = 2, .method0 = SOCKS5_METHOD_USERPASS },
	{ .what = "255 methods", .in = IN_FILL("\x05\xff", 0x80, 255, ""),
	    OK(257), .nmethods = 255, .method0 = 0x80 },
	{ .what = "methods missing", .in = IN("\x05\x03\x00\x02"), AGAIN },
	{ .what = "version 4", .in = IN("\x04\x01\x00"), BAD(1) },
	{ .what = "HTTP", .in = IN("GET / HTTP/1.1\r\n"), BAD(1) },
	{ .what = "NMETHODS 0", .in = IN("\x05\x00"), BAD(2) },
	{ .what = "NMETHODS 0, bytes after", .in = IN("\x05\x00\x00\x00"),
	    BAD(2) },
};

static void
test_socks5_greeting_matches_table(void)
{
	const struct greeting_case	*c;
	struct parsed			 p;
	uint8_t				*buf;
	size_t				 len, bad_at;
	int				 rc;

	for (c = greeting_cases; c < greeting_cases + NELEM(greeting_cases);
	    c++) {
		buf = input_build(&c->in, &len);
		rc = parse_prefixes(__FILE__, __LINE__, c->what, run_greeting,
		    false, buf, len, &p, &bad_at);
		CHECKF(rc == c->rc, "%s: rc %d, want %d", c->what, rc, c->rc);
		if (c->bad_at != 0)
			CHECKF(bad_at == c->bad_at, "%s: bad at %zu, want %zu",
			    c->what, bad_at, c->bad_at);
		if (rc == PARSE_OK && c->rc == PARSE_OK) {
			CHECKF(p.len == c->len, "%s: len %zu, want %zu",
			    c->what, p.len, c->len);
			CHECKF(p.u.greeting.nmethods == c->nmethods,
			    "%s: nmethods %u", c->what, p.u.greeting.nmethods);
			CHECKF(p.u.greeting.methods == buf + 2 &&
			    p.u.greeting.methods[0] == c->method0,
			    "%s: methods", c->what);
		}
		free(buf);
	}
}

/* ---- RFC 1929 --------------------------------------------------------- */

struct userpass_case {
	const char	*what;
	struct input	 in;
	int		 rc;
	size_t		 len;
	size_t		 bad_at;
	const char	*user;		/* NULL: ulen bytes of fill */
	size_t		 ulen;
	const char	*password;	/* NULL: plen bytes of fill */
	size_t		 plen;
};

#define UP_USER(u)	.user = (u), .ulen = sizeof(u) - 1
#define UP_PASS(p)	.password = (p), .plen = sizeof(p) - 1

static const struct userpass_case userpass_cases[] = {
	{ .what = "user and password", .in = IN("\x01\x04user\x08password"),
	    OK(15), UP_USER("user"), UP_PASS("password") },
	{ .what = "then a request", .in = IN("\x01\x01u\x01p\x05\x01\x00"),
	    OK(5), UP_USER("u"), UP_PASS("p") },
	{ .what = "empty password", .in = IN("\x01\x03" "bob" "\x00"),
	    OK(6), UP_USER("bob"), UP_PASS("") },
	{ .what = "255-byte user",
	    .in = IN_FILL("\x01\xff", 'u', 255, "\x02pw"),
	    OK(260), .ulen = 255, UP_PASS("pw") },
	{ .what = "255-byte password",
	    .in = IN_FILL("\x01\x01x\xff", 'p', 255, ""),
	    OK(259), UP_USER("x"), .plen = 255 },
	{ .what = "password cut short", .in = IN("\x01\x01u\x05pas"), AGAIN },
	{ .what = "PLEN missing", .in = IN("\x01\x02us"), AGAIN },
	{ .what = "ULEN 0", .in = IN("\x01\x00\x00"), BAD(2) },
	{ .what = "SOCKS5 version", .in = IN("\x05\x01u\x01p"), BAD(1) },
	{ .what = "version 0", .in = IN("\x00\x01u\x01p"), BAD(1) },
};

static void
test_socks5_userpass_matches_table(void)
{
	const struct userpass_case	*c;
	const struct socks_userpass	*u;
	struct parsed			 p;
	uint8_t				*buf;
	size_t				 len, bad_at, i;
	int				 rc;
	bool				 same;

	for (c = userpass_cases; c < userpass_cases + NELEM(userpass_cases);
	    c++) {
		buf = input_build(&c->in, &len);
		rc = parse_prefixes(__FILE__, __LINE__, c->what, run_userpass,
		    false, buf, len, &p, &bad_at);
		CHECKF(rc == c->rc, "%s: rc %d, want %d", c->what, rc, c->rc);
		if (c->bad_at != 0)
			CHECKF(bad_at == c->bad_at, "%s: bad at %zu, want %zu",
			    c->what, bad_at, c->bad_at);
		u = &p.u.userpass;
		if (rc == PARSE_OK && c->rc == PARSE_OK) {
			CHECKF(p.len == c->len, "%s: len %zu, want %zu",
			    c->what, p.len, c->len);
			CHECKF_FATAL(u->user.len == c->ulen &&
			    u->password.len == c->plen, "%s: lengths %zu %zu",
			    c->what, u->user.len, u->password.len);
			CHECKF(u->user.ptr == (const char *)buf + 2 &&
			    u->password.ptr == u->user.ptr + c->ulen + 1,
			    "%s: slices", c->what);
			same = c->user == NULL ||
			    memcmp(u->user.ptr, c->user, c->ulen) == 0;
			same = same && (c->password == NULL ||
			    memcmp(u->password.ptr, c->password, c->plen) == 0);
			for (i = 0; c->user == NULL && i < c->ulen; i++)
				same = same &&
				    u->user.ptr[i] == (char)c->in.fill;
			for (i = 0; c->password == NULL && i < c->plen; i++)
				same = same &&
				    u->password.ptr[i] == (char)c->in.fill;
			CHECKF(same, "%s: user or password text", c->what);
		}
		free(buf);
	}
}

/* ---- SOCKS5 request --------------------------------------------------- */

struct request_case {
	const char		*what;
	struct input		 in;
	int			 rc;
	size_t			 len;
	size_t			 bad_at;
	int			 reply;		/* PARSE_BAD */
	uint8_t			 cmd;
	struct dest_want	 dest;
};

#define REQ_BAD(rep, at)	BAD(at), .reply = (rep)

static const struct request_case request_cases[] = {
	{ .what = "CONNECT IPv4",
	    .in = IN("\x05\x01\x00\x01\xc0\x00\x02\x01\x01\xbb"),
	    OK(10), .cmd = SOCKS5_CMD_CONNECT,
	    .dest = WANT_V4("192.0.2.1:443", 443) },
	{ .what = "BIND IPv6",
	    .in = IN("\x05\x02\x00\x04" "\x20\x01\x0d\xb8\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x01" "\x00\x50"),
	    OK(22), .cmd = SOCKS5_CMD_BIND,
	    .dest = WANT_V6("[2001:db8::1]:80", 80) },
	{ .what = "UDP ASSOCIATE name",
	    .in = IN("\x05\x03\x00\x03\x0b" "example.org" "\x00\x35"),
	    OK(18), .cmd = SOCKS5_CMD_UDP,
	    .dest = WANT_NAME("example.org", 53) },
	{ .what = "UDP ASSOCIATE 0.0.0.0:0",
	    .in = IN("\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00"),
	    OK(10), .cmd = SOCKS5_CMD_UDP, .dest = WANT_V4("0.0.0.0:0", 0) },
	/* The port's 0x00 right after the name must not count as a NUL. */
	{ .what = "CONNECT 1-byte name",
	    .in = IN("\x05\x01\x00\x03\x01" "a" "\x00\x50"),
	    OK(8), .cmd = SOCKS5_CMD_CONNECT, .dest = WANT_NAME("a", 80) },
	{ .what = "CONNECT 255-byte name",
	    .in = IN_FILL("\x05\x01\x00\x03\xff", 'n', 255, "\xff\xff"),
	    OK(262), .cmd = SOCKS5_CMD_CONNECT,
	    .dest = WANT_FILLED(255, 65535) },
	{ .what = "CONNECT, then TLS",
	    .in = IN("\x05\x01\x00\x03\x03" "a.b" "\x01\xbb"
	    "\x16\x03\x01\x02\x00"),
	    OK(10), .cmd = SOCKS5_CMD_CONNECT, .dest = WANT_NAME("a.b", 443) },
	{ .what = "port cut short",
	    .in = IN("\x05\x01\x00\x01\xc0\x00\x02\x01\x01"), AGAIN },
	{ .what = "name cut short", .in = IN("\x05\x01\x00\x03\x0b" "exam"),
	    AGAIN },

	{ .what = "version 4",
	    .in = IN("\x04\x01\x00\x50\xc0\x00\x02\x01\x00"), REQ_BAD(-1, 1) },
	{ .what = "version 0", .in = IN("\x00"), REQ_BAD(-1, 1) },
	{ .what = "CMD 0",
	    .in = IN("\x05\x00\x00\x01\xc0\x00\x02\x01\x01\xbb"),
	    REQ_BAD(SOCKS5_CMD_UNSUPPORTED, 2) },
	{ .what = "CMD 4",
	    .in = IN("\x05\x04\x00\x01\xc0\x00\x02\x01\x01\xbb"),
	    REQ_BAD(SOCKS5_CMD_UNSUPPORTED, 2) },
	{ .what = "CMD 0xff, header incomplete", .in = IN("\x05\xff"),
	    REQ_BAD(SOCKS5_CMD_UNSUPPORTED, 2) },
	{ .what = "CMD and RSV wrong: CMD first", .in = IN("\x05\x09\x01\x01"),
	    REQ_BAD(SOCKS5_CMD_UNSUPPORTED, 2) },
	{ .what = "RSV 1",
	    .in = IN("\x05\x01\x01\x01\xc0\x00\x02\x01\x01\xbb"),
	    REQ_BAD(SOCKS5_FAILURE, 3) },
	{ .what = "ATYP 2",
	    .in = IN("\x05\x01\x00\x02\xc0\x00\x02\x01\x01\xbb"),
	    REQ_BAD(SOCKS5_ATYP_UNSUPPORTED, 4) },
	{ .what = "ATYP 0", .in = IN("\x05\x01\x00\x00"),
	    REQ_BAD(SOCKS5_ATYP_UNSUPPORTED, 4) },
	{ .what = "name length 0", .in = IN("\x05\x01\x00\x03\x00\x00\x50"),
	    REQ_BAD(SOCKS5_FAILURE, 5) },
	{ .what = "NUL inside the name",
	    .in = IN("\x05\x01\x00\x03\x05" "ab" "\x00" "cd" "\x00\x50"),
	    REQ_BAD(SOCKS5_FAILURE, 8) },
	{ .what = "NUL ending the name",
	    .in = IN("\x05\x01\x00\x03\x03" "ab" "\x00" "\x00\x50"),
	    REQ_BAD(SOCKS5_FAILURE, 8) },
	{ .what = "NUL first in the name",
	    .in = IN("\x05\x01\x00\x03\x01" "\x00" "\x00\x50"),
	    REQ_BAD(SOCKS5_FAILURE, 6) },
};

static void
test_socks5_request_matches_table(void)
{
	const struct request_case	*c;
	struct parsed			 p;
	uint8_t				*buf;
	size_t				 len, bad_at;
	int				 rc;

	for (c = request_cases; c < request_cases + NELEM(request_cases);
	    c++) {
		buf = input_build(&c->in, &len);
		rc = parse_prefixes(__FILE__, __LINE__, c->what, run_request,
		    false, buf, len, &p, &bad_at);
		CHECKF(rc == c->rc, "%s: rc %d, want %d", c->what, rc, c->rc);
		if (c->bad_at != 0)
			CHECKF(bad_at == c->bad_at, "%s: bad at %zu, want %zu",
			    c->what, bad_at, c->bad_at);
		if (rc == PARSE_BAD && c->rc == PARSE_BAD)
			CHECKF(p.reply == c->reply, "%s: reply %d, want %d",
			    c->what, p.reply, c->reply);
		if (rc == PARSE_OK && c->rc == PARSE_OK) {
			CHECKF(p.len == c->len, "%s: len %zu, want %zu",
			    c->what, p.len, c->len);
			CHECKF(p.u.request.cmd == c->cmd &&
			    p.reply == SOCKS5_OK,
			    "%s: cmd %u reply %d", c->what, p.u.request.cmd,
			    p.reply);
			check_dest(c->what, &p.u.request.dest, buf, len, &c->in,
			    &c->dest);
		}
		free(buf);
	}
}

/* ---- SOCKS4 and 4a ---------------------------------------------------- */

struct socks4_case {
	const char		*what;
	struct input		 in;
	int			 rc;
	size_t			 len;
	size_t			 bad_at;
	uint8_t			 cmd;
	const char		*userid;	/* NULL: not checked */
	size_t			 userid_len;
	struct dest_want	 dest;
};

#define S4_USER(u)	.userid = (u), .userid_len = sizeof(u) - 1

static const struct socks4_case socks4_cases[] = {
	{ .what = "CONNECT",
	    .in = IN("\x04\x01\x00\x50\xc0\x00\x02\x01" "fred" "\x00"),
	    OK(13), .cmd = 1, S4_USER("fred"),
	    .dest = WANT_V4("192.0.2.1:80", 80) },
	{ .what = "empty userid, then data",
	    .in = IN("\x04\x01\x01\xbb\x7f\x00\x00\x01" "\x00" "\x16\x03"),
	    OK(9), .cmd = 1, S4_USER(""),
	    .dest = WANT_V4("127.0.0.1:443", 443) },
	{ .what = "BIND",
	    .in = IN("\x04\x02\x00\x15\x0a\x00\x00\x01" "\x00"),
	    OK(9), .cmd = 2, S4_USER(""), .dest = WANT_V4("10.0.0.1:21", 21) },
	{ .what = "unknown CD is the caller's",
	    .in = IN("\x04\x99\x00\x50\xc0\x00\x02\x01" "\x00"),
	    OK(9), .cmd = 0x99, S4_USER(""),
	    .dest = WANT_V4("192.0.2.1:80", 80) },
	{ .what = "DSTIP 0.0.0.0 is not 4a",
	    .in = IN("\x04\x01\x00\x50\x00\x00\x00\x00" "\x00" "example.org"
	    "\x00"),
	    OK(9), .cmd = 1, S4_USER(""), .dest = WANT_V4("0.0.0.0:80", 80) },
	{ .what = "255-byte userid",
	    .in = IN_FILL("\x04\x01\x00\x50\xc0\x00\x02\x01", 'u', 255,
	    "\x00"),
	    OK(264), .cmd = 1, .userid_len = 255,
	    .dest = WANT_V4("192.0.2.1:80", 80) },
	{ .what = "4a",
	    .in = IN("\x04\x01\x00\x50\x00\x00\x00\x01" "fred" "\x00"
	    "example.org" "\x00"),
	    OK(25), .cmd = 1, S4_USER("fred"),
	    .dest = WANT_NAME("example.org", 80) },
	{ .what = "4a, DSTIP 0.0.0.255, then data",
	    .in = IN("\x04\x01\x01\xbb\x00\x00\x00\xff" "\x00" "h" "\x00"
	    "x"),
	    OK(11), .cmd = 1, S4_USER(""), .dest = WANT_NAME("h", 443) },
	{ .what = "4a, 255-byte host",
	    .in = IN_FILL("\x04\x01\x00\x50\x00\x00\x00\x01" "\x00", 'h', 255,
	    "\x00"),
	    OK(265), .cmd = 1, S4_USER(""), .dest = WANT_FILLED(255, 80) },

	{ .what = "header cut short", .in = IN("\x04\x01\x00\x50\xc0\x00"),
	    AGAIN },
	{ .what = "userid without NUL",
	    .in = IN("\x04\x01\x00\x50\xc0\x00\x02\x01" "fred"), AGAIN },
	{ .what = "4a without host",
	    .in = IN("\x04\x01\x00\x50\x00\x00\x00\x01" "fred" "\x00"),
	    AGAIN },
	{ .what = "4a host without NUL",
	    .in = IN("\x04\x01\x00\x50\x00\x00\x00\x01" "\x00" "example.org"),
	    AGAIN },

	{ .what = "version 5", .in = IN("\x05\x01\x00"), BAD(1) },
	{ .what = "256-byte userid",
	    .in = IN_FILL("\x04\x01\x00\x50\xc0\x00\x02\x01", 'u', 256,
	    "\x00"),
	    BAD(8 + 256) },
	{ .what = "4a, empty host",
	    .in = IN("\x04\x01\x00\x50\x00\x00\x00\x01" "\x00" "\x00"),
	    BAD(10) },
	{ .what = "4a, 256-byte host",
	    .in = IN_FILL("\x04\x01\x00\x50\x00\x00\x00\x01" "\x00", 'h', 256,
	    "\x00"),
	    BAD(9 + 256) },
};

static void
test_socks4_request_matches_table(void)
{
	const struct socks4_case	*c;
	const struct socks4_request	*r;
	struct parsed			 p;
	uint8_t				*buf;
	size_t				 len, bad_at, i;
	int				 rc;
	bool				 same;

	for (c = socks4_cases; c < socks4_cases + NELEM(socks4_cases); c++) {
		buf = input_build(&c->in, &len);
		rc = parse_prefixes(__FILE__, __LINE__, c->what, run_socks4,
		    false, buf, len, &p, &bad_at);
		CHECKF(rc == c->rc, "%s: rc %d, want %d", c->what, rc, c->rc);
		if (c->bad_at != 0)
			CHECKF(bad_at == c->bad_at, "%s: bad at %zu, want %zu",
			    c->what, bad_at, c->bad_at);
		r = &p.u.socks4;
		if (rc == PARSE_OK && c->rc == PARSE_OK) {
			CHECKF(p.len == c->len, "%s: len %zu, want %zu",
			    c->what, p.len, c->len);
			CHECKF(r->cmd == c->cmd, "%s: cmd %u", c->what, r->cmd);
			CHECKF_FATAL(r->userid.len == c->userid_len &&
			    r->userid.ptr == (const char *)buf + 8,
			    "%s: userid length %zu", c->what, r->userid.len);
			if (c->userid != NULL)
				same = memcmp(r->userid.ptr, c->userid,
				    c->userid_len) == 0;
			else
				for (same = true, i = 0; i < c->userid_len; i++)
					same = same && r->userid.ptr[i] ==
					    (char)c->in.fill;
			CHECKF(same, "%s: userid \"%.*s\"", c->what,
			    (int)r->userid.len, r->userid.ptr);
			check_dest(c->what, &r->dest, buf, len, &c->in,
			    &c->dest);
		}
		free(buf);
	}
}

/* ---- SOCKS5 UDP header ------------------------------------------------ */

struct udp_case {
	const char		*what;
	struct input		 in;
	int			 rc;
	size_t			 len;
	uint8_t			 frag;
	struct dest_want	 dest;
};

/* A datagram is whole: no prefix to be early on. */
#define DROP		.rc = PARSE_BAD

static const struct udp_case udp_cases[] = {
	{ .what = "IPv4",
	    .in = IN("\x00\x00\x00\x01\xc0\x00\x02\x01\x00\x35" "data"),
	    OK(10), .dest = WANT_V4("192.0.2.1:53", 53) },
	{ .what = "IPv6",
	    .in = IN("\x00\x00\x00\x04" "\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x01" "\x00\x35" "q"),
	    OK(22), .dest = WANT_V6("[::1]:53", 53) },
	{ .what = "name",
	    .in = IN("\x00\x00\x00\x03\x0b" "example.org" "\x00\x35" "query"),
	    OK(18), .dest = WANT_NAME("example.org", 53) },
	{ .what = "255-byte name, no data",
	    .in = IN_FILL("\x00\x00\x00\x03\xff", 'n', 255, "\x00\x35"),
	    OK(262), .dest = WANT_FILLED(255, 53) },
	{ .what = "FRAG 1 is the caller's",
	    .in = IN("\x00\x00\x01\x01\xc0\x00\x02\x01\x00\x35" "data"),
	    OK(10), .frag = 1, .dest = WANT_V4("192.0.2.1:53", 53) },
	{ .what = "FRAG 0x81",
	    .in = IN("\x00\x00\x81\x01\xc0\x00\x02\x01\x00\x35"),
	    OK(10), .frag = 0x81, .dest = WANT_V4("192.0.2.1:53", 53) },

	{ .what = "empty", .in = IN(""), DROP },
	{ .what = "IPv4 truncated", .in = IN("\x00\x00\x00\x01\xc0\x00\x02"),
	    DROP },
	{ .what = "IPv6 truncated",
	    .in = IN("\x00\x00\x00\x04" "\x00\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x00\x00\x00\x01" "\x00"),
	    DROP },
	{ .what = "name past the end",
	    .in = IN("\x00\x00\x00\x03\x0b" "example"), DROP },
	{ .what = "RSV 0 1",
	    .in = IN("\x00\x01\x00\x01\xc0\x00\x02\x01\x00\x35"), DROP },
	{ .what = "RSV 1 0",
	    .in = IN("\x01\x00\x00\x01\xc0\x00\x02\x01\x00\x35"), DROP },
	{ .what = "ATYP 2",
	    .in = IN("\x00\x00\x00\x02\xc0\x00\x02\x01\x00\x35"), DROP },
	{ .what = "name length 0",
	    .in = IN("\x00\x00\x00\x03\x00\x00\x35" "data"), DROP },
	{ .what = "NUL in the name",
	    .in = IN("\x00\x00\x00\x03\x03" "a" "\x00" "b" "\x00\x35"),
	    DROP },
};

static void
test_socks5_udp_matches_table(void)
{
	const struct udp_case	*c;
	struct parsed		 p;
	uint8_t			*buf;
	size_t			 len, bad_at;
	int			 rc;

	for (c = udp_cases; c < udp_cases + NELEM(udp_cases); c++) {
		buf = input_build(&c->in, &len);
		rc = parse_prefixes(__FILE__, __LINE__, c->what, run_udp, true,
		    buf, len, &p, &bad_at);
		CHECKF(rc == c->rc, "%s: rc %d, want %d", c->what, rc, c->rc);
		if (rc == PARSE_OK && c->rc == PARSE_OK) {
			CHECKF(p.len == c->len, "%s: len %zu, want %zu",
			    c->what, p.len, c->len);
			CHECKF(p.u.udp.frag == c->frag, "%s: frag %u", c->what,
			    p.u.udp.frag);
			check_dest(c->what, &p.u.udp.dest, buf, len, &c->in,
			    &c->dest);
		}
		free(buf);
	}
}

/* ---- a whole handshake in one read ------------------------------------ */

/* A client that does not wait for our answers: each parser must stop at
 * its own message and leave the rest to the next one. */
static void
test_socks5_parses_pipelined_handshake(void)
{
	static const char	 wire[] = "\x05\x01\x02"
	    "\x01\x03" "bob" "\x02" "pw"
	    "\x05\x01\x00\x03\x03" "a.b" "\x01\xbb"
	    "GET";
	struct socks5_greeting	 g;
	struct socks_userpass	 u;
	struct socks5_request	 r;
	uint8_t			*buf;
	size_t			 len = sizeof(wire) - 1, off = 0;

	buf = dup_exact((const uint8_t *)wire, len);
	CU_ASSERT_EQUAL_FATAL(socks5_parse_greeting(buf, len, &g), PARSE_OK);
	CU_ASSERT_EQUAL(g.len, 3);
	off += g.len;
	CU_ASSERT_EQUAL_FATAL(socks5_parse_userpass(buf + off, len - off, &u),
	    PARSE_OK);
	CU_ASSERT_EQUAL(u.len, 8);
	CU_ASSERT(u.user.len == 3 && memcmp(u.user.ptr, "bob", 3) == 0);
	CU_ASSERT(u.password.len == 2 && memcmp(u.password.ptr, "pw", 2) == 0);
	off += u.len;
	CU_ASSERT_EQUAL_FATAL(socks5_parse_request(buf + off, len - off, &r),
	    PARSE_OK);
	CU_ASSERT_EQUAL(r.len, 10);
	CU_ASSERT(r.dest.name.len == 3 &&
	    memcmp(r.dest.name.ptr, "a.b", 3) == 0);
	CU_ASSERT_EQUAL(r.dest.port, 443);
	off += r.len;
	CU_ASSERT_EQUAL(len - off, 3);
	free(buf);
}

/* ---- formatters ------------------------------------------------------- */

/* Formats into a heap buffer of exactly the documented maximum, so a write
 * past it shows under ASan and valgrind. */
#define FMT_MAX		22

static struct pt_addr
addr_of(const char *text)
{
	struct pt_addr	 a;
	const char	*errstr = NULL;

	memset(&a, 0, sizeof(a));
	CHECKF_FATAL(sockaddr_parse(text, &a, &errstr) == 0, "%s: %s", text,
	    errstr != NULL ? errstr : "?");
	return a;
}

struct reply_case {
	const char	*what;
	const char	*bound;		/* NULL: no address */
	uint8_t		 rep;
	const char	*wire;
	size_t		 wire_len;
};

#define WIRE(lit)	(lit), sizeof(lit) - 1

static const struct reply_case reply_cases[] = {
	{ "IPv4 succeeded", "192.0.2.1:1080", SOCKS5_OK,
	    WIRE("\x05\x00\x00\x01\xc0\x00\x02\x01\x04\x38") },
	{ "IPv6 succeeded", "[2001:db8::2]:65535", SOCKS5_OK,
	    WIRE("\x05\x00\x00\x04"
	    "\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02"
	    "\xff\xff") },
	{ "no address, refused", NULL, SOCKS5_REFUSED,
	    WIRE("\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00") },
	{ "no address, command not supported", NULL, SOCKS5_CMD_UNSUPPORTED,
	    WIRE("\x05\x07\x00\x01\x00\x00\x00\x00\x00\x00") },
};

/*
 * A reply has the request's shape with REP where CMD was (RFC 1928 6), so
 * with CMD put back the request parser reads BND.ADDR the way a client
 * reads it; that proves the address survives, not just the bytes.
 */
static void
test_socks5_fmt_reply_reads_back(void)
{
	const struct reply_case	*c;
	struct socks5_request	 r;
	struct pt_addr		 bound;
	uint8_t			*out;
	size_t			 n;

	for (c = reply_cases; c < reply_cases + NELEM(reply_cases); c++) {
		out = malloc(FMT_MAX);
		CU_ASSERT_PTR_NOT_NULL_FATAL(out);
		memset(&bound, 0, sizeof(bound));
		if (c->bound != NULL)
			bound = addr_of(c->bound);
		n = socks5_fmt_reply(out, c->rep, c->bound == NULL ? NULL :
		    (const struct sockaddr *)&bound.sa);
		CHECKF(n == c->wire_len && memcmp(out, c->wire, n) == 0,
		    "%s: %zu bytes, want %zu", c->what, n, c->wire_len);
		out[1] = SOCKS5_CMD_CONNECT;
		CHECKF(socks5_parse_request(out, n, &r) == PARSE_OK &&
		    r.len == n, "%s: does not read back", c->what);
		if (c->bound != NULL)
			CHECKF(sockaddr_equal(&r.dest.addr, &bound),
			    "%s: another address read back", c->what);
		else
			CHECKF(r.dest.atyp == SOCKS_ATYP_IPV4 &&
			    r.dest.port == 0, "%s: not 0.0.0.0:0", c->what);
		free(out);
	}
}

static void
test_socks5_fmt_reply_writes_other_families_as_zero(void)
{
	struct sockaddr_un	 un;
	uint8_t			 out[FMT_MAX];
	size_t			 n;

	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	n = socks5_fmt_reply(out, SOCKS5_FAILURE, (struct sockaddr *)&un);
	CU_ASSERT_EQUAL(n, 10);
	CU_ASSERT(memcmp(out, "\x05\x01\x00\x01\x00\x00\x00\x00\x00\x00",
	    10) == 0);
}

/* Our UDP header is what the client parses, and the client's is what we
 * parse: the same format both ways, so our parser is the client here.
 * An IPv4-mapped source (an IPv4 peer of a dual-stack socket) is written
 * as IPv4. */
static void
test_socks5_fmt_udp_header_reads_back(void)
{
	static const char *const	 froms[][2] = {
		{ "192.0.2.7:53", "192.0.2.7:53" },
		{ "[2001:db8::53]:5353", "[2001:db8::53]:5353" },
		{ "[::ffff:1.2.3.4]:1", "1.2.3.4:1" },
	};
	struct socks5_udp_header	 h;
	struct pt_addr			 from, want;
	uint8_t				*out;
	size_t				 i, n;

	for (i = 0; i < NELEM(froms); i++) {
		out = malloc(FMT_MAX + 4);
		CU_ASSERT_PTR_NOT_NULL_FATAL(out);
		from = addr_of(froms[i][0]);
		want = addr_of(froms[i][1]);
		n = socks5_fmt_udp_header(out,
		    (const struct sockaddr *)&from.sa);
		CHECKF(n == (want.sa.ss_family == AF_INET ? 10u : 22u),
		    "%s: %zu bytes", froms[i][0], n);
		CHECKF(out[0] == 0 && out[1] == 0 && out[2] == 0,
		    "%s: RSV or FRAG set", froms[i][0]);
		memcpy(out + n, "data", 4);
		CHECKF(socks5_parse_udp(out, n + 4, &h) == PARSE_OK &&
		    h.len == n && h.frag == 0 &&
		    sockaddr_equal(&h.dest.addr, &want),
		    "%s: does not read back as %s", froms[i][0], froms[i][1]);
		free(out);
	}
	out = malloc(FMT_MAX);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	n = socks5_fmt_udp_header(out, NULL);
	CU_ASSERT_EQUAL(n, 10);
	CU_ASSERT(memcmp(out, "\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00",
	    10) == 0);
	free(out);
}

static void
test_socks4_fmt_reply_matches_wire(void)
{
	static const uint8_t	 ip[4] = { 192, 0, 2, 1 };
	uint8_t			*out;

	out = malloc(8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_EQUAL(socks4_fmt_reply(out, true, 80, ip), 8);
	CU_ASSERT(memcmp(out, "\x00\x5a\x00\x50\xc0\x00\x02\x01", 8) == 0);
	CU_ASSERT_EQUAL(socks4_fmt_reply(out, false, 0x1234, NULL), 8);
	CU_ASSERT(memcmp(out, "\x00\x5b\x12\x34\x00\x00\x00\x00", 8) == 0);
	free(out);
}

void
register_socks_parse_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("socks_parse", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "greeting_matches_table",
	    test_socks5_greeting_matches_table);
	CU_add_test(s, "userpass_matches_table",
	    test_socks5_userpass_matches_table);
	CU_add_test(s, "request_matches_table",
	    test_socks5_request_matches_table);
	CU_add_test(s, "socks4_request_matches_table",
	    test_socks4_request_matches_table);
	CU_add_test(s, "udp_matches_table", test_socks5_udp_matches_table);
	CU_add_test(s, "parses_pipelined_handshake",
	    test_socks5_parses_pipelined_handshake);
	CU_add_test(s, "fmt_reply_reads_back",
	    test_socks5_fmt_reply_reads_back);
	CU_add_test(s, "fmt_reply_writes_other_families_as_zero",
	    test_socks5_fmt_reply_writes_other_families_as_zero);
	CU_add_test(s, "fmt_udp_header_reads_back",
	    test_socks5_fmt_udp_header_reads_back);
	CU_add_test(s, "socks4_fmt_reply_matches_wire",
	    test_socks4_fmt_reply_matches_wire);
}
