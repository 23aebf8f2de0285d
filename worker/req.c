/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What modules write into a transaction: the user (pt_req_set_user), the
 * decision label and the named tags. The core copies each value into one
 * block per connection, taken from a pool on the first set and given back
 * between HTTP requests and when the connection is reaped, so the common
 * connection, which no module names anything on, costs one pointer.
 * Header lookup is the protocol's (c_proto_header, set by http.c); this
 * file only checks the phase. The opening and the reset of a transaction,
 * for every protocol that carries several on one connection (HTTP,
 * status), are req.h's (inline), so that a new pt_req field is reset in
 * one place. Nothing here allocates from the heap or blocks.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "worker/req.h"
#include "worker/conn.h"
#include "worker/pool.h"
#include "worker/proxy_info.h"

struct req_tag {
	uint8_t		 name_len;	/* 0: slot free */
	uint8_t		 value_len;
	char		 name[15];
	char		 value[63];
};

struct req_names {
	uint16_t	 user_len, label_len;
	char		 user[PT_NAME_MAX];
	char		 label[PT_NAME_MAX];
	struct req_tag	 tags[PT_TAGS_MAX];
};

#define REQ_TAG_NAME_MAX	15
#define REQ_TAG_VALUE_MAX	63

static struct pool	 req_pool;

void
req_init(unsigned max_conns)
{
	pool_init(&req_pool, "request names", sizeof(struct req_names),
	    max_conns);
}

void
req_fini(void)
{
	pool_fini(&req_pool);
}

/* The connection's block, taken now if it has none; NULL when the pool
 * is exhausted (the value is then dropped, and logged once per call). */
static struct req_names *
req_names(struct pt_conn *c)
{
	struct req_names	*n = c->c_names;

	if (n != NULL)
		return n;
	if ((n = pool_get(&req_pool)) == NULL) {
		pt_clog(c, PT_LOG_WARNING, "no memory for a module's request "
		    "names: value dropped");
		return NULL;
	}
	n->user_len = n->label_len = 0;
	memset(n->tags, 0, sizeof(n->tags));
	c->c_names = n;
	return n;
}

static bool
req_points_into(const struct pt_str *s, const struct req_names *n)
{
	return s->ptr != NULL && (const char *)s->ptr >= (const char *)n &&
	    (const char *)s->ptr < (const char *)(n + 1);
}

void
req_names_clear(struct pt_conn *c)
{
	struct req_names	*n = c->c_names;

	if (n == NULL)
		return;
	if (req_points_into(&c->c_req.user, n))
		memset(&c->c_req.user, 0, sizeof(c->c_req.user));
	if (req_points_into(&c->c_req.label, n))
		memset(&c->c_req.label, 0, sizeof(c->c_req.label));
	pool_put(&req_pool, n);
	c->c_names = NULL;
}

void
req_user_reset(struct pt_conn *c)
{
	struct req_names	*n = c->c_conn_names;

	c->c_req.user.ptr = n != NULL ? n->user : NULL;
	c->c_req.user.len = n != NULL ? n->user_len : 0;
}

void
req_names_free(struct pt_conn *c)
{
	req_names_clear(c);
	if (c->c_conn_names != NULL) {
		pool_put(&req_pool, c->c_conn_names);
		c->c_conn_names = NULL;
	}
}

/*
 * Before any phase past ACCEPT has run (a transport's handshake, an
 * ACCEPT hook) the user is the connection's: every transaction on it
 * starts with it, HTTP keep-alive requests included. From AUTH on it is
 * the current transaction's.
 */
void
pt_req_set_user(struct pt_conn *c, const char *user, size_t len)
{
	struct req_names	*n;

	if (len > PT_NAME_MAX)
		len = PT_NAME_MAX;
	if (c->c_phase == PT_PHASE_ACCEPT) {
		if ((n = c->c_conn_names) == NULL) {
			if ((n = pool_get(&req_pool)) == NULL) {
				pt_clog(c, PT_LOG_WARNING, "no memory for a "
				    "module's user: value dropped");
				return;
			}
			memset(n, 0, sizeof(*n));
			c->c_conn_names = n;
		}
	} else if ((n = req_names(c)) == NULL) {
		return;
	}
	memmove(n->user, user, len);
	n->user_len = (uint16_t)len;
	c->c_req.user.ptr = n->user;
	c->c_req.user.len = len;
}

