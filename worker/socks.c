/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SOCKS on a listener: the first byte tells SOCKS5 (RFC 1928) from SOCKS4
 * and 4a. The handshake is a few small messages, read into one buffer and
 * parsed by socks_parse.c; then the connection runs the module phases
 * (ACCEPT, AUTH with RFC 1929 credentials, ACCESS, DIAL, ESTABLISHED) and
 * becomes a tunnel in relay.c (CONNECT) or the control connection of a
 * UDP relay (udp_assoc.c, UDP ASSOCIATE).
 *
 * Choices: BIND is answered 0x07 (command not supported); when the
 * connection needs credentials (a PT_MODF_CREDENTIALS module applies to
 * the listener, unless an ACCEPT hook said otherwise with
 * pt_conn_need_credentials) only username/password is offered, and SOCKS4
 * (which has no password) is refused; else no-auth is preferred and a client
 * that offers only username/password is accepted with its credentials
 * shown to the modules. Every failure is answered with its reply code,
 * then the connection closes.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/socks.h"
#include "worker/parent.h"
#include "common/counters.h"
#include "common/log.h"
#include "common/conf_types.h"
#include "worker/buf.h"
#include "worker/dns.h"
#include "worker/phase.h"
#include "worker/pool.h"
#include "worker/relay.h"
#include "worker/socks_parse.h"
#include "worker/target.h"
#include "worker/udp_assoc.h"
#include "worker/worker_self.h"

enum socks_stage {
	SS_GREETING = 0,	/* first bytes: SOCKS5 greeting or SOCKS4 */
	SS_USERPASS,		/* RFC 1929 sub-negotiation */
	SS_REQUEST,		/* SOCKS5 request */
	SS_WAIT,		/* phases, resolver or dial in progress */
	SS_REPLY,		/* writing a reply, then close or go on */
	SS_UDP,			/* control connection of an association */
};

/* What happens once the pending reply is written. */
enum socks_next {
	SN_READ = 0,		/* read the next handshake message */
	SN_CLOSE,
	SN_TUNNEL,		/* hand the connection to the relay */
	SN_UDP,			/* watch the control connection */
};

struct socks_state {
	enum socks_stage	 stage;
	enum socks_next		 next;
	enum socks_stage	 read_stage;	/* after an SN_READ reply */
	bool			 v4;		/* SOCKS4 or 4a */
	bool			 udp;		/* UDP ASSOCIATE */
	bool			 client_eof;	/* FIN seen while waiting */
	bool			 in_auth;	/* waiting for the AUTH phase */
	char			*in;
	uint32_t		 in_len;
	uint8_t			 out[32];
	uint32_t		 out_start, out_len;
	uint8_t			 method;
	uint16_t		 port;
	char			 host[256];
	char			 cred[512];
	struct pt_addr		 addrs[DNS_MAX_ADDRS];	/* target.c's */
	struct udp_assoc	*assoc;
};

static struct pool		 socks_pool;
static const struct pt_config	*socks_conf;

static void	socks_on_io(struct loop_io *io, uint32_t events);
static void	socks_reply_then(struct pt_conn *c, const uint8_t *bytes,
		    size_t len, enum socks_next next,
		    enum socks_stage read_stage);

static void
socks_reply(struct pt_conn *c, const uint8_t *bytes, size_t len,
    enum socks_next next)
{
	socks_reply_then(c, bytes, len, next, SS_WAIT);
}
static void	socks_advance(struct pt_conn *c);

void
socks_init(const struct pt_config *conf, unsigned max_conns)
{
	socks_conf = conf;
	pool_init(&socks_pool, "socks state", sizeof(struct socks_state),
	    max_conns);
	if (udp_assoc_init(max_conns) < 0)
		fatal("UDP relay buffers: out of memory");
}

void
socks_fini(void)
{
	udp_assoc_fini();
	pool_fini(&socks_pool);
}

static struct socks_state *
socks_st(struct pt_conn *c)
{
	return c->c_proto;
}

