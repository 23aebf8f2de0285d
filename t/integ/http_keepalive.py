#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Persistent connections on both legs: several requests on one client
connection; upstream keep-alive proven by the origin's connection count
(sequential requests from different client connections share one origin
connection); three pipelined requests in one write come back in order;
an origin that closes an idle pooled connection, or closes it just as the
next request arrives, costs nothing: a GET is retried once on a fresh
connection. upstream_keepalive = 0 disables the pool.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402


def main(t):
    o = H.origin(t)
    p, port = H.start(t)
    w0 = p.workers()

    # several requests on one client connection
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    t.at_exit(conn.close)
    got = []
    for i in range(6):
        try:
            conn.send(H.request_bytes("GET", o.url + "/echo?id=seq%d" % i))
            r = H.read_response(conn)
            got.append((r.status, r.json()["target"]))
        except Exception as e:
            got.append("%s: %s" % (type(e).__name__, e))
            break
    t.check(got == [(200, "/echo?id=seq%d" % i) for i in range(6)],
            "six requests in turn on one client connection", got)
    conns = {(g["conn"]) for g in o.reqs_for("id=seq")}
    t.check(len(conns) == 1 and o.accepted == 1,
            "... all six went over one origin connection",
            "origin connections used %s, accepted %d" % (conns, o.accepted))
    conn.close()

    # two client connections, one after the other, one origin connection
    o2 = H.origin(t)
    seen = []
    for i in range(2):
        if i:
            time.sleep(0.2)     # the first client's close handled first
        r = H.get(port, o2.url + "/echo?id=two%d" % i)
        seen.append(r.json()["conn"] if isinstance(r, H.Resp) and
                    r.status == 200 else H.describe(r))
    t.check(o2.accepted == 1 and seen == [1, 1],
            "two requests from two client connections in turn reuse one "
            "origin connection (the origin accepted once)",
            "origin accepted %d, connection numbers %r" % (o2.accepted, seen))

    # pipelining: three requests in one write, answered in order
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    reqs = (H.request_bytes("GET", o.url + "/echo?id=pipe1") +
            H.request_bytes("GET", o.url + "/len?n=150000&id=pipe2") +
            H.request_bytes("POST", o.url + "/echo?id=pipe3",
                            body=b"third body"))
    conn.send(reqs)
    out = []
    try:
        for _ in range(3):
            out.append(H.read_response(conn))
    except Exception as e:
        out.append("%s: %s" % (type(e).__name__, e))
    ok = (len(out) == 3 and all(isinstance(r, H.Resp) and r.status == 200
                                for r in out) and
          out[0].json()["target"] == "/echo?id=pipe1" and
          out[1].body_len == 150000 and
          out[1].get("x-body-sha256") == out[1].body_sha and
          out[2].json()["target"] == "/echo?id=pipe3" and
          out[2].json()["body"] == "third body")
    t.check(ok, "three pipelined requests in one write: three responses, "
            "in order, exact", lambda: [repr(r) for r in out])
    try:
        conn.send(H.request_bytes("GET", o.url + "/echo?id=pipe4"))
        r = H.read_response(conn)
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    t.check(isinstance(r, H.Resp) and r.status == 200,
            "... and the connection serves a fourth request after them",
            lambda: H.describe(r))
    conn.close()

    # pipelined, with a HEAD and a 204 in the middle
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    conn.send(H.request_bytes("HEAD", o.url + "/len?n=999") +
              H.request_bytes("GET", o.url + "/status?code=204") +
              H.request_bytes("GET", o.url + "/chunked?n=777"))
    out = []
    try:
        out.append(H.read_response(conn, "HEAD"))
        out.append(H.read_response(conn))
        out.append(H.read_response(conn))
    except Exception as e:
        out.append("%s: %s" % (type(e).__name__, e))
    t.check(len(out) == 3 and all(isinstance(r, H.Resp) for r in out) and
            [r.status for r in out] == [200, 204, 200] and
            out[2].body_len == 777,
            "pipelined HEAD, 204, chunked GET: three responses, framed right",
            lambda: [repr(r) for r in out])
    conn.close()

    # an origin that closes an idle pooled connection
    o3 = H.origin(t)
    r1 = H.get(port, o3.url + "/echo?id=idle1&closeafter=0.2")
    ptest.wait_for(lambda: o3.active == 0, ptest.bound(5))
    time.sleep(0.3)
    r2 = H.get(port, o3.url + "/echo?id=idle2")
    t.check(isinstance(r1, H.Resp) and r1.status == 200 and
            isinstance(r2, H.Resp) and r2.status == 200,
            "the origin closed the pooled connection while idle: the next "
            "request still succeeds", lambda: H.describe(r1) + H.describe(r2)
            + H.log_tail(p)())

    # an origin that closes the pooled connection when the request arrives
    o4 = H.origin(t)
    r1 = H.get(port, o4.url + "/echo?id=race1&dropnext=1")
    r2 = H.get(port, o4.url + "/echo?id=race2", timeout=ptest.bound(5))
    dropped = [g.get("dropped_next") for g in o4.reqs_for("id=race1")]
    t.check(isinstance(r1, H.Resp) and r1.status == 200 and
            isinstance(r2, H.Resp) and r2.status == 200 and
            r2.json()["seq"] == 1,
            "the origin dropped a reused connection on the next GET: the "
            "proxy retried it once on a fresh connection",
            lambda: ["first %r" % (r1,), "second:"] + H.describe(r2) +
            ["origin dropped %r, accepted %d" % (dropped, o4.accepted)] +
            H.log_tail(p)())
    t.check(o4.accepted == 2 and dropped and dropped[0] and
            dropped[0].startswith("GET /echo?id=race2 "),
            "... which the origin saw on the first connection (dropped), "
            "then on a second one", "origin accepted %d, dropped %r, got %r"
            % (o4.accepted, dropped, [(g["conn"], g["seq"], g["target"])
                                      for g in o4.requests]))

    # a POST is not retried blindly: the client gets an error or success,
    # but the origin never sees the body twice
    o5 = H.origin(t)
    H.get(port, o5.url + "/echo?id=post1&dropnext=1")
    try:
        r, c = H.roundtrip(port, "POST", o5.url + "/echo?id=post2",
                           body=b"once")
        c.close()
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    done = [g for g in o5.reqs_for("id=post2") if g["body"] == "once"]
    t.check(len(done) <= 1 and isinstance(r, H.Resp) and
            (r.status == 502 or r.status == 200),
            "a POST on a connection the origin drops: 502 (or a retry that "
            "completes once), never a hang", lambda: H.describe(r) + [
                "origin saw it with a body %d times" % len(done)])
    t.check(not o.bad and not o2.bad and not o3.bad and not o4.bad,
            "the origins found nothing wrong in what they got",
            o.bad + o2.bad + o3.bad + o4.bad)
    H.finish(t, p, w0)

    # upstream_keepalive = 0: a fresh origin connection each time
    p2, port2 = H.start(t, http={"connect_ports": "*",
                                 "upstream_keepalive": 0})
    o6 = H.origin(t)
    rs = [H.get(port2, o6.url + "/echo?id=nopool%d" % i) for i in range(3)]
    t.check(all(isinstance(r, H.Resp) and r.status == 200 for r in rs) and
            ptest.wait_for(lambda: o6.accepted == 3, ptest.bound(3)),
            "upstream_keepalive = 0: three requests, three origin "
            "connections", "origin accepted %d; %r" % (o6.accepted, rs))
    t.stop_portico(p2)

    # upstream_idle_timeout: the proxy closes an idle pooled connection
    p3, port3 = H.start(t, http={"connect_ports": "*",
                                 "upstream_idle_timeout": 1})
    o7 = H.origin(t)
    r = H.get(port3, o7.url + "/echo?id=idle-pool")
    held = ptest.wait_for(lambda: o7.active == 1, ptest.bound(2))
    gone = ptest.wait_for(lambda: o7.active == 0, 1 + ptest.bound(4))
    t.check(isinstance(r, H.Resp) and r.status == 200 and held and gone,
            "upstream_idle_timeout = 1: the pooled origin connection is "
            "closed by the proxy soon after a second",
            "response %r, origin connections open: %d" % (r, o7.active))
    r = H.get(port3, o7.url + "/echo?id=idle-pool2")
    t.check(isinstance(r, H.Resp) and r.status == 200 and o7.accepted == 2,
            "... and the next request opens a fresh one",
            "response %r, origin accepted %d" % (r, o7.accepted))
    t.stop_portico(p3)


if __name__ == "__main__":
    ptest.Test("http_keepalive").run(main)
