/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/acl/hostset.c: exact names against suffixes,
 * case and the final dot, what is not a host name, duplicates, growth
 * past many entries, and host_file loading with comments, hosts(5)
 * lines and the line number of a bad line.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "modules/acl/hostset.h"
#include "t/unit/check.h"

static int
t_add(struct acl_hostset *hs, const char *s)
{
	const char	*why = NULL;

	return acl_hostset_add(hs, s, strlen(s), &why);
}

/* Looks <host> up as a request would: normalised first. */
static bool
t_has(const struct acl_hostset *hs, const char *host)
{
	char	 n[ACL_HOST_MAX + 1];
	int	 len = acl_host_norm(host, strlen(host), n);

	return len >= 0 && acl_hostset_has(hs, n, (size_t)len);
}

static void
test_acl_hostset_exact_and_suffix(void)
{
	struct acl_hostset	 hs = { 0 };

	CU_ASSERT(t_add(&hs, "example.test") == 0);
	CU_ASSERT(t_add(&hs, ".tracker.test") == 0);
	CU_ASSERT(t_add(&hs, "*.wild.test") == 0);
	CU_ASSERT(t_has(&hs, "example.test"));
	CU_ASSERT(!t_has(&hs, "a.example.test"));
	CU_ASSERT(!t_has(&hs, "xexample.test"));
	CU_ASSERT(t_has(&hs, "tracker.test"));
	CU_ASSERT(t_has(&hs, "a.tracker.test"));
	CU_ASSERT(t_has(&hs, "a.b.c.tracker.test"));
	CU_ASSERT(!t_has(&hs, "xtracker.test"));
	CU_ASSERT(!t_has(&hs, "tracker.test.evil"));
	CU_ASSERT(!t_has(&hs, "test"));
	CU_ASSERT(t_has(&hs, "x.wild.test"));
	CU_ASSERT(t_has(&hs, "wild.test"));
	/* Case and one final dot do not matter. */
	CU_ASSERT(t_has(&hs, "EXAMPLE.Test"));
	CU_ASSERT(t_has(&hs, "example.test."));
	CU_ASSERT(t_has(&hs, "A.Tracker.TEST."));
	CU_ASSERT(t_add(&hs, "Example.TEST.") == 1);	/* already there */
	CU_ASSERT(hs.count == 3);
	acl_hostset_free(&hs);
	CU_ASSERT(!t_has(&hs, "example.test"));
}

static void
test_acl_hostset_bad_names(void)
{
	static const char *const bad[] = {
		"", ".", "..", "a..b", "a b", "a/b", "exa mple.test",
		"-x.test!", "a.b:80", "http://a.test", "~regex", "ä.test",
	};
	struct acl_hostset	 hs = { 0 };
	const char		*why;
	char			 longlabel[80], longname[300];
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		CHECKF(acl_hostset_add(&hs, bad[i], strlen(bad[i]), &why) ==
		    -1 && why != NULL, "\"%s\" is refused", bad[i]);
	}
	memset(longlabel, 'a', 64);
	longlabel[64] = '\0';
	CU_ASSERT(t_add(&hs, longlabel) == -1);
	longlabel[63] = '\0';
	CU_ASSERT(t_add(&hs, longlabel) == 0);
	for (i = 0; i < 254; i++)
		longname[i] = i % 2 ? '.' : 'a';
	longname[253] = '\0';				/* 253: the most */
	CU_ASSERT(t_add(&hs, longname) == 0);
	longname[253] = 'b';
	longname[254] = '\0';
	CU_ASSERT(t_add(&hs, longname) == -1);
	acl_hostset_free(&hs);
}

static void
test_acl_hostset_many(void)
{
	struct acl_hostset	 hs = { 0 };
	char			 name[64];
	unsigned		 i, found = 0;

	for (i = 0; i < 200000; i++) {
		snprintf(name, sizeof(name), "%sh%u.block.test",
		    i % 10 == 0 ? "." : "", i);
		if (t_add(&hs, name) != 0)
			break;
	}
	CU_ASSERT(i == 200000 && hs.count == 200000);
	for (i = 0; i < 200000; i += 997) {
		snprintf(name, sizeof(name), "h%u.block.test", i);
		found += t_has(&hs, name);
	}
	CU_ASSERT(found == (200000 + 996) / 997);
	CU_ASSERT(t_has(&hs, "sub.h10.block.test"));	/* a suffix */
	CU_ASSERT(!t_has(&hs, "sub.h11.block.test"));	/* exact only */
	CU_ASSERT(!t_has(&hs, "h200000.block.test"));
	CU_ASSERT(!t_has(&hs, "block.test"));
	acl_hostset_free(&hs);
}

