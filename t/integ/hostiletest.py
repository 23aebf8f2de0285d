# SPDX-License-Identifier: BSD-2-Clause
"""
hostiletest: what the t/integ/hostile_*.py scenarios share, on top of
ptest, httptest and sockstest.

Each hostile scenario runs one attack at a time against one portico worker
while a canary keeps asking for service, and judges the attack by what it
did to the worker and to the canary:

- Canary: a separate process (this file run as a script, so the test's own
  threads and their GIL cannot delay it) that makes a 1 KiB GET through
  the HTTP proxy every 2 x PAUSE seconds on a fresh connection, and, when
  given a SOCKS port, alternates with a SOCKS5 CONNECT to an echo server
  and a 1 KiB echo; between two of them, the control: the same GET
  straight to the origin (which lives in the test process, as the echo
  server does), so that a machine too busy to serve anyone is told from
  a portico that is slow. Every attempt is one line in a file: start time
  (CLOCK_MONOTONIC, the same clock as time.monotonic() here), kind,
  seconds taken, ok, why. stats(t0, t1) reads the attempts started in a
  window.
- Watch: one attack's window. At start it takes the worker pids, their CPU
  time (utime + stime from /proc/PID/stat), their PSS and descriptor
  counts; a thread samples PSS every 0.1 s for the peak. end() closes the
  window; judge() makes the checks every attack shares:
    * the same worker pids alive (no crash, no respawn);
    * CPU share of each worker over the window below cpu_max (a spinning
      worker shows ~100%);
    * peak PSS growth below mem_kib (stated per attack);
    * canary: no failed attempt, p99 below p99_bound(base): bound(200 ms
      to 1 s: 20 x the canary's p95 over a quiet window before any
      attack; p95, not p99, so that one hiccup of a shared machine in
      the baseline does not loosen every check) unless the attack gives
      its own bound, or below bound(CONTROL_FACTOR x the control's p99
      in the same window) when that is larger;
  recover() then checks that a fresh client is served and that the
  worker's sockets fall back to the count before the attack (a few more
  allowed for upstream connections kept alive for reuse; idle pipes kept
  for reuse are not connections and are not counted).
- EvilOrigin: an origin that misbehaves on purpose (sends forever, aborts
  or resets in the middle of a body, reads an upload and reports how it
  ended).

exclusive() keeps two hostile scenarios from running at once (make -j):
each would measure the other's attack through its canary.

Memory is PSS from /proc/PID/smaps_rollup (VmRSS where the kernel has
none). Under the sanitizers (ptest.SANITIZERS) the memory bounds are
multiplied by SAN_MEM (AddressSanitizer's quarantine keeps freed blocks)
and windows are shorter (see window()).
"""

import hashlib
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

KiB = 1024
PAUSE = 0.01            # between canary attempts
P99_FLOOR = 0.2         # seconds: the canary p99 bound's floor
P99_CEIL = 1.0          # and its ceiling, whatever the baseline was
P99_FACTOR = 20         # times the canary's p95 before any attack
CONTROL_FACTOR = 5      # times the control's p99 in the same window
SAN_MEM = 3             # memory bounds under the sanitizers
FD_SLACK = 4            # sockets above the baseline after recovery:
                        # the canary's in flight, one kept to its origin


def exclusive(t):
    """ptest.exclusive: two hostile scenarios under `make -j` would pin
    their workers to the same CPU and each canary would measure the
    other's attack (and bench_quick's load would bend every canary)."""
    return ptest.exclusive(t)


def window(plain, sanitizers=None):
    """Seconds an attack lasts: shorter under the sanitizers, where the
    same work takes ~3 times as long (half of plain unless told)."""
    if ptest.SANITIZERS:
        return sanitizers if sanitizers is not None else plain / 2.0
    return plain


def mem(kib):
    """A memory bound in KiB, wider under the sanitizers."""
    return kib * (SAN_MEM if ptest.SANITIZERS else 1)


