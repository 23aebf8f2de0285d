/* SPDX-License-Identifier: BSD-2-Clause */
/* A worker process: post-fork set-up, the loop, and stopping. */
#ifndef PT_WORKER_WORKER_H
#define PT_WORKER_WORKER_H

#include <stdnoreturn.h>

struct dns_conf;
struct pt_config;

/* ---- worker/worker.c ------------------------------------------------- */

/*
 * Runs worker <slot> in a freshly forked child: closes the other slots'
 * sockets, drops privileges, pins the CPU, initialises modules, then loops
 * until told to stop. <fds>[listener * nslots + slot] are the master's
 * listening sockets. Once it watches them it writes its pid to <ready_fd>
 * (-1: nobody asks) and closes it. Never returns.
 */
noreturn void	worker_main(const struct pt_config *conf, int slot, int nslots,
		    const int *fds, int ready_fd);
/* The resolver settings of <conf>, as dns_init takes them (also the
 * h2_conn fuzz target's, which sets a worker up in-process). */
void		worker_dns_conf(const struct pt_config *conf,
		    struct dns_conf *dns);

#endif
