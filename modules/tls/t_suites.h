/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every CUnit suite of the tls module, run by t/unit/main.c built with
 * -DPT_UNIT_SUITES='"modules/tls/t_suites.h"' (one runner, TAP output).
 */
#ifndef PT_TLS_T_SUITES_H
#define PT_TLS_T_SUITES_H

void	register_tls_names_suite(void);		/* t_names.c */
void	register_tls_ticket_suite(void);	/* t_ticket.c */
void	register_tls_client_suite(void);	/* t_client.c */

#define SUITES_ALL							\
	register_tls_names_suite,					\
	register_tls_ticket_suite,					\
	register_tls_client_suite

#endif
