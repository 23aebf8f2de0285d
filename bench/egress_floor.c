/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/egress_floor: what the kernel alone charges for leaving from a
 * chosen IPv6 address, the floor under portico's egress (issue 32).
 *
 *	unshare -n sh -c 'ip link set lo up;
 *	    ip -6 route add local 2001:db8:1::/64 dev lo;
 *	    bench/egress_floor [-n CONNECTIONS] [-r ROUNDS] [-c rst|fin] [-v]'
 *
 * One process, pinned by the caller. Per connection, as portico's dial
 * makes it: socket(), TCP_NODELAY, then in mode "prefix" IPV6_FREEBIND
 * and bind() to a random address of 2001:db8:1::/64 (port 0), in mode
 * "fixed" IPV6_FREEBIND, IP_BIND_ADDRESS_NO_PORT and bind() to
 * 2001:db8:1::5, in mode "none" nothing; then connect() to a listener on
 * [::1] and accept(). How both ends close (-c):
 *
 *  rst (the default): a reset (SO_LINGER 0) and close() both. No TIME_WAIT
 *	and no TCP metrics saved: the least a connection can cost.
 *  fin: as a connection portico dialed for a client ends when the target
 *	closes first (bench/sidebyside's `loadgen serve --tcp-close`): the
 *	accepted end close()s (a FIN), the connecting end reads the EOF and
 *	close()s (a FIN back). The accepted end goes to TIME_WAIT, the
 *	connecting end through LAST_ACK, and each saves TCP metrics for its
 *	(source, destination) pair (tcp_update_metrics, unless the
 *	namespace's net.ipv4.tcp_no_metrics_save is 1): one new entry per
 *	connection when the source is a random address.
 *
 * What is counted: this process's CPU time (user + system, getrusage)
 * over all the connections of a mode in a round, divided by their number.
 * The process is both ends, so that is the connecting end's calls, the
 * accepting end's accept() and close(), and the kernel's work for every
 * packet of both: on loopback a packet is received in the context of the
 * call that sent it, so the accepting end's TIME_WAIT and metrics work
 * lands in the connecting end's close(), as it lands in portico's when
 * its target is on loopback.
 *
 * The modes take turns, ROUNDS times (default 7 of 5,000 connections).
 * Each reports the median CPU time per connection with the rounds'
 * min-max, and what it adds to "none": the median and min-max of the
 * per-round differences (each round's modes ran back to back, so a
 * slower minute of a shared machine falls on all of them). Output: a
 * line saying what was run, one line per mode, with -v each round's
 * figures, and with -c fin how many TIME_WAITs the namespace could not
 * keep (TcpExt TCPTimeWaitOverflow: beyond tcp_max_tw_buckets, the
 * accepted end closes without one, which is cheaper).
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

enum mode { MODE_NONE, MODE_PREFIX, MODE_FIXED, MODE_COUNT };
enum close_how { CLOSE_RST, CLOSE_FIN };

static const char *const mode_names[MODE_COUNT] = { "none", "prefix",
    "fixed" };

static double
cpu_us(void)
{
	struct rusage	 ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int
fail(const char *what)
{
	fprintf(stderr, "egress_floor: %s: %s\n", what, strerror(errno));
	return -1;
}

/* The source address of <m> bound to <fd>; 0, or -1 on failure. */
static int
bind_source(enum mode m, int fd)
{
	struct sockaddr_in6	 a;
	int			 one = 1;

	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	inet_pton(AF_INET6, m == MODE_FIXED ? "2001:db8:1::5" :
	    "2001:db8:1::", &a.sin6_addr);
	if (m == MODE_PREFIX) {
		/* The host part: portico draws it from a keyed hash; any
		 * 64 bits do here. */
		if (getrandom(&a.sin6_addr.s6_addr[8], 8, 0) != 8)
			return fail("getrandom");
	} else if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT,
	    &one, sizeof(one)) < 0) {
		return fail("IP_BIND_ADDRESS_NO_PORT");
	}
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one,
	    sizeof(one)) < 0)
		return fail("IPV6_FREEBIND");
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return fail("bind");
	return 0;
}

