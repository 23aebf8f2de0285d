/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tls module's configuration, in the master: the module entry (no
 * options), and each listener's `tls` group turned into one SSL_CTX per
 * certificate before the fork, so every worker inherits the loaded
 * certificates, keys and session ticket keys (OpenSSL makes those per
 * SSL_CTX at creation: a ticket one worker issued is one every worker
 * can open). A certificate or key that does not load, or a key that does
 * not match its certificate, refuses the configuration with the
 * setting's file:line; the core then keeps a running configuration on
 * reload. The two callbacks set on each SSL_CTX (SNI, ALPN) run in the
 * workers, during handshakes; nothing else here does.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "modules/common/conf_list.h"
#include "modules/common/conf_opts.h"
#include "modules/tls/tls.h"

/* Certificates warned about when they expire sooner than this. */
#define TLS_EXPIRY_WARN_DAYS	30
/* certificate = [...]: key types side by side in one SSL_CTX (RSA,
 * ECDSA, Ed25519); OpenSSL holds one of each. */
#define TLS_PAIRS_MAX		4

/* The error text handed back to the core (master only: one thread). */
static char	 tls_err[768];

int	tls_ctr_handshakes = -1;
int	tls_ctr_failed = -1;

/* Options shared by every certificate of a listener. */
struct tls_opts {
	int			 min_version;
	int			 max_version;	/* 0: the newest */
	const config_setting_t	*ciphers;	/* TLS <= 1.2, or NULL */
	const config_setting_t	*ciphersuites;	/* TLS 1.3 */
	/* Client certificates: the CA file that verifies them (NULL: none
	 * asked for), whether one is required, and a CRL file. */
	const config_setting_t	*client_ca;
	const config_setting_t	*client_crl;
	bool			 client_required;
	int			 user_nid;	/* or NID_undef */
	bool			 tickets;
	bool			 ktls;
	unsigned		 ticket_rotate;	/* seconds */
	const config_setting_t	*ticket_key_file;	/* or NULL */
	const config_setting_t	*certificates;	/* the list, or NULL */
};

/* Default seconds per ticket key period: a ticket opens for one to two
 * periods. */
#define TLS_TICKET_ROTATE_DEFAULT	3600
#define TLS_TICKET_ROTATE_MAX		(7 * 86400)
/* Most bytes of a ticket key file that count. */
#define TLS_TICKET_FILE_MAX		4096

/* The master's own ticket secret, made at the first configuration and
 * kept for the life of the master: a reload keeps sessions resumable.
 * Workers inherit it with the fork. */
static unsigned char	 tls_master_secret[TLS_TICKET_SECRET_LEN];
static bool		 tls_master_secret_made;

/* tls_err, and mc->where, as a configuration parser's error. */
#define TLS_CONF_ERR(mc)	{ tls_err, sizeof(tls_err), &(mc)->where, "" }

/* Hands the error in tls_err to the core: -1. What OpenSSL queued on
 * the way is dropped (the message already took what it needed). */
static int
tls_failed(const char **errstr)
{
	*errstr = tls_err;
	ERR_clear_error();
	return -1;
}

static int __attribute__((format(printf, 4, 5)))
tls_fail(struct pt_modconf *mc, const config_setting_t *where,
    const char **errstr, const char *fmt, ...)
{
	struct conf_err	 e = TLS_CONF_ERR(mc);
	va_list		 ap;

	va_start(ap, fmt);
	conf_vfail(&e, where, fmt, ap);
	va_end(ap);
	return tls_failed(errstr);
}

int
tls_conf(struct pt_modconf *mc, const config_setting_t *node,
    const char **errstr)
{
	static const char *const	 keys[] = { "name", "path", NULL };
	const config_setting_t		*e;
	const char			*name;

	if ((name = conf_unknown_key(node, keys, &e)) != NULL)
		return tls_fail(mc, e, errstr, "unknown option \"%s\" (the "
		    "tls module's options go in each listener's tls group)",
		    name);
	tls_ctr_handshakes = pt_counter_register("tls_handshakes");
	tls_ctr_failed = pt_counter_register("tls_handshake_failed");
	mc->ctx = NULL;
	return 0;
}

/* ---- callbacks, run by the workers during handshakes --------------- */

/* The client's SNI name picks the certificate; no name, or one no
 * certificate has, keeps the default. */
