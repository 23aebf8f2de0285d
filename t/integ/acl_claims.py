#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A user name that no module verified is not a user (the real acl.so, with
and without the real auth.so):

- without an auth module, curl -x -U alice:anything is refused 403 by a
  rule that allows only user "alice" (and by user "*"), and the origin
  sees nothing: Basic credentials nobody checked are only a claim;
- the same for a SOCKS5 client that chooses username/password unasked
  (portico takes any) and for a SOCKS4 USERID: reply 0x02 and 0x5b;
- with the auth module loaded, alice with her password gets 200 and a
  wrong password 407: the rule itself can pass.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import authtest as A  # noqa: E402
import acltest as L  # noqa: E402


def main(t):
    why = L.missing()
    if why:
        t.skip("acl scenarios", why, need="acl.so")
        return
    if not H.have_curl():
        t.skip("acl and claimed users", "no curl", need="curl")
        return
    origin = H.origin(t)
    echo = t.echo_server()
    hp, sp = ptest.free_port(), ptest.free_port()
    rules = [dict(name="alice", action="allow", user=["alice"]),
             dict(name="anyone", action="allow", user="*", method="POST")]
    p = L.start(t, [L.http_listener("web", hp), L.socks_listener("socks", sp)],
                [L.acl_entry(rules, default="deny", allow_private=True)])
    code, codes, err, _ = A.curl_proxy(hp, [origin.url + "/echo?t=claim"],
                                       user="alice:guess")
    t.check(codes == [403] and not origin.reqs_for("t=claim"),
            "no auth module: Basic alice:guess does not make alice (403, "
            "the origin sees nothing)", lambda: [code, codes, err])
    code, codes, err, _ = A.curl_proxy(hp, [origin.url + "/echo?t=any"],
                                       user="alice:guess",
                                       extra=["-X", "POST", "-d", "x"])
    t.check(codes == [403] and not origin.reqs_for("t=any"),
            "no auth module: nor does it match user \"*\"",
            lambda: [code, codes, err])
    # connect5 offers username/password only, which portico takes.
    r, c = S.connect5(sp, "127.0.0.1", echo.port, auth=("alice", "guess"))
    c.close()
    t.check(isinstance(r, S.Reply) and r.rep == 2,
            "SOCKS5 username/password chosen unasked names no user: reply "
            "0x02", repr(r))
    r, c = S.connect4(sp, "127.0.0.1", echo.port, userid=b"alice")
    c.close()
    t.check(isinstance(r, S.Reply4) and r.cd == 0x5B,
            "a SOCKS4 USERID names no user: 0x5b", repr(r))
    t.check(echo.accepted == 0, "the SOCKS target saw no connection",
            "accepted %d" % echo.accepted)
    t.stop_portico(p)

    why = A.missing()
    if why:
        t.skip("the same rules with the auth module", why)
        return
    users = A.write_users(t, [("alice", A.argon2id("s3cret"))])
    auth = '{ name = "auth"; path = "%s"; userlist = "%s"; }' % (A.AUTH_SO,
                                                                 users)
    p = L.start(t, [L.http_listener("web", hp)],
                [auth, L.acl_entry(rules, default="deny", allow_private=True)],
                log="error2.log")
    code, codes, err, _ = A.curl_proxy(
        hp, [origin.url + "/echo?t=ok"], user="alice:s3cret")
    t.check(codes == [200] and len(origin.reqs_for("t=ok")) == 1,
            "with the auth module, alice and her password: 200",
            lambda: [code, codes, err])
    code, codes, err, _ = A.curl_proxy(
        hp, [origin.url + "/echo?t=bad"], user="alice:guess")
    t.check(codes == [407] and not origin.reqs_for("t=bad"),
            "a wrong password: 407", lambda: [code, codes, err])
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("acl_claims").run(main)
