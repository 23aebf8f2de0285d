/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A log's buffer in one worker, and the non-blocking writes that empty
 * it. Records are appended whole; the buffer is written when it is half
 * full, when its short timer fires (flush ms after the first record),
 * at drain, at reopen and at exit.
 *
 * Each write holds whole lines only: a regular file gets the buffer in
 * one write() on an O_APPEND descriptor (the kernel appends it as one
 * piece, so workers sharing the file never interleave inside a line); a
 * pipe or FIFO gets pieces of at most PIPE_BUF bytes cut at line ends,
 * which the kernel writes whole or not at all; syslog gets one datagram
 * per record (sendmmsg, a batch at a time).
 *
 * When the sink cannot take more (EAGAIN, a full disk, no syslog
 * daemon), records stay in the buffer; when the buffer is full, new
 * records are dropped and counted, and the count becomes a record of its
 * own as soon as there is room again. A blocked pipe or socket is
 * watched for EPOLLOUT instead of being retried per record, so a stuck
 * reader costs the worker nothing per request.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "modules/accesslog/accesslog.h"

#define AL_BATCH	64		/* datagrams per sendmmsg */

static void	al_sink_on_timer(struct pt_timer *t, void *arg);

static const char *
al_sink_name(const struct al_sink *s)
{
	return s->lc->kind == AL_STDOUT ? "stdout" : s->lc->path;
}

uint64_t
al_wall_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
al_syslog_connect(const char *path)
{
	struct sockaddr_un	 sun;
	int			 fd, err;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

void
al_sink_set_fd(struct al_sink *s, int fd)
{
	struct stat	 st;

	s->fd = fd;
	s->stream = fd >= 0 && s->lc->kind != AL_SYSLOG &&
	    fstat(fd, &st) == 0 && !S_ISREG(st.st_mode);
}

int
al_sink_init(struct al_sink *s, const struct al_conf *ac,
    const struct al_log_conf *lc, int worker)
{
	int	 fd;

	memset(s, 0, sizeof(*s));
	s->lc = lc;
	s->ac = ac;
	s->worker = worker;
	s->fd = -1;
	s->cap = lc->buffer;
	s->write_at = s->cap / 2 < AL_WRITE_AT ? s->cap / 2 : AL_WRITE_AT;
	s->pid = getpid();
	s->hdr_sec = -1;
	if (gethostname(s->host, sizeof(s->host) - 1) < 0 ||
	    s->host[0] == '\0')
		strcpy(s->host, "-");
	if ((s->buf = malloc(s->cap)) == NULL)
		return -ENOMEM;
	if (lc->kind != AL_SYSLOG) {
		al_sink_set_fd(s, lc->fd);
		return 0;
	}
	if (lc->thread)
		return 0;	/* the writer thread connects */
	/* No daemon yet is not fatal: records wait in the buffer (then
	 * are dropped and counted) and each flush tries again. */
	if ((fd = al_syslog_connect(lc->path)) < 0) {
		pt_log_err(PT_LOG_WARNING, -fd, "accesslog: syslog %s",
		    lc->path);
		s->failing = true;
	}
	al_sink_set_fd(s, fd);
	return 0;
}

size_t
al_count_lines(const char *buf, size_t len)
{
	size_t		 n = 0;
	const char	*p = buf, *end = buf + len;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		n++;
		p++;
	}
	return n;
}

uint64_t
al_count_records(const char *buf, size_t from, size_t to, const size_t *notes,
    unsigned nnotes)
{
	uint64_t	 n = al_count_lines(buf + from, to - from);
	unsigned	 i;

	for (i = 0; i < nnotes; i++)
		if (notes[i] > from && notes[i] <= to && n > 0)
			n--;
	return n;
}

bool
al_is_note_end(const size_t *notes, unsigned nnotes, size_t end)
{
	unsigned	 i;

	for (i = 0; i < nnotes; i++)
		if (notes[i] == end)
			return true;
	return false;
}

