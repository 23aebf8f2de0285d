/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The configuration as the master builds it and workers read it: types
 * only, no functions. Worker code includes this, never master/conf.h, so
 * that nothing in a worker can reach the parser or the loader; the master
 * builds these structures (master/conf.c) before fork and workers read
 * them without writing.
 */
#ifndef PT_COMMON_CONF_TYPES_H
#define PT_COMMON_CONF_TYPES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <libconfig.h>

#include "common/sockaddr.h"
#include "modules/common/net.h"

struct pt_egress;
struct pt_via;
struct conf_parent;
struct pt_module;

#define MODLOAD_MAX	32
/* Hooks per phase, all modules together: the size of a worker's hook
 * table (worker/phase.c). conf.c refuses a configuration beyond it, so
 * that no worker has to drop one. */
#define MODLOAD_MAX_HOOKS	64

/* A loaded module (master/modload.c owns it, for the life of the master
 * and its workers). */
struct modload {
	char			*name;
	char			*path;
	void			*handle;
	const struct pt_module	*mod;
	int			 index;		/* conn ctx slot */
	int			 master_inited;
};

#define CONF_MAX_WORKERS	256

enum conf_proto {
	CONF_PROTO_TCP = 0,
	CONF_PROTO_HTTP,
	CONF_PROTO_SOCKS,	/* SOCKS5, and SOCKS4/4a on the same port */
	CONF_PROTO_AUTO,	/* HTTP or SOCKS, told by the first byte */
	CONF_PROTO_STATUS,	/* GET /metrics and /status (worker/status.c) */
};

/* relay.method: how tunnels and large bodies move (worker/relay.c). */
enum conf_relay {
	CONF_RELAY_SPLICE = 0,
	CONF_RELAY_COPY,
	CONF_RELAY_AUTO,	/* copy, splice a direction while it is bulk */
};

struct conf_listener {
	char		*address;	/* as written, for logs */
	/* `name`, unique, [A-Za-z0-9_.-]; the address when not given.
	 * Modules see it as pt_req.listener. */
	char		*name;
	int		 idx;		/* position in `listeners` */
	struct pt_addr	 addr;
	enum conf_proto	 proto;
	char		*to;		/* tcp: target as written */
	char		*to_host;	/* tcp: its host part */
	struct pt_addr	 to_addr;	/* tcp: resolved by the master */
	int		 backlog;
	int		 line;
	/* IPv6 only (IPV6_V6ONLY). "[::]:port" takes IPv4 clients too
	 * unless `ipv6only = true` or the configuration also has
	 * "*:port"; a specific IPv6 address is IPv6 only. */
	bool		 v6only;
	/* socks5: the addresses UDP ASSOCIATE replies advertise (NAT),
	 * [0] to IPv4 clients, [1] to IPv6 ones; family 0 where the relay
	 * socket's own address is the answer. */
	struct pt_addr	 udp_advertise[2];
	/* socks5: udp_replies = "any": replies from every sender reach the
	 * client, not only from addresses it sent to ("contacted"). */
	bool		 udp_replies_any;
	/* `egress` and `egress_stable` (common/egress.h), or NULL: the
	 * kernel picks where outgoing connections leave from. */
	struct pt_egress	*egress;
	/* The module whose transport wraps the client leg, or NULL. */
	const struct pt_module	*transport_mod;
	/* Modules that do not apply here (their listener_conf said 1):
	 * bit i stands for modules[i]; phase.c skips their hooks. */
	uint32_t		 mod_skip;
	/* Per module, in modules[] order: listener_conf()'s state, or
	 * NULL (pt_conn_listener_ctx). NULL when no module has any. */
	void			**mod_lctx;
	/* A credentials-checking module applies: SOCKS5 offers only
	 * username/password unless pt_conn_need_credentials() says not. */
	bool			 need_credentials;
	/* proxy_protocol: every connection starts with a PROXY header
	 * (worker/proxy_read.c), and only from these networks (`from`). */
	bool			 proxy_protocol;
	struct net_prefix	*pp_from;
	int			 pp_nfrom;
	/* `via`: the parents its traffic goes through (common/parent.h),
	 * or NULL: straight to the target. */
	struct pt_via		*via;
	/* `http2`: HTTP/2 is spoken here too (worker/h2.c): by the client
	 * preface on a plain listener, by ALPN behind the tls transport. */
	bool			 http2;
	/* `http2_max_streams`: SETTINGS_MAX_CONCURRENT_STREAMS. */
	unsigned		 http2_max_streams;
};

struct conf_module {
	char			*name;
	char			*path;		/* the .so actually loaded */
	int			 line;
	struct modload		*mod;		/* owned by the module loader */
	void			*ctx;		/* from the module's conf() */
	bool			 inited;	/* init_master ran */
};

struct conf_limits {
	unsigned	 max_connections;	/* per worker */
	unsigned	 header_timeout_ms;
	unsigned	 connect_timeout_ms;
	unsigned	 idle_timeout_ms;
	/* Connection memory per worker before it stops accepting, in
	 * bytes; 0: no ceiling; CONF_MEMORY_AUTO: from the machine's memory
	 * (worker/conn.c). */
	long long	 worker_memory;
};

#define CONF_MEMORY_AUTO	(-1LL)

#define CONF_MAX_CONNECT_PORTS	64

struct conf_http {
	bool		 connect_any;		/* connect_ports = "*" */
	uint16_t	 connect_ports[CONF_MAX_CONNECT_PORTS];
	int		 nconnect_ports;
	bool		 via;
	/* Via's received-by, ours: a request already carrying it went
	 * round a loop (508). Never NULL once loaded. */
	char		*via_pseudonym;
	/* Refuse a request whose Via names via_pseudonym (508): an
	 * instance with parents, or a pseudonym set by hand. */
	bool		 via_loop_check;
	unsigned	 max_header_size;
	unsigned	 upstream_keepalive;	/* idle upstream conns kept */
	unsigned	 upstream_idle_timeout_ms;
	/* From the request fully written upstream to the first byte of the
	 * response (worker/http.c, http_awaiting_response). */
	unsigned	 response_timeout_ms;
};

#define CONF_MAX_DNS_SERVERS	32

struct conf_resolver {
	/* NULL: /etc/resolv.conf. Else rewritten by conf.c as c-ares reads
	 * it unambiguously: "a.b.c.d:port,[v6]:port,...". */
	char		*servers;
	unsigned	 cache_size;
	unsigned	 min_ttl, max_ttl, negative_ttl;	/* seconds */
	unsigned	 timeout_ms;
};

struct pt_config {
	char			*file;
	int			 workers;	/* resolved, >= 1 */
	bool			 workers_auto;
	bool			 pin;		/* cpu_affinity not "none" */
	int			 cpus[CONF_MAX_WORKERS];	/* per slot */
	char			*user, *group;
	uid_t			 uid;		/* (uid_t)-1: don't switch */
	gid_t			 gid;
	char			*pid_file;
	char			*error_log;
	int			 log_level;
	char			*module_dir;
	unsigned		 shutdown_timeout_ms;
	bool			 tcp_migrate_req;	/* set the sysctl */
	struct conf_limits	 limits;
	struct conf_http	 http;
	struct conf_resolver	 resolver;
	enum conf_relay		 relay;
	unsigned		 buffer_size;
	struct conf_listener	*listeners;
	int			 nlisteners;
	struct conf_module	*modules;
	int			 nmodules;
	/* `parents` (common/parent.h), in the file's order: a via's
	 * members index this. */
	struct conf_parent	*parents;
	int			 nparents;
	config_t		 cfg;		/* kept: modules borrow nodes */
};

#endif
