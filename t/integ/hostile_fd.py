#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Descriptor exhaustion under load. One HTTP worker runs with RLIMIT_NOFILE
= 64 (set in the child before exec), so it lowers max_connections to 24,
and relays bodies with splice, whose pipes need descriptors too. A canary
(t/integ/hostiletest.py) keeps making 1 KiB GETs on fresh connections.

- churn: 6 clients each open 20 connections at once, send a GET for a
  16 KiB body (spliced) on each with Connection: close, read the answers
  and start again, for 3 s: up to 120 connections want the worker's 24
  places at once. Every hostile request and every canary request is
  served (none refused, reset or answered with an error); the worker is
  full meanwhile (its descriptors reach twice its 24 places); its CPU
  time per request served stays under 2 ms (a spinning worker burns the
  window whatever it serves), its PSS grows by less than 4 MiB, and the
  canary's p99 stays under bound(1 s) (it queues behind the load: the
  bound is the queue's, not an idle worker's).
- held: 100 connections that sent half a head are held, four times the
  worker's places, for 2 s. The worker, full, does not spin (CPU under
  20% of the window); canary requests made meanwhile wait in the queue
  (none refused or reset) and are all served within bound(3) s of the
  hold's end, when the held connections close.
- UDP: 20 SOCKS5 UDP associations are asked for (some of the 24 places
  left to the canary); those that cannot have a relay socket for want of
  descriptors (the churn's upstream connections kept for reuse hold some)
  are refused with 0x01, none hangs. Each sends datagrams to an IPv4 and
  an IPv6 echo server: with a socket per address family each they need
  more descriptors than the limit holds. The worker relays what it can,
  does not spin (CPU under 20% of the second after); the canary waits in
  the queue meanwhile, served within bound(3) s of their close; every
  relay port is released and a fresh association relays.
After each: the same worker pid, and a fresh client is served, the
client connections and sockets back to where they were.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import hostiletest as X  # noqa: E402

NOFILE = 64
FIT = 24                # (64 - 64 / 4) / 2: worker_max_connections()
BODY = 65536           # spliced: Content-Length of 8 KiB or more


class Env:
    pass


def burst(port, url, n, timeout):
    """<n> connections at once, a GET with Connection: close on each;
    returns (served, failures as a list of why)."""
    req = b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % \
        url.encode()
    socks, fails = [], []
    for _ in range(n):
        try:
            s = ptest.connect(port, timeout=timeout)
            s.sendall(req)
            socks.append(s)
        except OSError as e:
            fails.append("connect/send: " + ptest.err_kind(e))
    served = 0
    for s in socks:
        try:
            c = H.Conn(s, timeout)
            r = H.read_response(c)
            if r.status == 200 and r.body_len == BODY:
                served += 1
            else:
                fails.append("status %d, %d bytes" % (r.status, r.body_len))
        except Exception as e:
            fails.append("read: %s" % ptest.err_kind(e))
        finally:
            s.close()
    return served, fails


def churn(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "churn at the descriptor limit")
    wpid = w.pids[0]
    dur = X.window(3.0, 2.0)
    url = e.o.url + "/len?n=%d" % BODY
    lock = threading.Lock()
    tot = dict(served=0, fails=[], bursts=0)
    peak = [0]
    stop = threading.Event()

    def load():
        end = time.monotonic() + dur
        k = 0
        while time.monotonic() < end and k < 200:
            s, f = burst(e.port, url, 20, ptest.bound(15))
            k += 1
            with lock:
                tot["served"] += s
                tot["fails"] += f
                tot["bursts"] += 1

    pipes = [0]

    def fds():
        while not stop.wait(0.02):
            peak[0] = max(peak[0], ptest.fd_count(wpid) or 0)
            pipes[0] = max(pipes[0], X.fd_kinds(wpid)[1] or 0)
    fth = threading.Thread(target=fds, daemon=True)
    fth.start()
    ths = [threading.Thread(target=load, daemon=True) for _ in range(6)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(dur + ptest.bound(30))
    stop.set()
    fth.join(1)
    w.end()
    cpu = w.cpu1[wpid] - w.cpu0[wpid]
    n = tot["served"]
    t.diag("churn: %d bursts, %d served, %d failed in %.1f s; worker fds "
           "peak %d (limit %d, pipe ends %d), CPU %.2f s = %.2f ms a "
           "request" % (tot["bursts"], n, len(tot["fails"]), w.wall,
                        peak[0], NOFILE, pipes[0], cpu,
                        1000.0 * cpu / max(1, n)))
    t.check(n > 0 and not tot["fails"],
            "churn: every one of %d hostile requests was served" % n,
            lambda: sorted(set(tot["fails"]))[:10])
    t.check(peak[0] >= 2 * FIT, "churn: the worker was full (descriptors "
            "reached %d, twice its %d places)" % (2 * FIT, FIT),
            "peak %d" % peak[0])
    per = ptest.bound(0.002)
    t.check(n > 0 and cpu / n < per, "churn: the worker does not spin "
            "(CPU time per request served < %.0f ms)" % (1000 * per),
            "%.2f s for %d requests" % (cpu, n))
    w.judge(cpu_max=1.01, mem_kib=X.mem(4096),
            p99_max=ptest.bound(1.0))
    # The upstream keep-alive pool keeps up to upstream_keepalive (64) idle
    # origin connections, one socket each: the churn's are still there.
    w.recover(X.fresh_get(e.port, e.o), slack=64 + X.FD_SLACK)


def held(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "held at the descriptor limit")
    wpid = w.pids[0]
    head = b"GET %s/len?n=10 HTTP/1.1\r\nHo" % e.o.url.encode()
    socks = X.hold_connections(t, e.port, 4 * FIT + 4, head)
    # full: <FIT> client connections, the canary's in-flight one among them
    full = ptest.wait_for(lambda: (X.sockets(wpid) or 0) >= w.fds0[wpid] +
                          FIT - 2 or None, ptest.bound(5))
    t0 = time.monotonic()
    c0 = ptest.cpu_seconds(wpid)
    hold = X.window(2.0, 2.0)
    time.sleep(hold)
    used = ptest.cpu_seconds(wpid) - c0
    el = time.monotonic() - t0
    t.diag("held: %d connections, worker descriptors %s (sockets, pipes, "
           "others); CPU %.2f s in %.1f s" % (len(socks), X.fd_kinds(wpid),
                                               used, el))
    t.check(full and len(socks) >= 4 * FIT,
            "held: %d connections fill the worker's %d places" % (
                len(socks), FIT), "worker sockets %s, before %s" % (
                X.sockets(wpid), w.fds0[wpid]))
    t.check(used < 0.2 * el, "held: full, the worker does not spin (CPU < "
            "20%% of %.1f s)" % el, "%.2f s" % used)
    released = time.monotonic()
    for s in socks:
        s.close()
    socks.clear()
    w.end()
    # the canary's requests made during the hold waited in the queue
    e.canary.wait_after(released, 3)
    recs = e.canary.through(w.t0, released)
    late = [r for r in recs if r[0] + r[2] > released + ptest.bound(3)]
    bad = [r for r in recs if not r[3]]
    t.diag("held: %d canary requests during the hold, slowest %s" % (
        len(recs), X.ms(max(r[2] for r in recs) if recs else None)))
    t.check(recs and not bad and not late,
            "held: the canary's %d requests made during the hold wait in "
            "the queue and are all served within %.0f s of its end" % (
                len(recs), ptest.bound(3)),
            lambda: ["failed %s" % bad[:5], "late %s" % late[:5]])
    w.judge(cpu_max=0.5, mem_kib=X.mem(4096), canary_fail_ok=True,
            p99_max=hold + ptest.bound(3))
    # after the hold, the canary is quick again
    t1 = time.monotonic()
    time.sleep(X.window(1.0, 1.0))
    e.canary.wait_after(time.monotonic(), 1)
    st = e.canary.stats(t1, time.monotonic())
    lim = X.p99_bound(e.base)
    t.check(st["n"] and not st["bad"] and st["p99"] < lim,
            "held: after the hold the canary's p99 is back under %s"
            % X.ms(lim), "%s" % st)
    w.recover(X.fresh_get(e.port, e.o))


def udp(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "UDP at the descriptor limit")
    wpid = w.pids[0]
    us = []
    for _ in range(FIT - 4):
        u = S.Udp(e.sport, timeout=ptest.bound(5))
        t.at_exit(u.close)
        us.append(u)
    ok = [u for u in us if u.ok()]
    # the upstream connections the churn left for reuse hold descriptors
    # too: an association that cannot have its relay socket is refused
    refused = [u for u in us if u.reply is not None and u.reply.rep == 1]
    t.check(len(ok) >= len(us) // 2 and len(ok) + len(refused) == len(us),
            "UDP: of %d associations asked for, most are granted and the "
            "others refused (0x01), none left hanging" % len(us),
            lambda: [u.describe() for u in us if not u.ok()][:3])
    ports = {u.relay[1] for u in ok}
    # each opens a socket per address family towards destinations: up to
    # 4 descriptors an association, more than the limit holds
    peak = 0
    for r in range(5):
        for u in ok:
            u.send("127.0.0.1", e.ue.port, b"v4 %d" % r)
            if e.ue6 is not None:
                u.send("::1", e.ue6.port, b"v6 %d" % r)
        time.sleep(0.1)
        peak = max(peak, ptest.fd_count(wpid) or 0)
    back = 0
    for u in ok:
        while u.recv(0.02) is not None and back < 10000:
            back += 1
    c0 = ptest.cpu_seconds(wpid)
    time.sleep(X.window(1.0, 1.0))
    used = ptest.cpu_seconds(wpid) - c0
    t.diag("UDP: %d associations granted, %d refused; they sent %d "
           "datagrams (%s), %d came back; worker fds peak %d (limit %d); "
           "CPU %.2f s in the next %.1f s" % (
               len(ok), len(refused), 5 * len(ok) * (2 if e.ue6 else 1),
               "v4 and v6" if e.ue6 else "v4", back, peak, NOFILE, used,
               X.window(1.0, 1.0)))
    t.check(peak >= NOFILE - 4 and back > 0, "UDP: the associations run "
            "the worker into its descriptor limit and still relay some "
            "datagrams", "fds peak %d, %d came back" % (peak, back))
    t.check(used < 0.2 * X.window(1.0, 1.0), "UDP: out of descriptors, the "
            "worker does not spin (CPU < 20%)", "%.2f s" % used)
    # out of descriptors, the canary waits in the queue (as in held())
    # until the associations close
    released = time.monotonic()
    for u in us:
        u.close()
    w.end()
    w.judge(cpu_max=0.5, mem_kib=X.mem(4096),
            p99_max=(released - w.t0) + ptest.bound(3))
    gone = ptest.wait_for(lambda: not any(S.udp_port_bound(p)
                                          for p in ports), ptest.bound(10),
                          interval=0.2)
    t.check(gone, "UDP: closing the associations releases every relay "
            "port", "%d still bound" % sum(1 for p in ports
                                            if S.udp_port_bound(p)))

    def fresh_udp():
        """a fresh association relays"""
        u = S.Udp(e.sport, timeout=ptest.bound(5))
        try:
            if not u.ok():
                return False, u.describe()
            u.send("127.0.0.1", e.ue.port, b"fresh")
            r = u.recv(ptest.bound(2))
            return r is not None and r[3] == b"fresh", repr(r)
        finally:
            u.close()
    w.recover(X.fresh_get(e.port, e.o), extra=fresh_udp)


def main(t):
    X.exclusive(t)
    e = Env()
    e.o = H.origin(t)
    e.ue = S.udp_echo(t)
    e.ue6 = S.udp_echo(t, "::1") if ptest.have_ipv6() else None
    e.port = ptest.free_port()
    e.sport = ptest.free_port()
    conf = S.socks_conf(t, e.sport, limits=dict(header_timeout=10,
                                                idle_timeout=30),
                        more_listeners=['  { address = "127.0.0.1:%d"; '
                                        'protocol = "http"; }' % e.port],
                        extra='relay = { method = "splice"; };\n'
                        'http = { connect_ports = "*"; };')
    # the limit is set in the child before exec (ptest's preexec)
    e.p = t.portico(conf, nofile=NOFILE)
    w0 = e.p.workers()
    lines = e.p.log_lines(r"max_connections \d+ lowered to %d" % FIT)
    t.check(lines, "with RLIMIT_NOFILE %d the worker lowers max_connections "
            "to %d" % (NOFILE, FIT), H.log_tail(e.p))
    ok, why = X.fresh_get(e.port, e.o)()
    t.check(ok, "a GET through the proxy before the attacks", why)
    e.canary = X.Canary(t, e.port, e.o.port)
    e.base = X.baseline(t, e.canary)
    for f in (churn, held, udp):
        t1 = time.monotonic()
        f(t, e)
        t.diag("%s took %.1f s" % (f.__name__, time.monotonic() - t1))
    e.canary.stop()
    H.finish(t, e.p, w0)
    t.diag("exit totals: %s" % (e.p.log_lines(r"totals: ")[-1:],))


if __name__ == "__main__":
    ptest.Test("hostile_fd").run(main)
