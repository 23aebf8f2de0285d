/* SPDX-License-Identifier: BSD-2-Clause */
/* Module loader: dlopen, ABI check, and calls into a module's life cycle. */
#ifndef PT_MASTER_MODLOAD_H
#define PT_MASTER_MODLOAD_H

#include <libconfig.h>

#include "portico/module.h"

#define MODLOAD_MAX	32
/* Hooks per phase, all modules together: the size of a worker's hook
 * table (worker/phase.c). conf.c refuses a configuration beyond it, so
 * that no worker has to drop one. */
#define MODLOAD_MAX_HOOKS	64

struct modload {
	char			*name;
	char			*path;
	void			*handle;
	const struct pt_module	*mod;
	int			 index;		/* conn ctx slot */
	int			 master_inited;
};

/* ---- master/modload.c ------------------------------------------------ */

/*
 * Loads module <name> from <path>, or from <dir>/<name>.so when <path> is
 * NULL, once per process life: a later call for the same name returns the
 * same handle (reload re-runs conf(), never dlopen). Returns the loaded
 * module, or NULL with *errstr set (static or thread-local text).
 * Master only.
 */
struct modload	*modload_open(const char *name, const char *path,
		    const char *dir, const char **errstr);
/* Runs the module's conf() on <node>; stores its context in *ctx_out.
 * Returns 0, or -1 with *errstr set. */
int		 modload_conf(struct modload *ml, const char *file,
		    const char *dir, const config_setting_t *node,
		    void **ctx_out, const char **errstr);
void		 modload_conf_free(struct modload *ml, void *ctx);
/*
 * Runs the module's listener_conf() for listener <idx> (<name> for the
 * module's messages) with <node>, the listener's group named after the
 * module, or NULL. Returns 0 (applies; its state in *lctx_out), 1 (does
 * not apply) or -1 with *errstr set. A module without listener_conf
 * applies everywhere (0, NULL state).
 */
int		 modload_listener_conf(struct modload *ml, const char *file,
		    const char *dir, int idx, const char *name,
		    const config_setting_t *node, void *modctx,
		    void **lctx_out, const char **errstr);
void		 modload_listener_conf_free(struct modload *ml, void *lctx);
/* Every module loaded so far, in load order; returns how many. */
int		 modload_all(struct modload ***all_out);
/* dlclose()s every module. Master, at exit only, after every
 * configuration (and so every exit_master) is gone. */
void		 modload_close_all(void);

#endif
