/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ACL's rules: what the master parses (acl_conf.c) and the workers
 * evaluate (rules.c), read-only after the fork.
 */
#ifndef PT_ACL_RULES_H
#define PT_ACL_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <portico/module.h>

#include "modules/acl/hostset.h"
#include "modules/common/net.h"

/* A rule's conditions, as bits: which it has, and which a stage of the
 * request cannot judge yet. */
enum {
	ACL_C_SRC = 1 << 0,
	ACL_C_DST = 1 << 1,
	ACL_C_HOST = 1 << 2,
	ACL_C_HOSTFILE = 1 << 3,
	ACL_C_PORT = 1 << 4,
	ACL_C_USER = 1 << 5,
	ACL_C_LISTENER = 1 << 6,
	ACL_C_PROTO = 1 << 7,
	ACL_C_METHOD = 1 << 8
};
/* What a UDP association does not know before its datagrams. */
#define ACL_C_DEST	(ACL_C_DST | ACL_C_HOST | ACL_C_HOSTFILE | ACL_C_PORT)

struct acl_port_range {
	uint16_t	 lo, hi;
};

struct acl_rule {
	char		*label;		/* name, or "ruleN" */
	size_t		 label_len;	/* strlen(label), once */
	/* pt_counter_register_label: acl_rule_allowed or acl_rule_denied
	 * (by the action) {rule=label}; -1 when none could be had. */
	int		 ctr;
	char		*reason;	/* for the log: "acl: rule ..." */
	bool		 allow;
	unsigned	 has;		/* ACL_C_* */
	struct net_prefix	*src, *dst;
	size_t		 nsrc, ndst;
	struct acl_hostset hosts;	/* `host` names and suffixes */
	pcre2_code	**re;		/* `host` ~regexes */
	char		**re_text;	/* their source, for blocks */
	size_t		 nre;
	pcre2_code	*re_any;	/* all of them in one, or NULL */
	struct acl_hostset hostfile;
	struct acl_port_range *ports;
	size_t		 nports;
	bool		 user_any;	/* "*" */
	char		**users;
	size_t		 nusers;
	int		*listeners;	/* indexes in `listeners` */
	size_t		 nlisteners;
	uint32_t	 protos;	/* 1 << enum pt_proto */
	char		**methods;
	size_t		 nmethods;
	/* `egress` (and `egress_stable`): where the transactions this
	 * allow rule decides leave from (pt_conn_set_egress), or NULL. */
	struct pt_egress *egress;
	/* `via`: the parents the transactions this allow rule decides at
	 * ACCESS go through (pt_conn_set_via), or NULL. */
	struct pt_via	*via;
};

/*
 * One IPv4 network of a block, host order. Networks are nested or
 * disjoint, so sorted by start (wider first) each has one parent, the
 * nearest network that holds it; minrule is the first rule among it and
 * its ancestors, which is the first rule of the block that an address
 * in it (and in no deeper network) matches.
 */
struct acl_v4node {
	uint32_t	 lo, hi;
	int32_t		 parent;	/* index, or -1 */
	uint32_t	 minrule;
};

/* One IPv6 network of a block and its rule (tried in turn). */
struct acl_v6entry {
	struct net_prefix	 net;
	uint32_t	 rule;
};

/*
 * A run of consecutive rules that each have one condition, of one kind
 * (host, src or dst), with an index over all of them. Networks: the index
 * names the first rule of the run that holds the address, in one binary
 * search. Hosts: the union of the names and of the regexes (one JIT
 * call); when it does not match, the run is skipped, else its rules are
 * tried one by one. Either way first-match order is exactly kept.
 */
struct acl_block {
	size_t		 first, end;	/* rules [first, end) */
	unsigned	 kind;		/* ACL_C_HOST/SRC/DST; 0: no filter */
	struct acl_hostset hosts;	/* HOST: every name and suffix */
	pcre2_code	*re_any;	/* HOST: every regex, or NULL */
	bool		 re_opaque;	/* HOST: a regex left out of re_any */
	struct acl_v4node *v4;		/* SRC/DST: sorted by lo */
	size_t		 nv4;
	struct acl_v6entry *v6;
	size_t		 nv6;
};

/* Runs shorter than this are not worth a filter. */
#define ACL_BLOCK_MIN	4

struct acl_conf {
	bool		 default_allow;
	bool		 allow_private;
	struct acl_rule	*rules;
	size_t		 nrules;
	struct acl_block *blocks;	/* cover the rules, in order */
	size_t		 nblocks;
	size_t		*block_of;	/* rule index -> block index */
	char		*default_reason, *private_reason;
	size_t		 hostfile_names;	/* for the log */
	size_t		 hostfile_bytes;
	int		 ctr_allowed, ctr_denied, ctr_private;
	int		 ctr_default;	/* the default's decisions, {rule="default"} */
};

/* ---- acl_conf.c (master) ---------------------------------------------- */

/*
 * Parses the module's entry <node> into a new acl_conf. NULL on error,
 * with the message in <err> and the setting it is about in *where (NULL:
 * the entry). Reads the listeners' names from the configuration's root
 * (a rule's `listener` must name one).
 */
struct acl_conf *acl_conf_parse(const config_setting_t *node, char *err,
	    size_t errlen, const config_setting_t **where);
void	 acl_conf_free(struct acl_conf *ac);

/* ---- blocks.c (master) ------------------------------------------------ */

/* Groups the parsed rules into blocks; 0, or -1 with <err> (memory). */
int	 acl_blocks_build(struct acl_conf *ac, char *err, size_t errlen);
void	 acl_blocks_free(struct acl_conf *ac);
/* Whether <s>, a regex, means the same inside "(?:...)|(?:...)". */
bool	 acl_re_combinable(const char *s);
/* The <n> regexes as one alternation, compiled caseless with the JIT;
 * NULL when that fails (the caller then tries them one by one). */
pcre2_code *acl_re_union(char *const *texts, size_t n);

/* ---- rules.c (worker) --------------------------------------------------- */

enum acl_outcome {
	ACL_ALLOW,
	ACL_DENY,
	ACL_UNDECIDED		/* a rule needs what is not known yet */
};

struct acl_decision {
	enum acl_outcome outcome;
	/* The rule that decided (index), -1 for the default; for
	 * ACL_UNDECIDED the rule to resume from. */
	int		 rule;
};

/*
 * First match from rule <from>: a rule whose every condition matches
 * decides; a rule with a condition in <unknown> (ACL_C_*) whose other
 * conditions match leaves the request undecided at that rule. <target>
 * is the destination address (family 0 when unknown).
 */
void	 acl_eval(const struct acl_conf *ac, const struct pt_req *req,
	    const struct net_addr *target, size_t from, unsigned unknown,
	    struct acl_decision *d);
/*
 * After an allow: whether <target> is a private destination the
 * configuration does not open (allow_private, or a `dst` entry of the
 * allowing rule <rule> (-1: the default) inside the private range).
 */
bool	 acl_private_denied(const struct acl_conf *ac, int rule,
	    const struct net_addr *target);
/* Drops the answers kept for hosts (acl_conf_free does, since a new
 * configuration may reuse the addresses of the old one's matchers). */
void	 acl_memo_forget(void);
/* The protocol's name in rules ("http", "socks5", ...), or NULL. */
const char *acl_proto_name(enum pt_proto p);

#endif /* PT_ACL_RULES_H */
