/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/dns.c against a real loop and a real DNS server: a UDP socket on
 * 127.0.0.1 (ephemeral port) that this file serves from its own loop_io
 * callback, so resolver and server take turns in one thread, with no fork
 * and no sleep. The server answers A and AAAA from a table of chosen
 * addresses and TTLs, NXDOMAIN for names it does not know, SERVFAIL or
 * silence for names marked so, and counts every question it gets.
 *
 * The loop clock is driven from here: real monotonic time plus an offset
 * that the TTL tests push forward, so cache expiry costs no waiting. Only
 * the timeout test waits, in real time, and every wait is bounded (3 s,
 * stretched by check_bound_ms for a slow machine).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "common/sockaddr.h"
#include "worker/dns.h"
#include "worker/dns_hosts.h"
#include "worker/dns_mem.h"
#include "worker/loop.h"
#include "t/unit/check.h"
#include "t/unit/suites.h"

#define TD_WAIT_MS	3000
#define TD_TICK_MS	20
#define TS_TYPE_A	1
#define TS_TYPE_AAAA	28
#define TS_MAX_ADDRS	8

/* ---- the test server ------------------------------------------------- */

enum ts_mode {
	TS_ANSWER = 0,
	TS_SILENT,		/* never answers: the timeout test */
	TS_SERVFAIL
};

struct ts_name {
	const char	*name;
	enum ts_mode	 mode;
	uint32_t	 ttl;
	const char	*v4[TS_MAX_ADDRS];	/* NULL-ended, canonical text */
	const char	*v6[TS_MAX_ADDRS];
	unsigned	 nq_a;			/* questions seen */
	unsigned	 nq_aaaa;
};

static struct ts_name	 ts_zone[] = {
	{ "dual.portico.test", TS_ANSWER, 300,
	    { "192.0.2.1", "192.0.2.2", "192.0.2.3" },
	    { "2001:db8::1", "2001:db8::2" }, 0, 0 },
	{ "many.portico.test", TS_ANSWER, 300,
	    { "198.51.100.1", "198.51.100.2", "198.51.100.3",
	      "198.51.100.4", "198.51.100.5", "198.51.100.6" },
	    { "2001:db8:1::1", "2001:db8:1::2", "2001:db8:1::3",
	      "2001:db8:1::4", "2001:db8:1::5", "2001:db8:1::6" }, 0, 0 },
	{ "v4only.portico.test", TS_ANSWER, 300, { "192.0.2.10" }, { NULL },
	    0, 0 },
	{ "v6only.portico.test", TS_ANSWER, 300, { NULL }, { "2001:db8::10" },
	    0, 0 },
	{ "empty.portico.test", TS_ANSWER, 300, { NULL }, { NULL }, 0, 0 },
	{ "short.portico.test", TS_ANSWER, 5, { "192.0.2.20" }, { NULL },
	    0, 0 },
	{ "tiny.portico.test", TS_ANSWER, 1, { "192.0.2.21" }, { NULL },
	    0, 0 },
	{ "long.portico.test", TS_ANSWER, 86400, { "192.0.2.22" }, { NULL },
	    0, 0 },
	{ "silent.portico.test", TS_SILENT, 300, { "192.0.2.30" }, { NULL },
	    0, 0 },
	{ "broken.portico.test", TS_SERVFAIL, 300, { NULL }, { NULL }, 0, 0 },
	{ "c0.portico.test", TS_ANSWER, 300, { "203.0.113.0" }, { NULL },
	    0, 0 },
	{ "c1.portico.test", TS_ANSWER, 300, { "203.0.113.1" }, { NULL },
	    0, 0 },
	{ "c2.portico.test", TS_ANSWER, 300, { "203.0.113.2" }, { NULL },
	    0, 0 },
	{ "c3.portico.test", TS_ANSWER, 300, { "203.0.113.3" }, { NULL },
	    0, 0 },
	{ "c4.portico.test", TS_ANSWER, 300, { "203.0.113.4" }, { NULL },
	    0, 0 },
};

static struct loop_io	 ts_io;
static char		 ts_servers[64];
static unsigned		 ts_total;	/* questions, any name */
static unsigned		 ts_unknown;	/* questions for names not above */

static struct ts_name *
ts_find(const char *name)
{
	size_t	 i;

	for (i = 0; i < sizeof(ts_zone) / sizeof(ts_zone[0]); i++)
		if (strcasecmp(ts_zone[i].name, name) == 0)
			return &ts_zone[i];
	return NULL;
}

/*
 * Forgets the counts, and reads without answering whatever an earlier
 * test's resolver sent and never waited for, so it is not counted here.
 */
static void
ts_reset(void)
{
	uint8_t	 q[512];
	size_t	 i;

	while (recv(ts_io.fd, q, sizeof(q), 0) >= 0)
		;
	for (i = 0; i < sizeof(ts_zone) / sizeof(ts_zone[0]); i++)
		ts_zone[i].nq_a = ts_zone[i].nq_aaaa = 0;
	ts_total = ts_unknown = 0;
}

static size_t
ts_put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return 2;
}

/* Appends one answer record per address of <list> to <out> at <len>. */
static size_t
ts_put_answers(uint8_t *out, size_t len, unsigned type, uint32_t ttl,
    const char *const *list, unsigned *count)
{
	uint8_t	 addr[16];
	size_t	 alen = type == TS_TYPE_A ? 4 : 16;
	int	 i;

	for (i = 0; i < TS_MAX_ADDRS && list[i] != NULL; i++) {
		if (inet_pton(type == TS_TYPE_A ? AF_INET : AF_INET6, list[i],
		    addr) != 1)
			continue;
		out[len++] = 0xc0;	/* name: pointer to the question's */
		out[len++] = 12;
		len += ts_put16(out + len, type);
		len += ts_put16(out + len, 1);
		len += ts_put16(out + len, ttl >> 16);
		len += ts_put16(out + len, ttl & 0xffff);
		len += ts_put16(out + len, (unsigned)alen);
		memcpy(out + len, addr, alen);
		len += alen;
		(*count)++;
	}
	return len;
}

