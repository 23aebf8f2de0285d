/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A proxied connection: the client leg, the upstream leg, the bytes in
 * flight between them, one timer, and the transaction the modules see.
 */
#ifndef PT_WORKER_CONN_H
#define PT_WORKER_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/epoll.h>
#include <sys/uio.h>

#include "portico/module.h"
#include "common/egress.h"
#include "worker/loop.h"

struct pt_conn;
struct conf_listener;
struct dns_query;
struct pt_addr;
struct proxy_info;
struct proxy_rest;
struct parent_route;
struct pt_via;
struct req_names;
struct target_ops;

enum conn_side_id {
	SIDE_CLIENT = 0,
	SIDE_UPSTREAM = 1,
};

enum conn_state {
	CONN_PHASES = 0,	/* running module hooks before dialing */
	CONN_CONNECTING,	/* upstream connect() in progress */
	CONN_RELAY,		/* tunnel open: bytes flow both ways */
	CONN_CLOSED,
};

/*
 * The interest set of a socket registered once for its whole life,
 * edge-triggered, for everything (socks.c, dial.c, http.c, relay.c): the
 * owner notes every event in conn_side.ready (conn_side_note_events), so
 * handing the socket from one owner to the next costs no epoll_ctl, and
 * the next owner may trust the ready bits instead of trying a read that
 * would fail (relay_start).
 */
#define CONN_SIDE_EVENTS	(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

struct conn_side {
	struct loop_io		 io;		/* io.fd < 0: no socket yet */
	struct pt_conn		*conn;
	/* EPOLLIN/EPOLLOUT seen and not yet used up by an EAGAIN (or a
	 * short read or write of a plain socket): only operations that may
	 * succeed are tried. Every event is noted while io.events is
	 * CONN_SIDE_EVENTS. */
	uint32_t		 ready;
	uint32_t		 t_want;	/* what the transport waits for */
	bool			 rd_eof;	/* peer sent FIN */
	bool			 hup;		/* epoll said EPOLLHUP/ERR */
	bool			 wr_shut;	/* we sent FIN */
	/* The peer reset the socket (or TCP gave up on it): the kernel
	 * closed it and dropped its send queue, so there is nothing left
	 * to reset at close (conn_abort skips it). */
	bool			 reset;
};

/*
 * Bytes moving from one side to the other (relay.c). Invariants, also in
 * doc/internals.md section 11:
 * - buf is a ring: bytes [head, tail) with positions taken modulo its
 *   size, 0 <= head < size (or head == tail == 0), head <= tail <=
 *   head + size; an empty ring is reset to head == tail == 0, so bytes
 *   handed over by http.c or socks.c (a plain [head, tail)) are a ring.
 * - pipe_fill bytes sit in the pipe; a pipe is held iff pipe_r >= 0.
 *   Bytes in buf are older than bytes in the pipe and are written first.
 * - Pending = (tail - head) + pipe_fill. A direction reads while it has
 *   room (free ring space, or a pipe the kernel does not call full), so
 *   reading and writing overlap, bounded by one buffer and one pipe.
 * - At rest with nothing pending and its source drained, a direction
 *   holds neither buffer nor pipe: an idle tunnel holds no payload memory.
 */
struct relay_dir {
	char		*buf;
	uint32_t	 head, tail;
	int		 pipe_r, pipe_w;	/* -1: no pipe held */
	size_t		 pipe_fill;
	bool		 pipe_full;	/* splice in said EAGAIN with bytes in
					 * the pipe: read again after a write */
	bool		 pipe_big;	/* the pipe was grown (relay.c) */
	/* relay.method "auto": the direction is bulk and splices; streak
	 * counts reads in a row that said otherwise (relay_auto_note). */
	bool		 bulk;
	uint8_t		 streak;
	bool		 done;		/* EOF read and passed on */
	/* The destination's transport could not pass the EOF on yet
	 * (shutdown said -EAGAIN) since shut_since (relay.c). */
	bool		 shut_wait;
	uint64_t	 shut_since;
};

/*
 * The byte budget of one direction (pt_conn_budget_set): how many more
 * bytes the core may read from that direction's source. UINT64_MAX, the
 * default, is no limit: readers cap their length with conn_budget_cap (a
 * minimum, no branch) and charge with conn_budget_take (one compare that
 * fails), so an unlimited connection pays nothing more. Index
 * [PT_DIR_UP] is the client's side, as c_dir[SIDE_CLIENT] (doc/internals.md
 * section 11).
 */
