/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loadgen: a load generator for forward proxies, and the origin it needs,
 * in one thread with epoll and non-blocking sockets.
 *
 *   loadgen http|http-close|tunnel|socks-handshakes|udp|idle|serve [options]
 *
 * This file holds the command line, the clock, the latency histogram (log
 * buckets, fixed size: nothing is allocated per request) and the report:
 * a human summary, or with --json one line of JSON. The scenarios live in
 * loadgen_tcp.c, loadgen_udp.c and loadgen_serve.c.
 *
 * Exit status: 0 when no error was counted, 1 when one was, 2 on bad
 * usage. Errors count from the start of the run (warm-up included) to the
 * end of the measured window; requests, bytes and latencies count in the
 * window only.
 *
 * tunnel reports the tunnels it held up, not a rate; with --rr (request
 * and response: --payload bytes out, the same back from an echo, then the
 * next) it reports round trips like requests, each one a latency sample,
 * the cost of a proxy per interactive exchange rather than per byte.
 *
 * socks-handshakes --exchange BYTES follows each setup with one round
 * trip of BYTES to an echo (serve --tcp-echo) before the close: a setup
 * then counts, and its latency ends, when the echo is back, so a proxy
 * (or a chain of them) is seen to carry data, not only to answer.
 *
 * serve --write BYTES sets the size of the TCP source's sends and of the
 * echo's reads and writes (loadgen_serve.c), so a relay benchmark can
 * feed a proxy small or large writes; its /eof/N answers a body that the
 * close ends, which http and http-close count like any other response.
 *
 * With --tls the client speaks TLS to the proxy, an HTTPS proxy
 * (loadgen_tls.c: TLS 1.3, TLS_AES_128_GCM_SHA256, X25519 only), and
 * --tls-resume resumes each client's last session with its ticket; the
 * report then adds the handshakes made in the window, those by a client
 * coming back (the only ones that could offer a session), those that
 * offered one and those that resumed.
 *
 * With --proxy-header v1|v2 each connection to the proxy begins with a
 * PROXY protocol header naming the connection's own ends
 * (lg_proxy_header), as a balancer in front of the proxy would send it:
 * what a proxy_protocol listener costs, without a balancer's own cost.
 *
 * IPv6 only where a proxy is asked for it (a SOCKS5 --target "[::1]:P"
 * is ATYP 4, an HTTP proxy gets the text) and for serve's TCP listeners:
 * enough for an egress from an IPv6 prefix, whose destinations must be
 * IPv6. The connections loadgen itself makes (to the proxy, direct, UDP)
 * are IPv4.
 *
 * Deliberately not here: IPv6 beyond that, names resolved by the proxy,
 * TLS to an origin, request bodies, several threads (run several
 * processes).
 */
#include "config.h"

#include "loadgen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/*
 * Latency histogram in nanoseconds: values below LAT_SUB are exact, then
 * LAT_SUB buckets per power of two (about 3% wide), up to 2^63.
 */
#define LAT_SUB_BITS	5
#define LAT_SUB		(1u << LAT_SUB_BITS)
#define LAT_BUCKETS	((64 - LAT_SUB_BITS + 1) * LAT_SUB)

volatile sig_atomic_t	 lg_stop;

static uint64_t	 lat_hist[LAT_BUCKETS];
static uint64_t	 lat_count;

static const char *const err_names[LG_ERR_MAX] = {
	"status", "size", "reset", "refused", "timeout", "other",
};

uint64_t
lg_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