/*
 * Builds the reply to query <q> in <out> (512 bytes at least). Returns its
 * length, or 0 to stay silent (malformed query, or a silent name).
 */
static size_t
ts_answer(const uint8_t *q, size_t n, uint8_t *out)
{
	char		 name[256];
	struct ts_name	*z;
	size_t		 p = 12, nl = 0, len, i;
	unsigned	 qtype, rcode = 0, an = 0;

	if (n < 12 || (q[2] & 0x80) != 0 || q[4] != 0 || q[5] != 1)
		return 0;
	for (;;) {
		if (p >= n)
			return 0;
		len = q[p++];
		if (len == 0)
			break;
		if (len > 63 || p + len > n || nl + len + 2 > sizeof(name))
			return 0;
		if (nl > 0)
			name[nl++] = '.';
		for (i = 0; i < len; i++)
			name[nl++] = (char)q[p + i];
		p += len;
	}
	name[nl] = '\0';
	if (p + 4 > n)
		return 0;
	qtype = (unsigned)q[p] << 8 | q[p + 1];
	p += 4;
	ts_total++;
	if ((z = ts_find(name)) == NULL) {
		ts_unknown++;
		rcode = 3;	/* NXDOMAIN */
	} else {
		if (qtype == TS_TYPE_A)
			z->nq_a++;
		else if (qtype == TS_TYPE_AAAA)
			z->nq_aaaa++;
		if (z->mode == TS_SILENT)
			return 0;
		if (z->mode == TS_SERVFAIL)
			rcode = 2;
	}
	/* Header and question echoed; any EDNS record is dropped. */
	memcpy(out, q, p);
	out[2] = (uint8_t)(0x80 | (q[2] & 0x79) | 0x04);	/* QR, AA */
	out[3] = (uint8_t)(0x80 | rcode);			/* RA */
	memset(out + 6, 0, 6);
	len = p;
	if (z != NULL && rcode == 0 && qtype == TS_TYPE_A)
		len = ts_put_answers(out, len, qtype, z->ttl, z->v4, &an);
	else if (z != NULL && rcode == 0 && qtype == TS_TYPE_AAAA)
		len = ts_put_answers(out, len, qtype, z->ttl, z->v6, &an);
	ts_put16(out + 6, an);
	return len;
}

static void
ts_on_readable(struct loop_io *io, uint32_t events)
{
	struct sockaddr_storage	 from;
	socklen_t		 fromlen;
	uint8_t			 q[512], r[1024];
	ssize_t			 n;
	size_t			 rlen;

	(void)events;
	for (;;) {
		fromlen = sizeof(from);
		n = recvfrom(io->fd, q, sizeof(q), 0, (struct sockaddr *)&from,
		    &fromlen);
		if (n < 0)
			return;
		if ((rlen = ts_answer(q, (size_t)n, r)) > 0)
			(void)sendto(io->fd, r, rlen, 0,
			    (struct sockaddr *)&from, fromlen);
	}
}

static int
ts_open(void)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0 ||
	    loop_io_start(&ts_io, fd, EPOLLIN, ts_on_readable) < 0) {
		close(fd);
		return -1;
	}
	snprintf(ts_servers, sizeof(ts_servers), "127.0.0.1:%u",
	    (unsigned)ntohs(sin.sin_port));
	return 0;
}

/* ---- driving the loop ------------------------------------------------ */

static uint64_t		 td_offset;
static struct pt_timer	 td_tick;

static uint64_t
td_real_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
td_clock(void)
{
	loop_set_time(td_real_ms() + td_offset);
}

/* Moves the loop clock <ms> ahead of real time; only while idle, or the
 * resolver's own guards would fire early. */
static void
td_advance(uint64_t ms)
{
	td_offset += ms;
	td_clock();
}

static void
td_on_tick(struct pt_timer *t, void *arg)
{
	(void)t;
	(void)arg;
}

/*
 * Runs the loop until <cond>(<arg>) holds or <max_ms> of real time passed.
 * A short tick timer keeps epoll_wait from sleeping past the deadline.
 */
static bool
td_run(bool (*cond)(const void *), const void *arg, unsigned max_ms)
{
	uint64_t	 end = td_real_ms() + check_bound_ms(max_ms);
	bool		 ok;

	while (!(ok = cond(arg)) && td_real_ms() < end) {
		td_clock();
		pt_timer_start(&td_tick, TD_TICK_MS, td_on_tick, NULL);
		loop_once();
		td_clock();
		loop_run_timers();
	}
	pt_timer_stop(&td_tick);
	return ok;
}

static bool
td_never(const void *arg)
{
	(void)arg;
	return false;
}

static bool
td_cache_reaches(const void *arg)
{
	return dns_cache_count() >= *(const unsigned *)arg;
}

/* ---- recording answers ----------------------------------------------- */

struct td_rec {
	int			 calls;
	int			 err;
	bool			 had_res;
	struct dns_result	 res;
	uint64_t		 at_ms;		/* real time of the last call */
};

static void
td_on_done(void *arg, int err, const struct dns_result *res)
{
	struct td_rec	*r = arg;

	r->calls++;
	r->err = err;
	r->at_ms = td_real_ms();
	r->had_res = res != NULL;
	if (res != NULL)
		r->res = *res;
	else
		r->res.naddrs = 0;
}

static bool
td_called(const void *arg)
{
	return ((const struct td_rec *)arg)->calls > 0;
}

