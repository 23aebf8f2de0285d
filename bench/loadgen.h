/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loadgen: shared types of the load generator. loadgen.c holds the command
 * line, the clock, the latency histogram and the report; loadgen_tcp.c the
 * TCP client scenarios (http, http-close, tunnel and tunnel --rr,
 * socks-handshakes, idle);
 * loadgen_udp.c the SOCKS5 UDP scenario; loadgen_serve.c the origin.
 */
#ifndef LOADGEN_H
#define LOADGEN_H

#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define NS_PER_S	1000000000ull
#define NS_PER_MS	1000000ull
#define LG_SCAN_NS	(10 * NS_PER_MS)	/* timeouts, retries, pacing */
#define LG_RETRY_NS	(10 * NS_PER_MS)	/* after a socket failure */
#define LG_MAX_EVENTS	256
#define LG_UDP_HDR	10	/* RSV RSV FRAG ATYP=1 IPv4 port */
#define LG_UDP_SEQ_LEN	12	/* slot (4) + sequence number (8) */
#define LG_UDP_DGRAM_MAX 65507
/* --proxy-header: a v1 line is at most 107 bytes, v2 of IPv4 takes 28 */
#define LG_PP_MAX	108

enum lg_scenario {
	LG_NONE = 0,
	LG_HTTP,
	LG_HTTP_CLOSE,
	LG_TUNNEL,
	LG_HANDSHAKES,
	LG_UDP,
	LG_IDLE,
	LG_SERVE,
};

/* --proxy-header: what each new connection to the proxy sends first */
enum lg_pp {
	LG_PP_NONE = 0,
	LG_PP_V1,	/* "PROXY TCP4 ...\r\n" */
	LG_PP_V2,	/* the binary header: PROXY, AF_INET, STREAM */
};

enum lg_ptype {
	LG_PROXY_HTTP = 0,
	LG_PROXY_SOCKS5,
};

/* The error classes of the report, in its order. */
enum lg_err {
	LG_ERR_STATUS = 0,	/* non-200, SOCKS REP != 0, refused method */
	LG_ERR_SIZE,		/* body length not the expected one */
	LG_ERR_RESET,		/* RST, EPIPE, EOF mid-exchange */
	LG_ERR_REFUSED,		/* ECONNREFUSED */
	LG_ERR_TIMEOUT,		/* --timeout passed, datagram lost */
	LG_ERR_OTHER,		/* anything else, protocol errors too */
	LG_ERR_MAX
};

/* An address loadgen asks a proxy for or listens on: IPv4, or IPv6 where
 * the option takes "[addr]:port" (a SOCKS5 --target, serve's TCP
 * listeners). */
union lg_addr {
	struct sockaddr		 sa;
	struct sockaddr_in	 v4;
	struct sockaddr_in6	 v6;
};

struct lg_opts {
	enum lg_scenario	 scenario;
	const char		*scenario_name;
	struct sockaddr_in	 proxy;
	union lg_addr		 target;
	char			 proxy_str[300], target_str[300];
	bool			 have_proxy, have_target;
	enum lg_ptype		 ptype;
	bool			 ptype_set;
	const char		*path;
	char			 user[256], pass[256];
	size_t			 ulen, plen;
	bool			 auth;
	/* SOCKS5: client i logs in as user<i % auth_users> (0: as user) */
	long			 auth_users;
	/* SOCKS5: greeting, credentials and request in one write */
	bool			 pipeline;
	/* --proxy-header: a PROXY header first on each connection to the
	 * proxy, as a balancer in front of it would send */
	enum lg_pp		 proxy_header;
	long			 connections, window, payload;
	double			 rate;
	double			 duration, warmup, timeout;
	long long		 expect_size;	/* -1: unset */
	bool			 json;
	bool			 no_send;	/* tunnel: read only */
	/* tunnel --rr: --payload bytes out, the same back, then the next */
	bool			 rr;
	/* socks-handshakes --exchange: after each setup, one round trip of
	 * this many bytes (the payload) to an echo before the close; 0:
	 * none, the setup alone */
	long			 exchange;
	/* --tls: TLS to the proxy (an HTTPS proxy); --tls-resume: each
	 * client offers its last session ticket */
	bool			 tls, tls_resume;
	/* serve; --udp-echo is IPv4 only */
	union lg_addr		 s_http, s_echo, s_sink, s_udp, s_close;
	bool			 have_s_http, have_s_echo, have_s_sink;
	bool			 have_s_close;
	bool			 have_s_udp;
	long long		 tcp_source;	/* -1: the sink sends nothing */
	/* --write: bytes per send() of the source, the echo's buffer; 0:
	 * the defaults (64 KiB sends, a 16 KiB echo) */
	long			 s_write;
	/* --date: --http answers carry a Date field, as an origin with a
	 * clock must (RFC 9110 6.6.1); without it none, and a proxy in
	 * between adds one that the hop before it then reads. */
	bool			 s_date;
};

