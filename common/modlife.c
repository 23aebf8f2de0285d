/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The module life cycle. A configuration's modules go through conf() as
 * it loads, init_master once the master adopts it, init_worker and
 * exit_worker in each worker forked with it, on_drain in a worker that
 * stops accepting, reopen on SIGUSR1 in every process, and exit_master
 * then conf_free when the master drops it. Each of those calls is made
 * here and nowhere else, so the order a module can rely on (written in
 * include/portico/module.h) is written once. What is not here: loading
 * and checking the shared object (master/modload.c) and running hooks on
 * connections (worker/phase.c).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/modlife.h"
#include "common/log.h"
#include "portico/module.h"

static char	 modlife_errbuf[512];

int
modlife_conf(struct conf_module *cm, const struct pt_config *conf,
    const config_setting_t *node, const char **errstr,
    const config_setting_t **where)
{
	const struct pt_module	*m = cm->mod->mod;
	struct pt_modconf	 mc;
	config_setting_t	*e;
	unsigned		 i;

	cm->ctx = NULL;
	*where = node;
	if (m->conf == NULL) {
		/* A module without settings still must not let a typo in
		 * its block pass unnoticed. */
		for (i = 0; (e = config_setting_get_elem(node, i)) != NULL;
		    i++) {
			if (strcmp(config_setting_name(e), "name") != 0 &&
			    strcmp(config_setting_name(e), "path") != 0) {
				snprintf(modlife_errbuf, sizeof(modlife_errbuf),
				    "unknown option \"%s\" (this module "
				    "takes none)", config_setting_name(e));
				*errstr = modlife_errbuf;
				return -1;
			}
		}
		return 0;
	}
	memset(&mc, 0, sizeof(mc));
	mc.file = conf->file;
	mc.module_dir = conf->module_dir;
	mc.listener_idx = -1;		/* for listener_conf() only */
	*errstr = "rejected its configuration";
	if (m->conf(&mc, node, errstr) != 0) {
		if (mc.where != NULL)
			*where = mc.where;
		return -1;
	}
	cm->ctx = mc.ctx;
	return 0;
}

int
modlife_listener_conf(struct conf_module *cm, const struct pt_config *conf,
    int idx, const config_setting_t *node, void **lctx_out,
    const char **errstr, const config_setting_t **where)
{
	const struct pt_module	*m = cm->mod->mod;
	struct pt_modconf	 mc;
	int			 rc;

	*lctx_out = NULL;
	if (m->listener_conf == NULL)
		return 0;
	memset(&mc, 0, sizeof(mc));
	mc.file = conf->file;
	mc.module_dir = conf->module_dir;
	mc.ctx = cm->ctx;
	mc.listener_idx = idx;
	mc.listener = conf->listeners[idx].name;
	*errstr = "rejected the listener's options";
	rc = m->listener_conf(&mc, node, cm->ctx, lctx_out, errstr);
	if (rc < 0 || rc > 1) {
		*lctx_out = NULL;
		*where = mc.where != NULL ? mc.where : node;
		return -1;
	}
	/* A module that does not apply keeps no state there. */
	if (rc == 1) {
		modlife_listener_conf_free(cm, *lctx_out);
		*lctx_out = NULL;
	}
	return rc;
}

void
modlife_listener_conf_free(struct conf_module *cm, void *lctx)
{
	if (lctx != NULL && cm->mod->mod->listener_conf_free != NULL)
		cm->mod->mod->listener_conf_free(lctx);
}

int
modlife_init_master(struct pt_config *conf, char *err, size_t errsz)
{
	struct conf_module	*cm;
	int			 i;

	for (i = 0; i < conf->nmodules; i++) {
		cm = &conf->modules[i];
		if (cm->mod->mod->init_master != NULL &&
		    cm->mod->mod->init_master(cm->ctx) != 0) {
			snprintf(err, errsz, "%s:%d: module \"%s\": "
			    "initialisation failed", conf->file, cm->line,
			    cm->name);
			return -1;
		}
		cm->inited = true;
	}
	return 0;
}

void
modlife_drop(struct pt_config *conf)
{
	struct conf_module	*cm;
	struct conf_listener	*l;
	int			 i, j;

	for (i = 0; i < conf->nmodules; i++) {
		cm = &conf->modules[i];
		/* A module that failed to load has no code to call. */
		if (cm->mod == NULL)
			continue;
		if (cm->inited && cm->mod->mod->exit_master != NULL)
			cm->mod->mod->exit_master(cm->ctx);
		cm->inited = false;
		/* Made after conf(), released before conf_free: a
		 * listener's state may point into the module's. */
		for (j = 0; j < conf->nlisteners; j++) {
			l = &conf->listeners[j];
			if (l->mod_lctx == NULL)
				continue;
			modlife_listener_conf_free(cm, l->mod_lctx[i]);
			l->mod_lctx[i] = NULL;
		}
		if (cm->ctx != NULL && cm->mod->mod->conf_free != NULL)
			cm->mod->mod->conf_free(cm->ctx);
		cm->ctx = NULL;
	}
}

int
modlife_init_worker(const struct pt_config *conf, struct pt_worker *w)
{
	const struct pt_module	*m;
	int			 i;

	for (i = 0; i < conf->nmodules; i++) {
		m = conf->modules[i].mod->mod;
		if (m->init_worker != NULL &&
		    m->init_worker(w, conf->modules[i].ctx) != 0) {
			pt_log(PT_LOG_ERR, "module \"%s\": init_worker failed",
			    m->name);
			return -1;
		}
	}
	return 0;
}

void
modlife_exit_worker(const struct pt_config *conf, struct pt_worker *w)
{
	const struct pt_module	*m;
	int			 i;

	for (i = conf->nmodules - 1; i >= 0; i--) {
		m = conf->modules[i].mod->mod;
		if (m->exit_worker != NULL)
			m->exit_worker(w, conf->modules[i].ctx);
	}
}

void
modlife_drain(const struct pt_config *conf, struct pt_worker *w)
{
	const struct pt_module	*m;
	int			 i;

	for (i = 0; i < conf->nmodules; i++) {
		m = conf->modules[i].mod->mod;
		if (m->on_drain != NULL)
			m->on_drain(w, conf->modules[i].ctx);
	}
}

void
modlife_reopen(const struct pt_config *conf)
{
	const struct pt_module	*m;
	int			 i;

	for (i = 0; i < conf->nmodules; i++) {
		m = conf->modules[i].mod->mod;
		if (m->reopen != NULL)
			m->reopen(conf->modules[i].ctx);
	}
}
