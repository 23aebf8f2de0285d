/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dial through a parent proxy, in the place of target.c's connect:
 * DIAL (the target's address where portico knows it), the parent's
 * address, connect (each of its addresses in turn), a PROXY header when
 * the parent wants one, TLS to an https parent, then the parent's own
 * handshake: CONNECT to an HTTP parent (none for a plain request, which
 * goes in absolute form, http_origin.c), RFC 1928/1929 to a SOCKS5
 * parent, SOCKS4(a). ESTABLISHED follows as for a direct connection.
 *
 * The parent's replies are read exactly: a plain socket is peeked at and
 * only the reply's bytes are taken, so whatever the target sent first
 * (an SSH or SMTP banner) stays in the socket for the relay; through TLS
 * the reads stop short of the end of the head.
 *
 * Failover: a parent that cannot be reached, does not answer, or fails
 * its handshake (bad protocol, our credentials refused) is counted
 * against its health and the next member of the route is tried; nothing
 * of the client's request has gone anywhere yet. A parent that answers
 * but refuses the target (a CONNECT answered 403, a SOCKS reply 0x05) is
 * healthy: its answer goes to the client (target_fail PARENT_REFUSED).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/parent.h"
#include "common/conf_types.h"
#include "common/counters.h"
#include "worker/conn.h"
#include "worker/dial.h"
#include "worker/buf.h"
#include "worker/dns.h"
#include "worker/host.h"
#include "worker/http_parse.h"
#include "worker/loop.h"
#include "worker/parent_wire.h"
#include "worker/phase.h"
#include "worker/pool.h"
#include "worker/proxy_header.h"
#include "worker/socks_parse.h"
#include "worker/target.h"
#include "worker/upstream_tls.h"
#include "worker/worker_self.h"

enum parent_step {
	PS_IDLE = 0,
	PS_RESOLVING,		/* the target (resolve = "local") or parent */
	PS_CONNECTING,
	PS_TLS,
	PS_HTTP_REPLY,		/* CONNECT sent */
	PS_S5_METHOD,		/* greeting sent */
	PS_S5_AUTH,		/* username/password sent */
	PS_S5_REPLY,		/* request sent */
	PS_S4_REPLY,
};

/* A parent's answer head bigger than this is no proxy's. */
#define PARENT_REPLY_MAX	16384

static void	parent_resolve_parent(struct pt_conn *c);
static void	parent_connect(struct pt_conn *c);
static void	parent_step(struct pt_conn *c);
static void	parent_udp_member(struct pt_conn *c, const char *why);
static void	parent_udp_request(struct pt_conn *c);
static void	parent_udp_reply(struct pt_conn *c, uint8_t rep,
		    const struct sockaddr_storage *bound, bool named);

static const struct conf_parent *
parent_cur(const struct pt_conn *c)
{
	return parent_conf(c->c_route->parent);
}

size_t
parent_pool_key(const struct conf_parent *p, char *buf, size_t cap)
{
	int	 n = snprintf(buf, cap, "\1%s", p->name);

	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* The handshake's buffer, taken when the first message is written. */
static bool
parent_out_get(struct parent_route *r)
{
	if (r->out == NULL)
		r->out = (uint8_t *)buf_get(BUF_SMALL);
	return r->out != NULL;
}

static void
parent_out_put(struct parent_route *r)
{
	buf_put((char *)r->out);
	r->out = NULL;
	r->out_len = r->out_off = 0;
	r->rbuf_len = 0;
}

void
parent_dial_stop(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;

	if (r != NULL && r->dns != NULL) {
		dns_cancel(r->dns);
		r->dns = NULL;
	}
	if (r != NULL)
		parent_out_put(r);
}

void
parent_route_release(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;

	if (r == NULL)
		return;
	parent_dial_stop(c);
	pool_put(pool_of(r), r);
	c->c_route = NULL;
}

static void
parent_close_upstream(struct pt_conn *c)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];

	/* The TLS session first, while its socket is open. */
	conn_up_transport_free(c);
	if (s->io.fd >= 0)
		loop_io_close(&s->io);
	s->io.fd = -1;
	s->ready = 0;
	s->hup = s->reset = false;
}

/*
 * The parent failed us (<why>, errno <err>): counted against its health,
 * then the next member of the route, or the protocol's failure when none
 * is left.
 */
