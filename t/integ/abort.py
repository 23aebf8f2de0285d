#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Abortive ends, for relay splice and copy: a client that resets mid-upload,
an upstream that resets mid-upload, a client that closes while the
upstream is still sending. Each time the other leg is closed promptly (no
tunnel left half-dead), the worker survives, and at exit nothing is
counted active. A reset is passed on as a reset (worker/conn.c
conn_cut): the upstream of a client that reset mid-upload sees its
connection reset, not a FIN that would end the upload as if complete,
and the client of an upstream that reset gets a reset, not a FIN.
The same through the HTTP proxy: an origin that resets inside a
response whose body runs to the close leaves its client a reset, not an
end that would pass the cut body for the whole one; and an origin that
answers 403 before the request body's end and then resets still leaves
its client the 403 (the failed write to the origin is not passed on as a
reset, which some clients' TCP stacks answer by dropping what they had
not read yet).
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

LINGER0 = struct.pack("ii", 1, 0)


class EndEcho(ptest._Server):
    """Echoes until its client ends; .ends lists how each connection
    ended: "eof" or "reset"."""

    def __init__(self, *a, **kw):
        self.ends = []
        super().__init__(*a, **kw)

    def handle(self, c):
        end = "eof"
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                c.sendall(d)
        except (ConnectionResetError, BrokenPipeError):
            end = "reset"
        with self.lock:
            self.ends.append(end)


class CutOrigin(ptest._Server):
    """An HTTP origin whose response has no length (its body runs to the
    close): a head, 100,000 body bytes, then a reset."""

    def handle(self, c):
        if ptest.recv_head(c) is None:
            return
        c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" +
                  b"c" * 100000)
        time.sleep(0.2)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)


class RstServer(ptest._Server):
    """Reads 100,000 bytes, then resets the connection."""

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

    # 1. the client resets mid-upload: the upstream leg is reset
    base = echo.active
    nends = len(echo.ends)
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
            % method, "the upstream still has %d connections"
            % echo.active)
    t.check(echo.ends[nends:] == ["reset"], "%s: ... with a reset, not "
            "a FIN that would end the upload as if complete" % method,
            echo.ends[nends:])

    # 2. the upstream resets once it read 100 KB: the client leg is
    # reset. The client sends just that and then only reads: a thread
    # still sending would take the reset's error from the socket first,
    # and the read would then see an end either way.
    s = ptest.connect(ports["rst"])
    s.sendall(os.urandom(100000))
    closed = None
    deadline = time.monotonic() + ptest.bound(5)
    while time.monotonic() < deadline:
        try:
            if s.recv(1) == b"":
                closed = "eof"
            break
        except socket.timeout:
            continue
        except ConnectionResetError:
            closed = "reset"
            break
        except OSError as e:
            closed = ptest.err_kind(e)
            break
    s.close()
    t.check(closed == "reset", "%s: an upstream reset resets the client "
            "leg, not a FIN that would read as its end" % method,
            "the client saw %s" % closed)

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


def cut_response(t):
    """An origin reset inside a body that runs to the close: the client
    gets the bytes that came and then a reset, not an end."""
    o = CutOrigin()
    t.servers.append(o)
    p, port = H.start(t)
    s = ptest.connect(port, timeout=ptest.bound(10))
    s.sendall(H.request_bytes("GET", "http://%s/cut" % o.address))
    got, end = b"", None
    try:
        while True:
            d = s.recv(65536)
            if not d:
                end = "eof"
                break
            got += d
    except ConnectionResetError:
        end = "reset"
    except OSError as e:
        end = ptest.err_kind(e)
    s.close()
    t.check(got.startswith(b"HTTP/1.1 200") and end == "reset",
            "HTTP: an origin reset inside a body that runs to the close "
            "leaves the client a reset, not an end (%d bytes came)"
            % len(got), "the client saw %s" % end)
    t.stop_portico(p)


def early_answer(t):
    """An origin that answers before the request body's end and then
    resets (it closed with the body unread): the proxy's write to it
    fails, and its client still reads the answer."""
    o = H.origin(t)
    p, port = H.start(t)
    s = ptest.connect(port, timeout=ptest.bound(10))
    s.sendall(b"POST %s/reject?rst=1 HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 50000000\r\n\r\n" % o.url.encode())
    stop = threading.Event()
    th = threading.Thread(target=pump, args=(s, 50000000, stop),
                          daemon=True)
    th.start()
    got = b""
    s.settimeout(ptest.bound(10))
    try:
        while b"nope\n" not in got:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except OSError as e:
        got += ("<%s>" % ptest.err_kind(e)).encode()
    stop.set()
    th.join(5)
    s.close()
    t.check(H.status_of(got) == 403 and got.endswith(b"nope\n"),
            "HTTP: an origin that answers 403 and resets before the "
            "request body's end: the client reads the 403", got[:300])
    t.stop_portico(p)


def main(t):
    echo = EndEcho()
    t.servers.append(echo)
    rst = RstServer()
    t.servers.append(rst)
    source = t.source_server(64 * ptest.MiB)
    for method in ("splice", "copy"):
        one_method(t, method, echo, rst, source)
    cut_response(t)
    early_answer(t)


if __name__ == "__main__":
    ptest.Test("abort").run(main)
