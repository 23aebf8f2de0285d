/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Slab pools. Each slab is one anonymous mapping holding a few dozen
 * objects, each preceded by a 16-byte header naming its slab. Objects are
 * carved lazily, so the untouched end of a fresh slab costs no resident
 * memory. Free objects stay on their slab's LIFO list (the object put last
 * is the one most likely still in cache). Slabs whose objects are all free
 * are unmapped by pool_trim, on a timer, not as they empty: a pool at 200
 * busy connections empties and refills a slab every few requests, and
 * unmapping at once cost an mmap and a munmap per 16 requests.
 *
 * Why not malloc: a burst of connections interleaves small long-lived
 * objects (a connection, its HTTP state) with short-lived 16 KiB buffers
 * in the heap; when the burst ends, every page that still holds one live
 * object stays resident, and glibc cannot give back what lies between.
 * With a slab per size class the burst's memory goes back whole.
 */
#include "config.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "worker/pool.h"

/* Under AddressSanitizer, free objects and the headers between objects
 * are poisoned, so an overrun of one pooled buffer into the next is
 * reported as it would be between two malloc blocks. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN	1
#endif
#endif
#ifdef POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POOL_POISON(a, n)	ASAN_POISON_MEMORY_REGION((a), (n))
#define POOL_UNPOISON(a, n)	ASAN_UNPOISON_MEMORY_REGION((a), (n))
#else
#define POOL_POISON(a, n)	((void)(a), (void)(n))
#define POOL_UNPOISON(a, n)	((void)(a), (void)(n))
#endif

/* Slabs aim at this size, within [POOL_SLAB_MIN, POOL_SLAB_MAX] objects. */
#define POOL_SLAB_BYTES		65536
#define POOL_SLAB_MIN		8
#define POOL_SLAB_MAX		64
#define POOL_ALIGN		16

struct pool_slab {
	struct pool		*pool;
	struct pool_slab	*prev, *next;	/* in partial or full */
	struct pool_item	*free;
	size_t			 map_len;
	unsigned		 nfree;		/* on free */
	unsigned		 carved;
	unsigned		 used;
	char			*base;		/* object 0's header */
};

struct pool_hdr {
	struct pool_slab	*slab;
} __attribute__((aligned(POOL_ALIGN)));

/* Bytes of objects in use, every pool of the process. */
static size_t	 pool_used;
static struct pool	*pool_all;
static bool	 pool_emptied;

static struct pool_slab *
pool_slab_of(const void *obj)
{
	const struct pool_hdr	*h = (const struct pool_hdr *)obj - 1;
	struct pool_slab	*s;

	POOL_UNPOISON(h, sizeof(*h));
	s = h->slab;
	POOL_POISON(h, sizeof(*h));
	return s;
}

/* Carves the next object of slab <s> (which has room left). */
static struct pool_item *
pool_carve(struct pool *p, struct pool_slab *s)
{
	struct pool_hdr	*h;

	h = (struct pool_hdr *)(s->base + (size_t)s->carved * p->stride);
	POOL_UNPOISON(h, sizeof(*h));
	h->slab = s;
	POOL_POISON(h, sizeof(*h));
	s->carved++;
	p->allocated++;
	p->bytes += p->stride;
	return (struct pool_item *)(h + 1);
}

