/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * answer: a test-only module that refuses one phase and says how the
 * refusal is answered (pt_conn_answer, ABI 1.1), so integration tests can
 * check the bytes the core writes for it. It can also make that phase
 * wait (again_ms) and then resume with its verdict, which drives
 * pt_conn_resume(DENY) after an answer, and a wait without a refusal.
 *
 *	modules = ( { name = "answer";
 *		      phase = "ACCESS";		# the phase it acts in (required)
 *		      verdict = "DENY";		# or "ERROR", "CONTINUE"
 *		      again_ms = 0;		# > 0: AGAIN, resume after that
 *		      http_status = 429;	# struct pt_answer, each optional
 *		      retry_after = 30;
 *		      realm = "staff \"only\"";
 *		      socks_reply = 5;
 *		      reason = "over quota";
 *		      record = "/tmp/rec";	# optional: one line per LOG
 *		    } );
 *
 * With no answer field set it does not call pt_conn_answer at all, so
 * the core's defaults show. Lines written to <record>:
 *
 *	LOG conn=<id> proto=<n> status=<n> error=<req->error, spaces as _>
 *	    user=<user> pass=<password>			(one line)
 *
 * Like any module it sees only <portico/module.h>.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "portico/module.h"

#define ANSWER_AGAIN_MAX	86400000

/* Made by conf() in the master; each worker inherits a copy. */
struct answer_conf {
	int			 phase;
	enum pt_verdict		 verdict;
	unsigned		 again_ms;
	bool			 has_answer;
	struct pt_answer	 answer;	/* strings below, owned here */
	char			*realm, *reason, *record;
	int			 fd;		/* worker: <record>, or -1 */
};

/* Per connection, in the core's slot (zeroed at accept). */
struct answer_conn {
	struct pt_timer		 timer;
	struct pt_conn		*conn;
	struct answer_conf	*conf;
};

PT_API extern const struct pt_module pt_module_answer;

static const char *const answer_phases[] = {
	"ACCEPT", "AUTH", "ACCESS", "DIAL", "ESTABLISHED", NULL
};

static const char *const answer_keys[] = {
	"name", "path", "phase", "verdict", "again_ms", "http_status",
	"retry_after", "realm", "socks_reply", "reason", "record", NULL
};

static char	 answer_errbuf[256];

static int
answer_err(const char **errstr, const char *what)
{
	snprintf(answer_errbuf, sizeof(answer_errbuf), "%s", what);
	*errstr = answer_errbuf;
	return -1;
}

/* An optional integer member in [min, max]; 0 when absent. */
static int
answer_int(const config_setting_t *node, const char *name, long long min,
    long long max, long long *out, const char **errstr)
{
	const config_setting_t	*s;

	*out = 0;
	if ((s = config_setting_get_member(node, name)) == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_INT &&
	    config_setting_type(s) != CONFIG_TYPE_INT64) {
		snprintf(answer_errbuf, sizeof(answer_errbuf),
		    "%s: expected an integer", name);
		*errstr = answer_errbuf;
		return -1;
	}
	*out = config_setting_get_int64(s);
	if (*out < min || *out > max) {
		snprintf(answer_errbuf, sizeof(answer_errbuf),
		    "%s: out of range (%lld-%lld)", name, min, max);
		*errstr = answer_errbuf;
		return -1;
	}
	return 0;
}

/* An optional string member, copied; NULL when absent. */
static int
answer_str(const config_setting_t *node, const char *name, char **out,
    const char **errstr)
{
	const config_setting_t	*s;

	*out = NULL;
	if ((s = config_setting_get_member(node, name)) == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		snprintf(answer_errbuf, sizeof(answer_errbuf),
		    "%s: expected a string", name);
		*errstr = answer_errbuf;
		return -1;
	}
	if ((*out = strdup(config_setting_get_string(s))) == NULL)
		return answer_err(errstr, "out of memory");
	return 0;
}

static void
answer_conf_free(void *ctx)
{
	struct answer_conf	*ac = ctx;

	if (ac == NULL)
		return;
	free(ac->realm);
	free(ac->reason);
	free(ac->record);
	free(ac);
}

