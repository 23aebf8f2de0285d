/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protocol version names and SNI name matching for the tls module: plain
 * string work, no OpenSSL object, so the unit tests (t_names.c) cover it
 * without certificates. The certificates' names are read elsewhere
 * (tls_conf.c); this file only decides which one a name picks.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include <openssl/ssl.h>

#include "modules/tls/tls_names.h"

int
tls_version_parse(const char *text, int *version_out)
{
	static const struct {
		const char	*name;
		int		 version;
	} table[] = {
		{ "TLSv1", TLS1_VERSION },
		{ "TLSv1.0", TLS1_VERSION },
		{ "TLSv1.1", TLS1_1_VERSION },
		{ "TLSv1.2", TLS1_2_VERSION },
		{ "TLSv1.3", TLS1_3_VERSION },
	};
	size_t	 i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcasecmp(text, table[i].name) == 0) {
			*version_out = table[i].version;
			return 0;
		}
	}
	return -1;
}

/* <a> (<n> bytes, any case) equals lower-case <b> of length <n>. */
static bool
tls_name_eq(const char *a, const char *b, size_t n)
{
	return strncasecmp(a, b, n) == 0;
}

bool
tls_name_match(const char *pattern, const char *host, size_t len)
{
	size_t	 plen = strlen(pattern), rest;
	const char *dot;

	if (len > 0 && host[len - 1] == '.')
		len--;
	if (len == 0 || plen == 0)
		return false;
	if (pattern[0] != '*')
		return plen == len && tls_name_eq(host, pattern, len);
	/* "*.<rest>": the host's first label is what the star stands for;
	 * it must not be empty, and <rest> must be the whole remainder. */
	if (plen < 3 || pattern[1] != '.')
		return false;
	rest = plen - 1;	/* ".<rest>" */
	if ((dot = memchr(host, '.', len)) == NULL || dot == host)
		return false;
	return (size_t)(host + len - dot) == rest &&
	    tls_name_eq(dot, pattern + 1, rest);
}

int
tls_names_pick(const struct tls_name *names, size_t n, const char *host,
    size_t len)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (names[i].pattern[0] != '*' &&
		    tls_name_match(names[i].pattern, host, len))
			return names[i].cert;
	for (i = 0; i < n; i++)
		if (names[i].pattern[0] == '*' &&
		    tls_name_match(names[i].pattern, host, len))
			return names[i].cert;
	return -1;
}
