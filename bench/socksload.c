/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socksload: a SOCKS5 load generator, and the two targets it needs, in one
 * thread with epoll and non-blocking sockets.
 *
 *   socksload handshakes --proxy H:P --target H:P [--connections N]
 *	N clients, each in a loop: connect to the proxy, greeting (no-auth,
 *	or RFC 1929 with --auth user:pass), method reply, CONNECT to an IPv4
 *	target, reply; then close and start again. Reports completed setups
 *	per second. Socket-level failures (EADDRNOTAVAIL, ECONNREFUSED,
 *	resets, early EOF, timeouts) are counted apart from proxy refusals
 *	(method 0xFF, RFC 1929 status != 0, REP != 0). Client sockets close
 *	with SO_LINGER 0, a RST: the client side leaves nothing in TIME_WAIT,
 *	so a run measures the proxy and not the ephemeral port range.
 *
 *   socksload udp --proxy H:P --target H:P [--window W] [--payload B]
 *	One UDP ASSOCIATE; W datagrams of B bytes stay in flight to a UDP
 *	echo target through the relay (a datagram not back within --timeout
 *	is counted lost and replaced). Reports round trips per second and
 *	the share of datagrams delivered.
 *
 *   socksload --serve-tcp [H:]P --serve-udp [H:]P
 *	The targets, until SIGINT or SIGTERM: TCP connections are accepted
 *	and closed at once (the proxy sees the target go away, the client
 *	has its reply by then); UDP datagrams are echoed to their sender.
 *
 * Every mode counts only what happens between --warmup and --warmup +
 * --duration seconds; --json prints one line of JSON per run.
 *
 * Deliberately not here: names resolved by the proxy (ATYP 3), SOCKS4,
 * IPv6 targets, data through the tunnel (bench/forward.sh and
 * bench/http.sh measure bytes).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S	1000000000ull
#define NS_PER_MS	1000000ull
#define SCAN_NS		(10 * NS_PER_MS)	/* timeouts and retries */
#define RETRY_NS	(10 * NS_PER_MS)	/* after a socket failure */
#define LAT_BUCKETS	100000			/* 1 us each: up to 100 ms */
#define MAX_EVENTS	256
#define UDP_BATCH	64
#define UDP_HDR		10	/* RSV RSV FRAG ATYP=1 IPv4 port */
#define UDP_SEQ_LEN	12	/* slot (4) + sequence number (8) */
#define UDP_DGRAM_MAX	65507

enum mode {
	MODE_NONE = 0,
	MODE_HANDSHAKES,
	MODE_UDP,
	MODE_SERVE,
};

struct opts {
	enum mode		 mode;
	struct sockaddr_in	 proxy, target;
	bool			 have_proxy, have_target;
	char			 user[256], pass[256];
	size_t			 ulen, plen;
	bool			 auth;
	long			 connections, window, payload;
	double			 duration, warmup, timeout;
	bool			 json;
	struct sockaddr_in	 serve_tcp, serve_udp;
	bool			 have_serve_tcp, have_serve_udp;
};

/* The measured window: events count when from <= now < to. */
struct window {
	uint64_t	 from, to;
};

/* Latency histogram, one per run (the process makes one run). */
static uint32_t	 lat_hist[LAT_BUCKETS];
static uint64_t	 lat_count, lat_sum_us, lat_over;

static volatile sig_atomic_t	 serve_stop;

static uint64_t
clock_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static bool
window_has(const struct window *w, uint64_t now)
{
	return now >= w->from && now < w->to;
}

static void
lat_add(uint64_t ns)
{
	uint64_t	 us = ns / 1000;

	lat_count++;
	lat_sum_us += us;
	if (us < LAT_BUCKETS)
		lat_hist[us]++;
	else
		lat_over++;
}

/* The <q> quantile in microseconds; LAT_BUCKETS when it lies beyond. */
static uint64_t
lat_quantile(double q)
{
	uint64_t	 want, seen = 0;
	size_t		 i;

	if (lat_count == 0)
		return 0;
	want = (uint64_t)(q * (double)lat_count);
	if (want == 0)
		want = 1;
	for (i = 0; i < LAT_BUCKETS; i++) {
		seen += lat_hist[i];
		if (seen >= want)
			return i;
	}
	return LAT_BUCKETS;
}

static uint64_t
lat_mean(void)
{
	return lat_count == 0 ? 0 : lat_sum_us / lat_count;
}

static const char *
addr_fmt(const struct sockaddr_in *sin, char *buf, size_t len)
{
	char	 ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(sin->sin_port));
	return buf;
}

/*
 * "host:port" (or "port" when <host_optional>, meaning 127.0.0.1) into an
 * IPv4 address. The host may be a name; it is resolved here, once.
 * Returns 0, or -1 with a message on stderr.
 */
static int
addr_parse(const char *what, const char *s, bool host_optional,
    struct sockaddr_in *out)
{
	struct addrinfo	 hints, *res;
	const char	*colon = strrchr(s, ':');
	char		 host[256];
	char		*end;
	unsigned long	 port;
	size_t		 hlen;
	int		 rc;

	if (colon == NULL && !host_optional) {
		fprintf(stderr, "socksload: %s: expected host:port, got "
		    "\"%s\"\n", what, s);
		return -1;
	}
	if (colon == NULL) {
		strcpy(host, "127.0.0.1");
		colon = s - 1;
	} else {
		hlen = (size_t)(colon - s);
		if (hlen == 0 || hlen >= sizeof(host)) {
			fprintf(stderr, "socksload: %s: bad host in \"%s\"\n",
			    what, s);
			return -1;
		}
		memcpy(host, s, hlen);
		host[hlen] = '\0';
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == colon + 1 || port == 0 ||
	    port > 65535) {
		fprintf(stderr, "socksload: %s: bad port in \"%s\"\n", what, s);
		return -1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, NULL, &hints, &res)) != 0) {
		fprintf(stderr, "socksload: %s: %s: %s\n", what, host,
		    gai_strerror(rc));
		return -1;
	}
	memcpy(out, res->ai_addr, sizeof(*out));
	out->sin_port = htons((uint16_t)port);
	freeaddrinfo(res);
	return 0;
}

