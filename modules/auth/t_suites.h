/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every CUnit suite of the auth module, run by t/unit/main.c built with
 * -DPT_UNIT_SUITES='"modules/auth/t_suites.h"' (one runner, TAP output).
 */
#ifndef PT_AUTH_T_SUITES_H
#define PT_AUTH_T_SUITES_H

/* ---- modules/auth/t_cache.c ------------------------------------------- */
void	register_auth_cache_suite(void);
/* ---- modules/auth/t_flight.c ------------------------------------------ */
void	register_auth_flight_suite(void);
/* ---- modules/auth/t_hash.c -------------------------------------------- */
void	register_auth_hash_suite(void);
/* ---- modules/auth/t_pad.c --------------------------------------------- */
void	register_auth_pad_suite(void);
/* ---- modules/auth/t_pool.c -------------------------------------------- */
void	register_auth_pool_suite(void);
/* ---- modules/auth/t_throttle.c ---------------------------------------- */
void	register_auth_throttle_suite(void);

#define SUITES_ALL							\
	register_auth_cache_suite,					\
	register_auth_throttle_suite,					\
	register_auth_flight_suite,					\
	register_auth_hash_suite,					\
	register_auth_pad_suite,					\
	register_auth_pool_suite

#endif
