/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a destination host may be, decided once for every protocol. The
 * host a client names (an HTTP absolute URI or CONNECT authority, a
 * SOCKS5, SOCKS4a or SOCKS5 UDP domain) is read here into the one form
 * that every later step uses: the modules (the ACL judges it), the
 * resolver (asked exactly that) and the access log (writes it).
 */
#ifndef PT_WORKER_HOST_H
#define PT_WORKER_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include "common/sockaddr.h"

/* The longest name in text: 253 bytes (RFC 1035 2.3.4, without the final
 * dot) and a NUL. An address in text is shorter. */
#define HOST_TEXT_MAX	254
#define HOST_LABEL_MAX	63

enum host_kind {
	HOST_BAD = 0,		/* no host: refuse it */
	HOST_NAME,		/* a DNS name, to resolve */
	HOST_IPV4,		/* an address, in any form a URL allows */
	HOST_IPV6,
};

/* A host as every step reads it. */
struct host {
	enum host_kind	 kind;
	/* The canonical text: a name in lower case without a final dot;
	 * an address as inet_ntop writes it (dotted decimal, RFC 5952). */
	char		 text[HOST_TEXT_MAX];
	size_t		 len;
	struct pt_addr	 addr;		/* IPV4, IPV6: port 0 */
};

/* ---- worker/host.c --------------------------------------------------- */

/*
 * Reads <len> bytes at <in> (not a C string; a NUL is just a bad byte)
 * into <out>. Rules, in order:
 *  - "[...]", or anything with a ':', is an IPv6 address (inet_pton; no
 *    zone) or bad;
 *  - one final dot is dropped;
 *  - a host whose last label is a number (digits, or "0x" and hex
 *    digits) is an IPv4 address read as the WHATWG URL standard reads
 *    one (octal "0177", hex "0x7f", fewer than four parts: "127.1",
 *    "2130706433"), or bad: never a name, never read as decimal;
 *  - anything else is a name: labels of 1..63 letters, digits, '-' and
 *    '_', 253 bytes in all. A byte outside those (a backslash, which
 *    c-ares reads as an escape, '%', a space, UTF-8: clients send IDNA
 *    A-labels) makes it bad.
 * Returns out->kind. Any process; pure.
 */
enum host_kind	 host_parse(const char *in, size_t len, struct host *out);
/* Whether <c> may stand in a label of a canonical name (lower case). */
bool		 host_is_name_byte(unsigned char c);

#endif