/* The connections a run opens can exceed the default soft limit. */
static void
raise_nofile(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ---- handshakes ---------------------------------------------------- */

enum hs_stage {
	HS_IDLE = 0,	/* no socket; reconnect at <wake> */
	HS_CONNECTING,	/* connect() in progress */
	HS_METHOD,	/* greeting sent, reading the method reply */
	HS_AUTH,	/* RFC 1929 request sent, reading its status */
	HS_REPLY,	/* CONNECT sent, reading the reply */
};

struct hs_client {
	int		 fd;
	enum hs_stage	 stage;
	uint64_t	 started;	/* connect() called */
	uint64_t	 wake;		/* HS_IDLE: when to reconnect */
	uint8_t		 in[300];	/* longest reply: ATYP 3, 255 bytes */
	size_t		 in_len;
};

struct hs_stats {
	uint64_t	 ok;
	/* Proxy refusals: it answered, and said no. */
	uint64_t	 ref_method, ref_auth, ref_reply;
	uint64_t	 rep[256];
	/* Socket-level failures. */
	uint64_t	 addrnotavail, connrefused, reset, eof, timeout, other;
	int		 other_errno;
	/* Answers that are not SOCKS5. */
	uint64_t	 proto;
};

struct hs_run {
	const struct opts	*o;
	int			 ep;
	struct hs_client	*clients;
	struct window		 win;
	uint64_t		 now;
	struct hs_stats		 st;
	uint8_t			 greeting[3];
	uint8_t			 authreq[3 + 255 + 255];
	size_t			 authreq_len;
	uint8_t			 request[10];
};

static void
hs_close(struct hs_client *c)
{
	if (c->fd >= 0) {
		/* close() also leaves epoll: the fd is not shared. */
		close(c->fd);
		c->fd = -1;
	}
	c->in_len = 0;
}

/* A socket-level failure, <err> an errno value, 0 for an early EOF. */
static void
hs_fail(struct hs_run *r, struct hs_client *c, int err)
{
	struct hs_stats	*st = &r->st;

	if (window_has(&r->win, r->now)) {
		switch (err) {
		case 0:
			st->eof++;
			break;
		case EADDRNOTAVAIL:
			st->addrnotavail++;
			break;
		case ECONNREFUSED:
			st->connrefused++;
			break;
		case ECONNRESET:
		case EPIPE:
			st->reset++;
			break;
		case ETIMEDOUT:
			st->timeout++;
			break;
		default:
			st->other++;
			st->other_errno = err;
			break;
		}
	}
	hs_close(c);
	/* Not at once: a port range that is used up would only spin. */
	c->stage = HS_IDLE;
	c->wake = r->now + RETRY_NS;
}

static void	hs_connect(struct hs_run *, struct hs_client *);

/* The handshake ended with an answer from the proxy; go again now. */
static void
hs_finish(struct hs_run *r, struct hs_client *c)
{
	hs_close(c);
	hs_connect(r, c);
}

static void
hs_proto(struct hs_run *r, struct hs_client *c)
{
	if (window_has(&r->win, r->now))
		r->st.proto++;
	hs_finish(r, c);
}

/*
 * Sends one whole message. The messages are a few hundred bytes at most
 * and the socket's send buffer is empty (the protocol is lock-step), so a
 * short write means the socket is broken. Returns 0, or -1 after hs_fail.
 */
static int
hs_send(struct hs_run *r, struct hs_client *c, const void *msg, size_t len)
{
	ssize_t	 n;

	n = send(c->fd, msg, len, MSG_NOSIGNAL);
	if (n == (ssize_t)len)
		return 0;
	hs_fail(r, c, n < 0 ? errno : EIO);
	return -1;
}

static int
hs_watch(struct hs_run *r, struct hs_client *c, int op, uint32_t events)
{
	struct epoll_event	 ev;

	ev.events = events;
	ev.data.ptr = c;
	if (epoll_ctl(r->ep, op, c->fd, &ev) < 0) {
		hs_fail(r, c, errno);
		return -1;
	}
	return 0;
}

static void
hs_connect(struct hs_run *r, struct hs_client *c)
{
	struct linger	 lg = { .l_onoff = 1, .l_linger = 0 };
	int		 one = 1;

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		hs_fail(r, c, errno);
		return;
	}
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->started = r->now;
	c->in_len = 0;
	if (connect(c->fd, (const struct sockaddr *)&r->o->proxy,
	    sizeof(r->o->proxy)) == 0) {
		if (hs_send(r, c, r->greeting, sizeof(r->greeting)) < 0)
			return;
		c->stage = HS_METHOD;
		hs_watch(r, c, EPOLL_CTL_ADD, EPOLLIN);
		return;
	}
	if (errno != EINPROGRESS) {
		hs_fail(r, c, errno);
		return;
	}
	c->stage = HS_CONNECTING;
	hs_watch(r, c, EPOLL_CTL_ADD, EPOLLOUT);
}

/* Bytes a SOCKS5 reply takes, 0 while the prefix cannot tell. */
static size_t
hs_reply_len(const uint8_t *p, size_t len)
{
	if (len < 5)
		return 0;
	switch (p[3]) {
	case 1:
		return 10;
	case 4:
		return 22;
	case 3:
		return 7 + (size_t)p[4];
	default:
		return SIZE_MAX;
	}
}

