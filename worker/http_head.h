/* SPDX-License-Identifier: BSD-2-Clause */
/* Writing HTTP/1.1 heads: forwarded requests and responses, and ours. */
#ifndef PT_WORKER_HTTP_HEAD_H
#define PT_WORKER_HTTP_HEAD_H

#include <stddef.h>
#include <sys/types.h>

#include "worker/http_parse.h"

#define HTTP_HEAD_VIA		0x01	/* add Via: 1.x portico */
#define HTTP_HEAD_UPGRADE	0x02	/* keep Upgrade, send Connection: upgrade */
#define HTTP_HEAD_CHUNKED	0x04	/* send Transfer-Encoding: chunked */
#define HTTP_HEAD_CLOSE		0x08	/* send Connection: close */
#define HTTP_HEAD_AUTH		0x20	/* 407: send Proxy-Authenticate */
#define HTTP_HEAD_NOBODY	0x40	/* answer to HEAD: head only */
#define HTTP_HEAD_TE		0x80	/* pass the Transfer-Encoding list of a
					 * coded body that runs to the close */
#define HTTP_HEAD_DATE		0x100	/* add Date (ours, or the origin sent none) */

/* ---- worker/http_head.c ---------------------------------------------- */

/*
 * Writes the request head to send upstream for <m>, whose target is <u>:
 * origin-form request line in HTTP/1.1, Host from the URI (RFC 9110
 * 7.2: a proxy replaces it), hop-by-hop fields dropped, Max-Forwards
 * decremented for TRACE and OPTIONS. Returns the length, or -1 when it
 * does not fit in <cap>.
 */
ssize_t	 http_head_request(char *out, size_t cap, const struct http_msg *m,
	    const struct http_uri *u, unsigned flags);
/* Writes the response head to send the client for <m>: status line in
 * HTTP/1.1, hop-by-hop fields dropped, framing and connection fields as
 * <flags> say, one Content-Length (none for 1xx and 204), a Date when the
 * origin sent none (RFC 9110 6.6.1). Length or -1. */
ssize_t	 http_head_response(char *out, size_t cap, const struct http_msg *m,
	    unsigned flags);
/* Writes a complete response of our own: <status>, a one-line text body
 * naming the problem (<detail>, may be NULL), Content-Length; with
 * HTTP_HEAD_AUTH a Basic challenge for <realm> (quoted by this function;
 * "portico" when NULL), and Retry-After when <retry_after> is not 0.
 * Length or -1. */
ssize_t	 http_head_error(char *out, size_t cap, int status,
	    const char *detail, unsigned flags, const char *realm,
	    uint32_t retry_after);
/* "Date: <IMF-fixdate>\r\n" for now, made once a second. */
const char *http_date_field(size_t *len_out);
/* The reason phrase for <status> ("Bad Gateway"). */
const char *http_reason(int status);

/* The name Via gives us from now on (http.via_pseudonym; "portico"
 * until called). Worker, before the loop. */
void	 http_head_set_via(const char *pseudonym);

#endif
