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

#include <stdbool.h>
#include <stddef.h>

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
#else
static inline void h2_init(const struct pt_config *conf, unsigned max)
{ (void)conf; (void)max; }
static inline void h2_fini(void) { }
#endif

#endif
