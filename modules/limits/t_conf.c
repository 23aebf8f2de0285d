/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of modules/limits/limits_conf.c and match.c: a class as the
 * operator writes it, the defaults, which classes wait for ACCESS, the
 * errors with the setting they are about, and keys by user, address and
 * prefix (an IPv4-mapped IPv6 client is its IPv4 address).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "modules/limits/bucket.h"
#include "modules/limits/limits.h"
#include "t/unit/check.h"
#include "modules/limits/t_suites.h"

static config_t		 t_cfg;
static char		 t_err[512];
static const config_setting_t *t_where;

static struct limits_conf *
t_parse(const char *text)
{
	char	 buf[4096];

	snprintf(buf, sizeof(buf), "listeners = ( { name = \"web\"; }, "
	    "{ name = \"socks\"; } );\nm = {\n%s\n};\n", text);
	config_destroy(&t_cfg);
	config_init(&t_cfg);
	if (config_read_string(&t_cfg, buf) != CONFIG_TRUE) {
		snprintf(t_err, sizeof(t_err), "libconfig: %s",
		    config_error_text(&t_cfg));
		return NULL;
	}
	t_where = NULL;
	t_err[0] = '\0';
	return limits_conf_parse(config_lookup(&t_cfg, "m"), t_err,
	    sizeof(t_err), &t_where);
}

static void
test_conf_class_as_written(void)
{
	struct limits_conf	*lc;
	struct limits_class	*c;

	lc = t_parse("name = \"limits\"; table_size = 100;\n"
	    "classes = ( { name = \"per-user\"; match = { user = \"*\"; };\n"
	    "  key = \"user\"; max_connections = 100;\n"
	    "  bandwidth_down = 10485760; },\n"
	    "  { name = \"flood\"; match = { src = [ \"127.0.0.0/8\" ]; "
	    "listener = \"web\"; };\n"
	    "  connection_rate = 100; connection_rate_burst = 10;\n"
	    "  request_rate = 50; },\n"
	    "  { name = \"udp\"; match = { protocol = \"udp\"; };\n"
	    "  udp_packets = 200; udp_bytes = 100000; } );");
	CHECKF_FATAL(lc != NULL, "parse: %s", t_err);
	CU_ASSERT(lc->nclasses == 3 && lc->table_size == 100);
	c = &lc->classes[0];
	CU_ASSERT(strcmp(c->name, "per-user") == 0 && c->key == LK_USER);
	CU_ASSERT(c->late && c->user_any && c->p.max_conns == 100);
	CU_ASSERT(c->p.rate[LB_DOWN] == 10485760);
	CU_ASSERT(c->p.burst[LB_DOWN] == 10485760 / 8);
	CU_ASSERT(bucket_slice(c->p.rate[LB_DOWN], c->p.burst[LB_DOWN]) ==
	    262144);
	CU_ASSERT(bucket_slice(2097152, 16384) == 16384);
	CU_ASSERT(bucket_slice(1000, 100000) == 4096);
	c = &lc->classes[1];
	CU_ASSERT(!c->late && c->key == LK_SOURCE && c->nsrc == 1);
	CU_ASSERT(c->p.rate[LB_CONN] == 100 && c->p.burst[LB_CONN] == 10);
	CU_ASSERT(c->p.rate[LB_REQ] == 50 && c->p.burst[LB_REQ] == 50);
	/* udp_packets: a second's worth of datagrams; udp_bytes: at least
	 * one datagram of the largest size (100000 / 8 is less). */
	c = &lc->classes[2];
	CU_ASSERT(c->late && c->p.rate[LB_UDP_PKT] == 200 &&
	    c->p.burst[LB_UDP_PKT] == 200);
	CU_ASSERT(c->p.rate[LB_UDP] == 100000 &&
	    c->p.burst[LB_UDP] == 65535);
	CU_ASSERT(lc->any_early && lc->any_late);
	CU_ASSERT(lc->classes[0].shape != lc->classes[1].shape);
	limits_conf_free(lc);
}

/* Each bad input is refused with a message naming it, and the setting
 * at fault is the one the message is about. */
