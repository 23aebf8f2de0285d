/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test-only transport module: proves that a module can wrap a listener's
 * client leg the way the tls module will. The client must open with the
 * four bytes "XOR1" (the handshake; the module answers "OK"), and every
 * byte after that travels XORed with 0x5a on the client leg only, so a
 * client that forgets the encoding gets garbage and a test can tell.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "portico/module.h"

#define XORWIRE_KEY	0x5a

struct xorwire_conn {
	unsigned	 got;		/* handshake bytes read */
	unsigned	 sent;		/* handshake reply bytes written */
};

static int
xorwire_handshake(struct pt_conn *c, int fd, void *tctx, uint32_t *want)
{
	struct xorwire_conn	*x = tctx;
	char			 buf[4];
	ssize_t			 n;

	while (x->got < 4) {
		n = recv(fd, buf, 4 - x->got, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			*want = EPOLLIN;
			return -errno;
		}
		if (memcmp(buf, "XOR1" + x->got, (size_t)n) != 0)
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
	return 0;
}

static ssize_t
xorwire_read(struct pt_conn *c, int fd, void *tctx, void *buf, size_t len,
    uint32_t *want)
{
	unsigned char	*p = buf;
	ssize_t		 n, i;

	n = recv(fd, buf, len, 0);
	if (n < 0) {
		*want = EPOLLIN;
		return -errno;
	}
	for (i = 0; i < n; i++)
		p[i] ^= XORWIRE_KEY;
	return n;
}

static ssize_t
xorwire_write(struct pt_conn *c, int fd, void *tctx, const void *buf,
    size_t len, uint32_t *want)
{
	unsigned char		 out[16384];
	const unsigned char	*p = buf;
	size_t			 i;
	ssize_t			 n;

	if (len > sizeof(out))
		len = sizeof(out);
	for (i = 0; i < len; i++)
		out[i] = p[i] ^ XORWIRE_KEY;
	n = send(fd, out, len, MSG_NOSIGNAL);
	if (n < 0) {
		*want = EPOLLOUT;
		return -errno;
	}
	return n;
}

static int
xorwire_shutdown(struct pt_conn *c, int fd, void *tctx)
{
	return shutdown(fd, SHUT_WR) < 0 ? -errno : 0;
}

static const struct pt_transport xorwire_transport = {
	.name = "xorwire",
	.handshake = xorwire_handshake,
	.read = xorwire_read,
	.write = xorwire_write,
	.shutdown = xorwire_shutdown,
};

PT_API const struct pt_module pt_module_xorwire = {
	PT_MODULE_INIT,
	.name = "xorwire",
	.transport = &xorwire_transport,
	.conn_ctx_size = sizeof(struct xorwire_conn),
};
