#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Zero heap allocations per connection, request and datagram in steady
state, counted from outside the code under test.

portico runs with t/helpers/alloccount.so preloaded (after the
AddressSanitizer runtime in the sanitizer build, where it counts through
ASan's malloc hooks): every process counts its own malloc-family calls in
a file the test reads at any moment. One worker serves everything, so its
count is the one asserted on (the master never touches traffic).

For each kind of work -- HTTP requests on one keep-alive connection, HTTP
requests each on a new connection, CONNECT tunnels, SOCKS5 CONNECT
sessions, UDP ASSOCIATE sessions, datagrams on one association -- and for
each way of naming the target -- an address, a name answered from the
resolver's cache, a name that goes to DNS every time (a DNS server run by
the test answers d<N>.test with TTL 0, each name used once) -- it warms
up, then checks that N more of them made the worker allocate nothing.
HTTP runs twice: with the upstream keep-alive pool (where a pooled origin
needs no lookup) and without it (every request resolves and dials). The
error path is counted too: requests for names the DNS server does not
know, answered 502.

Each check also verifies that the work was done (the bytes came back, the
DNS server saw the queries, or did not for cached names), so a broken
proxy cannot pass by doing nothing, and the counter must have seen the
worker's start-up allocations, so a counter that counts nothing cannot
pass either. On a failure the callers of the last allocations are shown
(PT_ALLOCCOUNT_TRACE), resolved with addr2line when it is installed.
"""
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

N = int(os.environ.get("PT_ALLOCS_N", "200"))
WARM = int(os.environ.get("PT_ALLOCS_WARM", "40"))
HELPER = os.path.join(ptest.BUILDDIR, "t", "helpers", ".libs",
                      "alloccount.so")

# struct ac_shared in t/helpers/alloccount.c, uint64 words
W_MAGIC, W_PID, W_TOTAL, W_FREES, W_KIND = 0, 1, 2, 3, 4
KINDS = ("malloc", "calloc", "realloc", "aligned", "sanitizer-hook")
W_RING_NEXT = W_KIND + len(KINDS)
RING, DEPTH = 64, 8
W_RING_SIZE = W_RING_NEXT + 1
W_RING = W_RING_SIZE + RING
MAGIC = 0x31434f4c4c415450


class Counter:
    """The counts of one process, read from <dir>/<pid>."""

    def __init__(self, directory, pid):
        self.path = os.path.join(directory, str(pid))
        self.pid = pid

    def words(self):
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        w = struct.unpack("<%dQ" % (len(data) // 8), data)
        if len(w) <= W_RING_NEXT or w[W_MAGIC] != MAGIC:
            return None
        return w

    def total(self):
        w = self.words()
        return None if w is None else w[W_TOTAL]

    def kinds(self, before, after):
        return ", ".join("%s %d" % (k, after[W_KIND + i] - before[W_KIND + i])
                         for i, k in enumerate(KINDS)
                         if after[W_KIND + i] != before[W_KIND + i])

    def callers(self, before, after):
        """Lines naming the callers of the allocations made between two
        readings (the last RING of them at most)."""
        first = max(before[W_RING_NEXT], after[W_RING_NEXT] - RING)
        if after[W_RING_NEXT] == 0:
            return ["no callers recorded (tracing off?)"]
        maps = _maps(self.pid)
        out = []
        for k in range(first, after[W_RING_NEXT]):
            slot = k % RING
            size = after[W_RING_SIZE + slot]
            frames = [a for a in after[W_RING + slot * DEPTH:
                                       W_RING + (slot + 1) * DEPTH] if a]
            out.append("allocation of %d bytes:" % size)
            out.extend("    " + f for f in _symbolize(frames, maps))
        return out


def _maps(pid):
    out = []
    try:
        with open("/proc/%d/maps" % pid) as f:
            for ln in f:
                parts = ln.split()
                if len(parts) < 6 or "x" not in parts[1]:
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi, int(parts[2], 16), parts[5]))
    except OSError:
        pass
    return out


def _symbolize(frames, maps):
    """'object+offset  function at file:line' for each return address,
    without this helper's own frames and the sanitizer's."""
    have_a2l = shutil.which("addr2line") is not None
    lines = []
    for a in frames:
        where = None
        for lo, hi, off, path in maps:
            if lo <= a < hi:
                where = (path, a - lo + off)
                break
        if where is None:
            lines.append("0x%x" % a)
            continue
        path, rel = where
        base = os.path.basename(path)
        if base.startswith("alloccount") or base.startswith("libasan") or \
                base.startswith("libgcc_s"):
            continue
        sym = ""
        if have_a2l:
            try:
                r = subprocess.run(["addr2line", "-f", "-C", "-p", "-e",
                                    path, "0x%x" % (rel - 1)],
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL,
                                   universal_newlines=True, timeout=10)
                sym = r.stdout.strip()
            except (OSError, subprocess.TimeoutExpired):
                pass
        lines.append("%s+0x%x  %s" % (base, rel, sym))
    return lines


def asan_runtime():
    """The AddressSanitizer runtime portico links, or None."""
    try:
        r = subprocess.run(["ldd", ptest.PORTICO], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL,
                           universal_newlines=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for ln in r.stdout.splitlines():
        if "libasan" in ln and "=>" in ln:
            return ln.split("=>")[1].split("(")[0].strip()
    return None


class Names:
    """The DNS server's table: 'cached.test' with a long TTL, d<N>.test
    (any N) with TTL 0, everything else NXDOMAIN. DnsServer looks names
    up through get() and reads .ttl right after, so get() sets it."""

    def __init__(self):
        self.server = None

    def get(self, name):
        if name == "cached.test":
            self.server.ttl = 300
            return {"A": ["127.0.0.1"]}
        if name.startswith("d") and name.endswith(".test") and \
                name[1:-5].isdigit():
            self.server.ttl = 0
            return {"A": ["127.0.0.1"]}
        return None


class Work:
    """The operations, each returning (ok, why)."""

    def __init__(self, t, dns, http_port, socks_port, origin, echo, uecho):
        self.t = t
        self.dns = dns
        self.http_port = http_port
        self.socks_port = socks_port
        self.origin = origin
        self.echo = echo
        self.uecho = uecho
        self.serial = 0
        self.keep = None        # the keep-alive client connection
        self.assoc = None       # the long UDP association

    def fresh_name(self):
        self.serial += 1
        return "d%06d.test" % self.serial

    def host(self, naming):
        if naming == "address":
            return "127.0.0.1"
        if naming == "cache":
            return "cached.test"
        return self.fresh_name()

    # -- HTTP ------------------------------------------------------------
    def _get(self, conn, naming):
        url = "http://%s:%d/echo?x=1" % (self.host(naming), self.origin.port)
        conn.send(H.request_bytes("GET", url))
        r = H.read_response(conn)
        if r.status != 200:
            return False, "status %d for %s" % (r.status, url)
        return True, None

    def http_keepalive(self, naming):
        try:
            if self.keep is None:
                self.keep = H.Conn.to(self.http_port,
                                      timeout=ptest.bound(10))
            return self._get(self.keep, naming)
        except Exception as e:
            self.end_keepalive()
            return False, "%s: %s" % (type(e).__name__, e)

    def end_keepalive(self):
        if self.keep is not None:
            self.keep.close()
        self.keep = None

    def http_new(self, naming):
        conn = None
        try:
            conn = H.Conn.to(self.http_port, timeout=ptest.bound(10))
            return self._get(conn, naming)
        except Exception as e:
            return False, "%s: %s" % (type(e).__name__, e)
        finally:
            if conn is not None:
                conn.close()

    def http_unknown_name(self, naming):
        """A name the DNS server does not know (NXDOMAIN): 502, on a new
        connection. The error path: a status page, a log line."""
        conn = None
        self.serial += 1
        url = "http://nx%06d.test:%d/" % (self.serial, self.origin.port)
        try:
            conn = H.Conn.to(self.http_port, timeout=ptest.bound(10))
            conn.send(H.request_bytes("GET", url))
            r = H.read_response(conn)
            if r.status != 502:
                return False, "status %d for %s" % (r.status, url)
            return True, None
        except Exception as e:
            return False, "%s: %s" % (type(e).__name__, e)
        finally:
            if conn is not None:
                conn.close()

    def connect_tunnel(self, naming):
        conn = None
        target = "%s:%d" % (self.host(naming), self.echo.port)
        try:
            conn = H.Conn.to(self.http_port, timeout=ptest.bound(10))
            conn.send(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
                target.encode(), target.encode()))
            r = H.read_response(conn, "CONNECT")
            if r.status != 200:
                return False, "CONNECT %s: status %d" % (target, r.status)
            return S.echo_check(conn, b"ping through CONNECT")
        except Exception as e:
            return False, "%s: %s" % (type(e).__name__, e)
        finally:
            if conn is not None:
                conn.close()

    # -- SOCKS -----------------------------------------------------------
    def socks_connect(self, naming):
        r, c = S.connect5(self.socks_port, self.host(naming), self.echo.port,
                          timeout=ptest.bound(10))
        try:
            if not S.ok5(r):
                return False, "SOCKS5 CONNECT: %s" % (S.rep_name(r),)
            return S.echo_check(c, b"ping through SOCKS5")
        finally:
            c.close()

    def _udp_roundtrip(self, u, naming, payload):
        u.send(self.host(naming), self.uecho.port, payload)
        got = u.recv(ptest.bound(5))
        if got is None:
            return False, "no reply to a datagram (%s)" % naming
        if got[3] != payload:
            return False, "reply %r" % (got,)
        return True, None

    def udp_session(self, naming):
        u = S.Udp(self.socks_port, timeout=ptest.bound(10))
        try:
            if not u.ok():
                return False, u.describe()
            return self._udp_roundtrip(u, naming, b"one datagram")
        finally:
            u.close()

    def udp_datagram(self, naming):
        if self.assoc is None:
            self.assoc = S.Udp(self.socks_port, timeout=ptest.bound(10))
            if not self.assoc.ok():
                why = self.assoc.describe()
                self.end_udp()
                return False, why
        return self._udp_roundtrip(self.assoc, naming, b"datagram")

    def end_udp(self):
        if self.assoc is not None:
            self.assoc.close()
        self.assoc = None


def quiet(counter, timeout):
    """The worker's count once it stopped moving (the worker finished the
    closes and replies of what the client already saw)."""
    last = counter.words()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        cur = counter.words()
        if cur is not None and last is not None and \
                cur[W_TOTAL] == last[W_TOTAL] and \
                cur[W_FREES] == last[W_FREES]:
            return cur
        last = cur
    return last


def run_group(t, counter, w, label, op, naming, end=None):
    fails = []
    for i in range(WARM):
        ok, why = op(naming)
        if not ok:
            fails.append("warm-up %d: %s" % (i, why))
            break
    if fails:
        t.check(False, "%s (%s): warm-up works" % (label, naming), fails)
        if end:
            end()
        return
    q0 = w.dns.count_all()
    before = quiet(counter, ptest.bound(3))
    done = 0
    for i in range(N):
        ok, why = op(naming)
        if not ok:
            fails.append("operation %d: %s" % (i, why))
            break
        done += 1
    if end:
        end()
    after = quiet(counter, ptest.bound(3))
    q1 = w.dns.count_all()
    cached = w.dns.count("cached.test")
    t.check(done == N, "%s (%s): %d of %d done" % (label, naming, done, N),
            fails)
    if naming == "dns":
        t.check(q1 - q0 >= N, "%s (%s): the DNS server saw a query for "
                "each (%d)" % (label, naming, q1 - q0))
    elif naming == "cache":
        t.check(q1 == q0, "%s (%s): no query reached the DNS server (%d "
                "for cached.test in all)" % (label, naming, cached))
    if before is None or after is None:
        t.check(False, "%s (%s): the worker's count can be read" % (
            label, naming), counter.path)
        return
    d = after[W_TOTAL] - before[W_TOTAL]
    t.check(d == 0, "%s (%s): 0 heap allocations in the worker over %d "
            "(saw %d)" % (label, naming, N, d),
            lambda: ["by kind: " + counter.kinds(before, after)] +
            counter.callers(before, after))


def burst(t, w, threads=8, each=5):
    """Runs the connection-per-operation kinds <threads> at a time, every
    naming: the pools grow to a high-water mark above what the sequential
    checks need, so their lazy growth (allowed, once) is not counted as a
    per-connection allocation."""
    errors = []

    def run(op, naming):
        for _ in range(each):
            ok, why = op(naming)
            if not ok:
                errors.append(why)
                return
    ths = []
    for op in (w.http_new, w.connect_tunnel, w.socks_connect, w.udp_session):
        for naming in ("address", "cache", "dns"):
            for _ in range(threads):
                th = threading.Thread(target=run, args=(op, naming),
                                      daemon=True)
                th.start()
                ths.append(th)
            for th in ths:
                th.join(ptest.bound(60))
            ths = []
    t.check(not errors, "a warm-up burst of %d at a time works" % threads,
            errors[:10])


def count_all(self):
    with self.lock:
        return len(self.queries)


def main(t):
    if not os.path.exists(HELPER):
        t.check(False, "the allocation counter is built", "no %s (make "
                "check builds it; PT_BUILDDIR=%s)" % (HELPER,
                                                       ptest.BUILDDIR))
        return
    preload = [HELPER]
    asan = asan_runtime()
    if asan:
        preload.insert(0, asan)
    cdir = t.path("allocs")
    os.mkdir(cdir)

    names = Names()
    H.DnsServer.count_all = count_all
    dns = H.dns_server(t, {})
    dns.table = names
    names.server = dns
    origin = H.origin(t)
    echo = t.echo_server()
    uecho = S.udp_echo(t)
    env = {"LD_PRELOAD": " ".join(preload), "PT_ALLOCCOUNT_DIR": cdir,
           "PT_ALLOCCOUNT_TRACE": "1"}

    def start(keepalive):
        http_port = ptest.free_port()
        resolver = {"servers": dns.address, "min_ttl": 0, "timeout": 2}
        http = 'http = { connect_ports = "*"; upstream_keepalive = %d; };' \
            % keepalive
        conf = S.socks_conf(
            t, ptest.free_port(), resolver=resolver, extra=http,
            more_listeners=['  { address = "127.0.0.1:%d"; protocol = '
                            '"http"; }' % http_port])
        p = ptest.Portico(t, conf, env=env).start()
        ports = p.listener_ports()
        return p, ports[0], ports[1]

    p, socks_port, http_port = start(64)
    workers = p.workers()
    wpid = workers.get(0)
    counter = Counter(cdir, wpid)
    w0 = counter.words()
    t.check(w0 is not None and w0[W_TOTAL] > 0 and
            w0[W_PID] == wpid,
            "the counter sees the worker's start-up allocations (%s, %s)" % (
                "ASan hooks" if asan else "interposed malloc",
                "none" if w0 is None else w0[W_TOTAL]),
            lambda: ["files: %r" % os.listdir(cdir), "worker %r" % wpid,
                     "env %r" % env] + ptest.tail(p.log(), 20))
    if w0 is None:
        return
    w = Work(t, dns, http_port, socks_port, origin, echo, uecho)
    burst(t, w)
    for naming in ("address", "cache", "dns"):
        run_group(t, counter, w, "HTTP keep-alive, upstream pool",
                  w.http_keepalive, naming, w.end_keepalive)
        run_group(t, counter, w, "HTTP new connection, upstream pool",
                  w.http_new, naming)
        run_group(t, counter, w, "CONNECT tunnel", w.connect_tunnel, naming)
        run_group(t, counter, w, "SOCKS5 CONNECT", w.socks_connect, naming)
        run_group(t, counter, w, "UDP ASSOCIATE session", w.udp_session,
                  naming)
        run_group(t, counter, w, "UDP datagram", w.udp_datagram, naming,
                  w.end_udp)
    run_group(t, counter, w, "HTTP 502 for an unknown name",
              w.http_unknown_name, "dns")
    H.finish(t, p, workers)

    # Without the upstream pool every HTTP request resolves and dials.
    p, socks_port, http_port = start(0)
    workers = p.workers()
    counter = Counter(cdir, workers.get(0))
    w.http_port, w.socks_port = http_port, socks_port
    burst(t, w)
    for naming in ("address", "cache", "dns"):
        run_group(t, counter, w, "HTTP keep-alive, no upstream pool",
                  w.http_keepalive, naming, w.end_keepalive)
        run_group(t, counter, w, "HTTP new connection, no upstream pool",
                  w.http_new, naming)
    H.finish(t, p, workers)


if __name__ == "__main__":
    ptest.Test("allocs").run(main)
