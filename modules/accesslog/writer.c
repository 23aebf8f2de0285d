/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The writer thread (writer = "thread", the default): one per worker, on
 * the CPUs the worker process may use besides its own (pt_worker_cpuset),
 * doing every write(2) and sendmmsg(2) of the worker's logs. The worker
 * only formats records into a sink's buffer; when it would write, it
 * swaps that buffer with the sink's second one and hands the full one to
 * the thread (one mutex, one signal per buffer, never per record). So
 * the kernel's work for a log (the page cache, a datagram per record for
 * syslog) is not paid on the worker's CPU, and nothing a disk or reader
 * does can make the loop wait: the thread waits instead (a full pipe, a
 * full disk, no syslog daemon), trying again until it can, while the
 * worker goes on filling the other buffer and, once that is full too,
 * drops and counts records as in the loop mode.
 *
 * When the thread is done with a buffer it posts back (pt_post); the
 * worker then counts what the thread could not write, adds the
 * dropped-records line, and hands over the next buffer. Reopen is done by
 * the thread after the buffer holding the records from before SIGUSR1,
 * so those go to the old file and later ones to the new.
 *
 * It does no formatting, and takes no lock the worker holds while
 * writing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "modules/accesslog/accesslog.h"

struct al_writer {
	pthread_t		 th;
	bool			 started;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	int			 stop;		/* atomic */
	uint64_t		 deadline;	/* atomic: give up then */
	/* Under mu: the worker hands over nothing more, the thread may
	 * leave once nothing is pending. Not <stop>: after stop the worker
	 * still hands over the buffer it filled meanwhile. */
	bool			 quit;
	struct al_sink		*sinks;
	size_t			 n;
	struct pollfd		*pfd;		/* the thread's, n of them */
};

#define AL_WR_POLL_MS	50

static bool
al_writer_give_up(struct al_writer *wr)
{
	return __atomic_load_n(&wr->stop, __ATOMIC_ACQUIRE) &&
	    al_wall_ms() >= __atomic_load_n(&wr->deadline, __ATOMIC_ACQUIRE);
}

static void
al_writer_nap(unsigned ms)
{
	struct timespec	 ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Thread: the new file (or syslog socket) after the buffer of records
 * from before the SIGUSR1. A failure keeps the old descriptor. */
static void
al_writer_reopen(struct al_sink *s)
{
	int	 fd;

	if (s->lc->kind == AL_STDOUT)
		return;
	if (s->lc->kind == AL_SYSLOG) {
		if (s->fd >= 0)
			close(s->fd);
		s->fd = al_syslog_connect(s->lc->path);
		return;
	}
	if ((fd = al_file_open(s->lc, (uid_t)-1, (gid_t)-1)) < 0) {
		pt_log_err(PT_LOG_ERR, -fd, "accesslog: reopen %s (writing on "
		    "to the file open before)", s->lc->path);
		return;
	}
	if (dup3(fd, s->fd, O_CLOEXEC) < 0)
		pt_log_err(PT_LOG_ERR, errno, "accesslog: reopen %s: dup3",
		    s->lc->path);
	close(fd);
	al_sink_set_fd(s, s->fd);
	s->t_torn = false;
}

enum al_try {
	AL_TRY_DONE,		/* written, or given up at the stop */
	AL_TRY_POLL,		/* wait for POLLOUT on the descriptor */
	AL_TRY_RETRY		/* an error: try again at retry_at */
};

/* Thread: writes what it can of obuf[ooff..olen) without waiting. A
 * sink that cannot take more does not hold up the others: the caller
 * waits for all of them at once. */
static enum al_try
al_writer_try(struct al_writer *wr, struct al_sink *s)
{
	ssize_t		 w;
	uint64_t	 cut;
	int		 err, fd;

	while (s->ooff < s->olen) {
		if (s->lc->kind == AL_SYSLOG && s->fd < 0) {
			if ((fd = al_syslog_connect(s->lc->path)) < 0) {
				err = -fd;
				goto failed;
			}
			s->fd = fd;
		}
		cut = 0;
		w = s->lc->kind == AL_SYSLOG ?
		    al_write_dgram(s->fd, s->obuf + s->ooff,
		    s->olen - s->ooff) :
		    al_write_fd(s->fd, s->stream, &s->t_torn, &cut,
		    s->obuf + s->ooff, s->olen - s->ooff);
		/* A cut dropped-count line is no record lost. */
		if (cut > 0 && w > 0 && al_is_note_end(s->onotes, s->onnotes,
		    s->ooff + (size_t)w))
			cut--;
		s->t_dropped += cut;
		if (w > 0) {
			s->ooff += (size_t)w;
			if (s->t_failing) {
				pt_log(PT_LOG_NOTICE, "accesslog: %s writable "
				    "again", s->lc->kind == AL_STDOUT ?
				    "stdout" : s->lc->path);
				s->t_failing = false;
			}
			continue;
		}
		err = w == 0 ? EAGAIN : (int)-w;
		if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
			if (al_writer_give_up(wr))
				break;
			return AL_TRY_POLL;
		}
		if (s->lc->kind == AL_SYSLOG && (err == ECONNREFUSED ||
		    err == ENOTCONN || err == ENOENT)) {
			close(s->fd);
			s->fd = -1;
		}
failed:
		if (!s->t_failing)
			pt_log_err(PT_LOG_ERR, err, "accesslog: write %s "
			    "(records are kept, then dropped and counted, "
			    "until it works again)", s->lc->kind == AL_STDOUT ?
			    "stdout" : s->lc->path);
		s->t_failing = true;
		s->t_errors++;
		if (al_writer_give_up(wr))
			break;
		s->retry_at = al_wall_ms() + s->lc->flush_ms;
		return AL_TRY_RETRY;
	}
	/* Given up at the stop: the records left are dropped (not the
	 * dropped-count lines: their records were counted already). */
	if (s->ooff < s->olen)
		s->t_dropped += al_count_records(s->obuf, s->ooff, s->olen,
		    s->onotes, s->onnotes);
	if (s->o_reopen)
		al_writer_reopen(s);
	return AL_TRY_DONE;
}

