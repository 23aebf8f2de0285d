/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ACL's configuration, read in the master at start-up and at each
 * reload: the module's entry in `modules` with its ordered `rules`. Every
 * error names the setting it is about (the core prints that setting's
 * file and line), a regex error carries PCRE2's message and offset, and a
 * host_file error its own file's line. Nothing here runs in a worker.
 */
#include "modules/acl/rules.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/common/conf_list.h"
#include "modules/common/conf_opts.h"

struct acl_parse {
	struct conf_err		 e;		/* prefix: "rule 3 (\"web\")" */
	const config_setting_t	*root;		/* for listener names */
};

static const char *const acl_keys[] = {
	"name", "path", "default", "allow_private", "rules", NULL
};

/* The i-th value of <s> as a string, or NULL (after an error). */
static const char *
acl_item_str(struct acl_parse *p, const config_setting_t *s, int i,
    const char *key)
{
	const config_setting_t	*e = conf_list_item(s, i);
	const char		*v = config_setting_get_string(e);

	if (v == NULL || v[0] == '\0') {
		conf_fail(&p->e, e, "%s: expected a non-empty string", key);
		return NULL;
	}
	return v;
}

static void *
acl_array(struct acl_parse *p, const config_setting_t *s, size_t size)
{
	void	*v = calloc((size_t)conf_list_count(s), size);

	if (v == NULL)
		conf_fail(&p->e, s, "out of memory");
	return v;
}

static int
acl_nets(struct acl_parse *p, const config_setting_t *s, const char *key,
    struct net_prefix **out, size_t *nout)
{
	const char	*v, *why;
	int		 i, n = conf_list_count(s);

