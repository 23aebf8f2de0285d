/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target: the ACL's rules (modules/acl: acl_conf.c, blocks.c,
 * rules.c). Input, in three parts separated by lines "%%": the module's
 * entry (libconfig, inside "m = { name = \"acl\"; ... };", after two
 * listeners named "main" and "127.0.0.1:1080"), a host file's text (every
 * host_file the entry names is made to read it), and queries, one a line:
 * "host port src dst user method proto listener" ('-' for none).
 *
 * Checks: a parse error names a setting of the entry or none, with a
 * message; a configuration that parsed decides every query exactly as the
 * same rules do with no blocks and no combined regexes (each rule tried in
 * turn, each regex alone): the blocks (binary searches over networks, one
 * union of names and regexes per run of rules) are an index, and an index
 * must never change which rule matches first.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/fuzz/fuzz.h"
#include "modules/acl/rules.h"

#define LISTENERS							\
	"listeners = ( { name = \"main\"; address = \"127.0.0.1:3128\"; },\n" \
	"  { address = \"127.0.0.1:1080\"; protocol = \"socks5\"; } );\n"

static const char *hf_path;	/* the input's host file, in memory */

/* Points every rule's host_file at the in-memory file: the input never
 * names a file this process would read. */
static void
redirect_host_files(config_setting_t *m)
{
	config_setting_t	*rules, *r, *hf, *e;
	int			 i, j;

	if ((rules = config_setting_get_member(m, "rules")) == NULL ||
	    !config_setting_is_aggregate(rules))
		return;
	for (i = 0; (r = config_setting_get_elem(rules, (unsigned)i)) != NULL;
	    i++) {
		if (config_setting_type(r) != CONFIG_TYPE_GROUP ||
		    (hf = config_setting_get_member(r, "host_file")) == NULL)
			continue;
		if (config_setting_type(hf) == CONFIG_TYPE_STRING)
			config_setting_set_string(hf, hf_path);
		else if (config_setting_is_aggregate(hf))
			for (j = 0; (e = config_setting_get_elem(hf,
			    (unsigned)j)) != NULL; j++)
				if (config_setting_type(e) ==
				    CONFIG_TYPE_STRING)
					config_setting_set_string(e, hf_path);
	}
}

/* The same rules, evaluated one by one: one block per rule, no filter,
 * no combined regex. Shares the rules' own matchers with <ac>. */
static struct acl_conf *
flat_copy(const struct acl_conf *ac)
{
	struct acl_conf	*f = calloc(1, sizeof(*f));
	size_t		 i;

	FUZZ_CHECK(f != NULL, "memory");
	*f = *ac;
	f->rules = calloc(ac->nrules + 1, sizeof(*f->rules));
	f->blocks = calloc(ac->nrules + 1, sizeof(*f->blocks));
	f->block_of = calloc(ac->nrules + 1, sizeof(*f->block_of));
	FUZZ_CHECK(f->rules != NULL && f->blocks != NULL &&
	    f->block_of != NULL, "memory");
	for (i = 0; i < ac->nrules; i++) {
		f->rules[i] = ac->rules[i];
		f->rules[i].re_any = NULL;
		f->blocks[i].first = i;
		f->blocks[i].end = i + 1;
		f->blocks[i].kind = 0;
		f->block_of[i] = i;
	}
	f->nblocks = ac->nrules;
	return f;
}

static void
flat_free(struct acl_conf *f)
{
	free(f->rules);
	free(f->blocks);
	free(f->block_of);
	free(f);
}

static void
set_addr(struct sockaddr_storage *ss, const char *s)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &((struct sockaddr_in *)ss)->sin_addr) == 1)
		ss->ss_family = AF_INET;
	else if (inet_pton(AF_INET6, s,
	    &((struct sockaddr_in6 *)ss)->sin6_addr) == 1)
		ss->ss_family = AF_INET6;
}

static struct pt_str
word_str(const char *w)
{
	if (w == NULL || strcmp(w, "-") == 0)
		return (struct pt_str){ "", 0 };
	return (struct pt_str){ w, strlen(w) };
}

