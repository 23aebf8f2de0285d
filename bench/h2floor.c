/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/h2floor: the least a downloading tunnel costs per CPU-second when
 * its bytes leave as HTTP/2 DATA frames, against the same bytes relayed
 * as they are (issue 34). One loopback TCP flow, a source thread writing
 * into it and a sink thread draining the other leg (both on --load-cpu),
 * and between them this thread (on --relay-cpu), which moves the bytes
 * one of five ways:
 *
 *   splice         splice() in and out through a pipe of 256 KiB, as
 *                  worker/relay.c relays a bulk HTTP/1.1 tunnel;
 *   copy           recv() and send() through a buffer of --read bytes;
 *   copy-framed    recv() of --read bytes, then one writev of 9-byte
 *                  frame headers and the payloads where they are (no
 *                  copy in this process), frames of --frame bytes, as
 *                  worker/h2.c writes a tunnel's DATA since h2_seg;
 *   splice-framed  splice() in, then per frame a 9-byte write() into a
 *                  second pipe and a splice() of the payload from the
 *                  first pipe into it, then one splice() out;
 *   splice-header  splice() in, then per frame a send() of the header
 *                  with MSG_MORE and a splice() of the payload out.
 *
 * Nothing else: no event loop, no HTTP/2 library, no flow control; the
 * frame headers are zeros (the sink reads and drops). What it reports
 * is this thread's CPU time (RUSAGE_THREAD, which includes the loopback
 * softirq work its sends run), so MiB per CPU-second is the floor each
 * way can reach on this machine, and the system calls it made per MiB.
 *
 *   bench/h2floor MODE [--seconds S] [--frame N] [--read N]
 *                 [--relay-cpu N] [--load-cpu N]
 *
 * One JSON object on standard output.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define H2F_PIPE	(256 * 1024)	/* worker/relay.h RELAY_PIPE_SIZE */
#define H2F_BLOCK	(64 * 1024)	/* the source's writes */
#define H2F_MAX_READ	(1024 * 1024)
#define H2F_HEADER	9
#define H2F_IOV		1024	/* IOV_MAX: 512 frames a read at most */

enum h2f_mode { SPLICE, COPY, COPY_FRAMED, SPLICE_FRAMED, SPLICE_HEADER };

static const char *const h2f_names[] = {
	"splice", "copy", "copy-framed", "splice-framed", "splice-header"
};

struct h2f {
	enum h2f_mode	 mode;
	double		 seconds;
	size_t		 frame, read;
	int		 relay_cpu, load_cpu;
	int		 in, out;		/* the relay's two sockets */
	int		 src, sink;		/* the far ends */
	uint64_t	 bytes, calls;
	volatile bool	 stop;
};

