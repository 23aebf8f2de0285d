/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The SOCKS5 UDP relay (RFC 1928 7). Each association has a client-facing
 * socket, bound on the address the client reached the proxy at, and one
 * remote-facing socket per address family, opened on first use. Keeping
 * the two apart means only the client's own address can make us send,
 * and only hosts we sent to know the port replies come back on.
 *
 * Datagrams move in batches: recvmmsg takes up to UDP_BATCH at once into
 * per-worker buffers big enough for any datagram (65,507 bytes of payload
 * plus the header), and sendmmsg sends the batch on. Client datagrams are
 * sent from where they were received (header skipped); replies are read
 * UDP_HDR_MAX bytes into their buffer, so the header is written in front
 * of them without a copy.
 *
 * The remote-facing sockets leave from the association's egress
 * (outbound.c), bound with port 0; a family the egress has no address
 * of is not sent to (its datagrams are dropped as "send").
 *
 * A destination given by name is resolved through the worker's resolver;
 * while a name is looked up one datagram waits (later ones are dropped:
 * UDP loses, clients retry), and cached names cost nothing.
 *
 * With a module hooking PT_PHASE_DATAGRAM every destination is judged
 * before a datagram goes there: an address once, a name twice (the name
 * before it is resolved, then the name with the address it resolved to),
 * so a rule on the destination address holds for names too. Verdicts
 * are kept in a small cache in the association (least recently used
 * goes first), so a destination costs hooks once, not per datagram.
 *
 * Nothing here allocates per association or per datagram once the worker
 * has warmed up: associations and parked datagrams come from per-worker
 * pools (worker/pool.h), the batch buffers are made once.
 *
 * A module with a datagram callback (pt_module.datagram, ABI 1.3) judges
 * every datagram, each direction, once it is known to be the client's
 * (or a reply that fits): a refused one is dropped and counted
 * (CTR_UDP_DROP_MODULE) and costs no budget. Whether any such module
 * applies is decided once per association; without one the relay reads
 * a flag per datagram and calls nothing.
 *
 * Byte budgets (pt_conn_budget_set) count payload bytes of the datagrams
 * relayed, PT_DIR_UP from the client. A datagram is read whole or not at
 * all: a limited direction reads one at a time, the last one may go past
 * the budget (conn.c keeps that as debt), and a spent direction's sockets
 * leave the (level-triggered) epoll set until the module adds more.
 *
 * Through a parent (udp_assoc_via: the association portico opened with a
 * SOCKS5 parent, worker/parent_dial.c) every datagram goes to the
 * parent's relay with a SOCKS5 UDP header naming its destination, sent
 * from the same remote-facing socket (so from the same egress), and only
 * the relay may answer: its datagrams already carry the header naming
 * their source, and reach the client as they came. The client's
 * datagrams are checked and judged as they are without a parent; a name
 * goes to the parent as the name (it resolves it, so DATAGRAM judges the
 * name only, as DIAL does for a CONNECT through a parent) unless the
 * parent has resolve = "local".
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/udp_assoc.h"
#include "common/counters.h"
#include "common/log.h"
#include "worker/dns.h"
#include "worker/loop.h"
#include "worker/outbound.h"
#include "worker/parent_wire.h"
#include "worker/phase.h"
#include "worker/pool.h"
#include "worker/socks_parse.h"
#include "worker/upstream.h"

#define UDP_BATCH	16
#define UDP_HDR_MAX	22	/* RSV RSV FRAG ATYP + IPv6 + port */
#define UDP_DGRAM_MAX	65535
#define UDP_SLOT	(UDP_HDR_MAX + UDP_DGRAM_MAX + 256)
/* Parked datagrams kept free after a burst of lookups: each is 64 KiB. */
#define UDP_PEND_KEEP	8
/* Destinations whose DATAGRAM verdict an association remembers. A client
 * talking to more at once gets the oldest judged again: hooks cost more,
 * nothing is let through unjudged. */
#define UDP_DEST_CACHE	8
#define UDP_NAME_MAX	255
/* Addresses an association remembers having sent to: replies from them
 * reach the client (udp_replies "contacted"). A client sending to more
 * at once forgets the least recently used, whose replies are then
 * dropped until it sends there again. */
#define UDP_PEERS	32

/* udp_dest.flags */
#define UDP_DEST_USED		0x01
#define UDP_DEST_OK		0x02	/* the address check passed */
#define UDP_DEST_NAME_OK	0x04	/* name: the name check passed */
#define UDP_DEST_ADDR		0x08	/* name: addr holds the address judged */

struct udp_assoc;

/*
 * One judged destination: an address and port (name_len 0), or a name and
 * port with the verdict on the name and, once it resolved, the address it
 * resolved to and the verdict on both. A name that resolves to another
 * address later is judged again with it.
 */
struct udp_dest {
	uint32_t		 used;		/* dest_clock at last use */
	uint16_t		 port;		/* host order */
	uint8_t			 flags;
	uint8_t			 name_len;
	sa_family_t		 family;	/* of ip */
	union {
		struct in_addr	 v4;
		struct in6_addr	 v6;
	}			 ip;
	char			 name[UDP_NAME_MAX];
};

struct udp_remote {
	struct loop_io		 io;		/* first: epoll hands it back */
	struct udp_assoc	*assoc;
};

