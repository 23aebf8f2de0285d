/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The upstream leg behind a module's client transport (ABI 1.7, an https
 * parent), with the test module upwire (t/modules/upwire.c: a handshake
 * of "UP1 <sni>\n" answered "OK", then every byte XORed) loaded through
 * the real loader.
 *
 * Master side (master/upstream_tls.c): the module is found among the
 * configuration's modules and its text comes back when it refuses; with
 * no such module, or only one built for 1.6 or missing an entry, the
 * error names the tls module. Worker side (worker/upstream_tls.c, conn.c,
 * relay.c): on a connection made by conn_new with a socketpair as its
 * upstream, registered as dial.c leaves it, the handshake runs on the
 * loop's events and calls done(0) once, hands the socket back to
 * dial_on_event and leaves conn_recv/conn_send going through the module;
 * a refused handshake, a session that cannot be made and the connect
 * timeout each call done once with EPROTO, ENOMEM, ETIMEDOUT and leave no
 * socket and no session; a relay with method "splice" still passes every
 * byte of such a leg through the module; conn_close frees the session.
 * The loop's clock is frozen: the timeout is reached by moving it.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/conf_types.h"
#include "master/modload.h"
#include "master/upstream_tls.h"
#include "worker/buf.h"
#include "worker/conn.h"
#include "worker/dial.h"
#include "worker/loop.h"
#include "worker/relay.h"
#include "worker/upstream_tls.h"
#include "worker/worker_self.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define UT_T0		5000000
#define UT_CONNECT_MS	1000
#define UT_KEY		0x33

static struct pt_config		 ut_conf;
static struct conf_module	 ut_mods[2];
static struct conf_listener	 ut_listener;
static struct pt_worker		 ut_worker;
static struct modload		*ut_ml;
static const int		*ut_frees;

/* ---- what the worker would hand conn.c -------------------------------- */

static void
ut_run_phase(struct pt_conn *c, enum pt_phase phase, conn_phase_done_fn done)
{
	(void)c;
	(void)phase;
	(void)done;
}

static void
ut_nofile(void)
{
}

static const struct conn_upcalls ut_upcalls = {
	.run_phase = ut_run_phase,
	.release_dirs = relay_release,
	.nofile = ut_nofile,
};

static int
ut_suite_init(void)
{
	const char	*env = getenv("PT_TESTMODDIR"), *err = NULL;

	ut_ml = modload_open("upwire", NULL, env != NULL && *env != '\0' ?
	    env : "t/modules/.libs", &err);
	if (ut_ml == NULL ||
	    (ut_frees = dlsym(ut_ml->handle, "upwire_frees")) == NULL)
		return -1;
	if (loop_init() < 0)
		return -1;
	loop_set_time(UT_T0);
	memset(&ut_conf, 0, sizeof(ut_conf));
	ut_conf.limits.connect_timeout_ms = UT_CONNECT_MS;
	ut_conf.limits.header_timeout_ms = UT_CONNECT_MS;
	ut_conf.limits.idle_timeout_ms = 60000;
	ut_conf.relay = CONF_RELAY_SPLICE;
	ut_worker.conf = &ut_conf;
	worker_self_set(&ut_worker);
	ut_listener.name = "ut";
	conn_pool_init(8, 0, 0);
	conn_upcalls_set(&ut_upcalls);
	buf_init(16384, 65536, 16);
	relay_init(CONF_RELAY_SPLICE);
	return 0;
}

static int
ut_suite_fini(void)
{
	conn_reap();
	relay_fini();
	buf_fini();
	worker_self_set(NULL);
	loop_fini();
	modload_close_all();
	return 0;
}

/* ---- master side ------------------------------------------------------ */

