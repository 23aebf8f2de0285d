/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A proxy_protocol listener's first step (accept.c calls it before
 * conn_start): the connection must come from the listener's `from`, then
 * carry a PROXY header (worker/proxy_header.c) within header_timeout. The
 * header's source becomes pt_req.peer before a transport or a protocol
 * sees the connection, so ACCEPT hooks, auth, limits, the access log and
 * the UDP relay all judge the client, not the balancer.
 *
 * On a plain HTTP or SOCKS listener the header is read with whatever
 * follows it in one recv(), and the rest (the request, the greeting) is
 * handed to the protocol from c_rest by conn_recv: a header that came
 * with the request costs no system call. Elsewhere (TLS, protocol
 * "auto", tcp, status) the header is peeked, then consumed to its last
 * byte and never beyond, so the ClientHello or first byte stays in the
 * socket for the next reader. A peek leaves the bytes readable, so the
 * socket is watched edge-triggered: only new bytes wake the reader
 * again. A header usually arrives with the connection, and is then read
 * at once without touching epoll.
 *
 * A refused connection gets no answer (a balancer would take any byte for
 * the client's), is counted by reason (/metrics), and the error log says
 * so at most once a second per worker, with how many it did not say.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "worker/proxy_read.h"
#include "common/counters.h"
#include "common/log.h"
#include "modules/common/net.h"
#include "worker/conn.h"
#include "worker/pool.h"
#include "worker/proxy_header.h"
#include "worker/worker_self.h"

#define PROXY_LOG_EVERY_MS	1000

static struct pool	 proxy_pool;
static struct pool	 proxy_rest_pool;
static uint64_t		 proxy_log_last;
static unsigned		 proxy_log_quiet;	/* refusals not logged */

static void	proxy_read_step(struct pt_conn *c, bool eof);

void
proxy_read_init(unsigned max_conns)
{
	pool_init(&proxy_pool, "proxy header", sizeof(struct proxy_info),
	    max_conns);
	pool_init(&proxy_rest_pool, "proxy header bytes",
	    sizeof(struct proxy_rest), max_conns);
}

/* What the error log says of each refusal (enum proxy_refusal). */
static const char *const proxy_refusal_texts[PROXY_REFUSED_COUNT] = {
	[PROXY_REFUSED_SIGNATURE] = "no PROXY header (neither v1's nor "
	    "v2's signature)",
	[PROXY_REFUSED_MALFORMED] = "a malformed PROXY header",
	[PROXY_REFUSED_TOO_LONG] = "a PROXY header too long",
	[PROXY_REFUSED_CRC] = "a PROXY v2 header whose CRC32C does not match",
	[PROXY_REFUSED_SOURCE] = "a source not in proxy_protocol's from",
	[PROXY_REFUSED_TIMEOUT] = "no whole PROXY header within "
	    "header_timeout",
	[PROXY_REFUSED_CLOSED] = "closed before its PROXY header ended",
};

static void
proxy_refuse(struct pt_conn *c, enum proxy_refusal why)
{
	char	 peer[SOCKADDR_STRLEN];

	counters_add(CTR_PP_REFUSED + why - 1, 1);
	if (proxy_log_last != 0 &&
	    loop_now() - proxy_log_last < PROXY_LOG_EVERY_MS) {
		proxy_log_quiet++;
	} else {
		pt_log(PT_LOG_WARNING, "proxy protocol: refused %s on "
		    "listener %s: %s (%s; %u more refused since the last "
		    "such line)", sockaddr_fmt((const struct sockaddr *)
		    &c->c_req.peer, peer, sizeof(peer)), c->c_req.listener,
		    proxy_refusal_name(why), proxy_refusal_texts[why],
		    proxy_log_quiet);
		proxy_log_last = loop_now();
		proxy_log_quiet = 0;
	}
	/* Nothing was answered; a reset tells a balancer at once. */
	conn_abort(c, "PROXY header refused");
}

static bool
proxy_from_allowed(const struct pt_conn *c)
{
	const struct conf_listener	*l = c->c_listener;
	struct net_addr			 a;
	int				 i;

	net_addr_from((const struct sockaddr *)&c->c_req.peer, &a);
	for (i = 0; i < l->pp_nfrom; i++)
		if (net_prefix_has(&l->pp_from[i], &a))
			return true;
	return false;
}

struct proxy_info *
proxy_info_dup(const struct proxy_info *pi)
{
	struct proxy_info	*d;

	if ((d = pool_get(&proxy_pool)) != NULL)
		memcpy(d, pi, sizeof(*d));
	return d;
}

/* What the header says of <c>, kept for its life. -1: no memory. */
static int
proxy_apply(struct pt_conn *c, const struct proxy_header *h)
{
	struct proxy_info	*pi;

	counters_add(h->version == 1 ? CTR_PP_V1 : CTR_PP_V2, 1);
	if (h->local && h->authority.len == 0 && h->unique_id.len == 0)
		return 0;
	if ((pi = pool_get(&proxy_pool)) == NULL)
		return -1;
	memset(pi, 0, offsetof(struct proxy_info, authority));
	if (!h->local) {
		pi->balancer = c->c_req.peer;
		c->c_req.peer = h->src;
	}
	/* The parser bounds both (255 and 128 bytes); an absent one may
	 * have no pointer, which memcpy may not be given. */
	pi->authority_len = (uint8_t)h->authority.len;
	if (h->authority.len > 0)
		memcpy(pi->authority, h->authority.ptr, h->authority.len);
	pi->unique_id_len = (uint8_t)h->unique_id.len;
	if (h->unique_id.len > 0)
		memcpy(pi->unique_id, h->unique_id.ptr, h->unique_id.len);
	c->c_proxy = pi;
	return 0;
}

static void
proxy_done(struct pt_conn *c)
{
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];

	pt_timer_stop(&c->c_timer);
	/* A reader ahead leaves the socket as HTTP and SOCKS keep it
	 * (CONN_SIDE_EVENTS, the ready bits noted): they take it over
	 * without an epoll_ctl. After a peek the next owner registers it
	 * afresh, and its ADD reports the bytes that followed the header,
	 * which this edge-triggered watch has already been told of. */
	if (c->c_proxy_ahead) {
		s->ready |= EPOLLOUT;
	} else {
		loop_io_stop(&s->io);
		loop_io_forget(&s->io);
	}
	c->c_logged = false;
	conn_start(c, c->c_on_ready);
}

