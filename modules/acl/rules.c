/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rule evaluation, on the worker's loop for every request: first match,
 * the cheap conditions of a rule before its dear ones (numbers before
 * names, names before the host file, the host file before regexes), the
 * host lowered once per evaluation and only when a rule asks for it.
 * Nothing here allocates, except the one match block per process.
 */
#include "modules/acl/rules.h"

#include <string.h>

static pcre2_match_data	*acl_md;	/* this process's, made once */

const char *
acl_proto_name(enum pt_proto p)
{
	switch (p) {
	case PT_PROTO_TCP:		return "tcp";
	case PT_PROTO_HTTP:		return "http";
	case PT_PROTO_CONNECT:		return "connect";
	case PT_PROTO_SOCKS5:		return "socks5";
	case PT_PROTO_SOCKS4:		return "socks4";
	case PT_PROTO_WEBSOCKET:	return "websocket";
	case PT_PROTO_UDP:		return "udp";
	}
	return NULL;
}

/* What one evaluation learns once and reuses across rules. */
struct acl_query {
	const struct pt_req	*req;
	const struct acl_addr	*target;
	struct acl_addr		 src;
	bool			 src_done;
	int			 hlen;		/* -2: not lowered yet */
	char			 host[ACL_HOST_MAX + 1];
};

static const struct acl_addr *
acl_q_src(struct acl_query *q)
{
	if (!q->src_done) {
		acl_addr_from((const struct sockaddr *)&q->req->peer, &q->src);
		q->src_done = true;
	}
	return &q->src;
}

static bool
acl_q_host(struct acl_query *q)
{
	if (q->hlen == -2)
		q->hlen = q->req->host.len == 0 ? -1 :
		    acl_host_norm(q->req->host.ptr, q->req->host.len, q->host);
	return q->hlen >= 0;
}

static bool
acl_nets_have(const struct acl_net *v, size_t n, const struct acl_addr *a)
{
	size_t	 i;

	if (a->family == 0)
		return false;
	for (i = 0; i < n; i++)
		if (acl_net_has_any(&v[i], a))
			return true;
	return false;
}

static bool
acl_names_have(char *const *v, size_t n, const struct pt_str *s)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (strlen(v[i]) == s->len && memcmp(v[i], s->ptr, s->len) == 0)
			return true;
	return false;
}

static bool
acl_ports_have(const struct acl_rule *r, uint16_t port)
{
	size_t	 i;

	for (i = 0; i < r->nports; i++)
		if (port >= r->ports[i].lo && port <= r->ports[i].hi)
			return true;
	return false;
}

static bool
acl_listeners_have(const struct acl_rule *r, int idx)
{
	size_t	 i;

	for (i = 0; i < r->nlisteners; i++)
		if (r->listeners[i] == idx)
			return true;
	return false;
}

/* A regex that cannot run (no memory for its match block) counts as a
 * match: a deny rule then still denies, and an allow rule is no wider
 * than what its other conditions allow. */
static bool
acl_re_match(const pcre2_code *re, const struct acl_query *q)
{
	int	 rc;

	if (acl_md == NULL && (acl_md = pcre2_match_data_create(1, NULL)) ==
	    NULL)
		return true;
	rc = pcre2_match(re, (PCRE2_SPTR)q->host, (PCRE2_SIZE)q->hlen, 0, 0,
	    acl_md, NULL);
	return rc >= 0;
}

static bool
acl_host_matches(const struct acl_rule *r, struct acl_query *q)
{
	size_t	 i;

	if (!acl_q_host(q))
		return false;
	if (acl_hostset_has(&r->hosts, q->host, (size_t)q->hlen))
		return true;
	if (r->re_any != NULL)
		return acl_re_match(r->re_any, q);
	for (i = 0; i < r->nre; i++)
		if (acl_re_match(r->re[i], q))
			return true;
	return false;
}

/* 1 every condition holds, 0 one fails, -1 none fails but one is in
 * <unknown>. */
static int
acl_rule_matches(const struct acl_rule *r, struct acl_query *q,
    unsigned unknown)
{
	const struct pt_req	*req = q->req;
	unsigned		 has = r->has & ~unknown;

	if ((has & ACL_C_PROTO) && !(r->protos & (1u << req->proto)))
		return 0;
	if ((has & ACL_C_PORT) && !acl_ports_have(r, req->port))
		return 0;
	if ((has & ACL_C_LISTENER) &&
	    !acl_listeners_have(r, req->listener_idx))
		return 0;
	if ((has & ACL_C_SRC) && !acl_nets_have(r->src, r->nsrc, acl_q_src(q)))
		return 0;
	if ((has & ACL_C_DST) && !acl_nets_have(r->dst, r->ndst, q->target))
		return 0;
	if ((has & ACL_C_METHOD) &&
	    !acl_names_have(r->methods, r->nmethods, &req->method))
		return 0;
	if ((has & ACL_C_USER) && (req->user.len == 0 || (!r->user_any &&
	    !acl_names_have(r->users, r->nusers, &req->user))))
		return 0;
	if ((has & ACL_C_HOSTFILE) && (!acl_q_host(q) ||
	    !acl_hostset_has(&r->hostfile, q->host, (size_t)q->hlen)))
		return 0;
	if ((has & ACL_C_HOST) && !acl_host_matches(r, q))
		return 0;
	return (r->has & unknown) != 0 ? -1 : 1;
}

void
acl_eval(const struct acl_conf *ac, const struct pt_req *req,
    const struct acl_addr *target, size_t from, unsigned unknown,
    struct acl_decision *d)
{
	struct acl_query	 q;
	size_t			 i;
	int			 m;

	q.req = req;
	q.target = target;
	q.src_done = false;
	q.hlen = -2;
	for (i = from; i < ac->nrules; i++) {
		if ((m = acl_rule_matches(&ac->rules[i], &q, unknown)) == 0)
			continue;
		d->rule = (int)i;
		d->outcome = m < 0 ? ACL_UNDECIDED : ac->rules[i].allow ?
		    ACL_ALLOW : ACL_DENY;
		return;
	}
	d->rule = -1;
	d->outcome = ac->default_allow ? ACL_ALLOW : ACL_DENY;
}

bool
acl_private_denied(const struct acl_conf *ac, int rule,
    const struct acl_addr *target)
{
	const struct acl_rule	*r;
	struct acl_net		 range;
	size_t			 i;

	if (ac->allow_private || !acl_private(target, &range))
		return false;
	if (rule < 0)
		return true;
	/* "Names the range": an allow rule's dst entry that holds the
	 * target and lies inside the private range; 0.0.0.0/0 opens
	 * nothing. */
	r = &ac->rules[rule];
	for (i = 0; i < r->ndst; i++)
		if (acl_net_has_any(&r->dst[i], target) &&
		    acl_net_within(&r->dst[i], &range))
			return false;
	return true;
}
