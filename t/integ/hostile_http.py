#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Hostile clients and origins against one HTTP worker, one attack at a time,
while a canary (t/integ/hostiletest.py) keeps making 1 KiB GETs on fresh
connections. After each attack: the same worker pid (no crash, no
respawn), CPU below the stated share of the window (no spin), PSS growth
below the stated bound, the canary never failed and its p99 stayed under
bound(200 ms to 1 s: 20 x its p95 before any attack), and afterwards a
fresh client is served and the worker's client connections and sockets
are back to where they were.

Bounds per attack (CPU: share of the window's wall time; PSS: peak growth
of the worker, x3 under the sanitizers):
  slowloris        CPU < 50%  PSS < 24 KiB per connection (24,000 KiB)
  idle             CPU < 50%  PSS < 6 KiB per connection (12,000 KiB)
  1 MiB heads      CPU < 60%  PSS < 4 MiB
  aborted bodies   CPU < 60%  PSS < 4 MiB
  RST storm        CPU < 70%  PSS < 4 MiB
  endless streams  CPU < 60%  PSS < 4 MiB
  loops            CPU < 60%  PSS < 4 MiB
Windows are shorter under the sanitizers (hostiletest.window()).

- slowloris: 1,000 connections send a request line, then one header byte
  each every second, never ending the head; header_timeout (5 s) closes
  every one of them.
- 2,000 idle connections (fewer when the descriptor limit cannot hold
  them) that send nothing, held, then closed.
- 1 MiB request heads from 8 clients at once: each gets 431 (or 400) and
  a closed connection; a 1 MiB response head gets 502; heads of 10,000
  tiny fields (60 KB, under max_header_size, over the 128 fields a head
  may have) are answered 431 within 2 s.
- bodies aborted halfway: uploads whose client closes (FIN or RST) halfway
  (the origin sees its connection end), downloads whose origin closes or
  resets halfway, with Content-Length and chunked (the client sees its
  connection end before the whole body, without waiting for a timeout).
- an RST storm: connections closed with SO_LINGER 0 at up to 400 a
  second, before a byte, halfway through a head, right after a request
  the origin takes 0.3 s to answer, and in a CONNECT tunnel.
- endless streams: an origin that sends forever to clients reading 16 KiB
  every 50 ms, chunked uploads without end to an origin that reads
  nothing, and a client that pipelines 10,000 GETs for 16 KiB and reads
  no response: what portico takes in is held back (each upload, and the
  responses forwarded to the pipelining client, less than
  hostiletest.held_back(): the kernel's socket buffers on the way at
  their maxima and 16 MiB, 32 MiB at least); the uploading clients then reset, and
  their requests end at once (within bound(3) s), not at idle_timeout;
  when the readers close, the endless origin's connections are closed
  too.
- loops through portico's own listener: 20 nested CONNECTs, 50 CONNECTs
  to itself pipelined in one write, a GET for its own address: each
  hop is one the client asked for (sockets grow by at most 2 per hop),
  closing the client unwinds them all.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import hostiletest as X  # noqa: E402

HEADER_TIMEOUT = 5
IDLE_TIMEOUT = 30
PIPELINED = 10000
SLOWLORIS = 1000
IDLE = 2000


class Env:
    pass


def slowloris(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "slowloris")
    head = b"GET %s/len?n=10 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (
        e.o.url.encode(), e.o.port)
    socks = X.hold_connections(t, e.port, SLOWLORIS, head)
    opened = time.monotonic()
    t.diag("slowloris: %d connections opened in %.2f s" % (
        len(socks), opened - w.t0))
    trickle = b"X-Slow: " + b"s" * 64
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
    w.judge(cpu_max=0.5, mem_kib=X.mem(SLOWLORIS * 24))
    # header_timeout bounds a head however slowly it comes
    left = HEADER_TIMEOUT - (time.monotonic() - opened)
    closed = X.closed_by_peer(socks, max(0.5, left) + ptest.bound(3))
    t.check(closed == len(socks) and len(socks) >= SLOWLORIS * 9 // 10,
            "slowloris: header_timeout (%d s) closed all %d trickling "
            "connections" % (HEADER_TIMEOUT, len(socks)),
            "%d of %d closed" % (closed, len(socks)))
    for s in socks:
        s.close()
    w.recover(X.fresh_get(e.port, e.o))


