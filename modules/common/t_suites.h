/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every CUnit suite of the module support code (modules/common/), run by
 * t/unit/main.c built with -DPT_UNIT_SUITES='"modules/common/t_suites.h"'.
 */
#ifndef PT_MODULES_COMMON_T_SUITES_H
#define PT_MODULES_COMMON_T_SUITES_H

void	register_net_suite(void);		/* t_net.c */
void	register_conf_opts_suite(void);		/* t_conf_opts.c */

#define SUITES_ALL							\
	register_net_suite,						\
	register_conf_opts_suite

#endif
