/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the configuration loader (master/conf.c). Input: the text
 * of a configuration file, written to a memfd that conf_load reads by its
 * /proc/self/fd path. Checks: a validated configuration (sane workers,
 * listeners, timeouts) or an error of the form "FILE:LINE: what" naming a
 * line the text has (or "FILE: what"), the same verdict and message when
 * loaded again, and, under libFuzzer with LeakSanitizer, no leak either
 * way.
 *
 * Kept out, because the loader would act on them outside this process:
 * `@include` (reads any file), `modules` (dlopen()s any library). Names to
 * resolve (a tcp listener's `to`: t/fuzz/no_lookup.c) and users and
 * groups (the functions below) are answered in place of the C library's,
 * so no lookup leaves the process (no DNS query, no NSS service).
 */
#include "config.h"

#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t/fuzz/fuzz.h"
#include "common/log.h"
#include "master/conf.h"

static int	 conf_fd = -1;
static char	 conf_path[64];

struct passwd *
getpwnam(const char *name)
{
	static struct passwd	 pw;

	memset(&pw, 0, sizeof(pw));
	if (strcmp(name, "nobody") == 0) {
		pw.pw_name = (char *)"nobody";
		pw.pw_uid = 65534;
		pw.pw_gid = 65534;
		return &pw;
	}
	if (strcmp(name, "root") == 0) {
		pw.pw_name = (char *)"root";
		return &pw;
	}
	return NULL;
}

struct group *
getgrnam(const char *name)
{
	static struct group	 gr;

	memset(&gr, 0, sizeof(gr));
	if (strcmp(name, "nogroup") == 0) {
		gr.gr_name = (char *)"nogroup";
		gr.gr_gid = 65534;
		return &gr;
	}
	if (strcmp(name, "root") == 0) {
		gr.gr_name = (char *)"root";
		return &gr;
	}
	return NULL;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if ((conf_fd = memfd_create("portico-fuzz.conf", MFD_CLOEXEC)) < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(conf_path, sizeof(conf_path), "/proc/self/fd/%d", conf_fd);
	/* Warnings the loader logs are not findings. */
	log_set_level(PT_LOG_ERR - 1);
	return 0;
}

static bool
has(const uint8_t *data, size_t len, const char *s)
{
	return memmem(data, len, s, strlen(s)) != NULL;
}

/* The error's shape; returns its line (0 when it names none). */
static long
check_error(const char *err, size_t lines)
{
	size_t		 plen = strlen(conf_path);
	const char	*p;
	char		*end;
	long		 line;

	FUZZ_CHECK(strncmp(err, conf_path, plen) == 0 && err[plen] == ':',
	    "error does not start with the file: \"%s\"", err);
	p = err + plen + 1;
	if (*p == ' ') {
		FUZZ_CHECK(p[1] != '\0', "empty error: \"%s\"", err);
		return 0;
	}
	line = strtol(p, &end, 10);
	FUZZ_CHECK(end != p && *end == ':' && end[1] == ' ' && end[2] != '\0',
	    "error not FILE:LINE: what: \"%s\"", err);
	FUZZ_CHECK(line >= 1 && (size_t)line <= lines + 1, "error names line "
	    "%ld of %zu: \"%s\"", line, lines, err);
	return line;
}

static void
check_conf(const struct pt_config *c)
{
	int	 i;

	FUZZ_CHECK(c->workers >= 1 && c->workers <= CONF_MAX_WORKERS,
	    "%d workers", c->workers);
	FUZZ_CHECK(c->nlisteners >= 1 && c->listeners != NULL,
	    "%d listeners", c->nlisteners);
	for (i = 0; i < c->nlisteners; i++)
		FUZZ_CHECK(c->listeners[i].address != NULL &&
		    c->listeners[i].addr.len > 0, "listener %d address", i);
	FUZZ_CHECK(c->log_level >= 0 && c->error_log != NULL &&
	    c->module_dir != NULL, "defaults not set");
	FUZZ_CHECK(c->resolver.max_ttl >= c->resolver.min_ttl,
	    "max_ttl < min_ttl");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct pt_config	*c1, *c2;
	char			 err1[CONF_ERRSZ], err2[CONF_ERRSZ];
	size_t			 lines = 1, i;

	if (conf_fd < 0)
		LLVMFuzzerInitialize(NULL, NULL);
	if (len > 65536 || memchr(data, '@', len) != NULL ||
	    has(data, len, "modules"))
		return 0;
	for (i = 0; i < len; i++)
		lines += data[i] == '\n';
	if (ftruncate(conf_fd, 0) < 0 || pwrite(conf_fd, data, len, 0) !=
	    (ssize_t)len)
		abort();
	err1[0] = err2[0] = '\0';
	c1 = conf_load(conf_path, err1);
	c2 = conf_load(conf_path, err2);
	FUZZ_CHECK((c1 == NULL) == (c2 == NULL) && strcmp(err1, err2) == 0,
	    "loaded twice: \"%s\", then \"%s\"", err1, err2);
	if (c1 != NULL)
		check_conf(c1);
	else
		check_error(err1, lines);
	conf_free(c1);
	conf_free(c2);
	return 0;
}
