/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every call into a module's life cycle (struct pt_module: conf,
 * listener_conf, init_master, init_worker, exit_worker, on_drain, reopen,
 * exit_master, listener_conf_free, conf_free),
 * in one place, in the order a configuration lives through them. Loading
 * (dlopen, ABI check) is master/modload.c; hooks are worker/phase.c.
 */
#ifndef PT_COMMON_MODLIFE_H
#define PT_COMMON_MODLIFE_H

#include <stddef.h>

#include <libconfig.h>

#include "common/conf_types.h"

struct pt_worker;

/* ---- common/modlife.c ------------------------------------------------ */

/*
 * Master, while loading <conf>: runs module <cm>'s conf() on its
 * configuration group <node> and keeps the result in cm->ctx. A module
 * without conf() takes no option but "name" and "path". Returns 0, or -1
 * with *errstr set (static text; the caller adds file and line: those of
 * *where, the setting the module named, or of <node> when it named none).
 */
int	 modlife_conf(struct conf_module *cm, const struct pt_config *conf,
	    const config_setting_t *node, const char **errstr,
	    const config_setting_t **where);
/*
 * Master, while loading <conf>, after every module's conf(): module
 * <cm>'s listener_conf() for listener <idx> (conf->listeners[idx], whose
 * address names it to the module), with <node>, the listener's group
 * named after the module, or NULL. Returns 0 (the module applies; its
 * state, or NULL, in *lctx_out), 1 (it does not apply) or -1 with
 * *errstr set and *where as for modlife_conf. A module without
 * listener_conf applies everywhere. The states stored in
 * conf_listener.mod_lctx are released by modlife_drop.
 */
int	 modlife_listener_conf(struct conf_module *cm,
	    const struct pt_config *conf, int idx,
	    const config_setting_t *node, void **lctx_out,
	    const char **errstr, const config_setting_t **where);
/* Releases one state listener_conf() made (NULL is fine). */
void	 modlife_listener_conf_free(struct conf_module *cm, void *lctx);
/*
 * Master, once per configuration it adopts (start-up, each good reload),
 * before forking: every module's init_master, in configuration order.
 * 0, or -1 with "FILE:LINE: module ...: initialisation failed" in <err>;
 * the modules initialised before the failing one get exit_master from
 * modlife_drop like the others.
 */
int	 modlife_init_master(struct pt_config *conf, char *err, size_t errsz);
/*
 * Master, when it drops <conf> (replaced by a reload, at exit, or a
 * configuration that failed to load): exit_master where init_master ran,
 * then listener_conf_free for each listener's state, then conf_free,
 * module by module.
 */
void	 modlife_drop(struct pt_config *conf);
/* Worker, after privileges are dropped and before the loop: every
 * module's init_worker. 0, or -1 (logged) when one failed. */
int	 modlife_init_worker(const struct pt_config *conf,
	    struct pt_worker *w);
/* Worker, after its loop ended: exit_worker in reverse order. */
void	 modlife_exit_worker(const struct pt_config *conf,
	    struct pt_worker *w);
/* Worker, once, when it stops accepting (drain or fast stop): every
 * module's on_drain, in configuration order. */
void	 modlife_drain(const struct pt_config *conf, struct pt_worker *w);
/* Master and worker, on SIGUSR1: every module's reopen. */
void	 modlife_reopen(const struct pt_config *conf);

#endif
