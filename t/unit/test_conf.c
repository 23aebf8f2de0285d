/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * master/conf.c: what a configuration file turns into, and, for every kind
 * of mistake, that conf_load() refuses it with "FILE:LINE: ..." naming the
 * exact line. Each test writes its file into a private directory made by
 * the suite; nothing is bound, forked or resolved by name.
 *
 * The module tests go through the real loader (modload.c) with the test
 * modules built in t/modules/, found through $PT_TESTMODDIR (set by
 * `make check`) or t/modules/.libs under the current directory.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "master/cgroup.h"
#include "master/conf.h"
#include "master/modload.h"
#include "worker/dns.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#ifndef PT_MODULEDIR
#define PT_MODULEDIR "/usr/local/lib/portico"
#endif

/* One line, last in most test files, so the lines above keep their
 * numbers and no error is masked by "no listeners". */
#define LISTENER							\
	"listeners = ( { address = \"127.0.0.1:18080\"; "		\
	"protocol = \"tcp\"; to = \"127.0.0.1:9\"; } );\n"

#define TEXT_MAX	4096

static char	 conf_dir[64];		/* the suite's private directory */
static char	 empty_dir[80];		/* a module_dir with no module */
static char	 mod_dir[PATH_MAX];	/* where hookrec.so was built */
/* CPUs this process may run on (the same one twice on a one-CPU box), and
 * one it may not (-1 when every CPU number is allowed). */
static int	 cpu_a, cpu_b, cpu_off;

static void
conf_pick_cpus(void)
{
	cpu_set_t	 set;
	int		 cpu, n = 0;

	cpu_a = cpu_b = 0;
	cpu_off = -1;
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set)) {
			if (cpu_off < 0)
				cpu_off = cpu;
			continue;
		}
		if (n == 0)
			cpu_a = cpu_b = cpu;
		else if (n == 1)
			cpu_b = cpu;
		n++;
	}
}

static int
conf_suite_init(void)
{
	const char	*env;

	snprintf(conf_dir, sizeof(conf_dir), "/tmp/pt-unit-conf-XXXXXX");
	if (mkdtemp(conf_dir) == NULL)
		return -1;
	snprintf(empty_dir, sizeof(empty_dir), "%s/empty", conf_dir);
	if (mkdir(empty_dir, 0755) < 0)
		return -1;
	env = getenv("PT_TESTMODDIR");
	snprintf(mod_dir, sizeof(mod_dir), "%s",
	    env != NULL && env[0] != '\0' ? env : "t/modules/.libs");
	conf_pick_cpus();
	return 0;
}

/* Removes <dir> and what the tests put in it (files, one level of
 * directories). */
