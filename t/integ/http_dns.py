#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Host names through the asynchronous resolver, against a tiny DNS server
the test runs (resolver.servers): a name with an A record works (for GET
and CONNECT, in any letter case); an unknown name gets 502 at once; a
name with AAAA and A where only one family has the origin listening still
works (fallback to the other address); AAAA only works; answers are
cached for their TTL and asked again after it; a DNS server that never
answers gives a 502/504 within the connect timeout, no hang. IPv6
literals work; "localhost" resolves from /etc/hosts with the default
resolver configuration.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

CONNECT_TIMEOUT = 3


def main(t):
    v6 = ptest.have_ipv6()
    # the other family must have nothing on the same port: a few tries
    # make a collision with some other process's port all but impossible
    for _ in range(5):
        o4 = H.origin(t)
        o6 = H.origin(t, "::1") if v6 else None
        alone4 = ptest.try_connect(o4.port, "::1") != "ok" if v6 else True
        alone6 = (ptest.try_connect(o6.port, "127.0.0.1") != "ok") if o6 \
            else False
        if not v6 or (alone4 and alone6):
            break
    table = {
        "origin.test": {"A": ["127.0.0.1"]},
        "dual4.test": {"A": ["127.0.0.1"], "AAAA": ["::1"]},
        "dual6.test": {"A": ["127.0.0.1"], "AAAA": ["::1"]},
        "six.test": {"AAAA": ["::1"]},
        "silent.test": "drop",
    }
    dns = H.dns_server(t, table, ttl=300)
    # no upstream pool: each request resolves (or hits the cache)
    p, port = H.start(t, resolver={"servers": dns.address, "timeout": 1},
                      limits={"connect_timeout": CONNECT_TIMEOUT},
                      http={"connect_ports": "*", "upstream_keepalive": 0})
    w0 = p.workers()

    def hit(url, tag):
        t0 = time.monotonic()
        r = H.get(port, url)
        return r, time.monotonic() - t0

    r, dt = hit("http://origin.test:%d/echo?id=n1" % o4.port, "n1")
    g = o4.reqs_for("id=n1")
    t.check(isinstance(r, H.Resp) and r.status == 200 and g and
            H.fields(g[0]["headers"], "host") == ["origin.test:%d" % o4.port],
            "a name with an A record: 200, Host is the name",
            lambda: H.describe(r) + ["DNS queries %r" % dns.queries] +
            H.log_tail(p)())
    asked = dns.count("origin.test")
    r, dt = hit("http://origin.test:%d/echo?id=n1b" % o4.port, "n1b")
    t.check(isinstance(r, H.Resp) and r.status == 200 and asked > 0 and
            dns.count("origin.test") == asked,
            "a second request for the name is answered from the cache (no "
            "new query within the TTL)", lambda: H.describe(r) + [
                "queries %r" % (dns.queries,)])
    r, dt = hit("http://ORIGIN.Test:%d/echo?id=n2" % o4.port, "n2")
    t.check(isinstance(r, H.Resp) and r.status == 200,
            "the same name in other letter case works", lambda: H.describe(r))

    r, dt = hit("http://nx.test:%d/echo?id=nx" % o4.port, "nx")
    t.check(isinstance(r, H.Resp) and r.status == 502 and
            dt < ptest.bound(2) and r.body_len > 0,
            "an unknown name (NXDOMAIN): 502 with a body within %.0f s"
            % ptest.bound(2), lambda: H.describe(r) + ["after %.1f s" % dt])

    if not (v6 and alone4 and alone6):
        for d in ("dual-stack fallback", "dual-stack fallback (v6 side)",
                  "AAAA only", "IPv6 literal"):
            if v6:
                t.check(False, d, "every origin port tried was also "
                        "taken in the other family")
            else:
                t.skip(d, "no IPv6 loopback", need="ipv6")
    else:
        r, dt = hit("http://dual4.test:%d/echo?id=d4" % o4.port, "d4")
        t.check(isinstance(r, H.Resp) and r.status == 200 and
                o4.reqs_for("id=d4"),
                "AAAA ::1 and A 127.0.0.1, origin only on 127.0.0.1: 200",
                lambda: H.describe(r) + ["after %.1f s" % dt] +
                H.log_tail(p)())
        r, dt = hit("http://dual6.test:%d/echo?id=d6" % o6.port, "d6")
        t.check(isinstance(r, H.Resp) and r.status == 200 and
                o6.reqs_for("id=d6"),
                "AAAA ::1 and A 127.0.0.1, origin only on ::1: 200",
                lambda: H.describe(r) + ["after %.1f s" % dt] +
                H.log_tail(p)())
        r, dt = hit("http://six.test:%d/echo?id=s6" % o6.port, "s6")
        t.check(isinstance(r, H.Resp) and r.status == 200 and
                o6.reqs_for("id=s6"), "a name with only AAAA ::1: 200",
                lambda: H.describe(r) + H.log_tail(p)())
        r, dt = hit("http://[::1]:%d/echo?id=lit6" % o6.port, "lit6")
        g = o6.reqs_for("id=lit6")
        t.check(isinstance(r, H.Resp) and r.status == 200 and g and
                H.fields(g[0]["headers"], "host") == ["[::1]:%d" % o6.port],
                "IPv6 literal http://[::1]:port/: 200, Host '[::1]:port'",
                lambda: H.describe(r) + ["origin %r" % (g,)])

    # CONNECT by name
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    conn.send(b"CONNECT origin.test:%d HTTP/1.1\r\nHost: origin.test:%d\r\n"
              b"\r\n" % (o4.port, o4.port))
    try:
        r = H.read_response(conn, "CONNECT")
        if r.status == 200:
            conn.send(H.request_bytes("GET", "/echo?id=tun",
                                      [("Host", "x")]))
            r2 = H.read_response(conn)
        else:
            r2 = None
    except Exception as e:
        r, r2 = "%s: %s" % (type(e).__name__, e), None
    conn.close()
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            isinstance(r2, H.Resp) and r2.status == 200,
            "CONNECT origin.test:port: 200, the tunnel reaches the origin",
            lambda: H.describe(r) + H.describe(r2))

    # a DNS server that never answers
    r, dt = hit("http://silent.test:%d/echo?id=sil" % o4.port, "sil")
    t.check(isinstance(r, H.Resp) and r.status in (502, 504) and
            dt < CONNECT_TIMEOUT + ptest.bound(3),
            "a DNS server that never answers: 502 or 504 within "
            "connect_timeout (%d s) and a little" % CONNECT_TIMEOUT,
            lambda: H.describe(r) + ["after %.1f s" % dt] + H.log_tail(p)())
    r, dt = hit("http://origin.test:%d/echo?id=after-silent" % o4.port, "a")
    t.check(isinstance(r, H.Resp) and r.status == 200,
            "... and names still resolve afterwards", lambda: H.describe(r))
    t.check(not o4.bad and not (o6 and o6.bad),
            "the origins found nothing wrong in what they got",
            o4.bad + (o6.bad if o6 else []))
    H.finish(t, p, w0)

    # TTL: a 1-second answer is asked again after it expires (no upstream
    # pool: a pooled connection to the same host needs no resolving)
    dns1 = H.dns_server(t, {"short.test": {"A": ["127.0.0.1"]}}, ttl=1)
    p1, port1 = H.start(t, resolver={"servers": dns1.address, "min_ttl": 0,
                                     "timeout": 1},
                        http={"connect_ports": "*", "upstream_keepalive": 0})
    r1 = H.get(port1, "http://short.test:%d/echo?id=ttl1" % o4.port)
    n1 = dns1.count("short.test")
    time.sleep(2.2)
    r2 = H.get(port1, "http://short.test:%d/echo?id=ttl2" % o4.port)
    n2 = dns1.count("short.test")
    t.check(isinstance(r1, H.Resp) and r1.status == 200 and
            isinstance(r2, H.Resp) and r2.status == 200 and n2 > n1 > 0,
            "an answer with TTL 1 s is asked again after 2 s",
            lambda: ["queries %d then %d" % (n1, n2)] + H.describe(r1) +
            H.describe(r2))
    t.stop_portico(p1)

    # default resolver (no servers): localhost from /etc/hosts
    p2, port2 = H.start(t)
    r = H.get(port2, "http://localhost:%d/echo?id=lh" % o4.port)
    g = o4.reqs_for("id=lh")
    t.check(isinstance(r, H.Resp) and r.status == 200 and g and
            H.fields(g[0]["headers"], "host") == ["localhost:%d" % o4.port],
            "default resolver: http://localhost:port/ works (/etc/hosts)",
            lambda: H.describe(r) + H.log_tail(p2)())
    t.stop_portico(p2)


if __name__ == "__main__":
    ptest.Test("http_dns").run(main)
