#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
SOCKS5 UDP ASSOCIATE through the acl module (the real acl.so), against
loopback UDP echo servers A, B and C; a test DNS server resolves udp.test
to 127.0.0.1.

- allow_private = true, default allow, rules allowing protocol udp to
  port A and denying protocol udp to port B: datagrams to A (by address
  and by name) come back; those to B are dropped (B counts none, the
  client gets nothing) and a datagram to A right after still comes back:
  the association goes on, its control connection stays open; C (no
  rule) comes back; a datagram to a name a udp host rule denies is
  dropped though the name resolves to A's address; the core's
  udp_denied counts each dropped datagram;
- a rule without destination conditions (listener) denying: UDP
  ASSOCIATE on that listener is refused with REP 0x02 and the connection
  ends;
- default deny and one rule allowing udp to port A: the association is
  not refused (only a rule without destination conditions refuses it),
  A comes back, B is dropped;
- allow_private left out: the association is made, but datagrams to
  127.0.0.1 (by address, by name, and as ::ffff:127.0.0.1), to 0.0.0.0,
  ::ffff:0.0.0.0 and :: (which Linux delivers locally) are dropped,
  A counts none, the control connection stays open; on a listener with
  acl = { enabled = false; } they come back;
- allow_private false with a rule allowing udp to dst 127.0.0.1/32 port
  A: A comes back, B (default deny) is dropped;
- with the auth module (skipped without auth.so): a udp rule for user
  mallory and port A drops mallory's datagrams to A, not bob's, nor
  mallory's to C.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import acltest as ACL  # noqa: E402
import authtest as A  # noqa: E402


def roundtrip(a, host, port, data, timeout=None):
    """(ok, why): <data> to host:port through association <a> and back,
    the reply naming 127.0.0.1:port."""
    try:
        a.send(host, port, data)
    except OSError as e:
        return False, "send: %s" % ptest.err_kind(e)
    got = a.recv(timeout or ptest.bound(3))
    if got is None:
        return False, "no reply datagram within %.0f s" % (
            timeout or ptest.bound(3))
    frag, h, p, d = got
    if frag != 0 or h != "127.0.0.1" or p != port or d != data:
        return False, "reply frag %r from %s:%s, %d bytes (equal %s)" % (
            frag, h, p, len(d), d == data)
    return True, None


def dropped(a, host, echo, wait=None):
    """(ok, why): a datagram to host:echo.port through <a> never reaches
    the echo server and nothing comes back within <wait> seconds (half a
    second, stretched for slow builds: a datagram that came later still
    shows in the echo server's counts checked afterwards)."""
    before = echo.count()
    data = b"denied " + os.urandom(6).hex().encode()
    try:
        a.send(host, echo.port, data)
    except OSError as e:
        return False, "send: %s" % ptest.err_kind(e)
    got = a.recv(wait or ptest.bound(0.5))
    seen = echo.count() - before
    if got is not None or seen:
        return False, "not dropped: the client got %r, the echo server " \
            "saw %d datagram(s)" % (got, seen)
    return True, None


def open_ctl(a):
    """True when the association's control connection is still open."""
    if a.ctl is None:
        return False
    data, how = H.outcome(a.ctl, 0.2)
    return how == "timeout" and not data


def start(t, e, name, rules, default="allow", allow_private=None,
          more=()):
    sport = ptest.free_port()
    p = ACL.start(t, [ACL.socks_listener("s", sport)] + list(more),
                  [ACL.acl_entry(rules, default=default,
                                 allow_private=allow_private)],
                  log=name + ".log", dns=e.dns)
    return p, sport


class Env:
    pass


def main(t):
    why = ACL.missing()
    if why:
        t.skip("acl on UDP ASSOCIATE", why, need="acl.so")
        return
    e = Env()
    e.a, e.b, e.c = S.udp_echo(t), S.udp_echo(t), S.udp_echo(t)
    e.a6 = S.udp_echo(t, "::1") if ptest.have_ipv6() else None
    e.dns = H.dns_server(t, {"udp.test": {"A": ["127.0.0.1"]},
                             "bad.test": {"A": ["127.0.0.1"]}})
    ports(t, e)
    default_deny(t, e)
    private(t, e)
    users(t, e)