/* Starts a lookup that must not be answered inside dns_resolve. */
#define TD_MISS(name, r)	td_miss((name), (r), __FILE__, __LINE__)
/* Resolves what must be answered inside dns_resolve (literal, cache). */
#define TD_HIT(name, r)		td_hit((name), (r), __FILE__, __LINE__)
/* Waits for <r>'s answer. */
#define TD_WAIT(r)							\
	CHECKF(td_run(td_called, (r), TD_WAIT_MS),			\
	    "no answer within %u ms", check_bound_ms(TD_WAIT_MS))

static struct dns_query *
td_miss(const char *name, struct td_rec *r, const char *file, unsigned line)
{
	struct dns_query	*q;

	memset(r, 0, sizeof(*r));
	q = dns_resolve(name, strlen(name), td_on_done, r);
	CHECKF_AT(file, line, q != NULL, "%s: no handle for a miss", name);
	CHECKF_AT(file, line, r->calls == 0,
	    "%s: answered inside dns_resolve", name);
	return q;
}

static void
td_hit(const char *name, struct td_rec *r, const char *file, unsigned line)
{
	struct dns_query	*q;

	memset(r, 0, sizeof(*r));
	q = dns_resolve(name, strlen(name), td_on_done, r);
	CHECKF_AT(file, line, q == NULL && r->calls == 1,
	    "%s: not answered at once (handle %p, %d calls)", name,
	    (void *)q, r->calls);
	/* Keep <r> from being written after the caller's frame. */
	dns_cancel(q);
}

static bool
td_in_list(const char *addr, const char *const *list)
{
	int	 i;

	for (i = 0; i < TS_MAX_ADDRS && list[i] != NULL; i++)
		if (strcmp(addr, list[i]) == 0)
			return true;
	return false;
}

static int
td_list_len(const char *const *list)
{
	int	 i;

	for (i = 0; i < TS_MAX_ADDRS && list[i] != NULL; i++)
		;
	return i;
}

/*
 * Checks that <r> succeeded with addresses from <z> only, each once, as
 * many as there are (up to DNS_MAX_ADDRS), ports 0, and the families
 * alternating for as long as both have addresses left.
 */
#define TD_CHECK_RES(r, z)	td_check_res((r), (z), __FILE__, __LINE__)

static void
td_check_res(const struct td_rec *r, const struct ts_name *z,
    const char *file, unsigned line)
{
	char			 txt[DNS_MAX_ADDRS][INET6_ADDRSTRLEN];
	const struct pt_addr	*a;
	const void		*bytes;
	int			 i, k, fam, prev = 0, n4, n6, seen4 = 0;
	int			 seen6 = 0, want;

	n4 = td_list_len(z->v4);
	n6 = td_list_len(z->v6);
	want = n4 + n6 < DNS_MAX_ADDRS ? n4 + n6 : DNS_MAX_ADDRS;
	if (!CHECKF_AT(file, line, r->calls == 1 && r->err == 0 &&
	    r->had_res, "%s: %d calls, error %d", z->name, r->calls, r->err))
		return;
	CHECKF_AT(file, line, r->res.naddrs == want, "%s: %d addresses, "
	    "want %d", z->name, r->res.naddrs, want);
	for (i = 0; i < r->res.naddrs && i < DNS_MAX_ADDRS; i++) {
		a = &r->res.addrs[i];
		fam = a->sa.ss_family;
		if (!CHECKF_AT(file, line, fam == AF_INET || fam == AF_INET6,
		    "%s: address %d: family %d", z->name, i, fam))
			return;
		if (fam == AF_INET)
			bytes = &((const struct sockaddr_in *)&a->sa)->sin_addr;
		else
			bytes = &((const struct sockaddr_in6 *)&a->sa)->
			    sin6_addr;
		inet_ntop(fam, bytes, txt[i], sizeof(txt[i]));
		CHECKF_AT(file, line, a->len == (fam == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)),
		    "%s: %s: length %u", z->name, txt[i], (unsigned)a->len);
		CHECKF_AT(file, line, sockaddr_port((const struct sockaddr *)
		    &a->sa) == 0, "%s: %s: port not 0", z->name, txt[i]);
		CHECKF_AT(file, line, td_in_list(txt[i], fam == AF_INET ?
		    z->v4 : z->v6), "%s: %s not served", z->name, txt[i]);
		for (k = 0; k < i; k++)
			CHECKF_AT(file, line, strcmp(txt[k], txt[i]) != 0,
			    "%s: %s twice", z->name, txt[i]);
		/* Two of one family in a row only once the other ran out. */
		if (i > 0 && fam == prev)
			CHECKF_AT(file, line, fam == AF_INET ? seen6 == n6 :
			    seen4 == n4, "%s: %s at %d breaks the interleaving",
			    z->name, txt[i], i);
		if (fam == AF_INET)
			seen4++;
		else
			seen6++;
		prev = fam;
	}
}

/* ---- fixture --------------------------------------------------------- */

static struct dns_conf
td_conf(void)
{
	struct dns_conf	 c;

	memset(&c, 0, sizeof(c));
	c.servers = ts_servers;
	c.cache_max = 64;
	c.min_ttl_s = 0;
	c.max_ttl_s = 3600;
	c.neg_ttl_s = 30;
	c.timeout_ms = 1000;
	return c;
}

static bool
td_start(const struct dns_conf *c)
{
	int	 rc;

	ts_reset();
	td_offset = 0;
	td_clock();
	rc = dns_init(c);
	return CHECKF(rc == 0, "dns_init: %s", strerror(-rc));
}

static void
td_stop(void)
{
	dns_fini();
	CHECKF(loop_timer_count() == 0, "%u timers left armed",
	    loop_timer_count());
}

static int
dns_suite_init(void)
{
	if (loop_init() < 0)
		return -1;
	return ts_open();
}

static int
dns_suite_fini(void)
{
	loop_io_stop(&ts_io);
	close(ts_io.fd);
	loop_fini();
	return 0;
}

/* ---- tests ----------------------------------------------------------- */

