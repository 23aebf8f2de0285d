/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Access log records and their three text forms (squid, combined, json).
 * Pure functions over the caller's bytes: no I/O, no allocation, usable
 * from the worker's LOG hook and from the unit tests alike.
 */
#ifndef PT_ACCESSLOG_FMT_H
#define PT_ACCESSLOG_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include <portico/module.h>

/*
 * The longest record, '\n' included. Every field has its own budget
 * (AL_MAX_* below, counted in output bytes after escaping) so a record
 * always fits: one record is one write() of at most PIPE_BUF bytes, which
 * a FIFO or pipe never splits, whatever the client sent.
 */
#define AL_REC_MAX	4096
#define AL_MAX_TARGET	1136
#define AL_MAX_UA	448
#define AL_MAX_REFERER	448
/* PROXY v2 TLVs (pt_req_tag "proxy_authority", "proxy_unique_id"). */
#define AL_MAX_PROXY_TLV	160
#define AL_MAX_USER	300
#define AL_MAX_LABEL	300
#define AL_MAX_ERROR	200
#define AL_MAX_LISTENER	200
#define AL_MAX_METHOD	40

enum al_format {
	AL_FMT_SQUID = 0,
	AL_FMT_COMBINED,
	AL_FMT_JSON
};

struct al_fmt_opts {
	enum al_format	 format;
	bool		 local_time;	/* false: UTC */
	bool		 query;		/* false: the query string is cut */
};

/* One finished transaction, borrowed from the LOG hook's request. */
struct al_rec {
	uint64_t			 wall_ms;	/* Unix time, ms */
	const struct sockaddr_storage	*peer;
	const struct sockaddr_storage	*upstream;	/* or AF_UNSPEC */
	/* The balancer a PROXY header came through (pt_conn_balancer), or
	 * NULL. */
	const struct sockaddr_storage	*balancer;
	/* The local address the outgoing connection was bound to
	 * (pt_conn_egress), or NULL: the kernel chose it. */
	const struct sockaddr_storage	*egress;
	/* The parent proxy that carried it (pt_conn_parent: 1 to 48 of
	 * [A-Za-z0-9_.-], never escaped), or NULL: straight to its target. */
	const char			*parent;
	/* The HTTP/2 stream it came on (pt_conn_stream), or 0. */
	uint32_t			 stream;
	const char			*listener;
	const char			*error;		/* or NULL */
	struct pt_str			 user, method, host, path, label;
	struct pt_str			 ua, referer;	/* HTTP only */
	/* A PROXY v2 header's AUTHORITY and UNIQUE_ID, or empty. */
	struct pt_str			 pp_authority, pp_unique_id;
	enum pt_proto			 proto;
	uint16_t			 port;
	int				 status;
	uint64_t			 bytes_in;	/* from the client */
	uint64_t			 bytes_out;	/* to the client */
	/* Of bytes_out, the bodies (and a tunnel's bytes), without the
	 * response heads: combined's size field, as Apache's %b. */
	uint64_t			 body_out;
	uint64_t			 duration_ms;
	uint64_t			 txn;
	int				 worker;
};

/* A bounded output: appends never pass cap - 1 (room for the '\n'). */
struct al_out {
	char	*p;
	size_t	 len, cap;
};

/* ---- fmt.c ----------------------------------------------------------- */

/*
 * Formats <r> as one line in <o>'s format, '\n' included, into <out>
 * (<cap> >= AL_REC_MAX bytes). Returns its length. One thread at a
 * time: the time texts and addresses it caches are the process's (a
 * worker formats on its loop only; its writer thread never formats),
 * which spares a TLS lookup per use in a loaded module.
 */
size_t		 al_fmt(const struct al_fmt_opts *o, const struct al_rec *r,
		    char *out, size_t cap);
/*
 * The line that says <n> records of worker <worker> were dropped (the
 * sink could not keep up), in <o>'s format, at <wall_ms>. Returns its
 * length.
 */
size_t		 al_fmt_dropped(const struct al_fmt_opts *o, uint64_t wall_ms,
		    int worker, uint64_t n, char *out, size_t cap);
/* The name of <p> in records ("http", "socks5", ...). */
const char	*al_proto_name(enum pt_proto p);
/*
 * The status an HTTP-minded reader expects: HTTP as is, SOCKS reply
 * codes mapped (0 -> 200, not allowed -> 403, unreachable or refused ->
 * 502, TTL expired -> 504, unsupported -> 501, other -> 500).
 */
int		 al_http_status(const struct al_rec *r);
/* Whether <r> was refused by a module or by authentication. */
bool		 al_is_denied(const struct al_rec *r);

/* Escapers, each appending at most <budget> bytes of <o> and marking a
 * cut with "...". JSON: RFC 8259, invalid UTF-8 as U+FFFD, and U+0085,
 * U+2028, U+2029 as \uXXXX (line ends to str.splitlines). Quoted
 * (combined): '"', '\\', controls and bytes >= 0x7f as \xHH (and the
 * space when <space>). Squid: controls, space and bytes >= 0x7f as %HH. */
void		 al_put_json(struct al_out *o, const char *s, size_t len,
		    size_t budget);
void		 al_put_quoted(struct al_out *o, const char *s, size_t len,
		    size_t budget, bool space);
void		 al_put_squid(struct al_out *o, const char *s, size_t len,
		    size_t budget);
/* Broken-down time of <sec> (UTC or local), cached per second per
 * thread; *gmtoff_out in seconds east of UTC. */
void		 al_time(time_t sec, bool local, struct tm *tm_out,
		    long *gmtoff_out);

#endif