def fd_kinds(pid):
    """(sockets, pipes, others) open in <pid>, or (None, None, None)."""
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return None, None, None
    n = [0, 0, 0]
    for fd in fds:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        n[0 if link.startswith("socket:") else
          1 if link.startswith("pipe:") else 2] += 1
    return tuple(n)


def sockets(pid):
    """Sockets open in <pid> (listeners, connections both sides)."""
    return fd_kinds(pid)[0]


def client_conns(pid, ports):
    """Accepted connections <pid> holds on listener <ports> (TCP sockets
    whose local port is one of them, listening ones left out)."""
    mine = ptest.socket_inodes(pid)
    return sum(1 for lp, _, st, ino, _ in ptest._proc_net_tcp()
               if lp in ports and st != "0A" and ino in mine)


def upstreams(pid, port):
    """Connections <pid> holds to remote <port> (an origin or target)."""
    mine = ptest.socket_inodes(pid)
    return sum(1 for _, rp, st, ino, _ in ptest._proc_net_tcp()
               if rp == port and st != "0A" and ino in mine)


def pct(vals, q):
    """The q-quantile (0..1) of <vals> by nearest rank; None if empty."""
    if not vals:
        return None
    v = sorted(vals)
    i = max(0, min(len(v) - 1, int(-(-q * len(v) // 1)) - 1))
    return v[i]


def ms(x):
    return "-" if x is None else "%.1f ms" % (x * 1000.0)


# ---------------------------------------------------------------------------
# the canary

class Canary:
    """The canary process (see the module comment). stop() ends it by
    PID; Test's cleanup does too."""

    def __init__(self, t, http_port, origin_port, socks_port=None,
                 echo_port=None):
        self.t = t
        self.path = t.path("canary-%d.log" % http_port)
        args = [sys.executable, os.path.abspath(__file__), "canary",
                self.path, str(http_port), str(origin_port),
                str(socks_port or 0), str(echo_port or 0),
                "%g" % ptest.bound(10)]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=open(self.path + ".err", "w"))
        t.at_exit(self.stop)
        ok = ptest.wait_for(lambda: len(self.records()) >= 4,
                            ptest.bound(10))
        if not ok:
            raise RuntimeError("the canary did not start: %s" % (
                open(self.path + ".err").read()[-2000:],))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def records(self):
        out = []
        try:
            with open(self.path) as f:
                lines = f.read().splitlines()
        except OSError:
            return out
        for ln in lines:
            p = ln.split(" ", 4)
            if len(p) < 4:
                continue
            try:
                out.append((float(p[0]), p[1], float(p[2]), p[3] == "1",
                            p[4] if len(p) > 4 else ""))
            except ValueError:
                continue
        return out

    def stats(self, t0, t1, kind=None):
        """{n, bad, why, p50, p99, max} of attempts started in [t0, t1):
        those through portico (kind None), or one kind ("direct": the
        control)."""
        rs = [r for r in self.records() if t0 <= r[0] < t1 and
              (r[1] != "direct" if kind is None else r[1] == kind)]
        lat = [r[2] for r in rs]
        bad = [(r[1], round(r[2], 3), r[4]) for r in rs if not r[3]]
        return dict(n=len(rs), bad=bad, p50=pct(lat, 0.5),
                    p95=pct(lat, 0.95), p99=pct(lat, 0.99),
                    max=max(lat) if lat else None,
                    kinds=sorted(set(r[1] for r in rs)))

    def through(self, t0, t1):
        """The attempts through portico started in [t0, t1)."""
        return [r for r in self.records() if t0 <= r[0] < t1 and
                r[1] != "direct"]

    def wait_after(self, t, n=3, timeout=None):
        """Until <n> attempts through portico started after <t> finished
        (bounded)."""
        return ptest.wait_for(
            lambda: len(self.through(t, float("inf"))) >= n,
            timeout or ptest.bound(15), interval=0.05)


def _canary_http(port, origin_port, timeout):
    url = "http://127.0.0.1:%d/len?n=1024" % origin_port
    r = H.get(port, url, timeout=timeout)
    if not isinstance(r, H.Resp):
        return False, str(r)[:80].replace("\n", " ")
    if r.status != 200 or r.body_len != 1024:
        return False, "status %d, %d bytes" % (r.status, r.body_len)
    return True, ""


def _canary_socks(port, echo_port, timeout):
    import sockstest as S
    payload = os.urandom(1024)
    try:
        r, c = S.connect5(port, "127.0.0.1", echo_port, timeout=timeout)
    except Exception as e:
        return False, "connect: %s" % ptest.err_kind(e)
    try:
        if not S.ok5(r):
            return False, "reply %r" % (r,)
        ok, why = S.echo_check(c, payload)
        return ok, (why or "")[:80]
    finally:
        c.close()


def canary_main(argv):
    """The canary process: runs until killed (or 10 minutes)."""
    path, port, oport, sport, eport, timeout = argv
    port, oport, sport, eport = int(port), int(oport), int(sport), int(eport)
    timeout = float(timeout)
    f = open(path, "a", buffering=1)
    end = time.monotonic() + 600
    parent = os.getppid()
    n = 0
    while time.monotonic() < end and os.getppid() == parent:
        # every other attempt is the control: the same GET straight to
        # the origin, which shares everything with the canary but portico
        kind = "direct" if n % 2 else \
            "socks" if sport and n % 4 == 2 else "http"
        n += 1
        t0 = time.monotonic()
        try:
            if kind == "http":
                ok, why = _canary_http(port, oport, timeout)
            elif kind == "direct":
                ok, why = _canary_http(oport, oport, timeout)
            else:
                ok, why = _canary_socks(sport, eport, timeout)
        except Exception as e:
            ok, why = False, "%s: %s" % (type(e).__name__, e)
        dt = time.monotonic() - t0
        f.write("%.6f %s %.6f %d %s\n" % (t0, kind, dt, 1 if ok else 0,
                                          why.replace("\n", " ")))
        time.sleep(PAUSE)


# ---------------------------------------------------------------------------
# one attack's window

class Watch:
    """One attack's window over portico <p>'s workers. <canary>: a Canary;
    <base_p99>: the canary's p95 before any attack (seconds), from
    baseline()."""

    def __init__(self, t, p, canary, base_p99, label):
        self.t, self.p, self.canary = t, p, canary
        self.ports = set(p.listener_ports())
        self.base_p99 = base_p99
        self.label = label
        self.workers = p.workers()
        self.pids = sorted(self.workers.values())
        self.fds0 = {pid: sockets(pid) for pid in self.pids}
        self.conns0 = {pid: client_conns(pid, self.ports)
                       for pid in self.pids}
        self.pss0 = {pid: ptest.pss_kib(pid) for pid in self.pids}
        self.peak = dict(self.pss0)
        self.cpu0 = {pid: ptest.cpu_seconds(pid) for pid in self.pids}
        self.t0 = time.monotonic()
        self.t1 = None
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._sample, daemon=True)
        self._th.start()
        t.at_exit(self._stop.set)

    def _sample(self):
        while not self._stop.wait(0.1):
            for pid in self.pids:
                v = ptest.pss_kib(pid)
                if v is not None and (self.peak[pid] is None or
                                      v > self.peak[pid]):
                    self.peak[pid] = v

    def end(self):
        """Closes the window (CPU and the canary's attempts up to now)."""
        self.t1 = time.monotonic()
        self.cpu1 = {pid: ptest.cpu_seconds(pid) for pid in self.pids}
        self.wall = self.t1 - self.t0
        return self

    def stop_sampling(self):
        self._stop.set()
        self._th.join(1)

    def cpu_share(self, pid):
        a, b = self.cpu0.get(pid), self.cpu1.get(pid)
        if a is None or b is None or self.wall <= 0:
            return None
        return (b - a) / self.wall

    def grew(self, pid):
        a, b = self.pss0.get(pid), self.peak.get(pid)
        if a is None or b is None:
            return None
        return b - a

    def judge(self, cpu_max, mem_kib, p99_max=None, canary_fail_ok=False):
        """The shared checks (see the module comment). Returns the canary
        stats of the window."""
        t, lab = self.t, self.label
        if self.t1 is None:
            self.end()
        self.stop_sampling()
        now = self.p.workers()
        t.check(now == self.workers and all(ptest.alive(x)
                                            for x in self.pids),
                "%s: the same worker pids alive (no crash, no respawn)"
                % lab, lambda: ["before %s, now %s" % (self.workers, now)] +
                ptest.tail(self.p.log(), 20))
        for pid in self.pids:
            share = self.cpu_share(pid)
            t.diag("%s: worker %d CPU %.0f%% of %.1f s, PSS %s -> peak %s "
                   "KiB (%+d), sockets %s -> %s (pipes %s)" % (
                       lab, pid, 100.0 * (share or 0), self.wall,
                       self.pss0[pid], self.peak[pid], self.grew(pid) or 0,
                       self.fds0[pid], sockets(pid), fd_kinds(pid)[1]))
            t.check(share is not None and share < cpu_max,
                    "%s: the worker does not spin (CPU < %.0f%% of the "
                    "%.1f s window)" % (lab, 100 * cpu_max, self.wall),
                    "CPU share %s" % share)
            g = self.grew(pid)
            t.check(g is not None and g < mem_kib,
                    "%s: worker memory bounded (PSS growth < %d KiB)"
                    % (lab, mem_kib), "grew %s KiB (from %s to %s)" % (
                        g, self.pss0[pid], self.peak[pid]))
        self.canary.wait_after(self.t1, 2)
        st = self.canary.stats(self.t0, self.t1)
        ctl = self.canary.stats(self.t0, self.t1, "direct")
        if p99_max is None:
            p99_max = p99_bound(self.base_p99)
        # A machine too busy to run the control promptly cannot run the
        # canary promptly either: the bound grows with the control's p99
        # (a stall of portico's alone leaves the control quick).
        if ctl["p99"] is not None:
            p99_max = max(p99_max, ptest.bound(CONTROL_FACTOR * ctl["p99"]))
        t.diag("%s: canary %d attempts (%s), p50 %s, p99 %s, max %s; "
               "control p50 %s, p99 %s; bound p99 < %s" % (
                   lab, st["n"], "+".join(st["kinds"]), ms(st["p50"]),
                   ms(st["p99"]), ms(st["max"]), ms(ctl["p50"]),
                   ms(ctl["p99"]), ms(p99_max)))
        if not canary_fail_ok:
            t.check(st["n"] > 0 and not st["bad"],
                    "%s: the canary kept being served (%d attempts, none "
                    "failed)" % (lab, st["n"]), lambda: st["bad"][:10])
        t.check(st["p99"] is not None and st["p99"] < p99_max,
                "%s: canary p99 %s < %s" % (lab, ms(st["p99"]),
                                            ms(p99_max)),
                lambda: ["p50 %s max %s" % (ms(st["p50"]), ms(st["max"]))]
                + ptest.tail(self.p.log(), 10))
        return st

    def recover(self, get_ok, slack=FD_SLACK, extra=None, timeout=None):
        """A fresh client is served (get_ok() -> (ok, why)) and the
        worker's sockets fall back to the count before the attack (+slack:
        upstream connections kept alive for reuse, the canary's own). Pipes
        are not counted: a worker keeps up to 64 idle ones for reuse.
        <extra>: a callable -> (ok, why) that must also hold (e.g. an
        origin's connections all closed), waited for together."""
        t, lab = self.t, self.label
        timeout = timeout or ptest.bound(15)

        def conns_back():
            return all(client_conns(pid, self.ports) <=
                       self.conns0[pid] + 2 for pid in self.pids)
        back = ptest.wait_for(conns_back, timeout, interval=0.1)
        t.check(back, "%s: afterwards the worker's client connections are "
                "back to the count before the attack (<= %s + 2, the "
                "canary's)" % (lab, "/".join(str(self.conns0[p])
                                             for p in self.pids)),
                lambda: ["now %s" % {p: client_conns(p, self.ports)
                                     for p in self.pids}] +
                ptest.tail(self.p.log(), 10))

        def fds_back():
            return all((sockets(pid) or 1 << 30) <=
                       (self.fds0[pid] or 0) + slack for pid in self.pids)
        back = ptest.wait_for(fds_back, timeout, interval=0.1)
        t.check(back, "%s: afterwards the worker's sockets, upstream ones "
                "included, are back to the count before the attack (<= %s "
                "+ %d)" % (
                    lab, "/".join(str(self.fds0[p]) for p in self.pids),
                    slack),
                lambda: ["now %s" % {p: fd_kinds(p) for p in self.pids}] +
                ptest.tail(self.p.log(), 10))
        if extra is not None:
            res = ptest.wait_for(lambda: extra()[0], timeout, interval=0.1)
            t.check(res, "%s: afterwards %s" % (lab, extra.__doc__ or
                                                "the attack's state is gone"),
                    lambda: extra()[1])
        ok, why = get_ok()
        t.check(ok, "%s: afterwards a fresh client is served" % lab, why)


def p99_bound(base):
    """The canary's p99 bound during an attack, from its quiet p95."""
    return ptest.bound(min(P99_CEIL, max(P99_FLOOR, P99_FACTOR * base)))


def baseline(t, canary, seconds=None):
    """The canary's p95 (seconds) over a quiet window before any attack."""
    seconds = seconds or window(1.5, 1.5)
    t0 = time.monotonic()
    time.sleep(seconds)
    t1 = time.monotonic()
    canary.wait_after(t1, 1)
    st = canary.stats(t0, t1)
    ctl = canary.stats(t0, t1, "direct")
    t.diag("baseline: canary %d attempts, p50 %s, p95 %s, p99 %s, max %s; "
           "control p50 %s, p99 %s; attacks' p99 bound %s (or %d x the "
           "control's p99 then)" % (
               st["n"], ms(st["p50"]), ms(st["p95"]), ms(st["p99"]),
               ms(st["max"]), ms(ctl["p50"]), ms(ctl["p99"]),
               ms(p99_bound(st["p95"] or 0.001)), CONTROL_FACTOR))
    t.check(st["n"] >= 5 and not st["bad"], "before any attack the canary "
            "is served (%d attempts)" % st["n"], lambda: st["bad"][:10])
    return st["p95"] or 0.001


def fresh_get(port, origin):
    def f():
        r = H.get(port, origin.url + "/len?n=1024", timeout=ptest.bound(10))
        ok = isinstance(r, H.Resp) and r.status == 200 and r.body_len == 1024
        return ok, H.describe(r)
    return f


def held_back(legs=2):
    """Bytes a stream may take in beyond portico's own buffers: the
    kernel's socket buffers on its way, a receive and a send buffer per
    leg at their maxima (net.ipv4.tcp_rmem, tcp_wmem), plus 16 MiB for
    portico's buffers and pipes; 32 MiB at least."""
    most = 0
    for name in ("tcp_rmem", "tcp_wmem"):
        try:
            with open("/proc/sys/net/ipv4/" + name) as f:
                most += legs * int(f.read().split()[2])
        except (OSError, ValueError, IndexError):
            most += legs * (8 << 20)
    return max(32 << 20, most + (16 << 20))


def linger0(s):
    """SO_LINGER {on, 0}: close() sends RST."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
    except OSError:
        pass


def fill(sock, block, tries=200):
    """Sends <block> on <sock> until 10 sends in a row time out (20 ms
    each): every buffer on the way is full. Bounded by <tries> sends.
    Returns the bytes sent."""
    sock.settimeout(0.02)
    n = blocked = 0
    for _ in range(tries):
        if blocked >= 10:
            break
        try:
            n += sock.send(block)
            blocked = 0
        except socket.timeout:
            blocked += 1
        except OSError:
            break
    return n


def hold_connections(t, port, n, payload=b""):
    """<n> blocking connections to <port> (fewer if the kernel refuses
    some), each having written <payload>."""
    socks = []
    t.at_exit(lambda: [s.close() for s in socks])
    for _ in range(n):
        try:
            s = ptest.connect(port, timeout=ptest.bound(5))
        except OSError:
            break
        socks.append(s)
        if payload:
            try:
                s.sendall(payload)
            except OSError:
                pass
    return socks


def slowloris(t, e, label, count, head, trickle, kib_per_conn,
              header_timeout, fresh):
    """<count> connections to e.port that each send <head>, then one byte
    of <trickle> a second for the attack's window: judged like every
    attack (CPU under half, memory under <kib_per_conn> each), then every
    one must have been closed by header_timeout, and <fresh> served."""
    w = Watch(t, e.p, e.canary, e.base, label)
    socks = hold_connections(t, e.port, count, head)
    opened = time.monotonic()
    t.diag("%s: %d connections opened in %.2f s" % (
        label, len(socks), opened - w.t0))
    end = w.t0 + window(3.0, 2.5)
    i = 0
    while time.monotonic() < end and i < 10:
        for s in socks:
            try:
                s.send(trickle[i:i + 1])
            except OSError:
                pass
        i += 1
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))
    w.end()
    w.judge(cpu_max=0.5, mem_kib=mem(count * kib_per_conn))
    # header_timeout bounds a head however slowly it comes
    left = header_timeout - (time.monotonic() - opened)
    closed = closed_by_peer(socks, max(0.5, left) + ptest.bound(3))
    t.check(closed == len(socks) and len(socks) >= count * 9 // 10,
            "%s: header_timeout (%d s) closed all %d trickling "
            "connections" % (label, header_timeout, len(socks)),
            "%d of %d closed" % (closed, len(socks)))
    for s in socks:
        s.close()
    w.recover(fresh)


def closed_by_peer(socks, timeout):
    """How many of <socks> the peer closed (EOF or reset) within
    <timeout>, waiting with poll (any number of descriptors)."""
    import select
    left = {s.fileno(): s for s in socks}
    done = 0
    po = select.poll()
    for fd in left:
        po.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        for fd, _ in po.poll(100):
            s = left.pop(fd, None)
            if s is None:
                continue
            po.unregister(fd)
            try:
                s.setblocking(False)
                d = s.recv(4096)
                while d:
                    d = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                left[fd] = s        # data, not the end: watch again
                po.register(fd, select.POLLIN | select.POLLERR |
                            select.POLLHUP)
                continue
            except OSError:
                pass
            done += 1
    return done


def max_fds(want):
    """How many descriptors this process may hold: raises the soft
    RLIMIT_NOFILE towards <want> and returns the soft limit."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (OSError, ValueError):
            pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---------------------------------------------------------------------------
# an origin that misbehaves

class EvilOrigin(ptest._Server):
    """Routes (path, query):
    /forever          200, close-delimited, sends without end (bounded by
                      60 s and 4 GiB) until the connection fails
    /chunkforever     the same, chunked
    /abort?n=N&rst=R  Content-Length 2N, N bytes, then FIN (R=0) or RST
    /chunkabort?n=N&rst=R   chunked, N bytes in 16 KiB chunks, then the
                      same, no last chunk
    /sink             (a body with Content-Length) reads it; 200 when whole
    /slow?s=S         answers 1 KiB after S seconds
    /noread?s=S       reads the head, then nothing for S seconds (a
                      request body piles up), then closes
    ends: (path, how it ended, bytes moved) per request."""

    def __init__(self, host="127.0.0.1"):
        self.ends = []
        self.block = os.urandom(64 * KiB)
        super().__init__(host)

    @property
    def url(self):
        return "http://%s" % ptest.hostport(self.host, self.port)

    def record(self, path, how, n):
        with self.lock:
            self.ends.append((path, how, n))

    def ended(self, path):
        with self.lock:
            return [e for e in self.ends if e[0] == path]

    def handle(self, c):
        conn = H.Conn(c, 120)
        try:
            head = conn.read_head()
        except (H.Closed, H.BadInput, OSError):
            return
        if not head:
            return
        method, target, _, headers = H._parse_request_head(head)
        u = urllib.parse.urlsplit(target)
        q = dict(urllib.parse.parse_qsl(u.query))
        path = u.path
        n = int(q.get("n", "0"))
        rst = q.get("rst") == "1"
        if path in ("/forever", "/chunkforever"):
            chunked = path == "/chunkforever"
            c.sendall(b"HTTP/1.1 200 OK\r\n" +
                      (b"Transfer-Encoding: chunked\r\n" if chunked else b"")
                      + b"Connection: close\r\n\r\n")
            sent, end = 0, time.monotonic() + 60
            piece = (b"%x\r\n" % len(self.block) + self.block + b"\r\n") \
                if chunked else self.block
            how = "cap"
            try:
                while time.monotonic() < end and sent < 4 << 30:
                    c.sendall(piece)
                    sent += len(piece)
                    if self.stopping.is_set():
                        how = "stopped"
                        break
            except OSError as e:
                how = ptest.err_kind(e)
            self.record(path, how, sent)
            return
        if path in ("/abort", "/chunkabort"):
            data = (self.block * (n // len(self.block) + 1))[:n]
            if path == "/abort":
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                          % (2 * n) + data)
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"
                          b"\r\n\r\n")
                for off in range(0, n, 16 * KiB):
                    p = data[off:off + 16 * KiB]
                    c.sendall(b"%x\r\n" % len(p) + p + b"\r\n")
            time.sleep(0.05)
            if rst:
                linger0(c)
            self.record(path, "rst" if rst else "fin", n)
            return
        if path == "/sink":
            want = int(H.field(headers, "content-length") or "0")
            got = len(conn.buf)
            conn.buf = bytearray()
            how = "complete"
            try:
                while got < want:
                    d = c.recv(min(65536, want - got))
                    if not d:
                        how = "eof"
                        break
                    got += len(d)
            except OSError as e:
                how = ptest.err_kind(e)
            self.record(path, how, got)
            if how == "complete":
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                          b"Connection: close\r\n\r\nok")
            return
        if path == "/noread":
            end = time.monotonic() + float(q.get("s", "10"))
            while time.monotonic() < end and not self.stopping.is_set():
                time.sleep(0.05)
            self.record(path, "closed", 0)
            return
        if path == "/slow":
            time.sleep(float(q.get("s", "0.2")))
            try:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n"
                          b"Connection: close\r\n\r\n" + self.block[:1024])
                self.record(path, "sent", 1024)
            except OSError as e:
                self.record(path, ptest.err_kind(e), 0)
            return
        c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                  b"Connection: close\r\n\r\n")


