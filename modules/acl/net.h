/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Addresses and networks for the ACL: parsing "10.0.0.0/8" and
 * "2001:db8::/32", matching an address against one, and the table of
 * private destinations (loopback, RFC 1918, link-local, ...), including
 * the IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64,
 * 6to4), so a rule on 10/8 holds however the client wrote the address.
 * Pure functions: no allocation, no state.
 */
#ifndef PT_ACL_NET_H
#define PT_ACL_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* An address as the ACL compares it: 4 or 16 bytes, network order. */
struct acl_addr {
	int		 family;	/* AF_INET, AF_INET6, or 0: none */
	uint8_t		 b[16];
};

/* A network: family, prefix length and the address (no host bits). */
struct acl_net {
	int		 family;
	unsigned	 prefix;
	uint8_t		 b[16];
};

/* 0, or -1 with *why (static text) when <s> is not a network. A bare
 * address is a host (/32, /128); host bits set are refused. */
int	 acl_net_parse(const char *s, struct acl_net *n, const char **why);
/* <sa> as an acl_addr; an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
 * becomes its IPv4 address. family 0 for other families. */
void	 acl_addr_from(const struct sockaddr *sa, struct acl_addr *a);
/* The IPv4 address an IPv6 address carries (IPv4-compatible ::a.b.c.d,
 * NAT64 64:ff9b::/96, 6to4 2002::/16), in <v4>; false when none. */
bool	 acl_addr_embedded_v4(const struct acl_addr *a, struct acl_addr *v4);
/* Whether <n> holds <a> (same family only). */
bool	 acl_net_has(const struct acl_net *n, const struct acl_addr *a);
/* Whether <n> holds <a> or the IPv4 address <a> carries. */
bool	 acl_net_has_any(const struct acl_net *n, const struct acl_addr *a);
/*
 * Whether <a> is a private destination; when it is, *range is the
 * special-purpose range that holds it (for an IPv6 form carrying an
 * IPv4 address, the IPv4 range that holds that address).
 */
bool	 acl_private(const struct acl_addr *a, struct acl_net *range);
/* Whether <inner> lies inside <outer> (same family, prefix at least as
 * long). */
bool	 acl_net_within(const struct acl_net *inner,
	    const struct acl_net *outer);

#endif /* PT_ACL_NET_H */
