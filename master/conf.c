/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Configuration loading. libconfig parses the syntax; this file checks every
 * key against what portico knows, every value against its type and range,
 * and turns the tree into struct pt_config. The first problem found is
 * reported as "FILE:LINE: option: what is wrong", and nothing half-loaded
 * ever escapes: a reload either gets a whole new configuration or none.
 *
 * It does not bind sockets (listen.c) nor fork (spawn.c), so `portico -t`
 * can run it with no side effect beyond loading modules.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <ifaddrs.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "master/cgroup.h"
#include "master/conf.h"
#include "master/conf_ctx.h"
#include "master/modload.h"
#include "master/upstream_tls.h"
#include "common/egress.h"
#include "common/parent.h"
#include "common/modlife.h"
#include "common/log.h"
#include "worker/dns.h"

#ifndef PT_SYSCONFDIR
#define PT_SYSCONFDIR "/usr/local/etc"
#endif
#ifndef PT_MODULEDIR
#define PT_MODULEDIR "/usr/local/lib/portico"
#endif


static const char *const conf_root_keys[] = {
	"workers", "cpu_affinity", "user", "group", "pid_file", "error_log",
	"log_level", "module_dir", "shutdown_timeout", "listeners", "limits",
	"relay", "modules", "http", "resolver", "tcp_migrate_req", "parents",
	NULL
};
static const char *const conf_http_keys[] = {
	"connect_ports", "via", "via_pseudonym", "max_header_size",
	"upstream_keepalive", "upstream_idle_timeout", "response_timeout", NULL
};
static const char *const conf_listener_keys[] = {
	"address", "protocol", "to", "backlog", "transport", "udp_advertise",
	"udp_replies", "name", "ipv6only", "proxy_protocol", "via", "http2",
	"http2_max_streams", NULL
};
static const char *const conf_proxy_protocol_keys[] = {
	"from", NULL
};
static const char *const conf_limits_keys[] = {
	"max_connections", "header_timeout", "connect_timeout",
	"idle_timeout", "worker_memory", NULL
};
static const char *const conf_relay_keys[] = {
	"method", "buffer_size", NULL
};

/* Records the first error as "FILE:LINE: path: message". */
int
conf_err(struct conf_ctx *cc, const config_setting_t *s, const char *fmt, ...)
{
	const char	*file = NULL;
	char		 path[256] = "";
	int		 n = 0, line = 0;
	va_list		 ap;

	if (cc->failed)
		return -1;
	cc->failed = true;
	if (s != NULL) {
		file = config_setting_source_file(s);
		line = (int)config_setting_source_line(s);
		if (config_setting_name(s) != NULL)
			snprintf(path, sizeof(path), "%s: ",
			    config_setting_name(s));
	}
	if (file == NULL)
		file = cc->conf->file;
	if (line > 0)
		n = snprintf(cc->err, CONF_ERRSZ, "%s:%d: %s", file, line, path);
	else
		n = snprintf(cc->err, CONF_ERRSZ, "%s: %s", file, path);
	if (n < 0 || n >= CONF_ERRSZ)
		return -1;
	va_start(ap, fmt);
	vsnprintf(cc->err + n, CONF_ERRSZ - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* conf_err for a message that may start with the setting's own name
 * (common/parent_conf.c's do: a module's report has no path), which
 * conf_err would print twice. */
int
conf_err_at(struct conf_ctx *cc, const config_setting_t *s, const char *why)
{
	const char	*name = s != NULL ? config_setting_name(s) : NULL;
	size_t		 n = name != NULL ? strlen(name) : 0;

	if (n > 0 && strncmp(why, name, n) == 0 && why[n] == ':' &&
	    why[n + 1] == ' ')
		why += n + 2;
	return conf_err(cc, s, "%s", why);
}

bool
conf_key_known(const char *name, const char *const *keys)
{
	for (; *keys != NULL; keys++)
		if (strcmp(name, *keys) == 0)
			return true;
	return false;
}

/* Refuses any member of group <g> not in <keys>: a typo must not pass. */
int
conf_check_keys(struct conf_ctx *cc, const config_setting_t *g,
    const char *const *keys)
{
	config_setting_t	*m;
	int			 i;

	for (i = 0; (m = config_setting_get_elem(g, (unsigned)i)) != NULL;
	    i++) {
		if (config_setting_name(m) == NULL ||
		    conf_key_known(config_setting_name(m), keys))
			continue;
		return conf_err(cc, m, "unknown option");
	}
	return 0;
}

bool
conf_is_int(const config_setting_t *s)
{
	return config_setting_type(s) == CONFIG_TYPE_INT ||
	    config_setting_type(s) == CONFIG_TYPE_INT64;
}

/* Integer member <name> of <g> in [min, max], or <def> when absent. */
int
conf_int(struct conf_ctx *cc, const config_setting_t *g, const char *name,
    long long min, long long max, long long def, long long *out)
{
	config_setting_t	*s;
	long long		 v;

	*out = def;
	if (g == NULL || (s = config_setting_get_member(g, name)) == NULL)
		return 0;
	if (!conf_is_int(s))
		return conf_err(cc, s, "expected an integer");
	v = config_setting_get_int64(s);
	if (v < min || v > max)
		return conf_err(cc, s, "%lld out of range (%lld-%lld)", v,
		    min, max);
	*out = v;
	return 0;
}

/* String member <name> of <g>, copied, or a copy of <def> (may be NULL). */
int
conf_str(struct conf_ctx *cc, const config_setting_t *g, const char *name,
    const char *def, char **out)
{
	config_setting_t	*s;
	const char		*v = def;

	*out = NULL;
	if (g != NULL && (s = config_setting_get_member(g, name)) != NULL) {
		if (config_setting_type(s) != CONFIG_TYPE_STRING)
			return conf_err(cc, s, "expected a string");
		v = config_setting_get_string(s);
		if (v[0] == '\0')
			return conf_err(cc, s, "must not be empty");
	}
	if (v != NULL && (*out = strdup(v)) == NULL)
		return conf_err(cc, NULL, "out of memory");
	return 0;
}

int
conf_usable_cpus(int *cpus_out, int max)
{
	cpu_set_t	 set;
	int		 n = 0, cpu, limit = max, quota;

	/* A container's or a unit's CPU quota caps the worker count even
	 * when more CPUs are visible (master/cgroup.c). */
	if ((quota = cgroup_cpu_limit("/proc/self/cgroup", "/sys/fs/cgroup"))
	    > 0 && quota < max)
		limit = quota;
	if (sched_getaffinity(0, sizeof(set), &set) < 0) {
		cpus_out[0] = 0;
		return 1;
	}
	for (cpu = 0; cpu < CPU_SETSIZE && n < max; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus_out[n++] = cpu;
	if (n == 0)
		cpus_out[n++] = 0;
	return n < limit ? n : limit;
}

static bool
conf_cpu_usable(int cpu)
{
	cpu_set_t	 set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return true;
	return CPU_ISSET(cpu, &set);
}

static int
conf_workers(struct conf_ctx *cc, const config_setting_t *root)
{
	struct pt_config	*conf = cc->conf;
	config_setting_t	*s, *e;
	int			 usable[CONF_MAX_WORKERS], nusable, i, n;

	nusable = conf_usable_cpus(usable, CONF_MAX_WORKERS);
	conf->workers = 1;
	s = config_setting_get_member(root, "workers");
	if (s == NULL || (config_setting_type(s) == CONFIG_TYPE_STRING &&
	    strcmp(config_setting_get_string(s), "auto") == 0)) {
		conf->workers_auto = true;
		conf->workers = nusable;
	} else if (conf_is_int(s)) {
		long long v = config_setting_get_int64(s);

		if (v < 1 || v > CONF_MAX_WORKERS)
			return conf_err(cc, s, "%lld out of range (1-%d)", v,
			    CONF_MAX_WORKERS);
		conf->workers = (int)v;
	} else {
		return conf_err(cc, s, "expected an integer or \"auto\"");
	}

	conf->pin = true;
	s = config_setting_get_member(root, "cpu_affinity");
	if (s == NULL || (config_setting_type(s) == CONFIG_TYPE_STRING &&
	    strcmp(config_setting_get_string(s), "auto") == 0)) {
		for (i = 0; i < conf->workers; i++)
			conf->cpus[i] = usable[i % nusable];
		return 0;
	}
	if (config_setting_type(s) == CONFIG_TYPE_STRING &&
	    strcmp(config_setting_get_string(s), "none") == 0) {
		conf->pin = false;
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_ARRAY &&
	    config_setting_type(s) != CONFIG_TYPE_LIST)
		return conf_err(cc, s,
		    "expected \"auto\", \"none\" or a list of CPU numbers");
	n = config_setting_length(s);
	if (n == 0)
		return conf_err(cc, s, "empty CPU list");
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned)i);
		if (!conf_is_int(e) || config_setting_get_int64(e) < 0 ||
		    config_setting_get_int64(e) >= CPU_SETSIZE)
			return conf_err(cc, s, "element %d: expected a CPU "
			    "number (0-%d)", i + 1, CPU_SETSIZE - 1);
		if (!conf_cpu_usable((int)config_setting_get_int64(e)))
			return conf_err(cc, s, "CPU %lld is not available to "
			    "this process", config_setting_get_int64(e));
	}
	/* Worker slot i takes the i-th CPU, wrapping like nginx does when
	 * the list is shorter than the worker count. */
	for (i = 0; i < conf->workers; i++)
		conf->cpus[i] = (int)config_setting_get_int64(
		    config_setting_get_elem(s, (unsigned)(i % n)));
	return 0;
}

