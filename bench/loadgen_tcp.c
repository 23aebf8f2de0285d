/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loadgen_tcp: the TCP client scenarios. N clients, each its own state
 * machine driven by one epoll loop:
 *
 *   connect (to --proxy, or --target when there is none)
 *   -> with --tls, a TLS handshake with the proxy (loadgen_tls.c); every
 *      byte below then goes through it
 *   -> setup: SOCKS5 greeting [RFC 1929] CONNECT, or HTTP CONNECT, when
 *      the scenario tunnels through the proxy
 *   -> the work: http (GET, read the response, again on the same
 *      connection, or on a new one when the response was delimited by
 *      the server's close), http-close (one GET, close, again), tunnel
 *      (write and read without end), tunnel --rr (round trips, below),
 *      socks-handshakes (count the setup, close, again; with --exchange,
 *      one round trip to an echo first, as --rr's below), idle (hold).
 *
 * A failed client counts its error, closes, and starts again after
 * LG_RETRY_NS. Clients that close after each exchange (http-close,
 * socks-handshakes) close with SO_LINGER 0, so the client side leaves no
 * TIME_WAIT and a run measures the proxy, not the ephemeral port range.
 *
 * With --pipeline a SOCKS5 client writes its greeting, credentials and
 * request at once and then reads the replies in turn, as clients that
 * do not wait for the method selection do.
 *
 * A response without Content-Length or chunked framing (serve's /eof/N)
 * ends at the server's close: that close completes it, is checked against
 * --expect-size when given, and the next request goes on a new connection,
 * neither an error nor a retry.
 *
 * With --rr a tunnel carries interactive traffic, to an echo: it writes
 * --payload bytes, reads until as many came back, and writes the next.
 * Each round trip counts as a request and its time, from the first byte
 * written to the last read, as a latency sample; a tunnel's setup is then
 * not sampled. More bytes back than were sent is a size error.
 *
 * With --tls the counted bytes are the plaintext ones (what the proxy
 * relays), not the TLS records.
 *
 * With --proxy-header each connection to the proxy is given its PROXY
 * header once connected, and the first write sends it together with the
 * first protocol bytes (sendmsg of two pieces: no extra system call, no
 * extra segment); a client whose first bytes are the TLS handshake's, or
 * that sends nothing (idle), sends it alone first. Its bytes count in
 * the bytes sent, like the request's.
 *
 * Deliberately not here: HTTP pipelining, request bodies, checking the bytes a
 * tunnel carries (their count only).
 */
#include "config.h"

#include "loadgen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define HTTP_BUF	8192	/* a response head must fit */
#define SCRATCH		65536
#define HS_BUF		1024	/* a proxy's CONNECT or SOCKS5 reply */

enum cl_state {
	CL_IDLE = 0,	/* no socket; start at <wake> */
	CL_CONNECTING,
	CL_TLS_HS,	/* --tls: handshake with the proxy */
	CL_S5_METHOD,	/* greeting sent, reading the method reply */
	CL_S5_AUTH,	/* RFC 1929 request sent */
	CL_S5_REPLY,	/* CONNECT sent */
	CL_CONNECT,	/* HTTP CONNECT sent, reading the response head */
	CL_HTTP,	/* request sent, reading the response */
	CL_STREAM,	/* tunnel: bytes both ways */
	CL_RR,		/* tunnel --rr, socks-handshakes --exchange: a
			 * request out, its echo back */
	CL_HOLD,	/* idle: holding */
};

/* Where an HTTP response is. */
enum rs_state {
	RS_HEAD = 0,
	RS_BODY_LEN,	/* Content-Length bytes */
	RS_BODY_EOF,	/* until the server closes */
	RS_CH_SIZE,	/* chunk-size line */
	RS_CH_DATA,
	RS_CH_CRLF,	/* after chunk data */
	RS_CH_TRAILER,
};

struct client {
	int		 fd;
	struct lg_tls	*tls;		/* --tls: kept across connections */
	enum cl_state	 st;
	bool		 up;		/* counted in run->nup */
	bool		 reused;	/* a response came on it already */
	uint32_t	 events;	/* epoll mask now */
	uint64_t	 started;	/* exchange, setup or --rr trip began */
	uint64_t	 deadline;
	uint64_t	 wake;
	size_t		 req_off;	/* request bytes sent (--rr: payload) */
	size_t		 hs_len;
	uint8_t		 hs[HS_BUF];
	/* --proxy-header: this connection's header, pp_off of it sent */
	uint8_t		 pp[LG_PP_MAX];
	size_t		 pp_len, pp_off;
	/* HTTP response */
	uint8_t		*buf;		/* HTTP_BUF, head only */
	size_t		 blen;
	enum rs_state	 rs;
	int		 status;
	bool		 has_len, chunked, server_close;
	uint64_t	 clen, left, got;	/* got: --rr, bytes back too */
	uint64_t	 chunk;
	int		 ndigits;
	bool		 ext;
	size_t		 line;
};

struct run {
	const struct lg_opts	*o;
	struct lg_result	*res;
	int			 ep;
	struct client		*cl;
	uint64_t		 now, start;
	uint64_t		 from, to;	/* the measured window */
	bool			 window_set;
	long			 nup;
	bool			 socks, connect;	/* the setup to do */
	bool			 counting;	/* errors count */
	uint8_t			 greeting[3];
	uint8_t			 authreq[3 + 255 + 255];
	size_t			 authreq_len;
	uint8_t			 s5req[22];	/* ATYP 1 or 4 */
	size_t			 s5req_len;
	uint8_t			 pipelined[3 + 3 + 255 + 255 + 22];
	size_t			 pipelined_len;
	char			 req[2048];	/* GET or CONNECT */
	size_t			 req_len;
	uint8_t			*scratch;
	uint8_t			*payload;
};

static void	cl_start(struct run *, struct client *);
static void	cl_ready(struct run *, struct client *);

static bool
in_window(const struct run *r)
{
	return r->window_set && r->now >= r->from && r->now < r->to;
}

static void
count_err(struct run *r, enum lg_err e)
{
	if (r->counting)
		r->res->err[e]++;
}

static void
cl_close(struct run *r, struct client *c)
{
	if (c->tls != NULL)
		lg_tls_close(c->tls);
	if (c->fd >= 0) {
		/* close() also leaves epoll: the fd is not shared. */
		close(c->fd);
		c->fd = -1;
	}
	if (c->up) {
		c->up = false;
		r->nup--;
	}
	c->hs_len = 0;
	c->blen = 0;
	c->req_off = 0;
	c->reused = false;
	c->pp_len = c->pp_off = 0;
}

/* A failure of class <e>: count, close, start again a little later. */
static void
cl_fail(struct run *r, struct client *c, enum lg_err e)
{
	count_err(r, e);
	cl_close(r, c);
	/* Not at once: a refusing target or a used-up port range would
	 * only spin. */
	c->st = CL_IDLE;
	c->wake = r->now + LG_RETRY_NS;
}

static void
cl_fail_errno(struct run *r, struct client *c, int err)
{
	cl_fail(r, c, lg_err_of(err));
}

static int
cl_watch(struct run *r, struct client *c, uint32_t events)
{
	struct epoll_event	 ev;

	if (c->events == events)
		return 0;
	ev.events = events;
	ev.data.ptr = c;
	if (epoll_ctl(r->ep, c->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD,
	    c->fd, &ev) < 0) {
		cl_fail_errno(r, c, errno);
		return -1;
	}
	c->events = events;
	return 0;
}

/* recv() and send() on the client's connection, through TLS with --tls:
 * the same results, errno EAGAIN included. */
static ssize_t
cl_recv(struct client *c, void *buf, size_t len)
{
	if (c->tls != NULL)
		return lg_tls_read(c->tls, buf, len);
	return recv(c->fd, buf, len, 0);
}

/*
 * --proxy-header: the rest of the header and <buf> in one sendmsg. As
 * send() for <buf>: the bytes of it sent (the header's are counted
 * here), or -1 with errno; a header not yet all out is EAGAIN, and the
 * next write goes on with it.
 */
static ssize_t
pp_write(struct run *r, struct client *c, const void *buf, size_t len)
{
	struct iovec	 iov[2];
	struct msghdr	 mh;
	size_t		 left = c->pp_len - c->pp_off, hdr;
	ssize_t		 n;

	iov[0].iov_base = c->pp + c->pp_off;
	iov[0].iov_len = left;
	iov[1].iov_base = (void *)(uintptr_t)buf;
	iov[1].iov_len = len;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = len > 0 ? 2 : 1;
	n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
	if (n < 0)
		return -1;
	hdr = (size_t)n < left ? (size_t)n : left;
	c->pp_off += hdr;
	if (c->pp_off == c->pp_len) {
		r->res->pp_sent++;
		if (in_window(r))
			r->res->pp_window++;
	}
	if (in_window(r))
		r->res->up += hdr;
	if (c->pp_off < c->pp_len) {
		errno = EAGAIN;
		return -1;
	}
	return n - (ssize_t)hdr;
}

static ssize_t
cl_write(struct run *r, struct client *c, const void *buf, size_t len)
{
	if (c->pp_off < c->pp_len)
		return pp_write(r, c, buf, len);
	if (c->tls != NULL)
		return lg_tls_write(c->tls, buf, len);
	return send(c->fd, buf, len, MSG_NOSIGNAL);
}

/*
 * Sends one whole setup message. They are a few hundred bytes and the
 * exchange is lock-step, so the send buffer is empty: a short write means
 * a broken socket. Returns 0, or -1 after cl_fail.
 */
static int
cl_send(struct run *r, struct client *c, const void *msg, size_t len)
{
	ssize_t	 n;

	n = cl_write(r, c, msg, len);
	if (n == (ssize_t)len)
		return 0;
	cl_fail_errno(r, c, n < 0 ? errno : EIO);
	return -1;
}

static void
cl_start(struct run *r, struct client *c)
{
	const struct lg_opts	*o = r->o;
	const struct sockaddr_in *to = o->have_proxy ? &o->proxy :
				    &o->target.v4;
	struct linger		 lg = { .l_onoff = 1, .l_linger = 0 };
	int			 one = 1;

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		cl_fail_errno(r, c, errno);
		return;
	}
	c->events = 0;
	if (o->scenario == LG_HTTP_CLOSE || o->scenario == LG_HANDSHAKES)
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->started = r->now;
	c->deadline = r->now + (uint64_t)(o->timeout * NS_PER_S);
	c->hs_len = 0;
	if (connect(c->fd, (const struct sockaddr *)to, sizeof(*to)) < 0 &&
	    errno != EINPROGRESS) {
		cl_fail_errno(r, c, errno);
		return;
	}
	/* Even a loopback connect that completed at once is finished in
	 * the event handler: one path. */
	c->st = CL_CONNECTING;
	cl_watch(r, c, EPOLLOUT);
}

/* The RFC 1929 request <c> sends: --auth's, or with --auth-users N the
 * user name with the client's number modulo N after it (each client its
 * own account). Returns its length. */
static size_t
s5_authreq(const struct run *r, const struct client *c, uint8_t *out)
{
	const struct lg_opts	*o = r->o;
	char			 user[256];
	size_t			 ulen;
	uint8_t			*p = out;

	if (o->auth_users == 0) {
		memcpy(out, r->authreq, r->authreq_len);
		return r->authreq_len;
	}
	ulen = (size_t)snprintf(user, sizeof(user), "%.*s%ld", (int)o->ulen,
	    o->user, (long)(c - r->cl) % o->auth_users);
	*p++ = 1;
	*p++ = (uint8_t)ulen;
	memcpy(p, user, ulen);
	p += ulen;
	*p++ = (uint8_t)o->plen;
	memcpy(p, o->pass, o->plen);
	p += o->plen;
	return (size_t)(p - out);
}

/* Connected (and through TLS with --tls): the proxy's setup. */
static void
cl_setup(struct run *r, struct client *c)
{
	uint8_t	 msg[sizeof(r->pipelined)];
	size_t	 n;

	if (r->socks && r->o->pipeline && r->o->auth_users > 0) {
		memcpy(msg, r->greeting, sizeof(r->greeting));
		n = sizeof(r->greeting);
		n += s5_authreq(r, c, msg + n);
		memcpy(msg + n, r->s5req, r->s5req_len);
		n += r->s5req_len;
		if (cl_send(r, c, msg, n) < 0)
			return;
		c->st = CL_S5_METHOD;
		cl_watch(r, c, EPOLLIN);
		return;
	}
	if (r->socks && r->o->pipeline) {
		if (cl_send(r, c, r->pipelined, r->pipelined_len) < 0)
			return;
		c->st = CL_S5_METHOD;
		cl_watch(r, c, EPOLLIN);
		return;
	}
	if (r->socks) {
		if (cl_send(r, c, r->greeting, sizeof(r->greeting)) < 0)
			return;
		c->st = CL_S5_METHOD;
		cl_watch(r, c, EPOLLIN);
		return;
	}
	if (r->connect) {
		if (cl_send(r, c, r->req, r->req_len) < 0)
			return;
		c->st = CL_CONNECT;
		cl_watch(r, c, EPOLLIN);
		return;
	}
	/* Only http's GET will carry a pending PROXY header: idle sends
	 * nothing, so the header goes alone. */
	if (c->pp_off < c->pp_len && r->o->scenario != LG_HTTP &&
	    r->o->scenario != LG_HTTP_CLOSE && cl_send(r, c, NULL, 0) < 0)
		return;
	cl_ready(r, c);
}

/* One step of the TLS handshake with the proxy. */
static void
cl_tls_step(struct run *r, struct client *c)
{
	uint32_t	 ev = EPOLLIN;

	if (lg_tls_handshake(c->tls, &ev, r->res, in_window(r)) == 0) {
		cl_setup(r, c);
		return;
	}
	if (errno == EAGAIN)
		cl_watch(r, c, ev);
	else
		cl_fail_errno(r, c, errno);
}

static void
cl_connected(struct run *r, struct client *c)
{
	ssize_t	 n;

	if (r->o->proxy_header != LG_PP_NONE && r->o->have_proxy) {
		if ((n = lg_proxy_header(r->o, c->fd, c->pp)) < 0) {
			cl_fail_errno(r, c, errno);
			return;
		}
		c->pp_len = (size_t)n;
		c->pp_off = 0;
		/* The header comes before the ClientHello, which OpenSSL
		 * writes itself: alone, then. */
		if (c->tls != NULL && cl_send(r, c, NULL, 0) < 0)
			return;
	}
	if (c->tls == NULL) {
		cl_setup(r, c);
		return;
	}
	if (lg_tls_start(c->tls, c->fd) < 0) {
		cl_fail_errno(r, c, errno);
		return;
	}
	c->st = CL_TLS_HS;
	cl_tls_step(r, c);
}

/* ---- setup replies --------------------------------------------------- */

/*
 * The reply took c->hs[0..used); what follows came from the target through
 * the new tunnel (a source that talks first can land in the same read):
 * counted as received, then dropped.
 */
static void
tunnel_early(struct run *r, struct client *c, size_t used)
{
	if (c->hs_len > used && in_window(r))
		r->res->down += c->hs_len - used;
	c->hs_len = 0;
}

static void	s5_parse(struct run *r, struct client *c);

/* --pipeline: drops a 2-byte reply just checked, goes on in state <st>
 * with whatever followed it. */
static void
s5_next(struct run *r, struct client *c, enum cl_state st)
{
	memmove(c->hs, c->hs + 2, c->hs_len - 2);
	c->hs_len -= 2;
	c->st = st;
	s5_parse(r, c);
}

static void
s5_parse(struct run *r, struct client *c)
{
	const struct lg_opts	*o = r->o;
	size_t			 need;

	if (c->hs_len < 2)
		return;
	switch (c->st) {
	case CL_S5_METHOD:
		if (c->hs[0] != 5 || (c->hs_len > 2 && !o->pipeline)) {
			cl_fail(r, c, LG_ERR_OTHER);
			return;
		}
		if (c->hs[1] != (o->auth ? 2 : 0)) {
			cl_fail(r, c, c->hs[1] == 0xff ? LG_ERR_STATUS :
			    LG_ERR_OTHER);
			return;
		}
		if (o->pipeline) {
			/* Everything was sent: read the next reply, which may
			 * have come in the same read. */
			s5_next(r, c, o->auth ? CL_S5_AUTH : CL_S5_REPLY);
			return;
		}
		c->hs_len = 0;
		if (o->auth) {
			uint8_t	 req[sizeof(r->authreq)];

			if (cl_send(r, c, req, s5_authreq(r, c, req)) == 0)
				c->st = CL_S5_AUTH;
			return;
		}
		if (cl_send(r, c, r->s5req, r->s5req_len) == 0)
			c->st = CL_S5_REPLY;
		return;
	case CL_S5_AUTH:
		if (c->hs[0] != 1 || (c->hs_len > 2 && !o->pipeline)) {
			cl_fail(r, c, LG_ERR_OTHER);
			return;
		}
		if (c->hs[1] != 0) {
			cl_fail(r, c, LG_ERR_STATUS);
			return;
		}
		if (o->pipeline) {
			s5_next(r, c, CL_S5_REPLY);
			return;
		}
		c->hs_len = 0;
		if (cl_send(r, c, r->s5req, r->s5req_len) == 0)
			c->st = CL_S5_REPLY;
		return;
	case CL_S5_REPLY:
		if (c->hs[0] != 5) {
			cl_fail(r, c, LG_ERR_OTHER);
			return;
		}
		if (c->hs[1] != 0) {
			cl_fail(r, c, LG_ERR_STATUS);
			return;
		}
		need = lg_socks_reply_len(c->hs, c->hs_len);
		if (need == SIZE_MAX) {
			cl_fail(r, c, LG_ERR_OTHER);
			return;
		}
		if (need == 0 || c->hs_len < need)
			return;
		tunnel_early(r, c, need);
		cl_ready(r, c);
		return;
	default:
		return;
	}
}

/* The status of "HTTP/1.x NNN ...", or -1. */
static int
http_status(const uint8_t *p, size_t len)
{
	if (len < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
	    p[9] < '0' || p[9] > '9' || p[10] < '0' || p[10] > '9' ||
	    p[11] < '0' || p[11] > '9')
		return -1;
	return (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
}

/* Length of the head ending in an empty line, 0 while incomplete. */
static size_t
head_len(const uint8_t *p, size_t len)
{
	const uint8_t	*e = memmem(p, len, "\r\n\r\n", 4);

	return e == NULL ? 0 : (size_t)(e - p) + 4;
}

static void
connect_parse(struct run *r, struct client *c)
{
	size_t	 hl = head_len(c->hs, c->hs_len);

	if (hl == 0) {
		if (c->hs_len == sizeof(c->hs))
			cl_fail(r, c, LG_ERR_OTHER);
		return;
	}
	if (http_status(c->hs, hl) != 200) {
		cl_fail(r, c, http_status(c->hs, hl) < 0 ? LG_ERR_OTHER :
		    LG_ERR_STATUS);
		return;
	}
	tunnel_early(r, c, hl);
	cl_ready(r, c);
}

/* Reads a setup reply into c->hs and acts on it. */
static void
cl_on_setup(struct run *r, struct client *c)
{
	ssize_t	 n;

	n = cl_recv(c, c->hs + c->hs_len, sizeof(c->hs) - c->hs_len);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			cl_fail_errno(r, c, errno);
		return;
	}
	if (n == 0) {
		cl_fail(r, c, LG_ERR_RESET);
		return;
	}
	c->hs_len += (size_t)n;
	if (c->st == CL_CONNECT)
		connect_parse(r, c);
	else
		s5_parse(r, c);
}

/* ---- http ------------------------------------------------------------ */

static void
http_send(struct run *r, struct client *c)
{
	ssize_t	 n;

	n = cl_write(r, c, r->req + c->req_off, r->req_len - c->req_off);
	if (n < 0) {
		if (errno == EAGAIN)
			n = 0;
		else {
			cl_fail_errno(r, c, errno);
			return;
		}
	}
	if (in_window(r))
		r->res->up += (uint64_t)n;
	c->req_off += (size_t)n;
	cl_watch(r, c, c->req_off < r->req_len ? EPOLLIN | EPOLLOUT :
	    EPOLLIN);
}

static void
http_begin(struct run *r, struct client *c)
{
	c->st = CL_HTTP;
	c->rs = RS_HEAD;
	c->blen = 0;
	c->req_off = 0;
	c->got = 0;
	c->deadline = r->now + (uint64_t)(r->o->timeout * NS_PER_S);
	/* http-close measures from connect(); keep-alive from the send. */
	if (r->o->scenario == LG_HTTP)
		c->started = r->now;
	http_send(r, c);
}

/* A whole response: check it, count it, go on. */
static void
http_done(struct run *r, struct client *c)
{
	const struct lg_opts	*o = r->o;
	long long		 want = o->expect_size;

	if (want < 0 && c->has_len)
		want = (long long)c->clen;
	if (c->status != 200)
		count_err(r, LG_ERR_STATUS);
	else if (want >= 0 && c->got != (uint64_t)want)
		count_err(r, LG_ERR_SIZE);
	else if (in_window(r)) {
		r->res->requests++;
		lg_lat_add(r->now - c->started);
	}
	if (o->scenario == LG_HTTP_CLOSE || c->server_close ||
	    c->rs == RS_BODY_EOF) {
		cl_close(r, c);
		cl_start(r, c);
		return;
	}
	c->reused = true;
	http_begin(r, c);
}

static bool
field_is(const char *line, size_t len, const char *name)
{
	size_t	 n = strlen(name);

	return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

static bool
value_has(const char *line, size_t len, const char *token)
{
	char	 v[256];
	size_t	 n = len < sizeof(v) - 1 ? len : sizeof(v) - 1;

	memcpy(v, line, n);
	v[n] = '\0';
	return strcasestr(v, token) != NULL;
}

/*
 * The head c->buf[0..hl): status and framing. Returns 0, or -1 for a
 * malformed one.
 */
static int
http_head(struct client *c, size_t hl)
{
	const char	*p = (const char *)c->buf, *end = p + hl, *eol;
	char		*num_end;
	size_t		 len;

	c->status = http_status(c->buf, hl);
	if (c->status < 0)
		return -1;
	c->has_len = c->chunked = c->server_close = false;
	c->clen = 0;
	if (memcmp(p, "HTTP/1.0", 8) == 0)
		c->server_close = true;
	p = memchr(p, '\n', hl);
	for (p = p + 1; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			break;
		len = (size_t)(eol - p);
		if (field_is(p, len, "content-length")) {
			c->clen = strtoull(p + 15, &num_end, 10);
			c->has_len = true;
		} else if (field_is(p, len, "transfer-encoding"))
			c->chunked = value_has(p, len, "chunked");
		else if (field_is(p, len, "connection")) {
			if (value_has(p, len, "close"))
				c->server_close = true;
			else if (value_has(p, len, "keep-alive"))
				c->server_close = false;
		}
	}
	if (c->status == 204 || c->status == 304) {
		c->rs = RS_BODY_LEN;
		c->left = 0;
		c->has_len = true;
		c->clen = 0;
	} else if (c->chunked) {
		c->rs = RS_CH_SIZE;
		c->chunk = 0;
		c->ndigits = 0;
		c->ext = false;
		c->has_len = false;
	} else if (c->has_len) {
		c->rs = RS_BODY_LEN;
		c->left = c->clen;
	} else
		c->rs = RS_BODY_EOF;
	return 0;
}

static int
hexval(uint8_t ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* One byte of chunk framing (size line, CRLF, trailer). Returns 1 when
 * the body ended, 0 to go on, -1 on a malformed one. */
static int
chunk_byte(struct client *c, uint8_t ch)
{
	int	 d;

	switch (c->rs) {
	case RS_CH_SIZE:
		if (ch == '\n') {
			if (c->ndigits == 0)
				return -1;
			if (c->chunk == 0) {
				c->rs = RS_CH_TRAILER;
				c->line = 0;
			} else {
				c->rs = RS_CH_DATA;
				c->left = c->chunk;
			}
			return 0;
		}
		if (ch == '\r' || c->ext)
			return 0;
		if (ch == ';' || ch == ' ' || ch == '\t') {
			c->ext = true;
			return 0;
		}
		if ((d = hexval(ch)) < 0 || c->ndigits >= 15)
			return -1;
		c->chunk = c->chunk * 16 + (uint64_t)d;
		c->ndigits++;
		return 0;
	case RS_CH_CRLF:
		if (ch == '\r')
			return 0;
		if (ch != '\n')
			return -1;
		c->rs = RS_CH_SIZE;
		c->chunk = 0;
		c->ndigits = 0;
		c->ext = false;
		return 0;
	case RS_CH_TRAILER:
		if (ch == '\n') {
			if (c->line == 0)
				return 1;
			c->line = 0;
		} else if (ch != '\r')
			c->line++;
		return 0;
	default:
		return -1;
	}
}

/*
 * Body bytes. Returns 1 when the response ended with the last of them,
 * 0 to read more, -1 on a malformed body or bytes beyond the response.
 */
static int
http_body(struct client *c, const uint8_t *p, size_t n)
{
	size_t	 take;
	int	 rc;

	while (n > 0) {
		switch (c->rs) {
		case RS_BODY_LEN:
			return -1;	/* beyond the end: no pipelining */
		case RS_BODY_EOF:
			c->got += n;
			return 0;
		case RS_CH_DATA:
			take = n < c->left ? n : (size_t)c->left;
			c->got += take;
			c->left -= take;
			p += take;
			n -= take;
			if (c->left == 0)
				c->rs = RS_CH_CRLF;
			continue;
		default:
			rc = chunk_byte(c, *p);
			p++;
			n--;
			if (rc != 0)
				return rc < 0 || n > 0 ? -1 : 1;
			continue;
		}
	}
	return 0;
}

/* Feeds a Content-Length body, the common case, in bulk. */
static int
http_feed(struct client *c, const uint8_t *p, size_t n)
{
	size_t	 take;

	if (c->rs != RS_BODY_LEN)
		return http_body(c, p, n);
	take = n < c->left ? n : (size_t)c->left;
	c->got += take;
	c->left -= take;
	if (take < n)
		return -1;
	return c->left == 0 ? 1 : 0;
}

static void
http_on_readable(struct run *r, struct client *c)
{
	ssize_t	 n;
	size_t	 hl;
	int	 rc, i;

	for (i = 0; i < 8; i++) {
		if (c->rs == RS_HEAD)
			n = cl_recv(c, c->buf + c->blen, HTTP_BUF - c->blen);
		else
			n = cl_recv(c, r->scratch, SCRATCH);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				cl_fail_errno(r, c, errno);
			return;
		}
		if (n == 0) {
			if (c->rs == RS_BODY_EOF)
				http_done(r, c);
			else if (c->reused && c->rs == RS_HEAD &&
			    c->blen == 0) {
				/* A server may close an idle keep-alive
				 * connection as the next request leaves; a
				 * client retries (RFC 9112 section 9.3.1). */
				r->res->retries++;
				cl_close(r, c);
				cl_start(r, c);
			} else
				cl_fail(r, c, LG_ERR_RESET);
			return;
		}
		if (in_window(r))
			r->res->down += (uint64_t)n;
		if (c->rs != RS_HEAD) {
			rc = http_feed(c, r->scratch, (size_t)n);
		} else {
			c->blen += (size_t)n;
			hl = head_len(c->buf, c->blen);
			if (hl == 0) {
				if (c->blen == HTTP_BUF)
					cl_fail(r, c, LG_ERR_OTHER);
				continue;
			}
			if (http_head(c, hl) < 0) {
				cl_fail(r, c, LG_ERR_OTHER);
				return;
			}
			if (c->status >= 100 && c->status < 200) {
				/* An interim response: the real one follows. */
				memmove(c->buf, c->buf + hl, c->blen - hl);
				c->blen -= hl;
				c->rs = RS_HEAD;
				continue;
			}
			rc = c->rs == RS_BODY_LEN && c->left == 0 ? 1 : 0;
			if (hl < c->blen)
				rc = rc == 1 ? -1 : http_feed(c, c->buf + hl,
				    c->blen - hl);
		}
		if (rc < 0) {
			cl_fail(r, c, LG_ERR_OTHER);
			return;
		}
		if (rc == 1) {
			http_done(r, c);
			return;
		}
	}
}

/* ---- tunnel and idle ------------------------------------------------- */

static void
all_up(struct run *r)
{
	if (r->window_set)
		return;
	r->window_set = true;
	if (r->o->scenario == LG_IDLE) {
		printf("holding %ld\n", r->nup);
		fflush(stdout);
		r->from = r->now;
	} else
		r->from = r->now + (uint64_t)(r->o->warmup * NS_PER_S);
	r->to = r->from + (uint64_t)(r->o->duration * NS_PER_S);
}

static void
stream_io(struct run *r, struct client *c, uint32_t events)
{
	ssize_t	 n;
	int	 i;

	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		for (i = 0; i < 4; i++) {
			n = cl_recv(c, r->scratch, SCRATCH);
			if (n < 0) {
				if (errno != EAGAIN && errno != EINTR) {
					cl_fail_errno(r, c, errno);
					return;
				}
				break;
			}
			if (n == 0) {
				cl_fail(r, c, LG_ERR_RESET);
				return;
			}
			c->deadline = r->now +
			    (uint64_t)(r->o->timeout * NS_PER_S);
			if (in_window(r))
				r->res->down += (uint64_t)n;
			/* A short read emptied the socket; TLS reads a
			 * record (16 KiB) at a time, so read on. */
			if (n < SCRATCH && c->tls == NULL)
				break;
		}
	}
	if (c->st == CL_HOLD || r->o->no_send || !(events & EPOLLOUT))
		return;
	/* A few writes per wake-up, as many as reads: neither direction
	 * starves the other. */
	for (i = 0; i < 4; i++) {
		n = cl_write(r, c, r->payload, (size_t)r->o->payload);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				cl_fail_errno(r, c, errno);
			return;
		}
		c->deadline = r->now + (uint64_t)(r->o->timeout * NS_PER_S);
		if (in_window(r))
			r->res->up += (uint64_t)n;
		if (n < r->o->payload)
			return;
	}
}

/* --rr: writes what is left of the round trip's request and waits for
 * what the socket lets through. Returns 0, or -1 after cl_fail. */
static int
rr_send(struct run *r, struct client *c)
{
	size_t	 want = (size_t)r->o->payload;
	ssize_t	 n;

	while (c->req_off < want) {
		n = cl_write(r, c, r->payload + c->req_off, want - c->req_off);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				cl_fail_errno(r, c, errno);
				return -1;
			}
			break;
		}
		c->req_off += (size_t)n;
		c->deadline = r->now + (uint64_t)(r->o->timeout * NS_PER_S);
		if (in_window(r))
			r->res->up += (uint64_t)n;
	}
	return cl_watch(r, c, c->req_off < want ? EPOLLIN | EPOLLOUT :
	    EPOLLIN);
}

