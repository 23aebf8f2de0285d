/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The accesslog module's configuration: the `logs` list of its modules
 * entry, parsed and checked by the master (each error names the setting
 * it is about, so the core reports its file and line), and the files the
 * master opens for the workers.
 *
 * Files are opened by the master with O_APPEND (so the workers need no
 * right on the directory) and, when the master is root and `user` is
 * set, given to the workers' user, as the core does with error_log: that
 * is what lets a worker that dropped its privileges open the new file by
 * its path after a rotation (the master creates it first, on SIGUSR1).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "modules/accesslog/accesslog.h"
#include "modules/common/conf_list.h"
#include "modules/common/conf_opts.h"

static const char *const al_top_keys[] = { "name", "path", "logs", NULL };
static const char *const al_log_keys[] = {
	"file", "stdout", "syslog", "format", "time", "query", "buffer",
	"flush", "mode", "writer", "facility", "severity", "tag", "syslog_format", NULL
};

static const char *const al_facilities[] = {
	"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
	"uucp", "cron", "authpriv", "ftp", NULL
};
static const char *const al_severities[] = {
	"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
	NULL
};

static int
al_index(const char *const *names, const char *v)
{
	int	 i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], v) == 0)
			return i;
	return -1;
}

static int
al_facility(const char *v)
{
	int	 i;

	if (strncmp(v, "local", 5) == 0 && v[5] >= '0' && v[5] <= '7' &&
	    v[6] == '\0')
		return 16 + v[5] - '0';
	i = al_index(al_facilities, v);
	return i;
}

/* A string member, or NULL; -1 when it has another type. */
static int
al_str(const config_setting_t *g, const char *key, const char **out,
    struct conf_err *e)
{
	config_setting_t	*s = config_setting_get_member(g, key);

	*out = NULL;
	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return conf_fail(e, s, "%s: expected a string", key);
	*out = config_setting_get_string(s);
	return 0;
}

static int
al_int(const config_setting_t *g, const char *key, long long lo,
    long long hi, long long *out, struct conf_err *e)
{
	config_setting_t	*s = config_setting_get_member(g, key);
	long long		 v;

	if (s == NULL)
		return 0;
	if (config_setting_type(s) == CONFIG_TYPE_INT)
		v = config_setting_get_int(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT64)
		v = config_setting_get_int64(s);
	else
		return conf_fail(e, s, "%s: expected an integer", key);
	if (v < lo || v > hi)
		return conf_fail(e, s, "%s: %lld is out of range "
		    "(%lld..%lld)", key, v, lo, hi);
	*out = v;
	return 0;
}

/*
 * A file mode, in octal as chmod(1) and the manual write it: 0640 or
 * "0640". libconfig has no octal numbers (it reads 0640 as 640), so an
 * integer's decimal digits are taken as the octal ones they were written
 * as; a digit 8 or 9 is an error, not a silent other mode.
 */
static int
al_mode(const config_setting_t *g, unsigned *out, struct conf_err *e)
{
	config_setting_t	*s = config_setting_get_member(g, "mode");
	char			 digits[32];
	const char		*p;
	unsigned long		 v = 0;

	if (s == NULL)
		return 0;
	if (config_setting_type(s) == CONFIG_TYPE_STRING)
		p = config_setting_get_string(s);
	else if (config_setting_type(s) == CONFIG_TYPE_INT &&
	    config_setting_get_int(s) >= 0) {
		snprintf(digits, sizeof(digits), "%d",
		    config_setting_get_int(s));
		p = digits;
	} else
		return conf_fail(e, s, "mode: expected an octal mode such "
		    "as 0640");
	if (*p == '\0' || strspn(p, "01234567") != strlen(p) ||
	    (v = strtoul(p, NULL, 8)) > 0777)
		return conf_fail(e, s, "mode: \"%s\" is not an octal mode "
		    "from 0 to 0777 (such as 0640)", p);
	*out = (unsigned)v;
	return 0;
}

static int
al_bool(const config_setting_t *g, const char *key, bool *out,
    struct conf_err *e)
{
	config_setting_t	*s = config_setting_get_member(g, key);

	if (s == NULL)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return conf_fail(e, s, "%s: expected true or false", key);
	*out = config_setting_get_bool(s);
	return 0;
}