static int
conf_user(struct conf_ctx *cc, const config_setting_t *root)
{
	struct pt_config	*conf = cc->conf;
	struct passwd		*pw;
	struct group		*gr;

	conf->uid = (uid_t)-1;
	conf->gid = (gid_t)-1;
	if (conf_str(cc, root, "user", NULL, &conf->user) < 0 ||
	    conf_str(cc, root, "group", NULL, &conf->group) < 0)
		return -1;
	if (conf->user != NULL) {
		if ((pw = getpwnam(conf->user)) == NULL)
			return conf_err(cc, config_setting_get_member(root,
			    "user"), "no such user \"%s\"", conf->user);
		conf->uid = pw->pw_uid;
		conf->gid = pw->pw_gid;
	}
	if (conf->group != NULL) {
		if ((gr = getgrnam(conf->group)) == NULL)
			return conf_err(cc, config_setting_get_member(root,
			    "group"), "no such group \"%s\"", conf->group);
		conf->gid = gr->gr_gid;
	}
	return 0;
}

/* transport = "module": the named module's transport replaces plain
 * socket I/O on the client leg of this listener. */
static int
conf_transport(struct conf_ctx *cc, config_setting_t *s,
    struct conf_listener *l)
{
	struct pt_config	*conf = cc->conf;
	config_setting_t	*m;
	const char		*name;
	int			 i;

	if ((m = config_setting_get_member(s, "transport")) == NULL)
		return 0;
	if (config_setting_type(m) != CONFIG_TYPE_STRING)
		return conf_err(cc, m, "expected a module name");
	name = config_setting_get_string(m);
	for (i = 0; i < conf->nmodules; i++) {
		if (strcmp(conf->modules[i].name, name) != 0)
			continue;
		if (conf->modules[i].mod->mod->transport == NULL)
			return conf_err(cc, m, "module \"%s\" has no "
			    "transport", name);
		l->transport_mod = conf->modules[i].mod->mod;
		return 0;
	}
	return conf_err(cc, m, "module \"%s\" is not in \"modules\"", name);
}

/* name = "...": what modules and their logs call the listener; the
 * address as written when absent. Uniqueness is checked by the caller. */
static int
conf_listener_name(struct conf_ctx *cc, config_setting_t *s,
    struct conf_listener *l)
{
	config_setting_t	*m;
	const char		*v;
	size_t			 i;

	if ((m = config_setting_get_member(s, "name")) == NULL) {
		if ((l->name = strdup(l->address)) == NULL)
			return conf_err(cc, s, "out of memory");
		return 0;
	}
	if (config_setting_type(m) != CONFIG_TYPE_STRING)
		return conf_err(cc, m, "expected a string");
	v = config_setting_get_string(m);
	if (v[0] == '\0' || strlen(v) > PT_NAME_MAX)
		return conf_err(cc, m, "name: 1 to %d characters", PT_NAME_MAX);
	for (i = 0; v[i] != '\0'; i++)
		if (!isalnum((unsigned char)v[i]) && strchr("_.-", v[i]) == NULL)
			return conf_err(cc, m, "name \"%s\": only letters, "
			    "digits, '_', '.' and '-'", v);
	if ((l->name = strdup(v)) == NULL)
		return conf_err(cc, m, "out of memory");
	return 0;
}