static int
tls_on_servername(SSL *ssl, int *alert, void *arg)
{
	const struct tls_lconf	*lc = arg;
	const char		*name;
	int			 i;

	name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	if (name == NULL)
		return SSL_TLSEXT_ERR_NOACK;
	i = tls_names_pick(lc->names, lc->nnames, name, strlen(name));
	if (i < 0)
		return SSL_TLSEXT_ERR_NOACK;
	if (i > 0 && SSL_set_SSL_CTX(ssl, lc->ctx[i]) == NULL) {
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

/*
 * RFC 6066 3: a session must not resume under another server name. The
 * session context OpenSSL compares when it resumes (a TLS 1.2 session or
 * ticket, a TLS 1.3 PSK) becomes, for each handshake, the listener's
 * (sid_ctx) hashed with this ClientHello's SNI name (lower case, without
 * a trailing dot; "" for none). It is set here, before OpenSSL looks the
 * session up, and the servername callback's SSL_set_SSL_CTX keeps it
 * (OpenSSL only replaces a context that is still the old SSL_CTX's): a
 * session made under another name fails the comparison and the
 * handshake goes on in full, while the same name resumes as before.
 */
static int
tls_on_client_hello(SSL *ssl, int *alert, void *arg)
{
	const struct tls_lconf	*lc = arg;
	const unsigned char	*p;
	unsigned char		 buf[sizeof(lc->sid_ctx) + 256], sid[32];
	size_t			 len, n, nl, i;
	unsigned		 slen = 0;

	memcpy(buf, lc->sid_ctx, sizeof(lc->sid_ctx));
	n = sizeof(lc->sid_ctx);
	/* server_name: list length (2), type (1), name length (2), name. */
	if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p,
	    &len) == 1 && len >= 5 && p[2] == TLSEXT_NAMETYPE_host_name) {
		nl = (size_t)p[3] << 8 | p[4];
		if (nl <= 255 && 5 + nl <= len) {
			for (i = 0; i < nl; i++)
				buf[n++] = (unsigned char)(p[5 + i] >= 'A' &&
				    p[5 + i] <= 'Z' ? p[5 + i] + 32 : p[5 + i]);
			if (nl > 0 && buf[n - 1] == '.')
				n--;
		}
	}
	if (EVP_Digest(buf, n, sid, &slen, EVP_sha256(), NULL) != 1 ||
	    slen != sizeof(sid) || SSL_set_session_id_context(ssl, sid,
	    slen) != 1) {
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_CLIENT_HELLO_ERROR;
	}
	return SSL_CLIENT_HELLO_SUCCESS;
}

/*
 * ALPN (RFC 7301): "h2" first where the listener speaks HTTP/2
 * (pt_conn_http2; the core tells it by the client preface that follows),
 * else "http/1.1". A client that offers neither gets no ALPN answer
 * rather than an alert, the lenient choice RFC 7301 allows for a server
 * that can still serve.
 */
static int
tls_on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char	 h2[] = "\x02h2\x08http/1.1";
	static const unsigned char	 h1[] = "\x08http/1.1";
	const struct pt_conn		*c = SSL_get_app_data(ssl);
	unsigned char			*sel;
	int				 rc;

	(void)arg;
	if (c != NULL && pt_conn_http2(c))
		rc = SSL_select_next_proto(&sel, outlen, h2, sizeof(h2) - 1,
		    in, inlen);
	else
		rc = SSL_select_next_proto(&sel, outlen, h1, sizeof(h1) - 1,
		    in, inlen);
	if (rc != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/* OpenSSL's ticket callback: the keys of the current period seal new
 * tickets; a ticket sealed with the previous or the next period's keys
 * (a host whose clock is a little ahead) still opens, and is renewed, as
 * is every TLS 1.3 ticket. */
static int
tls_on_ticket(SSL *ssl, unsigned char name[16], unsigned char *iv,
    EVP_CIPHER_CTX *cctx, EVP_MAC_CTX *hctx, int enc)
{
	const struct tls_lconf	*lc;
	struct tls_ticket_keys	 k;
	OSSL_PARAM		 params[3];
	uint64_t		 now;
	int			 d, rc = 1;

	lc = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	if (lc == NULL || lc->ticket_rotate == 0)
		return enc ? -1 : 0;
	now = (uint64_t)time(NULL) / lc->ticket_rotate;
	if (enc) {
		if (tls_ticket_derive(lc->ticket_secret, lc->label, now, &k)
		    < 0 || RAND_bytes(iv, 16) != 1 ||
		    EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k.aes,
		    iv) != 1)
			return -1;
		memcpy(name, k.name, sizeof(k.name));
	} else {
		for (d = 0; d < 3; d++) {
			/* now, now - 1, now + 1 */
			if (tls_ticket_derive(lc->ticket_secret, lc->label,
			    d == 0 ? now : d == 1 ? now - 1 : now + 1, &k) < 0)
				return -1;
			if (memcmp(name, k.name, sizeof(k.name)) == 0)
				break;
		}
		if (d == 3)
			return 0;	/* unknown or old: full handshake */
		if (EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k.aes,
		    iv) != 1)
			return -1;
		/* Renewed also when TLS 1.3 resumes: its clients use a
		 * ticket once (RFC 8446 C.4), so a resumption that sent none
		 * would make every other handshake a full one. */
		rc = d == 0 && SSL_version(ssl) < TLS1_3_VERSION ? 1 : 2;
	}
	params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY,
	    k.mac, sizeof(k.mac));
	params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)"SHA256", 0);
	params[2] = OSSL_PARAM_construct_end();
	if (EVP_MAC_CTX_set_params(hctx, params) != 1)
		return -1;
	OPENSSL_cleanse(&k, sizeof(k));
	return rc;
}

/* OCSP stapling: the response read for the certificate this handshake
 * uses (OpenSSL has chosen it by now, by SNI and key type), if any. */
static int
tls_on_status(SSL *ssl, void *arg)
{
	const struct tls_lconf	*lc;
	X509			*x = SSL_get_certificate(ssl);
	unsigned char		*copy;
	size_t			 i;

	lc = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	for (i = 0; lc != NULL && x != NULL && i < lc->nocsp; i++) {
		if (X509_cmp(lc->ocsp[i].cert, x) != 0)
			continue;
		/* OpenSSL frees what it is given. */
		if ((copy = OPENSSL_memdup(lc->ocsp[i].der, lc->ocsp[i].len))
		    == NULL)
			return SSL_TLSEXT_ERR_NOACK;
		SSL_set_tlsext_status_ocsp_resp(ssl, copy,
		    (long)lc->ocsp[i].len);
		return SSL_TLSEXT_ERR_OK;
	}
	return SSL_TLSEXT_ERR_NOACK;
}

