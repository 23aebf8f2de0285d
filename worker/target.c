/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dial path, written once for HTTP, CONNECT, WebSocket, SOCKS and
 * TCP: ACCESS, then the target's addresses (given, or resolved from
 * c_req.host), then for each address in turn DIAL and connect, and
 * ESTABLISHED on the first that connects. Between the steps c_timer
 * bounds the hooks with limits.header_timeout (the protocol's callback
 * says what a timeout means for it); dial.c replaces it with
 * limits.connect_timeout while a connect is in progress. A connect that
 * cannot have a socket for want of a descriptor waits for one
 * (target_wait_fd), connect_timeout at most.
 *
 * Every refusal goes through here as well, whatever the phase: it is
 * counted and logged in one place, the module's answer (pt_conn_answer)
 * is handed over, and the protocol's ops decide the bytes on its wire.
 * What is not here: parsing, the protocol's own answers, and what a
 * protocol does once its upstream leg is open.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "worker/target.h"
#include "common/conf_types.h"
#include "common/counters.h"
#include "common/log.h"
#include "worker/conn.h"
#include "worker/dial.h"
#include "worker/dns.h"
#include "worker/loop.h"
#include "worker/outbound.h"
#include "worker/parent.h"
#include "worker/phase.h"
#include "worker/req.h"
#include "worker/worker_self.h"

/* How often a connection waiting for a descriptor tries again. */
#define TARGET_FD_RETRY_MS	50

static const char *const target_phase_names[PT_PHASE_COUNT] = {
	[PT_PHASE_ACCEPT] = "ACCEPT",
	[PT_PHASE_AUTH] = "AUTH",
	[PT_PHASE_ACCESS] = "ACCESS",
	[PT_PHASE_DIAL] = "DIAL",
	[PT_PHASE_ESTABLISHED] = "ESTABLISHED",
	[PT_PHASE_LOG] = "LOG",
	[PT_PHASE_DATAGRAM] = "DATAGRAM",
	[PT_PHASE_CLOSE] = "CLOSE",
};

void
target_init(struct pt_conn *c, const struct target_ops *ops,
    struct pt_addr *store)
{
	struct target	*t = &c->c_target;

	memset(t, 0, sizeof(*t));
	t->ops = ops;
	t->store = store;
}

void
target_known(struct pt_conn *c, const struct pt_addr *addrs, int n)
{
	struct target	*t = &c->c_target;

	t->addrs = addrs;
	t->naddrs = n;
	t->idx = 0;
	t->reused = false;
}

void
target_reuse(struct pt_conn *c, const struct pt_addr *a)
{
	target_known(c, a, 1);
	c->c_target.reused = true;
}

const struct pt_addr *
target_addr(const struct pt_conn *c)
{
	const struct target	*t = &c->c_target;

	return t->idx < t->naddrs ? &t->addrs[t->idx] : NULL;
}

bool
target_resolving(const struct pt_conn *c)
{
	return c->c_target.dns != NULL;
}

bool
target_waited(const struct pt_conn *c)
{
	return c->c_waited || c->c_target.resolved_late;
}

void
target_stop(struct pt_conn *c)
{
	struct target	*t = &c->c_target;

	if (t->dns != NULL) {
		dns_cancel(t->dns);
		t->dns = NULL;
	}
	parent_dial_stop(c);
}

/* ---- refusals ------------------------------------------------------- */

static void
target_refuse(struct pt_conn *c, enum pt_phase phase, enum pt_verdict v,
    const char *why)
{
	static const struct pt_answer	 none;
	struct target_refusal		 r;

	r.phase = phase;
	r.verdict = v;
	r.why = why;
	/* A module's answer goes with its DENY only: an ERROR is a failure
	 * of the module, and the core's own refusals have their reason. */
	r.answer = v == PT_VERDICT_DENY && why == NULL ? &c->c_answer : &none;
	if (v == PT_VERDICT_DENY) {
		counters_add(CTR_DENIED, 1);
		if (r.answer->reason != NULL)
			c->c_req.error = r.answer->reason;
		else if (why != NULL && c->c_req.error == NULL)
			c->c_req.error = why;
	}
	pt_clog(c, PT_LOG_DEBUG, "%s: %s%s%s", target_phase_names[phase],
	    v == PT_VERDICT_DENY ? "denied" : "module error",
	    c->c_req.error != NULL ? ": " : "",
	    c->c_req.error != NULL ? c->c_req.error : "");
	c->c_target.ops->refuse(c, &r);
}

