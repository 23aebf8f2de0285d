#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The TCP forwarder carries bytes exactly, both ways, for relay method
splice and copy, over IPv4 and IPv6: 10 MiB through an echo server with a
half-close (the client shuts down its write side after the last byte and
still receives every echoed byte, then EOF), parallel transfers, a
download the server ends, an upload to a sink, and a target that refuses.
The exit totals count exactly what went through.
"""
import hashlib
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

BIG = 10 * ptest.MiB


def totals(p):
    lines = p.log_lines(r"totals: ")
    if not lines:
        return None
    d = {}
    for k, v in re.findall(r"(\w+)=(\d+)", lines[-1]):
        d[k] = int(v)
    return d


def one_method(t, method, echo4, echo6, sink, source):
    ports = dict(p4=ptest.free_port(), dead=ptest.free_port(),
                 src=ptest.free_port(), sink=ptest.free_port())
    pairs = [("127.0.0.1:%d" % ports["p4"], echo4.address),
             ("127.0.0.1:%d" % ports["dead"],
              "127.0.0.1:%d" % ptest.free_port()),
             ("127.0.0.1:%d" % ports["src"], source.address),
             ("127.0.0.1:%d" % ports["sink"], sink.address)]
    if echo6:
        ports["p6"] = ptest.free_port("::1")
        pairs.append(("[::1]:%d" % ports["p6"], echo6.address))
    if os.path.exists(t.path("error.log")):
        os.rename(t.path("error.log"), t.path("error-before-%s.log" % method))
    p = t.portico(t.conf("forward", LISTENERS=ptest.listeners(*pairs),
                         RELAY=method, WORKERS=2))
    sent_in = 0       # client -> upstream bytes we made
    sent_out = 0      # upstream -> client bytes we expect
    conns = 0

    # 10 MiB each way through IPv4, with half-close
    x = ptest.Transfer(ports["p4"], BIG).start()
    conns += 1
    x.wait(ptest.bound(60))
    t.check(x.ok(), "%s: 10 MiB both ways over 127.0.0.1, half-close, "
            "sha256 equal" % method, lambda: [x.describe()] +
            ptest.tail(p.log(), 20))
    sent_in += BIG
    sent_out += BIG
    x.close()

    if echo6:
        x = ptest.Transfer(ports["p6"], BIG, host="::1").start()
        conns += 1
        x.wait(ptest.bound(60))
        t.check(x.ok(), "%s: 10 MiB both ways over [::1], half-close, "
                "sha256 equal" % method, lambda: [x.describe()] +
                ptest.tail(p.log(), 20))
        sent_in += BIG
        sent_out += BIG
        x.close()
    else:
        t.skip("%s: 10 MiB over [::1]" % method, "no IPv6 loopback")

    # four at once, 2 MiB each, small writes on one of them
    xs = [ptest.Transfer(ports["p4"], 2 * ptest.MiB,
                         chunk=(1000 if i == 0 else 65536)).start()
          for i in range(4)]
    conns += 4
    for x in xs:
        x.wait(ptest.bound(60))
    bad = [x.describe() for x in xs if not x.ok()]
    t.check(not bad, "%s: four parallel 2 MiB transfers are exact" % method,
            bad)
    for x in xs:
        x.close()
    sent_in += 8 * ptest.MiB
    sent_out += 8 * ptest.MiB

    # slow readers: the upstream finishes (and closes) while the proxy
    # still holds data for the client; the EOF must follow the last byte
    # (one at a time: a race, so six tries)
    bad = []
    for i in range(6):
        release = threading.Event()
        x = ptest.Transfer(ports["p4"], 8 * ptest.MiB, slow_until=release,
                           slow_sleep=0.005).start()
        conns += 1
        ptest.wait_for(lambda: x.received > 0, ptest.bound(5))
        time.sleep(0.3)
        release.set()
        x.wait(ptest.bound(5))
        if not x.ok():
            bad.append("try %d: %s" % (i + 1, x.describe()))
        x.close()
        sent_in += 8 * ptest.MiB
        sent_out += 8 * ptest.MiB
    t.check(not bad, "%s: 8 MiB through a slow reader, 6 times: exact, "
            "and EOF follows the last byte within %.0f s"
            % (method, ptest.bound(5)), lambda: bad)

    # no half-close: the client reads everything back, then closes
    x = ptest.Transfer(ports["p4"], ptest.MiB, half_close=False).start()
    conns += 1
    x.wait(ptest.bound(30))
    t.check(x.ok(), "%s: 1 MiB echoed without half-close" % method,
            x.describe())
    x.close()
    sent_in += ptest.MiB
    sent_out += ptest.MiB

    # the server sends and closes first: the client gets it all, then EOF
    s = ptest.connect(ports["src"], timeout=ptest.bound(20))
    conns += 1
    h, n, eof = hashlib.sha256(), 0, False
    try:
        while n <= source.nbytes:
            d = s.recv(65536)
            if not d:
                eof = True
                break
            h.update(d)
            n += len(d)
    except OSError as e:
        t.diag("download: %s" % e)
    s.close()
    t.check(eof and n == source.nbytes and h.hexdigest() == source.digest,
            "%s: a %d-byte download the server closes arrives exact, then "
            "EOF" % (method, source.nbytes),
            "got %d bytes, eof=%s, sha equal=%s" % (
                n, eof, h.hexdigest() == source.digest))
    sent_out += source.nbytes

    # upload to a sink: the sink sees every byte, then the client sees EOF
    before = len(sink.results)
    s = ptest.connect(ports["sink"], timeout=ptest.bound(20))
    conns += 1
    data = os.urandom(3 * ptest.MiB)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        end = s.recv(1)
    except OSError as e:
        end = repr(e)
    s.close()
    ptest.wait_for(lambda: len(sink.results) > before, ptest.bound(10))
    want = (len(data), hashlib.sha256(data).hexdigest())
    t.check(end == b"" and want in sink.results[before:],
            "%s: a 3 MiB upload reaches the sink exact, then EOF" % method,
            "client end %r, sink saw %s" % (end, sink.results[before:]))
    sent_in += len(data)

    # a target that refuses: the client's connection is closed, no hang
    s = ptest.connect(ports["dead"], timeout=ptest.bound(15))
    conns += 1
    closed = False
    try:
        closed = s.recv(1) == b""
    except ConnectionResetError:
        closed = True
    except OSError as e:
        t.diag("dead target: %s" % ptest.err_kind(e))
    s.close()
    t.check(closed, "%s: a refused target closes the client connection"
            % method)

    ok, why = ptest.echo_once(ports["p4"])
    conns += 1
    sent_in += 32
    sent_out += 32
    t.check(ok, "%s: the forwarder still works afterwards" % method, why)

    rc = t.stop_portico(p)
    t.check(rc == 0, "%s: SIGTERM: exit status 0" % method, "exit %s" % rc)
    tot = totals(p)
    t.check(tot is not None and tot.get("accepted") == conns and
            tot.get("bytes_in") == sent_in and tot.get("bytes_out") == sent_out,
            "%s: exit totals: accepted=%d bytes_in=%d bytes_out=%d"
            % (method, conns, sent_in, sent_out),
            lambda: ["totals lines: %s" % p.log_lines("totals: ")])
    t.check(tot is not None and tot.get("active") == 0,
            "%s: exit totals: active=0" % method, str(tot))


def main(t):
    echo4 = t.echo_server("127.0.0.1")
    echo6 = t.echo_server("::1") if ptest.have_ipv6() else None
    sink = t.sink_server()
    source = t.source_server(3 * ptest.MiB + 12345)
    for method in ("splice", "copy"):
        one_method(t, method, echo4, echo6, sink, source)
    t.check(not echo4.errors and not (echo6 and echo6.errors),
            "the echo servers saw no error",
            lambda: echo4.errors + (echo6.errors if echo6 else []))


if __name__ == "__main__":
    ptest.Test("forward_bytes").run(main)
