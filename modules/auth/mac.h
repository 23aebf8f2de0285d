/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HMAC-SHA-256 of user and password under the configuration's random
 * key, for the per-connection memory of verified credentials: computed
 * on every authenticated request, so it allocates nothing.
 */
#ifndef PT_AUTH_MAC_H
#define PT_AUTH_MAC_H

#include <stddef.h>
#include <stdint.h>

/* The key's inner and outer SHA-256 states, made once (master, conf()),
 * read-only after: every worker shares them. Opaque storage sized for
 * two SHA256_CTX. */
struct auth_mac_key {
	uint64_t	 state[2][16];
};

/* ---- mac.c ------------------------------------------------------------ */
void	 auth_mac_key_init(struct auth_mac_key *mk, const uint8_t key[32]);
/* HMAC(key, user NUL pass) into out. Any thread; no allocation. */
void	 auth_mac(const struct auth_mac_key *mk, const char *user,
	    size_t ulen, const char *pass, size_t plen, uint8_t out[32]);

#endif /* PT_AUTH_MAC_H */
