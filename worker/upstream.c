/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The upstream keep-alive pool. An idle origin connection is watched for
 * readability: an origin that closes, or speaks out of turn, makes it
 * useless, so it is closed at once rather than found dead by the next
 * request. Entries live in one array sized at start-up; the pool is a
 * most-recently-used list threaded through it, so take, put and eviction
 * are O(entries) at worst and allocate nothing.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/upstream.h"
#include "common/log.h"
#include "worker/loop.h"

#define UPSTREAM_HOST_MAX	256

struct upstream_idle {
	struct loop_io		 io;		/* first: epoll hands it back */
	struct pt_timer		 timer;
	struct upstream_idle	*prev, *next;	/* MRU list, or free list */
	struct pt_addr		 addr;
	union egress_addr	 local;		/* where it left from */
	uint16_t		 port;
	uint16_t		 hostlen;
	char			 host[UPSTREAM_HOST_MAX];
};

static struct upstream_idle	*upstream_slots;
static struct upstream_idle	*upstream_mru;	/* most recently put */
static struct upstream_idle	*upstream_lru;
static struct upstream_idle	*upstream_free;
static unsigned			 upstream_count;
static unsigned			 upstream_idle_ms;

void
upstream_init(unsigned max, unsigned idle_ms)
{
	unsigned	 i;

	upstream_idle_ms = idle_ms;
	if (max == 0)
		return;
	if ((upstream_slots = calloc(max, sizeof(*upstream_slots))) == NULL) {
		pt_log(PT_LOG_WARNING, "upstream keep-alive pool: out of "
		    "memory, disabled");
		return;
	}
	for (i = 0; i < max; i++) {
		upstream_slots[i].next = upstream_free;
		upstream_free = &upstream_slots[i];
	}
}

static void
upstream_unlink(struct upstream_idle *u)
{
	if (u->prev != NULL)
		u->prev->next = u->next;
	else
		upstream_mru = u->next;
	if (u->next != NULL)
		u->next->prev = u->prev;
	else
		upstream_lru = u->prev;
	upstream_count--;
}

/* Detaches <u> from the loop and the list; its fd is the caller's. */
static int
upstream_release(struct upstream_idle *u)
{
	int	 fd = u->io.fd;

	loop_io_stop(&u->io);
	pt_timer_stop(&u->timer);
	upstream_unlink(u);
	u->next = upstream_free;
	upstream_free = u;
	return fd;
}

static void
upstream_on_event(struct loop_io *io, uint32_t events)
{
	/* EOF, RST or unsolicited bytes: none of them leaves a connection
	 * a request could be sent on. */
	close(upstream_release((struct upstream_idle *)io));
}

static void
upstream_on_timer(struct pt_timer *t, void *arg)
{
	close(upstream_release(arg));
}

void
upstream_fini(void)
{
	while (upstream_mru != NULL)
		close(upstream_release(upstream_mru));
	free(upstream_slots);
	upstream_slots = NULL;
	upstream_free = NULL;
}

int
upstream_take(const char *host, size_t hostlen, uint16_t port,
    upstream_fits_fn fits, const void *arg, struct pt_addr *addr_out,
    union egress_addr *local_out, struct loop_io *to, uint32_t events,
    loop_io_fn fn)
{
	struct upstream_idle	*u;
	int			 fd;

	for (u = upstream_mru; u != NULL; u = u->next) {
		if (u->port != port || u->hostlen != hostlen ||
		    strncasecmp(u->host, host, hostlen) != 0 ||
		    !fits(arg, &u->addr, &u->local))
			continue;
		fd = u->io.fd;
		if (loop_io_move(&u->io, to, events, fn) < 0) {
			close(upstream_release(u));
			return -1;
		}
		*addr_out = u->addr;
		*local_out = u->local;
		upstream_release(u);
		return fd;
	}
	return -1;
}

void
upstream_put(const char *host, size_t hostlen, uint16_t port,
    struct loop_io *io, const struct pt_addr *addr,
    const union egress_addr *local)
{
	struct upstream_idle	*u;
	int			 fd = io->fd;

	if (hostlen >= UPSTREAM_HOST_MAX || upstream_slots == NULL) {
		loop_io_stop(io);
		close(fd);
		return;
	}
	if (upstream_free == NULL)
		close(upstream_release(upstream_lru));
	u = upstream_free;
	upstream_free = u->next;
	memcpy(u->host, host, hostlen);
	u->hostlen = (uint16_t)hostlen;
	u->port = port;
	u->addr = *addr;
	u->local = *local;
	if (loop_io_move(io, &u->io, EPOLLIN | EPOLLRDHUP,
	    upstream_on_event) < 0) {
		u->next = upstream_free;
		upstream_free = u;
		loop_io_stop(io);
		close(fd);
		return;
	}
	u->prev = NULL;
	u->next = upstream_mru;
	if (upstream_mru != NULL)
		upstream_mru->prev = u;
	else
		upstream_lru = u;
	upstream_mru = u;
	upstream_count++;
	pt_timer_start(&u->timer, upstream_idle_ms, upstream_on_timer, u);
}

unsigned
upstream_idle_count(void)
{
	return upstream_count;
}

unsigned
upstream_shed(unsigned n)
{
	unsigned	 k = 0;

	while (k < n && upstream_lru != NULL) {
		close(upstream_release(upstream_lru));
		k++;
	}
	return k;
}

int
upstream_socket(int family, int type)
{
	int	 fd = socket(family, type, 0);

	if (fd < 0 && UPSTREAM_SHEDDABLE(errno) && upstream_shed(1) > 0)
		fd = socket(family, type, 0);
	return fd;
}
