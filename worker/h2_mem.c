/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * nghttp2's memory for one HTTP/2 connection. A session allocates about
 * 25 KiB when it is made: its frame buffer (16 KiB), which holds each frame
 * only while nghttp2_session_mem_send serializes it and h2.c copies it
 * out, and the table of its stream map (4 KiB, one bucket per 16 bytes,
 * all zero while the connection has no stream). An idle HTTP/2 connection
 * would hold five times what an idle HTTP/1.1 one does. So the allocations
 * of a page or more made with the session get pages of their own (mmap),
 * and when the connection is idle, every frame sent and nothing read
 * half-way (h2_mem_idle, from h2.c), pages go back to the kernel
 * (MADV_DONTNEED): all of the frame buffer's, and each page of the others
 * that holds only zeros, which is what a dropped page reads as. The mapping
 * stays and the next touch faults in a fresh page. Only allocations made
 * with the session: what nghttp2 allocates later (a large header value
 * while its block is read, a grown stream map) may be live at any time.
 * Everything else is malloc's, as with nghttp2's default allocator.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "worker/h2_conn.h"

/* The frame buffer, whose bytes are spent once a frame is out: 16 KiB and
 * more (NGHTTP2_FRAMEBUF_CHUNKLEN, 16 KiB and 10 bytes); nothing else a
 * new session holds comes near it. It gets pages of its own, and so does
 * whatever else is a page or more (the stream map's table, with 4 KiB
 * pages). */
#define H2_MEM_SCRATCH	16384

static size_t
h2_mem_page(void)
{
	static size_t	 page;

	if (page == 0)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page;
}

static int
h2_mem_find(const struct h2_conn *h2, const void *p)
{
	int	 i;

	for (i = 0; i < H2_BIG_MAX; i++)
		if (h2->big[i] == p)
			return i;
	return -1;
}

static void *
h2_mem_malloc(size_t n, void *arg)
{
	struct h2_conn	*h2 = arg;
	void		*p;
	int		 i;

	if (!h2->mem_creating || (n < h2_mem_page() && n < H2_MEM_SCRATCH) ||
	    (i = h2_mem_find(h2, NULL)) < 0)
		return malloc(n);
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	h2->big[i] = p;
	h2->big_len[i] = (uint32_t)n;
	h2->big_idle = false;
	return p;
}

static void
h2_mem_free(void *p, void *arg)
{
	struct h2_conn	*h2 = arg;
	int		 i;

	if (p == NULL)
		return;
	if ((i = h2_mem_find(h2, p)) < 0) {
		free(p);
		return;
	}
	munmap(p, h2->big_len[i]);
	h2->big[i] = NULL;
}

static void *
h2_mem_calloc(size_t n, size_t size, void *arg)
{
	void	*p;

	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	/* A mapping's pages are zero already, malloc's are not. */
	if ((p = h2_mem_malloc(n * size, arg)) != NULL &&
	    h2_mem_find(arg, p) < 0)
		memset(p, 0, n * size);
	return p;
}

static void *
h2_mem_realloc(void *p, size_t n, void *arg)
{
	struct h2_conn	*h2 = arg;
	void		*q;
	int		 i;

	/* nghttp2 makes its frame buffer with realloc(NULL, ...). */
	if (p == NULL)
		return h2_mem_malloc(n, arg);
	if ((i = h2_mem_find(h2, p)) < 0)
		return realloc(p, n);
	/* One of ours grows or shrinks: into malloc's memory. */
	if ((q = malloc(n)) == NULL)
		return NULL;
	memcpy(q, p, h2->big_len[i] < n ? h2->big_len[i] : n);
	h2_mem_free(p, arg);
	return q;
}

void
h2_mem_init(struct h2_conn *h2)
{
	h2->mem.mem_user_data = h2;
	h2->mem.malloc = h2_mem_malloc;
	h2->mem.free = h2_mem_free;
	h2->mem.calloc = h2_mem_calloc;
	h2->mem.realloc = h2_mem_realloc;
}

/* Whether the page at p holds only zeros. */
static bool
h2_mem_page_zero(const unsigned char *p, size_t page)
{
	const uint64_t	*w = (const uint64_t *)(const void *)p;
	uint64_t	 any = 0;
	size_t		 i;

	for (i = 0; i < page / sizeof(*w); i++)
		any |= w[i];
	return any == 0;
}

void
h2_mem_idle(struct h2_conn *h2)
{
	size_t		 page = h2_mem_page();
	unsigned char	 in[H2_MEM_SCRATCH / 4096];
	unsigned char	*p;
	size_t		 j, len;
	int		 i;

	if (h2->big_idle)
		return;
	h2->big_idle = true;
	for (i = 0; i < H2_BIG_MAX; i++) {
		if ((p = h2->big[i]) == NULL)
			continue;
		len = h2->big_len[i];
		if (len >= H2_MEM_SCRATCH) {
			(void)madvise(p, len, MADV_DONTNEED);
			continue;
		}
		/* A page or more, under 16 KiB: at most 4 pages. Only the
		 * pages in memory are looked at: on some kernels
		 * (this project's VMs) reading a page not there gives it
		 * memory of its own instead of mapping the zero page. */
		if (mincore(p, len, in) < 0)
			continue;
		for (j = 0; j * page < len; j++)
			if ((in[j] & 1) && h2_mem_page_zero(p + j * page, page))
				(void)madvise(p + j * page, page,
				    MADV_DONTNEED);
	}
}

void
h2_mem_fini(struct h2_conn *h2)
{
	int	 i;

	for (i = 0; i < H2_BIG_MAX; i++)
		if (h2->big[i] != NULL) {
			munmap(h2->big[i], h2->big_len[i]);
			h2->big[i] = NULL;
		}
}
