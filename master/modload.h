/* SPDX-License-Identifier: BSD-2-Clause */
/* Module loader: dlopen and ABI check (the life cycle: common/modlife.c). */
#ifndef PT_MASTER_MODLOAD_H
#define PT_MASTER_MODLOAD_H

#include <libconfig.h>

#include "portico/module.h"
#include "common/conf_types.h"

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
/* Every module loaded so far, in load order; returns how many. */
int		 modload_all(struct modload ***all_out);
/* dlclose()s every module. Master, at exit only, after every
 * configuration (and so every exit_master) is gone. */
void		 modload_close_all(void);

#endif
