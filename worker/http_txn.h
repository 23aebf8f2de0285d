/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The HTTP transaction every worker/http*.c file works on: its state
 * (one per client connection, a transaction at a time), the
 * configuration and the parse scratch they share, and its timer. Below
 * all of them: it calls the client side only through h->client
 * (http_client.h). The map of the HTTP files: doc/internals.md section 13.
 */
#ifndef PT_WORKER_HTTP_TXN_H
#define PT_WORKER_HTTP_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/conn.h"
#include "worker/dns.h"
#include "worker/http_client.h"
#include "worker/http_flow.h"
#include "worker/req.h"

struct pt_config;

#define HTTP_HOST_MAX		256
#define HTTP_CRED_MAX		256

/* OPTIONS or TRACE with Max-Forwards: 0: the proxy is the last recipient
 * and answers itself (RFC 9110 7.6.2), once AUTH and ACCESS passed. */
#define HTTP_LOCAL_NONE		0
#define HTTP_LOCAL_OPTIONS	1
#define HTTP_LOCAL_TRACE	2

enum http_stage {
	HS_REQ_HEAD = 0,	/* waiting for / reading a request head */
	HS_WAIT,		/* phases, resolver or dial in progress */
	HS_FORWARD,		/* request and response flowing */
	HS_REPLY,		/* writing a response of our own */
	HS_TUNNEL,		/* writing 200/101, then hand over to relay */
};

/*
 * One per client connection (c_proto), from http.c's pool. Each group of
 * fields names who writes it; the others only read it.
 */
struct http_state {
	struct pt_conn		*conn;
	enum http_stage		 stage;
	/* The client side the origin path answers (http_client.h). */
	const struct http_client_ops *client;
	/* req: the client side fills <in> and builds <out>, the origin
	 * path writes them; resp: the other way round (http_client.h). */
	struct http_flow	 req, resp;

	/* The request, as the client side delivered it. */
	bool			 is_head, is_connect, is_websocket;
	uint8_t			 local;		/* HTTP_LOCAL_*: answered here */
	uint32_t		 head_len;	/* of the request in req.in */
	char			 method[32];

	/* The origin path's (http_origin.c): the target, set through
	 * http_origin_target, and the upstream connection. */
	uint16_t		 port;
	size_t			 hostlen;
	char			 host[HTTP_HOST_MAX];
	struct pt_addr		 addrs[DNS_MAX_ADDRS];	/* target.c's */
	bool			 reused, retried;
	bool			 origin_keep;	/* origin allows reuse */
	bool			 parked;	/* upstream kept from the last */
	/* The upstream connection is to parent up_parent - 1 (its pool
	 * key), 0: to the origin; the request head in req.out is already
	 * in the absolute form a parent reads. */
	int			 up_parent;
	bool			 head_absolute;

	/* The transaction's, whoever learns it. */
	bool			 close_after;	/* we close after this one */
	bool			 resp_started;	/* bytes went to the client */
	bool			 resp_wait;	/* c_timer counts response_timeout */

	/* The HTTP/1.1 client side's (http.c, http_request.c,
	 * http_answer.c). */
	int			 client_version;	/* 10 or 11 */
	bool			 first;		/* first request of the conn */
	bool			 keep_client;	/* client allows another one */
	bool			 txn_logged;	/* c_req.txn has had its LOG */
	/* The connection opened with the HTTP/2 preface, all of it in
	 * req.in: http.c hands it to HTTP/2 (worker/h2.c). */
	bool			 h2_preface;
	/* The request-target's path and query, copied for c_req.path (the
	 * head's buffer may go before LOG); only when modules run. */
	char			*path;
	/* A CONNECT's Via entries, for a parent (malloc), or NULL. */
	char			*via_in;
	/* User-Agent then Referer, PT_LOG_HEADER_MAX bytes each at most,
	 * kept from the head to LOG while a module has PT_MODF_LOG_HEADERS
	 * (http_request.c); NULL when neither was sent. */
	char			*loghdr;
	uint16_t		 ua_len, ref_len;
	char			 cred[HTTP_CRED_MAX];
};

/* The configuration, for every http*.c file (http_txn_init sets it). */
extern const struct pt_config	*http_conf;
/* One parse at a time per worker, request or response: nothing keeps it
 * across callbacks. */
extern struct http_msg		 http_scratch;

static inline struct http_state *
http_st(struct pt_conn *c)
{
	return c->c_proto;
}

/* A transaction starts: LOG will run for it (req_txn_open). */
static inline void
http_txn_open(struct pt_conn *c)
{
	req_txn_open(c, &http_st(c)->txn_logged);
}

/*
 * The origin has the whole request (head and body written) and has sent
 * no byte of a final response head yet (an interim 1xx was passed on and
 * shifted out). A request body still uploading, or held back by a client
 * waiting for 100 Continue, is not a wait for the origin.
 */
static inline bool
http_awaiting_response(const struct http_state *h)
{
	return h->stage == HS_FORWARD && !h->resp.head_done &&
	    (h->resp.in == NULL || h->resp.in_len == 0) &&
	    http_flow_finished(&h->req);
}

/* ---- worker/http_txn.c ----------------------------------------------- */

/* Keeps <conf> for every http*.c file. Worker, before the loop. */
void	 http_txn_init(const struct pt_config *conf);
/* c_timer's callback for an HTTP connection: which limit ran out depends
 * on the stage; the answer (408, 504) is the client side's fail. */
void	 http_on_timer(struct pt_timer *t, void *arg);

/* Arms the connection's timer (http_on_timer) for <ms>. */
static inline void
http_timer(struct pt_conn *c, uint64_t ms)
{
	pt_timer_start(&c->c_timer, ms, http_on_timer, c);
}

#endif
