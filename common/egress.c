/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The `egress` of a listener or of a module's group (an acl rule), read
 * once in the master, and the address one connection leaves from:
 *
 *   egress = "192.0.2.1";                    one address
 *   egress = [ "192.0.2.1", "2001:db8::1" ]; one of each family: the
 *                                            destination's picks
 *   egress = "2001:db8:1::/64";              an address inside, random
 *   egress_stable = "user";                  ... or per user / "source"
 *   egress = "same";                         where the client came in
 *
 * The prefix may also be a pair's IPv6 half. A stable pick is SipHash-2-4
 * of the user (or the client address) and the prefix under a 128-bit key
 * the master draws once: the mapping cannot be computed from outside,
 * and holds across connections and reloads (not across a binary
 * upgrade, whose new master draws its own). Binding is not here
 * (worker/outbound.c).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/egress.h"
#include "common/counters.h"
#include "portico/hash.h"

const char *const egress_keys[] = { "egress", "egress_stable", NULL };

/* The key of stable picks: drawn by the master at the first
 * egress_stable it reads, inherited by every worker, never drawn again
 * (a reload keeps every user's address). */
static uint64_t	 egress_k[2];
static bool	 egress_k_set;

void
egress_key_set(uint64_t k0, uint64_t k1)
{
	egress_k[0] = k0;
	egress_k[1] = k1;
	egress_k_set = true;
}

/*
 * Random picks: SipHash-2-4 of a counter under a key this process drew
 * (egress_random_seed: each worker after its fork, so workers do not
 * share a sequence). As unpredictable from outside as the key, and with
 * no system call per connection: glibc's arc4random makes one (getrandom)
 * per call, a tenth of a SOCKS setup's cost.
 */
static uint64_t	 egress_rk[2];
static uint64_t	 egress_rctr;
static bool	 egress_rk_set;

int
egress_random_seed(void)
{
	if (getrandom(egress_rk, sizeof(egress_rk), 0) !=
	    (ssize_t)sizeof(egress_rk))
		return -1;
	egress_rctr = 0;
	egress_rk_set = true;
	return 0;
}

static void
egress_random(uint64_t r[2])
{
	if (!egress_rk_set)
		(void)egress_random_seed();
	r[0] = pt_siphash24(egress_rk[0], egress_rk[1], &egress_rctr,
	    sizeof(egress_rctr));
	egress_rctr++;
	r[1] = pt_siphash24(egress_rk[0], egress_rk[1], &egress_rctr,
	    sizeof(egress_rctr));
	egress_rctr++;
}

static int
egress_key_draw(void)
{
	uint64_t	 k[2];

	if (egress_k_set)
		return 0;
	if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
		return -1;
	egress_key_set(k[0], k[1]);
	return 0;
}

/* ---- addresses ------------------------------------------------------ */

