/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * portico module ABI.
 *
 * A module is a shared object that exports one `struct pt_module` named
 * `pt_module_<name>`. The master dlopen()s it before forking, checks the ABI
 * numbers and build signature, hands it its own libconfig subtree, and every
 * worker inherits it. The core calls the module's hooks at fixed phases of
 * every connection or request; modules reach back into the core only through
 * the PT_API functions declared here.
 *
 * Nothing in this header may change meaning within one PT_ABI_MAJOR. New
 * fields take a reserved slot and bump PT_ABI_MINOR.
 */
#ifndef PORTICO_MODULE_H
#define PORTICO_MODULE_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <libconfig.h>

#define PT_API __attribute__((visibility("default")))

#define PT_ABI_MAJOR 1
#define PT_ABI_MINOR 9

/*
 * The build signature changes whenever a structure a module can see changes
 * size. A module built against other headers is refused at load time.
 */
#define PT_BUILD_SIG                                                    \
	((uint32_t)(sizeof(struct pt_req) << 16 ^ sizeof(struct pt_module) \
	    << 8 ^ sizeof(struct pt_transport) ^ sizeof(struct pt_timer)  \
	    << 4 ^ sizeof(struct pt_io) << 20 ^ sizeof(struct pt_post)     \
	    << 12 ^ PT_ABI_MAJOR << 28))

struct pt_conn;
struct pt_worker;

/* Where in the life of a transaction a hook runs, in this order. */
enum pt_phase {
	PT_PHASE_ACCEPT = 0,	/* socket accepted, peer address known */
	PT_PHASE_AUTH,		/* credentials parsed */
	PT_PHASE_ACCESS,	/* target host, port, method, user known */
	PT_PHASE_DIAL,		/* target resolved, before connect() */
	PT_PHASE_ESTABLISHED,	/* upstream connected, tunnel open */
	PT_PHASE_LOG,		/* finished: status, bytes, duration final */
	/* 1.1: each new destination of a UDP association, synchronous:
	 * host, port and target name the datagram's destination while the
	 * hooks run; AGAIN counts as DENY. The verdict is kept per
	 * association and destination, so each destination is judged once.
	 * proto is PT_PROTO_UDP. An address is judged with host its text
	 * and target set. A name is judged twice: before it is resolved
	 * (host the name, target.ss_family AF_UNSPEC: a hook judging by
	 * address answers CONTINUE then), and with target the address it
	 * resolved to; both must pass. DENY, ERROR or AGAIN drops the
	 * datagrams to that destination (counted, the association goes on;
	 * no pt_conn_resume follows an AGAIN here, and pt_conn_answer has
	 * no effect). The cache is small: a client talking to many
	 * destinations at once may see one judged again. Worker thread;
	 * the strings seen last for the hook call only. A module that
	 * judges every datagram (a packet rate) sets pt_module.datagram
	 * (1.3) instead. */
	PT_PHASE_DATAGRAM,
	/* 1.1: once per client connection, after its last LOG, before its
	 * memory goes back to the pool. The verdict is ignored and every
	 * CLOSE hook runs; AGAIN counts as CONTINUE. A module that still
	 * owes a pt_conn_resume() must still make it. An HTTP connection
	 * closed idle between requests has its request fields reset. */
	PT_PHASE_CLOSE,
	PT_PHASE_COUNT
};

/*
 * What a hook answers. The core, never the module, turns DENY into bytes on
 * the wire (403/407, a SOCKS reply code, or a closed TCP connection).
 * AGAIN means the module started asynchronous work and will call
 * pt_conn_resume() exactly once later, with CONTINUE to go on to the next
 * hook or with the verdict that ends the phase. It must do so even if the
 * connection closes meanwhile (its LOG hook runs first): the core keeps
 * the connection's memory until then.
 */
enum pt_verdict {
	PT_VERDICT_CONTINUE = 0,
	PT_VERDICT_ALLOW,	/* skip the remaining hooks of this phase */
	PT_VERDICT_DENY,
	PT_VERDICT_AGAIN,
	PT_VERDICT_ERROR
};

enum pt_proto {
	PT_PROTO_TCP = 0,
	PT_PROTO_HTTP,
	PT_PROTO_CONNECT,
	PT_PROTO_SOCKS5,
	PT_PROTO_SOCKS4,
	PT_PROTO_WEBSOCKET,
	PT_PROTO_UDP,		/* 1.1: a SOCKS5 UDP ASSOCIATE session */
	/* 1.3: a request to a status listener (GET /metrics, /status):
	 * method and path set, no host, port 0, no target. Its hooks are
	 * ACCEPT, ACCESS (a DENY answers 403), LOG and CLOSE; never AUTH,
	 * DIAL or ESTABLISHED. status is the HTTP status answered. */
	PT_PROTO_STATUS
};

/* A direction of a connection's data (1.1; byte budgets, datagrams). */
enum pt_dir {
	PT_DIR_UP = 0,		/* client -> upstream */
	PT_DIR_DOWN = 1		/* upstream -> client */
};

/* A slice of bytes owned by someone else (the input buffer, the config). */
struct pt_str {
	const char	*ptr;
	size_t		 len;
};

/*
 * One transaction, protocol-neutral so one ACL or log module serves every
 * protocol. Filled by the core as the phases advance; hooks only read it.
 */
