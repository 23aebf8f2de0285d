#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
SOCKS5 UDP ASSOCIATE through a SOCKS5 parent: the client's association
with portico is relayed through an association portico opens with the
parent, both ways, full size, with the client's destinations still judged
by portico's ACL per datagram. Everything on 127.0.0.1, two UDP echoes
(A, and B whose port an acl rule denies at the first portico).

- portico (socks5 listener, via = "up", the acl module, the access log)
  -> portico as the parent (socks5 listener, username/password through the
  auth module; skipped down to a parent without auth when auth.so or the
  argon2 program is missing) -> A:
  - UDP ASSOCIATE: REP 0 with the first portico's own relay (not the
    parent's);
  - datagrams of 1, 1400 and 60000 bytes to 127.0.0.1:A and to
    localhost:A come back intact, the header naming 127.0.0.1:A, and A saw
    each once;
  - datagrams to 127.0.0.1:B and localhost:B are dropped (B saw none, the
    client got nothing), one to A right after still comes back, the
    control connection stays open;
  - the parent's access log has the association (proto udp, its user,
    exactly the payload bytes relayed each way, the first portico's
    address as the client); the first portico's record names the parent
    (upstream 127.0.0.1:parent port);
  - an acl rule denying udp to dst 127.0.0.1/32 port C: a datagram to
    127.0.0.1:C is dropped; one to localhost:C goes to the parent as the
    name (it resolves it, so only the name is judged) and comes back;
    through a parent with resolve = "local" the name is resolved here,
    judged with its address and dropped, and datagrams of every size to
    localhost:A still come back;
  - a route whose first member is a SOCKS5 parent that does not answer
    (nothing listens) fails over to "up": datagrams come back;
  - stopping the parent closes the client's control connection.
- the same through Dante's danted as the parent (no auth); its log names
  the UDP association with A; stopping danted closes the client's control
  connection.
- a route of an HTTP parent only: UDP ASSOCIATE is answered 0x07 (command
  not supported), and that parent is never connected to (it does not
  exist); ["web", "direct"]: the association goes direct and works.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import parenttest as P  # noqa: E402
import acltest as ACL  # noqa: E402
import authtest as A  # noqa: E402
import accesslogtest as AL  # noqa: E402

USER, PASSWORD = "carol", "udp-through-parents"
SIZES = (1, 1400, 60000)


def missing():
    return ACL.missing() or AL.missing()


def parent_conf(t, name, port, users):
    """The parent portico: a socks5 listener, the auth module when
    <users> (a userlist path), the access log (JSON)."""
    mods = []
    if users:
        mods.append('{ name = "auth"; path = "%s"; userlist = "%s"; }'
                    % (A.AUTH_SO, users))
    mods.append(AL.module(['file = "%s"; format = "json";'
                           % t.path(name + ".json")]))
    return """workers = 1;
error_log = "%s";
log_level = "info";
pid_file = "%s";
shutdown_timeout = 5;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
listeners = (
  { name = "s"; address = "127.0.0.1:%d"; protocol = "socks5"; }
);
modules = (
  %s
);
""" % (t.path(name + ".log"), t.path(name + ".pid"), port,
       ",\n  ".join(mods))


def first_conf(t, name, listeners, parents, deny_port, rules=()):
    """The first portico: <listeners> (texts), <parents> (texts of
    parents entries), the acl denying udp to <deny_port> (and <rules>),
    the access log (JSON)."""
    rules = [dict(name="no-b", action="deny", protocol="udp",
                  port=deny_port)] + list(rules)
    return """workers = 1;
error_log = "%s";
log_level = "info";
pid_file = "%s";
shutdown_timeout = 5;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
parents = (
  %s
);
listeners = (
  %s
);
modules = (
  %s,
  %s
);
""" % (t.path(name + ".log"), t.path(name + ".pid"), ",\n  ".join(parents),
       ",\n  ".join(listeners),
       ACL.acl_entry(rules, default="allow", allow_private=True),
       AL.module(['file = "%s"; format = "json";' % t.path(name + ".json")]))


def start_first(t, conf, name, ports):
    """The first portico on <conf>, once its worker runs and <ports>
    listen (ptest's own wait would also wait for every parent's
    address: a dead parent never listens)."""
    p = t.portico(conf, conf_name=name + ".conf", wait=False)
    ok = ptest.wait_for(lambda: not p.running() or (
        len(p.workers()) == 1 and all(ptest.listening(x) for x in ports)),
        ptest.bound(10))
    if not ok or not p.running():
        raise RuntimeError("portico %s did not start:\n%s" % (
            name, "\n".join(ptest.tail(p.log(), 30))))
    return p


