#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Many tunnels at once, and the per-worker max_connections limit:
- 400 connections held open together through two workers all relay;
- with max_connections = 20 and one worker, 30 clients: 20 are served, the
  other 10 wait in the queue (neither closed nor reset), the worker does
  not spin while full, and the waiting ones are served as soon as served
  ones close.
"""
import os
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def echoed(socks, timeout):
    """Sends one line on each socket; returns (echoed, closed, silent)
    lists after waiting up to <timeout> for the echoes."""
    want = {}
    for s in socks:
        msg = b"hello %d\n" % s.fileno()
        try:
            s.sendall(msg)
        except OSError:
            pass
        want[s] = msg
    got = {s: b"" for s in socks}
    closed = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = [s for s in socks if s not in closed and
                   len(got[s]) < len(want[s])]
        if not pending:
            break
        r, _, _ = select.select(pending, [], [], 0.1)
        for s in r:
            try:
                d = s.recv(100)
            except OSError:
                d = b""
            if not d:
                closed.add(s)
            else:
                got[s] += d
    ok = [s for s in socks if got[s] == want[s]]
    silent = [s for s in socks if s not in closed and got[s] == b""]
    return ok, sorted(closed, key=socks.index), silent


def main(t):
    echo = t.echo_server()

    # -- 400 at once, two workers ------------------------------------------
    port = ptest.free_port()
    p = t.portico(t.conf("capacity", WORKERS=2, MAXCONN=10000,
                         RELAY="splice", LISTEN="127.0.0.1:%d" % port,
                         TO=echo.address))
    socks = ptest.nonblocking_connects(port, 400)
    t.at_exit(lambda: [s.close() for s in socks])
    ok, closed, silent = echoed(socks, ptest.bound(10))
    t.check(len(ok) == 400, "400 tunnels open at once all relay",
            "%d echoed, %d closed, %d silent of %d" % (
                len(ok), len(closed), len(silent), len(socks)))
    ptest.wait_for(lambda: echo.active >= 400, ptest.bound(5))
    t.diag("echo server holds %d connections" % echo.active)
    for s in socks:
        s.close()
    socks.clear()
    gone = ptest.wait_for(lambda: echo.active == 0, ptest.bound(10))
    t.check(gone, "when the clients close, every upstream leg closes",
            "%d left" % echo.active)
    t.stop_portico(p)

    # -- max_connections = 20, one worker ------------------------------------
    os.rename(t.path("error.log"), t.path("error-400.log"))
    port = ptest.free_port()
    p = t.portico(t.conf("capacity", WORKERS=1, MAXCONN=20, RELAY="copy",
                         LISTEN="127.0.0.1:%d" % port, TO=echo.address))
    wpid = p.workers()[0]
    first = ptest.nonblocking_connects(port, 20)
    ok1, closed1, _ = echoed(first, ptest.bound(5))
    t.check(len(ok1) == 20, "max_connections = 20: the first 20 are served",
            "%d echoed, %d closed" % (len(ok1), len(closed1)))
    more = ptest.nonblocking_connects(port, 10)
    t.at_exit(lambda: [s.close() for s in first + more])
    ok2, closed2, silent2 = echoed(more, 1.0)
    t.check(not ok2 and not closed2 and len(silent2) == 10,
            "the next 10 wait: not served, not closed, not reset",
            "%d echoed, %d closed, %d silent" % (len(ok2), len(closed2),
                                                 len(silent2)))
    c0 = ptest.cpu_seconds(wpid)
    time.sleep(1.0)
    used = ptest.cpu_seconds(wpid) - c0
    t.check(used < 0.3, "the full worker does not spin (CPU %.2f s in 1 s)"
            % used)
    for s in first[:10]:
        s.close()
    # the waiting clients already sent their line: read the echoes
    got = 0
    deadline = time.monotonic() + ptest.bound(5)
    want = {s: b"hello %d\n" % s.fileno() for s in more}
    buf = {s: b"" for s in more}
    while time.monotonic() < deadline and got < 10:
        r, _, _ = select.select([s for s in more if buf[s] != want[s]],
                                [], [], 0.1)
        for s in r:
            try:
                d = s.recv(100)
            except OSError:
                d = b""
            buf[s] += d
            if buf[s] == want[s]:
                got += 1
            if not d:
                buf[s] = want[s] + b"!"  # closed: stop watching
    t.check(got == 10, "once 10 served clients close, the 10 waiting are "
            "served", "%d of 10" % got)
    rest_ok, _, _ = echoed(first[10:], ptest.bound(5))
    t.check(len(rest_ok) == 10, "the 10 still open from the first batch "
            "still relay", "%d of 10" % len(rest_ok))
    t.check(p.workers().get(0) == wpid, "the same worker throughout")
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("capacity").run(main)
