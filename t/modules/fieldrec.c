/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fieldrec: a test-only module for the request fields of ABI 1.1. It
 * records, for every phase, what a module can read of a transaction
 * (path, two request headers, listener, transaction number, user, label,
 * a tag), and can write into it: the user from a header at AUTH, a label
 * and tags at ACCESS. Built twice from this file (fieldrec and
 * fieldrec2), so one instance can set what the other reads.
 *
 *	modules = ( { name = "fieldrec"; path = ".../fieldrec.so";
 *		      record = "/tmp/rec";	# required
 *		      user_header = "X-User";	# AUTH: pt_req_set_user
 *		      label = "rule-7";		# ACCESS: pt_req_set_label
 *		      tags = true;		# ACCESS: tags, see below
 *		      deny_listener = "deny";	# ACCEPT: DENY on the
 *						# listeners named deny...
 *		      close_header = "X-Close";	# see below
 *		      accept_user = "cn=alice";	# ACCEPT: pt_req_set_user,
 *		      accept_user_listener = "certs"; # on that listener
 *		      via = "p2";		# ACCESS: pt_conn_set_via
 *		      via_header = "X-Via";	#   only with this header
 *		    } );
 *
 * Lines, each one write() on an O_APPEND descriptor:
 *
 *	INIT mod=<m> worker=<id> pid=<pid>
 *	DRAIN mod=<m> worker=<id> pid=<pid>		on_drain
 *	TAGS mod=<m> conn=<id> rcs=<rc,...>		the tag calls' results
 *	<PHASE> mod=<m> worker=<id> pid=<pid> conn=<id> txn=<n> proto=<n>
 *	    listener=<name> lidx=<i> path=<p> ua=<v> xtest=<v> user=<u> label=<l>
 *	    class=<v> hosthex=<h> egress=<a> peer=<addr> balancer=<addr>
 *	    ppauth=<v> ppuid=<v> parent=<name> via=<text> status=<n>
 *	    error=<rest of the line>
 *	    (one line; hosthex: the host's bytes in hex, "-" when empty;
 *	    egress: pt_conn_egress's address; peer: pt_req.peer's address;
 *	    balancer: pt_conn_balancer's; ppauth and ppuid: the tags
 *	    proxy_authority and proxy_unique_id, all ABI 1.6; parent:
 *	    pt_conn_parent, via: the module's own choice as pt_via_format
 *	    writes it, ABI 1.7)
 *
 * Empty or absent values are written "-", spaces as '_' (error keeps
 * its spaces: it ends the line). ua and xtest are pt_req_header() of
 * User-Agent and X-Test, so they are "-" outside AUTH..DIAL, but for ua
 * at ESTABLISHED and LOG: fieldrec2 has PT_MODF_LOG_HEADERS (ABI 1.4),
 * so the core keeps User-Agent until LOG; class is
 * pt_req_tag(conn, "class"); egress is pt_conn_egress() (ABI 1.6), the
 * address the transaction's outgoing connection was bound to, "-" for
 * none.
 *
 * tags = true, at ACCESS: sets class=per-user, a=1, b=2, c=3 (fills the
 * four slots), d=4 (-ENOSPC), a 16-byte name (-EINVAL), a 64-byte value
 * (-EINVAL), removes c, sets d=4 (0), replaces a with 9 (0): the TAGS line
 * has the nine return codes.
 *
 * close_header: when that header is present at ACCESS, ESTABLISHED
 * starts a 200 ms timer that ends the connection with pt_conn_close(conn,
 * "fieldrec close").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "portico/module.h"

#ifdef FIELDREC_SECOND
#define FIELDREC_MODULE		pt_module_fieldrec2
#define FIELDREC_NAME		"fieldrec2"
#else
#define FIELDREC_MODULE		pt_module_fieldrec
#define FIELDREC_NAME		"fieldrec"
#endif

#define FIELDREC_LINE_MAX	4096
#define FIELDREC_CLOSE_MS	200