void
egress_addr_from(const struct sockaddr *sa, union egress_addr *out)
{
	const struct sockaddr_in6	*s6 = (const struct sockaddr_in6 *)sa;

	memset(out, 0, sizeof(*out));
	if (sa == NULL)
		return;
	if (sa->sa_family == AF_INET) {
		out->v4.sin_family = AF_INET;
		out->v4.sin_addr = ((const struct sockaddr_in *)sa)->sin_addr;
	} else if (sa->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		out->v4.sin_family = AF_INET;
		memcpy(&out->v4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	} else if (sa->sa_family == AF_INET6) {
		out->v6.sin6_family = AF_INET6;
		out->v6.sin6_addr = s6->sin6_addr;
		/* A link-local source needs its interface. */
		out->v6.sin6_scope_id = s6->sin6_scope_id;
	}
}

bool
egress_addr_equal(const union egress_addr *a, const union egress_addr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->v4.sin_addr.s_addr == b->v4.sin_addr.s_addr;
	if (a->sa.sa_family == AF_INET6)
		return memcmp(&a->v6.sin6_addr, &b->v6.sin6_addr,
		    sizeof(a->v6.sin6_addr)) == 0 &&
		    a->v6.sin6_scope_id == b->v6.sin6_scope_id;
	return true;
}

char *
egress_addr_fmt(const union egress_addr *a, char *buf, size_t size)
{
	const void	*ip = a->sa.sa_family == AF_INET ?
			    (const void *)&a->v4.sin_addr :
			    (const void *)&a->v6.sin6_addr;

	if ((a->sa.sa_family != AF_INET && a->sa.sa_family != AF_INET6) ||
	    inet_ntop(a->sa.sa_family, ip, buf, (socklen_t)size) == NULL)
		snprintf(buf, size, "none");
	return buf;
}

unsigned
egress_families(const struct pt_egress *e, const struct sockaddr *local)
{
	union egress_addr	 l;

	if (e->same) {
		egress_addr_from(local, &l);
		return l.sa.sa_family == AF_INET ? EGRESS_FAM_V4 :
		    l.sa.sa_family == AF_INET6 ? EGRESS_FAM_V6 : 0;
	}
	return (e->v4.sa.sa_family != 0 ? EGRESS_FAM_V4 : 0) |
	    (e->v6.sa.sa_family != 0 || e->plen > 0 ? EGRESS_FAM_V6 : 0);
}

/* ---- picks inside a prefix ------------------------------------------ */

/* 128 bits that name <ctx>'s user (or, without one, its source) inside
 * <e>'s prefix; random for EGRESS_RANDOM or when nothing names it. */
static void
egress_bits(const struct pt_egress *e, const struct egress_ctx *ctx,
    uint64_t r[2])
{
	union egress_addr	 src;
	unsigned char		 msg[2 + 16 + 1 + PT_NAME_MAX + 16];
	size_t			 n = 0, idlen;
	const void		*id;

	egress_addr_from(ctx->peer, &src);
	if (e->stable == EGRESS_BY_USER && ctx->user != NULL &&
	    ctx->user_len > 0) {
		msg[1] = 'u';
		id = ctx->user;
		idlen = ctx->user_len < PT_NAME_MAX ? ctx->user_len :
		    PT_NAME_MAX;
	} else if (e->stable != EGRESS_RANDOM && src.sa.sa_family != 0) {
		msg[1] = 's';
		id = src.sa.sa_family == AF_INET ? (const void *)&src.v4.sin_addr :
		    (const void *)&src.v6.sin6_addr;
		idlen = src.sa.sa_family == AF_INET ? 4 : 16;
	} else {
		egress_random(r);
		return;
	}
	/* domain (which half), kind, the prefix, its length, the name: the
	 * same user gets unrelated addresses in two prefixes. */
	n = 2;
	memcpy(msg + n, &e->prefix, 16);
	n += 16;
	msg[n++] = (unsigned char)e->plen;
	memcpy(msg + n, id, idlen);
	n += idlen;
	msg[0] = 1;
	r[0] = pt_siphash24(egress_k[0], egress_k[1], msg, n);
	msg[0] = 2;
	r[1] = pt_siphash24(egress_k[0], egress_k[1], msg, n);
}

/*
 * The host part: the low <h> bits (1..127) of r, never all zero. Below
 * 64 bits it is taken uniformly from 1 .. 2^h - 1; above, a zero (one
 * chance in 2^h) becomes 1.
 */
static void
egress_host(unsigned h, uint64_t r[2], uint64_t *hi, uint64_t *lo)
{
	uint64_t	 top;

	if (h <= 64) {
		top = h == 64 ? UINT64_MAX : ((uint64_t)1 << h) - 1;
		*hi = 0;
		*lo = r[1] % top + 1;
		return;
	}
	*hi = r[0] & (((uint64_t)1 << (h - 64)) - 1);
	*lo = r[1];
	if (*hi == 0 && *lo == 0)
		*lo = 1;
}

static void
egress_prefix_pick(const struct pt_egress *e, const struct egress_ctx *ctx,
    struct in6_addr *out)
{
	uint64_t	 r[2], hi, lo;
	int		 i;

	*out = e->prefix;
	if (e->plen >= 128)
		return;
	egress_bits(e, ctx, r);
	egress_host(128 - e->plen, r, &hi, &lo);
	/* The prefix's host bits are zero: OR the host part in. */
	for (i = 0; i < 8; i++) {
		out->s6_addr[15 - i] |= (uint8_t)(lo >> (8 * i));
		out->s6_addr[7 - i] |= (uint8_t)(hi >> (8 * i));
	}
}

int
egress_pick(const struct pt_egress *e, int family,
    const struct egress_ctx *ctx, union egress_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (e->same) {
		egress_addr_from(ctx->local, out);
		if (out->sa.sa_family == family)
			return 0;
		memset(out, 0, sizeof(*out));
		return -EAFNOSUPPORT;
	}
	if (family == AF_INET && e->v4.sa.sa_family == AF_INET) {
		*out = e->v4;
		return 0;
	}
	if (family == AF_INET6 && e->plen > 0) {
		out->v6.sin6_family = AF_INET6;
		egress_prefix_pick(e, ctx, &out->v6.sin6_addr);
		return 0;
	}
	if (family == AF_INET6 && e->v6.sa.sa_family == AF_INET6) {
		*out = e->v6;
		return 0;
	}
	return -EAFNOSUPPORT;
}

/* ---- parsing -------------------------------------------------------- */

struct egress_parse {
	char			*err;
	size_t			 errsz;
	const config_setting_t	**where;
};

static int __attribute__((format(printf, 3, 4)))
egress_fail(struct egress_parse *p, const config_setting_t *at,
    const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(p->err, p->errsz, fmt, ap);
	va_end(ap);
	*p->where = at;
	return -1;
}

/* An address fit to leave from: not unspecified, multicast or (IPv6)
 * IPv4-mapped or link-local; NULL, or why not. */
static const char *
egress_addr_unfit(const union egress_addr *a)
{
	if (a->sa.sa_family == AF_INET) {
		uint32_t ip = ntohl(a->v4.sin_addr.s_addr);

		if (ip == 0)
			return "the unspecified address is the kernel's "
			    "choice: leave egress out";
		if (IN_MULTICAST(ip) || ip == 0xffffffffu)
			return "not a unicast address";
		return NULL;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&a->v6.sin6_addr))
		return "the unspecified address is the kernel's choice: "
		    "leave egress out";
	if (IN6_IS_ADDR_MULTICAST(&a->v6.sin6_addr))
		return "not a unicast address";
	if (IN6_IS_ADDR_V4MAPPED(&a->v6.sin6_addr))
		return "an IPv4-mapped address: write the IPv4 address";
	if (IN6_IS_ADDR_LINKLOCAL(&a->v6.sin6_addr))
		return "a link-local address (it would need an interface)";
	return NULL;
}

