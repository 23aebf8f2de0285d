#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The auth module's userlist follows the configuration's reloads: the
master reads it in conf(), so SIGHUP re-reads it and a broken file
refuses the new configuration while the old one (with its userlist)
keeps serving.

- bob in the list: bob 200, carol 407;
- the file now has carol, not bob; SIGHUP: carol 200, bob 407 (a new
  worker generation, so no credential cached by the old one survives);
- the file gets a line that is not user:hash; SIGHUP: "reload failed"
  naming the userlist's file and line; carol still 200, bob still 407,
  the same workers;
- a good file again reloads normally.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import authtest as A  # noqa: E402


def main(t):
    why = A.missing()
    if why:
        t.skip("auth reload scenarios", why)
        return
    o = H.origin(t)
    url = o.url + "/reload/%s"
    bob, carol = ("bob", A.argon2id("b-pw")), ("carol", A.argon2id("c-pw"))
    ulist = A.write_users(t, [bob])
    port = ptest.free_port()
    conf = A.conf(t, '{ name = "main"; address = "127.0.0.1:%d"; '
                  'protocol = "http"; }' % port, ulist)
    p = t.portico(conf)

    def status(who, tag):
        return A.curl_head(port, url % tag, who)[0]

    t.check(status("bob:b-pw", "1") == 200, "bob listed: 200")
    t.check(status("carol:c-pw", "2") == 407, "carol not listed: 407")

    gen = p.workers()
    A.write_users(t, [carol])
    p.hup()
    ok = ptest.wait_for(lambda: p.log_lines(r"reloaded ") and
                        p.workers() != gen, ptest.bound(10))
    t.check(ok, "SIGHUP reloads (a new worker generation)",
            t.log_details(p))
    t.check(status("carol:c-pw", "3") == 200, "after the reload carol "
            "(added) gets 200")
    t.check(status("bob:b-pw", "4") == 407, "and bob (removed) 407")

    gen = p.workers()
    A.write_users(t, [carol, "this line is broken"])
    p.hup()
    lines = p.wait_log(r"reload failed: ", timeout=ptest.bound(10))
    t.check(lines and (ulist + ":3: not user:hash") in lines[-1],
            "a broken userlist: reload failed, naming its file and line",
            lines or t.log_details(p))
    t.check(p.workers() == gen, "the same workers keep serving",
            (gen, p.workers()))
    t.check(status("carol:c-pw", "5") == 200, "carol still 200 (the old "
            "userlist serves)")
    t.check(status("bob:b-pw", "6") == 407, "bob still 407")

    A.write_users(t, [carol, bob])
    p.hup()
    ok = ptest.wait_for(lambda: len(p.log_lines(r"reloaded ")) >= 2 and
                        p.workers() != gen, ptest.bound(10))
    t.check(ok, "a good userlist again reloads", t.log_details(p))
    t.check(status("bob:b-pw", "7") == 200 and
            status("carol:c-pw", "8") == 200, "both users now get 200")
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("auth_reload").run(main)
