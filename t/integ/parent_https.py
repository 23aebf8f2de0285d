#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
HTTPS parents: a first portico (A) reaches the origin through a second
portico (B) whose listener speaks HTTP inside TLS, A's leg to B being
TLS verified against the parent's `ca` (the real tls.so on both sides,
certificates made by the openssl program, all on loopback).

- The chain A -> B (TLS) -> origin: a GET arrives with its body intact,
  no Proxy-Authorization, and a Via entry of each portico (A's
  pseudonym, then B's); a POST of 200 KiB arrives with its exact length
  and sha256; a CONNECT to a TCP echo carries 1 MiB each way intact; a
  SOCKS5 CONNECT on A's auto listener reaches the echo through B; A's
  /metrics counts each as carried by the parent and none as failed.
- Credentials (B's auth module on a userlist): with the parent's right
  user/password a GET and a CONNECT succeed and the origin sees no
  Proxy-Authorization; with a wrong password a GET gets B's 407 passed
  on (the parent answered: no failure counted) and a CONNECT gets a 502
  naming the parent, counted as a parent failure (a 407 to CONNECT
  fails over); B logs each refused login.
- A CA that did not sign B's certificate: 502 naming parent "s", one
  parent failure in /metrics, the error log says the certificate failed
  verification; with via = [ "s", "direct" ] the same request succeeds
  directly (the origin sees A's Via only). verify = false with the wrong
  CA goes through B.
- SNI: B's certificate names only "parent.test"; A's parent at
  127.0.0.1 with sni = "parent.test" succeeds (B's log names the SNI),
  without sni the address is checked as an address and the handshake
  fails (IP address mismatch), and no SNI was sent.
- `portico -t` refuses an https parent without the tls module, and one
  whose ca file does not exist, each naming file:line.
"""
import os
import shutil
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import parenttest as P  # noqa: E402
import statustest as ST  # noqa: E402
import tlstest as T  # noqa: E402
import authtest as A  # noqa: E402

USER, PASSWORD = "pa", "parent-pw"


def missing():
    """What this machine lacks (the tls module, openssl), or None."""
    if not os.path.exists(T.TLS_SO):
        return "tls.so not built at %s" % T.TLS_SO
    if not shutil.which("openssl"):
        return "no openssl program in PATH"
    return None


def tls_mod():
    return '{ name = "tls"; path = "%s"; }' % T.TLS_SO


def conf(t, name, listeners, parents="", modules=(), log_level="info"):
    """A configuration (text) of one worker, its logs named <name>."""
    mods = "modules = ( %s );\n" % ",\n  ".join(modules) if modules else ""
    return """workers = 1;
error_log = "%s";
log_level = "%s";
pid_file = "%s";
shutdown_timeout = 5;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
http = { connect_ports = "*"; };
%s
listeners = (
%s
);
%s""" % (t.path(name + ".log"), log_level, t.path(name + ".pid"), parents,
         ",\n".join(listeners), mods)


def tls_listener(port, cert, key):
    return ('  { name = "tls"; address = "127.0.0.1:%d"; protocol = "http"; '
            'transport = "tls";\n    tls = { certificate = "%s"; '
            'key = "%s"; }; }' % (port, cert, key))


def listener(name, port, via, protocol="http"):
    if isinstance(via, (list, tuple)):
        via = "[ %s ]" % ", ".join('"%s"' % v for v in via)
    else:
        via = '"%s"' % via
    return ('  { name = "%s"; address = "127.0.0.1:%d"; protocol = "%s"; '
            'via = %s; }' % (name, port, protocol, via))


def status_listener(port):
    return '  { name = "stat"; address = "127.0.0.1:%d"; protocol = ' \
        '"status"; }' % port


def parent(name, port, ca, extra=""):
    return ('  { name = "%s"; address = "127.0.0.1:%d"; protocol = "https"; '
            'ca = "%s"; %s }' % (name, port, ca, extra))


def parents(*entries):
    return "parents = (\n%s\n);" % ",\n".join(entries)


def start_parent(t, name, cert, key, modules=(), log_level="info"):
    """B: a portico whose only listener is HTTP inside TLS."""
    port = ptest.free_port()
    p = t.portico(conf(t, name, [tls_listener(port, cert, key)],
                       modules=[tls_mod()] + list(modules),
                       log_level=log_level), conf_name=name + ".conf")
    return p, port


def metric(stat_port, name, par):
    s, text = ST.scrape(stat_port)
    if s is None:
        return None
    return ST.value(s, name, parent=par)


def vias(req):
    """Every Via entry the origin saw on <req>, in order."""
    out = []
    for v in P.header(req, "via"):
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def reqs_to(origin, path):
    return [q for q in origin.snapshot() if q["path"] == path]


def is_resp(r, status):
    return isinstance(r, H.Resp) and r.status == status


def tunnel_exchange(conn, nbytes):
    """Sends <nbytes> of random data on <conn> from a thread while
    reading as many back; (sent sha256, received sha256, error)."""
    data = os.urandom(nbytes)
    err = []

    def writer():
        try:
            for off in range(0, len(data), 65536):
                conn.send(data[off:off + 65536])
        except Exception as e:
            err.append("send: %r" % (e,))
    th = threading.Thread(target=writer, daemon=True)
    th.start()
    try:
        got = conn.read_exact(len(data))
    except Exception as e:
        got = b""
        err.append("read: %r" % (e,))
    th.join(ptest.bound(20))
    return H.sha(data), H.sha(got), (err[0] if err else None)


def connect_echo(port, echo, nbytes):
    """CONNECT to the echo through <port>, <nbytes> each way: (resp,
    (sha sent, sha got, error))."""
    r, c = P.connect_via(port, "127.0.0.1", echo.port)
    try:
        if not is_resp(r, 200):
            return r, (None, None, "no tunnel")
        return r, tunnel_exchange(c, nbytes)
    finally:
        if c is not None:
            c.close()


# ---------------------------------------------------------------------------

def chain(t, ca, b_port, origin, echo):
    """1: GET, POST, CONNECT and SOCKS5 through the https parent."""
    a_port, stat = ptest.free_port(), ptest.free_port()
    a = t.portico(conf(t, "a1", [listener("in", a_port, "s", "auto"),
                                 status_listener(stat)],
                       parents(parent("s", b_port, ca.pem)), [tls_mod()]),
                  conf_name="a1.conf")

    r = P.http_via(a_port, origin.url + "/chain-get")
    got = reqs_to(origin, "/chain-get")
    t.check(is_resp(r, 200) and r.body == P.GET_BODY and len(got) == 1,
            "chain GET: 200 with the origin's 1 KiB intact, one request at "
            "the origin", lambda: H.describe(r) + [got])
    v = vias(got[0]) if got else []
    t.check(len(v) == 2 and v[0].endswith("-%d" % a_port) and
            v[0].startswith("1.1 portico-") and v[1] == "1.1 portico",
            "chain GET: the origin sees Via entries from both porticos "
            "(A's pseudonym, then B's)", lambda: v)
    t.check(got and not P.header(got[0], "proxy-authorization"),
            "chain GET: the origin sees no Proxy-Authorization",
            lambda: got[0]["headers"] if got else None)

    body = os.urandom(200 * 1024)
    r = P.http_via(a_port, origin.url + "/chain-post", method="POST",
                   body=body)
    got = reqs_to(origin, "/chain-post")
    t.check(is_resp(r, 200) and r.body == b"%d" % len(body) and
            len(got) == 1 and got[0]["body_len"] == len(body) and
            got[0]["body_sha256"] == H.sha(body),
            "chain POST of 200 KiB: the origin counts the exact length and "
            "sha256", lambda: H.describe(r) + [
                [(q["body_len"], q["body_sha256"]) for q in got],
                H.sha(body)])

    r, (sent, back, err) = connect_echo(a_port, echo, ptest.MiB)
    t.check(is_resp(r, 200) and err is None and sent == back,
            "chain CONNECT to the echo: 1 MiB each way intact",
            lambda: H.describe(r) + ["sent %s got %s err %s"
                                     % (sent, back, err)])

    rep, c = P.socks5_connect(a_port, "127.0.0.1", echo.port)
    try:
        ok = P.S.ok5(rep)
        res = tunnel_exchange(c, 64 * 1024) if ok else (None, None, "-")
    finally:
        c.close()
    t.check(ok and res[2] is None and res[0] == res[1],
            "chain SOCKS5 CONNECT (auto listener) to the echo: succeeded, "
            "64 KiB echoed intact", lambda: [rep, res])

    ptest.wait_for(lambda: metric(stat, "portico_parent_requests_total",
                                  "s") == 4, ptest.bound(5))
    req_n = metric(stat, "portico_parent_requests_total", "s")
    fail_n = metric(stat, "portico_parent_failures_total", "s")
    t.check(req_n == 4 and fail_n == 0,
            "/metrics: the parent carried the 4 transactions, no failure",
            lambda: ["requests %s failures %s" % (req_n, fail_n)])

    # Keep-alive: a client's GETs ride on one TLS connection to the
    # parent (one handshake, counted once in the connect histogram).
    before = metric(stat, "portico_parent_connect_seconds_count", "s")
    conn = H.Conn.to(a_port, timeout=ptest.bound(10))
    got = []
    try:
        for i in range(3):
            conn.send(H.request_bytes("GET", origin.url + "/ka-%d" % i,
                                      [("Host", "127.0.0.1:%d"
                                        % origin.port)]))
            rr = H.read_response(conn)
            got.append(rr.status if rr else None)
    except Exception as e:  # noqa: BLE001
        got.append(str(e))
    conn.close()
    after = metric(stat, "portico_parent_connect_seconds_count", "s")
    t.check(got == [200] * 3 and before is not None and after is not None
            and after - before == 1,
            "keep-alive: three GETs of one client connection ride on one "
            "TLS connection to the parent", lambda: [got, before, after])
    t.stop_portico(a)


def credentials(t, ca, cert, key, origin, echo):
    """2: user/password for a parent that requires Basic."""
    why = None if os.path.exists(A.AUTH_SO) else \
        "auth.so not built at %s" % A.AUTH_SO
    if why:
        t.skip("https parent with credentials", why, need="auth.so")
        return
    cp = T.openssl(["passwd", "-6", "-salt", "ptsalt12", PASSWORD])
    if cp.returncode != 0:
        t.check(False, "openssl passwd -6 made a SHA-crypt hash", cp.stderr)
        return
    ulist = A.write_users(t, [(USER, cp.stdout.strip())], "b2-users")
    b, b_port = start_parent(t, "b2", cert, key, [
        '{ name = "auth"; path = "%s"; userlist = "%s"; realm = "parent"; }'
        % (A.AUTH_SO, ulist)])
    good = 'user = "%s"; password = "%s";' % (USER, PASSWORD)
    bad = 'user = "%s"; password = "wrong-pw";' % USER
    ok_port, bad_port, stat = (ptest.free_port(), ptest.free_port(),
                               ptest.free_port())
    a = t.portico(conf(t, "a2", [listener("good", ok_port, "s"),
                                 listener("bad", bad_port, "bad"),
                                 status_listener(stat)],
                       parents(parent("s", b_port, ca.pem, good),
                               parent("bad", b_port, ca.pem, bad)),
                       [tls_mod()]), conf_name="a2.conf")

    r = P.http_via(ok_port, origin.url + "/auth-get")
    got = reqs_to(origin, "/auth-get")
    t.check(is_resp(r, 200) and r.body == P.GET_BODY and len(got) == 1 and
            not P.header(got[0], "proxy-authorization") and
            len(vias(got[0])) == 2,
            "credentials: GET through the parent requiring Basic -> 200, "
            "the origin sees no Proxy-Authorization",
            lambda: H.describe(r) + [got])
    r, (sent, back, err) = connect_echo(ok_port, echo, 32 * 1024)
    t.check(is_resp(r, 200) and err is None and sent == back,
            "credentials: CONNECT through the parent requiring Basic -> "
            "tunnel, 32 KiB echoed", lambda: H.describe(r) + [err])

    r = P.http_via(bad_port, origin.url + "/auth-wrong")
    f_get = metric(stat, "portico_parent_failures_total", "bad")
    t.check(is_resp(r, 407) and not reqs_to(origin, "/auth-wrong"),
            "wrong password: a GET gets the parent's 407 passed on, the "
            "origin never sees it", lambda: H.describe(r))
    t.diag("the 407 passed on: Proxy-Authenticate %r" % (
        r.all("proxy-authenticate") if isinstance(r, H.Resp) else None,))
    t.check(f_get == 0, "wrong password: the GET's 407 is the parent's "
            "answer, not counted as a parent failure",
            lambda: "failures{bad} %s" % f_get)

    n_echo = echo.accepted
    r, c = P.connect_via(bad_port, "127.0.0.1", echo.port)
    if c is not None:
        c.close()
    f_con = metric(stat, "portico_parent_failures_total", "bad")
    t.check(is_resp(r, 502) and b'parent "bad"' in r.body and
            echo.accepted == n_echo,
            "wrong password: a CONNECT gets 502 naming the parent, the echo "
            "never sees it", lambda: H.describe(r))
    t.check(f_con == 1, "wrong password: the CONNECT's 407 counts as a "
            "parent failure (a 407 to CONNECT fails over)",
            lambda: "failures{bad} %s" % f_con)
    t.check(a.log_lines(r'parent "bad": refused our credentials \(407\)'),
            "A's log says the parent refused its credentials",
            lambda: ptest.tail(a.log(), 15))
    fl = ptest.wait_for(lambda: len(A.failures(b)) >= 2 and A.failures(b),
                        ptest.bound(5)) or A.failures(b)
    t.check([(x.get("user"), x.get("reason")) for x in fl] ==
            [(USER, "bad-password")] * 2,
            "B logged both refused logins (user %s, bad-password)" % USER,
            lambda: fl)
    t.stop_portico(a)
    t.stop_portico(b)


def wrong_ca(t, other, b_port, origin, echo):
    """3 and 4: a CA that did not sign B's certificate; verify = false."""
    s_port, fo_port, nv_port, stat = (ptest.free_port(), ptest.free_port(),
                                      ptest.free_port(), ptest.free_port())
    a = t.portico(conf(t, "a3", [listener("only", s_port, "s"),
                                 listener("failover", fo_port,
                                          ["s", "direct"]),
                                 listener("noverify", nv_port, "nv"),
                                 status_listener(stat)],
                       parents(parent("s", b_port, other.pem),
                               parent("nv", b_port, other.pem,
                                      "verify = false;")),
                       [tls_mod()]), conf_name="a3.conf")

    r = P.http_via(s_port, origin.url + "/badca")
    t.check(is_resp(r, 502) and b'parent "s"' in r.body and
            not reqs_to(origin, "/badca"),
            "wrong CA: 502 naming parent \"s\", the origin never sees it",
            lambda: H.describe(r))
    f1 = metric(stat, "portico_parent_failures_total", "s")
    t.check(f1 == 1, "wrong CA: one parent failure in /metrics",
            lambda: "failures{s} %s" % f1)
    lines = a.wait_log(r"tls upstream: handshake.* failed: certificate "
                       r"verify failed")
    t.check(lines, "wrong CA: the error log says the certificate failed "
            "verification", lambda: ptest.tail(a.log(), 15))
    t.check(a.log_lines(r'parent "s": TLS handshake failed'),
            "wrong CA: the error log names the parent and the failed TLS "
            "handshake", lambda: ptest.tail(a.log(), 15))

    r = P.http_via(fo_port, origin.url + "/badca-failover")
    got = reqs_to(origin, "/badca-failover")
    f2 = metric(stat, "portico_parent_failures_total", "s")
    t.check(is_resp(r, 200) and r.body == P.GET_BODY and len(got) == 1 and
            len(vias(got[0])) == 1,
            "wrong CA with via = [ \"s\", \"direct\" ]: the same GET "
            "succeeds directly (the origin sees A's Via only)",
            lambda: H.describe(r) + [got and vias(got[0])])
    t.check(f2 == 2, "the failed-over attempt is a second parent failure",
            lambda: "failures{s} %s" % f2)

    r = P.http_via(nv_port, origin.url + "/noverify")
    got = reqs_to(origin, "/noverify")
    t.check(is_resp(r, 200) and r.body == P.GET_BODY and len(got) == 1 and
            len(vias(got[0])) == 2,
            "verify = false with the wrong CA: GET through the parent "
            "succeeds (two Via at the origin)",
            lambda: H.describe(r) + [got and vias(got[0])])
    r, (sent, back, err) = connect_echo(nv_port, echo, 32 * 1024)
    t.check(is_resp(r, 200) and err is None and sent == back,
            "verify = false with the wrong CA: CONNECT tunnel, 32 KiB "
            "echoed", lambda: H.describe(r) + [err])
    fnv = metric(stat, "portico_parent_failures_total", "nv")
    t.check(fnv == 0, "verify = false: no parent failure",
            lambda: "failures{nv} %s" % fnv)
    t.stop_portico(a)


def sni(t, ca, origin):
    """5: B's certificate names parent.test only."""
    cert, key = ca.issue("named", dns=["parent.test"], ips=(),
                         cn="parent.test")
    b, b_port = start_parent(t, "b5", cert, key, log_level="debug")
    n_port, bare_port = ptest.free_port(), ptest.free_port()
    a = t.portico(conf(t, "a5", [listener("named", n_port, "named"),
                                 listener("bare", bare_port, "bare")],
                       parents(parent("named", b_port, ca.pem,
                                      'sni = "parent.test";'),
                               parent("bare", b_port, ca.pem)),
                       [tls_mod()]), conf_name="a5.conf")

    r = P.http_via(n_port, origin.url + "/sni-named")
    got = reqs_to(origin, "/sni-named")
    t.check(is_resp(r, 200) and r.body == P.GET_BODY and len(got) == 1 and
            len(vias(got[0])) == 2,
            "sni = \"parent.test\" for 127.0.0.1: GET through the parent "
            "whose certificate names parent.test only -> 200",
            lambda: H.describe(r) + ptest.tail(a.log(), 10))
    seen = b.wait_log(r"tls: TLSv\S+ \S+ sni=parent\.test")
    t.check(seen, "B's handshake saw SNI parent.test",
            lambda: b.log_lines(r"tls: "))

    n_ok = len(b.log_lines(r"tls: TLSv"))
    r = P.http_via(bare_port, origin.url + "/sni-bare")
    t.check(is_resp(r, 502) and b'parent "bare"' in r.body and
            not reqs_to(origin, "/sni-bare"),
            "no sni: the address 127.0.0.1 does not match the certificate: "
            "502 naming the parent", lambda: H.describe(r))
    t.check(a.wait_log(r"tls upstream: handshake failed: certificate "
                       r"verify failed: IP address mismatch"),
            "no sni: A's log says the certificate failed verification (IP "
            "address mismatch), and names no SNI",
            lambda: a.log_lines(r"tls upstream"))
    fails = b.wait_log(r"tls: handshake failed")
    t.check(fails and len(b.log_lines(r"tls: TLSv")) == n_ok,
            "no sni: B's side of the handshake failed (A refused its "
            "certificate), none completed", lambda: b.log_lines(r"tls: "))
    t.stop_portico(a)
    t.stop_portico(b)


def refusals(t, ca):
    """6: -t refuses an https parent without the tls module, and a ca
    file that does not exist, with file:line."""
    for tag, ca_path, mods, want in (
            ("notls", ca.pem, [], "needs the tls module"),
            ("noca", t.path("no-such-ca.pem"), [tls_mod()],
             "no-such-ca.pem")):
        port = ptest.free_port()
        text = conf(t, "t-" + tag, [listener("in", port, "s")],
                    parents(parent("s", 9, ca_path)), mods)
        line = next(i + 1 for i, ln in enumerate(text.splitlines())
                    if 'name = "s"' in ln)
        path = ptest.write_conf(t.tmp, text, tag + ".conf")
        cp = ptest.run_portico(["-t", "-c", path])
        out = cp.stdout + cp.stderr
        t.check(cp.returncode != 0 and "%s.conf:%d:" % (tag, line) in out
                and want in out,
                "-t refuses an https parent %s, naming %s.conf:%d" % (
                    "without the tls module" if tag == "notls" else
                    "whose ca file does not exist", tag, line),
                lambda: ["exit %d" % cp.returncode] + out.splitlines())
        if tag == "noca":
            t.check("No such file or directory" in out,
                    "-t: the missing ca file's error says why",
                    lambda: out)


def main(t):
    why = missing()
    if why:
        t.skip("https parents", why)
        return
    ca = T.CA(t)
    other = T.CA(t, "other")
    cert, key = ca.issue("parent", dns=["parent.test"])
    origin = P.start_counting_origin(t)
    echo = P.start_echo(t)
    b, b_port = start_parent(t, "b1", cert, key)
    chain(t, ca, b_port, origin, echo)
    wrong_ca(t, other, b_port, origin, echo)
    t.stop_portico(b)
    credentials(t, ca, cert, key, origin, echo)
    sni(t, ca, origin)
    refusals(t, ca)


if __name__ == "__main__":
    ptest.Test("parent_https").run(main)
