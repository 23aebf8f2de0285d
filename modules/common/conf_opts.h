/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A module's configuration errors and option tables, for the parsers
 * that run in the master (conf, listener_conf): an error is one message
 * in the caller's buffer, led by what it is about ("rule 3", "class
 * \"web\"", "accesslog"), and the setting at fault, whose file and line
 * the core prints; an option table says, for each key a group may hold,
 * what its value must be and where it goes, so a group is read by one
 * loop instead of a chain of strcmp. Module support code (see
 * modules/common/local.am), not the ABI.
 */
#ifndef PT_MODULES_COMMON_CONF_OPTS_H
#define PT_MODULES_COMMON_CONF_OPTS_H

#include <stdarg.h>
#include <stddef.h>

#include <libconfig.h>

/* Where a parser reports its first error. */
struct conf_err {
	char			*buf;		/* the message, NUL-ended */
	size_t			 size;		/* of buf, > 0 */
	const config_setting_t	**where;	/* to the setting at fault */
	/* Leads every message as "<prefix>: " unless empty; the parser
	 * rewrites it as it moves (rule by rule, class by class). */
	char			 prefix[96];
};

/*
 * Writes "<prefix>: " and then <fmt> into e->buf (cut to fit; a prefix
 * that leaves no room is left out), sets *e->where to <at> (NULL: the
 * core names the module's entry). Returns -1, so a parser can
 * `return conf_fail(...)`.
 */
int	 conf_fail(struct conf_err *e, const config_setting_t *at,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int	 conf_vfail(struct conf_err *e, const config_setting_t *at,
	    const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* What a key's value must be, and what is stored for it. */
enum conf_opt_kind {
	CONF_OPT_SKIP = 0,	/* anything: read elsewhere, nothing stored */
	CONF_OPT_STRING,	/* a string: the setting, as a const
				 * config_setting_t *, is stored */
	CONF_OPT_LIST,		/* a list ( ... ): the setting is stored */
	CONF_OPT_BOOL,		/* true or false: stored as a bool */
	CONF_OPT_FN		/* whatever <fn> accepts and stores */
};

/*
 * One row of a table: the key, what it takes, where in the caller's
 * struct it goes (offsetof), the whole error message when the value is
 * not of the kind (not for SKIP and FN), and for FN the reader: it gets
 * the setting and the field, stores the value, and returns 0, or -1
 * after conf_fail.
 */
struct conf_opt {
	const char		*key;
	enum conf_opt_kind	 kind;
	size_t			 off;
	const char		*expect;
	int			(*fn)(struct conf_err *e,
				    const config_setting_t *s, void *field);
};

/*
 * Reads every member of <group> with the row of <opts> (ended by a row
 * whose key is NULL) that names it, in the group's order, into the
 * struct at <out>; members absent leave their fields as they were (set
 * the defaults first). The first member no row names is an error,
 * 'unknown option "<key>"'; the first bad value is the row's error.
 * Returns 0, or -1 with <e> filled.
 */
int	 conf_opts_read(struct conf_err *e, const config_setting_t *group,
	    const struct conf_opt *opts, void *out);

#endif
