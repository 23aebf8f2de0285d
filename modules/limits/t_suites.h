/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every CUnit suite of the limits module, run by t/unit/main.c built with
 * -DPT_UNIT_SUITES='"modules/limits/t_suites.h"' (one runner, TAP output).
 */
#ifndef PT_LIMITS_T_SUITES_H
#define PT_LIMITS_T_SUITES_H

void	register_limits_bucket_suite(void);	/* t_bucket.c */
void	register_limits_table_suite(void);	/* t_table.c */
void	register_limits_conf_suite(void);	/* t_conf.c */

#define SUITES_ALL							\
	register_limits_bucket_suite,					\
	register_limits_table_suite,					\
	register_limits_conf_suite

#endif