def evil_origin(t, host="127.0.0.1"):
    o = EvilOrigin(host)
    t.servers.append(o)
    return o


class EndlessSource(ptest._Server):
    """Sends on every connection until it fails (bounded: 60 s, 4 GiB)."""

    def handle(self, c):
        block = os.urandom(64 * KiB)
        end, sent = time.monotonic() + 60, 0
        while time.monotonic() < end and sent < 4 << 30 and \
                not self.stopping.is_set():
            c.sendall(block)
            sent += len(block)


class DeafServer(ptest._Server):
    """Accepts and reads nothing; a connection ends when its peer closes
    (seen without reading: POLLRDHUP) or the server stops (bounded:
    120 s)."""

    def handle(self, c):
        import select
        po = select.poll()
        po.register(c.fileno(), select.POLLRDHUP | select.POLLHUP |
                    select.POLLERR)
        end = time.monotonic() + 120
        while time.monotonic() < end and not self.stopping.is_set():
            if po.poll(100):
                return


def noise(n, seed):
    """<n> pseudo-random bytes, the same on every run."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(seed + b"%d" % i).digest()
        i += 1
    return bytes(out[:n])


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "canary":
        canary_main(sys.argv[2:])
    else:
        sys.stderr.write("usage: hostiletest.py canary LOG HTTP_PORT "
                         "ORIGIN_PORT SOCKS_PORT ECHO_PORT TIMEOUT\n")
        sys.exit(2)