static void
parent_next(struct pt_conn *c, int err, const char *why)
{
	struct parent_route		*r = c->c_route;
	const struct conf_parent	*p = parent_cur(c);
	static char			 reason[160];
	int				 next;

	parent_failed(r->parent);
	parent_close_upstream(c);
	parent_out_put(r);
	snprintf(reason, sizeof(reason), "parent \"%s\": %s", p->name, why);
	pt_clog(c, PT_LOG_INFO, "%s", reason);
	r->step = PS_IDLE;
	next = parent_route_next(c);
	if (r->udp_done != NULL) {
		r->udp_failed = true;
		target_timer_restart(c);
		parent_udp_member(c, reason);
		return;
	}
	if (next == PARENT_NONE) {
		c->c_req.error = reason;
		c->c_target.ops->fail(c, TARGET_FAIL_PARENT, err);
		return;
	}
	target_timer_restart(c);
	if (next == VIA_DIRECT) {
		target_direct(c);
		return;
	}
	parent_dial(c);
}

/* The parent answered, refusing the target: its answer is the client's
 * (target_ops.fail with TARGET_FAIL_PARENT_REFUSED). <timeout>: it
 * said the target timed out. */
static void __attribute__((format(printf, 3, 4)))
parent_refused(struct pt_conn *c, bool timeout, const char *fmt, ...)
{
	static char	 reason[160];
	char		 what[64];
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(reason, sizeof(reason), "parent \"%s\" %s",
	    parent_cur(c)->name, what);
	c->c_req.error = reason;
	/* Healthy: it answered. */
	parent_succeeded(c->c_route->parent, counters_now_us() - c->c_dial_us);
	parent_close_upstream(c);
	c->c_route->step = PS_IDLE;
	parent_out_put(c->c_route);
	c->c_target.ops->fail(c, TARGET_FAIL_PARENT_REFUSED,
	    timeout ? ETIMEDOUT : ECONNREFUSED);
}

/* ---- the tunnel is open --------------------------------------------- */

static void
parent_note_events(struct loop_io *io, uint32_t events)
{
	conn_side_note_events((struct conn_side *)io, events);
}

static void
parent_done(struct pt_conn *c, bool more_waiting)
{
	struct parent_route	*r = c->c_route;
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];

	pt_timer_stop(&c->c_timer);
	r->step = PS_IDLE;
	parent_out_put(r);
	c->c_parent = r->parent + 1;
	/* What the upstream leg is connected to, as for a direct one: a
	 * kept-alive connection is pooled under it (http_origin.c). */
	target_known(c, &r->addrs[r->aidx], 1);
	parent_succeeded(r->parent, counters_now_us() - c->c_dial_us);
	parent_counted(r->parent);
	/* Until the protocol takes the socket, its edges are noted, as
	 * dial.c does; bytes of the target's already waiting behind the
	 * parent's reply raise no new edge, so they are noted here. */
	s->io.fn = parent_note_events;
	s->ready |= EPOLLOUT;
	if (more_waiting)
		s->ready |= EPOLLIN;
	target_established(c, true);
}

/* ---- sending -------------------------------------------------------- */

/* Sends what is left of r->out; true when all of it went. */
static bool
parent_flush(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];
	ssize_t			 n;

	while (r->out_off < r->out_len) {
		n = conn_send(c, s, r->out + r->out_off,
		    (size_t)(r->out_len - r->out_off));
		if (n == -EAGAIN)
			return false;
		if (n < 0) {
			parent_next(c, (int)-n, "cannot send its handshake");
			return false;
		}
		r->out_off = (uint16_t)(r->out_off + n);
	}
	return true;
}

static void
parent_out(struct pt_conn *c, const void *b, size_t n, uint8_t step)
{
	struct parent_route	*r = c->c_route;

	if (!parent_out_get(r) || n > buf_size((char *)r->out)) {
		parent_refused(c, false, "cannot be sent a handshake (out of "
		    "buffers)");
		return;
	}
	memcpy(r->out, b, n);
	r->out_len = (uint16_t)n;
	r->out_off = 0;
	r->step = step;
	if (parent_flush(c))
		parent_step(c);
}

/* The request as the parent must read it: CONNECT host:port with our
 * credentials and Via (loops through CONNECT are caught as with GET). */
static bool
parent_send_connect(struct pt_conn *c)
{
	struct parent_route		*r = c->c_route;
	const struct conf_parent	*p = parent_cur(c);
	const struct conf_http		*ch = &worker_self()->conf->http;
	const char			*pseudo = ch->via ? ch->via_pseudonym :
					    NULL;
	char				 extra[1200];
	ssize_t				 n;

	snprintf(extra, sizeof(extra), "%s%s%s%s%s%s",
	    p->basic != NULL ? p->basic : "",
	    pseudo != NULL ? "Via: " : "",
	    pseudo != NULL ? r->client_via : "",
	    pseudo != NULL && r->client_via[0] != '\0' ? ", " : "",
	    pseudo != NULL ? "1.1 " : "", pseudo != NULL ? pseudo : "");
	if (pseudo != NULL)
		strncat(extra, "\r\n", sizeof(extra) - strlen(extra) - 1);
	if (!parent_out_get(r))
		return false;
	n = parent_http_connect((char *)r->out, buf_size((char *)r->out),
	    c->c_req.host.ptr, c->c_req.host.len, c->c_req.port, extra);
	if (n < 0)
		return false;
	r->out_len = (uint16_t)n;
	r->out_off = 0;
	r->step = PS_HTTP_REPLY;
	if (parent_flush(c))
		parent_step(c);
	return true;
}

