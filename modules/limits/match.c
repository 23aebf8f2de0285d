/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which classes a request falls in, and which of a class's keys it uses:
 * pure functions of the request, run in the workers (and the tests).
 */
#include "modules/limits/limits.h"

#include <string.h>

bool
limits_match(const struct limits_class *c, const struct pt_req *req)
{
	struct net_addr	 a;
	size_t		 i;
	bool		 ok;

	if (c->protos != 0 && !(c->protos >> req->proto & 1))
		return false;
	if (c->has_user) {
		if (req->user.len == 0)
			return false;
		ok = c->user_any;
		for (i = 0; !ok && i < c->nusers; i++)
			ok = strlen(c->users[i]) == req->user.len &&
			    memcmp(c->users[i], req->user.ptr,
			    req->user.len) == 0;
		if (!ok)
			return false;
	}
	if (c->nlisteners > 0) {
		ok = false;
		for (i = 0; !ok && i < c->nlisteners; i++)
			ok = req->listener != NULL &&
			    strcmp(c->listeners[i], req->listener) == 0;
		if (!ok)
			return false;
	}
	if (c->nsrc > 0) {
		/* The address the client has (IPv4-mapped unmapped), not one
		 * its IPv6 address may carry: as acl's src and auth's
		 * no_auth_from judge it. */
		net_addr_from((const struct sockaddr *)&req->peer, &a);
		ok = false;
		for (i = 0; !ok && i < c->nsrc; i++)
			ok = net_prefix_has(&c->src[i], &a);
		if (!ok)
			return false;
	}
	return true;
}

int
limits_subject(const struct limits_class *c, const struct pt_req *req,
    unsigned char *buf, size_t buflen)
{
	struct net_addr	 a;
	unsigned	 bits, i, len;

	switch (c->key) {
	case LK_CLASS:
		return 0;
	case LK_USER:
		if (req->user.len == 0 || req->user.len > buflen)
			return -1;
		memcpy(buf, req->user.ptr, req->user.len);
		return (int)req->user.len;
	case LK_SOURCE:
	case LK_PREFIX:
		break;
	}
	/* ::ffff:a.b.c.d is the IPv4 address: one client, one key. */
	net_addr_from((const struct sockaddr *)&req->peer, &a);
	if (a.family == 0 || buflen < 17)
		return -1;
	len = a.family == AF_INET ? 4 : 16;
	buf[0] = (unsigned char)a.family;
	memcpy(buf + 1, a.b, len);
	if (c->key == LK_PREFIX) {
		bits = a.family == AF_INET ? c->prefix_v4 : c->prefix_v6;
		for (i = 0; i < len; i++) {
			if (bits >= 8)
				bits -= 8;
			else {
				buf[1 + i] &= (unsigned char)(0xff00 >> bits);
				bits = 0;
			}
		}
	}
	return (int)len + 1;
}