static void
test_dns_answers_ipv4_literal_at_once(void)
{
	static const struct ts_name	 want = { "192.0.2.7", TS_ANSWER, 0,
					    { "192.0.2.7" }, { NULL }, 0, 0 };
	struct dns_conf			 c = td_conf();
	struct dns_query		*q;
	struct td_rec			 r;

	if (!td_start(&c))
		return;
	TD_HIT("192.0.2.7", &r);
	TD_CHECK_RES(&r, &want);
	TD_HIT("192.0.2.7.", &r);	/* a final dot: still the address */
	TD_CHECK_RES(&r, &want);
	/* <namelen> bounds the name: the port after it is not read. */
	memset(&r, 0, sizeof(r));
	q = dns_resolve("192.0.2.7:8080", 9, td_on_done, &r);
	CU_ASSERT_PTR_NULL(q);
	TD_CHECK_RES(&r, &want);
	CU_ASSERT_EQUAL(ts_total, 0);
	CU_ASSERT_EQUAL(dns_cache_count(), 0);
	td_stop();
}

static void
test_dns_answers_ipv6_literal_at_once(void)
{
	static const struct ts_name	 want = { "2001:db8::7", TS_ANSWER, 0,
					    { NULL }, { "2001:db8::7" }, 0, 0 };
	static const struct ts_name	 mapped = { "::ffff:192.0.2.1",
					    TS_ANSWER, 0, { NULL },
					    { "::ffff:192.0.2.1" }, 0, 0 };
	struct dns_conf			 c = td_conf();
	struct td_rec			 r;

	if (!td_start(&c))
		return;
	TD_HIT("2001:db8::7", &r);
	TD_CHECK_RES(&r, &want);
	TD_HIT("2001:DB8::7", &r);
	TD_CHECK_RES(&r, &want);
	TD_HIT("::ffff:192.0.2.1", &r);
	TD_CHECK_RES(&r, &mapped);
	/* As URLs write it, and with a final dot: still no query. */
	TD_HIT("[2001:db8::7]", &r);
	TD_CHECK_RES(&r, &want);
	TD_HIT("2001:db8::7.", &r);
	TD_CHECK_RES(&r, &want);
	CU_ASSERT_EQUAL(ts_total, 0);
	td_stop();
}

