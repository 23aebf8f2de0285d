/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Single-flight of verifications, one set per worker: the logins being
 * verified (a flight: one job on the threads or the helper backend), each
 * keyed by HMAC(key, user NUL password) and the user's length, and the
 * logins with the same credentials that wait for its verdict instead of
 * starting another (waiters). Pure bookkeeping: no allocation (flights
 * live in the job slots, waiters in the connections' module state), no
 * lock (worker thread only), nothing of connections, threads or verdicts.
 */
#ifndef PT_AUTH_FLIGHT_H
#define PT_AUTH_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct auth_flight;

/* One login waiting for another's verification (embedded, zeroed). */
struct auth_waiter {
	struct auth_waiter	*next, **pprev;
	struct auth_flight	*flight;	/* NULL: not waiting */
};

/* One verification in flight (embedded in its job). */
struct auth_flight {
	struct auth_flight	*next, **pprev;	/* pprev NULL: not in a set */
	struct auth_waiter	*head, **tail;	/* waiters, oldest first */
	unsigned		 nwaiters;
	size_t			 ulen;
	uint8_t			 mac[32];
};

/* The worker's flights that new logins may join. */
struct auth_flights {
	struct auth_flight	*head;
};

/* ---- flight.c --------------------------------------------------------- */
/* <f> keyed by <mac> and <ulen>, no waiter, in no set. */
void		 flight_init(struct auth_flight *f, const uint8_t mac[32],
		    size_t ulen);
/* <f> may be joined from now on. */
void		 flights_add(struct auth_flights *s, struct auth_flight *f);
/* The joinable flight of these credentials, or NULL (constant-time
 * comparison of the MAC). */
struct auth_flight *flights_find(const struct auth_flights *s,
		    const uint8_t mac[32], size_t ulen);
/* <f> may no longer be joined (it ended, or nobody wants it); its
 * waiters stay. Safe on a flight in no set. */
void		 flights_remove(struct auth_flight *f);
bool		 flight_is_joinable(const struct auth_flight *f);
/* <w> (not waiting) waits on <f>, after the others. */
void		 flight_wait(struct auth_flight *f, struct auth_waiter *w);
/* <w> no longer waits (its client left): its flight, or NULL if it was
 * not waiting. */
struct auth_flight *flight_unwait(struct auth_waiter *w);
/* The oldest waiter of <f>, no longer waiting, or NULL. */
struct auth_waiter *flight_pop(struct auth_flight *f);

#endif /* PT_AUTH_FLIGHT_H */
