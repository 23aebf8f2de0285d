/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One token bucket as one 64-bit word, shared by every worker and updated
 * with compare-and-swap: the generic cell rate algorithm. Time is counted
 * in tokens: "now" is floor((t - epoch) * rate / 1e9), the tokens the rate
 * has earned since the class's epoch, computed from the absolute clock
 * every time, so no rounding accumulates. The word holds the theoretical
 * arrival time (TAT): the token-time up to which tokens are spent. A
 * bucket holds burst - (TAT - now) tokens when TAT > now, else burst (a
 * zero word is a full bucket). Over any span from a full bucket, what
 * can be taken is exactly burst + floor(rate * span).
 *
 * Pure arithmetic on the caller's word: no allocation, no clock (the
 * caller passes the time), any process or thread.
 */
#ifndef PT_LIMITS_BUCKET_H
#define PT_LIMITS_BUCKET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Rates and bursts above this are refused by the configuration: the
 * token clock of a class then stays below 2^62 for more than 2^26 s
 * (two years) after its epoch. */
#define LIMITS_RATE_MAX		((uint64_t)1 << 36)
/* The token clock saturates here instead of wrapping. */
#define LIMITS_UNITS_MAX	((uint64_t)1 << 62)

/* Tokens <rate> per second earned from <epoch_ns> to <now_ns>; 0 when the
 * clock reads before the epoch, LIMITS_UNITS_MAX at most. */
uint64_t	 bucket_units(uint64_t now_ns, uint64_t epoch_ns, uint64_t rate);
/* Nanoseconds from <now_ns> until the token clock reaches <units>
 * (0 when it has already). */
uint64_t	 bucket_ns_until(uint64_t now_ns, uint64_t epoch_ns,
		    uint64_t rate, uint64_t units);
/* Tokens the bucket holds at token-time <now>. */
uint64_t	 bucket_level(const _Atomic uint64_t *tat, uint64_t now,
		    uint64_t burst);
/*
 * Takes up to <want> tokens, and only if at least <min> (1 <= min <=
 * want) are there: returns what was taken (0 when fewer than <min>; then
 * *short_out, if not NULL, says how many more tokens are needed for
 * <min>). Lock-free: retries its compare-and-swap when another taker got
 * in first.
 */
uint64_t	 bucket_take(_Atomic uint64_t *tat, uint64_t now,
		    uint64_t burst, uint64_t want, uint64_t min,
		    uint64_t *short_out);
/*
 * Reserves <n> tokens (n <= burst) whether or not the bucket holds them:
 * the tokens are owed from the moment the bucket would have held them,
 * which it returns as a token-time (at or before <now>: at once). Takers
 * that reserve one after another are served in that order, each when
 * the rate has earned its share: first come, first served, with nothing
 * polled and nothing lost. Lock-free like bucket_take.
 */
uint64_t	 bucket_reserve(_Atomic uint64_t *tat, uint64_t now,
		    uint64_t burst, uint64_t n);
/* The bytes a connection reads per grant under a bandwidth bucket of
 * <rate> and <burst>: a 32nd of the rate, 4 KiB to 256 KiB, at most the
 * burst. */
uint64_t	 bucket_slice(uint64_t rate, uint64_t burst);
/* Gives back <n> tokens taken and not used (never above a full bucket). */
void		 bucket_give(_Atomic uint64_t *tat, uint64_t now, uint64_t n);

#endif /* PT_LIMITS_BUCKET_H */
