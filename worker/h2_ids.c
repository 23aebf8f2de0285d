/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the client did with its recent stream IDs, to judge a HEADERS frame
 * on a stream that is not open below the highest it opened (h2.c,
 * h2_on_begin_frame: nghttp2's API shows no closed stream). RFC 9113 5.1
 * asks for three answers:
 *
 *   - an ID that was never opened: a connection error PROTOCOL_ERROR
 *     (5.1.1, a new stream's ID must be above every one before);
 *   - a stream the client ended (END_STREAM) or reset: a frame after that
 *     is STREAM_CLOSED (a connection error after END_STREAM; after its
 *     RST_STREAM a stream error, which 5.4.1 lets us make the connection's);
 *   - a stream we closed first (our RST_STREAM, REFUSED_STREAM included):
 *     what the client sent before it saw that is ignored (trailers, say).
 *
 * Two bits for each of the last H2_IDS_RECENT client IDs (odd, by
 * (id >> 1) modulo the window): opened and done. Older IDs, beyond the
 * window, are taken as ended: 5.1 lets the time such frames are ignored
 * be limited.
 */
#include "config.h"

#include <string.h>

#include "worker/h2_conn.h"

static unsigned
h2_ids_slot(int32_t id)
{
	return ((uint32_t)id >> 1) % H2_IDS_RECENT;
}

static void
h2_ids_set(uint64_t *bits, int32_t id)
{
	unsigned	 i = h2_ids_slot(id);

	bits[i / 64] |= (uint64_t)1 << (i % 64);
}

static void
h2_ids_clear(struct h2_ids *r, int32_t id)
{
	unsigned	 i = h2_ids_slot(id);
	uint64_t	 m = ~((uint64_t)1 << (i % 64));

	r->opened[i / 64] &= m;
	r->done[i / 64] &= m;
}

static bool
h2_ids_has(const uint64_t *bits, int32_t id)
{
	unsigned	 i = h2_ids_slot(id);

	return (bits[i / 64] >> (i % 64)) & 1;
}

/* Whether <id> (at most the highest) is still in the window. */
static bool
h2_ids_recent(const struct h2_ids *r, int32_t id)
{
	return id > 0 && id <= r->last &&
	    (uint32_t)(r->last - id) / 2 < H2_IDS_RECENT;
}

void
h2_ids_open(struct h2_ids *r, int32_t id)
{
	int32_t	 i;

	if (!(id & 1) || id <= r->last)
		return;
	if ((uint32_t)(id - r->last) / 2 >= H2_IDS_RECENT) {
		memset(r->opened, 0, sizeof(r->opened));
		memset(r->done, 0, sizeof(r->done));
	} else {
		/* The IDs skipped on the way were never opened. */
		for (i = r->last + 2; i <= id; i += 2)
			h2_ids_clear(r, i);
	}
	r->last = id;
	h2_ids_set(r->opened, id);
}

void
h2_ids_done(struct h2_ids *r, int32_t id)
{
	if ((id & 1) && h2_ids_recent(r, id))
		h2_ids_set(r->done, id);
}

uint32_t
h2_ids_judge(const struct h2_ids *r, int32_t id)
{
	if (!h2_ids_recent(r, id))
		return NGHTTP2_STREAM_CLOSED;
	if (!h2_ids_has(r->opened, id))
		return NGHTTP2_PROTOCOL_ERROR;
	if (h2_ids_has(r->done, id))
		return NGHTTP2_STREAM_CLOSED;
	return NGHTTP2_NO_ERROR;
}