static void	al_writer_on_done(void *arg);

/* Thread, under wr->mu: the worker may take <s>'s buffer back. */
static void
al_writer_done_locked(struct al_writer *wr, struct al_sink *s)
{
	s->t_done = true;
	/* Once the worker is stopping it collects by itself: a post made
	 * after exit_worker began would never run. */
	if (!__atomic_load_n(&wr->stop, __ATOMIC_ACQUIRE))
		pt_post(&s->post, al_writer_on_done, s);
	pthread_cond_broadcast(&wr->cv);
}

static void *
al_writer_main(void *arg)
{
	struct al_writer	*wr = arg;
	struct al_sink		*s;
	struct pollfd		*pfd = wr->pfd;
	size_t			 i, npfd, pending;
	uint64_t		 now, next;
	int			 timeout;
	bool			 progress;

	pthread_mutex_lock(&wr->mu);
	for (;;) {
		for (i = 0, pending = 0; i < wr->n; i++)
			if (wr->sinks[i].busy && !wr->sinks[i].t_done)
				pending++;
		if (pending == 0) {
			if (wr->quit)
				break;
			pthread_cond_wait(&wr->cv, &wr->mu);
			continue;
		}
		pthread_mutex_unlock(&wr->mu);
		/* A sink the worker handed over stays busy, and not done,
		 * until this thread says done: reading those two without
		 * the lock here is safe; a sink handed over meanwhile is
		 * seen next round. */
		now = al_wall_ms();
		next = now + AL_WR_POLL_MS;
		npfd = 0;
		progress = false;
		for (i = 0; i < wr->n; i++) {
			s = &wr->sinks[i];
			pthread_mutex_lock(&wr->mu);
			if (s->wr != wr || !s->busy || s->t_done) {
				pthread_mutex_unlock(&wr->mu);
				continue;
			}
			pthread_mutex_unlock(&wr->mu);
			if (s->retry_at > now && !al_writer_give_up(wr)) {
				if (s->retry_at < next)
					next = s->retry_at;
				continue;
			}
			switch (al_writer_try(wr, s)) {
			case AL_TRY_DONE:
				pthread_mutex_lock(&wr->mu);
				al_writer_done_locked(wr, s);
				pthread_mutex_unlock(&wr->mu);
				progress = true;
				break;
			case AL_TRY_POLL:
				pfd[npfd].fd = s->fd;
				pfd[npfd].events = POLLOUT;
				npfd++;
				break;
			case AL_TRY_RETRY:
				if (s->retry_at < next)
					next = s->retry_at;
				break;
			}
		}
		if (!progress) {
			/* Every pending sink is blocked: wait for any of them,
			 * a retry time, or (at most AL_WR_POLL_MS late) a new
			 * buffer. */
			now = al_wall_ms();
			timeout = next > now ? (int)(next - now) : 0;
			if (timeout > AL_WR_POLL_MS)
				timeout = AL_WR_POLL_MS;
			if (npfd > 0)
				poll(pfd, npfd, timeout);
			else if (timeout > 0)
				al_writer_nap((unsigned)timeout);
		}
		pthread_mutex_lock(&wr->mu);
	}
	pthread_mutex_unlock(&wr->mu);
	return NULL;
}