struct pt_req {
	enum pt_proto		 proto;
	struct pt_str		 method;	/* HTTP method, or empty */
	/* The target host as the client named it, in the one form every
	 * step reads (the core refuses any other first): a name in lower
	 * case of letters, digits, '-', '_' and dots, without a final dot;
	 * an address in text (dotted decimal, RFC 5952), however the client
	 * wrote it ("0177.1" is "127.0.0.1"). */
	struct pt_str		 host;
	uint16_t		 port;
	/* From AUTH on: a user some module verified, or empty. AUTH hooks
	 * see the name the client offered (Basic, RFC 1929); when no AUTH
	 * hook applies to the listener that name is dropped after AUTH,
	 * and a SOCKS4 USERID is never a user: a name nobody checked is
	 * only a claim. A user set with pt_req_set_user stays. */
	struct pt_str		 user;
	struct pt_str		 password;	/* during AUTH only */
	struct sockaddr_storage	 peer;		/* client address */
	struct sockaddr_storage	 local;		/* our address on the client leg */
	/* The address DIAL judges and the connect uses, from DIAL on;
	 * AF_UNSPEC again when DIAL refused it (nothing was reached). */
	struct sockaddr_storage	 target;
	int			 status;	/* HTTP status or SOCKS reply */
	uint64_t		 bytes_in;	/* client -> upstream */
	uint64_t		 bytes_out;	/* upstream -> client */
	uint64_t		 start_ms;	/* monotonic, at accept */
	uint64_t		 end_ms;	/* monotonic, at LOG */
	const char		*error;		/* why it failed, or NULL */
	/* ---- 1.1, in what were reserved slots ---- */
	/* HTTP: the request-target's path and query as received ("/a?b";
	 * "*" for OPTIONS *); empty for CONNECT and the other protocols.
	 * Set from AUTH on, valid until the request's LOG. */
	struct pt_str		 path;
	/* The decision label (pt_req_set_label), or empty. */
	struct pt_str		 label;
	/* The listener's `name` (its address when it has none); never
	 * NULL. Owned by the configuration: valid for the connection's
	 * life. */
	const char		*listener;
	/* Numbered per worker from 1: each HTTP request, tunnel, SOCKS or
	 * TCP session and UDP association is one transaction. */
	uint64_t		 txn;
	int32_t			 listener_idx;	/* index in `listeners` */
	/* ---- 1.4, in what was a reserved slot ---- */
	/* HTTP: the bytes of response heads in bytes_out (interim ones and
	 * the CONNECT or 101 answer included), so bytes_out - resp_head is
	 * the body, or the tunnel's bytes; 0 for the other protocols. */
	int32_t			 resp_head;
	void			*reserved[1];
};

typedef enum pt_verdict (*pt_hook_fn)(struct pt_conn *conn,
    struct pt_req *req, void *modctx);

struct pt_hook {
	enum pt_phase	 phase;
	int		 priority;	/* lower runs first */
	pt_hook_fn	 fn;
};

/*
 * A transport replaces plain socket I/O on one listener (the tls module),
 * or (1.7, pt_module.upstream_transport) on one upstream leg.
 * read/write return bytes moved, or -errno (-EAGAIN when the transport needs
 * the socket readable or writable: it says which through *want_out, set to
 * EPOLLIN or EPOLLOUT). handshake returns 0 when done, -EAGAIN to be called
 * again, or another -errno.
 */
struct pt_transport {
	const char	*name;
	int		(*handshake)(struct pt_conn *, int fd, void *tctx,
			    uint32_t *want_out);
	ssize_t		(*read)(struct pt_conn *, int fd, void *tctx,
			    void *buf, size_t len, uint32_t *want_out);
	ssize_t		(*write)(struct pt_conn *, int fd, void *tctx,
			    const void *buf, size_t len, uint32_t *want_out);
	/* 0 when done, -EAGAIN when it must write first (a TLS
	 * close_notify; *want is then not available, so the core waits for
	 * EPOLLOUT and calls again: on the next EPOLLOUT edge, or after
	 * 50 ms without one, for header_timeout at most, then closes the
	 * connection), or another -errno. */
	int		(*shutdown)(struct pt_conn *, int fd, void *tctx);
	void		(*free)(struct pt_conn *, void *tctx);
	/* 1.1, optional: bytes the transport holds that read() can return
	 * without the socket becoming readable (SSL_pending). The core
	 * reads again while it is non-zero before waiting for an event.
	 * Worker thread, after the handshake; cheap, never blocking. */
	size_t		(*pending)(struct pt_conn *, void *tctx);
	/*
	 * 1.3, optional: which directions of the socket carry the
	 * connection's plain bytes now, PT_PLAIN_RX and/or PT_PLAIN_TX, or
	 * 0 (the default; what a transport without this call gives). A
	 * TLS transport with kTLS says RX when the kernel decrypts what the
	 * socket receives and TX when it encrypts what is written to it.
	 * In a tunnel relayed with relay.method "splice", the core then
	 * moves bytes with splice() on <fd> itself, past read() and
	 * write(): from the socket when RX is set and pending() is 0, into
	 * it when TX is set; otherwise it calls read() and write() as
	 * before, so a transport may answer per call. Once TX was said it
	 * must hold for the connection's life (spliced bytes may wait in a
	 * pipe for the socket). A splice from the socket that fails with
	 * EINVAL or EIO (kTLS: a record that is not data, such as an alert
	 * or a key update, which splice cannot return) is followed by a
	 * read() on the same socket, which must deal with that record;
	 * shutdown() still ends the connection (close_notify). Worker
	 * thread, after the handshake; cheap, never blocking.
	 */
	unsigned	(*plain)(struct pt_conn *, int fd, void *tctx);
	void		*reserved[2];
};

