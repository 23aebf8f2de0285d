/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The limits module's configuration: what the master parses
 * (limits_conf.c) and every worker reads, read-only after the fork, and
 * the one shared table (table.h) the master maps before forking.
 */
#ifndef PT_LIMITS_H
#define PT_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <portico/module.h>

#include "modules/common/net.h"
#include "modules/limits/table.h"

/* What a class counts as one subject. */
enum limits_key {
	LK_SOURCE = 0,		/* the client's address */
	LK_PREFIX,		/* its /prefix_v4 or /prefix_v6 network */
	LK_USER,		/* the verified user */
	LK_CLASS		/* everyone the class matches, together */
};

struct limits_class {
	char		*name;		/* also the refusal's reason */
	int		 index;		/* in limits_conf.classes */
	enum limits_key	 key;
	unsigned	 prefix_v4, prefix_v6;
	/* Judged at the first ACCESS of a connection (the user or the
	 * request's protocol is needed), not at ACCEPT. */
	bool		 late;
	/* match: every condition given must hold; none given: all. */
	bool		 has_user, user_any;
	char		**users;
	size_t		 nusers;
	struct net_prefix	*src;
	size_t		 nsrc;
	char		**listeners;
	size_t		 nlisteners;
	unsigned	 protos;	/* 1 << enum pt_proto; 0: any */
	/* The numbers; slot and epoch come from the shared table. */
	struct table_params p;
	uint64_t	 shape;		/* digest of match and key */
	int		 slot;		/* in the shared table, or -1 */
	/* Its counters (labelled class="<name>"), or -1. */
	int		 ctr_refused, ctr_delayed, ctr_dropped;
	int		 line;		/* of its entry, for messages */
};

struct limits_conf {
	struct limits_class *classes;
	size_t		 nclasses;
	uint32_t	 table_size;
	bool		 any_early, any_late;
	int		 ctr_refused, ctr_delayed, ctr_overflow, ctr_dropped;
};

/* ---- limits_conf.c (master) ------------------------------------------ */

/*
 * Parses the module's entry <node>. Returns the configuration (the
 * caller frees it with limits_conf_free), or NULL with the message in
 * <err> and the setting at fault in *where.
 */
struct limits_conf *limits_conf_parse(const config_setting_t *node,
	    char *err, size_t errlen, const config_setting_t **where);
void	 limits_conf_free(struct limits_conf *lc);

/* ---- match.c (worker, tests) ----------------------------------------- */

/* Whether class <c>'s match holds for <req> (at ACCEPT only the source
 * and listener conditions are known: call it for early classes only). */
bool	 limits_match(const struct limits_class *c, const struct pt_req *req);
/* The subject of <req> under <c>'s key: bytes written to <buf> (at least
 * 24 bytes; PT_NAME_MAX + 1 for users), their length, or -1 when there is
 * none (key "user" and no user). */
int	 limits_subject(const struct limits_class *c,
	    const struct pt_req *req, unsigned char *buf, size_t buflen);

#endif /* PT_LIMITS_H */
