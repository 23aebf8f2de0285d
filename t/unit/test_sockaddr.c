/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * common/sockaddr.c: splitting "host:port", parsing numeric listener
 * addresses, formatting them back and comparing them. Tables of
 * {input, expected}; every accepted address must survive parse -> fmt ->
 * parse unchanged. Name resolution (sockaddr_resolve with a host name) is
 * not tested here: it depends on the machine's resolver.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "common/sockaddr.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

struct split_case {
	const char	*input;
	const char	*host;		/* NULL: must be refused */
	uint16_t	 port;
	const char	*why;		/* refused: part of the error text */
};

static const struct split_case split_cases[] = {
	{ "127.0.0.1:80", "127.0.0.1", 80, NULL },
	{ "[::1]:8080", "::1", 8080, NULL },
	{ "[::]:1080", "::", 1080, NULL },
	{ "*:3128", "*", 3128, NULL },
	{ "example.org:443", "example.org", 443, NULL },
	{ "10.0.0.1:1", "10.0.0.1", 1, NULL },
	{ "10.0.0.1:65535", "10.0.0.1", 65535, NULL },
	{ "10.0.0.1:0", NULL, 0, "out of range" },
	{ "10.0.0.1:65536", NULL, 0, "out of range" },
	{ "10.0.0.1:99999999999999999999", NULL, 0, "out of range" },
	{ "10.0.0.1:abc", NULL, 0, "port" },
	{ "10.0.0.1:-1", NULL, 0, "port" },
	{ "10.0.0.1:+80", NULL, 0, "port" },
	{ "10.0.0.1: 80", NULL, 0, "port" },
	{ "10.0.0.1:80x", NULL, 0, "port" },
	{ "10.0.0.1:", NULL, 0, "port" },
	{ "[::1]:", NULL, 0, "port" },
	{ "10.0.0.1", NULL, 0, "host:port" },
	{ "", NULL, 0, "host:port" },
	{ "::1:80", NULL, 0, "brackets" },
	{ "fe80::1", NULL, 0, "brackets" },
	{ "2001:db8::1:443", NULL, 0, "brackets" },
	{ ":80", NULL, 0, "missing host" },
	{ "[]:80", NULL, 0, "missing host" },
	{ "[::1]", NULL, 0, "[address]:port" },
	{ "[::1]80", NULL, 0, "[address]:port" },
	{ "[::1:80", NULL, 0, "[address]:port" },
};

static void
test_sockaddr_split_matches_table(void)
{
	const struct split_case	*c;
	const char		*errstr;
	char			 host[256];
	uint16_t		 port;
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(split_cases) / sizeof(split_cases[0]); i++) {
		c = &split_cases[i];
		errstr = NULL;
		port = 0;
		strcpy(host, "unset");
		rc = sockaddr_split(c->input, host, sizeof(host), &port,
		    &errstr);
		if (c->host != NULL) {
			CHECKF(rc == 0, "split(\"%s\") refused: %s", c->input,
			    errstr != NULL ? errstr : "(no errstr)");
			CHECKF(rc != 0 || strcmp(host, c->host) == 0,
			    "split(\"%s\"): host \"%s\", want \"%s\"",
			    c->input, host, c->host);
			CHECKF(rc != 0 || port == c->port,
			    "split(\"%s\"): port %u, want %u", c->input, port,
			    c->port);
		} else {
			CHECKF(rc == -1, "split(\"%s\") accepted: host \"%s\" "
			    "port %u", c->input, host, port);
			CHECKF(rc == 0 || (errstr != NULL &&
			    strstr(errstr, c->why) != NULL),
			    "split(\"%s\"): error \"%s\" lacks \"%s\"",
			    c->input, errstr != NULL ? errstr : "(null)",
			    c->why);
		}
	}
}

/* The host buffer bound is exact: hostsz - 1 characters fit, one more is
 * refused instead of truncated. */
