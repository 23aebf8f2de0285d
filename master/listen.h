/* SPDX-License-Identifier: BSD-2-Clause */
/* Listening sockets: one SO_REUSEPORT socket per worker slot per listener. */
#ifndef PT_MASTER_LISTEN_H
#define PT_MASTER_LISTEN_H

#include <stdbool.h>
#include <stdint.h>

struct pt_config;

/*
 * The sockets of one configuration. fds[l * nslots + s] is listener l's
 * socket for worker slot s. Index-stable: slot s is always served by
 * socket s, and its replacement worker inherits the same descriptor,
 * except after a crash loop's back-off vacated it (-1 until
 * listen_slot_bind).
 */
struct listen_set {
	int	 nlisteners;
	int	 nslots;
	int	*fds;
};

/* ---- master/listen.c ------------------------------------------------- */

/*
 * Builds the socket set for <conf>, reusing from <old> (may be NULL, with
 * <oldconf>) every socket whose listener address and slot still exist, so
 * their accept queues survive a reload, and binding the rest. On failure
 * nothing in <old> is touched, every socket bound here is closed, and
 * <err> holds "address: why". Returns 0 or -1. Master only.
 */
int	 listen_open(const struct pt_config *conf, struct listen_set *out,
	    const struct pt_config *oldconf, const struct listen_set *old,
	    char *err, size_t errsz);
/*
 * The listeners (bit l for listener l of <old>, l < 64) whose socket for
 * <slot> <cur> took over: a draining worker of that slot leaves their
 * queues to the new generation. Master only.
 */
uint64_t listen_kept_mask(const struct listen_set *old,
	    const struct listen_set *cur, int slot);
/* Closes the sockets of <old> that <cur> did not take over. */
void	 listen_close_unused(struct listen_set *old,
	    const struct listen_set *cur);
/*
 * A crash loop's back-off: closes <slot>'s sockets (fds -1) so that new
 * connections go to the live slots, only where net.ipv4.tcp_migrate_req
 * is 1 or conf->tcp_migrate_req may set it (the queued ones move too).
 * Returns whether it did. Master only.
 */
bool	 listen_slot_vacate(const struct pt_config *conf,
	    struct listen_set *ls, int slot);
/* Whether <slot> has a vacated socket. */
bool	 listen_slot_vacant(const struct listen_set *ls, int slot);
/* Binds fresh sockets where <slot>'s were vacated. 0, or -1 with <err>
 * ("address: why"; the sockets bound so far are kept). Master only. */
int	 listen_slot_bind(const struct pt_config *conf,
	    struct listen_set *ls, int slot, char *err, size_t errsz);
/* Closes every socket of <ls> and frees it. */
void	 listen_close(struct listen_set *ls);
/*
 * At a reload from <old_nslots> slots to conf->workers: when slots are
 * removed and net.ipv4.tcp_migrate_req is 0, sets it to 1 if
 * conf->tcp_migrate_req allows and the write succeeds (a notice), or
 * warns. Does nothing when no slot is removed. Never fails. Master only.
 */
void	 listen_migrate(const struct pt_config *conf, int old_nslots);
/*
 * Binary upgrade, new side: takes the sockets a previous binary handed
 * over in <spec> ("fd:address:slot;..."), keeping each descriptor that is
 * a listening TCP socket (marked close-on-exec), warning about the rest.
 * listen_open then adopts, for each listener address and slot, a matching
 * socket instead of binding one. Returns how many were kept, or -ENOMEM.
 */
int	 listen_inherit(const char *spec);
/* Closes the inherited sockets nothing adopted (a notice each) and forgets
 * the rest. Returns how many were adopted. */
int	 listen_inherit_done(void);
/*
 * Binary upgrade, old side: "fd:address:slot;..." naming every socket of
 * <ls> (malloc'd, the caller frees), or NULL when out of memory.
 */
char	*listen_fmt_handover(const struct pt_config *conf,
	    const struct listen_set *ls);
/* Clears close-on-exec on every socket of <ls>: in the child about to exec
 * the new binary, only. */
void	 listen_set_inheritable(const struct listen_set *ls);

#endif