/* The first <w> bytes of buf were written (or dropped): the notes after
 * them move to the front with the bytes. */
static void
al_sink_shift_notes(struct al_sink *s, size_t w)
{
	unsigned	 i, j;

	for (i = 0, j = 0; i < s->nnotes; i++)
		if (s->notes[i] > w)
			s->notes[j++] = s->notes[i] - w;
	s->nnotes = j;
}

static void
al_sink_io_stop(struct al_sink *s)
{
	if (s->io_on) {
		pt_io_stop(&s->io);
		s->io_on = false;
	}
}

void
al_sink_fini(struct al_sink *s)
{
	uint64_t	 until, now, ms;
	struct pollfd	 pfd;
	bool		 waiting;

	if (s->buf == NULL)
		return;
	al_sink_io_stop(s);
	if (s->timer_on)
		pt_timer_stop(&s->timer);
	s->timer_on = false;
	if (s->lc->thread) {
		/* al_writer_stop wrote what it could. */
		goto release;
	}
	/* The worker is leaving: a slow reader gets a short grace, so
	 * that a graceful stop loses nothing a live reader would take. A
	 * log that fails (a reader gone: EPIPE, a full disk) is tried again
	 * every flush ms, as the writer thread does: poll() says such a
	 * descriptor is ready at once, and retrying it at once would spin
	 * and count an error each time for the whole grace. */
	until = al_wall_ms() + AL_EXIT_WAIT_MS;
	for (;;) {
		al_sink_note_dropped(s);
		al_sink_flush(s);
		waiting = s->io_on;	/* EAGAIN: a slow reader */
		al_sink_io_stop(s);
		now = al_wall_ms();
		if ((s->len == 0 && s->dropped == 0) || now >= until)
			break;
		pfd.fd = s->fd;
		pfd.events = POLLOUT;
		ms = waiting ? 20 : s->lc->flush_ms;
		if (ms > until - now)
			ms = until - now;
		if (poll(&pfd, waiting ? 1 : 0, (int)ms) < 0 && errno != EINTR)
			break;
	}
release:
	/* al_sink_flush may have armed the timer again. */
	if (s->timer_on)
		pt_timer_stop(&s->timer);
	s->timer_on = false;
	/* What a dead reader never took is lost: counted, one a record
	 * (a dropped-count line left is no record: its records were
	 * counted when they were dropped). */
	if (s->len > 0)
		pt_counter_add(s->ac->ctr_dropped, (int64_t)al_count_records(
		    s->buf, 0, s->len, s->notes, s->nnotes));
	if (s->lc->kind == AL_SYSLOG && s->fd >= 0)
		close(s->fd);
	free(s->buf);
	s->buf = NULL;
}

static void
al_sink_on_io(struct pt_io *io, uint32_t events, void *arg)
{
	struct al_sink	*s = arg;

	(void)io;
	(void)events;
	al_sink_io_stop(s);
	al_sink_flush(s);
}

/* Blocked by a full pipe or socket: wait for room, not for a record. */
static void
al_sink_wait(struct al_sink *s)
{
	int	 rc;

	if (s->io_on)
		return;
	memset(&s->io, 0, sizeof(s->io));
	if ((rc = pt_io_start(&s->io, s->fd, EPOLLOUT, al_sink_on_io, s)) < 0) {
		/* Not pollable (cannot happen for a pipe or a socket):
		 * the timer retries. */
		pt_log_err(PT_LOG_WARNING, -rc, "accesslog: watch %s",
		    al_sink_name(s));
		return;
	}
	s->io_on = true;
}

void
al_sink_arm(struct al_sink *s)
{
	if (!s->timer_on && !s->io_on) {
		s->timer_on = true;
		pt_timer_start(&s->timer, s->lc->flush_ms, al_sink_on_timer, s);
	}
}

