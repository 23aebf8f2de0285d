/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/h2tunnel: CONNECT tunnels as streams of one HTTP/2 connection to a
 * proxy, for bench/h2-bench (issue 34's tunnel figure). No load tool here
 * speaks CONNECT over HTTP/2 (h2load sends requests, loadgen HTTP/1.1), so
 * this is the client side of libnghttp2, driven the way loadgen drives
 * its sockets: one thread, one non-blocking socket, poll().
 *
 *   bench/h2tunnel --proxy HOST:PORT --target HOST:PORT [--streams N]
 *       [--duration S] [--warmup S] [--timeout S] [--send]
 *       [--window BYTES] [--conn-window BYTES] [--json]
 *
 * The connection opens with the client preface (prior knowledge, h2c: the
 * proxy's plain listener), then --streams CONNECT streams to --target
 * (`:method CONNECT`, `:authority` the target as given). Each stream
 * reads as fast as flow control lets it; nghttp2 hands the window back
 * (WINDOW_UPDATE) as the bytes are taken. With --send each stream also
 * sends DATA without end once its 200 came (to a sink: an upload; to an
 * echo: both ways). The client announces --window per stream (6 MiB) and
 * --conn-window for the connection (15 MiB), what Chromium announces to
 * an HTTP/2 proxy; on loopback a TCP tunnel's receive buffer grows to the
 * same order (tcp_rmem's 6 MiB).
 *
 * As loadgen's tunnel: the measured window starts --warmup s after every
 * stream is up and lasts --duration s; bytes count in the window only,
 * errors from the start. A stream answered with other than 2xx is a
 * "status" error, one reset or closed (or the connection, by GOAWAY or
 * EOF) before the end a "reset", a refused connection "refused", streams
 * not up within --timeout s "timeout" (one each). The report is
 * loadgen's (a human summary, or one line of JSON with --json: the same
 * keys for the figures, plus the streams up and the least and most one
 * stream moved down). Exit status: 0 without errors, 1 with, 2 on bad
 * usage.
 *
 * Deliberately not here: TLS (ALPN h2), several connections, requests
 * other than CONNECT, latency: a throughput driver only.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#define NS_PER_S	1000000000ull
#define H2T_MAX_STREAMS	1000
/* Frames are gathered up to this much before a send(), as portico does
 * (worker/h2.c's H2_OUT_HIGH): one system call per round, not per frame. */
#define H2T_OUT_HIGH	(64 * 1024)
/* Reads per poll() round before the sending side gets a turn. */
#define H2T_ROUNDS	16
#define H2T_IN_SIZE	(64 * 1024)

enum h2t_err { E_STATUS, E_SIZE, E_RESET, E_REFUSED, E_TIMEOUT, E_OTHER,
	E_MAX };
/* loadgen's names and order (bench/loadgen.c err_names). */
static const char *const err_names[E_MAX] = {
	"status", "size", "reset", "refused", "timeout", "other",
};

struct h2t_stream {
	int32_t		 id;
	int		 status;	/* :status, 0 until the answer */
	bool		 up;		/* answered 2xx */
	bool		 closed;
	uint64_t	 down, up_bytes;
	uint64_t	 down0;		/* down at the window's start */
};

struct h2t {
	/* options */
	char		 proxy[256], target[256];
	long		 streams;
	double		 duration, warmup, timeout;
	bool		 send, json;
	int32_t		 window, conn_window;
	/* state */
	int		 fd;
	nghttp2_session	*session;
	struct h2t_stream *st;
	long		 nup;		/* streams answered 2xx */
	bool		 ending;	/* past the window: closes ours */
	uint64_t	 down, up;	/* DATA payload bytes, all the run */
	uint64_t	 err[E_MAX];
	uint8_t		*out;		/* frames not yet written */
	size_t		 out_len, out_cap;
	bool		 blocked;	/* the socket took no more */
	bool		 eof;
	uint32_t	 goaway_code;
	bool		 goaway;
};

static volatile sig_atomic_t	 h2t_stop;
/* --send's DATA: zeros, as loadgen's tunnel payload. */
static uint8_t			 h2t_zeros[16384];

static uint64_t
now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static double
cpu_s(void)
{
	struct rusage	 ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	    ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static void
on_signal(int sig)
{
	(void)sig;
	h2t_stop = 1;
}

/* ---- nghttp2 callbacks ------------------------------------------------ */

static int
on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
    size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
    void *user)
{
	struct h2t_stream	*st;

	(void)flags;
	(void)user;
	if (f->hd.type != NGHTTP2_HEADERS || namelen != 7 ||
	    memcmp(name, ":status", 7) != 0)
		return 0;
	st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	if (st != NULL && valuelen == 3)
		st->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 +
		    (value[2] - '0');
	return 0;
}

static int
on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
	struct h2t		*t = user;
	struct h2t_stream	*st;

	if (f->hd.type == NGHTTP2_GOAWAY) {
		t->goaway = true;
		t->goaway_code = f->goaway.error_code;
		return 0;
	}
	if (f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_RESPONSE)
		return 0;
	st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	if (st == NULL || st->up)
		return 0;
	if (st->status < 200 || st->status > 299) {
		t->err[E_STATUS]++;
		nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, st->id,
		    NGHTTP2_CANCEL);
		return 0;
	}
	st->up = true;
	t->nup++;
	/* Nothing was sent before the tunnel was there. */
	if (t->send)
		nghttp2_session_resume_data(s, st->id);
	return 0;
}

