/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * portico-passwd: adds, updates or deletes one user in an auth userlist
 * (one "user:HASH" line per user, comments and blank lines allowed; see
 * portico-passwd(1)). New hashes are Argon2id PHC strings made with
 * libargon2 and a 16-byte salt from getrandom().
 *
 * The file is never edited in place: the new content goes to a temporary
 * file in the same directory, which gets the old file's mode and owner,
 * is fsync()ed and renamed over the old name, so portico (which re-reads
 * the list on SIGHUP) sees either the old list or the new one, never half
 * of one. Every line that is not the named user's is copied byte for byte.
 * Two portico-passwd runs on one file are serialised with flock() on the
 * file; since the rename replaces the inode, a run that waited re-checks
 * that the name still leads to the inode it locked.
 *
 * Adding a user to a file that does not exist creates it (mode 0640), as
 * DESIGN.md's `portico-passwd [--stdin] FILE USER` promises; -c is kept
 * for htpasswd habits and changes nothing. A missing directory is still
 * an error, found before the password is asked.
 *
 * What it deliberately does not do: parse or judge other users' hashes
 * (the auth module does that at load), truncate an existing file on -c
 * (htpasswd -c does), copy extended attributes or ACLs.
 */
#include "config.h"

#include <argon2.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

/* Defaults: OWASP's Argon2id row m=19 MiB, t=2, p=1 (see the man page for
 * why not RFC 9106's 64 MiB ones: the verification cost per login). */
#define PASSWD_M_DEFAULT	19456u	/* KiB */
#define PASSWD_T_DEFAULT	2u
#define PASSWD_P_DEFAULT	1u
#define PASSWD_SALT_LEN		16
#define PASSWD_HASH_LEN		32
/* RFC 1929 carries at most 255 bytes of user name. */
#define PASSWD_USER_MAX		255
#define PASSWD_PW_MAX		4096
/* A userlist is small; this bounds what is read into memory. */
#define PASSWD_FILE_MAX		(64L * 1024 * 1024)
/* Attempts to lock a file that keeps being replaced under us. */
#define PASSWD_LOCK_TRIES	50

struct passwd_opts {
	bool		 create;
	bool		 delete;
	bool		 from_stdin;
	uint32_t	 m_kib;
	uint32_t	 t_cost;
	uint32_t	 p_lanes;
	const char	*file;
	const char	*user;
};

/* The whole file, and the growing replacement. */
struct passwd_buf {
	char		*b_data;
	size_t		 b_len;
	size_t		 b_cap;
};

static const char *passwd_prog = "portico-passwd";

/* The terminal state to put back, from a signal handler too. */
static int		passwd_tty_fd = -1;
static struct termios	passwd_tty_saved;