static void
socks_state_free(struct pt_conn *c)
{
	struct socks_state	*s = socks_st(c);

	if (s == NULL)
		return;
	target_stop(c);
	udp_assoc_free(s->assoc);
	buf_put(s->in);
	pool_put(&socks_pool, s);
	c->c_proto = NULL;
}

static void
socks_on_posted(struct loop_task *t)
{
	struct pt_conn	*c = (struct pt_conn *)((char *)t -
			    offsetof(struct pt_conn, c_post));

	/* Closed, or handed to the relay, since it was posted. */
	if (c->c_state != CONN_CLOSED && c->c_state != CONN_RELAY &&
	    socks_st(c) != NULL)
		socks_on_io(&c->c_side[SIDE_CLIENT].io, 0);
}

static bool
socks_is_reading(const struct socks_state *s)
{
	return s->stage == SS_GREETING || s->stage == SS_USERPASS ||
	    s->stage == SS_REQUEST;
}

/* Whether the client is read now: in a handshake stage, or while the
 * phases run (early tunnel data is kept) until its EOF or a full buffer;
 * the relay takes whatever is left. */
static bool
socks_wants_read(const struct socks_state *s)
{
	if (socks_is_reading(s) || s->stage == SS_UDP)
		return true;
	return s->stage == SS_WAIT && !s->client_eof &&
	    (s->in == NULL || s->in_len < buf_size(s->in));
}

/*
 * The client is registered once, edge-triggered, for everything
 * (CONN_SIDE_EVENTS): socks_on_io notes each event in cl->ready, a read
 * or write is tried only when it may succeed, and the relay takes the
 * registration and the bits over as they are. So a setup costs one
 * epoll_ctl on this socket and no read that fails.
 */
static void
socks_watch(struct pt_conn *c)
{
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];

	cl->io.fn = socks_on_io;
	if (!cl->io.added) {
		if (loop_io_start(&cl->io, cl->io.fd, CONN_SIDE_EVENTS,
		    socks_on_io) < 0) {
			conn_close(c, "epoll_ctl");
			return;
		}
	} else if (loop_io_set(&cl->io, CONN_SIDE_EVENTS) < 0) {
		conn_close(c, "epoll_ctl");
		return;
	}
	/* Readable still (a read filled the buffer, or a transport holds
	 * the client's next message): no new edge will say so, so read
	 * after this round. */
	if (socks_wants_read(socks_st(c)) && conn_readable(c, cl))
		loop_post(&c->c_post, socks_on_posted);
}

/* ---- replies -------------------------------------------------------- */

/* Queues <len> reply bytes after any held back (socks_advance), then
 * does <next>; SN_READ goes on reading in <read_stage>. */
static void
socks_reply_then(struct pt_conn *c, const uint8_t *bytes, size_t len,
    enum socks_next next, enum socks_stage read_stage)
{
	struct socks_state	*s = socks_st(c);

	/* Held back: a method choice (2) and an RFC 1929 status (2); then
	 * the longest reply (22, IPv6) still fits. */
	if (s->out_len + len > sizeof(s->out)) {
		conn_close(c, "reply too long");
		return;
	}
	s->read_stage = read_stage;
	memcpy(s->out + s->out_len, bytes, len);
	s->out_len += (uint32_t)len;
	s->next = next;
	s->stage = SS_REPLY;
	socks_advance(c);
}

/* A failure of the request: SOCKS5 reply <rep> (SOCKS4: rejected). */
static void
socks_fail(struct pt_conn *c, uint8_t rep, const char *why)
{
	struct socks_state	*s = socks_st(c);
	uint8_t			 b[32];
	size_t			 n;

	c->c_req.status = s->v4 ? 0x5b : rep;
	if (why != NULL && c->c_req.error == NULL)
		c->c_req.error = why;
	target_stop(c);
	if (s->v4)
		n = socks4_fmt_reply(b, false, 0, NULL);
	else
		n = socks5_fmt_reply(b, rep, NULL);
	socks_reply(c, b, n, SN_CLOSE);
}

