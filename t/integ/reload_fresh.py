#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A reload loses no fresh connection. One portico with an HTTP and a SOCKS5
listener serves, at the same time:

- HTTP clients that connect, then send their GET 1 to 100 ms later (a
  connection accepted, or still queued, when the drain starts, with no
  request byte yet);
- HTTP clients that open a connection per GET at full speed;
- SOCKS5 clients that dawdle before the greeting and between the greeting
  and the CONNECT request, then echo through the tunnel;

across 10 reloads in 10 s with one worker, then across reloads that
change `workers` (1 -> 2 -> 1 -> 2 -> 1). Every connection must get its
whole answer: 200 with the 1 KiB body byte for byte, or the SOCKS reply
and the echo. Not one closed or reset without an answer.

A slot removed by a reload closes its socket once its old worker has
drained the queue; what arrives in between moves to a live socket only
with net.ipv4.tcp_migrate_req = 1, which portico run as root sets at the
first reload that lowers `workers` (top-level `tcp_migrate_req`, default
true), and says so. Where it is 0 and cannot be set, the part that changes
`workers` is skipped, naming that need.
"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

MIGRATE = "/proc/sys/net/ipv4/tcp_migrate_req"
BODY = 1024
RELOADS = 10
PERIOD = 1.0


def migrate_value():
    try:
        with open(MIGRATE) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def http_once(port, url, dawdle):
    """One GET on a new connection; dawdle: wait 1-100 ms after the
    connect before sending it."""
    req = H.request_bytes("GET", url)

    def once(i, n):
        try:
            c = H.Conn.to(port, timeout=ptest.bound(10))
        except Exception as e:
            return False, "connect: " + ptest.err_kind(e)
        try:
            if dawdle:
                time.sleep(random.uniform(0.001, 0.1))
            c.send(req)
            r = H.read_response(c)
        except H.Closed:
            return False, "closed without an answer"
        except Exception as e:
            return False, "no answer: " + ptest.err_kind(e)
        finally:
            c.close()
        if r.status != 200:
            return False, "status %d" % r.status
        if r.body != H.pattern(BODY):
            return False, "wrong body (%d bytes)" % r.body_len
        return True, None
    return once


def socks_once(port, echo_port):
    """One SOCKS5 CONNECT that waits 0-50 ms before its greeting and
    1-100 ms between the greeting and the request, then echoes."""
    def once(i, n):
        try:
            c = S.Client.to(port, timeout=ptest.bound(10))
        except Exception as e:
            return False, "connect: " + ptest.err_kind(e)
        try:
            time.sleep(random.uniform(0, 0.05))
            m = c.greet()
            if m != S.M_NONE:
                return False, "method 0x%02x" % m
            time.sleep(random.uniform(0.001, 0.1))
            r = c.request("127.0.0.1", echo_port)
            if not S.ok5(r):
                return False, "reply %r" % (r,)
            ok, why = S.echo_check(c, b"%d.%d." % (i, n) +
                                   os.urandom(1000))
            return ok, why and "echo: " + why
        except H.Closed:
            return False, "closed without an answer"
        except Exception as e:
            return False, "no answer: " + ptest.err_kind(e)
        finally:
            c.close()
    return once


class Load:
    """The three kinds of clients, started together, stopped together."""

    def __init__(self, hport, sport, url, echo_port):
        self.done = threading.Event()
        # bounded in count and time; a full-speed client makes about
        # 400 connections a second on an idle machine
        kw = dict(per_thread=5, max_per_thread=20000, until=self.done,
                  max_seconds=ptest.bound(90))
        self.loops = {
            "HTTP, request 1-100 ms after connect": ptest.ClientLoop(
                hport, threads=8, once=http_once(hport, url, True), **kw),
            "HTTP, a connection per request at full speed": ptest.ClientLoop(
                hport, threads=3, once=http_once(hport, url, False), **kw),
            "SOCKS5, dawdling handshakes": ptest.ClientLoop(
                sport, threads=6, once=socks_once(sport, echo_port), **kw),
        }

    def start(self):
        for lp in self.loops.values():
            lp.start()
        return self

    def total(self):
        return sum(lp.total for lp in self.loops.values())

    def stop(self):
        self.done.set()
        for lp in self.loops.values():
            lp.join(ptest.bound(60))

    def kill(self):
        self.done.set()
        for lp in self.loops.values():
            lp.stop_now.set()
            lp.join(5)

    def check(self, t, label):
        for name, lp in self.loops.items():
            t.check(not lp.running(), "%s: %s clients ended" % (label, name))
            t.check(lp.total >= 30 and not lp.failures,
                    "%s: %s: every connection answered in full"
                    % (label, name), lambda lp=lp: [
                        lp.summary(), "first failures (s since start, "
                        "why): %s" % [(round(w - self.t0, 2), y)
                                      for w, y in lp.failures[:10]]])
            t.diag("%s: %s: %s" % (label, name, lp.summary()))