struct conn_budget {
	uint64_t	 left;
	/* A datagram cannot be read in part: UDP may read past the budget,
	 * and the next pt_conn_budget_add pays this first. */
	uint64_t	 debt;
	pt_budget_fn	 spent;
	void		*arg;
};

/*
 * Where the dial path stands (target.c), embedded in struct pt_conn
 * (c_target). Invariants: addrs[0..naddrs) are the addresses to try, in
 * order, idx the one being tried (or the one connected); addrs == NULL
 * with naddrs == 0 until the target is known; a pending resolve holds
 * <dns> (cancelled by target_stop).
 */
struct target {
	const struct target_ops	*ops;
	const struct pt_addr	*addrs;
	/* DNS_MAX_ADDRS slots for resolved addresses (protocol state), or
	 * NULL for a protocol that never resolves (tcp). */
	struct pt_addr		*store;
	struct dns_query	*dns;
	int			 naddrs, idx;
	bool			 reused;	/* upstream leg already open */
	bool			 resolved_late;	/* the resolver made us wait */
	/* Since when (loop ms) the upstream socket waits for a descriptor
	 * (target_wait_fd); 0 when it does not. */
	uint64_t		 fd_wait_since;
};

typedef void (*conn_phase_done_fn)(struct pt_conn *c, enum pt_verdict v);

/*
 * What conn.c calls in the layers above it. phase.c, relay.c, target.c,
 * accept.c and every protocol read struct pt_conn, so conn.c includes
 * none of their headers (the include graph of worker/ has no cycle but
 * conn <-> req: doc/internals.md); worker.c, which sees every layer,
 * hands these over before the loop (conn_upcalls_set).
 */
struct conn_upcalls {
	/* phase_run: conn_close and conn_log_txn run LOG and CLOSE, which
	 * never wait, without a <done> callback. */
	void	(*run_phase)(struct pt_conn *c, enum pt_phase phase,
		    conn_phase_done_fn done);
	/* relay_release: gives back both directions' buffers and pipes. */
	void	(*release_dirs)(struct pt_conn *c);
	/* accept_pause_nofile: for conn_pool_nofile. */
	void	(*nofile)(void);
	/* parent_route_release: a route through parents goes with its
	 * connection, with what its handshake held. */
	void	(*release_route)(struct pt_conn *c);
};

struct pt_conn {
	uint64_t			 c_id;
	enum conn_state			 c_state;
	/* The listener it came in on, as configured (common/conf_types.h). */
	const struct conf_listener	*c_listener;
	struct conn_side		 c_side[2];
	struct relay_dir		 c_dir[2];	/* [SIDE_CLIENT]: c->u */
	struct pt_timer			 c_timer;	/* one at a time */
	struct loop_task		 c_post;	/* pump again soon */
	/* Whom the opening of the upstream leg answers: the connect
	 * (dial.c), then its TLS handshake (upstream_tls.c), if any. */
	void				(*c_dial_done)(struct pt_conn *, int);
	uint64_t			 c_dial_us;	/* connect() began */
	/* The transaction began (with c_req.start_ms), in microseconds:
	 * the request-duration histogram wants finer than the loop's ms. */
	uint64_t			 c_start_us;
	uint64_t			 c_last_active;
	struct pt_req			 c_req;
	/* The dial path (target.c) and how a refusal is answered
	 * (pt_conn_answer: reset when a phase starts, module strings). */
	struct target			 c_target;
	struct pt_answer		 c_answer;
	/* Where the upstream leg leaves from (worker/outbound.c): the
	 * egress a module chose for this transaction (pt_conn_set_egress;
	 * NULL: the listener's), the address the upstream socket is bound
	 * to (none: the kernel's choice; kept with a parked upstream) and
	 * the egress that gave it, and whether this transaction's
	 * outgoing connection stands on it (pt_conn_egress). */
	const struct pt_egress		*c_egress;
	/* The parents a module chose for this transaction
	 * (pt_conn_set_via; NULL: the listener's), and the route through
	 * them (worker/parent.h; pooled, kept for the next transaction;
	 * NULL until a choice first applied). */
	const struct pt_via		*c_via;
	struct parent_route		*c_route;
	/* The parent carrying this transaction, its parents[] index + 1;
	 * 0: none (straight to the target). */
	int				 c_parent;
	const struct pt_egress		*c_egress_used;
	union egress_addr		 c_up_local;
	bool				 c_egress_shown;

