/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Records held for formatting in batches. LOG copies what a record needs
 * (numbers, two addresses, the strings the request's buffers hold) into
 * a per-worker batch, and the batch is formatted into the logs when it is
 * full, when its timer fires (flush ms after its first record, so no
 * record waits longer than the logs' flush interval, as before), and
 * before every flush that must see it: the drain at a reload, a reopen,
 * the worker's exit.
 *
 * Why: on a loaded worker, formatting one record between two requests
 * runs with caches the request path has just filled, and the request
 * path then runs with caches the formatting filled; formatting 128 at a
 * time costs far less per record (bench/sidebyside, 1 KiB GETs, JSON to a
 * file: 3 points of the instance's requests per CPU-second, see the
 * commit). A copy per record is the price: ~270 bytes for a plain GET
 * (the 216-byte record, two IPv4 addresses, 23 bytes of strings).
 *
 * A record whose strings do not fit the arena even when it is empty (a
 * 60 KB target) is formatted at once, after the batch: order is kept.
 */
#include "config.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "modules/accesslog/accesslog.h"

struct al_held {
	struct al_rec		 r;
	struct sockaddr_storage	 peer, upstream, balancer, egress;
};

static void
al_hold_on_timer(struct pt_timer *t, void *arg)
{
	struct al_hold	*h = arg;

	(void)t;
	h->timer_on = false;
	al_hold_run(h);
	al_flush_logs();
}

void
al_hold_init(struct al_hold *h, unsigned flush_ms)
{
	memset(h, 0, sizeof(*h));
	h->flush_ms = flush_ms;
}

int
al_hold_alloc(struct al_hold *h)
{
	if ((h->recs = calloc(AL_HOLD_RECS, sizeof(*h->recs))) == NULL ||
	    (h->arena = malloc(AL_HOLD_BYTES)) == NULL) {
		free(h->recs);
		h->recs = NULL;
		return -1;
	}
	return 0;
}

void
al_hold_free(struct al_hold *h)
{
	if (h->timer_on)
		pt_timer_stop(&h->timer);
	h->timer_on = false;
	free(h->recs);
	free(h->arena);
	h->recs = NULL;
	h->arena = NULL;
	h->n = h->used = 0;
}

/* Only the bytes of the address's family: the rest is never read. */
static void
al_copy_addr(struct sockaddr_storage *dst, const struct sockaddr_storage *src)
{
	size_t	 len;

	if (src == NULL) {
		dst->ss_family = AF_UNSPEC;
		return;
	}
	len = src->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
	    src->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    sizeof(src->ss_family);
	memcpy(dst, src, len);
}

/* <len> bytes of <p> in the arena (room checked by the caller). */
static const char *
al_arena_put(struct al_hold *h, const char *p, size_t len)
{
	char	*to = h->arena + h->used;

	memcpy(to, p, len);
	h->used += len;
	return to;
}

static void
al_copy_str(struct al_hold *h, struct pt_str *s)
{
	if (s->len > 0)
		s->ptr = al_arena_put(h, s->ptr, s->len);
}

static size_t
al_rec_strings(const struct al_rec *r)
{
	return r->method.len + r->host.len + r->path.len + r->user.len +
	    r->label.len + r->ua.len + r->referer.len + r->pp_authority.len +
	    r->pp_unique_id.len +
	    (r->error != NULL ? strlen(r->error) + 1 : 0);
}

bool
al_hold_add(struct al_hold *h, const struct al_rec *r)
{
	struct al_held	*e;
	size_t		 need = al_rec_strings(r);

	if (h->recs == NULL)
		return false;
	if (h->n == AL_HOLD_RECS || need > AL_HOLD_BYTES - h->used)
		al_hold_run(h);
	if (need > AL_HOLD_BYTES)
		return false;	/* the caller formats it now */
	e = &h->recs[h->n++];
	e->r = *r;
	al_copy_addr(&e->peer, r->peer);
	al_copy_addr(&e->upstream, r->upstream);
	e->r.peer = &e->peer;
	e->r.upstream = &e->upstream;
	if (r->balancer != NULL) {
		al_copy_addr(&e->balancer, r->balancer);
		e->r.balancer = &e->balancer;
	}
	if (r->egress != NULL) {
		al_copy_addr(&e->egress, r->egress);
		e->r.egress = &e->egress;
	}
	al_copy_str(h, &e->r.method);
	al_copy_str(h, &e->r.host);
	al_copy_str(h, &e->r.path);
	al_copy_str(h, &e->r.user);
	al_copy_str(h, &e->r.label);
	al_copy_str(h, &e->r.ua);
	al_copy_str(h, &e->r.referer);
	al_copy_str(h, &e->r.pp_authority);
	al_copy_str(h, &e->r.pp_unique_id);
	if (r->error != NULL)
		e->r.error = al_arena_put(h, r->error, strlen(r->error) + 1);
	if (!h->timer_on) {
		h->timer_on = true;
		pt_timer_start(&h->timer, h->flush_ms, al_hold_on_timer, h);
	}
	return true;
}

void
al_hold_run(struct al_hold *h)
{
	size_t	 i;

	for (i = 0; i < h->n; i++)
		al_emit(&h->recs[i].r);
	h->n = h->used = 0;
}
