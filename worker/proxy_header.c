/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The PROXY protocol header, versions 1 (a text line) and 2 (binary), as
 * HAProxy's doc/proxy-protocol.txt defines them: a pure parser over the
 * bytes a balancer sent first. It reads bytes the caller owns and fills a
 * caller-owned struct: no I/O, no allocation, no logging, no policy
 * (whether a header is expected, from whom and how long to wait for it is
 * worker/proxy_read.c's).
 *
 * The parser is incremental by retrying with more bytes: 0 until a whole
 * header is there, then its length; the bytes after it belong to the
 * client and are never read. Every prefix of a valid header gives 0, and
 * a refusal, once given, is given again for any longer input, so the
 * caller may refuse as soon as it sees one. The struct is cleared on every
 * call and filled only when a whole header was accepted.
 *
 * Where the document leaves a choice, this file chooses:
 *
 * - v1 is judged when its CRLF has arrived, as the document asks; before
 *   that only a byte no valid line can hold at its place is refused
 *   early: the protocol word must be a prefix of "TCP4 ", "TCP6 " or
 *   "UNKNOWN", and a TCP4 line holds only digits, dots and spaces, a TCP6
 *   line hex digits, colons, dots and spaces. A client that is not a
 *   balancer is thus turned away at once rather than at the timeout.
 * - v1 IPv4 addresses are four decimal numbers without leading zeros
 *   ("01.2.3.4" is refused: the document forbids heading zeroes lest
 *   they be read as octal), checked here and not left to the libc's
 *   inet_pton. IPv6 addresses are what inet_pton(AF_INET6) takes, the
 *   compressed "::" and an embedded dotted quad included, since senders
 *   write them with inet_ntop rather than as the document's groups of
 *   four digits. Ports are 0..65535 without sign or leading zeros ("0"
 *   itself is a port).
 * - "PROXY UNKNOWN" may be followed by anything up to the CRLF, even
 *   without a space ("UNKNOWNxyz"): the document says to ignore it.
 * - v2 LOCAL skips the whole block after the fixed part, family byte and
 *   TLVs included: the document says to discard it, so a CRC32C TLV there
 *   is not verified either. So does PROXY with family UNSPEC (0x0_),
 *   whose address block has no known size to find the TLVs after.
 * - v2 PROXY with INET, INET6 or UNIX must say STREAM: the connection
 *   that carries the header is a TCP stream, and a header describing a
 *   datagram flow (DGRAM) or nothing (UNSPEC) is refused as malformed
 *   rather than taken for the client's address. UNIX (stream) is
 *   accepted as local (a path is no peer address), with its 216-byte
 *   address block required as the document sizes it, so the TLVs after
 *   it are read.
 * - The length field must cover the family's address block (12, 36 or
 *   216 bytes); anything after it must be whole TLVs, exactly filling
 *   the header. AUTHORITY up to 255 bytes (what the proxy_authority tag
 *   holds, include/portico/module.h), UNIQUE_ID up to 128 (the document's
 *   bound), CRC32C exactly 4; each at most once, since a second
 *   AUTHORITY or UNIQUE_ID would let two readers of one header disagree,
 *   so a repeat is malformed. Every other type, SSL and its sub-TLVs
 *   included, is skipped unread.
 * - Checks follow the bytes: the version and command are judged when
 *   byte 13 arrives, the family at byte 14, the length at byte 16 (too
 *   long before too short for the family), the TLVs' structure once the
 *   header is whole, the CRC last, so a header both malformed and
 *   corrupt is reported malformed.
 */
#include "config.h"

#include "worker/proxy_header.h"

#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#define PROXY_V1_SIG		"PROXY "
#define PROXY_V1_SIG_LEN	(sizeof(PROXY_V1_SIG) - 1)
/* The four fields of a TCP4 or TCP6 line: addresses, then ports. */
#define PROXY_V1_FIELDS		4

#define PROXY_V2_SIG_LEN	12
/* Signature, ver_cmd, fam, len. */
#define PROXY_V2_FIXED		16
#define PROXY_V2_VERSION	0x2
#define PROXY_V2_CMD_LOCAL	0x0
#define PROXY_V2_CMD_PROXY	0x1
#define PROXY_V2_TCP4		0x11
#define PROXY_V2_TCP6		0x21
#define PROXY_V2_UNIX_STREAM	0x31
#define PROXY_V2_INET_LEN	12
#define PROXY_V2_INET6_LEN	36
#define PROXY_V2_UNIX_LEN	216
/* An address block of unknown size: the whole rest is skipped. */
#define PROXY_V2_SKIP		((size_t)-1)

