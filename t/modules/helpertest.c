/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * helpertest: a test-only module that builds the auth module's helper
 * backend (modules/auth/helper.c) into a tiny AUTH hook, so
 * t/integ/auth_helper.py drives real Squid helpers through the real
 * portico binary.
 *
 *	modules = ( { name = "helpertest"; path = "...";
 *		      helper = { command = "/usr/lib/squid/basic_ncsa_auth f";
 *				 children = 2; timeout = 5;
 *				 concurrency = 0; }; } );
 *	listeners = ( { address = "..."; protocol = "http";
 *			helpertest = { }; } );	# where it applies
 *
 * `timeout` is in seconds and may have a fraction (0.5). The AUTH hook
 * sends the request's user and password to the helpers and answers AGAIN;
 * the answer resumes the connection: CONTINUE on OK, DENY (407) on ERR or
 * an error, DENY with 503 when every helper is busy (-EAGAIN).
 *
 * Error log lines (info):
 *	helpertest: conn=<id> user=<u> result=<n>	an answer
 *	helpertest: conn=<id> user=<u> refused rc=<n>	verify refused it
 *	helpertest: worker=<id> running=<n>		exit_worker
 */
#define _GNU_SOURCE
#include "../../modules/auth/helper.c"



struct ht_conf {
	char		*command;
	unsigned	 children;
	unsigned	 concurrency;
	unsigned	 timeout_ms;
};

struct ht_conn {
	struct pt_conn	*conn;
	bool		 pending;
	char		 user[64];
};

PT_API extern const struct pt_module pt_module_helpertest;

static struct auth_helpers	*ht_helpers;

static int
ht_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	const config_setting_t	*g;
	struct ht_conf		*hc;
	const char		*s;
	double			 d;
	int			 v;

	(void)mc;
	if ((g = config_setting_get_member(node, "helper")) == NULL ||
	    !config_setting_lookup_string(g, "command", &s)) {
		*errstr = "helper.command is required";
		return -1;
	}
	if ((hc = calloc(1, sizeof(*hc))) == NULL ||
	    (hc->command = strdup(s)) == NULL) {
		free(hc);
		*errstr = "out of memory";
		return -1;
	}
	hc->children = 2;
	hc->timeout_ms = 5000;
	if (config_setting_lookup_int(g, "children", &v))
		hc->children = v > 0 ? (unsigned)v : 0;
	if (config_setting_lookup_int(g, "concurrency", &v))
		hc->concurrency = v >= 0 ? (unsigned)v : 0;
	if (config_setting_lookup_float(g, "timeout", &d))
		hc->timeout_ms = d > 0 && d < 86400 ? (unsigned)(d * 1000 + 0.5) : 0;
	else if (config_setting_lookup_int(g, "timeout", &v))
		hc->timeout_ms = v > 0 ? (unsigned)v * 1000 : 0;
	if (hc->children == 0 || hc->children > AUTH_HELPER_CHILDREN_MAX ||
	    hc->concurrency > AUTH_HELPER_CONCURRENCY_MAX ||
	    hc->timeout_ms == 0) {
		free(hc->command);
		free(hc);
		*errstr = "helper: children, concurrency or timeout out of range";
		return -1;
	}
	mc->ctx = hc;
	return 0;
}

static void
ht_conf_free(void *ctx)
{
	struct ht_conf	*hc = ctx;

	if (hc != NULL)
		free(hc->command);
	free(hc);
}

static int
ht_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	(void)mc;
	(void)modctx;
	(void)errstr;
	*lctx_out = NULL;
	return node == NULL ? 1 : 0;
}

static int
ht_init_worker(struct pt_worker *w, void *ctx)
{
	struct ht_conf	*hc = ctx;

	(void)w;
	ht_helpers = auth_helpers_start(hc->command, hc->children,
	    hc->concurrency, hc->timeout_ms);
	if (ht_helpers == NULL) {
		pt_log_err(PT_LOG_ERR, errno, "helpertest: auth_helpers_start");
		return -1;
	}
	return 0;
}

static void
ht_exit_worker(struct pt_worker *w, void *ctx)
{
	(void)ctx;
	pt_log(PT_LOG_INFO, "helpertest: worker=%d running=%u",
	    pt_worker_id(w), auth_helpers_running(ht_helpers));
	auth_helpers_stop(ht_helpers);
	ht_helpers = NULL;
}

static void
ht_done(void *arg, int result)
{
	struct ht_conn	*hc = arg;

	hc->pending = false;
	pt_log(PT_LOG_INFO, "helpertest: conn=%llu user=%s result=%d",
	    (unsigned long long)pt_conn_id(hc->conn), hc->user, result);
	pt_conn_resume(hc->conn, result == AUTH_HELPER_OK ?
	    PT_VERDICT_CONTINUE : PT_VERDICT_DENY);
}

static enum pt_verdict
ht_on_auth(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	static const struct pt_answer	 busy = {
		.http_status = 503, .retry_after = 1, .reason = "helpers busy"
	};
	struct ht_conn	*hc = pt_conn_ctx(conn, &pt_module_helpertest);
	size_t		 n = req->user.len < sizeof(hc->user) - 1 ?
			    req->user.len : sizeof(hc->user) - 1;
	int		 rc;

	(void)modctx;
	if (req->user.len == 0)
		return PT_VERDICT_DENY;
	memcpy(hc->user, req->user.ptr, n);
	hc->user[n] = '\0';
	hc->conn = conn;
	rc = auth_helpers_verify(ht_helpers, req->user.ptr, req->user.len,
	    req->password.ptr != NULL ? req->password.ptr : "",
	    req->password.len, ht_done, hc);
	if (rc == 0) {
		hc->pending = true;
		return PT_VERDICT_AGAIN;
	}
	pt_log(PT_LOG_INFO, "helpertest: conn=%llu user=%s refused rc=%d",
	    (unsigned long long)pt_conn_id(conn), hc->user, rc);
	if (rc == -EAGAIN)
		pt_conn_answer(conn, &busy);
	return PT_VERDICT_DENY;
}

static const struct pt_hook ht_hooks[] = {
	{ PT_PHASE_AUTH, 0, ht_on_auth },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_helpertest = {
	PT_MODULE_INIT,
	.name = "helpertest",
	.flags = PT_MODF_CREDENTIALS,
	.conf = ht_conf,
	.conf_free = ht_conf_free,
	.init_worker = ht_init_worker,
	.exit_worker = ht_exit_worker,
	.hooks = ht_hooks,
	.conn_ctx_size = sizeof(struct ht_conn),
	.listener_conf = ht_listener_conf,
};