/* pt_transport.plain: the socket receives (RX) or sends (TX) the
 * connection's bytes as they are. */
#define PT_PLAIN_RX	0x1u
#define PT_PLAIN_TX	0x2u

/*
 * 1.7: what a client TLS session to an upstream needs (an https parent),
 * handed to pt_module.upstream_conf in the master. The strings belong to
 * the caller and last only for the call: keep a copy of what is needed
 * later.
 */
struct pt_upstream_tls {
	const char	*ca_file;	/* PEM bundle; NULL: the system's */
	bool		 verify;	/* verify the peer's chain and name */
	const char	*file;		/* config file and line, for errors */
	int		 line;
	void		*reserved[2];
};

/* Handed to conf(): where the module's configuration came from. */
struct pt_modconf {
	const char	*file;		/* configuration file being loaded */
	const char	*module_dir;
	void		*ctx;		/* out: the module's parsed config */
	/* 1.1, for listener_conf() only: which listener, and its name (its
	 * address when it has none). */
	int		 listener_idx;
	const char	*listener;
	/* 1.2, out, when conf() or listener_conf() refuses: the setting the
	 * error is about (an element inside the module's own subtree, such
	 * as one rule of a list). The core then reports that setting's
	 * file and line instead of the module entry's (or the listener
	 * group's). NULL (the default): the entry's. */
	const config_setting_t *where;
	void		*reserved[1];
};

/*
 * 1.3: pt_module.datagram, called for every datagram of a SOCKS5 UDP
 * association, see there.
 */
typedef enum pt_verdict (*pt_datagram_fn)(struct pt_conn *conn,
    enum pt_dir dir, size_t len, void *modctx);

/* pt_module.flags */
/* The module checks credentials: a SOCKS5 listener it applies to offers
 * username/password (RFC 1929) and, unless pt_conn_need_credentials()
 * says otherwise for a connection, only that. A module built for ABI 1.0
 * counts as having it when it hooks AUTH (what 1.0 did, for every
 * listener). */
#define PT_MODF_CREDENTIALS	0x01
/* 1.4: the module reads User-Agent and Referer at LOG (an access log).
 * While any loaded module has this flag, the core keeps both of every
 * HTTP request (CONNECT and WebSocket included), from its head to its
 * LOG, at most PT_LOG_HEADER_MAX bytes each (longer is cut), and
 * pt_req_header() finds them in every phase of the request, LOG
 * included, without scanning the head. Without it, a module that wants
 * them at LOG must copy them itself before DIAL ends. */
#define PT_MODF_LOG_HEADERS	0x02
#define PT_LOG_HEADER_MAX	256

struct pt_module {
	uint32_t		 abi_major;
	uint32_t		 abi_minor;
	uint32_t		 build_sig;
	const char		*name;
	uint32_t		 flags;

	/* Master, at load and every reload: validate the module's own
	 * subtree and keep what it needs in mc->ctx. Non-zero refuses the
	 * configuration; *errstr then names the problem (the core adds the
	 * file and line of <node>). */
	int	(*conf)(struct pt_modconf *mc, const config_setting_t *node,
		    const char **errstr);
	/* Master, to release a ctx made by conf() (old config, on reload). */
	void	(*conf_free)(void *ctx);
	/* Master, before forking, for every configuration the master
	 * adopts (start-up and each good reload); exit_master runs when the
	 * master drops that configuration (after a reload, at exit). */
	int	(*init_master)(void *ctx);
	/* Worker, after privileges are dropped, before the loop starts. */
	int	(*init_worker)(struct pt_worker *w, void *ctx);
	void	(*exit_worker)(struct pt_worker *w, void *ctx);
	/* Worker and master, on SIGUSR1: reopen the module's files. */
	void	(*reopen)(void *ctx);
	void	(*exit_master)(void *ctx);

	const struct pt_hook		*hooks;		/* zero-ended */
	const struct pt_transport	*transport;	/* or NULL */
	/* Bytes of per-connection state the core keeps for this module,
	 * zeroed at accept, reachable with pt_conn_ctx(). */
	size_t			 conn_ctx_size;

	/* ---- 1.1, in what were reserved slots ---- */
	/*
	 * Master, after conf(), once per listener (mc->listener_idx): <node>
	 * is the listener's group named after the module (`tls = {...}`),
	 * or NULL when it has none. Returns 0 when the module applies to the
	 * listener, with its per-listener state in *lctx_out (released with
	 * listener_conf_free; pt_conn_listener_ctx() finds it), 1 when it
	 * does not apply (none of its hooks runs for that listener's
	 * connections), or -1 with *errstr set (the core adds file:line).
	 * NULL: the module applies to every listener, and a listener group
	 * named after it is a configuration error.
	 */
	int	(*listener_conf)(struct pt_modconf *mc,
		    const config_setting_t *node, void *modctx,
		    void **lctx_out, const char **errstr);
	void	(*listener_conf_free)(void *lctx);
	/* Worker: it stops accepting (reload, SIGQUIT); connections in
	 * flight go on. A module that buffers flushes here. Once per
	 * worker; also at a fast stop (SIGTERM), before the connections
	 * are closed. */
	void	(*on_drain)(struct pt_worker *w, void *ctx);