static void
al_sink_error(struct al_sink *s, int err)
{
	if (!s->failing)
		pt_log_err(PT_LOG_ERR, err, "accesslog: write %s (records are "
		    "kept, then dropped and counted, until it works again)",
		    al_sink_name(s));
	s->failing = true;
	pt_counter_add(s->ac->ctr_errors, 1);
}

static void
al_sink_recovered(struct al_sink *s)
{
	if (s->failing) {
		pt_log(PT_LOG_NOTICE, "accesslog: %s writable again",
		    al_sink_name(s));
		s->failing = false;
	}
}

size_t
al_whole_lines(const char *buf, size_t len, size_t max)
{
	const char	*nl;

	if (len <= max)
		return len;
	nl = memrchr(buf, '\n', max);
	return nl != NULL ? (size_t)(nl - buf) + 1 : max;
}

ssize_t
al_write_fd(int fd, bool stream, bool *torn, uint64_t *cut, const char *buf,
    size_t len)
{
	size_t		 n = stream ? al_whole_lines(buf, len, PIPE_BUF) : len;
	ssize_t		 w;
	const char	*nl;

	/* A short write (a full file system) left a line cut: end it before
	 * anything else, so the next record starts a line of its own. */
	if (*torn) {
		do
			w = write(fd, "\n", 1);
		while (w < 0 && errno == EINTR);
		if (w < 0)
			return -errno;
		*torn = false;
	}
	do
		w = write(fd, buf, n);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	if (!stream && (size_t)w < n && w > 0 && buf[w - 1] != '\n') {
		/* The rest of the cut record cannot join its start any more:
		 * it is dropped, and counted. */
		nl = memchr(buf + w, '\n', len - (size_t)w);
		w = nl != NULL ? nl - buf + 1 : (ssize_t)len;
		*torn = true;
		(*cut)++;
	}
	return w;
}

/* Writes to a file, pipe or FIFO. Returns bytes taken, or -errno. */
static ssize_t
al_sink_write_fd(struct al_sink *s)
{
	uint64_t	 cut = 0;
	ssize_t		 w;

	w = al_write_fd(s->fd, s->stream, &s->torn, &cut, s->buf, s->len);
	/* A cut dropped-count line is no record lost. */
	if (cut > 0 && w > 0 && al_is_note_end(s->notes, s->nnotes, (size_t)w))
		cut--;
	if (cut > 0) {
		s->dropped += cut;
		pt_counter_add(s->ac->ctr_dropped, (int64_t)cut);
	}
	return w;
}