def socks5_parent(name, port, auth=None, extra=""):
    cred = ' user = "%s"; password = "%s";' % auth if auth else ""
    return '{ name = "%s"; address = "127.0.0.1:%d"; protocol = "socks5";%s' \
        ' max_fails = 100; %s}' % (name, port, cred, extra)


def listener(name, port, via):
    return '{ name = "%s"; address = "127.0.0.1:%d"; protocol = "socks5"; ' \
        'via = %s; }' % (name, port, via)


def roundtrip(a, host, port, data, timeout=None):
    """(ok, why): <data> to host:port through association <a> and back,
    the reply naming 127.0.0.1:port."""
    try:
        a.send(host, port, data)
    except OSError as e:
        return False, "send: %s" % ptest.err_kind(e)
    got = a.recv(timeout or ptest.bound(5))
    if got is None:
        return False, "no datagram back within %.0f s" % (
            timeout or ptest.bound(5))
    frag, h, p, d = got
    if frag != 0 or h != "127.0.0.1" or p != port or d != data:
        return False, "back: frag %r from %s:%s, %d bytes (equal %s)" % (
            frag, h, p, len(d) if isinstance(d, bytes) else -1, d == data)
    return True, None


def dropped(a, host, echo, wait=None):
    """(ok, why): a datagram to host:echo.port never reaches the echo and
    nothing comes back within <wait> (the echo's count is read after)."""
    before = echo.count()
    data = b"denied " + os.urandom(6).hex().encode()
    try:
        a.send(host, echo.port, data)
    except OSError as e:
        return False, "send: %s" % ptest.err_kind(e)
    got = a.recv(wait or ptest.bound(0.7))
    seen = echo.count() - before
    if got is not None or seen:
        return False, "not dropped: the client got %r, the echo saw %d " \
            "datagram(s)" % (got and got[:3], seen)
    return True, None


def open_ctl(a):
    """True when the association's control connection is still open."""
    if a.ctl is None:
        return False
    data, how = H.outcome(a.ctl, 0.2)
    return how == "timeout" and not data


def sizes_both_ways(t, a, echo, lbl):
    """Every size to 127.0.0.1:A and to localhost:A and back; the payload
    bytes sent."""
    sent = 0
    for host in ("127.0.0.1", "localhost"):
        for n in SIZES:
            before = echo.count()
            data = os.urandom(n)
            ok, why = roundtrip(a, host, echo.port, data)
            seen = echo.seen[before:]
            t.check(ok and len(seen) == 1 and seen[0][1] == n and
                    seen[0][0][0] == "127.0.0.1",
                    lbl + "a datagram of %d bytes to %s:A comes back intact "
                    "(A saw it once)" % (n, host),
                    lambda: [why, "A saw %s" % (seen,)])
            sent += n
    return sent


def deny_checks(t, a, echo_a, echo_b, lbl):
    for host in ("127.0.0.1", "localhost"):
        ok, why = dropped(a, host, echo_b)
        t.check(ok, lbl + "a datagram to %s:B (acl deny at the first "
                "portico) is dropped: B saw none, the client got nothing"
                % host, why)
        ok, why = roundtrip(a, "127.0.0.1", echo_a.port, b"A after B")
        t.check(ok, lbl + "... and a datagram to A right after comes back",
                why)
    t.check(echo_b.count() == 0, lbl + "B's echo counted 0 datagrams",
            "B saw %d" % echo_b.count())
    t.check(open_ctl(a), lbl + "the control connection stays open after "
            "the drops")


def wait_closed(a, timeout):
    """How the client's control connection ended within <timeout>."""
    _, how, _ = S.ending(a.ctl, timeout)
    return how


class Env:
    pass