double
lg_cpu(void)
{
	struct rusage	 ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	    ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static size_t
lat_index(uint64_t v)
{
	unsigned	 e;

	if (v < LAT_SUB)
		return (size_t)v;
	e = 63u - (unsigned)__builtin_clzll(v);
	return (size_t)(e - LAT_SUB_BITS + 1) * LAT_SUB +
	    (size_t)((v >> (e - LAT_SUB_BITS)) - LAT_SUB);
}

/* The middle of bucket <i>, in nanoseconds. */
static double
lat_value(size_t i)
{
	unsigned	 e;
	uint64_t	 lo;

	if (i < LAT_SUB)
		return (double)i;
	e = (unsigned)(i / LAT_SUB) + LAT_SUB_BITS - 1;
	lo = (uint64_t)(i % LAT_SUB + LAT_SUB) << (e - LAT_SUB_BITS);
	return (double)lo + (double)(1ull << (e - LAT_SUB_BITS)) / 2;
}

void
lg_lat_add(uint64_t ns)
{
	lat_hist[lat_index(ns)]++;
	lat_count++;
}

/* The <q> quantile in microseconds, 0 without samples. */
static double
lat_quantile(double q)
{
	uint64_t	 want, seen = 0;
	size_t		 i;

	if (lat_count == 0)
		return 0;
	want = (uint64_t)(q * (double)lat_count + 0.5);
	if (want == 0)
		want = 1;
	for (i = 0; i < LAT_BUCKETS; i++) {
		seen += lat_hist[i];
		if (seen >= want)
			return lat_value(i) / 1000.0;
	}
	return lat_value(LAT_BUCKETS - 1) / 1000.0;
}

enum lg_err
lg_err_of(int err)
{
	switch (err) {
	case 0:
	case ECONNRESET:
	case EPIPE:
	case ECONNABORTED:
		return LG_ERR_RESET;
	case ECONNREFUSED:
		return LG_ERR_REFUSED;
	case ETIMEDOUT:
		return LG_ERR_TIMEOUT;
	default:
		return LG_ERR_OTHER;
	}
}

size_t
lg_socks_reply_len(const uint8_t *p, size_t len)
{
	if (len < 5)
		return 0;
	switch (p[3]) {
	case 1:
		return 10;
	case 4:
		return 22;
	case 3:
		return 7 + (size_t)p[4];
	default:
		return SIZE_MAX;
	}
}

ssize_t
lg_proxy_header(const struct lg_opts *o, int fd, uint8_t *out)
{
	static const uint8_t	 sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00,
	    0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };
	struct sockaddr_in	 me;
	socklen_t		 len = sizeof(me);
	char			 src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];
	int			 n;

	if (getsockname(fd, (struct sockaddr *)&me, &len) < 0)
		return -1;
	if (me.sin_family != AF_INET) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (o->proxy_header == LG_PP_V2) {
		memcpy(out, sig, sizeof(sig));
		out[12] = 0x21;		/* version 2, PROXY */
		out[13] = 0x11;		/* AF_INET, STREAM */
		out[14] = 0;
		out[15] = 12;		/* two addresses, two ports */
		memcpy(out + 16, &me.sin_addr, 4);
		memcpy(out + 20, &o->proxy.sin_addr, 4);
		memcpy(out + 24, &me.sin_port, 2);
		memcpy(out + 26, &o->proxy.sin_port, 2);
		return 28;
	}
	inet_ntop(AF_INET, &me.sin_addr, src, sizeof(src));
	inet_ntop(AF_INET, &o->proxy.sin_addr, dst, sizeof(dst));
	n = snprintf((char *)out, LG_PP_MAX, "PROXY TCP4 %s %s %u %u\r\n",
	    src, dst, ntohs(me.sin_port), ntohs(o->proxy.sin_port));
	return n > 0 && n < LG_PP_MAX ? n : -1;
}

static uint64_t
errors_total(const struct lg_result *res)
{
	uint64_t	 n = 0;
	int		 i;

	for (i = 0; i < LG_ERR_MAX; i++)
		n += res->err[i];
	return n;
}

void
lg_progress(const struct lg_opts *o, const struct lg_result *res,
    uint64_t elapsed_ns)
{
	static uint64_t	 last_req, last_up, last_down;

	fprintf(stderr, "\rloadgen %s: %3.0f s  %llu/s  %.1f MiB/s up  "
	    "%.1f MiB/s down  %llu errors   ", o->scenario_name,
	    (double)elapsed_ns / NS_PER_S,
	    (unsigned long long)(res->requests - last_req),
	    (double)(res->up - last_up) / (1 << 20),
	    (double)(res->down - last_down) / (1 << 20),
	    (unsigned long long)errors_total(res));
	last_req = res->requests;
	last_up = res->up;
	last_down = res->down;
}

/* idle and tunnel count what they held up, not a rate; tunnel --rr
 * counts its round trips. */
static bool
counts_held(const struct lg_opts *o)
{
	return o->scenario == LG_IDLE || (o->scenario == LG_TUNNEL && !o->rr);
}

static const char *
rate_unit(const struct lg_opts *o)
{
	switch (o->scenario) {
	case LG_HANDSHAKES:
		return "setups/s";
	case LG_UDP:
		return "round trips/s";
	case LG_IDLE:
		return "connections held";
	case LG_TUNNEL:
		return o->rr ? "round trips/s" : "tunnels";
	default:
		return "requests/s";
	}
}

