#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
portico's own error responses: 400, 403, 431, 501, 502, 504 and 505 each
carry a small text body whose length is the Content-Length, say
Connection: close, and are followed by the close. Timeouts end in an
answer or a close, never a hang: an origin that never answers gives 504
(or a close) after http.response_timeout (http_response_timeout.py has
the details); a target that never completes the
handshake gives 504 after connect_timeout; a client that sends half a
head gets 408 (or a close) after header_timeout; a client that says
nothing, or stalls in a body, or idles between requests, is closed.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

IDLE = 2
HEADER = 2
CONNECT = 1


def error_ok(st, want, data, how):
    """Problems with an error response (empty list: fine)."""
    bad = []
    if st != want:
        bad.append("status %s, wanted %d" % (st, want))
    head, body = H.split_response(data)
    hs = H.head_fields(head)
    cl = H.field(hs, "content-length")
    if cl is None or not cl.isdigit() or int(cl) != len(body):
        bad.append("Content-Length %r for a %d-byte body" % (cl, len(body)))
    if not (0 < len(body) <= 1024):
        bad.append("body of %d bytes (want a short text)" % len(body))
    if not (H.field(hs, "content-type") or "").startswith("text/"):
        bad.append("Content-Type %r" % H.field(hs, "content-type"))
    if "close" not in H.tokens(hs, "connection"):
        bad.append("no Connection: close")
    if how not in ("eof", "reset"):
        bad.append("connection not closed (%s)" % how)
    return bad


def origin_silent(t, o, port):
    """An origin that never answers: 504 (or closed) after
    response_timeout, here = idle_timeout."""
    st, got, how, dt = H.raw_exchange(
        port, H.request_bytes("GET", o.url + "/hang?s=%d" % (IDLE + 20)),
        timeout=IDLE + ptest.bound(5))
    t.check((st == 504 or (st is None and not got)) and
            how in ("eof", "reset") and IDLE - 0.5 <= dt,
            "an origin that never answers: 504 or a close after "
            "response_timeout = %d s (not before)" % IDLE,
            "got %r, %s after %.1f s" % (got[:200], how, dt))
    if st == 504:
        bad = error_ok(st, 504, got, how)
        t.check(not bad, "... the 504 has a short text body and "
                "Connection: close", bad)
    t.diag("origin silence ended after %.2f s" % dt)


def target_silent(t, port, bh, full):
    """A target that never completes the handshake: 504 after
    connect_timeout."""
    if not full:
        t.skip("connect_timeout", "could not make a target that drops SYNs")
        return
    st, got, how, dt = H.raw_exchange(
        port, H.request_bytes("GET", "http://127.0.0.1:%d/" % bh),
        timeout=CONNECT + ptest.bound(5))
    bad = error_ok(st, 504, got, how)
    t.check(not bad and dt >= CONNECT - 0.5,
            "a target dropping SYNs: 504 after connect_timeout = %d s, "
            "short text body, Connection: close, closed" % CONNECT,
            lambda: bad + ["after %.1f s: %r" % (dt, got[:300])])


def head_timeouts(t, o, port):
    """Half a head, a head trickled in, nothing at all: 408 after
    header_timeout."""
    st, got, how, dt = H.raw_exchange(
        port, ("GET %s/echo?id=half HTTP/1.1\r\nHost: 127.0" % o.url)
        .encode(), timeout=HEADER + ptest.bound(5))
    # worker/http.c: a head that does not arrive in time gets a 408
    # (only a keep-alive connection idle between requests is closed
    # without a word)
    t.check(st == 408 and how in ("eof", "reset") and dt >= HEADER - 0.5,
            "half a head: 408 after header_timeout = %d s" %
            HEADER, "got %r, %s after %.1f s" % (got[:200], how, dt))
    bad = error_ok(st, 408, got, how)
    t.check(not bad, "... the 408 has a short text body and "
            "Connection: close", bad)
    t.check(not o.reqs_for("id=half"), "half a head never reaches the origin")

    pieces = [b"GET %s/echo?id=trickle HTTP/1.1\r\n" % o.url.encode()] + \
        [b"X-T%d: v\r\n" % i for i in range(40)]
    st, got, how, dt = H.raw_exchange(port, pieces, pause=0.1,
                                      timeout=HEADER + ptest.bound(6))
    t.check(st == 408 and how in ("eof", "reset") and
            dt < HEADER + ptest.bound(3),
            "a head trickled one field every 0.1 s is still cut at "
            "header_timeout (408)",
            "got %r, %s after %.1f s" % (got[:200], how, dt))

    # silence from the first byte: closed (a 408 allowed)
    st, got, how, dt = H.raw_exchange(port, b"",
                                      timeout=HEADER + ptest.bound(5))
    t.check(how in ("eof", "reset") and st == 408,
            "a client that sends nothing is answered 408 and closed after "
            "header_timeout",
            "got %r, %s after %.1f s" % (got[:200], how, dt))


