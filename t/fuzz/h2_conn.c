/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: one HTTP/2 connection to an `http` listener, served by the
 * worker's own code (loop.c, accept.c, conn.c, http*.c, h2*.c, dial.c,
 * dns.c ...) in this process. The input is what the client sends, the
 * preface put in front unless it starts with it; it goes through a
 * loopback TCP connection to the listener in pieces whose sizes a
 * generator seeded from the input chooses (partial reads), the loop
 * turning without blocking between them. Then the client sends its FIN,
 * the clock (frozen, loop_set_time) jumps past every timeout, the client
 * resets its socket, and the loop drains. Checks:
 *
 * - nothing crashes (AddressSanitizer, UBSan under libFuzzer), and
 *   loop_once returns (it never blocks: a task is posted each round);
 * - after the drain no pt_conn is alive (conn_count), the active-connection
 *   counter, the buffers handed out (buf_in_use) and the pools' objects in
 *   use (pool_bytes_total) are back to what they were before the input;
 * - what the proxy wrote is whole HTTP/2 frames one after the other: the
 *   first a SETTINGS, none longer than the client's largest
 *   SETTINGS_MAX_FRAME_SIZE (16384 by default), only frame types a server
 *   sends, on stream 0 exactly when RFC 9113 says, of the fixed length
 *   their type has. Stray bytes in the stream (an HTTP/1.1 answer, a
 *   frame cut short and followed by another) break one of these.
 *
 * Nothing leaves loopback, nothing is asked of a real nameserver:
 * - every connect() of portico's code is linked to __wrap_connect
 *   (-Wl,--wrap=connect) which fails with ECONNREFUSED whatever the
 *   address (a 502 for every stream; a CONNECT tunnel never opens);
 * - the resolver's only server is a UDP socket of this harness on
 *   127.0.0.1, which answers every query NXDOMAIN at once; c-ares' own
 *   sockets (libcares, not wrapped) reach nothing else, cache_size 0;
 *   names in /etc/hosts (dns_hosts.c) resolve, and their connect fails;
 * - getaddrinfo is answered by t/fuzz/no_lookup.c (no name), so no
 *   NSS lookup can run; no module is loaded, no log is written (level
 *   below err), no file but the in-memory configuration is read.
 */
#include "config.h"

/* Before common/log.h, whose <stdnoreturn.h> turns fuzz.h's
 * __attribute__((noreturn)) into one that does not parse. */
#include "t/fuzz/fuzz.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/conf_types.h"
#include "common/counters.h"
#include "common/egress.h"
#include "common/log.h"
#include "master/conf.h"
#include "worker/accept.h"
#include "worker/buf.h"
#include "worker/conn.h"
#include "worker/dns.h"
#include "worker/h2.h"
#include "worker/http.h"
#include "worker/loop.h"
#include "worker/parent.h"
#include "worker/phase.h"
#include "worker/pool.h"
#include "worker/proxy_read.h"
#include "worker/relay.h"
#include "worker/req.h"
#include "worker/worker.h"
#include "worker/worker_self.h"
#include "t/fuzz/h2_frames.h"

#define FZ_MAX_INPUT	(256 * 1024)
#define FZ_PIECES	32	/* then the rest in one write */
#define FZ_ROUNDS	8	/* loop rounds after each event */
#define FZ_STEPS	8	/* clock jumps at the end */
#define FZ_STEP_MS	(10u * 60 * 1000)	/* past every timeout */

int	__real_connect(int fd, const struct sockaddr *sa, socklen_t len);
int	__wrap_connect(int fd, const struct sockaddr *sa, socklen_t len);

static struct pt_worker		 fz_worker;
static struct sockaddr_in	 fz_listen_sa;
static int			 fz_dns = -1;
static struct loop_task		 fz_tick;
static uint64_t			 fz_now = 1000000;
static unsigned			 fz_bufs0;
static size_t			 fz_pool0;
static uint64_t			 fz_ctr0[CTR_COUNT];

/* Every connect() of portico's code: refused, whatever the address. The
 * harness's own client connects with __real_connect. */
int
__wrap_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	(void)fd;
	(void)sa;
	(void)len;
	errno = ECONNREFUSED;
	return -1;
}

/* Posted before every loop_once, so that its epoll_wait never waits: the
 * clock is frozen (loop_set_time) and moves only when the harness says. */
static void
fz_on_tick(struct loop_task *t)
{
	(void)t;
}

