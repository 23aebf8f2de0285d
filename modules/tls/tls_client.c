/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tls module as a client: TLS on an upstream leg (an https parent),
 * ABI 1.7. The core connects with TCP; this file makes the session on
 * that socket (pt_module.upstream_new), verifies the peer's chain and
 * name when asked, and hands the record I/O to tls_io.c, which the
 * server side uses too.
 *
 * Two processes: tls_upstream_conf and tls_upstream_conf_free run in
 * the master while a configuration loads or goes (one SSL_CTX per
 * upstream, its CAs read from disk there and then, so that no worker
 * reads a file), and everything else in the workers, on their loop,
 * never blocking. What this file does not do: decide which upstream
 * speaks TLS, or parse any configuration (the core hands over a
 * struct pt_upstream_tls).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "modules/tls/tls.h"

/* What every session to one upstream shares (master-built, read-only
 * in the workers, each of which inherits its copy). */
struct tls_uconf {
	SSL_CTX	*ctx;
	bool	 verify;
};

/* The error text handed back to the core (master only: one thread). */
static char	 tls_upstream_err[768];

/* The one protocol spoken through the session: HTTP/1.1 (a CONNECT or a
 * request to the parent). */
static const unsigned char tls_upstream_alpn[] = "\x08http/1.1";

static int __attribute__((format(printf, 2, 3)))
tls_upstream_fail(const char **errstr, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(tls_upstream_err, sizeof(tls_upstream_err), fmt, ap);
	va_end(ap);
	*errstr = tls_upstream_err;
	ERR_clear_error();
	return -1;
}

/*
 * The CAs that verify the upstream: <ca_file>, or the system bundle
 * (OpenSSL's default file, SSL_CERT_FILE first, as openssl(1) takes it).
 * Only files, read now: OpenSSL's default certificate directory is read
 * lazily, one file per issuer looked up, which would put blocking disk
 * reads in the workers' handshakes.
 */
static int
tls_upstream_load_cas(SSL_CTX *ctx, const char *ca_file,
    const char **errstr)
{
	const char	*path = ca_file;
	FILE		*f;

	if (path == NULL &&
	    ((path = getenv(X509_get_default_cert_file_env())) == NULL ||
	    *path == '\0'))
		path = X509_get_default_cert_file();
	/* errno's text, rather than OpenSSL's "system lib". */
	if ((f = fopen(path, "r")) == NULL)
		return tls_upstream_fail(errstr, ca_file != NULL ? "ca_file "
		    "\"%s\": %s" : "the system's CA bundle \"%s\": %s (set "
		    "ca_file)", path, strerror(errno));
	fclose(f);
	ERR_clear_error();
	if (X509_STORE_load_file(SSL_CTX_get_cert_store(ctx), path) != 1)
		return tls_upstream_fail(errstr, ca_file != NULL ? "ca_file "
		    "\"%s\": %s" : "the system's CA bundle \"%s\": %s (set "
		    "ca_file)", path, tls_reason());
	return 0;
}

