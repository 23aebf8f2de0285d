#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Without -f portico becomes a daemon: the command returns 0 once the daemon
runs (pid file written), without holding the caller's stdout/stderr open;
the daemon is in its own session, serves, and obeys -s reload / -s stop.
A second start with the same pid file refuses ("already running"). A start
that cannot bind its address fails with exit 1 and says why on stderr, in
the background and in the foreground, and leaves nothing running.
"""
import os
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def session_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
        return int(data[data.rfind(")") + 2:].split()[3])
    except (OSError, ValueError, IndexError):
        return None


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def kill_daemon(pid):
    """Stops a daemon of ours by PID, then any worker it left."""
    if not pid or not (ptest.comm(pid) or "").startswith("portico"):
        return
    kids = list(ptest.children(pid))
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    ptest.wait_for(lambda: not ptest.alive(pid), ptest.bound(10))
    for p in [pid] + kids:
        if ptest.alive(p) and (ptest.comm(p) or "").startswith("portico"):
            os.kill(p, signal.SIGKILL)


def start_daemon(t, conf_path):
    """portico -c FILE (no -f): (exit status or 'hang', stdout+stderr)."""
    try:
        r = ptest.run_portico(["-c", conf_path], timeout=ptest.bound(20))
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return "hang", out
    return r.returncode, r.stdout + r.stderr


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()
    text = t.conf("forward", WORKERS=2, RELAY="splice",
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                             echo.address)))
    conf = ptest.write_conf(t.tmp, text, "daemon.conf")
    pid_file = t.path("portico.pid")
    log = t.path("error.log")
    t.at_exit(lambda: kill_daemon(read_pid(pid_file)))

    rc, out = start_daemon(t, conf)
    t.check(rc == 0, "portico -c FILE returns 0 once the daemon runs, "
            "without holding the caller's output open",
            ["exit %s" % rc, "output: " + out])
    pid = read_pid(pid_file)
    t.check(pid is not None and ptest.alive(pid),
            "the pid file names a running daemon", "pid %s" % pid)
    if not pid or not ptest.alive(pid):
        return
    st = ptest.proc_stat(pid)
    t.check(st[2] != os.getpid(), "the daemon is not our child",
            "ppid %d" % st[2])
    t.check(session_of(pid) == pid and session_of(pid) != session_of(
        os.getpid()), "the daemon leads its own session",
        "session %s, ours %s" % (session_of(pid), session_of(os.getpid())))
    w = ptest.wait_for(lambda: len([c for c in ptest.children(pid).values()
                                    if c.startswith("portico-w")]) == 2,
                       ptest.bound(10))
    t.check(w, "the daemon runs two workers", str(ptest.children(pid)))
    ptest.wait_for(lambda: ptest.listening(port), ptest.bound(5))
    ok, why = ptest.echo_once(port)
    t.check(ok, "the daemon forwards", why)

    # a second start with the same pid file refuses
    r = ptest.run_portico(["-f", "-c", conf], timeout=ptest.bound(20))
    t.check(r.returncode == 1 and "already running" in r.stderr,
            "a second start with the same pid file exits 1, "
            "'already running'",
            ["exit %s" % r.returncode, "stderr: " + r.stderr])
    t.check(ptest.alive(pid) and read_pid(pid_file) == pid,
            "the first daemon is untouched")
    # The same with standard error appended to the error_log file itself
    # (a unit's StandardError=append: of it, or 2>> it): the line is in
    # the file once, not once through the log and once through stderr.
    before = open(log).read().count("already running")
    with open(log, "ab") as errf:
        r = subprocess.run([ptest.PORTICO, "-f", "-c", conf],
                           stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=errf,
                           timeout=ptest.bound(20))
    n = open(log).read().count("already running") - before
    t.check(r.returncode == 1 and n == 1, "started with stderr appended "
            "to its own error_log, the refusal is written there once",
            lambda: ["exit %s, %d new lines" % (r.returncode, n)] +
            ptest.tail(open(log).read(), 4))
    ok, why = ptest.echo_once(port)
    t.check(ok, "and still forwards", why)

    # -s reload, -s stop
    r = ptest.run_portico(["-c", conf, "-s", "reload"])
    t.check(r.returncode == 0, "-s reload exits 0",
            ["exit %s" % r.returncode, r.stderr])
    got = ptest.wait_for(lambda: "reloaded " in open(log).read(),
                         ptest.bound(10))
    t.check(got, "-s reload: the daemon reloads",
            lambda: ptest.tail(open(log).read(), 10))
    ok, why = ptest.echo_once(port)
    t.check(ok, "the daemon forwards after the reload", why)
    kids = list(ptest.children(pid))
    r = ptest.run_portico(["-c", conf, "-s", "stop"])
    t.check(r.returncode == 0, "-s stop exits 0",
            ["exit %s" % r.returncode, r.stderr])
    gone = ptest.wait_for(lambda: not ptest.alive(pid) and
                          not any(ptest.alive(k) for k in kids),
                          ptest.bound(10))
    t.check(gone, "-s stop: the daemon and its workers are gone",
            "alive: %s" % [p for p in [pid] + kids if ptest.alive(p)])
    t.check(not os.path.exists(pid_file), "-s stop: the pid file is gone")

    # a stale pid file (naming a live process that is not portico: this
    # test) does not block a start
    ptest.write_file(pid_file, "%d\n" % os.getpid())
    rc, out = start_daemon(t, conf)
    pid = read_pid(pid_file)
    t.check(rc == 0 and pid not in (None, os.getpid()) and ptest.alive(pid),
            "a stale pid file naming another program does not block the "
            "start", ["exit %s, pid file %s" % (rc, pid), "output: " + out])
    if pid is not None and pid != os.getpid():   # never signal ourselves
        ptest.run_portico(["-c", conf, "-s", "stop"])
        ptest.wait_for(lambda: not ptest.alive(pid), ptest.bound(10))
        t.check(not ptest.alive(pid), "and that daemon stops on -s stop")
    else:
        os.unlink(pid_file)

    # start failures: the error log cannot be opened
    text = t.conf("forward", WORKERS=2, RELAY="splice",
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % port,
                                             echo.address)))
    text = text.replace(log, t.path("no", "such", "dir", "error.log"))
    nolog = ptest.write_conf(t.tmp, text, "nolog.conf")
    rc, out = start_daemon(t, nolog)
    t.check(rc == 1 and "no/such/dir/error.log" in out,
            "an error_log that cannot be opened: exit 1, naming it",
            ["exit %s" % rc, "output: " + out])
    t.check(not os.path.exists(pid_file), "and no pid file")

    # start failures: the address is taken
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(4)
    t.at_exit(busy.close)
    bport = busy.getsockname()[1]
    text = t.conf("forward", WORKERS=2, RELAY="splice",
                  LISTENERS=ptest.listeners(("127.0.0.1:%d" % bport,
                                             echo.address)))
    bad = ptest.write_conf(t.tmp, text, "busy.conf")
    rc, out = start_daemon(t, bad)
    t.check(rc == 1 and "127.0.0.1:%d" % bport in out,
            "a daemon start on a taken address exits 1 and names it",
            ["exit %s" % rc, "output: " + out])
    t.check(not os.path.exists(pid_file),
            "the failed start leaves no pid file")
    r = ptest.run_portico(["-f", "-c", bad], timeout=ptest.bound(20))
    t.check(r.returncode == 1 and "127.0.0.1:%d" % bport in r.stderr,
            "a foreground start on a taken address exits 1 and names it",
            ["exit %s" % r.returncode, "stderr: " + r.stderr])
    t.check(not os.path.exists(pid_file),
            "the failed foreground start leaves no pid file")


if __name__ == "__main__":
    ptest.Test("daemon").run(main)