static void
test_conf_errors_name_the_setting(void)
{
	static const struct {
		const char	*text, *msg, *at;
	} rows[] = {
		{ "classes = ( { name = \"a\"; } );", "no limit", NULL },
		{ "classes = ( { name = \"a\"; max_connections = 0; } );",
		  "max_connections: 0 is out of range", "max_connections" },
		{ "classes = ( { name = \"a\"; request_rate = 5; },\n"
		  "{ name = \"a\"; request_rate = 5; } );",
		  "used by an earlier class", "name" },
		{ "classes = ( { name = \"a\"; request_rate = 5; "
		  "match = { src = \"10.0.0.1/8\"; }; } );",
		  "src: \"10.0.0.1/8\"", NULL },
		{ "classes = ( { name = \"a\"; request_rate = 5; "
		  "match = { listener = \"nope\"; }; } );",
		  "no listener is named \"nope\"", NULL },
		{ "classes = ( { name = \"a\"; request_rate = 5; "
		  "key = \"host\"; } );", "key: \"host\"", "key" },
		{ "classes = ( { name = \"a\"; request_rate_burst = 5; } );",
		  "request_rate_burst without request_rate",
		  "request_rate_burst" },
		{ "classes = ( { name = \"a\"; udp_packets_burst = 5; } );",
		  "udp_packets_burst without udp_packets",
		  "udp_packets_burst" },
		{ "classes = ( { name = \"a b\"; udp_packets = 5; } );",
		  "name: printable ASCII without space", "name" },
		{ "classes = ( { name = \"a\"; bandwidth_up = 5; rate = 1; "
		  "} );", "unknown option \"rate\"", "rate" },
		{ "classes = ( { name = \"a\"; bandwidth_up = 68719476737L; "
		  "} );", "bandwidth_up: 68719476737 is out of range",
		  "bandwidth_up" },
		{ "classes = ( { name = \"a\"; request_rate = 5; "
		  "match = { src = [ ]; }; } );",
		  "match: src: an empty list", "src" },
		{ "classes = ( { name = \"a\"; request_rate = 5; "
		  "match = { protocol = [ ]; }; } );",
		  "match: protocol: an empty list", "protocol" },
		{ "classes = ( );", "classes: required", NULL },
		{ "table_size = 4; classes = ( { name = \"a\"; "
		  "max_connections = 1; } );", "table_size", "table_size" },
	};
	struct limits_conf	*lc;
	size_t			 i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		lc = t_parse(rows[i].text);
		CHECKF(lc == NULL && strstr(t_err, rows[i].msg) != NULL,
		    "row %zu: want \"%s\", got \"%s\"", i, rows[i].msg,
		    t_err);
		if (rows[i].at != NULL)
			CHECKF(t_where != NULL &&
			    config_setting_name(t_where) != NULL &&
			    strcmp(config_setting_name(t_where),
			    rows[i].at) == 0, "row %zu: error at \"%s\", "
			    "want \"%s\"", i, t_where != NULL &&
			    config_setting_name(t_where) != NULL ?
			    config_setting_name(t_where) : "?", rows[i].at);
		limits_conf_free(lc);
	}
}

static struct pt_req
t_req(const char *addr, const char *user)
{
	struct pt_req		 r;
	struct sockaddr_in	*s4 = (struct sockaddr_in *)&r.peer;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)&r.peer;

	memset(&r, 0, sizeof(r));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1)
		s4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1)
		s6->sin6_family = AF_INET6;
	r.user.ptr = user;
	r.user.len = user != NULL ? strlen(user) : 0;
	r.listener = "web";
	r.proto = PT_PROTO_HTTP;
	return r;
}

static void
test_match_and_subjects(void)
{
	struct limits_conf	*lc;
	struct pt_req		 r;
	unsigned char		 a[300], b[300];
	int			 na, nb;

	lc = t_parse("classes = ( { name = \"u\"; key = \"user\"; "
	    "match = { user = [ \"alice\", \"bob\" ]; protocol = "
	    "[\"http\", \"connect\"]; }; request_rate = 1; },\n"
	    "{ name = \"p\"; key = \"prefix\"; request_rate = 1; },\n"
	    "{ name = \"s\"; request_rate = 1; match = { listener = "
	    "\"socks\"; }; } );");
	CHECKF_FATAL(lc != NULL, "parse: %s", t_err);
	r = t_req("127.0.0.1", "alice");
	CU_ASSERT(limits_match(&lc->classes[0], &r));
	CU_ASSERT(limits_subject(&lc->classes[0], &r, a, sizeof(a)) == 5);
	r = t_req("127.0.0.1", "carol");
	CU_ASSERT(!limits_match(&lc->classes[0], &r));
	r = t_req("127.0.0.1", NULL);
	CU_ASSERT(!limits_match(&lc->classes[0], &r));
	CU_ASSERT(limits_subject(&lc->classes[0], &r, a, sizeof(a)) == -1);
	r = t_req("127.0.0.1", "bob");
	r.proto = PT_PROTO_SOCKS5;
	CU_ASSERT(!limits_match(&lc->classes[0], &r));
	/* One /24, the same key; the next /24 another. */
	r = t_req("10.1.2.3", NULL);
	na = limits_subject(&lc->classes[1], &r, a, sizeof(a));
	r = t_req("::ffff:10.1.2.200", NULL);
	nb = limits_subject(&lc->classes[1], &r, b, sizeof(b));
	CU_ASSERT(na == 5 && na == nb && memcmp(a, b, (size_t)na) == 0);
	r = t_req("10.1.3.3", NULL);
	nb = limits_subject(&lc->classes[1], &r, b, sizeof(b));
	CU_ASSERT(na == nb && memcmp(a, b, (size_t)na) != 0);
	r = t_req("2001:db8:1:2:aaaa::1", NULL);
	na = limits_subject(&lc->classes[1], &r, a, sizeof(a));
	r = t_req("2001:db8:1:2:bbbb::9", NULL);
	nb = limits_subject(&lc->classes[1], &r, b, sizeof(b));
	CU_ASSERT(na == 17 && na == nb && memcmp(a, b, (size_t)na) == 0);
	r = t_req("127.0.0.1", NULL);
	CU_ASSERT(!limits_match(&lc->classes[2], &r));
	r.listener = "socks";
	CU_ASSERT(limits_match(&lc->classes[2], &r));
	limits_conf_free(lc);
}

static int
t_conf_init(void)
{
	config_init(&t_cfg);
	return 0;
}

static int
t_conf_fini(void)
{
	config_destroy(&t_cfg);
	return 0;
}

void
register_limits_conf_suite(void)
{
	CU_pSuite	 s = CU_add_suite("limits_conf", t_conf_init,
			    t_conf_fini);

	CU_add_test(s, "a class as written", test_conf_class_as_written);
	CU_add_test(s, "errors name the setting",
	    test_conf_errors_name_the_setting);
	CU_add_test(s, "match and subjects", test_match_and_subjects);
}
