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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <libconfig.h>

#define PT_API __attribute__((visibility("default")))

#define PT_ABI_MAJOR 1
#define PT_ABI_MINOR 0

/*
 * The build signature changes whenever a structure a module can see changes
 * size. A module built against other headers is refused at load time.
 */
#define PT_BUILD_SIG                                                    \
	((uint32_t)(sizeof(struct pt_req) << 16 ^ sizeof(struct pt_module) \
	    << 8 ^ sizeof(struct pt_transport) ^ PT_ABI_MAJOR << 28))

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
	PT_PROTO_WEBSOCKET
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
	struct pt_str		 host;		/* target as the client named it */
	uint16_t		 port;
	struct pt_str		 user;		/* after AUTH, or empty */
	struct pt_str		 password;	/* during AUTH only */
	struct sockaddr_storage	 peer;		/* client address */
	struct sockaddr_storage	 local;		/* our address on the client leg */
	struct sockaddr_storage	 target;	/* resolved, from DIAL on */
	int			 status;	/* HTTP status or SOCKS reply */
	uint64_t		 bytes_in;	/* client -> upstream */
	uint64_t		 bytes_out;	/* upstream -> client */
	uint64_t		 start_ms;	/* monotonic, at accept */
	uint64_t		 end_ms;	/* monotonic, at LOG */
	const char		*error;		/* why it failed, or NULL */
	void			*reserved[8];
};

typedef enum pt_verdict (*pt_hook_fn)(struct pt_conn *conn,
    struct pt_req *req, void *modctx);

struct pt_hook {
	enum pt_phase	 phase;
	int		 priority;	/* lower runs first */
	pt_hook_fn	 fn;
};

/*
 * A transport replaces plain socket I/O on one listener (the tls module).
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
	int		(*shutdown)(struct pt_conn *, int fd, void *tctx);
	void		(*free)(struct pt_conn *, void *tctx);
	void		*reserved[4];
};

/* Handed to conf(): where the module's configuration came from. */
struct pt_modconf {
	const char	*file;		/* configuration file being loaded */
	const char	*module_dir;
	void		*ctx;		/* out: the module's parsed config */
	void		*reserved[4];
};

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

	void			*reserved[8];
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

/* Master and worker: one line to the error log. */
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
	pt_timer_fn	 fn;
	void		*arg;
};
PT_API void	 pt_timer_start(struct pt_timer *t, uint64_t after_ms,
		    pt_timer_fn fn, void *arg);
PT_API void	 pt_timer_stop(struct pt_timer *t);

#endif /* PORTICO_MODULE_H */
