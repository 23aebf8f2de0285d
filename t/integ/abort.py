#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Abortive ends, for relay splice and copy: a client that resets mid-upload,
an upstream that resets mid-upload, a client that closes while the
upstream is still sending. Each time the other leg is closed promptly (no
tunnel left half-dead), the worker survives, and at exit nothing is
counted active.
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

LINGER0 = struct.pack("ii", 1, 0)


class RstServer(ptest._Server):
    """Reads ~100 KB, then resets the connection."""

    def handle(self, c):
        n = 0
        while n < 100000:
            d = c.recv(65536)
            if not d:
                return
            n += len(d)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)


def pump(sock, nbytes, stop):
    """Sends up to nbytes until stop is set or the socket fails (never
    blocked for long, so that stop is seen)."""
    block = os.urandom(65536)
    sent = 0
    sock.settimeout(0.1)
    try:
        while sent < nbytes and not stop.is_set():
            try:
                sent += sock.send(block)
            except socket.timeout:
                continue
    except OSError:
        pass


def one_method(t, method, echo, rst, source):
    ports = dict(echo=ptest.free_port(), rst=ptest.free_port(),
                 src=ptest.free_port())
    if os.path.exists(t.path("error.log")):
        os.rename(t.path("error.log"), t.path("error-before-%s.log" % method))
    conf = t.conf("forward", WORKERS=1, RELAY=method,
                  LISTENERS=ptest.listeners(
                      ("127.0.0.1:%d" % ports["echo"], echo.address),
                      ("127.0.0.1:%d" % ports["rst"], rst.address),
                      ("127.0.0.1:%d" % ports["src"], source.address)))
    p = t.portico(conf)
    wpid = p.workers().get(0)

    # 1. the client resets mid-upload: the upstream leg is closed
    base = echo.active
    s = ptest.connect(ports["echo"])
    stop = threading.Event()
    th = threading.Thread(target=pump, args=(s, 64 * ptest.MiB, stop),
                          daemon=True)
    th.start()
    ptest.wait_for(lambda: echo.active > base, ptest.bound(5))
    time.sleep(0.3)
    stop.set()
    th.join(5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)
    s.close()
    gone = ptest.wait_for(lambda: echo.active == base, ptest.bound(5))
    t.check(gone, "%s: a client reset mid-upload closes the upstream leg"
            % method, "echo server still has %d connections"
            % echo.active)

    # 2. the upstream resets mid-upload: the client leg is closed
    s = ptest.connect(ports["rst"])
    stop = threading.Event()
    th = threading.Thread(target=pump, args=(s, 64 * ptest.MiB, stop),
                          daemon=True)
    th.start()
    closed = False
    deadline = time.monotonic() + ptest.bound(5)
    while time.monotonic() < deadline:
        try:
            closed = s.recv(1) == b""
            break
        except socket.timeout:
            continue
        except ConnectionResetError:
            closed = True
            break
        except OSError as e:
            t.diag("upstream reset: %s" % ptest.err_kind(e))
            break
    stop.set()
    th.join(5)
    s.close()
    t.check(closed, "%s: an upstream reset mid-upload closes the client "
            "leg" % method)

    # 3. the client closes (unread data: RST) while the upstream sends
    base = source.active
    s = ptest.connect(ports["src"])
    got = ptest.recv_exact(s, ptest.MiB)
    s.close()
    gone = ptest.wait_for(lambda: source.active == base, ptest.bound(5))
    t.check(len(got) == ptest.MiB and gone,
            "%s: a client gone mid-download closes the upstream leg"
            % method, "got %d, source still has %d connections"
            % (len(got), source.active))

    ok, why = ptest.echo_once(ports["echo"])
    t.check(ok, "%s: the forwarder works afterwards" % method, why)
    t.check(p.workers().get(0) == wpid,
            "%s: the same worker, not a respawned one" % method,
            "before %s, now %s" % (wpid, p.workers()))
    rc = t.stop_portico(p)
    t.check(rc == 0, "%s: exit status 0" % method, "exit %s" % rc)
    tot = p.log_lines(r"totals: ")
    m = re.search(r"active=(\d+)", tot[-1]) if tot else None
    t.check(m is not None and m.group(1) == "0",
            "%s: exit totals: active=0" % method, str(tot[-1:]))


def main(t):
    echo = t.echo_server()
    rst = RstServer()
    t.servers.append(rst)
    source = t.source_server(64 * ptest.MiB)
    for method in ("splice", "copy"):
        one_method(t, method, echo, rst, source)


if __name__ == "__main__":
    ptest.Test("abort").run(main)
