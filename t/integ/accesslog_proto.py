#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The accesslog module's records for every kind of transaction, with the
real auth and acl modules loaded beside it (JSON and squid logs):

- HTTP through the auth module: no credentials, 407 (TCP_DENIED/407, no
  user); a wrong password, 407; the right one, 200 with the user;
- HTTP to a host an acl rule denies: 403, the rule's name as the label,
  the refusal reason as the error, TCP_DENIED/403, no upstream; an
  allowed request carries the allowing rule's label; a name refused at
  DIAL (it resolves to a denied address) names no upstream either
  (HIER_NONE), since nothing was connected to;
- a CONNECT tunnel to an echo server: proto connect, target host:port,
  status 200, bytes both ways exactly what the tunnel carried (plus the
  CONNECT head and the 200 line), TCP_TUNNEL/200 in squid;
- a SOCKS5 session with username/password: proto socks5, the user,
  status 0, the bytes the tunnel carried; a SOCKS5 request denied by
  the acl: status 2, the label, TCP_DENIED/403;
- a UDP association: proto udp, the datagrams' payload bytes both ways;
- a SOCKS5 domain name holding a newline, quotes, a backslash, control
  bytes and invalid UTF-8 is no host (worker/host.c): refused with 0x04,
  its record names no target, both logs keep their layout;
- every squid line is read by Calamaris (the Debian package), when
  installed, as many requests as the JSON log has records, none invalid;
  without it, each line matches Calamaris's own detection expression.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import authtest as A  # noqa: E402
import accesslogtest as AL  # noqa: E402

# Calamaris 2.99's test for Squid's native layout (/usr/bin/calamaris).
CALAMARIS_RE = re.compile(
    r"^\s*\d+\.\d+\s+\d+\s+[\w\-\.:]+\s+\w+/\d+\s+\d+\s+[\w-]+\s+\S+\s+"
    r"\S+\s+\w+/\S+\s+\S+$")


def start(t):
    ports = {k: ptest.free_port() for k in ("web", "open", "socks",
                                            "sopen")}
    users = A.write_users(t, [("alice", A.argon2id("secret"))])
    dns = H.dns_server(t, {"known.test": {"A": ["127.0.0.1"]},
                           "three.test": {"A": ["127.0.0.3"]}})
    jlog, slog = t.path("access.json"), t.path("access.squid")
    mods = [
        '{ name = "auth"; path = "%s"; userlist = "%s"; }' % (A.AUTH_SO,
                                                             users),
        '{ name = "acl"; path = "%s"; default = "allow"; '
        'allow_private = true; rules = ( '
        '{ name = "blocked"; action = "deny"; host = [ "blocked.test" ]; },'
        ' { name = "three"; action = "deny"; dst = [ "127.0.0.3/32" ]; },'
        ' { name = "local"; action = "allow"; dst = [ "127.0.0.0/8" ]; } );'
        ' }' % AL.ACL_SO,
        AL.module(['file = "%s"; format = "json";' % jlog,
                   'file = "%s"; format = "squid";' % slog])]
    ls = [AL.listener("web", ports["web"]),
          AL.listener("open", ports["open"],
                      extra="auth = { required = false; }; "),
          AL.listener("socks", ports["socks"], "socks5"),
          AL.listener("sopen", ports["sopen"], "socks5",
                      extra='auth = { no_auth_from = [ "127.0.0.0/8" ]; }; ')]
    conf = AL.conf(t, ls, mods, extra="resolver = { servers = \"%s\"; "
                   "timeout = 1; };" % dns.address)
    p = t.portico(conf)
    return p, ports, jlog, slog


def find(jlog, pred):
    """The first record for which pred holds, waiting for it: records are
    written when a transaction ends, which for a tunnel is when portico
    sees the close, maybe after the test's next request."""
    recs = AL.wait_json(jlog, lambda rs: any(pred(r) for r in rs))
    m = [r for r in recs if pred(r)]
    return m[0] if m else {}


def squid_find(slog, pred):
    """The first squid line (as its fields) for which pred holds."""
    def get():
        for ln in AL.squid_lines(slog):
            m = AL.SQUID_RE.match(ln)
            if m and pred(m.groupdict()):
                return m.groupdict()
        return None
    ptest.wait_for(lambda: get() is not None, ptest.bound(5))
    return get() or {"raw": AL.squid_lines(slog)[-3:]}


