/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/h2_ids.c: the answer to a HEADERS frame on a client stream that
 * is not open, below the highest opened (RFC 9113 5.1): ignored when we
 * closed it first, STREAM_CLOSED when the client ended or reset it,
 * PROTOCOL_ERROR when it was skipped, STREAM_CLOSED beyond the window;
 * the window moving as IDs grow, by small steps and by leaps; and runs of
 * empty DATA frames counted through h2_ids_recv into a real nghttp2
 * session, the one past H2_EMPTY_RUN_MAX answered ENHANCE_YOUR_CALM.
 */
#include "config.h"

#include <string.h>

#include <CUnit/CUnit.h>

#include "t/unit/check.h"
#include "t/unit/suites.h"

#ifdef HAVE_NGHTTP2
#include "worker/h2_conn.h"

static void
test_h2_ids_judges_closed_skipped_and_ended(void)
{
	struct h2_ids	 r;

	memset(&r, 0, sizeof(r));
	h2_ids_open(&r, 1);
	h2_ids_open(&r, 5);		/* 3 skipped */
	h2_ids_open(&r, 7);
	h2_ids_done(&r, 5);		/* the client ended 5 */
	CU_ASSERT(r.last == 7);
	CU_ASSERT(h2_ids_judge(&r, 1) == NGHTTP2_NO_ERROR);
	CU_ASSERT(h2_ids_judge(&r, 3) == NGHTTP2_PROTOCOL_ERROR);
	CU_ASSERT(h2_ids_judge(&r, 5) == NGHTTP2_STREAM_CLOSED);
	CU_ASSERT(h2_ids_judge(&r, 7) == NGHTTP2_NO_ERROR);
	h2_ids_done(&r, 1);
	CU_ASSERT(h2_ids_judge(&r, 1) == NGHTTP2_STREAM_CLOSED);
	/* Even IDs and lower IDs open nothing. */
	h2_ids_open(&r, 8);
	h2_ids_open(&r, 3);
	CU_ASSERT(r.last == 7);
	CU_ASSERT(h2_ids_judge(&r, 3) == NGHTTP2_PROTOCOL_ERROR);
}

static void
test_h2_ids_window_moves_and_forgets(void)
{
	struct h2_ids	 r;
	int32_t		 id, top = 2 * H2_IDS_RECENT + 1;

	memset(&r, 0, sizeof(r));
	/* Every ID up to top, each ended: then the slots come round again,
	 * and a slot reused by a new ID forgets the old one's bits. */
	for (id = 1; id <= top; id += 2) {
		h2_ids_open(&r, id);
		h2_ids_done(&r, id);
	}
	CU_ASSERT(h2_ids_judge(&r, top) == NGHTTP2_STREAM_CLOSED);
	h2_ids_open(&r, top + 4);	/* top + 2 skipped: its slot was
					 * top + 2 - 2 * H2_IDS_RECENT's */
	CU_ASSERT(h2_ids_judge(&r, top + 2) == NGHTTP2_PROTOCOL_ERROR);
	CU_ASSERT(h2_ids_judge(&r, top + 4) == NGHTTP2_NO_ERROR);
	/* The oldest still in the window, and the first beyond it. */
	id = top + 4 - 2 * (H2_IDS_RECENT - 1);
	CU_ASSERT(h2_ids_judge(&r, id) == NGHTTP2_STREAM_CLOSED);
	h2_ids_done(&r, top + 4);
	CU_ASSERT(h2_ids_judge(&r, id - 2) == NGHTTP2_STREAM_CLOSED);
	/* A leap past the whole window: nothing below it was opened. */
	h2_ids_open(&r, top + 4 + 4 * H2_IDS_RECENT);
	for (id = top + 6; id < top + 4 + 4 * H2_IDS_RECENT; id += 2)
		if (h2_ids_judge(&r, id) !=
		    (id > top + 4 + 2 * H2_IDS_RECENT ? NGHTTP2_PROTOCOL_ERROR :
		    NGHTTP2_STREAM_CLOSED)) {
			CHECKF(0, "after the leap, stream %d judged %u", id,
			    h2_ids_judge(&r, id));
			break;
		}
	/* Done on an ID beyond the window sets nothing in it. */
	h2_ids_done(&r, 1);
	CU_ASSERT(h2_ids_judge(&r, r.last - 2) == NGHTTP2_PROTOCOL_ERROR);
	CU_ASSERT(h2_ids_judge(&r, r.last) == NGHTTP2_NO_ERROR);
}

