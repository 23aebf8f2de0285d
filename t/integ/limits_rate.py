#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
connection_rate, exact across workers: two workers, a tcp listener to an
echo origin, a class of connection_rate = 100 per second with a burst of
10, keyed by source address.

- A flood from 127.0.0.1 at about 1,000 connections a second for FLOOD
  seconds (4 s; the issue's 10 s would cost CI 6 s more for the same
  arithmetic): the bucket is full when it starts and empty for all of
  it, so it admits burst + rate * (last attempt - first attempt)
  connections. Measured: the connections that echoed; the bound is 2
  connections either way (0.5% at 4 s; one token of granularity at each
  end, and the client's clock read a few hundred microseconds away from
  the proxy's), and 0.1% would hold at 10 s.
- Meanwhile 127.0.0.2, its own key, connects 20 times a second: never
  refused. Its connect-and-echo latency, p99, is reported against the
  same measured without the flood (asserted only under a generous bound:
  the flood's own client shares the machine's two cores).
- The refusals are counted in the totals (limits_refused equals the
  flood's refused connections).
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import limitstest as L  # noqa: E402

RATE = 100
BURST = 10
FLOOD = 4.0
FLOOD_RATE = 1000
THREADS = 4
SECOND_RATE = 20

CONF = """
workers = 2;
error_log = "@TMP@/error.log";
shutdown_timeout = 5;
listeners = (
  { name = "fwd"; address = "127.0.0.1:@C@"; protocol = "tcp";
    to = "127.0.0.1:@O@"; }
);
modules = ( { name = "limits"; path = "@SO@";
  classes = ( { name = "conn-rate"; key = "source";
                connection_rate = @RATE@; connection_rate_burst = @BURST@;
              } ); } );
"""


def attempt(port, src):
    """One connection: (admitted, seconds from connect to echo)."""
    t0 = time.monotonic()
    try:
        s = L.connect_from(port, src, timeout=ptest.bound(5))
    except OSError:
        return False, time.monotonic() - t0
    try:
        ok = L.echoes(s, b"x", timeout=ptest.bound(5))
        return ok, time.monotonic() - t0
    finally:
        s.close()


class Flood:
    def __init__(self, port, src, rate, seconds, threads):
        self.port, self.src = port, src
        self.rate, self.seconds, self.threads = rate, seconds, threads
        self.results = []       # (start time, admitted)
        self.lock = threading.Lock()

    def _run(self, i, t0):
        k = 0
        while k < self.rate * self.seconds:
            when = t0 + (k * self.threads + i) / self.rate
            if when > t0 + self.seconds:
                break
            delay = when - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            start = time.monotonic()
            ok, _ = attempt(self.port, self.src)
            with self.lock:
                self.results.append((start, ok))
            k += 1

    def run(self):
        t0 = time.monotonic() + 0.05
        ths = [threading.Thread(target=self._run, args=(i, t0), daemon=True)
               for i in range(self.threads)]
        for th in ths:
            th.start()
        for th in ths:
            th.join(self.seconds + ptest.bound(30))


def latencies(port, src, rate, seconds, stop=None):
    out, refused = [], 0
    t_end = time.monotonic() + seconds
    k = 0
    t0 = time.monotonic()
    while time.monotonic() < t_end and k < rate * seconds:
        delay = t0 + k / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        ok, dt = attempt(port, src)
        if ok:
            out.append(dt)
        else:
            refused += 1
        k += 1
    return out, refused


def p99(xs):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


def main(t):
    ptest.exclusive(t)
    why = L.missing()
    if why:
        t.skip("limits module scenarios", why)
        return
    if not L.can_bind("127.0.0.2"):
        t.skip("connection_rate flood with a second source",
               "127.0.0.2 cannot be bound here", need="127.0.0.2")
        return
    echo = t.echo_server()
    port = ptest.free_port()
    p = t.portico(ptest.fill(CONF, TMP=t.tmp, SO=L.LIMITS_SO, C=port,
                             O=echo.port, RATE=RATE, BURST=BURST),
                  workers=2)

    base, base_refused = latencies(port, "127.0.0.2", SECOND_RATE, 1.0)
    # Let the flood source's bucket be full (it is: never used).
    flood = Flood(port, "127.0.0.1", FLOOD_RATE, FLOOD, THREADS)
    second = {}

    def run_second():
        second["lat"], second["refused"] = latencies(
            port, "127.0.0.2", SECOND_RATE, FLOOD)

    th = threading.Thread(target=run_second, daemon=True)
    th.start()
    flood.run()
    th.join(ptest.bound(30))

    res = sorted(flood.results)
    admitted = sum(1 for _, ok in res if ok)
    span = res[-1][0] - res[0][0] if res else 0.0
    predicted = BURST + RATE * span
    bound = max(2.0, predicted * 0.001)
    t.diag("flood: %d attempts in %.3f s (%.0f/s), admitted %d, predicted "
           "%.1f (burst %d + %d/s * %.3f s), off by %+.1f (%.2f%%)" % (
               len(res), span, len(res) / span if span else 0, admitted,
               predicted, BURST, RATE, span, admitted - predicted,
               100.0 * (admitted - predicted) / predicted
               if predicted else 0))
    t.check(len(res) / max(span, 1e-9) >= 3 * RATE,
            "the flood outran the rate (at least 3x) so the bucket stayed "
            "empty", lambda: ["%d attempts in %.3f s" % (len(res), span)])
    t.check(abs(admitted - predicted) <= bound,
            "connection_rate %d/s burst %d under a flood across 2 workers "
            "admits burst + rate * span, within %.0f" % (RATE, BURST, bound),
            lambda: ["admitted %d, predicted %.1f" % (admitted, predicted)])
    lat = second.get("lat", [])
    t.check(base_refused == 0 and second.get("refused") == 0 and
            len(lat) >= SECOND_RATE * FLOOD * 0.5,
            "a second source (its own key) connecting meanwhile is never "
            "refused", lambda: ["%r" % ({k: v for k, v in second.items()
                                          if k != "lat"},)])
    t.diag("second source latency p99: %.2f ms without the flood, %.2f ms "
           "during it (%.1fx)" % (p99(base) * 1e3, p99(lat) * 1e3,
                                  p99(lat) / p99(base) if base else 0))
    t.check(p99(lat) < ptest.bound(0.25),
            "its p99 latency during the flood stays under a generous bound",
            lambda: ["p99 %.3f s" % p99(lat)])
    t.stop_portico(p)
    tot = L.totals(p)
    refused = len(res) - admitted
    t.check(tot.get("limits_refused") == refused,
            "the totals count every refused connection (%d)" % refused,
            lambda: ["%s" % tot])


if __name__ == "__main__":
    ptest.Test("limits_rate").run(main)
