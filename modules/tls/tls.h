/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * modules/tls: what the master-side configuration (tls_conf.c) hands the
 * worker-side transport (tls.c). Module-internal, not part of the ABI.
 */
#ifndef PT_TLS_H
#define PT_TLS_H

#include <stddef.h>

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

/* The module descriptor (tls.c), for pt_conn_listener_ctx(). */
PT_API extern const struct pt_module pt_module_tls;

/* Counter ids (pt_counter_register in the master; -1 before). */
extern int	tls_ctr_handshakes;
extern int	tls_ctr_failed;

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
