/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ratelimit: a test-only module that limits every forwarded connection to
 * <rate> bytes per second in each direction with a token bucket of
 * <burst> bytes, built on the core's byte budgets (pt_conn_budget_set and
 * pt_conn_budget_add), to prove that a limit built on them is exact.
 *
 *	modules = ( { name = "ratelimit"; path = ".../ratelimit.so";
 *		      rate = 1048576;	# bytes per second, required
 *		      burst = 131072;	# bytes (default: rate / 8)
 *		      tick_ms = 20;	# refill period while spent
 *		      except_port = 0;	# target port left unlimited
 *		    } );
 *
 * At ESTABLISHED (at ACCESS for a SOCKS5 UDP association, whose
 * datagrams count) each direction gets a budget of <burst>. When the core
 * says one is spent, a timer every <tick_ms> adds what the rate earned
 * since the last refill: rate * elapsed ms / 1000, with the remainder
 * carried, so what the core may read by time t is exactly burst + rate *
 * (t - ESTABLISHED) while the client keeps the direction busy; a refill
 * never exceeds <burst> (a full bucket after an idle spell).
 *
 * The timers live in the connection's module state, so they run only
 * between ESTABLISHED and LOG, which always comes before the memory goes
 * back to the pool. After an HTTP transaction's LOG the connection is
 * unlimited until the next request's ESTABLISHED (heads between two
 * requests are not limited; each transaction starts with a full bucket).
 *
 * Like any module it sees only <portico/module.h>.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "portico/module.h"

struct ratelimit_conf {
	uint64_t	 rate;		/* bytes per second */
	uint64_t	 burst;		/* bytes */
	unsigned	 tick_ms;
	int		 except_port;	/* 0: none */
};

struct ratelimit_conn;

/* One direction's bucket. */
struct ratelimit_dir {
	struct pt_timer		 timer;
	struct ratelimit_conn	*rc;
	uint64_t		 last_ms;	/* last refill */
	uint64_t		 rem;		/* rate * ms not yet a byte */
	enum pt_dir		 dir;
};

struct ratelimit_conn {
	struct pt_conn			*conn;
	const struct ratelimit_conf	*conf;
	struct ratelimit_dir		 d[2];
	bool				 open;	/* ESTABLISHED to LOG */
};

PT_API extern const struct pt_module pt_module_ratelimit;

static const char *const ratelimit_keys[] = {
	"name", "path", "rate", "burst", "tick_ms", "except_port", NULL
};

static int
ratelimit_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct ratelimit_conf	*rl;
	config_setting_t	*m;
	const char		*name;
	long long		 v;
	int			 i, k, iv;

	for (i = 0; (m = config_setting_get_elem(node, (unsigned)i)) != NULL;
	    i++) {
		if ((name = config_setting_name(m)) == NULL)
			continue;
		for (k = 0; ratelimit_keys[k] != NULL; k++)
			if (strcmp(name, ratelimit_keys[k]) == 0)
				break;
		if (ratelimit_keys[k] == NULL) {
			*errstr = "ratelimit: unknown key";
			return -1;
		}
	}
	if ((rl = calloc(1, sizeof(*rl))) == NULL) {
		*errstr = "ratelimit: out of memory";
		return -1;
	}
	if (!config_setting_lookup_int64(node, "rate", &v) || v <= 0) {
		free(rl);
		*errstr = "ratelimit: rate (bytes per second, > 0) is required";
		return -1;
	}
	rl->rate = (uint64_t)v;
	rl->burst = rl->rate / 8 > 0 ? rl->rate / 8 : 1;
	if (config_setting_lookup_int64(node, "burst", &v)) {
		if (v <= 0) {
			free(rl);
			*errstr = "ratelimit: burst must be > 0";
			return -1;
		}
		rl->burst = (uint64_t)v;
	}
	rl->tick_ms = 20;
	if (config_setting_lookup_int(node, "tick_ms", &iv)) {
		if (iv < 1 || iv > 1000) {
			free(rl);
			*errstr = "ratelimit: tick_ms must be 1..1000";
			return -1;
		}
		rl->tick_ms = (unsigned)iv;
	}
	if (config_setting_lookup_int(node, "except_port", &iv))
		rl->except_port = iv;
	mc->ctx = rl;
	return 0;
}