static void
test_sockaddr_split_refuses_host_longer_than_buffer(void)
{
	char		 input[64], host[16];
	const char	*errstr = NULL;
	uint16_t	 port = 0;

	memset(input, 'a', 15);
	strcpy(input + 15, ":80");
	CU_ASSERT_EQUAL(sockaddr_split(input, host, sizeof(host), &port,
	    &errstr), 0);
	CU_ASSERT_EQUAL(strlen(host), 15);
	CU_ASSERT_EQUAL(port, 80);

	memset(input, 'a', 16);
	strcpy(input + 16, ":80");
	CU_ASSERT_EQUAL(sockaddr_split(input, host, sizeof(host), &port,
	    &errstr), -1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(errstr);
	CU_ASSERT_PTR_NOT_NULL(strstr(errstr, "too long"));
}

struct parse_case {
	const char	*input;
	int		 family;	/* 0: must be refused */
	const char	*fmt;		/* canonical text, or error fragment */
};

static const struct parse_case parse_cases[] = {
	{ "127.0.0.1:80", AF_INET, "127.0.0.1:80" },
	{ "0.0.0.0:1", AF_INET, "0.0.0.0:1" },
	{ "*:3128", AF_INET, "0.0.0.0:3128" },
	{ "255.255.255.255:65535", AF_INET, "255.255.255.255:65535" },
	{ "[::1]:8080", AF_INET6, "[::1]:8080" },
	{ "[::]:1080", AF_INET6, "[::]:1080" },
	{ "[2001:DB8:0::0:1]:443", AF_INET6, "[2001:db8::1]:443" },
	{ "[::ffff:192.0.2.1]:80", AF_INET6, "[::ffff:192.0.2.1]:80" },
	{ "localhost:80", 0, "numeric" },
	{ "256.0.0.1:80", 0, "numeric" },
	{ "1.2.3:80", 0, "numeric" },
	{ " 127.0.0.1:80", 0, "numeric" },
	{ "[::g]:80", 0, "numeric" },
	{ "::1:80", 0, "brackets" },
	{ "127.0.0.1:0", 0, "out of range" },
	{ "127.0.0.1:65536", 0, "out of range" },
	{ "[::1]:abc", 0, "port" },
	{ "[127.0.0.1]:80", 0, "brackets" },
	{ "127.0.0.1", 0, "host:port" },
	{ ":80", 0, "missing host" },
};

static void
test_sockaddr_parse_matches_table(void)
{
	const struct parse_case	*c;
	struct pt_addr		 a;
	const char		*errstr;
	char			 buf[SOCKADDR_STRLEN];
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		c = &parse_cases[i];
		errstr = NULL;
		rc = sockaddr_parse(c->input, &a, &errstr);
		if (c->family == 0) {
			CHECKF(rc == -1, "parse(\"%s\") accepted", c->input);
			CHECKF(rc == 0 || (errstr != NULL &&
			    strstr(errstr, c->fmt) != NULL),
			    "parse(\"%s\"): error \"%s\" lacks \"%s\"",
			    c->input, errstr != NULL ? errstr : "(null)",
			    c->fmt);
			continue;
		}
		if (!CHECKF(rc == 0, "parse(\"%s\") refused: %s", c->input,
		    errstr != NULL ? errstr : "(no errstr)"))
			continue;
		CHECKF(a.sa.ss_family == c->family,
		    "parse(\"%s\"): family %d, want %d", c->input,
		    a.sa.ss_family, c->family);
		CHECKF(a.len == (c->family == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)),
		    "parse(\"%s\"): len %u", c->input, (unsigned)a.len);
		sockaddr_fmt((struct sockaddr *)&a.sa, buf, sizeof(buf));
		CHECKF(strcmp(buf, c->fmt) == 0,
		    "fmt(parse(\"%s\")) = \"%s\", want \"%s\"", c->input, buf,
		    c->fmt);
	}
}

/* What the master logs must parse back to the very address it bound. */
static void
test_sockaddr_round_trips_through_fmt(void)
{
	struct pt_addr	 a, b;
	const char	*errstr;
	char		 buf[SOCKADDR_STRLEN];
	size_t		 i;

	for (i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		if (parse_cases[i].family == 0)
			continue;
		if (sockaddr_parse(parse_cases[i].input, &a, &errstr) != 0)
			continue;	/* reported by the parse table */
		sockaddr_fmt((struct sockaddr *)&a.sa, buf, sizeof(buf));
		CHECKF(sockaddr_parse(buf, &b, &errstr) == 0,
		    "\"%s\" formatted as \"%s\", which does not parse",
		    parse_cases[i].input, buf);
		CHECKF(sockaddr_equal(&a, &b),
		    "\"%s\" -> \"%s\" -> a different address",
		    parse_cases[i].input, buf);
	}
}

