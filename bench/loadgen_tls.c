/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loadgen_tls: the TLS client of loadgen (--tls, --tls-resume), OpenSSL 3.
 * An HTTPS proxy is spoken to as curl --proxy https://... does: TLS to the
 * proxy, then the absolute-form GET or the CONNECT inside it, and a
 * tunnel's bytes inside that same TLS session.
 *
 * Every handshake offers TLS 1.3 only, the one cipher suite
 * TLS_AES_128_GCM_SHA256 and the one group X25519, so every proxy
 * negotiates the same thing and a proxy cannot look faster by choosing a
 * cheaper suite. The proxy's certificate is not verified (its signature
 * in CertificateVerify is: OpenSSL always checks it): that is the
 * client's cost, not the proxy's, and the same for every peer.
 *
 * With --tls-resume each client keeps the last session ticket its proxy
 * sent and offers it on each next connection (its first connection is a
 * full handshake), as openssl s_time -reuse does; how many handshakes
 * resumed is counted, so a proxy that ignores tickets shows it instead
 * of passing for a resumed one. A ticket is offered again until the proxy
 * sends a newer one: OpenSSL's client treats a TLS 1.3 session as used
 * once it resumed, so a copy is offered each time (a proxy that issues no
 * new ticket on a resumed connection, as portico's tls module does not,
 * would otherwise see every other handshake full). Handshakes that
 * follow a finished one of the same client are counted apart: only those
 * could offer a session, so a window too short for any client to come
 * back (none of them) says nothing about resumption, while some of them
 * with nothing offered say the proxy sent no ticket.
 *
 * Non-blocking, on the client's socket (a socket BIO, no read-ahead: bytes
 * not yet decrypted stay in the kernel and wake epoll). WANT_READ and
 * WANT_WRITE come back as -1 with errno EAGAIN and the events to wait for.
 *
 * Deliberately not here: kTLS on the client side (the client's cost must
 * not depend on the kernel), SNI and ALPN (the proxy is an address),
 * certificate verification (above), anything but TLS 1.3.
 *
 * Only this file includes OpenSSL; it is linked into loadgen only, never
 * into portico.
 */
#include "config.h"

#include "loadgen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#ifdef LG_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>

#define LG_TLS_SUITE	"TLS_AES_128_GCM_SHA256"
#define LG_TLS_GROUP	"X25519"

struct lg_tls {
	SSL		*ssl;
	SSL_SESSION	*sess;		/* the last ticket the proxy sent */
	bool		 done;		/* handshake finished */
	bool		 fatal;		/* no close_notify after this */
	bool		 offered;	/* this handshake offers a session */
	bool		 had_one;	/* a handshake of this client finished */
	bool		 repeat;	/* this handshake follows one of them */
};

static SSL_CTX		*lg_ctx;
static bool		 lg_resume;
static int		 lg_idx = -1;	/* ex_data: the struct lg_tls */
static char		 lg_seen[96];	/* version and suite of the first */

/* A new session (TLS 1.3: a ticket after the handshake): keep it as this
 * client's next offer. Returns 1: the reference is ours. */
static int
tls_on_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct lg_tls	*t = SSL_get_ex_data(ssl, lg_idx);

	if (t == NULL || !lg_resume)
		return 0;
	SSL_SESSION_free(t->sess);
	t->sess = sess;
	return 1;
}

