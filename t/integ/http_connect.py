#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
CONNECT tunnels: 200 (without framing fields), then bytes both ways
exactly (1 MiB through an echo server, sha256), a half-close passed on in
each direction, bytes sent right behind the CONNECT head not lost, IPv6
and host-name targets; a closed port gives 502 with a short body; with the
default connect_ports (443, 563) any other port gives 403; curl -p -x
tunnels plain HTTP to the origin.
"""
import hashlib
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402


def tunnel(port, target, extra=b"", timeout=None):
    """(Resp or error string, Conn) after CONNECT <target>."""
    conn = H.Conn.to(port, timeout=timeout or ptest.bound(10))
    conn.send(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
        target.encode(), target.encode()) + extra)
    try:
        return H.read_response(conn, "CONNECT"), conn
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), conn


class TunnelTransfer(ptest.Transfer):
    """ptest.Transfer through a CONNECT tunnel."""

    def __init__(self, proxy_port, target, nbytes, **kw):
        self.target = target
        self.resp = None
        super().__init__(proxy_port, nbytes, **kw)

    def start(self):
        self.resp, conn = tunnel(self.port, self.target)
        if not isinstance(self.resp, H.Resp) or self.resp.status != 200 or \
                conn.buf:
            conn.close()
            raise RuntimeError("CONNECT %s: %r (then %d bytes)" % (
                self.target, self.resp, len(conn.buf)))
        self.sock = conn.sock
        self.sock.settimeout(self.timeout)
        import threading
        self._ts = threading.Thread(target=self._send, daemon=True)
        self._tr = threading.Thread(target=self._recv, daemon=True)
        self._ts.start()
        self._tr.start()
        return self


def main(t):
    echo = t.echo_server()
    echo6 = t.echo_server("::1") if ptest.have_ipv6() else None
    source = t.source_server(ptest.MiB + 333)
    o = H.origin(t)
    p, port = H.start(t)
    w0 = p.workers()

    r, conn = tunnel(port, echo.address)
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.get("content-length") is None and
            not r.tokens("transfer-encoding"),
            "CONNECT to an echo server: 200, no Content-Length or "
            "Transfer-Encoding", lambda: H.describe(r) + H.log_tail(p)())
    conn.close()

    try:
        x = TunnelTransfer(port, echo.address, ptest.MiB).start()
        x.wait(ptest.bound(30))
        ok, info = x.ok(), x.describe()
        x.close()
    except Exception as e:
        ok, info = False, "%s: %s" % (type(e).__name__, e)
    t.check(ok, "1 MiB both ways through the tunnel, sha256 equal; the "
            "client's half-close reaches the server and the echo is "
            "complete before EOF", info)

    # the server closes first: every byte, then EOF
    r, conn = tunnel(port, source.address)
    h, n, how = hashlib.sha256(), 0, "?"
    if isinstance(r, H.Resp) and r.status == 200:
        data = bytes(conn.buf)
        conn.buf = bytearray()
        h.update(data)
        n += len(data)
        rest, how = H.outcome(conn, ptest.bound(10))
        h.update(rest)
        n += len(rest)
    conn.close()
    t.check(n == source.nbytes and h.hexdigest() == source.digest and
            how == "eof", "a server that sends %d bytes and closes: the "
            "client gets them all, then EOF" % source.nbytes,
            "got %d bytes, then %s; %r" % (n, how, r))

    # after the server's EOF, the client can still send (half-close)
    r, conn = tunnel(port, echo.address)
    ok, info = False, repr(r)
    if isinstance(r, H.Resp) and r.status == 200:
        try:
            conn.send(b"first")
            a = conn.read_exact(5)
            conn.sock.shutdown(socket.SHUT_WR)
            rest, how = H.outcome(conn, ptest.bound(5))
            ok = a == b"first" and rest == b"" and how == "eof"
            info = "echo %r, then %r, %s" % (a, rest, how)
        except Exception as e:
            info = "%s: %s" % (type(e).__name__, e)
    conn.close()
    t.check(ok, "the client's half-close is passed on: the echo server "
            "closes in turn and the client sees EOF", info)

    # bytes right behind the CONNECT head
    r, conn = tunnel(port, echo.address, extra=b"eager bytes")
    got = b""
    if isinstance(r, H.Resp) and r.status == 200:
        try:
            got = conn.read_exact(11)
        except Exception as e:
            got = repr(e).encode()
    conn.close()
    t.check(got == b"eager bytes", "bytes sent in the same write as the "
            "CONNECT head go through the tunnel", "got %r, %r" % (got, r))

    # IPv6 literal and a host name
    if echo6:
        r, conn = tunnel(port, echo6.address)
        got = b""
        if isinstance(r, H.Resp) and r.status == 200:
            conn.send(b"six")
            got = conn.read_exact(3)
        conn.close()
        t.check(got == b"six", "CONNECT [::1]:port works",
                lambda: H.describe(r))
    else:
        t.skip("CONNECT [::1]:port", "no IPv6 loopback")
    r, conn = tunnel(port, "localhost:%d" % echo.port)
    got = b""
    if isinstance(r, H.Resp) and r.status == 200:
        conn.send(b"name")
        got = conn.read_exact(4)
    conn.close()
    t.check(got == b"name", "CONNECT localhost:port works (/etc/hosts)",
            lambda: H.describe(r) + H.log_tail(p)())

    # a closed port
    dead = ptest.free_port()
    r, conn = tunnel(port, "127.0.0.1:%d" % dead)
    rest, how = H.outcome(conn, ptest.bound(5)) if isinstance(r, H.Resp) \
        else (b"", "?")
    conn.close()
    t.check(isinstance(r, H.Resp) and r.status == 502 and
            0 < r.body_len <= 512 and how in ("eof", "reset"),
            "CONNECT to a closed port: 502 with a short body, then closed",
            lambda: H.describe(r) + ["then %s" % how])

    # curl -p -x: plain HTTP through a tunnel
    if not H.have_curl():
        t.skip("curl -p -x", "no curl")
    else:
        cp = H.curl(["-p", "-x", "http://127.0.0.1:%d" % port,
                     o.url + "/echo?id=curl-tunnel"])
        g = o.reqs_for("id=curl-tunnel")
        t.check(cp.returncode == 0 and b"curl-tunnel" in cp.stdout and g and
                g[0]["target"] == "/echo?id=curl-tunnel" and
                not H.fields(g[0]["headers"], "via"),
                "curl -p -x: a GET tunnelled to the origin in origin form, "
                "untouched (no Via)", lambda: [
                    "curl exit %d: %s" % (cp.returncode, cp.stderr),
                    "origin %r" % (g,)])
    H.finish(t, p, w0)

    # default connect_ports: 443 and 563 only
    p2, port2 = H.start(t, http={})
    w2 = p2.workers()
    before = echo.accepted
    r, conn = tunnel(port2, echo.address)
    rest, how = H.outcome(conn, ptest.bound(5)) if isinstance(r, H.Resp) \
        else (b"", "?")
    conn.close()
    t.check(isinstance(r, H.Resp) and r.status == 403 and
            how in ("eof", "reset") and echo.accepted == before,
            "default connect_ports: CONNECT to port %d gets 403, closed, "
            "the target never dialled" % echo.port,
            lambda: H.describe(r) + ["then %s; target accepted %d" % (
                how, echo.accepted - before)])
    r, conn = tunnel(port2, "127.0.0.1:443")
    conn.close()
    t.check(isinstance(r, H.Resp) and r.status != 403,
            "default connect_ports: CONNECT to port 443 is not refused by "
            "policy (200 or 502)", lambda: H.describe(r))
    H.finish(t, p2, w2, "default ports: ")


if __name__ == "__main__":
    ptest.Test("http_connect").run(main)
