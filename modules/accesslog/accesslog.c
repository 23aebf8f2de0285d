/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The accesslog module: one record per finished transaction (an HTTP
 * request, a tunnel, a SOCKS or TCP session, a UDP association), written
 * at LOG into every configured log, each in its format (squid, combined,
 * json) and to its output (a file, stdout, syslog).
 *
 * LOG cannot read request headers, so the User-Agent and Referer are
 * kept at AUTH (the first phase that can read them, and the last one a
 * 407 reaches) in the connection's slot, tagged with the transaction
 * they belong to.
 *
 * The worker never waits for a log: records go into a per-worker buffer
 * per log (sink.c) written without blocking. Reopen (SIGUSR1): the
 * master creates the new files first (for the workers' user), then each
 * worker flushes to the old file and opens the new one by its path;
 * a worker that cannot keeps writing to the file it had.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <portico/module.h>

#include "modules/accesslog/accesslog.h"

/* This worker's sinks, one per log of the configuration it forked
 * with; empty in the master. */
static struct {
	const struct al_conf	*ac;
	struct al_sink		*sinks;
	size_t			 n;
	int			 id;
	struct al_writer	*wr;	/* or NULL: no writer = "thread" log */
	struct al_hold		 hold;	/* records not yet formatted */
} al_w;

static char	 al_errbuf[512];

static uint64_t
al_now_wall_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
al_rec_from(struct al_rec *r, struct pt_conn *conn, const struct pt_req *req,
    const struct al_conf *ac)
{
	memset(r, 0, sizeof(*r));
	r->wall_ms = al_now_wall_ms();
	r->peer = &req->peer;
	r->upstream = &req->target;
	r->balancer = (const struct sockaddr_storage *)pt_conn_balancer(conn);
	r->egress = (const struct sockaddr_storage *)pt_conn_egress(conn);
	r->parent = pt_conn_parent(conn);
	r->stream = pt_conn_stream(conn);
	r->listener = req->listener;
	r->error = req->error;
	r->user = req->user;
	r->method = req->method;
	r->host = req->host;
	r->path = req->path;
	r->label = req->label;
	r->proto = req->proto;
	r->port = req->port;
	r->status = req->status;
	r->bytes_in = req->bytes_in;
	r->bytes_out = req->bytes_out;
	r->body_out = req->resp_head > 0 && req->bytes_out >
	    (uint64_t)req->resp_head ? req->bytes_out - (uint64_t)req->resp_head :
	    req->resp_head > 0 ? 0 : req->bytes_out;
	r->duration_ms = req->end_ms > req->start_ms ?
	    req->end_ms - req->start_ms : 0;
	r->txn = req->txn;
	r->worker = al_w.id;
	if (r->balancer != NULL) {
		(void)pt_req_tag(conn, "proxy_authority", &r->pp_authority);
		(void)pt_req_tag(conn, "proxy_unique_id", &r->pp_unique_id);
	}
	/* Kept by the core for LOG (PT_MODF_LOG_HEADERS), no scan. */
	if (ac->want_headers) {
		(void)pt_req_header(conn, "User-Agent", &r->ua);
		(void)pt_req_header(conn, "Referer", &r->referer);
	}
}

static bool
al_same_fmt(const struct al_fmt_opts *a, const struct al_fmt_opts *b)
{
	return a->format == b->format && a->local_time == b->local_time &&
	    a->query == b->query;
}

void
al_emit(const struct al_rec *r)
{
	const struct al_fmt_opts *last = NULL;
	char			 line[AL_REC_MAX];
	size_t			 i, len = 0;

	for (i = 0; i < al_w.n; i++) {
		/* Logs of the same format share one formatting. */
		if (last == NULL || !al_same_fmt(last, &al_w.ac->logs[i].fmt)) {
			last = &al_w.ac->logs[i].fmt;
			len = al_fmt(last, r, line, sizeof(line));
		}
		al_sink_add(&al_w.sinks[i], line, len, r->wall_ms);
	}
}

void
al_flush_logs(void)
{
	size_t	 i;

	for (i = 0; i < al_w.n; i++)
		al_sink_flush(&al_w.sinks[i]);
}

static enum pt_verdict
al_log(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct al_conf	*ac = modctx;
	struct al_rec		 r;

	if (al_w.sinks == NULL || al_w.ac != ac)
		return PT_VERDICT_CONTINUE;
#ifdef AL_FLOOR
	/* bench/alfloor.c: a fixed line per log instead of the record. */
	al_floor_log();
	return PT_VERDICT_CONTINUE;
#endif
	al_rec_from(&r, conn, req, ac);
	/* Formatted later, with others (hold.c). */
	if (!al_hold_add(&al_w.hold, &r)) {
		al_hold_run(&al_w.hold);
		al_emit(&r);
	}
	pt_counter_add(ac->ctr_records, 1);
	return PT_VERDICT_CONTINUE;
}

static int
al_conf_cb(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct al_conf	*ac;

	*errstr = al_errbuf;
	if ((ac = al_conf_parse(node, al_errbuf, sizeof(al_errbuf),
	    &mc->where)) == NULL)
		return -1;
	ac->ctr_records = pt_counter_register("accesslog_records");
	ac->ctr_dropped = pt_counter_register("accesslog_dropped");
	ac->ctr_errors = pt_counter_register("accesslog_write_errors");
	if (ac->ctr_records < 0 || ac->ctr_dropped < 0 || ac->ctr_errors < 0) {
		snprintf(al_errbuf, sizeof(al_errbuf), "accesslog: "
		    "pt_counter_register failed");
		al_conf_free(ac);
		return -1;
	}
	mc->ctx = ac;
	return 0;
}

static void
al_conf_free_cb(void *ctx)
{
	al_conf_free(ctx);
}

/* Files are opened here, not in conf(): `portico -t` creates nothing. */
static int
al_init_master(void *ctx)
{
	return al_conf_open(ctx);
}

static void
al_exit_master(void *ctx)
{
	al_conf_close(ctx);
}

static int
al_init_worker(struct pt_worker *w, void *ctx)
{
	const struct al_conf	*ac = ctx;
	size_t			 i;
	unsigned		 flush_ms;
	int			 rc;

	al_w.id = pt_worker_id(w);
	/* The batch waits no longer than the most impatient log. */
	for (i = 1, flush_ms = ac->logs[0].flush_ms; i < ac->nlogs; i++)
		if (ac->logs[i].flush_ms < flush_ms)
			flush_ms = ac->logs[i].flush_ms;
	al_hold_init(&al_w.hold, flush_ms);
	if (al_hold_alloc(&al_w.hold) < 0 ||
	    (al_w.sinks = calloc(ac->nlogs, sizeof(*al_w.sinks))) == NULL)
		return -1;
	al_w.ac = ac;
	for (i = 0; i < ac->nlogs; i++) {
		if ((rc = al_sink_init(&al_w.sinks[i], ac, &ac->logs[i],
		    al_w.id)) < 0) {
			pt_log_err(PT_LOG_ERR, -rc, "accesslog: worker %d",
			    al_w.id);
			return -1;
		}
		al_w.n = i + 1;
	}
	for (i = 0; i < ac->nlogs; i++)
		if (ac->logs[i].thread) {
			if ((rc = al_writer_start(&al_w.wr, al_w.sinks,
			    al_w.n)) < 0) {
				pt_log_err(PT_LOG_ERR, -rc, "accesslog: worker "
				    "%d: writer thread", al_w.id);
				return -1;
			}
			break;
		}
	return 0;
}

static void
al_exit_worker(struct pt_worker *w, void *ctx)
{
	size_t	 i;

	(void)w;
	(void)ctx;
	al_hold_run(&al_w.hold);
	al_hold_free(&al_w.hold);
	al_writer_stop(al_w.wr, AL_EXIT_WAIT_MS);
	al_w.wr = NULL;
	for (i = 0; i < al_w.n; i++)
		al_sink_fini(&al_w.sinks[i]);
	free(al_w.sinks);
	al_w.sinks = NULL;
	al_w.n = 0;
}

static void
al_on_drain(struct pt_worker *w, void *ctx)
{
	(void)w;
	(void)ctx;
	al_hold_run(&al_w.hold);
	al_flush_logs();
}

/* Master first (it creates the new files), then each worker. */
static void
al_reopen(void *ctx)
{
	size_t	 i;

	if (al_w.sinks == NULL) {
		al_conf_reopen(ctx);
		return;
	}
	/* Records from before the SIGUSR1 go to the old file. */
	al_hold_run(&al_w.hold);
	for (i = 0; i < al_w.n; i++)
		al_sink_reopen(&al_w.sinks[i]);
}

/* A listener's `accesslog = { enabled = false; }` logs nothing there. */
static int
al_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	const config_setting_t	*m;
	unsigned		 i;

	(void)modctx;
	*lctx_out = NULL;
	*errstr = al_errbuf;
	if (node == NULL)
		return 0;
	if (!config_setting_is_group(node)) {
		snprintf(al_errbuf, sizeof(al_errbuf), "accesslog: expected a "
		    "group ({ enabled = false; })");
		return -1;
	}
	for (i = 0; (m = config_setting_get_elem(node, i)) != NULL; i++) {
		if (strcmp(config_setting_name(m), "enabled") != 0 ||
		    config_setting_type(m) != CONFIG_TYPE_BOOL) {
			snprintf(al_errbuf, sizeof(al_errbuf), "accesslog: "
			    "\"%.64s\": the only listener option is enabled = "
			    "true or false", config_setting_name(m));
			mc->where = m;
			return -1;
		}
		if (!config_setting_get_bool(m))
			return 1;
	}
	return 0;
}

static const struct pt_hook al_hooks[] = {
	/* Last at LOG: every other module has had its say. */
	{ PT_PHASE_LOG, 1000, al_log },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_accesslog = {
	PT_MODULE_INIT,
	.name = "accesslog",
	/* User-Agent and Referer for the combined and JSON formats. */
	.flags = PT_MODF_LOG_HEADERS,
	.conf = al_conf_cb,
	.conf_free = al_conf_free_cb,
	.init_master = al_init_master,
	.init_worker = al_init_worker,
	.exit_worker = al_exit_worker,
	.reopen = al_reopen,
	.exit_master = al_exit_master,
	.hooks = al_hooks,
	.listener_conf = al_listener_conf,
	.on_drain = al_on_drain,
};
