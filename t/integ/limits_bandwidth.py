#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
bandwidth_down and bandwidth_up on a user, shared by the user's
connections across workers, through the real auth module (RFC 1929 on a
SOCKS5 listener) and two workers:

- three downloads by alice at once, on connections spread over both
  workers (the scenario opens connections until both workers hold one):
  over WINDOW seconds after a one-second start, their sum is within 1%
  of bandwidth_down = 2 MiB/s and each within 10% of a third (WINDOW is
  3 s, not the issue's 10 s, to keep CI short: the end effects are one
  grant of 16 KiB at each end of the window, 0.26%; under the sanitizers
  the bound is 2%);
- the same for three uploads (bytes counted where the origin receives
  them) under bandwidth_up;
- while the three downloads are held to the rate, both workers together
  use little CPU (utime + stime from /proc, under 10% of the window):
  a spent budget waits for a timer, nothing polls;
- a reload that changes bandwidth_down to 512 KiB/s slows a download
  that is already running (now on a draining worker of the old
  configuration) to the new rate, within 10%, within a second;
- delayed bytes are counted for the class (a status listener's
  limits_class_delayed_bytes{class="per-user"}) and in all.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import sockstest as S  # noqa: E402
import authtest as A  # noqa: E402
import limitstest as L  # noqa: E402

MiB = 1024 * 1024
RATE = 2 * MiB
SLOW = 512 * 1024
BURST = 16384
WINDOW = 3.0
WARM = 1.0
BLOCK = os.urandom(64 * 1024)

CONF = """
workers = 2;
error_log = "@TMP@/error.log";
pid_file = "@TMP@/portico.pid";
shutdown_timeout = 20;
listeners = (
  { name = "socks"; address = "127.0.0.1:@P@"; protocol = "socks5"; },
  { name = "stat"; address = "127.0.0.1:@S@"; protocol = "status"; }
);
modules = (
  { name = "auth"; path = "@AUTH@"; userlist = "@USERS@"; },
  { name = "limits"; path = "@SO@";
    classes = ( { name = "per-user"; match = { user = "*"; }; key = "user";
                  bandwidth_down = @DOWN@; bandwidth_down_burst = @BURST@;
                  bandwidth_up = @UP@; bandwidth_up_burst = @BURST@; } ); }
);
"""


class Source(ptest._Server):
    """Sends until the client leaves (60 s at most)."""

    def handle(self, c):
        end = time.monotonic() + 60
        try:
            while time.monotonic() < end and not self.stopping.is_set():
                c.sendall(BLOCK)
        except OSError:
            pass


class Sink(ptest._Server):
    """Meters what each connection sends, in order of arrival."""

    def __init__(self, *a, **kw):
        self.meters = []
        super().__init__(*a, **kw)

    def handle(self, c):
        m = L.Meter()
        with self.lock:
            self.meters.append(m)
        c.settimeout(60)
        while True:
            try:
                d = c.recv(262144)
            except OSError:
                return
            if not d:
                return
            m.feed(len(d))


def tunnel(port, origin_port):
    rep, c = S.connect5(port, "127.0.0.1", origin_port,
                        auth=("alice", "wonderland"),
                        timeout=ptest.bound(10))
    if not S.ok5(rep):
        c.close()
        raise RuntimeError("SOCKS5: %r" % (rep,))
    return c


def spread(t, p, port, origin_port, n=3):
    """<n> tunnels by alice, over both workers when it can be had."""
    pids = list(p.workers().values())
    got, spare = [], []
    for _ in range(16):
        c = tunnel(port, origin_port)
        got.append((c, ptest.owner_of(c.sock, port, pids)))
        if len(got) >= n and len({o for _, o in got[-n:]}) >= 2:
            break
    keep = got[-n:]
    spare = got[:-n]
    for c, _ in spare:
        c.close()
    t.diag("tunnels on workers: %s" % [o for _, o in keep])
    return [c for c, _ in keep], len({o for _, o in keep})


def download(c, meter, stop):
    c.sock.settimeout(5)
    if c.buf:
        meter.feed(len(c.buf))
    while not stop.is_set():
        try:
            d = c.sock.recv(262144)
        except socket.timeout:
            continue
        except OSError:
            return
        if not d:
            return
        meter.feed(len(d))


def upload(c, stop):
    c.sock.settimeout(5)
    while not stop.is_set():
        try:
            c.sock.sendall(BLOCK[:16384])
        except socket.timeout:
            continue
        except OSError:
            return


def window_rates(meters, t0):
    a, b = t0 + WARM, t0 + WARM + WINDOW
    return [(m.at(b) - m.at(a)) / WINDOW for m in meters]


def check_share(t, what, rates, rate, tol):
    total = sum(rates)
    t.diag("%s: %s B/s each, sum %.0f B/s (want %d: %+.2f%%)" % (
        what, ["%.0f" % r for r in rates], total, rate,
        100.0 * (total - rate) / rate))
    t.check(abs(total - rate) <= tol * rate,
            "%s: the sum of 3 connections' rates is within %g%% of %d B/s"
            % (what, tol * 100, rate),
            lambda: ["sum %.0f" % total])
    t.check(all(abs(r - rate / 3) <= 0.10 * rate / 3 for r in rates),
            "%s: each gets a third, within 10%%" % what,
            lambda: ["%r" % rates])