static void
report(const struct lg_opts *o, const struct lg_result *res)
{
	double		 rate, up, down, cpu, pct, dur = o->duration;
	uint64_t	 errs = errors_total(res);
	bool		 sat;
	int		 i;

	/* Stopped early: the rates are over the time it ran. */
	if (res->stopped && res->wall_s > 0 && res->wall_s < dur)
		dur = res->wall_s;
	rate = (double)res->requests / dur;
	if (counts_held(o))
		rate = 0;
	up = (double)res->up / (1 << 20) / dur;
	down = (double)res->down / (1 << 20) / dur;
	cpu = res->wall_s > 0 ? 100.0 * res->cpu_s / res->wall_s : 0;
	sat = cpu > 95.0;
	pct = res->delivered_pct;
	if (pct < 0)
		pct = res->requests + errs == 0 ? 100.0 :
		    100.0 * (double)res->requests /
		    (double)(res->requests + errs);
	if (o->json) {
		printf("{\"scenario\":\"%s\",\"proxy\":", o->scenario_name);
		if (o->have_proxy)
			printf("\"%s\"", o->proxy_str);
		else
			printf("null");
		printf(",\"target\":\"%s\",\"connections\":%ld,"
		    "\"duration\":%g,\"requests\":%llu,\"rate\":%.1f,"
		    "\"mib_s_up\":%.3f,\"mib_s_down\":%.3f,"
		    "\"latency_us\":{\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,"
		    "\"p999\":%.1f},\"errors\":{", o->target_str,
		    o->scenario == LG_UDP ? 1 : o->connections, dur, (unsigned long long)res->requests,
		    rate, up, down, lat_quantile(0.50), lat_quantile(0.90),
		    lat_quantile(0.99), lat_quantile(0.999));
		for (i = 0; i < LG_ERR_MAX; i++)
			printf("%s\"%s\":%llu", i ? "," : "", err_names[i],
			    (unsigned long long)res->err[i]);
		printf("},\"delivered_pct\":%.2f,\"loadgen_cpu_pct\":%.1f,"
		    "\"saturated\":%s", pct, cpu, sat ? "true" : "false");
		if (o->tls)
			printf(",\"tls\":{\"handshakes\":%llu,\"repeat\":%llu,"
			    "\"offered\":%llu,\"resumed\":%llu,\"resume\":%s,"
			    "\"negotiated\":\"%s\"}",
			    (unsigned long long)res->tls_handshakes,
			    (unsigned long long)res->tls_repeat,
			    (unsigned long long)res->tls_offered,
			    (unsigned long long)res->tls_resumed,
			    o->tls_resume ? "true" : "false",
			    lg_tls_seen() != NULL ? lg_tls_seen() : "");
		if (o->proxy_header != LG_PP_NONE)
			printf(",\"proxy_header\":{\"version\":%d,\"sent\":%llu,"
			    "\"in_window\":%llu}",
			    o->proxy_header == LG_PP_V1 ? 1 : 2,
			    (unsigned long long)res->pp_sent,
			    (unsigned long long)res->pp_window);
		printf("}\n");
		return;
	}
	printf("loadgen %s: %s%s%s -> %s, ", o->scenario_name,
	    o->tls ? "TLS to " : "",
	    o->have_proxy ? (o->ptype == LG_PROXY_SOCKS5 ? "socks5 proxy " :
	    "http proxy ") : "direct", o->have_proxy ? o->proxy_str : "",
	    o->target_str);
	if (o->scenario == LG_UDP && o->rate > 0)
		printf("%.0f datagrams/s, at most %ld in flight", o->rate,
		    o->window);
	else if (o->scenario == LG_UDP)
		printf("%ld datagrams in flight", o->window);
	else
		printf("%ld connections", o->connections);
	printf(", warm-up %g s, measured %g s\n", o->warmup, dur);
	if (counts_held(o))
		printf("  %llu %s\n", (unsigned long long)res->requests,
		    rate_unit(o));
	else
		printf("  %llu done, %.1f %s\n",
		    (unsigned long long)res->requests, rate, rate_unit(o));
	printf("  %.3f MiB/s up, %.3f MiB/s down\n", up, down);
	printf("  latency us: p50 %.1f, p90 %.1f, p99 %.1f, p99.9 %.1f\n",
	    lat_quantile(0.50), lat_quantile(0.90), lat_quantile(0.99),
	    lat_quantile(0.999));
	printf("  errors: %llu (", (unsigned long long)errs);
	for (i = 0; i < LG_ERR_MAX; i++)
		printf("%s%s %llu", i ? ", " : "", err_names[i],
		    (unsigned long long)res->err[i]);
	printf(")\n  delivered %.2f%%; loadgen CPU %.1f%% of one core%s\n",
	    pct, cpu, sat ? " - SATURATED: this measured the load generator"
	    : "");
	if (res->retries > 0)
		printf("  %llu keep-alive connections closed by the server "
		    "before a request: reconnected, not errors\n",
		    (unsigned long long)res->retries);
	if (o->tls)
		printf("  TLS (%s): %llu handshakes, %llu by a client "
		    "coming back, %llu offered a session, %llu resumed%s\n",
		    lg_tls_seen() != NULL ? lg_tls_seen() : "none completed",
		    (unsigned long long)res->tls_handshakes,
		    (unsigned long long)res->tls_repeat,
		    (unsigned long long)res->tls_offered,
		    (unsigned long long)res->tls_resumed,
		    o->tls_resume ? "" : " (--tls-resume not given)");
	if (o->proxy_header != LG_PP_NONE)
		printf("  PROXY header v%d first on each connection to the "
		    "proxy: %llu sent (warm-up included), %llu in the "
		    "window\n", o->proxy_header == LG_PP_V1 ? 1 : 2,
		    (unsigned long long)res->pp_sent,
		    (unsigned long long)res->pp_window);
	if (res->note != NULL)
		printf("  %s\n", res->note);
}