/* One text of an egress ("same" is the caller's): an address or an
 * IPv6 prefix, stored in <e>. <what> names it in messages. */
static int
egress_item(struct egress_parse *p, const config_setting_t *m,
    const char *s, const char *what, struct pt_egress *e)
{
	union egress_addr	 a;
	struct in6_addr		 net;
	const char		*slash = strchr(s, '/'), *why;
	char			 ip[INET6_ADDRSTRLEN + 1], *end;
	unsigned long		 len;
	int			 i;

	memset(&a, 0, sizeof(a));
	if (slash != NULL) {
		if ((size_t)(slash - s) >= sizeof(ip))
			return egress_fail(p, m, "%s\"%.64s\": not an IPv6 "
			    "prefix", what, s);
		memcpy(ip, s, (size_t)(slash - s));
		ip[slash - s] = '\0';
		if (inet_pton(AF_INET, ip, &a.v4.sin_addr) == 1)
			return egress_fail(p, m, "%s\"%.64s\": a prefix must "
			    "be IPv6 (an IPv4 one has too few addresses to "
			    "spread connections over)", what, s);
		len = slash[1] >= '0' && slash[1] <= '9' ?
		    strtoul(slash + 1, &end, 10) : 0;
		if (inet_pton(AF_INET6, ip, &net) != 1 || len < 1 ||
		    len > 128 || *end != '\0')
			return egress_fail(p, m, "%s\"%.64s\": not an IPv6 "
			    "prefix (\"2001:db8:1::/64\", length 1-128)",
			    what, s);
		for (i = 0; i < 16; i++)
			if ((int)len < 8 * (i + 1) && (net.s6_addr[i] &
			    (uint8_t)(0xff >> ((int)len > 8 * i ?
			    (int)len - 8 * i : 0))) != 0)
				return egress_fail(p, m, "%s\"%.64s\": bits "
				    "set after the first %lu (the prefix's "
				    "own address ends in zeros)", what, s, len);
		a.v6.sin6_family = AF_INET6;
		a.v6.sin6_addr = net;
		if ((why = egress_addr_unfit(&a)) != NULL)
			return egress_fail(p, m, "%s\"%.64s\": %s", what, s,
			    why);
		if (e->v6.sa.sa_family != 0 || e->plen > 0)
			return egress_fail(p, m, "%s\"%.64s\": a second IPv6 "
			    "source (one of each family at most)", what, s);
		e->prefix = net;
		e->plen = (unsigned)len;
		return 0;
	}
	if (inet_pton(AF_INET, s, &a.v4.sin_addr) == 1)
		a.v4.sin_family = AF_INET;
	else if (inet_pton(AF_INET6, s, &a.v6.sin6_addr) == 1)
		a.v6.sin6_family = AF_INET6;
	else
		return egress_fail(p, m, "%s\"%.64s\": expected \"same\", an "
		    "address (\"192.0.2.1\", \"2001:db8::1\"), an IPv6 prefix "
		    "(\"2001:db8:1::/64\") or a list of an IPv4 and an IPv6 "
		    "one", what, s);
	if ((why = egress_addr_unfit(&a)) != NULL)
		return egress_fail(p, m, "%s\"%.64s\": %s", what, s, why);
	if (a.sa.sa_family == AF_INET ? e->v4.sa.sa_family != 0 :
	    e->v6.sa.sa_family != 0 || e->plen > 0)
		return egress_fail(p, m, "%s\"%.64s\": a second %s source "
		    "(one of each family at most)", what, s,
		    a.sa.sa_family == AF_INET ? "IPv4" : "IPv6");
	if (a.sa.sa_family == AF_INET)
		e->v4 = a;
	else
		e->v6 = a;
	return 0;
}