/* Where the log goes: exactly one of file, stdout, syslog. */
static int
al_parse_output(const config_setting_t *g, struct al_log_conf *lc,
    struct conf_err *e)
{
	config_setting_t	*f, *o, *s;
	const char		*path = NULL;
	bool			 on = false;
	int			 n;

	f = config_setting_get_member(g, "file");
	o = config_setting_get_member(g, "stdout");
	s = config_setting_get_member(g, "syslog");
	n = (f != NULL) + (o != NULL) + (s != NULL);
	if (n != 1)
		return conf_fail(e, g, "a log has exactly one of file = "
		    "\"PATH\", stdout = true or syslog = true (found %d)", n);
	if (f != NULL) {
		lc->kind = AL_FILE;
		if (al_str(g, "file", &path, e) < 0)
			return -1;
		if (path[0] != '/')
			return conf_fail(e, f, "file: \"%s\" is not an "
			    "absolute path", path);
	} else if (o != NULL) {
		lc->kind = AL_STDOUT;
		if (al_bool(g, "stdout", &on, e) < 0)
			return -1;
		if (!on)
			return conf_fail(e, o, "stdout = false names no "
			    "output: remove the log");
	} else {
		lc->kind = AL_SYSLOG;
		if (config_setting_type(s) == CONFIG_TYPE_STRING) {
			path = config_setting_get_string(s);
			if (path[0] != '/')
				return conf_fail(e, s, "syslog: \"%s\" is not "
				    "an absolute socket path", path);
		} else if (config_setting_type(s) == CONFIG_TYPE_BOOL &&
		    config_setting_get_bool(s))
			path = AL_SYSLOG_DEFAULT;
		else
			return conf_fail(e, s, "syslog: expected true or a "
			    "UNIX socket path");
	}
	if (path != NULL && (lc->path = strdup(path)) == NULL)
		return conf_fail(e, g, "out of memory");
	return 0;
}

static int
al_parse_syslog(const config_setting_t *g, struct al_log_conf *lc,
    struct conf_err *e)
{
	const char	*v;

	lc->facility = 16;		/* local0 */
	lc->severity = 6;		/* info */
	if (al_str(g, "facility", &v, e) < 0)
		return -1;
	if (v != NULL && (lc->facility = al_facility(v)) < 0)
		return conf_fail(e,
		    config_setting_get_member(g, "facility"), "facility: "
		    "unknown \"%s\" (daemon, local0..local7, ...)", v);
	if (al_str(g, "severity", &v, e) < 0)
		return -1;
	if (v != NULL && (lc->severity = al_index(al_severities, v)) < 0)
		return conf_fail(e,
		    config_setting_get_member(g, "severity"), "severity: "
		    "unknown \"%s\" (err, warning, notice, info, debug, ...)",
		    v);
	if (al_str(g, "tag", &v, e) < 0)
		return -1;
	if (v != NULL && (v[0] == '\0' || strlen(v) > 48 ||
	    strpbrk(v, " :[]\t\n") != NULL))
		return conf_fail(e,
		    config_setting_get_member(g, "tag"), "tag: 1 to 48 "
		    "characters, no space, ':' or brackets");
	if ((lc->tag = strdup(v != NULL ? v : "portico")) == NULL)
		return conf_fail(e, g, "out of memory");
	if (al_str(g, "syslog_format", &v, e) < 0)
		return -1;
	if (v != NULL && strcmp(v, "rfc5424") != 0 &&
	    strcmp(v, "rfc3164") != 0)
		return conf_fail(e,
		    config_setting_get_member(g, "syslog_format"),
		    "syslog_format: \"rfc3164\" (the local form) or "
		    "\"rfc5424\"");
	lc->rfc5424 = v != NULL && strcmp(v, "rfc5424") == 0;
	return 0;
}

static int
al_parse_log(const config_setting_t *g, struct al_log_conf *lc,
    struct conf_err *e)
{
	const config_setting_t	*bad;
	const char		*v, *name;
	long long		 n;
	unsigned		 i;