	/* Where the module phase runner stands (phase.c). */
	enum pt_phase			 c_phase;
	int				 c_hook;
	conn_phase_done_fn		 c_phase_done;
	/* The listener's modules that do not apply (conf_listener). */
	uint32_t			 c_mod_skip;
	bool				 c_waiting;	/* a hook said AGAIN */
	/* A hook said AGAIN since the protocol last cleared it (HTTP: per
	 * request), so the client may have left meanwhile (target.c). */
	bool				 c_waited;
	bool				 c_logged;
	bool				 c_reap_queued;
	/* Cut short (conn_cut): reset, not ended. */
	bool				 c_cut;
	/* SOCKS5 asks for credentials: the listener's default, or what an
	 * ACCEPT hook said (pt_conn_need_credentials). */
	bool				 c_need_creds;

	/* The client leg's transport: the listener's (conn_new). */
	const struct pt_transport	*c_transport;	/* NULL: plain */
	void				*c_tctx;	/* module conn ctx */
	/* The upstream leg's: a module's client session on the socket
	 * (an https parent, worker/upstream_tls.c), freed with the socket
	 * (conn_up_transport_free). Never parked or pooled with it. */
	const struct pt_transport	*c_up_transport; /* NULL: plain */
	void				*c_up_tctx;
	void				(*c_on_ready)(struct pt_conn *);
	/* Protocol state (http.c) and how to release it at close. */
	void				*c_proto;
	void				(*c_proto_free)(struct pt_conn *);
	/* Runs first in conn_close, while the sockets are still open. */
	void				(*c_proto_close)(struct pt_conn *);
	/* The worker starts draining (conn_drain_all). */
	void				(*c_proto_drain)(struct pt_conn *);
	/* pt_req_header's lookup in the protocol's request (http.c), or
	 * NULL when it has no headers; <kept_only>: only those kept for
	 * LOG (PT_MODF_LOG_HEADERS). The phase is checked already. */
	bool				(*c_proto_header)(struct pt_conn *,
					    const char *name, bool kept_only,
					    struct pt_str *value_out);
	/* What modules named (user, label, tags: req.c), or NULL. */
	struct req_names		*c_names;
	/* The connection's own user, set before its first transaction
	 * (a transport, an ACCEPT hook), or NULL. */
	struct req_names		*c_conn_names;
	/* What its PROXY header said (worker/proxy_info.h), or NULL. */
	struct proxy_info		*c_proxy;
	/* The client's bytes read with that header and not taken yet
	 * (conn_recv hands them out first), or NULL. */
	struct proxy_rest		*c_rest;
	/* The header is read ahead into c_rest, the socket watched as the
	 * protocol will (worker/proxy_read.c). */
	bool				 c_proxy_ahead;
	/* The HTTP/2 stream this connection serves (conn_new_stream), whose
	 * client side has no socket of its own; 0: a client connection. */
	uint32_t			 c_stream;
	/* A stream's HTTP/2 connection (pt_conn_owner); NULL once that
	 * one is going (h2_stream_cut). */
	struct pt_conn			*c_owner;
	struct pt_conn			*c_reap_next;
	struct pt_conn			*c_live_prev, *c_live_next;
	/* Byte budgets [PT_DIR_UP], [PT_DIR_DOWN]; c_budget_task calls the
	 * spent callbacks and, when a spent budget gets more, the protocol's
	 * c_budget_resume (its pump: no socket event will come for bytes
	 * already waiting in the kernel). */
	struct conn_budget		 c_budget[2];
	struct loop_task		 c_budget_task;
	uint8_t				 c_budget_due;	/* CONN_BUDGET_* */
	void				(*c_budget_resume)(struct pt_conn *);
	/* Module per-connection state follows, at offsets from phase.c. */
	unsigned char			 c_modctx[];
};

/* c_budget_due: what c_budget_task has to do. */
#define CONN_BUDGET_SPENT(d)	(1u << (d))	/* call c_budget[d].spent */
#define CONN_BUDGET_RESUME	4u		/* call c_budget_resume */

/* The transport wrapping side <s>, or NULL for a plain socket: the
 * listener's on the client leg, a module's client session (an https
 * parent) on the upstream leg. Worker only. */
static inline const struct pt_transport *
conn_transport(const struct pt_conn *c, const struct conn_side *s)
{
	return s == &c->c_side[SIDE_CLIENT] ? c->c_transport :
	    c->c_up_transport;
}

/* ---- worker/conn.c --------------------------------------------------- */

/* Sizes the connection pool for <max> connections with <modctx> bytes of
 * module state each; <ceiling> bytes of connection memory at most (0:
 * none, see conn_pool_full). Worker, before the loop. */
