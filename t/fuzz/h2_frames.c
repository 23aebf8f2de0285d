/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The frame checker of t/fuzz/h2_frames.h. It reads frame headers only:
 * payloads are skipped by their length, so a stray byte in the stream (an
 * HTTP/1.1 answer, a frame cut short and followed by another) shows as a
 * header no server writes, long before it could pass for a frame.
 */
#include "config.h"

#include "t/fuzz/h2_frames.h"

#include <string.h>

#include "t/fuzz/fuzz.h"

static void
h2_frames_check(struct h2_frames *o)
{
	const uint8_t	*h = o->hd;
	uint32_t	 len = (uint32_t)h[0] << 16 | h[1] << 8 | h[2];
	uint32_t	 id = (uint32_t)h[5] << 24 | h[6] << 16 | h[7] << 8 |
			    h[8];
	uint8_t		 type = h[3];
	bool		 zero = id == 0;

	FUZZ_CHECK(o->frames > 0 || (type == 4 && !(h[4] & 1)), "frame 0 "
	    "is type %u flags %#x, not SETTINGS", type, h[4]);
	FUZZ_CHECK(len <= o->max_len, "frame %lu: %u bytes > %u (type %u)",
	    o->frames, len, o->max_len, type);
	FUZZ_CHECK((id & 0x80000000u) == 0, "frame %lu: reserved bit",
	    o->frames);
	switch (type) {
	case 0: case 1: case 9:		/* DATA, HEADERS, CONTINUATION */
		FUZZ_CHECK(!zero, "frame %lu: type %u on stream 0",
		    o->frames, type);
		break;
	case 3:				/* RST_STREAM */
		FUZZ_CHECK(!zero && len == 4, "frame %lu: RST_STREAM of %u "
		    "bytes on %u", o->frames, len, id);
		break;
	case 4:				/* SETTINGS */
		FUZZ_CHECK(zero && len % 6 == 0 && (!(h[4] & 1) || len == 0),
		    "frame %lu: SETTINGS of %u bytes on %u", o->frames, len,
		    id);
		break;
	case 6:				/* PING */
		FUZZ_CHECK(zero && len == 8, "frame %lu: PING of %u bytes",
		    o->frames, len);
		break;
	case 7:				/* GOAWAY */
		FUZZ_CHECK(zero && len >= 8, "frame %lu: GOAWAY of %u bytes",
		    o->frames, len);
		break;
	case 8:				/* WINDOW_UPDATE */
		FUZZ_CHECK(len == 4, "frame %lu: WINDOW_UPDATE of %u bytes",
		    o->frames, len);
		break;
	default:
		FUZZ_CHECK(false, "frame %lu: type %u from a server",
		    o->frames, type);
	}
	o->frames++;
	o->left = len;
	o->hd_len = 0;
}

void
h2_frames_feed(struct h2_frames *o, const uint8_t *p, size_t n)
{
	size_t	 k;

	while (n > 0) {
		if (o->left > 0) {
			k = n < o->left ? n : o->left;
			o->left -= (uint32_t)k;
		} else {
			k = n < 9 - o->hd_len ? n : 9 - o->hd_len;
			memcpy(o->hd + o->hd_len, p, k);
			if ((o->hd_len += k) == 9)
				h2_frames_check(o);
		}
		p += k;
		n -= k;
	}
}

/* Every SETTINGS is counted, even one nghttp2 never reached (after a
 * frame that ended the connection): too generous rather than too strict. */
uint32_t
h2_frames_max_len(const uint8_t *p, size_t n)
{
	uint32_t	 max = 16384, len, v, i;

	while (n >= 9) {
		len = (uint32_t)p[0] << 16 | p[1] << 8 | p[2];
		if (n - 9 < len)
			break;
		if (p[3] == 4 && !(p[4] & 1) && len % 6 == 0)
			for (i = 0; i < len; i += 6) {
				v = (uint32_t)p[9 + i + 2] << 24 |
				    p[9 + i + 3] << 16 | p[9 + i + 4] << 8 |
				    p[9 + i + 5];
				if (p[9 + i] == 0 && p[9 + i + 1] == 5 &&
				    v > max && v < (1u << 24))
					max = v;
			}
		p += 9 + len;
		n -= 9 + len;
	}
	return max;
}
