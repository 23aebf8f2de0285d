/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the access log's records (modules/accesslog/fmt.c). Input:
 * 16 bytes of numbers (protocol, status, port, format options, byte
 * counts, time; zeros when short), then the fields a client or module
 * controls, separated by the byte 0x1f: user, method, host, path, label,
 * User-Agent, Referer, listener, error. Every record, in each of the three
 * formats, must be one line within AL_REC_MAX, ending in its only '\n',
 * with no other control byte. Squid's line has its ten fields and no byte
 * above 0x7e; the combined line parses as "addr - user [time] \"req\"
 * status bytes \"referer\" \"ua\"" with escapes only of the form \xHH;
 * the JSON line is one valid JSON object (checked by the reader below:
 * RFC 8259, UTF-8 validated) with each key once, and every field that was
 * valid UTF-8 and short enough not to be cut decodes to exactly its input
 * (the squid and combined fields likewise, after unescaping).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "modules/accesslog/fmt.h"

enum { F_USER, F_METHOD, F_HOST, F_PATH, F_LABEL, F_UA, F_REFERER,
    F_LISTENER, F_ERROR, F_COUNT };

/* ---- a strict JSON reader -------------------------------------------- */

struct json {
	const unsigned char	*p, *end;
	char			 keys[32][32];
	int			 nkeys;
	/* The decoded value of <want> (a key), when it is a string. */
	const char		*want;
	char			 got[AL_REC_MAX];
	size_t			 got_len;
	bool			 got_set;
};

static size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned char	 c = s[0], lo = 0x80, hi = 0xbf;
	size_t		 k, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		k = 2;
	else if (c >= 0xe0 && c <= 0xef)
		k = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		k = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < k || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return k;
}

static bool
utf8_valid(const char *s, size_t n)
{
	size_t	 i = 0, k;

	while (i < n) {
		if ((k = utf8_len((const unsigned char *)s + i, n - i)) == 0)
			return false;
		i += k;
	}
	return true;
}

static void
put_utf8(char *out, size_t *n, unsigned cp)
{
	if (cp < 0x80)
		out[(*n)++] = (char)cp;
	else if (cp < 0x800) {
		out[(*n)++] = (char)(0xc0 | cp >> 6);
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*n)++] = (char)(0xe0 | cp >> 12);
		out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*n)++] = (char)(0xf0 | cp >> 18);
		out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static int
hex1(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool
json_hex4(struct json *j, unsigned *out)
{
	int	 i, h;

	if (j->end - j->p < 4)
		return false;
	*out = 0;
	for (i = 0; i < 4; i++) {
		if ((h = hex1(j->p[i])) < 0)
			return false;
		*out = *out << 4 | (unsigned)h;
	}
	j->p += 4;
	return true;
}

/* A string at j->p (the opening quote); its decoded bytes in <out>. */
static bool
json_string(struct json *j, char *out, size_t *out_len)
{
	size_t		 n = 0, k;
	unsigned	 cp, lo;

	if (j->p >= j->end || *j->p != '"')
		return false;
	j->p++;
	while (j->p < j->end && *j->p != '"') {
		if (*j->p < 0x20)
			return false;
		if (*j->p != '\\') {
			if ((k = utf8_len(j->p, (size_t)(j->end - j->p))) == 0)
				return false;
			memcpy(out + n, j->p, k);
			n += k;
			j->p += k;
			continue;
		}
		if (++j->p >= j->end)
			return false;
		switch (*j->p++) {
		case '"': out[n++] = '"'; break;
		case '\\': out[n++] = '\\'; break;
		case '/': out[n++] = '/'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'n': out[n++] = '\n'; break;
		case 'r': out[n++] = '\r'; break;
		case 't': out[n++] = '\t'; break;
		case 'u':
			if (!json_hex4(j, &cp))
				return false;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return false;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (j->end - j->p < 6 || j->p[0] != '\\' ||
				    j->p[1] != 'u')
					return false;
				j->p += 2;
				if (!json_hex4(j, &lo) || lo < 0xdc00 ||
				    lo > 0xdfff)
					return false;
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
			}
			put_utf8(out, &n, cp);
			break;
		default:
			return false;
		}
	}
	if (j->p >= j->end)
		return false;
	j->p++;
	*out_len = n;
	return true;
}

