#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The peers of the parent-proxy scenarios (parenttest.py) proved against
themselves, with no portico in between: what a chain test will rely on
is what these real programs do here.

- the APR1 hashes parenttest writes for Squid equal OpenSSL's;
- the counting origin, directly: two GETs on one keep-alive connection
  get 1 KiB of "x" each (one connection accepted), a POST gets its body's
  length back, and each request is recorded with its path, fields, body
  length and peer address;
- Debian's Squid, open (no users): a GET through it gets the origin's
  1 KiB, and the origin sees Squid's Via ("portico-parent (squid/...)")
  and no Proxy-Authorization, from Squid's connection on 127.0.0.1; a
  POST of 3000 bytes arrives whole; a CONNECT to a TCP echo is a tunnel
  (4 KiB echoed); access.log has a line for each;
- Squid with users (basic_ncsa_auth, an APR1 file written by the helper):
  a GET without credentials and one with a wrong password get 407 with
  Proxy-Authenticate: Basic realm="portico-parent" and never reach the
  origin; the right credentials get 200 and the origin sees Via and no
  Proxy-Authorization (Squid used it); CONNECT is 407 without, a tunnel
  with; access.log names the user on the allowed lines;
- Debian's danted (socksmethod none): a SOCKS5 CONNECT to the TCP echo
  succeeds and 4 KiB come back (the echo's peer is danted's external
  127.0.0.1), a client offering only username/password gets method 0xFF,
  a UDP ASSOCIATE carries a datagram to the UDP echo and back (the echo
  saw it, from 127.0.0.1), and its log names the echo in the CONNECT's
  line and the UDP echo in the association's;
- each peer stopped by its PID exits, and no child of it is left.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import parenttest as P  # noqa: E402

USER, PASSWORD = "alice", "s3cret:with colon"


def origin_direct(t, origin):
    c = H.Conn.to(origin.port, timeout=ptest.bound(10))
    local = c.sock.getsockname()[:2]
    host = "Host: 127.0.0.1:%d\r\n" % origin.port
    got = []
    try:
        for i in range(2):
            c.send("GET /direct%d HTTP/1.1\r\n%s\r\n" % (i, host))
            got.append(H.read_response(c))
        c.send("POST /direct-post HTTP/1.1\r\n%sContent-Length: 777\r\n"
               "\r\n" % host + "p" * 777)
        got.append(H.read_response(c))
    finally:
        c.close()
    a, b, post = got
    t.check(a.status == b.status == 200 and a.body == b.body == P.GET_BODY
            and origin.accepted == 1,
            "origin: two GETs on one keep-alive connection, 1 KiB of x each",
            ["accepted %d" % origin.accepted] + H.describe(a) +
            H.describe(b))
    t.check(post.status == 200 and post.body == b"777",
            "origin: a POST of 777 bytes is answered with its length",
            H.describe(post))
    reqs = origin.snapshot()
    t.check([(r["method"], r["path"], r["body_len"], r["conn"], r["seq"],
              r["peer_addr"]) for r in reqs] ==
            [("GET", "/direct0", 0, 1, 1, local),
             ("GET", "/direct1", 0, 1, 2, local),
             ("POST", "/direct-post", 777, 1, 3, local)] and
            P.header(reqs[2], "content-length") == ["777"],
            "origin: each request recorded (method, path, body length, "
            "connection, sequence, peer address, fields)", reqs)


def squid_open(t, origin, echo):
    port = ptest.free_port()
    sq = P.start_squid_parent(t, port)
    t.diag("open Squid on 127.0.0.1:%d" % port)
    if not t.check(sq.up, "open Squid answers on its loopback port",
                   sq.why):
        return
    before = origin.count()
    r = P.http_via(sq.port, origin.url + "/open-get")
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == P.GET_BODY,
            "open Squid: GET -> 200 with the origin's 1 KiB",
            lambda: H.describe(r))
    reqs = [q for q in origin.snapshot()[before:] if q["path"] == "/open-get"]
    via = P.header(reqs[0], "via") if reqs else []
    t.check(len(reqs) == 1 and len(via) == 1 and
            "portico-parent (squid/" in via[0] and
            not P.header(reqs[0], "proxy-authorization") and
            reqs[0]["peer_addr"][0] == "127.0.0.1" and
            reqs[0]["peer_addr"][1] != sq.port,
            "open Squid: the origin got the GET once, with Squid's Via, "
            "no Proxy-Authorization, from Squid's own connection", reqs)
    body = os.urandom(3000)
    r = P.http_via(sq.port, origin.url + "/open-post", method="POST",
                   body=body)
    posts = [q for q in origin.snapshot() if q["path"] == "/open-post"]
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == b"3000" and len(posts) == 1 and
            posts[0]["body_len"] == 3000 and
            posts[0]["body_sha256"] == H.sha(body),
            "open Squid: a POST of 3000 bytes reaches the origin whole "
            "(answer 3000)", lambda: H.describe(r) + [posts])
    r, c = P.connect_via(sq.port, "127.0.0.1", echo.port)
    payload = os.urandom(4096)
    try:
        ok = isinstance(r, H.Resp) and r.status == 200
        if ok:
            c.send(payload)
            got = c.read_exact(len(payload))
        else:
            got = b""
    except Exception as e:
        got = ("%s" % e).encode()
    finally:
        if c is not None:
            c.close()
    t.check(ok and got == payload,
            "open Squid: CONNECT to the echo -> 200, 4 KiB echoed",
            lambda: H.describe(r) + ["got %d bytes" % len(got)])
    lines = sq.wait_access_log(r"CONNECT 127\.0\.0\.1:%d " % echo.port)
    all_lines = sq.access_log_lines()
    t.check(any(" TCP_MISS/200 " in ln and " GET " in ln and
                "/open-get" in ln for ln in all_lines) and
            any(" TCP_MISS/200 " in ln and " POST " in ln and
                "/open-post" in ln for ln in all_lines) and
            any(" TCP_TUNNEL/200 " in ln for ln in lines),
            "open Squid: access.log has the GET, the POST and the CONNECT",
            all_lines)
    sq.stop()
    t.check(sq.gone(), "open Squid stopped by its PID, no child left",
            lambda: ["exit %s, killed children %s" % (sq.returncode,
                                                      sq.leftovers)])


