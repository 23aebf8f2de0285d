/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client side of the protocols portico speaks to a parent proxy (an
 * upstream proxy it chains through): HTTP CONNECT with Basic credentials,
 * SOCKS5 (RFC 1928) with username/password (RFC 1929), SOCKS4 and 4a.
 * Builders write into caller-owned buffers; reply parsers read the bytes
 * received so far. No I/O, no allocation, no state between calls: any
 * process may call them.
 */
#ifndef PT_WORKER_PARENT_WIRE_H
#define PT_WORKER_PARENT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <sys/socket.h>

/*
 * Results of the reply parsers. A parser answers WIRE_MORE until the bytes
 * decide; every prefix of a valid reply gives WIRE_MORE, and once a reply
 * is refused (WIRE_BAD) every longer input is refused alike.
 */
enum wire_rc {
	WIRE_MORE = 0,		/* a prefix: wait for more bytes */
	WIRE_OK = 1,		/* a whole reply, read */
	WIRE_BAD = -1,		/* not the protocol: close */
	WIRE_REFUSED = -2,	/* a well-formed "no" from the parent */
};

/* The longest SOCKS5 request: VER CMD RSV ATYP, a 255-byte name with its
 * length byte, the port. */
#define SOCKS5C_REQUEST_MAX	(4 + 1 + 255 + 2)
/* The longest RFC 1929 request: VER, two length bytes, 255 bytes each. */
#define SOCKS5C_AUTH_MAX	(3 + 255 + 255)
/* The longest SOCKS4a request: the 8 fixed bytes, a 255-byte USERID and
 * a 255-byte host, each with its NUL. */
#define SOCKS4C_REQUEST_MAX	(8 + 255 + 1 + 255 + 1)

/* ---- worker/parent_wire.c: HTTP -------------------------------------- */

/*
 * Writes "Proxy-Authorization: Basic <base64(user ":" password)>\r\n"
 * (RFC 7617) into <out>, <cap> bytes, NUL-terminated. Returns its length
 * without the NUL; -1, <out> then the empty string when <cap> > 0, when it
 * does not fit, when <user> contains ':' (the parent would split there),
 * or when either contains CR or LF. Both are C strings (so hold no NUL);
 * an empty password is allowed.
 */
int	 parent_basic_field(const char *user, const char *password, char *out,
	    size_t cap);
/*
 * Writes the RFC 4648 base64 (padded) of <in>[0..<len>) into <out>, <cap>
 * bytes, NUL-terminated. Returns the length without the NUL, or -1 when
 * it does not fit (<out> then the empty string when <cap> > 0).
 */
ssize_t	 parent_base64(const void *in, size_t len, char *out, size_t cap);
/*
 * Writes "CONNECT <authority> HTTP/1.1\r\nHost: <authority>\r\n<extra>\r\n"
 * into <out>, <cap> bytes, not NUL-terminated. <authority> is host:port,
 * <host> (<hostlen> bytes, not a C string) put in brackets when it holds
 * a ':' (an IPv6 literal, as worker/host.h writes one: without brackets).
 * <extra> is zero or more CRLF-ended fields, e.g. parent_basic_field's,
 * or NULL. Returns the length; -1 when it does not fit, when <host> is
 * empty or holds a byte that cannot stand in an authority (a control
 * byte, a space, a bracket), or when <extra> does not end in CRLF or
 * holds an empty line.
 */
ssize_t	 parent_http_connect(char *out, size_t cap, const char *host,
	    size_t hostlen, uint16_t port, const char *extra);

/* ---- worker/parent_wire.c: SOCKS5 ------------------------------------ */

/* Writes the greeting offering "no authentication" (05 01 00), and
 * username/password too when <creds> (05 02 00 02). Returns 3 or 4. */
size_t	 socks5c_greeting(uint8_t out[4], bool creds);
/*
 * The server's method choice, VER METHOD. WIRE_OK with *<method> (0x00 or
 * 0x02; left alone otherwise); WIRE_REFUSED for 0xff (no method acceptable); WIRE_BAD when VER
 * is not 5 or the method is one the greeting (per <creds>) did not offer;
 * WIRE_MORE while short. Reads 2 bytes: later ones are the next message's.
 */
int	 socks5c_method_reply(const uint8_t *in, size_t len, bool creds,
	    uint8_t *method);
/*
 * Writes the RFC 1929 request 01 ULEN UNAME PLEN PASSWD. Returns its
 * length (3 + <ulen> + <plen>); -1 when <user> or <pass> is empty or
 * longer than 255 bytes, or when it does not fit in <cap>.
 */
