/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/shim: lets a load tool that speaks plain TCP, iperf3, drive a proxy.
 * Every connection accepted on --listen gets its own tunnel through the
 * proxy under test (HTTP CONNECT or SOCKS5 CONNECT) to one fixed --target,
 * then bytes are relayed both ways as bench/floor.c relays them: one
 * thread, edge-triggered epoll, non-blocking sockets with TCP_NODELAY,
 * splice() through a pipe per direction, or with --copy recv()/send()
 * through a 16 KiB buffer, to see what the shim's own relay costs.
 *
 *   bench/shim --listen 127.0.0.1:PORT --proxy 127.0.0.1:PORT
 *       --type http|socks5 --target 127.0.0.1:PORT [--copy]
 *
 * Prints "shim: listening on ADDR" on stdout once ready (--listen port 0
 * picks a free port). SIGTERM or SIGINT ends it with one line of totals on
 * stderr: connections, bytes each way, the process's CPU seconds, which a
 * script sets against the bytes to report the shim's cost per GiB.
 *
 * The relay (dir_* and tun_pump) is floor.c's, copied rather than shared:
 * sharing means moving it into a bench/relay.c that both link, a change
 * to floor.c left for a commit of its own. Deliberately not here:
 * names or IPv6 (IPv4 literals only), proxy authentication, timeouts,
 * retries, any defence against a misbehaving proxy.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define SHIM_PIPE_SIZE	(256 * 1024)		/* RELAY_PIPE_SIZE */
#define SHIM_PIPE_HIGH	(SHIM_PIPE_SIZE / 2)	/* RELAY_PIPE_HIGH */
#define SHIM_BUF_SIZE	16384			/* relay.buffer_size */
#define SHIM_ROUNDS	16			/* RELAY_ROUNDS */
#define SHIM_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)
#define SHIM_SPLICE	(SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
#define PENDING(r)	(copy ? (r)->len - (r)->off : (r)->fill)

enum shim_state { ST_DIAL, ST_HTTP, ST_GREET, ST_REPLY, ST_RELAY, ST_DEAD };

/* What epoll points at: a leg of a tunnel, or the listener (t == NULL). */
struct side {
	int		 fd;
	uint32_t	 ready;	/* EPOLLIN/OUT seen, not yet used up */
	bool		 hup;	/* peer closed: a short read proves nothing */
	struct tunnel	*t;
};

/* Side d to side 1-d: bytes in the pipe, or buf[off..len) with --copy. */
struct dir {
	int		 pr, pw;	/* -1 until the first read */
	size_t		 fill, off, len;
	bool		 full;		/* EAGAIN with bytes in the pipe */
	bool		 eof, done;	/* read 0; EOF passed on */
	char		*buf;
};

struct tunnel {
	struct side	 side[2];	/* client (iperf3), proxy */
	struct dir	 dir[2];	/* to the target, from the target */
	enum shim_state	 st;
	bool		 queued;
	unsigned long	 id;		/* accept order, for the log */
	struct tunnel	*next, *dead;	/* run queue; reaped after the round */
	size_t		 hs_len;
	char		 hs[4096];	/* the proxy's answer, read so far */
	char		 bufs[];	/* --copy: 2 * SHIM_BUF_SIZE */
};

static int			 ep;
static bool			 copy, socks;
static struct tunnel		*runq, *reap;
static struct sockaddr_in	 proxy_sin;
static char			 req[128];	/* CONNECT head or SOCKS5 */
static size_t			 req_len;
static unsigned long		 n_conn, n_fail, n_reset;
static unsigned long long	 n_bytes[2];	/* per direction, delivered */
static volatile sig_atomic_t	 stop;

static int
dir_pipe(struct dir *r)
{
	int	 p[2];

	if (r->pr >= 0)
		return 0;
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	r->pr = p[0];
	r->pw = p[1];
	/* Refused past pipe-user-pages-soft: the default size still works. */
	(void)fcntl(r->pw, F_SETPIPE_SZ, SHIM_PIPE_SIZE);
	return 0;
}

/* The one exit. The memory waits for the end of the round: other events
 * of the same epoll_wait may point at it. */
static void
tun_close(struct tunnel *t)
{
	if (t->st == ST_DEAD)
		return;
	for (int i = 0; i < 2; i++) {
		if (t->side[i].fd >= 0)
			close(t->side[i].fd);
		if (t->dir[i].pr >= 0) {
			close(t->dir[i].pr);
			close(t->dir[i].pw);
		}
	}
	t->st = ST_DEAD;
	t->dead = reap;
	reap = t;
}

