/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a module may do with the worker's loop besides timers: watch its
 * own descriptors (pt_io_*) and hand work from its own threads back to the
 * worker thread (pt_post).
 *
 * A struct pt_io is a struct loop_io in the module's storage (its priv[]),
 * so watching a module descriptor costs what watching a socket costs and
 * allocates nothing. The one difference from the core's users: a module
 * may free its pt_io as soon as pt_io_stop returns, even from a callback
 * of the same epoll batch, so stopping also forgets the batch's pending
 * events for it (loop_io_forget).
 *
 * Posts: one eventfd in the loop and a lock-free LIFO of the modules'
 * intrusive struct pt_post. A producer pushes with a compare-and-swap
 * and writes the eventfd only when it made the list non-empty: while a
 * wake-up is pending, further posts cost no system call. The worker reads
 * (resets) the eventfd *before* it takes the whole list with one
 * exchange; a push that lands after the exchange sees an empty list and
 * writes again, one that lands before it is taken with the list, so no
 * post waits without a wake-up. The list is then reversed to run posts
 * in the order they were made. The push is a CAS, not a bare exchange
 * followed by a store of ->next: that would leave, between the two, a
 * list whose tail the worker cannot follow, and a worker waiting for a
 * preempted thread. Compare-and-swap, write() and errno saved make
 * pt_post async-signal-safe; the worker only ever takes the whole list,
 * so the CAS has no ABA problem.
 *
 * It deliberately does not bound the work per wake-up beyond "what was
 * queued when the worker looked": a module floods its own worker only.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "worker/modloop.h"
#include "common/log.h"
#include "worker/loop.h"

_Static_assert(sizeof(struct loop_io) <= sizeof(((struct pt_io *)0)->priv),
    "struct pt_io's priv[] must hold a struct loop_io");
_Static_assert(_Alignof(struct loop_io) <= _Alignof(void *),
    "struct pt_io's priv[] must be aligned for a struct loop_io");

#define MODLOOP_IO_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP)

static struct pt_post	*modloop_posts;		/* newest first */
static int		 modloop_efd = -1;
static struct loop_io	 modloop_eio;

static struct loop_io *
modloop_lio(struct pt_io *io)
{
	return (struct loop_io *)(void *)io->priv;
}

static void
modloop_on_io(struct loop_io *lio, uint32_t events)
{
	struct pt_io	*io = (struct pt_io *)(void *)((char *)lio -
			    offsetof(struct pt_io, priv));

	io->fn(io, events, io->arg);
}

int
pt_io_start(struct pt_io *io, int fd, uint32_t events, pt_io_fn fn,
    void *arg)
{
	int	 rc;

	if (fd < 0 || fn == NULL || (events & ~MODLOOP_IO_EVENTS) != 0)
		return -EINVAL;
	io->fn = fn;
	io->arg = arg;
	rc = loop_io_start(modloop_lio(io), fd, events, modloop_on_io);
	if (rc < 0) {
		modloop_lio(io)->added = false;
		io->fd = -1;
		io->events = 0;
		return rc;
	}
	io->fd = fd;
	io->events = events;
	return 0;
}

int
pt_io_modify(struct pt_io *io, uint32_t events)
{
	int	 rc;

	if (!modloop_lio(io)->added || (events & ~MODLOOP_IO_EVENTS) != 0)
		return -EINVAL;
	if ((rc = loop_io_set(modloop_lio(io), events)) < 0)
		return rc;
	io->events = events;
	return 0;
}

void
pt_io_stop(struct pt_io *io)
{
	struct loop_io	*lio = modloop_lio(io);

	if (!lio->added)
		return;
	loop_io_stop(lio);
	loop_io_forget(lio);
	io->events = 0;
}

void
pt_post(struct pt_post *p, pt_post_fn fn, void *arg)
{
	struct pt_post	*old;
	uint64_t	 one = 1;
	int		 fd, saved = errno;

	p->fn = fn;
	p->arg = arg;
	old = __atomic_load_n(&modloop_posts, __ATOMIC_RELAXED);
	do
		p->next = old;
	while (!__atomic_compare_exchange_n(&modloop_posts, &old, p, true,
	    __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	/* Only the push that made the list non-empty wakes the worker; the
	 * others ride on its wake-up (see the top of the file). A failed
	 * write leaves the counter non-zero or means the worker is gone:
	 * either way there is nothing better to do here. */
	fd = __atomic_load_n(&modloop_efd, __ATOMIC_ACQUIRE);
	if (old == NULL && fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
		/* nothing to do, see above */
	}
	errno = saved;
}

unsigned
modloop_run_posts(void)
{
	struct pt_post	*list, *rev = NULL, *p;
	pt_post_fn	 fn;
	void		*arg;
	unsigned	 n = 0;

	list = __atomic_exchange_n(&modloop_posts, NULL, __ATOMIC_ACQUIRE);
	while ((p = list) != NULL) {
		list = p->next;
		p->next = rev;
		rev = p;
	}
	while ((p = rev) != NULL) {
		/* Read everything first: <fn> may post <p> again. */
		rev = p->next;
		fn = p->fn;
		arg = p->arg;
		p->next = NULL;
		fn(arg);
		n++;
	}
	return n;
}

static void
modloop_on_wake(struct loop_io *io, uint32_t events)
{
	uint64_t	 v;

	(void)events;
	/* Reset before taking the list: see the top of the file. */
	if (read(io->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pt_log_err(PT_LOG_WARNING, errno, "reading the post eventfd");
	modloop_run_posts();
}

int
modloop_init(void)
{
	uint64_t	 one = 1;
	int		 fd, rc;

	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((rc = loop_io_start(&modloop_eio, fd, EPOLLIN,
	    modloop_on_wake)) < 0) {
		close(fd);
		return rc;
	}
	__atomic_store_n(&modloop_efd, fd, __ATOMIC_RELEASE);
	/* Something posted before the eventfd existed still gets its
	 * wake-up. */
	if (__atomic_load_n(&modloop_posts, __ATOMIC_ACQUIRE) != NULL &&
	    write(fd, &one, sizeof(one)) < 0)
		pt_log_err(PT_LOG_WARNING, errno, "writing the post eventfd");
	return 0;
}

void
modloop_fini(void)
{
	if (modloop_efd < 0)
		return;
	/* The descriptor stays open (the process exits next): a module
	 * thread that broke the rules and posts late writes to a dead
	 * eventfd, never to a descriptor reused for something else. */
	__atomic_store_n(&modloop_efd, -1, __ATOMIC_RELEASE);
	loop_io_stop(&modloop_eio);
}