/* One query line, evaluated by both; they must agree. */
static void
query(const struct acl_conf *ac, const struct acl_conf *flat, char *line)
{
	static const enum pt_proto protos[] = { PT_PROTO_HTTP,
	    PT_PROTO_CONNECT, PT_PROTO_SOCKS5, PT_PROTO_SOCKS4, PT_PROTO_UDP,
	    PT_PROTO_WEBSOCKET, PT_PROTO_TCP };
	struct acl_decision	 d1, d2;
	struct net_addr		 target;
	struct pt_req		 req;
	char			*w[8] = { NULL }, *save = NULL, *t;
	unsigned		 unknown;
	int			 n = 0;

	for (t = strtok_r(line, " \t", &save); t != NULL && n < 8;
	    t = strtok_r(NULL, " \t", &save))
		w[n++] = t;
	if (n == 0)
		return;
	memset(&req, 0, sizeof(req));
	memset(&target, 0, sizeof(target));
	req.host = word_str(w[0]);
	req.port = w[1] != NULL ? (uint16_t)strtoul(w[1], NULL, 10) : 80;
	set_addr(&req.peer, w[2] != NULL ? w[2] : "192.0.2.10");
	if (w[3] != NULL) {
		set_addr(&req.target, w[3]);
		net_addr_from((const struct sockaddr *)&req.target, &target);
	}
	req.user = word_str(w[4]);
	req.method = word_str(w[5]);
	req.proto = protos[(w[6] != NULL ? strtoul(w[6], NULL, 10) : 0) % 7];
	req.listener_idx = w[7] != NULL ? (int)(strtoul(w[7], NULL, 10) % 3) :
	    0;
	req.listener = req.listener_idx == 0 ? "main" : "127.0.0.1:1080";
	unknown = target.family == 0 ? ACL_C_DST : 0;
	acl_memo_forget();
	acl_eval(ac, &req, &target, 0, unknown, &d1);
	acl_memo_forget();
	acl_eval(flat, &req, &target, 0, unknown, &d2);
	FUZZ_CHECK(d1.outcome == d2.outcome && d1.rule == d2.rule,
	    "blocks decide %d by rule %d, the rules one by one %d by rule "
	    "%d (host \"%.*s\")", (int)d1.outcome, d1.rule, (int)d2.outcome,
	    d2.rule, (int)req.host.len, req.host.ptr);
	/* Undecided at DIAL's stage too: resume from that rule. */
	if (d1.outcome == ACL_UNDECIDED) {
		acl_memo_forget();
		acl_eval(ac, &req, &target, (size_t)d1.rule, 0, &d1);
		acl_memo_forget();
		acl_eval(flat, &req, &target, (size_t)d2.rule, 0, &d2);
		FUZZ_CHECK(d1.outcome == d2.outcome && d1.rule == d2.rule,
		    "resumed: blocks %d by rule %d, one by one %d by rule %d",
		    (int)d1.outcome, d1.rule, (int)d2.outcome, d2.rule);
	}
	FUZZ_CHECK(acl_private_denied(ac, d1.rule, &target) ==
	    acl_private_denied(flat, d2.rule, &target), "private verdicts");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const fixed[] = {
		"example.org 80 192.0.2.10", "a.b.example.org 443 10.1.2.3 "
		"93.184.216.34 alice CONNECT 1", "localhost 22 ::1 ::1 - - 2 1",
		"WWW.Example.COM. 8080 198.51.100.7 - bob GET", "- 53 10.0.0.1 "
		"10.0.0.53 - - 4 1",
	};
	const uint8_t		*entry, *hosts, *queries;
	size_t			 elen, hlen, qlen, i;
	const config_setting_t	*where;
	struct acl_conf		*ac, *flat;
	config_setting_t	*m;
	config_t		 cfg;
	char			*text, *qtext, *line, *save = NULL;
	char			 err[512], buf[128];

	if (len > 16384)
		return 0;
	hosts = queries = NULL;
	hlen = qlen = 0;
	fuzz_split(&data, &len, "\n%%\n", &entry, &elen);
	if (!fuzz_split(&data, &len, "\n%%\n", &hosts, &hlen))
		hlen = 0;
	if (!fuzz_split(&data, &len, "\n%%\n", &queries, &qlen))
		qlen = 0;
	hf_path = fuzz_memfile(hosts, hlen);
	if ((text = malloc(elen + 256)) == NULL)
		abort();
	memcpy(text, LISTENERS "m = { name = \"acl\";\n",
	    sizeof(LISTENERS "m = { name = \"acl\";\n") - 1);
	i = sizeof(LISTENERS "m = { name = \"acl\";\n") - 1;
	memcpy(text + i, entry, elen);
	memcpy(text + i + elen, "\n};\n", 5);
	config_init(&cfg);
	if (memchr(entry, '@', elen) != NULL ||
	    config_read_string(&cfg, text) != CONFIG_TRUE ||
	    (m = config_lookup(&cfg, "m")) == NULL) {
		config_destroy(&cfg);
		free(text);
		return 0;
	}
	redirect_host_files(m);
	err[0] = '\0';
	ac = acl_conf_parse(m, err, sizeof(err), &where);
	if (ac == NULL) {
		FUZZ_CHECK(err[0] != '\0', "refused without a message");
		if (where != NULL)
			FUZZ_CHECK(config_setting_source_line(where) >= 1,
			    "error about a setting without a line: %s", err);
		config_destroy(&cfg);
		free(text);
		return 0;
	}
	FUZZ_CHECK(ac->nblocks > 0 || ac->nrules == 0, "no blocks");
	for (i = 0; i < ac->nrules; i++)
		FUZZ_CHECK(ac->block_of[i] < ac->nblocks &&
		    ac->blocks[ac->block_of[i]].first <= i &&
		    i < ac->blocks[ac->block_of[i]].end, "rule %zu's block", i);
	flat = flat_copy(ac);
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", fixed[i]);
		query(ac, flat, buf);
	}
	if (qlen > 0) {
		qtext = fuzz_dup(queries, qlen, true);
		for (line = strtok_r(qtext, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save))
			query(ac, flat, line);
		free(qtext);
	}
	flat_free(flat);
	acl_conf_free(ac);
	config_destroy(&cfg);
	free(text);
	return 0;
}