static void
conf_rm_tree(const char *dir)
{
	char		 path[PATH_MAX];
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			conf_rm_tree(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static int
conf_suite_fini(void)
{
	conf_rm_tree(conf_dir);
	/* Loaded modules stay mapped for the process's life otherwise. */
	modload_close_all();
	return 0;
}

/* Writes <text> to <name> in the suite directory; the path goes to
 * <path_out> (PATH_MAX bytes). */
static int
conf_write(const char *name, const char *text, char *path_out)
{
	FILE	*f;
	int	 rc;

	snprintf(path_out, PATH_MAX, "%s/%s", conf_dir, name);
	if ((f = fopen(path_out, "we")) == NULL)
		return -1;
	rc = fputs(text, f) < 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* Formats a configuration text (for paths known only at run time). */
static const char * __attribute__((format(printf, 1, 2)))
conf_text(const char *fmt, ...)
{
	static char	 text[TEXT_MAX];
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return text;
}

/* Loads <text>; on failure records why and returns NULL. */
#define LOAD_OK(text)	conf_load_ok(__FILE__, __LINE__, (text))

static struct pt_config *
conf_load_ok(const char *file, unsigned at, const char *text)
{
	struct pt_config	*conf;
	char			 path[PATH_MAX], err[CONF_ERRSZ] = "";

	if (!CHECKF_AT(file, at, conf_write("good.conf", text, path) == 0,
	    "cannot write %s/good.conf", conf_dir))
		return NULL;
	conf = conf_load(path, err);
	CHECKF_AT(file, at, conf != NULL, "refused: %s", err);
	return conf;
}

/*
 * Loads <text>, which must be refused with an error that starts with
 * "FILE:<line>: " (just "FILE: " when <line> is 0) and contains <needle>.
 */
#define EXPECT_CONF_ERROR(text, line, needle)				\
	conf_expect_error(__FILE__, __LINE__, (text), (line), (needle))

static void
conf_expect_error(const char *file, unsigned at, const char *text, int line,
    const char *needle)
{
	struct pt_config	*conf;
	char			 path[PATH_MAX], prefix[PATH_MAX + 16];
	char			 err[CONF_ERRSZ] = "";

	if (!CHECKF_AT(file, at, conf_write("bad.conf", text, path) == 0,
	    "cannot write %s/bad.conf", conf_dir))
		return;
	conf = conf_load(path, err);
	if (!CHECKF_AT(file, at, conf == NULL, "accepted; want line %d: %s",
	    line, needle)) {
		conf_free(conf);
		return;
	}
	if (line > 0)
		snprintf(prefix, sizeof(prefix), "%s:%d: ", path, line);
	else
		snprintf(prefix, sizeof(prefix), "%s: ", path);
	CHECKF_AT(file, at, strncmp(err, prefix, strlen(prefix)) == 0,
	    "error \"%s\" does not start with \"%s\"", err, prefix);
	CHECKF_AT(file, at, strstr(err, needle) != NULL,
	    "error \"%s\" lacks \"%s\"", err, needle);
}

static const char *
conf_addr_fmt(const struct pt_addr *a, char *buf)
{
	return sockaddr_fmt((const struct sockaddr *)&a->sa, buf,
	    SOCKADDR_STRLEN);
}

/* ---- what a good file turns into ------------------------------------- */

static void
test_conf_parses_every_option(void)
{
	struct pt_config	*conf;
	char			 buf[SOCKADDR_STRLEN], want[PATH_MAX + 16];

	conf = LOAD_OK(conf_text(
	    "workers = 2;\n"						/* 1 */
	    "cpu_affinity = [%d, %d];\n"
	    "user = \"root\";\n"
	    "group = \"root\";\n"
	    "pid_file = \"%s/portico.pid\";\n"				/* 5 */
	    "error_log = \"%s/error.log\";\n"
	    "log_level = \"debug\";\n"
	    "module_dir = \"%s\";\n"
	    "shutdown_timeout = 5;\n"
	    "limits = {\n"						/* 10 */
	    "	max_connections = 512;\n"
	    "	header_timeout = 7;\n"
	    "	connect_timeout = 3;\n"
	    "	idle_timeout = 60;\n"
	    "};\n"							/* 15 */
	    "relay = {\n"
	    "	method = \"copy\";\n"
	    "	buffer_size = 8192;\n"
	    "};\n"
	    "listeners = (\n"						/* 20 */
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"tcp\";\n"
	    "	  to = \"127.0.0.1:9\"; backlog = 128; },\n"
	    "	{ address = \"[::1]:18081\"; protocol = \"tcp\";\n"
	    "	  to = \"[::1]:9\"; }\n"
	    ");\n", cpu_a, cpu_b, conf_dir, conf_dir, empty_dir));	/* 25 */
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);

	CU_ASSERT_EQUAL(conf->workers, 2);
	CU_ASSERT_FALSE(conf->workers_auto);
	CU_ASSERT_TRUE(conf->pin);
	CU_ASSERT_EQUAL(conf->cpus[0], cpu_a);
	CU_ASSERT_EQUAL(conf->cpus[1], cpu_b);
	CU_ASSERT_STRING_EQUAL(conf->user, "root");
	CU_ASSERT_STRING_EQUAL(conf->group, "root");
	CU_ASSERT_EQUAL(conf->uid, 0);
	CU_ASSERT_EQUAL(conf->gid, 0);
	snprintf(want, sizeof(want), "%s/portico.pid", conf_dir);
	CU_ASSERT_STRING_EQUAL(conf->pid_file, want);
	snprintf(want, sizeof(want), "%s/error.log", conf_dir);
	CU_ASSERT_STRING_EQUAL(conf->error_log, want);
	CU_ASSERT_EQUAL(conf->log_level, PT_LOG_DEBUG);
	CU_ASSERT_STRING_EQUAL(conf->module_dir, empty_dir);
	CU_ASSERT_EQUAL(conf->shutdown_timeout_ms, 5000);

	CU_ASSERT_EQUAL(conf->limits.max_connections, 512);
	CU_ASSERT_EQUAL(conf->limits.header_timeout_ms, 7000);
	CU_ASSERT_EQUAL(conf->limits.connect_timeout_ms, 3000);
	CU_ASSERT_EQUAL(conf->limits.idle_timeout_ms, 60000);
	CU_ASSERT_EQUAL(conf->relay, CONF_RELAY_COPY);
	CU_ASSERT_EQUAL(conf->buffer_size, 8192);

	CU_ASSERT_EQUAL_FATAL(conf->nlisteners, 2);
	CU_ASSERT_STRING_EQUAL(conf->listeners[0].address, "127.0.0.1:18080");
	CU_ASSERT_STRING_EQUAL(conf_addr_fmt(&conf->listeners[0].addr, buf),
	    "127.0.0.1:18080");
	CU_ASSERT_EQUAL(conf->listeners[0].proto, CONF_PROTO_TCP);
	CU_ASSERT_STRING_EQUAL(conf->listeners[0].to, "127.0.0.1:9");
	CU_ASSERT_STRING_EQUAL(conf_addr_fmt(&conf->listeners[0].to_addr, buf),
	    "127.0.0.1:9");
	CU_ASSERT_EQUAL(conf->listeners[0].backlog, 128);
	CU_ASSERT_EQUAL(conf->listeners[0].line, 21);

	CU_ASSERT_STRING_EQUAL(conf->listeners[1].address, "[::1]:18081");
	CU_ASSERT_EQUAL(conf->listeners[1].addr.sa.ss_family, AF_INET6);
	CU_ASSERT_STRING_EQUAL(conf_addr_fmt(&conf->listeners[1].addr, buf),
	    "[::1]:18081");
	CU_ASSERT_STRING_EQUAL(conf_addr_fmt(&conf->listeners[1].to_addr, buf),
	    "[::1]:9");
	CU_ASSERT_EQUAL(conf->listeners[1].backlog, 4096);
	CU_ASSERT_EQUAL(conf->listeners[1].line, 23);
	CU_ASSERT_EQUAL(conf->nmodules, 0);
	conf_free(conf);
}

/* Writes <text> to <rel> under the suite directory, making the
 * directories on the way (a fake cgroup tree). */
static void
conf_put(const char *rel, const char *text)
{
	char	 path[PATH_MAX], *p;
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", conf_dir, rel);
	for (p = path + strlen(conf_dir) + 1; (p = strchr(p, '/')) != NULL;
	    p++) {
		*p = '\0';
		(void)mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* cgroup_cpu_limit of the fake /proc/self/cgroup <proc> over the fake
 * /sys/fs/cgroup in <root> (both under the suite directory). */
static int
conf_cg_limit(const char *proc, const char *root)
{
	char	 p[PATH_MAX], r[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", conf_dir, proc);
	snprintf(r, sizeof(r), "%s/%s", conf_dir, root);
	return cgroup_cpu_limit(p, r);
}

static void
test_conf_cgroup_v2_quota_of_own_cgroup_and_ancestors(void)
{
	/* systemd: CPUQuota=150% on the slice, none on the unit. */
	conf_put("v2/proc", "0::/system.slice/portico.service\n");
	conf_put("v2/sys/cpu.max", "max 100000\n");
	conf_put("v2/sys/system.slice/cpu.max", "150000 100000\n");
	conf_put("v2/sys/system.slice/portico.service/cpu.max",
	    "max 100000\n");
	CU_ASSERT_EQUAL(conf_cg_limit("v2/proc", "v2/sys"), 2);
	/* The unit's own, tighter, wins. */
	conf_put("v2/sys/system.slice/portico.service/cpu.max",
	    "50000 100000\n");
	CU_ASSERT_EQUAL(conf_cg_limit("v2/proc", "v2/sys"), 1);
	/* A container with a cgroup namespace: its root file. */
	conf_put("v2ns/proc", "0::/\n");
	conf_put("v2ns/sys/cpu.max", "400000 100000\n");
	CU_ASSERT_EQUAL(conf_cg_limit("v2ns/proc", "v2ns/sys"), 4);
	/* No quota anywhere. */
	conf_put("v2none/proc", "0::/a\n");
	conf_put("v2none/sys/cpu.max", "max 100000\n");
	conf_put("v2none/sys/a/cpu.max", "max 100000\n");
	CU_ASSERT_EQUAL(conf_cg_limit("v2none/proc", "v2none/sys"), 0);
}

static void
test_conf_cgroup_v1_quota_and_missing_paths(void)
{
	/* Docker on cgroup v1: a cpu,cpuacct line, three CPUs' worth. */
	conf_put("v1/proc", "12:memory:/docker/abc\n"
	    "4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n");
	conf_put("v1/sys/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	conf_put("v1/sys/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
	conf_put("v1/sys/cpu,cpuacct/docker/abc/cpu.cfs_quota_us",
	    "250000\n");
	conf_put("v1/sys/cpu,cpuacct/docker/abc/cpu.cfs_period_us",
	    "100000\n");
	CU_ASSERT_EQUAL(conf_cg_limit("v1/proc", "v1/sys"), 3);
	/* Without a cgroup namespace the host's path does not exist in the
	 * container: its own cgroup is the mount's root. */
	conf_put("v1host/proc", "4:cpu,cpuacct:/docker/abc\n");
	conf_put("v1host/sys/cpu/cpu.cfs_quota_us", "100000\n");
	conf_put("v1host/sys/cpu/cpu.cfs_period_us", "100000\n");
	CU_ASSERT_EQUAL(conf_cg_limit("v1host/proc", "v1host/sys"), 1);
	/* Unlimited (-1), an unreadable file, no file at all: no limit. */
	conf_put("v1none/proc", "2:cpu:/\n3:cpuacct:/\n");
	conf_put("v1none/sys/cpu/cpu.cfs_quota_us", "-1\n");
	conf_put("v1none/sys/cpu/cpu.cfs_period_us", "100000\n");
	CU_ASSERT_EQUAL(conf_cg_limit("v1none/proc", "v1none/sys"), 0);
	conf_put("garbage/proc", "nonsense\n::\n5:cpu:relative\n");
	CU_ASSERT_EQUAL(conf_cg_limit("garbage/proc", "garbage/sys"), 0);
	CU_ASSERT_EQUAL(conf_cg_limit("absent/proc", "absent/sys"), 0);
}

static void
test_conf_applies_defaults_when_options_absent(void)
{
	struct pt_config	*conf;
	int			 cpus[CONF_MAX_WORKERS], n, i;

	conf = LOAD_OK(LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	n = conf_usable_cpus(cpus, CONF_MAX_WORKERS);
	CU_ASSERT_TRUE(conf->workers_auto);
	CU_ASSERT_EQUAL(conf->workers, n);
	CU_ASSERT_TRUE(conf->pin);
	for (i = 0; i < conf->workers; i++)
		CHECKF(conf->cpus[i] == cpus[i % n], "slot %d on CPU %d, "
		    "want %d", i, conf->cpus[i], cpus[i % n]);
	CU_ASSERT_PTR_NULL(conf->user);
	CU_ASSERT_PTR_NULL(conf->group);
	CU_ASSERT_EQUAL(conf->uid, (uid_t)-1);
	CU_ASSERT_EQUAL(conf->gid, (gid_t)-1);
	CU_ASSERT_PTR_NULL(conf->pid_file);
	CU_ASSERT_STRING_EQUAL(conf->error_log, "stderr");
	CU_ASSERT_EQUAL(conf->log_level, PT_LOG_NOTICE);
	CU_ASSERT_STRING_EQUAL(conf->module_dir, PT_MODULEDIR);
	CU_ASSERT_EQUAL(conf->shutdown_timeout_ms, 30000);
	CU_ASSERT_EQUAL(conf->limits.max_connections, 10000);
	CU_ASSERT_EQUAL(conf->limits.header_timeout_ms, 10000);
	CU_ASSERT_EQUAL(conf->limits.connect_timeout_ms, 10000);
	CU_ASSERT_EQUAL(conf->limits.idle_timeout_ms, 300000);
	CU_ASSERT_EQUAL(conf->http.response_timeout_ms, 60000);
	CU_ASSERT_PTR_NULL(conf->resolver.servers);
	CU_ASSERT_EQUAL(conf->relay, CONF_RELAY_AUTO);
	CU_ASSERT_EQUAL(conf->buffer_size, 16384);
	CU_ASSERT_EQUAL_FATAL(conf->nlisteners, 1);
	CU_ASSERT_EQUAL(conf->listeners[0].backlog, 4096);
	CU_ASSERT_EQUAL(conf->nmodules, 0);
	conf_free(conf);
}

static void
test_conf_parses_response_timeout(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK("http = { response_timeout = 5; };\n" LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_EQUAL(conf->http.response_timeout_ms, 5000);
	conf_free(conf);
	conf = LOAD_OK("http = { response_timeout = 86400; };\n" LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_EQUAL(conf->http.response_timeout_ms, 86400000);
	conf_free(conf);
}

/*
 * Integers libconfig 1.5 would wrap (master/conf_ints.c): refused with
 * the file and line they are on, an @included file's own; with an L
 * suffix, or inside a string or a comment, or as a float, they pass.
 */
static void
test_conf_refuses_wrapping_integers(void)
{
	struct pt_config	*conf;
	char			 path[PATH_MAX], inc[PATH_MAX], want[PATH_MAX + 8];
	char			 err[CONF_ERRSZ] = "";

	EXPECT_CONF_ERROR(LISTENER "shutdown_timeout =\n 4294967326;\n", 3,
	    "4294967326 does not fit a plain integer");
	EXPECT_CONF_ERROR(LISTENER "shutdown_timeout = -2147483649;\n", 2,
	    "write it with an L suffix, -2147483649L");
	EXPECT_CONF_ERROR(LISTENER "shutdown_timeout = 0x100000000;\n", 2,
	    "0x100000000 does not fit");
	/* Not integers, or 64-bit ones: libconfig reads them right (the
	 * L one is then out of shutdown_timeout's range, said as such). */
	conf = LOAD_OK(LISTENER "# 4294967296 in a comment\n"
	    "/* 99999999999 */ error_log = \"stderr\"; // 12345678901\n"
	    "module_dir = \"/x/4294967296\"; shutdown_timeout = 30;\n");
	CU_ASSERT_PTR_NOT_NULL(conf);
	conf_free(conf);
	EXPECT_CONF_ERROR(LISTENER "shutdown_timeout = 4294967326L;\n", 2,
	    "4294967326 out of range");
	/* A number in an @included file: that file and line. */
	CU_ASSERT_FATAL(conf_write("ints.inc", "\n shutdown_timeout = "
	    "4294967326;\n", inc) == 0);
	CU_ASSERT_FATAL(conf_write("ints.conf", LISTENER
	    "@include \"ints.inc\"\n", path) == 0);
	conf = conf_load(path, err);
	CU_ASSERT_PTR_NULL(conf);
	conf_free(conf);
	snprintf(want, sizeof(want), "%s:2: ", inc);
	CHECKF(strncmp(err, want, strlen(want)) == 0, "error \"%s\", want "
	    "\"%s...\"", err, want);
}

/* max_ttl = 0 alone turns the cache off (min_ttl gives way); with a
 * min_ttl written out it is still the error it says. */
static void
test_conf_max_ttl_zero_alone(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK("resolver = { max_ttl = 0; };\n" LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_EQUAL(conf->resolver.max_ttl, 0);
	CU_ASSERT_EQUAL(conf->resolver.min_ttl, 0);
	conf_free(conf);
	EXPECT_CONF_ERROR("resolver = { min_ttl = 5;\n max_ttl = 0; };\n"
	    LISTENER, 2, "less than min_ttl (5)");
}

static void
test_conf_rejects_bad_response_timeout(void)
{
	EXPECT_CONF_ERROR("http = {\n\tresponse_timeout = 0;\n};\n" LISTENER,
	    2, "response_timeout: 0 out of range (1-86400)");
	EXPECT_CONF_ERROR("\nhttp = { response_timeout = 86401; };\n"
	    LISTENER, 2, "response_timeout: 86401 out of range (1-86400)");
	EXPECT_CONF_ERROR("http = {\n\tresponse_timeout = \"60\";\n};\n"
	    LISTENER, 2, "response_timeout: expected an integer");
	EXPECT_CONF_ERROR("http = {\n\n\tresponse_timeout = 1.5;\n};\n"
	    LISTENER, 3, "response_timeout: expected an integer");
	EXPECT_CONF_ERROR("http = {\n\tresponse_timout = 60;\n};\n"
	    LISTENER, 2, "response_timout: unknown option");
}

/*
 * resolver.servers is rewritten into the form c-ares reads without
 * ambiguity, and what workers get is what c-ares makes of it: the same
 * addresses and ports the file names.
 */
static void
test_conf_rewrites_resolver_servers_for_c_ares(void)
{
	static const char *const want[] = {
		"127.0.0.1:53", "[::1]:5353", "[2001:db8::53]:53",
		"192.0.2.1:65535"
	};
	struct pt_config	*conf;
	struct pt_addr		 got[8];
	char			 buf[SOCKADDR_STRLEN];
	const char		*why;
	int			 n, i;

	conf = LOAD_OK("resolver = { servers = \" 127.0.0.1 , [::1]:5353,"
	    "[2001:db8::53],192.0.2.1:065535\"; };\n" LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_STRING_EQUAL(conf->resolver.servers, "127.0.0.1:53,"
	    "[::1]:5353,[2001:db8::53]:53,192.0.2.1:65535");
	CU_ASSERT_EQUAL_FATAL(dns_servers_probe(conf->resolver.servers, got,
	    8, &n, &why), 0);
	CU_ASSERT_EQUAL_FATAL(n, 4);
	for (i = 0; i < n; i++)
		CHECKF(strcmp(sockaddr_fmt((const struct sockaddr *)&got[i].sa,
		    buf, sizeof(buf)), want[i]) == 0, "server %d: c-ares "
		    "reads %s, want %s", i, buf, want[i]);
	conf_free(conf);
	/* As written, c-ares would have refused this one in every worker. */
	CU_ASSERT_EQUAL(dns_servers_probe("[::1]", got, 8, &n, &why), -1);
}

static void
test_conf_rejects_bad_resolver_servers(void)
{
	static const struct {
		const char	*servers, *needle;
	} bad[] = {
		/* c-ares takes these, and not as meant */
		{ "1.2.3", "entry 1 \"1.2.3\": not a numeric IPv4" },
		{ "127.1", "not a numeric IPv4 or [IPv6] address" },
		{ "1.2.3.4:99999", "port out of range (1-65535)" },
		{ "1.2.3.4:0", "port out of range (1-65535)" },
		{ "::1:53", "IPv6 address must be in brackets" },
		{ "a[::1]:53", "IPv6 address must be in brackets" },
		{ "1.2.3.4,", "entry 2 is empty" },
		/* c-ares refuses these: every worker would exit */
		{ "1.2.3.4:", "entry 1 \"1.2.3.4:\": missing or invalid port" },
		{ "8.8.8.8,,1.1.1.1", "entry 2 is empty" },
		{ ",8.8.8.8", "entry 1 is empty" },
		{ "[1.2.3.4]:53", "brackets around an IPv4 address" },
		{ "[::1]x:53", "expected \":port\" after \"]\"" },
		{ "[::1", "\"[\" without \"]\"" },
		{ "[::1]:", "missing or invalid port" },
		{ "1.2.3.4:+53", "missing or invalid port" },
		{ "localhost", "not a numeric IPv4 or [IPv6] address" },
		{ "8.8.8.8;1.1.1.1", "entry 1 \"8.8.8.8;1.1.1.1\"" },
		{ "8.8.8.8 1.1.1.1", "not a numeric IPv4 or [IPv6] address" },
		{ "[fe80::1%lo]:53", "not a numeric IPv4 or [IPv6] address" },
		{ "192.0.2.1, 192.0.2.2:5x3", "entry 2 \"192.0.2.2:5x3\"" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_CONF_ERROR(conf_text("resolver = {\n\tcache_size = 10;"
		    "\n\tservers = \"%s\";\n};\n" LISTENER, bad[i].servers), 3,
		    bad[i].needle);
	EXPECT_CONF_ERROR("resolver = { servers = \"\"; };\n" LISTENER, 1,
	    "servers: must not be empty");
	EXPECT_CONF_ERROR("resolver = {\n\tservers = [\"1.2.3.4\"];\n};\n"
	    LISTENER, 2, "servers: expected a string");
}

static void
test_conf_workers_auto_counts_usable_cpus(void)
{
	struct pt_config	*conf;
	int			 cpus[CONF_MAX_WORKERS], n;

	conf = LOAD_OK("workers = \"auto\";\ncpu_affinity = \"auto\";\n"
	    LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	n = conf_usable_cpus(cpus, CONF_MAX_WORKERS);
	CU_ASSERT(n >= 1);
	CU_ASSERT_TRUE(conf->workers_auto);
	CU_ASSERT_EQUAL(conf->workers, n);
	CU_ASSERT_EQUAL(conf->cpus[0], cpus[0]);
	CU_ASSERT_EQUAL(conf->cpus[n - 1], cpus[n - 1]);
	conf_free(conf);
}

static void
test_conf_cpu_affinity_none_disables_pinning(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK("workers = 3;\ncpu_affinity = \"none\";\n" LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_EQUAL(conf->workers, 3);
	CU_ASSERT_FALSE(conf->pin);
	conf_free(conf);
}

static void
test_conf_cpu_list_shorter_than_workers_wraps(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK(conf_text("workers = 5;\ncpu_affinity = [%d, %d];\n"
	    LISTENER, cpu_b, cpu_a));
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_TRUE(conf->pin);
	CU_ASSERT_EQUAL(conf->cpus[0], cpu_b);
	CU_ASSERT_EQUAL(conf->cpus[1], cpu_a);
	CU_ASSERT_EQUAL(conf->cpus[2], cpu_b);
	CU_ASSERT_EQUAL(conf->cpus[3], cpu_a);
	CU_ASSERT_EQUAL(conf->cpus[4], cpu_b);
	conf_free(conf);
}

static void
test_conf_accepts_range_limits(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK(
	    "workers = 256;\n"
	    "shutdown_timeout = 0;\n"
	    "limits = { max_connections = 1000000; header_timeout = 86400;\n"
	    "	connect_timeout = 1; idle_timeout = 604800; };\n"
	    "relay = { method = \"splice\"; buffer_size = 1048576; };\n"
	    "listeners = ( { address = \"*:65535\"; protocol = \"tcp\";\n"
	    "	to = \"127.0.0.1:1\"; backlog = 65535; } );\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_EQUAL(conf->workers, 256);
	CU_ASSERT_EQUAL(conf->shutdown_timeout_ms, 0);
	CU_ASSERT_EQUAL(conf->limits.max_connections, 1000000);
	CU_ASSERT_EQUAL(conf->limits.header_timeout_ms, 86400000u);
	CU_ASSERT_EQUAL(conf->limits.connect_timeout_ms, 1000);
	CU_ASSERT_EQUAL(conf->limits.idle_timeout_ms, 604800000u);
	CU_ASSERT_EQUAL(conf->relay, CONF_RELAY_SPLICE);
	CU_ASSERT_EQUAL(conf->buffer_size, 1048576);
	CU_ASSERT_EQUAL(conf->listeners[0].backlog, 65535);
	conf_free(conf);
}

static void
test_conf_tcp_migrate_req_defaults_to_true(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK(LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_TRUE(conf->tcp_migrate_req);
	conf_free(conf);
	conf = LOAD_OK("tcp_migrate_req = false;\n" LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_FALSE(conf->tcp_migrate_req);
	conf_free(conf);
	EXPECT_CONF_ERROR("\ntcp_migrate_req = 1;\n" LISTENER, 2,
	    "tcp_migrate_req: expected true or false");
}

static void
test_conf_accepts_warning_as_log_level(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK("log_level = \"warning\";\n" LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_EQUAL(conf->log_level, PT_LOG_WARNING);
	conf_free(conf);
}

/* ---- refusals, each at its line -------------------------------------- */

static void
test_conf_rejects_syntax_error(void)
{
	EXPECT_CONF_ERROR(
	    "workers = 2;\n"
	    "shutdown_timeout = 5;\n"
	    "relay = { method = \"copy\"; ];\n"				/* 3 */
	    LISTENER, 3, "syntax error");
	EXPECT_CONF_ERROR(
	    "workers = 2;\n"
	    "\n"
	    "log_level = ;\n"						/* 3 */
	    LISTENER, 3, "syntax error");
}

static void
test_conf_rejects_duplicate_setting(void)
{
	EXPECT_CONF_ERROR("workers = 2;\nworkers = 3;\n" LISTENER, 2,
	    "duplicate");
}

static void
test_conf_rejects_unreadable_file(void)
{
	char	 path[PATH_MAX], err[CONF_ERRSZ] = "";

	snprintf(path, sizeof(path), "%s/does-not-exist.conf", conf_dir);
	CU_ASSERT_PTR_NULL(conf_load(path, err));
	CU_ASSERT_EQUAL(strncmp(err, path, strlen(path)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot read"));
}

static void
test_conf_rejects_unknown_root_key(void)
{
	EXPECT_CONF_ERROR(
	    "workers = 2;\n"
	    "wrokers = 2;\n"						/* 2 */
	    LISTENER, 2, "wrokers: unknown option");
}

static void
test_conf_rejects_unknown_listener_key(void)
{
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\";\n"
	    "	  protocol = \"tcp\";\n"
	    "	  to = \"127.0.0.1:9\";\n"
	    "	  tls = true; }\n"					/* 5 */
	    ");\n", 5, "tls: unknown option");
}

/* http2_max_streams: 1 to 1000, 100 when absent, web listeners only. */
static void
test_conf_http2_max_streams(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK("listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"http\"; },\n"
	    "	{ address = \"127.0.0.1:18081\"; protocol = \"auto\";\n"
	    "	  http2_max_streams = 7; }\n"
	    ");\n");
	if (conf != NULL) {
		CU_ASSERT_EQUAL(conf->listeners[0].http2_max_streams, 100);
		CU_ASSERT_EQUAL(conf->listeners[1].http2_max_streams, 7);
		conf_free(conf);
	}
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"http\";\n"
	    "	  http2_max_streams = 1001; }\n"			/* 3 */
	    ");\n", 3, "1001 out of range (1-1000)");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"tcp\";\n"
	    "	  to = \"127.0.0.1:9\";\n"
	    "	  http2_max_streams = 10; }\n"			/* 4 */
	    ");\n", 4, "http2_max_streams: only for protocol");
}

static void
test_conf_rejects_unknown_limits_key(void)
{
	EXPECT_CONF_ERROR(
	    "limits = {\n"
	    "	max_connections = 10;\n"
	    "	max_conns = 10;\n"					/* 3 */
	    "};\n" LISTENER, 3, "max_conns: unknown option");
}

static void
test_conf_rejects_unknown_relay_key(void)
{
	EXPECT_CONF_ERROR(
	    "relay = {\n"
	    "	mode = \"copy\";\n"					/* 2 */
	    "};\n" LISTENER, 2, "mode: unknown option");
}

static void
test_conf_rejects_wrong_types(void)
{
	EXPECT_CONF_ERROR("\nworkers = \"two\";\n" LISTENER, 2,
	    "expected an integer or \"auto\"");
	EXPECT_CONF_ERROR("\n\nshutdown_timeout = \"30\";\n" LISTENER, 3,
	    "shutdown_timeout: expected an integer");
	EXPECT_CONF_ERROR("limits = {\n\tidle_timeout = 1.5;\n};\n" LISTENER,
	    2, "idle_timeout: expected an integer");
	EXPECT_CONF_ERROR("log_level = 7;\n" LISTENER, 1,
	    "log_level: expected a string");
	EXPECT_CONF_ERROR("error_log = true;\n" LISTENER, 1,
	    "error_log: expected a string");
	EXPECT_CONF_ERROR("relay = {\n\tmethod = 1;\n};\n" LISTENER, 2,
	    "method: expected a string");
	EXPECT_CONF_ERROR("relay = \"copy\";\n" LISTENER, 1,
	    "expected a group");
	EXPECT_CONF_ERROR("limits = [1];\n" LISTENER, 1, "expected a group");
	EXPECT_CONF_ERROR("cpu_affinity = 1;\n" LISTENER, 1,
	    "list of CPU numbers");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = 18080; protocol = \"tcp\";\n"		/* 2 */
	    "	  to = \"127.0.0.1:9\"; }\n"
	    ");\n", 2, "address: expected a string");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"tcp\";\n"
	    "	  to = \"127.0.0.1:9\";\n"
	    "	  backlog = \"big\"; }\n"				/* 4 */
	    ");\n", 4, "backlog: expected an integer");
	EXPECT_CONF_ERROR("listeners = { address = \"127.0.0.1:1\"; };\n", 1,
	    "expected a list");
}

static void
test_conf_rejects_out_of_range_values(void)
{
	EXPECT_CONF_ERROR("workers = 0;\n" LISTENER, 1,
	    "workers: 0 out of range");
	EXPECT_CONF_ERROR("\nworkers = 257;\n" LISTENER, 2,
	    "workers: 257 out of range");
	EXPECT_CONF_ERROR("shutdown_timeout = -1;\n" LISTENER, 1,
	    "shutdown_timeout: -1 out of range");
	EXPECT_CONF_ERROR("limits = {\n\tmax_connections = 0;\n};\n" LISTENER,
	    2, "max_connections: 0 out of range");
	EXPECT_CONF_ERROR("limits = {\n\theader_timeout = 86401;\n};\n"
	    LISTENER, 2, "header_timeout: 86401 out of range");
	EXPECT_CONF_ERROR("relay = {\n\tbuffer_size = 1024;\n};\n" LISTENER,
	    2, "buffer_size: 1024 out of range");
	EXPECT_CONF_ERROR(conf_text("cpu_affinity = [%d, -1];\n" LISTENER,
	    cpu_a), 1, "element 2");
	EXPECT_CONF_ERROR("cpu_affinity = [];\n" LISTENER, 1,
	    "empty CPU list");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:70000\";\n"			/* 2 */
	    "	  protocol = \"tcp\"; to = \"127.0.0.1:9\"; }\n"
	    ");\n", 2, "port out of range");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:0\";\n"				/* 2 */
	    "	  protocol = \"tcp\"; to = \"127.0.0.1:9\"; }\n"
	    ");\n", 2, "port out of range");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"tcp\";\n"
	    "	  to = \"127.0.0.1:9\"; backlog = 0; }\n"		/* 3 */
	    ");\n", 3, "backlog: 0 out of range");
}

/* Pinning a worker to a CPU it may not use would fail only after fork. */
static void
test_conf_rejects_cpu_outside_affinity(void)
{
	char	 want[64];

	/* Only a machine using all CPU_SETSIZE CPU numbers has none left
	 * over: not one this runs on. Failing beats passing untried. */
	if (!CHECKF(cpu_off >= 0, "no CPU number outside the affinity mask "
	    "to try"))
		return;
	snprintf(want, sizeof(want), "CPU %d is not available", cpu_off);
	EXPECT_CONF_ERROR(conf_text("workers = 2;\n"
	    "cpu_affinity = [%d, %d];\n" LISTENER, cpu_a, cpu_off), 2, want);
}

static void
test_conf_rejects_unknown_log_level(void)
{
	EXPECT_CONF_ERROR("\nlog_level = \"loud\";\n" LISTENER, 2,
	    "expected error, warn, notice, info or debug");
}

static void
test_conf_rejects_unknown_relay_method(void)
{
	EXPECT_CONF_ERROR("relay = {\n\tmethod = \"sendfile\";\n};\n"
	    LISTENER, 2, "expected \"auto\", \"splice\" or \"copy\"");
}

static void
test_conf_relay_auto(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK("relay = { method = \"auto\"; };\n" LISTENER);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf);
	CU_ASSERT_EQUAL(conf->relay, CONF_RELAY_AUTO);
	conf_free(conf);
}

static void
test_conf_rejects_unparsable_address(void)
{
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ protocol = \"tcp\"; to = \"127.0.0.1:9\";\n"
	    "	  address = \"localhost:18080\"; }\n"			/* 3 */
	    ");\n", 3, "\"localhost:18080\": not a numeric");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1\";\n"				/* 2 */
	    "	  protocol = \"tcp\"; to = \"127.0.0.1:9\"; }\n"
	    ");\n", 2, "host:port");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"\";\n"					/* 2 */
	    "	  protocol = \"tcp\"; to = \"127.0.0.1:9\"; }\n"
	    ");\n", 2, "must not be empty");
}

static void
test_conf_rejects_ipv6_without_brackets(void)
{
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\";\n"
	    "	  protocol = \"tcp\"; to = \"127.0.0.1:9\"; },\n"
	    "	{ address = \"::1:18080\";\n"				/* 4 */
	    "	  protocol = \"tcp\"; to = \"127.0.0.1:9\"; }\n"
	    ");\n", 4, "brackets");
}

static void
test_conf_rejects_duplicate_listener(void)
{
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"tcp\";\n"	/* 2 */
	    "	  to = \"127.0.0.1:9\"; },\n"
	    "	{ address = \"[::1]:18080\"; protocol = \"tcp\";\n"
	    "	  to = \"127.0.0.1:9\"; },\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"tcp\";\n"	/* 6 */
	    "	  to = \"127.0.0.1:10\"; }\n"
	    ");\n", 6, "duplicate listener \"127.0.0.1:18080\" "
	    "(first at line 2)");
	/* Same socket address written two ways. */
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"*:18080\"; protocol = \"tcp\";\n"	/* 2 */
	    "	  to = \"127.0.0.1:9\"; },\n"
	    "	{ address = \"0.0.0.0:18080\"; protocol = \"tcp\";\n"	/* 4 */
	    "	  to = \"127.0.0.1:9\"; }\n"
	    ");\n", 4, "duplicate listener");
}

static void
test_conf_rejects_listener_missing_address(void)
{
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"tcp\";\n"
	    "	  to = \"127.0.0.1:9\"; },\n"
	    "	{ protocol = \"tcp\"; to = \"127.0.0.1:9\"; }\n"	/* 4 */
	    ");\n", 4, "listener: missing \"address\"");
}

static void
test_conf_rejects_listener_missing_protocol(void)
{
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{\n"							/* 2 */
	    "	  address = \"127.0.0.1:18080\";\n"
	    "	  to = \"127.0.0.1:9\";\n"
	    "	}\n"
	    ");\n", 2, "listener: missing \"protocol\"");
}

static void
test_conf_rejects_tcp_listener_missing_to(void)
{
	EXPECT_CONF_ERROR(
	    "\n"
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\";\n"			/* 3 */
	    "	  protocol = \"tcp\"; }\n"
	    ");\n", 3, "needs \"to\"");
}

static void
test_conf_rejects_unresolvable_to(void)
{
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\"; protocol = \"tcp\";\n"
	    "	  to = \"127.0.0.1\"; }\n"				/* 3 */
	    ");\n", 3, "\"127.0.0.1\": expected \"host:port\"");
}

static void
test_conf_rejects_unknown_protocol(void)
{
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\";\n"
	    "	  protocol = \"ftp\"; }\n"				/* 3 */
	    ");\n", 3, "unknown protocol \"ftp\"");
	EXPECT_CONF_ERROR(
	    "listeners = (\n"
	    "	{ address = \"127.0.0.1:18080\";\n"
	    "	  protocol = 1; }\n"					/* 3 */
	    ");\n", 3, "protocol: expected a string");
}

static void
test_conf_rejects_missing_or_empty_listeners(void)
{
	EXPECT_CONF_ERROR("workers = 1;\n", 0, "no \"listeners\"");
	EXPECT_CONF_ERROR("workers = 1;\nlisteners = ();\n", 2,
	    "empty list");
}

static void
test_conf_rejects_unknown_user(void)
{
	EXPECT_CONF_ERROR("\nuser = \"pt-no-such-user\";\n" LISTENER, 2,
	    "no such user \"pt-no-such-user\"");
	EXPECT_CONF_ERROR("\n\ngroup = \"pt-no-such-group\";\n" LISTENER, 3,
	    "no such group \"pt-no-such-group\"");
}

/* ---- modules, through the real loader -------------------------------- */

static void
test_conf_rejects_missing_module(void)
{
	EXPECT_CONF_ERROR(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"nosuch\"; }\n"				/* 4 */
	    ");\n", empty_dir), 4, "module \"nosuch\": cannot load");
	EXPECT_CONF_ERROR(conf_text(
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"nosuch\";\n"					/* 3 */
	    "	  path = \"%s/nosuch.so\"; }\n"
	    ");\n", empty_dir), 3, "cannot load");
}

static void
test_conf_rejects_module_without_name(void)
{
	EXPECT_CONF_ERROR(
	    LISTENER
	    "modules = (\n"
	    "	{ path = \"/nowhere/x.so\"; }\n"			/* 3 */
	    ");\n", 3, "module: missing \"name\"");
}

static void
test_conf_loads_module_and_runs_its_conf(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"hookrec\"; record = \"%s/record\";\n"	/* 4 */
	    "	  again_ms = 5; deny_phase = \"ACCESS\"; }\n"
	    ");\n", mod_dir, conf_dir));
	if (conf == NULL)
		return;
	CU_ASSERT_EQUAL_FATAL(conf->nmodules, 1);
	CU_ASSERT_STRING_EQUAL(conf->modules[0].name, "hookrec");
	CU_ASSERT_EQUAL(conf->modules[0].line, 4);
	CU_ASSERT_PTR_NOT_NULL_FATAL(conf->modules[0].mod);
	CU_ASSERT_STRING_EQUAL(conf->modules[0].mod->mod->name, "hookrec");
	CU_ASSERT_PTR_NOT_NULL(conf->modules[0].mod->mod->hooks);
	CU_ASSERT_PTR_NOT_NULL(conf->modules[0].ctx);
	conf_free(conf);
}

