#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Basic proxy authentication inside TLS: the real tls.so and auth.so on
one HTTPS listener (what issue 13 is for: credentials that no longer
cross the network in clear text), driven by curl --proxy https://.

- no credentials: 407 with the Basic challenge, through TLS;
- a wrong password: 407 and one auth failure line naming the listener;
- the right password: 200, and the origin sees the request but not the
  Proxy-Authorization field;
- three requests on one kept-alive TLS connection: three 200s, one
  connection, one verification;
- CONNECT inside TLS with credentials: 200 through the tunnel; without:
  407, and the origin never sees it.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import authtest as A  # noqa: E402
import tlstest as T  # noqa: E402


def curl(port, ca, urls, user=None, extra=()):
    """(rc, [status...], connections, stderr, head text)."""
    args = T.curl_args(port, ca) + ["-D", "-", "-o", "/dev/null", "-w",
                                    "CODE %{http_code} %{num_connects}\\n"]
    if user is not None:
        args += ["--proxy-user", user]
    cp = H.curl(args + list(extra) + list(urls))
    out = cp.stdout.decode("latin-1")
    codes = [int(m.group(1)) for m in re.finditer(r"CODE (\d{3}) \d+", out)]
    conns = sum(int(m.group(1)) for m in re.finditer(r"CODE \d{3} (\d+)",
                                                     out))
    return cp.returncode, codes, conns, cp.stderr.decode(errors="replace"), \
        out


def main(t):
    why = T.missing() or A.missing()
    if why:
        t.skip("tls with auth", why)
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    o = H.origin(t)
    ulist = A.write_users(t, [("bob", A.argon2id("s3cret")),
                              ("kim", A.argon2id("k-pw"))])
    port = ptest.free_port()
    p = t.portico(T.conf(t, T.listener(port, cert, key), log_level="debug",
                         modules_extra=', { name = "auth"; path = "%s"; '
                         'userlist = "%s"; realm = "staff"; }'
                         % (A.AUTH_SO, ulist)))
    w0 = p.workers()
    url = o.url + "/echo?id=%s"

    rc, codes, _, err, out = curl(port, ca.pem, [url % "none"])
    t.check(codes == [407] and
            'Proxy-Authenticate: Basic realm="staff"' in out,
            "through TLS without credentials: 407 with the Basic challenge",
            (rc, codes, err, out[:300]))

    rc, codes, _, err, out = curl(port, ca.pem, [url % "wrong"], "bob:nope")
    t.check(codes == [407], "through TLS with a wrong password: 407",
            (rc, codes, err))
    f = ptest.wait_for(lambda: A.failures(p), ptest.bound(5)) or []
    t.check([(x.get("user"), x.get("listener"), x.get("reason"))
             for x in f] == [("bob", "tls", "bad-password")],
            "one failure line: user bob, listener tls, bad-password", f)

    rc, codes, _, err, out = curl(port, ca.pem, [url % "right"],
                                  "bob:s3cret")
    r = o.reqs_for("id=right")
    t.check(codes == [200] and len(r) == 1,
            "through TLS with the right password: 200, the origin saw it",
            (rc, codes, err))
    t.check(r and H.field(r[0]["headers"], "proxy-authorization") is None,
            "the origin does not see Proxy-Authorization",
            r[0]["headers"] if r else None)

    rc, codes, conns, err, _ = curl(
        port, ca.pem, [url % "ka1", url % "ka2", url % "ka3"], "kim:k-pw")
    t.check(codes == [200, 200, 200] and conns == 1,
            "3 requests on one kept-alive TLS connection: 200 each, one "
            "connection", (rc, codes, conns, err))
    verified = p.log_lines(r'auth: verified user="kim"')
    t.check(len(verified) == 1,
            "the kept-alive connection verified its user once", verified)

    rc, codes, _, err, _ = curl(port, ca.pem, [url % "tun"], "bob:s3cret",
                                extra=["-p"])
    t.check(rc == 0 and codes and codes[-1] == 200 and
            len(o.reqs_for("id=tun")) == 1,
            "CONNECT inside TLS with credentials: 200 through the tunnel",
            (rc, codes, err))
    rc, codes, _, err, out = curl(port, ca.pem, [url % "tun407"],
                                  extra=["-p"])
    t.check(" 407" in out and not o.reqs_for("id=tun407"),
            "CONNECT inside TLS without credentials: 407, the origin never "
            "sees it", (rc, codes, err, out[:200]))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("tls_auth").run(main)
