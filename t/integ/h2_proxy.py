#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
HTTP/2 with prior knowledge (h2c) on a plain HTTP listener, requests to
HTTP/1.1 origins (issue 34, first slice). The client is python3-h2
(t/integ/h2test.py); the origins are httptest's, on loopback.

- HTTP/1.1 on the same port keeps working;
- the client preface is answered with an HTTP/2 SETTINGS frame (raw
  bytes), and that SETTINGS says MAX_CONCURRENT_STREAMS 100 and
  ENABLE_CONNECT_PROTOCOL 1;
- a GET (:authority naming the origin): the origin gets "GET /path
  HTTP/1.1" with Host equal to :authority, the client gets :status 200
  and the body exactly; response field names are lower case and the
  connection-specific ones (Connection and what it names, Keep-Alive,
  Proxy-Connection, Transfer-Encoding, Upgrade) are gone, end-to-end
  ones kept; 1 MiB (sha256); a chunked response arrives as plain DATA;
  a 404 is passed on; HEAD gets no DATA and the next GET on the
  connection is right; POST of 100 KiB with content-length and without:
  the origin gets the exact bytes either way;
- 200 requests one after another on one connection, each reaching the
  origin once; 20 streams at once, all waiting at the origin together
  (a barrier: the proxy forwarded them concurrently), each answered;
- an origin port that refuses: :status 502; a stream without :authority:
  RST_STREAM or :status 400, the origin never hears of it, and the
  connection serves the next stream;
- the access log (JSON): one record per stream with client_proto "h2"
  and stream (its ID), proto "http", the method and status; an HTTP/1.1
  record has neither key;
- with the auth module: a stream without credentials gets 407 with
  proxy-authenticate, a wrong password 407, the right one 200, and the
  origin never sees Proxy-Authorization;
- http2 = false on a listener: the preface is an ordinary bad HTTP/1.1
  request (an HTTP/1.1 4xx/5xx or a close, no HTTP/2 frame), and
  HTTP/1.1 is served there;
- nghttp (nghttp2-client) fetches through the proxy with :authority
  naming the origin;
- SIGHUP with three streams waiting on a slow origin: the client gets
  GOAWAY whose last stream ID covers them, each completes with its whole
  body, the old connection is then closed, and a new connection works.