static void
test_conf_reports_module_conf_error_at_module_line(void)
{
	EXPECT_CONF_ERROR(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"hookrec\"; record = \"%s/record\";\n"	/* 4 */
	    "	  colour = \"blue\"; }\n"
	    ");\n", mod_dir, conf_dir), 4,
	    "module \"hookrec\": unknown option \"colour\"");
	EXPECT_CONF_ERROR(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"hookrec\"; }\n"				/* 4 */
	    ");\n", mod_dir), 4, "module \"hookrec\": record: required");
	EXPECT_CONF_ERROR(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"hookrec\"; record = \"%s/record\";\n"	/* 4 */
	    "	  again_ms = \"5\"; }\n"
	    ");\n", mod_dir, conf_dir), 4, "again_ms: expected an integer");
	EXPECT_CONF_ERROR(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"hookrec\"; record = \"%s/record\";\n"	/* 4 */
	    "	  deny_phase = \"LATER\"; }\n"
	    ");\n", mod_dir, conf_dir), 4, "unknown phase \"LATER\"");
}

/* Workers run the code loaded at start-up; another file under the same
 * name cannot replace it on reload. */
static void
test_conf_refuses_module_from_another_path_once_loaded(void)
{
	struct pt_config	*conf;

	conf = LOAD_OK(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = ( { name = \"hookrec\"; record = \"%s/record\"; } );\n",
	    mod_dir, conf_dir));
	conf_free(conf);
	EXPECT_CONF_ERROR(conf_text(
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"hookrec\"; record = \"%s/record\";\n"	/* 3 */
	    "	  path = \"%s/hookrec.so\"; }\n"
	    ");\n", conf_dir, empty_dir), 3, "needs a restart");
}

static void
test_conf_rejects_module_listed_twice(void)
{
	EXPECT_CONF_ERROR(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"hookrec\"; record = \"%s/record\"; },\n"	/* 4 */
	    "	{ name = \"hookrec\"; record = \"%s/record\"; }\n"	/* 5 */
	    ");\n", mod_dir, conf_dir, conf_dir), 5,
	    "listed twice (first at line 4)");
}

