/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What portico writes to a parent proxy and reads back from it, as that
 * proxy's client: the HTTP CONNECT request and its Basic credentials
 * (RFC 9110 9.3.6, RFC 7617), the SOCKS5 greeting, username/password
 * sub-negotiation and request (RFC 1928, RFC 1929), the SOCKS4 and 4a
 * request, and the replies to the binary ones. Builders write into a
 * caller-owned buffer and say how much they wrote; parsers read bytes the
 * caller owns. No I/O, no allocation, no logging, no policy: which parent,
 * which credentials and what to do with a refusal are the caller's. The
 * HTTP reply to a CONNECT is not read here: it is an HTTP response head,
 * and worker/http_parse.c already reads those.
 *
 * The server side of the same formats is worker/socks_parse.c; the codes
 * and constants come from its header so both sides name them alike.
 *
 * Reply parsers are incremental by retrying with more bytes: WIRE_MORE
 * until the whole reply is there. Bytes are judged in the order they
 * arrive, so a reply that cannot be valid is refused as soon as the byte
 * that shows it is present (a SOCKS5 reply with an unknown ATYP has no
 * length to wait for), and every prefix of a valid reply is WIRE_MORE.
 * Bytes after a reply are never read: after the last reply they are the
 * tunnel's.
 *
 * Where the documents leave a choice, this file chooses:
 *
 * - Builders refuse what the other side would misread rather than write
 *   it: a ':' in a Basic user (the parent splits at the first one), CR or
 *   LF in a credential (RFC 7617 forbids control characters; these two
 *   would end a header line if a parent decoded and logged them), a
 *   CONNECT host holding anything but the bytes of a name or an address
 *   in worker/host.h's canonical form (it is copied into the request
 *   line and Host), and extra fields with an empty line in them (the
 *   head would end there and the rest reach the target as tunnel bytes).
 * - SOCKS names are 1..255 bytes without NUL, as worker/socks_parse.c
 *   demands of its own clients. The RFC 1929 password must not be empty
 *   (RFC 1929 gives PLEN 1..255), though that parser accepts one.
 * - A SOCKS4 destination in 0.0.0.1..0.0.0.255 is refused: the server
 *   would take it for SOCKS4a and look for a name after the USERID.
 * - A SOCKS5 reply is judged whatever its REP says: a failure reply is
 *   still read whole, so the caller sees the code; a BND name may be
 *   empty (it is only information here).
 */
#include "config.h"

#include "worker/parent_wire.h"

#include <limits.h>
#include <string.h>

#include <arpa/inet.h>

#include "worker/socks_parse.h"

#define SOCKS5_VERSION		0x05
#define USERPASS_VERSION	0x01
#define SOCKS_NAME_MAX		255

#define SOCKS4_VERSION		0x04
#define SOCKS4_CMD_CONNECT	0x01
/* Bytes of a SOCKS4 request before USERID, and all of a reply. */
#define SOCKS4_FIXED		8
#define SOCKS4_GRANTED		90
#define SOCKS4_IDENT_FAILED	93

#define BASIC_PREFIX		"Proxy-Authorization: Basic "
#define BASIC_PREFIX_LEN	(sizeof(BASIC_PREFIX) - 1)
#define CONNECT_PREFIX		"CONNECT "
#define CONNECT_MIDDLE		" HTTP/1.1\r\nHost: "
#define PORT_DIGITS_MAX		5

static const char	 b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void
wire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* ---- base64 ---------------------------------------------------------- */

/* An encoder fed in pieces, so "user:password" is encoded without being
 * copied together first. The room is checked before it starts. */
struct b64 {
	char		*p;
	uint32_t	 acc;
	unsigned	 n;	/* bytes in <acc>, 0..2 */
};

/* Characters for <n> bytes, padded; (size_t)-1 when past any buffer. */
static size_t
b64_len(size_t n)
{
	if (n > SIZE_MAX / 4 * 3 - 2)
		return (size_t)-1;
	return (n + 2) / 3 * 4;
}

