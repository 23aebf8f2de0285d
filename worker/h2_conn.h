/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the HTTP/2 files share (worker/h2.c, h2_stream.c, h2_head.c): the
 * connection, its streams, and the calls between them. Private to them.
 */
#ifndef PT_WORKER_H2_CONN_H
#define PT_WORKER_H2_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "worker/loop.h"

struct pt_conn;
struct http_msg;

/* Allocations of a page or more a new nghttp2 session makes (its frame
 * buffer and its stream map: two). */
#define H2_BIG_MAX		4

/* The client's recent stream IDs (h2_ids.c): how many, a multiple of 64. */
#define H2_IDS_RECENT		128

struct h2_ids {
	int32_t			 last;	/* highest stream the client opened */
	/* Where the client's bytes stand (h2_ids_recv): bytes to pass
	 * before the next frame header (the preface's at first: h2_start
	 * sets it), and a header split between reads. */
	uint32_t		 skip;
	uint64_t		 opened[H2_IDS_RECENT / 64];
	uint64_t		 done[H2_IDS_RECENT / 64];	/* it ended or
							 * reset them */
	uint8_t			 hdr[9];
	uint8_t			 hdr_len;
	/* Empty DATA frames without END_STREAM in a row (h2_ids_recv),
	 * and whether the next byte is a padded DATA frame's pad length,
	 * which says if it is empty too. */
	uint16_t		 empty_run;
	bool			 pad_check;
};

/* Empty DATA frames without END_STREAM in a row that end the connection
 * (ENHANCE_YOUR_CALM): they carry nothing, and each costs a frame's work
 * (CVE-2019-9518). A client that keeps the rules sends one at most. */
#define H2_EMPTY_RUN_MAX	32

/* DATA payloads the output refers to in their streams' buffers at most
 * (h2.c): a write's worth of 16 KiB frames. */
#define H2_SEGS			64

/* A DATA frame's payload written from its stream's <tx>, not copied into
 * the output: on a plain socket one writev takes the frames' headers
 * (in out) and the payloads where they are. */
struct h2_seg {
	struct h2_stream	*st;
	const char		*p;
	uint32_t		 len;
	uint32_t		 at;	/* it follows this many bytes of out */
};

struct h2_segs {
	uint32_t		 first, n;	/* not written: [first, n) */
	uint32_t		 off;		/* written of s[first] */
	uint32_t		 bytes;		/* not written, in all */
	struct h2_seg		 s[H2_SEGS];
};

/*
 * One HTTP/2 client connection (c_proto of its pt_conn). Its socket and
 * transport stay the pt_conn's; nghttp2 owns the protocol state.
 */
struct h2_conn {
	struct pt_conn		*c;
	nghttp2_session		*session;
	/* Frames nghttp2 produced and the socket has not taken yet
	 * (malloc, H2_OUT_SIZE; none while empty). Nothing more is asked of
	 * nghttp2 while it holds a write's worth. */
	char			*out;
	uint32_t		 out_start, out_len;
	uint32_t		 out_size;
	/* The payloads between out's bytes (malloc; none while empty). */
	struct h2_segs		*segs;
	/* Every stream state it holds (h2_stream.c), for the close. */
	struct h2_stream	*streams;
	/* nghttp2's large allocations made with the session (its frame
	 * buffer, 16 KiB, the bulk of it), on pages of their own so that an
	 * idle connection gives their memory back (h2_mem.c). */
	void			*big[H2_BIG_MAX];
	uint32_t		 big_len[H2_BIG_MAX];
	bool			 big_idle;	/* given back since last use */
	bool			 mem_creating;	/* the session is being made */
	nghttp2_mem		 mem;
	unsigned		 nstreams;	/* streams with a transaction */
	/* Upstream pool entries reserved: the most streams it had at once
	 * (upstream_reserve). */
	unsigned		 pool_reserved;
	struct h2_ids		 ids;
	bool			 notice;	/* draining: first GOAWAY sent */
	bool			 draining;	/* the last GOAWAY sent */
	bool			 closing;	/* conn_close under way */
	bool			 goaway_sent;	/* a GOAWAY of ours went out */
};

