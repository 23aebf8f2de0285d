#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Several certificates on one TLS listener, chosen by the client's SNI
name (`certificates = ( ... )` beside the default certificate), and an
RSA and an ECDSA certificate side by side (certificate and key as lists),
checked with openssl s_client -servername and with curl.

- no SNI, the default's own name, and a name no certificate has: the
  default certificate;
- "a.test" (and "A.TEST."): the a.test certificate; "x.wild.test": the
  *.wild.test one; "wild.test" and "y.x.wild.test" (not covered by the
  wildcard): the default;
- every chosen certificate verifies against the test CA;
- curl --proxy https://a.test:PORT (resolved to 127.0.0.1) verifies
  a.test's certificate and gets its GET through;
- a client that accepts only ECDSA signatures gets the ECDSA certificate
  and one that accepts only RSA gets the RSA one, from one listener;
- RFC 6066 3: a session resumes only under the name it was made for, in
  TLS 1.2 and 1.3: a session of "a.test" resumes with "a.test" and "A.TEST",
  and not with "x.wild.test", another name of the same certificate's
  listener, or without SNI.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402


def main(t):
    why = T.missing()
    if why:
        t.skip("tls SNI", why)
        return
    ca = T.CA(t)
    dcert, dkey = ca.issue("proxy.test", dns=["proxy.test"])
    acert, akey = ca.issue("a.test", dns=["a.test"], ips=())
    wcert, wkey = ca.issue("wild", dns=["*.wild.test"], ips=())
    rcert, rkey = ca.issue("dual-rsa", dns=["dual.test"], kind="rsa")
    ecert, ekey = ca.issue("dual-ec", dns=["dual.test"])
    o = H.origin(t)
    port, dual = ptest.free_port(), ptest.free_port()
    sni = ('certificates = ( { certificate = "%s"; key = "%s"; },\n'
           '      { certificate = "%s"; key = "%s"; } );'
           % (acert, akey, wcert, wkey))
    lst = ",\n".join([
        T.listener(port, dcert, dkey, extra=sni),
        '  { name = "dual"; address = "127.0.0.1:%d"; protocol = "http"; '
        'transport = "tls";\n    tls = { certificate = [ "%s", "%s" ]; '
        'key = [ "%s", "%s" ]; }; }' % (dual, rcert, ecert, rkey, ekey)])
    p = t.portico(T.conf(t, lst, log_level="debug"))
    w0 = p.workers()

    for name, want in ((None, "proxy.test"), ("proxy.test", "proxy.test"),
                       ("unknown.test", "proxy.test"), ("a.test", "a.test"),
                       ("A.TEST.", "a.test"), ("x.wild.test", "wild"),
                       ("wild.test", "proxy.test"),
                       ("y.x.wild.test", "proxy.test")):
        rc, out = T.s_client(port, ca.pem, servername=name)
        got = T.peer_subject(out)
        t.check(got == want and "Verify return code: 0 (ok)" in out,
                "SNI %s: the %s certificate, verified against the CA"
                % (name or "(none)", want),
                lambda: ["got %r" % got] + ptest.tail(out, 10))

    cp = H.curl(["--proxy", "https://a.test:%d" % port, "--proxy-cacert",
                 ca.pem, "--resolve", "a.test:%d:127.0.0.1" % port,
                 "-o", "/dev/null", "-w", "%{http_code}",
                 o.url + "/echo?id=sni"])
    t.check(cp.returncode == 0 and cp.stdout == b"200" and
            o.reqs_for("id=sni"),
            "curl --proxy https://a.test:PORT verifies a.test's certificate "
            "and gets its GET through", (cp.returncode, cp.stdout,
                                         cp.stderr[-300:]))
    t.check(p.log_lines(r"tls: TLSv1\.3 \S+ sni=a\.test$"),
            "the debug log names the SNI name of the handshake",
            lambda: p.log_lines(r"tls: TLS"))

    req = ("GET %s/echo?id=resume HTTP/1.1\r\nHost: x\r\nConnection: "
           "close\r\n\r\n" % o.url)
    for version, flag in (("TLSv1.2", "-tls1_2"), ("TLSv1.3", "-tls1_3")):
        sess = t.path("sni-%s.pem" % version)
        rc, out = T.s_client(port, ca.pem, servername="a.test", data=req,
                             extra=["-ign_eof", flag, "-sess_out", sess])
        hows = {}
        for name in ("a.test", "A.TEST", "x.wild.test", "unknown.test",
                     None):
            rc, out = T.s_client(port, ca.pem, servername=name, data=req,
                                 extra=["-ign_eof", flag, "-sess_in", sess])
            m = re.search(r"^(New|Reused), TLSv", out, re.M)
            hows[name] = m.group(1) if m else "?"
        t.check(hows == {"a.test": "Reused", "A.TEST": "Reused",
                         "x.wild.test": "New", "unknown.test": "New",
                         None: "New"},
                "%s: a session made for a.test resumes under a.test (any "
                "case) only; another name, or none, gets a full handshake "
                "(RFC 6066 3)" % version, repr(hows))

    for sigalgs, bits, kind, cn in (
            ("ecdsa_secp256r1_sha256", "256", "ECDSA", "dual-ec"),
            ("rsa_pss_rsae_sha256", "2048", "RSA", "dual-rsa")):
        rc, out = T.s_client(dual, ca.pem, servername="dual.test",
                             extra=["-sigalgs", sigalgs])
        m = re.search(r"Server public key is (\d+) bit", out)
        t.check(m and m.group(1) == bits and T.peer_subject(out) == cn and
                "Verify return code: 0 (ok)" in out,
                "one listener with RSA and ECDSA: a client that takes only "
                "%s signatures gets the %s certificate" % (kind, kind),
                lambda: ptest.tail(out, 12))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("tls_sni").run(main)
