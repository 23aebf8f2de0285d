/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parent proxies: the `parents` list of the configuration and the `via`
 * choices that send traffic through them (a listener's, an acl rule's
 * through pt_via_conf). One parser for both, read by the master; the
 * worker's side (choosing, dialling, health) is worker/parent*.c.
 */
#ifndef PT_COMMON_PARENT_H
#define PT_COMMON_PARENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libconfig.h>

#include "portico/module.h"

enum parent_proto {
	PARENT_HTTP = 0,
	PARENT_HTTPS,		/* HTTP over TLS to the parent */
	PARENT_SOCKS5,
	PARENT_SOCKS4,		/* 4a when the name is sent */
};

/* A parent's name, bytes, and the most in one configuration. */
#define PARENT_NAME_MAX		48
#define PARENT_MAX		64

/*
 * One entry of `parents`, read-only once parsed (workers read the copy
 * they forked with). Invariants: <host> is a name or an address without
 * brackets, <port> non-zero; <basic> is set only for http and https
 * parents with a user; <user> and <password> go together.
 */
struct conf_parent {
	char			*name;
	char			*address;	/* as written */
	char			*host;
	uint16_t		 port;
	enum parent_proto	 proto;
	char			*user, *password;
	/* "Proxy-Authorization: Basic ...\r\n", built once. */
	char			*basic;
	int			 send_proxy;	/* 0, 1 or 2 (PROXY v1, v2) */
	/* socks: who resolves a name; http parents always resolve. */
	bool			 resolve_local;
	unsigned		 connect_timeout_ms;
	unsigned		 max_fails;	/* failures in a row: down */
	unsigned		 down_time_ms;
	/* https: the CA bundle (NULL: the system's), whether the
	 * certificate is checked, the server name sent and checked, and
	 * what the tls module made of it (master/upstream_tls.h). */
	char			*ca;
	bool			 verify;
	char			*sni;
	const struct pt_module	*tls_mod;
	void			*tls_ctx;
	/* Health across workers and reloads is keyed by this: a parent
	 * whose name, address, protocol and user stay keeps its state. */
	uint64_t		 identity;
	int			 line;
};

enum via_strategy {
	VIA_ORDERED = 0,	/* the first up, the next on failure */
	VIA_ROUND_ROBIN,
	VIA_RANDOM,		/* weighted */
	VIA_HASH_USER,		/* the user's (the source's without one) */
	VIA_HASH_SOURCE,	/* the client address's */
};

/* A member of a choice that is no parent: go straight to the target. */
#define VIA_DIRECT		(-1)

/*
 * A choice of parents (`via`): a name, a list tried in order, or a group
 * with a strategy. Invariants: 1 <= n <= PARENT_MAX; member[i] is an
 * index into the configuration's parents, or VIA_DIRECT; weight[i] >= 1.
 */
struct pt_via {
	enum via_strategy	 strategy;
	int			 n;
	int16_t			 member[PARENT_MAX];
	uint16_t		 weight[PARENT_MAX];
	/* As the operator would read it: "corp", "corp,eu",
	 * "round-robin(corp,eu)": for logs. */
	char			 text[128];
	/* Which of a worker's round-robin counters is this choice's. */
	uint32_t		 rr_slot;
};

/* The keys a group with a `via` may hold. */
extern const char *const via_keys[];

/* ---- common/parent_conf.c -------------------------------------------- */

/*
 * Reads the configuration's `parents` list (<list>, NULL when absent)
 * into a new array (parent_conf_free), *n entries. Master: reads
 * password files. 0, or -1 with the message in <err> and the setting at
 * fault in *where. <connect_timeout_ms> is limits.connect_timeout, a
 * parent's default.
 */
int	 parent_conf_parse(const config_setting_t *list,
	    unsigned connect_timeout_ms, struct conf_parent **out, int *n,
	    const config_setting_t **where, char *err, size_t errsz);
void	 parent_conf_free(struct conf_parent *p, int n);
/*
 * Reads the `via` member of <group> into a new choice owned by the
 * caller (free()), or NULL in *out when there is none. Names are looked
 * up in the `parents` list of the same configuration file. 0, or -1 as
 * parent_conf_parse.
 */
int	 via_parse(const config_setting_t *group, struct pt_via **out,
	    const config_setting_t **where, char *err, size_t errsz);
/* The protocol's name in the configuration ("http", ...). */
const char *parent_proto_name(enum parent_proto p);

#endif
