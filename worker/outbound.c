/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a connection's outgoing sockets leave from: the egress of the
 * acl rule that allowed the transaction (pt_conn_set_egress), else the
 * listener's `egress`, else the kernel's choice. dial.c binds the TCP
 * leg here before connect(), udp_assoc.c the UDP relay's socket towards
 * destinations; target.c orders the resolved addresses by the families
 * the egress has, and the keep-alive pool asks whether a kept upstream
 * was bound where this request would be.
 *
 * An egress of one family never lets a connection of the other go out
 * from the kernel's address instead: the dial fails (502, SOCKS5 general
 * failure), logged. Nothing here allocates; "same" costs one
 * getsockname() per pick (the client leg's own address, which with a
 * PROXY header differs from pt_req.local).
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "worker/outbound.h"
#include "common/conf_types.h"
#include "common/log.h"
#include "worker/loop.h"

/* What is logged at most once a minute per worker, each. */
enum outbound_warn {
	OUTBOUND_WARN_FAMILY = 0,
	OUTBOUND_WARN_BIND,
	OUTBOUND_WARN_COUNT
};

#define OUTBOUND_WARN_MS	60000

static uint64_t	 outbound_warned[OUTBOUND_WARN_COUNT];
/* A bind said EADDRNOTAVAIL and FREEBIND made it work: set it first. */
static bool	 outbound_freebind;
static unsigned	 outbound_unsaid[OUTBOUND_WARN_COUNT];

const struct pt_egress *
outbound_egress(const struct pt_conn *c)
{
	if (c->c_egress != NULL)
		return c->c_egress;
	return c->c_listener != NULL ? c->c_listener->egress : NULL;
}

/* What egress_pick reads of <c>; <local> is storage for "same". */
static void
outbound_ctx(const struct pt_conn *c, const struct pt_egress *e,
    struct egress_ctx *x, struct sockaddr_storage *local)
{
	socklen_t	 len = sizeof(*local);

	memset(x, 0, sizeof(*x));
	memset(local, 0, sizeof(*local));
	/* Known already when modules are loaded, and for an HTTP/2 stream
	 * (whose client side has no socket to ask): its connection's. */
	if (e->same && c->c_req.local.ss_family != AF_UNSPEC)
		x->local = (const struct sockaddr *)&c->c_req.local;
	else if (e->same && getsockname(c->c_side[SIDE_CLIENT].io.fd,
	    (struct sockaddr *)local, &len) == 0)
		x->local = (const struct sockaddr *)local;
	x->peer = (const struct sockaddr *)&c->c_req.peer;
	x->user = c->c_req.user.ptr;
	x->user_len = c->c_req.user.len;
}

/* The families <c>'s egress <e> can leave from (EGRESS_FAM_*). */
static unsigned
outbound_families(const struct pt_conn *c, const struct pt_egress *e)
{
	struct egress_ctx	 x;
	struct sockaddr_storage	 local;

	outbound_ctx(c, e, &x, &local);
	return egress_families(e, x.local);
}

static unsigned
outbound_fam_bit(const struct pt_addr *a)
{
	struct pt_addr	 u;

	sockaddr_unmap((const struct sockaddr *)&a->sa, &u);
	return u.sa.ss_family == AF_INET ? EGRESS_FAM_V4 :
	    u.sa.ss_family == AF_INET6 ? EGRESS_FAM_V6 : 0;
}

static void
outbound_fail(struct pt_conn *c, const struct pt_egress *e,
    enum outbound_warn kind, int err, int family,
    const union egress_addr *a)
{
	char		 ip[INET6_ADDRSTRLEN];
	uint64_t	 now = loop_now();

	pt_counter_add(e->ctr_failures, 1);
	if (outbound_warned[kind] != 0 &&
	    now - outbound_warned[kind] < OUTBOUND_WARN_MS) {
		outbound_unsaid[kind]++;
		return;
	}
	outbound_warned[kind] = now;
	if (kind == OUTBOUND_WARN_FAMILY)
		pt_clog(c, PT_LOG_WARNING, "egress \"%s\" has no %s address: "
		    "not connecting to an %s destination from another one "
		    "(%u more like this in the last minute)", e->text,
		    family == AF_INET6 ? "IPv6" : "IPv4",
		    family == AF_INET6 ? "IPv6" : "IPv4",
		    outbound_unsaid[kind]);
	else
		pt_clog(c, PT_LOG_WARNING, "egress \"%s\": binding %s: %s "
		    "(%u more like this in the last minute)", e->text,
		    egress_addr_fmt(a, ip, sizeof(ip)), strerror(err),
		    outbound_unsaid[kind]);
	outbound_unsaid[kind] = 0;
}

/* IP_FREEBIND (IPV6_FREEBIND): binding to an address the host has
 * not configured. */
static int
outbound_set_freebind(int fd, int family)
{
	int	 one = 1;

	if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND,
	    &one, sizeof(one)) == 0)
		return 0;
	return setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
}