#define PP2_TYPE_AUTHORITY	0x02
#define PP2_TYPE_CRC32C		0x03
#define PP2_TYPE_UNIQUE_ID	0x05
#define PP2_TLV_HEAD		3
#define PP2_AUTHORITY_MAX	255
#define PP2_UNIQUE_ID_MAX	128
#define PP2_CRC32C_LEN		4

static const uint8_t	 proxy_v2_sig[PROXY_V2_SIG_LEN] = {
	0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a
};

static const char *const proxy_refusal_names[PROXY_REFUSED_COUNT] = {
	[PROXY_REFUSED_SIGNATURE] = "signature",
	[PROXY_REFUSED_MALFORMED] = "malformed",
	[PROXY_REFUSED_TOO_LONG] = "too_long",
	[PROXY_REFUSED_CRC] = "crc",
	[PROXY_REFUSED_SOURCE] = "source",
	[PROXY_REFUSED_TIMEOUT] = "timeout",
	[PROXY_REFUSED_CLOSED] = "closed",
};

static size_t
proxy_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

static uint16_t
proxy_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
proxy_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* The <af> address at <ip> (4 or 16 bytes, network order) and <port>
 * into the cleared *<ss>. */
static void
proxy_set_addr(struct sockaddr_storage *ss, int af, const void *ip,
    uint16_t port)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)(void *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)(void *)ss;

	if (af == AF_INET) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, ip, 4);
	} else {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, ip, 16);
	}
}

/* ---- version 1 -------------------------------------------------------- */

/* True when every byte of <p>[0..<n>) is one of <chars>. */
static bool
proxy_v1_only(const uint8_t *p, size_t n, const char *chars)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (memchr(chars, p[i], strlen(chars)) == NULL)
			return false;
	return true;
}

/*
 * Whether <p>[0..<n>), the bytes after "PROXY " and before any CR or LF,
 * can still begin a valid line. Each byte is judged on the bytes before
 * it only, so a prefix refused here stays refused however it goes on.
 */
static bool
proxy_v1_plausible(const uint8_t *p, size_t n)
{
	static const struct {
		const char	*word;
		const char	*chars;		/* NULL: anything */
	} protos[] = {
		{ "TCP4 ", "0123456789. " },
		{ "TCP6 ", "0123456789abcdefABCDEF:. " },
		{ "UNKNOWN", NULL },
	};
	size_t	 i, wl;

	for (i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
		wl = strlen(protos[i].word);
		if (memcmp(p, protos[i].word, proxy_min(n, wl)) != 0)
			continue;
		if (n <= wl || protos[i].chars == NULL)
			return true;
		return proxy_v1_only(p + wl, n - wl, protos[i].chars);
	}
	return false;
}

/* Splits <p>[0..<n>) at single spaces into exactly PROXY_V1_FIELDS
 * non-empty fields; false on an empty field (two spaces, a space at
 * either end) or another count. */
static bool
proxy_v1_fields(const uint8_t *p, size_t n, struct pt_str *f)
{
	size_t	 i, start = 0, nf = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != ' ')
			continue;
		if (i == start || nf == PROXY_V1_FIELDS)
			return false;
		f[nf].ptr = (const char *)p + start;
		f[nf++].len = i - start;
		start = i + 1;
	}
	return nf == PROXY_V1_FIELDS;
}

/* A decimal port: 1 to 5 digits, no leading zero but "0", <= 65535. */
static bool
proxy_v1_port(const struct pt_str *f, uint16_t *port_out)
{
	uint32_t	 v = 0;
	size_t		 i;

	if (f->len < 1 || f->len > 5 || (f->len > 1 && f->ptr[0] == '0'))
		return false;
	for (i = 0; i < f->len; i++) {
		if (f->ptr[i] < '0' || f->ptr[i] > '9')
			return false;
		v = v * 10 + (uint32_t)(f->ptr[i] - '0');
	}
	if (v > 65535)
		return false;
	*port_out = (uint16_t)v;
	return true;
}

/* True when a number of the dotted quad <f> starts with a zero that
 * another digit follows. */
