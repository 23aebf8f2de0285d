/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The auth module's configuration, read in the master: the module's
 * entry in `modules` (options, the userlist file, the counters, a fresh
 * MAC key) and each listener's `auth = { ... }` group. Everything here
 * runs at load and at each reload; a refusal (a broken userlist) keeps
 * the configuration the master already has, with its userlist, serving.
 * It deliberately verifies no password and touches no worker state.
 */
#include "modules/auth/auth.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "modules/auth/hash.h"

/* Messages handed back through errstr: the master is single-threaded and
 * the core copies the message before conf() runs again. */
static char	 auth_err[512];

static const char *const auth_keys[] = {
	"name", "path", "userlist", "cache_ttl", "cache_size", "realm",
	"threads", "queue", "thread_cpus", "thread_nice", "fail_threshold",
	"fail_window", "fail_penalty", "fail_sources", "helper", NULL
};

static const char *const auth_helper_keys[] = {
	"command", "children", "concurrency", "timeout", NULL
};

static const char *const auth_listener_keys[] = {
	"required", "no_auth_from", NULL
};

static const char *
auth_unknown_key(const config_setting_t *node, const char *const *keys)
{
	config_setting_t	*m;
	const char		*name;
	int			 i, k;

	for (i = 0; (m = config_setting_get_elem(node, i)) != NULL; i++) {
		if ((name = config_setting_name(m)) == NULL)
			continue;
		for (k = 0; keys[k] != NULL; k++)
			if (strcmp(name, keys[k]) == 0)
				break;
		if (keys[k] == NULL)
			return name;
	}
	return NULL;
}

