# SPDX-License-Identifier: BSD-2-Clause
"""
sockstest: what the t/integ/socks_*.py scenarios share, on top of ptest
and httptest.

- socks_conf()/start(): t/conf/socks.conf filled in (a `protocol =
  "socks5"` listener on 127.0.0.1, which also speaks SOCKS4/4a), with
  limits, a resolver and hookrec when asked.
- Client: a raw SOCKS5/SOCKS4 client on a buffered socket (httptest.Conn):
  greeting, RFC 1929 sub-negotiation, requests with every address type,
  replies parsed field by field; connect5()/connect4() do the whole
  handshake in one call.
- Udp: a SOCKS5 UDP ASSOCIATE client (control connection plus a UDP
  socket), with the RFC 1928 section 7 header built and parsed here.
- UdpEcho: a UDP echo server on loopback that records every datagram it
  saw (source, length, sha256).
- PeerEcho: a TCP echo server that records each connection's peer address
  (to compare with the BND.ADDR/BND.PORT of a CONNECT reply).
- hookrec records: records(), kv(), phases().
"""

import hashlib
import socket
import struct
import threading
import time

import ptest
import httptest as H

PROTO_SOCKS5 = "3"      # PT_PROTO_SOCKS5 in include/portico/module.h
PROTO_SOCKS4 = "4"      # PT_PROTO_SOCKS4

CMD_CONNECT, CMD_BIND, CMD_UDP = 1, 2, 3
ATYP_V4, ATYP_NAME, ATYP_V6 = 1, 3, 4
M_NONE, M_GSSAPI, M_USERPASS, M_REFUSED = 0x00, 0x01, 0x02, 0xFF

REP = {0: "succeeded", 1: "general failure", 2: "not allowed by ruleset",
       3: "network unreachable", 4: "host unreachable",
       5: "connection refused", 6: "TTL expired",
       7: "command not supported", 8: "address type not supported"}


def rep_name(r):
    if isinstance(r, Reply):
        r = r.rep
    if isinstance(r, int):
        return "0x%02x (%s)" % (r, REP.get(r, "?"))
    return str(r)


# ---------------------------------------------------------------------------
# configuration

def _body(d):
    return " ".join("%s = %s;" % (k, ptest._conf_value(v, 1))
                    for k, v in d.items())


def listener(port, host="127.0.0.1", extra=""):
    return '  { address = "%s"; protocol = "socks5"; %s}' % (
        ptest.hostport(host, port), extra + " " if extra else "")


def hookrec(t, name, deny=None, extra=""):
    """(modules text, record path) for hookrec recording to <tmp>/<name>.rec
    (deny: the phase that answers DENY)."""
    rec = t.path(name + ".rec")
    opts = 'record = "%s"; ' % rec
    if deny:
        opts += 'deny_phase = "%s"; ' % deny
    opts += extra
    text = 'modules = ( { name = "hookrec"; path = "%s/hookrec.so"; %s} );' \
        % (ptest.TESTMODDIR, opts)
    return text, rec


def socks_conf(t, port, workers=1, limits=None, resolver=None, modules="",
               listener_extra="", more_listeners=(), extra=""):
    lim = dict(header_timeout=10, connect_timeout=5, idle_timeout=30)
    lim.update(limits or {})
    ls = [listener(port, extra=listener_extra)] + list(more_listeners)
    res = ("resolver = { %s };" % _body(resolver)) if resolver else ""
    return t.conf("socks", WORKERS=workers, LISTENERS=",\n".join(ls),
                  LIMITS=_body(lim), RESOLVER=res, MODULES=modules,
                  EXTRA=extra)


def start(t, conf_name="portico.conf", **kw):
    """(Portico, port) of a SOCKS proxy started with socks_conf(**kw).
    A port free_port() gave may be taken before portico binds it (another
    socket's ephemeral port): then it tries again with another."""
    for i in range(3):
        port = ptest.free_port()
        try:
            p = t.portico(socks_conf(t, port, **kw), conf_name=conf_name)
            return p, port
        except RuntimeError as e:
            if "Address already in use" not in str(e) or i == 2:
                raise
            t.diag("port %d was taken before portico bound it: again"
                   % port)


# ---------------------------------------------------------------------------
# the wire

