/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Access log records as text: Squid's native access.log layout, the
 * Apache/nginx combined layout, and JSON lines. Every byte a client
 * controls (target, user, User-Agent, Referer, method) goes through an
 * escaper that keeps the line one line and the fields where a reader
 * expects them; every field has a budget, so a record never passes
 * AL_REC_MAX whatever the input.
 *
 * It does no I/O: the caller owns the buffer and decides where it goes.
 */
#include "config.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "modules/accesslog/fmt.h"

static const char al_hex[] = "0123456789abcdef";
static const char *const al_months[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
};

/* The end of the buffer: what fits of <s>, the rest cut. */
static void __attribute__((noinline))
al_put_cut(struct al_out *o, const char *s, size_t len)
{
	len = o->cap - 1 - o->len;
	memcpy(o->p + o->len, s, len);
	o->len += len;
}

/* The common case first, with <len> as the caller has it: a literal's
 * length stays a constant, so its copy is a few moves in place. */
static inline __attribute__((always_inline)) void
al_put(struct al_out *o, const char *s, size_t len)
{
	if (__builtin_expect(len > o->cap - 1 - o->len, 0)) {
		al_put_cut(o, s, len);
		return;
	}
	memcpy(o->p + o->len, s, len);
	o->len += len;
}

/* Inlined everywhere: most arguments are literals, whose length then
 * folds into a constant. */
static inline __attribute__((always_inline)) void
al_puts(struct al_out *o, const char *s)
{
	al_put(o, s, strlen(s));
}

static void
al_putc(struct al_out *o, char c)
{
	if (o->len < o->cap - 1)
		o->p[o->len++] = c;
}

static void __attribute__((format(printf, 2, 3)))
al_printf(struct al_out *o, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	o->len += (size_t)n < o->cap - 1 - o->len ? (size_t)n :
	    o->cap - 1 - o->len;
}

/* Decimal digits of <v>, without printf (a record has a dozen numbers). */
static const char al_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* The number of decimal digits of <v>. */
static inline __attribute__((always_inline)) unsigned
al_ndigits(uint64_t v)
{
	unsigned	 n = 1;

	if (v < 100000)		/* ports, statuses, sizes: no division */
		return v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ?
		    4 : 5;
	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/* The digits of <v> written backwards, ending just before <e>, two a
 * step (half the divisions of the plain loop). */
static inline __attribute__((always_inline)) void
al_digits_back(char *e, uint64_t v)
{
	unsigned	 d;
	uint32_t	 w;

	while (v > UINT32_MAX) {
		d = (unsigned)(v % 100) * 2;
		v /= 100;
		*--e = al_pairs[d + 1];
		*--e = al_pairs[d];
	}
	/* 32-bit divisions from here: most numbers start here. */
	w = (uint32_t)v;
	while (w >= 100) {
		d = (w % 100) * 2;
		w /= 100;
		*--e = al_pairs[d + 1];
		*--e = al_pairs[d];
	}
	if (w >= 10) {
		e -= 2;
		memcpy(e, al_pairs + w * 2, 2);
	} else
		*--e = (char)('0' + w);
}

/* A number that reaches the end of the buffer: what fits of it. */
static void __attribute__((noinline))
al_put_u64_cut(struct al_out *o, uint64_t v)
{
	char		 buf[20];
	unsigned	 n = al_ndigits(v);

	al_digits_back(buf + n, v);
	al_put(o, buf, n);
}

/* In place (a record has a dozen numbers): no buffer, no copy. */
static void
al_put_u64(struct al_out *o, uint64_t v)
{
	unsigned	 n = al_ndigits(v);

	if (__builtin_expect(n > o->cap - 1 - o->len, 0)) {
		al_put_u64_cut(o, v);
		return;
	}
	al_digits_back(o->p + o->len + n, v);
	o->len += n;
}

static void
al_put_int(struct al_out *o, int v)
{
	if (v < 0) {
		al_putc(o, '-');
		al_put_u64(o, (uint64_t)-(int64_t)v);
	} else
		al_put_u64(o, (uint64_t)v);
}

/* <v> in exactly <w> digits, zero-padded (v < 10^w). */
static void
al_put_digits(struct al_out *o, unsigned v, int w)
{
	char	 buf[10];
	int	 i;

	for (i = w - 1; i >= 0; i--) {
		buf[i] = (char)('0' + v % 10);
		v /= 10;
	}
	al_put(o, buf, (size_t)w);
}

/*
 * Bytes each escaper copies as they are, so runs of them go in one
 * memcpy: JSON (printable ASCII but '"' and '\\'), quoted (the same),
 * squid (printable ASCII but the space). One table lookup a byte.
 */
#define AL_SAFE_JSON	0x01
#define AL_SAFE_SQUID	0x02
static const unsigned char al_safe[256] = {
	[0x20] = AL_SAFE_JSON,
	[0x21] = AL_SAFE_JSON | AL_SAFE_SQUID,
	[0x22] = AL_SAFE_SQUID,				/* " */
	[0x23 ... 0x5b] = AL_SAFE_JSON | AL_SAFE_SQUID,
	[0x5c] = AL_SAFE_SQUID,				/* \ */
	[0x5d ... 0x7e] = AL_SAFE_JSON | AL_SAFE_SQUID,
};

/* Whether none of the eight bytes in <x> is one the class <safe> (and,
 * with <space_unsafe>, the space) refuses. Bit tricks on the whole word:
 * a byte >= 0x80 has its top bit; (x - n) & ~x & 0x80.. finds a byte
 * below n (a borrow can only add a hit above a real one); a zero byte of
 * x ^ c is a byte equal to c. */
#define AL_ONES		0x0101010101010101ULL
#define AL_HIGHS	0x8080808080808080ULL
#define AL_HAS_BELOW(x, n)	(((x) - AL_ONES * (n)) & ~(x) & AL_HIGHS)
#define AL_HAS_BYTE(x, c)	AL_HAS_BELOW((x) ^ (AL_ONES * (c)), 1)
static inline __attribute__((always_inline)) bool
al_word_safe(uint64_t x, unsigned safe, bool space_unsafe)
{
	uint64_t	 bad = (x & AL_HIGHS) | AL_HAS_BYTE(x, 0x7f);

	if (safe == AL_SAFE_JSON)
		bad |= AL_HAS_BELOW(x, 0x20) | AL_HAS_BYTE(x, '"') |
		    AL_HAS_BYTE(x, '\\');
	else
		bad |= AL_HAS_BELOW(x, 0x21);
	if (space_unsafe)
		bad |= AL_HAS_BYTE(x, ' ');
	return bad == 0;
}

#ifdef __SSE2__
/* The bytes of the 16 at <p> that the class <safe> (and, with
 * <space_unsafe>, the space) refuses, one bit each. A signed compare
 * finds the controls and every byte >= 0x80 at once. */
static inline __attribute__((always_inline)) unsigned
al_vec_bad(const unsigned char *p, unsigned safe, bool space_unsafe)
{
	__m128i	 v = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i	 bad;

	bad = _mm_cmplt_epi8(v, _mm_set1_epi8(safe == AL_SAFE_JSON ?
	    0x20 : 0x21));
	bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
	if (safe == AL_SAFE_JSON) {
		bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
		bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v,
		    _mm_set1_epi8('\\')));
	}
	if (space_unsafe)
		bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8(' ')));
	return (unsigned)_mm_movemask_epi8(bad);
}
#endif

