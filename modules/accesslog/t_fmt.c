/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/accesslog/fmt.c: the exact squid, combined and
 * JSON lines of known records; hostile bytes (controls, quotes,
 * backslashes, newlines, invalid UTF-8) in every field a client
 * controls, checked by a strict JSON reader written here (RFC 8259, one
 * object of strings, numbers and nulls) and by field counts for the
 * space-separated layouts; U+0085, U+2028 and U+2029 escaped in JSON;
 * budgets that keep any record under AL_REC_MAX; the query cut; SOCKS
 * status mapping; the dropped line.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "modules/accesslog/fmt.h"
#include "t/unit/check.h"

/* 2026-12-01T10:36:13.045Z */
#define T_WALL	1796121373045ULL

static struct sockaddr_storage	 t_peer, t_up;

static struct pt_str
t_s(const char *s)
{
	return (struct pt_str){ s, s != NULL ? strlen(s) : 0 };
}

static void
t_addr(struct sockaddr_storage *ss, const char *ip, unsigned port)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)ss)->sin_addr)) {
		ss->ss_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	} else {
		inet_pton(AF_INET6, ip,
		    &((struct sockaddr_in6 *)ss)->sin6_addr);
		ss->ss_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	}
}

static struct al_rec
t_get(void)
{
	struct al_rec	 r;

	t_addr(&t_peer, "192.0.2.7", 50123);
	t_addr(&t_up, "198.51.100.9", 80);
	memset(&r, 0, sizeof(r));
	r.wall_ms = T_WALL;
	r.peer = &t_peer;
	r.upstream = &t_up;
	r.listener = "web";
	r.user = t_s("alice");
	r.method = t_s("GET");
	r.host = t_s("example.org");
	r.port = 80;
	r.path = t_s("/a/b?q=1");
	r.proto = PT_PROTO_HTTP;
	r.status = 200;
	r.bytes_in = 120;
	r.bytes_out = 1312;
	r.body_out = 1024;
	r.duration_ms = 89;
	r.txn = 42;
	r.worker = 1;
	r.ua = t_s("curl/8.0");
	r.referer = t_s("http://ref.example/");
	return r;
}

static char	 t_line[AL_REC_MAX + 1];

static const char *
t_fmt(enum al_format f, const struct al_rec *r, bool query)
{
	struct al_fmt_opts	 o = { f, false, query };
	size_t			 n;

	memset(t_line, 'Z', sizeof(t_line));
	n = al_fmt(&o, r, t_line, AL_REC_MAX);
	CHECKF_FATAL(n > 0 && n <= AL_REC_MAX, "length %zu", n);
	CHECKF(t_line[n - 1] == '\n', "ends with a newline");
	CHECKF(t_line[n] == 'Z', "nothing written past the length");
	t_line[n] = '\0';
	return t_line;
}

/* ---- a strict JSON reader: RFC 8259 for the shapes a record has ------- */

struct t_json {
	const char	*p, *end;
	char		 target[AL_REC_MAX];	/* decoded "target" */
	char		 ua[AL_REC_MAX];
	char		 user[AL_REC_MAX];
	int		 keys;
};

static bool
t_json_hex4(const char *p, unsigned *out)
{
	unsigned	 v = 0;
	int		 i;

	for (i = 0; i < 4; i++) {
		v <<= 4;
		if (p[i] >= '0' && p[i] <= '9')
			v |= (unsigned)(p[i] - '0');
		else if (p[i] >= 'a' && p[i] <= 'f')
			v |= (unsigned)(p[i] - 'a' + 10);
		else if (p[i] >= 'A' && p[i] <= 'F')
			v |= (unsigned)(p[i] - 'A' + 10);
		else
			return false;
	}
	*out = v;
	return true;
}

