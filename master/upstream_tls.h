/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Client TLS to an upstream (an https parent), master side: which loaded
 * module provides it, and its per-upstream state (pt_module.upstream_conf).
 */
#ifndef PT_MASTER_UPSTREAM_TLS_H
#define PT_MASTER_UPSTREAM_TLS_H

#include "portico/module.h"
#include "common/conf_types.h"

/* ---- master/upstream_tls.c ------------------------------------------- */

/*
 * Finds the first module of <conf>'s `modules` (configuration order) that
 * provides client TLS (pt_module.upstream_conf, upstream_conf_free,
 * upstream_new and upstream_transport, ABI 1.7 or later) and has it build
 * the state for one upstream described by <u>. Returns 0 with the module
 * in *mod_out and its state in *uctx_out (the worker hands both to
 * upstream_tls_start; release with upstream_tls_conf_free when <conf> is
 * dropped), or -1 with *errstr set, without file and line (the caller
 * adds them, as for any configuration error): the module's own text
 * (valid until the next call), or, when no loaded module provides it,
 * `protocol "https" needs the tls module (modules = ( { name = "tls"; }
 * ))`. Master only, while <conf> loads (its modules' conf() ran).
 */
int	 upstream_tls_conf(struct pt_config *conf,
	    const struct pt_upstream_tls *u, const struct pt_module **mod_out,
	    void **uctx_out, const char **errstr);
/* Releases what upstream_tls_conf made (<uctx> NULL: nothing). Master
 * only; modules stay loaded until exit, so any time before that. */
void	 upstream_tls_conf_free(const struct pt_module *m, void *uctx);

#endif