def squid_auth(t, origin, echo):
    port = ptest.free_port()
    sq = P.start_squid_parent(t, port, users={USER: PASSWORD,
                                              "bob": "other"})
    t.diag("Squid with users on 127.0.0.1:%d" % port)
    if not t.check(sq.up, "Squid with users answers on its loopback port",
                   sq.why):
        return
    url = origin.url + "/auth-get"
    r0 = P.http_via(sq.port, url)
    r1 = P.http_via(sq.port, url, auth=(USER, "wrong"))
    for what, r in (("no credentials", r0), ("a wrong password", r1)):
        t.check(isinstance(r, H.Resp) and r.status == 407 and
                r.get("proxy-authenticate") == 'Basic realm="portico-parent"',
                "Squid with users: GET with %s -> 407, Proxy-Authenticate "
                "Basic realm=portico-parent" % what, lambda: H.describe(r))
    t.check(origin.count(path="/auth-get") == 0,
            "Squid with users: neither 407 reached the origin",
            origin.snapshot())
    r = P.http_via(sq.port, url, auth=(USER, PASSWORD))
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == P.GET_BODY,
            "Squid with users: GET with the right credentials -> 200 "
            "with the origin's 1 KiB", lambda: H.describe(r))
    reqs = [q for q in origin.snapshot() if q["path"] == "/auth-get"]
    t.check(len(reqs) == 1 and len(P.header(reqs[0], "via")) == 1 and
            "portico-parent (squid/" in P.header(reqs[0], "via")[0] and
            not P.header(reqs[0], "proxy-authorization") and
            not P.header(reqs[0], "authorization"),
            "Squid with users: the origin got it once, with Via and no "
            "Proxy-Authorization", reqs)
    r2 = P.http_via(sq.port, url, auth=("bob", "other"))
    t.check(isinstance(r2, H.Resp) and r2.status == 200,
            "Squid with users: a second user's credentials -> 200",
            lambda: H.describe(r2))

    r, c = P.connect_via(sq.port, "127.0.0.1", echo.port)
    if c is not None:
        c.close()
    t.check(isinstance(r, H.Resp) and r.status == 407,
            "Squid with users: CONNECT without credentials -> 407",
            lambda: H.describe(r))
    r, c = P.connect_via(sq.port, "127.0.0.1", echo.port,
                         auth=(USER, PASSWORD))
    payload = os.urandom(4096)
    got = b""
    try:
        if isinstance(r, H.Resp) and r.status == 200:
            c.send(payload)
            got = c.read_exact(len(payload))
    except Exception as e:
        got = ("%s" % e).encode()
    finally:
        if c is not None:
            c.close()
    t.check(isinstance(r, H.Resp) and r.status == 200 and got == payload,
            "Squid with users: CONNECT with credentials -> 200, 4 KiB "
            "echoed", lambda: H.describe(r) + ["got %d bytes" % len(got)])
    sq.wait_access_log(r" TCP_TUNNEL/200 .* CONNECT ")
    lines = sq.access_log_lines()
    denied = [ln for ln in lines if " TCP_DENIED/407 " in ln]
    allowed = [ln for ln in lines if "/200 " in ln]
    t.check(len(denied) == 3 and len(allowed) == 3 and
            all(ln.split()[7] in (USER, "bob") for ln in allowed) and
            sum(ln.split()[7] == USER for ln in allowed) == 2,
            "Squid with users: access.log has the three 407s and the three "
            "allowed requests, each naming its user", lines)
    sq.stop()
    t.check(sq.gone(), "Squid with users stopped by its PID, no "
            "basic_ncsa_auth left", lambda: ["exit %s, killed children %s"
                                             % (sq.returncode,
                                                sq.leftovers)])


