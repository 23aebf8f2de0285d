/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/tls/tls_client.c (with tls_io.c): the client
 * transport an https parent gets, against a real OpenSSL server in this
 * process over a non-blocking socketpair. Certificates are made here with
 * OpenSSL calls (a CA, a second CA nobody trusts, a server certificate
 * for parent.test and 127.0.0.1 that the first one issued), so nothing
 * depends on files in the tree or on the clock beyond a day's margin.
 *
 * What must hold: a verified handshake completes through the transport's
 * own handshake() and moves bytes both ways (a megabyte each way, which
 * the socketpair cannot hold, so short writes and -EAGAIN with their
 * wants happen), pending() reports what a short read left, shutdown()
 * reaches the server as close_notify; SNI goes out for a name and never
 * for an address; a CA that did not issue the certificate, a name or an
 * address it does not carry each fail with -EPROTO and a log line that
 * says why; not verifying takes any certificate; and upstream_conf
 * refuses a missing or empty CA file and a missing system bundle with
 * the path in the message.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "modules/tls/tls.h"
#include "t/unit/check.h"

/* ---- the core's side, as far as the code under test reaches it ------- */

static char	 t_dummy_conn;
#define T_CONN	((struct pt_conn *)(void *)&t_dummy_conn)

/* The last line logged, for tests that check why something failed. */
static char	 t_log[1024];

void
pt_clog(struct pt_conn *c, int level, const char *fmt, ...)
{
	va_list	 ap;

	(void)c;
	(void)level;
	va_start(ap, fmt);
	vsnprintf(t_log, sizeof(t_log), fmt, ap);
	va_end(ap);
}

bool
pt_conn_cut(const struct pt_conn *c)
{
	(void)c;
	return false;
}

/* ---- certificates ------------------------------------------------------ */

static char	 t_dir[256];
static char	 t_ca_good[300], t_ca_other[300], t_ca_empty[300];
static SSL_CTX	*t_srv_ctx;
/* The SNI the server saw last ("" for none). */
static char	 t_srv_sni[256];

/* Suite set-up, outside any test: failures are returned, not asserted
 * (CUnit has no test to pin an assertion on there). */
static bool
t_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX	 v;
	X509_EXTENSION	*e;
	bool		 ok;

	X509V3_set_ctx_nodb(&v);
	X509V3_set_ctx(&v, issuer, x, NULL, NULL, 0);
	if ((e = X509V3_EXT_conf_nid(NULL, &v, nid, value)) == NULL)
		return false;
	ok = X509_add_ext(x, e, -1) == 1;
	X509_EXTENSION_free(e);
	return ok;
}

/* A certificate for <key> named <cn>, issued by <issuer> with <ikey>
 * (NULL: self-signed), a CA when <san> is NULL, else a server for
 * <san>. NULL on failure. */