/* Every query gets NXDOMAIN: its own bytes with QR and RCODE 3 set. */
static void
fz_dns_answer(void)
{
	struct sockaddr_storage	 from;
	socklen_t		 flen;
	uint8_t			 q[1500];
	ssize_t			 n;

	for (;;) {
		flen = sizeof(from);
		if ((n = recvfrom(fz_dns, q, sizeof(q), MSG_DONTWAIT,
		    (struct sockaddr *)&from, &flen)) < 0)
			return;
		if (n < 12)
			continue;
		q[2] |= 0x80;
		q[3] = 0x83;
		(void)sendto(fz_dns, q, (size_t)n, MSG_DONTWAIT,
		    (struct sockaddr *)&from, flen);
	}
}

/* One turn of the worker's loop, as worker_main turns it, then what the
 * harness plays: the nameserver, and the client reading. */
static void
fz_round(int fd, struct h2_frames *o)
{
	uint8_t		 b[65536];
	ssize_t		 n;

	loop_post(&fz_tick, fz_on_tick);
	FUZZ_CHECK(loop_once() == 0, "loop_once: %s", strerror(errno));
	if (conn_reap())
		accept_slot_freed();
	fz_dns_answer();
	while (fd >= 0 && (n = recv(fd, b, sizeof(b), MSG_DONTWAIT)) > 0)
		h2_frames_feed(o, b, (size_t)n);
}

static void
fz_rounds(int fd, struct h2_frames *o, int n)
{
	while (n-- > 0)
		fz_round(fd, o);
}

/* The listener's address is never bound: the harness listens on a port
 * of its own and hands accept_start that socket. */
static const char *
fz_conf_text(unsigned port)
{
	static char	 t[512];

	snprintf(t, sizeof(t),
	    "listeners = ( { address = \"127.0.0.1:9\"; protocol = \"http\";"
	    " http2 = true; } );\n"
	    "limits = { max_connections = 64; header_timeout = 10;"
	    " connect_timeout = 10; idle_timeout = 60; };\n"
	    "resolver = { servers = \"127.0.0.1:%u\"; cache_size = 0;"
	    " negative_ttl = 0; timeout = 1; };\n", port);
	return t;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_in	 sa = { .sin_family = AF_INET };
	struct pt_config	*conf;
	struct dns_conf		 dns;
	socklen_t		 len = sizeof(sa);
	char			 err[CONF_ERRSZ];
	const char		*text;
	int			 lfd;

	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	log_set_level(PT_LOG_ERR - 1);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fz_dns = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0 ||
	    bind(fz_dns, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fz_dns, (struct sockaddr *)&sa, &len) < 0)
		abort();
	text = fz_conf_text(ntohs(sa.sin_port));
	if ((conf = conf_load(fuzz_memfile((const uint8_t *)text,
	    strlen(text)), err)) == NULL) {
		fprintf(stderr, "h2_conn: %s\n", err);
		abort();
	}
	sa.sin_port = 0;
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) < 0 || bind(lfd, (struct sockaddr *)&sa,
	    sizeof(sa)) < 0 || listen(lfd, 16) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&fz_listen_sa, &len) < 0)
		abort();
	/* worker_main's order, without what concerns a process of its own
	 * (privileges, CPU, signals, the master's pipe) or modules. */
	fz_worker.conf = conf;
	worker_self_set(&fz_worker);
	if (counters_map(1) < 0)
		abort();
	counters_use_slot(0);
	if (loop_init() < 0)
		abort();
	loop_set_time(fz_now);
	conn_pool_init(conf->limits.max_connections, phase_init(conf), 0);
	{
		static const struct conn_upcalls up = {
			.run_phase = phase_run,
			.release_dirs = relay_release,
			.nofile = accept_pause_nofile,
			.release_route = parent_route_release,
		};
		conn_upcalls_set(&up);
	}
	buf_init(conf->buffer_size, conf->http.max_header_size + 4096,
	    2 * conf->limits.max_connections);
	relay_init(conf->relay);
	req_init(conf->limits.max_connections);
	proxy_read_init(conf->limits.max_connections);
	(void)egress_random_seed();
	http_init(conf, conf->limits.max_connections);
	h2_init(conf, conf->limits.max_connections);
	memset(&dns, 0, sizeof(dns));
	worker_dns_conf(conf, &dns);
	if (dns_init(&dns) < 0 || parent_init(conf) < 0 ||
	    accept_start(conf->listeners, &lfd, 1) < 0)
		abort();
	fz_bufs0 = buf_in_use();
	fz_pool0 = pool_bytes_total();
	counters_total(fz_ctr0);
	return 0;
}

/*
 * The client's socket, connected to the listener (the kernel completes
 * the handshake; the worker accepts at its next round), or -1 and errno.
 * Non-blocking, as everything the harness does with it is: a blocking
 * connect can take a second, which libFuzzer's alarm cuts short (EINTR).
 * That happens when the new connection's ports are those of a server
 * side still in TIME_WAIT (the worker closed first) whose timestamp check
 * drops the SYN: its retransmission comes a second later.
 */
