/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * plainwire: a test-only transport whose socket carries the connection's
 * bytes as they are after its handshake, as a TLS socket with kTLS in
 * both directions does, and that says so through pt_transport.plain (ABI
 * 1.3). The client opens with "PLN1" and gets "OK" (the handshake reads
 * no byte beyond those four); then read() and write() are recv() and
 * send(), counted, so the counts show which bytes the core moved past
 * them with splice().
 *
 * Per listener, through listener_conf (defaults without a group):
 *
 *	listeners = ( { ...; transport = "plainwire";
 *			plainwire = { plain = "rx,tx"; }; } );
 *
 * plain: what plain() answers after the handshake: "rx,tx" (default),
 * "rx", "tx" or "none".
 *
 * At the end of each connection it logs (info) one line:
 *	plainwire: read=<bytes through read()> written=<bytes through
 *	    write()> asked=<plain() calls>
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "portico/module.h"

struct plainwire_lconf {
	unsigned	 plain;		/* PT_PLAIN_* after the handshake */
};

struct plainwire_conn {
	unsigned	 got;		/* "PLN1" bytes checked */
	unsigned	 sent;		/* "OK" bytes written */
	bool		 done;		/* handshake over */
	unsigned	 asked;
	unsigned long long rd, wr;
};

PT_API extern const struct pt_module pt_module_plainwire;

static const struct plainwire_lconf plainwire_defaults = {
	PT_PLAIN_RX | PT_PLAIN_TX
};

static const struct plainwire_lconf *
plainwire_lconf(struct pt_conn *c)
{
	const struct plainwire_lconf *lc;

	lc = pt_conn_listener_ctx(c, &pt_module_plainwire);
	return lc != NULL ? lc : &plainwire_defaults;
}

static int
plainwire_handshake(struct pt_conn *c, int fd, void *tctx, uint32_t *want)
{
	struct plainwire_conn	*x = tctx;
	char			 b[4];
	ssize_t			 n;

	(void)c;
	while (x->got < 4) {
		n = recv(fd, b, 4 - x->got, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			*want = EPOLLIN;
			return -errno;
		}
		if (memcmp(b, "PLN1" + x->got, (size_t)n) != 0)
			return -EPROTO;
		x->got += (unsigned)n;
	}
	while (x->sent < 2) {
		n = send(fd, "OK" + x->sent, 2 - x->sent, MSG_NOSIGNAL);
		if (n < 0) {
			*want = EPOLLOUT;
			return -errno;
		}
		x->sent += (unsigned)n;
	}
	x->done = true;
	return 0;
}

static ssize_t
plainwire_read(struct pt_conn *c, int fd, void *tctx, void *buf,
    size_t len, uint32_t *want)
{
	struct plainwire_conn	*x = tctx;
	ssize_t			 n;

	(void)c;
	n = recv(fd, buf, len, 0);
	if (n < 0) {
		*want = EPOLLIN;
		return -errno;
	}
	x->rd += (unsigned long long)n;
	return n;
}

static ssize_t
plainwire_write(struct pt_conn *c, int fd, void *tctx, const void *buf,
    size_t len, uint32_t *want)
{
	struct plainwire_conn	*x = tctx;
	ssize_t			 n;

	(void)c;
	n = send(fd, buf, len, MSG_NOSIGNAL);
	if (n < 0) {
		*want = EPOLLOUT;
		return -errno;
	}
	x->wr += (unsigned long long)n;
	return n;
}

static unsigned
plainwire_plain(struct pt_conn *c, int fd, void *tctx)
{
	struct plainwire_conn	*x = tctx;

	(void)fd;
	x->asked++;
	return x->done ? plainwire_lconf(c)->plain : 0;
}

static int
plainwire_shutdown(struct pt_conn *c, int fd, void *tctx)
{
	(void)c;
	(void)tctx;
	return shutdown(fd, SHUT_WR) < 0 ? -errno : 0;
}

static void
plainwire_free(struct pt_conn *c, void *tctx)
{
	struct plainwire_conn	*x = tctx;

	/* cut: pt_conn_cut (1.5), what a transport asks before writing a
	 * close of its own. */
	pt_clog(c, PT_LOG_INFO, "plainwire: read=%llu written=%llu asked=%u "
	    "cut=%d", x->rd, x->wr, x->asked, pt_conn_cut(c));
}

/* Master: the listener's `plainwire` group, or the defaults. */
static int
plainwire_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	struct plainwire_lconf	*lc;
	const char		*v = NULL;

	(void)mc;
	(void)modctx;
	if ((lc = malloc(sizeof(*lc))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	*lc = plainwire_defaults;
	if (node != NULL && config_setting_lookup_string(node, "plain", &v)) {
		if (strcmp(v, "rx,tx") == 0)
			lc->plain = PT_PLAIN_RX | PT_PLAIN_TX;
		else if (strcmp(v, "rx") == 0)
			lc->plain = PT_PLAIN_RX;
		else if (strcmp(v, "tx") == 0)
			lc->plain = PT_PLAIN_TX;
		else if (strcmp(v, "none") == 0)
			lc->plain = 0;
		else {
			free(lc);
			*errstr = "plain: \"rx,tx\", \"rx\", \"tx\" or \"none\"";
			return -1;
		}
	}
	*lctx_out = lc;
	return 0;
}

static void
plainwire_listener_conf_free(void *lctx)
{
	free(lctx);
}

static const struct pt_transport plainwire_transport = {
	.name = "plainwire",
	.handshake = plainwire_handshake,
	.read = plainwire_read,
	.write = plainwire_write,
	.shutdown = plainwire_shutdown,
	.free = plainwire_free,
	.plain = plainwire_plain,
};

PT_API const struct pt_module pt_module_plainwire = {
	PT_MODULE_INIT,
	.name = "plainwire",
	.transport = &plainwire_transport,
	.conn_ctx_size = sizeof(struct plainwire_conn),
	.listener_conf = plainwire_listener_conf,
	.listener_conf_free = plainwire_listener_conf_free,
};
