/* SPDX-License-Identifier: BSD-2-Clause */
/* The configuration: libconfig file -> one validated struct pt_config. */
#ifndef PT_MASTER_CONF_H
#define PT_MASTER_CONF_H

#include "common/conf_types.h"

#define CONF_ERRSZ		1024

/* ---- master/conf.c --------------------------------------------------- */

/*
 * Reads and validates <file>. Returns a new configuration owned by the
 * caller (free with conf_free), or NULL with "FILE:LINE: what" in <err>.
 * Loads the configured modules and runs their conf() hooks. Master only:
 * may block (file reads, getpwnam, name resolution of forwarding targets).
 */
struct pt_config	*conf_load(const char *file, char err[CONF_ERRSZ]);
/* ---- master/conf_ints.c ---- */
/* -1 with "FILE:LINE: ..." in <err> when <file> or one it @includes
 * (relative to <include_dir>, or NULL) has an integer without an L
 * suffix that a 32-bit libconfig integer cannot hold; 0 otherwise. */
int			 conf_check_ints(const char *file,
			    const char *include_dir, char *err, size_t errsz);
/* Frees <conf> (NULL is fine); its modules get exit_master, when
 * init_master ran, and conf_free (common/modlife.c). */
void			 conf_free(struct pt_config *conf);
/* CPUs usable by this process: sched_getaffinity() limited by the cgroup
 * quota. Fills <cpus_out> (at most <max>) and returns how many. */
int			 conf_usable_cpus(int *cpus_out, int max);

#endif
