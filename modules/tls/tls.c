/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tls module: a transport that puts TLS (OpenSSL 3) between a
 * listener's clients and the core, which then serves HTTP (CONNECT and
 * WebSocket included), SOCKS or TCP inside it as on a plain socket: an
 * HTTPS proxy, as `curl --proxy https://...` and browsers speak to.
 *
 * Everything here runs in the workers, on their loop, never blocking:
 * the server handshake, the session's end, the AUTH hook and the module
 * descriptor; the record I/O after the handshake is tls_io.c's, shared
 * with the client side (tls_client.c, an https parent upstream). The
 * core bounds the handshake with header_timeout. What this file does not
 * do: load certificates or read the configuration (tls_conf.c, in the
 * master before the fork).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "modules/tls/tls.h"

/*
 * A verified client certificate names the connection's user: subject
 * field <nid> of it (UTF-8) goes to pt_req_set_user, so later phases (an
 * ACL's user rules, LOG) see it. Returns the name (OPENSSL_free it), or
 * NULL when there is none: no certificate, no such field, an empty one
 * or one with a control character. Cut at PT_NAME_MAX bytes.
 */
static char *
tls_client_user(struct pt_conn *c, SSL *ssl, int nid)
{
	X509		*peer;
	X509_NAME_ENTRY	*e;
	unsigned char	*utf8 = NULL;
	int		 i, n;

	if (nid == NID_undef || (peer = SSL_get0_peer_certificate(ssl)) ==
	    NULL || SSL_get_verify_result(ssl) != X509_V_OK)
		return NULL;
	i = X509_NAME_get_index_by_NID(X509_get_subject_name(peer), nid, -1);
	if (i < 0 || (e = X509_NAME_get_entry(X509_get_subject_name(peer), i))
	    == NULL || (n = ASN1_STRING_to_UTF8(&utf8,
	    X509_NAME_ENTRY_get_data(e))) <= 0) {
		OPENSSL_free(utf8);
		return NULL;
	}
	/* A name that would break a log line (or hide in one) is none. */
	for (i = 0; i < n; i++) {
		if (utf8[i] < 0x20 || utf8[i] == 0x7f) {
			OPENSSL_free(utf8);
			return NULL;
		}
	}
	if (n > PT_NAME_MAX)
		n = PT_NAME_MAX;	/* what the core keeps */
	utf8[n] = '\0';
	pt_req_set_user(c, (const char *)utf8, (size_t)n);
	return (char *)utf8;
}

/* " ktls=tx,rx" (or one of them) when the kernel does the record layer,
 * " ktls=off" when it was asked for and could not, "" otherwise. */
static const char *
tls_ktls_fmt(SSL *ssl)
{
	bool	 tx = BIO_get_ktls_send(SSL_get_wbio(ssl));
	bool	 rx = BIO_get_ktls_recv(SSL_get_rbio(ssl));

	if (tx && rx)
		return " ktls=tx,rx";
	if (tx || rx)
		return tx ? " ktls=tx" : " ktls=rx";
	return (SSL_get_options(ssl) & SSL_OP_ENABLE_KTLS) ? " ktls=off" : "";
}

/*
 * A client that spoke plain HTTP to the TLS port (a proxy URL written
 * http:// for an https:// listener): OpenSSL recognises the request
 * line. The client cannot read an alert, so it gets what nginx sends in
 * that case, a plain 400 that says what is wrong, in one non-blocking
 * send on a socket that has sent nothing yet (the core then lingers, so
 * the request bytes left unread do not turn the close into a reset).
 */
