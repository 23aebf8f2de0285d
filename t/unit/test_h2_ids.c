/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/h2_ids.c: the answer to a HEADERS frame on a client stream that
 * is not open, below the highest opened (RFC 9113 5.1): ignored when we
 * closed it first, STREAM_CLOSED when the client ended or reset it,
 * PROTOCOL_ERROR when it was skipped, STREAM_CLOSED beyond the window;
 * and the window moving as IDs grow, by small steps and by leaps.
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
#endif
}
