/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * modules/tls: the pure pieces of the listener options, kept apart from
 * OpenSSL's objects so the unit tests run them on plain strings: protocol
 * version names, and which certificate a client's SNI name picks.
 */
#ifndef PT_TLS_NAMES_H
#define PT_TLS_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* One name a certificate answers for ("www.example.org", or a wildcard
 * "*.example.org" that covers exactly one more label), and which of the
 * listener's certificates it belongs to. */
struct tls_name {
	const char	*pattern;	/* lower case, no final dot */
	int		 cert;		/* index in the listener's */
};

/* ---- tls_names.c --------------------------------------------------- */

/*
 * "TLSv1", "TLSv1.0", "TLSv1.1", "TLSv1.2" or "TLSv1.3" (as OpenSSL and
 * nginx spell them; case-insensitive) to OpenSSL's protocol version
 * number in *version_out. Returns 0, or -1 for anything else. Any
 * process.
 */
int	tls_version_parse(const char *text, int *version_out);

/*
 * Whether host name <host> (<len> bytes, any case, a final dot ignored)
 * is covered by <pattern> (lower case): equal, or <pattern> is
 * "*.<rest>" and <host> is one label (not empty) followed by ".<rest>".
 * A wildcard never matches a bare "<rest>" nor two labels. Any process.
 */
bool	tls_name_match(const char *pattern, const char *host, size_t len);

/*
 * The certificate index for SNI name <host> (<len> bytes) among <n>
 * names: an exact name first, else the first wildcard that matches, else
 * -1 (the caller keeps its default certificate). Any process.
 */
int	tls_names_pick(const struct tls_name *names, size_t n,
	    const char *host, size_t len);

#endif
