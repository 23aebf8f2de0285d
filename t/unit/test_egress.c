/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Egress (common/egress.c): SipHash-2-4 against its reference vectors;
 * the `egress` and `egress_stable` keys read from configuration text,
 * good and bad, each error naming the setting at fault; the family a
 * pair picks; picks inside prefixes of several lengths (always inside,
 * never the all-zero host part, spread over it); stable picks, equal for
 * the same user or source under the same key (a reload keeps the key)
 * and different for different ones.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <libconfig.h>

#include "common/egress.h"
#include "portico/hash.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

/* ---- SipHash-2-4 ------------------------------------------------------ */

/* The reference implementation's vectors.h: key 00 01 .. 0f, message
 * 00 01 .. (n - 1), the 64-bit output as little-endian bytes. Lengths 0
 * to 15: every tail length, with and without a whole block before. */
static void
test_egress_siphash_gives_the_reference_vectors(void)
{
	static const uint8_t	 want[16][8] = {
		{ 0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72 },
		{ 0xfd, 0x67, 0xdc, 0x93, 0xc5, 0x39, 0xf8, 0x74 },
		{ 0x5a, 0x4f, 0xa9, 0xd9, 0x09, 0x80, 0x6c, 0x0d },
		{ 0x2d, 0x7e, 0xfb, 0xd7, 0x96, 0x66, 0x67, 0x85 },
		{ 0xb7, 0x87, 0x71, 0x27, 0xe0, 0x94, 0x27, 0xcf },
		{ 0x8d, 0xa6, 0x99, 0xcd, 0x64, 0x55, 0x76, 0x18 },
		{ 0xce, 0xe3, 0xfe, 0x58, 0x6e, 0x46, 0xc9, 0xcb },
		{ 0x37, 0xd1, 0x01, 0x8b, 0xf5, 0x00, 0x02, 0xab },
		{ 0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93 },
		{ 0xb0, 0xe4, 0xa9, 0x0b, 0xdf, 0x82, 0x00, 0x9e },
		{ 0xf3, 0xb9, 0xdd, 0x94, 0xc5, 0xbb, 0x5d, 0x7a },
		{ 0xa7, 0xad, 0x6b, 0x22, 0x46, 0x2f, 0xb3, 0xf4 },
		{ 0xfb, 0xe5, 0x0e, 0x86, 0xbc, 0x8f, 0x1e, 0x75 },
		{ 0x90, 0x3d, 0x84, 0xc0, 0x27, 0x56, 0xea, 0x14 },
		{ 0xee, 0xf2, 0x7a, 0x8e, 0x90, 0xca, 0x23, 0xf7 },
		{ 0xe5, 0x45, 0xbe, 0x49, 0x61, 0xca, 0x29, 0xa1 },
	};
	uint8_t		 msg[16];
	uint64_t	 h, w;
	size_t		 n;
	int		 b;

	for (n = 0; n < sizeof(msg); n++)
		msg[n] = (uint8_t)n;
	for (n = 0; n < 16; n++) {
		h = pt_siphash24(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL,
		    msg, n);
		for (w = 0, b = 7; b >= 0; b--)
			w = (w << 8) | want[n][b];
		CHECKF(h == w, "length %zu: %#llx, want %#llx", n,
		    (unsigned long long)h, (unsigned long long)w);
	}
}

/* ---- parsing ---------------------------------------------------------- */

static config_t		 t_cfg;
static char		 t_err[256];
static int		 t_err_line;
static const char	*t_err_name;

/* Parses "g = { <body> };"; NULL (t_err, the line and name of the
 * setting at fault) on an error or when the group has no egress. */
