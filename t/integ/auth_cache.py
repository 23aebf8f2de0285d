#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The auth module's verified-credential cache, observed through its
counters (not timed):

- cache_ttl = 300: bob logs in on one connection (a verification), then
  on a new connection (a cache hit, no verification); two wrong
  passwords are verified each time (failures are never cached);
- cache_ttl = 0: the same two good logins are two verifications;
- fail_threshold = 3: after three wrong passwords from 127.0.0.1 even
  the right one is refused without verification (reason=throttled),
  while 127.0.0.2 (when it can be bound) still logs in.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import authtest as A  # noqa: E402


def run(t, o, ulist, ttl, label):
    port = ptest.free_port()
    conf = A.conf(t, '{ address = "127.0.0.1:%d"; protocol = "http"; }'
                  % port, ulist, mod_extra="cache_ttl = %d;" % ttl)
    p = t.portico(conf.replace("/error.log", "/error-%s.log" % label))
    codes = [A.curl_head(port, o.url + "/c/%s%d" % (label, i), cred)[0]
             for i, cred in enumerate(("bob:b-pw", "bob:b-pw", "bob:x",
                                       "bob:x"))]
    t.check(codes == [200, 200, 407, 407], "%s: good, good, wrong, wrong "
            "on four connections: 200 200 407 407" % label, codes)
    t.stop_portico(p)
    return A.totals(p)


def main(t):
    why = A.missing()
    if why:
        t.skip("auth cache scenarios", why)
        return
    o = H.origin(t)
    ulist = A.write_users(t, [("bob", A.argon2id("b-pw"))])
    tot = run(t, o, ulist, 300, "ttl300")
    t.check(tot.get("auth_cache_hits") == 1, "cache_ttl 300: the second "
            "good login is a cache hit", tot)
    t.check(tot.get("auth_verifications") == 3, "so 3 verifications: the "
            "first good login and both wrong ones (failures never cached)",
            tot)
    tot = run(t, o, ulist, 0, "ttl0")
    t.check(tot.get("auth_cache_hits") == 0 and
            tot.get("auth_verifications") == 4, "cache_ttl 0: no hit, every "
            "login verified", tot)
    throttle(t, o, ulist)


def throttle(t, o, ulist):
    port = ptest.free_port()
    conf = A.conf(t, '{ address = "127.0.0.1:%d"; protocol = "http"; }'
                  % port, ulist, mod_extra="fail_threshold = 3; "
                  "fail_window = 60; fail_penalty = 60;")
    p = t.portico(conf.replace("/error.log", "/error-thr.log"))
    codes = [A.curl_head(port, o.url + "/t/%d" % i, "bob:x")[0]
             for i in range(3)]
    st, head = A.curl_head(port, o.url + "/t/good", "bob:b-pw")
    t.check(codes == [407] * 3 and st == 407, "three failures, then the "
            "right password from the same address: 407", (codes, st))
    f = [x.get("reason") for x in A.failures(p)]
    t.check(f[:3] == ["bad-password"] * 3 and f[3:] == ["throttled"],
            "the fourth failure line says reason=throttled", f)
    cp = H.curl(["-o", "/dev/null", "-w", "%{http_code}", "--interface",
                 "127.0.0.2", "-x", "http://127.0.0.1:%d" % port, "-U",
                 "bob:b-pw", o.url + "/t/other"])
    if cp.returncode == 45:
        t.skip("another address is not throttled", "127.0.0.2 cannot be "
               "bound")
    else:
        t.check(cp.stdout == b"200", "127.0.0.2 still logs in",
                (cp.stdout, cp.stderr))
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("auth_cache").run(main)
