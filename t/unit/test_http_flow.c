/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/http_flow.c on its own, now that it is a leaf: framing a body in
 * place (a length read exactly, chunks passed on as they are or without
 * their framing, a body that the close ends, a bad chunk refused), each
 * also fed a byte at a time; when a head is worth parsing; and the
 * buffer moves between messages (shift, compact). No socket: the flow's
 * buffers are filled by hand from the buffer pool.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "worker/buf.h"
#include "worker/http_flow.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define FLOW_MAX_TRAILER	8192

/* A flow whose input holds the first <len> bytes of <s>, its head done,
 * its body framed as <body> (<remaining> bytes for a length). */
static void
flow_with(struct http_flow *f, const char *s, size_t len, enum http_body body,
    uint64_t remaining)
{
	memset(f, 0, sizeof(*f));
	f->in = buf_get(BUF_SMALL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->in);
	memcpy(f->in, s, strlen(s));
	f->in_len = (uint32_t)len;
	f->head_done = true;
	f->body = body;
	f->remaining = remaining;
}

/* Frames <s> with <body>, first its first <split> bytes, then all of it
 * (as a second read would add the rest). */
static int
flow_frame_split(struct http_flow *f, const char *s, size_t split,
    enum http_body body, uint64_t remaining, bool dechunk)
{
	flow_with(f, s, split, body, remaining);
	f->dechunk = dechunk;
	if (http_flow_frame(f, false, FLOW_MAX_TRAILER) < 0)
		return -1;
	f->in_len = (uint32_t)strlen(s);
	return http_flow_frame(f, false, FLOW_MAX_TRAILER);
}

static void
test_http_flow_frames_a_length_exactly(void)
{
	static const char	 s[] = "0123456789GET /next";
	struct http_flow	 f;
	size_t			 k;

	for (k = 0; k <= strlen(s); k++) {
		CHECKF(flow_frame_split(&f, s, k, HTTP_BODY_LENGTH, 10,
		    false) == 0, "split %zu: framed", k);
		CHECKF(f.body_done && f.remaining == 0, "split %zu: done", k);
		CHECKF(f.in_fwd == 10 && f.in_raw == 10 && f.in_len ==
		    strlen(s), "split %zu: fwd %u raw %u len %u", k, f.in_fwd,
		    f.in_raw, f.in_len);
		http_flow_release(&f);
	}
}

static void
test_http_flow_passes_chunks_as_they_are(void)
{
	static const char	 s[] = "5\r\nhello\r\n3;x=y\r\nabc\r\n0\r\n"
				    "T: v\r\n\r\nNEXT";
	struct http_flow	 f;
	size_t			 k, end = strlen(s) - 4;

	for (k = 0; k <= strlen(s); k++) {
		CHECKF(flow_frame_split(&f, s, k, HTTP_BODY_CHUNKED, 0,
		    false) == 0, "split %zu: framed", k);
		CHECKF(f.body_done && f.in_fwd == end && f.in_raw == end,
		    "split %zu: done %d fwd %u raw %u", k, f.body_done,
		    f.in_fwd, f.in_raw);
		http_flow_release(&f);
	}
}

static void
test_http_flow_dechunks_for_an_http10_client(void)
{
	static const char	 s[] = "5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\nNEXT";
	struct http_flow	 f;
	size_t			 k;

	for (k = 0; k <= strlen(s); k++) {
		CHECKF(flow_frame_split(&f, s, k, HTTP_BODY_CHUNKED, 0,
		    true) == 0, "split %zu: framed", k);
		CHECKF(f.body_done && f.in_start == 0 && f.in_fwd == 8 &&
		    memcmp(f.in, "helloabc", 8) == 0, "split %zu: \"%.*s\"",
		    k, (int)f.in_fwd, f.in);
		CHECKF(f.in_raw == strlen(s) - 4, "split %zu: raw %u", k,
		    f.in_raw);
		http_flow_release(&f);
	}
}

static void
test_http_flow_refuses_a_bad_chunk(void)
{
	static const char	 s[] = "5\r\nhello\r\nzz\r\n";
	struct http_flow	 f;

	flow_with(&f, s, strlen(s), HTTP_BODY_CHUNKED, 0);
	CU_ASSERT(http_flow_frame(&f, false, FLOW_MAX_TRAILER) < 0);
	http_flow_release(&f);
}

