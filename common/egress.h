/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Egress: the local address an outgoing connection leaves from. One
 * parser for the `egress` and `egress_stable` keys of a listener
 * (master/conf.c) and of a module's group (pt_egress_conf: the acl
 * module's rules), and the pick of an address for one connection. Pure
 * but for the key the master draws and the random picks: the worker's
 * side (binding a socket, which egress applies) is worker/outbound.c.
 */
#ifndef PT_COMMON_EGRESS_H
#define PT_COMMON_EGRESS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <libconfig.h>

#include "portico/module.h"

/* An IPv4 or IPv6 address with port 0, or none (sa_family 0: the
 * kernel's choice). Small enough for every connection to hold one. */
union egress_addr {
	struct sockaddr		 sa;
	struct sockaddr_in	 v4;
	struct sockaddr_in6	 v6;
};

/* egress_stable: how an address inside a prefix is picked. */
enum egress_stable {
	EGRESS_RANDOM = 0,	/* a new random one per connection */
	EGRESS_BY_USER,		/* the user's (the source's without one) */
	EGRESS_BY_SOURCE,	/* the client address's */
};

/* "192.0.2.1,2001:db8:1::/128" and the like fit. */
#define EGRESS_TEXT_MAX		64

/* Bits of egress_families(). */
#define EGRESS_FAM_V4		0x1u
#define EGRESS_FAM_V6		0x2u

/*
 * One configured egress, read-only once parsed (the master owns it;
 * workers read the copy they forked with). Invariants: <same> excludes
 * the rest; at most one IPv4 address (v4) and one IPv6 source (v6, or
 * the prefix when plen > 0, its host bits zero); stable is
 * EGRESS_RANDOM unless plen > 0.
 */
struct pt_egress {
	bool			 same;	/* the client leg's local address */
	union egress_addr	 v4;
	union egress_addr	 v6;
	struct in6_addr		 prefix;
	unsigned		 plen;	/* 1..128; 0: no prefix */
	enum egress_stable	 stable;
	/* As written, canonical: "same", "192.0.2.1", "2001:db8:1::/64",
	 * "192.0.2.1,2001:db8::1": for logs and the metrics' label. */
	char			 text[EGRESS_TEXT_MAX + 1];
	/* Counters egress_connects and egress_failures {egress=text}
	 * (egress_register), or -1. */
	int			 ctr_connects, ctr_failures;
};

/* What a pick needs to know of the transaction. */
struct egress_ctx {
	const struct sockaddr	*local;	/* same: our end of the client leg */
	const struct sockaddr	*peer;	/* the client (BY_SOURCE) */
	const char		*user;	/* BY_USER; NULL or empty: none */
	size_t			 user_len;
};

/* The keys a group with an egress may hold: "egress", "egress_stable". */
extern const char *const egress_keys[];

/* ---- common/egress.c ------------------------------------------------- */

/*
 * Reads the `egress` and `egress_stable` members of <group> into a new
 * egress owned by the caller (egress_free), or NULL in *out when the
 * group has no `egress`. 0, or -1 with the message in <err> (without
 * the key: the caller's report names the setting) and the member at
 * fault in *where. Master: an egress_stable draws the key once
 * (getrandom), kept for the master's life, so reloads keep addresses.
 */
int	 egress_parse(const config_setting_t *group, struct pt_egress **out,
	    const config_setting_t **where, char *err, size_t errsz);
void	 egress_free(struct pt_egress *e);
/* Registers <e>'s counters (egress_connects, egress_failures, labelled
 * with its text). Master, after egress_parse. */
void	 egress_register(struct pt_egress *e);
/* Tests: the key stable picks hash with, instead of a drawn one. */
void	 egress_key_set(uint64_t k0, uint64_t k1);
/* Draws this process's key for random picks (getrandom): each worker
 * after its fork. 0, or -1 (a pick then draws it itself). */
int	 egress_random_seed(void);
/* EGRESS_FAM_* of the families <e> can leave from; for "same", the
 * family of <local> (an IPv4-mapped address counts as IPv4). */
unsigned egress_families(const struct pt_egress *e,
	    const struct sockaddr *local);
/*
 * The address a connection of <family> leaves from, port 0, into <out>.
 * 0, or -EAFNOSUPPORT when <e> has none of that family. A prefix gives
 * a random address per call, or with egress_stable the same one for the
 * same user or source (SipHash-2-4 under the master's key), never the
 * all-zero host part (the subnet-router anycast address) except for a
 * /128. Worker (random picks use arc4random_buf).
 */
int	 egress_pick(const struct pt_egress *e, int family,
	    const struct egress_ctx *ctx, union egress_addr *out);
/* Same family and address (ports ignored); two "none" are equal. */
bool	 egress_addr_equal(const union egress_addr *a,
	    const union egress_addr *b);
/* <sa> as a union egress_addr, an IPv4-mapped IPv6 address as IPv4,
 * port 0 (any other family: none). */
void	 egress_addr_from(const struct sockaddr *sa, union egress_addr *out);
/* The address in text, without port ("none" for none); <buf>. */
char	*egress_addr_fmt(const union egress_addr *a, char *buf, size_t size);

#endif