static void passwd_err(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void
passwd_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", passwd_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
passwd_usage(FILE *f)
{
	fprintf(f,
	    "usage: %s [-c] [--stdin] [-m KiB] [-t N] [-p N] FILE USER\n"
	    "       %s -D FILE USER\n"
	    "  -c, --create     accepted for htpasswd habits: a missing FILE is\n"
	    "                   always created (mode 0640)\n"
	    "  -D, --delete     delete USER from FILE\n"
	    "  -i, --stdin      read the password from one line of stdin\n"
	    "  -m, --memory KiB Argon2id memory cost (default %u)\n"
	    "  -t, --time N     Argon2id passes (default %u)\n"
	    "  -p, --lanes N    Argon2id parallelism (default %u)\n"
	    "  -h, --help       this text;  -V, --version  the version\n",
	    passwd_prog, passwd_prog, PASSWD_M_DEFAULT, PASSWD_T_DEFAULT,
	    PASSWD_P_DEFAULT);
}

static int
passwd_parse_u32(const char *s, const char *what, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v == 0 ||
	    v > UINT32_MAX) {
		passwd_err("%s: \"%s\" is not a whole number from 1 to %lu",
		    what, s, (unsigned long)UINT32_MAX);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/*
 * A user name the userlist parser takes: 1 to 255 bytes, no ':' (it ends
 * the name), no space or control byte (Basic and RFC 1929 carry them, but
 * a list holding them is unreadable and a trap), not starting with '#'
 * (a comment). Bytes >= 0x80 (UTF-8) are allowed.
 */
static bool
passwd_user_is_valid(const char *user, const char **errstr)
{
	size_t n = strlen(user), i;

	if (n == 0) {
		*errstr = "is empty";
		return false;
	}
	if (n > PASSWD_USER_MAX) {
		*errstr = "is longer than 255 bytes (SOCKS5 cannot carry it)";
		return false;
	}
	if (user[0] == '#') {
		*errstr = "starts with '#' (the line would be a comment)";
		return false;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)user[i];

		if (c == ':') {
			*errstr = "contains ':'";
			return false;
		}
		if (c == ' ') {
			*errstr = "contains a space";
			return false;
		}
		if (c < 0x20 || c == 0x7f) {
			*errstr = "contains a control byte";
			return false;
		}
	}
	return true;
}

/* ---- reading the password ------------------------------------------ */

static void
passwd_tty_restore(void)
{
	if (passwd_tty_fd >= 0)
		tcsetattr(passwd_tty_fd, TCSAFLUSH, &passwd_tty_saved);
}

/* Interrupted at the prompt: give the terminal its echo back, then die of
 * the same signal so the caller sees why. */
static void
passwd_on_signal(int sig)
{
	passwd_tty_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * Reads one line from fd into pw (at most PASSWD_PW_MAX bytes, without its
 * "\n" or "\r\n"). Byte by byte, so nothing after the line is consumed.
 * Returns its length, or -1 with a message.
 */
static ssize_t
passwd_read_line(int fd, char *pw, const char *from)
{
	size_t n = 0;
	bool nl = false;

	for (;;) {
		char c;
		ssize_t r = read(fd, &c, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			passwd_err("reading the password from %s: %s", from,
			    strerror(errno));
			return -1;
		}
		if (r == 0)
			break;
		if (c == '\n') {
			nl = true;
			break;
		}
		if (n == PASSWD_PW_MAX) {
			passwd_err("the password is longer than %d bytes",
			    PASSWD_PW_MAX);
			return -1;
		}
		pw[n++] = c;
	}
	if (n == 0 && !nl) {
		passwd_err("no password on %s", from);
		return -1;
	}
	if (n > 0 && pw[n - 1] == '\r')
		n--;
	if (memchr(pw, '\0', n) != NULL) {
		passwd_err("the password contains a NUL byte");
		return -1;
	}
	return (ssize_t)n;
}

static ssize_t
passwd_prompt(int fd, const char *prompt, char *pw)
{
	ssize_t w = write(fd, prompt, strlen(prompt));

	(void)w;
	return passwd_read_line(fd, pw, "the terminal");
}

/* Asks twice on /dev/tty with echo off; both answers must match. */
static ssize_t
passwd_read_tty(const char *user, char *pw)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	char again[PASSWD_PW_MAX];
	char prompt[PASSWD_USER_MAX + 64];
	struct termios t;
	struct sigaction sa;
	ssize_t n, n2 = -1;
	size_t i;
	int fd;

	fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		passwd_err("no terminal to ask for the password (%s): "
		    "use --stdin", strerror(errno));
		return -1;
	}
	if (tcgetattr(fd, &passwd_tty_saved) < 0) {
		passwd_err("/dev/tty: %s", strerror(errno));
		close(fd);
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = passwd_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	passwd_tty_fd = fd;
	t = passwd_tty_saved;
	t.c_lflag &= ~(tcflag_t)ECHO;
	t.c_lflag |= ECHONL;	/* the Enter still shows, the password not */
	if (tcsetattr(fd, TCSAFLUSH, &t) < 0) {
		passwd_err("/dev/tty: cannot turn echo off: %s",
		    strerror(errno));
		passwd_tty_fd = -1;
		close(fd);
		return -1;
	}
	snprintf(prompt, sizeof(prompt), "Password for %s: ", user);
	n = passwd_prompt(fd, prompt, pw);
	if (n == 0)
		passwd_err("empty passwords are refused");
	else if (n > 0) {
		snprintf(prompt, sizeof(prompt), "Retype password for %s: ",
		    user);
		n2 = passwd_prompt(fd, prompt, again);
		if (n2 >= 0 && (n2 != n || memcmp(pw, again, (size_t)n))) {
			passwd_err("the passwords do not match");
			n2 = -1;
		}
	}
	explicit_bzero(again, sizeof(again));
	passwd_tty_restore();
	passwd_tty_fd = -1;
	close(fd);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	return n > 0 && n2 >= 0 ? n : -1;
}

static ssize_t
passwd_read_stdin(char *pw)
{
	ssize_t n = passwd_read_line(STDIN_FILENO, pw, "stdin");

	if (n == 0) {
		passwd_err("empty passwords are refused");
		return -1;
	}
	return n;
}

/* ---- hashing -------------------------------------------------------- */

static int
passwd_salt(unsigned char *salt, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = getrandom(salt + got, len - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			passwd_err("getrandom: %s", strerror(errno));
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* Returns the PHC string (malloc'ed) for pw, or NULL with a message. */
static char *
passwd_hash(const struct passwd_opts *o, const char *pw, size_t len)
{
	unsigned char salt[PASSWD_SALT_LEN];
	size_t enclen;
	char *enc;
	int rc;

	if (passwd_salt(salt, sizeof(salt)) < 0)
		return NULL;
	enclen = argon2_encodedlen(o->t_cost, o->m_kib, o->p_lanes,
	    PASSWD_SALT_LEN, PASSWD_HASH_LEN, Argon2_id);
	enc = malloc(enclen);
	if (enc == NULL) {
		passwd_err("out of memory");
		return NULL;
	}
	rc = argon2id_hash_encoded(o->t_cost, o->m_kib, o->p_lanes, pw, len,
	    salt, sizeof(salt), PASSWD_HASH_LEN, enc, enclen);
	if (rc != ARGON2_OK) {
		passwd_err("argon2id (m=%u KiB, t=%u, p=%u): %s", o->m_kib,
		    o->t_cost, o->p_lanes, argon2_error_message(rc));
		free(enc);
		return NULL;
	}
	return enc;
}

/* ---- the file ------------------------------------------------------- */

static int
passwd_buf_add(struct passwd_buf *b, const char *p, size_t n)
{
	if (b->b_len + n > b->b_cap) {
		size_t cap = b->b_cap ? b->b_cap : 4096;
		char *d;

		while (cap < b->b_len + n)
			cap *= 2;
		d = realloc(b->b_data, cap);
		if (d == NULL) {
			passwd_err("out of memory");
			return -ENOMEM;
		}
		b->b_data = d;
		b->b_cap = cap;
	}
	memcpy(b->b_data + b->b_len, p, n);
	b->b_len += n;
	return 0;
}

/*
 * Opens and locks the file <path> names now (creating it, mode 0640, when
 * <create> and it is missing). Returns the fd, its stat in st_out, or -1.
 */
static int
passwd_open_locked(const char *path, bool create, struct stat *st_out)
{
	struct stat now;
	int tries, fd;

	for (tries = 0; tries < PASSWD_LOCK_TRIES; tries++) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 && errno == ENOENT && create) {
			fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC
			    | O_NOFOLLOW, 0640);
			if (fd < 0 && errno == EEXIST)
				continue;	/* made meanwhile: take it */
			/* 0640 whatever the umask: the man page says so. */
			if (fd >= 0 && fchmod(fd, 0640) < 0) {
				passwd_err("%s: %s", path, strerror(errno));
				close(fd);
				return -1;
			}
		}
		if (fd < 0) {
			passwd_err("%s: %s", path, strerror(errno));
			return -1;
		}
		if (flock(fd, LOCK_EX) < 0) {
			passwd_err("%s: lock: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		if (fstat(fd, st_out) < 0) {
			passwd_err("%s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		if (!S_ISREG(st_out->st_mode)) {
			passwd_err("%s: not a regular file", path);
			close(fd);
			return -1;
		}
		/* Still the file the name leads to, not one a concurrent
		 * run has just renamed a new one over? */
		if (stat(path, &now) == 0 && now.st_dev == st_out->st_dev &&
		    now.st_ino == st_out->st_ino)
			return fd;
		close(fd);
	}
	passwd_err("%s: replaced %d times while waiting for its lock",
	    path, PASSWD_LOCK_TRIES);
	return -1;
}

static int
passwd_read_all(int fd, const char *path, off_t size, struct passwd_buf *b)
{
	if (size > PASSWD_FILE_MAX) {
		passwd_err("%s: larger than %ld bytes", path, PASSWD_FILE_MAX);
		return -1;
	}
	for (;;) {
		char chunk[65536];
		ssize_t r = read(fd, chunk, sizeof(chunk));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			passwd_err("%s: %s", path, strerror(errno));
			return -1;
		}
		if (r == 0)
			return 0;
		if (b->b_len + (size_t)r > (size_t)PASSWD_FILE_MAX) {
			passwd_err("%s: larger than %ld bytes", path,
			    PASSWD_FILE_MAX);
			return -1;
		}
		if (passwd_buf_add(b, chunk, (size_t)r) < 0)
			return -1;
	}
}

/* Blank (only spaces, tabs, a CR) or a comment ('#' after those). */
static bool
passwd_line_is_inert(const char *l, size_t n)
{
	size_t i = 0;

	while (i < n && (l[i] == ' ' || l[i] == '\t' || l[i] == '\r'))
		i++;
	return i == n || l[i] == '#';
}

/*
 * Builds the new content in <out> from <in>: the user's first line
 * replaced by <entry> (or removed when entry is NULL), later lines of the
 * same user removed, every other byte kept; <entry> appended when the user
 * had no line. Returns how many lines of the user there were, or -1.
 */
static int
passwd_rewrite(const char *path, const struct passwd_buf *in,
    const char *user, const char *entry, struct passwd_buf *out)
{
	size_t ulen = strlen(user), pos = 0, lineno = 0;
	int found = 0;

	while (pos < in->b_len) {
		const char *l = in->b_data + pos;
		const char *nl = memchr(l, '\n', in->b_len - pos);
		size_t n = nl ? (size_t)(nl - l) : in->b_len - pos;
		size_t whole = nl ? n + 1 : n;
		const char *colon;

		pos += whole;
		lineno++;
		colon = memchr(l, ':', n);
		if (passwd_line_is_inert(l, n) || colon == NULL ||
		    (size_t)(colon - l) != ulen || memcmp(l, user, ulen)) {
			if (!passwd_line_is_inert(l, n) && colon == NULL)
				passwd_err("warning: %s:%zu: not a user:HASH "
				    "line (kept as it is; portico will refuse "
				    "the file)", path, lineno);
			if (passwd_buf_add(out, l, whole) < 0)
				return -1;
			continue;
		}
		if (found++ > 0) {
			passwd_err("warning: %s:%zu: second line for user %s "
			    "removed", path, lineno, user);
			continue;
		}
		if (entry == NULL)
			continue;
		if (passwd_buf_add(out, entry, strlen(entry)) < 0 ||
		    (nl && passwd_buf_add(out, "\n", 1) < 0))
			return -1;
	}
	if (found == 0 && entry != NULL) {
		/* A last line without its newline gets one, else the new
		 * entry would be glued to it. */
		if (out->b_len > 0 && out->b_data[out->b_len - 1] != '\n' &&
		    passwd_buf_add(out, "\n", 1) < 0)
			return -1;
		if (passwd_buf_add(out, entry, strlen(entry)) < 0 ||
		    passwd_buf_add(out, "\n", 1) < 0)
			return -1;
	}
	return found;
}

static int
passwd_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The directory of <path> ("." or "/" included), cut to <size>. */
static void
passwd_dir_of(const char *path, char *dir, size_t size)
{
	const char	*slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, size, ".");
	else if (slash == path)
		snprintf(dir, size, "/");
	else
		snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

/*
 * Writes <b> to a temporary file beside <path> with the mode and owner in
 * <st>, syncs it and renames it over <path>, then syncs the directory so
 * the rename itself survives a crash. On failure <path> is untouched.
 */
static int
passwd_replace(const char *path, const struct stat *st,
    const struct passwd_buf *b)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char tmp[PATH_MAX], dir[PATH_MAX];
	int fd, dfd;

	passwd_dir_of(path, dir, sizeof(dir));
	/* Same directory, so the rename stays on one file system. */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX",
	    strcmp(dir, "/") ? dir : "", base) >= sizeof(tmp)) {
		passwd_err("%s: path too long", path);
		return -1;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		passwd_err("%s: cannot create a temporary file: %s", dir,
		    strerror(errno));
		return -1;
	}
	if (passwd_write_all(fd, b->b_data, b->b_len) < 0) {
		passwd_err("%s: %s", tmp, strerror(errno));
		goto fail;
	}
	if ((st->st_uid != geteuid() || st->st_gid != getegid()) &&
	    fchown(fd, st->st_uid, st->st_gid) < 0) {
		passwd_err("%s: cannot keep its owner %lu:%lu (%s): "
		    "left unchanged", path, (unsigned long)st->st_uid,
		    (unsigned long)st->st_gid, strerror(errno));
		goto fail;
	}
	/* After fchown, which may clear set-id bits. */
	if (fchmod(fd, st->st_mode & 07777) < 0) {
		passwd_err("%s: %s", tmp, strerror(errno));
		goto fail;
	}
	if (fsync(fd) < 0) {
		passwd_err("%s: fsync: %s", tmp, strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		passwd_err("%s: %s", tmp, strerror(errno));
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		passwd_err("%s: rename: %s", path, strerror(errno));
		goto fail;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) < 0)
			passwd_err("warning: %s: fsync: %s", dir,
			    strerror(errno));
		close(dfd);
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}

