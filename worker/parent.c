/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which parent carries a transaction, and whether a parent is up.
 *
 * A route (struct parent_route) walks a `via` choice member by member:
 * the strategy decides the order (in the list's, round-robin from a
 * per-choice counter, or by weighted rendezvous hashing on a random
 * draw, the user or the client's address, so a user's parent stays
 * his when another parent goes down), a parent that is down is
 * skipped, and each member is tried once.
 *
 * Health lives in the shared mapping (common/counters.h, struct
 * counters_parent), so every worker of every generation sees one
 * state per parent: max_fails failures in a row mark it down for
 * down_time; then one worker (whichever takes the probe lease first)
 * probes it, a TCP connect and for SOCKS5 a greeting, and only a good
 * probe brings traffic back. A request that reached the parent also
 * clears its failures.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/parent.h"
#include "common/counters.h"
#include "common/log.h"
#include "portico/hash.h"
#include "worker/conn.h"
#include "worker/dns.h"
#include "worker/loop.h"
#include "worker/parent_wire.h"
#include "worker/pool.h"
#include "worker/upstream.h"
#include "worker/worker_self.h"

#define LOAD(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ADD(x, v)	__atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

/* How often a worker looks for parents due for a probe. */
#define PARENT_PROBE_TICK_MS	500

/* Round-robin counters, per choice (pt_via.rr_slot). */
#define PARENT_RR_SLOTS		256

struct parent_probe {
	int			 idx;		/* parents[] */
	struct loop_io		 io;
	struct pt_timer		 timer;
	struct dns_query	*dns;
	struct pt_addr		 addrs[DNS_MAX_ADDRS];
	int			 naddrs, aidx;
	bool			 greeting;	/* SOCKS5: sent, awaiting */
};

static const struct pt_config	*parent_cfg;
/* Each parent's shared record, or NULL (the table was full). */
static struct counters_parent	*parent_rec[PARENT_MAX];
static struct parent_probe	 parent_probes[PARENT_MAX];
static struct pt_timer		 parent_tick;
static uint32_t			 parent_rr[PARENT_RR_SLOTS];
static struct pool		 parent_route_pool;

/* ---- the shared records ---------------------------------------------- */