/* One connection of <m> to <to>, accepted on <lfd> and closed as <how>
 * says. 0, or -1 on failure. */
static int
one(enum mode m, enum close_how how, int lfd, const struct sockaddr_in6 *to)
{
	struct linger	 lin = { 1, 0 };
	int		 fd, afd, one = 1;
	char		 b;
	ssize_t		 n;

	if ((fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return fail("socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (m != MODE_NONE && bind_source(m, fd) < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) < 0)
		return fail("connect");
	if ((afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return fail("accept");
	if (how == CLOSE_RST) {
		/* A reset, not a FIN: no TIME_WAIT, so "none" does not run
		 * out of ports from [::1] over the rounds. */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
		close(fd);
		close(afd);
		return 0;
	}
	/* The target closes first; the connecting end learns it from the
	 * EOF, as a proxy's relay does, and closes in turn. */
	close(afd);
	if ((n = read(fd, &b, 1)) != 0) {
		if (n > 0)
			errno = EPROTO;
		return fail("read of the EOF");
	}
	close(fd);
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts <v> (<n> values) and returns its median; *lo_out and *hi_out get
 * its least and greatest. */
static double
median(double *v, long n, double *lo_out, double *hi_out)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	*lo_out = v[0];
	*hi_out = v[n - 1];
	return v[n / 2];
}

/* TcpExt's TCPTimeWaitOverflow in this namespace, or -1 when unreadable. */
static long long
tw_overflows(void)
{
	char		 names[8192], vals[8192], *np, *vp, *n, *v;
	long long	 r = -1;
	FILE		*f;

	if ((f = fopen("/proc/net/netstat", "r")) == NULL)
		return -1;
	while (fgets(names, sizeof(names), f) != NULL &&
	    fgets(vals, sizeof(vals), f) != NULL) {
		if (strncmp(names, "TcpExt:", 7) != 0)
			continue;
		n = strtok_r(names, " \n", &np);
		v = strtok_r(vals, " \n", &vp);
		while (n != NULL && v != NULL) {
			if (strcmp(n, "TCPTimeWaitOverflow") == 0)
				r = strtoll(v, NULL, 10);
			n = strtok_r(NULL, " \n", &np);
			v = strtok_r(NULL, " \n", &vp);
		}
	}
	fclose(f);
	return r;
}

/* A sysctl of this namespace as a number, or -1. */
static long
sysctl_long(const char *path)
{
	long	 v = -1;
	FILE	*f = fopen(path, "r");

	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void
usage(void)
{
	fprintf(stderr, "usage: egress_floor [-n 1..1000000] [-r 1..100] "
	    "[-c rst|fin] [-v]\n");
}

int
main(int argc, char **argv)
{
	struct sockaddr_in6	 to;
	socklen_t		 len = sizeof(to);
	enum close_how		 how = CLOSE_RST;
	double			*per[MODE_COUNT], *diff[MODE_COUNT];
	double			 med[MODE_COUNT], lo[MODE_COUNT], hi[MODE_COUNT];
	double			 dmed, dlo, dhi, t0;
	long			 n = 5000, rounds = 7, i, r, tw_max;
	long long		 tw0 = -1, tw1;
	int			 lfd, m, c, verbose = 0;

	while ((c = getopt(argc, argv, "n:r:c:v")) != -1) {
		if (c == 'n')
			n = strtol(optarg, NULL, 10);
		else if (c == 'r')
			rounds = strtol(optarg, NULL, 10);
		else if (c == 'c' && strcmp(optarg, "rst") == 0)
			how = CLOSE_RST;
		else if (c == 'c' && strcmp(optarg, "fin") == 0)
			how = CLOSE_FIN;
		else if (c == 'v')
			verbose = 1;
		else {
			usage();
			return 2;
		}
	}
	if (n < 1 || n > 1000000 || rounds < 1 || rounds > 100) {
		usage();
		return 2;
	}
	memset(&to, 0, sizeof(to));
	to.sin6_family = AF_INET6;
	to.sin6_addr = in6addr_loopback;
	if ((lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    bind(lfd, (struct sockaddr *)&to, sizeof(to)) < 0 ||
	    listen(lfd, 4096) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&to, &len) < 0)
		return fail("listener on [::1]") < 0 ? 1 : 0;
	for (m = 0; m < MODE_COUNT; m++)
		if ((per[m] = calloc((size_t)rounds, sizeof(double))) == NULL ||
		    (diff[m] = calloc((size_t)rounds, sizeof(double))) == NULL)
			return 1;
	if (how == CLOSE_FIN) {
		/* A TIME_WAIT lasts 60 s, longer than a run: past the
		 * namespace's limit the later connections would be cheaper
		 * than the first ones. Said, not refused. */
		tw_max = sysctl_long("/proc/sys/net/ipv4/tcp_max_tw_buckets");
		if (tw_max >= 0 && rounds * n * MODE_COUNT > tw_max)
			fprintf(stderr, "egress_floor: %ld connections, "
			    "tcp_max_tw_buckets %ld: %s close without a "
			    "TIME_WAIT\n", rounds * n * MODE_COUNT, tw_max,
			    tw_max == 0 ? "all" : "the later ones");
		tw0 = tw_overflows();
	}
	printf("close %s; tcp_no_metrics_save %ld; CPU counted: this "
	    "process, both ends and their loopback packets, per "
	    "connection\n", how == CLOSE_FIN ? "fin (the accepted end "
	    "first, then the connecting end on the EOF)" : "rst (both ends, "
	    "SO_LINGER 0)",
	    sysctl_long("/proc/sys/net/ipv4/tcp_no_metrics_save"));
	/* The modes take turns, so a slower minute hits them alike. */
	for (r = 0; r < rounds; r++)
		for (m = 0; m < MODE_COUNT; m++) {
			t0 = cpu_us();
			for (i = 0; i < n; i++)
				if (one((enum mode)m, how, lfd, &to) < 0)
					return 1;
			per[m][r] = (cpu_us() - t0) / (double)n;
		}
	if (verbose)
		for (r = 0; r < rounds; r++) {
			printf("round %ld:", r + 1);
			for (m = 0; m < MODE_COUNT; m++)
				printf(" %s %.2f", mode_names[m], per[m][r]);
			printf("\n");
		}
	/* The per-round differences before median() sorts the rounds. */
	for (m = 0; m < MODE_COUNT; m++)
		for (r = 0; r < rounds; r++)
			diff[m][r] = per[m][r] - per[MODE_NONE][r];
	for (m = 0; m < MODE_COUNT; m++)
		med[m] = median(per[m], rounds, &lo[m], &hi[m]);
	for (m = 0; m < MODE_COUNT; m++) {
		dmed = median(diff[m], rounds, &dlo, &dhi);
		printf("%-6s %.2f us of CPU per connection (median of %ld "
		    "rounds of %ld, %.2f-%.2f), %+.2f us (per round "
		    "%+.2f..%+.2f), %.3f of none's connections per "
		    "CPU-second\n", mode_names[m], med[m], rounds, n, lo[m],
		    hi[m], dmed, dlo, dhi, med[MODE_NONE] / med[m]);
	}
	if (how == CLOSE_FIN && tw0 >= 0 && (tw1 = tw_overflows()) >= 0)
		printf("TIME_WAIT overflows during the run: %lld\n",
		    tw1 - tw0);
	for (m = 0; m < MODE_COUNT; m++) {
		free(per[m]);
		free(diff[m]);
	}
	close(lfd);
	return 0;
}