static int
answer_conf_phase(struct answer_conf *ac, const config_setting_t *node,
    const char **errstr)
{
	const char	*v;
	int		 p;

	if (config_setting_lookup_string(node, "phase", &v) != CONFIG_TRUE)
		return answer_err(errstr, "phase: required, a string");
	for (p = 0; answer_phases[p] != NULL; p++)
		if (strcasecmp(v, answer_phases[p]) == 0)
			break;
	if (answer_phases[p] == NULL)
		return answer_err(errstr, "phase: expected ACCEPT, AUTH, "
		    "ACCESS, DIAL or ESTABLISHED");
	ac->phase = p;
	ac->verdict = PT_VERDICT_DENY;
	if (config_setting_lookup_string(node, "verdict", &v) == CONFIG_TRUE) {
		if (strcasecmp(v, "DENY") == 0)
			ac->verdict = PT_VERDICT_DENY;
		else if (strcasecmp(v, "ERROR") == 0)
			ac->verdict = PT_VERDICT_ERROR;
		else if (strcasecmp(v, "CONTINUE") == 0)
			ac->verdict = PT_VERDICT_CONTINUE;
		else
			return answer_err(errstr, "verdict: expected DENY, "
			    "ERROR or CONTINUE");
	}
	return 0;
}

static int
answer_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct answer_conf	*ac;
	config_setting_t	*m;
	long long		 again, status, retry, socks;
	unsigned		 i, k;

	for (i = 0; (m = config_setting_get_elem(node, i)) != NULL; i++) {
		for (k = 0; answer_keys[k] != NULL; k++)
			if (strcmp(config_setting_name(m), answer_keys[k]) == 0)
				break;
		if (answer_keys[k] == NULL) {
			snprintf(answer_errbuf, sizeof(answer_errbuf),
			    "unknown option \"%s\"", config_setting_name(m));
			*errstr = answer_errbuf;
			return -1;
		}
	}
	if ((ac = calloc(1, sizeof(*ac))) == NULL)
		return answer_err(errstr, "out of memory");
	ac->fd = -1;
	if (answer_conf_phase(ac, node, errstr) < 0 ||
	    answer_int(node, "again_ms", 0, ANSWER_AGAIN_MAX, &again,
	    errstr) < 0 ||
	    answer_int(node, "http_status", 0, 999, &status, errstr) < 0 ||
	    answer_int(node, "retry_after", 0, 86400, &retry, errstr) < 0 ||
	    answer_int(node, "socks_reply", 0, 255, &socks, errstr) < 0 ||
	    answer_str(node, "realm", &ac->realm, errstr) < 0 ||
	    answer_str(node, "reason", &ac->reason, errstr) < 0 ||
	    answer_str(node, "record", &ac->record, errstr) < 0) {
		answer_conf_free(ac);
		return -1;
	}
	ac->again_ms = (unsigned)again;
	ac->answer.http_status = (int)status;
	ac->answer.retry_after = (uint32_t)retry;
	ac->answer.socks_reply = (uint8_t)socks;
	ac->answer.realm = ac->realm;
	ac->answer.reason = ac->reason;
	ac->has_answer = status != 0 || retry != 0 || socks != 0 ||
	    ac->realm != NULL || ac->reason != NULL;
	mc->ctx = ac;
	return 0;
}

static int
answer_init_worker(struct pt_worker *w, void *ctx)
{
	struct answer_conf	*ac = ctx;

	if (ac->record == NULL)
		return 0;
	ac->fd = open(ac->record, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0644);
	if (ac->fd < 0) {
		pt_log_err(PT_LOG_ERR, errno, "answer: open %s", ac->record);
		return -1;
	}
	return 0;
}

static void
answer_exit_worker(struct pt_worker *w, void *ctx)
{
	struct answer_conf	*ac = ctx;

	if (ac->fd >= 0)
		close(ac->fd);
	ac->fd = -1;
}

/* What the phase decides, with the answer set first when it refuses
 * (also before an ERROR, which the core must not shape by it). */
