/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The text a status listener answers, built from the shared mapping
 * (common/counters.c) at the moment of the request: nothing is kept
 * between scrapes and no worker is asked anything. Every number is one
 * relaxed 64-bit load, so a scrape that races an update sees the value
 * before or after it, never a torn one; a histogram's count is the sum
 * of the very bucket values printed, so the two always agree.
 *
 * Totals are families of their own (portico_connections_accepted_total)
 * and the per-worker-slot breakdown another (portico_worker_..._total
 * with a worker label), so that sum() over either never counts twice.
 * Module counters (pt_counter_register) become portico_module_<name>_total,
 * the core's own labelled ones (egress) portico_<name>_total.
 *
 * It does not do I/O: worker/status.c sends what it builds.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/status_fmt.h"
#include "common/counters.h"
#include "common/parent.h"
#include "worker/parent.h"
#include "worker/worker_self.h"

#define LD(x)	__atomic_load_n(&(x), __ATOMIC_RELAXED)

/* One series of a core counter: its family, and a label when the family
 * splits one quantity (direction, reason). Families are consecutive. */
struct status_series {
	const char	*name;		/* without "portico_" */
	const char	*type;
	const char	*help;
	const char	*label;		/* `key="value"`, or NULL */
	enum counter_id	 ctr;
};

static const struct status_series status_core[] = {
	{ "connections_accepted_total", "counter",
	  "Client connections accepted.", NULL, CTR_ACCEPTED },
	{ "connections_active", "gauge",
	  "Client connections open now.", NULL, CTR_ACTIVE },
	{ "connections_closed_total", "counter",
	  "Client connections closed.", NULL, CTR_CLOSED },
	{ "bytes_total", "counter", "Payload bytes relayed: up is client "
	  "to upstream, down is upstream to client.", "direction=\"up\"",
	  CTR_BYTES_IN },
	{ "bytes_total", NULL, NULL, "direction=\"down\"", CTR_BYTES_OUT },
	{ "accept_pauses_total", "counter", "Times a worker stopped "
	  "accepting for want of descriptors, connection slots or memory.",
	  NULL, CTR_ACCEPT_PAUSED },
	{ "upstream_connect_failures_total", "counter",
	  "Upstream connects that failed or timed out.", NULL,
	  CTR_UPSTREAM_FAILED },
	{ "denied_total", "counter", "Transactions refused by a module or "
	  "by connect_ports.", NULL, CTR_DENIED },
	{ "dns_cache_hits_total", "counter", "Names answered from the "
	  "resolver cache (addresses or remembered failures).", NULL,
	  CTR_DNS_HITS },
	{ "dns_cache_misses_total", "counter", "Names not in the resolver "
	  "cache (looked up, joined to a lookup in flight, or in "
	  "/etc/hosts).", NULL, CTR_DNS_MISSES },
	{ "dns_failures_total", "counter", "Resolver lookups that ended "
	  "without an address.", NULL, CTR_DNS_FAILURES },
	{ "udp_datagrams_total", "counter", "SOCKS5 UDP datagrams relayed: "
	  "up from the client, down to it.", "direction=\"up\"",
	  CTR_UDP_UP },
	{ "udp_datagrams_total", NULL, NULL, "direction=\"down\"",
	  CTR_UDP_DOWN },
	{ "udp_datagrams_dropped_total", "counter", "SOCKS5 UDP datagrams "
	  "dropped, by reason.", "reason=\"denied\"", CTR_UDP_DENIED },
	{ "udp_datagrams_dropped_total", NULL, NULL, "reason=\"invalid\"",
	  CTR_UDP_DROP_INVALID },
	{ "udp_datagrams_dropped_total", NULL, NULL, "reason=\"resolving\"",
	  CTR_UDP_DROP_RESOLVING },
	{ "udp_datagrams_dropped_total", NULL, NULL, "reason=\"send\"",
	  CTR_UDP_DROP_SEND },
	{ "udp_datagrams_dropped_total", NULL, NULL, "reason=\"too_big\"",
	  CTR_UDP_DROP_TOO_BIG },
	{ "udp_datagrams_dropped_total", NULL, NULL, "reason=\"module\"",
	  CTR_UDP_DROP_MODULE },
	{ "udp_datagrams_dropped_total", NULL, NULL,
	  "reason=\"unsolicited\"", CTR_UDP_DROP_UNSOLICITED },
	{ "relay_spliced_bytes_total", "counter", "Payload bytes of tunnels "
	  "and bodies moved through a pipe with splice(2) instead of being "
	  "copied (both directions; relay.method).", NULL, CTR_SPLICED },
	{ "http2_connections_total", "counter", "Client connections served "
	  "as HTTP/2 (prior knowledge or ALPN h2).", NULL, CTR_H2_CONNS },
	{ "http2_streams_total", "counter", "HTTP/2 streams that became "
	  "transactions (each also counts in the transaction metrics).",
	  NULL, CTR_H2_STREAMS },
	{ "proxy_protocol_headers_total", "counter", "PROXY protocol "
	  "headers accepted on proxy_protocol listeners, by version (LOCAL "
	  "and UNKNOWN included).", "version=\"1\"", CTR_PP_V1 },
	{ "proxy_protocol_headers_total", NULL, NULL, "version=\"2\"",
	  CTR_PP_V2 },
	{ "proxy_protocol_refused_total", "counter", "Connections to "
	  "proxy_protocol listeners closed for their PROXY header, by "
	  "reason.", "reason=\"signature\"", CTR_PP_REFUSED },
	{ "proxy_protocol_refused_total", NULL, NULL, "reason=\"malformed\"",
	  CTR_PP_REFUSED + 1 },
	{ "proxy_protocol_refused_total", NULL, NULL, "reason=\"too_long\"",
	  CTR_PP_REFUSED + 2 },
	{ "proxy_protocol_refused_total", NULL, NULL, "reason=\"crc\"",
	  CTR_PP_REFUSED + 3 },
	{ "proxy_protocol_refused_total", NULL, NULL, "reason=\"source\"",
	  CTR_PP_REFUSED + 4 },
	{ "proxy_protocol_refused_total", NULL, NULL, "reason=\"timeout\"",
	  CTR_PP_REFUSED + 5 },
	{ "proxy_protocol_refused_total", NULL, NULL, "reason=\"closed\"",
	  CTR_PP_REFUSED + 6 },
};
#define STATUS_NCORE	(sizeof(status_core) / sizeof(status_core[0]))