static X509 *
t_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey,
    const char *san)
{
	static long	 serial = 1;
	X509		*x = X509_new(), *by = issuer != NULL ? issuer : x;
	bool		 ok;

	if (x == NULL)
		return NULL;
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN",
	    MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(by));
	ok = t_ext(x, by, NID_subject_key_identifier, "hash");
	if (san == NULL)
		ok = ok && t_ext(x, x, NID_basic_constraints,
		    "critical,CA:TRUE") && t_ext(x, x, NID_key_usage,
		    "critical,keyCertSign,cRLSign");
	else
		ok = ok && t_ext(x, by, NID_authority_key_identifier,
		    "keyid:always") && t_ext(x, by, NID_basic_constraints,
		    "CA:FALSE") && t_ext(x, by, NID_ext_key_usage,
		    "serverAuth") && t_ext(x, by, NID_subject_alt_name, san);
	if (!ok || X509_sign(x, ikey != NULL ? ikey : key, EVP_sha256()) <= 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static bool
t_write_pem(const char *path, X509 *x)
{
	FILE	*f = fopen(path, "w");
	bool	 ok;

	if (f == NULL)
		return false;
	ok = x != NULL && PEM_write_X509(f, x) == 1;
	return fclose(f) == 0 && ok;
}

static int
t_on_servername(SSL *ssl, int *alert, void *arg)
{
	const char	*n = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

	(void)alert;
	(void)arg;
	snprintf(t_srv_sni, sizeof(t_srv_sni), "%s", n != NULL ? n : "");
	return SSL_TLSEXT_ERR_OK;
}

static int
t_suite_init(void)
{
	const char	*tmp = getenv("TMPDIR");
	EVP_PKEY	*ca_key, *other_key, *srv_key;
	X509		*ca, *other, *srv;
	FILE		*f;

	snprintf(t_dir, sizeof(t_dir), "%s/pt-tls-client-XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(t_dir) == NULL)
		return -1;
	snprintf(t_ca_good, sizeof(t_ca_good), "%s/ca.pem", t_dir);
	snprintf(t_ca_other, sizeof(t_ca_other), "%s/other.pem", t_dir);
	snprintf(t_ca_empty, sizeof(t_ca_empty), "%s/empty.pem", t_dir);
	ca_key = EVP_EC_gen("P-256");
	other_key = EVP_EC_gen("P-256");
	srv_key = EVP_EC_gen("P-256");
	if (ca_key == NULL || other_key == NULL || srv_key == NULL)
		return -1;
	ca = t_cert(ca_key, "portico test CA", NULL, NULL, NULL);
	other = t_cert(other_key, "portico test CA", NULL, NULL, NULL);
	if (ca == NULL || other == NULL)
		return -1;
	srv = t_cert(srv_key, "parent.test", ca, ca_key,
	    "DNS:parent.test,IP:127.0.0.1");
	if (srv == NULL || !t_write_pem(t_ca_good, ca) ||
	    !t_write_pem(t_ca_other, other))
		return -1;
	if ((f = fopen(t_ca_empty, "w")) == NULL)
		return -1;
	fputs("not a certificate\n", f);
	fclose(f);
	if ((t_srv_ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
	    SSL_CTX_use_certificate(t_srv_ctx, srv) != 1 ||
	    SSL_CTX_use_PrivateKey(t_srv_ctx, srv_key) != 1)
		return -1;
	SSL_CTX_set_tlsext_servername_callback(t_srv_ctx, t_on_servername);
	X509_free(ca);
	X509_free(other);
	X509_free(srv);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(other_key);
	EVP_PKEY_free(srv_key);
	return 0;
}

static int
t_suite_fini(void)
{
	SSL_CTX_free(t_srv_ctx);
	unlink(t_ca_good);
	unlink(t_ca_other);
	unlink(t_ca_empty);
	rmdir(t_dir);
	return 0;
}

/* ---- one client session against the server ----------------------------- */

struct t_pair {
	int				 fd[2];	/* [0]: ours, the client's */
	void				*uctx;
	void				*tctx;
	SSL				*srv;
	const struct pt_transport	*tr;
};

/* A session to the test server with <ca> (NULL: the system's), <verify>
 * and <sni>. */
static void
t_pair_open(struct t_pair *p, const char *ca, bool verify, const char *sni)
{
	struct pt_upstream_tls	 u = { .ca_file = ca, .verify = verify,
				    .file = "t_client.c", .line = 1 };
	const char		*err = NULL;

	memset(p, 0, sizeof(*p));
	p->tr = &tls_upstream_transport;
	t_srv_sni[0] = '\0';
	t_log[0] = '\0';
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, p->fd) == 0);
	CHECKF(tls_upstream_conf(&u, &p->uctx, &err) == 0, "conf: %s",
	    err != NULL ? err : "?");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p->uctx);
	CU_ASSERT_FATAL(tls_upstream_new(T_CONN, p->uctx, sni, &p->tctx) == 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p->srv = SSL_new(t_srv_ctx));
	SSL_set_fd(p->srv, p->fd[1]);
	SSL_set_accept_state(p->srv);
}

static void
t_pair_close(struct t_pair *p)
{
	p->tr->free(T_CONN, p->tctx);
	SSL_free(p->srv);
	tls_upstream_conf_free(p->uctx);
	close(p->fd[0]);
	close(p->fd[1]);
	ERR_clear_error();
}

/*
 * Both handshakes, alternating, each from its own side of the pair: the
 * client's through the transport. 0 when both completed, the client's
 * -errno when it failed, -EIO when only the server failed, -ETIMEDOUT
 * when neither got anywhere.
 */