static void
test_http_flow_close_ends_a_body_at_eof_only(void)
{
	static const char	 s[] = "all of it";
	struct http_flow	 f;

	flow_with(&f, s, strlen(s), HTTP_BODY_CLOSE, 0);
	CU_ASSERT(http_flow_frame(&f, false, FLOW_MAX_TRAILER) == 0);
	CU_ASSERT(!f.body_done);
	CU_ASSERT(f.in_fwd == strlen(s) && f.in_raw == strlen(s));
	CU_ASSERT(http_flow_frame(&f, true, FLOW_MAX_TRAILER) == 0);
	CU_ASSERT(f.body_done);
	http_flow_release(&f);
}

static void
test_http_flow_head_ready_at_first_line_and_blank_line(void)
{
	static const char	 s[] = "GET http://a/ HTTP/1.1\r\nHost: a\r\n"
				    "X: y\r\n\r\n";
	size_t			 first = strchr(s, '\n') - s + 1, k;
	struct http_flow	 f;
	bool			 ready;

	flow_with(&f, s, 0, HTTP_BODY_NONE, 0);
	f.head_done = false;
	for (k = 1; k <= strlen(s); k++) {
		f.in_len = (uint32_t)k;
		ready = http_flow_head_ready(&f);
		CHECKF(ready == (k == first || k == strlen(s)),
		    "%zu bytes: ready %d", k, ready);
	}
	http_flow_release(&f);
}

static void
test_http_flow_shift_keeps_the_next_message(void)
{
	static const char	 s[] = "0123456789GET /next";
	struct http_flow	 f;

	flow_with(&f, s, strlen(s), HTTP_BODY_LENGTH, 10);
	CU_ASSERT_FATAL(http_flow_frame(&f, false, FLOW_MAX_TRAILER) == 0);
	f.in_start = f.in_fwd;		/* the body was written */
	http_flow_shift(&f);
	CU_ASSERT(f.in_start == 0 && f.in_fwd == 0 && f.in_raw == 0);
	CU_ASSERT(f.in_len == 9 && memcmp(f.in, "GET /next", 9) == 0);
	http_flow_release(&f);
}

static void
test_http_flow_compact_gives_buffers_back(void)
{
	struct http_flow	 f;
	unsigned		 base = buf_in_use();

	flow_with(&f, "abc", 3, HTTP_BODY_LENGTH, 3);
	CU_ASSERT_FATAL(http_flow_frame(&f, false, FLOW_MAX_TRAILER) == 0);
	f.out = buf_get(BUF_SMALL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f.out);
	f.out_start = f.out_len = 7;	/* a head, all written */
	f.keep_out = true;		/* kept for a retry */
	http_flow_compact(&f);
	CU_ASSERT(f.out != NULL && f.in != NULL);
	f.keep_out = false;
	f.in_start = f.in_fwd;		/* the body was written */
	http_flow_compact(&f);
	CU_ASSERT(f.out == NULL && f.in == NULL);
	CU_ASSERT(buf_in_use() == base);
	http_flow_release(&f);
}

static int
http_flow_suite_init(void)
{
	buf_init(16384, 65536, 16);
	return 0;
}

static int
http_flow_suite_fini(void)
{
	buf_fini();
	return 0;
}

void
register_http_flow_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("http_flow", http_flow_suite_init,
	    http_flow_suite_fini)) == NULL)
		return;
	CU_add_test(s, "frames_a_length_exactly",
	    test_http_flow_frames_a_length_exactly);
	CU_add_test(s, "passes_chunks_as_they_are",
	    test_http_flow_passes_chunks_as_they_are);
	CU_add_test(s, "dechunks_for_an_http10_client",
	    test_http_flow_dechunks_for_an_http10_client);
	CU_add_test(s, "refuses_a_bad_chunk",
	    test_http_flow_refuses_a_bad_chunk);
	CU_add_test(s, "close_ends_a_body_at_eof_only",
	    test_http_flow_close_ends_a_body_at_eof_only);
	CU_add_test(s, "head_ready_at_first_line_and_blank_line",
	    test_http_flow_head_ready_at_first_line_and_blank_line);
	CU_add_test(s, "shift_keeps_the_next_message",
	    test_http_flow_shift_keeps_the_next_message);
	CU_add_test(s, "compact_gives_buffers_back",
	    test_http_flow_compact_gives_buffers_back);
}
