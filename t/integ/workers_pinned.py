#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
workers = 2 with cpu_affinity = "auto": two workers, children of the
master, named portico-w0 and portico-w1, each pinned to one CPU, not the
same one; the log says so. An explicit list [1, 0] is honoured slot by slot.
workers = "auto" gives one worker per usable CPU; cpu_affinity = "none"
pins nothing.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def pinned(t, p, label):
    w = p.workers()
    t.check(sorted(w) == [0, 1],
            "%s: two workers named portico-w0 and portico-w1" % label,
            lambda: ["children: %s" % p.all_children()])
    for slot, pid in sorted(w.items()):
        st = ptest.proc_stat(pid)
        t.check(st is not None and st[2] == p.pid,
                "%s: worker %d's parent is the master" % (label, slot),
                "ppid %s, master %d" % (st and st[2], p.pid))
    cpus = {slot: ptest.cpus_allowed(pid) for slot, pid in w.items()}
    for slot, c in sorted(cpus.items()):
        t.check(c is not None and len(c) == 1,
                "%s: worker %d is pinned to one CPU" % (label, slot),
                "Cpus_allowed_list: %s" % (c,))
    return w, cpus


def main(t):
    echo = t.echo_server()
    usable = ptest.usable_cpus()
    port = ptest.free_port()
    subst = dict(LISTEN="127.0.0.1:%d" % port, TO=echo.address,
                 AFFINITY='"auto"')
    p = t.portico(t.conf("workers_pinned", **subst))

    w, cpus = pinned(t, p, "auto")
    if len(usable) >= 2:
        t.check(len(cpus) == 2 and cpus.get(0) != cpus.get(1),
                "auto: the two workers are pinned to different CPUs",
                "cpus: %s" % (cpus,))
    else:
        t.skip("auto: the two workers are pinned to different CPUs",
               "only %d usable CPU" % len(usable))
    for slot, c in sorted(cpus.items()):
        t.check(c is not None and set(c) <= set(usable),
                "auto: worker %d's CPU is one this process may use" % slot,
                "cpus %s, usable %s" % (c, usable))

    # the master itself is not a worker and was not renamed like one
    t.check(not (ptest.comm(p.pid) or "").startswith("portico-w"),
            "the master is not named like a worker",
            "comm %s" % ptest.comm(p.pid))
    try:
        with open(p.pid_file) as f:
            pidtext = f.read().strip()
    except OSError as e:
        pidtext = repr(e)
    t.check(pidtext == str(p.pid), "the pid file holds the master's pid",
            "pid file: %r, master %d" % (pidtext, p.pid))

    lines = p.wait_log(r"started: 2 workers")
    t.check(bool(lines), "the log says 'started: 2 workers'",
            t.log_details(p))
    for slot, c in sorted(cpus.items()):
        if not c:
            continue
        rx = r"worker %d: started on cpu %d\b" % (slot, c[0])
        t.check(bool(p.wait_log(rx)),
                "the log says 'worker %d: started on cpu %d'" % (slot, c[0]),
                t.log_details(p))
    twice = p.log_lines(r"worker (\d+): worker \1\b")
    t.check(not twice, "no line names its worker twice",
            lambda: twice[:5])
    ok, why = ptest.echo_once(port)
    t.check(ok, "the forwarder works", why)

    # every line: "YYYY/MM/DD HH:MM:SS [level] PID role: message", with the
    # master's pid on master lines and each worker's on its own
    lines = [ln for ln in p.log(p.error_log).splitlines() if ln]
    bad = [ln for ln in lines if not ptest.LOG_RE.match(ln)]
    t.check(lines and not bad, "every error log line has the documented "
            "format", bad[:10])
    pids_ok = []
    for ln in lines:
        m = ptest.LOG_RE.match(ln)
        if not m:
            continue
        pid, role = int(m.group(3)), m.group(4)
        if role == "master":
            pids_ok.append(pid == p.pid)
        mm = re.match(r"worker (\d+)$", role)
        if mm and int(mm.group(1)) in w:
            pids_ok.append(pid == w[int(mm.group(1))])
    t.check(pids_ok and all(pids_ok), "log lines carry the pid of the "
            "process that wrote them (master, worker N)",
            lambda: lines[:20])
    rc = t.stop_portico(p)
    t.check(rc == 0, "SIGTERM: the master exits 0", "exit %s" % rc)

    # -- an explicit list, reversed -----------------------------------------
    if len(usable) >= 2:
        a, b = usable[1], usable[0]
        if os.path.exists(p.error_log):
            os.unlink(p.error_log)
        subst.update(AFFINITY="[%d, %d]" % (a, b))
        p2 = t.portico(t.conf("workers_pinned", **subst))
        w2, cpus2 = pinned(t, p2, "list")
        t.check(cpus2.get(0) == [a] and cpus2.get(1) == [b],
                "cpu_affinity = [%d, %d]: worker 0 on %d, worker 1 on %d"
                % (a, b, a, b), "cpus: %s" % (cpus2,))
        t.stop_portico(p2)
    else:
        t.skip("cpu_affinity list", "only %d usable CPU" % len(usable))

    # -- workers = "auto": one per usable CPU; cpu_affinity = "none" ---------
    subst.update(AFFINITY='"none"')
    text = t.conf("workers_pinned", **subst).replace(
        "workers = 2;", 'workers = "auto";')
    p3 = t.portico(text, conf_name="auto.conf")
    w3 = p3.workers()
    t.check(sorted(w3) == list(range(len(usable))),
            'workers = "auto": one worker per usable CPU (%d)' % len(usable),
            "workers %s" % w3)
    mine = sorted(os.sched_getaffinity(0))
    cpus3 = {s: ptest.cpus_allowed(pid) for s, pid in w3.items()}
    t.check(all(c == mine for c in cpus3.values()),
            'cpu_affinity = "none": workers keep the whole affinity %s'
            % (mine,), "cpus %s" % cpus3)
    ok, why = ptest.echo_once(port)
    t.check(ok, "the forwarder works", why)
    t.stop_portico(p3)


if __name__ == "__main__":
    ptest.Test("workers_pinned").run(main)
