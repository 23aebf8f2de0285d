/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HTTP/1.1 message syntax (RFC 9112), strict: request and response heads,
 * request targets, and the chunked transfer coding. Pure functions over
 * caller-owned bytes: no I/O, no allocation, usable from any process.
 * Parsed strings are slices into the caller's buffer and die with it.
 */
#ifndef PT_WORKER_HTTP_PARSE_H
#define PT_WORKER_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "portico/module.h"

#define HTTP_MAX_HEADERS	128

/* PARSE_OK, PARSE_AGAIN, PARSE_BAD; on PARSE_BAD m->error_status and
 * m->error say why. */
#include "common/parse.h"

enum http_body {
	HTTP_BODY_NONE = 0,	/* no body (or a CONNECT/101 tunnel follows) */
	HTTP_BODY_LENGTH,	/* content_length bytes */
	HTTP_BODY_CHUNKED,	/* chunked, last transfer coding */
	HTTP_BODY_CLOSE,	/* response only: until the origin closes */
};

/* Request-target forms (RFC 9112 3.2). */
enum http_target_form {
	HTTP_TARGET_ORIGIN = 0,		/* "/path?q" */
	HTTP_TARGET_ABSOLUTE,		/* "http://host:port/path" */
	HTTP_TARGET_AUTHORITY,		/* "host:port" (CONNECT) */
	HTTP_TARGET_ASTERISK,		/* "*" */
};

struct http_header {
	struct pt_str	 name;
	struct pt_str	 value;		/* OWS trimmed both sides */
};

/* Connection-header tokens and other facts the proxy acts on. */
#define HTTP_CONN_CLOSE		0x01	/* Connection: close */
#define HTTP_CONN_KEEPALIVE	0x02	/* Connection: keep-alive */
#define HTTP_CONN_UPGRADE	0x04	/* Connection: upgrade */

struct http_msg {
	/* Request line. */
	struct pt_str		 method;
	struct pt_str		 target;
	enum http_target_form	 target_form;
	/* Status line. */
	int			 status;
	struct pt_str		 reason;
	/* Both: 10 for HTTP/1.0, 11 for HTTP/1.1. */
	int			 version;

	struct http_header	 headers[HTTP_MAX_HEADERS];
	unsigned		 nheaders;
	size_t			 head_len;	/* bytes up to and with CRLFCRLF */

	/* Framing, decided by the parser (RFC 9112 6.3). */
	enum http_body		 body;
	uint64_t		 content_length;
	unsigned		 conn_flags;	/* HTTP_CONN_* */
	/* Connection names something else too (a field to drop), so
	 * http_header_is_hop must read its list. */
	bool			 conn_names;
	bool			 upgrade_websocket; /* Upgrade: websocket */
	bool			 expect_continue;   /* Expect: 100-continue */
	/* Response: Transfer-Encoding without chunked last, so the body
	 * runs to the close and is still coded (RFC 9112 6.3 rule 4 for
	 * responses): the coding list must go on with it. */
	bool			 te_close;
	/* Response: Transfer-Encoding lists a coding besides chunked
	 * ("gzip, chunked"): without the chunks the bytes are still coded. */
	bool			 te_coded;
	int			 host_count;	/* Host fields seen */
	int			 proxy_auth_count; /* Proxy-Authorization */
	struct pt_str		 host;		/* the Host value, if one */
	int			 max_forwards;	/* -1: absent */

	/* On PARSE_BAD: the status to answer (400, 431, 501, 505 for a
	 * request; 502 for a response) and a short static reason. */
	int			 error_status;
	const char		*error;
};

/* A parsed absolute-form URI or CONNECT authority. */
struct http_uri {
	struct pt_str	 scheme;	/* "http", lower case not guaranteed */
	struct pt_str	 host;		/* without brackets for IPv6 */
	uint16_t	 port;		/* default 80 for http */
	bool		 host_is_ipv6;
	struct pt_str	 path;		/* path and query, "/" when empty;
					 * "?query" when only the path is
					 * empty (the writer adds "/") */
	struct pt_str	 authority;	/* host[:port] exactly as sent */
	bool		 path_empty;	/* no path and no query at all */
};

/*
 * The chunked decoder, one per message body. Zero it to start. It
 * validates sizes, CRLFs and trailer syntax, and tells the caller which
 * input bytes are chunk data, so the body can be forwarded verbatim
 * (pass-through) or with the chunk framing removed (to HTTP/1.0).
 */
