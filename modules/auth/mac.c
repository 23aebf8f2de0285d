/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * HMAC-SHA-256 (RFC 2104) with the key's inner and outer hash states
 * computed once, so each MAC is two SHA-256 finishes from a copied state:
 * no allocation and no provider look-up, which OpenSSL 3's HMAC() and
 * EVP_MAC do on every call (it cost a keep-alive request about a fifth of
 * its throughput). SHA256_Init/Update/Final are deprecated in OpenSSL 3
 * but kept, and are the only allocation-free way to resume a state.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "modules/auth/mac.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

_Static_assert(sizeof(SHA256_CTX) <= sizeof(((struct auth_mac_key *)0)->
    state[0]), "auth_mac_key too small for SHA256_CTX");

void
auth_mac_key_init(struct auth_mac_key *mk, const uint8_t key[32])
{
	uint8_t		 pad[SHA256_CBLOCK];
	SHA256_CTX	 c;
	int		 k, i;

	memset(mk, 0, sizeof(*mk));
	for (k = 0; k < 2; k++) {
		memset(pad, k == 0 ? 0x36 : 0x5c, sizeof(pad));
		for (i = 0; i < 32; i++)
			pad[i] ^= key[i];
		SHA256_Init(&c);
		SHA256_Update(&c, pad, sizeof(pad));
		memcpy(mk->state[k], &c, sizeof(c));
	}
	OPENSSL_cleanse(pad, sizeof(pad));
	OPENSSL_cleanse(&c, sizeof(c));
}

void
auth_mac(const struct auth_mac_key *mk, const char *user, size_t ulen,
    const char *pass, size_t plen, uint8_t out[32])
{
	SHA256_CTX	 c;
	uint8_t		 inner[32];

	memcpy(&c, mk->state[0], sizeof(c));
	SHA256_Update(&c, user, ulen);
	SHA256_Update(&c, "", 1);
	SHA256_Update(&c, pass, plen);
	SHA256_Final(inner, &c);
	memcpy(&c, mk->state[1], sizeof(c));
	SHA256_Update(&c, inner, sizeof(inner));
	SHA256_Final(out, &c);
	OPENSSL_cleanse(&c, sizeof(c));
	OPENSSL_cleanse(inner, sizeof(inner));
}