/* Where a stream's request head stands while its HEADERS arrive. */
struct h2_reqhead {
	/* The pseudo-header fields, kept (nghttp2_rcbuf_incref) until the
	 * request line is written: :method :scheme :authority :path
	 * :protocol. */
	nghttp2_rcbuf		*pseudo[5];
	bool			 line_done;	/* request line written */
	bool			 has_host;	/* Host written */
	bool			 has_length;	/* content-length sent */
	bool			 expect_continue; /* expect: 100-continue */
	bool			 too_large;
	/* A Host field names another authority than :authority (RFC 9113
	 * 8.3.1), or :path is not a path: the request is malformed. */
	bool			 malformed;
	/* Where :authority is in the head (written as Host), and the port
	 * that :scheme makes the default (0: none, a CONNECT). */
	uint32_t		 host_off, host_len;
	uint16_t		 default_port;
	/* Cookie fields, joined with "; " (RFC 9113 8.2.3), written last. */
	char			*cookie;
	uint32_t		 cookie_len;
};

/*
 * One stream (RFC 9113 5.1) with a transaction behind it: the pt_conn
 * the HTTP/1.1 code serves (c), whose client side is this stream
 * (h2_stream_transport). Owned by the connection: it lives until nghttp2
 * closed the stream and the transaction is gone (h2_stream_release).
 */
struct h2_stream {
	struct h2_conn		*h2;
	struct pt_conn		*c;		/* NULL: not started, or gone */
	int32_t			 id;
	bool			 closed;	/* nghttp2 closed the stream */
	bool			 gone;		/* the transaction closed */
	/* Events for c's client side, delivered by <wake> after this
	 * round's frames (never from inside nghttp2's callbacks). */
	struct loop_task	 wake;
	uint32_t		 wake_ev;
	bool			 start;		/* c to create at <wake> */

	/* The request as HTTP/1.1 bytes: its head (buf), then the DATA the
	 * client sent (<rx>, a ring of buffer_size: the stream's window),
	 * chunked when the client gave no length (h2_stream.c). */
	struct h2_stream	*prev, *next;	/* h2->streams */
	bool			 in_wake;	/* its <wake> runs */
	struct h2_reqhead	 rh;		/* while HEADERS arrive */
	char			*head;
	uint32_t		 head_off, head_len;
	char			*rx;
	uint32_t		 rx_head, rx_tail;
	bool			 rx_eof;	/* END_STREAM seen */
	bool			 rx_chunked;
	bool			 rx_held;	/* head waits: body or none? */
	bool			 rx_last_sent;	/* "0\r\n\r\n" delivered */
	uint32_t		 chunk_left;
	char			 frag[16];	/* chunk framing to deliver */
	uint8_t			 frag_off, frag_len;
	bool			 reset;		/* RST_STREAM, or closed */
	bool			 is_head;	/* HEAD: no response body */
	bool			 tunnel;	/* CONNECT (or :protocol) */
	bool			 ext_connect;	/* RFC 8441 :protocol */

	/* The response: its head collected from the HTTP/1.1 side until
	 * complete (<resp>), then body bytes (<tx>, a ring) nghttp2 takes
	 * as DATA within the client's window. */
	char			*resp;
	uint32_t		 resp_len;
	bool			 resp_final;	/* final HEADERS submitted */
	bool			 resp_body;	/* it has a data provider */
	bool			 tx_blocked;	/* a write said EAGAIN */
	bool			 tx_deferred;	/* nghttp2 waits for bytes */
	bool			 tx_eof;	/* END_STREAM after <tx> */
	bool			 tx_bulk;	/* a large <tx> next (h2.h) */
	char			*tx;
	uint32_t		 tx_head, tx_tail;
	/* Bytes from tx_head in DATA frames not written yet (h2_seg):
	 * <tx> neither moves nor goes until they are. */
	uint32_t		 tx_queued;
	uint64_t		 tx_length;	/* content-length, or ~0 */
};

/* ---- worker/h2.c ------------------------------------------------------ */

/* Sends what is due on <h2>'s connection after this round (posts its
 * flush once). */
void	 h2_flush_soon(struct h2_conn *h2);
/* The configuration h2 serves with. */
const struct pt_config *h2_conf(void);

/* ---- worker/h2_ids.c -------------------------------------------------- */

/* A HEADERS frame with an ID above every one before (it opens a stream,
 * or is refused): the IDs skipped were never opened. */
