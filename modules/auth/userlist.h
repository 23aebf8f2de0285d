/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The auth module's userlist: `user:HASH` lines parsed into a table sorted
 * by user name. Pure: no portico, no hashing library; the master parses,
 * every worker inherits the table read-only.
 */
#ifndef PT_AUTH_USERLIST_H
#define PT_AUTH_USERLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest user name (the core's PT_NAME_MAX) and password accepted. */
#define UL_USER_MAX	255
#define UL_PASS_MAX	255

enum ul_scheme {
	UL_ARGON2ID = 1,	/* libargon2 argon2id_verify */
	UL_CRYPT		/* crypt_rn: $2a$ $2b$ $2y$ $y$ $5$ $6$ */
};

struct ul_entry {
	const char	*user;		/* NUL-terminated, in ul->text */
	size_t		 ulen;
	const char	*hash;		/* NUL-terminated */
	enum ul_scheme	 scheme;
	unsigned	 line;
	uint32_t	 mem_kib;	/* argon2id m=, 0 for crypt */
};

struct userlist {
	struct ul_entry	*v;		/* sorted by user */
	size_t		 n;
	char		*text;		/* the file, owned */
};

/* ---- userlist.c ---------------------------------------------------- */

/*
 * Why <hash> (NUL-terminated) is refused, naming the scheme ("DES crypt
 * hash refused: weak"), or NULL when accepted with *scheme and *mem_kib
 * set. <crypt_ok>, when not NULL, asks whether the system's crypt(3)
 * verifies a crypt setting (crypt_checksalt); NULL trusts the prefix.
 */
const char	*ul_hash_check(const char *hash, enum ul_scheme *scheme,
		    uint32_t *mem_kib, bool (*crypt_ok)(const char *));
/*
 * Parses <text> (<len> bytes and one more the parser may write a NUL to;
 * owned by <ul> from now on even on failure,
 * modified in place). 0, or -1 with "FILE:LINE: what" in err[errlen].
 */
int		 ul_parse(struct userlist *ul, char *text, size_t len,
		    const char *file, bool (*crypt_ok)(const char *),
		    char *err, size_t errlen);
/* Reads <path> and parses it: 0, or -1 with the error in err. */
int		 ul_load(struct userlist *ul, const char *path,
		    bool (*crypt_ok)(const char *), char *err, size_t errlen);
/* The entry for <user>, or NULL. */
const struct ul_entry *ul_find(const struct userlist *ul, const char *user,
		    size_t ulen);
void		 ul_free(struct userlist *ul);

#endif /* PT_AUTH_USERLIST_H */
