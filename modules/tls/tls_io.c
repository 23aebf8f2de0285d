/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tls module's record I/O, shared by both of its transports: the
 * server side on a listener's client leg (tls.c) and the client side on
 * an upstream leg (tls_client.c, an https parent). Each call makes one
 * attempt and maps OpenSSL's WANT_READ/WANT_WRITE to -EAGAIN with the
 * epoll event it waits for; bytes OpenSSL decrypted but not yet handed
 * out are reported through pending(). What differs between the two
 * sides (the handshake, what a session starts from, what its end
 * counts) stays in their files. Also the text of an OpenSSL failure,
 * which the master's configuration reports too.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "modules/tls/tls.h"

/* Why OpenSSL's last call failed: its first queued reason, the one that
 * names the cause ("no start line"), not the wrapper ("PEM lib"). */
const char *
tls_reason(void)
{
	static char	 buf[160];
	unsigned long	 e = ERR_peek_error();
	const char	*r;

	if (e == 0)
		return "unknown error";
	if (ERR_SYSTEM_ERROR(e))
		return strerror(ERR_GET_REASON(e));
	if ((r = ERR_reason_error_string(e)) != NULL)
		return r;
	snprintf(buf, sizeof(buf), "OpenSSL error %#lx", e);
	return buf;
}

int
tls_map(struct pt_conn *c, struct tls_conn *t, int rc, int err,
    uint32_t *want, const char *op)
{
	char	 why[160];

	switch (SSL_get_error(t->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
		*want = EPOLLIN;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		*want = EPOLLOUT;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		t->broken = true;
		return err != 0 ? -err : -ECONNRESET;
	default:
		t->broken = true;
		/* A handshake failure is logged by its caller, once. */
		if (t->done) {
			ERR_error_string_n(ERR_peek_error(), why, sizeof(why));
			pt_clog(c, PT_LOG_INFO, "%s: %s: %s", tls_who(t), op,
			    why);
		}
		return -EPROTO;
	}
}

ssize_t
tls_read(struct pt_conn *c, int fd, void *tctx, void *buf, size_t len,
    uint32_t *want)
{
	struct tls_conn	*t = tctx;
	size_t		 n;
	int		 rc, err;

	(void)fd;
	ERR_clear_error();
	errno = 0;
	rc = SSL_read_ex(t->ssl, buf, len, &n);
	err = errno;
	if (rc == 1)
		return (ssize_t)n;
	return tls_map(c, t, rc, err, want, "read");
}

ssize_t
tls_write(struct pt_conn *c, int fd, void *tctx, const void *buf,
    size_t len, uint32_t *want)
{
	struct tls_conn	*t = tctx;
	size_t		 n;
	int		 rc, err;

	(void)fd;
	if (len == 0)
		return 0;
	ERR_clear_error();
	errno = 0;
	rc = SSL_write_ex(t->ssl, buf, len, &n);
	err = errno;
	if (rc == 1)
		return (ssize_t)n;
	rc = tls_map(c, t, rc, err, want, "write");
	return rc == 0 ? -EPIPE : rc;
}

size_t
tls_pending(struct pt_conn *c, void *tctx)
{
	struct tls_conn	*t = tctx;

	(void)c;
	/* Only decrypted bytes: a partial record in OpenSSL's buffer needs
	 * the socket, and reporting it would have the core spin. */
	return t->ssl != NULL ? (size_t)SSL_pending(t->ssl) : 0;
}

/*
 * Our close_notify, then the TCP FIN behind it. We do not wait for the
 * peer's close_notify: the core reads the peer until its own EOF
 * anyway. SSL_shutdown resumes a close_notify that a full socket cut
 * short when called again (-EAGAIN until then).
 */
int
tls_shutdown(struct pt_conn *c, int fd, void *tctx)
{
	struct tls_conn	*t = tctx;
	uint32_t	 want = 0;
	int		 rc, err;

	if (t->ssl != NULL && t->done && !t->broken && !t->shut) {
		ERR_clear_error();
		errno = 0;
		rc = SSL_shutdown(t->ssl);
		err = errno;
		if (rc < 0) {
			rc = tls_map(c, t, rc, err, &want, "shutdown");
			/* WANT_READ cannot happen before our alert is out;
			 * count it as out. */
			if (rc == -EAGAIN && want == EPOLLOUT)
				return -EAGAIN;
			if (rc < 0 && rc != -EAGAIN)
				return rc;
		}
		t->shut = true;
	}
	return shutdown(fd, SHUT_WR) < 0 ? -errno : 0;
}

/*
 * ABI 1.3: the directions kTLS took over (the kernel does the record
 * layer, so the socket carries plaintext): the core may then splice a
 * tunnel through the socket itself. A record that is not data (an alert,
 * a key update) makes the kernel refuse the splice (EINVAL), and the core
 * calls tls_read, whose SSL_read takes it with its record type. Once on,
 * kTLS stays on for the connection's life, as pt_transport.plain wants
 * of TX. A session that never asked for kTLS (the client side) says 0.
 */
unsigned
tls_plain(struct pt_conn *c, int fd, void *tctx)
{
	struct tls_conn	*t = tctx;
	unsigned	 f = 0;

	(void)c;
	(void)fd;
	if (t->ssl == NULL || !t->done)
		return 0;
	if (BIO_get_ktls_recv(SSL_get_rbio(t->ssl)))
		f |= PT_PLAIN_RX;
	if (BIO_get_ktls_send(SSL_get_wbio(t->ssl)))
		f |= PT_PLAIN_TX;
	return f;
}

void
tls_conn_end(struct pt_conn *c, struct tls_conn *t)
{
	if (t->ssl == NULL)
		return;
	/*
	 * The end of a connection the core closes without a half-close (an
	 * HTTP keep-alive connection, a timeout): one attempt at a
	 * close_notify so the peer can tell it from a truncation; a full
	 * socket just loses it. None when the core cuts it short: the
	 * reset says so, and a close_notify would say the data ended.
	 */
	if (t->done && !t->broken && !t->shut && !pt_conn_cut(c) &&
	    !(SSL_get_shutdown(t->ssl) & SSL_SENT_SHUTDOWN)) {
		ERR_clear_error();
		SSL_shutdown(t->ssl);
	}
	ERR_clear_error();
	SSL_free(t->ssl);
	t->ssl = NULL;
}
