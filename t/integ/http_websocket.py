#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
WebSocket through the proxy (RFC 6455 over RFC 9110 7.8 Upgrade): the
upgrade request reaches the origin with Upgrade and Connection: upgrade,
the 101 comes back with the right Sec-WebSocket-Accept, then frames echo
both ways (text, 100 KiB and 1 MiB binary, a fragmented message, ping and
pong) and a close handshake ends in EOF. An origin that declines the
upgrade answers normally and the connection stays HTTP. An upgrade
request with a 4 MiB body that the origin answers with 101 before it
reads the body: the origin still gets the whole body, then what the
client sent after it, byte for byte (the proxy had framed some of it and
not yet written it when the 101 came). A 101 that names another protocol
than websocket, or none, is a 502 (RFC 9110 7.8), not a tunnel.
"""
import base64
import hashlib
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402


def upgrade(port, url, key, extra=()):
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    conn.send(H.request_bytes("GET", url, [
        ("Upgrade", "websocket"), ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13"),
        ("Origin", "http://example.test")] + list(extra)))
    try:
        return H.read_response(conn), conn
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), conn


class EarlyUpgrade(ptest._Server):
    """Reads a request head, waits, answers 101 before reading the body,
    then keeps everything that follows in .got: until EOF, or until
    <expect> bytes came and then nothing more for half a second (the
    client sends nothing after them, so only a proxy that added bytes
    would send more; waiting for EOF instead cost the whole 5 s timeout,
    15 s under the sanitizers)."""

    def __init__(self, expect=None):
        self.got = b""
        self.expect = expect
        self.done = threading.Event()
        super().__init__()

    def handle(self, c):
        data = ptest.recv_head(c)
        if data is None:
            return
        time.sleep(0.3)         # the proxy is blocked on the body by now
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
                  b"websocket\r\nConnection: Upgrade\r\n\r\n")
        time.sleep(1.0)
        rest = data.split(b"\r\n\r\n", 1)[1]
        c.settimeout(ptest.bound(5))
        try:
            while True:
                if self.expect is not None and len(rest) >= self.expect:
                    c.settimeout(0.5)
                d = c.recv(65536)
                if not d:
                    break
                rest += d
        except OSError:
            pass
        self.got = rest
        self.done.set()


class WrongUpgrade(ptest._Server):
    """Answers a request head with 101 naming <upgrade> (None: no
    Upgrade field), then "RAW" as the new protocol would."""

    def __init__(self, upgrade):
        self.upgrade = upgrade
        super().__init__()

    def handle(self, c):
        if ptest.recv_head(c) is None:
            return
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\n" +
                  (b"Upgrade: %s\r\n" % self.upgrade if self.upgrade
                   else b"") + b"Connection: Upgrade\r\n\r\nRAW")
        time.sleep(0.5)


def wrong_upgrade(t, port):
    """A 101 to a websocket request that names another protocol, or
    none: 502, no tunnel (RFC 9110 7.8)."""
    for up in (b"h2c", None):
        o = WrongUpgrade(up)
        t.servers.append(o)
        r, conn = upgrade(port, "http://%s/ws" % o.address,
                          base64.b64encode(os.urandom(16)).decode())
        conn.close()
        t.check(isinstance(r, H.Resp) and r.status == 502,
                "a 101 naming %s instead of websocket: 502, no tunnel"
                % (up.decode() if up else "no protocol"), H.describe(r))


def early_101(t, port):
    n = 4 * 1024 * 1024
    body = os.urandom(n)
    tail = b"AFTER THE BODY"
    o = EarlyUpgrade(expect=n + len(tail))
    t.servers.append(o)
    s = ptest.connect(port, timeout=ptest.bound(10))
    s.sendall(b"POST http://%s/ws HTTP/1.1\r\nHost: x\r\nConnection: "
              b"Upgrade\r\nUpgrade: websocket\r\nContent-Length: %d\r\n\r\n"
              % (o.address.encode(), n))
    try:
        s.sendall(body + tail)
    except OSError:
        pass
    o.done.wait(ptest.bound(15))
    s.close()
    t.check(o.got == body + tail, "a 101 before the origin read a 4 MiB "
            "request body: the origin gets the whole body, then the bytes "
            "after it", "got %d of %d bytes" % (len(o.got), n + len(tail)))


def main(t):
    o = H.origin(t)
    p, port = H.start(t)
    w0 = p.workers()

    key = base64.b64encode(os.urandom(16)).decode()
    want = base64.b64encode(hashlib.sha1(key.encode() + H.WS_GUID).digest()) \
        .decode()
    r, conn = upgrade(port, o.url + "/ws?id=ws1", key)
    t.at_exit(conn.close)
    ok101 = isinstance(r, H.Resp) and r.status == 101
    t.check(ok101 and r.get("sec-websocket-accept") == want and
            "websocket" in r.tokens("upgrade") and
            "upgrade" in r.tokens("connection"),
            "upgrade: 101 with Upgrade: websocket, Connection: upgrade and "
            "the right Sec-WebSocket-Accept", lambda: H.describe(r) +
            H.log_tail(p)())
    g = o.reqs_for("id=ws1")
    hs = g[0]["headers"] if g else []
    t.check(g and "websocket" in H.tokens(hs, "upgrade") and
            "upgrade" in H.tokens(hs, "connection") and
            H.field(hs, "sec-websocket-key") == key and
            H.field(hs, "sec-websocket-version") == "13" and
            H.field(hs, "origin") == "http://example.test",
            "the origin got Upgrade, Connection: upgrade and the WebSocket "
            "fields", "origin saw %r" % (hs,))

    def roundtrip(frames):
        """Sends frames (op, data, fin); returns what came back."""
        out = []
        for op, data, fin in frames:
            conn.send(H.ws_frame(op, data, fin=fin))
        for _ in frames:
            fr = H.ws_read(conn)
            if fr is None:
                out.append("EOF")
                break
            out.append(fr)
        return out

    if ok101:
        try:
            got = roundtrip([(1, b"hello, proxy", True)])
            t.check(got == [(True, 1, b"hello, proxy")],
                    "a text frame echoes back", repr(got))
            b1 = os.urandom(100 * 1024)
            got = roundtrip([(2, b1, True)])
            t.check(got == [(True, 2, b1)],
                    "a 100 KiB binary frame echoes back exact",
                    repr(got)[:200])
            b2 = os.urandom(ptest.MiB)
            got = roundtrip([(2, b2, True)])
            t.check(got == [(True, 2, b2)],
                    "a 1 MiB binary frame echoes back exact", repr(got)[:200])
            got = roundtrip([(1, b"frag-1 ", False), (0, b"frag-2 ", False),
                             (0, b"frag-3", True)])
            t.check(got == [(False, 1, b"frag-1 "), (False, 0, b"frag-2 "),
                            (True, 0, b"frag-3")],
                    "a message in three fragments echoes back in order",
                    repr(got))
            got = roundtrip([(9, b"are you there", True)])
            t.check(got == [(True, 10, b"are you there")],
                    "ping gets its pong", repr(got))
            many = [(2, os.urandom(i * 7 + 1), True) for i in range(200)]
            got = roundtrip(many)
            t.check(got == [(True, op, d) for op, d, _ in many],
                    "200 small frames in a burst echo back in order",
                    "got %d frames" % len(got))
            conn.send(H.ws_frame(8, b"\x03\xe8bye"))
            fr = H.ws_read(conn)
            rest, how = H.outcome(conn, ptest.bound(5))
            t.check(fr is not None and fr[1] == 8 and rest == b"" and
                    how == "eof",
                    "close frame: the server's close comes back, then EOF",
                    "frame %r, then %r, %s" % (fr, rest[:60], how))
        except Exception as e:
            t.check(False, "the WebSocket exchange ran without an error",
                    "%s: %s" % (type(e).__name__, e))
    else:
        t.check(False, "WebSocket frames echo back",
                "not tried: the upgrade got no 101")
    conn.close()

    # an origin that does not switch: a normal response, HTTP goes on
    r, conn = upgrade(port, o.url + "/len?n=1234&id=noswitch", key)
    ok = isinstance(r, H.Resp) and r.status == 200 and r.body_len == 1234
    r2 = None
    if ok:
        try:
            conn.send(H.request_bytes("GET", o.url + "/echo?id=after-no"))
            r2 = H.read_response(conn)
        except Exception as e:
            r2 = "%s: %s" % (type(e).__name__, e)
    conn.close()
    t.check(ok and isinstance(r2, H.Resp) and r2.status == 200,
            "an origin declining the upgrade: its 200 arrives and the "
            "connection carries the next request", lambda: H.describe(r) +
            H.describe(r2))

    # two WebSockets at once
    conns = []
    try:
        for i in range(2):
            r, c = upgrade(port, o.url + "/ws?id=par%d" % i, key)
            conns.append(c)
            if not (isinstance(r, H.Resp) and r.status == 101):
                raise RuntimeError("upgrade %d: %r" % (i, r))
        for i, c in enumerate(conns):
            c.send(H.ws_frame(1, b"socket %d" % i))
        got = [H.ws_read(c) for c in conns]
        ok = got == [(True, 1, b"socket 0"), (True, 1, b"socket 1")]
        info = repr(got)
    except Exception as e:
        ok, info = False, "%s: %s" % (type(e).__name__, e)
    for c in conns:
        c.close()
    t.check(ok, "two WebSockets at once, each gets its own echo", info)

    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)
    early_101(t, port)
    wrong_upgrade(t, port)
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("http_websocket").run(main)