static uint8_t
socks_errno_reply(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return SOCKS5_REFUSED;
	case ENETUNREACH:
	case ENETDOWN:
		return SOCKS5_NET_UNREACH;
	case EHOSTUNREACH:
	case ENOENT:
		return SOCKS5_HOST_UNREACH;
	case ETIMEDOUT:
		return SOCKS5_TTL_EXPIRED;
	case EACCES:
	case EPERM:
		return SOCKS5_NOT_ALLOWED;
	default:
		return SOCKS5_FAILURE;
	}
}

/* ---- after the request: the dial path (target.c) ------------------- */

static void	socks_on_timer(struct pt_timer *t, void *arg);

/* A refusal at AUTH is the RFC 1929 status (the module's socks_reply
 * when it set one); at ACCESS and after, the request's reply. */
static void
socks_refuse(struct pt_conn *c, const struct target_refusal *r)
{
	uint8_t		 st[2] = { 0x01, 0x01 };
	bool		 deny = r->verdict == PT_VERDICT_DENY;

	switch (r->phase) {
	case PT_PHASE_ACCEPT:
		conn_close(c, deny ? "denied by module" : "module error");
		return;
	case PT_PHASE_AUTH:
		if (deny && r->answer->socks_reply != 0)
			st[1] = r->answer->socks_reply;
		c->c_req.status = st[1];
		if (c->c_req.error == NULL)
			c->c_req.error = "authentication failed";
		socks_reply(c, st, sizeof(st), SN_CLOSE);
		return;
	default:
		socks_fail(c, !deny ? SOCKS5_FAILURE :
		    r->answer->socks_reply != 0 ? r->answer->socks_reply :
		    SOCKS5_NOT_ALLOWED, deny ? "denied by policy" :
		    "module error");
		return;
	}
}

static void
socks_target_fail(struct pt_conn *c, enum target_fail what, int err)
{
	const struct parent_route	*r = c->c_route;

	switch (what) {
	case TARGET_FAIL_RESOLVE:
		socks_fail(c, SOCKS5_HOST_UNREACH, err == ENOENT ?
		    "cannot resolve the host name" : "name resolution failed");
		return;
	case TARGET_FAIL_NO_PARENT:
		socks_fail(c, SOCKS5_FAILURE, c->c_req.error);
		return;
	case TARGET_FAIL_PARENT:
		socks_fail(c, SOCKS5_FAILURE, c->c_req.error);
		return;
	case TARGET_FAIL_PARENT_REFUSED:
		/* A SOCKS parent's own reply code goes on as it is; an HTTP
		 * parent's refusal of the CONNECT reads as "not allowed" for
		 * a 403, else as the target's failure. */
		socks_fail(c, r != NULL && r->rep != 0 ? r->rep :
		    r != NULL && r->http_status == 403 ? SOCKS5_NOT_ALLOWED :
		    socks_errno_reply(err), c->c_req.error);
		return;
	default:
		socks_fail(c, socks_errno_reply(err), strerror(err));
	}
}

static void
socks_established(struct pt_conn *c)
{
	struct socks_state	*s = socks_st(c);
	struct sockaddr_storage	 bound;
	socklen_t		 len = sizeof(bound);
	uint8_t			 b[32];
	size_t			 n;

	/* The reply names the address the origin sees us connect from
	 * (RFC 1928 6: BND.ADDR, BND.PORT). */
	if (getsockname(c->c_side[SIDE_UPSTREAM].io.fd,
	    (struct sockaddr *)&bound, &len) < 0)
		memset(&bound, 0, sizeof(bound));
	c->c_req.status = SOCKS5_OK;
	if (s->v4) {
		c->c_req.status = 0x5a;
		n = socks4_fmt_reply(b, true, s->port, NULL);
	} else {
		n = socks5_fmt_reply(b, SOCKS5_OK, (struct sockaddr *)&bound);
	}
	socks_reply(c, b, n, SN_TUNNEL);
}

/* A spent budget of the association got more (conn.c). */
static void
socks_on_budget(struct pt_conn *c)
{
	udp_assoc_budget(socks_st(c)->assoc);
}

/*
 * The parent's control connection of an association through a parent
 * (worker/parent_dial.c opened it as the upstream leg): it carries
 * nothing after the reply, and its end is the end of the parent's
 * association (RFC 1928 7), so of ours: the client's control connection
 * is closed too. Level-triggered, one read a round, as the client's.
 */
