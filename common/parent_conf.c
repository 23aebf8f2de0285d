/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The `parents` list and `via` choices (common/parent.h). Everything an
 * operator can get wrong is refused here with the setting at fault, so
 * `portico -t` and a reload catch it: an unknown key, a name used twice
 * or unknown to a `via`, an address without a port, credentials a
 * protocol cannot carry, an unreadable password file.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parent.h"
#include "common/sockaddr.h"
#include "portico/hash.h"

/* Defaults, as nginx's max_fails/fail_timeout would read to an operator:
 * a parent that failed three connections in a row rests ten seconds,
 * then a probe decides when it comes back. */
#define PARENT_MAX_FAILS	3
#define PARENT_DOWN_TIME_S	10

static const char *const parent_keys[] = {
	"name", "address", "protocol", "user", "password", "password_file",
	"send_proxy", "resolve", "ca", "verify", "sni", "connect_timeout",
	"max_fails", "down_time", NULL
};

const char *const via_keys[] = { "via", NULL };

static const char *const via_group_keys[] = {
	"parents", "strategy", "weights", NULL
};

static const char *const parent_proto_names[] = {
	[PARENT_HTTP] = "http", [PARENT_HTTPS] = "https",
	[PARENT_SOCKS5] = "socks5", [PARENT_SOCKS4] = "socks4",
};

const char *
parent_proto_name(enum parent_proto p)
{
	return parent_proto_names[p];
}

struct pc_parse {
	char			*err;
	size_t			 errsz;
	const config_setting_t	**where;
};

static int __attribute__((format(printf, 3, 4)))
pc_fail(struct pc_parse *p, const config_setting_t *at, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(p->err, p->errsz, fmt, ap);
	va_end(ap);
	*p->where = at;
	return -1;
}

/* String member <key> of <g>: NULL when absent; -1 when not a non-empty
 * string. */
static int
pc_str(struct pc_parse *p, const config_setting_t *g, const char *key,
    const char **out)
{
	const config_setting_t	*m;

	*out = NULL;
	if ((m = config_setting_get_member(g, key)) == NULL)
		return 0;
	if (config_setting_type(m) != CONFIG_TYPE_STRING ||
	    *(*out = config_setting_get_string(m)) == '\0')
		return pc_fail(p, m, "%s: expected a non-empty string", key);
	return 0;
}

static int
pc_uint(struct pc_parse *p, const config_setting_t *g, const char *key,
    long long min, long long max, unsigned def, unsigned *out)
{
	const config_setting_t	*m;
	long long		 v;

	*out = def;
	if ((m = config_setting_get_member(g, key)) == NULL)
		return 0;
	if (config_setting_type(m) != CONFIG_TYPE_INT &&
	    config_setting_type(m) != CONFIG_TYPE_INT64)
		return pc_fail(p, m, "%s: expected an integer", key);
	v = config_setting_get_int64(m);
	if (v < min || v > max)
		return pc_fail(p, m, "%s: %lld out of range (%lld-%lld)", key,
		    v, min, max);
	*out = (unsigned)v;
	return 0;
}

static bool
pc_name_ok(const char *s)
{
	size_t	 i;

	if (s[0] == '\0' || strlen(s) > PARENT_NAME_MAX)
		return false;
	for (i = 0; s[i] != '\0'; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("_.-", s[i]) ==
		    NULL)
			return false;
	return true;
}

