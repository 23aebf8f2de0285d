#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Client certificates as authentication: a TLS listener with client_ca
verifies the client's certificate in the handshake and the certificate's
subject CN becomes the connection's user (pt_req_set_user), which the
real acl module judges (only alice is allowed) and LOG sees (the test
module hookrec records it, and the real accesslog module writes it). curl --proxy-cert/--proxy-key and openssl
s_client are the clients.

- client_verify "require" (the default), with a CRL:
  alice: 200, LOG user=alice; bob (valid, not allowed by the ACL): 403,
  LOG user=bob, also when bob's client sends Basic credentials naming
  alice; no certificate, a certificate with CN=alice from another
  CA, and carol's revoked certificate: refused in the handshake, the
  origin never hears of them;
- two requests on one kept-alive connection both carry the user;
- a resumed session (s_client -sess_out/-sess_in) keeps the user: the
  ACL still lets alice through; it still resumes after a reload that
  changes nothing, and no longer after a reload whose CRL revokes alice
  (her certificate is then refused);
- client_verify "optional": without a certificate the connection goes on
  with no user (the ACL answers 403), with alice's it is alice's;
- -t: user_field naming no subject field, and client_verify without
  client_ca, fail with their lines.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402
import accesslogtest as AL  # noqa: E402

ACL_SO = os.path.join(ptest.BUILDDIR, "modules", "acl", ".libs", "acl.so")


def curl(port, ca, url, who=None, extra=()):
    """(rc, status text, stderr) of one GET through the HTTPS proxy,
    with <who>'s (cert, key) when given."""
    args = T.curl_args(port, ca) + ["-o", "/dev/null", "-w",
                                    "%{http_code}"]
    if who is not None:
        args += ["--proxy-cert", who[0], "--proxy-key", who[1]]
    cp = H.curl(args + list(extra) + [url])
    return cp.returncode, cp.stdout.decode(), \
        cp.stderr.decode(errors="replace")


def log_users(rec, tag):
    """The user= of every LOG line in hookrec's record for requests whose
    host is the origin (all are), in order."""
    try:
        with open(rec) as f:
            text = f.read()
    except OSError:
        return []
    return re.findall(r"^LOG conn=\d+ .* user=(\S+) pass=", text, re.M)


