#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A module's own descriptor on the worker's loop (t/modules/pipewatch.c):
a pipe made in init_worker, its read end watched with pt_io_start, ticks
written to it from a timer.

- every tick is read, once, in order, from the io callback;
- pt_io_modify(io, 0) pauses reading: the ticks written meanwhile are read
  only after the module set EPOLLIN again;
- exit_worker stops the io and closes the pipe (its line counts every
  tick), on a reload and at stop;
- the module counter pipewatch_ticks, registered again by the reload's
  conf(), keeps one id: the master's totals line has it once, with the
  ticks of both generations;
- the worker does not spin with a paused or idle io.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest  # noqa: E402

TICKS = 6
PAUSE_AT = 3
INTERVAL_MS = 50


def ticks_read(lines):
    return [int(re.search(r"tick=(\d+)", ln).group(1)) for ln in lines]


def check_generation(t, lines, label):
    """<lines>: one worker's pipewatch lines, in log order."""
    reads = ticks_read([ln for ln in lines if "read tick=" in ln])
    t.check(reads == list(range(1, TICKS + 1)),
            "%s: every tick read once, in order" % label, reads)

    def index(s):
        for i, ln in enumerate(lines):
            if s in ln:
                return i
        return -1
    paused = index("paused after tick=%d" % PAUSE_AT)
    resumed = index("pipewatch: resumed")
    after = index("read tick=%d " % (PAUSE_AT + 1))
    t.check(0 <= paused < resumed < after,
            "%s: the ticks written while paused are read after the resume"
            % label, lines)


def worker_lines(p, pid):
    return [ln for ln in p.log_lines(r"pipewatch: ")
            if re.search(r"\] %d worker" % pid, ln)]


def main(t):
    port = ptest.free_port()
    extra = ('modules = ( { name = "pipewatch"; path = "%s/pipewatch.so"; '
             'interval_ms = %d; ticks = %d; pause_at = %d; } );'
             % (ptest.TESTMODDIR, INTERVAL_MS, TICKS, PAUSE_AT))
    conf = httptest.http_conf(t, port, workers=1, extra=extra)
    p = t.portico(conf)
    (w1,) = p.workers().values()

    got = ptest.wait_for(lambda: re.search(
        r"read tick=%d " % TICKS, "\n".join(worker_lines(p, w1))),
        ptest.bound(5))
    t.check(bool(got), "the last tick is read within the bound",
            lambda: ptest.tail(p.log(), 20))
    check_generation(t, worker_lines(p, w1), "first worker")

    cpu0 = ptest.cpu_seconds(w1)
    time.sleep(1.0)
    used = ptest.cpu_seconds(w1) - cpu0
    t.check(used < 0.5, "the worker does not spin on its module's io",
            "%.2f s of CPU in 1 s" % used)

    # A reload: the old worker's exit_worker runs, the new one starts over.
    p.hup()
    p.wait_log(r"reloaded ")
    w2 = ptest.wait_for(lambda: [v for v in p.workers().values()
                                 if v != w1], ptest.bound(5))
    stopped = p.wait_log(r"\] %d worker.*pipewatch: stopped" % w1)
    t.check(stopped and "read=%d" % TICKS in stopped[0],
            "the old worker stopped its io and counted every tick", stopped)
    t.check(bool(w2), "a new worker runs after the reload")
    if w2:
        (w2,) = w2
        got = ptest.wait_for(lambda: re.search(
            r"read tick=%d " % TICKS, "\n".join(worker_lines(p, w2))),
            ptest.bound(5))
        t.check(bool(got), "the new worker reads its own ticks")
        check_generation(t, worker_lines(p, w2), "second worker")

    t.stop_portico(p)
    if w2:
        fin = p.log_lines(r"\] %d worker.*pipewatch: stopped" % w2)
        t.check(fin and "read=%d" % TICKS in fin[0],
                "exit_worker at stop counted every tick", fin)
    tot = p.log_lines(r"master: totals: ")
    last = tot[-1].split() if tot else []
    names = [f for f in last if f.startswith("pipewatch_ticks=")]
    t.check(names == ["pipewatch_ticks=%d" % (2 * TICKS)],
            "the totals line has pipewatch_ticks once, with both "
            "generations' ticks", tot[-1:])


if __name__ == "__main__":
    ptest.Test("module_io").run(main)