	if ((*out = acl_array(p, s, sizeof(**out))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if ((v = acl_item_str(p, s, i, key)) == NULL)
			return -1;
		if (net_prefix_parse(v, &(*out)[i], &why) < 0)
			return conf_fail(&p->e, conf_list_item(s, i),
			    "%s: \"%.64s\": %s", key, v, why);
	}
	*nout = (size_t)n;
	return 0;
}

static pcre2_code *
acl_re_compile(struct acl_parse *p, const config_setting_t *e,
    const char *pattern, size_t len)
{
	PCRE2_UCHAR	 msg[160];
	PCRE2_SIZE	 off;
	pcre2_code	*re;
	int		 code;

	re = pcre2_compile((PCRE2_SPTR)pattern, len, PCRE2_CASELESS, &code,
	    &off, NULL);
	if (re == NULL) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		conf_fail(&p->e, e, "host: \"~%.64s\": regex: %s at offset %zu",
		    pattern, (const char *)msg, (size_t)off);
		return NULL;
	}
	/* Without a JIT for this CPU PCRE2 interprets: slower, as right. */
	(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	return re;
}

/* Each regex is compiled alone (for its own error message); a rule
 * with several also gets them all as one, so one JIT call judges the
 * list (acl_re_union). */
static int
acl_hosts(struct acl_parse *p, struct acl_rule *r, const config_setting_t *s)
{
	const config_setting_t	*e;
	const char		*v, *why;
	bool			 combine = true;
	int			 i, n = conf_list_count(s);

	if ((r->re = acl_array(p, s, sizeof(*r->re))) == NULL ||
	    (r->re_text = acl_array(p, s, sizeof(*r->re_text))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		e = conf_list_item(s, i);
		if ((v = acl_item_str(p, s, i, "host")) == NULL)
			return -1;
		if (v[0] == '~') {
			if (v[1] == '\0')
				return conf_fail(&p->e, e, "host: \"~\" needs "
				    "a regex after it");
			if ((r->re[r->nre] = acl_re_compile(p, e, v + 1,
			    strlen(v + 1))) == NULL)
				return -1;
			if ((r->re_text[r->nre++] = strdup(v + 1)) == NULL)
				return conf_fail(&p->e, e, "out of memory");
			combine = combine && acl_re_combinable(v + 1);
			continue;
		}
		why = NULL;
		if (acl_hostset_add(&r->hosts, v, strlen(v), &why) < 0)
			return conf_fail(&p->e, e, "host: \"%.64s\": %s", v,
			    why != NULL ? why : "out of memory");
	}
	if (r->nre >= 2 && combine)
		r->re_any = acl_re_union(r->re_text, r->nre);
	return 0;
}

static int
acl_hostfiles(struct acl_parse *p, struct acl_rule *r,
    const config_setting_t *s)
{
	const char	*v;
	char		 why[400];
	int		 i, n = conf_list_count(s);

	for (i = 0; i < n; i++) {
		if ((v = acl_item_str(p, s, i, "host_file")) == NULL)
			return -1;
		/* The loader's message names the file and its line. */
		if (acl_hostset_load(&r->hostfile, v, why, sizeof(why)) < 0)
			return conf_fail(&p->e, conf_list_item(s, i),
			    "host_file: %s", why);
	}
	return 0;
}

static int
acl_port_num(const char *s, char **end)
{
	unsigned long	 v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtoul(s, end, 10);
	return v < 1 || v > 65535 ? -1 : (int)v;
}

static int
acl_ports(struct acl_parse *p, struct acl_rule *r, const config_setting_t *s)
{
	const config_setting_t	*e;
	const char		*v;
	char			*end;
	long long		 n1;
	int			 i, n = conf_list_count(s), lo, hi;

	if ((r->ports = acl_array(p, s, sizeof(*r->ports))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		e = conf_list_item(s, i);
		if (config_setting_type(e) == CONFIG_TYPE_INT ||
		    config_setting_type(e) == CONFIG_TYPE_INT64) {
			n1 = config_setting_get_int64(e);
			if (n1 < 1 || n1 > 65535)
				return conf_fail(&p->e, e, "port: %lld is not "
				    "a port (1-65535)", n1);
			lo = hi = (int)n1;
		} else if ((v = config_setting_get_string(e)) != NULL) {
			if ((lo = acl_port_num(v, &end)) < 0 ||
			    (*end == '-' ? (hi = acl_port_num(end + 1, &end)) <
			    0 : (hi = lo, false)) || *end != '\0' || hi < lo)
				return conf_fail(&p->e, e, "port: \"%.32s\" is "
				    "not a port or range (\"8000-8080\", "
				    "1-65535, low end first)", v);
		} else
			return conf_fail(&p->e, e, "port: expected a number "
			    "or a \"low-high\" range");
		r->ports[i].lo = (uint16_t)lo;
		r->ports[i].hi = (uint16_t)hi;
	}
	r->nports = (size_t)n;
	return 0;
}

static int
acl_names(struct acl_parse *p, const config_setting_t *s, const char *key,
    char ***out, size_t *nout)
{
	const char	*v;
	int		 i, n = conf_list_count(s);

	if ((*out = acl_array(p, s, sizeof(**out))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if ((v = acl_item_str(p, s, i, key)) == NULL)
			return -1;
		if (((*out)[*nout] = strdup(v)) == NULL)
			return conf_fail(&p->e, s, "out of memory");
		(*nout)++;
	}
	return 0;
}

static int
acl_users(struct acl_parse *p, struct acl_rule *r, const config_setting_t *s)
{
	size_t	 i, j;

	if (acl_names(p, s, "user", &r->users, &r->nusers) < 0)
		return -1;
	for (i = j = 0; i < r->nusers; i++) {
		if (strcmp(r->users[i], "*") == 0) {
			r->user_any = true;
			free(r->users[i]);
		} else
			r->users[j++] = r->users[i];
	}
	r->nusers = j;
	return 0;
}

static int
acl_methods(struct acl_parse *p, struct acl_rule *r,
    const config_setting_t *s)
{
	size_t	 i;

	if (acl_names(p, s, "method", &r->methods, &r->nmethods) < 0)
		return -1;
	for (i = 0; i < r->nmethods; i++)
		if (strspn(r->methods[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~") !=
		    strlen(r->methods[i]))
			return conf_fail(&p->e, conf_list_item(s, (int)i),
			    "method: \"%.32s\" is not an HTTP method",
			    r->methods[i]);
	return 0;
}

static int
acl_protos(struct acl_parse *p, struct acl_rule *r,
    const config_setting_t *s)
{
	const char	*v, *name;
	int		 i, n = conf_list_count(s), k;

	for (i = 0; i < n; i++) {
		if ((v = acl_item_str(p, s, i, "protocol")) == NULL)
			return -1;
		for (k = PT_PROTO_TCP; k <= PT_PROTO_STATUS; k++)
			if ((name = acl_proto_name((enum pt_proto)k)) != NULL &&
			    strcmp(v, name) == 0)
				break;
		if (k > PT_PROTO_STATUS)
			return conf_fail(&p->e, conf_list_item(s, i),
			    "protocol: \"%.32s\" is not one of http, connect, "
			    "websocket, socks5, socks4, tcp, udp, status", v);
		r->protos |= 1u << k;
	}
	return 0;
}

/* A listener is known by its name, or by its address when it has none
 * (what the core calls it, req->listener). */
static int
acl_listener_idx(const config_setting_t *root, const char *name)
{
	const config_setting_t	*ls, *l;
	const char		*v;
	int			 i;

	if (root == NULL ||
	    (ls = config_setting_get_member(root, "listeners")) == NULL)
		return -1;
	for (i = 0; (l = config_setting_get_elem(ls, (unsigned)i)) != NULL;
	    i++)
		if ((config_setting_lookup_string(l, "name", &v) ||
		    config_setting_lookup_string(l, "address", &v)) &&
		    strcmp(v, name) == 0)
			return i;
	return -1;
}

static int
acl_listeners(struct acl_parse *p, struct acl_rule *r,
    const config_setting_t *s)
{
	const char	*v;
	int		 i, n = conf_list_count(s);

	if ((r->listeners = acl_array(p, s, sizeof(*r->listeners))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if ((v = acl_item_str(p, s, i, "listener")) == NULL)
			return -1;
		if ((r->listeners[i] = acl_listener_idx(p->root, v)) < 0)
			return conf_fail(&p->e, conf_list_item(s, i),
			    "listener: no listener is named \"%.64s\"", v);
	}
	r->nlisteners = (size_t)n;
	return 0;
}

static bool
acl_label_ok(const char *s)
{
	size_t	 n = strlen(s);

	return n > 0 && n <= 64 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

static int
acl_src(struct acl_parse *p, struct acl_rule *r, const config_setting_t *s)
{
	return acl_nets(p, s, "src", &r->src, &r->nsrc);
}

static int
acl_dst(struct acl_parse *p, struct acl_rule *r, const config_setting_t *s)
{
	return acl_nets(p, s, "dst", &r->dst, &r->ndst);
}

/* A rule's conditions: the key, its bit, and its parser. */
static const struct acl_cond {
	const char	*key;
	unsigned	 bit;
	int		(*parse)(struct acl_parse *, struct acl_rule *,
			    const config_setting_t *);
} acl_conds[] = {
	{ "src", ACL_C_SRC, acl_src },
	{ "dst", ACL_C_DST, acl_dst },
	{ "host", ACL_C_HOST, acl_hosts },
	{ "host_file", ACL_C_HOSTFILE, acl_hostfiles },
	{ "port", ACL_C_PORT, acl_ports },
	{ "user", ACL_C_USER, acl_users },
	{ "listener", ACL_C_LISTENER, acl_listeners },
	{ "protocol", ACL_C_PROTO, acl_protos },
	{ "method", ACL_C_METHOD, acl_methods },
	{ NULL, 0, NULL }
};

/* Each setting of a rule other than name and action is a condition. */
static int
acl_rule_conds(struct acl_parse *p, struct acl_rule *r,
    const config_setting_t *e)
{
	const struct acl_cond	*c;
	const config_setting_t	*m;
	const char		*key;
	int			 i;

	for (i = 0; (m = config_setting_get_elem(e, (unsigned)i)) != NULL;
	    i++) {
		key = config_setting_name(m);
		if (strcmp(key, "name") == 0 || strcmp(key, "action") == 0 ||
		    strcmp(key, "egress") == 0 || strcmp(key, "via") == 0 ||
		    strcmp(key, "egress_stable") == 0)
			continue;
		for (c = acl_conds; c->key != NULL; c++)
			if (strcmp(key, c->key) == 0)
				break;
		if (c->key == NULL)
			return conf_fail(&p->e, m, "unknown condition "
			    "\"%.64s\" (src, dst, host, host_file, port, user, "
			    "listener, protocol, method; or egress, via)", key);
		if (config_setting_is_aggregate(m) &&
		    config_setting_length(m) == 0)
			return conf_fail(&p->e, m, "%s: an empty list matches "
			    "nothing", key);
		r->has |= c->bit;
		if (c->parse(p, r, m) < 0)
			return -1;
	}
	return 0;
}

/* egress and egress_stable: the core reads them (pt_egress_conf). */
static int
acl_egress(struct acl_parse *p, struct acl_rule *r, const config_setting_t *e)
{
	struct pt_modconf	 mc;
	const char		*why;

	memset(&mc, 0, sizeof(mc));
	if (pt_egress_conf(&mc, e, &r->egress, &why) < 0)
		return conf_fail(&p->e, mc.where, "%s", why);
	if (r->egress != NULL && !r->allow)
		return conf_fail(&p->e, config_setting_get_member(e, "egress"),
		    "egress: a deny rule sends nothing anywhere");
	return 0;
}

/* via: the core reads it (pt_via_conf). The route is taken when ACCESS
 * ends, so only a rule that decides there may name one. */
static int
acl_via(struct acl_parse *p, struct acl_rule *r, const config_setting_t *e)
{
	struct pt_modconf	 mc;
	const config_setting_t	*m = config_setting_get_member(e, "via");
	const char		*why;

	memset(&mc, 0, sizeof(mc));
	if (pt_via_conf(&mc, e, &r->via, &why) < 0)
		return conf_fail(&p->e, mc.where != NULL ? mc.where : m, "%s",
		    why);
	if (r->via == NULL)
		return 0;
	if (!r->allow)
		return conf_fail(&p->e, m, "via: a deny rule sends nothing "
		    "anywhere");
	if (r->has & ACL_C_DST)
		return conf_fail(&p->e, m, "via: a rule judged by the "
		    "destination's address (dst) decides after the route is "
		    "chosen; use host or port, or a rule of its own");
	return 0;
}

static int
acl_rule(struct acl_parse *p, struct acl_rule *r, const config_setting_t *e,
    size_t idx)
{
	const config_setting_t	*m;
	const char		*name = NULL, *action = NULL;
	char			 label[80];

	snprintf(p->e.prefix, sizeof(p->e.prefix), "rule %zu", idx + 1);
	if (!config_setting_is_group(e))
		return conf_fail(&p->e, e, "expected a group { action = "
		    "\"allow\"; ... }");
	if ((m = config_setting_get_member(e, "name")) != NULL) {
		if ((name = config_setting_get_string(m)) == NULL ||
		    !acl_label_ok(name))
			return conf_fail(&p->e, m, "name: \"%.64s\" is not "
			    "1-64 of A-Z a-z 0-9 . _ : -", name != NULL ?
			    name : "(not a string)");
		snprintf(p->e.prefix, sizeof(p->e.prefix), "rule %zu (\"%s\")",
		    idx + 1, name);
	}
	m = config_setting_get_member(e, "action");
	if (m == NULL)
		return conf_fail(&p->e, e, "action = \"allow\" or \"deny\" is "
		    "required");
	action = config_setting_get_string(m);
	if (action == NULL || (strcmp(action, "allow") != 0 &&
	    strcmp(action, "deny") != 0))
		return conf_fail(&p->e, m, "action: \"%.32s\" is not "
		    "\"allow\" or \"deny\"", action != NULL ? action :
		    "(not a string)");
	r->allow = action[0] == 'a';
	if (name != NULL)
		snprintf(label, sizeof(label), "%s", name);
	else
		snprintf(label, sizeof(label), "rule%zu", idx + 1);
	if ((r->label = strdup(label)) == NULL ||
	    (r->reason = malloc(strlen(label) + 20)) == NULL)
		return conf_fail(&p->e, e, "out of memory");
	r->label_len = strlen(label);
	sprintf(r->reason, "acl: %s by %s", r->allow ? "allowed" : "denied",
	    label);
	if (acl_rule_conds(p, r, e) < 0)
		return -1;
	if (acl_egress(p, r, e) < 0)
		return -1;
	return acl_via(p, r, e);
}

static int
acl_top(struct acl_parse *p, struct acl_conf *ac,
    const config_setting_t *node)
{
	const config_setting_t	*m, *bad;
	const char		*key, *v;
	int			 i, n;

	if ((key = conf_unknown_key(node, acl_keys, &bad)) != NULL)
		return conf_fail(&p->e, bad, "unknown option \"%.64s\" "
		    "(default, allow_private, rules)", key);
	if ((m = config_setting_get_member(node, "default")) != NULL) {
		v = config_setting_get_string(m);
		if (v == NULL || (strcmp(v, "allow") != 0 &&
		    strcmp(v, "deny") != 0))
			return conf_fail(&p->e, m, "default: \"%.32s\" is not "
			    "\"allow\" or \"deny\"", v != NULL ? v :
			    "(not a string)");
		ac->default_allow = v[0] == 'a';
	}
	if ((m = config_setting_get_member(node, "allow_private")) != NULL) {
		if (config_setting_type(m) != CONFIG_TYPE_BOOL)
			return conf_fail(&p->e, m, "allow_private: true or "
			    "false");
		ac->allow_private = config_setting_get_bool(m);
	}
	if ((m = config_setting_get_member(node, "rules")) == NULL)
		return 0;
	if (!config_setting_is_list(m))
		return conf_fail(&p->e, m, "rules: expected a list ( { "
		    "action = \"allow\"; ... }, ... )");
	n = config_setting_length(m);
	if ((ac->rules = calloc((size_t)n + 1, sizeof(*ac->rules))) == NULL)
		return conf_fail(&p->e, m, "out of memory");
	for (i = 0; i < n; i++) {
		ac->nrules = (size_t)i + 1;
		if (acl_rule(p, &ac->rules[i], config_setting_get_elem(m,
		    (unsigned)i), (size_t)i) < 0)
			return -1;
		ac->hostfile_names += ac->rules[i].hostfile.count;
		ac->hostfile_bytes += acl_hostset_bytes(&ac->rules[i].hostfile);
	}
	p->e.prefix[0] = '\0';
	return 0;
}

struct acl_conf *
acl_conf_parse(const config_setting_t *node, char *err, size_t errlen,
    const config_setting_t **where)
{
	struct acl_parse	 p;
	struct acl_conf		*ac;

	memset(&p, 0, sizeof(p));
	p.e.buf = err;
	p.e.size = errlen;
	p.e.where = where;
	p.root = config_root_setting(node->config);
	err[0] = '\0';
	*where = NULL;
	if ((ac = calloc(1, sizeof(*ac))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (acl_top(&p, ac, node) < 0 ||
	    acl_blocks_build(ac, err, errlen) < 0 ||
	    (ac->default_reason = strdup(ac->default_allow ?
	    "acl: allowed by default" : "acl: denied by default")) == NULL ||
	    (ac->private_reason = strdup("acl: private destination")) ==
	    NULL) {
		if (err[0] == '\0')
			snprintf(err, errlen, "out of memory");
		acl_conf_free(ac);
		return NULL;
	}
	return ac;
}

static void
acl_rule_free(struct acl_rule *r)
{
	size_t	 i;

	free(r->label);
	free(r->reason);
	free(r->src);
	free(r->dst);
	acl_hostset_free(&r->hosts);
	for (i = 0; i < r->nre; i++) {
		pcre2_code_free(r->re[i]);
		free(r->re_text[i]);
	}
	free(r->re);
	free(r->re_text);
	pcre2_code_free(r->re_any);
	acl_hostset_free(&r->hostfile);
	free(r->ports);
	for (i = 0; i < r->nusers; i++)
		free(r->users[i]);
	free(r->users);
	free(r->listeners);
	for (i = 0; i < r->nmethods; i++)
		free(r->methods[i]);
	free(r->methods);
	pt_egress_free(r->egress);
	pt_via_free(r->via);
}

void
acl_conf_free(struct acl_conf *ac)
{
	size_t	 i, big;

	if (ac == NULL)
		return;
	big = ac->hostfile_bytes;
	acl_memo_forget();
	acl_blocks_free(ac);
	for (i = 0; i < ac->nrules; i++)
		acl_rule_free(&ac->rules[i]);
	free(ac->rules);
	free(ac->default_reason);
	free(ac->private_reason);
	free(ac);
	/* The master drops the old rules at each reload: give a large host
	 * file's pages back, or its RSS would hold two copies for good (the
	 * allocator keeps freed memory on its heap). */
	if (big >= 1024 * 1024)
		malloc_trim(0);
}