/* A configuration whose modules are <m0> (and <m1>, unless NULL). */
static struct pt_config *
ut_conf_with(struct modload *m0, struct modload *m1)
{
	static struct pt_config	 conf;

	memset(&conf, 0, sizeof(conf));
	memset(ut_mods, 0, sizeof(ut_mods));
	ut_mods[0].mod = m0;
	ut_mods[1].mod = m1;
	conf.modules = ut_mods;
	conf.nmodules = m0 == NULL ? 0 : m1 == NULL ? 1 : 2;
	return &conf;
}

static void
test_upstream_tls_conf_finds_the_module(void)
{
	struct pt_upstream_tls	 u = { .verify = true, .file = "p.conf",
				    .line = 7 };
	const struct pt_module	*m = NULL;
	const char		*err = NULL;
	void			*uctx = NULL;

	CU_ASSERT_EQUAL(upstream_tls_conf(ut_conf_with(ut_ml, NULL), &u, &m,
	    &uctx, &err), 0);
	CU_ASSERT_PTR_EQUAL(m, ut_ml->mod);
	CU_ASSERT_PTR_NOT_NULL(uctx);
	upstream_tls_conf_free(m, uctx);
	upstream_tls_conf_free(m, NULL);

	/* The module's own words when it refuses. */
	u.ca_file = "refuse";
	CU_ASSERT_EQUAL(upstream_tls_conf(ut_conf_with(ut_ml, NULL), &u, &m,
	    &uctx, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, "upwire refuses ca_file \"refuse\"");
}

static void
test_upstream_tls_conf_needs_a_module_that_provides_it(void)
{
	static const char	 want[] = "protocol \"https\" needs the "
				    "tls module (modules = ( { name = "
				    "\"tls\"; } ))";
	struct pt_upstream_tls	 u = { .verify = true };
	struct pt_module	 old, partial;
	struct modload		 old_ml, partial_ml;
	const struct pt_module	*m = NULL;
	const char		*err = NULL;
	void			*uctx = NULL;

	CU_ASSERT_EQUAL(upstream_tls_conf(ut_conf_with(NULL, NULL), &u, &m,
	    &uctx, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, want);

	/* A module built for 1.6 has reserved slots there: never read,
	 * whatever they hold. One that lacks an entry does not count. */
	old = *ut_ml->mod;
	old.abi_minor = 6;
	partial = *ut_ml->mod;
	partial.upstream_new = NULL;
	memset(&old_ml, 0, sizeof(old_ml));
	memset(&partial_ml, 0, sizeof(partial_ml));
	old_ml.mod = &old;
	partial_ml.mod = &partial;
	err = NULL;
	CU_ASSERT_EQUAL(upstream_tls_conf(ut_conf_with(&old_ml, &partial_ml),
	    &u, &m, &uctx, &err), -1);
	CU_ASSERT_STRING_EQUAL(err, want);
	/* The first that provides it, in configuration order. */
	CU_ASSERT_EQUAL(upstream_tls_conf(ut_conf_with(&old_ml, ut_ml), &u,
	    &m, &uctx, &err), 0);
	CU_ASSERT_PTR_EQUAL(m, ut_ml->mod);
	upstream_tls_conf_free(m, uctx);
}

/* ---- worker side ------------------------------------------------------ */

static int	 ut_done_calls, ut_done_err;

static void
ut_on_done(struct pt_conn *c, int err)
{
	(void)c;
	ut_done_calls++;
	ut_done_err = err;
}

static void
ut_on_wake(struct pt_timer *t, void *arg)
{
	(void)t;
	(void)arg;
}

/* A few loop rounds that cannot sleep. */
static void
ut_rounds(void)
{
	static struct pt_timer	 wake;
	int			 i;

	for (i = 0; i < 4; i++) {
		pt_timer_start(&wake, 0, ut_on_wake, NULL);
		loop_once();
		pt_timer_stop(&wake);
	}
}

struct ut_leg {
	struct pt_conn	*c;
	int		 client[2];	/* [1]: the client's end */
	int		 up[2];		/* [1]: the parent's end */
	void		*uctx;
};

/*
 * A connection from conn_new whose upstream socket is connected and
 * registered as dial.c leaves it (CONN_SIDE_EVENTS, dial_on_event,
 * writable noted), and the module's state for it.
 */
static void
ut_leg_open(struct ut_leg *l)
{
	struct pt_upstream_tls	 u = { .verify = true };
	const struct pt_module	*m;
	const char		*err;
	struct sockaddr_storage	 peer;
	struct conn_side	*s;

	memset(l, 0, sizeof(*l));
	memset(&peer, 0, sizeof(peer));
	peer.ss_family = AF_INET;
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, l->client) == 0);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, l->up) == 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(l->c = conn_new(&ut_listener,
	    l->client[0], &peer));
	s = &l->c->c_side[SIDE_UPSTREAM];
	s->io.fd = l->up[0];
	CU_ASSERT_FATAL(loop_io_start(&s->io, l->up[0], CONN_SIDE_EVENTS,
	    dial_on_event) == 0);
	s->ready = EPOLLOUT;
	l->c->c_state = CONN_CONNECTING;
	CU_ASSERT_FATAL(upstream_tls_conf(ut_conf_with(ut_ml, NULL), &u, &m,
	    &l->uctx, &err) == 0);
	ut_done_calls = 0;
	ut_done_err = -1;
}