/* conf_listener.mod_skip has a bit per module of a configuration. */
_Static_assert(MODLOAD_MAX <= 32, "mod_skip holds MODLOAD_MAX bits");

/* The loaded module named <name>, or NULL. */
static struct conf_module *
conf_module_named(struct pt_config *conf, const char *name)
{
	int	 i;

	for (i = 0; i < conf->nmodules; i++)
		if (strcmp(conf->modules[i].name, name) == 0)
			return &conf->modules[i];
	return NULL;
}

/*
 * A listener's members: its own keys, and groups named after modules
 * that take listener options (tls = { ... }). A group named after a
 * module that is not loaded, or that takes none, is refused: an option
 * that silently does nothing is a policy not applied.
 */
static int
conf_listener_keys_check(struct conf_ctx *cc, const config_setting_t *s)
{
	struct conf_module	*cm;
	config_setting_t	*m;
	const char		*name;
	int			 i;

	for (i = 0; (m = config_setting_get_elem(s, (unsigned)i)) != NULL;
	    i++) {
		name = config_setting_name(m);
		if (name == NULL || conf_key_known(name, conf_listener_keys) ||
		    conf_key_known(name, egress_keys))
			continue;
		if ((cm = conf_module_named(cc->conf, name)) != NULL) {
			if (cm->mod->mod->listener_conf == NULL)
				return conf_err(cc, m, "module \"%s\" takes "
				    "no listener options", name);
			if (config_setting_type(m) != CONFIG_TYPE_GROUP)
				return conf_err(cc, m, "expected a group "
				    "{ ... } of module \"%s\"'s options",
				    name);
			continue;
		}
		if (config_setting_type(m) == CONFIG_TYPE_GROUP)
			return conf_err(cc, m, "no module \"%s\" in "
			    "\"modules\" for these listener options", name);
		return conf_err(cc, m, "unknown option");
	}
	return 0;
}

/* A 1.0 module had no flags to say it checks credentials: its AUTH hook
 * said so (SOCKS5 then offered username/password only). */
static bool
conf_module_credentials(const struct pt_module *m)
{
	const struct pt_hook	*h;

	if (m->flags & PT_MODF_CREDENTIALS)
		return true;
	if (m->abi_minor > 0)
		return false;
	for (h = m->hooks; h != NULL && h->fn != NULL; h++)
		if (h->phase == PT_PHASE_AUTH)
			return true;
	return false;
}

/*
 * Asks every module with listener_conf whether it applies to listener
 * <l>, with the listener's group named after it: which modules' hooks
 * run for its connections (mod_skip), their per-listener state
 * (mod_lctx), and whether SOCKS5 asks for credentials there.
 */
static int
conf_listener_modules(struct conf_ctx *cc, config_setting_t *s,
    struct conf_listener *l)
{
	struct pt_config	*conf = cc->conf;
	struct conf_module	*cm;
	const config_setting_t	*where;
	config_setting_t	*node;
	const char		*errstr;
	void			*lctx;
	int			 i, rc;

	for (i = 0; i < conf->nmodules; i++) {
		cm = &conf->modules[i];
		node = config_setting_get_member(s, cm->name);
		/* A transport module's group (certificates, client_ca) on a
		 * listener it does not wrap would configure nothing: the
		 * listener would serve in the clear, unchecked. */
		if (node != NULL && cm->mod->mod->transport != NULL &&
		    l->transport_mod != cm->mod->mod)
			return conf_err(cc, node, "module \"%s\" is a "
			    "transport, and this listener has no transport = "
			    "\"%s\": its group here would do nothing",
			    cm->name, cm->name);
		rc = modlife_listener_conf(cm, conf, (int)(l - conf->listeners),
		    node, &lctx, &errstr, &where);
		if (rc < 0)
			return conf_err(cc, where != NULL ? where : s,
			    "module \"%s\": %s", cm->name, errstr);
		if (lctx != NULL && l->mod_lctx == NULL &&
		    (l->mod_lctx = calloc((size_t)conf->nmodules,
		    sizeof(*l->mod_lctx))) == NULL) {
			modlife_listener_conf_free(cm, lctx);
			return conf_err(cc, NULL, "out of memory");
		}
		if (lctx != NULL)
			l->mod_lctx[i] = lctx;
		if (rc == 1) {
			l->mod_skip |= (uint32_t)1 << i;
			if (l->transport_mod == cm->mod->mod)
				return conf_err(cc, config_setting_get_member(s,
				    "transport"), "module \"%s\" does not "
				    "apply to this listener", cm->name);
			continue;
		}
		if (conf_module_credentials(cm->mod->mod))
			l->need_credentials = true;
	}
	return 0;
}

/*
 * proxy_protocol = { from = [ "10.0.0.0/8", ... ]; }: the balancers that
 * may send the header. `from` is required: trusting a header from anyone
 * would let any client name any source address.
 */
static int
conf_proxy_protocol(struct conf_ctx *cc, const config_setting_t *m,
    struct conf_listener *l)
{
	const config_setting_t	*from, *e;
	const char		*v, *why;
	int			 i, n;

	if (config_setting_type(m) != CONFIG_TYPE_GROUP)
		return conf_err(cc, m, "expected a group { from = [ ... ]; }");
	if (conf_check_keys(cc, m, conf_proxy_protocol_keys) < 0)
		return -1;
	if ((from = config_setting_get_member(m, "from")) == NULL)
		return conf_err(cc, m, "proxy_protocol: missing \"from\" (the "
		    "networks of the balancers that send the header)");
	n = config_setting_type(from) == CONFIG_TYPE_STRING ? 1 :
	    config_setting_is_aggregate(from) ? config_setting_length(from) : 0;
	if (n < 1)
		return conf_err(cc, from, "expected a network, or a list of "
		    "them (\"10.0.0.0/8\", \"::1\")");
	if ((l->pp_from = calloc((size_t)n, sizeof(*l->pp_from))) == NULL)
		return conf_err(cc, from, "out of memory");
	for (i = 0; i < n; i++) {
		e = config_setting_type(from) == CONFIG_TYPE_STRING ? from :
		    config_setting_get_elem(from, (unsigned)i);
		if ((v = config_setting_get_string(e)) == NULL)
			return conf_err(cc, e, "expected a network as a string");
		if (net_prefix_parse(v, &l->pp_from[i], &why) < 0)
			return conf_err(cc, e, "\"%s\": %s", v, why);
		l->pp_nfrom++;
	}
	l->proxy_protocol = true;
	return 0;
}