/* The length of the run of bytes from <i> that the class <safe> accepts
 * (and, with <space_unsafe>, that are not a space): eight at a time
 * while a whole word is safe, then one by one. */
static inline __attribute__((always_inline)) size_t
al_run(const unsigned char *u, size_t i, size_t len, unsigned safe,
    bool space_unsafe)
{
	size_t		 j = i;
	uint64_t	 x;
#ifdef __SSE2__
	unsigned	 m;

	/* Sixteen at a time; the first refused byte is the mask's lowest
	 * bit. A tail under 16 after whole blocks: the last 16 bytes, less
	 * those already known safe. */
	while (len - j >= 16) {
		if ((m = al_vec_bad(u + j, safe, space_unsafe)) != 0)
			return j + (size_t)__builtin_ctz(m) - i;
		j += 16;
	}
	if (j > i && j < len) {
		m = al_vec_bad(u + len - 16, safe, space_unsafe) &
		    (0xffffu << (j - (len - 16)));
		return (m == 0 ? len : len - 16 + (size_t)__builtin_ctz(m)) -
		    i;
	}
#endif
	while (len - j >= 8) {
		memcpy(&x, u + j, 8);
		if (!al_word_safe(x, safe, space_unsafe))
			break;
		j += 8;
	}
	/* A tail under eight bytes after safe words: the last eight bytes
	 * as one word (it overlaps the safe ones before j). */
	if (j > i && j < len && len - j < 8) {
		memcpy(&x, u + len - 8, 8);
		if (al_word_safe(x, safe, space_unsafe))
			return len - i;
	}
	if (space_unsafe)
		while (j < len && (al_safe[u[j]] & safe) && u[j] != ' ')
			j++;
	else
		while (j < len && (al_safe[u[j]] & safe))
			j++;
	return j - i;
}

/* Copies the run u[i..i+n) within the field's budget; returns how many
 * bytes went (fewer than <n>: the field is cut there). */
static size_t
al_put_run(struct al_out *o, size_t start, size_t budget, const char *s,
    size_t n, bool last)
{
	size_t	 used = o->len - start, k, capk;

	if (o->len + n + 3 <= o->cap - 1 && used + n + (last ? 0 : 3) <= budget) {
		al_put(o, s, n);
		return n;
	}
	k = budget > used + 3 ? budget - used - 3 : 0;
	capk = o->cap - 1 - o->len > 3 ? o->cap - 1 - o->len - 3 : 0;
	if (k > capk)
		k = capk;
	if (k > n)
		k = n;
	al_put(o, s, k);
	return k;
}

/*
 * What a UTF-8 lead byte <c> promises (RFC 3629): the sequence's length
 * (0: <c> leads none) and the range of its second byte, which rules out
 * overlong forms, surrogates and code points above U+10FFFF.
 */