static void
h2f_die(const char *what)
{
	fprintf(stderr, "h2floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void
h2f_pin(int cpu)
{
	cpu_set_t	 set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		h2f_die("sched_setaffinity");
}

/* A connected pair of loopback TCP sockets: *a dials, *b accepts. */
static void
h2f_pair(int *a, int *b)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 l;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((l = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    bind(l, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&sin, &len) < 0 ||
	    (*a = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    connect(*a, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    (*b = accept(l, NULL, NULL)) < 0)
		h2f_die("loopback pair");
	close(l);
}

static void *
h2f_source(void *arg)
{
	struct h2f		*f = arg;
	static char		 block[H2F_BLOCK];

	h2f_pin(f->load_cpu);
	while (!f->stop)
		if (send(f->src, block, sizeof(block), MSG_NOSIGNAL) < 0)
			break;
	return NULL;
}

static void *
h2f_sink(void *arg)
{
	struct h2f		*f = arg;
	static char		 buf[256 * 1024];

	h2f_pin(f->load_cpu);
	while (recv(f->sink, buf, sizeof(buf), 0) > 0)
		;
	return NULL;
}

/* Everything of <n> bytes from pipe <from> into <to>, however many calls
 * that takes. */
static void
h2f_splice_all(struct h2f *f, int from, int to, size_t n, unsigned flags)
{
	ssize_t	 k;

	while (n > 0) {
		f->calls++;
		if ((k = splice(from, NULL, to, NULL, n, SPLICE_F_MOVE |
		    flags)) <= 0)
			h2f_die("splice");
		n -= (size_t)k;
	}
}

/* Writes <iov> whole with as many writev calls as that takes. */
static void
h2f_writev_all(struct h2f *f, struct iovec *iov, int niov)
{
	ssize_t	 n;

	while (niov > 0) {
		f->calls++;
		if ((n = writev(f->out, iov, niov)) <= 0)
			h2f_die("writev");
		while (niov > 0 && (size_t)n >= iov[0].iov_len) {
			n -= (ssize_t)iov[0].iov_len;
			iov++;
			niov--;
		}
		if (niov > 0) {
			iov[0].iov_base = (char *)iov[0].iov_base + n;
			iov[0].iov_len -= (size_t)n;
		}
	}
}

/* The next frame's payload when <left> bytes are left. */
static size_t
h2f_frame(const struct h2f *f, size_t left)
{
	return left < f->frame ? left : f->frame;
}

/* One read's worth moved the chosen way: how many bytes. */
static size_t
h2f_round(struct h2f *f, int pipe1[2], int pipe2[2], char *buf)
{
	static const char	 hd[H2F_HEADER];
	static struct iovec	 iov[H2F_IOV];
	ssize_t			 got;
	size_t			 k, len, frames;
	int			 niov = 0;

	f->calls++;
	if (f->mode == COPY || f->mode == COPY_FRAMED)
		got = recv(f->in, buf, f->read, 0);
	else
		got = splice(f->in, NULL, pipe1[1], NULL, f->read,
		    SPLICE_F_MOVE);
	if (got <= 0)
		h2f_die("read");
	frames = ((size_t)got + f->frame - 1) / f->frame;
	switch (f->mode) {
	case SPLICE:
		h2f_splice_all(f, pipe1[0], f->out, (size_t)got, 0);
		break;
	case COPY:
		iov[0].iov_base = buf;
		iov[0].iov_len = (size_t)got;
		h2f_writev_all(f, iov, 1);
		break;
	case COPY_FRAMED:
		for (k = 0; k < (size_t)got; k += len) {
			len = h2f_frame(f, (size_t)got - k);
			iov[niov].iov_base = (void *)(uintptr_t)hd;
			iov[niov++].iov_len = H2F_HEADER;
			iov[niov].iov_base = buf + k;
			iov[niov++].iov_len = len;
		}
		h2f_writev_all(f, iov, niov);
		break;
	case SPLICE_FRAMED:
		for (k = 0; k < (size_t)got; k += len) {
			len = h2f_frame(f, (size_t)got - k);
			f->calls++;
			if (write(pipe2[1], hd, sizeof(hd)) != sizeof(hd))
				h2f_die("write to pipe");
			h2f_splice_all(f, pipe1[0], pipe2[1], len, 0);
		}
		h2f_splice_all(f, pipe2[0], f->out, (size_t)got +
		    H2F_HEADER * frames, 0);
		break;
	case SPLICE_HEADER:
		for (k = 0; k < (size_t)got; k += len) {
			len = h2f_frame(f, (size_t)got - k);
			f->calls++;
			if (send(f->out, hd, sizeof(hd), MSG_MORE |
			    MSG_NOSIGNAL) != sizeof(hd))
				h2f_die("send");
			h2f_splice_all(f, pipe1[0], f->out, len,
			    SPLICE_F_MORE);
		}
		break;
	}
	return (size_t)got;
}

static double
h2f_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
h2f_cpu(void)
{
	struct rusage	 ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void
h2f_usage(void)
{
	fprintf(stderr, "usage: bench/h2floor splice|copy|copy-framed|"
	    "splice-framed|splice-header\n"
	    "    [--seconds S (5)] [--frame N (16384)] [--read N (65536)]\n"
	    "    [--relay-cpu N (0)] [--load-cpu N (1)]\n");
	exit(2);
}

static long
h2f_num(const char *s, long lo, long hi)
{
	char	*end;
	long	 v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		h2f_usage();
	return v;
}

int
main(int argc, char **argv)
{
	static const struct option	 opts[] = {
		{ "seconds",	required_argument, NULL, 's' },
		{ "frame",	required_argument, NULL, 'f' },
		{ "read",	required_argument, NULL, 'r' },
		{ "relay-cpu",	required_argument, NULL, 'R' },
		{ "load-cpu",	required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 }
	};
	struct h2f	 f;
	pthread_t	 src, sink;
	int		 pipe1[2], pipe2[2], c, m;
	double		 t0, c0, wall, cpu, mib;
	char		*buf;

	memset(&f, 0, sizeof(f));
	f.seconds = 5;
	f.frame = 16384;
	f.read = 65536;
	f.load_cpu = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': f.seconds = (double)h2f_num(optarg, 1, 600); break;
		case 'f': f.frame = (size_t)h2f_num(optarg, 512, 16777215);
			break;
		case 'r': f.read = (size_t)h2f_num(optarg, 4096, H2F_MAX_READ);
			break;
		case 'R': f.relay_cpu = (int)h2f_num(optarg, 0, 1023); break;
		case 'L': f.load_cpu = (int)h2f_num(optarg, 0, 1023); break;
		default: h2f_usage();
		}
	}
	if (optind + 1 != argc || (f.read + f.frame - 1) / f.frame >
	    H2F_IOV / 2)
		h2f_usage();
	for (m = 0; m <= SPLICE_HEADER; m++)
		if (strcmp(argv[optind], h2f_names[m]) == 0)
			break;
	if (m > SPLICE_HEADER)
		h2f_usage();
	f.mode = (enum h2f_mode)m;
	if ((buf = malloc(H2F_MAX_READ)) == NULL)
		h2f_die("malloc");
	h2f_pair(&f.src, &f.in);
	h2f_pair(&f.out, &f.sink);
	if (pipe(pipe1) < 0 || pipe(pipe2) < 0)
		h2f_die("pipe");
	/* Refused past the user's quota: the default size still works. */
	(void)fcntl(pipe1[1], F_SETPIPE_SZ, H2F_PIPE);
	(void)fcntl(pipe2[1], F_SETPIPE_SZ, 4 * H2F_PIPE);
	if (pthread_create(&src, NULL, h2f_source, &f) != 0 ||
	    pthread_create(&sink, NULL, h2f_sink, &f) != 0)
		h2f_die("pthread_create");
	h2f_pin(f.relay_cpu);
	t0 = h2f_now();
	c0 = h2f_cpu();
	while (h2f_now() - t0 < f.seconds)
		f.bytes += h2f_round(&f, pipe1, pipe2, buf);
	cpu = h2f_cpu() - c0;
	wall = h2f_now() - t0;
	mib = (double)f.bytes / (1 << 20);
	printf("{\"mode\":\"%s\",\"frame\":%zu,\"read\":%zu,\"seconds\":%.3f,"
	    "\"cpu_s\":%.3f,\"mib\":%.1f,\"mib_per_s\":%.1f,"
	    "\"mib_per_cpu_s\":%.1f,\"calls_per_mib\":%.1f}\n",
	    h2f_names[f.mode], f.frame, f.read, wall, cpu, mib, mib / wall,
	    cpu > 0 ? mib / cpu : 0, mib > 0 ? (double)f.calls / mib : 0);
	fflush(stdout);
	/* The threads block in send() and recv(): the exit ends them. */
	f.stop = true;
	_exit(0);
}