/*
 * udp_advertise: a numeric address, or a list of one IPv4 and one IPv6
 * address (a dual-stack listener behind NAT has one of each); a client
 * is told the one of its own family. Which families the listener takes
 * is known only once all listeners are read (conf_dual_stack), so
 * conf_udp_advertise_fits checks that later.
 */
static int
conf_udp_advertise(struct conf_ctx *cc, const config_setting_t *m,
    struct conf_listener *l)
{
	const config_setting_t	*e;
	const char		*a, *errstr;
	struct pt_addr		 addr;
	char			 withport[128];
	int			 i, n, fam;

	if (l->proto != CONF_PROTO_SOCKS && l->proto != CONF_PROTO_AUTO)
		return conf_err(cc, m, "only for protocol \"socks5\" or "
		    "\"auto\"");
	n = config_setting_type(m) == CONFIG_TYPE_STRING ? 1 :
	    config_setting_is_aggregate(m) ? config_setting_length(m) : 0;
	if (n < 1 || n > 2)
		return conf_err(cc, m, "expected a numeric address, or a list "
		    "of an IPv4 and an IPv6 one");
	for (i = 0; i < n; i++) {
		e = config_setting_type(m) == CONFIG_TYPE_STRING ? m :
		    config_setting_get_elem(m, (unsigned)i);
		if ((a = config_setting_get_string(e)) == NULL)
			return conf_err(cc, e, "expected a numeric address");
		/* "192.0.2.1", "2001:db8::1" or "[2001:db8::1]" */
		snprintf(withport, sizeof(withport), a[0] != '[' &&
		    strchr(a, ':') ? "[%s]:1" : "%s:1", a);
		if (sockaddr_parse(withport, &addr, &errstr) < 0)
			return conf_err(cc, e, "\"%s\": %s", a, errstr);
		fam = addr.sa.ss_family == AF_INET6 ? 1 : 0;
		if (l->udp_advertise[fam].sa.ss_family != 0)
			return conf_err(cc, e, "\"%s\": a second %s address (one "
			    "of each family at most)", a, fam ? "IPv6" : "IPv4");
		l->udp_advertise[fam] = addr;
	}
	return 0;
}

/* An advertised address of a family the listener never takes a client
 * of would only be told to nobody: a typo of the operator's. */
static int
conf_udp_advertise_fits(struct conf_ctx *cc, const config_setting_t *e,
    const struct conf_listener *l)
{
	const char	*why = NULL;

	if (l->addr.sa.ss_family == AF_INET &&
	    l->udp_advertise[1].sa.ss_family != 0)
		why = "an IPv6 address for a listener that takes only IPv4 "
		    "clients";
	else if (l->addr.sa.ss_family == AF_INET6 && l->v6only &&
	    l->udp_advertise[0].sa.ss_family != 0)
		why = "an IPv4 address for a listener that takes only IPv6 "
		    "clients (ipv6only, a specific address, or \"*:port\" "
		    "beside it)";
	if (why == NULL)
		return 0;
	return conf_err(cc, config_setting_get_member(e, "udp_advertise"),
	    "udp_advertise: %s", why);
}

/* egress, egress_stable (common/egress.c): where the listener's
 * outgoing connections leave from. */
static int
conf_listener_egress(struct conf_ctx *cc, config_setting_t *s,
    struct conf_listener *l)
{
	const config_setting_t	*where;
	struct pt_egress	*e;
	char			 why[256];
	unsigned		 fams;

	if (egress_parse(s, &l->egress, &where, why, sizeof(why)) < 0)
		return conf_err(cc, where, "%s", why);
	if ((e = l->egress) == NULL)
		return 0;
	where = config_setting_get_member(s, "egress");
	if (l->proto == CONF_PROTO_STATUS)
		return conf_err(cc, where, "a status listener connects "
		    "nowhere");
	/* A tcp listener's one target: its family is known now ("same"
	 * on a wildcard address is known per connection only). */
	fams = egress_families(e, NULL);
	if (l->proto == CONF_PROTO_TCP && !e->same &&
	    !(fams & (l->to_addr.sa.ss_family == AF_INET6 ? EGRESS_FAM_V6 :
	    EGRESS_FAM_V4)))
		return conf_err(cc, where, "\"%s\" has no %s address to "
		    "reach \"%s\" from", e->text, l->to_addr.sa.ss_family ==
		    AF_INET6 ? "IPv6" : "IPv4", l->to);
	egress_register(e);
	return 0;
}

/* via (common/parent_conf.c): the parents the listener's traffic goes
 * through unless an acl rule names others. */
static int
conf_listener_via(struct conf_ctx *cc, config_setting_t *s,
    struct conf_listener *l)
{
	const config_setting_t	*where;
	char			 why[256];

	if (via_parse(s, &l->via, &where, why, sizeof(why)) < 0)
		return conf_err_at(cc, where, why);
	if (l->via != NULL && l->proto == CONF_PROTO_STATUS)
		return conf_err(cc, config_setting_get_member(s, "via"),
		    "via: a status listener connects nowhere");
	return 0;
}

/*
 * `http2`: HTTP/2 to the proxy on an http or auto listener (worker/h2.c),
 * on by default where portico was built with libnghttp2. Asked for in a
 * build without it, it is an error: the operator expects it to work.
 */
static int
conf_listener_http2(struct conf_ctx *cc, config_setting_t *s,
    struct conf_listener *l)
{
	config_setting_t	*m = config_setting_get_member(s, "http2");
	config_setting_t	*ms = config_setting_get_member(s,
				    "http2_max_streams");
	bool			 web = l->proto == CONF_PROTO_HTTP ||
				    l->proto == CONF_PROTO_AUTO;
	long long		 v;

#ifdef HAVE_NGHTTP2
	l->http2 = web;
#endif
	/* As nginx's http2_max_concurrent_streams, 128 there. */
	if (ms != NULL && !web)
		return conf_err(cc, ms, "only for protocol \"http\" or "
		    "\"auto\"");
	if (conf_int(cc, s, "http2_max_streams", 1, 1000, 100, &v) < 0)
		return -1;
	l->http2_max_streams = (unsigned)v;
	if (m == NULL)
		return 0;
	if (!web)
		return conf_err(cc, m, "only for protocol \"http\" or "
		    "\"auto\"");
	if (config_setting_type(m) != CONFIG_TYPE_BOOL)
		return conf_err(cc, m, "expected true or false");
	l->http2 = config_setting_get_bool(m);
#ifndef HAVE_NGHTTP2
	if (l->http2)
		return conf_err(cc, m, "portico was built without HTTP/2 "
		    "(configure found no libnghttp2)");
#endif
	return 0;
}