/* A string at j->p (after its quote); decoded into <out> (UTF-8). */
static bool
t_json_string(struct t_json *j, char *out, size_t cap)
{
	size_t		 n = 0;
	unsigned	 cp;
	unsigned char	 c;

	while (j->p < j->end) {
		c = (unsigned char)*j->p++;
		if (c == '"') {
			out[n] = '\0';
			return true;
		}
		if (c < 0x20)
			return false;
		if (n + 4 >= cap)
			return false;
		if (c != '\\') {
			out[n++] = (char)c;
			continue;
		}
		if (j->p >= j->end)
			return false;
		c = (unsigned char)*j->p++;
		switch (c) {
		case '"': case '\\': case '/':
			out[n++] = (char)c;
			break;
		case 'n': out[n++] = '\n'; break;
		case 'r': out[n++] = '\r'; break;
		case 't': out[n++] = '\t'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'u':
			if (j->end - j->p < 4 || !t_json_hex4(j->p, &cp))
				return false;
			j->p += 4;
			if (cp >= 0xd800 && cp <= 0xdfff)
				return false;	/* we never write pairs */
			if (cp < 0x80)
				out[n++] = (char)cp;
			else if (cp < 0x800) {
				out[n++] = (char)(0xc0 | cp >> 6);
				out[n++] = (char)(0x80 | (cp & 0x3f));
			} else {
				out[n++] = (char)(0xe0 | cp >> 12);
				out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
				out[n++] = (char)(0x80 | (cp & 0x3f));
			}
			break;
		default:
			return false;
		}
	}
	return false;
}

static bool
t_utf8_valid(const char *s)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i = 0, n, k;

	while (u[i] != '\0') {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		n = u[i] >= 0xf0 ? 4 : u[i] >= 0xe0 ? 3 : u[i] >= 0xc2 ? 2 : 0;
		if (n == 0 || u[i] > 0xf4)
			return false;
		for (k = 1; k < n; k++)
			if ((u[i + k] & 0xc0) != 0x80)
				return false;
		i += n;
	}
	return true;
}

/* The whole line: one object, then '\n' and nothing else. */
static bool
t_json_parse(const char *line, struct t_json *j)
{
	char	 key[64], val[AL_REC_MAX];
	char	*dst;

	memset(j, 0, sizeof(*j));
	j->p = line;
	j->end = line + strlen(line);
	if (j->end == j->p || j->end[-1] != '\n')
		return false;
	j->end--;
	if (*j->p++ != '{')
		return false;
	for (;;) {
		if (*j->p++ != '"' || !t_json_string(j, key, sizeof(key)))
			return false;
		if (*j->p++ != ':')
			return false;
		j->keys++;
		dst = strcmp(key, "target") == 0 ? j->target :
		    strcmp(key, "user_agent") == 0 ? j->ua :
		    strcmp(key, "user") == 0 ? j->user : val;
		if (*j->p == '"') {
			j->p++;
			if (!t_json_string(j, dst, AL_REC_MAX) ||
			    !t_utf8_valid(dst))
				return false;
		} else if (strncmp(j->p, "null", 4) == 0)
			j->p += 4;
		else {
			if (*j->p == '-')
				j->p++;
			if (*j->p < '0' || *j->p > '9')
				return false;
			while (*j->p >= '0' && *j->p <= '9')
				j->p++;
		}
		if (*j->p == '}')
			return ++j->p == j->end;
		if (*j->p++ != ',')
			return false;
	}
}

/* ---- tests ------------------------------------------------------------ */

static void
test_accesslog_squid_get(void)
{
	struct al_rec	 r = t_get();

	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_SQUID, &r, true),
	    "1796121373.045     89 192.0.2.7 TCP_MISS/200 1312 GET "
	    "http://example.org/a/b?q=1 alice HIER_DIRECT/198.51.100.9 -\n");
	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_SQUID, &r, false),
	    "1796121373.045     89 192.0.2.7 TCP_MISS/200 1312 GET "
	    "http://example.org/a/b? alice HIER_DIRECT/198.51.100.9 -\n");
}