def through_portico(t, e):
    users = None
    auth = None
    why = None
    if not os.path.exists(A.AUTH_SO):
        why, need = "auth.so not built at %s" % A.AUTH_SO, "auth.so"
    elif shutil.which("argon2") is None:
        why, need = "no argon2 program in PATH", "argon2cli"
    if why:
        t.skip("the portico parent asks for username/password (the auth "
               "module)", why, need=need)
    else:
        users = A.write_users(t, [(USER, A.argon2id(PASSWORD))])
        auth = (USER, PASSWORD)
    pport = ptest.free_port()
    par = t.portico(parent_conf(t, "parent", pport, users),
                    conf_name="parent.conf")
    fport, fo_port = ptest.free_port(), ptest.free_port()
    sl_port, dead = ptest.free_port(), ptest.free_port()
    fst = start_first(t, first_conf(
        t, "first",
        [listener("s", fport, '"up"'),
         listener("fo", fo_port, '[ "dead", "up" ]'),
         listener("sl", sl_port, '"uplocal"')],
        [socks5_parent("up", pport, auth),
         socks5_parent("dead", dead, None, 'connect_timeout = 2; '),
         socks5_parent("uplocal", pport, auth, 'resolve = "local"; ')],
        e.b.port, [dict(name="no-c-addr", action="deny", protocol="udp",
                        dst="127.0.0.1/32", port=e.c.port)]),
        "first", [fport, fo_port, sl_port])
    lbl = "portico -> portico parent%s: " % (" (user/password)"
                                             if auth else "")
    a = S.Udp(fport)
    t.at_exit(a.close)
    t.check(a.ok() and a.reply.host == "127.0.0.1",
            lbl + "UDP ASSOCIATE: REP 0, BND 127.0.0.1", a.describe())
    if not a.ok():
        return
    sent = sizes_both_ways(t, a, e.a, lbl)
    deny_checks(t, a, e.a, e.b, lbl)
    sent += len(b"A after B") * 2
    # A rule on the destination address: an address is judged by it; a
    # name goes to the parent as the name (it resolves it), so only the
    # name is judged here, as DIAL judges a CONNECT through a parent.
    ok, why = dropped(a, "127.0.0.1", e.c)
    t.check(ok, lbl + "a datagram to 127.0.0.1:C (acl deny dst "
            "127.0.0.1/32) is dropped", why)
    ok, why = roundtrip(a, "localhost", e.c.port, b"C by name")
    t.check(ok, lbl + "a datagram to localhost:C goes to the parent as "
            "the name (judged by name only) and comes back", why)
    sent += len(b"C by name")
    a.close()

    recs = AL.wait_json(t.path("parent.json"), lambda rs: any(
        r.get("proto") == "udp" for r in rs), ptest.bound(10))
    pr = [r for r in recs if r.get("proto") == "udp"]
    t.check(len(pr) == 1 and pr[0].get("method") == "UDP" and
            (pr[0].get("user") == USER if auth else True) and
            pr[0].get("client") == "127.0.0.1" and
            pr[0].get("bytes_in", 0) >= sent and
            pr[0].get("bytes_out", 0) >= sent and
            pr[0].get("bytes_in", 0) - sent < 100 and
            pr[0].get("bytes_out", 0) - sent < 100,
            lbl + "the parent's access log has the association: proto udp, "
            "its user, the %d payload bytes each way (and its control "
            "connection's)" % sent, pr)
    recs = AL.wait_json(t.path("first.json"), lambda rs: any(
        r.get("proto") == "udp" for r in rs), ptest.bound(10))
    fr = [r for r in recs if r.get("proto") == "udp"]
    t.check(len(fr) == 1 and fr[0].get("upstream") == "127.0.0.1" and
            fr[0].get("upstream_port") == pport,
            lbl + "the first portico's record names the parent "
            "(upstream 127.0.0.1:%d)" % pport, fr)

    # failover: "dead" first (nothing listens), then "up"
    b = S.Udp(fo_port)
    t.at_exit(b.close)
    ok, why = roundtrip(b, "127.0.0.1", e.a.port, b"after failover") \
        if b.ok() else (False, b.describe())
    t.check(ok, lbl + "via [\"dead\", \"up\"]: the dead parent is passed "
            "over, a datagram comes back through \"up\"", why)
    b.close()

    # resolve = "local": names resolved here, judged with their address
    d = S.Udp(sl_port)
    t.at_exit(d.close)
    lbl2 = lbl + "resolve = \"local\": "
    t.check(d.ok(), lbl2 + "UDP ASSOCIATE: REP 0", d.describe())
    if d.ok():
        ok, why = dropped(d, "localhost", e.c)
        t.check(ok, lbl2 + "a datagram to localhost:C is dropped (the "
                "name judged with the address it resolved to)", why)
        for n in SIZES:
            data = os.urandom(n)
            ok, why = roundtrip(d, "localhost", e.a.port, data)
            t.check(ok, lbl2 + "a datagram of %d bytes to localhost:A "
                    "comes back" % n, why)
    d.close()

    # the parent stops: the client's control connection ends
    c = S.Udp(fport)
    t.at_exit(c.close)
    ok, why = roundtrip(c, "localhost", e.a.port, b"before the stop") \
        if c.ok() else (False, c.describe())
    t.check(ok, lbl + "another association carries a datagram", why)
    t.stop_portico(par)
    how = wait_closed(c, ptest.bound(5))
    t.check(ok and S.closes(how), lbl + "the parent stops: the client's "
            "control connection is closed", "ended: %s" % how)
    c.close()
    w0 = fst.workers()
    H.finish(t, fst, w0, lbl)


