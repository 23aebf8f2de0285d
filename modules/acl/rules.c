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
static pcre2_match_context *acl_mctx;	/* its limits, made once */

/* PCRE2's default match limit (10,000,000) lets one crafted name cost a
 * worker tens of milliseconds; a host name is at most 255 bytes, and an
 * honest expression needs far fewer steps than this. */
#define ACL_RE_MATCH_LIMIT	100000

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
	case PT_PROTO_STATUS:		return "status";
	}
	return NULL;
}

/* What one evaluation learns once and reuses across rules. */
struct acl_query {
	const struct pt_req	*req;
	const struct net_addr	*target;
	struct net_addr		 src;
	bool			 src_done;
	int			 hlen;		/* -2: not lowered yet */
	bool			 re_failed;	/* a regex could not decide */
	uint64_t		 hhash;		/* of host, 0: not yet */
	char			 host[ACL_HOST_MAX + 1];
};

/*
 * The answers of the dear host matchers (a regex, a large host set) for
 * the hosts seen last, per process: a direct-mapped table keyed by the
 * matcher and the host. An answer depends on nothing else and a worker
 * keeps one configuration for life, so an entry never goes stale; a
 * busy site costs its JIT call or its probes into a million-name table
 * once, not on every request.
 */
#define ACL_MEMO_SLOTS	1024		/* a power of two */
#define ACL_MEMO_HOST	54		/* longer hosts are not kept */
struct acl_memo {
	const void	*what;
	uint8_t		 len;
	uint8_t		 result;
	char		 host[ACL_MEMO_HOST];
};
static struct acl_memo	 acl_memo[ACL_MEMO_SLOTS];

void
acl_memo_forget(void)
{
	memset(acl_memo, 0, sizeof(acl_memo));
}

static struct acl_memo *
acl_memo_slot(struct acl_query *q, const void *what)
{
	uint64_t	 h;
	int		 i;

	if (q->hlen > ACL_MEMO_HOST)
		return NULL;
	if (q->hhash == 0) {
		h = 0xcbf29ce484222325ULL;
		for (i = 0; i < q->hlen; i++)
			h = (h ^ (unsigned char)q->host[i]) * 0x100000001b3ULL;
		q->hhash = h | 1;
	}
	h = (q->hhash ^ (uint64_t)(uintptr_t)what) * 0x9e3779b97f4a7c15ULL;
	return &acl_memo[h >> 54 & (ACL_MEMO_SLOTS - 1)];
}

/* The kept answer of <what> for the query's host: 0, 1, or -1 (none),
 * with *slot where to keep a new one (NULL: not kept). */
static int
acl_memo_get(struct acl_query *q, const void *what, struct acl_memo **slot)
{
	struct acl_memo	*m = *slot = acl_memo_slot(q, what);

	if (m != NULL && m->what == what && m->len == q->hlen &&
	    memcmp(m->host, q->host, (size_t)q->hlen) == 0)
		return m->result;
	return -1;
}

static bool
acl_memo_put(struct acl_memo *m, const void *what,
    const struct acl_query *q, bool result)
{
	if (m != NULL) {
		m->what = what;
		m->len = (uint8_t)q->hlen;
		m->result = result;
		memcpy(m->host, q->host, (size_t)q->hlen);
	}
	return result;
}

