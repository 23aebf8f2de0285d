/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host set. Names are hashed from their last byte to their first, so
 * one pass over a name gives the hash of every suffix ("a.b.c", "b.c",
 * "c") and a lookup costs one pass plus one probe per label. The table
 * keeps the upper half of each hash beside the offset, so a probe
 * compares names only when 32 bits of hash agree. The hash is FNV-1a,
 * then the finaliser of portico/hash.h with the entry's kind mixed in.
 */
#include "modules/acl/hostset.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <portico/hash.h>

enum { HS_EXACT = 'E', HS_SUFFIX = 'S' };

/* The final hash of a suffix whose running hash is <h>, for <kind>. */
static uint64_t
hs_final(uint64_t h, int kind)
{
	return pt_hash_mix64(h ^ ((uint64_t)kind << 56));
}

static uint64_t
hs_hash(const char *s, size_t len, int kind)
{
	uint64_t	 h = PT_HASH_FNV64_BASIS;

	while (len > 0)
		h = pt_hash_fnv64_byte(h, (unsigned char)s[--len]);
	return hs_final(h, kind);
}

int
acl_host_norm(const char *host, size_t len, char *out)
{
	size_t	 i;

	if (len > 0 && host[len - 1] == '.')
		len--;
	if (len > ACL_HOST_MAX)
		return -1;
	for (i = 0; i < len; i++) {
		unsigned char	 c = (unsigned char)host[i];

		out[i] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : (char)c;
	}
	out[len] = '\0';
	return (int)len;
}

/* Whether <s> is a host name: labels of letters, digits, '-' and '_'
 * (seen in real names), 1-63 bytes each, separated by single dots. */
static bool
hs_valid(const char *s, size_t len)
{
	size_t	 i, label = 0;

	if (len == 0 || len > ACL_HOST_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char	 c = (unsigned char)s[i];

		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_'))
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0;
}

static bool
hs_entry_eq(const struct acl_hostset *hs, uint64_t slot, const char *s,
    size_t len, int kind)
{
	const char	*e = hs->arena + (uint32_t)slot - 1;

	return e[0] == kind && (unsigned char)e[1] == len &&
	    memcmp(e + 2, s, len) == 0;
}

static bool
hs_find(const struct acl_hostset *hs, uint64_t h, const char *s,
    size_t len, int kind)
{
	uint64_t	 want = h >> 32, slot;
	size_t		 i;

	if (hs->slots == NULL)
		return false;
	for (i = want & hs->mask; (slot = hs->slots[i]) != 0;
	    i = (i + 1) & hs->mask)
		if (slot >> 32 == want && hs_entry_eq(hs, slot, s, len, kind))
			return true;
	return false;
}

static void
hs_place(uint64_t *slots, size_t mask, uint64_t slot)
{
	size_t	 i;

	for (i = (slot >> 32) & mask; slots[i] != 0; i = (i + 1) & mask)
		;
	slots[i] = slot;
}

static int
hs_grow(struct acl_hostset *hs)
{
	size_t		 n = hs->slots == NULL ? 64 : (hs->mask + 1) * 2, i;
	uint64_t	*slots;

	if ((slots = calloc(n, sizeof(*slots))) == NULL)
		return -1;
	if (hs->slots != NULL)
		for (i = 0; i <= hs->mask; i++)
			if (hs->slots[i] != 0)
				hs_place(slots, n - 1, hs->slots[i]);
	free(hs->slots);
	hs->slots = slots;
	hs->mask = n - 1;
	return 0;
}

int
acl_hostset_add(struct acl_hostset *hs, const char *s, size_t len,
    const char **why)
{
	char		 name[ACL_HOST_MAX + 2];
	int		 kind = HS_EXACT, n;
	uint64_t	 h;
	size_t		 need, cap;
	char		*a;

	if (len >= 2 && s[0] == '*' && s[1] == '.') {
		s++;
		len--;
	}
	if (len > 0 && s[0] == '.') {
		kind = HS_SUFFIX;
		s++;
		len--;
	}
	if ((n = acl_host_norm(s, len, name)) < 0 || !hs_valid(name,
	    (size_t)n)) {
		*why = "not a host name (letters, digits, '-', '_' in "
		    "dot-separated labels; \".name\" for a domain)";
		return -1;
	}
	h = hs_hash(name, (size_t)n, kind);
	if (hs_find(hs, h, name, (size_t)n, kind))
		return 1;
	need = hs->used + 2 + (size_t)n;
	if (need > UINT32_MAX - 1) {
		*why = "too many names";
		return -1;
	}
	if (need > hs->cap) {
		cap = hs->cap == 0 ? 4096 : hs->cap * 2;
		while (cap < need)
			cap *= 2;
		if ((a = realloc(hs->arena, cap)) == NULL)
			return -2;
		hs->arena = a;
		hs->cap = cap;
	}
	/* At most half full: probes stay short. */
	if ((hs->count + 1) * 2 > (hs->slots == NULL ? 0 : hs->mask + 1) &&
	    hs_grow(hs) < 0)
		return -2;
	hs->arena[hs->used] = (char)kind;
	hs->arena[hs->used + 1] = (char)n;
	memcpy(hs->arena + hs->used + 2, name, (size_t)n);
	hs_place(hs->slots, hs->mask, (h >> 32) << 32 | (hs->used + 1));
	hs->used = need;
	hs->count++;
	return 0;
}

bool
acl_hostset_has(const struct acl_hostset *hs, const char *host, size_t len)
{
	uint64_t	 h = PT_HASH_FNV64_BASIS;
	size_t		 i = len;

	if (hs->count == 0)
		return false;
	if (hs_find(hs, hs_hash(host, len, HS_EXACT), host, len, HS_EXACT))
		return true;
	/* Right to left: at each label's start, the suffix from there. */
	while (i > 0) {
		h = pt_hash_fnv64_byte(h, (unsigned char)host[--i]);
		if ((i == 0 || host[i - 1] == '.') &&
		    hs_find(hs, hs_final(h, HS_SUFFIX), host + i, len - i,
		    HS_SUFFIX))
			return true;
	}
	return false;
}

static bool
hs_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Whether p[0..len) is an IPv4 or IPv6 address (an IPv6 one may carry a
 * %zone, as hosts files write fe80::1%lo0). */
static bool
hs_is_address(const char *p, size_t len)
{
	char		 buf[INET6_ADDRSTRLEN + 16];
	unsigned char	 a[16];
	const char	*zone;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, p, len);
	buf[len] = '\0';
	if ((zone = strchr(buf, '%')) != NULL)
		buf[zone - buf] = '\0';
	return inet_pton(AF_INET, buf, a) == 1 ||
	    inet_pton(AF_INET6, buf, a) == 1;
}