static int
fz_connect(void)
{
	struct pollfd	 pfd;
	socklen_t	 len = sizeof(int);
	int		 fd, err = 0, i;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) < 0)
		return -1;
	if (__real_connect(fd, (struct sockaddr *)&fz_listen_sa,
	    sizeof(fz_listen_sa)) == 0)
		return fd;
	if (errno != EINPROGRESS)
		err = errno;
	pfd.fd = fd;
	pfd.events = POLLOUT;
	/* At most 5 s (a SYN retransmitted four times), whatever signals
	 * come meanwhile. */
	for (i = 0; err == 0 && i < 50; i++)
		if (poll(&pfd, 1, 100) > 0) {
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
				err = errno;
			if (err == 0)
				return fd;
		} else if (i == 49)
			err = ETIMEDOUT;
	close(fd);
	errno = err;
	return -1;
}

/* Writes <data> in pieces, the loop turning after each; a client whose
 * proxy stopped reading (its output is full, it closed) gives up. */
static void
fz_send(int fd, struct h2_frames *o, const uint8_t *p, size_t n,
    uint64_t *seed)
{
	size_t		 k;
	ssize_t		 w;
	int		 pieces = 0, stuck = 0;

	while (n > 0 && stuck < 4) {
		k = n;
		if (pieces++ < FZ_PIECES && (fuzz_rand(seed) & 3) != 0)
			k = 1 + fuzz_rand(seed) % (n < 64 ? n : 64);
		w = send(fd, p, k, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			stuck = 0;
		} else if (w < 0 && errno != EAGAIN)
			break;
		else
			stuck++;
		fz_rounds(fd, o, FZ_ROUNDS);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const uint8_t	 preface[] = H2_PREFACE;
	static const struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	struct h2_frames	 o = { .max_len = 16384 };
	uint64_t		 seed = len, ctr[CTR_COUNT];
	size_t			 plen = sizeof(preface) - 1;
	uint8_t			*in;
	int			 fd, i;

	if (fz_dns < 0)
		LLVMFuzzerInitialize(NULL, NULL);
	if (len > FZ_MAX_INPUT)
		return 0;
	for (size_t j = 0; j < len && j < 32; j++)
		seed = seed * 131 + data[j];
	if (len >= plen && memcmp(data, preface, plen) == 0)
		plen = 0;
	if ((in = malloc(plen + len + 1)) == NULL)
		abort();
	memcpy(in, preface, plen);
	memcpy(in + plen, data, len);
	o.max_len = h2_frames_max_len(in + sizeof(preface) - 1,
	    plen + len - (sizeof(preface) - 1));
	/* A failure here is the harness's (descriptors, ports), or a worker
	 * that leaks descriptors or stopped accepting: say which. */
	fd = fz_connect();
	FUZZ_CHECK(fd >= 0, "client socket: %s (%u connections open)",
	    strerror(errno), conn_count());
	fz_rounds(fd, &o, FZ_ROUNDS);
	fz_send(fd, &o, in, plen + len, &seed);
	free(in);
	/* The client is done: its FIN, then every timer due, then a reset
	 * (which also leaves no TIME_WAIT behind, run after run). */
	(void)shutdown(fd, SHUT_WR);
	fz_rounds(fd, &o, FZ_ROUNDS);
	for (i = 0; i < FZ_STEPS / 2 && conn_count() > 0; i++) {
		loop_set_time(fz_now += FZ_STEP_MS);
		fz_rounds(fd, &o, FZ_ROUNDS);
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
	close(fd);
	for (i = 0; i < FZ_STEPS && conn_count() > 0; i++) {
		fz_rounds(-1, &o, FZ_ROUNDS);
		loop_set_time(fz_now += FZ_STEP_MS);
	}
	fz_rounds(-1, &o, FZ_ROUNDS);
	counters_total(ctr);
	FUZZ_CHECK(conn_count() == 0, "%u connections alive after the "
	    "drain", conn_count());
	FUZZ_CHECK(ctr[CTR_ACTIVE] == fz_ctr0[CTR_ACTIVE], "%llu active "
	    "connections counted", (unsigned long long)(ctr[CTR_ACTIVE] -
	    fz_ctr0[CTR_ACTIVE]));
	FUZZ_CHECK(buf_in_use() == fz_bufs0, "%u buffers in use, %u before",
	    buf_in_use(), fz_bufs0);
	FUZZ_CHECK(pool_bytes_total() == fz_pool0, "%zu pool bytes in use, "
	    "%zu before", pool_bytes_total(), fz_pool0);
	return 0;
}
