#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Binary upgrade (SIGUSR2) loses nothing. portico runs from a copy of the
binary in the scenario's directory (so the file can be swapped), two
workers, a listener to an echo server and one to a server that sends
32 MiB. While clients open a new connection per request and a slow
download runs:

- SIGUSR2: a new master (a child of the old one) starts on the same
  sockets and reports ready; the pid file names it and <pid_file>.oldbin
  the old one; both generations serve;
- SIGQUIT to the old master: it tells systemd MAINPID=<new> (not
  STOPPING=1), its workers finish the download, it exits 0 and removes
  only the .oldbin file;
- across all of it: not one connection refused or reset, every echo
  exact, the download byte-exact (sha256) with its EOF.

Then a new binary that cannot start leaves the running master serving,
with the pid file back in place and the reason in the log: a broken
configuration (the error text comes back through the upgrade pipe), a
"binary" that is a script exiting 1, a missing file (exec fails). Last, a
rollback: a good upgrade (by `portico -s upgrade`), then the new master
stopped: the old one takes its pid file back and serves on.
"""
import hashlib
import os
import re
import shutil
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

LONG = 32 * ptest.MiB


class Download:
    """Reads everything the source server sends through <port>, slowly
    until <release> is set."""

    def __init__(self, port, release):
        self.sock = ptest.connect(port, timeout=ptest.bound(10))
        self.sock.settimeout(ptest.bound(60))
        self.release = release
        self.h = hashlib.sha256()
        self.got = 0
        self.eof = False
        self.error = None
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        try:
            deadline = time.monotonic() + ptest.bound(120)
            while time.monotonic() < deadline:
                if not self.release.is_set():
                    time.sleep(0.01)
                    n = 8192
                else:
                    n = 262144
                d = self.sock.recv(n)
                if not d:
                    # A tunnel lasts until both sides closed: the
                    # download's end is the client's close.
                    self.eof = True
                    self.close()
                    break
                self.h.update(d)
                self.got += len(d)
        except Exception as e:
            self.error = "after %d bytes: %s" % (self.got, ptest.err_kind(e))
        finally:
            self.done.set()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def kill_tree(pid):
    """SIGKILL a master we do not own as a child, and its workers (by
    PID)."""
    if pid is None or not ptest.alive(pid):
        return
    kids = list(ptest.children(pid))
    for q in [pid] + kids:
        try:
            os.kill(q, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main(t):
    echo = t.echo_server()
    src = t.source_server(LONG)
    eport, dport = ptest.free_port(), ptest.free_port()
    conf = t.conf("forward", WORKERS=2, RELAY="copy", SHUTDOWN=60,
                  LISTENERS=ptest.listeners(
                      ("127.0.0.1:%d" % eport, echo.address),
                      ("127.0.0.1:%d" % dport, src.address)))
    os.mkdir(t.path("bin"))
    binary = t.path("bin", "portico")
    shutil.copy2(ptest.PORTICO, binary)
    ptest.PORTICO = binary
    n = ptest.NotifySocket(t.path("notify.sock"))
    t.at_exit(n.close)
    p = t.portico(conf, env={"NOTIFY_SOCKET": n.name})
    old = p.pid
    pidf, oldbin = p.pid_file, p.pid_file + ".oldbin"
    news = []
    t.at_exit(lambda: [kill_tree(q) for q in news])

    done = threading.Event()
    load = ptest.ClientLoop(eport, threads=3, per_thread=20,
                            max_per_thread=100000, until=done,
                            max_seconds=ptest.bound(60)).start()
    t.at_exit(load.stop_now.set)
    release = threading.Event()
    t.at_exit(release.set)
    dl = Download(dport, release)
    t.at_exit(dl.close)
    ptest.wait_for(lambda: dl.got > 0, ptest.bound(10))

    # -- SIGUSR2: the new master starts on the same sockets -------------
    p.signal(signal.SIGUSR2)
    lines = p.wait_log(r"binary upgrade: new master pid \d+ is ready",
                       timeout=ptest.bound(20))
    m = re.search(r"new master pid (\d+)", lines[-1]) if lines else None
    new = int(m.group(1)) if m else None
    news.append(new)
    t.check(new is not None and ptest.alive(new),
            "SIGUSR2: the log names a new master, ready",
            lambda: ptest.tail(p.log()))
    t.check(read_pid(pidf) == new and read_pid(oldbin) == old,
            "SIGUSR2: pid_file names the new master, pid_file.oldbin the "
            "old one", "pid_file %s, oldbin %s" % (read_pid(pidf),
                                                    read_pid(oldbin)))
    nw = ptest.children(new) if new else {}
    t.check(sorted(nw.values()) == ["portico-w0", "portico-w1"] and
            len(p.workers()) == 2,
            "SIGUSR2: the new master runs its two workers, the old one "
            "still its own", "new %s, old %s" % (nw, p.all_children()))
    t.check(bool(p.log_lines(r"binary upgrade: 4 sockets adopted")),
            "SIGUSR2: the new master adopted all 4 sockets (2 listeners x "
            "2 slots) instead of binding", lambda: ptest.tail(p.log()))
    served = load.total
    time.sleep(0.5)
    t.check(load.total > served and not load.failures,
            "SIGUSR2: connections go on while both generations serve",
            "%d then %d, failures %s" % (served, load.total,
                                         load.failures[:5]))

    # -- SIGQUIT to the old master: it drains and hands over -------------
    p.quit()
    (pid, kv), seen = n.until("MAINPID", ptest.bound(10))
    t.check(kv is not None and kv.get("MAINPID") == str(new) and
            pid == old,
            "SIGQUIT (old): the old master tells systemd MAINPID=<new>",
            str(seen))
    t.check(not any("STOPPING" in d for s, d in n.got if s == old),
            "SIGQUIT (old): and not STOPPING=1", str(n.got))
    time.sleep(0.3)
    t.check(p.running() and not dl.done.is_set(),
            "SIGQUIT (old): the old master waits for the download",
            lambda: ["exit %s, got %d, error %s" % (p.proc.poll(), dl.got,
                                                     dl.error)])
    release.set()
    dl.done.wait(ptest.bound(60))
    t.check(dl.done.is_set() and dl.error is None and dl.eof and
            dl.got == LONG and dl.h.hexdigest() == src.digest,
            "the %d MiB download through the old worker completes "
            "byte-exact, with EOF" % (LONG // ptest.MiB),
            "got %d of %d, eof %s, error %s, sha equal %s" % (
                dl.got, LONG, dl.eof, dl.error,
                dl.h.hexdigest() == src.digest))
    rc = p.wait_exit(ptest.bound(20))
    t.check(rc == 0, "SIGQUIT (old): then the old master exits 0",
            lambda: ["exit %s" % rc] + ptest.tail(p.log()))
    t.check(read_pid(pidf) == new and not os.path.exists(oldbin),
            "after: pid_file names the new master, .oldbin is gone",
            "pid_file %s, oldbin exists %s" % (read_pid(pidf),
                                               os.path.exists(oldbin)))
    served = load.total
    time.sleep(0.5)
    done.set()
    load.join(ptest.bound(30))
    t.check(load.total > served, "after: the new master alone serves",
            "%d then %d" % (served, load.total))
    t.check(not load.failures and load.total >= 60,
            "across the upgrade: %d connections, none refused or reset, "
            "every echo exact" % load.total,
            lambda: ["%d failures: %s" % (len(load.failures),
                                          load.failures[:10])])
    t.check(new is not None and ptest.alive(new), "the new master runs")

    # -- a new binary that cannot start ---------------------------------
    def failed_upgrade(label, want):
        count = len(p.log_lines(r"binary upgrade failed"))
        os.kill(new, signal.SIGUSR2)
        lines = p.wait_log(r"binary upgrade failed", count=count + 1,
                           timeout=ptest.bound(15))
        t.check(len(lines) > count and re.search(want, lines[-1]),
                "%s: the log says why (%s)" % (label, want),
                lambda: ptest.tail(p.log()))
        ok, why = ptest.echo_once(eport)
        t.check(ok and ptest.alive(new) and read_pid(pidf) == new and
                not os.path.exists(oldbin),
                "%s: the running master serves on, its pid file back in "
                "place" % label,
                "%s, alive %s, pid_file %s, oldbin %s" % (
                    why, ptest.alive(new), read_pid(pidf),
                    os.path.exists(oldbin)))

    good = conf
    p.set_conf(conf.replace("shutdown_timeout", "shutdown_timeout == 3;\n#"))
    failed_upgrade("broken configuration",
                   r"status 1 before it was ready \(%s:\d+: "
                   % re.escape(p.conf_path))
    p.set_conf(good)
    os.rename(binary, binary + ".real")
    ptest.write_file(binary, "#!/bin/sh\nexit 1\n")
    os.chmod(binary, 0o755)
    failed_upgrade("a binary that exits 1", r"exited with status 1 before")
    os.unlink(binary)
    failed_upgrade("no binary at the path",
                   r"exec %s: No such file" % re.escape(binary))
    os.rename(binary + ".real", binary)

    # -- rollback: the new master stopped, the old one takes over again --
    count = len(p.log_lines(r"is ready;"))
    r = ptest.run_portico(["-s", "upgrade", "-c", p.conf_path])
    t.check(r.returncode == 0, "portico -s upgrade sends SIGUSR2 to the "
            "master in pid_file", r.stderr)
    lines = p.wait_log(r"binary upgrade: new master pid \d+ is ready",
                       count=count + 1, timeout=ptest.bound(20))
    m = re.search(r"new master pid (\d+)", lines[-1]) \
        if len(lines) > count else None
    newer = int(m.group(1)) if m else None
    news.append(newer)
    t.check(newer is not None and read_pid(pidf) == newer,
            "rollback: a second upgrade is ready",
            lambda: ptest.tail(p.log()))
    if newer is not None:
        os.kill(newer, signal.SIGTERM)
    lines = p.wait_log(r"takes back the pid file", timeout=ptest.bound(15))
    ok, why = ptest.echo_once(eport)
    t.check(bool(lines) and read_pid(pidf) == new and ok and
            not os.path.exists(oldbin),
            "rollback: the new master stopped, the previous one serves on "
            "with its pid file", lambda: [why, read_pid(pidf)] +
            ptest.tail(p.log()))

    # -- the end ---------------------------------------------------------
    workers = list(ptest.children(new))
    os.kill(new, signal.SIGTERM)
    gone = ptest.wait_for(lambda: not any(ptest.alive(q) for q in
                                          [new] + workers),
                          ptest.bound(15))
    t.check(gone, "SIGTERM: the new master and its workers exit",
            lambda: ptest.tail(p.log()))
    t.check(not os.path.exists(pidf), "SIGTERM: the pid file is removed")
    if ptest.SANITIZERS:
        rep = p.sanitizer_reports()
        t.check(not rep, "no sanitizer report", lambda: rep[:40])


ptest.Test("upgrade").run(main)
