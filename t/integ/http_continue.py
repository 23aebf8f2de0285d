#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Expect: 100-continue end to end (RFC 9110 10.1.1): the proxy forwards the
head at once with the expectation, the origin's 100 Continue reaches the
client, which only then sends the body, which reaches the origin exact;
with Content-Length and chunked; a client that does not wait works too;
an origin that answers with a final status instead (without reading the
body) does not wedge the proxy; curl with a forced expectation gets its
100 well before its own expect100 timeout.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402


def head_only(o, tag, n, chunked=False):
    hs = [("Host", "127.0.0.1:%d" % o.port), ("Expect", "100-continue")]
    hs.append(("Transfer-Encoding", "chunked") if chunked else
              ("Content-Length", str(n)))
    return ("POST %s/echo?%s HTTP/1.1\r\n" % (o.url, tag) +
            "".join("%s: %s\r\n" % kv for kv in hs) + "\r\n").encode()


def chunks(body):
    out = b""
    for off in range(0, len(body), 65536):
        piece = body[off:off + 65536]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return out + b"0\r\n\r\n"


def main(t):
    o = H.origin(t)
    p, port = H.start(t)
    w0 = p.workers()

    for label, chunked in (("Content-Length", False), ("chunked", True)):
        tag = "id=exp-%s" % chunked
        body = os.urandom(500000)
        conn = H.Conn.to(port, timeout=ptest.bound(10))
        conn.send(head_only(o, tag, len(body), chunked))
        try:
            first = H.read_response(conn, "POST", interim=False)
        except Exception as e:
            first = "%s: %s" % (type(e).__name__, e)
        got100 = isinstance(first, H.Resp) and first.status == 100
        t.check(got100, "%s: the client gets 100 Continue before sending "
                "the body" % label, lambda: H.describe(first) +
                H.log_tail(p)())
        r = None
        if got100:
            try:
                conn.send(chunks(body) if chunked else body)
                r = H.read_response(conn, "POST")
            except Exception as e:
                r = "%s: %s" % (type(e).__name__, e)
        g = o.reqs_for(tag)
        t.check(isinstance(r, H.Resp) and r.status == 200 and g and
                g[0]["body_len"] == len(body) and
                g[0]["body_sha256"] == H.sha(body),
                "%s: then 200, and the origin got the 500000-byte body "
                "exact" % label, lambda: H.describe(r) + ["origin %r" % (
                    [(x["body_len"]) for x in g],)])
        t.check(g and H.field(g[0]["headers"], "expect") == "100-continue"
                and g[0].get("sent_100"),
                "%s: the expectation reached the origin, whose 100 was "
                "relayed" % label, lambda: ["origin saw %r" % (
                    [x["headers"] for x in g],)])
        # the connection goes on
        try:
            conn.send(H.request_bytes("GET", o.url + "/echo?id=after-exp"))
            r = H.read_response(conn)
        except Exception as e:
            r = "%s: %s" % (type(e).__name__, e)
        t.check(isinstance(r, H.Resp) and r.status == 200,
                "%s: the client connection serves another request" % label,
                lambda: H.describe(r))
        conn.close()

    # a client that sends the body without waiting
    body = os.urandom(70000)
    try:
        r, c = H.roundtrip(port, "PUT", o.url + "/echo?id=nowait", body=body,
                           headers=[("Expect", "100-continue")])
        c.close()
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    g = o.reqs_for("id=nowait")
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            [x.status for x in r.interim] in ([100], []) and g and
            g[0]["body_sha256"] == H.sha(body),
            "a client sending the body at once with the expectation: 200, "
            "body exact", lambda: H.describe(r))

    # the origin answers with a final status and never reads the body
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    conn.send(head_only(o, "id=rej", 300000).replace(b"/echo?", b"/reject?"))
    try:
        r = H.read_response(conn, "POST")
        rest, how = H.outcome(conn, ptest.bound(5))
    except Exception as e:
        r, rest, how = "%s: %s" % (type(e).__name__, e), b"", "?"
    t.check(isinstance(r, H.Resp) and r.status == 403 and r.body == b"nope\n"
            and not r.interim and how in ("eof", "reset"),
            "an origin refusing the expectation: its 403 reaches the client "
            "(no 100 first), then the connection closes",
            lambda: H.describe(r) + ["then %r, %s" % (rest[:100], how)])
    conn.close()

    # curl, with the expectation forced and a long expect100 timeout
    if not H.have_curl():
        t.skip("curl with Expect: 100-continue", "no curl")
    else:
        data = os.urandom(2 * ptest.MiB)
        path = t.path("post.bin")
        with open(path, "wb") as f:
            f.write(data)
        wait = int(ptest.bound(20))
        t0 = time.monotonic()
        cp = H.curl(["-x", "http://127.0.0.1:%d" % port, "--data-binary",
                     "@" + path, "-H", "Expect: 100-continue",
                     "--expect100-timeout", str(wait),
                     o.url + "/echo?id=curl-exp"], timeout=wait * 2)
        dt = time.monotonic() - t0
        g = o.reqs_for("id=curl-exp")
        t.check(cp.returncode == 0 and g and
                g[0]["body_sha256"] == H.sha(data) and dt < wait / 2,
                "curl POST of 2 MiB with Expect: 100-continue: exact at the "
                "origin, without waiting out curl's %d s expect timeout"
                % wait, lambda: ["curl exit %d in %.1f s: %s" % (
                    cp.returncode, dt, cp.stderr), "origin %r" % (
                    [x["body_len"] for x in g],)])

    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("http_continue").run(main)
