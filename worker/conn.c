/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection life cycle: allocation from the worker's pool, the single
 * timer, and the single exit, conn_close(). Protocol logic (tcp.c,
 * http.c, socks.c) and byte pumping (relay.c) live elsewhere; this file
 * only guarantees that every connection ends exactly once, that its LOG
 * hooks run, and that its memory outlives every callback on the stack.
 * Those files all sit above this one: what it needs of them (the phase
 * runner, the relay's buffers, accept's pause) it reaches through the
 * calls worker.c handed over (struct conn_upcalls), and what it freed it
 * reports to worker.c (conn_reap).
 */
#include "config.h"

#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/conn.h"
#include "worker/linger.h"
#include "common/counters.h"
#include "common/log.h"
#include "common/sockaddr.h"
#include "common/conf_types.h"
#include "worker/pool.h"
#include "worker/proxy_info.h"
#include "worker/req.h"
#include "worker/worker_self.h"

static struct pool	 conn_pool;
static struct conn_upcalls conn_up;
static struct pt_conn	*conn_reap_list;
static uint64_t		 conn_next_id;
static uint64_t		 conn_txn_last;
/* Every open connection, for conn_close_all(). */
static struct pt_conn	*conn_live;

/* Empty pool slabs are given back by a trim this often, while there are
 * any (pool.h: a pool keeps what the last interval's peak needed). */
#define CONN_TRIM_MS	1000

static struct pt_timer	 conn_trim_timer;

/* limits.worker_memory in bytes, 0: none. */
static size_t		 conn_mem_ceiling;
/* Accepting stopped at the ceiling: conn_reap says it may resume when
 * memory falls below, even if no connection was reaped (buffers came
 * back). */
static bool		 conn_mem_hit;

void
conn_pool_init(unsigned max, size_t modctx, size_t ceiling)
{
	pool_init(&conn_pool, "conn", sizeof(struct pt_conn) + modctx, max);
	conn_mem_ceiling = ceiling;
}

void
conn_upcalls_set(const struct conn_upcalls *up)
{
	conn_up = *up;
}

/* The first number on the line of <path> that starts with <key> (the whole
 * file when key is ""), or 0. "max" (cgroup v2: no limit) reads as 0. */
static unsigned long long
conn_read_number(const char *path, const char *key)
{
	char			 line[256];
	unsigned long long	 v = 0;
	size_t			 klen = strlen(key);
	FILE			*f;

	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, key, klen) != 0)
			continue;
		v = strtoull(line + klen, NULL, 10);
		break;
	}
	fclose(f);
	return v;
}

size_t
conn_memory_auto(int nworkers)
{
	unsigned long long	 mem, cg;

	/* kB in /proc/meminfo; bytes in the cgroup files (v2, then v1,
	 * whose "no limit" is a huge number and so never the lower). */
	mem = conn_read_number("/proc/meminfo", "MemTotal:") * 1024;
	cg = conn_read_number("/sys/fs/cgroup/memory.max", "");
	if (cg == 0)
		cg = conn_read_number(
		    "/sys/fs/cgroup/memory/memory.limit_in_bytes", "");
	if (cg != 0 && (mem == 0 || cg < mem))
		mem = cg;
	if (mem == 0 || nworkers < 1)
		return 0;
	return (size_t)(mem / 2 / (unsigned)nworkers);
}

unsigned
conn_count(void)
{
	return conn_pool.in_use;
}

bool
conn_pool_full(void)
{
	if (conn_pool.limit != 0 && conn_pool.in_use >= conn_pool.limit)
		return true;
	if (conn_mem_ceiling != 0 && pool_bytes_total() >= conn_mem_ceiling) {
		conn_mem_hit = true;
		return true;
	}
	return false;
}

const char *
conn_pool_limit(void)
{
	if (conn_mem_ceiling != 0 && pool_bytes_total() >= conn_mem_ceiling)
		return "worker_memory";
	return "max_connections";
}

void
conn_pool_nofile(void)
{
	conn_up.nofile();
}

