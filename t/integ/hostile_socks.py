#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Hostile SOCKS clients against one worker, one attack at a time, while a
canary (t/integ/hostiletest.py) alternates 1 KiB GETs through an HTTP
listener of the same worker with SOCKS5 CONNECTs and a 1 KiB echo. After
each attack: the same worker pid, CPU below the stated share of the
window, PSS growth below the stated bound, the canary never failed and
its p99 stayed under bound(200 ms to 1 s: 20 x its p95 before any attack),
and afterwards a fresh client is served and the worker's client
connections and sockets are back to where they were.

Bounds per attack (CPU: share of the window's wall time; PSS: peak growth
of the worker, x3 under the sanitizers):
  TCP garbage   CPU < 70% (thousands of connections a second)  PSS < 4 MiB
  UDP garbage   CPU < 70%  PSS < 4 MiB
  loops         CPU < 60%, < 50% in the second after the datagrams to
                relay ports  PSS < 4 MiB

- garbage on the SOCKS TCP port, from 4 clients at once for up to 3 s
  (4,000 connections at most): noise that is neither SOCKS5 nor SOCKS4, a
  request with an unknown command, an unknown address type, 254 methods
  none of them acceptable then noise, a SOCKS4 user id that never ends,
  a name of noise (resolved by a local DNS server only); each is answered
  or closed within bound(2) s, never left hanging; and established
  tunnels and bare greetings closed with SO_LINGER 0 among them.
- garbage on a UDP association's port for 2.5 s: empty and short
  datagrams, fragments, unknown address types, truncated addresses,
  names of noise, datagrams to a closed port, noise from a stranger's
  port; a valid datagram every 20 still comes back, and the echo server
  behind the relay sees the valid ones and nothing else.
- endless tunnels: SOCKS5 CONNECTs to a source without end, read 16 KiB
  every 50 ms, and to a target that reads nothing, written without end:
  what portico takes is held back (less than the kernel's socket
  buffers at their maxima and 16 MiB, 32 MiB at least); the writers then
  reset, and their tunnels end at once (within bound(3) s), not at
  idle_timeout.
- 300 UDP associations held at once, each with its own relay port; every
  port released once they close.
- slowloris on the SOCKS port: 1,000 connections offer RFC 1929 and send
  its sub-negotiation a byte a second; header_timeout (5 s) closes them.
- loops: 20 SOCKS5 CONNECTs nested through portico's own SOCKS listener,
  10 alternating SOCKS5 and HTTP CONNECT through its two listeners, each
  then relaying an echo (at most 2 sockets a hop; closing the client
  unwinds them); datagrams addressed to the association's own relay port
  and to another association's: each comes back at most once, no
  datagram circles.
