/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: a SOCKS5 client's side of the conversation (worker/
 * socks_parse.c): the greeting, then an RFC 1929 sub-negotiation when
 * the bytes that follow start with its version (1), then the request, each
 * message parsed from where the previous one ended. Each parser is held to
 * the stream property of socks_check.c (prefixes, round trip, length);
 * the request's reply for a bad message is one RFC 1928 defines, and an
 * IPv4 or IPv6 destination comes back the same through socks5_fmt_reply.
 */
#include "config.h"

#include <string.h>

#include "t/fuzz/fuzz.h"
#include "t/fuzz/socks_check.h"

static int
greeting(const uint8_t *buf, size_t len, uint8_t *enc, size_t *enc_len,
    size_t *used, int *reply)
{
	struct socks5_greeting	 g;
	int			 rc = socks5_parse_greeting(buf, len, &g);

	(void)reply;
	if (rc != PARSE_OK)
		return rc;
	FUZZ_CHECK(g.nmethods > 0 && g.methods == buf + 2 && g.len ==
	    2u + g.nmethods, "greeting of %zu bytes, %u methods", g.len,
	    g.nmethods);
	enc[0] = 5;
	enc[1] = g.nmethods;
	memcpy(enc + 2, g.methods, g.nmethods);
	*enc_len = 2u + g.nmethods;
	*used = g.len;
	return rc;
}

static int
userpass(const uint8_t *buf, size_t len, uint8_t *enc, size_t *enc_len,
    size_t *used, int *reply)
{
	struct socks_userpass	 up;
	int			 rc = socks5_parse_userpass(buf, len, &up);
	size_t			 n = 0;

	(void)reply;
	if (rc != PARSE_OK)
		return rc;
	FUZZ_CHECK(up.user.len >= 1 && up.user.len <= 255 &&
	    up.password.len <= 255, "user %zu, password %zu bytes",
	    up.user.len, up.password.len);
	enc[n++] = 1;
	enc[n++] = (uint8_t)up.user.len;
	memcpy(enc + n, up.user.ptr, up.user.len);
	n += up.user.len;
	enc[n++] = (uint8_t)up.password.len;
	memcpy(enc + n, up.password.ptr, up.password.len);
	n += up.password.len;
	*enc_len = n;
	*used = up.len;
	return rc;
}

static int
request(const uint8_t *buf, size_t len, uint8_t *enc, size_t *enc_len,
    size_t *used, int *reply)
{
	struct socks5_request	 r;
	uint8_t			 rep[32];
	size_t			 n;
	int			 rc = socks5_parse_request(buf, len, &r);

	if (rc == PARSE_BAD) {
		*reply = r.reply;
		FUZZ_CHECK(r.reply == -1 || r.reply == SOCKS5_FAILURE ||
		    r.reply == SOCKS5_CMD_UNSUPPORTED ||
		    r.reply == SOCKS5_ATYP_UNSUPPORTED, "reply %d", r.reply);
	}
	if (rc != PARSE_OK)
		return rc;
	FUZZ_CHECK(r.reply == SOCKS5_OK, "reply %d after PARSE_OK", r.reply);
	FUZZ_CHECK(r.cmd >= 1 && r.cmd <= 3, "command %u", r.cmd);
	enc[0] = 5;
	enc[1] = r.cmd;
	enc[2] = 0;
	*enc_len = 3 + socks_check_enc_dest(enc + 3, &r.dest);
	*used = r.len;
	if (r.dest.atyp != SOCKS_ATYP_DOMAIN) {
		n = socks5_fmt_reply(rep, SOCKS5_OK,
		    (const struct sockaddr *)&r.dest.addr.sa);
		FUZZ_CHECK(n > 3 && rep[0] == 5 && rep[1] == 0 &&
		    rep[2] == 0 && socks_check_fmt_dest(rep + 3, n - 3,
		    enc + 3, *enc_len - 3),
		    "socks5_fmt_reply does not write the address back");
	}
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	size_t	 used;

	if (socks_check_stream("greeting", greeting, data, len, &used) !=
	    PARSE_OK)
		return 0;
	data += used;
	len -= used;
	if (len > 0 && data[0] == 1) {
		if (socks_check_stream("userpass", userpass, data, len,
		    &used) != PARSE_OK)
			return 0;
		data += used;
		len -= used;
	}
	socks_check_stream("request", request, data, len, &used);
	return 0;
}