static void
conn_side_init(struct pt_conn *c, enum conn_side_id id)
{
	struct conn_side	*s = &c->c_side[id];

	memset(s, 0, sizeof(*s));
	s->io.fd = -1;
	s->conn = c;
}

static void
conn_live_add(struct pt_conn *c)
{
	c->c_live_prev = NULL;
	c->c_live_next = conn_live;
	if (conn_live != NULL)
		conn_live->c_live_prev = c;
	conn_live = c;
}

static void
conn_live_del(struct pt_conn *c)
{
	if (c->c_live_prev != NULL)
		c->c_live_prev->c_live_next = c->c_live_next;
	else
		conn_live = c->c_live_next;
	if (c->c_live_next != NULL)
		c->c_live_next->c_live_prev = c->c_live_prev;
}

/* What every connection starts with, from listener <l>: fresh state,
 * no socket, no pipe, no budget limit, its first transaction's number
 * and clock. */
static void
conn_init(struct pt_conn *c, const struct conf_listener *l)
{
	memset(c, 0, conn_pool.size);
	c->c_id = ++conn_next_id;
	c->c_listener = l;
	c->c_state = CONN_PHASES;
	conn_side_init(c, SIDE_CLIENT);
	conn_side_init(c, SIDE_UPSTREAM);
	c->c_dir[0].pipe_r = c->c_dir[0].pipe_w = -1;
	c->c_dir[1].pipe_r = c->c_dir[1].pipe_w = -1;
	c->c_budget[PT_DIR_UP].left = c->c_budget[PT_DIR_DOWN].left =
	    UINT64_MAX;
	c->c_req.listener = l->name;
	c->c_req.listener_idx = l->idx;
	c->c_req.txn = conn_txn_next();
	c->c_req.start_ms = loop_now();
	c->c_start_us = counters_now_us();
	c->c_mod_skip = l->mod_skip;
	c->c_need_creds = l->need_credentials;
	c->c_last_active = loop_now();
}

struct pt_conn *
conn_new(const struct conf_listener *l, int fd,
    const struct sockaddr_storage *peer)
{
	struct pt_conn	*c;
	socklen_t	 len;

	if ((c = pool_get(&conn_pool)) == NULL) {
		close(fd);
		return NULL;
	}
	conn_init(c, l);
	c->c_side[SIDE_CLIENT].io.fd = fd;
	c->c_req.peer = *peer;
	/* Only modules read the local address: no syscall when none is
	 * loaded. */
	if (worker_self()->conf->nmodules > 0) {
		len = sizeof(c->c_req.local);
		getsockname(fd, (struct sockaddr *)&c->c_req.local, &len);
	}
	if (l->transport_mod != NULL) {
		c->c_transport = l->transport_mod->transport;
		c->c_tctx = pt_conn_ctx(c, l->transport_mod);
	}
	/* TCP_NODELAY comes from the listener (listen.c): inherited. */
	conn_live_add(c);
	counters_add(CTR_ACCEPTED, 1);
	counters_add(CTR_ACTIVE, 1);
	return c;
}

struct pt_conn *
conn_new_stream(struct pt_conn *owner, uint32_t stream,
    const struct pt_transport *t, void *tctx)
{
	struct pt_conn	*c;
	socklen_t	 len;

	if ((c = pool_get(&conn_pool)) == NULL)
		return NULL;
	conn_init(c, owner->c_listener);
	c->c_side[SIDE_CLIENT].io.virt = true;
	c->c_stream = stream;
	c->c_owner = owner;
	/* Egress "same" reads the local address, and a stream has no
	 * socket to ask: the connection's, asked once for all its
	 * streams. */
	if (owner->c_req.local.ss_family == AF_UNSPEC) {
		len = sizeof(owner->c_req.local);
		getsockname(owner->c_side[SIDE_CLIENT].io.fd,
		    (struct sockaddr *)&owner->c_req.local, &len);
	}
	c->c_req.peer = owner->c_req.peer;
	c->c_req.local = owner->c_req.local;
	c->c_transport = t;
	c->c_tctx = tctx;
	conn_live_add(c);
	counters_add(CTR_ACTIVE, 1);
	counters_add(CTR_H2_STREAMS, 1);
	return c;
}