bool
target_refused(struct pt_conn *c, enum pt_phase phase, enum pt_verdict v)
{
	if (v != PT_VERDICT_DENY && v != PT_VERDICT_ERROR)
		return false;
	target_refuse(c, phase, v, NULL);
	return true;
}

void
target_deny(struct pt_conn *c, enum pt_phase phase, const char *why)
{
	target_refuse(c, phase, PT_VERDICT_DENY, why);
}

bool
target_auth_refused(struct pt_conn *c, enum pt_verdict v)
{
	/* The credentials are the proxy's; they never go upstream and
	 * should not outlive the phase that judged them, whatever it
	 * said (LOG hooks must not see a refused password either). */
	c->c_req.password.ptr = NULL;
	c->c_req.password.len = 0;
	if (target_refused(c, PT_PHASE_AUTH, v))
		return true;
	/* A name no module judged is only a claim (Basic credentials, or
	 * username/password a SOCKS5 client chose unasked): later phases
	 * (an ACL's user rules) and the log must not take it for a user. */
	if (!phase_applies(c, PT_PHASE_AUTH))
		req_user_reset(c);
	return false;
}

void
pt_conn_answer(struct pt_conn *c, const struct pt_answer *a)
{
	if (a == NULL) {
		memset(&c->c_answer, 0, sizeof(c->c_answer));
		return;
	}
	c->c_answer = *a;
	/* Only a refusal's status makes sense here; anything else keeps
	 * the core's default for the phase. */
	if (a->http_status < 400 || a->http_status > 599)
		c->c_answer.http_status = 0;
}

/* ---- the path ------------------------------------------------------- */

static void	target_dial_phase(struct pt_conn *c);
static void	target_route(struct pt_conn *c);
static bool	target_route_next(struct pt_conn *c, int err);

/* Hooks get header_timeout between the steps, as before ACCESS. */
static void
target_timer(struct pt_conn *c)
{
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.header_timeout_ms,
	    c->c_target.ops->on_timer, c);
}

static void
target_on_established(struct pt_conn *c, enum pt_verdict v)
{
	if (target_refused(c, PT_PHASE_ESTABLISHED, v))
		return;
	c->c_target.ops->established(c);
}

void
target_timer_restart(struct pt_conn *c)
{
	target_timer(c);
}

void
target_established(struct pt_conn *c, bool fresh)
{
	target_timer(c);
	outbound_established(c, fresh);
	phase_run(c, PT_PHASE_ESTABLISHED, target_on_established);
}

/* About to connect after a wait: whether the protocol still wants to
 * (ops->may_dial); false when it ended the connection. */
static bool
target_may_dial(struct pt_conn *c)
{
	const struct target	*t = &c->c_target;

	return t->ops->may_dial == NULL || !target_waited(c) ||
	    t->ops->may_dial(c);
}

bool
target_dial_passed(struct pt_conn *c, enum pt_verdict v)
{
	/* Refused before any connect: nothing was reached, so LOG sees no
	 * target (the access log's upstream is what was connected to; the
	 * refusal's reason says why). */
	if (v == PT_VERDICT_DENY || v == PT_VERDICT_ERROR)
		memset(&c->c_req.target, 0, sizeof(c->c_req.target));
	if (target_refused(c, PT_PHASE_DIAL, v))
		return false;
	/* Only after a wait: the client had no time to leave otherwise,
	 * and the common path costs nothing more. */
	return target_may_dial(c);
}

static void	target_on_dialed(struct pt_conn *c, int err);

/* Connects to what DIAL judged, within <timeout_ms>. */
static void
target_connect(struct pt_conn *c, unsigned timeout_ms)
{
	struct pt_addr	 to;

	sockaddr_unmap((const struct sockaddr *)&c->c_req.target, &to);
	dial_start(c, &to, timeout_ms, target_on_dialed);
}