void	 h2_ids_open(struct h2_ids *r, int32_t id);
/* The client ended stream <id> (END_STREAM) or reset it. */
void	 h2_ids_done(struct h2_ids *r, int32_t id);
/* A HEADERS frame on stream <id>, at most the highest opened, which is
 * not open: NGHTTP2_NO_ERROR when it is to be ignored, else the
 * connection error it is. */
uint32_t h2_ids_judge(const struct h2_ids *r, int32_t id);
/* nghttp2_session_mem_recv of the client's next <n> bytes, from the
 * preface on, with each DATA frame on a stream the client ended judged
 * first, and runs of empty DATA frames counted. 0, or nghttp2's error
 * (NGHTTP2_ERR_FLOODED: a GOAWAY ENHANCE_YOUR_CALM is queued). */
int	 h2_ids_recv(struct h2_conn *h2, const uint8_t *b, size_t n);

/* ---- worker/h2_mem.c -------------------------------------------------- */

/* <h2>'s allocator for nghttp2 (h2->mem set up). */
void	 h2_mem_init(struct h2_conn *h2);
/* The connection is idle (no stream, nothing to write): the frame
 * buffer's pages, and the pages of nghttp2's other large allocations
 * that hold only zeros, go back to the kernel until next used. */
void	 h2_mem_idle(struct h2_conn *h2);
/* Unmaps what is left (after nghttp2_session_del). */
void	 h2_mem_fini(struct h2_conn *h2);

/* ---- worker/h2_stream.c ----------------------------------------------- */

void	 h2_stream_pool_init(unsigned max);
void	 h2_stream_pool_fini(void);
/* A new stream's state (its request head begun), or NULL. */
struct h2_stream *h2_stream_new(struct h2_conn *h2, int32_t id);
/* The request head is complete (END_HEADERS): its transaction starts
 * after this round. <end>: END_STREAM came with it. */
void	 h2_stream_headers_done(struct h2_stream *st, bool end);
/* DATA for the stream: false when it does not fit (a client that
 * ignores the window). */
bool	 h2_stream_data(struct h2_stream *st, const uint8_t *b, size_t n);
/* END_STREAM from the client. */
void	 h2_stream_end(struct h2_stream *st);
/* nghttp2 closed the stream (<error>: its RST_STREAM code, or 0). */
void	 h2_stream_closed(struct h2_stream *st, uint32_t error);
/* The connection goes: the stream's transaction is cut (its close comes
 * first, while the session still exists), then the stream is let go of
 * (h2_stream_detach, with the session gone; its memory goes now, or
 * after its posted task). */
void	 h2_stream_cut(struct h2_stream *st);
void	 h2_stream_detach(struct h2_stream *st);
/* nghttp2's DATA source for a stream's response body (NO_COPY: the
 * bytes are <tx>'s, written by h2.c's send_data callback). */
ssize_t	 h2_stream_read_body(nghttp2_session *s, int32_t id, uint8_t *buf,
	    size_t len, uint32_t *flags, nghttp2_data_source *src, void *arg);
/* <n> bytes of <tx>, from tx_head, were written to the client (copied
 * into the output, or written from <tx> itself, no longer queued). */
void	 h2_stream_sent(struct h2_stream *st, size_t n);

/* ---- worker/h2_head.c ------------------------------------------------- */

/* One field of a request's HEADERS, into st's HTTP/1.1 head. 0, or an
 * nghttp2 error code (NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE: the stream
 * is reset). */
int	 h2_head_field(struct h2_stream *st, nghttp2_rcbuf *name,
	    nghttp2_rcbuf *value);
/* The HEADERS are complete: the head's last lines. <end>: END_STREAM
 * came with them, so there is no body. 0, or -1 (reset the stream). */
int	 h2_head_finish(struct h2_stream *st, bool end);
/* The body is known to be empty or not (a head held for it): its
 * framing line and the blank line. */
int	 h2_head_frame(struct h2_stream *st, bool body);
/* Frees what the head's build holds. */
void	 h2_head_drop(struct h2_stream *st);
/* A response head from the HTTP/1.1 side, parsed (<m>), submitted to
 * nghttp2 as HEADERS. 0, or -1. */
int	 h2_head_response(struct h2_stream *st, const struct http_msg *m);

#endif