static void
socks_on_parent_ctl(struct loop_io *io, uint32_t events)
{
	struct conn_side	*up = (struct conn_side *)io;
	struct pt_conn		*c = up->conn;
	char			 junk[512];
	ssize_t			 n;

	(void)events;
	n = conn_recv(c, up, junk, sizeof(junk));
	if (n > 0 || n == -EAGAIN || n == -EINTR)
		return;
	if (c->c_req.error == NULL)
		c->c_req.error = n == 0 ? "the parent ended the UDP association" :
		    "the parent's control connection failed";
	conn_close(c, NULL);
}

/* Watches the parent's control connection for its end, and nothing
 * else. 0, or -1 when it cannot be watched. */
static int
socks_watch_parent(struct pt_conn *c)
{
	struct conn_side	*up = &c->c_side[SIDE_UPSTREAM];

	up->io.fn = socks_on_parent_ctl;
	/* Level-triggered from here: an end that came before, only noted
	 * as an edge, is reported again by the next wait. */
	return loop_io_set(&up->io, EPOLLIN | EPOLLRDHUP) < 0 ? -1 : 0;
}

/* Opens the relay and replies: straight to the destinations, or through
 * the parent's relay at <via> (its association is up) when not NULL.
 * Also the route's parent_udp_fn (parent_udp_open). */
static void
socks_start_udp(struct pt_conn *c, const struct pt_addr *via)
{
	struct socks_state	*s = socks_st(c);
	struct pt_addr		 bound;
	socklen_t		 len;
	uint8_t			 b[32];
	size_t			 n;

	/* The relay binds on the address the client reached (conn.c
	 * learned it already when modules are loaded). */
	if (c->c_req.local.ss_family == 0) {
		len = sizeof(c->c_req.local);
		getsockname(c->c_side[SIDE_CLIENT].io.fd,
		    (struct sockaddr *)&c->c_req.local, &len);
	}
	s->assoc = udp_assoc_open(c, &c->c_req.local, s->port,
	    c->c_listener->udp_advertise, &bound);
	if (s->assoc == NULL) {
		socks_fail(c, SOCKS5_FAILURE, "cannot open the UDP relay");
		return;
	}
	if (via != NULL) {
		udp_assoc_via(s->assoc, via, parent_serving(c)->resolve_local);
		/* Connected once to the parent: a control connection
		 * from here, as a direct association is. */
		c->c_state = CONN_PHASES;
		if (socks_watch_parent(c) < 0) {
			socks_fail(c, SOCKS5_FAILURE, "epoll_ctl");
			return;
		}
	}
	c->c_budget_resume = socks_on_budget;
	c->c_req.status = SOCKS5_OK;
	n = socks5_fmt_reply(b, SOCKS5_OK, (struct sockaddr *)&bound.sa);
	socks_reply(c, b, n, SN_UDP);
}

/* ACCESS passed: UDP ASSOCIATE opens a relay instead of dialing; through
 * a parent, once the parent's own association is up (parent_udp_open),
 * so the client hears success only when datagrams can flow. */
static bool
socks_access_ok(struct pt_conn *c)
{
	const struct parent_route	*r = c->c_route;

	if (!socks_st(c)->udp)
		return true;
	if (r != NULL && r->via != NULL && r->parent != VIA_DIRECT)
		parent_udp_open(c, socks_start_udp);
	else
		socks_start_udp(c, NULL);
	return false;
}

static const struct target_ops socks_target_ops = {
	.refuse = socks_refuse,
	.fail = socks_target_fail,
	.access_ok = socks_access_ok,
	.established = socks_established,
	.on_timer = socks_on_timer,
};

static void
socks_on_auth(struct pt_conn *c, enum pt_verdict v)
{
	static const uint8_t	 ok[2] = { 0x01, 0x00 };

	socks_st(c)->in_auth = false;
	if (target_auth_refused(c, v))
		return;
	socks_reply_then(c, ok, sizeof(ok), SN_READ, SS_REQUEST);
}