static int
on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id,
    const uint8_t *data, size_t len, void *user)
{
	struct h2t		*t = user;
	struct h2t_stream	*st;

	(void)flags;
	(void)data;
	st = nghttp2_session_get_stream_user_data(s, id);
	if (st != NULL)
		st->down += len;
	t->down += len;
	return 0;
}

static int
on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *user)
{
	struct h2t		*t = user;
	struct h2t_stream	*st;

	if (f->hd.type != NGHTTP2_DATA)
		return 0;
	st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
	if (st != NULL)
		st->up_bytes += f->hd.length;
	t->up += f->hd.length;
	return 0;
}

static int
on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *user)
{
	struct h2t		*t = user;
	struct h2t_stream	*st;

	(void)code;
	st = nghttp2_session_get_stream_user_data(s, id);
	if (st == NULL || st->closed)
		return 0;
	st->closed = true;
	/* A stream refused with a status was counted then. */
	if (!t->ending && (st->up || st->status == 0))
		t->err[E_RESET]++;
	return 0;
}

/* The DATA of --send: a window's worth of zeros whenever nghttp2 asks;
 * nothing (deferred) before the tunnel is up, or without --send, so that
 * the HEADERS carry no END_STREAM (a CONNECT stream's end is the
 * tunnel's half-close). */
static ssize_t
data_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
    uint32_t *flags, nghttp2_data_source *src, void *user)
{
	struct h2t		*t = user;
	struct h2t_stream	*st;

	(void)src;
	(void)flags;
	st = nghttp2_session_get_stream_user_data(s, id);
	if (!t->send || st == NULL || !st->up || t->ending)
		return NGHTTP2_ERR_DEFERRED;
	if (len > sizeof(h2t_zeros))
		len = sizeof(h2t_zeros);
	memcpy(buf, h2t_zeros, len);
	return (ssize_t)len;
}

/* ---- the connection ---------------------------------------------------- */

static int
h2t_connect(struct h2t *t)
{
	struct addrinfo	 hints, *res;
	char		 host[256], *port;
	struct pollfd	 pfd;
	socklen_t	 sl = sizeof(int);
	int		 fd, one = 1, soerr = 0, rc;

	snprintf(host, sizeof(host), "%s", t->proxy);
	port = strrchr(host, ':');
	if (port == NULL) {
		fprintf(stderr, "h2tunnel: --proxy: expected host:port\n");
		return -2;
	}
	*port++ = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		fprintf(stderr, "h2tunnel: --proxy %s: %s\n", t->proxy,
		    gai_strerror(rc));
		return -2;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(res);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	rc = connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (rc < 0 && errno != EINPROGRESS) {
		soerr = errno;
	} else if (rc < 0) {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, (int)(t->timeout * 1000)) != 1)
			soerr = ETIMEDOUT;
		else
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	}
	if (soerr != 0) {
		t->err[soerr == ECONNREFUSED ? E_REFUSED : soerr == ETIMEDOUT ?
		    E_TIMEOUT : E_OTHER]++;
		fprintf(stderr, "h2tunnel: connect %s: %s\n", t->proxy,
		    strerror(soerr));
		close(fd);
		return -1;
	}
	t->fd = fd;
	return 0;
}

/* What nghttp2 has to send, gathered into t->out up to H2T_OUT_HIGH, then
 * written until the socket takes no more. -1 on a write error. */
