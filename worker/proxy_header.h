/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The PROXY protocol header (HAProxy's doc/proxy-protocol.txt), versions 1
 * and 2, as a balancer sends it before the client's first byte: a pure
 * parser over the bytes received so far, no I/O, no allocation. Whether a
 * header is expected comes from the listener's configuration, never from
 * these bytes (worker/proxy_read.c reads it).
 */
#ifndef PT_WORKER_PROXY_HEADER_H
#define PT_WORKER_PROXY_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>
#include <sys/types.h>

#include "portico/module.h"

/* v1: "PROXY ... \r\n" is at most 107 bytes, CRLF included. */
#define PROXY_V1_MAX		107
/* v2: the 16-byte fixed part and its length field's bytes, at most this
 * many in all: addresses and the TLVs a balancer sends (AUTHORITY,
 * UNIQUE_ID, SSL, CRC32C, a cloud's endpoint id) fit with room to spare;
 * a longer header is refused as too long. */
#define PROXY_V2_MAX		2048
/* The most bytes a header may take, either version. */
#define PROXY_HEADER_MAX	PROXY_V2_MAX

/* Why a header was refused: proxy_header_parse's negative returns, and
 * the reasons /metrics counts (proxy_protocol_refused_total). */
enum proxy_refusal {
	PROXY_REFUSED_SIGNATURE = 1,	/* neither "PROXY " nor v2's 12 bytes */
	PROXY_REFUSED_MALFORMED,	/* a field, the version, the command,
					 * the family or a TLV is wrong, or a
					 * lone CR or LF in a v1 line */
	PROXY_REFUSED_TOO_LONG,		/* v1 past 107 bytes, v2 past
					 * PROXY_V2_MAX */
	PROXY_REFUSED_CRC,		/* a v2 CRC32C TLV does not match */
	/* Not the parser's: worker/proxy_read.c's. */
	PROXY_REFUSED_SOURCE,		/* the connection is not from `from` */
	PROXY_REFUSED_TIMEOUT,		/* no whole header in header_timeout */
	PROXY_REFUSED_CLOSED,		/* EOF or an error before it ended */
	PROXY_REFUSED_COUNT
};

struct proxy_header {
	uint8_t			 version;	/* 1 or 2 */
	/* The endpoints to use are the connection's own: v1 UNKNOWN, v2
	 * LOCAL, or v2 PROXY of family UNSPEC or AF_UNIX. src and dst are
	 * then AF_UNSPEC. */
	bool			 local;
	/* The client's address and port, and the address it connected to
	 * (the balancer's frontend), when !local: AF_INET or AF_INET6. */
	struct sockaddr_storage	 src;
	struct sockaddr_storage	 dst;
	/* v2 TLVs PP2_TYPE_AUTHORITY (0x02) and PP2_TYPE_UNIQUE_ID (0x05),
	 * pointing into the parsed bytes, or empty. Other TLVs are skipped;
	 * PP2_TYPE_CRC32C (0x03) is verified. */
	struct pt_str		 authority;
	struct pt_str		 unique_id;
};

/*
 * Parses the header at the start of buf[0..len). Returns the header's
 * length (> 0) with *h filled when the bytes hold a whole valid header;
 * 0 when they are a prefix of one (wait for more: every prefix of a valid
 * header returns 0, never an error); -enum proxy_refusal when no byte
 * that may follow can make a valid header of them. Bytes after the
 * header are not looked at.
 */
int		 proxy_header_parse(const uint8_t *buf, size_t len,
		    struct proxy_header *h);
/* The reason's name for /metrics and the error log ("malformed");
 * "unknown" for a value outside the enum. */
const char	*proxy_refusal_name(enum proxy_refusal r);
/* CRC32C (Castagnoli) of buf[0..len), continuing from <crc> (0 first).
 * The result is the finished checksum (inverted, as RFC 3720 has it):
 * passing it back as <crc> with the next bytes gives the checksum of both
 * runs as one; CRC32C("123456789") is 0xe3069283. Pure: any process. */
uint32_t	 proxy_crc32c(uint32_t crc, const uint8_t *buf, size_t len);

/* The longest header proxy_header_build writes (a v1 TCP6 line). */
#define PROXY_HEADER_OUT_MAX	PROXY_V1_MAX
/*
 * Writes a PROXY header of <version> (1 or 2) naming <src> (the client)
 * and <dst> (where it connected) into <out>: TCP4 when both are IPv4
 * (IPv4-mapped IPv6 counts), TCP6 when both are IPv6, else UNKNOWN (v1)
 * or (v2) AF_UNSPEC with the PROXY command and no addresses.
 * Returns its length, or -1 when <cap> is short. A parent proxy is told
 * who the client is this way (worker/parent_dial.c).
 */
ssize_t		 proxy_header_build(uint8_t *out, size_t cap, int version,
		    const struct sockaddr *src, const struct sockaddr *dst);

#endif
