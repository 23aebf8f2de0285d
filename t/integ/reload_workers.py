#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Reload that changes the number of workers (2 -> 1 -> 2) while a client
loop runs: a removed slot's socket must be drained before it is closed,
and a new slot's socket must be served, so no connection is refused,
reset or stranded. After each reload the right number of workers runs,
each pinned to its own CPU. A burst of SIGHUPs settles to one running
generation, with no failed connection either.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()

    def conf(n):
        return t.conf("forward", WORKERS=n, RELAY="splice",
                      LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                                 echo.address)))
    p = t.portico(conf(2))
    done = threading.Event()
    loop = ptest.ClientLoop(port, threads=3, per_thread=300,
                            max_per_thread=2000, until=done,
                            max_seconds=ptest.bound(60), pause=0.003,
                            timeout=ptest.bound(10)).start()
    t.at_exit(lambda: (done.set(), loop.stop_now.set(), loop.join(5)))
    ptest.wait_for(lambda: loop.total >= 100, ptest.bound(10))

    for i, n in enumerate((1, 2, 1, 2), 1):
        before = loop.total
        old = set(p.workers().values())
        p.set_conf(conf(n))
        p.hup()
        lines = p.wait_log(r"reloaded ", count=i)
        t.check(len(lines) >= i, "reload %d (workers = %d) is done" % (i, n),
                lambda: ptest.tail(p.log(), 20))
        w = p.wait_workers(n, ptest.bound(10), exclude=old)
        t.check(bool(w) and sorted(w) == list(range(n)),
                "reload %d: %d new worker(s) run" % (i, n),
                lambda: "children %s" % p.all_children())
        cpus = [ptest.cpus_allowed(pid) for pid in (w or {}).values()]
        distinct = len(ptest.usable_cpus()) >= n
        t.check(all(c and len(c) == 1 for c in cpus) and
                (not distinct or
                 len({tuple(c) for c in cpus if c}) == len(cpus)),
                "reload %d: each worker pinned to one CPU%s" % (
                    i, ", its own" if distinct else ""),
                "cpus %s" % cpus)
        t0 = time.monotonic()
        ptest.wait_for(lambda: (loop.total >= before + 150 and
                                time.monotonic() - t0 >= 0.3) or
                       not loop.running(), ptest.bound(10))
    # a burst of SIGHUPs, 20 ms apart, while the loop runs
    n_before = len(p.log_lines(r"reloaded "))
    for _ in range(5):
        p.hup()
        time.sleep(0.02)
    settled = ptest.wait_for(lambda: len(p.workers()) == 2 and
                             not p.draining() and
                             len(p.log_lines(r"reloaded ")) > n_before,
                             ptest.bound(15), interval=0.1)
    t.check(settled and p.running(), "after a burst of 5 SIGHUPs: two "
            "workers, no old generation left, the master alive",
            lambda: ["children %s" % p.all_children(), "reloaded lines: %d"
                     % len(p.log_lines(r"reloaded "))] +
            ptest.tail(p.log(), 20))
    t.diag("the burst gave %d reload(s)" % (
        len(p.log_lines(r"reloaded ")) - n_before))
    t.check(loop.running(), "the client loop ran through every reload",
            loop.summary())
    done.set()
    loop.join(ptest.bound(60))
    t.check(not loop.failures and loop.total >= 900,
            "every connection through the worker-count reloads succeeded",
            lambda: [loop.summary(), "first: %s" % loop.failures[:10]])
    gone = ptest.wait_for(lambda: not p.draining(), ptest.bound(10))
    t.check(gone, "the old generations are gone",
            lambda: str(p.all_children()))
    good = sum(1 for _ in range(20) if ptest.echo_once(port)[0])
    t.check(good == 20, "20 of 20 connections echo at the end",
            "%d of 20" % good)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("reload_workers").run(main)
