/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Integers libconfig would read wrong. libconfig 1.5 (Debian 12's) reads
 * a plain integer into 32 bits and keeps what is left of a larger one
 * without a word: `workers = 4294967298` is 2, `connect_ports =
 * [ 4294967739 ]` is port 443, and every range check downstream sees
 * only the wrapped value. Only an L suffix (4294967298L) makes a 64-bit
 * integer. The parsed tree cannot tell, so this reads the text itself,
 * after libconfig accepted it (so its syntax is known good): numbers
 * outside strings and comments, in the file and every @include.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/conf.h"

#define CONF_INTS_DEPTH	10	/* libconfig's own @include depth limit */
#define CONF_INTS_MAX	(1 << 24)

static char *
conf_ints_slurp(const char *path)
{
	FILE	*f;
	char	*buf;
	size_t	 n;

	if ((f = fopen(path, "r")) == NULL)
		return NULL;
	buf = malloc(CONF_INTS_MAX + 1);
	n = buf != NULL ? fread(buf, 1, CONF_INTS_MAX, f) : 0;
	fclose(f);
	if (buf != NULL)
		buf[n] = '\0';
	return buf;
}

/* Whether the number token [p, e) is an integer a plain (suffix-less)
 * libconfig integer cannot hold. Floats, and integers with L, are fine. */
static bool
conf_ints_too_big(const char *p, const char *e)
{
	char		 tok[64];
	char		*end;
	long long	 v;
	unsigned long long u;
	size_t		 n = (size_t)(e - p);

	if (n >= sizeof(tok))
		return true;	/* no option takes 63 digits */
	memcpy(tok, p, n);
	tok[n] = '\0';
	if (tok[n - 1] == 'L')
		return false;
	errno = 0;
	if (strncmp(tok + (tok[0] == '-' || tok[0] == '+'), "0x", 2) == 0 ||
	    strncmp(tok + (tok[0] == '-' || tok[0] == '+'), "0X", 2) == 0) {
		u = strtoull(tok + (tok[0] == '-' || tok[0] == '+'), &end, 16);
		return *end == '\0' && (errno == ERANGE || u > INT_MAX);
	}
	if (strpbrk(tok, ".eE") != NULL)
		return false;	/* a float */
	v = strtoll(tok, &end, 10);
	return *end == '\0' && (errno == ERANGE || v > INT_MAX || v < INT_MIN);
}

static int
conf_ints_file(const char *path, const char *dir, int depth, char *err,
    size_t errsz)
{
	char		*text, *p, *q, inc[1024];
	int		 line = 1, rc = 0;
	bool		 bol = true;

	if (depth > CONF_INTS_DEPTH || (text = conf_ints_slurp(path)) == NULL)
		return 0;	/* libconfig read it: nothing new to say */
	for (p = text; *p != '\0' && rc == 0; ) {
		if (*p == '\n') {
			line++;
			bol = true;
			p++;
			continue;
		} else if (isspace((unsigned char)*p)) {
			p++;
			continue;
		}
		if (bol && strncmp(p, "@include", 8) == 0) {
			/* @include "file": next to the including file. */
			p += 8;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == '"' && (q = strchr(p + 1, '"')) != NULL) {
				snprintf(inc, sizeof(inc), "%s%s%.*s",
				    p[1] == '/' || dir == NULL ? "" : dir,
				    p[1] == '/' || dir == NULL ? "" : "/",
				    (int)(q - p - 1), p + 1);
				rc = conf_ints_file(inc, dir, depth + 1, err,
				    errsz);
				p = q + 1;
			}
			bol = false;
			continue;
		}
		bol = false;
		if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*p != '\0' && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			for (p += 2; *p != '\0' && !(p[0] == '*' && p[1] == '/');
			    p++)
				line += *p == '\n';
			p += *p != '\0' ? 2 : 0;
		} else if (*p == '"') {
			for (p++; *p != '\0' && *p != '"'; p++) {
				if (*p == '\\' && p[1] != '\0')
					p++;
				line += *p == '\n';
			}
			p += *p != '\0';
		} else if (isalpha((unsigned char)*p) || *p == '*' ||
		    *p == '_') {
			while (isalnum((unsigned char)*p) || *p == '-' ||
			    *p == '_' || *p == '*')
				p++;
		} else if (isdigit((unsigned char)*p) || ((*p == '-' ||
		    *p == '+') && isdigit((unsigned char)p[1]))) {
			for (q = p + 1; isalnum((unsigned char)*q) || *q == '.' ||
			    ((*q == '-' || *q == '+') && (q[-1] == 'e' ||
			    q[-1] == 'E')); q++)
				;
			if (conf_ints_too_big(p, q)) {
				snprintf(err, errsz, "%s:%d: %.*s does not fit "
				    "a plain integer (libconfig would read it "
				    "modulo 2^32): write it with an L suffix, "
				    "%.*sL", path, line, (int)(q - p), p,
				    (int)(q - p), p);
				rc = -1;
			}
			p = q;
		} else {
			p++;
		}
	}
	free(text);
	return rc;
}

int
conf_check_ints(const char *file, const char *include_dir, char *err,
    size_t errsz)
{
	return conf_ints_file(file, include_dir, 0, err, errsz);
}