/* ---- command line ---------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
"usage: loadgen SCENARIO [options]\n"
"SCENARIO:\n"
"  http              keep-alive GETs of --path (through --proxy, or direct)\n"
"  http-close        the same, a new connection per request\n"
"  tunnel            N tunnels (CONNECT or SOCKS5) streaming both ways;\n"
"                    with --rr, round trips to an echo instead\n"
"  socks-handshakes  full SOCKS5 setups per second (--exchange BYTES:\n"
"                    each followed by one round trip of BYTES to an\n"
"                    echo, then the close)\n"
"  udp               one SOCKS5 UDP ASSOCIATE, round trips to an echo\n"
"  idle              hold N connections or tunnels for --duration\n"
"  serve             the origin: --http P --tcp-echo P --tcp-sink P\n"
"                    [--tcp-source N] --tcp-close P --udp-echo P\n"
"                    [--write BYTES], until killed; --http answers\n"
"                    /bytes/N (Content-Length), /chunked/N and /eof/N\n"
"                    (no length: Connection: close, the close ends it);\n"
"                    P is a port on 127.0.0.1, HOST:PORT, or [IPv6]:PORT\n"
"                    (not --udp-echo)\n"
"options: --proxy HOST:PORT  --proxy-type http|socks5  --target HOST:PORT\n"
"  (--target [IPv6]:PORT through a proxy: SOCKS5 asks for ATYP 4, an HTTP\n"
"  proxy gets the text; not for udp)\n"
"  --path /bytes/1024  --connections N (50)  --duration S (5)\n"
"  --warmup S (1)  --payload BYTES  --window N  --rate PPS\n"
"  --auth user:pass  --timeout S  --json  --expect-size N\n"
"  --auth-users N (SOCKS5: client i logs in as user<i mod N>, so each\n"
"  login is its own account's and a proxy cannot answer many with one)\n"
"  --pipeline (SOCKS5: greeting, credentials and request in one write,\n"
"  before any reply is read)\n"
"  --no-send (tunnel: only read, a download from a --tcp-source target)\n"
"  --rr (tunnel: request/response to a --tcp-echo target; each tunnel\n"
"  writes --payload bytes (16384 unless given), waits until as many came\n"
"  back, writes the next; a round trip counts as a request and is one\n"
"  latency sample)\n"
"  --date (serve: --http answers carry a Date field, as real origins'\n"
"  do; without it none)\n"
"  --write BYTES (serve, 1..1048576: each send() of the --tcp-source, and\n"
"  the --tcp-echo's read and write; without it 64 KiB sends, 16 KiB echo)\n"
"  --tls (TLS to the proxy: an HTTPS proxy; TLS 1.3, TLS_AES_128_GCM_SHA256,\n"
"  X25519 only)  --tls-resume (--tls, each client resuming its last\n"
"  session with its ticket)\n"
"  --proxy-header v1|v2 (every scenario with --proxy: each new connection\n"
"  to the proxy first sends a PROXY protocol header naming its own ends,\n"
"  as a balancer in front of the proxy would: v1 \"PROXY TCP4 <local addr>\n"
"  <proxy addr> <local port> <proxy port>\\r\\n\", v2 the binary header,\n"
"  command PROXY, AF_INET, STREAM; in the same write as the connection's\n"
"  first bytes (the SOCKS5 greeting, the CONNECT, the first GET, udp's\n"
"  greeting), alone only where the client sends nothing first (idle\n"
"  without --proxy-type) or before a TLS handshake (--tls); its bytes\n"
"  count in \"up\"; the report adds the headers sent, all and in the\n"
"  window)\n");
}

socklen_t
lg_addr_len(const union lg_addr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->v6) : sizeof(a->v4);
}

/*
 * "host:port" (or "port" when <host_optional>, meaning 127.0.0.1) into an
 * IPv4 address, resolved here, once; with <v6>, also "[addr]:port", an
 * IPv6 literal. Returns 0, or -1 with a message.
 */
