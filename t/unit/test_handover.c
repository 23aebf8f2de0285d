/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * master/listen.c's binary-upgrade half and master/notify.c: the sockets
 * of a set are named in PORTICO_LISTENERS' format, taken back by
 * listen_inherit (only descriptors that are listening TCP sockets; junk
 * and other sockets are ignored), adopted by listen_open by address and
 * slot instead of bound, and what nothing adopted is closed. notify_send
 * delivers one datagram to a path or an abstract NOTIFY_SOCKET, and
 * notify_init takes the variable out of the environment. Real sockets on
 * 127.0.0.1; nothing is forked or exec'd here (t/integ/upgrade.py does).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/conf_types.h"
#include "master/listen.h"
#include "master/notify.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

/* A port free a moment ago on 127.0.0.1, or 0. */
static uint16_t
handover_free_port(void)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return 0;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
		sin.sin_port = 0;
	close(fd);
	return ntohs(sin.sin_port);
}

/* One listener on 127.0.0.1:<port>, <workers> slots. */
static void
handover_conf(struct pt_config *conf, struct conf_listener *l, char *text,
    uint16_t port, int workers)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)&l->addr.sa;

	memset(conf, 0, sizeof(*conf));
	memset(l, 0, sizeof(*l));
	snprintf(text, 32, "127.0.0.1:%u", port);
	l->address = text;
	l->backlog = 16;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->addr.len = sizeof(*sin);
	conf->listeners = l;
	conf->nlisteners = 1;
	conf->workers = workers;
}

static bool
handover_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void
test_handover_adopts_by_address_and_slot(void)
{
	struct pt_config	 conf, conf3, other;
	struct conf_listener	 l, l3, lo;
	struct listen_set	 ls, ls3, lso;
	char			 a[32], a3[32], ao[32], err[256], want[128];
	char			*spec, *full;
	uint16_t		 port = handover_free_port();
	uint16_t		 oport = handover_free_port();
	int			 udp, idle, n;

	CU_ASSERT_FATAL(port != 0 && oport != 0 && port != oport);
	handover_conf(&conf, &l, a, port, 2);
	CHECKF_FATAL(listen_open(&conf, &ls, NULL, NULL, err,
	    sizeof(err)) == 0, "listen_open: %s", err);
	handover_conf(&other, &lo, ao, oport, 1);
	CHECKF_FATAL(listen_open(&other, &lso, NULL, NULL, err,
	    sizeof(err)) == 0, "listen_open: %s", err);

	spec = listen_fmt_handover(&conf, &ls);
	snprintf(want, sizeof(want), "%d:127.0.0.1:%u:0;%d:127.0.0.1:%u:1",
	    ls.fds[0], port, ls.fds[1], port);
	CHECKF(spec != NULL && strcmp(spec, want) == 0, "handover \"%s\", "
	    "want \"%s\"", spec ? spec : "(null)", want);

	/* Junk, a UDP socket, a TCP socket that does not listen, a closed
	 * descriptor and a slot out of range are all passed over. */
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	idle = socket(AF_INET, SOCK_STREAM, 0);
	CU_ASSERT_FATAL(udp >= 0 && idle >= 0);
	n = asprintf(&full, "junk;;2:x:0;%d:udp:0;%d:idle:0;999999:gone:0;"
	    "%d:127.0.0.1:%u:9999;%s;%d:127.0.0.1:%u:0", udp, idle,
	    lso.fds[0], oport, spec, lso.fds[0], oport);
	CU_ASSERT_FATAL(n > 0);
	CHECKF(listen_inherit(full) == 3, "want 3 inherited of \"%s\"", full);

	/* Three slots now: 0 and 1 adopted (the same descriptors), 2 bound. */
	handover_conf(&conf3, &l3, a3, port, 3);
	CHECKF_FATAL(listen_open(&conf3, &ls3, NULL, NULL, err,
	    sizeof(err)) == 0, "listen_open (adopting): %s", err);
	CHECKF(ls3.fds[0] == ls.fds[0] && ls3.fds[1] == ls.fds[1],
	    "adopted %d %d, handed over %d %d", ls3.fds[0], ls3.fds[1],
	    ls.fds[0], ls.fds[1]);
	CHECKF(ls3.fds[2] != ls.fds[0] && ls3.fds[2] != ls.fds[1] &&
	    handover_is_open(ls3.fds[2]), "slot 2 bound afresh: fd %d",
	    ls3.fds[2]);
	CU_ASSERT(fcntl(ls3.fds[0], F_GETFD) == FD_CLOEXEC);
	/* The other port's socket was not in the configuration: closed. */
	CHECKF(listen_inherit_done() == 2, "want 2 adopted");
	CHECKF(!handover_is_open(lso.fds[0]), "unadopted fd %d still open",
	    lso.fds[0]);
	CU_ASSERT(handover_is_open(udp) && handover_is_open(idle));
	/* Nothing left to adopt: the next open binds. */
	CU_ASSERT(listen_inherit_done() == 0);

	free(lso.fds);
	free(ls.fds);
	listen_close(&ls3);
	close(udp);
	close(idle);
	free(spec);
	free(full);
}