static bool
pc_has_ctl(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* The first line of <path>, without its line end: a secret kept out of
 * the configuration file (which is often world-readable). */
static int
pc_password_file(struct pc_parse *p, const config_setting_t *at,
    const char *path, char **out)
{
	char	 line[512];
	FILE	*f;
	size_t	 n;

	if ((f = fopen(path, "re")) == NULL)
		return pc_fail(p, at, "password_file: \"%s\": %s", path,
		    strerror(errno));
	if (fgets(line, sizeof(line), f) == NULL) {
		fclose(f);
		return pc_fail(p, at, "password_file: \"%s\": empty", path);
	}
	fclose(f);
	n = strcspn(line, "\r\n");
	line[n] = '\0';
	if (n == 0)
		return pc_fail(p, at, "password_file: \"%s\": the first line "
		    "is empty", path);
	if ((*out = strdup(line)) == NULL)
		return pc_fail(p, at, "out of memory");
	return 0;
}

static int
pc_proto(struct pc_parse *p, const config_setting_t *g,
    struct conf_parent *cp)
{
	const char	*s;
	int		 i;

	if (pc_str(p, g, "protocol", &s) < 0)
		return -1;
	cp->proto = PARENT_HTTP;
	if (s == NULL)
		return 0;
	for (i = 0; i <= PARENT_SOCKS4; i++)
		if (strcmp(s, parent_proto_names[i]) == 0) {
			cp->proto = (enum parent_proto)i;
			return 0;
		}
	return pc_fail(p, config_setting_get_member(g, "protocol"),
	    "protocol: unknown \"%s\" (expected \"http\", \"https\", "
	    "\"socks5\" or \"socks4\")", s);
}

static int
pc_credentials(struct pc_parse *p, const config_setting_t *g,
    struct conf_parent *cp)
{
	const config_setting_t	*pw = config_setting_get_member(g, "password");
	const config_setting_t	*pf = config_setting_get_member(g,
	    "password_file");
	const char		*user, *s;

	if (pc_str(p, g, "user", &user) < 0)
		return -1;
	if (pw != NULL && pf != NULL)
		return pc_fail(p, pf, "password_file: \"password\" is given "
		    "too (one or the other)");
	if (user == NULL) {
		if (pw != NULL || pf != NULL)
			return pc_fail(p, pw != NULL ? pw : pf, "%s: without "
			    "\"user\"", pw != NULL ? "password" :
			    "password_file");
		return 0;
	}
	if (pc_has_ctl(user) || strlen(user) > 255 ||
	    (cp->proto <= PARENT_HTTPS && strchr(user, ':') != NULL))
		return pc_fail(p, config_setting_get_member(g, "user"),
		    "user: control characters, a ':' (HTTP Basic) or more "
		    "than 255 bytes");
	if ((cp->user = strdup(user)) == NULL)
		return pc_fail(p, g, "out of memory");
	if (cp->proto == PARENT_SOCKS4) {
		if (pw != NULL || pf != NULL)
			return pc_fail(p, pw != NULL ? pw : pf, "%s: SOCKS4 "
			    "has a user id only", pw != NULL ? "password" :
			    "password_file");
		return 0;
	}
	if (pw == NULL && pf == NULL)
		return pc_fail(p, config_setting_get_member(g, "user"),
		    "user: needs \"password_file\" (or \"password\")");
	if (pf != NULL) {
		if (pc_str(p, g, "password_file", &s) < 0 ||
		    pc_password_file(p, pf, s, &cp->password) < 0)
			return -1;
	} else {
		if (pc_str(p, g, "password", &s) < 0)
			return -1;
		if ((cp->password = strdup(s)) == NULL)
			return pc_fail(p, g, "out of memory");
	}
	if (pc_has_ctl(cp->password) || strlen(cp->password) > 255)
		return pc_fail(p, pw != NULL ? pw : pf, "%s: control "
		    "characters or more than 255 bytes", pw != NULL ?
		    "password" : "password_file");
	return 0;
}

static int
pc_address(struct pc_parse *p, const config_setting_t *g,
    struct conf_parent *cp)
{
	const config_setting_t	*m = config_setting_get_member(g, "address");
	const char		*s, *errstr;
	char			 host[256];

	if (m == NULL)
		return pc_fail(p, g, "parent: missing \"address\" "
		    "(host:port)");
	if (pc_str(p, g, "address", &s) < 0)
		return -1;
	if (sockaddr_split(s, host, sizeof(host), &cp->port, &errstr) < 0)
		return pc_fail(p, m, "address: \"%s\": %s", s, errstr);
	if (cp->port == 0)
		return pc_fail(p, m, "address: \"%s\": needs a port", s);
	if ((cp->address = strdup(s)) == NULL ||
	    (cp->host = strdup(host)) == NULL)
		return pc_fail(p, g, "out of memory");
	return 0;
}

/* What only some protocols take. */
static int
pc_protocol_keys(struct pc_parse *p, const config_setting_t *g,
    struct conf_parent *cp)
{
	const config_setting_t	*m;
	const char		*s;

	if ((m = config_setting_get_member(g, "resolve")) != NULL) {
		if (cp->proto != PARENT_SOCKS5 && cp->proto != PARENT_SOCKS4)
			return pc_fail(p, m, "resolve: only for socks parents "
			    "(an HTTP parent always resolves names)");
		if (pc_str(p, g, "resolve", &s) < 0)
			return -1;
		if (strcmp(s, "local") != 0 && strcmp(s, "remote") != 0)
			return pc_fail(p, m, "resolve: expected \"local\" or "
			    "\"remote\"");
		cp->resolve_local = strcmp(s, "local") == 0;
	}
	if ((m = config_setting_get_member(g, "send_proxy")) != NULL) {
		if (pc_str(p, g, "send_proxy", &s) < 0)
			return -1;
		if (strcmp(s, "v1") != 0 && strcmp(s, "v2") != 0)
			return pc_fail(p, m, "send_proxy: expected \"v1\" or "
			    "\"v2\"");
		cp->send_proxy = s[1] - '0';
	}
	cp->verify = true;
	if (cp->proto != PARENT_HTTPS) {
		if ((m = config_setting_get_member(g, "ca")) != NULL ||
		    (m = config_setting_get_member(g, "verify")) != NULL ||
		    (m = config_setting_get_member(g, "sni")) != NULL)
			return pc_fail(p, m, "%s: only for protocol \"https\"",
			    config_setting_name(m));
		return 0;
	}
	if ((m = config_setting_get_member(g, "verify")) != NULL) {
		if (config_setting_type(m) != CONFIG_TYPE_BOOL)
			return pc_fail(p, m, "verify: expected true or false");
		cp->verify = config_setting_get_bool(m);
	}
	if (pc_str(p, g, "ca", &s) < 0 ||
	    (s != NULL && (cp->ca = strdup(s)) == NULL))
		return -1;
	if (pc_str(p, g, "sni", &s) < 0)
		return -1;
	if ((cp->sni = strdup(s != NULL ? s : cp->host)) == NULL)
		return pc_fail(p, g, "out of memory");
	return 0;
}

static int
pc_parent(struct pc_parse *p, const config_setting_t *g,
    unsigned connect_timeout_ms, struct conf_parent *cp)
{
	const config_setting_t	*m;
	const char		*name;
	unsigned		 s;
	uint64_t		 h;
	int			 i;

	cp->line = (int)config_setting_source_line(g);
	if (config_setting_type(g) != CONFIG_TYPE_GROUP)
		return pc_fail(p, g, "parents: each entry is a group { name = "
		    "...; address = ...; }");
	for (i = 0; (m = config_setting_get_elem(g, (unsigned)i)) != NULL;
	    i++) {
		const char *const	*k;

		for (k = parent_keys; *k != NULL; k++)
			if (strcmp(config_setting_name(m), *k) == 0)
				break;
		if (*k == NULL)
			return pc_fail(p, m, "%s: unknown option",
			    config_setting_name(m));
	}
	if ((m = config_setting_get_member(g, "name")) == NULL)
		return pc_fail(p, g, "parent: missing \"name\"");
	if (pc_str(p, g, "name", &name) < 0)
		return -1;
	if (!pc_name_ok(name) || strcmp(name, "direct") == 0)
		return pc_fail(p, m, "name: \"%s\": 1 to %d of [A-Za-z0-9_.-], "
		    "not \"direct\" (which means no parent)", name,
		    PARENT_NAME_MAX);
	if ((cp->name = strdup(name)) == NULL)
		return pc_fail(p, g, "out of memory");
	if (pc_proto(p, g, cp) < 0 || pc_address(p, g, cp) < 0 ||
	    pc_credentials(p, g, cp) < 0 || pc_protocol_keys(p, g, cp) < 0)
		return -1;
	if (pc_uint(p, g, "connect_timeout", 1, 3600,
	    (connect_timeout_ms + 999) / 1000, &s) < 0)
		return -1;
	cp->connect_timeout_ms = s * 1000;
	if (config_setting_get_member(g, "connect_timeout") == NULL)
		cp->connect_timeout_ms = connect_timeout_ms;
	if (pc_uint(p, g, "max_fails", 1, 1000, PARENT_MAX_FAILS,
	    &cp->max_fails) < 0 ||
	    pc_uint(p, g, "down_time", 1, 86400, PARENT_DOWN_TIME_S, &s) < 0)
		return -1;
	cp->down_time_ms = s * 1000;
	/* What makes it the same parent to a reload: where it is, how it
	 * is spoken to and as whom. A changed one starts up, afresh. */
	h = pt_hash_fnv64(PT_HASH_FNV64_BASIS, cp->name, strlen(cp->name) + 1);
	h = pt_hash_fnv64(h, cp->address, strlen(cp->address) + 1);
	h = pt_hash_fnv64(h, &cp->proto, sizeof(cp->proto));
	if (cp->user != NULL)
		h = pt_hash_fnv64(h, cp->user, strlen(cp->user));
	cp->identity = pt_hash_mix64(h) | 1;
	return 0;
}

int
parent_conf_parse(const config_setting_t *list, unsigned connect_timeout_ms,
    struct conf_parent **out, int *n, const config_setting_t **where,
    char *err, size_t errsz)
{
	struct pc_parse		 p = { err, errsz, where };
	struct conf_parent	*ps;
	int			 i, j, count;

	*out = NULL;
	*n = 0;
	if (list == NULL)
		return 0;
	if (!config_setting_is_list(list) && !config_setting_is_array(list))
		return pc_fail(&p, list, "parents: expected a list ( { ... }, "
		    "... )");
	count = config_setting_length(list);
	if (count > PARENT_MAX)
		return pc_fail(&p, list, "parents: more than %d", PARENT_MAX);
	if (count == 0)
		return 0;
	if ((ps = calloc((size_t)count, sizeof(*ps))) == NULL)
		return pc_fail(&p, list, "out of memory");
	for (i = 0; i < count; i++) {
		if (pc_parent(&p, config_setting_get_elem(list, (unsigned)i),
		    connect_timeout_ms, &ps[i]) < 0)
			goto fail;
		for (j = 0; j < i; j++)
			if (strcmp(ps[j].name, ps[i].name) == 0) {
				pc_fail(&p, config_setting_get_member(
				    config_setting_get_elem(list, (unsigned)i),
				    "name"), "name: \"%s\" is the name of the "
				    "parent at line %d too", ps[i].name,
				    ps[j].line);
				goto fail;
			}
	}
	*out = ps;
	*n = count;
	return 0;
fail:
	parent_conf_free(ps, count);
	return -1;
}

void
parent_conf_free(struct conf_parent *ps, int n)
{
	int	 i;

	if (ps == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(ps[i].name);
		free(ps[i].address);
		free(ps[i].host);
		free(ps[i].user);
		if (ps[i].password != NULL)
			explicit_bzero(ps[i].password, strlen(ps[i].password));
		free(ps[i].password);
		free(ps[i].basic);
		free(ps[i].ca);
		free(ps[i].sni);
	}
	free(ps);
}

/* ---- via ------------------------------------------------------------- */

/* Choices made in this process: each gets its own round-robin counter
 * (modulo a worker's table). */
static uint32_t	 via_count;

static const char *const via_strategy_names[] = {
	[VIA_ORDERED] = "ordered", [VIA_ROUND_ROBIN] = "round-robin",
	[VIA_RANDOM] = "random", [VIA_HASH_USER] = "hash-user",
	[VIA_HASH_SOURCE] = "hash-source",
};

/* The index of parent <name> in the file's `parents`, VIA_DIRECT for
 * "direct", or -2. */
static int
via_lookup(const config_setting_t *at, const char *name)
{
	const config_setting_t	*list, *e;
	const char		*n;
	int			 i;

	if (strcmp(name, "direct") == 0)
		return VIA_DIRECT;
	list = config_lookup(at->config, "parents");
	for (i = 0; list != NULL &&
	    (e = config_setting_get_elem(list, (unsigned)i)) != NULL; i++)
		if (config_setting_lookup_string(e, "name", &n) &&
		    strcmp(n, name) == 0)
			return i;
	return -2;
}

static int
via_member(struct pc_parse *p, const config_setting_t *m, struct pt_via *v)
{
	const char	*name;
	int		 idx, i;

	if (config_setting_type(m) != CONFIG_TYPE_STRING)
		return pc_fail(p, m, "via: expected a parent's name");
	name = config_setting_get_string(m);
	if ((idx = via_lookup(m, name)) == -2)
		return pc_fail(p, m, "via: no parent is named \"%s\" (parents "
		    "= ( { name = \"%s\"; ... } ) defines one; \"direct\" "
		    "means none)", name, name);
	for (i = 0; i < v->n; i++)
		if (v->member[i] == idx)
			return pc_fail(p, m, "via: \"%s\" is named twice", name);
	if (v->n >= PARENT_MAX)
		return pc_fail(p, m, "via: more than %d members", PARENT_MAX);
	v->member[v->n] = (int16_t)idx;
	v->weight[v->n] = 1;
	v->n++;
	return 0;
}

static int
via_list(struct pc_parse *p, const config_setting_t *l, struct pt_via *v)
{
	const config_setting_t	*e;
	int			 i;

	if (config_setting_length(l) == 0)
		return pc_fail(p, l, "via: an empty list");
	for (i = 0; (e = config_setting_get_elem(l, (unsigned)i)) != NULL;
	    i++)
		if (via_member(p, e, v) < 0)
			return -1;
	return 0;
}

static int
via_group(struct pc_parse *p, const config_setting_t *g, struct pt_via *v)
{
	const config_setting_t	*m, *w;
	const char		*s;
	int			 i;

	for (i = 0; (m = config_setting_get_elem(g, (unsigned)i)) != NULL;
	    i++) {
		const char *const	*k;

		for (k = via_group_keys; *k != NULL; k++)
			if (strcmp(config_setting_name(m), *k) == 0)
				break;
		if (*k == NULL)
			return pc_fail(p, m, "%s: unknown option (a via group "
			    "has parents, strategy and weights)",
			    config_setting_name(m));
	}
	if ((m = config_setting_get_member(g, "parents")) == NULL ||
	    (!config_setting_is_list(m) && !config_setting_is_array(m)))
		return pc_fail(p, m != NULL ? m : g, "via: a group needs "
		    "parents = [ \"name\", ... ]");
	if (via_list(p, m, v) < 0)
		return -1;
	if ((m = config_setting_get_member(g, "strategy")) != NULL) {
		if (pc_str(p, g, "strategy", &s) < 0)
			return -1;
		for (i = 0; i <= VIA_HASH_SOURCE; i++)
			if (strcmp(s, via_strategy_names[i]) == 0)
				break;
		if (i > VIA_HASH_SOURCE)
			return pc_fail(p, m, "strategy: unknown \"%s\" "
			    "(expected \"ordered\", \"round-robin\", "
			    "\"random\", \"hash-user\" or \"hash-source\")", s);
		v->strategy = (enum via_strategy)i;
	}
	if ((w = config_setting_get_member(g, "weights")) == NULL)
		return 0;
	if (!config_setting_is_array(w) && !config_setting_is_list(w))
		return pc_fail(p, w, "weights: expected [ 3, 1, ... ]");
	if (config_setting_length(w) != v->n)
		return pc_fail(p, w, "weights: %d of them for %d parents",
		    config_setting_length(w), v->n);
	if (v->strategy == VIA_ORDERED || v->strategy == VIA_ROUND_ROBIN)
		return pc_fail(p, w, "weights: only for strategy \"random\", "
		    "\"hash-user\" or \"hash-source\"");
	for (i = 0; i < v->n; i++) {
		m = config_setting_get_elem(w, (unsigned)i);
		if (config_setting_type(m) != CONFIG_TYPE_INT ||
		    config_setting_get_int(m) < 1 ||
		    config_setting_get_int(m) > 100)
			return pc_fail(p, m, "weights: each 1 to 100");
		v->weight[i] = (uint16_t)config_setting_get_int(m);
	}
	return 0;
}

/* The choice as an operator reads it, for the logs. */
static void
via_text(struct pt_via *v, const config_setting_t *at)
{
	const config_setting_t	*list = config_lookup(at->config, "parents");
	const char		*n;
	size_t			 len = 0;
	int			 i;

	if (v->strategy != VIA_ORDERED)
		len = (size_t)snprintf(v->text, sizeof(v->text), "%s(",
		    via_strategy_names[v->strategy]);
	for (i = 0; i < v->n && len < sizeof(v->text); i++) {
		n = "direct";
		if (v->member[i] != VIA_DIRECT)
			config_setting_lookup_string(config_setting_get_elem(
			    list, (unsigned)v->member[i]), "name", &n);
		len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
		    "%s%s", i > 0 ? "," : "", n);
	}
	if (v->strategy != VIA_ORDERED && len < sizeof(v->text))
		snprintf(v->text + len, sizeof(v->text) - len, ")");
}

