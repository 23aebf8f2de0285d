/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loadgen_serve: the origin, until SIGINT or SIGTERM, any subset of:
 *
 *   --http PORT      HTTP/1.1: GET or HEAD of /bytes/N answers N bytes of
 *                    'x' with Content-Length, /chunked/N the same chunked,
 *                    /eof/N the same with neither (Connection: close, the
 *                    close ends the body: the framing of old origins and
 *                    of HTTP/1.0), anything else 404; keep-alive unless
 *                    the client says close (or is HTTP/1.0 without
 *                    keep-alive), or the path was /eof/N. A request is
 *                    read whole before its answer is written and the next
 *                    is read only once the answer is out.
 *   --tcp-echo PORT  sends back what it reads.
 *   --tcp-sink PORT  reads and discards; with --tcp-source N also sends N
 *                    bytes on each connection (0: without end).
 *   --write BYTES    (1..1048576) the size of each send() of the source,
 *                    and of the echo's buffer: it reads up to BYTES and
 *                    sends back what it read. A short send of the source
 *                    is finished before the next BYTES start, so every
 *                    send asks for BYTES, or the rest of the same write.
 *                    Without it the source sends 64 KiB a time (a short
 *                    send starts a new 64 KiB) and the echo reads 16 KiB.
 *                    A relay benchmark varies it to see small and large
 *                    writes reach the proxy.
 *   --tcp-close PORT accepts and closes at once, the target of SOCKS
 *                    set-up runs (a FIN, not a reset: a reset can beat
 *                    the proxy's connect and turn a set-up into a failure).
 *   --udp-echo PORT  sends each datagram back to its sender.
 *
 * PORT may be HOST:PORT; the host defaults to 127.0.0.1.
 *
 * Deliberately not here: request bodies (a Content-Length is skipped, not
 * read), chunked requests, anything but GET and HEAD.
 */
#include "config.h"

#include "loadgen.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define SV_BUF		16384	/* request head; echo without --write */
#define SV_OUT		65536	/* http output; source without --write */
#define SV_BATCH	64

enum sv_kind {
	SV_L_HTTP = 0,
	SV_L_ECHO,
	SV_L_SINK,
	SV_L_CLOSE,
	SV_UDP,
	SV_HTTP,
	SV_ECHO,
	SV_SINK,
};

struct sv_conn {
	enum sv_kind	 kind;
	int		 fd;
	uint32_t	 events;
	uint8_t		*in;		/* SV_BUF, echo: sv_echo_len */
	size_t		 in_len;
	uint8_t		*out;		/* SV_OUT; echo uses <in> */
	size_t		 out_off, out_len;
	uint64_t	 body_left;	/* http: body bytes not yet queued */
	bool		 chunked, last_chunk, close_after;
	long long	 source_left;	/* sink: bytes to send, -1 endless */
	size_t		 src_off;	/* sink: of the current write, sent */
	struct sv_conn	*prev, *next;	/* sv_conns */
};

static volatile sig_atomic_t	 sv_stop;
static int			 sv_ep;
/* Every accepted connection, so an exit frees them all. */
static struct sv_conn		*sv_conns;
static long long		 sv_source = -1;
/* 'x' for bodies and the source: SV_OUT bytes, or --write's if more */
static uint8_t			*sv_x;
/*
 * The source's write size, and the sends it makes per wake-up: SV_OUT
 * bytes' worth, what one send carries without --write, so small writes
 * cost the source more system calls, not a lower rate. <sv_src_carry>
 * (--write given): a short send is finished before the next write starts.
 */
static size_t			 sv_src_write = SV_OUT;
static int			 sv_src_sends = 1;
static bool			 sv_src_carry;
static size_t			 sv_echo_len = SV_BUF;
/* --date: a Date field in every --http answer, made once a second. */
static bool			 sv_date;

static const char *
sv_date_field(void)
{
	static char	 field[48];
	static time_t	 made = -1;
	time_t		 now;
	struct tm	 tm;

	if (!sv_date)
		return "";
	now = time(NULL);
	if (now != made && gmtime_r(&now, &tm) != NULL) {
		strftime(field, sizeof(field),
		    "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
		made = now;
	}
	return field;
}

static void
sv_on_signal(int sig)
{
	(void)sig;
	sv_stop = 1;
}

static int
sv_socket(int type, const union lg_addr *addr)
{
	int	 fd, one = 1, bufsz = 4 << 20;

	fd = socket(addr->sa.sa_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (type == SOCK_DGRAM) {
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	}
	if (bind(fd, &addr->sa, lg_addr_len(addr)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 4096) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
sv_watch(struct sv_conn *c, uint32_t events)
{
	struct epoll_event	 ev;

	if (c->events == events)
		return;
	ev.events = events;
	ev.data.ptr = c;
	epoll_ctl(sv_ep, c->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD,
	    c->fd, &ev);
	c->events = events;
}

static void
sv_close(struct sv_conn *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else if (sv_conns == c)
		sv_conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}

/* Accepts and closes at once: the proxy's upstream leg ends as soon as it
 * is up, so a set-up benchmark measures set-ups. */
static void
sv_accept_close(struct sv_conn *l)
{
	int	 fd;

	while ((fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0 ||
	    errno == ECONNABORTED || errno == EINTR)
		if (fd >= 0)
			close(fd);
}

static void
sv_accept(struct sv_conn *l)
{
	struct sv_conn	*c;
	int		 fd, one = 1;

	for (;;) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == ECONNABORTED || errno == EINTR)
				continue;
			return;
		}
		if ((c = calloc(1, sizeof(*c))) == NULL) {
			close(fd);
			continue;
		}
		/* Like any origin tuned for keep-alive (nginx tcp_nodelay):
		 * the small tail of a response must not wait for the ACK of
		 * the data before it (Nagle), or every large response takes
		 * a delayed-ACK timeout (40 ms) through a proxy. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->next = sv_conns;
		if (sv_conns != NULL)
			sv_conns->prev = c;
		sv_conns = c;
		c->kind = l->kind == SV_L_HTTP ? SV_HTTP : l->kind ==
		    SV_L_ECHO ? SV_ECHO : SV_SINK;
		if ((c->in = malloc(c->kind == SV_ECHO ? sv_echo_len :
		    SV_BUF)) == NULL || (c->kind == SV_HTTP &&
		    (c->out = malloc(SV_OUT)) == NULL)) {
			sv_close(c);
			continue;
		}
		c->source_left = sv_source == 0 ? -1 : sv_source;
		sv_watch(c, c->kind == SV_SINK && sv_source >= 0 ?
		    EPOLLIN | EPOLLOUT : EPOLLIN);
	}
}

/* ---- http ------------------------------------------------------------ */

/* Fills c->out from the answer still to produce. */
static void
http_fill(struct sv_conn *c)
{
	size_t	 room, n;

	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	for (;;) {
		room = SV_OUT - c->out_len;
		if (!c->chunked) {
			n = c->body_left < room ? (size_t)c->body_left : room;
			if (n == 0)
				return;
			memcpy(c->out + c->out_len, sv_x, n);
			c->out_len += n;
			c->body_left -= n;
			continue;
		}
		if (c->body_left > 0 && room > 32) {
			n = c->body_left < room - 32 ? (size_t)c->body_left :
			    room - 32;
			c->out_len += (size_t)sprintf((char *)c->out +
			    c->out_len, "%zx\r\n", n);
			memcpy(c->out + c->out_len, sv_x, n);
			c->out_len += n;
			memcpy(c->out + c->out_len, "\r\n", 2);
			c->out_len += 2;
			c->body_left -= n;
			continue;
		}
		if (c->body_left == 0 && c->last_chunk && room >= 5) {
			memcpy(c->out + c->out_len, "0\r\n\r\n", 5);
			c->out_len += 5;
			c->last_chunk = false;
		}
		return;
	}
}

/* Parses one request head c->in[0..hl) and queues the answer head. */
static void
http_answer(struct sv_conn *c, size_t hl)
{
	const char	*p = (const char *)c->in, *sp, *path, *eol;
	char		 line[SV_BUF + 1];
	unsigned long long n = 0;
	bool		 head, ok = false, v10, eof = false;
	int		 len;

	head = hl > 5 && memcmp(p, "HEAD ", 5) == 0;
	sp = memchr(p, ' ', hl);
	path = sp != NULL ? sp + 1 : p;
	/* An absolute-form target names the origin first: skip it. */
	if (strncasecmp(path, "http://", 7) == 0) {
		path = memchr(path + 7, '/', hl - (size_t)(path + 7 - p));
		if (path == NULL)
			path = "/";
	}
	eol = memchr(p, '\n', hl);
	v10 = eol != NULL && eol - p >= 9 &&
	    memcmp(eol - 9, "HTTP/1.0", 8) == 0;
	memcpy(line, p, hl);
	line[hl] = '\0';
	c->close_after = strcasestr(line, "\nconnection: close") != NULL ||
	    (v10 && strcasestr(line, "\nconnection: keep-alive") == NULL);
	c->chunked = false;
	if (sscanf(path, "/bytes/%llu", &n) == 1)
		ok = true;
	else if (sscanf(path, "/chunked/%llu", &n) == 1)
		ok = c->chunked = !v10;
	else if (sscanf(path, "/eof/%llu", &n) == 1)
		ok = eof = true;
	if (!ok) {
		len = snprintf((char *)c->out, SV_OUT, "HTTP/1.1 404 Not Found"
		    "\r\nContent-Length: 0\r\n%s\r\n", c->close_after ?
		    "Connection: close\r\n" : "");
		c->body_left = 0;
	} else if (c->chunked) {
		len = snprintf((char *)c->out, SV_OUT, "HTTP/1.1 200 OK\r\n"
		    "Transfer-Encoding: chunked\r\n%s\r\n", c->close_after ?
		    "Connection: close\r\n" : "");
		c->body_left = head ? 0 : n;
		c->last_chunk = !head;
	} else if (eof) {
		/* Only the close tells the client the body ended, so the
		 * connection closes whatever the request said (HEAD too:
		 * the same head, then the close). */
		c->close_after = true;
		len = snprintf((char *)c->out, SV_OUT, "HTTP/1.1 200 OK\r\n"
		    "Connection: close\r\n\r\n");
		c->body_left = head ? 0 : n;
	} else {
		len = snprintf((char *)c->out, SV_OUT, "HTTP/1.1 200 OK\r\n"
		    "Content-Length: %llu\r\n%s%s\r\n", n, sv_date_field(),
		    c->close_after ? "Connection: close\r\n" : v10 ?
		    "Connection: keep-alive\r\n" : "");
		c->body_left = head ? 0 : n;
	}
	c->out_off = 0;
	c->out_len = (size_t)len;
	memmove(c->in, c->in + hl, c->in_len - hl);
	c->in_len -= hl;
}

/* Writes what is queued. Returns 1 when the answer is all out, 0 when the
 * socket is full, -1 to close. */
static int
http_flush(struct sv_conn *c)
{
	ssize_t	 n;

	for (;;) {
		http_fill(c);
		if (c->out_off == c->out_len)
			return 1;
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		    MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		c->out_off += (size_t)n;
	}
}

static void
http_on_event(struct sv_conn *c)
{
	const uint8_t	*e;
	ssize_t		 n;
	int		 rc;

	for (;;) {
		if (c->out_off < c->out_len || c->body_left > 0 ||
		    c->last_chunk) {
			rc = http_flush(c);
			if (rc < 0) {
				sv_close(c);
				return;
			}
			if (rc == 0) {
				sv_watch(c, EPOLLOUT);
				return;
			}
			if (c->close_after) {
				sv_close(c);
				return;
			}
		}
		e = memmem(c->in, c->in_len, "\r\n\r\n", 4);
		if (e != NULL) {
			http_answer(c, (size_t)(e - c->in) + 4);
			continue;
		}
		if (c->in_len == SV_BUF) {
			sv_close(c);
			return;
		}
		n = recv(c->fd, c->in + c->in_len, SV_BUF - c->in_len, 0);
		if (n < 0 && errno == EAGAIN) {
			sv_watch(c, EPOLLIN);
			return;
		}
		if (n <= 0) {
			sv_close(c);
			return;
		}
		c->in_len += (size_t)n;
	}
}

/* ---- echo, sink ------------------------------------------------------ */

static void
echo_on_event(struct sv_conn *c)
{
	ssize_t	 n;
	int	 i;

	for (i = 0; i < 16; i++) {
		if (c->out_off < c->in_len) {
			n = send(c->fd, c->in + c->out_off,
			    c->in_len - c->out_off, MSG_NOSIGNAL);
			if (n < 0 && errno == EAGAIN) {
				sv_watch(c, EPOLLOUT);
				return;
			}
			if (n < 0) {
				sv_close(c);
				return;
			}
			c->out_off += (size_t)n;
			if (c->out_off < c->in_len)
				continue;
		}
		c->out_off = c->in_len = 0;
		n = recv(c->fd, c->in, sv_echo_len, 0);
		if (n < 0 && errno == EAGAIN) {
			sv_watch(c, EPOLLIN);
			return;
		}
		if (n <= 0) {
			sv_close(c);
			return;
		}
		c->in_len = (size_t)n;
	}
	/* The last round's read is not sent yet: a request/response client
	 * (tunnel --rr) sends nothing more until it has it back. */
	sv_watch(c, c->out_off < c->in_len ? EPOLLOUT : EPOLLIN);
}

/* The source's share of one wake-up: sv_src_sends sends, fewer when the
 * socket fills. */
static void
source_send(struct sv_conn *c)
{
	ssize_t	 n;
	size_t	 len;
	int	 i;

	for (i = 0; i < sv_src_sends && c->source_left != 0; i++) {
		len = sv_src_write - c->src_off;
		if (c->source_left > 0 && (long long)len > c->source_left)
			len = (size_t)c->source_left;
		n = send(c->fd, sv_x, len, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN) {
			sv_close(c);
			return;
		}
		if (n < 0)
			break;
		if (c->source_left > 0)
			c->source_left -= n;
		c->src_off += (size_t)n;
		if (c->src_off == sv_src_write || !sv_src_carry)
			c->src_off = 0;
		/* Short: the send buffer is full, EAGAIN would follow. */
		if ((size_t)n < len)
			break;
	}
	if (c->source_left == 0)
		sv_watch(c, EPOLLIN);
}

static void
sink_on_event(struct sv_conn *c, uint32_t events)
{
	ssize_t	 n;
	int	 i;

	for (i = 0; i < 16 && (events & (EPOLLIN | EPOLLHUP | EPOLLERR));
	    i++) {
		n = recv(c->fd, c->in, SV_BUF, 0);
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			sv_close(c);
			return;
		}
	}
	if ((events & EPOLLOUT) && c->source_left != 0)
		source_send(c);
}

/* Echoes every pending datagram to its sender, a batch at a time. */
static void
udp_echo(int ufd, uint8_t *bufs)
{
	struct mmsghdr		 m[SV_BATCH];
	struct iovec		 iov[SV_BATCH];
	struct sockaddr_in	 from[SV_BATCH];
	int			 i, n;

	do {
		for (i = 0; i < SV_BATCH; i++) {
			iov[i].iov_base = bufs + (size_t)i * LG_UDP_DGRAM_MAX;
			iov[i].iov_len = LG_UDP_DGRAM_MAX;
			memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
			m[i].msg_hdr.msg_name = &from[i];
			m[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(ufd, m, SV_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (i = 0; i < n; i++)
			iov[i].iov_len = m[i].msg_len;
		/* A full send buffer drops the rest: UDP may. */
		sendmmsg(ufd, m, (unsigned)n, MSG_DONTWAIT);
	} while (n == SV_BATCH);
}

static int
sv_listen(struct sv_conn *l, enum sv_kind kind, int type,
    const union lg_addr *addr, const char *opt)
{
	l->kind = kind;
	l->fd = sv_socket(type, addr);
	if (l->fd < 0) {
		fprintf(stderr, "loadgen serve: %s port %u: %s\n", opt,
		    ntohs(addr->sa.sa_family == AF_INET6 ?
		    addr->v6.sin6_port : addr->v4.sin_port), strerror(errno));
		return -1;
	}
	sv_watch(l, EPOLLIN);
	return 0;
}

int
lg_serve_main(const struct lg_opts *o)
{
	struct sv_conn		 ls[5];
	struct epoll_event	 evs[LG_MAX_EVENTS];
	struct sigaction	 sa;
	struct sv_conn		*c;
	uint8_t			*ubufs = NULL;
	size_t			 xlen;
	int			 n, k;

	memset(ls, 0, sizeof(ls));
	sv_date = o->s_date;
	if (o->s_write > 0) {
		sv_src_write = sv_echo_len = (size_t)o->s_write;
		sv_src_sends = o->s_write < SV_OUT ? SV_OUT / (int)o->s_write :
		    1;
		sv_src_carry = true;
	}
	xlen = sv_src_write > SV_OUT ? sv_src_write : SV_OUT;
	if ((sv_x = malloc(xlen)) == NULL) {
		perror("loadgen: malloc");
		return 1;
	}
	memset(sv_x, 'x', xlen);
	sv_source = o->tcp_source;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sv_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if ((sv_ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		perror("loadgen: epoll_create1");
		return 1;
	}
	if ((o->have_s_http && sv_listen(&ls[0], SV_L_HTTP, SOCK_STREAM,
	    &o->s_http, "--http") < 0) ||
	    (o->have_s_echo && sv_listen(&ls[1], SV_L_ECHO, SOCK_STREAM,
	    &o->s_echo, "--tcp-echo") < 0) ||
	    (o->have_s_sink && sv_listen(&ls[2], SV_L_SINK, SOCK_STREAM,
	    &o->s_sink, "--tcp-sink") < 0) ||
	    (o->have_s_udp && sv_listen(&ls[3], SV_UDP, SOCK_DGRAM,
	    &o->s_udp, "--udp-echo") < 0) ||
	    (o->have_s_close && sv_listen(&ls[4], SV_L_CLOSE, SOCK_STREAM,
	    &o->s_close, "--tcp-close") < 0))
		return 1;
	if (o->have_s_udp &&
	    (ubufs = malloc((size_t)SV_BATCH * LG_UDP_DGRAM_MAX)) == NULL) {
		perror("loadgen: malloc");
		return 1;
	}
	while (!sv_stop) {
		n = epoll_wait(sv_ep, evs, LG_MAX_EVENTS, -1);
		for (k = 0; k < n; k++) {
			c = evs[k].data.ptr;
			switch (c->kind) {
			case SV_L_HTTP:
			case SV_L_ECHO:
			case SV_L_SINK:
				sv_accept(c);
				break;
			case SV_L_CLOSE:
				sv_accept_close(c);
				break;
			case SV_UDP:
				udp_echo(c->fd, ubufs);
				break;
			case SV_HTTP:
				http_on_event(c);
				break;
			case SV_ECHO:
				echo_on_event(c);
				break;
			case SV_SINK:
				sink_on_event(c, evs[k].events);
				break;
			}
		}
	}
	while (sv_conns != NULL)
		sv_close(sv_conns);
	for (k = 0; k < (int)(sizeof(ls) / sizeof(ls[0])); k++)
		if (ls[k].fd > 0)
			close(ls[k].fd);
	close(sv_ep);
	free(ubufs);
	free(sv_x);
	return 0;
}
