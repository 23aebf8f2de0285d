/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The limits module's configuration, read in the master at start-up and
 * at each reload: the module's entry in `modules` with its `classes`.
 * Every error names the setting it is about (the core prints its file
 * and line). Nothing here runs in a worker; nothing here touches the
 * shared table (limits.c does, in init_master).
 */
#include "modules/limits/limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <portico/hash.h>

#include "modules/common/conf_list.h"
#include "modules/common/conf_opts.h"
#include "modules/limits/bucket.h"

#define LIMITS_TABLE_DEFAULT	16384
#define LIMITS_TABLE_MAX	(1u << 24)
#define LIMITS_BURST_MIN	4096
/* udp_bytes: the largest datagram payload, so that a default burst never
 * refuses a datagram for its size alone. */
#define LIMITS_UDP_BURST_MIN	65535

struct limits_parse {
	struct conf_err		 e;		/* prefix: "class \"web\"" */
};

static const char *const limits_keys[] = {
	"name", "path", "classes", "table_size", NULL
};

static const char *const limits_class_keys[] = {
	"name", "match", "key", "prefix_v4", "prefix_v6", "max_connections",
	"connection_rate", "connection_rate_burst", "request_rate",
	"request_rate_burst", "bandwidth_up", "bandwidth_up_burst",
	"bandwidth_down", "bandwidth_down_burst", "udp_bytes",
	"udp_bytes_burst", "udp_packets", "udp_packets_burst", NULL
};

static const char *const limits_match_keys[] = {
	"user", "src", "listener", "protocol", NULL
};

/* The rate options, in bucket order, and their burst options. */
static const char *const limits_rate_keys[LB_COUNT] = {
	"connection_rate", "request_rate", "bandwidth_up", "bandwidth_down",
	"udp_bytes", "udp_packets"
};

static const struct {
	const char	*name;
	enum pt_proto	 proto;
} limits_protos[] = {
	{ "tcp", PT_PROTO_TCP }, { "http", PT_PROTO_HTTP },
	{ "connect", PT_PROTO_CONNECT }, { "socks5", PT_PROTO_SOCKS5 },
	{ "socks4", PT_PROTO_SOCKS4 }, { "websocket", PT_PROTO_WEBSOCKET },
	{ "udp", PT_PROTO_UDP }
};

static int
limits_known(struct limits_parse *p, const config_setting_t *node,
    const char *const *keys, const char *what)
{
	const config_setting_t	*m;
	const char		*name;

	if ((name = conf_unknown_key(node, keys, &m)) != NULL)
		return conf_fail(&p->e, m, "%s: unknown option \"%.64s\"", what,
		    name);
	return 0;
}

static const char *
limits_item_str(struct limits_parse *p, const config_setting_t *s, int i,
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

/* A whole number in [lo, hi]: 1 when given, 0 when absent, -1 bad. */
static int
limits_num(struct limits_parse *p, const config_setting_t *node,
    const char *key, uint64_t lo, uint64_t hi, uint64_t *out)
{
	const config_setting_t	*s = config_setting_get_member(node, key);
	long long		 v;

	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_INT &&
	    config_setting_type(s) != CONFIG_TYPE_INT64)
		return conf_fail(&p->e, s, "%s: expected a whole number", key);
	v = config_setting_get_int64(s);
	if (v < 0 || (uint64_t)v < lo || (uint64_t)v > hi)
		return conf_fail(&p->e, s, "%s: %lld is out of range (%llu to "
		    "%llu)", key, v, (unsigned long long)lo,
		    (unsigned long long)hi);
	*out = (uint64_t)v;
	return 1;
}

static char **
limits_strings(struct limits_parse *p, const config_setting_t *s,
    const char *key, size_t *n_out)
{
	char		**v;
	const char	*str;
	int		 i, n = conf_list_count(s);

	if ((v = calloc((size_t)n + 1, sizeof(*v))) == NULL) {
		conf_fail(&p->e, s, "out of memory");
		return NULL;
	}
	*n_out = 0;
	for (i = 0; i < n; i++) {
		if ((str = limits_item_str(p, s, i, key)) == NULL ||
		    (v[i] = strdup(str)) == NULL) {
			if (str != NULL)
				conf_fail(&p->e, s, "out of memory");
			for (; i >= 0; i--)
				free(v[i]);
			free(v);
			return NULL;
		}
	}
	*n_out = (size_t)n;
	return v;
}