def refusals(t, p, ports, origin, jlog, slog, n):
    url = origin.url + "/len?n=10&k="
    rc, codes, err, _ = A.curl_proxy(ports["web"], [url + "1"])
    n += 1
    r = find(jlog, lambda x: (x["target"] or "").endswith("k=1"))
    s = squid_find(slog, lambda g: g["url"].endswith("k=1"))
    t.check(codes == [407] and r.get("status") == 407 and
            r.get("user") is None and r.get("upstream") is None and
            r.get("proto") == "http" and s.get("code") == "TCP_DENIED" and
            s.get("status") == "407" and s.get("hier") == "HIER_NONE",
            "no credentials: 407; the record says 407, no user, no "
            "upstream; squid TCP_DENIED/407 HIER_NONE",
            lambda: [str(codes), err, str(r), str(s)])
    rc, codes, err, _ = A.curl_proxy(ports["web"], [url + "2"],
                                     user="alice:wrong")
    n += 1
    r = find(jlog, lambda x: (x["target"] or "").endswith("k=2"))
    t.check(codes == [407] and r.get("status") == 407 and
            r.get("error") is not None,
            "a wrong password: 407 with a reason", lambda: [str(codes),
                                                           str(r)])
    rc, codes, err, _ = A.curl_proxy(ports["web"], [url + "3"],
                                     user="alice:secret")
    n += 1
    r = find(jlog, lambda x: (x["target"] or "").endswith("k=3"))
    s = squid_find(slog, lambda g: g["url"].endswith("k=3"))
    t.check(codes == [200] and r.get("status") == 200 and
            r.get("user") == "alice" and r.get("label") == "local" and
            s.get("user") == "alice" and s.get("code") == "TCP_MISS",
            "the right password: 200, user alice in both logs, the "
            "allowing rule as the label", lambda: [str(codes), str(r),
                                                  str(s)])
    cp = H.curl(["-x", "http://127.0.0.1:%d" % ports["open"], "-o",
                 "/dev/null", "-w", "%{http_code}",
                 "http://blocked.test/some/where?x=1"])
    n += 1
    r = find(jlog, lambda x: x["target"] ==
             "http://blocked.test/some/where?x=1")
    s = squid_find(slog, lambda g: g["url"] ==
                   "http://blocked.test/some/where?x=1")
    t.check(cp.stdout == b"403" and r.get("status") == 403 and
            r.get("label") == "blocked" and r.get("error") and
            r.get("upstream") is None and
            r.get("target") == "http://blocked.test/some/where?x=1" and
            r.get("listener") == "open" and
            s.get("code") == "TCP_DENIED" and s.get("status") == "403" and
            s.get("url") == "http://blocked.test/some/where?x=1",
            "acl deny: 403, the rule's name as the label, a reason, no "
            "upstream; squid TCP_DENIED/403 with the URL",
            lambda: [repr(cp.stdout), str(r), str(s)])
    # Refused at DIAL, once resolved: nothing was connected to, so no
    # upstream is named (it named the refused 127.0.0.3 before).
    cp = H.curl(["-x", "http://127.0.0.1:%d" % ports["open"], "-o",
                 "/dev/null", "-w", "%{http_code}", "http://three.test/d"])
    n += 1
    r = find(jlog, lambda x: x["target"] == "http://three.test/d")
    s = squid_find(slog, lambda g: g["url"] == "http://three.test/d")
    t.check(cp.stdout == b"403" and r.get("status") == 403 and
            r.get("label") == "three" and r.get("upstream") is None and
            s.get("hier") == "HIER_NONE",
            "acl deny at DIAL (a name resolving to a denied address): "
            "403, no upstream in the record, squid HIER_NONE",
            lambda: [repr(cp.stdout), str(r), str(s)])
    return n