static struct pt_egress *
t_parse(const char *body, int *rc_out)
{
	const config_setting_t	*where = NULL;
	struct pt_egress	*e = NULL;
	char			 text[1024];
	int			 rc;

	snprintf(text, sizeof(text), "g = {\n%s\n};\n", body);
	config_destroy(&t_cfg);
	config_init(&t_cfg);
	t_err[0] = '\0';
	t_err_line = 0;
	t_err_name = NULL;
	if (config_read_string(&t_cfg, text) != CONFIG_TRUE) {
		snprintf(t_err, sizeof(t_err), "libconfig: %s at %d",
		    config_error_text(&t_cfg), config_error_line(&t_cfg));
		*rc_out = -2;
		return NULL;
	}
	rc = egress_parse(config_lookup(&t_cfg, "g"), &e, &where, t_err,
	    sizeof(t_err));
	if (where != NULL) {
		t_err_line = (int)config_setting_source_line(where);
		t_err_name = config_setting_name(where);
	}
	*rc_out = rc;
	return e;
}

static void
test_egress_parses_good_values(void)
{
	static const struct {
		const char	*body;
		const char	*text;		/* canonical */
		unsigned	 fams;		/* for a local of no family */
		unsigned	 plen;
		enum egress_stable stable;
	} v[] = {
		{ "egress = \"127.0.0.2\";", "127.0.0.2", EGRESS_FAM_V4, 0, 0 },
		{ "egress = \"2001:db8:0:0::1\";", "2001:db8::1",
		  EGRESS_FAM_V6, 0, 0 },
		{ "egress = [ \"192.0.2.1\", \"2001:db8::1\" ];",
		  "192.0.2.1,2001:db8::1", EGRESS_FAM_V4 | EGRESS_FAM_V6, 0,
		  0 },
		{ "egress = ( \"2001:db8::1\", \"192.0.2.1\" );",
		  "192.0.2.1,2001:db8::1", EGRESS_FAM_V4 | EGRESS_FAM_V6, 0,
		  0 },
		{ "egress = [ \"192.0.2.7\" ];", "192.0.2.7", EGRESS_FAM_V4,
		  0, 0 },
		{ "egress = \"2001:db8:1::/64\";", "2001:db8:1::/64",
		  EGRESS_FAM_V6, 64, EGRESS_RANDOM },
		{ "egress = \"2001:DB8:1:0::/64\"; egress_stable = \"user\";",
		  "2001:db8:1::/64", EGRESS_FAM_V6, 64, EGRESS_BY_USER },
		{ "egress = \"2001:db8::/1\";" /* bits after /1 */, NULL, 0, 0,
		  0 },
		{ "egress = \"8000::/1\"; egress_stable = \"source\";",
		  "8000::/1", EGRESS_FAM_V6, 1, EGRESS_BY_SOURCE },
		{ "egress = \"2001:db8::5/128\";", "2001:db8::5/128",
		  EGRESS_FAM_V6, 128, 0 },
		{ "egress = [ \"10.1.2.3\", \"2001:db8:2::/48\" ];",
		  "10.1.2.3,2001:db8:2::/48", EGRESS_FAM_V4 | EGRESS_FAM_V6,
		  48, 0 },
		{ "egress = \"same\";", "same", 0, 0, 0 },
	};
	struct pt_egress	*e;
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		e = t_parse(v[i].body, &rc);
		if (v[i].text == NULL) {
			CHECKF(rc < 0 && e == NULL, "%s: accepted", v[i].body);
			continue;
		}
		if (!CHECKF(rc == 0 && e != NULL, "%s: refused: %s",
		    v[i].body, t_err))
			continue;
		CHECKF(strcmp(e->text, v[i].text) == 0, "%s: text \"%s\", "
		    "want \"%s\"", v[i].body, e->text, v[i].text);
		CHECKF(egress_families(e, NULL) == v[i].fams, "%s: families "
		    "%u, want %u", v[i].body, egress_families(e, NULL),
		    v[i].fams);
		CHECKF(e->plen == v[i].plen, "%s: plen %u", v[i].body,
		    e->plen);
		CHECKF(e->stable == v[i].stable, "%s: stable %d", v[i].body,
		    (int)e->stable);
		CHECKF(e->ctr_connects == -1 && e->ctr_failures == -1,
		    "%s: counters registered by the parse", v[i].body);
		egress_free(e);
	}
	/* No egress at all: nothing, and no error. */
	e = t_parse("other = 1;", &rc);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_PTR_NULL(e);
}

