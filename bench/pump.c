/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/pump: the tunnel loop shared by bench/floor (where it is what a
 * tunnel costs at the least) and bench/shim. One thread, edge-triggered
 * epoll, non-blocking sockets with TCP_NODELAY; the relay makes the system
 * calls of portico's worker/relay.c: splice() through a pipe per direction
 * grown to RELAY_PIPE_SIZE, or with copy recv()/send() through a 16 KiB
 * buffer per direction (relay.buffer_size's default). A socket's readiness
 * is kept until EAGAIN (or a short recv or send) uses it up, so no call is
 * made only to hear EAGAIN; a tunnel still moving after RELAY_ROUNDS goes
 * on after the others; EOF goes on with shutdown(SHUT_WR) once its
 * direction is drained.
 *
 * Deliberately not here: what either program says before the relay (its
 * pump_ops), names, timeouts, limits, a ring buffer, a pipe pool. A system
 * call added here changes what the floor measures.
 */
#include "config.h"

#include "pump.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define PUMP_PIPE_SIZE	(256 * 1024)		/* RELAY_PIPE_SIZE */
#define PUMP_PIPE_HIGH	(PUMP_PIPE_SIZE / 2)	/* RELAY_PIPE_HIGH */
#define PUMP_ROUNDS	16			/* RELAY_ROUNDS */
#define PUMP_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)
#define PUMP_SPLICE	(SPLICE_F_MOVE | SPLICE_F_NONBLOCK)
#define PENDING(r)	(copy ? (r)->len - (r)->off : (r)->fill)

unsigned long long		 pump_sent[2];
unsigned long			 pump_accepted;

static const struct pump_ops	*ops;
static bool			 copy;	/* ops->copy, read per byte */
static int			 ep;
static struct pump		*runq, *reap;

static int
dir_pipe(struct pump_dir *r)
{
	int	 p[2];

	if (r->pr >= 0)
		return 0;
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	r->pr = p[0];
	r->pw = p[1];
	/* Refused past pipe-user-pages-soft: the default size still works. */
	(void)fcntl(r->pw, F_SETPIPE_SZ, PUMP_PIPE_SIZE);
	return 0;
}

/* Writes direction <d>'s pending bytes: 1 moved, 0 stuck, -1 failed. A
 * ready bit is cleared only when the socket is known full (EAGAIN, a short
 * send; a short splice may stop at a pipe slot) or, in dir_read, drained:
 * an edge not used up is never waited for. */
static int
dir_write(struct pump *p, int d)
{
	struct pump_dir		*r = &p->dir[d];
	struct pump_side	*dst = &p->side[1 - d];
	size_t			 want = PENDING(r);
	ssize_t			 n;

	n = copy ? send(dst->fd, r->buf + r->off, want, MSG_NOSIGNAL) :
	    splice(r->pr, NULL, dst->fd, NULL, want, PUMP_SPLICE);
	if (n < 0 || (copy && (size_t)n < want))
		dst->ready &= ~(uint32_t)EPOLLOUT;
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	r->full = false;
	pump_sent[d] += (size_t)n;
	if (!copy)
		r->fill -= (size_t)n;
	else if ((r->off += (size_t)n) == r->len)
		r->off = r->len = 0;
	return 1;
}

/* Reads direction <d>'s source: 1 read or EOF, 0 nothing, -1 failed. */
static int
dir_read(struct pump *p, int d)
{
	struct pump_dir		*r = &p->dir[d];
	struct pump_side	*src = &p->side[d];
	size_t			 room = PUMP_BUF_SIZE - r->len;
	ssize_t			 n;

	if (copy)
		n = recv(src->fd, r->buf + r->len, room, 0);
	else if (dir_pipe(r) < 0)
		return -1;
	else
		n = splice(src->fd, NULL, r->pw, NULL, PUMP_PIPE_SIZE,
		    PUMP_SPLICE);
	if (n < 0 && errno != EAGAIN)
		return -1;
	/* For splice EAGAIN says "socket empty" or "pipe full", and only an
	 * empty pipe tells which. A short recv emptied the socket, unless a
	 * FIN waits behind the bytes (EPOLLRDHUP seen). */
	if (n < 0 && !copy && r->fill > 0)
		r->full = true;
	else if (n < 0 || (copy && n > 0 && (size_t)n < room && !src->hup))
		src->ready &= ~(uint32_t)EPOLLIN;
	if (n < 0)
		return 0;
	r->eof = n == 0;
	if (copy)
		r->len += (size_t)n;
	else
		r->fill += (size_t)n;
	return 1;
}

/* One round of direction <d>: write, pass the EOF on once drained, read
 * while there is room. 1 when something moved, 0 stuck, -1 failed. */
static int
dir_step(struct pump *p, int d)
{
	struct pump_dir	*r = &p->dir[d];
	int		 moved = 0, rc;
	bool		 room;

	if (r->done)
		return 0;
	if (PENDING(r) > 0 && (p->side[1 - d].ready & EPOLLOUT) &&
	    (moved = dir_write(p, d)) < 0)
		return -1;
	if (PENDING(r) == 0 && r->eof) {
		/* With the other way done too, the close sends the FIN. */
		if (!p->dir[1 - d].done &&
		    shutdown(p->side[1 - d].fd, SHUT_WR) < 0)
			return -1;
		r->done = true;
		return 1;
	}
	room = copy ? r->len < PUMP_BUF_SIZE :
	    !r->full && r->fill < PUMP_PIPE_HIGH;
	if (r->eof || !room || !(p->side[d].ready & EPOLLIN))
		return moved;
	if ((rc = dir_read(p, d)) < 0)
		return -1;
	return moved | rc;
}

void
pump_run(struct pump *p)
{
	int	 a, b;

	for (int i = 0; i < PUMP_ROUNDS; i++) {
		a = dir_step(p, 0);
		/* Not after a failure: errno stays the failed call's. */
		b = a < 0 ? -1 : dir_step(p, 1);
		if (a < 0 || b < 0) {
			pump_fail(p, "relay", errno);
			return;
		}
		if (p->dir[0].done && p->dir[1].done) {
			pump_close(p);
			return;
		}
		if (a == 0 && b == 0)
			return;
	}
	/* Out of rounds with bytes moving: edge-triggered epoll will not
	 * repeat what we did not use up, so go on after the others. */
	if (!p->queued) {
		p->queued = true;
		p->next = runq;
		runq = p;
	}
}

void
pump_start(struct pump *p, int d)
{
	struct pump_dir	*r = &p->dir[d];

	if (p->hs_len > 0 && copy) {
		memcpy(r->buf, p->hs, p->hs_len);
		r->len = p->hs_len;
	} else if (p->hs_len > 0) {
		if (dir_pipe(r) < 0 ||
		    write(r->pw, p->hs, p->hs_len) != (ssize_t)p->hs_len) {
			pump_fail(p, "pipe", errno);
			return;
		}
		r->fill = p->hs_len;
	}
	p->phase = PUMP_RELAY;
	pump_run(p);
}

void
pump_close(struct pump *p)
{
	if (p->phase == PUMP_DEAD)
		return;
	for (int i = 0; i < 2; i++) {
		if (p->side[i].fd >= 0)
			close(p->side[i].fd);
		if (p->dir[i].pr >= 0) {
			close(p->dir[i].pr);
			close(p->dir[i].pw);
		}
	}
	p->phase = PUMP_DEAD;
	p->dead = reap;
	reap = p;
}

void
pump_fail(struct pump *p, const char *what, int err)
{
	if (ops->on_fail != NULL)
		ops->on_fail(p, what, err);
	pump_close(p);
}

ssize_t
pump_read_setup(struct pump *p, int i)
{
	struct pump_side	*s = &p->side[i];
	ssize_t			 n;

	if (!(s->ready & EPOLLIN))
		return -EAGAIN;
	n = recv(s->fd, p->hs + p->hs_len, ops->hs_size - p->hs_len, 0);
	if (n < 0 && errno == EAGAIN)
		s->ready &= ~(uint32_t)EPOLLIN;
	if (n < 0)
		return -errno;
	p->hs_len += (size_t)n;
	return n;
}

void
pump_consume(struct pump *p, size_t n)
{
	p->hs_len -= n;
	memmove(p->hs, p->hs + n, p->hs_len);
}

/* Registered after connect(), which may have finished: ADD reports it. */
int
pump_dial(struct pump *p, const struct sockaddr *sa, socklen_t len)
{
	struct pump_side	*u = &p->side[1];
	struct epoll_event	 ev = { .events = PUMP_EVENTS, .data.ptr = u };
	int			 one = 1;

	u->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (u->fd < 0 ||
	    setsockopt(u->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    (connect(u->fd, sa, len) < 0 && errno != EINPROGRESS) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, u->fd, &ev) < 0)
		return -1;
	return 0;
}

/* Each connection becomes a tunnel, the program's struct with the copy
 * buffers and the setup's room behind it: memory per connection, not per
 * byte. */
static void
pump_accept(struct pump_side *l)
{
	struct epoll_event	 ev = { .events = PUMP_EVENTS };
	struct pump		*p;
	char			*mem;
	int			 fd;

	while ((fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) >= 0 || errno == ECONNABORTED || errno == EINTR) {
		if (fd < 0 || (mem = calloc(1, ops->size + ops->hs_size +
		    (copy ? 2 * PUMP_BUF_SIZE : 0))) == NULL) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		p = (struct pump *)mem;
		p->id = ++pump_accepted;
		p->hs = mem + ops->size;
		for (int i = 0; i < 2; i++) {
			p->side[i].p = p;
			p->side[i].fd = -1;
			p->dir[i].pr = p->dir[i].pw = -1;
			if (copy)
				p->dir[i].buf = p->hs + ops->hs_size +
				    i * PUMP_BUF_SIZE;
		}
		p->side[0].fd = fd;
		ev.data.ptr = &p->side[0];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			pump_fail(p, "epoll_ctl", errno);
		else
			ops->on_accept(p, l);
	}
	/* EMFILE and the like: the next connection's edge tries again. */
	if (errno != EAGAIN)
		fprintf(stderr, "%s: accept4: %s\n",
		    program_invocation_short_name, strerror(errno));
}

int
pump_open(const struct pump_ops *o)
{
	ops = o;
	copy = o->copy;
	return (ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ? -1 : 0;
}

int
pump_listen(struct pump_side *l, struct sockaddr_in *sin, bool get_port)
{
	struct epoll_event	 ev = { EPOLLIN | EPOLLET, { .ptr = l } };
	socklen_t		 len = sizeof(*sin);
	int			 one = 1;

	/* Accepted sockets inherit TCP_NODELAY (as in master/listen.c). */
	if ((l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    bind(l->fd, (struct sockaddr *)sin, sizeof(*sin)) < 0 ||
	    listen(l->fd, 4096) < 0 ||
	    (get_port &&
	    getsockname(l->fd, (struct sockaddr *)sin, &len) < 0) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, l->fd, &ev) < 0)
		return -1;
	return 0;
}

/* A hang-up or an error makes both ways ready: the next call says what
 * happened. */
static void
pump_note(struct pump_side *s, uint32_t ev)
{
	s->ready |= ev & (EPOLLIN | EPOLLOUT);
	if (ev & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
		s->ready |= EPOLLIN | EPOLLOUT;
		s->hup = true;
	}
}

int
pump_loop(const sigset_t *mask, volatile sig_atomic_t *stop)
{
	struct epoll_event	 evs[256];
	struct pump		*p, *q;
	int			 n, timeout;

	while (stop == NULL || !*stop) {
		timeout = runq != NULL ? 0 : -1;
		n = mask != NULL ? epoll_pwait(ep, evs, 256, timeout, mask) :
		    epoll_wait(ep, evs, 256, timeout);
		if (n < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < n; i++) {
			struct pump_side	*s = evs[i].data.ptr;

			if (s->p == NULL)
				pump_accept(s);
			else if (s->p->phase != PUMP_DEAD) {
				pump_note(s, evs[i].events);
				ops->on_event(s, evs[i].events);
			}
		}
		/* Tunnels out of rounds, then memory of tunnels closed. */
		for (q = runq, runq = NULL; (p = q) != NULL; ) {
			q = p->next;
			p->queued = false;
			if (p->phase == PUMP_RELAY)
				pump_run(p);
		}
		while ((p = reap) != NULL) {
			reap = p->dead;
			free(p);
		}
	}
	return 0;
}
