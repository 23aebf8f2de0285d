/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The auth module's verification pool, one per worker: a fixed set of
 * job slots (threads + queue) and a few threads that verify passwords
 * off the worker's loop and post each result back with pt_post. A
 * failed verification lasts what one of j->costliest lasts lately, so a
 * 407 takes as long whoever the user is: an entry that ranks below it
 * (ul_entry.cheaper) burns CPU after a failure until it does; a success
 * is never padded. Unknown users and entries like the costliest are
 * what that duration is measured on.
 */
#ifndef PT_AUTH_POOL_H
#define PT_AUTH_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include <portico/module.h>

#include "modules/auth/flight.h"
#include "modules/auth/userlist.h"

/* One login being verified. The worker fills it, a thread (or the helper
 * backend) decides, the worker reads the verdict in the posted callback
 * and gives the slot back. */
struct auth_job {
	struct pt_post		 post;		/* thread -> worker */
	struct auth_job		*next;		/* free list / queue */
	struct pt_conn		*conn;
	struct pt_req		*req;
	const struct ul_entry	*entry;		/* the hash to verify */
	bool			 known;		/* entry is the user's own */
	/* The userlist's costliest entry: entry when the user is unknown,
	 * and what a failure of a cheaper entry is padded to (pad.c). */
	const struct ul_entry	*costliest;
	bool			 ok;		/* out: verified */
	int			 result;	/* helper: 1 OK, 0 ERR, <0 */
	bool			 via_helper;
	/* The client left before a thread took the job (pool_cancel):
	 * nothing is verified, the slot only comes back. Under the lock. */
	bool			 cancelled;
	/* Single-flight (auth.c, worker thread only): the logins with the
	 * same credentials that wait for this verdict, and whether the
	 * client that started it left while they wait (the job then runs
	 * for them alone). */
	struct auth_flight	 flight;
	bool			 leader_gone;
	enum pt_proto		 proto;
	const char		*listener;	/* the configuration's */
	struct sockaddr_storage	 peer;
	uint8_t			 mac[32];	/* HMAC(key, user NUL pass) */
	size_t			 ulen, plen;
	char			 user[UL_USER_MAX + 1];
	char			 pass[UL_PASS_MAX + 1];
};

struct auth_pool;

/* ---- pool.c ----------------------------------------------------------- */
/* Worker, init_worker: <threads> threads and threads + <queue> slots.
 * <other_cpus>: the threads run on the CPUs the worker had before it
 * pinned itself (pt_worker_cpuset), else on the worker's own CPU.
 * <nice>: the threads' nice value (0..19), so the loop comes first. */
int		 pool_start(struct auth_pool **out, unsigned threads,
		    unsigned queue, bool other_cpus, int nice);
/* Worker: a free slot, or NULL when threads + queue logins are pending. */
struct auth_job	*pool_job_get(struct auth_pool *p);
/* Worker: hands <j> to a thread; <done>(j) runs on the worker after. */
void		 pool_submit(struct auth_pool *p, struct auth_job *j,
		    pt_post_fn done);
/* Worker: the client of a submitted job went away. A job no thread has
 * taken yet is not verified (a client that gave up costs no Argon2id
 * run, so a burst of abandoned logins does not fill the slots with dead
 * work); its <done> still runs, with j->cancelled set. */
void		 pool_cancel(struct auth_pool *p, struct auth_job *j);
/* Worker: the slot is free again (the password copy is wiped here, not
 * by the thread: the worker still needs it for the cache). */
void		 pool_job_put(struct auth_pool *p, struct auth_job *j);
/* Worker, exit_worker: stops and joins the threads, frees the pool. */
void		 pool_stop(struct auth_pool *p);

#endif /* PT_AUTH_POOL_H */
