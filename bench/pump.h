/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/pump: the tunnel loop of bench/floor and bench/shim. One thread,
 * one epoll set: listeners, accepted tunnels, the dial of their second
 * leg, and the relay that pumps their bytes both ways with the system
 * calls of portico's worker/relay.c. A program adds only its setup: what
 * is said on each leg before the relay starts (pump_ops).
 */
#ifndef BENCH_PUMP_H
#define BENCH_PUMP_H

#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define PUMP_BUF_SIZE	16384		/* relay.buffer_size, per direction */

enum pump_phase { PUMP_SETUP, PUMP_RELAY, PUMP_DEAD };

struct pump;

/* What epoll points at: a leg of a tunnel, or a listener (p == NULL). */
struct pump_side {
	int		 fd;
	uint32_t	 ready;	/* EPOLLIN/OUT seen, not yet used up */
	bool		 hup;	/* peer closed: a short read proves nothing */
	struct pump	*p;
};

/* Side d to side 1-d: bytes in the pipe, or buf[off..len) with copy. */
struct pump_dir {
	int		 pr, pw;	/* -1 until the first read */
	size_t		 fill, off, len;
	bool		 full;		/* EAGAIN with bytes in the pipe */
	bool		 eof, done;	/* read 0; EOF passed on */
	char		*buf;
};

/* One tunnel, first member of the program's own struct: side 0 is the
 * accepted leg, side 1 the dialled one. Owned by the loop from accept to
 * the end of the round that closed it. */
struct pump {
	struct pump_side side[2];
	struct pump_dir	 dir[2];	/* from side 0, from side 1 */
	enum pump_phase	 phase;
	bool		 queued;
	unsigned long	 id;		/* accept order, for logs */
	struct pump	*next, *dead;	/* run queue; reaped after the round */
	size_t		 hs_len;
	char		*hs;		/* the setup's bytes, read so far */
};

/* What a program adds to the loop. */
struct pump_ops {
	size_t		 size;		/* the program's struct, a pump first */
	size_t		 hs_size;	/* room for the setup's bytes */
	bool		 copy;		/* recv()/send(), else splice() */
	/* A tunnel was accepted on <l> and registered with epoll. */
	void		(*on_accept)(struct pump *p, const struct pump_side *l);
	/* Epoll reported <ev> on a leg of a tunnel not closed, its ready
	 * bits already noted; the program calls pump_run when relaying. */
	void		(*on_event)(struct pump_side *s, uint32_t ev);
	/* Before pump_fail closes <p>: "<what>", errno <err> or 0. May be
	 * NULL. */
	void		(*on_fail)(struct pump *p, const char *what, int err);
};

/* Bytes delivered by every tunnel, per direction (d), and tunnels
 * accepted: all the counting the pump does. */
extern unsigned long long pump_sent[2];
extern unsigned long	  pump_accepted;

/* ---- bench/pump.c ---- */

/* Creates the epoll set; <ops> is kept, unchanged, for the process's
 * life. 0, or -1 with errno set. */
int	pump_open(const struct pump_ops *ops);

/* Binds and listens on <sin> (127.0.0.1 or any IPv4), registers <l>, a
 * listener for the process's life. With <get_port> the address bound
 * goes back into <sin> (port 0: the kernel's pick). 0, or -1 with errno
 * set. */
int	pump_listen(struct pump_side *l, struct sockaddr_in *sin,
	    bool get_port);

/* Runs the loop until <*stop> (never when NULL), waiting in epoll_wait,
 * or in epoll_pwait with the signal mask <mask> when not NULL. 0 once
 * stopped, or -1 with errno set when the wait failed. */
int	pump_loop(const sigset_t *mask, volatile sig_atomic_t *stop);

/* Opens side 1 of <p> to <sa> (<len> bytes) and registers it: epoll
 * reports the outcome, EPOLLOUT connected, EPOLLERR refused. 0, or -1
 * with errno set (the fd, if any, is <p>'s). */
int	pump_dial(struct pump *p, const struct sockaddr *sa, socklen_t len);

/* Appends what side <i> has to p->hs, up to ops->hs_size. Bytes read,
 * 0 when the peer closed, -EAGAIN when nothing is ready (the ready bit
 * then cleared), or another -errno. */
ssize_t	pump_read_setup(struct pump *p, int i);

/* Drops the first <n> bytes of p->hs. */
void	pump_consume(struct pump *p, size_t n);

/* Ends the setup: what p->hs still holds goes first in direction <d>,
 * then the relay runs. On failure <p> is closed through pump_fail. */
void	pump_start(struct pump *p, int d);

/* Moves bytes both ways while the ready bits allow, for a bounded number
 * of rounds, then leaves <p> waiting for epoll, queued to go on after
 * the others, or closed (both ways done, or through pump_fail). */
void	pump_run(struct pump *p);

/* Tells ops->on_fail, then closes <p>. */
void	pump_fail(struct pump *p, const char *what, int err);

/* The one exit: closes the fds and the pipes; the memory waits for the
 * end of the round, as other events of the same wait may point at it.
 * Safe twice. */
void	pump_close(struct pump *p);

#endif
