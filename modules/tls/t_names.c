/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/tls/tls_names.c: protocol version names, SNI
 * name matching (exact, wildcard of one label, case, final dot, and the
 * near misses a wildcard must not cover), and which certificate a name
 * picks (exact names before wildcards, -1 for the default). Each host is
 * also passed as a length into a larger buffer, as OpenSSL hands it.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <openssl/ssl.h>

#include "modules/tls/tls_names.h"
#include "t/unit/check.h"

static void
test_tls_version_names(void)
{
	static const struct {
		const char	*text;
		int		 rc, version;
	} rows[] = {
		{ "TLSv1", 0, TLS1_VERSION },
		{ "TLSv1.0", 0, TLS1_VERSION },
		{ "TLSv1.1", 0, TLS1_1_VERSION },
		{ "TLSv1.2", 0, TLS1_2_VERSION },
		{ "tlsv1.3", 0, TLS1_3_VERSION },
		{ "TLSv1.4", -1, 0 },
		{ "SSLv3", -1, 0 },
		{ "TLS1.2", -1, 0 },
		{ "TLSv1.2 ", -1, 0 },
		{ "", -1, 0 },
	};
	size_t	 i;
	int	 v, rc;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		v = 0;
		rc = tls_version_parse(rows[i].text, &v);
		CHECKF(rc == rows[i].rc && (rc != 0 || v == rows[i].version),
		    "\"%s\": rc %d version %#x", rows[i].text, rc, v);
	}
}

/* <host> copied into an exact-size heap buffer, no NUL after it, so a
 * read past <len> is an error the sanitizers see. */
static bool
t_match(const char *pattern, const char *host)
{
	size_t	 len = strlen(host);
	char	*p = malloc(len + 1);
	bool	 r;

	CU_ASSERT_FATAL(p != NULL);
	memcpy(p, host, len);
	r = tls_name_match(pattern, p, len);
	free(p);
	return r;
}

static void
test_tls_name_match(void)
{
	static const struct {
		const char	*pattern, *host;
		bool		 match;
	} rows[] = {
		{ "www.example.org", "www.example.org", true },
		{ "www.example.org", "WWW.Example.ORG", true },
		{ "www.example.org", "www.example.org.", true },
		{ "www.example.org", "www.example.or", false },
		{ "www.example.org", "www.example.orgx", false },
		{ "www.example.org", "xwww.example.org", false },
		{ "www.example.org", "", false },
		{ "www.example.org", ".", false },
		{ "*.example.org", "a.example.org", true },
		{ "*.example.org", "Mail.EXAMPLE.org.", true },
		{ "*.example.org", "example.org", false },
		{ "*.example.org", ".example.org", false },
		{ "*.example.org", "a.b.example.org", false },
		{ "*.example.org", "a.example.org.x", false },
		{ "*.example.org", "aexample.org", false },
		{ "*.example.org", "a.xexample.org", false },
		{ "*.", "a.", false },
		{ "*", "a", false },
		{ "", "a", false },
	};
	size_t	 i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECKF(t_match(rows[i].pattern, rows[i].host) ==
		    rows[i].match, "\"%s\" against \"%s\": want %s",
		    rows[i].pattern, rows[i].host,
		    rows[i].match ? "match" : "no match");
}

static void
test_tls_names_pick_prefers_exact(void)
{
	static const struct tls_name names[] = {
		{ "default.test", 0 },
		{ "*.b.test", 1 },
		{ "a.b.test", 2 },
		{ "*.c.test", 2 },
		{ "*.c.test", 3 },
	};
	static const struct {
		const char	*host;
		int		 cert;
	} rows[] = {
		{ "default.test", 0 },
		{ "a.b.test", 2 },	/* exact beats the earlier wildcard */
		{ "x.b.test", 1 },
		{ "X.C.TEST", 2 },	/* the first wildcard that matches */
		{ "b.test", -1 },
		{ "other.test", -1 },
		{ "", -1 },
	};
	size_t	 i;
	int	 got;
	char	 buf[64];

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		/* The name as part of a longer buffer: only <len> counts. */
		snprintf(buf, sizeof(buf), "%s#junk", rows[i].host);
		got = tls_names_pick(names, sizeof(names) / sizeof(names[0]),
		    buf, strlen(rows[i].host));
		CHECKF(got == rows[i].cert, "\"%s\": cert %d, want %d",
		    rows[i].host, got, rows[i].cert);
	}
	CU_ASSERT(tls_names_pick(names, 0, "a.b.test", 8) == -1);
}

void	register_tls_names_suite(void);

void
register_tls_names_suite(void)
{
	CU_pSuite	 s = CU_add_suite("tls_names", NULL, NULL);

	CU_add_test(s, "version_names", test_tls_version_names);
	CU_add_test(s, "name_match", test_tls_name_match);
	CU_add_test(s, "pick_prefers_exact", test_tls_names_pick_prefers_exact);
}