static int
conf_listener(struct conf_ctx *cc, config_setting_t *s,
    struct conf_listener *l)
{
	config_setting_t	*m;
	const char		*errstr, *proto;
	char			 host[256];
	uint16_t		 port;
	long long		 v;

	l->line = (int)config_setting_source_line(s);
	if (config_setting_type(s) != CONFIG_TYPE_GROUP)
		return conf_err(cc, s, "listener: expected a group { ... }");
	if (conf_listener_keys_check(cc, s) < 0)
		return -1;
	if ((m = config_setting_get_member(s, "address")) == NULL)
		return conf_err(cc, s, "listener: missing \"address\"");
	if (conf_str(cc, s, "address", NULL, &l->address) < 0)
		return -1;
	if (sockaddr_parse(l->address, &l->addr, &errstr) < 0)
		return conf_err(cc, m, "\"%s\": %s", l->address, errstr);
	if (conf_listener_name(cc, s, l) < 0)
		return -1;

	if ((m = config_setting_get_member(s, "protocol")) == NULL)
		return conf_err(cc, s, "listener: missing \"protocol\"");
	if (config_setting_type(m) != CONFIG_TYPE_STRING)
		return conf_err(cc, m, "expected a string");
	proto = config_setting_get_string(m);
	if (strcmp(proto, "tcp") == 0)
		l->proto = CONF_PROTO_TCP;
	else if (strcmp(proto, "http") == 0)
		l->proto = CONF_PROTO_HTTP;
	else if (strcmp(proto, "socks5") == 0)
		l->proto = CONF_PROTO_SOCKS;
	else if (strcmp(proto, "auto") == 0)
		l->proto = CONF_PROTO_AUTO;
	else if (strcmp(proto, "status") == 0)
		l->proto = CONF_PROTO_STATUS;
	else
		return conf_err(cc, m, "unknown protocol \"%s\" (expected "
		    "\"tcp\", \"http\", \"socks5\", \"auto\" or "
		    "\"status\")", proto);

	m = config_setting_get_member(s, "to");
	if (l->proto == CONF_PROTO_TCP) {
		if (m == NULL)
			return conf_err(cc, s, "listener: protocol \"tcp\" "
			    "needs \"to\"");
		if (conf_str(cc, s, "to", NULL, &l->to) < 0)
			return -1;
		if (sockaddr_resolve(l->to, &l->to_addr, &errstr) < 0)
			return conf_err(cc, m, "\"%s\": %s", l->to, errstr);
		if (sockaddr_split(l->to, host, sizeof(host), &port,
		    &errstr) < 0 || (l->to_host = strdup(host)) == NULL)
			return conf_err(cc, m, "out of memory");
	} else if (m != NULL) {
		return conf_err(cc, m, "only for protocol \"tcp\"");
	}
	if (conf_int(cc, s, "backlog", 1, 65535, 4096, &v) < 0)
		return -1;
	l->backlog = (int)v;
	if ((m = config_setting_get_member(s, "ipv6only")) != NULL) {
		if (l->addr.sa.ss_family != AF_INET6)
			return conf_err(cc, m, "only for an IPv6 address");
		if (config_setting_type(m) != CONFIG_TYPE_BOOL)
			return conf_err(cc, m, "expected true or false");
		l->v6only = config_setting_get_bool(m);
	} else
		l->v6only = l->addr.sa.ss_family == AF_INET6 &&
		    !IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)
		    &l->addr.sa)->sin6_addr);
	if ((m = config_setting_get_member(s, "udp_advertise")) != NULL &&
	    conf_udp_advertise(cc, m, l) < 0)
		return -1;
	if ((m = config_setting_get_member(s, "udp_replies")) != NULL) {
		const char	*r = config_setting_get_string(m);

		if (l->proto != CONF_PROTO_SOCKS && l->proto != CONF_PROTO_AUTO)
			return conf_err(cc, m, "only for protocol \"socks5\" "
			    "or \"auto\"");
		if (r == NULL || (strcmp(r, "contacted") != 0 &&
		    strcmp(r, "any") != 0))
			return conf_err(cc, m, "expected \"contacted\" or "
			    "\"any\"");
		l->udp_replies_any = strcmp(r, "any") == 0;
	}
	if ((m = config_setting_get_member(s, "proxy_protocol")) != NULL &&
	    conf_proxy_protocol(cc, m, l) < 0)
		return -1;
	if (conf_listener_http2(cc, s, l) < 0 ||
	    conf_listener_egress(cc, s, l) < 0 ||
	    conf_listener_via(cc, s, l) < 0 ||
	    conf_transport(cc, s, l) < 0)
		return -1;
	return conf_listener_modules(cc, s, l);
}

/* The port of "*:port" (any IPv4 address), or -1. */
static int
conf_any4_port(const struct conf_listener *l)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&l->addr.sa;

	if (l->addr.sa.ss_family != AF_INET ||
	    sin->sin_addr.s_addr != htonl(INADDR_ANY))
		return -1;
	return ntohs(sin->sin_port);
}

/*
 * "[::]:port" is dual-stack, as the kernel's default and most proxies
 * have it (IPv4 clients arrive as ::ffff:a.b.c.d, which everything
 * judges as IPv4), except where the operator split the families: with
 * "*:port" in the configuration too, it is IPv6 only, so both can bind.
 * An explicit `ipv6only` decides alone.
 */
static void
conf_dual_stack(struct pt_config *conf, const config_setting_t *list)
{
	struct conf_listener	*l;
	const struct sockaddr_in6 *sin6;
	int			 i, j;

	for (i = 0; i < conf->nlisteners; i++) {
		l = &conf->listeners[i];
		sin6 = (const struct sockaddr_in6 *)&l->addr.sa;
		if (l->addr.sa.ss_family != AF_INET6 ||
		    !IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr) ||
		    config_setting_get_member(config_setting_get_elem(list,
		    (unsigned)i), "ipv6only") != NULL)
			continue;
		for (j = 0; j < conf->nlisteners; j++)
			if (conf_any4_port(&conf->listeners[j]) ==
			    ntohs(sin6->sin6_port))
				l->v6only = true;
	}
}

