#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A transport that holds plaintext (as TLS does, SSL_pending): the test
module bufwire (t/modules/bufwire.c) reads up to 64 KiB from the socket,
hands it out a few bytes at a time and reports the rest through pending().
Those bytes raise no epoll event, so each reader must drain them before it
waits for the socket again. Every client below sends its handshake
("BUF1") and what follows in one segment, then waits: a reader that waits
for an event stalls until the timeout.

- tcp: 2 MiB through the tunnel and back, byte-exact, in bounded time;
  the transport's shutdown says -EAGAIN twice before it succeeds, and
  the client still gets every byte and a clean EOF;
- socks5: greeting and request (and 16 KiB of early data) in the
  handshake's segment, which leaves the socket empty: only pending()
  tells the bytes are there; the tunnel then carries 1 MiB more;
- http: a GET whose head comes with the handshake, two pipelined GETs in
  one segment (keep-alive), a POST whose 200 KiB body comes with its
  head, and a CONNECT with 64 KiB of early data then 1 MiB;
- the module's per-connection line shows it did hold surplus bytes
  (held > piece), so these checks exercise the pending path;
- a shutdown that says -EAGAIN forever is called again every 50 ms (or
  on EPOLLOUT), not in a loop, and the connection closes at
  header_timeout with every byte delivered.
