/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every CUnit suite of the accesslog module, run by t/unit/main.c built
 * with -DPT_UNIT_SUITES='"modules/accesslog/t_suites.h"'.
 */
#ifndef PT_ACCESSLOG_T_SUITES_H
#define PT_ACCESSLOG_T_SUITES_H

void	register_accesslog_fmt_suite(void);	/* t_fmt.c */
void	register_accesslog_hold_suite(void);	/* t_hold.c */

#define SUITES_ALL							\
	register_accesslog_fmt_suite,					\
	register_accesslog_hold_suite

#endif