def main(t):
    ptest.exclusive(t)
    for why, need in ((L.missing(), None),
                      (A.missing() if not os.path.exists(A.AUTH_SO)
                       else None, "auth.so")):
        if why:
            t.skip("limits bandwidth scenarios", why, need=need)
            return
    try:
        users = A.write_users(t, [("alice", A.argon2id("wonderland"))])
    except (OSError, RuntimeError) as e:
        t.skip("limits bandwidth scenarios", "no argon2 program in PATH "
               "(%s)" % e, need="argon2cli")
        return
    tol = 0.02 if ptest.SANITIZERS else 0.01
    src = Source("127.0.0.1")
    sink = Sink("127.0.0.1")
    t.servers += [src, sink]
    port, sport = ptest.free_port(), ptest.free_port()

    def conf(down):
        return ptest.fill(CONF, TMP=t.tmp, P=port, S=sport, AUTH=A.AUTH_SO,
                          USERS=users, SO=L.LIMITS_SO, DOWN=down, UP=RATE,
                          BURST=BURST)

    p = t.portico(conf(RATE), workers=2)

    # Three downloads.
    conns, nworkers = spread(t, p, port, src.port)
    t.check(nworkers == 2, "the three downloads run on both workers",
            lambda: ["on %d worker(s)" % nworkers])
    meters = [L.Meter() for _ in conns]
    stop = threading.Event()
    ths = [threading.Thread(target=download, args=(c, m, stop), daemon=True)
           for c, m in zip(conns, meters)]
    pids = list(p.workers().values())
    t0 = time.monotonic()
    for th in ths:
        th.start()
    time.sleep(WARM)
    cpu0 = sum(ptest.cpu_seconds(x) or 0 for x in pids)
    time.sleep(WINDOW + 0.1)
    cpu1 = sum(ptest.cpu_seconds(x) or 0 for x in pids)
    stop.set()
    for th in ths:
        th.join(ptest.bound(10))
    for c in conns:
        c.close()
    check_share(t, "bandwidth_down", window_rates(meters, t0), RATE, tol)
    cpu = cpu1 - cpu0
    t.diag("workers' CPU time while held to the rate: %.3f s in %.1f s "
           "(%.1f%%)" % (cpu, WINDOW, 100 * cpu / WINDOW))
    t.check(cpu < 0.10 * WINDOW * (3 if ptest.SANITIZERS else 1),
            "the workers use little CPU while the downloads are held back",
            lambda: ["%.3f s of CPU" % cpu])

    # Three uploads.
    conns, nworkers = spread(t, p, port, sink.port)
    time.sleep(0.2)
    with sink.lock:
        meters = list(sink.meters[-3:])
    stop = threading.Event()
    ths = [threading.Thread(target=upload, args=(c, stop), daemon=True)
           for c in conns]
    t0 = time.monotonic()
    for th in ths:
        th.start()
    time.sleep(WARM + WINDOW + 0.1)
    stop.set()
    for c in conns:
        try:
            c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    for th in ths:
        th.join(ptest.bound(10))
    for c in conns:
        c.close()
    check_share(t, "bandwidth_up", window_rates(meters, t0), RATE, tol)

    # A reload slows a running download.
    c = tunnel(port, src.port)
    m = L.Meter()
    stop = threading.Event()
    th = threading.Thread(target=download, args=(c, m, stop), daemon=True)
    th.start()
    time.sleep(1.0)
    p.set_conf(conf(SLOW))
    p.hup()
    t1 = time.monotonic()
    ok = p.wait_log(r"reloaded .*generation", 1, timeout=ptest.bound(10))
    a = t1 + 1.0
    time.sleep(max(0.0, a + 1.5 - time.monotonic()) + 0.05)
    r = (m.at(a + 1.5) - m.at(a)) / 1.5
    stop.set()
    th.join(ptest.bound(10))
    c.close()
    t.diag("after the reload: %.0f B/s (want %d)" % (r, SLOW))
    t.check(bool(ok) and abs(r - SLOW) <= 0.10 * SLOW,
            "a reload to bandwidth_down = %d slows a running download to "
            "it within a second (within 10%%)" % SLOW,
            lambda: ["%.0f B/s" % r] + ptest.tail(p.log(), 10))
    per = L.class_counters(sport, "delayed_bytes") or {}
    t.stop_portico(p)
    tot = L.totals(p)
    t.check(per.get("per-user", 0) > 0 and
            tot.get("limits_delayed_bytes", 0) >= per.get("per-user", 0),
            "delayed bytes are counted for the class (/metrics, "
            "class=\"per-user\") and in all (the totals line)",
            lambda: ["%r %s" % (per, tot)])


if __name__ == "__main__":
    ptest.Test("limits_bandwidth").run(main)
