/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The auth module's configuration, shared by auth_conf.c (the master
 * parses it) and auth.c (the workers use it read-only).
 */
#ifndef PT_AUTH_AUTH_H
#define PT_AUTH_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include <portico/module.h>

#include "modules/auth/mac.h"
#include "modules/common/net.h"
#include "modules/auth/userlist.h"

struct auth_conf {
	char		*userlist_path;		/* NULL with a helper */
	struct userlist	 ul;			/* ul.costliest: unknown users' */
	char		*realm;
	unsigned	 cache_ttl;		/* s, 0: no cache */
	unsigned	 cache_size;
	unsigned	 threads;
	unsigned	 queue;
	bool		 thread_any_cpu;	/* thread_cpus = "any" */
	unsigned	 thread_nice;		/* 0..19 */
	unsigned	 fail_threshold;	/* 0: no throttle */
	unsigned	 fail_window;
	unsigned	 fail_penalty;
	unsigned	 fail_sources;
	char		*helper_command;	/* NULL: none */
	unsigned	 helper_children;
	unsigned	 helper_concurrency;	/* 0: plain protocol */
	unsigned	 helper_timeout;	/* s */
	uint8_t		 key[32];		/* cache and connection MACs */
	struct auth_mac_key mac_key;		/* key's HMAC states */
	int		 ctr_verifications;
	int		 ctr_cache_hits;
	int		 ctr_failures;
	int		 ctr_overload;
	int		 ctr_coalesced;		/* joined a verification */
};

/* A listener's no_auth_from networks (modules/common/net.h). */
struct auth_listener {
	size_t			 nnets;
	struct net_prefix	 nets[];
};

PT_API extern const struct pt_module pt_module_auth;

/* ---- auth_conf.c (master) ---------------------------------------------- */
int	 auth_conf(struct pt_modconf *mc, const config_setting_t *node,
	    const char **errstr);
void	 auth_conf_free(void *ctx);
int	 auth_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
	    void *modctx, void **lctx_out, const char **errstr);
void	 auth_listener_conf_free(void *lctx);
/* Worker: whether <sa> is in one of <l>'s networks. */
bool	 auth_net_match(const struct auth_listener *l,
	    const struct sockaddr *sa);

#endif /* PT_AUTH_AUTH_H */
