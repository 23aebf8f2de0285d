/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a PROXY header told of a connection, kept for its whole life in
 * pt_conn's c_proxy (from a pool of worker/proxy_read.c; conn_reap gives
 * it back). NULL when the listener expects no header, or the header said
 * LOCAL or UNKNOWN and carried no TLV worth keeping. Its own header so
 * that conn.c and req.c read it without depending on the reader.
 */
#ifndef PT_WORKER_PROXY_INFO_H
#define PT_WORKER_PROXY_INFO_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/socket.h>

#include "worker/proxy_header.h"

struct proxy_info {
	/* The connection's own peer (the balancer), when the header named
	 * the client: pt_conn_balancer(). AF_UNSPEC otherwise. */
	struct sockaddr_storage	 balancer;
	uint8_t			 authority_len;
	uint8_t			 unique_id_len;
	char			 authority[255];	/* v2 AUTHORITY */
	char			 unique_id[128];	/* v2 UNIQUE_ID */
};

/*
 * The first bytes of a plain HTTP or SOCKS connection behind a header,
 * read in one recv() with the header (worker/proxy_read.c): b[off, len)
 * are the client's own, which conn_recv() hands out before it reads the
 * socket again (pt_conn's c_rest; NULL once they are all taken). A
 * header that came with the request so costs no system call at all.
 */
struct proxy_rest {
	uint16_t		 off, len;
	/* The last recv() filled b: the socket may hold more, so the read
	 * that takes the last of b goes on to the socket (conn_recv). */
	bool			 more;
	uint8_t			 b[PROXY_HEADER_MAX];
};

#endif
