#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Message framing through the proxy (RFC 9112 6): responses framed by
Content-Length, chunked with trailers, or by closing arrive exact; HEAD,
204, 304 and 1xx carry no body (the next response on the same connection
still parses); request bodies with Content-Length or chunked with
trailers reach the origin exact; 10 MiB each way, sha256 equal. An
HTTP/1.0 client never gets chunked and is closed when it did not ask for
keep-alive; Connection: close is honoured. Max-Forwards: 0 on OPTIONS and
TRACE is answered by the proxy; otherwise decremented on the way.
Content-Length is sent as parsed (005 goes on as 5).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

BIG = 10 * ptest.MiB


def exact(r):
    """The body matches the origin's X-Body-Sha256 / X-Body-Len."""
    return (isinstance(r, H.Resp) and r.status == 200 and
            r.get("x-body-sha256") == r.body_sha and
            r.get("x-body-len") == str(r.body_len))


def main(t):
    o = H.origin(t)
    # a stalled transfer ends after idle_timeout instead of hanging on
    p, port = H.start(t, limits={"idle_timeout": 10})
    w0 = p.workers()
    why = H.log_tail(p)

    # --- responses, all on one client connection --------------------------
    conn = H.Conn.to(port, timeout=ptest.bound(20))
    t.at_exit(conn.close)

    def one(method, path, headers=(), body=None):
        try:
            conn.send(H.request_bytes(method, o.url + path, headers, body))
            return H.read_response(conn, method)
        except Exception as e:
            return "%s: %s" % (type(e).__name__, e)

    r = one("GET", "/len?n=100000")
    t.check(exact(r), "Content-Length response: 100000 bytes exact",
            lambda: H.describe(r))
    r = one("GET", "/chunked?n=300001&chunk=1000&trailers=1")
    t.check(exact(r), "chunked response (chunk extension, 1000-byte chunks)"
            ": 300001 bytes exact", lambda: H.describe(r))
    t.check(isinstance(r, H.Resp) and r.framing == "chunked" and
            H.field(r.trailers, "x-trailer-a") == "1" and
            H.field(r.trailers, "x-trailer-sha") == r.body_sha,
            "chunked response: the trailer fields reach an HTTP/1.1 client",
            lambda: H.describe(r) + ["trailers %r" % (
                getattr(r, "trailers", None),)])
    r = one("HEAD", "/len?n=5000")
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.get("content-length") == "5000",
            "HEAD: 200 with the origin's Content-Length",
            lambda: H.describe(r))
    r = one("HEAD", "/chunked?n=5000")
    t.check(isinstance(r, H.Resp) and r.status == 200,
            "HEAD of a chunked resource: 200, no body", lambda: H.describe(r))
    r = one("GET", "/status?code=204")
    t.check(isinstance(r, H.Resp) and r.status == 204 and
            r.get("x-a") == "1" and not r.tokens("transfer-encoding") and
            r.get("content-length") in (None, "0"),
            "204: no body, no framing fields added", lambda: H.describe(r))
    r = one("GET", "/status?code=304")
    t.check(isinstance(r, H.Resp) and r.status == 304 and
            r.get("etag") == '"v1"',
            "304 with a Content-Length: no body", lambda: H.describe(r))
    r = one("GET", "/early?code=103")
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == b"final\n",
            "103 then 200: the final response arrives whole",
            lambda: H.describe(r))
    t.check(isinstance(r, H.Resp) and [i.status for i in r.interim] == [103]
            and "preload" in (r.interim[0].get("link") or ""),
            "103 Early Hints is forwarded before the final response, with "
            "its Link field", lambda: H.describe(r) + ["interim %r" % (
                getattr(r, "interim", None),)])
    r = one("GET", "/early?code=100")
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == b"final\n",
            "an unasked 100 then 200: the final response arrives whole",
            lambda: H.describe(r))
    r = one("GET", "/echo?id=after")
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.json()["target"] == "/echo?id=after",
            "after those ten, the same client connection still frames "
            "correctly", lambda: H.describe(r) + why())
    t0 = time.monotonic()
    r = one("GET", "/close?n=200000")
    dt = time.monotonic() - t0
    t.check(exact(r), "close-delimited response: 200000 bytes exact",
            lambda: H.describe(r))
    t.check(dt < ptest.bound(3), "close-delimited response: it ends when the "
            "origin closes, not at idle_timeout (10 s)",
            "the response took %.1f s" % dt)
    if isinstance(r, H.Resp) and r.framing != "close":
        r2 = one("GET", "/echo?id=after-close")
        t.check(isinstance(r2, H.Resp) and r2.status == 200,
                "close-delimited response given a framing: the client "
                "connection goes on", lambda: H.describe(r2))
    conn.close()

    # --- request bodies ---------------------------------------------------
    body = os.urandom(200000)
    r, c = H.roundtrip(port, "POST", o.url + "/echo?id=cl", body=body)
    c.close()
    g = o.reqs_for("id=cl")
    t.check(r.status == 200 and g and g[0]["body_len"] == len(body) and
            g[0]["body_sha256"] == H.sha(body) and
            H.fields(g[0]["headers"], "content-length") == [str(len(body))],
            "request body with Content-Length: 200000 bytes exact at the "
            "origin", lambda: [repr(r), "origin %r" % (
                [(x["body_len"], x["headers"]) for x in g],)])
    body = os.urandom(150001)
    r, c = H.roundtrip(port, "POST", o.url + "/echo?id=chunk", body=body,
                       chunked=True, trailers=[("X-Req-Trailer", "t1")])
    c.close()
    g = o.reqs_for("id=chunk")
    t.check(r.status == 200 and g and g[0]["body_len"] == len(body) and
            g[0]["body_sha256"] == H.sha(body),
            "chunked request body: 150001 bytes exact at the origin",
            lambda: [repr(r), "origin %r" % ([x["body_len"] for x in g],)])
    t.check(g and H.field(g[0]["trailers"], "x-req-trailer") == "t1",
            "chunked request body: its trailer field reaches the origin",
            lambda: ["origin trailers %r" % ([x["trailers"] for x in g],)])
    r, c = H.roundtrip(port, "POST", o.url + "/echo?id=empty", body=b"")
    c.close()
    g = o.reqs_for("id=empty")
    t.check(r.status == 200 and g and g[0]["body_len"] == 0,
            "Content-Length: 0 request: forwarded with an empty body",
            lambda: [repr(r)])

    # --- 10 MiB each way --------------------------------------------------
    big = os.urandom(BIG)
    for label, chunked in (("Content-Length", False), ("chunked", True)):
        tag = "id=up-%s" % chunked
        try:
            r, c = H.roundtrip(port, "PUT", o.url + "/echo?" + tag, body=big,
                               chunked=chunked, timeout=ptest.bound(60))
            c.close()
        except Exception as e:
            r = "%s: %s" % (type(e).__name__, e)
        g = o.reqs_for(tag)
        t.check(isinstance(r, H.Resp) and r.status == 200 and g and
                g[0]["body_len"] == BIG and
                g[0]["body_sha256"] == H.sha(big),
                "10 MiB upload (%s): sha256 equal at the origin" % label,
                lambda: H.describe(r) + ["origin %r" % (
                    [x["body_len"] for x in g],)])
    for path in ("/len?n=%d" % BIG, "/chunked?n=%d&chunk=65536" % BIG,
                 "/close?n=%d" % BIG):
        t0 = time.monotonic()
        r = H.get(port, o.url + path, timeout=ptest.bound(60))
        dt = time.monotonic() - t0
        t.check(exact(r) and r.body_len == BIG,
                "10 MiB download (%s): sha256 equal" % path.split("?")[0],
                lambda: H.describe(r))
        t.check(dt < ptest.bound(5), "10 MiB download (%s) on a fresh client "
                "connection: complete within %.0f s (idle_timeout is 10 s)"
                % (path.split("?")[0], ptest.bound(5)),
                "it took %.1f s" % dt)

    # --- many mid-size bodies in a row on one client connection -----------
    conn = H.Conn.to(port, timeout=ptest.bound(20))
    bad = []
    for i in range(24):
        path = ("/len?n=%d", "/chunked?n=%d&chunk=20000")[i % 2] % (
            ptest.MiB + i * 4099)
        try:
            conn.send(H.request_bytes("GET", o.url + path))
            r = H.read_response(conn)
        except Exception as e:
            r = "%s: %s" % (type(e).__name__, e)
        if not exact(r):
            bad.append("response %d (%s): %r" % (i + 1, path, r))
            break
    conn.close()
    t.check(not bad, "24 responses of 1 MiB and more in a row on one "
            "client connection, Content-Length and chunked: all exact", bad)

    # --- HTTP/1.0 clients -------------------------------------------------
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    conn.send(H.request_bytes("GET", o.url + "/chunked?n=50000&trailers=1",
                              version="HTTP/1.0"))
    try:
        r = H.read_response(conn)
        rest, how = H.outcome(conn, ptest.bound(5))
    except Exception as e:
        r, rest, how = "%s: %s" % (type(e).__name__, e), b"", "?"
    t.check(exact(r) and not r.tokens("transfer-encoding"),
            "HTTP/1.0 client, chunked origin response: no chunked coding, "
            "50000 bytes exact", lambda: H.describe(r))
    t.check(how == "eof" and rest == b"",
            "HTTP/1.0 client without keep-alive: closed after the response",
            "then read %r, %s" % (rest[:100], how))
    conn.close()

    conn = H.Conn.to(port, timeout=ptest.bound(10))
    conn.send(H.request_bytes("GET", o.url + "/len?n=7000",
                              version="HTTP/1.0"))
    try:
        r = H.read_response(conn)
        rest, how = H.outcome(conn, ptest.bound(5))
    except Exception as e:
        r, rest, how = "%s: %s" % (type(e).__name__, e), b"", "?"
    t.check(exact(r) and how == "eof" and rest == b"",
            "HTTP/1.0 client, Content-Length response: exact, then closed",
            lambda: H.describe(r) + ["then %r, %s" % (rest[:100], how)])
    conn.close()

    conn = H.Conn.to(port, timeout=ptest.bound(10))
    ok, info = True, []
    for i in range(2):
        conn.send(H.request_bytes("GET", o.url + "/chunked?n=%d" % (9000 + i),
                                  [("Connection", "keep-alive")],
                                  version="HTTP/1.0"))
        try:
            r = H.read_response(conn)
        except Exception as e:
            r = "%s: %s" % (type(e).__name__, e)
        info.append(H.describe(r))
        if not exact(r) or r.tokens("transfer-encoding"):
            ok = False
            break
        if r.framing == "close":
            break           # the proxy chose to close instead: allowed
    t.check(ok, "HTTP/1.0 client asking keep-alive: a chunked origin "
            "response comes unchunked (with a length, or closed)", info)
    conn.close()

    # --- Connection: close ------------------------------------------------
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    conn.send(H.request_bytes("GET", o.url + "/len?n=3000",
                              [("Connection", "close")]))
    try:
        r = H.read_response(conn)
        rest, how = H.outcome(conn, ptest.bound(5))
    except Exception as e:
        r, rest, how = "%s: %s" % (type(e).__name__, e), b"", "?"
    t.check(exact(r) and r.closes() and how == "eof" and rest == b"",
            "Connection: close from the client: the response says "
            "Connection: close and the proxy closes",
            lambda: H.describe(r) + ["then %r, %s" % (rest[:100], how)])
    conn.close()

    # --- Max-Forwards -----------------------------------------------------
    for m in ("OPTIONS", "TRACE"):
        tag = "id=mf0-%s" % m
        conn = H.Conn.to(port, timeout=ptest.bound(10))
        conn.send(H.request_bytes(m, o.url + "/echo?" + tag,
                                  [("Max-Forwards", "0"),
                                   ("X-Mark", "mark-%s" % m)]))
        try:
            r = H.read_response(conn, m)
        except Exception as e:
            r = "%s: %s" % (type(e).__name__, e)
        conn.close()
        ok = isinstance(r, H.Resp) and r.status == 200 and \
            not o.reqs_for(tag)
        if ok and m == "TRACE":
            ok = (r.get("content-type") or "").startswith("message/http") \
                and b"mark-TRACE" in r.body and \
                r.body.startswith(b"TRACE ")
        t.check(ok, "%s with Max-Forwards: 0 is answered by the proxy (200%s)"
                ", the origin gets nothing" % (
                    m, ", message/http echoing the request" if m == "TRACE"
                    else ""), lambda: H.describe(r) + ["origin got %d" %
                                                        len(o.reqs_for(tag))])
        tag = "id=mf5-%s" % m
        r, c = H.roundtrip(port, m, o.url + "/echo?" + tag,
                           [("Max-Forwards", "5")])
        c.close()
        g = o.reqs_for(tag)
        t.check(g and H.fields(g[0]["headers"], "max-forwards") == ["4"],
                "%s with Max-Forwards: 5 reaches the origin with 4" % m,
                lambda: ["origin got %r" % ([x["headers"] for x in g],)])
    r, c = H.roundtrip(port, "GET", o.url + "/echo?id=mfget",
                       [("Max-Forwards", "0")])
    c.close()
    g = o.reqs_for("id=mfget")
    t.check(g and H.fields(g[0]["headers"], "max-forwards") == ["0"],
            "GET with Max-Forwards: 0 is forwarded unchanged (it only "
            "governs TRACE and OPTIONS)",
            lambda: ["origin got %r" % ([x["headers"] for x in g],)])

    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)
    # Content-Length goes on as parsed, not as spelt
    st, got, how, _ = H.raw_exchange(
        port, b"POST %s/echo?id=cl005 HTTP/1.1\r\nHost: x\r\n"
        b"Content-Length: 005\r\nConnection: close\r\n\r\nabcde"
        % o.url.encode(), timeout=ptest.bound(5))
    rq = o.reqs_for("cl005")
    t.check(st == 200 and rq and "Content-Length: 5\r\n" in
            rq[0]["raw_head"] and rq[0]["body"] == "abcde",
            "a request's Content-Length: 005 reaches the origin as "
            "Content-Length: 5", lambda: [got[:200], rq[:1]])
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("http_framing").run(main)