void		 conn_pool_init(unsigned max, size_t modctx, size_t ceiling);
/* Hands conn.c the calls it makes upwards (copied). Worker, before the
 * loop. */
void		 conn_upcalls_set(const struct conn_upcalls *up);
/*
 * limits.worker_memory = "auto": half the memory this process may use
 * (the machine's, or its cgroup's limit when lower), shared among
 * <nworkers>. 0 when it cannot be read.
 */
size_t		 conn_memory_auto(int nworkers);
/* Connections allocated and not yet reaped. */
unsigned	 conn_count(void);
/*
 * True when no connection may be accepted now: max_connections of them
 * are open, or the memory pools hand out (connections, protocol state,
 * buffers) has reached the ceiling. Connections already accepted still
 * get buffers beyond the ceiling: it stops new work, not current work.
 */
bool		 conn_pool_full(void);
/* Which limit conn_pool_full() met, for the log: "max_connections" or
 * "worker_memory". */
const char	*conn_pool_limit(void);
/* An accepted connection found no descriptor for its upstream socket
 * (target.c): accepting pauses as for accept's own EMFILE, so those not
 * accepted yet wait in the listen queue, not in the worker. Worker only. */
void		 conn_pool_nofile(void);
/*
 * Takes ownership of accepted socket <fd> from listener <l>. Returns the
 * new connection, or NULL (fd closed) when the pool is exhausted.
 */
struct pt_conn	*conn_new(const struct conf_listener *l, int fd,
		    const struct sockaddr_storage *peer);
/*
 * A connection for HTTP/2 stream <stream> of <owner> (worker/h2_stream.c):
 * no socket (its client side is virtual: loop_io.virt), its client leg
 * transport <t> with <tctx>, the owner's listener, peer, local address.
 * One of max_connections, counted as a stream, not an accepted
 * connection. NULL when the pool is exhausted.
 */
struct pt_conn	*conn_new_stream(struct pt_conn *owner, uint32_t stream,
		    const struct pt_transport *t, void *tctx);
/*
 * Runs the listener's transport handshake, if any, bounded by
 * header_timeout, then calls <ready> (the protocol's start).
 */
void		 conn_start(struct pt_conn *c, void (*ready)(struct pt_conn *));
/* The next transaction number of this worker (pt_req.txn), from 1.
 * conn_new takes one for the connection's first transaction. */
uint64_t	 conn_txn_next(void);
/*
 * The only way a connection ends: stops and closes both sockets, returns
 * buffers and pipes, runs the LOG phase once unless the protocol already
 * logged its last transaction (c_logged), then the CLOSE phase (exactly
 * once per connection), and queues the memory for conn_reap() so
 * callbacks still on the stack stay valid. Idempotent. <why> is a static
 * string for the debug log and LOG hooks, or NULL.
 */
void		 conn_close(struct pt_conn *c, const char *why);
/* conn_close for a transaction that failed (a reset, a timeout, a forced
 * stop): a socket still holding bytes its peer has not taken is reset
 * rather than left to linger as an orphan (conn.c). */
void		 conn_abort(struct pt_conn *c, const char *why);
/* Closes <c> mid-transaction, cut short: on the proxy's own account
 * (shutdown_timeout, fast stop) or because one side reset (the reset is
 * passed on). Both sockets are reset and a transport writes no close of
 * its own (pt_conn_cut), so neither end takes the cut for an end. */
void		 conn_cut(struct pt_conn *c, const char *why);
/* conn_close for a client answered while it may still be sending (the
 * answer all written): its plain socket lingers (worker/linger.c), so
 * the unread bytes do not turn the close into a reset. */
void		 conn_close_linger(struct pt_conn *c, const char *why);
/*
 * The current transaction ends: sets end_ms, marks it logged, counts it
 * (by protocol and status class, and its duration) and runs LOG. The
 * protocol calls it once per transaction; conn_close calls it for one
 * not logged yet. Worker only.
 */
void		 conn_log_txn(struct pt_conn *c);
/*
 * Frees every connection closed during this loop iteration. Returns true
 * when that gave back a connection slot, or brought the memory pools
 * back under limits.worker_memory: accepting may resume (worker.c tells
 * accept.c, which conn.c sits below). Worker only.
 */
bool		 conn_reap(void);
/* Queues for reaping a closed connection whose module hook has just
 * resumed (phase.c). */