/* An optional integer in [lo, hi]; absent keeps *out. */
static int
auth_uint(const config_setting_t *node, const char *key, unsigned lo,
    unsigned hi, unsigned *out)
{
	config_setting_t	*s = config_setting_get_member(node, key);
	long long		 v;

	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_INT &&
	    config_setting_type(s) != CONFIG_TYPE_INT64) {
		snprintf(auth_err, sizeof(auth_err), "%s: not an integer",
		    key);
		return -1;
	}
	v = config_setting_get_int64(s);
	if (v < lo || v > hi) {
		snprintf(auth_err, sizeof(auth_err), "%s: %lld is outside "
		    "%u..%u", key, v, lo, hi);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* An optional string; absent keeps *out (NULL or a default). */
static int
auth_string(const config_setting_t *node, const char *key, char **out)
{
	config_setting_t	*s = config_setting_get_member(node, key);
	const char		*v;

	if (s == NULL)
		return 0;
	if ((v = config_setting_get_string(s)) == NULL) {
		snprintf(auth_err, sizeof(auth_err), "%s: not a string", key);
		return -1;
	}
	free(*out);
	if ((*out = strdup(v)) == NULL) {
		snprintf(auth_err, sizeof(auth_err), "out of memory");
		return -1;
	}
	return 0;
}

/* Whether the helper's program (its first word) can be started as
 * posix_spawnp will (a path, or a name looked up in PATH): caught at -t
 * rather than as every login failing once the proxy runs. */
static bool
auth_helper_found(const char *command)
{
	char		 prog[256], path[PATH_MAX + 256];
	const char	*dirs, *e;
	size_t		 n;

	command += strspn(command, " \t");
	n = strcspn(command, " \t");
	if (n == 0 || n >= sizeof(prog))
		return false;
	memcpy(prog, command, n);
	prog[n] = '\0';
	if (strchr(prog, '/') != NULL)
		return access(prog, X_OK) == 0;
	if ((dirs = getenv("PATH")) == NULL)
		dirs = "/usr/local/bin:/usr/bin:/bin";
	for (; *dirs != '\0'; dirs = *e == ':' ? e + 1 : e) {
		e = dirs + strcspn(dirs, ":");
		if ((size_t)(e - dirs) >= PATH_MAX)
			continue;
		snprintf(path, sizeof(path), "%.*s/%s", e == dirs ? 1 :
		    (int)(e - dirs), e == dirs ? "." : dirs, prog);
		if (access(path, X_OK) == 0)
			return true;
	}
	return false;
}

static int
auth_conf_helper(struct auth_conf *ac, const config_setting_t *node)
{
	config_setting_t	*h = config_setting_get_member(node, "helper");
	const char		*bad;

	if (h == NULL)
		return 0;
	if (!config_setting_is_group(h)) {
		snprintf(auth_err, sizeof(auth_err), "helper: not a group "
		    "({ command = \"...\"; children = N; concurrency = N; "
		    "timeout = S; })");
		return -1;
	}
	if ((bad = auth_unknown_key(h, auth_helper_keys)) != NULL) {
		snprintf(auth_err, sizeof(auth_err), "helper: unknown option "
		    "\"%.64s\"", bad);
		return -1;
	}
	if (auth_string(h, "command", &ac->helper_command) < 0 ||
	    auth_uint(h, "children", 1, 64, &ac->helper_children) < 0 ||
	    auth_uint(h, "concurrency", 0, 256,
	    &ac->helper_concurrency) < 0 ||
	    auth_uint(h, "timeout", 1, 600, &ac->helper_timeout) < 0)
		return -1;
	if (ac->helper_command == NULL || ac->helper_command[0] == '\0') {
		snprintf(auth_err, sizeof(auth_err), "helper: command is "
		    "required");
		return -1;
	}
	if (!auth_helper_found(ac->helper_command)) {
		snprintf(auth_err, sizeof(auth_err), "helper: command: "
		    "\"%.128s\": no such executable program%s",
		    ac->helper_command, strchr(ac->helper_command, '/') ?
		    "" : " in PATH");
		return -1;
	}
	return 0;
}

static int
auth_conf_options(struct auth_conf *ac, const config_setting_t *node)
{
	char	*cpus = NULL;
	int	 rc = -1;

	if (auth_string(node, "userlist", &ac->userlist_path) < 0 ||
	    auth_string(node, "realm", &ac->realm) < 0 ||
	    auth_uint(node, "cache_ttl", 0, 86400, &ac->cache_ttl) < 0 ||
	    auth_uint(node, "cache_size", 0, 4194304, &ac->cache_size) < 0 ||
	    auth_uint(node, "threads", 1, 64, &ac->threads) < 0 ||
	    auth_uint(node, "queue", 0, 65536, &ac->queue) < 0 ||
	    auth_uint(node, "thread_nice", 0, 19, &ac->thread_nice) < 0 ||
	    auth_uint(node, "fail_threshold", 0, 1000,
	    &ac->fail_threshold) < 0 ||
	    auth_uint(node, "fail_window", 1, 86400, &ac->fail_window) < 0 ||
	    auth_uint(node, "fail_penalty", 1, 86400, &ac->fail_penalty) < 0 ||
	    auth_uint(node, "fail_sources", 1, 1048576,
	    &ac->fail_sources) < 0 ||
	    auth_string(node, "thread_cpus", &cpus) < 0 ||
	    auth_conf_helper(ac, node) < 0)
		goto out;
	if (cpus != NULL && strcmp(cpus, "any") != 0 &&
	    strcmp(cpus, "worker") != 0) {
		snprintf(auth_err, sizeof(auth_err), "thread_cpus: \"any\" or "
		    "\"worker\"");
		goto out;
	}
	if (cpus != NULL)
		ac->thread_any_cpu = strcmp(cpus, "any") == 0;
	if (ac->userlist_path == NULL && ac->helper_command == NULL) {
		snprintf(auth_err, sizeof(auth_err), "userlist (or a helper) "
		    "is required");
		goto out;
	}
	if (ac->userlist_path != NULL && ac->helper_command != NULL) {
		snprintf(auth_err, sizeof(auth_err), "userlist and helper "
		    "exclude each other: choose one backend");
		goto out;
	}
	rc = 0;
out:
	free(cpus);
	return rc;
}

static int
auth_counters(struct auth_conf *ac)
{
	ac->ctr_verifications = pt_counter_register("auth_verifications");
	ac->ctr_cache_hits = pt_counter_register("auth_cache_hits");
	ac->ctr_failures = pt_counter_register("auth_failures");
	ac->ctr_overload = pt_counter_register("auth_overload");
	ac->ctr_coalesced = pt_counter_register("auth_coalesced");
	return ac->ctr_verifications < 0 || ac->ctr_cache_hits < 0 ||
	    ac->ctr_failures < 0 || ac->ctr_overload < 0 ||
	    ac->ctr_coalesced < 0 ? -1 : 0;
}

int
auth_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct auth_conf	*ac;
	const char		*bad;

	auth_err[0] = '\0';
	*errstr = auth_err;
	if ((bad = auth_unknown_key(node, auth_keys)) != NULL) {
		snprintf(auth_err, sizeof(auth_err), "unknown option \"%.64s\"",
		    bad);
		return -1;
	}
	if ((ac = calloc(1, sizeof(*ac))) == NULL) {
		snprintf(auth_err, sizeof(auth_err), "out of memory");
		return -1;
	}
	ac->cache_ttl = 300;
	ac->cache_size = 4096;
	ac->threads = 2;
	ac->queue = 64;
	ac->thread_any_cpu = true;
	ac->thread_nice = 10;
	ac->fail_threshold = 10;
	ac->fail_window = 60;
	ac->fail_penalty = 300;
	ac->fail_sources = 16384;
	ac->helper_children = 4;
	ac->helper_timeout = 10;
	if (auth_conf_options(ac, node) < 0)
		goto fail;
	if (ac->realm == NULL && (ac->realm = strdup("portico")) == NULL) {
		snprintf(auth_err, sizeof(auth_err), "out of memory");
		goto fail;
	}
	if (ac->userlist_path != NULL) {
		if (ul_load(&ac->ul, ac->userlist_path, hash_crypt_ok,
		    auth_err, sizeof(auth_err)) < 0)
			goto fail;
	}
	if (getrandom(ac->key, sizeof(ac->key), 0) !=
	    (ssize_t)sizeof(ac->key)) {
		snprintf(auth_err, sizeof(auth_err), "getrandom: %s",
		    strerror(errno));
		goto fail;
	}
	auth_mac_key_init(&ac->mac_key, ac->key);
	if (auth_counters(ac) < 0) {
		snprintf(auth_err, sizeof(auth_err), "pt_counter_register "
		    "failed");
		goto fail;
	}
	pt_log(PT_LOG_INFO, "auth: %zu users from %s, %u threads, queue %u",
	    ac->ul.n, ac->userlist_path ? ac->userlist_path : "(helper)",
	    ac->threads, ac->queue);
	mc->ctx = ac;
	return 0;
fail:
	auth_conf_free(ac);
	return -1;
}

