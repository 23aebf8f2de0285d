/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dgramcheck: a test-only module with a datagram callback
 * (pt_module.datagram, ABI 1.3), so integration tests can see that the
 * UDP relay asks it about every datagram of an association, in each
 * direction, with the payload's size, and drops and counts what it
 * refuses.
 *
 *	modules = ( { name = "dgramcheck";
 *		      drop_up = 13;	# refuse client datagrams of 13 bytes
 *		      drop_down = 20;	# refuse replies of 20 bytes
 *		      allow_up = 7;	# answer ALLOW to those of 7 bytes
 *		    } );
 *	listeners: dgramcheck = { enabled = false; } exempts one.
 *
 * At CLOSE of an association it logs, at notice, after the core's
 * connection prefix (one line):
 *
 *	dgramcheck: CLOSE up=<calls> up_bytes=<n> down=<calls>
 *	    down_bytes=<n> refused=<n>
 *
 * and it counts every call in the totals (dgramcheck_calls,
 * dgramcheck_refused). Like any module it sees only <portico/module.h>.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portico/module.h"

PT_API extern const struct pt_module pt_module_dgramcheck;

struct dgramcheck_conf {
	long		 drop[2];	/* by enum pt_dir; -1: none */
	long		 allow_up;	/* -1: none */
	int		 ctr_calls, ctr_refused;
};

struct dgramcheck_cstate {
	uint64_t	 calls[2], bytes[2], refused;
};

static const char *const dgramcheck_keys[] = {
	"name", "path", "drop_up", "drop_down", "allow_up", NULL
};

static int
dgramcheck_len(const config_setting_t *node, const char *key, long *out,
    const char **errstr)
{
	config_setting_t	*s;

	*out = -1;
	if ((s = config_setting_get_member(node, key)) == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_INT ||
	    config_setting_get_int(s) < 0) {
		*errstr = "drop_up, drop_down, allow_up: expected a size";
		return -1;
	}
	*out = config_setting_get_int(s);
	return 0;
}

static int
dgramcheck_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct dgramcheck_conf	*dc;
	config_setting_t	*m;
	const char		*name;
	unsigned		 i, k;

	for (i = 0; (m = config_setting_get_elem(node, i)) != NULL; i++) {
		if ((name = config_setting_name(m)) == NULL)
			continue;
		for (k = 0; dgramcheck_keys[k] != NULL; k++)
			if (strcmp(name, dgramcheck_keys[k]) == 0)
				break;
		if (dgramcheck_keys[k] == NULL) {
			*errstr = "unknown option";
			return -1;
		}
	}
	if ((dc = calloc(1, sizeof(*dc))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	if (dgramcheck_len(node, "drop_up", &dc->drop[PT_DIR_UP],
	    errstr) < 0 || dgramcheck_len(node, "drop_down",
	    &dc->drop[PT_DIR_DOWN], errstr) < 0 ||
	    dgramcheck_len(node, "allow_up", &dc->allow_up, errstr) < 0) {
		free(dc);
		return -1;
	}
	dc->ctr_calls = pt_counter_register("dgramcheck_calls");
	dc->ctr_refused = pt_counter_register("dgramcheck_refused");
	mc->ctx = dc;
	return 0;
}

static void
dgramcheck_conf_free(void *ctx)
{
	free(ctx);
}

static int
dgramcheck_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	int	 on;

	(void)mc;
	(void)modctx;
	*lctx_out = NULL;
	if (node == NULL)
		return 0;
	if (!config_setting_lookup_bool(node, "enabled", &on)) {
		*errstr = "dgramcheck: expected { enabled = true|false; }";
		return -1;
	}
	return on ? 0 : 1;
}

static enum pt_verdict
dgramcheck_datagram(struct pt_conn *conn, enum pt_dir dir, size_t len,
    void *modctx)
{
	const struct dgramcheck_conf	*dc = modctx;
	struct dgramcheck_cstate	*cs = pt_conn_ctx(conn,
					    &pt_module_dgramcheck);

	cs->calls[dir]++;
	cs->bytes[dir] += len;
	pt_counter_add(dc->ctr_calls, 1);
	if (dir == PT_DIR_UP && dc->allow_up >= 0 &&
	    (size_t)dc->allow_up == len)
		return PT_VERDICT_ALLOW;
	if (dc->drop[dir] >= 0 && (size_t)dc->drop[dir] == len) {
		cs->refused++;
		pt_counter_add(dc->ctr_refused, 1);
		return PT_VERDICT_DENY;
	}
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
dgramcheck_close(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct dgramcheck_cstate	*cs = pt_conn_ctx(conn,
					    &pt_module_dgramcheck);

	(void)modctx;
	if (req->proto != PT_PROTO_UDP)
		return PT_VERDICT_CONTINUE;
	pt_clog(conn, PT_LOG_NOTICE, "dgramcheck: CLOSE up=%llu up_bytes=%llu "
	    "down=%llu down_bytes=%llu refused=%llu",
	    (unsigned long long)cs->calls[PT_DIR_UP],
	    (unsigned long long)cs->bytes[PT_DIR_UP],
	    (unsigned long long)cs->calls[PT_DIR_DOWN],
	    (unsigned long long)cs->bytes[PT_DIR_DOWN],
	    (unsigned long long)cs->refused);
	return PT_VERDICT_CONTINUE;
}

static const struct pt_hook dgramcheck_hooks[] = {
	{ PT_PHASE_CLOSE, 0, dgramcheck_close },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_dgramcheck = {
	PT_MODULE_INIT,
	.name = "dgramcheck",
	.conf = dgramcheck_conf,
	.conf_free = dgramcheck_conf_free,
	.listener_conf = dgramcheck_listener_conf,
	.hooks = dgramcheck_hooks,
	.conn_ctx_size = sizeof(struct dgramcheck_cstate),
	.datagram = dgramcheck_datagram,
};