"""
import hashlib
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

CONF = """
workers = 1;
error_log = "@TMP@/error-@RELAY@.log";
log_level = "debug";
pid_file = "@TMP@/portico.pid";
shutdown_timeout = 5;
relay = { method = "@RELAY@"; };
limits = { header_timeout = 2; idle_timeout = 30; };
http = { connect_ports = "*"; };
listeners = (
  { address = "127.0.0.1:@TCP@"; protocol = "tcp"; to = "@ECHO@";
    transport = "bufwire";
    bufwire = { piece = 7; shutdown_eagain = 2; }; },
  { address = "127.0.0.1:@SOCKS@"; protocol = "socks5";
    transport = "bufwire"; bufwire = { piece = 3; }; },
  { address = "127.0.0.1:@HTTP@"; protocol = "http";
    transport = "bufwire"; bufwire = { piece = 5; }; },
  { address = "127.0.0.1:@STUCK@"; protocol = "tcp"; to = "@ECHO@";
    transport = "bufwire";
    bufwire = { piece = 1000; shutdown_eagain = 1000000; }; }
);
modules = ( { name = "bufwire"; path = "@MODDIR@/bufwire.so"; } );
"""


def sha(b):
    return hashlib.sha256(b).hexdigest()


def pump(conn, payload):
    """Sends <payload> on H.Conn <conn>, half-closes, and reads until
    EOF. Returns (data, seconds, why)."""
    got = bytearray()
    why = []
    t0 = time.monotonic()

    def reader():
        try:
            got.extend(conn.read_until_eof(limit=64 * ptest.MiB))
        except Exception as e:
            why.append("%s: %s" % (type(e).__name__, e))
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    try:
        conn.sock.sendall(payload)
        conn.sock.shutdown(socket.SHUT_WR)
    except OSError as e:
        why.append("send: %s" % e)
    th.join(ptest.bound(30))
    if th.is_alive():
        why.append("still reading after %ds" % ptest.bound(30))
    return bytes(got), time.monotonic() - t0, "; ".join(why)


def held_lines(p):
    out = []
    for ln in p.log_lines(r"bufwire: in=\d+ held=\d+"):
        m = re.search(r"in=(\d+) held=(\d+) shutdown_tries=(\d+)", ln)
        out.append(tuple(int(x) for x in m.groups()))
    return out


def tcp_case(t, p, port, relay):
    payload = os.urandom(2 * ptest.MiB)
    before = len(held_lines(p))
    conn = H.Conn.to(port, timeout=ptest.bound(20))
    first = payload[:32768]
    conn.send(b"BUF1" + first)
    try:
        ok = conn.read_exact(2)
    except Exception as e:
        ok = repr(e)
    t.check(ok == b"OK", "%s tcp: the handshake is answered" % relay, ok)
    data, secs, why = pump(conn, payload[32768:])
    conn.close()
    t.check(not why and sha(data) == sha(payload),
            "%s tcp: 2 MiB come back byte-exact, then EOF (%.2fs)"
            % (relay, secs), lambda: ["got %d bytes: %s" % (len(data), why)]
            + ptest.tail(p.log(), 20))
    eagain = p.wait_log(r"bufwire: shutdown says EAGAIN \(2\)", 1,
                        timeout=ptest.bound(5))
    t.check(len(eagain) >= 1,
            "%s tcp: the transport's shutdown said EAGAIN twice" % relay,
            lambda: ptest.tail(p.log(), 20))
    ends = ptest.wait_for(lambda: len(held_lines(p)) > before and
                          held_lines(p), ptest.bound(5)) or []
    last = ends[-1] if len(ends) > before else None
    t.check(last is not None and last[2] == 3 and last[1] > 7 and
            last[0] == len(payload),
            "%s tcp: the connection ended after the third shutdown call; "
            "the transport held surplus bytes" % relay,
            lambda: ["end lines %s" % ends[before:]] +
            ptest.tail(p.log(), 20))
    t.check(not p.log_lines("transport shutdown timed out"),
            "%s tcp: no shutdown timed out" % relay)


def stuck_case(t, p, port, relay):
    """A shutdown that never stops saying -EAGAIN: retried without
    spinning, and the connection ends at header_timeout (2 s)."""
    payload = os.urandom(256 * 1024)
    before = len(held_lines(p))
    conn = H.Conn.to(port, timeout=ptest.bound(20))
    conn.send(b"BUF1")
    ok = conn.read_exact(2)
    data, secs, why = pump(conn, payload)
    conn.close()
    t.check(ok == b"OK" and not why and sha(data) == sha(payload) and
            1.5 <= secs <= ptest.bound(6),
            "%s stuck shutdown: every byte arrives, and the connection ends "
            "at header_timeout (%.2fs)" % (relay, secs),
            lambda: ["got %d: %s" % (len(data), why)] +
            ptest.tail(p.log(), 10))
    ends = ptest.wait_for(lambda: len(held_lines(p)) > before and
                          held_lines(p), ptest.bound(5)) or []
    tries = ends[-1][2] if len(ends) > before else -1
    t.check(2 <= tries <= 2000 // 50 + 10,
            "%s stuck shutdown: retried every 50 ms or on EPOLLOUT, not in "
            "a loop (%d calls)" % (relay, tries), lambda: ends[before:])
    t.check(len(p.wait_log("transport shutdown timed out", 1)) >= 1,
            "%s stuck shutdown: the log says why it closed" % relay,
            lambda: ptest.tail(p.log(), 10))


def socks_case(t, p, port, echo, relay, nearly):
    """The handshake's segment fits the module's 64 KiB: after it the
    socket is empty and only pending() tells that the greeting's
    followers are there."""
    early = os.urandom(nearly)
    rest = os.urandom(1 * ptest.MiB)
    relay = "%s (%d early)" % (relay, nearly)
    conn = H.Conn.to(port, timeout=ptest.bound(20))
    req = b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + \
        echo.port.to_bytes(2, "big")
    t0 = time.monotonic()
    conn.send(b"BUF1" + b"\x05\x01\x00" + req + early)
    try:
        head = conn.read_exact(2 + 2 + 10)
    except Exception as e:
        head = repr(e).encode()
    t.check(head[:4] == b"OK\x05\x00" and head[4:6] == b"\x05\x00",
            "%s socks: greeting and request read from the transport's "
            "buffer are answered (%.2fs)" % (relay, time.monotonic() - t0),
            lambda: [repr(head)] + ptest.tail(p.log(), 20))
    data, secs, why = pump(conn, rest)
    conn.close()
    t.check(not why and sha(data) == sha(early + rest),
            "%s socks: early bytes + 1 MiB come back byte-exact (%.2fs)"
            % (relay, secs), lambda: ["got %d of %d: %s" % (
                len(data), len(early + rest), why)] + ptest.tail(p.log(), 20))


def http_case(t, p, port, origin, echo, relay):
    base = "http://127.0.0.1:%d" % origin.port
    # One GET, its head in the handshake's segment.
    conn = H.Conn.to(port, timeout=ptest.bound(15))
    conn.send(b"BUF1" + H.request_bytes("GET", base + "/len?n=300000",
                                        [("Connection", "close")]))
    try:
        ok = conn.read_exact(2)
        r = H.read_response(conn)
    except Exception as e:
        ok, r = b"", "%s: %s" % (type(e).__name__, e)
    conn.close()
    t.check(ok == b"OK" and isinstance(r, H.Resp) and r.status == 200 and
            r.body_sha == H.sha(H.pattern(300000)),
            "%s http: a GET sent with the handshake is answered in full"
            % relay, lambda: H.describe(r) + ptest.tail(p.log(), 20))

    # Two pipelined GETs in one segment: the second waits in the module.
    conn = H.Conn.to(port, timeout=ptest.bound(15))
    conn.send(b"BUF1" + H.request_bytes("GET", base + "/echo?a=1") +
              H.request_bytes("GET", base + "/echo?a=2",
                              [("Connection", "close")]))
    rs = []
    try:
        conn.read_exact(2)
        rs.append(H.read_response(conn))
        rs.append(H.read_response(conn))
    except Exception as e:
        rs.append("%s: %s" % (type(e).__name__, e))
    conn.close()
    t.check(len(rs) == 2 and all(isinstance(x, H.Resp) and x.status == 200
                                 for x in rs) and
            [x.json()["target"] for x in rs] == ["/echo?a=1", "/echo?a=2"],
            "%s http: two pipelined requests in one segment are both "
            "answered, in order" % relay,
            lambda: [repr(x) for x in rs] + ptest.tail(p.log(), 20))

    # A POST whose body comes with its head.
    body = os.urandom(200 * 1024)
    conn = H.Conn.to(port, timeout=ptest.bound(15))
    conn.send(b"BUF1" + H.request_bytes("POST", base + "/echo",
                                        [("Connection", "close")], body))
    try:
        conn.read_exact(2)
        r = H.read_response(conn)
        js = r.json()
    except Exception as e:
        r, js = "%s: %s" % (type(e).__name__, e), {}
    conn.close()
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            js.get("body_len") == len(body) and
            js.get("body_sha256") == sha(body),
            "%s http: a 200 KiB body sent with its head reaches the origin "
            "intact" % relay, lambda: H.describe(r) + ptest.tail(p.log(), 20))

    # CONNECT with early data, then a bulk transfer.
    early = os.urandom(65536)
    rest = os.urandom(1 * ptest.MiB)
    conn = H.Conn.to(port, timeout=ptest.bound(20))
    conn.send(b"BUF1" + ("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: "
                         "127.0.0.1:%d\r\n\r\n" % (echo.port, echo.port))
              .encode() + early)
    try:
        conn.read_exact(2)
        r = H.read_response(conn, "CONNECT")
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    data, secs, why = pump(conn, rest) if isinstance(r, H.Resp) \
        else (b"", 0, "no 200")
    conn.close()
    t.check(isinstance(r, H.Resp) and r.status == 200 and not why and
            sha(data) == sha(early + rest),
            "%s http: CONNECT with 64 KiB early data, then 1 MiB, comes "
            "back byte-exact (%.2fs)" % (relay, secs),
            lambda: H.describe(r) + ["got %d of %d: %s" % (
                len(data), len(early + rest), why)] + ptest.tail(p.log(), 20))


def main(t):
    echo = t.echo_server()
    origin = H.origin(t)
    for relay in ("splice", "copy"):
        ports = [ptest.free_port() for _ in range(4)]
        conf = ptest.fill(CONF, TMP=t.tmp, MODDIR=ptest.TESTMODDIR,
                          RELAY=relay, TCP=ports[0], SOCKS=ports[1],
                          HTTP=ports[2], STUCK=ports[3], ECHO=echo.address)
        p = t.portico(conf, conf_name="pending-%s.conf" % relay)
        tcp_case(t, p, ports[0], relay)
        socks_case(t, p, ports[1], echo, relay, 0)
        socks_case(t, p, ports[1], echo, relay, 16384)
        http_case(t, p, ports[2], origin, echo, relay)
        ends = held_lines(p)
        t.check(ends and all(h[1] > 7 for h in ends if h[0] > 0),
                "%s: every connection's transport held surplus bytes "
                "(held > piece)" % relay, lambda: ["%s" % (ends,)])
        stuck_case(t, p, ports[3], relay)
        t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("transport_pending").run(main)