/* e->text from what was read: canonical, whatever spelling. */
static void
egress_text(struct pt_egress *e)
{
	char	 a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN + 4];

	if (e->same) {
		snprintf(e->text, sizeof(e->text), "same");
		return;
	}
	a[0] = b[0] = '\0';
	if (e->v4.sa.sa_family != 0)
		egress_addr_fmt(&e->v4, a, sizeof(a));
	if (e->plen > 0) {
		inet_ntop(AF_INET6, &e->prefix, b, sizeof(b));
		snprintf(b + strlen(b), sizeof(b) - strlen(b), "/%u", e->plen);
	} else if (e->v6.sa.sa_family != 0)
		egress_addr_fmt(&e->v6, b, sizeof(b));
	snprintf(e->text, sizeof(e->text), "%s%s%s", a, a[0] && b[0] ? "," :
	    "", b);
}

static int
egress_value(struct egress_parse *p, const config_setting_t *m,
    struct pt_egress *e)
{
	const config_setting_t	*el;
	const char		*s;
	char			 what[32];
	int			 i, n;

	if ((s = config_setting_get_string(m)) != NULL) {
		if (strcmp(s, "same") == 0) {
			e->same = true;
			return 0;
		}
		return egress_item(p, m, s, "", e);
	}
	if (config_setting_type(m) != CONFIG_TYPE_ARRAY &&
	    config_setting_type(m) != CONFIG_TYPE_LIST)
		return egress_fail(p, m, "expected \"same\", an address, an "
		    "IPv6 prefix, or a list [ IPv4, IPv6 ]");
	n = config_setting_length(m);
	if (n < 1 || n > 2)
		return egress_fail(p, m, "a list holds one IPv4 and one IPv6 "
		    "source (%d given)", n);
	for (i = 0; i < n; i++) {
		el = config_setting_get_elem(m, (unsigned)i);
		snprintf(what, sizeof(what), "element %d: ", i + 1);
		if ((s = config_setting_get_string(el)) == NULL)
			return egress_fail(p, m, "%sexpected a string", what);
		if (strcmp(s, "same") == 0)
			return egress_fail(p, m, "%s\"same\" stands alone, "
			    "not in a list", what);
		if (egress_item(p, m, s, what, e) < 0)
			return -1;
	}
	return 0;
}