"""
import base64
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import accesslogtest as AL  # noqa: E402
import authtest as A  # noqa: E402
import h2test as h2t  # noqa: E402

# Fields RFC 9113 8.2.2 forbids in HTTP/2, and the one /hop's Connection
# names.
CONN_SPECIFIC = ("connection", "keep-alive", "proxy-connection",
                 "transfer-encoding", "upgrade", "x-resp-hop")


def preface_answer(port, until_eof=False):
    """Sends the client preface and an empty SETTINGS on a raw socket.
    Reads until a whole first frame came (or, with <until_eof>, until
    EOF), or bound(5) s. Returns (bytes, 'eof'|'reset'|'timeout'|
    'frame')."""
    s = ptest.connect(port, timeout=ptest.bound(5))
    s.sendall(h2t.PREFACE + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    data, how = b"", "timeout"
    deadline = time.monotonic() + ptest.bound(5)
    try:
        while time.monotonic() < deadline:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                d = s.recv(65536)
            except socket.timeout:
                break
            if not d:
                how = "eof"
                break
            data += d
            fr = h2t.frames_in(data)
            if not until_eof and fr and len(data) >= 9 + fr[0][3]:
                how = "frame"
                break
    except ConnectionResetError:
        how = "reset"
    finally:
        s.close()
    return data, how


def origin_req(o, tag):
    """The one request the origin recorded with <tag>, or None."""
    g = o.reqs_for(tag)
    return g[0] if len(g) == 1 else None


def request_line_ok(req, method, target, authority):
    return (req is not None and req["method"] == method and
            req["target"] == target and req["version"] == "HTTP/1.1" and
            H.fields(req["headers"], "host") == [authority])


def client(port):
    return h2t.Client(port).open()


# ---------------------------------------------------------------------------

def http11_and_settings(t, p, port, o):
    r = H.get(port, o.url + "/len?n=100&id=h1-same-port")
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == H.pattern(100),
            "HTTP/1.1 on the h2c port keeps working (GET: 200, the body)",
            lambda: H.describe(r) + H.log_tail(p)())

    data, how = preface_answer(port)
    fr = h2t.frames_in(data)
    t.check(fr and fr[0][0] == 0x4 and fr[0][1] == 0 and fr[0][2] == 0,
            "the HTTP/2 client preface is answered with a SETTINGS frame "
            "(stream 0, no ACK flag): h2c with prior knowledge",
            "read %r (%s)" % (data[:80], how))

    c = None
    try:
        c = client(port)
        got = dict(c.server_settings)
    except Exception as e:
        got = "%s: %s" % (type(e).__name__, e)
    finally:
        if c is not None:
            c.close()
    t.check(isinstance(got, dict) and
            got.get(h2t.MAX_CONCURRENT_STREAMS) == 100 and
            got.get(h2t.ENABLE_CONNECT_PROTOCOL) == 1,
            "the proxy's SETTINGS: MAX_CONCURRENT_STREAMS 100, "
            "ENABLE_CONNECT_PROTOCOL 1", "settings %s" % (got,))


def requests(t, port, o):
    """GETs, HEAD, POSTs on one connection. Returns {tag: Stream}."""
    au = "127.0.0.1:%d" % o.port
    c = client(port)
    t.at_exit(c.close)
    out = {}

    def one(tag, path, method="GET", extra=(), body=None):
        st = c.request(h2t.request_headers(method, au, path, extra=extra),
                       body=body)
        c.wait(st)
        out[tag] = st
        return st

    st = one("small", "/len?n=1000&id=small")
    req = origin_req(o, "id=small")
    t.check(st.status == 200 and st.ended and
            bytes(st.data) == H.pattern(1000),
            "GET: :status 200 and the 1000-byte body exactly, then "
            "END_STREAM", lambda: h2t.describe(st) + [c.why()])
    t.check(request_line_ok(req, "GET", "/len?n=1000&id=small", au),
            "the origin got GET /len?... HTTP/1.1 with Host: %s (the "
            ":authority)" % au, "origin saw %r" % (req and req["raw_head"],))

    st = one("hop", "/hop?id=hop")
    names = [k for k, _ in st.headers]
    left = [n for n in names if n.lower() in CONN_SPECIFIC]
    t.check(st.status == 200 and names and
            all(n == n.lower() for n in names) and not left and
            st.get("x-resp-end") == "kept",
            "response fields: names lower case, the connection-specific "
            "ones (Connection and what it names, Keep-Alive, "
            "Proxy-Connection, Upgrade) removed, end-to-end ones kept",
            lambda: h2t.describe(st))

    st = one("big", "/len?n=%d&id=big" % ptest.MiB)
    t.check(st.status == 200 and st.ended and len(st.data) == ptest.MiB and
            st.sha() == H.sha(H.pattern(ptest.MiB)) and
            st.get("x-body-sha256") == st.sha(),
            "GET of 1 MiB: every byte (sha256), then END_STREAM",
            lambda: h2t.describe(st)[0][:300])

    st = one("chunked", "/chunked?n=300000&chunk=7000&id=chunked")
    t.check(st.status == 200 and st.ended and
            bytes(st.data) == H.pattern(300000) and
            st.get("transfer-encoding") is None,
            "a chunked origin response arrives as plain DATA: the 300000 "
            "bytes without chunk framing, no transfer-encoding field",
            lambda: ["%d bytes, starts %r" % (len(st.data), st.data[:40])] +
            h2t.describe(st))

    st = one("404", "/status?code=404&id=nf")
    t.check(st.status == 404 and bytes(st.data) == b"status 404\n" and
            st.ended, "an origin's 404 is passed on with its body",
            lambda: h2t.describe(st))

    st = one("head", "/len?n=5000&id=head", method="HEAD")
    req = origin_req(o, "id=head")
    st2 = one("after-head", "/len?n=10&id=after-head")
    t.check(st.status == 200 and st.ended and not st.data and
            req is not None and req["method"] == "HEAD",
            "HEAD: the origin gets HEAD, the client :status 200, "
            "END_STREAM and no DATA", lambda: h2t.describe(st))
    t.check(st2.status == 200 and bytes(st2.data) == H.pattern(10),
            "the GET after the HEAD on the same connection gets its own "
            "10 bytes", lambda: h2t.describe(st2))

    body = os.urandom(100 * 1024)
    st = one("post-cl", "/echo?id=post-cl", "POST",
             [("content-length", str(len(body)))], body)
    req = origin_req(o, "id=post-cl")
    t.check(st.status == 200 and req is not None and
            req["method"] == "POST" and req["body_len"] == len(body) and
            req["body_sha256"] == H.sha(body),
            "POST of 100 KiB with content-length: the origin gets the exact "
            "bytes (more than the initial window: the proxy opens it)",
            lambda: h2t.describe(st) + ["origin %r" % (
                req and {k: req[k] for k in ("method", "body_len",
                                             "headers")},)])
    st = one("post-nocl", "/echo?id=post-nocl", "POST", [], body)
    req = origin_req(o, "id=post-nocl")
    t.check(st.status == 200 and req is not None and
            req["method"] == "POST" and req["body_len"] == len(body) and
            req["body_sha256"] == H.sha(body),
            "POST of 100 KiB without content-length: the origin gets the "
            "exact bytes", lambda: h2t.describe(st) + ["origin %r" % (
                req and {k: req[k] for k in ("method", "body_len",
                                             "headers")},)])
    t.check(not c.dead, "the connection is still up after all of these",
            c.why())
    c.close()
    return out


def many(t, port, o):
    """200 requests in turn on one connection. Returns {tag: Stream}."""
    au = "127.0.0.1:%d" % o.port
    c = client(port)
    t.at_exit(c.close)
    out, bad = {}, []
    for i in range(200):
        tag = "seq-%d-" % i
        st = c.request(h2t.request_headers("GET", au,
                                           "/len?n=%d&id=%s" % (i, tag)))
        if not c.wait(st) or st.status != 200 or \
                bytes(st.data) != H.pattern(i):
            bad.append(st.describe() + "; " + c.why())
            break
        out[tag] = st
    once = all(len(o.reqs_for("id=%s" % tag)) == 1 for tag in out)
    t.check(len(out) == 200 and not bad and once,
            "200 GETs one after another on one connection: each 200 with "
            "its own body, each reaching the origin once", bad[:3])
    c.close()
    return out


def concurrent(t, port):
    slow = h2t.SlowOrigin(size=20000, together=20)
    t.servers.append(slow)
    c = client(port)
    t.at_exit(c.close)
    sts = [c.request(h2t.request_headers("GET", slow.address,
                                         "/together?i=%d" % i))
           for i in range(20)]
    c.wait(sts, ptest.bound(30))
    good = [s for s in sts if s.status == 200 and s.ended and
            s.sha() == s.get("x-body-sha256") and len(s.data) == 20000]
    t.check(len(good) == 20 and len(slow.requests) == 20,
            "20 streams at once: the origin has all 20 waiting together, "
            "each stream gets its 200 and 20000 bytes",
            lambda: ["%d good, origin saw %d" % (len(good),
                                                 len(slow.requests))] +
            [s.describe()[:200] for s in sts if s not in good][:5] +
            [c.why()])
    c.close()


def pool_kept(t):
    """An HTTP/1.1 client connection keeps its origin connection between
    requests; an HTTP/2 connection's streams end, so their origin
    connections go to the worker's pool, which makes room for as many as
    the connection had streams at once, beyond upstream_keepalive (2
    here), and gives it back when the connection closes."""
    slow = h2t.SlowOrigin(size=1000, together=20)
    t.servers.append(slow)
    port = ptest.free_port()
    q = t.portico(h2t.conf(t, [h2t.listener("pool", port)], name="pool",
                           http="upstream_keepalive = 2; "),
                  conf_name="pool.conf")
    c = client(port)
    t.at_exit(c.close)
    rounds = []
    for r in range(2):
        sts = [c.request(h2t.request_headers(
            "GET", slow.address, "/together?r=%d&i=%d" % (r, i)))
            for i in range(20)]
        c.wait(sts, ptest.bound(30))
        rounds.append(sum(1 for s in sts if s.status == 200 and s.ended))
    t.check(rounds == [20, 20] and slow.accepted == 20,
            "20 streams at once, twice, with upstream_keepalive = 2: the "
            "second 20 ride on the first 20's origin connections (the "
            "origin accepted 20, not 38)",
            lambda: ["200s per round %s, origin accepted %d" % (
                rounds, slow.accepted), c.why()])
    c.close()
    ptest.wait_for(lambda: slow.active <= 2, ptest.bound(10))
    t.check(slow.active == 2,
            "the HTTP/2 connection closed: the pool is back to "
            "upstream_keepalive, 2 origin connections left open",
            "the origin has %d open" % slow.active)
    t.stop_portico(q)


def errors(t, p, port, o):
    dead = ptest.free_port()
    st = h2t.fetch(port, "127.0.0.1:%d" % dead, "/x")
    t.check(isinstance(st, h2t.Stream) and st.status == 502,
            "an origin port that refuses: :status 502",
            lambda: h2t.describe(st) + H.log_tail(p)())

    c = client(port)
    t.at_exit(c.close)
    st = c.request(h2t.request_headers("GET", None, "/len?n=10&id=noauth"))
    c.wait(st)
    t.check((st.reset is not None or st.status == 400) and
            not o.reqs_for("id=noauth"),
            "a stream without :authority (nor host): RST_STREAM or :status "
            "400, and the origin never hears of it",
            lambda: h2t.describe(st) + [c.why(), "origin: %s" %
                                        o.reqs_for("id=noauth")])
    au = "127.0.0.1:%d" % o.port
    st2 = c.request(h2t.request_headers("GET", au, "/len?n=10&id=after-bad"))
    c.wait(st2)
    t.check(st2.status == 200 and bytes(st2.data) == H.pattern(10),
            "the same connection then serves the next stream",
            lambda: h2t.describe(st2) + [c.why()])
    c.close()


def access_log(t, jlog, reqs, seq):
    """The records of the streams in <reqs> and <seq> ({tag: Stream})."""
    tags = ["id=h1-same-port", "id=small", "id=nf", "id=head",
            "id=post-cl"] + ["id=" + tag for tag in seq]
    recs = AL.wait_json(jlog, lambda rs: all(
        any(tag in (r.get("target") or "") for r in rs) for tag in tags))

    def mine(tag):
        return [r for r in recs if tag in (r.get("target") or "")]
    h1 = mine("id=h1-same-port")
    t.check(len(h1) == 1 and "client_proto" not in h1[0] and
            "stream" not in h1[0] and h1[0].get("proto") == "http",
            "access log: the HTTP/1.1 request's record has no client_proto "
            "and no stream", lambda: [str(h1)])
    rows = []
    for tag, status, method in (("id=small", 200, "GET"),
                                ("id=nf", 404, "GET"),
                                ("id=head", 200, "HEAD"),
                                ("id=post-cl", 200, "POST")):
        key = {"id=small": "small", "id=nf": "404", "id=head": "head",
               "id=post-cl": "post-cl"}[tag]
        st = reqs.get(key)
        rs = mine(tag)
        ok = (st is not None and len(rs) == 1 and
              rs[0].get("client_proto") == "h2" and
              rs[0].get("stream") == st.id and
              rs[0].get("proto") == "http" and
              rs[0].get("method") == method and
              rs[0].get("status") == status)
        rows.append((ok, tag, rs, st and st.id))
    t.check(all(r[0] for r in rows),
            "access log: one record per stream, client_proto \"h2\", stream "
            "= its ID, proto \"http\", its method and status (GET 200, GET "
            "404, HEAD, POST)", lambda: [str(r[1:]) for r in rows
                                         if not r[0]])
    wrong = []
    for tag, st in seq.items():
        rs = mine("id=" + tag)
        if len(rs) != 1 or rs[0].get("stream") != st.id or \
                rs[0].get("client_proto") != "h2":
            wrong.append((tag, st.id, rs))
    t.check(len(seq) == 200 and not wrong,
            "access log: each of the 200 requests on one connection is one "
            "record with its own stream ID",
            lambda: ["%d streams; wrong: %s" % (len(seq), wrong[:3])])


def auth_proxy(t, what, name, options="", log_level="info"):
    """A portico named <name> whose h2c listener requires the auth
    module's user h2user (password h2-secret), <options> added to the
    module's entry: (portico, port), or None when scenario <what> is
    skipped for want of the module."""
    why = A.missing()
    if why:
        t.skip(what, why)
        return None
    users = A.write_users(t, [("h2user", A.argon2id("h2-secret"))])
    port = ptest.free_port()
    q = t.portico(h2t.conf(t, [h2t.listener(name, port)], [
        '{ name = "auth"; path = "%s"; userlist = "%s"; %s }' % (
            A.AUTH_SO, users, options)], name=name, log_level=log_level),
        conf_name=name + ".conf")
    return q, port


def auth(t, o):
    got = auth_proxy(t, "Proxy-Authorization per stream", "auth")
    if got is None:
        return
    q, port = got
    au = "127.0.0.1:%d" % o.port
    c = client(port)
    t.at_exit(c.close)

    def get(tag, cred):
        extra = [("proxy-authorization", "Basic " + base64.b64encode(
            cred.encode()).decode())] if cred else []
        st = c.request(h2t.request_headers(
            "GET", au, "/echo?id=%s" % tag, extra=extra))
        c.wait(st)
        return st
    st = get("auth-none", None)
    t.check(st.status == 407 and
            (st.get("proxy-authenticate") or "").startswith("Basic ") and
            not o.reqs_for("id=auth-none"),
            "a stream without credentials: :status 407 with "
            "proxy-authenticate: Basic ..., the origin never sees it",
            lambda: h2t.describe(st) + [c.why()])
    st = get("auth-wrong", "h2user:nope")
    t.check(st.status == 407 and not o.reqs_for("id=auth-wrong"),
            "a stream with a wrong password: 407",
            lambda: h2t.describe(st) + [c.why()])
    # A POST whose 407 comes while its body is still being sent: the
    # answer ends the stream (END_STREAM) and RST_STREAM NO_ERROR tells
    # the client to stop sending (RFC 9113 8.1), so the stream does not
    # stay half open; the connection goes on.
    st = c.request(h2t.request_headers("POST", au, "/echo?id=auth-post"),
                   body=b"p" * (1 << 20), end=False)
    c.wait(st)
    c.run_until(lambda: st.reset is not None, ptest.bound(5))
    t.check(st.status == 407 and st.ended and st.reset == 0 and
            st.sent < (1 << 20) and not o.reqs_for("id=auth-post"),
            "a POST answered 407 mid-body: END_STREAM, then RST_STREAM "
            "NO_ERROR before the client sent its 1 MiB",
            lambda: h2t.describe(st) + ["sent %d" % st.sent, c.why()])
    st = get("auth-right", "h2user:h2-secret")
    req = origin_req(o, "id=auth-right")
    t.check(st.status == 200 and req is not None and
            not H.fields(req["headers"], "proxy-authorization"),
            "a stream with the right proxy-authorization: 200 on the same "
            "connection, and the credentials do not reach the origin",
            lambda: h2t.describe(st) + ["origin %r" % (req,)])
    c.close()
    t.stop_portico(q)


def auth_carried(t, o):
    """A stream with the credentials an earlier stream of its connection
    proved is not verified again (as an HTTP/1.1 keep-alive request is
    not): with the cache off, the module's verification count (its debug
    line per Argon2id run) stays at one for three streams, and a new
    connection verifies once more."""
    got = auth_proxy(t, "credentials carried over to later streams",
                     "carry", "cache_ttl = 0;", log_level="debug")
    if got is None:
        return
    q, port = got
    au = "127.0.0.1:%d" % o.port
    cred = [("proxy-authorization", "Basic " + base64.b64encode(
        b"h2user:h2-secret").decode())]

    def verified():
        return q.log().count("auth: verified")
    got = []
    for conn in range(2):
        c = client(port)
        t.at_exit(c.close)
        for i in range(3):
            st = c.request(h2t.request_headers(
                "GET", au, "/echo?id=carry-%d-%d" % (conn, i), extra=cred))
            c.wait(st)
            got.append(st.status)
        ptest.wait_for(lambda: verified() >= conn + 1, ptest.bound(5))
        t.check(verified() == conn + 1,
                "connection %d: three streams with the same credentials, "
                "%d verification%s in all (the later streams ride on the "
                "first one's)" % (conn + 1, conn + 1, "s" if conn else ""),
                lambda: ["%d 'auth: verified' lines, statuses %s" % (
                    verified(), got)] + H.log_tail(q)())
        c.close()
    t.check(got == [200] * 6, "the six streams got 200", str(got))
    t.stop_portico(q)


def owner(t, o):
    """pt_conn_owner() (module ABI 1.9), seen through hookrec: a stream's
    hooks name its HTTP/2 connection as owner, the connection's ACCEPT
    is its own owner, and an HTTP/1.1 connection owns itself."""
    rec = t.path("owner.rec")
    port = ptest.free_port()
    q = t.portico(h2t.conf(t, [h2t.listener("owner", port)], [
        '{ name = "hookrec"; path = "%s/hookrec.so"; record = "%s"; }'
        % (ptest.TESTMODDIR, rec)], name="owner"), conf_name="owner.conf")
    au = "127.0.0.1:%d" % o.port
    c = client(port)
    t.at_exit(c.close)
    sts = [c.request(h2t.request_headers("GET", au, "/echo?id=owner-%d" % i))
           for i in range(2)]
    c.wait(sts)
    c.close()
    r = H.get(port, "http://%s/echo?id=owner-h1" % au)
    code = getattr(r, "status", r)
    ptest.wait_for(lambda: sum(1 for e, _ in ptest.records(rec)
                               if e == "CLOSE") >= 4, ptest.bound(5))
    recs = ptest.records(rec)
    h2acc = [kv for e, kv in recs if e == "ACCEPT" and kv["stream"] == "0"]
    streams = [kv for e, kv in recs if e == "LOG" and kv["stream"] != "0"]
    h1 = [kv for e, kv in recs if e == "LOG" and kv["stream"] == "0"]
    ok = (len(h2acc) == 2 and len(streams) == 2 and len(h1) == 1 and
          all(kv["owner"] == h2acc[0]["conn"] and kv["conn"] != kv["owner"]
              for kv in streams) and
          sorted(kv["stream"] for kv in streams) == ["1", "3"] and
          h2acc[0]["owner"] == h2acc[0]["conn"] and
          h1[0]["owner"] == h1[0]["conn"] and code == 200)
    t.check(ok, "pt_conn_owner: streams 1 and 3 name their HTTP/2 "
            "connection (whose ACCEPT owns itself); an HTTP/1.1 "
            "connection owns itself",
            lambda: ["%s %s" % r for r in recs] + ["h1 status %s" % code])
    t.stop_portico(q)


def no_http2(t, o):
    port = ptest.free_port()
    try:
        q = t.portico(h2t.conf(t, [h2t.listener("noh2", port,
                                                "http2 = false; ")],
                               name="noh2"), conf_name="noh2.conf")
    except RuntimeError as e:
        t.check(False, "portico starts with http2 = false on a listener",
                str(e).splitlines()[-10:])
        return
    data, how = preface_answer(port, until_eof=True)
    st = H.status_of(data)
    t.check(not h2t.frames_in(data) and
            ((st is not None and 400 <= st < 600) or
             (data == b"" and how in ("eof", "reset"))),
            "http2 = false: the preface is an ordinary bad HTTP/1.1 "
            "request (an HTTP/1.1 4xx/5xx answer or a close), no HTTP/2 "
            "frame comes back", "read %r (%s)" % (data[:120], how))
    r = H.get(port, o.url + "/len?n=10&id=noh2")
    t.check(isinstance(r, H.Resp) and r.status == 200,
            "http2 = false: HTTP/1.1 is served there", lambda: H.describe(r))
    t.stop_portico(q)


def nghttp(t, port, o):
    if shutil.which("nghttp") is None:
        t.skip("nghttp through the proxy", "no nghttp program in PATH "
               "(Debian package nghttp2-client)", need="nghttp")
        return
    au = "127.0.0.1:%d" % o.port
    # nghttp speaks h2c with prior knowledge to an http:// URI (no -u);
    # -H replaces the :authority it would take from the URI, which makes
    # it a forward-proxy client.
    try:
        cp = subprocess.run(
            ["nghttp", "-H", ":authority: " + au,
             "http://127.0.0.1:%d/len?n=100000&id=nghttp" % port],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, timeout=ptest.bound(30))
    except subprocess.TimeoutExpired as e:
        cp = subprocess.CompletedProcess(e.cmd, -1, e.stdout or b"",
                                         b"timeout")
    req = origin_req(o, "id=nghttp")
    t.check(cp.returncode == 0 and cp.stdout == H.pattern(100000) and
            request_line_ok(req, "GET", "/len?n=100000&id=nghttp", au),
            "nghttp (h2c, :authority naming the origin) gets the 100000 "
            "bytes; the origin got GET with Host: %s" % au,
            lambda: ["exit %d, %d bytes, stderr %r" % (
                cp.returncode, len(cp.stdout), cp.stderr[-300:]),
                "origin %r" % (req,)])


def goaway_on_reload(t, p, port, o):
    slow = h2t.SlowOrigin(size=200000, delay=1.0)
    t.servers.append(slow)
    c = client(port)
    t.at_exit(c.close)
    sts = [c.request(h2t.request_headers("GET", slow.address,
                                         "/slow?i=%d" % i))
           for i in range(3)]
    c.run_until(lambda: len(slow.requests) >= 3, ptest.bound(5))
    inflight = len(slow.requests) == 3 and not any(s.done for s in sts)
    p.hup()
    c.run_until(lambda: c.goaways and all(s.done for s in sts),
                ptest.bound(20))
    last = c.goaways[-1][1] if c.goaways else None
    t.check(inflight and c.goaways and last >= max(s.id for s in sts),
            "SIGHUP with 3 streams waiting on a slow origin: the client "
            "gets GOAWAY, its last stream ID covers them (>= %d)"
            % sts[-1].id, lambda: ["in flight at the SIGHUP: %s" % inflight,
                                   c.why()])
    good = [s for s in sts if s.status == 200 and s.ended and
            len(s.data) == 200000 and s.sha() == s.get("x-body-sha256")]
    t.check(len(good) == 3, "the 3 streams in flight complete with their "
            "whole 200000-byte bodies after the GOAWAY",
            lambda: [s.describe()[:300] for s in sts] + [c.why()])
    c.run_until(lambda: c.eof, ptest.bound(10))
    t.check(good and c.eof and c.error is None,
            "then the proxy closes the old connection (within "
            "shutdown_timeout)", c.why())
    c.close()
    t.check(bool(p.wait_log(r"reloaded .*generation 2",
                            timeout=ptest.bound(10))),
            "the reload happened (generation 2)", H.log_tail(p))
    st = h2t.fetch(port, "127.0.0.1:%d" % o.port, "/len?n=10&id=after-hup")
    t.check(isinstance(st, h2t.Stream) and st.status == 200 and
            bytes(st.data) == H.pattern(10),
            "a new connection after the reload is served over HTTP/2",
            lambda: h2t.describe(st))


def main(t):
    if not h2t.ready(t, "HTTP/2 to the proxy (h2c)", [AL.missing]):
        return
    o = H.origin(t)
    p, port, jlog = h2t.logged_proxy(t, AL.module)
    w0 = p.workers()

    http11_and_settings(t, p, port, o)
    part = h2t.Parts(t)
    parts = part.got
    part("requests", requests, t, port, o)
    part("200 requests", many, t, port, o)
    part("20 streams at once", concurrent, t, port)
    part("origin connections kept per stream", pool_kept, t)
    part("errors", errors, t, p, port, o)
    part("access log", access_log, t, jlog, parts["requests"] or {},
         parts["200 requests"] or {})
    part("auth", auth, t, o)
    part("credentials carried over", auth_carried, t, o)
    part("pt_conn_owner", owner, t, o)
    part("http2 = false", no_http2, t, o)
    part("nghttp", nghttp, t, port, o)
    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)
    w = p.workers()
    t.check(w == w0, "the worker pids are unchanged (no worker died)",
            lambda: ["before %s, now %s" % (w0, w)] + H.log_tail(p)())
    part("GOAWAY on reload", goaway_on_reload, t, p, port, o)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("h2_proxy").run(main)
