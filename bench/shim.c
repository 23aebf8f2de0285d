/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/shim: lets a load tool that speaks plain TCP, iperf3, drive a proxy.
 * Every connection accepted on --listen gets its own tunnel through the
 * proxy under test (HTTP CONNECT or SOCKS5 CONNECT) to one fixed --target,
 * then bytes are relayed both ways by bench/pump.c, bench/floor's relay:
 * one thread, edge-triggered epoll, non-blocking sockets with TCP_NODELAY,
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
 * This file holds the shim's own part: the dial to the proxy, the
 * handshake with it, the totals. Deliberately not here: names or IPv6
 * (IPv4 literals only), proxy authentication, timeouts, retries, any
 * defence against a misbehaving proxy.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "pump.h"

#define SHIM_HS_SIZE	4096	/* the proxy's answer */

enum shim_state { ST_DIAL, ST_HTTP, ST_GREET, ST_REPLY };

/* Setup only: once relaying, pump.phase says all. */
struct tunnel {
	struct pump	 pump;	/* first: a struct pump * is a tunnel's */
	enum shim_state	 st;
};

static bool			 socks;
static struct sockaddr_in	 proxy_sin;
static char			 req[128];	/* CONNECT head or SOCKS5 */
static size_t			 req_len;
static unsigned long		 n_fail, n_reset;
static volatile sig_atomic_t	 stop;

/* Logs why <p> failed ("<what>: <err>" when err != 0) before pump_fail
 * closes it. Counted apart: a tunnel never opened, or a relay ended by an
 * error (iperf3 resets its data connections at the end of every test). */
static void
shim_on_fail(struct pump *p, const char *what, int err)
{
	fprintf(stderr, "shim: #%lu: %s%s%s\n", p->id, what, err ? ": " : "",
	    err ? strerror(err) : "");
	if (p->phase == PUMP_RELAY)
		n_reset++;
	else
		n_fail++;
}

