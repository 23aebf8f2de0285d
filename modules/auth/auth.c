/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * auth.so: credentials on every HTTP request and SOCKS5 session of the
 * listeners it applies to.
 *
 *	modules = ( { name = "auth"; userlist = "/etc/portico/users";
 *		      realm = "portico"; cache_ttl = 300; threads = 2;
 *		      queue = 64; } );
 *	listeners = ( { ...; auth = { required = false; }; },
 *		      { ...; auth = { no_auth_from = [ "10.0.0.0/8" ]; }; } );
 *
 * The AUTH hook takes the credentials the core decoded (Basic, RFC 1929)
 * and answers at once when it can: an exempt peer (no_auth_from), the
 * credentials this connection already proved (a keep-alive request), a
 * throttled source, a cache hit. Otherwise it takes one of the worker's
 * fixed verification slots (pool.c) and answers AGAIN; a thread checks
 * the hash and posts the job back, and auth_done() resumes the
 * connection. No slot free: 503 with Retry-After (SOCKS: RFC 1929
 * failure) at once. A client gone meanwhile changes nothing here: the
 * core keeps the connection's memory until the resume, which is always
 * made.
 *
 * Single-flight: a login whose credentials (same HMAC of user NUL
 * password, same user length) are being verified in this worker already
 * does not start another verification; it waits for that one (AGAIN, no
 * slot taken, counted as auth_coalesced) and gets the same verdict: a
 * browser's six connections, or fifty clients of one account after a
 * reload, cost one Argon2id run instead of N, and the last no longer
 * waits N times as long. A success marks each waiter as the first and
 * fills the cache once; a failure is each waiter's own (407 or RFC 1929
 * failure, failure line, counter, and a throttle failure for its own
 * source). A waiter whose client leaves is taken off at once and resumed
 * from a post (so never twice, nor after its release). A starter
 * whose client leaves keeps its job running while someone waits on it;
 * it is cancelled once nobody does.
 *
 * Each failure writes one error-log line (the format is a contract with
 * fail2ban filters; README and portico.conf(5) document it):
 *	auth: failure client=ADDR user="USER" proto=PROTO listener=NAME
 *	    reason=REASON
 * A request without credentials is answered 407 without such a line: it
 * is how every browser starts.
 */
#include "modules/auth/auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "modules/auth/cache.h"
#include "modules/auth/flight.h"
#include "modules/auth/helper.h"
#include "modules/auth/mac.h"
#include "modules/auth/pool.h"
#include "modules/auth/throttle.h"

/* Per connection (zeroed at accept): what it proved, for keep-alive. */
struct auth_connctx {
	bool		 exempt;	/* no_auth_from matched at ACCEPT */
	bool		 verified;
	uint8_t		 mac[32];	/* HMAC(key, user NUL password) */
	struct auth_job	*job;		/* on the threads, or NULL */
	/* Waiting on another connection's verification (single-flight):
	 * the node in its job's flight, this connection and its request
	 * (for the verdict), and the post that resumes it if it leaves. */
	struct auth_waiter wait;
	struct pt_conn	*conn;
	struct pt_req	*req;
	struct pt_post	 post;
};

/* The worker's own state: one worker process, one thread runs these. */
static struct auth_pool		*auth_pool;
static struct auth_cache	*auth_cache;
static struct auth_throttle	*auth_throttle;
static struct auth_helpers	*auth_helpers;
static struct auth_flights	 auth_flights;	/* joinable verifications */

static const char *
auth_proto_name(enum pt_proto p)
{
	switch (p) {
	case PT_PROTO_HTTP:		return "http";
	case PT_PROTO_CONNECT:		return "connect";
	case PT_PROTO_WEBSOCKET:	return "websocket";
	case PT_PROTO_SOCKS5:		return "socks5";
	case PT_PROTO_SOCKS4:		return "socks4";
	case PT_PROTO_UDP:		return "udp";
	case PT_PROTO_TCP:		return "tcp";
	case PT_PROTO_STATUS:		return "status";
	}
	return "other";
}

