/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The acl module: ordered allow/deny rules judged at three points.
 *
 * ACCESS (target named, nothing resolved): every rule whose conditions
 * are all known by then decides, so a denied name is never looked up. A
 * rule with `dst` cannot be judged before DNS: the request then waits,
 * undecided, for DIAL, which resumes at that rule with the address about
 * to be dialled; DIAL also refuses private destinations the
 * configuration does not open, which is what stops a name that resolves
 * to 169.254.169.254 (no rebinding bypass: DIAL sees each address the
 * core will connect to, literals included). DATAGRAM judges each new
 * destination of a UDP association with the whole rule set.
 *
 * The core writes the refusal (403, SOCKS5 0x02, SOCKS4 0x5b); the
 * module names the rule in the request's label. An allow rule with an
 * `egress` makes it the transaction's (pt_conn_set_egress) where it
 * decides: at ACCESS (so the resolver's answer is ordered by it), or at
 * DIAL, before the connect.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <portico/module.h>

#include "modules/acl/rules.h"
#include "modules/common/listener_switch.h"

PT_API extern const struct pt_module pt_module_acl;

/* What ACCESS decided for the transaction <txn>. */
struct acl_state {
	uint64_t	 txn;
	int32_t		 rule;		/* deciding rule, or where to resume */
	uint8_t		 seen;		/* txn is set (the state is zeroed) */
	uint8_t		 undecided;
	uint8_t		 counted;
};

static char	 acl_err[512];

/* The deciding rule's name, "default", or "private", into the label. */
static void
acl_set_label(struct pt_conn *conn, const struct acl_conf *ac, int rule,
    bool private)
{
	if (private)
		pt_req_set_label(conn, "private", sizeof("private") - 1);
	else if (rule < 0)
		pt_req_set_label(conn, "default", sizeof("default") - 1);
	else
		pt_req_set_label(conn, ac->rules[rule].label,
		    ac->rules[rule].label_len);
}

static enum pt_verdict
acl_refuse(struct pt_conn *conn, const struct acl_conf *ac, int rule,
    bool private, bool quiet)
{
	struct pt_answer	 a;

	memset(&a, 0, sizeof(a));
	a.http_status = 403;
	a.socks_reply = 0x02;		/* not allowed by ruleset */
	a.reason = private ? ac->private_reason : rule >= 0 ?
	    ac->rules[rule].reason : ac->default_reason;
	if (!quiet) {
		pt_conn_answer(conn, &a);
		acl_set_label(conn, ac, rule, private);
	}
	pt_counter_add(ac->ctr_denied, 1);
	if (private)
		pt_counter_add(ac->ctr_private, 1);
	else
		pt_counter_add(rule >= 0 ? ac->rules[rule].ctr :
		    ac->ctr_default, 1);
	return PT_VERDICT_DENY;
}

/* The allowing rule's egress, if it has one, is the transaction's. */
static void
acl_egress(struct pt_conn *conn, const struct acl_conf *ac, int rule)
{
	if (rule >= 0 && ac->rules[rule].egress != NULL)
		pt_conn_set_egress(conn, ac->rules[rule].egress);
}

/* So are its parents (a rule with a via decides at ACCESS: acl_conf.c). */
static void
acl_via(struct pt_conn *conn, const struct acl_conf *ac, int rule)
{
	if (rule >= 0 && ac->rules[rule].via != NULL)
		pt_conn_set_via(conn, ac->rules[rule].via);
}

static void
acl_allowed(struct pt_conn *conn, const struct acl_conf *ac, int rule)
{
	acl_egress(conn, ac, rule);
	acl_via(conn, ac, rule);
	acl_set_label(conn, ac, rule, false);
	pt_counter_add(ac->ctr_allowed, 1);
	pt_counter_add(rule >= 0 ? ac->rules[rule].ctr : ac->ctr_default, 1);
}

static enum pt_verdict
acl_access(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct acl_conf	*ac = modctx;
	struct acl_state	*st = pt_conn_ctx(conn, &pt_module_acl);
	struct net_addr		 none = { 0 };
	struct acl_decision	 d;
	bool			 udp = req->proto == PT_PROTO_UDP;

	/* A status request has no destination, and no DIAL follows: it is
	 * judged now, a rule with destination conditions never matching
	 * it (no host, port 0, no address). */
	if (req->proto == PT_PROTO_STATUS) {
		acl_eval(ac, req, &none, 0, 0, &d);
		if (d.outcome == ACL_DENY)
			return acl_refuse(conn, ac, d.rule, false, false);
		acl_allowed(conn, ac, d.rule);
		return PT_VERDICT_CONTINUE;
	}
	/* A UDP association names no destination yet: only rules without
	 * destination conditions can refuse it; its datagrams are judged
	 * one destination at a time (DATAGRAM). */
	acl_eval(ac, req, &none, 0, udp ? ACL_C_DEST : ACL_C_DST, &d);
	if (d.outcome == ACL_DENY)
		return acl_refuse(conn, ac, d.rule, false, false);
	if (udp) {
		if (d.outcome == ACL_ALLOW)
			acl_allowed(conn, ac, d.rule);
		return PT_VERDICT_CONTINUE;
	}
	st->txn = req->txn;
	st->seen = 1;
	st->rule = d.rule;
	st->undecided = d.outcome == ACL_UNDECIDED;
	st->counted = 0;
	/* The label now, in case the transaction ends before DIAL (DNS
	 * fails): DIAL replaces it if it refuses. The egress now too, so
	 * the resolved addresses are ordered by its families and a kept
	 * upstream is chosen by it. */
	if (d.outcome == ACL_ALLOW) {
		acl_set_label(conn, ac, d.rule, false);
		acl_egress(conn, ac, d.rule);
		acl_via(conn, ac, d.rule);
	}
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
acl_dial(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct acl_conf	*ac = modctx;
	struct acl_state	*st = pt_conn_ctx(conn, &pt_module_acl);
	struct net_addr		 to;
	struct acl_decision	 d;
	bool			 mine = st->seen && st->txn == req->txn;

	net_addr_from((const struct sockaddr *)&req->target, &to);
	if (!mine || st->undecided)
		/* Undecided at ACCESS, or ACCESS was skipped (a module
		 * before this one answered ALLOW): judge it all now. */
		acl_eval(ac, req, &to, mine ? (size_t)st->rule : 0, 0, &d);
	else {
		d.outcome = ACL_ALLOW;
		d.rule = st->rule;
	}
	if (d.outcome == ACL_DENY)
		return acl_refuse(conn, ac, d.rule, false, false);
	/* A tcp listener's destination is the operator's own `to`, not a
	 * client's choice: the private list guards against clients. */
	if (req->proto != PT_PROTO_TCP &&
	    acl_private_denied(ac, d.rule, &to))
		return acl_refuse(conn, ac, d.rule, true, false);
	/* The rule that allows this address says where it leaves from
	 * (another address of the name may be allowed by another rule). */
	acl_egress(conn, ac, d.rule);
	/* Counted once per transaction, though a failed connect dials the
	 * next address (judged again: it may be in another network). */
	if (!mine || !st->counted) {
		if (!mine) {
			st->txn = req->txn;
			st->seen = 1;
			st->undecided = 1;	/* every DIAL judges it all */
			st->rule = 0;
		}
		st->counted = 1;
		acl_allowed(conn, ac, d.rule);
	}
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
acl_datagram(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct acl_conf	*ac = modctx;
	struct net_addr		 to;
	struct acl_decision	 d;

	/* A name before it is resolved: refuse it now if the rules can,
	 * else wait for its address (the core asks again). */
	if (req->target.ss_family == AF_UNSPEC) {
		acl_eval(ac, req, &(struct net_addr){ 0 }, 0, ACL_C_DST, &d);
		return d.outcome == ACL_DENY ?
		    acl_refuse(conn, ac, d.rule, false, true) :
		    PT_VERDICT_CONTINUE;
	}
	net_addr_from((const struct sockaddr *)&req->target, &to);
	acl_eval(ac, req, &to, 0, 0, &d);
	if (d.outcome == ACL_DENY)
		return acl_refuse(conn, ac, d.rule, false, true);
	if (acl_private_denied(ac, d.rule, &to))
		return acl_refuse(conn, ac, d.rule, true, true);
	pt_counter_add(ac->ctr_allowed, 1);
	pt_counter_add(d.rule >= 0 ? ac->rules[d.rule].ctr : ac->ctr_default,
	    1);
	return PT_VERDICT_CONTINUE;
}

static uint64_t
acl_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * One counter per rule, by the rule's action, and one for the default
 * (a status listener shows portico_module_acl_rule_denied_total{rule=
 * "blocked"}). Counters are few (PT_COUNTERS_MAX, for every module and
 * the master's life): when they run out, the remaining rules go
 * uncounted, said once, and the configuration still loads.
 */
static void
acl_rule_counters(struct acl_conf *ac)
{
	size_t	 i, lost = 0;

	ac->ctr_default = pt_counter_register_label(ac->default_allow ?
	    "acl_rule_allowed" : "acl_rule_denied", "rule", "default");
	for (i = 0; i < ac->nrules; i++) {
		ac->rules[i].ctr = pt_counter_register_label(
		    ac->rules[i].allow ? "acl_rule_allowed" :
		    "acl_rule_denied", "rule", ac->rules[i].label);
		lost += ac->rules[i].ctr < 0;
	}
	if (lost > 0)
		pt_log(PT_LOG_WARNING, "acl: no counter left for %zu of %zu "
		    "rules: they are not counted per rule", lost, ac->nrules);
}

static int
acl_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct acl_conf	*ac;
	uint64_t	 t0 = acl_ms();

	*errstr = acl_err;
	if ((ac = acl_conf_parse(node, acl_err, sizeof(acl_err),
	    &mc->where)) == NULL)
		return -1;
	ac->ctr_allowed = pt_counter_register("acl_allowed");
	ac->ctr_denied = pt_counter_register("acl_denied");
	ac->ctr_private = pt_counter_register("acl_private");
	if (ac->ctr_allowed < 0 || ac->ctr_denied < 0 || ac->ctr_private < 0) {
		snprintf(acl_err, sizeof(acl_err), "pt_counter_register "
		    "failed");
		acl_conf_free(ac);
		return -1;
	}
	acl_rule_counters(ac);
	pt_log(PT_LOG_NOTICE, "acl: %zu rules (%zu steps), default %s, "
	    "private destinations %s; host_file: %zu names, %zu KiB, %llu ms",
	    ac->nrules, ac->nblocks, ac->default_allow ? "allow" : "deny",
	    ac->allow_private ? "allowed" : "denied", ac->hostfile_names,
	    ac->hostfile_bytes / 1024,
	    (unsigned long long)(acl_ms() - t0));
	mc->ctx = ac;
	return 0;
}

static void
acl_conf_release(void *ctx)
{
	acl_conf_free(ctx);
}

/* A listener's `acl = { enabled = false; }` turns the rules off there. */
static int
acl_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	(void)modctx;
	*lctx_out = NULL;
	*errstr = acl_err;
	return listener_switch(mc, node, "acl", acl_err, sizeof(acl_err));
}

static const struct pt_hook acl_hooks[] = {
	{ PT_PHASE_ACCESS, 10, acl_access },
	{ PT_PHASE_DIAL, 10, acl_dial },
	{ PT_PHASE_DATAGRAM, 10, acl_datagram },
	{ 0, 0, NULL }
};

const struct pt_module pt_module_acl = {
	PT_MODULE_INIT,
	.name = "acl",
	.conf = acl_conf,
	.conf_free = acl_conf_release,
	.listener_conf = acl_listener_conf,
	.hooks = acl_hooks,
	.conn_ctx_size = sizeof(struct acl_state),
};