def connect(t, p, ports, echo, jlog, slog, n):
    c = H.Conn.to(ports["open"], timeout=ptest.bound(10))
    head = "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (
        echo.port, echo.port)
    c.send(head)
    resp = c.read_head()
    payload = os.urandom(30000)
    c.send(payload)
    got = c.read_exact(len(payload))
    c.close()
    n += 1
    r = find(jlog, lambda x: x["proto"] == "connect")
    s = squid_find(slog, lambda g: g["method"] == "CONNECT" and
                   g["code"] == "TCP_TUNNEL" and g["user"] == "-")
    t.check(resp.startswith(b"HTTP/1.1 200") and got == payload and
            r.get("proto") == "connect" and r.get("method") == "CONNECT" and
            r.get("target") == "127.0.0.1:%d" % echo.port and
            r.get("status") == 200 and
            r.get("bytes_in") == len(head) + len(payload) and
            r.get("bytes_out") == len(resp) + len(payload) and
            r.get("upstream_port") == echo.port and
            s.get("code") == "TCP_TUNNEL" and s.get("method") == "CONNECT" and
            s.get("url") == "127.0.0.1:%d" % echo.port,
            "CONNECT tunnel: proto connect, target host:port, 200, bytes "
            "both ways (head and 30000 bytes), upstream; squid TCP_TUNNEL",
            lambda: [repr(resp), "echo ok %s" % (got == payload), str(r),
                     str(s)])
    return n


def socks(t, p, ports, echo, jlog, slog, n):
    rep, c = S.connect5(ports["socks"], "127.0.0.1", echo.port,
                        auth=("alice", "secret"))
    payload = os.urandom(5000)
    ok, why = S.echo_check(c, payload) if S.ok5(rep) else (False, repr(rep))
    c.close()
    n += 1
    r = find(jlog, lambda x: x["proto"] == "socks5" and
             x["listener"] == "socks")
    s = squid_find(slog, lambda g: g["user"] == "alice" and
                   g["method"] == "CONNECT")
    # what crossed the client's connection: greeting (3), RFC 1929 (1 +
    # 1 + 5 + 1 + 6), request (10), the payload; method (2), status (2),
    # reply (10), the payload
    t.check(ok and r.get("proto") == "socks5" and r.get("user") == "alice" and
            r.get("status") == 0 and r.get("listener") == "socks" and
            r.get("target") == "127.0.0.1:%d" % echo.port and
            r.get("bytes_in") == 27 + len(payload) and
            r.get("bytes_out") == 14 + len(payload) and
            r.get("upstream_port") == echo.port and
            s.get("code") == "TCP_TUNNEL" and s.get("status") == "200" and
            s.get("user") == "alice",
            "SOCKS5 session: proto socks5, user, status 0, target, bytes "
            "both ways (the handshake and 5000 bytes); squid TCP_TUNNEL/200 with the user",
            lambda: [why, str(r), str(s)])
    rep, c = S.connect5(ports["sopen"], "blocked.test", 80)
    if c is not None:
        c.close()
    n += 1
    r = find(jlog, lambda x: x["target"] == "blocked.test:80")
    s = squid_find(slog, lambda g: g["url"] == "blocked.test:80")
    t.check(getattr(rep, "rep", None) == 2 and r.get("status") == 2 and
            r.get("label") == "blocked" and r.get("proto") == "socks5" and
            r.get("target") == "blocked.test:80" and
            s.get("code") == "TCP_DENIED" and s.get("status") == "403",
            "SOCKS5 denied by the acl: reply 2, status 2, the rule's label; "
            "squid TCP_DENIED/403", lambda: [repr(rep), str(r), str(s)])
    return n


def udp(t, p, ports, jlog, slog, n):
    echo = S.udp_echo(t)
    a = S.Udp(ports["sopen"])
    sizes = [100, 1000, 3000]
    got = 0
    if a.ok():
        for k in sizes:
            a.send("127.0.0.1", echo.port, b"u" * k)
            d = a.recv(ptest.bound(3))
            if d and d[3] == b"u" * k:
                got += 1
    a.close()
    n += 1
    r = find(jlog, lambda x: x["proto"] == "udp")
    s = squid_find(slog, lambda g: g["method"] == "UDP")
    # The control connection's bytes (greeting and request: 13; method
    # and reply: 12) and the datagrams' payloads, each way alike (not the
    # SOCKS headers: those of the replies were counted once).
    t.check(got == len(sizes) and r.get("proto") == "udp" and
            r.get("bytes_in") == 13 + sum(sizes) and
            r.get("bytes_out") == 12 + sum(sizes) and
            r.get("status") == 0 and r.get("method") == "UDP" and
            s.get("method") == "UDP" and s.get("code") == "TCP_TUNNEL",
            "UDP association: proto udp, the datagrams' 4100 payload bytes "
            "each way (and the control connection's), status 0; squid "
            "TCP_TUNNEL/200 UDP",
            lambda: [a.describe(), "echoed %d" % got, str(r), str(s)])
    return n


