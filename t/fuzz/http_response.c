/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the response-head parser (worker/http_parse.c) as the
 * answer to GET, HEAD and CONNECT (which change the framing). The same
 * properties as http_request.c, with every error a 502.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "t/fuzz/http_msg.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const methods[] = { "GET", "HEAD", "CONNECT" };
	static struct http_msg	 m;
	char			*p;
	size_t			 i;
	int			 rc;

	for (i = 0; i < 3; i++)
		fuzz_http_prefixes(data, len, 65536, (struct pt_str){
		    methods[i], strlen(methods[i]) });
	/* No body for HEAD, whatever the fields say. */
	p = fuzz_dup(data, len, false);
	rc = http_parse_response(p, len, 65536, (struct pt_str){ "HEAD", 4 },
	    &m);
	if (rc == PARSE_OK)
		FUZZ_CHECK(m.body == HTTP_BODY_NONE, "body for HEAD");
	free(p);
	return 0;
}