static void
test_egress_refuses_bad_values_naming_the_setting(void)
{
	static const struct {
		const char	*body;
		int		 line;		/* of the setting at fault */
		const char	*name;
		const char	*needle;
	} v[] = {
		{ "egress = \"nowhere\";", 2, "egress", "expected \"same\"" },
		{ "egress = \"\";", 2, "egress", "expected \"same\"" },
		{ "egress = 5;", 2, "egress", "expected \"same\"" },
		{ "egress = \"0.0.0.0\";", 2, "egress", "unspecified" },
		{ "egress = \"::\";", 2, "egress", "unspecified" },
		{ "egress = \"224.0.0.1\";", 2, "egress", "unicast" },
		{ "egress = \"ff02::1\";", 2, "egress", "unicast" },
		{ "egress = \"::ffff:10.0.0.1\";", 2, "egress", "IPv4-mapped" },
		{ "egress = \"fe80::1\";", 2, "egress", "link-local" },
		{ "egress = \"fe80::/64\";", 2, "egress", "link-local" },
		{ "egress = \"10.0.0.0/8\";", 2, "egress", "must be IPv6" },
		{ "egress = \"2001:db8::/0\";", 2, "egress", "length 1-128" },
		{ "egress = \"2001:db8::/129\";", 2, "egress", "length 1-128" },
		{ "egress = \"2001:db8::/64x\";", 2, "egress", "length 1-128" },
		{ "egress = \"2001:db8::/\";", 2, "egress", "length 1-128" },
		{ "egress = \"2001:db8::1/64\";", 2, "egress",
		  "bits set after the first 64" },
		{ "egress = \"2001:db8:0:0:0:0:0:101/120\";", 2, "egress",
		  "bits set after the first 120" },
		{ "egress = [ \"192.0.2.1\", \"192.0.2.2\" ];", 2, "egress",
		  "a second IPv4" },
		{ "egress = [ \"2001:db8::/64\", \"2001:db8::1\" ];", 2,
		  "egress", "a second IPv6" },
		{ "egress = [ \"192.0.2.1\", \"2001:db8::1\", \"10.0.0.1\" ];",
		  2, "egress", "3 given" },
		{ "egress = [ ];", 2, "egress", "0 given" },
		{ "egress = [ \"same\" ];", 2, "egress", "stands alone" },
		{ "egress = ( \"192.0.2.1\", 4 );", 2, "egress",
		  "element 2: expected a string" },
		{ "egress = \"192.0.2.1\";\negress_stable = \"user\";", 3,
		  "egress_stable", "only with an IPv6 prefix" },
		{ "egress = \"same\";\negress_stable = \"source\";", 3,
		  "egress_stable", "only with an IPv6 prefix" },
		{ "egress = \"2001:db8::/64\";\negress_stable = \"always\";", 3,
		  "egress_stable", "\"user\" or \"source\"" },
		{ "egress = \"2001:db8::/64\";\negress_stable = true;", 3,
		  "egress_stable", "\"user\" or \"source\"" },
		{ "egress_stable = \"user\";", 2, "egress_stable",
		  "without an egress" },
	};
	struct pt_egress	*e;
	size_t			 i;
	int			 rc;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		e = t_parse(v[i].body, &rc);
		if (!CHECKF(rc == -1 && e == NULL, "%s: rc %d", v[i].body,
		    rc)) {
			egress_free(e);
			continue;
		}
		CHECKF(strstr(t_err, v[i].needle) != NULL, "%s: \"%s\" lacks "
		    "\"%s\"", v[i].body, t_err, v[i].needle);
		CHECKF(t_err_line == v[i].line, "%s: line %d, want %d",
		    v[i].body, t_err_line, v[i].line);
		CHECKF(t_err_name != NULL && strcmp(t_err_name, v[i].name) ==
		    0, "%s: setting %s, want %s", v[i].body,
		    t_err_name ? t_err_name : "(none)", v[i].name);
	}
}

/* ---- picks ------------------------------------------------------------ */

