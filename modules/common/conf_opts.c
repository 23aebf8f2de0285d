/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A module's configuration errors and option tables (conf_opts.h). The
 * messages are the operators': what is written here must stay what the
 * modules wrote before sharing it (tests compare them byte for byte).
 * Master only; it keeps no state.
 */
#include "modules/common/conf_opts.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int
conf_vfail(struct conf_err *e, const config_setting_t *at, const char *fmt,
    va_list ap)
{
	int	 n = 0;

	if (e->prefix[0] != '\0')
		n = snprintf(e->buf, e->size, "%s: ", e->prefix);
	if (n < 0 || (size_t)n >= e->size)
		n = 0;
	vsnprintf(e->buf + n, e->size - (size_t)n, fmt, ap);
	*e->where = at;
	return -1;
}

int
conf_fail(struct conf_err *e, const config_setting_t *at, const char *fmt,
    ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	conf_vfail(e, at, fmt, ap);
	va_end(ap);
	return -1;
}

/* Stores <m> by the kind of row <o>, or fails with the row's message. */
static int
conf_opt_store(struct conf_err *e, const struct conf_opt *o,
    const config_setting_t *m, void *field)
{
	switch (o->kind) {
	case CONF_OPT_SKIP:
		return 0;
	case CONF_OPT_STRING:
		if (config_setting_get_string(m) == NULL)
			return conf_fail(e, m, "%s", o->expect);
		*(const config_setting_t **)field = m;
		return 0;
	case CONF_OPT_LIST:
		if (config_setting_type(m) != CONFIG_TYPE_LIST)
			return conf_fail(e, m, "%s", o->expect);
		*(const config_setting_t **)field = m;
		return 0;
	case CONF_OPT_BOOL:
		if (config_setting_type(m) != CONFIG_TYPE_BOOL)
			return conf_fail(e, m, "%s", o->expect);
		*(bool *)field = config_setting_get_bool(m) != 0;
		return 0;
	case CONF_OPT_FN:
		return o->fn(e, m, field);
	}
	return conf_fail(e, m, "%s", o->expect);
}

int
conf_opts_read(struct conf_err *e, const config_setting_t *group,
    const struct conf_opt *opts, void *out)
{
	const config_setting_t	*m;
	const struct conf_opt	*o;
	const char		*name;
	unsigned		 i;

	for (i = 0; (m = config_setting_get_elem(group, i)) != NULL; i++) {
		name = config_setting_name(m);
		for (o = opts; o->key != NULL; o++)
			if (name != NULL && strcmp(name, o->key) == 0)
				break;
		if (o->key == NULL)
			return conf_fail(e, m, "unknown option \"%s\"",
			    name != NULL ? name : "(unnamed)");
		if (conf_opt_store(e, o, m, (char *)out + o->off) < 0)
			return -1;
	}
	return 0;
}
