/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A module's group on a listener that holds only `enabled = true|false`
 * (acl = { enabled = false; }, limits = { enabled = false; }): the
 * listener_conf answer for modules whose rules say everything else.
 * Module support code (see modules/common/local.am), not the ABI.
 */
#ifndef PT_MODULES_COMMON_LISTENER_SWITCH_H
#define PT_MODULES_COMMON_LISTENER_SWITCH_H

#include <stddef.h>

#include <libconfig.h>
#include <portico/module.h>

/*
 * For listener_conf(): 0 when <node> is absent or says enabled = true,
 * 1 when it says enabled = false (the module leaves the listener alone),
 * -1 with a message in <err> naming <module> (and mc->where set to the
 * bad setting when there is one) otherwise.
 */
int	 listener_switch(struct pt_modconf *mc, const config_setting_t *node,
	    const char *module, char *err, size_t errlen);

#endif