static int
rr_begin(struct run *r, struct client *c)
{
	c->req_off = 0;
	c->got = 0;
	c->started = r->now;
	return rr_send(r, c);
}

/*
 * --rr: reads the echo. A large request comes back while its tail is
 * still going out, so this runs in either phase; the round trip ends
 * when the whole request is back, and the next begins at once.
 */
static void
rr_on_readable(struct run *r, struct client *c)
{
	ssize_t	 n;
	int	 i;

	for (i = 0; i < 4; i++) {
		n = cl_recv(c, r->scratch, SCRATCH);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				cl_fail_errno(r, c, errno);
			return;
		}
		if (n == 0) {
			cl_fail(r, c, LG_ERR_RESET);
			return;
		}
		c->deadline = r->now + (uint64_t)(r->o->timeout * NS_PER_S);
		if (in_window(r))
			r->res->down += (uint64_t)n;
		c->got += (uint64_t)n;
		if (c->got > c->req_off) {
			cl_fail(r, c, LG_ERR_SIZE);
			return;
		}
		if (c->got == (uint64_t)r->o->payload) {
			if (in_window(r)) {
				r->res->requests++;
				lg_lat_add(r->now - c->started);
			}
			if (r->o->scenario == LG_HANDSHAKES) {
				/* --exchange: the setup is done. */
				cl_close(r, c);
				cl_start(r, c);
				return;
			}
			/* The echo has nothing more to send until the next
			 * request arrives: no read to try now. */
			rr_begin(r, c);
			return;
		}
		if (n < SCRATCH && c->tls == NULL)
			return;
	}
}

