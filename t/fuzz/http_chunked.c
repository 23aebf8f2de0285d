/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the chunked decoder (http_chunked_feed, worker/
 * http_parse.c). Input: one byte of max_trailer (times 4), then the body.
 * The body is fed whole (calling again as the decoder stops after each
 * data span, as the proxy does), a byte at a time, and in pseudo-random
 * pieces seeded from the input; all three must agree on the verdict, the
 * bytes consumed and the decoded data. Each call's report must be
 * coherent: consumed within the piece, one data span ending the consumed
 * bytes, nothing consumed after the end, every call failing after an
 * error. The decoded data is then checked against an independent reading
 * of the sizes (a de-chunker written here the simple way).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "worker/http_parse.h"

struct feed_result {
	int	 verdict;	/* 1 done, 0 needs more, -1 error */
	size_t	 consumed;
	char	*data;		/* decoded bytes */
	size_t	 dlen;
};

/*
 * Feeds <body>[0..<len>) in pieces whose sizes come from <rng> (NULL:
 * one piece; *rng == 0: one byte each). Every piece is its own exact-size
 * heap block.
 */
static void
feed(const uint8_t *body, size_t len, size_t max_trailer, uint64_t *rng,
    struct feed_result *out)
{
	struct http_chunked	 ch;
	size_t			 pos = 0, piece, off, dlen, at;
	ssize_t			 n;
	char			*p;

	memset(&ch, 0, sizeof(ch));
	memset(out, 0, sizeof(*out));
	out->data = malloc(len + 1);
	FUZZ_CHECK(out->data != NULL, "memory");
	while (pos < len) {
		if (rng == NULL)
			piece = len - pos;
		else if (*rng == 0)
			piece = 1;
		else
			piece = 1 + fuzz_rand(rng) % (len - pos < 64 ?
			    len - pos : 64);
		p = fuzz_dup(body + pos, piece, false);
		at = 0;
		/* The decoder stops after a data span: call again on the rest
		 * of the piece, as the proxy's flow does. */
		while (at < piece) {
			n = http_chunked_feed(&ch, p + at, piece - at,
			    max_trailer, &off, &dlen);
			if (n < 0) {
				out->verdict = -1;
				n = http_chunked_feed(&ch, p + at, piece - at,
				    max_trailer, &off, &dlen);
				FUZZ_CHECK(n == -1, "a call after an error "
				    "gave %zd", n);
				free(p);
				return;
			}
			FUZZ_CHECK((size_t)n <= piece - at, "consumed %zd of "
			    "%zu", n, piece - at);
			if (dlen > 0)
				FUZZ_CHECK(off + dlen == (size_t)n,
				    "data [%zu, +%zu) does not end the %zd "
				    "consumed", off, dlen, n);
			else
				FUZZ_CHECK(off == 0, "offset without data");
			memcpy(out->data + out->dlen, p + at + off, dlen);
			out->dlen += dlen;
			at += (size_t)n;
			out->consumed += (size_t)n;
			if (ch.done)
				break;
			FUZZ_CHECK(n > 0, "no progress on %zu bytes",
			    piece - at);
		}
		free(p);
		if (ch.done) {
			/* The rest belongs to the next message. */
			n = http_chunked_feed(&ch, (const char *)body,
			    len > 0 ? 1 : 0, max_trailer, &off, &dlen);
			FUZZ_CHECK(n == 0 && dlen == 0, "%zd consumed after "
			    "the end", n);
			out->verdict = 1;
			return;
		}
		pos += piece;
	}
	out->verdict = 0;
}

static void
same(const struct feed_result *a, const struct feed_result *b,
    const char *what)
{
	FUZZ_CHECK(a->verdict == b->verdict, "%s: verdict %d, whole %d",
	    what, b->verdict, a->verdict);
	if (a->verdict < 0)
		return;
	FUZZ_CHECK(a->consumed == b->consumed, "%s: consumed %zu, whole %zu",
	    what, b->consumed, a->consumed);
	FUZZ_CHECK(a->dlen == b->dlen && memcmp(a->data, b->data, a->dlen) ==
	    0, "%s: decoded %zu bytes, whole %zu (or other bytes)", what,
	    b->dlen, a->dlen);
}

static int
hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * For a body the decoder accepted: the sizes read naively (hex digits,
 * then skip to the LF, then the data and its CRLF) must give the same
 * data and end where the decoder's zero chunk did (before its trailers).
 */
static void
reference(const uint8_t *b, size_t len, const struct feed_result *r)
{
	size_t		 pos = 0, dpos = 0;
	uint64_t	 size;
	int		 v;

	for (;;) {
		size = 0;
		while (pos < len && (v = hexval(b[pos])) >= 0) {
			size = size << 4 | (unsigned)v;
			pos++;
		}
		while (pos < len && b[pos] != '\n')
			pos++;
		FUZZ_CHECK(pos < len, "reference: size line without LF");
		pos++;
		if (size == 0)
			break;
		FUZZ_CHECK(size <= len - pos && dpos + size <= r->dlen &&
		    memcmp(b + pos, r->data + dpos, size) == 0,
		    "reference: chunk of %llu at %zu differs",
		    (unsigned long long)size, pos);
		pos += size;
		dpos += size;
		FUZZ_CHECK(pos + 2 <= len && b[pos] == '\r' &&
		    b[pos + 1] == '\n', "reference: no CRLF after data");
		pos += 2;
	}
	FUZZ_CHECK(dpos == r->dlen, "reference: %zu data bytes, decoder %zu",
	    dpos, r->dlen);
	FUZZ_CHECK(pos <= r->consumed, "reference: zero chunk ends past the "
	    "consumed bytes");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct feed_result	 whole, bytes, pieces;
	size_t			 max_trailer;
	uint64_t		 rng, one = 0;
	size_t			 i;

	if (len < 1)
		return 0;
	max_trailer = (size_t)data[0] * 4;
	data++;
	len--;
	rng = 0x9e3779b97f4a7c15ULL ^ len;
	for (i = 0; i < len && i < 16; i++)
		rng = rng * 131 + data[i];
	rng |= 1;
	feed(data, len, max_trailer, NULL, &whole);
	feed(data, len, max_trailer, &one, &bytes);
	feed(data, len, max_trailer, &rng, &pieces);
	same(&whole, &bytes, "a byte at a time");
	same(&whole, &pieces, "random pieces");
	if (whole.verdict == 1)
		reference(data, len, &whole);
	FUZZ_CHECK(whole.consumed <= len, "consumed past the input");
	free(whole.data);
	free(bytes.data);
	free(pieces.data);
	return 0;
}
