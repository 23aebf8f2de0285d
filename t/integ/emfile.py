#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Out of descriptors must not spin. portico runs with RLIMIT_NOFILE = 64 and
one worker; 100 client connections are opened and held, far more than fit.
For ~2 s the worker's CPU time (utime + stime) grows by less than 0.5 s and
its pid is the same (not killed, not respawned), and every connection that
reached the origin has its byte echoed. As the served connections close,
the queued ones are taken and served in turn, until all 100 were. Then new
connections are served again.
"""
import os
import re
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

NOFILE = 64
HOLD = 100


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()
    conf = t.conf("forward", WORKERS=1, RELAY="splice",
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                             echo.address)))
    p = t.portico(conf, nofile=NOFILE)
    w = p.workers()
    wpid = w.get(0)
    t.check(wpid is not None, "one worker runs", str(p.all_children()))
    ok, why = ptest.echo_once(port)
    t.check(ok, "the forwarder works before the flood", why)

    socks = ptest.nonblocking_connects(port, HOLD)
    t.at_exit(lambda: [s.close() for s in socks])
    t.diag("%d of %d client connections opened" % (len(socks), HOLD))
    t.check(len(socks) >= HOLD * 9 // 10,
            "the kernel queued most of the %d connections" % HOLD,
            "%d opened" % len(socks))
    # a byte on each: the connections the worker takes start relaying and
    # need their upstream socket (and pipes, with splice) too
    for s in socks:
        try:
            s.send(b"x")
        except OSError:
            pass
    # let the worker run into the limit
    time.sleep(0.5)
    t.diag("worker fds now: %s; echo server connections: %d" % (
        ptest.fd_count(wpid), echo.active))
    c0 = ptest.cpu_seconds(wpid)
    t0 = time.monotonic()
    time.sleep(2.0)
    c1 = ptest.cpu_seconds(wpid)
    el = time.monotonic() - t0
    used = None if c0 is None or c1 is None else c1 - c0
    t.check(used is not None and used < 0.5,
            "out of descriptors, the worker does not spin "
            "(CPU < 0.5 s in %.1f s)" % el,
            lambda: ["worker cpu used: %s s" % used] +
            ptest.tail(p.log(), 15))
    t.check(p.workers().get(0) == wpid and ptest.alive(wpid),
            "out of descriptors, the worker is not killed or replaced",
            lambda: ["before %s, now %s" % (wpid, p.workers())] +
            ptest.tail(p.log(), 15))
    t.check(p.running(), "the master is still running")
    mc = ptest.cpu_seconds(p.pid)
    t.diag("master cpu so far: %s s" % mc)

    # Every connection that reached the origin meanwhile has its byte
    # back: none is stuck half set up for want of a descriptor.
    served, gone = set(), {}
    for s in socks:
        s.setblocking(False)

    def read_echoes():
        for s in socks:
            if s in served or s in gone:
                continue
            try:
                d = s.recv(1)
            except BlockingIOError:
                continue
            except OSError as e:
                d = ptest.err_kind(e)
            if d == b"x":
                served.add(s)
            else:
                gone[s] = d
        return served and len(served) == echo.active
    ptest.wait_for(read_echoes, ptest.bound(3), interval=0.1)
    upstream = echo.active
    t.diag("%d of the held connections had their byte echoed; %d reached "
           "the echo server" % (len(served), upstream))
    t.check(served and len(served) == upstream and not gone,
            "the connections that fit are all served meanwhile (each one "
            "that reached the origin is echoed, none is dropped)",
            "%d echoed, %d at the echo server, %d closed without the echo "
            "(%r)" % (len(served), upstream, len(gone),
                      list(gone.values())[:5]))

    # All of them, in turn: as the served ones close, the worker takes the
    # next ones from its queue, until every held connection was served.
    first = len(served)
    left = [s for s in socks if s not in served and s not in gone]
    for s in served:
        s.close()
    deadline = time.monotonic() + ptest.bound(20)
    while left and time.monotonic() < deadline:
        r, _, _ = select.select(left, [], [], 0.2)
        for s in r:
            try:
                d = s.recv(1)
            except OSError as e:
                d = ptest.err_kind(e)
            if d == b"x":
                served.add(s)
            else:
                gone[s] = d
            left.remove(s)
            s.close()
    t.check(len(served) == len(socks),
            "every one of the %d held connections is served in turn as "
            "earlier ones close" % len(socks),
            lambda: ["%d served (%d at first), %d closed without the echo "
                     "(%r), %d still waiting" % (
                         len(served), first, len(gone),
                         list(gone.values())[:5], len(left))]
            + ptest.tail(p.log(), 10))
    for s in socks:
        s.close()
    socks.clear()

    # new connections are served again (bounded wait for the backlog of
    # closed connections to be accepted and dropped)
    res = ptest.wait_for(lambda: ptest.echo_once(port,
                                                 timeout=ptest.bound(3))[0],
                         ptest.bound(15), interval=0.2)
    t.check(res, "after the flood closes, new connections are served",
            lambda: ptest.tail(p.log(), 20))
    good = sum(1 for _ in range(10) if ptest.echo_once(port)[0])
    t.check(good == 10, "and keep being served (10 of 10 echo)",
            "%d of 10" % good)
    t.check(p.workers().get(0) == wpid,
            "the same worker served before and after the flood",
            "before %s, now %s" % (wpid, p.workers()))
    lines = p.log_lines(r"(?i)descriptor|EMFILE|ENFILE|too many open|paus")
    t.diag(["log lines about the limit:"] + lines[:10])
    t.stop_portico(p)
    tot = p.log_lines(r"totals: ")
    m = re.search(r"accept_paused=(\d+)", tot[-1]) if tot else None
    t.check(m is not None and int(m.group(1)) > 0,
            "the pauses are counted (exit totals: accept_paused > 0)",
            str(tot[-1:]))


if __name__ == "__main__":
    ptest.Test("emfile").run(main)