/* Connected, and through the proxy when there is one. */
static void
cl_ready(struct run *r, struct client *c)
{
	switch (r->o->scenario) {
	case LG_HANDSHAKES:
		if (r->o->exchange > 0) {
			/* One round trip before it counts; its latency
			 * runs from the connect, as the setup's. */
			c->st = CL_RR;
			c->req_off = 0;
			c->got = 0;
			c->deadline = r->now +
			    (uint64_t)(r->o->timeout * NS_PER_S);
			rr_send(r, c);
			return;
		}
		if (in_window(r)) {
			r->res->requests++;
			lg_lat_add(r->now - c->started);
		}
		cl_close(r, c);
		cl_start(r, c);
		return;
	case LG_HTTP:
	case LG_HTTP_CLOSE:
		http_begin(r, c);
		return;
	case LG_TUNNEL:
	case LG_IDLE:
		c->st = r->o->scenario != LG_TUNNEL ? CL_HOLD : r->o->rr ?
		    CL_RR : CL_STREAM;
		c->up = true;
		/* The latency of a tunnel is its setup, unless round trips
		 * are what it measures. */
		if (c->st != CL_RR)
			lg_lat_add(r->now - c->started);
		c->deadline = r->now + (uint64_t)(r->o->timeout * NS_PER_S);
		r->nup++;
		if (r->nup == r->o->connections)
			all_up(r);
		if (c->st == CL_RR)
			rr_begin(r, c);
		else
			cl_watch(r, c, c->st == CL_STREAM && !r->o->no_send ?
			    EPOLLIN | EPOLLOUT : EPOLLIN);
		return;
	default:
		return;
	}
}

