/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/floor: the least a tunnel can cost, a peer for bench/fairness
 * (issue 30). HTTP CONNECT and SOCKS5 CONNECT to an address literal, then
 * the relay with the system calls of portico's worker/relay.c: one thread,
 * edge-triggered epoll, non-blocking sockets with TCP_NODELAY, splice()
 * through a pipe per direction grown to RELAY_PIPE_SIZE, or with --copy
 * recv()/send() through a 16 KiB buffer per direction (relay.buffer_size's
 * default). Set against portico's CPU per GiB, the rest is what portico adds.
 *
 *   bench/floor [--copy] HTTP_PORT SOCKS_PORT   (127.0.0.1; 0: not served)
 *
 * Foreground; SIGTERM ends it (the default action). Deliberately not here:
 * names (no resolver), headers, authentication, UDP, timeouts, limits,
 * logs, a ring or a pipe pool, any defence against a misbehaving client.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define FLOOR_PIPE_SIZE	(256 * 1024)		/* RELAY_PIPE_SIZE */
#define FLOOR_PIPE_HIGH	(FLOOR_PIPE_SIZE / 2)	/* RELAY_PIPE_HIGH */
#define FLOOR_BUF_SIZE	16384			/* relay.buffer_size */
#define FLOOR_ROUNDS	16			/* RELAY_ROUNDS */
#define FLOOR_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)
#define FLOOR_SPLICE	(SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
#define LIT(s)		s, sizeof(s) - 1	/* a reply and its length */
#define PENDING(r)	(copy ? (r)->len - (r)->off : (r)->fill)

enum floor_state { ST_HTTP, ST_GREET, ST_REQUEST, ST_DIAL, ST_RELAY, ST_DEAD };

/* What epoll points at: a leg of a tunnel, or a listener (t == NULL). */
struct side {
	int		 fd;
	uint32_t	 ready;	/* EPOLLIN/OUT seen, not yet used up */
	bool		 hup;	/* peer closed: a short read proves nothing */
	bool		 socks;	/* a listener's protocol */
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
	struct side	 side[2];	/* client, upstream */
	struct dir	 dir[2];	/* from the client, from upstream */
	enum floor_state st;
	bool		 socks, queued;
	struct tunnel	*next, *dead;	/* run queue; reaped after the round */
	size_t		 hs_len;
	char		 hs[1024];	/* the request head or SOCKS5 setup */
	char		 bufs[];	/* --copy: 2 * FLOOR_BUF_SIZE */
};