/* An encrypted key would make OpenSSL prompt on the terminal; refuse it
 * instead (the master has no one to ask, least of all on reload). */
static int
tls_no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return 0;
}

/* ---- loading --------------------------------------------------------- */

/* 0 when <path> can be opened for reading, else -errno. */
static int
tls_readable(const char *path)
{
	FILE	*f;

	if ((f = fopen(path, "r")) == NULL)
		return -errno;
	fclose(f);
	return 0;
}


/*
 * Asks clients for a certificate that <o>->client_ca verifies (and that
 * <o>->client_crl does not revoke, for the client's own certificate):
 * required, or optional (a client without one goes on unauthenticated,
 * one with a bad one is refused).
 */
static int
tls_client_verify(struct pt_modconf *mc, SSL_CTX *ctx,
    const struct tls_opts *o, const char **errstr)
{
	const char		*ca = config_setting_get_string(o->client_ca);
	STACK_OF(X509_NAME)	*names;
	X509_STORE		*st;
	const char		*crl;
	int			 rc;

	if ((rc = tls_readable(ca)) < 0)
		return tls_fail(mc, o->client_ca, errstr, "\"%s\": %s", ca,
		    strerror(-rc));
	ERR_clear_error();
	if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 ||
	    (names = SSL_load_client_CA_file(ca)) == NULL)
		return tls_fail(mc, o->client_ca, errstr, "\"%s\": %s", ca,
		    tls_reason());
	SSL_CTX_set_client_CA_list(ctx, names);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (o->client_required ?
	    SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
	if (o->client_crl == NULL)
		return 0;
	crl = config_setting_get_string(o->client_crl);
	if ((rc = tls_readable(crl)) < 0)
		return tls_fail(mc, o->client_crl, errstr, "\"%s\": %s", crl,
		    strerror(-rc));
	st = SSL_CTX_get_cert_store(ctx);
	if (X509_STORE_load_file(st, crl) != 1)
		return tls_fail(mc, o->client_crl, errstr, "\"%s\": %s", crl,
		    tls_reason());
	X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
	return 0;
}

static SSL_CTX *
tls_ctx_new(struct pt_modconf *mc, const struct tls_opts *o,
    struct tls_lconf *lc, const char **errstr)
{
	SSL_CTX	*ctx;

	ERR_clear_error();
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		tls_fail(mc, NULL, errstr, "SSL_CTX_new: %s", tls_reason());
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, o->min_version);
	if (o->max_version != 0)
		SSL_CTX_set_max_proto_version(ctx, o->max_version);
	/*
	 * No renegotiation (a client-driven CPU sink); a peer that closes
	 * without close_notify reads as a plain EOF (HTTP frames its own
	 * messages, and most clients do close that way); no session cache:
	 * its state would live in one worker, while tickets work in all.
	 */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	/* kTLS: OpenSSL hands the record layer to the kernel where the
	 * kernel (the tls module) and the cipher allow, per connection and
	 * direction, and keeps it otherwise. */
	if (o->ktls)
		SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
	/*
	 * The core writes what it can and comes back with the rest, maybe
	 * from a moved buffer; idle connections give their record buffers
	 * back (tens of KiB each).
	 */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_default_passwd_cb(ctx, tls_no_passphrase);
	if (o->ciphers != NULL && SSL_CTX_set_cipher_list(ctx,
	    config_setting_get_string(o->ciphers)) != 1) {
		tls_fail(mc, o->ciphers, errstr, "\"%s\": %s",
		    config_setting_get_string(o->ciphers), tls_reason());
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (o->ciphersuites != NULL && SSL_CTX_set_ciphersuites(ctx,
	    config_setting_get_string(o->ciphersuites)) != 1) {
		tls_fail(mc, o->ciphersuites, errstr, "\"%s\": %s",
		    config_setting_get_string(o->ciphersuites), tls_reason());
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_client_hello_cb(ctx, tls_on_client_hello, lc);
	SSL_CTX_set_tlsext_servername_callback(ctx, tls_on_servername);
	SSL_CTX_set_tlsext_servername_arg(ctx, lc);
	SSL_CTX_set_alpn_select_cb(ctx, tls_on_alpn, NULL);
	/* A session resumes only on the listener that made it (one that
	 * verifies client certificates must not take a session from one
	 * that does not); OpenSSL needs the context once it verifies. */
	SSL_CTX_set_session_id_context(ctx, lc->sid_ctx, sizeof(lc->sid_ctx));
	SSL_CTX_set_app_data(ctx, lc);
	SSL_CTX_set_tlsext_status_cb(ctx, tls_on_status);
	if (o->tickets) {
		SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, tls_on_ticket);
		SSL_CTX_set_timeout(ctx, (long)o->ticket_rotate);
	} else {
		SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
		SSL_CTX_set_num_tickets(ctx, 0);
	}
	if (o->client_ca != NULL && tls_client_verify(mc, ctx, o, errstr) < 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static int
tls_name_add(struct tls_lconf *lc, const char *name, size_t len, int cert)
{
	struct tls_name	*n;
	char		*p;
	size_t		 i;

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len == 0 || memchr(name, '\0', len) != NULL)
		return 0;	/* nothing a client could send */
	if ((n = realloc(lc->names, (lc->nnames + 1) * sizeof(*n))) == NULL)
		return -1;
	lc->names = n;
	if ((p = malloc(len + 1)) == NULL)
		return -1;
	for (i = 0; i < len; i++)
		p[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ?
		    name[i] - 'A' + 'a' : name[i]);
	p[len] = '\0';
	n[lc->nnames].pattern = p;
	n[lc->nnames].cert = cert;
	lc->nnames++;
	return 0;
}

/* The DNS names of <x> (subjectAltName; the subject's CN when it has
 * none), as SNI candidates for certificate <cert>. */
static int
tls_names_of(struct tls_lconf *lc, X509 *x, int cert)
{
	GENERAL_NAMES		*san;
	const GENERAL_NAME	*g;
	X509_NAME_ENTRY		*cn;
	unsigned char		*utf8;
	int			 i, n, rc = 0, found = 0;

	if ((san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL))
	    != NULL) {
		for (i = 0; i < sk_GENERAL_NAME_num(san) && rc == 0; i++) {
			g = sk_GENERAL_NAME_value(san, i);
			if (g->type != GEN_DNS)
				continue;
			found++;
			rc = tls_name_add(lc, (const char *)
			    ASN1_STRING_get0_data(g->d.dNSName),
			    (size_t)ASN1_STRING_length(g->d.dNSName), cert);
		}
		GENERAL_NAMES_free(san);
	}
	if (found > 0 || rc != 0)
		return rc;
	i = X509_NAME_get_index_by_NID(X509_get_subject_name(x),
	    NID_commonName, -1);
	if (i < 0 || (cn = X509_NAME_get_entry(X509_get_subject_name(x), i))
	    == NULL)
		return 0;
	if ((n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(cn))) < 0)
		return 0;
	rc = tls_name_add(lc, (const char *)utf8, (size_t)n, cert);
	OPENSSL_free(utf8);
	return rc;
}

