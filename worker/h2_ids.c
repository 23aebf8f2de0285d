/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the client did with its recent stream IDs, to judge frames on its
 * streams once they are closed. nghttp2 keeps no closed stream (h2_init:
 * each would cost an idle connection memory), and its API shows none
 * anyway. RFC 9113 5.1 asks for three answers:
 *
 *   - a HEADERS on an ID that was never opened: a connection error
 *     PROTOCOL_ERROR (5.1.1, a new stream's ID must be above every one
 *     before; a DATA frame there is left to nghttp2, which ignores it);
 *   - a stream the client ended (END_STREAM) or reset: a frame after that
 *     is STREAM_CLOSED (a connection error after END_STREAM; after its
 *     RST_STREAM a stream error, which 5.4.1 lets us make the connection's);
 *   - a stream we closed first (our RST_STREAM, REFUSED_STREAM included):
 *     what the client sent before it saw that is ignored.
 *
 * HEADERS frames are judged from h2.c's h2_on_begin_frame. A DATA frame on
 * a closed stream nghttp2 drops before any callback, so h2_ids_recv looks
 * at the frame headers in the client's bytes as they go to nghttp2, and
 * judges a DATA frame once nghttp2 has taken every byte before it; other
 * frames on closed streams (WINDOW_UPDATE, RST_STREAM, PRIORITY) are
 * nghttp2's to ignore, as 5.1 says.
 *
 * Two bits for each of the last H2_IDS_RECENT client IDs (odd, by
 * (id >> 1) modulo the window): opened and done. Older IDs, beyond the
 * window: a HEADERS is taken as on an ended stream, a DATA frame is
 * ignored (it may cross our RST_STREAM of a long-lived tunnel); 5.1 lets
 * the time such frames are ignored be limited.
 *
 * The same walk counts empty DATA frames without END_STREAM in a row
 * (padding only is empty too; any frame with a payload ends the run):
 * more than H2_EMPTY_RUN_MAX is a flood that carries nothing
 * (CVE-2019-9518), answered with GOAWAY ENHANCE_YOUR_CALM. nghttp2 has
 * no guard of its own for it.
 */
#include "config.h"

#include <string.h>

#include "worker/h2_conn.h"

#define H2_HDR_LEN	9	/* a frame header */

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

/* The client ended stream <id> (in the window), so a DATA frame on it is
 * STREAM_CLOSED. */
static bool
h2_ids_data_closed(const struct h2_ids *r, int32_t id)
{
	return (id & 1) && h2_ids_recent(r, id) && h2_ids_has(r->done, id);
}

/* One more frame in the run of empty DATA frames (<empty>), or the run's
 * end: whether the run is now a flood. */
static bool
h2_ids_run(struct h2_ids *r, bool empty)
{
	if (!empty) {
		r->empty_run = 0;
		return false;
	}
	return ++r->empty_run > H2_EMPTY_RUN_MAX;
}

/* What the frame header in r->hdr (its payload's length in r->skip) does
 * to the run: an empty DATA frame without END_STREAM is one more, a frame
 * with a payload ends it, one without (a SETTINGS ACK) leaves it be. A
 * padded DATA frame is judged at its pad length (r->pad_check). Whether
 * the run is now a flood. */
static bool
h2_ids_empty_flood(struct h2_ids *r)
{
	bool	 data = r->hdr[3] == NGHTTP2_DATA &&
	    !(r->hdr[4] & NGHTTP2_FLAG_END_STREAM);

	if (r->skip == 0)
		return data && h2_ids_run(r, true);
	if (data && (r->hdr[4] & NGHTTP2_FLAG_PADDED)) {
		r->pad_check = true;
		return false;
	}
	return h2_ids_run(r, false);
}

/* The end of a flood: the client's bytes up to <upto> go to nghttp2, then
 * its GOAWAY ENHANCE_YOUR_CALM; h2_pump ends the connection as it ends
 * nghttp2's own floods (the GOAWAY goes out, then the close). */
static int
h2_ids_flood(struct h2_conn *h2, const uint8_t *fed, const uint8_t *upto)
{
	ssize_t	 rv;

	if (upto > fed && (rv = nghttp2_session_mem_recv(h2->session, fed,
	    (size_t)(upto - fed))) < 0)
		return (int)rv;
	return nghttp2_session_terminate_session(h2->session,
	    NGHTTP2_ENHANCE_YOUR_CALM) != 0 ? NGHTTP2_ERR_NOMEM :
	    NGHTTP2_ERR_FLOODED;
}

int
h2_ids_recv(struct h2_conn *h2, const uint8_t *b, size_t n)
{
	struct h2_ids	*r = &h2->ids;
	const uint8_t	*fed = b, *p = b, *end = b + n, *head;
	ssize_t		 rv;
	size_t		 k;
	int32_t		 id;

	while (p < end) {
		if (r->skip > 0) {
			/* A padded DATA frame's pad length: padding only
			 * (RFC 9113 6.1) carries as little as no payload. */
			if (r->pad_check) {
				r->pad_check = false;
				if (h2_ids_run(r, *p == r->skip - 1))
					return h2_ids_flood(h2, fed, p);
			}
			k = (size_t)(end - p) < r->skip ? (size_t)(end - p) :
			    r->skip;
			p += k;
			r->skip -= (uint32_t)k;
			continue;
		}
		/* Where this header began: here, or in an earlier read,
		 * whose bytes nghttp2 has. */
		head = r->hdr_len > 0 ? b : p;
		k = H2_HDR_LEN - r->hdr_len;
		if ((size_t)(end - p) < k)
			k = (size_t)(end - p);
		memcpy(r->hdr + r->hdr_len, p, k);
		r->hdr_len += (uint8_t)k;
		p += k;
		if (r->hdr_len < H2_HDR_LEN)
			break;
		r->hdr_len = 0;
		r->skip = (uint32_t)r->hdr[0] << 16 | (uint32_t)r->hdr[1] << 8 |
		    r->hdr[2];
		id = (int32_t)(((uint32_t)r->hdr[5] << 24 |
		    (uint32_t)r->hdr[6] << 16 | (uint32_t)r->hdr[7] << 8 |
		    r->hdr[8]) & 0x7fffffff);
		if (h2_ids_empty_flood(r))
			return h2_ids_flood(h2, fed, p);
		if (r->hdr[3] != NGHTTP2_DATA)
			continue;
		/* Every frame before it taken (the HEADERS that opened its
		 * stream may be among them), then the judgement. */
		if (head > fed) {
			rv = nghttp2_session_mem_recv(h2->session, fed,
			    (size_t)(head - fed));
			if (rv < 0)
				return (int)rv;
			fed = head;
		}
		if (h2_ids_data_closed(r, id) &&
		    nghttp2_session_terminate_session(h2->session,
		    NGHTTP2_STREAM_CLOSED) != 0)
			return NGHTTP2_ERR_NOMEM;
	}
	if (end > fed) {
		rv = nghttp2_session_mem_recv(h2->session, fed,
		    (size_t)(end - fed));
		if (rv < 0)
			return (int)rv;
	}
	return 0;
}
