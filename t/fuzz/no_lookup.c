/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * getaddrinfo for the fuzz targets that link the master's or the whole
 * worker's sources (conf, h2_conn): no name resolves, so no NSS service
 * or DNS query can run from a fuzz input.
 */
#include "config.h"

#include <netdb.h>
#include <stddef.h>

int
getaddrinfo(const char *node, const char *service,
    const struct addrinfo *hints, struct addrinfo **res)
{
	(void)node;
	(void)service;
	(void)hints;
	*res = NULL;
	return EAI_NONAME;
}