static enum pt_verdict
answer_decide(struct pt_conn *conn, const struct answer_conf *ac)
{
	if (ac->verdict != PT_VERDICT_CONTINUE && ac->has_answer)
		pt_conn_answer(conn, &ac->answer);
	return ac->verdict;
}

static void
answer_on_timer(struct pt_timer *t, void *arg)
{
	struct answer_conn	*cc = arg;

	pt_conn_resume(cc->conn, answer_decide(cc->conn, cc->conf));
}

static enum pt_verdict
answer_run(enum pt_phase phase, struct pt_conn *conn, void *modctx)
{
	struct answer_conf	*ac = modctx;
	struct answer_conn	*cc;

	if ((int)phase != ac->phase)
		return PT_VERDICT_CONTINUE;
	if (ac->again_ms > 0) {
		cc = pt_conn_ctx(conn, &pt_module_answer);
		cc->conn = conn;
		cc->conf = ac;
		pt_timer_start(&cc->timer, ac->again_ms, answer_on_timer, cc);
		return PT_VERDICT_AGAIN;
	}
	return answer_decide(conn, ac);
}

/* "a b" -> "a_b", so a record line splits on spaces. */
static void
answer_word(char *out, size_t cap, const char *s, size_t len)
{
	size_t	 i;

	if (s == NULL || len == 0) {
		snprintf(out, cap, "-");
		return;
	}
	for (i = 0; i < len && i + 1 < cap; i++)
		out[i] = s[i] == ' ' ? '_' : s[i];
	out[i] = '\0';
}

static enum pt_verdict
answer_on_log(struct pt_conn *conn, struct pt_req *req, void *modctx)
{
	struct answer_conf	*ac = modctx;
	char			 line[1024], err[256], user[256], pass[256];
	int			 n;

	if (ac->fd < 0)
		return PT_VERDICT_CONTINUE;
	answer_word(err, sizeof(err), req->error,
	    req->error != NULL ? strlen(req->error) : 0);
	answer_word(user, sizeof(user), req->user.ptr, req->user.len);
	answer_word(pass, sizeof(pass), req->password.ptr, req->password.len);
	n = snprintf(line, sizeof(line), "LOG conn=%llu proto=%d status=%d "
	    "error=%s user=%s pass=%s\n", (unsigned long long)pt_conn_id(conn),
	    (int)req->proto, req->status, err, user, pass);
	if (n > 0 && write(ac->fd, line, (size_t)n) < 0)
		pt_log_err(PT_LOG_WARNING, errno, "answer: write");
	return PT_VERDICT_CONTINUE;
}

#define ANSWER_ENTRY(fn, phase)						\
	static enum pt_verdict						\
	fn(struct pt_conn *conn, struct pt_req *req, void *modctx)	\
	{								\
		return answer_run(phase, conn, modctx);			\
	}

ANSWER_ENTRY(answer_on_accept, PT_PHASE_ACCEPT)
ANSWER_ENTRY(answer_on_auth, PT_PHASE_AUTH)
ANSWER_ENTRY(answer_on_access, PT_PHASE_ACCESS)
ANSWER_ENTRY(answer_on_dial, PT_PHASE_DIAL)
ANSWER_ENTRY(answer_on_established, PT_PHASE_ESTABLISHED)

static const struct pt_hook answer_hooks[] = {
	{ PT_PHASE_ACCEPT, 0, answer_on_accept },
	{ PT_PHASE_AUTH, 0, answer_on_auth },
	{ PT_PHASE_ACCESS, 0, answer_on_access },
	{ PT_PHASE_DIAL, 0, answer_on_dial },
	{ PT_PHASE_ESTABLISHED, 0, answer_on_established },
	{ PT_PHASE_LOG, 0, answer_on_log },
	{ 0, 0, NULL }
};

PT_API const struct pt_module pt_module_answer = {
	PT_MODULE_INIT,
	.name = "answer",
	.conf = answer_conf,
	.conf_free = answer_conf_free,
	.init_worker = answer_init_worker,
	.exit_worker = answer_exit_worker,
	.hooks = answer_hooks,
	.conn_ctx_size = sizeof(struct answer_conn),
};
