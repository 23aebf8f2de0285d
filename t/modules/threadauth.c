/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * threadauth: a test-only module whose AUTH decision is made on a thread
 * of its own, to prove pt_post, pt_worker_cpuset and module counters.
 *
 *	modules = ( { name = "threadauth";
 *		      allow_prefix = "good";	# users starting so pass
 *		      delay_ms = 3;		# the thread sleeps 0..3 ms
 *		    } );
 *
 * The AUTH hook queues the request (user name, connection) to the
 * module's thread under a mutex and answers AGAIN. The thread decides
 * (allow when the user starts with allow_prefix), sleeps a little, and
 * hands the verdict back with pt_post; the posted callback, on the worker
 * thread, calls pt_conn_resume: CONTINUE, or DENY (the core answers 407).
 *
 * The thread runs on the CPUs the worker had before it pinned itself
 * (pt_worker_cpuset + pthread_attr_setaffinity_np) and is named
 * "pt-threadauth" so a test can find it in /proc.
 *
 * Error log lines (notice):
 *	threadauth: thread cpus=<list> count=<n>	the thread's affinity
 *	threadauth: resume conn=<id> user=<u> verdict=allow|deny  (info)
 *	threadauth: worker=<id> jobs=<n> resumes=<n> doubled=<n>
 *	    max_outstanding=<n>				exit_worker
 * Counters in the master's totals: threadauth_resumes, threadauth_allowed,
 * threadauth_denied.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "portico/module.h"

#define TA_USER_MAX	64

struct ta_conf {
	char		 allow[TA_USER_MAX];
	size_t		 allow_len;
	unsigned	 delay_ms;
	int		 ctr_resumes;
	int		 ctr_allowed;
	int		 ctr_denied;
};

/* One per connection (the core's ctx slot), reused by each request of a
 * keep-alive connection: AUTH cannot run again before it was resumed. */
struct ta_job {
	struct pt_post	 post;		/* thread -> worker */
	struct ta_job	*next;		/* worker -> thread queue */
	struct pt_conn	*conn;
	struct ta_conf	*conf;
	char		 user[TA_USER_MAX];
	unsigned	 seq;
	bool		 allow;
	bool		 pending;	/* worker: AGAIN answered, not resumed */
};

PT_API extern const struct pt_module pt_module_threadauth;

/* Worker state: the queue to the thread (shared under ta_lock), and
 * counts only the worker thread touches. */
static pthread_mutex_t	 ta_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 ta_cond = PTHREAD_COND_INITIALIZER;
static struct ta_job	*ta_head, *ta_tail;
static bool		 ta_stop;
static bool		 ta_running;
static pthread_t	 ta_thread;
static unsigned long	 ta_jobs, ta_resumes, ta_doubled;
static unsigned		 ta_outstanding, ta_max_outstanding;

static const char *const ta_keys[] = {
	"name", "path", "allow_prefix", "delay_ms", NULL
};

static int
ta_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct ta_conf		*tc;
	config_setting_t	*m;
	const char		*s, *name;
	int			 v, i, k;

	for (i = 0; (m = config_setting_get_elem(node, i)) != NULL; i++) {
		if ((name = config_setting_name(m)) == NULL)
			continue;
		for (k = 0; ta_keys[k] != NULL; k++)
			if (strcmp(name, ta_keys[k]) == 0)
				break;
		if (ta_keys[k] == NULL) {
			*errstr = "unknown option";
			return -1;
		}
	}
	if ((tc = calloc(1, sizeof(*tc))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	if (config_setting_lookup_string(node, "allow_prefix", &s) &&
	    strlen(s) < sizeof(tc->allow))
		strcpy(tc->allow, s);
	else
		strcpy(tc->allow, "good");
	tc->allow_len = strlen(tc->allow);
	if (config_setting_lookup_int(node, "delay_ms", &v) && v >= 0 &&
	    v <= 1000)
		tc->delay_ms = (unsigned)v;
	tc->ctr_resumes = pt_counter_register("threadauth_resumes");
	tc->ctr_allowed = pt_counter_register("threadauth_allowed");
	tc->ctr_denied = pt_counter_register("threadauth_denied");
	if (tc->ctr_resumes < 0 || tc->ctr_allowed < 0 ||
	    tc->ctr_denied < 0) {
		free(tc);
		*errstr = "pt_counter_register failed";
		return -1;
	}
	mc->ctx = tc;
	return 0;
}

static void
ta_conf_free(void *ctx)
{
	free(ctx);
}

/* Worker thread: the verdict is back. */
static void
ta_on_decided(void *arg)
{
	struct ta_job	*j = arg;
	struct ta_conf	*tc = j->conf;

	if (!j->pending) {
		ta_doubled++;
		return;
	}
	j->pending = false;
	ta_resumes++;
	ta_outstanding--;
	pt_counter_add(tc->ctr_resumes, 1);
	pt_counter_add(j->allow ? tc->ctr_allowed : tc->ctr_denied, 1);
	pt_log(PT_LOG_INFO, "threadauth: resume conn=%llu user=%s verdict=%s",
	    (unsigned long long)pt_conn_id(j->conn),
	    j->user[0] ? j->user : "-", j->allow ? "allow" : "deny");
	pt_conn_resume(j->conn, j->allow ? PT_VERDICT_CONTINUE :
	    PT_VERDICT_DENY);
}

static void
ta_log_affinity(void)
{
	cpu_set_t	 set;
	char		 list[256];
	size_t		 n = 0;
	int		 c, r;

	if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
		pt_log(PT_LOG_WARNING, "threadauth: pthread_getaffinity_np "
		    "failed");
		return;
	}
	list[0] = '\0';
	for (c = 0; c < CPU_SETSIZE && n < sizeof(list) - 8; c++)
		if (CPU_ISSET(c, &set)) {
			r = snprintf(list + n, sizeof(list) - n, "%s%d",
			    n ? "," : "", c);
			if (r > 0)
				n += (size_t)r;
		}
	pt_log(PT_LOG_NOTICE, "threadauth: thread cpus=%s count=%d", list,
	    CPU_COUNT(&set));
}