struct udp_assoc {
	struct loop_io		 cio;		/* first: client-facing */
	struct udp_remote	 rio[2];	/* remote-facing: v4, v6 */
	struct pt_conn		*conn;
	struct sockaddr_storage	 peer;		/* control connection peer */
	struct sockaddr_storage	 client;	/* learned UDP source */
	bool			 client_known;
	uint16_t		 client_port;	/* from the request; 0: any */
	/* One datagram waiting for its name to resolve; pend is taken from
	 * udp_pend_pool only for that time. */
	struct dns_query	*dns;
	char			*pend;
	size_t			 pend_len;
	uint16_t		 pend_port;
	/* The datagram being handled while dns_resolve may answer at once. */
	const char		*cur;
	size_t			 cur_len;
	uint16_t		 cur_port;
	/* The name of the parked (pend: stored after its data) or current
	 * (cur: in the batch buffer) datagram, for the check after it
	 * resolves. */
	const char		*cur_name;
	uint8_t			 name_len;
	unsigned		 dropped;
	unsigned		 denied;	/* datagrams DATAGRAM refused */
	unsigned		 refused;	/* datagrams a callback refused */
	bool			 per_datagram;	/* a datagram callback applies */
	uint32_t		 dest_clock;
	struct udp_dest		 dests[UDP_DEST_CACHE];
	/* udp_replies "contacted": the addresses sent to (IPv4 mapped into
	 * IPv6), when each was last used, and the last one matched. */
	bool			 replies_any;
	uint8_t			 npeers, peer_last;
	uint32_t		 peer_clock;
	uint32_t		 peer_used[UDP_PEERS];
	struct in6_addr		 peers[UDP_PEERS];
	/* Through a parent (udp_assoc_via): its relay, where every
	 * datagram goes and the only source that may answer; whether
	 * names are resolved here (the parent's resolve = "local"). */
	bool			 via;
	bool			 via_resolve;
	struct pt_addr		 relay;
	struct loop_task	 reap;		/* back to the pool, later */
};

static char			*udp_bufs;	/* UDP_BATCH slots */
static struct mmsghdr		 udp_in[UDP_BATCH];
static struct iovec		 udp_in_iov[UDP_BATCH];
static struct sockaddr_storage	 udp_from[UDP_BATCH];
static struct mmsghdr		 udp_out[2][UDP_BATCH];
/* [0] a header written here (to a parent's relay), [1] the payload. */
static struct iovec		 udp_out_iov[2][UDP_BATCH][2];
static struct sockaddr_storage	 udp_to[2][UDP_BATCH];
static uint8_t			 udp_out_hdr[2][UDP_BATCH][SOCKS5C_REQUEST_MAX];
static uint16_t			 udp_out_hl[2][UDP_BATCH];
static unsigned			 udp_nout[2];
static struct pool		 udp_assoc_pool;
static struct pool		 udp_pend_pool;

int
udp_assoc_init(unsigned max)
{
	pool_init(&udp_assoc_pool, "UDP association", sizeof(struct udp_assoc),
	    max);
	pool_init(&udp_pend_pool, "UDP parked datagram", UDP_DGRAM_MAX, max);
	pool_set_keep(&udp_pend_pool, UDP_PEND_KEEP);
	return 0;
}

/* 1 MiB per worker, made with its first association: datagrams of any
 * size without a buffer per association, and nothing for workers that
 * never relay UDP. */
static int
udp_bufs_ready(void)
{
	if (udp_bufs == NULL)
		udp_bufs = malloc((size_t)UDP_BATCH * UDP_SLOT);
	return udp_bufs == NULL ? -1 : 0;
}

void
udp_assoc_fini(void)
{
	free(udp_bufs);
	udp_bufs = NULL;
	pool_fini(&udp_pend_pool);
	pool_fini(&udp_assoc_pool);
}

static int
udp_family_idx(int family)
{
	return family == AF_INET6 ? 1 : 0;
}

static bool
udp_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	const struct sockaddr_storage	*v4, *v6;

	/* One IPv4, one IPv4-mapped IPv6: a dual-stack relay socket sees
	 * the client as ::ffff:a.b.c.d where a PROXY header named it
	 * a.b.c.d, or the other way round. */
	if (a->ss_family != b->ss_family) {
		v4 = a->ss_family == AF_INET ? a : b;
		v6 = a->ss_family == AF_INET ? b : a;
		return v4->ss_family == AF_INET && v6->ss_family == AF_INET6 &&
		    IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)
		    v6)->sin6_addr) && memcmp(&((const struct sockaddr_in6 *)
		    v6)->sin6_addr.s6_addr[12], &((const struct sockaddr_in *)
		    v4)->sin_addr, 4) == 0;
	}
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
	    &((const struct sockaddr_in6 *)b)->sin6_addr,
	    sizeof(struct in6_addr)) == 0;
}

static void	udp_on_remote(struct loop_io *io, uint32_t events);

/* Datagrams one recvmmsg may take in direction <d>: a batch while the
 * budget covers a batch of the largest, else one. */
static unsigned
udp_batch(const struct udp_assoc *a, int d)
{
	return a->conn->c_budget[d].left >= (uint64_t)UDP_BATCH *
	    UDP_DGRAM_MAX ? UDP_BATCH : 1;
}

/* The interest for direction <d>'s sockets: none while its budget is
 * spent, so a waiting datagram wakes nobody. */
static uint32_t
udp_events(const struct udp_assoc *a, int d)
{
	return a->conn->c_budget[d].left != 0 ? EPOLLIN : 0;
}

void
udp_assoc_budget(struct udp_assoc *a)
{
	int	 i;

	if (a == NULL)
		return;
	loop_io_set(&a->cio, udp_events(a, PT_DIR_UP));
	for (i = 0; i < 2; i++)
		loop_io_set(&a->rio[i].io, udp_events(a, PT_DIR_DOWN));
}

/* ---- the DATAGRAM check ------------------------------------------- */

