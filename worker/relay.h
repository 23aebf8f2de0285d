/* SPDX-License-Identifier: BSD-2-Clause */
/* Moves bytes both ways between the two legs of a connection. */
#ifndef PT_WORKER_RELAY_H
#define PT_WORKER_RELAY_H

#include <stdint.h>
#include <sys/types.h>

#include "common/conf_types.h"
#include "worker/conn.h"

/*
 * Pipe capacity asked for with F_SETPIPE_SZ. The default 64 KiB (16
 * slots) makes a loaded tunnel cycle splice-in, splice-out, wake-up for
 * every 64 KiB or less. Measured with 8 CONNECT tunnels on a shared
 * 2-core machine, in MiB per CPU-second of the worker: 64 KiB 3,200 to
 * 4,400, 256 KiB 4,600 to 5,000, 1 MiB 4,700 to 6,500 (more spread, four
 * times the pinned pages). A pipe grows to this size only for a bulk
 * transfer (relay.c), and a kernel that refuses (pipe-user-pages-soft
 * reached) leaves the default: it is a hint.
 */
#define RELAY_PIPE_SIZE		(256 * 1024)
/*
 * A pipe is read into until the kernel calls it full, or until it holds
 * RELAY_PIPE_HIGH bytes: slots that hold large fragments take megabytes,
 * and while the destination is blocked each new segment would otherwise
 * cost a splice of its own; beyond that the bytes wait in the socket,
 * which is just as good a buffer.
 */
#define RELAY_PIPE_HIGH		(RELAY_PIPE_SIZE / 2)

/* ---- worker/relay.c -------------------------------------------------- */

/*
 * relay.method "auto": a direction copies until its reads say it is bulk
 * (RELAY_BULK_READS reads in a row of at least half a buffer each, reads
 * of less than RELAY_SMALL ending the streak), then splices
 * until they say it is interactive again (RELAY_SMALL_READS splices in a
 * row that found less than RELAY_SMALL bytes for an empty pipe). A body
 * splices from RELAY_AUTO_BODY_MIN bytes on, or when it ends at close;
 * with "splice", from RELAY_BODY_MIN. Why these: bench/RESULTS.md,
 * "Relay method".
 */
#define RELAY_BULK_READS	2
#define RELAY_SMALL		4096
#define RELAY_SMALL_READS	4
#define RELAY_BODY_MIN		8192
#define RELAY_AUTO_BODY_MIN	65536

/* Sets the method for this worker. Buffers come from worker/buf.h.
 * Worker, before the loop. */
void	 relay_init(enum conf_relay method);
void	 relay_fini(void);
/* Both sockets are open: start pumping. Bytes already in c_dir[d].buf
 * (head..tail, a buffer from worker/buf.h) are written first: an HTTP
 * tunnel hands over what the client sent after its CONNECT head. Closes
 * <c> when both directions are done or on any error. */
void	 relay_start(struct pt_conn *c);
/* Returns buffers and pipes held by <c> (conn_close). */
void	 relay_release(struct pt_conn *c);

/*
 * Bodies of known length or delimited by close, for http_flow.c: the same
 * pooled pipes, one per direction (c_dir[d]), without the tunnel pump.
 * relay_body_splices(len) says whether a body of <len> bytes still to
 * come (UINT64_MAX: until the origin closes) goes through a pipe.
 * relay_splice_in takes a pipe from the pool when <d> holds none and moves
 * at most <len> bytes from socket <fd> into it: bytes, 0 at EOF, or -errno
 * (-EAGAIN: the socket is empty when d->pipe_fill is 0, else the pipe may
 * be full; other errors from pipe2 mean no pipe: read through a buffer).
 * relay_splice_out moves what the pipe holds to socket <fd>: bytes or
 * -errno. Either gives an empty pipe back to the pool, so a connection
 * between messages holds none. Worker.
 */
bool	 relay_body_splices(uint64_t len);
ssize_t	 relay_splice_in(struct relay_dir *d, int fd, size_t len);
ssize_t	 relay_splice_out(struct relay_dir *d, int fd);

#endif
