/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hosts file, read once when a worker starts (and so again at every
 * reload, which starts new workers), like /etc/resolv.conf. c-ares could
 * read it itself, but it opens the file on every lookup that misses the
 * cache: a file read on the loop, and two heap allocations (glibc's FILE
 * and its buffer) per lookup that no allocator hook can reach. So the
 * worker keeps the file in a hash table and c-ares asks DNS only.
 *
 * A line is an address and names (aliases included), '#' starts a
 * comment; lines whose address does not parse are skipped, as c-ares
 * and glibc skip them. A name gets the addresses of every line naming it,
 * in file order, duplicates dropped, at most DNS_MAX_ADDRS; they are
 * handed out IPv6 and IPv4 alternating, the family of the first one
 * leading, as dns.c orders DNS answers. Unlike c-ares, hosts answers are
 * not sorted by RFC 6724: the file's order is the operator's.
 *
 * All allocation happens in dns_hosts_load; lookups allocate nothing.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "portico/hash.h"
#include "worker/dns_hosts.h"

#define DNS_HOSTS_NAME_MAX	253
#define DNS_HOSTS_NIL		PT_CHAIN_NIL

struct dns_hosts_entry {
	uint32_t	 hash;
	uint32_t	 next;		/* bucket chain */
	char		*name;
	uint8_t		 namelen;
	uint8_t		 naddrs;
	uint8_t		 family[DNS_MAX_ADDRS];	/* 4 or 6 */
	uint8_t		 addr[DNS_MAX_ADDRS][16];
};

static struct dns_hosts_entry	*dns_hosts;
static unsigned			 dns_hosts_n;
static unsigned			 dns_hosts_cap;
static uint32_t			*dns_hosts_buckets;
static uint32_t			 dns_hosts_mask;