static void
auth_addr(const struct sockaddr_storage *ss, char *out, size_t len)
{
	const struct sockaddr_in6	*s6 = (const void *)ss;
	const struct sockaddr_in	*s4 = (const void *)ss;

	if (ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], out,
		    (socklen_t)len);
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &s6->sin6_addr, out, (socklen_t)len);
	else if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &s4->sin_addr, out, (socklen_t)len);
	else
		snprintf(out, len, "-");
}

/* The user as a log field: printable ASCII but quote and backslash as
 * is, the rest as \xHH, so one line stays one parseable line. */
static void
auth_quote(const char *s, size_t n, char *out, size_t cap)
{
	static const char	 hex[] = "0123456789abcdef";
	size_t			 o = 0, i;
	unsigned char		 c;

	for (i = 0; i < n && o + 5 < cap; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			out[o++] = (char)c;
		else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

static void
auth_log_failure(const struct sockaddr_storage *peer, const char *user,
    size_t ulen, enum pt_proto proto, const char *listener,
    const char *reason)
{
	char	 addr[INET6_ADDRSTRLEN], u[4 * 64 + 8];

	auth_addr(peer, addr, sizeof(addr));
	auth_quote(user, ulen < 64 ? ulen : 64, u, sizeof(u));
	pt_log(PT_LOG_WARNING, "auth: failure client=%s user=\"%s\" proto=%s "
	    "listener=%s reason=%s", addr, u, auth_proto_name(proto),
	    listener != NULL ? listener : "-", reason);
}

/* DENY's answer at AUTH: 407 with the realm (SOCKS: RFC 1929 status 1). */
static void
auth_answer_407(struct pt_conn *conn, const struct auth_conf *ac,
    const char *reason)
{
	struct pt_answer	 a = { .http_status = 407, .realm = ac->realm,
				       .reason = reason };

	pt_conn_answer(conn, &a);
}

static enum pt_verdict
auth_fail_now(struct pt_conn *conn, struct pt_req *req,
    const struct auth_conf *ac, const char *reason)
{
	pt_counter_add(ac->ctr_failures, 1);
	auth_log_failure(&req->peer, req->user.ptr, req->user.len, req->proto,
	    req->listener, reason);
	auth_answer_407(conn, ac, "auth: bad credentials");
	return PT_VERDICT_DENY;
}

/* Worker: <conn> proved the credentials whose HMAC is <mac>: its next
 * requests with them are not verified again, nor, for an HTTP/2 stream,
 * its HTTP/2 connection's next streams (the owner's state, which
 * pt_conn_owner gives while that connection lives). */
static void
auth_proved(struct pt_conn *conn, struct auth_connctx *cc, const uint8_t *mac)
{
	struct auth_connctx	*oc;

	cc->verified = true;
	memcpy(cc->mac, mac, sizeof(cc->mac));
	if (pt_conn_owner(conn) != conn) {
		oc = pt_conn_ctx(pt_conn_owner(conn), &pt_module_auth);
		oc->verified = true;
		memcpy(oc->mac, mac, sizeof(oc->mac));
	}
}

/* Whether <conn> (or the HTTP/2 connection it is a stream of) proved the
 * credentials whose HMAC is <mac>. */
static bool
auth_already(struct pt_conn *conn, const struct auth_connctx *cc,
    const uint8_t *mac)
{
	const struct auth_connctx *oc;

	if (cc->verified && CRYPTO_memcmp(mac, cc->mac, sizeof(cc->mac)) == 0)
		return true;
	if (pt_conn_owner(conn) == conn)
		return false;
	oc = pt_conn_ctx(pt_conn_owner(conn), &pt_module_auth);
	return oc->verified &&
	    CRYPTO_memcmp(mac, oc->mac, sizeof(oc->mac)) == 0;
}

/* Worker: a verification ended (thread post or helper answer), once per
 * job whoever waits for it: counted, and a success cached. */
static void
auth_settle(struct auth_job *j, const struct auth_conf *ac)
{
	pt_counter_add(ac->ctr_verifications, 1);
	if (j->ok && auth_cache != NULL)
		auth_cache_put(auth_cache, j->user, j->ulen, j->pass, j->plen,
		    pt_now_ms());
}

/* Worker: what <j>'s verdict means for one of the logins that waited
 * for it (the one that started it or another with the same credentials)
 * on <conn> from <peer>. Returns the verdict; the caller resumes. */
static enum pt_verdict
auth_apply(struct auth_job *j, struct pt_conn *conn,
    const struct sockaddr_storage *peer, enum pt_proto proto,
    const char *listener, const struct auth_conf *ac)
{
	struct auth_connctx	*cc = pt_conn_ctx(conn, &pt_module_auth);
	const char		*reason;

	if (j->ok) {
		auth_proved(conn, cc, j->mac);
		pt_log(PT_LOG_DEBUG, "auth: verified user=\"%.*s\" conn=%llu",
		    (int)(j->ulen < 64 ? j->ulen : 64), j->user,
		    (unsigned long long)pt_conn_id(conn));
		return PT_VERDICT_CONTINUE;
	}
	if (j->via_helper)
		reason = j->result < 0 ? "helper-error" : "bad-password";
	else
		reason = j->known ? "bad-password" : "unknown-user";
	/* Each login is an attempt from its own source. */
	if (auth_throttle != NULL && j->result >= 0)
		auth_throttle_fail(auth_throttle,
		    (const struct sockaddr *)peer, pt_now_ms());
	pt_counter_add(ac->ctr_failures, 1);
	auth_log_failure(peer, j->user, j->ulen, proto, listener, reason);
	auth_answer_407(conn, ac, "auth: bad credentials");
	return PT_VERDICT_DENY;
}

/* Worker: the verdict for the login that started <j>. */
static enum pt_verdict
auth_finish(struct auth_job *j, const struct auth_conf *ac)
{
	auth_settle(j, ac);
	return auth_apply(j, j->conn, &j->peer, j->proto, j->listener, ac);
}

/* Worker: <j> ended; each login still waiting for it gets its verdict,
 * oldest first. One at a time off the list: a resume runs the rest of a
 * connection's phases, and another waiter that leaves meanwhile still
 * finds itself on it (its CLOSE takes it off). <j>'s slot is still held,
 * and it is no longer joinable. */
static void
auth_wake(struct auth_job *j, const struct auth_conf *ac)
{
	struct auth_waiter	*w;
	struct auth_connctx	*wc;
	struct pt_conn		*conn;
	struct pt_req		*req;

	while ((w = flight_pop(&j->flight)) != NULL) {
		wc = (struct auth_connctx *)(void *)((char *)w -
		    offsetof(struct auth_connctx, wait));
		conn = wc->conn;
		req = wc->req;
		wc->conn = NULL;
		wc->req = NULL;
		pt_conn_resume(conn, auth_apply(j, conn, &req->peer,
		    req->proto, req->listener, ac));
	}
}

static struct auth_conf	*auth_worker_conf;

/* Worker, posted by a verification thread. */
static void
auth_done(void *arg)
{
	struct auth_job		*j = arg;
	struct pt_conn		*conn = j->conn;
	struct auth_connctx	*cc = pt_conn_ctx(conn, &pt_module_auth);
	enum pt_verdict		 v;

	cc->job = NULL;
	flights_remove(&j->flight);
	if (j->cancelled) {
		/* The client left and nobody waits on its login (cancelled
		 * only then, and no longer joinable since): whatever a
		 * thread found is for no one, and the core only waits for
		 * the resume to release the connection. */
		pool_job_put(auth_pool, j);
		pt_conn_resume(conn, PT_VERDICT_DENY);
		return;
	}
	auth_settle(j, auth_worker_conf);
	/* A starter that left while others waited: the job ran for them;
	 * its own connection is closed, nothing to answer there. */
	v = j->leader_gone ? PT_VERDICT_DENY : auth_apply(j, conn, &j->peer,
	    j->proto, j->listener, auth_worker_conf);
	auth_wake(j, auth_worker_conf);
	pool_job_put(auth_pool, j);
	pt_conn_resume(conn, v);
}

static bool	 auth_stopping;

/* Worker: the helper backend answered (never from inside
 * auth_helpers_verify). At exit_worker, auth_helpers_stop() fails what
 * is still in flight with -ECANCELED: by then the core has resumed every
 * connection (none can be waiting), so only the slot goes back. */
static void
auth_helper_done(void *arg, int result)
{
	struct auth_job		*j = arg;
	struct pt_conn		*conn = j->conn;
	enum pt_verdict		 v;

	if (auth_stopping) {
		/* No waiter either: each was resumed before, like conn. */
		pool_job_put(auth_pool, j);
		return;
	}
	flights_remove(&j->flight);
	j->result = result;
	j->ok = result == AUTH_HELPER_OK;
	/* A helper's request cannot be taken back, so a starter that left
	 * gets its verdict as before (on a closed connection: a failure
	 * line and nothing on the wire), and its waiters theirs. */
	v = auth_finish(j, auth_worker_conf);
	auth_wake(j, auth_worker_conf);
	pool_job_put(auth_pool, j);
	pt_conn_resume(conn, v);
}

static enum pt_verdict
auth_start(struct pt_conn *conn, struct pt_req *req, struct auth_conf *ac,
    const uint8_t mac[32])
{
	struct auth_job	*j;
	struct pt_answer a = { .http_status = 503, .retry_after = 1,
			       .socks_reply = 1, .reason = "auth: overloaded" };
	enum pt_verdict	 v;
	int		 rc;

	if ((j = pool_job_get(auth_pool)) == NULL) {
		pt_counter_add(ac->ctr_overload, 1);
		auth_log_failure(&req->peer, req->user.ptr, req->user.len,
		    req->proto, req->listener, "overload");
		pt_conn_answer(conn, &a);
		return PT_VERDICT_DENY;
	}
	j->conn = conn;
	j->req = req;
	j->proto = req->proto;
	j->listener = req->listener;
	j->peer = req->peer;
	j->ulen = req->user.len;
	j->plen = req->password.len;
	memcpy(j->user, req->user.ptr, j->ulen);
	j->user[j->ulen] = '\0';
	memcpy(j->pass, req->password.ptr, j->plen);
	j->pass[j->plen] = '\0';
	memcpy(j->mac, mac, sizeof(j->mac));
	j->ok = false;
	j->result = 0;
	j->leader_gone = false;
	flight_init(&j->flight, mac, j->ulen);
	if (auth_helpers != NULL) {
		j->via_helper = true;
		j->known = true;
		rc = auth_helpers_verify(auth_helpers, j->user, j->ulen,
		    j->pass, j->plen, auth_helper_done, j);
		if (rc == 0) {
			flights_add(&auth_flights, &j->flight);
			return PT_VERDICT_AGAIN;
		}
		/* The answers below are made here and now, before anyone
		 * could join: nothing to share. */
		if (rc == -EAGAIN) {
			pool_job_put(auth_pool, j);
			pt_counter_add(ac->ctr_overload, 1);
			auth_log_failure(&req->peer, req->user.ptr,
			    req->user.len, req->proto, req->listener,
			    "overload");
			pt_conn_answer(conn, &a);
			return PT_VERDICT_DENY;
		}
		/* -ENOTCONN (no helper running), -EINVAL (a NUL, CR or LF
		 * the protocol cannot carry): a failed login. */
		j->result = rc;
		v = auth_finish(j, ac);
		pool_job_put(auth_pool, j);
		return v;
	}
	j->via_helper = false;
	j->entry = ul_find(&ac->ul, j->user, j->ulen);
	j->known = j->entry != NULL;
	j->costliest = ac->ul.costliest;
	if (j->entry == NULL)
		j->entry = j->costliest;
	((struct auth_connctx *)pt_conn_ctx(conn, &pt_module_auth))->job = j;
	pool_submit(auth_pool, j, auth_done);
	flights_add(&auth_flights, &j->flight);
	return PT_VERDICT_AGAIN;
}

/* Worker: a login with the credentials of <f>'s verification waits for
 * it (AGAIN); auth_wake resumes it. */
static enum pt_verdict
auth_join(struct pt_conn *conn, struct pt_req *req, struct auth_conf *ac,
    struct auth_flight *f)
{
	struct auth_connctx	*cc = pt_conn_ctx(conn, &pt_module_auth);

	pt_counter_add(ac->ctr_coalesced, 1);
	cc->conn = conn;
	cc->req = req;
	flight_wait(f, &cc->wait);
	return PT_VERDICT_AGAIN;
}

static struct auth_job *
auth_flight_job(struct auth_flight *f)
{
	return (struct auth_job *)(void *)((char *)f -
	    offsetof(struct auth_job, flight));
}

/* Worker, posted by auth_on_close: a waiter whose client left, resumed
 * from the loop once the core is done closing it (pt_conn_resume is
 * made for loop callbacks; the core keeps the memory until then). */
static void
auth_left(void *arg)
{
	struct auth_connctx	*cc = arg;
	struct pt_conn		*conn = cc->conn;

	cc->conn = NULL;
	cc->req = NULL;
	pt_conn_resume(conn, PT_VERDICT_DENY);
}

/* The connection is gone (CLOSE runs at once, even while its login
 * waits on a thread): a login no thread has taken yet is not verified. */
static enum pt_verdict
auth_on_close(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct auth_connctx	*cc = pt_conn_ctx(conn, &pt_module_auth);
	struct auth_flight	*f;
	struct auth_job		*j;

	if ((j = cc->job) != NULL) {
		/* Others wait on it: it runs for them (a thread may have it
		 * already; if not, it is verified all the same). */
		if (j->flight.nwaiters > 0)
			j->leader_gone = true;
		else {
			flights_remove(&j->flight);
			pool_cancel(auth_pool, j);
		}
	}
	if ((f = flight_unwait(&cc->wait)) != NULL) {
		/* Off the list now, so the verdict never reaches it. */
		pt_post(&cc->post, auth_left, cc);
		j = auth_flight_job(f);
		/* The last one waiting on a job whose starter left: nobody
		 * wants it any more (once it ended, it is not joinable and
		 * auth_wake owns it). */
		if (j->leader_gone && f->nwaiters == 0 &&
		    flight_is_joinable(f)) {
			flights_remove(f);
			pool_cancel(auth_pool, j);
		}
	}
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
auth_on_auth(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct auth_conf	*ac = modctx;
	struct auth_connctx	*cc = pt_conn_ctx(conn, &pt_module_auth);
	struct auth_flight	*f;
	uint8_t			 mac[32];

	if (cc->exempt)
		return PT_VERDICT_ALLOW;
	if (req->proto == PT_PROTO_SOCKS4)
		return auth_fail_now(conn, req, ac, "socks4");
	if (req->user.len == 0 && req->password.len == 0) {
		auth_answer_407(conn, ac, "auth: credentials required");
		return PT_VERDICT_DENY;
	}
	if (req->user.len == 0 || req->user.len > UL_USER_MAX ||
	    req->password.len > UL_PASS_MAX)
		return auth_fail_now(conn, req, ac, "bad-password");
	auth_mac(&ac->mac_key, req->user.ptr, req->user.len,
	    req->password.ptr, req->password.len, mac);
	/* A keep-alive request (or a later HTTP/2 stream) with what this
	 * connection already proved. */
	if (auth_already(conn, cc, mac))
		return PT_VERDICT_CONTINUE;
	cc->verified = false;
	if (auth_throttle != NULL && auth_throttle_blocked(auth_throttle,
	    (const struct sockaddr *)&req->peer, pt_now_ms()))
		return auth_fail_now(conn, req, ac, "throttled");
	if (auth_cache != NULL && auth_cache_hit(auth_cache, req->user.ptr,
	    req->user.len, req->password.ptr, req->password.len,
	    pt_now_ms())) {
		pt_counter_add(ac->ctr_cache_hits, 1);
		auth_proved(conn, cc, mac);
		return PT_VERDICT_CONTINUE;
	}
	if ((f = flights_find(&auth_flights, mac, req->user.len)) != NULL)
		return auth_join(conn, req, ac, f);
	return auth_start(conn, req, ac, mac);
}

/* SOCKS4 has no password; the core refuses it where credentials are
 * needed, and this says so again at ACCESS should AUTH not have run. */
static enum pt_verdict
auth_on_access(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct auth_connctx	*cc = pt_conn_ctx(conn, &pt_module_auth);

	if (req->proto != PT_PROTO_SOCKS4 || cc->exempt)
		return PT_VERDICT_CONTINUE;
	pt_counter_add(((struct auth_conf *)modctx)->ctr_failures, 1);
	auth_log_failure(&req->peer, req->user.ptr, req->user.len, req->proto,
	    req->listener, "socks4");
	return PT_VERDICT_DENY;
}

static enum pt_verdict
auth_on_accept(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	const struct auth_listener	*l;
	struct auth_connctx		*cc;

	(void)modctx;
	l = pt_conn_listener_ctx(conn, &pt_module_auth);
	if (l == NULL || l->nnets == 0 ||
	    !auth_net_match(l, (const struct sockaddr *)&req->peer))
		return PT_VERDICT_CONTINUE;
	cc = pt_conn_ctx(conn, &pt_module_auth);
	cc->exempt = true;
	pt_conn_need_credentials(conn, false);
	return PT_VERDICT_CONTINUE;
}

static int
auth_init_worker(struct pt_worker *w, void *ctx)
{
	struct auth_conf	*ac = ctx;
	int			 rc;

	auth_worker_conf = ac;
	rc = pool_start(&auth_pool, ac->threads, ac->queue,
	    ac->thread_any_cpu, (int)ac->thread_nice);
	if (rc < 0) {
		pt_log_err(PT_LOG_ERR, -rc, "auth: verification threads");
		return -1;
	}
	if (ac->cache_ttl > 0 && ac->cache_size > 0 &&
	    (auth_cache = auth_cache_new(ac->cache_size,
	    ac->cache_ttl, ac->key)) == NULL) {
		pt_log(PT_LOG_ERR, "auth: no memory for the cache");
		return -1;
	}
	if (ac->fail_threshold > 0 && (auth_throttle = auth_throttle_new(
	    ac->fail_threshold, ac->fail_window, ac->fail_penalty,
	    ac->fail_sources)) == NULL) {
		pt_log(PT_LOG_ERR, "auth: no memory for the throttle");
		return -1;
	}
	if (ac->helper_command != NULL && (auth_helpers = auth_helpers_start(
	    ac->helper_command, ac->helper_children, ac->helper_concurrency,
	    ac->helper_timeout * 1000)) == NULL) {
		pt_log_err(PT_LOG_ERR, errno, "auth: helper \"%s\"",
		    ac->helper_command);
		return -1;
	}
	pt_log(PT_LOG_DEBUG, "auth: worker %d: %u threads, %u slots",
	    pt_worker_id(w), ac->threads, ac->threads + ac->queue);
	return 0;
}

static void
auth_exit_worker(struct pt_worker *w, void *ctx)
{
	(void)w;
	(void)ctx;
	auth_stopping = true;
	auth_helpers_stop(auth_helpers);
	auth_helpers = NULL;
	pool_stop(auth_pool);
	auth_pool = NULL;
	if (auth_cache != NULL)
		auth_cache_free(auth_cache);
	auth_cache = NULL;
	if (auth_throttle != NULL)
		auth_throttle_free(auth_throttle);
	auth_throttle = NULL;
	auth_flights.head = NULL;
}

static const struct pt_hook auth_hooks[] = {
	{ PT_PHASE_ACCEPT, 0, auth_on_accept },
	{ PT_PHASE_AUTH, 0, auth_on_auth },
	{ PT_PHASE_ACCESS, 0, auth_on_access },
	{ PT_PHASE_CLOSE, 0, auth_on_close },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_auth = {
	PT_MODULE_INIT,
	.name = "auth",
	.flags = PT_MODF_CREDENTIALS,
	.conf = auth_conf,
	.conf_free = auth_conf_free,
	.init_worker = auth_init_worker,
	.exit_worker = auth_exit_worker,
	.hooks = auth_hooks,
	.conn_ctx_size = sizeof(struct auth_connctx),
	.listener_conf = auth_listener_conf,
	.listener_conf_free = auth_listener_conf_free,
};