def idle(t, e):
    # this process holds one descriptor a connection; fewer where the
    # descriptor limit cannot hold them (still hundreds)
    have = X.max_fds(IDLE + 500)
    n = max(100, min(IDLE, have - 400))
    if n < IDLE:
        t.diag("idle: descriptor limit %d: %d connections" % (have, n))
    w = X.Watch(t, e.p, e.canary, e.base, "idle %d" % n)
    socks = X.hold_connections(t, e.port, n)
    t.diag("idle: %d connections opened in %.2f s" % (
        len(socks), time.monotonic() - w.t0))
    t.check(len(socks) >= n * 9 // 10, "idle: %d connections held" % n,
            "%d opened" % len(socks))
    time.sleep(max(0.0, w.t0 + X.window(2.5, 2.0) - time.monotonic()))
    held = X.sockets(w.pids[0])
    w.end()
    t.check(held is not None and held >= w.fds0[w.pids[0]] + n * 9 // 10,
            "idle: the worker holds them all at once",
            "worker sockets %s, before %s" % (held, w.fds0[w.pids[0]]))
    w.judge(cpu_max=0.5, mem_kib=X.mem(n * 6))
    for s in socks:
        s.close()
    socks.clear()
    w.recover(X.fresh_get(e.port, e.o))


def big_head_client(port, url, size):
    """Sends a request head of <size> bytes (1 KiB field lines) while
    reading; returns (status or None, how the connection ended)."""
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    line = b"X-Big-%04d: " + b"b" * 1000 + b"\r\n"
    out = [b"GET %s HTTP/1.1\r\nHost: x\r\n" % url.encode()]
    i, n = 0, len(out[0])
    while n < size:
        out.append(line % i)
        n += len(out[-1])
        i += 1
    data = b"".join(out) + b"\r\n"

    def send():
        try:
            conn.sock.sendall(data)
        except OSError:
            pass
    th = threading.Thread(target=send, daemon=True)
    th.start()
    got, how = H.outcome(conn, ptest.bound(10))
    th.join(ptest.bound(5))
    conn.close()
    return H.status_of(got), how


