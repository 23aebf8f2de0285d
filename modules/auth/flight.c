/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Single-flight bookkeeping of the auth module (flight.h): which
 * verifications a new login with the same credentials may join, and who
 * waits on each. Intrusive lists, so joining, leaving and waking cost no
 * allocation and a connection holds at most one waiter node (its own).
 * The set is searched linearly: it holds at most the worker's job slots
 * (threads + queue), and a miss is followed by an Argon2id run anyway.
 *
 * It does not decide what a verdict means for a waiter nor resume
 * anyone: auth.c does.
 */
#include "modules/auth/flight.h"

#include <string.h>

void
flight_init(struct auth_flight *f, const uint8_t mac[32], size_t ulen)
{
	memset(f, 0, sizeof(*f));
	f->tail = &f->head;
	f->ulen = ulen;
	memcpy(f->mac, mac, sizeof(f->mac));
}

void
flights_add(struct auth_flights *s, struct auth_flight *f)
{
	if (f->pprev != NULL)
		return;
	if ((f->next = s->head) != NULL)
		f->next->pprev = &f->next;
	s->head = f;
	f->pprev = &s->head;
}

/* The MAC is keyed, so a timing leak would tell little; compared in
 * constant time anyway, as everywhere else in the module. */
static bool
flight_mac_eq(const uint8_t a[32], const uint8_t b[32])
{
	unsigned	 d = 0, i;

	for (i = 0; i < 32; i++)
		d |= (unsigned)(a[i] ^ b[i]);
	return d == 0;
}

struct auth_flight *
flights_find(const struct auth_flights *s, const uint8_t mac[32],
    size_t ulen)
{
	struct auth_flight	*f;

	for (f = s->head; f != NULL; f = f->next)
		if (f->ulen == ulen && flight_mac_eq(f->mac, mac))
			return f;
	return NULL;
}

void
flights_remove(struct auth_flight *f)
{
	if (f->pprev == NULL)
		return;
	if (f->next != NULL)
		f->next->pprev = f->pprev;
	*f->pprev = f->next;
	f->next = NULL;
	f->pprev = NULL;
}

bool
flight_is_joinable(const struct auth_flight *f)
{
	return f->pprev != NULL;
}

void
flight_wait(struct auth_flight *f, struct auth_waiter *w)
{
	w->next = NULL;
	w->pprev = f->tail;
	*f->tail = w;
	f->tail = &w->next;
	w->flight = f;
	f->nwaiters++;
}

struct auth_flight *
flight_unwait(struct auth_waiter *w)
{
	struct auth_flight	*f = w->flight;

	if (f == NULL)
		return NULL;
	if (w->next != NULL)
		w->next->pprev = w->pprev;
	else
		f->tail = w->pprev;
	*w->pprev = w->next;
	w->next = NULL;
	w->pprev = NULL;
	w->flight = NULL;
	f->nwaiters--;
	return f;
}

struct auth_waiter *
flight_pop(struct auth_flight *f)
{
	struct auth_waiter	*w = f->head;

	if (w != NULL)
		flight_unwait(w);
	return w;
}