static void
test_conf_refuses_module_with_wrong_abi(void)
{
	char	 want[64];

	snprintf(want, sizeof(want), "ABI version %u.", PT_ABI_MAJOR + 98);
	EXPECT_CONF_ERROR(conf_text(
	    "module_dir = \"%s\";\n"
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"badabi\"; record = \"%s/record\"; }\n"	/* 4 */
	    ");\n", mod_dir, conf_dir), 4, want);
}

/* A worker's hook table holds MODLOAD_MAX_HOOKS per phase; beyond it,
 * or for a phase it does not know, workers would skip hooks. */
static void
test_conf_refuses_hooks_workers_cannot_run(void)
{
	char	 want[64];

	snprintf(want, sizeof(want), "more than %d hooks in phase %d",
	    MODLOAD_MAX_HOOKS, (int)PT_PHASE_ACCESS);
	EXPECT_CONF_ERROR(conf_text(
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"widehooks\"; path = \"%s/widehooks.so\"; }\n"
	    ");\n", mod_dir), 3, want);
	snprintf(want, sizeof(want), "hook 2 is for phase %d, which",
	    (int)PT_PHASE_COUNT);
	EXPECT_CONF_ERROR(conf_text(
	    LISTENER
	    "modules = (\n"
	    "\n"
	    "	{ name = \"oddphase\"; path = \"%s/widehooks.so\"; }\n"
	    ");\n", mod_dir), 4, want);
}

