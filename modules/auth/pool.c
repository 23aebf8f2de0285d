/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Verification threads. A worker has one thread and Argon2id costs tens
 * of milliseconds of CPU, so hashes are checked here: the worker queues a
 * job under a mutex and answers AGAIN, a thread verifies and posts the
 * job back with pt_post, and the worker resumes the connection.
 *
 * A failed login lasts what a verification of the userlist's costliest
 * hash lasts, whoever the user is (pool_pad, pad.c): otherwise a wrong
 * password for a user with cheap costs answers sooner than an unknown
 * name, which is verified against the costliest, and the user shows.
 *
 * Bounded on purpose: the pool has threads + queue job slots made at
 * start, so memory is fixed (threads x the largest Argon2id m= of the
 * userlist, plus ~33 KiB of crypt scratch per thread, 64 KiB while it
 * pads) and a burst of logins beyond the slots is refused at once (503)
 * instead of queueing without end. Slots are taken and returned on the
 * worker thread only; the mutex guards the queue to the threads, the
 * stop flag and the padding's durations.
 *
 * It deliberately knows nothing of HTTP, SOCKS or the userlist's file:
 * auth.c decides what to verify and what the answer means.
 */
#define _GNU_SOURCE
#include "modules/auth/pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "modules/auth/hash.h"
#include "modules/auth/pad.h"

struct auth_pool {
	pthread_mutex_t		 lock;
	pthread_cond_t		 cond;
	struct auth_job		*head, *tail;	/* to the threads (lock) */
	bool			 stop;		/* lock */
	struct auth_job		*free;		/* worker thread only */
	pt_post_fn		 done;
	int			 nice;
	unsigned		 nthreads;
	unsigned		 started;
	pthread_t		*th;
	struct auth_job		*jobs;
	unsigned		 njobs;
	struct auth_pad		 pad;		/* lock */
};

static void
pool_sample(struct auth_pool *p, uint64_t ns)
{
	pthread_mutex_lock(&p->lock);
	pad_sample(&p->pad, ns);
	pthread_mutex_unlock(&p->lock);
}

/* After <j>'s verification, begun at <t0>: measured if its entry is
 * like the costliest, padded if it is cheaper and failed. The padding
 * burns CPU rather than sleeps, so the load a failed login makes does
 * not tell the user either. */
static void
pool_pad(struct auth_pool *p, struct hash_scratch *hs,
    const struct auth_job *j, bool verified, uint64_t t0)
{
	const struct ul_entry	*c = j->costliest;
	uint64_t		 now = pad_now(), target;

	if (!j->entry->cheaper) {
		pool_sample(p, now - t0);
		return;
	}
	if (verified || c == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	target = pad_target(&p->pad);
	pthread_mutex_unlock(&p->lock);
	if (target == 0) {
		/* No recent duration: the costliest verification itself,
		 * which lasts as long (and a bit more), measured. */
		(void)hash_verify(hs, c->scheme, c->hash, j->pass, j->plen);
		pool_sample(p, pad_now() - now);
		return;
	}
	while (pad_now() - t0 < target)
		hash_burn();
}

static void *
pool_main(void *arg)
{
	struct auth_pool	*p = arg;
	struct hash_scratch	*hs = hash_scratch_new();
	struct auth_job		*j;
	pt_post_fn		 done;
	uint64_t		 t0;
	bool			 ok, cancelled;

	/* Linux nice values are per thread: a lower priority than the
	 * worker's loop keeps verified clients' latency while logins burn
	 * CPU beside them (portico-auth(8), thread_nice). */
	if (p->nice > 0 && setpriority(PRIO_PROCESS, (id_t)gettid(),
	    p->nice) < 0)
		pt_log_err(PT_LOG_WARNING, errno, "auth: setpriority %d",
		    p->nice);
	/* Named only now: a thread that shows as pt-auth (ps, /proc) has
	 * its priority, so nothing that looks at it sees the nice value of
	 * the thread that made it. */
	pthread_setname_np(pthread_self(), "pt-auth");
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (p->head == NULL && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if ((j = p->head) == NULL) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		if ((p->head = j->next) == NULL)
			p->tail = NULL;
		done = p->done;
		cancelled = j->cancelled;
		pthread_mutex_unlock(&p->lock);

		/* An unknown user is checked against the costliest hash
		 * (auth.c picks it), the answer no whatever the password,
		 * and a failure of a cheaper one is padded to cost as much:
		 * a failed login costs the same whoever the user is. */
		if (cancelled || hs == NULL || j->entry == NULL)
			ok = false;
		else {
			t0 = pad_now();
			ok = hash_verify(hs, j->entry->scheme, j->entry->hash,
			    j->pass, j->plen);
			pool_pad(p, hs, j, ok && j->known, t0);
		}
		j->ok = ok && j->known;
		pt_post(&j->post, done, j);
	}
	hash_scratch_free(hs);
	return NULL;
}

int
pool_start(struct auth_pool **out, unsigned threads, unsigned queue,
    bool other_cpus, int nice)
{
	struct auth_pool	*p;
	pthread_attr_t		 attr;
	cpu_set_t		 set;
	unsigned		 i;
	int			 rc = 0;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	p->njobs = threads + queue;
	p->jobs = calloc(p->njobs, sizeof(*p->jobs));
	p->th = calloc(threads ? threads : 1, sizeof(*p->th));
	if (p->jobs == NULL || p->th == NULL) {
		free(p->jobs);
		free(p->th);
		free(p);
		return -ENOMEM;
	}
	for (i = p->njobs; i-- > 0;) {
		p->jobs[i].next = p->free;
		p->free = &p->jobs[i];
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->nthreads = threads;
	p->nice = nice;
	pthread_attr_init(&attr);
	if (other_cpus) {
		pt_worker_cpuset(&set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	for (i = 0; i < threads; i++) {
		if ((rc = pthread_create(&p->th[i], &attr, pool_main, p)) != 0)
			break;
		p->started++;
	}
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		pool_stop(p);
		return -rc;
	}
	*out = p;
	return 0;
}

struct auth_job *
pool_job_get(struct auth_pool *p)
{
	struct auth_job	*j = p->free;

	if (j != NULL) {
		p->free = j->next;
		j->next = NULL;
		/* Free slots are the worker's alone: no lock needed. */
		j->cancelled = false;
	}
	return j;
}

void
pool_submit(struct auth_pool *p, struct auth_job *j, pt_post_fn done)
{
	j->next = NULL;
	pthread_mutex_lock(&p->lock);
	p->done = done;
	if (p->tail != NULL)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void
pool_cancel(struct auth_pool *p, struct auth_job *j)
{
	pthread_mutex_lock(&p->lock);
	j->cancelled = true;
	pthread_mutex_unlock(&p->lock);
}

void
pool_job_put(struct auth_pool *p, struct auth_job *j)
{
	OPENSSL_cleanse(j->pass, sizeof(j->pass));
	j->conn = NULL;
	j->req = NULL;
	j->entry = NULL;
	j->next = p->free;
	p->free = j;
}

void
pool_stop(struct auth_pool *p)
{
	unsigned	 i;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->started; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	OPENSSL_cleanse(p->jobs, p->njobs * sizeof(*p->jobs));
	free(p->jobs);
	free(p->th);
	free(p);
}