/* Acts on what has been read so far in the current stage. */
static void
hs_parse(struct hs_run *r, struct hs_client *c)
{
	const struct opts	*o = r->o;
	size_t			 need;
	bool			 counting = window_has(&r->win, r->now);

	if (c->in_len < 2)
		return;
	switch (c->stage) {
	case HS_METHOD:
		if (c->in[0] != 5 || c->in_len > 2) {
			hs_proto(r, c);
			return;
		}
		if (c->in[1] == 0xff) {
			if (counting)
				r->st.ref_method++;
			hs_finish(r, c);
			return;
		}
		if (c->in[1] != (o->auth ? 2 : 0)) {
			hs_proto(r, c);
			return;
		}
		c->in_len = 0;
		if (o->auth) {
			if (hs_send(r, c, r->authreq, r->authreq_len) == 0)
				c->stage = HS_AUTH;
			return;
		}
		if (hs_send(r, c, r->request, sizeof(r->request)) == 0)
			c->stage = HS_REPLY;
		return;
	case HS_AUTH:
		if (c->in[0] != 1 || c->in_len > 2) {
			hs_proto(r, c);
			return;
		}
		if (c->in[1] != 0) {
			if (counting)
				r->st.ref_auth++;
			hs_finish(r, c);
			return;
		}
		c->in_len = 0;
		if (hs_send(r, c, r->request, sizeof(r->request)) == 0)
			c->stage = HS_REPLY;
		return;
	case HS_REPLY:
		if (c->in[0] != 5) {
			hs_proto(r, c);
			return;
		}
		if (c->in[1] != 0) {
			if (counting) {
				r->st.ref_reply++;
				r->st.rep[c->in[1]]++;
			}
			hs_finish(r, c);
			return;
		}
		need = hs_reply_len(c->in, c->in_len);
		if (need == SIZE_MAX) {
			hs_proto(r, c);
			return;
		}
		if (need == 0 || c->in_len < need)
			return;
		if (counting) {
			r->st.ok++;
			lat_add(r->now - c->started);
		}
		hs_finish(r, c);
		return;
	default:
		return;
	}
}

static void
hs_on_event(struct hs_run *r, struct hs_client *c)
{
	socklen_t	 len = sizeof(int);
	ssize_t		 n;
	int		 err = 0;

	if (c->stage == HS_CONNECTING) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err != 0) {
			hs_fail(r, c, err);
			return;
		}
		if (hs_send(r, c, r->greeting, sizeof(r->greeting)) < 0)
			return;
		c->stage = HS_METHOD;
		hs_watch(r, c, EPOLL_CTL_MOD, EPOLLIN);
		return;
	}
	if (c->fd < 0)
		return;
	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			hs_fail(r, c, errno);
		return;
	}
	if (n == 0) {
		hs_fail(r, c, 0);
		return;
	}
	c->in_len += (size_t)n;
	hs_parse(r, c);
}

/* Reconnects idle clients whose time has come; times out stuck ones. */
static void
hs_scan(struct hs_run *r)
{
	uint64_t		 limit = (uint64_t)(r->o->timeout * NS_PER_S);
	struct hs_client	*c;
	long			 i;

	for (i = 0; i < r->o->connections; i++) {
		c = &r->clients[i];
		if (c->stage == HS_IDLE) {
			if (c->wake <= r->now)
				hs_connect(r, c);
		} else if (r->now - c->started > limit)
			hs_fail(r, c, ETIMEDOUT);
	}
}

static void
hs_build(struct hs_run *r)
{
	const struct opts	*o = r->o;
	uint8_t			*p;

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
	r->request[0] = 5;
	r->request[1] = 1;	/* CONNECT */
	r->request[2] = 0;
	r->request[3] = 1;	/* IPv4 */
	memcpy(&r->request[4], &o->target.sin_addr, 4);
	memcpy(&r->request[8], &o->target.sin_port, 2);
}

static void
hs_report(const struct hs_run *r)
{
	const struct opts	*o = r->o;
	const struct hs_stats	*st = &r->st;
	uint64_t		 refused, failed;
	double			 rate;
	char			 pb[64], tb[64];
	const char		*sep = "";
	int			 i;

	refused = st->ref_method + st->ref_auth + st->ref_reply;
	failed = st->addrnotavail + st->connrefused + st->reset + st->eof +
	    st->timeout + st->other;
	rate = (double)st->ok / o->duration;
	addr_fmt(&o->proxy, pb, sizeof(pb));
	addr_fmt(&o->target, tb, sizeof(tb));
	if (o->json) {
		printf("{\"mode\":\"handshakes\",\"proxy\":\"%s\","
		    "\"target\":\"%s\",\"auth\":%s,\"connections\":%ld,"
		    "\"warmup\":%g,\"duration\":%g,\"linger0\":true,"
		    "\"setups\":%llu,\"setups_per_s\":%.1f,"
		    "\"lat_mean_us\":%llu,\"lat_p50_us\":%llu,"
		    "\"lat_p99_us\":%llu,\"refused\":%llu,"
		    "\"refused_method\":%llu,\"refused_auth\":%llu,"
		    "\"refused_reply\":%llu,\"reply_codes\":{",
		    pb, tb, o->auth ? "true" : "false", o->connections,
		    o->warmup, o->duration, (unsigned long long)st->ok, rate,
		    (unsigned long long)lat_mean(),
		    (unsigned long long)lat_quantile(0.50),
		    (unsigned long long)lat_quantile(0.99),
		    (unsigned long long)refused,
		    (unsigned long long)st->ref_method,
		    (unsigned long long)st->ref_auth,
		    (unsigned long long)st->ref_reply);
		for (i = 1; i < 256; i++)
			if (st->rep[i] != 0) {
				printf("%s\"%d\":%llu", sep, i,
				    (unsigned long long)st->rep[i]);
				sep = ",";
			}
		printf("},\"socket_failures\":%llu,\"addrnotavail\":%llu,"
		    "\"connrefused\":%llu,\"reset\":%llu,\"eof\":%llu,"
		    "\"timeout\":%llu,\"other\":%llu,\"other_errno\":%d,"
		    "\"protocol_errors\":%llu}\n",
		    (unsigned long long)failed,
		    (unsigned long long)st->addrnotavail,
		    (unsigned long long)st->connrefused,
		    (unsigned long long)st->reset,
		    (unsigned long long)st->eof,
		    (unsigned long long)st->timeout,
		    (unsigned long long)st->other, st->other_errno,
		    (unsigned long long)st->proto);
		return;
	}
	printf("socksload handshakes: proxy %s, CONNECT %s, %ld connections, "
	    "%s, warm-up %g s, measured %g s\n", pb, tb, o->connections,
	    o->auth ? "RFC 1929 username/password" : "no authentication",
	    o->warmup, o->duration);
	printf("  client sockets close with SO_LINGER 0 (RST): no TIME_WAIT "
	    "on the client side\n");
	printf("  setups: %llu, %.1f/s; latency (connect to reply) mean %llu "
	    "us, p50 %llu us, p99 %llu us\n", (unsigned long long)st->ok,
	    rate, (unsigned long long)lat_mean(),
	    (unsigned long long)lat_quantile(0.50),
	    (unsigned long long)lat_quantile(0.99));
	printf("  proxy refusals: %llu (method 0xFF %llu, auth %llu, "
	    "REP != 0 %llu", (unsigned long long)refused,
	    (unsigned long long)st->ref_method,
	    (unsigned long long)st->ref_auth,
	    (unsigned long long)st->ref_reply);
	for (i = 1; i < 256; i++)
		if (st->rep[i] != 0)
			printf(", REP %d: %llu", i,
			    (unsigned long long)st->rep[i]);
	printf(")\n");
	printf("  socket failures: %llu (EADDRNOTAVAIL %llu, ECONNREFUSED "
	    "%llu, reset %llu, EOF before reply %llu, timeout %llu, other "
	    "%llu%s%s)\n", (unsigned long long)failed,
	    (unsigned long long)st->addrnotavail,
	    (unsigned long long)st->connrefused,
	    (unsigned long long)st->reset, (unsigned long long)st->eof,
	    (unsigned long long)st->timeout, (unsigned long long)st->other,
	    st->other != 0 ? ", last: " : "",
	    st->other != 0 ? strerror(st->other_errno) : "");
	printf("  protocol errors: %llu\n", (unsigned long long)st->proto);
}