static void
test_accesslog_squid_refusals_and_tunnels(void)
{
	struct al_rec	 r = t_get();

	r.status = 407;
	r.user = t_s(NULL);
	r.upstream = NULL;
	r.bytes_out = 0;
	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_SQUID, &r, true),
	    "1796121373.045     89 192.0.2.7 TCP_DENIED/407 0 GET "
	    "http://example.org/a/b?q=1 - HIER_NONE/- -\n");
	r = t_get();
	r.proto = PT_PROTO_CONNECT;
	r.method = t_s("CONNECT");
	r.path = t_s(NULL);
	r.port = 443;
	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_SQUID, &r, true),
	    "1796121373.045     89 192.0.2.7 TCP_TUNNEL/200 1312 CONNECT "
	    "example.org:443 alice HIER_DIRECT/198.51.100.9 -\n");
	/* SOCKS5: no method; reply 0x02 (ruleset) is a 403 refusal. */
	r.proto = PT_PROTO_SOCKS5;
	r.method = t_s(NULL);
	r.status = 0x02;
	r.upstream = NULL;
	r.error = "not allowed";
	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_SQUID, &r, true),
	    "1796121373.045     89 192.0.2.7 TCP_DENIED/403 1312 CONNECT "
	    "example.org:443 alice HIER_NONE/- -\n");
	r.status = 0x05;
	CU_ASSERT_EQUAL(al_http_status(&r), 502);
	r.status = 0x00;
	r.error = NULL;
	CU_ASSERT_EQUAL(al_http_status(&r), 200);
	r.proto = PT_PROTO_UDP;
	r.host = t_s("::1");
	r.port = 5353;
	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_SQUID, &r, true),
	    "1796121373.045     89 192.0.2.7 TCP_TUNNEL/200 1312 "
	    "UDP_ASSOCIATE [::1]:5353 alice HIER_NONE/- -\n");
}

static void
test_accesslog_combined_get(void)
{
	struct al_rec	 r = t_get();

	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_COMBINED, &r, true),
	    "192.0.2.7 - alice [01/Dec/2026:10:36:13 +0000] \"GET "
	    "http://example.org/a/b?q=1 HTTP/1.1\" 200 1024 "
	    "\"http://ref.example/\" \"curl/8.0\"\n");
	r.bytes_out = r.body_out = 0;
	r.user = t_s(NULL);
	r.ua = t_s(NULL);
	r.referer = t_s(NULL);
	r.port = 8080;
	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_COMBINED, &r, true),
	    "192.0.2.7 - - [01/Dec/2026:10:36:13 +0000] \"GET "
	    "http://example.org:8080/a/b?q=1 HTTP/1.1\" 200 - \"-\" \"-\"\n");
}

static void
test_accesslog_json_get(void)
{
	struct al_rec	 r = t_get();
	struct t_json	 j;

	r.label = t_s("web");
	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_JSON, &r, true),
	    "{\"time\":\"2026-12-01T10:36:13.045Z\",\"client\":\"192.0.2.7\","
	    "\"client_port\":50123,\"listener\":\"web\",\"user\":\"alice\","
	    "\"proto\":\"http\",\"method\":\"GET\","
	    "\"target\":\"http://example.org/a/b?q=1\",\"status\":200,"
	    "\"bytes_in\":120,\"bytes_out\":1312,"
	    "\"upstream\":\"198.51.100.9\",\"upstream_port\":80,"
	    "\"duration_ms\":89,\"label\":\"web\",\"error\":null,"
	    "\"worker\":1,\"txn\":42,\"user_agent\":\"curl/8.0\","
	    "\"referer\":\"http://ref.example/\"}\n");
	CU_ASSERT(t_json_parse(t_line, &j));
	CU_ASSERT_EQUAL(j.keys, 20);
	/* The same transaction on HTTP/2 stream 5: two keys after proto,
	 * and nothing else changes. */
	r.stream = 5;
	CU_ASSERT_STRING_EQUAL(t_fmt(AL_FMT_JSON, &r, true),
	    "{\"time\":\"2026-12-01T10:36:13.045Z\",\"client\":\"192.0.2.7\","
	    "\"client_port\":50123,\"listener\":\"web\",\"user\":\"alice\","
	    "\"proto\":\"http\",\"client_proto\":\"h2\",\"stream\":5,"
	    "\"method\":\"GET\","
	    "\"target\":\"http://example.org/a/b?q=1\",\"status\":200,"
	    "\"bytes_in\":120,\"bytes_out\":1312,"
	    "\"upstream\":\"198.51.100.9\",\"upstream_port\":80,"
	    "\"duration_ms\":89,\"label\":\"web\",\"error\":null,"
	    "\"worker\":1,\"txn\":42,\"user_agent\":\"curl/8.0\","
	    "\"referer\":\"http://ref.example/\"}\n");
	CU_ASSERT(t_json_parse(t_line, &j));
	CU_ASSERT_EQUAL(j.keys, 22);
}

