#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Idle upstream connections kept for reuse give way to clients when the
worker runs out of descriptors (worker/upstream.c, upstream_shed): an
accept(2) or socket(2) that fails with EMFILE closes the least recently
used idle ones and tries again, rather than leaving the client queued or
answering 502 while the pool holds descriptors it may never use.

One HTTP worker with RLIMIT_NOFILE = 64 (so max_connections is lowered
to 24), upstream_keepalive = 64 and upstream_idle_timeout = 600:

- 20 clients at once GET from origin A, which answers each after 300 ms
  and keeps the connection: 20 idle connections to A stay in the pool;
- then 24 clients at once GET from origin B, the same way: with the 20
  kept they would need more descriptors than the limit holds. Every one
  is answered 200 within bound(5) s, connections to A were closed to make
  room, and accepting never paused for want of descriptors (it did, three
  times, before: the clients waited for B's answers to free some).
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

NOFILE = 64
FIT = 24                # (64 - 64 / 4) / 2: worker_max_connections()
KEPT = 20
DELAY = 0.3


class SlowOrigin(ptest._Server):
    """Answers every request after DELAY, keeping the connection."""

    def handle(self, c):
        buf = b""
        while True:
            head, buf = H.next_head(c, buf)
            if head is None:
                return
            time.sleep(DELAY)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


def burst(port, origin, n):
    """<n> clients at once, one GET each; their statuses (or why not)."""
    out = [None] * n

    def one(i):
        try:
            conn = H.Conn.to(port, timeout=ptest.bound(10))
            conn.send(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n"
                      b"Connection: close\r\n\r\n" % origin.port)
            out[i] = H.read_response(conn).status
            conn.sock.close()
        except (OSError, H.Closed, H.BadInput) as e:
            out[i] = "%s: %s" % (type(e).__name__, e)
    ths = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(ptest.bound(20))
    return out


def conns_to(port):
    """Established connections whose remote end is <port> (portico's
    upstream sockets toward that origin)."""
    return sum(1 for lp, rp, st, _, _ in ptest._proc_net_tcp()
               if rp == port and st == "01")


def main(t):
    a, b = SlowOrigin(), SlowOrigin()
    t.servers += [a, b]
    port = ptest.free_port()
    conf = H.http_conf(t, port, http={"connect_ports": "*",
                                      "upstream_keepalive": 64,
                                      "upstream_idle_timeout": 600})
    p = t.portico(conf, nofile=NOFILE)
    w0 = p.workers()
    t.check(p.log_lines(r"max_connections \d+ lowered to %d" % FIT),
            "with RLIMIT_NOFILE %d the worker lowers max_connections to %d"
            % (NOFILE, FIT), H.log_tail(p))

    got = burst(port, a, KEPT)
    kept = ptest.wait_for(lambda: conns_to(a.port) == KEPT, ptest.bound(3))
    t.check(got == [200] * KEPT and kept,
            "%d clients at once through origin A: all served, and the "
            "worker keeps %d idle connections to A" % (KEPT, KEPT),
            lambda: ["statuses %s" % got, "to A: %d" % conns_to(a.port)])

    t0 = time.monotonic()
    got = burst(port, b, FIT)
    el = time.monotonic() - t0
    t.check(got == [200] * FIT and el < ptest.bound(5),
            "then %d clients at once through origin B, more descriptors "
            "than the limit leaves beside the %d kept: every one served "
            "(200) within %.0f s" % (FIT, KEPT, ptest.bound(5)),
            lambda: ["statuses %s" % got, "%.2f s" % el] +
            ptest.tail(p.log(), 10))
    t.diag("the burst through B took %.2f s" % el)
    paused = p.log_lines(r"accept on .*: pausing: Too many open files")
    t.check(conns_to(a.port) < KEPT and not paused,
            "idle connections to A were closed to make room; the worker "
            "never paused accepting for want of descriptors",
            lambda: ["to A: %d" % conns_to(a.port)] + paused)
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("upstream_shed").run(main)
