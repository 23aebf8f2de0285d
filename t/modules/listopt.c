/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * listopt: a test-only module with per-listener options. It applies only
 * to listeners that have a `listopt` group, checks credentials there
 * (PT_MODF_CREDENTIALS: SOCKS5 asks for username/password), and may let
 * some clients through without them:
 *
 *	modules = ( { name = "listopt"; } );
 *	listeners = ( { address = "..."; protocol = "socks5";
 *			listopt = { tag = "alpha";		# required
 *				    level = 3;			# 1-9, default 1
 *				    no_auth_from = "127.0.0.1/32"; }; } );
 *
 * Lines in the error log (info; notice in the master), each naming the
 * listener's tag, so a test sees which listener's options reached the worker:
 *	listopt: listener <idx> (<address>) tag=<tag> level=<n>	(master)
 *	listopt: ACCEPT tag=<tag> level=<n> listener=<idx>[ no-credentials]
 *	listopt: AUTH tag=<tag> user=<user> -> ok|denied
 *	listopt: LOG tag=<tag>
 *	listopt: DATAGRAM tag=<tag>	(a UDP ASSOCIATE datagram judged)
 * The one user it knows is alice, password secret.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portico/module.h"

struct listopt_lconf {
	char		 tag[32];
	int		 level;
	int		 idx;
	bool		 cidr;		/* no_auth_from given */
	uint32_t	 net, mask;	/* host order */
};

PT_API extern const struct pt_module pt_module_listopt;

/* conf and listener_conf run in the master only. */
static char	 listopt_err[128];

static int
listopt_cidr(struct listopt_lconf *lc, const char *s)
{
	char		 addr[INET_ADDRSTRLEN];
	struct in_addr	 a;
	const char	*slash = strchr(s, '/');
	size_t		 n = slash != NULL ? (size_t)(slash - s) : strlen(s);
	long		 len = 32;
	char		*end;

	if (n >= sizeof(addr))
		return -1;
	memcpy(addr, s, n);
	addr[n] = '\0';
	if (inet_pton(AF_INET, addr, &a) != 1)
		return -1;
	if (slash != NULL) {
		len = strtol(slash + 1, &end, 10);
		if (*end != '\0' || end == slash + 1 || len < 0 || len > 32)
			return -1;
	}
	lc->mask = len == 0 ? 0 : ~(uint32_t)0 << (32 - len);
	lc->net = ntohl(a.s_addr) & lc->mask;
	lc->cidr = true;
	return 0;
}

static int
listopt_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	struct listopt_lconf	*lc;
	config_setting_t	*m;
	const char		*name, *s;
	int			 i;

	if (node == NULL)
		return 1;
	if ((lc = calloc(1, sizeof(*lc))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	lc->level = 1;
	lc->idx = mc->listener_idx;
	*errstr = listopt_err;
	for (i = 0; (m = config_setting_get_elem(node, (unsigned)i)) != NULL;
	    i++) {
		name = config_setting_name(m);
		s = config_setting_get_string(m);
		if (strcmp(name, "tag") == 0 && s != NULL &&
		    strlen(s) < sizeof(lc->tag)) {
			snprintf(lc->tag, sizeof(lc->tag), "%s", s);
		} else if (strcmp(name, "level") == 0 &&
		    config_setting_type(m) == CONFIG_TYPE_INT &&
		    config_setting_get_int(m) >= 1 &&
		    config_setting_get_int(m) <= 9) {
			lc->level = config_setting_get_int(m);
		} else if (strcmp(name, "no_auth_from") == 0 && s != NULL &&
		    listopt_cidr(lc, s) == 0) {
			;
		} else {
			snprintf(listopt_err, sizeof(listopt_err),
			    "bad listopt option \"%s\"", name);
			mc->where = m;	/* ABI 1.2: the option's own line */
			free(lc);
			return -1;
		}
	}
	if (lc->tag[0] == '\0') {
		snprintf(listopt_err, sizeof(listopt_err), "missing \"tag\"");
		free(lc);
		return -1;
	}
	/* Notice: the master's log level is not yet the configured one
	 * while it loads the configuration. */
	pt_log(PT_LOG_NOTICE, "listopt: listener %d (%s) tag=%s level=%d",
	    mc->listener_idx, mc->listener, lc->tag, lc->level);
	*lctx_out = lc;
	return 0;
}

static void
listopt_listener_conf_free(void *lctx)
{
	free(lctx);
}

static const struct listopt_lconf *
listopt_lc(struct pt_conn *conn)
{
	return pt_conn_listener_ctx(conn, &pt_module_listopt);
}

static enum pt_verdict
listopt_accept(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct listopt_lconf	*lc = listopt_lc(conn);
	const struct sockaddr_in	*sin;
	bool				 free_pass = false;

	if (lc == NULL) {
		pt_clog(conn, PT_LOG_ERR, "listopt: ACCEPT without listener "
		    "options");
		return PT_VERDICT_ERROR;
	}
	sin = (const struct sockaddr_in *)&req->peer;
	if (lc->cidr && req->peer.ss_family == AF_INET &&
	    (ntohl(sin->sin_addr.s_addr) & lc->mask) == lc->net) {
		pt_conn_need_credentials(conn, false);
		free_pass = true;
	}
	pt_clog(conn, PT_LOG_INFO, "listopt: ACCEPT tag=%s level=%d "
	    "listener=%d%s", lc->tag, lc->level, lc->idx,
	    free_pass ? " no-credentials" : "");
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
listopt_auth(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct listopt_lconf	*lc = listopt_lc(conn);
	bool				 ok;

	ok = req->user.len == 5 && memcmp(req->user.ptr, "alice", 5) == 0 &&
	    req->password.len == 6 &&
	    memcmp(req->password.ptr, "secret", 6) == 0;
	pt_clog(conn, PT_LOG_INFO, "listopt: AUTH tag=%s user=%.*s -> %s",
	    lc != NULL ? lc->tag : "?", (int)req->user.len,
	    req->user.ptr != NULL ? req->user.ptr : "",
	    ok ? "ok" : "denied");
	return ok ? PT_VERDICT_CONTINUE : PT_VERDICT_DENY;
}

static enum pt_verdict
listopt_log(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct listopt_lconf	*lc = listopt_lc(conn);

	pt_clog(conn, PT_LOG_INFO, "listopt: LOG tag=%s",
	    lc != NULL ? lc->tag : "?");
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
listopt_datagram(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct listopt_lconf	*lc = listopt_lc(conn);

	pt_clog(conn, PT_LOG_INFO, "listopt: DATAGRAM tag=%s",
	    lc != NULL ? lc->tag : "?");
	return PT_VERDICT_CONTINUE;
}

static const struct pt_hook listopt_hooks[] = {
	{ PT_PHASE_ACCEPT, 0, listopt_accept },
	{ PT_PHASE_AUTH, 0, listopt_auth },
	{ PT_PHASE_LOG, 0, listopt_log },
	{ PT_PHASE_DATAGRAM, 0, listopt_datagram },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_listopt = {
	PT_MODULE_INIT,
	.name = "listopt",
	.flags = PT_MODF_CREDENTIALS,
	.hooks = listopt_hooks,
	.listener_conf = listopt_listener_conf,
	.listener_conf_free = listopt_listener_conf_free,
};