/* Controls, quotes, backslashes, newlines and invalid UTF-8 where a
 * client puts them; every format keeps one line and its fields. */
static const char	 t_hostile[] =
    "/x\"y\\z\r\nGET /evil HTTP/1.1\t\x01\x7f\xff\xc0\xaf\xed\xa0\x80"
    "\xe6\x97\xa5 \"}{";

static void
test_accesslog_hostile_json(void)
{
	struct al_rec	 r = t_get();
	struct t_json	 j;
	const char	*line;

	r.path = t_s(t_hostile);
	r.ua = t_s(t_hostile + 1);
	r.user = t_s("bob\n\"admin\"\\\x80");
	line = t_fmt(AL_FMT_JSON, &r, true);
	CU_ASSERT(strchr(line, '\n') == line + strlen(line) - 1);
	CHECKF_FATAL(t_json_parse(line, &j), "parses: %s", line);
	/* Decoded: every valid byte back, each invalid one U+FFFD. */
	CU_ASSERT_STRING_EQUAL(j.target, "http://example.org/x\"y\\z\r\nGET "
	    "/evil HTTP/1.1\t\x01\x7f\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xe6\x97\xa5 \"}{");
	CU_ASSERT_STRING_EQUAL(j.user, "bob\n\"admin\"\\\xef\xbf\xbd");
	CU_ASSERT(strncmp(j.ua, "x\"y", 3) == 0);
	CU_ASSERT_EQUAL(j.keys, 20);
}

/* Fields separated by single spaces, none empty. */
static int
t_fields(const char *line)
{
	int	 n = 1;

	for (; *line != '\n' && *line != '\0'; line++)
		if (*line == ' ' && line[1] != ' ')
			n++;
	return n;
}

static void
test_accesslog_hostile_squid(void)
{
	struct al_rec	 r = t_get();
	const char	*line, *p;

	r.path = t_s(t_hostile);
	r.user = t_s("bob smith\n");
	r.method = t_s("G T");
	line = t_fmt(AL_FMT_SQUID, &r, true);
	for (p = line; *p != '\n'; p++)
		CHECKF(((unsigned char)*p > 0x20 &&
		    (unsigned char)*p < 0x7f) || *p == ' ', "byte 0x%02x at %zu", (unsigned char)*p,
		    (size_t)(p - line));
	/* time elapsed client code/status bytes method url user hier type */
	CHECKF(t_fields(line) == 10, "10 fields: %s", line);
	CU_ASSERT(strstr(line, " G%20T ") != NULL);
	CU_ASSERT(strstr(line, " bob%20smith%0a ") != NULL);
	CU_ASSERT(strstr(line, "/x\"y\\z%0d%0aGET%20/evil%20HTTP/1.1%09%01"
	    "%7f%ff%c0%af") != NULL);
}