/* The target as a SOCKS request names it: the address DIAL judged when
 * portico resolved it or the client gave one, else the name. */
static const struct sockaddr *
parent_socks_addr(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;

	return r->target.sa.ss_family != 0 ?
	    (const struct sockaddr *)&r->target.sa : NULL;
}

static void
parent_send_socks5_request(struct pt_conn *c)
{
	uint8_t		 b[300];
	ssize_t		 n;

	if (c->c_route->udp_done != NULL) {
		parent_udp_request(c);
		return;
	}
	n = socks5c_request(b, sizeof(b), 1, c->c_req.host.ptr,
	    c->c_req.host.len, parent_socks_addr(c), c->c_req.port);
	if (n < 0) {
		parent_refused(c, false, "cannot be asked for this target");
		return;
	}
	parent_out(c, b, (size_t)n, PS_S5_REPLY);
}

static void
parent_send_socks4(struct pt_conn *c)
{
	const struct conf_parent	*p = parent_cur(c);
	const struct sockaddr		*a = parent_socks_addr(c);
	uint8_t				 b[600];
	ssize_t				 n = -1;

	if (a == NULL || a->sa_family == AF_INET)
		n = socks4c_request(b, sizeof(b), c->c_req.host.ptr,
		    c->c_req.host.len, (const struct sockaddr_in *)a,
		    c->c_req.port, p->user);
	if (n < 0) {
		parent_refused(c, false, "(SOCKS4) cannot reach an IPv6 address");
		return;
	}
	parent_out(c, b, (size_t)n, PS_S4_REPLY);
}

/* The handshake's first message, once connected (and TLS done). */
static void
parent_handshake(struct pt_conn *c)
{
	const struct conf_parent	*p = parent_cur(c);
	uint8_t				 b[4];

	switch (p->proto) {
	case PARENT_HTTP:
	case PARENT_HTTPS:
		/* A plain request goes as it is, in absolute form. */
		if (c->c_req.proto == PT_PROTO_HTTP) {
			parent_done(c, false);
			return;
		}
		if (!parent_send_connect(c))
			parent_refused(c, false, "cannot be asked for this target");
		return;
	case PARENT_SOCKS5:
		parent_out(c, b, socks5c_greeting(b, p->user != NULL),
		    PS_S5_METHOD);
		return;
	case PARENT_SOCKS4:
		parent_send_socks4(c);
		return;
	}
}

/* ---- reading the parent's replies ----------------------------------- */

/*
 * Exactly <want> bytes of the parent's into <b>, or fewer when fewer
 * came: 0 while waiting, -1 when the parent failed (handled).
 */
static ssize_t
parent_read(struct pt_conn *c, void *b, size_t want, int flags)
{
	struct conn_side	*s = &c->c_side[SIDE_UPSTREAM];
	ssize_t			 n;

	if (flags == MSG_PEEK && conn_plain(c, s) & PT_PLAIN_RX)
		n = recv(s->io.fd, b, want, MSG_PEEK);
	else
		n = conn_recv(c, s, b, want);
	if (n < 0 && (n == -EAGAIN || errno == EAGAIN ||
	    errno == EWOULDBLOCK))
		return 0;
	if (n <= 0) {
		parent_next(c, n == 0 ? ECONNRESET : errno,
		    n == 0 ? "closed during its handshake" :
		    "reset during its handshake");
		return -1;
	}
	return n;
}

/* Takes <n> peeked bytes off a plain socket. */
static void
parent_take(struct pt_conn *c, size_t n)
{
	char	 sink[512];
	size_t	 k;

	while (n > 0) {
		k = n < sizeof(sink) ? n : sizeof(sink);
		if (recv(c->c_side[SIDE_UPSTREAM].io.fd, sink, k, 0) <= 0)
			return;
		n -= k;
	}
}

/* Whether the upstream socket is read as it is (no TLS). */
static bool
plain_rx(struct pt_conn *c)
{
	return conn_plain(c, &c->c_side[SIDE_UPSTREAM]) & PT_PLAIN_RX;
}