static bool
limits_listener_exists(const config_setting_t *node, const char *name)
{
	const config_setting_t	*ls, *l;
	const char		*v;
	int			 i;

	ls = config_lookup(node->config, "listeners");
	if (ls == NULL)
		return false;
	for (i = 0; (l = config_setting_get_elem(ls, (unsigned)i)) != NULL;
	    i++) {
		if ((config_setting_lookup_string(l, "name", &v) ||
		    config_setting_lookup_string(l, "address", &v)) &&
		    strcmp(v, name) == 0)
			return true;
	}
	return false;
}

/* <h> with a field of <len> bytes hashed in, and a byte 0xff after it
 * so that fields cannot slide into one another. */
static uint64_t
limits_digest(uint64_t h, const void *data, size_t len)
{
	return pt_hash_fnv64_byte(pt_hash_fnv64(h, data, len), 0xff);
}

static int
limits_match_parse(struct limits_parse *p, struct limits_class *c,
    const config_setting_t *m)
{
	const config_setting_t	*s;
	const char		*v, *why;
	size_t			 i, k;
	int			 n;

	if (!config_setting_is_group(m))
		return conf_fail(&p->e, m, "match: expected a group "
		    "({ user = \"*\"; src = [...]; listener = ...; protocol "
		    "= ...; })");
	if (limits_known(p, m, limits_match_keys, "match") < 0)
		return -1;
	/* A condition holds when one of its values does: an empty list
	 * would hold for none, and was taken for one not written. */
	for (i = 0; limits_match_keys[i] != NULL; i++)
		if ((s = config_setting_get_member(m, limits_match_keys[i])) !=
		    NULL && conf_list_count(s) == 0)
			return conf_fail(&p->e, s, "match: %s: an empty list "
			    "(leave %s out to match any)", limits_match_keys[i],
			    limits_match_keys[i]);
	if ((s = config_setting_get_member(m, "user")) != NULL) {
		if ((c->users = limits_strings(p, s, "user",
		    &c->nusers)) == NULL)
			return -1;
		c->has_user = true;
		for (i = 0; i < c->nusers; i++)
			if (strcmp(c->users[i], "*") == 0)
				c->user_any = true;
	}
	if ((s = config_setting_get_member(m, "src")) != NULL) {
		n = conf_list_count(s);
		if ((c->src = calloc((size_t)n, sizeof(*c->src))) == NULL)
			return conf_fail(&p->e, s, "out of memory");
		for (i = 0; i < (size_t)n; i++) {
			if ((v = limits_item_str(p, s, (int)i, "src")) == NULL)
				return -1;
			if (net_prefix_parse(v, &c->src[i], &why) < 0)
				return conf_fail(&p->e,
				    conf_list_item(s, (int)i),
				    "src: \"%.64s\": %s", v, why);
			c->nsrc++;
		}
	}
	if ((s = config_setting_get_member(m, "listener")) != NULL) {
		if ((c->listeners = limits_strings(p, s, "listener",
		    &c->nlisteners)) == NULL)
			return -1;
		for (i = 0; i < c->nlisteners; i++)
			if (!limits_listener_exists(m, c->listeners[i]))
				return conf_fail(&p->e,
				    conf_list_item(s, (int)i),
				    "listener: no listener is named "
				    "\"%.64s\"", c->listeners[i]);
	}
	if ((s = config_setting_get_member(m, "protocol")) != NULL) {
		n = conf_list_count(s);
		for (i = 0; i < (size_t)n; i++) {
			if ((v = limits_item_str(p, s, (int)i,
			    "protocol")) == NULL)
				return -1;
			for (k = 0; k < sizeof(limits_protos) /
			    sizeof(limits_protos[0]); k++)
				if (strcmp(v, limits_protos[k].name) == 0)
					break;
			if (k == sizeof(limits_protos) /
			    sizeof(limits_protos[0]))
				return conf_fail(&p->e,
				    conf_list_item(s, (int)i),
				    "protocol: \"%.64s\": expected tcp, "
				    "http, connect, socks5, socks4, websocket "
				    "or udp", v);
			c->protos |= 1u << limits_protos[k].proto;
		}
	}
	return 0;
}

