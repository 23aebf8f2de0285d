/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which code serves a listener's protocol: one table indexed by enum
 * conf_proto, so the layer that accepts connections (accept.c) knows no
 * protocol, and a new protocol is one row here. protocol = "auto" is the
 * one entry that is not a protocol of its own: it peeks at the first byte
 * and hands over to SOCKS or HTTP.
 */
#include "config.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "worker/proto.h"
#include "worker/http.h"
#include "worker/phase.h"
#include "worker/socks.h"
#include "worker/status.h"
#include "worker/tcp.h"
#include "worker/worker_self.h"

/* protocol = "auto": the first byte a client sends tells SOCKS (4 or 5,
 * the version) from HTTP (a method's first letter); it is peeked, not
 * read, so the protocol sees the whole stream. */
static void
proto_sniff_io(struct loop_io *io, uint32_t events)
{
	struct conn_side	*s = (struct conn_side *)io;
	struct pt_conn		*c = s->conn;
	unsigned char		 b;
	ssize_t			 n;

	n = recv(io->fd, &b, 1, MSG_PEEK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c, n == 0 ? NULL : "read failed");
		return;
	}
	if (b == 4 || b == 5) {
		/* SOCKS takes the registration as it is and re-arms the
		 * timer in place; it needs the interest off only while an
		 * ACCEPT hook may keep it waiting. */
		if (phase_has_hooks(PT_PHASE_ACCEPT))
			loop_io_set(io, 0);
		socks_start(c);
		return;
	}
	pt_timer_stop(&c->c_timer);
	loop_io_set(io, 0);
	http_start(c);
}

static void
proto_sniff_timeout(struct pt_timer *t, void *arg)
{
	conn_close(arg, "nothing sent");
}

static void
proto_sniff(struct pt_conn *c)
{
	struct conn_side	*s = &c->c_side[SIDE_CLIENT];

	/* Behind a transport (tls) the bytes are not ours to peek: such a
	 * listener speaks HTTP. */
	if (c->c_transport != NULL) {
		http_start(c);
		return;
	}
	if (loop_io_start(&s->io, s->io.fd, EPOLLIN, proto_sniff_io) < 0) {
		conn_close(c, "epoll_ctl");
		return;
	}
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.header_timeout_ms,
	    proto_sniff_timeout, c);
}

static const proto_start_fn proto_starts[] = {
	[CONF_PROTO_TCP] = tcp_start,
	[CONF_PROTO_HTTP] = http_start,
	[CONF_PROTO_SOCKS] = socks_start,
	[CONF_PROTO_AUTO] = proto_sniff,
	[CONF_PROTO_STATUS] = status_start,
};

proto_start_fn
proto_start(enum conf_proto p)
{
	/* conf.c accepts no other value, so no worker checks it again. */
	return proto_starts[p];
}