struct fieldrec_conf {
	char		*record;
	char		*user_header;
	char		*accept_user, *accept_user_listener;
	char		*label;
	char		*deny_listener;
	char		*close_header;
	bool		 tags;
	/* ABI 1.7: the parents this module sends traffic through, set at
	 * ACCESS (when via_header is set: only for requests with it). */
	struct pt_via	*via;
	char		*via_header;
	int		 fd;
	int		 worker;
	int		 pid;		/* conn ids restart in a new worker */
};

struct fieldrec_conn {
	struct pt_timer		 timer;
	struct pt_conn		*conn;
	bool			 close_wanted;
};

PT_API extern const struct pt_module FIELDREC_MODULE;

static const char *const fieldrec_phases[PT_PHASE_COUNT] = {
	[PT_PHASE_ACCEPT] = "ACCEPT",
	[PT_PHASE_AUTH] = "AUTH",
	[PT_PHASE_ACCESS] = "ACCESS",
	[PT_PHASE_DIAL] = "DIAL",
	[PT_PHASE_ESTABLISHED] = "ESTABLISHED",
	[PT_PHASE_LOG] = "LOG",
	[PT_PHASE_DATAGRAM] = "DATAGRAM",
	[PT_PHASE_CLOSE] = "CLOSE",
};

static void __attribute__((format(printf, 2, 3)))
fieldrec_printf(const struct fieldrec_conf *fc, const char *fmt, ...)
{
	char	 line[FIELDREC_LINE_MAX];
	va_list	 ap;
	int	 n;

	if (fc->fd < 0)
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
	if (write(fc->fd, line, (size_t)n) < 0)
		pt_log_err(PT_LOG_WARNING, errno, "fieldrec: write %s",
		    fc->record);
}

/* A value for the record: "-" when empty, spaces as '_', bounded. */
static const char *
fieldrec_val(const char *p, size_t len, char *buf, size_t bufsz)
{
	size_t	 i;

	if (p == NULL || len == 0)
		return "-";
	if (len >= bufsz)
		len = bufsz - 1;
	for (i = 0; i < len; i++)
		buf[i] = p[i] == ' ' || p[i] == '\n' ? '_' : p[i];
	buf[len] = '\0';
	return buf;
}

