#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Byte budgets (pt_conn_budget_set/add), through the test module ratelimit
(t/modules/ratelimit.c): a token bucket of <burst> bytes refilled at
<rate> bytes per second from a timer, per connection and direction.

With rate 1 MiB/s, each of these streams carries burst + 10 s of rate,
all at once (each on its own connection, so each has its own budget),
through two portico instances, relay.method "splice" and "copy":
- a CONNECT tunnel, download and upload;
- a SOCKS5 tunnel, download and upload;
- an HTTP body, download (GET) and upload (POST);
- a CONNECT upload through the transport bufwire, which holds what it
  read and hands it out in pieces (pending bytes, read under the budget);
- and once, a SOCKS5 UDP association, both ways (payload bytes), and
  two downloads on one HTTP keep-alive connection, each held to the rate
  on its own (the module lifts the budget at LOG and starts a full bucket
  at the next ESTABLISHED).
Each measured rate, (bytes - burst) / (last byte - first byte), taken
where the bytes arrive (the client for downloads, the origin for
uploads), is within 1% of 1 MiB/s, and every byte arrives intact.

While they run the worker uses little CPU: a spent direction is not
polled (a busy loop would show as a whole core). A connection to the
port the module leaves alone (except_port) has no budget and carries
32 MiB at full speed, as before budgets existed.
"""
import hashlib
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest  # noqa: E402
import sockstest  # noqa: E402

MiB = 1024 * 1024
RATE = MiB
BURST = 128 * 1024
SECONDS = 10
N = BURST + RATE * SECONDS
TOLERANCE = 0.01
BLOCK = os.urandom(64 * 1024)


def payload_digest(n):
    h = hashlib.sha256()
    left = n
    while left > 0:
        k = min(left, len(BLOCK))
        h.update(BLOCK[:k])
        left -= k
    return h.hexdigest()


DIGEST = payload_digest(N)


def send_payload(s, n):
    left = n
    while left > 0:
        k = min(left, len(BLOCK))
        s.sendall(BLOCK[:k])
        left -= k


class Meter:
    """Counts bytes as they arrive and when the first and last came."""

    def __init__(self):
        self.n = 0
        self.first = None
        self.last = None
        self.h = hashlib.sha256()

    def feed(self, data):
        now = time.monotonic()
        if self.first is None:
            self.first = now
        self.last = now
        self.n += len(data)
        self.h.update(data)

    def drain(self, s, limit=None):
        while limit is None or self.n < limit:
            want = 65536 if limit is None else min(65536, limit - self.n)
            data = s.recv(want)
            if not data:
                break
            self.feed(data)

    def rate(self):
        if self.first is None or self.last is None or self.last <= self.first:
            return 0.0
        return (self.n - BURST) / (self.last - self.first)

    def describe(self, tolerance=TOLERANCE):
        return "%d bytes in %.3f s: %.0f B/s (want %d +- %d%%)" % (
            self.n, (self.last or 0) - (self.first or 0), self.rate(),
            RATE, int(tolerance * 100))


class Origin(ptest._Server):
    """One origin per stream. mode: "source" sends N bytes then closes;
    "sink" meters until EOF; "http-get" answers any request with an N
    byte body; "http-post" meters a request body of N bytes, then
    answers 200."""

    def __init__(self, mode, nbytes=N):
        self.mode = mode
        self.nbytes = nbytes
        self.meter = Meter()
        super().__init__("127.0.0.1")

    @staticmethod
    def _head(c):
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = c.recv(4096)
            if not data:
                raise OSError("EOF inside a request head")
            buf += data
        head, rest = buf.split(b"\r\n\r\n", 1)
        return head, rest

    def handle(self, c):
        if self.mode == "source":
            send_payload(c, self.nbytes)
            c.shutdown(socket.SHUT_WR)
        elif self.mode == "sink":
            self.meter.drain(c)
        elif self.mode == "http-get":
            self._head(c)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n" % self.nbytes)
            send_payload(c, self.nbytes)
        elif self.mode == "http-get-ka":
            # Keep-alive: one body per request until the client leaves.
            buf = b""
            while True:
                head, buf = httptest.next_head(c, buf)
                if head is None:
                    return
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                          b"\r\n" % self.nbytes)
                send_payload(c, self.nbytes)
        elif self.mode == "http-post":
            _, rest = self._head(c)
            if rest:
                self.meter.feed(rest)
            self.meter.drain(c, self.nbytes)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                      b"Connection: close\r\n\r\n")


def read_head(s):
    """Reads an HTTP response head; returns (status, bytes after it)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = s.recv(4096)
        if not data:
            raise OSError("EOF inside a response head: %r" % buf[:200])
        buf += data
        if len(buf) > 65536:
            raise OSError("response head too long")
    head, rest = buf.split(b"\r\n\r\n", 1)
    return int(head.split(b" ", 2)[1]), rest