/* Resolves symbolic links, so a linked userlist stays linked and its
 * target is what gets replaced. A missing file keeps its name. */
static const char *
passwd_resolve(const char *file, char *buf)
{
	if (realpath(file, buf) != NULL)
		return buf;
	return file;
}

static int
passwd_update(const struct passwd_opts *o, const char *entry)
{
	char real[PATH_MAX];
	struct passwd_buf in = { 0 }, out = { 0 };
	const char *path = passwd_resolve(o->file, real);
	struct stat st;
	int fd, found, rc = -1;

	fd = passwd_open_locked(path, o->create, &st);
	if (fd < 0)
		return -1;
	if (passwd_read_all(fd, path, st.st_size, &in) < 0)
		goto done;
	found = passwd_rewrite(o->file, &in, o->user, entry, &out);
	if (found < 0)
		goto done;
	if (found == 0 && entry == NULL) {
		passwd_err("%s: no user %s", o->file, o->user);
		goto done;
	}
	if (passwd_replace(path, &st, &out) < 0)
		goto done;
	fprintf(stderr, "%s: %s user %s %s %s\n", passwd_prog,
	    entry == NULL ? "deleted" : found ? "updated" : "added",
	    o->user, entry == NULL ? "from" : found ? "in" : "to", o->file);
	rc = 0;
done:
	/* Closing drops the lock, after the rename: a waiting run then
	 * finds the name on a new inode and starts over on it. */
	close(fd);
	free(in.b_data);
	free(out.b_data);
	return rc;
}

