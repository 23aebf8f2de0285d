#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The auth module (the real modules/auth auth.so) on HTTP and SOCKS5
listeners, with a userlist of hashes made by real tools: Argon2id (the
argon2 program), bcrypt and yescrypt (mkpasswd), bcrypt (htpasswd -B),
SHA-512-crypt (mkpasswd).

- two Proxy-Authorization fields: 400; a list of Basic credentials or
  junk after the padding: 407 (none), never the first one read;
- curl -x without credentials: 407 with Proxy-Authenticate: Basic
  realm="<realm>", charset="UTF-8", and no failure line (a challenge);
  wrong password: 407 and one failure line reason=bad-password; right:
  200, the origin sees the request;
- unknown user: 407, reason=unknown-user;
- every scheme's user gets 200 with the right password, 407 with a wrong
  one;
- curl --proxy-user with three requests on one keep-alive connection:
  three 200s, one connection, one verification (one "verified" line);
- SOCKS5 through curl --socks5 user:pass@: right 200, wrong refused with
  a failure line proto=socks5; SOCKS4 refused, the origin never sees it,
  and a failure line reason=socks4;
- no_auth_from 127.0.0.1/32: 200 without credentials (HTTP and SOCKS5);
  no_auth_from 10.0.0.0/8 from 127.0.0.1: 407; required = false: 200;
- the counters in the master's totals match what happened;
- `portico -t` with an $apr1$ line (htpasswd -m) fails and names the
  userlist's file and line and the scheme; so do bad listener groups;
