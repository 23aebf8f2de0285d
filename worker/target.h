/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The dial path, once for every protocol: ACCESS -> resolve -> DIAL ->
 * connect (the next address on failure) -> ESTABLISHED, and how a refusal
 * at any phase is counted and handed to the protocol to answer.
 */
#ifndef PT_WORKER_TARGET_H
#define PT_WORKER_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "portico/module.h"
#include "common/sockaddr.h"

struct pt_conn;

/* Why the dial path gave up without a verdict. */
enum target_fail {
	TARGET_FAIL_RESOLVE = 0,	/* the name did not resolve */
	TARGET_FAIL_CONNECT,		/* no address could be connected */
	/* Through parents (worker/parent.h; c_req.error names the last
	 * one and why): */
	TARGET_FAIL_PARENT,		/* none could be reached */
	TARGET_FAIL_PARENT_REFUSED,	/* one answered, refusing the target:
					 * its answer (parent_refusal_*) */
	TARGET_FAIL_NO_PARENT,		/* every one is down: 503 at once */
};

/* A phase refused: what the protocol needs to answer it. */
struct target_refusal {
	enum pt_phase		 phase;
	enum pt_verdict		 verdict;	/* DENY or ERROR */
	/* The refusing module's answer (pt_conn_answer), zero fields
	 * where it set none; all zero for ERROR and for the core's own
	 * refusals. */
	const struct pt_answer	*answer;
	/* The core's reason when the core refused (a CONNECT port), else
	 * NULL. */
	const char		*why;
};

/*
 * What a protocol supplies: only how an outcome becomes bytes on its
 * wire. Every callback owns the connection from there on (it may close
 * it). Static tables, one per protocol.
 */
struct target_ops {
	/* A phase said DENY or ERROR (already counted and logged). */
	void	(*refuse)(struct pt_conn *c, const struct target_refusal *r);
	/* Resolving or connecting failed; <err> is a positive errno
	 * (ENOENT: no such name, ETIMEDOUT: timed out). */
	void	(*fail)(struct pt_conn *c, enum target_fail what, int err);
	/*
	 * Optional: ACCESS passed. Returns true to go on with the dial
	 * path, false when the protocol took the connection elsewhere (an
	 * answer of its own, a UDP relay, a refusal with target_deny).
	 * It may call target_reuse() to skip resolve and connect.
	 */
	bool	(*access_ok)(struct pt_conn *c);
	/*
	 * Optional: about to connect (or to use a reused upstream) after
	 * the path waited on a hook or the resolver (target_waited()).
	 * Returns false when the protocol ended the connection instead
	 * (its client left meanwhile).
	 */
	bool	(*may_dial)(struct pt_conn *c);
	/* Optional: DIAL chose an egress the reused upstream leg
	 * (target_reuse) was not bound to: the protocol puts it back where
	 * it came from, and returns true when it found another kept leg to
	 * the address DIAL judged that fits (it called target_reuse), false
	 * when the path must connect afresh to that address. Without it a
	 * reused leg is used as it is. */
	bool	(*unreuse)(struct pt_conn *c);
	/* ESTABLISHED passed: the upstream leg is connected. */
	void	(*established)(struct pt_conn *c);
	/* c_timer's callback while hooks run between the dial steps
	 * (armed for limits.header_timeout, as the protocol does before
	 * ACCESS). */
	pt_timer_fn on_timer;
};

/* The dial state itself, struct target, is embedded in struct pt_conn
 * and written in worker/conn.h, which target.c includes. */

/* ---- worker/target.c ------------------------------------------------- */

/* Starts a connection's dial state for protocol <ops>, resolving into
 * <store> (or NULL: addresses are always given). Before ACCEPT runs. */
void	 target_init(struct pt_conn *c, const struct target_ops *ops,
	    struct pt_addr *store);
/* The target's addresses are known (a fixed target, an IP literal):
 * <n> at <addrs>, owned by the caller and stable until the connection
 * closes or the next target_known/target_reuse. */
void	 target_known(struct pt_conn *c, const struct pt_addr *addrs, int n);
/* The upstream leg is already connected to <a> (an HTTP keep-alive
 * upstream): the dial path runs DIAL and ESTABLISHED, not connect(). */
void	 target_reuse(struct pt_conn *c, const struct pt_addr *a);
/* Runs ACCESS, then the rest of the path as the verdicts allow. The
 * host and port to reach are c_req.host and c_req.port. */
void	 target_access(struct pt_conn *c);
/* Resolves c_req.host again, then DIAL, connect and ESTABLISHED (an
 * HTTP retry on a fresh connection). */
void	 target_resolve(struct pt_conn *c);
/* After ACCESS: straight to the target (resolve when its addresses
 * are not known, DIAL, connect), whatever the route. */
void	 target_direct(struct pt_conn *c);
/* After ACCESS: the route's current member (a parent, or direct), or
 * the protocol's NO_PARENT failure. */
void	 target_go(struct pt_conn *c);
/* The upstream leg is open (through a parent: its handshake done):
 * ESTABLISHED, then the protocol's established(). <fresh>: a new
 * socket. */
void	 target_established(struct pt_conn *c, bool fresh);
/* DIAL said <v>: a refusal is handled (false), as is a client that left
 * while it ran; true when the connect may go ahead. */
bool	 target_dial_passed(struct pt_conn *c, enum pt_verdict v);
/* A fresh connection for a request whose kept one failed (HTTP's one
 * retry): to the same parent, or the target resolved again. */
void	 target_redial(struct pt_conn *c);
/* Hooks and steps between connects get header_timeout again. */
void	 target_timer_restart(struct pt_conn *c);
/* The address being tried, or connected to; NULL before any. */
const struct pt_addr *target_addr(const struct pt_conn *c);
/* Whether a resolve is pending. */
bool	 target_resolving(const struct pt_conn *c);
/* Whether this dial path waited, on a hook (c_waited) or on the
 * resolver, since ACCESS started (or the protocol's last transaction). */
bool	 target_waited(const struct pt_conn *c);
/* Cancels a pending resolve; the path is not resumed. Idempotent. */
void	 target_stop(struct pt_conn *c);
/*
 * For a protocol's own phases (ACCEPT, AUTH): when <v> is DENY or ERROR,
 * counts and logs the refusal, hands it to ops->refuse and returns true;
 * else returns false. The one place a refusal is counted (CTR_DENIED:
 * DENY only, a module's ERROR is not a denial).
 */
bool	 target_refused(struct pt_conn *c, enum pt_phase phase,
	    enum pt_verdict v);
/* The core refuses at <phase> for reason <why> (static text): counted
 * and answered as a module's DENY without an answer. */
void	 target_deny(struct pt_conn *c, enum pt_phase phase, const char *why);
/*
 * The end of a protocol's AUTH phase, verdict <v>, the same for every
 * protocol: the password is forgotten whatever it said; a refusal is
 * handled as target_refused does, and true returned; else a user name
 * no AUTH hook judged is dropped, and false returned.
 */
bool	 target_auth_refused(struct pt_conn *c, enum pt_verdict v);

#endif
