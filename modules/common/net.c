/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Networks and the private-destination table. The table follows IANA's
 * special-purpose registries (RFC 6890 and its successors) and adds the
 * ranges an attacker reaches through a proxy to get inside: every form
 * that hides an IPv4 address in an IPv6 one is unpacked and judged as
 * that IPv4 address.
 */
#include "modules/common/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int
net_prefix_parse(const char *s, struct net_prefix *n, const char **why)
{
	char		 buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	unsigned long	 p;
	unsigned	 max, i;

	if (strlen(s) >= sizeof(buf)) {
		*why = "too long for a network";
		return -1;
	}
	strcpy(buf, s);
	if ((slash = strchr(buf, '/')) != NULL)
		*slash++ = '\0';
	memset(n, 0, sizeof(*n));
	if (inet_pton(AF_INET, buf, n->b) == 1) {
		n->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, n->b) == 1) {
		n->family = AF_INET6;
		max = 128;
	} else {
		*why = "not an IPv4 or IPv6 address";
		return -1;
	}
	p = max;
	if (slash != NULL) {
		errno = 0;
		p = strtoul(slash, &end, 10);
		if (*slash < '0' || *slash > '9' || *end != '\0' ||
		    errno != 0 || p > max) {
			*why = max == 32 ? "prefix length is not 0-32" :
			    "prefix length is not 0-128";
			return -1;
		}
	}
	n->prefix = (unsigned)p;
	/* "10.1.2.3/8" is a typo more often than a network. */
	for (i = n->prefix; i < max; i++)
		if (n->b[i / 8] & (0x80 >> (i % 8))) {
			*why = "host bits set after the prefix";
			return -1;
		}
	/* ::ffff:a.b.c.d/96+ is an IPv4 network: addresses are compared
	 * unmapped (net_addr_from), so written mapped it would never
	 * match. */
	if (n->family == AF_INET6 && n->prefix >= 96 &&
	    IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)(const void *)n->b)) {
		n->family = AF_INET;
		n->prefix -= 96;
		memmove(n->b, n->b + 12, 4);
		memset(n->b + 4, 0, 12);
	}
	return 0;
}

void
net_addr_from(const struct sockaddr *sa, struct net_addr *a)
{
	const uint8_t	*v6;

	memset(a, 0, sizeof(*a));
	if (sa->sa_family == AF_INET) {
		a->family = AF_INET;
		memcpy(a->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		v6 = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)v6)) {
			a->family = AF_INET;
			memcpy(a->b, v6 + 12, 4);
		} else {
			a->family = AF_INET6;
			memcpy(a->b, v6, 16);
		}
	}
}

static bool
net_zero(const uint8_t *b, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

bool
net_addr_embedded_v4(const struct net_addr *a, struct net_addr *v4)
{
	static const uint8_t	 nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const uint8_t	 siit[12] = { [8] = 0xff, [9] = 0xff };
	const uint8_t		*b = a->b, *at;

	if (a->family != AF_INET6)
		return false;
	if (b[0] == 0x20 && b[1] == 0x02)		/* 6to4 2002::/16 */
		at = b + 2;
	else if (memcmp(b, nat64, 12) == 0 ||		/* 64:ff9b::/96 */
	    memcmp(b, siit, 12) == 0 ||			/* ::ffff:0:0:0/96 */
	    net_zero(b, 12))				/* ::a.b.c.d */
		at = b + 12;
	else
		return false;
	memset(v4, 0, sizeof(*v4));
	v4->family = AF_INET;
	memcpy(v4->b, at, 4);
	return true;
}

static bool
net_prefix_eq(const uint8_t *x, const uint8_t *y, unsigned bits)
{
	unsigned	 full = bits / 8, rest = bits % 8;

	if (memcmp(x, y, full) != 0)
		return false;
	return rest == 0 || ((x[full] ^ y[full]) & (0xff00 >> rest) & 0xff) == 0;
}

static uint32_t
net_be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	    (uint32_t)b[2] << 8 | b[3];
}

bool
net_prefix_has(const struct net_prefix *n, const struct net_addr *a)
{
	uint32_t	 mask;

	if (n->family != a->family)
		return false;
	/* IPv4, every request's case: one masked word, no memcmp. */
	if (n->family == AF_INET) {
		mask = n->prefix == 0 ? 0 : ~(uint32_t)0 << (32 - n->prefix);
		return ((net_be32(n->b) ^ net_be32(a->b)) & mask) == 0;
	}
	return net_prefix_eq(n->b, a->b, n->prefix);
}