/* A warning, not an error: an expired certificate still loads, and
 * refusing it would stop a restart of a proxy that is serving anyway. */
static void
tls_check_expiry(struct pt_modconf *mc, const config_setting_t *s, X509 *x,
    const char *path)
{
	const char	*file = config_setting_source_file(s);
	int		 days, secs;
	int		 line = (int)config_setting_source_line(s);

	if (file == NULL)
		file = mc->file;
	if (!ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x)))
		return;
	if (days < 0 || secs < 0 || (days == 0 && secs == 0))
		pt_log(PT_LOG_WARNING, "%s:%d: tls: certificate \"%s\" has "
		    "expired (%d days ago)", file, line, path, -days);
	else if (days < TLS_EXPIRY_WARN_DAYS)
		pt_log(PT_LOG_WARNING, "%s:%d: tls: certificate \"%s\" "
		    "expires in %d days", file, line, path, days);
	if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
		pt_log(PT_LOG_WARNING, "%s:%d: tls: certificate \"%s\" is not "
		    "valid yet", file, line, path);
}

/* One certificate chain and its key into <ctx>, key checked against it. */
static int
tls_load_pair(struct pt_modconf *mc, SSL_CTX *ctx, struct tls_lconf *lc,
    int cert, const config_setting_t *cs, const config_setting_t *ks,
    const char **errstr)
{
	const char	*cpath = config_setting_get_string(cs);
	const char	*kpath = config_setting_get_string(ks);
	X509		*x;
	int		 rc;

	if ((rc = tls_readable(cpath)) < 0)
		return tls_fail(mc, cs, errstr, "certificate \"%s\": %s", cpath,
		    strerror(-rc));
	if ((rc = tls_readable(kpath)) < 0)
		return tls_fail(mc, ks, errstr, "key \"%s\": %s", kpath,
		    strerror(-rc));
	ERR_clear_error();
	/* The certificate first: OpenSSL drops a key that does not match a
	 * certificate loaded after it without a word, while a key loaded
	 * after its certificate is checked against it. */
	if (SSL_CTX_use_certificate_chain_file(ctx, cpath) != 1)
		return tls_fail(mc, cs, errstr, "certificate \"%s\": %s", cpath,
		    tls_reason());
	if ((x = SSL_CTX_get0_certificate(ctx)) == NULL)
		return tls_fail(mc, cs, errstr, "certificate \"%s\": none "
		    "loaded", cpath);
	if (SSL_CTX_use_PrivateKey_file(ctx, kpath, SSL_FILETYPE_PEM) != 1) {
		if (ERR_GET_REASON(ERR_peek_last_error()) ==
		    X509_R_KEY_VALUES_MISMATCH)
			return tls_fail(mc, ks, errstr, "key \"%s\" does not "
			    "match certificate \"%s\"", kpath, cpath);
		return tls_fail(mc, ks, errstr, "key \"%s\": %s", kpath,
		    tls_reason());
	}
	if (SSL_CTX_check_private_key(ctx) != 1)
		return tls_fail(mc, ks, errstr, "key \"%s\" does not match "
		    "certificate \"%s\"", kpath, cpath);
	tls_check_expiry(mc, cs, x, cpath);
	if (tls_names_of(lc, x, cert) < 0)
		return tls_fail(mc, NULL, errstr, "out of memory");
	return 0;
}

