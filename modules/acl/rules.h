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
#include "modules/acl/net.h"

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
	char		*reason;	/* for the log: "acl: rule ..." */
	bool		 allow;
	unsigned	 has;		/* ACL_C_* */
	struct acl_net	*src, *dst;
	size_t		 nsrc, ndst;
	struct acl_hostset hosts;	/* `host` names and suffixes */
	pcre2_code	**re;		/* `host` ~regexes */
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
};

struct acl_conf {
	bool		 default_allow;
	bool		 allow_private;
	struct acl_rule	*rules;
	size_t		 nrules;
	char		*default_reason, *private_reason;
	size_t		 hostfile_names;	/* for the log */
	size_t		 hostfile_bytes;
	int		 ctr_allowed, ctr_denied, ctr_private;
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
	    const struct acl_addr *target, size_t from, unsigned unknown,
	    struct acl_decision *d);
/*
 * After an allow: whether <target> is a private destination the
 * configuration does not open (allow_private, or a `dst` entry of the
 * allowing rule <rule> (-1: the default) inside the private range).
 */
bool	 acl_private_denied(const struct acl_conf *ac, int rule,
	    const struct acl_addr *target);
/* The protocol's name in rules ("http", "socks5", ...), or NULL. */
const char *acl_proto_name(enum pt_proto p);

#endif /* PT_ACL_RULES_H */
