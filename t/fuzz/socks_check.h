/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stream property every SOCKS message parser in worker/socks_parse.c
 * promises, checked the same way for each (socks5.c, socks4.c): a parser
 * is wrapped as "parse these bytes, and write back what you read" (the
 * re-encoding is the round trip: it must give the bytes the message took).
 */
#ifndef PT_T_FUZZ_SOCKS_CHECK_H
#define PT_T_FUZZ_SOCKS_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/socks_parse.h"

/* Parses <buf>[0..<len>); on PARSE_OK writes the message as re-encoded
 * from the parsed struct into <enc> (at least <len> + 512 bytes) and
 * its length in *<enc_len>, and the bytes taken in *<used>; on
 * PARSE_BAD sets *<reply> (-2 when the parser has no reply). */
typedef int (*socks_check_fn)(const uint8_t *buf, size_t len, uint8_t *enc,
	    size_t *enc_len, size_t *used, int *reply);

/*
 * Checks <fn> on <data>[0..<len>): every prefix gives PARSE_AGAIN or the
 * verdict of the whole (same reply, same message); a message that parsed
 * re-encodes to exactly the bytes it took, parses alone from those bytes,
 * and one byte less is PARSE_AGAIN. Returns the whole's rc; *<used> the
 * bytes it took.
 */
int	socks_check_stream(const char *what, socks_check_fn fn,
	    const uint8_t *data, size_t len, size_t *used);
/* ATYP DST.ADDR DST.PORT of <d> at <p>; the length written. */
size_t	socks_check_enc_dest(uint8_t *p, const struct socks_dest *d);
/*
 * Whether <got> (<n> bytes: ATYP ADDR PORT as socks_fmt_dest writes it)
 * names the address encoded at <enc> (<enc_n> bytes, from
 * socks_check_enc_dest): the same bytes, but for an IPv4-mapped IPv6
 * address, which is written as IPv4 (ATYP 1, its last four bytes).
 */
bool	socks_check_fmt_dest(const uint8_t *got, size_t n,
	    const uint8_t *enc, size_t enc_n);

#endif
