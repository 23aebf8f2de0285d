/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The configuration's `resolver` group: the servers c-ares asks (numeric,
 * checked here) and the cache's sizes and TTL bounds. Part of conf.c's
 * reading (master/conf_ctx.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/conf.h"
#include "master/conf_ctx.h"
#include "master/upstream_tls.h"
#include "common/parent.h"
#include "common/log.h"
#include "worker/dns.h"

static const char *const conf_resolver_keys[] = {
	"servers", "cache_size", "min_ttl", "max_ttl", "negative_ttl",
	"timeout", NULL
};

/*
 * One entry of resolver.servers: "IPv4", "IPv4:port", "[IPv6]" or
 * "[IPv6]:port", numeric, port 1-65535 (53 when absent). Brackets are
 * required around IPv6, as for listeners: "::1:53" would otherwise be a
 * valid address that is not what was meant. 0, or -1 with <errstr>.
 */
static int
conf_server_parse(const char *s, size_t len, struct pt_addr *a,
    const char **errstr)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)&a->sa;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&a->sa;
	const char		*end = s + len, *port = NULL, *close;
	const char		*why = "not a numeric IPv4 or [IPv6] address";
	char			 host[INET6_ADDRSTRLEN];
	size_t			 hostlen;
	bool			 bracket = s[0] == '[';
	long			 p = 53;

	memset(a, 0, sizeof(*a));
	if (bracket) {
		if ((close = memchr(s, ']', len)) == NULL) {
			why = "\"[\" without \"]\"";
			goto bad;
		}
		if (close + 1 < end && close[1] != ':') {
			why = "expected \":port\" after \"]\"";
			goto bad;
		}
		if (close + 1 < end)
			port = close + 2;
		s++;
		hostlen = (size_t)(close - s);
	} else {
		close = memchr(s, ':', len);
		if (close != NULL && memchr(close + 1, ':', (size_t)(end -
		    close - 1)) != NULL) {
			why = "IPv6 address must be in brackets: \"[addr]\" or "
			    "\"[addr]:port\"";
			goto bad;
		}
		if (close != NULL)
			port = close + 1;
		hostlen = close != NULL ? (size_t)(close - s) : len;
	}
	if (hostlen == 0 || hostlen >= sizeof(host))
		goto bad;
	memcpy(host, s, hostlen);
	host[hostlen] = '\0';
	if (port != NULL) {
		why = "missing or invalid port";
		if (port == end || strspn(port, "0123456789") < (size_t)(end -
		    port))
			goto bad;
		/* Digits only up to <end>, so strtol stops there; more than
		 * five significant ones is out of range before it could
		 * overflow. */
		while (end - port > 1 && port[0] == '0')
			port++;
		p = end - port > 5 ? 0 : strtol(port, NULL, 10);
		why = "port out of range (1-65535)";
		if (p < 1 || p > 65535)
			goto bad;
		why = "not a numeric IPv4 or [IPv6] address";
	}
	if (!bracket && inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)p);
		a->len = sizeof(*sin);
		return 0;
	}
	if (bracket && inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)p);
		a->len = sizeof(*sin6);
		return 0;
	}
	if (bracket && inet_pton(AF_INET, host, &sin->sin_addr) == 1)
		why = "brackets around an IPv4 address";
bad:
	*errstr = why;
	return -1;
}

/*
 * resolver.servers, checked here so that a typo fails -t and a reload
 * instead of every worker at start-up. Each entry is parsed by the rules
 * above (which give a precise message), then the list is rewritten in
 * the one form c-ares 1.18 reads without ambiguity ("a.b.c.d:port",
 * "[v6]:port"), handed to c-ares' own parser through dns_servers_probe,
 * the very call each worker makes, and what c-ares read is compared with
 * what we read. c-ares alone would not do: it takes "1.2.3" as 1.2.3.255
 * and "1.2.3.4:99999" as port 34463, and refuses "[::1]". Replaces
 * r->servers with the rewritten list, which is what workers get.
 */
static int
conf_servers(struct conf_ctx *cc, const config_setting_t *g,
    struct conf_resolver *r)
{
	config_setting_t	*s = config_setting_get_member(g, "servers");
	struct pt_addr		 mine[CONF_MAX_DNS_SERVERS];
	struct pt_addr		 theirs[CONF_MAX_DNS_SERVERS];
	const char		*p = r->servers, *why;
	char			*csv, *w, host[INET6_ADDRSTRLEN];
	size_t			 n, lead, size;
	int			 count = 0, got, i;