static void
proxy_on_io(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;

	conn_side_note_events(s, events);
	/* The first edge of CONN_SIDE_EVENTS says writable: no byte yet. */
	if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0)
		return;
	proxy_read_step(s->conn,
	    (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
}

static void
proxy_on_timeout(struct pt_timer *t, void *arg)
{
	(void)t;
	proxy_refuse(arg, PROXY_REFUSED_TIMEOUT);
}

/* Waits for more of the header: new bytes, or the peer's end. */
static void
proxy_wait(struct pt_conn *c)
{
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];

	if (!s->io.added && loop_io_start(&s->io, s->io.fd,
	    c->c_proxy_ahead ? CONN_SIDE_EVENTS : EPOLLIN | EPOLLRDHUP |
	    EPOLLET, proxy_on_io) < 0)
		conn_close(c, "epoll_ctl");
}

/*
 * The connection ended before its header did: counted as "closed", and
 * logged unless it sent nothing at all (a port check, a balancer's plain
 * TCP health check: nothing an operator needs to read about, as HAProxy's
 * dontlognull has it).
 */
static void
proxy_closed(struct pt_conn *c, size_t received)
{
	if (received > 0) {
		proxy_refuse(c, PROXY_REFUSED_CLOSED);
		return;
	}
	counters_add(CTR_PP_REFUSED + PROXY_REFUSED_CLOSED - 1, 1);
	conn_abort(c, "closed before a PROXY header");
}

/*
 * The bytes received so far into <peek> (left in the socket) or, for a
 * listener whose protocol reads through conn_recv (plain HTTP and SOCKS),
 * into c_rest (taken from the socket: what follows the header is handed
 * to the protocol from there). Returns how many there are, 0 at EOF, or
 * -errno; *bytes points at them.
 */
static ssize_t
proxy_gather(struct pt_conn *c, uint8_t *peek, const uint8_t **bytes)
{
	struct proxy_rest	*r = c->c_rest;
	int			 fd = c->c_side[SIDE_CLIENT].io.fd;
	ssize_t			 n;

	if (r == NULL) {
		do
			n = recv(fd, peek, PROXY_HEADER_MAX, MSG_PEEK);
		while (n < 0 && errno == EINTR);
		*bytes = peek;
		return n < 0 ? -errno : n;
	}
	do
		n = recv(fd, r->b + r->len, sizeof(r->b) - r->len, 0);
	while (n < 0 && errno == EINTR);
	*bytes = r->b;
	/* As a plain socket's reader notes it: what it read may have
	 * emptied the socket (conn_side.ready). */
	r->more = n == (ssize_t)(sizeof(r->b) - r->len);
	if (!r->more)
		c->c_side[SIDE_CLIENT].ready &= ~(uint32_t)EPOLLIN;
	if (n < 0)
		return r->len > 0 && errno == EAGAIN ? r->len : -errno;
	if (n == 0)
		return 0;
	r->len = (uint16_t)(r->len + n);
	return r->len;
}