static void
test_accesslog_hostile_combined(void)
{
	struct al_rec	 r = t_get();
	const char	*line, *p;
	int		 quotes = 0;

	r.path = t_s(t_hostile);
	r.ua = t_s(t_hostile);
	r.referer = t_s("\"");
	r.user = t_s("a b");
	line = t_fmt(AL_FMT_COMBINED, &r, true);
	for (p = line; *p != '\n'; p++) {
		CHECKF((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f,
		    "byte 0x%02x at %zu", (unsigned char)*p,
		    (size_t)(p - line));
		if (*p == '"')
			quotes++;
	}
	CHECKF(quotes == 6, "6 quotes (request, referer, agent): %s", line);
	CU_ASSERT(strncmp(line, "192.0.2.7 - a\\x20b [", 20) == 0);
	CU_ASSERT(strstr(line, "\"\\x22\" \"/x\\x22y\\x5cz\\x0d\\x0aGET /evil")
	    != NULL);
}

/* One U+FFFD per maximal subpart, as Python's and browsers' decoders. */
static void
test_accesslog_utf8_subparts(void)
{
	static const struct {
		const char	*in, *out;
	} cases[] = {
		{ "a\xe2\x82", "a\xef\xbf\xbd" },
		{ "\xf0\x9f\x98z", "\xef\xbf\xbdz" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		    "\xef\xbf\xbd" },
		{ "\xe2\x82\xac\xf0\x9f\x98\x80", "\xe2\x82\xac\xf0\x9f\x98\x80" },
	};
	struct al_rec	 r = t_get();
	struct t_json	 j;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r.ua = t_s(cases[i].in);
		CHECKF_FATAL(t_json_parse(t_fmt(AL_FMT_JSON, &r, true), &j),
		    "case %zu parses", i);
		CHECKF(strcmp(j.ua, cases[i].out) == 0, "case %zu", i);
	}
}

/*
 * U+2028, U+2029 and U+0085 are valid in a JSON string, but Python's
 * str.splitlines and JavaScript before ES2019 end a line there: JSON
 * writes them as \u escapes, alone, at either end, among other UTF-8,
 * after a run long enough for the 16-byte scan. A sequence cut short is
 * still one U+FFFD, never an escape of what it might have been.
 */
static void
test_accesslog_json_escapes_line_separators(void)
{
	static const struct {
		const char	*in, *out;
		size_t		 budget;
	} cases[] = {
		{ "\xe2\x80\xa8", "\\u2028", 700 },
		{ "\xe2\x80\xa9", "\\u2029", 700 },
		{ "\xc2\x85", "\\u0085", 700 },
		{ "\xe2\x80\xa8tail", "\\u2028tail", 700 },
		{ "\xe2\x80\xa9tail", "\\u2029tail", 700 },
		{ "\xc2\x85tail", "\\u0085tail", 700 },
		{ "head\xe2\x80\xa8", "head\\u2028", 700 },
		{ "head\xe2\x80\xa9", "head\\u2029", 700 },
		{ "head\xc2\x85", "head\\u0085", 700 },
		{ "\xc3\xa9\xe2\x80\xa8\xe6\x97\xa5\xc2\x85\xe2\x80\xa9"
		    "\xf0\x9f\x98\x80", "\xc3\xa9\\u2028\xe6\x97\xa5\\u0085"
		    "\\u2029\xf0\x9f\x98\x80", 700 },
		{ "\xe2\x80\xa8\xe2\x80\xa9\xc2\x85\xc2\x85",
		    "\\u2028\\u2029\\u0085\\u0085", 700 },
		{ "0123456789abcdefghij\xe2\x80\xa9 \"q\"",
		    "0123456789abcdefghij\\u2029 \\\"q\\\"", 700 },
		/* Their neighbours end no line: as they are. */
		{ "\xe2\x80\xa7\xe2\x80\xaa\xc2\x84\xc2\x86\xc2\xa0",
		    "\xe2\x80\xa7\xe2\x80\xaa\xc2\x84\xc2\x86\xc2\xa0", 700 },
		/* Cut short: one U+FFFD for the maximal subpart. */
		{ "ab\xe2\x80", "ab\\ufffd", 700 },
		{ "\xe2\x80", "\\ufffd", 700 },
		{ "\xe2\x80x", "\\ufffdx", 700 },
		{ "ab\xc2", "ab\\ufffd", 700 },
		{ "\xe2\x80\xe2\x80\xa8", "\\ufffd\\u2028", 700 },
		{ "\xe2\x80\xc2\x85", "\\ufffd\\u0085", 700 },
		/* The budget counts the escape, and never splits it. */
		{ "ab\xe2\x80\xa8", "ab...", 7 },
		{ "ab\xe2\x80\xa8", "ab\\u2028", 8 },
		{ "ab\xc2\x85z", "ab...", 10 },
	};
	struct al_rec	 r = t_get();
	struct t_json	 j;
	struct al_out	 o;
	char		 got[800];
	const char	*line;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o = (struct al_out){ got, 0, sizeof(got) };
		al_put_json(&o, cases[i].in, strlen(cases[i].in),
		    cases[i].budget);
		CHECKF(o.len == strlen(cases[i].out) &&
		    memcmp(got, cases[i].out, o.len) == 0,
		    "case %zu: %.*s, want %s", i, (int)o.len, got,
		    cases[i].out);
	}
	/* In a whole record: no raw separator, and a reader gets them back. */
	r.ua = t_s("a\xe2\x80\xa8" "b\xe2\x80\xa9" "c\xc2\x85" "d");
	r.user = t_s("\xc2\x85");
	line = t_fmt(AL_FMT_JSON, &r, true);
	CU_ASSERT(strstr(line, "\xe2\x80\xa8") == NULL);
	CU_ASSERT(strstr(line, "\xe2\x80\xa9") == NULL);
	CU_ASSERT(strstr(line, "\xc2\x85") == NULL);
	CHECKF_FATAL(t_json_parse(line, &j), "parses: %s", line);
	CU_ASSERT_STRING_EQUAL(j.ua, "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c\xc2\x85"
	    "d");
	CU_ASSERT_STRING_EQUAL(j.user, "\xc2\x85");
}