static size_t
pool_round(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

/* Forgets <p> (pool_fini): a pool on the stack of a unit test must not
 * stay on the list. */
static void
pool_unregister(struct pool *p)
{
	struct pool	**pp;

	for (pp = &pool_all; *pp != NULL; pp = &(*pp)->next_pool)
		if (*pp == p) {
			*pp = p->next_pool;
			return;
		}
}

void
pool_init(struct pool *p, const char *name, size_t size, unsigned limit)
{
	size_t	 n;

	pool_unregister(p);	/* initialised twice: listed once */
	p->name = name;
	p->size = size < sizeof(struct pool_item) ?
	    sizeof(struct pool_item) : size;
	p->stride = sizeof(struct pool_hdr) + pool_round(p->size, POOL_ALIGN);
	n = POOL_SLAB_BYTES / p->stride;
	if (n < POOL_SLAB_MIN)
		n = POOL_SLAB_MIN;
	if (n > POOL_SLAB_MAX)
		n = POOL_SLAB_MAX;
	p->per_slab = (unsigned)n;
	p->limit = limit;
	p->allocated = 0;
	p->in_use = 0;
	p->nfree = 0;
	p->keep = p->per_slab;
	p->peak = 0;
	p->bytes = 0;
	p->partial = NULL;
	p->full = NULL;
	p->next_pool = pool_all;
	pool_all = p;
}

void
pool_set_keep(struct pool *p, unsigned keep)
{
	p->keep = keep;
}

static void
pool_link(struct pool_slab **head, struct pool_slab *s)
{
	s->prev = NULL;
	s->next = *head;
	if (*head != NULL)
		(*head)->prev = s;
	*head = s;
}

/* Appends: the emptiest slabs go last, so they are used last and have
 * the best chance to empty and go back. */
static void
pool_link_tail(struct pool_slab **head, struct pool_slab *s)
{
	struct pool_slab	*t;

	if (*head == NULL) {
		pool_link(head, s);
		return;
	}
	for (t = *head; t->next != NULL; t = t->next)
		;
	t->next = s;
	s->prev = t;
	s->next = NULL;
}

static void
pool_unlink(struct pool_slab **head, struct pool_slab *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		*head = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
}

static struct pool_slab *
pool_slab_new(struct pool *p)
{
	struct pool_slab	*s;
	size_t			 head, len;
	void			*m;

	head = pool_round(sizeof(*s), POOL_ALIGN);
	len = pool_round(head + (size_t)p->per_slab * p->stride,
	    (size_t)sysconf(_SC_PAGESIZE));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	s = m;
	s->pool = p;
	s->free = NULL;
	s->map_len = len;
	s->nfree = 0;
	s->carved = 0;
	s->used = 0;
	s->base = (char *)m + head;
	POOL_POISON(s->base, (size_t)p->per_slab * p->stride);
	p->bytes += head;
	pool_link(&p->partial, s);
	return s;
}

static void
pool_slab_release(struct pool *p, struct pool_slab *s)
{
	size_t	 n = pool_round(sizeof(*s), POOL_ALIGN) +
		    (size_t)s->carved * p->stride;

	pool_unlink(&p->partial, s);
	p->nfree -= s->nfree;
	p->allocated -= s->carved;
	p->bytes -= n;
	/* The shadow must be clean for whatever is mapped here next. */
	POOL_UNPOISON(s->base, (size_t)p->per_slab * p->stride);
	munmap(s, s->map_len);
}

void
pool_fini(struct pool *p)
{
	struct pool_slab	*s, *next;

	for (s = p->partial; s != NULL; s = next) {
		next = s->next;
		if (s->used == 0)
			pool_slab_release(p, s);
	}
	pool_unregister(p);
}

bool
pool_trim(struct pool *p)
{
	struct pool_slab	*s, *next;
	unsigned		 want = p->keep;
	bool			 more = false;

	if (p->peak > p->in_use && p->peak - p->in_use > want)
		want = p->peak - p->in_use;
	for (s = p->partial; s != NULL; s = next) {
		next = s->next;
		if (s->used != 0)
			continue;
		if (p->nfree - s->nfree >= want && p->nfree > s->nfree)
			pool_slab_release(p, s);
		else if (p->nfree - s->nfree >= p->keep &&
		    p->nfree > s->nfree)
			more = true;	/* kept for the peak: next time */
	}
	p->peak = p->in_use;
	return more;
}

bool
pool_trim_all(void)
{
	struct pool	*p;
	bool		 more = false;

	pool_emptied = false;
	for (p = pool_all; p != NULL; p = p->next_pool)
		if (pool_trim(p))
			more = true;
	return more;
}

bool
pool_trim_wanted(void)
{
	return pool_emptied;
}

/* One object out of slab <s>, which has room. */
static void *
pool_take(struct pool *p, struct pool_slab *s)
{
	struct pool_item	*it;

	if ((it = s->free) != NULL) {
		POOL_UNPOISON(it, p->size);
		s->free = it->next;
		s->nfree--;
		p->nfree--;
	} else {
		it = pool_carve(p, s);
		POOL_UNPOISON(it, p->size);
	}
	s->used++;
	p->in_use++;
	if (p->in_use > p->peak)
		p->peak = p->in_use;
	pool_used += p->stride;
	if (s->free == NULL && s->carved == p->per_slab) {
		pool_unlink(&p->partial, s);
		pool_link(&p->full, s);
	}
	return it;
}

void *
pool_get(struct pool *p)
{
	struct pool_slab	*s;

	if (p->limit != 0 && p->in_use >= p->limit)
		return NULL;
	if ((s = p->partial) == NULL && (s = pool_slab_new(p)) == NULL)
		return NULL;
	return pool_take(p, s);
}

struct pool *
pool_of(const void *obj)
{
	return pool_slab_of(obj)->pool;
}

void
pool_put(struct pool *p, void *obj)
{
	struct pool_item	*it = obj;
	struct pool_slab	*s;

	if (obj == NULL)
		return;
	s = pool_slab_of(obj);
	if (s->free == NULL && s->carved == p->per_slab) {
		/* Was full: to the front, so the object just put (warm in
		 * cache) is the next one taken. */
		pool_unlink(&p->full, s);
		pool_link(&p->partial, s);
	}
	it->next = s->free;
	POOL_POISON(it, p->size);
	s->free = it;
	s->nfree++;
	s->used--;
	p->nfree++;
	p->in_use--;
	pool_used -= p->stride;
	if (s->used > 0)
		return;
	pool_emptied = true;
	if (s->next != NULL) {
		pool_unlink(&p->partial, s);
		pool_link_tail(&p->partial, s);
	}
}

void
pool_prealloc(struct pool *p, unsigned n)
{
	struct pool_slab	*s;
	struct pool_item	*it;

	while (p->allocated < n && (p->limit == 0 || p->allocated < p->limit)) {
		for (s = p->partial; s != NULL; s = s->next)
			if (s->carved < p->per_slab)
				break;
		if (s == NULL && (s = pool_slab_new(p)) == NULL)
			return;
		/* Carve, then hand straight to the slab's free list. */
		it = pool_carve(p, s);
		POOL_UNPOISON(it, sizeof(*it));
		it->next = s->free;
		POOL_POISON(it, sizeof(*it));
		s->free = it;
		s->nfree++;
		p->nfree++;
	}
}

size_t
pool_bytes_total(void)
{
	return pool_used;
}