static struct counters_parent *
parent_claim(const struct conf_parent *p)
{
	struct counters_parent	*t = counters_parents();
	uint64_t		 zero;
	int			 i;

	if (t == NULL)
		return NULL;
	for (i = 0; i < COUNTERS_PARENTS_MAX; i++)
		if (LOAD(t[i].identity) == p->identity)
			return &t[i];
	for (i = 0; i < COUNTERS_PARENTS_MAX; i++) {
		zero = 0;
		if (__atomic_compare_exchange_n(&t[i].identity, &zero,
		    p->identity, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			snprintf(t[i].name, sizeof(t[i].name), "%s", p->name);
			return &t[i];
		}
		/* Another worker claimed it for this very parent first. */
		if (zero == p->identity)
			return &t[i];
	}
	pt_log(PT_LOG_WARNING, "parent \"%s\": no room left for its health "
	    "record (%d parents over this process's life): it is never "
	    "marked down", p->name, COUNTERS_PARENTS_MAX);
	return NULL;
}

int
parent_init(const struct pt_config *conf)
{
	struct conf_parent	*p;
	char			 field[1024];
	int			 i;

	parent_cfg = conf;
	pool_init(&parent_route_pool, "parent_route",
	    sizeof(struct parent_route), 0);
	for (i = 0; i < conf->nparents; i++) {
		p = &conf->parents[i];
		parent_rec[i] = parent_claim(p);
		parent_probes[i].idx = i;
		parent_probes[i].io.fd = -1;
		/* The worker's own copy: the configuration is read-only. */
		if ((p->proto == PARENT_HTTP || p->proto == PARENT_HTTPS) &&
		    p->user != NULL && p->basic == NULL) {
			if (parent_basic_field(p->user, p->password, field,
			    sizeof(field)) < 0 ||
			    (p->basic = strdup(field)) == NULL)
				return -1;
		}
	}
	if (conf->nparents > 0)
		parent_probe_start();
	return 0;
}

const struct conf_parent *
parent_conf(int idx)
{
	return &parent_cfg->parents[idx];
}

const struct counters_parent *
parent_record(int idx)
{
	return parent_rec[idx];
}

bool
parent_down(int idx)
{
	return parent_rec[idx] != NULL && LOAD(parent_rec[idx]->down) != 0;
}

void
parent_failed(int idx)
{
	struct counters_parent		*r = parent_rec[idx];
	const struct conf_parent	*p = parent_conf(idx);
	uint64_t			 zero = 0;

	if (r == NULL)
		return;
	ADD(r->failures, 1);
	if (ADD(r->fails, 1) + 1 < p->max_fails)
		return;
	if (!__atomic_compare_exchange_n(&r->down, &zero, 1, false,
	    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	STORE(r->down_until, loop_now() + p->down_time_ms);
	ADD(r->downs, 1);
	pt_log(PT_LOG_WARNING, "parent \"%s\" (%s) is down after %u failures "
	    "in a row: probed again in %u s", p->name, p->address,
	    p->max_fails, p->down_time_ms / 1000);
}

static void
parent_up(int idx, const char *how)
{
	struct counters_parent	*r = parent_rec[idx];
	uint64_t		 one = 1;

	STORE(r->fails, 0);
	if (__atomic_compare_exchange_n(&r->down, &one, 0, false,
	    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		pt_log(PT_LOG_NOTICE, "parent \"%s\" (%s) is up again (%s)",
		    parent_conf(idx)->name, parent_conf(idx)->address, how);
}

void
parent_succeeded(int idx, uint64_t us)
{
	struct counters_parent	*r = parent_rec[idx];
	int			 b;

	if (r == NULL)
		return;
	if (LOAD(r->fails) != 0 || LOAD(r->down) != 0)
		parent_up(idx, "a request got through");
	for (b = 0; b < COUNTERS_BUCKETS - 1 && us > counters_bounds_us[b];
	    b++)
		;
	ADD(r->connect_b[b], 1);
	ADD(r->connect_sum_us, us);
}

void
parent_counted(int idx)
{
	if (parent_rec[idx] != NULL)
		ADD(parent_rec[idx]->requests, 1);
}

/* ---- the route ------------------------------------------------------- */

const struct pt_via *
parent_via(const struct pt_conn *c)
{
	if (c->c_via != NULL)
		return c->c_via;
	return c->c_listener != NULL ? c->c_listener->via : NULL;
}

static uint64_t
parent_hash_user(const struct pt_conn *c, bool by_user)
{
	const struct sockaddr	*sa = (const struct sockaddr *)&c->c_req.peer;
	struct pt_addr		 a;

	if (by_user && c->c_req.user.len > 0)
		return pt_hash_mix64(pt_hash_fnv64(PT_HASH_FNV64_BASIS,
		    c->c_req.user.ptr, c->c_req.user.len));
	/* The address alone: a client's ports change per connection. */
	sockaddr_unmap(sa, &a);
	if (a.sa.ss_family == AF_INET)
		return pt_hash_mix64(pt_hash_fnv64(PT_HASH_FNV64_BASIS,
		    &((struct sockaddr_in *)&a.sa)->sin_addr, 4));
	return pt_hash_mix64(pt_hash_fnv64(PT_HASH_FNV64_BASIS,
	    &((struct sockaddr_in6 *)&a.sa)->sin6_addr, 16));
}

bool
parent_route_begin(struct pt_conn *c)
{
	const struct pt_via	*v = parent_via(c);
	struct parent_route	*r = c->c_route;

	if (v == NULL) {
		if (r != NULL) {
			r->via = NULL;
			r->parent = VIA_DIRECT;
		}
		return false;
	}
	if (r == NULL) {
		if ((r = pool_get(&parent_route_pool)) == NULL)
			return false;
		c->c_route = r;
	}
	r->via = v;
	r->tried = 0;
	r->member = -1;
	r->parent = PARENT_NONE;
	r->dns = NULL;
	r->step = 0;
	r->rep = 0;
	r->http_status = 0;
	r->client_via[0] = '\0';
	r->udp_done = NULL;
	r->udp_failed = r->udp_unsupported = false;
	switch (v->strategy) {
	case VIA_ORDERED:
		r->seed = 0;
		break;
	case VIA_ROUND_ROBIN:
		r->seed = parent_rr[v->rr_slot % PARENT_RR_SLOTS]++;
		break;
	case VIA_RANDOM:
		arc4random_buf(&r->seed, sizeof(r->seed));
		break;
	case VIA_HASH_USER:
	case VIA_HASH_SOURCE:
		r->seed = parent_hash_user(c, v->strategy == VIA_HASH_USER);
		break;
	}
	return true;
}

static bool
parent_member_up(const struct pt_via *v, int i)
{
	return v->member[i] == VIA_DIRECT || !parent_down(v->member[i]);
}

/* Weighted rendezvous: member i draws <weight> numbers from (seed, i)
 * and keeps the largest; the largest over all members wins. Each of the
 * sum of weights draws is equally likely to be the largest, so member i
 * wins with probability weight / sum, and a member leaving moves only
 * the seeds that were its own. Integers only: no libm. */
static uint64_t
parent_rendezvous(uint64_t seed, int i, unsigned weight)
{
	uint64_t	 best = 0, h, base = seed ^ pt_hash_mix64((uint64_t)i + 1);
	unsigned	 j;

	for (j = 0; j < weight; j++) {
		h = pt_hash_mix64(base + (uint64_t)j * 0x9e3779b97f4a7c15ULL);
		if (h > best)
			best = h;
	}
	return best;
}

int
parent_route_next(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;
	const struct pt_via	*v = r->via;
	int			 i, k, best = -1;
	uint64_t		 key, best_key = 0;

	for (k = 0; k < v->n; k++) {
		i = k;
		if (v->strategy == VIA_ROUND_ROBIN)
			i = (int)((r->seed + (uint64_t)k) % (uint64_t)v->n);
		if ((r->tried & (1ULL << i)) || !parent_member_up(v, i))
			continue;
		if (v->strategy == VIA_ORDERED ||
		    v->strategy == VIA_ROUND_ROBIN) {
			best = i;
			break;
		}
		key = parent_rendezvous(r->seed, i, v->weight[i]);
		if (best < 0 || key > best_key) {
			best = i;
			best_key = key;
		}
	}
	if (best < 0) {
		r->member = -1;
		r->parent = PARENT_NONE;
		return PARENT_NONE;
	}
	r->tried |= 1ULL << best;
	r->member = best;
	r->parent = v->member[best];
	return r->parent;
}

bool
parent_route_all_down(const struct pt_conn *c)
{
	return c->c_route != NULL && c->c_route->tried == 0;
}

unsigned
parent_route_retry_after(const struct pt_conn *c)
{
	const struct pt_via	*v = c->c_route->via;
	uint64_t		 now = loop_now(), first = UINT64_MAX, t;
	int			 i;

	for (i = 0; i < v->n; i++) {
		if (v->member[i] == VIA_DIRECT ||
		    parent_rec[v->member[i]] == NULL)
			continue;
		t = LOAD(parent_rec[v->member[i]]->down_until);
		if (t < first)
			first = t;
	}
	if (first == UINT64_MAX || first <= now + 1000)
		return 1;
	return (unsigned)((first - now + 999) / 1000);
}

const struct conf_parent *
parent_serving(const struct pt_conn *c)
{
	return c->c_parent > 0 ? parent_conf(c->c_parent - 1) : NULL;
}

/* ---- probes ---------------------------------------------------------- */

static void	parent_probe_connect(struct parent_probe *pr);

static void
parent_probe_end(struct parent_probe *pr, bool ok, const char *why)
{
	struct counters_parent		*r = parent_rec[pr->idx];
	const struct conf_parent	*p = parent_conf(pr->idx);

	pt_timer_stop(&pr->timer);
	if (pr->dns != NULL) {
		dns_cancel(pr->dns);
		pr->dns = NULL;
	}
	if (pr->io.fd >= 0)
		loop_io_close(&pr->io);
	pr->io.fd = -1;
	if (ok) {
		parent_up(pr->idx, "probe");
	} else {
		STORE(r->down_until, loop_now() + p->down_time_ms);
		pt_log(PT_LOG_INFO, "parent \"%s\" (%s): probe failed (%s), "
		    "next in %u s", p->name, p->address, why,
		    p->down_time_ms / 1000);
	}
	STORE(r->probe_lease, 0);
}

static void
parent_probe_io(struct loop_io *io, uint32_t events)
{
	struct parent_probe	*pr = (struct parent_probe *)((char *)io -
	    offsetof(struct parent_probe, io));
	const struct conf_parent *p = parent_conf(pr->idx);
	uint8_t			 b[4], method;
	ssize_t			 n;
	int			 err = 0;
	socklen_t		 len = sizeof(err);

	if (events & (EPOLLERR | EPOLLHUP) && !pr->greeting) {
		getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (++pr->aidx < pr->naddrs) {
			loop_io_close(&pr->io);
			pr->io.fd = -1;
			parent_probe_connect(pr);
			return;
		}
		parent_probe_end(pr, false, strerror(err ? err : ECONNREFUSED));
		return;
	}
	if (!pr->greeting) {
		if (!(events & EPOLLOUT))
			return;
		if (p->proto != PARENT_SOCKS5) {
			parent_probe_end(pr, true, NULL);
			return;
		}
		/* A SOCKS5 server answers a greeting without credentials
		 * even when it wants them (with 0x02 or 0xff). */
		n = (ssize_t)socks5c_greeting(b, p->user != NULL);
		if (send(io->fd, b, (size_t)n, MSG_NOSIGNAL) != n) {
			parent_probe_end(pr, false, "cannot send a greeting");
			return;
		}
		pr->greeting = true;
		return;
	}
	n = recv(io->fd, b, 2, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n == 2 && socks5c_method_reply(b, 2, p->user != NULL, &method) ==
	    WIRE_OK)
		parent_probe_end(pr, true, NULL);
	else
		parent_probe_end(pr, false, "no SOCKS5 answer to a greeting");
}

static void
parent_probe_timeout(struct pt_timer *t, void *arg)
{
	(void)t;
	parent_probe_end(arg, false, "timed out");
}

static void
parent_probe_connect(struct parent_probe *pr)
{
	const struct pt_addr	*a = &pr->addrs[pr->aidx];
	int			 fd;

	pr->greeting = false;
	fd = upstream_socket(a->sa.ss_family,
	    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		parent_probe_end(pr, false, strerror(errno));
		return;
	}
	if (connect(fd, (const struct sockaddr *)&a->sa, a->len) < 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		if (++pr->aidx < pr->naddrs) {
			parent_probe_connect(pr);
			return;
		}
		parent_probe_end(pr, false, strerror(errno));
		return;
	}
	if (loop_io_start(&pr->io, fd, EPOLLIN | EPOLLOUT | EPOLLET,
	    parent_probe_io) < 0) {
		close(fd);
		parent_probe_end(pr, false, "epoll_ctl");
	}
}

static void
parent_probe_resolved(void *arg, int err, const struct dns_result *res)
{
	struct parent_probe	*pr = arg;

	pr->dns = NULL;
	if (err == 0 && (pr->naddrs = dns_addrs_with_port(res,
	    parent_conf(pr->idx)->port, pr->addrs)) == 0)
		err = ENOENT;
	if (err != 0) {
		parent_probe_end(pr, false, "cannot resolve its name");
		return;
	}
	pr->aidx = 0;
	parent_probe_connect(pr);
}

static void
parent_probe_one(struct parent_probe *pr)
{
	const struct conf_parent	*p = parent_conf(pr->idx);
	struct dns_query		*q;

	pt_timer_start(&pr->timer, p->connect_timeout_ms,
	    parent_probe_timeout, pr);
	q = dns_resolve(p->host, strlen(p->host), parent_probe_resolved, pr);
	if (q != NULL)
		pr->dns = q;
}

static void
parent_on_tick(struct pt_timer *t, void *arg)
{
	struct counters_parent	*r;
	uint64_t		 now = loop_now(), lease;
	int			 i;

	(void)arg;
	for (i = 0; i < parent_cfg->nparents; i++) {
		if ((r = parent_rec[i]) == NULL || LOAD(r->down) == 0 ||
		    LOAD(r->down_until) > now)
			continue;
		/* One probe at a time across workers: the lease outlives a
		 * probe that its worker never finished (it died). */
		lease = LOAD(r->probe_lease);
		if (lease > now || !__atomic_compare_exchange_n(
		    &r->probe_lease, &lease, now +
		    parent_conf(i)->connect_timeout_ms + 1000, false,
		    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		parent_probe_one(&parent_probes[i]);
	}
	pt_timer_start(t, PARENT_PROBE_TICK_MS, parent_on_tick, NULL);
}

void
parent_probe_start(void)
{
	pt_timer_start(&parent_tick, PARENT_PROBE_TICK_MS, parent_on_tick,
	    NULL);
}

void
parent_fini(void)
{
	int	 i;

	if (parent_cfg == NULL)
		return;
	pt_timer_stop(&parent_tick);
	for (i = 0; i < parent_cfg->nparents; i++) {
		struct parent_probe	*pr = &parent_probes[i];

		if (pr->io.fd < 0 && pr->dns == NULL)
			continue;
		/* Another worker takes it on from the next tick. */
		pt_timer_stop(&pr->timer);
		if (pr->dns != NULL)
			dns_cancel(pr->dns);
		pr->dns = NULL;
		if (pr->io.fd >= 0)
			loop_io_close(&pr->io);
		pr->io.fd = -1;
		STORE(parent_rec[i]->probe_lease, 0);
	}
	pool_fini(&parent_route_pool);
}

/* ---- the module ABI (1.7) ------------------------------------------- */

void
pt_conn_set_via(struct pt_conn *c, const struct pt_via *v)
{
	c->c_via = v;
}

const char *
pt_conn_parent(struct pt_conn *c)
{
	const struct conf_parent	*p = parent_serving(c);

	return p != NULL ? p->name : NULL;
}