def addr_bytes(host, port):
    """ATYP DST.ADDR DST.PORT for <host> (an IPv4 or IPv6 literal, or a
    name)."""
    try:
        return bytes([ATYP_V4]) + socket.inet_pton(socket.AF_INET, host) + \
            struct.pack("!H", port)
    except (OSError, ValueError):
        pass
    try:
        return bytes([ATYP_V6]) + socket.inet_pton(socket.AF_INET6, host) + \
            struct.pack("!H", port)
    except (OSError, ValueError):
        pass
    name = host.encode("latin-1") if not isinstance(host, bytes) else host
    return bytes([ATYP_NAME, len(name)]) + name + struct.pack("!H", port)


def parse_addr(data, off):
    """(atyp, host, port, next offset) from ATYP at data[off]; raises
    ValueError when short or unknown."""
    atyp = data[off]
    off += 1
    if atyp == ATYP_V4:
        if len(data) < off + 6:
            raise ValueError("short IPv4 address")
        host = socket.inet_ntop(socket.AF_INET, data[off:off + 4])
        off += 4
    elif atyp == ATYP_V6:
        if len(data) < off + 18:
            raise ValueError("short IPv6 address")
        host = socket.inet_ntop(socket.AF_INET6, data[off:off + 16])
        off += 16
    elif atyp == ATYP_NAME:
        n = data[off]
        if len(data) < off + 1 + n + 2:
            raise ValueError("short name")
        host = data[off + 1:off + 1 + n].decode("latin-1")
        off += 1 + n
    else:
        raise ValueError("unknown ATYP %d" % atyp)
    port = struct.unpack("!H", data[off:off + 2])[0]
    return atyp, host, port, off + 2


def udp_header(host, port, frag=0):
    return b"\x00\x00" + bytes([frag]) + addr_bytes(host, port)


def parse_udp(dg):
    """(frag, host, port, data) of a datagram from the relay; raises
    ValueError."""
    if len(dg) < 4 or dg[0:2] != b"\x00\x00":
        raise ValueError("bad UDP header %r" % dg[:12])
    _, host, port, off = parse_addr(dg, 3)
    return dg[2], host, port, dg[off:]


class Reply:
    """A SOCKS5 reply: ver, rep, rsv, atyp, host, port (BND.ADDR, .PORT)."""

    def __init__(self, raw):
        self.raw = raw
        self.ver, self.rep, self.rsv = raw[0], raw[1], raw[2]
        self.atyp, self.host, self.port, _ = parse_addr(raw, 3)

    def __repr__(self):
        return "<SOCKS5 reply ver=%d rep=%s rsv=%d bnd=%s raw=%s>" % (
            self.ver, rep_name(self.rep), self.rsv,
            ptest.hostport(self.host, self.port), self.raw.hex())


class Reply4:
    def __init__(self, raw):
        self.raw = raw
        self.vn, self.cd = raw[0], raw[1]
        self.port = struct.unpack("!H", raw[2:4])[0]
        self.ip = socket.inet_ntop(socket.AF_INET, raw[4:8])

    def __repr__(self):
        return "<SOCKS4 reply vn=%d cd=0x%02x %s:%d>" % (
            self.vn, self.cd, self.ip, self.port)


