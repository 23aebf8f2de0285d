/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the SOCKS5 UDP request header (socks5_parse_udp, worker/
 * socks_parse.c). A datagram is whole: never PARSE_AGAIN. A header that
 * parses re-encodes to exactly the bytes it took, whatever data follows;
 * for an address, socks5_fmt_udp_header writes the same header (FRAG 0)
 * and it parses back to the same destination.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "t/fuzz/socks_check.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct socks5_udp_header	 h, h2;
	uint8_t				 enc[300], fmt[32];
	char				*p = fuzz_dup(data, len, false), *q;
	size_t				 n;
	int				 rc;

	rc = socks5_parse_udp((const uint8_t *)p, len, &h);
	FUZZ_CHECK(rc == PARSE_OK || rc == PARSE_BAD, "rc %d", rc);
	if (rc != PARSE_OK) {
		free(p);
		return 0;
	}
	FUZZ_CHECK(h.len <= len, "header of %zu in %zu bytes", h.len, len);
	enc[0] = enc[1] = 0;
	enc[2] = h.frag;
	n = 3 + socks_check_enc_dest(enc + 3, &h.dest);
	FUZZ_CHECK(n == h.len && memcmp(enc, data, n) == 0, "re-encoded "
	    "header differs");
	/* The header alone parses the same; one byte less does not. */
	q = fuzz_dup(data, h.len, false);
	FUZZ_CHECK(socks5_parse_udp((const uint8_t *)q, h.len, &h2) ==
	    PARSE_OK && h2.len == h.len, "header alone");
	FUZZ_CHECK(socks5_parse_udp((const uint8_t *)q, h.len - 1, &h2) ==
	    PARSE_BAD, "header one byte short");
	free(q);
	if (h.dest.atyp != SOCKS_ATYP_DOMAIN) {
		n = socks5_fmt_udp_header(fmt,
		    (const struct sockaddr *)&h.dest.addr.sa);
		FUZZ_CHECK(n > 3 && fmt[2] == 0 && socks_check_fmt_dest(fmt + 3,
		    n - 3, enc + 3, h.len - 3), "socks5_fmt_udp_header");
		/* What we write parses back to the same address (an
		 * IPv4-mapped one to its IPv4 form, checked above). */
		FUZZ_CHECK(socks5_parse_udp(fmt, n, &h2) == PARSE_OK &&
		    h2.dest.port == h.dest.port && (n != h.len ||
		    (h2.dest.addr.len == h.dest.addr.len &&
		    memcmp(&h2.dest.addr.sa, &h.dest.addr.sa,
		    h.dest.addr.len) == 0)), "formatted header parses back "
		    "otherwise");
	}
	free(p);
	return 0;
}
