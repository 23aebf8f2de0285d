/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SOCKS wire formats: SOCKS5 (RFC 1928) greeting, request and UDP header,
 * username/password sub-negotiation (RFC 1929), SOCKS4 and 4a requests.
 * Pure functions over caller-owned bytes; parsed names are slices into
 * the caller's buffer.
 */
#ifndef PT_WORKER_SOCKS_PARSE_H
#define PT_WORKER_SOCKS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "portico/module.h"
#include "common/parse.h"
#include "common/sockaddr.h"
#include "worker/host.h"


/* RFC 1928 6: reply codes, which are also what a failure becomes on the
 * wire. */
enum socks5_reply {
	SOCKS5_OK = 0x00,
	SOCKS5_FAILURE = 0x01,
	SOCKS5_NOT_ALLOWED = 0x02,
	SOCKS5_NET_UNREACH = 0x03,
	SOCKS5_HOST_UNREACH = 0x04,
	SOCKS5_REFUSED = 0x05,
	SOCKS5_TTL_EXPIRED = 0x06,
	SOCKS5_CMD_UNSUPPORTED = 0x07,
	SOCKS5_ATYP_UNSUPPORTED = 0x08,
};

enum socks5_cmd {
	SOCKS5_CMD_CONNECT = 0x01,
	SOCKS5_CMD_BIND = 0x02,
	SOCKS5_CMD_UDP = 0x03,
};

enum socks_atyp {
	SOCKS_ATYP_IPV4 = 0x01,
	SOCKS_ATYP_DOMAIN = 0x03,
	SOCKS_ATYP_IPV6 = 0x04,
};

#define SOCKS5_METHOD_NONE	0x00
#define SOCKS5_METHOD_USERPASS	0x02
#define SOCKS5_METHOD_REFUSED	0xff

/* A destination: an address (port set), or a name and a port. */
struct socks_dest {
	enum socks_atyp	 atyp;
	struct pt_addr	 addr;		/* IPV4, IPV6: with the port */
	struct pt_str	 name;		/* DOMAIN: 1..255 bytes, no NUL */
	uint16_t	 port;
};

struct socks5_greeting {
	uint8_t		 nmethods;
	const uint8_t	*methods;
	size_t		 len;		/* bytes the greeting took */
};

struct socks5_request {
	uint8_t			 cmd;
	struct socks_dest	 dest;
	size_t			 len;
	/* On PARSE_BAD: the reply to send before closing, or -1 when the
	 * bytes are not SOCKS5 at all (just close). */
	int			 reply;
};

struct socks_userpass {
	struct pt_str	 user;		/* 1..255 bytes */
	struct pt_str	 password;	/* 0..255 bytes */
	size_t		 len;
};

struct socks4_request {
	uint8_t			 cmd;		/* 1 CONNECT, 2 BIND */
	struct socks_dest	 dest;		/* IPV4, or DOMAIN for 4a */
	struct pt_str		 userid;
	size_t			 len;
};

struct socks5_udp_header {
	uint8_t			 frag;
	struct socks_dest	 dest;
	size_t			 len;		/* header bytes; data follows */
};

/* ---- worker/socks_parse.c -------------------------------------------- */

/* VER(5) NMETHODS METHODS...: PARSE_OK, PARSE_AGAIN, or PARSE_BAD (wrong
 * version, NMETHODS 0). */
int	socks5_parse_greeting(const uint8_t *buf, size_t len,
	    struct socks5_greeting *out);
/* RFC 1929: VER(1) ULEN UNAME PLEN PASSWD. ULEN 0 or a wrong version is
 * PARSE_BAD. */
int	socks5_parse_userpass(const uint8_t *buf, size_t len,
	    struct socks_userpass *out);
/*
 * VER(5) CMD RSV(0) ATYP DST.ADDR DST.PORT. PARSE_BAD with out->reply set:
 * 0x07 for an unknown command, 0x08 for an unknown address type, 0x01 for
 * a zero-length or NUL-containing name or a non-zero RSV; -1 for a wrong
 * version.
 */
int	socks5_parse_request(const uint8_t *buf, size_t len,
	    struct socks5_request *out);
/* VN(4) CD DSTPORT DSTIP USERID NUL [HOST NUL] (4a when DSTIP is 0.0.0.x,
 * x != 0). USERID and HOST at most 255 bytes each, else PARSE_BAD. */
int	socks4_parse_request(const uint8_t *buf, size_t len,
	    struct socks4_request *out);
/* RSV(0,0) FRAG ATYP DST.ADDR DST.PORT in a UDP datagram. PARSE_AGAIN is
 * never returned: a datagram is whole or bad. */
int	socks5_parse_udp(const uint8_t *buf, size_t len,
	    struct socks5_udp_header *out);
/*
 * <d> as every later step reads it (worker/host.h): a DOMAIN that is an
 * address in any form a URL allows ("127.0.0.1", "0177.1", "[::1]")
 * becomes that address (atyp IPV4 or IPV6, with the port), so it is
 * judged and dialled as one and never asked of the resolver; a name is
 * pointed at <h>'s canonical text (lower case, no final dot), which must
 * outlive the use of <d>. Returns false, <d> unchanged, for a DOMAIN that
 * is no host: the caller refuses it (SOCKS5 0x04, SOCKS4 0x5B) or drops
 * the datagram. Addresses pass as they are.
 */
bool	socks_dest_canon(struct socks_dest *d, struct host *h);
/* Writes the reply VER REP RSV ATYP BND.ADDR BND.PORT for <bound> (an
 * IPv4 or IPv6 address; NULL: 0.0.0.0:0). Returns its length (<= 22). */
size_t	socks5_fmt_reply(uint8_t *out, uint8_t rep,
	    const struct sockaddr *bound);
/* Writes a UDP header for a datagram from <from>. Returns its length
 * (<= 22). */
size_t	socks5_fmt_udp_header(uint8_t *out, const struct sockaddr *from);
/* Writes the SOCKS4 reply VN(0) CD(0x5a granted / 0x5b rejected) PORT IP.
 * Returns 8. */
size_t	socks4_fmt_reply(uint8_t *out, bool granted, uint16_t port,
	    const uint8_t ip[4]);

#endif