static char *
t_file(const char *text)
{
	static char	 path[64];
	FILE		*f;
	int		 fd;

	snprintf(path, sizeof(path), "/tmp/acl-hosts-XXXXXX");
	if ((fd = mkstemp(path)) < 0 || (f = fdopen(fd, "w")) == NULL)
		return NULL;
	fputs(text, f);
	fclose(f);
	return path;
}

static void
test_acl_hostset_load(void)
{
	struct acl_hostset	 hs = { 0 };
	char			 err[512], *path, want[128];

	path = t_file("# a blocklist\n\nads.test\n  .tracker.test  # all\n"
	    "0.0.0.0 hosts.test\r\n127.0.0.1\tlocal.test\nlast.test");
	CU_ASSERT_FATAL(path != NULL);
	CHECKF(acl_hostset_load(&hs, path, err, sizeof(err)) == 0,
	    "load: %s", err);
	unlink(path);
	CU_ASSERT(hs.count == 5);
	CU_ASSERT(t_has(&hs, "ads.test") && t_has(&hs, "x.tracker.test") &&
	    t_has(&hs, "hosts.test") && t_has(&hs, "local.test") &&
	    t_has(&hs, "last.test"));
	CU_ASSERT(!t_has(&hs, "0.0.0.0"));
	acl_hostset_free(&hs);

	/* A hosts-format blocklist, header included (StevenBlack's). */
	path = t_file("127.0.0.1 localhost\n127.0.0.1 localhost.localdomain\n"
	    "255.255.255.255 broadcasthost\n::1 localhost\n"
	    "fe80::1%lo0 localhost\nff02::1 ip6-allnodes\n0.0.0.0 0.0.0.0\n"
	    "0.0.0.0 ads.test alias.test  # with an alias\n");
	CU_ASSERT_FATAL(path != NULL);
	CHECKF(acl_hostset_load(&hs, path, err, sizeof(err)) == 0,
	    "hosts format: %s", err);
	unlink(path);
	CU_ASSERT(t_has(&hs, "localhost") && t_has(&hs, "broadcasthost") &&
	    t_has(&hs, "localhost.localdomain") && t_has(&hs, "ip6-allnodes") &&
	    t_has(&hs, "ads.test") && t_has(&hs, "alias.test"));
	CU_ASSERT(!t_has(&hs, "0.0.0.0") && !t_has(&hs, "::1"));
	acl_hostset_free(&hs);

	path = t_file("good.test\n# fine\n\nbad name here\n");
	CU_ASSERT_FATAL(path != NULL);
	CU_ASSERT(acl_hostset_load(&hs, path, err, sizeof(err)) == -1);
	snprintf(want, sizeof(want), "%s:4: ", path);
	CHECKF(strncmp(err, want, strlen(want)) == 0, "error names %s: %s",
	    want, err);
	unlink(path);
	acl_hostset_free(&hs);

	path = t_file("ok.test\nnot_a!name\n");
	CU_ASSERT_FATAL(path != NULL);
	CU_ASSERT(acl_hostset_load(&hs, path, err, sizeof(err)) == -1);
	snprintf(want, sizeof(want), "%s:2: ", path);
	CHECKF(strncmp(err, want, strlen(want)) == 0, "error names %s: %s",
	    want, err);
	unlink(path);
	acl_hostset_free(&hs);

	CU_ASSERT(acl_hostset_load(&hs, "/nonexistent/acl-hosts", err,
	    sizeof(err)) == -1 && strstr(err, "/nonexistent/acl-hosts") !=
	    NULL);
}

void	register_acl_hostset_suite(void);

void
register_acl_hostset_suite(void)
{
	CU_pSuite	 s = CU_add_suite("acl_hostset", NULL, NULL);

	CU_add_test(s, "exact and suffix", test_acl_hostset_exact_and_suffix);
	CU_add_test(s, "bad names", test_acl_hostset_bad_names);
	CU_add_test(s, "many names", test_acl_hostset_many);
	CU_add_test(s, "load", test_acl_hostset_load);
}