static int
limits_key_parse(struct limits_parse *p, struct limits_class *c,
    const config_setting_t *node)
{
	const config_setting_t	*s = config_setting_get_member(node, "key");
	const char		*v;
	uint64_t		 n;
	int			 rc;

	c->key = LK_SOURCE;
	c->prefix_v4 = 24;
	c->prefix_v6 = 64;
	if (s != NULL) {
		if ((v = config_setting_get_string(s)) == NULL)
			return conf_fail(&p->e, s, "key: expected \"user\", "
			    "\"source\", \"prefix\" or \"class\"");
		if (strcmp(v, "user") == 0)
			c->key = LK_USER;
		else if (strcmp(v, "source") == 0)
			c->key = LK_SOURCE;
		else if (strcmp(v, "prefix") == 0)
			c->key = LK_PREFIX;
		else if (strcmp(v, "class") == 0)
			c->key = LK_CLASS;
		else
			return conf_fail(&p->e, s, "key: \"%.64s\": expected "
			    "\"user\", \"source\", \"prefix\" or \"class\"",
			    v);
	}
	if ((rc = limits_num(p, node, "prefix_v4", 1, 32, &n)) < 0)
		return -1;
	if (rc > 0)
		c->prefix_v4 = (unsigned)n;
	if ((rc = limits_num(p, node, "prefix_v6", 1, 128, &n)) < 0)
		return -1;
	if (rc > 0)
		c->prefix_v6 = (unsigned)n;
	return 0;
}

static int
limits_rates(struct limits_parse *p, struct limits_class *c,
    const config_setting_t *node)
{
	char		 key[48];
	uint64_t	 v, min;
	int		 b, rc;
	bool		 any = false;

	if ((rc = limits_num(p, node, "max_connections", 1, UINT32_MAX,
	    &v)) < 0)
		return -1;
	if (rc > 0) {
		c->p.max_conns = (uint32_t)v;
		any = true;
	}
	for (b = 0; b < LB_COUNT; b++) {
		if ((rc = limits_num(p, node, limits_rate_keys[b], 1,
		    LIMITS_RATE_MAX, &c->p.rate[b])) < 0)
			return -1;
		snprintf(key, sizeof(key), "%s_burst", limits_rate_keys[b]);
		if (rc == 0) {
			if (config_setting_get_member(node, key) != NULL)
				return conf_fail(&p->e,
				    config_setting_get_member(node, key),
				    "%s without %s", key,
				    limits_rate_keys[b]);
			continue;
		}
		any = true;
		/* Events may come one rate's worth at once; bytes an eighth
		 * of a second's, but at least 4 KiB (udp_bytes: at least one
		 * datagram of the largest size). */
		min = b == LB_UDP ? LIMITS_UDP_BURST_MIN : LIMITS_BURST_MIN;
		c->p.burst[b] = b == LB_CONN || b == LB_REQ ||
		    b == LB_UDP_PKT ? c->p.rate[b] :
		    c->p.rate[b] / 8 > min ? c->p.rate[b] / 8 : min;
		if (limits_num(p, node, key, 1, LIMITS_RATE_MAX,
		    &c->p.burst[b]) < 0)
			return -1;
	}
	if (!any)
		return conf_fail(&p->e, node, "no limit: give max_connections, "
		    "connection_rate, request_rate, bandwidth_up, "
		    "bandwidth_down, udp_bytes or udp_packets");
	return 0;
}

/* The class's match and key as one number: a reload that changes them
 * makes the class's keys new. */
static uint64_t
limits_shape(const struct limits_class *c)
{
	uint64_t	 h = PT_HASH_FNV64_BASIS;
	size_t		 i;

	h = limits_digest(h, &c->key, sizeof(c->key));
	h = limits_digest(h, &c->prefix_v4, sizeof(c->prefix_v4));
	h = limits_digest(h, &c->prefix_v6, sizeof(c->prefix_v6));
	h = limits_digest(h, &c->protos, sizeof(c->protos));
	for (i = 0; i < c->nusers; i++)
		h = limits_digest(h, c->users[i], strlen(c->users[i]));
	h = limits_digest(h, "|", 1);
	for (i = 0; i < c->nsrc; i++)
		h = limits_digest(h, &c->src[i], sizeof(c->src[i]));
	h = limits_digest(h, "|", 1);
	for (i = 0; i < c->nlisteners; i++)
		h = limits_digest(h, c->listeners[i],
		    strlen(c->listeners[i]));
	return h;
}

static int
limits_class_parse(struct limits_parse *p, struct limits_conf *lc,
    struct limits_class *c, const config_setting_t *node, int idx)
{
	const config_setting_t	*s;
	const char		*name;
	size_t			 i;