static void
ratelimit_conf_free(void *ctx)
{
	free(ctx);
}

/* The timer: adds what the rate earned since the last refill. */
static void
ratelimit_on_tick(struct pt_timer *t, void *arg)
{
	struct ratelimit_dir		*d = arg;
	const struct ratelimit_conf	*rl = d->rc->conf;
	uint64_t			 now = pt_now_ms(), num, add;

	(void)t;
	num = rl->rate * (now - d->last_ms) + d->rem;
	d->last_ms = now;
	add = num / 1000;
	d->rem = num % 1000;
	if (add >= rl->burst) {
		add = rl->burst;
		d->rem = 0;
	}
	if (add == 0) {
		pt_timer_start(&d->timer, rl->tick_ms, ratelimit_on_tick, d);
		return;
	}
	pt_conn_budget_add(d->rc->conn, d->dir, add);
}

/* The core stopped reading the direction: refill from a timer. */
static void
ratelimit_on_spent(struct pt_conn *c, enum pt_dir dir, void *arg)
{
	struct ratelimit_dir	*d = arg;

	(void)c;
	(void)dir;
	if (d->rc->open)
		pt_timer_start(&d->timer, d->rc->conf->tick_ms,
		    ratelimit_on_tick, d);
}

/* Full buckets for both directions of <c>, from now. */
static void
ratelimit_start(struct pt_conn *c, struct pt_req *req,
    const struct ratelimit_conf *rl)
{
	struct ratelimit_conn	*rc = pt_conn_ctx(c, &pt_module_ratelimit);
	int			 i;

	if (rl->except_port != 0 && req->port == rl->except_port)
		return;
	rc->conn = c;
	rc->conf = rl;
	rc->open = true;
	for (i = 0; i < 2; i++) {
		rc->d[i].rc = rc;
		rc->d[i].dir = (enum pt_dir)i;
		rc->d[i].last_ms = pt_now_ms();
		rc->d[i].rem = 0;
		pt_timer_stop(&rc->d[i].timer);
		pt_conn_budget_set(c, (enum pt_dir)i, rl->burst,
		    ratelimit_on_spent, &rc->d[i]);
	}
}

static enum pt_verdict
ratelimit_established(struct pt_conn *c, struct pt_req *req, void *modctx)
{
	ratelimit_start(c, req, modctx);
	return PT_VERDICT_CONTINUE;
}

/* A UDP association has no ESTABLISHED: its datagrams flow after
 * ACCESS. */
static enum pt_verdict
ratelimit_access(struct pt_conn *c, struct pt_req *req, void *modctx)
{
	if (req->proto == PT_PROTO_UDP || (req->method.len == 3 &&
	    memcmp(req->method.ptr, "UDP", 3) == 0))
		ratelimit_start(c, req, modctx);
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
ratelimit_log(struct pt_conn *c, struct pt_req *req, void *modctx)
{
	struct ratelimit_conn	*rc = pt_conn_ctx(c, &pt_module_ratelimit);
	int			 i;

	(void)modctx;
	if (!rc->open)
		return PT_VERDICT_CONTINUE;
	rc->open = false;
	for (i = 0; i < 2; i++) {
		pt_timer_stop(&rc->d[i].timer);
		/* Keep-alive: the next request's head is not held back (a
		 * no-op on a connection that is closing). */
		if (req->proto == PT_PROTO_HTTP)
			pt_conn_budget_set(c, (enum pt_dir)i, UINT64_MAX,
			    NULL, NULL);
	}
	return PT_VERDICT_CONTINUE;
}

static const struct pt_hook ratelimit_hooks[] = {
	{ PT_PHASE_ACCESS, 0, ratelimit_access },
	{ PT_PHASE_ESTABLISHED, 0, ratelimit_established },
	{ PT_PHASE_LOG, 0, ratelimit_log },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_ratelimit = {
	PT_MODULE_INIT,
	.name = "ratelimit",
	.conf = ratelimit_conf,
	.conf_free = ratelimit_conf_free,
	.hooks = ratelimit_hooks,
	.conn_ctx_size = sizeof(struct ratelimit_conn),
};
