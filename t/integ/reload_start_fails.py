#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A reload whose configuration the master accepts but whose workers cannot
start (here the test module hookrec, whose worker opens its record file in
a directory that does not exist: `portico -t` cannot see that):

- the log says the new generation is not up and the previous one keeps
  serving; no "reloaded" line;
- for the seconds after, every new connection is served (by the old
  workers, with the old configuration), none refused or left hanging;
- a reload to a good configuration then completes ("reloaded"), the
  workers of both earlier generations go, and connections are served.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

CONF = """
workers = 2;
error_log = "@TMP@/error.log";
log_level = "info";
pid_file = "@TMP@/portico.pid";
shutdown_timeout = 5;
listeners = ( { address = "127.0.0.1:@PORT@"; protocol = "tcp"; to = "@TO@"; } );
@MODULES@
"""


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()

    def conf(modules=""):
        return ptest.fill(CONF, TMP=t.tmp, PORT=port, TO=echo.address,
                          MODULES=modules)

    p = t.portico(conf())
    first = set(p.workers().values())
    bad = conf('modules = ( { name = "hookrec"; path = "%s"; '
               'record = "%s/no-such-dir/rec"; } );'
               % (os.path.join(ptest.TESTMODDIR, "hookrec.so"), t.tmp))
    check = ptest.write_conf(t.tmp, bad, "check.conf")
    r = ptest.run_portico(["-t", "-c", check])
    t.check(r.returncode == 0, "portico -t accepts the new file (what fails "
            "is only seen in a worker)", r.stderr)

    p.set_conf(bad)
    p.hup()
    lines = p.wait_log(r"generation 2 is not up", timeout=ptest.bound(10))
    t.check(bool(lines), "the log says generation 2 is not up and the "
            "previous one keeps serving", lambda: ptest.tail(p.log(), 15))
    served, failed = 0, []
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        ok, why = ptest.echo_once(port, timeout=ptest.bound(3))
        if ok:
            served += 1
        else:
            failed.append(why)
        time.sleep(0.02)
    t.check(served > 0 and not failed, "for 2 s after it, every new "
            "connection is served (%d), none refused or hanging" % served,
            failed[:5])
    t.check(not p.log_lines(r"reloaded "), "no 'reloaded' line",
            p.log_lines(r"reloaded "))
    t.check(all(ptest.alive(w) for w in first),
            "the first generation's workers are still there",
            [(w, ptest.alive(w)) for w in first])

    p.set_conf(conf())
    p.hup()
    t.check(bool(p.wait_log(r"reloaded .*generation 3",
                            timeout=ptest.bound(10))),
            "a reload to a good file completes: generation 3",
            lambda: ptest.tail(p.log(), 15))
    gone = ptest.wait_for(lambda: not any(ptest.alive(w) for w in first),
                          ptest.bound(10))
    t.check(gone, "the first generation's workers then leave",
            [(w, ptest.alive(w), ptest.comm(w)) for w in first])
    good = sum(1 for _ in range(10) if ptest.echo_once(port)[0])
    t.check(good == 10, "10 of 10 connections served by generation 3",
            "%d of 10" % good)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("reload_start_fails").run(main)
