/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/egress_floor: what the kernel alone charges for leaving from a
 * chosen IPv6 address, the floor under portico's egress (issue 32).
 *
 *	unshare -n sh -c 'ip link set lo up;
 *	    ip -6 route add local 2001:db8:1::/64 dev lo;
 *	    bench/egress_floor [-n CONNECTIONS] [-r ROUNDS]'
 *
 * One process, pinned by the caller. Per connection, as portico's dial
 * makes it: socket(), TCP_NODELAY, then in mode "prefix" IPV6_FREEBIND
 * and bind() to a random address of 2001:db8:1::/64 (port 0), in mode
 * "fixed" IPV6_FREEBIND, IP_BIND_ADDRESS_NO_PORT and bind() to
 * 2001:db8:1::5, in mode "none" nothing; then connect() to a listener on
 * [::1], accept(), a reset and close() both. The modes take turns, ROUNDS
 * times (default 7 of 5,000 connections), and
 * each reports the median CPU time (user + system, getrusage) per
 * connection and the ratio to "none": the µs an egress adds, with no
 * proxy around them. Output: one line per mode.
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

/* One connection of <m> to <to>, accepted on <lfd> and closed. */
static int
one(enum mode m, int lfd, const struct sockaddr_in6 *to)
{
	struct sockaddr_in6	 a;
	struct linger		 lin = { 1, 0 };
	int			 fd, afd, one = 1;

	if ((fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return fail("socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (m != MODE_NONE) {
		memset(&a, 0, sizeof(a));
		a.sin6_family = AF_INET6;
		inet_pton(AF_INET6, m == MODE_FIXED ? "2001:db8:1::5" :
		    "2001:db8:1::", &a.sin6_addr);
		if (m == MODE_PREFIX) {
			/* The host part: portico draws it from a keyed
			 * hash; any 64 bits do here. */
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
	}
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) < 0)
		return fail("connect");
	if ((afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return fail("accept");
	/* A reset, not a FIN: no TIME_WAIT, so "none" does not run out of
	 * ports from [::1] over the rounds. */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
	close(fd);
	close(afd);
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in6	 to;
	socklen_t		 len = sizeof(to);
	double			*per[MODE_COUNT], med[MODE_COUNT], t0;
	long			 n = 5000, rounds = 7, i, r;
	int			 lfd, m, c;

	while ((c = getopt(argc, argv, "n:r:")) != -1) {
		if (c == 'n')
			n = strtol(optarg, NULL, 10);
		else if (c == 'r')
			rounds = strtol(optarg, NULL, 10);
		else
			return 2;
	}
	if (n < 1 || n > 1000000 || rounds < 1 || rounds > 100) {
		fprintf(stderr, "egress_floor: -n 1..1000000, -r 1..100\n");
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
		if ((per[m] = calloc((size_t)rounds, sizeof(double))) == NULL)
			return 1;
	/* The modes take turns, so a slower minute hits them alike. */
	for (r = 0; r < rounds; r++)
		for (m = 0; m < MODE_COUNT; m++) {
			t0 = cpu_us();
			for (i = 0; i < n; i++)
				if (one((enum mode)m, lfd, &to) < 0)
					return 1;
			per[m][r] = (cpu_us() - t0) / (double)n;
		}
	for (m = 0; m < MODE_COUNT; m++) {
		qsort(per[m], (size_t)rounds, sizeof(double), cmp_double);
		med[m] = per[m][rounds / 2];
		printf("%-6s %.2f us of CPU per connection (median of %ld "
		    "rounds of %ld), %+.2f us, %.3f of none's connections per "
		    "CPU-second\n", mode_names[m], med[m], rounds, n,
		    med[m] - med[MODE_NONE], med[MODE_NONE] / med[m]);
	}
	return 0;
}
