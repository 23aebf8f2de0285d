#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
An origin connection kept for the client's next request carries nothing
but answers to requests (worker/http_origin.c, http_upstream_clean): bytes an
origin sends beyond a response (a body longer than its Content-Length
said, a body written for a HEAD) must never answer the next request,
which would leave the client one response behind for good. Each case:
request 1, then request 2 on the same client connection to the same
origin; request 2 gets its own answer ("second"), from a new origin
connection.

- the stray bytes (a whole response, "INJECTED") come 200 ms after
  response 1, while its origin connection waits for the next request;
- they come in the same write as a 16384-byte body, which the proxy
  reads to its exact end (relay copy: one buffer; splice: exactly the
  Content-Length), so they wait unread in the socket;
- the origin writes an 11-byte body after its answer to a HEAD.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

SECOND = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond"
INJECTED = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nINJECTED"


class StrayOrigin(ptest._Server):
    """The first connection answers its first request as <mode> says,
    with stray bytes; every later request, on any connection, gets
    SECOND."""

    def __init__(self, mode):
        self.mode = mode
        self.nconn = 0
        super().__init__()

    def heads(self, c, n, buf):
        while buf.count(b"\r\n\r\n") < n:
            d = c.recv(65536)
            if not d:
                return None
            buf += d
        return buf

    def handle(self, c):
        with self.lock:
            first = self.nconn == 0
            self.nconn += 1
        buf = self.heads(c, 1, b"")
        if buf is None:
            return
        if first and self.mode == "later":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
            time.sleep(0.2)
            c.sendall(INJECTED)
        elif first and self.mode == "same-write":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 16384\r\n\r\n")
            time.sleep(0.1)
            c.sendall(b"a" * 16384 + INJECTED)
        elif first and self.mode == "head":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n")
            time.sleep(0.05)
            c.sendall(b"hello world")
        else:
            c.sendall(SECOND)
        while True:
            buf = self.heads(c, 2, buf)
            if buf is None:
                return
            c.sendall(SECOND)
            buf = buf.split(b"\r\n\r\n", 1)[1]


def one(t, method, mode, first_method="GET"):
    o = StrayOrigin(mode)
    t.servers.append(o)
    p, port = H.start(t, extra='relay = { method = "%s"; };' % method)
    s = ptest.connect(port, timeout=ptest.bound(5))
    url = "http://%s" % o.address
    s.sendall(b"%s %s/one HTTP/1.1\r\nHost: x\r\n\r\n" % (
        first_method.encode(), url.encode()))
    c = H.Conn(s, ptest.bound(5))
    r1 = H.read_response(c, method=first_method)
    time.sleep(0.4)             # the stray bytes are there by now
    s.sendall(b"GET %s/two HTTP/1.1\r\nHost: x\r\n\r\n" % url.encode())
    try:
        r2 = H.read_response(c)
        got = r2.body
    except Exception as e:
        got = ("%s: %s" % (type(e).__name__, e)).encode()
    s.close()
    t.check(r1.status == 200 and got == b"second",
            "%s, stray bytes %s: the next request gets its own answer"
            % (method, {"later": "after the response",
                        "same-write": "in the body's write",
                        "head": "as a body to a HEAD"}[mode]),
            "response 2: %r (origin connections: %d)" % (got[:200],
                                                         o.nconn))
    t.stop_portico(p)


def main(t):
    for method in ("copy", "splice"):
        for mode in ("later", "same-write"):
            one(t, method, mode)
    one(t, "copy", "head", first_method="HEAD")


if __name__ == "__main__":
    ptest.Test("http_origin_stray").run(main)