static int
hs_main(const struct opts *o)
{
	struct epoll_event	 evs[MAX_EVENTS];
	struct hs_run		 r;
	uint64_t		 start, next_scan;
	long			 i;
	int			 n, k;

	memset(&r, 0, sizeof(r));
	r.o = o;
	hs_build(&r);
	if ((r.ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("socksload: epoll_create1");
		return 1;
	}
	if ((r.clients = calloc((size_t)o->connections,
	    sizeof(*r.clients))) == NULL) {
		perror("socksload: calloc");
		return 1;
	}
	start = r.now = clock_ns();
	r.win.from = start + (uint64_t)(o->warmup * NS_PER_S);
	r.win.to = r.win.from + (uint64_t)(o->duration * NS_PER_S);
	for (i = 0; i < o->connections; i++) {
		r.clients[i].fd = -1;
		hs_connect(&r, &r.clients[i]);
	}
	next_scan = r.now + SCAN_NS;
	while (r.now < r.win.to) {
		n = epoll_wait(r.ep, evs, MAX_EVENTS, 1 + (int)(SCAN_NS /
		    NS_PER_MS));
		if (n < 0 && errno != EINTR) {
			perror("socksload: epoll_wait");
			return 1;
		}
		r.now = clock_ns();
		for (k = 0; k < n; k++)
			hs_on_event(&r, evs[k].data.ptr);
		if (r.now >= next_scan) {
			hs_scan(&r);
			next_scan = r.now + SCAN_NS;
		}
	}
	for (i = 0; i < o->connections; i++)
		hs_close(&r.clients[i]);
	hs_report(&r);
	free(r.clients);
	close(r.ep);
	return 0;
}

/* ---- udp ----------------------------------------------------------- */

struct udp_slot {
	uint64_t	 seq;
	uint64_t	 sent_at;
	bool		 out;		/* in flight */
};

struct udp_run {
	const struct opts	*o;
	int			 ep, tfd, ufd;
	struct sockaddr_in	 relay;
	struct window		 win;
	uint64_t		 now;
	bool			 sending;
	size_t			 dlen;		/* header + payload */
	uint8_t			*sbufs;		/* one datagram per slot */
	uint8_t			*rbufs;		/* UDP_BATCH receive slots */
	struct udp_slot		*slots;
	uint64_t		 next_seq;
	uint64_t		 seq_from;	/* first measured sequence */
	bool			 seq_from_set;
	struct mmsghdr		 out[UDP_BATCH];
	struct iovec		 out_iov[UDP_BATCH];
	uint32_t		 out_slot[UDP_BATCH];
	unsigned		 nout;
	/* Counted for sequence numbers >= seq_from only. */
	uint64_t		 sent, back, late, lost, send_err, bad;
};

/* Reads exactly <len> bytes from a blocking socket: 0, or -errno (EOF is
 * -ECONNRESET). */
static int
read_full(int fd, void *buf, size_t len)
{
	size_t	 got = 0;
	ssize_t	 n;

	while (got < len) {
		n = recv(fd, (char *)buf + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

static int
send_full(int fd, const void *buf, size_t len)
{
	ssize_t	 n = send(fd, buf, len, MSG_NOSIGNAL);

	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

/*
 * The control connection and the association. Returns 0; -1 on a socket
 * or protocol error, with the reason in <why>; a positive reply code
 * when the proxy refused.
 */
static int
udp_associate(struct udp_run *r, char *why, size_t whylen)
{
	const struct opts	*o = r->o;
	struct timeval		 tv = { .tv_sec = 5 };
	struct sockaddr_in	 local;
	socklen_t		 len = sizeof(local);
	uint8_t			 msg[3 + 255 + 255], rep[262];
	size_t			 n;
	int			 err, one = 1;

	r->tfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->tfd < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(r->tfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(r->tfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(r->tfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(r->tfd, (const struct sockaddr *)&o->proxy,
	    sizeof(o->proxy)) < 0) {
		snprintf(why, whylen, "connect to proxy: %s", strerror(errno));
		return -1;
	}
	msg[0] = 5;
	msg[1] = 1;
	msg[2] = o->auth ? 2 : 0;
	if ((err = send_full(r->tfd, msg, 3)) < 0 ||
	    (err = read_full(r->tfd, rep, 2)) < 0) {
		snprintf(why, whylen, "greeting: %s", strerror(-err));
		return -1;
	}
	if (rep[0] != 5 || rep[1] != (o->auth ? 2 : 0)) {
		snprintf(why, whylen, "method reply %02x %02x", rep[0], rep[1]);
		return -1;
	}
	if (o->auth) {
		n = 0;
		msg[n++] = 1;
		msg[n++] = (uint8_t)o->ulen;
		memcpy(msg + n, o->user, o->ulen);
		n += o->ulen;
		msg[n++] = (uint8_t)o->plen;
		memcpy(msg + n, o->pass, o->plen);
		n += o->plen;
		if ((err = send_full(r->tfd, msg, n)) < 0 ||
		    (err = read_full(r->tfd, rep, 2)) < 0) {
			snprintf(why, whylen, "RFC 1929: %s", strerror(-err));
			return -1;
		}
		if (rep[1] != 0) {
			snprintf(why, whylen, "RFC 1929: status %u", rep[1]);
			return -1;
		}
	}
	/* The UDP socket is bound first so the request can name it: the
	 * relay then accepts datagrams from this port only. */
	if (getsockname(r->tfd, (struct sockaddr *)&local, &len) < 0) {
		snprintf(why, whylen, "getsockname: %s", strerror(errno));
		return -1;
	}
	local.sin_port = 0;
	r->ufd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	len = sizeof(local);
	if (r->ufd < 0 ||
	    bind(r->ufd, (struct sockaddr *)&local, sizeof(local)) < 0 ||
	    getsockname(r->ufd, (struct sockaddr *)&local, &len) < 0) {
		snprintf(why, whylen, "UDP socket: %s", strerror(errno));
		return -1;
	}
	msg[0] = 5;
	msg[1] = 3;	/* UDP ASSOCIATE */
	msg[2] = 0;
	msg[3] = 1;
	memcpy(msg + 4, &local.sin_addr, 4);
	memcpy(msg + 8, &local.sin_port, 2);
	if ((err = send_full(r->tfd, msg, 10)) < 0 ||
	    (err = read_full(r->tfd, rep, 5)) < 0) {
		snprintf(why, whylen, "UDP ASSOCIATE: %s", strerror(-err));
		return -1;
	}
	if (rep[0] != 5) {
		snprintf(why, whylen, "UDP ASSOCIATE: reply version %u",
		    rep[0]);
		return -1;
	}
	if (rep[1] != 0)
		return rep[1];
	n = hs_reply_len(rep, 5);
	if (n == SIZE_MAX || (err = read_full(r->tfd, rep + 5, n - 5)) < 0) {
		snprintf(why, whylen, "UDP ASSOCIATE: bad reply");
		return -1;
	}
	if (rep[3] != 1) {
		snprintf(why, whylen, "UDP ASSOCIATE: relay is not IPv4 "
		    "(ATYP %u)", rep[3]);
		return -1;
	}
	memset(&r->relay, 0, sizeof(r->relay));
	r->relay.sin_family = AF_INET;
	memcpy(&r->relay.sin_addr, rep + 4, 4);
	memcpy(&r->relay.sin_port, rep + 8, 2);
	if (r->relay.sin_addr.s_addr == htonl(INADDR_ANY))
		r->relay.sin_addr = o->proxy.sin_addr;
	if (connect(r->ufd, (struct sockaddr *)&r->relay,
	    sizeof(r->relay)) < 0) {
		snprintf(why, whylen, "connect to relay: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Gives slot <i> a new sequence number and queues it. */
static void
udp_queue(struct udp_run *r, uint32_t i)
{
	struct udp_slot	*s = &r->slots[i];
	uint8_t		*d = r->sbufs + (size_t)i * r->dlen;
	unsigned	 k = r->nout;

	s->seq = r->next_seq++;
	s->sent_at = r->now;
	s->out = true;
	memcpy(d + UDP_HDR, &i, 4);
	memcpy(d + UDP_HDR + 4, &s->seq, 8);
	r->out_iov[k].iov_base = d;
	r->out_iov[k].iov_len = r->dlen;
	memset(&r->out[k].msg_hdr, 0, sizeof(r->out[k].msg_hdr));
	r->out[k].msg_hdr.msg_iov = &r->out_iov[k];
	r->out[k].msg_hdr.msg_iovlen = 1;
	r->out_slot[k] = i;
	r->nout = k + 1;
}

/*
 * Sends the queued datagrams. One that the socket refuses stays in
 * flight and is replaced once it times out, as a lost one would be.
 */
static void
udp_flush(struct udp_run *r)
{
	unsigned	 done = 0, k;
	int		 n;

	while (done < r->nout) {
		n = sendmmsg(r->ufd, r->out + done, r->nout - done, 0);
		if (n <= 0)
			break;
		for (k = done; k < done + (unsigned)n; k++)
			if (r->slots[r->out_slot[k]].seq >= r->seq_from &&
			    r->seq_from_set)
				r->sent++;
		done += (unsigned)n;
	}
	for (k = done; k < r->nout; k++)
		if (r->seq_from_set &&
		    r->slots[r->out_slot[k]].seq >= r->seq_from)
			r->send_err++;
	r->nout = 0;
}

static void
udp_on_readable(struct udp_run *r)
{
	struct mmsghdr	 in[UDP_BATCH];
	struct iovec	 iov[UDP_BATCH];
	const uint8_t	*p;
	struct udp_slot	*s;
	uint64_t	 seq;
	uint32_t	 slot;
	size_t		 hl, len, cap = r->dlen + 64;
	int		 i, n;

	for (i = 0; i < UDP_BATCH; i++) {
		iov[i].iov_base = r->rbufs + (size_t)i * cap;
		iov[i].iov_len = cap;
		memset(&in[i].msg_hdr, 0, sizeof(in[i].msg_hdr));
		in[i].msg_hdr.msg_iov = &iov[i];
		in[i].msg_hdr.msg_iovlen = 1;
	}
	n = recvmmsg(r->ufd, in, UDP_BATCH, MSG_DONTWAIT, NULL);
	for (i = 0; i < n; i++) {
		p = iov[i].iov_base;
		len = in[i].msg_len;
		hl = len >= 5 ? hs_reply_len(p, len) : SIZE_MAX;
		if (hl == SIZE_MAX || p[2] != 0 || len != hl + (size_t)
		    r->o->payload) {
			r->bad++;
			continue;
		}
		memcpy(&slot, p + hl, 4);
		memcpy(&seq, p + hl + 4, 8);
		if (slot >= (uint32_t)r->o->window) {
			r->bad++;
			continue;
		}
		s = &r->slots[slot];
		if (!s->out || s->seq != seq) {
			/* Already counted lost and replaced. */
			if (r->seq_from_set && seq >= r->seq_from)
				r->late++;
			continue;
		}
		s->out = false;
		if (r->seq_from_set && seq >= r->seq_from) {
			r->back++;
			lat_add(r->now - s->sent_at);
		}
		if (r->sending)
			udp_queue(r, slot);
	}
	udp_flush(r);
}

/* Datagrams out for longer than --timeout are lost: replace them. */
static void
udp_scan(struct udp_run *r)
{
	uint64_t	 limit = (uint64_t)(r->o->timeout * NS_PER_S);
	uint32_t	 i;

	for (i = 0; i < (uint32_t)r->o->window; i++) {
		if (!r->slots[i].out || r->now - r->slots[i].sent_at <= limit)
			continue;
		if (r->seq_from_set && r->slots[i].seq >= r->seq_from)
			r->lost++;
		r->slots[i].out = false;
		if (r->sending)
			udp_queue(r, i);
	}
	udp_flush(r);
}

static void
udp_report(const struct udp_run *r, int refused, const char *why)
{
	const struct opts	*o = r->o;
	char			 pb[64], tb[64], rb[64];
	double			 rate = (double)r->back / o->duration;
	double			 pct = r->sent == 0 ? 0.0 :
				    100.0 * (double)(r->back + r->late) /
				    (double)r->sent;

	addr_fmt(&o->proxy, pb, sizeof(pb));
	addr_fmt(&o->target, tb, sizeof(tb));
	addr_fmt(&r->relay, rb, sizeof(rb));
	if (o->json && (refused > 0 || why != NULL)) {
		printf("{\"mode\":\"udp\",\"proxy\":\"%s\",\"target\":\"%s\","
		    "\"error\":\"%s\",\"reply_code\":%d,\"reason\":\"%s\"}\n",
		    pb, tb, refused > 0 ? "refused" : "failed",
		    refused > 0 ? refused : -1, why != NULL ? why : "");
		return;
	}
	if (refused > 0) {
		printf("socksload udp: proxy %s refused UDP ASSOCIATE: REP %d%s\n",
		    pb, refused, refused == 7 ? " (command not supported)" :
		    "");
		return;
	}
	if (why != NULL) {
		printf("socksload udp: proxy %s: %s\n", pb, why);
		return;
	}
	if (o->json) {
		printf("{\"mode\":\"udp\",\"proxy\":\"%s\",\"target\":\"%s\","
		    "\"relay\":\"%s\",\"window\":%ld,\"payload\":%ld,"
		    "\"warmup\":%g,\"duration\":%g,\"timeout\":%g,"
		    "\"sent\":%llu,\"round_trips\":%llu,"
		    "\"round_trips_per_s\":%.1f,\"delivered_pct\":%.2f,"
		    "\"late\":%llu,\"lost\":%llu,\"send_errors\":%llu,"
		    "\"bad\":%llu,\"rtt_mean_us\":%llu,\"rtt_p50_us\":%llu,"
		    "\"rtt_p99_us\":%llu}\n", pb, tb, rb, o->window,
		    o->payload, o->warmup, o->duration, o->timeout,
		    (unsigned long long)r->sent, (unsigned long long)r->back,
		    rate, pct, (unsigned long long)r->late,
		    (unsigned long long)r->lost,
		    (unsigned long long)r->send_err,
		    (unsigned long long)r->bad,
		    (unsigned long long)lat_mean(),
		    (unsigned long long)lat_quantile(0.50),
		    (unsigned long long)lat_quantile(0.99));
		return;
	}
	printf("socksload udp: proxy %s, relay %s, echo target %s, window %ld, "
	    "%ld-byte payloads, warm-up %g s, measured %g s\n", pb, rb, tb,
	    o->window, o->payload, o->warmup, o->duration);
	printf("  round trips: %llu, %.1f/s; RTT mean %llu us, p50 %llu us, "
	    "p99 %llu us\n", (unsigned long long)r->back, rate,
	    (unsigned long long)lat_mean(),
	    (unsigned long long)lat_quantile(0.50),
	    (unsigned long long)lat_quantile(0.99));
	printf("  sent %llu, delivered %.2f%% (%llu late, after the %g s "
	    "timeout), lost %llu, send errors %llu, malformed %llu\n",
	    (unsigned long long)r->sent, pct, (unsigned long long)r->late,
	    o->timeout, (unsigned long long)r->lost,
	    (unsigned long long)r->send_err, (unsigned long long)r->bad);
}

/* Runs until the window ends, then drains for one --timeout. */
static int
udp_loop(struct udp_run *r)
{
	struct epoll_event	 evs[4], ev;
	uint64_t		 next_scan, stop;
	uint32_t		 i;
	int			 n, k;
	char			 c;

	ev.events = EPOLLIN;
	ev.data.fd = r->ufd;
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->ufd, &ev);
	ev.data.fd = r->tfd;
	epoll_ctl(r->ep, EPOLL_CTL_ADD, r->tfd, &ev);
	r->now = clock_ns();
	r->win.from = r->now + (uint64_t)(r->o->warmup * NS_PER_S);
	r->win.to = r->win.from + (uint64_t)(r->o->duration * NS_PER_S);
	stop = r->win.to + (uint64_t)(r->o->timeout * NS_PER_S);
	r->sending = true;
	for (i = 0; i < (uint32_t)r->o->window; i++) {
		udp_queue(r, i);
		if (r->nout == UDP_BATCH)
			udp_flush(r);
	}
	udp_flush(r);
	next_scan = r->now + SCAN_NS;
	while (r->now < stop) {
		n = epoll_wait(r->ep, evs, 4, 1 + (int)(SCAN_NS / NS_PER_MS));
		if (n < 0 && errno != EINTR) {
			perror("socksload: epoll_wait");
			return -1;
		}
		r->now = clock_ns();
		if (!r->seq_from_set && r->now >= r->win.from) {
			r->seq_from = r->next_seq;
			r->seq_from_set = true;
		}
		if (r->now >= r->win.to)
			r->sending = false;
		for (k = 0; k < n; k++) {
			if (evs[k].data.fd == r->ufd) {
				udp_on_readable(r);
				continue;
			}
			/* The association lives as long as this TCP
			 * connection: EOF or an error ends it. */
			if (recv(r->tfd, &c, 1, MSG_DONTWAIT) <= 0) {
				fprintf(stderr, "socksload: udp: the proxy "
				    "closed the control connection\n");
				return -1;
			}
		}
		if (r->now >= next_scan) {
			udp_scan(r);
			next_scan = r->now + SCAN_NS;
		}
		if (!r->sending) {
			for (i = 0; i < (uint32_t)r->o->window; i++)
				if (r->slots[i].out)
					break;
			if (i == (uint32_t)r->o->window)
				break;
		}
	}
	for (i = 0; i < (uint32_t)r->o->window; i++)
		if (r->slots[i].out && r->seq_from_set &&
		    r->slots[i].seq >= r->seq_from)
			r->lost++;
	return 0;
}

static int
udp_main(const struct opts *o)
{
	struct udp_run	 r;
	char		 why[256];
	int		 rc, bufsz = 1 << 20;
	uint32_t	 i;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.tfd = r.ufd = -1;
	r.dlen = UDP_HDR + (size_t)o->payload;
	r.sbufs = calloc((size_t)o->window, r.dlen);
	r.rbufs = calloc(UDP_BATCH, r.dlen + 64);
	r.slots = calloc((size_t)o->window, sizeof(*r.slots));
	if (r.sbufs == NULL || r.rbufs == NULL || r.slots == NULL ||
	    (r.ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("socksload: setup");
		return 1;
	}
	rc = udp_associate(&r, why, sizeof(why));
	if (rc != 0) {
		udp_report(&r, rc, rc < 0 ? why : NULL);
		return rc > 0 ? 2 : 1;
	}
	setsockopt(r.ufd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	setsockopt(r.ufd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	for (i = 0; i < (uint32_t)o->window; i++) {
		uint8_t	*d = r.sbufs + (size_t)i * r.dlen;

		d[3] = 1;	/* RSV RSV FRAG = 0, ATYP IPv4 */
		memcpy(d + 4, &o->target.sin_addr, 4);
		memcpy(d + 8, &o->target.sin_port, 2);
		memset(d + UDP_HDR + UDP_SEQ_LEN, 'x',
		    (size_t)o->payload - UDP_SEQ_LEN);
	}
	rc = udp_loop(&r);
	if (rc == 0)
		udp_report(&r, 0, NULL);
	close(r.ufd);
	close(r.tfd);
	close(r.ep);
	free(r.sbufs);
	free(r.rbufs);
	free(r.slots);
	return rc == 0 ? 0 : 1;
}

/* ---- targets ------------------------------------------------------- */

static void
serve_on_signal(int sig)
{
	(void)sig;
	serve_stop = 1;
}

static int
serve_socket(int type, const struct sockaddr_in *addr)
{
	int	 fd, one = 1, bufsz = 4 << 20;

	fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (type == SOCK_DGRAM) {
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	}
	if (bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 4096) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Accepts every pending connection and closes it at once. */
static void
serve_accept(int lfd)
{
	int	 fd;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0 ||
	    errno == ECONNABORTED || errno == EINTR)
		if (fd >= 0)
			close(fd);
}

/* Echoes every pending datagram to its sender, a batch at a time. */
static void
serve_echo(int ufd, uint8_t *bufs)
{
	struct mmsghdr		 m[UDP_BATCH];
	struct iovec		 iov[UDP_BATCH];
	struct sockaddr_in	 from[UDP_BATCH];
	int			 i, n;

	do {
		for (i = 0; i < UDP_BATCH; i++) {
			iov[i].iov_base = bufs + (size_t)i * UDP_DGRAM_MAX;
			iov[i].iov_len = UDP_DGRAM_MAX;
			memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
			m[i].msg_hdr.msg_name = &from[i];
			m[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(ufd, m, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (i = 0; i < n; i++)
			iov[i].iov_len = m[i].msg_len;
		/* A full send buffer drops the rest: UDP may. */
		sendmmsg(ufd, m, (unsigned)n, MSG_DONTWAIT);
	} while (n == UDP_BATCH);
}

static int
serve_main(const struct opts *o)
{
	struct epoll_event	 ev, evs[4];
	struct sigaction	 sa;
	uint8_t			*bufs = NULL;
	char			 ab[64];
	int			 ep, lfd = -1, ufd = -1, n, k;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = serve_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("socksload: epoll_create1");
		return 1;
	}
	ev.events = EPOLLIN;
	if (o->have_serve_tcp) {
		if ((lfd = serve_socket(SOCK_STREAM, &o->serve_tcp)) < 0) {
			fprintf(stderr, "socksload: --serve-tcp %s: %s\n",
			    addr_fmt(&o->serve_tcp, ab, sizeof(ab)),
			    strerror(errno));
			return 1;
		}
		ev.data.fd = lfd;
		epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	}
	if (o->have_serve_udp) {
		if ((ufd = serve_socket(SOCK_DGRAM, &o->serve_udp)) < 0 ||
		    (bufs = malloc((size_t)UDP_BATCH * UDP_DGRAM_MAX)) ==
		    NULL) {
			fprintf(stderr, "socksload: --serve-udp %s: %s\n",
			    addr_fmt(&o->serve_udp, ab, sizeof(ab)),
			    strerror(errno));
			return 1;
		}
		ev.data.fd = ufd;
		epoll_ctl(ep, EPOLL_CTL_ADD, ufd, &ev);
	}
	while (!serve_stop) {
		n = epoll_wait(ep, evs, 4, -1);
		for (k = 0; k < n; k++) {
			if (evs[k].data.fd == lfd)
				serve_accept(lfd);
			else
				serve_echo(ufd, bufs);
		}
	}
	free(bufs);
	return 0;
}

/* ---- command line -------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
"usage: socksload handshakes|udp --proxy HOST:PORT --target HOST:PORT\n"
"                 [--connections N] [--window W] [--payload BYTES]\n"
"                 [--duration S] [--warmup S] [--timeout S]\n"
"                 [--auth USER:PASS] [--json]\n"
"       socksload [--serve-tcp [HOST:]PORT] [--serve-udp [HOST:]PORT]\n"
"\n"
"handshakes  N clients (--connections, 50) each loop: connect, greeting,\n"
"            CONNECT to the IPv4 target, reply, close (SO_LINGER 0).\n"
"            --timeout per handshake: 5 s.\n"
"udp         one UDP ASSOCIATE; W datagrams (--window, 32) of --payload\n"
"            bytes (512) in flight to a UDP echo target. --timeout before\n"
"            a datagram counts as lost: 0.2 s.\n"
"--serve-*   targets until SIGINT/SIGTERM: TCP accept-and-close, UDP echo\n"
"            (HOST defaults to 127.0.0.1).\n"
"Defaults: --duration 5, --warmup 1.\n");
}

static int
opt_long(const char *name, const char *s, long min, long max, long *out)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < min || v > max) {
		fprintf(stderr, "socksload: --%s: expected %ld..%ld, got "
		    "\"%s\"\n", name, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int
opt_seconds(const char *name, const char *s, double min, double *out)
{
	char	*end;
	double	 v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || end == s || !(v >= min) ||
	    v > 86400) {
		fprintf(stderr, "socksload: --%s: expected seconds >= %g, got "
		    "\"%s\"\n", name, min, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int
opt_auth(struct opts *o, const char *s)
{
	const char	*colon = strchr(s, ':');
	size_t		 ulen, plen;

	if (colon == NULL) {
		fprintf(stderr, "socksload: --auth: expected user:pass\n");
		return -1;
	}
	ulen = (size_t)(colon - s);
	plen = strlen(colon + 1);
	if (ulen < 1 || ulen > 255 || plen < 1 || plen > 255) {
		fprintf(stderr, "socksload: --auth: user and password take "
		    "1 to 255 bytes each (RFC 1929)\n");
		return -1;
	}
	memcpy(o->user, s, ulen);
	memcpy(o->pass, colon + 1, plen);
	o->ulen = ulen;
	o->plen = plen;
	o->auth = true;
	return 0;
}

static int
opts_parse(struct opts *o, int argc, char **argv)
{
	static const struct option	 longopts[] = {
		{ "proxy",	required_argument, NULL, 'p' },
		{ "target",	required_argument, NULL, 't' },
		{ "connections", required_argument, NULL, 'c' },
		{ "window",	required_argument, NULL, 'w' },
		{ "payload",	required_argument, NULL, 'b' },
		{ "duration",	required_argument, NULL, 'd' },
		{ "warmup",	required_argument, NULL, 'W' },
		{ "timeout",	required_argument, NULL, 'T' },
		{ "auth",	required_argument, NULL, 'a' },
		{ "json",	no_argument,	   NULL, 'j' },
		{ "serve-tcp",	required_argument, NULL, 'S' },
		{ "serve-udp",	required_argument, NULL, 'U' },
		{ "help",	no_argument,	   NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int	 ch, rc = 0;

	o->connections = 50;
	o->window = 32;
	o->payload = 512;
	o->duration = 5;
	o->warmup = 1;
	o->timeout = -1;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			rc = addr_parse("--proxy", optarg, false, &o->proxy);
			o->have_proxy = true;
			break;
		case 't':
			rc = addr_parse("--target", optarg, false, &o->target);
			o->have_target = true;
			break;
		case 'c':
			rc = opt_long("connections", optarg, 1, 60000,
			    &o->connections);
			break;
		case 'w':
			rc = opt_long("window", optarg, 1, 65536, &o->window);
			break;
		case 'b':
			/* Room for the slot and sequence number; the
			 * SOCKS header must still fit in one datagram. */
			rc = opt_long("payload", optarg, UDP_SEQ_LEN,
			    UDP_DGRAM_MAX - 22, &o->payload);
			break;
		case 'd':
			rc = opt_seconds("duration", optarg, 0.1, &o->duration);
			break;
		case 'W':
			rc = opt_seconds("warmup", optarg, 0, &o->warmup);
			break;
		case 'T':
			rc = opt_seconds("timeout", optarg, 0.001, &o->timeout);
			break;
		case 'a':
			rc = opt_auth(o, optarg);
			break;
		case 'j':
			o->json = true;
			break;
		case 'S':
			rc = addr_parse("--serve-tcp", optarg, true,
			    &o->serve_tcp);
			o->have_serve_tcp = true;
			break;
		case 'U':
			rc = addr_parse("--serve-udp", optarg, true,
			    &o->serve_udp);
			o->have_serve_udp = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
	if (optind < argc) {
		if (strcmp(argv[optind], "handshakes") == 0)
			o->mode = MODE_HANDSHAKES;
		else if (strcmp(argv[optind], "udp") == 0)
			o->mode = MODE_UDP;
		else {
			fprintf(stderr, "socksload: unknown mode \"%s\"\n",
			    argv[optind]);
			return -1;
		}
		if (optind + 1 < argc) {
			fprintf(stderr, "socksload: unexpected \"%s\"\n",
			    argv[optind + 1]);
			return -1;
		}
	}
	if (o->have_serve_tcp || o->have_serve_udp) {
		if (o->mode != MODE_NONE) {
			fprintf(stderr, "socksload: --serve-* runs alone; "
			    "start the target as its own process\n");
			return -1;
		}
		o->mode = MODE_SERVE;
		return 0;
	}
	if (o->mode == MODE_NONE || !o->have_proxy || !o->have_target) {
		usage(stderr);
		return -1;
	}
	if (o->timeout < 0)
		o->timeout = o->mode == MODE_UDP ? 0.2 : 5;
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts	 o;

	memset(&o, 0, sizeof(o));
	if (opts_parse(&o, argc, argv) < 0)
		return 64;
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	setvbuf(stdout, NULL, _IOLBF, 0);
	switch (o.mode) {
	case MODE_HANDSHAKES:
		return hs_main(&o);
	case MODE_UDP:
		return udp_main(&o);
	case MODE_SERVE:
		return serve_main(&o);
	default:
		return 64;
	}
}
