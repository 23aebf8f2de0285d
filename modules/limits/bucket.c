/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Token buckets in one atomic word (see bucket.h for the model). The
 * 128-bit products keep rate * elapsed exact for any rate and span the
 * configuration allows; the results saturate rather than wrap, so a
 * clock that reads before the epoch or a very long idle spell gives a
 * full bucket, never a negative or a huge one.
 */
#include "modules/limits/bucket.h"

#define NS	1000000000ULL

uint64_t
bucket_units(uint64_t now_ns, uint64_t epoch_ns, uint64_t rate)
{
	unsigned __int128	 u;

	if (now_ns <= epoch_ns)
		return 0;
	u = (unsigned __int128)(now_ns - epoch_ns) * rate / NS;
	return u >= LIMITS_UNITS_MAX ? LIMITS_UNITS_MAX : (uint64_t)u;
}

uint64_t
bucket_ns_until(uint64_t now_ns, uint64_t epoch_ns, uint64_t rate,
    uint64_t units)
{
	unsigned __int128	 at;

	if (rate == 0)
		return 0;
	/* The first instant at which floor(elapsed * rate / 1e9) >= units. */
	at = ((unsigned __int128)units * NS + rate - 1) / rate;
	if (at > (unsigned __int128)UINT64_MAX - epoch_ns)
		return UINT64_MAX;
	at += epoch_ns;
	return at > now_ns ? (uint64_t)(at - now_ns) : 0;
}

uint64_t
bucket_level(const _Atomic uint64_t *tat, uint64_t now, uint64_t burst)
{
	uint64_t	 t = atomic_load_explicit(tat, memory_order_relaxed);
	uint64_t	 debt = t > now ? t - now : 0;

	return debt >= burst ? 0 : burst - debt;
}

uint64_t
bucket_take(_Atomic uint64_t *tat, uint64_t now, uint64_t burst,
    uint64_t want, uint64_t min, uint64_t *short_out)
{
	uint64_t	 old, base, avail, got;

	if (min == 0)
		min = 1;
	if (want < min)
		want = min;
	old = atomic_load_explicit(tat, memory_order_relaxed);
	for (;;) {
		/* A bucket idle since before <now> is full: its past is
		 * forgotten, not banked. */
		base = old > now ? old : now;
		avail = base - now >= burst ? 0 : burst - (base - now);
		if (avail < min) {
			if (short_out != 0)
				*short_out = min - avail;
			return 0;
		}
		got = avail < want ? avail : want;
		if (atomic_compare_exchange_weak_explicit(tat, &old,
		    base + got, memory_order_relaxed, memory_order_relaxed))
			return got;
	}
}

uint64_t
bucket_reserve(_Atomic uint64_t *tat, uint64_t now, uint64_t burst,
    uint64_t n)
{
	uint64_t	 old, base;

	old = atomic_load_explicit(tat, memory_order_relaxed);
	do
		base = old > now ? old : now;
	while (!atomic_compare_exchange_weak_explicit(tat, &old, base + n,
	    memory_order_relaxed, memory_order_relaxed));
	/* The bucket held the n tokens once its debt fell to burst - n. */
	return base + n > burst ? base + n - burst : 0;
}

void
bucket_give(_Atomic uint64_t *tat, uint64_t now, uint64_t n)
{
	uint64_t	 old, next;

	old = atomic_load_explicit(tat, memory_order_relaxed);
	do {
		/* Tokens that would land before <now> are a full bucket
		 * already: nothing to give back there. */
		if (old <= now)
			return;
		next = old - now > n ? old - n : now;
	} while (!atomic_compare_exchange_weak_explicit(tat, &old, next,
	    memory_order_relaxed, memory_order_relaxed));
}

uint64_t
bucket_slice(uint64_t rate, uint64_t burst)
{
	uint64_t	 s = rate / 32;

	s = s < 4096 ? 4096 : s > 262144 ? 262144 : s;
	return s > burst ? burst : s;
}
