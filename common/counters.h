/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared counters: one cache-line-aligned slot per worker slot in memory
 * the master maps before forking, so it can total them without asking.
 */
#ifndef PT_COMMON_COUNTERS_H
#define PT_COMMON_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "portico/module.h"
#include "common/conf_types.h"

enum counter_id {
	CTR_ACCEPTED = 0,	/* client connections accepted */
	CTR_ACTIVE,		/* open now (old and new generation) */
	CTR_CLOSED,
	CTR_BYTES_IN,		/* client -> upstream payload */
	CTR_BYTES_OUT,		/* upstream -> client payload */
	CTR_ACCEPT_PAUSED,	/* accept() paused: out of fds or conns */
	CTR_UPSTREAM_FAILED,	/* connect to the target failed or timed out */
	CTR_DENIED,		/* a module, or connect_ports, said DENY */
	CTR_UDP_DENIED,		/* datagrams to a destination DATAGRAM denied */
	/* The resolver (worker/dns.c): names found in the cache (answers
	 * and remembered failures), names not there (asked, joined to a
	 * lookup in flight, or found in /etc/hosts), and lookups that
	 * ended without an address (no such name, timeout, server
	 * failure). */
	CTR_DNS_HITS,
	CTR_DNS_MISSES,
	CTR_DNS_FAILURES,
	/* SOCKS5 UDP datagrams relayed, client -> destinations and back. */
	CTR_UDP_UP,
	CTR_UDP_DOWN,
	/* Datagrams dropped, by reason (worker/udp_assoc.c); those to a
	 * denied destination are CTR_UDP_DENIED. */
	CTR_UDP_DROP_INVALID,	/* foreign sender, fragment, malformed */
	CTR_UDP_DROP_RESOLVING,	/* another name is being resolved */
	CTR_UDP_DROP_SEND,	/* sendmmsg/sendto refused it */
	CTR_UDP_DROP_TOO_BIG,	/* a reply too big for its header */
	CTR_UDP_DROP_MODULE,	/* a module's datagram callback refused it */
	CTR_UDP_DROP_UNSOLICITED, /* a reply from an address never sent to */
	/* Payload bytes read into a pipe with splice() rather than into a
	 * buffer (tunnels and bodies, both directions): what relay.method
	 * "auto" chose (worker/relay.c). */
	CTR_SPLICED,
	/* PROXY headers read on proxy_protocol listeners, by version, and
	 * connections refused there, by reason: CTR_PP_REFUSED + enum
	 * proxy_refusal - 1 (worker/proxy_header.h), in that order. */
	CTR_PP_V1,
	CTR_PP_V2,
	CTR_PP_REFUSED,
	CTR_PP_REFUSED_LAST = CTR_PP_REFUSED + 6,
	/* HTTP/2 (worker/h2.c): connections that spoke it, and streams
	 * that became transactions. */
	CTR_H2_CONNS,
	CTR_H2_STREAMS,
	CTR_COUNT
};

/* What a transaction's outcome is counted as: its HTTP status class, or
 * the HTTP status a SOCKS or TCP outcome stands for (counters_txn). */
enum counters_class {
	CLASS_NONE = 0,		/* no answer was given (the client left) */
	CLASS_1XX, CLASS_2XX, CLASS_3XX, CLASS_4XX, CLASS_5XX,
	CLASS_COUNT
};
/* enum pt_proto's values, PT_PROTO_TCP .. PT_PROTO_STATUS. */
#define COUNTERS_PROTOS		8

/* Latency histograms. */
enum counters_hist {
	HIST_REQUEST = 0,	/* a transaction, from its start to its LOG */
	HIST_CONNECT,		/* an upstream connect() to its outcome */
	HIST_DNS,		/* a resolver lookup sent to a server */
	HIST_COUNT
};
/* Upper bounds of the buckets, microseconds; the last bucket is +Inf. */
#define COUNTERS_BUCKETS	16
extern const uint64_t counters_bounds_us[COUNTERS_BUCKETS - 1];

struct counters_hist_slot {
	/* Observations per bucket, not cumulative: one add per
	 * observation; a reader sums them up to each bound. */
	uint64_t	 b[COUNTERS_BUCKETS];
	uint64_t	 sum_us;
};

struct counters_slot {
	/* Old and new generation of one slot share it during a reload, so
	 * every update is an atomic add. */
	uint64_t	 c[CTR_COUNT];
	/* Modules' counters by pt_counter_register id: sized for the limit
	 * because the mapping is made once, before any module registers. */
	uint64_t	 m[PT_COUNTERS_MAX];
	/* Transactions ended, by enum pt_proto and class. */
	uint64_t	 txn[COUNTERS_PROTOS][CLASS_COUNT];
	struct counters_hist_slot h[HIST_COUNT];
} __attribute__((aligned(64)));

/* How the master sees a worker slot, or a draining old worker. */
enum counters_wstate {
	WSTATE_NONE = 0,	/* never started, or stopped */
	WSTATE_RUNNING,
	WSTATE_RESTARTING,	/* died; respawn pending */
	WSTATE_DRAINING,	/* old generation, finishing its connections */
};

struct counters_worker {
	int64_t		 pid;
	int64_t		 generation;
	int64_t		 cpu;		/* -1: not pinned */
	int64_t		 state;		/* enum counters_wstate */
	int64_t		 started;	/* unix time, seconds */
	int64_t		 slot;		/* for the draining table */
};