/* certificate = "a" or ["a", "b"]: the strings of <s> into out[]; their
 * count, or -1 (not strings, none, or more than TLS_PAIRS_MAX). */
static int
tls_paths(const config_setting_t *s, const config_setting_t **out)
{
	const config_setting_t	*e;
	int			 i, n;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		out[0] = s;
		return 1;
	}
	if (!config_setting_is_aggregate(s))
		return -1;
	n = config_setting_length(s);
	if (n < 1 || n > TLS_PAIRS_MAX)
		return -1;
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned)i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING)
			return -1;
		out[i] = e;
	}
	return n;
}

/* A warning with the file:line of setting <s>. */
static void __attribute__((format(printf, 4, 5)))
tls_warn(struct pt_modconf *mc, const config_setting_t *s, const char *what,
    const char *fmt, ...)
{
	char		 msg[512];
	const char	*file = config_setting_source_file(s);
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pt_log(PT_LOG_WARNING, "%s:%d: tls: %s \"%s\" %s", file != NULL ?
	    file : mc->file, (int)config_setting_source_line(s), what,
	    config_setting_get_string(s), msg);
}

/*
 * The OCSP response in file <s> (DER) for certificate <x>, the one just
 * loaded into <ctx>: it must parse and be a successful response; when
 * the chain holds <x>'s issuer it must also answer for <x>. A revoked
 * status or a response past its next update is warned about (the
 * operator's cron may be late), not refused.
 */
static int
tls_load_ocsp(struct pt_modconf *mc, SSL_CTX *ctx, struct tls_lconf *lc,
    X509 *x, const config_setting_t *s, const char **errstr)
{
	const char		*path = config_setting_get_string(s);
	unsigned char		*der = NULL;
	OCSP_RESPONSE		*resp = NULL;
	OCSP_BASICRESP		*basic = NULL;
	OCSP_CERTID		*id = NULL;
	STACK_OF(X509)		*chain = NULL;
	ASN1_GENERALIZEDTIME	*next = NULL;
	struct tls_ocsp		*no;
	X509			*issuer = NULL;
	int			 i, status = -1, reason, rc = -1;
	BIO			*b;

	ERR_clear_error();
	if ((b = BIO_new_file(path, "rb")) == NULL)
		return tls_fail(mc, s, errstr, "\"%s\": %s", path,
		    tls_reason());
	resp = d2i_OCSP_RESPONSE_bio(b, NULL);
	BIO_free(b);
	if (resp == NULL)
		return tls_fail(mc, s, errstr, "\"%s\": not an OCSP "
		    "response (DER): %s", path, tls_reason());
	if (OCSP_response_status(resp) != OCSP_RESPONSE_STATUS_SUCCESSFUL ||
	    (basic = OCSP_response_get1_basic(resp)) == NULL) {
		tls_fail(mc, s, errstr, "\"%s\": response status %s", path,
		    OCSP_response_status_str(OCSP_response_status(resp)));
		goto out;
	}
	SSL_CTX_get0_chain_certs(ctx, &chain);
	for (i = 0; chain != NULL && i < sk_X509_num(chain); i++)
		if (X509_check_issued(sk_X509_value(chain, i), x) == X509_V_OK)
			issuer = sk_X509_value(chain, i);
	if (issuer != NULL) {
		if ((id = OCSP_cert_to_id(NULL, x, issuer)) == NULL ||
		    OCSP_resp_find_status(basic, id, &status, &reason, NULL,
		    NULL, &next) != 1) {
			tls_fail(mc, s, errstr, "\"%s\" does not answer for "
			    "its certificate", path);
			goto out;
		}
		if (status == V_OCSP_CERTSTATUS_REVOKED)
			tls_warn(mc, s, "ocsp_response", "says the "
			    "certificate is revoked");
		if (next != NULL && X509_cmp_current_time(next) < 0)
			tls_warn(mc, s, "ocsp_response", "is past its next "
			    "update");
	}
	if ((i = i2d_OCSP_RESPONSE(resp, &der)) <= 0 ||
	    (no = realloc(lc->ocsp, (lc->nocsp + 1) * sizeof(*no))) == NULL) {
		OPENSSL_free(der);
		tls_fail(mc, NULL, errstr, "out of memory");
		goto out;
	}
	lc->ocsp = no;
	/* OPENSSL_malloc'd: freed with OPENSSL_free, copied per handshake */
	no[lc->nocsp].der = der;
	no[lc->nocsp].len = (size_t)i;
	X509_up_ref(x);
	no[lc->nocsp].cert = x;
	lc->nocsp++;
	rc = 0;
out:
	OCSP_CERTID_free(id);
	OCSP_BASICRESP_free(basic);
	OCSP_RESPONSE_free(resp);
	return rc;
}

/* One group with certificate and key (the listener's own, or an entry of
 * its `certificates`) into lc->ctx[<cert>]. */