def dante(t, echo, uecho):
    port = ptest.free_port()
    dp = P.start_dante_parent(t, port)
    t.diag("danted on 127.0.0.1:%d" % port)
    if not t.check(dp.up, "danted answers on its loopback port", dp.why):
        return
    before = len(echo.peers)
    r, c = P.socks5_connect(dp.port, "127.0.0.1", echo.port)
    payload = os.urandom(4096)
    got = b""
    try:
        if isinstance(r, P.S.Reply) and r.rep == 0:
            c.send(payload)
            got = c.read_exact(len(payload))
    except Exception as e:
        got = ("%s" % e).encode()
    finally:
        c.close()
    peers = echo.peers[before:]
    t.check(isinstance(r, P.S.Reply) and r.ver == 5 and r.rep == 0 and
            got == payload and len(peers) == 1 and
            peers[0][0] == "127.0.0.1" and (r.host, r.port) == peers[0],
            "danted: SOCKS5 CONNECT to the echo succeeds, 4 KiB echoed, "
            "the echo's peer is the reply's BND (127.0.0.1)",
            lambda: ["reply %r, got %d bytes, echo peers %s"
                     % (r, len(got), peers)])
    r, c = P.socks5_connect(dp.port, "127.0.0.1", echo.port,
                            auth=("u", "p"))
    c.close()
    t.check(r == "method 0xff chosen",
            "danted (socksmethod none): a client offering only "
            "username/password gets method 0xFF", "got %r" % (r,))
    dgram = b"parent-udp-" + os.urandom(200)
    data, src, why = P.udp_via(dp.port, "127.0.0.1", uecho.port, dgram)
    seen = list(uecho.seen)
    t.check(data == dgram and src == ("127.0.0.1", uecho.port) and
            len(seen) == 1 and seen[0][0][0] == "127.0.0.1" and
            seen[0][1] == len(dgram),
            "danted: UDP ASSOCIATE carries a datagram to the UDP echo and "
            "back (from the echo's address)",
            ["why %s, data %r, src %s, echo saw %s"
             % (why, data and data[:24], src, seen)])
    # A session's closing line ("]") counts what it carried both ways.
    dp.wait_log(r"udp/udpassociate \]: .*127\.0\.0\.1\.%d " % uecho.port)
    lines = dp.log_lines()
    t.check(any("tcp/connect" in ln and "127.0.0.1.%d " % echo.port in ln
                for ln in lines) and
            any("udp/udpassociate ]" in ln and
                "127.0.0.1.%d " % uecho.port in ln for ln in lines),
            "danted: its log has the CONNECT to the echo and the UDP "
            "association with the UDP echo", lines)
    dp.stop()
    t.check(dp.gone(), "danted stopped by its PID, no child left",
            lambda: ["exit %s, killed children %s" % (dp.returncode,
                                                      dp.leftovers)])


def apr1_openssl(t):
    """The APR1 hashes the Squid helper writes, beside OpenSSL's."""
    import shutil
    import subprocess
    if shutil.which("openssl") is None:
        t.skip("APR1 hashes equal `openssl passwd -apr1`'s",
               "no openssl program", need="openssl")
        return
    cases = (("s3cret", "abcdefgh"), (PASSWORD, "xY.z/123"),
             ("a" * 40, "12345678"), ("", "s"))
    bad = []
    for pw, salt in cases:
        cp = subprocess.run(["openssl", "passwd", "-apr1", "-salt", salt,
                             "-stdin"], input=pw + "\n",
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True,
                            timeout=ptest.bound(20))
        if cp.stdout.strip() != P.apr1(pw, salt):
            bad.append((pw, salt, cp.stdout.strip(), cp.stderr.strip(),
                        P.apr1(pw, salt)))
    t.check(not bad, "APR1 hashes computed here equal `openssl passwd "
            "-apr1`'s for the same salts", bad)


def main(t):
    apr1_openssl(t)
    origin = P.start_counting_origin(t)
    echo = P.start_echo(t)
    uecho = P.start_udp_echo(t)
    origin_direct(t, origin)

    why = P.missing_squid()
    if why:
        t.skip("Squid as an HTTP parent (open, and with users)", why,
               need="squid")
    else:
        squid_open(t, origin, echo)
        why = P.missing_ncsa()
        if why:
            t.skip("Squid as an HTTP parent with users", why,
                   need="squid_ncsa")
        else:
            squid_auth(t, origin, echo)

    why = P.missing_dante()
    if why:
        t.skip("danted as a SOCKS5 parent", why, need="dante")
    else:
        dante(t, echo, uecho)


if __name__ == "__main__":
    ptest.Test("parent_peers").run(main)