static size_t
al_utf8_lead(unsigned char c, unsigned char *lo, unsigned char *hi)
{
	*lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
	*hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/* The length of the valid UTF-8 sequence at <s>, or 0. */
static size_t
al_utf8_len(const unsigned char *s, size_t len)
{
	unsigned char	 lo, hi;
	size_t		 n = al_utf8_lead(s[0], &lo, &hi), i;

	if (n == 0 || len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/*
 * How many bytes at <s> (which start no valid sequence) one U+FFFD
 * replaces: the maximal subpart of a sequence (Unicode 15, 3.9, the
 * practice WHATWG and Python follow), so a sequence cut short is one
 * replacement and a stray byte is one.
 */
static size_t
al_utf8_bad_len(const unsigned char *s, size_t len)
{
	unsigned char	 lo, hi;
	size_t		 n = al_utf8_lead(s[0], &lo, &hi), k;

	if (n == 0 || len < 2 || s[1] < lo || s[1] > hi)
		return 1;
	for (k = 2; k < n && k < len && (s[k] & 0xc0) == 0x80; k++)
		;
	return k;
}

/* Room left for a piece of <n> bytes within a field's <budget> that
 * started at <start>, keeping 3 bytes for the "..." of a cut. */
static bool
al_fits(const struct al_out *o, size_t start, size_t budget, size_t n,
    bool last)
{
	size_t	 used = o->len - start;

	if (o->len + n + 3 > o->cap - 1)
		return false;
	return used + n + (last ? 0 : 3) <= budget;
}

/*
 * The escape of the valid sequence u[0..n) when it is U+0085, U+2028 or
 * U+2029, else NULL. JSON allows them raw, but Python's str.splitlines
 * and JavaScript before ES2019 end a line at each, which would split a
 * record for a line-oriented reader. Only reached for bytes >= 0x80, so
 * an ASCII field never pays for it.
 */
static const char *
al_json_line_end(const unsigned char *u, size_t n)
{
	if (n == 2 && u[0] == 0xc2 && u[1] == 0x85)
		return "\\u0085";
	if (n == 3 && u[0] == 0xe2 && u[1] == 0x80 && (u[2] & 0xfe) == 0xa8)
		return u[2] == 0xa8 ? "\\u2028" : "\\u2029";
	return NULL;
}

void
al_put_json(struct al_out *o, const char *s, size_t len, size_t budget)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 start = o->len, i = 0, n;
	char			 esc[8];
	const char		*piece;

	/* Most fields are one safe run that fits: one copy. */
	n = al_run(u, 0, len, AL_SAFE_JSON, false);
	if (n == len && len <= budget && len <= o->cap - 1 - o->len) {
		memcpy(o->p + o->len, s, len);
		o->len += len;
		return;
	}
	while (i < len) {
		if (i > 0)
			n = al_run(u, i, len, AL_SAFE_JSON, false);
		if (n > 0) {
			if (al_put_run(o, start, budget, s + i, n, i + n == len) <
			    n)
				break;
			i += n;
			continue;
		}
		n = 1;
		piece = esc;
		if (u[i] == '"' || u[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)u[i];
			esc[2] = '\0';
		} else if (u[i] == '\n' || u[i] == '\r' || u[i] == '\t') {
			esc[0] = '\\';
			esc[1] = u[i] == '\n' ? 'n' : u[i] == '\r' ? 'r' : 't';
			esc[2] = '\0';
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = al_hex[u[i] >> 4];
			esc[5] = al_hex[u[i] & 15];
			esc[6] = '\0';
		} else if (u[i] < 0x80) {
			esc[0] = (char)u[i];
			esc[1] = '\0';
		} else if ((n = al_utf8_len(u + i, len - i)) > 0) {
			if ((piece = al_json_line_end(u + i, n)) == NULL)
				piece = s + i;
		} else {
			n = al_utf8_bad_len(u + i, len - i);
			piece = "\\ufffd";
		}
		if (piece == s + i) {
			if (!al_fits(o, start, budget, n, i + n == len))
				break;
			al_put(o, piece, n);
		} else {
			if (!al_fits(o, start, budget, strlen(piece),
			    i + n == len))
				break;
			al_puts(o, piece);
		}
		i += n;
	}
	if (i < len)
		al_puts(o, "...");
}

/*
 * Safe runs copied as they are, every other byte as <lead> and two hex
 * digits ("\x22" for quoted fields, "%22" for squid's): what <safe>
 * (and, with <space_unsafe>, the space) refuses is exactly what is
 * escaped, so nothing a client sends reaches the line raw.
 */
static void
al_put_escaped(struct al_out *o, const char *s, size_t len, size_t budget,
    unsigned safe, bool space_unsafe, const char *lead)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 start = o->len, i, n, k, w = strlen(lead) + 2;
	char			 hex[2];

	if (al_run(u, 0, len, safe, space_unsafe) == len && len <= budget &&
	    len <= o->cap - 1 - o->len) {
		memcpy(o->p + o->len, s, len);	/* one safe run that fits */
		o->len += len;
		return;
	}
	for (i = 0; i < len; i++) {
		if ((n = al_run(u, i, len, safe, space_unsafe)) > 0) {
			k = al_put_run(o, start, budget, s + i, n, i + n == len);
			i += k;
			if (k < n)
				break;
			i--;
			continue;
		}
		if (!al_fits(o, start, budget, w, i + 1 == len))
			break;
		hex[0] = al_hex[u[i] >> 4];
		hex[1] = al_hex[u[i] & 15];
		al_puts(o, lead);
		al_put(o, hex, 2);
	}
	if (i < len)
		al_puts(o, "...");
}

void
al_put_quoted(struct al_out *o, const char *s, size_t len, size_t budget,
    bool space)
{
	al_put_escaped(o, s, len, budget, AL_SAFE_JSON, space, "\\x");
}

void
al_put_squid(struct al_out *o, const char *s, size_t len, size_t budget)
{
	al_put_escaped(o, s, len, budget, AL_SAFE_SQUID, false, "%");
}

/* Cached (one thread at a time, as al_fmt), so the LOG hook pays for
 * gmtime_r/localtime_r once a second rather than once a record. */
void
al_time(time_t sec, bool local, struct tm *tm_out, long *gmtoff_out)
{
	static time_t		 cached[2] = { -1, -1 };
	static struct tm	 tms[2];

	if (cached[local] != sec) {
		if (local)
			localtime_r(&sec, &tms[1]);
		else
			gmtime_r(&sec, &tms[0]);
		cached[local] = sec;
	}
	*tm_out = tms[local];
	*gmtoff_out = local ? tms[1].tm_gmtoff : 0;
}

const char *
al_proto_name(enum pt_proto p)
{
	switch (p) {
	case PT_PROTO_TCP:
		return "tcp";
	case PT_PROTO_HTTP:
		return "http";
	case PT_PROTO_CONNECT:
		return "connect";
	case PT_PROTO_SOCKS5:
		return "socks5";
	case PT_PROTO_SOCKS4:
		return "socks4";
	case PT_PROTO_WEBSOCKET:
		return "websocket";
	case PT_PROTO_UDP:
		return "udp";
	case PT_PROTO_STATUS:
		return "status";
	}
	return "unknown";
}

static bool
al_is_socks(enum pt_proto p)
{
	return p == PT_PROTO_SOCKS5 || p == PT_PROTO_SOCKS4 ||
	    p == PT_PROTO_UDP;
}

int
al_http_status(const struct al_rec *r)
{
	if (r->proto == PT_PROTO_SOCKS4)
		return r->status == 0x5a ? 200 : r->status == 0 ? 0 : 403;
	if (r->proto == PT_PROTO_TCP)
		return r->error == NULL ? 200 : 502;
	if (!al_is_socks(r->proto))
		return r->status;
	switch (r->status) {
	case 0x00:
		return r->error == NULL || r->bytes_in + r->bytes_out > 0 ?
		    200 : 0;
	case 0x02:
		return 403;
	case 0x03:
	case 0x04:
	case 0x05:
		return 502;
	case 0x06:
		return 504;
	case 0x07:
	case 0x08:
		return 501;
	default:
		return 500;
	}
}

bool
al_is_denied(const struct al_rec *r)
{
	int	 st = al_http_status(r);

	if (r->proto == PT_PROTO_SOCKS5 && r->status == 0x01 &&
	    r->error != NULL && strcmp(r->error, "authentication failed") == 0)
		return true;
	return st == 403 || st == 407;
}

/* The last addresses written, as text: a record has two
 * (client and origin) and a worker sees the same ones again and again.
 * Direct-mapped on the last octet; len 0 is an empty slot. */
#define AL_V4_CACHE	8
static struct {
	uint32_t	 key;
	uint8_t		 len;
	char		 txt[15];
} al_v4_cache[AL_V4_CACHE];

/* Dotted quad without inet_ntop, which goes through sprintf; in place
 * when the 15 bytes it may take fit. */
static void
al_put_v4(struct al_out *o, const unsigned char *b)
{
	char		*p;
	int		 i;
	uint32_t	 key;
	unsigned	 slot = b[3] % AL_V4_CACHE;

	if (o->cap - 1 - o->len < 15) {
		for (i = 0; i < 4; i++) {
			if (i > 0)
				al_putc(o, '.');
			al_put_u64(o, b[i]);
		}
		return;
	}
	p = o->p + o->len;
	memcpy(&key, b, 4);
	if (al_v4_cache[slot].len != 0 && al_v4_cache[slot].key == key) {
		memcpy(p, al_v4_cache[slot].txt, 15);	/* 15 fit: see above */
		o->len += al_v4_cache[slot].len;
		return;
	}
	for (i = 0; i < 4; i++) {
		if (i > 0)
			*p++ = '.';
		if (b[i] >= 100) {
			*p++ = (char)('0' + b[i] / 100);
			memcpy(p, al_pairs + (b[i] % 100) * 2, 2);
			p += 2;
		} else if (b[i] >= 10) {
			memcpy(p, al_pairs + b[i] * 2, 2);
			p += 2;
		} else
			*p++ = (char)('0' + b[i]);
	}
	al_v4_cache[slot].key = key;
	al_v4_cache[slot].len = (uint8_t)(p - (o->p + o->len));
	memcpy(al_v4_cache[slot].txt, o->p + o->len, 15);
	o->len = (size_t)(p - o->p);
}

/* An address as text, without its port; "-" for none. */
static void
al_put_addr(struct al_out *o, const struct sockaddr_storage *ss)
{
	char			 buf[INET6_ADDRSTRLEN];
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

	if (ss == NULL || ss->ss_family == AF_UNSPEC) {
		al_putc(o, '-');
		return;
	}
	if (ss->ss_family == AF_INET) {
		al_put_v4(o, (const unsigned char *)
		    &((const struct sockaddr_in *)ss)->sin_addr);
		return;
	}
	if (ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		al_put_v4(o, &s6->sin6_addr.s6_addr[12]);
		return;
	}
	if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &s6->sin6_addr, buf, sizeof(buf));
	else
		strcpy(buf, "-");
	al_puts(o, buf);
}