static int
egress_stable_value(struct egress_parse *p, const config_setting_t *m,
    struct pt_egress *e)
{
	const char	*s = config_setting_get_string(m);

	if (s == NULL || (strcmp(s, "user") != 0 && strcmp(s, "source") != 0))
		return egress_fail(p, m, "expected \"user\" or \"source\"");
	if (e->plen == 0)
		return egress_fail(p, m, "only with an IPv6 prefix egress "
		    "(\"2001:db8:1::/64\"): %s is one address", e->text);
	if (egress_key_draw() < 0)
		return egress_fail(p, m, "getrandom: %s", strerror(errno));
	e->stable = s[0] == 'u' ? EGRESS_BY_USER : EGRESS_BY_SOURCE;
	return 0;
}

int
egress_parse(const config_setting_t *group, struct pt_egress **out,
    const config_setting_t **where, char *err, size_t errsz)
{
	struct egress_parse	 p = { err, errsz, where };
	const config_setting_t	*eg, *st;
	struct pt_egress	*e;

	*out = NULL;
	*where = NULL;
	err[0] = '\0';
	eg = group != NULL ? config_setting_get_member(group, "egress") : NULL;
	st = group != NULL ? config_setting_get_member(group,
	    "egress_stable") : NULL;
	if (eg == NULL && st == NULL)
		return 0;
	if (eg == NULL)
		return egress_fail(&p, st, "without an egress: there is "
		    "nothing to pick from");
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return egress_fail(&p, eg, "out of memory");
	e->ctr_connects = e->ctr_failures = -1;
	if (egress_value(&p, eg, e) < 0) {
		free(e);
		return -1;
	}
	egress_text(e);
	if (st != NULL && egress_stable_value(&p, st, e) < 0) {
		free(e);
		return -1;
	}
	*out = e;
	return 0;
}

void
egress_free(struct pt_egress *e)
{
	free(e);
}

void
egress_register(struct pt_egress *e)
{
	e->ctr_connects = counters_register_core("egress_connects", "egress",
	    e->text);
	e->ctr_failures = counters_register_core("egress_failures", "egress",
	    e->text);
}

/* ---- the module ABI (1.6) ------------------------------------------- */

int
pt_egress_conf(struct pt_modconf *mc, const config_setting_t *group,
    struct pt_egress **out, const char **errstr)
{
	static char		 msg[320];
	const config_setting_t	*where;
	char			 why[256];

	if (egress_parse(group, out, &where, why, sizeof(why)) < 0) {
		snprintf(msg, sizeof(msg), "%s: %s", where != NULL &&
		    config_setting_name(where) != NULL ?
		    config_setting_name(where) : "egress", why);
		*errstr = msg;
		if (mc != NULL)
			mc->where = where;
		return -1;
	}
	if (*out != NULL)
		egress_register(*out);
	return 0;
}

void
pt_egress_free(struct pt_egress *e)
{
	egress_free(e);
}

int
pt_egress_format(const struct pt_egress *e, char *buf, size_t len)
{
	return snprintf(buf, len, "%s%s", e->text,
	    e->stable == EGRESS_BY_USER ? " stable=user" :
	    e->stable == EGRESS_BY_SOURCE ? " stable=source" : "");
}
