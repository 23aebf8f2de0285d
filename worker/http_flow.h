/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One direction of an HTTP transaction (a flow): the buffers its bytes
 * pass through, how they are read, framed and written, and the pipe a
 * large body takes instead. A leaf: it knows sockets, buffers and the
 * framing rules, not which side of a transaction it serves.
 */
#ifndef PT_WORKER_HTTP_FLOW_H
#define PT_WORKER_HTTP_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/types.h>

#include "worker/buf.h"
#include "worker/conn.h"
#include "worker/http_parse.h"
#include "worker/relay.h"

/* Room for a rewritten head: what we add (Host, Via, Connection,
 * Transfer-Encoding) is far less than this. */
#define HTTP_HEAD_SLACK		512

/*
 * Invariants (also in doc/internals.md section 13): in_start <= in_fwd
 * <= in_raw <= in_len <= buf_size(in); bytes [in_start, in_fwd) are
 * framed body ready to write; [in_raw, in_len) are read and not yet
 * framed; [in_fwd, in_raw) is chunk framing removed while de-chunking.
 * <out> holds a head, written before any byte of <in>.
 */
struct http_flow {
	char		*in;
	uint32_t	 in_start, in_fwd, in_raw, in_len;
	char		*out;
	uint32_t	 out_start, out_len;
	enum http_body	 body;
	uint64_t	 remaining;
	struct http_chunked chunk;
	bool		 dechunk;	/* drop chunk framing on the way */
	bool		 keep_out;	/* written head kept for a retry */
	uint32_t	 scan;		/* head: searched for its end up to */
	bool		 seen_lf;	/* head: its first line is complete */
	bool		 head_done;	/* head parsed and out built */
	bool		 body_done;	/* every body byte framed */
	/* Body bytes in the connection's pipe for this flow (the relay_dir
	 * of its source side: pipe_fill): spliced from the source, not yet
	 * to the destination. Only once the buffers hold nothing, so they
	 * are younger than anything in <in> or <out>. */
	size_t		 piped;
	bool		 pipe_full;	/* splice in said EAGAIN with bytes
					 * piped: read again after a write */
	/* Request: the raw head, kept at the front of <in> from its parse
	 * on, for pt_req_header; 0 once <in> was given back or shifted. */
	uint32_t	 head_len;
};

/* Bytes to write from the flow's buffers (its head, framed body). */
static inline bool
http_flow_has_buffered(const struct http_flow *f)
{
	return (f->out != NULL && f->out_start < f->out_len) ||
	    (f->in != NULL && f->in_start < f->in_fwd);
}

/* Bytes to write from the buffers or the pipe. */
static inline bool
http_flow_has_output(const struct http_flow *f)
{
	return http_flow_has_buffered(f) || f->piped > 0;
}

/* May the flow read from its source now? Only with nothing left to write
 * (one buffer in flight), or while a head is incomplete. A body going
 * through the pipe reads while the pipe has room, overlapping the writes
 * as the tunnel relay does. */
static inline bool
http_flow_wants_read(const struct http_flow *f)
{
	if (f->body_done)
		return false;
	if (!f->head_done)
		return f->in == NULL || f->in_len < buf_size(f->in);
	if (f->piped > 0)
		return !f->pipe_full && f->piped < RELAY_PIPE_HIGH;
	return !http_flow_has_output(f) && f->in_raw == f->in_len;
}

/* Head and body framed, and all of it written. */
static inline bool
http_flow_finished(const struct http_flow *f)
{
	return f->head_done && f->body_done && !http_flow_has_output(f);
}

/* The budget a read from <src> spends: PT_DIR_UP from the client. */
static inline int
http_flow_src_dir(const struct pt_conn *c, const struct conn_side *src)
{
	return src == &c->c_side[SIDE_CLIENT] ? PT_DIR_UP : PT_DIR_DOWN;
}

/* May side <src> be read now: readiness noted or bytes in its transport,
 * and budget left (without it the socket is not read, and
 * pt_conn_budget_add resumes the protocol). Inline: the pump asks it
 * every round. */
static inline bool
http_flow_may_read(struct pt_conn *c, struct conn_side *src)
{
	return conn_readable(c, src) &&
	    c->c_budget[http_flow_src_dir(c, src)].left != 0;
}