int
via_parse(const config_setting_t *group, struct pt_via **out,
    const config_setting_t **where, char *err, size_t errsz)
{
	struct pc_parse		 p = { err, errsz, where };
	const config_setting_t	*m;
	struct pt_via		*v;
	int			 rc;

	*out = NULL;
	if ((m = config_setting_get_member(group, "via")) == NULL)
		return 0;
	if ((v = calloc(1, sizeof(*v))) == NULL)
		return pc_fail(&p, m, "out of memory");
	switch (config_setting_type(m)) {
	case CONFIG_TYPE_STRING:
		rc = via_member(&p, m, v);
		break;
	case CONFIG_TYPE_ARRAY:
	case CONFIG_TYPE_LIST:
		rc = via_list(&p, m, v);
		break;
	case CONFIG_TYPE_GROUP:
		rc = via_group(&p, m, v);
		break;
	default:
		rc = pc_fail(&p, m, "via: expected a name, a list of names or "
		    "a group { parents = [ ... ]; strategy = ...; }");
	}
	if (rc < 0) {
		free(v);
		return -1;
	}
	via_text(v, m);
	v->rr_slot = via_count++;
	*out = v;
	return 0;
}

/* ---- the module ABI (1.7) ------------------------------------------- */

int
pt_via_conf(struct pt_modconf *mc, const config_setting_t *group,
    struct pt_via **out, const char **errstr)
{
	static char		 msg[320];
	const config_setting_t	*where = NULL;

	if (via_parse(group, out, &where, msg, sizeof(msg)) < 0) {
		*errstr = msg;
		if (mc != NULL)
			mc->where = where;
		return -1;
	}
	return 0;
}

void
pt_via_free(struct pt_via *v)
{
	free(v);
}

int
pt_via_format(const struct pt_via *v, char *buf, size_t len)
{
	return snprintf(buf, len, "%s", v->text);
}
