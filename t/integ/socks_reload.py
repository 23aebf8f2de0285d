#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A reload (SIGHUP) loses no SOCKS client: a SOCKS5 tunnel and a UDP
association opened before it keep relaying on the old generation, which
drains; new SOCKS5 and SOCKS4 clients are served by the new one; once the
old tunnel and the association's control connection close, the draining
worker exits.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402


def main(t):
    echo = t.echo_server()
    uecho = S.udp_echo(t)
    p, port = S.start(t, workers=1)
    gen0 = p.workers()

    r, tun = S.connect5(port, "127.0.0.1", echo.port)
    ok, why = S.echo_check(tun, b"before") if S.ok5(r) else (False, r)
    t.check(ok, "a SOCKS5 tunnel before the reload echoes", why)
    a = S.Udp(port)
    t.at_exit(a.close)
    a.send("127.0.0.1", uecho.port, b"before")
    got = a.recv(ptest.bound(3)) if a.ok() else None
    t.check(got is not None and got[3] == b"before",
            "a UDP association before the reload relays",
            "%s; got %r" % (a.describe(), got))

    p.hup()
    lines = p.wait_log(r"reloaded ", timeout=ptest.bound(10))
    new = p.wait_workers(1, ptest.bound(10), exclude=gen0.values())
    t.check(bool(lines) and bool(new), "SIGHUP: a new generation serves",
            lambda: ["workers %s" % p.all_children()] + H.log_tail(p)())

    ok, why = S.echo_check(tun, os.urandom(100000)) if S.ok5(r) else \
        (False, r)
    t.check(ok, "the tunnel opened before the reload still echoes 100000 "
            "bytes", why)
    data = os.urandom(3000)
    a.send("127.0.0.1", uecho.port, data)
    got = a.recv(ptest.bound(3)) if a.ok() else None
    t.check(got is not None and got[3] == data,
            "the association opened before the reload still relays",
            "got %r" % (got[:3] if got else got,))
    r2, c = S.connect5(port, "localhost", echo.port)
    ok, why = S.echo_check(c, b"after") if S.ok5(r2) else (False, r2)
    c.close()
    t.check(ok, "a new SOCKS5 CONNECT after the reload works", why)
    r4, c = S.connect4(port, "127.0.0.1", echo.port)
    ok, why = S.echo_check(c, b"four") if S.ok4(r4) else (False, r4)
    c.close()
    t.check(ok, "a new SOCKS4 CONNECT after the reload works", why)
    b = S.Udp(port)
    b.send("127.0.0.1", uecho.port, b"new association")
    got = b.recv(ptest.bound(3)) if b.ok() else None
    b.close()
    t.check(got is not None and got[3] == b"new association",
            "a new association after the reload relays", b.describe())

    t.check(bool(p.draining()), "the old worker is draining (it still "
            "holds the tunnel and the association)",
            "children %s" % p.all_children())
    tun.close()
    a.close()
    gone = ptest.wait_for(lambda: not p.draining(), ptest.bound(4))
    t.check(gone, "once the tunnel and the control connection close, the "
            "draining worker exits (before shutdown_timeout)",
            lambda: "children %s" % p.all_children())
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("socks_reload").run(main)