static void
ut_leg_close(struct ut_leg *l)
{
	conn_close(l->c, NULL);
	conn_reap();
	close(l->client[1]);
	close(l->up[1]);
	upstream_tls_conf_free(ut_ml->mod, l->uctx);
}

/* Reads exactly <len> bytes the parent got, XORed back when <key>. */
static bool
ut_parent_reads(struct ut_leg *l, const char *want, size_t len, bool key)
{
	char	 b[128];
	size_t	 i;

	if (len > sizeof(b) || read(l->up[1], b, len) != (ssize_t)len)
		return false;
	for (i = 0; key && i < len; i++)
		b[i] ^= UT_KEY;
	return memcmp(b, want, len) == 0;
}

static void
ut_parent_writes(struct ut_leg *l, const char *what, size_t len)
{
	char	 b[128];
	size_t	 i;

	for (i = 0; i < len; i++)
		b[i] = what[i] ^ UT_KEY;
	CU_ASSERT_EQUAL(write(l->up[1], b, len), (ssize_t)len);
}

static void
test_upstream_tls_handshake_then_io_through_the_module(void)
{
	struct ut_leg		 l;
	struct conn_side	*s;
	int			 frees;
	char			 buf[16];

	ut_leg_open(&l);
	s = &l.c->c_side[SIDE_UPSTREAM];
	upstream_tls_start(l.c, ut_ml->mod, l.uctx, "parent.test", ut_on_done);
	/* The hello went out at once; the answer is awaited. */
	CU_ASSERT(ut_parent_reads(&l, "UP1 parent.test\n", 16, false));
	CU_ASSERT_EQUAL(ut_done_calls, 0);
	CU_ASSERT_EQUAL(s->t_want, EPOLLIN);
	CU_ASSERT_NOT_EQUAL(l.c->c_timer.heap_idx, 0);
	ut_rounds();
	CU_ASSERT_EQUAL(ut_done_calls, 0);

	CU_ASSERT_EQUAL(write(l.up[1], "OK", 2), 2);
	ut_rounds();
	CU_ASSERT_EQUAL_FATAL(ut_done_calls, 1);
	CU_ASSERT_EQUAL(ut_done_err, 0);
	CU_ASSERT_PTR_NOT_NULL(l.c->c_up_transport);
	CU_ASSERT_EQUAL(l.c->c_timer.heap_idx, 0);
	CU_ASSERT(s->io.fn == dial_on_event);
	CU_ASSERT_EQUAL(s->ready & (EPOLLIN | EPOLLOUT), EPOLLIN | EPOLLOUT);
	CU_ASSERT_EQUAL(s->t_want, 0);

	/* Both ways through the module; nothing to splice. */
	CU_ASSERT_EQUAL(conn_send(l.c, s, "hello", 5), 5);
	CU_ASSERT(ut_parent_reads(&l, "hello", 5, true));
	ut_parent_writes(&l, "world", 5);
	CU_ASSERT_EQUAL(conn_recv(l.c, s, buf, sizeof(buf)), 5);
	CU_ASSERT(memcmp(buf, "world", 5) == 0);
	CU_ASSERT_EQUAL(conn_recv(l.c, s, buf, sizeof(buf)), -EAGAIN);
	CU_ASSERT_EQUAL(s->t_want, EPOLLIN);
	CU_ASSERT_EQUAL(conn_plain(l.c, s), 0);
	CU_ASSERT_EQUAL(conn_pending(l.c, s), 0);
	/* The client leg is still plain. */
	CU_ASSERT_EQUAL(conn_plain(l.c, &l.c->c_side[SIDE_CLIENT]),
	    PT_PLAIN_RX | PT_PLAIN_TX);
	CU_ASSERT_EQUAL(conn_shutdown_wr(l.c, s), 0);
	CU_ASSERT_EQUAL(read(l.up[1], buf, sizeof(buf)), 0);

	/* More rounds call nothing again. */
	ut_rounds();
	CU_ASSERT_EQUAL(ut_done_calls, 1);
	frees = *ut_frees;
	conn_close(l.c, NULL);
	CU_ASSERT_EQUAL(*ut_frees, frees + 1);
	CU_ASSERT_PTR_NULL(l.c->c_up_transport);
	ut_leg_close(&l);
	CU_ASSERT_EQUAL(*ut_frees, frees + 1);
}

