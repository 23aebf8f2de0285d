/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/accesslog/hold.c: a held record owns copies of
 * its strings and addresses (the request's buffers are reused at once);
 * batches run in order when full, when the arena is full, and at their
 * timer, which also flushes the logs; a record too large for any batch
 * is the caller's, after the batch. al_emit, al_flush_logs and the
 * core's timer calls are this file's: they record what hold.c asked.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "modules/accesslog/accesslog.h"
#include "t/unit/check.h"

/* What al_emit saw, record by record: the txn and a text of the fields
 * read through the record's pointers when it was emitted. */
#define T_MAX	512
static uint64_t		 t_txn[T_MAX];
static char		*t_text[T_MAX];
static size_t		 t_n;
static unsigned		 t_flushes;
static struct pt_timer	*t_timer;
static uint64_t		 t_after;

void
al_emit(const struct al_rec *r)
{
	char	 peer[INET6_ADDRSTRLEN], up[INET6_ADDRSTRLEN];
	char	*s;
	size_t	 n;

	if (t_n >= T_MAX)
		return;
	inet_ntop(AF_INET, &((const struct sockaddr_in *)r->peer)->sin_addr,
	    peer, sizeof(peer));
	if (r->upstream->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)
		    r->upstream)->sin6_addr, up, sizeof(up));
	else
		strcpy(up, "-");
	n = r->method.len + r->host.len + r->path.len + r->user.len +
	    r->label.len + r->ua.len + r->referer.len + 256 +
	    (r->error != NULL ? strlen(r->error) : 0);
	s = malloc(n);
	snprintf(s, n, "%.*s %.*s %.*s %.*s %.*s %.*s %.*s %s %s:%u %s:%u",
	    (int)r->method.len, r->method.ptr, (int)r->host.len, r->host.ptr,
	    (int)r->path.len, r->path.ptr, (int)r->user.len, r->user.ptr,
	    (int)r->label.len, r->label.ptr, (int)r->ua.len, r->ua.ptr,
	    (int)r->referer.len, r->referer.ptr,
	    r->error != NULL ? r->error : "-", peer,
	    ntohs(((const struct sockaddr_in *)r->peer)->sin_port), up,
	    r->upstream->ss_family == AF_INET6 ? ntohs(((const struct
	    sockaddr_in6 *)r->upstream)->sin6_port) : 0);
	t_txn[t_n] = r->txn;
	t_text[t_n++] = s;
}

void
al_flush_logs(void)
{
	t_flushes++;
}

void
pt_timer_start(struct pt_timer *t, uint64_t after_ms, pt_timer_fn fn,
    void *arg)
{
	t->fn = fn;
	t->arg = arg;
	t->heap_idx = 1;
	t_timer = t;
	t_after = after_ms;
}

void
pt_timer_stop(struct pt_timer *t)
{
	t->heap_idx = 0;
	if (t_timer == t)
		t_timer = NULL;
}

static void
t_reset(void)
{
	size_t	 i;

	for (i = 0; i < t_n; i++)
		free(t_text[i]);
	t_n = 0;
	t_flushes = 0;
	t_timer = NULL;
	t_after = 0;
}

/* The timer fires: as the loop would call it. */
static void
t_fire(void)
{
	struct pt_timer	*t = t_timer;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t_timer = NULL;
	t->heap_idx = 0;
	t->fn(t, t->arg);
}

static struct sockaddr_storage	 t_peer, t_up;

/* A record of txn <txn> whose strings all point into <buf>. */
static struct al_rec
t_rec(uint64_t txn, char *buf, size_t pathlen)
{
	struct al_rec	 r;

	memset(&t_peer, 0, sizeof(t_peer));
	t_peer.ss_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.7", &((struct sockaddr_in *)&t_peer)->
	    sin_addr);
	((struct sockaddr_in *)&t_peer)->sin_port = htons(50123);
	memset(&t_up, 0, sizeof(t_up));
	t_up.ss_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::9", &((struct sockaddr_in6 *)&t_up)->
	    sin6_addr);
	((struct sockaddr_in6 *)&t_up)->sin6_port = htons(8080);
	memset(&r, 0, sizeof(r));
	memcpy(buf, "GETexample.orgalicerule-1curl/8ref", 34);
	memset(buf + 34, 'p', pathlen);
	strcpy(buf + 34 + pathlen, "upstream reset");
	r.txn = txn;
	r.peer = &t_peer;
	r.upstream = &t_up;
	r.method = (struct pt_str){ buf, 3 };
	r.host = (struct pt_str){ buf + 3, 11 };
	r.user = (struct pt_str){ buf + 14, 5 };
	r.label = (struct pt_str){ buf + 19, 6 };
	r.ua = (struct pt_str){ buf + 25, 6 };
	r.referer = (struct pt_str){ buf + 31, 3 };
	r.path = (struct pt_str){ buf + 34, pathlen };
	r.error = buf + 34 + pathlen;
	return r;
}

static const char t_want[] = "GET example.org / alice rule-1 curl/8 ref "
    "upstream reset 192.0.2.7:50123 2001:db8::9:8080";