/* SOCKS4 where credentials are needed: it carries none, so it is
 * refused (0x5B) once the AUTH hooks have seen it, whatever they said. */
static void
socks4_on_auth(struct pt_conn *c, enum pt_verdict v)
{
	(void)v;
	socks_st(c)->in_auth = false;
	socks_fail(c, SOCKS5_FAILURE, "SOCKS4 has no password");
}

/* Fills c_req from a parsed destination, read as every later step reads
 * it (socks_dest_canon): copies, since the bytes it points into are about
 * to be consumed. False, nothing set, for a name that is no host. */
static bool
socks_take_dest(struct pt_conn *c, const struct socks_dest *given)
{
	struct socks_state		*s = socks_st(c);
	struct socks_dest		 dest = *given, *d = &dest;
	struct host			 h;
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	c->c_req.method.ptr = s->udp ? "UDP" : "CONNECT";
	c->c_req.method.len = strlen(c->c_req.method.ptr);
	if (!socks_dest_canon(d, &h))
		return false;
	s->port = d->port;
	target_known(c, NULL, 0);
	if (d->atyp == SOCKS_ATYP_DOMAIN) {
		memcpy(s->host, d->name.ptr, d->name.len);
		s->host[d->name.len] = '\0';
	} else {
		s->addrs[0] = d->addr;
		target_known(c, s->addrs, 1);
		/* The host as a name: the address alone, without port and
		 * brackets. */
		if (d->addr.sa.ss_family == AF_INET6) {
			sin6 = (const void *)&d->addr.sa;
			inet_ntop(AF_INET6, &sin6->sin6_addr, s->host,
			    sizeof(s->host));
		} else {
			sin = (const void *)&d->addr.sa;
			inet_ntop(AF_INET, &sin->sin_addr, s->host,
			    sizeof(s->host));
		}
	}
	c->c_req.host.ptr = s->host;
	c->c_req.host.len = strlen(s->host);
	c->c_req.port = s->port;
	return true;
}

/* Drops the <used> bytes of a parsed message from the buffer. */
static void
socks_consume(struct socks_state *s, size_t used)
{
	memmove(s->in, s->in + used, s->in_len - used);
	s->in_len -= (uint32_t)used;
}

static void
socks_request(struct pt_conn *c)
{
	socks_st(c)->stage = SS_WAIT;
	target_access(c);
}

/* ---- the handshake -------------------------------------------------- */

/* One message from the buffer. Returns false when more bytes are needed
 * or the connection moved on (reply, phases). */