/* After a failure: done once with <err>, no session, no socket. */
static void
ut_failed(struct ut_leg *l, int err, int frees_before)
{
	struct conn_side	*s = &l->c->c_side[SIDE_UPSTREAM];
	char			 b[64];

	CU_ASSERT_EQUAL(ut_done_calls, 1);
	CU_ASSERT_EQUAL(ut_done_err, err);
	CU_ASSERT_PTR_NULL(l->c->c_up_transport);
	CU_ASSERT_PTR_NULL(l->c->c_up_tctx);
	CU_ASSERT_EQUAL(s->io.fd, -1);
	CU_ASSERT_EQUAL(s->ready, 0);
	CU_ASSERT_EQUAL(l->c->c_timer.heap_idx, 0);
	CU_ASSERT_NOT_EQUAL(l->c->c_state, CONN_CLOSED);
	/* Whatever went out, the parent then sees the end. */
	while (read(l->up[1], b, sizeof(b)) > 0)
		;
	CU_ASSERT_EQUAL(read(l->up[1], b, sizeof(b)), 0);
	/* A session made is freed; one never made is not. */
	CU_ASSERT_EQUAL(*ut_frees, frees_before + (err == ENOMEM ? 0 : 1));
	ut_rounds();
	CU_ASSERT_EQUAL(ut_done_calls, 1);
}

static void
test_upstream_tls_refused_handshake_fails_once(void)
{
	struct ut_leg	 l;
	int		 frees = *ut_frees;

	ut_leg_open(&l);
	upstream_tls_start(l.c, ut_ml->mod, l.uctx, "parent.test", ut_on_done);
	CU_ASSERT_EQUAL(write(l.up[1], "NO", 2), 2);
	ut_rounds();
	ut_failed(&l, EPROTO, frees);
	ut_leg_close(&l);
}

static void
test_upstream_tls_session_not_made_fails_at_once(void)
{
	struct ut_leg	 l;
	int		 frees = *ut_frees;

	ut_leg_open(&l);
	upstream_tls_start(l.c, ut_ml->mod, l.uctx, "fail-new", ut_on_done);
	/* Before it returned. */
	ut_failed(&l, ENOMEM, frees);
	ut_leg_close(&l);
}

