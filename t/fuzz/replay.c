/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The plain fuzz driver: a main() that feeds files to a target's
 * LLVMFuzzerTestOneInput, for any compiler and without libFuzzer. With no
 * argument it replays t/fuzz/corpus/<target>/ (under $PT_SRCDIR, which
 * `make check` sets) and reports one TAP line counting the files replayed;
 * arguments name files or directories to replay instead (a crash file
 * libFuzzer wrote, say). -v names each file on stderr before running it.
 *
 * <target> is this program's name without "-replay". Each input is copied
 * into a heap block of its exact size, so a sanitizer build catches reads
 * past its end as libFuzzer's would.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "t/fuzz/fuzz.h"

/* Optional in a target. */
int	LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static bool	 replay_verbose;

/* Reads <path> whole; NULL with errno set on failure. */
static uint8_t *
replay_read(const char *path, size_t *len_out)
{
	FILE		*f;
	uint8_t		*buf = NULL, *nb;
	size_t		 len = 0, cap = 0, n;

	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			if ((nb = realloc(buf, cap)) == NULL) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		errno = EIO;
		return NULL;
	}
	fclose(f);
	*len_out = len;
	return buf;
}

/* Replays one file; 0, or -1 when it cannot be read. */
static int
replay_file(const char *path)
{
	uint8_t		*buf;
	char		*exact;
	size_t		 len;

	if ((buf = replay_read(path, &len)) == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	exact = fuzz_dup(buf, len, false);
	free(buf);
	if (replay_verbose)
		fprintf(stderr, "replaying %s (%zu bytes)\n", path, len);
	fuzz_input = path;
	LLVMFuzzerTestOneInput((const uint8_t *)exact, len);
	fuzz_input = NULL;
	free(exact);
	return 0;
}

static int
replay_skip_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Replays <path>, a file or a directory of files (sorted, not
 * recursive); adds the files replayed to *<count>. 0 or -1. */
static int
replay_path(const char *path, unsigned *count)
{
	struct dirent	**names;
	struct stat	 st;
	char		*full;
	size_t		 n;
	int		 i, nnames, rc = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (replay_file(path) < 0)
			return -1;
		(*count)++;
		return 0;
	}
	if ((nnames = scandir(path, &names, replay_skip_dot, alphasort)) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < nnames; i++) {
		n = strlen(path) + strlen(names[i]->d_name) + 2;
		if ((full = malloc(n)) == NULL)
			abort();
		snprintf(full, n, "%s/%s", path, names[i]->d_name);
		if (rc == 0 && stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(full) < 0)
				rc = -1;
			else
				(*count)++;
		}
		free(full);
		free(names[i]);
	}
	free(names);
	return rc;
}

int
main(int argc, char **argv)
{
	const char	*base, *srcdir;
	char		 target[128], dir[4096];
	unsigned	 count = 0;
	size_t		 n;
	int		 i, first = 1, rc = 0;

	base = strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 :
	    argv[0];
	n = strlen(base);
	if (n > 7 && strcmp(base + n - 7, "-replay") == 0)
		n -= 7;
	snprintf(target, sizeof(target), "%.*s", (int)n, base);
	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		replay_verbose = true;
		first = 2;
	}
	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	printf("1..1\n");
	fflush(stdout);
	if (first < argc) {
		for (i = first; i < argc && rc == 0; i++)
			rc = replay_path(argv[i], &count);
	} else {
		srcdir = getenv("PT_SRCDIR") != NULL ? getenv("PT_SRCDIR") :
		    ".";
		snprintf(dir, sizeof(dir), "%s/t/fuzz/corpus/%s", srcdir,
		    target);
		rc = replay_path(dir, &count);
		if (rc == 0 && count == 0) {
			fprintf(stderr, "%s: no corpus files\n", dir);
			rc = -1;
		}
	}
	printf("%s 1 - %s: %u corpus files replayed\n", rc == 0 ? "ok" :
	    "not ok", target, count);
	return rc == 0 ? 0 : 1;
}