static bool
socks_parse_one(struct pt_conn *c)
{
	struct socks_state	*s = socks_st(c);
	const uint8_t		*p = (const uint8_t *)s->in;
	struct socks5_greeting	 g;
	struct socks_userpass	 up;
	struct socks5_request	 r;
	struct socks4_request	 r4;
	uint8_t			 b[2];
	size_t			 i;
	int			 rc;
	bool			 auth = c->c_need_creds;

	switch (s->stage) {
	case SS_GREETING:
		if (p[0] == 4) {
			rc = socks4_parse_request(p, s->in_len, &r4);
			if (rc == PARSE_AGAIN)
				return false;
			s->v4 = true;
			c->c_req.proto = PT_PROTO_SOCKS4;
			if (rc == PARSE_BAD || r4.cmd != 1) {
				socks_fail(c, SOCKS5_FAILURE, rc == PARSE_BAD ?
				    "bad SOCKS4 request" :
				    "SOCKS4 command not supported");
				return false;
			}
			/* The USERID is the client's claim, checked by
			 * nothing: no user. */
			if (!socks_take_dest(c, &r4.dest)) {
				socks_consume(s, r4.len);
				socks_fail(c, SOCKS5_HOST_UNREACH,
				    "bad destination name");
				return false;
			}
			socks_consume(s, r4.len);
			if (auth) {
				/* Refused below whatever AUTH says; its
				 * modules see it first, so the failure is
				 * theirs to log and count (fail2ban). */
				s->stage = SS_WAIT;
				s->in_auth = true;
				phase_run(c, PT_PHASE_AUTH, socks4_on_auth);
				return false;
			}
			socks_request(c);
			return false;
		}
		rc = socks5_parse_greeting(p, s->in_len, &g);
		if (rc == PARSE_AGAIN)
			return false;
		if (rc == PARSE_BAD) {
			conn_close(c, "not SOCKS");
			return false;
		}
		c->c_req.proto = PT_PROTO_SOCKS5;
		/* Needing credentials, only username/password will do;
		 * else no-auth wins when offered. */
		s->method = SOCKS5_METHOD_REFUSED;
		for (i = 0; i < g.nmethods; i++) {
			if (g.methods[i] == SOCKS5_METHOD_NONE && !auth)
				s->method = SOCKS5_METHOD_NONE;
			if (g.methods[i] == SOCKS5_METHOD_USERPASS &&
			    s->method != SOCKS5_METHOD_NONE)
				s->method = SOCKS5_METHOD_USERPASS;
		}
		socks_consume(s, g.len);
		b[0] = 5;
		b[1] = s->method;
		if (s->method == SOCKS5_METHOD_REFUSED) {
			c->c_req.error = "no acceptable method";
			socks_reply(c, b, 2, SN_CLOSE);
			return false;
		}
		socks_reply_then(c, b, 2, SN_READ,
		    s->method == SOCKS5_METHOD_USERPASS ? SS_USERPASS :
		    SS_REQUEST);
		return false;
	case SS_USERPASS:
		rc = socks5_parse_userpass(p, s->in_len, &up);
		if (rc == PARSE_AGAIN)
			return false;
		if (rc == PARSE_BAD) {
			/* RFC 1929: a failure status, then the close; a
			 * pipelining client also gets the method choice held
			 * for it (rather than no byte at all). */
			b[0] = 1;
			b[1] = 1;
			c->c_req.error = "bad username/password message";
			socks_reply(c, b, 2, SN_CLOSE);
			return false;
		}
		memcpy(s->cred, up.user.ptr, up.user.len);
		memcpy(s->cred + up.user.len, up.password.ptr, up.password.len);
		c->c_req.user.ptr = s->cred;
		c->c_req.user.len = up.user.len;
		c->c_req.password.ptr = s->cred + up.user.len;
		c->c_req.password.len = up.password.len;
		socks_consume(s, up.len);
		s->stage = SS_WAIT;
		s->in_auth = true;
		phase_run(c, PT_PHASE_AUTH, socks_on_auth);
		return false;
	case SS_REQUEST:
		rc = socks5_parse_request(p, s->in_len, &r);
		if (rc == PARSE_AGAIN)
			return false;
		if (rc == PARSE_BAD) {
			if (r.reply < 0)
				conn_close(c, "not a SOCKS5 request");
			else
				socks_fail(c, (uint8_t)r.reply,
				    "bad SOCKS5 request");
			return false;
		}
		if (r.cmd == SOCKS5_CMD_BIND) {
			socks_consume(s, r.len);
			socks_fail(c, SOCKS5_CMD_UNSUPPORTED,
			    "BIND is not supported");
			return false;
		}
		s->udp = r.cmd == SOCKS5_CMD_UDP;
		if (s->udp)
			c->c_req.proto = PT_PROTO_UDP;
		if (!socks_take_dest(c, &r.dest)) {
			socks_consume(s, r.len);
			socks_fail(c, SOCKS5_HOST_UNREACH,
			    "bad destination name");
			return false;
		}
		socks_consume(s, r.len);
		socks_request(c);
		return false;
	default:
		return false;
	}
}

/* Parses the messages the client already sent, while in a handshake
 * stage. The state is freed when a message closes the connection, so
 * that is tested first. */
static void
socks_parse_buffered(struct pt_conn *c)
{
	struct socks_state	*s = socks_st(c);

	while (c->c_state != CONN_CLOSED && s->in_len > 0 &&
	    socks_is_reading(s))
		if (!socks_parse_one(c))
			break;
}