def users(t, e):
    why = A.missing()
    if why:
        t.skip("udp rules by user (the auth module)", why)
        return
    ulist = A.write_users(t, [("bob", A.argon2id("b-pw")),
                              ("mallory", A.argon2id("m-pw"))])
    auth = '{ name = "auth"; path = "%s"; userlist = "%s"; }' % (
        A.AUTH_SO, ulist)
    sport = ptest.free_port()
    p = ACL.start(t, [ACL.socks_listener("s", sport)],
                  [auth, ACL.acl_entry([dict(
                      name="no-mallory-a", action="deny", protocol="udp",
                      user="mallory", port=e.a.port)], default="allow",
                      allow_private=True)], log="users.log", dns=e.dns)
    w0 = p.workers()
    lbl = "auth + acl, deny udp to A for mallory: "
    a = S.Udp(sport, auth=("bob", "b-pw"))
    t.at_exit(a.close)
    ok, why = roundtrip(a, "127.0.0.1", e.a.port, b"bob to A") if a.ok() \
        else (False, a.describe())
    t.check(ok, lbl + "bob's datagram to A comes back", why)
    a.close()
    m = S.Udp(sport, auth=("mallory", "m-pw"))
    t.at_exit(m.close)
    t.check(m.ok(), lbl + "mallory's association is made (the rule has a "
            "destination condition)", m.describe())
    if m.ok():
        ok, why = dropped(m, "127.0.0.1", e.a)
        t.check(ok, lbl + "mallory's datagram to A is dropped", why)
        ok, why = roundtrip(m, "127.0.0.1", e.c.port, b"mallory to C")
        t.check(ok, lbl + "mallory's datagram to C comes back", why)
    m.close()
    H.finish(t, p, w0, lbl)


def ports(t, e):
    s2 = ptest.free_port()
    rules = [dict(name="no-udp-s2", action="deny", listener="s2"),
             dict(name="udp-host", action="deny", protocol="udp",
                  host="bad.test"),
             dict(name="udp-a", action="allow", protocol="udp",
                  port=e.a.port),
             dict(name="udp-b", action="deny", protocol="udp",
                  port=e.b.port)]
    p, sport = start(t, e, "ports", rules, allow_private=True,
                     more=[ACL.socks_listener("s2", s2)])
    w0 = p.workers()
    lbl = "allow udp to A, deny udp to B: "
    a = S.Udp(sport)
    t.at_exit(a.close)
    t.check(a.ok(), lbl + "UDP ASSOCIATE: REP 0", a.describe())
    if not a.ok():
        H.finish(t, p, w0)
        return
    ok, why = roundtrip(a, "127.0.0.1", e.a.port, b"to A")
    t.check(ok, lbl + "a datagram to 127.0.0.1:A comes back", why)
    ok, why = roundtrip(a, "udp.test", e.a.port, b"to A by name")
    t.check(ok, lbl + "a datagram to udp.test:A comes back", why)
    denied = 0
    for host in ("127.0.0.1", "udp.test", "127.0.0.1"):
        ok, why = dropped(a, host, e.b)
        denied += 1
        t.check(ok, lbl + "a datagram to %s:B is dropped (B sees nothing, "
                "the client gets nothing)" % host, why)
        ok, why = roundtrip(a, "127.0.0.1", e.a.port, b"A after B")
        t.check(ok, lbl + "... and a datagram to A right after comes back",
                why)
    t.check(e.b.count() == 0, lbl + "B's echo server counted 0 datagrams",
            "B saw %d" % e.b.count())
    for host in ("bad.test", "BAD.Test."):
        ok, why = dropped(a, host, e.a)
        denied += 1
        t.check(ok, lbl + "a datagram to %s:A (host = \"bad.test\" denied "
                "for udp, though it resolves to 127.0.0.1) is dropped" % host,
                why)
    ok, why = roundtrip(a, "127.0.0.1", e.a.port, b"A after bad.test")
    t.check(ok, lbl + "... and one to 127.0.0.1:A after them comes back",
            why)
    ok, why = roundtrip(a, "127.0.0.1", e.c.port, b"to C")
    t.check(ok, lbl + "a datagram to C (no rule: default allow) comes back",
            why)
    t.check(open_ctl(a), lbl + "the control connection stays open after "
            "the drops")
    a.close()

    # a rule without destination conditions refuses the association
    r, c = None, None
    try:
        c = S.Client.to(s2, timeout=ptest.bound(5))
        m = c.greet([S.M_NONE])
        r = c.request("0.0.0.0", 0, cmd=S.CMD_UDP) if m == S.M_NONE else \
            "method 0x%02x" % m
        _, how, _ = S.ending(c, ptest.bound(3))
    except Exception as ex:
        r, how = "%s: %s" % (type(ex).__name__, ex), "?"
    finally:
        if c is not None:
            c.close()
    t.check(isinstance(r, S.Reply) and r.rep == 0x02 and S.closes(how),
            "listener = \"s2\" deny (no destination condition): UDP "
            "ASSOCIATE there is refused with REP 0x02 and the connection "
            "ends", (r, how))
    H.finish(t, p, w0, lbl)
    tot = ACL.totals(p)
    t.check(tot.get("udp_denied") == denied, lbl + "the master's totals: "
            "udp_denied=%d (each dropped datagram)" % denied, tot)