static int
fieldrec_str(const config_setting_t *node, const char *key, char **out,
    const char **errstr)
{
	config_setting_t	*s;

	*out = NULL;
	if ((s = config_setting_get_member(node, key)) == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		*errstr = "expected a string";
		return -1;
	}
	if ((*out = strdup(config_setting_get_string(s))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	return 0;
}

static void
fieldrec_conf_free(void *ctx)
{
	struct fieldrec_conf	*fc = ctx;

	if (fc == NULL)
		return;
	free(fc->record);
	free(fc->user_header);
	free(fc->accept_user);
	free(fc->accept_user_listener);
	free(fc->label);
	free(fc->deny_listener);
	free(fc->close_header);
	free(fc->via_header);
	pt_via_free(fc->via);
	free(fc);
}

static int
fieldrec_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	struct fieldrec_conf	*fc;
	config_setting_t	*s;

	if ((fc = calloc(1, sizeof(*fc))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	fc->fd = -1;
	fc->worker = -1;
	if (fieldrec_str(node, "record", &fc->record, errstr) < 0 ||
	    fieldrec_str(node, "user_header", &fc->user_header, errstr) < 0 ||
	    fieldrec_str(node, "accept_user", &fc->accept_user, errstr) < 0 ||
	    fieldrec_str(node, "accept_user_listener",
	    &fc->accept_user_listener, errstr) < 0 ||
	    fieldrec_str(node, "label", &fc->label, errstr) < 0 ||
	    fieldrec_str(node, "deny_listener", &fc->deny_listener,
	    errstr) < 0 ||
	    fieldrec_str(node, "close_header", &fc->close_header,
	    errstr) < 0 ||
	    fieldrec_str(node, "via_header", &fc->via_header, errstr) < 0 ||
	    pt_via_conf(mc, node, &fc->via, errstr) < 0) {
		fieldrec_conf_free(fc);
		return -1;
	}
	if (fc->record == NULL) {
		fieldrec_conf_free(fc);
		*errstr = "record: required";
		return -1;
	}
	if ((s = config_setting_get_member(node, "tags")) != NULL)
		fc->tags = config_setting_get_bool(s);
	mc->ctx = fc;
	return 0;
}

static int
fieldrec_init_worker(struct pt_worker *w, void *ctx)
{
	struct fieldrec_conf	*fc = ctx;

	fc->worker = pt_worker_id(w);
	fc->pid = (int)getpid();
	fc->fd = open(fc->record, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0644);
	if (fc->fd < 0) {
		pt_log_err(PT_LOG_ERR, errno, "fieldrec: open %s", fc->record);
		return -1;
	}
	fieldrec_printf(fc, "INIT mod=%s worker=%d pid=%d\n", FIELDREC_NAME,
	    fc->worker, (int)getpid());
	return 0;
}

static void
fieldrec_exit_worker(struct pt_worker *w, void *ctx)
{
	struct fieldrec_conf	*fc = ctx;

	if (fc->fd >= 0)
		close(fc->fd);
	fc->fd = -1;
}

static void
fieldrec_on_drain(struct pt_worker *w, void *ctx)
{
	struct fieldrec_conf	*fc = ctx;

	fieldrec_printf(fc, "DRAIN mod=%s worker=%d pid=%d\n", FIELDREC_NAME,
	    pt_worker_id(w), (int)getpid());
}

/* <sa>'s address as text, or "-" (NULL, or not IPv4 or IPv6). */
static void
fieldrec_addr(const struct sockaddr *sa, char *out, size_t len)
{
	const void	*a = NULL;

	if (sa != NULL && sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa != NULL && sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (a == NULL || inet_ntop(sa->sa_family, a, out, (socklen_t)len) ==
	    NULL)
		snprintf(out, len, "-");
}

static void
fieldrec_record(enum pt_phase phase, struct pt_conn *conn,
    struct pt_req *req, struct fieldrec_conf *fc)
{
	char		 b[9][300], path[1500], hx[2 * 256 + 2];
	char		 peer[INET6_ADDRSTRLEN], lb[INET6_ADDRSTRLEN];
	char		 eg[INET6_ADDRSTRLEN], via[160];
	const char	*parent = pt_conn_parent(conn);
	struct pt_str	 ua, xt, cls, ppa, ppu;
	bool		 has_ua, has_xt, has_cls, has_ppa, has_ppu;
	size_t		 i;

	/* The host, byte for byte: what a module judges, to be compared
	 * with what the resolver was asked (t/integ/host_names.py). */
	for (i = 0; i < req->host.len && i < 256; i++)
		snprintf(hx + 2 * i, 3, "%02x", (unsigned char)req->host.ptr[i]);
	if (i == 0)
		memcpy(hx, "-", 2);

	has_ua = pt_req_header(conn, "user-agent", &ua);
	has_xt = pt_req_header(conn, "X-TEST", &xt);
	has_cls = pt_req_tag(conn, "class", &cls);
	has_ppa = pt_req_tag(conn, "proxy_authority", &ppa);
	has_ppu = pt_req_tag(conn, "proxy_unique_id", &ppu);
	fieldrec_addr((const struct sockaddr *)&req->peer, peer, sizeof(peer));
	fieldrec_addr(pt_conn_balancer(conn), lb, sizeof(lb));
	fieldrec_addr(pt_conn_egress(conn), eg, sizeof(eg));
	if (fc->via == NULL || pt_via_format(fc->via, via, sizeof(via)) <= 0)
		snprintf(via, sizeof(via), "-");
	fieldrec_printf(fc, "%s mod=%s worker=%d pid=%d conn=%llu txn=%llu "
	    "proto=%d listener=%s lidx=%d path=%s ua=%s xtest=%s user=%s "
	    "label=%s class=%s hosthex=%s egress=%s peer=%s balancer=%s "
	    "ppauth=%s ppuid=%s parent=%s via=%s status=%d error=%s\n",
	    fieldrec_phases[phase],
	    FIELDREC_NAME, fc->worker, fc->pid,
	    (unsigned long long)pt_conn_id(conn),
	    (unsigned long long)req->txn, (int)req->proto,
	    fieldrec_val(req->listener, req->listener ?
	    strlen(req->listener) : 0, b[0], sizeof(b[0])),
	    (int)req->listener_idx,
	    fieldrec_val(req->path.ptr, req->path.len, path, sizeof(path)),
	    has_ua ? fieldrec_val(ua.ptr, ua.len, b[2], sizeof(b[2])) : "-",
	    has_xt ? fieldrec_val(xt.ptr, xt.len, b[3], sizeof(b[3])) : "-",
	    fieldrec_val(req->user.ptr, req->user.len, b[4], sizeof(b[4])),
	    fieldrec_val(req->label.ptr, req->label.len, b[5], sizeof(b[5])),
	    has_cls ? fieldrec_val(cls.ptr, cls.len, b[6], sizeof(b[6])) :
	    "-", hx, eg, peer, lb,
	    has_ppa ? fieldrec_val(ppa.ptr, ppa.len, b[7], sizeof(b[7])) : "-",
	    has_ppu ? fieldrec_val(ppu.ptr, ppu.len, b[8], sizeof(b[8])) : "-",
	    parent != NULL ? parent : "-", via, req->status, req->error != NULL ? req->error : "-");
}

static void
fieldrec_set_tags(struct pt_conn *conn, struct fieldrec_conf *fc)
{
	static const char	 big[] = "0123456789012345678901234567890123"
	    "456789012345678901234567890123";	/* 64 bytes */
	int			 rc[9];

	rc[0] = pt_req_set_tag(conn, "class", "per-user", 8);
	rc[1] = pt_req_set_tag(conn, "a", "1", 1);
	rc[2] = pt_req_set_tag(conn, "b", "2", 1);
	rc[3] = pt_req_set_tag(conn, "c", "3", 1);
	rc[4] = pt_req_set_tag(conn, "d", "4", 1);
	rc[5] = pt_req_set_tag(conn, "sixteen-bytes-xx", "x", 1);
	rc[6] = pt_req_set_tag(conn, "e", big, sizeof(big) - 1);
	rc[7] = pt_req_set_tag(conn, "c", "", 0) |
	    pt_req_set_tag(conn, "d", "4", 1);
	rc[8] = pt_req_set_tag(conn, "a", "9", 1);
	fieldrec_printf(fc, "TAGS mod=%s conn=%llu rcs=%d,%d,%d,%d,%d,%d,%d,"
	    "%d,%d\n", FIELDREC_NAME, (unsigned long long)pt_conn_id(conn),
	    rc[0], rc[1], rc[2], rc[3], rc[4], rc[5], rc[6], rc[7], rc[8]);
}

static void
fieldrec_on_timer(struct pt_timer *t, void *arg)
{
	struct fieldrec_conn	*cc = arg;

	pt_conn_close(cc->conn, "fieldrec close");
}

static enum pt_verdict
fieldrec_run(enum pt_phase phase, struct pt_conn *conn, struct pt_req *req,
    struct fieldrec_conf *fc)
{
	struct fieldrec_conn	*cc = pt_conn_ctx(conn, &FIELDREC_MODULE);
	struct pt_str		 v;

	/* Set first, then record: the line shows what this phase left. */
	if (phase == PT_PHASE_ACCEPT && fc->accept_user != NULL &&
	    fc->accept_user_listener != NULL &&
	    strcmp(req->listener, fc->accept_user_listener) == 0)
		pt_req_set_user(conn, fc->accept_user,
		    strlen(fc->accept_user));
	if (phase == PT_PHASE_AUTH && fc->user_header != NULL &&
	    pt_req_header(conn, fc->user_header, &v))
		pt_req_set_user(conn, v.ptr, v.len);
	if (phase == PT_PHASE_ACCESS) {
		if (fc->label != NULL)
			pt_req_set_label(conn, fc->label, strlen(fc->label));
		if (fc->tags)
			fieldrec_set_tags(conn, fc);
		if (fc->close_header != NULL &&
		    pt_req_header(conn, fc->close_header, &v))
			cc->close_wanted = true;
		if (fc->via != NULL && (fc->via_header == NULL ||
		    pt_req_header(conn, fc->via_header, &v)))
			pt_conn_set_via(conn, fc->via);
	}
	fieldrec_record(phase, conn, req, fc);
	if (phase == PT_PHASE_ESTABLISHED && cc->close_wanted) {
		cc->conn = conn;
		pt_timer_start(&cc->timer, FIELDREC_CLOSE_MS, fieldrec_on_timer,
		    cc);
	}
	if (phase == PT_PHASE_CLOSE)
		pt_timer_stop(&cc->timer);
	if (phase == PT_PHASE_ACCEPT && fc->deny_listener != NULL &&
	    strncmp(req->listener, fc->deny_listener,
	    strlen(fc->deny_listener)) == 0)
		return PT_VERDICT_DENY;
	return PT_VERDICT_CONTINUE;
}

#define FIELDREC_ENTRY(fn, phase)					\
	static enum pt_verdict						\
	fn(struct pt_conn *conn, struct pt_req *req, void *modctx)	\
	{								\
		return fieldrec_run(phase, conn, req, modctx);		\
	}

FIELDREC_ENTRY(fieldrec_on_accept, PT_PHASE_ACCEPT)
FIELDREC_ENTRY(fieldrec_on_auth, PT_PHASE_AUTH)
FIELDREC_ENTRY(fieldrec_on_access, PT_PHASE_ACCESS)
FIELDREC_ENTRY(fieldrec_on_dial, PT_PHASE_DIAL)
FIELDREC_ENTRY(fieldrec_on_established, PT_PHASE_ESTABLISHED)
FIELDREC_ENTRY(fieldrec_on_log, PT_PHASE_LOG)
FIELDREC_ENTRY(fieldrec_on_close, PT_PHASE_CLOSE)

/* The second instance runs after the first in every phase. */
#ifdef FIELDREC_SECOND
#define FIELDREC_PRIO	10
#else
#define FIELDREC_PRIO	0
#endif

static const struct pt_hook fieldrec_hooks[] = {
	{ PT_PHASE_ACCEPT, FIELDREC_PRIO, fieldrec_on_accept },
	{ PT_PHASE_AUTH, FIELDREC_PRIO, fieldrec_on_auth },
	{ PT_PHASE_ACCESS, FIELDREC_PRIO, fieldrec_on_access },
	{ PT_PHASE_DIAL, FIELDREC_PRIO, fieldrec_on_dial },
	{ PT_PHASE_ESTABLISHED, FIELDREC_PRIO, fieldrec_on_established },
	{ PT_PHASE_LOG, FIELDREC_PRIO, fieldrec_on_log },
	{ PT_PHASE_CLOSE, FIELDREC_PRIO, fieldrec_on_close },
	{ 0, 0, NULL }
};

PT_API const struct pt_module FIELDREC_MODULE = {
	PT_MODULE_INIT,
	.name = FIELDREC_NAME,
#ifdef FIELDREC_SECOND
	/* The core keeps User-Agent and Referer until LOG (ABI 1.4), for
	 * both instances' pt_req_header. */
	.flags = PT_MODF_LOG_HEADERS,
#endif
	.conf = fieldrec_conf,
	.conf_free = fieldrec_conf_free,
	.init_worker = fieldrec_init_worker,
	.exit_worker = fieldrec_exit_worker,
	.on_drain = fieldrec_on_drain,
	.hooks = fieldrec_hooks,
	.conn_ctx_size = sizeof(struct fieldrec_conn),
};