def connect_tunnel(proxy, origin, bufwire=False):
    s = ptest.connect(proxy, timeout=ptest.bound(30))
    if bufwire:
        s.sendall(b"BUF1")
        if ptest.recv_exact(s, 2) != b"OK":
            raise OSError("bufwire handshake refused")
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
        origin.address.encode(), origin.address.encode()))
    status, rest = read_head(s)
    if status != 200:
        raise OSError("CONNECT answered %d" % status)
    return s, rest


def socks_tunnel(proxy, origin):
    s = ptest.connect(proxy, timeout=ptest.bound(30))
    s.sendall(b"\x05\x01\x00")
    if ptest.recv_exact(s, 2) != b"\x05\x00":
        raise OSError("SOCKS5 method refused")
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") +
              origin.port.to_bytes(2, "big"))
    rep = ptest.recv_exact(s, 10)
    if rep[1] != 0:
        raise OSError("SOCKS5 reply %d" % rep[1])
    return s, b""


class Stream:
    """One measured stream: <kind> through <proxy>; runs in a thread."""

    def __init__(self, name, kind, proxy_port):
        self.name = name
        self.kind = kind          # connect/socks/http + -down/-up
        self.proxy_port = proxy_port
        self.error = None
        proto, way = kind.split("-")
        self.way = way
        if proto == "http":
            self.origin = Origin("http-get" if way == "down" else
                                 "http-post")
        else:
            self.origin = Origin("source" if way == "down" else "sink")
        self.meter = Meter() if way == "down" else self.origin.meter
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        s = None
        try:
            proto = self.kind.split("-")[0]
            if proto in ("connect", "bufwire"):
                s, rest = connect_tunnel(self.proxy_port, self.origin,
                                         proto == "bufwire")
            elif proto == "socks":
                s, rest = socks_tunnel(self.proxy_port, self.origin)
            else:
                s = ptest.connect(self.proxy_port, timeout=ptest.bound(30))
                rest = b""
            if proto == "http" and self.way == "down":
                s.sendall(b"GET http://%s/ HTTP/1.1\r\nHost: %s\r\n"
                          b"Connection: close\r\n\r\n" % (
                              self.origin.address.encode(),
                              self.origin.address.encode()))
                status, rest = read_head(s)
                if status != 200:
                    raise OSError("GET answered %d" % status)
                if rest:
                    self.meter.feed(rest)
                self.meter.drain(s, N)
            elif proto == "http":
                s.sendall(b"POST http://%s/ HTTP/1.1\r\nHost: %s\r\n"
                          b"Content-Length: %d\r\nConnection: close\r\n"
                          b"\r\n" % (self.origin.address.encode(),
                                     self.origin.address.encode(), N))
                send_payload(s, N)
                status, _ = read_head(s)
                if status != 200:
                    raise OSError("POST answered %d" % status)
            elif self.way == "down":
                if rest:
                    self.meter.feed(rest)
                self.meter.drain(s)
            else:
                send_payload(s, N)
                s.shutdown(socket.SHUT_WR)
                # The origin reads to EOF, then closes: so do we.
                while s.recv(65536):
                    pass
        except Exception as e:  # reported by check()
            self.error = "%s: %s" % (type(e).__name__, e)
        finally:
            if s is not None:
                s.close()

    def check(self, t):
        m = self.meter
        if self.way == "up":
            # The origin's thread meters; it may still be finishing.
            ptest.wait_for(lambda: m.n >= N, ptest.bound(5))
        t.check(self.error is None and m.n == N and
                m.h.hexdigest() == DIGEST,
                "%s: %d bytes arrive intact" % (self.name, N),
                lambda: "error=%s got %d bytes, origin errors %s" % (
                    self.error, m.n, self.origin.errors))
        r = m.rate()
        t.diag("%s: %s" % (self.name, m.describe()))
        t.check(abs(r - RATE) <= TOLERANCE * RATE,
                "%s: rate within 1%% of 1 MiB/s" % self.name,
                m.describe())