class Client(H.Conn):
    """A raw SOCKS client. Methods raise H.Closed at EOF and
    socket.timeout when the proxy says nothing."""

    @classmethod
    def to(cls, port, host="127.0.0.1", timeout=None):
        return cls(ptest.connect(port, host, timeout or ptest.bound(10)),
                   timeout or ptest.bound(10))

    def greet(self, methods=(M_NONE,), send=True):
        """Sends VER NMETHODS METHODS; returns the method the proxy chose
        (an int) after checking VER 5."""
        if send:
            self.send(bytes([5, len(methods)]) + bytes(methods))
        r = self.read_exact(2)
        if r[0] != 5:
            raise H.BadInput("method selection with version %d" % r[0])
        return r[1]

    def userpass(self, user, password, send=True):
        """RFC 1929; returns (VER, STATUS)."""
        if send:
            u, p = user.encode(), password.encode()
            self.send(b"\x01" + bytes([len(u)]) + u + bytes([len(p)]) + p)
        r = self.read_exact(2)
        return r[0], r[1]

    def request(self, host, port, cmd=CMD_CONNECT, early=b"", send=True):
        if send:
            self.send(b"\x05" + bytes([cmd, 0]) + addr_bytes(host, port) +
                      early)
        return self.read_reply()

    def read_reply(self):
        head = self.read_exact(4)
        atyp = head[3]
        if atyp == ATYP_V4:
            rest = self.read_exact(6)
        elif atyp == ATYP_V6:
            rest = self.read_exact(18)
        elif atyp == ATYP_NAME:
            n = self.read_exact(1)
            rest = n + self.read_exact(n[0] + 2)
        else:
            raise H.BadInput("reply %r with unknown ATYP" % head)
        return Reply(head + rest)

    def request4(self, ip, port, userid=b"", name=None, cmd=1, early=b"",
                 send=True):
        """SOCKS4 (name None) or 4a (ip ignored, 0.0.0.1 sent); returns
        Reply4."""
        if send:
            if name is not None:
                ip = "0.0.0.1"
            msg = struct.pack("!BBH", 4, cmd, port) + \
                socket.inet_pton(socket.AF_INET, ip) + userid + b"\x00"
            if name is not None:
                msg += name.encode() + b"\x00"
            self.send(msg + early)
        return Reply4(self.read_exact(8))


def connect5(proxy_port, host, port, auth=None, early=b"", timeout=None):
    """The whole SOCKS5 CONNECT. auth: None (offer 0x00) or (user, pass)
    (offer 0x02 only). Returns (Reply or 'error string', Client)."""
    c = Client.to(proxy_port, timeout=timeout)
    try:
        if auth is None:
            m = c.greet([M_NONE])
            if m != M_NONE:
                return "method 0x%02x chosen" % m, c
        else:
            m = c.greet([M_USERPASS])
            if m != M_USERPASS:
                return "method 0x%02x chosen" % m, c
            v, st = c.userpass(*auth)
            if st != 0:
                return "RFC 1929 status %d (ver %d)" % (st, v), c
        return c.request(host, port, early=early), c
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), c


def connect4(proxy_port, ip, port, userid=b"user", name=None, early=b"",
             timeout=None):
    """SOCKS4/4a CONNECT. Returns (Reply4 or 'error string', Client)."""
    c = Client.to(proxy_port, timeout=timeout)
    try:
        return c.request4(ip, port, userid, name, early=early), c
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), c


def ok5(r):
    return isinstance(r, Reply) and r.ver == 5 and r.rep == 0


def ok4(r):
    return isinstance(r, Reply4) and r.vn == 0 and r.cd == 0x5A


def ending(conn, timeout):
    """(bytes read, 'eof'|'reset'|'timeout'|..., seconds) until the proxy
    closes <conn> or <timeout> passes."""
    t0 = time.monotonic()
    data, how = H.outcome(conn, timeout)
    return data, how, time.monotonic() - t0


def closes(how):
    return how in ("eof", "reset")


def echo_check(c, payload):
    """Sends <payload> through tunnel <c> and reads it back; True/why."""
    try:
        c.send(payload)
        got = c.read_exact(len(payload))
    except Exception as e:
        return False, "%s: %s" % (type(e).__name__, e)
    if got != payload:
        return False, "echo differs (%d bytes)" % len(got)
    return True, None


# ---------------------------------------------------------------------------
# servers

class PeerEcho(ptest.EchoServer):
    """An echo server recording each connection's peer (host, port)."""

    def __init__(self, *a, **kw):
        self.peers = []
        super().__init__(*a, **kw)

    def handle(self, c):
        pa = c.getpeername()
        with self.lock:
            self.peers.append((pa[0], pa[1]))
        super().handle(c)


def peer_echo(t, host="127.0.0.1"):
    s = PeerEcho(host)
    t.servers.append(s)
    return s


