#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
SIGUSR1 reopens the error log: after the operator renames the file and
sends the signal, a new file is created and gets every later line (the
master's and the workers', including workers that were running when the
signal came); the renamed file gets none. `portico -s reopen` does the
same through the pid file. When run as root, the same with workers that
dropped to "nobody" and a log directory only root may write to.
"""
import pwd
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def main(t):
    echo = t.echo_server()
    port, dead = ptest.free_port(), ptest.free_port()
    conf = t.conf("forward", WORKERS=2, RELAY="splice",
                  LISTENERS=ptest.listeners(
                      ("127.0.0.1:%d" % port, echo.address),
                      ("127.0.0.1:%d" % dead,
                       "127.0.0.1:%d" % ptest.free_port())))
    p = t.portico(conf)
    log = p.error_log
    t.check(bool(p.wait_log(r"started: 2 workers")),
            "the error log is written", lambda: ptest.tail(p.log()))
    before = p.workers()

    # -- 1: rename, SIGUSR1 -----------------------------------------------
    old1 = log + ".1"
    os.rename(log, old1)
    p.usr1()
    t.check(ptest.wait_for(lambda: os.path.exists(log), ptest.bound(5)),
            "SIGUSR1: a new error log file is created")
    time.sleep(0.5)
    s1 = size(old1)
    # later activity: a failing upstream (worker lines), a reload and a
    # worker death (master lines)
    for _ in range(3):
        ptest.echo_once(dead, timeout=ptest.bound(5))
    ok, why = ptest.echo_once(port)
    t.check(ok, "the forwarder works after SIGUSR1", why)
    p.hup()
    got = p.wait_log(r"reloaded ", path=log)
    t.check(bool(got), "SIGUSR1: a later 'reloaded' line goes to the new "
            "file", lambda: ["new file:"] + ptest.tail(read(log), 20))
    # the workers that ran before the signal say 'exiting' as they drain
    for slot, pid in sorted(before.items()):
        got = p.wait_log(r" %d worker %d: .*exiting" % (pid, slot), path=log)
        t.check(bool(got), "SIGUSR1: worker %d (running since before the "
                "signal) writes its later lines to the new file" % slot,
                lambda: ptest.tail(read(log), 20))
    w = p.wait_workers(2, ptest.bound(10))
    victim = (w or {}).get(1)
    got = None
    if victim:
        os.kill(victim, signal.SIGKILL)
        got = p.wait_log(r"respawning worker 1", path=log)
    t.check(bool(got), "SIGUSR1: a later 'respawning' line goes to the "
            "new file", lambda: ["worker 1: %s" % victim] +
            ptest.tail(read(log), 20))
    t.check(bool(p.wait_log(r"worker \d+: started", path=log)),
            "SIGUSR1: workers started later log to the new file",
            lambda: ptest.tail(read(log), 20))
    time.sleep(0.3)
    t.check(size(old1) == s1, "SIGUSR1: the renamed file gets no later "
            "line", lambda: ["renamed file grew from %s to %s bytes:"
                             % (s1, size(old1))] +
            read(old1)[s1 or 0:].splitlines()[:20])
    t.check(p.running(), "the master still runs")

    # -- 2: rename, portico -s reopen -----------------------------------------
    old2 = log + ".2"
    os.rename(log, old2)
    r = ptest.run_portico(["-c", p.conf_path, "-s", "reopen"])
    t.check(r.returncode == 0, "-s reopen exits 0",
            ["exit %s" % r.returncode, r.stdout, r.stderr])
    t.check(ptest.wait_for(lambda: os.path.exists(log), ptest.bound(5)),
            "-s reopen: a new error log file is created")
    time.sleep(0.5)
    s2 = size(old2)
    p.hup()
    got = p.wait_log(r"reloaded ", path=log)
    t.check(bool(got), "-s reopen: a later 'reloaded' line goes to the new "
            "file", lambda: ptest.tail(read(log), 20))
    for _ in range(3):
        ptest.echo_once(dead, timeout=ptest.bound(5))
    time.sleep(0.3)
    t.check(size(old2) == s2, "-s reopen: the renamed file gets no later "
            "line", lambda: read(old2)[s2 or 0:].splitlines()[:20])
    rc = t.stop_portico(p)
    t.check(bool(p.wait_log(r"master: exiting$", path=log)),
            "the exit line goes to the newest file",
            lambda: ptest.tail(read(log), 10))
    t.check(rc == 0, "SIGTERM: exit status 0", "exit %s" % rc)


def as_user(t):
    """Workers run as nobody; the log directory is root's."""
    if os.geteuid() != 0:
        t.skip("reopen with workers as an unprivileged user",
               "needs root")
        return
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        t.skip("reopen with workers as an unprivileged user", "no nobody")
        return
    echo = t.echo_server()
    port = ptest.free_port()
    logdir = t.path("logdir")
    os.mkdir(logdir, 0o755)
    os.chmod(t.tmp, 0o755)      # nobody may look, not write
    conf = t.conf("reopen_user", USER="nobody", LOGDIR=logdir,
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                             echo.address)))
    p = t.portico(conf, conf_name="user.conf")
    log = p.error_log
    w = p.workers()
    uids = {}
    for slot, pid in w.items():
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("Uid:"):
                        uids[slot] = [int(x) for x in line.split()[1:]]
        except OSError:
            pass
    t.check(len(uids) == 2 and all(set(u) == {nobody.pw_uid}
                                   for u in uids.values()),
            "user = nobody: the workers run as nobody (real, effective, "
            "saved)", "uids %s" % uids)
    ok, why = ptest.echo_once(port)
    t.check(ok, "user = nobody: the forwarder works", why)
    os.rename(log, log + ".1")
    p.usr1()
    t.check(ptest.wait_for(lambda: os.path.exists(log), ptest.bound(5)),
            "user = nobody: SIGUSR1 creates a new error log in root's "
            "directory")
    time.sleep(0.5)
    p.hup()
    t.check(bool(p.wait_log(r"reloaded ", path=log)),
            "user = nobody: later master lines go to the new file",
            lambda: ptest.tail(read(log), 10))
    for slot, pid in sorted(w.items()):
        got = p.wait_log(r" %d worker %d: .*exiting" % (pid, slot), path=log)
        t.check(bool(got), "user = nobody: worker %d, running as nobody "
                "since before the signal, writes to the new file" % slot,
                lambda: ["new file:"] + ptest.tail(read(log), 10) +
                ["renamed file:"] + ptest.tail(read(log + ".1"), 10))
    t.stop_portico(p)


def main_all(t):
    main(t)
    as_user(t)


if __name__ == "__main__":
    ptest.Test("reopen").run(main_all)
