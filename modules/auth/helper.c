/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Squid basic-auth helpers as child processes of a worker: LDAP, PAM,
 * RADIUS or an htpasswd file through the programs Debian ships with Squid
 * (basic_ldap_auth, basic_pam_auth, basic_radius_auth, basic_ncsa_auth).
 *
 * The protocol (Squid's auth_param basic program): one line per request,
 * `user password\n`, each field escaped as Squid's rfc1738_escape() does;
 * one line per answer, `OK`, `ERR` or `BH` (broken helper), optionally
 * followed by a blank and text we ignore. With concurrency N > 0 each
 * request line starts with a channel ID (`3 user password\n`) and each
 * answer with the same ID (`3 OK`), so up to N requests are in flight per
 * process and answers may come in any order; the ID is the slot index.
 * basic_ncsa_auth speaks only the plain form (concurrency 0, Squid's
 * default): one request in flight per process.
 *
 * Every process has two pipes, non-blocking and close-on-exec on our side,
 * watched with pt_io on the worker's loop: nothing here blocks the worker.
 * Request lines go into a bounded per-process buffer, written at once or
 * when the pipe drains. A request not answered within the timeout fails
 * every request of its process with -ETIMEDOUT and the process is killed;
 * a process whose stdout reaches EOF (it exited) fails its requests with
 * -EPIPE. Either way the process is started again after a back-off that
 * doubles from 100 ms to 10 s and resets once it answers. Workers have no
 * SIGCHLD handler: exited processes are reaped with waitpid(WNOHANG) when
 * their pipe ends and from a timer until they are gone, and at stop.
 *
 * All tables (processes, slots) are allocated at start; no allocation per
 * request. It does not cache answers or count failures per address: the
 * auth module does that around it.
 */
#define _GNU_SOURCE
#include "helper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "portico/module.h"

extern char **environ;

#define AH_ARGS_MAX	32
#define AH_WBUF		(2 * AUTH_HELPER_LINE_MAX)
#define AH_RBUF		1024		/* longest answer line we accept */
#define AH_BACKOFF_MIN	100		/* ms */
#define AH_BACKOFF_MAX	10000
#define AH_REAP_MS	200		/* how often exited pids are polled */
#define AH_REAP_MAX	4		/* pids awaiting their reap, per child */
#define AH_KILL_AFTER	5		/* reap polls before SIGKILL */

struct ah_slot {
	auth_helper_done_fn	 done;	/* NULL once cancelled */
	void			*arg;
	uint64_t		 deadline;
	bool			 busy;	/* sent, not answered */
};

struct ah_zombie {
	pid_t		 pid;		/* 0: free */
	unsigned	 polls;
};

struct ah_child {
	struct auth_helpers	*h;
	unsigned		 idx;
	pid_t			 pid;		/* 0: not running */
	int			 wfd, rfd;	/* its stdin, its stdout */
	struct pt_io		 wio, rio;
	struct pt_timer		 timer;		/* timeout, or restart */
	unsigned		 backoff;	/* next restart delay, ms */
	unsigned		 inflight;
	struct ah_slot		*slots;
	size_t			 wlen, rlen;
	char			 wbuf[AH_WBUF];
	char			 rbuf[AH_RBUF];
	struct ah_zombie	 zombies[AH_REAP_MAX];
};

struct auth_helpers {
	char			*args;		/* the command, split in place */
	char			*argv[AH_ARGS_MAX + 1];
	unsigned		 nchildren;
	unsigned		 concurrency;	/* 0: plain protocol */
	unsigned		 nslots;	/* per child: max(1, concurrency) */
	unsigned		 timeout_ms;
	unsigned		 next;		/* round-robin start */
	bool			 stopping;
	struct pt_timer		 reaper;
	struct ah_child		*children;
	struct ah_slot		*slots;
};

static void	ah_child_start(struct ah_child *c);
static void	ah_child_fail(struct ah_child *c, int err, const char *why);

/* ---- pure functions --------------------------------------------------- */

static bool
ah_must_escape(unsigned char ch)
{
	if (ch <= 0x20 || ch >= 0x7f)
		return true;
	return strchr("%<>\"#{}|\\^~[]`'", ch) != NULL;
}

long
auth_helper_escape(char *dst, size_t cap, const char *src, size_t len)
{
	static const char	 hex[] = "0123456789ABCDEF";
	size_t			 i, n = 0;
	unsigned char		 ch;

	for (i = 0; i < len; i++) {
		ch = (unsigned char)src[i];
		if (!ah_must_escape(ch)) {
			if (n + 1 > cap)
				return -1;
			dst[n++] = (char)ch;
			continue;
		}
		if (n + 3 > cap)
			return -1;
		dst[n++] = '%';
		dst[n++] = hex[ch >> 4];
		dst[n++] = hex[ch & 15];
	}
	return (long)n;
}

int
auth_helper_reply_parse(const char *line, size_t len, bool with_id,
    unsigned *id, int *result)
{
	size_t		 i = 0, w;
	unsigned long	 v = 0;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (with_id) {
		if (len == 0 || line[0] < '0' || line[0] > '9')
			return -EPROTO;
		for (; i < len && line[i] >= '0' && line[i] <= '9'; i++) {
			v = v * 10 + (unsigned long)(line[i] - '0');
			if (v > UINT32_MAX)
				return -EPROTO;
		}
		if (i == len || (line[i] != ' ' && line[i] != '\t'))
			return -EPROTO;
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		*id = (unsigned)v;
	}
	for (w = i; w < len && line[w] != ' ' && line[w] != '\t'; w++)
		;
	if (w - i == 2 && memcmp(line + i, "OK", 2) == 0)
		*result = AUTH_HELPER_OK;
	else if (w - i == 3 && memcmp(line + i, "ERR", 3) == 0)
		*result = AUTH_HELPER_ERR;
	else if (w - i == 2 && memcmp(line + i, "BH", 2) == 0)
		*result = -EIO;
	else
		return -EPROTO;
	return 0;
}

/* ---- processes ---------------------------------------------------------- */

/* Polls the pids of exited or killed processes; SIGKILL to one that
 * lingers (a helper ignoring SIGTERM). Re-arms while any is left. */
static void
ah_reap(struct pt_timer *t, void *arg)
{
	struct auth_helpers	*h = arg;
	struct ah_zombie	*z;
	unsigned		 i, k;
	bool			 left = false;
	pid_t			 r;

	(void)t;
	for (i = 0; i < h->nchildren; i++)
		for (k = 0; k < AH_REAP_MAX; k++) {
			z = &h->children[i].zombies[k];
			if (z->pid == 0)
				continue;
			r = waitpid(z->pid, NULL, WNOHANG);
			if (r == z->pid || (r < 0 && errno == ECHILD)) {
				z->pid = 0;
				continue;
			}
			if (++z->polls == AH_KILL_AFTER)
				kill(z->pid, SIGKILL);
			left = true;
		}
	if (left && !h->stopping)
		pt_timer_start(&h->reaper, AH_REAP_MS, ah_reap, h);
}

/* The process of <c> is gone from our view: reap it now if it exited,
 * else keep its pid to poll. <sig> is sent first (0: none). */
static void
ah_child_bury(struct ah_child *c, int sig)
{
	struct auth_helpers	*h = c->h;
	unsigned		 k;
	pid_t			 pid = c->pid, r;

	c->pid = 0;
	if (pid <= 0)
		return;
	if (sig != 0)
		kill(pid, sig);
	r = waitpid(pid, NULL, WNOHANG);
	if (r == pid || (r < 0 && errno == ECHILD))
		return;
	for (k = 0; k < AH_REAP_MAX; k++)
		if (c->zombies[k].pid == 0)
			break;
	if (k == AH_REAP_MAX) {
		/* Four restarts within a second whose processes ignore
		 * SIGTERM: the oldest is killed hard and forgotten (its
		 * zombie is reaped by the next waitpid(-1) nobody does,
		 * or by init when the worker exits). */
		kill(c->zombies[0].pid, SIGKILL);
		waitpid(c->zombies[0].pid, NULL, WNOHANG);
		k = 0;
	}
	c->zombies[k].pid = pid;
	c->zombies[k].polls = 0;
	if (!h->stopping && h->reaper.heap_idx == 0)
		pt_timer_start(&h->reaper, AH_REAP_MS, ah_reap, h);
}

static void
ah_child_close(struct ah_child *c)
{
	pt_io_stop(&c->wio);
	pt_io_stop(&c->rio);
	if (c->wfd >= 0)
		close(c->wfd);
	if (c->rfd >= 0)
		close(c->rfd);
	c->wfd = c->rfd = -1;
	c->wlen = c->rlen = 0;
}

/* Every request in flight on <c> ends with <err>. The slot is freed
 * before done() runs, so done() may queue a new request. */
static void
ah_child_fail_all(struct ah_child *c, int err)
{
	struct ah_slot		*s;
	auth_helper_done_fn	 done;
	unsigned		 i;

	for (i = 0; i < c->h->nslots; i++) {
		s = &c->slots[i];
		if (!s->busy)
			continue;
		s->busy = false;
		c->inflight--;
		if ((done = s->done) != NULL) {
			s->done = NULL;
			done(s->arg, err);
		}
	}
}

static void
ah_on_restart(struct pt_timer *t, void *arg)
{
	(void)t;
	ah_child_start(arg);
}

static void
ah_child_schedule(struct ah_child *c)
{
	unsigned	 d = c->backoff;

	c->backoff = d == 0 ? AH_BACKOFF_MIN : d * 2 > AH_BACKOFF_MAX ?
	    AH_BACKOFF_MAX : d * 2;
	pt_timer_start(&c->timer, d, ah_on_restart, c);
}

/* <c>'s process is dead or useless: stop watching it, fail its requests,
 * kill it and start another later. */
static void
ah_child_fail(struct ah_child *c, int err, const char *why)
{
	struct auth_helpers	*h = c->h;

	pt_log(PT_LOG_ERR, "auth: helper %s child=%u pid=%ld %s, %u "
	    "request(s) failed; restart in %u ms", h->argv[0], c->idx,
	    (long)c->pid, why, c->inflight, c->backoff);
	pt_timer_stop(&c->timer);
	ah_child_close(c);
	/* Closing its stdin ends a well-behaved helper; a hung one gets
	 * SIGKILL (it may be stuck in a call that ignores SIGTERM). */
	ah_child_bury(c, err == -ETIMEDOUT ? SIGKILL : SIGTERM);
	ah_child_schedule(c);
	ah_child_fail_all(c, err);
}

static void
ah_arm_timeout(struct ah_child *c);

/* One answer line from <c>. */
static void
ah_child_line(struct ah_child *c, const char *line, size_t len)
{
	struct auth_helpers	*h = c->h;
	struct ah_slot		*s;
	auth_helper_done_fn	 done;
	unsigned		 id = 0;
	int			 result;

	if (auth_helper_reply_parse(line, len, h->concurrency > 0, &id,
	    &result) < 0 || id >= h->nslots || !c->slots[id].busy) {
		ah_child_fail(c, -EPROTO, "answered an unexpected line");
		return;
	}
	s = &c->slots[id];
	s->busy = false;
	c->inflight--;
	c->backoff = 0;		/* it works: the next restart is quick */
	if (result == -EIO)
		pt_log(PT_LOG_ERR, "auth: helper %s child=%u pid=%ld "
		    "answered BH (broken helper)", h->argv[0], c->idx,
		    (long)c->pid);
	ah_arm_timeout(c);
	if ((done = s->done) != NULL) {
		s->done = NULL;
		done(s->arg, result);
	}
}

static void
ah_on_read(struct pt_io *io, uint32_t events, void *arg)
{
	struct ah_child	*c = arg;
	ssize_t		 n;
	char		*nl;
	size_t		 off;
	pid_t		 pid;

	(void)io;
	(void)events;
	for (;;) {
		n = read(c->rfd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			ah_child_fail(c, -EPIPE, n == 0 ? "exited" :
			    "read error");
			return;
		}
		c->rlen += (size_t)n;
		off = 0;
		pid = c->pid;
		while ((nl = memchr(c->rbuf + off, '\n', c->rlen - off)) !=
		    NULL) {
			ah_child_line(c, c->rbuf + off,
			    (size_t)(nl - (c->rbuf + off)));
			/* done() or a failure may have restarted c. */
			if (c->pid != pid || c->rlen == 0)
				return;
			off = (size_t)(nl - c->rbuf) + 1;
		}
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
		if (c->rlen == sizeof(c->rbuf)) {
			ah_child_fail(c, -EPROTO, "answered a line too long");
			return;
		}
	}
}

/* Writes what <c>'s buffer holds; watches EPOLLOUT while some is left. */
static void
ah_child_flush(struct ah_child *c)
{
	ssize_t		 n;
	size_t		 off = 0;

	while (off < c->wlen) {
		n = write(c->wfd, c->wbuf + off, c->wlen - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			ah_child_fail(c, -EPIPE, "closed its input");
			return;
		}
		off += (size_t)n;
	}
	memmove(c->wbuf, c->wbuf + off, c->wlen - off);
	c->wlen -= off;
	pt_io_modify(&c->wio, c->wlen > 0 ? EPOLLOUT : 0);
}

static void
ah_on_write(struct pt_io *io, uint32_t events, void *arg)
{
	struct ah_child	*c = arg;

	(void)io;
	if (events & (EPOLLERR | EPOLLHUP)) {
		ah_child_fail(c, -EPIPE, "closed its input");
		return;
	}
	ah_child_flush(c);
}

static void
ah_on_timeout(struct pt_timer *t, void *arg)
{
	struct ah_child	*c = arg;
	char		 why[64];

	(void)t;
	snprintf(why, sizeof(why), "did not answer within %u ms",
	    c->h->timeout_ms);
	ah_child_fail(c, -ETIMEDOUT, why);
}

/* The timer follows the oldest request in flight on <c>. */
static void
ah_arm_timeout(struct ah_child *c)
{
	uint64_t	 first = UINT64_MAX, now = pt_now_ms();
	unsigned	 i;

	pt_timer_stop(&c->timer);
	if (c->inflight == 0)
		return;
	for (i = 0; i < c->h->nslots; i++)
		if (c->slots[i].busy && c->slots[i].deadline < first)
			first = c->slots[i].deadline;
	pt_timer_start(&c->timer, first > now ? first - now : 0,
	    ah_on_timeout, c);
}

/* A pipe whose end <ours> (0 read, 1 write) is non-blocking. The child's
 * end must stay blocking: O_NONBLOCK belongs to the open file, which the
 * child inherits, and helpers read stdin with plain blocking calls. */
static int
ah_pipe(int p[2], int ours)
{
	int	 fl;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if ((fl = fcntl(p[ours], F_GETFL)) < 0 ||
	    fcntl(p[ours], F_SETFL, fl | O_NONBLOCK) < 0) {
		fl = errno;
		close(p[0]);
		close(p[1]);
		p[0] = p[1] = -1;
		errno = fl;
		return -1;
	}
	return 0;
}

/* Starts <c>'s process; on failure logs and retries after the back-off. */
static void
ah_child_start(struct ah_child *c)
{
	struct auth_helpers		*h = c->h;
	posix_spawn_file_actions_t	 fa;
	posix_spawnattr_t		 at;
	sigset_t			 none, all;
	int				 in[2] = { -1, -1 }, out[2] = { -1, -1 };
	int				 rc;
	pid_t				 pid;

	if (ah_pipe(in, 1) < 0 || ah_pipe(out, 0) < 0) {
		rc = errno;
		goto fail;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	/* The child's stdin and stdout are the pipes; dup2 clears their
	 * close-on-exec, everything else of ours is closed. */
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	/* The worker blocks the signals it reads from a signalfd and
	 * ignores SIGPIPE: the helper starts with neither. */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
	    POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(&pid, h->argv[0], &fa, &at, h->argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0)
		goto fail;
	close(in[0]);
	close(out[1]);
	c->pid = pid;
	c->wfd = in[1];
	c->rfd = out[0];
	c->wlen = c->rlen = 0;
	memset(&c->wio, 0, sizeof(c->wio));
	memset(&c->rio, 0, sizeof(c->rio));
	if ((rc = -pt_io_start(&c->rio, c->rfd, EPOLLIN, ah_on_read, c)) !=
	    0 || (rc = -pt_io_start(&c->wio, c->wfd, 0, ah_on_write, c)) !=
	    0) {
		pt_log_err(PT_LOG_ERR, rc, "auth: helper %s child=%u: "
		    "pt_io_start", h->argv[0], c->idx);
		ah_child_close(c);
		ah_child_bury(c, SIGTERM);
		ah_child_schedule(c);
		return;
	}
	pt_log(PT_LOG_INFO, "auth: helper %s child=%u pid=%ld started",
	    h->argv[0], c->idx, (long)pid);
	return;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	pt_log_err(PT_LOG_ERR, rc, "auth: helper %s child=%u cannot start; "
	    "retry in %u ms", h->argv[0], c->idx, c->backoff);
	ah_child_schedule(c);
}

/* ---- the interface ------------------------------------------------------ */

static int
ah_split(struct auth_helpers *h, const char *command)
{
	char		*p;
	unsigned	 n = 0;

	if ((h->args = strdup(command)) == NULL)
		return -ENOMEM;
	for (p = h->args; *p != '\0';) {
		while (*p == ' ' || *p == '\t')
			*p++ = '\0';
		if (*p == '\0')
			break;
		if (n == AH_ARGS_MAX)
			return -EINVAL;
		h->argv[n++] = p;
		while (*p != '\0' && *p != ' ' && *p != '\t')
			p++;
	}
	h->argv[n] = NULL;
	return n > 0 ? 0 : -EINVAL;
}

struct auth_helpers *
auth_helpers_start(const char *command, unsigned children,
    unsigned concurrency, unsigned timeout_ms)
{
	struct auth_helpers	*h;
	struct ah_child		*c;
	unsigned		 i;
	int			 rc;

	if (command == NULL || children == 0 ||
	    children > AUTH_HELPER_CHILDREN_MAX ||
	    concurrency > AUTH_HELPER_CONCURRENCY_MAX || timeout_ms == 0) {
		errno = EINVAL;
		return NULL;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	if ((rc = ah_split(h, command)) < 0) {
		free(h->args);
		free(h);
		errno = -rc;
		return NULL;
	}
	h->nchildren = children;
	h->concurrency = concurrency;
	h->nslots = concurrency > 0 ? concurrency : 1;
	h->timeout_ms = timeout_ms;
	h->children = calloc(children, sizeof(*h->children));
	h->slots = calloc((size_t)children * h->nslots, sizeof(*h->slots));
	if (h->children == NULL || h->slots == NULL) {
		free(h->children);
		free(h->slots);
		free(h->args);
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < children; i++) {
		c = &h->children[i];
		c->h = h;
		c->idx = i;
		c->wfd = c->rfd = -1;
		c->slots = h->slots + (size_t)i * h->nslots;
		ah_child_start(c);
	}
	return h;
}

int
auth_helpers_verify(struct auth_helpers *h, const char *user, size_t ulen,
    const char *pass, size_t plen, auth_helper_done_fn done, void *arg)
{
	char		 line[AUTH_HELPER_LINE_MAX];
	struct ah_child	*c, *best = NULL;
	struct ah_slot	*s;
	unsigned	 i, slot;
	size_t		 n = 0;
	long		 e;
	bool		 running = false;

	if (ulen == 0 || memchr(user, '\0', ulen) || memchr(user, '\n', ulen)
	    || memchr(user, '\r', ulen) || (plen > 0 &&
	    (memchr(pass, '\0', plen) || memchr(pass, '\n', plen) ||
	    memchr(pass, '\r', plen))))
		return -EINVAL;
	/* The line first: its length decides which buffer has room. The
	 * ID is written once the slot is known; reserve its digits. */
	n = h->concurrency > 0 ? 4 : 0;
	if ((e = auth_helper_escape(line + n, sizeof(line) - n - 2, user,
	    ulen)) < 0)
		return -EINVAL;
	n += (size_t)e;
	line[n++] = ' ';
	if ((e = auth_helper_escape(line + n, sizeof(line) - n - 1, pass,
	    plen)) < 0)
		return -EINVAL;
	n += (size_t)e;
	line[n++] = '\n';

	for (i = 0; i < h->nchildren; i++) {
		c = &h->children[(h->next + i) % h->nchildren];
		if (c->pid == 0)
			continue;
		running = true;
		if (c->inflight < h->nslots && c->wlen + n <= sizeof(c->wbuf)
		    && (best == NULL || c->inflight < best->inflight))
			best = c;
	}
	if (best == NULL)
		return running ? -EAGAIN : -ENOTCONN;
	c = best;
	h->next = (c->idx + 1) % h->nchildren;
	for (slot = 0; c->slots[slot].busy; slot++)
		;
	s = &c->slots[slot];
	if (h->concurrency > 0) {
		/* Right-align the ID in the 4 reserved bytes: "  7 " is
		 * not valid, so shift the line instead. */
		char	 id[8];
		int	 k = snprintf(id, sizeof(id), "%u ", slot);

		memcpy(c->wbuf + c->wlen, id, (size_t)k);
		memcpy(c->wbuf + c->wlen + k, line + 4, n - 4);
		c->wlen += (size_t)k + n - 4;
	} else {
		memcpy(c->wbuf + c->wlen, line, n);
		c->wlen += n;
	}
	s->busy = true;
	s->done = done;
	s->arg = arg;
	s->deadline = pt_now_ms() + h->timeout_ms;
	if (c->inflight++ == 0)
		ah_arm_timeout(c);
	/* A write error fails this request too, from here: done() must not
	 * run before we return, so defer it to the loop via EPOLLOUT. */
	pt_io_modify(&c->wio, EPOLLOUT);
	return 0;
}

void
auth_helpers_cancel(struct auth_helpers *h, void *arg)
{
	unsigned	 i, n = h->nchildren * h->nslots;

	for (i = 0; i < n; i++)
		if (h->slots[i].busy && h->slots[i].arg == arg)
			h->slots[i].done = NULL;
}

unsigned
auth_helpers_running(const struct auth_helpers *h)
{
	unsigned	 i, n = 0;

	for (i = 0; i < h->nchildren; i++)
		n += h->children[i].pid != 0;
	return n;
}

void
auth_helpers_stop(struct auth_helpers *h)
{
	struct ah_child	*c;
	unsigned	 i, k, tries;
	bool		 left;

	if (h == NULL)
		return;
	h->stopping = true;
	pt_timer_stop(&h->reaper);
	for (i = 0; i < h->nchildren; i++) {
		c = &h->children[i];
		pt_timer_stop(&c->timer);
		ah_child_close(c);
		ah_child_bury(c, SIGTERM);
		ah_child_fail_all(c, -ECANCELED);
	}
	/* Their stdin is closed and they have SIGTERM: give them up to a
	 * second in total, then SIGKILL and a blocking reap (exit path). */
	for (tries = 0; tries < 100; tries++) {
		left = false;
		for (i = 0; i < h->nchildren; i++)
			for (k = 0; k < AH_REAP_MAX; k++) {
				pid_t	 p = h->children[i].zombies[k].pid;
				pid_t	 r;

				if (p == 0)
					continue;
				r = waitpid(p, NULL, WNOHANG);
				if (r == p || (r < 0 && errno == ECHILD))
					h->children[i].zombies[k].pid = 0;
				else
					left = true;
			}
		if (!left)
			break;
		usleep(10000);
	}
	for (i = 0; i < h->nchildren; i++)
		for (k = 0; k < AH_REAP_MAX; k++) {
			pid_t	 p = h->children[i].zombies[k].pid;

			if (p != 0) {
				kill(p, SIGKILL);
				waitpid(p, NULL, 0);
			}
		}
	free(h->children);
	free(h->slots);
	free(h->args);
	free(h);
}
