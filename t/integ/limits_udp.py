#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
udp_bytes on a SOCKS5 UDP association (the real limits.so): a class
matching protocol "udp" with udp_bytes = 256 KiB/s and a burst of 16 KiB.
A client offers 1,000-byte datagrams at about 2 MB/s for 3 s to a UDP
origin that only counts. The relay reads the association's datagrams
only as the bucket allows (byte budgets), so what reaches the origin
over the last two seconds is the rate, within 2%: predicted bytes
against delivered ones. What the client sent beyond it is lost in the
kernel's socket buffer, not by the module: reported, not asserted (the
module ABI has no per-datagram hook that could drop and count them; the
closing report says so). A TCP tunnel through the same listener is not
in the class (protocol udp only) and is not slowed.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import sockstest as S  # noqa: E402
import limitstest as L  # noqa: E402

RATE = 256 * 1024
BURST = 16384
SIZE = 1000
OFFER = 2000            # datagrams per second
SECONDS = 3.0

CONF = """
workers = 1;
error_log = "@TMP@/error.log";
shutdown_timeout = 5;
listeners = (
  { name = "socks"; address = "127.0.0.1:@P@"; protocol = "socks5"; }
);
modules = ( { name = "limits"; path = "@SO@";
  classes = ( { name = "udp"; match = { protocol = "udp"; };
                udp_bytes = @RATE@; udp_bytes_burst = @BURST@; } ); } );
"""


class UdpSink:
    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.meter = L.Meter()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping.is_set():
            try:
                data, _ = self.sock.recvfrom(70000)
            except socket.timeout:
                continue
            except OSError:
                return
            self.meter.feed(len(data))

    def stop(self):
        self.stopping.set()
        self.thread.join(2)
        self.sock.close()


def main(t):
    why = L.missing()
    if why:
        t.skip("limits module scenarios", why)
        return
    sink = UdpSink()
    t.at_exit(sink.stop)
    port = ptest.free_port()
    p = t.portico(ptest.fill(CONF, TMP=t.tmp, SO=L.LIMITS_SO, P=port,
                             RATE=RATE, BURST=BURST))
    u = S.Udp(port)
    t.check(u.ok(), "the UDP association opens", lambda: [u.describe()])
    if not u.ok():
        return
    payload = os.urandom(SIZE)
    sent = 0
    t0 = time.monotonic()
    while time.monotonic() < t0 + SECONDS and sent < OFFER * SECONDS:
        delay = t0 + sent / OFFER - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        u.send("127.0.0.1", sink.port, payload)
        sent += 1
    time.sleep(0.3)
    a, b = t0 + 1.0, t0 + SECONDS
    got = sink.meter.at(b) - sink.meter.at(a)
    predicted = RATE * (b - a)
    total = sink.meter.n
    t.diag("udp_bytes: %d datagrams offered (%d bytes), %d bytes delivered; "
           "in [1 s, %g s]: %d delivered, %.0f predicted (%+.2f%%); "
           "whole run: predicted burst + rate * %.2f s = %.0f, delivered "
           "%d; lost in the kernel's buffer: %d bytes" % (
               sent, sent * SIZE, total, SECONDS, got, predicted,
               100.0 * (got - predicted) / predicted, SECONDS,
               BURST + RATE * SECONDS, total, sent * SIZE - total))
    t.check(abs(got - predicted) <= 0.02 * predicted,
            "udp_bytes %d B/s: the payload relayed is the rate within 2%%"
            % RATE, lambda: ["%d vs %.0f" % (got, predicted)])
    t.check(total <= BURST + RATE * (SECONDS + 0.3) + 2 * 8192,
            "never more than burst + rate * time in all",
            lambda: ["%d bytes" % total])
    u.close()

    # A TCP tunnel on the same listener is not in the class.
    src = t.source_server(4 * 1024 * 1024)
    rep, c = S.connect5(port, "127.0.0.1", src.port)
    n = 0
    t1 = time.monotonic()
    if S.ok5(rep):
        c.sock.settimeout(ptest.bound(10))
        n = len(c.buf)
        while True:
            d = c.sock.recv(262144)
            if not d:
                break
            n += len(d)
    dt = time.monotonic() - t1
    c.close()
    t.check(n == 4 * 1024 * 1024 and dt < ptest.bound(5),
            "a TCP tunnel (not protocol udp) carries 4 MiB unlimited",
            lambda: ["%d bytes in %.2f s" % (n, dt)])
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("limits_udp").run(main)