	lc->fd = -1;
	lc->line = (int)config_setting_source_line(g);
	if (!config_setting_is_group(g))
		return conf_fail(e, g, "each entry of logs is a group: "
		    "{ file = \"...\"; format = \"json\"; }");
	if ((name = conf_unknown_key(g, al_log_keys, &bad)) != NULL)
		return conf_fail(e, bad, "unknown setting \"%s\" in a log",
		    name);
	if (al_parse_output(g, lc, e) < 0)
		return -1;
	lc->fmt.format = AL_FMT_SQUID;
	lc->fmt.query = true;
	if (al_str(g, "format", &v, e) < 0)
		return -1;
	if (v != NULL) {
		if (strcmp(v, "squid") == 0)
			lc->fmt.format = AL_FMT_SQUID;
		else if (strcmp(v, "combined") == 0)
			lc->fmt.format = AL_FMT_COMBINED;
		else if (strcmp(v, "json") == 0)
			lc->fmt.format = AL_FMT_JSON;
		else
			return conf_fail(e,
			    config_setting_get_member(g, "format"), "format: "
			    "\"%s\" is not squid, combined or json", v);
	}
	if (al_str(g, "time", &v, e) < 0)
		return -1;
	if (v != NULL && strcmp(v, "utc") != 0 && strcmp(v, "local") != 0)
		return conf_fail(e,
		    config_setting_get_member(g, "time"), "time: \"utc\" or "
		    "\"local\"");
	lc->fmt.local_time = v != NULL && strcmp(v, "local") == 0;
	if (al_bool(g, "query", &lc->fmt.query, e) < 0)
		return -1;
	n = AL_BUFFER_DEFAULT;
	if (al_int(g, "buffer", AL_BUFFER_MIN, AL_BUFFER_MAX, &n, e) < 0)
		return -1;
	lc->buffer = (size_t)n;
	n = AL_FLUSH_DEFAULT;
	if (al_int(g, "flush", 1, 10000, &n, e) < 0)
		return -1;
	lc->flush_ms = (unsigned)n;
	lc->mode = 0640;
	if (al_mode(g, &lc->mode, e) < 0)
		return -1;
	if (al_str(g, "writer", &v, e) < 0)
		return -1;
	if (v != NULL && strcmp(v, "thread") != 0 && strcmp(v, "loop") != 0)
		return conf_fail(e,
		    config_setting_get_member(g, "writer"), "writer: "
		    "\"thread\" or \"loop\"");
	lc->thread = v == NULL || strcmp(v, "thread") == 0;
	if (lc->kind != AL_FILE && config_setting_get_member(g, "mode"))
		return conf_fail(e,
		    config_setting_get_member(g, "mode"), "mode: for a file "
		    "only");
	if (lc->kind == AL_SYSLOG)
		return al_parse_syslog(g, lc, e);
	for (i = 0; al_log_keys[i] != NULL; i++)
		if (i >= 10 && config_setting_get_member(g, al_log_keys[i]))
			return conf_fail(e,
			    config_setting_get_member(g, al_log_keys[i]),
			    "%s: for a syslog log only", al_log_keys[i]);
	return 0;
}

/* The top-level `user` and `group`, for the owner of the files. */
static int
al_owner(const config_setting_t *node, struct al_conf *ac, struct conf_err *e)
{
	const config_setting_t	*root = node;
	const char		*user = NULL, *group = NULL;
	struct passwd		*pw;
	struct group		*gr;

	ac->uid = (uid_t)-1;
	ac->gid = (gid_t)-1;
	while (config_setting_parent(root) != NULL)
		root = config_setting_parent(root);
	config_setting_lookup_string(root, "user", &user);
	config_setting_lookup_string(root, "group", &group);
	if (user != NULL) {
		if ((pw = getpwnam(user)) == NULL)
			return conf_fail(e, node, "no such user \"%s\"",
			    user);
		ac->uid = pw->pw_uid;
		ac->gid = pw->pw_gid;
	}
	if (group != NULL) {
		if ((gr = getgrnam(group)) == NULL)
			return conf_fail(e, node, "no such group \"%s\"",
			    group);
		ac->gid = gr->gr_gid;
	}
	return 0;
}