class UdpStream:
    """A SOCKS5 UDP association (budgets count datagram payload bytes):
    the client sends 1 KiB datagrams to a peer at twice the rate, and the
    peer sends as many back, for UDP_SECONDS; what is not relayed in time
    the kernel drops. Metered where the datagrams arrive."""

    SIZE = 1024

    def __init__(self, name, proxy_port):
        self.name = name
        self.proxy_port = proxy_port
        self.error = None
        self.up = Meter()         # at the peer
        self.down = Meter()       # at the client
        self.peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.peer.bind(("127.0.0.1", 0))
        self.peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.relay_out = None     # where the relay sends from
        self.known = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _paced(self, send, seconds):
        """Calls send() twice the rate's worth of SIZE times a second."""
        per_tick = 2 * RATE // UdpStream.SIZE // 100
        end = time.monotonic() + seconds
        tick = time.monotonic()
        try:
            while time.monotonic() < end and not self.stop.is_set():
                for _ in range(per_tick):
                    try:
                        send()
                    except (BlockingIOError, InterruptedError,
                            socket.timeout):
                        pass
                tick += 0.01
                time.sleep(max(0.0, tick - time.monotonic()))
        except Exception as e:
            self.error = "sending: %s: %s" % (type(e).__name__, e)

    def _peer_recv(self):
        self.peer.settimeout(0.2)
        while not self.stop.is_set():
            try:
                data, src = self.peer.recvfrom(70000)
            except socket.timeout:
                continue
            except OSError:
                return
            if self.relay_out is None:
                self.relay_out = src
                self.known.set()
            self.up.feed(data)

    def _client_recv(self, u):
        u.udp.settimeout(0.2)
        while not self.stop.is_set():
            try:
                dg, _ = u.udp.recvfrom(70000)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                self.down.feed(sockstest.parse_udp(dg)[3])
            except ValueError as e:
                self.error = "from the relay: %s" % e

    def _run(self):
        u = None
        threads = []
        try:
            u = sockstest.Udp(self.proxy_port, timeout=ptest.bound(10))
            if not u.ok():
                raise OSError(u.describe())
            peer = self.peer.getsockname()
            payload = b"u" * self.SIZE
            hdr = sockstest.udp_header(peer[0], peer[1])
            threads = [threading.Thread(target=self._peer_recv),
                       threading.Thread(target=self._client_recv,
                                        args=(u,))]
            for th in threads:
                th.daemon = True
                th.start()
            sender = threading.Thread(target=self._paced, args=(
                lambda: u.udp.sendto(hdr + payload, u.relay),
                UDP_SECONDS), daemon=True)
            sender.start()
            # The peer answers as soon as it knows the relay's address
            # (the bucket filled at ACCESS: a late start would show as
            # a higher rate).
            if not self.known.wait(ptest.bound(5)):
                raise OSError("no datagram reached the peer")
            self._paced(lambda: self.peer.sendto(payload, self.relay_out),
                        UDP_SECONDS)
            sender.join(ptest.bound(5))
            # What the relay still holds drains at the rate.
            time.sleep(1.0)
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)
        finally:
            self.stop.set()
            for th in threads:
                th.join(2)
            if u is not None:
                u.close()
            self.peer.close()

    def check(self, t):
        for way, m in (("client to peer", self.up),
                       ("peer to client", self.down)):
            t.diag("%s %s: %s" % (self.name, way, m.describe()))
            t.check(self.error is None and
                    abs(m.rate() - RATE) <= UDP_TOLERANCE * RATE,
                    "%s, %s: payload rate within %d%% of 1 MiB/s" % (
                        self.name, way, int(UDP_TOLERANCE * 100)),
                    lambda: "error=%s" % self.error)


UDP_SECONDS = 8
# Datagrams are relayed whole (the last may go past the budget, repaid
# from the next refill): 1 KiB in 8 MiB is far below this.
UDP_TOLERANCE = 0.01

class KeepAliveStream:
    """Two GETs of KA_BYTES on one keep-alive connection: the module
    lifts the budget at each LOG and sets a full bucket at the next
    ESTABLISHED, so each response alone is held to the rate (and the
    second request is not stuck behind the first one's spent budget)."""

    def __init__(self, name, proxy_port):
        self.name = name
        self.proxy_port = proxy_port
        self.error = None
        self.origin = Origin("http-get-ka", KA_BYTES)
        self.meters = [Meter(), Meter()]
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        s = None
        addr = self.origin.address.encode()
        try:
            s = ptest.connect(self.proxy_port, timeout=ptest.bound(30))
            for m in self.meters:
                s.sendall(b"GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n"
                          % (addr, addr))
                status, rest = read_head(s)
                if status != 200:
                    raise OSError("GET answered %d" % status)
                if rest:
                    m.feed(rest)
                m.drain(s, KA_BYTES)
        except Exception as e:
            self.error = "%s: %s" % (type(e).__name__, e)
        finally:
            if s is not None:
                s.close()

    def check(self, t):
        digest = payload_digest(KA_BYTES)
        for i, m in enumerate(self.meters):
            t.diag("%s, response %d: %s" % (self.name, i + 1,
                                             m.describe(KA_TOLERANCE)))
            t.check(self.error is None and m.n == KA_BYTES and
                    m.h.hexdigest() == digest and
                    abs(m.rate() - RATE) <= KA_TOLERANCE * RATE,
                    "%s, response %d: intact, within %d%% of 1 MiB/s" % (
                        self.name, i + 1, int(KA_TOLERANCE * 100)),
                    lambda: "error=%s" % self.error)