/* The header took <len> of the bytes gathered: consumes them from the
 * socket (a peek), or leaves c_rest holding only what follows. -1 when
 * the socket did not give them back. */
static int
proxy_consume(struct pt_conn *c, int len)
{
	struct proxy_rest	*r = c->c_rest;
	uint8_t			 sink[PROXY_HEADER_MAX];
	ssize_t			 n;

	if (r == NULL) {
		do
			n = recv(c->c_side[SIDE_CLIENT].io.fd, sink, (size_t)len,
			    0);
		while (n < 0 && errno == EINTR);
		return n == len ? 0 : -1;
	}
	r->off = (uint16_t)len;
	if (r->off == r->len) {
		pool_put(&proxy_rest_pool, r);
		c->c_rest = NULL;
	}
	return 0;
}

/* <eof>: the peer will send nothing more, so a prefix stays one. */
static void
proxy_read_step(struct pt_conn *c, bool eof)
{
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];
	uint8_t			 peek[PROXY_HEADER_MAX];
	const uint8_t		*bytes;
	struct proxy_header	 h;
	ssize_t			 n;
	int			 len;

	n = proxy_gather(c, peek, &bytes);
	if ((n == -EAGAIN || n == -EWOULDBLOCK) && !eof) {
		proxy_wait(c);
		return;
	}
	if (n <= 0) {
		if (n == -ECONNRESET)
			s->reset = true;
		proxy_closed(c, c->c_rest != NULL ? c->c_rest->len : 0);
		return;
	}
	len = proxy_header_parse(bytes, (size_t)n, &h);
	if (len < 0) {
		proxy_refuse(c, (enum proxy_refusal)-len);
		return;
	}
	if (len == 0) {
		if (eof)
			proxy_refuse(c, PROXY_REFUSED_CLOSED);
		else
			proxy_wait(c);
		return;
	}
	/* h points into the bytes: kept before they are let go. */
	if (proxy_apply(c, &h) < 0) {
		conn_close(c, "out of memory for the PROXY header");
		return;
	}
	if (proxy_consume(c, len) < 0) {
		proxy_refuse(c, PROXY_REFUSED_CLOSED);
		return;
	}
	proxy_done(c);
}

/* Plain HTTP and SOCKS read the client through conn_recv, which hands
 * out c_rest first; the others look at the socket itself (a transport's
 * handshake, protocol "auto"'s peek, a tcp relay's splice, the status
 * listener), so their header is peeked and consumed to its last byte. */
static bool
proxy_reads_ahead(const struct pt_conn *c)
{
	return c->c_transport == NULL &&
	    (c->c_listener->proto == CONF_PROTO_HTTP ||
	    c->c_listener->proto == CONF_PROTO_SOCKS);
}

void
proxy_read_start(struct pt_conn *c, void (*next)(struct pt_conn *))
{
	if (!proxy_from_allowed(c)) {
		proxy_refuse(c, PROXY_REFUSED_SOURCE);
		return;
	}
	if (proxy_reads_ahead(c)) {
		if ((c->c_rest = pool_get(&proxy_rest_pool)) == NULL) {
			conn_close(c, "out of memory for the PROXY header");
			return;
		}
		c->c_rest->off = c->c_rest->len = 0;
		c->c_proxy_ahead = true;
	}
	c->c_on_ready = next;
	/* No transaction until the header is read: a refused connection is
	 * the error log's and /metrics', not the access log's. */
	c->c_logged = true;
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.header_timeout_ms, proxy_on_timeout,
	    c);
	proxy_read_step(c, false);
}

const struct sockaddr *
pt_conn_balancer(struct pt_conn *c)
{
	if (c->c_proxy == NULL || c->c_proxy->balancer.ss_family == AF_UNSPEC)
		return NULL;
	return (const struct sockaddr *)&c->c_proxy->balancer;
}