def big_heads(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "1 MiB heads")
    res, lock = [], threading.Lock()

    def client():
        for _ in range(3):
            r = big_head_client(e.port, e.o.url + "/echo?big=1", 1 << 20)
            with lock:
                res.append(r)
    ths = [threading.Thread(target=client, daemon=True) for _ in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(ptest.bound(30))
    r = H.get(e.port, e.o.url + "/bighead?n=%d" % (1 << 20))
    # a head under max_header_size (64 KiB) of 10,000 tiny fields
    tiny = []
    for i in range(8):
        hs = [("a", "%d" % (j % 10)) for j in range(10000)]
        t0 = time.monotonic()
        try:
            rr, c = H.roundtrip(e.port, "GET", e.o.url + "/echo?tiny=%d" % i,
                                headers=hs, timeout=ptest.bound(10))
            c.close()
            tiny.append((rr.status, round(time.monotonic() - t0, 3)))
        except Exception as ex:
            tiny.append((ptest.err_kind(ex), round(time.monotonic() - t0,
                                                   3)))
    t.diag("10,000 tiny fields: %s" % tiny)
    t.check(all(x[0] == 431 and x[1] < ptest.bound(2) for x in tiny),
            "8 heads of 10,000 tiny fields (over the 128 a head may have) "
            "are each answered 431 within %.0f s" % ptest.bound(2),
            str(tiny))
    time.sleep(max(0.0, w.t0 + X.window(1.5, 1.0) - time.monotonic()))
    w.end()
    good = [x for x in res if x[0] in (431, 400) and x[1] in ("eof",
                                                               "reset")]
    t.diag("1 MiB heads: outcomes %s" % sorted(set(res)))
    t.check(len(res) == 24 and len(good) == len(res),
            "1 MiB heads: each of 24 got 431 or 400 and a closed connection",
            "%d of %d: %s" % (len(good), len(res), sorted(set(res))))
    t.check(not e.o.reqs_for("big=1"), "1 MiB heads: none reached the "
            "origin", "%d did" % len(e.o.reqs_for("big=1")))
    t.check(getattr(r, "status", None) == 502,
            "a 1 MiB response head is answered 502", H.describe(r))
    w.judge(cpu_max=0.6, mem_kib=X.mem(4096))
    w.recover(X.fresh_get(e.port, e.o))


def aborts(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "aborted bodies")
    ev = e.evil
    up_n, size = 10, 1 << 20
    before = len(ev.ended("/sink"))

    def upload(i):
        try:
            s = ptest.connect(e.port, timeout=ptest.bound(10))
        except OSError:
            return
        if i % 2:
            X.linger0(s)
        try:
            s.sendall(b"POST %s/sink HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: %d\r\n\r\n" % (ev.url.encode(),
                                                       size))
            s.sendall(b"u" * (size // 2))
            time.sleep(0.2)
        except OSError:
            pass
        s.close()
    ths = [threading.Thread(target=upload, args=(i,), daemon=True)
           for i in range(up_n)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(ptest.bound(20))
    ok = ptest.wait_for(lambda: len(ev.ended("/sink")) - before >= up_n,
                        ptest.bound(10), interval=0.1)
    ends = ev.ended("/sink")[before:]
    t.check(ok and all(h != "complete" and n < size for _, h, n in ends),
            "aborted uploads: for each of %d clients that closed halfway "
            "(FIN or RST) the origin saw its connection end before the "
            "body" % up_n, "%s" % ends)

    res, lock = [], threading.Lock()

    def download(path, rst):
        n = 512 * 1024
        t0 = time.monotonic()
        try:
            conn = H.Conn.to(e.port, timeout=ptest.bound(10))
            conn.send(b"GET %s%s?n=%d&rst=%d HTTP/1.1\r\nHost: x\r\n\r\n" % (
                ev.url.encode(), path.encode(), n, rst))
            got, how = H.outcome(conn, ptest.bound(10))
            conn.close()
        except OSError as ex:
            got, how = b"", ptest.err_kind(ex)
        with lock:
            res.append((path, rst, how, len(got), time.monotonic() - t0))
    ths = [threading.Thread(target=download, args=(p, r), daemon=True)
           for p in ("/abort", "/chunkabort") for r in (0, 1)
           for _ in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(ptest.bound(25))
    # the end of the body must reach the client as a closed connection,
    # never a hang until a timeout and never a complete message
    bad = [r for r in res if r[2] not in ("eof", "reset") or
           r[3] >= 512 * 1024 * 2 or r[4] > ptest.bound(5)]
    t.check(len(res) == 16 and not bad,
            "aborted downloads: each of 16 clients whose origin closed or "
            "reset halfway (Content-Length and chunked) saw its connection "
            "end before the whole body, within %.0f s" % ptest.bound(5),
            lambda: ["%d results; bad: %s" % (len(res), bad[:8])])
    time.sleep(max(0.0, w.t0 + X.window(1.5, 1.0) - time.monotonic()))
    w.end()
    w.judge(cpu_max=0.6, mem_kib=X.mem(4096))

    def origin_idle():
        """the aborting origin holds no connection"""
        return ev.active == 0, "%d connections" % ev.active
    w.recover(X.fresh_get(e.port, e.o), extra=origin_idle)


def rst_storm(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "RST storm")
    ev, echo = e.evil, e.echo
    dur = X.window(3.0, 2.0)
    rate, cap = 400.0, 1200
    counts = [0, 0, 0, 0]
    errors = []
    t0 = time.monotonic()
    n = 0
    while n < cap and time.monotonic() - t0 < dur:
        kind = n % 4
        n += 1
        try:
            s = ptest.connect(e.port, timeout=ptest.bound(5))
        except OSError as ex:
            errors.append(ptest.err_kind(ex))
            continue
        X.linger0(s)
        try:
            if kind == 1:
                s.send(b"GET %s/len?n=10 HTTP/1.1\r\nHo" % e.o.url.encode())
            elif kind == 2:
                s.send(b"GET %s/slow?s=0.3 HTTP/1.1\r\nHost: x\r\n\r\n" %
                       ev.url.encode())
                time.sleep(0.005)
            elif kind == 3:
                s.send(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
                    echo.address.encode(), echo.address.encode()))
                s.recv(200)
                s.send(b"in the tunnel")
        except OSError as ex:
            errors.append(ptest.err_kind(ex))
        s.close()
        counts[kind] += 1
        ahead = t0 + n / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    el = time.monotonic() - t0
    t.diag("RST storm: %d connections reset in %.1f s (%.0f/s): %d before "
           "a byte, %d mid-head, %d mid-request, %d in a tunnel; client "
           "errors %s" % (n, el, n / el, counts[0], counts[1], counts[2],
                          counts[3], sorted(set(errors))))
    w.end()
    w.judge(cpu_max=0.7, mem_kib=X.mem(4096))

    def legs_closed():
        """the origin and echo server hold no connection"""
        return (ev.active == 0 and echo.active == 0,
                "origin %d, echo %d" % (ev.active, echo.active))
    w.recover(X.fresh_get(e.port, e.o), extra=legs_closed)


def endless(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "endless streams")
    ev = e.evil
    before = len(ev.ended("/forever")) + len(ev.ended("/chunkforever"))
    dur = X.window(4.0, 3.0)
    conns = []
    for path in ("/forever", "/chunkforever") * 2:
        c = H.Conn.to(e.port, timeout=ptest.bound(10))
        conns.append(c)
        t.at_exit(c.close)
        c.send(b"GET %s%s HTTP/1.1\r\nHost: x\r\n\r\n" % (ev.url.encode(),
                                                         path.encode()))
    # uploads without end to an origin that reads nothing, and a client
    # that pipelines requests and reads no response
    pushed = [0, 0]
    piped = [0]
    stop = threading.Event()

    def upload(i):
        try:
            s = ptest.connect(e.port, timeout=ptest.bound(10))
        except OSError:
            return
        t.at_exit(s.close)
        s.settimeout(0.2)
        chunk = b"%x\r\n" % 65536 + b"u" * 65536 + b"\r\n"
        try:
            s.sendall(b"POST %s/noread?s=%d HTTP/1.1\r\nHost: x\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n" % (
                          ev.url.encode(), int(dur + 5)))
            while not stop.is_set() and pushed[i] < 1 << 30:
                try:
                    pushed[i] += s.send(chunk)
                except socket.timeout:
                    pass
        except OSError:
            pass
        stop.wait(30)
        pushed[i] += X.fill(s, chunk)
        X.linger0(s)
        s.close()

    def pipeline():
        try:
            s = ptest.connect(e.port, timeout=ptest.bound(10))
        except OSError:
            return
        t.at_exit(s.close)
        s.settimeout(0.2)
        req = H.request_bytes("GET", e.o.url + "/len?n=16384&piped=1")
        data = req * PIPELINED
        off = 0
        try:
            while not stop.is_set() and off < len(data):
                try:
                    off += s.send(data[off:off + 65536])
                except socket.timeout:
                    pass
        except OSError:
            pass
        piped[0] = off // len(req)
        stop.wait(30)
        s.close()
    ths = [threading.Thread(target=upload, args=(i,), daemon=True)
           for i in range(2)] + [threading.Thread(target=pipeline,
                                                  daemon=True)]
    for th in ths:
        th.start()
    end = w.t0 + dur
    got = [0] * len(conns)
    errs = []
    while time.monotonic() < end:
        for i, c in enumerate(conns):
            try:
                d = c.sock.recv(16 * 1024)
                got[i] += len(d)
            except OSError as ex:
                errs.append(ptest.err_kind(ex))
        time.sleep(0.05)
    w.end()
    reached = len(e.o.reqs_for("piped=1"))
    t.diag("endless streams: slow clients read %s bytes in %.1f s; uploads "
           "pushed %s bytes to an origin reading none; %d pipelined "
           "requests written, %d reached the origin" % (
               got, w.wall, pushed, piped[0], reached))
    t.check(all(g > 64 * 1024 for g in got) and not errs,
            "endless streams: every slow client keeps receiving",
            "%s %s" % (got, errs[:4]))
    lim = X.held_back()
    t.check(all(0 < x < lim for x in pushed),
            "endless streams: an endless upload to an origin that reads "
            "nothing is held back (< %d MiB taken each: the kernel's "
            "socket buffers and portico's own)" % (lim >> 20), str(pushed))
    # 16 KiB responses: what the kernel's socket buffers can hold and
    # portico's own, no more
    # (one leg: portico to the client)
    most = X.held_back(1) // (16 << 10)
    t.check(0 < reached < most < piped[0], "endless streams: of the %d "
            "requests pipelined by a client that reads no response, fewer "
            "than %d (%d MiB of responses) are forwarded (%d)" % (
                piped[0], most, X.held_back(1) >> 20, reached),
            str(reached))
    w.judge(cpu_max=0.6, mem_kib=X.mem(4096))
    # The uploads reset: those clients are gone, though their requests
    # are blocked on an origin that reads nothing: each ends at once, not
    # at idle_timeout. (The pipelining client closes with responses
    # unread, which resets too.)
    wpid = w.pids[0]
    stop.set()
    for th in ths:
        th.join(ptest.bound(10))     # fill() takes 4 s at most
    t0 = time.monotonic()
    # (the endless readers' requests hold one connection each to the
    # same origin)
    gone = ptest.wait_for(lambda: X.upstreams(wpid, ev.port) <= len(conns),
                          ptest.bound(3), interval=0.05)
    t.check(gone, "endless streams: the uploads whose clients reset while "
            "blocked on an origin that reads nothing end within %.0f s "
            "(idle_timeout is %d s)" % (ptest.bound(3), IDLE_TIMEOUT),
            lambda: ["%d connections to the origin (the %d readers' "
                     "included) after %.1f s" % (
                         X.upstreams(wpid, ev.port), len(conns),
                         time.monotonic() - t0)])
    for c in conns:
        c.close()

    def origin_closed():
        """every endless response's origin connection is closed"""
        n = len(ev.ended("/forever")) + len(ev.ended("/chunkforever"))
        return n - before >= 4, "%d of 4 ended: %s" % (
            n - before, ev.ended("/forever") + ev.ended("/chunkforever"))
    w.recover(X.fresh_get(e.port, e.o), extra=origin_closed)


def loops(t, e):
    w = X.Watch(t, e.p, e.canary, e.base, "loops")
    wpid = w.pids[0]
    fd0 = w.fds0[wpid]
    me = "127.0.0.1:%d" % e.port
    creq = b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (me.encode(),
                                                         me.encode())
    # 20 nested CONNECTs, one at a time, then a GET through all of them
    depth = 20
    c = H.Conn.to(e.port, timeout=ptest.bound(10))
    t.at_exit(c.close)
    st = []
    try:
        for _ in range(depth):
            c.send(creq)
            st.append(H.read_response(c, "CONNECT").status)
        c.send(H.request_bytes("GET", e.o.url + "/len?n=1024"))
        r = H.read_response(c)
    except Exception as ex:
        r = "%s: %s" % (type(ex).__name__, ex)
    nested = X.sockets(wpid)
    t.check(st == [200] * depth and getattr(r, "status", None) == 200 and
            getattr(r, "body_len", 0) == 1024,
            "loops: %d CONNECTs nested through portico's own listener "
            "relay a GET" % depth, lambda: [st] + H.describe(r))
    t.check(nested is not None and nested <= fd0 + 2 * (depth + 1) + 4,
            "loops: %d nested CONNECTs hold at most 2 sockets each"
            % depth, "worker sockets %s, before %s" % (nested, fd0))
    c.close()
    back = ptest.wait_for(lambda: X.sockets(wpid) <= fd0 + 4,
                          ptest.bound(10), interval=0.1)
    t.check(back, "loops: closing the client unwinds every nested hop",
            "worker sockets %s, before %s" % (X.sockets(wpid), fd0))

    # 50 CONNECTs to itself in one write: each hop takes the next one
    many = 50
    c = H.Conn.to(e.port, timeout=ptest.bound(10))
    t.at_exit(c.close)
    c.send(creq * many)
    ok = 0
    try:
        for _ in range(many):
            if H.read_response(c, "CONNECT").status == 200:
                ok += 1
    except Exception as ex:
        t.diag("pipelined CONNECTs: %s" % (ex,))
    time.sleep(0.3)
    peak = X.sockets(wpid)
    t.check(ok == many and peak <= fd0 + 2 * (many + 1) + 4,
            "loops: %d CONNECTs to itself in one write make %d hops, no "
            "more (at most 2 sockets each)" % (many, many),
            "%d answered 200; worker sockets %s, before %s" % (ok, peak, fd0))
    # the innermost hop is still a working proxy
    c.send(H.request_bytes("GET", e.o.url + "/len?n=1024"))
    try:
        r = H.read_response(c)
    except Exception as ex:
        r = str(ex)
    t.check(getattr(r, "status", None) == 200,
            "loops: the innermost of the %d hops still proxies" % many,
            H.describe(r))
    c.close()

    # a GET for portico's own address: the hop gets an origin-form request
    # it refuses, and the answer comes back through the first
    r = H.get(e.port, "http://%s/self" % me)
    t.check(isinstance(r, H.Resp) and 400 <= r.status < 600,
            "loops: a GET for portico's own address is answered with an "
            "error, not forwarded again", H.describe(r))
    time.sleep(max(0.0, w.t0 + X.window(1.0, 1.0) - time.monotonic()))
    w.end()
    w.judge(cpu_max=0.6, mem_kib=X.mem(4096))
    w.recover(X.fresh_get(e.port, e.o))


def main(t):
    X.max_fds(IDLE + 500)
    X.exclusive(t)
    e = Env()
    e.o = H.origin(t)
    e.evil = X.evil_origin(t)
    e.echo = t.echo_server()
    e.p, e.port = H.start(t, limits=dict(header_timeout=HEADER_TIMEOUT,
                                         idle_timeout=IDLE_TIMEOUT))
    w0 = e.p.workers()
    r = H.get(e.port, e.o.url + "/len?n=1024")
    t.check(getattr(r, "status", None) == 200, "a GET through the proxy "
            "before the attacks", H.describe(r))
    e.canary = X.Canary(t, e.port, e.o.port)
    e.base = X.baseline(t, e.canary)
    t0 = time.monotonic()
    for f in (slowloris, idle, big_heads, aborts, rst_storm, endless,
              loops):
        t1 = time.monotonic()
        f(t, e)
        t.diag("%s took %.1f s" % (f.__name__, time.monotonic() - t1))
    t.diag("attacks took %.1f s" % (time.monotonic() - t0))
    e.canary.stop()
    H.finish(t, e.p, w0)


if __name__ == "__main__":
    ptest.Test("hostile_http").run(main)