static void
parent_http_reply(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;
	static char		 peeked[PARENT_REPLY_MAX];
	static struct http_msg	 m;
	/* Through TLS the head is gathered across events: in the
	 * route's own buffer, the handshake's request being sent. */
	char			*b = plain_rx(c) ? peeked : (char *)r->out;
	size_t			 cap = plain_rx(c) ? sizeof(peeked) :
				    buf_size((char *)r->out) < PARENT_REPLY_MAX ?
				    buf_size((char *)r->out) : PARENT_REPLY_MAX;
	struct pt_str		 method = { "CONNECT", 7 };
	bool			 plain = plain_rx(c);
	ssize_t			 n;
	int			 rc;

	if (plain) {
		if ((n = parent_read(c, b, cap, MSG_PEEK)) <= 0)
			return;
		rc = http_parse_response(b, (size_t)n, cap, method, &m);
		if (rc == PARSE_AGAIN) {
			if ((size_t)n == cap)
				parent_next(c, EPROTO, "its answer head is too "
				    "large");
			return;
		}
	} else {
		/* Through TLS: no peek; read no further than the head can
		 * end, a few bytes at a time (no system call each). */
		size_t	 len = r->rbuf_len, k;

		for (;;) {
			k = 4;
			if (len >= 1 && b[len - 1] == '\r')
				k = 3;
			if (len >= 2 && memcmp(b + len - 2, "\r\n", 2) == 0)
				k = 2;
			if (len >= 3 && memcmp(b + len - 3, "\r\n\r", 3) == 0)
				k = 1;
			if (len >= 4 && memcmp(b + len - 4, "\r\n\r\n", 4) ==
			    0)
				break;
			if (len + k > cap) {
				parent_next(c, EPROTO, "its answer head is "
				    "too large");
				return;
			}
			if ((n = parent_read(c, b + len, k, 0)) < 0)
				return;
			if (n == 0) {
				r->rbuf_len = (uint16_t)len;
				return;
			}
			len += (size_t)n;
		}
		r->rbuf_len = 0;
		n = (ssize_t)len;
		rc = http_parse_response(b, len, cap, method, &m);
	}
	if (rc != PARSE_OK) {
		parent_next(c, EPROTO, "not an HTTP answer to CONNECT");
		return;
	}
	if (plain)
		parent_take(c, m.head_len);
	r->http_status = m.status;
	if (m.status >= 200 && m.status < 300) {
		parent_done(c, plain && (size_t)n > m.head_len);
		return;
	}
	if (m.status == 407) {
		/* Our credentials are the operator's to fix: another
		 * parent may take them. */
		parent_next(c, EACCES, "refused our credentials (407)");
		return;
	}
	parent_refused(c, m.status == 504, "answered %d to CONNECT",
	    m.status);
}

static void
parent_s5_method(struct pt_conn *c)
{
	const struct conf_parent	*p = parent_cur(c);
	uint8_t				 b[2 + 2 * 256], method;
	ssize_t				 n;
	int				 rc;

	if ((n = parent_read(c, b, 2, 0)) <= 0)
		return;
	if (n < 2) {
		/* Two bytes come in one segment from any real server. */
		parent_next(c, EPROTO, "a short SOCKS5 method reply");
		return;
	}
	rc = socks5c_method_reply(b, 2, p->user != NULL, &method);
	if (rc != WIRE_OK) {
		parent_next(c, EPROTO, rc == WIRE_REFUSED ? "accepts none of "
		    "our SOCKS5 methods" : "not a SOCKS5 server");
		return;
	}
	if (method == 0x00) {
		parent_send_socks5_request(c);
		return;
	}
	n = socks5c_auth(b, sizeof(b), p->user, strlen(p->user), p->password,
	    strlen(p->password));
	parent_out(c, b, (size_t)n, PS_S5_AUTH);
}

static void
parent_s5_auth(struct pt_conn *c)
{
	uint8_t	 b[2];
	ssize_t	 n;
	int	 rc;

	if ((n = parent_read(c, b, 2, 0)) <= 0)
		return;
	rc = n < 2 ? WIRE_BAD : socks5c_auth_reply(b, 2);
	if (rc != WIRE_OK) {
		parent_next(c, EACCES, rc == WIRE_REFUSED ? "refused our "
		    "SOCKS5 credentials" : "a bad RFC 1929 reply");
		return;
	}
	parent_send_socks5_request(c);
}

