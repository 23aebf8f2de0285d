/* SPDX-License-Identifier: BSD-2-Clause */
#include "modules/common/conf_list.h"

#include <string.h>

int
conf_list_count(const config_setting_t *s)
{
	return config_setting_is_aggregate(s) ? config_setting_length(s) : 1;
}

const config_setting_t *
conf_list_item(const config_setting_t *s, int i)
{
	return config_setting_is_aggregate(s) ?
	    config_setting_get_elem(s, (unsigned)i) : s;
}

const char *
conf_unknown_key(const config_setting_t *group, const char *const *keys,
    const config_setting_t **which)
{
	config_setting_t	*m;
	const char		*name;
	int			 i, k;

	for (i = 0; (m = config_setting_get_elem(group, (unsigned)i)) != NULL;
	    i++) {
		if ((name = config_setting_name(m)) == NULL)
			continue;
		for (k = 0; keys[k] != NULL; k++)
			if (strcmp(name, keys[k]) == 0)
				break;
		if (keys[k] == NULL) {
			*which = m;
			return name;
		}
	}
	return NULL;
}