static void
tls_plain_http_answer(int fd)
{
	static const char	 body[] = "400 Bad Request: plain HTTP was "
	    "sent to a TLS listener (an https:// proxy)\n";
	char			 msg[256];
	int			 n, reason = ERR_GET_REASON(ERR_peek_error());

	if (reason != SSL_R_HTTP_REQUEST && reason != SSL_R_HTTPS_PROXY_REQUEST)
		return;
	n = snprintf(msg, sizeof(msg), "HTTP/1.1 400 Bad Request\r\n"
	    "Content-Type: text/plain\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s", sizeof(body) - 1, body);
	if (n > 0 && (size_t)n < sizeof(msg))
		(void)send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static int
tls_handshake(struct pt_conn *c, int fd, void *tctx, uint32_t *want)
{
	struct tls_conn		*t = tctx;
	const struct tls_lconf	*lc;
	const char		*sni, *why;
	char			*user;
	int			 rc, err;

	if (t->ssl == NULL) {
		if ((lc = pt_conn_listener_ctx(c, &pt_module_tls)) == NULL)
			return -EINVAL;
		ERR_clear_error();
		if ((t->ssl = SSL_new(lc->ctx[0])) == NULL)
			return -ENOMEM;
		if (SSL_set_fd(t->ssl, fd) != 1)
			return -ENOMEM;
		/* For the ALPN callback (tls_conf.c). */
		SSL_set_app_data(t->ssl, c);
		SSL_set_accept_state(t->ssl);
	}
	ERR_clear_error();
	errno = 0;
	rc = SSL_do_handshake(t->ssl);
	err = errno;
	if (rc == 1) {
		t->done = true;
		pt_counter_add(tls_ctr_handshakes, 1);
		lc = pt_conn_listener_ctx(c, &pt_module_tls);
		user = lc != NULL ? tls_client_user(c, t->ssl, lc->user_nid) :
		    NULL;
		sni = SSL_get_servername(t->ssl, TLSEXT_NAMETYPE_host_name);
		pt_clog(c, PT_LOG_DEBUG, "tls: %s %s%s%s%s%s%s%s",
		    SSL_get_version(t->ssl), SSL_get_cipher_name(t->ssl),
		    SSL_session_reused(t->ssl) ? " resumed" : "",
		    sni != NULL ? " sni=" : "", sni != NULL ? sni : "",
		    user != NULL ? " user=" : "", user != NULL ? user : "",
		    tls_ktls_fmt(t->ssl));
		t->user = user;
		t->user_len = user != NULL ? strlen(user) : 0;
		return 0;
	}
	rc = tls_map(c, t, rc, err, want, "handshake");
	if (rc == 0)
		rc = -ECONNRESET;	/* the client closed in the middle */
	if (rc == -EPROTO)
		tls_plain_http_answer(fd);
	if (rc != -EAGAIN) {
		why = rc == -EPROTO ?
		    ERR_reason_error_string(ERR_peek_error()) : strerror(-rc);
		pt_clog(c, PT_LOG_INFO, "tls: handshake failed: %s",
		    why != NULL ? why : "protocol error");
	}
	return rc;
}

static void
tls_free(struct pt_conn *c, void *tctx)
{
	struct tls_conn	*t = tctx;

	if (t->ssl == NULL)
		return;
	if (!t->done)
		pt_counter_add(tls_ctr_failed, 1);
	tls_conn_end(c, t);
	OPENSSL_free(t->user);
	t->user = NULL;
}

/*
 * AUTH, before any credential checker (priority -1000): a connection whose
 * client certificate named a user keeps that user. The core takes the
 * user of Basic (or RFC 1929) credentials as given, and without this a
 * client holding bob's certificate could claim alice's name; put back,
 * the certificate's user meets a checker with the password sent for
 * another name, and is refused there.
 */
static enum pt_verdict
tls_on_auth(struct pt_conn *c, struct pt_req *req, void *modctx)
{
	struct tls_conn	*t = pt_conn_ctx(c, &pt_module_tls);

	if (t == NULL || t->user == NULL || (req->user.len == t->user_len &&
	    memcmp(req->user.ptr, t->user, t->user_len) == 0))
		return PT_VERDICT_CONTINUE;
	pt_clog(c, PT_LOG_INFO, "tls: credentials for another user ignored: "
	    "the client certificate names \"%s\"", t->user);
	pt_req_set_user(c, t->user, t->user_len);
	return PT_VERDICT_CONTINUE;
}

static const struct pt_hook tls_hooks[] = {
	{ PT_PHASE_AUTH, -1000, tls_on_auth },
	{ 0, 0, NULL }
};

static const struct pt_transport tls_transport = {
	.name = "tls",
	.handshake = tls_handshake,
	.read = tls_read,
	.write = tls_write,
	.shutdown = tls_shutdown,
	.free = tls_free,
	.pending = tls_pending,
	.plain = tls_plain,
};

PT_API const struct pt_module pt_module_tls = {
	PT_MODULE_INIT,
	.name = "tls",
	.conf = tls_conf,
	.hooks = tls_hooks,
	.transport = &tls_transport,
	.conn_ctx_size = sizeof(struct tls_conn),
	.listener_conf = tls_listener_conf,
	.listener_conf_free = tls_listener_conf_free,
	/* 1.7: TLS as the client on an upstream leg (tls_client.c). */
	.upstream_conf = tls_upstream_conf,
	.upstream_conf_free = tls_upstream_conf_free,
	.upstream_new = tls_upstream_new,
	.upstream_transport = &tls_upstream_transport,
};
