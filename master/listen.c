/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Binding. The master owns every listening socket for its whole life and
 * never accepts on one. Each listener gets one SO_REUSEPORT socket per
 * worker slot so the kernel spreads connections without an accept lock,
 * and because closing a reuseport socket drops the connections queued on
 * it, a socket is carried over to every new configuration that still has
 * its address and slot, and closed only when that slot or address goes.
 * A binary upgrade carries them over the same way, across an exec: the old
 * binary names them (listen_fmt_handover), the new one adopts them by
 * address and slot (listen_inherit, then listen_open) before binding.
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

/* A listening socket a previous binary handed over (binary upgrade). */
struct listen_inherited {
	int		 fd;
	int		 slot;
	struct pt_addr	 addr;		/* getsockname: the kernel's word */
	bool		 v6only;	/* IPV6_V6ONLY, for AF_INET6 */
	bool		 adopted;
};

static struct listen_inherited	*listen_inh;
static int			 listen_ninh;

static int
listen_bind_one(const struct conf_listener *l)
{
	int	 fd, one = 1, zero = 0, err;

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
	/* Set either way: the sysctl net.ipv6.bindv6only must not decide
	 * (conf.c says which "[::]:port" is dual-stack). */
	if (l->addr.sa.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, l->v6only ? &one : &zero, sizeof(one)) < 0)
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
		if (sockaddr_equal(&conf->listeners[i].addr, &l->addr) &&
		    conf->listeners[i].v6only == l->v6only)
			return i;
	return -1;
}

static bool
listen_owned_by(const struct listen_set *ls, int fd)
{
	int	 i;

	for (i = 0; i < ls->nlisteners * ls->nslots; i++)
		if (fd >= 0 && ls->fds[i] == fd)
			return true;
	return false;
}

/* Same family, address and port (padding and flow labels ignored). */
static bool
listen_same_addr(const struct pt_addr *a, const struct pt_addr *b)
{
	const struct sockaddr_in	*a4, *b4;
	const struct sockaddr_in6	*a6, *b6;

	if (a->sa.ss_family != b->sa.ss_family)
		return false;
	if (a->sa.ss_family == AF_INET) {
		a4 = (const struct sockaddr_in *)&a->sa;
		b4 = (const struct sockaddr_in *)&b->sa;
		return a4->sin_port == b4->sin_port &&
		    a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	}
	if (a->sa.ss_family == AF_INET6) {
		a6 = (const struct sockaddr_in6 *)&a->sa;
		b6 = (const struct sockaddr_in6 *)&b->sa;
		return a6->sin6_port == b6->sin6_port &&
		    a6->sin6_scope_id == b6->sin6_scope_id &&
		    memcmp(&a6->sin6_addr, &b6->sin6_addr,
		    sizeof(a6->sin6_addr)) == 0;
	}
	return sockaddr_equal(a, b);
}

/* An inherited descriptor for <l>'s address and <slot>, marked taken, or
 * -1. A listener on port 0 never matches: its socket had another port. */
static int
listen_adopt(const struct conf_listener *l, int slot)
{
	int	 i;

	for (i = 0; i < listen_ninh; i++)
		if (!listen_inh[i].adopted && listen_inh[i].slot == slot &&
		    listen_same_addr(&listen_inh[i].addr, &l->addr) &&
		    listen_inh[i].v6only == l->v6only) {
			listen_inh[i].adopted = true;
			return listen_inh[i].fd;
		}
	return -1;
}

/* A listening TCP socket of ours to take: its address and IPv6-only
 * flag, or -errno. */
static int
listen_inherit_check(int fd, struct pt_addr *out, bool *v6only)
{
	int		 v = 0;
	socklen_t	 vl = sizeof(v);

	if (fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl) < 0)
		return -errno;
	if (!v)
		return -EINVAL;
	vl = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl) < 0)
		return -errno;
	if (v != SOCK_STREAM)
		return -EPROTOTYPE;
	memset(out, 0, sizeof(*out));
	out->len = sizeof(out->sa);
	if (getsockname(fd, (struct sockaddr *)&out->sa, &out->len) < 0)
		return -errno;
	v = 0;
	vl = sizeof(v);
	if (out->sa.ss_family == AF_INET6 && getsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &v, &vl) < 0)
		return -errno;
	*v6only = v != 0;
	/* Ours now: not for the processes this binary starts, unless a
	 * later upgrade hands it over again. */
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return 0;
}