static int
tls_load_group(struct pt_modconf *mc, const config_setting_t *g,
    const struct tls_opts *o, struct tls_lconf *lc, int cert,
    const char **errstr)
{
	static const char *const keys[] = {
		"certificate", "key", "ocsp_response", NULL
	};
	const config_setting_t	*cs, *ks, *os, *e;
	const config_setting_t	*cp[TLS_PAIRS_MAX], *kp[TLS_PAIRS_MAX];
	const config_setting_t	*op[TLS_PAIRS_MAX];
	const char		*name;
	int			 i, nc, nk;

	/* An entry of `certificates` takes these only (the listener's own
	 * group is checked by tls_parse_opts). */
	if (cert > 0 && (name = conf_unknown_key(g, keys, &e)) != NULL)
		return tls_fail(mc, e, errstr, "unknown option \"%s\" "
		    "(certificate, key, ocsp_response)", name);
	cs = config_setting_get_member(g, "certificate");
	ks = config_setting_get_member(g, "key");
	os = config_setting_get_member(g, "ocsp_response");
	if (cs == NULL || ks == NULL)
		return tls_fail(mc, g, errstr, "certificate and key are "
		    "both required");
	if ((nc = tls_paths(cs, cp)) < 0)
		return tls_fail(mc, cs, errstr, "expected a file name, or a "
		    "list of 1 to %d (one per key type)", TLS_PAIRS_MAX);
	if ((nk = tls_paths(ks, kp)) < 0 || nk != nc)
		return tls_fail(mc, ks, errstr, "expected as many key files as "
		    "certificate files (%d)", nc);
	if (os != NULL && tls_paths(os, op) != nc)
		return tls_fail(mc, os, errstr, "expected one file per "
		    "certificate file (%d)", nc);
	if ((lc->ctx[cert] = tls_ctx_new(mc, o, lc, errstr)) == NULL)
		return -1;
	lc->nctx = cert + 1;
	for (i = 0; i < nc; i++) {
		if (tls_load_pair(mc, lc->ctx[cert], lc, cert, cp[i], kp[i],
		    errstr) < 0)
			return -1;
		if (os != NULL && tls_load_ocsp(mc, lc->ctx[cert], lc,
		    SSL_CTX_get0_certificate(lc->ctx[cert]), op[i], errstr) < 0)
			return -1;
	}
	return 0;
}

/* ---- a listener's options ------------------------------------------- */

/* The values of tls_opt_table that a kind of conf_opts cannot check. */

static int
tls_opt_version(struct conf_err *e, const config_setting_t *s, void *field)
{
	const char	*v = config_setting_get_string(s);

	if (v == NULL || tls_version_parse(v, field) < 0)
		return conf_fail(e, s, "expected \"TLSv1\", \"TLSv1.1\", "
		    "\"TLSv1.2\" or \"TLSv1.3\"");
	return 0;
}

static int
tls_opt_rotate(struct conf_err *e, const config_setting_t *s, void *field)
{
	if (config_setting_type(s) != CONFIG_TYPE_INT ||
	    config_setting_get_int(s) < 1 ||
	    config_setting_get_int(s) > TLS_TICKET_ROTATE_MAX)
		return conf_fail(e, s, "expected seconds, 1 to %d",
		    TLS_TICKET_ROTATE_MAX);
	*(unsigned *)field = (unsigned)config_setting_get_int(s);
	return 0;
}

static int
tls_opt_client_verify(struct conf_err *e, const config_setting_t *s,
    void *field)
{
	const char	*v = config_setting_get_string(s);

	if (v != NULL && strcmp(v, "require") == 0)
		*(bool *)field = true;
	else if (v != NULL && strcmp(v, "optional") == 0)
		*(bool *)field = false;
	else
		return conf_fail(e, s, "expected \"require\" or "
		    "\"optional\"");
	return 0;
}

static int
tls_opt_user_field(struct conf_err *e, const config_setting_t *s,
    void *field)
{
	const char	*v = config_setting_get_string(s);
	int		*nid = field;

	if (v != NULL && strcmp(v, "none") == 0)
		*nid = NID_undef;
	else if (v == NULL || (*nid = OBJ_txt2nid(v)) == NID_undef)
		return conf_fail(e, s, "expected a subject field (\"CN\", "
		    "\"emailAddress\", \"UID\", ...) or \"none\"");
	return 0;
}

#define TLS_OPT(key, kind, member, expect, fn)				\
	{ key, kind, offsetof(struct tls_opts, member), expect, fn }

/* Every key of a listener's tls group. */
static const struct conf_opt tls_opt_table[] = {
	/* Read by tls_load_group. */
	{ "certificate", CONF_OPT_SKIP, 0, NULL, NULL },
	{ "key", CONF_OPT_SKIP, 0, NULL, NULL },
	{ "ocsp_response", CONF_OPT_SKIP, 0, NULL, NULL },
	TLS_OPT("certificates", CONF_OPT_LIST, certificates, "expected a "
	    "list of groups ( { certificate = ...; key = ...; }, ... )", NULL),
	TLS_OPT("min_version", CONF_OPT_FN, min_version, NULL,
	    tls_opt_version),
	TLS_OPT("max_version", CONF_OPT_FN, max_version, NULL,
	    tls_opt_version),
	TLS_OPT("ciphers", CONF_OPT_STRING, ciphers, "expected a string "
	    "(OpenSSL's syntax)", NULL),
	TLS_OPT("ciphersuites", CONF_OPT_STRING, ciphersuites, "expected a "
	    "string (OpenSSL's syntax)", NULL),
	TLS_OPT("client_ca", CONF_OPT_STRING, client_ca, "expected a file "
	    "name (PEM)", NULL),
	TLS_OPT("client_crl", CONF_OPT_STRING, client_crl, "expected a file "
	    "name (PEM)", NULL),
	TLS_OPT("session_tickets", CONF_OPT_BOOL, tickets, "expected true "
	    "or false", NULL),
	TLS_OPT("ktls", CONF_OPT_BOOL, ktls, "expected true or false", NULL),
	TLS_OPT("ticket_rotate", CONF_OPT_FN, ticket_rotate, NULL,
	    tls_opt_rotate),
	TLS_OPT("ticket_key_file", CONF_OPT_STRING, ticket_key_file,
	    "expected a file name", NULL),
	TLS_OPT("client_verify", CONF_OPT_FN, client_required, NULL,
	    tls_opt_client_verify),
	TLS_OPT("user_field", CONF_OPT_FN, user_nid, NULL,
	    tls_opt_user_field),
	{ NULL, CONF_OPT_SKIP, 0, NULL, NULL }
};