/* Receives one datagram on <fd> into <buf> (NUL-terminated). */
static ssize_t
handover_recv(int fd, char *buf, size_t sz)
{
	struct timeval	 tv = { 2, 0 };
	ssize_t		 n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recv(fd, buf, sz - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

static void
test_handover_notify_abstract_and_path(void)
{
	struct sockaddr_un	 sun;
	char			 name[64], got[256], dir[] = "/tmp/pt-notifyXXXXXX";
	int			 fd, fd2;
	socklen_t		 len;

	/* Abstract: "@name" is a leading NUL on the wire. */
	snprintf(name, sizeof(name), "@pt-unit-notify-%d", (int)getpid());
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path + 1, name + 1, strlen(name) - 1);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(name));
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	CU_ASSERT_FATAL(fd >= 0 && bind(fd, (struct sockaddr *)&sun,
	    len) == 0);
	setenv("NOTIFY_SOCKET", name, 1);
	notify_init();
	CU_ASSERT(getenv("NOTIFY_SOCKET") == NULL);
	CU_ASSERT(notify_enabled() && strcmp(notify_socket(), name) == 0);
	notify_send("READY=1\nSTATUS=%d workers", 2);
	CU_ASSERT(handover_recv(fd, got, sizeof(got)) > 0);
	CHECKF(strcmp(got, "READY=1\nSTATUS=2 workers") == 0, "got \"%s\"",
	    got);
	close(fd);

	/* A path. */
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/n.sock", dir);
	fd2 = socket(AF_UNIX, SOCK_DGRAM, 0);
	CU_ASSERT_FATAL(fd2 >= 0 && bind(fd2, (struct sockaddr *)&sun,
	    sizeof(sun)) == 0);
	setenv("NOTIFY_SOCKET", sun.sun_path, 1);
	notify_init();
	notify_send("STOPPING=1");
	CU_ASSERT(handover_recv(fd2, got, sizeof(got)) > 0);
	CHECKF(strcmp(got, "STOPPING=1") == 0, "got \"%s\"", got);
	close(fd2);
	unlink(sun.sun_path);
	rmdir(dir);

	/* Not a socket name systemd would give: nothing is sent. */
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	notify_init();
	CU_ASSERT(getenv("NOTIFY_SOCKET") == NULL);
}

void
register_handover_suite(void)
{
	CU_pSuite	 s = CU_add_suite("handover", NULL, NULL);

	CU_add_test(s, "test_handover_adopts_by_address_and_slot",
	    test_handover_adopts_by_address_and_slot);
	CU_add_test(s, "test_handover_notify_abstract_and_path",
	    test_handover_notify_abstract_and_path);
}
