# SPDX-License-Identifier: BSD-2-Clause
"""
parenttest: the peers of the parent-proxy scenarios (portico forwarding
through an upstream HTTP or SOCKS5 proxy), on top of ptest, httptest and
sockstest. Every peer is on 127.0.0.1, in a directory of its own under the
scenario's temp dir, started in the foreground and stopped by its PID (and
its children by theirs) at the end of the scenario at the latest.

- start_squid_parent(t, port, users=None): Debian's real Squid as an HTTP
  parent on 127.0.0.1:<port>: no cache, no disk, CONNECT to any port,
  `via on`, loopback clients only; with users ({user: password}) Basic
  auth is required, checked by Squid's basic_ncsa_auth against an APR1
  ("$apr1$") file written here (the hash computed here, checked against
  `openssl passwd -apr1`). -> SquidParent.
- start_dante_parent(t, port): Debian's danted (dante-server) as a SOCKS5
  server on 127.0.0.1:<port>, no authentication (socksmethod none),
  CONNECT and UDP ASSOCIATE allowed for 127.0.0.0/8, leaving from
  127.0.0.1. -> DanteParent.
- start_counting_origin(t): an HTTP/1.1 origin (httptest.Origin's
  connection handling: threaded, keep-alive) that answers GET with 1 KiB
  of b"x" and POST with the length of the body it read, recording every
  request with its header fields as received and its peer (host, port).
- start_echo(t), start_udp_echo(t): sockstest's TCP echo (recording each
  connection's peer) and UDP echo (recording each datagram).
- Clients: http_via() (one request through an HTTP proxy, optionally with
  Proxy-Authorization: Basic), connect_via() (an HTTP CONNECT tunnel),
  socks5_connect() (sockstest.connect5: SOCKS5 CONNECT, optionally RFC 1929
  username/password) and udp_via() (one datagram through a SOCKS5 UDP
  ASSOCIATE relay and back).

- portico with parents: conf() (a whole configuration from entry texts:
  listeners, parents, modules, a resolver), entry() (a `parents` entry),
  listener() (with its `via`), start_portico() (ready once its own
  listeners listen: a parent may be down on purpose).
- start_script_parent(t): ScriptParent, an HTTP parent that forwards
  nothing and records every head it gets: its own answers by path
  (/status/NNN), 403 (or another status) to every CONNECT, and, with
  die_after, a reset inside a request body.

Availability: squid_program(), danted_program(), NCSA (the helper's path)
and missing_squid(), missing_ncsa(), missing_dante() (None, or a reason
naming the need: "squid", "squid_ncsa", "dante").
"""
import base64
import hashlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import threading

import ptest
import httptest as H
import sockstest as S

NCSA = "/usr/lib/squid/basic_ncsa_auth"
GET_BODY = b"x" * 1024


# ---------------------------------------------------------------------------
# what the machine has

def _program(name):
    p = shutil.which(name)
    if p:
        return p
    p = "/usr/sbin/" + name
    return p if os.access(p, os.X_OK) else None


def squid_program():
    return _program("squid")


def danted_program():
    return _program("danted")


def missing_squid():
    """None, or why there is no Squid (need "squid")."""
    if squid_program() is None:
        return "no squid program (Debian package squid)"
    return None


def missing_ncsa():
    """None, or why Squid cannot check Basic credentials (need
    "squid_ncsa")."""
    if not os.access(NCSA, os.X_OK):
        return "no %s (Debian package squid)" % NCSA
    return None


def missing_dante():
    """None, or why there is no danted (need "dante")."""
    if danted_program() is None:
        return "no danted program (Debian package dante-server)"
    return None


# ---------------------------------------------------------------------------
# APR1 (Apache's MD5-based crypt, "$apr1$"), as htpasswd -m and
# `openssl passwd -apr1` write it and basic_ncsa_auth reads it.

_ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def apr1(password, salt=None):
    """The "$apr1$salt$hash" string of <password> (salt: up to 8 of
    [./0-9A-Za-z], random when None)."""
    if salt is None:
        salt = "".join(secrets.choice(_ITOA64) for _ in range(8))
    salt = salt[:8]
    pw, s, magic = password.encode(), salt.encode(), b"$apr1$"
    alt = hashlib.md5(pw + s + pw).digest()
    ctx = pw + magic + s
    n = len(pw)
    while n > 0:
        ctx += alt[:min(16, n)]
        n -= 16
    i = len(pw)
    while i:
        ctx += b"\0" if i & 1 else pw[:1]
        i >>= 1
    fin = hashlib.md5(ctx).digest()
    for i in range(1000):
        c = pw if i & 1 else fin
        if i % 3:
            c += s
        if i % 7:
            c += pw
        c += fin if i & 1 else pw
        fin = hashlib.md5(c).digest()

    def to64(v, n):
        out = ""
        for _ in range(n):
            out += _ITOA64[v & 0x3f]
            v >>= 6
        return out
    enc = "".join(to64((fin[a] << 16) | (fin[b] << 8) | fin[c], 4)
                  for a, b, c in ((0, 6, 12), (1, 7, 13), (2, 8, 14),
                                  (3, 9, 15), (4, 10, 5)))
    return "$apr1$%s$%s" % (salt, enc + to64(fin[11], 2))


def basic(user, password):
    """The value of a Proxy-Authorization (or Authorization) field."""
    return "Basic " + base64.b64encode(
        ("%s:%s" % (user, password)).encode()).decode()


# ---------------------------------------------------------------------------
# a daemon of ours, stopped by PID

