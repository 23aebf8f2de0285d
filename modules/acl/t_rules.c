/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the rules (acl_conf.c and rules.c) from configuration
 * text, as an operator writes it: each condition alone and combined,
 * first match, the default, exact/suffix/regex hosts, what ACCESS leaves
 * to DIAL, UDP associations, the private waiver, and every configuration
 * error with the line it names.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "modules/acl/rules.h"
#include "t/unit/check.h"

#define T_LISTENERS							\
	"listeners = ( { name = \"main\"; address = \"127.0.0.1:3128\"; },\n" \
	"  { address = \"127.0.0.1:1080\"; protocol = \"socks5\"; } );\n"

static config_t		 t_cfg;
static char		 t_err[512];
static int		 t_err_line;

/* Parses "m = { <body> };" after the listeners; NULL on error, with
 * t_err and t_err_line (the line *where names, 0 for none). */
static struct acl_conf *
t_parse(const char *body)
{
	const config_setting_t	*where = NULL;
	struct acl_conf		*ac;
	char			 text[8192];

	snprintf(text, sizeof(text), T_LISTENERS "m = { name = \"acl\";\n%s\n};\n",
	    body);
	config_destroy(&t_cfg);
	config_init(&t_cfg);
	if (config_read_string(&t_cfg, text) != CONFIG_TRUE) {
		snprintf(t_err, sizeof(t_err), "libconfig: %s at %d",
		    config_error_text(&t_cfg), config_error_line(&t_cfg));
		t_err_line = -1;
		return NULL;
	}
	ac = acl_conf_parse(config_lookup(&t_cfg, "m"), t_err, sizeof(t_err),
	    &where);
	t_err_line = where != NULL ? (int)config_setting_source_line(where) : 0;
	return ac;
}

struct t_req {
	struct pt_req	 req;
	struct net_addr	 target;
};

static void
t_sa(struct sockaddr_storage *ss, const char *ip)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)ss)->sin_addr) == 1)
		ss->ss_family = AF_INET;
	else if (inet_pton(AF_INET6, ip,
	    &((struct sockaddr_in6 *)ss)->sin6_addr) == 1)
		ss->ss_family = AF_INET6;
}

/* A request: "proto host port" with the rest in key=value words:
 * src= user= method= listener= dst= */
static struct t_req
t_req(enum pt_proto proto, const char *host, uint16_t port, const char *src,
    const char *user, const char *method, int listener, const char *dst)
{
	struct t_req	 r;

	memset(&r, 0, sizeof(r));
	r.req.proto = proto;
	r.req.host.ptr = host;
	r.req.host.len = host != NULL ? strlen(host) : 0;
	r.req.port = port;
	r.req.user.ptr = user;
	r.req.user.len = user != NULL ? strlen(user) : 0;
	r.req.method.ptr = method;
	r.req.method.len = method != NULL ? strlen(method) : 0;
	r.req.listener_idx = listener;
	r.req.listener = listener == 0 ? "main" : "127.0.0.1:1080";
	t_sa(&r.req.peer, src != NULL ? src : "192.0.2.10");
	if (dst != NULL) {
		t_sa(&r.req.target, dst);
		net_addr_from((struct sockaddr *)&r.req.target, &r.target);
	}
	return r;
}

/* The full verdict: 'A' allow, 'D' deny, with the deciding rule's label
 * in <label> (or "default"). */
static char
t_judge(const struct acl_conf *ac, const struct t_req *r, const char **label)
{
	struct acl_decision	 d;

	acl_eval(ac, &r->req, &r->target, 0, r->target.family == 0 ?
	    ACL_C_DST : 0, &d);
	if (label != NULL)
		*label = d.rule >= 0 ? ac->rules[d.rule].label : "default";
	return d.outcome == ACL_ALLOW ? 'A' : d.outcome == ACL_DENY ? 'D' :
	    'U';
}