/* Does entry <e> hold the address of <ss>? */
static bool
udp_dest_ip_is(const struct udp_dest *e, const struct sockaddr_storage *ss)
{
	if (e->family != ss->ss_family)
		return false;
	if (e->family == AF_INET)
		return e->ip.v4.s_addr ==
		    ((const struct sockaddr_in *)ss)->sin_addr.s_addr;
	return e->family == AF_INET6 && memcmp(&e->ip.v6,
	    &((const struct sockaddr_in6 *)ss)->sin6_addr,
	    sizeof(e->ip.v6)) == 0;
}

static void
udp_dest_ip_set(struct udp_dest *e, const struct sockaddr_storage *ss)
{
	e->family = ss->ss_family;
	if (e->family == AF_INET6)
		e->ip.v6 = ((const struct sockaddr_in6 *)ss)->sin6_addr;
	else
		e->ip.v4 = ((const struct sockaddr_in *)ss)->sin_addr;
}

/*
 * Runs the DATAGRAM hooks on the association's request with host, port
 * and target naming one destination (<target> NULL: a name not resolved
 * yet, target's family AF_UNSPEC), then puts the association's own values
 * back. <host> must stay valid during the call only. Returns true when
 * the destination may have datagrams.
 */
static bool
udp_judge(struct udp_assoc *a, const char *host, size_t host_len,
    uint16_t port, const struct sockaddr_storage *target)
{
	struct pt_req		*req = &a->conn->c_req;
	struct pt_str		 saved_host = req->host;
	uint16_t		 saved_port = req->port;
	struct sockaddr_storage	 saved_target = req->target;
	struct pt_addr		 shown;
	enum pt_verdict		 v;

	req->host.ptr = host;
	req->host.len = host_len;
	req->port = port;
	memset(&req->target, 0, sizeof(req->target));
	if (target != NULL) {
		/* ::ffff:10.0.0.1 reaches 10.0.0.1 through the IPv6 socket:
		 * the hooks see the IPv4 address, so a rule on it holds. */
		sockaddr_unmap((const struct sockaddr *)target, &shown);
		req->target = shown.sa;
		((struct sockaddr_in *)&req->target)->sin_port = htons(port);
	}
	v = phase_run_now(a->conn, PT_PHASE_DATAGRAM);
	req->host = saved_host;
	req->port = saved_port;
	req->target = saved_target;
	if (v == PT_VERDICT_CONTINUE || v == PT_VERDICT_ALLOW)
		return true;
	counters_add(CTR_DENIED, 1);
	return false;
}

/* The cache entry for <name> (NULL: the address <addr>) and <port>, or
 * NULL. */
static struct udp_dest *
udp_dest_find(struct udp_assoc *a, const char *name, size_t name_len,
    const struct sockaddr_storage *addr, uint16_t port)
{
	struct udp_dest	*e;
	int		 i;

	for (i = 0; i < UDP_DEST_CACHE; i++) {
		e = &a->dests[i];
		if (!(e->flags & UDP_DEST_USED) || e->port != port ||
		    e->name_len != (name != NULL ? name_len : 0))
			continue;
		if (name != NULL ? memcmp(e->name, name, name_len) == 0 :
		    udp_dest_ip_is(e, addr)) {
			e->used = ++a->dest_clock;
			return e;
		}
	}
	return NULL;
}

/* A free entry, or the one used least recently, emptied. */
static struct udp_dest *
udp_dest_take(struct udp_assoc *a)
{
	struct udp_dest	*e = &a->dests[0];
	int		 i;

	for (i = 0; i < UDP_DEST_CACHE; i++) {
		if (!(a->dests[i].flags & UDP_DEST_USED)) {
			e = &a->dests[i];
			break;
		}
		if (a->dests[i].used < e->used)
			e = &a->dests[i];
	}
	memset(e, 0, offsetof(struct udp_dest, name));
	e->flags = UDP_DEST_USED;
	e->used = ++a->dest_clock;
	return e;
}

/* May datagrams go to address <to> (its port ignored), port <port>? The
 * hooks see host as the address in text, as for a SOCKS request. */
static bool
udp_addr_allowed(struct udp_assoc *a, const struct sockaddr_storage *to,
    uint16_t port)
{
	struct udp_dest	*e;
	char		 host[INET6_ADDRSTRLEN];
	const void	*ip;

	if (!phase_has_hooks(PT_PHASE_DATAGRAM))
		return true;
	if ((e = udp_dest_find(a, NULL, 0, to, port)) != NULL)
		return (e->flags & UDP_DEST_OK) != 0;
	ip = to->ss_family == AF_INET6 ?
	    (const void *)&((const struct sockaddr_in6 *)to)->sin6_addr :
	    (const void *)&((const struct sockaddr_in *)to)->sin_addr;
	if (inet_ntop(to->ss_family, ip, host, sizeof(host)) == NULL)
		return false;
	e = udp_dest_take(a);
	e->port = port;
	udp_dest_ip_set(e, to);
	if (udp_judge(a, host, strlen(host), port, to))
		e->flags |= UDP_DEST_OK;
	return (e->flags & UDP_DEST_OK) != 0;
}

/* The entry for name <name> and <port>, judged on the name (before any
 * lookup) when it was not in the cache. */
static struct udp_dest *
udp_name_dest(struct udp_assoc *a, const char *name, size_t len,
    uint16_t port)
{
	struct udp_dest	*e;

	if ((e = udp_dest_find(a, name, len, NULL, port)) != NULL)
		return e;
	e = udp_dest_take(a);
	e->port = port;
	e->name_len = (uint8_t)len;
	memcpy(e->name, name, len);
	if (udp_judge(a, name, len, port, NULL))
		e->flags |= UDP_DEST_NAME_OK;
	return e;
}

/* May datagrams to name <name> go out at all (the lookup is skipped when
 * not)? */
