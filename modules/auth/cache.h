/* SPDX-License-Identifier: BSD-2-Clause */
/* STUB in branch `auth` only: the real cache.[ch] come from another
 * helper's branch; the lead replaces this file with theirs at merge. */
#ifndef PT_AUTH_CACHE_H
#define PT_AUTH_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct auth_cache;

struct auth_cache *auth_cache_new(unsigned max_entries, unsigned ttl_s,
		    const uint8_t key[32]);
bool		 auth_cache_hit(struct auth_cache *c, const char *user,
		    size_t ulen, const char *pass, size_t plen, uint64_t now_ms);
void		 auth_cache_put(struct auth_cache *c, const char *user,
		    size_t ulen, const char *pass, size_t plen, uint64_t now_ms);
void		 auth_cache_drop_user(struct auth_cache *c, const char *user,
		    size_t ulen);
void		 auth_cache_free(struct auth_cache *c);

#endif
