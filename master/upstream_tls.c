/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Client TLS to an upstream, master side. The core links no TLS library:
 * a module provides it (the tls module, ABI 1.7), and this file only
 * finds that module among the loaded ones and asks it for the state each
 * upstream's sessions share, built before the fork so that workers read
 * no file. The parents' configuration (master/conf_parents.c) calls it;
 * what the worker does with the result is worker/upstream_tls.c's.
 */
#include "config.h"

#include <stddef.h>

#include "master/upstream_tls.h"

/* Whether <m> provides client TLS: all four entries, which only a module
 * built for 1.7 or later can have set (a 1.6 one holds reserved slots
 * there, zeroed, but its word is not taken for it). */
static bool
upstream_tls_provides(const struct pt_module *m)
{
	return m->abi_minor >= 7 && m->upstream_conf != NULL &&
	    m->upstream_conf_free != NULL && m->upstream_new != NULL &&
	    m->upstream_transport != NULL;
}

int
upstream_tls_conf(struct pt_config *conf, const struct pt_upstream_tls *u,
    const struct pt_module **mod_out, void **uctx_out, const char **errstr)
{
	const struct pt_module	*m;
	void			*uctx = NULL;
	int			 i;

	for (i = 0; i < conf->nmodules; i++) {
		if (conf->modules[i].mod == NULL)
			continue;
		m = conf->modules[i].mod->mod;
		if (!upstream_tls_provides(m))
			continue;
		*errstr = NULL;
		if (m->upstream_conf(u, &uctx, errstr) != 0) {
			if (*errstr == NULL)
				*errstr = "TLS settings refused";
			return -1;
		}
		*mod_out = m;
		*uctx_out = uctx;
		return 0;
	}
	*errstr = "protocol \"https\" needs the tls module "
	    "(modules = ( { name = \"tls\"; } ))";
	return -1;
}

void
upstream_tls_conf_free(const struct pt_module *m, void *uctx)
{
	if (m != NULL && uctx != NULL)
		m->upstream_conf_free(uctx);
}
