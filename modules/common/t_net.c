/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/common/net.c: CIDR parsing and matching (IPv4, IPv6,
 * /0, /32, /128, host bits), and the private-destination table with every
 * IPv6 form that carries an IPv4 address. The ranges that an integration
 * test must never send a packet to (169.254.169.254, 10/8, ...) are proven
 * here.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "modules/common/net.h"
#include "t/unit/check.h"

/* <text> as the core hands it over: a sockaddr, unmapped by net_addr_from. */
static struct net_addr
t_addr(const char *text)
{
	struct sockaddr_storage	 ss;
	struct net_addr		 a;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr) ==
	    1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, text,
	    &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	net_addr_from((struct sockaddr *)&ss, &a);
	return a;
}

static bool
t_in(const char *net, const char *addr)
{
	struct net_prefix	 n;
	struct net_addr	 a = t_addr(addr);
	const char	*why;

	CHECKF_FATAL(net_prefix_parse(net, &n, &why) == 0, "parse %s", net);
	return net_prefix_has_any(&n, &a);
}

static void
test_acl_net_parse(void)
{
	static const char *const good[] = {
		"10.0.0.0/8", "0.0.0.0/0", "192.0.2.1", "192.0.2.1/32",
		"::/0", "::1", "::1/128", "2001:db8::/32", "fe80::/10",
	};
	static const char *const bad[] = {
		"10.0.0.300/8", "10.1.2.3/8", "10.0.0.0/33", "10.0.0.0/",
		"10.0.0.0/-1", "10.0.0.0/8x", "::1/129", "2001:db8::1/32",
		"example.org", "", "10.0.0.0/ 8", "1.2.3",
	};
	struct net_prefix	 n;
	const char	*why;
	size_t		 i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECKF(net_prefix_parse(good[i], &n, &why) == 0, "%s parses",
		    good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		CHECKF(net_prefix_parse(bad[i], &n, &why) < 0 && why != NULL,
		    "%s is refused with a reason", bad[i]);
	}
	CU_ASSERT(net_prefix_parse("10.0.0.0/8", &n, &why) == 0 &&
	    n.family == AF_INET && n.prefix == 8);
	CU_ASSERT(net_prefix_parse("::1", &n, &why) == 0 &&
	    n.family == AF_INET6 && n.prefix == 128);
	/* Written IPv4-mapped, a network is the IPv4 one (addresses are
	 * compared unmapped, so the mapped form would never match). */
	CU_ASSERT(net_prefix_parse("::ffff:127.0.0.0/104", &n, &why) == 0 &&
	    n.family == AF_INET && n.prefix == 8 && n.b[0] == 127 &&
	    n.b[1] == 0 && n.b[4] == 0);
	CU_ASSERT(net_prefix_parse("::ffff:192.0.2.7", &n, &why) == 0 &&
	    n.family == AF_INET && n.prefix == 32 && n.b[3] == 7);
	CU_ASSERT(t_in("::ffff:127.0.0.0/104", "127.0.0.2") &&
	    t_in("::ffff:127.0.0.0/104", "::ffff:127.9.9.9") &&
	    !t_in("::ffff:127.0.0.0/104", "128.0.0.1"));
	CU_ASSERT(net_prefix_parse("::ffff:0.0.0.0/96", &n, &why) == 0 &&
	    n.family == AF_INET && n.prefix == 0);
	CU_ASSERT(net_prefix_parse("::/95", &n, &why) == 0 &&
	    n.family == AF_INET6 && n.prefix == 95);
}

static void
test_acl_net_match(void)
{
	CU_ASSERT(t_in("10.0.0.0/8", "10.255.1.2"));
	CU_ASSERT(!t_in("10.0.0.0/8", "11.0.0.0"));
	CU_ASSERT(t_in("0.0.0.0/0", "203.0.113.9"));
	CU_ASSERT(!t_in("0.0.0.0/0", "2001:db8::1"));
	CU_ASSERT(t_in("192.0.2.1/32", "192.0.2.1"));
	CU_ASSERT(!t_in("192.0.2.1/32", "192.0.2.2"));
	CU_ASSERT(t_in("172.16.0.0/12", "172.31.255.255"));
	CU_ASSERT(!t_in("172.16.0.0/12", "172.32.0.0"));
	CU_ASSERT(t_in("::/0", "2001:db8::1"));
	CU_ASSERT(!t_in("::/0", "10.0.0.1"));
	CU_ASSERT(t_in("2001:db8::/32", "2001:db8:ffff::1"));
	CU_ASSERT(!t_in("2001:db8::/32", "2001:db9::1"));
	CU_ASSERT(t_in("::1/128", "::1"));
	CU_ASSERT(!t_in("::1/128", "::2"));
	CU_ASSERT(t_in("fe80::/10", "febf::1"));
	CU_ASSERT(!t_in("fe80::/10", "fec0::1"));
	/* An IPv4 rule holds for every IPv6 spelling of its addresses. */
	CU_ASSERT(t_in("10.0.0.0/8", "::ffff:10.1.2.3"));
	CU_ASSERT(t_in("10.0.0.0/8", "::10.1.2.3"));
	CU_ASSERT(t_in("10.0.0.0/8", "64:ff9b::a01:203"));
	CU_ASSERT(t_in("10.0.0.0/8", "2002:a01:203::1"));
	CU_ASSERT(t_in("127.0.0.1/32", "::ffff:127.0.0.1"));
	CU_ASSERT(!t_in("10.0.0.0/8", "64:ff9b::b01:203"));
	CU_ASSERT(!t_in("10.0.0.0/8", "2001:db8::a01:203"));
}