void		 conn_release_waiting(struct pt_conn *c);
/*
 * The upstream leg's transport goes (its free(), while the socket is still
 * open): at conn_close, and wherever the upstream socket is closed before
 * the connection (http_origin.c). Idempotent. Worker only.
 */
void		 conn_up_transport_free(struct pt_conn *c);
/*
 * Socket I/O on one leg, through the leg's transport when it has one
 * (conn_transport). Bytes moved, 0 at EOF (recv), or -errno; on -EAGAIN,
 * s->t_want holds what the transport waits for (EPOLLIN or EPOLLOUT).
 */
ssize_t		 conn_recv(struct pt_conn *c, struct conn_side *s, void *buf,
		    size_t len);
ssize_t		 conn_send(struct pt_conn *c, struct conn_side *s,
		    const void *buf, size_t len);
/* Scatters one receive over <n> buffers (a transport fills the first). */
ssize_t		 conn_recvv(struct pt_conn *c, struct conn_side *s,
		    const struct iovec *iov, int n);
/* Gathers <n> buffers into one send (a transport gets the first). */
ssize_t		 conn_sendv(struct pt_conn *c, struct conn_side *s,
		    const struct iovec *iov, int n);
/*
 * Passes EOF on (shutdown for writing). 0 or -errno; -EAGAIN from a
 * transport that must write first (a TLS close_notify into a full
 * socket): call again once the socket is writable (relay.c bounds the
 * wait); -ECONNRESET when a plain client's socket is already closed by a
 * reset (ENOTCONN; the upstream's ENOTCONN is ignored, its read tells).
 */
int		 conn_shutdown_wr(struct pt_conn *c, struct conn_side *s);
/*
 * Bytes the side's transport holds that conn_recv() returns without the
 * socket becoming readable (SSL_pending): they raise no epoll event, so
 * a reader drains them before it waits for one. 0 on a plain side.
 */
size_t		 conn_pending(struct pt_conn *c, struct conn_side *s);
/*
 * Which directions of side <s>'s socket carry the connection's bytes as
 * they are (PT_PLAIN_RX, PT_PLAIN_TX), so that splice() may move them: both
 * on a plain side, what the transport's plain() says on a side with one
 * (0 without that call). Worker only.
 */
unsigned	 conn_plain(struct pt_conn *c, struct conn_side *s);
/* May a read on <s> find bytes now: epoll said so, or its transport
 * holds some. */
bool		 conn_readable(struct pt_conn *c, struct conn_side *s);
/*
 * Whether the client has sent bytes still waiting in the kernel, or
 * held by its transport (conn_pending): a peek,
 * because on an edge-triggered socket the EPOLLIN may sit later in this
 * epoll batch or in the next one. False at EOF, on an error, or when the
 * client leg is closed. Worker only.
 */
bool		 conn_has_unread(struct pt_conn *c);
/* Notes what epoll reported for an edge-triggered side in <s>->ready:
 * an error or a hang-up marks both directions ready (and <s>->hup), so
 * the next system call tells what happened; a side with a transport is
 * tried both ways on any event. Worker only. */
void		 conn_side_note_events(struct conn_side *s, uint32_t events);
/* Whether <events> on side <s> report the client's socket failed for good
 * (EPOLLERR: the client reset the connection; no system call). A direction blocked on a full destination does not
 * read its source, so without this the reset would go unseen until
 * idle_timeout. Worker only. */
bool		 conn_client_failed(struct pt_conn *c, const struct conn_side *s,
		    uint32_t events);
/* A budget of <d> (PT_DIR_*) that is not unlimited took <n> bytes: may
 * post c_budget_task (conn_budget_take's slow path). Worker only. */
void		 conn_budget_charge(struct pt_conn *c, int d, uint64_t n);

/* How many of <len> bytes direction <d> may read now: <len> when it has
 * no limit, 0 when its budget is spent. */
static inline size_t
conn_budget_cap(const struct pt_conn *c, int d, size_t len)
{
	uint64_t	 left = c->c_budget[d].left;

	return left < len ? (size_t)left : len;
}

/* <n> bytes were read from direction <d>'s source. */
static inline void
conn_budget_take(struct pt_conn *c, int d, uint64_t n)
{
	if (__builtin_expect(c->c_budget[d].left != UINT64_MAX, 0))
		conn_budget_charge(c, d, n);
}

/* Tells every connection the worker is draining. A protocol may close
 * only a connection idle between two transactions of its client, never
 * one whose first request has not arrived yet. */
void		 conn_drain_all(void);
/* Closes every open connection (fast stop, drain timeout). */
void		 conn_close_all(const char *why);

#endif
