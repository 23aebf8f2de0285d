#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Memory is given back after a burst. One HTTP worker; 2,000 client
connections (fewer where the descriptor hard limit cannot hold that many
twice over) are opened at once and each sends the first line of a request
head and no more, so each holds its connection state and a payload buffer.
The worker's PSS (smaps_rollup; VmRSS where that is missing) must grow by
at least 2 KiB per connection while they are held (else the test measures
nothing), and, once they are closed, fall back to within a quarter of that
growth above the baseline (half under AddressSanitizer, which keeps pages
of its own). Before that, on the fresh worker, 2,000
connections that send nothing are held: each must cost under 5 KiB (10 KiB
under AddressSanitizer, whose shadow memory is counted too); the goal,
measured by bench/fairness, is 4 KiB. The proxy still serves afterwards.
"""
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

N = 2000


def settle(pid, timeout):
    """The worker's PSS once two readings 0.3 s apart agree within 64 KiB
    (bounded by <timeout>), so a reading is not taken mid-change."""
    last = ptest.pss_kib(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = ptest.pss_kib(pid)
        if now is None or last is None or abs(now - last) <= 64:
            return now
        last = now
    return last


def hold(t, port, n, payload):
    """<n> connections to <port> (fewer if the kernel refuses some), each
    having written <payload>. Blocking connects: on loopback they complete
    as soon as the listener's queue takes them, and select() could not
    watch this many descriptors."""
    socks = []
    t.at_exit(lambda: [s.close() for s in socks])
    for _ in range(n):
        try:
            socks.append(ptest.connect(port, timeout=ptest.bound(5)))
        except OSError:
            break
    sent = 0
    for s in socks:
        if not payload:
            break
        try:
            s.sendall(payload)
            sent += 1
        except OSError:
            pass
    return socks, sent


def release(socks):
    for s in socks:
        s.close()
    socks.clear()


def main(t):
    global N
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * N + 300:
        # portico's worker counts two descriptors per connection; this
        # process needs one each. Fewer connections still measure.
        N = max(300, (hard - 300) // 2)
        t.diag("descriptor hard limit %d: %d connections" % (hard, N))
    if soft < N + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (min(N + 200, hard) if hard !=
                            resource.RLIM_INFINITY else N + 200, hard))
    o = H.origin(t)
    p, port = H.start(t, limits=dict(max_connections=N + 500,
                                     header_timeout=120))
    w0 = p.workers()
    wpid = w0.get(0)
    t.check(wpid is not None, "one worker runs", str(p.all_children()))
    r = H.get(port, o.url + "/len?n=1000")
    t.check(getattr(r, "status", None) == 200,
            "a GET through the proxy before the burst", H.describe(r))
    base = settle(wpid, ptest.bound(5))
    t.diag("worker baseline PSS: %s KiB" % base)

    # idle connections that have sent nothing: what each one costs
    socks, _ = hold(t, port, N, b"")
    time.sleep(0.5)
    held2 = settle(wpid, ptest.bound(5))
    per = ((held2 or 0) - base) * 1024.0 / max(1, len(socks))
    cap = 5120 if ptest.SLOW == 1 else 10240
    t.diag("%d idle connections: %+d KiB, %.0f bytes each" % (
        len(socks), (held2 or 0) - base, per))
    t.check(len(socks) >= N * 9 // 10 and per < cap,
            "an idle client connection costs under %d bytes" % cap,
            "%.0f bytes each over %d connections" % (per, len(socks)))
    release(socks)
    ptest.wait_for(lambda: (ptest.pss_kib(wpid) or 1 << 30) <= base + 1024,
                   ptest.bound(10), interval=0.3)
    base = settle(wpid, ptest.bound(5))

    # a burst that holds buffers: the first line of a head each
    head = ("GET %s/len?n=10 HTTP/1.1\r\n" % o.url).encode()
    socks, sent = hold(t, port, N, head)
    t.check(sent >= N * 9 // 10, "%d connections opened and wrote the start "
            "of a head" % N, "%d of %d" % (sent, len(socks)))
    ok = ptest.wait_for(lambda: (ptest.pss_kib(wpid) or 0) - base >= N * 2,
                        ptest.bound(10), interval=0.2)
    held = settle(wpid, ptest.bound(5))
    grew = (held or 0) - base
    t.diag("held: PSS %s KiB, %+d KiB, %.0f bytes per connection" % (
        held, grew, grew * 1024.0 / max(1, len(socks))))
    t.check(ok and grew >= N * 2, "the burst grew the worker by at least "
            "2 KiB per connection (else this test measures nothing)",
            "grew %d KiB" % grew)

    release(socks)
    # AddressSanitizer keeps shadow and bookkeeping pages of its own.
    share = 4 if ptest.SLOW == 1 else 2
    limit = base + grew // share
    back = ptest.wait_for(lambda: (ptest.pss_kib(wpid) or 1 << 30) <= limit,
                          ptest.bound(15), interval=0.3)
    after = settle(wpid, ptest.bound(5))
    t.diag("after release: PSS %s KiB (%+d KiB from the baseline)" % (
        after, (after or 0) - base))
    t.check(back and after is not None and after <= limit,
            "closed, the worker gives the burst's memory back (PSS within "
            "1/%d of the growth above the baseline)" % share,
            lambda: ["baseline %d, held %s, after %s KiB, limit %d" % (
                base, held, after, limit)] + ptest.tail(p.log(), 10))

    ok = ptest.wait_for(lambda: getattr(H.get(port, o.url + "/len?n=1000"),
                                        "status", None) == 200,
                        ptest.bound(10), interval=0.3)
    t.check(ok, "the proxy serves after the bursts", H.log_tail(p))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("memory_burst").run(main)