static int
h2t_flush(struct h2t *t)
{
	const uint8_t	*p;
	ssize_t		 n;

	for (;;) {
		while (t->out_len < H2T_OUT_HIGH) {
			n = nghttp2_session_mem_send(t->session, &p);
			if (n < 0)
				return -1;
			if (n == 0)
				break;
			if (t->out_len + (size_t)n > t->out_cap) {
				uint8_t	*o = realloc(t->out,
				    t->out_len + (size_t)n);

				if (o == NULL)
					return -1;
				t->out = o;
				t->out_cap = t->out_len + (size_t)n;
			}
			memcpy(t->out + t->out_len, p, (size_t)n);
			t->out_len += (size_t)n;
		}
		if (t->out_len == 0)
			return 0;
		n = send(t->fd, t->out, t->out_len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				t->blocked = true;
				return 0;
			}
			return -1;
		}
		memmove(t->out, t->out + n, t->out_len - (size_t)n);
		t->out_len -= (size_t)n;
		if (t->out_len > 0) {
			t->blocked = true;
			return 0;
		}
	}
}

/* Everything the socket has (H2T_ROUNDS reads at most) into nghttp2.
 * -1 on EOF or an error. */
static int
h2t_read(struct h2t *t)
{
	static uint8_t	 in[H2T_IN_SIZE];
	ssize_t		 n;
	int		 i;

	for (i = 0; i < H2T_ROUNDS; i++) {
		n = recv(t->fd, in, sizeof(in), 0);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		if (n == 0) {
			t->eof = true;
			return -1;
		}
		if (nghttp2_session_mem_recv(t->session, in, (size_t)n) !=
		    n)
			return -1;
		if (n < (ssize_t)sizeof(in))
			return 0;
	}
	return 0;
}

static int
h2t_start(struct h2t *t)
{
	nghttp2_session_callbacks	*cb;
	nghttp2_data_provider		 dp;
	nghttp2_settings_entry		 set[] = {
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (uint32_t)t->window },
	};
	nghttp2_nv			 nv[2];
	long				 i;

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return -1;
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb,
	    on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb,
	    on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb,
	    on_frame_send);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb,
	    on_stream_close);
	if (nghttp2_session_client_new(&t->session, cb, t) != 0) {
		nghttp2_session_callbacks_del(cb);
		return -1;
	}
	nghttp2_session_callbacks_del(cb);
	if (nghttp2_submit_settings(t->session, NGHTTP2_FLAG_NONE, set,
	    sizeof(set) / sizeof(set[0])) != 0 ||
	    nghttp2_session_set_local_window_size(t->session,
	    NGHTTP2_FLAG_NONE, 0, t->conn_window) != 0)
		return -1;
	nv[0] = (nghttp2_nv){ (uint8_t *)":method", (uint8_t *)"CONNECT", 7,
	    7, NGHTTP2_NV_FLAG_NONE };
	nv[1] = (nghttp2_nv){ (uint8_t *)":authority", (uint8_t *)t->target,
	    10, strlen(t->target), NGHTTP2_NV_FLAG_NONE };
	memset(&dp, 0, sizeof(dp));
	dp.read_callback = data_read;
	for (i = 0; i < t->streams; i++) {
		t->st[i].id = nghttp2_submit_request(t->session, NULL, nv, 2,
		    &dp, &t->st[i]);
		if (t->st[i].id < 0)
			return -1;
	}
	return 0;
}

/* ---- the run ----------------------------------------------------------- */

/* One round: send what there is, wait up to <ms> for the socket, read.
 * -1 when the connection is gone. */
static int
h2t_round(struct h2t *t, int ms)
{
	struct pollfd	 pfd;

	if (h2t_flush(t) < 0)
		return -1;
	if (!nghttp2_session_want_read(t->session) &&
	    !nghttp2_session_want_write(t->session) && t->out_len == 0)
		return -1;
	pfd.fd = t->fd;
	pfd.events = POLLIN | (t->blocked ? POLLOUT : 0);
	pfd.revents = 0;
	if (poll(&pfd, 1, ms) < 0)
		return errno == EINTR ? 0 : -1;
	if (pfd.revents & POLLOUT)
		t->blocked = false;
	if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
		return h2t_read(t);
	return 0;
}

