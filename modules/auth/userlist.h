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
	uint64_t	 cost;		/* ul_cost */
	uint32_t	 lanes;		/* argon2id p=, 1 for crypt */
	/* Ranks below the list's costliest entry (ul_costlier): a failed
	 * verification of it is padded to what one of the costliest
	 * costs (pool.c), so a 407 does not tell it from an unknown
	 * user, who is verified against the costliest. */
	bool		 cheaper;
};

struct userlist {
	struct ul_entry	*v;		/* sorted by user */
	size_t		 n;
	char		*text;		/* the file, owned */
	/* What an unknown user is verified against: the entry whose
	 * verification costs most (ul_costlier), NULL when n is 0. */
	const struct ul_entry *costliest;
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
 * An estimate of what verifying <e>'s hash costs, in the work of one
 * Argon2id pass over one KiB (about 0.5 us of one core of the machine
 * the constants were measured on, an AMD EPYC VM; rough across schemes,
 * ordered right within one):
 *	Argon2id	(t + 1) x m: t passes over m KiB, and about one
 *			more for allocating and wiping the memory
 *	bcrypt		2^cost x 128
 *	SHA-crypt	rounds / 2 (5000 rounds when the hash names none)
 *	yescrypt	N x r x p, times 9/8 with t = 1, 3t/4 with t >= 2
 * A setting it cannot read (only a hash the system's crypt refuses)
 * counts as the scheme's cheapest. Saturates rather than wraps.
 */
uint64_t	 ul_cost(const struct ul_entry *e);
/* Whether verifying <a> costs more than <b>: a higher ul_cost, or the
 * same with fewer Argon2id lanes (they run on fewer CPUs at once). */
bool		 ul_costlier(const struct ul_entry *a,
		    const struct ul_entry *b);
/*
 * Parses <text> (<len> bytes and one more the parser may write a NUL to;
 * owned by <ul> from now on even on failure,
 * modified in place). 0, or -1 with "FILE:LINE: what" in err[errlen].
 * Each entry's cost, ul->costliest and the entries' cheaper are set.
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