KA_BYTES = BURST + 4 * RATE
# 4 s each: a refill tick (20 ms) is 0.5% of it.
KA_TOLERANCE = 0.02

# bufwire: a CONNECT upload through a transport that holds what it read
# and hands it out in pieces (its pending bytes are read under the
# budget too); never spliced, whatever relay.method says.
KINDS = ["connect-down", "connect-up", "socks-down", "socks-up",
         "http-down", "http-up", "bufwire-up"]


def start(t, method, except_port):
    http_port, socks_port = ptest.free_port(), ptest.free_port()
    buf_port = ptest.free_port()
    conf = """
workers = 1;
error_log = "%(tmp)s/error-%(m)s.log";
log_level = "info";
pid_file = "%(tmp)s/portico-%(m)s.pid";
shutdown_timeout = 5;
listeners = (
  { address = "127.0.0.1:%(hp)d"; protocol = "http"; },
  { address = "127.0.0.1:%(sp)d"; protocol = "socks5"; },
  { address = "127.0.0.1:%(bp)d"; protocol = "http";
    transport = "bufwire"; bufwire = { piece = 1000; }; }
);
relay = { method = "%(m)s"; };
http = { connect_ports = "*"; };
modules = (
  { name = "ratelimit"; path = "%(moddir)s/ratelimit.so";
    rate = %(rate)d; burst = %(burst)d; tick_ms = 20;
    except_port = %(xp)d; },
  { name = "bufwire"; path = "%(moddir)s/bufwire.so"; }
);
""" % dict(tmp=t.tmp, m=method, hp=http_port, sp=socks_port,
           bp=buf_port, moddir=ptest.TESTMODDIR, rate=RATE, burst=BURST, xp=except_port)
    p = t.portico(conf, conf_name="%s.conf" % method)
    return p, http_port, socks_port, buf_port


def unlimited(t, method, http_port, fast):
    """A tunnel to except_port: no budget, full speed."""
    m = Meter()
    err = None
    s = None
    try:
        s, rest = connect_tunnel(http_port, fast)
        if rest:
            m.feed(rest)
        m.drain(s)
    except Exception as e:
        err = "%s: %s" % (type(e).__name__, e)
    finally:
        if s is not None:
            s.close()
    t.check(err is None and m.n == fast.nbytes and
            m.h.hexdigest() == payload_digest(fast.nbytes),
            "%s: an unlimited tunnel carries 32 MiB intact" % method,
            lambda: "error=%s got %d bytes" % (err, m.n))
    secs = (m.last or 0) - (m.first or 0)
    t.check(m.n > 0 and secs < fast.nbytes / (8.0 * RATE),
            "%s: an unlimited tunnel is not held to the rate" % method,
            "%d bytes in %.3f s" % (m.n, secs))


def main(t):
    ptest.exclusive(t)
    fast = Origin("source", 32 * MiB)
    t.servers.append(fast)
    procs = {}
    streams = []
    for method in ("splice", "copy"):
        p, hp, sp, bp = start(t, method, fast.port)
        procs[method] = p
        for kind in KINDS:
            port = {"socks": sp, "bufwire": bp}.get(kind.split("-")[0], hp)
            st = Stream("%s %s" % (method, kind), kind, port)
            t.servers.append(st.origin)
            streams.append(st)
        if method == "copy":
            streams.append(UdpStream("UDP association", sp))
        else:
            st = KeepAliveStream("%s keep-alive" % method, hp)
            t.servers.append(st.origin)
            streams.append(st)
    cpu0 = {m: sum(ptest.cpu_seconds(w) for w in p.workers().values())
            for m, p in procs.items()}
    began = time.monotonic()
    for st in streams:
        st.thread.start()
    for st in streams:
        st.thread.join(ptest.bound(SECONDS * 3 + 20))
    elapsed = time.monotonic() - began
    t.check(all(not st.thread.is_alive() for st in streams),
            "every stream ended",
            lambda: [st.name for st in streams if st.thread.is_alive()])
    t.check(elapsed >= SECONDS * (1 - TOLERANCE),
            "the streams took the time the rate allows",
            "%.2f s" % elapsed)
    for st in streams:
        st.check(t)
    for m, p in procs.items():
        cpu = sum(ptest.cpu_seconds(w) for w in p.workers().values()) - cpu0[m]
        # Six streams of 1 MiB/s cost a few percent of a core; a worker
        # polling a spent budget would spin one whole.
        t.check(cpu < 0.5 * elapsed,
                "%s: the worker is not busy while budgets are spent" % m,
                "%.2f s of CPU in %.2f s" % (cpu, elapsed))
    for method in ("splice", "copy"):
        unlimited(t, method, procs[method].listener_ports()[0], fast)
    for p in procs.values():
        t.stop_portico(p)


ptest.Test("module_budget").run(main)
