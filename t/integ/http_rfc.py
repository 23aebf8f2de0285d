#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
What RFC 9110/9112 require of a forwarding proxy beyond framing, each
against a scripted origin that records every request head it gets and
answers with fixed bytes:

- a response without Date gets one (IMF-fixdate), one with Date keeps
  it alone (RFC 9110 6.6.1); so do the proxy's own answers;
- two equal Content-Length fields go on as one; a 204's Content-Length
  is dropped and the connection still carries the next request (8.6);
- a coded body ("Transfer-Encoding: gzip" to the close, or "gzip, chunked")
  keeps its Transfer-Encoding for an HTTP/1.1 client, and is a 502 for
  an HTTP/1.0 one, never bare coded bytes (RFC 9112 6.1);
- an HTTP/1.2 request is served as HTTP/1.1 (RFC 9110 2.5); a 100 and
  a 16 KB final head that arrive in one read both go on;
- an HTTP/1.0 client is closed after each response even when it asks for
  keep-alive (RFC 9112 9.3); its Upgrade is ignored, the request going on
  as a plain GET (RFC 9110 7.8); its Expect: 100-continue is not passed
  on (10.1.1); Via names 1.0 both ways (7.6.3);
- OPTIONS to an authority with no path reaches the origin as "OPTIONS *"
  (RFC 9112 3.2.4);
- TRACE answered by the proxy (Max-Forwards: 0) leaves Cookie and
  Authorization out of its echo (RFC 9110 9.3.8);
- "OPTIONS *" is asked of the proxy itself: 200 with Allow, and the
  connection goes on (RFC 9110 9.3.7);
- a request-target longer than max_header_size is a 414 (RFC 9112 3);
- an origin whose head comes with a malformed chunk size: 502, since no
  byte of the response had gone to the client; one that sends 100
  Continue and closes: the 100, then a 502 (a final response may follow
  an interim one);
