#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
SOCKS tunnels carry bytes exactly:

- SOCKS5 CONNECT to an IPv6 literal ([::1]), to a name ("localhost") and
  to an IPv4 address;
- 10 MiB both ways through an echo server with a half-close (the client
  shuts down its write side, still gets every echoed byte, then EOF),
  sha256 equal, with relay method splice and copy;
- a server that sends 1 MiB + 333 and closes: every byte, then EOF; after
  the client's half-close the tunnel still carries the server's bytes;
- 320 short tunnels from 8 threads at once, SOCKS5 and SOCKS4 mixed;
- SOCKS4 and SOCKS4a CONNECT with 256 KiB of binary data (all byte
  values), half-closed;
- early data: bytes sent in the same write as the CONNECT request (and,
  pipelined, in the same write as the greeting and the request, before
  the method selection was read) arrive intact after the reply; the same
  for SOCKS4;
- an origin that speaks first and closes at once (a 7-byte banner, then
  FIN, likely there before the connect is even reported): 20 SOCKS5 and
  SOCKS4 tunnels in a row, the client silent, each get the banner and
  EOF. The edges of the upstream socket come before the relay takes it
  (dial.c notes them); one lost would leave the tunnel waiting.
"""
import hashlib
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

BIG = 10 * ptest.MiB
BINARY = bytes(range(256)) * 1024       # 256 KiB, every byte value


class SocksTransfer(ptest.Transfer):
    """ptest.Transfer through a SOCKS5 (or SOCKS4) tunnel."""

    def __init__(self, proxy_port, host, port, nbytes, v4=False, **kw):
        self.dst = (host, port)
        self.v4 = v4
        self.reply = None
        super().__init__(proxy_port, nbytes, **kw)

    def start(self):
        if self.v4:
            host, port = self.dst
            name = None if host.replace(".", "").isdigit() else host
            self.reply, c = S.connect4(self.port, host if name is None
                                       else "0.0.0.1", port, name=name)
            good = S.ok4(self.reply)
        else:
            self.reply, c = S.connect5(self.port, *self.dst)
            good = S.ok5(self.reply)
        if not good or c.buf:
            c.close()
            raise RuntimeError("CONNECT %s: %r (then %d bytes)" % (
                self.dst, self.reply, len(c.buf)))
        self.sock = c.sock
        self.sock.settimeout(self.timeout)
        self._ts = threading.Thread(target=self._send, daemon=True)
        self._tr = threading.Thread(target=self._recv, daemon=True)
        self._ts.start()
        self._tr.start()
        return self


def transfer(proxy_port, host, port, nbytes, wait, **kw):
    try:
        x = SocksTransfer(proxy_port, host, port, nbytes, **kw).start()
        x.wait(wait)
        ok, info = x.ok(), x.describe()
        x.close()
    except Exception as e:
        ok, info = False, "%s: %s" % (type(e).__name__, e)
    return ok, info


def binary_roundtrip(c, data):
    """Sends <data> with a half-close, reads the echo to EOF."""
    got = bytearray()
    err = []

    def send():
        try:
            c.sock.sendall(data)
            c.sock.shutdown(socket.SHUT_WR)
        except OSError as e:
            err.append("send: " + ptest.err_kind(e))
    th = threading.Thread(target=send, daemon=True)
    th.start()
    rest, how = H.outcome(c, ptest.bound(20))
    got += rest
    th.join(ptest.bound(5))
    return bytes(got), how, err


def main(t):
    echo = t.echo_server()
    echo6 = t.echo_server("::1") if ptest.have_ipv6() else None
    source = t.source_server(ptest.MiB + 333)

    for method in ("splice", "copy"):
        p, port = S.start(t, conf_name="%s.conf" % method, workers=2,
                          extra='relay = { method = "%s"; };' % method)
        w0 = p.workers()
        ok, info = transfer(port, "127.0.0.1", echo.port, BIG,
                            ptest.bound(60))
        t.check(ok, "%s: 10 MiB both ways through a SOCKS5 tunnel, "
                "half-close, sha256 equal, then EOF" % method,
                lambda: [info] + H.log_tail(p)())
        xs = []
        for i in range(3):
            try:
                xs.append(SocksTransfer(port, "127.0.0.1", echo.port,
                                        2 * ptest.MiB,
                                        chunk=1000 if i == 0 else 65536)
                          .start())
            except Exception as e:
                t.diag("parallel %d: %s" % (i, e))
        for x in xs:
            x.wait(ptest.bound(60))
        bad = [x.describe() for x in xs if not x.ok()]
        t.check(len(xs) == 3 and not bad, "%s: three parallel 2 MiB "
                "transfers are exact" % method, bad)
        for x in xs:
            x.close()
        # many short tunnels from 8 threads, SOCKS5 and SOCKS4 mixed
        fails = []
        lock = threading.Lock()

        def shorts(k):
            for j in range(40):
                payload = b"%d.%d." % (k, j) + os.urandom(64)
                if j % 4 == 3:
                    r, c = S.connect4(port, "127.0.0.1", echo.port)
                    ok, why = S.echo_check(c, payload) if S.ok4(r) else \
                        (False, repr(r))
                else:
                    r, c = S.connect5(port, "127.0.0.1" if j % 2 else
                                      "localhost", echo.port)
                    ok, why = S.echo_check(c, payload) if S.ok5(r) else \
                        (False, repr(r))
                c.close()
                if not ok:
                    with lock:
                        fails.append("%d.%d: %s" % (k, j, why))
        ths = [threading.Thread(target=shorts, args=(k,), daemon=True)
               for k in range(8)]
        for th in ths:
            th.start()
        for th in ths:
            th.join(ptest.bound(60))
        t.check(not fails and not any(th.is_alive() for th in ths),
                "%s: 320 short tunnels from 8 threads (SOCKS5 by address "
                "and by name, SOCKS4) all echo" % method, fails[:10])
        if method == "splice":
            H.finish(t, p, w0, "%s: " % method)
    # the rest on the copy instance, still running

    # IPv6 literal, name, IPv4
    if echo6:
        r, c = S.connect5(port, "::1", echo6.port)
        ok, why = S.echo_check(c, b"six") if S.ok5(r) else (False, r)
        c.close()
        t.check(ok, "CONNECT to [::1] (ATYP 4) works", lambda: [
            "reply %r: %s" % (r, why)] + H.log_tail(p)())
        ok, info = transfer(port, "::1", echo6.port, ptest.MiB,
                            ptest.bound(30))
        t.check(ok, "1 MiB both ways to [::1], half-close", info)
    else:
        t.skip("CONNECT to [::1]", "no IPv6 loopback")
        t.skip("1 MiB to [::1]", "no IPv6 loopback")
    r, c = S.connect5(port, "localhost", echo.port)
    ok, why = S.echo_check(c, b"by name") if S.ok5(r) else (False, r)
    c.close()
    t.check(ok, "CONNECT to localhost (ATYP 3, resolved by the proxy) "
            "works", lambda: ["reply %r: %s" % (r, why)] + H.log_tail(p)())

    # the server sends and closes first
    r, c = S.connect5(port, "127.0.0.1", source.port)
    h, n, how = hashlib.sha256(), 0, "?"
    if S.ok5(r):
        data = bytes(c.buf)
        c.buf = bytearray()
        rest, how = H.outcome(c, ptest.bound(10))
        h.update(data + rest)
        n = len(data) + len(rest)
    c.close()
    t.check(n == source.nbytes and h.hexdigest() == source.digest and
            how == "eof", "a server that sends %d bytes and closes: all of "
            "them, then EOF" % source.nbytes, "got %d bytes, then %s; %r" % (
                n, how, r))

    # the client half-closes first; the server's bytes still come
    r, c = S.connect5(port, "127.0.0.1", source.port)
    n, how = 0, "?"
    if S.ok5(r):
        try:
            c.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        rest, how = H.outcome(c, ptest.bound(10))
        n = len(c.buf) + len(rest)
    c.close()
    t.check(n == source.nbytes and how == "eof", "a client that "
            "half-closes at once still receives the server's %d bytes, "
            "then EOF" % source.nbytes, "got %d, then %s" % (n, how))

    # SOCKS4 and 4a with binary data
    for label, kw in (("SOCKS4", {}), ("SOCKS4a", {"name": "localhost"})):
        r, c = S.connect4(port, "127.0.0.1", echo.port, userid=b"bin",
                          **kw)
        got, how, err = binary_roundtrip(c, BINARY) if S.ok4(r) else \
            (b"", "no tunnel", [])
        c.close()
        t.check(S.ok4(r) and got == BINARY and how == "eof" and not err,
                "%s CONNECT: VN 0 CD 0x5A, 256 KiB of every byte value "
                "echoed exact, half-close, EOF" % label,
                "reply %r, got %d bytes (equal %s), %s %s" % (
                    r, len(got), got == BINARY, how, err))

    # early data
    early = os.urandom(3000)
    r, c = S.connect5(port, "127.0.0.1", echo.port, early=early)
    got = b""
    if S.ok5(r):
        try:
            got = c.read_exact(len(early))
        except Exception as e:
            got = repr(e).encode()
    c.close()
    t.check(got == early, "3000 bytes in the same write as the CONNECT "
            "request arrive after the reply, intact",
            "reply %r, got %d bytes" % (r, len(got)))

    r, c = S.connect5(port, "localhost", echo.port, early=early)
    got = b""
    if S.ok5(r):
        try:
            got = c.read_exact(len(early))
        except Exception as e:
            got = repr(e).encode()
    c.close()
    t.check(got == early, "CONNECT to localhost (ATYP 3) with 3000 bytes "
            "in the same write: the reply, then the bytes intact",
            "reply %r, got %d bytes" % (r, len(got)))

    c = S.Client.to(port)
    got, m, r = b"", None, None
    try:
        c.send(b"\x05\x01\x00" + b"\x05\x01\x00" +
               S.addr_bytes("127.0.0.1", echo.port) + early)
        m = c.greet(send=False)
        r = c.read_reply()
        got = c.read_exact(len(early))
    except Exception as e:
        got = repr(e).encode()
    c.close()
    t.check(m == 0 and S.ok5(r) and got == early,
            "greeting, request and 3000 bytes in one write (pipelined): "
            "05 00, the reply, then the bytes intact",
            "method %r, reply %r, got %d bytes" % (m, r, len(got)))

    # a lot of early data: the client writes 1 MiB right behind the
    # request without reading anything (the proxy must not take it for an
    # over-long handshake)
    c = S.Client.to(port)
    lot = os.urandom(ptest.MiB)
    errs = []

    def pour():
        try:
            c.sock.sendall(b"\x05\x01\x00\x05\x01\x00" +
                           S.addr_bytes("127.0.0.1", echo.port) + lot)
        except OSError as e:
            errs.append(ptest.err_kind(e))
    th = threading.Thread(target=pour, daemon=True)
    th.start()
    m, r, got = None, None, b""
    try:
        m = c.greet(send=False)
        r = c.read_reply()
        got = c.read_exact(len(lot))
    except Exception as e:
        errs.append("%s: %s" % (type(e).__name__, e))
    th.join(ptest.bound(10))
    c.close()
    t.check(m == 0 and S.ok5(r) and got == lot and not errs,
            "greeting, request and 1 MiB written at once, "
            "nothing read before: 05 00, the reply, then the 1 MiB intact",
            "method %r, reply %r, got %d bytes (equal %s), %s" % (
                m, r, len(got), got == lot, errs))

    for label, kw in (("SOCKS4", {}), ("SOCKS4a", {"name": "localhost"})):
        r, c = S.connect4(port, "127.0.0.1", echo.port, early=early, **kw)
        got = b""
        if S.ok4(r):
            try:
                got = c.read_exact(len(early))
            except Exception as e:
                got = repr(e).encode()
        c.close()
        t.check(got == early, "%s: 3000 bytes in the same write as the "
                "request arrive after the reply, intact" % label,
                "reply %r, got %d bytes" % (r, len(got)))

    banner = t.source_server(7)
    bad = []
    for i in range(20):
        if i % 2:
            r, c = S.connect4(port, "127.0.0.1", banner.port)
            ok = S.ok4(r)
        else:
            r, c = S.connect5(port, "127.0.0.1", banner.port)
            ok = S.ok5(r)
        data, how, _ = S.ending(c, ptest.bound(5)) if ok else (b"", "", 0)
        c.close()
        if not ok or len(data) != 7 or how != "eof":
            bad.append("%d: reply %r, %d bytes, %s" % (i, r, len(data), how))
    t.check(not bad, "an origin that sends 7 bytes and closes at once: 20 "
            "SOCKS5/SOCKS4 tunnels, the client silent, each get the 7 "
            "bytes then EOF", bad[:5])

    ok, info = transfer(port, "localhost", echo.port, ptest.MiB,
                        ptest.bound(30), v4=True)
    t.check(ok, "1 MiB both ways through a SOCKS4 tunnel (half-close)",
            info)
    t.check(not echo.errors and not (echo6 and echo6.errors),
            "the echo servers saw no error",
            lambda: echo.errors + (echo6.errors if echo6 else []))
    H.finish(t, p, w0, "copy: ")


if __name__ == "__main__":
    ptest.Test("socks_tunnel").run(main)