static bool
udp_name_allowed(struct udp_assoc *a, const char *name, size_t len,
    uint16_t port)
{
	if (!phase_has_hooks(PT_PHASE_DATAGRAM))
		return true;
	return (udp_name_dest(a, name, len, port)->flags &
	    UDP_DEST_NAME_OK) != 0;
}

/* May datagrams to name <name> go to <to>, the address it resolved to?
 * Judged with host the name and target the address; the entry may have
 * been evicted while the name resolved, and is then judged anew. */
static bool
udp_resolved_allowed(struct udp_assoc *a, const char *name, size_t len,
    uint16_t port, const struct sockaddr_storage *to)
{
	struct udp_dest	*e;

	if (!phase_has_hooks(PT_PHASE_DATAGRAM))
		return true;
	e = udp_name_dest(a, name, len, port);
	if (!(e->flags & UDP_DEST_NAME_OK))
		return false;
	if ((e->flags & UDP_DEST_ADDR) && udp_dest_ip_is(e, to))
		return (e->flags & UDP_DEST_OK) != 0;
	udp_dest_ip_set(e, to);
	e->flags |= UDP_DEST_ADDR;
	e->flags &= (uint8_t)~UDP_DEST_OK;
	if (udp_judge(a, name, len, port, to))
		e->flags |= UDP_DEST_OK;
	return (e->flags & UDP_DEST_OK) != 0;
}

/* One datagram dropped because its destination was refused: counted for
 * the totals and for the association's LOG. */
static void
udp_denied(struct udp_assoc *a)
{
	a->denied++;
	counters_add(CTR_UDP_DENIED, 1);
	if (a->conn->c_req.error == NULL)
		a->conn->c_req.error = "datagrams to a denied destination "
		    "dropped";
}

/* The modules' datagram callbacks on one datagram of <len> payload bytes;
 * false (counted) when one refused it. */
static bool
udp_datagram_ok(struct udp_assoc *a, enum pt_dir dir, size_t len)
{
	if (phase_datagram_run(a->conn, dir, len))
		return true;
	a->refused++;
	counters_add(CTR_UDP_DROP_MODULE, 1);
	return false;
}

/* ---- sockets -------------------------------------------------------- */

/* The remote-facing socket for <family>, opened on first use. */
static int
udp_remote_fd(struct udp_assoc *a, int family)
{
	struct loop_io	*io = &a->rio[udp_family_idx(family)].io;
	int		 fd;

	if (io->added)
		return io->fd;
	fd = upstream_socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	/* From the egress (port 0: the kernel's), if the association has
	 * one: the acl rule's that allowed it, or the listener's. */
	if (outbound_bind(a->conn, fd, family, false) < 0 ||
	    loop_io_start(io, fd, udp_events(a, PT_DIR_DOWN),
	    udp_on_remote) < 0) {
		close(fd);
		return -1;
	}
	outbound_established(a->conn, true);
	return fd;
}

/* ---- contacted addresses ------------------------------------------- */

/* <ss>'s address as IPv6, IPv4 mapped (::ffff:a.b.c.d), so an IPv4 sender
 * seen on the dual-stack IPv6 socket is the same address. */
