/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every CUnit suite of the acl module, run by t/unit/main.c built with
 * -DPT_UNIT_SUITES='"modules/acl/t_suites.h"' (one runner, TAP output).
 */
#ifndef PT_ACL_T_SUITES_H
#define PT_ACL_T_SUITES_H

void	register_acl_hostset_suite(void);	/* t_hostset.c */
void	register_acl_rules_suite(void);		/* t_rules.c */

#define SUITES_ALL							\
	register_acl_hostset_suite,					\
	register_acl_rules_suite

#endif
