/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hookrec: a test-only module that records every call the core makes into
 * it, one line per call, so integration tests can check which phases ran,
 * in which order, with which request fields. It can also make a phase
 * asynchronous (again_ms) or refuse it (deny_phase), to drive the core's
 * AGAIN and DENY paths without a real policy module.
 *
 *	modules = ( { name = "hookrec";
 *		      record = "/tmp/rec";	# required
 *		      again_ms = 50;		# ACCEPT answers AGAIN, resumes
 *		      again_phase = "ESTABLISHED"; # that one waits instead
 *		      deny_phase = "ACCESS";	# that phase answers DENY
 *		    } );
 *
 * Lines written to <record>, each with one write() on an O_APPEND
 * descriptor so lines from several workers never interleave:
 *
 *	INIT worker=<id>			init_worker
 *	EXIT worker=<id>			exit_worker
 *	REOPEN worker=<id> | REOPEN master	reopen (the file is reopened)
 *	<PHASE> conn=<id> proto=<n> host=<host> port=<port> target=<addr:port>
 *	    status=<n> in=<bytes_in> out=<bytes_out> stream=<HTTP/2 stream,
 *	    or 0> owner=<id of pt_conn_owner()> user=<u> pass=<p>
 *	    (one line) every hook
 *	ACCEPT-RESUMED conn=<id>		the again_ms timer fired
 *	    (<again_phase>-RESUMED)
 *
 * An empty host and an unset target are written "-". When the phase is
 * both delayed and denied, the hook answers AGAIN and the timer resumes
 * with DENY, which exercises pt_conn_resume() with a verdict.
 *
 * Built twice from this file: with -DHOOKREC_BAD_ABI it exports
 * pt_module_badabi, named "badabi", with an ABI major number no portico
 * has, to prove the loader refuses it. Like any module it sees only
 * <portico/module.h>; it is not meant to be fast or installed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "portico/module.h"

#ifdef HOOKREC_BAD_ABI
#define HOOKREC_MODULE		pt_module_badabi
#define HOOKREC_NAME		"badabi"
#define HOOKREC_ABI_MAJOR	(PT_ABI_MAJOR + 98)
#else
#define HOOKREC_MODULE		pt_module_hookrec
#define HOOKREC_NAME		"hookrec"
#define HOOKREC_ABI_MAJOR	PT_ABI_MAJOR
#endif

/* A day: long enough for any test, short enough to catch a typo. */
#define HOOKREC_AGAIN_MAX	86400000
#define HOOKREC_LINE_MAX	1024

/* Made by conf() in the master; each worker inherits a copy. */
struct hookrec_conf {
	char		*record;
	unsigned	 again_ms;	/* 0: no phase waits */
	int		 again_phase;	/* the one that waits, ACCEPT */
	int		 deny_phase;	/* -1: deny nowhere */
	bool		 resume_at_log;	/* LOG resumes a pending ACCEPT */
	int		 fd;		/* worker: <record>; -1 in the master */
	int		 worker;	/* worker id; -1 in the master */
};

/* Per connection, in the core's slot (zeroed at accept). */
struct hookrec_conn {
	struct pt_timer		 timer;
	struct pt_conn		*conn;
	struct hookrec_conf	*conf;
};

/* Needed by pt_conn_ctx() in the hooks, defined at the end of the file. */
PT_API extern const struct pt_module HOOKREC_MODULE;

static const char *const hookrec_phases[PT_PHASE_COUNT] = {
	[PT_PHASE_ACCEPT] = "ACCEPT",
	[PT_PHASE_AUTH] = "AUTH",
	[PT_PHASE_ACCESS] = "ACCESS",
	[PT_PHASE_DIAL] = "DIAL",
	[PT_PHASE_ESTABLISHED] = "ESTABLISHED",
	[PT_PHASE_LOG] = "LOG",
	[PT_PHASE_DATAGRAM] = "DATAGRAM",
	[PT_PHASE_CLOSE] = "CLOSE",
};

static const char *const hookrec_keys[] = {
	/* "name" and "path" belong to the core, which hands us the whole
	 * module entry. */
	"name", "path", "record", "again_ms", "again_phase", "deny_phase",
	"resume_at_log", NULL
};