static void *
ta_thread_main(void *arg)
{
	struct ta_job	*j;
	struct ta_conf	*tc = arg;
	struct timespec	 ts;

	ta_log_affinity();
	for (;;) {
		pthread_mutex_lock(&ta_lock);
		while (ta_head == NULL && !ta_stop)
			pthread_cond_wait(&ta_cond, &ta_lock);
		if ((j = ta_head) == NULL) {
			pthread_mutex_unlock(&ta_lock);
			break;
		}
		if ((ta_head = j->next) == NULL)
			ta_tail = NULL;
		pthread_mutex_unlock(&ta_lock);

		j->allow = tc->allow_len > 0 &&
		    strncmp(j->user, tc->allow, tc->allow_len) == 0;
		/* Some answers come at once, some later: posts then race
		 * with new AUTH hooks on the worker. */
		if (tc->delay_ms > 0 && j->seq % (tc->delay_ms + 1) != 0) {
			ts.tv_sec = 0;
			ts.tv_nsec = (long)(j->seq % (tc->delay_ms + 1)) *
			    1000000;
			nanosleep(&ts, NULL);
		}
		pt_post(&j->post, ta_on_decided, j);
	}
	return NULL;
}

static int
ta_init_worker(struct pt_worker *w, void *ctx)
{
	pthread_attr_t	 attr;
	cpu_set_t	 set;
	int		 rc;

	(void)w;
	/* Not on the worker's pinned CPU: the CPUs the process had. */
	pt_worker_cpuset(&set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	rc = pthread_create(&ta_thread, &attr, ta_thread_main, ctx);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		pt_log_err(PT_LOG_ERR, rc, "threadauth: pthread_create");
		return -1;
	}
	pthread_setname_np(ta_thread, "pt-threadauth");
	ta_running = true;
	return 0;
}

static void
ta_exit_worker(struct pt_worker *w, void *ctx)
{
	(void)ctx;
	if (ta_running) {
		pthread_mutex_lock(&ta_lock);
		ta_stop = true;
		pthread_cond_signal(&ta_cond);
		pthread_mutex_unlock(&ta_lock);
		pthread_join(ta_thread, NULL);
		ta_running = false;
	}
	pt_log(PT_LOG_NOTICE, "threadauth: worker=%d jobs=%lu resumes=%lu "
	    "doubled=%lu max_outstanding=%u", pt_worker_id(w), ta_jobs,
	    ta_resumes, ta_doubled, ta_max_outstanding);
}

static enum pt_verdict
ta_on_auth(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct ta_job	*j = pt_conn_ctx(conn, &pt_module_threadauth);
	size_t		 n = req->user.len < TA_USER_MAX - 1 ? req->user.len :
			    TA_USER_MAX - 1;

	memcpy(j->user, req->user.ptr != NULL ? req->user.ptr : "", n);
	j->user[n] = '\0';
	j->conn = conn;
	j->conf = modctx;
	j->seq = (unsigned)ta_jobs++;
	j->pending = true;
	j->next = NULL;
	if (++ta_outstanding > ta_max_outstanding)
		ta_max_outstanding = ta_outstanding;
	pthread_mutex_lock(&ta_lock);
	if (ta_tail != NULL)
		ta_tail->next = j;
	else
		ta_head = j;
	ta_tail = j;
	pthread_cond_signal(&ta_cond);
	pthread_mutex_unlock(&ta_lock);
	return PT_VERDICT_AGAIN;
}

static const struct pt_hook ta_hooks[] = {
	{ PT_PHASE_AUTH, 0, ta_on_auth },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_threadauth = {
	PT_MODULE_INIT,
	.name = "threadauth",
	.conf = ta_conf,
	.conf_free = ta_conf_free,
	.init_worker = ta_init_worker,
	.exit_worker = ta_exit_worker,
	.hooks = ta_hooks,
	.conn_ctx_size = sizeof(struct ta_job),
};