static void
cl_on_io(struct run *r, struct client *c, uint32_t events)
{
	socklen_t	 len = sizeof(int);
	int		 err = 0;

	switch (c->st) {
	case CL_CONNECTING:
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err != 0) {
			cl_fail_errno(r, c, err);
			return;
		}
		cl_connected(r, c);
		return;
	case CL_TLS_HS:
		cl_tls_step(r, c);
		return;
	case CL_S5_METHOD:
	case CL_S5_AUTH:
	case CL_S5_REPLY:
	case CL_CONNECT:
		cl_on_setup(r, c);
		return;
	case CL_HTTP:
		if ((events & EPOLLOUT) && c->req_off < r->req_len) {
			http_send(r, c);
			if (c->fd < 0)
				return;
		}
		if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			http_on_readable(r, c);
		return;
	case CL_STREAM:
	case CL_HOLD:
		stream_io(r, c, events);
		return;
	case CL_RR:
		if ((events & EPOLLOUT) &&
		    c->req_off < (size_t)r->o->payload &&
		    rr_send(r, c) < 0)
			return;
		if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			rr_on_readable(r, c);
		return;
	default:
		return;
	}
}

/*
 * An event for a client. With --tls, bytes OpenSSL already decrypted wake
 * no epoll event, so they are handed over at once (a few rounds, then the
 * next event or scan takes over).
 */