static bool
proxy_v1_has_leading_zero(const struct pt_str *f)
{
	size_t	 i;

	for (i = 0; i + 1 < f->len; i++)
		if (f->ptr[i] == '0' && (i == 0 || f->ptr[i - 1] == '.') &&
		    f->ptr[i + 1] >= '0' && f->ptr[i + 1] <= '9')
			return true;
	return false;
}

/* The address <f> of family <af> with <port> into *<ss>. */
static bool
proxy_v1_addr(int af, const struct pt_str *f, uint16_t port,
    struct sockaddr_storage *ss)
{
	char		 text[INET6_ADDRSTRLEN];
	uint8_t		 ip[16];

	/* inet_pton needs a C string; a field too long for any address of
	 * the family cannot be one. */
	if (f->len >= sizeof(text))
		return false;
	memcpy(text, f->ptr, f->len);
	text[f->len] = '\0';
	if (af == AF_INET && proxy_v1_has_leading_zero(f))
		return false;
	if (inet_pton(af, text, ip) != 1)
		return false;
	proxy_set_addr(ss, af, ip, port);
	return true;
}

/* The line <p>[0..<n>) after "PROXY " and before its CRLF. 0 or
 * -PROXY_REFUSED_MALFORMED. */
static int
proxy_v1_line(const uint8_t *p, size_t n, struct proxy_header *h)
{
	struct pt_str	 f[PROXY_V1_FIELDS];
	uint16_t	 sport, dport;
	int		 af;

	if (n >= 7 && memcmp(p, "UNKNOWN", 7) == 0) {
		h->local = true;
		return 0;
	}
	if (n >= 5 && memcmp(p, "TCP4 ", 5) == 0)
		af = AF_INET;
	else if (n >= 5 && memcmp(p, "TCP6 ", 5) == 0)
		af = AF_INET6;
	else
		return -PROXY_REFUSED_MALFORMED;
	if (!proxy_v1_fields(p + 5, n - 5, f) ||
	    !proxy_v1_port(&f[2], &sport) || !proxy_v1_port(&f[3], &dport) ||
	    !proxy_v1_addr(af, &f[0], sport, &h->src) ||
	    !proxy_v1_addr(af, &f[1], dport, &h->dst))
		return -PROXY_REFUSED_MALFORMED;
	return 0;
}

static int
proxy_v1_parse(const uint8_t *buf, size_t len, struct proxy_header *h)
{
	size_t	 n, end;
	int	 rc;

	if (memcmp(buf, PROXY_V1_SIG, proxy_min(len, PROXY_V1_SIG_LEN)) != 0)
		return -PROXY_REFUSED_SIGNATURE;
	if (len < PROXY_V1_SIG_LEN)
		return 0;
	/* The first CR or LF ends the line, well formed or not. */
	n = proxy_min(len, PROXY_V1_MAX);
	for (end = PROXY_V1_SIG_LEN; end < n; end++)
		if (buf[end] == '\r' || buf[end] == '\n')
			break;
	if (!proxy_v1_plausible(buf + PROXY_V1_SIG_LEN,
	    end - PROXY_V1_SIG_LEN))
		return -PROXY_REFUSED_MALFORMED;
	if (end == n)
		return len >= PROXY_V1_MAX ? -PROXY_REFUSED_TOO_LONG : 0;
	if (buf[end] == '\n')
		return -PROXY_REFUSED_MALFORMED;
	/* A CR in the last allowed place: its LF would be one too many,
	 * whatever byte comes next. */
	if (end + 2 > PROXY_V1_MAX)
		return -PROXY_REFUSED_TOO_LONG;
	if (end + 1 == len)
		return 0;
	if (buf[end + 1] != '\n')
		return -PROXY_REFUSED_MALFORMED;
	h->version = 1;
	rc = proxy_v1_line(buf + PROXY_V1_SIG_LEN, end - PROXY_V1_SIG_LEN, h);
	return rc < 0 ? rc : (int)(end + 2);
}

/* ---- version 2 -------------------------------------------------------- */

/*
 * The address block's size for the family byte <fam> of a PROXY command
 * (PROXY_V2_SKIP: not read at all), and whether the connection's own
 * endpoints are to be used. False when the family is refused.
 */