struct http_chunked {
	int		 state;		/* private */
	uint64_t	 remaining;	/* private: data left in this chunk */
	size_t		 line_len;	/* private: size or trailer line */
	size_t		 trailer_len;	/* private: total trailer bytes */
	bool		 done;		/* the last chunk and trailers ended */
};

/* ---- worker/http_parse.c --------------------------------------------- */

/*
 * Parses a request head from <buf>[0..<len>). PARSE_AGAIN when the head
 * is not complete yet (and <len> < <max_head>); PARSE_BAD with
 * error_status 431 when no complete head fits in <max_head> bytes, 400
 * for syntax errors and ambiguous framing (both Content-Length and
 * Transfer-Encoding, conflicting or invalid Content-Length, bare CR or
 * LF, obs-fold, whitespace before a colon, control characters, missing
 * or repeated Host in HTTP/1.1, Transfer-Encoding in HTTP/1.0), 501 for
 * a transfer coding other than chunked, 505 for a version other than
 * HTTP/1.0 and HTTP/1.1. Any split of the same bytes gives the same
 * result.
 */
int	http_parse_request(const char *buf, size_t len, size_t max_head,
	    struct http_msg *m);
/*
 * Parses a response head. <req_method> decides body framing (HEAD and a
 * 2xx to CONNECT have none); 1xx, 204 and 304 have none either. A
 * response framed ambiguously (Content-Length with Transfer-Encoding,
 * invalid or conflicting Content-Length) is PARSE_BAD with 502.
 * Transfer-Encoding whose last coding is not chunked is read until close.
 */
int	http_parse_response(const char *buf, size_t len, size_t max_head,
	    struct pt_str req_method, struct http_msg *m);
/* Parses "http://host[:port][/path]" (scheme case-insensitive, userinfo
 * refused). 0 or -1. */
int	http_parse_absolute_uri(struct pt_str target, struct http_uri *out);
/* Parses a CONNECT target "host:port" or "[v6]:port" (port required).
 * 0 or -1. */
int	http_parse_authority(struct pt_str target, struct http_uri *out);
/*
 * Feeds <len> body bytes to the decoder. Returns how many it consumed
 * (>= 0, at most <len>; it stops early at the end of the body or at the
 * end of a data span), or -1 on a framing error. When the consumed bytes
 * are chunk data, *data_off_out and *data_len_out locate them in <buf>
 * (data_len 0 otherwise). ch->done becomes true after the final CRLF.
 * <max_trailer> bounds trailer bytes.
 */
ssize_t	http_chunked_feed(struct http_chunked *ch, const char *buf, size_t len,
	    size_t max_trailer, size_t *data_off_out, size_t *data_len_out);
/*
 * A Proxy-Authorization value: "Basic", 1*SP, one token68 of base64
 * (RFC 7617, RFC 4648: padded to a multiple of 4 when padded at all),
 * optional trailing white space, nothing else. Decodes it into <out>
 * (<cap> bytes) with its length in *len_out. Returns 0; 1 for another
 * scheme (left to the modules); -1 for a Basic credential that is not
 * exactly one well-formed token (a list, junk after the padding, a bad
 * length, too long): never read as its first part.
 */
int	http_parse_basic(struct pt_str value, char *out, size_t cap,
	    size_t *len_out);
/* Finds a header by case-insensitive name; NULL when absent. */
const struct http_header *http_header_find(const struct http_msg *m,
	    const char *name);
/* True when <name> is a hop-by-hop field the proxy must drop: the fixed
 * list (Connection, Keep-Alive, Proxy-Connection, Proxy-Authorization,
 * Proxy-Authenticate, TE, Trailer, Transfer-Encoding, Upgrade) or one
 * named in the message's Connection header. */
bool	http_header_is_hop(const struct http_msg *m, struct pt_str name);
/* Case-insensitive comparison of <n> bytes (ASCII letters only). */
bool	http_mem_ieq(const char *a, const char *b, size_t n);
/* Case-insensitive comparison of a slice with a C string. Inline so that
 * a literal's length is known where it is called: most comparisons made
 * per header (against the names the proxy knows) end on the length. */
static inline bool
http_str_ieq(struct pt_str s, const char *lit)
{
	size_t	 n = strlen(lit);

	return s.len == n && http_mem_ieq(s.ptr, lit, n);
}

/* Methods are case-sensitive (RFC 9110 9.1): "head" is not HEAD, and
 * the parser frames its response as not HEAD's. */
static inline bool
http_method_is(struct pt_str s, const char *lit)
{
	size_t	 n = strlen(lit);

	return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

#endif
