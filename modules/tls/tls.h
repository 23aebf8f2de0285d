/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * modules/tls: what the master-side configuration (tls_conf.c, and
 * tls_client.c's upstream_conf) hands the worker-side transports (tls.c
 * on a listener, tls_client.c on an upstream), and the record I/O both
 * share (tls_io.c). Module-internal, not part of the ABI.
 */
#ifndef PT_TLS_H
#define PT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "portico/module.h"
#include "modules/tls/tls_names.h"
#include "modules/tls/tls_ticket.h"

/*
 * One listener's TLS state, built in the master by listener_conf before
 * the fork and only read afterwards (every worker inherits its copy).
 * One SSL_CTX per configured certificate, set up alike; the first is the
 * default, the others are chosen by the client's SNI name.
 */
/* An OCSP response stapled for one certificate (DER, as read). */
struct tls_ocsp {
	X509		*cert;		/* a reference */
	unsigned char	*der;
	size_t		 len;
};

struct tls_lconf {
	SSL_CTX		**ctx;		/* [0]: the default one */
	int		  nctx;
	struct tls_name	 *names;	/* every certificate's names */
	size_t		  nnames;
	/* The client certificate's subject field that becomes the user
	 * (pt_req_set_user), NID_undef for none. */
	int		  user_nid;
	/* Session tickets: keys derived from <ticket_secret> for each
	 * period of <ticket_rotate> seconds (tls_ticket.h); off when
	 * ticket_rotate is 0. <label> (the listener's name) keeps two
	 * listeners' tickets apart. */
	unsigned	  ticket_rotate;
	unsigned char	  ticket_secret[TLS_TICKET_SECRET_LEN];
	char		 *label;
	unsigned char	  sid_ctx[32];	/* name and client policy */
	struct tls_ocsp	 *ocsp;
	size_t		  nocsp;
};

/*
 * One TLS session: the server side's lives in the core's per-connection
 * slot (zeroed at accept, tls.c); the client side's (an upstream) is
 * allocated by tls_upstream_new and owned by its transport until free(),
 * so it is tied to no connection slot.
 */
struct tls_conn {
	SSL	*ssl;		/* server: from the first handshake call */
	bool	 done;		/* handshake finished */
	bool	 broken;	/* a fatal error: send nothing more */
	bool	 shut;		/* our close_notify is out */
	bool	 upstream;	/* the client side, to an upstream */
	char	*user;		/* server: the certificate's, or NULL */
	size_t	 user_len;
};

/* How a session's log lines start. */
static inline const char *
tls_who(const struct tls_conn *t)
{
	return t->upstream ? "tls upstream" : "tls";
}

/* The module descriptor (tls.c), for pt_conn_listener_ctx(). */
PT_API extern const struct pt_module pt_module_tls;

/* Counter ids (pt_counter_register in the master; -1 before). */
extern int	tls_ctr_handshakes;
extern int	tls_ctr_failed;

/* ---- tls_io.c (worker: both sides) ------------------------------------ */

/* Why OpenSSL's last call failed: its first queued reason (static text,
 * or a buffer the next call reuses). Master and worker. */
const char *tls_reason(void);

/* What one failed OpenSSL call on <t> means for the core: -EAGAIN with
 * the event to wait for in *want, 0 for a clean end of stream (reads),
 * or -errno (-EPROTO for a TLS error, logged with <op> once the
 * handshake is done). <err> is the errno the call left. */
int	 tls_map(struct pt_conn *c, struct tls_conn *t, int rc, int err,
	    uint32_t *want, const char *op);
/* pt_transport's read, write, pending, shutdown and plain on a
 * struct tls_conn whose handshake is done. */
ssize_t	 tls_read(struct pt_conn *c, int fd, void *tctx, void *buf,
	    size_t len, uint32_t *want);
ssize_t	 tls_write(struct pt_conn *c, int fd, void *tctx,
	    const void *buf, size_t len, uint32_t *want);
size_t	 tls_pending(struct pt_conn *c, void *tctx);
int	 tls_shutdown(struct pt_conn *c, int fd, void *tctx);
unsigned tls_plain(struct pt_conn *c, int fd, void *tctx);
/* The session's end: a close_notify when it ends cleanly and was not
 * cut (one attempt), then SSL_free. <t> may have no SSL yet. */
void	 tls_conn_end(struct pt_conn *c, struct tls_conn *t);

/* ---- tls_client.c (client side: an https upstream) --------------------- */

/* pt_module.upstream_conf / upstream_conf_free (master) and upstream_new
 * (worker), and the session's operations, upstream_transport. */
int	 tls_upstream_conf(const struct pt_upstream_tls *u, void **uctx_out,
	    const char **errstr);
void	 tls_upstream_conf_free(void *uctx);
int	 tls_upstream_new(struct pt_conn *c, void *uctx, const char *sni,
	    void **tctx_out);
extern const struct pt_transport tls_upstream_transport;

/* ---- tls_conf.c (master) --------------------------------------------- */

/* conf(): the module entry takes no option besides name and path; also
 * registers the module's counters. */
int	tls_conf(struct pt_modconf *mc, const config_setting_t *node,
	    const char **errstr);
/* listener_conf(): the listener's `tls` group to a struct tls_lconf
 * (1 when the listener has no group: the module does not apply there).
 * Loads and checks every certificate and key, warns about certificates
 * that expire within 30 days. */
int	tls_listener_conf(struct pt_modconf *mc,
	    const config_setting_t *node, void *modctx, void **lctx_out,
	    const char **errstr);
void	tls_listener_conf_free(void *lctx);

#endif