static bool
json_number(struct json *j)
{
	const unsigned char	*s = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return false;
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return false;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	return j->p > s;
}

/* One object of strings, numbers, null, true, false (what a record has:
 * no nesting). */
static bool
json_object(struct json *j)
{
	static char	 key[AL_REC_MAX], val[AL_REC_MAX];
	size_t		 klen, vlen;
	int		 i;

	if (j->p >= j->end || *j->p++ != '{')
		return false;
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		return true;
	}
	for (;;) {
		if (!json_string(j, key, &klen) || j->p >= j->end ||
		    *j->p++ != ':')
			return false;
		key[klen < 31 ? klen : 31] = '\0';
		for (i = 0; i < j->nkeys; i++)
			if (strcmp(j->keys[i], key) == 0)
				return false;
		if (j->nkeys < 32)
			memcpy(j->keys[j->nkeys++], key, strlen(key) + 1);
		if (j->p < j->end && *j->p == '"') {
			if (!json_string(j, val, &vlen))
				return false;
			if (j->want != NULL && strcmp(key, j->want) == 0) {
				memcpy(j->got, val, vlen);
				j->got_len = vlen;
				j->got_set = true;
			}
		} else if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0)
			j->p += 4;
		else if (!json_number(j))
			return false;
		if (j->p >= j->end)
			return false;
		if (*j->p == '}') {
			j->p++;
			return true;
		}
		if (*j->p++ != ',')
			return false;
	}
}

/* ---- the record -------------------------------------------------------- */

static struct pt_str	 fields[F_COUNT];
static char		*owned[F_COUNT];	/* the fields' bytes */
static char		*cstr[F_COUNT];	/* listener, error as C strings */

static uint64_t
num(const uint8_t *d, size_t len, size_t at, size_t n)
{
	uint64_t	 v = 0;
	size_t		 i;

	for (i = 0; i < n; i++)
		v = v << 8 | (at + i < len ? d[at + i] : 0);
	return v;
}

static void
check_line(const char *line, size_t n, bool json)
{
	size_t	 i;

	FUZZ_CHECK(n >= 2 && n <= AL_REC_MAX && line[n - 1] == '\n',
	    "record of %zu bytes not ending in a newline", n);
	for (i = 0; i + 1 < n; i++) {
		unsigned char c = (unsigned char)line[i];

		FUZZ_CHECK(c >= 0x20 && c != 0x7f && (json || c < 0x80),
		    "byte 0x%02x at %zu", c, i);
	}
}

/* A field, when it went in whole: its bytes came back. */
static bool
fits(size_t f, size_t budget, size_t per_byte)
{
	return fields[f].len > 0 && fields[f].len * per_byte + 3 <= budget;
}

/* <record>: a record, whose fields are checked; else the dropped
 * line, whose shape only is. */