/* The options every certificate of the listener shares. */
static int
tls_parse_opts(struct pt_modconf *mc, const config_setting_t *node,
    struct tls_opts *o, const config_setting_t **list, const char **errstr)
{
	struct conf_err		 err = TLS_CONF_ERR(mc);
	const config_setting_t	*e;
	unsigned		 i;

	memset(o, 0, sizeof(*o));
	o->min_version = TLS1_2_VERSION;
	o->client_required = true;
	o->user_nid = NID_commonName;
	o->tickets = true;
	o->ticket_rotate = TLS_TICKET_ROTATE_DEFAULT;
	*list = NULL;
	if (conf_opts_read(&err, node, tls_opt_table, o) < 0)
		return tls_failed(errstr);
	*list = o->certificates;
	for (i = 0; o->client_ca == NULL && i < 3; i++)
		if ((e = config_setting_get_member(node, (const char *[]){
		    "client_crl", "client_verify", "user_field" }[i])) != NULL)
			return tls_fail(mc, e, errstr, "needs client_ca");
	if (o->max_version != 0 && o->max_version < o->min_version)
		return tls_fail(mc, config_setting_get_member(node,
		    "max_version"), errstr, "max_version is below min_version");
	return 0;
}

/* Adds the bytes of file <path> to <md>; an unreadable file adds nothing
 * (its loader reports it, with its line). */
static void
tls_digest_file(EVP_MD_CTX *md, const char *path)
{
	unsigned char	 buf[16384];
	size_t		 n;
	FILE		*f;

	if ((f = fopen(path, "rb")) == NULL)
		return;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		EVP_DigestUpdate(md, buf, n);
	fclose(f);
}

/*
 * What a session from this listener vouches for: SHA-256 of the
 * listener's name and, when it verifies clients, of how (required or
 * not, the user field, the CA and CRL files' bytes). It is the session
 * id context and is mixed into the ticket secret, so a session resumes
 * only on the same listener with the same client policy: a reload with a
 * new CRL ends the sessions of clients it revokes (of all clients, in
 * fact), where an unchanged one keeps them.
 */