class _Peer:
    """A peer program in the foreground: .proc, .pid, .port, .dir, .up
    (it answered within the bound), why() (lines saying what it said).
    stop() is idempotent and also runs at the scenario's end."""

    name = "peer"

    def __init__(self, t, port, d):
        self.t, self.port, self.dir = t, port, d
        self.proc = None
        self.pid = None
        self.up = False
        self.returncode = None
        self.leftovers = []     # children that had to be killed
        self._stopped = False
        self._out = None

    def _spawn(self, argv, out_path):
        self._out = open(out_path, "ab")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._out,
            stderr=self._out, start_new_session=True, close_fds=True,
            preexec_fn=ptest._preexec(None))
        self.pid = self.proc.pid
        self.t.at_exit(self.stop)

    def _wait_up(self, ready, timeout):
        """Until the process listens on .port and ready() is true, or it
        exits, or <timeout> (stretched) passes."""
        r = ptest.wait_for(lambda: self.proc.poll() is not None or (
            ptest.listening(self.port) and ready()), ptest.bound(timeout),
            interval=0.05)
        self.up = bool(r) and self.proc.poll() is None
        return self.up

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def children(self):
        """{pid: comm} of its live children now."""
        if not self.running():
            return {}
        return ptest.children(self.pid)

    def stop(self, timeout=10):
        """SIGTERM to its PID, up to bound(<timeout>) s for it to exit
        (then SIGKILL); then its children as they were just before (each
        by PID, SIGKILL after a bounded wait, only while its name is still
        the same). Returns the exit status."""
        if self.proc is None or self._stopped:
            return self.returncode
        self._stopped = True
        kids = self.children()
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(ptest.bound(timeout))
            except subprocess.TimeoutExpired:
                self.t.diag("%s %d ignored SIGTERM for %.0f s: killing it"
                            % (self.name, self.pid, ptest.bound(timeout)))
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    self.proc.wait(ptest.bound(5))
                except subprocess.TimeoutExpired:
                    pass
        self.returncode = self.proc.poll()

        def same(pid, c):
            return ptest.alive(pid) and ptest.comm(pid) == c
        ptest.wait_for(lambda: not any(same(p, c) for p, c in kids.items()),
                       ptest.bound(5))
        for pid, c in kids.items():
            if same(pid, c):
                self.leftovers.append(pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            self._out.close()
        except Exception:
            pass
        return self.returncode

    def gone(self):
        """True once stopped, exited, and no child had to be killed."""
        return self._stopped and not self.running() and not self.leftovers

    @staticmethod
    def _lines(path):
        try:
            with open(path, errors="replace") as f:
                return f.read().splitlines()
        except OSError:
            return []


# ---------------------------------------------------------------------------
# Squid

class SquidParent(_Peer):
    """Squid on 127.0.0.1:<port> (see start_squid_parent)."""

    name = "squid"

    def __init__(self, t, port, users, d):
        super().__init__(t, port, d)
        self.users = dict(users) if users else None
        self.conf_path = os.path.join(d, "squid.conf")
        self.access_log = os.path.join(d, "access.log")
        self.cache_log = os.path.join(d, "cache.log")
        self.passwd_path = os.path.join(d, "passwd") if users else None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def access_log_lines(self):
        """Squid's access.log (native "squid" format), one str a line. A
        CONNECT's line is written when its tunnel closes."""
        return self._lines(self.access_log)

    def wait_access_log(self, pattern, count=1, timeout=10):
        """Until <count> access.log lines match <pattern> (bounded); the
        matching lines (maybe fewer)."""
        rx = re.compile(pattern)

        def got():
            return [ln for ln in self.access_log_lines() if rx.search(ln)]
        ptest.wait_for(lambda: len(got()) >= count, ptest.bound(timeout))
        return got()

    def cache_log_lines(self):
        return self._lines(self.cache_log)

    def log_lines(self):
        """access.log then cache.log (the same shape as DanteParent)."""
        return self.access_log_lines() + self.cache_log_lines()

    def why(self):
        return ["squid exit status %s; cache.log tail:" % (
            self.proc.poll() if self.proc else None)] + \
            self.cache_log_lines()[-25:] + \
            ["output:"] + \
            self._lines(os.path.join(self.dir, "squid.out"))[-10:]


def _squid_conf(port, d, passwd):
    auth = ""
    if passwd:
        auth = """auth_param basic program %s %s
auth_param basic children 2 startup=1 idle=1
auth_param basic realm portico-parent
auth_param basic credentialsttl 5 minutes
acl authed proxy_auth REQUIRED
""" % (NCSA, passwd)
    allow = "http_access allow authed" if passwd else \
        "http_access allow localnet"
    # No SSL_ports/Safe_ports rules: CONNECT to any port is allowed. No
    # cache_dir (Squid 4+ has none by default), no memory cache, no
    # netdb file, no pinger; DNS (not needed for literal addresses) only
    # on loopback.
    return """http_port 127.0.0.1:%(port)d
visible_hostname portico-parent
%(auth)sacl localnet src 127.0.0.0/8
http_access deny !localnet
%(allow)s
http_access deny all
cache deny all
cache_mem 0 MB
access_log stdio:%(d)s/access.log squid
cache_log %(d)s/cache.log
pid_filename %(d)s/squid.pid
coredump_dir %(d)s
netdb_filename none
pinger_enable off
shutdown_lifetime 0 seconds
logfile_rotate 0
dns_nameservers 127.0.0.1
udp_outgoing_address 127.0.0.1
via on
""" % dict(port=port, d=d, auth=auth, allow=allow)


def start_squid_parent(t, port, users=None, timeout=30):
    """Squid as an HTTP parent on 127.0.0.1:<port> (see the module
    comment), in <t.tmp>/squid-<port>/. Waits (at most bound(<timeout>)
    s) until it listens and its cache.log says it accepts connections.
    Returns a SquidParent: .port, .url, .up, .pid, .users,
    .access_log_lines(), .wait_access_log(), .cache_log_lines(),
    .log_lines(), .why(), .stop(). Raises RuntimeError when there is no
    squid, or users are given and no basic_ncsa_auth (check
    missing_squid() and missing_ncsa() first, to skip)."""
    why = missing_squid() or (users and missing_ncsa())
    if why:
        raise RuntimeError(why)
    d = t.path("squid-%d" % port)
    os.mkdir(d)
    # Squid started as root runs as its cache_effective_user (proxy): it
    # must reach this directory and write its logs and pid file there.
    os.chmod(t.tmp, 0o755)
    os.chmod(d, 0o777)
    sq = SquidParent(t, port, users, d)
    if users:
        text = "".join("%s:%s\n" % (u, apr1(p)) for u, p in users.items())
        ptest.write_file(sq.passwd_path, text)
        os.chmod(sq.passwd_path, 0o644)
    ptest.write_file(sq.conf_path, _squid_conf(port, d, sq.passwd_path))
    os.chmod(sq.conf_path, 0o644)
    # -n: a service name of its own, so two Squids on this machine (two
    # parents, or another scenario's) never share shared-memory segments.
    sq._spawn([squid_program(), "-N", "-n", "ptparent%d" % port,
               "-f", sq.conf_path], os.path.join(d, "squid.out"))
    sq._wait_up(lambda: any("Accepting HTTP Socket connections" in ln
                            for ln in sq.cache_log_lines()), timeout)
    return sq


# ---------------------------------------------------------------------------
# Dante

class DanteParent(_Peer):
    """danted on 127.0.0.1:<port> (see start_dante_parent)."""

    name = "danted"

    def __init__(self, t, port, d):
        super().__init__(t, port, d)
        self.conf_path = os.path.join(d, "danted.conf")
        self.log_path = os.path.join(d, "danted.log")

    def log_lines(self):
        """danted's log (logoutput), one str a line: a "pass(N): tcp/connect"
        line for each CONNECT, "udp/udpassociate" and "udp/udpreply" for
        UDP, with the addresses."""
        return self._lines(self.log_path)

    def wait_log(self, pattern, count=1, timeout=10):
        rx = re.compile(pattern)

        def got():
            return [ln for ln in self.log_lines() if rx.search(ln)]
        ptest.wait_for(lambda: len(got()) >= count, ptest.bound(timeout))
        return got()

    def why(self):
        return ["danted exit status %s; log tail:" % (
            self.proc.poll() if self.proc else None)] + \
            self.log_lines()[-25:] + \
            ["output:"] + \
            self._lines(os.path.join(self.dir, "danted.out"))[-10:]


def _dante_conf(port, log):
    # Rules are matched in order: the pass rules cover 127.0.0.0/8 both
    # ways (udpreply: the datagrams coming back to the client), the last
    # rule blocks the rest. No user.* lines: danted then keeps the user it
    # was started as (as root it warns that the unprivileged uid is 0).
    return """logoutput: %(log)s
internal: 127.0.0.1 port = %(port)d
external: 127.0.0.1
clientmethod: none
socksmethod: none
client pass {
	from: 127.0.0.0/8 to: 0.0.0.0/0
	log: error connect disconnect
}
socks pass {
	from: 127.0.0.0/8 to: 127.0.0.0/8
	command: connect udpassociate
	log: error connect disconnect
}
socks pass {
	from: 127.0.0.0/8 to: 127.0.0.0/8
	command: udpreply
	log: error connect disconnect
}
socks block {
	from: 0.0.0.0/0 to: 0.0.0.0/0
	log: error connect
}
""" % dict(port=port, log=log)


def start_dante_parent(t, port, timeout=20):
    """danted as a SOCKS5 server on 127.0.0.1:<port> (see the module
    comment), in the foreground (-N 1 -f FILE -p PIDFILE), its files in
    <t.tmp>/dante-<port>/. Waits (at most bound(<timeout>) s) until it
    listens and logs that it runs. Returns a DanteParent: .port, .up,
    .pid, .log_lines(), .wait_log(), .why(), .stop(). Raises
    RuntimeError when there is no danted (check missing_dante() first)."""
    why = missing_dante()
    if why:
        raise RuntimeError(why)
    d = t.path("dante-%d" % port)
    os.mkdir(d)
    dp = DanteParent(t, port, d)
    ptest.write_file(dp.conf_path, _dante_conf(port, dp.log_path))
    dp._spawn([danted_program(), "-N", "1", "-f", dp.conf_path,
               "-p", os.path.join(d, "danted.pid")],
              os.path.join(d, "danted.out"))
    dp._wait_up(lambda: any(re.search(r"Dante/server\S* v\S+ running", ln)
                            for ln in dp.log_lines()), timeout)
    return dp


# ---------------------------------------------------------------------------
# origins and echoes

class CountingOrigin(H.Origin):
    """httptest.Origin's connections (threaded, keep-alive, Expect:
    100-continue answered, Content-Length or chunked request bodies) with
    two answers, on any path:

      a request with a body (Content-Length or chunked), or a POST/PUT/
      PATCH: 200, text/plain, the body's length in decimal ASCII;
      anything else: 200 with <n> bytes of b"x" (?n=N, default 1024;
      HEAD: the same head, no body).

    .requests: a dict per request, in arrival order: method, target,
    path, version, headers (a list of [name, value] in the order and
    spelling received), body_len, body_sha256, peer (host), peer_addr
    ((host, port) of the connection), conn (connection number, from 1),
    seq (request number on that connection), raw_head (str)."""

    def __init__(self, host="127.0.0.1"):
        self._tl = threading.local()
        super().__init__(host)

    def handle(self, c):
        try:
            self._tl.peer = tuple(c.getpeername()[:2])
        except OSError:
            self._tl.peer = None
        super().handle(c)

    def _serve_one(self, conn, req, headers):
        c = conn.sock
        req["peer_addr"] = getattr(self._tl, "peer", None)
        req["path"] = req["target"].split("?", 1)[0]
        if "://" in req["path"]:        # absolute form
            rest = req["path"].split("://", 1)[1]
            req["path"] = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        ctok = H.tokens(headers, "connection")
        keep = ("keep-alive" in ctok) if req["version"] == "HTTP/1.0" \
            else ("close" not in ctok)
        if (H.field(headers, "expect") or "").lower() == "100-continue":
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            req["sent_100"] = True
        te = H.tokens(headers, "transfer-encoding")
        cl = H.fields(headers, "content-length")
        body, has_body = b"", False
        if te:
            if te[-1] != "chunked":
                return False
            body, trailers, _ = H.read_chunked(conn)
            req["trailers"] = [list(x) for x in trailers]
            has_body = True
        elif cl:
            body = conn.read_exact(int(cl[0]))
            has_body = True
        req["body_len"] = len(body)
        req["body_sha256"] = H.sha(body)
        if has_body or req["method"] in ("POST", "PUT", "PATCH"):
            payload = b"%d" % len(body)
            ctype = b"text/plain"
        else:
            n = 1024
            q = req["target"].split("?", 1)
            if len(q) > 1:
                m = re.search(r"(?:^|&)n=(\d+)", q[1])
                if m:
                    n = int(m.group(1))
            payload = GET_BODY if n == 1024 else b"x" * n
            ctype = b"application/octet-stream"
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
                b"Content-Length: %d\r\n" % (ctype, len(payload)))
        if not keep:
            head += b"Connection: close\r\n"
        c.sendall(head + b"\r\n" +
                  (b"" if req["method"] == "HEAD" else payload))
        return keep

    def snapshot(self):
        """A copy of .requests now."""
        with self.lock:
            return list(self.requests)

    def count(self, method=None, path=None):
        """Requests received (of <method>, to <path>)."""
        return sum(1 for r in self.snapshot()
                   if (method is None or r["method"] == method) and
                   (path is None or r["path"] == path))

    def with_header(self, name):
        """The requests that carried a field <name> (any case)."""
        return [r for r in self.snapshot() if header(r, name)]