def hostile(t, p, ports, jlog, slog, n):
    name = b'ev"il\\\n\r\x01}{\xff\xc3.test'
    rep, c = S.connect5(ports["sopen"], name.decode("latin-1"), 80)
    if c is not None:
        c.close()
    n += 1
    ptest.wait_for(lambda: find(jlog, lambda x: x.get("error") ==
                                "bad destination name"), ptest.bound(5))
    r = find(jlog, lambda x: x.get("error") == "bad destination name")
    recs, bad = AL.json_records(jlog)
    t.check(getattr(rep, "rep", None) == 4 and not bad and
            r.get("proto") == "socks5" and r.get("status") == 4 and
            r.get("target") is None,
            "a SOCKS5 name holding a newline, quotes, a backslash, controls "
            "and invalid UTF-8 is no host: refused (0x04) before anything "
            "reads it, its record says so and names no target (the JSON "
            "log still parses)", lambda: bad + [str(rep), str(r)])
    ptest.wait_for(lambda: len(AL.squid_lines(slog)) >= n, ptest.bound(5))
    sq = AL.squid_lines(slog)
    with open(slog, "rb") as f:
        raw = f.read()
    t.check(len(sq) == n and AL.SQUID_RE.match(sq[-1]) is not None and
            b"ev\"il" not in raw,
            "squid: the refusal in one line, in Squid's layout, without the "
            "name's bytes", lambda: sq[-2:])
    return n


def calamaris(t, slog, n):
    ptest.wait_for(lambda: len(AL.squid_lines(slog)) >= n, ptest.bound(5))
    sq = AL.squid_lines(slog)
    t.check(len(sq) == n and all(CALAMARIS_RE.match(s) for s in sq),
            "every squid line matches Calamaris's detection expression",
            lambda: [s for s in sq if not CALAMARIS_RE.match(s)])
    if not AL.have("calamaris"):
        t.diag("calamaris not installed: its expression was checked, "
               "not the program")
        return
    cp = subprocess.run(["calamaris", "-a", slog], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=ptest.bound(30))
    out = cp.stdout.decode(errors="replace")
    parsed = re.search(r"lines parsed:\s+lines\s+(\d+)", out)
    invalid = re.search(r"invalid lines:\s+lines\s+(\d+)", out)
    total = re.search(r"Total amount:\s+requests\s+(\d+)", out)
    t.check(cp.returncode == 0 and parsed and invalid and total and
            int(parsed.group(1)) == n and int(invalid.group(1)) == 0 and
            int(total.group(1)) == n,
            "calamaris -a reads the squid log: %d lines parsed, none "
            "invalid, %d requests" % (n, n),
            lambda: ptest.tail(out, 30) + [cp.stderr.decode()])


def main(t):
    for why in (AL.missing(), A.missing()):
        if why:
            t.skip("accesslog records of every protocol", why,
                   need=ptest.need_of(why))
            return
    if not os.path.exists(AL.ACL_SO):
        t.skip("accesslog records of every protocol",
               "acl.so not built", need="acl.so")
        return
    origin = H.origin(t)
    echo = t.echo_server()
    p, ports, jlog, slog = start(t)
    w0 = p.workers()
    n = refusals(t, p, ports, origin, jlog, slog, 0)
    n = connect(t, p, ports, echo, jlog, slog, n)
    n = socks(t, p, ports, echo, jlog, slog, n)
    n = udp(t, p, ports, jlog, slog, n)
    n = hostile(t, p, ports, jlog, slog, n)
    calamaris(t, slog, n)
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("accesslog_proto").run(main)