static int
t_handshake(struct t_pair *p)
{
	bool		 cdone = false, sdone = false;
	uint32_t	 want;
	int		 i, rc, e;

	for (i = 0; i < 100 && !(cdone && sdone); i++) {
		if (!cdone) {
			want = 0;
			rc = p->tr->handshake(T_CONN, p->fd[0], p->tctx,
			    &want);
			if (rc == 0)
				cdone = true;
			else if (rc != -EAGAIN)
				return rc;
			else
				CU_ASSERT(want == EPOLLIN || want == EPOLLOUT);
		}
		if (!sdone) {
			rc = SSL_do_handshake(p->srv);
			e = SSL_get_error(p->srv, rc);
			if (rc == 1)
				sdone = true;
			else if (e != SSL_ERROR_WANT_READ &&
			    e != SSL_ERROR_WANT_WRITE)
				return -EIO;
		}
	}
	return cdone && sdone ? 0 : -ETIMEDOUT;
}

/* Byte i of a test stream. */
static unsigned char
t_byte(size_t i, unsigned seed)
{
	return (unsigned char)((i * 131 + seed) ^ (i >> 9));
}

#define T_BULK	(1024 * 1024)

/*
 * A megabyte from the client through the transport to the server, then
 * one back. Each turn, the writer writes until the socket is full and
 * the reader reads until it is empty, so that both sides wait.
 */
static void
t_bulk_both_ways(struct t_pair *p)
{
	unsigned char	*out = malloc(T_BULK), *in = malloc(T_BULK);
	size_t		 sent = 0, got = 0, i, n;
	uint32_t	 want;
	ssize_t		 r;
	int		 waits = 0, rounds;

	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	for (i = 0; i < T_BULK; i++)
		out[i] = t_byte(i, 7);
	for (rounds = 0; got < T_BULK && rounds < 10000; rounds++) {
		while (sent < T_BULK) {
			want = 0;
			r = p->tr->write(T_CONN, p->fd[0], p->tctx,
			    out + sent, T_BULK - sent, &want);
			if (r == -EAGAIN) {
				CU_ASSERT_EQUAL(want, EPOLLOUT);
				waits++;
				break;
			}
			CU_ASSERT_FATAL(r > 0);
			sent += (size_t)r;
		}
		while (SSL_read_ex(p->srv, in + got, T_BULK - got, &n) == 1)
			got += n;
	}
	CU_ASSERT_EQUAL(got, T_BULK);
	CU_ASSERT(memcmp(in, out, T_BULK) == 0);
	/* A megabyte cannot fit in a socketpair: writes had to wait. */
	CU_ASSERT(waits > 0);

	for (i = 0; i < T_BULK; i++)
		out[i] = t_byte(i, 11);
	memset(in, 0, T_BULK);
	sent = got = 0;
	waits = 0;
	for (rounds = 0; got < T_BULK && rounds < 10000; rounds++) {
		while (sent < T_BULK &&
		    SSL_write_ex(p->srv, out + sent, T_BULK - sent, &n) == 1)
			sent += n;
		for (;;) {
			want = 0;
			r = p->tr->read(T_CONN, p->fd[0], p->tctx, in + got,
			    T_BULK - got, &want);
			if (r == -EAGAIN) {
				CU_ASSERT_EQUAL(want, EPOLLIN);
				waits++;
				break;
			}
			CU_ASSERT_FATAL(r > 0);
			got += (size_t)r;
			if (got == T_BULK)
				break;
		}
	}
	CU_ASSERT_EQUAL(got, T_BULK);
	CU_ASSERT(memcmp(in, out, T_BULK) == 0);
	CU_ASSERT(waits > 1);
	free(out);
	free(in);
}

/* ---- tests -------------------------------------------------------- */