static void
b64_emit(struct b64 *b, unsigned nchars)
{
	unsigned	 i;

	for (i = 0; i < 4; i++)
		b->p[i] = i < nchars ?
		    b64_alphabet[b->acc >> (18 - 6 * i) & 0x3f] : '=';
	b->p += 4;
}

static void
b64_feed(struct b64 *b, const void *in, size_t len)
{
	const uint8_t	*s = in;
	size_t		 i;

	for (i = 0; i < len; i++) {
		b->acc = b->acc << 8 | s[i];
		if (++b->n == 3) {
			b64_emit(b, 4);
			b->acc = 0;
			b->n = 0;
		}
	}
}

/* Writes the last group with its padding and a NUL after it. */
static void
b64_end(struct b64 *b)
{
	if (b->n > 0) {
		b->acc <<= 8 * (3 - b->n);
		b64_emit(b, b->n + 1);
	}
	*b->p = '\0';
}

ssize_t
parent_base64(const void *in, size_t len, char *out, size_t cap)
{
	struct b64	 b = { .p = out };
	size_t		 need = b64_len(len);

	if (need >= cap || need > SSIZE_MAX) {
		if (cap > 0)
			out[0] = '\0';
		return -1;
	}
	b64_feed(&b, in, len);
	b64_end(&b);
	return (ssize_t)need;
}

/* ---- HTTP ------------------------------------------------------------ */

int
parent_basic_field(const char *user, const char *password, char *out,
    size_t cap)
{
	struct b64	 b;
	size_t		 ulen, plen, need;

	if (cap > 0)
		out[0] = '\0';
	if (user == NULL || password == NULL ||
	    strpbrk(user, ":\r\n") != NULL || strpbrk(password, "\r\n") != NULL)
		return -1;
	ulen = strlen(user);
	plen = strlen(password);
	/* Keeps every sum below from wrapping; no header is that long. */
	if (ulen > INT_MAX / 4 || plen > INT_MAX / 4)
		return -1;
	need = BASIC_PREFIX_LEN + b64_len(ulen + 1 + plen) + 2;
	if (need >= cap)
		return -1;
	memcpy(out, BASIC_PREFIX, BASIC_PREFIX_LEN);
	b.p = out + BASIC_PREFIX_LEN;
	b.acc = 0;
	b.n = 0;
	b64_feed(&b, user, ulen);
	b64_feed(&b, ":", 1);
	b64_feed(&b, password, plen);
	b64_end(&b);
	memcpy(b.p, "\r\n", 3);
	return (int)need;
}

/* Whether <c> may stand in a host that worker/host.h wrote: a name's
 * letters, digits, '-', '_' and '.', an IPv6 address's ':' (upper case
 * too, for hosts from the configuration). */
static bool
parent_is_host_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
	    c == ':';
}

/* Whether <s>[0..<n>) is zero or more non-empty lines, each ended by
 * CRLF, with no CR or LF elsewhere. */
static bool
parent_fields_ok(const char *s, size_t n)
{
	size_t	 i, line = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == '\n')
			return false;
		if (s[i] != '\r')
			continue;
		if (i == line || i + 1 == n || s[i + 1] != '\n')
			return false;
		i++;
		line = i + 1;
	}
	return line == n;
}

/* Writes <port> in decimal into <d> (PORT_DIGITS_MAX bytes, no NUL);
 * returns the digits written. */
static size_t
parent_fmt_port(char *d, uint16_t port)
{
	char	 rev[PORT_DIGITS_MAX];
	size_t	 n = 0, i;

	do {
		rev[n++] = (char)('0' + port % 10);
		port /= 10;
	} while (port > 0);
	for (i = 0; i < n; i++)
		d[i] = rev[n - 1 - i];
	return n;
}

