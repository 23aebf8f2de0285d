#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Requests in absolute form reach the origin as an origin would expect them:
the method as sent (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS and an
unknown token), the target in origin form, exactly one Host taken from the
absolute URI (a client Host that differs is replaced), Via added (and not
with via = false), every hop-by-hop field removed (Connection and each
field it names, Keep-Alive, Proxy-Connection, Proxy-Authorization, TE,
Trailer, Upgrade), end-to-end fields kept in order. Set-Cookie fields
from the origin arrive as separate fields. curl -x works for GET, HEAD,
POST and PUT. Methods are case-sensitive (RFC 9110 9.1): the proxy's own
answer to "head" carries the body its Content-Length announces, as to any
method but HEAD.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

HOP = ["connection", "x-hop-a", "x-hop-b", "keep-alive", "proxy-connection",
       "proxy-authorization", "te", "trailer", "upgrade"]
END = [("X-End-1", "one"), ("Accept", "*/*"), ("Cookie", "k=v; k2=v2"),
       ("User-Agent", "ptest/1"), ("X-End-2", "two, three")]


def request_headers():
    return [("Host", "wrong.example:81"),
            ("X-End-1", "one"),
            ("Connection", "keep-alive, X-Hop-A"),
            ("Connection", "x-hop-b"),
            ("X-Hop-A", "1"),
            ("Accept", "*/*"),
            ("X-Hop-B", "2"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"),
            ("Cookie", "k=v; k2=v2"),
            ("Proxy-Authorization", "Basic Zm9vOmJhcg=="),
            ("TE", "trailers"),
            ("Trailer", "X-Whatever"),
            ("Upgrade", "h2c"),
            ("User-Agent", "ptest/1"),
            ("X-End-2", "two, three")]


def main(t):
    o = H.origin(t)
    p, port = H.start(t)
    w0 = p.workers()
    netloc = "127.0.0.1:%d" % o.port

    hop_bad, end_bad, via_bad, host_bad = [], [], [], []
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    t.at_exit(conn.close)
    for m in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
              "PURGEX"):
        tag = "id=%s-%s" % (m, os.urandom(4).hex())
        body = None
        if m in ("POST", "PUT", "PATCH"):
            body = os.urandom(1000 + len(m))
        try:
            conn.send(H.request_bytes(m, "%s/echo?%s" % (o.url, tag),
                                      request_headers(), body))
            r = H.read_response(conn, m)
        except Exception as e:
            r = "%s: %s" % (type(e).__name__, e)
        got = o.reqs_for(tag)
        rq = got[0] if got else None

        def why(r=r, got=got):
            return ["response: %r" % (r,), "origin saw: %r" % (got,)] + \
                H.log_tail(p)()
        ok = (not isinstance(r, str) and r.status == 200 and len(got) == 1
              and rq["method"] == m and rq["target"] == "/echo?" + tag and
              rq["version"] == "HTTP/1.1" and
              rq["body_len"] == (len(body) if body else 0) and
              (body is None or rq["body_sha256"] == H.sha(body)))
        if ok and m == "HEAD":
            ok = r.framing == "none" and r.body_len == 0
        t.check(ok, "%s: 200; the origin got '%s /echo?%s HTTP/1.1'%s"
                % (m, m, tag.split("-")[0] + "-...",
                   " and the body exactly" if body else ""), why)
        if rq is None:
            continue
        hs = rq["headers"]
        names = [k.lower() for k, _ in hs]
        hosts = H.fields(hs, "host")
        if hosts != [netloc]:
            host_bad.append("%s: Host fields %r" % (m, hosts))
        if names and names[0] != "host":
            host_bad.append("%s: Host is not the first field: %r" %
                            (m, names))
        left = [n for n in names if n in HOP]
        if left:
            hop_bad.append("%s: %s" % (m, left))
        e2e = [(k, v) for k, v in hs if k.lower() in
               {n.lower() for n, _ in END}]
        if e2e != END:
            end_bad.append("%s: %r" % (m, e2e))
        via = H.tokens(hs, "via")
        if not any("portico" in v for v in via):
            via_bad.append("%s: origin saw Via %r" % (m, H.fields(hs, "via")))
        if not isinstance(r, str) and not any("portico" in v for v in
                                              r.tokens("via")):
            via_bad.append("%s: response Via %r" % (m, r.all("via")))
    t.check(not host_bad, "every method: the origin got exactly one Host, "
            "the authority of the absolute URI (the client's differing Host "
            "replaced)", host_bad)
    t.check(not hop_bad, "every method: no hop-by-hop field reached the "
            "origin (Connection, fields it names, Keep-Alive, "
            "Proxy-Connection, Proxy-Authorization, TE, Trailer, Upgrade)",
            hop_bad)
    t.check(not end_bad, "every method: end-to-end fields reached the origin "
            "unchanged and in order", end_bad)
    t.check(not via_bad, "every method: Via names portico towards the origin "
            "and towards the client", via_bad)
    conn.close()

    # Via from upstream of us is kept, ours appended
    r = H.get(port, o.url + "/echo?id=via2", headers=[("Via", "1.0 fred")])
    hs = r.json()["headers"] if not isinstance(r, str) and r.status == 200 \
        else []
    via = H.tokens(hs, "via")
    t.check(len(via) == 2 and via[0] == "1.0 fred" and "portico" in via[1],
            "a client's Via is kept and portico's follows it",
            "origin saw Via fields %r" % (H.fields(hs, "via"),))

    # Set-Cookie: separate fields, never combined
    r = H.get(port, o.url + "/cookies")
    want = ["a=1; Path=/", "b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT",
            "c=3"]
    t.check(not isinstance(r, str) and r.all("set-cookie") == want,
            "three Set-Cookie fields from the origin arrive as three fields, "
            "values intact", lambda: r if isinstance(r, str) else
            r.describe())

    # hop-by-hop fields of the response stay between origin and proxy
    r = H.get(port, o.url + "/hop")
    names = [k.lower() for k, _ in r.headers] if isinstance(r, H.Resp) \
        else []
    left = [n for n in names if n in ("x-resp-hop", "keep-alive",
                                      "proxy-connection", "upgrade")]
    ctok = r.tokens("connection") if isinstance(r, H.Resp) else []
    t.check(isinstance(r, H.Resp) and r.status == 200 and not left and
            "x-resp-hop" not in ctok and r.get("x-resp-end") == "kept",
            "hop-by-hop fields of the response (Connection and what it "
            "names, Keep-Alive, Proxy-Connection, Upgrade) do not reach the "
            "client; end-to-end ones do", lambda: H.describe(r))

    # scheme and host are case-insensitive
    r = H.get(port, "HTTP://127.0.0.1:%d/echo?id=upper" % o.port)
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            o.reqs_for("id=upper"),
            "an absolute URI with an upper-case scheme works",
            lambda: H.describe(r))

    # an origin-form-only detail: a target with an empty path
    r = H.get(port, "http://127.0.0.1:%d?id=nopath" % o.port)
    got = o.reqs_for("id=nopath")
    t.check(not isinstance(r, str) and r.status == 200 and got and
            got[0]["target"] in ("/?id=nopath",),
            "an absolute URI with an empty path reaches the origin as "
            "'/?query'", lambda: H.describe(r) + [
                "origin saw %r" % ([g["target"] for g in got],)])

    # curl -x
    if not H.have_curl():
        t.skip("curl -x", "no curl")
    else:
        proxy = "http://127.0.0.1:%d" % port
        cp = H.curl(["-x", proxy, o.url + "/echo?id=curl-get"])
        got = o.reqs_for("id=curl-get")
        t.check(cp.returncode == 0 and got and got[0]["method"] == "GET" and
                got[0]["target"] == "/echo?id=curl-get",
                "curl -x: GET reaches the origin and the echo comes back",
                lambda: ["curl exit %d: %s" % (cp.returncode, cp.stderr),
                         "stdout %r" % cp.stdout[:300]] + H.log_tail(p)())
        cp = H.curl(["-I", "-x", proxy, o.url + "/len?n=5000&id=curl-head"])
        out = cp.stdout.decode("latin-1")
        t.check(cp.returncode == 0 and out.startswith("HTTP/1.1 200") and
                "content-length: 5000" in out.lower(),
                "curl -x -I: HEAD gets 200 with the Content-Length and no "
                "body", lambda: ["curl exit %d: %s" % (cp.returncode,
                                                        cp.stderr), out])
        cp = H.curl(["-x", proxy, "-d", "a=1&b=2",
                     o.url + "/echo?id=curl-post"])
        got = o.reqs_for("id=curl-post")
        t.check(cp.returncode == 0 and got and got[0]["method"] == "POST"
                and got[0]["body"] == "a=1&b=2",
                "curl -x -d: POST reaches the origin with its body",
                lambda: ["curl exit %d: %s" % (cp.returncode, cp.stderr),
                         "origin saw %r" % (got,)])
        data = os.urandom(300000)
        path = t.path("put.bin")
        with open(path, "wb") as f:
            f.write(data)
        cp = H.curl(["-x", proxy, "-T", path, o.url + "/echo?id=curl-put"])
        got = o.reqs_for("id=curl-put")
        t.check(cp.returncode == 0 and got and got[0]["method"] == "PUT"
                and got[0]["body_len"] == len(data) and
                got[0]["body_sha256"] == H.sha(data),
                "curl -x -T: PUT of 300000 bytes reaches the origin exactly",
                lambda: ["curl exit %d: %s" % (cp.returncode, cp.stderr),
                         "origin saw %r" % ([(g["method"], g["body_len"])
                                             for g in got],)])
    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)
    H.finish(t, p, w0)

    # via = false
    p2, port2 = H.start(t, http={"connect_ports": "*", "via": False})
    r = H.get(port2, o.url + "/echo?id=novia")
    hs = r.json()["headers"] if not isinstance(r, str) and r.status == 200 \
        else None
    t.check(hs is not None and not H.fields(hs, "via") and
            not r.all("via"),
            "via = false: no Via towards the origin or the client",
            lambda: ["response %r" % (r,), "origin headers %r" % (hs,)])
    # "head" is not HEAD: our own answer (a 502) has its body
    dead = ptest.free_port()
    st, got, how, _ = H.raw_exchange(
        port2, b"head http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n"
        % dead, timeout=ptest.bound(5))
    head, body = H.split_response(got)
    cl = H.field(H.head_fields(head), "content-length")
    t.check(st == 502 and cl is not None and cl.isdigit() and
            int(cl) == len(body) > 0,
            "a method \"head\" (not HEAD): the 502 comes with the body its "
            "Content-Length says", repr(got[:300]))
    t.stop_portico(p2)


if __name__ == "__main__":
    ptest.Test("http_methods").run(main)