static void
cl_on_event(struct run *r, struct client *c, uint32_t events)
{
	int	 i;

	cl_on_io(r, c, events);
	for (i = 0; i < 8 && c->tls != NULL && c->fd >= 0 &&
	    lg_tls_pending(c->tls) > 0; i++)
		cl_on_io(r, c, EPOLLIN);
}

/* Starts idle clients whose time has come; times out stuck ones. */
static void
scan(struct run *r)
{
	struct client	*c;
	long		 i;

	for (i = 0; i < r->o->connections; i++) {
		c = &r->cl[i];
		if (c->st == CL_IDLE) {
			if (c->wake <= r->now)
				cl_start(r, c);
		} else if (c->st != CL_HOLD && r->now > c->deadline)
			cl_fail(r, c, LG_ERR_TIMEOUT);
	}
}

/* ---- setup and the loop ---------------------------------------------- */

static void
base64(const uint8_t *in, size_t len, char *out)
{
	static const char	 tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	uint32_t		 v;
	size_t			 i;

	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = tab[(v >> 6) & 63];
		*out++ = tab[v & 63];
	}
	if (i < len) {
		v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		*out++ = tab[v >> 18];
		*out++ = tab[(v >> 12) & 63];
		*out++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		*out++ = '=';
	}
	*out = '\0';
}