uint32_t
dns_name_hash(const char *s, size_t len)
{
	uint32_t	 h = 2166136261u;	/* FNV-1a */
	size_t		 i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static struct pt_chain
dns_hosts_chain(void)
{
	return PT_CHAIN(dns_hosts, next, dns_hosts_buckets, dns_hosts_mask);
}

static uint32_t
dns_hosts_lookup(const char *key, size_t len, uint32_t hash)
{
	const struct dns_hosts_entry	*e;
	uint32_t			 i;

	if (dns_hosts_buckets == NULL)
		return DNS_HOSTS_NIL;
	for (i = pt_chain_first(dns_hosts_chain(), hash); i != DNS_HOSTS_NIL;
	    i = pt_chain_next(dns_hosts_chain(), i)) {
		e = &dns_hosts[i];
		if (e->hash == hash && e->namelen == len &&
		    memcmp(e->name, key, len) == 0)
			return i;
	}
	return DNS_HOSTS_NIL;
}

/* Room for one more entry; the buckets (twice the capacity, a power of
 * two) are rebuilt when the array grows. */
static int
dns_hosts_grow(void)
{
	struct dns_hosts_entry	*grown;
	uint32_t		*b, nb;
	unsigned		 cap, i;

	if (dns_hosts_n < dns_hosts_cap)
		return 0;
	cap = dns_hosts_cap != 0 ? dns_hosts_cap * 2 : 64;
	if ((grown = realloc(dns_hosts, cap * sizeof(*grown))) == NULL)
		return -ENOMEM;
	dns_hosts = grown;
	nb = (uint32_t)cap * 2;
	if ((b = malloc(nb * sizeof(*b))) == NULL)
		return -ENOMEM;
	free(dns_hosts_buckets);
	dns_hosts_buckets = b;
	dns_hosts_mask = nb - 1;
	dns_hosts_cap = cap;
	pt_chain_clear(dns_hosts_chain());
	for (i = 0; i < dns_hosts_n; i++)
		pt_chain_add(dns_hosts_chain(), i, dns_hosts[i].hash);
	return 0;
}

/* Adds <addr> (4 or 16 bytes of <family>) to <name>'s entry. */
static int
dns_hosts_add(const char *name, size_t len, int family, const uint8_t *addr)
{
	struct dns_hosts_entry	*e;
	uint32_t		 hash = dns_name_hash(name, len), i;
	uint8_t			 f = family == AF_INET ? 4 : 6;
	size_t			 alen = f == 4 ? 4 : 16;
	int			 k, rc;

	if ((i = dns_hosts_lookup(name, len, hash)) == DNS_HOSTS_NIL) {
		if ((rc = dns_hosts_grow()) < 0)
			return rc;
		e = &dns_hosts[dns_hosts_n];
		memset(e, 0, sizeof(*e));
		if ((e->name = malloc(len + 1)) == NULL)
			return -ENOMEM;
		memcpy(e->name, name, len + 1);
		e->namelen = (uint8_t)len;
		e->hash = hash;
		i = dns_hosts_n++;
		pt_chain_add(dns_hosts_chain(), i, hash);
	}
	e = &dns_hosts[i];
	for (k = 0; k < e->naddrs; k++)
		if (e->family[k] == f && memcmp(e->addr[k], addr, alen) == 0)
			return 0;
	if (e->naddrs == DNS_MAX_ADDRS)
		return 0;
	e->family[e->naddrs] = f;
	memcpy(e->addr[e->naddrs], addr, alen);
	e->naddrs++;
	return 0;
}

/* One line, cut at '#': an address, then names. */
static int
dns_hosts_line(char *line)
{
	static const char	 sep[] = " \t\r\n";
	uint8_t			 addr[16];
	char			*tok, *save, *p;
	size_t			 len;
	int			 family, rc;

	if ((p = strchr(line, '#')) != NULL)
		*p = '\0';
	if ((tok = strtok_r(line, sep, &save)) == NULL)
		return 0;
	if (inet_pton(AF_INET, tok, addr) == 1)
		family = AF_INET;
	else if (inet_pton(AF_INET6, tok, addr) == 1)
		family = AF_INET6;
	else
		return 0;
	while ((tok = strtok_r(NULL, sep, &save)) != NULL) {
		len = strlen(tok);
		if (len > 0 && tok[len - 1] == '.')
			tok[--len] = '\0';
		if (len == 0 || len > DNS_HOSTS_NAME_MAX)
			continue;
		for (p = tok; *p != '\0'; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p + 'a' - 'A');
		if ((rc = dns_hosts_add(tok, len, family, addr)) < 0)
			return rc;
	}
	return 0;
}

int
dns_hosts_load(const char *path)
{
	FILE	*f;
	char	*line = NULL;
	size_t	 cap = 0;
	int	 rc = 0;

	dns_hosts_free();
	/* No file, no names: DNS still answers. */
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (rc == 0 && getline(&line, &cap, f) >= 0)
		rc = dns_hosts_line(line);
	free(line);
	fclose(f);
	if (rc < 0)
		dns_hosts_free();
	return rc;
}

void
dns_hosts_free(void)
{
	unsigned	 i;

	for (i = 0; i < dns_hosts_n; i++)
		free(dns_hosts[i].name);
	free(dns_hosts);
	free(dns_hosts_buckets);
	dns_hosts = NULL;
	dns_hosts_buckets = NULL;
	dns_hosts_n = dns_hosts_cap = 0;
	dns_hosts_mask = 0;
}

static void
dns_hosts_set(struct pt_addr *a, uint8_t family, const uint8_t *addr)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)&a->sa;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&a->sa;

	memset(a, 0, sizeof(*a));
	if (family == 4) {
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, addr, 4);
		a->len = sizeof(*sin);
	} else {
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, addr, 16);
		a->len = sizeof(*sin6);
	}
}

bool
dns_hosts_find(const char *key, size_t len, struct dns_result *res)
{
	const struct dns_hosts_entry	*e;
	uint32_t			 i;
	uint8_t				 fam[2];
	int				 next[2] = { 0, 0 }, turn = 0, k;

	if (len > DNS_HOSTS_NAME_MAX ||
	    (i = dns_hosts_lookup(key, len, dns_name_hash(key, len))) ==
	    DNS_HOSTS_NIL)
		return false;
	e = &dns_hosts[i];
	fam[0] = e->family[0];
	fam[1] = fam[0] == 4 ? 6 : 4;
	res->naddrs = 0;
	/* Alternate: next[t] is where to look for family fam[t]'s next. */
	while (res->naddrs < e->naddrs) {
		for (k = next[turn]; k < e->naddrs && e->family[k] != fam[turn];
		    k++)
			;
		if (k == e->naddrs) {
			next[turn] = k;
			turn ^= 1;
			continue;
		}
		dns_hosts_set(&res->addrs[res->naddrs++], fam[turn],
		    e->addr[k]);
		next[turn] = k + 1;
		turn ^= 1;
	}
	return true;
}

unsigned
dns_hosts_count(void)
{
	return dns_hosts_n;
}
