#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
SIGQUIT is a graceful stop: a long transfer in progress completes
byte-exact, then the master exits with status 0 and removes its pid file;
meanwhile new clients are refused.
SIGTERM is a fast stop: the master exits promptly even with a connection
open, which is reset (as one still open at shutdown_timeout after a
SIGQUIT): a FIN would read as the tunnel's natural end. `portico -s stop` and `-s quit` find the master through the pid file.
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

LONG = 16 * ptest.MiB


def start(t, echo, name, shutdown=30):
    port = ptest.free_port()
    for f in ("error.log", "portico.pid"):
        if os.path.exists(t.path(f)):
            os.rename(t.path(f), t.path("%s.before-%s" % (f, name)))
    conf = t.conf("forward", WORKERS=2, RELAY="splice",
                  SHUTDOWN=shutdown,
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                             echo.address)))
    p = t.portico(conf, conf_name=name + ".conf")
    return p, port


def main(t):
    echo = t.echo_server()

    # -- SIGQUIT during a long transfer --------------------------------
    # shutdown_timeout is long: the transfer must end on its own, not be
    # cut by the timeout
    p, port = start(t, echo, "quit", shutdown=300)
    t.check(os.path.exists(p.pid_file), "the pid file exists while running")
    workers = list(p.workers().values())
    release = threading.Event()
    t.at_exit(release.set)
    x = ptest.Transfer(port, LONG, slow_until=release, slow_sleep=0.005,
                       timeout=ptest.bound(60)).start()
    t.at_exit(x.close)
    ptest.wait_for(lambda: x.received > 0, ptest.bound(10))
    p.quit()
    lines = p.wait_log(r"shutting down gracefully")
    t.check(bool(lines), "SIGQUIT: the log says 'shutting down gracefully'",
            lambda: ptest.tail(p.log()))
    time.sleep(1.0)
    t.check(p.running() and not x.done.is_set(),
            "SIGQUIT: the master waits for the transfer in progress",
            lambda: ["master exit %s" % p.proc.poll(), x.describe()])
    # Nobody accepts any more: a new client is refused at once rather
    # than left in a queue until the master exits (the master closed
    # its copies of the listening sockets too).
    t.check(ptest.try_connect(port) == "refused",
            "SIGQUIT: while it drains, a new client is refused",
            lambda: [ptest.try_connect(port), "listening: %s" %
                     ptest.listening(port)])
    release.set()
    x.wait(ptest.bound(20))
    t.check(x.ok(), "SIGQUIT: the %d MiB transfer completes byte-exact, "
            "with EOF, within %.0f s" % (LONG // ptest.MiB, ptest.bound(20)),
            lambda: [x.describe()] + ptest.tail(p.log()))
    if not x.ok():
        # the checks below then fail too: no need to wait long for them
        x.close()
    rc = p.wait_exit(ptest.bound(15 if x.ok() else 3))
    t.check(rc == 0, "SIGQUIT: then the master exits with status 0",
            lambda: ["exit %s" % p.proc.poll()] + ptest.tail(p.log()))
    t.check(not os.path.exists(p.pid_file), "SIGQUIT: the pid file is gone")
    t.check(not p.log_lines(r"shutdown_timeout"),
            "SIGQUIT: no connection had to be cut by shutdown_timeout",
            lambda: p.log_lines(r"shutdown_timeout"))
    t.check(not any(ptest.alive(w) for w in workers),
            "SIGQUIT: the workers are gone",
            str([(w, ptest.comm(w)) for w in workers if ptest.alive(w)]))
    t.check(bool(p.log_lines(r"master: exiting$")),
            "SIGQUIT: the log says 'exiting'", lambda: ptest.tail(p.log()))
    t.check(bool(p.log_lines(r"totals: accepted=")),
            "SIGQUIT: the log has the exit totals")
    t.stop_portico(p)

    # -- SIGTERM with a connection open: prompt ---------------------------
    p, port = start(t, echo, "term")
    workers = list(p.workers().values())
    held = ptest.Held(port)
    t.at_exit(held.close)
    t.check(held.ping()[0], "SIGTERM: a held connection relays")
    t0 = time.monotonic()
    p.term()
    rc = p.wait_exit(ptest.bound(5))
    el = time.monotonic() - t0
    t.check(rc is not None, "SIGTERM: the master exits within %.0f s "
            "though a connection is open" % ptest.bound(5),
            lambda: ptest.tail(p.log()))
    t.diag("SIGTERM exit after %.2f s, status %s" % (el, rc))
    t.check(rc == 0, "SIGTERM: exit status 0", "exit %s" % rc)
    t.check(not os.path.exists(p.pid_file), "SIGTERM: the pid file is gone")
    gone = ptest.wait_for(lambda: not any(ptest.alive(w) for w in workers),
                          ptest.bound(5))
    t.check(gone, "SIGTERM: the workers are gone",
            str([(w, ptest.comm(w)) for w in workers if ptest.alive(w)]))
    how = held.ending(ptest.bound(5))
    t.check(how == "reset", "SIGTERM: the held tunnel is reset, not ended "
            "with a FIN that would read as its natural end", how)
    held.close()
    t.stop_portico(p)

    # -- SIGQUIT, a tunnel still open at shutdown_timeout: cut, reset -------
    p, port = start(t, echo, "cut", shutdown=1)
    held = ptest.Held(port)
    t.at_exit(held.close)
    t.check(held.ping()[0], "shutdown_timeout 1: a held tunnel relays")
    p.quit()
    how = held.ending(ptest.bound(10))
    t.check(how == "reset", "at shutdown_timeout the tunnel is reset, not "
            "ended with a FIN", how)
    t.check(bool(p.wait_log(r"shutdown_timeout: closing 1 ")),
            "the log says shutdown_timeout closed it",
            lambda: ptest.tail(p.log()))
    held.close()
    p.wait_exit(ptest.bound(10))
    t.stop_portico(p)

    # -- portico -s stop / -s quit, through the pid file --------------------
    for verb in ("stop", "quit"):
        p, port = start(t, echo, "s-" + verb)
        r = ptest.run_portico(["-c", p.conf_path, "-s", verb])
        t.check(r.returncode == 0, "-s %s exits 0" % verb,
                ["exit %s" % r.returncode, r.stdout, r.stderr])
        rc = p.wait_exit(ptest.bound(10))
        t.check(rc == 0, "-s %s: the master exits with status 0" % verb,
                lambda: ["exit %s" % p.proc.poll()] + ptest.tail(p.log()))
        t.check(not os.path.exists(p.pid_file),
                "-s %s: the pid file is gone" % verb)
        t.stop_portico(p)

    # -s with no master running: an error, not a crash
    r = ptest.run_portico(["-c", p.conf_path, "-s", "reload"])
    t.check(r.returncode == 1 and r.stderr.strip() != "",
            "-s reload with no master running exits 1 with a message",
            ["exit %s" % r.returncode, r.stderr])

    # -s with a stale pid file naming someone else: nobody is signalled
    other = subprocess.Popen(["sleep", "30"])
    t.at_exit(other.kill)
    with open(p.pid_file, "w") as f:
        f.write("%d\n" % other.pid)
    r = ptest.run_portico(["-c", p.conf_path, "-s", "stop"])
    time.sleep(0.2)
    t.check(r.returncode == 1 and "not a running portico" in r.stderr and
            other.poll() is None,
            "-s stop with a stale pid file naming another program exits 1 "
            "and signals nothing", ["exit %s" % r.returncode, r.stderr,
                                    "sleep: %s" % other.poll()])
    other.kill()
    other.wait()
    os.unlink(p.pid_file)


if __name__ == "__main__":
    ptest.Test("sigquit").run(main)
