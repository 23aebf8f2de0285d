/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SOCKS wire formats: the SOCKS5 greeting, request, reply and UDP header
 * (RFC 1928), the username/password sub-negotiation (RFC 1929), and the
 * SOCKS4 and 4a request and reply. It reads bytes the caller owns and
 * fills caller-owned structs: no I/O, no allocation, no logging, no policy
 * (which commands, methods, users or destinations are allowed is the
 * caller's).
 *
 * Stream parsers are incremental by retrying with more bytes: PARSE_AGAIN
 * until the whole message is there, then PARSE_OK with len = the bytes it
 * took; whatever follows belongs to the next message and is never read.
 * Bytes are checked in the order they arrive, so a fault is reported as
 * soon as the byte that shows it is present, and every prefix of a bad
 * message gives PARSE_AGAIN or the very same PARSE_BAD (and reply). The
 * struct is cleared on every call, so after PARSE_OK a request's reply is
 * SOCKS5_OK and an unused dest.addr has len 0.
 *
 * Where the documents leave a choice, this file chooses:
 *
 * - A SOCKS5 request is judged byte by byte: VER (-1), then CMD (0x07 as
 *   soon as it is read, without waiting for the rest of the header), then
 *   RSV (0x01; RFC 1928 only says "reserved", but a non-zero value means a
 *   client we do not understand), then ATYP (0x08), then the name (0x01).
 *   A request wrong in two places gets the reply for the earlier byte.
 * - A DOMAINNAME must have 1..255 bytes and no NUL, because the name ends
 *   up as a C string for the resolver and in logs, where a NUL would cut
 *   it. Other bytes are left to the resolver and the ACL.
 * - RFC 1929 gives PLEN as 1..255, but clients send an empty password for
 *   accounts without one, so PLEN 0 is accepted (the AUTH hook decides).
 *   ULEN 0 is refused: there is no one to authenticate.
 * - SOCKS4 CD is not checked (the caller answers 0x5b to anything it does
 *   not serve). DSTIP 0.0.0.0 is plain SOCKS4 to that address; 0.0.0.x
 *   with x != 0 is 4a. USERID and the 4a host are bounded at 255 bytes
 *   (the documents set no bound; an unbounded NUL hunt would let a client
 *   hold a buffer forever) and the host must not be empty.
 * - A UDP header never gives PARSE_AGAIN: a datagram is all there is. It
 *   follows the request's rules for ATYP and names. FRAG is returned as
 *   read; the caller drops fragments.
 * - The formatters write ATYP 1 for AF_INET and 4 for AF_INET6 as given
 *   (a v4-mapped IPv6 address stays IPv6); a NULL address or one of any
 *   other family is written as 0.0.0.0:0. socks4_fmt_reply takes the port
 *   in host order and a NULL <ip> as 0.0.0.0.
 */
#include "config.h"

#include "worker/socks_parse.h"

#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#define SOCKS5_VERSION		0x05
#define SOCKS4_VERSION		0x04
#define USERPASS_VERSION	0x01
#define SOCKS4_REPLY_VERSION	0x00
#define SOCKS4_GRANTED		0x5a
#define SOCKS4_REJECTED		0x5b
#define SOCKS4_FIELD_MAX	255

/* Bytes of a SOCKS4 request before USERID: VN CD DSTPORT(2) DSTIP(4). */
#define SOCKS4_FIXED		8

static uint16_t
socks_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
socks_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
socks_addr_set_v4(struct pt_addr *a, const uint8_t ip[4], uint16_t port)
{
	struct sockaddr_in	*sin;

	sin = (struct sockaddr_in *)(void *)&a->sa;
	memset(a, 0, sizeof(*a));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	memcpy(&sin->sin_addr, ip, 4);
	a->len = sizeof(*sin);
}

static void
socks_addr_set_v6(struct pt_addr *a, const uint8_t ip[16], uint16_t port)
{
	struct sockaddr_in6	*sin6;

	sin6 = (struct sockaddr_in6 *)(void *)&a->sa;
	memset(a, 0, sizeof(*a));
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	memcpy(&sin6->sin6_addr, ip, 16);
	a->len = sizeof(*sin6);
}

/*
 * ATYP DST.ADDR DST.PORT at <p>, <avail> bytes of it present, into <dest>.
 * PARSE_OK with *used_out set; PARSE_AGAIN; PARSE_BAD with *reply_out
 * 0x08 (unknown ATYP) or 0x01 (empty name, NUL in the name), as soon as
 * the bytes present show it.
 */
static int
socks_parse_dest(const uint8_t *p, size_t avail, struct socks_dest *dest,
    size_t *used_out, int *reply_out)
{
	size_t	 need, n;

	if (avail < 1)
		return PARSE_AGAIN;
	switch (p[0]) {
	case SOCKS_ATYP_IPV4:
		need = 1 + 4 + 2;
		break;
	case SOCKS_ATYP_IPV6:
		need = 1 + 16 + 2;
		break;
	case SOCKS_ATYP_DOMAIN:
		if (avail < 2)
			return PARSE_AGAIN;
		n = p[1];
		if (n == 0) {
			*reply_out = SOCKS5_FAILURE;
			return PARSE_BAD;
		}
		/* Look at the part of the name already here, so a NUL is
		 * reported as early as it shows. */
		if (memchr(p + 2, '\0', avail - 2 < n ? avail - 2 : n) !=
		    NULL) {
			*reply_out = SOCKS5_FAILURE;
			return PARSE_BAD;
		}
		need = 1 + 1 + n + 2;
		break;
	default:
		*reply_out = SOCKS5_ATYP_UNSUPPORTED;
		return PARSE_BAD;
	}
	if (avail < need)
		return PARSE_AGAIN;

	dest->atyp = (enum socks_atyp)p[0];
	dest->port = socks_get16(p + need - 2);
	switch (p[0]) {
	case SOCKS_ATYP_IPV4:
		socks_addr_set_v4(&dest->addr, p + 1, dest->port);
		break;
	case SOCKS_ATYP_IPV6:
		socks_addr_set_v6(&dest->addr, p + 1, dest->port);
		break;
	default:
		dest->name.ptr = (const char *)(p + 2);
		dest->name.len = p[1];
		break;
	}
	*used_out = need;
	return PARSE_OK;
}

bool
socks_dest_canon(struct socks_dest *d, struct host *h)
{
	if (d->atyp != SOCKS_ATYP_DOMAIN)
		return true;
	switch (host_parse(d->name.ptr, d->name.len, h)) {
	case HOST_NAME:
		d->name.ptr = h->text;
		d->name.len = h->len;
		return true;
	case HOST_IPV4:
		d->atyp = SOCKS_ATYP_IPV4;
		socks_addr_set_v4(&d->addr, (const uint8_t *)&((const struct
		    sockaddr_in *)(const void *)&h->addr.sa)->sin_addr,
		    d->port);
		return true;
	case HOST_IPV6:
		d->atyp = SOCKS_ATYP_IPV6;
		socks_addr_set_v6(&d->addr, (const uint8_t *)&((const struct
		    sockaddr_in6 *)(const void *)&h->addr.sa)->sin6_addr,
		    d->port);
		return true;
	default:
		return false;
	}
}

int
socks5_parse_greeting(const uint8_t *buf, size_t len,
    struct socks5_greeting *out)
{
	memset(out, 0, sizeof(*out));
	if (len < 1)
		return PARSE_AGAIN;
	if (buf[0] != SOCKS5_VERSION)
		return PARSE_BAD;
	if (len < 2)
		return PARSE_AGAIN;
	/* RFC 1928 3 gives METHODS 1 to 255 octets: a client offering none
	 * could only be answered 0xff. */
	if (buf[1] == 0)
		return PARSE_BAD;
	if (len < 2 + (size_t)buf[1])
		return PARSE_AGAIN;
	out->nmethods = buf[1];
	out->methods = buf + 2;
	out->len = 2 + (size_t)buf[1];
	return PARSE_OK;
}

int
socks5_parse_userpass(const uint8_t *buf, size_t len,
    struct socks_userpass *out)
{
	size_t	 ulen, plen;

	memset(out, 0, sizeof(*out));
	if (len < 1)
		return PARSE_AGAIN;
	if (buf[0] != USERPASS_VERSION)
		return PARSE_BAD;
	if (len < 2)
		return PARSE_AGAIN;
	ulen = buf[1];
	if (ulen == 0)
		return PARSE_BAD;
	if (len < 2 + ulen + 1)
		return PARSE_AGAIN;
	plen = buf[2 + ulen];
	if (len < 2 + ulen + 1 + plen)
		return PARSE_AGAIN;
	out->user.ptr = (const char *)(buf + 2);
	out->user.len = ulen;
	out->password.ptr = (const char *)(buf + 2 + ulen + 1);
	out->password.len = plen;
	out->len = 2 + ulen + 1 + plen;
	return PARSE_OK;
}

int
socks5_parse_request(const uint8_t *buf, size_t len,
    struct socks5_request *out)
{
	size_t	 used;
	int	 rc;

	memset(out, 0, sizeof(*out));
	if (len < 1)
		return PARSE_AGAIN;
	if (buf[0] != SOCKS5_VERSION) {
		out->reply = -1;
		return PARSE_BAD;
	}
	if (len < 2)
		return PARSE_AGAIN;
	if (buf[1] != SOCKS5_CMD_CONNECT && buf[1] != SOCKS5_CMD_BIND &&
	    buf[1] != SOCKS5_CMD_UDP) {
		out->reply = SOCKS5_CMD_UNSUPPORTED;
		return PARSE_BAD;
	}
	if (len < 3)
		return PARSE_AGAIN;
	if (buf[2] != 0) {
		out->reply = SOCKS5_FAILURE;
		return PARSE_BAD;
	}
	rc = socks_parse_dest(buf + 3, len - 3, &out->dest, &used, &out->reply);
	if (rc != PARSE_OK)
		return rc;
	out->cmd = buf[1];
	out->len = 3 + used;
	return PARSE_OK;
}

/*
 * A NUL-terminated field of at most SOCKS4_FIELD_MAX bytes at <p>, <avail>
 * bytes present. PARSE_OK with *n_out = its length without the NUL;
 * PARSE_AGAIN; PARSE_BAD once SOCKS4_FIELD_MAX + 1 bytes hold no NUL.
 */
static int
socks4_parse_field(const uint8_t *p, size_t avail, size_t *n_out)
{
	const uint8_t	*nul;
	size_t		 look = avail < SOCKS4_FIELD_MAX + 1 ? avail :
			    SOCKS4_FIELD_MAX + 1;

	if ((nul = memchr(p, '\0', look)) != NULL) {
		*n_out = (size_t)(nul - p);
		return PARSE_OK;
	}
	return look == SOCKS4_FIELD_MAX + 1 ? PARSE_BAD : PARSE_AGAIN;
}

int
socks4_parse_request(const uint8_t *buf, size_t len,
    struct socks4_request *out)
{
	size_t		 off, ulen, n;
	uint16_t	 port;
	int		 rc;

	memset(out, 0, sizeof(*out));
	if (len < 1)
		return PARSE_AGAIN;
	if (buf[0] != SOCKS4_VERSION)
		return PARSE_BAD;
	if (len < SOCKS4_FIXED)
		return PARSE_AGAIN;
	if ((rc = socks4_parse_field(buf + SOCKS4_FIXED, len - SOCKS4_FIXED,
	    &ulen)) != PARSE_OK)
		return rc;
	off = SOCKS4_FIXED + ulen + 1;
	port = socks_get16(buf + 2);

	if (buf[4] != 0 || buf[5] != 0 || buf[6] != 0 || buf[7] == 0) {
		out->dest.atyp = SOCKS_ATYP_IPV4;
		socks_addr_set_v4(&out->dest.addr, buf + 4, port);
	} else {
		if ((rc = socks4_parse_field(buf + off, len - off, &n)) !=
		    PARSE_OK)
			return rc;
		if (n == 0)
			return PARSE_BAD;
		out->dest.atyp = SOCKS_ATYP_DOMAIN;
		out->dest.name.ptr = (const char *)(buf + off);
		out->dest.name.len = n;
		off += n + 1;
	}
	out->dest.port = port;
	out->cmd = buf[1];
	out->userid.ptr = (const char *)(buf + SOCKS4_FIXED);
	out->userid.len = ulen;
	out->len = off;
	return PARSE_OK;
}

int
socks5_parse_udp(const uint8_t *buf, size_t len,
    struct socks5_udp_header *out)
{
	size_t	 used;
	int	 reply;

	memset(out, 0, sizeof(*out));
	if (len < 3 || buf[0] != 0 || buf[1] != 0)
		return PARSE_BAD;
	/* A short datagram will never grow, so AGAIN means BAD here. */
	if (socks_parse_dest(buf + 3, len - 3, &out->dest, &used, &reply) !=
	    PARSE_OK)
		return PARSE_BAD;
	out->frag = buf[2];
	out->len = 3 + used;
	return PARSE_OK;
}

/* ATYP BND.ADDR BND.PORT for <sa> at <p>; returns the bytes written. */
static size_t
socks_fmt_dest(uint8_t *p, const struct sockaddr *sa)
{
	if (sa != NULL && sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		p[0] = SOCKS_ATYP_IPV4;
		memcpy(p + 1, &sin->sin_addr, 4);
		memcpy(p + 5, &sin->sin_port, 2);
		return 1 + 4 + 2;
	}
	if (sa != NULL && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		/* An IPv4 peer of a dual-stack socket is named as IPv4: an
		 * IPv4-only client may not read ATYP 4. */
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			p[0] = SOCKS_ATYP_IPV4;
			memcpy(p + 1, &sin6->sin6_addr.s6_addr[12], 4);
			memcpy(p + 5, &sin6->sin6_port, 2);
			return 1 + 4 + 2;
		}
		p[0] = SOCKS_ATYP_IPV6;
		memcpy(p + 1, &sin6->sin6_addr, 16);
		memcpy(p + 17, &sin6->sin6_port, 2);
		return 1 + 16 + 2;
	}
	/* Clients read BND.ADDR to know where to connect back; 0.0.0.0:0
	 * tells them there is nothing to use, which RFC 1928 clients accept
	 * for CONNECT. */
	p[0] = SOCKS_ATYP_IPV4;
	memset(p + 1, 0, 4 + 2);
	return 1 + 4 + 2;
}

size_t
socks5_fmt_reply(uint8_t *out, uint8_t rep, const struct sockaddr *bound)
{
	out[0] = SOCKS5_VERSION;
	out[1] = rep;
	out[2] = 0;
	return 3 + socks_fmt_dest(out + 3, bound);
}

size_t
socks5_fmt_udp_header(uint8_t *out, const struct sockaddr *from)
{
	/* RSV RSV FRAG: we never fragment. */
	out[0] = 0;
	out[1] = 0;
	out[2] = 0;
	return 3 + socks_fmt_dest(out + 3, from);
}

size_t
socks4_fmt_reply(uint8_t *out, bool granted, uint16_t port,
    const uint8_t ip[4])
{
	out[0] = SOCKS4_REPLY_VERSION;
	out[1] = granted ? SOCKS4_GRANTED : SOCKS4_REJECTED;
	socks_put16(out + 2, port);
	if (ip != NULL)
		memcpy(out + 4, ip, 4);
	else
		memset(out + 4, 0, 4);
	return 8;
}
