/* SPDX-License-Identifier: BSD-2-Clause */
/* The worker's event loop: epoll for descriptors, a heap for timers. */
#ifndef PT_WORKER_LOOP_H
#define PT_WORKER_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "portico/module.h"

struct loop_io;
typedef void (*loop_io_fn)(struct loop_io *io, uint32_t events);

/* Embedded in whatever owns the descriptor; epoll hands it back. */
struct loop_io {
	int		 fd;
	uint32_t	 events;	/* registered interest */
	bool		 added;
	/* No descriptor behind it: an HTTP/2 stream's client side
	 * (worker/h2_stream.c), whose owner calls fn itself. start, set,
	 * stop and close only note the interest and the callback, so the
	 * code above drives it as it drives a socket. */
	bool		 virt;
	loop_io_fn	 fn;
};

/* Work to run again soon, after the events of this round: an edge-
 * triggered user that stopped for fairness with bytes still to move
 * gets no new event to wake it, so it posts itself instead. */
struct loop_task;
typedef void (*loop_task_fn)(struct loop_task *t);
struct loop_task {
	struct loop_task	*next;
	loop_task_fn		 fn;
	bool			 posted;
};

/* ---- worker/loop.c --------------------------------------------------- */

/* Creates the epoll instance. Worker, before the loop. 0 or -errno. */
int		 loop_init(void);
void		 loop_fini(void);
/* Watches <fd> for <events> (EPOLLIN/EPOLLOUT; level-triggered unless
 * <events> has EPOLLET, as a connection's sockets do: CONN_SIDE_EVENTS).
 * 0 or -errno. */
int		 loop_io_start(struct loop_io *io, int fd, uint32_t events,
		    loop_io_fn fn);
/* Changes the interest set; a no-op when it is unchanged. */
int		 loop_io_set(struct loop_io *io, uint32_t events);
/* Hands <from>'s registration to <to> (another owner of the same fd)
 * with <events>, in one epoll_ctl. 0 or -errno (then <from> keeps it). */
int		 loop_io_move(struct loop_io *from, struct loop_io *to,
		    uint32_t events, loop_io_fn fn);
/* Stops watching (before the owner closes the fd). Idempotent. */
void		 loop_io_stop(struct loop_io *io);
/* Drops <io>'s events still to be delivered in the current batch, for an
 * owner that frees it before the round ends (a module's pt_io). */
void		 loop_io_forget(struct loop_io *io);
/*
 * Closes <io>'s descriptor (if >= 0) and forgets its registration without
 * an EPOLL_CTL_DEL: epoll drops a descriptor when the last reference to
 * its file goes, and a connection's sockets have no other (workers never
 * fork or dup them; listeners, shared with the master, use
 * loop_io_stop). Sets io->fd to -1.
 */
void		 loop_io_close(struct loop_io *io);
/* Waits for events at most until the next timer, runs callbacks and due
 * timers. Returns 0, or -errno when epoll_wait failed (not EINTR). */
int		 loop_once(void);
/* Runs <t> once after this round's events (the next epoll_wait does not
 * block). Posting a posted task is a no-op. The owner must keep <t>
 * valid until it ran (connections are reaped after the round). */
void		 loop_post(struct loop_task *t, loop_task_fn fn);
/* Re-reads the monotonic clock into loop_now(). */
void		 loop_update_time(void);
uint64_t	 loop_now(void);
/* Tests only: freezes the clock at <ms> (loop_update_time then no-ops). */
void		 loop_set_time(uint64_t ms);
/* Runs every timer due at loop_now(); returns how many ran. */
int		 loop_run_timers(void);
/* Milliseconds until the next timer, or -1 when none. */
int		 loop_next_timeout(void);
unsigned	 loop_timer_count(void);

#endif