static void
t_sa(struct sockaddr_storage *ss, const char *ip, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)ss)->sin_addr) ==
	    1) {
		ss->ss_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	} else if (inet_pton(AF_INET6, ip,
	    &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	}
}

static const char *
t_fmt(const union egress_addr *a)
{
	static char	 buf[4][INET6_ADDRSTRLEN];
	static int	 k;

	k = (k + 1) % 4;
	return egress_addr_fmt(a, buf[k], sizeof(buf[k]));
}

static void
test_egress_pair_picks_the_destination_family(void)
{
	struct egress_ctx	 x;
	union egress_addr	 a;
	struct pt_egress	*e;
	int			 rc;

	memset(&x, 0, sizeof(x));
	e = t_parse("egress = [ \"192.0.2.1\", \"2001:db8::1\" ];", &rc);
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET, &x, &a), 0);
	CHECKF(strcmp(t_fmt(&a), "192.0.2.1") == 0, "v4: %s", t_fmt(&a));
	CU_ASSERT_EQUAL(a.v4.sin_port, 0);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET6, &x, &a), 0);
	CHECKF(strcmp(t_fmt(&a), "2001:db8::1") == 0, "v6: %s", t_fmt(&a));
	CU_ASSERT_EQUAL(a.v6.sin6_port, 0);
	egress_free(e);

	/* One family only: the other is refused, never the kernel's. */
	e = t_parse("egress = \"127.0.0.2\";", &rc);
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET6, &x, &a), -EAFNOSUPPORT);
	CU_ASSERT_EQUAL(a.sa.sa_family, 0);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET, &x, &a), 0);
	egress_free(e);
	e = t_parse("egress = \"2001:db8:1::/64\";", &rc);
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET, &x, &a), -EAFNOSUPPORT);
	egress_free(e);
}

static void
test_egress_same_is_the_local_address(void)
{
	struct sockaddr_storage	 local;
	struct egress_ctx	 x;
	union egress_addr	 a;
	struct pt_egress	*e;
	int			 rc;

	e = t_parse("egress = \"same\";", &rc);
	CU_ASSERT_FATAL(e != NULL);
	memset(&x, 0, sizeof(x));
	x.local = (const struct sockaddr *)&local;
	t_sa(&local, "127.0.0.4", 3128);
	CU_ASSERT_EQUAL(egress_families(e, x.local), EGRESS_FAM_V4);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET, &x, &a), 0);
	CHECKF(strcmp(t_fmt(&a), "127.0.0.4") == 0, "%s", t_fmt(&a));
	CU_ASSERT_EQUAL(a.v4.sin_port, 0);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET6, &x, &a), -EAFNOSUPPORT);
	/* An IPv4 client of a dual-stack listener came in on IPv4. */
	t_sa(&local, "::ffff:127.0.0.5", 3128);
	CU_ASSERT_EQUAL(egress_families(e, x.local), EGRESS_FAM_V4);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET, &x, &a), 0);
	CHECKF(strcmp(t_fmt(&a), "127.0.0.5") == 0, "%s", t_fmt(&a));
	t_sa(&local, "2001:db8::9", 3128);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET6, &x, &a), 0);
	CHECKF(strcmp(t_fmt(&a), "2001:db8::9") == 0, "%s", t_fmt(&a));
	/* No local address known: nothing to leave from. */
	x.local = NULL;
	CU_ASSERT_EQUAL(egress_families(e, NULL), 0);
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET, &x, &a), -EAFNOSUPPORT);
	egress_free(e);
}

/* Whether <a> is inside <prefix>/<plen> with a host part that is not
 * all zero (unless plen is 128). */
static bool
t_inside(const union egress_addr *a, const struct in6_addr *prefix,
    unsigned plen)
{
	const uint8_t	*p = a->v6.sin6_addr.s6_addr, *q = prefix->s6_addr;
	bool		 host_zero = true;
	unsigned	 i, keep;
	uint8_t		 mask;

	if (a->sa.sa_family != AF_INET6)
		return false;
	for (i = 0; i < 16; i++) {
		keep = plen > 8 * i ? (plen - 8 * i > 8 ? 8 : plen - 8 * i) : 0;
		mask = (uint8_t)(0xff00 >> keep);
		if ((p[i] & mask) != q[i])
			return false;
		if (p[i] & (uint8_t)~mask)
			host_zero = false;
	}
	return plen == 128 || !host_zero;
}