	/* ---- 1.3, in what was a reserved slot ---- */
	/*
	 * Optional: judges each datagram of a SOCKS5 UDP association the
	 * module applies to (its listener), in both directions: <dir> UP
	 * for one the client sent (after the core checked that it is the
	 * client's, whole and well formed, before its destination is
	 * judged by PT_PHASE_DATAGRAM or looked up), DOWN for a reply
	 * about to go to the client; <len> is the payload, without the
	 * SOCKS header (what byte budgets count). Worker thread, from the
	 * relay's read callback; synchronous. CONTINUE passes it on to the
	 * next module's callback (configuration order), ALLOW passes it
	 * without asking the others, DENY (and ERROR, AGAIN) drops it: the
	 * core counts it (a status listener's
	 * udp_datagrams_dropped_total{reason="module"}) and it is not
	 * charged to the byte budget. Nothing is answered and no pt_conn_resume follows; the
	 * module may read the clock, use its own state (pt_conn_ctx),
	 * pt_counter_add and pt_log/pt_clog, and nothing that changes the
	 * connection (pt_conn_close, pt_conn_answer, pt_conn_budget_*,
	 * pt_req_set_*): the relay is in the middle of a batch. It
	 * runs once per datagram at packet rates: keep it to a few hundred
	 * nanoseconds, no system call beyond a vDSO clock read. NULL (and
	 * any module built before 1.3): the relay never calls anything per
	 * datagram, and when no module has it the relay skips the check
	 * (one flag per association, read per datagram).
	 */
	pt_datagram_fn		 datagram;

	/* ---- 1.7, in what were the last reserved slots ---- */
	/*
	 * A client TLS session on the upstream leg (an https parent: the
	 * core connects with TCP, then the module speaks TLS over that
	 * socket as the client). The core never links a TLS library: it
	 * finds the first loaded module (configuration order) that sets all
	 * four of these and declares minor 7 or more, and drives the
	 * session through upstream_transport as it drives a listener's
	 * transport on the client leg.
	 *
	 * upstream_conf: master, while a configuration loads (start-up,
	 * -t, each reload), once per upstream that wants TLS: builds what
	 * every session to it shares (an SSL_CTX, the CAs loaded; every
	 * file is read here, never in a worker) into *uctx_out. 0, or -1
	 * with *errstr set (the module's text, valid until its next call;
	 * the core adds the file and line, which <u> also carries for the
	 * module's own warnings).
	 *
	 * upstream_conf_free: master, when that configuration is dropped
	 * (replaced by a reload, failed to load, at exit). Takes NULL.
	 * Workers keep the copy they forked with.
	 */
	int	(*upstream_conf)(const struct pt_upstream_tls *u,
		    void **uctx_out, const char **errstr);
	void	(*upstream_conf_free)(void *uctx);
	/*
	 * Worker, once the upstream socket is connected: a session for one
	 * connection from <uctx> (what upstream_conf made), in *tctx_out,
	 * owned by the module until upstream_transport's free(). <sni> is
	 * the upstream's host as configured: a name (lower case, no final
	 * dot), sent as SNI and, when verifying, checked against the
	 * certificate; or an address in text (no brackets), checked as an
	 * address and never sent as SNI. NULL only when not verifying (no
	 * SNI then). 0, or -errno with nothing left to free (-ENOMEM,
	 * -EINVAL). No I/O here: the socket comes with the first
	 * handshake() call.
	 */
	int	(*upstream_new)(struct pt_conn *conn, void *uctx,
		    const char *sni, void **tctx_out);
	/*
	 * The operations on such a session, with <tctx> from upstream_new
	 * and <fd> the upstream socket, as a listener's transport has them
	 * on the client leg: handshake (the core calls it on the socket's
	 * events, bounded by connect_timeout; -EPROTO for a failed
	 * handshake or verification, which the module logs with its
	 * reason), read, write, shutdown, free (once, with the socket still
	 * open; no close_notify when pt_conn_cut says so), pending and
	 * plain (may always say 0: the core then never splices that leg).
	 */
	const struct pt_transport *upstream_transport;
	/* No reserved slot is left: a field added later needs a new
	 * structure this one points to, or a major version. */
};

#define PT_MODULE_INIT                                                  \
	.abi_major = PT_ABI_MAJOR, .abi_minor = PT_ABI_MINOR,           \
	.build_sig = PT_BUILD_SIG

/* ---- core functions a module may call (worker unless said) ---------- */

enum pt_log_level {
	PT_LOG_ERR = 3,
	PT_LOG_WARNING = 4,
	PT_LOG_NOTICE = 5,
	PT_LOG_INFO = 6,
	PT_LOG_DEBUG = 7
};

/* Master and worker: one line to the error log, with one write(). Safe
 * from any thread, a module's own threads included (no shared buffer);
 * not from a signal handler. */