static void
test_accesslog_budgets(void)
{
	static char	 big[100000];
	struct al_rec	 r = t_get();
	struct t_json	 j;
	enum al_format	 f;
	const char	*line;

	memset(big, 1, sizeof(big));
	r.path = (struct pt_str){ big, sizeof(big) };
	r.ua = r.referer = r.user = r.label = r.method = r.path;
	r.error = "e";
	/* The longest parent name there is (common/parent.h). */
	r.parent = "pppppppppppppppppppppppppppppppppppppppppppppppp";
	/* The largest HTTP/2 stream identifier (2^31 - 1). */
	r.stream = 2147483647u;
	/* And every field that appears only sometimes, at its longest. */
	{
		static struct sockaddr_storage	 v6;
		struct sockaddr_in6		*s6 = (struct sockaddr_in6 *)&v6;

		s6->sin6_family = AF_INET6;
		memset(&s6->sin6_addr, 0xfe, sizeof(s6->sin6_addr));
		s6->sin6_port = 0xffff;
		r.balancer = r.egress = r.peer = r.upstream = &v6;
		r.pp_authority = r.pp_unique_id = r.path;
	}
	for (f = AL_FMT_SQUID; f <= AL_FMT_JSON; f++) {
		line = t_fmt(f, &r, true);
		CHECKF(strlen(line) <= AL_REC_MAX, "format %d: %zu bytes", f,
		    strlen(line));
		CHECKF(strstr(line, "...") != NULL, "format %d: cut marked", f);
	}
	line = t_fmt(AL_FMT_JSON, &r, true);
	CHECKF(t_json_parse(line, &j), "a cut record still parses");
	/* A cut never splits an escape or a UTF-8 sequence. */
	memset(big, 0, sizeof(big));
	for (size_t i = 0; i + 3 <= sizeof(big) - 1; i += 3)
		memcpy(big + i, "\xe6\x97\xa5", 3);
	r = t_get();
	r.path = r.ua = (struct pt_str){ big, strlen(big) };
	line = t_fmt(AL_FMT_JSON, &r, true);
	CHECKF(t_json_parse(line, &j), "cut UTF-8 parses");
	CU_ASSERT(t_utf8_valid(j.target) && t_utf8_valid(j.ua));
}