/* conf() runs in the master only, one module entry at a time. */
static char	 hookrec_errbuf[256];

static void __attribute__((format(printf, 3, 4)))
hookrec_printf(const struct hookrec_conf *hc, int fd, const char *fmt, ...)
{
	char	 line[HOOKREC_LINE_MAX];
	va_list	 ap;
	int	 n;

	if (fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* A short write would only garble a test record; the test that
	 * reads it will say so. */
	if (write(fd, line, (size_t)n) < 0)
		pt_log_err(PT_LOG_WARNING, errno, "hookrec: write %s",
		    hc->record);
}

static int __attribute__((format(printf, 2, 3)))
hookrec_conf_error(const char **errstr, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(hookrec_errbuf, sizeof(hookrec_errbuf), fmt, ap);
	va_end(ap);
	*errstr = hookrec_errbuf;
	return -1;
}

static int
hookrec_conf_check_keys(const config_setting_t *node, const char **errstr)
{
	config_setting_t	*m;
	const char		*name;
	unsigned		 i, k;

	for (i = 0; (m = config_setting_get_elem(node, i)) != NULL; i++) {
		if ((name = config_setting_name(m)) == NULL)
			continue;
		for (k = 0; hookrec_keys[k] != NULL; k++)
			if (strcmp(name, hookrec_keys[k]) == 0)
				break;
		if (hookrec_keys[k] == NULL)
			return hookrec_conf_error(errstr,
			    "unknown option \"%s\"", name);
	}
	return 0;
}

static int
hookrec_conf_phase(const config_setting_t *s, int *phase_out,
    const char **errstr)
{
	const char	*v;
	int		 p;

	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return hookrec_conf_error(errstr, "%s: expected a string",
		    config_setting_name(s));
	v = config_setting_get_string(s);
	for (p = 0; p < PT_PHASE_COUNT; p++)
		if (strcasecmp(v, hookrec_phases[p]) == 0) {
			*phase_out = p;
			return 0;
		}
	return hookrec_conf_error(errstr, "%s: unknown phase \"%s\" "
	    "(expected ACCEPT, AUTH, ACCESS, DIAL, ESTABLISHED or LOG)",
	    config_setting_name(s), v);
}

static int
hookrec_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct hookrec_conf	*hc;
	config_setting_t	*s;
	long long		 v;
	int			 deny = -1, again_phase = PT_PHASE_ACCEPT;
	unsigned		 again = 0;

	if (hookrec_conf_check_keys(node, errstr) < 0)
		return -1;
	if ((s = config_setting_get_member(node, "record")) == NULL) {
		*errstr = "record: required";
		return -1;
	}
	if (config_setting_type(s) != CONFIG_TYPE_STRING ||
	    config_setting_get_string(s)[0] == '\0') {
		*errstr = "record: expected a file name";
		return -1;
	}
	if ((s = config_setting_get_member(node, "again_ms")) != NULL) {
		if (config_setting_type(s) != CONFIG_TYPE_INT &&
		    config_setting_type(s) != CONFIG_TYPE_INT64) {
			*errstr = "again_ms: expected an integer";
			return -1;
		}
		v = config_setting_get_int64(s);
		if (v < 0 || v > HOOKREC_AGAIN_MAX) {
			*errstr = "again_ms: out of range (0-86400000)";
			return -1;
		}
		again = (unsigned)v;
	}
	if ((s = config_setting_get_member(node, "deny_phase")) != NULL &&
	    hookrec_conf_phase(s, &deny, errstr) < 0)
		return -1;
	if ((s = config_setting_get_member(node, "again_phase")) != NULL &&
	    hookrec_conf_phase(s, &again_phase, errstr) < 0)
		return -1;
	if ((s = config_setting_get_member(node, "resume_at_log")) != NULL &&
	    config_setting_type(s) != CONFIG_TYPE_BOOL) {
		*errstr = "resume_at_log: expected true or false";
		return -1;
	}

	if ((hc = calloc(1, sizeof(*hc))) == NULL ||
	    (hc->record = strdup(config_setting_get_string(
	    config_setting_get_member(node, "record")))) == NULL) {
		free(hc);
		*errstr = "out of memory";
		return -1;
	}
	hc->again_ms = again;
	hc->again_phase = again_phase;
	hc->deny_phase = deny;
	hc->resume_at_log = s != NULL && config_setting_get_bool(s);
	hc->fd = -1;
	hc->worker = -1;
	mc->ctx = hc;
	return 0;
}

