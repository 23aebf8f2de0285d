/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the PROXY protocol header (worker/proxy_header.c), v1 and
 * v2, as the bytes a balancer sends first. Checked on every input, each
 * parse on a heap copy of exactly its length:
 *
 * - the answer is 0, one of the parser's four refusals, or a length no
 *   more than the input and PROXY_HEADER_MAX; 0 only for fewer bytes
 *   than a header may take (PROXY_V1_MAX for a line);
 * - the same bytes give the same answer and fields again, and the header
 *   alone (without what follows) too;
 * - prefixes: every shorter prefix of an accepted header gives 0; a
 *   prefix of a refused input gives 0 or the same refusal, and no prefix
 *   that gives 0 is longer than one refused (all prefixes while the input
 *   is short, a sample of them when it is long);
 * - fields: a refusal leaves the struct cleared; a local header has no
 *   addresses, another has two of one family, AF_INET or AF_INET6; TLV
 *   slices lie inside the header, within their bounds, and only in v2;
 * - round trip: a v2 header's addresses encode back to its address block
 *   and family byte; a TCP4 line is exactly the line written back from
 *   its fields (its text is canonical), a TCP6 line written back parses
 *   to the same addresses;
 * - a v2 header refused only for its CRC32C is accepted with the
 *   checksum put right (found by a TLV walk of this file's own), which
 *   also takes the fuzzer past the checksum to the accepting paths.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/proxy_header.h"
#include "t/fuzz/fuzz.h"

/* Prefixes of up to this many bytes are all tried, then a sample. */
#define PREFIX_ALL	256
#define PREFIX_SAMPLE	64

struct result {
	int			 rc;
	struct proxy_header	 h;
	/* The TLV slices as offsets into the input (-1: NULL), since the
	 * copy they pointed into is freed. */
	long			 auth_off, uid_off;
};

static long
slice_off(const struct pt_str *s, const char *base, size_t rc)
{
	long	 off;

	if (s->ptr == NULL) {
		FUZZ_CHECK(s->len == 0, "NULL slice of %zu bytes", s->len);
		return -1;
	}
	off = (long)(s->ptr - base);
	FUZZ_CHECK(off >= 16 && (size_t)off + s->len <= rc,
	    "slice at %ld, %zu bytes, outside the %zu-byte header", off,
	    s->len, rc);
	return off;
}

static bool
is_refusal(int rc)
{
	return rc == -PROXY_REFUSED_SIGNATURE ||
	    rc == -PROXY_REFUSED_MALFORMED || rc == -PROXY_REFUSED_TOO_LONG ||
	    rc == -PROXY_REFUSED_CRC;
}

/* The fields' own rules, whatever the input. */
static void
check_fields(const struct result *r, const uint8_t *data)
{
	const struct proxy_header	*h = &r->h;

	if (r->rc <= 0) {
		FUZZ_CHECK(h->version == 0 && !h->local &&
		    h->src.ss_family == AF_UNSPEC &&
		    h->dst.ss_family == AF_UNSPEC && r->auth_off == -1 &&
		    r->uid_off == -1, "rc %d left fields set", r->rc);
		return;
	}
	FUZZ_CHECK(h->version == (data[0] == 'P' ? 1 : 2), "version %u for "
	    "first byte 0x%02x", h->version, data[0]);
	if (h->local)
		FUZZ_CHECK(h->src.ss_family == AF_UNSPEC &&
		    h->dst.ss_family == AF_UNSPEC, "local with addresses");
	else
		FUZZ_CHECK(h->src.ss_family == h->dst.ss_family &&
		    (h->src.ss_family == AF_INET ||
		    h->src.ss_family == AF_INET6), "families %d and %d",
		    h->src.ss_family, h->dst.ss_family);
	FUZZ_CHECK(h->authority.len <= 255 && h->unique_id.len <= 128,
	    "AUTHORITY %zu, UNIQUE_ID %zu bytes", h->authority.len,
	    h->unique_id.len);
	if (h->version == 1)
		FUZZ_CHECK(r->rc <= PROXY_V1_MAX && r->auth_off == -1 &&
		    r->uid_off == -1, "v1 line of %d bytes, or with TLVs",
		    r->rc);
}

/* Parses a heap copy of <data>[0..<k>) into *<r> and checks its range. */
static void
one(const uint8_t *data, size_t k, struct result *r)
{
	char	*p = fuzz_dup(data, k, false);

	r->rc = proxy_header_parse((const uint8_t *)p, k, &r->h);
	FUZZ_CHECK(r->rc == 0 || is_refusal(r->rc) || (r->rc > 0 &&
	    (size_t)r->rc <= k && r->rc <= PROXY_HEADER_MAX),
	    "rc %d for %zu bytes", r->rc, k);
	if (r->rc == 0)
		FUZZ_CHECK(k < (k > 0 && data[0] == 'P' ? PROXY_V1_MAX :
		    PROXY_HEADER_MAX), "need more after %zu bytes", k);
	r->auth_off = slice_off(&r->h.authority, p,
	    r->rc > 0 ? (size_t)r->rc : 0);
	r->uid_off = slice_off(&r->h.unique_id, p,
	    r->rc > 0 ? (size_t)r->rc : 0);
	r->h.authority.ptr = r->h.unique_id.ptr = NULL;
	free(p);
	check_fields(r, data);
}

static void
same(const struct result *a, const struct result *b, const char *how)
{
	FUZZ_CHECK(a->rc == b->rc, "%s: rc %d, first %d", how, b->rc, a->rc);
	if (a->rc <= 0)
		return;
	FUZZ_CHECK(a->h.version == b->h.version && a->h.local == b->h.local &&
	    memcmp(&a->h.src, &b->h.src, sizeof(a->h.src)) == 0 &&
	    memcmp(&a->h.dst, &b->h.dst, sizeof(a->h.dst)) == 0 &&
	    a->auth_off == b->auth_off && a->uid_off == b->uid_off &&
	    a->h.authority.len == b->h.authority.len &&
	    a->h.unique_id.len == b->h.unique_id.len, "%s: other fields",
	    how);
}

/* Checks the prefix of <k> bytes against the whole's answer; keeps the
 * longest prefix that gave 0 and the shortest one refused. */
static void
check_prefix(const uint8_t *data, size_t k, const struct result *whole,
    size_t *zero_max, size_t *refused_min)
{
	struct result	 part;

	one(data, k, &part);
	if (whole->rc > 0)
		FUZZ_CHECK(part.rc == 0, "prefix of %zu bytes of a %d-byte "
		    "header gave %d", k, whole->rc, part.rc);
	else
		FUZZ_CHECK(part.rc == 0 || part.rc == whole->rc, "prefix of "
		    "%zu bytes gave %d, the whole %d", k, part.rc, whole->rc);
	if (part.rc == 0 && k > *zero_max)
		*zero_max = k;
	if (part.rc < 0 && k < *refused_min)
		*refused_min = k;
}

static void
check_prefixes(const uint8_t *data, size_t len, const struct result *whole)
{
	uint64_t	 seed = len;
	size_t		 limit, k, zero_max = 0, refused_min = (size_t)-1;
	int		 i;

	limit = whole->rc > 0 ? (size_t)whole->rc : len;
	for (k = 0; k < len && k < 8; k++)
		seed = seed * 131 + data[k];
	for (k = 0; k < limit && k < PREFIX_ALL; k++)
		check_prefix(data, k, whole, &zero_max, &refused_min);
	for (i = 0; limit > PREFIX_ALL && i < PREFIX_SAMPLE; i++) {
		k = i == 0 ? limit - 1 : PREFIX_ALL + fuzz_rand(&seed) %
		    (limit - PREFIX_ALL);
		check_prefix(data, k, whole, &zero_max, &refused_min);
	}
	if (whole->rc < 0 && refused_min != (size_t)-1)
		FUZZ_CHECK(zero_max < refused_min, "refused at %zu bytes, "
		    "waiting again at %zu", refused_min, zero_max);
}

/* A v2 header's addresses, encoded back, against its bytes. */
static void
check_v2_addrs(const uint8_t *data, const struct result *r)
{
	const struct sockaddr_in	*s4 = (const void *)&r->h.src;
	const struct sockaddr_in	*d4 = (const void *)&r->h.dst;
	const struct sockaddr_in6	*s6 = (const void *)&r->h.src;
	const struct sockaddr_in6	*d6 = (const void *)&r->h.dst;
	uint8_t				 enc[36];
	size_t				 n;

	if (r->h.local) {
		FUZZ_CHECK((data[12] & 0x0f) == 0 || data[13] <= 0x02 ||
		    data[13] == 0x31, "local for command 0x%02x family "
		    "0x%02x", data[12], data[13]);
		return;
	}
	if (r->h.src.ss_family == AF_INET) {
		memcpy(enc, &s4->sin_addr, 4);
		memcpy(enc + 4, &d4->sin_addr, 4);
		memcpy(enc + 8, &s4->sin_port, 2);
		memcpy(enc + 10, &d4->sin_port, 2);
		n = 12;
	} else {
		memcpy(enc, &s6->sin6_addr, 16);
		memcpy(enc + 16, &d6->sin6_addr, 16);
		memcpy(enc + 32, &s6->sin6_port, 2);
		memcpy(enc + 34, &d6->sin6_port, 2);
		n = 36;
	}
	FUZZ_CHECK(data[12] == 0x21 && data[13] == (n == 12 ? 0x11 : 0x21),
	    "family 0x%02x gave %zu address bytes", data[13], n);
	FUZZ_CHECK((size_t)r->rc >= 16 + n && memcmp(enc, data + 16, n) == 0,
	    "addresses encode back to other bytes");
}

/* A v1 line written back from its fields into <out>; its length. */
static size_t
v1_write(const struct proxy_header *h, char *out, size_t outsz)
{
	const struct sockaddr_in	*s4 = (const void *)&h->src;
	const struct sockaddr_in	*d4 = (const void *)&h->dst;
	const struct sockaddr_in6	*s6 = (const void *)&h->src;
	const struct sockaddr_in6	*d6 = (const void *)&h->dst;
	char				 s[INET6_ADDRSTRLEN];
	char				 d[INET6_ADDRSTRLEN];
	int				 n;

	if (h->src.ss_family == AF_INET) {
		inet_ntop(AF_INET, &s4->sin_addr, s, sizeof(s));
		inet_ntop(AF_INET, &d4->sin_addr, d, sizeof(d));
		n = snprintf(out, outsz, "PROXY TCP4 %s %s %u %u\r\n", s, d,
		    ntohs(s4->sin_port), ntohs(d4->sin_port));
	} else {
		inet_ntop(AF_INET6, &s6->sin6_addr, s, sizeof(s));
		inet_ntop(AF_INET6, &d6->sin6_addr, d, sizeof(d));
		n = snprintf(out, outsz, "PROXY TCP6 %s %s %u %u\r\n", s, d,
		    ntohs(s6->sin6_port), ntohs(d6->sin6_port));
	}
	FUZZ_CHECK(n > 0 && (size_t)n < outsz, "line of %d bytes", n);
	return (size_t)n;
}

static void
check_v1_line(const uint8_t *data, const struct result *r)
{
	struct result	 back;
	char		 line[256];
	size_t		 n;

	if (r->h.local) {
		FUZZ_CHECK(r->rc >= 15 && memcmp(data, "PROXY UNKNOWN", 13) ==
		    0, "local line is not UNKNOWN");
		return;
	}
	n = v1_write(&r->h, line, sizeof(line));
	if (r->h.src.ss_family == AF_INET)
		FUZZ_CHECK(n == (size_t)r->rc && memcmp(line, data, n) == 0,
		    "TCP4 line is not what its fields write: %s", line);
	/* inet_ntop may write a longer IPv6 text than the sender did
	 * ("::ffff:1.2.3.4" for "::ffff:102:304"), past 107 bytes. */
	if (n > PROXY_V1_MAX)
		return;
	one((const uint8_t *)line, n, &back);
	FUZZ_CHECK(back.rc == (int)n, "written back, the line gave %d",
	    back.rc);
	FUZZ_CHECK(memcmp(&back.h.src, &r->h.src, sizeof(r->h.src)) == 0 &&
	    memcmp(&back.h.dst, &r->h.dst, sizeof(r->h.dst)) == 0,
	    "written back, the line names other addresses");
}

/*
 * This file's own reading of where a v2 header's CRC32C value is: after
 * the address block of the families that have TLVs, the first TLV of
 * type 0x03. 0 when there is none (or the header is cut).
 */
static size_t
crc_model_at(const uint8_t *data, size_t len)
{
	size_t	 total, off;

	if (len < 16 || data[0] != 0x0d || (data[12] & 0x0f) != 1)
		return 0;
	total = 16 + ((size_t)data[14] << 8 | data[15]);
	switch (data[13]) {
	case 0x11:
		off = 16 + 12;
		break;
	case 0x21:
		off = 16 + 36;
		break;
	case 0x31:
		off = 16 + 216;
		break;
	default:
		return 0;
	}
	while (total <= len && off + 3 <= total) {
		if (data[off] == 0x03 && off + 7 <= total)
			return off + 3;
		off += 3 + ((size_t)data[off + 1] << 8 | data[off + 2]);
	}
	return 0;
}

static void check_input(const uint8_t *data, size_t len);

/* A header refused for its CRC alone, with the checksum put right. */
static void
check_crc_fixed(const uint8_t *data, size_t len)
{
	uint8_t		*fix;
	uint32_t	 crc;
	size_t		 at, total;
	struct result	 r;

	at = crc_model_at(data, len);
	FUZZ_CHECK(at != 0, "refused for a CRC this file cannot find");
	total = 16 + ((size_t)data[14] << 8 | data[15]);
	fix = (uint8_t *)fuzz_dup(data, len, false);
	memset(fix + at, 0, 4);
	crc = proxy_crc32c(0, fix, total);
	fix[at] = (uint8_t)(crc >> 24);
	fix[at + 1] = (uint8_t)(crc >> 16);
	fix[at + 2] = (uint8_t)(crc >> 8);
	fix[at + 3] = (uint8_t)crc;
	one(fix, len, &r);
	FUZZ_CHECK(r.rc == (int)total, "CRC put right, rc %d for a %zu-byte "
	    "header", r.rc, total);
	check_input(fix, len);
	free(fix);
}

static void
check_input(const uint8_t *data, size_t len)
{
	struct result	 whole, again;

	one(data, len, &whole);
	one(data, len, &again);
	same(&whole, &again, "parsed twice");
	check_prefixes(data, len, &whole);
	if (whole.rc == -PROXY_REFUSED_CRC)
		check_crc_fixed(data, len);
	if (whole.rc <= 0)
		return;
	one(data, (size_t)whole.rc, &again);
	same(&whole, &again, "the header alone");
	if (whole.h.version == 2)
		check_v2_addrs(data, &whole);
	else
		check_v1_line(data, &whole);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	check_input(data, len);
	return 0;
}
