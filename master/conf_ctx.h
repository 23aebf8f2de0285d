/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the files that read the configuration share (master/conf.c and
 * the groups it hands to conf_resolver.c and conf_parents.c): the state
 * of one reading, and the readers of single values that name file and
 * line on an error. Private to master/conf*.c.
 */
#ifndef PT_MASTER_CONF_CTX_H
#define PT_MASTER_CONF_CTX_H

#include <stdbool.h>

#include <libconfig.h>

struct pt_config;

struct conf_ctx {
	struct pt_config	*conf;
	char			*err;
	bool			 failed;
};

/* ---- master/conf.c ---------------------------------------------------- */

/* Records the first error as "FILE:LINE: path: message"; returns -1. */
int	 conf_err(struct conf_ctx *cc, const config_setting_t *s,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same with a message that names no path (a module's report). */
int	 conf_err_at(struct conf_ctx *cc, const config_setting_t *s,
	    const char *why);
bool	 conf_key_known(const char *name, const char *const *keys);
/* Refuses any member of group <g> not in <keys>. */
int	 conf_check_keys(struct conf_ctx *cc, const config_setting_t *g,
	    const char *const *keys);
bool	 conf_is_int(const config_setting_t *s);
/* Group <name> of <root> checked against <keys>, or *out NULL when
 * absent. */
int	 conf_group(struct conf_ctx *cc, const config_setting_t *root,
	    const char *name, const char *const *keys, config_setting_t **out);
/* Integer member <name> of <g> in [min, max], or <def> when absent. */
int	 conf_int(struct conf_ctx *cc, const config_setting_t *g,
	    const char *name, long long min, long long max, long long def,
	    long long *out);
/* String member <name> of <g>, copied, or a copy of <def> (may be NULL). */
int	 conf_str(struct conf_ctx *cc, const config_setting_t *g,
	    const char *name, const char *def, char **out);
int	 conf_bool(struct conf_ctx *cc, const config_setting_t *g,
	    const char *name, bool def, bool *out);

/* ---- master/conf_resolver.c ------------------------------------------- */

/* The `resolver` group. */
int	 conf_resolver(struct conf_ctx *cc, const config_setting_t *root);

/* ---- master/conf_parents.c -------------------------------------------- */

/* `parents`, before the listeners and modules whose `via` names them. */
int	 conf_parents(struct conf_ctx *cc, const config_setting_t *root);
/* Their TLS contexts (https parents), once the modules are loaded. */
int	 conf_parents_tls(struct conf_ctx *cc, const config_setting_t *root);
/* Refuses a parent whose address is one of this file's listeners. */
int	 conf_parents_not_ours(struct conf_ctx *cc,
	    const config_setting_t *root);
/* A Via pseudonym's token characters (RFC 9110 5.6.2). */
bool	 conf_via_token(const char *s);
/* http.via_pseudonym's default, which depends on parents. */
int	 conf_via_pseudonym(struct conf_ctx *cc);

#endif
