/* SPDX-License-Identifier: BSD-2-Clause */
/* STUB in branch `auth` only (starts nothing, every call an error):
 * replaced at merge by the Squid helper backend from branch authhelper,
 * whose helper.h (as are cache.h and throttle.h from authcache) is
 * already here verbatim. */
#include "modules/auth/helper.h"

#include <errno.h>
#include <stddef.h>

struct auth_helpers *
auth_helpers_start(const char *command, unsigned children,
    unsigned concurrency, unsigned timeout_ms)
{
	(void)command; (void)children; (void)concurrency; (void)timeout_ms;
	errno = ENOSYS;
	return NULL;
}

int
auth_helpers_verify(struct auth_helpers *h, const char *user, size_t ulen,
    const char *pass, size_t plen, auth_helper_done_fn done, void *arg)
{
	(void)h; (void)user; (void)ulen; (void)pass; (void)plen; (void)done;
	(void)arg;
	return -ENOSYS;
}

void
auth_helpers_cancel(struct auth_helpers *h, void *arg)
{
	(void)h; (void)arg;
}

void
auth_helpers_stop(struct auth_helpers *h)
{
	(void)h;
}
