#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Reload without loss: while four client threads make at least 2,000 short
echo connections, the master gets SIGHUP five times. Every connection
succeeds (none refused, none reset, every echo complete). A 24 MiB transfer
through a slow reader, started before the first reload, finishes byte-exact
on its old-generation worker (seen as portico-drain), which then exits. The
log shows five 'reloaded' lines with increasing generations.
"""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

RELOADS = 5
LONG = 24 * ptest.MiB


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()
    # a long shutdown_timeout: the drain must end because the transfer
    # ended, not because time ran out
    conf = t.conf("forward", WORKERS=2, RELAY="splice", SHUTDOWN=300,
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                             echo.address)))
    p = t.portico(conf)
    gen0 = p.workers()

    release = threading.Event()
    t.at_exit(release.set)
    x = ptest.Transfer(port, LONG, slow_until=release, slow_sleep=0.005,
                       timeout=ptest.bound(60)).start()
    t.at_exit(x.close)
    reloads_done = threading.Event()
    loop = ptest.ClientLoop(port, threads=4, per_thread=500,
                            max_per_thread=2000, until=reloads_done,
                            max_seconds=ptest.bound(60), pause=0.003,
                            timeout=ptest.bound(10)).start()
    t.at_exit(lambda: (reloads_done.set(), loop.stop_now.set(),
                       loop.join(5)))
    ptest.wait_for(lambda: loop.total >= 100 and x.received > 0,
                   ptest.bound(10))

    seen = []
    for i in range(1, RELOADS + 1):
        before = loop.total
        p.hup()
        lines = p.wait_log(r"reloaded ", count=i, timeout=ptest.bound(10))
        seen.append(len(lines))
        if len(lines) < i:
            break
        # let the new generation carry some load before the next reload
        t0 = time.monotonic()
        ptest.wait_for(lambda: (loop.total >= before + 150 and
                                time.monotonic() - t0 >= 0.4) or
                       not loop.running(), ptest.bound(10))
    t.check(seen == list(range(1, RELOADS + 1)),
            "%d SIGHUPs give %d 'reloaded' lines, one after each"
            % (RELOADS, RELOADS),
            lambda: ["reloaded lines after each HUP: %s" % seen] +
            ptest.tail(p.log(), 30))
    t.check(loop.running(), "the client loop was still running at the "
            "last reload", loop.summary())

    drain = p.draining()
    t.check(bool(drain) and not x.done.is_set(),
            "an old-generation worker (portico-drain) still carries the "
            "long transfer", lambda: ["children: %s" % p.all_children(),
                                      x.describe()])
    cur = p.workers()
    t.check(sorted(cur) == [0, 1] and
            not (set(cur.values()) & set(gen0.values())),
            "two new-generation workers replaced the first ones",
            "first %s, now %s" % (gen0, cur))

    reloads_done.set()
    release.set()
    x.wait(ptest.bound(20))
    t.check(x.ok(), "the 24 MiB transfer started before the reloads is "
            "byte-exact and ends with EOF within %.0f s of the last reload"
            % ptest.bound(20), lambda: [x.describe()] +
            ptest.tail(p.log(), 20))
    loop.join(ptest.bound(60))
    t.check(not loop.running(), "the client loop ended")
    t.check(loop.total >= 2000 and not loop.failures,
            "every one of >= 2000 connections through %d reloads succeeded"
            % RELOADS, lambda: [loop.summary()] +
            ["first failures: %s" % loop.failures[:10]])

    gone = ptest.wait_for(lambda: not p.draining(), ptest.bound(10))
    t.check(gone, "draining workers exit once their connections end",
            lambda: "children: %s" % p.all_children())
    t.check(p.running() and len(p.workers()) == 2,
            "the master keeps running with two workers",
            str(p.all_children()))

    gens = [int(g) for g in re.findall(r"reloaded .*generation (\d+)",
                                       p.log())]
    t.check(len(gens) == RELOADS and
            all(a < b for a, b in zip(gens, gens[1:])),
            "the log shows %d reloads with increasing generations"
            % RELOADS, "generations: %s" % gens)
    tot = p.log_lines(r"totals: accepted=\d+")
    t.check(len(tot) >= RELOADS, "a totals line is logged at each reload",
            "%d totals lines" % len(tot))
    ok, why = ptest.echo_once(port)
    t.check(ok, "the forwarder works after the reloads", why)
    t.check(not echo.errors, "the echo server saw no error",
            echo.errors[:10])
    rc = t.stop_portico(p)
    t.check(rc == 0, "SIGTERM: exit status 0", "exit %s" % rc)


if __name__ == "__main__":
    ptest.Test("reload_load").run(main)
