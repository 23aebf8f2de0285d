/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * protocol = "tcp": every accepted connection is relayed to the listener's
 * fixed target. There is no request to parse, so the phases run back to
 * back: ACCEPT, then the dial path (target.c: ACCESS with the target as
 * configured, DIAL, ESTABLISHED), and LOG when the relay ends. A DENY or
 * ERROR at any phase closes the client connection: plain TCP has no way
 * to say why.
 */
#include "config.h"

#include <string.h>

#include "worker/tcp.h"
#include "common/conf_types.h"
#include "worker/phase.h"
#include "worker/relay.h"
#include "worker/target.h"
#include "worker/worker_self.h"

static void
tcp_on_timeout(struct pt_timer *t, void *arg)
{
	conn_close(arg, "module phases timed out");
}

static void
tcp_refuse(struct pt_conn *c, const struct target_refusal *r)
{
	conn_close(c, r->verdict == PT_VERDICT_DENY ? "denied by module" :
	    "module error");
}

static void
tcp_fail(struct pt_conn *c, enum target_fail what, int err)
{
	c->c_req.error = strerror(err);
	conn_close(c, "connect to target failed");
}

static const struct target_ops tcp_target_ops = {
	.refuse = tcp_refuse,
	.fail = tcp_fail,
	.established = relay_start,
	.on_timer = tcp_on_timeout,
};

static void
tcp_on_accept(struct pt_conn *c, enum pt_verdict v)
{
	const struct conf_listener	*l = c->c_listener;

	if (target_refused(c, PT_PHASE_ACCEPT, v))
		return;
	/* The target is fixed by configuration; show it to ACCESS as the
	 * operator wrote it. */
	c->c_req.host.ptr = l->to_host;
	c->c_req.host.len = strlen(l->to_host);
	c->c_req.port = sockaddr_port((const struct sockaddr *)&l->to_addr.sa);
	target_known(c, &l->to_addr, 1);
	target_access(c);
}

void
tcp_start(struct pt_conn *c)
{
	c->c_req.proto = PT_PROTO_TCP;
	target_init(c, &tcp_target_ops, NULL);
	/* Modules that answer AGAIN get header_timeout to finish; dial
	 * replaces this timer with its own. */
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.header_timeout_ms, tcp_on_timeout, c);
	phase_run(c, PT_PHASE_ACCEPT, tcp_on_accept);
}
