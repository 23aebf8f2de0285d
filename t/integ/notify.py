#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The systemd notification protocol against a test NOTIFY_SOCKET (an AF_UNIX
datagram socket bound here, with SO_PASSCRED so each datagram names the
process that sent it):

- READY=1 comes once, from the master, when every worker of the first
  generation runs: a connection through the proxy succeeds the moment it
  arrives; a STATUS= line comes with it;
- SIGHUP: RELOADING=1 with MONOTONIC_USEC= (CLOCK_MONOTONIC, between the
  times before and after the signal), then READY=1 once the new generation
  runs (every current worker a new pid);
- a reload of a broken file: RELOADING=1, then READY=1 with
  STATUS=reload failed: ..., and the old generation still serves;
- SIGQUIT: STOPPING=1, then the master exits 0;
- no datagram from any process but the master (workers do not notify);
- an abstract socket name ("@name") works the same (READY=1).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()
    conf = t.conf("forward", WORKERS=2, RELAY="copy", SHUTDOWN=10,
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                             echo.address)))
    n = ptest.NotifySocket(t.path("notify.sock"))
    t.at_exit(n.close)
    p = t.portico(conf, wait=False, env={"NOTIFY_SOCKET": n.name})

    # -- start ----------------------------------------------------------
    (pid, kv), seen = n.until("READY", ptest.bound(15))
    ok, why = ptest.echo_once(port) if kv else (False, "no READY")
    workers = p.workers()
    t.check(kv is not None and kv.get("READY") == "1",
            "start: READY=1 arrives", lambda: [seen] + ptest.tail(p.log()))
    t.check(ok, "start: a connection through the proxy succeeds the moment "
            "READY=1 arrives", why)
    t.check(len(workers) == 2, "start: both workers run at READY=1",
            str(p.all_children()))
    t.check(pid == p.pid, "start: READY=1 comes from the master (pid %d)"
            % p.pid, "sender pid %s" % pid)
    t.check(kv is not None and "serving" in kv.get("STATUS", ""),
            "start: STATUS= says it serves", str(kv))
    t.check(sum(1 for _, d in seen if "READY" in d) == 1,
            "start: READY=1 once", str(seen))

    # -- reload ---------------------------------------------------------
    before = time.monotonic_ns() // 1000
    p.hup()
    after = time.monotonic_ns() // 1000
    (pid, kv), seen = n.until("RELOADING", ptest.bound(10))
    t.check(kv is not None and kv.get("RELOADING") == "1",
            "SIGHUP: RELOADING=1", str(seen))
    mono = int(kv.get("MONOTONIC_USEC", "0")) if kv else 0
    t.check(before <= mono <= after + 1000000 * ptest.SLOW,
            "SIGHUP: MONOTONIC_USEC= is CLOCK_MONOTONIC at the signal",
            "before %d, got %d, after %d" % (before, mono, after))
    (pid, kv), seen = n.until("READY", ptest.bound(15))
    # An old worker may not have renamed itself portico-drain yet: the
    # new generation is the portico-wN children that are not old pids.
    fresh = {q for q, c in p.all_children().items()
             if c.startswith("portico-w") and q not in workers.values()}
    ok, why = ptest.echo_once(port)
    t.check(kv is not None and kv.get("READY") == "1" and
            "reloaded" in kv.get("STATUS", ""),
            "SIGHUP: then READY=1 with STATUS=reloaded ...", str(seen))
    t.check(len(fresh) == 2,
            "SIGHUP: at READY=1 both workers of the new generation run",
            "before %s, new at READY %s" % (workers, fresh))
    ptest.wait_for(lambda: set(p.workers().values()) == fresh,
                   ptest.bound(10))
    now = p.workers()
    t.check(ok, "SIGHUP: a connection succeeds at READY=1", why)

    # -- a reload that fails ----------------------------------------------
    p.set_conf(conf.replace("shutdown_timeout", "shutdown_timeout == 3;\n#"))
    p.hup()
    (pid, kv), seen = n.until("READY", ptest.bound(10))
    t.check(any("RELOADING" in d for _, d in seen),
            "failed reload: RELOADING=1 first", str(seen))
    t.check(kv is not None and kv.get("READY") == "1" and
            kv.get("STATUS", "").startswith("reload failed: "),
            "failed reload: READY=1 with STATUS=reload failed: ...",
            str(seen))
    ok, why = ptest.echo_once(port)
    t.check(ok and p.workers() == now,
            "failed reload: the same generation still serves",
            "%s; workers %s, before %s" % (why, p.workers(), now))
    p.set_conf(conf)

    # -- stop -----------------------------------------------------------
    p.quit()
    (pid, kv), seen = n.until("STOPPING", ptest.bound(10))
    t.check(kv is not None and kv.get("STOPPING") == "1" and pid == p.pid,
            "SIGQUIT: STOPPING=1 from the master", str(seen))
    rc = p.wait_exit(ptest.bound(15))
    t.check(rc == 0, "SIGQUIT: the master exits 0", "exit %s" % rc)
    t.check(all(sender == p.pid for sender, _ in n.got),
            "every datagram came from the master, none from a worker",
            str(n.got))
    t.stop_portico(p)

    # -- an abstract socket --------------------------------------------
    a = ptest.NotifySocket("@portico-test-%d" % os.getpid())
    t.at_exit(a.close)
    p2 = t.portico(conf, wait=False, conf_name="abstract.conf",
                   env={"NOTIFY_SOCKET": a.name})
    (pid, kv), seen = a.until("READY", ptest.bound(15))
    t.check(kv is not None and kv.get("READY") == "1" and pid == p2.pid,
            "abstract NOTIFY_SOCKET (@name): READY=1 from the master",
            lambda: [seen] + ptest.tail(p2.log()))
    t.stop_portico(p2)


ptest.Test("notify").run(main)
