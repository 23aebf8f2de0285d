#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The tunnel relay reads while a write waits (a ring buffer in copy mode,
the room left in the pipe in splice mode): bytes must still arrive exact
and in order when the receiver is slow and reads odd sizes, so that the
ring wraps and the pipe fills. Through an HTTP CONNECT tunnel, for
relay.method "splice", "copy" and "auto" (buffer_size 65536: writes that
large are cut short when the socket fills, which is what makes the ring
wrap; a wrong second segment of the ring fails the copy checks; with
"auto" the odd sizes and pauses turn a direction from ring to pipe and
back, and bytes held in one must leave before the other's):

- upload: the client writes 8 MiB in writes of random sizes; the origin
  reads it slowly, in random small pieces: sha256 equal;
- download: the origin writes 8 MiB in random sizes; the client reads it
  slowly, in random small pieces: sha256 equal;
- both at once through an origin that echoes slowly: sha256 equal.
"""
import hashlib
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

SIZE = 8 * ptest.MiB


def slow_read(s, n, rnd, sink, deadline):
    """Reads <n> bytes in random pieces with short pauses; feeds <sink>."""
    got = 0
    # Nothing read at first: every buffer on the way fills, and the proxy
    # must hold bytes while its writes block.
    time.sleep(0.3)
    while got < n and time.monotonic() < deadline:
        if rnd.random() < 0.01:
            time.sleep(0.01)
        d = s.recv(min(n - got, rnd.randint(1, 9000)))
        if not d:
            break
        sink(d)
        got += len(d)
    return got


def odd_write(s, data, rnd):
    off = 0
    while off < len(data):
        k = rnd.randint(1, 70000)
        s.sendall(data[off:off + k])
        off += k


class Origin(ptest._Server):
    """/up: reads SIZE slowly and answers its sha256; /down: sends <data>
    in odd writes; /echo: sends back what it reads, slowly."""

    def __init__(self, data):
        self.data = data
        self.results = {}
        super().__init__()

    def handle(self, c):
        rnd = random.Random(7)
        # A small receive buffer: the proxy's writes block, and it has
        # to hold bytes while it goes on reading.
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 131072)
        mode = c.recv(5)
        deadline = time.monotonic() + ptest.bound(60)
        if mode == b"up___":
            h = hashlib.sha256()
            n = slow_read(c, SIZE, rnd, h.update, deadline)
            c.sendall(h.hexdigest().encode() if n == SIZE else b"short")
        elif mode == b"down_":
            odd_write(c, self.data, rnd)
            c.shutdown(socket.SHUT_WR)
            c.recv(1)
        elif mode == b"echo_":
            slow_read(c, SIZE, rnd, lambda d: c.sendall(d), deadline)
            c.shutdown(socket.SHUT_WR)
            c.recv(1)


def tunnel(port, origin):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 131072)
    s.settimeout(ptest.bound(60))
    s.connect(("127.0.0.1", port))
    conn = H.Conn(s, ptest.bound(60))
    conn.send(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
        origin.address.encode(), origin.address.encode()))
    head = conn.read_head()
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError("CONNECT answered %r" % head[:40])
    if conn.buf:
        raise RuntimeError("bytes after the 200: %r" % bytes(conn.buf[:20]))
    return conn.sock


def one_method(t, method, origin, data):
    want = hashlib.sha256(data).hexdigest()
    p, port = H.start(t, extra='relay = { method = "%s"; buffer_size = '
                      '65536; };' % method)
    w0 = p.workers()
    rnd = random.Random(11)

    # upload
    try:
        s = tunnel(port, origin)
        s.sendall(b"up___")
        odd_write(s, data, rnd)
        s.settimeout(ptest.bound(60))
        got = b""
        while len(got) < 64:
            d = s.recv(64)
            if not d:
                break
            got += d
        s.close()
        res = got.decode(errors="replace")
    except Exception as e:
        res = "%s: %s" % (type(e).__name__, e)
    t.check(res == want, "%s: 8 MiB up in odd writes, read slowly in odd "
            "pieces at the origin: sha256 equal" % method, res)

    # download
    try:
        s = tunnel(port, origin)
        s.sendall(b"down_")
        h = hashlib.sha256()
        n = slow_read(s, SIZE, rnd, h.update,
                      time.monotonic() + ptest.bound(60))
        s.close()
        res = h.hexdigest() if n == SIZE else "got %d bytes" % n
    except Exception as e:
        res = "%s: %s" % (type(e).__name__, e)
    t.check(res == want, "%s: 8 MiB down in odd writes, read slowly in odd "
            "pieces by the client: sha256 equal" % method, res)

    # both ways through a slow echo
    out = {}
    try:
        s = tunnel(port, origin)
        s.sendall(b"echo_")

        def writer():
            try:
                odd_write(s, data, random.Random(5))
            except OSError as e:
                out["werr"] = str(e)
        th = threading.Thread(target=writer, daemon=True)
        th.start()
        h = hashlib.sha256()
        n = slow_read(s, SIZE, rnd, h.update,
                      time.monotonic() + ptest.bound(60))
        th.join(ptest.bound(30))
        s.close()
        res = h.hexdigest() if n == SIZE else "got %d bytes %r" % (n, out)
    except Exception as e:
        res = "%s: %s" % (type(e).__name__, e)
    t.check(res == want, "%s: 8 MiB both ways at once through a slow echo: "
            "sha256 equal" % method, res)
    H.finish(t, p, w0, "%s: " % method)


def main(t):
    data = os.urandom(SIZE)
    origin = Origin(data)
    t.at_exit(origin.stop)
    for method in ("splice", "copy", "auto"):
        one_method(t, method, origin, data)


if __name__ == "__main__":
    ptest.Test("relay_overlap").run(main)