int
listen_inherit(const char *spec)
{
	const char	*p, *semi, *colon, *last;
	char		*end;
	long		 fd, slot;
	int		 n = 0, rc;

	for (p = spec; *p != '\0'; p = *semi ? semi + 1 : semi) {
		struct listen_inherited	*grown, *e;

		if ((semi = strchr(p, ';')) == NULL)
			semi = p + strlen(p);
		if (semi == p)
			continue;
		colon = memchr(p, ':', (size_t)(semi - p));
		for (last = semi - 1; last > p && *last != ':'; last--)
			;
		fd = colon != NULL ? strtol(p, &end, 10) : -1;
		slot = colon != NULL && last > colon ?
		    strtol(last + 1, NULL, 10) : -1;
		if (colon == NULL || end != colon || fd < 3 || fd > 1 << 20 ||
		    last <= colon || slot < 0 || slot >= CONF_MAX_WORKERS) {
			pt_log(PT_LOG_WARNING, "PORTICO_LISTENERS: ignoring "
			    "\"%.*s\"", (int)(semi - p), p);
			continue;
		}
		grown = realloc(listen_inh, sizeof(*grown) *
		    (size_t)(listen_ninh + 1));
		if (grown == NULL)
			return -ENOMEM;
		listen_inh = grown;
		e = &listen_inh[listen_ninh];
		if ((rc = listen_inherit_check((int)fd, &e->addr,
		    &e->v6only)) < 0) {
			pt_log_err(PT_LOG_WARNING, -rc, "PORTICO_LISTENERS: "
			    "descriptor %ld (%.*s)", fd, (int)(last - colon - 1),
			    colon + 1);
			continue;
		}
		e->fd = (int)fd;
		e->slot = (int)slot;
		e->adopted = false;
		listen_ninh++;
		n++;
	}
	return n;
}

int
listen_inherit_done(void)
{
	char	 a[INET6_ADDRSTRLEN + 8];
	int	 i, n = 0;

	for (i = 0; i < listen_ninh; i++) {
		if (listen_inh[i].adopted) {
			n++;
			continue;
		}
		pt_log(PT_LOG_NOTICE, "inherited socket %s (slot %d) is not "
		    "in the configuration: closed",
		    sockaddr_fmt((struct sockaddr *)&listen_inh[i].addr.sa, a,
		    sizeof(a)), listen_inh[i].slot);
		close(listen_inh[i].fd);
	}
	free(listen_inh);
	listen_inh = NULL;
	listen_ninh = 0;
	return n;
}

char *
listen_fmt_handover(const struct pt_config *conf, const struct listen_set *ls)
{
	char	*out, *grown;
	size_t	 len = 0, cap = 256;
	int	 l, s, n;

	if ((out = malloc(cap)) == NULL)
		return NULL;
	out[0] = '\0';
	for (l = 0; l < ls->nlisteners; l++)
		for (s = 0; s < ls->nslots; s++) {
			if (ls->fds[l * ls->nslots + s] < 0)
				continue;	/* a vacated slot */
			for (;;) {
				n = snprintf(out + len, cap - len, "%s%d:%s:%d",
				    len > 0 ? ";" : "",
				    ls->fds[l * ls->nslots + s],
				    conf->listeners[l].address, s);
				if (n >= 0 && (size_t)n < cap - len)
					break;
				if ((grown = realloc(out, cap * 2)) == NULL) {
					free(out);
					return NULL;
				}
				out = grown;
				cap *= 2;
			}
			len += (size_t)n;
		}
	return out;
}

void
listen_set_inheritable(const struct listen_set *ls)
{
	int	 i;

	for (i = 0; i < ls->nlisteners * ls->nslots; i++)
		if (ls->fds[i] >= 0)
			fcntl(ls->fds[i], F_SETFD, 0);
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
			if (o >= 0 && s < old->nslots &&
			    old->fds[o * old->nslots + s] >= 0) {
				fd = old->fds[o * old->nslots + s];
				/* A changed backlog applies in place. */
				listen(fd, l->backlog);
			} else if ((fd = listen_adopt(l, s)) >= 0) {
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

/*
 * A slot whose worker keeps dying waits out a back-off (master/spawn.c,
 * up to 30 s) with nobody accepting on its sockets, which keep taking
 * their share of new connections all the same. Vacated, they leave the
 * SO_REUSEPORT group: new connections go to the live slots, and with
 * tcp_migrate_req what was queued moves there too (without it, that
 * would be reset: so only then). The next worker of the slot gets fresh
 * sockets (listen_slot_bind).
 */
bool
listen_slot_vacate(const struct pt_config *conf, struct listen_set *ls,
    int slot)
{
	int	 v, l;

	if (slot >= ls->nslots || listen_slot_vacant(ls, slot))
		return false;
	if ((v = listen_migrate_read()) != 1) {
		if (v != 0 || !conf->tcp_migrate_req ||
		    listen_migrate_write() < 0)
			return false;
		pt_log(PT_LOG_NOTICE, "net.ipv4.tcp_migrate_req set to 1 "
		    "(tcp_migrate_req = true), so connections queued on a "
		    "crashing worker's sockets move to a live one");
	}
	for (l = 0; l < ls->nlisteners; l++) {
		close(ls->fds[l * ls->nslots + slot]);
		ls->fds[l * ls->nslots + slot] = -1;
	}
	return true;
}

bool
listen_slot_vacant(const struct listen_set *ls, int slot)
{
	int	 l;

	for (l = 0; l < ls->nlisteners; l++)
		if (ls->fds[l * ls->nslots + slot] < 0)
			return true;
	return false;
}

int
listen_slot_bind(const struct pt_config *conf, struct listen_set *ls,
    int slot, char *err, size_t errsz)
{
	int	 l, fd;

	for (l = 0; l < ls->nlisteners; l++) {
		if (ls->fds[l * ls->nslots + slot] >= 0)
			continue;
		if ((fd = listen_bind_one(&conf->listeners[l])) < 0) {
			snprintf(err, errsz, "bind %s: %s",
			    conf->listeners[l].address, strerror(-fd));
			return -1;
		}
		ls->fds[l * ls->nslots + slot] = fd;
	}
	return 0;
}