def reloads(t, p, label, confs):
    """One SIGHUP per PERIOD, with the configuration of each step; checks
    each step's reload is logged."""
    base = len(p.log_lines(r"reloaded "))
    t0 = time.monotonic()
    for i, conf in enumerate(confs, 1):
        if conf is not None:
            p.set_conf(conf)
        p.hup()
        time.sleep(max(0.0, t0 + i * PERIOD - time.monotonic()))
    ok = ptest.wait_for(lambda: len(p.log_lines(r"reloaded ")) >=
                        base + len(confs), ptest.bound(10))
    t.check(ok, "%s: %d SIGHUPs in %.0f s give %d reloads" % (
        label, len(confs), len(confs) * PERIOD, len(confs)),
        lambda: ["reloaded lines: %d" % (len(p.log_lines(r"reloaded ")) -
                                         base)] + ptest.tail(p.log(), 20))


def run_phase(t, p, load, label, confs):
    load.t0 = time.monotonic()
    load.start()
    t.at_exit(load.kill)
    ptest.wait_for(lambda: load.total() >= 50, ptest.bound(10))
    reloads(t, p, label, confs)
    load.stop()
    load.check(t, label)


def main(t):
    origin = H.origin(t)
    echo = t.echo_server()
    hport = ptest.free_port()
    url = origin.url + "/len?n=%d" % BODY
    http_listener = '  { address = "127.0.0.1:%d"; protocol = "http"; }' \
        % hport

    def conf(workers, sport):
        # the header timeout stays well above the dawdling and below
        # shutdown_timeout, so a drain never has to cut a fresh connection
        return S.socks_conf(t, sport, workers=workers,
                            more_listeners=[http_listener])

    p, sport = S.start(t, workers=1, more_listeners=[http_listener])

    r = H.get(hport, url)
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == H.pattern(BODY), "a GET through the HTTP listener "
            "works", lambda: H.describe(r))
    ok = S.connect5(sport, "127.0.0.1", echo.port)
    ok[1].close()
    t.check(S.ok5(ok[0]), "a SOCKS5 CONNECT works", repr(ok[0]))

    load = Load(hport, sport, url, echo.port)
    run_phase(t, p, load, "one worker, %d reloads" % RELOADS,
              [None] * RELOADS)

    before = migrate_value()
    settable = before == 0 and os.geteuid() == 0 and \
        os.access(MIGRATE, os.W_OK)
    t.diag("net.ipv4.tcp_migrate_req is %s (euid %d)" % (
        before, os.geteuid()))
    if before != 1 and not settable:
        t.skip("reloads changing workers 1 -> 2 -> 1 -> 2 -> 1 lose no "
               "fresh connection", "needs net.ipv4.tcp_migrate_req = 1 "
               "(Linux >= 5.14; portico sets it when run as root)",
               need="tcp_migrate_req")
    else:
        counts = (2, 1, 2, 1)
        load = Load(hport, sport, url, echo.port)
        run_phase(t, p, load, "workers 1 -> 2 -> 1 -> 2 -> 1",
                  [conf(n, sport) for n in counts])
        w = p.wait_workers(1, ptest.bound(10))
        t.check(bool(w) and sorted(w) == [0], "one worker runs at the end",
                lambda: "children %s" % p.all_children())
        if settable:
            t.check(migrate_value() == 1 and p.log_lines(
                r"workers 2 -> 1: net\.ipv4\.tcp_migrate_req set to 1"),
                "the first reload to fewer workers set "
                "net.ipv4.tcp_migrate_req to 1 and said so",
                lambda: ["value now %s" % migrate_value()] +
                ptest.tail(p.log(), 20))

    t.check(not origin.bad, "the origin saw no bad request",
            lambda: origin.bad[:10])
    gone = ptest.wait_for(lambda: not p.draining(), ptest.bound(15))
    t.check(gone, "the old generations are gone",
            lambda: str(p.all_children()))
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("reload_fresh").run(main)
