/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The userlist parser: one `user:HASH` per line, `#` comments and blank
 * lines allowed, anything else an error naming the file and line. Every
 * hash is classified at load so a weak or unknown scheme is refused by
 * name before the configuration is adopted, never found out at the
 * first login; and given an estimate of what verifying it costs, so the
 * costliest (unknown users' hash, what failures are padded to) is known.
 * It deliberately verifies no password (hash.c does, on the verification
 * threads) and knows nothing of portico, so the unit tests run it alone.
 */
#include "modules/auth/userlist.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest userlist read: a text file of a million users is ~100 MB. */
#define UL_FILE_MAX	(256u << 20)

static bool
ul_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* Digits up to <stop>; advances *sp past them. */
static bool
ul_number(const char **sp, char stop, unsigned long *out)
{
	const char	*s = *sp;
	unsigned long	 v = 0;

	if (!isdigit((unsigned char)*s))
		return false;
	while (isdigit((unsigned char)*s)) {
		if (v > 0xffffffffUL / 10)
			return false;
		v = v * 10 + (unsigned long)(*s++ - '0');
	}
	if (*s != stop)
		return false;
	*sp = s + 1;
	*out = v;
	return true;
}

/* A run of unpadded base64 (PHC) ending at <stop>, at least <min>. */
static bool
ul_b64(const char **sp, char stop, size_t min)
{
	const char	*s = *sp;
	size_t		 n = 0;

	while (isalnum((unsigned char)s[n]) || s[n] == '+' || s[n] == '/')
		n++;
	if (n < min || s[n] != stop)
		return false;
	*sp = s + n + (stop != '\0');
	return true;
}

/* $argon2id$v=19$m=M,t=T,p=P$salt$hash, as libargon2 encodes it. */
static const char *
ul_argon2id(const char *h, uint32_t *mem_kib)
{
	const char	*s = h + strlen("$argon2id$");
	unsigned long	 m, t, p;

	if (!ul_prefix(s, "v=19$"))
		return "argon2id hash with a version other than v=19 refused";
	s += 5;
	if (!ul_prefix(s, "m=") || (s += 2, !ul_number(&s, ',', &m)) ||
	    !ul_prefix(s, "t=") || (s += 2, !ul_number(&s, ',', &t)) ||
	    !ul_prefix(s, "p=") || (s += 2, !ul_number(&s, '$', &p)))
		return "malformed argon2id hash (want "
		    "$argon2id$v=19$m=..,t=..,p=..$salt$hash)";
	if (t < 1 || p < 1 || p > 0xffffff || m < 8 * p)
		return "argon2id hash with impossible costs";
	if (!ul_b64(&s, '$', 11) || !ul_b64(&s, '\0', 22))
		return "malformed argon2id hash (salt or hash not base64)";
	*mem_kib = (uint32_t)m;
	return NULL;
}

const char *
ul_hash_check(const char *h, enum ul_scheme *scheme, uint32_t *mem_kib,
    bool (*crypt_ok)(const char *))
{
	static const char *const strong[] = {
		"$2a$", "$2b$", "$2y$", "$y$", "$5$", "$6$", NULL
	};
	size_t		 len = strlen(h), i;

	*mem_kib = 0;
	if (len == 0)
		return "empty hash";
	if (ul_prefix(h, "$argon2id$")) {
		*scheme = UL_ARGON2ID;
		return ul_argon2id(h, mem_kib);
	}
	if (ul_prefix(h, "$argon2i$") || ul_prefix(h, "$argon2d$"))
		return "argon2i/argon2d hash refused: only argon2id is accepted";
	if (ul_prefix(h, "$apr1$"))
		return "Apache MD5 ($apr1$) hash refused: weak (rehash with "
		    "portico-passwd or htpasswd -B)";
	if (ul_prefix(h, "$1$"))
		return "MD5-crypt ($1$) hash refused: weak";
	if (ul_prefix(h, "{SHA}"))
		return "unsalted SHA-1 ({SHA}) hash refused: weak";
	for (i = 0; strong[i] != NULL; i++)
		if (ul_prefix(h, strong[i]))
			break;
	if (strong[i] != NULL) {
		if (crypt_ok != NULL && !crypt_ok(h))
			return "crypt(3) hash this system's crypt cannot "
			    "verify (malformed, or disabled scheme)";
		*scheme = UL_CRYPT;
		return NULL;
	}
	if (h[0] == '$')
		return "unknown hash scheme refused";
	if (len == 13 || (len == 20 && h[0] == '_'))
		return "DES crypt hash refused: weak";
	return "plain-text password or unknown hash refused";
}

/* a x b, or UINT64_MAX when that does not fit. */
static uint64_t
ul_mul(uint64_t a, uint64_t b)
{
	return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* The m=, t=, p= of an Argon2id hash; false when it has none. */
static bool
ul_argon2id_costs(const char *h, unsigned long *m, unsigned long *t,
    unsigned long *p)
{
	const char	*s = h + strlen("$argon2id$v=19$");

	if (!ul_prefix(h, "$argon2id$v=19$"))
		return false;
	return ul_prefix(s, "m=") && (s += 2, ul_number(&s, ',', m)) &&
	    ul_prefix(s, "t=") && (s += 2, ul_number(&s, ',', t)) &&
	    ul_prefix(s, "p=") && (s += 2, ul_number(&s, '$', p));
}

/* yescrypt's variable-length number (libxcrypt's crypt-yescrypt
 * setting): the first character's place in the alphabet says how many
 * more follow, six bits each, and the value is offset by <min>. */
static bool
ul_y64(const char **sp, uint64_t min, uint64_t *out)
{
	static const char	 abc[] = "./0123456789"
				     "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "abcdefghijklmnopqrstuvwxyz";
	const char		*s = *sp, *at;
	uint64_t		 start = 0, end = 47, bits = 0, chars = 1, v, c;

	if (*s == '\0' || (at = strchr(abc, *s++)) == NULL)
		return false;
	c = (uint64_t)(at - abc);
	v = min;
	while (c > end) {
		v += (end + 1 - start) << bits;
		start = end + 1;
		end = start + (62 - end) / 2;
		chars++;
		bits += 6;
	}
	v += (c - start) << bits;
	while (--chars > 0) {
		if (*s == '\0' || (at = strchr(abc, *s++)) == NULL)
			return false;
		bits -= 6;
		v += (uint64_t)(at - abc) << bits;
	}
	*sp = s;
	*out = v;
	return true;
}

/* $y$ flavour N_log2 r [have [p] [t] [g] [NROM]] $salt$hash: N x r x p
 * with t's extra passes, or 0 when the setting cannot be read. */
static uint64_t
ul_yescrypt_cost(const char *h)
{
	const char	*s = h + 3;
	uint64_t	 flavour, nlog2, r, have, p = 1, t = 0, skip, w;

	if (!ul_y64(&s, 0, &flavour) || !ul_y64(&s, 1, &nlog2) ||
	    nlog2 > 63 || !ul_y64(&s, 1, &r))
		return 0;
	if (*s != '$') {
		if (!ul_y64(&s, 1, &have) ||
		    ((have & 1) && !ul_y64(&s, 2, &p)) ||
		    ((have & 2) && !ul_y64(&s, 1, &t)) ||
		    ((have & 4) && !ul_y64(&s, 1, &skip)) ||
		    ((have & 8) && !ul_y64(&s, 1, &skip)))
			return 0;
	}
	if (*s != '$')
		return 0;
	/* Time relative to t = 0's 4/3 N blocks, in eighths. */
	w = t == 0 ? 8 : t == 1 ? 9 : ul_mul(t, 6);
	return ul_mul(ul_mul(ul_mul((uint64_t)1 << nlog2, r), p), w) / 8;
}

uint64_t
ul_cost(const struct ul_entry *e)
{
	const char	*h = e->hash, *s;
	unsigned long	 m, t, p, rounds = 5000;
	uint64_t	 c;

	if (e->scheme == UL_ARGON2ID)
		return ul_argon2id_costs(h, &m, &t, &p) ?
		    ul_mul((uint64_t)t + 1, m) : 0;
	if (ul_prefix(h, "$2")) {
		/* $2b$NN$: 2^NN rounds of bcrypt's key setup. */
		c = 4;
		if (isdigit((unsigned char)h[4]) &&
		    isdigit((unsigned char)h[5]))
			c = (uint64_t)(h[4] - '0') * 10 +
			    (uint64_t)(h[5] - '0');
		c = c < 4 ? 4 : c > 56 ? 56 : c;
		return (uint64_t)1 << (c + 7);
	}
	if (ul_prefix(h, "$5$") || ul_prefix(h, "$6$")) {
		/* crypt(3) clamps rounds= to 1000..999999999. */
		s = h + 3;
		if (ul_prefix(s, "rounds=")) {
			for (s += 7, rounds = 0; isdigit((unsigned char)*s) &&
			    rounds <= 999999999; s++)
				rounds = rounds * 10 +
				    (unsigned long)(*s - '0');
			rounds = rounds < 1000 ? 1000 : rounds > 999999999 ?
			    999999999 : rounds;
		}
		return rounds / 2;
	}
	if (ul_prefix(h, "$y$"))
		return ul_yescrypt_cost(h);
	return 0;
}

bool
ul_costlier(const struct ul_entry *a, const struct ul_entry *b)
{
	if (a->cost != b->cost)
		return a->cost > b->cost;
	return a->lanes < b->lanes;
}

/* Every entry's cost; the costliest, and which rank below it. */
static void
ul_rank(struct userlist *ul)
{
	struct ul_entry	*e;
	unsigned long	 m, t, p;
	size_t		 i;

	ul->costliest = NULL;
	for (i = 0; i < ul->n; i++) {
		e = &ul->v[i];
		e->cost = ul_cost(e);
		e->lanes = 1;
		if (e->scheme == UL_ARGON2ID && ul_argon2id_costs(e->hash, &m,
		    &t, &p))
			e->lanes = (uint32_t)p;
		if (ul->costliest == NULL || ul_costlier(e, ul->costliest))
			ul->costliest = e;
	}
	for (i = 0; i < ul->n; i++)
		ul->v[i].cheaper = ul_costlier(ul->costliest, &ul->v[i]);
}

static int
ul_cmp(const void *a, const void *b)
{
	const struct ul_entry	*x = a, *y = b;
	size_t			 n = x->ulen < y->ulen ? x->ulen : y->ulen;
	int			 c = memcmp(x->user, y->user, n);

	if (c != 0)
		return c;
	return x->ulen < y->ulen ? -1 : x->ulen > y->ulen;
}

/* One non-comment line, NUL-terminated, trailing space cut. */
static const char *
ul_line(char *s, struct ul_entry *e, bool (*crypt_ok)(const char *))
{
	char	*colon = strchr(s, ':');
	size_t	 i;

	if (colon == NULL)
		return "not user:hash";
	if (colon == s)
		return "empty user name";
	*colon = '\0';
	e->user = s;
	e->ulen = (size_t)(colon - s);
	if (e->ulen > UL_USER_MAX)
		return "user name longer than 255 bytes";
	for (i = 0; i < e->ulen; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "control character in the user name";
	e->hash = colon + 1;
	for (i = 0; e->hash[i] != '\0'; i++)
		if (isspace((unsigned char)e->hash[i]))
			return "white space in the hash";
	return ul_hash_check(e->hash, &e->scheme, &e->mem_kib, crypt_ok);
}

int
ul_parse(struct userlist *ul, char *text, size_t len, const char *file,
    bool (*crypt_ok)(const char *), char *err, size_t errlen)
{
	struct ul_entry	*v = NULL, e;
	const char	*why;
	size_t		 n = 0, cap = 0, i;
	char		*s = text, *end = text + len, *nl, *t;
	unsigned	 line = 0;

	memset(ul, 0, sizeof(*ul));
	ul->text = text;
	while (s < end) {
		line++;
		if ((nl = memchr(s, '\n', (size_t)(end - s))) == NULL)
			nl = end;
		*nl = '\0';	/* text has one byte beyond len (ul_load) */
		if (memchr(s, '\0', (size_t)(nl - s)) != NULL) {
			snprintf(err, errlen, "%s:%u: NUL byte", file, line);
			goto fail;
		}
		for (t = nl; t > s && isspace((unsigned char)t[-1]); t--)
			;
		*t = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0' || *s == '#') {
			s = nl + 1;
			continue;
		}
		memset(&e, 0, sizeof(e));
		e.line = line;
		if ((why = ul_line(s, &e, crypt_ok)) != NULL) {
			snprintf(err, errlen, "%s:%u: %s", file, line, why);
			goto fail;
		}
		if (n == cap) {
			struct ul_entry	*nv;

			cap = cap ? 2 * cap : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL) {
				snprintf(err, errlen, "%s: out of memory",
				    file);
				goto fail;
			}
			v = nv;
		}
		v[n++] = e;
		s = nl + 1;
	}
	if (n > 0)
		qsort(v, n, sizeof(*v), ul_cmp);
	for (i = 1; i < n; i++)
		if (ul_cmp(&v[i - 1], &v[i]) == 0) {
			unsigned a = v[i - 1].line, b = v[i].line;

			snprintf(err, errlen, "%s:%u: duplicate user \"%.64s\" "
			    "(also on line %u)", file, a > b ? a : b,
			    v[i].user, a < b ? a : b);
			goto fail;
		}
	ul->v = v;
	ul->n = n;
	ul_rank(ul);
	return 0;
fail:
	free(v);
	ul->v = NULL;
	return -1;
}

int
ul_load(struct userlist *ul, const char *path, bool (*crypt_ok)(const char *),
    char *err, size_t errlen)
{
	struct stat	 st;
	char		*text;
	size_t		 got = 0;
	ssize_t		 r;
	int		 fd;

	memset(ul, 0, sizeof(*ul));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > UL_FILE_MAX) {
		snprintf(err, errlen, "%s: not a regular file of at most "
		    "256 MiB", path);
		close(fd);
		return -1;
	}
	if ((text = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size) {
		r = read(fd, text + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	text[got] = '\0';
	if (ul_parse(ul, text, got, path, crypt_ok, err, errlen) < 0) {
		ul_free(ul);
		return -1;
	}
	return 0;
}

const struct ul_entry *
ul_find(const struct userlist *ul, const char *user, size_t ulen)
{
	struct ul_entry	 key;

	if (ul->n == 0)
		return NULL;
	key.user = user;
	key.ulen = ulen;
	return bsearch(&key, ul->v, ul->n, sizeof(key), ul_cmp);
}

void
ul_free(struct userlist *ul)
{
	free(ul->v);
	free(ul->text);
	memset(ul, 0, sizeof(*ul));
}