static void
h2t_report(const struct h2t *t, double dur, double wall, double cpu,
    uint64_t down, uint64_t up)
{
	double		 mdown = (double)down / (1 << 20) / dur;
	double		 mup = (double)up / (1 << 20) / dur;
	double		 pct = wall > 0 ? 100.0 * cpu / wall : 0;
	uint64_t	 smin = UINT64_MAX, smax = 0, errs = 0;
	long		 i;
	int		 k;

	for (i = 0; i < t->streams; i++) {
		uint64_t	 d = t->st[i].down - t->st[i].down0;

		if (d < smin)
			smin = d;
		if (d > smax)
			smax = d;
	}
	if (t->streams == 0)
		smin = 0;
	for (k = 0; k < E_MAX; k++)
		errs += t->err[k];
	if (t->json) {
		printf("{\"scenario\":\"h2tunnel\",\"proxy\":\"%s\","
		    "\"target\":\"%s\",\"connections\":1,\"streams\":%ld,"
		    "\"up_streams\":%ld,\"duration\":%g,\"requests\":0,"
		    "\"rate\":0,\"mib_s_up\":%.3f,\"mib_s_down\":%.3f,"
		    "\"stream_mib_down_min\":%.3f,\"stream_mib_down_max\":%.3f,"
		    "\"window\":%d,\"conn_window\":%d,\"send\":%s,"
		    "\"errors\":{", t->proxy, t->target, t->streams, t->nup,
		    dur, mup, mdown, (double)smin / (1 << 20),
		    (double)smax / (1 << 20), t->window, t->conn_window,
		    t->send ? "true" : "false");
		for (k = 0; k < E_MAX; k++)
			printf("%s\"%s\":%llu", k ? "," : "", err_names[k],
			    (unsigned long long)t->err[k]);
		printf("},\"goaway\":%s,\"loadgen_cpu_pct\":%.1f,"
		    "\"saturated\":%s}\n", t->goaway ? "true" : "false", pct,
		    pct > 95.0 ? "true" : "false");
		return;
	}
	printf("h2tunnel: %ld CONNECT streams (%ld up) on one HTTP/2 "
	    "connection to %s -> %s, measured %g s\n", t->streams, t->nup,
	    t->proxy, t->target, dur);
	printf("  %.3f MiB/s up, %.3f MiB/s down (one stream: %.1f to %.1f "
	    "MiB down)\n", mup, mdown, (double)smin / (1 << 20),
	    (double)smax / (1 << 20));
	printf("  errors: %llu (", (unsigned long long)errs);
	for (k = 0; k < E_MAX; k++)
		printf("%s%s %llu", k ? ", " : "", err_names[k],
		    (unsigned long long)t->err[k]);
	printf(")%s\n  CPU %.1f%% of one core%s\n",
	    t->goaway ? "; GOAWAY received" : "", pct,
	    pct > 95.0 ? " (saturated)" : "");
}

/* Bytes at the window's start, for it and for each stream. */
static void
h2t_mark(struct h2t *t, uint64_t *down0, uint64_t *up0)
{
	long	 i;

	*down0 = t->down;
	*up0 = t->up;
	for (i = 0; i < t->streams; i++)
		t->st[i].down0 = t->st[i].down;
}

/* Streams up (or the --timeout), the warm-up, the window; then the
 * report. Returns the exit status. */
static int
h2t_run(struct h2t *t)
{
	uint64_t	 t0 = now_ns(), w0 = 0, w1 = 0, now;
	uint64_t	 down0 = 0, up0 = 0;
	double		 c0 = cpu_s(), dur;
	bool		 gone = false, in_window = false;
	long		 i;
	int		 k;

	for (;;) {
		now = now_ns();
		if (w0 == 0 && (t->nup == t->streams || now - t0 >=
		    (uint64_t)(t->timeout * NS_PER_S))) {
			/* Streams neither up nor refused by now: one timeout
			 * each; the rest are measured all the same. */
			for (i = 0; i < t->streams; i++)
				if (!t->st[i].up && !t->st[i].closed &&
				    t->st[i].status == 0)
					t->err[E_TIMEOUT]++;
			w0 = now + (uint64_t)(t->warmup * NS_PER_S);
			w1 = w0 + (uint64_t)(t->duration * NS_PER_S);
		}
		if (w0 != 0 && !in_window && now >= w0) {
			h2t_mark(t, &down0, &up0);
			in_window = true;
		}
		if ((w1 != 0 && now >= w1) || h2t_stop || gone)
			break;
		if (h2t_round(t, 100) < 0) {
			gone = true;
			/* Every stream still open goes with the connection. */
			for (i = 0; i < t->streams; i++)
				if (!t->st[i].closed && t->st[i].status < 300)
					t->err[E_RESET]++;
			if (!t->eof && !t->goaway)
				t->err[E_OTHER]++;
		}
	}
	now = now_ns();
	t->ending = true;
	dur = t->duration;
	if (!in_window) {
		/* Stopped before the window: nothing measured. */
		h2t_mark(t, &down0, &up0);
	} else if (now < w1) {
		/* Stopped early: the rates are over the time it ran. */
		dur -= (double)(w1 - now) / NS_PER_S;
	}
	h2t_report(t, dur > 0 ? dur : t->duration,
	    (double)(now - t0) / NS_PER_S, cpu_s() - c0, t->down - down0,
	    t->up - up0);
	if (!gone) {
		nghttp2_session_terminate_session(t->session,
		    NGHTTP2_NO_ERROR);
		(void)h2t_flush(t);
	}
	for (k = 0; k < E_MAX; k++)
		if (t->err[k])
			return 1;
	return 0;
}

