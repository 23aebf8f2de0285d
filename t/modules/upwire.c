/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test-only module that proves ABI 1.7: a client transport on the
 * upstream leg, the way the tls module speaks TLS to an https parent,
 * without TLS. upstream_conf keeps a key (refusing a ca_file named
 * "refuse", to show the module's text reaches the caller); upstream_new
 * keeps the SNI (refusing "fail-new" with -ENOMEM); the handshake writes
 * "UP1 <sni>\n" and wants "OK" back ("NO" is -EPROTO, as a failed
 * verification would be); after it every byte is XORed with the key,
 * both ways, so a leg the core spliced or wrote past the transport shows
 * plain bytes and a test can tell. plain() says 0. upwire_frees counts
 * free() calls, for a test that reads it with dlsym().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "portico/module.h"

#define UPWIRE_KEY	0x33

struct upwire_uconf {
	unsigned char	 key;
};

struct upwire_conn {
	unsigned char	 key;
	char		 hello[80];	/* "UP1 <sni>\n" */
	size_t		 hello_len, sent;
	unsigned	 got;		/* answer bytes read */
};

PT_API int	 upwire_frees;

static int
upwire_conf(const struct pt_upstream_tls *u, void **uctx_out,
    const char **errstr)
{
	struct upwire_uconf	*uc;

	if (u->ca_file != NULL && strcmp(u->ca_file, "refuse") == 0) {
		*errstr = "upwire refuses ca_file \"refuse\"";
		return -1;
	}
	if ((uc = calloc(1, sizeof(*uc))) == NULL) {
		*errstr = "out of memory";
		return -1;
	}
	uc->key = UPWIRE_KEY;
	*uctx_out = uc;
	return 0;
}

static void
upwire_conf_free(void *uctx)
{
	free(uctx);
}

static int
upwire_new(struct pt_conn *c, void *uctx, const char *sni, void **tctx_out)
{
	struct upwire_uconf	*uc = uctx;
	struct upwire_conn	*x;

	(void)c;
	if (sni != NULL && strcmp(sni, "fail-new") == 0)
		return -ENOMEM;
	if ((x = calloc(1, sizeof(*x))) == NULL)
		return -ENOMEM;
	x->key = uc->key;
	x->hello_len = (size_t)snprintf(x->hello, sizeof(x->hello),
	    "UP1 %s\n", sni != NULL ? sni : "-");
	*tctx_out = x;
	return 0;
}

static int
upwire_handshake(struct pt_conn *c, int fd, void *tctx, uint32_t *want)
{
	struct upwire_conn	*x = tctx;
	char			 b[2];
	ssize_t			 n;

	(void)c;
	while (x->sent < x->hello_len) {
		n = send(fd, x->hello + x->sent, x->hello_len - x->sent,
		    MSG_NOSIGNAL);
		if (n < 0) {
			*want = EPOLLOUT;
			return -errno;
		}
		x->sent += (size_t)n;
	}
	while (x->got < 2) {
		n = recv(fd, b, 2 - x->got, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			*want = EPOLLIN;
			return -errno;
		}
		if (memcmp(b, "OK" + x->got, (size_t)n) != 0)
			return -EPROTO;
		x->got += (unsigned)n;
	}
	return 0;
}

static ssize_t
upwire_read(struct pt_conn *c, int fd, void *tctx, void *buf, size_t len,
    uint32_t *want)
{
	struct upwire_conn	*x = tctx;
	unsigned char		*p = buf;
	ssize_t			 n, i;

	(void)c;
	if ((n = recv(fd, buf, len, 0)) < 0) {
		*want = EPOLLIN;
		return -errno;
	}
	for (i = 0; i < n; i++)
		p[i] ^= x->key;
	return n;
}

static ssize_t
upwire_write(struct pt_conn *c, int fd, void *tctx, const void *buf,
    size_t len, uint32_t *want)
{
	struct upwire_conn	*x = tctx;
	unsigned char		 tmp[4096];
	size_t			 i;
	ssize_t			 n;

	(void)c;
	if (len > sizeof(tmp))
		len = sizeof(tmp);
	for (i = 0; i < len; i++)
		tmp[i] = ((const unsigned char *)buf)[i] ^ x->key;
	if ((n = send(fd, tmp, len, MSG_NOSIGNAL)) < 0) {
		*want = EPOLLOUT;
		return -errno;
	}
	return n;
}

static int
upwire_shutdown(struct pt_conn *c, int fd, void *tctx)
{
	(void)c;
	(void)tctx;
	return shutdown(fd, SHUT_WR) < 0 ? -errno : 0;
}

static void
upwire_free(struct pt_conn *c, void *tctx)
{
	(void)c;
	upwire_frees++;
	free(tctx);
}

static unsigned
upwire_plain(struct pt_conn *c, int fd, void *tctx)
{
	(void)c;
	(void)fd;
	(void)tctx;
	return 0;
}

static const struct pt_transport upwire_transport = {
	.name = "upwire",
	.handshake = upwire_handshake,
	.read = upwire_read,
	.write = upwire_write,
	.shutdown = upwire_shutdown,
	.free = upwire_free,
	.plain = upwire_plain,
};

PT_API const struct pt_module pt_module_upwire = {
	PT_MODULE_INIT,
	.name = "upwire",
	.upstream_conf = upwire_conf,
	.upstream_conf_free = upwire_conf_free,
	.upstream_new = upwire_new,
	.upstream_transport = &upwire_transport,
};
