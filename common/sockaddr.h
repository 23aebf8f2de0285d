/* SPDX-License-Identifier: BSD-2-Clause */
/* Socket addresses: parse "host:port" and "[v6]:port", format, compare. */
#ifndef PT_COMMON_SOCKADDR_H
#define PT_COMMON_SOCKADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Long enough for "[ffff:...:ffff%ifname]:65535". */
#define SOCKADDR_STRLEN	72

struct pt_addr {
	struct sockaddr_storage	 sa;
	socklen_t		 len;
};

/* ---- common/sockaddr.c ----------------------------------------------- */

/*
 * Splits "host:port", "[v6]:port" or "*:port" into <host_out> (brackets
 * removed, at most <hostsz> bytes with the NUL) and <port_out> (1..65535).
 * Returns 0, or -1 with *errstr set. Pure: any process.
 */
int	sockaddr_split(const char *text, char *host_out, size_t hostsz,
	    uint16_t *port_out, const char **errstr);
/*
 * Parses a numeric address with port ("127.0.0.1:80", "[::1]:80",
 * "*:80" for every IPv4 address, "[::]:80" for every IPv6 one).
 * Returns 0, or -1 with *errstr set. Never resolves a name.
 */
int	sockaddr_parse(const char *text, struct pt_addr *out,
	    const char **errstr);
/*
 * Like sockaddr_parse() but also accepts a host name, resolved with
 * getaddrinfo() (blocking: master only), taking the first address.
 */
int	sockaddr_resolve(const char *text, struct pt_addr *out,
	    const char **errstr);
/* Writes "1.2.3.4:80" or "[::1]:80" into <buf>; returns <buf>. */
char	*sockaddr_fmt(const struct sockaddr *sa, char *buf, size_t bufsz);
bool	 sockaddr_equal(const struct pt_addr *a, const struct pt_addr *b);
uint16_t sockaddr_port(const struct sockaddr *sa);
/*
 * Copies an IPv4 or IPv6 address into <out>, an IPv4-mapped IPv6 one
 * (::ffff:10.0.0.1) as the IPv4 address it reaches, port kept: rules on
 * IPv4 addresses then hold whichever way a client wrote it. Any other
 * family is copied as it is, with its own length.
 */
void	 sockaddr_unmap(const struct sockaddr *in, struct pt_addr *out);

#endif