void
auth_conf_free(void *ctx)
{
	struct auth_conf	*ac = ctx;

	if (ac == NULL)
		return;
	ul_free(&ac->ul);
	free(ac->userlist_path);
	free(ac->realm);
	free(ac->helper_command);
	explicit_bzero(ac->key, sizeof(ac->key));
	explicit_bzero(&ac->mac_key, sizeof(ac->mac_key));
	free(ac);
}

int
auth_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	struct auth_listener	*l;
	config_setting_t	*nets, *e;
	const char		*bad, *s, *why;
	int			 i, n = 0;

	(void)mc;
	(void)modctx;
	auth_err[0] = '\0';
	*errstr = auth_err;
	if (node != NULL) {
		if ((bad = auth_unknown_key(node, auth_listener_keys)) != NULL) {
			snprintf(auth_err, sizeof(auth_err), "auth: unknown "
			    "option \"%.64s\" (required, no_auth_from)", bad);
			return -1;
		}
		e = config_setting_get_member(node, "required");
		if (e != NULL && config_setting_type(e) != CONFIG_TYPE_BOOL) {
			snprintf(auth_err, sizeof(auth_err), "auth: required "
			    "is true or false");
			return -1;
		}
		if (e != NULL && !config_setting_get_bool(e))
			return 1;
		nets = config_setting_get_member(node, "no_auth_from");
		if (nets != NULL && !config_setting_is_array(nets) &&
		    !config_setting_is_list(nets)) {
			snprintf(auth_err, sizeof(auth_err), "no_auth_from: "
			    "a list of networks ([ \"10.0.0.0/8\" ])");
			return -1;
		}
		n = nets != NULL ? config_setting_length(nets) : 0;
	}
	if ((l = calloc(1, sizeof(*l) + (size_t)n * sizeof(l->nets[0]))) ==
	    NULL) {
		snprintf(auth_err, sizeof(auth_err), "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(nets, (unsigned)i);
		if ((s = config_setting_get_string(e)) == NULL ||
		    net_prefix_parse(s, &l->nets[i], &why) < 0) {
			snprintf(auth_err, sizeof(auth_err), "no_auth_from: "
			    "\"%.64s\" is not a network: %s (\"10.0.0.0/8\", "
			    "\"::1/128\", no host bits)", s ? s : "?",
			    s ? why : "not a string");
			free(l);
			return -1;
		}
	}
	l->nnets = (size_t)n;
	*lctx_out = l;
	return 0;
}

void
auth_listener_conf_free(void *lctx)
{
	free(lctx);
}

/* An IPv4 client on a dual-stack socket (::ffff:a.b.c.d) is judged by its
 * IPv4 address; the other IPv6 forms that carry one (NAT64, 6to4) are
 * not: a source is the address the client has, not one it names. */
bool
auth_net_match(const struct auth_listener *l, const struct sockaddr *sa)
{
	struct net_addr	 a;
	size_t		 i;

	net_addr_from(sa, &a);
	if (a.family == 0)
		return false;
	for (i = 0; i < l->nnets; i++)
		if (net_prefix_has(&l->nets[i], &a))
			return true;
	return false;
}
