/* SPDX-License-Identifier: BSD-2-Clause */
/* STUB in branch `auth` only (never hits): replaced at merge by the
 * verified-credential cache from its own branch. */
#include "modules/auth/cache.h"

#include <stdlib.h>

struct auth_cache {
	unsigned	 unused;
};

struct auth_cache *
auth_cache_new(unsigned max_entries, unsigned ttl_s, const uint8_t key[32])
{
	(void)max_entries; (void)ttl_s; (void)key;
	return calloc(1, sizeof(struct auth_cache));
}

bool
auth_cache_hit(struct auth_cache *c, const char *user, size_t ulen,
    const char *pass, size_t plen, uint64_t now_ms)
{
	(void)c; (void)user; (void)ulen; (void)pass; (void)plen; (void)now_ms;
	return false;
}

void
auth_cache_put(struct auth_cache *c, const char *user, size_t ulen,
    const char *pass, size_t plen, uint64_t now_ms)
{
	(void)c; (void)user; (void)ulen; (void)pass; (void)plen; (void)now_ms;
}

void
auth_cache_drop_user(struct auth_cache *c, const char *user, size_t ulen)
{
	(void)c; (void)user; (void)ulen;
}

void
auth_cache_free(struct auth_cache *c)
{
	free(c);
}
