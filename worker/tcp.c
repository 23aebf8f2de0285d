/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * protocol = "tcp": every accepted connection is relayed to the listener's
 * fixed target. There is no request to parse, so the phases run back to
 * back: ACCEPT, ACCESS (the target as configured), DIAL, ESTABLISHED, and
 * LOG when the relay ends. A DENY or ERROR at any phase closes the client
 * connection: plain TCP has no way to say why.
 */
#include "config.h"

#include <string.h>

#include "worker/tcp.h"
#include "common/counters.h"
#include "common/conf_types.h"
#include "worker/accept.h"
#include "worker/dial.h"
#include "worker/phase.h"
#include "worker/relay.h"
#include "worker/worker.h"

static void
tcp_on_timeout(struct pt_timer *t, void *arg)
{
	conn_close(arg, "module phases timed out");
}

static bool
tcp_denied(struct pt_conn *c, enum pt_verdict v)
{
	if (v != PT_VERDICT_DENY && v != PT_VERDICT_ERROR)
		return false;
	if (v == PT_VERDICT_DENY)
		counters_add(CTR_DENIED, 1);
	conn_close(c, v == PT_VERDICT_DENY ? "denied by module" :
	    "module error");
	return true;
}

static void
tcp_on_established(struct pt_conn *c, enum pt_verdict v)
{
	if (tcp_denied(c, v))
		return;
	relay_start(c);
}

static void
tcp_on_dialed(struct pt_conn *c, int err)
{
	if (err != 0) {
		c->c_req.error = strerror(err);
		conn_close(c, "connect to target failed");
		return;
	}
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.header_timeout_ms, tcp_on_timeout, c);
	phase_run(c, PT_PHASE_ESTABLISHED, tcp_on_established);
}

static void
tcp_on_dial_phase(struct pt_conn *c, enum pt_verdict v)
{
	const struct conf_listener	*l = c->c_listener->conf;

	if (tcp_denied(c, v))
		return;
	dial_start(c, &l->to_addr,
	    worker_self()->conf->limits.connect_timeout_ms, tcp_on_dialed);
}

static void
tcp_on_access(struct pt_conn *c, enum pt_verdict v)
{
	const struct conf_listener	*l = c->c_listener->conf;

	if (tcp_denied(c, v))
		return;
	memcpy(&c->c_req.target, &l->to_addr.sa, l->to_addr.len);
	phase_run(c, PT_PHASE_DIAL, tcp_on_dial_phase);
}

static void
tcp_on_accept(struct pt_conn *c, enum pt_verdict v)
{
	const struct conf_listener	*l = c->c_listener->conf;

	if (tcp_denied(c, v))
		return;
	/* The target is fixed by configuration; show it to ACCESS as the
	 * operator wrote it. */
	c->c_req.host.ptr = l->to_host;
	c->c_req.host.len = strlen(l->to_host);
	c->c_req.port = sockaddr_port((const struct sockaddr *)&l->to_addr.sa);
	phase_run(c, PT_PHASE_ACCESS, tcp_on_access);
}

void
tcp_start(struct pt_conn *c)
{
	c->c_req.proto = PT_PROTO_TCP;
	/* Modules that answer AGAIN get header_timeout to finish; dial
	 * replaces this timer with its own. */
	pt_timer_start(&c->c_timer,
	    worker_self()->conf->limits.header_timeout_ms, tcp_on_timeout, c);
	phase_run(c, PT_PHASE_ACCEPT, tcp_on_accept);
}