class UdpEcho:
    """UDP echo on <host>: every datagram goes back to its source.
    .seen: list of (source (host, port), length, sha256 hex)."""

    def __init__(self, host="127.0.0.1"):
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.host = host
        self.sock = socket.socket(fam, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.seen = []
        self.times = []         # monotonic time of each datagram seen
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping.is_set():
            try:
                data, peer = self.sock.recvfrom(70000)
            except socket.timeout:
                continue
            except OSError:
                if self.stopping.is_set():
                    return
                continue
            with self.lock:
                self.seen.append((peer[:2], len(data),
                                  hashlib.sha256(data).hexdigest()))
                self.times.append(time.monotonic())
            try:
                self.sock.sendto(data, peer)
            except OSError:
                pass

    def count(self):
        with self.lock:
            return len(self.seen)

    def stop(self):
        self.stopping.set()
        try:
            self.sock.close()
        except OSError:
            pass
        self.thread.join(2)


def udp_echo(t, host="127.0.0.1"):
    u = UdpEcho(host)
    t.at_exit(u.stop)
    return u


class Udp:
    """A UDP association: the control connection (Client), the reply
    (Reply), and a UDP socket on <bind> to talk to the relay at
    (relay_host, relay_port) = the reply's BND unless told otherwise.
    sock: a UDP socket of the caller's (e.g. IPv6); ctl: a Client already
    connected (e.g. to an IPv6 listener)."""

    def __init__(self, proxy_port, bind="127.0.0.1", auth=None,
                 dst=("0.0.0.0", 0), timeout=None, sock=None, ctl=None):
        self.udp = sock or socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if sock is None:
            self.udp.bind((bind, 0))
        self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.ctl = None
        self.reply = None
        self.error = None
        try:
            self.ctl = ctl or Client.to(proxy_port, timeout=timeout)
            if auth is None:
                m = self.ctl.greet([M_NONE])
            else:
                m = self.ctl.greet([M_USERPASS])
                if m == M_USERPASS:
                    self.ctl.userpass(*auth)
            self.reply = self.ctl.request(dst[0], dst[1], cmd=CMD_UDP)
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)
        self.relay = (self.reply.host, self.reply.port) if \
            self.reply is not None else None

    def ok(self):
        return self.reply is not None and self.reply.rep == 0 and \
            self.reply.port != 0

    def describe(self):
        return "association: reply %r, error %s" % (self.reply, self.error)

    def send(self, host, port, data, frag=0, relay=None, sock=None):
        (sock or self.udp).sendto(udp_header(host, port, frag) + data,
                                  relay or self.relay)

    def send_raw(self, dg, relay=None, sock=None):
        (sock or self.udp).sendto(dg, relay or self.relay)

    def recv(self, timeout):
        """(frag, host, port, data) of the next datagram from the relay,
        or None when nothing comes within <timeout>. Datagrams from any
        other source are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.udp.settimeout(left)
            try:
                dg, src = self.udp.recvfrom(70000)
            except socket.timeout:
                return None
            except OSError:
                return None
            if self.relay and src[1] != self.relay[1]:
                continue
            try:
                return parse_udp(dg)
            except ValueError as e:
                return ("bad", str(e), 0, dg)

    def close(self):
        if self.ctl is not None:
            self.ctl.close()
        try:
            self.udp.close()
        except OSError:
            pass


def udp_port_bound(port, host="127.0.0.1"):
    """True when a UDP socket of this network namespace is bound to
    <port> (from /proc/net/udp and udp6)."""
    for name in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(name) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            p = line.split()
            if len(p) > 2 and int(p[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


# ---------------------------------------------------------------------------
# hookrec records

def records(path):
    try:
        with open(path) as f:
            return [ln.split() for ln in f.read().splitlines() if ln.strip()]
    except OSError:
        return []


def kv(rec):
    return dict(p.split("=", 1) for p in rec[1:] if "=" in p)


def by_conn(path):
    """{conn id: [(PHASE, {fields}), ...]} in record order (INIT/EXIT
    lines left out)."""
    out = {}
    for r in records(path):
        if not r or r[0] in ("INIT", "EXIT", "REOPEN"):
            continue
        d = kv(r)
        out.setdefault(d.get("conn"), []).append((r[0], d))
    return out


def wait_logs(path, n, timeout=None):
    """Waits until <n> LOG lines are recorded; returns by_conn()."""
    ptest.wait_for(lambda: sum(1 for r in records(path) if r and
                               r[0] == "LOG") >= n,
                   timeout or ptest.bound(5))
    return by_conn(path)