static void
udp_peer_key(const struct sockaddr_storage *ss, struct in6_addr *key)
{
	if (ss->ss_family == AF_INET) {
		memset(key, 0, 10);
		memset((char *)key + 10, 0xff, 2);
		memcpy((char *)key + 12,
		    &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else
		*key = ((const struct sockaddr_in6 *)ss)->sin6_addr;
}

/* The slot of <key>, or -1. The last one matched first: most
 * associations talk to one or two addresses. */
static int
udp_peer_find(struct udp_assoc *a, const struct in6_addr *key)
{
	int	 i;

	if (a->npeers > 0 && memcmp(&a->peers[a->peer_last], key,
	    sizeof(*key)) == 0)
		return a->peer_last;
	for (i = 0; i < a->npeers; i++)
		if (memcmp(&a->peers[i], key, sizeof(*key)) == 0) {
			a->peer_last = (uint8_t)i;
			return i;
		}
	return -1;
}

/* A datagram goes to <to>: its address may answer. */
static void
udp_peer_note(struct udp_assoc *a, const struct sockaddr_storage *to)
{
	struct in6_addr	 key;
	int		 i, old = 0;

	/* Through a parent only its relay answers (udp_from_relay). */
	if (a->replies_any || a->via)
		return;
	udp_peer_key(to, &key);
	if ((i = udp_peer_find(a, &key)) < 0) {
		if (a->npeers < UDP_PEERS)
			i = a->npeers++;
		else {
			for (i = 1; i < UDP_PEERS; i++)
				if (a->peer_used[i] < a->peer_used[old])
					old = i;
			i = old;
		}
		a->peers[i] = key;
		a->peer_last = (uint8_t)i;
	}
	a->peer_used[i] = ++a->peer_clock;
}

/* Whether a datagram from <from> may reach the client. */
static bool
udp_peer_known(struct udp_assoc *a, const struct sockaddr_storage *from)
{
	struct in6_addr	 key;

	if (a->replies_any)
		return true;
	udp_peer_key(from, &key);
	return udp_peer_find(a, &key) >= 0;
}

/* Queues one datagram for the remote socket of its family: <data>, after
 * the <hl> header bytes written in its udp_out_hdr slot (0: none). */
static void
udp_queue(struct udp_assoc *a, const struct sockaddr_storage *to,
    socklen_t tolen, size_t hl, const char *data, size_t len)
{
	int		 f = udp_family_idx(to->ss_family);
	unsigned	 k = udp_nout[f];
	struct iovec	*iov = udp_out_iov[f][k];

	udp_peer_note(a, to);
	memcpy(&udp_to[f][k], to, tolen);
	iov[0].iov_base = udp_out_hdr[f][k];
	iov[0].iov_len = hl;
	iov[1].iov_base = (void *)(uintptr_t)data;
	iov[1].iov_len = len;
	memset(&udp_out[f][k].msg_hdr, 0, sizeof(udp_out[f][k].msg_hdr));
	udp_out[f][k].msg_hdr.msg_name = &udp_to[f][k];
	udp_out[f][k].msg_hdr.msg_namelen = tolen;
	udp_out[f][k].msg_hdr.msg_iov = hl > 0 ? iov : iov + 1;
	udp_out[f][k].msg_hdr.msg_iovlen = hl > 0 ? 2 : 1;
	/* Left alone by a send that fails: 0 counts no bytes. */
	udp_out[f][k].msg_len = 0;
	udp_out_hl[f][k] = (uint16_t)hl;
	udp_nout[f] = k + 1;
}

/* <n> datagrams dropped for reason <why> (a CTR_UDP_DROP_*). */
static void
udp_drop(struct udp_assoc *a, enum counter_id why, unsigned n)
{
	if (n == 0)
		return;
	a->dropped += n;
	counters_add(why, n);
}

/* Queues one datagram to destination <d> through the parent's relay,
 * behind the header naming <d> (its name, or its address). */
static void
udp_queue_via(struct udp_assoc *a, const struct socks_dest *d,
    const char *data, size_t len)
{
	int		 f = udp_family_idx(a->relay.sa.ss_family);
	ssize_t		 hl;

	hl = socks5c_udp_header(udp_out_hdr[f][udp_nout[f]],
	    sizeof(udp_out_hdr[f][0]), d->name.ptr, d->name.len,
	    d->atyp == SOCKS_ATYP_DOMAIN ? NULL :
	    (const struct sockaddr *)&d->addr.sa, d->port);
	if (hl < 0) {
		udp_drop(a, CTR_UDP_DROP_INVALID, 1);
		return;
	}
	udp_queue(a, &a->relay.sa, a->relay.len, (size_t)hl, data, len);
}

/*
 * Sends <n> messages on <fd>, in as few sendmmsg calls as it takes: one
 * that fails (EMSGSIZE, a full buffer) is dropped and the rest still go.
 * Returns the payload bytes sent; counts drops in *dropped.
 */
static uint64_t
udp_send_batch(int fd, struct mmsghdr *msgs, unsigned n, unsigned *dropped)
{
	uint64_t	 bytes = 0;
	unsigned	 done = 0, i;
	int		 k;

	while (done < n) {
		k = sendmmsg(fd, msgs + done, n - done, MSG_DONTWAIT);
		if (k <= 0) {
			(*dropped)++;
			done++;
			continue;
		}
		for (i = done; i < done + (unsigned)k; i++)
			bytes += msgs[i].msg_len;
		done += (unsigned)k;
	}
	return bytes;
}

/* Sends every queued datagram, one sendmmsg per family. */
static void
udp_flush(struct udp_assoc *a)
{
	uint64_t	 bytes;
	unsigned	 lost, i;
	int		 f, fd;

	for (f = 0; f < 2; f++) {
		if (udp_nout[f] == 0)
			continue;
		fd = udp_remote_fd(a, f == 1 ? AF_INET6 : AF_INET);
		if (fd >= 0) {
			lost = 0;
			(void)udp_send_batch(fd, udp_out[f], udp_nout[f],
			    &lost);
			/* Payloads: a header for the parent is ours. */
			bytes = 0;
			for (i = 0; i < udp_nout[f]; i++)
				if (udp_out[f][i].msg_len > udp_out_hl[f][i])
					bytes += udp_out[f][i].msg_len -
					    udp_out_hl[f][i];
			a->conn->c_req.bytes_in += bytes;
			counters_add(CTR_BYTES_IN, (int64_t)bytes);
			counters_add(CTR_UDP_UP, udp_nout[f] - lost);
			udp_drop(a, CTR_UDP_DROP_SEND, lost);
		} else {
			udp_drop(a, CTR_UDP_DROP_SEND, udp_nout[f]);
		}
		udp_nout[f] = 0;
	}
}

/* Sends a datagram to name <name>:<port> to the first address it
 * resolved to, once the DATAGRAM check on that address passed. */
static void
udp_send_resolved(struct udp_assoc *a, const struct dns_result *res,
    const char *name, size_t name_len, const char *data, size_t len,
    uint16_t port)
{
	struct sockaddr_storage	 to;
	uint8_t			 hdr[SOCKS5C_REQUEST_MAX];
	struct iovec		 iov[2];
	struct msghdr		 m;
	ssize_t			 n, hl = 0;
	int			 fd, k;

	if (res == NULL || res->naddrs == 0)
		return;
	/* The first address the egress can reach, as a dial would. */
	k = outbound_first(a->conn, res->addrs, res->naddrs);
	memcpy(&to, &res->addrs[k].sa, res->addrs[k].len);
	if (!udp_resolved_allowed(a, name, name_len, port, &to)) {
		udp_denied(a);
		return;
	}
	((struct sockaddr_in *)&to)->sin_port = htons(port);
	udp_peer_note(a, &to);
	memset(&m, 0, sizeof(m));
	m.msg_name = &to;
	m.msg_namelen = res->addrs[k].len;
	/* Through a parent that wants addresses: to its relay, the
	 * address in the header. */
	if (a->via) {
		hl = socks5c_udp_header(hdr, sizeof(hdr), NULL, 0,
		    (const struct sockaddr *)&to, port);
		m.msg_name = &a->relay.sa;
		m.msg_namelen = a->relay.len;
	}
	iov[0].iov_base = hdr;
	iov[0].iov_len = hl > 0 ? (size_t)hl : 0;
	iov[1].iov_base = (void *)(uintptr_t)data;
	iov[1].iov_len = len;
	m.msg_iov = hl > 0 ? iov : iov + 1;
	m.msg_iovlen = hl > 0 ? 2 : 1;
	fd = hl < 0 ? -1 : udp_remote_fd(a,
	    ((const struct sockaddr *)m.msg_name)->sa_family);
	n = fd < 0 ? -1 : sendmsg(fd, &m, MSG_DONTWAIT);
	if (n < 0) {
		udp_drop(a, CTR_UDP_DROP_SEND, 1);
		return;
	}
	/* A datagram goes whole or not at all: the payload's bytes. */
	n = (ssize_t)len;
	a->conn->c_req.bytes_in += (uint64_t)n;
	counters_add(CTR_BYTES_IN, n);
	counters_add(CTR_UDP_UP, 1);
}

static void
udp_pend_release(struct udp_assoc *a)
{
	pool_put(&udp_pend_pool, a->pend);
	a->pend = NULL;
	a->pend_len = 0;
}

static void
udp_on_dns(void *arg, int err, const struct dns_result *res)
{
	struct udp_assoc	*a = arg;

	a->dns = NULL;
	if (a->cur != NULL) {
		/* Answered at once (cache or literal): the datagram is
		 * still in the batch buffer. */
		if (err == 0)
			udp_send_resolved(a, res, a->cur_name, a->name_len,
			    a->cur, a->cur_len, a->cur_port);
		a->cur = NULL;
		return;
	}
	if (err == 0 && a->pend != NULL)
		udp_send_resolved(a, res, a->pend + a->pend_len, a->name_len,
		    a->pend, a->pend_len, a->pend_port);
	udp_pend_release(a);
}

/* A datagram to a name: sent now when the name is known, else parked
 * while it resolves. */
static void
udp_to_name(struct udp_assoc *a, const struct socks_dest *d, const char *data,
    size_t len)
{
	struct dns_query	*q;

	if (!udp_name_allowed(a, d->name.ptr, d->name.len, d->port)) {
		/* Refused by name: not even looked up. */
		udp_denied(a);
		return;
	}
	if (a->dns != NULL) {
		udp_drop(a, CTR_UDP_DROP_RESOLVING, 1);
		return;
	}
	a->cur = data;
	a->cur_len = len;
	a->cur_port = d->port;
	a->cur_name = d->name.ptr;
	a->name_len = (uint8_t)d->name.len;
	q = dns_resolve(d->name.ptr, d->name.len, udp_on_dns, a);
	if (q == NULL)
		return;
	/* Pending: keep a copy, the batch buffer is reused; the name goes
	 * after the data (both came in one datagram of at most
	 * UDP_DGRAM_MAX bytes, so they fit). Out of pooled buffers, the
	 * datagram is lost like any UDP datagram. */
	a->cur = NULL;
	a->dns = q;
	if ((a->pend = pool_get(&udp_pend_pool)) == NULL) {
		dns_cancel(q);
		a->dns = NULL;
		udp_drop(a, CTR_UDP_DROP_RESOLVING, 1);
		return;
	}
	memcpy(a->pend, data, len);
	memcpy(a->pend + len, d->name.ptr, d->name.len);
	a->pend_len = len;
	a->pend_port = d->port;
}

/* Is <from> the association's client? Learns its port on first use. */
static bool
udp_from_client(struct udp_assoc *a, const struct sockaddr_storage *from)
{
	if (!udp_same_ip(from, &a->peer))
		return false;
	if (a->client_known)
		return sockaddr_port((const struct sockaddr *)from) ==
		    sockaddr_port((const struct sockaddr *)&a->client);
	if (a->client_port != 0 &&
	    sockaddr_port((const struct sockaddr *)from) != a->client_port)
		return false;
	a->client = *from;
	a->client_known = true;
	return true;
}

static void
udp_recv_batch_setup(size_t offset, size_t room)
{
	int	 i;

	for (i = 0; i < UDP_BATCH; i++) {
		udp_in_iov[i].iov_base = udp_bufs + (size_t)i * UDP_SLOT + offset;
		udp_in_iov[i].iov_len = room;
		memset(&udp_in[i].msg_hdr, 0, sizeof(udp_in[i].msg_hdr));
		udp_in[i].msg_hdr.msg_iov = &udp_in_iov[i];
		udp_in[i].msg_hdr.msg_iovlen = 1;
		udp_in[i].msg_hdr.msg_name = &udp_from[i];
		udp_in[i].msg_hdr.msg_namelen = sizeof(udp_from[i]);
	}
}

/* Client -> destinations. */
static void
udp_on_client(struct loop_io *io, uint32_t events)
{
	struct udp_assoc		*a = (struct udp_assoc *)io;
	struct socks5_udp_header	 h;
	struct host			 host;
	const char			*p;
	size_t				 len;
	uint64_t			 paid = 0;
	int				 i, n;

	if (a->conn->c_budget[PT_DIR_UP].left == 0) {
		loop_io_set(io, 0);
		return;
	}
	udp_recv_batch_setup(0, UDP_SLOT);
	n = recvmmsg(io->fd, udp_in, udp_batch(a, PT_DIR_UP), MSG_DONTWAIT,
	    NULL);
	if (n <= 0)
		return;
	for (i = 0; i < n; i++) {
		p = udp_in_iov[i].iov_base;
		len = udp_in[i].msg_len;
		if (!udp_from_client(a, &udp_from[i]) ||
		    (udp_in[i].msg_hdr.msg_flags & MSG_TRUNC) ||
		    socks5_parse_udp((const uint8_t *)p, len, &h) != PARSE_OK ||
		    h.frag != 0 || !socks_dest_canon(&h.dest, &host)) {
			/* Foreign senders, fragments (which we do not
			 * reassemble), malformed headers and names that are
			 * no host are dropped. */
			udp_drop(a, CTR_UDP_DROP_INVALID, 1);
			continue;
		}
		/* Only the client's own datagrams keep it alive, and
		 * spend its budget. */
		a->conn->c_last_active = loop_now();
		if (a->per_datagram && !udp_datagram_ok(a, PT_DIR_UP,
		    len - h.len))
			continue;
		paid += len - h.len;
		if (h.dest.atyp == SOCKS_ATYP_DOMAIN && a->via &&
		    !a->via_resolve) {
			/* The parent resolves it: judged by name only. */
			if (udp_name_allowed(a, h.dest.name.ptr,
			    h.dest.name.len, h.dest.port))
				udp_queue_via(a, &h.dest, p + h.len,
				    len - h.len);
			else
				udp_denied(a);
		} else if (h.dest.atyp == SOCKS_ATYP_DOMAIN)
			udp_to_name(a, &h.dest, p + h.len, len - h.len);
		else if (!udp_addr_allowed(a, &h.dest.addr.sa, h.dest.port))
			udp_denied(a);
		else if (a->via)
			udp_queue_via(a, &h.dest, p + h.len, len - h.len);
		else
			udp_queue(a, (const struct sockaddr_storage *)
			    &h.dest.addr.sa, h.dest.addr.len, 0, p + h.len,
			    len - h.len);
	}
	udp_flush(a);
	conn_budget_take(a->conn, PT_DIR_UP, paid);
	if (a->conn->c_budget[PT_DIR_UP].left == 0)
		loop_io_set(io, 0);
}

/* Is <from> the parent's relay (address and port)? */
static bool
udp_from_relay(const struct udp_assoc *a, const struct sockaddr_storage *from)
{
	return udp_same_ip(from, &a->relay.sa) &&
	    sockaddr_port((const struct sockaddr *)from) ==
	    sockaddr_port((const struct sockaddr *)&a->relay.sa);
}

/*
 * Datagram <i> of the batch as the client is to get it: *<hlen> header
 * bytes from *<start>, then *<plen> bytes of payload. Without a parent
 * the header naming the source is written in front of the payload;
 * from a parent's relay it came with one, which is checked and kept.
 * False when the datagram is dropped (counted).
 */
static bool
udp_reply_frame(struct udp_assoc *a, int i, char **start, size_t *hlen,
    size_t *plen)
{
	struct socks5_udp_header	 h;
	uint8_t				 hdr[UDP_HDR_MAX];
	char				*data = udp_in_iov[i].iov_base;
	size_t				 len = udp_in[i].msg_len;

	if (a->via ? !udp_from_relay(a, &udp_from[i]) :
	    !udp_peer_known(a, &udp_from[i])) {
		udp_drop(a, CTR_UDP_DROP_UNSOLICITED, 1);
		return false;
	}
	if (a->via) {
		if (udp_in[i].msg_hdr.msg_flags & MSG_TRUNC) {
			udp_drop(a, CTR_UDP_DROP_TOO_BIG, 1);
			return false;
		}
		/* Fragments are not reassembled here either. */
		if (socks5_parse_udp((const uint8_t *)data, len, &h) !=
		    PARSE_OK || h.frag != 0) {
			udp_drop(a, CTR_UDP_DROP_INVALID, 1);
			return false;
		}
		*start = data;
		*hlen = h.len;
		*plen = len - h.len;
		return true;
	}
	*hlen = socks5_fmt_udp_header(hdr, (const struct sockaddr *)
	    &udp_from[i]);
	/* With our header it must still fit one datagram. */
	if ((udp_in[i].msg_hdr.msg_flags & MSG_TRUNC) ||
	    *hlen + len > 65507) {
		udp_drop(a, CTR_UDP_DROP_TOO_BIG, 1);
		return false;
	}
	memcpy(data - *hlen, hdr, *hlen);
	*start = data - *hlen;
	*plen = len;
	return true;
}

/* Destinations -> client, each with the header naming its source. */
static void
udp_on_remote(struct loop_io *io, uint32_t events)
{
	struct udp_remote	*r = (struct udp_remote *)io;
	struct udp_assoc	*a = r->assoc;
	struct mmsghdr		 out[UDP_BATCH];
	struct iovec		 iov[UDP_BATCH];
	uint16_t		 hl[UDP_BATCH];
	char			*start;
	size_t			 hlen, plen;
	uint64_t		 bytes, paid = 0;
	unsigned		 lost;
	int			 i, n, k = 0;

	if (a->conn->c_budget[PT_DIR_DOWN].left == 0) {
		loop_io_set(io, 0);
		return;
	}
	udp_recv_batch_setup(UDP_HDR_MAX, UDP_DGRAM_MAX);
	n = recvmmsg(io->fd, udp_in, udp_batch(a, PT_DIR_DOWN), MSG_DONTWAIT,
	    NULL);
	if (n <= 0 || !a->client_known)
		return;
	a->conn->c_last_active = loop_now();
	for (i = 0; i < n; i++) {
		if (!udp_reply_frame(a, i, &start, &hlen, &plen))
			continue;
		if (a->per_datagram && !udp_datagram_ok(a, PT_DIR_DOWN, plen))
			continue;
		iov[k].iov_base = start;
		iov[k].iov_len = hlen + plen;
		memset(&out[k].msg_hdr, 0, sizeof(out[k].msg_hdr));
		out[k].msg_hdr.msg_name = &a->client;
		out[k].msg_hdr.msg_namelen = a->client.ss_family == AF_INET6 ?
		    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
		out[k].msg_hdr.msg_iov = &iov[k];
		out[k].msg_hdr.msg_iovlen = 1;
		out[k].msg_len = 0;
		hl[k] = (uint16_t)hlen;
		paid += plen;
		k++;
	}
	conn_budget_take(a->conn, PT_DIR_DOWN, paid);
	if (a->conn->c_budget[PT_DIR_DOWN].left == 0)
		loop_io_set(io, 0);
	if (k > 0) {
		lost = 0;
		(void)udp_send_batch(a->cio.fd, out, (unsigned)k, &lost);
		/* Payloads, as the other way counts them: not our headers. */
		bytes = 0;
		for (i = 0; i < k; i++)
			if (out[i].msg_len > hl[i])
				bytes += out[i].msg_len - hl[i];
		a->conn->c_req.bytes_out += bytes;
		counters_add(CTR_BYTES_OUT, (int64_t)bytes);
		counters_add(CTR_UDP_DOWN, (unsigned)k - lost);
		udp_drop(a, CTR_UDP_DROP_SEND, lost);
	}
}

struct udp_assoc *
udp_assoc_open(struct pt_conn *c, const struct sockaddr_storage *local,
    uint16_t client_port, const struct pt_addr *advertise,
    struct pt_addr *bound_out)
{
	struct udp_assoc	*a;
	struct sockaddr_storage	 addr = *local;
	socklen_t		 len;
	int			 fd, err;

	if (udp_bufs_ready() < 0 || (a = pool_get(&udp_assoc_pool)) == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(a, 0, sizeof(*a));
	a->conn = c;
	a->peer = c->c_req.peer;
	a->client_port = client_port;
	a->per_datagram = phase_datagram_applies(c);
	a->replies_any = c->c_listener->udp_replies_any;
	a->rio[0].assoc = a->rio[1].assoc = a;
	a->rio[0].io.fd = a->rio[1].io.fd = -1;
	len = addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    sizeof(struct sockaddr_in);
	((struct sockaddr_in *)&addr)->sin_port = 0;
	fd = upstream_socket(addr.ss_family,
	    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		goto fail;
	/* An IPv4 client of a dual-stack listener: its relay socket binds
	 * the same ::ffff:a.b.c.d, which net.ipv6.bindv6only must not
	 * refuse. */
	if (addr.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(
	    &((struct sockaddr_in6 *)&addr)->sin6_addr) &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &(int){ 0 },
	    sizeof(int)) < 0) {
		err = errno;
		close(fd);
		errno = err;
		goto fail;
	}
	if (bind(fd, (struct sockaddr *)&addr, len) < 0 ||
	    getsockname(fd, (struct sockaddr *)&bound_out->sa, &len) < 0 ||
	    loop_io_start(&a->cio, fd, EPOLLIN, udp_on_client) < 0) {
		err = errno;
		close(fd);
		errno = err;
		goto fail;
	}
	bound_out->len = len;
	/* The advertised address of the client's own family (an IPv4
	 * client of a dual-stack listener is told IPv4), if set. */
	if (advertise != NULL)
		advertise += addr.ss_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(
		    &((struct sockaddr_in6 *)&addr)->sin6_addr);
	if (advertise != NULL && advertise->sa.ss_family != 0) {
		uint16_t	 port = sockaddr_port(
				    (const struct sockaddr *)&bound_out->sa);

		*bound_out = *advertise;
		/* sin_port and sin6_port share their offset. */
		((struct sockaddr_in *)&bound_out->sa)->sin_port = htons(port);
	}
	return a;
fail:
	pool_put(&udp_assoc_pool, a);
	return NULL;
}

void
udp_assoc_via(struct udp_assoc *a, const struct pt_addr *relay,
    bool resolve_local)
{
	a->via = true;
	a->via_resolve = resolve_local;
	a->relay = *relay;
}

static void
udp_assoc_on_reap(struct loop_task *t)
{
	pool_put(&udp_assoc_pool, (char *)t - offsetof(struct udp_assoc,
	    reap));
}

void
udp_assoc_free(struct udp_assoc *a)
{
	int	 i;

	if (a == NULL)
		return;
	if (a->dns != NULL)
		dns_cancel(a->dns);
	if (a->cio.added) {
		loop_io_stop(&a->cio);
		close(a->cio.fd);
	}
	for (i = 0; i < 2; i++)
		if (a->rio[i].io.added) {
			loop_io_stop(&a->rio[i].io);
			close(a->rio[i].io.fd);
		}
	if (a->dropped > 0)
		pt_log(PT_LOG_INFO, "UDP association: %u datagrams dropped "
		    "(foreign source, fragment, malformed, a name being "
		    "resolved, refused by the kernel or too big for a reply; "
		    "by reason on the status listener)", a->dropped);
	if (a->refused > 0)
		pt_clog(a->conn, PT_LOG_INFO, "UDP association: %u datagrams "
		    "refused by a module dropped", a->refused);
	if (a->denied > 0)
		pt_clog(a->conn, PT_LOG_INFO, "UDP association: %u datagrams "
		    "to denied destinations dropped", a->denied);
	udp_pend_release(a);
	/* Not back to the pool yet: the epoll batch being run may still
	 * hold an event for cio or rio, and loop_once reads its loop_io
	 * (stopped, so skipped). A posted task runs after the batch, as
	 * conn_reap does for connections; until then nobody can reuse the
	 * memory and hand that event to a stranger. */
	loop_post(&a->reap, udp_assoc_on_reap);
}