static bool
proxy_v2_family(uint8_t fam, size_t *alen_out, bool *local_out)
{
	*local_out = false;
	switch (fam) {
	/* Family UNSPEC, whatever the transport: the document says to
	 * ignore the address information. */
	case 0x00:
	case 0x01:
	case 0x02:
		*local_out = true;
		*alen_out = PROXY_V2_SKIP;
		return true;
	case PROXY_V2_TCP4:
		*alen_out = PROXY_V2_INET_LEN;
		return true;
	case PROXY_V2_TCP6:
		*alen_out = PROXY_V2_INET6_LEN;
		return true;
	case PROXY_V2_UNIX_STREAM:
		/* A path names no peer to log or filter on. */
		*local_out = true;
		*alen_out = PROXY_V2_UNIX_LEN;
		return true;
	default:
		return false;
	}
}

/*
 * The 16-byte fixed part, judged byte by byte as far as <len> goes.
 * Returns the header's whole length once the fixed part is there and
 * valid, with the address block's size and locality; 0 when more bytes
 * are needed; -enum proxy_refusal.
 */
static int
proxy_v2_fixed(const uint8_t *buf, size_t len, size_t *alen_out,
    bool *local_out)
{
	size_t	 total;

	if (memcmp(buf, proxy_v2_sig, proxy_min(len, PROXY_V2_SIG_LEN)) != 0)
		return -PROXY_REFUSED_SIGNATURE;
	if (len <= PROXY_V2_SIG_LEN)
		return 0;
	if (buf[12] >> 4 != PROXY_V2_VERSION ||
	    (buf[12] & 0x0f) > PROXY_V2_CMD_PROXY)
		return -PROXY_REFUSED_MALFORMED;
	if ((buf[12] & 0x0f) == PROXY_V2_CMD_LOCAL) {
		/* The family is ignored along with the addresses. */
		*local_out = true;
		*alen_out = PROXY_V2_SKIP;
	} else if (len > 13 && !proxy_v2_family(buf[13], alen_out,
	    local_out))
		return -PROXY_REFUSED_MALFORMED;
	if (len < PROXY_V2_FIXED)
		return 0;
	total = PROXY_V2_FIXED + proxy_get16(buf + 14);
	if (total > PROXY_V2_MAX)
		return -PROXY_REFUSED_TOO_LONG;
	if (*alen_out != PROXY_V2_SKIP &&
	    total < PROXY_V2_FIXED + *alen_out)
		return -PROXY_REFUSED_MALFORMED;
	return (int)total;
}

/* Keeps the TLV value <v>[0..<n>) in *<s>, up to <max> bytes, once. */
static bool
proxy_v2_keep(struct pt_str *s, const uint8_t *v, size_t n, size_t max)
{
	/* ptr is set even for an empty value: it marks the type as seen. */
	if (s->ptr != NULL || n > max)
		return false;
	s->ptr = (const char *)v;
	s->len = n;
	return true;
}

/*
 * The TLVs in <buf>[<off>..<total>): AUTHORITY and UNIQUE_ID into <h>,
 * the offset of the CRC32C value in *<crc_at> (0 when there is none).
 * 0 or -PROXY_REFUSED_MALFORMED.
 */
static int
proxy_v2_tlvs(const uint8_t *buf, size_t off, size_t total,
    struct proxy_header *h, size_t *crc_at)
{
	const uint8_t	*v;
	size_t		 vlen;
	bool		 ok;

	*crc_at = 0;
	while (off < total) {
		if (total - off < PP2_TLV_HEAD)
			return -PROXY_REFUSED_MALFORMED;
		vlen = proxy_get16(buf + off + 1);
		if (vlen > total - off - PP2_TLV_HEAD)
			return -PROXY_REFUSED_MALFORMED;
		v = buf + off + PP2_TLV_HEAD;
		switch (buf[off]) {
		case PP2_TYPE_AUTHORITY:
			ok = proxy_v2_keep(&h->authority, v, vlen,
			    PP2_AUTHORITY_MAX);
			break;
		case PP2_TYPE_UNIQUE_ID:
			ok = proxy_v2_keep(&h->unique_id, v, vlen,
			    PP2_UNIQUE_ID_MAX);
			break;
		case PP2_TYPE_CRC32C:
			ok = *crc_at == 0 && vlen == PP2_CRC32C_LEN;
			*crc_at = (size_t)(v - buf);
			break;
		default:
			ok = true;
			break;
		}
		if (!ok)
			return -PROXY_REFUSED_MALFORMED;
		off += PP2_TLV_HEAD + vlen;
	}
	return 0;
}