static int
sock_error(int fd)
{
	int		 err = 0;
	socklen_t	 len = sizeof(err);

	(void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	return err;
}

/* "HTTP/1.x 2xx ..." through the blank line: 1 done, 0 more, -1 failed. */
static int
http_parse(struct tunnel *t)
{
	char	*hs = t->pump.hs;
	char	*end = memmem(hs, t->pump.hs_len, "\r\n\r\n", 4);
	char	 msg[96];

	if (end == NULL)
		return 0;
	if (strncmp(hs, "HTTP/1.", 7) != 0 || hs[9] != '2') {
		snprintf(msg, sizeof(msg), "proxy answered \"%.*s\"",
		    (int)strcspn(hs, "\r"), hs);
		pump_fail(&t->pump, msg, 0);
		return -1;
	}
	pump_consume(&t->pump, (size_t)(end + 4 - hs));
	return 1;
}

/* The method reply, then the CONNECT reply whose length its address type
 * gives: 1 done, 0 more, -1 failed. */
static int
socks_parse(struct tunnel *t)
{
	const unsigned char	*p = (const unsigned char *)t->pump.hs;
	char			 msg[64];
	size_t			 need;

	if (t->pump.hs_len < 2)
		return 0;
	if (p[0] != 5 || p[1] != 0) {
		snprintf(msg, sizeof(msg), "socks5 %s: version %u, code %u",
		    t->st == ST_GREET ? "method reply" : "reply", p[0], p[1]);
		pump_fail(&t->pump, msg, 0);
		return -1;
	}
	if (t->st == ST_GREET) {
		pump_consume(&t->pump, 2);
		t->st = ST_REPLY;
		if (send(t->pump.side[1].fd, req, req_len, MSG_NOSIGNAL) !=
		    (ssize_t)req_len) {
			pump_fail(&t->pump, "socks5 request", errno);
			return -1;
		}
		return 0;
	}
	if (t->pump.hs_len < 5)
		return 0;
	/* VER REP RSV ATYP, then BND.ADDR (4, 16 or 1 + length) and PORT. */
	need = p[3] == 1 ? 10 : p[3] == 4 ? 22 : p[3] == 3 ? 7u + p[4] : 0;
	if (need == 0) {
		pump_fail(&t->pump, "socks5 reply: bad address type", 0);
		return -1;
	}
	if (t->pump.hs_len < need)
		return 0;
	pump_consume(&t->pump, need);
	return 1;
}

/* Reads the proxy's answer until the tunnel is open, EAGAIN or failure.
 * What the proxy sent after its answer came from the target and goes to
 * the client first. */
static void
tun_handshake(struct tunnel *t)
{
	ssize_t	 n;
	int	 rc;

	for (;;) {
		rc = t->st == ST_HTTP ? http_parse(t) : socks_parse(t);
		if (rc < 0)
			return;
		if (rc > 0) {
			pump_start(&t->pump, 1);
			return;
		}
		if (t->pump.hs_len == SHIM_HS_SIZE) {
			pump_fail(&t->pump, "proxy answer too long", 0);
			return;
		}
		if ((n = pump_read_setup(&t->pump, 1)) == -EAGAIN)
			return;
		if (n <= 0) {
			pump_fail(&t->pump,
			    "proxy closed before the tunnel opened", (int)-n);
			return;
		}
	}
}

/* The proxy leg reported: a failed connect raises EPOLLERR, so writable
 * without it means connected. A new socket's buffer takes the request
 * whole: a short send is a failure. */
static void
tun_connected(struct tunnel *t, uint32_t ev)
{
	struct pump_side	*u = &t->pump.side[1];
	const char		*msg = socks ? "\5\1\0" : req;	/* no auth */
	size_t			 len = socks ? 3 : req_len;

	if (ev & (EPOLLERR | EPOLLHUP)) {
		pump_fail(&t->pump, "connect to the proxy", sock_error(u->fd));
		return;
	}
	t->st = socks ? ST_GREET : ST_HTTP;
	if (send(u->fd, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
		pump_fail(&t->pump, "send to the proxy", errno);
}

static void
shim_on_event(struct pump_side *s, uint32_t ev)
{
	struct tunnel	*t = (struct tunnel *)s->p;

	/* The client's bytes wait in its socket until the tunnel is open. A
	 * reset on either side is fatal even with nothing to move. */
	if (s == &t->pump.side[1] && t->st == ST_DIAL) {
		if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			tun_connected(t, ev);
	} else if (ev & EPOLLERR)
		pump_fail(&t->pump, s == &t->pump.side[0] ? "client" : "proxy",
		    sock_error(s->fd));
	else if (t->pump.phase == PUMP_RELAY)
		pump_run(&t->pump);
	else if (s == &t->pump.side[0] && (ev & EPOLLHUP))
		pump_fail(&t->pump, "client gone before the tunnel opened", 0);
	else if (s == &t->pump.side[1] && (s->ready & EPOLLIN))
		tun_handshake(t);
}

/* Each client gets a connect() to the proxy, whose outcome epoll
 * reports. */
static void
shim_on_accept(struct pump *p, const struct pump_side *l)
{
	(void)l;
	if (pump_dial(p, (struct sockaddr *)&proxy_sin, sizeof(proxy_sin)) < 0)
		pump_fail(p, "connect to the proxy", errno);
}

static struct pump_ops	 ops = {
	.size = sizeof(struct tunnel),
	.hs_size = SHIM_HS_SIZE,
	.on_accept = shim_on_accept,
	.on_event = shim_on_event,
	.on_fail = shim_on_fail,
};

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
shim_listen(struct pump_side *l, struct sockaddr_in *sin)
{
	char	 host[INET_ADDRSTRLEN];

	if (pump_listen(l, sin, true) < 0) {
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
	    "user_s=%.3f sys_s=%.3f\n", ops.copy ? "copy" : "splice",
	    pump_accepted, n_fail, n_reset, pump_sent[0], pump_sent[1],
	    usr + sys, usr, sys);
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
	static struct pump_side	 lsn;
	struct sockaddr_in	 listen_sin = { 0 }, target_sin = { 0 };
	struct sigaction	 sa = { .sa_handler = shim_on_signal };
	sigset_t		 block, orig;
	const char		*type = NULL;
	bool			 bad = false;
	int			 o;

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
			ops.copy = true;
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
	if (pump_open(&ops) < 0) {
		perror("shim: epoll_create1");
		return 1;
	}
	lsn.fd = -1;
	shim_listen(&lsn, &listen_sin);
	if (pump_loop(&orig, &stop) < 0) {
		perror("shim: epoll_pwait");
		return 1;
	}
	shim_report();
	return 0;
}