static void
test_upstream_tls_times_out_after_connect_timeout(void)
{
	struct ut_leg	 l;
	int		 frees = *ut_frees;
	uint64_t	 t0 = loop_now();

	ut_leg_open(&l);
	upstream_tls_start(l.c, ut_ml->mod, l.uctx, "parent.test", ut_on_done);
	loop_set_time(t0 + UT_CONNECT_MS - 1);
	ut_rounds();
	CU_ASSERT_EQUAL(ut_done_calls, 0);
	loop_set_time(t0 + UT_CONNECT_MS);
	ut_rounds();
	ut_failed(&l, ETIMEDOUT, frees);
	ut_leg_close(&l);
}

static void
test_upstream_tls_relay_never_splices_the_leg(void)
{
	struct ut_leg	 l;
	char		 buf[16];
	int		 frees, i;

	ut_leg_open(&l);
	upstream_tls_start(l.c, ut_ml->mod, l.uctx, "parent.test", ut_on_done);
	CU_ASSERT(ut_parent_reads(&l, "UP1 parent.test\n", 16, false));
	/* The parent's first bytes come in the segment that ends the
	 * handshake: its edge is the handshake's, and none follows. */
	memcpy(buf, "OK", 2);
	for (i = 0; i < 5; i++)
		buf[2 + i] = "early"[i] ^ UT_KEY;
	CU_ASSERT_EQUAL(write(l.up[1], buf, 7), 7);
	ut_rounds();
	CU_ASSERT_EQUAL_FATAL(ut_done_calls, 1);
	CU_ASSERT_EQUAL_FATAL(ut_done_err, 0);
	relay_start(l.c);
	ut_rounds();
	CU_ASSERT_EQUAL(read(l.client[1], buf, sizeof(buf)), 5);
	CU_ASSERT(memcmp(buf, "early", 5) == 0);
	/* relay.method "splice", both directions bulk or not: a splice
	 * would hand the parent plain bytes. */
	l.c->c_dir[SIDE_CLIENT].bulk = l.c->c_dir[SIDE_UPSTREAM].bulk = true;
	CU_ASSERT_EQUAL(write(l.client[1], "abc", 3), 3);
	ut_rounds();
	CU_ASSERT(ut_parent_reads(&l, "abc", 3, true));
	ut_parent_writes(&l, "xyz", 3);
	ut_rounds();
	CU_ASSERT_EQUAL(read(l.client[1], buf, sizeof(buf)), 3);
	CU_ASSERT(memcmp(buf, "xyz", 3) == 0);
	/* Both ends close: the relay ends the connection, which frees the
	 * session. */
	frees = *ut_frees;
	shutdown(l.client[1], SHUT_WR);
	shutdown(l.up[1], SHUT_WR);
	ut_rounds();
	CU_ASSERT_EQUAL(l.c->c_state, CONN_CLOSED);
	CU_ASSERT_EQUAL(*ut_frees, frees + 1);
	ut_leg_close(&l);
}

void
register_upstream_tls_suite(void)
{
	CU_pSuite	 s = CU_add_suite("upstream_tls", ut_suite_init,
			    ut_suite_fini);

	CU_add_test(s, "conf_finds_the_module",
	    test_upstream_tls_conf_finds_the_module);
	CU_add_test(s, "conf_needs_a_module_that_provides_it",
	    test_upstream_tls_conf_needs_a_module_that_provides_it);
	CU_add_test(s, "handshake_then_io_through_the_module",
	    test_upstream_tls_handshake_then_io_through_the_module);
	CU_add_test(s, "refused_handshake_fails_once",
	    test_upstream_tls_refused_handshake_fails_once);
	CU_add_test(s, "session_not_made_fails_at_once",
	    test_upstream_tls_session_not_made_fails_at_once);
	CU_add_test(s, "times_out_after_connect_timeout",
	    test_upstream_tls_times_out_after_connect_timeout);
	CU_add_test(s, "relay_never_splices_the_leg",
	    test_upstream_tls_relay_never_splices_the_leg);
}