PT_API void	pt_log(int level, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
/* Same, with ": strerror(err)" appended; <err> is a positive errno. */
PT_API void	pt_log_err(int level, int err, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));
/* Same, prefixed with the connection id and peer address. */
PT_API void	pt_clog(struct pt_conn *conn, int level, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));

/* The module's per-connection state (conn_ctx_size bytes, zeroed). */
PT_API void	*pt_conn_ctx(struct pt_conn *conn, const struct pt_module *mod);
PT_API uint64_t	 pt_conn_id(const struct pt_conn *conn);
/* Ends an AGAIN: runs the rest of the phase, or applies <verdict> when it
 * is not CONTINUE. Safe to call from any loop callback, never from the hook
 * that returned AGAIN. */
PT_API void	 pt_conn_resume(struct pt_conn *conn, enum pt_verdict verdict);

/* Closes the connection from a loop callback (not from inside a hook:
 * return DENY there). LOG and CLOSE run as for any close; <reason> (a
 * static string) becomes req->error when none is set. */
PT_API void	 pt_conn_close(struct pt_conn *conn, const char *reason);
/* 1.5: whether the core is cutting the connection short: on its own
 * account (shutdown_timeout after a drain, a fast stop), or because the
 * other side reset mid-transaction (a client's reset goes on to the
 * origin or target, theirs to the client). Its sockets are reset, and a
 * transport's free() then writes no close of its own (a TLS close_notify
 * would tell the client the data ended where it was cut). Any time;
 * false for a connection that ends otherwise. */
PT_API bool	 pt_conn_cut(const struct pt_conn *conn);

/* Monotonic milliseconds as the worker's loop last read them. */
PT_API uint64_t	 pt_now_ms(void);
/* Worker slot number (0..workers-1). */
PT_API int	 pt_worker_id(const struct pt_worker *w);

/* One-shot timers on the worker's loop. The module owns the storage. */
struct pt_timer;
typedef void (*pt_timer_fn)(struct pt_timer *t, void *arg);
struct pt_timer {
	uint64_t	 when;		/* private to the core */
	unsigned	 heap_idx;	/* private; 0 = not armed */
	uint32_t	 later;		/* private (was padding, 1.4 layout) */
	pt_timer_fn	 fn;
	void		*arg;
};
PT_API void	 pt_timer_start(struct pt_timer *t, uint64_t after_ms,
		    pt_timer_fn fn, void *arg);
PT_API void	 pt_timer_stop(struct pt_timer *t);

/* ---- 1.1: the module's own descriptors on the worker's loop ---------- */

/*
 * A descriptor the module owns, watched by the worker's epoll (level-
 * triggered). The module owns the storage and keeps it valid until
 * pt_io_stop(); it closes the descriptor itself, after pt_io_stop().
 * <fn> runs on the loop with the epoll events (EPOLLIN, EPOLLOUT,
 * EPOLLERR, EPOLLHUP). Worker thread only, from init_worker to
 * exit_worker (stop everything there).
 * <events> may hold EPOLLIN, EPOLLOUT, EPOLLPRI and EPOLLRDHUP (others:
 * -EINVAL); 0 keeps the registration but waits only for errors and
 * hang-ups. Zero the structure before the first pt_io_start();
 * pt_io_modify() on a stopped io is -EINVAL, pt_io_stop() on one a
 * no-op. The storage may be freed or reused as soon as pt_io_stop()
 * returns, even from another io's callback.
 */
struct pt_io;
typedef void (*pt_io_fn)(struct pt_io *io, uint32_t events, void *arg);
struct pt_io {
	int		 fd;		/* read-only for the module */
	uint32_t	 events;	/* read-only: the interest set */
	pt_io_fn	 fn;
	void		*arg;
	void		*priv[3];	/* the core's */
};
/* 0 or -errno. */
PT_API int	 pt_io_start(struct pt_io *io, int fd, uint32_t events,
		    pt_io_fn fn, void *arg);
PT_API int	 pt_io_modify(struct pt_io *io, uint32_t events);
PT_API void	 pt_io_stop(struct pt_io *io);

/*
 * Work handed back to the worker's loop from another thread (a module's
 * verification thread): <fn>(<arg>) runs on the worker thread soon after.
 * The module owns <p> and must not touch it again until <fn> runs. Safe
 * from any thread of the worker process, and from a signal handler; with
 * pt_log it is the only call allowed off the worker thread. Posting a
 * pending <p> again is undefined. Posts run in the order they were made
 * (per posting thread); <fn> may post <p> again. No allocation: a module
 * embeds one pt_post per outstanding piece of work. Threads a module
 * starts are its own: start them in init_worker, and stop and join them
 * in exit_worker; posts made after exit_worker began never run.
 */
struct pt_post;
typedef void (*pt_post_fn)(void *arg);
struct pt_post {
	struct pt_post	*next;		/* the core's */
	pt_post_fn	 fn;
	void		*arg;
};
PT_API void	 pt_post(struct pt_post *p, pt_post_fn fn, void *arg);