struct al_conf *
al_conf_parse(const config_setting_t *node, char *err, size_t errsz,
    const config_setting_t **where_out)
{
	struct conf_err		 ce = { err, errsz, where_out, "accesslog" };
	struct conf_err		*e = &ce;
	struct al_conf		*ac;
	const config_setting_t	*bad;
	config_setting_t	*logs;
	const char		*name;
	unsigned		 i, n;

	*where_out = NULL;
	if ((name = conf_unknown_key(node, al_top_keys, &bad)) != NULL) {
		conf_fail(e, bad, "unknown setting \"%s\" (the module has "
		    "logs = ( ... ))", name);
		return NULL;
	}
	logs = config_setting_get_member(node, "logs");
	if (logs == NULL || (!config_setting_is_list(logs) &&
	    !config_setting_is_array(logs)) || config_setting_length(logs) < 1) {
		conf_fail(e, logs != NULL ? logs : node,
		    "logs: expected a list of one or more logs, "
		    "( { file = \"/var/log/portico/access.log\"; } )");
		return NULL;
	}
	n = (unsigned)config_setting_length(logs);
	if ((ac = calloc(1, sizeof(*ac))) == NULL ||
	    (ac->logs = calloc(n, sizeof(*ac->logs))) == NULL) {
		free(ac);
		conf_fail(e, node, "out of memory");
		return NULL;
	}
	ac->nlogs = n;
	for (i = 0; i < n; i++)
		ac->logs[i].fd = -1;
	for (i = 0; i < n; i++) {
		if (al_parse_log(config_setting_get_elem(logs, i),
		    &ac->logs[i], e) < 0)
			goto fail;
		if (ac->logs[i].fmt.format != AL_FMT_SQUID)
			ac->want_headers = true;
	}
	if (al_owner(node, ac, e) < 0)
		goto fail;
	return ac;
fail:
	al_conf_free(ac);
	return NULL;
}

void
al_conf_free(struct al_conf *ac)
{
	size_t	 i;

	if (ac == NULL)
		return;
	al_conf_close(ac);
	for (i = 0; i < ac->nlogs; i++) {
		free(ac->logs[i].path);
		free(ac->logs[i].tag);
	}
	free(ac->logs);
	free(ac);
}

int
al_file_open(const struct al_log_conf *lc, uid_t uid, gid_t gid)
{
	int	 fd, err;

	fd = open(lc->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
	    O_NONBLOCK | O_NOCTTY, (mode_t)lc->mode);
	if (fd < 0)
		return -errno;
	if (uid != (uid_t)-1 && geteuid() == 0 && fchown(fd, uid, gid) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/* stdout as a descriptor of its own: a regular file is shared as it is
 * (O_APPEND or not, the shell chose); anything else (a pipe, a tty) is
 * opened again so O_NONBLOCK does not change the shell's descriptor. */
static int
al_stdout_open(void)
{
	struct stat	 st;
	int		 fd;

	if (fstat(1, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		fd = open("/proc/self/fd/1", O_WRONLY | O_CLOEXEC |
		    O_NONBLOCK | O_NOCTTY);
		if (fd >= 0)
			return fd;
	}
	fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
	return fd < 0 ? -errno : fd;
}

int
al_conf_open(struct al_conf *ac)
{
	struct al_log_conf	*lc;
	size_t			 i;
	int			 fd;

	for (i = 0; i < ac->nlogs; i++) {
		lc = &ac->logs[i];
		if (lc->kind == AL_SYSLOG || lc->fd >= 0)
			continue;
		fd = lc->kind == AL_FILE ? al_file_open(lc, ac->uid, ac->gid) :
		    al_stdout_open();
		if (fd < 0) {
			pt_log_err(PT_LOG_ERR, -fd, "accesslog: line %d: open %s",
			    lc->line, lc->kind == AL_FILE ? lc->path : "stdout");
			al_conf_close(ac);
			return -1;
		}
		lc->fd = fd;
	}
	return 0;
}

void
al_conf_close(struct al_conf *ac)
{
	size_t	 i;

	for (i = 0; i < ac->nlogs; i++)
		if (ac->logs[i].fd >= 0) {
			close(ac->logs[i].fd);
			ac->logs[i].fd = -1;
		}
}

void
al_conf_reopen(struct al_conf *ac)
{
	struct al_log_conf	*lc;
	size_t			 i;
	int			 fd;

	for (i = 0; i < ac->nlogs; i++) {
		lc = &ac->logs[i];
		if (lc->kind != AL_FILE || lc->fd < 0)
			continue;
		if ((fd = al_file_open(lc, ac->uid, ac->gid)) < 0) {
			pt_log_err(PT_LOG_ERR, -fd, "accesslog: reopen %s",
			    lc->path);
			continue;
		}
		if (dup3(fd, lc->fd, O_CLOEXEC) < 0)
			pt_log_err(PT_LOG_ERR, errno, "accesslog: reopen %s: "
			    "dup3", lc->path);
		close(fd);
	}
}
