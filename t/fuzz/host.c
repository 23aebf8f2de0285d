/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: destination hosts (worker/host.c), the one reading of a
 * host that the ACL, the resolver and the access log share. Properties:
 * the input is read within its bytes (an exact-size copy, no NUL);
 * a name's text holds only label bytes and single dots, at most 253
 * bytes, no label over 63, and does not end in a number (that would be
 * an address to a URL parser); an input with a byte no name may hold
 * (a backslash, '%', a space, UTF-8) is never a name; an address's text
 * is what inet_ntop writes for its bytes; and the canonical text read
 * again gives itself, the same kind and the same address (one reading,
 * whoever reads it second).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "worker/host.h"

static void
check_name(const struct host *h, const uint8_t *data, size_t len)
{
	size_t	 i, label = 0;
	bool	 last_numeric = true;

	FUZZ_CHECK(h->len >= 1 && h->len <= 253 && h->text[h->len] == '\0',
	    "name of %zu bytes", h->len);
	for (i = 0; i < h->len; i++) {
		if (h->text[i] == '.') {
			FUZZ_CHECK(label > 0, "empty label at %zu", i);
			label = 0;
			last_numeric = true;
			continue;
		}
		FUZZ_CHECK(host_is_name_byte((unsigned char)h->text[i]),
		    "byte 0x%02x in a name", (unsigned char)h->text[i]);
		FUZZ_CHECK(++label <= HOST_LABEL_MAX, "label over 63");
		if (h->text[i] < '0' || h->text[i] > '9')
			last_numeric = false;
	}
	FUZZ_CHECK(label > 0 && !last_numeric, "name \"%s\" ends in a dot or "
	    "a number", h->text);
	/* The input differs from the text only by case and a final dot. */
	FUZZ_CHECK(len == h->len || (len == h->len + 1 &&
	    data[len - 1] == '.'), "input of %zu bytes, text of %zu", len,
	    h->len);
	for (i = 0; i < h->len; i++)
		FUZZ_CHECK((data[i] | 0x20) == (h->text[i] | 0x20),
		    "input byte %zu 0x%02x is not the text's", i, data[i]);
}

static void
check_addr(const struct host *h)
{
	char		 back[INET6_ADDRSTRLEN];
	const void	*bytes;
	int		 fam = h->kind == HOST_IPV4 ? AF_INET : AF_INET6;

	FUZZ_CHECK(h->addr.sa.ss_family == fam, "family %d for kind %d",
	    (int)h->addr.sa.ss_family, (int)h->kind);
	bytes = fam == AF_INET ?
	    (const void *)&((const struct sockaddr_in *)&h->addr.sa)->sin_addr :
	    (const void *)&((const struct sockaddr_in6 *)&h->addr.sa)->
	    sin6_addr;
	FUZZ_CHECK(inet_ntop(fam, bytes, back, sizeof(back)) != NULL &&
	    strcmp(back, h->text) == 0, "text \"%s\", address %s", h->text,
	    back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct host	 h, again;
	char		*in = fuzz_dup(data, len, false);
	enum host_kind	 k = host_parse(in, len, &h);
	size_t		 i;

	if (k == HOST_NAME) {
		for (i = 0; i < len; i++)
			FUZZ_CHECK(data[i] == '.' ||
			    host_is_name_byte(data[i] | (data[i] >= 'A' &&
			    data[i] <= 'Z' ? 0x20 : 0)), "byte 0x%02x read "
			    "as part of a name", data[i]);
		check_name(&h, data, len);
	} else if (k == HOST_IPV4 || k == HOST_IPV6) {
		check_addr(&h);
	} else {
		FUZZ_CHECK(k == HOST_BAD && h.len == 0, "kind %d", (int)k);
	}
	if (k != HOST_BAD) {
		FUZZ_CHECK(host_parse(h.text, h.len, &again) == k &&
		    again.len == h.len && memcmp(again.text, h.text, h.len) ==
		    0 && (k == HOST_NAME || memcmp(&again.addr, &h.addr,
		    sizeof(h.addr)) == 0), "\"%s\" read again differs",
		    h.text);
	}
	free(in);
	return 0;
}