/*
 * The CPUs the worker process may use before it pinned itself (the
 * master's affinity). A module thread that should not share its worker's
 * CPU sets this (or a subset) with pthread_attr_setaffinity_np() before
 * pthread_create(), or with pthread_setaffinity_np() from the thread:
 * threads otherwise inherit the worker's pin. Worker thread, from
 * init_worker on. Returns how many CPUs are set.
 *
 *	cpu_set_t set; pthread_attr_t a;
 *	pt_worker_cpuset(&set);
 *	pthread_attr_init(&a);
 *	pthread_attr_setaffinity_np(&a, sizeof(set), &set);
 *	pthread_create(&th, &a, run, arg);
 */
#ifdef CPU_SETSIZE
PT_API int	 pt_worker_cpuset(cpu_set_t *out);
#endif

/* ---- 1.1: how a refusal is answered ---------------------------------- */

/*
 * Set by a hook before it returns DENY (or before pt_conn_resume() with
 * DENY): the core writes the answer, the module never does. Zero fields
 * keep the core's default for the phase (HTTP: 407 with a challenge at
 * AUTH, 403 elsewhere; SOCKS5: 0x02 "not allowed by ruleset"; RFC 1929:
 * status 1). Strings must stay valid until the connection's CLOSE (use
 * the module's configuration or a static string); the core copies none.
 */
struct pt_answer {
	int		 http_status;	/* 403, 407, 429, 503, ... or 0 */
	uint32_t	 retry_after;	/* seconds, for 429/503; 0: none */
	/* 407: Proxy-Authenticate: Basic realm="<realm>" (default
	 * "portico"); quotes and backslashes are escaped by the core. */
	const char	*realm;
	/* SOCKS5 REP code, or 0; a DENY at AUTH sends it as the RFC 1929
	 * status instead (any non-zero status is a failure). SOCKS4 has
	 * one refusal code (0x5b) and ignores it. */
	uint8_t		 socks_reply;
	const char	*reason;	/* short, for the log (req->error) */
};
/*
 * Copies <a> (NULL: back to the defaults). Worker thread, from a hook or
 * from the loop callback that then calls pt_conn_resume(DENY). The answer
 * holds for the verdict that ends the current phase: the core forgets it
 * when the next phase starts and between HTTP keep-alive requests. It
 * shapes DENY only (an ERROR is 500, SOCKS5 0x01); an http_status outside
 * 400-599 keeps the default. A refusal at ACCEPT closes the connection
 * (no request to answer yet) and uses only <reason>.
 */
PT_API void	 pt_conn_answer(struct pt_conn *conn,
		    const struct pt_answer *a);

/* ---- 1.1: request fields and names ----------------------------------- */

/*
 * HTTP only, from AUTH to DIAL: the value of request header <name>
 * (case-insensitive) as received, the first when repeated, without the
 * white space around it. Returns false when absent or outside those
 * phases. The slice points into the request's head (the core's) and
 * stays valid until the phase that read it ends. Worker thread.
 * 1.4: User-Agent and Referer also at LOG (and from the head's parse on)
 * while a loaded module has PT_MODF_LOG_HEADERS; then the slice is the
 * core's copy, valid until the request's LOG ends.
 */
PT_API bool	 pt_req_header(struct pt_conn *conn, const char *name,
		    struct pt_str *value_out);
/*
 * Sets the user (an AUTH hook that verified a token, a transport that
 * verified a client certificate): copied into the connection, at most
 * PT_NAME_MAX bytes (longer is cut), then seen in req->user by every
 * later phase, LOG and CLOSE. Set before any transaction (from a
 * transport's handshake or an ACCEPT hook) it is the connection's user:
 * every transaction on the connection, each HTTP keep-alive request
 * included, starts with it. Set from AUTH on it is the current
 * transaction's (for HTTP keep-alive, that request's only), and the
 * protocol's own credentials (Basic, RFC 1929) replace it the same way.
 * Worker thread, any phase. When the worker is out of memory the value
 * is dropped (the error log says so).
 */
#define PT_NAME_MAX	255
PT_API void	 pt_req_set_user(struct pt_conn *conn, const char *user,
		    size_t len);
/* Sets req->label (the ACL rule that decided): copied, at most
 * PT_NAME_MAX bytes; a later call replaces it. Like the user, per
 * request for HTTP. Worker thread. */
PT_API void	 pt_req_set_label(struct pt_conn *conn, const char *label,
		    size_t len);
/*
 * Small named values for later phases and other modules ("class" =
 * "per-user"): names (NUL-terminated) up to 15 bytes, values up to 63,
 * PT_TAGS_MAX per connection, copied. Setting an existing name replaces
 * its value; an empty value removes it. Returns 0, or -ENOSPC (no free
 * slot, or no memory) / -EINVAL (empty or long name, long value). Tags
 * are cleared between HTTP keep-alive requests, after LOG. pt_req_tag's
 * slice stays valid until the tag is set again or cleared. Worker
 * thread.
 */
#define PT_TAGS_MAX	4
PT_API int	 pt_req_set_tag(struct pt_conn *conn, const char *name,
		    const char *value, size_t len);
PT_API bool	 pt_req_tag(struct pt_conn *conn, const char *name,
		    struct pt_str *value_out);
/*
 * From an ACCEPT hook: whether this connection must present credentials.
 * Decides the SOCKS5 methods offered (username/password when true,
 * no-auth when false); HTTP is unaffected (the AUTH hook judges).
 * Default: true when a PT_MODF_CREDENTIALS module applies to the
 * listener.
 */