def through_dante(t, e):
    why = P.missing_dante()
    if why:
        t.skip("UDP ASSOCIATE through danted as the parent", why,
               need="dante")
        return
    dp = P.start_dante_parent(t, ptest.free_port())
    if not t.check(dp.up, "danted answers on its loopback port", dp.why):
        return
    fport = ptest.free_port()
    fst = start_first(t, first_conf(
        t, "fdante", [listener("s", fport, '"dante"')],
        [socks5_parent("dante", dp.port)], e.b.port), "fdante", [fport])
    lbl = "portico -> danted: "
    a = S.Udp(fport)
    t.at_exit(a.close)
    t.check(a.ok() and a.reply.host == "127.0.0.1",
            lbl + "UDP ASSOCIATE: REP 0, BND 127.0.0.1", a.describe())
    if not a.ok():
        dp.stop()
        return
    sizes_both_ways(t, a, e.a, lbl)
    deny_checks(t, a, e.a, e.b, lbl)
    a.close()
    # A session's closing line ("]"), written when our association with
    # danted ends (the client's did), names the destination.
    rx = r"udp/udpassociate \]: .*127\.0\.0\.1\.%d " % e.a.port
    t.check(dp.wait_log(rx), lbl + "the client's association ends: "
            "danted's log closes the UDP association with A",
            dp.log_lines()[-20:])
    recs = AL.wait_json(t.path("fdante.json"), lambda rs: any(
        r.get("proto") == "udp" for r in rs), ptest.bound(10))
    fr = [r for r in recs if r.get("proto") == "udp"]
    t.check(len(fr) == 1 and fr[0].get("upstream") == "127.0.0.1" and
            fr[0].get("upstream_port") == dp.port,
            lbl + "the first portico's record names danted (upstream "
            "127.0.0.1:%d)" % dp.port, fr)

    c = S.Udp(fport)
    t.at_exit(c.close)
    ok, why = roundtrip(c, "localhost", e.a.port, b"before the stop") \
        if c.ok() else (False, c.describe())
    t.check(ok, lbl + "another association carries a datagram", why)
    dp.stop()
    how = wait_closed(c, ptest.bound(5))
    t.check(ok and S.closes(how), lbl + "danted stops: the client's "
            "control connection is closed", "ended: %s" % how)
    c.close()
    w0 = fst.workers()
    H.finish(t, fst, w0, lbl)


def no_udp_carrier(t, e):
    web = ptest.free_port()
    only, then_direct = ptest.free_port(), ptest.free_port()
    fst = start_first(t, first_conf(
        t, "fweb", [listener("only", only, '"web"'),
                    listener("direct", then_direct, '[ "web", "direct" ]')],
        ['{ name = "web"; address = "127.0.0.1:%d"; protocol = "http"; }'
         % web], e.b.port), "fweb", [only, then_direct])
    lbl = "an HTTP parent: "
    a = S.Udp(only)
    t.at_exit(a.close)
    r = a.reply
    how = wait_closed(a, ptest.bound(3)) if a.ctl is not None else "?"
    t.check(isinstance(r, S.Reply) and r.rep == 0x07 and S.closes(how),
            lbl + "via \"web\" only: UDP ASSOCIATE is answered 0x07 "
            "(command not supported), then the connection ends",
            [a.describe(), how])
    a.close()
    t.check(not fst.log_lines(r"parent \"web\".*(connect|refused|timed)"),
            lbl + "the HTTP parent was never dialled",
            fst.log_lines(r"parent \"web\""))
    b = S.Udp(then_direct)
    t.at_exit(b.close)
    ok, why = roundtrip(b, "127.0.0.1", e.a.port, b"direct") if b.ok() \
        else (False, b.describe())
    t.check(ok, lbl + "via [\"web\", \"direct\"]: the association goes "
            "direct and a datagram comes back", why)
    b.close()
    w0 = fst.workers()
    H.finish(t, fst, w0, lbl)


def main(t):
    why = missing()
    if why:
        t.skip("UDP ASSOCIATE through a parent (acl and accesslog)", why,
               need=ptest.need_of(why))
        return
    e = Env()
    e.a, e.b, e.c = S.udp_echo(t), S.udp_echo(t), S.udp_echo(t)
    through_portico(t, e)
    no_udp_carrier(t, e)
    through_dante(t, e)


if __name__ == "__main__":
    ptest.Test("parent_udp").run(main)