ssize_t
parent_http_connect(char *out, size_t cap, const char *host,
    size_t hostlen, uint16_t port, const char *extra)
{
	char	 digits[PORT_DIGITS_MAX];
	size_t	 i, ndigits, alen, elen, need, pos;
	bool	 v6;

	if (host == NULL || hostlen == 0 || hostlen > cap)
		return -1;
	for (i = 0; i < hostlen; i++)
		if (!parent_is_host_byte((unsigned char)host[i]))
			return -1;
	elen = extra != NULL ? strlen(extra) : 0;
	if (elen > cap || !parent_fields_ok(extra, elen))
		return -1;
	v6 = memchr(host, ':', hostlen) != NULL;
	ndigits = parent_fmt_port(digits, port);
	alen = hostlen + (v6 ? 2 : 0) + 1 + ndigits;
	need = strlen(CONNECT_PREFIX) + alen + strlen(CONNECT_MIDDLE) + alen +
	    2 + elen + 2;
	if (need > cap || need > SSIZE_MAX)
		return -1;

	pos = strlen(CONNECT_PREFIX);
	memcpy(out, CONNECT_PREFIX, pos);
	if (v6)
		out[pos++] = '[';
	memcpy(out + pos, host, hostlen);
	pos += hostlen;
	if (v6)
		out[pos++] = ']';
	out[pos++] = ':';
	memcpy(out + pos, digits, ndigits);
	pos += ndigits;
	memcpy(out + pos, CONNECT_MIDDLE, strlen(CONNECT_MIDDLE));
	pos += strlen(CONNECT_MIDDLE);
	/* Host repeats the request line's authority (RFC 9110 7.2). */
	memcpy(out + pos, out + strlen(CONNECT_PREFIX), alen);
	pos += alen;
	memcpy(out + pos, "\r\n", 2);
	pos += 2;
	if (elen > 0)
		memcpy(out + pos, extra, elen);
	pos += elen;
	memcpy(out + pos, "\r\n", 2);
	return (ssize_t)(pos + 2);
}

/* ---- SOCKS5 ---------------------------------------------------------- */

size_t
socks5c_greeting(uint8_t out[4], bool creds)
{
	out[0] = SOCKS5_VERSION;
	/* Offering "none" beside credentials lets a parent that needs none
	 * say so; it cannot make one that wants credentials skip them. */
	out[1] = creds ? 2 : 1;
	out[2] = SOCKS5_METHOD_NONE;
	if (!creds)
		return 3;
	out[3] = SOCKS5_METHOD_USERPASS;
	return 4;
}

int
socks5c_method_reply(const uint8_t *in, size_t len, bool creds,
    uint8_t *method)
{
	if (len < 1)
		return WIRE_MORE;
	if (in[0] != SOCKS5_VERSION)
		return WIRE_BAD;
	if (len < 2)
		return WIRE_MORE;
	if (in[1] == SOCKS5_METHOD_REFUSED)
		return WIRE_REFUSED;
	/* A method we did not offer would have us speak a sub-negotiation
	 * the parent expects and we never planned: a broken parent. */
	if (in[1] != SOCKS5_METHOD_NONE &&
	    !(creds && in[1] == SOCKS5_METHOD_USERPASS))
		return WIRE_BAD;
	*method = in[1];
	return WIRE_OK;
}

ssize_t
socks5c_auth(uint8_t *out, size_t cap, const char *user, size_t ulen,
    const char *pass, size_t plen)
{
	size_t	 need;

	if (user == NULL || pass == NULL || ulen == 0 ||
	    ulen > SOCKS_NAME_MAX || plen == 0 || plen > SOCKS_NAME_MAX)
		return -1;
	need = 3 + ulen + plen;
	if (need > cap)
		return -1;
	out[0] = USERPASS_VERSION;
	out[1] = (uint8_t)ulen;
	memcpy(out + 2, user, ulen);
	out[2 + ulen] = (uint8_t)plen;
	memcpy(out + 3 + ulen, pass, plen);
	return (ssize_t)need;
}

int
socks5c_auth_reply(const uint8_t *in, size_t len)
{
	if (len < 1)
		return WIRE_MORE;
	if (in[0] != USERPASS_VERSION)
		return WIRE_BAD;
	if (len < 2)
		return WIRE_MORE;
	return in[1] == 0 ? WIRE_OK : WIRE_REFUSED;
}

