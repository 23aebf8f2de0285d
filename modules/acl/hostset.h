/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A set of host names and domain suffixes, for the `host` lists and the
 * `host_file` blocklists of a million lines: one arena of names and one
 * open-addressing table of offsets, built in the master and shared by
 * the workers copy-on-write. A lookup hashes the name once per label
 * (exact, then each suffix), so its cost depends on the name, not on the
 * size of the set.
 */
#ifndef PT_ACL_HOSTSET_H
#define PT_ACL_HOSTSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct acl_hostset {
	char		*arena;		/* entries: kind, length, name */
	size_t		 used, cap;
	uint64_t	*slots;		/* hash << 32 | (offset + 1); 0 free */
	size_t		 mask;		/* slots - 1, a power of two - 1 */
	size_t		 count;
};

/* Longest name kept (RFC 1035: 253 characters without the final dot). */
#define ACL_HOST_MAX	253

/*
 * Adds one entry: "name" (that name only) or ".name" (the name and every
 * name under it); "*.name" is taken as ".name". Case and a final dot do
 * not matter. 0, 1 when it was there already, or -1 with *why (static)
 * when <s> is not a host name, -2 when out of memory.
 */
int	 acl_hostset_add(struct acl_hostset *hs, const char *s, size_t len,
	    const char **why);
/* Whether <host> (lower case, no final dot: see acl_host_norm) is in the
 * set, by name or under a suffix. */
bool	 acl_hostset_has(const struct acl_hostset *hs, const char *host,
	    size_t len);
/*
 * Loads a host_file into <hs> (which may hold entries already): one name
 * or .suffix a line; blank lines and "#" comments are skipped; a hosts(5)
 * style line ("0.0.0.0 name", "127.0.0.1 name") gives its name. 0, or -1
 * with "<path>:<line>: what" (or the system's error) in <err>.
 */
int	 acl_hostset_load(struct acl_hostset *hs, const char *path,
	    char *err, size_t errlen);
void	 acl_hostset_free(struct acl_hostset *hs);
/* Bytes the set holds (arena and table), for the log. */
size_t	 acl_hostset_bytes(const struct acl_hostset *hs);
/*
 * <host> as the set compares it, in <out> (ACL_HOST_MAX + 1 bytes):
 * lower case, without one final dot. Returns its length, or -1 when it
 * is longer than ACL_HOST_MAX (no set holds it).
 */
int	 acl_host_norm(const char *host, size_t len, char *out);

#endif /* PT_ACL_HOSTSET_H */