/* Whether the CRC32C value at <buf>[<at>..<at>+4) is the checksum of
 * <buf>[0..<total>) with those four bytes taken as zero. */
static bool
proxy_v2_crc_ok(const uint8_t *buf, size_t total, size_t at)
{
	static const uint8_t	 zero[PP2_CRC32C_LEN];
	uint32_t		 crc;

	crc = proxy_crc32c(0, buf, at);
	crc = proxy_crc32c(crc, zero, sizeof(zero));
	crc = proxy_crc32c(crc, buf + at + PP2_CRC32C_LEN,
	    total - at - PP2_CRC32C_LEN);
	return crc == proxy_get32(buf + at);
}

/* The address block of a TCP4 or TCP6 header into <h>: two addresses
 * of <n> bytes, then two ports. */
static void
proxy_v2_addrs(const uint8_t *buf, struct proxy_header *h)
{
	const uint8_t	*a = buf + PROXY_V2_FIXED;
	int		 af = buf[13] == PROXY_V2_TCP4 ? AF_INET : AF_INET6;
	size_t		 n = af == AF_INET ? 4 : 16;

	proxy_set_addr(&h->src, af, a, proxy_get16(a + 2 * n));
	proxy_set_addr(&h->dst, af, a + n, proxy_get16(a + 2 * n + 2));
}

static int
proxy_v2_parse(const uint8_t *buf, size_t len, struct proxy_header *h)
{
	size_t	 total, alen = PROXY_V2_SKIP, crc_at;
	bool	 local = false;
	int	 rc;

	if ((rc = proxy_v2_fixed(buf, len, &alen, &local)) <= 0)
		return rc;
	total = (size_t)rc;
	if (len < total)
		return 0;
	h->version = 2;
	h->local = local;
	if (alen == PROXY_V2_SKIP)
		return (int)total;
	if (!local)
		proxy_v2_addrs(buf, h);
	if ((rc = proxy_v2_tlvs(buf, PROXY_V2_FIXED + alen, total, h,
	    &crc_at)) < 0)
		return rc;
	if (crc_at != 0 && !proxy_v2_crc_ok(buf, total, crc_at))
		return -PROXY_REFUSED_CRC;
	return (int)total;
}

/* ---- the interface ---------------------------------------------------- */

int
proxy_header_parse(const uint8_t *buf, size_t len, struct proxy_header *h)
{
	int	 rc;

	memset(h, 0, sizeof(*h));
	if (len == 0)
		return 0;
	/* The first byte tells the versions apart: their signatures share
	 * none. */
	if (buf[0] == PROXY_V1_SIG[0])
		rc = proxy_v1_parse(buf, len, h);
	else if (buf[0] == proxy_v2_sig[0])
		rc = proxy_v2_parse(buf, len, h);
	else
		rc = -PROXY_REFUSED_SIGNATURE;
	/* Half a header's fields must not look like an answer. */
	if (rc <= 0)
		memset(h, 0, sizeof(*h));
	return rc;
}

const char *
proxy_refusal_name(enum proxy_refusal r)
{
	if (r <= 0 || r >= PROXY_REFUSED_COUNT)
		return "unknown";
	return proxy_refusal_names[r];
}

/*
 * Four bits at a time: a 16-entry table (the reflected Castagnoli
 * polynomial 0x82F63B78 applied to each nibble) keeps the code small
 * and is fast enough for a header of at most 2 KiB, checked once per
 * connection.
 */
uint32_t
proxy_crc32c(uint32_t crc, const uint8_t *buf, size_t len)
{
	static const uint32_t	 nibble[16] = {
		0x00000000, 0x105ec76f, 0x20bd8ede, 0x30e349b1,
		0x417b1dbc, 0x5125dad3, 0x61c69362, 0x7198540d,
		0x82f63b78, 0x92a8fc17, 0xa24bb5a6, 0xb21572c9,
		0xc38d26c4, 0xd3d3e1ab, 0xe330a81a, 0xf36e6f75,
	};
	size_t			 i;

	/* The finished value is inverted; inverting it back lets a caller
	 * go on from a previous result as if the buffers were one. */
	crc = ~crc;
	for (i = 0; i < len; i++) {
		crc ^= buf[i];
		crc = crc >> 4 ^ nibble[crc & 0x0f];
		crc = crc >> 4 ^ nibble[crc & 0x0f];
	}
	return ~crc;
}