/*
 * Whether <e> gives each connection of <family> an address of its own: a
 * random pick in a prefix of 2^32 addresses or more. Its port space is
 * then the connection's alone, so the bind may take a port at once and
 * IP_BIND_ADDRESS_NO_PORT (one system call more per connection) would
 * save no port. A fixed address, "same", a stable pick or a small prefix
 * shares its ports with other connections and needs it.
 */
static bool
outbound_unique(const struct pt_egress *e, int family)
{
	return family == AF_INET6 && e->plen > 0 && e->plen <= 96 &&
	    e->stable == EGRESS_RANDOM;
}

int
outbound_bind(struct pt_conn *c, int fd, int family, bool stream)
{
	const struct pt_egress	*e = outbound_egress(c);
	struct sockaddr_storage	 local;
	struct egress_ctx	 x;
	union egress_addr	 a;
	int			 one = 1, rc, err;

	if (stream)
		c->c_egress_shown = false;
	if (e == NULL) {
		memset(&c->c_up_local, 0, sizeof(c->c_up_local));
		c->c_egress_used = NULL;
		return 0;
	}
	outbound_ctx(c, e, &x, &local);
	if ((rc = egress_pick(e, family, &x, &a)) < 0) {
		outbound_fail(c, e, OUTBOUND_WARN_FAMILY, -rc, family, NULL);
		return rc;
	}
	rc = 0;
	if (stream && !outbound_unique(e, family))
		rc = setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one,
		    sizeof(one));
	if (rc == 0 && (!outbound_freebind || (rc = outbound_set_freebind(fd,
	    family)) == 0))
		rc = bind(fd, &a.sa, family == AF_INET6 ? sizeof(a.v6) :
		    sizeof(a.v4));
	/* An address of a routed prefix need not be on an interface, only
	 * routed to the host: the first bind that says so turns FREEBIND on
	 * for this worker's later ones (a route "local PREFIX dev lo" makes
	 * every address local, and then no bind needs it). */
	if (rc < 0 && errno == EADDRNOTAVAIL && !outbound_freebind &&
	    (rc = outbound_set_freebind(fd, family)) == 0) {
		outbound_freebind = true;
		rc = bind(fd, &a.sa, family == AF_INET6 ? sizeof(a.v6) :
		    sizeof(a.v4));
	}
	if (rc < 0) {
		err = errno;
		outbound_fail(c, e, OUTBOUND_WARN_BIND, err, family, &a);
		return -err;
	}
	c->c_up_local = a;
	c->c_egress_used = e;
	return 0;
}

int
outbound_order(const struct pt_conn *c, struct pt_addr *addrs, int n)
{
	const struct pt_egress	*e = outbound_egress(c);
	unsigned		 fams;
	int			 i, k = 0;

	if (e == NULL || n <= 1)
		return n;
	fams = outbound_families(c, e);
	if (fams == (EGRESS_FAM_V4 | EGRESS_FAM_V6) || fams == 0)
		return n;
	/* The resolver's order holds within the family. */
	for (i = 0; i < n; i++)
		if (outbound_fam_bit(&addrs[i]) & fams)
			addrs[k++] = addrs[i];
	return k > 0 ? k : 1;
}

int
outbound_first(const struct pt_conn *c, const struct pt_addr *addrs, int n)
{
	const struct pt_egress	*e = outbound_egress(c);
	unsigned		 fams;
	int			 i;

	if (e == NULL)
		return 0;
	fams = outbound_families(c, e);
	for (i = 0; i < n; i++)
		if (outbound_fam_bit(&addrs[i]) & fams)
			return i;
	return 0;
}

bool
outbound_fits(const void *arg, const struct pt_addr *to,
    const union egress_addr *local)
{
	const struct pt_conn	*c = arg;
	const struct pt_egress	*e = outbound_egress(c);
	struct sockaddr_storage	 ls;
	struct egress_ctx	 x;
	union egress_addr	 want;
	struct pt_addr		 u;

	if (e == NULL)
		return local->sa.sa_family == 0;
	sockaddr_unmap((const struct sockaddr *)&to->sa, &u);
	/* A random address per connection is what the operator asked for:
	 * a kept one would be a second use of it. */
	if (u.sa.ss_family == AF_INET6 && e->plen > 0 &&
	    e->stable == EGRESS_RANDOM)
		return false;
	outbound_ctx(c, e, &x, &ls);
	if (egress_pick(e, u.sa.ss_family, &x, &want) < 0)
		return false;
	return egress_addr_equal(&want, local);
}

void
outbound_established(struct pt_conn *c, bool fresh)
{
	c->c_egress_shown = true;
	if (fresh && c->c_egress_used != NULL &&
	    c->c_up_local.sa.sa_family != 0)
		pt_counter_add(c->c_egress_used->ctr_connects, 1);
}

/* ---- the module ABI (1.6) ------------------------------------------- */

void
pt_conn_set_egress(struct pt_conn *c, const struct pt_egress *e)
{
	c->c_egress = e;
}

const struct sockaddr *
pt_conn_egress(struct pt_conn *c)
{
	return c->c_egress_shown && c->c_up_local.sa.sa_family != 0 ?
	    &c->c_up_local.sa : NULL;
}
