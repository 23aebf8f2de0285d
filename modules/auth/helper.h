/* SPDX-License-Identifier: BSD-2-Clause */
/* STUB in branch `auth` only: the real helper.[ch] (Squid basic-auth
 * helpers) come from another helper's branch; the lead replaces this
 * file with theirs at merge. */
#ifndef PT_AUTH_HELPER_H
#define PT_AUTH_HELPER_H

#include <stddef.h>

struct auth_helpers;

struct auth_helpers *auth_helpers_start(const char *command, unsigned children,
		    unsigned timeout_ms);
int		 auth_helpers_verify(struct auth_helpers *h, const char *user,
		    size_t ulen, const char *pass, size_t plen,
		    void (*done)(void *arg, int result), void *arg);
void		 auth_helpers_stop(struct auth_helpers *h);

#endif