- entries written by portico-passwd (default costs) log in.
"""
import base64
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import authtest as A  # noqa: E402


def listeners(ports):
    return ",\n".join([
        '{ name = "main"; address = "127.0.0.1:%d"; protocol = "http"; }'
        % ports["main"],
        '{ name = "socks"; address = "127.0.0.1:%d"; protocol = "socks5"; }'
        % ports["socks"],
        '{ name = "lan"; address = "127.0.0.1:%d"; protocol = "http"; '
        'auth = { no_auth_from = [ "127.0.0.1/32", "::1/128" ]; }; }'
        % ports["lan"],
        '{ name = "slan"; address = "127.0.0.1:%d"; protocol = "socks5"; '
        'auth = { no_auth_from = [ "127.0.0.0/8" ]; }; }' % ports["slan"],
        '{ name = "office"; address = "127.0.0.1:%d"; protocol = "http"; '
        'auth = { no_auth_from = [ "10.0.0.0/8" ]; }; }' % ports["office"],
        '{ name = "open"; address = "127.0.0.1:%d"; protocol = "http"; '
        'auth = { required = false; }; }' % ports["open"],
    ])


def main(t):
    why = A.missing()
    if why:
        t.skip("auth module scenarios", why)
        return
    o = H.origin(t)
    url = o.url + "/auth/%s"
    users = [("bob", A.argon2id("s3cret")), ("kim", A.argon2id("k-pw"))]
    tools = {}
    for name, pw, h, tool in (
            ("carol", "c-pw", A.mkpasswd("c-pw", "bcrypt"), "mkpasswd"),
            ("dave", "d-pw", A.mkpasswd("d-pw", "yescrypt"), "mkpasswd"),
            ("frank", "f-pw", A.mkpasswd("f-pw", "sha-512"), "mkpasswd"),
            ("erin", "e-pw", A.htpasswd("erin", "e-pw", "B"), "htpasswd")):
        if h is None:
            t.skip("user %s's hash" % name, "no %s" % tool, need=tool)
            continue
        users.append((name, h))
        tools[name] = (pw, h)
    ulist = A.write_users(t, users)
    ports = {k: ptest.free_port() for k in
             ("main", "socks", "lan", "slan", "office", "open")}
    p = t.portico(A.conf(t, listeners(ports), ulist, log_level="debug",
                         mod_extra='realm = "staff";'))
    verifs = 0
    fails = 0

    st, head = A.curl_head(ports["main"], url % "none")
    t.check(st == 407, "no credentials: 407", head)
    # A CONNECT refused 407 with bytes already behind it (meant for the
    # tunnel): the 407 closes, and those bytes are never a request.
    st, got, how, _ = H.raw_exchange(
        ports["main"], b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n"
        b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" % o.port,
        timeout=ptest.bound(5))
    t.check(st == 407 and got.count(b"HTTP/1.1 ") == 1 and
            b"connection: close" in got.lower() and how in ("eof", "reset"),
            "a CONNECT refused 407 with early tunnel bytes: one answer, "
            "then the close", repr(got[:400]))
    t.check('\r\nProxy-Authenticate: Basic realm="staff", charset="UTF-8"'
            '\r\n' in head, "the challenge names the realm and UTF-8", head)
    t.check(A.failures(p) == [], "a request without credentials writes no "
            "failure line", A.failures(p))
    # What a front proxy checked and what portico checks cannot differ:
    # an ambiguous or malformed credential is never read as its first
    # (right) part. bob:s3cret encodes with padding ("...dA==").
    good = base64.b64encode(b"bob:s3cret")
    for label, extra, want in (
            ("two Proxy-Authorization fields, both right", b"Proxy-"
             b"Authorization: Basic %s\r\nProxy-Authorization: Basic %s"
             b"\r\n" % (good, good), 400),
            ("a list, the right credentials first", b"Proxy-Authorization:"
             b" Basic %s, Basic eDp5\r\n" % good, 407),
            ("junk after the padding", b"Proxy-Authorization: Basic %sjunk"
             b"\r\n" % good, 407)):
        st, got, how, _ = H.raw_exchange(
            ports["main"], b"GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: "
            b"close\r\n\r\n" % ((url % "amb").encode(), extra),
            timeout=ptest.bound(5))
        t.check(st == want, "%s: %d, never read as its first part"
                % (label, want), repr(got[:300]))

    st, head = A.curl_head(ports["main"], url % "wrong", "bob:nope")
    verifs += 1
    fails += 1
    t.check(st == 407, "wrong password: 407", head)
    f = ptest.wait_for(lambda: A.failures(p), ptest.bound(5)) or []
    t.check(f == [dict(client="127.0.0.1", user="bob", proto="http",
                       listener="main", reason="bad-password")],
            "one failure line: client, user, proto, listener, "
            "reason=bad-password", f)

    st, head = A.curl_head(ports["main"], url % "right", "bob:s3cret")
    verifs += 1
    t.check(st == 200 and o.reqs_for("/auth/right"),
            "right password: 200, the origin saw it", head)

    st, head = A.curl_head(ports["main"], url % "who", "mallory:s3cret")
    verifs += 1
    fails += 1
    t.check(st == 407, "unknown user: 407", head)
    t.check(ptest.wait_for(lambda: any(x.get("reason") == "unknown-user" and
                                       x.get("user") == "mallory"
                                       for x in A.failures(p)),
                           ptest.bound(5)),
            "its failure line says reason=unknown-user", A.failures(p))

    for name, (pw, h) in sorted(tools.items()):
        st, head = A.curl_head(ports["main"], url % name, name + ":" + pw)
        t.check(st == 200, "%s (%s...): right password 200" % (name, h[:4]),
                head)
        st, head = A.curl_head(ports["main"], url % name, name + ":x" + pw)
        t.check(st == 407, "%s (%s...): wrong password 407" % (name, h[:4]),
                head)
        verifs += 2
        fails += 1

    # Keep-alive: three requests, one connection, one verification.
    rc, codes, err, conns = A.curl_proxy(
        ports["main"], [url % "ka1", url % "ka2", url % "ka3"], "kim:k-pw")
    verifs += 1
    t.check(codes == [200, 200, 200] and conns == 1,
            "--proxy-user, 3 requests on one keep-alive connection: 200 "
            "each", (rc, codes, conns, err))
    t.check(len(p.log_lines(r'auth: verified user="kim"')) == 1,
            "the connection verified once for its three requests",
            p.log_lines(r'auth: verified user="kim"'))

    # SOCKS5 (RFC 1929) and SOCKS4.
    rc, st = A.curl_socks(ports["socks"], url % "s5", "bob:s3cret")
    verifs += 1
    t.check(rc == 0 and st == "200", "SOCKS5 with the right password: 200",
            (rc, st))
    rc, st = A.curl_socks(ports["socks"], url % "s5bad", "bob:wrong")
    verifs += 1
    fails += 1
    t.check(rc != 0 and not o.reqs_for("/auth/s5bad"),
            "SOCKS5 with a wrong password: refused", (rc, st))
    t.check(ptest.wait_for(lambda: any(x.get("proto") == "socks5" and
                                       x.get("reason") == "bad-password" and
                                       x.get("listener") == "socks"
                                       for x in A.failures(p)),
                           ptest.bound(5)),
            "its failure line says proto=socks5", A.failures(p))
    rc, st = A.curl_socks(ports["socks"], url % "s4", v4=True)
    fails += 1
    t.check(rc != 0 and not o.reqs_for("/auth/s4"),
            "SOCKS4 where auth applies: refused", (rc, st))
    t.check(ptest.wait_for(lambda: any(x.get("proto") == "socks4" and
                                       x.get("reason") == "socks4" and
                                       x.get("listener") == "socks"
                                       for x in A.failures(p)),
                           ptest.bound(5)),
            "and logged as a failure, reason=socks4 (portico-auth(8))",
            A.failures(p))

    # Where auth applies.
    st, head = A.curl_head(ports["lan"], url % "lan")
    t.check(st == 200, "no_auth_from 127.0.0.1/32: 200 without "
            "credentials", head)
    rc, st = A.curl_socks(ports["slan"], url % "slan")
    t.check(rc == 0 and st == "200", "SOCKS5 with no_auth_from 127.0.0.0/8: "
            "200 without credentials", (rc, st))
    st, head = A.curl_head(ports["office"], url % "office")
    t.check(st == 407, "no_auth_from 10.0.0.0/8, client 127.0.0.1: 407",
            head)
    st, head = A.curl_head(ports["office"], url % "office2", "bob:s3cret")
    verifs += 1
    t.check(st == 200, "and 200 with credentials there", head)
    st, head = A.curl_head(ports["open"], url % "open")
    t.check(st == 200, "required = false: 200 without credentials", head)

    t.stop_portico(p)
    tot = A.totals(p)
    # A pair verified before may come from the cache instead (cache_ttl
    # defaults to 300 s); failures never do.
    t.check(tot.get("auth_verifications", 0) + tot.get("auth_cache_hits", 0)
            == verifs, "auth_verifications + auth_cache_hits count each "
            "login that needed a check (%d)" % verifs, tot)
    t.check(tot.get("auth_failures") == fails == len(A.failures(p)),
            "auth_failures counts each failure line (%d)" % fails,
            (tot, A.failures(p)))
    t.check(tot.get("auth_overload") == 0, "no overload", tot)

    check_apr1(t, ports)
    check_listener_errors(t, ports)
    check_portico_passwd(t, ports, o)


def check_portico_passwd(t, ports, o):
    """An entry written by portico-passwd (the default costs) logs in."""
    tool = os.path.join(ptest.BUILDDIR, "portico-passwd")
    if not os.path.exists(tool):
        t.skip("a portico-passwd entry logs in", "portico-passwd not built "
               "(libargon2)", need="argon2")
        return
    path = t.path("users-pp")
    for user, pw in (("pat", "p@ss word:1"), ("quinn", "q-pw")):
        cp = subprocess.run([tool, "-c", "--stdin", path, user],
                            input=(pw + "\n").encode(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=ptest.bound(30))
        t.check(cp.returncode == 0, "portico-passwd adds %s" % user,
                cp.stderr)
    lst = ('{ name = "pp"; address = "127.0.0.1:%d"; protocol = "http"; }'
           % ports["main"])
    conf = A.conf(t, lst, path).replace("/error.log", "/error-pp.log")
    p = t.portico(conf)
    st, head = A.curl_head(ports["main"], o.url + "/pp/1", "pat:p@ss word:1")
    t.check(st == 200, "portico-passwd's Argon2id entry (a password with a "
            "space and a colon) logs in", head)
    st, head = A.curl_head(ports["main"], o.url + "/pp/2", "quinn:wrong")
    t.check(st == 407, "and a wrong password for its other user is 407",
            head)
    t.stop_portico(p)


def check_listener_errors(t, ports):
    ulist = A.write_users(t, [("bob", A.argon2id("x"))], "users-lst")
    for group, want in (
            ('no_auth_from = [ "10.1.2.3/8" ];', 'no_auth_from: "10.1.2.3/8" '
             'is not a network'),
            ('no_auth_from = [ "nonsense" ];', 'no_auth_from: "nonsense" is '
             'not a network'),
            ('required = "no";', "required is true or false"),
            ('bogus = 1;', 'unknown option "bogus"')):
        lst = ('{ address = "127.0.0.1:%d"; protocol = "http";\n'
               '  auth = { %s }; }' % (ports["main"], group))
        text = A.conf(t, lst, ulist)
        path = ptest.write_conf(t.tmp, text, "lst.conf")
        cp = ptest.run_portico(["-t", "-c", path])
        out = cp.stdout + cp.stderr
        line = ptest.line_of(text, "auth = {")
        t.check(cp.returncode == 1 and want in out and
                ("%s:%d" % (path, line)) in out,
                "listener auth = { %s }: -t fails at its line, saying %r"
                % (group, want), out)


def check_apr1(t, ports):
    apr = A.htpasswd("old", "pw", "m") or "$apr1$sAlt1234$9kRDnOmJvbgk5SFSd2JnV1"
    ulist = A.write_users(t, [("bob", A.argon2id("x")), ("old", apr)],
                          "users-apr1")
    path = ptest.write_conf(t.tmp, A.conf(t, listeners(ports), ulist),
                            "apr1.conf")
    cp = ptest.run_portico(["-t", "-c", path])
    out = cp.stdout + cp.stderr
    t.check(cp.returncode == 1, "portico -t with an $apr1$ entry: exit 1",
            out)
    t.check(re.search(re.escape(ulist) + r":3: Apache MD5 \(\$apr1\$\) "
                      r"hash refused", out),
            "the message names the userlist, line 3 and the scheme", out)


if __name__ == "__main__":
    ptest.Test("auth_basic").run(main)