def idle_timeouts(t, o, port, host):
    """A body that stalls and a keep-alive connection left idle: closed
    after idle_timeout."""
    data = ("POST %s/echo?id=stall HTTP/1.1\r\n%sContent-Length: 100\r\n\r\n"
            "only ten b" % (o.url, host)).encode()
    st, got, how, dt = H.raw_exchange(port, data,
                                      timeout=IDLE + ptest.bound(6))
    t.check(how in ("eof", "reset") and not (st and st < 300),
            "a request body that stalls: the connection is closed (after "
            "idle_timeout)", "got %r, %s after %.1f s" % (got[:200], how, dt))

    conn = H.Conn.to(port, timeout=ptest.bound(10))
    conn.send(H.request_bytes("GET", o.url + "/echo?id=ka"))
    try:
        r = H.read_response(conn)
        t0 = time.monotonic()
        rest, how = H.outcome(conn, max(IDLE, HEADER) + ptest.bound(5))
        dt = time.monotonic() - t0
    except Exception as e:
        r, rest, how, dt = "%s: %s" % (type(e).__name__, e), b"", "?", 0
    conn.close()
    t.check(isinstance(r, H.Resp) and r.status == 200 and rest == b"" and
            how in ("eof", "reset"),
            "an idle keep-alive client connection is closed quietly",
            lambda: H.describe(r) + ["then %r, %s after %.1f s" % (
                rest[:100], how, dt)])


def main(t):
    o = H.origin(t)
    bh, full = H.blackhole(t)
    p, port = H.start(t, http={"max_header_size": 8192,
                               "response_timeout": IDLE},
                      limits={"idle_timeout": IDLE, "header_timeout": HEADER,
                              "connect_timeout": CONNECT})
    w0 = p.workers()
    host = "Host: 127.0.0.1:%d\r\n" % o.port
    dead = ptest.free_port()
    cases = [
        (400, "a request in origin form",
         ("GET / HTTP/1.1\r\n%s\r\n" % host).encode()),
        (403, "CONNECT to a port outside connect_ports",
         ("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
          % (o.port, o.port)).encode()),
        (431, "a head over max_header_size",
         ("GET %s/ HTTP/1.1\r\n%sX-Big: %s\r\n\r\n" % (o.url, host,
                                                      "b" * 9000)).encode()),
        (501, "Transfer-Encoding: gzip",
         ("POST %s/ HTTP/1.1\r\n%sTransfer-Encoding: gzip\r\n\r\n"
          % (o.url, host)).encode()),
        (502, "a closed port",
         H.request_bytes("GET", "http://127.0.0.1:%d/" % dead)),
        (502, "an origin framing its response ambiguously",
         H.request_bytes("GET", o.url + "/ambiguous")),
        (505, "HTTP/2.0",
         ("GET %s/ HTTP/2.0\r\n%s\r\n" % (o.url, host)).encode()),
    ]
    for want, desc, data in cases:
        st, got, how, dt = H.raw_exchange(port, data, timeout=ptest.bound(5))
        bad = error_ok(st, want, got, how)
        t.check(not bad, "%d for %s: a short text body of Content-Length "
                "bytes, Connection: close, then closed" % (want, desc),
                lambda: bad + ["reply %r" % got[:400]])

    # a HEAD that fails gets the head of the error, no body
    st, got, how, dt = H.raw_exchange(
        port, H.request_bytes("HEAD", "http://127.0.0.1:%d/" % dead),
        timeout=ptest.bound(5))
    head, body = H.split_response(got)
    t.check(st == 502 and body == b"" and how in ("eof", "reset"),
            "502 for a HEAD: no body after the head, then closed",
            "reply %r, %s" % (got[:300], how))

    # The timeouts, side by side (each waits on a timer of its own).
    ptest.together(t, (origin_silent, t, o, port),
                   (target_silent, t, port, bh, full),
                   (head_timeouts, t, o, port),
                   (idle_timeouts, t, o, port, host))

    r = H.get(port, o.url + "/echo?id=final")
    t.check(isinstance(r, H.Resp) and r.status == 200,
            "a normal request still works at the end", lambda: H.describe(r))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("http_errors").run(main)