static void
test_conf_refuses_library_without_descriptor(void)
{
	EXPECT_CONF_ERROR(conf_text(
	    LISTENER
	    "modules = (\n"
	    "	{ name = \"other\";\n"					/* 3 */
	    "	  path = \"%s/hookrec.so\"; }\n"
	    ");\n", mod_dir), 3, "does not export pt_module_other");
}

void
register_conf_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("conf", conf_suite_init, conf_suite_fini))
	    == NULL)
		return;
	CU_add_test(s, "parses_every_option", test_conf_parses_every_option);
	CU_add_test(s, "applies_defaults_when_options_absent",
	    test_conf_applies_defaults_when_options_absent);
	CU_add_test(s, "cgroup_v2_quota_of_own_cgroup_and_ancestors",
	    test_conf_cgroup_v2_quota_of_own_cgroup_and_ancestors);
	CU_add_test(s, "cgroup_v1_quota_and_missing_paths",
	    test_conf_cgroup_v1_quota_and_missing_paths);
	CU_add_test(s, "parses_response_timeout",
	    test_conf_parses_response_timeout);
	CU_add_test(s, "max_ttl_zero_alone", test_conf_max_ttl_zero_alone);
	CU_add_test(s, "refuses_wrapping_integers",
	    test_conf_refuses_wrapping_integers);
	CU_add_test(s, "rejects_bad_response_timeout",
	    test_conf_rejects_bad_response_timeout);
	CU_add_test(s, "rewrites_resolver_servers_for_c_ares",
	    test_conf_rewrites_resolver_servers_for_c_ares);
	CU_add_test(s, "rejects_bad_resolver_servers",
	    test_conf_rejects_bad_resolver_servers);
	CU_add_test(s, "workers_auto_counts_usable_cpus",
	    test_conf_workers_auto_counts_usable_cpus);
	CU_add_test(s, "cpu_affinity_none_disables_pinning",
	    test_conf_cpu_affinity_none_disables_pinning);
	CU_add_test(s, "cpu_list_shorter_than_workers_wraps",
	    test_conf_cpu_list_shorter_than_workers_wraps);
	CU_add_test(s, "accepts_range_limits",
	    test_conf_accepts_range_limits);
	CU_add_test(s, "accepts_warning_as_log_level",
	    test_conf_accepts_warning_as_log_level);
	CU_add_test(s, "tcp_migrate_req_defaults_to_true",
	    test_conf_tcp_migrate_req_defaults_to_true);
	CU_add_test(s, "rejects_syntax_error", test_conf_rejects_syntax_error);
	CU_add_test(s, "rejects_duplicate_setting",
	    test_conf_rejects_duplicate_setting);
	CU_add_test(s, "rejects_unreadable_file",
	    test_conf_rejects_unreadable_file);
	CU_add_test(s, "rejects_unknown_root_key",
	    test_conf_rejects_unknown_root_key);
	CU_add_test(s, "rejects_unknown_listener_key",
	    test_conf_rejects_unknown_listener_key);
	CU_add_test(s, "http2_max_streams", test_conf_http2_max_streams);
	CU_add_test(s, "rejects_unknown_limits_key",
	    test_conf_rejects_unknown_limits_key);
	CU_add_test(s, "rejects_unknown_relay_key",
	    test_conf_rejects_unknown_relay_key);
	CU_add_test(s, "rejects_wrong_types", test_conf_rejects_wrong_types);
	CU_add_test(s, "rejects_out_of_range_values",
	    test_conf_rejects_out_of_range_values);
	CU_add_test(s, "rejects_cpu_outside_affinity",
	    test_conf_rejects_cpu_outside_affinity);
	CU_add_test(s, "rejects_unknown_log_level",
	    test_conf_rejects_unknown_log_level);
	CU_add_test(s, "rejects_unknown_relay_method",
	    test_conf_rejects_unknown_relay_method);
	CU_add_test(s, "relay_auto", test_conf_relay_auto);
	CU_add_test(s, "rejects_unparsable_address",
	    test_conf_rejects_unparsable_address);
	CU_add_test(s, "rejects_ipv6_without_brackets",
	    test_conf_rejects_ipv6_without_brackets);
	CU_add_test(s, "rejects_duplicate_listener",
	    test_conf_rejects_duplicate_listener);
	CU_add_test(s, "rejects_listener_missing_address",
	    test_conf_rejects_listener_missing_address);
	CU_add_test(s, "rejects_listener_missing_protocol",
	    test_conf_rejects_listener_missing_protocol);
	CU_add_test(s, "rejects_tcp_listener_missing_to",
	    test_conf_rejects_tcp_listener_missing_to);
	CU_add_test(s, "rejects_unresolvable_to",
	    test_conf_rejects_unresolvable_to);
	CU_add_test(s, "rejects_unknown_protocol",
	    test_conf_rejects_unknown_protocol);
	CU_add_test(s, "rejects_missing_or_empty_listeners",
	    test_conf_rejects_missing_or_empty_listeners);
	CU_add_test(s, "rejects_unknown_user", test_conf_rejects_unknown_user);
	CU_add_test(s, "rejects_missing_module",
	    test_conf_rejects_missing_module);
	CU_add_test(s, "rejects_module_without_name",
	    test_conf_rejects_module_without_name);
	CU_add_test(s, "loads_module_and_runs_its_conf",
	    test_conf_loads_module_and_runs_its_conf);
	CU_add_test(s, "reports_module_conf_error_at_module_line",
	    test_conf_reports_module_conf_error_at_module_line);
	CU_add_test(s, "refuses_module_from_another_path_once_loaded",
	    test_conf_refuses_module_from_another_path_once_loaded);
	CU_add_test(s, "rejects_module_listed_twice",
	    test_conf_rejects_module_listed_twice);
	CU_add_test(s, "refuses_module_with_wrong_abi",
	    test_conf_refuses_module_with_wrong_abi);
	CU_add_test(s, "refuses_hooks_workers_cannot_run",
	    test_conf_refuses_hooks_workers_cannot_run);
	CU_add_test(s, "refuses_library_without_descriptor",
	    test_conf_refuses_library_without_descriptor);
}