static void
test_sockaddr_fmt_longest_ipv6_fits(void)
{
	struct pt_addr	 a;
	const char	*errstr;
	char		 buf[SOCKADDR_STRLEN];
	const char	*in = "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535";

	CU_ASSERT_EQUAL_FATAL(sockaddr_parse(in, &a, &errstr), 0);
	sockaddr_fmt((struct sockaddr *)&a.sa, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, in);
	CU_ASSERT(strlen(buf) < sizeof(buf));
}

static void
test_sockaddr_fmt_truncates_to_buffer(void)
{
	struct pt_addr	 a;
	const char	*errstr;
	char		 buf[8];

	CU_ASSERT_EQUAL_FATAL(sockaddr_parse("127.0.0.1:80", &a, &errstr), 0);
	CU_ASSERT_PTR_EQUAL(sockaddr_fmt((struct sockaddr *)&a.sa, buf,
	    sizeof(buf)), buf);
	CU_ASSERT_STRING_EQUAL(buf, "127.0.0");
}

static void
test_sockaddr_fmt_names_other_families(void)
{
	struct sockaddr_storage	 ss;
	char			 buf[SOCKADDR_STRLEN];

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNIX;
	CU_ASSERT_STRING_EQUAL(sockaddr_fmt((struct sockaddr *)&ss, buf,
	    sizeof(buf)), "unix");
	ss.ss_family = AF_UNSPEC;
	CU_ASSERT_STRING_EQUAL(sockaddr_fmt((struct sockaddr *)&ss, buf,
	    sizeof(buf)), "?");
	CU_ASSERT_EQUAL(sockaddr_port((struct sockaddr *)&ss), 0);
}

static void
test_sockaddr_port_reads_both_families(void)
{
	struct pt_addr	 a;
	const char	*errstr;

	CU_ASSERT_EQUAL_FATAL(sockaddr_parse("10.1.2.3:3128", &a, &errstr), 0);
	CU_ASSERT_EQUAL(sockaddr_port((struct sockaddr *)&a.sa), 3128);
	CU_ASSERT_EQUAL_FATAL(sockaddr_parse("[::1]:65535", &a, &errstr), 0);
	CU_ASSERT_EQUAL(sockaddr_port((struct sockaddr *)&a.sa), 65535);
}

struct equal_case {
	const char	*a, *b;
	bool		 equal;
};

static const struct equal_case equal_cases[] = {
	{ "127.0.0.1:80", "127.0.0.1:80", true },
	{ "*:80", "0.0.0.0:80", true },
	{ "[::1]:80", "[0:0::1]:80", true },
	{ "127.0.0.1:80", "127.0.0.1:81", false },
	{ "127.0.0.1:80", "127.0.0.2:80", false },
	{ "0.0.0.0:80", "[::]:80", false },
	{ "[::1]:80", "[::1]:81", false },
	{ "[::1]:80", "[::2]:80", false },
	{ "127.0.0.1:80", "[::ffff:127.0.0.1]:80", false },
};

static void
test_sockaddr_equal_matches_table(void)
{
	struct pt_addr	 a, b;
	const char	*errstr;
	size_t		 i;

	for (i = 0; i < sizeof(equal_cases) / sizeof(equal_cases[0]); i++) {
		if (!CHECKF(sockaddr_parse(equal_cases[i].a, &a, &errstr) == 0
		    && sockaddr_parse(equal_cases[i].b, &b, &errstr) == 0,
		    "\"%s\" or \"%s\" does not parse", equal_cases[i].a,
		    equal_cases[i].b))
			continue;
		CHECKF(sockaddr_equal(&a, &b) == equal_cases[i].equal,
		    "equal(\"%s\", \"%s\") is %s", equal_cases[i].a,
		    equal_cases[i].b, equal_cases[i].equal ? "false" : "true");
		CHECKF(sockaddr_equal(&b, &a) == sockaddr_equal(&a, &b),
		    "equal(\"%s\", \"%s\") is not symmetric",
		    equal_cases[i].a, equal_cases[i].b);
	}
}

