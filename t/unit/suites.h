/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every unit-test suite, once. Each t/unit/test_<unit>.c defines exactly one
 * register function that adds its suite to the CUnit registry; main.c calls
 * them in the order of SUITES_ALL. Adding a test file means one prototype and
 * one entry here, and nothing in main.c.
 */
#ifndef PT_T_UNIT_SUITES_H
#define PT_T_UNIT_SUITES_H

/* ---- t/unit/test_conf.c ---------------------------------------------- */
void	register_conf_suite(void);
/* ---- t/unit/test_sockaddr.c ------------------------------------------ */
void	register_sockaddr_suite(void);
/* ---- t/unit/test_loop.c ---------------------------------------------- */
void	register_loop_suite(void);
/* ---- t/unit/test_pool.c ---------------------------------------------- */
void	register_pool_suite(void);
void	register_http_parse_suite(void);
void	register_dns_suite(void);
void	register_socks_parse_suite(void);
/* ---- t/unit/test_req.c ----------------------------------------------- */
void	register_req_suite(void);
/* ---- t/unit/test_modloop.c ------------------------------------------- */
void	register_modloop_suite(void);
/* ---- t/unit/test_counters.c ------------------------------------------ */
void	register_counters_suite(void);
/* ---- t/unit/test_http_head.c ----------------------------------------- */
void	register_http_head_suite(void);
/* ---- t/unit/test_budget.c -------------------------------------------- */
void	register_budget_suite(void);
/* ---- t/unit/test_handover.c ------------------------------------------ */
void	register_handover_suite(void);
/* ---- t/unit/test_host.c ---------------------------------------------- */
void	register_host_suite(void);
/* ---- t/unit/test_lru.c ----------------------------------------------- */
void	register_lru_suite(void);
/* ---- t/unit/test_hash.c ---------------------------------------------- */
void	register_hash_suite(void);
/* ---- t/unit/test_http_flow.c ----------------------------------------- */
void	register_http_flow_suite(void);
/* ---- t/unit/test_proxy_header.c -------------------------------------- */
void	register_proxy_header_suite(void);
/* ---- t/unit/test_egress.c -------------------------------------------- */
void	register_egress_suite(void);
/* ---- t/unit/test_parent_wire.c --------------------------------------- */
void	register_parent_wire_suite(void);
/* ---- t/unit/test_parent_conf.c --------------------------------------- */
void	register_parent_conf_suite(void);
/* ---- t/unit/test_upstream_tls.c -------------------------------------- */
void	register_upstream_tls_suite(void);
/* ---- t/unit/test_h2_mem.c -------------------------------------------- */
void	register_h2_mem_suite(void);
/* ---- t/unit/test_h2_ids.c -------------------------------------------- */
void	register_h2_ids_suite(void);

#define SUITES_ALL							\
	register_conf_suite,						\
	register_sockaddr_suite,					\
	register_loop_suite,						\
	register_pool_suite,						\
	register_http_parse_suite,					\
	register_dns_suite,						\
	register_socks_parse_suite,					\
	register_modloop_suite,						\
	register_counters_suite,					\
	register_http_head_suite,					\
	register_req_suite,						\
	register_budget_suite,						\
	register_handover_suite,					\
	register_host_suite,						\
	register_lru_suite,						\
	register_hash_suite,						\
	register_http_flow_suite,					\
	register_proxy_header_suite,					\
	register_egress_suite,						\
	register_parent_wire_suite,					\
	register_parent_conf_suite,					\
	register_upstream_tls_suite,					\
	register_h2_mem_suite,						\
	register_h2_ids_suite

#endif