/* Worker: takes back a buffer the thread is done with (under wr->mu). */
static void
al_writer_collect_locked(struct al_sink *s, uint64_t *dropped,
    uint64_t *errors)
{
	s->busy = false;
	s->t_done = false;
	s->olen = s->ooff = 0;
	s->onnotes = 0;
	s->retry_at = 0;
	*dropped = s->t_dropped;
	*errors = s->t_errors;
	s->t_dropped = s->t_errors = 0;
}

static void
al_writer_count(struct al_sink *s, uint64_t dropped, uint64_t errors)
{
	if (dropped > 0) {
		s->dropped += dropped;
		pt_counter_add(s->ac->ctr_dropped, (int64_t)dropped);
	}
	if (errors > 0)
		pt_counter_add(s->ac->ctr_errors, (int64_t)errors);
}

/* Worker, posted by the thread when it is done with a sink's buffer. */
static void
al_writer_on_done(void *arg)
{
	struct al_sink	*s = arg;
	uint64_t	 d, e;

	pthread_mutex_lock(&s->wr->mu);
	if (!s->busy || !s->t_done) {
		pthread_mutex_unlock(&s->wr->mu);
		return;
	}
	al_writer_collect_locked(s, &d, &e);
	pthread_mutex_unlock(&s->wr->mu);
	al_writer_count(s, d, e);
	al_sink_note_dropped(s);
	if (s->len >= s->write_at || s->reopen_pending)
		al_writer_handoff(s);
	else if (s->len > 0)
		al_sink_arm(s);
}

void
al_writer_handoff(struct al_sink *s)
{
	struct al_writer	*wr = s->wr;
	char			*t;

	if (s->busy || (s->len == 0 && !s->reopen_pending))
		return;
	if (s->timer_on) {
		pt_timer_stop(&s->timer);
		s->timer_on = false;
	}
	pthread_mutex_lock(&wr->mu);
	t = s->obuf;
	s->obuf = s->buf;
	s->buf = t;
	s->olen = s->len;
	s->ooff = 0;
	s->len = 0;
	memcpy(s->onotes, s->notes, sizeof(s->onotes));
	s->onnotes = s->nnotes;
	s->nnotes = 0;
	s->o_reopen = s->reopen_pending;
	s->reopen_pending = false;
	s->t_done = false;
	s->busy = true;
	pthread_cond_broadcast(&wr->cv);
	pthread_mutex_unlock(&wr->mu);
}