static void
parent_s5_reply(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;
	struct sockaddr_storage	 bound;
	const uint8_t		*name;
	uint8_t			 b[300], rep;
	size_t			 namelen, used;
	ssize_t			 n;
	int			 rc;

	if ((n = parent_read(c, b, sizeof(b), MSG_PEEK)) <= 0)
		return;
	rc = socks5c_reply(b, (size_t)n, &rep, &bound, &name, &namelen, &used);
	if (rc == WIRE_MORE)
		return;
	if (rc != WIRE_OK) {
		parent_next(c, EPROTO, "a bad SOCKS5 reply");
		return;
	}
	parent_take(c, used);
	if (r->udp_done != NULL) {
		parent_udp_reply(c, rep, &bound, name != NULL);
		return;
	}
	if (rep != 0) {
		r->rep = rep;
		parent_refused(c, rep == 0x06, "answered SOCKS5 reply %#04x",
		    rep);
		return;
	}
	parent_done(c, (size_t)n > used);
}

static void
parent_s4_reply(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;
	uint8_t			 b[8], code;
	ssize_t			 n;
	int			 rc;

	if ((n = parent_read(c, b, 8, MSG_PEEK)) <= 0)
		return;
	if ((rc = socks4c_reply(b, (size_t)n, &code)) == WIRE_MORE)
		return;
	if (rc == WIRE_BAD) {
		parent_next(c, EPROTO, "a bad SOCKS4 reply");
		return;
	}
	parent_take(c, 8);
	if (rc != WIRE_OK) {
		r->rep = 0x05;
		parent_refused(c, false, "answered SOCKS4 code %d", code);
		return;
	}
	parent_done(c, false);
}

/* Goes on with the handshake as far as the socket allows. */
static void
parent_step(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;

	if (r->out_off < r->out_len && !parent_flush(c))
		return;
	switch (r->step) {
	case PS_HTTP_REPLY:
		parent_http_reply(c);
		break;
	case PS_S5_METHOD:
		parent_s5_method(c);
		break;
	case PS_S5_AUTH:
		parent_s5_auth(c);
		break;
	case PS_S5_REPLY:
		parent_s5_reply(c);
		break;
	case PS_S4_REPLY:
		parent_s4_reply(c);
		break;
	default:
		break;
	}
}

static void
parent_on_io(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;
	struct pt_conn		*c = s->conn;

	conn_side_note_events(s, events);
	if ((events & (EPOLLERR | EPOLLHUP)) &&
	    !(events & EPOLLIN)) {
		parent_next(c, ECONNRESET, "closed during its handshake");
		return;
	}
	parent_step(c);
}

/* ---- connecting ----------------------------------------------------- */

/* The PROXY header the parent asked for, with the client's addresses,
 * before anything else (TLS included). */
static int
parent_send_proxy_header(struct pt_conn *c)
{
	struct sockaddr_storage	 local;
	socklen_t		 len = sizeof(local);
	uint8_t			 b[PROXY_HEADER_OUT_MAX];
	ssize_t			 n;

	if (c->c_req.local.ss_family != 0)
		local = c->c_req.local;
	else if (getsockname(c->c_side[SIDE_CLIENT].io.fd,
	    (struct sockaddr *)&local, &len) < 0)
		memset(&local, 0, sizeof(local));
	n = proxy_header_build(b, sizeof(b), parent_cur(c)->send_proxy,
	    (const struct sockaddr *)&c->c_req.peer,
	    (const struct sockaddr *)&local);
	/* A fresh socket takes a few hundred bytes at once. */
	if (n < 0 || send(c->c_side[SIDE_UPSTREAM].io.fd, b, (size_t)n,
	    MSG_NOSIGNAL) != n)
		return -1;
	return 0;
}

/* TLS to an https parent, through the tls module's client transport
 * (master/upstream_tls.c found it; worker/upstream_tls.c drives it). */
static void
parent_tls_start(struct pt_conn *c, const struct conf_parent *p,
    void (*done)(struct pt_conn *, int))
{
	upstream_tls_start(c, p->tls_mod, p->tls_ctx, p->sni, done);
}

/* A parent that connects but never finishes its handshake is as good as
 * one that never answers: the next member. */
static void
parent_on_handshake_timeout(struct pt_timer *t, void *arg)
{
	(void)t;
	parent_next(arg, ETIMEDOUT, "its handshake timed out");
}

static void
parent_on_tls(struct pt_conn *c, int err)
{
	if (err != 0) {
		parent_next(c, err, err == ETIMEDOUT ? "TLS handshake timed "
		    "out" : "TLS handshake failed");
		return;
	}
	c->c_side[SIDE_UPSTREAM].io.fn = parent_on_io;
	pt_timer_start(&c->c_timer, parent_cur(c)->connect_timeout_ms,
	    parent_on_handshake_timeout, c);
	parent_handshake(c);
}

