/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The limits shared by every worker: one anonymous shared mapping made in
 * the master before it forks, holding the class parameters and a fixed
 * table of keys. Each key (a class and a subject: a user, an address, a
 * prefix) has a count of live connections and one token bucket per kind
 * of rate (bucket.h). Workers update them with atomics only; inserting a
 * key into the table takes a per-group spin lock that is never held
 * across anything but a few stores (and a lock held longer than
 * TABLE_LOCK_STALE_NS, by a worker that died holding it, is taken over).
 *
 * Table layout: groups of TABLE_GROUP entries; a key lives in the group
 * its hash picks, so a lookup reads one group without locking. A full
 * group gives its least recently used entry without live connections to
 * a new key; when all its entries hold live connections the new key
 * shares its class's overflow entry (one per class slot, after the
 * table), which holds every such subject to one key's limits together:
 * stricter, never unlimited, never a failure.
 *
 * Classes: TABLE_CLASSES slots, found by class name, so a reload that
 * keeps a class keeps its slot, its keys and their counts. Parameters
 * change under a sequence lock; a change bumps the slot's generation and
 * every key finds out at its next use and starts its buckets afresh (full)
 * under the new rates. A class whose match or key changed gets a new
 * instance number instead: its old keys are never found again and age
 * out of the table.
 */
#ifndef PT_LIMITS_TABLE_H
#define PT_LIMITS_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kinds of rate, one bucket each per key. */
enum {
	LB_CONN = 0,		/* connection_rate: connections */
	LB_REQ,			/* request_rate: requests */
	LB_UP,			/* bandwidth_up: bytes, client -> upstream */
	LB_DOWN,		/* bandwidth_down: bytes, upstream -> client */
	LB_UDP,			/* udp_bytes: datagram payload, both ways */
	LB_UDP_PKT,		/* udp_packets: datagrams, both ways */
	LB_COUNT
};

#define TABLE_GROUP		8
#define TABLE_CLASSES		64
#define TABLE_NAME_MAX		64
#define TABLE_LOCK_STALE_NS	10000000ULL	/* 10 ms */

/* A class's numbers as the data path reads them. rate 0: no such limit. */
struct table_params {
	uint64_t	 rate[LB_COUNT];
	uint64_t	 burst[LB_COUNT];
	uint64_t	 epoch_ns;	/* token clocks count from here */
	uint32_t	 max_conns;	/* 0: none */
	uint32_t	 gen;
};

/* One class slot in shared memory. The master writes it (seq odd while
 * it does), every worker reads it through table_class_read. */
struct table_class {
	_Atomic uint32_t seq;
	_Atomic uint32_t gen;
	_Atomic uint32_t instance;
	_Atomic uint32_t used;		/* master only */
	_Atomic uint64_t rate[LB_COUNT];
	_Atomic uint64_t burst[LB_COUNT];
	_Atomic uint64_t epoch_ns;
	_Atomic uint32_t max_conns;
	char		 name[TABLE_NAME_MAX];	/* master only */
	uint64_t	 shape;		/* master only: hash of match + key */
};

/* One key: 72 bytes (a cache line until udp_packets' bucket came). */
struct table_entry {
	_Atomic uint64_t key;		/* 0: free */
	_Atomic uint64_t last_ns;	/* last use, for eviction */
	_Atomic uint32_t conns;		/* live connections holding it */
	_Atomic uint32_t gen;		/* class generation of the buckets */
	_Atomic uint64_t tat[LB_COUNT];
};

/* A process's view of the mapping (copied into each worker by fork). */
struct table {
	void			*base;
	size_t			 size;
	uint64_t		 seed;		/* keys are hashed with it */
	uint32_t		 nentries;	/* a multiple of TABLE_GROUP */
	uint32_t		 ngroups;
	struct table_class	*classes;
	_Atomic uint64_t	*locks;		/* one per group: 0 or a time */
	struct table_entry	*entries;	/* nentries + TABLE_CLASSES */
	/* Tests only: how many times a full group sent a key to the
	 * overflow entry, in this process. */
	uint64_t		 overflowed;
};

/* ---- table.c --------------------------------------------------------- */

/* Master (or a test): maps a table of <nentries> keys (rounded up to a
 * whole number of groups, at least one). 0, or -errno. */
int	 table_open(struct table *t, uint32_t nentries);
/* Unmaps it (the process's view only). */
void	 table_close(struct table *t);

/*
 * Master: the slot of class <name> with match and key digest <shape> and
 * parameters <p> (gen and epoch_ns ignored): the slot it had, its
 * parameters replaced (a new generation and epoch when they changed, a
 * new instance when <shape> changed), or a free one. Returns the slot,
 * or -1 when all TABLE_CLASSES are taken. <now_ns>: the clock.
 */
int	 table_class_set(struct table *t, const char *name, uint64_t shape,
	    const struct table_params *p, uint64_t now_ns);
/* Master: marks slots not in <keep> (a bitmap of TABLE_CLASSES bits)
 * free for another class; their keys age out. */
void	 table_class_retire(struct table *t, const uint64_t *keep);
/* Any process: a consistent copy of slot <slot>'s parameters. */
void	 table_class_read(const struct table *t, int slot,
	    struct table_params *out);
/* The slot's current instance (part of every key's hash). */
uint32_t table_class_instance(const struct table *t, int slot);

/* The 64-bit key of <subject> (<len> bytes) in class slot <slot>
 * instance <instance>; never 0. */
uint64_t table_key(const struct table *t, int slot, uint32_t instance,
	    const void *subject, size_t len);
/*
 * Any process: the entry of <key> for class slot <slot>, made when new
 * (buckets full), or the class's overflow entry when the key's group is
 * full of keys with live connections. Its buckets are brought to
 * generation <p>->gen first. Never NULL. Returns the entry's index in
 * *idx_out (to find it again cheaply with table_entry_at).
 */
struct table_entry *table_get(struct table *t, int slot, uint64_t key,
	    const struct table_params *p, uint64_t now_ns, uint32_t *idx_out);
/* The entry at <idx> if it still holds <key> (brought to <p>'s
 * generation), else NULL. */
struct table_entry *table_entry_at(struct table *t, uint32_t idx,
	    uint64_t key, const struct table_params *p, uint64_t now_ns);
/* Whether <idx> is a class's overflow entry. */
bool	 table_is_overflow(const struct table *t, uint32_t idx);

#endif /* PT_LIMITS_TABLE_H */