static void
test_dns_resolves_name_with_families_interleaved(void)
{
	struct ts_name	*z = ts_find("dual.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;

	if (!td_start(&c))
		return;
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	TD_CHECK_RES(&r, z);
	CU_ASSERT_EQUAL(z->nq_a, 1);
	CU_ASSERT_EQUAL(z->nq_aaaa, 1);
	td_stop();
}

static void
test_dns_keeps_at_most_max_addrs_alternating(void)
{
	struct ts_name	*z = ts_find("many.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;

	if (!td_start(&c))
		return;
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	TD_CHECK_RES(&r, z);
	CU_ASSERT_EQUAL(r.res.naddrs, DNS_MAX_ADDRS);
	td_stop();
}

static void
test_dns_resolves_single_family_names(void)
{
	struct ts_name	*z4 = ts_find("v4only.portico.test");
	struct ts_name	*z6 = ts_find("v6only.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r4, r6;

	if (!td_start(&c))
		return;
	TD_MISS(z4->name, &r4);
	TD_MISS(z6->name, &r6);
	TD_WAIT(&r4);
	TD_WAIT(&r6);
	TD_CHECK_RES(&r4, z4);
	TD_CHECK_RES(&r6, z6);
	td_stop();
}

static void
test_dns_serves_cache_hit_without_query(void)
{
	struct ts_name	*z = ts_find("dual.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;

	if (!td_start(&c))
		return;
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	TD_CHECK_RES(&r, z);
	CU_ASSERT_EQUAL(dns_cache_count(), 1);
	TD_HIT(z->name, &r);
	TD_CHECK_RES(&r, z);
	/* Case and one trailing dot do not make another name. */
	TD_HIT("DUAL.Portico.TEST.", &r);
	TD_CHECK_RES(&r, z);
	CU_ASSERT_EQUAL(z->nq_a, 1);
	CU_ASSERT_EQUAL(z->nq_aaaa, 1);
	CU_ASSERT_EQUAL(dns_cache_count(), 1);
	td_stop();
}

static void
test_dns_asks_again_after_ttl(void)
{
	struct ts_name	*z = ts_find("short.portico.test");	/* TTL 5 */
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;

	if (!td_start(&c))
		return;
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	TD_CHECK_RES(&r, z);
	td_advance(4000);
	TD_HIT(z->name, &r);
	CU_ASSERT_EQUAL(z->nq_a, 1);
	td_advance(1500);
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	TD_CHECK_RES(&r, z);
	CU_ASSERT_EQUAL(z->nq_a, 2);
	CU_ASSERT_EQUAL(dns_cache_count(), 1);
	td_stop();
}

static void
test_dns_clamps_ttl_to_configured_bounds(void)
{
	struct ts_name	*tiny = ts_find("tiny.portico.test");	/* TTL 1 */
	struct ts_name	*lng = ts_find("long.portico.test");	/* 1 day */
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;

	c.min_ttl_s = 10;
	c.max_ttl_s = 20;
	if (!td_start(&c))
		return;
	TD_MISS(tiny->name, &r);
	TD_WAIT(&r);
	td_advance(5000);
	TD_HIT(tiny->name, &r);		/* raised to 10 s */
	TD_MISS(lng->name, &r);
	TD_WAIT(&r);
	td_advance(16000);
	TD_HIT(lng->name, &r);
	TD_MISS(tiny->name, &r);	/* 21 s old */
	TD_WAIT(&r);
	CU_ASSERT_EQUAL(tiny->nq_a, 2);
	td_advance(5000);
	TD_MISS(lng->name, &r);		/* 21 s old: cut to 20 s */
	TD_WAIT(&r);
	TD_CHECK_RES(&r, lng);
	CU_ASSERT_EQUAL(lng->nq_a, 2);
	td_stop();
}

static void
test_dns_caches_nxdomain_and_nodata(void)
{
	struct ts_name	*empty = ts_find("empty.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;

	c.neg_ttl_s = 30;
	if (!td_start(&c))
		return;
	TD_MISS("nowhere.portico.test", &r);
	TD_WAIT(&r);
	CHECKF(r.calls == 1 && r.err == ENOENT && !r.had_res,
	    "nxdomain: %d calls, error %d", r.calls, r.err);
	CU_ASSERT_EQUAL(ts_unknown, 2);		/* A and AAAA */
	TD_HIT("nowhere.portico.test", &r);
	CU_ASSERT_EQUAL(r.err, ENOENT);
	td_advance(29000);
	TD_HIT("nowhere.portico.test", &r);
	CU_ASSERT_EQUAL(r.err, ENOENT);
	CU_ASSERT_EQUAL(ts_unknown, 2);
	td_advance(2000);
	TD_MISS("nowhere.portico.test", &r);
	TD_WAIT(&r);
	CU_ASSERT_EQUAL(r.err, ENOENT);
	CU_ASSERT_EQUAL(ts_unknown, 4);
	/* A name with no address of either family is no better. */
	TD_MISS(empty->name, &r);
	TD_WAIT(&r);
	CHECKF(r.calls == 1 && r.err == ENOENT, "nodata: %d calls, error %d",
	    r.calls, r.err);
	TD_HIT(empty->name, &r);
	CU_ASSERT_EQUAL(r.err, ENOENT);
	CU_ASSERT_EQUAL(empty->nq_a, 1);
	td_stop();
}

static void
test_dns_times_out_within_timeout_ms(void)
{
	struct ts_name	*z = ts_find("silent.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;
	uint64_t	 t0, took;

	c.timeout_ms = 400;
	if (!td_start(&c))
		return;
	t0 = td_real_ms();
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	took = r.at_ms - t0;
	CHECKF(r.calls == 1 && r.err == ETIMEDOUT, "%d calls, error %d",
	    r.calls, r.err);
	CHECKF(took >= 300 && took <= 400 + check_bound_ms(300),
	    "timed out after %llu ms, want 300 to %u",
	    (unsigned long long)took, 400 + check_bound_ms(300));
	CU_ASSERT(z->nq_a >= 1);
	/* A timeout is not remembered: the next caller asks again. */
	CU_ASSERT_EQUAL(dns_cache_count(), 0);
	TD_MISS(z->name, &r);
	td_stop();
	CHECKF(r.calls == 1 && r.err == ECANCELED, "%d calls, error %d",
	    r.calls, r.err);
}

static void
test_dns_shares_one_query_between_callers(void)
{
	struct ts_name		*z = ts_find("dual.portico.test");
	struct dns_conf		 c = td_conf();
	struct dns_query	*q1, *q2;
	struct td_rec		 r1, r2;

	c.cache_max = 0;	/* joining must not depend on the cache */
	if (!td_start(&c))
		return;
	q1 = TD_MISS(z->name, &r1);
	q2 = TD_MISS("Dual.Portico.Test.", &r2);
	CU_ASSERT_PTR_NOT_EQUAL(q1, q2);
	TD_WAIT(&r1);
	TD_WAIT(&r2);
	td_run(td_never, NULL, 50);
	TD_CHECK_RES(&r1, z);
	TD_CHECK_RES(&r2, z);
	CU_ASSERT_EQUAL(z->nq_a, 1);
	CU_ASSERT_EQUAL(z->nq_aaaa, 1);
	td_stop();
}

static void
test_dns_cancel_suppresses_callback_and_fills_cache(void)
{
	struct ts_name	*z = ts_find("dual.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;
	unsigned	 one = 1;

	if (!td_start(&c))
		return;
	dns_cancel(TD_MISS(z->name, &r));
	CHECKF(td_run(td_cache_reaches, &one, TD_WAIT_MS),
	    "the cancelled query never filled the cache");
	td_run(td_never, NULL, 50);
	CU_ASSERT_EQUAL(r.calls, 0);
	TD_HIT(z->name, &r);
	TD_CHECK_RES(&r, z);
	CU_ASSERT_EQUAL(z->nq_a, 1);
	td_stop();
}

static void
test_dns_cancel_leaves_other_callers_waiting(void)
{
	struct ts_name		*z = ts_find("dual.portico.test");
	struct dns_conf		 c = td_conf();
	struct dns_query	*q1;
	struct td_rec		 r1, r2;

	if (!td_start(&c))
		return;
	q1 = TD_MISS(z->name, &r1);
	TD_MISS(z->name, &r2);
	dns_cancel(q1);
	TD_WAIT(&r2);
	td_run(td_never, NULL, 50);
	TD_CHECK_RES(&r2, z);
	CU_ASSERT_EQUAL(r1.calls, 0);
	td_stop();
}

static void
test_dns_cache_is_bounded_and_evicts_lru(void)
{
	static const char	*names[] = { "c0.portico.test",
				    "c1.portico.test", "c2.portico.test",
				    "c3.portico.test", "c4.portico.test" };
	struct dns_conf		 c = td_conf();
	struct td_rec		 r;
	unsigned		 i;

	c.cache_max = 4;
	if (!td_start(&c))
		return;
	for (i = 0; i < 4; i++) {
		TD_MISS(names[i], &r);
		TD_WAIT(&r);
		CU_ASSERT_EQUAL(dns_cache_count(), i + 1);
	}
	TD_HIT(names[0], &r);		/* c0 is now the most recent */
	TD_MISS(names[4], &r);		/* full: c1 goes */
	TD_WAIT(&r);
	CU_ASSERT_EQUAL(dns_cache_count(), 4);
	TD_MISS(names[1], &r);		/* c2 goes */
	TD_WAIT(&r);
	CU_ASSERT_EQUAL(dns_cache_count(), 4);
	TD_HIT(names[0], &r);
	TD_HIT(names[1], &r);
	TD_HIT(names[3], &r);
	TD_HIT(names[4], &r);
	CU_ASSERT_EQUAL(dns_cache_count(), 4);
	CU_ASSERT_EQUAL(ts_find(names[0])->nq_a, 1);
	CU_ASSERT_EQUAL(ts_find(names[1])->nq_a, 2);
	TD_MISS(names[2], &r);
	TD_WAIT(&r);
	CU_ASSERT_EQUAL(ts_find(names[2])->nq_a, 2);
	CU_ASSERT_EQUAL(dns_cache_count(), 4);
	td_stop();
}

static void
test_dns_cache_off_and_clear(void)
{
	struct ts_name	*z = ts_find("v4only.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;

	if (!td_start(&c))
		return;
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	CU_ASSERT_EQUAL(dns_cache_count(), 1);
	dns_cache_clear();
	CU_ASSERT_EQUAL(dns_cache_count(), 0);
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	TD_CHECK_RES(&r, z);
	CU_ASSERT_EQUAL(z->nq_a, 2);
	td_stop();

	c.cache_max = 0;
	if (!td_start(&c))
		return;
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	CU_ASSERT_EQUAL(dns_cache_count(), 0);
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	TD_CHECK_RES(&r, z);
	CU_ASSERT_EQUAL(z->nq_a, 2);
	td_stop();
}

static void
test_dns_fini_cancels_pending_queries(void)
{
	struct dns_conf		 c = td_conf();
	struct td_rec		 r1, r2, r3;

	c.timeout_ms = 2000;
	if (!td_start(&c))
		return;
	TD_MISS("silent.portico.test", &r1);
	TD_MISS("dual.portico.test", &r2);
	dns_cancel(TD_MISS("v4only.portico.test", &r3));
	/* The questions are sent (c-ares writes them at once); the answers
	 * wait unread in our server's socket. */
	dns_fini();
	CHECKF(r1.calls == 1 && r1.err == ECANCELED && !r1.had_res,
	    "silent: %d calls, error %d", r1.calls, r1.err);
	CHECKF(r2.calls == 1 && r2.err == ECANCELED && !r2.had_res,
	    "dual: %d calls, error %d", r2.calls, r2.err);
	CU_ASSERT_EQUAL(r3.calls, 0);
	CU_ASSERT_EQUAL(dns_cache_count(), 0);
	td_stop();
	/* Nothing is left to call anyone later. */
	td_run(td_never, NULL, 30);
	CU_ASSERT(r1.calls == 1 && r2.calls == 1 && r3.calls == 0);
}

static void
test_dns_fails_malformed_names_from_loop(void)
{
	static const char	*bad[] = { "a..b", ".", "",
	    "has space.portico.test",
	    "x1234567890123456789012345678901234567890123456789012345678901234"
	    ".test" };
	struct dns_conf		 c = td_conf();
	struct td_rec		 r;
	size_t			 i;

	if (!td_start(&c))
		return;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		TD_MISS(bad[i], &r);
		TD_WAIT(&r);
		CHECKF(r.calls == 1 && r.err == ENOENT, "\"%s\": %d calls, "
		    "error %d", bad[i], r.calls, r.err);
	}
	CU_ASSERT_EQUAL(ts_total, 0);
	td_stop();
}

static void
test_dns_reports_server_failure_as_eio_uncached(void)
{
	struct ts_name	*z = ts_find("broken.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rec	 r;

	if (!td_start(&c))
		return;
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	CHECKF(r.calls == 1 && r.err == EIO, "%d calls, error %d", r.calls,
	    r.err);
	CU_ASSERT_EQUAL(dns_cache_count(), 0);
	TD_MISS(z->name, &r);
	TD_WAIT(&r);
	CU_ASSERT_EQUAL(r.err, EIO);
	td_stop();
}

static void
test_dns_hosts_file_answer_comes_from_loop(void)
{
	struct dns_conf		 c = td_conf();
	struct td_rec		 r;
	const struct pt_addr	*a;
	int			 i;

	if (!td_start(&c))
		return;
	/* The hosts table (dns_hosts.c) knows it at once; the caller must
	 * still hear it from the loop, as from c-ares. */
	TD_MISS("localhost", &r);
	TD_WAIT(&r);
	CHECKF(r.calls == 1 && r.err == 0 && r.res.naddrs >= 1,
	    "%d calls, error %d, %d addresses", r.calls, r.err,
	    r.res.naddrs);
	for (i = 0; i < r.res.naddrs; i++) {
		a = &r.res.addrs[i];
		/* CU_ASSERT is a block: braces keep the else attached. */
		if (a->sa.ss_family == AF_INET) {
			CU_ASSERT_EQUAL(ntohl(((const struct sockaddr_in *)
			    &a->sa)->sin_addr.s_addr) >> 24, 127);
		} else {
			CU_ASSERT(IN6_IS_ADDR_LOOPBACK(&((const struct
			    sockaddr_in6 *)&a->sa)->sin6_addr));
		}
	}
	CU_ASSERT_EQUAL(ts_total, 0);
	td_stop();
}

/* Two callers of one lookup, each cancelling the other when called. */
struct td_rival {
	struct td_rec		 rec;
	struct dns_query	*q;
	struct td_rival		*other;
};

static void
td_on_done_cancel_rival(void *arg, int err, const struct dns_result *res)
{
	struct td_rival	*me = arg;

	td_on_done(&me->rec, err, res);
	if (me->other->rec.calls == 0)
		dns_cancel(me->other->q);
}

static bool
td_rival_called(const void *arg)
{
	const struct td_rival	*me = arg;

	return me->rec.calls > 0 || me->other->rec.calls > 0;
}

/* Asks for the same name again from inside its callback. */
struct td_again {
	struct td_rec		 outer;
	struct td_rec		 inner;
	struct dns_query	*q;
};

static void
td_on_done_resolve_again(void *arg, int err, const struct dns_result *res)
{
	struct td_again	*g = arg;

	td_on_done(&g->outer, err, res);
	memset(&g->inner, 0, sizeof(g->inner));
	g->q = dns_resolve("dual.portico.test", 17, td_on_done, &g->inner);
}

static void
test_dns_callbacks_may_call_back_in(void)
{
	struct ts_name	*z = ts_find("dual.portico.test");
	struct dns_conf	 c = td_conf();
	struct td_rival	 a, b;
	struct td_again	 g;

	if (!td_start(&c))
		return;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.other = &b;
	b.other = &a;
	a.q = dns_resolve(z->name, strlen(z->name), td_on_done_cancel_rival,
	    &a);
	b.q = dns_resolve(z->name, strlen(z->name), td_on_done_cancel_rival,
	    &b);
	CU_ASSERT(a.q != NULL && b.q != NULL);
	CHECKF(td_run(td_rival_called, &a, TD_WAIT_MS), "no answer");
	td_run(td_never, NULL, 50);
	CHECKF(a.rec.calls + b.rec.calls == 1, "rivals called %d and %d "
	    "times", a.rec.calls, b.rec.calls);

	/* The answer is cached now: asked again from a callback, it comes
	 * at once, nested. */
	dns_cache_clear();
	memset(&g, 0, sizeof(g));
	CU_ASSERT_PTR_NOT_NULL(dns_resolve(z->name, strlen(z->name),
	    td_on_done_resolve_again, &g));
	CHECKF(td_run(td_called, &g.outer, TD_WAIT_MS), "no answer");
	TD_CHECK_RES(&g.outer, z);
	CU_ASSERT_PTR_NULL(g.q);
	TD_CHECK_RES(&g.inner, z);
	CU_ASSERT_EQUAL(z->nq_a, 2);
	td_stop();
}

/* ---- the hosts table and c-ares' allocator ---------------------------- */

static const char	*td_hosts_text =
	"# comment line\n"
	"127.0.0.1\tlocalhost  Loopback.Test.\n"
	"::1 localhost ip6-localhost # trailing comment 10.0.0.1 nope\n"
	"192.0.2.5 multi.test\n"
	"2001:db8::5 multi.test\n"
	"192.0.2.6 multi.test\n"
	"192.0.2.5 multi.test\n"
	"not-an-address bad.test\n"
	"fe80::1%eth0 zoned.test\n"
	"\n"
	"198.51.100.1 many.test\n198.51.100.2 many.test\n"
	"198.51.100.3 many.test\n198.51.100.4 many.test\n"
	"198.51.100.5 many.test\n198.51.100.6 many.test\n"
	"198.51.100.7 many.test\n198.51.100.8 many.test\n"
	"198.51.100.9 many.test\n";

static const char *
td_addr_text(const struct pt_addr *a, char *buf, size_t len)
{
	const void	*p = a->sa.ss_family == AF_INET ?
	    (const void *)&((const struct sockaddr_in *)&a->sa)->sin_addr :
	    (const void *)&((const struct sockaddr_in6 *)&a->sa)->sin6_addr;

	return inet_ntop(a->sa.ss_family, p, buf, (socklen_t)len);
}

static void
test_dns_hosts_table_parses_the_file(void)
{
	char			 path[] = "/tmp/pt-hosts-XXXXXX", b[64];
	struct dns_result	 r;
	FILE			*f;
	int			 fd;

	fd = mkstemp(path);
	CHECKF_FATAL(fd >= 0, "mkstemp");
	f = fdopen(fd, "w");
	CHECKF_FATAL(f != NULL, "fdopen");
	fputs(td_hosts_text, f);
	fclose(f);
	CU_ASSERT_EQUAL(dns_hosts_load(path), 0);
	unlink(path);
	/* localhost, loopback.test, ip6-localhost, multi, many */
	CU_ASSERT_EQUAL(dns_hosts_count(), 5);
	CU_ASSERT_TRUE(dns_hosts_find("localhost", 9, &r));
	CHECKF(r.naddrs == 2 && r.addrs[0].sa.ss_family == AF_INET &&
	    r.addrs[1].sa.ss_family == AF_INET6, "localhost: %d addresses",
	    r.naddrs);
	/* Stored lower case, trailing dot dropped; keys come normalised. */
	CU_ASSERT_TRUE(dns_hosts_find("loopback.test", 13, &r));
	CU_ASSERT_FALSE(dns_hosts_find("Loopback.Test", 13, &r));
	CU_ASSERT_TRUE(dns_hosts_find("ip6-localhost", 13, &r));
	CU_ASSERT_EQUAL(r.naddrs, 1);
	/* The comment's words are not names. */
	CU_ASSERT_FALSE(dns_hosts_find("nope", 4, &r));
	CU_ASSERT_FALSE(dns_hosts_find("bad.test", 8, &r));
	CU_ASSERT_FALSE(dns_hosts_find("zoned.test", 10, &r));
	/* Every line naming it, duplicates dropped, families alternating
	 * from the first one's. */
	CU_ASSERT_TRUE(dns_hosts_find("multi.test", 10, &r));
	CHECKF(r.naddrs == 3, "multi.test: %d addresses", r.naddrs);
	if (r.naddrs == 3) {
		CU_ASSERT_STRING_EQUAL(td_addr_text(&r.addrs[0], b, sizeof(b)),
		    "192.0.2.5");
		CU_ASSERT_STRING_EQUAL(td_addr_text(&r.addrs[1], b, sizeof(b)),
		    "2001:db8::5");
		CU_ASSERT_STRING_EQUAL(td_addr_text(&r.addrs[2], b, sizeof(b)),
		    "192.0.2.6");
	}
	CU_ASSERT_TRUE(dns_hosts_find("many.test", 9, &r));
	CU_ASSERT_EQUAL(r.naddrs, DNS_MAX_ADDRS);
	dns_hosts_free();
	CU_ASSERT_EQUAL(dns_hosts_count(), 0);
	CU_ASSERT_FALSE(dns_hosts_find("localhost", 9, &r));
	/* No file: no names, no error. */
	CU_ASSERT_EQUAL(dns_hosts_load("/nonexistent/portico/hosts"), 0);
	CU_ASSERT_EQUAL(dns_hosts_count(), 0);
}

static void
test_dns_mem_reuses_blocks_by_class(void)
{
	unsigned	 base;
	char		*a, *b, *c, *big;
	int		 i;

	/* Empty free lists, whatever earlier tests left. */
	dns_mem_fini();
	base = dns_mem_blocks();
	a = dns_mem_alloc(20);
	CHECKF_FATAL(a != NULL, "alloc 20");
	CU_ASSERT_EQUAL((uintptr_t)a % 16, 0);
	CU_ASSERT_EQUAL(dns_mem_blocks(), base + 1);
	memset(a, 'x', 20);
	dns_mem_free(a);
	/* The same class gives the same block back, from the free list. */
	b = dns_mem_alloc(32);
	CU_ASSERT_PTR_EQUAL(b, a);
	CU_ASSERT_EQUAL(dns_mem_blocks(), base + 1);
	/* Growing within the class keeps the block; past it, moves and
	 * copies. */
	CU_ASSERT_PTR_EQUAL(dns_mem_realloc(b, 30), b);
	memcpy(b, "0123456789", 10);
	c = dns_mem_realloc(b, 1000);
	CHECKF_FATAL(c != NULL && c != b, "realloc to 1000 moved");
	CU_ASSERT_EQUAL(memcmp(c, "0123456789", 10), 0);
	CU_ASSERT_PTR_EQUAL(dns_mem_realloc(c, 100), c);
	dns_mem_free(c);
	/* Above the largest class: straight from the heap, and back. */
	big = dns_mem_alloc(200000);
	CHECKF_FATAL(big != NULL, "alloc 200000");
	memset(big, 1, 200000);
	dns_mem_free(big);
	dns_mem_free(NULL);
	CU_ASSERT_PTR_NULL(dns_mem_alloc(0));
	/* A burst: all made once, then reused without a new block. */
	{
		char	*v[64];
		unsigned mid;

		for (i = 0; i < 64; i++)
			v[i] = dns_mem_alloc(100);
		for (i = 0; i < 64; i++)
			dns_mem_free(v[i]);
		mid = dns_mem_blocks();
		for (i = 0; i < 64; i++)
			v[i] = dns_mem_alloc(100);
		CU_ASSERT_EQUAL(dns_mem_blocks(), mid);
		for (i = 0; i < 64; i++)
			dns_mem_free(v[i]);
	}
	dns_mem_fini();
}

void
register_dns_suite(void)
{
	CU_pSuite	 s;

	if ((s = CU_add_suite("dns", dns_suite_init, dns_suite_fini)) == NULL)
		return;
	CU_add_test(s, "answers_ipv4_literal_at_once",
	    test_dns_answers_ipv4_literal_at_once);
	CU_add_test(s, "answers_ipv6_literal_at_once",
	    test_dns_answers_ipv6_literal_at_once);
	CU_add_test(s, "resolves_name_with_families_interleaved",
	    test_dns_resolves_name_with_families_interleaved);
	CU_add_test(s, "keeps_at_most_max_addrs_alternating",
	    test_dns_keeps_at_most_max_addrs_alternating);
	CU_add_test(s, "resolves_single_family_names",
	    test_dns_resolves_single_family_names);
	CU_add_test(s, "serves_cache_hit_without_query",
	    test_dns_serves_cache_hit_without_query);
	CU_add_test(s, "asks_again_after_ttl",
	    test_dns_asks_again_after_ttl);
	CU_add_test(s, "clamps_ttl_to_configured_bounds",
	    test_dns_clamps_ttl_to_configured_bounds);
	CU_add_test(s, "caches_nxdomain_and_nodata",
	    test_dns_caches_nxdomain_and_nodata);
	CU_add_test(s, "times_out_within_timeout_ms",
	    test_dns_times_out_within_timeout_ms);
	CU_add_test(s, "shares_one_query_between_callers",
	    test_dns_shares_one_query_between_callers);
	CU_add_test(s, "cancel_suppresses_callback_and_fills_cache",
	    test_dns_cancel_suppresses_callback_and_fills_cache);
	CU_add_test(s, "cancel_leaves_other_callers_waiting",
	    test_dns_cancel_leaves_other_callers_waiting);
	CU_add_test(s, "cache_is_bounded_and_evicts_lru",
	    test_dns_cache_is_bounded_and_evicts_lru);
	CU_add_test(s, "cache_off_and_clear",
	    test_dns_cache_off_and_clear);
	CU_add_test(s, "fini_cancels_pending_queries",
	    test_dns_fini_cancels_pending_queries);
	CU_add_test(s, "fails_malformed_names_from_loop",
	    test_dns_fails_malformed_names_from_loop);
	CU_add_test(s, "reports_server_failure_as_eio_uncached",
	    test_dns_reports_server_failure_as_eio_uncached);
	CU_add_test(s, "hosts_file_answer_comes_from_loop",
	    test_dns_hosts_file_answer_comes_from_loop);
	CU_add_test(s, "callbacks_may_call_back_in",
	    test_dns_callbacks_may_call_back_in);
	CU_add_test(s, "hosts_table_parses_the_file",
	    test_dns_hosts_table_parses_the_file);
	CU_add_test(s, "mem_reuses_blocks_by_class",
	    test_dns_mem_reuses_blocks_by_class);
}
