/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Blocks: runs of one-condition rules of one kind, each with the union
 * of its rules' conditions, built in the master after parsing. A policy
 * of a hundred regex rules or a hundred CIDR rules then costs a request
 * one JIT call or one binary search, not a hundred (rules.c).
 */
#include "modules/acl/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
acl_re_combinable(const char *re)
{
	const char	*b;

	/* Inline options, comments, back-references and backtracking
	 * verbs ((*COMMIT) ends the whole match, not its alternative) could
	 * reach past their own alternative. */
	if (strchr(re, '#') != NULL || strstr(re, "(?") != NULL ||
	    strstr(re, "(*") != NULL)
		return false;
	for (b = strchr(re, '\\'); b != NULL; b = strchr(b + 2, '\\')) {
		if (b[1] == '\0')
			return false;
		if (strchr("QEgkK0123456789", b[1]) != NULL)
			return false;
	}
	return true;
}

pcre2_code *
acl_re_union(char *const *texts, size_t n)
{
	PCRE2_SIZE	 off;
	pcre2_code	*re;
	size_t		 i, total = 1, at = 0;
	char		*all;
	int		 code;

	for (i = 0; i < n; i++)
		total += strlen(texts[i]) + 5;
	if ((all = malloc(total)) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		at += (size_t)snprintf(all + at, total - at, "%s(?:%s)",
		    i > 0 ? "|" : "", texts[i]);
	re = pcre2_compile((PCRE2_SPTR)all, at, PCRE2_CASELESS, &code, &off,
	    NULL);
	free(all);
	if (re != NULL)
		(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	return re;
}

/* The one condition a rule has, when it is one a block can unite. */
static unsigned
acl_single_kind(const struct acl_rule *r)
{
	return r->has == ACL_C_HOST || r->has == ACL_C_SRC ||
	    r->has == ACL_C_DST ? r->has : 0;
}

/* Copies the names of <from> into <to>. */
static int
acl_hosts_merge(struct acl_hostset *to, const struct acl_hostset *from)
{
	char		 name[ACL_HOST_MAX + 2];
	const char	*why;
	size_t		 at, len;

	for (at = 0; at < from->used; at += 2 + len) {
		len = (unsigned char)from->arena[at + 1];
		name[0] = '.';
		memcpy(name + 1, from->arena + at + 2, len);
		if (from->arena[at] == 'S') {
			if (acl_hostset_add(to, name, len + 1, &why) < 0)
				return -1;
		} else if (acl_hostset_add(to, name + 1, len, &why) < 0)
			return -1;
	}
	return 0;
}

static int
acl_block_hosts(struct acl_block *b, const struct acl_conf *ac)
{
	const struct acl_rule	*r;
	char			**texts;
	size_t			 i, j, n = 0;
	bool			 combine = true;

	for (i = b->first; i < b->end; i++) {
		r = &ac->rules[i];
		if (acl_hosts_merge(&b->hosts, &r->hosts) < 0)
			return -1;
		for (j = 0; j < r->nre; j++)
			combine = combine && acl_re_combinable(r->re_text[j]);
		n += r->nre;
	}
	if (n == 0)
		return 0;
	b->re_opaque = true;
	if (!combine || (texts = calloc(n, sizeof(*texts))) == NULL)
		return 0;
	for (n = 0, i = b->first; i < b->end; i++)
		for (j = 0; j < ac->rules[i].nre; j++)
			texts[n++] = ac->rules[i].re_text[j];
	if ((b->re_any = acl_re_union(texts, n)) != NULL)
		b->re_opaque = false;
	free(texts);
	return 0;
}

static int
acl_node_cmp(const void *a, const void *b)
{
	const struct acl_v4node	*x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)			/* the wider one first */
		return x->hi > y->hi ? -1 : 1;
	return x->minrule < y->minrule ? -1 : x->minrule > y->minrule;
}

static int
acl_block_nets(struct acl_block *b, const struct acl_conf *ac)
{
	const struct net_prefix	*n;
	struct acl_v4node	*v;
	size_t			 i, j, cnt, total = 0, top;
	uint32_t		 a, mask;
	int32_t			*stack;

	for (i = b->first; i < b->end; i++)
		total += b->kind == ACL_C_SRC ? ac->rules[i].nsrc :
		    ac->rules[i].ndst;
	if ((b->v4 = calloc(total, sizeof(*b->v4))) == NULL ||
	    (b->v6 = calloc(total, sizeof(*b->v6))) == NULL ||
	    (stack = calloc(total + 1, sizeof(*stack))) == NULL)
		return -1;
	for (i = b->first; i < b->end; i++) {
		n = b->kind == ACL_C_SRC ? ac->rules[i].src : ac->rules[i].dst;
		cnt = b->kind == ACL_C_SRC ? ac->rules[i].nsrc :
		    ac->rules[i].ndst;
		for (j = 0; j < cnt; j++) {
			if (n[j].family == AF_INET6) {
				b->v6[b->nv6].net = n[j];
				b->v6[b->nv6++].rule = (uint32_t)i;
				continue;
			}
			a = (uint32_t)n[j].b[0] << 24 | (uint32_t)n[j].b[1] <<
			    16 | (uint32_t)n[j].b[2] << 8 | n[j].b[3];
			mask = n[j].prefix == 0 ? 0 :
			    ~(uint32_t)0 << (32 - n[j].prefix);
			v = &b->v4[b->nv4++];
			v->lo = a & mask;
			v->hi = a | ~mask;
			v->minrule = (uint32_t)i;
		}
	}
	qsort(b->v4, b->nv4, sizeof(*b->v4), acl_node_cmp);
	/* Parents by a stack of the networks that hold the current start. */
	for (i = top = 0; i < b->nv4; i++) {
		v = &b->v4[i];
		while (top > 0 && b->v4[stack[top - 1]].hi < v->lo)
			top--;
		v->parent = top > 0 ? stack[top - 1] : -1;
		if (v->parent >= 0 && b->v4[v->parent].minrule < v->minrule)
			v->minrule = b->v4[v->parent].minrule;
		stack[top++] = (int32_t)i;
	}
	free(stack);
	return 0;
}

int
acl_blocks_build(struct acl_conf *ac, char *err, size_t errlen)
{
	struct acl_block	*b;
	size_t			 i, end;
	unsigned		 kind;

	if ((ac->blocks = calloc(ac->nrules + 1, sizeof(*ac->blocks))) ==
	    NULL || (ac->block_of = calloc(ac->nrules + 1,
	    sizeof(*ac->block_of))) == NULL)
		goto nomem;
	for (i = 0; i < ac->nrules; i = end) {
		kind = acl_single_kind(&ac->rules[i]);
		for (end = i + 1; kind != 0 && end < ac->nrules &&
		    acl_single_kind(&ac->rules[end]) == kind; end++)
			;
		if (end - i < ACL_BLOCK_MIN) {
			kind = 0;
			end = i + 1;
		}
		b = &ac->blocks[ac->nblocks];
		b->first = i;
		b->end = end;
		b->kind = kind;
		if ((kind == ACL_C_HOST && acl_block_hosts(b, ac) < 0) ||
		    ((kind == ACL_C_SRC || kind == ACL_C_DST) &&
		    acl_block_nets(b, ac) < 0))
			goto nomem;
		for (; i < end; i++)
			ac->block_of[i] = ac->nblocks;
		ac->nblocks++;
	}
	return 0;
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
}

void
acl_blocks_free(struct acl_conf *ac)
{
	size_t	 i;

	for (i = 0; i < ac->nblocks; i++) {
		acl_hostset_free(&ac->blocks[i].hosts);
		pcre2_code_free(ac->blocks[i].re_any);
		free(ac->blocks[i].v4);
		free(ac->blocks[i].v6);
	}
	free(ac->blocks);
	free(ac->block_of);
	ac->blocks = NULL;
	ac->block_of = NULL;
	ac->nblocks = 0;
}