static void
test_tls_client_verified_session_moves_bytes(void)
{
	struct t_pair	 p;
	char		 buf[64];
	uint32_t	 want;
	size_t		 n;
	ssize_t		 r;

	t_pair_open(&p, t_ca_good, true, "parent.test");
	CU_ASSERT_EQUAL_FATAL(t_handshake(&p), 0);
	CU_ASSERT_STRING_EQUAL(t_srv_sni, "parent.test");
	CU_ASSERT_EQUAL(SSL_get_verify_result(((struct tls_conn *)
	    p.tctx)->ssl), X509_V_OK);
	CU_ASSERT(SSL_version(((struct tls_conn *)p.tctx)->ssl) >=
	    TLS1_2_VERSION);
	/* The client side never splices: nothing said kTLS. */
	CU_ASSERT_EQUAL(p.tr->plain(T_CONN, p.fd[0], p.tctx), 0);

	/* One record of 40 bytes, read 10 at a time: the rest is held
	 * where no epoll event will announce it. */
	CU_ASSERT(SSL_write_ex(p.srv,
	    "0123456789abcdefghijklmnopqrstuvwxyzABCD", 40, &n) == 1);
	want = 0;
	r = p.tr->read(T_CONN, p.fd[0], p.tctx, buf, 10, &want);
	/* TLS 1.3 tickets come first: the read takes them and waits. */
	while (r == -EAGAIN)
		r = p.tr->read(T_CONN, p.fd[0], p.tctx, buf, 10, &want);
	CU_ASSERT_EQUAL(r, 10);
	CU_ASSERT(memcmp(buf, "0123456789", 10) == 0);
	CU_ASSERT_EQUAL(p.tr->pending(T_CONN, p.tctx), 30);
	r = p.tr->read(T_CONN, p.fd[0], p.tctx, buf, sizeof(buf), &want);
	CU_ASSERT_EQUAL(r, 30);
	CU_ASSERT_EQUAL(p.tr->pending(T_CONN, p.tctx), 0);
	want = 0;
	CU_ASSERT_EQUAL(p.tr->read(T_CONN, p.fd[0], p.tctx, buf, sizeof(buf),
	    &want), -EAGAIN);
	CU_ASSERT_EQUAL(want, EPOLLIN);

	t_bulk_both_ways(&p);

	/* Our close_notify, then the FIN: the server reads a clean end. */
	CU_ASSERT_EQUAL(p.tr->shutdown(T_CONN, p.fd[0], p.tctx), 0);
	CU_ASSERT(SSL_read_ex(p.srv, buf, sizeof(buf), &n) == 0);
	CU_ASSERT_EQUAL(SSL_get_error(p.srv, 0), SSL_ERROR_ZERO_RETURN);
	t_pair_close(&p);
}

static void
test_tls_client_checks_an_address_as_an_address(void)
{
	struct t_pair	 p;

	t_pair_open(&p, t_ca_good, true, "127.0.0.1");
	CU_ASSERT_EQUAL(t_handshake(&p), 0);
	/* RFC 6066: no SNI for an address. */
	CU_ASSERT_STRING_EQUAL(t_srv_sni, "");
	t_pair_close(&p);

	t_pair_open(&p, t_ca_good, true, "127.0.0.2");
	CU_ASSERT_EQUAL(t_handshake(&p), -EPROTO);
	CHECKF(strstr(t_log, "IP address mismatch") != NULL, "log: %s",
	    t_log);
	t_pair_close(&p);
}

static void
test_tls_client_refuses_another_ca(void)
{
	struct t_pair	 p;

	t_pair_open(&p, t_ca_other, true, "parent.test");
	CU_ASSERT_EQUAL(t_handshake(&p), -EPROTO);
	CHECKF(strstr(t_log, "certificate verify failed") != NULL &&
	    strstr(t_log, "parent.test") != NULL, "log: %s", t_log);
	CU_ASSERT_NOT_EQUAL(SSL_get_verify_result(((struct tls_conn *)
	    p.tctx)->ssl), X509_V_OK);
	t_pair_close(&p);
}

static void
test_tls_client_refuses_another_name(void)
{
	struct t_pair	 p;

	t_pair_open(&p, t_ca_good, true, "other.test");
	CU_ASSERT_EQUAL(t_handshake(&p), -EPROTO);
	CU_ASSERT_STRING_EQUAL(t_srv_sni, "other.test");
	CHECKF(strstr(t_log, "hostname mismatch") != NULL, "log: %s", t_log);
	t_pair_close(&p);
}