def default_deny(t, e):
    rules = [dict(name="udp-a", action="allow", protocol="udp",
                  port=e.a.port)]
    p, sport = start(t, e, "deny", rules, default="deny",
                     allow_private=True)
    w0 = p.workers()
    lbl = "default deny, allow udp to A: "
    a = S.Udp(sport)
    t.at_exit(a.close)
    t.check(a.ok(), lbl + "UDP ASSOCIATE is not refused (no rule without "
            "destination conditions denies it): REP 0", a.describe())
    if a.ok():
        ok, why = roundtrip(a, "127.0.0.1", e.a.port, b"deny: to A")
        t.check(ok, lbl + "a datagram to A comes back", why)
        before = e.b.count()
        ok, why = dropped(a, "127.0.0.1", e.b)
        t.check(ok and e.b.count() == before, lbl + "a datagram to B "
                "(default deny) is dropped", why)
        ok, why = roundtrip(a, "127.0.0.1", e.a.port, b"deny: A again")
        t.check(ok, lbl + "... and one to A after it comes back", why)
    a.close()
    H.finish(t, p, w0, lbl)


def private(t, e):
    off = ptest.free_port()
    p, sport = start(t, e, "private", None, more=[ACL.socks_listener(
        "off", off, "acl = { enabled = false; };")])
    w0 = p.workers()
    lbl = "allow_private left out: "
    a = S.Udp(sport)
    t.at_exit(a.close)
    t.check(a.ok(), lbl + "UDP ASSOCIATE: REP 0 (an association has no "
            "destination yet)", a.describe())
    if a.ok():
        before = e.a.count()
        for host in ("127.0.0.1", "udp.test", "::ffff:127.0.0.1", "0.0.0.0",
                     "::ffff:0.0.0.0"):
            ok, why = dropped(a, host, e.a)
            t.check(ok, lbl + "a datagram to %s:A is dropped" % host, why)
        if e.a6 is not None:
            ok, why = dropped(a, "::", e.a6)
            t.check(ok, lbl + "a datagram to [::]:A6 (Linux delivers it to "
                    "::1) is dropped", why)
        else:
            t.skip(lbl + "a datagram to [::]", "no IPv6 loopback",
                   need="ipv6")
        t.check(e.a.count() == before, lbl + "A's echo server counted "
                "none of them", "A saw %d" % (e.a.count() - before))
        t.check(open_ctl(a), lbl + "the control connection stays open")
    a.close()
    a = S.Udp(off)
    t.at_exit(a.close)
    ok, why = roundtrip(a, "127.0.0.1", e.a.port, b"acl off") if a.ok() \
        else (False, a.describe())
    t.check(ok, lbl + "on a listener with acl = { enabled = false; } a "
            "datagram to 127.0.0.1:A comes back", why)
    a.close()
    H.finish(t, p, w0, lbl)

    rules = [dict(name="udp-lab", action="allow", protocol="udp",
                  dst="127.0.0.1/32", port=e.a.port)]
    p, sport = start(t, e, "private-dst", rules, default="deny")
    w0 = p.workers()
    lbl = "allow_private left out, allow udp dst 127.0.0.1/32 port A: "
    a = S.Udp(sport)
    t.at_exit(a.close)
    t.check(a.ok(), lbl + "UDP ASSOCIATE: REP 0", a.describe())
    if a.ok():
        ok, why = roundtrip(a, "127.0.0.1", e.a.port, b"lab: to A")
        t.check(ok, lbl + "a datagram to 127.0.0.1:A comes back (the "
                "rule's dst excuses the private address)", why)
        ok, why = roundtrip(a, "udp.test", e.a.port, b"lab: by name")
        t.check(ok, lbl + "a datagram to udp.test:A comes back", why)
        ok, why = dropped(a, "127.0.0.1", e.b)
        t.check(ok, lbl + "a datagram to B (default deny) is dropped", why)
    a.close()
    H.finish(t, p, w0, lbl)


if __name__ == "__main__":
    ptest.Test("acl_udp").run(main)
