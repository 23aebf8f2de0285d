/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the verification threads' padding (modules/auth/pool.c)
 * with one real thread and no real hashing or clock: the linker's
 * --wrap (modules/auth/cache.am) sends pool.c's calls of hash_verify,
 * hash_burn and pad_now here, where a verification of the costliest
 * entry moves a fake clock 100 ms on, one of the cheap entry 1 ms and
 * a burn 1 ms. Shown: a failure of the cheap entry with no duration
 * known verifies against the costliest too; once one is known it burns
 * until it lasted that long; a success, an unknown user, the costliest
 * entry's own failure and a cancelled login are never padded.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <CUnit/CUnit.h>

#include "modules/auth/hash.h"
#include "modules/auth/pad.h"
#include "modules/auth/pool.h"
#include "modules/auth/userlist.h"
#include "t/unit/check.h"

void	register_auth_pool_suite(void);

bool	 __real_hash_verify(struct hash_scratch *, enum ul_scheme,
	    const char *, const char *, size_t);
bool	 __wrap_hash_verify(struct hash_scratch *, enum ul_scheme,
	    const char *, const char *, size_t);
void	 __real_hash_burn(void);
void	 __wrap_hash_burn(void);
uint64_t __real_pad_now(void);
uint64_t __wrap_pad_now(void);

#define T_MS	1000000u

static const struct ul_entry t_dear = {
	.user = "dear", .ulen = 4, .hash = "dear-hash",
	.scheme = UL_ARGON2ID, .cheaper = false
};
static const struct ul_entry t_cheap = {
	.user = "cheap", .ulen = 5, .hash = "cheap-hash",
	.scheme = UL_ARGON2ID, .cheaper = true
};

/* Set by the test thread while no job runs; the pool's lock and
 * t_lock order them with the thread's reads and writes. */
static bool		 t_fake;	/* else the wraps pass through */
static uint64_t		 t_clock;	/* ns */
static unsigned		 t_burns, t_nverified;
static const char	*t_verified[4];	/* the hashes verified, in order */

static pthread_mutex_t	 t_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 t_cond = PTHREAD_COND_INITIALIZER;
static struct auth_job	*t_posted;

bool
__wrap_hash_verify(struct hash_scratch *hs, enum ul_scheme scheme,
    const char *hash, const char *pass, size_t plen)
{
	if (!t_fake)
		return __real_hash_verify(hs, scheme, hash, pass, plen);
	if (t_nverified < 4)
		t_verified[t_nverified] = hash;
	t_nverified++;
	t_clock += strcmp(hash, t_dear.hash) == 0 ? 100 * T_MS : T_MS;
	return strcmp(pass, "right") == 0;
}

void
__wrap_hash_burn(void)
{
	if (!t_fake) {
		__real_hash_burn();
		return;
	}
	t_burns++;
	t_clock += T_MS;
}

uint64_t
__wrap_pad_now(void)
{
	return t_fake ? t_clock : __real_pad_now();
}

/* The core's side, as the pool uses it. */
void
pt_post(struct pt_post *p, pt_post_fn fn, void *arg)
{
	(void)p;
	(void)fn;
	pthread_mutex_lock(&t_lock);
	t_posted = arg;
	pthread_cond_signal(&t_cond);
	pthread_mutex_unlock(&t_lock);
}

int
pt_worker_cpuset(cpu_set_t *out)
{
	CPU_ZERO(out);
	return 0;
}

void
pt_log_err(int level, int err, const char *fmt, ...)
{
	(void)level;
	(void)err;
	(void)fmt;
}

static void
t_done(void *arg)
{
	(void)arg;
}

/* A login of <e> (<known>: the user's own entry) with <pass>, verified
 * by <p>'s thread (or <cancel>led before it takes it). Its verdict; the
 * hashes verified and burns made are in t_verified and t_burns. */
static bool
t_login(struct auth_pool *p, const struct ul_entry *e, bool known,
    const char *pass, bool cancel)
{
	struct auth_job	*j = pool_job_get(p);
	struct timespec	 until;
	bool		 ok;
	int		 rc = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	j->entry = e;
	j->known = known;
	j->costliest = &t_dear;
	j->plen = strlen(pass);
	memcpy(j->pass, pass, j->plen + 1);
	t_nverified = 0;
	t_burns = 0;
	t_posted = NULL;
	if (cancel)
		pool_cancel(p, j);
	pool_submit(p, j, t_done);
	/* A bound for a broken pool only: nothing here waits on time. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&t_lock);
	while (t_posted == NULL && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&t_cond, &t_lock, &until);
	pthread_mutex_unlock(&t_lock);
	CU_ASSERT_PTR_EQUAL_FATAL(t_posted, j);
	ok = j->ok;
	pool_job_put(p, j);
	return ok;
}

static struct auth_pool *
t_pool(void)
{
	struct auth_pool	*p = NULL;

	t_fake = true;
	t_clock = 1000 * T_MS;
	CU_ASSERT_EQUAL_FATAL(pool_start(&p, 1, 1, false, 0), 0);
	return p;
}

static void
t_pool_stop(struct auth_pool *p)
{
	pool_stop(p);
	t_fake = false;
}

static void
test_auth_pool_cheap_failure_costs_the_costliest(void)
{
	struct auth_pool	*p = t_pool();

	/* No duration known yet: the costliest verification itself. */
	CU_ASSERT(!t_login(p, &t_cheap, true, "wrong", false));
	CU_ASSERT_EQUAL(t_nverified, 2);
	CU_ASSERT_PTR_EQUAL(t_verified[0], t_cheap.hash);
	CU_ASSERT_PTR_EQUAL(t_verified[1], t_dear.hash);
	CU_ASSERT_EQUAL(t_burns, 0);
	/* It lasted 100 ms: now 1 ms of verification and 99 of burning. */
	CU_ASSERT(!t_login(p, &t_cheap, true, "wrong", false));
	CU_ASSERT_EQUAL(t_nverified, 1);
	CU_ASSERT_EQUAL(t_burns, 99);
	t_pool_stop(p);
}

static void
test_auth_pool_others_never_padded(void)
{
	struct auth_pool	*p = t_pool();

	/* An unknown user: the costliest hash, no whatever the password,
	 * and its duration is the one kept. */
	CU_ASSERT(!t_login(p, &t_dear, false, "right", false));
	CU_ASSERT(t_nverified == 1 && t_verified[0] == t_dear.hash);
	CU_ASSERT_EQUAL(t_burns, 0);
	CU_ASSERT(t_login(p, &t_cheap, true, "right", false));
	CU_ASSERT(t_nverified == 1 && t_burns == 0);
	CU_ASSERT(!t_login(p, &t_dear, true, "wrong", false));
	CU_ASSERT(t_nverified == 1 && t_burns == 0);
	CU_ASSERT(!t_login(p, &t_cheap, true, "right", true));
	CU_ASSERT(t_nverified == 0 && t_burns == 0);
	/* The unknown user's 100 ms made the cheap failure's padding. */
	CU_ASSERT(!t_login(p, &t_cheap, true, "wrong", false));
	CU_ASSERT(t_nverified == 1 && t_burns == 99);
	t_pool_stop(p);
}

void
register_auth_pool_suite(void)
{
	CU_pSuite	 s = CU_add_suite("auth_pool", NULL, NULL);

	CU_add_test(s, "cheap failure costs the costliest",
	    test_auth_pool_cheap_failure_costs_the_costliest);
	CU_add_test(s, "others never padded",
	    test_auth_pool_others_never_padded);
}