/* ---- main ----------------------------------------------------------- */

static int
passwd_parse_args(int argc, char **argv, struct passwd_opts *o)
{
	static const struct option longs[] = {
		{ "create",  no_argument,       NULL, 'c' },
		{ "delete",  no_argument,       NULL, 'D' },
		{ "stdin",   no_argument,       NULL, 'i' },
		{ "memory",  required_argument, NULL, 'm' },
		{ "time",    required_argument, NULL, 't' },
		{ "lanes",   required_argument, NULL, 'p' },
		{ "help",    no_argument,       NULL, 'h' },
		{ "version", no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "cDim:t:p:hV", longs, NULL)) != -1)
		switch (c) {
		case 'c': o->create = true; break;
		case 'D': o->delete = true; break;
		case 'i': o->from_stdin = true; break;
		case 'm':
			if (passwd_parse_u32(optarg, "-m", &o->m_kib) < 0)
				return -1;
			break;
		case 't':
			if (passwd_parse_u32(optarg, "-t", &o->t_cost) < 0)
				return -1;
			break;
		case 'p':
			if (passwd_parse_u32(optarg, "-p", &o->p_lanes) < 0)
				return -1;
			break;
		case 'h':
			passwd_usage(stdout);
			exit(0);
		case 'V':
			printf("portico-passwd %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			passwd_usage(stderr);
			return -1;
		}
	if (argc - optind != 2) {
		passwd_usage(stderr);
		return -1;
	}
	if (o->delete && o->create) {
		passwd_err("-D and -c together make no sense");
		return -1;
	}
	o->create = !o->delete;
	o->file = argv[optind];
	o->user = argv[optind + 1];
	return 0;
}