/* ---- writing (a parent proxy is told the client) --------------------- */

/* <in> as IPv4 when it is an IPv4-mapped IPv6 address (a dual-stack
 * listener's client), else as it is. */
static void
proxy_unmap(const struct sockaddr *in, struct sockaddr_storage *out)
{
	const struct sockaddr_in6	*s6 = (const struct sockaddr_in6 *)in;
	struct sockaddr_in		*s4 = (struct sockaddr_in *)out;

	memset(out, 0, sizeof(*out));
	if (in->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		s4->sin_family = AF_INET;
		s4->sin_port = s6->sin6_port;
		memcpy(&s4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	} else if (in->sa_family == AF_INET) {
		memcpy(out, in, sizeof(struct sockaddr_in));
	} else if (in->sa_family == AF_INET6) {
		memcpy(out, in, sizeof(struct sockaddr_in6));
	}
}

ssize_t
proxy_header_build(uint8_t *out, size_t cap, int version,
    const struct sockaddr *src, const struct sockaddr *dst)
{
	struct {
		struct sockaddr_storage	 sa;
	}		 s, d;
	char		 sa[INET6_ADDRSTRLEN], da[INET6_ADDRSTRLEN];
	int		 fam, n;
	size_t		 alen;

	proxy_unmap(src, &s.sa);
	proxy_unmap(dst, &d.sa);
	fam = s.sa.ss_family == d.sa.ss_family &&
	    (s.sa.ss_family == AF_INET || s.sa.ss_family == AF_INET6) ?
	    s.sa.ss_family : AF_UNSPEC;
	if (version == 1) {
		if (fam == AF_UNSPEC) {
			n = snprintf((char *)out, cap, "PROXY UNKNOWN\r\n");
		} else {
			inet_ntop(fam, fam == AF_INET ?
			    (const void *)&((struct sockaddr_in *)&s.sa)->sin_addr :
			    (const void *)&((struct sockaddr_in6 *)&s.sa)->sin6_addr,
			    sa, sizeof(sa));
			inet_ntop(fam, fam == AF_INET ?
			    (const void *)&((struct sockaddr_in *)&d.sa)->sin_addr :
			    (const void *)&((struct sockaddr_in6 *)&d.sa)->sin6_addr,
			    da, sizeof(da));
			n = snprintf((char *)out, cap, "PROXY %s %s %s %u %u\r\n",
			    fam == AF_INET ? "TCP4" : "TCP6", sa, da,
			    ntohs(((struct sockaddr_in *)&s.sa)->sin_port),
			    ntohs(((struct sockaddr_in *)&d.sa)->sin_port));
		}
		return n > 0 && (size_t)n < cap ? n : -1;
	}
	alen = fam == AF_INET ? 12 : fam == AF_INET6 ? 36 : 0;
	if (cap < PROXY_V2_SIG_LEN + 4 + alen)
		return -1;
	memcpy(out, proxy_v2_sig, PROXY_V2_SIG_LEN);
	out[12] = 0x21;		/* version 2, PROXY */
	out[13] = fam == AF_INET ? 0x11 : fam == AF_INET6 ? 0x21 : 0x00;
	out[14] = (uint8_t)(alen >> 8);
	out[15] = (uint8_t)alen;
	if (fam == AF_INET) {
		memcpy(out + 16, &((struct sockaddr_in *)&s.sa)->sin_addr, 4);
		memcpy(out + 20, &((struct sockaddr_in *)&d.sa)->sin_addr, 4);
		memcpy(out + 24, &((struct sockaddr_in *)&s.sa)->sin_port, 2);
		memcpy(out + 26, &((struct sockaddr_in *)&d.sa)->sin_port, 2);
	} else if (fam == AF_INET6) {
		memcpy(out + 16, &((struct sockaddr_in6 *)&s.sa)->sin6_addr, 16);
		memcpy(out + 32, &((struct sockaddr_in6 *)&d.sa)->sin6_addr, 16);
		memcpy(out + 48, &((struct sockaddr_in6 *)&s.sa)->sin6_port, 2);
		memcpy(out + 50, &((struct sockaddr_in6 *)&d.sa)->sin6_port, 2);
	}
	return (ssize_t)(PROXY_V2_SIG_LEN + 4 + alen);
}
