/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers every fuzz target links (see fuzz.h). */
#include "config.h"

#include "t/fuzz/fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char	*fuzz_input;

const char	*__lsan_default_suppressions(void)
		    __attribute__((visibility("default")));

/*
 * LeakSanitizer reads its suppressions here. libconfig (1.5) leaks what
 * its scanner allocated for the token it was reading when it meets a
 * syntax error (in strbuf_append, or libconfig_yylex itself): a library's
 * leak, not a finding in ours. Only those functions are named, so a
 * configuration portico forgets to destroy is still reported.
 */
const char *
__lsan_default_suppressions(void)
{
	return "leak:strbuf_append\nleak:libconfig_yylex\n";
}

void
fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "%s:%d: property violated: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (fuzz_input != NULL)
		fprintf(stderr, "input: %s\n", fuzz_input);
	fflush(stderr);
	abort();
}

char *
fuzz_dup(const uint8_t *data, size_t len, bool nul)
{
	char	*p = malloc(len + nul + (len + nul == 0));

	if (p == NULL)
		abort();
	if (len > 0)
		memcpy(p, data, len);
	if (nul)
		p[len] = '\0';
	return p;
}

bool
fuzz_split(const uint8_t **data, size_t *len, const char *sep,
    const uint8_t **field, size_t *flen)
{
	const uint8_t	*p = *data;
	size_t		 n = *len, k = strlen(sep), i;

	if (*data == NULL)
		return false;
	for (i = 0; i + k <= n; i++)
		if (memcmp(p + i, sep, k) == 0) {
			*field = p;
			*flen = i;
			*data = p + i + k;
			*len = n - i - k;
			return true;
		}
	*field = p;
	*flen = n;
	/* The last field: nothing after it, not even an empty one. */
	*data = NULL;
	*len = 0;
	return true;
}

uint32_t
fuzz_rand(uint64_t *state)
{
	/* splitmix64, upper half */
	uint64_t	 z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

const char *
fuzz_memfile(const uint8_t *data, size_t len)
{
	static int	 fd = -1;
	static char	 path[64];

	if (fd < 0) {
		if ((fd = memfd_create("portico-fuzz.file", MFD_CLOEXEC)) < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 ||
	    (len > 0 && pwrite(fd, data, len, 0) != (ssize_t)len))
		abort();
	return path;
}