static void
test_accesslog_addresses(void)
{
	struct al_rec			 r = t_get();
	struct sockaddr_storage		 p6, m4;
	struct t_json			 j;

	t_addr(&p6, "2001:db8::5", 4000);
	t_addr(&m4, "::ffff:10.1.2.3", 443);
	r.peer = &p6;
	r.upstream = &m4;
	r.host = t_s("2001:db8::1");
	r.port = 8080;
	CU_ASSERT(strncmp(t_fmt(AL_FMT_SQUID, &r, true),
	    "1796121373.045     89 2001:db8::5 TCP_MISS/200 1312 GET "
	    "http://[2001:db8::1]:8080/a/b?q=1 alice HIER_DIRECT/10.1.2.3 -",
	    100) == 0);
	CU_ASSERT(t_json_parse(t_fmt(AL_FMT_JSON, &r, true), &j));
	CU_ASSERT(strstr(t_line, "\"client\":\"2001:db8::5\","
	    "\"client_port\":4000") != NULL);
	CU_ASSERT(strstr(t_line, "\"upstream\":\"10.1.2.3\","
	    "\"upstream_port\":443") != NULL);
	r.upstream = NULL;
	t_fmt(AL_FMT_JSON, &r, true);
	CU_ASSERT(strstr(t_line, "\"upstream\":null,\"duration_ms\"") != NULL);
}

static void
test_accesslog_dropped_line(void)
{
	struct al_fmt_opts	 o = { AL_FMT_JSON, false, true };
	char			 buf[AL_REC_MAX];
	struct t_json		 j;
	size_t			 n;

	n = al_fmt_dropped(&o, T_WALL, 3, 17, buf, sizeof(buf));
	buf[n] = '\0';
	CU_ASSERT_STRING_EQUAL(buf, "{\"time\":\"2026-12-01T10:36:13.045Z\","
	    "\"event\":\"dropped\",\"dropped\":17,\"worker\":3}\n");
	CU_ASSERT(t_json_parse(buf, &j));
	o.format = AL_FMT_SQUID;
	n = al_fmt_dropped(&o, T_WALL, 3, 17, buf, sizeof(buf));
	buf[n] = '\0';
	CU_ASSERT_STRING_EQUAL(buf, "1796121373.045      0 - NONE_NONE/000 0 "
	    "ACCESSLOG_DROPPED dropped=17,worker=3 - HIER_NONE/- -\n");
	CU_ASSERT_EQUAL(t_fields(buf), 10);
}

static void
test_accesslog_local_time(void)
{
	struct al_fmt_opts	 o = { AL_FMT_JSON, true, true };
	struct al_rec		 r = t_get();
	char			 buf[AL_REC_MAX];
	size_t			 n;

	/* POSIX: "<name><offset west>": UTC+05:30 is written -5:30. */
	setenv("TZ", "IST-5:30", 1);
	tzset();
	r.wall_ms = T_WALL + 1000;	/* a second the UTC tests never used */
	n = al_fmt(&o, &r, buf, sizeof(buf));
	buf[n] = '\0';
	CU_ASSERT(strncmp(buf, "{\"time\":\"2026-12-01T16:06:14.045+05:30\"",
	    39) == 0);
	o.format = AL_FMT_COMBINED;
	n = al_fmt(&o, &r, buf, sizeof(buf));
	buf[n] = '\0';
	CU_ASSERT(strstr(buf, "[01/Dec/2026:16:06:14 +0530]") != NULL);
}

/* What each escaper must write for one byte, the slow way. JSON's is
 * for ASCII only (UTF-8 sequences have their own test above). */
static size_t
t_ref_escape(char *out, unsigned char c, int kind, bool space)
{
	static const char	 hex[] = "0123456789abcdef";

	if (kind == 0) {		/* json */
		if (c == '"' || c == '\\')
			return (size_t)sprintf(out, "\\%c", c);
		if (c == '\n' || c == '\r' || c == '\t')
			return (size_t)sprintf(out, "\\%c", c == '\n' ? 'n' :
			    c == '\r' ? 'r' : 't');
		if (c < 0x20 || c == 0x7f)
			return (size_t)sprintf(out, "\\u00%c%c", hex[c >> 4],
			    hex[c & 15]);
		out[0] = (char)c;
		return 1;
	}
	if (kind == 1) {		/* quoted */
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' &&
		    !(space && c == ' ')) {
			out[0] = (char)c;
			return 1;
		}
		return (size_t)sprintf(out, "\\x%c%c", hex[c >> 4], hex[c & 15]);
	}
	if (c > 0x20 && c < 0x7f) {	/* squid */
		out[0] = (char)c;
		return 1;
	}
	return (size_t)sprintf(out, "%%%c%c", hex[c >> 4], hex[c & 15]);
}

