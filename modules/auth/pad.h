/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Padding of failed logins, one record per worker: how long the
 * verifications of the userlist's costliest entry last lately, so that
 * a failed verification of a cheaper entry can be made to last as long
 * (an unknown user is verified against the costliest: without the
 * padding a quick 407 would say the user exists). Pure bookkeeping of
 * durations; pool.c measures, burns and locks.
 */
#ifndef PT_AUTH_PAD_H
#define PT_AUTH_PAD_H

#include <stdint.h>

/* Durations kept; paddings last each in turn. */
#define PAD_SAMPLES	8
/* Paddings at most from one set of durations: the next verifies against
 * the costliest entry itself, a fresh duration, so a set measured under
 * another load does not stand for ever when no unknown user comes. */
#define PAD_REFRESH	16

struct auth_pad {
	uint64_t	 ns[PAD_SAMPLES];	/* ring, newest at next - 1 */
	unsigned	 n;			/* 0..PAD_SAMPLES */
	unsigned	 next;
	unsigned	 pick;			/* the last one taken */
	unsigned	 since;			/* paddings since a sample */
};

/* ---- pad.c ------------------------------------------------------------ */
/* A verification of the costliest entry (or one like it) took <ns>. */
void		 pad_sample(struct auth_pad *p, uint64_t ns);
/* A failed verification of a cheaper entry is over: how long it must
 * last in all, in ns from its start (the next duration kept, in turn);
 * or 0 when those are none or too old: verify against the costliest
 * entry instead (which costs at least as much) and pad_sample its
 * duration. */
uint64_t	 pad_target(struct auth_pad *p);
/* CLOCK_MONOTONIC in ns, the clock of both. */
uint64_t	 pad_now(void);

#endif /* PT_AUTH_PAD_H */