/* A buffer for a head rewritten from one of <head_len> bytes: small when
 * it fits with HTTP_HEAD_SLACK, so common requests never touch the large
 * class. NULL when out of buffers; the caller owns it (buf_put). */
static inline char *
http_flow_head_buf(size_t head_len)
{
	return buf_get(head_len + HTTP_HEAD_SLACK <= buf_class_size(BUF_SMALL) ?
	    BUF_SMALL : BUF_LARGE);
}

/* Gives both buffers back and empties the flow's positions. */
static inline void
http_flow_release(struct http_flow *f)
{
	buf_put(f->in);
	buf_put(f->out);
	f->in = f->out = NULL;
	f->in_start = f->in_fwd = f->in_raw = f->in_len = 0;
	f->out_start = f->out_len = 0;
	f->scan = 0;
	f->seen_lf = false;
	f->head_len = 0;
}

/* Moves unframed bytes (the start of the next message, pipelined) to the
 * front of <in>. Inline, as http_flow_release: once per request. */
static inline void
http_flow_shift(struct http_flow *f)
{
	uint32_t	 n;

	if (f->in == NULL || f->in_raw == 0)
		return;
	n = f->in_len - f->in_raw;
	memmove(f->in, f->in + f->in_raw, n);
	f->in_start = f->in_fwd = f->in_raw = 0;
	f->in_len = n;
	f->scan = 0;
	f->seen_lf = false;
	f->head_len = 0;
}

/* ---- worker/http_flow.c ---------------------------------------------- */

/* Moves what <f> has yet to write of <out> to a buffer of the largest
 * class (true when <out> already is one); false when out of buffers. */
bool	 http_flow_out_grow(struct http_flow *f);
/* A head did not fit the small input buffer: moves <in> to a large one.
 * False when it is already large, or out of buffers. */
bool	 http_flow_grow(struct http_flow *f);
/* Drops what has been written; gives <in> back when it holds nothing, so
 * an idle connection keeps no payload memory. */
void	 http_flow_compact(struct http_flow *f);
/*
 * Should the head in <in> be parsed now? When its first line is complete
 * (garbage is refused at once) and when a blank line may end it. Heads
 * are parsed whole, so a client dribbling a large head a byte at a time
 * costs a few parses, not one per byte.
 */
bool	 http_flow_head_ready(struct http_flow *f);
/* Reads from <src> into <in> (taken when the flow has none). Bytes read,
 * 0 at EOF, -EAGAIN, or another -errno (-ENOBUFS: no buffer). What the
 * client sends counts as bytes_in. */
ssize_t	 http_flow_read(struct pt_conn *c, struct http_flow *f,
	    struct conn_side *src);
/* As http_flow_read, but through <d>'s pipe (<d>: the relay_dir of
 * <src>'s side) when the body may go that way (relay_body_splices). */
ssize_t	 http_flow_fill(struct pt_conn *c, struct http_flow *f,
	    struct relay_dir *d, struct conn_side *src);
/* http_flow_write's work once <dst> may be written and the flow has
 * output; the same results. Call http_flow_write. */
ssize_t	 http_flow_send(struct pt_conn *c, struct http_flow *f,
	    struct relay_dir *d, struct conn_side *dst);
/*
 * Writes the flow to side <dst>: the head and the framed body in one
 * system call, or the piped bytes of <d> (the relay_dir of the flow's
 * source side). Bytes written (> 0), 0 when blocked or nothing to do,
 * -1 after closing the connection. Bytes to the client count as
 * bytes_out; the caller learns from the count that the client has had
 * some. Inline: the pump calls it for both flows every round, and most
 * calls find nothing to write, which then costs no call.
 */
static inline ssize_t
http_flow_write(struct pt_conn *c, struct http_flow *f, struct relay_dir *d,
    struct conn_side *dst)
{
	if (!(dst->ready & EPOLLOUT) || !http_flow_has_output(f))
		return 0;
	return http_flow_send(c, f, d, dst);
}
/* Frames what was read of a body (at the source's EOF when <eof>):
 * advances in_raw and in_fwd; <max_trailer> bounds a chunked body's
 * trailer (http_chunked_feed). 0, or -1 on a framing error. */
int	 http_flow_frame(struct http_flow *f, bool eof, size_t max_trailer);

#endif