static int
conf_listeners(struct conf_ctx *cc, const config_setting_t *root)
{
	struct pt_config	*conf = cc->conf;
	config_setting_t	*s;
	int			 i, j, n;

	s = config_setting_get_member(root, "listeners");
	if (s == NULL)
		return conf_err(cc, NULL, "no \"listeners\": nothing to serve");
	if (config_setting_type(s) != CONFIG_TYPE_LIST)
		return conf_err(cc, s, "expected a list ( { ... }, ... )");
	n = config_setting_length(s);
	if (n == 0)
		return conf_err(cc, s, "empty list: nothing to serve");
	if ((conf->listeners = calloc((size_t)n, sizeof(*conf->listeners)))
	    == NULL)
		return conf_err(cc, NULL, "out of memory");
	conf->nlisteners = n;
	for (i = 0; i < n; i++) {
		config_setting_t *e = config_setting_get_elem(s, (unsigned)i);

		conf->listeners[i].idx = i;
		if (conf_listener(cc, e, &conf->listeners[i]) < 0)
			return -1;
		for (j = 0; j < i; j++) {
			if (sockaddr_equal(&conf->listeners[j].addr,
			    &conf->listeners[i].addr))
				return conf_err(cc, e, "duplicate listener "
				    "\"%s\" (first at line %d)",
				    conf->listeners[i].address,
				    conf->listeners[j].line);
			if (strcmp(conf->listeners[j].name,
			    conf->listeners[i].name) == 0)
				return conf_err(cc, e, "duplicate listener "
				    "name \"%s\" (first at line %d)",
				    conf->listeners[i].name,
				    conf->listeners[j].line);
		}
	}
	conf_dual_stack(conf, s);
	for (i = 0; i < n; i++)
		if (conf_udp_advertise_fits(cc, config_setting_get_elem(s,
		    (unsigned)i), &conf->listeners[i]) < 0)
			return -1;
	return 0;
}

/* A group member of <root>, checked to be a group with known keys;
 * NULL when absent. */
int
conf_group(struct conf_ctx *cc, const config_setting_t *root,
    const char *name, const char *const *keys, config_setting_t **out)
{
	config_setting_t	*g;

	*out = NULL;
	if ((g = config_setting_get_member(root, name)) == NULL)
		return 0;
	if (config_setting_type(g) != CONFIG_TYPE_GROUP)
		return conf_err(cc, g, "expected a group { ... }");
	if (conf_check_keys(cc, g, keys) < 0)
		return -1;
	*out = g;
	return 0;
}

/* Smallest worker_memory: below a few connections' worth it only
 * serves tests. */
#define CONF_MEMORY_MIN		65536LL

/*
 * limits.worker_memory: "auto" (absent too), 0 or "none" for no ceiling,
 * an integer in bytes, or a string with a k, m or g suffix (powers of
 * 1024), as operators write sizes for nginx and Squid.
 */
static int
conf_worker_memory(struct conf_ctx *cc, const config_setting_t *g,
    long long *out)
{
	config_setting_t	*s;
	const char		*str;
	char			*end;
	long long		 v;
	int			 shift = 0;

	*out = CONF_MEMORY_AUTO;
	if (g == NULL || (s = config_setting_get_member(g, "worker_memory")) ==
	    NULL)
		return 0;
	if (conf_is_int(s))
		v = config_setting_get_int64(s);
	else if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		str = config_setting_get_string(s);
		if (strcmp(str, "auto") == 0)
			return 0;
		if (strcmp(str, "none") == 0) {
			*out = 0;
			return 0;
		}
		errno = 0;
		v = strtoll(str, &end, 10);
		if (end == str || errno != 0 || v < 0)
			return conf_err(cc, s, "expected a size such as "
			    "\"512m\", \"auto\" or \"none\"");
		switch (*end) {
		case 'k': case 'K': shift = 10; end++; break;
		case 'm': case 'M': shift = 20; end++; break;
		case 'g': case 'G': shift = 30; end++; break;
		}
		if (*end != '\0')
			return conf_err(cc, s, "expected a size such as "
			    "\"512m\", \"auto\" or \"none\"");
		if (v > (1LL << 50) >> shift)
			return conf_err(cc, s, "too large");
		v <<= shift;
	} else
		return conf_err(cc, s, "expected a size in bytes or a string");
	if (v != 0 && (v < CONF_MEMORY_MIN || v > 1LL << 50))
		return conf_err(cc, s, "%lld out of range (0, or %lld and "
		    "more)", v, CONF_MEMORY_MIN);
	*out = v;
	return 0;
}

static int
conf_limits(struct conf_ctx *cc, const config_setting_t *root)
{
	struct conf_limits	*lim = &cc->conf->limits;
	config_setting_t	*g;
	long long		 v;

	if (conf_group(cc, root, "limits", conf_limits_keys, &g) < 0)
		return -1;
	if (conf_int(cc, g, "max_connections", 1, 1000000, 10000, &v) < 0)
		return -1;
	lim->max_connections = (unsigned)v;
	if (conf_int(cc, g, "header_timeout", 1, 86400, 10, &v) < 0)
		return -1;
	lim->header_timeout_ms = (unsigned)v * 1000;
	if (conf_int(cc, g, "connect_timeout", 1, 86400, 10, &v) < 0)
		return -1;
	lim->connect_timeout_ms = (unsigned)v * 1000;
	if (conf_int(cc, g, "idle_timeout", 1, 604800, 300, &v) < 0)
		return -1;
	lim->idle_timeout_ms = (unsigned)v * 1000;
	return conf_worker_memory(cc, g, &lim->worker_memory);
}

static int
conf_relay(struct conf_ctx *cc, const config_setting_t *root)
{
	struct pt_config	*conf = cc->conf;
	config_setting_t	*g, *m;
	const char		*method;
	long long		 v;

	/* auto: copy while a direction is interactive, splice while it is
	 * bulk; chosen by the worker's CPU per byte across load shapes
	 * (bench/RESULTS.md, "Relay method"). */
	conf->relay = CONF_RELAY_AUTO;
	if (conf_group(cc, root, "relay", conf_relay_keys, &g) < 0)
		return -1;
	if (g != NULL) {
		if ((m = config_setting_get_member(g, "method")) != NULL) {
			if (config_setting_type(m) != CONFIG_TYPE_STRING)
				return conf_err(cc, m, "expected a string");
			method = config_setting_get_string(m);
			if (strcmp(method, "splice") == 0)
				conf->relay = CONF_RELAY_SPLICE;
			else if (strcmp(method, "copy") == 0)
				conf->relay = CONF_RELAY_COPY;
			else if (strcmp(method, "auto") == 0)
				conf->relay = CONF_RELAY_AUTO;
			else
				return conf_err(cc, m, "expected \"auto\", "
				    "\"splice\" or \"copy\"");
		}
	}
	if (conf_int(cc, g, "buffer_size", 4096, 1048576, 16384, &v) < 0)
		return -1;
	conf->buffer_size = (unsigned)v;
	return 0;
}

