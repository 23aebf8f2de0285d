#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The per-datagram callback of the module ABI (pt_module.datagram, 1.3):
t/modules/dgramcheck.so refuses client datagrams of 13 payload bytes
(drop_up) and replies of 20 (drop_down), and counts every call.

One association on a listener the module applies to sends N datagrams
each of 10, 13 and 20 payload bytes to a UDP echo server. Then:

- the echo server receives exactly the 10- and 20-byte ones (2N): the
  13-byte ones were dropped before they left;
- the client gets back exactly the N 10-byte replies: the 20-byte
  replies were dropped on their way down;
- the module was called once per datagram per direction with the
  payload size (its CLOSE line: up=3N, up_bytes=43N, down=2N,
  down_bytes=30N, refused=2N);
- the core counted the refused ones as dropped with reason "module" on
  the status listener's /metrics (2N), and relayed 2N up and N down.

A second association on a listener that exempts the module
(`dgramcheck = { enabled = false; }`) sends N 13-byte datagrams: all go
both ways, and the module is not called for any of them.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import sockstest as S  # noqa: E402
import statustest as ST  # noqa: E402

N = 20
CLOSE = re.compile(r"dgramcheck: CLOSE up=(\d+) up_bytes=(\d+) down=(\d+) "
                   r"down_bytes=(\d+) refused=(\d+)")


def exchange(a, echo_port, sizes, expect_back):
    """Sends one datagram of each size in <sizes> (paced), then collects
    replies until <expect_back> came or nothing more comes. Returns the
    payload sizes that came back."""
    for i, n in enumerate(sizes):
        a.send("127.0.0.1", echo_port, bytes([65 + i % 26]) * n)
        time.sleep(0.002)
    back = []
    while True:
        got = a.recv(ptest.bound(1) if len(back) < expect_back else 0.3)
        if got is None:
            return back
        back.append(len(got[3]))


def main(t):
    echo = S.udp_echo(t)
    exempt = ptest.free_port()
    sport = ptest.free_port()
    mods = ('modules = ( { name = "dgramcheck"; path = "%s/dgramcheck.so"; '
            'drop_up = 13; drop_down = 20; } );' % ptest.TESTMODDIR)
    p, port = S.start(t, workers=1, modules=mods, more_listeners=[
        S.listener(exempt, extra="dgramcheck = { enabled = false; };"),
        '  { address = "127.0.0.1:%d"; protocol = "status"; }' % sport])

    a = S.Udp(port)
    t.check(a.ok(), "UDP ASSOCIATE with a datagram module: REP 0",
            lambda: [a.describe()])
    if not a.ok():
        return
    sizes = [10, 13, 20] * N
    back = exchange(a, echo.port, sizes, N)
    ptest.wait_for(lambda: echo.count() >= 2 * N, ptest.bound(3))
    seen = sorted(ln for _, ln, _ in echo.seen)
    t.check(seen == sorted([10, 20] * N),
            "the echo server received exactly the 10- and 20-byte "
            "datagrams (%d); the 13-byte ones were dropped up" % (2 * N),
            lambda: ["seen sizes %r" % seen])
    t.check(sorted(back) == [10] * N,
            "the client got back exactly the %d 10-byte replies; the "
            "20-byte replies were dropped down" % N,
            lambda: ["back %r" % back])
    samples, text = ST.scrape(sport)
    t.check(samples is not None, "/metrics answers", lambda: [text])
    if samples is not None:
        drop = ST.value(samples, "portico_udp_datagrams_dropped_total",
                        reason="module")
        up = ST.value(samples, "portico_udp_datagrams_total",
                      direction="up")
        down = ST.value(samples, "portico_udp_datagrams_total",
                        direction="down")
        calls = ST.value(samples, "portico_module_dgramcheck_calls_total")
        t.check(drop == 2 * N,
                "udp_datagrams_dropped_total{reason=\"module\"} = %d"
                % (2 * N), lambda: ["%r" % drop])
        t.check(up == 2 * N and down == N,
                "udp_datagrams_total: %d up, %d down" % (2 * N, N),
                lambda: ["up %r down %r" % (up, down)])
        t.check(calls == 5 * N, "the module was called %d times (every "
                "datagram read, each direction)" % (5 * N),
                lambda: ["%r" % calls])
    a.close()
    ptest.wait_for(lambda: p.log_lines(r"dgramcheck: CLOSE"), ptest.bound(5))
    lines = p.log_lines(r"dgramcheck: CLOSE")
    m = CLOSE.search(lines[-1]) if lines else None
    want = (3 * N, 43 * N, 2 * N, 30 * N, 2 * N)
    got = tuple(int(x) for x in m.groups()) if m else None
    t.check(got == want, "the callback saw (up, up_bytes, down, "
            "down_bytes, refused) = %r: one call per datagram per "
            "direction with the payload size" % (want,),
            lambda: lines[-3:])

    # The exempt listener: no call, nothing dropped.
    before = echo.count()
    b = S.Udp(exempt)
    t.check(b.ok(), "UDP ASSOCIATE on the exempt listener: REP 0",
            lambda: [b.describe()])
    if b.ok():
        back = exchange(b, echo.port, [13] * N, N)
        ptest.wait_for(lambda: echo.count() >= before + N, ptest.bound(3))
        t.check(echo.count() == before + N and back == [13] * N,
                "on the exempt listener every 13-byte datagram goes both "
                "ways (%d)" % N, lambda: ["echo saw %d, back %r" % (
                    echo.count() - before, back)])
        samples, text = ST.scrape(sport)
        calls = samples and ST.value(samples,
                                     "portico_module_dgramcheck_calls_total")
        t.check(calls == 5 * N, "and the module was not called for them",
                lambda: ["calls %r" % calls])
        b.close()
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("socks_udp_datagram").run(main)