/* enum pt_proto order. */
static const char *const status_protos[COUNTERS_PROTOS] = {
	"tcp", "http", "connect", "socks5", "socks4", "websocket", "udp",
	"status",
};
static const char *const status_classes[CLASS_COUNT] = {
	"none", "1xx", "2xx", "3xx", "4xx", "5xx",
};

static const struct {
	const char	*name;
	const char	*json;
	const char	*help;
} status_hists[HIST_COUNT] = {
	{ "request_duration_seconds", "request_duration", "Transactions "
	  "from their start (accept, or an HTTP request's first byte) to "
	  "their end." },
	{ "upstream_connect_duration_seconds", "upstream_connect",
	  "Upstream connects, from connect() to connected or failed." },
	{ "dns_lookup_duration_seconds", "dns_lookup", "Resolver lookups "
	  "sent to a server, from the question to the answer." },
};

static const char *const status_wstates[] = {
	"stopped", "running", "restarting", "draining",
};

void
status_printf(struct status_out *o, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 cap;
	char	*p;
	int	 n;

	if (o->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->p != NULL ? o->p + o->len : NULL,
		    o->p != NULL ? o->cap - o->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->oom = true;
			return;
		}
		if (o->p != NULL && (size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		cap = o->cap == 0 ? 16384 : o->cap * 2;
		while (cap - o->len <= (size_t)n)
			cap *= 2;
		if ((p = realloc(o->p, cap)) == NULL) {
			o->oom = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
}

/* How many slots have ever run a worker: the others hold only zeros. */
static int
status_nslots(const struct counters_slot **slots_out)
{
	const struct counters_master	*m = counters_master_get();
	int				 n, used;

	*slots_out = counters_slots(&n);
	used = m != NULL ? (int)LD(m->slots_used) : n;
	return used < n ? used : n;
}

static uint64_t
status_sum(const struct counters_slot *slots, int n, enum counter_id id)
{
	uint64_t	 v = 0;
	int		 i;

	for (i = 0; i < n; i++)
		v += LD(slots[i].c[id]);
	return v;
}

static uint64_t
status_msum(const struct counters_slot *slots, int n, int id)
{
	uint64_t	 v = 0;
	int		 i;

	for (i = 0; i < n; i++)
		v += LD(slots[i].m[id]);
	return v;
}

static void
status_head(struct status_out *o, const char *name, const char *type,
    const char *help)
{
	status_printf(o, "# HELP portico_%s %s\n# TYPE portico_%s %s\n",
	    name, help, name, type);
}

/* Counters are unsigned but <active> goes down by atomic adds of -1:
 * a transient order of updates may make a slot's share negative. */
static void
status_value(struct status_out *o, const struct status_series *s,
    uint64_t v)
{
	if (s->ctr == CTR_ACTIVE)
		status_printf(o, "%lld\n", (long long)(int64_t)v);
	else
		status_printf(o, "%llu\n", (unsigned long long)v);
}

static void
status_core_metrics(struct status_out *o, const struct counters_slot *slots,
    int n, bool per_worker)
{
	const struct status_series	*s;
	size_t				 k;
	int				 i;

	for (k = 0; k < STATUS_NCORE; k++) {
		s = &status_core[k];
		if (s->type != NULL && !per_worker)
			status_head(o, s->name, s->type, s->help);
		else if (s->type != NULL) {
			status_printf(o, "# HELP portico_worker_%s %s, per "
			    "worker slot.\n# TYPE portico_worker_%s %s\n",
			    s->name, s->help, s->name, s->type);
		}
		if (!per_worker) {
			status_printf(o, "portico_%s%s%s%s ", s->name,
			    s->label ? "{" : "", s->label ? s->label : "",
			    s->label ? "}" : "");
			status_value(o, s, status_sum(slots, n, s->ctr));
			continue;
		}
		for (i = 0; i < n; i++) {
			status_printf(o, "portico_worker_%s{worker=\"%d\"%s%s} ",
			    s->name, i, s->label ? "," : "",
			    s->label ? s->label : "");
			status_value(o, s, LD(slots[i].c[s->ctr]));
		}
	}
}

/* Whether module counter <j> is the first of its name (its family is
 * printed there, with every later counter of the name). */
/* Whether two registered counters are of one family: the same name, and
 * both the core's (counters_register_core) or both modules'. */
static bool
status_same_name(const struct counters_mname *a, const struct counters_mname *b)
{
	return a->core == b->core && strcmp(a->name, b->name) == 0;
}

/* The help of the core's labelled families. */
static const struct {
	const char	*name;
	const char	*help;
} status_core_help[] = {
	{ "egress_connects", "Outgoing connections (to origins, tunnels' "
	  "targets, UDP relay sockets) that left from an egress address, "
	  "by the egress as configured" },
	{ "egress_failures", "Outgoing connections an egress could not "
	  "serve (no address of the destination's family, or bind failed), "
	  "by the egress as configured" },
};

static const char *
status_core_help_of(const char *name)
{
	size_t	 i;

	for (i = 0; i < sizeof(status_core_help) / sizeof(status_core_help[0]);
	    i++)
		if (strcmp(status_core_help[i].name, name) == 0)
			return status_core_help[i].help;
	return "Core counter";
}

static bool
status_first_of_name(const struct counters_master *m, int j)
{
	int	 k;

	for (k = 0; k < j; k++)
		if (status_same_name(&m->mnames[k], &m->mnames[j]))
			return false;
	return true;
}

/* `key="value"` of counter <k> after <sep>, or nothing without a label. */
static void
status_mlabel(struct status_out *o, const struct counters_mname *e,
    const char *sep)
{
	if (e->key[0] != '\0')
		status_printf(o, "%s%s=\"%s\"", sep, e->key, e->value);
}

/* Module counters (pt_counter_register), or with <core> the core's own
 * labelled ones (counters_register_core), which have no "module_" in
 * their names. */
static void
status_module_metrics(struct status_out *o,
    const struct counters_slot *slots, int n, bool per_worker, bool core)
{
	const struct counters_master	*m = counters_master_get();
	const struct counters_mname	*e;
	const char			*name, *w = per_worker ? "worker_" : "";
	const char			*mod = core ? "" : "module_";
	int				 j, k, i, mcount;

	if (m == NULL)
		return;
	mcount = (int)__atomic_load_n(&m->mcount, __ATOMIC_ACQUIRE);
	if (mcount > PT_COUNTERS_MAX)
		mcount = PT_COUNTERS_MAX;
	for (j = 0; j < mcount; j++) {
		if (m->mnames[j].core != core || !status_first_of_name(m, j))
			continue;
		name = m->mnames[j].name;
		if (core)
			status_printf(o, "# HELP portico_%s%s_total %s%s.\n",
			    w, name, status_core_help_of(name),
			    per_worker ? ", per worker slot" : "");
		else
			status_printf(o, "# HELP portico_%smodule_%s_total "
			    "Module counter %s (pt_counter_register)%s.\n", w,
			    name, name, per_worker ? ", per worker slot" : "");
		status_printf(o, "# TYPE portico_%s%s%s_total counter\n", w,
		    mod, name);
		for (k = j; k < mcount; k++) {
			e = &m->mnames[k];
			if (!status_same_name(e, &m->mnames[j]))
				continue;
			if (!per_worker) {
				status_printf(o, "portico_%s%s_total%s", mod,
				    name, e->key[0] != '\0' ? "{" : "");
				status_mlabel(o, e, "");
				status_printf(o, "%s %llu\n", e->key[0] != '\0' ?
				    "}" : "", (unsigned long long)status_msum(
				    slots, n, k));
				continue;
			}
			for (i = 0; i < n; i++) {
				status_printf(o, "portico_worker_%s%s_total"
				    "{worker=\"%d\"", mod, name, i);
				status_mlabel(o, e, ",");
				status_printf(o, "} %llu\n",
				    (unsigned long long)LD(slots[i].m[k]));
			}
		}
	}
}

static void
status_txn_metrics(struct status_out *o, const struct counters_slot *slots,
    int n)
{
	uint64_t	 v;
	int		 p, k, i;

	status_head(o, "transactions_total", "counter", "Transactions ended "
	    "(HTTP requests, tunnels, SOCKS and TCP sessions, UDP "
	    "associations, status requests), by protocol and by the class "
	    "of their HTTP status (SOCKS replies and TCP outcomes as the "
	    "HTTP status they stand for; none: no answer).");
	for (p = 0; p < COUNTERS_PROTOS; p++)
		for (k = 0; k < CLASS_COUNT; k++) {
			v = 0;
			for (i = 0; i < n; i++)
				v += LD(slots[i].txn[p][k]);
			status_printf(o, "portico_transactions_total{protocol="
			    "\"%s\",class=\"%s\"} %llu\n", status_protos[p],
			    status_classes[k], (unsigned long long)v);
		}
}

/* Bucket values summed over the slots, not cumulative yet. */
static uint64_t
status_hist_read(const struct counters_slot *slots, int n, int h,
    uint64_t b[COUNTERS_BUCKETS])
{
	uint64_t	 sum = 0;
	int		 i, k;

	memset(b, 0, sizeof(uint64_t) * COUNTERS_BUCKETS);
	for (i = 0; i < n; i++) {
		for (k = 0; k < COUNTERS_BUCKETS; k++)
			b[k] += LD(slots[i].h[h].b[k]);
		sum += LD(slots[i].h[h].sum_us);
	}
	return sum;
}

static void
status_hist_metrics(struct status_out *o, const struct counters_slot *slots,
    int n)
{
	uint64_t	 b[COUNTERS_BUCKETS], sum, cum;
	int		 h, k;

	for (h = 0; h < HIST_COUNT; h++) {
		sum = status_hist_read(slots, n, h, b);
		status_head(o, status_hists[h].name, "histogram",
		    status_hists[h].help);
		cum = 0;
		for (k = 0; k < COUNTERS_BUCKETS; k++) {
			cum += b[k];
			if (k < COUNTERS_BUCKETS - 1)
				status_printf(o, "portico_%s_bucket{le=\"%g\"} "
				    "%llu\n", status_hists[h].name,
				    (double)counters_bounds_us[k] / 1e6,
				    (unsigned long long)cum);
			else
				status_printf(o, "portico_%s_bucket{le=\"+Inf\"}"
				    " %llu\n", status_hists[h].name,
				    (unsigned long long)cum);
		}
		status_printf(o, "portico_%s_sum %llu.%06llu\n"
		    "portico_%s_count %llu\n", status_hists[h].name,
		    (unsigned long long)(sum / 1000000),
		    (unsigned long long)(sum % 1000000),
		    status_hists[h].name, (unsigned long long)cum);
	}
}

static void
status_worker_line(struct status_out *o, const struct counters_worker *w)
{
	int64_t	 st = LD(w->state);

	if (st < 0 || st > WSTATE_DRAINING)
		st = WSTATE_NONE;
	status_printf(o, "portico_worker_info{slot=\"%lld\",cpu=\"%lld\","
	    "pid=\"%lld\",generation=\"%lld\",state=\"%s\"} 1\n",
	    (long long)LD(w->slot), (long long)LD(w->cpu),
	    (long long)LD(w->pid), (long long)LD(w->generation),
	    status_wstates[st]);
}

static void
status_master_metrics(struct status_out *o)
{
	const struct counters_master	*m = counters_master_get();
	int				 i;

	status_head(o, "build_info", "gauge", "Version and module ABI of "
	    "the running binary (always 1).");
	status_printf(o, "portico_build_info{version=\"%s\",abi=\"%d.%d\"} "
	    "1\n", PACKAGE_VERSION, PT_ABI_MAJOR, PT_ABI_MINOR);
	if (m == NULL)
		return;
	status_head(o, "start_time_seconds", "gauge", "When the master "
	    "started, seconds since the epoch.");
	status_printf(o, "portico_start_time_seconds %lld\n",
	    (long long)LD(m->start_time));
	status_head(o, "config_generation", "gauge", "Configuration "
	    "generation: 1 at start, one more per successful reload.");
	status_printf(o, "portico_config_generation %lld\n",
	    (long long)LD(m->generation));
	status_head(o, "config_reloads_total", "counter", "Reloads (SIGHUP) "
	    "by result.");
	status_printf(o, "portico_config_reloads_total{result=\"ok\"} %lld\n"
	    "portico_config_reloads_total{result=\"failed\"} %lld\n",
	    (long long)LD(m->reloads_ok), (long long)LD(m->reloads_failed));
	status_head(o, "config_last_reload_time_seconds", "gauge", "When "
	    "the last reload was tried, seconds since the epoch (0: never).");
	status_printf(o, "portico_config_last_reload_time_seconds %lld\n",
	    (long long)LD(m->last_reload_time));
	status_head(o, "config_last_reload_success", "gauge", "Whether the "
	    "last reload succeeded (1 before any).");
	status_printf(o, "portico_config_last_reload_success %d\n",
	    LD(m->last_reload_time) == 0 || LD(m->last_reload_ok) ? 1 : 0);
	status_head(o, "workers", "gauge", "Worker slots the configuration "
	    "asks for.");
	status_printf(o, "portico_workers %lld\n", (long long)LD(m->workers));
	status_head(o, "worker_info", "gauge", "One series per worker slot "
	    "and per draining old worker (always 1).");
	for (i = 0; i < LD(m->slots_used) && i < CONF_MAX_WORKERS; i++)
		status_worker_line(o, &m->w[i]);
	for (i = 0; i < COUNTERS_OLD_MAX; i++)
		if (LD(m->old[i].state) == WSTATE_DRAINING)
			status_worker_line(o, &m->old[i]);
}

/*
 * The slots' counters as of one moment, for one scrape: the totals and
 * the per-worker families are then printed from the same numbers (read
 * live, a connection closing on another worker between the two made
 * them disagree by one). The buffer is kept for the next scrape and
 * grows only with the number of slots.
 */
static const struct counters_slot *
status_snapshot(const struct counters_slot *slots, int n)
{
	static struct counters_slot	*snap;
	static int			 snap_n;
	struct counters_slot		*grown;
	const uint64_t			*from;
	uint64_t			*to;
	size_t				 w, words;
	int				 i;

	if (n > snap_n) {
		if ((grown = realloc(snap, sizeof(*snap) * (size_t)n)) == NULL)
			return slots;	/* live, as before */
		snap = grown;
		snap_n = n;
	}
	/* All uint64_t (counters.h), each updated by atomic adds. */
	words = sizeof(*snap) / sizeof(uint64_t);
	for (i = 0; i < n; i++) {
		from = (const uint64_t *)(const void *)&slots[i];
		to = (uint64_t *)(void *)&snap[i];
		for (w = 0; w < words; w++)
			to[w] = LD(from[w]);
	}
	return snap;
}

/* Parent proxies (worker/parent.c): state, traffic, failures and the
 * connect time (to the end of the parent's handshake), one series per
 * parent of this configuration, read from the records every worker
 * shares. */
static void
status_parent_metrics(struct status_out *o)
{
	static const char *const counted[][3] = {
		{ "parent_requests_total", "requests", "Transactions carried "
		  "by a parent proxy." },
		{ "parent_failures_total", "failures", "Connects and "
		  "handshakes to a parent proxy that failed." },
		{ "parent_down_total", "downs", "Times a parent proxy was "
		  "marked down." },
	};
	const struct pt_config		*conf = worker_self() != NULL ?
					    worker_self()->conf : NULL;
	const struct counters_parent	*r;
	uint64_t			 v, cum;
	int				 i, k, m;

	if (conf == NULL || conf->nparents == 0)
		return;
	status_head(o, "parent_up", "gauge", "Whether a parent proxy is up "
	    "(1) or marked down (0).");
	for (i = 0; i < conf->nparents; i++)
		if ((r = parent_record(i)) != NULL)
			status_printf(o, "portico_parent_up{parent=\"%s\"} %d\n",
			    conf->parents[i].name, LD(r->down) ? 0 : 1);
	for (m = 0; m < 3; m++) {
		status_head(o, counted[m][0], "counter", counted[m][2]);
		for (i = 0; i < conf->nparents; i++) {
			if ((r = parent_record(i)) == NULL)
				continue;
			v = m == 0 ? LD(r->requests) : m == 1 ?
			    LD(r->failures) : LD(r->downs);
			status_printf(o, "portico_%s{parent=\"%s\"} %llu\n",
			    counted[m][0], conf->parents[i].name,
			    (unsigned long long)v);
		}
	}
	status_head(o, "parent_connect_seconds", "histogram", "Time to "
	    "connect to a parent proxy and finish its handshake.");
	for (i = 0; i < conf->nparents; i++) {
		if ((r = parent_record(i)) == NULL)
			continue;
		cum = 0;
		for (k = 0; k < COUNTERS_BUCKETS; k++) {
			cum += LD(r->connect_b[k]);
			if (k < COUNTERS_BUCKETS - 1)
				status_printf(o, "portico_parent_connect_"
				    "seconds_bucket{parent=\"%s\",le=\"%g\"} "
				    "%llu\n", conf->parents[i].name,
				    (double)counters_bounds_us[k] / 1e6,
				    (unsigned long long)cum);
			else
				status_printf(o, "portico_parent_connect_"
				    "seconds_bucket{parent=\"%s\",le=\"+Inf\"} "
				    "%llu\n", conf->parents[i].name,
				    (unsigned long long)cum);
		}
		v = LD(r->connect_sum_us);
		status_printf(o, "portico_parent_connect_seconds_sum{parent="
		    "\"%s\"} %llu.%06llu\nportico_parent_connect_seconds_"
		    "count{parent=\"%s\"} %llu\n", conf->parents[i].name,
		    (unsigned long long)(v / 1000000),
		    (unsigned long long)(v % 1000000), conf->parents[i].name,
		    (unsigned long long)cum);
	}
}

/* "parents":[{...}] for the JSON page. */
static void
status_json_parents(struct status_out *o)
{
	const struct pt_config		*conf = worker_self() != NULL ?
					    worker_self()->conf : NULL;
	const struct conf_parent	*p;
	const struct counters_parent	*r;
	int				 i;

	status_printf(o, ",\"parents\":[");
	for (i = 0; conf != NULL && i < conf->nparents; i++) {
		p = &conf->parents[i];
		r = parent_record(i);
		status_printf(o, "%s{\"name\":\"%s\",\"protocol\":\"%s\","
		    "\"up\":%s,\"fails_in_a_row\":%llu,\"requests\":%llu,"
		    "\"failures\":%llu,\"downs\":%llu}", i ? "," : "",
		    p->name, parent_proto_name(p->proto),
		    r == NULL || !LD(r->down) ? "true" : "false",
		    r != NULL ? (unsigned long long)LD(r->fails) : 0ULL,
		    r != NULL ? (unsigned long long)LD(r->requests) : 0ULL,
		    r != NULL ? (unsigned long long)LD(r->failures) : 0ULL,
		    r != NULL ? (unsigned long long)LD(r->downs) : 0ULL);
	}
	status_printf(o, "]");
}

int
status_fmt_metrics(struct status_out *o)
{
	const struct counters_slot	*slots;
	int				 n = status_nslots(&slots);

	status_master_metrics(o);
	if (slots != NULL) {
		slots = status_snapshot(slots, n);
		status_core_metrics(o, slots, n, false);
		status_txn_metrics(o, slots, n);
		status_hist_metrics(o, slots, n);
		status_parent_metrics(o);
		status_module_metrics(o, slots, n, false, true);
		status_module_metrics(o, slots, n, false, false);
		status_core_metrics(o, slots, n, true);
		status_module_metrics(o, slots, n, true, true);
		status_module_metrics(o, slots, n, true, false);
	}
	return o->oom ? -ENOMEM : 0;
}

/* ---- JSON ------------------------------------------------------------ */

static void
status_json_worker(struct status_out *o, const struct counters_worker *w,
    bool first)
{
	int64_t	 st = LD(w->state);

	if (st < 0 || st > WSTATE_DRAINING)
		st = WSTATE_NONE;
	status_printf(o, "%s{\"slot\":%lld,\"cpu\":%lld,\"pid\":%lld,"
	    "\"generation\":%lld,\"state\":\"%s\",\"started\":%lld}",
	    first ? "" : ",", (long long)LD(w->slot), (long long)LD(w->cpu),
	    (long long)LD(w->pid), (long long)LD(w->generation),
	    status_wstates[st], (long long)LD(w->started));
}

/* {"accepted":N,...} of slot <i>, or of them all when <i> < 0. */
static void
status_json_counters(struct status_out *o, const struct counters_slot *slots,
    int n, int i)
{
	uint64_t	 v;
	int		 k;

	status_printf(o, "{");
	for (k = 0; k < CTR_COUNT; k++) {
		v = i < 0 ? status_sum(slots, n, k) : LD(slots[i].c[k]);
		if (k == CTR_ACTIVE)
			status_printf(o, "%s\"%s\":%lld", k ? "," : "",
			    counters_name(k), (long long)(int64_t)v);
		else
			status_printf(o, "%s\"%s\":%llu", k ? "," : "",
			    counters_name(k), (unsigned long long)v);
	}
	status_printf(o, "}");
}

/* {"name":N,...}, a labelled name as {"name":{"key=value":N,...}}, of
 * slot <i>, or of them all when <i> < 0: the modules' counters, or with
 * <core> the core's own labelled ones. */
static void
status_json_modules(struct status_out *o, const struct counters_slot *slots,
    int n, int i, bool core)
{
	const struct counters_master	*m = counters_master_get();
	const struct counters_mname	*e;
	const char			*name;
	bool				 first = true, labelled, f2;
	int				 j, k, mcount;

	mcount = (int)__atomic_load_n(&m->mcount, __ATOMIC_ACQUIRE);
	if (mcount > PT_COUNTERS_MAX)
		mcount = PT_COUNTERS_MAX;
	status_printf(o, "{");
	for (j = 0; j < mcount; j++) {
		if (m->mnames[j].core != core || !status_first_of_name(m, j))
			continue;
		name = m->mnames[j].name;
		labelled = false;
		for (k = j; k < mcount; k++)
			if (status_same_name(&m->mnames[k], &m->mnames[j]) &&
			    m->mnames[k].key[0] != '\0')
				labelled = true;
		status_printf(o, "%s\"%s\":%s", first ? "" : ",", name,
		    labelled ? "{" : "");
		first = false;
		f2 = true;
		for (k = j; k < mcount; k++) {
			e = &m->mnames[k];
			if (!status_same_name(e, &m->mnames[j]))
				continue;
			if (labelled)
				status_printf(o, "%s\"%s%s%s\":", f2 ? "" : ",",
				    e->key, e->key[0] != '\0' ? "=" : "",
				    e->value);
			status_printf(o, "%llu", (unsigned long long)(i < 0 ?
			    status_msum(slots, n, k) : LD(slots[i].m[k])));
			f2 = false;
			if (!labelled)
				break;
		}
		if (labelled)
			status_printf(o, "}");
	}
	status_printf(o, "}");
}

static void
status_json_txn(struct status_out *o, const struct counters_slot *slots,
    int n)
{
	uint64_t	 v;
	int		 p, k, i;

	status_printf(o, "{");
	for (p = 0; p < COUNTERS_PROTOS; p++) {
		status_printf(o, "%s\"%s\":{", p ? "," : "", status_protos[p]);
		for (k = 0; k < CLASS_COUNT; k++) {
			v = 0;
			for (i = 0; i < n; i++)
				v += LD(slots[i].txn[p][k]);
			status_printf(o, "%s\"%s\":%llu", k ? "," : "",
			    status_classes[k], (unsigned long long)v);
		}
		status_printf(o, "}");
	}
	status_printf(o, "}");
}

static void
status_json_hists(struct status_out *o, const struct counters_slot *slots,
    int n)
{
	uint64_t	 b[COUNTERS_BUCKETS], sum, cum;
	int		 h, k;

	status_printf(o, "{");
	for (h = 0; h < HIST_COUNT; h++) {
		sum = status_hist_read(slots, n, h, b);
		status_printf(o, "%s\"%s\":{\"buckets\":{", h ? "," : "",
		    status_hists[h].json);
		cum = 0;
		for (k = 0; k < COUNTERS_BUCKETS; k++) {
			cum += b[k];
			if (k < COUNTERS_BUCKETS - 1)
				status_printf(o, "%s\"%g\":%llu", k ? "," : "",
				    (double)counters_bounds_us[k] / 1e6,
				    (unsigned long long)cum);
			else
				status_printf(o, ",\"+Inf\":%llu",
				    (unsigned long long)cum);
		}
		status_printf(o, "},\"sum_seconds\":%llu.%06llu,\"count\":%llu}",
		    (unsigned long long)(sum / 1000000),
		    (unsigned long long)(sum % 1000000),
		    (unsigned long long)cum);
	}
	status_printf(o, "}");
}

int
status_fmt_json(struct status_out *o)
{
	const struct counters_master	*m = counters_master_get();
	const struct counters_slot	*slots;
	int				 n = status_nslots(&slots), i;
	bool				 first = true;

	status_printf(o, "{\"version\":\"%s\",\"abi\":\"%d.%d\"",
	    PACKAGE_VERSION, PT_ABI_MAJOR, PT_ABI_MINOR);
	if (m == NULL || slots == NULL) {
		status_printf(o, "}\n");
		return o->oom ? -ENOMEM : 0;
	}
	slots = status_snapshot(slots, n);
	status_printf(o, ",\"pid\":%lld,\"start_time\":%lld,"
	    "\"generation\":%lld,\"workers_configured\":%lld,"
	    "\"reloads\":{\"ok\":%lld,\"failed\":%lld,\"last_time\":%lld,"
	    "\"last_ok\":%s}", (long long)LD(m->pid),
	    (long long)LD(m->start_time), (long long)LD(m->generation),
	    (long long)LD(m->workers), (long long)LD(m->reloads_ok),
	    (long long)LD(m->reloads_failed),
	    (long long)LD(m->last_reload_time),
	    LD(m->last_reload_time) == 0 ? "null" :
	    LD(m->last_reload_ok) ? "true" : "false");
	status_printf(o, ",\"workers\":[");
	for (i = 0; i < LD(m->slots_used) && i < CONF_MAX_WORKERS; i++) {
		status_json_worker(o, &m->w[i], first);
		first = false;
	}
	for (i = 0; i < COUNTERS_OLD_MAX; i++)
		if (LD(m->old[i].state) == WSTATE_DRAINING) {
			status_json_worker(o, &m->old[i], first);
			first = false;
		}
	status_printf(o, "],\"counters\":");
	status_json_counters(o, slots, n, -1);
	status_printf(o, ",\"counters_labelled\":");
	status_json_modules(o, slots, n, -1, true);
	status_printf(o, ",\"modules\":");
	status_json_modules(o, slots, n, -1, false);
	status_printf(o, ",\"transactions\":");
	status_json_txn(o, slots, n);
	status_printf(o, ",\"histograms\":");
	status_json_hists(o, slots, n);
	status_json_parents(o);
	status_printf(o, ",\"slots\":[");
	for (i = 0; i < n; i++) {
		status_printf(o, "%s{\"slot\":%d,\"counters\":", i ? "," : "",
		    i);
		status_json_counters(o, slots, n, i);
		status_printf(o, ",\"counters_labelled\":");
		status_json_modules(o, slots, n, i, true);
		status_printf(o, ",\"modules\":");
		status_json_modules(o, slots, n, i, false);
		status_printf(o, "}");
	}
	status_printf(o, "]}\n");
	return o->oom ? -ENOMEM : 0;
}