/* Logs why <t> failed ("<what>: <err>" when err != 0), then closes it.
 * Counted apart: a tunnel never opened, or a relay ended by an error
 * (iperf3 resets its data connections at the end of every test). */
static void
tun_fail(struct tunnel *t, const char *what, int err)
{
	fprintf(stderr, "shim: #%lu: %s%s%s\n", t->id, what, err ? ": " : "",
	    err ? strerror(err) : "");
	if (t->st == ST_RELAY)
		n_reset++;
	else
		n_fail++;
	tun_close(t);
}

static int
sock_error(int fd)
{
	int		 err = 0;
	socklen_t	 len = sizeof(err);

	(void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	return err;
}

/* Writes direction <d>'s pending bytes: 1 moved, 0 stuck, -1 failed. A
 * ready bit is cleared only when the socket is known full (EAGAIN, a short
 * send; a short splice may stop at a pipe slot) or, in dir_read, drained:
 * an edge not used up is never waited for. */
static int
dir_write(struct tunnel *t, int d)
{
	struct dir	*r = &t->dir[d];
	struct side	*dst = &t->side[1 - d];
	size_t		 want = PENDING(r);
	ssize_t		 n;

	n = copy ? send(dst->fd, r->buf + r->off, want, MSG_NOSIGNAL) :
	    splice(r->pr, NULL, dst->fd, NULL, want, SHIM_SPLICE);
	if (n < 0 || (copy && (size_t)n < want))
		dst->ready &= ~(uint32_t)EPOLLOUT;
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	r->full = false;
	n_bytes[d] += (size_t)n;
	if (!copy)
		r->fill -= (size_t)n;
	else if ((r->off += (size_t)n) == r->len)
		r->off = r->len = 0;
	return 1;
}

/* Reads direction <d>'s source: 1 read or EOF, 0 nothing, -1 failed. */
static int
dir_read(struct tunnel *t, int d)
{
	struct dir	*r = &t->dir[d];
	struct side	*src = &t->side[d];
	size_t		 room = SHIM_BUF_SIZE - r->len;
	ssize_t		 n;

	if (copy)
		n = recv(src->fd, r->buf + r->len, room, 0);
	else if (dir_pipe(r) < 0)
		return -1;
	else
		n = splice(src->fd, NULL, r->pw, NULL, SHIM_PIPE_SIZE,
		    SHIM_SPLICE);
	if (n < 0 && errno != EAGAIN)
		return -1;
	/* For splice EAGAIN says "socket empty" or "pipe full", and only an
	 * empty pipe tells which. A short recv emptied the socket, unless a
	 * FIN waits behind the bytes (EPOLLRDHUP seen). */
	if (n < 0 && !copy && r->fill > 0)
		r->full = true;
	else if (n < 0 || (copy && n > 0 && (size_t)n < room && !src->hup))
		src->ready &= ~(uint32_t)EPOLLIN;
	if (n < 0)
		return 0;
	r->eof = n == 0;
	if (copy)
		r->len += (size_t)n;
	else
		r->fill += (size_t)n;
	return 1;
}

/* One round of direction <d>: write, pass the EOF on once drained, read
 * while there is room. 1 when something moved, 0 stuck, -1 failed. */
static int
dir_step(struct tunnel *t, int d)
{
	struct dir	*r = &t->dir[d];
	int		 moved = 0, rc;
	bool		 room;

	if (r->done)
		return 0;
	if (PENDING(r) > 0 && (t->side[1 - d].ready & EPOLLOUT) &&
	    (moved = dir_write(t, d)) < 0)
		return -1;
	if (PENDING(r) == 0 && r->eof) {
		/* With the other way done too, the close sends the FIN. */
		if (!t->dir[1 - d].done &&
		    shutdown(t->side[1 - d].fd, SHUT_WR) < 0)
			return -1;
		r->done = true;
		return 1;
	}
	room = copy ? r->len < SHIM_BUF_SIZE :
	    !r->full && r->fill < SHIM_PIPE_HIGH;
	if (r->eof || !room || !(t->side[d].ready & EPOLLIN))
		return moved;
	if ((rc = dir_read(t, d)) < 0)
		return -1;
	return moved | rc;
}

static void
tun_pump(struct tunnel *t)
{
	int	 a, b;

	for (int i = 0; i < SHIM_ROUNDS; i++) {
		a = dir_step(t, 0);
		b = a < 0 ? -1 : dir_step(t, 1);
		if (a < 0 || b < 0) {
			tun_fail(t, "relay", errno);
			return;
		}
		if (t->dir[0].done && t->dir[1].done) {
			tun_close(t);
			return;
		}
		if (a == 0 && b == 0)
			return;
	}
	/* Out of rounds with bytes moving: edge-triggered epoll will not
	 * repeat what we did not use up, so go on after the others. */
	if (!t->queued) {
		t->queued = true;
		t->next = runq;
		runq = t;
	}
}

/* The tunnel is open. What the proxy sent after its answer came from the
 * target and goes to the client first. */
static void
tun_start(struct tunnel *t)
{
	struct dir	*r = &t->dir[1];

	if (t->hs_len > 0 && copy) {
		memcpy(r->buf, t->hs, t->hs_len);
		r->len = t->hs_len;
	} else if (t->hs_len > 0) {
		if (dir_pipe(r) < 0 ||
		    write(r->pw, t->hs, t->hs_len) != (ssize_t)t->hs_len) {
			tun_fail(t, "pipe", errno);
			return;
		}
		r->fill = t->hs_len;
	}
	t->st = ST_RELAY;
	tun_pump(t);
}

/* Drops the <n> bytes of the answer from the head of t->hs. */
static void
tun_consume(struct tunnel *t, size_t n)
{
	t->hs_len -= n;
	memmove(t->hs, t->hs + n, t->hs_len);
}

/* "HTTP/1.x 2xx ..." through the blank line: 1 done, 0 more, -1 failed. */
static int
http_parse(struct tunnel *t)
{
	char	*end = memmem(t->hs, t->hs_len, "\r\n\r\n", 4);
	char	 msg[96];

	if (end == NULL)
		return 0;
	if (strncmp(t->hs, "HTTP/1.", 7) != 0 || t->hs[9] != '2') {
		snprintf(msg, sizeof(msg), "proxy answered \"%.*s\"",
		    (int)strcspn(t->hs, "\r"), t->hs);
		tun_fail(t, msg, 0);
		return -1;
	}
	tun_consume(t, (size_t)(end + 4 - t->hs));
	return 1;
}

/* The method reply, then the CONNECT reply whose length its address type
 * gives: 1 done, 0 more, -1 failed. */
static int
socks_parse(struct tunnel *t)
{
	const unsigned char	*p = (const unsigned char *)t->hs;
	char			 msg[64];
	size_t			 need;

	if (t->hs_len < 2)
		return 0;
	if (p[0] != 5 || p[1] != 0) {
		snprintf(msg, sizeof(msg), "socks5 %s: version %u, code %u",
		    t->st == ST_GREET ? "method reply" : "reply", p[0], p[1]);
		tun_fail(t, msg, 0);
		return -1;
	}
	if (t->st == ST_GREET) {
		tun_consume(t, 2);
		t->st = ST_REPLY;
		if (send(t->side[1].fd, req, req_len, MSG_NOSIGNAL) !=
		    (ssize_t)req_len) {
			tun_fail(t, "socks5 request", errno);
			return -1;
		}
		return 0;
	}
	if (t->hs_len < 5)
		return 0;
	/* VER REP RSV ATYP, then BND.ADDR (4, 16 or 1 + length) and PORT. */
	need = p[3] == 1 ? 10 : p[3] == 4 ? 22 : p[3] == 3 ? 7u + p[4] : 0;
	if (need == 0) {
		tun_fail(t, "socks5 reply: bad address type", 0);
		return -1;
	}
	if (t->hs_len < need)
		return 0;
	tun_consume(t, need);
	return 1;
}

/* Reads the proxy's answer until the tunnel is open, EAGAIN or failure. */
static void
tun_handshake(struct tunnel *t)
{
	struct side	*u = &t->side[1];
	ssize_t		 n;
	int		 rc;

	for (;;) {
		rc = t->st == ST_HTTP ? http_parse(t) : socks_parse(t);
		if (rc < 0)
			return;
		if (rc > 0) {
			tun_start(t);
			return;
		}
		if (t->hs_len == sizeof(t->hs)) {
			tun_fail(t, "proxy answer too long", 0);
			return;
		}
		n = recv(u->fd, t->hs + t->hs_len, sizeof(t->hs) - t->hs_len,
		    0);
		if (n < 0 && errno == EAGAIN) {
			u->ready &= ~(uint32_t)EPOLLIN;
			return;
		}
		if (n <= 0) {
			tun_fail(t, "proxy closed before the tunnel opened",
			    n < 0 ? errno : 0);
			return;
		}
		t->hs_len += (size_t)n;
	}
}

/* The proxy leg reported: a failed connect raises EPOLLERR, so writable
 * without it means connected. A new socket's buffer takes the request
 * whole: a short send is a failure. */
static void
tun_connected(struct tunnel *t, uint32_t ev)
{
	struct side	*u = &t->side[1];
	const char	*msg = socks ? "\5\1\0" : req;	/* no auth only */
	size_t		 len = socks ? 3 : req_len;

	if (ev & (EPOLLERR | EPOLLHUP)) {
		tun_fail(t, "connect to the proxy", sock_error(u->fd));
		return;
	}
	t->st = socks ? ST_GREET : ST_HTTP;
	if (send(u->fd, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
		tun_fail(t, "send to the proxy", errno);
}

static void
shim_on_event(struct side *s, uint32_t ev)
{
	struct tunnel	*t = s->t;

	s->ready |= ev & (EPOLLIN | EPOLLOUT);
	if (ev & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
		s->ready |= EPOLLIN | EPOLLOUT;
		s->hup = true;
	}
	/* The client's bytes wait in its socket until the tunnel is open. A
	 * reset on either side is fatal even with nothing to move. */
	if (s == &t->side[1] && t->st == ST_DIAL) {
		if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			tun_connected(t, ev);
	} else if (ev & EPOLLERR)
		tun_fail(t, s == &t->side[0] ? "client" : "proxy",
		    sock_error(s->fd));
	else if (t->st == ST_RELAY)
		tun_pump(t);
	else if (s == &t->side[0] && (ev & EPOLLHUP))
		tun_fail(t, "client gone before the tunnel opened", 0);
	else if (s == &t->side[1] && (s->ready & EPOLLIN))
		tun_handshake(t);
}

/* Registered after connect(), which may have finished: ADD reports it. */
static int
tun_dial(struct tunnel *t)
{
	struct side		*u = &t->side[1];
	struct epoll_event	 ev = { .events = SHIM_EVENTS, .data.ptr = u };
	int			 one = 1;

	u->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0 ||
	    setsockopt(u->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    (connect(u->fd, (struct sockaddr *)&proxy_sin,
	    sizeof(proxy_sin)) < 0 && errno != EINPROGRESS) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, u->fd, &ev) < 0)
		return -1;
	return 0;
}

/* Each client gets a tunnel, owned by the loop until tun_close, and a
 * connect() to the proxy, whose outcome epoll reports. */
static void
shim_accept(struct side *l)
{
	struct epoll_event	 ev = { .events = SHIM_EVENTS };
	struct tunnel		*t;
	int			 fd;

	while ((fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) >= 0 || errno == ECONNABORTED || errno == EINTR) {
		if (fd < 0 || (t = calloc(1, sizeof(*t) +
		    (copy ? 2 * SHIM_BUF_SIZE : 0))) == NULL) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		t->id = ++n_conn;
		for (int i = 0; i < 2; i++) {
			t->side[i].t = t;
			t->side[i].fd = -1;
			t->dir[i].pr = t->dir[i].pw = -1;
			t->dir[i].buf = t->bufs + i * SHIM_BUF_SIZE;
		}
		t->side[0].fd = fd;
		ev.data.ptr = &t->side[0];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ||
		    tun_dial(t) < 0)
			tun_fail(t, "connect to the proxy", errno);
	}
	/* EMFILE and the like: the next connection's edge tries again. */
	if (errno != EAGAIN)
		perror("shim: accept4");
}

/* "A.B.C.D:PORT" into <sin_out>; port 0 only where <any_port>. */
static void
shim_parse_addr(const char *opt, const char *arg, bool any_port,
    struct sockaddr_in *sin_out)
{
	const char	*colon = strrchr(arg, ':');
	char		 host[INET_ADDRSTRLEN], *end;
	unsigned long	 port;

	memset(sin_out, 0, sizeof(*sin_out));
	sin_out->sin_family = AF_INET;
	if (colon != NULL && (size_t)(colon - arg) < sizeof(host)) {
		memcpy(host, arg, (size_t)(colon - arg));
		host[colon - arg] = '\0';
		port = strtoul(colon + 1, &end, 10);
		sin_out->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &sin_out->sin_addr) == 1 &&
		    colon[1] != '\0' && *end == '\0' && port < 65536 &&
		    (port > 0 || any_port))
			return;
	}
	fprintf(stderr, "shim: --%s %s: want IPv4:PORT\n", opt, arg);
	exit(2);
}

