/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What an HTTP/2 client reads from a server must be whole frames, one
 * after the other: a checker fed the bytes as they arrive, for fuzz
 * targets that play the client (t/fuzz/h2_conn.c).
 */
#ifndef PT_T_FUZZ_H2_FRAMES_H
#define PT_T_FUZZ_H2_FRAMES_H

#include <stddef.h>
#include <stdint.h>

/* Zeroed, then max_len set (h2_frames_max_len); no other set-up. */
struct h2_frames {
	uint8_t		 hd[9];		/* the frame header being read */
	size_t		 hd_len;
	uint32_t	 left;		/* payload bytes of the current frame */
	uint32_t	 max_len;	/* the client's largest MAX_FRAME_SIZE */
	unsigned long	 frames;	/* headers checked so far */
};

/* ---- t/fuzz/h2_frames.c ----------------------------------------------- */

/* Takes the next <n> bytes of the server's stream; each frame header,
 * once whole, goes through FUZZ_CHECK: the first a SETTINGS, no frame
 * longer than max_len, only the types a server sends, stream 0 exactly
 * where RFC 9113 puts them, the fixed lengths of fixed-size types. */
void	 h2_frames_feed(struct h2_frames *o, const uint8_t *p, size_t n);
/* The largest SETTINGS_MAX_FRAME_SIZE in the client's frames <p>[0..<n>)
 * (after the preface), 16384 when none: read as a frame sequence until
 * it ends or breaks, so a bound that can only be too generous. */
uint32_t h2_frames_max_len(const uint8_t *p, size_t n);

#endif
