/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * modules/tls: session ticket keys that every worker (and every portico
 * host given the same secret) derives alike, so no key is ever passed
 * between processes: the keys of rotation period <p> are a function of
 * the secret, the listener's name and <p>.
 */
#ifndef PT_TLS_TICKET_H
#define PT_TLS_TICKET_H

#include <stddef.h>
#include <stdint.h>

#define TLS_TICKET_NAME_LEN	16	/* what OpenSSL's callback names */
#define TLS_TICKET_SECRET_LEN	32

/* The keys of one rotation period. */
struct tls_ticket_keys {
	unsigned char	 name[TLS_TICKET_NAME_LEN];	/* in clear */
	unsigned char	 aes[32];			/* AES-256-CBC */
	unsigned char	 mac[32];			/* HMAC-SHA-256 */
};

/* ---- tls_ticket.c ------------------------------------------------------ */

/*
 * The keys of period <period> for listener <label> (its name), from
 * <secret> (TLS_TICKET_SECRET_LEN bytes): HMAC-SHA-256 of the secret
 * over a fixed context, the label and the period, once per key. Any
 * process; no state, no allocation. Returns 0, or -1 when libcrypto
 * fails.
 */
int	tls_ticket_derive(const unsigned char *secret, const char *label,
	    uint64_t period, struct tls_ticket_keys *out);

/*
 * <n> bytes of a key file (any content, at least TLS_TICKET_SECRET_LEN
 * bytes) to a secret: SHA-256 of them. Returns 0, or -1.
 */
int	tls_ticket_secret_from(const unsigned char *bytes, size_t n,
	    unsigned char out[TLS_TICKET_SECRET_LEN]);

#endif
