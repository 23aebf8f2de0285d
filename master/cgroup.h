/* SPDX-License-Identifier: BSD-2-Clause */
/* The cgroup CPU quota the master runs under (workers = "auto"). */
#ifndef PT_MASTER_CGROUP_H
#define PT_MASTER_CGROUP_H

#include <stdbool.h>

/* ---- master/cgroup.c ------------------------------------------------- */

/*
 * CPUs' worth of the tightest CPU quota (rounded up) on the cgroups that
 * <proc_cgroup> (a /proc/PID/cgroup file) names and their ancestors,
 * under the cgroup file systems mounted in <root> (normally
 * "/sys/fs/cgroup"); 0 when none is set or nothing can be read.
 */
int	 cgroup_cpu_limit(const char *proc_cgroup, const char *root);

#endif