static void
build(struct run *r)
{
	const struct lg_opts	*o = r->o;
	enum lg_scenario	 s = o->scenario;
	uint8_t			 cred[512], *p;
	char			 auth[800] = "";
	size_t			 n;

	r->socks = o->have_proxy && o->ptype == LG_PROXY_SOCKS5 &&
	    (s != LG_IDLE || o->ptype_set);
	r->connect = o->have_proxy && o->ptype == LG_PROXY_HTTP &&
	    (s == LG_TUNNEL || (s == LG_IDLE && o->ptype_set));
	r->greeting[0] = 5;
	r->greeting[1] = 1;
	r->greeting[2] = o->auth ? 2 : 0;
	p = r->authreq;
	*p++ = 1;
	*p++ = (uint8_t)o->ulen;
	memcpy(p, o->user, o->ulen);
	p += o->ulen;
	*p++ = (uint8_t)o->plen;
	memcpy(p, o->pass, o->plen);
	p += o->plen;
	r->authreq_len = (size_t)(p - r->authreq);
	r->s5req[0] = 5;
	r->s5req[1] = 1;	/* CONNECT */
	r->s5req[2] = 0;
	if (o->target.sa.sa_family == AF_INET6) {
		r->s5req[3] = 4;
		memcpy(&r->s5req[4], &o->target.v6.sin6_addr, 16);
		memcpy(&r->s5req[20], &o->target.v6.sin6_port, 2);
		r->s5req_len = 22;
	} else {
		r->s5req[3] = 1;
		memcpy(&r->s5req[4], &o->target.v4.sin_addr, 4);
		memcpy(&r->s5req[8], &o->target.v4.sin_port, 2);
		r->s5req_len = 10;
	}
	p = r->pipelined;
	memcpy(p, r->greeting, sizeof(r->greeting));
	p += sizeof(r->greeting);
	if (o->auth) {
		memcpy(p, r->authreq, r->authreq_len);
		p += r->authreq_len;
	}
	memcpy(p, r->s5req, r->s5req_len);
	p += r->s5req_len;
	r->pipelined_len = (size_t)(p - r->pipelined);
	if (o->auth && o->have_proxy && o->ptype == LG_PROXY_HTTP) {
		n = (size_t)snprintf((char *)cred, sizeof(cred), "%s:%s",
		    o->user, o->pass);
		memcpy(auth, "Proxy-Authorization: Basic ", 27);
		base64(cred, n, auth + 27);
		strcat(auth, "\r\n");
	}
	if (r->connect)
		n = (size_t)snprintf(r->req, sizeof(r->req), "CONNECT %s "
		    "HTTP/1.1\r\nHost: %s\r\n%s\r\n", o->target_str,
		    o->target_str, auth);
	else
		n = (size_t)snprintf(r->req, sizeof(r->req), "GET %s%s%s "
		    "HTTP/1.1\r\nHost: %s\r\n%s%s\r\n",
		    o->have_proxy && !r->socks ? "http://" : "",
		    o->have_proxy && !r->socks ? o->target_str : "",
		    o->path, o->target_str, r->socks ? "" : auth,
		    s == LG_HTTP_CLOSE ? "Connection: close\r\n" : "");
	r->req_len = n < sizeof(r->req) ? n : sizeof(r->req) - 1;
}