int
conf_bool(struct conf_ctx *cc, const config_setting_t *g, const char *name,
    bool def, bool *out)
{
	config_setting_t	*s;

	*out = def;
	if (g == NULL || (s = config_setting_get_member(g, name)) == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return conf_err(cc, s, "expected true or false");
	*out = config_setting_get_bool(s);
	return 0;
}

static int
conf_connect_ports(struct conf_ctx *cc, const config_setting_t *g)
{
	struct conf_http	*h = &cc->conf->http;
	config_setting_t	*s, *e;
	long long		 v;
	int			 i, n;

	/* Squid's SSL_ports: CONNECT is for TLS, not for mail relaying. */
	h->connect_ports[0] = 443;
	h->connect_ports[1] = 563;
	h->nconnect_ports = 2;
	if (g == NULL || (s = config_setting_get_member(g, "connect_ports"))
	    == NULL)
		return 0;
	if (config_setting_type(s) == CONFIG_TYPE_STRING &&
	    strcmp(config_setting_get_string(s), "*") == 0) {
		h->connect_any = true;
		h->nconnect_ports = 0;
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_ARRAY &&
	    config_setting_type(s) != CONFIG_TYPE_LIST)
		return conf_err(cc, s, "expected a list of ports or \"*\"");
	n = config_setting_length(s);
	if (n > CONF_MAX_CONNECT_PORTS)
		return conf_err(cc, s, "at most %d ports",
		    CONF_MAX_CONNECT_PORTS);
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned)i);
		if (!conf_is_int(e))
			return conf_err(cc, s, "element %d: expected a port",
			    i + 1);
		v = config_setting_get_int64(e);
		if (v < 1 || v > 65535)
			return conf_err(cc, s, "element %d: port %lld out of "
			    "range (1-65535)", i + 1, v);
		h->connect_ports[i] = (uint16_t)v;
	}
	h->nconnect_ports = n;
	return 0;
}

static int
conf_http(struct conf_ctx *cc, const config_setting_t *root)
{
	struct conf_http	*h = &cc->conf->http;
	config_setting_t	*g;
	long long		 v;

	if (conf_group(cc, root, "http", conf_http_keys, &g) < 0 ||
	    conf_connect_ports(cc, g) < 0 ||
	    conf_bool(cc, g, "via", true, &h->via) < 0 ||
	    conf_str(cc, g, "via_pseudonym", NULL, &h->via_pseudonym) < 0)
		return -1;
	if (h->via_pseudonym != NULL && !conf_via_token(h->via_pseudonym))
		return conf_err(cc, config_setting_get_member(g,
		    "via_pseudonym"), "expected a token or host[:port] "
		    "(letters, digits, and !#$%%&'*+-.^_`|~:[])");
	if (conf_int(cc, g, "max_header_size", 1024, 1048576, 65536, &v) < 0)
		return -1;
	h->max_header_size = (unsigned)v;
	if (conf_int(cc, g, "upstream_keepalive", 0, 100000, 64, &v) < 0)
		return -1;
	h->upstream_keepalive = (unsigned)v;
	if (conf_int(cc, g, "upstream_idle_timeout", 1, 3600, 60, &v) < 0)
		return -1;
	h->upstream_idle_timeout_ms = (unsigned)v * 1000;
	/* 60 s like nginx's proxy_read_timeout; the same range as the
	 * other transaction timeouts. */
	if (conf_int(cc, g, "response_timeout", 1, 86400, 60, &v) < 0)
		return -1;
	h->response_timeout_ms = (unsigned)v * 1000;
	return 0;
}

/*
 * The hooks of module <cm>, added to the per-phase counts <nhooks>: a
 * phase this portico does not know, or more hooks in a phase than a
 * worker's table holds, would otherwise be skipped by every worker with
 * only a warning, and a skipped ACCESS hook is a policy not applied.
 */
static int
conf_module_hooks(struct conf_ctx *cc, const config_setting_t *e,
    const struct conf_module *cm, int nhooks[PT_PHASE_COUNT])
{
	const struct pt_hook	*h;
	int			 i;

	for (h = cm->mod->mod->hooks, i = 1; h != NULL && h->fn != NULL;
	    h++, i++) {
		if ((unsigned)h->phase >= PT_PHASE_COUNT)
			return conf_err(cc, e, "module \"%s\": hook %d is for "
			    "phase %d, which this portico does not have",
			    cm->name, i, (int)h->phase);
		if (++nhooks[h->phase] > MODLOAD_MAX_HOOKS)
			return conf_err(cc, e, "module \"%s\": more than %d "
			    "hooks in phase %d, all modules together",
			    cm->name, MODLOAD_MAX_HOOKS, (int)h->phase);
	}
	return 0;
}

static int
conf_modules(struct conf_ctx *cc, const config_setting_t *root)
{
	struct pt_config	*conf = cc->conf;
	struct conf_module	*cm;
	const config_setting_t	*where;
	config_setting_t	*s, *e, *m;
	const char		*errstr;
	int			 i, j, n, nhooks[PT_PHASE_COUNT] = { 0 };

	if ((s = config_setting_get_member(root, "modules")) == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_LIST)
		return conf_err(cc, s, "expected a list ( { name = ...; }, ... )");
	n = config_setting_length(s);
	if (n == 0)
		return 0;
	if ((conf->modules = calloc((size_t)n, sizeof(*conf->modules))) == NULL)
		return conf_err(cc, NULL, "out of memory");
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned)i);
		cm = &conf->modules[i];
		cm->line = (int)config_setting_source_line(e);
		if (config_setting_type(e) != CONFIG_TYPE_GROUP)
			return conf_err(cc, e, "module: expected a group");
		if ((m = config_setting_get_member(e, "name")) == NULL)
			return conf_err(cc, e, "module: missing \"name\"");
		if (conf_str(cc, e, "name", NULL, &cm->name) < 0)
			return -1;
		conf->nmodules = i + 1;
		for (j = 0; j < i; j++)
			if (strcmp(conf->modules[j].name, cm->name) == 0)
				return conf_err(cc, m, "module \"%s\" listed "
				    "twice (first at line %d)", cm->name,
				    conf->modules[j].line);
		if (conf_str(cc, e, "path", NULL, &cm->path) < 0)
			return -1;
		cm->mod = modload_open(cm->name, cm->path, conf->module_dir,
		    &errstr);
		if (cm->mod == NULL)
			return conf_err(cc, e, "module \"%s\": %s", cm->name,
			    errstr);
		if (conf_module_hooks(cc, e, cm, nhooks) < 0)
			return -1;
		if (modlife_conf(cm, conf, e, &errstr, &where) < 0)
			return conf_err(cc, where, "module \"%s\": %s",
			    cm->name, errstr);
	}
	return 0;
}