static void
conn_handshake_step(struct pt_conn *c)
{
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];
	uint32_t		 want = EPOLLIN;
	int			 rc;

	rc = c->c_transport->handshake(c, s->io.fd, c->c_tctx, &want);
	if (rc == -EAGAIN) {
		if (loop_io_set(&s->io, want ? want : EPOLLIN) < 0)
			conn_close(c, "epoll_ctl");
		return;
	}
	if (rc < 0) {
		/* What the transport answered (tls: a plain 400 to plain
		 * HTTP) must not be lost to a reset over the unread rest. */
		if (!s->reset)
			(void)linger_take(&s->io);
		conn_close(c, "transport handshake failed");
		return;
	}
	pt_timer_stop(&c->c_timer);
	loop_io_set(&s->io, 0);
	/* A transaction may start now (conn_start). */
	c->c_logged = false;
	c->c_on_ready(c);
}

static void
conn_on_handshake_io(struct loop_io *io, uint32_t events)
{
	conn_handshake_step(((struct conn_side *)io)->conn);
}

static void
conn_on_handshake_timeout(struct pt_timer *t, void *arg)
{
	conn_close(arg, "transport handshake timed out");
}

void
conn_start(struct pt_conn *c, void (*ready)(struct pt_conn *))
{
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];

	if (c->c_transport == NULL || c->c_transport->handshake == NULL) {
		ready(c);
		return;
	}
	c->c_on_ready = ready;
	/* Until the handshake is done there is no transaction: a probe, a
	 * health check or a failed handshake is the error log's (the
	 * transport says why), not a line in the access log, as a plain
	 * listener logs no connection that sent no request. */
	c->c_logged = true;
	if (loop_io_start(&s->io, s->io.fd, EPOLLIN, conn_on_handshake_io) < 0) {
		conn_close(c, "epoll_ctl");
		return;
	}
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.header_timeout_ms,
	    conn_on_handshake_timeout, c);
	conn_handshake_step(c);
}

static void
conn_side_close(struct conn_side *s)
{
	/* No EPOLL_CTL_DEL: the close drops the registration (loop.h). */
	loop_io_close(&s->io);
}

/* Idempotent: a module may resume (and so release) a connection from its
 * LOG hook, inside conn_close, which then must not queue it again. */
static void
conn_reap_queue(struct pt_conn *c)
{
	if (c->c_reap_queued)
		return;
	c->c_reap_queued = true;
	c->c_reap_next = conn_reap_list;
	conn_reap_list = c;
}

uint64_t
conn_txn_next(void)
{
	return ++conn_txn_last;
}

/*
 * The HTTP status a transaction's outcome stands for, as the access
 * log's squid format has it: SOCKS reply codes and TCP outcomes mapped,
 * 0 when nothing was answered.
 */
static int
conn_txn_status(const struct pt_req *r)
{
	switch (r->proto) {
	case PT_PROTO_SOCKS4:
		return r->status == 0x5a ? 200 : r->status == 0 ? 0 : 403;
	case PT_PROTO_TCP:
		return r->error == NULL ? 200 : 502;
	case PT_PROTO_SOCKS5:
	case PT_PROTO_UDP:
		break;
	default:
		return r->status;
	}
	switch (r->status) {
	case 0x00:
		return r->error == NULL || r->bytes_in + r->bytes_out > 0 ?
		    200 : 0;
	case 0x02:
		return 403;
	case 0x03: case 0x04: case 0x05:
		return 502;
	case 0x06:
		return 504;
	case 0x07: case 0x08:
		return 501;
	default:
		return 500;
	}
}

void
conn_log_txn(struct pt_conn *c)
{
	uint64_t	 now = loop_now();

	c->c_req.end_ms = now;
	c->c_logged = true;
	counters_txn((int)c->c_req.proto, conn_txn_status(&c->c_req),
	    counters_now_us() - c->c_start_us);
	conn_up.run_phase(c, PT_PHASE_LOG, NULL);
}

