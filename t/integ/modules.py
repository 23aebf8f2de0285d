#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Module hooks, seen through the test module hookrec (t/modules/hookrec.c),
which writes one line per call into its record file:

- every worker runs init_worker (INIT worker=N), reopen on SIGUSR1 (REOPEN),
  exit_worker on a graceful stop (EXIT worker=N);
- one forwarded connection runs ACCEPT, ACCESS, DIAL, ESTABLISHED, LOG, in
  that order, for one conn id; DIAL knows the target; LOG has in/out byte
  counts equal to what was sent;
- again_ms: ACCEPT answers AGAIN and resumes later (ACCEPT-RESUMED), and
  the connection still works; a client that leaves during the wait is
  cleaned up;
- deny_phase = "ACCESS": the client is closed, the echo server never sees
  a connection; deny at ACCEPT through a delayed resume does the same;
- a reload hands the module its new settings; loading a module from
  another file is refused until a restart.
"""
import os
import re
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

PHASES = ["ACCEPT", "ACCESS", "DIAL", "ESTABLISHED", "LOG"]


def records(path):
    out = []
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        out.append((parts[0], kv, line))
    return out


def by_conn(recs):
    conns = {}
    for ev, kv, line in recs:
        if "conn" in kv:
            conns.setdefault(kv["conn"], []).append((ev, kv, line))
    return conns


def events(seq):
    return [ev for ev, _, _ in seq]


def start(t, echo, name, workers, extra=""):
    port = ptest.free_port()
    rec = t.path(name + ".rec")
    if os.path.exists(t.path("error.log")):
        os.rename(t.path("error.log"), t.path("error-before-%s.log" % name))
    conf = t.conf("modules", WORKERS=workers, LISTEN="127.0.0.1:%d" % port,
                  TO=echo.address, REC=rec, EXTRA=extra)
    p = t.portico(conf, conf_name=name + ".conf")
    return p, port, rec


def wait_recs(rec, pred, timeout):
    return ptest.wait_for(lambda: pred(records(rec)) and records(rec),
                          timeout) or records(rec)


def plain(t, echo):
    p, port, rec = start(t, echo, "plain", 2)
    recs = wait_recs(rec, lambda r: sum(1 for e, _, _ in r
                                        if e == "INIT") >= 2,
                     ptest.bound(5))
    inits = sorted(kv.get("worker") for e, kv, _ in recs if e == "INIT")
    t.check(inits == ["0", "1"], "plain: one INIT line per worker (0, 1)",
            ["INIT workers: %s" % inits])

    payload = os.urandom(1000)
    ok, why = ptest.echo_once(port, payload)
    t.check(ok, "plain: the connection echoes", why)
    recs = wait_recs(rec, lambda r: any(e == "LOG" for e, _, _ in r),
                     ptest.bound(5))
    conns = by_conn(recs)
    t.check(len(conns) == 1, "plain: one connection, one conn id",
            [line for _, _, line in recs])
    seq = list(conns.values())[0] if conns else []
    t.check(events(seq) == PHASES,
            "plain: hooks ran in order " + ", ".join(PHASES),
            "got %s" % events(seq))
    d = {ev: kv for ev, kv, _ in seq}
    t.check(d.get("DIAL", {}).get("target") == echo.address and
            d.get("ESTABLISHED", {}).get("target") == echo.address,
            "plain: DIAL and ESTABLISHED know the target %s" % echo.address,
            [line for _, _, line in seq])
    t.check(d.get("ACCESS", {}).get("port") == str(echo.port),
            "plain: ACCESS knows the target port %d" % echo.port,
            [line for _, _, line in seq])
    t.check(d.get("LOG", {}).get("in") == "1000" and
            d.get("LOG", {}).get("out") == "1000",
            "plain: LOG counts in=1000 out=1000",
            [line for _, _, line in seq])

    # ten more, in parallel: ten complete records
    xs = [ptest.Transfer(port, 5000 + i).start() for i in range(10)]
    for x in xs:
        x.wait(ptest.bound(20))
    t.check(all(x.ok() for x in xs), "plain: ten parallel connections echo",
            [x.describe() for x in xs if not x.ok()])
    recs = wait_recs(rec, lambda r: sum(1 for e, _, _ in r
                                        if e == "LOG") >= 11,
                     ptest.bound(5))
    logs = sorted(int(kv.get("in", -1)) for e, kv, _ in recs if e == "LOG")
    want = sorted([1000] + [5000 + i for i in range(10)])
    t.check(logs == want, "plain: eleven LOG lines with the right in= "
            "counts", "got %s" % logs)
    for ev in PHASES:
        n = sum(1 for e, _, _ in recs if e == ev)
        t.check(n == 11, "plain: eleven %s lines" % ev, "got %d" % n)

    # SIGUSR1: every worker and the master reopen
    p.usr1()
    recs = wait_recs(rec, lambda r: sum(1 for e, _, _ in r
                                        if e == "REOPEN") >= 3,
                     ptest.bound(5))
    reo = sorted(l for e, _, l in recs if e == "REOPEN")
    t.check(reo == ["REOPEN master", "REOPEN worker=0", "REOPEN worker=1"],
            "plain: SIGUSR1 reopens in the master and both workers",
            "got %s" % reo)

    # SIGHUP: the new generation runs INIT, the old one EXIT
    p.hup()
    recs = wait_recs(rec, lambda r: sum(1 for e, _, _ in r
                                        if e == "INIT") >= 4 and
                     sum(1 for e, _, _ in r if e == "EXIT") >= 2,
                     ptest.bound(10))
    t.check(sum(1 for e, _, _ in recs if e == "INIT") == 4 and
            sum(1 for e, _, _ in recs if e == "EXIT") == 2,
            "plain: after SIGHUP, two more INIT and two EXIT lines",
            [l for e, _, l in recs if e in ("INIT", "EXIT")])
    ok, why = ptest.echo_once(port)
    t.check(ok, "plain: the connection echoes after the reload", why)

    # SIGQUIT: graceful stop runs exit_worker
    p.quit()
    rc = p.wait_exit(ptest.bound(15))
    t.check(rc == 0, "plain: SIGQUIT exits 0", "exit %s" % rc)
    recs = records(rec)
    t.check(sum(1 for e, _, _ in recs if e == "EXIT") == 4,
            "plain: SIGQUIT: each worker of the last generation wrote EXIT",
            [l for e, _, l in recs if e in ("INIT", "EXIT")])
    t.stop_portico(p)


def again(t, echo):
    p, port, rec = start(t, echo, "again", 1, "again_ms = 200;")
    payload = os.urandom(500)
    t0 = time.monotonic()
    ok, why = ptest.echo_once(port, payload, timeout=ptest.bound(10))
    el = time.monotonic() - t0
    t.check(ok, "again_ms: the connection still echoes", why)
    t.diag("echo with again_ms = 200 took %.2f s" % el)
    recs = wait_recs(rec, lambda r: any(e == "LOG" for e, _, _ in r),
                     ptest.bound(5))
    conns = by_conn(recs)
    seq = list(conns.values())[0] if len(conns) == 1 else []
    t.check(events(seq) == ["ACCEPT", "ACCEPT-RESUMED"] + PHASES[1:],
            "again_ms: ACCEPT, ACCEPT-RESUMED, ACCESS, DIAL, ESTABLISHED, "
            "LOG", [l for _, _, l in recs])
    d = {ev: kv for ev, kv, _ in seq}
    t.check(d.get("LOG", {}).get("in") == "500" and
            d.get("LOG", {}).get("out") == "500",
            "again_ms: LOG counts in=500 out=500", [l for _, _, l in seq])

    # a client that leaves while ACCEPT waits: cleaned up, no harm
    n_before = len(by_conn(records(rec)))
    s = ptest.connect(port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    s.close()          # RST while the hook waits
    recs = wait_recs(rec, lambda r: len([c for c, seq in by_conn(r).items()
                                         if "LOG" in events(seq)])
                     > n_before, ptest.bound(5))
    conns = by_conn(recs)
    t.check(len([c for c, seq in conns.items() if "LOG" in events(seq)])
            == n_before + 1,
            "again_ms: a client gone during the wait still gets its LOG",
            [l for _, _, l in recs])
    time.sleep(0.5)     # past the timer that must have been stopped
    ok, why = ptest.echo_once(port, timeout=ptest.bound(10))
    t.check(ok and p.workers().get(0) is not None,
            "again_ms: the worker is fine afterwards", why)
    t.stop_portico(p)


def deny(t, echo, phase, extra, label):
    p, port, rec = start(t, echo, re.sub(r"\W+", "-", label), 1, extra)
    before = echo.accepted
    s = ptest.connect(port, timeout=ptest.bound(10))
    closed, got = False, b""
    try:
        s.sendall(b"hello\n")
        while len(got) < 100:
            d = s.recv(100)
            if not d:
                closed = True
                break
            got += d
    except ConnectionResetError:
        closed = True
    except OSError as e:
        t.diag("%s: client: %s" % (label, ptest.err_kind(e)))
    s.close()
    t.check(closed and got == b"",
            "%s: the client connection is closed with nothing echoed"
            % label, "closed=%s got=%r" % (closed, got))
    recs = wait_recs(rec, lambda r: any(e == "LOG" for e, _, _ in r),
                     ptest.bound(5))
    conns = by_conn(recs)
    seq = list(conns.values())[0] if len(conns) == 1 else []
    evs = events(seq)
    t.check("LOG" in evs and "DIAL" not in evs and "ESTABLISHED" not in evs,
            "%s: the hooks stop at %s, then LOG" % (label, phase),
            [l for _, _, l in recs])
    if phase == "ACCEPT":
        t.check(evs[:2] == ["ACCEPT", "ACCEPT-RESUMED"] and
                "ACCESS" not in evs,
                "%s: denied by the delayed resume, before ACCESS" % label,
                "got %s" % evs)
    else:
        t.check(evs == ["ACCEPT", "ACCESS", "LOG"],
                "%s: ACCEPT, ACCESS, LOG" % label, "got %s" % evs)
    time.sleep(0.2)
    t.check(echo.accepted == before,
            "%s: the echo server never saw a connection" % label,
            "accepted %d -> %d" % (before, echo.accepted))
    t.check(p.running() and p.workers().get(0) is not None,
            "%s: portico keeps running" % label)
    t.stop_portico(p)


def reloads(t, echo):
    """A reload gives the module its new configuration; a module's file
    cannot change without a restart."""
    p, port, rec = start(t, echo, "reload", 1)
    rec2 = t.path("reload2.rec")
    conf2 = t.conf("modules", WORKERS=1, LISTEN="127.0.0.1:%d" % port,
                   TO=echo.address, REC=rec2, EXTRA="")
    old = accepting_pids(p)
    p.set_conf(conf2)
    p.hup()
    t.check(bool(p.wait_log(r"reloaded ")), "reload: a new record file "
            "reloads", lambda: ptest.tail(p.log(), 10))
    ptest.wait_for(lambda: not (old & accepting_pids(p)), ptest.bound(5))
    ok, why = ptest.echo_once(port)
    t.check(ok, "reload: the connection echoes", why)
    recs = wait_recs(rec2, lambda r: any(e == "LOG" for e, _, _ in r),
                     ptest.bound(5))
    t.check([e for e, _, _ in recs] == ["INIT"] + PHASES,
            "reload: the new generation records to the new file",
            [l for _, _, l in recs])

    conf3 = t.conf("modules", WORKERS=1, LISTEN="127.0.0.1:%d" % port,
                   TO=echo.address, REC=rec2, EXTRA='deny_phase = "ACCESS";')
    old = accepting_pids(p)
    p.set_conf(conf3)
    p.hup()
    t.check(len(p.wait_log(r"reloaded ", count=2)) >= 2,
            "reload: deny_phase added", lambda: ptest.tail(p.log(), 10))
    # once no worker of the old generation still accepts (each renames
    # itself portico-drain after it stopped accepting, or has exited),
    # the new configuration is in force: no connection made after that
    # may pass under the old one
    ptest.wait_for(lambda: not (old & accepting_pids(p)), ptest.bound(5))
    before = echo.accepted
    res = [ptest.echo_once(port)[0] for _ in range(5)]
    t.check(not any(res) and echo.accepted == before,
            "reload: every connection made after 'reloaded' is denied",
            lambda: ["echoed: %s, echo server accepted %d -> %d" % (
                res, before, echo.accepted)] +
            open(rec2).read().splitlines()[-12:])

    # the same module from another file: refused until a restart
    other = t.path("hookrec-copy.so")
    with open(os.path.join(ptest.TESTMODDIR, "hookrec.so"), "rb") as f:
        data = f.read()
    with open(other, "wb") as f:
        f.write(data)
    conf4 = conf3.replace(os.path.join(ptest.TESTMODDIR, "hookrec.so"),
                          other)
    line = ptest.line_of(conf4, "hookrec-copy.so")
    p.set_conf(conf4)
    p.hup()
    lines = p.wait_log(r"reload failed: ")
    want = "reload failed: %s:%d:" % (p.conf_path, line)
    t.check(bool(lines) and want in lines[-1] and "restart" in lines[-1],
            "reload: another file for a loaded module is refused at its "
            "line, asking for a restart", lambda: ptest.tail(p.log(), 10))
    ok, _ = ptest.echo_once(port)
    t.check(not ok and p.running(),
            "reload: the running configuration (deny) stays")
    t.stop_portico(p)


def accepting_pids(p):
    """Every child still named portico-wN, of any generation: two
    generations share slot numbers, so p.workers() (by slot) can hide
    one of them."""
    return {pid for pid, c in p.all_children().items()
            if c.startswith("portico-w")}


def main(t):
    echo = t.echo_server()
    plain(t, echo)
    again(t, echo)
    deny(t, echo, "ACCESS", 'deny_phase = "ACCESS";', "deny ACCESS")
    deny(t, echo, "ACCEPT", 'again_ms = 100; deny_phase = "ACCEPT";',
         "deny ACCEPT after AGAIN")
    reloads(t, echo)


if __name__ == "__main__":
    ptest.Test("modules").run(main)
