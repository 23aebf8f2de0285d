/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The limits module: per-class limits on connections, requests and bytes,
 * exact across workers because every count and bucket lives in one table
 * of shared memory (table.h) the master maps before it forks.
 *
 * When each limit is judged:
 * - A class whose match names only sources and listeners, and whose key
 *   is not the user, is "early": the connection joins its key at ACCEPT,
 *   where max_connections and connection_rate are judged. A refused
 *   connection takes nothing (no slot, no token). A tcp listener's is
 *   closed at once; HTTP and SOCKS have no request to answer at ACCEPT,
 *   so the refusal decided there is answered at the connection's first
 *   ACCESS (429 with Retry-After, SOCKS5 0x02).
 * - A class that needs the user (key "user", match.user) or the
 *   request's protocol is "late": the connection joins it at its first
 *   ACCESS, with the same two limits judged there.
 * - request_rate is judged at every ACCESS (each HTTP request, CONNECT,
 *   SOCKS request), for every class the connection joined.
 * - bandwidth_up/down go through the core's byte budgets: the connection
 *   takes a slice of bytes from every bucket that limits the direction,
 *   the core reads that much and says when it is spent, and when a
 *   bucket lacks a slice one timer is armed for the moment it will have
 *   one. Nothing polls.
 * - udp_packets and udp_bytes are judged per datagram of a UDP
 *   association (the ABI's datagram callback): one that the buckets
 *   cannot pay for now is dropped and counted, never delayed.
 * A connection stays a member of its keys (counted in their `conns`)
 * until its CLOSE; a key with members is never evicted from the table.
 *
 * The numbers are read from the shared class slot at every use, not from
 * the worker's copy of the configuration, so a reload that changes a
 * class reaches connections that old workers still serve.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <portico/module.h>

#include "modules/common/listener_switch.h"

#include "modules/limits/bucket.h"
#include "modules/limits/limits.h"

#define LIMITS_CONN_MAX		8	/* keys one connection joins */
#define LIMITS_UNLIMITED_GRANT	(4u << 20)

PT_API extern const struct pt_module pt_module_limits;

struct limits_member {
	uint64_t	 key;
	uint32_t	 idx;		/* in the table */
	int16_t		 cls;		/* in limits_conf.classes */
};

struct limits_cstate;

/* Reservations a busy direction keeps queued in the shared buckets, and
 * how long after it last ran dry a direction still counts as busy. */
#define LIMITS_QUEUE		4
#define LIMITS_BUSY_NS		250000000ULL	/* 250 ms */

struct limits_dir {
	struct pt_timer		 timer;
	struct limits_cstate	*cs;
	uint8_t			 dir;
	uint8_t			 on;		/* a budget is set */
	uint8_t			 n;		/* reservations queued */
	uint64_t		 spent_ns;	/* when it last ran dry */
	uint64_t		 due[LIMITS_QUEUE];	/* clock, ns */
	uint64_t		 bytes[LIMITS_QUEUE];
};

/* Per connection, zeroed at accept. */
struct limits_cstate {
	struct pt_conn		*conn;
	const struct limits_conf *lc;
	struct limits_member	 m[LIMITS_CONN_MAX];
	uint8_t			 nm;
	uint8_t			 late_done;
	int16_t			 refused;	/* class + 1, decided at ACCEPT */
	uint32_t		 retry;
	struct limits_dir	 d[2];
};

static char			 limits_err[512];
/* The master's table, inherited by every worker it forks. */
static struct table		 limits_tab;
/* Master: the configuration whose numbers are in the table, and the one
 * before it, put back if the new one is dropped (a failed reload). */
static struct limits_conf	*limits_current, *limits_prev;

static uint64_t
limits_clock(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint32_t
limits_secs(uint64_t ns)
{
	uint64_t	 s = (ns + 999999999ULL) / 1000000000ULL;

	return s == 0 ? 1 : s > 86400 ? 86400 : (uint32_t)s;
}

/* ---- keys a connection holds ------------------------------------------ */

static struct table_entry *
limits_member_entry(const struct limits_cstate *cs,
    const struct limits_member *m, const struct table_params *p,
    uint64_t now)
{
	struct limits_member	*mm = (struct limits_member *)m;
	struct table_entry	*e;

	(void)cs;
	if ((e = table_entry_at(&limits_tab, m->idx, m->key, p, now)) != NULL)
		return e;
	/* Only a member-less key is evicted, and this one has us: we are
	 * on the overflow entry of a class slot made anew. Find it again. */
	return table_get(&limits_tab, cs->lc->classes[m->cls].slot, m->key,
	    p, now, &mm->idx);
}

static void
limits_leave(struct limits_cstate *cs, uint8_t from)
{
	const struct limits_class	*c;
	struct table_params		 p;
	struct table_entry		*e;
	uint64_t			 now = limits_clock();
	uint32_t			 n;

	while (cs->nm > from) {
		cs->nm--;
		c = &cs->lc->classes[cs->m[cs->nm].cls];
		table_class_read(&limits_tab, c->slot, &p);
		e = limits_member_entry(cs, &cs->m[cs->nm], &p, now);
		n = atomic_load(&e->conns);
		while (n > 0 && !atomic_compare_exchange_weak(&e->conns, &n,
		    n - 1))
			;
	}
}

static void
limits_refused(struct limits_cstate *cs, const struct limits_class *c)
{
	pt_counter_add(cs->lc->ctr_refused, 1);
	pt_counter_add(c->ctr_refused, 1);
}

/* A connection under LIMITS_CONN_MAX classes already is not held to one
 * more: said once per class and worker, since a configuration cannot
 * always tell beforehand (limits_conf warns when it has more). */
static void
limits_warn_full(const struct limits_class *c)
{
	static uint64_t	 warned;	/* bit: class index (< 64) */

	if (c->index < 64 && (warned & ((uint64_t)1 << c->index)))
		return;
	if (c->index < 64)
		warned |= (uint64_t)1 << c->index;
	pt_log(PT_LOG_WARNING, "limits: class \"%s\" does not apply to a "
	    "connection that %d earlier classes already hold (the most one "
	    "connection joins)", c->name, LIMITS_CONN_MAX);
}

/*
 * Joins <c>'s key for <req>: max_connections and connection_rate are
 * judged. Returns 0, 1 when <req> has no subject for the class (no
 * user), or -1 when refused (*retry_out set, nothing kept).
 */
static int
limits_join(struct limits_cstate *cs, const struct limits_class *c,
    const struct pt_req *req, uint32_t *retry_out)
{
	unsigned char		 subj[PT_NAME_MAX + 1];
	struct limits_member	*m;
	struct table_params	 p;
	struct table_entry	*e;
	uint64_t		 now = limits_clock(), u, shortby = 0;
	uint32_t		 n;
	int			 len;

	if (c->slot < 0 ||
	    (len = limits_subject(c, req, subj, sizeof(subj))) < 0)
		return 1;
	if (cs->nm == LIMITS_CONN_MAX) {
		limits_warn_full(c);
		return 1;
	}
	m = &cs->m[cs->nm];
	m->cls = (int16_t)c->index;
	m->key = table_key(&limits_tab, c->slot,
	    table_class_instance(&limits_tab, c->slot), subj, (size_t)len);
	table_class_read(&limits_tab, c->slot, &p);
	e = table_get(&limits_tab, c->slot, m->key, &p, now, &m->idx);
	if (table_is_overflow(&limits_tab, m->idx))
		pt_counter_add(cs->lc->ctr_overflow, 1);
	n = atomic_load(&e->conns);
	do {
		if (p.max_conns != 0 && n >= p.max_conns) {
			*retry_out = 1;
			return -1;
		}
	} while (!atomic_compare_exchange_weak(&e->conns, &n, n + 1));
	cs->nm++;
	if (p.rate[LB_CONN] != 0) {
		u = bucket_units(now, p.epoch_ns, p.rate[LB_CONN]);
		if (bucket_take(&e->tat[LB_CONN], u, p.burst[LB_CONN], 1, 1,
		    &shortby) == 0) {
			limits_leave(cs, (uint8_t)(cs->nm - 1));
			*retry_out = limits_secs(bucket_ns_until(now,
			    p.epoch_ns, p.rate[LB_CONN], u + shortby));
			return -1;
		}
	}
	return 0;
}

/* Gives back the connection tokens members [from, nm) took (a later
 * class refused the connection: it did not come in). */
static void
limits_unjoin(struct limits_cstate *cs, uint8_t from)
{
	const struct limits_class	*c;
	struct table_params		 p;
	struct table_entry		*e;
	uint64_t			 now = limits_clock();
	uint8_t				 i;

	for (i = from; i < cs->nm; i++) {
		c = &cs->lc->classes[cs->m[i].cls];
		table_class_read(&limits_tab, c->slot, &p);
		if (p.rate[LB_CONN] == 0)
			continue;
		e = limits_member_entry(cs, &cs->m[i], &p, now);
		bucket_give(&e->tat[LB_CONN], bucket_units(now, p.epoch_ns,
		    p.rate[LB_CONN]), 1);
	}
	limits_leave(cs, from);
}

/* Joins every class of the kind <late> that matches; -1 and the refusing
 * class in *cls_out when one refuses (then none is joined). */
static int
limits_join_all(struct limits_cstate *cs, const struct pt_req *req,
    bool late, int *cls_out)
{
	const struct limits_class	*c;
	uint8_t				 from = cs->nm;
	size_t				 i;

	for (i = 0; i < cs->lc->nclasses; i++) {
		c = &cs->lc->classes[i];
		if (c->late != late || !limits_match(c, req))
			continue;
		if (limits_join(cs, c, req, &cs->retry) < 0) {
			limits_unjoin(cs, from);
			*cls_out = (int)i;
			return -1;
		}
	}
	return 0;
}

/* ---- bandwidth ---------------------------------------------------------- */

static void	limits_on_timer(struct pt_timer *t, void *arg);

/* Whether any bucket limits direction <dir> of <cs> now. */
static bool
limits_dir_limited(const struct limits_cstate *cs, int dir)
{
	const struct limits_class	*c;
	uint8_t				 i;

	for (i = 0; i < cs->nm; i++) {
		c = &cs->lc->classes[cs->m[i].cls];
		if (c->p.rate[dir == PT_DIR_UP ? LB_UP : LB_DOWN] != 0)
			return true;
	}
	return false;
}

/*
 * Reserves direction <d>'s next slice in every bucket that limits it:
 * the bytes, and in *due_out the clock time when the last of the
 * buckets has earned them. 0 when nothing limits the direction now.
 * Reservations queue in the shared bucket in the order they are made,
 * and each starts where the one before it ended, not when its bytes
 * happened to be read: the rate stays exact, and a key's busy
 * connections take turns whichever worker serves them.
 */
static uint64_t
limits_reserve(struct limits_dir *d, uint64_t now, uint64_t *due_out)
{
	struct limits_cstate		*cs = d->cs;
	const struct limits_class	*c;
	struct table_params		 p;
	struct table_entry		*e;
	uint64_t			 want = UINT64_MAX, wait = 0, w, u, at;
	int				 b;
	uint8_t				 i;

	b = d->dir == PT_DIR_UP ? LB_UP : LB_DOWN;
	for (i = 0; i < cs->nm; i++) {
		c = &cs->lc->classes[cs->m[i].cls];
		table_class_read(&limits_tab, c->slot, &p);
		if (p.rate[b] != 0 && bucket_slice(p.rate[b], p.burst[b]) <
		    want)
			want = bucket_slice(p.rate[b], p.burst[b]);
	}
	if (want == UINT64_MAX)
		return 0;
	for (i = 0; i < cs->nm; i++) {
		c = &cs->lc->classes[cs->m[i].cls];
		table_class_read(&limits_tab, c->slot, &p);
		if (p.rate[b] == 0)
			continue;
		e = limits_member_entry(cs, &cs->m[i], &p, now);
		u = bucket_units(now, p.epoch_ns, p.rate[b]);
		at = bucket_reserve(&e->tat[b], u, p.burst[b], want);
		if (at <= u)
			continue;
		w = bucket_ns_until(now, p.epoch_ns, p.rate[b], at);
		if (w > wait)
			wait = w;
		pt_counter_add(c->ctr_delayed, (int64_t)want);
	}
	if (wait > 0)
		pt_counter_add(cs->lc->ctr_delayed, (int64_t)want);
	*due_out = now + wait;
	return want;
}

/* Hands the core every queued slice that is due, and arms the timer for
 * the next one. */
static void
limits_deliver(struct limits_dir *d, uint64_t now)
{
	while (d->n > 0 && d->due[0] <= now) {
		pt_conn_budget_add(d->cs->conn, (enum pt_dir)d->dir,
		    d->bytes[0]);
		d->n--;
		memmove(&d->due[0], &d->due[1], d->n * sizeof(d->due[0]));
		memmove(&d->bytes[0], &d->bytes[1],
		    d->n * sizeof(d->bytes[0]));
	}
	if (d->n > 0)
		pt_timer_start(&d->timer, (d->due[0] - now + 999999) /
		    1000000, limits_on_timer, d);
}

/*
 * Keeps LIMITS_QUEUE reservations queued for a busy direction: the next
 * slices are already in the bucket's queue while the connection reads the
 * one it has, so a worker or a client that runs late (a loaded machine)
 * does not lose its turn to connections on other workers. A direction
 * that has not run dry for LIMITS_BUSY_NS stops reserving: an idle
 * connection holds at most that long's share, as budget it will use when
 * it reads again.
 */
static void
limits_top_up(struct limits_dir *d)
{
	uint64_t	 now = limits_clock(), due, bytes;

	while (d->n < LIMITS_QUEUE) {
		if ((bytes = limits_reserve(d, now, &due)) == 0) {
			/* A reload lifted the limit: large grants, checked
			 * again now and then in case it comes back. */
			if (d->n == 0)
				pt_conn_budget_add(d->cs->conn,
				    (enum pt_dir)d->dir,
				    LIMITS_UNLIMITED_GRANT);
			break;
		}
		d->due[d->n] = due;
		d->bytes[d->n++] = bytes;
	}
	pt_timer_stop(&d->timer);
	limits_deliver(d, now);
}

/* The connection closes: what it reserved and was never given goes back
 * to the buckets, for the key's other connections. */
static void
limits_unreserve(struct limits_dir *d)
{
	struct limits_cstate		*cs = d->cs;
	const struct limits_class	*c;
	struct table_params		 p;
	struct table_entry		*e;
	uint64_t			 now = limits_clock(), left = 0;
	int				 b;
	uint8_t				 i;

	for (i = 0; i < d->n; i++)
		left += d->bytes[i];
	d->n = 0;
	if (left == 0)
		return;
	b = d->dir == PT_DIR_UP ? LB_UP : LB_DOWN;
	for (i = 0; i < cs->nm; i++) {
		c = &cs->lc->classes[cs->m[i].cls];
		table_class_read(&limits_tab, c->slot, &p);
		if (p.rate[b] == 0)
			continue;
		e = limits_member_entry(cs, &cs->m[i], &p, now);
		bucket_give(&e->tat[b], bucket_units(now, p.epoch_ns,
		    p.rate[b]), left);
	}
}

static void
limits_on_timer(struct pt_timer *t, void *arg)
{
	struct limits_dir	*d = arg;
	uint64_t		 now = limits_clock();

	(void)t;
	limits_deliver(d, now);
	if (now - d->spent_ns <= LIMITS_BUSY_NS)
		limits_top_up(d);
}

static void
limits_on_spent(struct pt_conn *conn, enum pt_dir dir, void *arg)
{
	struct limits_dir	*d = arg;

	(void)conn;
	(void)dir;
	d->spent_ns = limits_clock();
	if (d->n == 0)
		limits_top_up(d);
}

/* Budgets for the directions a joined class limits (once each). */
static void
limits_bw_start(struct limits_cstate *cs)
{
	struct limits_dir	*d;
	int			 i;

	for (i = 0; i < 2; i++) {
		d = &cs->d[i];
		if (d->on || !limits_dir_limited(cs, i))
			continue;
		d->on = 1;
		d->cs = cs;
		d->dir = (uint8_t)i;
		/* Spent at once: the first slice comes from the bucket. */
		pt_conn_budget_set(cs->conn, (enum pt_dir)i, 0,
		    limits_on_spent, d);
	}
}

/* ---- UDP datagrams -------------------------------------------------- */

/*
 * The core's per-datagram callback (ABI 1.3) for a UDP association: one
 * token of every udp_packets bucket and <len> of every udp_bytes bucket
 * of the keys the association joined, both directions alike, all or
 * none. A datagram one of them cannot pay for now is dropped: the core
 * counts it, and so do the class that refused it and limits_udp_dropped.
 * Nothing is delayed, so nothing is lost uncounted in a socket buffer.
 * A datagram larger than a udp_bytes burst can never pass.
 */
static enum pt_verdict
limits_datagram(struct pt_conn *conn, enum pt_dir dir, size_t len,
    void *modctx)
{
	struct limits_cstate		*cs = pt_conn_ctx(conn, &pt_module_limits);
	const struct limits_class	*c;
	struct table_params		 p;
	struct table_entry		*e;
	_Atomic uint64_t		*taken[2 * LIMITS_CONN_MAX];
	uint64_t			 us[2 * LIMITS_CONN_MAX];
	uint64_t			 amt[2 * LIMITS_CONN_MAX], n[2];
	uint64_t			 now;
	static const int		 bs[2] = { LB_UDP_PKT, LB_UDP };
	uint8_t				 i, k, nt = 0;

	(void)dir;
	(void)modctx;
	if (cs == NULL || cs->nm == 0)
		return PT_VERDICT_CONTINUE;
	now = limits_clock();
	n[0] = 1;
	n[1] = len;
	for (i = 0; i < cs->nm; i++) {
		c = &cs->lc->classes[cs->m[i].cls];
		table_class_read(&limits_tab, c->slot, &p);
		if (p.rate[LB_UDP] == 0 && p.rate[LB_UDP_PKT] == 0)
			continue;
		e = limits_member_entry(cs, &cs->m[i], &p, now);
		for (k = 0; k < 2; k++) {
			if (p.rate[bs[k]] == 0 || n[k] == 0)
				continue;
			us[nt] = bucket_units(now, p.epoch_ns, p.rate[bs[k]]);
			if (bucket_take(&e->tat[bs[k]], us[nt], p.burst[bs[k]],
			    n[k], n[k], NULL) == 0) {
				/* Those that paid get it back. */
				while (nt > 0) {
					nt--;
					bucket_give(taken[nt], us[nt], amt[nt]);
				}
				pt_counter_add(cs->lc->ctr_dropped, 1);
				pt_counter_add(c->ctr_dropped, 1);
				return PT_VERDICT_DENY;
			}
			amt[nt] = n[k];
			taken[nt++] = &e->tat[bs[k]];
		}
	}
	return PT_VERDICT_CONTINUE;
}

/* ---- hooks -------------------------------------------------------------- */

static enum pt_verdict
limits_deny(struct pt_conn *conn, const struct limits_class *c,
    uint32_t retry)
{
	struct pt_answer	 a;

	memset(&a, 0, sizeof(a));
	a.http_status = 429;
	a.retry_after = retry;
	a.socks_reply = 0x02;		/* not allowed by ruleset */
	a.reason = c->name;
	pt_conn_answer(conn, &a);
	return PT_VERDICT_DENY;
}

static struct limits_cstate *
limits_state(struct pt_conn *conn, const struct limits_conf *lc)
{
	struct limits_cstate	*cs = pt_conn_ctx(conn, &pt_module_limits);

	if (cs->conn == NULL) {
		cs->conn = conn;
		cs->lc = lc;
	}
	return cs;
}

static enum pt_verdict
limits_accept(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct limits_conf	*lc = modctx;
	struct limits_cstate		*cs = limits_state(conn, lc);
	int				 cls;

	if (!lc->any_early)
		return PT_VERDICT_CONTINUE;
	if (limits_join_all(cs, req, false, &cls) < 0) {
		limits_refused(cs, &lc->classes[cls]);
		if (req->proto == PT_PROTO_TCP)
			return limits_deny(conn, &lc->classes[cls], cs->retry);
		cs->refused = (int16_t)(cls + 1);
		return PT_VERDICT_CONTINUE;
	}
	limits_bw_start(cs);
	return PT_VERDICT_CONTINUE;
}

/* request_rate for every key the connection holds: one token each, or
 * none taken when one refuses. */
static int
limits_request(struct limits_cstate *cs, int *cls_out)
{
	const struct limits_class	*c;
	struct table_params		 p;
	struct table_entry		*e;
	_Atomic uint64_t		*taken[LIMITS_CONN_MAX];
	uint64_t			 now = limits_clock(), u, shortby;
	uint64_t			 us[LIMITS_CONN_MAX];
	uint8_t				 i, n = 0;

	for (i = 0; i < cs->nm; i++) {
		c = &cs->lc->classes[cs->m[i].cls];
		table_class_read(&limits_tab, c->slot, &p);
		if (p.rate[LB_REQ] == 0)
			continue;
		e = limits_member_entry(cs, &cs->m[i], &p, now);
		u = bucket_units(now, p.epoch_ns, p.rate[LB_REQ]);
		shortby = 0;
		if (bucket_take(&e->tat[LB_REQ], u, p.burst[LB_REQ], 1, 1,
		    &shortby) == 0) {
			while (n > 0) {
				n--;
				bucket_give(taken[n], us[n], 1);
			}
			cs->retry = limits_secs(bucket_ns_until(now,
			    p.epoch_ns, p.rate[LB_REQ], u + shortby));
			*cls_out = cs->m[i].cls;
			return -1;
		}
		taken[n] = &e->tat[LB_REQ];
		us[n++] = u;
	}
	return 0;
}

static enum pt_verdict
limits_access(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct limits_conf	*lc = modctx;
	struct limits_cstate		*cs = limits_state(conn, lc);
	int				 cls;

	if (cs->refused != 0)
		return limits_deny(conn, &lc->classes[cs->refused - 1],
		    cs->retry);
	if (lc->any_late && !cs->late_done) {
		if (limits_join_all(cs, req, true, &cls) < 0) {
			limits_refused(cs, &lc->classes[cls]);
			return limits_deny(conn, &lc->classes[cls], cs->retry);
		}
		cs->late_done = 1;
	}
	if (limits_request(cs, &cls) < 0) {
		limits_refused(cs, &lc->classes[cls]);
		return limits_deny(conn, &lc->classes[cls], cs->retry);
	}
	limits_bw_start(cs);
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
limits_close(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct limits_cstate	*cs = pt_conn_ctx(conn, &pt_module_limits);

	(void)req;
	(void)modctx;
	if (cs->conn == NULL)
		return PT_VERDICT_CONTINUE;
	pt_timer_stop(&cs->d[0].timer);
	pt_timer_stop(&cs->d[1].timer);
	if (cs->d[0].on)
		limits_unreserve(&cs->d[0]);
	if (cs->d[1].on)
		limits_unreserve(&cs->d[1]);
	limits_leave(cs, 0);
	return PT_VERDICT_CONTINUE;
}

/* ---- life cycle ----------------------------------------------------------- */

static int
limits_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct limits_conf	*lc;
	struct limits_class	*c;
	size_t			 i;

	*errstr = limits_err;
	if ((lc = limits_conf_parse(node, limits_err, sizeof(limits_err),
	    &mc->where)) == NULL)
		return -1;
	if (lc->nclasses > LIMITS_CONN_MAX)
		pt_log(PT_LOG_WARNING, "limits: %zu classes: a connection "
		    "that matches more than %d of them is held to the first %d "
		    "only", lc->nclasses, LIMITS_CONN_MAX, LIMITS_CONN_MAX);
	lc->ctr_refused = pt_counter_register("limits_refused");
	lc->ctr_delayed = pt_counter_register("limits_delayed_bytes");
	lc->ctr_overflow = pt_counter_register("limits_table_overflow");
	lc->ctr_dropped = pt_counter_register("limits_udp_dropped");
	if (lc->ctr_refused < 0 || lc->ctr_delayed < 0 ||
	    lc->ctr_overflow < 0 || lc->ctr_dropped < 0) {
		snprintf(limits_err, sizeof(limits_err),
		    "pt_counter_register failed");
		limits_conf_free(lc);
		return -1;
	}
	/* Per class, labelled class="<name>" (a status listener's
	 * families portico_module_limits_class_*_total), when there is
	 * room: a class without its own counters still counts in the
	 * totals above. */
	for (i = 0; i < lc->nclasses; i++) {
		c = &lc->classes[i];
		c->ctr_refused = pt_counter_register_label(
		    "limits_class_refused", "class", c->name);
		c->ctr_delayed = pt_counter_register_label(
		    "limits_class_delayed_bytes", "class", c->name);
		c->ctr_dropped = pt_counter_register_label(
		    "limits_class_udp_dropped", "class", c->name);
		if (c->ctr_refused < 0 || c->ctr_delayed < 0 ||
		    c->ctr_dropped < 0)
			pt_log(PT_LOG_WARNING, "limits: class \"%s\": no "
			    "counters left for it (it counts in "
			    "limits_refused, limits_delayed_bytes and "
			    "limits_udp_dropped)", c->name);
	}
	mc->ctx = lc;
	return 0;
}

static void
limits_conf_release(void *ctx)
{
	limits_conf_free(ctx);
}

/* Puts <lc>'s classes in the table: slots found by name keep their keys
 * and counts; the slots no class of <lc> uses are freed. */
static int
limits_apply(struct limits_conf *lc)
{
	uint64_t	 keep[TABLE_CLASSES / 64] = { 0 }, now = limits_clock();
	size_t		 i;
	int		 slot;

	for (i = 0; i < lc->nclasses; i++) {
		slot = table_class_set(&limits_tab, lc->classes[i].name,
		    lc->classes[i].shape, &lc->classes[i].p, now);
		if (slot < 0) {
			pt_log(PT_LOG_ERR, "limits: class \"%s\": no free "
			    "class slot (%d in use across reloads)",
			    lc->classes[i].name, TABLE_CLASSES);
			return -1;
		}
		lc->classes[i].slot = slot;
		keep[slot / 64] |= 1ULL << (slot % 64);
	}
	table_class_retire(&limits_tab, keep);
	return 0;
}

static int
limits_init_master(void *ctx)
{
	struct limits_conf	*lc = ctx;
	struct table		 old = limits_tab;
	int			 rc;

	if (limits_tab.base == NULL || limits_tab.nentries !=
	    (lc->table_size + TABLE_GROUP - 1) / TABLE_GROUP * TABLE_GROUP) {
		/* Workers forked before keep their own mapping of the old
		 * table; the master only drops its view of it. */
		if ((rc = table_open(&limits_tab, lc->table_size)) < 0) {
			pt_log_err(PT_LOG_ERR, -rc, "limits: mmap %u keys",
			    lc->table_size);
			limits_tab = old;
			return -1;
		}
		if (old.base != NULL)
			table_close(&old);
		pt_log(PT_LOG_NOTICE, "limits: %u keys in %zu KiB of shared "
		    "memory", limits_tab.nentries, limits_tab.size / 1024);
	}
	if (limits_apply(lc) < 0)
		return -1;
	limits_prev = limits_current;
	limits_current = lc;
	return 0;
}

static void
limits_exit_master(void *ctx)
{
	/* The configuration just adopted is dropped: the reload failed
	 * after init_master, so the running one's numbers go back. */
	if (ctx == limits_current && limits_prev != NULL) {
		limits_current = limits_prev;
		limits_prev = NULL;
		(void)limits_apply(limits_current);
		return;
	}
	if (ctx == limits_prev)
		limits_prev = NULL;
	if (ctx == limits_current)
		limits_current = NULL;
}

/* A listener's `limits = { enabled = false; }` exempts it. */
static int
limits_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	(void)modctx;
	*lctx_out = NULL;
	*errstr = limits_err;
	return listener_switch(mc, node, "limits", limits_err, sizeof(limits_err));
}

static const struct pt_hook limits_hooks[] = {
	{ PT_PHASE_ACCEPT, 5, limits_accept },
	{ PT_PHASE_ACCESS, 5, limits_access },
	{ PT_PHASE_CLOSE, 5, limits_close },
	{ 0, 0, NULL }
};

const struct pt_module pt_module_limits = {
	PT_MODULE_INIT,
	.name = "limits",
	.conf = limits_conf,
	.conf_free = limits_conf_release,
	.init_master = limits_init_master,
	.exit_master = limits_exit_master,
	.listener_conf = limits_listener_conf,
	.hooks = limits_hooks,
	.conn_ctx_size = sizeof(struct limits_cstate),
	.datagram = limits_datagram,
};