int
tls_upstream_conf(const struct pt_upstream_tls *u, void **uctx_out,
    const char **errstr)
{
	struct tls_uconf	*uc;

	ERR_clear_error();
	if ((uc = calloc(1, sizeof(*uc))) == NULL)
		return tls_upstream_fail(errstr, "out of memory");
	if ((uc->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		free(uc);
		return tls_upstream_fail(errstr, "SSL_CTX_new: %s",
		    tls_reason());
	}
	uc->verify = u->verify;
	SSL_CTX_set_min_proto_version(uc->ctx, TLS1_2_VERSION);
	/*
	 * As on the server side: no renegotiation, no compression, and an
	 * upstream that closes without close_notify reads as a plain EOF
	 * (HTTP frames its messages; many servers close that way). No
	 * session cache: a session would be one worker's alone.
	 */
	SSL_CTX_set_options(uc->ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_session_cache_mode(uc->ctx, SSL_SESS_CACHE_OFF);
	/* The core writes what it can and comes back with the rest, maybe
	 * from a moved buffer; an idle session gives its record buffers
	 * back. */
	SSL_CTX_set_mode(uc->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	/* 0 is success here. */
	if (SSL_CTX_set_alpn_protos(uc->ctx, tls_upstream_alpn,
	    sizeof(tls_upstream_alpn) - 1) != 0) {
		tls_upstream_fail(errstr, "ALPN: %s", tls_reason());
		goto fail;
	}
	SSL_CTX_set_verify(uc->ctx, u->verify ? SSL_VERIFY_PEER :
	    SSL_VERIFY_NONE, NULL);
	/* A ca_file given is loaded (and so checked) even when not
	 * verifying; the system's bundle only when it is needed. */
	if ((u->ca_file != NULL || u->verify) &&
	    tls_upstream_load_cas(uc->ctx, u->ca_file, errstr) < 0)
		goto fail;
	*uctx_out = uc;
	return 0;
fail:
	tls_upstream_conf_free(uc);
	return -1;
}

void
tls_upstream_conf_free(void *uctx)
{
	struct tls_uconf	*uc = uctx;

	if (uc == NULL)
		return;
	SSL_CTX_free(uc->ctx);
	free(uc);
}

/* An address in text, v4 or v6 (no brackets): checked as an address,
 * never sent as SNI (RFC 6066 3). */
static bool
tls_upstream_is_address(const char *host)
{
	unsigned char	 a[16];

	return inet_pton(AF_INET, host, a) == 1 ||
	    inet_pton(AF_INET6, host, a) == 1;
}

/*
 * The session is allocated rather than kept in the connection's module
 * slot: it belongs to the upstream socket, not to the client's
 * connection (the slot is the server side's on a TLS listener), and may
 * one day outlive it in a pool of upstreams. OpenSSL allocates per
 * session anyway.
 */
int
tls_upstream_new(struct pt_conn *c, void *uctx, const char *sni,
    void **tctx_out)
{
	struct tls_uconf	*uc = uctx;
	struct tls_conn		*t;
	bool			 addr;
	int			 ok;

	/* Verifying a chain without a name would take any certificate
	 * that chain issued. */
	if (uc->verify && (sni == NULL || *sni == '\0'))
		return -EINVAL;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->upstream = true;
	addr = sni != NULL && tls_upstream_is_address(sni);
	ERR_clear_error();
	if ((t->ssl = SSL_new(uc->ctx)) == NULL) {
		free(t);
		return -ENOMEM;
	}
	SSL_set_connect_state(t->ssl);
	ok = sni == NULL || addr ||
	    SSL_set_tlsext_host_name(t->ssl, sni) == 1;
	if (ok && uc->verify && addr)
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl),
		    sni) == 1;
	else if (ok && uc->verify) {
		SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		ok = SSL_set1_host(t->ssl, sni) == 1;
	}
	if (!ok) {
		pt_clog(c, PT_LOG_INFO, "tls upstream: \"%s\": %s", sni,
		    tls_reason());
		ERR_clear_error();
		SSL_free(t->ssl);
		free(t);
		return -EINVAL;
	}
	*tctx_out = t;
	return 0;
}

static int
tls_upstream_handshake(struct pt_conn *c, int fd, void *tctx,
    uint32_t *want)
{
	struct tls_conn	*t = tctx;
	const char	*why, *sni;
	long		 v;
	int		 rc, err;

	if (SSL_get_fd(t->ssl) < 0 && SSL_set_fd(t->ssl, fd) != 1)
		return -ENOMEM;
	ERR_clear_error();
	errno = 0;
	rc = SSL_do_handshake(t->ssl);
	err = errno;
	sni = SSL_get_servername(t->ssl, TLSEXT_NAMETYPE_host_name);
	if (rc == 1) {
		t->done = true;
		pt_clog(c, PT_LOG_DEBUG, "tls upstream: %s %s%s%s%s",
		    SSL_get_version(t->ssl), SSL_get_cipher_name(t->ssl),
		    sni != NULL ? " sni=" : "", sni != NULL ? sni : "",
		    SSL_get_verify_mode(t->ssl) & SSL_VERIFY_PEER ?
		    " verified" : " not verified");
		return 0;
	}
	rc = tls_map(c, t, rc, err, want, "handshake");
	if (rc == -EAGAIN)
		return rc;
	if (rc == 0)
		rc = -ECONNRESET;	/* the upstream closed in the middle */
	/* The chain or the name, rather than the alert that followed. */
	if ((v = SSL_get_verify_result(t->ssl)) != X509_V_OK)
		why = X509_verify_cert_error_string(v);
	else
		why = rc == -EPROTO ? tls_reason() : strerror(-rc);
	pt_clog(c, PT_LOG_INFO, "tls upstream: handshake%s%s failed: %s%s",
	    sni != NULL ? " with " : "", sni != NULL ? sni : "",
	    v != X509_V_OK ? "certificate verify failed: " : "", why);
	return rc;
}

static void
tls_upstream_free(struct pt_conn *c, void *tctx)
{
	struct tls_conn	*t = tctx;

	if (t == NULL)
		return;
	tls_conn_end(c, t);
	free(t);
}

const struct pt_transport tls_upstream_transport = {
	.name = "tls upstream",
	.handshake = tls_upstream_handshake,
	.read = tls_read,
	.write = tls_write,
	.shutdown = tls_shutdown,
	.free = tls_upstream_free,
	.pending = tls_pending,
	/* Says 0: the client side never asks for kTLS, so its leg is
	 * never spliced. */
	.plain = tls_plain,
};