static int
run_init(struct run *r)
{
	const struct lg_opts	*o = r->o;
	long			 i;
	bool			 http = o->scenario == LG_HTTP ||
				    o->scenario == LG_HTTP_CLOSE;

	build(r);
	r->scratch = malloc(SCRATCH);
	r->payload = malloc((size_t)o->payload);
	r->cl = calloc((size_t)o->connections, sizeof(*r->cl));
	if (r->scratch == NULL || r->payload == NULL || r->cl == NULL ||
	    (r->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("loadgen: setup");
		return -1;
	}
	memset(r->payload, 'x', (size_t)o->payload);
	if (o->tls && lg_tls_init(o) < 0)
		return -1;
	for (i = 0; i < o->connections; i++) {
		r->cl[i].fd = -1;
		if (o->tls && (r->cl[i].tls = lg_tls_new()) == NULL) {
			perror("loadgen: malloc");
			return -1;
		}
		if (http && (r->cl[i].buf = malloc(HTTP_BUF)) == NULL) {
			perror("loadgen: malloc");
			return -1;
		}
	}
	return 0;
}

static void
run_fini(struct run *r)
{
	struct linger	 lg = { .l_onoff = 1, .l_linger = 0 };
	long		 i;

	for (i = 0; i < r->o->connections; i++) {
		/* The run is over: a RST leaves no TIME_WAIT to hold the
		 * ephemeral ports the next run needs. */
		if (r->cl[i].fd >= 0)
			setsockopt(r->cl[i].fd, SOL_SOCKET, SO_LINGER, &lg,
			    sizeof(lg));
		cl_close(r, &r->cl[i]);
		free(r->cl[i].buf);
		lg_tls_free(r->cl[i].tls);
	}
	free(r->cl);
	if (r->o->tls)
		lg_tls_fini();
	free(r->scratch);
	free(r->payload);
	if (r->ep >= 0)
		close(r->ep);
}

int
lg_tcp_main(const struct lg_opts *o, struct lg_result *res)
{
	struct epoll_event	 evs[LG_MAX_EVENTS];
	struct run		 r;
	uint64_t		 next_scan, next_tick, setup_limit;
	double			 cpu0 = 0;
	bool			 progress, measuring = false;
	long			 i;
	int			 n, k, rc = 0;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.res = res;
	r.ep = -1;
	if (run_init(&r) < 0) {
		run_fini(&r);
		return -1;
	}
	progress = isatty(2) && o->warmup + o->duration > 3;
	r.start = r.now = lg_now();
	r.counting = true;
	/* Tunnels and idle connections start the window once all are up
	 * (or after --timeout, with those that are). */
	setup_limit = r.start + (uint64_t)(o->timeout * NS_PER_S);
	if (o->scenario != LG_TUNNEL && o->scenario != LG_IDLE) {
		r.window_set = true;
		r.from = r.start + (uint64_t)(o->warmup * NS_PER_S);
		r.to = r.from + (uint64_t)(o->duration * NS_PER_S);
	}
	for (i = 0; i < o->connections; i++)
		cl_start(&r, &r.cl[i]);
	next_scan = r.now + LG_SCAN_NS;
	next_tick = r.now + NS_PER_S;
	while (!r.window_set || r.now < r.to) {
		n = epoll_wait(r.ep, evs, LG_MAX_EVENTS,
		    1 + (int)(LG_SCAN_NS / NS_PER_MS));
		if (n < 0 && errno != EINTR) {
			perror("loadgen: epoll_wait");
			rc = -1;
			break;
		}
		r.now = lg_now();
		if (!measuring && r.window_set && r.now >= r.from) {
			measuring = true;
			cpu0 = lg_cpu();
			r.from = r.now;
			r.to = r.from + (uint64_t)(o->duration * NS_PER_S);
		}
		for (k = 0; k < n; k++)
			cl_on_event(&r, evs[k].data.ptr, evs[k].events);
		if (r.now >= next_scan) {
			scan(&r);
			next_scan = r.now + LG_SCAN_NS;
			if (!r.window_set && r.now >= setup_limit)
				all_up(&r);
		}
		if (progress && r.now >= next_tick) {
			lg_progress(o, res, r.now - r.start);
			next_tick += NS_PER_S;
		}
		if (lg_stop) {
			res->stopped = true;
			break;
		}
	}
	if (progress)
		fputc('\n', stderr);
	if (measuring) {
		res->cpu_s = lg_cpu() - cpu0;
		res->wall_s = (double)(r.now - r.from) / NS_PER_S;
	}
	/* Tunnels and idle connections report how many were up; --rr
	 * counted its round trips. */
	if (o->scenario == LG_IDLE || (o->scenario == LG_TUNNEL && !o->rr))
		res->requests = (uint64_t)r.nup;
	run_fini(&r);
	return rc;
}