bool
net_prefix_has_any(const struct net_prefix *n, const struct net_addr *a)
{
	struct net_addr	 v4;

	if (net_prefix_has(n, a))
		return true;
	return n->family == AF_INET && net_addr_embedded_v4(a, &v4) &&
	    net_prefix_has(n, &v4);
}

bool
net_prefix_within(const struct net_prefix *inner, const struct net_prefix *outer)
{
	return inner->family == outer->family &&
	    inner->prefix >= outer->prefix &&
	    net_prefix_eq(inner->b, outer->b, outer->prefix);
}

#define V4(a, b, c, d, p)	{ AF_INET, p, { a, b, c, d } }

/* Not reachable from outside, or not meant to be: IANA IPv4 special-
 * purpose ranges, multicast and class E. */
static const struct net_prefix net_private_v4[] = {
	V4(0, 0, 0, 0, 8),		/* "this network" */
	V4(10, 0, 0, 0, 8),		/* RFC 1918 */
	V4(100, 64, 0, 0, 10),		/* CGNAT, RFC 6598 */
	V4(127, 0, 0, 0, 8),		/* loopback */
	V4(169, 254, 0, 0, 16),		/* link-local, cloud metadata */
	V4(172, 16, 0, 0, 12),		/* RFC 1918 */
	V4(192, 0, 0, 0, 24),		/* IETF protocol assignments */
	V4(192, 0, 2, 0, 24),		/* TEST-NET-1 */
	V4(192, 88, 99, 0, 24),		/* 6to4 relay anycast */
	V4(192, 168, 0, 0, 16),		/* RFC 1918 */
	V4(198, 18, 0, 0, 15),		/* benchmarking */
	V4(198, 51, 100, 0, 24),	/* TEST-NET-2 */
	V4(203, 0, 113, 0, 24),		/* TEST-NET-3 */
	V4(224, 0, 0, 0, 4),		/* multicast */
	V4(240, 0, 0, 0, 4),		/* reserved, broadcast */
};

static const struct net_prefix net_private_v6[] = {
	{ AF_INET6, 128, { 0 } },			/* :: */
	{ AF_INET6, 128, { [15] = 1 } },		/* ::1 */
	{ AF_INET6, 48, { 0, 0x64, 0xff, 0x9b, 0, 1 } },/* local NAT64 */
	{ AF_INET6, 64, { 0x01, 0x00 } },		/* discard 100::/64 */
	{ AF_INET6, 23, { 0x20, 0x01, 0x00, 0x00 } },	/* 2001::/23 IETF,
							 * Teredo included */
	{ AF_INET6, 32, { 0x20, 0x01, 0x0d, 0xb8 } },	/* documentation */
	{ AF_INET6, 20, { 0x3f, 0xff } },		/* documentation */
	{ AF_INET6, 16, { 0x3f, 0xfe } },		/* old 6bone */
	{ AF_INET6, 16, { 0x5f, 0x00 } },		/* SRv6 SIDs */
	{ AF_INET6, 7, { 0xfc } },			/* unique local */
	{ AF_INET6, 10, { 0xfe, 0x80 } },		/* link-local */
	{ AF_INET6, 10, { 0xfe, 0xc0 } },		/* site-local */
	{ AF_INET6, 8, { 0xff } },			/* multicast */
};

static bool
net_in_table(const struct net_prefix *t, size_t n, const struct net_addr *a,
    struct net_prefix *range)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (net_prefix_has(&t[i], a)) {
			*range = t[i];
			return true;
		}
	return false;
}

bool
net_addr_private(const struct net_addr *a, struct net_prefix *range)
{
	struct net_addr	 v4;

	if (a->family == AF_INET)
		return net_in_table(net_private_v4, sizeof(net_private_v4) /
		    sizeof(net_private_v4[0]), a, range);
	if (a->family != AF_INET6)
		return false;
	if (net_in_table(net_private_v6, sizeof(net_private_v6) /
	    sizeof(net_private_v6[0]), a, range))
		return true;
	return net_addr_embedded_v4(a, &v4) && net_addr_private(&v4, range);
}