void
pt_req_set_label(struct pt_conn *c, const char *label, size_t len)
{
	struct req_names	*n;

	if (len > PT_NAME_MAX)
		len = PT_NAME_MAX;
	if ((n = req_names(c)) == NULL)
		return;
	memmove(n->label, label, len);
	n->label_len = (uint16_t)len;
	c->c_req.label.ptr = n->label;
	c->c_req.label.len = len;
}

static struct req_tag *
req_tag_find(struct req_names *n, const char *name, size_t nlen)
{
	int	 i;

	for (i = 0; i < PT_TAGS_MAX; i++)
		if (n->tags[i].name_len == nlen &&
		    memcmp(n->tags[i].name, name, nlen) == 0)
			return &n->tags[i];
	return NULL;
}

int
pt_req_set_tag(struct pt_conn *c, const char *name, const char *value,
    size_t len)
{
	struct req_names	*n;
	struct req_tag		*t;
	size_t			 nlen;

	if (name == NULL || (nlen = strlen(name)) == 0 ||
	    nlen > REQ_TAG_NAME_MAX || len > REQ_TAG_VALUE_MAX ||
	    (value == NULL && len > 0))
		return -EINVAL;
	/* Removing a tag never takes a block. */
	if (len == 0 && c->c_names == NULL)
		return 0;
	if ((n = req_names(c)) == NULL)
		return -ENOSPC;
	if ((t = req_tag_find(n, name, nlen)) == NULL) {
		if (len == 0)
			return 0;
		if ((t = req_tag_find(n, "", 0)) == NULL)
			return -ENOSPC;
		memcpy(t->name, name, nlen);
		t->name_len = (uint8_t)nlen;
	}
	if (len == 0) {
		t->name_len = t->value_len = 0;
		return 0;
	}
	memmove(t->value, value, len);
	t->value_len = (uint8_t)len;
	return 0;
}

/* The read-only tags of a PROXY header's TLVs (module.h, ABI 1.6). */
static bool
req_proxy_tag(const struct pt_conn *c, const char *name,
    struct pt_str *value_out)
{
	const struct proxy_info	*pi = c->c_proxy;

	if (pi == NULL || name == NULL)
		return false;
	if (strcmp(name, "proxy_authority") == 0 && pi->authority_len > 0)
		*value_out = (struct pt_str){ pi->authority,
		    pi->authority_len };
	else if (strcmp(name, "proxy_unique_id") == 0 &&
	    pi->unique_id_len > 0)
		*value_out = (struct pt_str){ pi->unique_id,
		    pi->unique_id_len };
	else
		return false;
	return true;
}

bool
pt_req_tag(struct pt_conn *c, const char *name, struct pt_str *value_out)
{
	struct req_tag	*t;
	size_t		 nlen;

	if (req_proxy_tag(c, name, value_out))
		return true;
	if (c->c_names == NULL || name == NULL ||
	    (nlen = strlen(name)) == 0 || nlen > REQ_TAG_NAME_MAX ||
	    (t = req_tag_find(c->c_names, name, nlen)) == NULL)
		return false;
	value_out->ptr = t->value;
	value_out->len = t->value_len;
	return true;
}

bool
pt_req_header(struct pt_conn *c, const char *name, struct pt_str *value_out)
{
	/* After DIAL, only what PT_MODF_LOG_HEADERS keeps: User-Agent and
	 * Referer, until the request's LOG (a closing connection's too). */
	bool	 kept_only = c->c_phase == PT_PHASE_ESTABLISHED ||
		    c->c_phase == PT_PHASE_LOG;

	if (name == NULL || (!kept_only && (c->c_phase < PT_PHASE_AUTH ||
	    c->c_phase > PT_PHASE_DIAL || c->c_state == CONN_CLOSED)))
		return false;
	return c->c_proto_header != NULL &&
	    c->c_proto_header(c, name, kept_only, value_out);
}