void
conn_up_transport_free(struct pt_conn *c)
{
	const struct pt_transport	*t = c->c_up_transport;

	c->c_up_transport = NULL;
	if (t != NULL && t->free != NULL)
		t->free(c, c->c_up_tctx);
	c->c_up_tctx = NULL;
	c->c_side[SIDE_UPSTREAM].t_want = 0;
}

void
conn_close(struct pt_conn *c, const char *why)
{
	if (c->c_state == CONN_CLOSED)
		return;
	c->c_state = CONN_CLOSED;
	conn_live_del(c);
	if (c->c_proto_close != NULL)
		c->c_proto_close(c);
	pt_timer_stop(&c->c_timer);
	if (why != NULL && c->c_req.error == NULL)
		c->c_req.error = why;
	if (c->c_transport != NULL && c->c_transport->free != NULL)
		c->c_transport->free(c, c->c_tctx);
	c->c_transport = NULL;
	conn_up_transport_free(c);
	conn_side_close(&c->c_side[SIDE_CLIENT]);
	conn_side_close(&c->c_side[SIDE_UPSTREAM]);
	conn_up.release_dirs(c);
	if (!c->c_logged)
		conn_log_txn(c);
	else
		c->c_req.end_ms = loop_now();
	/* CLOSE here, not at reap: once per connection even when a module
	 * still holds it (AGAIN), while the request's strings still point
	 * into live protocol state. */
	conn_up.run_phase(c, PT_PHASE_CLOSE, NULL);
	/* After LOG: the request's strings may live in the protocol state. */
	if (c->c_proto_free != NULL)
		c->c_proto_free(c);
	c->c_proto_free = NULL;
	counters_add(CTR_ACTIVE, -1);
	counters_add(CTR_CLOSED, 1);
	if (why != NULL)
		pt_clog(c, PT_LOG_DEBUG, "closed: %s", why);
	/* A module still holding the connection (it answered AGAIN) will
	 * call pt_conn_resume(); the memory is reaped after that. */
	if (!c->c_waiting)
		conn_reap_queue(c);
}

/*
 * A socket closed with bytes in its send queue lives on in the kernel as
 * an orphan in FIN-WAIT-1, holding that memory for as long as its peer
 * keeps the window shut (minutes, tcp_orphan_retries): a client that
 * never reads can pile those up faster than they go. Where the
 * transaction failed anyway, such a socket is reset (SO_LINGER 0), which
 * frees it at once; one with nothing queued still ends with a FIN, and a
 * finished answer (conn_close) always gets its data out first.
 */
static void
conn_side_abort(struct conn_side *s)
{
	static const struct linger	 rst = { 1, 0 };
	int				 queued;

	if (s->io.fd >= 0 && !s->reset && ioctl(s->io.fd, SIOCOUTQ, &queued) == 0 &&
	    queued > 0)
		(void)setsockopt(s->io.fd, SOL_SOCKET, SO_LINGER, &rst,
		    sizeof(rst));
}

void
conn_close_linger(struct pt_conn *c, const char *why)
{
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];

	/* A transport (TLS) writes its own close; a reset socket is gone. */
	if (c->c_state != CONN_CLOSED && c->c_transport == NULL &&
	    !s->reset && s->io.fd >= 0)
		(void)linger_take(&s->io);
	conn_close(c, why);
}

void
conn_abort(struct pt_conn *c, const char *why)
{
	if (c->c_state == CONN_CLOSED)
		return;
	conn_side_abort(&c->c_side[SIDE_CLIENT]);
	conn_side_abort(&c->c_side[SIDE_UPSTREAM]);
	conn_close(c, why);
}

static void
conn_on_trim(struct pt_timer *t, void *arg)
{
	if (pool_trim_all())
		pt_timer_start(&conn_trim_timer, CONN_TRIM_MS, conn_on_trim,
		    NULL);
}

/* conn_reap's work when there is some. Out of line so that the common
 * round, with nothing to reap, saves no registers. */
