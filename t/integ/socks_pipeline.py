#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
SOCKS5 clients that pipeline: the proxy holds back an answer the client is
not waiting for and sends it with the next one (one write, one wake-up of
the client), and answers at once a client that may be waiting:

- a greeting alone gets its method selection at once;
- a greeting and a CONNECT in one write, to a port that never answers
  (connect_timeout 2 s): nothing comes back until the connect times out,
  then 05 00 and the 0x06 reply together, then the proxy closes;
- the same with username/password: 05 02, 01 00 and 0x06 together at the
  connect timeout;
- a greeting and half a request: 05 00 at once (this client may be
  waiting for it); the rest of the request then opens a tunnel that
  echoes;
- greeting, credentials, request and early data in one write to an echo
  server: 05 02, 01 00, a success reply, then the data echoed intact.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

CONNECT_TIMEOUT = 2


def first_bytes(c, timeout):
    """(bytes of the first recv, seconds until it returned) or (b'', dt)
    at EOF or timeout."""
    t0 = time.monotonic()
    c.sock.settimeout(timeout)
    try:
        d = c.sock.recv(4096)
    except (socket.timeout, OSError):
        d = b""
    return d, time.monotonic() - t0


def held_until_timeout(t, port, hole, label, send, want):
    c = S.Client.to(port)
    try:
        c.send(send)
        got, dt = first_bytes(c, CONNECT_TIMEOUT + ptest.bound(5))
        # The rest of the answer, if a slow machine split it.
        while len(got) < len(want):
            more, _ = first_bytes(c, ptest.bound(2))
            if not more:
                break
            got += more
        c.buf = bytearray()
        rest, how, _ = S.ending(c, ptest.bound(5))
    finally:
        c.close()
    t.check(got[:len(want)] == want and len(got) == len(want) + 8 and
            rest == b"" and S.closes(how),
            "%s in one write, to a port that never answers: %s ... "
            "(the held answers and the 0x06 reply) together, then "
            "closed" % (label, want.hex(" ")),
            "got %s, then %r, %s" % (got.hex(" "), rest[:20], how))
    t.check(dt >= CONNECT_TIMEOUT - 0.5,
            "%s in one write: the method selection waits for the final "
            "reply (first byte at connect_timeout, %d s)" % (
                label, CONNECT_TIMEOUT), "first byte after %.2f s" % dt)


def main(t):
    echo = S.peer_echo(t)
    p, port = S.start(t, workers=1,
                      limits={"connect_timeout": CONNECT_TIMEOUT})
    w0 = p.workers()

    # a greeting alone: answered at once
    c = S.Client.to(port)
    try:
        c.send(b"\x05\x01\x00")
        got, dt = first_bytes(c, ptest.bound(5))
    finally:
        c.close()
    t.check(got == b"\x05\x00" and dt < 1.0,
            "a greeting alone gets 05 00 at once",
            "got %r after %.2f s" % (got, dt))

    hole, full = H.blackhole(t)
    req_hole = b"\x05\x01\x00" + S.addr_bytes("127.0.0.1", hole)
    if full:
        held_until_timeout(t, port, hole, "greeting and CONNECT",
                           b"\x05\x01\x00" + req_hole,
                           b"\x05\x00\x05\x06")
        held_until_timeout(t, port, hole, "greeting (0x02), credentials "
                           "and CONNECT", b"\x05\x01\x02" +
                           b"\x01\x01u\x01p" + req_hole,
                           b"\x05\x02\x01\x00\x05\x06")
    else:
        for label in ("greeting and CONNECT", "greeting (0x02), "
                      "credentials and CONNECT"):
            t.skip("%s held until the connect timeout" % label,
                   "cannot make a black hole")

    # a greeting and half a request: the method selection at once
    c = S.Client.to(port)
    req = b"\x05\x01\x00" + S.addr_bytes("127.0.0.1", echo.port)
    try:
        c.send(b"\x05\x01\x00" + req[:5])
        got, dt = first_bytes(c, ptest.bound(5))
        c.send(req[5:])
        r = c.read_reply()
        ok, why = S.echo_check(c, b"half") if S.ok5(r) else (False, r)
    except Exception as e:
        got, dt, ok, why = b"", 0.0, False, repr(e)
    c.close()
    t.check(got == b"\x05\x00" and dt < 1.0,
            "a greeting and half a request: 05 00 at once",
            "got %r after %.2f s" % (got, dt))
    t.check(ok, "then the rest of the request opens a tunnel that echoes",
            why)

    # everything at once, with credentials and early data
    early = os.urandom(3000)
    c = S.Client.to(port)
    try:
        c.send(b"\x05\x01\x02" + b"\x01\x05alice\x06secret" + req + early)
        m = c.greet(send=False)
        st = c.userpass(None, None, send=False)
        r = c.read_reply()
        back = c.read_exact(len(early))
    except Exception as e:
        m, st, r, back = None, None, repr(e), b""
    c.close()
    t.check(m == 2 and st == (1, 0) and S.ok5(r) and back == early,
            "greeting, credentials, CONNECT and 3000 bytes in one write: "
            "05 02, 01 00, the reply, then the bytes intact",
            "method %r, status %r, reply %r, got %d bytes" % (
                m, st, r, len(back)))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("socks_pipeline").run(main)