	snprintf(p->e.prefix, sizeof(p->e.prefix), "class %d", idx + 1);
	c->index = idx;
	c->slot = -1;
	c->ctr_refused = c->ctr_delayed = c->ctr_dropped = -1;
	c->line = config_setting_source_line(node);
	if (!config_setting_is_group(node))
		return conf_fail(&p->e, node, "expected a group ({ name = ...; "
		    "match = {...}; key = ...; ... })");
	if (!config_setting_lookup_string(node, "name", &name) ||
	    name[0] == '\0')
		return conf_fail(&p->e, node, "name: required, a non-empty "
		    "string");
	if (strlen(name) >= TABLE_NAME_MAX)
		return conf_fail(&p->e, config_setting_get_member(node, "name"),
		    "name: longer than %d bytes", TABLE_NAME_MAX - 1);
	/* It is a counter label's value too (class="<name>"). */
	for (i = 0; name[i] != '\0'; i++)
		if (name[i] < 0x21 || name[i] > 0x7e || name[i] == '"' ||
		    name[i] == '\\')
			return conf_fail(&p->e, config_setting_get_member(node,
			    "name"), "name: printable ASCII without space, "
			    "'\"' or '\\'");
	snprintf(p->e.prefix, sizeof(p->e.prefix), "class \"%.64s\"", name);
	for (i = 0; i < (size_t)idx; i++)
		if (strcmp(lc->classes[i].name, name) == 0)
			return conf_fail(&p->e, config_setting_get_member(node,
			    "name"), "name: used by an earlier class");
	if ((c->name = strdup(name)) == NULL)
		return conf_fail(&p->e, node, "out of memory");
	if (limits_known(p, node, limits_class_keys, "class") < 0)
		return -1;
	if ((s = config_setting_get_member(node, "match")) != NULL &&
	    limits_match_parse(p, c, s) < 0)
		return -1;
	if (limits_key_parse(p, c, node) < 0 || limits_rates(p, c, node) < 0)
		return -1;
	c->late = c->key == LK_USER || c->has_user || c->protos != 0;
	if (c->late)
		lc->any_late = true;
	else
		lc->any_early = true;
	c->shape = limits_shape(c);
	return 0;
}

struct limits_conf *
limits_conf_parse(const config_setting_t *node, char *err, size_t errlen,
    const config_setting_t **where)
{
	struct limits_parse	 p = { { err, errlen, where, "" } };
	struct limits_conf	*lc;
	const config_setting_t	*cl;
	uint64_t		 v;
	int			 i, n, rc;

	if ((lc = calloc(1, sizeof(*lc))) == NULL) {
		conf_fail(&p.e, node, "out of memory");
		return NULL;
	}
	lc->table_size = LIMITS_TABLE_DEFAULT;
	if (limits_known(&p, node, limits_keys, "limits") < 0)
		goto bad;
	if ((rc = limits_num(&p, node, "table_size", TABLE_GROUP,
	    LIMITS_TABLE_MAX, &v)) < 0)
		goto bad;
	if (rc > 0)
		lc->table_size = (uint32_t)v;
	if ((cl = config_setting_get_member(node, "classes")) == NULL ||
	    !config_setting_is_list(cl) || config_setting_length(cl) == 0) {
		conf_fail(&p.e, cl != NULL ? cl : node, "classes: required, "
		    "a list of classes ( { name = ...; ... }, ... )");
		goto bad;
	}
	n = config_setting_length(cl);
	if (n > TABLE_CLASSES) {
		conf_fail(&p.e, cl, "classes: at most %d", TABLE_CLASSES);
		goto bad;
	}
	if ((lc->classes = calloc((size_t)n, sizeof(*lc->classes))) == NULL) {
		conf_fail(&p.e, cl, "out of memory");
		goto bad;
	}
	for (i = 0; i < n; i++) {
		lc->nclasses = (size_t)i + 1;
		if (limits_class_parse(&p, lc, &lc->classes[i],
		    config_setting_get_elem(cl, (unsigned)i), i) < 0)
			goto bad;
	}
	return lc;
bad:
	limits_conf_free(lc);
	return NULL;
}

static void
limits_free_strings(char **v, size_t n)
{
	size_t	 i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
limits_conf_free(struct limits_conf *lc)
{
	struct limits_class	*c;
	size_t			 i;

	if (lc == NULL)
		return;
	for (i = 0; i < lc->nclasses; i++) {
		c = &lc->classes[i];
		free(c->name);
		limits_free_strings(c->users, c->nusers);
		free(c->src);
		limits_free_strings(c->listeners, c->nlisteners);
	}
	free(lc->classes);
	free(lc);
}
