/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parent proxies in the worker: which parent a transaction's upstream
 * leg goes through (a `via` choice and its strategy, skipping parents
 * that are down), the parents' health shared by every worker, and the
 * dial through a parent (connect, PROXY header, TLS, the parent's own
 * handshake) with failover to the next member of the choice.
 */
#ifndef PT_WORKER_PARENT_H
#define PT_WORKER_PARENT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/parent.h"
#include "common/sockaddr.h"
#include "worker/dns_result.h"

struct pt_conn;
struct pt_config;
struct dns_query;

/* parent_route.parent when no member is left to try. */
#define PARENT_NONE		(-2)


/*
 * How a UDP ASSOCIATE through a route (parent_udp_open) ends well:
 * <relay> is the parent's UDP relay (its association is up; the
 * connection's upstream leg is the parent's control connection), or NULL
 * when the route's member is "direct". Failures go to the protocol's
 * target_ops.fail, as a dial's do.
 */
typedef void	(*parent_udp_fn)(struct pt_conn *c,
		    const struct pt_addr *relay);

/*
 * One transaction's way through a `via` choice (c->c_route, from a
 * per-worker pool; kept for the connection's next transaction).
 * Invariants: member is the index in via of the member being tried (-1
 * before the first), parent its parents[] index or VIA_DIRECT; tried has
 * bit i set for every member i already tried.
 */
struct parent_route {
	const struct pt_via	*via;
	uint64_t		 tried;
	uint64_t		 seed;		/* the strategy's start */
	int			 member;
	int			 parent;
	/* The dial through the parent (parent_dial.c). */
	struct dns_query	*dns;
	int			 naddrs, aidx;
	struct pt_addr		 addrs[DNS_MAX_ADDRS];
	/* resolve = "local": the target's address, judged by DIAL. */
	struct pt_addr		 target;
	uint8_t			 step;		/* enum parent_step */
	uint8_t			 rep;		/* the parent's SOCKS reply */
	int			 http_status;	/* the parent's CONNECT answer */
	uint16_t		 out_len, out_off;
	uint16_t		 rbuf_len;	/* a head read through TLS */
	/* The handshake's bytes, sent and (through TLS) read: a small
	 * buffer (buf.h, relay.buffer_size, 4 KiB at least) held only
	 * while a handshake runs, so a route kept for a client's next
	 * request costs a few hundred bytes. NULL otherwise. */
	uint8_t			*out;
	/* The client's Via entries for a CONNECT (loops go through
	 * CONNECT too), NUL-terminated, or empty. */
	char			 client_via[256];
	/* A SOCKS5 UDP ASSOCIATE rather than a CONNECT (parent_udp_open;
	 * NULL otherwise): whom to tell, the parent's relay once known,
	 * and why no member carried it: a SOCKS5 parent failed, a member
	 * cannot carry UDP (HTTP, SOCKS4, a SOCKS5 reply 0x07). */
	parent_udp_fn		 udp_done;
	struct pt_addr		 udp_relay;
	bool			 udp_failed;
	bool			 udp_unsupported;
};

/* ---- worker/parent.c ------------------------------------------------- */

/* Claims each parent's shared health record and builds what a worker
 * sends with every request (Basic credentials). Worker, before the
 * loop. 0 or -1. */
int	 parent_init(const struct pt_config *conf);
void	 parent_fini(void);
/* The choice that applies to <c>'s transaction: a module's
 * (pt_conn_set_via), else its listener's, else NULL. */
const struct pt_via *parent_via(const struct pt_conn *c);
/*
 * Starts the route of <c>'s transaction through its choice and picks
 * its first member: false when no choice applies (c_route->parent is
 * VIA_DIRECT then too). Worker.
 */
bool	 parent_route_begin(struct pt_conn *c);
/* The next member to try, skipping those tried and those down: its
 * parents[] index, VIA_DIRECT or PARENT_NONE; noted in c_route. */
int	 parent_route_next(struct pt_conn *c);
/* Whether every member of the route was down, none tried. */
bool	 parent_route_all_down(const struct pt_conn *c);
/* Seconds until the first parent of the route is probed again (a
 * 503's Retry-After), at least 1. */
unsigned parent_route_retry_after(const struct pt_conn *c);
/* The parent carrying <c>'s transaction, or NULL. */
const struct conf_parent *parent_serving(const struct pt_conn *c);
/* The configured parent <idx>. */
const struct conf_parent *parent_conf(int idx);
/* Health: a connect or handshake to <idx> failed (counted; down after
 * max_fails in a row) or succeeded, taking <us>. */
void	 parent_failed(int idx);
void	 parent_succeeded(int idx, uint64_t us);
/* A request went through parent <idx> (counted). */
void	 parent_counted(int idx);
/* Whether parent <idx> is down now. */
bool	 parent_down(int idx);
/* Parent <idx>'s shared record (counters.h), or NULL: the status
 * listener reads it. */
const struct counters_parent *parent_record(int idx);
/* Probes the parents that are down and due, one worker each (a timer
 * of the worker's own). */
void	 parent_probe_start(void);

/* ---- worker/parent_dial.c -------------------------------------------- */

/* Dials <c>'s target through the route's current parent: DIAL, the
 * parent's address, connect, PROXY header, TLS, handshake; ESTABLISHED
 * and the protocol's established() on success; on a failure of the
 * parent, the next member of the route. Worker. */
void	 parent_dial(struct pt_conn *c);
/* The request rides on a kept connection to the route's parent
 * (target_reuse): DIAL as parent_dial would run it, then ESTABLISHED. */
void	 parent_reuse(struct pt_conn *c);
/*
 * Opens a UDP association with the route's current member for <c>'s
 * SOCKS5 UDP ASSOCIATE (the route begun by ACCESS): the parent's
 * address, connect, PROXY header, greeting, RFC 1929, UDP ASSOCIATE;
 * then done(c, relay). No DIAL: an association has no target, its
 * destinations are judged per datagram. A member that cannot carry UDP
 * (an HTTP or SOCKS4 parent, a SOCKS5 one answering 0x07) is passed
 * over without counting against its health; a failing one fails over
 * as parent_dial does; "direct" is done(c, NULL). When none is left:
 * target_ops.fail, TARGET_FAIL_PARENT_REFUSED with c_route->rep 0x07
 * when no member could carry UDP, else TARGET_FAIL_PARENT or
 * TARGET_FAIL_NO_PARENT. Worker.
 */
void	 parent_udp_open(struct pt_conn *c, parent_udp_fn done);
/* Gives back what a handshake held (conn.c's reap: the route goes
 * with the connection, whatever stage it stopped at). */
void	 parent_route_release(struct pt_conn *c);
/* Stops a dial in progress (resolving the parent). Idempotent. */
void	 parent_dial_stop(struct pt_conn *c);
/* The pool key of an upstream to parent <p> ("\1name"): no host a
 * client names has a control character. */
size_t	 parent_pool_key(const struct conf_parent *p, char *buf, size_t cap);

#endif