static void
socks_read(struct pt_conn *c)
{
	struct socks_state	*s = socks_st(c);
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	size_t			 room;
	ssize_t			 n;

	if (s->in == NULL && (s->in = buf_get(BUF_SMALL)) == NULL) {
		conn_close(c, "out of buffers");
		return;
	}
	if (s->in_len == buf_size(s->in)) {
		conn_close(c, "handshake too long");
		return;
	}
	room = buf_size(s->in) - s->in_len;
	n = conn_recv(c, cl, s->in + s->in_len, room);
	/* A short read from a plain socket emptied it: the next byte raises
	 * an edge. Not once a FIN was reported, which may sit behind. */
	if (n == -EAGAIN || (n > 0 && (size_t)n < room &&
	    c->c_transport == NULL && !cl->hup))
		cl->ready &= ~(uint32_t)EPOLLIN;
	if (n == -EAGAIN) {
		/* Nothing pending: a client that is slow to speak holds no
		 * buffer meanwhile. */
		if (s->in_len == 0) {
			buf_put(s->in);
			s->in = NULL;
		}
		return;
	}
	if (n == 0 && s->stage == SS_WAIT && s->in_auth && s->in_len == 0) {
		/* Gone while its login is judged, with no request sent: it
		 * can never send one, so the module may stop (the auth
		 * module then verifies nothing for it). */
		conn_close(c, "client closed during the handshake");
		return;
	}
	if (n == 0 && s->stage == SS_WAIT) {
		/* A client may send its data and FIN before our reply;
		 * the relay reads the EOF again and passes it on. */
		s->client_eof = true;
		return;
	}
	if (n <= 0) {
		conn_close(c, n == 0 ? "client closed during the handshake" :
		    "read failed");
		return;
	}
	s->in_len += (uint32_t)n;
	c->c_req.bytes_in += (uint64_t)n;
	c->c_last_active = loop_now();
	socks_parse_buffered(c);
}

/* Hands the connection to the relay, with bytes the client sent after
 * its request (it may not wait for our reply). */
static void
socks_tunnel(struct pt_conn *c)
{
	struct socks_state	*s = socks_st(c);
	struct relay_dir	*d = &c->c_dir[SIDE_CLIENT];

	if (s->in != NULL && s->in_len > 0) {
		d->buf = s->in;
		d->head = 0;
		d->tail = s->in_len;
		s->in = NULL;
		s->in_len = 0;
	}
	buf_put(s->in);
	s->in = NULL;
	relay_start(c);
}

/* Moves the connection along after any event or reply. */
static void
socks_advance(struct pt_conn *c)
{
	struct socks_state	*s = socks_st(c);
	struct conn_side	*cl = &c->c_side[SIDE_CLIENT];
	ssize_t			 n;

	if (s->stage == SS_REPLY && s->next == SN_READ && s->out_start == 0 &&
	    s->in_len > 0) {
		/* The client pipelined: its next message is (at least partly)
		 * here, so it is not waiting for this reply. Hold the reply
		 * and send it with the next one: one write and one wake-up
		 * for the client instead of two or three. */
		s->stage = s->read_stage;
		socks_parse_buffered(c);
		if (c->c_state == CONN_CLOSED)
			return;
		s = socks_st(c);
		if (!socks_is_reading(s)) {
			/* Phases, a reply or the tunnel took over; a reply
			 * queued later carries the held bytes with it. */
			if (s->stage == SS_WAIT)
				socks_advance(c);
			return;
		}
		/* Only part of the next message: the client may be waiting
		 * for what we hold after all. */
		s->read_stage = s->stage;
		s->stage = SS_REPLY;
	}
	if (s->stage == SS_REPLY) {
		while (s->out_start < s->out_len) {
			n = conn_send(c, cl, s->out + s->out_start,
			    s->out_len - s->out_start);
			if (n == -EAGAIN) {
				/* An EPOLLOUT edge comes when it drains. */
				cl->ready &= ~(uint32_t)EPOLLOUT;
				socks_watch(c);
				return;
			}
			if (n < 0) {
				conn_close(c, "send failed");
				return;
			}
			s->out_start += (uint32_t)n;
			c->c_req.bytes_out += (uint64_t)n;
		}
		s->out_start = s->out_len = 0;
		switch (s->next) {
		case SN_CLOSE:
			/* A refusal to a client that sent data behind its
			 * request (a pipelining client's first bytes) lingers:
			 * closing on unread bytes is a reset, which may cost
			 * the client the reply. */
			if (s->in_len > 0)
				conn_close_linger(c, NULL);
			else
				conn_close(c, NULL);
			return;
		case SN_TUNNEL:
			socks_tunnel(c);
			return;
		case SN_UDP:
			s->stage = SS_UDP;
			pt_timer_start(&c->c_timer,
			    socks_conf->limits.idle_timeout_ms, socks_on_timer,
			    c);
			socks_watch(c);
			return;
		case SN_READ:
			s->stage = s->read_stage;
			break;
		}
		/* The next message may already be here (clients pipeline
		 * the greeting, credentials and request). */
		socks_parse_buffered(c);
		if (c->c_state == CONN_CLOSED)
			return;
	}
	s = socks_st(c);
	if (socks_is_reading(s) || s->stage == SS_WAIT)
		socks_watch(c);
}

