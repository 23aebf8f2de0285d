/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Module support code, not the core and not the module ABI: addresses and
 * networks as the acl, limits and auth modules compare them. Compiled
 * into each module that needs it (its local.am lists net.c), so every
 * module keeps its own hidden copy and includes only <portico/module.h>
 * and headers of modules/common/ or its own directory. The core links it
 * too (common/local.am), for a listener's proxy_protocol `from`, so a
 * network means the same to the core and to the modules.
 *
 * Parsing "10.0.0.0/8" and
 * "2001:db8::/32", matching an address against one, and the table of
 * private destinations (loopback, RFC 1918, link-local, ...), including
 * the IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64,
 * 6to4), so a rule on 10/8 holds however the client wrote the address.
 * Pure functions: no allocation, no state.
 */
#ifndef PT_MODULES_COMMON_NET_H
#define PT_MODULES_COMMON_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* An address as the modules compare it: 4 or 16 bytes, network order. */
struct net_addr {
	int		 family;	/* AF_INET, AF_INET6, or 0: none */
	uint8_t		 b[16];
};

/* A network: family, prefix length and the address (no host bits). */
struct net_prefix {
	int		 family;
	unsigned	 prefix;
	uint8_t		 b[16];
};

/* 0, or -1 with *why (static text) when <s> is not a network. A bare
 * address is a host (/32, /128); host bits set are refused. */
int	 net_prefix_parse(const char *s, struct net_prefix *n, const char **why);
/* <sa> as a net_addr; an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
 * becomes its IPv4 address. family 0 for other families. */
void	 net_addr_from(const struct sockaddr *sa, struct net_addr *a);
/* The IPv4 address an IPv6 address carries (IPv4-compatible ::a.b.c.d,
 * NAT64 64:ff9b::/96, 6to4 2002::/16), in <v4>; false when none. */
bool	 net_addr_embedded_v4(const struct net_addr *a, struct net_addr *v4);
/* Whether <n> holds <a> (same family only). */
bool	 net_prefix_has(const struct net_prefix *n, const struct net_addr *a);
/* Whether <n> holds <a> or the IPv4 address <a> carries. */
bool	 net_prefix_has_any(const struct net_prefix *n, const struct net_addr *a);
/*
 * Whether <a> is a private destination; when it is, *range is the
 * special-purpose range that holds it (for an IPv6 form carrying an
 * IPv4 address, the IPv4 range that holds that address).
 */
bool	 net_addr_private(const struct net_addr *a, struct net_prefix *range);
/* Whether <inner> lies inside <outer> (same family, prefix at least as
 * long). */
bool	 net_prefix_within(const struct net_prefix *inner,
	    const struct net_prefix *outer);

#endif /* PT_MODULES_COMMON_NET_H */