static int
addr_parse(const char *what, const char *s, bool host_optional, bool v6,
    union lg_addr *out)
{
	struct addrinfo	 hints, *res;
	const char	*host_end = NULL, *port_at = s;
	char		 host[256] = "127.0.0.1";
	char		*end;
	unsigned long	 port;
	size_t		 hlen;
	int		 rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (s[0] == '[') {
		host_end = strchr(s, ']');
		if (!v6 || host_end == NULL || host_end[1] != ':') {
			fprintf(stderr, "loadgen: %s: %s, got \"%s\"\n", what,
			    v6 ? "expected [IPv6 address]:port" :
			    "IPv4 only here", s);
			return -1;
		}
		s++;
		port_at = host_end + 2;
		hints.ai_family = AF_INET6;
		hints.ai_flags = AI_NUMERICHOST;
	} else if ((host_end = strrchr(s, ':')) != NULL)
		port_at = host_end + 1;
	else if (!host_optional) {
		fprintf(stderr, "loadgen: %s: expected host:port, got \"%s\"\n",
		    what, s);
		return -1;
	}
	if (host_end != NULL) {
		hlen = (size_t)(host_end - s);
		if (hlen == 0 || hlen >= sizeof(host)) {
			fprintf(stderr, "loadgen: %s: bad host in \"%s\"\n",
			    what, s);
			return -1;
		}
		memcpy(host, s, hlen);
		host[hlen] = '\0';
	}
	errno = 0;
	port = strtoul(port_at, &end, 10);
	if (errno != 0 || *end != '\0' || end == port_at || port == 0 ||
	    port > 65535) {
		fprintf(stderr, "loadgen: %s: bad port in \"%s\"\n", what,
		    port_at);
		return -1;
	}
	if ((rc = getaddrinfo(host, NULL, &hints, &res)) != 0) {
		fprintf(stderr, "loadgen: %s: %s: %s\n", what, host,
		    gai_strerror(rc));
		return -1;
	}
	memset(out, 0, sizeof(*out));
	if (res->ai_family == AF_INET6) {
		memcpy(&out->v6, res->ai_addr, sizeof(out->v6));
		out->v6.sin6_port = htons((uint16_t)port);
	} else {
		memcpy(&out->v4, res->ai_addr, sizeof(out->v4));
		out->v4.sin_port = htons((uint16_t)port);
	}
	freeaddrinfo(res);
	return 0;
}

