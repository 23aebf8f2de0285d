#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
limits.idle_timeout closes a tunnel with no traffic either way, and only
such a tunnel: one that keeps talking outlives it. limits.connect_timeout
gives up a target that never completes the handshake (a listener whose
accept queue is full drops SYNs) and closes the client connection; the
failure is counted (upstream_failed).
"""
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

IDLE = 2
CONNECT = 1


def main(t):
    echo = t.echo_server()
    port, bh_port = ptest.free_port(), ptest.free_port()
    bh, full = ptest.blackhole(t)
    conf = t.conf("timeouts", LISTEN="127.0.0.1:%d" % port, TO=echo.address,
                  LISTEN_BLACKHOLE="127.0.0.1:%d" % bh_port,
                  BLACKHOLE="127.0.0.1:%d" % bh, RELAY="splice")
    p = t.portico(conf)

    # idle_timeout: a silent tunnel is closed, a talking one is not
    quiet = ptest.Held(port)
    busy = ptest.Held(port)
    t.at_exit(quiet.close)
    t.at_exit(busy.close)
    t.check(quiet.ping()[0] and busy.ping()[0], "two tunnels relay")
    t0 = time.monotonic()
    busy_ok = True
    closed_at = None
    quiet.sock.setblocking(False)
    while time.monotonic() - t0 < IDLE + ptest.bound(4):
        ok, _ = busy.ping()
        busy_ok = busy_ok and ok
        try:
            d = quiet.sock.recv(1)
            if d == b"":
                closed_at = time.monotonic() - t0
                break
        except BlockingIOError:
            pass
        except ConnectionResetError:
            closed_at = time.monotonic() - t0
            break
        time.sleep(0.25)
    t.check(closed_at is not None and closed_at >= IDLE - 0.5,
            "a tunnel silent for idle_timeout = %d s is closed (not before)"
            % IDLE, "closed after %s s" % closed_at)
    t.diag("silent tunnel closed after %s s" % (
        closed_at and round(closed_at, 2)))
    t.check(busy_ok and busy.ping()[0],
            "a tunnel that keeps talking outlives idle_timeout")
    quiet.close()
    busy.close()

    # connect_timeout: the client connection is closed, not left hanging
    if not full:
        for d in ("a target that never answers is given up after "
                  "connect_timeout = %d s and the client closed" % CONNECT,
                  "not before connect_timeout",
                  "the timed-out connect is counted (upstream_failed >= 1)"):
            t.skip(d, "could not make a target that drops SYNs",
                   need="blackhole")
    else:
        s = ptest.connect(bh_port)
        s.settimeout(CONNECT + ptest.bound(5))
        t0 = time.monotonic()
        closed = False
        try:
            closed = s.recv(1) == b""
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
        el = time.monotonic() - t0
        s.close()
        t.check(closed, "a target that never answers is given up after "
                "connect_timeout = %d s and the client closed" % CONNECT,
                "closed=%s after %.1f s" % (closed, el))
        t.diag("connect_timeout closed the client after %.2f s" % el)
        t.check(el >= CONNECT - 0.5, "not before connect_timeout",
                "after %.2f s" % el)
    ok, why = ptest.echo_once(port)
    t.check(ok, "the forwarder works afterwards", why)
    t.stop_portico(p)
    tot = p.log_lines(r"totals: ")
    m = re.search(r"upstream_failed=(\d+)", tot[-1]) if tot else None
    if full:
        t.check(m is not None and int(m.group(1)) >= 1,
                "the timed-out connect is counted (upstream_failed >= 1)",
                str(tot[-1:]))


if __name__ == "__main__":
    ptest.Test("timeouts").run(main)