/* A file the master creates (pid_file, error_log) needs its directory:
 * without it the start fails, after -t said all was well. */
static int
conf_dir_exists(struct conf_ctx *cc, const config_setting_t *root,
    const char *key, const char *path)
{
	char		 dir[PATH_MAX];
	const char	*slash;
	struct stat	 st;

	if (path == NULL || strcmp(path, "stderr") == 0 ||
	    (slash = strrchr(path, '/')) == NULL)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
	    (int)(slash - path), path);
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	return conf_err(cc, config_setting_get_member(root, key),
	    "\"%s\": %s", path, stat(dir, &st) == 0 ? "its directory is "
	    "not a directory" : "its directory does not exist");
}

static int
conf_root(struct conf_ctx *cc, const config_setting_t *root)
{
	struct pt_config	*conf = cc->conf;
	char			*level = NULL;
	long long		 v;

	if (conf_check_keys(cc, root, conf_root_keys) < 0 ||
	    conf_workers(cc, root) < 0 || conf_user(cc, root) < 0 ||
	    conf_str(cc, root, "pid_file", NULL, &conf->pid_file) < 0 ||
	    conf_str(cc, root, "error_log", "stderr", &conf->error_log) < 0 ||
	    conf_str(cc, root, "module_dir", PT_MODULEDIR,
	    &conf->module_dir) < 0 ||
	    conf_str(cc, root, "log_level", "notice", &level) < 0 ||
	    conf_dir_exists(cc, root, "pid_file", conf->pid_file) < 0 ||
	    conf_dir_exists(cc, root, "error_log", conf->error_log) < 0)
		goto fail;
	conf->log_level = log_level_parse(level);
	if (conf->log_level < 0) {
		conf_err(cc, config_setting_get_member(root, "log_level"),
		    "expected error, warn, notice, info or debug");
		goto fail;
	}
	if (conf_int(cc, root, "shutdown_timeout", 0, 86400, 30, &v) < 0)
		goto fail;
	conf->shutdown_timeout_ms = (unsigned)v * 1000;
	if (conf_bool(cc, root, "tcp_migrate_req", true,
	    &conf->tcp_migrate_req) < 0)
		goto fail;
	if (conf_limits(cc, root) < 0 || conf_relay(cc, root) < 0 ||
	    conf_http(cc, root) < 0 || conf_resolver(cc, root) < 0 ||
	    conf_parents(cc, root) < 0 ||
	    conf_modules(cc, root) < 0 || conf_parents_tls(cc, root) < 0 ||
	    conf_listeners(cc, root) < 0 ||
	    conf_parents_not_ours(cc, root) < 0 ||
	    conf_via_pseudonym(cc) < 0)
		goto fail;
	free(level);
	return 0;
fail:
	free(level);
	return -1;
}

struct pt_config *
conf_load(const char *file, char err[CONF_ERRSZ])
{
	struct pt_config	*conf;
	struct conf_ctx		 cc;
	const char		*incdir;

	if ((conf = calloc(1, sizeof(*conf))) == NULL) {
		snprintf(err, CONF_ERRSZ, "%s: out of memory", file);
		return NULL;
	}
	config_init(&conf->cfg);
	if ((conf->file = strdup(file)) == NULL) {
		snprintf(err, CONF_ERRSZ, "%s: out of memory", file);
		conf_free(conf);
		return NULL;
	}
	/* @include "x.conf" means next to this file, as in nginx, not
	 * relative to wherever portico happened to be started. */
	{
		char	*slash = strrchr(conf->file, '/');

		if (slash != NULL) {
			*slash = '\0';
			config_set_include_dir(&conf->cfg,
			    slash == conf->file ? "/" : conf->file);
			*slash = '/';
		}
	}
	incdir = config_get_include_dir(&conf->cfg);
	if (config_read_file(&conf->cfg, file) != CONFIG_TRUE) {
		if (config_error_type(&conf->cfg) == CONFIG_ERR_FILE_IO)
			snprintf(err, CONF_ERRSZ, "%s: cannot read: %s", file,
			    strerror(errno));
		else
			snprintf(err, CONF_ERRSZ, "%s:%d: %s",
			    config_error_file(&conf->cfg) ?
			    config_error_file(&conf->cfg) : file,
			    config_error_line(&conf->cfg),
			    config_error_text(&conf->cfg));
		conf_free(conf);
		return NULL;
	}
	if (conf_check_ints(file, incdir, err, CONF_ERRSZ) < 0) {
		conf_free(conf);
		return NULL;
	}
	cc.conf = conf;
	cc.err = err;
	cc.failed = false;
	if (conf_root(&cc, config_root_setting(&conf->cfg)) < 0) {
		conf_free(conf);
		return NULL;
	}
	return conf;
}

void
conf_free(struct pt_config *conf)
{
	int	 i;

	if (conf == NULL)
		return;
	/* First: it releases the listeners' module states too. */
	modlife_drop(conf);
	for (i = 0; i < conf->nlisteners; i++) {
		free(conf->listeners[i].mod_lctx);
		free(conf->listeners[i].address);
		free(conf->listeners[i].name);
		free(conf->listeners[i].to);
		free(conf->listeners[i].to_host);
		free(conf->listeners[i].pp_from);
		egress_free(conf->listeners[i].egress);
		free(conf->listeners[i].via);
	}
	for (i = 0; i < conf->nparents; i++)
		upstream_tls_conf_free(conf->parents[i].tls_mod,
		    conf->parents[i].tls_ctx);
	parent_conf_free(conf->parents, conf->nparents);
	free(conf->http.via_pseudonym);
	free(conf->listeners);
	for (i = 0; i < conf->nmodules; i++) {
		free(conf->modules[i].name);
		free(conf->modules[i].path);
	}
	free(conf->modules);
	free(conf->file);
	free(conf->user);
	free(conf->group);
	free(conf->pid_file);
	free(conf->error_log);
	free(conf->module_dir);
	free(conf->resolver.servers);
	config_destroy(&conf->cfg);
	free(conf);
}
