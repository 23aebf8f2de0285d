/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udpcheck: a test-only module that judges the destinations of SOCKS5 UDP
 * associations (PT_PHASE_DATAGRAM) and says so in the error log, so
 * integration tests can count the judgements and see what each one saw.
 *
 *	modules = ( { name = "udpcheck";
 *		      deny_port = 9999;		# a rule on the address
 *		      again_port = 9998;	# answers AGAIN (counts as DENY)
 *		      deny_host = "blocked.test";	# a rule on the name
 *		    } );
 *
 * deny_port is judged on the target, the destination's address: a check
 * before a name is resolved (target unset) passes it, the one after is
 * refused, the way an address rule (dst CIDR) of an ACL module has to
 * behave so that a name cannot be used to get around it. deny_host
 * refuses a destination named exactly so, before it is resolved.
 *
 * Lines, at notice, after the core's connection prefix:
 *
 *	udpcheck: judged proto=<n> host=<host> port=<port>
 *	    target=<addr:port>|- verdict=continue|deny|again	(one line)
 *	udpcheck: LOG proto=<n> host=<host> port=<port> in=<n> out=<n>
 *	    error=<req->error>|-
 *
 * Like any module it sees only <portico/module.h>.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portico/module.h"

struct udpcheck_conf {
	long		 deny_port;	/* 0: none */
	long		 again_port;	/* 0: none */
	char		*deny_host;	/* NULL: none */
};

static const char *const udpcheck_keys[] = {
	"name", "path", "deny_port", "again_port", "deny_host", NULL
};

static int
udpcheck_port(const config_setting_t *node, const char *key, long *out,
    const char **errstr)
{
	config_setting_t	*s;

	*out = 0;
	if ((s = config_setting_get_member(node, key)) == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_INT ||
	    config_setting_get_int(s) < 1 ||
	    config_setting_get_int(s) > 65535) {
		*errstr = "deny_port, again_port: expected a port (1-65535)";
		return -1;
	}
	*out = config_setting_get_int(s);
	return 0;
}

static int
udpcheck_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct udpcheck_conf	*uc;
	config_setting_t	*m;
	const char		*name, *host = NULL;
	unsigned		 i, k;
	long			 deny, again;

	for (i = 0; (m = config_setting_get_elem(node, i)) != NULL; i++) {
		if ((name = config_setting_name(m)) == NULL)
			continue;
		for (k = 0; udpcheck_keys[k] != NULL; k++)
			if (strcmp(name, udpcheck_keys[k]) == 0)
				break;
		if (udpcheck_keys[k] == NULL) {
			*errstr = "unknown option";
			return -1;
		}
	}
	if (udpcheck_port(node, "deny_port", &deny, errstr) < 0 ||
	    udpcheck_port(node, "again_port", &again, errstr) < 0)
		return -1;
	if ((m = config_setting_get_member(node, "deny_host")) != NULL) {
		if (config_setting_type(m) != CONFIG_TYPE_STRING) {
			*errstr = "deny_host: expected a string";
			return -1;
		}
		host = config_setting_get_string(m);
	}
	if ((uc = calloc(1, sizeof(*uc))) == NULL ||
	    (host != NULL && (uc->deny_host = strdup(host)) == NULL)) {
		free(uc);
		*errstr = "out of memory";
		return -1;
	}
	uc->deny_port = deny;
	uc->again_port = again;
	mc->ctx = uc;
	return 0;
}

static void
udpcheck_conf_free(void *ctx)
{
	struct udpcheck_conf	*uc = ctx;

	if (uc == NULL)
		return;
	free(uc->deny_host);
	free(uc);
}

/* "1.2.3.4:80", "[::1]:80", or "-" when unset. */
static const char *
udpcheck_fmt_target(const struct sockaddr_storage *ss, char *buf,
    size_t bufsz)
{
	const struct sockaddr_in	*sin = (const void *)ss;
	const struct sockaddr_in6	*sin6 = (const void *)ss;
	char				 host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET &&
	    inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host)) != NULL)
		snprintf(buf, bufsz, "%s:%u", host, ntohs(sin->sin_port));
	else if (ss->ss_family == AF_INET6 &&
	    inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host)) != NULL)
		snprintf(buf, bufsz, "[%s]:%u", host, ntohs(sin6->sin6_port));
	else
		snprintf(buf, bufsz, "-");
	return buf;
}

static uint16_t
udpcheck_target_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static enum pt_verdict
udpcheck_on_datagram(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct udpcheck_conf	*uc = modctx;
	enum pt_verdict			 v = PT_VERDICT_CONTINUE;
	uint16_t			 tport = udpcheck_target_port(
					    &req->target);
	char				 target[64];

	if (uc->deny_host != NULL && req->host.len == strlen(uc->deny_host) &&
	    memcmp(req->host.ptr, uc->deny_host, req->host.len) == 0)
		v = PT_VERDICT_DENY;
	else if (uc->deny_port != 0 && tport == uc->deny_port)
		v = PT_VERDICT_DENY;
	else if (uc->again_port != 0 && tport == uc->again_port)
		v = PT_VERDICT_AGAIN;
	pt_clog(conn, PT_LOG_NOTICE, "udpcheck: judged proto=%d host=%.*s "
	    "port=%u target=%s verdict=%s", (int)req->proto,
	    (int)req->host.len, req->host.ptr, (unsigned)req->port,
	    udpcheck_fmt_target(&req->target, target, sizeof(target)),
	    v == PT_VERDICT_DENY ? "deny" : v == PT_VERDICT_AGAIN ? "again" :
	    "continue");
	return v;
}

static enum pt_verdict
udpcheck_on_log(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	(void)modctx;
	pt_clog(conn, PT_LOG_NOTICE, "udpcheck: LOG proto=%d host=%.*s "
	    "port=%u in=%llu out=%llu error=%s", (int)req->proto,
	    (int)req->host.len, req->host.ptr, (unsigned)req->port,
	    (unsigned long long)req->bytes_in,
	    (unsigned long long)req->bytes_out,
	    req->error != NULL ? req->error : "-");
	return PT_VERDICT_CONTINUE;
}

static const struct pt_hook udpcheck_hooks[] = {
	{ PT_PHASE_DATAGRAM, 0, udpcheck_on_datagram },
	{ PT_PHASE_LOG, 0, udpcheck_on_log },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_udpcheck = {
	PT_MODULE_INIT,
	.name = "udpcheck",
	.conf = udpcheck_conf,
	.conf_free = udpcheck_conf_free,
	.hooks = udpcheck_hooks,
};
