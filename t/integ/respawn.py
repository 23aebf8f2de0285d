#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A worker killed with SIGKILL is replaced on the same CPU, quickly, and the
other worker is not disturbed: connections it holds still relay, and a
client loop running through the kill loses at most the connections the
dead worker had in hand. The log names the death and the respawn. A worker
that keeps dying is replaced with a doubling delay, timed from outside (kill
to the new pid). While such a delay runs, the slot's sockets are closed
(net.ipv4.tcp_migrate_req moves what they had queued), so fresh
connections are all served at once by the other worker instead of
waiting out the back-off in the dead slot's queue.
"""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

HOLD = 16
THREADS = 2
KILLS = 5


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()
    conf = t.conf("forward", WORKERS=2, RELAY="splice",
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                             echo.address)))
    p = t.portico(conf)
    w = p.workers()
    t.check(sorted(w) == [0, 1], "two workers run", str(p.all_children()))

    held, errs = ptest.hold_many(port, HOLD)
    t.at_exit(lambda: [h.close() for h in held])
    pings = [h.ping() for h in held]
    t.check(not errs and all(ok for ok, _ in pings),
            "%d held connections relay before the kill" % HOLD,
            "connect errors %s, pings %s" % (errs, pings))
    owner = {}
    for h in held:
        owner[h] = ptest.owner_of(h.sock, port, list(w.values()))
    counts = {pid: sum(1 for o in owner.values() if o == pid)
              for pid in w.values()}
    unknown = sum(1 for o in owner.values() if o is None)
    t.diag("held connections per worker pid: %s, owner unknown: %d"
           % (counts, unknown))
    t.check(unknown == 0, "every held connection's worker is found",
            "%d unknown" % unknown)

    # the victim: a worker holding some connections (slot 0 if it does)
    slot = 0 if counts.get(w[0]) else 1
    victim, other = w[slot], w[1 - slot]
    vcpus = ptest.cpus_allowed(victim)
    ocpus = ptest.cpus_allowed(other)

    done = threading.Event()
    loop = ptest.ClientLoop(port, threads=THREADS, per_thread=150,
                            max_per_thread=3000, until=done,
                            max_seconds=ptest.bound(30), pause=0.002,
                            timeout=ptest.bound(10)).start()
    t.at_exit(lambda: (done.set(), loop.stop_now.set(), loop.join(5)))
    ptest.wait_for(lambda: loop.total >= 40, ptest.bound(10))

    t_kill = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    nw = p.wait_workers(2, ptest.bound(3), exclude=(victim,))
    t_new = time.monotonic()
    t.check(bool(nw) and nw.get(slot) not in (None, victim),
            "a new worker %d appears within %.0f s of the kill"
            % (slot, ptest.bound(3)),
            lambda: ["workers now %s" % p.workers()] + ptest.tail(p.log()))
    t.diag("replacement after %.2f s" % (t_new - t_kill))
    new = (nw or {}).get(slot)
    if new:
        ncpus = ptest.wait_for(lambda: ptest.cpus_allowed(new) == vcpus
                               and vcpus, ptest.bound(2))
        t.check(bool(ncpus), "the replacement runs on the same CPU %s"
                % (vcpus,), "new worker's cpus: %s" % ptest.cpus_allowed(new))
        st = ptest.proc_stat(new)
        t.check(st is not None and st[2] == p.pid,
                "the replacement is a child of the master")
    t.check(p.workers().get(1 - slot) == other and
            ptest.cpus_allowed(other) == ocpus,
            "the other worker is untouched (same pid, same CPU)",
            "before %d, now %s" % (other, p.workers()))

    mine = [h for h in held if owner[h] == other]
    theirs = [h for h in held if owner[h] == victim]
    res = [h.ping() for h in mine]
    t.check(all(ok for ok, _ in res),
            "all %d connections held by the other worker still relay"
            % len(mine), str(res))
    closed = [h.closed_by_peer(ptest.bound(5)) for h in theirs]
    t.check(all(closed), "the %d connections of the killed worker are "
            "closed, not left hanging" % len(theirs), str(closed))

    # the loop keeps going a while on the new generation, then stops
    n_at = loop.total
    ptest.wait_for(lambda: loop.total >= n_at + 100, ptest.bound(15))
    done.set()
    loop.join(ptest.bound(30))
    late = [(round(ts - t_kill, 2), why) for ts, why in loop.failures
            if ts > t_new + ptest.bound(1)]
    t.check(len(loop.failures) <= THREADS and not late,
            "the client loop lost at most the connections in the dead "
            "worker's hands (<= %d)" % THREADS,
            ["loop: " + loop.summary(),
             "failures after the respawn: %s" % late])
    t.check(loop.total >= 300, "the client loop ran (%d connections)"
            % loop.total, loop.summary())

    good = sum(1 for _ in range(20) if ptest.echo_once(port)[0])
    t.check(good == 20, "20 of 20 new connections echo after the respawn",
            "%d of 20" % good)

    t.check(bool(p.wait_log(r"worker %d \(pid %d\) .*(killed by signal 9|"
                            r"signal 9|SIGKILL)" % (slot, victim))),
            "the log says worker %d (pid %d) was killed by signal 9"
            % (slot, victim), t.log_details(p))
    t.check(bool(p.wait_log(r"respawning worker %d" % slot)),
            "the log says 'respawning worker %d'" % slot, t.log_details(p))
    t.check(p.running() and len(p.workers()) == 2,
            "the master still runs with two workers", str(p.all_children()))

    # a worker that keeps dying is still replaced, on its CPU, with a
    # back-off seen from outside: the time from each kill to the new pid's
    # appearance. master/spawn.c waits 100 ms, 200 ms, 400 ms, ... before
    # the 2nd, 3rd, 4th, ... young death in a row is replaced; the first of
    # these kills may or may not count as one in a row (the worker may be
    # older than 10 s on a slow machine), so the k-th kill here waits at
    # least 100 * 2^(k-2) ms and at most 100 * 2^(k-1) ms: lower bounds a
    # loaded machine cannot break (the master cannot fork early), upper
    # bounds stretched for load.
    times = []
    for i in range(KILLS):
        cur = p.workers().get(slot)
        if cur is None:
            break
        t0 = time.monotonic()
        os.kill(cur, signal.SIGKILL)
        nw = p.wait_workers(2, ptest.bound(10), exclude=(cur,),
                            interval=0.01)
        if not nw:
            break
        times.append(round(time.monotonic() - t0, 3))
    t.diag("replacement delays for deaths in a row: %s s" % times)
    t.diag(p.log_lines(r"(?i)keeps dying|backoff|next restart")[-3:])
    t.check(len(times) == KILLS, "a worker killed %d times in a row is "
            "replaced each time (within %.0f s)" % (KILLS, ptest.bound(10)),
            lambda: ["delays %s" % times] + ptest.tail(p.log(), 15))
    lows = [0.0] + [0.1 * 2 ** (k - 1) for k in range(1, KILLS)]
    highs = [0.1 * 2 ** k for k in range(KILLS)]
    early = [(k + 1, d, lo) for k, (d, lo) in enumerate(zip(times, lows))
             if d < lo - 0.002]
    t.check(len(times) == KILLS and not early,
            "back-off: the k-th death in a row is replaced no sooner than "
            "%s s after the kill" % "/".join("%g" % x for x in lows),
            "delays %s; too early (kill, delay, at least): %s" % (
                times, early))
    late = [(k + 1, d, hi) for k, (d, hi) in enumerate(zip(times, highs))
            if d > hi + ptest.bound(1.5)]
    t.check(len(times) == KILLS and not late,
            "back-off: and no later than %s s plus %.1f s (doubling from "
            "100 ms, not more)" % ("/".join("%g" % x for x in highs),
                                   ptest.bound(1.5)),
            "delays %s; too late (kill, delay, at most): %s" % (
                times, late))
    # One more death in a row: its back-off is at least 1.6 s. Fresh
    # connections meanwhile are served by the other worker at once.
    cur = p.workers().get(slot)
    mig = "/proc/sys/net/ipv4/tcp_migrate_req"
    try:
        can_migrate = open(mig).read().strip() == "1" or \
            os.access(mig, os.W_OK)
    except OSError:
        can_migrate = False
    if not can_migrate:
        t.skip("fresh connections during a back-off go to the live worker",
               "no net.ipv4.tcp_migrate_req to set", need="tcp_migrate_req")
    elif cur is not None:
        os.kill(cur, signal.SIGKILL)
        p.wait_log(r"worker %d: its listening sockets are closed" % slot,
                   timeout=ptest.bound(2))
        t0 = time.monotonic()
        res = [ptest.echo_once(port, timeout=1.0) for _ in range(20)]
        took = time.monotonic() - t0
        back = p.workers().get(slot) not in (None, cur)
        t.check(all(ok for ok, _ in res) and not back,
                "during the back-off of a worker that keeps dying, 20 of "
                "20 fresh connections echo at once (%.2f s), served by the "
                "other worker" % took,
                lambda: ["%d of 20, respawned already: %s" % (
                    sum(1 for ok, _ in res if ok), back)] +
                ptest.tail(p.log(), 10))
        nw = p.wait_workers(2, ptest.bound(10), exclude=(cur,),
                            interval=0.05)
        t.check(bool(nw), "and the worker is replaced after it, on new "
                "sockets", lambda: ptest.tail(p.log(), 10))
    last = p.workers().get(slot)
    t.check(last is not None and ptest.cpus_allowed(last) == vcpus,
            "the last replacement is on the same CPU %s" % (vcpus,),
            "cpus %s" % (last and ptest.cpus_allowed(last),))
    t.check(p.workers().get(1 - slot) == other,
            "the other worker is still the same process")
    res = [h.ping() for h in mine]
    t.check(all(ok for ok, _ in res),
            "the other worker's held connections still relay", str(res))
    good = sum(1 for _ in range(20) if ptest.echo_once(port)[0])
    t.check(good == 20, "20 of 20 new connections echo afterwards",
            "%d of 20" % good)
    for h in held:
        h.close()
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("respawn").run(main)
