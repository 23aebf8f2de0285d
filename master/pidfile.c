/* SPDX-License-Identifier: BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "master/pidfile.h"

pid_t
pidfile_read(const char *path)
{
	FILE	*f;
	long	 pid = 0;

	if ((f = fopen(path, "re")) == NULL)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

int
pidfile_write(const char *path)
{
	char	 buf[32];
	int	 fd, n, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (write(fd, buf, (size_t)n) != n)
		err = errno != 0 ? -errno : -EIO;
	if (close(fd) < 0 && err == 0)
		err = -errno;
	return err;
}
