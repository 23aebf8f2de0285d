/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Free-list pools. LIFO on purpose: the object put last is the one most
 * likely still in cache when the next connection needs one.
 */
#include "config.h"

#include <stdlib.h>

#include "worker/pool.h"

void
pool_init(struct pool *p, const char *name, size_t size, unsigned limit)
{
	p->name = name;
	p->size = size < sizeof(struct pool_item) ?
	    sizeof(struct pool_item) : size;
	p->limit = limit;
	p->allocated = 0;
	p->in_use = 0;
	p->nfree = 0;
	p->keep = 0;
	p->free = NULL;
}

void
pool_set_keep(struct pool *p, unsigned keep)
{
	p->keep = keep;
}

void
pool_fini(struct pool *p)
{
	struct pool_item	*it;

	while ((it = p->free) != NULL) {
		p->free = it->next;
		free(it);
		p->allocated--;
	}
	p->nfree = 0;
}

void *
pool_get(struct pool *p)
{
	struct pool_item	*it;

	if ((it = p->free) != NULL) {
		p->free = it->next;
		p->nfree--;
		p->in_use++;
		return it;
	}
	if (p->limit != 0 && p->allocated >= p->limit)
		return NULL;
	if ((it = malloc(p->size)) == NULL)
		return NULL;
	p->allocated++;
	p->in_use++;
	return it;
}

void
pool_put(struct pool *p, void *obj)
{
	struct pool_item	*it = obj;

	if (obj == NULL)
		return;
	p->in_use--;
	if (p->keep != 0 && p->nfree >= p->keep) {
		free(it);
		p->allocated--;
		return;
	}
	it->next = p->free;
	p->free = it;
	p->nfree++;
}

void
pool_prealloc(struct pool *p, unsigned n)
{
	struct pool_item	*it;

	while (p->allocated < n && (p->limit == 0 || p->allocated < p->limit)) {
		if ((it = malloc(p->size)) == NULL)
			return;
		p->allocated++;
		it->next = p->free;
		p->free = it;
		p->nfree++;
	}
}
