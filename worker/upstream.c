/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The upstream keep-alive pool. An idle origin connection is watched for
 * readability: an origin that closes, or speaks out of turn, makes it
 * useless, so it is closed at once rather than found dead by the next
 * request. Entries live in arrays: one sized at start-up
 * (upstream_keepalive), more while HTTP/2 connections reserve room
 * (upstream_reserve); the pool is a most-recently-used list threaded
 * through them, so take, put and eviction are O(entries) at worst and
 * allocate nothing but a new array when the room grew.
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

/* Entries are allocated in arrays, never moved (epoll holds their
 * address) and freed at the end only: what the peak reservation grew
 * stays, bounded by it. */
struct upstream_chunk {
	struct upstream_chunk	*next;
	struct upstream_idle	 slots[];
};

/* Entries added at a time when a reservation makes room. */
#define UPSTREAM_CHUNK		64

static struct upstream_chunk	*upstream_chunks;
static unsigned			 upstream_slots;	/* allocated */
static unsigned			 upstream_base;	/* upstream_keepalive */
static unsigned			 upstream_reserved;
static struct upstream_idle	*upstream_mru;	/* most recently put */
static struct upstream_idle	*upstream_lru;
static struct upstream_idle	*upstream_free;
static unsigned			 upstream_count;
static unsigned			 upstream_idle_ms;

/* <n> more free entries; false when out of memory. */
static bool
upstream_grow(unsigned n)
{
	struct upstream_chunk	*ch;
	unsigned		 i;

	ch = calloc(1, sizeof(*ch) + (size_t)n * sizeof(ch->slots[0]));
	if (ch == NULL)
		return false;
	ch->next = upstream_chunks;
	upstream_chunks = ch;
	for (i = 0; i < n; i++) {
		ch->slots[i].next = upstream_free;
		upstream_free = &ch->slots[i];
	}
	upstream_slots += n;
	return true;
}

void
upstream_init(unsigned max, unsigned idle_ms)
{
	upstream_idle_ms = idle_ms;
	upstream_base = max;
	if (max > 0 && !upstream_grow(max)) {
		upstream_base = 0;
		pt_log(PT_LOG_WARNING, "upstream keep-alive pool: out of "
		    "memory, disabled");
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
	struct upstream_chunk	*ch;

	while (upstream_mru != NULL)
		close(upstream_release(upstream_mru));
	while ((ch = upstream_chunks) != NULL) {
		upstream_chunks = ch->next;
		free(ch);
	}
	upstream_slots = upstream_reserved = 0;
	upstream_free = NULL;
}

void
upstream_reserve(unsigned n)
{
	if (upstream_base > 0)
		upstream_reserved += n;
}

void
upstream_unreserve(unsigned n)
{
	if (upstream_base == 0)
		return;
	upstream_reserved -= n < upstream_reserved ? n : upstream_reserved;
	while (upstream_count > upstream_base + upstream_reserved)
		close(upstream_release(upstream_lru));
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
	unsigned		 cap, grow;

	if (hostlen >= UPSTREAM_HOST_MAX || upstream_base == 0) {
		loop_io_stop(io);
		close(fd);
		return;
	}
	/* Full, the oldest goes. Room that a reservation made may first
	 * need its entries. */
	cap = upstream_base + upstream_reserved;
	if (upstream_count < cap && upstream_free == NULL) {
		grow = cap - upstream_slots;
		if (grow > UPSTREAM_CHUNK)
			grow = UPSTREAM_CHUNK;
		(void)upstream_grow(grow);
	}
	if (upstream_count >= cap || upstream_free == NULL)
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