- a head of 300 KB, far over max_header_size, sent whole: the 431 arrives
  and then a FIN, not a reset (the proxy drops what it did not read
  before closing, RFC 9112 9.6's half-close), and the client's send of
  the rest completes.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

DATE = b"Date: Mon, 30 Nov 2026 10:00:00 GMT\r\n"
ANSWERS = {
    "/nodate": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "/dated": b"HTTP/1.1 200 OK\r\n" + DATE + b"Content-Length: 2\r\n\r\nok",
    "/dupcl": b"HTTP/1.1 200 OK\r\n" + DATE +
    b"Content-Length: 2\r\nContent-Length: 2\r\n\r\nok",
    "/204cl": b"HTTP/1.1 204 No Content\r\n" + DATE +
    b"Content-Length: 5\r\n\r\n",
    "/gzip": b"HTTP/1.1 200 OK\r\n" + DATE +
    b"Transfer-Encoding: gzip\r\n\r\nGZDATA",
    "/v10": b"HTTP/1.0 200 OK\r\n" + DATE + b"Content-Length: 2\r\n\r\nok",
    "/badchunk": b"HTTP/1.1 200 OK\r\n" + DATE +
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\nbad\r\n",
    "/continue-then-close": b"HTTP/1.1 100 Continue\r\n\r\n",
    "/100-bighead": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n" +
    DATE + b"X-Big: " + b"b" * 16200 + b"\r\nContent-Length: 2\r\n\r\nok",
    "/gzipchunked": b"HTTP/1.1 200 OK\r\n" + DATE +
    b"Transfer-Encoding: gzip, chunked\r\n\r\n6\r\nGZDATA\r\n0\r\n\r\n",
}
CLOSES = {"/gzip", "/badchunk", "/continue-then-close"}


class Scripted(ptest._Server):
    """Reads request heads (and Content-Length bodies), records each head
    by its request line's path, answers from ANSWERS (200 "ok" when the
    path is not there)."""

    def __init__(self):
        self.heads = []
        super().__init__()

    def handle(self, c):
        c.settimeout(ptest.bound(10))
        buf = b""
        while True:
            head, buf = H.next_head(c, buf)
            if head is None:
                return
            text = head.decode("latin-1")
            with self.lock:
                self.heads.append(text)
            n = 0
            for line in text.split("\r\n")[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "content-length":
                    n = int(v.strip())
            while len(buf) < n:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            buf = buf[n:]
            target = text.split(" ")[1] if " " in text else ""
            path = "/" + target.split("/", 3)[3] if target.count("/") >= 3 \
                else target
            path = path.split("?")[0]
            c.sendall(ANSWERS.get(path, b"HTTP/1.1 200 OK\r\n" + DATE +
                                  b"Content-Length: 2\r\n\r\nok"))
            if path in CLOSES:
                return

    def head_for(self, needle):
        with self.lock:
            return [h for h in self.heads if needle in h.split("\r\n")[0]]


def read_to_end(c):
    """What <c> receives until EOF: (bytes, 'eof'|'timeout'|the error)."""
    got = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                return got, "eof"
            got += d
    except socket.timeout:
        return got, "timeout"
    except OSError as e:
        return got, ptest.err_kind(e)


def exchange(port, data, timeout=None):
    """Sends <data> on a new connection, reads until EOF (or timeout):
    (bytes, how)."""
    c = socket.create_connection(("127.0.0.1", port))
    c.settimeout(timeout or ptest.bound(5))
    c.sendall(data)
    got, how = read_to_end(c)
    c.close()
    return got, how


def fields_of(resp):
    head = resp.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    return [line for line in head.split("\r\n")[1:]]


def named(resp, name):
    return [f.split(":", 1)[1].strip() for f in fields_of(resp)
            if f.split(":", 1)[0].strip().lower() == name.lower()]


def main(t):
    o = Scripted()
    t.servers.append(o)
    url = "http://127.0.0.1:%d" % o.port
    p, port = H.start(t, http={"max_header_size": 8192})
    w0 = p.workers()

    def req(method, path, headers=(), version="HTTP/1.1", body=None):
        return H.request_bytes(method, url + path, headers, body,
                               version=version)

    # -- Date -------------------------------------------------------------
    got, _ = exchange(port, req("GET", "/nodate", [("Connection", "close")]))
    d = named(got, "date")
    t.check(got.startswith(b"HTTP/1.1 200") and len(d) == 1 and
            time.strptime(d[0], "%a, %d %b %Y %H:%M:%S GMT") is not None,
            "a response without Date gets one, in IMF-fixdate",
            lambda: [got[:400]])
    got, _ = exchange(port, req("GET", "/dated", [("Connection", "close")]))
    t.check(named(got, "date") == ["Mon, 30 Nov 2026 10:00:00 GMT"],
            "the origin's Date is kept and none added", lambda: [got[:400]])
    got, _ = exchange(port, b"GET /local HTTP/1.1\r\nHost: x\r\n\r\n")
    t.check(got.startswith(b"HTTP/1.1 400") and len(named(got, "date")) == 1,
            "the proxy's own 400 carries a Date", lambda: [got[:400]])

    # -- Content-Length ---------------------------------------------------
    got, _ = exchange(port, req("GET", "/dupcl", [("Connection", "close")]))
    t.check(named(got, "content-length") == ["2"] and got.endswith(b"ok"),
            "two equal Content-Length fields go on as one",
            lambda: [got[:400]])
    got, how = exchange(port, req("GET", "/204cl") +
                        req("GET", "/dated", [("Connection", "close")]))
    first, _, rest = got.partition(b"\r\n\r\n")
    t.check(first.startswith(b"HTTP/1.1 204") and
            b"content-length" not in first.lower() and
            rest.startswith(b"HTTP/1.1 200") and rest.endswith(b"ok"),
            "a 204's Content-Length is dropped; the next response on the "
            "connection follows it", lambda: [got[:600], how])

    # -- a coded body to the close ------------------------------------------
    got, how = exchange(port, req("GET", "/gzip"))
    t.check(got.startswith(b"HTTP/1.1 200") and
            named(got, "transfer-encoding") == ["gzip"] and
            got.endswith(b"\r\n\r\nGZDATA") and how == "eof",
            "Transfer-Encoding: gzip to the close: the coding goes on to an "
            "HTTP/1.1 client, the body to the close",
            lambda: [got[:400], how])
    got, how = exchange(port, req("GET", "/gzip", version="HTTP/1.0"))
    t.check(got.startswith(b"HTTP/1.1 502") and b"GZDATA" not in got,
            "the same to an HTTP/1.0 client: 502, no coded bytes",
            lambda: [got[:400], how])
    got, how = exchange(port, req("GET", "/gzipchunked", version="HTTP/1.0"))
    t.check(got.startswith(b"HTTP/1.1 502") and b"GZDATA" not in got,
            "Transfer-Encoding: gzip, chunked to an HTTP/1.0 client: 502, "
            "not the coded bytes without their chunks",
            lambda: [got[:400], how])

    # -- a 100 and a 16 KB final head in one write ---------------------------
    # (on a proxy with the default max_header_size, 64 KiB)
    port2 = ptest.free_port()
    p2 = t.portico(H.http_conf(t, port2).replace(
        "/portico.pid", "/big.pid").replace("/error.log", "/big-error.log"),
        conf_name="big.conf")
    got, how = exchange(port2, req("GET", "/100-bighead",
                                   [("Connection", "close")]))
    t.stop_portico(p2)
    t.check(got.startswith(b"HTTP/1.1 100 ") and b"\r\nHTTP/1.1 200 " in got
            and got.endswith(b"\r\n\r\nok"),
            "a 100 Continue and a 16 KB final head in one write: both go "
            "on (the final head is not refused for the 100's buffer)",
            lambda: [got[:200], got[-100:], how])

    # -- a later minor version is served as 1.1 (RFC 9110 2.5) ---------------
    got, how = exchange(port, req("GET", "/dated", [("Connection", "close")],
                                  version="HTTP/1.2"))
    t.check(got.startswith(b"HTTP/1.1 200") and got.endswith(b"ok"),
            "an HTTP/1.2 request is served as HTTP/1.1 (RFC 9110 2.5), not "
            "refused with 505", lambda: [got[:300], how])

    # -- HTTP/1.0 clients -------------------------------------------------
    got, how = exchange(port, req("GET", "/dated?ka",
                                  [("Connection", "keep-alive")],
                                  version="HTTP/1.0"))
    t.check(got.startswith(b"HTTP/1.1 200") and got.endswith(b"ok") and
            "close" in [v.lower() for v in named(got, "connection")] and
            how == "eof",
            "an HTTP/1.0 client asking for keep-alive: Connection: close, "
            "and the proxy closes after the response", lambda: [got, how])
    before = len(o.head_for("/ws10"))
    got, how = exchange(port, req(
        "GET", "/ws10", [("Connection", "Upgrade"), ("Upgrade", "websocket"),
                         ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                         ("Sec-WebSocket-Version", "13")],
        version="HTTP/1.0"))
    heads = o.head_for("/ws10")[before:]
    t.check(got.startswith(b"HTTP/1.1 200") and len(heads) == 1 and
            "upgrade:" not in heads[0].lower(),
            "an HTTP/1.0 request's Upgrade is ignored: a plain GET, no "
            "Upgrade at the origin, 200 (not 101)",
            lambda: [got[:300], heads])
    got, _ = exchange(port, req("POST", "/expect10",
                                [("Expect", "100-continue")],
                                version="HTTP/1.0", body=b"hello"))
    heads = o.head_for("/expect10")
    t.check(got.startswith(b"HTTP/1.1 200") and len(heads) == 1 and
            "expect:" not in heads[0].lower() and
            "via: 1.0 portico" in heads[0].lower(),
            "an HTTP/1.0 request: Expect not passed on, Via: 1.0 portico",
            lambda: [got[:300], heads])
    got, _ = exchange(port, req("GET", "/v10", [("Connection", "close")]))
    t.check(named(got, "via") == ["1.0 portico"],
            "an HTTP/1.0 response reaches the client with Via: 1.0 portico",
            lambda: [got[:300]])
    got, _ = exchange(port, req("GET", "/dated?v11", [("Connection",
                                                       "close")]))
    heads = o.head_for("/dated?v11")
    t.check(named(got, "via") == ["1.1 portico"] and heads and
            "via: 1.1 portico" in heads[0].lower(),
            "HTTP/1.1 both ways: Via: 1.1 portico", lambda: [got, heads])

    # -- OPTIONS and TRACE ------------------------------------------------
    got, _ = exchange(port, b"OPTIONS %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                      b"Connection: close\r\n\r\n" % (url.encode(), o.port))
    heads = o.head_for("OPTIONS")
    t.check(got.startswith(b"HTTP/1.1 200") and heads and
            heads[-1].startswith("OPTIONS * HTTP/1.1\r\n"),
            "OPTIONS to an authority with no path: \"OPTIONS *\" at the "
            "origin", lambda: [got[:300], heads])
    got, _ = exchange(port, req("TRACE", "/t", [
        ("Max-Forwards", "0"), ("Cookie", "session=secret"),
        ("Authorization", "Basic c2VjcmV0"), ("X-Kept", "yes"),
        ("Connection", "close")]))
    t.check(got.startswith(b"HTTP/1.1 200") and b"X-Kept: yes" in got and
            b"secret" not in got and b"c2VjcmV0" not in got and
            len(named(got, "date")) == 1,
            "TRACE answered by the proxy: Cookie and Authorization left "
            "out of the echo, a Date", lambda: [got])

    got, how = exchange(port, b"OPTIONS * HTTP/1.1\r\nHost: proxy\r\n\r\n" +
                        req("GET", "/dated?after", [("Connection", "close")]))
    first, _, rest = got.partition(b"\r\n\r\n")
    t.check(first.startswith(b"HTTP/1.1 200") and
            "CONNECT" in (named(got, "allow") or [""])[0] and
            rest.startswith(b"HTTP/1.1 200") and rest.endswith(b"ok"),
            "OPTIONS * to the proxy: 200 with Allow, then the next request "
            "on the connection", lambda: [got[:600], how])

    got, how = exchange(port, req("GET", "/badchunk"))
    t.check(got.startswith(b"HTTP/1.1 502") and b"zz" not in got,
            "a response head arriving with a malformed chunk size: 502 (no "
            "byte of it had been sent)", lambda: [got[:300], how])

    got, how = exchange(port, req("POST", "/continue-then-close",
                                  [("Expect", "100-continue")], body=b"x"))
    first, _, rest = got.partition(b"\r\n\r\n")
    t.check(first.startswith(b"HTTP/1.1 100") and
            rest.startswith(b"HTTP/1.1 502"),
            "an origin that sends 100 Continue and closes: the 100, then a "
            "502", lambda: [got[:300], how])

    # -- 414 --------------------------------------------------------------
    got, how = exchange(port, req("GET", "/" + "u" * 10000))
    t.check(got.startswith(b"HTTP/1.1 414"),
            "a request-target over max_header_size: 414",
            lambda: [got[:300], how])

    # -- a close that lingers ----------------------------------------------
    big = req("GET", "/big", [("X-Pad-%d" % i, "p" * 1000)
                              for i in range(300)])
    c = socket.create_connection(("127.0.0.1", port))
    c.settimeout(ptest.bound(10))
    sent = []

    def push():
        try:
            c.sendall(big)
            sent.append("all")
        except OSError as e:
            sent.append(ptest.err_kind(e))
    th = threading.Thread(target=push, daemon=True)
    th.start()
    got, how = read_to_end(c)
    th.join(ptest.bound(10))
    c.close()
    t.check(got.startswith(b"HTTP/1.1 431") and got.endswith(b"\n") and
            how == "eof" and sent == ["all"],
            "a 300 KB head (max_header_size 8192): the 431, then a FIN, not "
            "a reset; all %d bytes could be sent" % len(big),
            lambda: [got[:200], how, sent])

    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("http_rfc").run(main)
