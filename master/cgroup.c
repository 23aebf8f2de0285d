/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CPU quota of the cgroup the master runs in, for workers = "auto":
 * a container or a systemd unit with CPUQuota=200% gets two workers even
 * when the machine shows more CPUs.
 *
 * Both hierarchies are read, from /proc/self/cgroup: cgroup v2's cpu.max
 * ("200000 100000") and v1's cpu.cfs_quota_us / cpu.cfs_period_us, in
 * the process's own cgroup and in each of its ancestors (a limit set on a
 * parent applies below it), the tightest one winning. A path that does
 * not exist under the mount is skipped rather than trusted: in a container
 * without a cgroup namespace, /proc/self/cgroup names the host's path
 * while the container's own cgroup is mounted at the root, which the walk
 * reaches last. Only the usual mount points are looked at
 * (/sys/fs/cgroup, /sys/fs/cgroup/unified for v2; /sys/fs/cgroup/<the
 * controllers>, /sys/fs/cgroup/cpu for v1): what systemd, Docker and
 * Kubernetes use.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/cgroup.h"

/* CPUs' worth of <quota> over <period> (rounded up), or 0 for none. */
static int
cgroup_cpus(long long quota, long long period)
{
	long long	 n;

	if (quota <= 0 || period <= 0)
		return 0;
	n = (quota + period - 1) / period;
	return n > 1 << 20 ? 1 << 20 : (int)n;
}

static int
cgroup_min(int a, int b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

/* v2: "QUOTA PERIOD" or "max PERIOD" in DIR/cpu.max. */
static int
cgroup_v2_at(const char *dir)
{
	char		 path[4096], q[32];
	long long	 period;
	FILE		*f;
	int		 n = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/cpu.max", dir) >=
	    sizeof(path) || (f = fopen(path, "re")) == NULL)
		return 0;
	if (fscanf(f, "%31s %lld", q, &period) == 2 && strcmp(q, "max") != 0)
		n = cgroup_cpus(atoll(q), period);
	fclose(f);
	return n;
}

static long long
cgroup_read_ll(const char *dir, const char *name, long long def)
{
	char		 path[4096];
	long long	 v = def;
	FILE		*f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path) || (f = fopen(path, "re")) == NULL)
		return def;
	if (fscanf(f, "%lld", &v) != 1)
		v = def;
	fclose(f);
	return v;
}

/* v1: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us in DIR. */
static int
cgroup_v1_at(const char *dir)
{
	return cgroup_cpus(cgroup_read_ll(dir, "cpu.cfs_quota_us", -1),
	    cgroup_read_ll(dir, "cpu.cfs_period_us", 0));
}

/* The tightest limit of <at> in <mount><path> and each ancestor up to
 * <mount> itself. */
static int
cgroup_walk(const char *mount, const char *path, int (*at)(const char *))
{
	char	 dir[4096], *slash;
	size_t	 mlen = strlen(mount);
	int	 n = 0;

	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", mount, path) >=
	    sizeof(dir))
		return 0;
	for (;;) {
		/* Trailing slashes (the root's "/") name the same directory. */
		while (strlen(dir) > mlen && dir[strlen(dir) - 1] == '/')
			dir[strlen(dir) - 1] = '\0';
		n = cgroup_min(n, at(dir));
		if (strlen(dir) <= mlen ||
		    (slash = strrchr(dir + mlen, '/')) == NULL)
			break;
		*slash = '\0';
	}
	return n;
}

/* Whether the comma-separated <list> holds "cpu". */
static bool
cgroup_has_cpu(const char *list)
{
	const char	*p = list;
	size_t		 len;

	while (*p != '\0') {
		len = strcspn(p, ",");
		if (len == 3 && strncmp(p, "cpu", 3) == 0)
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

int
cgroup_cpu_limit(const char *proc_cgroup, const char *root)
{
	char	 line[4096], mount[4096], *ctl, *path;
	FILE	*f;
	int	 n = 0;

	if ((f = fopen(proc_cgroup, "re")) == NULL)
		return 0;
	/* "ID:CONTROLLERS:PATH"; v2's line is "0::PATH". */
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((ctl = strchr(line, ':')) == NULL ||
		    (path = strchr(ctl + 1, ':')) == NULL)
			continue;
		*ctl++ = '\0';
		*path++ = '\0';
		if (path[0] != '/')
			continue;
		if (strcmp(line, "0") == 0 && ctl[0] == '\0') {
			n = cgroup_min(n, cgroup_walk(root, path,
			    cgroup_v2_at));
			snprintf(mount, sizeof(mount), "%s/unified", root);
			n = cgroup_min(n, cgroup_walk(mount, path,
			    cgroup_v2_at));
		} else if (cgroup_has_cpu(ctl)) {
			snprintf(mount, sizeof(mount), "%s/%s", root, ctl);
			n = cgroup_min(n, cgroup_walk(mount, path,
			    cgroup_v1_at));
			if (strcmp(ctl, "cpu") != 0) {
				snprintf(mount, sizeof(mount), "%s/cpu", root);
				n = cgroup_min(n, cgroup_walk(mount, path,
				    cgroup_v1_at));
			}
		}
	}
	fclose(f);
	return n;
}