def header(req, name):
    """Every value of field <name> (any case) in a recorded request, in
    order ([] when absent)."""
    name = name.lower()
    return [v for k, v in req["headers"] if k.lower() == name]


def start_counting_origin(t, host="127.0.0.1"):
    """A CountingOrigin on <host>, stopped at the end: .port, .url
    ("http://127.0.0.1:PORT"), .requests, .accepted (connections),
    snapshot(), count(), with_header()."""
    o = CountingOrigin(host)
    t.servers.append(o)
    return o


def start_echo(t, host="127.0.0.1"):
    """sockstest.PeerEcho: a TCP echo (half-close aware), .port, .peers
    (list of (host, port) of each connection), .accepted."""
    return S.peer_echo(t, host)


def start_udp_echo(t, host="127.0.0.1"):
    """sockstest.UdpEcho: every datagram goes back to its source; .port,
    .seen (list of ((host, port), length, sha256 hex)), count()."""
    return S.udp_echo(t, host)


# ---------------------------------------------------------------------------
# clients

def http_via(proxy_port, url, method="GET", body=None, auth=None,
             headers=(), timeout=None):
    """One request in absolute form to the HTTP proxy on 127.0.0.1:
    <proxy_port>, on a fresh connection closed after. auth: None or
    (user, password) sent as Proxy-Authorization: Basic. Returns an
    httptest.Resp (.status, .body, .get(name), .headers) or the error as
    a string."""
    hs = list(headers)
    if auth is not None:
        hs.append(("Proxy-Authorization", basic(*auth)))
    try:
        r, conn = H.roundtrip(proxy_port, method, url, hs, body,
                              timeout=timeout or ptest.bound(10))
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
    conn.close()
    return r