/* The tunnel request every connection sends, built once from --target. */
static void
shim_build_request(const struct sockaddr_in *target)
{
	char	 host[INET_ADDRSTRLEN];

	if (socks) {
		memcpy(req, "\5\1\0\1", 4);
		memcpy(req + 4, &target->sin_addr, 4);
		memcpy(req + 8, &target->sin_port, 2);
		req_len = 10;
		return;
	}
	inet_ntop(AF_INET, &target->sin_addr, host, sizeof(host));
	req_len = (size_t)snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1"
	    "\r\nHost: %s:%u\r\n\r\n", host, ntohs(target->sin_port), host,
	    ntohs(target->sin_port));
}

static void
shim_listen(struct side *l, struct sockaddr_in *sin)
{
	struct epoll_event	 ev = { EPOLLIN | EPOLLET, { .ptr = l } };
	socklen_t		 len = sizeof(*sin);
	char			 host[INET_ADDRSTRLEN];
	int			 one = 1;

	/* Accepted sockets inherit TCP_NODELAY (as in master/listen.c). */
	if ((l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    bind(l->fd, (struct sockaddr *)sin, sizeof(*sin)) < 0 ||
	    listen(l->fd, 4096) < 0 ||
	    getsockname(l->fd, (struct sockaddr *)sin, &len) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, l->fd, &ev) < 0) {
		perror("shim: listen");
		exit(1);
	}
	inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
	printf("shim: listening on %s:%u\n", host, ntohs(sin->sin_port));
	fflush(stdout);
}

