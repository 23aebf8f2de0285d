/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the ACL's host sets and host files (modules/acl/
 * hostset.c). Input: a host file's text, then optionally a line "%%" and
 * names to look up, one a line. The file is loaded (through a memfd, by
 * acl_hostset_load); loaded, the set is checked against a model made of
 * its own entries (each "name" matches itself only, each ".name" itself
 * and every name under it): every entry is found, "x." under a suffix is
 * found, and each query (normalised as acl_host_norm does) is found
 * exactly when the model says so. Loading the file a second time into the
 * same set adds nothing. Refused, the error names the file and a line it
 * has.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "modules/acl/hostset.h"


struct entry {
	char	 kind;		/* 'E' exact, 'S' suffix */
	size_t	 len;
	char	 name[ACL_HOST_MAX + 1];
};

/* The set's entries, read from its arena (kind, length, name). */
static size_t
entries(const struct acl_hostset *hs, struct entry **out)
{
	struct entry	*v = calloc(hs->count + 1, sizeof(*v));
	size_t		 at = 0, n = 0;

	FUZZ_CHECK(v != NULL, "memory");
	while (at < hs->used) {
		FUZZ_CHECK(n < hs->count, "more entries than count %zu",
		    hs->count);
		v[n].kind = hs->arena[at];
		v[n].len = (unsigned char)hs->arena[at + 1];
		FUZZ_CHECK((v[n].kind == 'E' || v[n].kind == 'S') &&
		    v[n].len >= 1 && v[n].len <= ACL_HOST_MAX && at + 2 +
		    v[n].len <= hs->used, "entry at %zu", at);
		memcpy(v[n].name, hs->arena + at + 2, v[n].len);
		v[n].name[v[n].len] = '\0';
		at += 2 + v[n].len;
		n++;
	}
	FUZZ_CHECK(n == hs->count, "%zu entries, count %zu", n, hs->count);
	*out = v;
	return n;
}

static bool
model_has(const struct entry *v, size_t n, const char *h, size_t len)
{
	size_t	 i;

	for (i = 0; i < n; i++) {
		if (v[i].len == len && memcmp(v[i].name, h, len) == 0)
			return true;
		if (v[i].kind == 'S' && len > v[i].len &&
		    h[len - v[i].len - 1] == '.' &&
		    memcmp(h + len - v[i].len, v[i].name, v[i].len) == 0)
			return true;
	}
	return false;
}

static void
check_query(const struct acl_hostset *hs, const struct entry *v, size_t n,
    const char *q, size_t qlen)
{
	char	 norm[ACL_HOST_MAX + 1];
	int	 k;

	if ((k = acl_host_norm(q, qlen, norm)) < 0)
		return;
	FUZZ_CHECK(acl_hostset_has(hs, norm, (size_t)k) ==
	    model_has(v, n, norm, (size_t)k), "\"%s\": set says %d",
	    norm, acl_hostset_has(hs, norm, (size_t)k));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct acl_hostset	 hs;
	struct entry		*v;
	const char		*hf_path;
	const uint8_t		*file, *queries = NULL;
	size_t			 flen, qlen = 0, n, i, lines = 1, count;
	char			 err[512], *end, *qtext, *line, *save = NULL;
	char			 sub[ACL_HOST_MAX + 8];
	unsigned long		 at;

	if (len > 65536)
		return 0;
	fuzz_split(&data, &len, "\n%%\n", &file, &flen);
	if (!fuzz_split(&data, &len, "\n%%\n", &queries, &qlen))
		qlen = 0;
	for (i = 0; i < flen; i++)
		lines += file[i] == '\n';
	hf_path = fuzz_memfile(file, flen);
	memset(&hs, 0, sizeof(hs));
	if (acl_hostset_load(&hs, hf_path, err, sizeof(err)) < 0) {
		FUZZ_CHECK(strncmp(err, hf_path, strlen(hf_path)) == 0 &&
		    err[strlen(hf_path)] == ':', "error \"%s\"", err);
		at = strtoul(err + strlen(hf_path) + 1, &end, 10);
		FUZZ_CHECK(end != err + strlen(hf_path) + 1 && *end == ':' &&
		    at >= 1 && at <= lines, "error \"%s\" in %zu lines", err,
		    lines);
		acl_hostset_free(&hs);
		return 0;
	}
	n = entries(&hs, &v);
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(acl_hostset_has(&hs, v[i].name, v[i].len),
		    "entry \"%s\" not found", v[i].name);
		if (v[i].kind == 'S' && v[i].len + 2 <= ACL_HOST_MAX) {
			snprintf(sub, sizeof(sub), "x.%s", v[i].name);
			FUZZ_CHECK(acl_hostset_has(&hs, sub, v[i].len + 2),
			    "\"%s\" not found under \".%s\"", sub, v[i].name);
		}
		/* Its parent and a longer sibling: the model decides. */
		if (strchr(v[i].name, '.') != NULL)
			check_query(&hs, v, n, strchr(v[i].name, '.') + 1,
			    strlen(strchr(v[i].name, '.') + 1));
		snprintf(sub, sizeof(sub), "a%s", v[i].name);
		check_query(&hs, v, n, sub, strlen(sub));
	}
	if (qlen > 0) {
		qtext = fuzz_dup(queries, qlen, true);
		for (line = strtok_r(qtext, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save))
			check_query(&hs, v, n, line, strlen(line));
		free(qtext);
	}
	count = hs.count;
	err[0] = '\0';
	FUZZ_CHECK(acl_hostset_load(&hs, hf_path, err, sizeof(err)) == 0 &&
	    hs.count == count, "loading again: %s, %zu entries, not %zu", err,
	    hs.count, count);
	free(v);
	acl_hostset_free(&hs);
	return 0;
}