#define HTTP(host)	t_req(PT_PROTO_HTTP, host, 80, NULL, NULL, "GET", 0, NULL)

static void
test_acl_rules_each_condition(void)
{
	struct acl_conf	*ac;
	struct t_req	 r;

	ac = t_parse("rules = ( { action = \"allow\"; src = [ \"10.0.0.0/8\", "
	    "\"2001:db8::/32\" ]; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = t_req(PT_PROTO_HTTP, "a.test", 80, "10.1.2.3", 0, "GET", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = t_req(PT_PROTO_HTTP, "a.test", 80, "::ffff:10.1.2.3", 0, "GET", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = t_req(PT_PROTO_HTTP, "a.test", 80, "2001:db8::5", 0, "GET", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = t_req(PT_PROTO_HTTP, "a.test", 80, "11.0.0.1", 0, "GET", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');	/* default deny */
	acl_conf_free(ac);

	ac = t_parse("default = \"allow\"; rules = ( { action = \"deny\"; "
	    "port = ( 25, \"6000-6010\" ); } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = t_req(PT_PROTO_CONNECT, "a.test", 25, 0, 0, "CONNECT", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r.req.port = 6000;
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r.req.port = 6010;
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r.req.port = 6011;
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r.req.port = 5999;
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	acl_conf_free(ac);

	ac = t_parse("rules = ( { name = \"any\"; action = \"allow\"; "
	    "user = \"*\"; method = \"GET\"; },\n"
	    "{ name = \"bob\"; action = \"allow\"; user = [ \"bob\" ]; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = t_req(PT_PROTO_HTTP, "a.test", 80, 0, "alice", "GET", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = t_req(PT_PROTO_HTTP, "a.test", 80, 0, NULL, "GET", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');	/* no user */
	r = t_req(PT_PROTO_HTTP, "a.test", 80, 0, "alice", "POST", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');	/* method */
	r = t_req(PT_PROTO_HTTP, "a.test", 80, 0, "bob", "POST", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = t_req(PT_PROTO_HTTP, "a.test", 80, 0, "bobby", "POST", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r = t_req(PT_PROTO_HTTP, "a.test", 80, 0, "alice", "get", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');	/* methods are exact */
	acl_conf_free(ac);

	ac = t_parse("rules = ( { action = \"allow\"; listener = "
	    "\"127.0.0.1:1080\"; protocol = [ \"socks5\", \"socks4\" ]; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = t_req(PT_PROTO_SOCKS5, "a.test", 80, 0, 0, NULL, 1, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r.req.proto = PT_PROTO_SOCKS4;
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r.req.proto = PT_PROTO_UDP;
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r = t_req(PT_PROTO_SOCKS5, "a.test", 80, 0, 0, NULL, 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');	/* listener */
	acl_conf_free(ac);
}

static void
test_acl_rules_hosts(void)
{
	struct acl_conf	*ac;
	struct t_req	 r;
	const char	*label;

	ac = t_parse("default = \"allow\";\nrules = (\n"
	    "{ name = \"exact\"; action = \"deny\"; host = \"example.test\"; },\n"
	    "{ name = \"suffix\"; action = \"deny\"; host = \".tracker.test\"; },\n"
	    "{ name = \"re\"; action = \"deny\"; host = [ "
	    "\"~^ads\\\\.example\\\\.test$\", \"~^ad[0-9]+\\\\.cdn\\\\.test$\" ]; },\n"
	    "{ name = \"loose\"; action = \"deny\"; host = \"~evil\"; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = HTTP("example.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "exact"));
	r = HTTP("a.example.test");		/* exact is exact */
	CU_ASSERT(t_judge(ac, &r, &label) == 'A' && !strcmp(label, "default"));
	r = HTTP("tracker.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "suffix"));
	r = HTTP("x.y.tracker.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "suffix"));
	r = HTTP("nottracker.test");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = HTTP("ads.example.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "re"));
	r = HTTP("ADS.Example.Test");		/* case */
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "re"));
	r = HTTP("ad42.cdn.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "re"));
	r = HTTP("ads.example.test.other.test");	/* anchored */
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = HTTP("xads.example.test");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = HTTP("ad.cdn.test");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = HTTP("very-EVIL-site.test");	/* unanchored, as written */
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "loose"));
	CU_ASSERT(ac->rules[2].re_any != NULL);	/* one JIT call */
	acl_conf_free(ac);

	/* A backtracking verb stays in its own expression: joined,
	 * (*COMMIT) would end the match of the others too. */
	ac = t_parse("default = \"allow\"; rules = ( { action = \"deny\"; "
	    "host = [ \"~^a(*COMMIT)x\", \"~^ab\\\\.test$\" ]; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = HTTP("ab.test");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	CU_ASSERT(ac->rules[0].re_any == NULL);
	acl_conf_free(ac);
}

/* A regex driven into PCRE2's match limit (nested repeats, a host made
 * to backtrack) cannot decide: the request is refused whether the rule
 * denies or allows, and a later allow rule does not get it. */
static void
test_acl_rules_regex_gives_up(void)
{
	struct acl_conf	*ac;
	struct t_req	 r;
	const char	*label;
	const char	*slow = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab.example";

	ac = t_parse("default = \"deny\"; rules = (\n"
	    "{ name = \"bt\"; action = \"deny\"; host = \"~^(a+)+\\\\.example$\"; },\n"
	    "{ name = \"all\"; action = \"allow\"; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = HTTP("aaa.example");
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "bt"));
	r = HTTP("b.example");
	CU_ASSERT(t_judge(ac, &r, &label) == 'A' && !strcmp(label, "all"));
	r = HTTP(slow);
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "bt"));
	r = HTTP(slow);				/* not remembered as a miss */
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "bt"));
	acl_conf_free(ac);

	ac = t_parse("default = \"allow\"; rules = (\n"
	    "{ name = \"ok\"; action = \"allow\"; host = \"~^(a+)+\\\\.example$\"; },\n"
	    "{ name = \"rest\"; action = \"deny\"; port = 80; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = HTTP("aaa.example");
	CU_ASSERT(t_judge(ac, &r, &label) == 'A' && !strcmp(label, "ok"));
	r = HTTP(slow);
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "ok"));
	acl_conf_free(ac);
}

static void
test_acl_rules_order_and_default(void)
{
	struct acl_conf	*ac;
	struct t_req	 r;
	const char	*label;

	ac = t_parse("rules = ( { action = \"allow\"; host = \"a.test\"; },\n"
	    "{ action = \"deny\"; host = \"a.test\"; },\n"
	    "{ name = \"web\"; action = \"allow\"; port = 80; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = HTTP("a.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'A' && !strcmp(label, "rule1"));
	r = HTTP("b.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'A' && !strcmp(label, "web"));
	r.req.port = 81;
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "default"));
	acl_conf_free(ac);

	ac = t_parse("default = \"allow\"; rules = ( { action = \"deny\"; "
	    "host = \"a.test\"; },\n{ action = \"allow\"; host = \"a.test\"; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = HTTP("a.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'D' && !strcmp(label, "rule1"));
	r = HTTP("b.test");
	CU_ASSERT(t_judge(ac, &r, &label) == 'A' && !strcmp(label, "default"));
	acl_conf_free(ac);

	/* Two conditions in one rule: both must hold. */
	ac = t_parse("default = \"allow\"; rules = ( { action = \"deny\"; "
	    "host = \".x.test\"; port = 443; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = t_req(PT_PROTO_CONNECT, "a.x.test", 443, 0, 0, "CONNECT", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r.req.port = 8443;
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = t_req(PT_PROTO_CONNECT, "a.y.test", 443, 0, 0, "CONNECT", 0, 0);
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	acl_conf_free(ac);
}

static void
test_acl_rules_dst_waits_for_dial(void)
{
	struct acl_conf		*ac;
	struct acl_decision	 d;
	struct t_req		 r;
	struct net_addr		 none = { 0 };

	ac = t_parse("rules = ( { action = \"deny\"; host = \"bad.test\"; },\n"
	    "{ name = \"lan\"; action = \"deny\"; dst = \"198.51.100.0/24\"; },\n"
	    "{ name = \"all\"; action = \"allow\"; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = HTTP("bad.test");
	acl_eval(ac, &r.req, &none, 0, ACL_C_DST, &d);
	CU_ASSERT(d.outcome == ACL_DENY && d.rule == 0);   /* before DNS */
	r = HTTP("ok.test");
	acl_eval(ac, &r.req, &none, 0, ACL_C_DST, &d);
	CU_ASSERT(d.outcome == ACL_UNDECIDED && d.rule == 1);
	r = t_req(PT_PROTO_HTTP, "ok.test", 80, 0, 0, "GET", 0, "198.51.100.7");
	acl_eval(ac, &r.req, &r.target, (size_t)d.rule, 0, &d);
	CU_ASSERT(d.outcome == ACL_DENY && d.rule == 1);
	r = t_req(PT_PROTO_HTTP, "ok.test", 80, 0, 0, "GET", 0, "192.0.2.7");
	acl_eval(ac, &r.req, &r.target, 1, 0, &d);
	CU_ASSERT(d.outcome == ACL_ALLOW && d.rule == 2);
	/* NAT64 and 6to4 spellings of a denied address are the address. */
	r = t_req(PT_PROTO_HTTP, "ok.test", 80, 0, 0, "GET", 0,
	    "64:ff9b::c633:6407");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r = t_req(PT_PROTO_HTTP, "ok.test", 80, 0, 0, "GET", 0,
	    "2002:c633:6407::1");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');

	acl_conf_free(ac);
	/* A source is the address the client has: only its IPv4-mapped
	 * form is its IPv4 address, not an IPv6 one carrying it (6to4,
	 * NAT64, compatible), as auth's no_auth_from reads it. */
	ac = t_parse("rules = ( { name = \"lan\"; action = \"allow\"; "
	    "src = \"10.0.0.0/8\"; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = t_req(PT_PROTO_HTTP, "ok.test", 80, "::ffff:10.1.2.3", 0, "GET", 0,
	    "192.0.2.7");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r = t_req(PT_PROTO_HTTP, "ok.test", 80, "2002:a01:203::1", 0, "GET", 0,
	    "192.0.2.7");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r = t_req(PT_PROTO_HTTP, "ok.test", 80, "64:ff9b::a01:203", 0, "GET",
	    0, "192.0.2.7");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	r = t_req(PT_PROTO_HTTP, "ok.test", 80, "::10.1.2.3", 0, "GET", 0,
	    "192.0.2.7");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	acl_conf_free(ac);
	ac = t_parse("rules = ( { action = \"deny\"; host = \"bad.test\"; },\n"
	    "{ name = \"lan\"; action = \"deny\"; dst = \"198.51.100.0/24\"; },\n"
	    "{ name = \"all\"; action = \"allow\"; } );");
	CU_ASSERT_FATAL(ac != NULL);

	/* A UDP association knows no destination: only a rule without
	 * destination conditions decides it. */
	r = t_req(PT_PROTO_UDP, "0.0.0.0", 0, 0, 0, NULL, 1, NULL);
	acl_eval(ac, &r.req, &none, 0, ACL_C_DEST, &d);
	CU_ASSERT(d.outcome == ACL_UNDECIDED && d.rule == 0);
	acl_conf_free(ac);
	ac = t_parse("rules = ( { action = \"deny\"; src = \"192.0.2.0/24\"; "
	    "protocol = \"udp\"; },\n{ action = \"allow\"; port = 53; } );");
	CU_ASSERT_FATAL(ac != NULL);
	r = t_req(PT_PROTO_UDP, "0.0.0.0", 0, 0, 0, NULL, 1, NULL);
	acl_eval(ac, &r.req, &none, 0, ACL_C_DEST, &d);
	CU_ASSERT(d.outcome == ACL_DENY && d.rule == 0);
	r = t_req(PT_PROTO_UDP, "0.0.0.0", 0, "203.0.113.1", 0, NULL, 1, NULL);
	acl_eval(ac, &r.req, &none, 0, ACL_C_DEST, &d);
	CU_ASSERT(d.outcome == ACL_UNDECIDED && d.rule == 1);
	/* Its datagrams: the whole rule set, per destination. */
	r = t_req(PT_PROTO_UDP, "192.0.2.53", 53, "203.0.113.1", 0, NULL, 1,
	    "192.0.2.53");
	CU_ASSERT(t_judge(ac, &r, NULL) == 'A');
	r.req.port = 54;
	CU_ASSERT(t_judge(ac, &r, NULL) == 'D');
	acl_conf_free(ac);
}

static bool
t_private(const struct acl_conf *ac, int rule, const char *ip)
{
	struct sockaddr_storage	 ss;
	struct net_addr		 a;

	t_sa(&ss, ip);
	net_addr_from((struct sockaddr *)&ss, &a);
	return acl_private_denied(ac, rule, &a);
}

static void
test_acl_rules_private(void)
{
	struct acl_conf	*ac;

	ac = t_parse("default = \"allow\"; rules = (\n"
	    "{ action = \"allow\"; dst = \"127.0.0.0/8\"; port = 1; },\n"
	    "{ action = \"allow\"; dst = \"0.0.0.0/0\"; port = 2; },\n"
	    "{ action = \"allow\"; dst = \"10.1.0.0/16\"; port = 3; },\n"
	    "{ action = \"allow\"; port = 4; } );");
	CU_ASSERT_FATAL(ac != NULL);
	CU_ASSERT(t_private(ac, -1, "127.0.0.1"));
	CU_ASSERT(t_private(ac, -1, "169.254.169.254"));
	CU_ASSERT(t_private(ac, -1, "::ffff:169.254.169.254"));
	CU_ASSERT(t_private(ac, -1, "64:ff9b::a9fe:a9fe"));
	CU_ASSERT(!t_private(ac, -1, "192.0.1.1"));
	CU_ASSERT(!t_private(ac, 0, "127.0.0.1"));	/* names the range */
	CU_ASSERT(!t_private(ac, 0, "::ffff:127.0.0.1"));
	CU_ASSERT(!t_private(ac, 0, "64:ff9b::7f00:1"));
	CU_ASSERT(t_private(ac, 0, "10.0.0.1"));	/* another range */
	CU_ASSERT(t_private(ac, 1, "127.0.0.1"));	/* 0/0 opens none */
	CU_ASSERT(!t_private(ac, 2, "10.1.2.3"));
	CU_ASSERT(t_private(ac, 2, "10.2.0.1"));
	CU_ASSERT(t_private(ac, 3, "10.1.2.3"));	/* no dst */
	acl_conf_free(ac);
	ac = t_parse("allow_private = true;");
	CU_ASSERT_FATAL(ac != NULL);
	CU_ASSERT(!t_private(ac, -1, "127.0.0.1"));
	CU_ASSERT(!t_private(ac, -1, "169.254.169.254"));
	CU_ASSERT(!ac->default_allow && ac->nrules == 0);
	acl_conf_free(ac);
}

static void
test_acl_rules_errors(void)
{
	/* body, words the message must hold, line of the bad setting (the
	 * module entry starts on line 3). */
	static const struct {
		const char	*body, *want1, *want2;
		int		 line;
	} cases[] = {
		{ "rules = (\n{ action = \"allow\";\n src = [ \"10.0.0.300/8\" ]; } );",
		  "10.0.0.300/8", "rule 1", 6 },
		{ "rules = (\n{ action = \"allow\"; src = \"10.1.2.3/8\"; } );",
		  "host bits", "src", 5 },
		{ "rules = ( { action = \"deny\"; },\n{ name = \"p\"; action = \"allow\";\n"
		  "  port = ( 80, \"80-70\" ); } );", "80-70", "rule 2 (\"p\")", 6 },
		{ "rules = (\n{ action = \"allow\"; port = 70000; } );",
		  "70000", "port", 5 },
		{ "rules = (\n{ action = \"allow\"; protocol = \"ftp\"; } );",
		  "ftp", "socks5", 5 },
		{ "rules = (\n{ action = \"allow\"; listener = \"nosuch\"; } );",
		  "nosuch", "listener", 5 },
		{ "rules = (\n{ action = \"maybe\"; } );", "allow", "deny", 5 },
		{ "rules = (\n{ port = 1; } );", "action", "required", 5 },
		{ "rules = (\n{ action = \"allow\";\n host = [ \"a.test\", \"~(\" ]; } );",
		  "missing closing parenthesis", "offset 1", 6 },
		{ "rules = (\n{ action = \"allow\"; hots = \"a.test\"; } );",
		  "unknown condition", "hots", 5 },
		{ "rules = (\n{ action = \"allow\"; host = [ ]; } );",
		  "empty", "host", 5 },
		{ "rules = (\n{ action = \"allow\"; host = \"a b\"; } );",
		  "not a host name", "a b", 5 },
		{ "rules = (\n{ action = \"allow\"; method = \"GE T\"; } );",
		  "method", "GE T", 5 },
		{ "rules = (\n{ action = \"allow\";\n host_file = \"/nonexistent/x\"; } );",
		  "/nonexistent/x", "host_file", 6 },
		{ "default = \"block\";", "default", "allow", 4 },
		{ "allow_private = \"yes\";", "allow_private", "true", 4 },
		{ "rulez = ( );", "unknown option", "rulez", 4 },
		{ "rules = (\n{ name = \"has space\"; action = \"allow\"; } );",
		  "name", "A-Z", 5 },
		{ "rules = (\n{ name = \"out\"; action = \"allow\";\n"
		  "  egress = \"10.0.0.0/8\"; } );", "rule 1 (\"out\"): egress",
		  "must be IPv6", 6 },
		{ "rules = (\n{ action = \"allow\"; egress = \"192.0.2.1\";\n"
		  "  egress_stable = \"user\"; } );", "egress_stable",
		  "only with an IPv6 prefix", 6 },
		{ "rules = (\n{ action = \"deny\";\n egress = \"192.0.2.1\"; } );",
		  "egress", "a deny rule", 6 },
	};
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECKF(t_parse(cases[i].body) == NULL, "case %zu refused", i);
		CHECKF(strstr(t_err, cases[i].want1) != NULL &&
		    strstr(t_err, cases[i].want2) != NULL, "case %zu: \"%s\" "
		    "holds \"%s\" and \"%s\"", i, t_err, cases[i].want1,
		    cases[i].want2);
		CHECKF(t_err_line == cases[i].line, "case %zu: line %d, want "
		    "%d (%s)", i, t_err_line, cases[i].line, t_err);
	}
}

/* An allow rule's egress is read by the core's parser (pt_egress_conf)
 * and kept with the rule; rules without one have none. */
/* A rule's egress as the ABI prints it (pt_egress_format), or "none". */
static void
t_egress(const struct pt_egress *e, char *buf, size_t len)
{
	if (e == NULL)
		snprintf(buf, len, "none");
	else
		(void)pt_egress_format(e, buf, len);
}

static void
test_acl_rules_egress(void)
{
	struct acl_conf	*ac;
	char		 t1[128], t2[128];

	ac = t_parse("rules = (\n"
	    "{ action = \"allow\"; port = 80; egress = \"127.0.0.2\"; },\n"
	    "{ action = \"allow\"; port = 81;\n"
	    "  egress = [ \"127.0.0.3\", \"2001:db8:1::/64\" ];\n"
	    "  egress_stable = \"user\"; },\n"
	    "{ action = \"allow\"; port = 82; } );");
	CHECKF_FATAL(ac != NULL, "refused: %s", t_err);
	CU_ASSERT_FATAL(ac->nrules == 3);
	t_egress(ac->rules[0].egress, t1, sizeof(t1));
	CHECKF(strcmp(t1, "127.0.0.2") == 0, "rule 1: %s", t1);
	t_egress(ac->rules[1].egress, t2, sizeof(t2));
	CHECKF(strcmp(t2, "127.0.0.3,2001:db8:1::/64 stable=user") == 0,
	    "rule 2: %s", t2);
	CU_ASSERT_PTR_NULL(ac->rules[2].egress);
	acl_conf_free(ac);
}

/* <ac> without its blocks: every rule tried alone, the reference. */
static void
t_unblock(struct acl_conf *ac)
{
	size_t	 i;

	acl_blocks_free(ac);
	ac->blocks = calloc(ac->nrules + 1, sizeof(*ac->blocks));
	ac->block_of = calloc(ac->nrules + 1, sizeof(*ac->block_of));
	CU_ASSERT_FATAL(ac->blocks != NULL && ac->block_of != NULL);
	for (i = 0; i < ac->nrules; i++) {
		ac->blocks[i].first = i;
		ac->blocks[i].end = i + 1;
		ac->block_of[i] = i;
	}
	ac->nblocks = ac->nrules;
}

/* Blocks change the cost, never the verdict: 40 regex rules, 40 CIDR
 * rules (src and dst), names and suffixes, judged with and without. */
static void
test_acl_rules_blocks_keep_verdicts(void)
{
	static const char *const hosts[] = {
		"ads7.example.com", "x.ads7.example.com", "ads7.example.co",
		"ads39.example.com", "ads40.example.com", "n3.test", "a.n3.test",
		"s5.test", "a.b.s5.test", "ok.test", "ADS1.EXAMPLE.COM",
		"back2back.test", "z.test",
	};
	static const char *const addrs[] = {
		"10.3.0.1", "10.39.255.255", "10.40.0.1", "192.0.2.1",
		"2001:db8:5::1", "2001:db8:40::1", "::ffff:10.7.1.1",
		"64:ff9b::a05:101", "172.16.9.1", "172.16.10.0", "10.3.200.1",
		"10.25.0.1", "10.45.0.1", "10.31.0.1", "100.64.0.1",
		"2001:db8:1e::1",
	};
	struct acl_conf		*with, *without;
	struct acl_decision	 d1, d2;
	struct t_req		 r;
	char			*text, *at;
	size_t			 i, j, k, bad = 0, n = 0;
	unsigned		 unknown;

	text = calloc(1, 65536);
	CU_ASSERT_FATAL(text != NULL);
	at = text + sprintf(text, "default = \"allow\"; rules = (\n");
	for (i = 0; i < 40; i++)
		at += sprintf(at, "{ action = \"%s\"; host = \"~^(.+\\\\.)?"
		    "ads%zu\\\\.example\\\\.com$\"; },\n", i % 3 ? "deny" : "allow",
		    i);
	at += sprintf(at, "{ action = \"deny\"; host = [ \"n3.test\", "
	    "\".s5.test\" ]; },\n");
	for (i = 0; i < 40; i++)
		if (i == 20 || i == 30 || i == 38)	/* nested networks */
			at += sprintf(at, "{ action = \"%s\"; dst = \"%s\"; },\n",
			    i == 30 ? "allow" : "deny", i == 20 ? "10.0.0.0/8" :
			    i == 30 ? "10.3.128.0/17" : "0.0.0.0/1");
		else
			at += sprintf(at, "{ action = \"%s\"; dst = [ "
			    "\"10.%zu.0.0/16\", \"2001:db8:%zx::/48\" ]; },\n",
			    i % 2 ? "deny" : "allow", i, i);
	for (i = 0; i < 40; i++)
		at += sprintf(at, "{ action = \"deny\"; src = \"172.16.%zu.0/24\"; "
		    "},\n", i % 10);
	at += sprintf(at, "{ action = \"deny\"; port = 1; } );");
	with = t_parse(text);
	CHECKF_FATAL(with != NULL, "parse: %s", t_err);
	without = t_parse(text);
	CU_ASSERT_FATAL(without != NULL);
	free(text);
	CHECKF(with->nblocks <= 5 && with->blocks[0].re_any != NULL &&
	    with->blocks[0].end == 41, "%zu blocks, the first [0, %zu)",
	    with->nblocks, with->blocks[0].end);
	t_unblock(without);
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		for (j = 0; j < sizeof(addrs) / sizeof(addrs[0]); j++)
			for (k = 0; k < 2; k++) {
				r = t_req(PT_PROTO_HTTP, hosts[i], 80, addrs[j],
				    NULL, "GET", 0, k ? addrs[j] : NULL);
				unknown = k ? 0 : ACL_C_DST;
				acl_eval(with, &r.req, &r.target, 0, unknown,
				    &d1);
				acl_eval(without, &r.req, &r.target, 0, unknown,
				    &d2);
				n++;
				if (d1.outcome != d2.outcome ||
				    d1.rule != d2.rule) {
					bad++;
					CHECKF(false, "%s from/to %s (%s): %d/%d "
					    "with blocks, %d/%d without",
					    hosts[i], addrs[j], k ? "dial" :
					    "access", d1.outcome, d1.rule,
					    d2.outcome, d2.rule);
				}
				/* Resuming at DIAL from where ACCESS left. */
				if (!k && d1.outcome == ACL_UNDECIDED) {
					r = t_req(PT_PROTO_HTTP, hosts[i], 80,
					    addrs[j], NULL, "GET", 0, addrs[j]);
					acl_eval(with, &r.req, &r.target,
					    (size_t)d1.rule, 0, &d1);
					acl_eval(without, &r.req, &r.target, 0,
					    0, &d2);
					CHECKF(d1.outcome == d2.outcome &&
					    d1.rule == d2.rule, "%s to %s "
					    "resumed: %d/%d, whole: %d/%d",
					    hosts[i], addrs[j], d1.outcome,
					    d1.rule, d2.outcome, d2.rule);
				}
			}
	CHECKF(bad == 0 && n == 416, "%zu of %zu differ", bad, n);
	acl_conf_free(with);
	acl_conf_free(without);
}

static int
t_suite_init(void)
{
	config_init(&t_cfg);
	return 0;
}

static int
t_suite_clean(void)
{
	config_destroy(&t_cfg);
	return 0;
}

void	register_acl_rules_suite(void);

void
register_acl_rules_suite(void)
{
	CU_pSuite	 s = CU_add_suite("acl_rules", t_suite_init,
			    t_suite_clean);

	CU_add_test(s, "each condition", test_acl_rules_each_condition);
	CU_add_test(s, "hosts", test_acl_rules_hosts);
	CU_add_test(s, "a regex that gives up", test_acl_rules_regex_gives_up);
	CU_add_test(s, "order and default", test_acl_rules_order_and_default);
	CU_add_test(s, "dst waits for DIAL", test_acl_rules_dst_waits_for_dial);
	CU_add_test(s, "private", test_acl_rules_private);
	CU_add_test(s, "errors", test_acl_rules_errors);
	CU_add_test(s, "egress", test_acl_rules_egress);
	CU_add_test(s, "blocks keep verdicts",
	    test_acl_rules_blocks_keep_verdicts);
}