static const struct net_addr *
acl_q_src(struct acl_query *q)
{
	if (!q->src_done) {
		net_addr_from((const struct sockaddr *)&q->req->peer, &q->src);
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

/*
 * Whether one of <v> holds <a>. A destination is also judged by the IPv4
 * address its IPv6 form carries (<embedded>: NAT64, 6to4, IPv4-
 * compatible reach that address); a source is the address the client
 * has, IPv4-mapped ones already unmapped (net_addr_from), as auth's
 * no_auth_from and limits judge it.
 */
static bool
acl_nets_have(const struct net_prefix *v, size_t n, const struct net_addr *a,
    bool embedded)
{
	size_t	 i;

	if (a->family == 0)
		return false;
	for (i = 0; i < n; i++)
		if (embedded ? net_prefix_has_any(&v[i], a) :
		    net_prefix_has(&v[i], a))
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

/*
 * A regex that cannot decide (no memory for its match block, PCRE2's
 * match or depth limit reached by a host built to backtrack) counts as a
 * match and marks the query: a deny rule then denies, and an allow rule
 * it would have decided refuses instead (acl_eval). A hostile name must
 * never step around a deny rule by making its regex give up. Such an
 * answer is not kept in the memo.
 */
static bool
acl_re_match(const pcre2_code *re, struct acl_query *q)
{
	struct acl_memo	*m;
	int		 rc;

	if ((rc = acl_memo_get(q, re, &m)) >= 0)
		return rc;
	if (acl_md == NULL && (acl_md = pcre2_match_data_create(1, NULL)) ==
	    NULL) {
		q->re_failed = true;
		return true;
	}
	if (acl_mctx == NULL &&
	    (acl_mctx = pcre2_match_context_create(NULL)) != NULL)
		pcre2_set_match_limit(acl_mctx, ACL_RE_MATCH_LIMIT);
	rc = pcre2_match(re, (PCRE2_SPTR)q->host, (PCRE2_SIZE)q->hlen, 0, 0,
	    acl_md, acl_mctx);
	if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
		q->re_failed = true;
		return true;
	}
	return acl_memo_put(m, re, q, rc >= 0);
}

/* A small set is probed directly: cheaper than the memo. */
static bool
acl_set_has(const struct acl_hostset *hs, struct acl_query *q)
{
	struct acl_memo	*m;
	int		 rc;

	if (hs->count < 256)
		return acl_hostset_has(hs, q->host, (size_t)q->hlen);
	if ((rc = acl_memo_get(q, hs, &m)) >= 0)
		return rc;
	return acl_memo_put(m, hs, q, acl_hostset_has(hs, q->host,
	    (size_t)q->hlen));
}

static bool
acl_host_matches(const struct acl_rule *r, struct acl_query *q)
{
	size_t	 i;

	if (!acl_q_host(q))
		return false;
	if (acl_set_has(&r->hosts, q))
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
	if ((has & ACL_C_SRC) &&
	    !acl_nets_have(r->src, r->nsrc, acl_q_src(q), false))
		return 0;
	if ((has & ACL_C_DST) &&
	    !acl_nets_have(r->dst, r->ndst, q->target, true))
		return 0;
	if ((has & ACL_C_METHOD) &&
	    !acl_names_have(r->methods, r->nmethods, &req->method))
		return 0;
	if ((has & ACL_C_USER) && (req->user.len == 0 || (!r->user_any &&
	    !acl_names_have(r->users, r->nusers, &req->user))))
		return 0;
	if ((has & ACL_C_HOSTFILE) && (!acl_q_host(q) ||
	    !acl_set_has(&r->hostfile, q)))
		return 0;
	if ((has & ACL_C_HOST) && !acl_host_matches(r, q))
		return 0;
	return (r->has & unknown) != 0 ? -1 : 1;
}

/* The first rule of block <b> whose networks hold IPv4 <a>, or b->end:
 * the last network starting at or before <a>, then up its parents to
 * the first that holds <a> (networks nest, so that one and its
 * ancestors are all that hold it). */
static size_t
acl_v4_first(const struct acl_block *b, const struct net_addr *a)
{
	uint32_t	 v = (uint32_t)a->b[0] << 24 | (uint32_t)a->b[1] << 16 |
			    (uint32_t)a->b[2] << 8 | a->b[3];
	size_t		 lo = 0, hi = b->nv4, mid;
	int32_t		 j;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (b->v4[mid].lo <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (j = (int32_t)lo - 1; j >= 0 && b->v4[j].hi < v;
	    j = b->v4[j].parent)
		;
	return j >= 0 ? b->v4[j].minrule : b->end;
}

/*
 * Where in block <b> evaluation goes on: its first rule that can match.
 * For networks that rule matches for sure; for hosts it is the block's
 * first rule when the union matches (the rules are then tried in turn),
 * and b->end when nothing in the block can match.
 */
static size_t
acl_block_start(const struct acl_block *b, struct acl_query *q)
{
	const struct net_addr	*a;
	struct net_addr		 v4;
	size_t			 i, first = b->end, f;

	if (b->kind == ACL_C_HOST) {
		if (acl_q_host(q) && (b->re_opaque ||
		    acl_set_has(&b->hosts, q) ||
		    (b->re_any != NULL && acl_re_match(b->re_any, q))))
			return b->first;
		return b->end;
	}
	a = b->kind == ACL_C_SRC ? acl_q_src(q) : q->target;
	if (a->family == AF_INET)
		return acl_v4_first(b, a);
	if (a->family != AF_INET6)
		return b->end;
	for (i = 0; i < b->nv6; i++)
		if (b->v6[i].rule < first && net_prefix_has(&b->v6[i].net, a))
			first = b->v6[i].rule;
	if (b->kind == ACL_C_DST && net_addr_embedded_v4(a, &v4) &&
	    (f = acl_v4_first(b, &v4)) < first)
		first = f;
	return first;
}

void
acl_eval(const struct acl_conf *ac, const struct pt_req *req,
    const struct net_addr *target, size_t from, unsigned unknown,
    struct acl_decision *d)
{
	const struct acl_block	*b;
	struct acl_query	 q;
	size_t			 i, bi;
	int			 m;

	q.req = req;
	q.target = target;
	q.src_done = false;
	q.hlen = -2;
	q.hhash = 0;
	q.re_failed = false;
	for (bi = from < ac->nrules ? ac->block_of[from] : ac->nblocks;
	    bi < ac->nblocks; bi++) {
		b = &ac->blocks[bi];
		i = from > b->first ? from : b->first;
		/* A block whose kind is not known yet leaves the request
		 * undecided at its first rule, as that rule would. */
		if (b->kind != 0 && i == b->first && !(b->kind & unknown))
			i = acl_block_start(b, &q);
		for (; i < b->end; i++) {
			q.re_failed = false;
			m = acl_rule_matches(&ac->rules[i], &q, unknown);
			if (m == 0)
				continue;
			d->rule = (int)i;
			d->outcome = m < 0 ? ACL_UNDECIDED :
			    ac->rules[i].allow && !q.re_failed ? ACL_ALLOW :
			    ACL_DENY;
			return;
		}
	}
	d->rule = -1;
	d->outcome = ac->default_allow ? ACL_ALLOW : ACL_DENY;
}

bool
acl_private_denied(const struct acl_conf *ac, int rule,
    const struct net_addr *target)
{
	const struct acl_rule	*r;
	struct net_prefix		 range;
	size_t			 i;

	if (ac->allow_private || !net_addr_private(target, &range))
		return false;
	if (rule < 0)
		return true;
	/* "Names the range": an allow rule's dst entry that holds the
	 * target and lies inside the private range; 0.0.0.0/0 opens
	 * nothing. */
	r = &ac->rules[rule];
	for (i = 0; i < r->ndst; i++)
		if (net_prefix_has_any(&r->dst[i], target) &&
		    net_prefix_within(&r->dst[i], &range))
			return false;
	return true;
}