ssize_t	 socks5c_auth(uint8_t *out, size_t cap, const char *user,
	    size_t ulen, const char *pass, size_t plen);
/* The RFC 1929 reply VER STATUS: WIRE_OK for status 0, WIRE_REFUSED for
 * another, WIRE_BAD when VER is not 1, WIRE_MORE while short. */
int	 socks5c_auth_reply(const uint8_t *in, size_t len);
/*
 * Writes the request VER CMD RSV ATYP DST.ADDR DST.PORT for <cmd> 1
 * (CONNECT) or 3 (UDP ASSOCIATE). With <addr> (AF_INET or AF_INET6) the
 * address is sent (ATYP 1 or 4; an IPv4-mapped IPv6 address as ATYP 1)
 * and <host> is ignored; without, <host> (1..255 bytes, no NUL) as ATYP 3.
 * <port> is in host order and is always the one sent (the port of <addr>
 * is not read). Returns the length (at most SOCKS5C_REQUEST_MAX), or -1
 * for another command or family, a bad host, or a short <cap>.
 */
ssize_t	 socks5c_request(uint8_t *out, size_t cap, uint8_t cmd,
	    const char *host, size_t hostlen, const struct sockaddr *addr,
	    uint16_t port);
/*
 * Writes the header of a datagram sent through the parent's UDP relay
 * (RFC 1928 7), RSV(0 0) FRAG(0) ATYP DST.ADDR DST.PORT, naming <addr> or
 * <host> as socks5c_request does (an IPv4-mapped address as ATYP 1, a
 * name as ATYP 3; <port> in host order). The payload follows it. Returns
 * the length (at most SOCKS5C_REQUEST_MAX), or -1 for a bad host or
 * family, or a short <cap>.
 */
ssize_t	 socks5c_udp_header(uint8_t *out, size_t cap, const char *host,
	    size_t hostlen, const struct sockaddr *addr, uint16_t port);
/*
 * The reply VER REP RSV ATYP BND.ADDR BND.PORT. WIRE_MORE until all of it
 * is there; WIRE_BAD as soon as VER is not 5, RSV not 0 or ATYP unknown.
 * WIRE_OK otherwise, whatever REP says (0 is success; the caller decides),
 * with *<rep>, and *<consumed> the reply's length: bytes after it are the
 * tunnel's first and are the caller's to keep. For ATYP 1 and 4, *<bound>
 * is the bound address with its port (and *<bound_name> NULL, length 0);
 * for ATYP 3, bound->ss_family is 0 and *<bound_name>, *<bound_namelen>
 * point into <in>. <bound>, <bound_name> and <bound_namelen> may be NULL
 * when unwanted. Outputs are cleared on every call.
 */
int	 socks5c_reply(const uint8_t *in, size_t len, uint8_t *rep,
	    struct sockaddr_storage *bound, const uint8_t **bound_name,
	    size_t *bound_namelen, size_t *consumed);
/*
 * The HTTP status portico answers its own client with when the parent's
 * SOCKS5 reply is <rep> (not 0): 504 for 0x06 (TTL expired), 502 for
 * every other failure.
 */
int	 socks5c_rep_http_status(uint8_t rep);

/* ---- worker/parent_wire.c: SOCKS4 ------------------------------------ */

/*
 * Writes a SOCKS4 CONNECT, VN(4) CD(1) DSTPORT DSTIP USERID NUL, to
 * <addr>'s address (AF_INET; its port is not read); without <addr>, the
 * SOCKS4a form naming <host> (1..255 bytes, no NUL): DSTIP 0.0.0.1, USERID
 * NUL, host NUL. <port> is in host order; <userid> (at most 255 bytes)
 * may be NULL for an empty one. Returns the length (at most
 * SOCKS4C_REQUEST_MAX), or -1 for a bad host or userid, an <addr> in
 * 0.0.0.1..0.0.0.255 (the server would read it as 4a), or a short <cap>.
 */
ssize_t	 socks4c_request(uint8_t *out, size_t cap, const char *host,
	    size_t hostlen, const struct sockaddr_in *addr, uint16_t port,
	    const char *userid);
/*
 * The 8-byte reply VN CD DSTPORT DSTIP. WIRE_OK for CD 90 (granted);
 * WIRE_REFUSED for 91..93; WIRE_BAD as soon as VN is neither 0 nor 4 or
 * CD is another; WIRE_MORE while short. *<code> is the CD of a whole
 * reply, 0 otherwise. Reads 8 bytes: later ones are the tunnel's.
 */
int	 socks4c_reply(const uint8_t *in, size_t len, uint8_t *code);

#endif
