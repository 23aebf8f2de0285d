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
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "master/listen.h"
#include "common/log.h"
#include "master/conf.h"

/* Linux >= 5.14; per network namespace, writable by root there. */
#define LISTEN_MIGRATE_SYSCTL	"/proc/sys/net/ipv4/tcp_migrate_req"

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

uint64_t
listen_kept_mask(const struct listen_set *old, const struct listen_set *cur,
    int slot)
{
	uint64_t	 kept = 0;
	int		 l;

	if (old->fds == NULL || slot >= old->nslots)
		return 0;
	for (l = 0; l < old->nlisteners && l < 64; l++)
		if (listen_owned_by(cur, old->fds[l * old->nslots + slot]))
			kept |= (uint64_t)1 << l;
	return kept;
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

/* The sysctl's value (0 or 1), or -errno (-ENOENT: the kernel lacks it). */
static int
listen_migrate_read(void)
{
	char	 c;
	int	 fd, n;

	if ((fd = open(LISTEN_MIGRATE_SYSCTL, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = (int)read(fd, &c, 1);
	n = n == 1 ? (c == '1') : n < 0 ? -errno : -EIO;
	close(fd);
	return n;
}

static int
listen_migrate_write(void)
{
	int	 fd, rc = 0;

	if ((fd = open(LISTEN_MIGRATE_SYSCTL, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (write(fd, "1\n", 2) != 2)
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * A socket a reload removes (a slot gone) is closed once its old worker
 * has accepted what was queued; a connection that completes its handshake
 * in between, or is still in SYN_RECV, is reset by that close. With
 * tcp_migrate_req the kernel moves those to another socket of the same
 * SO_REUSEPORT group, which a live worker serves. The setting is the
 * network namespace's, not ours: it is set only when a reload is about to
 * remove slots and the operator allows it, and never put back (another
 * listener of the host may by then rely on it).
 */
void
listen_migrate(const struct pt_config *conf, int old_nslots)
{
	int	 v, rc = 0;

	if (conf->workers >= old_nslots)
		return;
	if ((v = listen_migrate_read()) == 1)
		return;
	if (v == 0 && conf->tcp_migrate_req) {
		if ((rc = listen_migrate_write()) == 0) {
			pt_log(PT_LOG_NOTICE, "workers %d -> %d: "
			    "net.ipv4.tcp_migrate_req set to 1 "
			    "(tcp_migrate_req = true), so connections queued "
			    "on the removed slots' sockets move to a live one",
			    old_nslots, conf->workers);
			return;
		}
	}
	if (v < 0)
		pt_log_err(PT_LOG_WARNING, -v, "workers %d -> %d: reading "
		    "net.ipv4.tcp_migrate_req (Linux >= 5.14): connections "
		    "reaching the removed slots while they drain may be reset",
		    old_nslots, conf->workers);
	else if (rc < 0)
		pt_log_err(PT_LOG_WARNING, -rc, "workers %d -> %d: "
		    "net.ipv4.tcp_migrate_req is 0 and cannot be set: "
		    "connections reaching the removed slots while they drain "
		    "may be reset", old_nslots, conf->workers);
	else
		pt_log(PT_LOG_WARNING, "workers %d -> %d: "
		    "net.ipv4.tcp_migrate_req is 0 (tcp_migrate_req = false): "
		    "connections reaching the removed slots while they drain "
		    "may be reset", old_nslots, conf->workers);
}