ssize_t
al_write_dgram(int fd, const char *buf, size_t len)
{
	struct mmsghdr	 msgs[AL_BATCH];
	struct iovec	 iov[AL_BATCH];
	size_t		 off = 0, lens[AL_BATCH];
	const char	*nl;
	int		 n = 0, i, sent;
	ssize_t		 taken = 0;

	memset(msgs, 0, sizeof(msgs));
	while (n < AL_BATCH && off < len) {
		nl = memchr(buf + off, '\n', len - off);
		lens[n] = nl != NULL ? (size_t)(nl - (buf + off)) + 1 :
		    len - off;
		iov[n].iov_base = (void *)(buf + off);
		iov[n].iov_len = lens[n] - (nl != NULL);	/* no '\n' */
		msgs[n].msg_hdr.msg_iov = &iov[n];
		msgs[n].msg_hdr.msg_iovlen = 1;
		off += lens[n];
		n++;
	}
	sent = sendmmsg(fd, msgs, (unsigned)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (sent < 0) {
		if (errno == EMSGSIZE)
			return (ssize_t)lens[0];	/* cannot ever go */
		return -errno;
	}
	for (i = 0; i < sent; i++)
		taken += (ssize_t)lens[i];
	return taken;
}

static ssize_t
al_sink_write_dgram(struct al_sink *s)
{
	return al_write_dgram(s->fd, s->buf, s->len);
}

/*
 * The syslog header of a record written at <ms>: the local form of RFC
 * 3164 that syslog(3) sends to /dev/log ("<PRI>Mmm dd hh:mm:ss
 * tag[pid]: "), or RFC 5424 ("<PRI>1 TIMESTAMP HOST tag pid - - "). Made
 * once a second; RFC 5424's milliseconds are put in each time.
 */
static size_t
al_syslog_hdr(struct al_sink *s, uint64_t ms, char *out)
{
	static const char *const mon[12] = { "Jan", "Feb", "Mar", "Apr",
	    "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	const struct al_log_conf	*lc = s->lc;
	time_t				 sec = (time_t)(ms / 1000);
	struct tm			 tm;
	long				 off;
	int				 pri = lc->facility * 8 + lc->severity;
	int				 n, m;
	unsigned			 frac = (unsigned)(ms % 1000);

	if (s->hdr_sec != sec || s->hdr_len == 0) {
		if (lc->rfc5424) {
			al_time(sec, false, &tm, &off);
			n = snprintf(s->hdr, sizeof(s->hdr), "<%d>1 %04d-%02d-"
			    "%02dT%02d:%02d:%02d.", pri, tm.tm_year + 1900,
			    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			    tm.tm_sec);
			m = snprintf(s->hdr_tail, sizeof(s->hdr_tail),
			    "Z %s %s %d - - ", s->host, lc->tag, (int)s->pid);
		} else {
			al_time(sec, true, &tm, &off);
			n = snprintf(s->hdr, sizeof(s->hdr), "<%d>%s %2d "
			    "%02d:%02d:%02d %s[%d]: ", pri, mon[tm.tm_mon],
			    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			    lc->tag, (int)s->pid);
			m = 0;
			s->hdr_tail[0] = '\0';
		}
		s->hdr_len = n > 0 && (size_t)n < sizeof(s->hdr) ?
		    (size_t)n : 0;
		s->tail_len = m > 0 && (size_t)m < sizeof(s->hdr_tail) ?
		    (size_t)m : 0;
		s->hdr_sec = sec;
	}
	memcpy(out, s->hdr, s->hdr_len);
	n = (int)s->hdr_len;
	if (lc->rfc5424) {
		out[n++] = (char)('0' + frac / 100);
		out[n++] = (char)('0' + frac / 10 % 10);
		out[n++] = (char)('0' + frac % 10);
		memcpy(out + n, s->hdr_tail, s->tail_len);
		n += (int)s->tail_len;
	}
	return (size_t)n;
}

/* Appends one record (its syslog header first); the caller checked
 * there is room for AL_HDR_MAX + <len>. */
static void
al_sink_put(struct al_sink *s, const char *line, size_t len, uint64_t ms)
{
	if (s->lc->kind == AL_SYSLOG)
		s->len += al_syslog_hdr(s, ms, s->buf + s->len);
	memcpy(s->buf + s->len, line, len);
	s->len += len;
}

void
al_sink_note_dropped(struct al_sink *s)
{
	char	 line[AL_REC_MAX];
	size_t	 n;

	if (s->dropped == 0 || s->cap - s->len < AL_REC_MAX + AL_HDR_MAX ||
	    s->nnotes == AL_NOTES_MAX)
		return;
	uint64_t ms = al_wall_ms();

	n = al_fmt_dropped(&s->lc->fmt, ms, s->worker, s->dropped, line,
	    sizeof(line));
	s->dropped = 0;
	al_sink_put(s, line, n, ms);
	s->notes[s->nnotes++] = s->len;
}

void
al_sink_flush(struct al_sink *s)
{
	ssize_t	 w;
	int	 err;

	if (s->lc->thread) {
		al_writer_handoff(s);
		return;
	}
	if (s->io_on)
		return;		/* EPOLLOUT will call back */
	if (s->lc->kind == AL_SYSLOG && s->fd < 0 && s->len > 0) {
		int	 fd = al_syslog_connect(s->lc->path);

		if (fd < 0) {
			al_sink_error(s, -fd);
			al_sink_arm(s);
			return;
		}
		al_sink_set_fd(s, fd);
	}
	while (s->len > 0) {
		w = s->lc->kind == AL_SYSLOG ? al_sink_write_dgram(s) :
		    al_sink_write_fd(s);
		if (w < 0) {
			err = (int)-w;
			if (err == EAGAIN || err == EWOULDBLOCK ||
			    err == ENOBUFS) {
				al_sink_wait(s);
				if (!s->io_on)
					al_sink_arm(s);
				return;
			}
			/* The daemon restarted: a new socket next time. */
			if (s->lc->kind == AL_SYSLOG && (err == ECONNREFUSED ||
			    err == ENOTCONN || err == ENOENT)) {
				close(s->fd);
				s->fd = -1;
			}
			al_sink_error(s, err);
			al_sink_arm(s);
			return;
		}
		al_sink_recovered(s);
		if ((size_t)w < s->len)
			memmove(s->buf, s->buf + w, s->len - (size_t)w);
		s->len -= (size_t)w;
		al_sink_shift_notes(s, (size_t)w);
		al_sink_note_dropped(s);
	}
}

static void
al_sink_on_timer(struct pt_timer *t, void *arg)
{
	struct al_sink	*s = arg;

	(void)t;
	s->timer_on = false;
	al_sink_flush(s);
	if (s->len > 0 || s->dropped > 0)
		al_sink_arm(s);
}

bool
al_sink_add(struct al_sink *s, const char *line, size_t len, uint64_t ms)
{
	size_t	 need = len + (s->lc->kind == AL_SYSLOG ? AL_HDR_MAX : 0);

	if (s->buf == NULL)
		return false;
	if (s->cap - s->len < need) {
		/* A log that failed is tried again by its timer, not by every
		 * record: a full disk must not cost a syscall per request. */
		if (!s->failing)
			al_sink_flush(s);
		if (s->cap - s->len < need) {
			s->dropped++;
			pt_counter_add(s->ac->ctr_dropped, 1);
			al_sink_arm(s);
			return false;
		}
	}
	al_sink_put(s, line, len, ms);
	if (s->len >= s->write_at && !s->failing)
		al_sink_flush(s);
	else
		al_sink_arm(s);
	return true;
}

void
al_sink_reopen(struct al_sink *s)
{
	int	 fd;
	bool	 waited = s->io_on;

	if (s->buf == NULL || s->lc->kind == AL_STDOUT)
		return;
	if (s->lc->thread) {
		/* The thread writes the records so far to the old file,
		 * then opens the new one. */
		s->reopen_pending = true;
		al_writer_handoff(s);
		return;
	}
	al_sink_flush(s);
	if (s->lc->kind == AL_SYSLOG) {
		/* A restarted daemon has a new socket at the same path. */
		al_sink_io_stop(s);
		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
		if ((fd = al_syslog_connect(s->lc->path)) >= 0)
			al_sink_set_fd(s, fd);
		else
			s->failing = true;
		if (s->len > 0)
			al_sink_flush(s);
		return;
	}
	/* By path, with the worker's own rights: the master created the
	 * new file for this user before it signalled the workers. On
	 * failure the old descriptor (the renamed file) keeps the records:
	 * late, in the old file, but not lost. */
	fd = al_file_open(s->lc, (uid_t)-1, (gid_t)-1);
	if (fd < 0) {
		pt_log_err(PT_LOG_ERR, -fd, "accesslog: reopen %s (writing on "
		    "to the file open before)", s->lc->path);
		return;
	}
	/* The epoll registration belongs to the old file: drop it first. */
	al_sink_io_stop(s);
	if (dup3(fd, s->fd, O_CLOEXEC) < 0)
		pt_log_err(PT_LOG_ERR, errno, "accesslog: reopen %s: dup3",
		    s->lc->path);
	close(fd);
	al_sink_set_fd(s, s->fd);
	s->failing = false;
	if (waited || s->len > 0)
		al_sink_flush(s);
}