/* Everything a held record shows is its own copy: the request's buffer
 * and addresses are overwritten before the batch runs. */
static void
test_hold_copies(void)
{
	struct al_hold	 h;
	struct al_rec	 r;
	char		 buf[128];

	t_reset();
	al_hold_init(&h, 100);
	CU_ASSERT_EQUAL_FATAL(al_hold_alloc(&h), 0);
	r = t_rec(1, buf, 1);
	buf[34] = '/';
	CU_ASSERT_TRUE(al_hold_add(&h, &r));
	CU_ASSERT_EQUAL(t_n, 0);
	memset(buf, 'X', sizeof(buf));
	buf[sizeof(buf) - 1] = '\0';
	memset(&t_peer, 0, sizeof(t_peer));
	memset(&t_up, 0, sizeof(t_up));
	al_hold_run(&h);
	CU_ASSERT_EQUAL_FATAL(t_n, 1);
	CHECKF(strcmp(t_text[0], t_want) == 0, "emitted \"%s\", want \"%s\"",
	    t_text[0], t_want);
	/* Run again: nothing is emitted twice. */
	al_hold_run(&h);
	CU_ASSERT_EQUAL(t_n, 1);
	al_hold_free(&h);
	t_reset();
}

/* A full batch runs at the next record, in order; the timer started
 * with the first record runs what is held and flushes the logs. */
static void
test_hold_batches_in_order(void)
{
	struct al_hold	 h;
	struct al_rec	 r;
	char		 buf[128];
	size_t		 i;
	bool		 ordered = true;

	t_reset();
	al_hold_init(&h, 37);
	CU_ASSERT_EQUAL_FATAL(al_hold_alloc(&h), 0);
	for (i = 1; i <= AL_HOLD_RECS; i++) {
		r = t_rec(i, buf, 1);
		CU_ASSERT_TRUE(al_hold_add(&h, &r));
	}
	CU_ASSERT_EQUAL(t_n, 0);
	CU_ASSERT_PTR_NOT_NULL(t_timer);
	CU_ASSERT_EQUAL(t_after, 37);
	r = t_rec(AL_HOLD_RECS + 1, buf, 1);
	CU_ASSERT_TRUE(al_hold_add(&h, &r));
	CU_ASSERT_EQUAL_FATAL(t_n, AL_HOLD_RECS);
	for (i = 0; i < t_n; i++)
		if (t_txn[i] != i + 1)
			ordered = false;
	CU_ASSERT_TRUE(ordered);
	CU_ASSERT_EQUAL(t_flushes, 0);
	t_fire();
	CU_ASSERT_EQUAL(t_n, AL_HOLD_RECS + 1);
	CU_ASSERT_EQUAL(t_txn[AL_HOLD_RECS], AL_HOLD_RECS + 1);
	CU_ASSERT_EQUAL(t_flushes, 1);
	/* The next record starts the timer again. */
	r = t_rec(AL_HOLD_RECS + 2, buf, 1);
	CU_ASSERT_TRUE(al_hold_add(&h, &r));
	CU_ASSERT_PTR_NOT_NULL(t_timer);
	al_hold_free(&h);
	CU_ASSERT_PTR_NULL(t_timer);
	t_reset();
}

/* Records with long strings: the batch runs when the arena could not
 * take the next one; one larger than the arena is refused after the
 * batch ran, so the caller emitting it keeps the order. */
static void
test_hold_arena(void)
{
	struct al_hold	 h;
	struct al_rec	 r;
	size_t		 big = 20000, per, fit, i;
	char		*buf = malloc(AL_HOLD_BYTES + 200);

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	t_reset();
	al_hold_init(&h, 100);
	CU_ASSERT_EQUAL_FATAL(al_hold_alloc(&h), 0);
	per = 34 + big + strlen("upstream reset") + 1;
	fit = AL_HOLD_BYTES / per;
	for (i = 1; i <= fit; i++) {
		r = t_rec(i, buf, big);
		CU_ASSERT_TRUE(al_hold_add(&h, &r));
	}
	CU_ASSERT_EQUAL(t_n, 0);
	r = t_rec(fit + 1, buf, big);
	CU_ASSERT_TRUE(al_hold_add(&h, &r));
	CU_ASSERT_EQUAL(t_n, fit);
	/* Too large for any batch. */
	r = t_rec(fit + 2, buf, AL_HOLD_BYTES);
	CU_ASSERT_FALSE(al_hold_add(&h, &r));
	CU_ASSERT_EQUAL_FATAL(t_n, fit + 1);
	CU_ASSERT_EQUAL(t_txn[fit], fit + 1);
	/* The path of a held long record is whole. */
	CU_ASSERT_EQUAL(strlen(t_text[0]), strlen(t_want) - 1 + big);
	al_hold_free(&h);
	free(buf);
	t_reset();
}

void	register_accesslog_hold_suite(void);

void
register_accesslog_hold_suite(void)
{
	CU_pSuite	 s = CU_add_suite("accesslog_hold", NULL, NULL);

	CU_add_test(s, "copies", test_hold_copies);
	CU_add_test(s, "batches_in_order", test_hold_batches_in_order);
	CU_add_test(s, "arena", test_hold_arena);
}