static void
parent_on_connected(struct pt_conn *c, int err)
{
	struct parent_route		*r = c->c_route;
	const struct conf_parent	*p = parent_cur(c);
	struct conn_side		*s = &c->c_side[SIDE_UPSTREAM];

	if (err == EMFILE || err == ENFILE) {
		/* The worker's shortage, not the parent's. */
		c->c_req.error = strerror(err);
		c->c_target.ops->fail(c, TARGET_FAIL_CONNECT, err);
		return;
	}
	if (err != 0) {
		if (++r->aidx < r->naddrs) {
			parent_connect(c);
			return;
		}
		parent_next(c, err, err == ETIMEDOUT ? "connect timed out" :
		    strerror(err));
		return;
	}
	if (p->send_proxy != 0 && parent_send_proxy_header(c) < 0) {
		parent_next(c, EPROTO, "cannot send the PROXY header");
		return;
	}
	/* The handshake's own time: the parent's connect_timeout again. */
	pt_timer_start(&c->c_timer, p->connect_timeout_ms,
	    parent_on_handshake_timeout, c);
	if (p->proto == PARENT_HTTPS) {
		r->step = PS_TLS;
		parent_tls_start(c, p, parent_on_tls);
		return;
	}
	s->io.fn = parent_on_io;
	parent_handshake(c);
}

static void
parent_connect(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;

	r->step = PS_CONNECTING;
	/* For the log: what was connected to. */
	memset(&c->c_req.target, 0, sizeof(c->c_req.target));
	memcpy(&c->c_req.target, &r->addrs[r->aidx].sa, r->addrs[r->aidx].len);
	dial_start(c, &r->addrs[r->aidx], parent_cur(c)->connect_timeout_ms,
	    parent_on_connected);
}

static void
parent_on_parent_resolved(void *arg, int err, const struct dns_result *res)
{
	struct pt_conn			*c = arg;
	struct parent_route		*r = c->c_route;
	const struct conf_parent	*p = parent_cur(c);

	r->dns = NULL;
	if (err == 0 && (r->naddrs = dns_addrs_with_port(res, p->port,
	    r->addrs)) == 0)
		err = ENOENT;
	if (err != 0) {
		parent_next(c, err, "cannot resolve its name");
		return;
	}
	r->aidx = 0;
	parent_connect(c);
}

static void
parent_resolve_parent(struct pt_conn *c)
{
	const struct conf_parent	*p = parent_cur(c);
	struct dns_query		*q;

	c->c_route->step = PS_RESOLVING;
	q = dns_resolve(p->host, strlen(p->host), parent_on_parent_resolved,
	    c);
	if (q != NULL)
		c->c_route->dns = q;
}

static void
parent_on_dial(struct pt_conn *c, enum pt_verdict v)
{
	struct parent_route	*r = c->c_route;

	if (!target_dial_passed(c, v))
		return;
	if (!c->c_target.reused) {
		parent_resolve_parent(c);
		return;
	}
	/* The kept connection to the parent: the log's upstream. */
	memset(&c->c_req.target, 0, sizeof(c->c_req.target));
	memcpy(&c->c_req.target, &target_addr(c)->sa, target_addr(c)->len);
	c->c_parent = r->parent + 1;
	parent_counted(r->parent);
	target_established(c, false);
}

/* DIAL judges the target's address where it is known here (an address
 * the client gave, a tcp listener's, or resolved for a SOCKS parent
 * with resolve = "local"), else sees none (AF_UNSPEC): the parent
 * resolves the name, and judges it. */
static void
parent_dial_phase(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;
	struct pt_addr		 shown;

	memset(&c->c_req.target, 0, sizeof(c->c_req.target));
	if (r->target.sa.ss_family != 0) {
		sockaddr_unmap((const struct sockaddr *)&r->target.sa, &shown);
		memcpy(&c->c_req.target, &shown.sa, shown.len);
	}
	phase_run(c, PT_PHASE_DIAL, parent_on_dial);
}

static void
parent_on_target_resolved(void *arg, int err, const struct dns_result *res)
{
	struct pt_conn		*c = arg;
	struct parent_route	*r = c->c_route;
	struct pt_addr		 a[DNS_MAX_ADDRS];
	int			 n;

	r->dns = NULL;
	if (err == 0 && (n = dns_addrs_with_port(res, c->c_req.port, a)) > 0)
		r->target = a[0];
	else if (err == 0)
		err = ENOENT;
	if (err != 0) {
		c->c_target.ops->fail(c, TARGET_FAIL_RESOLVE, err);
		return;
	}
	parent_dial_phase(c);
}

