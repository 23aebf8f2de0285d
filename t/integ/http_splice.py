#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Large HTTP bodies move through a pooled pipe (relay.method = "splice",
and "auto" for bodies of 64 KiB or more or delimited by close) without
losing their framing; the same checks run with "copy":

- on one client connection: a 10 MiB Content-Length upload (sha256 equal
  at the origin), a 10 MiB Content-Length download (sha256 equal), then a
  small request: all three over one origin connection, so each body ended
  exactly where its Content-Length said, both ways;
- a 200 KiB upload and a GET pipelined in one write: the upload arrives
  whole and the GET after it is answered, in order (the body is read
  exactly, never a byte of the next request);
- a 10 MiB response delimited by close: sha256 equal, then the close;
- a client that stops reading a 10 MiB download: with splice the worker
  holds a pipe (the body is in flight through it), with copy none; the
  rest then arrives exact;
- auto: a 16 KiB body is copied, a 10 MiB one spliced
  (relay_spliced_bytes_total).
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

BIG = 10 * ptest.MiB


def pipes(pid):
    """Pipe descriptors the process has open, or None."""
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return None
    n = 0
    for fd in names:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("pipe:"):
                n += 1
        except OSError:
            pass
    return n


def exact(r, n):
    return (isinstance(r, H.Resp) and r.status == 200 and
            r.body_len == n and r.get("x-body-sha256") == r.body_sha)


def one_method(t, method):
    o = H.origin(t)
    p, port = H.start(t, extra='relay = { method = "%s"; };' % method)
    w0 = p.workers()

    # three messages on one client connection, one origin connection
    big = os.urandom(BIG)
    conn = H.Conn.to(port, timeout=ptest.bound(60))
    t.at_exit(conn.close)
    got = []
    try:
        conn.send(H.request_bytes("PUT", o.url + "/echo?id=%s-up" % method,
                                  body=big))
        got.append(H.read_response(conn))
        conn.send(H.request_bytes("GET", o.url + "/len?n=%d" % BIG))
        got.append(H.read_response(conn))
        conn.send(H.request_bytes("GET", o.url + "/echo?id=%s-after" %
                                  method))
        got.append(H.read_response(conn))
    except Exception as e:
        got.append("%s: %s" % (type(e).__name__, e))
    conn.close()
    up = o.reqs_for("id=%s-up" % method)
    t.check(len(got) == 3 and isinstance(got[0], H.Resp) and
            got[0].status == 200 and up and up[0]["body_len"] == BIG and
            up[0]["body_sha256"] == H.sha(big),
            "%s: 10 MiB Content-Length upload, sha256 equal at the origin"
            % method, lambda: [H.describe(x) for x in got] +
            ["origin %r" % ([x["body_len"] for x in up],)])
    t.check(len(got) == 3 and exact(got[1], BIG),
            "%s: 10 MiB Content-Length download on the same connection, "
            "sha256 equal" % method, lambda: [H.describe(x) for x in got])
    after = o.reqs_for("id=%s-after" % method)
    t.check(len(got) == 3 and isinstance(got[2], H.Resp) and
            got[2].status == 200 and after and
            {x["conn"] for x in up + after} == {1} and o.accepted == 1,
            "%s: a third request on the same client connection goes over "
            "the same origin connection (both bodies ended exactly)" % method,
            lambda: [H.describe(x) for x in got] +
            ["origin accepted %d" % o.accepted,
             "conns %r" % [x["conn"] for x in up + after]])

    # an upload and a GET in one write
    mid = os.urandom(200 * 1024)
    conn = H.Conn.to(port, timeout=ptest.bound(30))
    t.at_exit(conn.close)
    got = []
    try:
        conn.send(H.request_bytes("POST", o.url + "/echo?id=%s-pipe1" %
                                  method, body=mid) +
                  H.request_bytes("GET", o.url + "/echo?id=%s-pipe2" %
                                  method))
        got.append(H.read_response(conn))
        got.append(H.read_response(conn))
    except Exception as e:
        got.append("%s: %s" % (type(e).__name__, e))
    conn.close()
    g1 = o.reqs_for("id=%s-pipe1" % method)
    g2 = o.reqs_for("id=%s-pipe2" % method)
    t.check(len(got) == 2 and all(isinstance(x, H.Resp) and
                                  x.status == 200 for x in got) and
            g1 and g1[0]["body_sha256"] == H.sha(mid) and
            g2 and g2[0]["method"] == "GET" and
            got[1].json()["target"].endswith("id=%s-pipe2" % method),
            "%s: a 200 KiB upload and a GET in one write: the body exact, "
            "the GET answered after it" % method,
            lambda: [H.describe(x) for x in got] +
            ["origin %r" % ([(x["method"], x["body_len"]) for x in g1 + g2],)])

    # a response delimited by close
    conn = H.Conn.to(port, timeout=ptest.bound(60))
    t.at_exit(conn.close)
    try:
        conn.send(H.request_bytes("GET", o.url + "/close?n=%d" % BIG))
        r = H.read_response(conn)
        rest, how = H.outcome(conn, ptest.bound(5))
    except Exception as e:
        r, rest, how = "%s: %s" % (type(e).__name__, e), b"", "?"
    conn.close()
    t.check(exact(r, BIG) and rest == b"" and how in ("eof", "reset"),
            "%s: 10 MiB delimited by close: sha256 equal, then the close"
            % method, lambda: H.describe(r) + ["then %s, %r" % (how, rest)])

    # a client that stops reading: the body waits in a pipe, or in a buffer
    wpid = w0[0] if w0 else None
    conn = H.Conn.to(port, timeout=ptest.bound(60))
    t.at_exit(conn.close)
    held = None
    try:
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        conn.send(H.request_bytes("GET", o.url + "/len?n=%d" % BIG))
        time.sleep(0.5)
        held = pipes(wpid) if wpid else None
        r = H.read_response(conn)
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    conn.close()
    if method in ("splice", "auto"):
        t.check(held is not None and held >= 2,
                "%s: a download the client does not read waits in a pipe "
                "(the worker holds one)" % method,
                "pipe descriptors: %r" % held)
    else:
        t.check(held == 0, "copy: no pipe is used", "pipe descriptors: %r" %
                held)
    t.check(exact(r, BIG), "%s: ... and once read, the 10 MiB are exact"
            % method, lambda: H.describe(r))
    H.finish(t, p, w0, "%s: " % method)


def main(t):
    for method in ("splice", "copy", "auto"):
        one_method(t, method)


if __name__ == "__main__":
    ptest.Test("http_splice").run(main)
