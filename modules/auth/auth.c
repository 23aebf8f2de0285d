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
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "modules/auth/cache.h"
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
};

/* The worker's own state: one worker process, one thread runs these. */
static struct auth_pool		*auth_pool;
static struct auth_cache	*auth_cache;
static struct auth_throttle	*auth_throttle;
static struct auth_helpers	*auth_helpers;

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

/* Worker: a verification ended (thread post or helper answer). Returns
 * the verdict; the caller resumes or returns it. */
static enum pt_verdict
auth_finish(struct auth_job *j, const struct auth_conf *ac)
{
	struct auth_connctx	*cc = pt_conn_ctx(j->conn, &pt_module_auth);
	const char		*reason;
	uint64_t		 now = pt_now_ms();

	pt_counter_add(ac->ctr_verifications, 1);
	if (j->ok) {
		cc->verified = true;
		memcpy(cc->mac, j->mac, sizeof(cc->mac));
		if (auth_cache != NULL)
			auth_cache_put(auth_cache, j->user, j->ulen, j->pass,
			    j->plen, now);
		pt_log(PT_LOG_DEBUG, "auth: verified user=\"%.*s\" conn=%llu",
		    (int)(j->ulen < 64 ? j->ulen : 64), j->user,
		    (unsigned long long)pt_conn_id(j->conn));
		return PT_VERDICT_CONTINUE;
	}
	if (j->via_helper)
		reason = j->result < 0 ? "helper-error" : "bad-password";
	else
		reason = j->known ? "bad-password" : "unknown-user";
	if (auth_throttle != NULL && j->result >= 0)
		auth_throttle_fail(auth_throttle,
		    (const struct sockaddr *)&j->peer, now);
	pt_counter_add(ac->ctr_failures, 1);
	auth_log_failure(&j->peer, j->user, j->ulen, j->proto, j->listener,
	    reason);
	auth_answer_407(j->conn, ac, "auth: bad credentials");
	return PT_VERDICT_DENY;
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
	if (j->cancelled) {
		/* The client left before a thread took it: nothing was
		 * verified, and the core only waits for the resume to
		 * release the connection. */
		pool_job_put(auth_pool, j);
		pt_conn_resume(conn, PT_VERDICT_DENY);
		return;
	}
	v = auth_finish(j, auth_worker_conf);
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
		pool_job_put(auth_pool, j);
		return;
	}
	j->result = result;
	j->ok = result == AUTH_HELPER_OK;
	v = auth_finish(j, auth_worker_conf);
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
	if (auth_helpers != NULL) {
		j->via_helper = true;
		j->known = true;
		rc = auth_helpers_verify(auth_helpers, j->user, j->ulen,
		    j->pass, j->plen, auth_helper_done, j);
		if (rc == 0)
			return PT_VERDICT_AGAIN;
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
	if (j->entry == NULL)
		j->entry = ac->dummy;
	((struct auth_connctx *)pt_conn_ctx(conn, &pt_module_auth))->job = j;
	pool_submit(auth_pool, j, auth_done);
	return PT_VERDICT_AGAIN;
}

/* The connection is gone (CLOSE runs at once, even while its login
 * waits on a thread): a login no thread has taken yet is not verified. */
static enum pt_verdict
auth_on_close(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct auth_connctx	*cc = pt_conn_ctx(conn, &pt_module_auth);

	if (cc->job != NULL)
		pool_cancel(auth_pool, cc->job);
	return PT_VERDICT_CONTINUE;
}

static enum pt_verdict
auth_on_auth(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct auth_conf	*ac = modctx;
	struct auth_connctx	*cc = pt_conn_ctx(conn, &pt_module_auth);
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
	/* A keep-alive request with what this connection already proved. */
	if (cc->verified && CRYPTO_memcmp(mac, cc->mac, sizeof(mac)) == 0)
		return PT_VERDICT_CONTINUE;
	cc->verified = false;
	if (auth_throttle != NULL && auth_throttle_blocked(auth_throttle,
	    (const struct sockaddr *)&req->peer, pt_now_ms()))
		return auth_fail_now(conn, req, ac, "throttled");
	if (auth_cache != NULL && auth_cache_hit(auth_cache, req->user.ptr,
	    req->user.len, req->password.ptr, req->password.len,
	    pt_now_ms())) {
		pt_counter_add(ac->ctr_cache_hits, 1);
		cc->verified = true;
		memcpy(cc->mac, mac, sizeof(mac));
		return PT_VERDICT_CONTINUE;
	}
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
