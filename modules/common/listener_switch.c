/* SPDX-License-Identifier: BSD-2-Clause */
#include "modules/common/listener_switch.h"

#include <stdio.h>
#include <string.h>

int
listener_switch(struct pt_modconf *mc, const config_setting_t *node,
    const char *module, char *err, size_t errlen)
{
	const config_setting_t	*m;
	int			 i;

	if (node == NULL)
		return 0;
	if (!config_setting_is_group(node)) {
		snprintf(err, errlen, "%s: expected a group ({ enabled = "
		    "false; })", module);
		return -1;
	}
	for (i = 0; (m = config_setting_get_elem(node, (unsigned)i)) != NULL;
	    i++) {
		if (strcmp(config_setting_name(m), "enabled") != 0 ||
		    config_setting_type(m) != CONFIG_TYPE_BOOL) {
			snprintf(err, errlen, "%s: \"%.64s\": the only listener "
			    "option is enabled = true or false", module,
			    config_setting_name(m));
			mc->where = m;
			return -1;
		}
		if (!config_setting_get_bool(m))
			return 1;
	}
	return 0;
}