static void
target_on_fd_retry(struct pt_timer *tm, void *arg)
{
	struct pt_conn	*c = arg;
	uint64_t	 waited = loop_now() - c->c_target.fd_wait_since;
	unsigned	 ms = worker_self()->conf->limits.connect_timeout_ms;

	(void)tm;
	target_connect(c, waited < ms ? ms - (unsigned)waited : 1);
}

/*
 * No descriptor for the upstream socket (EMFILE, ENFILE: UDP
 * associations or pipes took the worker's reserve after this connection
 * was accepted). The connection waits for one, trying again every
 * TARGET_FD_RETRY_MS, as the connections not yet accepted wait in the
 * listen queue (accepting pauses meanwhile), up to connect_timeout from
 * the first failure. True while it waits.
 */
static bool
target_wait_fd(struct pt_conn *c, int err)
{
	struct target	*t = &c->c_target;
	uint64_t	 now = loop_now();

	if (t->fd_wait_since == 0) {
		t->fd_wait_since = now;
		pt_clog(c, PT_LOG_INFO, "no descriptor for the upstream socket "
		    "(%s): waiting for one", strerror(err));
	}
	if (now - t->fd_wait_since >=
	    worker_self()->conf->limits.connect_timeout_ms) {
		counters_add(CTR_UPSTREAM_FAILED, 1);
		return false;
	}
	conn_pool_nofile();
	pt_timer_start(&c->c_timer, TARGET_FD_RETRY_MS, target_on_fd_retry, c);
	return true;
}

static void
target_on_dialed(struct pt_conn *c, int err)
{
	struct target	*t = &c->c_target;

	if (err == EMFILE || err == ENFILE) {
		if (target_wait_fd(c, err))
			return;
		/* Another address would want a descriptor too. */
		t->fd_wait_since = 0;
		t->ops->fail(c, TARGET_FAIL_CONNECT, err);
		return;
	}
	t->fd_wait_since = 0;
	if (err != 0 && t->idx + 1 >= t->naddrs &&
	    target_route_next(c, err)) {
		return;
	}
	if (err != 0 && t->idx + 1 >= t->naddrs) {
		t->ops->fail(c, TARGET_FAIL_CONNECT, err);
		return;
	}
	/* dial.c's timer is gone: the next DIAL or the ESTABLISHED hooks
	 * get header_timeout. */
	target_timer(c);
	if (err != 0) {
		/* The next address, of the other family first when the
		 * resolver interleaved them: a dead IPv6 route falls back
		 * to IPv4 (RFC 8305, in turn). */
		t->idx++;
		target_dial_phase(c);
		return;
	}
	outbound_established(c, true);
	phase_run(c, PT_PHASE_ESTABLISHED, target_on_established);
}

static void
target_on_dial(struct pt_conn *c, enum pt_verdict v)
{
	struct target	*t = &c->c_target;

	if (!target_dial_passed(c, v))
		return;
	/* A DIAL hook (an acl rule judging the address) may have chosen
	 * an egress the kept upstream does not leave from. */
	if (t->reused && t->ops->unreuse != NULL &&
	    !outbound_fits(c, target_addr(c), &c->c_up_local) &&
	    !t->ops->unreuse(c))
		t->reused = false;
	if (t->reused) {
		outbound_established(c, false);
		phase_run(c, PT_PHASE_ESTABLISHED, target_on_established);
		return;
	}
	/* What DIAL judged is what we connect to. */
	target_connect(c, worker_self()->conf->limits.connect_timeout_ms);
}

/*
 * DIAL sees the address about to be tried in c_req.target, an IPv4-mapped
 * IPv6 address (::ffff:10.0.0.1, from a SOCKS5 request or an IPv6 literal)
 * as the IPv4 address it reaches, so that a rule on 10/8 holds however the
 * client wrote it; the connect then uses that IPv4 address.
 */
static void
target_dial_phase(struct pt_conn *c)
{
	struct pt_addr	 shown;

	sockaddr_unmap((const struct sockaddr *)&target_addr(c)->sa, &shown);
	memset(&c->c_req.target, 0, sizeof(c->c_req.target));
	memcpy(&c->c_req.target, &shown.sa, shown.len);
	phase_run(c, PT_PHASE_DIAL, target_on_dial);
}