int
al_writer_start(struct al_writer **out, struct al_sink *sinks, size_t n)
{
	struct al_writer	*wr;
	pthread_attr_t		 attr;
	cpu_set_t		 set;
	sigset_t		 all, old;
	size_t			 i;
	int			 rc;

	*out = NULL;
	if ((wr = calloc(1, sizeof(*wr))) == NULL)
		return -ENOMEM;
	if ((wr->pfd = calloc(n > 0 ? n : 1, sizeof(*wr->pfd))) == NULL) {
		free(wr);
		return -ENOMEM;
	}
	pthread_mutex_init(&wr->mu, NULL);
	pthread_cond_init(&wr->cv, NULL);
	wr->sinks = sinks;
	wr->n = n;
	for (i = 0; i < n; i++) {
		if (!sinks[i].lc->thread)
			continue;
		sinks[i].wr = wr;
		if ((sinks[i].obuf = malloc(sinks[i].cap)) == NULL) {
			free(wr->pfd);
			free(wr);
			return -ENOMEM;
		}
	}
	pthread_attr_init(&attr);
	pt_worker_cpuset(&set);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	/* Signals are the worker thread's (its signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&wr->th, &attr, al_writer_main, wr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		free(wr->pfd);
		free(wr);
		return -rc;
	}
	pthread_setname_np(wr->th, "pt-accesslog");
	wr->started = true;
	*out = wr;
	return 0;
}

/*
 * Worker, at exit: hands over what is buffered and waits for the thread
 * to write it, AL_EXIT_WAIT_MS at most for a reader or disk that takes
 * nothing; then stops and joins the thread. What it could not write is
 * counted as dropped.
 */
void
al_writer_stop(struct al_writer *wr, unsigned wait_ms)
{
	uint64_t	 until = al_wall_ms() + wait_ms, d, e, left, t;
	struct al_sink	*s;
	struct timespec	 ts;
	size_t		 i;
	bool		 idle;

	if (wr == NULL)
		return;
	__atomic_store_n(&wr->deadline, until, __ATOMIC_RELEASE);
	__atomic_store_n(&wr->stop, 1, __ATOMIC_RELEASE);
	for (;;) {
		idle = true;
		for (i = 0; i < wr->n; i++) {
			s = &wr->sinks[i];
			if (s->wr != wr)
				continue;
			pthread_mutex_lock(&wr->mu);
			if (s->busy && s->t_done) {
				al_writer_collect_locked(s, &d, &e);
				pthread_mutex_unlock(&wr->mu);
				al_writer_count(s, d, e);
				al_sink_note_dropped(s);
			} else
				pthread_mutex_unlock(&wr->mu);
			if (!s->busy)
				al_writer_handoff(s);
			if (s->busy)
				idle = false;
		}
		if (idle || al_wall_ms() >= until + 2 * AL_WR_POLL_MS)
			break;
		pthread_mutex_lock(&wr->mu);
		for (i = 0; i < wr->n; i++)
			if (wr->sinks[i].busy && !wr->sinks[i].t_done)
				break;
		if (i < wr->n) {
			/* Bounded: the thread gives up at <until>, and says so
			 * within AL_WR_POLL_MS; the time check above ends the
			 * wait whatever happens. */
			clock_gettime(CLOCK_REALTIME, &ts);
			t = (uint64_t)ts.tv_nsec + AL_WR_POLL_MS * 1000000ULL;
			ts.tv_sec += (time_t)(t / 1000000000ULL);
			ts.tv_nsec = (long)(t % 1000000000ULL);
			pthread_cond_timedwait(&wr->cv, &wr->mu, &ts);
		}
		pthread_mutex_unlock(&wr->mu);
	}
	/* Only now may the thread leave: it still writes (or, past the
	 * deadline, gives up and counts) any buffer handed over above. */
	pthread_mutex_lock(&wr->mu);
	wr->quit = true;
	pthread_cond_broadcast(&wr->cv);
	pthread_mutex_unlock(&wr->mu);
	pthread_join(wr->th, NULL);
	for (i = 0; i < wr->n; i++) {
		s = &wr->sinks[i];
		if (s->wr != wr)
			continue;
		if (s->busy) {
			/* Done by the thread after the loop above: its count
			 * is in t_dropped. Not done cannot happen (the thread
			 * leaves with nothing pending), but would be lost
			 * records all the same. */
			left = !s->t_done && s->ooff < s->olen ?
			    al_count_records(s->obuf, s->ooff, s->olen,
			    s->onotes, s->onnotes) : 0;
			al_writer_collect_locked(s, &d, &e);
			al_writer_count(s, d + left, e);
		}
		free(s->obuf);
		s->obuf = NULL;
		s->wr = NULL;
	}
	pthread_mutex_destroy(&wr->mu);
	pthread_cond_destroy(&wr->cv);
	free(wr->pfd);
	free(wr);
}