/* A frame header and <len> bytes of payload (zeros: none is read). */
static size_t
ids_frame(uint8_t *b, uint8_t type, uint8_t flags, int32_t id, size_t len,
    const void *payload)
{
	b[0] = (uint8_t)(len >> 16);
	b[1] = (uint8_t)(len >> 8);
	b[2] = (uint8_t)len;
	b[3] = type;
	b[4] = flags;
	b[5] = (uint8_t)(id >> 24);
	b[6] = (uint8_t)(id >> 16);
	b[7] = (uint8_t)(id >> 8);
	b[8] = (uint8_t)id;
	memcpy(b + 9, payload, len);
	return 9 + len;
}

/* A server session as the worker has one, the client's preface, SETTINGS
 * and a POST on stream 1 taken (its body to follow). */
static void
ids_session(struct h2_conn *h2)
{
	nghttp2_session_callbacks	*cb;
	/* :method POST, :scheme http, :path /, :authority "a" */
	static const uint8_t		 block[] = { 0x83, 0x86, 0x84, 0x41,
					    0x01, 'a' };
	uint8_t				 b[64];
	size_t				 n;

	memset(h2, 0, sizeof(*h2));
	CU_ASSERT_FATAL(nghttp2_session_callbacks_new(&cb) == 0);
	CU_ASSERT_FATAL(nghttp2_session_server_new(&h2->session, cb, h2) ==
	    0);
	nghttp2_session_callbacks_del(cb);
	h2->ids.skip = NGHTTP2_CLIENT_MAGIC_LEN;
	memcpy(b, NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
	n = NGHTTP2_CLIENT_MAGIC_LEN;
	n += ids_frame(b + n, NGHTTP2_SETTINGS, 0, 0, 0, "");
	n += ids_frame(b + n, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
	    sizeof(block), block);
	CU_ASSERT_FATAL(h2_ids_recv(h2, b, n) == 0);
	CU_ASSERT_FATAL(nghttp2_session_want_read(h2->session));
}

/* Empty DATA frames on stream 1 (<flags> on each), fed at once. */
static int
ids_empty(struct h2_conn *h2, int frames, uint8_t flags)
{
	uint8_t		 b[9 * (H2_EMPTY_RUN_MAX + 1)];
	size_t		 n = 0;

	while (frames-- > 0)
		n += ids_frame(b + n, NGHTTP2_DATA, flags, 1, 0, "");
	return h2_ids_recv(h2, b, n);
}

/* The error code of the GOAWAY among what the session has to send, or -1
 * if there is none. */
static long
ids_goaway(struct h2_conn *h2)
{
	const uint8_t	*p, *end;
	ssize_t		 n;

	n = nghttp2_session_mem_send(h2->session, &p);
	if (n < 0)
		return -1;
	for (end = p + n; end - p >= 9; p += 9 + (p[0] << 16 | p[1] << 8 |
	    p[2]))
		if (p[3] == NGHTTP2_GOAWAY && end - p >= 17)
			return (long)((uint32_t)p[13] << 24 |
			    (uint32_t)p[14] << 16 | (uint32_t)p[15] << 8 |
			    p[16]);
	return -1;
}

static void
test_h2_ids_empty_data_runs(void)
{
	struct h2_conn	 h2;
	uint8_t		 b[32];
	size_t		 n;

	/* A run of the most allowed, a frame with a payload (the run
	 * ends), the most again: let be. One more is a flood. */
	ids_session(&h2);
	CU_ASSERT(ids_empty(&h2, H2_EMPTY_RUN_MAX, 0) == 0);
	n = ids_frame(b, NGHTTP2_DATA, 0, 1, 1, "x");
	CU_ASSERT(h2_ids_recv(&h2, b, n) == 0);
	CU_ASSERT(ids_empty(&h2, H2_EMPTY_RUN_MAX, 0) == 0);
	CU_ASSERT(ids_goaway(&h2) == -1);
	/* The next header split across two reads. */
	n = ids_frame(b, NGHTTP2_DATA, 0, 1, 0, "");
	CU_ASSERT(h2_ids_recv(&h2, b, 4) == 0);
	CU_ASSERT(h2_ids_recv(&h2, b + 4, n - 4) == NGHTTP2_ERR_FLOODED);
	CU_ASSERT(ids_goaway(&h2) == NGHTTP2_ENHANCE_YOUR_CALM);
	nghttp2_session_del(h2.session);

	/* An empty frame that ends the stream is not one of the run. */
	ids_session(&h2);
	CU_ASSERT(ids_empty(&h2, H2_EMPTY_RUN_MAX, 0) == 0);
	CU_ASSERT(ids_empty(&h2, 1, NGHTTP2_FLAG_END_STREAM) == 0);
	CU_ASSERT(ids_goaway(&h2) == -1);
	nghttp2_session_del(h2.session);

	/* Padding only is empty too, its pad length in the next read or
	 * not; a padded frame with a byte of data ends the run. */
	ids_session(&h2);
	CU_ASSERT(ids_empty(&h2, H2_EMPTY_RUN_MAX - 1, 0) == 0);
	n = ids_frame(b, NGHTTP2_DATA, NGHTTP2_FLAG_PADDED, 1, 6,
	    "\x04" "x\0\0\0\0");
	CU_ASSERT(h2_ids_recv(&h2, b, n) == 0);
	CU_ASSERT(ids_empty(&h2, H2_EMPTY_RUN_MAX - 1, 0) == 0);
	n = ids_frame(b, NGHTTP2_DATA, NGHTTP2_FLAG_PADDED, 1, 5,
	    "\x04\0\0\0\0");
	CU_ASSERT(h2_ids_recv(&h2, b, n) == 0);
	n = ids_frame(b, NGHTTP2_DATA, NGHTTP2_FLAG_PADDED, 1, 1, "\0");
	CU_ASSERT(h2_ids_recv(&h2, b, 9) == 0);
	CU_ASSERT(h2_ids_recv(&h2, b + 9, n - 9) == NGHTTP2_ERR_FLOODED);
	CU_ASSERT(ids_goaway(&h2) == NGHTTP2_ENHANCE_YOUR_CALM);
	nghttp2_session_del(h2.session);

	/* Nor does the run stop at a read's end. */
	ids_session(&h2);
	CU_ASSERT(ids_empty(&h2, H2_EMPTY_RUN_MAX / 2, 0) == 0);
	CU_ASSERT(ids_empty(&h2, H2_EMPTY_RUN_MAX / 2 + 1, 0) ==
	    NGHTTP2_ERR_FLOODED);
	nghttp2_session_del(h2.session);
}
#endif

void
register_h2_ids_suite(void)
{
#ifdef HAVE_NGHTTP2
	CU_pSuite	 s;

	if ((s = CU_add_suite("h2_ids", NULL, NULL)) == NULL)
		return;
	CU_add_test(s, "judges_closed_skipped_and_ended",
	    test_h2_ids_judges_closed_skipped_and_ended);
	CU_add_test(s, "window_moves_and_forgets",
	    test_h2_ids_window_moves_and_forgets);
	CU_add_test(s, "empty_data_runs", test_h2_ids_empty_data_runs);
#endif
}
