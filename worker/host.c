/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Destination hosts, read once (host.h). Two readers that disagree on a
 * name are a hole: the ACL judged "bl\ocked.test" while c-ares, which
 * reads a backslash as an escape, asked the DNS for "blocked.test"; and
 * "0177.0.0.2" went to the DNS as a name, then was connected to as
 * 177.0.0.2 where a browser, curl and inet_aton(3) read 127.0.0.2. So a
 * name here is only what no later reader can read another way, and a
 * number is read the way URLs read it.
 *
 * Pure: no I/O, no allocation, no state. It does not decide whether a
 * host may be reached (the ACL does) nor resolve it (dns.c does).
 */
#include "worker/host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

bool
host_is_name_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '_';
}

static unsigned char
host_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 'a' - 'A') : c;
}

static bool
host_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int
host_hex_value(unsigned char c)
{
	c = host_lower(c);
	if (host_is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* WHATWG URL, "ends in a number": the last label is all digits, or "0x"
 * and hex digits (none counts). */
static bool
host_ends_in_number(const char *p, size_t len)
{
	size_t	 i = len;

	while (i > 0 && p[i - 1] != '.')
		i--;
	p += i;
	len -= i;
	if (len >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		for (i = 2; i < len; i++)
			if (host_hex_value((unsigned char)p[i]) < 0)
				return false;
		return true;
	}
	if (len == 0)
		return false;
	for (i = 0; i < len; i++)
		if (!host_is_digit((unsigned char)p[i]))
			return false;
	return true;
}

/* WHATWG URL, "IPv4 number parser" on one part: decimal, "0" octal or
 * "0x" hex ("0x" alone is 0). False when it is none of them or exceeds
 * 32 bits (every such part fails the range checks after anyway). */
static bool
host_ipv4_number(const char *p, size_t len, uint64_t *out)
{
	unsigned	 radix = 10;
	uint64_t	 v = 0;
	int		 d;
	size_t		 i;

	if (len == 0)
		return false;
	if (len >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		p += 2;
		len -= 2;
		radix = 16;
	} else if (len >= 2 && p[0] == '0') {
		p++;
		len--;
		radix = 8;
	}
	for (i = 0; i < len; i++) {
		d = host_hex_value((unsigned char)p[i]);
		if (d < 0 || (unsigned)d >= radix)
			return false;
		v = v * radix + (unsigned)d;
		if (v > UINT32_MAX)
			return false;
	}
	*out = v;
	return true;
}

/* WHATWG URL, "IPv4 parser", on a host without its final dot. */
static bool
host_ipv4(const char *p, size_t len, uint32_t *out)
{
	uint64_t	 part[4], v, limit;
	size_t		 n = 0, start = 0, i;

	for (i = 0; i <= len; i++) {
		if (i < len && p[i] != '.')
			continue;
		if (n == 4 || !host_ipv4_number(p + start, i - start,
		    &part[n]))
			return false;
		n++;
		start = i + 1;
	}
	for (i = 0; i + 1 < n; i++)
		if (part[i] > 255)
			return false;
	limit = (uint64_t)1 << (8 * (5 - n));
	if (part[n - 1] >= limit)
		return false;
	v = part[n - 1];
	for (i = 0; i + 1 < n; i++)
		v += part[i] << (8 * (3 - i));
	*out = (uint32_t)v;
	return true;
}

static enum host_kind
host_bad(struct host *out)
{
	out->kind = HOST_BAD;
	out->len = 0;
	out->text[0] = '\0';
	return HOST_BAD;
}

/* Dotted quad of <b> into <text> (room for 16); its length. By hand:
 * inet_ntop formats with sprintf, 1,700 instructions of every request
 * to an address (callgrind), a sixth of a 1 KiB GET. */
static size_t
host_fmt_v4(char *text, const uint8_t *b)
{
	size_t	 n = 0;
	int	 i;

	for (i = 0; i < 4; i++) {
		if (i > 0)
			text[n++] = '.';
		if (b[i] >= 100)
			text[n++] = (char)('0' + b[i] / 100);
		if (b[i] >= 10)
			text[n++] = (char)('0' + b[i] / 10 % 10);
		text[n++] = (char)('0' + b[i] % 10);
	}
	text[n] = '\0';
	return n;
}

static enum host_kind
host_set_addr(struct host *out, int family, const void *bytes)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)&out->addr.sa;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&out->addr.sa;

	memset(&out->addr, 0, sizeof(out->addr));
	if (family == AF_INET) {
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, bytes, 4);
		out->addr.len = sizeof(*sin);
	} else {
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, bytes, 16);
		out->addr.len = sizeof(*sin6);
	}
	if (family == AF_INET)
		out->len = host_fmt_v4(out->text, bytes);
	else {
		inet_ntop(family, bytes, out->text, sizeof(out->text));
		out->len = strlen(out->text);
	}
	out->kind = family == AF_INET ? HOST_IPV4 : HOST_IPV6;
	return out->kind;
}

/* "[v6]" or a bare v6 address. inet_pton reads a C string, so the bytes
 * are checked first: a NUL would cut it short and let the rest through. */
static enum host_kind
host_ipv6(const char *p, size_t len, struct host *out)
{
	char		 buf[INET6_ADDRSTRLEN];
	unsigned char	 a[16];
	size_t		 i;

	if (p[0] == '[') {
		if (len < 3 || p[len - 1] != ']')
			return host_bad(out);
		p++;
		len -= 2;
	}
	if (len >= sizeof(buf))
		return host_bad(out);
	for (i = 0; i < len; i++)
		if (host_hex_value((unsigned char)p[i]) < 0 && p[i] != ':' &&
		    p[i] != '.')
			return host_bad(out);
	memcpy(buf, p, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, a) != 1)
		return host_bad(out);
	return host_set_addr(out, AF_INET6, a);
}

enum host_kind
host_parse(const char *in, size_t len, struct host *out)
{
	uint32_t	 v4;
	unsigned char	 c, a[4];
	size_t		 i, label = 0;

	if (len == 0)
		return host_bad(out);
	if (in[0] == '[' || memchr(in, ':', len) != NULL)
		return host_ipv6(in, len, out);
	if (len > 1 && in[len - 1] == '.')
		len--;
	if (len >= HOST_TEXT_MAX)
		return host_bad(out);
	if (host_ends_in_number(in, len)) {
		if (!host_ipv4(in, len, &v4))
			return host_bad(out);
		a[0] = (unsigned char)(v4 >> 24);
		a[1] = (unsigned char)(v4 >> 16);
		a[2] = (unsigned char)(v4 >> 8);
		a[3] = (unsigned char)v4;
		return host_set_addr(out, AF_INET, a);
	}
	for (i = 0; i < len; i++) {
		c = host_lower((unsigned char)in[i]);
		if (c == '.') {
			if (label == 0)
				return host_bad(out);
			label = 0;
		} else if (!host_is_name_byte(c) || ++label > HOST_LABEL_MAX) {
			return host_bad(out);
		}
		out->text[i] = (char)c;
	}
	if (label == 0)
		return host_bad(out);
	out->text[len] = '\0';
	out->len = len;
	memset(&out->addr, 0, sizeof(out->addr));
	out->kind = HOST_NAME;
	return HOST_NAME;
}
