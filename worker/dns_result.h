/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The addresses a name resolves to, in the order to try them: what the
 * resolver (dns.c) answers and the hosts table (dns_hosts.c) fills in.
 * A header of its own so that the hosts table, which the resolver calls,
 * need not include the resolver's header.
 */
#ifndef PT_WORKER_DNS_RESULT_H
#define PT_WORKER_DNS_RESULT_H

#include "common/sockaddr.h"

#define DNS_MAX_ADDRS	8

struct dns_result {
	int		 naddrs;
	/* In the order to try them: IPv6 and IPv4 interleaved, the family
	 * the resolver returned first leading (RFC 8305 6). Ports are 0. */
	struct pt_addr	 addrs[DNS_MAX_ADDRS];
};

#endif