def connect_via(proxy_port, host, port, auth=None, timeout=None):
    """CONNECT host:port through the HTTP proxy on 127.0.0.1:<proxy_port>
    (auth as in http_via). Returns (Resp or error string, conn): after a
    2xx, conn (an httptest.Conn: send(), read_exact(), close()) is the
    tunnel; the caller closes it in any case."""
    conn = None
    try:
        conn = H.Conn.to(proxy_port, timeout=timeout or ptest.bound(10))
        hp = ptest.hostport(host, port)
        req = "CONNECT %s HTTP/1.1\r\nHost: %s\r\n" % (hp, hp)
        if auth is not None:
            req += "Proxy-Authorization: %s\r\n" % basic(*auth)
        conn.send(req + "\r\n")
        return H.read_response(conn, "CONNECT"), conn
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), conn


def socks5_connect(proxy_port, host, port, auth=None, timeout=None):
    """SOCKS5 CONNECT through 127.0.0.1:<proxy_port>: sockstest.connect5.
    auth: None (offers method 0x00 only) or (user, password) (offers 0x02
    only, RFC 1929). Returns (sockstest.Reply (.rep 0 = succeeded, .host,
    .port) or an error string, client): the client (send(), read_exact(),
    close()) is the tunnel after a success; the caller closes it."""
    return S.connect5(proxy_port, host, port, auth=auth, timeout=timeout)


