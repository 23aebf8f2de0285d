/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HTTP/2 to the proxy (RFC 9113, with libnghttp2): a client connection
 * whose first bytes are the HTTP/2 client preface, on a plain listener
 * (prior knowledge) or behind TLS (ALPN "h2"), is served as HTTP/2. Each
 * stream is a transaction of its own, served by the HTTP/1.1 code as it
 * serves a connection (worker/h2_stream.c says how). Built only with
 * libnghttp2 (configure's HAVE_NGHTTP2); without it listeners speak
 * HTTP/1.1 and these are no-ops.
 */
#ifndef PT_WORKER_H2_H
#define PT_WORKER_H2_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct pt_config;
struct pt_conn;

/* The HTTP/2 client connection preface (RFC 9113 3.4). */
#define H2_PREFACE	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN	24

#ifdef HAVE_NGHTTP2
/* Sizes the per-worker pools. Worker, before the loop. */
void	 h2_init(const struct pt_config *conf, unsigned max_conns);
void	 h2_fini(void);
/*
 * Serves <c> as HTTP/2 from here on. <b>, <n>: what was read of it
 * already (the preface and whatever followed it), which h2_start takes
 * before it returns. The caller's protocol state is gone: c_proto and
 * its callbacks are h2's afterwards.
 */
void	 h2_start(struct pt_conn *c, const char *b, size_t n);
/*
 * A tunnel whose client is an HTTP/2 stream (<c>'s client leg is the
 * stream's transport) moves its bytes past the relay's own buffer, which
 * would be one more copy (relay.c):
 * - h2_stream_rx_peek: the client's DATA due next to the target, in the
 *   stream's buffer (*p), and how many bytes; 0 when none, or when they
 *   come through the transport's read() now (the head, chunk framing);
 * - h2_stream_rx_take: <n> of them were written to the target (the
 *   client's window gets them back);
 * - h2_stream_tx_room: room in the stream's buffer (*p) for the target's
 *   bytes, 0 when it has none (the stream wakes the relay with EPOLLOUT
 *   once it has), -ENOTSUP when bytes go through write() now (the
 *   response's head, a stream that ended);
 * - h2_stream_tx_add: <n> bytes were read into that room.
 */
size_t	 h2_stream_rx_peek(struct pt_conn *c, const char **p);
void	 h2_stream_rx_take(struct pt_conn *c, size_t n);
ssize_t	 h2_stream_tx_room(struct pt_conn *c, char **p);
void	 h2_stream_tx_add(struct pt_conn *c, size_t n);
#else
static inline void h2_init(const struct pt_config *conf, unsigned max)
{ (void)conf; (void)max; }
static inline void h2_fini(void) { }
static inline size_t h2_stream_rx_peek(struct pt_conn *c, const char **p)
{ (void)c; (void)p; return 0; }
static inline void h2_stream_rx_take(struct pt_conn *c, size_t n)
{ (void)c; (void)n; }
static inline ssize_t h2_stream_tx_room(struct pt_conn *c, char **p)
{ (void)c; (void)p; return -ENOTSUP; }
static inline void h2_stream_tx_add(struct pt_conn *c, size_t n)
{ (void)c; (void)n; }
#endif

#endif