static bool __attribute__((noinline))
conn_reap_list_free(void)
{
	struct pt_conn	*c, *later = NULL;
	bool		 freed = false;

	while ((c = conn_reap_list) != NULL) {
		conn_reap_list = c->c_reap_next;
		/* A task posted while the posted tasks ran (a pump that
		 * spent a budget, then closed) runs in the next round, in
		 * this memory: wait for it. */
		if (c->c_budget_task.posted || c->c_post.posted) {
			c->c_reap_next = later;
			later = c;
			continue;
		}
		req_names_free(c);
		if (c->c_proxy != NULL)
			pool_put(pool_of(c->c_proxy), c->c_proxy);
		if (c->c_rest != NULL)
			pool_put(pool_of(c->c_rest), c->c_rest);
		if (c->c_route != NULL && conn_up.release_route != NULL)
			conn_up.release_route(c);
		pool_put(&conn_pool, c);
		freed = true;
	}
	conn_reap_list = later;
	if (conn_mem_hit && pool_bytes_total() < conn_mem_ceiling) {
		conn_mem_hit = false;
		freed = true;
	}
	return freed;
}

bool
conn_reap(void)
{
	bool	 freed = false;

	/* Every loop round calls this, and almost every round has nothing
	 * to reap: that case costs two loads. */
	if (conn_reap_list != NULL || conn_mem_hit)
		freed = conn_reap_list_free();
	if (pool_trim_wanted() && conn_trim_timer.heap_idx == 0)
		pt_timer_start(&conn_trim_timer, CONN_TRIM_MS, conn_on_trim,
		    NULL);
	return freed;
}

void
conn_release_waiting(struct pt_conn *c)
{
	conn_reap_queue(c);
}

void
conn_side_note_events(struct conn_side *s, uint32_t events)
{
	s->ready |= events & (EPOLLIN | EPOLLOUT);
	if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
		s->ready |= EPOLLIN | EPOLLOUT;
		s->hup = true;
	}
	if (events & EPOLLERR)		/* fatal: conn_client_failed */
		s->reset = true;
	/* A transport's readiness does not map to one direction. */
	if (s->t_want != 0)
		s->ready |= EPOLLIN | EPOLLOUT;
}

/*
 * EPOLLERR on a TCP socket is a pending error or something on its error
 * queue (tcp_poll), and nothing here fills that queue (no timestamping,
 * zero-copy or IP_RECVERR on connection sockets). In an established
 * connection the pending error is set only by a reset or by a give-up
 * on retransmissions, both fatal: the event is proof enough, and a
 * client's reset costs no getsockopt.
 */
bool
conn_client_failed(struct pt_conn *c, const struct conn_side *s,
    uint32_t events)
{
	return s == &c->c_side[SIDE_CLIENT] && (events & EPOLLERR) &&
	    s->io.fd >= 0;
}