def main(t):
    why = T.missing()
    if why:
        t.skip("tls client certificates", why)
        return
    if not os.path.exists(ACL_SO):
        t.skip("tls client certificates", "acl.so not built at %s" % ACL_SO)
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    cl = T.CA(t, "clients")
    alice = cl.issue("alice", ips=())
    bob = cl.issue("bob", ips=())
    carol = cl.issue("carol", ips=())
    crl = cl.crl(revoked=[carol[0]])
    rogue = T.CA(t, "rogue")
    mallory = rogue.issue("mallory", ips=(), cn="alice")
    o = H.origin(t)
    rec = t.path("hookrec.rec")
    req_port, opt_port = ptest.free_port(), ptest.free_port()
    lst = ",\n".join([
        T.listener(req_port, cert, key, name="mtls",
                   extra='client_ca = "%s"; client_crl = "%s";'
                   % (cl.pem, crl)),
        T.listener(opt_port, cert, key, name="opt",
                   extra='client_ca = "%s"; client_verify = "optional"; '
                   'user_field = "CN";' % cl.pem)])
    alog = t.path("access.json")
    mods = (', { name = "acl"; path = "%s"; default = "deny"; '
            'allow_private = true;\n  rules = ( { name = "alice"; '
            'action = "allow"; user = [ "alice" ]; } ); },\n'
            '  { name = "hookrec"; path = "%s/hookrec.so"; record = "%s"; }'
            % (ACL_SO, ptest.TESTMODDIR, rec))
    if AL.missing() is None:
        mods += ',\n  ' + AL.module(['file = "%s"; format = "json";'
                                     ' flush = 10;' % alog])
    p = t.portico(T.conf(t, lst, log_level="debug", modules_extra=mods))
    w0 = p.workers()
    url = o.url + "/echo?id=%s"

    rc, st, err = curl(req_port, ca.pem, url % "alice", alice)
    t.check(rc == 0 and st == "200" and o.reqs_for("id=alice"),
            "alice's certificate: 200 (the ACL allows user alice)",
            (rc, st, err[-300:]))
    users = ptest.wait_for(lambda: log_users(rec, "alice"), ptest.bound(5))
    t.check(users == ["alice"], "LOG sees user=alice", users)
    t.check(p.log_lines(r"tls: TLSv1\.3 \S+ user=alice$"),
            "the handshake's debug line names the user",
            lambda: p.log_lines(r"tls: TLSv"))

    rc, st, err = curl(req_port, ca.pem, url % "bob", bob)
    t.check(st == "403" and not o.reqs_for("id=bob"),
            "bob's certificate: 403 from the ACL, which judged user bob",
            (rc, st, err[-300:]))
    users = ptest.wait_for(lambda: len(log_users(rec, "")) >= 2 and
                           log_users(rec, ""), ptest.bound(5)) or []
    t.check(users[-1:] == ["bob"], "LOG sees user=bob", users)

    # the real access log names the users too
    if AL.missing() is None:
        recs = AL.wait_json(alog, lambda rs: len(rs) >= 2)
        users = [(r.get("user"), r.get("status")) for r in recs
                 if "id=alice" in r.get("target", "") or
                 "id=bob" in r.get("target", "")]
        t.check(users == [("alice", 200), ("bob", 403)],
                "the accesslog module's records name alice (200) and bob "
                "(403)", recs[-3:])
    else:
        t.skip("the access log names the certificate's user",
               AL.missing())

    # bob's certificate with alice's name in Basic credentials
    rc, st, err = curl(req_port, ca.pem, url % "claim", bob,
                       extra=["--proxy-user", "alice:whatever"])
    users = ptest.wait_for(lambda: len(log_users(rec, "")) >= 3 and
                           log_users(rec, ""), ptest.bound(5)) or []
    t.check(st == "403" and not o.reqs_for("id=claim") and
            users[-1:] == ["bob"],
            "bob's certificate with Basic credentials for alice: still "
            "bob (403, LOG user=bob)", (rc, st, users[-2:], err[-200:]))

    for who, name in ((None, "no certificate"),
                      (mallory, "another CA's certificate"),
                      (carol, "a revoked certificate")):
        n = len(p.log_lines(r"tls: handshake failed"))
        tag = "refused-%d" % len(name)
        rc, st, err = curl(req_port, ca.pem, url % tag, who)
        failed = p.wait_log(r"tls: handshake failed", count=n + 1)
        t.check(rc != 0 and st in ("000", "") and not o.reqs_for(tag) and
                len(failed) > n,
                "%s: refused in the handshake, the origin never hears of "
                "it" % name, (rc, st, err[-200:], failed[-1:]))

    # keep-alive: both requests carry the user
    before = len(log_users(rec, ""))
    args = T.curl_args(req_port, ca.pem) + [
        "--proxy-cert", alice[0], "--proxy-key", alice[1], "-o",
        "/dev/null", "-o", "/dev/null",
        "-w", "%{http_code} %{num_connects}\\n",
        url % "ka1", url % "ka2"]
    cp = H.curl(args)
    out = cp.stdout.decode()
    users = ptest.wait_for(lambda: len(log_users(rec, "")) >= before + 2 and
                           log_users(rec, ""), ptest.bound(5)) or []
    t.check(out.split() == ["200", "1", "200", "0"] and
            users[before:] == ["alice", "alice"],
            "two requests on one kept-alive connection: both 200, both "
            "LOG user=alice", (out, users[before:]))

    # resumption keeps the user
    sess = t.path("alice.sess")
    req = ("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
           % (url % "res"))
    outs = []
    for flag in (["-sess_out", sess], ["-sess_in", sess]):
        rc, out = T.s_client(req_port, ca.pem, extra=[
            "-cert", alice[0], "-key", alice[1], "-ign_eof"] + flag,
            data=req)
        outs.append(out)
    t.check("New, TLSv1.3" in outs[0] and "Reused, TLSv1.3" in outs[1] and
            all("HTTP/1.1 200" in x for x in outs),
            "a resumed session keeps alice as the user (200 again)",
            lambda: ptest.tail(outs[-1], 12))

    def resume(tag):
        req = ("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
               % (url % tag))
        rc, out = T.s_client(req_port, ca.pem, extra=[
            "-cert", alice[0], "-key", alice[1], "-ign_eof", "-sess_in",
            sess], data=req)
        return out

    def reload():
        """SIGHUP, then until only the new generation accepts: a worker
        of an older one may still take a connection for a moment after
        the new one runs (and would judge it by the old CRL)."""
        gen = p.workers()
        p.hup()
        p.wait_workers(len(gen), ptest.bound(10), exclude=gen.values())
        ptest.wait_for(lambda: not any(ptest.alive(pid) for pid in
                                       gen.values()), ptest.bound(10))

    reload()
    out = resume("res-reload")
    t.check("Reused, TLSv1.3" in out and "HTTP/1.1 200" in out,
            "after a reload with the same client policy the session still "
            "resumes", lambda: ptest.tail(out, 12))
    cl.crl(revoked=[carol[0], alice[0]])
    reload()
    out = resume("res-revoked")
    t.check("Reused" not in out and "HTTP/1.1 200" not in out and
            not o.reqs_for("id=res-revoked"),
            "after a reload with a CRL that revokes alice, her session no "
            "longer resumes and her certificate is refused",
            lambda: ptest.tail(out, 12))
    w0 = p.workers()

    # optional
    rc, st, err = curl(opt_port, ca.pem, url % "anon")
    t.check(st == "403" and not o.reqs_for("id=anon"),
            "optional: no certificate, no user: the ACL answers 403",
            (rc, st, err[-300:]))
    users = ptest.wait_for(lambda: log_users(rec, "")[-1:] == ["-"] and
                           log_users(rec, ""), ptest.bound(5)) or []
    t.check(users[-1:] == ["-"], "optional: LOG sees no user", users[-3:])
    rc, st, err = curl(opt_port, ca.pem, url % "optalice", alice)
    t.check(st == "200" and o.reqs_for("id=optalice"),
            "optional: alice's certificate: 200", (rc, st, err[-300:]))

    # -t
    for extra, needle, what in (
            ('client_ca = "%s"; user_field = "Colour";' % cl.pem,
             "user_field", "user_field naming no subject field"),
            ('client_verify = "optional";', "client_verify",
             "client_verify without client_ca")):
        text = T.conf(t, T.listener(req_port, cert, key, extra=extra))
        path = ptest.write_conf(t.tmp, text, "bad.conf")
        cp = ptest.run_portico(["-t", "-c", path])
        want = "%s:%d: %s" % (path, ptest.line_of(text, needle), needle)
        t.check(cp.returncode != 0 and want in cp.stderr,
                "-t: %s fails with its line" % what, cp.stderr)

    t.check(not o.bad, "the origin found nothing wrong", o.bad)
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("tls_clientcert").run(main)