PT_API void	 pt_conn_need_credentials(struct pt_conn *conn, bool need);
/* The listener state listener_conf() made for <mod> (usually the
 * caller's own descriptor), or NULL when it made none or <mod> is not
 * loaded. Worker thread, any hook or transport call; the state belongs
 * to the module (listener_conf_free releases it in the master) and
 * stays valid for the connection's life; treat it as read-only, as
 * every worker shares the configuration it forked with. */
PT_API void	*pt_conn_listener_ctx(struct pt_conn *conn,
		    const struct pt_module *mod);

/* ---- 1.1: byte budgets ------------------------------------------------ */

/*
 * Limits how many more bytes the core reads in direction <dir> of the
 * connection (tunnels, HTTP bodies, UDP datagrams of an association).
 * When the budget is spent the core stops reading that direction,
 * without polling, and calls <spent> once (from the loop); reading goes
 * on after pt_conn_budget_add() (from a timer, say). UINT64_MAX: no
 * limit (the default). Worker thread, any phase from ACCEPT on.
 *
 * What counts is what the core reads from the direction's source: every
 * byte of a tunnel (CONNECT, WebSocket, SOCKS, TCP), HTTP request heads
 * and bodies (UP) and response heads and bodies (DOWN), and the payload
 * of each UDP datagram relayed (not its SOCKS header). Bytes portico has
 * already read may still be written after the budget is spent. The SOCKS
 * handshake is not counted. Budgets belong to the connection: they last
 * across HTTP keep-alive requests until set again.
 *
 * pt_conn_budget_set() replaces the budget and the callback (NULL: none)
 * and forgets any debt; 0 makes the direction spent at once (<spent> is
 * then called too). pt_conn_budget_add() adds <bytes> (adding UINT64_MAX
 * lifts the limit; other sums stop just below it). A datagram is read
 * whole, so the one that passes the budget leaves a debt that later
 * additions pay first: the long-run rate stays exact.
 *
 * <spent> runs on the worker's loop after the events of the round in
 * which the budget reached 0, never from inside a hook or the core's
 * I/O, so it may call pt_conn_budget_add(), arm timers or
 * pt_conn_close(); it is not called when the budget got more first or
 * the connection closed. <arg> is the module's. Both calls are no-ops
 * once the connection is closing (in the LOG and CLOSE hooks its close
 * runs): a module stops its own timers there, before the connection's
 * memory is reused.
 */
typedef void (*pt_budget_fn)(struct pt_conn *conn, enum pt_dir dir,
    void *arg);
PT_API void	 pt_conn_budget_set(struct pt_conn *conn, enum pt_dir dir,
		    uint64_t bytes, pt_budget_fn spent, void *arg);
PT_API void	 pt_conn_budget_add(struct pt_conn *conn, enum pt_dir dir,
		    uint64_t bytes);

/* ---- 1.1: counters in the master's totals ----------------------------- */

/*
 * Master, from conf() or init_master: a named counter, one per worker
 * slot in shared memory, reported in the master's totals line as
 * <name>=<sum> and by a status listener as portico_module_<name>_total.
 * Registering a name again (a reload) returns the same id.
 * Names: [a-z0-9_], at most 31 bytes. Returns an id >= 0 or -errno
 * (-ENOSPC beyond PT_COUNTERS_MAX, all modules and labels together; 64
 * before ABI 1.3).
 */
#define PT_COUNTERS_MAX	1024
PT_API int	 pt_counter_register(const char *name);
/*
 * 1.3: the same with one label: a status listener shows every counter of
 * <name> in one family, portico_module_<name>_total{<key>="<value>"}
 * (one ACL rule, one limits class). <key> as a name; <value> 1 to 64
 * bytes of printable ASCII without space, '"' or '\\'. The same
 * (name, key, value) returns the same id. Labelled counters are not in
 * the master's totals line. -EINVAL for a bad name, key or value.
 */
PT_API int	 pt_counter_register_label(const char *name, const char *key,
		    const char *value);
/* Worker thread: adds <delta> to this worker slot's counter <id> (an id
 * the master registered before forking; others are ignored). A worker
 * that registers gets -EPERM. */
PT_API void	 pt_counter_add(int id, int64_t delta);

/* ---- 1.6: behind a balancer, and out through chosen addresses ---------- */

/*
 * A listener with `proxy_protocol` takes the client's address from the
 * PROXY header a balancer sends (HAProxy's PROXY protocol, v1 or v2):
 * pt_req.peer is then the client the header names, and this is the
 * address the connection itself came from (the balancer's). NULL when
 * the listener has no proxy_protocol, or the header said LOCAL or
 * UNKNOWN (pt_req.peer is then the connection's own). Valid for the
 * connection's life. Worker thread, any phase.
 *
 * The header's AUTHORITY and UNIQUE_ID TLVs (v2) are read-only tags of
 * every transaction of the connection: pt_req_tag(conn,
 * "proxy_authority") and pt_req_tag(conn, "proxy_unique_id"), any
 * length up to 255 bytes (the 63-byte limit is pt_req_set_tag's).
 */
PT_API const struct sockaddr *pt_conn_balancer(struct pt_conn *conn);

