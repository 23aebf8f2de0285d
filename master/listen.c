/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Binding. The master owns every listening socket for its whole life and
 * never accepts on one. Each listener gets one SO_REUSEPORT socket per
 * worker slot so the kernel spreads connections without an accept lock,
 * and because closing a reuseport socket drops the connections queued on
 * it, a socket is carried over to every new configuration that still has
 * its address and slot, and closed only when that slot or address goes.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "master/listen.h"
#include "master/conf.h"

static int
listen_bind_one(const struct conf_listener *l)
{
	int	 fd, one = 1, err;

	fd = socket(l->addr.sa.ss_family,
	    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Small writes on a proxied leg must not wait for Nagle. Accepted
	 * sockets inherit TCP_NODELAY from the listener, which saves the
	 * workers a setsockopt per connection. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		goto fail;
	/* "[::]:port" must not take the IPv4 port too: an operator who wants
	 * both lists both. */
	if (l->addr.sa.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, (const struct sockaddr *)&l->addr.sa, l->addr.len) < 0 ||
	    listen(fd, l->backlog) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}

/* Index of the listener of <conf> with <l>'s address, or -1. */
static int
listen_find(const struct pt_config *conf, const struct conf_listener *l)
{
	int	 i;

	if (conf == NULL)
		return -1;
	for (i = 0; i < conf->nlisteners; i++)
		if (sockaddr_equal(&conf->listeners[i].addr, &l->addr))
			return i;
	return -1;
}

static bool
listen_owned_by(const struct listen_set *ls, int fd)
{
	int	 i;

	for (i = 0; i < ls->nlisteners * ls->nslots; i++)
		if (ls->fds[i] == fd)
			return true;
	return false;
}

int
listen_open(const struct pt_config *conf, struct listen_set *out,
    const struct pt_config *oldconf, const struct listen_set *old,
    char *err, size_t errsz)
{
	const struct conf_listener	*l;
	int				 i, s, o, fd, n;

	n = conf->nlisteners * conf->workers;
	out->nlisteners = conf->nlisteners;
	out->nslots = conf->workers;
	if ((out->fds = malloc(sizeof(int) * (size_t)n)) == NULL) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++)
		out->fds[i] = -1;
	for (i = 0; i < conf->nlisteners; i++) {
		l = &conf->listeners[i];
		o = old != NULL ? listen_find(oldconf, l) : -1;
		for (s = 0; s < conf->workers; s++) {
			if (o >= 0 && s < old->nslots) {
				fd = old->fds[o * old->nslots + s];
				/* A changed backlog applies in place. */
				listen(fd, l->backlog);
			} else if ((fd = listen_bind_one(l)) < 0) {
				snprintf(err, errsz, "bind %s: %s", l->address,
				    strerror(-fd));
				goto fail;
			}
			out->fds[i * out->nslots + s] = fd;
		}
	}
	return 0;
fail:
	for (i = 0; i < n; i++)
		if (out->fds[i] >= 0 &&
		    (old == NULL || !listen_owned_by(old, out->fds[i])))
			close(out->fds[i]);
	free(out->fds);
	out->fds = NULL;
	return -1;
}

void
listen_close_unused(struct listen_set *old, const struct listen_set *cur)
{
	int	 i;

	for (i = 0; i < old->nlisteners * old->nslots; i++)
		if (old->fds[i] >= 0 && !listen_owned_by(cur, old->fds[i]))
			close(old->fds[i]);
	free(old->fds);
	old->fds = NULL;
}

void
listen_close(struct listen_set *ls)
{
	int	 i;

	if (ls->fds == NULL)
		return;
	for (i = 0; i < ls->nlisteners * ls->nslots; i++)
		if (ls->fds[i] >= 0)
			close(ls->fds[i]);
	free(ls->fds);
	ls->fds = NULL;
}
