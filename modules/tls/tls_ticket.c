/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Session ticket keys by derivation: a ticket key is never generated in
 * one process and handed to another. Each period's keys are HMACs of a
 * secret (made in the master once, or read from an operator's file so
 * several hosts agree), the listener's name and the period number, so
 * every worker computes the same keys at the same time, rotation needs
 * no message, and a reload keeps sessions alive. What this file does not
 * do: decide the period (the caller reads the clock) or talk to OpenSSL's
 * SSL objects (tls_conf.c installs the callback).
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "modules/tls/tls_ticket.h"

/* Changing this string invalidates every ticket issued before. */
static const char tls_ticket_context[] = "portico tls session ticket v1";

/* HMAC-SHA-256 over context || 0 || label || 0 || period (big endian)
 * || <which>: 32 bytes into <out>. */
static int
tls_ticket_hmac(const unsigned char *secret, const char *label,
    uint64_t period, unsigned char which, unsigned char out[32])
{
	unsigned char	 msg[sizeof(tls_ticket_context) + 256 + 9];
	size_t		 n = 0, llen = strlen(label);
	unsigned int	 outlen = 0;
	int		 i;

	if (llen > 255)
		llen = 255;
	memcpy(msg, tls_ticket_context, sizeof(tls_ticket_context));
	n = sizeof(tls_ticket_context);		/* with its NUL */
	memcpy(msg + n, label, llen);
	n += llen;
	msg[n++] = 0;
	for (i = 7; i >= 0; i--)
		msg[n++] = (unsigned char)(period >> (i * 8));
	msg[n++] = which;
	if (HMAC(EVP_sha256(), secret, TLS_TICKET_SECRET_LEN, msg, n, out,
	    &outlen) == NULL || outlen != 32)
		return -1;
	return 0;
}

int
tls_ticket_derive(const unsigned char *secret, const char *label,
    uint64_t period, struct tls_ticket_keys *out)
{
	unsigned char	 name[32];

	if (tls_ticket_hmac(secret, label, period, 1, name) < 0 ||
	    tls_ticket_hmac(secret, label, period, 2, out->aes) < 0 ||
	    tls_ticket_hmac(secret, label, period, 3, out->mac) < 0)
		return -1;
	memcpy(out->name, name, sizeof(out->name));
	return 0;
}

int
tls_ticket_secret_from(const unsigned char *bytes, size_t n,
    unsigned char out[TLS_TICKET_SECRET_LEN])
{
	unsigned int	 len = 0;

	if (n < TLS_TICKET_SECRET_LEN)
		return -1;
	if (EVP_Digest(bytes, n, out, &len, EVP_sha256(), NULL) != 1 ||
	    len != TLS_TICKET_SECRET_LEN)
		return -1;
	return 0;
}