static void
hookrec_conf_free(void *ctx)
{
	struct hookrec_conf	*hc = ctx;

	if (hc == NULL)
		return;
	free(hc->record);
	free(hc);
}

static int
hookrec_open(const struct hookrec_conf *hc)
{
	int	 fd;

	fd = open(hc->record, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		pt_log_err(PT_LOG_ERR, errno, "hookrec: open %s", hc->record);
	return fd;
}

static int
hookrec_init_worker(struct pt_worker *w, void *ctx)
{
	struct hookrec_conf	*hc = ctx;

	hc->worker = pt_worker_id(w);
	if ((hc->fd = hookrec_open(hc)) < 0)
		return -1;
	hookrec_printf(hc, hc->fd, "INIT worker=%d\n", hc->worker);
	return 0;
}

static void
hookrec_exit_worker(struct pt_worker *w, void *ctx)
{
	struct hookrec_conf	*hc = ctx;

	hookrec_printf(hc, hc->fd, "EXIT worker=%d\n", pt_worker_id(w));
	if (hc->fd >= 0)
		close(hc->fd);
	hc->fd = -1;
}

/* Reopens like a log module would after rotation, then says so. The
 * master has no descriptor of its own and writes through a short-lived
 * one, so a test can tell which processes were asked. */
static void
hookrec_reopen(void *ctx)
{
	struct hookrec_conf	*hc = ctx;
	int			 fd;

	if ((fd = hookrec_open(hc)) < 0)
		return;
	if (hc->fd < 0) {
		hookrec_printf(hc, fd, "REOPEN master\n");
		close(fd);
		return;
	}
	close(hc->fd);
	hc->fd = fd;
	hookrec_printf(hc, hc->fd, "REOPEN worker=%d\n", hc->worker);
}

/* "1.2.3.4:80", "[::1]:80", or "-" before DIAL filled the target in. */
static const char *
hookrec_fmt_target(const struct sockaddr_storage *ss, char *buf,
    size_t bufsz)
{
	const struct sockaddr_in	*sin = (const void *)ss;
	const struct sockaddr_in6	*sin6 = (const void *)ss;
	char				 host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET &&
	    inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host)) != NULL)
		snprintf(buf, bufsz, "%s:%u", host, ntohs(sin->sin_port));
	else if (ss->ss_family == AF_INET6 &&
	    inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host)) != NULL)
		snprintf(buf, bufsz, "[%s]:%u", host, ntohs(sin6->sin6_port));
	else
		snprintf(buf, bufsz, "-");
	return buf;
}

/*
 * Fires even when the client left during the wait and LOG has already run:
 * the core keeps a connection's memory, this slot included, until the
 * module that answered AGAIN resumes it, so stopping the timer at LOG would
 * leak the connection instead of making anything safer.
 */
static void
hookrec_on_timer(struct pt_timer *t, void *arg)
{
	struct hookrec_conn	*cc = arg;
	struct hookrec_conf	*hc = cc->conf;

	hookrec_printf(hc, hc->fd, "%s-RESUMED conn=%llu\n",
	    hookrec_phases[hc->again_phase],
	    (unsigned long long)pt_conn_id(cc->conn));
	pt_conn_resume(cc->conn, hc->deny_phase == hc->again_phase ?
	    PT_VERDICT_DENY : PT_VERDICT_CONTINUE);
}

static enum pt_verdict
hookrec_run(enum pt_phase phase, struct pt_conn *conn, struct pt_req *req,
    struct hookrec_conf *hc)
{
	struct hookrec_conn	*cc;
	char			 target[INET6_ADDRSTRLEN + 16];
	int			 hostlen = (int)req->host.len;