"""
import os
import re
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import hostiletest as X  # noqa: E402


HEADER_TIMEOUT = 5
IDLE_TIMEOUT = 30
SLOWLORIS = 1000
ASSOCS = 300


class Env:
    pass




def garbage_once(e, i, rnd):
    """One hostile connection (variant i % 8). Returns (variant, how it
    ended, what was expected and seen or None, seconds)."""
    v = i % 8
    t0 = time.monotonic()
    try:
        c = S.Client.to(e.port, timeout=ptest.bound(5))
    except OSError as ex:
        return v, "connect:" + ptest.err_kind(ex), None, 0.0
    seen = None
    try:
        if v == 0:      # noise that is neither SOCKS5 nor SOCKS4
            d = bytearray(rnd(1 + i % 2000))
            if d[0] in (4, 5):
                d[0] ^= 0x80
            c.send(bytes(d))
        elif v == 1:    # an unknown command
            m = c.greet([S.M_NONE])
            cmd = 4 + i % 250
            c.send(b"\x05" + bytes([cmd, 0]) +
                   S.addr_bytes("127.0.0.1", e.echo.port))
            r = c.read_reply()
            seen = (m == 0 and r.rep == 7, "unknown command %d: method %d "
                    "rep 0x%02x" % (cmd, m, r.rep))
        elif v == 2:    # an unknown address type
            c.greet([S.M_NONE])
            atyp = (0, 2, 5, 6, 0x7f, 0xff)[i % 6]
            c.send(b"\x05\x01\x00" + bytes([atyp]) + rnd(18))
            r = c.read_reply()
            seen = (r.rep == 8, "address type %d: rep 0x%02x" % (atyp,
                                                                r.rep))
        elif v == 3:    # 254 methods, neither 0x00 nor 0x02, then noise
            ms = bytes([1]) + bytes(range(3, 256))
            c.send(b"\x05" + bytes([len(ms)]) + ms + rnd(300))
            r = c.read_exact(2)
            seen = (r == b"\x05\xff", "no acceptable method: %r" % r)
        elif v == 4:    # a SOCKS4 user id that never ends
            c.send(struct.pack("!BBH", 4, 1, e.closed_port) +
                   socket.inet_aton("127.0.0.1") + b"u" * 4000)
        elif v == 5:    # a name of noise (only the local DNS server)
            c.greet([S.M_NONE])
            name = bytes(b or 1 for b in rnd(1 + i % 255))
            c.send(b"\x05\x01\x00\x03" + bytes([len(name)]) + name +
                   b"\x00\x50")
            r = c.read_reply()
            seen = (r.rep != 0, "a name of noise: rep 0x%02x" % r.rep)
        elif v == 6:    # an established tunnel, reset
            if c.greet([S.M_NONE]) == 0 and \
                    S.ok5(c.request("127.0.0.1", e.echo.port)):
                c.send(b"x" * 100)
            X.linger0(c.sock)
            c.close()
            return v, "reset-by-us", None, time.monotonic() - t0
        else:           # a greeting, then reset
            c.send(b"\x05\x01\x00")
            X.linger0(c.sock)
            c.close()
            return v, "reset-by-us", None, time.monotonic() - t0
        _, how = H.outcome(c, ptest.bound(3))
    except Exception as ex:
        how = "error:" + ptest.err_kind(ex)
    finally:
        c.close()
    return v, how, seen, time.monotonic() - t0


def garbage_tcp(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "SOCKS garbage")
    dur = X.window(3.0, 2.0)
    res, lock = [], threading.Lock()

    def run(k):
        i, end = k, time.monotonic() + dur
        rng = X.noise(1 << 16, b"garbage%d" % k)
        off = [0]

        def rnd(n):
            o = off[0] % (len(rng) - n)
            off[0] += n + 7
            return rng[o:o + n]
        while time.monotonic() < end and i < 4000:
            r = garbage_once(e, i, rnd)
            with lock:
                res.append(r)
            i += 4
    ths = [threading.Thread(target=run, args=(k,), daemon=True)
           for k in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(dur + ptest.bound(10))
    w.end()
    per = {}
    for v, how, seen, dt in res:
        per.setdefault(v, []).append(how)
    t.diag("SOCKS garbage: %d connections; by variant: %s" % (
        len(res), {v: len(x) for v, x in sorted(per.items())}))
    hang = [r for r in res if r[1] not in ("eof", "reset", "reset-by-us")
            or r[3] > ptest.bound(2)]
    t.check(len(res) >= 80 and not hang,
            "SOCKS garbage: every one of %d hostile connections was answered "
            "and closed within %.0f s" % (len(res), ptest.bound(2)),
            lambda: ["%d not: %s" % (len(hang), hang[:8])])
    wrong = [r for r in res if r[2] is not None and not r[2][0]]
    t.check(not wrong, "SOCKS garbage: an unknown command is answered 0x07, "
            "an unknown address type 0x08, a name of noise a failure, no "
            "acceptable method 0xFF",
            lambda: wrong[:8])
    w.judge(cpu_max=0.7, mem_kib=X.mem(4096))

    def echo_idle():
        """the echo server behind the reset tunnels holds no connection"""
        return e.echo.active == 0, "%d connections" % e.echo.active
    w.recover(e.fresh, extra=echo_idle)


def _dropped(p, skip):
    """Dropped counts in the association-end log lines after the first
    <skip> of them."""
    out = []
    for ln in p.log_lines(r"(?i)dropped")[skip:]:
        m = re.search(r"(\d+) (?:datagrams? )?dropped|dropped[= ](\d+)", ln)
        if m:
            out.append(int(m.group(1) or m.group(2)))
    return out


def garbage_udp(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "UDP garbage")
    seen_log = len(e.p.log_lines(r"(?i)dropped"))
    assocs = [S.Udp(e.port) for _ in range(2)]
    for a in assocs:
        t.at_exit(a.close)
    t.check(all(a.ok() for a in assocs), "UDP garbage: two associations",
            lambda: [a.describe() for a in assocs])
    # each association learns its client's port from a first datagram
    for a in assocs:
        a.send("127.0.0.1", e.uecho.port, b"hello")
        a.recv(ptest.bound(2))
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.bind(("127.0.0.1", 0))
    t.at_exit(stranger.close)
    rng = X.noise(1 << 16, b"udp")
    valid = set()
    seen0 = e.uecho.count()
    dur = X.window(2.5, 2.0)
    t0 = time.monotonic()
    n = sent_valid = back = 0
    kinds = {}
    while time.monotonic() - t0 < dur and n < 6000:
        a = assocs[n % 2]
        k = n % 20
        o = (n * 97) % 60000
        noise = rng[o:o + 1 + n % 1200]
        if k == 0:
            data = b"valid %d " % n + noise[:64]
            valid.add(H.sha(data))
            a.send("127.0.0.1", e.uecho.port, data)
            sent_valid += 1
            dg = None
        elif k == 1:
            dg = b""
        elif k == 2:
            dg = noise[:3]
        elif k == 3:    # a fragment: dropped, RFC 1928 section 7
            dg = S.udp_header("127.0.0.1", e.uecho.port, frag=1 + n % 255) \
                + noise
        elif k == 4:    # unknown address types
            dg = b"\x00\x00\x00" + bytes([(0, 2, 5, 0xff)[n % 4]]) + noise
        elif k == 5:    # truncated IPv4 and IPv6 addresses
            dg = b"\x00\x00\x00\x01\x7f\x00" if n % 2 else \
                b"\x00\x00\x00\x04" + b"\x00" * 9
        elif k == 6:    # a name of noise: the local DNS server only
            nm = bytes(b or 1 for b in noise[:1 + n % 60])
            dg = b"\x00\x00\x00\x03" + bytes([len(nm)]) + nm + b"\x00\x07" \
                + b"x"
        elif k == 7:    # a closed port on loopback
            dg = S.udp_header("127.0.0.1", e.closed_port) + noise
        elif k == 8:    # a stranger's noise to the relay
            stranger.sendto(noise, a.relay)
            dg = None
        elif k == 9:    # a name longer than its datagram
            dg = b"\x00\x00\x00\x03\xff" + noise[:20]
        else:           # more noise with an unknown address type
            d = bytearray(noise)
            if len(d) >= 4:
                d[3] = 0x09
            dg = bytes(d)
        if dg is not None:
            try:
                a.send_raw(dg)
            except OSError:
                pass
        kinds[k] = kinds.get(k, 0) + 1
        n += 1
        if n % 50 == 0:
            time.sleep(0.02)
            for a2 in assocs:
                while a2.recv(0.001) is not None:
                    back += 1
    deadline = time.monotonic() + ptest.bound(2)
    while time.monotonic() < deadline and back < sent_valid:
        got = [a2.recv(0.05) for a2 in assocs]
        back += sum(1 for g in got if g is not None)
    w.end()
    t.diag("UDP garbage: %d datagrams in %.1f s, %d valid, %d came back" % (
        n, time.monotonic() - t0, sent_valid, back))
    # UDP may drop: a datagram that finds a socket buffer full is lost
    t.check(sent_valid > 0 and back >= sent_valid // 2,
            "UDP garbage: the valid datagrams among the garbage still "
            "come back (at least half)", "%d of %d" % (back, sent_valid))
    with e.uecho.lock:
        new = e.uecho.seen[seen0:]
    other = [x for x in new if x[2] not in valid]
    t.check(not other, "UDP garbage: the echo server behind the relay saw "
            "the valid datagrams and nothing else",
            "%d other datagrams: %s" % (len(other), other[:5]))
    ok = []
    for a in assocs:
        a.send("127.0.0.1", e.uecho.port, b"after the garbage")
        r = a.recv(ptest.bound(2))
        ok.append(r is not None and r[3] == b"after the garbage")
    t.check(all(ok), "UDP garbage: both associations still relay", str(ok))
    w.judge(cpu_max=0.7, mem_kib=X.mem(4096))
    for a in assocs:
        a.close()
    # each association logs how many datagrams it dropped when it ends
    # malformed or fragments, from the client's own port (not the names,
    # not the closed port, not the stranger's)
    bad = sum(c for k, c in kinds.items() if k not in (0, 6, 7, 8))
    total = n + 4
    drops = ptest.wait_for(lambda: _dropped(e.p, seen_log), ptest.bound(5))
    t.diag("UDP garbage: associations ended logging %s dropped; %d "
           "malformed sent from the clients" % (drops, bad))
    # a datagram the kernel dropped for a full buffer never reached it
    t.check(drops and bad // 2 <= sum(drops) <= total,
            "UDP garbage: the associations count the malformed datagrams "
            "they dropped (logged when they end)",
            lambda: ["%s of %d" % (drops, bad)] + ptest.tail(e.p.log(), 8))
    w.recover(e.fresh)


def nest(c, hops, e):
    """Opens <hops> (kind, ...) hops on Client <c>: 'socks' a SOCKS5
    CONNECT to portico's SOCKS listener, 'http' an HTTP CONNECT to its
    HTTP listener. Returns the list of results (True or why)."""
    out = []
    for kind, port in hops:
        try:
            if kind == "socks":
                if c.greet([S.M_NONE]) != 0:
                    out.append("method")
                    break
                r = c.request("127.0.0.1", port)
                out.append(True if S.ok5(r) else repr(r))
            else:
                hp = "127.0.0.1:%d" % port
                c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (hp, hp))
                r = H.read_response(c, "CONNECT")
                out.append(True if r.status == 200 else r.status)
        except Exception as ex:
            out.append("%s: %s" % (type(ex).__name__, ex))
            break
    return out


def slowloris(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "SOCKS slowloris")
    # a greeting offering RFC 1929, then credentials a byte a second: the
    # longest handshake SOCKS5 has (up to 513 bytes of them)
    socks = X.hold_connections(t, e.port, SLOWLORIS, b"\x05\x01\x02")
    opened = time.monotonic()
    t.diag("SOCKS slowloris: %d connections opened in %.2f s" % (
        len(socks), opened - w.t0))
    trickle = b"\x01\xff" + b"u" * 64
    end = w.t0 + X.window(3.0, 2.5)
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
    w.judge(cpu_max=0.5, mem_kib=X.mem(SLOWLORIS * 16))
    left = HEADER_TIMEOUT - (time.monotonic() - opened)
    closed = X.closed_by_peer(socks, max(0.5, left) + ptest.bound(3))
    t.check(closed == len(socks) and len(socks) >= SLOWLORIS * 9 // 10,
            "SOCKS slowloris: header_timeout (%d s) closed all %d trickling "
            "handshakes" % (HEADER_TIMEOUT, len(socks)),
            "%d of %d closed" % (closed, len(socks)))
    for s in socks:
        s.close()
    w.recover(e.fresh)


def endless(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "endless tunnels")
    dur = X.window(3.0, 2.5)
    # clients reading 16 KiB every 50 ms from a source without end, and
    # clients writing without end to a target that reads nothing
    readers, writers = [], []
    for _ in range(2):
        r, c = S.connect5(e.port, "127.0.0.1", e.source.port)
        t.at_exit(c.close)
        readers.append((r, c))
        r, c = S.connect5(e.port, "127.0.0.1", e.deaf.port)
        t.at_exit(c.close)
        writers.append((r, c))
    t.check(all(S.ok5(r) for r, _ in readers + writers),
            "endless tunnels: four SOCKS5 CONNECTs",
            str([r for r, _ in readers + writers]))
    pushed = [0] * len(writers)
    for _, c in writers:
        c.sock.settimeout(0.01)
    got = [0] * len(readers)
    block = b"w" * 65536
    end = w.t0 + dur
    while time.monotonic() < end:
        for i, (_, c) in enumerate(readers):
            try:
                got[i] += len(c.sock.recv(16384))
            except OSError:
                pass
        for i, (_, c) in enumerate(writers):
            try:
                pushed[i] += c.sock.send(block)
            except OSError:
                pass
        time.sleep(0.05)
    w.end()
    t.diag("endless tunnels: readers got %s bytes, writers pushed %s bytes "
           "in %.1f s" % (got, pushed, w.wall))
    t.check(all(g > 64 * 1024 for g in got), "endless tunnels: the slow "
            "readers keep receiving", str(got))
    lim = X.held_back()
    t.check(all(0 < x < lim for x in pushed),
            "endless tunnels: writing to a target that reads nothing is "
            "held back (< %d MiB taken each: the kernel's socket buffers "
            "and portico's own)" % (lim >> 20), str(pushed))
    w.judge(cpu_max=0.6, mem_kib=X.mem(4096))
    # The writers reset: a client that closed with a FIN would still be
    # owed the delivery of what portico took (until idle_timeout). One
    # that reset is gone, though its direction is blocked on a target
    # that reads nothing: the tunnel ends at once, not at idle_timeout.
    wpid = w.pids[0]
    for i, (_, c) in enumerate(writers):
        pushed[i] += X.fill(c.sock, block)
        X.linger0(c.sock)
        c.close()
    t0 = time.monotonic()
    gone = ptest.wait_for(lambda: X.upstreams(wpid, e.deaf.port) == 0,
                          ptest.bound(3), interval=0.05)
    t.check(gone, "endless tunnels: the tunnels whose clients reset while "
            "blocked on a target that reads nothing end within %.0f s "
            "(idle_timeout is %d s)" % (ptest.bound(3), IDLE_TIMEOUT),
            lambda: ["%d connections to the target left after %.1f s" % (
                X.upstreams(wpid, e.deaf.port), time.monotonic() - t0)])
    for _, c in readers:
        c.close()

    def source_closed():
        """the endless source holds no connection"""
        return e.source.active == 0, "source %d" % e.source.active
    # portico's sockets to the deaf target are closed (counted by
    # recover()), but a close leaves their FIN behind the bytes the target
    # never reads: the kernel keeps them as orphans, so the target itself
    # may not see the end.
    w.recover(e.fresh, extra=source_closed)
    t.diag("endless tunnels: the deaf target still sees %d connections "
           "(orphaned by portico's close, their FIN behind unread bytes)"
           % e.deaf.active)


def associations(t, e):
    n = ASSOCS
    w = X.Watch(t, e.p, e.canary, e.base, "%d UDP associations" % n)
    us = []
    for _ in range(n):
        u = S.Udp(e.port)
        t.at_exit(u.close)
        us.append(u)
    ok = [u for u in us if u.ok()]
    ports = {u.relay[1] for u in ok}
    t.check(len(ok) == n and len(ports) == n, "%d UDP associations held at "
            "once, each with its own relay port" % n,
            "%d ok, %d ports: %s" % (len(ok), len(ports),
                                     [u.describe() for u in us
                                      if not u.ok()][:3]))
    for u in ok[::10]:
        u.send("127.0.0.1", e.uecho.port, b"one of many")
    back = sum(1 for u in ok[::10] if u.recv(ptest.bound(2)) is not None)
    t.check(back >= len(ok[::10]) // 2, "one association in ten relays "
            "(at least half of them answered)",
            "%d of %d" % (back, len(ok[::10])))
    time.sleep(max(0.0, w.t0 + X.window(2.0, 1.5) - time.monotonic()))
    w.end()
    w.judge(cpu_max=0.5, mem_kib=X.mem(n * 16))
    for u in us:
        u.close()
    gone = ptest.wait_for(lambda: not any(S.udp_port_bound(p)
                                          for p in ports), ptest.bound(10),
                          interval=0.2)
    t.check(gone, "%d UDP associations: closing them releases every relay "
            "port" % n, "%d still bound" % sum(1 for p in ports
                                                if S.udp_port_bound(p)))
    w.recover(e.fresh)


def loops(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "loops")
    wpid = w.pids[0]
    fd0 = w.fds0[wpid]
    for label, hops in (
            ("20 SOCKS5 CONNECTs nested through its own SOCKS listener",
             [("socks", e.port)] * 20),
            ("10 SOCKS5 and HTTP CONNECTs alternating through its own two "
             "listeners", [("socks", e.hport), ("http", e.port)] * 5)):
        c = S.Client.to(e.port, timeout=ptest.bound(10))
        t.at_exit(c.close)
        # the first hop is the connection itself: each entry names the
        # listener the next hop goes to, spoken to in the protocol of the
        # listener the client is talking to at that point
        res = []
        speak = "socks"
        for _, nxt in hops:
            r = nest(c, [(speak, nxt)], e)
            res += r
            speak = "socks" if nxt == e.port else "http"
        ok_hops = all(r is True for r in res)
        final = nest(c, [(speak, e.echo.port)], e)
        ok, why = S.echo_check(c, os.urandom(1024)) if final == [True] \
            else (False, "last hop %s" % final)
        held = X.sockets(wpid)
        t.check(ok_hops and ok, "loops: %s, then to the echo server: the "
                "echo comes back" % label, "%s; %s" % (res, why))
        t.check(held is not None and held <= fd0 + 2 * (len(hops) + 1) + 4,
                "loops: each of the %d hops holds at most 2 sockets"
                % len(hops), "worker sockets %s, before %s" % (held, fd0))
        c.close()
        back = ptest.wait_for(lambda: X.sockets(wpid) <= fd0 + 4,
                              ptest.bound(10), interval=0.1)
        t.check(back, "loops: closing the client unwinds the %d hops"
                % len(hops), "worker sockets %s, before %s" % (
                    X.sockets(wpid), fd0))

    # datagrams to the relay's own port, and to another association's
    a, b = S.Udp(e.port), S.Udp(e.port)
    t.at_exit(a.close)
    t.at_exit(b.close)
    t.check(a.ok() and b.ok(), "loops: two associations",
            lambda: [a.describe(), b.describe()])
    for u in (a, b):
        u.send("127.0.0.1", e.uecho.port, b"hello")
        u.recv(ptest.bound(2))
    sent = 20
    for i in range(sent):
        a.send(a.relay[0], a.relay[1], b"to myself %d" % i)
        a.send(b.relay[0], b.relay[1], b"to the other %d" % i)
    c0 = ptest.cpu_seconds(wpid)
    time.sleep(X.window(1.0, 1.0))
    used = ptest.cpu_seconds(wpid) - c0
    got = {"a": 0, "b": 0}
    for name, u in (("a", a), ("b", b)):
        while u.recv(0.05) is not None and got[name] < 10 * sent:
            got[name] += 1
    t.diag("loops: %d datagrams to its own relay port and %d to another's: "
           "clients got %s back; worker CPU %.2f s in the next %.1f s" % (
               sent, sent, got, used, X.window(1.0, 1.0)))
    t.check(got["a"] + got["b"] <= 2 * sent,
            "loops: a datagram to a relay port comes back at most once "
            "(none circles)", str(got))
    t.check(used < 0.5 * X.window(1.0, 1.0), "loops: after the datagrams "
            "to relay ports, the worker is idle (CPU < 50%)",
            "%.2f s" % used)
    ok = []
    for u in (a, b):
        u.send("127.0.0.1", e.uecho.port, b"still")
        r = u.recv(ptest.bound(2))
        ok.append(r is not None and r[3] == b"still")
    t.check(all(ok), "loops: both associations still relay", str(ok))
    a.close()
    b.close()
    w.end()
    w.judge(cpu_max=0.6, mem_kib=X.mem(4096))
    w.recover(e.fresh)


def main(t):
    X.exclusive(t)
    e = Env()
    e.o = H.origin(t)
    e.echo = t.echo_server()
    e.uecho = S.udp_echo(t)
    e.source = X.EndlessSource()
    e.deaf = X.DeafServer()
    t.servers += [e.source, e.deaf]
    e.closed_port = ptest.free_port()
    dns = H.dns_server(t, {"known.test": {"A": ["127.0.0.1"]}})
    e.hport = ptest.free_port()
    e.p, e.port = S.start(t, limits=dict(header_timeout=HEADER_TIMEOUT,
                                         idle_timeout=IDLE_TIMEOUT),
                          resolver={"servers": dns.address, "timeout": 1},
                          more_listeners=['  { address = "127.0.0.1:%d"; '
                                          'protocol = "http"; }' % e.hport],
                          extra='http = { connect_ports = "*"; };')
    w0 = e.p.workers()
    e.fresh = X.fresh_get(e.hport, e.o)
    ok, why = e.fresh()
    t.check(ok, "a GET through the HTTP listener before the attacks", why)
    r, c = S.connect5(e.port, "127.0.0.1", e.echo.port)
    ok, why = S.echo_check(c, b"x" * 1024) if S.ok5(r) else (False, r)
    c.close()
    t.check(ok, "a SOCKS5 CONNECT echo before the attacks", why)
    e.canary = X.Canary(t, e.hport, e.o.port, e.port, e.echo.port)
    e.base = X.baseline(t, e.canary)
    t0 = time.monotonic()
    for f in (slowloris, garbage_tcp, garbage_udp, associations, endless,
              loops):
        t1 = time.monotonic()
        f(t, e)
        t.diag("%s took %.1f s" % (f.__name__, time.monotonic() - t1))
    t.diag("attacks took %.1f s" % (time.monotonic() - t0))
    e.canary.stop()
    H.finish(t, e.p, w0)


if __name__ == "__main__":
    ptest.Test("hostile_socks").run(main)
