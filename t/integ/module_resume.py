#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A module that answered AGAIN may give the connection back from its LOG
hook when the connection closed while it waited (here: header_timeout
fires during a 20 s AGAIN at ACCEPT, and hookrec's resume_at_log calls
pt_conn_resume from LOG). The core must free that connection exactly
once: the worker keeps serving, does not spin, and the record shows the
resume.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def accepting_pids(p):
    """Every child still named portico-wN, of any generation: two
    generations share slot numbers, so p.workers() (by slot) can hide
    one of them."""
    return {pid for pid, c in p.all_children().items()
            if c.startswith("portico-w")}


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()
    rec = t.path("resume.rec")
    conf = t.conf("modules", WORKERS=1, LISTEN="127.0.0.1:%d" % port,
                  TO=echo.address, REC=rec,
                  EXTRA="again_ms = 20000; resume_at_log = true;")
    conf += "\nlimits = { header_timeout = 1; };\n"
    p = t.portico(conf)
    (worker,) = p.workers().values()

    s = ptest.connect(port)
    s.settimeout(ptest.bound(6))
    try:
        closed = s.recv(1) == b""
    except (ConnectionResetError, OSError):
        closed = True
    s.close()
    t.check(closed, "the waiting connection is closed at header_timeout")
    got = ptest.wait_for(lambda: "LOG-RESUMED" in open(rec).read(),
                         ptest.bound(3))
    t.check(bool(got), "the module resumed it from its LOG hook",
            lambda: open(rec).read().splitlines()[-5:])

    cpu0 = ptest.cpu_seconds(worker)
    time.sleep(1.0)
    used = ptest.cpu_seconds(worker) - cpu0
    t.check(used < 0.5, "the worker does not spin afterwards",
            "%.2f s of CPU in 1 s" % used)
    t.check(ptest.alive(worker) and worker in p.workers().values(),
            "the worker is still the same process")

    # A normal connection still goes through (ACCEPT waits 20 s, so use
    # a configuration without again_ms).
    conf2 = t.conf("modules", WORKERS=1, LISTEN="127.0.0.1:%d" % port,
                   TO=echo.address, REC=rec, EXTRA="resume_at_log = true;")
    old = accepting_pids(p)
    p.set_conf(conf2)
    p.hup()
    p.wait_log(r"reloaded ")
    # the old worker (again_ms = 20000) accepts until it drains
    ptest.wait_for(lambda: not (old & accepting_pids(p)), ptest.bound(5))
    ok, why = ptest.echo_once(port)
    t.check(ok, "the forwarder still serves after a reload", why)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("module_resume").run(main)
