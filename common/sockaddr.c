/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address text <-> struct sockaddr. Listener addresses are numeric only, so
 * that `portico -t` and every reload mean the same thing whatever DNS says;
 * forwarding targets may be names, resolved once in the master.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sockaddr.h"

int
sockaddr_split(const char *text, char *host_out, size_t hostsz,
    uint16_t *port_out, const char **errstr)
{
	const char	*colon, *host = text, *end;
	char		*pend;
	size_t		 hostlen;
	long		 port;

	if (text[0] == '[') {
		end = strchr(text, ']');
		if (end == NULL || end[1] != ':') {
			*errstr = "expected \"[address]:port\"";
			return -1;
		}
		host = text + 1;
		hostlen = (size_t)(end - host);
		colon = end + 1;
	} else {
		colon = strrchr(text, ':');
		if (colon == NULL) {
			*errstr = "expected \"host:port\"";
			return -1;
		}
		if (memchr(text, ':', (size_t)(colon - text)) != NULL) {
			*errstr = "IPv6 address must be in brackets: \"[addr]:port\"";
			return -1;
		}
		hostlen = (size_t)(colon - text);
	}
	if (hostlen == 0) {
		*errstr = "missing host";
		return -1;
	}
	if (hostlen >= hostsz) {
		*errstr = "host too long";
		return -1;
	}
	if (colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
		*errstr = "missing or invalid port";
		return -1;
	}
	/* Digits only, so strtol cannot stop early; it saturates on
	 * overflow, which the range check then refuses. */
	port = strtol(colon + 1, &pend, 10);
	if (port < 1 || port > 65535) {
		*errstr = "port out of range (1-65535)";
		return -1;
	}
	memcpy(host_out, host, hostlen);
	host_out[hostlen] = '\0';
	*port_out = (uint16_t)port;
	return 0;
}

static int
sockaddr_from_numeric(const char *host, uint16_t port, struct pt_addr *out)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)&out->sa;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&out->sa;

	memset(out, 0, sizeof(*out));
	if (strcmp(host, "*") == 0)
		host = "0.0.0.0";
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		out->len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		out->len = sizeof(*sin6);
		return 0;
	}
	return -1;
}

int
sockaddr_parse(const char *text, struct pt_addr *out, const char **errstr)
{
	char		 host[256];
	uint16_t	 port;

	if (sockaddr_split(text, host, sizeof(host), &port, errstr) < 0)
		return -1;
	if (sockaddr_from_numeric(host, port, out) < 0) {
		*errstr = "not a numeric IPv4 or [IPv6] address";
		return -1;
	}
	/* Brackets are for IPv6 only: "[1.2.3.4]:80" is a typo. */
	if ((text[0] == '[') != (out->sa.ss_family == AF_INET6)) {
		*errstr = text[0] == '[' ? "brackets around an IPv4 address" :
		    "IPv6 address must be in brackets";
		return -1;
	}
	return 0;
}

int
sockaddr_resolve(const char *text, struct pt_addr *out, const char **errstr)
{
	struct addrinfo	 hints, *res;
	char		 host[256];
	uint16_t	 port;
	int		 rc;

	if (sockaddr_split(text, host, sizeof(host), &port, errstr) < 0)
		return -1;
	if (sockaddr_from_numeric(host, port, out) == 0)
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_ADDRCONFIG;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0) {
		*errstr = gai_strerror(rc);
		return -1;
	}
	memset(out, 0, sizeof(*out));
	memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
	out->len = res->ai_addrlen;
	((struct sockaddr_in *)&out->sa)->sin_port = htons(port);
	freeaddrinfo(res);
	return 0;
}

char *
sockaddr_fmt(const struct sockaddr *sa, char *buf, size_t bufsz)
{
	char	 host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(buf, bufsz, "%s:%u", host, ntohs(sin->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(buf, bufsz, "[%s]:%u", host, ntohs(sin6->sin6_port));
	} else if (sa->sa_family == AF_UNIX) {
		snprintf(buf, bufsz, "unix");
	} else {
		snprintf(buf, bufsz, "?");
	}
	return buf;
}

uint16_t
sockaddr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	return 0;
}

void
sockaddr_unmap(const struct sockaddr *in, struct pt_addr *out)
{
	const struct sockaddr_in6	*sin6 = (const void *)in;
	struct sockaddr_in		*sin = (void *)&out->sa;

	memset(&out->sa, 0, sizeof(out->sa));
	if (in->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
		sin->sin_family = AF_INET;
		sin->sin_port = sin6->sin6_port;
		memcpy(&sin->sin_addr, sin6->sin6_addr.s6_addr + 12, 4);
		out->len = sizeof(*sin);
		return;
	}
	out->len = in->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    in->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(out->sa);
	memcpy(&out->sa, in, out->len);
}

bool
sockaddr_equal(const struct pt_addr *a, const struct pt_addr *b)
{
	return a->len == b->len && memcmp(&a->sa, &b->sa, a->len) == 0;
}
