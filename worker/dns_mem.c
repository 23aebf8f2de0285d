/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The allocator c-ares uses in a worker. c-ares allocates for every query
 * (the query and its packet, the addrinfo list it answers with, its
 * server connection's buffers): a dozen or more small blocks per lookup,
 * freed when the lookup ends. Through dns_init's ares_library_init_mem
 * those land here, on free lists of power-of-two size classes, so that
 * once a worker has seen its peak of concurrent lookups, resolving a name
 * costs no heap allocation (doc/internals.md section 15).
 *
 * Each block carries a 16-byte header naming its class (keeping the
 * 16-byte alignment malloc gives). Requests above the largest class go
 * to the heap each time; c-ares makes none in steady state. Each class
 * keeps at most DNS_MEM_KEEP_BYTES of free blocks (and no more than
 * DNS_MEM_KEEP_MAX of them), so a burst of lookups does not pin memory
 * forever; the rest go back to the heap when freed.
 *
 * Not thread-safe, like everything in a worker. ares_library_init_mem is
 * process-wide: every block c-ares frees must have come from here, which
 * holds because a worker makes its first c-ares call in dns_init, after
 * installing this allocator (the master must leave nothing of c-ares'
 * behind when it forks), and dns_fini destroys its channel before
 * ares_library_cleanup puts malloc back.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/dns_mem.h"

#define DNS_MEM_MIN_SHIFT	5	/* 32 bytes */
#define DNS_MEM_CLASSES		12	/* up to 64 KiB */
#define DNS_MEM_HUGE		0xff	/* straight from the heap */
#define DNS_MEM_KEEP_BYTES	(256 * 1024)
#define DNS_MEM_KEEP_MAX	1024

/* In front of every block; 16 bytes so the payload stays aligned. */
struct dns_mem_hdr {
	union {
		struct dns_mem_hdr	*next;		/* while free */
		size_t			 huge_size;	/* class HUGE */
	} h;
	uint8_t		 cls;
	uint8_t		 pad[7];
};

struct dns_mem_class {
	struct dns_mem_hdr	*free;
	unsigned		 nfree;
	unsigned		 keep;
};

static struct dns_mem_class	 dns_mem_classes[DNS_MEM_CLASSES];
static unsigned			 dns_mem_nblocks;

static size_t
dns_mem_class_size(unsigned cls)
{
	return (size_t)1 << (cls + DNS_MEM_MIN_SHIFT);
}

/* The smallest class holding <size> bytes, or DNS_MEM_HUGE. */
static unsigned
dns_mem_class_of(size_t size)
{
	unsigned	 cls;

	for (cls = 0; cls < DNS_MEM_CLASSES; cls++)
		if (size <= dns_mem_class_size(cls))
			return cls;
	return DNS_MEM_HUGE;
}

static void *
dns_mem_payload(struct dns_mem_hdr *h)
{
	return h + 1;
}

static struct dns_mem_hdr *
dns_mem_hdr_of(void *p)
{
	return (struct dns_mem_hdr *)p - 1;
}

void *
dns_mem_alloc(size_t size)
{
	struct dns_mem_class	*c;
	struct dns_mem_hdr	*h;
	unsigned		 cls;

	/* c-ares never asks for 0 bytes; its own default says NULL. */
	if (size == 0 || size > SIZE_MAX - sizeof(*h))
		return NULL;
	cls = dns_mem_class_of(size);
	if (cls == DNS_MEM_HUGE) {
		if ((h = malloc(sizeof(*h) + size)) == NULL)
			return NULL;
		h->h.huge_size = size;
		h->cls = DNS_MEM_HUGE;
		return dns_mem_payload(h);
	}
	c = &dns_mem_classes[cls];
	if ((h = c->free) != NULL) {
		c->free = h->h.next;
		c->nfree--;
	} else {
		if ((h = malloc(sizeof(*h) + dns_mem_class_size(cls))) == NULL)
			return NULL;
		h->cls = (uint8_t)cls;
		dns_mem_nblocks++;
	}
	return dns_mem_payload(h);
}

void
dns_mem_free(void *p)
{
	struct dns_mem_class	*c;
	struct dns_mem_hdr	*h;

	if (p == NULL)
		return;
	h = dns_mem_hdr_of(p);
	if (h->cls == DNS_MEM_HUGE) {
		free(h);
		return;
	}
	c = &dns_mem_classes[h->cls];
	if (c->keep == 0) {
		c->keep = (unsigned)(DNS_MEM_KEEP_BYTES /
		    dns_mem_class_size(h->cls));
		if (c->keep > DNS_MEM_KEEP_MAX)
			c->keep = DNS_MEM_KEEP_MAX;
	}
	if (c->nfree >= c->keep) {
		free(h);
		dns_mem_nblocks--;
		return;
	}
	h->h.next = c->free;
	c->free = h;
	c->nfree++;
}

void *
dns_mem_realloc(void *p, size_t size)
{
	struct dns_mem_hdr	*h;
	size_t			 have;
	void			*n;

	if (p == NULL)
		return dns_mem_alloc(size);
	if (size == 0) {
		dns_mem_free(p);
		return NULL;
	}
	h = dns_mem_hdr_of(p);
	have = h->cls == DNS_MEM_HUGE ? h->h.huge_size :
	    dns_mem_class_size(h->cls);
	/* Growing within the class, or shrinking: the block stays (c-ares
	 * shrinks only to trim a line buffer it frees soon after). */
	if (size <= have)
		return p;
	if ((n = dns_mem_alloc(size)) == NULL)
		return NULL;
	memcpy(n, p, size < have ? size : have);
	dns_mem_free(p);
	return n;
}

void
dns_mem_fini(void)
{
	struct dns_mem_hdr	*h;
	unsigned		 i;

	for (i = 0; i < DNS_MEM_CLASSES; i++) {
		while ((h = dns_mem_classes[i].free) != NULL) {
			dns_mem_classes[i].free = h->h.next;
			free(h);
			dns_mem_nblocks--;
		}
		dns_mem_classes[i].nfree = 0;
	}
}

unsigned
dns_mem_blocks(void)
{
	return dns_mem_nblocks;
}