static void
test_acl_net_within(void)
{
	struct net_prefix	 a, b;
	const char	*why;

	net_prefix_parse("127.0.0.1/32", &a, &why);
	net_prefix_parse("127.0.0.0/8", &b, &why);
	CU_ASSERT(net_prefix_within(&a, &b));
	CU_ASSERT(!net_prefix_within(&b, &a));
	net_prefix_parse("0.0.0.0/0", &a, &why);
	CU_ASSERT(!net_prefix_within(&a, &b));
	net_prefix_parse("127.0.0.0/8", &a, &why);
	CU_ASSERT(net_prefix_within(&a, &b));
	net_prefix_parse("::1/128", &a, &why);
	CU_ASSERT(!net_prefix_within(&a, &b));
}

static void
test_acl_net_private(void)
{
	static const char *const private[] = {
		/* IPv4 */
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255",
		"100.64.0.1", "100.127.255.254", "127.0.0.1", "127.0.0.2",
		"127.255.255.255", "169.254.169.254", "169.254.0.1",
		"172.16.0.1", "172.31.255.254", "192.0.0.8", "192.0.2.7",
		"192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.1",
		"198.51.100.3", "203.0.113.200", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		/* IPv6 */
		"::", "::1", "fe80::1", "febf::1", "fec0::1", "fc00::1",
		"fd12:3456::1", "ff02::1", "ff05::1:3", "2001:db8::1",
		"2001::1", "2001:0:4136:e378::1", "3fff::1", "100::1",
		"5f00::1", "64:ff9b:1::a00:1",
		/* IPv4 forms inside IPv6 */
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		"::127.0.0.1", "::10.0.0.1", "::ffff:0:10.0.0.1",
		"64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1",
		"64:ff9b::c0a8:101", "2002:a00:1::1", "2002:a9fe:a9fe::",
		"2002:7f00:1::1", "2002:c0a8:101:1::1",
	};
	static const char *const public[] = {
		"8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0",
		"172.15.255.255", "172.32.0.0", "169.253.255.255",
		"169.255.0.0", "192.0.1.1", "192.169.0.1", "198.17.255.255",
		"198.20.0.0", "223.255.255.255", "11.0.0.1", "126.255.255.255",
		"128.0.0.1", "2606:4700::1111", "2a00:1450:4001::1",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
		"2001:4860::8888",
	};
	struct net_prefix	 range;
	struct net_addr	 a;
	size_t		 i;

	for (i = 0; i < sizeof(private) / sizeof(private[0]); i++) {
		a = t_addr(private[i]);
		CHECKF(a.family != 0 && net_addr_private(&a, &range),
		    "%s is private", private[i]);
	}
	for (i = 0; i < sizeof(public) / sizeof(public[0]); i++) {
		a = t_addr(public[i]);
		CHECKF(a.family != 0 && !net_addr_private(&a, &range),
		    "%s is public", public[i]);
	}
	/* The range named is the IPv4 one for an IPv4 form. */
	a = t_addr("64:ff9b::a9fe:a9fe");
	CU_ASSERT(net_addr_private(&a, &range) && range.family == AF_INET &&
	    range.prefix == 16 && range.b[0] == 169 && range.b[1] == 254);
	a = t_addr("::ffff:127.0.0.1");
	CU_ASSERT(a.family == AF_INET && net_addr_private(&a, &range) &&
	    range.prefix == 8 && range.b[0] == 127);
}

void	register_net_suite(void);

void
register_net_suite(void)
{
	CU_pSuite	 s = CU_add_suite("net", NULL, NULL);

	CU_add_test(s, "parse", test_acl_net_parse);
	CU_add_test(s, "match", test_acl_net_match);
	CU_add_test(s, "within", test_acl_net_within);
	CU_add_test(s, "private", test_acl_net_private);
}
