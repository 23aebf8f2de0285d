/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/floor: the least a tunnel can cost, a peer for bench/fairness
 * (issue 30). HTTP CONNECT and SOCKS5 CONNECT to an address literal, then
 * the relay of bench/pump.c, with the system calls of portico's
 * worker/relay.c: one thread, edge-triggered epoll, non-blocking sockets
 * with TCP_NODELAY, splice() through a pipe per direction grown to
 * RELAY_PIPE_SIZE, or with --copy recv()/send() through a 16 KiB buffer per
 * direction (relay.buffer_size's default). Set against portico's CPU per
 * GiB, the rest is what portico adds. This file holds the floor's own
 * part: its two ports, the requests, their answers, whom to dial.
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
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "pump.h"

#define FLOOR_HS_SIZE	1024	/* the request head or SOCKS5 setup */
#define LIT(s)		s, sizeof(s) - 1	/* a reply and its length */

enum floor_state { ST_HTTP, ST_GREET, ST_REQUEST, ST_DIAL };

/* Setup only: once relaying, pump.phase says all. */
struct tunnel {
	struct pump	 pump;	/* first: a struct pump * is a tunnel's */
	enum floor_state st;
	bool		 socks;
};

static struct pump_side	 lsn[2];	/* HTTP, SOCKS5 */

/* A new socket's buffer takes a reply whole: a short send is a failure. */
static int
tun_reply(struct tunnel *t, const char *msg, size_t len)
{
	return send(t->pump.side[0].fd, msg, len, MSG_NOSIGNAL) ==
	    (ssize_t)len ? 0 : -1;
}

/* The upstream leg reported: a failed connect raises EPOLLERR (as in
 * worker/dial.c), so writable without it means connected. A failure just
 * closes: the floor answers no errors. */
static void
tun_connected(struct tunnel *t, uint32_t ev)
{
	int	 rc = -1;

	if (!(ev & (EPOLLERR | EPOLLHUP)))
		rc = t->socks ? tun_reply(t, LIT("\5\0\0\1\0\0\0\0\0\0")) :
		    tun_reply(t, LIT("HTTP/1.1 200 Connection established"
		    "\r\n\r\n"));
	/* What the client sent after its request goes first. */
	if (rc < 0)
		pump_close(&t->pump);
	else
		pump_start(&t->pump, 0);
}

/* "CONNECT 1.2.3.4:80 HTTP/1.1" or "[::1]:80": 1 done, 0 more, -1 bad. */
static int
http_parse(struct tunnel *t, struct sockaddr_storage *ss)
{
	struct sockaddr_in	*s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)ss;
	char			*hs = t->pump.hs;
	char			*end, *host = hs + 8, *sp, *colon;
	unsigned long		 port;
	int			 ok;

	if ((end = memmem(hs, t->pump.hs_len, "\r\n\r\n", 4)) == NULL)
		return 0;
	*end = '\0';
	if (strncmp(hs, "CONNECT ", 8) != 0 ||
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
	pump_consume(&t->pump, (size_t)(end + 4 - hs));
	return ok == 1 && port > 0 && port < 65536 ? 1 : -1;
}

/* SOCKS5 greeting (no authentication), then CONNECT to ATYP 1 or 4. */
static int
socks_parse(struct tunnel *t, struct sockaddr_storage *ss)
{
	const unsigned char	*p = (const unsigned char *)t->pump.hs;
	size_t			 need;

	if (t->st == ST_GREET) {
		if (t->pump.hs_len < 2 || t->pump.hs_len < 2u + p[1])
			return 0;
		if (p[0] != 5 || memchr(p + 2, 0, p[1]) == NULL ||
		    tun_reply(t, LIT("\5\0")) < 0)
			return -1;
		pump_consume(&t->pump, 2u + p[1]);
		t->st = ST_REQUEST;
	}
	if (t->pump.hs_len < 4)
		return 0;
	need = p[3] == 1 ? 10 : p[3] == 4 ? 22 : 0;
	if (p[0] != 5 || p[1] != 1 || need == 0)
		return -1;
	if (t->pump.hs_len < need)
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
	pump_consume(&t->pump, need);
	return 1;
}

/* Reads the client's setup until it is parsed (then dials) or EAGAIN. */
static void
tun_handshake(struct tunnel *t)
{
	struct sockaddr_storage	 ss;
	ssize_t			 n;
	int			 rc;

	for (;;) {
		memset(&ss, 0, sizeof(ss));
		rc = t->socks ? socks_parse(t, &ss) : http_parse(t, &ss);
		if (rc > 0 && pump_dial(&t->pump, (struct sockaddr *)&ss,
		    sizeof(ss)) == 0) {
			t->st = ST_DIAL;
			return;
		}
		if (rc != 0 || t->pump.hs_len == FLOOR_HS_SIZE)
			break;
		if ((n = pump_read_setup(&t->pump, 0)) == -EAGAIN)
			return;
		if (n <= 0)
			break;
	}
	pump_close(&t->pump);
}

static void
floor_on_event(struct pump_side *s, uint32_t ev)
{
	struct tunnel	*t = (struct tunnel *)s->p;

	/* A reset is fatal even with nothing to move. */
	if (t->pump.phase == PUMP_RELAY && (ev & EPOLLERR))
		pump_close(&t->pump);
	else if (t->pump.phase == PUMP_RELAY)
		pump_run(&t->pump);
	else if (t->st == ST_DIAL && s == &t->pump.side[1] &&
	    (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		tun_connected(t, ev);
	else if (t->st < ST_DIAL && s == &t->pump.side[0])
		tun_handshake(t);
}

static void
floor_on_accept(struct pump *p, const struct pump_side *l)
{
	struct tunnel	*t = (struct tunnel *)p;

	t->socks = l == &lsn[1];
	t->st = t->socks ? ST_GREET : ST_HTTP;
}

static void
floor_listen(struct pump_side *l, const char *arg)
{
	struct sockaddr_in	 sin = { .sin_family = AF_INET };
	unsigned long		 port = strtoul(arg, NULL, 10);

	if (port == 0)
		return;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (port > 65535 || pump_listen(l, &sin, false) < 0) {
		fprintf(stderr, "floor: listen 127.0.0.1:%s: %s\n", arg,
		    strerror(errno));
		exit(1);
	}
}

int
main(int argc, char **argv)
{
	static struct pump_ops	 ops = {
		.size = sizeof(struct tunnel),
		.hs_size = FLOOR_HS_SIZE,
		.on_accept = floor_on_accept,
		.on_event = floor_on_event,
	};

	if (argc > 1 && strcmp(argv[1], "--copy") == 0) {
		ops.copy = true;
		argc--, argv++;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: floor [--copy] HTTP_PORT SOCKS_PORT\n");
		return 2;
	}
	/* splice() to a reset socket raises SIGPIPE (send has MSG_NOSIGNAL). */
	signal(SIGPIPE, SIG_IGN);
	if (pump_open(&ops) < 0) {
		perror("floor: epoll_create1");
		return 1;
	}
	floor_listen(&lsn[0], argv[1]);
	floor_listen(&lsn[1], argv[2]);
	fprintf(stderr, "floor: %s, HTTP %s, SOCKS5 %s\n",
	    ops.copy ? "copy" : "splice", argv[1], argv[2]);
	pump_loop(NULL, NULL);
	perror("floor: epoll_wait");
	return 1;
}
