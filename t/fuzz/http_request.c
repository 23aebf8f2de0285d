/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the request-head parser (worker/http_parse.c). The input is
 * the bytes a client sends. Checks the parse is sane (slices inside the
 * head, tokens, values without controls, framing consistent, the error
 * statuses of a request), that every prefix gives PARSE_AGAIN or the same
 * verdict, and that max_head bounds exactly.
 */
#include "config.h"

#include "t/fuzz/fuzz.h"
#include "t/fuzz/http_msg.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	fuzz_http_prefixes(data, len, 65536, (struct pt_str){ NULL, 0 });
	/* A small max_head, so the 431 path is reached with short inputs. */
	if (len > 64)
		fuzz_http_prefixes(data, len, 64, (struct pt_str){ NULL, 0 });
	return 0;
}