def udp_via(proxy_port, host, port, payload, auth=None, timeout=None):
    """One datagram through a SOCKS5 UDP ASSOCIATE on 127.0.0.1:
    <proxy_port> to <host>:<port>, and the first datagram back. Returns
    (data, (src host, src port), why): data is the payload of the answer
    (None when none came within the bound), its source as the relay's
    header names it, why None or what went wrong."""
    u = S.Udp(proxy_port, auth=auth, timeout=timeout)
    try:
        if not u.ok():
            return None, None, u.describe()
        u.send(host, port, payload)
        got = u.recv(timeout or ptest.bound(5))
        if got is None:
            return None, None, "no datagram back (%s)" % u.describe()
        frag, h, p, data = got
        if frag == "bad":
            return None, None, "bad datagram from the relay: %s" % h
        return data, (h, p), None
    finally:
        u.close()


# ---------------------------------------------------------------------------
# portico with parents, and a scripted parent

def entry(**kw):
    """One libconfig group on a line, keys in the order given: a
    `parents` entry, e.g. entry(name="corp", address="127.0.0.1:3128",
    protocol="http", user="svc", password="pw")."""
    return "{ " + " ".join("%s = %s;" % (k, ptest._conf_value(v, 0))
                           for k, v in kw.items()) + " }"


def listener(name, port, proto, via=None, extra=""):
    """A listener entry on 127.0.0.1:<port>; <via>: a parent's name, a
    list of names, or a ready libconfig text ("{ parents = ...; }")."""
    if isinstance(via, str) and via.startswith("{"):
        v = " via = %s;" % via
    else:
        v = (" via = %s;" % ptest._conf_value(via, 0)) if via else ""
    return '{ name = "%s"; address = "127.0.0.1:%d"; protocol = "%s";%s%s }' \
        % (name, port, proto, v, (" " + extra) if extra else "")