static unsigned
al_port_of(const struct sockaddr_storage *ss)
{
	if (ss == NULL)
		return 0;
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

/* The path, without its query string when the options say so: the '?'
 * stays, as Squid's strip_query_terms leaves it. */
static struct pt_str
al_path(const struct al_fmt_opts *o, const struct al_rec *r)
{
	struct pt_str	 p = r->path;
	const char	*q;

	if (!o->query && p.len > 0 &&
	    (q = memchr(p.ptr, '?', p.len)) != NULL)
		p.len = (size_t)(q - p.ptr) + 1;
	return p;
}

/* Whether the target is a URI (else host:port). */
static bool
al_is_http(enum pt_proto p)
{
	return p == PT_PROTO_HTTP || p == PT_PROTO_WEBSOCKET ||
	    p == PT_PROTO_STATUS;
}

/*
 * The target in raw bytes, before escaping: the URI of an HTTP request
 * ("http://host[:port]/path"), host:port for everything else. Written
 * into <buf> (escaped later as a whole, so one budget covers it).
 */
static size_t
al_target(const struct al_fmt_opts *o, const struct al_rec *r, char *buf,
    size_t cap)
{
	struct al_out	 t = { buf, 0, cap };
	struct pt_str	 path = al_path(o, r);
	bool		 v6 = memchr(r->host.ptr != NULL ? r->host.ptr : "",
			    ':', r->host.len) != NULL;
	bool		 http = al_is_http(r->proto);

	if (http && path.len > 0 && path.ptr[0] != '/') {
		al_put(&t, path.ptr, path.len);	/* OPTIONS * */
		return t.len;
	}
	if (r->host.len == 0) {
		if (http && path.len > 0)
			al_put(&t, path.ptr, path.len);
		return t.len;
	}
	if (http)
		al_puts(&t, "http://");
	if (v6)
		al_putc(&t, '[');
	al_put(&t, r->host.ptr, r->host.len);
	if (v6)
		al_putc(&t, ']');
	if (!http || r->port != 80)
	{
		al_putc(&t, ':');
		al_put_u64(&t, r->port);
	}
	if (http)
		al_put(&t, path.ptr, path.len);
	return t.len;
}

/* %03d of a status (0 to 999; others as they are). */
static void
al_put_status(struct al_out *o, int st)
{
	if (st >= 0 && st < 1000)
		al_put_digits(o, (unsigned)st, 3);
	else
		al_put_int(o, st);
}

/* "1796121373.045     89 ": Unix time with ms, the duration right-aligned
 * in 6 columns (Squid's %ts.%03tu %6tr). */
static void
al_squid_time(struct al_out *o, uint64_t wall_ms, uint64_t dur)
{
	char	 buf[24];
	size_t	 n = sizeof(buf);
	uint64_t v = dur;

	al_put_u64(o, wall_ms / 1000);
	al_putc(o, '.');
	al_put_digits(o, (unsigned)(wall_ms % 1000), 3);
	al_putc(o, ' ');
	do
		buf[--n] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (sizeof(buf) - n < 6)
		buf[--n] = ' ';
	al_put(o, buf + n, sizeof(buf) - n);
	al_putc(o, ' ');
}

static void
al_squid(const struct al_fmt_opts *fo, const struct al_rec *r,
    struct al_out *o)
{
	char		 tbuf[AL_MAX_TARGET * 2];
	size_t		 tlen = al_target(fo, r, tbuf, sizeof(tbuf));
	int		 st = al_http_status(r);
	const char	*code, *method;
	bool		 tunnel = r->proto != PT_PROTO_HTTP &&
			    r->proto != PT_PROTO_STATUS;

	if (al_is_denied(r))
		code = "TCP_DENIED";
	else if (st == 0 || (!tunnel && r->method.len == 0))
		code = "NONE_NONE";
	else if (tunnel)
		code = "TCP_TUNNEL";
	else
		code = "TCP_MISS";
	/* Squid's own layout (logformat squid):
	 * %ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru %[un %Sh/%<a %mt */
	al_squid_time(o, r->wall_ms, r->duration_ms);
	al_put_addr(o, r->peer);
	al_putc(o, ' ');
	al_puts(o, code);
	al_putc(o, '/');
	al_put_status(o, st);
	al_putc(o, ' ');
	al_put_u64(o, r->bytes_out);
	al_putc(o, ' ');
	if (r->method.len > 0)
		al_put_squid(o, r->method.ptr, r->method.len, AL_MAX_METHOD);
	else {
		/* Squid writes NONE for a request it could not parse. */
		method = r->proto == PT_PROTO_UDP ? "UDP_ASSOCIATE" :
		    r->proto == PT_PROTO_HTTP ||
		    r->proto == PT_PROTO_WEBSOCKET ||
		    r->proto == PT_PROTO_STATUS ? "NONE" : "CONNECT";
		al_puts(o, method);
	}
	al_putc(o, ' ');
	if (tlen > 0)
		al_put_squid(o, tbuf, tlen, AL_MAX_TARGET);
	else
		al_putc(o, '-');
	al_putc(o, ' ');
	if (r->user.len > 0)
		al_put_squid(o, r->user.ptr, r->user.len, AL_MAX_USER);
	else
		al_putc(o, '-');
	if (r->upstream != NULL && r->upstream->ss_family != AF_UNSPEC) {
		/* Squid's code for the first parent that answered. */
		al_puts(o, r->parent != NULL ? " FIRSTUP_PARENT/" :
		    " HIER_DIRECT/");
		al_put_addr(o, r->upstream);
	} else
		al_puts(o, " HIER_NONE/-");
	al_puts(o, " -");
}

/* [10/Oct/2000:13:55:36 -0700], made once a second. */
static void
al_clf_time(const struct al_fmt_opts *fo, uint64_t wall_ms,
    struct al_out *o)
{
	static time_t	 sec[2] = { -1, -1 };
	static char	 text[2][40];
	static size_t	 tlen[2];
	time_t			 now = (time_t)(wall_ms / 1000);
	int			 l = fo->local_time;
	struct tm		 tm;
	long			 off, a;
	int			 n;

	if (sec[l] != now) {
		al_time(now, fo->local_time, &tm, &off);
		a = off < 0 ? -off : off;
		n = snprintf(text[l], sizeof(text[l]),
		    "[%02d/%s/%04d:%02d:%02d:%02d %c%02ld%02ld]", tm.tm_mday,
		    al_months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, off < 0 ? '-' : '+', a / 3600,
		    (a / 60) % 60);
		tlen[l] = n > 0 ? (size_t)n : 0;
		sec[l] = now;
	}
	al_put(o, text[l], tlen[l]);
}

static void
al_combined(const struct al_fmt_opts *fo, const struct al_rec *r,
    struct al_out *o)
{
	char	 tbuf[AL_MAX_TARGET * 2];
	size_t	 tlen = al_target(fo, r, tbuf, sizeof(tbuf));
	int	 st = al_http_status(r);

	/* %h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i" */
	al_put_addr(o, r->peer);
	al_puts(o, " - ");
	if (r->user.len > 0)
		al_put_quoted(o, r->user.ptr, r->user.len, AL_MAX_USER, true);
	else
		al_putc(o, '-');
	al_putc(o, ' ');
	al_clf_time(fo, r->wall_ms, o);
	al_puts(o, " \"");
	if (r->method.len == 0 && (r->proto == PT_PROTO_HTTP ||
	    r->proto == PT_PROTO_WEBSOCKET || r->proto == PT_PROTO_STATUS)) {
		/* No request line (Apache writes "-" too). */
		al_puts(o, "-\" ");
		goto status;
	}
	if (r->method.len > 0)
		al_put_quoted(o, r->method.ptr, r->method.len, AL_MAX_METHOD,
		    true);
	else
		al_puts(o, r->proto == PT_PROTO_UDP ? "UDP_ASSOCIATE" :
		    "CONNECT");
	al_putc(o, ' ');
	if (tlen > 0)
		al_put_quoted(o, tbuf, tlen, AL_MAX_TARGET, true);
	else
		al_putc(o, '-');
	switch (r->proto) {
	case PT_PROTO_HTTP:
	case PT_PROTO_CONNECT:
	case PT_PROTO_WEBSOCKET:
	case PT_PROTO_STATUS:
		al_puts(o, " HTTP/1.1\" ");
		break;
	case PT_PROTO_SOCKS4:
		al_puts(o, " SOCKS4\" ");
		break;
	case PT_PROTO_TCP:
		al_puts(o, " TCP\" ");
		break;
	default:
		al_puts(o, " SOCKS5\" ");
		break;
	}
status:
	al_put_status(o, st);
	al_putc(o, ' ');
	if (r->body_out > 0)
		al_put_u64(o, r->body_out);
	else
		al_putc(o, '-');
	al_puts(o, " \"");
	if (r->referer.len > 0)
		al_put_quoted(o, r->referer.ptr, r->referer.len,
		    AL_MAX_REFERER, false);
	else
		al_putc(o, '-');
	al_puts(o, "\" \"");
	if (r->ua.len > 0)
		al_put_quoted(o, r->ua.ptr, r->ua.len, AL_MAX_UA, false);
	else
		al_putc(o, '-');
	al_putc(o, '"');
}

/* 2026-12-01T10:36:13.123Z, or with the local offset (+01:00); all but
 * the milliseconds made once a second. */
static void
al_iso_time(const struct al_fmt_opts *fo, uint64_t wall_ms,
    struct al_out *o)
{
	static time_t	 sec[2] = { -1, -1 };
	static char	 head[2][32], tail[2][8];
	static size_t	 hlen[2], tlen[2];
	time_t			 now = (time_t)(wall_ms / 1000);
	int			 l = fo->local_time, n;
	unsigned		 ms;
	struct tm		 tm;
	long			 off, a;

	if (sec[l] != now) {
		al_time(now, fo->local_time, &tm, &off);
		n = snprintf(head[l], sizeof(head[l]),
		    "%04d-%02d-%02dT%02d:%02d:%02d.", tm.tm_year + 1900,
		    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		    tm.tm_sec);
		hlen[l] = n > 0 && (size_t)n < sizeof(head[l]) ? (size_t)n : 0;
		a = off < 0 ? -off : off;
		if (!fo->local_time)
			n = snprintf(tail[l], sizeof(tail[l]), "Z");
		else
			n = snprintf(tail[l], sizeof(tail[l]), "%c%02ld:%02ld",
			    off < 0 ? '-' : '+', (a / 3600) % 100,
			    (a / 60) % 60);
		tlen[l] = n > 0 && (size_t)n < sizeof(tail[l]) ? (size_t)n : 0;
		sec[l] = now;
	}
	if (o->cap - 1 - o->len < sizeof(head[l]) + 3 + sizeof(tail[l])) {
		al_put(o, head[l], hlen[l]);
		al_put_digits(o, (unsigned)(wall_ms % 1000), 3);
		al_put(o, tail[l], tlen[l]);
		return;
	}
	/* Whole arrays copied (constant sizes: a few moves, no memcpy
	 * call), the length advanced by what they hold. */
	ms = (unsigned)(wall_ms % 1000);
	memcpy(o->p + o->len, head[l], sizeof(head[l]));
	o->len += hlen[l];
	o->p[o->len] = (char)('0' + ms / 100);
	memcpy(o->p + o->len + 1, al_pairs + (ms % 100) * 2, 2);
	o->len += 3;
	memcpy(o->p + o->len, tail[l], sizeof(tail[l]));
	o->len += tlen[l];
}

/* A string field: ,"key": then the value quoted, or null. Inlined at
 * each field with the key's punctuation joined to it at compile time
 * (al_json_str), so the whole key is one copy of a known length. */
static inline __attribute__((always_inline)) void
al_json_field(struct al_out *o, const char *key, size_t klen, const char *s,
    size_t len, size_t budget)
{
	al_put(o, key, klen);
	if (s == NULL || len == 0) {
		al_puts(o, "null");
		return;
	}
	al_putc(o, '"');
	al_put_json(o, s, len, budget);
	al_putc(o, '"');
}

#define al_json_str(o, key, s, len, budget)				\
	al_json_field((o), ",\"" key "\":", sizeof(",\"" key "\":") - 1,	\
	    (s), (len), (budget))

/*
 * ,"target":"..." straight from the record when it is an HTTP URI whose
 * host (a name or IPv4 address) and path are each one run that JSON
 * takes as it is and that fits the budget: no copy into a buffer, no
 * second scan. Anything else is built whole by al_target and escaped
 * as one field (one budget, one cut).
 */
static void
al_json_target(const struct al_fmt_opts *fo, const struct al_rec *r,
    struct al_out *o)
{
	char		 tbuf[AL_MAX_TARGET * 2];
	struct pt_str	 path = al_path(fo, r);
	const unsigned char *h = (const unsigned char *)r->host.ptr;
	size_t		 tlen;

	if (al_is_http(r->proto) && r->host.len > 0 && path.len > 0 &&
	    path.ptr[0] == '/' &&
	    r->host.len + path.len + sizeof("http://:65535") <=
	    AL_MAX_TARGET &&
	    r->host.len + path.len + 32 <= o->cap - 1 - o->len &&
	    memchr(h, ':', r->host.len) == NULL &&
	    al_run(h, 0, r->host.len, AL_SAFE_JSON, false) == r->host.len &&
	    al_run((const unsigned char *)path.ptr, 0, path.len, AL_SAFE_JSON,
	    false) == path.len) {
		al_puts(o, ",\"target\":\"http://");
		al_put(o, r->host.ptr, r->host.len);
		if (r->port != 80) {
			al_putc(o, ':');
			al_put_u64(o, r->port);
		}
		al_put(o, path.ptr, path.len);
		al_putc(o, '"');
		return;
	}
	tlen = al_target(fo, r, tbuf, sizeof(tbuf));
	al_json_str(o, "target", tbuf, tlen, AL_MAX_TARGET);
}

/* ,"balancer":"ADDR","balancer_port":N and the header's TLVs, only when a
 * PROXY header named the client: a record of any other connection keeps
 * the keys it always had. */
static void
al_json_balancer(const struct al_rec *r, struct al_out *o)
{
	if (r->balancer == NULL)
		return;
	al_puts(o, ",\"balancer\":\"");
	al_put_addr(o, r->balancer);
	al_puts(o, "\",\"balancer_port\":");
	al_put_u64(o, al_port_of(r->balancer));
	if (r->pp_authority.len > 0)
		al_json_str(o, "proxy_authority", r->pp_authority.ptr,
		    r->pp_authority.len, AL_MAX_PROXY_TLV);
	if (r->pp_unique_id.len > 0)
		al_json_str(o, "proxy_unique_id", r->pp_unique_id.ptr,
		    r->pp_unique_id.len, AL_MAX_PROXY_TLV);
}

/* ,"egress":"ADDR", only when the outgoing connection was bound to a
 * chosen address (listener or acl egress). */
static void
al_json_egress(const struct al_rec *r, struct al_out *o)
{
	if (r->egress == NULL)
		return;
	al_puts(o, ",\"egress\":\"");
	al_put_addr(o, r->egress);
	al_putc(o, '"');
}

/* ,"parent":"NAME", only when a parent proxy carried it. */
static void
al_json_parent(const struct al_rec *r, struct al_out *o)
{
	if (r->parent == NULL)
		return;
	al_puts(o, ",\"parent\":\"");
	al_puts(o, r->parent);
	al_putc(o, '"');
}

/* ,"client_proto":"h2","stream":N, only for a transaction that came on
 * an HTTP/2 stream. */
static void
al_json_stream(const struct al_rec *r, struct al_out *o)
{
	if (r->stream == 0)
		return;
	al_puts(o, ",\"client_proto\":\"h2\",\"stream\":");
	al_put_u64(o, r->stream);
}

static void
al_json(const struct al_fmt_opts *fo, const struct al_rec *r,
    struct al_out *o)
{
	struct al_out	 a;
	char		 abuf[INET6_ADDRSTRLEN + 2];

	al_puts(o, "{\"time\":\"");
	al_iso_time(fo, r->wall_ms, o);
	al_puts(o, "\",\"client\":\"");
	al_put_addr(o, r->peer);
	al_puts(o, "\",\"client_port\":");
	al_put_u64(o, al_port_of(r->peer));
	al_json_str(o, "listener", r->listener,
	    r->listener != NULL ? strlen(r->listener) : 0, AL_MAX_LISTENER);
	al_json_str(o, "user", r->user.ptr, r->user.len, AL_MAX_USER);
	al_puts(o, ",\"proto\":\"");
	al_puts(o, al_proto_name(r->proto));
	al_putc(o, '"');
	al_json_stream(r, o);
	al_json_str(o, "method", r->method.ptr, r->method.len,
	    AL_MAX_METHOD);
	al_json_target(fo, r, o);
	al_puts(o, ",\"status\":");
	al_put_int(o, r->status);
	al_puts(o, ",\"bytes_in\":");
	al_put_u64(o, r->bytes_in);
	al_puts(o, ",\"bytes_out\":");
	al_put_u64(o, r->bytes_out);
	a = (struct al_out){ abuf, 0, sizeof(abuf) };
	al_put_addr(&a, r->upstream);
	if (a.len == 1 && abuf[0] == '-')
		al_puts(o, ",\"upstream\":null");
	else {
		al_puts(o, ",\"upstream\":\"");
		al_put(o, abuf, a.len);
		al_puts(o, "\",\"upstream_port\":");
		al_put_u64(o, al_port_of(r->upstream));
	}
	al_puts(o, ",\"duration_ms\":");
	al_put_u64(o, r->duration_ms);
	al_json_str(o, "label", r->label.ptr, r->label.len, AL_MAX_LABEL);
	al_json_str(o, "error", r->error,
	    r->error != NULL ? strlen(r->error) : 0, AL_MAX_ERROR);
	al_puts(o, ",\"worker\":");
	al_put_int(o, r->worker);
	al_puts(o, ",\"txn\":");
	al_put_u64(o, r->txn);
	al_json_str(o, "user_agent", r->ua.ptr, r->ua.len, AL_MAX_UA);
	al_json_str(o, "referer", r->referer.ptr, r->referer.len,
	    AL_MAX_REFERER);
	al_json_balancer(r, o);
	al_json_egress(r, o);
	al_json_parent(r, o);
	al_putc(o, '}');
}

static size_t
al_end(struct al_out *o)
{
	o->p[o->len++] = '\n';
	return o->len;
}

size_t
al_fmt(const struct al_fmt_opts *fo, const struct al_rec *r, char *out,
    size_t cap)
{
	struct al_out	 o = { out, 0, cap };

	switch (fo->format) {
	case AL_FMT_SQUID:
		al_squid(fo, r, &o);
		break;
	case AL_FMT_COMBINED:
		al_combined(fo, r, &o);
		break;
	case AL_FMT_JSON:
		al_json(fo, r, &o);
		break;
	}
	return al_end(&o);
}

size_t
al_fmt_dropped(const struct al_fmt_opts *fo, uint64_t wall_ms, int worker,
    uint64_t n, char *out, size_t cap)
{
	struct al_out	 o = { out, 0, cap };

	switch (fo->format) {
	case AL_FMT_SQUID:
		/* A record analysers can read and skip: no client, no
		 * bytes, a method no request has. */
		al_printf(&o, "%" PRIu64 ".%03u %6d - NONE_NONE/000 0 "
		    "ACCESSLOG_DROPPED dropped=%" PRIu64 ",worker=%d - "
		    "HIER_NONE/- -", wall_ms / 1000,
		    (unsigned)(wall_ms % 1000), 0, n, worker);
		break;
	case AL_FMT_COMBINED:
		al_puts(&o, "- - - ");
		al_clf_time(fo, wall_ms, &o);
		al_printf(&o, " \"ACCESSLOG_DROPPED dropped=%" PRIu64
		    ",worker=%d -\" 000 - \"-\" \"-\"", n, worker);
		break;
	case AL_FMT_JSON:
		al_puts(&o, "{\"time\":\"");
		al_iso_time(fo, wall_ms, &o);
		al_printf(&o, "\",\"event\":\"dropped\",\"dropped\":%" PRIu64
		    ",\"worker\":%d}", n, worker);
		break;
	}
	return al_end(&o);
}
