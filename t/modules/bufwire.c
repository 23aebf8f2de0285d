/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bufwire: a test-only transport that holds plaintext the way TLS does.
 * It reads up to 64 KiB from the socket at a time and hands it out in
 * small pieces (`piece` bytes at most per read), reporting the rest
 * through pending(): bytes that raise no epoll event, which the core must
 * drain before it waits for the socket again. The client opens with
 * "BUF1" (the handshake reads 64 KiB too, so bytes sent behind "BUF1" in
 * the same segment wait inside the module) and gets "OK"; bytes pass
 * unchanged after that. Its shutdown answers -EAGAIN `shutdown_eagain`
 * times before it shuts the socket, like a close_notify that must wait.
 *
 * Options come per listener, through listener_conf (the way a tls module
 * finds its certificate), defaults when the listener has no group:
 *
 *	listeners = ( { ...; transport = "bufwire";
 *			bufwire = { piece = 7; shutdown_eagain = 2; }; } );
 *
 * At the end of each connection it logs (info) one line:
 *	bufwire: in=<bytes handed out> held=<most bytes held after a recv>
 *	    shutdown_tries=<calls>
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "portico/module.h"

#define BUFWIRE_SIZE	65536

struct bufwire_lconf {
	unsigned	 piece;			/* bytes per read, at most */
	unsigned	 shutdown_eagain;	/* -EAGAIN answers first */
};

struct bufwire_conn {
	char		*buf;		/* BUFWIRE_SIZE, from handshake */
	unsigned	 off, len;		/* held: [off, len) */
	unsigned	 max_held;
	unsigned	 shut_calls;
	unsigned	 got;			/* "BUF1" bytes checked */
	unsigned	 sent;			/* "OK" bytes written */
	unsigned long long in;
};

PT_API extern const struct pt_module pt_module_bufwire;

static const struct bufwire_lconf bufwire_defaults = { 7, 0 };

static const struct bufwire_lconf *
bufwire_lconf(struct pt_conn *c)
{
	const struct bufwire_lconf *lc;

	lc = pt_conn_listener_ctx(c, &pt_module_bufwire);
	return lc != NULL ? lc : &bufwire_defaults;
}

/* Reads what the socket has into the empty buffer: n, 0 or -errno. */
static ssize_t
bufwire_fill(struct bufwire_conn *x, int fd)
{
	ssize_t	 n;

	n = recv(fd, x->buf, BUFWIRE_SIZE, 0);
	if (n < 0)
		return -errno;
	x->off = 0;
	x->len = (unsigned)n;
	if ((unsigned)n > x->max_held)
		x->max_held = (unsigned)n;
	return n;
}

static int
bufwire_handshake(struct pt_conn *c, int fd, void *tctx, uint32_t *want)
{
	struct bufwire_conn	*x = tctx;
	ssize_t			 n;
	unsigned		 k;

	if (x->buf == NULL && (x->buf = malloc(BUFWIRE_SIZE)) == NULL)
		return -ENOMEM;
	while (x->got < 4) {
		if (x->off == x->len) {
			if ((n = bufwire_fill(x, fd)) == 0)
				return -ECONNRESET;
			if (n < 0) {
				*want = EPOLLIN;
				return (int)n;
			}
		}
		k = x->len - x->off;
		if (k > 4 - x->got)
			k = 4 - x->got;
		if (memcmp(x->buf + x->off, "BUF1" + x->got, k) != 0)
			return -EPROTO;
		x->got += k;
		x->off += k;
	}
	while (x->sent < 2) {
		n = send(fd, "OK" + x->sent, 2 - x->sent, MSG_NOSIGNAL);
		if (n < 0) {
			*want = EPOLLOUT;
			return -errno;
		}
		x->sent += (unsigned)n;
	}
	return 0;
}

static ssize_t
bufwire_read(struct pt_conn *c, int fd, void *tctx, void *buf, size_t len,
    uint32_t *want)
{
	struct bufwire_conn	*x = tctx;
	size_t			 k;
	ssize_t			 n;

	if (x->off == x->len) {
		if ((n = bufwire_fill(x, fd)) <= 0) {
			*want = EPOLLIN;
			return n;
		}
	}
	k = x->len - x->off;
	if (k > len)
		k = len;
	if (k > bufwire_lconf(c)->piece)
		k = bufwire_lconf(c)->piece;
	memcpy(buf, x->buf + x->off, k);
	x->off += (unsigned)k;
	x->in += k;
	return (ssize_t)k;
}

static ssize_t
bufwire_write(struct pt_conn *c, int fd, void *tctx, const void *buf,
    size_t len, uint32_t *want)
{
	ssize_t	 n;

	n = send(fd, buf, len, MSG_NOSIGNAL);
	if (n < 0) {
		*want = EPOLLOUT;
		return -errno;
	}
	return n;
}

static size_t
bufwire_pending(struct pt_conn *c, void *tctx)
{
	struct bufwire_conn	*x = tctx;

	return x->len - x->off;
}

static int
bufwire_shutdown(struct pt_conn *c, int fd, void *tctx)
{
	struct bufwire_conn	*x = tctx;

	if (x->shut_calls++ < bufwire_lconf(c)->shutdown_eagain) {
		pt_clog(c, PT_LOG_INFO, "bufwire: shutdown says EAGAIN (%u)",
		    x->shut_calls);
		return -EAGAIN;
	}
	return shutdown(fd, SHUT_WR) < 0 ? -errno : 0;
}

static void
bufwire_free(struct pt_conn *c, void *tctx)
{
	struct bufwire_conn	*x = tctx;

	pt_clog(c, PT_LOG_INFO, "bufwire: in=%llu held=%u shutdown_tries=%u",
	    x->in, x->max_held, x->shut_calls);
	free(x->buf);
	x->buf = NULL;
}

/* Master: the listener's `bufwire` group, or the defaults. */
static int
bufwire_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	struct bufwire_lconf	*lc;
	config_setting_t	*m;
	int			 i, v;

	if ((lc = malloc(sizeof(*lc))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	*lc = bufwire_defaults;
	for (i = 0; node != NULL &&
	    (m = config_setting_get_elem(node, (unsigned)i)) != NULL; i++) {
		v = config_setting_get_int(m);
		if (strcmp(config_setting_name(m), "piece") == 0 &&
		    config_setting_type(m) == CONFIG_TYPE_INT &&
		    v >= 1 && v <= BUFWIRE_SIZE)
			lc->piece = (unsigned)v;
		else if (strcmp(config_setting_name(m), "shutdown_eagain")
		    == 0 && config_setting_type(m) == CONFIG_TYPE_INT &&
		    v >= 0 && v <= 1000000)
			lc->shutdown_eagain = (unsigned)v;
		else {
			free(lc);
			*errstr = "expected piece (1-65536) and "
			    "shutdown_eagain (0-1000000)";
			return -1;
		}
	}
	*lctx_out = lc;
	return 0;
}

static void
bufwire_listener_conf_free(void *lctx)
{
	free(lctx);
}

static const struct pt_transport bufwire_transport = {
	.name = "bufwire",
	.handshake = bufwire_handshake,
	.read = bufwire_read,
	.write = bufwire_write,
	.shutdown = bufwire_shutdown,
	.free = bufwire_free,
	.pending = bufwire_pending,
};

PT_API const struct pt_module pt_module_bufwire = {
	PT_MODULE_INIT,
	.name = "bufwire",
	.transport = &bufwire_transport,
	.conn_ctx_size = sizeof(struct bufwire_conn),
	.listener_conf = bufwire_listener_conf,
	.listener_conf_free = bufwire_listener_conf_free,
};