/*
 * Egress: the local address an outgoing connection (to an origin, a
 * tunnel's target, the UDP relay's socket) is bound to. The core reads a
 * group's `egress` and `egress_stable` keys (portico.conf(5): an
 * address, a pair [IPv4, IPv6], an IPv6 prefix, or "same") into an
 * opaque choice, in the master, from conf() or listener_conf():
 * pt_egress_conf() stores it in *out (NULL when the group has no
 * `egress`) and returns 0, or returns -1 with *errstr set and mc->where
 * at the offending setting. pt_egress_free() releases one (conf_free).
 *
 * pt_conn_set_egress(), from any hook before DIAL ends, makes <e> the
 * connection's choice for its next outgoing connection (for HTTP, the
 * current request's): it wins over the listener's `egress`; NULL goes
 * back to the listener's. pt_conn_egress() is the address the
 * transaction's outgoing connection was bound to, from ESTABLISHED on
 * (LOG included), or NULL when the kernel chose it or none was made.
 */
struct pt_egress;
PT_API int	 pt_egress_conf(struct pt_modconf *mc,
		    const config_setting_t *group, struct pt_egress **out,
		    const char **errstr);
PT_API void	 pt_egress_free(struct pt_egress *e);
/* <e> as text for a module's log or test: the egress as configured,
 * canonical ("127.0.0.2", "192.0.2.1,2001:db8::1", "2001:db8:1::/64",
 * "same"), then " stable=user" or " stable=source" when it has one.
 * Writes at most <len> bytes, NUL included; returns the text's length
 * (snprintf's). Any thread. */
PT_API int	 pt_egress_format(const struct pt_egress *e, char *buf,
		    size_t len);
PT_API void	 pt_conn_set_egress(struct pt_conn *conn,
		    const struct pt_egress *e);
PT_API const struct sockaddr *pt_conn_egress(struct pt_conn *conn);

/* ---- 1.7: parent proxies ------------------------------------------------ */

/*
 * Traffic goes through parent proxies (the configuration's `parents`)
 * by a `via` choice: a parent's name, a list tried in order, or a group
 * with a strategy (portico.conf(5), PARENT PROXIES). The core reads a
 * group's `via` key into an opaque choice, in the master, from conf() or
 * listener_conf(): pt_via_conf() stores it in *out (NULL when the group
 * has no `via`) and returns 0, or returns -1 with *errstr set and
 * mc->where at the offending setting (an unknown parent's name among
 * them: names are looked up in the `parents` of the file <group> was
 * read from). pt_via_free() releases one (conf_free).
 *
 * pt_conn_set_via(), from an ACCESS hook (or earlier), makes <v> the
 * route of the connection's current transaction: it wins over the
 * listener's `via`; NULL goes back to the listener's. The route is
 * taken when ACCESS ends: a choice made at DIAL comes too late.
 * pt_conn_parent() is the name of the parent that carries the
 * transaction, from ESTABLISHED on (LOG included), or NULL when it went
 * straight to its target (or nowhere). Worker thread.
 */
struct pt_via;
PT_API int	 pt_via_conf(struct pt_modconf *mc,
		    const config_setting_t *group, struct pt_via **out,
		    const char **errstr);
PT_API void	 pt_via_free(struct pt_via *v);
/* <v> as text for a module's log or test: "corp", "corp,direct",
 * "round-robin(corp,eu)". snprintf's return. Any thread. */
PT_API int	 pt_via_format(const struct pt_via *v, char *buf, size_t len);
PT_API void	 pt_conn_set_via(struct pt_conn *conn, const struct pt_via *v);
PT_API const char *pt_conn_parent(struct pt_conn *conn);

/* ---- 1.8: HTTP/2 -------------------------------------------------------- */

/*
 * pt_conn_stream() is the HTTP/2 stream a transaction came on (its
 * stream identifier, odd, from 1), or 0 when its client connection is
 * not HTTP/2. Each stream is a connection of its own to modules: ACCEPT
 * and CLOSE run for it too (with the HTTP/2 connection's peer, listener
 * and PROXY header), so a module counting connections counts streams,
 * and its per-connection state (pt_conn_ctx) starts afresh per stream.
 * The HTTP/2 connection itself runs ACCEPT and CLOSE once, and no other
 * phase. Worker thread.
 *
 * pt_conn_http2() says whether <conn>'s listener speaks HTTP/2 (its
 * `http2`, in a build with libnghttp2): a transport offers "h2" in ALPN
 * only then. Worker thread.
 */
PT_API uint32_t	 pt_conn_stream(const struct pt_conn *conn);
PT_API bool	 pt_conn_http2(const struct pt_conn *conn);

/* ---- 1.9: the connection under a stream ------------------------------- */

/*
 * pt_conn_owner() is the connection that carries <conn>: for an HTTP/2
 * stream (pt_conn_stream() != 0), its HTTP/2 connection while that
 * lives; otherwise, and for a stream whose HTTP/2 connection is gone or
 * going (a resume after it closed), <conn> itself. What a module keeps
 * for a client connection across its requests, as for HTTP/1.1
 * keep-alive (the credentials it proved), goes in the owner's
 * pt_conn_ctx: the owner ran ACCEPT, so its state exists, and it
 * outlives every hook of its streams but a resume after it closed, for
 * which pt_conn_owner() is <conn> itself. Worker thread.
 */
PT_API struct pt_conn *pt_conn_owner(struct pt_conn *conn);

#endif /* PORTICO_MODULE_H */