int
lg_tls_init(const struct lg_opts *o)
{
	lg_resume = o->tls_resume;
	lg_ctx = SSL_CTX_new(TLS_client_method());
	if (lg_ctx == NULL ||
	    !SSL_CTX_set_min_proto_version(lg_ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(lg_ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_ciphersuites(lg_ctx, LG_TLS_SUITE) ||
	    !SSL_CTX_set1_groups_list(lg_ctx, LG_TLS_GROUP)) {
		fprintf(stderr, "loadgen: TLS setup failed\n");
		ERR_print_errors_fp(stderr);
		return -1;
	}
	SSL_CTX_set_verify(lg_ctx, SSL_VERIFY_NONE, NULL);
	/* A TCP EOF without close_notify reads as an EOF, as on a plain
	 * socket: the HTTP framing says whether the response was whole. */
	SSL_CTX_set_options(lg_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(lg_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_session_cache_mode(lg_ctx, lg_resume ?
	    SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE :
	    SSL_SESS_CACHE_OFF);
	SSL_CTX_sess_set_new_cb(lg_ctx, tls_on_new_session);
	lg_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	return lg_idx < 0 ? -1 : 0;
}

void
lg_tls_fini(void)
{
	SSL_CTX_free(lg_ctx);
	lg_ctx = NULL;
}

struct lg_tls *
lg_tls_new(void)
{
	return calloc(1, sizeof(struct lg_tls));
}

void
lg_tls_free(struct lg_tls *t)
{
	if (t == NULL)
		return;
	lg_tls_close(t);
	SSL_SESSION_free(t->sess);
	free(t);
}

/* Offers a copy of the client's last session (see the top). */
static int
tls_offer(struct lg_tls *t)
{
	SSL_SESSION	*copy = SSL_SESSION_dup(t->sess);
	int		 ok;

	if (copy == NULL)
		return -1;
	ok = SSL_set_session(t->ssl, copy);
	SSL_SESSION_free(copy);	/* the SSL holds its own reference */
	return ok ? 0 : -1;
}

int
lg_tls_start(struct lg_tls *t, int fd)
{
	ERR_clear_error();
	t->done = t->fatal = false;
	t->offered = lg_resume && t->sess != NULL;
	t->repeat = t->had_one;
	if ((t->ssl = SSL_new(lg_ctx)) == NULL ||
	    !SSL_set_fd(t->ssl, fd) ||
	    !SSL_set_ex_data(t->ssl, lg_idx, t) ||
	    (lg_resume && t->sess != NULL && tls_offer(t) < 0)) {
		lg_tls_close(t);
		errno = ENOMEM;
		return -1;
	}
	SSL_set_connect_state(t->ssl);
	return 0;
}

/*
 * What an OpenSSL call that returned <rc> means: -1 with errno EAGAIN
 * and *events_out (when not NULL) for a WANT_*, -1 with another errno for
 * a failure (EPROTO for a TLS error), 0 for an orderly end.
 */
static int
tls_result(struct lg_tls *t, int rc, uint32_t *events_out)
{
	int	 saved = errno;

	switch (SSL_get_error(t->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
		if (events_out != NULL)
			*events_out = EPOLLIN;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		if (events_out != NULL)
			*events_out = EPOLLOUT;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		t->fatal = true;
		/* errno 0: an EOF where OpenSSL wanted more (a reset, for
		 * the report). */
		errno = saved != 0 ? saved : ECONNRESET;
		return -1;
	default:
		t->fatal = true;
		errno = EPROTO;
		return -1;
	}
}

int
lg_tls_handshake(struct lg_tls *t, uint32_t *events_out,
    struct lg_result *res, bool count)
{
	const char	*v, *s;
	int		 rc;

	ERR_clear_error();
	errno = 0;
	rc = SSL_do_handshake(t->ssl);
	if (rc != 1) {
		/* An orderly end before the handshake finished is a
		 * refusal. */
		if (tls_result(t, rc, events_out) == 0)
			errno = ECONNRESET;
		return -1;
	}
	t->done = true;
	t->had_one = true;
	v = SSL_get_version(t->ssl);
	s = SSL_CIPHER_get_name(SSL_get_current_cipher(t->ssl));
	if (lg_seen[0] == '\0')
		snprintf(lg_seen, sizeof(lg_seen), "%s %s", v, s);
	if (strcmp(v, "TLSv1.3") != 0 || strcmp(s, LG_TLS_SUITE) != 0) {
		/* Cannot happen with what is offered; a proxy that managed
		 * it would not be comparable. */
		t->fatal = true;
		errno = EPROTO;
		return -1;
	}
	if (count) {
		res->tls_handshakes++;
		if (t->repeat)
			res->tls_repeat++;
		if (t->offered)
			res->tls_offered++;
		if (SSL_session_reused(t->ssl))
			res->tls_resumed++;
	}
	return 0;
}

ssize_t
lg_tls_read(struct lg_tls *t, void *buf, size_t len)
{
	size_t	 n = 0;
	int	 rc;

	ERR_clear_error();
	errno = 0;
	rc = SSL_read_ex(t->ssl, buf, len, &n);
	if (rc == 1)
		return (ssize_t)n;
	return tls_result(t, 0, NULL);
}

ssize_t
lg_tls_write(struct lg_tls *t, const void *buf, size_t len)
{
	size_t	 n = 0;
	int	 rc;

	ERR_clear_error();
	errno = 0;
	rc = SSL_write_ex(t->ssl, buf, len, &n);
	if (rc == 1)
		return (ssize_t)n;
	if (tls_result(t, 0, NULL) == 0)
		errno = EPIPE;	/* close_notify came: no more writing */
	return -1;
}

size_t
lg_tls_pending(const struct lg_tls *t)
{
	return t->ssl != NULL ? (size_t)SSL_pending(t->ssl) : 0;
}

void
lg_tls_close(struct lg_tls *t)
{
	if (t->ssl == NULL)
		return;
	/* One close_notify, not waited for, as a browser closing a
	 * connection does; never after a fatal error. */
	ERR_clear_error();
	if (t->done && !t->fatal)
		(void)SSL_shutdown(t->ssl);
	ERR_clear_error();
	SSL_free(t->ssl);
	t->ssl = NULL;
	t->done = false;
}

const char *
lg_tls_seen(void)
{
	return lg_seen[0] != '\0' ? lg_seen : NULL;
}

#else	/* !LG_TLS: configure found no OpenSSL 3 */

int
lg_tls_init(const struct lg_opts *o)
{
	(void)o;
	fprintf(stderr, "loadgen: --tls: built without OpenSSL 3 (install "
	    "libssl-dev and run configure again)\n");
	return -1;
}

/* Never reached: lg_tls_init failed and nothing else runs. */
void lg_tls_fini(void) { }
struct lg_tls *lg_tls_new(void) { return NULL; }
void lg_tls_free(struct lg_tls *t) { (void)t; }
int lg_tls_start(struct lg_tls *t, int fd) { (void)t; (void)fd; errno = ENOSYS; return -1; }
int lg_tls_handshake(struct lg_tls *t, uint32_t *ev, struct lg_result *r, bool c) { (void)t; (void)ev; (void)r; (void)c; errno = ENOSYS; return -1; }
ssize_t lg_tls_read(struct lg_tls *t, void *b, size_t l) { (void)t; (void)b; (void)l; errno = ENOSYS; return -1; }
ssize_t lg_tls_write(struct lg_tls *t, const void *b, size_t l) { (void)t; (void)b; (void)l; errno = ENOSYS; return -1; }
size_t lg_tls_pending(const struct lg_tls *t) { (void)t; return 0; }
void lg_tls_close(struct lg_tls *t) { (void)t; }
const char *lg_tls_seen(void) { return NULL; }

#endif