/* Whether <host>[0..<n>) may be sent as a SOCKS name. */
static bool
socks_name_ok(const char *host, size_t n)
{
	return host != NULL && n > 0 && n <= SOCKS_NAME_MAX &&
	    memchr(host, '\0', n) == NULL;
}

ssize_t
socks5c_request(uint8_t *out, size_t cap, uint8_t cmd, const char *host,
    size_t hostlen, const struct sockaddr *addr, uint16_t port)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;
	const void			*dst;
	size_t				 dstlen, need;
	uint8_t				 atyp;

	if (cmd != SOCKS5_CMD_CONNECT && cmd != SOCKS5_CMD_UDP)
		return -1;
	if (addr != NULL && addr->sa_family == AF_INET) {
		sin = (const struct sockaddr_in *)(const void *)addr;
		atyp = SOCKS_ATYP_IPV4;
		dst = &sin->sin_addr;
		dstlen = 4;
	} else if (addr != NULL && addr->sa_family == AF_INET6) {
		sin6 = (const struct sockaddr_in6 *)(const void *)addr;
		/* A mapped address names an IPv4 host; a parent without
		 * IPv6 may not take ATYP 4 at all. */
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			atyp = SOCKS_ATYP_IPV4;
			dst = &sin6->sin6_addr.s6_addr[12];
			dstlen = 4;
		} else {
			atyp = SOCKS_ATYP_IPV6;
			dst = &sin6->sin6_addr;
			dstlen = 16;
		}
	} else if (addr != NULL || !socks_name_ok(host, hostlen)) {
		return -1;
	} else {
		atyp = SOCKS_ATYP_DOMAIN;
		dst = host;
		dstlen = hostlen;
	}
	need = 4 + (atyp == SOCKS_ATYP_DOMAIN) + dstlen + 2;
	if (need > cap)
		return -1;
	out[0] = SOCKS5_VERSION;
	out[1] = cmd;
	out[2] = 0;
	out[3] = atyp;
	if (atyp == SOCKS_ATYP_DOMAIN)
		out[4] = (uint8_t)hostlen;
	memcpy(out + need - 2 - dstlen, dst, dstlen);
	wire_put16(out + need - 2, port);
	return (ssize_t)need;
}

ssize_t
socks5c_udp_header(uint8_t *out, size_t cap, const char *host,
    size_t hostlen, const struct sockaddr *addr, uint16_t port)
{
	ssize_t	 n;

	/* A request and a UDP header differ in their first three bytes
	 * only (VER CMD RSV against RSV RSV FRAG): one writer for both. */
	n = socks5c_request(out, cap, SOCKS5_CMD_UDP, host, hostlen, addr,
	    port);
	if (n < 0)
		return -1;
	memset(out, 0, 3);
	return n;
}

/* Fills the caller's optional outputs of socks5c_reply. */
static void
socks5c_set_bound(struct sockaddr_storage *bound, const uint8_t **name,
    size_t *namelen, const uint8_t *in, size_t need)
{
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;
	uint16_t		 nport;

	/* The port as it came, in network order: what sin_port holds. */
	memcpy(&nport, in + need - 2, 2);
	switch (in[3]) {
	case SOCKS_ATYP_IPV4:
		if (bound == NULL)
			break;
		sin = (struct sockaddr_in *)(void *)bound;
		sin->sin_family = AF_INET;
		sin->sin_port = nport;
		memcpy(&sin->sin_addr, in + 4, 4);
		break;
	case SOCKS_ATYP_IPV6:
		if (bound == NULL)
			break;
		sin6 = (struct sockaddr_in6 *)(void *)bound;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = nport;
		memcpy(&sin6->sin6_addr, in + 4, 16);
		break;
	default:
		if (name != NULL)
			*name = in + 5;
		if (namelen != NULL)
			*namelen = in[4];
		break;
	}
}