/*
 * One line of a host_file: 0 (its entries or nothing), -1 bad, -2 memory.
 * A name alone, or a hosts(5) line, "address name [alias...]" as
 * blocklists in that format have them ("0.0.0.0 ads.example", and their
 * headers: "::1 localhost", "255.255.255.255 broadcasthost"): each name
 * of it counts; an address among them ("0.0.0.0 0.0.0.0") names no host
 * and is skipped.
 */
static int
hs_line(struct acl_hostset *hs, const char *p, const char *end,
    const char **why)
{
	const char	*hash, *word;
	bool		 hosts;

	if ((hash = memchr(p, '#', (size_t)(end - p))) != NULL)
		end = hash;
	while (p < end && hs_space(*p))
		p++;
	while (end > p && hs_space(end[-1]))
		end--;
	if (p == end)
		return 0;
	for (word = p; word < end && !hs_space(*word); word++)
		;
	if (word == end)
		return acl_hostset_add(hs, p, (size_t)(end - p), why) < 0 ?
		    (*why == NULL ? -2 : -1) : 0;
	hosts = hs_is_address(p, (size_t)(word - p));
	if (!hosts) {
		*why = "one name a line (or \"address name...\" as in a "
		    "hosts file)";
		return -1;
	}
	for (p = word; p < end; p = word) {
		while (p < end && hs_space(*p))
			p++;
		for (word = p; word < end && !hs_space(*word); word++)
			;
		if (hs_is_address(p, (size_t)(word - p)))
			continue;
		if (acl_hostset_add(hs, p, (size_t)(word - p), why) < 0)
			return *why == NULL ? -2 : -1;
	}
	return 0;
}

int
acl_hostset_load(struct acl_hostset *hs, const char *path, char *err,
    size_t errlen)
{
	struct stat	 st;
	const char	*p, *end, *nl, *why;
	char		*buf = NULL;
	size_t		 got = 0, line = 0;
	ssize_t		 r;
	int		 fd, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL)
		goto nomem;
	while (got < (size_t)st.st_size &&
	    (r = read(fd, buf + got, (size_t)st.st_size - got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto fail;
		}
		got += (size_t)r;
	}
	close(fd);
	fd = -1;
	for (p = buf, end = buf + got; p < end; p = nl + 1) {
		line++;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		why = NULL;
		if ((rc = hs_line(hs, p, nl, &why)) == -2)
			goto nomem;
		if (rc < 0) {
			snprintf(err, errlen, "%s:%zu: \"%.*s\": %s", path, line,
			    (int)(nl - p > 64 ? 64 : nl - p), p, why);
			goto fail;
		}
	}
	free(buf);
	/* The arena grew by doubling: give back its unused tail. */
	if (hs->used > 0 && hs->used < hs->cap &&
	    (buf = realloc(hs->arena, hs->used)) != NULL) {
		hs->arena = buf;
		hs->cap = hs->used;
	}
	return 0;
nomem:
	snprintf(err, errlen, "%s: out of memory", path);
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return -1;
}

void
acl_hostset_free(struct acl_hostset *hs)
{
	free(hs->arena);
	free(hs->slots);
	memset(hs, 0, sizeof(*hs));
}

size_t
acl_hostset_bytes(const struct acl_hostset *hs)
{
	return hs->cap + (hs->slots != NULL ? (hs->mask + 1) * 8 : 0);
}