static int		 ep;
static bool		 copy;
static struct tunnel	*runq, *reap;

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
	(void)fcntl(r->pw, F_SETPIPE_SZ, FLOOR_PIPE_SIZE);
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
	    splice(r->pr, NULL, dst->fd, NULL, want, FLOOR_SPLICE);
	if (n < 0 || (copy && (size_t)n < want))
		dst->ready &= ~(uint32_t)EPOLLOUT;
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	r->full = false;
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
	size_t		 room = FLOOR_BUF_SIZE - r->len;
	ssize_t		 n;

	if (copy)
		n = recv(src->fd, r->buf + r->len, room, 0);
	else if (dir_pipe(r) < 0)
		return -1;
	else
		n = splice(src->fd, NULL, r->pw, NULL, FLOOR_PIPE_SIZE,
		    FLOOR_SPLICE);
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
	room = copy ? r->len < FLOOR_BUF_SIZE :
	    !r->full && r->fill < FLOOR_PIPE_HIGH;
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

	for (int i = 0; i < FLOOR_ROUNDS; i++) {
		a = dir_step(t, 0);
		b = a < 0 ? -1 : dir_step(t, 1);
		if (a < 0 || b < 0 || (t->dir[0].done && t->dir[1].done)) {
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

/* A new socket's buffer takes a reply whole: a short send is a failure. */
static int
tun_reply(struct tunnel *t, const char *msg, size_t len)
{
	return send(t->side[0].fd, msg, len, MSG_NOSIGNAL) == (ssize_t)len ?
	    0 : -1;
}

/* The upstream leg reported: a failed connect raises EPOLLERR (as in
 * worker/dial.c), so writable without it means connected. A failure just
 * closes: the floor answers no errors. */
static void
tun_connected(struct tunnel *t, uint32_t ev)
{
	struct dir	*r = &t->dir[0];
	int		 rc = -1;

	if (!(ev & (EPOLLERR | EPOLLHUP)))
		rc = t->socks ? tun_reply(t, LIT("\5\0\0\1\0\0\0\0\0\0")) :
		    tun_reply(t, LIT("HTTP/1.1 200 Connection established"
		    "\r\n\r\n"));
	/* What the client sent after its request goes first. */
	if (rc == 0 && t->hs_len > 0 && copy) {
		memcpy(r->buf, t->hs, t->hs_len);
		r->len = t->hs_len;
	} else if (rc == 0 && t->hs_len > 0) {
		if (dir_pipe(r) < 0 ||
		    write(r->pw, t->hs, t->hs_len) != (ssize_t)t->hs_len)
			rc = -1;
		r->fill = t->hs_len;
	}
	if (rc < 0) {
		tun_close(t);
		return;
	}
	t->st = ST_RELAY;
	tun_pump(t);
}

/* Registered after connect(), which may have finished: ADD reports it. */
static int
tun_dial(struct tunnel *t, const struct sockaddr_storage *ss)
{
	struct side		*u = &t->side[1];
	struct epoll_event	 ev = { .events = FLOOR_EVENTS, .data.ptr = u };
	int			 one = 1;

	u->fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (u->fd < 0 ||
	    setsockopt(u->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    (connect(u->fd, (const struct sockaddr *)ss, sizeof(*ss)) < 0 &&
	    errno != EINPROGRESS) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, u->fd, &ev) < 0)
		return -1;
	t->st = ST_DIAL;
	return 0;
}

/* Drops the <n> bytes of the setup from the head of t->hs. */
static void
tun_consume(struct tunnel *t, size_t n)
{
	t->hs_len -= n;
	memmove(t->hs, t->hs + n, t->hs_len);
}

/* "CONNECT 1.2.3.4:80 HTTP/1.1" or "[::1]:80": 1 done, 0 more, -1 bad. */
static int
http_parse(struct tunnel *t, struct sockaddr_storage *ss)
{
	struct sockaddr_in	*s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)ss;
	char			*end, *host = t->hs + 8, *sp, *colon;
	unsigned long		 port;
	int			 ok;

	if ((end = memmem(t->hs, t->hs_len, "\r\n\r\n", 4)) == NULL)
		return 0;
	*end = '\0';
	if (strncmp(t->hs, "CONNECT ", 8) != 0 ||
	    (sp = strchr(host, ' ')) == NULL)
		return -1;
	*sp = '\0';
	if ((colon = strrchr(host, ':')) == NULL)
		return -1;
	*colon = '\0';
	port = strtoul(colon + 1, NULL, 10);
	if (host[0] == '[' && colon[-1] == ']') {
		colon[-1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		ok = inet_pton(AF_INET6, host + 1, &s6->sin6_addr);
	} else {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		ok = inet_pton(AF_INET, host, &s4->sin_addr);
	}
	tun_consume(t, (size_t)(end + 4 - t->hs));
	return ok == 1 && port > 0 && port < 65536 ? 1 : -1;
}

/* SOCKS5 greeting (no authentication), then CONNECT to ATYP 1 or 4. */
static int
socks_parse(struct tunnel *t, struct sockaddr_storage *ss)
{
	const unsigned char	*p = (const unsigned char *)t->hs;
	size_t			 need;

	if (t->st == ST_GREET) {
		if (t->hs_len < 2 || t->hs_len < 2u + p[1])
			return 0;
		if (p[0] != 5 || memchr(p + 2, 0, p[1]) == NULL ||
		    tun_reply(t, LIT("\5\0")) < 0)
			return -1;
		tun_consume(t, 2u + p[1]);
		t->st = ST_REQUEST;
	}
	if (t->hs_len < 4)
		return 0;
	need = p[3] == 1 ? 10 : p[3] == 4 ? 22 : 0;
	if (p[0] != 5 || p[1] != 1 || need == 0)
		return -1;
	if (t->hs_len < need)
		return 0;
	if (p[3] == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, p + 4, 4);
		memcpy(&((struct sockaddr_in *)ss)->sin_port, p + 8, 2);
	} else {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, p + 4, 16);
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_port, p + 20, 2);
	}
	tun_consume(t, need);
	return 1;
}

