/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * helper: external authenticators that speak Squid's basic-auth helper
 * protocol, run as child processes of a worker and watched on its loop.
 * Worker thread only. See helper.c for the protocol and the failure rules,
 * OPTIONS-helper.md for the operator's options.
 */
#ifndef AUTH_HELPER_H
#define AUTH_HELPER_H

#include <stdbool.h>
#include <stddef.h>

/* Bounds of the fixed tables made by auth_helpers_start(). */
#define AUTH_HELPER_CHILDREN_MAX	64
#define AUTH_HELPER_CONCURRENCY_MAX	256
/* A request line longer than this (escaped, with the channel ID) is
 * refused with -EINVAL; Squid's own limit is 8 KiB. */
#define AUTH_HELPER_LINE_MAX		4096

/* What a helper answered, for a request's done(). */
#define AUTH_HELPER_OK		1
#define AUTH_HELPER_ERR		0
/* Negative results: -EPIPE (the helper died), -ETIMEDOUT (it did not
 * answer in time; it is killed), -EIO (it answered BH), -EPROTO (it
 * answered something else), -ECANCELED (auth_helpers_stop()). */

typedef void (*auth_helper_done_fn)(void *arg, int result);

struct auth_helpers;

/* ---- helper.c -------------------------------------------------------- */

/*
 * Starts <children> processes of <command> (split on blanks into the
 * program and its arguments, no shell, as Squid runs `auth_param basic
 * program`), each with its stdin and stdout on pipes to this worker and
 * its stderr the worker's. <concurrency> 0 speaks the plain protocol (one
 * request at a time per process, `user password` / `OK`), N > 0 the
 * channel-ID form with up to N requests in flight per process (`ID user
 * password` / `ID OK`). A request not answered within <timeout_ms> fails
 * and its process is killed and started again. A process that cannot be
 * started is retried with back-off, so the worker still starts. NULL with
 * errno (EINVAL: bad arguments or an empty command, ENOMEM).
 */
struct auth_helpers	*auth_helpers_start(const char *command,
			    unsigned children, unsigned concurrency,
			    unsigned timeout_ms);
/*
 * Sends <user> and <pass> (URL-escaped as Squid does) to the least busy
 * running process; done(arg, result) runs later from the loop, exactly
 * once unless cancelled: AUTH_HELPER_OK, AUTH_HELPER_ERR or a negative
 * errno (above). Never calls done() before it returns. Returns 0 when
 * queued; -EAGAIN when every running process's slots (or write buffer)
 * are full: the caller answers overload; -ENOTCONN when no process is
 * running (all dead and waiting for their restart): the caller fails the
 * login; -EINVAL when the user is empty or either holds a NUL, CR or LF,
 * or the line would exceed AUTH_HELPER_LINE_MAX.
 */
int	 auth_helpers_verify(struct auth_helpers *h, const char *user,
	    size_t ulen, const char *pass, size_t plen,
	    auth_helper_done_fn done, void *arg);
/* Every request made with <arg> will not call its done(); the helper's
 * answer, when it comes, is read and dropped. */
void	 auth_helpers_cancel(struct auth_helpers *h, void *arg);
/* Closes the pipes, sends SIGTERM to every process and reaps them
 * (SIGKILL after a short grace), frees <h>. Requests in flight get
 * done(arg, -ECANCELED). From exit_worker. NULL is a no-op. */
void	 auth_helpers_stop(struct auth_helpers *h);
/* Processes running now, for logs and tests. */
unsigned auth_helpers_running(const struct auth_helpers *h);

/* ---- helper.c, pure (unit-tested) ----------------------------------- */

/* Squid's rfc1738_escape(): %XX (upper-case hex) for space, %, the RFC
 * 1738 unsafe characters <>"#{}|\^~[]`' , controls and bytes >= 0x80.
 * Returns the length written (no NUL added), or -1 when <cap> is short. */
long	 auth_helper_escape(char *dst, size_t cap, const char *src,
	    size_t len);
/*
 * Parses one reply line (without its newline; a trailing CR is ignored).
 * <with_id>: the line starts with a channel ID, stored in *id. *result is
 * AUTH_HELPER_OK, AUTH_HELPER_ERR, or -EIO for BH. Returns 0, or -EPROTO
 * when the line is not a reply (no or bad ID, unknown result word).
 */
int	 auth_helper_reply_parse(const char *line, size_t len, bool with_id,
	    unsigned *id, int *result);

#endif