bool
conn_has_unread(struct pt_conn *c)
{
	int	 fd = c->c_side[SIDE_CLIENT].io.fd;
	char	 b;

	/* Bytes a transport already took from the socket are unread too. */
	if (conn_pending(c, &c->c_side[SIDE_CLIENT]) > 0)
		return true;
	/* Behind a transport (tls) the peeked byte is a record, not a
	 * request byte; it still means the client is talking. */
	return fd >= 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

void
conn_drain_all(void)
{
	struct pt_conn	*c, *next;

	for (c = conn_live; c != NULL; c = next) {
		next = c->c_live_next;
		if (c->c_proto_drain != NULL)
			c->c_proto_drain(c);
	}
}

void
conn_cut(struct pt_conn *c, const char *why)
{
	static const struct linger	 rst = { 1, 0 };
	int				 i;

	if (c->c_state == CONN_CLOSED)
		return;
	/* A FIN after the last byte would read as the natural end of a
	 * tunnel or of a body that runs to the close, cut or not. */
	c->c_cut = true;
	for (i = 0; i < 2; i++)
		if (c->c_side[i].io.fd >= 0 && !c->c_side[i].reset)
			(void)setsockopt(c->c_side[i].io.fd, SOL_SOCKET,
			    SO_LINGER, &rst, sizeof(rst));
	conn_close(c, why);
}

uint32_t
pt_conn_stream(const struct pt_conn *c)
{
	return c->c_stream;
}

bool
pt_conn_http2(const struct pt_conn *c)
{
	return c->c_listener->http2;
}

struct pt_conn *
pt_conn_owner(struct pt_conn *c)
{
	return c->c_owner != NULL ? c->c_owner : c;
}

bool
pt_conn_cut(const struct pt_conn *c)
{
	return c->c_cut;
}

void
conn_close_all(const char *why)
{
	while (conn_live != NULL)
		conn_cut(conn_live, why);
}

/* The state conn_transport(c, s) works on. */
static void *
conn_tctx(struct pt_conn *c, struct conn_side *s)
{
	return s == &c->c_side[SIDE_CLIENT] ? c->c_tctx : c->c_up_tctx;
}

/* -errno of a failed call on <s>'s plain socket, noting a reset. */
static ssize_t
conn_side_errno(struct conn_side *s)
{
	if (errno == ECONNRESET)
		s->reset = true;
	return -errno;
}

/*
 * The client's bytes that came with its PROXY header (c_rest), before
 * any read of the socket; the block goes back once they are taken. When
 * the header's read filled the block, the socket may hold more, so the
 * read that takes the last of it goes on to the socket: a short read
 * then still means "drained", as callers of a plain socket take it.
 */
static ssize_t
conn_recv_rest(struct pt_conn *c, void *buf, size_t len)
{
	struct proxy_rest	*r = c->c_rest;
	size_t			 n = (size_t)(r->len - r->off);
	ssize_t			 more = 0;
	bool			 go_on;

	if (n > len)
		n = len;
	memcpy(buf, r->b + r->off, n);
	r->off = (uint16_t)(r->off + n);
	if (r->off < r->len)
		return (ssize_t)n;
	go_on = r->more && n < len;
	pool_put(pool_of(r), r);
	c->c_rest = NULL;
	if (go_on)
		more = recv(c->c_side[SIDE_CLIENT].io.fd, (char *)buf + n,
		    len - n, 0);
	return (ssize_t)n + (more > 0 ? more : 0);
}

ssize_t
conn_recv(struct pt_conn *c, struct conn_side *s, void *buf, size_t len)
{
	const struct pt_transport	*t = conn_transport(c, s);
	ssize_t				 n;

	if (__builtin_expect(c->c_rest != NULL, 0) &&
	    s == &c->c_side[SIDE_CLIENT] && len > 0)
		return conn_recv_rest(c, buf, len);

	if (t != NULL) {
		s->t_want = EPOLLIN;
		n = t->read(c, s->io.fd, conn_tctx(c, s), buf, len,
		    &s->t_want);
		if (n >= 0)
			s->t_want = 0;
		return n;
	}
	n = recv(s->io.fd, buf, len, 0);
	return n < 0 ? conn_side_errno(s) : n;
}

ssize_t
conn_send(struct pt_conn *c, struct conn_side *s, const void *buf,
    size_t len)
{
	const struct pt_transport	*t = conn_transport(c, s);
	ssize_t				 n;

	if (t != NULL) {
		s->t_want = EPOLLOUT;
		n = t->write(c, s->io.fd, conn_tctx(c, s), buf, len,
		    &s->t_want);
		if (n >= 0)
			s->t_want = 0;
		return n;
	}
	n = send(s->io.fd, buf, len, MSG_NOSIGNAL);
	return n < 0 ? conn_side_errno(s) : n;
}

ssize_t
conn_recvv(struct pt_conn *c, struct conn_side *s, const struct iovec *iov,
    int n)
{
	ssize_t	 r;

	if (n == 1 || conn_transport(c, s) != NULL ||
	    (c->c_rest != NULL && s == &c->c_side[SIDE_CLIENT]))
		return conn_recv(c, s, iov[0].iov_base, iov[0].iov_len);
	r = readv(s->io.fd, iov, n);
	return r < 0 ? conn_side_errno(s) : r;
}

ssize_t
conn_sendv(struct pt_conn *c, struct conn_side *s, const struct iovec *iov,
    int n)
{
	struct msghdr	 msg;
	ssize_t		 r;

	if (n == 1 || conn_transport(c, s) != NULL)
		return conn_send(c, s, iov[0].iov_base, iov[0].iov_len);
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = (struct iovec *)(uintptr_t)iov;
	msg.msg_iovlen = (size_t)n;
	r = sendmsg(s->io.fd, &msg, MSG_NOSIGNAL);
	return r < 0 ? conn_side_errno(s) : r;
}

size_t
conn_pending(struct pt_conn *c, struct conn_side *s)
{
	const struct pt_transport	*t = conn_transport(c, s);

	if (c->c_rest != NULL && s == &c->c_side[SIDE_CLIENT])
		return (size_t)(c->c_rest->len - c->c_rest->off);
	if (t == NULL || t->pending == NULL || (s->io.fd < 0 && !s->io.virt))
		return 0;
	return t->pending(c, conn_tctx(c, s));
}

unsigned
conn_plain(struct pt_conn *c, struct conn_side *s)
{
	const struct pt_transport	*t = conn_transport(c, s);

	/* Bytes read with a PROXY header go first: no splice from the
	 * socket past them. */
	if (c->c_rest != NULL && s == &c->c_side[SIDE_CLIENT])
		return PT_PLAIN_TX;
	if (t == NULL)
		return PT_PLAIN_RX | PT_PLAIN_TX;
	if (t->plain == NULL || s->io.fd < 0)
		return 0;
	return t->plain(c, s->io.fd, conn_tctx(c, s)) &
	    (PT_PLAIN_RX | PT_PLAIN_TX);
}

bool
conn_readable(struct pt_conn *c, struct conn_side *s)
{
	return (s->ready & EPOLLIN) || conn_pending(c, s) > 0;
}

int
conn_shutdown_wr(struct pt_conn *c, struct conn_side *s)
{
	const struct pt_transport	*t = conn_transport(c, s);
	int				 rc;

	if (t != NULL && t->shutdown != NULL)
		rc = t->shutdown(c, s->io.fd, conn_tctx(c, s));
	else
		rc = shutdown(s->io.fd, SHUT_WR) < 0 ? -errno : 0;
	/* A connected client's socket says ENOTCONN only once it is closed
	 * for good: the client reset it (its EPOLLERR may still be on its
	 * way). Such a client is gone (conn_client_failed): say so now
	 * rather than a round and a getsockopt later. */
	if (rc == -ENOTCONN && t == NULL && s == &c->c_side[SIDE_CLIENT]) {
		s->reset = true;
		return -ECONNRESET;
	}
	if (rc < 0 && rc != -ENOTCONN)
		return rc;
	s->wr_shut = true;
	return 0;
}

void
pt_conn_close(struct pt_conn *c, const char *reason)
{
	conn_close(c, reason);
}

/* ---- byte budgets ---------------------------------------------------- */

/*
 * The readers (relay.c, http.c, udp_assoc.c) cap each read with
 * conn_budget_cap and charge it with conn_budget_take; this is the rest:
 * the module's calls and the deferred work. The spent callback is not
 * called from inside a pump (it could close the connection under it) but
 * from c_budget_task, after this round's events; the same task resumes
 * the protocol's pump when a spent budget gets more, since the bytes
 * left in the kernel raise no new edge.
 */

static void
conn_budget_on_task(struct loop_task *t)
{
	struct pt_conn		*c = (struct pt_conn *)((char *)t -
				    offsetof(struct pt_conn, c_budget_task));
	struct conn_budget	*b;
	unsigned		 due = c->c_budget_due;
	int			 d;

	c->c_budget_due = 0;
	for (d = PT_DIR_UP; d <= PT_DIR_DOWN; d++) {
		b = &c->c_budget[d];
		/* Topped up since (by the module's own timer): not spent. */
		if (c->c_state == CONN_CLOSED || !(due & CONN_BUDGET_SPENT(d)) ||
		    b->left != 0 || b->spent == NULL)
			continue;
		b->spent(c, (enum pt_dir)d, b->arg);
	}
	/* A callback that added at once resumes now, not a round later. */
	due |= c->c_budget_due & CONN_BUDGET_RESUME;
	c->c_budget_due &= (uint8_t)~CONN_BUDGET_RESUME;
	if ((due & CONN_BUDGET_RESUME) && c->c_state != CONN_CLOSED &&
	    c->c_budget_resume != NULL)
		c->c_budget_resume(c);
}

static void
conn_budget_post(struct pt_conn *c, unsigned what)
{
	c->c_budget_due |= (uint8_t)what;
	loop_post(&c->c_budget_task, conn_budget_on_task);
}

void
conn_budget_charge(struct pt_conn *c, int d, uint64_t n)
{
	struct conn_budget	*b = &c->c_budget[d];

	if (n == 0)
		return;
	if (n >= b->left) {
		b->debt += n - b->left;
		b->left = 0;
		conn_budget_post(c, CONN_BUDGET_SPENT(d));
		return;
	}
	b->left -= n;
}

/* Gives direction <d> <bytes> more (UINT64_MAX: no limit), the debt
 * first; resumes the pump when it was spent. */
static void
conn_budget_give(struct pt_conn *c, int d, uint64_t bytes)
{
	struct conn_budget	*b = &c->c_budget[d];
	bool			 was_spent = b->left == 0;
	uint64_t		 pay;

	if (bytes == UINT64_MAX) {
		b->left = UINT64_MAX;
		b->debt = 0;
	} else {
		pay = bytes < b->debt ? bytes : b->debt;
		b->debt -= pay;
		bytes -= pay;
		/* Saturates below UINT64_MAX: adding never lifts the limit
		 * by accident. */
		if (b->left != UINT64_MAX)
			b->left = bytes < UINT64_MAX - 1 - b->left ?
			    b->left + bytes : UINT64_MAX - 1;
	}
	if (was_spent && b->left != 0 && c->c_state != CONN_CLOSED)
		conn_budget_post(c, CONN_BUDGET_RESUME);
}

void
pt_conn_budget_set(struct pt_conn *c, enum pt_dir dir, uint64_t bytes,
    pt_budget_fn spent, void *arg)
{
	struct conn_budget	*b;

	if ((unsigned)dir > PT_DIR_DOWN || c->c_state == CONN_CLOSED)
		return;
	b = &c->c_budget[dir];
	b->spent = spent;
	b->arg = arg;
	if (bytes == 0) {
		b->left = 0;
		b->debt = 0;
		conn_budget_post(c, CONN_BUDGET_SPENT(dir));
		return;
	}
	b->debt = 0;
	if (b->left != 0)
		b->left = bytes;
	else
		conn_budget_give(c, dir, bytes);
}

void
pt_conn_budget_add(struct pt_conn *c, enum pt_dir dir, uint64_t bytes)
{
	if ((unsigned)dir > PT_DIR_DOWN || bytes == 0 ||
	    c->c_state == CONN_CLOSED)
		return;
	conn_budget_give(c, dir, bytes);
}

uint64_t
pt_conn_id(const struct pt_conn *c)
{
	return c->c_id;
}

void
pt_clog(struct pt_conn *c, int level, const char *fmt, ...)
{
	char	 prefix[128], peer[SOCKADDR_STRLEN];
	va_list	 ap;

	/* A debug line per close is formatted only when someone reads it. */
	if (!log_wants(level))
		return;
	snprintf(prefix, sizeof(prefix), "*%llu %s ",
	    (unsigned long long)c->c_id,
	    sockaddr_fmt((const struct sockaddr *)&c->c_req.peer, peer,
	    sizeof(peer)));
	va_start(ap, fmt);
	log_vprefixed(level, prefix, fmt, ap);
	va_end(ap);
}