	hookrec_printf(hc, hc->fd, "%s conn=%llu proto=%d host=%.*s port=%u "
	    "target=%s status=%d in=%llu out=%llu stream=%u owner=%llu "
	    "user=%.*s pass=%.*s\n",
	    hookrec_phases[phase], (unsigned long long)pt_conn_id(conn),
	    (int)req->proto, hostlen > 0 ? hostlen : 1,
	    hostlen > 0 ? req->host.ptr : "-", req->port,
	    hookrec_fmt_target(&req->target, target, sizeof(target)),
	    req->status, (unsigned long long)req->bytes_in,
	    (unsigned long long)req->bytes_out, pt_conn_stream(conn),
	    (unsigned long long)pt_conn_id(pt_conn_owner(conn)),
	    req->user.len > 0 ? (int)req->user.len : 1,
	    req->user.len > 0 ? req->user.ptr : "-",
	    req->password.len > 0 ? (int)req->password.len : 1,
	    req->password.len > 0 ? req->password.ptr : "-");

	if ((int)phase == hc->again_phase && hc->again_ms > 0) {
		cc = pt_conn_ctx(conn, &HOOKREC_MODULE);
		cc->conn = conn;
		cc->conf = hc;
		pt_timer_start(&cc->timer, hc->again_ms, hookrec_on_timer, cc);
		return PT_VERDICT_AGAIN;
	}
	/* The connection closed while ACCEPT waited: give it back from the
	 * LOG hook, the way a module that cancels its work would. */
	if (phase == PT_PHASE_LOG && hc->resume_at_log) {
		cc = pt_conn_ctx(conn, &HOOKREC_MODULE);
		if (cc->timer.heap_idx != 0) {
			pt_timer_stop(&cc->timer);
			hookrec_printf(hc, hc->fd, "LOG-RESUMED conn=%llu\n",
			    (unsigned long long)pt_conn_id(conn));
			pt_conn_resume(conn, PT_VERDICT_DENY);
		}
	}
	if ((int)phase == hc->deny_phase)
		return PT_VERDICT_DENY;
	return PT_VERDICT_CONTINUE;
}

/* The hook signature carries no phase, hence one thin entry per phase. */
#define HOOKREC_ENTRY(fn, phase)					\
	static enum pt_verdict						\
	fn(struct pt_conn *conn, struct pt_req *req, void *modctx)	\
	{								\
		return hookrec_run(phase, conn, req, modctx);		\
	}

HOOKREC_ENTRY(hookrec_on_accept, PT_PHASE_ACCEPT)
HOOKREC_ENTRY(hookrec_on_auth, PT_PHASE_AUTH)
HOOKREC_ENTRY(hookrec_on_access, PT_PHASE_ACCESS)
HOOKREC_ENTRY(hookrec_on_dial, PT_PHASE_DIAL)
HOOKREC_ENTRY(hookrec_on_established, PT_PHASE_ESTABLISHED)
HOOKREC_ENTRY(hookrec_on_log, PT_PHASE_LOG)

static const struct pt_hook hookrec_hooks[] = {
	{ PT_PHASE_ACCEPT, 0, hookrec_on_accept },
	{ PT_PHASE_AUTH, 0, hookrec_on_auth },
	{ PT_PHASE_ACCESS, 0, hookrec_on_access },
	{ PT_PHASE_DIAL, 0, hookrec_on_dial },
	{ PT_PHASE_ESTABLISHED, 0, hookrec_on_established },
	{ PT_PHASE_LOG, 0, hookrec_on_log },
	{ 0, 0, NULL }
};

/* The build hides every symbol; the descriptor is the one the loader must
 * find with dlsym(). */
PT_API const struct pt_module HOOKREC_MODULE = {
	.abi_major = HOOKREC_ABI_MAJOR,
	.abi_minor = PT_ABI_MINOR,
	.build_sig = PT_BUILD_SIG,
	.name = HOOKREC_NAME,
	/* It plays the credentials checker: SOCKS5 listeners ask for a
	 * username and password (t/integ/socks_replies.py). */
	.flags = PT_MODF_CREDENTIALS,
	.conf = hookrec_conf,
	.conf_free = hookrec_conf_free,
	.init_worker = hookrec_init_worker,
	.exit_worker = hookrec_exit_worker,
	.reopen = hookrec_reopen,
	.hooks = hookrec_hooks,
	.conn_ctx_size = sizeof(struct hookrec_conn),
};
