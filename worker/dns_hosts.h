/* SPDX-License-Identifier: BSD-2-Clause */
/* The hosts file (/etc/hosts), read once when a worker starts. */
#ifndef PT_WORKER_DNS_HOSTS_H
#define PT_WORKER_DNS_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/dns_result.h"

#define DNS_HOSTS_PATH	"/etc/hosts"

/* ---- worker/dns_hosts.c ---------------------------------------------- */

/* Reads <path> into the table, replacing what was there. A missing or
 * unreadable file is an empty table. 0, or -ENOMEM. */
int	 dns_hosts_load(const char *path);
void	 dns_hosts_free(void);
/* The addresses of <key> (lower case, no trailing dot), as dns_result
 * orders them, or false when the file does not name it. */
bool	 dns_hosts_find(const char *key, size_t len,
	    struct dns_result *res);
/* FNV-1a of a normalised name: the hash of the hosts table and of the
 * resolver's cache. */
uint32_t dns_name_hash(const char *s, size_t len);
/* Names in the table; for tests. */
unsigned dns_hosts_count(void);

#endif