/* ---- the command line -------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
"usage: h2tunnel --proxy HOST:PORT --target HOST:PORT [--streams N (64)]\n"
"    [--duration S (5)] [--warmup S (1)] [--timeout S (10)] [--send]\n"
"    [--window BYTES (6291456)] [--conn-window BYTES (15728640)] [--json]\n"
"CONNECT streams on one HTTP/2 connection (prior knowledge) to the proxy,\n"
"each reading as fast as it can (--send: also writing without end).\n");
}

static int
num(const char *what, const char *s, double lo, double hi, double *out)
{
	char	*end;
	double	 v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "h2tunnel: --%s: expected a number in %g..%g, "
		    "got \"%s\"\n", what, lo, hi, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int
parse(struct h2t *t, int argc, char **argv)
{
	static const struct option	 lo[] = {
		{ "proxy",	 required_argument, NULL, 'p' },
		{ "target",	 required_argument, NULL, 't' },
		{ "streams",	 required_argument, NULL, 'n' },
		{ "duration",	 required_argument, NULL, 'd' },
		{ "warmup",	 required_argument, NULL, 'w' },
		{ "timeout",	 required_argument, NULL, 'T' },
		{ "window",	 required_argument, NULL, 'W' },
		{ "conn-window", required_argument, NULL, 'C' },
		{ "send",	 no_argument,	    NULL, 's' },
		{ "json",	 no_argument,	    NULL, 'j' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double	 v;
	int	 c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			snprintf(t->proxy, sizeof(t->proxy), "%s", optarg);
			break;
		case 't':
			snprintf(t->target, sizeof(t->target), "%s", optarg);
			break;
		case 'n':
			if (num("streams", optarg, 1, H2T_MAX_STREAMS, &v) < 0)
				return -1;
			t->streams = (long)v;
			break;
		case 'd':
			if (num("duration", optarg, 0.1, 3600,
			    &t->duration) < 0)
				return -1;
			break;
		case 'w':
			if (num("warmup", optarg, 0, 600, &t->warmup) < 0)
				return -1;
			break;
		case 'T':
			if (num("timeout", optarg, 0.1, 600, &t->timeout) < 0)
				return -1;
			break;
		case 'W':
			if (num("window", optarg, 1, NGHTTP2_MAX_WINDOW_SIZE,
			    &v) < 0)
				return -1;
			t->window = (int32_t)v;
			break;
		case 'C':
			if (num("conn-window", optarg,
			    NGHTTP2_INITIAL_WINDOW_SIZE,
			    NGHTTP2_MAX_WINDOW_SIZE, &v) < 0)
				return -1;
			t->conn_window = (int32_t)v;
			break;
		case 's':
			t->send = true;
			break;
		case 'j':
			t->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	if (optind != argc || t->proxy[0] == '\0' || t->target[0] == '\0') {
		fprintf(stderr, "h2tunnel: --proxy and --target are "
		    "required\n");
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct h2t		 t;
	struct sigaction	 sa;
	int			 rc;

	memset(&t, 0, sizeof(t));
	t.fd = -1;
	t.streams = 64;
	t.duration = 5;
	t.warmup = 1;
	t.timeout = 10;
	t.window = 6 * 1024 * 1024;
	t.conn_window = 15 * 1024 * 1024;
	if (parse(&t, argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	t.st = calloc((size_t)t.streams, sizeof(*t.st));
	if (t.st == NULL)
		return 1;
	rc = h2t_connect(&t);
	if (rc == -2)
		return 2;
	if (rc < 0) {
		h2t_report(&t, t.duration, 0, 0, 0, 0);
		return 1;
	}
	if (h2t_start(&t) < 0) {
		fprintf(stderr, "h2tunnel: nghttp2 session setup failed\n");
		return 1;
	}
	rc = h2t_run(&t);
	nghttp2_session_del(t.session);
	close(t.fd);
	free(t.out);
	free(t.st);
	return rc;
}