static int
opt_num(const char *name, const char *s, long long min, long long max,
    long long *out)
{
	char		*end;
	long long	 v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || v < min || v > max) {
		fprintf(stderr, "loadgen: --%s: expected %lld..%lld, got "
		    "\"%s\"\n", name, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int
opt_long(const char *name, const char *s, long min, long max, long *out)
{
	long long	 v;

	if (opt_num(name, s, min, max, &v) < 0)
		return -1;
	*out = (long)v;
	return 0;
}

static int
opt_real(const char *name, const char *s, double min, double max,
    double *out)
{
	char	*end;
	double	 v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || end == s || !(v >= min) ||
	    v > max) {
		fprintf(stderr, "loadgen: --%s: expected a number in %g..%g, "
		    "got \"%s\"\n", name, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int
opt_auth(struct lg_opts *o, const char *s)
{
	const char	*colon = strchr(s, ':');
	size_t		 ulen, plen;

	if (colon == NULL) {
		fprintf(stderr, "loadgen: --auth: expected user:pass\n");
		return -1;
	}
	ulen = (size_t)(colon - s);
	plen = strlen(colon + 1);
	if (ulen < 1 || ulen > 255 || plen < 1 || plen > 255) {
		fprintf(stderr, "loadgen: --auth: user and password take 1 to "
		    "255 bytes each\n");
		return -1;
	}
	memcpy(o->user, s, ulen);
	memcpy(o->pass, colon + 1, plen);
	o->ulen = ulen;
	o->plen = plen;
	o->auth = true;
	return 0;
}

static const struct {
	const char		*name;
	enum lg_scenario	 s;
} scenarios[] = {
	{ "http", LG_HTTP },
	{ "http-close", LG_HTTP_CLOSE },
	{ "tunnel", LG_TUNNEL },
	{ "socks-handshakes", LG_HANDSHAKES },
	{ "udp", LG_UDP },
	{ "idle", LG_IDLE },
	{ "serve", LG_SERVE },
};

static int
opt_target(struct lg_opts *o, int ch, const char *arg)
{
	union lg_addr	 a;

	switch (ch) {
	case 'p':
		snprintf(o->proxy_str, sizeof(o->proxy_str), "%s", arg);
		o->have_proxy = true;
		if (addr_parse("--proxy", arg, false, false, &a) < 0)
			return -1;
		o->proxy = a.v4;
		return 0;
	case 't':
		snprintf(o->target_str, sizeof(o->target_str), "%s", arg);
		o->have_target = true;
		/* Resolved in opts_check, when loadgen itself needs the
		 * address: an HTTP proxy takes the name as it is. */
		return strrchr(arg, ':') == NULL ? addr_parse("--target",
		    arg, false, true, &o->target) : 0;
	case 'H':
		o->have_s_http = true;
		return addr_parse("--http", arg, true, true, &o->s_http);
	case 'E':
		o->have_s_echo = true;
		return addr_parse("--tcp-echo", arg, true, true, &o->s_echo);
	case 'K':
		o->have_s_sink = true;
		return addr_parse("--tcp-sink", arg, true, true, &o->s_sink);
	case 'U':
		o->have_s_udp = true;
		return addr_parse("--udp-echo", arg, true, false, &o->s_udp);
	case 'C':
		o->have_s_close = true;
		return addr_parse("--tcp-close", arg, true, true,
		    &o->s_close);
	default:
		return -1;
	}
}

static int
opt_one(struct lg_opts *o, int ch, const char *arg)
{
	switch (ch) {
	case 'p': case 't': case 'H': case 'E': case 'K': case 'U':
	case 'C':
		return opt_target(o, ch, arg);
	case 'y':
		o->ptype_set = true;
		if (strcmp(arg, "http") == 0)
			o->ptype = LG_PROXY_HTTP;
		else if (strcmp(arg, "socks5") == 0)
			o->ptype = LG_PROXY_SOCKS5;
		else {
			fprintf(stderr, "loadgen: --proxy-type: http or "
			    "socks5\n");
			return -1;
		}
		return 0;
	case 'P':
		if (arg[0] != '/' || strpbrk(arg, " \r\n") != NULL) {
			fprintf(stderr, "loadgen: --path: starts with /, no "
			    "spaces\n");
			return -1;
		}
		o->path = arg;
		return 0;
	case 'c':
		return opt_long("connections", arg, 1, 1000000,
		    &o->connections);
	case 'd':
		return opt_real("duration", arg, 0.1, 1e6, &o->duration);
	case 'W':
		return opt_real("warmup", arg, 0, 1e6, &o->warmup);
	case 'b':
		return opt_long("payload", arg, 1, 16 << 20, &o->payload);
	case 'w':
		return opt_long("window", arg, 1, 65536, &o->window);
	case 'r':
		return opt_real("rate", arg, 1, 1e8, &o->rate);
	case 'a':
		return opt_auth(o, arg);
	case 'A':
		return opt_long("auth-users", arg, 1, 1000000, &o->auth_users);
	case 'T':
		return opt_real("timeout", arg, 0.001, 1e6, &o->timeout);
	case 'j':
		o->json = true;
		return 0;
	case 'L':
		o->pipeline = true;
		return 0;
	case 'n':
		o->no_send = true;
		return 0;
	case 'q':
		o->rr = true;
		return 0;
	case 'e':
		return opt_long("exchange", arg, 1, 1 << 20, &o->exchange);
	case 'B':
		return opt_long("write", arg, 1, 1 << 20, &o->s_write);
	case 'D':
		o->s_date = true;
		return 0;
	case 'R':
		o->tls_resume = true;
		/* FALLTHROUGH */
	case 'l':
		o->tls = true;
		return 0;
	case 'X':
		if (strcmp(arg, "v1") == 0)
			o->proxy_header = LG_PP_V1;
		else if (strcmp(arg, "v2") == 0)
			o->proxy_header = LG_PP_V2;
		else {
			fprintf(stderr, "loadgen: --proxy-header: v1 or v2\n");
			return -1;
		}
		return 0;
	case 'x':
		return opt_num("expect-size", arg, 0, (long long)1 << 60,
		    &o->expect_size);
	case 'S':
		return opt_num("tcp-source", arg, 0, (long long)1 << 62,
		    &o->tcp_source);
	default:
		return -1;
	}
}

/* Checks what the scenario needs and fills in the defaults. */
static int
opts_check(struct lg_opts *o)
{
	enum lg_scenario	 s = o->scenario;

	if (o->s_write > 0 && s != LG_SERVE) {
		fprintf(stderr, "loadgen %s: --write is for serve\n",
		    o->scenario_name);
		return -1;
	}
	if (o->s_date && s != LG_SERVE) {
		fprintf(stderr, "loadgen %s: --date is for serve\n",
		    o->scenario_name);
		return -1;
	}
	if (o->rr && (s != LG_TUNNEL || o->no_send)) {
		fprintf(stderr, "loadgen %s: --rr is for tunnel, without "
		    "--no-send\n", o->scenario_name);
		return -1;
	}
	if (o->exchange > 0 && s != LG_HANDSHAKES) {
		fprintf(stderr, "loadgen %s: --exchange is for "
		    "socks-handshakes\n", o->scenario_name);
		return -1;
	}
	if (o->exchange > 0 && o->payload > 0) {
		fprintf(stderr, "loadgen %s: --exchange gives the size: no "
		    "--payload\n", o->scenario_name);
		return -1;
	}
	if (o->proxy_header != LG_PP_NONE && (s == LG_SERVE ||
	    !o->have_proxy)) {
		fprintf(stderr, "loadgen %s: --proxy-header is sent to the "
		    "proxy: --proxy is required\n", o->scenario_name);
		return -1;
	}
	if (s == LG_SERVE) {
		if (!o->have_s_http && !o->have_s_echo && !o->have_s_sink &&
		    !o->have_s_udp && !o->have_s_close) {
			fprintf(stderr, "loadgen serve: give at least one of "
			    "--http, --tcp-echo, --tcp-sink, --tcp-close, "
			    "--udp-echo\n");
			return -1;
		}
		return 0;
	}
	if (!o->have_target) {
		fprintf(stderr, "loadgen %s: --target is required\n",
		    o->scenario_name);
		return -1;
	}
	if ((s == LG_HANDSHAKES || s == LG_UDP) && !o->have_proxy) {
		fprintf(stderr, "loadgen %s: --proxy is required\n",
		    o->scenario_name);
		return -1;
	}
	if (s == LG_HANDSHAKES || s == LG_UDP)
		o->ptype = LG_PROXY_SOCKS5;
	if ((!o->have_proxy || o->ptype == LG_PROXY_SOCKS5) &&
	    addr_parse("--target", o->target_str, false, true,
	    &o->target) < 0)
		return -1;
	if (o->target.sa.sa_family == AF_INET6 && (!o->have_proxy ||
	    s == LG_UDP)) {
		fprintf(stderr, "loadgen %s: an IPv6 --target is asked of a "
		    "proxy (SOCKS5 ATYP 4, or an HTTP proxy's text), never "
		    "connected to directly, nor a UDP one\n",
		    o->scenario_name);
		return -1;
	}
	if (o->tls && !o->have_proxy) {
		fprintf(stderr, "loadgen %s: --tls speaks TLS to the proxy: "
		    "--proxy is required\n", o->scenario_name);
		return -1;
	}
	if (o->tls && s == LG_UDP) {
		fprintf(stderr, "loadgen udp: no --tls\n");
		return -1;
	}
	if (o->no_send && s != LG_TUNNEL) {
		fprintf(stderr, "loadgen %s: --no-send is for tunnel\n",
		    o->scenario_name);
		return -1;
	}
	if (o->exchange > 0)
		o->payload = o->exchange;
	if (o->payload == 0)
		o->payload = s == LG_UDP ? 512 : 16384;
	if (s == LG_UDP && (o->payload < LG_UDP_SEQ_LEN ||
	    o->payload > LG_UDP_DGRAM_MAX - 22)) {
		fprintf(stderr, "loadgen udp: --payload: %d..%d bytes\n",
		    LG_UDP_SEQ_LEN, LG_UDP_DGRAM_MAX - 22);
		return -1;
	}
	if (o->auth_users > 0 && (!o->auth || o->ptype != LG_PROXY_SOCKS5 ||
	    o->ulen > 255 - 7)) {
		fprintf(stderr, "loadgen: --auth-users needs --auth (a user "
		    "of at most 248 bytes) and --proxy-type socks5\n");
		return -1;
	}
	if (o->window == 0)
		o->window = o->rate > 0 ? 4096 : 32;
	if (o->timeout == 0)
		o->timeout = s == LG_UDP ? 0.2 : 5;
	if (o->path == NULL)
		o->path = "/bytes/1024";
	return 0;
}

static int
opts_parse(struct lg_opts *o, int argc, char **argv)
{
	static const struct option	 longopts[] = {
		{ "proxy",	 required_argument, NULL, 'p' },
		{ "proxy-type",	 required_argument, NULL, 'y' },
		{ "target",	 required_argument, NULL, 't' },
		{ "path",	 required_argument, NULL, 'P' },
		{ "connections", required_argument, NULL, 'c' },
		{ "duration",	 required_argument, NULL, 'd' },
		{ "warmup",	 required_argument, NULL, 'W' },
		{ "payload",	 required_argument, NULL, 'b' },
		{ "window",	 required_argument, NULL, 'w' },
		{ "rate",	 required_argument, NULL, 'r' },
		{ "auth",	 required_argument, NULL, 'a' },
		{ "auth-users",	 required_argument, NULL, 'A' },
		{ "timeout",	 required_argument, NULL, 'T' },
		{ "json",	 no_argument,	    NULL, 'j' },
		{ "pipeline",	 no_argument,	    NULL, 'L' },
		{ "no-send",	 no_argument,	    NULL, 'n' },
		{ "rr",		 no_argument,	    NULL, 'q' },
		{ "exchange",	 required_argument, NULL, 'e' },
		{ "tls",	 no_argument,	    NULL, 'l' },
		{ "tls-resume",	 no_argument,	    NULL, 'R' },
		{ "proxy-header", required_argument, NULL, 'X' },
		{ "expect-size", required_argument, NULL, 'x' },
		{ "http",	 required_argument, NULL, 'H' },
		{ "tcp-echo",	 required_argument, NULL, 'E' },
		{ "tcp-sink",	 required_argument, NULL, 'K' },
		{ "tcp-source",	 required_argument, NULL, 'S' },
		{ "udp-echo",	 required_argument, NULL, 'U' },
		{ "tcp-close",	 required_argument, NULL, 'C' },
		{ "write",	 required_argument, NULL, 'B' },
		{ "date",	 no_argument,	    NULL, 'D' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	size_t	 i;
	int	 ch;

	o->connections = 50;
	o->duration = 5;
	o->warmup = 1;
	o->expect_size = -1;
	o->tcp_source = -1;
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
		    strcmp(argv[1], "--help") == 0)) {
			usage(stdout);
			exit(0);
		}
		usage(stderr);
		return -1;
	}
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (strcmp(argv[1], scenarios[i].name) == 0) {
			o->scenario = scenarios[i].s;
			o->scenario_name = scenarios[i].name;
		}
	if (o->scenario == LG_NONE) {
		fprintf(stderr, "loadgen: unknown scenario \"%s\"\n", argv[1]);
		usage(stderr);
		return -1;
	}
	optind = 2;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			exit(0);
		}
		if (ch == '?' || opt_one(o, ch, optarg) < 0) {
			if (ch == '?')
				usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "loadgen: unexpected \"%s\"\n", argv[optind]);
		return -1;
	}
	return opts_check(o);
}

/* The connections a run opens can exceed the default soft limit. */
static void
raise_nofile(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void
on_stop(int sig)
{
	(void)sig;
	lg_stop = 1;
}

int
main(int argc, char **argv)
{
	struct lg_opts		 o;
	struct lg_result	 res;
	struct sigaction	 sa;
	int			 rc;

	memset(&o, 0, sizeof(o));
	memset(&res, 0, sizeof(res));
	res.delivered_pct = -1;
	if (opts_parse(&o, argc, argv) < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.scenario != LG_SERVE) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_stop;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	switch (o.scenario) {
	case LG_SERVE:
		return lg_serve_main(&o);
	case LG_UDP:
		rc = lg_udp_main(&o, &res);
		break;
	default:
		rc = lg_tcp_main(&o, &res);
		break;
	}
	if (rc < 0)
		return 1;
	report(&o, &res);
	return errors_total(&res) > 0 ? 1 : 0;
}
