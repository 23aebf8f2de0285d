/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The interface between the two halves of an HTTP transaction: a client
 * side, which delivers a parsed request head and body bytes and takes a
 * response head and body bytes, and the origin path, which does the rest.
 *
 * Client side: the framing on the client's connection. Today HTTP/1.1 on
 * its socket (http.c, http_request.c, http_answer.c); an HTTP/2 stream
 * can be another, with a struct http_client_ops of its own, and use the
 * origin path as it is. Origin path (http_origin.c, through the dial path
 * of target.c): AUTH, ACCESS, a kept or pooled upstream or a new one,
 * DIAL, ESTABLISHED, the request written to the origin and the response
 * read from it; it always speaks HTTP/1.1 to the origin.
 *
 * The client side calls the origin path (http_origin.h), in order:
 *   http_origin_target   the request's target, once its head is parsed;
 *   http_origin_request  the request delivered: http_state's request
 *                        fields (method, is_*, local), req.out its head
 *                        for the origin (none for CONNECT and for one the
 *                        proxy answers itself), req's body framing;
 *   http_origin_send     request bytes to the origin, and
 *   http_origin_receive  response bytes from it, as the client side gets
 *                        to them;
 *   http_origin_done     at the end of a transaction (keep or close the
 *                        upstream); http_origin_drop when it answers the
 *                        request itself; http_origin_close at the close.
 * The origin path calls the client side only through h->client, the
 * operations below, never its functions by name.
 *
 * Who owns which buffer (struct http_flow, its invariants there):
 *  - req.in: the client side reads and frames request bytes into it; the
 *    origin path writes [in_start, in_fwd) to the origin and advances
 *    in_start only. req.out: built by the client side, written and (for
 *    a retry, keep_out) kept by the origin path.
 *  - resp.in: the origin path reads and frames response bytes into it;
 *    the client side writes [in_start, in_fwd) on, in the framing it
 *    chose at response_head (dechunk). resp.out: the client side's own,
 *    its head for the response, written before any body byte.
 *  - The pipes (c_dir[source side]) move with their flow's bytes.
 */
#ifndef PT_WORKER_HTTP_CLIENT_H
#define PT_WORKER_HTTP_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

struct http_msg;
struct loop_io;
struct pt_conn;

/*
 * What the origin path (and the transaction's timer) call on the client
 * side. Each callback owns the connection from there on: it may close
 * it, or answer and move the stage to HS_REPLY. Static tables, one per
 * client framing.
 */
struct http_client_ops {
	/* A response head from the origin, checked (a 101 only for a
	 * WebSocket request, and switching to it): interim when resp's
	 * head_done is still false (a 1xx but 101: resp.in is shifted past
	 * it afterwards), else final (resp's body framing set, the stage
	 * HS_TUNNEL for a 101). The client side writes its own head for it
	 * into resp.out and chooses the body's framing towards the client.
	 * False when it answered otherwise or closed. */
	bool	(*response_head)(struct pt_conn *c, const struct http_msg *m);
	/* CONNECT: the origin is connected (ESTABLISHED passed). The client
	 * side says so and takes the connection as a tunnel. */
	void	(*connected)(struct pt_conn *c);
	/* ACCESS passed for a request the proxy answers itself (h->local). */
	void	(*answer_local)(struct pt_conn *c);
	/* The request cannot be served: answer <status> (the proxy's own),
	 * with <detail> for the body and the log (may be NULL); a 407 with a
	 * challenge for <realm> (NULL: the default); Retry-After
	 * <retry_after> seconds when not 0. A client that had part of a
	 * response already can only be closed. */
	void	(*fail)(struct pt_conn *c, int status, const char *detail,
		    const char *realm, uint32_t retry_after);
	/* The transaction can move again (the origin is connected, an
	 * answer is ready): bytes may flow. */
	void	(*resume)(struct pt_conn *c);
	/* The event callback of the sockets the client side drives; the
	 * origin path registers a pooled upstream with it. */
	void	(*on_event)(struct loop_io *io, uint32_t events);
};

#endif