void
parent_reuse(struct pt_conn *c)
{
	memset(&c->c_route->target, 0, sizeof(c->c_route->target));
	parent_dial_phase(c);
}

void
parent_dial(struct pt_conn *c)
{
	struct parent_route		*r = c->c_route;
	const struct conf_parent	*p = parent_cur(c);
	const struct pt_addr		*known = target_addr(c);
	struct dns_query		*q;
	struct host			 hp;

	memset(&r->target, 0, sizeof(r->target));
	r->naddrs = r->aidx = 0;
	r->rbuf_len = 0;
	if (known != NULL) {
		r->target = *known;
	} else if (host_parse(c->c_req.host.ptr, c->c_req.host.len, &hp) !=
	    HOST_NAME || (p->resolve_local && (p->proto == PARENT_SOCKS5 ||
	    p->proto == PARENT_SOCKS4))) {
		/* An address is read as one here; a name only when the
		 * parent wants addresses. */
		r->step = PS_RESOLVING;
		q = dns_resolve(c->c_req.host.ptr, c->c_req.host.len,
		    parent_on_target_resolved, c);
		if (q != NULL)
			r->dns = q;
		return;
	}
	parent_dial_phase(c);
}

/* ---- UDP ASSOCIATE through a SOCKS5 parent -------------------------- */

/*
 * A client's UDP ASSOCIATE goes through the parent as an association of
 * portico's own with it: the same connect and handshake as a CONNECT,
 * command 3 in place of 1, and the parent's relay address from its
 * reply. Only a SOCKS5 parent can carry UDP: an HTTP or SOCKS4 member is
 * passed over for the next one (the route names where the operator lets
 * traffic go, so the next member, "direct" included, is allowed; nothing
 * goes anywhere the route does not name), and only when none is left
 * does the client hear 0x07, command not supported, which is what such
 * a parent would have said itself.
 */

/* Whether a SOCKS5 parent of the route is down (so not tried). */
static bool
parent_udp_carrier_down(const struct pt_via *v)
{
	int	 i;

	for (i = 0; i < v->n; i++)
		if (v->member[i] >= 0 &&
		    parent_conf(v->member[i])->proto == PARENT_SOCKS5 &&
		    parent_down(v->member[i]))
			return true;
	return false;
}

/* No member is left: why, to the protocol. */
static void
parent_udp_none(struct pt_conn *c, const char *why)
{
	struct parent_route	*r = c->c_route;

	if (r->udp_failed) {
		c->c_req.error = why != NULL ? why : "no parent of the route "
		    "opened a UDP association";
		c->c_target.ops->fail(c, TARGET_FAIL_PARENT, EHOSTUNREACH);
	} else if (r->udp_unsupported && !parent_udp_carrier_down(r->via)) {
		r->rep = SOCKS5_CMD_UNSUPPORTED;
		c->c_req.error = "no parent of the route carries UDP";
		c->c_target.ops->fail(c, TARGET_FAIL_PARENT_REFUSED,
		    EPROTONOSUPPORT);
	} else {
		c->c_req.error = "every parent of the route is down";
		c->c_target.ops->fail(c, TARGET_FAIL_NO_PARENT, EHOSTUNREACH);
	}
}

/* The route's current member for the association: a SOCKS5 parent is
 * dialled, others passed over; <why> is the last failure, or NULL. */
static void
parent_udp_member(struct pt_conn *c, const char *why)
{
	struct parent_route		*r = c->c_route;
	const struct conf_parent	*p;

	for (;;) {
		if (r->parent == VIA_DIRECT) {
			r->udp_done(c, NULL);
			return;
		}
		if (r->parent == PARENT_NONE) {
			parent_udp_none(c, why);
			return;
		}
		p = parent_cur(c);
		if (p->proto == PARENT_SOCKS5)
			break;
		/* Not its failure: its health is left alone. */
		r->udp_unsupported = true;
		pt_clog(c, PT_LOG_DEBUG, "parent \"%s\" (%s) carries no UDP: "
		    "the next member", p->name, parent_proto_name(p->proto));
		(void)parent_route_next(c);
	}
	memset(&r->target, 0, sizeof(r->target));
	r->naddrs = r->aidx = 0;
	r->rbuf_len = 0;
	parent_resolve_parent(c);
}

void
parent_udp_open(struct pt_conn *c, parent_udp_fn done)
{
	struct parent_route	*r = c->c_route;

	r->udp_done = done;
	r->udp_failed = r->udp_unsupported = false;
	parent_udp_member(c, NULL);
}