/*
 * The escapers find runs of bytes to copy 8 or 16 at a time (fmt.c's
 * al_run): every length from 0 to 70, with one to three bytes to escape
 * at every position (and none), must come out as the byte-at-a-time
 * reference says, for the three escapers.
 */
static void
test_accesslog_escapers_match_bytewise_reference(void)
{
	static const unsigned char	 odd[] = { '"', '\\', '\n', 0x01, 0x7f,
					    ' ', 0x1f, 0x80, 0xff, 0xc3 };
	unsigned char	 in[80];
	char		 got[800], want[800];
	struct al_out	 o;
	size_t		 len, pos, k, w;
	unsigned	 seed = 12345, kind, v;
	int		 bad = 0;

	for (len = 0; len <= 70; len++)
		for (pos = 0; pos <= len; pos++)
			for (v = 0; v < 3; v++)
				for (kind = 0; kind < 4; kind++) {
					for (k = 0; k < len; k++) {
						seed = seed * 1103515245u + 12345u;
						in[k] = (unsigned char)(0x21 +
						    (seed >> 16) % 94);
					}
					if (pos < len)
						in[pos] = odd[(pos + v) % (kind == 0 ?
						    7 : sizeof(odd))];
					if (v == 2 && len > 0)
						in[len - 1 - pos % len] = odd[v];
					if (v == 1 && pos + 17 < len)
						in[pos + 17] = ' ';
					o = (struct al_out){ got, 0, sizeof(got) };
					if (kind == 0)
						al_put_json(&o, (char *)in, len, 700);
					else if (kind == 3)
						al_put_squid(&o, (char *)in, len, 700);
					else
						al_put_quoted(&o, (char *)in, len, 700,
						    kind == 2);
					for (k = 0, w = 0; k < len; k++)
						w += t_ref_escape(want + w, in[k],
						    kind == 3 ? 2 : kind == 0 ? 0 : 1,
						    kind == 2);
					if (o.len != w || memcmp(got, want, w) != 0)
						bad++;
					if (bad == 1 && (o.len != w ||
					    memcmp(got, want, w) != 0))
						CHECKF(0, "escaper %u, length %zu, "
						    "byte at %zu: %.*s, want %.*s",
						    kind, len, pos, (int)o.len, got,
						    (int)w, want);
				}
	CU_ASSERT_EQUAL(bad, 0);
}

void	register_accesslog_fmt_suite(void);

void
register_accesslog_fmt_suite(void)
{
	CU_pSuite	 s = CU_add_suite("accesslog_fmt", NULL, NULL);

	CU_add_test(s, "squid_get", test_accesslog_squid_get);
	CU_add_test(s, "squid_refusals_and_tunnels",
	    test_accesslog_squid_refusals_and_tunnels);
	CU_add_test(s, "combined_get", test_accesslog_combined_get);
	CU_add_test(s, "json_get", test_accesslog_json_get);
	CU_add_test(s, "hostile_json", test_accesslog_hostile_json);
	CU_add_test(s, "hostile_squid", test_accesslog_hostile_squid);
	CU_add_test(s, "hostile_combined", test_accesslog_hostile_combined);
	CU_add_test(s, "utf8_subparts", test_accesslog_utf8_subparts);
	CU_add_test(s, "json_escapes_line_separators",
	    test_accesslog_json_escapes_line_separators);
	CU_add_test(s, "budgets", test_accesslog_budgets);
	CU_add_test(s, "addresses", test_accesslog_addresses);
	CU_add_test(s, "dropped_line", test_accesslog_dropped_line);
	CU_add_test(s, "local_time", test_accesslog_local_time);
	CU_add_test(s, "escapers_match_bytewise_reference",
	    test_accesslog_escapers_match_bytewise_reference);
}
