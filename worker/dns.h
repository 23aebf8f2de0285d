/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Asynchronous name resolution in the worker's event loop: c-ares with its
 * sockets in our epoll and its timeouts on our timer heap, and a bounded
 * per-worker cache that honours the answers' TTLs.
 */
#ifndef PT_WORKER_DNS_H
#define PT_WORKER_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sockaddr.h"
#include "worker/dns_result.h"

/*
 * <err> is 0 with <res> filled (valid only during the call: copy what you
 * keep), or a positive errno-like code with <res> NULL: ENOENT (no such
 * name / no address), ETIMEDOUT, ECANCELED (dns_fini), EIO (other).
 */
typedef void (*dns_done_fn)(void *arg, int err, const struct dns_result *res);

struct dns_query;

/* ---- worker/dns.c ---------------------------------------------------- */

struct dns_conf {
	const char	*servers;	/* "ip[:port],..." or NULL: resolv.conf */
	unsigned	 cache_max;	/* entries; 0: no cache */
	unsigned	 min_ttl_s;	/* answers kept at least this long */
	unsigned	 max_ttl_s;	/* and at most this long */
	unsigned	 neg_ttl_s;	/* failures (NXDOMAIN, no address) */
	unsigned	 timeout_ms;	/* whole query, all retries */
};

/*
 * What c-ares makes of <servers> ("ip[:port],...", or NULL for
 * /etc/resolv.conf), parsed exactly as dns_init will: the first <max>
 * servers into <out> (<out> may be NULL when <max> is 0), with port 53
 * where c-ares uses its default, and how many in all into <n_out>.
 * 0, or -1 with c-ares' reason in <errstr>. Uses a throw-away channel:
 * the master calls it to check resolver.servers before any worker does,
 * and it may run in a worker before or after dns_init.
 */
int	 dns_servers_probe(const char *servers, struct pt_addr *out, int max,
	    int *n_out, const char **errstr);
/*
 * Starts the resolver: <conf>->servers, or /etc/resolv.conf, and
 * /etc/hosts, the c-ares way. Worker, before the loop. 0 or -errno.
 */
int	 dns_init(const struct dns_conf *conf);
/* Cancels every query (their callbacks run with ECANCELED) and frees
 * everything. Not from a dns_done_fn. */
void	 dns_fini(void);
/*
 * Resolves <name> (a host name or an IPv4/IPv6 literal, without
 * brackets). Literals and fresh cache hits call <done> before returning
 * and give NULL, and so do the failures that cannot wait (no resolver
 * running: ECANCELED; out of memory: EIO). Otherwise returns a handle for
 * dns_cancel, and <done> runs later from the loop, exactly once. Never
 * blocks.
 */
struct dns_query *dns_resolve(const char *name, size_t namelen,
	    dns_done_fn done, void *arg);
/* Stops a pending query; its callback will not run. The handle is dead
 * after this and after its callback; <q> NULL is a no-op. */
void	 dns_cancel(struct dns_query *q);
/* Copies the addresses of <res> into <out> (DNS_MAX_ADDRS room) with
 * <port> set, in order. Returns how many. */
int	 dns_addrs_with_port(const struct dns_result *res, uint16_t port,
	    struct pt_addr *out);
/* Tests and stats. */
unsigned dns_cache_count(void);
void	 dns_cache_clear(void);

#endif