static void
check_json(const char *line, size_t n, bool record)
{
	static const struct { int f; const char *key; size_t budget; } keyed[] = {
		{ F_USER, "user", AL_MAX_USER },
		{ F_METHOD, "method", AL_MAX_METHOD },
		{ F_LABEL, "label", AL_MAX_LABEL },
		{ F_UA, "user_agent", AL_MAX_UA },
		{ F_REFERER, "referer", AL_MAX_REFERER },
		{ F_LISTENER, "listener", AL_MAX_LISTENER },
		{ F_ERROR, "error", AL_MAX_ERROR },
	};
	static struct json	 j;
	size_t			 k;
	int			 f;

	for (k = 0; k < sizeof(keyed) / sizeof(keyed[0]); k++) {
		memset(&j, 0, sizeof(j));
		j.p = (const unsigned char *)line;
		j.end = j.p + n - 1;
		j.want = keyed[k].key;
		FUZZ_CHECK(json_object(&j) && j.p == j.end, "not one JSON "
		    "object (at byte %zu): %.*s",
		    (size_t)(j.p - (const unsigned char *)line), (int)n, line);
		if (!record)
			return;
		f = keyed[k].f;
		/* A JSON string escapes a byte in at most 6. */
		if (!fits((size_t)f, keyed[k].budget, 6) ||
		    !utf8_valid(fields[f].ptr, fields[f].len))
			continue;
		FUZZ_CHECK(j.got_set && j.got_len == fields[f].len &&
		    memcmp(j.got, fields[f].ptr, j.got_len) == 0,
		    "\"%s\" does not decode to its input", keyed[k].key);
	}
}

/* Splits on runs of spaces. */
static int
squid_fields(const char *line, size_t n, const char **w, size_t *wl, int max)
{
	size_t	 i = 0, s;
	int	 k = 0;

	while (i < n) {
		while (i < n && line[i] == ' ')
			i++;
		if (i == n)
			break;
		s = i;
		while (i < n && line[i] != ' ')
			i++;
		if (k < max) {
			w[k] = line + s;
			wl[k] = i - s;
		}
		k++;
	}
	return k;
}

/* Undoes <lead>HH escapes (lead '%' or '\\' followed by 'x'). */
static bool
unescape(const char *s, size_t n, char lead, char *out, size_t *out_len)
{
	size_t	 i = 0, o = 0;
	size_t	 skip = lead == '\\' ? 2 : 1;
	int	 h1, h2;

	while (i < n) {
		if (s[i] != lead) {
			out[o++] = s[i++];
			continue;
		}
		if (lead == '\\' && (i + 1 >= n || s[i + 1] != 'x'))
			return false;
		if (i + skip + 2 > n || (h1 = hex1((unsigned char)s[i + skip])) <
		    0 || (h2 = hex1((unsigned char)s[i + skip + 1])) < 0)
			return false;
		out[o++] = (char)(h1 << 4 | h2);
		i += skip + 2;
	}
	*out_len = o;
	return true;
}

static void
check_squid(const char *line, size_t n)
{
	static char	 out[AL_REC_MAX];
	const char	*w[12];
	size_t		 wl[12], ol;
	int		 k;

	k = squid_fields(line, n - 1, w, wl, 12);
	FUZZ_CHECK(k == 10, "squid line has %d fields: %.*s", k, (int)n, line);
	/* Field 8 is the user. A '%' the client sent is written as it is
	 * (fmt.h), so only a field without one can be read back. */
	if (fits(F_USER, AL_MAX_USER, 3) && memchr(fields[F_USER].ptr, '%',
	    fields[F_USER].len) == NULL) {
		FUZZ_CHECK(unescape(w[7], wl[7], '%', out, &ol) && ol ==
		    fields[F_USER].len && memcmp(out, fields[F_USER].ptr, ol) ==
		    0, "squid user does not unescape to its input");
	}
	if (fits(F_METHOD, AL_MAX_METHOD, 3) && memchr(fields[F_METHOD].ptr,
	    '%', fields[F_METHOD].len) == NULL)
		FUZZ_CHECK(unescape(w[5], wl[5], '%', out, &ol) && ol ==
		    fields[F_METHOD].len && memcmp(out, fields[F_METHOD].ptr,
		    ol) == 0, "squid method does not unescape to its input");
}

/* A quoted field at *p (after its opening quote): up to the closing
 * quote, with every backslash a \xHH. */
static bool
quoted(const char **p, const char *end, char *out, size_t *ol)
{
	const char	*s = *p, *q = s;

	while (q < end && *q != '"')
		q++;
	if (q >= end)
		return false;
	*p = q + 1;
	return unescape(s, (size_t)(q - s), '\\', out, ol);
}

