/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The configuration's `parents` (common/parent_conf.c reads each entry):
 * their TLS contexts through the tls module, the refusal of a parent
 * that is one of this file's own listeners, and http.via_pseudonym,
 * which a loop through parents is told by. Part of conf.c's reading
 * (master/conf_ctx.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/conf.h"
#include "master/conf_ctx.h"
#include "master/upstream_tls.h"
#include "common/parent.h"
#include "common/log.h"
#include "worker/dns.h"

/* parents (common/parent_conf.c), before the listeners and modules
 * whose `via` names them. */
int
conf_parents(struct conf_ctx *cc, const config_setting_t *root)
{
	const config_setting_t	*where;
	char			 why[256];

	if (parent_conf_parse(config_setting_get_member(root, "parents"),
	    cc->conf->limits.connect_timeout_ms, &cc->conf->parents,
	    &cc->conf->nparents, &where, why, sizeof(why)) < 0)
		return conf_err_at(cc, where, why);
	return 0;
}

/* https parents: TLS comes from a module (the core links no TLS
 * library), which builds each parent's client context now, so a bad CA
 * file fails -t and a reload, not a worker. */
int
conf_parents_tls(struct conf_ctx *cc, const config_setting_t *root)
{
	struct conf_parent	*p;
	struct pt_upstream_tls	 u;
	const char		*errstr;
	int			 i;

	for (i = 0; i < cc->conf->nparents; i++) {
		p = &cc->conf->parents[i];
		if (p->proto != PARENT_HTTPS)
			continue;
		memset(&u, 0, sizeof(u));
		u.ca_file = p->ca;
		u.verify = p->verify;
		u.file = cc->conf->file;
		u.line = p->line;
		if (upstream_tls_conf(cc->conf, &u, &p->tls_mod, &p->tls_ctx,
		    &errstr) < 0)
			return conf_err(cc, config_setting_get_elem(
			    config_setting_get_member(root, "parents"),
			    (unsigned)i), "parent \"%s\": %s", p->name, errstr);
	}
	return 0;
}

/* Whether <a> is the wildcard address of its family. */
static bool
conf_addr_is_any(const struct pt_addr *a)
{
	if (a->sa.ss_family == AF_INET)
		return ((const struct sockaddr_in *)&a->sa)->sin_addr.s_addr ==
		    htonl(INADDR_ANY);
	return a->sa.ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(
	    &((const struct sockaddr_in6 *)&a->sa)->sin6_addr);
}

/* Whether <a> is an address of this host: loopback, or on an
 * interface. */
static bool
conf_addr_is_local(const struct pt_addr *a)
{
	struct ifaddrs		*ifs, *i;
	struct pt_addr		 x;
	bool			 local = false;

	sockaddr_unmap((const struct sockaddr *)&a->sa, &x);
	if ((x.sa.ss_family == AF_INET && (ntohl(((struct sockaddr_in *)
	    &x.sa)->sin_addr.s_addr) >> 24) == 127) ||
	    (x.sa.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(
	    &((struct sockaddr_in6 *)&x.sa)->sin6_addr)))
		return true;
	if (getifaddrs(&ifs) < 0)
		return false;
	for (i = ifs; i != NULL && !local; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family !=
		    x.sa.ss_family)
			continue;
		local = x.sa.ss_family == AF_INET ?
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
		    ((struct sockaddr_in *)&x.sa)->sin_addr.s_addr :
		    IN6_ARE_ADDR_EQUAL(&((struct sockaddr_in6 *)
		    i->ifa_addr)->sin6_addr, &((struct sockaddr_in6 *)
		    &x.sa)->sin6_addr);
	}
	freeifaddrs(ifs);
	return local;
}

/*
 * A parent at one of our own listeners would send every request back
 * to us, forever (until the file descriptors run out): refused. Only
 * addresses are judged; a name that resolves to us is caught at run
 * time by Via (508).
 */
int
conf_parents_not_ours(struct conf_ctx *cc, const config_setting_t *root)
{
	const struct conf_parent	*p;
	const struct conf_listener	*l;
	struct pt_addr			 pa;
	const char			*errstr;
	char				 text[300];
	int				 i, j;

	for (i = 0; i < cc->conf->nparents; i++) {
		p = &cc->conf->parents[i];
		snprintf(text, sizeof(text), strchr(p->host, ':') != NULL ?
		    "[%s]:%u" : "%s:%u", strcmp(p->host, "localhost") == 0 ?
		    "127.0.0.1" : p->host, p->port);
		if (sockaddr_parse(text, &pa, &errstr) < 0)
			continue;
		for (j = 0; j < cc->conf->nlisteners; j++) {
			l = &cc->conf->listeners[j];
			if (sockaddr_port((const struct sockaddr *)&l->addr.sa) != p->port)
				continue;
			if (sockaddr_equal(&l->addr, &pa) ||
			    (conf_addr_is_any(&l->addr) &&
			    conf_addr_is_local(&pa)))
				return conf_err(cc, config_setting_get_member(
				    config_setting_get_elem(
				    config_setting_get_member(root, "parents"),
				    (unsigned)i), "address"), "\"%s\" "
				    "is portico's own listener \"%s\" (line "
				    "%d): every request would come back here",
				    p->address, l->name, l->line);
		}
	}
	return 0;
}

/* RFC 9110 7.6.3: received-by is a pseudonym (a token) or host[:port]. */
bool
conf_via_token(const char *s)
{
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) &&
		    strchr("!#$%&'*+-.^_`|~:[]", *s) == NULL)
			return false;
	return true;
}

/*
 * The name this proxy gives itself in Via, and recognises there as a
 * loop (508). Only an instance that forwards to parents can be part of
 * a loop of proxies (one without parents sends requests to origins
 * only), so only then is Via checked, and only then must the name
 * differ from any other instance's, also on one host: by default
 * "portico-<host name>-<first listener's port>". Without parents it
 * stays "portico", as it always was. An explicit via_pseudonym is
 * always checked.
 */
int
conf_via_pseudonym(struct conf_ctx *cc)
{
	struct conf_http	*h = &cc->conf->http;
	char			 host[256], name[300];

	if (h->via_pseudonym != NULL) {
		h->via_loop_check = h->via;
		return 0;
	}
	h->via_loop_check = h->via && cc->conf->nparents > 0;
	snprintf(name, sizeof(name), "portico");
	if (h->via_loop_check) {
		if (gethostname(host, sizeof(host)) < 0 || host[0] == '\0' ||
		    !conf_via_token(host))
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		snprintf(name, sizeof(name), "portico-%s-%u", host,
		    sockaddr_port((const struct sockaddr *)
		    &cc->conf->listeners[0].addr.sa));
	}
	if ((h->via_pseudonym = strdup(name)) == NULL)
		return conf_err(cc, NULL, "out of memory");
	return 0;
}