static void
test_tls_client_without_verify_takes_any_certificate(void)
{
	struct t_pair	 p;

	t_pair_open(&p, t_ca_other, false, "other.test");
	CU_ASSERT_EQUAL(t_handshake(&p), 0);
	CU_ASSERT_STRING_EQUAL(t_srv_sni, "other.test");
	t_pair_close(&p);
	/* And without a name at all. */
	t_pair_open(&p, NULL, false, NULL);
	CU_ASSERT_EQUAL(t_handshake(&p), 0);
	CU_ASSERT_STRING_EQUAL(t_srv_sni, "");
	t_pair_close(&p);
}

static void
test_tls_client_verify_needs_a_name(void)
{
	struct pt_upstream_tls	 u = { .ca_file = t_ca_good, .verify = true };
	const char		*err = NULL;
	void			*uctx = NULL, *tctx = NULL;

	CU_ASSERT_FATAL(tls_upstream_conf(&u, &uctx, &err) == 0);
	CU_ASSERT_EQUAL(tls_upstream_new(T_CONN, uctx, NULL, &tctx), -EINVAL);
	CU_ASSERT_EQUAL(tls_upstream_new(T_CONN, uctx, "", &tctx), -EINVAL);
	CU_ASSERT_PTR_NULL(tctx);
	tls_upstream_conf_free(uctx);
}

static void
test_tls_client_conf_refuses_bad_ca_files(void)
{
	struct pt_upstream_tls	 u = { .verify = true };
	const char		*err = NULL;
	char			 missing[320], *saved;
	void			*uctx = NULL;

	snprintf(missing, sizeof(missing), "%s/missing.pem", t_dir);
	u.ca_file = missing;
	CU_ASSERT_EQUAL(tls_upstream_conf(&u, &uctx, &err), -1);
	CHECKF(err != NULL && strstr(err, missing) != NULL &&
	    strstr(err, "No such file") != NULL, "%s", err != NULL ? err : "");
	CU_ASSERT_PTR_NULL(uctx);

	/* A file is loaded when named, verifying or not. */
	u.ca_file = t_ca_empty;
	u.verify = false;
	err = NULL;
	CU_ASSERT_EQUAL(tls_upstream_conf(&u, &uctx, &err), -1);
	CHECKF(err != NULL && strstr(err, t_ca_empty) != NULL, "%s",
	    err != NULL ? err : "");

	/* The system's bundle, as SSL_CERT_FILE names it. */
	saved = getenv("SSL_CERT_FILE") != NULL ?
	    strdup(getenv("SSL_CERT_FILE")) : NULL;
	setenv("SSL_CERT_FILE", missing, 1);
	u.ca_file = NULL;
	u.verify = true;
	err = NULL;
	CU_ASSERT_EQUAL(tls_upstream_conf(&u, &uctx, &err), -1);
	CHECKF(err != NULL && strstr(err, "system's CA bundle") != NULL &&
	    strstr(err, missing) != NULL, "%s", err != NULL ? err : "");
	setenv("SSL_CERT_FILE", t_ca_good, 1);
	CU_ASSERT_EQUAL(tls_upstream_conf(&u, &uctx, &err), 0);
	tls_upstream_conf_free(uctx);
	if (saved != NULL)
		setenv("SSL_CERT_FILE", saved, 1);
	else
		unsetenv("SSL_CERT_FILE");
	free(saved);
}

void	register_tls_client_suite(void);

void
register_tls_client_suite(void)
{
	CU_pSuite	 s = CU_add_suite("tls_client", t_suite_init,
			    t_suite_fini);

	CU_add_test(s, "verified_session_moves_bytes",
	    test_tls_client_verified_session_moves_bytes);
	CU_add_test(s, "checks_an_address_as_an_address",
	    test_tls_client_checks_an_address_as_an_address);
	CU_add_test(s, "refuses_another_ca",
	    test_tls_client_refuses_another_ca);
	CU_add_test(s, "refuses_another_name",
	    test_tls_client_refuses_another_name);
	CU_add_test(s, "without_verify_takes_any_certificate",
	    test_tls_client_without_verify_takes_any_certificate);
	CU_add_test(s, "verify_needs_a_name",
	    test_tls_client_verify_needs_a_name);
	CU_add_test(s, "conf_refuses_bad_ca_files",
	    test_tls_client_conf_refuses_bad_ca_files);
}
