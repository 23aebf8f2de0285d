/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Checks shared by the HTTP head targets (http_request.c, http_response.c,
 * http_head.c): what a parsed struct http_msg must look like, and the
 * same verdict for every prefix of the input.
 */
#ifndef PT_T_FUZZ_HTTP_MSG_H
#define PT_T_FUZZ_HTTP_MSG_H

#include "worker/http_parse.h"

/* Parses <buf>[0..<len>) as a request (<method>.ptr NULL) or as a
 * response to <method>, with <max_head>. */
int	fuzz_http_parse(const char *buf, size_t len, size_t max_head,
	    struct pt_str method, struct http_msg *m);
/* Whether two parses of the same bytes gave the same verdict and, when
 * PARSE_OK, the same message (slices compared by offset into their own
 * buffers <a>, <b>). */
void	fuzz_http_same(const char *a, const struct http_msg *ma, int ra,
	    const char *b, const struct http_msg *mb, int rb, const char *what);
/* The invariants of one parse of <buf>[0..<len>) returning <rc>. */
void	fuzz_http_sane(const char *buf, size_t len, int rc,
	    const struct http_msg *m, bool request);
/*
 * The incremental property: every prefix of the input, each in a heap
 * block of its exact size, gives PARSE_AGAIN or the very verdict of the
 * whole; a head that parsed gives the same message from its own length
 * on; max_head exactly head_len still parses, one less is a 431.
 */
void	fuzz_http_prefixes(const uint8_t *data, size_t len, size_t max_head,
	    struct pt_str method);

#endif