/* Reads the client's setup until it is parsed (then dials) or EAGAIN. */
static void
tun_handshake(struct tunnel *t)
{
	struct side		*c = &t->side[0];
	struct sockaddr_storage	 ss;
	ssize_t			 n;
	int			 rc;

	for (;;) {
		memset(&ss, 0, sizeof(ss));
		rc = t->socks ? socks_parse(t, &ss) : http_parse(t, &ss);
		if (rc > 0 && tun_dial(t, &ss) == 0)
			return;
		if (rc != 0 || t->hs_len == sizeof(t->hs))
			break;
		if (!(c->ready & EPOLLIN))
			return;
		n = recv(c->fd, t->hs + t->hs_len, sizeof(t->hs) - t->hs_len,
		    0);
		if (n < 0 && errno == EAGAIN) {
			c->ready &= ~(uint32_t)EPOLLIN;
			return;
		}
		if (n <= 0)
			break;
		t->hs_len += (size_t)n;
	}
	tun_close(t);
}

static void
floor_on_event(struct side *s, uint32_t ev)
{
	struct tunnel	*t = s->t;

	s->ready |= ev & (EPOLLIN | EPOLLOUT);
	if (ev & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
		s->ready |= EPOLLIN | EPOLLOUT;
		s->hup = true;
	}
	if (t->st == ST_RELAY && (ev & EPOLLERR))
		tun_close(t);	/* a reset, fatal even with nothing to move */
	else if (t->st == ST_RELAY)
		tun_pump(t);
	else if (t->st == ST_DIAL && s == &t->side[1] &&
	    (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		tun_connected(t, ev);
	else if (t->st < ST_DIAL && s == &t->side[0])
		tun_handshake(t);
}

static void
floor_accept(struct side *l)
{
	struct epoll_event	 ev = { .events = FLOOR_EVENTS };
	struct tunnel		*t;
	int			 fd;

	while ((fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) >= 0 || errno == ECONNABORTED || errno == EINTR) {
		/* Per connection, not per byte: the --copy buffers too. */
		if (fd < 0 || (t = calloc(1, sizeof(*t) +
		    (copy ? 2 * FLOOR_BUF_SIZE : 0))) == NULL) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		for (int i = 0; i < 2; i++) {
			t->side[i].t = t;
			t->dir[i].pr = t->dir[i].pw = -1;
			t->dir[i].buf = t->bufs + i * FLOOR_BUF_SIZE;
		}
		t->side[0].fd = fd;
		t->side[1].fd = -1;
		t->socks = l->socks;
		t->st = t->socks ? ST_GREET : ST_HTTP;
		ev.data.ptr = &t->side[0];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			tun_close(t);
	}
	/* EMFILE and the like: the next connection's edge tries again. */
	if (errno != EAGAIN)
		perror("floor: accept4");
}

static void
floor_listen(struct side *l, const char *arg, bool socks)
{
	struct sockaddr_in	 sin = { .sin_family = AF_INET };
	struct epoll_event	 ev = { EPOLLIN | EPOLLET, { .ptr = l } };
	unsigned long		 port = strtoul(arg, NULL, 10);
	int			 one = 1;

	l->socks = socks;
	if (port == 0)
		return;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Accepted sockets inherit TCP_NODELAY (as in master/listen.c). */
	if (port > 65535 || (l->fd = socket(AF_INET, SOCK_STREAM |
	    SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    bind(l->fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(l->fd, 4096) < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, l->fd, &ev) < 0) {
		fprintf(stderr, "floor: listen 127.0.0.1:%s: %s\n", arg,
		    strerror(errno));
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	static struct side	 lsn[2];
	struct epoll_event	 evs[256];
	struct tunnel		*t, *q;
	int			 n;

	if (argc > 1 && strcmp(argv[1], "--copy") == 0) {
		copy = true;
		argc--, argv++;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: floor [--copy] HTTP_PORT SOCKS_PORT\n");
		return 2;
	}
	/* splice() to a reset socket raises SIGPIPE (send has MSG_NOSIGNAL). */
	signal(SIGPIPE, SIG_IGN);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("floor: epoll_create1");
		return 1;
	}
	floor_listen(&lsn[0], argv[1], false);
	floor_listen(&lsn[1], argv[2], true);
	fprintf(stderr, "floor: %s, HTTP %s, SOCKS5 %s\n",
	    copy ? "copy" : "splice", argv[1], argv[2]);
	for (;;) {
		n = epoll_wait(ep, evs, 256, runq != NULL ? 0 : -1);
		if (n < 0 && errno != EINTR) {
			perror("floor: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct side	*s = evs[i].data.ptr;

			if (s->t == NULL)
				floor_accept(s);
			else if (s->t->st != ST_DEAD)
				floor_on_event(s, evs[i].events);
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
}