static void
test_egress_prefix_picks_stay_inside(void)
{
	static const struct {
		const char	*prefix;
		unsigned	 plen;
		unsigned	 min_distinct;	/* of 1,000 picks */
	} v[] = {
		{ "2001:db8:1::", 64, 1000 },
		{ "2001:db8:1:2:3:4::", 96, 1000 },
		{ "2001:db8:1:2:3:4:5:600", 120, 240 },
		{ "2001:db8::2", 127, 1 },
		{ "2001:db8::7", 128, 1 },
	};
	struct egress_ctx	 x;
	union egress_addr	 a, *seen;
	struct pt_egress	*e;
	struct in6_addr		 net;
	char			 body[128];
	size_t			 i;
	unsigned		 k, j, distinct;
	int			 rc;

	memset(&x, 0, sizeof(x));
	seen = calloc(1000, sizeof(*seen));
	CU_ASSERT_FATAL(seen != NULL);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(body, sizeof(body), "egress = \"%s/%u\";",
		    v[i].prefix, v[i].plen);
		e = t_parse(body, &rc);
		if (!CHECKF(e != NULL, "%s: %s", body, t_err))
			continue;
		inet_pton(AF_INET6, v[i].prefix, &net);
		distinct = 0;
		for (k = 0; k < 1000; k++) {
			CU_ASSERT_EQUAL(egress_pick(e, AF_INET6, &x, &a), 0);
			if (!CHECKF(t_inside(&a, &net, v[i].plen), "/%u: %s "
			    "outside or the all-zero host", v[i].plen,
			    t_fmt(&a)))
				break;
			for (j = 0; j < distinct; j++)
				if (egress_addr_equal(&seen[j], &a))
					break;
			if (j == distinct)
				seen[distinct++] = a;
		}
		CHECKF(distinct >= v[i].min_distinct, "/%u: %u distinct of "
		    "1000 picks, want %u or more", v[i].plen, distinct,
		    v[i].min_distinct);
		/* /127: the one address that is not the anycast one. */
		if (v[i].plen == 127)
			CHECKF(strcmp(t_fmt(&seen[0]), "2001:db8::3") == 0,
			    "/127: %s", t_fmt(&seen[0]));
		if (v[i].plen == 128)
			CHECKF(strcmp(t_fmt(&seen[0]), "2001:db8::7") == 0,
			    "/128: %s", t_fmt(&seen[0]));
		egress_free(e);
	}
	free(seen);
}

static void
t_pick_for(const struct pt_egress *e, const char *user, const char *src,
    union egress_addr *out)
{
	struct sockaddr_storage	 peer;
	struct egress_ctx	 x;

	memset(&x, 0, sizeof(x));
	t_sa(&peer, src, 40000);
	x.peer = (const struct sockaddr *)&peer;
	x.user = user;
	x.user_len = user != NULL ? strlen(user) : 0;
	CU_ASSERT_EQUAL(egress_pick(e, AF_INET6, &x, out), 0);
}