/* What a run counted; filled by a scenario, printed by main(). */
struct lg_result {
	uint64_t	 requests;	/* completed in the window */
	uint64_t	 up, down;	/* payload bytes in the window */
	uint64_t	 err[LG_ERR_MAX];
	double		 delivered_pct;	/* < 0: computed from the counts */
	double		 cpu_s, wall_s;	/* the process over the window */
	uint64_t	 retries;	/* keep-alive closed: reconnected */
	uint64_t	 tls_handshakes;	/* --tls, in the window */
	uint64_t	 tls_repeat;	/* of which by a client whose earlier
					 * handshake finished: could offer */
	uint64_t	 tls_offered;	/* of which offered a session */
	uint64_t	 tls_resumed;	/* of which resumed one */
	uint64_t	 pp_sent;	/* --proxy-header: whole headers sent,
					 * warm-up included */
	uint64_t	 pp_window;	/* of which in the window */
	bool		 stopped;	/* SIGINT/SIGTERM ended the window */
	const char	*note;		/* a why, for the human summary */
};

/* ---- loadgen.c ------------------------------------------------------ */
/* Set by SIGINT and SIGTERM in a client scenario: end the window now and
 * report what was counted. */
extern volatile sig_atomic_t	 lg_stop;

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t	 lg_now(void);
/* One latency sample into the run's histogram (no allocation). */
void		 lg_lat_add(uint64_t ns);
/* CPU seconds (user + system) this process used so far. */
double		 lg_cpu(void);
/* The length of <a>'s sockaddr, for bind() and connect(). */
socklen_t	 lg_addr_len(const union lg_addr *a);
/* The error class of errno value <err> (0: an early EOF). */
enum lg_err	 lg_err_of(int err);
/* The once-a-second line on stderr (a terminal, runs over 3 s). */
void		 lg_progress(const struct lg_opts *, const struct lg_result *,
		    uint64_t elapsed_ns);
/* Bytes a SOCKS5 reply (or UDP header) takes: 0 while the prefix cannot
 * tell, SIZE_MAX for an unknown ATYP. */
size_t		 lg_socks_reply_len(const uint8_t *p, size_t len);
/*
 * The PROXY header (--proxy-header) of the connection <fd> to the proxy,
 * naming its own ends as a balancer would name the client's: the source
 * is <fd>'s local address and port (getsockname), the destination the
 * proxy's. Written into <out> (LG_PP_MAX bytes); returns its length, or
 * -1 with errno. The caller sends it with the connection's first bytes.
 */
ssize_t		 lg_proxy_header(const struct lg_opts *, int fd, uint8_t *out);

/* ---- loadgen_tcp.c ---------------------------------------------------- */
/* Each scenario runs to the end of its window and fills <res>; it returns
 * 0, or -1 when it could not start (a message is on stderr). */
int		 lg_tcp_main(const struct lg_opts *, struct lg_result *);

/* ---- loadgen_tls.c ---------------------------------------------------- */
/* One client's TLS: its SSL while connected, its last session across
 * connections. */
struct lg_tls;

/* The client context (TLS 1.3, TLS_AES_128_GCM_SHA256, X25519); 0, or -1
 * with a message. */
int		 lg_tls_init(const struct lg_opts *);
void		 lg_tls_fini(void);
struct lg_tls	*lg_tls_new(void);
void		 lg_tls_free(struct lg_tls *);
/* A TLS client on the connected <fd> (offering the last session with
 * --tls-resume). 0, or -1 with errno. */
int		 lg_tls_start(struct lg_tls *, int fd);
/* One step of the handshake: 0 when done (counted in <res> when <count>),
 * -1 with errno EAGAIN and *events_out to wait for, or -1 with another
 * errno (EPROTO: a TLS error). */
int		 lg_tls_handshake(struct lg_tls *, uint32_t *events_out,
		    struct lg_result *res, bool count);
/* As recv() and send(): > 0 bytes, 0 at the end (read only), -1 with
 * errno (EAGAIN: try again after the next event). */
ssize_t		 lg_tls_read(struct lg_tls *, void *, size_t);
ssize_t		 lg_tls_write(struct lg_tls *, const void *, size_t);
/* Decrypted bytes OpenSSL holds that epoll cannot see. */
size_t		 lg_tls_pending(const struct lg_tls *);
/* close_notify (after a clean handshake), then the SSL is freed; the
 * socket stays the caller's, the session the client's. */
void		 lg_tls_close(struct lg_tls *);
/* "TLSv1.3 TLS_AES_128_GCM_SHA256" as the first handshake negotiated, or
 * NULL. */
const char	*lg_tls_seen(void);

/* ---- loadgen_udp.c ---------------------------------------------------- */
int		 lg_udp_main(const struct lg_opts *, struct lg_result *);

/* ---- loadgen_serve.c -------------------------------------------------- */
/* Serves until SIGINT or SIGTERM; returns the exit status. */
int		 lg_serve_main(const struct lg_opts *);

#endif