#define COUNTERS_OLD_MAX	64	/* draining workers shown */
#define COUNTERS_NAME_MAX	31	/* a module counter's name, bytes */
#define COUNTERS_VALUE_MAX	64	/* its label's value, bytes */

/* A module counter's name, and its label (pt_counter_register_label) or
 * an empty key. */
struct counters_mname {
	/* The core's own (counters_register_core): portico_<name>_total,
	 * not portico_module_<name>_total. */
	bool		 core;
	char		 name[COUNTERS_NAME_MAX + 1];
	char		 key[COUNTERS_NAME_MAX + 1];
	char		 value[COUNTERS_VALUE_MAX + 1];
};

/* Parent proxies' records kept at once, across reloads. */
#define COUNTERS_PARENTS_MAX	128

/*
 * One parent proxy's health and numbers, shared by every worker of every
 * generation (worker/parent.c): keyed by the parent's identity
 * (common/parent.h), claimed by the first worker that needs it (a
 * compare-and-swap of <identity> from 0), so a reload that keeps a
 * parent keeps its state. Every field is read and written with relaxed
 * atomics; times are CLOCK_MONOTONIC milliseconds, one clock for all
 * processes.
 */
struct counters_parent {
	uint64_t	 identity;	/* 0: free */
	uint64_t	 fails;		/* failures in a row */
	uint64_t	 down;		/* 1 while down */
	uint64_t	 down_until;	/* probe after this */
	uint64_t	 probe_lease;	/* a worker probes until this */
	uint64_t	 requests, failures, downs;
	uint64_t	 connect_b[COUNTERS_BUCKETS];
	uint64_t	 connect_sum_us;
	char		 name[52];	/* for the status listener */
	uint32_t	 pad;
} __attribute__((aligned(64)));

/*
 * What the master knows that a status listener shows: written by the
 * master only, each field with one relaxed atomic store, read by any
 * worker with relaxed loads (a scrape may see a reload half recorded,
 * never a torn number). Lives in the same mapping as the slots.
 */
struct counters_master {
	int64_t			 pid;
	int64_t			 start_time;	/* unix seconds */
	int64_t			 generation;
	int64_t			 workers;	/* configured, this generation */
	int64_t			 slots_used;	/* highest slot ever + 1 */
	int64_t			 reloads_ok;
	int64_t			 reloads_failed;
	int64_t			 last_reload_time;	/* 0: never */
	int64_t			 last_reload_ok;
	struct counters_worker	 w[CONF_MAX_WORKERS];
	struct counters_worker	 old[COUNTERS_OLD_MAX];
	/* Module counter names, published by mcount (release). */
	int64_t			 mcount;
	struct counters_mname	 mnames[PT_COUNTERS_MAX];
	/* Parent proxies (worker/parent.c writes them). */
	struct counters_parent	 parents[COUNTERS_PARENTS_MAX];
};

#define COUNTERS_NAME_MAX	31	/* a module counter's name, bytes */

/* ---- common/counters.c ----------------------------------------------- */

/* Maps <nslots> zeroed slots and the master's record, shared with future
 * children. Master, before the first fork. Returns 0 or -errno. */
int		 counters_map(int nslots);
/* The slot a worker writes to. */
void		 counters_use_slot(int slot);
void		 counters_add(enum counter_id id, int64_t delta);
/* A transaction of protocol <proto> ended with <status> (an HTTP status,
 * or what a SOCKS reply or TCP outcome stands for; 0: none), taking
 * <us> microseconds. Worker. */
void		 counters_txn(int proto, int status, uint64_t us);
/* One observation of <us> microseconds into histogram <h>. Worker. */
void		 counters_observe(enum counters_hist h, uint64_t us);
/* Monotonic microseconds (a vDSO clock read, no system call). */
uint64_t	 counters_now_us(void);
/* Sum of every slot, for the master's reports. */
void		 counters_total(uint64_t out[CTR_COUNT]);
const char	*counters_name(enum counter_id id);
/* Appends " <name>=<sum>" for every module counter registered without
 * a label to
 * <buf> (<cap> bytes, NUL-terminated, cut when full). Master. Returns
 * the length written. */
size_t		 counters_fmt_modules(char *buf, size_t cap);
/* A labelled counter of the core's own (egress), kept with the
 * modules' (the same ids, slots and limits) but shown as
 * portico_<name>_total{<key>="<value>"} and, in the JSON, under
 * "counters_labelled". Master. An id, or -errno as
 * pt_counter_register_label. */
int		 counters_register_core(const char *name, const char *key,
		    const char *value);
/* Tests only: forgets every module counter name. */
void		 counters_forget_names(void);

/* Reading, any process: the slots (NULL before counters_map), how many,
 * and the master's record (NULL before counters_map). Values are read
 * with __atomic_load_n(..., __ATOMIC_RELAXED). */
const struct counters_slot *counters_slots(int *nslots_out);
const struct counters_master *counters_master_get(void);
/* The parents' records (COUNTERS_PARENTS_MAX), writable by any process
 * with relaxed atomics; NULL before counters_map. */
struct counters_parent *counters_parents(void);

/* Master only: recording what the status listener shows. */
void		 counters_m_start(void);
void		 counters_m_generation(int generation, int workers);
void		 counters_m_reload(bool ok);
void		 counters_m_worker(int slot, pid_t pid, int generation, int cpu,
		    enum counters_wstate state);
/* Rewrites the draining table from <n> old workers (state ignored). */
void		 counters_m_old(int n, const struct counters_worker *ws);

#endif
