/* SPDX-License-Identifier: BSD-2-Clause */
/* What every wire-format parser answers (STYLE.md 8). */
#ifndef PT_COMMON_PARSE_H
#define PT_COMMON_PARSE_H

enum parse_rc {
	PARSE_OK = 0,
	PARSE_AGAIN = 1,	/* need more bytes */
	PARSE_BAD = -1,		/* the input is wrong; the parser says why */
};

#endif