static int
tls_session_context(const struct tls_opts *o, struct tls_lconf *lc)
{
	EVP_MD_CTX	*md;
	unsigned char	 pol[5];
	unsigned	 len = 0;
	int		 ok;

	if ((md = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(md, lc->label, strlen(lc->label) + 1) == 1;
	if (ok && o->client_ca != NULL) {
		pol[0] = o->client_required;
		pol[1] = (unsigned char)(o->user_nid >> 24);
		pol[2] = (unsigned char)(o->user_nid >> 16);
		pol[3] = (unsigned char)(o->user_nid >> 8);
		pol[4] = (unsigned char)o->user_nid;
		EVP_DigestUpdate(md, pol, sizeof(pol));
		tls_digest_file(md, config_setting_get_string(o->client_ca));
		EVP_DigestUpdate(md, "\0crl", 4);
		if (o->client_crl != NULL)
			tls_digest_file(md,
			    config_setting_get_string(o->client_crl));
	}
	ok = ok && EVP_DigestFinal_ex(md, lc->sid_ctx, &len) == 1 &&
	    len == sizeof(lc->sid_ctx);
	EVP_MD_CTX_free(md);
	return ok ? 0 : -1;
}

/* The ticket secret, bound to the session context: SHA-256 of both. */
static int
tls_ticket_bind(struct tls_lconf *lc, const unsigned char *secret)
{
	unsigned char	 both[TLS_TICKET_SECRET_LEN + sizeof(lc->sid_ctx)];
	unsigned	 len = 0;
	int		 ok;

	memcpy(both, secret, TLS_TICKET_SECRET_LEN);
	memcpy(both + TLS_TICKET_SECRET_LEN, lc->sid_ctx, sizeof(lc->sid_ctx));
	ok = EVP_Digest(both, sizeof(both), lc->ticket_secret, &len,
	    EVP_sha256(), NULL) == 1 && len == TLS_TICKET_SECRET_LEN;
	OPENSSL_cleanse(both, sizeof(both));
	return ok ? 0 : -1;
}

/*
 * The listener's ticket secret: from its ticket_key_file (so hosts
 * sharing the file resume each other's sessions), else the master's own,
 * made once; bound to the session context (tls_session_context).
 */
static int
tls_ticket_setup(struct pt_modconf *mc, const struct tls_opts *o,
    struct tls_lconf *lc, const char **errstr)
{
	unsigned char	 buf[TLS_TICKET_FILE_MAX];
	unsigned char	 secret[TLS_TICKET_SECRET_LEN];
	const char	*path;
	struct stat	 st;
	size_t		 n;
	FILE		*f;
	int		 rc;

	if ((lc->label = strdup(mc->listener != NULL ? mc->listener : ""))
	    == NULL)
		return tls_fail(mc, NULL, errstr, "out of memory");
	if (tls_session_context(o, lc) < 0)
		return tls_fail(mc, NULL, errstr, "SHA-256: %s", tls_reason());
	lc->ticket_rotate = o->tickets ? o->ticket_rotate : 0;
	if (!o->tickets)
		return 0;
	if (o->ticket_key_file == NULL) {
		if (!tls_master_secret_made && RAND_priv_bytes(
		    tls_master_secret, sizeof(tls_master_secret)) != 1)
			return tls_fail(mc, NULL, errstr, "RAND_priv_bytes: "
			    "%s", tls_reason());
		tls_master_secret_made = true;
		if (tls_ticket_bind(lc, tls_master_secret) < 0)
			return tls_fail(mc, NULL, errstr, "SHA-256: %s",
			    tls_reason());
		return 0;
	}
	path = config_setting_get_string(o->ticket_key_file);
	if ((f = fopen(path, "rb")) == NULL)
		return tls_fail(mc, o->ticket_key_file, errstr, "\"%s\": %s",
		    path, strerror(errno));
	n = fread(buf, 1, sizeof(buf), f);
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077) != 0)
		pt_log(PT_LOG_WARNING, "%s:%d: tls: ticket_key_file \"%s\" "
		    "can be read by others (chmod 600)",
		    config_setting_source_file(o->ticket_key_file) != NULL ?
		    config_setting_source_file(o->ticket_key_file) : mc->file,
		    (int)config_setting_source_line(o->ticket_key_file), path);
	fclose(f);
	rc = tls_ticket_secret_from(buf, n, secret);
	OPENSSL_cleanse(buf, sizeof(buf));
	if (rc < 0)
		return tls_fail(mc, o->ticket_key_file, errstr, "\"%s\": "
		    "%zu bytes, at least %d needed (make one with `openssl "
		    "rand 80 > file`)", path, n, TLS_TICKET_SECRET_LEN);
	rc = tls_ticket_bind(lc, secret);
	OPENSSL_cleanse(secret, sizeof(secret));
	if (rc < 0)
		return tls_fail(mc, NULL, errstr, "SHA-256: %s", tls_reason());
	return 0;
}

int
tls_listener_conf(struct pt_modconf *mc, const config_setting_t *node,
    void *modctx, void **lctx_out, const char **errstr)
{
	const config_setting_t	*list, *g;
	struct tls_opts		 o;
	struct tls_lconf	*lc;
	int			 i, n;

	if (node == NULL)
		return 1;
	if (config_setting_type(node) != CONFIG_TYPE_GROUP)
		return tls_fail(mc, node, errstr, "expected a group "
		    "{ certificate = ...; key = ...; }");
	if (tls_parse_opts(mc, node, &o, &list, errstr) < 0)
		return -1;
	n = 1 + (list != NULL ? config_setting_length(list) : 0);
	if ((lc = calloc(1, sizeof(*lc))) == NULL ||
	    (lc->ctx = calloc((size_t)n, sizeof(*lc->ctx))) == NULL) {
		free(lc);
		return tls_fail(mc, NULL, errstr, "out of memory");
	}
	lc->user_nid = o.client_ca != NULL ? o.user_nid : NID_undef;
	/* Before the contexts: they take sid_ctx from it. */
	if (tls_ticket_setup(mc, &o, lc, errstr) < 0)
		goto fail;
	if (tls_load_group(mc, node, &o, lc, 0, errstr) < 0)
		goto fail;
	for (i = 1; i < n; i++) {
		g = config_setting_get_elem(list, (unsigned)(i - 1));
		if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
			tls_fail(mc, g, errstr, "expected a group "
			    "{ certificate = ...; key = ...; }");
			goto fail;
		}
		if (tls_load_group(mc, g, &o, lc, i, errstr) < 0)
			goto fail;
	}
	*lctx_out = lc;
	return 0;
fail:
	tls_listener_conf_free(lc);
	return -1;
}

void
tls_listener_conf_free(void *lctx)
{
	struct tls_lconf	*lc = lctx;
	size_t			 i;
	int			 j;

	if (lc == NULL)
		return;
	for (j = 0; j < lc->nctx; j++)
		SSL_CTX_free(lc->ctx[j]);
	for (i = 0; i < lc->nnames; i++)
		free((char *)(uintptr_t)lc->names[i].pattern);
	free(lc->names);
	free(lc->ctx);
	for (i = 0; i < lc->nocsp; i++) {
		X509_free(lc->ocsp[i].cert);
		OPENSSL_free(lc->ocsp[i].der);
	}
	free(lc->ocsp);
	free(lc->label);
	OPENSSL_cleanse(lc->ticket_secret, sizeof(lc->ticket_secret));
	free(lc);
}
