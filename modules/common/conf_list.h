/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small readers of a module's libconfig settings shared by modules:
 * a setting that is a list or one value, and the first key of a group
 * that is not in a module's table. Module support code (see
 * modules/common/local.am), not the ABI.
 */
#ifndef PT_MODULES_COMMON_CONF_LIST_H
#define PT_MODULES_COMMON_CONF_LIST_H

#include <libconfig.h>

/* How many values <s> holds: a list's length, or 1 for one value. */
int	 conf_list_count(const config_setting_t *s);
/* The <i>-th value of <s> (<s> itself when it is one value). */
const config_setting_t *conf_list_item(const config_setting_t *s, int i);
/* The name of the first member of <group> not in the NULL-ended <keys>,
 * with *which set to it; NULL when every member is known. */
const char *conf_unknown_key(const config_setting_t *group,
	    const char *const *keys, const config_setting_t **which);

#endif
