/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the auth module's userlist parser (ul_parse, modules/auth/
 * userlist.c). Input: the file's text. Checks: accepted, every entry is
 * found again by ul_find under its own name, the entries are as many as
 * the non-blank, non-comment lines, each name is clean (no control byte,
 * no colon, at most 255 bytes) and its line number right; refused, the
 * error is "FILE:LINE: what" with a line the text has. crypt(3) settings
 * are judged by a stand-in (a hash whose prefix says $6$ must have a
 * salt separator), so the verdict does not depend on the system's libcrypt.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "modules/auth/userlist.h"

static bool
crypt_ok(const char *hash)
{
	return strchr(hash + 1, '$') != NULL && strlen(hash) < 200;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct userlist		 ul;
	const struct ul_entry	*e;
	char			*text, err[512], *end;
	size_t			 lines = 1, expect = 0, i, start;
	unsigned long		 line;
	const char		*p;

	/* Count the lines that should make entries: not blank (after
	 * trimming white space), not starting with '#'. */
	for (start = 0, i = 0; i <= len; i++) {
		if (i < len && data[i] != '\n')
			continue;
		p = (const char *)data + start;
		while (p < (const char *)data + i && (*p == ' ' || *p == '\t'))
			p++;
		if (p < (const char *)data + i && *p != '#') {
			/* A line of only trailing white space is blank too. */
			const char *q = p;

			while (q < (const char *)data + i &&
			    strchr(" \t\r\v\f", *q) != NULL && *q != '\0')
				q++;
			expect += q < (const char *)data + i;
		}
		start = i + 1;
		lines += i < len;
	}
	text = fuzz_dup(data, len, true);
	if (ul_parse(&ul, text, len, "users", len % 2 ? crypt_ok : NULL, err,
	    sizeof(err)) < 0) {
		FUZZ_CHECK(strncmp(err, "users:", 6) == 0, "error \"%s\"",
		    err);
		if (strncmp(err, "users: out of memory", 20) != 0) {
			line = strtoul(err + 6, &end, 10);
			FUZZ_CHECK(end != err + 6 && *end == ':' && line >= 1 &&
			    line <= lines, "error \"%s\" in %zu lines", err,
			    lines);
		}
		ul_free(&ul);
		return 0;
	}
	FUZZ_CHECK(ul.n == expect, "%zu entries from %zu lines", ul.n, expect);
	for (i = 0; i < ul.n; i++) {
		e = &ul.v[i];
		FUZZ_CHECK(e->ulen >= 1 && e->ulen <= UL_USER_MAX &&
		    strlen(e->user) == e->ulen && memchr(e->user, ':',
		    e->ulen) == NULL, "entry %zu's name", i);
		for (p = e->user; *p != '\0'; p++)
			FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f,
			    "control byte in name %zu", i);
		FUZZ_CHECK(e->line >= 1 && e->line <= lines, "line %u",
		    e->line);
		FUZZ_CHECK(e->scheme == UL_ARGON2ID || e->scheme == UL_CRYPT,
		    "scheme %d", (int)e->scheme);
		FUZZ_CHECK(ul_find(&ul, e->user, e->ulen) == e,
		    "entry %zu not found under its name", i);
		FUZZ_CHECK(ul_hash_check(e->hash, &(enum ul_scheme){ 0 },
		    &(uint32_t){ 0 }, len % 2 ? crypt_ok : NULL) == NULL,
		    "entry %zu's hash refused when checked alone", i);
	}
	ul_free(&ul);
	return 0;
}