/* Forwarding targets written as numbers must never reach the resolver. */
static void
test_sockaddr_resolve_takes_numeric_addresses_as_is(void)
{
	struct pt_addr	 a, b;
	const char	*errstr;

	CU_ASSERT_EQUAL_FATAL(sockaddr_resolve("192.0.2.7:6379", &a, &errstr),
	    0);
	CU_ASSERT_EQUAL_FATAL(sockaddr_parse("192.0.2.7:6379", &b, &errstr), 0);
	CU_ASSERT_TRUE(sockaddr_equal(&a, &b));
	CU_ASSERT_EQUAL_FATAL(sockaddr_resolve("[2001:db8::7]:80", &a,
	    &errstr), 0);
	CU_ASSERT_EQUAL(a.sa.ss_family, AF_INET6);
	CU_ASSERT_EQUAL(sockaddr_port((struct sockaddr *)&a.sa), 80);
	CU_ASSERT_EQUAL(sockaddr_resolve("192.0.2.7:0", &a, &errstr), -1);
	CU_ASSERT_EQUAL(sockaddr_resolve("2001:db8::7:80", &a, &errstr), -1);
}

/* A rule on 10/8 must see ::ffff:10.0.0.1 as 10.0.0.1; other IPv6
 * addresses, IPv4-compatible ones included, stay what they are. */
static void
test_sockaddr_unmap_shows_mapped_as_ipv4(void)
{
	static const struct {
		const char	*in, *want;
	} cases[] = {
		{ "[::ffff:10.0.0.1]:80", "10.0.0.1:80" },
		{ "[::ffff:127.0.0.1]:65535", "127.0.0.1:65535" },
		{ "[::ffff:169.254.169.254]:1", "169.254.169.254:1" },
		{ "10.1.2.3:443", "10.1.2.3:443" },
		{ "[::1]:80", "[::1]:80" },
		{ "[::10.0.0.1]:80", "[::10.0.0.1]:80" },
		{ "[::fffe:10.0.0.1]:80", "[::fffe:a00:1]:80" },
	};
	struct pt_addr	 a, out;
	const char	*errstr;
	char		 buf[64];
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(sockaddr_parse(cases[i].in, &a, &errstr),
		    0);
		memset(&out, 0xa5, sizeof(out));
		sockaddr_unmap((struct sockaddr *)&a.sa, &out);
		sockaddr_fmt((struct sockaddr *)&out.sa, buf, sizeof(buf));
		CHECKF(strcmp(buf, cases[i].want) == 0,
		    "unmap(%s) gave %s, want %s", cases[i].in, buf,
		    cases[i].want);
		CHECKF(out.len == (out.sa.ss_family == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)),
		    "unmap(%s): length %u", cases[i].in, (unsigned)out.len);
	}
}

void
register_sockaddr_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("sockaddr", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "split_matches_table",
	    test_sockaddr_split_matches_table);
	CU_add_test(s, "split_refuses_host_longer_than_buffer",
	    test_sockaddr_split_refuses_host_longer_than_buffer);
	CU_add_test(s, "parse_matches_table",
	    test_sockaddr_parse_matches_table);
	CU_add_test(s, "round_trips_through_fmt",
	    test_sockaddr_round_trips_through_fmt);
	CU_add_test(s, "fmt_longest_ipv6_fits",
	    test_sockaddr_fmt_longest_ipv6_fits);
	CU_add_test(s, "fmt_truncates_to_buffer",
	    test_sockaddr_fmt_truncates_to_buffer);
	CU_add_test(s, "fmt_names_other_families",
	    test_sockaddr_fmt_names_other_families);
	CU_add_test(s, "port_reads_both_families",
	    test_sockaddr_port_reads_both_families);
	CU_add_test(s, "equal_matches_table",
	    test_sockaddr_equal_matches_table);
	CU_add_test(s, "resolve_takes_numeric_addresses_as_is",
	    test_sockaddr_resolve_takes_numeric_addresses_as_is);
	CU_add_test(s, "unmap_shows_mapped_as_ipv4",
	    test_sockaddr_unmap_shows_mapped_as_ipv4);
}
