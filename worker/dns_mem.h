/* SPDX-License-Identifier: BSD-2-Clause */
/* The memory c-ares allocates from in a worker: size-class free lists. */
#ifndef PT_WORKER_DNS_MEM_H
#define PT_WORKER_DNS_MEM_H

#include <stddef.h>

/* ---- worker/dns_mem.c ------------------------------------------------ */

/* c-ares' malloc, free and realloc (ares_library_init_mem). */
void	*dns_mem_alloc(size_t size);
void	 dns_mem_free(void *p);
void	*dns_mem_realloc(void *p, size_t size);
/* Gives every block on the free lists back to the heap; blocks in use
 * stay valid. dns_fini, after ares_library_cleanup. */
void	 dns_mem_fini(void);
/* Blocks ever taken from the heap and not given back; for tests. */
unsigned dns_mem_blocks(void);

#endif