static void
shim_on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Totals for the script: CPU is the whole process, setup included. */
static void
shim_report(void)
{
	struct rusage	 ru;
	double		 usr, sys;

	getrusage(RUSAGE_SELF, &ru);
	usr = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	fprintf(stderr, "shim: mode=%s connections=%lu failed=%lu reset=%lu "
	    "bytes_to_target=%llu bytes_from_target=%llu cpu_s=%.3f "
	    "user_s=%.3f sys_s=%.3f\n", copy ? "copy" : "splice", n_conn,
	    n_fail, n_reset, n_bytes[0], n_bytes[1], usr + sys, usr, sys);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "proxy", required_argument, NULL, 'p' },
		{ "type", required_argument, NULL, 't' },
		{ "target", required_argument, NULL, 'T' },
		{ "copy", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};
	static struct side	 lsn;
	struct sockaddr_in	 listen_sin = { 0 }, target_sin = { 0 };
	struct epoll_event	 evs[256];
	struct sigaction	 sa = { .sa_handler = shim_on_signal };
	sigset_t		 block, orig;
	struct tunnel		*t, *q;
	const char		*type = NULL;
	bool			 bad = false;
	int			 n, o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'l':
			shim_parse_addr("listen", optarg, true, &listen_sin);
			break;
		case 'p':
			shim_parse_addr("proxy", optarg, false, &proxy_sin);
			break;
		case 'T':
			shim_parse_addr("target", optarg, false, &target_sin);
			break;
		case 't':
			type = optarg;
			break;
		case 'c':
			copy = true;
			break;
		default:
			bad = true;
			break;
		}
	}
	/* An address not given keeps family 0. */
	socks = type != NULL && strcmp(type, "socks5") == 0;
	if (bad || optind != argc || listen_sin.sin_family == 0 ||
	    proxy_sin.sin_family == 0 || target_sin.sin_family == 0 ||
	    type == NULL || (!socks && strcmp(type, "http") != 0)) {
		fprintf(stderr, "usage: shim --listen IP:PORT --proxy IP:PORT "
		    "--type http|socks5 --target IP:PORT [--copy]\n");
		return 2;
	}
	shim_build_request(&target_sin);
	/* splice() to a reset socket raises SIGPIPE (send has MSG_NOSIGNAL).
	 * The stop signals are blocked except inside epoll_pwait, so one
	 * cannot slip in between the test of <stop> and the wait. */
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &orig);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("shim: epoll_create1");
		return 1;
	}
	lsn.fd = -1;
	shim_listen(&lsn, &listen_sin);
	while (!stop) {
		n = epoll_pwait(ep, evs, 256, runq != NULL ? 0 : -1, &orig);
		if (n < 0 && errno != EINTR) {
			perror("shim: epoll_pwait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct side	*s = evs[i].data.ptr;

			if (s->t == NULL)
				shim_accept(s);
			else if (s->t->st != ST_DEAD)
				shim_on_event(s, evs[i].events);
		}
		/* Tunnels out of rounds, then memory of tunnels closed. */
		for (q = runq, runq = NULL; (t = q) != NULL; ) {
			q = t->next;
			t->queued = false;
			if (t->st == ST_RELAY)
				tun_pump(t);
		}
		while ((t = reap) != NULL) {
			reap = t->dead;
			free(t);
		}
	}
	shim_report();
	return 0;
}
