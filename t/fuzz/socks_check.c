/* SPDX-License-Identifier: BSD-2-Clause */
/* The SOCKS stream property (see socks_check.h). */
#include "config.h"

#include "t/fuzz/socks_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"

size_t
socks_check_enc_dest(uint8_t *p, const struct socks_dest *d)
{
	const struct sockaddr_in	*sin = (const void *)&d->addr.sa;
	const struct sockaddr_in6	*sin6 = (const void *)&d->addr.sa;
	size_t				 n = 0;

	p[n++] = (uint8_t)d->atyp;
	switch (d->atyp) {
	case SOCKS_ATYP_IPV4:
		FUZZ_CHECK(sin->sin_family == AF_INET && d->addr.len ==
		    sizeof(*sin) && ntohs(sin->sin_port) == d->port,
		    "IPv4 destination's address");
		memcpy(p + n, &sin->sin_addr, 4);
		n += 4;
		break;
	case SOCKS_ATYP_IPV6:
		FUZZ_CHECK(sin6->sin6_family == AF_INET6 && d->addr.len ==
		    sizeof(*sin6) && ntohs(sin6->sin6_port) == d->port,
		    "IPv6 destination's address");
		memcpy(p + n, &sin6->sin6_addr, 16);
		n += 16;
		break;
	case SOCKS_ATYP_DOMAIN:
		FUZZ_CHECK(d->name.len >= 1 && d->name.len <= 255 &&
		    memchr(d->name.ptr, '\0', d->name.len) == NULL &&
		    d->addr.len == 0, "name of %zu bytes", d->name.len);
		p[n++] = (uint8_t)d->name.len;
		memcpy(p + n, d->name.ptr, d->name.len);
		n += d->name.len;
		break;
	default:
		FUZZ_CHECK(false, "ATYP %d", (int)d->atyp);
	}
	p[n++] = (uint8_t)(d->port >> 8);
	p[n++] = (uint8_t)d->port;
	return n;
}

struct one {
	int	 rc, reply;
	size_t	 used, enc_len;
	uint8_t	*enc;
};

static void
one_parse(socks_check_fn fn, const uint8_t *data, size_t k, struct one *o)
{
	char	*p = fuzz_dup(data, k, false);

	o->enc = malloc(k + 512);
	FUZZ_CHECK(o->enc != NULL, "memory");
	o->reply = -2;
	o->used = o->enc_len = 0;
	o->rc = fn((const uint8_t *)p, k, o->enc, &o->enc_len, &o->used,
	    &o->reply);
	FUZZ_CHECK(o->rc == PARSE_OK || o->rc == PARSE_AGAIN ||
	    o->rc == PARSE_BAD, "rc %d", o->rc);
	if (o->rc == PARSE_OK)
		FUZZ_CHECK(o->used > 0 && o->used <= k, "took %zu of %zu",
		    o->used, k);
	free(p);
}

static void
one_same(const char *what, const struct one *a, const struct one *b,
    const char *how)
{
	FUZZ_CHECK(a->rc == b->rc, "%s, %s: rc %d, whole %d", what, how,
	    b->rc, a->rc);
	if (a->rc == PARSE_BAD)
		FUZZ_CHECK(a->reply == b->reply, "%s, %s: reply %d, whole %d",
		    what, how, b->reply, a->reply);
	if (a->rc == PARSE_OK)
		FUZZ_CHECK(a->used == b->used && a->enc_len == b->enc_len &&
		    memcmp(a->enc, b->enc, a->enc_len) == 0, "%s, %s: another "
		    "message", what, how);
}

int
socks_check_stream(const char *what, socks_check_fn fn, const uint8_t *data,
    size_t len, size_t *used)
{
	struct one	 whole, part;
	size_t		 k;

	one_parse(fn, data, len, &whole);
	for (k = 0; k < len && k < 600; k++) {
		one_parse(fn, data, k, &part);
		if (part.rc != PARSE_AGAIN)
			one_same(what, &whole, &part, "prefix");
		free(part.enc);
	}
	if (whole.rc == PARSE_OK) {
		FUZZ_CHECK(whole.enc_len == whole.used &&
		    memcmp(whole.enc, data, whole.used) == 0, "%s: re-encoded "
		    "message differs from the %zu bytes it took", what,
		    whole.used);
		one_parse(fn, data, whole.used, &part);
		one_same(what, &whole, &part, "alone");
		free(part.enc);
		one_parse(fn, data, whole.used - 1, &part);
		FUZZ_CHECK(part.rc == PARSE_AGAIN, "%s: one byte short gave "
		    "%d", what, part.rc);
		free(part.enc);
	}
	*used = whole.used;
	free(whole.enc);
	return whole.rc;
}

bool
socks_check_fmt_dest(const uint8_t *got, size_t n, const uint8_t *enc,
    size_t enc_n)
{
	static const uint8_t	 mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	if (enc_n == 1 + 16 + 2 && enc[0] == SOCKS_ATYP_IPV6 &&
	    memcmp(enc + 1, mapped, 12) == 0)
		return n == 1 + 4 + 2 && got[0] == SOCKS_ATYP_IPV4 &&
		    memcmp(got + 1, enc + 13, 4) == 0 &&
		    memcmp(got + 5, enc + 17, 2) == 0;
	return n == enc_n && memcmp(got, enc, n) == 0;
}
