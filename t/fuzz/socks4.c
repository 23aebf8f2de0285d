/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: SOCKS4 and 4a requests (socks4_parse_request, worker/
 * socks_parse.c), held to the stream property of socks_check.c. The 4a
 * form keeps no DSTIP (it is 0.0.0.x, x != 0, by definition): the round
 * trip writes back the one the input had, after checking it is of that
 * form. socks4_fmt_reply writes its 8 bytes as documented.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "t/fuzz/socks_check.h"

static int
request(const uint8_t *buf, size_t len, uint8_t *enc, size_t *enc_len,
    size_t *used, int *reply)
{
	const struct sockaddr_in	*sin;
	struct socks4_request		 r;
	size_t				 n = 0;
	int				 rc = socks4_parse_request(buf, len, &r);

	(void)reply;
	if (rc != PARSE_OK)
		return rc;
	FUZZ_CHECK(r.userid.len <= 255 && memchr(r.userid.ptr, '\0',
	    r.userid.len) == NULL, "userid of %zu bytes", r.userid.len);
	enc[n++] = 4;
	enc[n++] = r.cmd;
	enc[n++] = (uint8_t)(r.dest.port >> 8);
	enc[n++] = (uint8_t)r.dest.port;
	if (r.dest.atyp == SOCKS_ATYP_IPV4) {
		sin = (const void *)&r.dest.addr.sa;
		FUZZ_CHECK(sin->sin_family == AF_INET &&
		    ntohs(sin->sin_port) == r.dest.port, "SOCKS4 address");
		memcpy(enc + n, &sin->sin_addr, 4);
		FUZZ_CHECK(!(enc[n] == 0 && enc[n + 1] == 0 && enc[n + 2] == 0 &&
		    enc[n + 3] != 0), "a 4a address read as SOCKS4");
	} else {
		FUZZ_CHECK(r.dest.atyp == SOCKS_ATYP_DOMAIN &&
		    r.dest.name.len >= 1 && r.dest.name.len <= 255 &&
		    memchr(r.dest.name.ptr, '\0', r.dest.name.len) == NULL,
		    "4a host of %zu bytes", r.dest.name.len);
		FUZZ_CHECK(buf[4] == 0 && buf[5] == 0 && buf[6] == 0 &&
		    buf[7] != 0, "4a without 0.0.0.x");
		memcpy(enc + n, buf + 4, 4);
	}
	n += 4;
	memcpy(enc + n, r.userid.ptr, r.userid.len);
	n += r.userid.len;
	enc[n++] = 0;
	if (r.dest.atyp == SOCKS_ATYP_DOMAIN) {
		memcpy(enc + n, r.dest.name.ptr, r.dest.name.len);
		n += r.dest.name.len;
		enc[n++] = 0;
	}
	*enc_len = n;
	*used = r.len;
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint8_t	 rep[8], ip[4] = { 0 };
	size_t	 used;

	socks_check_stream("socks4", request, data, len, &used);
	if (len >= 6) {
		memcpy(ip, data + 2, 4);
		FUZZ_CHECK(socks4_fmt_reply(rep, data[0] & 1,
		    (uint16_t)(data[0] << 8 | data[1]), ip) == 8 &&
		    rep[0] == 0 && rep[1] == ((data[0] & 1) ? 0x5a : 0x5b) &&
		    rep[2] == data[0] && rep[3] == data[1] &&
		    memcmp(rep + 4, ip, 4) == 0, "socks4_fmt_reply");
	}
	return 0;
}