static void
check_combined(const char *line, size_t n)
{
	static char	 out[AL_REC_MAX];
	const char	*p = line, *end = line + n - 1, *sp;
	size_t		 ol;

	/* addr - user [time] */
	FUZZ_CHECK((sp = memchr(p, ' ', (size_t)(end - p))) != NULL &&
	    end - sp > 3 && memcmp(sp, " - ", 3) == 0, "combined: address");
	p = sp + 3;
	FUZZ_CHECK((sp = memchr(p, ' ', (size_t)(end - p))) != NULL,
	    "combined: user");
	if (fits(F_USER, AL_MAX_USER, 4))
		FUZZ_CHECK(unescape(p, (size_t)(sp - p), '\\', out, &ol) &&
		    ol == fields[F_USER].len && memcmp(out, fields[F_USER].ptr,
		    ol) == 0, "combined user does not unescape to its input");
	p = sp + 1;
	FUZZ_CHECK(p < end && *p == '[' && (sp = memchr(p, ']',
	    (size_t)(end - p))) != NULL && end - sp > 2 && sp[1] == ' ' &&
	    sp[2] == '"', "combined: time");
	p = sp + 3;
	FUZZ_CHECK(quoted(&p, end, out, &ol), "combined: request");
	/* status bytes */
	FUZZ_CHECK(p < end && *p == ' ', "combined: after the request");
	p++;
	FUZZ_CHECK((sp = memchr(p, ' ', (size_t)(end - p))) != NULL,
	    "combined: status");
	p = sp + 1;
	FUZZ_CHECK((sp = memchr(p, ' ', (size_t)(end - p))) != NULL &&
	    end - sp > 2 && sp[1] == '"', "combined: bytes");
	p = sp + 2;
	FUZZ_CHECK(quoted(&p, end, out, &ol), "combined: referer");
	if (fits(F_REFERER, AL_MAX_REFERER, 4))
		FUZZ_CHECK(ol == fields[F_REFERER].len && memcmp(out,
		    fields[F_REFERER].ptr, ol) == 0, "combined referer does "
		    "not unescape to its input");
	FUZZ_CHECK(end - p > 2 && p[0] == ' ' && p[1] == '"',
	    "combined: before the User-Agent");
	p += 2;
	FUZZ_CHECK(quoted(&p, end, out, &ol) && p == end,
	    "combined: User-Agent, then the end");
	if (fits(F_UA, AL_MAX_UA, 4))
		FUZZ_CHECK(ol == fields[F_UA].len && memcmp(out,
		    fields[F_UA].ptr, ol) == 0, "combined User-Agent does not "
		    "unescape to its input");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const enum pt_proto protos[] = { PT_PROTO_HTTP,
	    PT_PROTO_CONNECT, PT_PROTO_SOCKS5, PT_PROTO_SOCKS4, PT_PROTO_UDP,
	    PT_PROTO_WEBSOCKET, PT_PROTO_TCP };
	struct sockaddr_storage	 peer, up;
	struct al_fmt_opts	 o;
	struct al_rec		 r;
	const uint8_t		*rest, *f;
	size_t			 rlen, flen, n, i;
	char			*line, *buf;
	int			 fmt, k;

	memset(&r, 0, sizeof(r));
	memset(&peer, 0, sizeof(peer));
	memset(&up, 0, sizeof(up));
	r.proto = protos[num(data, len, 0, 1) % 7];
	r.status = (int)(int16_t)num(data, len, 1, 2);
	r.port = (uint16_t)num(data, len, 3, 2);
	o.local_time = num(data, len, 5, 1) & 1;
	o.query = num(data, len, 5, 1) & 2;
	r.bytes_in = num(data, len, 6, 3);
	r.bytes_out = num(data, len, 9, 3);
	r.body_out = r.bytes_out - (r.bytes_out >> 3);
	r.duration_ms = num(data, len, 12, 2);
	r.wall_ms = 1796121373045ULL + num(data, len, 14, 2) * 997;
	r.worker = (int)(num(data, len, 5, 1) >> 4);
	r.txn = num(data, len, 6, 8);
	/* Addresses: v4, v6, v4-mapped and none, by a byte. */
	k = (int)(num(data, len, 5, 1) >> 2) & 3;
	if (k == 0) {
		peer.ss_family = AF_INET;
		memcpy(&((struct sockaddr_in *)&peer)->sin_addr,
		    "\xc0\x00\x02\x07", 4);
		up.ss_family = AF_INET;
	} else if (k == 1) {
		peer.ss_family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::7",
		    &((struct sockaddr_in6 *)&peer)->sin6_addr);
		up.ss_family = AF_INET6;
	} else if (k == 2) {
		peer.ss_family = AF_INET6;
		inet_pton(AF_INET6, "::ffff:192.0.2.9",
		    &((struct sockaddr_in6 *)&peer)->sin6_addr);
	}
	r.peer = &peer;
	r.upstream = &up;
	rest = len > 16 ? data + 16 : NULL;
	rlen = len > 16 ? len - 16 : 0;
	memset(fields, 0, sizeof(fields));
	for (i = 0; i < F_COUNT && rest != NULL; i++) {
		fuzz_split(&rest, &rlen, "\x1f", &f, &flen);
		owned[i] = fuzz_dup(f, flen, false);
		fields[i] = (struct pt_str){ owned[i], flen };
	}
	for (; i < F_COUNT; i++) {
		owned[i] = fuzz_dup(NULL, 0, false);
		fields[i] = (struct pt_str){ owned[i], 0 };
	}
	r.user = fields[F_USER];
	r.method = fields[F_METHOD];
	r.host = fields[F_HOST];
	r.path = fields[F_PATH];
	r.label = fields[F_LABEL];
	r.ua = fields[F_UA];
	r.referer = fields[F_REFERER];
	/* listener and error are C strings: up to a NUL. */
	cstr[F_LISTENER] = fuzz_dup((const uint8_t *)fields[F_LISTENER].ptr,
	    fields[F_LISTENER].len, true);
	cstr[F_ERROR] = fuzz_dup((const uint8_t *)fields[F_ERROR].ptr,
	    fields[F_ERROR].len, true);
	fields[F_LISTENER].len = strlen(cstr[F_LISTENER]);
	fields[F_ERROR].len = strlen(cstr[F_ERROR]);
	r.listener = fields[F_LISTENER].len > 0 ? cstr[F_LISTENER] : "main";
	r.error = fields[F_ERROR].len > 0 ? cstr[F_ERROR] : NULL;
	if (fields[F_LISTENER].len == 0) {
		/* "main" is what the record holds then. */
		fields[F_LISTENER] = (struct pt_str){ "main", 4 };
	}
	/* An exact-size output, so a write past AL_REC_MAX is caught. */
	buf = malloc(AL_REC_MAX);
	FUZZ_CHECK(buf != NULL, "memory");
	for (fmt = AL_FMT_SQUID; fmt <= AL_FMT_JSON; fmt++) {
		o.format = (enum al_format)fmt;
		n = al_fmt(&o, &r, buf, AL_REC_MAX);
		line = buf;
		check_line(line, n, fmt == AL_FMT_JSON);
		if (fmt == AL_FMT_JSON)
			check_json(line, n, true);
		else if (fmt == AL_FMT_SQUID)
			check_squid(line, n);
		else
			check_combined(line, n);
		n = al_fmt_dropped(&o, r.wall_ms, r.worker, r.txn, buf,
		    AL_REC_MAX);
		check_line(buf, n, fmt == AL_FMT_JSON);
		if (fmt == AL_FMT_JSON)
			check_json(buf, n, false);
	}
	free(buf);
	for (i = 0; i < F_COUNT; i++)
		free(owned[i]);
	free(cstr[F_LISTENER]);
	free(cstr[F_ERROR]);
	return 0;
}