static void
test_egress_stable_picks_follow_user_and_source(void)
{
	union egress_addr	 a, b, c, d;
	struct pt_egress	*e, *e2, *src, *other;
	struct in6_addr		 net;
	int			 rc;

	egress_key_set(0x0123456789abcdefULL, 0xfedcba9876543210ULL);
	inet_pton(AF_INET6, "2001:db8:1::", &net);
	e = t_parse("egress = \"2001:db8:1::/64\"; egress_stable = \"user\";",
	    &rc);
	CU_ASSERT_FATAL(e != NULL);
	t_pick_for(e, "alice", "127.0.0.1", &a);
	t_pick_for(e, "alice", "10.9.9.9", &b);
	CHECKF(egress_addr_equal(&a, &b), "alice: %s then %s", t_fmt(&a),
	    t_fmt(&b));
	CU_ASSERT_TRUE(t_inside(&a, &net, 64));
	t_pick_for(e, "bob", "127.0.0.1", &c);
	CHECKF(!egress_addr_equal(&a, &c), "alice and bob both %s",
	    t_fmt(&a));
	CU_ASSERT_TRUE(t_inside(&c, &net, 64));
	/* The same configuration read again (a reload: the key is the
	 * master's, kept): the same addresses. */
	e2 = t_parse("egress = \"2001:db8:1::/64\"; egress_stable = \"user\";",
	    &rc);
	CU_ASSERT_FATAL(e2 != NULL);
	t_pick_for(e2, "alice", "192.0.2.1", &d);
	CHECKF(egress_addr_equal(&a, &d), "alice after a reload: %s, was %s",
	    t_fmt(&d), t_fmt(&a));
	/* Without a user, the source decides. */
	t_pick_for(e, NULL, "192.0.2.1", &b);
	t_pick_for(e, "", "192.0.2.1", &c);
	CHECKF(egress_addr_equal(&b, &c), "no user: %s then %s", t_fmt(&b),
	    t_fmt(&c));
	t_pick_for(e, NULL, "192.0.2.2", &d);
	CHECKF(!egress_addr_equal(&b, &d), "two sources both %s", t_fmt(&b));
	/* By source: the user does not matter, the client does. */
	src = t_parse("egress = \"2001:db8:1::/64\"; egress_stable = "
	    "\"source\";", &rc);
	CU_ASSERT_FATAL(src != NULL);
	t_pick_for(src, "alice", "2001:db8:ff::1", &a);
	t_pick_for(src, "bob", "2001:db8:ff::1", &b);
	CHECKF(egress_addr_equal(&a, &b), "one source: %s and %s", t_fmt(&a),
	    t_fmt(&b));
	t_pick_for(src, "alice", "2001:db8:ff::2", &c);
	CHECKF(!egress_addr_equal(&a, &c), "two sources both %s", t_fmt(&a));
	/* Another prefix: an unrelated host part for the same user. */
	other = t_parse("egress = \"2001:db8:2::/64\"; egress_stable = "
	    "\"user\";", &rc);
	CU_ASSERT_FATAL(other != NULL);
	t_pick_for(e, "alice", "127.0.0.1", &a);
	t_pick_for(other, "alice", "127.0.0.1", &b);
	CHECKF(memcmp(&a.v6.sin6_addr.s6_addr[8], &b.v6.sin6_addr.s6_addr[8],
	    8) != 0, "alice's host part is the same in two prefixes");
	/* Another key (another master): other addresses. */
	egress_key_set(1, 2);
	t_pick_for(e, "alice", "127.0.0.1", &b);
	CHECKF(!egress_addr_equal(&a, &b), "alice's address outlived the "
	    "key");
	egress_free(e);
	egress_free(e2);
	egress_free(src);
	egress_free(other);
}

static int
t_fini(void)
{
	config_destroy(&t_cfg);
	return 0;
}

static int
t_init(void)
{
	config_init(&t_cfg);
	return 0;
}

void
register_egress_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("egress", t_init, t_fini)) == NULL)
		return;
	CU_add_test(s, "siphash_gives_the_reference_vectors",
	    test_egress_siphash_gives_the_reference_vectors);
	CU_add_test(s, "parses_good_values", test_egress_parses_good_values);
	CU_add_test(s, "refuses_bad_values_naming_the_setting",
	    test_egress_refuses_bad_values_naming_the_setting);
	CU_add_test(s, "pair_picks_the_destination_family",
	    test_egress_pair_picks_the_destination_family);
	CU_add_test(s, "same_is_the_local_address",
	    test_egress_same_is_the_local_address);
	CU_add_test(s, "prefix_picks_stay_inside",
	    test_egress_prefix_picks_stay_inside);
	CU_add_test(s, "stable_picks_follow_user_and_source",
	    test_egress_stable_picks_follow_user_and_source);
}