/* Whether the directory <path> would be created in exists (errno set
 * when not). */
static bool
passwd_dir_exists(const char *path)
{
	char		 dir[PATH_MAX];
	struct stat	 st;

	passwd_dir_of(path, dir, sizeof(dir));
	if (stat(dir, &st) < 0)
		return false;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return false;
	}
	return true;
}

int
main(int argc, char **argv)
{
	struct passwd_opts o = {
		.m_kib = PASSWD_M_DEFAULT,
		.t_cost = PASSWD_T_DEFAULT,
		.p_lanes = PASSWD_P_DEFAULT,
	};
	char pw[PASSWD_PW_MAX];
	const char *why;
	char *hash = NULL, *entry = NULL;
	ssize_t n;
	int rc;

	if (passwd_parse_args(argc, argv, &o) < 0)
		return 1;
	if (!passwd_user_is_valid(o.user, &why)) {
		passwd_err("user name %s", why);
		return 1;
	}
	/* Before asking for a password that could not be stored; the real
	 * check is passwd_open_locked(), under the lock. */
	if (access(o.file, F_OK) < 0 &&
	    (!o.create || errno != ENOENT || !passwd_dir_exists(o.file))) {
		passwd_err("%s: %s", o.file, strerror(errno));
		return 1;
	}
	if (!o.delete) {
		n = o.from_stdin ? passwd_read_stdin(pw)
		    : passwd_read_tty(o.user, pw);
		if (n < 0)
			return 1;
		if (n > 255)
			passwd_err("warning: a password over 255 bytes cannot "
			    "log in over SOCKS5 (RFC 1929)");
		hash = passwd_hash(&o, pw, (size_t)n);
		explicit_bzero(pw, sizeof(pw));
		if (hash == NULL)
			return 1;
		entry = malloc(strlen(o.user) + 1 + strlen(hash) + 1);
		if (entry == NULL) {
			passwd_err("out of memory");
			free(hash);
			return 1;
		}
		sprintf(entry, "%s:%s", o.user, hash);
	}
	rc = passwd_update(&o, entry);
	free(entry);
	free(hash);
	return rc < 0 ? 1 : 0;
}
