#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The accesslog module at full load on one CPU: the worker and its writer
thread confined to a single CPU (the whole process started there, so the
thread has no other CPU to run on), bench/loadgen sending keep-alive
GETs of 1 KiB through it as fast as it answers, for two seconds, with a
JSON log to a file and the default buffer.

A file on a local disk keeps up with that easily, so nothing may be
dropped: no dropped-count record, accesslog_dropped 0 in the master's
totals, at least one record per request loadgen saw answered, every
line a whole JSON record. The writer thread sharing the worker's CPU
may only run when the scheduler gives it the CPU, milliseconds later;
with the buffer written at its half (32 KiB of a 64 KiB buffer), the
worker filled the rest in that time at ~40,000 requests a second and
dropped records (0.3% of them in bench runs), though the disk was idle.

Heavy (saturates a CPU): runs alone (ptest.exclusive).
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import accesslogtest as AL  # noqa: E402

LOADGEN = os.path.join(ptest.BUILDDIR, "bench", "loadgen")


def start_on(cpu, fn):
    """fn() with this process confined to <cpu>, so what it starts is
    too; the affinity is given back right after."""
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        return fn()
    finally:
        os.sched_setaffinity(0, old)


def main(t):
    why = AL.missing()
    if why is None and not os.access(LOADGEN, os.X_OK):
        why = "bench/loadgen built (`make` builds it): not at %s" % LOADGEN
    if why:
        t.skip("the access log at full load on one CPU", why)
        return
    ptest.exclusive(t)
    hport = ptest.free_port()
    serve = subprocess.Popen([LOADGEN, "serve", "--http", str(hport)],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    t.at_exit(lambda: (serve.kill(), serve.wait()))
    ptest.wait_for(lambda: ptest.listening(hport) or
                   serve.poll() is not None, ptest.bound(5))
    log = t.path("access.log")
    port = ptest.free_port()
    conf = AL.conf(t, [AL.listener("web", port)],
                   [AL.module(['file = "%s"; format = "json";' % log])])
    cpus = sorted(os.sched_getaffinity(0))
    p = start_on(cpus[0], lambda: t.portico(conf))
    lg = subprocess.run([LOADGEN, "http", "--proxy", "127.0.0.1:%d" % port,
                         "--target", "127.0.0.1:%d" % hport, "--path",
                         "/bytes/1024", "--connections", "50",
                         "--duration", "2", "--json"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        timeout=ptest.bound(20))
    rc, err = lg.returncode, lg.stderr.decode(errors="replace")
    try:
        js = json.loads(lg.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        js = None
    answered = js["requests"] if js else 0
    t.check(rc == 0 and js is not None and
            sum(js["errors"].values()) == 0 and
            answered >= 2000,
            "loadgen: 50 connections for 2 s through one worker on one CPU, "
            "no errors",
            lambda: "rc %s, %s, %s" % (rc, js, err[-300:]))
    t.stop_portico(p)
    recs, bad = AL.json_records(log)
    _, partial = AL.read_lines(log)
    dropped = [r for r in recs if r.get("event") == "dropped"]
    served = [r for r in recs if r.get("status") == 200]
    tot = p.log_lines(r"master: totals: ")
    m = re.search(r"accesslog_dropped=(\d+)", tot[-1]) if tot else None
    t.check(not dropped and not bad and not partial,
            "no record dropped, every line a whole JSON record",
            lambda: "%d dropped-count records (%d records dropped), "
            "%d bad lines" % (len(dropped), sum(r.get("dropped", 0)
                                                for r in dropped), len(bad)))
    t.check(len(served) >= answered > 0,
            "a record for every request loadgen saw answered (%d)"
            % answered, lambda: "%d records of status 200" % len(served))
    t.check(m is not None and m.group(1) == "0",
            "the master's totals: accesslog_dropped=0",
            lambda: tot[-1:] or ptest.tail(p.log(), 10))


ptest.Test("accesslog_load").run(main)