static void
socks_on_io(struct loop_io *io, uint32_t events)
{
	struct conn_side	*cl = (struct conn_side *)io;
	struct pt_conn		*c = cl->conn;
	struct socks_state	*s = socks_st(c);
	char			 junk[512];
	ssize_t			 n;

	conn_side_note_events(cl, events);
	switch (s->stage) {
	case SS_REPLY:
		/* A reply waits for room; the client's bytes wait for it. */
		if (cl->ready & EPOLLOUT)
			socks_advance(c);
		return;
	case SS_UDP:
		/* The control connection carries nothing more; its end is
		 * the association's end (RFC 1928 7). One read per round:
		 * a chatty client is read again after the others. */
		if (!conn_readable(c, cl))
			return;
		n = conn_recv(c, cl, junk, sizeof(junk));
		if (n == 0 || (n < 0 && n != -EAGAIN)) {
			conn_close(c, NULL);
			return;
		}
		if (n == -EAGAIN || (c->c_transport == NULL && !cl->hup &&
		    (size_t)n < sizeof(junk)))
			cl->ready &= ~(uint32_t)EPOLLIN;
		else
			loop_post(&c->c_post, socks_on_posted);
		return;
	case SS_WAIT:
		/* Bytes a client sends while we wait (its next message, or
		 * early tunnel data) are kept for later. */
		if (socks_wants_read(s) && conn_readable(c, cl))
			socks_read(c);
		return;
	default:
		if (!conn_readable(c, cl))
			return;
		socks_read(c);
		if (c->c_state != CONN_CLOSED && socks_st(c)->stage != SS_REPLY)
			socks_advance(c);
		return;
	}
}

static void
socks_on_timer(struct pt_timer *t, void *arg)
{
	struct pt_conn		*c = arg;
	struct socks_state	*s = socks_st(c);
	uint64_t		 idle = socks_conf->limits.idle_timeout_ms;
	uint64_t		 quiet = loop_now() - c->c_last_active;

	if (s->stage != SS_UDP) {
		conn_close(c, "handshake timed out");
		return;
	}
	/* UDP traffic stamps c_last_active; the deadline moves lazily. */
	if (quiet < idle) {
		pt_timer_start(&c->c_timer, idle - quiet, socks_on_timer, c);
		return;
	}
	conn_close(c, "idle UDP association");
}

static void
socks_on_accept(struct pt_conn *c, enum pt_verdict v)
{
	if (target_refused(c, PT_PHASE_ACCEPT, v))
		return;
	socks_watch(c);
}

void
socks_start(struct pt_conn *c)
{
	struct socks_state	*s;

	if ((s = pool_get(&socks_pool)) == NULL) {
		conn_close(c, "out of SOCKS state");
		return;
	}
	memset(s, 0, sizeof(*s));
	c->c_proto = s;
	c->c_proto_free = socks_state_free;
	c->c_req.proto = PT_PROTO_SOCKS5;
	target_init(c, &socks_target_ops, s->addrs);
	pt_timer_start(&c->c_timer, socks_conf->limits.header_timeout_ms,
	    socks_on_timer, c);
	phase_run(c, PT_PHASE_ACCEPT, socks_on_accept);
}