/*
 * UDP ASSOCIATE with DST.ADDR 0.0.0.0 and DST.PORT 0: RFC 1928 7 wants
 * the address the client will send from, or zeros when it does not know
 * it. Portico does not: its UDP socket toward the parent is opened with
 * the first datagram, on a port the kernel picks, and a NAT between
 * portico and the parent would change the address anyway, so a parent
 * that pins the association to a declared port would then drop every
 * datagram. The parent ties the association to our control
 * connection's address instead (Dante, portico itself), as it does for
 * curl, which sends zeros too.
 */
static void
parent_udp_request(struct pt_conn *c)
{
	struct sockaddr_in	 any;
	uint8_t			 b[SOCKS5C_REQUEST_MAX];
	ssize_t			 n;

	memset(&any, 0, sizeof(any));
	any.sin_family = AF_INET;
	n = socks5c_request(b, sizeof(b), SOCKS5_CMD_UDP, NULL, 0,
	    (const struct sockaddr *)&any, 0);
	parent_out(c, b, (size_t)n, PS_S5_REPLY);
}

/*
 * The parent's relay from its reply's BND: an unspecified address
 * (0.0.0.0, ::) means the parent's own, the one we are connected to, as
 * curl and Dante's client read it. False when it names no usable relay.
 */
static bool
parent_udp_relay_of(const struct pt_conn *c,
    const struct sockaddr_storage *bound, struct pt_addr *out)
{
	const struct parent_route	*r = c->c_route;
	uint16_t			 port;
	bool				 any;

	if (bound->ss_family != AF_INET && bound->ss_family != AF_INET6)
		return false;
	port = sockaddr_port((const struct sockaddr *)bound);
	if (port == 0)
		return false;
	any = bound->ss_family == AF_INET ?
	    ((const struct sockaddr_in *)bound)->sin_addr.s_addr ==
	    htonl(INADDR_ANY) : IN6_IS_ADDR_UNSPECIFIED(
	    &((const struct sockaddr_in6 *)bound)->sin6_addr);
	if (any) {
		*out = r->addrs[r->aidx];
	} else {
		memset(out, 0, sizeof(*out));
		memcpy(&out->sa, bound, bound->ss_family == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
		out->len = bound->ss_family == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	}
	/* sin_port and sin6_port share their offset. */
	((struct sockaddr_in *)&out->sa)->sin_port = htons(port);
	return true;
}

/* The parent answered but will not carry this association (<what>):
 * healthy, yet no carrier; as for an HTTP parent, the next member. */
static void
parent_udp_pass_over(struct pt_conn *c, const char *what)
{
	struct parent_route	*r = c->c_route;

	parent_succeeded(r->parent, counters_now_us() - c->c_dial_us);
	parent_close_upstream(c);
	r->step = PS_IDLE;
	r->udp_unsupported = true;
	pt_clog(c, PT_LOG_INFO, "parent \"%s\" %s: the next member",
	    parent_cur(c)->name, what);
	(void)parent_route_next(c);
	target_timer_restart(c);
	parent_udp_member(c, NULL);
}

/* The parent's reply to UDP ASSOCIATE (<named>: BND.ADDR is a name). */
static void
parent_udp_reply(struct pt_conn *c, uint8_t rep,
    const struct sockaddr_storage *bound, bool named)
{
	struct parent_route	*r = c->c_route;

	if (rep == SOCKS5_CMD_UNSUPPORTED) {
		parent_udp_pass_over(c, "does not carry UDP (reply 0x07)");
		return;
	}
	if (rep != 0) {
		/* It refused this association (0x02: its rules): its
		 * answer is the client's, as for a CONNECT. */
		r->rep = rep;
		parent_refused(c, rep == 0x06, "answered SOCKS5 reply %#04x to "
		    "UDP ASSOCIATE", rep);
		return;
	}
	if (named) {
		/* RFC 1928 allows it; no server we know does it, and a
		 * lookup here for it is not worth its code. */
		parent_udp_pass_over(c, "names its UDP relay by name (not "
		    "supported)");
		return;
	}
	if (!parent_udp_relay_of(c, bound, &r->udp_relay)) {
		parent_next(c, EPROTO, "named no UDP relay (port 0)");
		return;
	}
	r->step = PS_IDLE;
	c->c_parent = r->parent + 1;
	parent_succeeded(r->parent, counters_now_us() - c->c_dial_us);
	parent_counted(r->parent);
	/* The control connection is the protocol's to watch from here;
	 * until it takes it, events are noted. */
	c->c_side[SIDE_UPSTREAM].io.fn = parent_note_events;
	target_timer_restart(c);
	r->udp_done(c, &r->udp_relay);
}