def conf(t, name, listeners, parents=(), modules=(), dns=None, workers=1,
         http='connect_ports = "*";'):
    """A whole portico configuration: <listeners>, <parents> and
    <modules> are lists of entry texts, <dns> an httptest.DnsServer its
    resolver asks, <http> the body of its http group. Its error log is
    <tmp>/<name>.log, its pid file <tmp>/<name>.pid."""
    res = ('resolver = { servers = "%s"; timeout = 1; };\n' % dns.address
           if dns is not None else "")
    par = ("parents = (\n  %s\n);\n" % ",\n  ".join(parents)
           if parents else "")
    mods = ("modules = (\n  %s\n);\n" % ",\n  ".join(modules)
            if modules else "")
    return """workers = %d;
error_log = "%s";
log_level = "info";
pid_file = "%s";
shutdown_timeout = 5;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
http = { %s };
%s%slisteners = (
  %s
);
%s""" % (workers, t.path(name + ".log"), t.path(name + ".pid"), http, res,
         par, ",\n  ".join(listeners), mods)


def start_portico(t, conf, ports, conf_name, **kw):
    """Portico on <conf> (text) as <tmp>/<conf_name>, ready once its
    workers run and its own listener <ports> listen. (ptest's Portico
    waits for every address = "..." of the file, a parent's too, and a
    scenario's parent may be down on purpose, or be the other portico of
    a loop, started after.)"""
    p = ptest.Portico(t, conf, conf_name=conf_name, wait=False, **kw)
    p.listener_ports = lambda text=None: list(ports)
    p.start()
    p.wait_started()
    return p


class ScriptParent(ptest._Server):
    """An HTTP parent proxy on 127.0.0.1 that forwards nothing: it reads
    each request, records it, and answers it itself (keep-alive):

      CONNECT: <connect_status> (403) with the body b"script parent
      refuses CONNECT", then closes;
      any other method to a path /status/NNN: NNN with the body
      b"script parent NNN" (407: with Proxy-Authenticate: Basic
      realm="script");
      else 200 with b"script parent".

    die_after=N: a request with a body is never answered; once its head
    and N bytes of its body came (or the sender paused 5 s), the
    connection is reset (SO_LINGER 0): a parent dying inside a body.

    .requests: a dict per request: method, target, headers ([name,
    value] as received), raw_head (str), body_got (body bytes read),
    peer ((host, port))."""

    def __init__(self, host="127.0.0.1", connect_status=403, die_after=None):
        self.requests = []
        self.connect_status = connect_status
        self.die_after = die_after
        super().__init__(host)

    def snapshot(self):
        with self.lock:
            return list(self.requests)

    def handle(self, c):
        import socket
        import struct
        buf = b""
        for _ in range(1000):
            head, buf = H.next_head(c, buf)
            if head is None:
                return
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            hs = [[k, v.strip()] for k, v in
                  (ln.split(":", 1) for ln in lines[1:] if ":" in ln)]
            req = dict(method=parts[0], target=parts[1] if len(parts) > 1
                       else "", headers=hs, raw_head=head.decode("latin-1"),
                       body_got=0, peer=tuple(c.getpeername()[:2]))
            with self.lock:
                self.requests.append(req)
            if req["method"] == "CONNECT":
                body = b"script parent refuses CONNECT"
                c.sendall(b"HTTP/1.1 %d Refused\r\nContent-Length: %d\r\n"
                          b"Connection: close\r\n\r\n"
                          % (self.connect_status, len(body)) + body)
                return
            cl = int(H.field(hs, "content-length") or 0)
            if self.die_after is not None and cl > 0:
                want = min(self.die_after, cl)
                c.settimeout(5)
                try:
                    while len(buf) < want:
                        d = c.recv(65536)
                        if not d:
                            break
                        buf += d
                except OSError:
                    pass
                with self.lock:
                    req["body_got"] = len(buf)
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             struct.pack("ii", 1, 0))
                return
            while len(buf) < cl:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            with self.lock:
                req["body_got"] = cl
            buf = buf[cl:]
            m = re.search(r"/status/(\d{3})$", req["target"])
            status = int(m.group(1)) if m else 200
            body = b"script parent" + (b" %d" % status if m else b"")
            extra = b'Proxy-Authenticate: Basic realm="script"\r\n' \
                if status == 407 else b""
            c.sendall(b"HTTP/1.1 %d Scripted\r\n%sContent-Length: %d\r\n"
                      b"\r\n" % (status, extra, len(body)) + body)


def start_script_parent(t, **kw):
    """A ScriptParent (see there), stopped at the end."""
    s = ScriptParent(**kw)
    t.servers.append(s)
    return s
