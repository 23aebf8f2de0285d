/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Lingering close, as nginx's lingering_close: a client we answer and
 * close while it may still be sending (a head over max_header_size, a
 * body the origin answered before reading, a SOCKS request with data
 * behind it) would be reset by a plain close(), since Linux answers a
 * close with unread bytes by RST, and a client whose stack drops what it
 * had received on a reset (Windows) loses the answer. Instead the socket
 * is handed here once the answer is written: shutdown(SHUT_WR) sends the
 * FIN after it, and what the client still sends is read and dropped until
 * it closes too, LINGER_MS passes or LINGER_BYTES were dropped; only then
 * is it closed. The connection itself ends at once (LOG, CLOSE, its
 * memory): a lingering socket holds a small slot of a fixed table, and
 * with the table full a socket is closed as before.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "worker/linger.h"

#define LINGER_MAX	256
#define LINGER_MS	2000
#define LINGER_BYTES	(1024 * 1024)

struct linger_slot {
	struct loop_io		 io;		/* first: epoll hands it back */
	struct pt_timer		 timer;
	size_t			 dropped;
	struct linger_slot	*next_free;
};

static struct linger_slot	 linger_slots[LINGER_MAX];
static struct linger_slot	*linger_free;
static bool			 linger_ready;
static unsigned			 linger_n;

static void
linger_init(void)
{
	int	 i;

	for (i = LINGER_MAX - 1; i >= 0; i--) {
		linger_slots[i].io.fd = -1;
		linger_slots[i].next_free = linger_free;
		linger_free = &linger_slots[i];
	}
	linger_ready = true;
}

static void
linger_end(struct linger_slot *l)
{
	pt_timer_stop(&l->timer);
	loop_io_close(&l->io);
	l->next_free = linger_free;
	linger_free = l;
	linger_n--;
}

static void
linger_on_timer(struct pt_timer *t, void *arg)
{
	(void)t;
	linger_end(arg);
}

static void
linger_on_event(struct loop_io *io, uint32_t events)
{
	static char		 sink[16384];
	struct linger_slot	*l = (struct linger_slot *)io;
	ssize_t			 n;

	(void)events;
	for (;;) {
		n = recv(io->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n > 0) {
			if ((l->dropped += (size_t)n) >= LINGER_BYTES)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		break;		/* EOF, or the client reset */
	}
	linger_end(l);
}

bool
linger_take(struct loop_io *io)
{
	struct linger_slot	*l;

	if (!linger_ready)
		linger_init();
	if (io->fd < 0 || (l = linger_free) == NULL)
		return false;
	if (shutdown(io->fd, SHUT_WR) < 0 ||
	    loop_io_move(io, &l->io, EPOLLIN, linger_on_event) < 0)
		return false;
	linger_free = l->next_free;
	l->io.fd = io->fd;
	io->fd = -1;
	l->dropped = 0;
	linger_n++;
	pt_timer_start(&l->timer, LINGER_MS, linger_on_timer, l);
	return true;
}

unsigned
linger_count(void)
{
	return linger_n;
}

void
linger_close_all(void)
{
	int	 i;

	for (i = 0; i < LINGER_MAX && linger_n > 0; i++)
		if (linger_slots[i].io.fd >= 0)
			linger_end(&linger_slots[i]);
}