int
socks5c_reply(const uint8_t *in, size_t len, uint8_t *rep,
    struct sockaddr_storage *bound, const uint8_t **bound_name,
    size_t *bound_namelen, size_t *consumed)
{
	size_t	 need;

	*rep = 0;
	*consumed = 0;
	if (bound != NULL)
		memset(bound, 0, sizeof(*bound));
	if (bound_name != NULL)
		*bound_name = NULL;
	if (bound_namelen != NULL)
		*bound_namelen = 0;

	if (len < 1)
		return WIRE_MORE;
	if (in[0] != SOCKS5_VERSION)
		return WIRE_BAD;
	if (len < 3)
		return WIRE_MORE;
	if (in[2] != 0)
		return WIRE_BAD;
	if (len < 4)
		return WIRE_MORE;
	switch (in[3]) {
	case SOCKS_ATYP_IPV4:
		need = 4 + 4 + 2;
		break;
	case SOCKS_ATYP_IPV6:
		need = 4 + 16 + 2;
		break;
	case SOCKS_ATYP_DOMAIN:
		if (len < 5)
			return WIRE_MORE;
		need = 4 + 1 + (size_t)in[4] + 2;
		break;
	default:
		return WIRE_BAD;
	}
	if (len < need)
		return WIRE_MORE;
	socks5c_set_bound(bound, bound_name, bound_namelen, in, need);
	*rep = in[1];
	*consumed = need;
	return WIRE_OK;
}

int
socks5c_rep_http_status(uint8_t rep)
{
	/*
	 * The parent answered, so portico was a working gateway that got a
	 * bad answer upstream: 502 for every refusal, not-allowed (0x02)
	 * and refused (0x05) included, since a 403 would say portico's own
	 * policy refused the client. Only an expired TTL is the timeout
	 * 504 means.
	 */
	if (rep == SOCKS5_TTL_EXPIRED)
		return 504;
	return 502;
}

/* ---- SOCKS4 ---------------------------------------------------------- */

ssize_t
socks4c_request(uint8_t *out, size_t cap, const char *host, size_t hostlen,
    const struct sockaddr_in *addr, uint16_t port, const char *userid)
{
	uint32_t	 ip;
	size_t		 ulen, need;

	ulen = userid != NULL ? strlen(userid) : 0;
	if (ulen > SOCKS_NAME_MAX)
		return -1;
	need = SOCKS4_FIXED + ulen + 1;
	if (addr != NULL) {
		if (addr->sin_family != AF_INET)
			return -1;
		ip = ntohl(addr->sin_addr.s_addr);
		if (ip > 0 && ip <= 0xff)
			return -1;
	} else {
		if (!socks_name_ok(host, hostlen))
			return -1;
		need += hostlen + 1;
	}
	if (need > cap)
		return -1;

	out[0] = SOCKS4_VERSION;
	out[1] = SOCKS4_CMD_CONNECT;
	wire_put16(out + 2, port);
	if (addr != NULL)
		memcpy(out + 4, &addr->sin_addr, 4);
	else
		memcpy(out + 4, "\0\0\0\1", 4);
	if (ulen > 0)
		memcpy(out + SOCKS4_FIXED, userid, ulen);
	out[SOCKS4_FIXED + ulen] = '\0';
	if (addr == NULL) {
		memcpy(out + SOCKS4_FIXED + ulen + 1, host, hostlen);
		out[need - 1] = '\0';
	}
	return (ssize_t)need;
}

int
socks4c_reply(const uint8_t *in, size_t len, uint8_t *code)
{
	*code = 0;
	if (len < 1)
		return WIRE_MORE;
	/* The protocol has the reply's VN be 0, but servers that build the
	 * reply from the request's bytes send back its 4. The byte says
	 * nothing the client needs (CD does), so both are taken: refusing 4
	 * would only lose such a parent. */
	if (in[0] != 0 && in[0] != SOCKS4_VERSION)
		return WIRE_BAD;
	if (len < 2)
		return WIRE_MORE;
	if (in[1] < SOCKS4_GRANTED || in[1] > SOCKS4_IDENT_FAILED)
		return WIRE_BAD;
	if (len < SOCKS4_FIXED)
		return WIRE_MORE;
	*code = in[1];
	return in[1] == SOCKS4_GRANTED ? WIRE_OK : WIRE_REFUSED;
}