static void
target_on_dns(void *arg, int err, const struct dns_result *res)
{
	struct pt_conn	*c = arg;
	struct target	*t = &c->c_target;

	/* Pending means the answer came from the loop, later. */
	if (t->dns != NULL)
		t->resolved_late = true;
	t->dns = NULL;
	if (err == 0 && (t->naddrs = dns_addrs_with_port(res, c->c_req.port,
	    t->store)) == 0)
		err = ENOENT;
	if (err != 0) {
		t->naddrs = 0;
		t->ops->fail(c, TARGET_FAIL_RESOLVE, err);
		return;
	}
	/* An egress of one family: only its family's addresses are tried. */
	t->naddrs = outbound_order(c, t->store, t->naddrs);
	t->addrs = t->store;
	t->idx = 0;
	target_dial_phase(c);
}

void
target_resolve(struct pt_conn *c)
{
	struct target		*t = &c->c_target;
	struct dns_query	*q;

	t->addrs = NULL;
	t->naddrs = t->idx = 0;
	t->reused = false;
	/* The answer may come before dns_resolve returns (a literal, a
	 * cache hit) and may have closed the connection by then: keep the
	 * handle only when the query is really pending. */
	q = dns_resolve(c->c_req.host.ptr, c->c_req.host.len, target_on_dns, c);
	if (q != NULL)
		t->dns = q;
}

static void
target_on_access(struct pt_conn *c, enum pt_verdict v)
{
	struct target	*t = &c->c_target;

	if (target_refused(c, PT_PHASE_ACCESS, v))
		return;
	/* Through parents or not: HTTP's access_ok takes a kept upstream
	 * of the route's first member. */
	target_route(c);
	if (t->ops->access_ok != NULL && !t->ops->access_ok(c))
		return;
	if (t->reused && c->c_route != NULL && c->c_route->via != NULL &&
	    c->c_route->parent >= 0) {
		parent_reuse(c);
		return;
	}
	if (t->reused) {
		target_dial_phase(c);
		return;
	}
	target_go(c);
}

void
target_redial(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;

	if (r != NULL && r->via != NULL && r->parent >= 0)
		parent_dial(c);
	else
		target_resolve(c);
}

/*
 * The route of this transaction: a `via` choice applies, its first
 * member is picked (parent.c). Every member down: the protocol's
 * NO_PARENT failure at once (503), for later (target_go).
 */
static void
target_route(struct pt_conn *c)
{
	if (!parent_route_begin(c))
		return;
	(void)parent_route_next(c);
}

void
target_direct(struct pt_conn *c)
{
	struct target	*t = &c->c_target;

	if (t->naddrs > 0) {
		t->idx = 0;
		target_dial_phase(c);
	} else {
		target_resolve(c);
	}
}

void
target_go(struct pt_conn *c)
{
	struct parent_route	*r = c->c_route;

	if (r == NULL || r->via == NULL || r->parent == VIA_DIRECT) {
		target_direct(c);
		return;
	}
	if (r->parent == PARENT_NONE) {
		c->c_req.error = "every parent of the route is down";
		c->c_target.ops->fail(c, TARGET_FAIL_NO_PARENT, EHOSTUNREACH);
		return;
	}
	parent_dial(c);
}

/*
 * A direct member of a route failed on its last address: the route's
 * next member, if any. True when it took over.
 */
static bool
target_route_next(struct pt_conn *c, int err)
{
	struct parent_route	*r = c->c_route;
	int			 next;

	(void)err;
	if (r == NULL || r->via == NULL || r->parent != VIA_DIRECT)
		return false;
	next = parent_route_next(c);
	if (next == PARENT_NONE) {
		r->parent = VIA_DIRECT;
		return false;
	}
	target_timer(c);
	target_go(c);
	return true;
}

void
target_access(struct pt_conn *c)
{
	c->c_target.resolved_late = false;
	phase_run(c, PT_PHASE_ACCESS, target_on_access);
}
