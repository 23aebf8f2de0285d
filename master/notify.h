/* SPDX-License-Identifier: BSD-2-Clause */
/* The systemd notification protocol (sd_notify), spoken directly. */
#ifndef PT_MASTER_NOTIFY_H
#define PT_MASTER_NOTIFY_H

#include <stdbool.h>

/* ---- master/notify.c ------------------------------------------------- */

/*
 * Takes NOTIFY_SOCKET out of the environment and keeps it, so that only
 * the master ever notifies: workers and the processes modules start
 * inherit an environment without it. Call once, first thing. Master only.
 */
void		 notify_init(void);
/* The socket systemd named (NULL when not started by it), for the
 * environment of a new binary at an upgrade. */
const char	*notify_socket(void);
/* True when a notification socket is known. */
bool		 notify_enabled(void);
/*
 * Sends one datagram of newline-separated assignments ("READY=1\n
 * STATUS=...") built from <fmt>; nothing when not under systemd. A failure
 * is logged once and never stops the master. Master only.
 */
void		 notify_send(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2)));
/* "MONOTONIC_USEC=<now>", the clock systemd compares reload times with. */
unsigned long long notify_monotonic_usec(void);

#endif