	while (*p != '\0') {
		n = strcspn(p, ",");
		/* Spaces around an entry are allowed, not inside it. */
		lead = strspn(p, " \t");
		while (n > lead && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n <= lead)
			return conf_err(cc, s, "entry %d is empty", count + 1);
		if (count == CONF_MAX_DNS_SERVERS)
			return conf_err(cc, s, "more than %d servers",
			    CONF_MAX_DNS_SERVERS);
		if (conf_server_parse(p + lead, n - lead, &mine[count],
		    &why) < 0)
			return conf_err(cc, s, "entry %d \"%.*s\": %s",
			    count + 1, (int)(n - lead), p + lead, why);
		count++;
		p += n;
		p += strspn(p, " \t");
		if (*p == ',' && *++p == '\0')
			return conf_err(cc, s, "entry %d is empty", count + 1);
	}
	/* "[v6]:65535," at most per entry. */
	size = (size_t)count * (INET6_ADDRSTRLEN + 9) + 1;
	if ((csv = malloc(size)) == NULL)
		return conf_err(cc, NULL, "out of memory");
	w = csv;
	for (i = 0; i < count; i++) {
		const struct sockaddr_in6 *sin6 = (const void *)&mine[i].sa;
		const struct sockaddr_in *sin = (const void *)&mine[i].sa;

		if (mine[i].sa.ss_family == AF_INET6) {
			inet_ntop(AF_INET6, &sin6->sin6_addr, host,
			    sizeof(host));
			w += snprintf(w, size - (size_t)(w - csv),
			    "%s[%s]:%u", i ? "," : "", host,
			    ntohs(sin6->sin6_port));
		} else {
			inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
			w += snprintf(w, size - (size_t)(w - csv),
			    "%s%s:%u", i ? "," : "", host,
			    ntohs(sin->sin_port));
		}
	}
	free(r->servers);
	r->servers = csv;
	if (dns_servers_probe(csv, theirs, CONF_MAX_DNS_SERVERS, &got,
	    &why) < 0)
		return conf_err(cc, s, "c-ares refuses \"%s\": %s", csv, why);
	for (i = 0; i < count && got == count; i++)
		if (!sockaddr_equal(&mine[i], &theirs[i]))
			break;
	if (got != count || i < count)
		return conf_err(cc, s, "c-ares reads \"%s\" otherwise (entry "
		    "%d)", csv, i + 1);
	return 0;
}

int
conf_resolver(struct conf_ctx *cc, const config_setting_t *root)
{
	struct conf_resolver	*r = &cc->conf->resolver;
	config_setting_t	*g;
	const char		*errstr;
	long long		 v;
	int			 n;

	if (conf_group(cc, root, "resolver", conf_resolver_keys, &g) < 0 ||
	    conf_str(cc, g, "servers", NULL, &r->servers) < 0 ||
	    (r->servers != NULL && conf_servers(cc, g, r) < 0))
		return -1;
	/* Without servers each worker reads /etc/resolv.conf through
	 * c-ares: if that fails here it would fail there too. */
	if (r->servers == NULL && dns_servers_probe(NULL, NULL, 0, &n,
	    &errstr) < 0)
		return conf_err(cc, g, "no \"servers\", and c-ares cannot "
		    "read the system's: %s", errstr);
	if (conf_int(cc, g, "cache_size", 0, 1000000, 10000, &v) < 0)
		return -1;
	r->cache_size = (unsigned)v;
	if (conf_int(cc, g, "min_ttl", 0, 86400, 1, &v) < 0)
		return -1;
	r->min_ttl = (unsigned)v;
	if (conf_int(cc, g, "max_ttl", 0, 604800, 3600, &v) < 0)
		return -1;
	r->max_ttl = (unsigned)v;
	/* max_ttl = 0 alone means no caching: the default min_ttl of 1
	 * gives way (one written out is still held to). */
	if (r->max_ttl == 0 && config_setting_get_member(g, "min_ttl") == NULL)
		r->min_ttl = 0;
	if (r->max_ttl < r->min_ttl)
		return conf_err(cc, config_setting_get_member(g, "max_ttl"),
		    "less than min_ttl (%u)", r->min_ttl);
	if (conf_int(cc, g, "negative_ttl", 0, 86400, 5, &v) < 0)
		return -1;
	r->negative_ttl = (unsigned)v;
	if (conf_int(cc, g, "timeout", 1, 60, 5, &v) < 0)
		return -1;
	r->timeout_ms = (unsigned)v * 1000;
	return 0;
}
