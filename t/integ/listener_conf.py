#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Per-listener module options (listener_conf) and the SOCKS5 methods each
listener offers, with the test module listopt (t/modules/listopt.c): it
applies only to listeners with a `listopt = { ... }` group, checks
credentials there (PT_MODF_CREDENTIALS) and lets clients from its
no_auth_from network through without them (pt_conn_need_credentials from
its ACCEPT hook). Its log lines name the listener's tag, read in the
worker through pt_conn_listener_ctx.

- alpha (listopt, tag alpha): a client offering only no-auth gets 0xFF;
  username/password gets 0x02, alice/secret passes, the tunnel echoes;
  the module's ACCEPT, AUTH and LOG hooks ran with alpha's options;
- plain (no group): no-auth is offered and chosen, and none of the
  module's hooks runs for its connections;
- gamma (no_auth_from 127.0.0.1/32): a no-auth client gets 0x00 and
  through; eps (no_auth_from 10.0.0.0/8): the same client gets 0xFF;
- UDP ASSOCIATE on plain and gamma: the DATAGRAM hook runs for gamma's
  datagram only;
- the master ran listener_conf once per listener with a group, with the
  listener's index and name (the address when unnamed); a reload hands
  the new options over;
- `portico -t` refuses a bad listopt value, a group named after a module
  that is not loaded, and one named after a module without listener
  options, each naming the file and the group's line.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import sockstest as S  # noqa: E402

CONF = """
workers = 1;
error_log = "@TMP@/error.log";
log_level = "info";
pid_file = "@TMP@/portico.pid";
shutdown_timeout = 5;
limits = { header_timeout = 5; };
modules = ( { name = "listopt"; path = "@MODDIR@/listopt.so"; }@MORE_MODS@ );
listeners = (
  { address = "127.0.0.1:@A@"; protocol = "socks5";
    listopt = { tag = "alpha"; level = 3; }; },
  { address = "127.0.0.1:@B@"; protocol = "socks5"; @B_EXTRA@ },
  { address = "127.0.0.1:@C@"; protocol = "socks5"; name = "gamma-in";
    listopt = { tag = "gamma"; no_auth_from = "127.0.0.1/32"; }; },
  { address = "127.0.0.1:@E@"; protocol = "socks5";
    listopt = { tag = "eps"; no_auth_from = "10.0.0.0/8"; }; }
);
"""


def conf_text(t, ports, b_extra="", more_mods=""):
    return ptest.fill(CONF, TMP=t.tmp, MODDIR=ptest.TESTMODDIR,
                      A=ports[0], B=ports[1], C=ports[2], E=ports[3],
                      B_EXTRA=b_extra, MORE_MODS=more_mods)


def method(port, methods):
    """The method the proxy picks for <methods>, and whether it then
    closed (for 0xFF)."""
    c = S.Client.to(port)
    try:
        m = c.greet(methods)
    except Exception as e:
        c.close()
        return "%s: %s" % (type(e).__name__, e), False
    closed = True
    if m == S.M_REFUSED:
        _, how, _ = S.ending(c, ptest.bound(5))
        closed = S.closes(how)
    c.close()
    return m, closed


def tunnel(port, echo, auth=None):
    r, c = S.connect5(port, "127.0.0.1", echo.port, auth=auth)
    ok = S.ok5(r)
    why = None if ok else r
    if ok:
        ok, why = S.echo_check(c, os.urandom(4096))
    c.close()
    return ok, why


def count(p, pattern):
    return len(p.log_lines(pattern))


def main(t):
    echo = t.echo_server()
    ports = [ptest.free_port() for _ in range(4)]
    text = conf_text(t, ports)
    path = t.path("good.conf")
    ptest.write_file(path, text)
    r = ptest.run_portico(["-t", "-c", path])
    t.check(r.returncode == 0, "-t accepts listener groups of listopt",
            r.stderr)

    p = t.portico(text, conf_name="listener.conf")
    lines = p.wait_log(r"listopt: listener \d+ ", 3)
    want = ["listopt: listener 0 (127.0.0.1:%d) tag=alpha level=3" %
            ports[0],
            "listopt: listener 2 (gamma-in) tag=gamma level=1",
            "listopt: listener 3 (127.0.0.1:%d) tag=eps level=1" % ports[3]]
    t.check(all(any(w in ln for ln in lines) for w in want) and
            len(lines) == 3,
            "the master ran listener_conf for each listener with a group, "
            "with its index and name (its address when it has none)",
            lambda: lines)

    # alpha: credentials only.
    m, closed = method(ports[0], [S.M_NONE])
    t.check(m == S.M_REFUSED and closed,
            "alpha: a client offering only no-auth gets 0xFF and a close",
            repr(m))
    m, _ = method(ports[0], [S.M_NONE, S.M_USERPASS])
    t.check(m == S.M_USERPASS, "alpha: offered both, 0x02 is chosen",
            repr(m))
    ok, why = tunnel(ports[0], echo, auth=("alice", "secret"))
    t.check(ok, "alpha: alice/secret passes and the tunnel echoes", why)
    r5, c = S.connect5(ports[0], "127.0.0.1", echo.port,
                       auth=("alice", "wrong"))
    c.close()
    t.check(isinstance(r5, str) and "status" in r5,
            "alpha: a wrong password is refused by the module", repr(r5))
    accepts = p.wait_log(r"listopt: ACCEPT tag=alpha level=3 listener=0$",
                         4)
    t.check(len(accepts) == 4,
            "alpha: its ACCEPT hook ran for each of its 4 connections "
            "with alpha's options", lambda: accepts)
    t.check(len(p.wait_log(r"listopt: AUTH tag=alpha user=alice -> ok",
                           1)) == 1 and
            len(p.wait_log(r"listopt: AUTH tag=alpha user=alice -> denied",
                           1)) == 1,
            "alpha: the AUTH hook judged both attempts",
            lambda: ptest.tail(p.log(), 20))
    t.check(len(p.wait_log(r"listopt: LOG tag=alpha", 1)) >= 1,
            "alpha: the LOG hook ran", lambda: ptest.tail(p.log(), 20))

    # plain: the module does not apply.
    p.wait_log(r"listopt: LOG tag=alpha", 4)
    before = count(p, r"listopt: (ACCEPT|AUTH|LOG) ")
    m, _ = method(ports[1], [S.M_NONE])
    t.check(m == S.M_NONE, "plain: a no-auth client gets 0x00", repr(m))
    ok, why = tunnel(ports[1], echo)
    t.check(ok, "plain: the tunnel echoes without credentials", why)
    ok2, why2 = tunnel(ports[1], echo, auth=("bob", "anything"))
    t.check(ok2, "plain: a client offering only 0x02 still gets through "
            "(no module judges its credentials)", why2)
    # The three connections are closed; their LOG lines, if any, are out.
    ptest.wait_for(lambda: False, 0.3)
    t.check(count(p, r"listopt: (ACCEPT|AUTH|LOG) ") == before,
            "plain: none of listopt's hooks ran for its connections",
            lambda: ptest.tail(p.log(), 20))

    # gamma: the ACCEPT hook lifts the credentials for 127.0.0.1.
    m, _ = method(ports[2], [S.M_NONE])
    t.check(m == S.M_NONE,
            "gamma: pt_conn_need_credentials(false) from ACCEPT offers "
            "no-auth to 127.0.0.1", repr(m))
    ok, why = tunnel(ports[2], echo)
    t.check(ok, "gamma: the no-auth tunnel echoes", why)
    t.check(len(p.wait_log(r"listopt: ACCEPT tag=gamma level=1 "
                           r"listener=2 no-credentials", 2)) == 2,
            "gamma: its ACCEPT hook saw gamma's options",
            lambda: ptest.tail(p.log(), 20))
    # UDP ASSOCIATE: the DATAGRAM phase skips the module on plain too.
    uecho = S.UdpEcho()
    t.at_exit(uecho.stop)
    got = {}
    for name, port in (("plain", ports[1]), ("gamma", ports[2])):
        u = S.Udp(port)
        back = None
        if u.ok():
            u.send("127.0.0.1", uecho.port, b"dg-" + name.encode())
            back = u.recv(ptest.bound(5))
        u.close()
        got[name] = back is not None and back[3] == b"dg-" + name.encode()
    t.check(got["plain"] and got["gamma"],
            "UDP ASSOCIATE on plain and gamma: a datagram comes back",
            lambda: ["%s" % got])
    dg = p.wait_log(r"listopt: DATAGRAM tag=", 1)
    t.check(len(dg) >= 1 and all("tag=gamma" in ln for ln in dg),
            "the DATAGRAM hook ran for gamma's datagram only",
            lambda: dg or ptest.tail(p.log(), 10))

    # eps: the network does not match.
    m, closed = method(ports[3], [S.M_NONE])
    t.check(m == S.M_REFUSED and closed,
            "eps: outside no_auth_from, only-no-auth gets 0xFF", repr(m))

    # A reload: the new options replace the old ones (which are freed:
    # the sanitizer build checks that), and plain gains the module.
    p.set_conf(conf_text(t, ports, b_extra='listopt = { tag = "beta"; };')
               .replace('tag = "alpha"; level = 3;',
                        'tag = "alpha2"; level = 4;'))
    p.hup()
    t.check(bool(p.wait_log(r"reloaded ")), "reload: the new listener "
            "options load", lambda: ptest.tail(p.log(), 10))
    m, closed = method(ports[1], [S.M_NONE])
    t.check(m == S.M_REFUSED and closed,
            "reload: plain, now with a listopt group, asks for credentials",
            repr(m))
    ok, why = tunnel(ports[0], echo, auth=("alice", "secret"))
    t.check(ok and len(p.wait_log(r"listopt: ACCEPT tag=alpha2 level=4 "
                                  r"listener=0$", 1)) == 1 and
            len(p.wait_log(r"listopt: ACCEPT tag=beta level=1 "
                           r"listener=1$", 1)) == 1,
            "reload: the new workers see the new options", lambda:
            [why] + ptest.tail(p.log(), 10))
    t.stop_portico(p)

    # Configuration errors, each at the group's line.
    cases = [
        ("a bad listopt value",
         conf_text(t, ports, b_extra='listopt = { tag = "b"; level = 99; };'),
         'level = 99', ["listopt", "level"]),
        # ABI 1.2: the module names the bad option (pt_modconf.where),
        # so the line is the option's, not the group's.
        ("a bad listopt value on its own line",
         conf_text(t, ports, b_extra='listopt = {\n      tag = "b";\n'
                   '      level = 42; };'),
         'level = 42', ["listopt", "level"]),
        ("a group named after a module that is not loaded",
         conf_text(t, ports, b_extra='nosuch = { a = 1; };'),
         'nosuch = {', ["nosuch"]),
        ("a group named after a module without listener options",
         conf_text(t, ports, b_extra='xorwire = { };',
                   more_mods=',\n  { name = "xorwire"; path = '
                   '"%s/xorwire.so"; }' % ptest.TESTMODDIR),
         'xorwire = { }', ["xorwire", "no listener options"]),
    ]
    for i, (what, bad, needle, words) in enumerate(cases):
        path = t.path("bad%d.conf" % i)
        ptest.write_file(path, bad)
        line = ptest.line_of(bad, needle)
        r = ptest.run_portico(["-t", "-c", path])
        where = "%s:%d:" % (path, line)
        t.check(r.returncode == 1 and where in r.stderr and
                all(w in r.stderr for w in words),
                "-t refuses %s, naming %s" % (what, "file:line"),
                lambda: ["want %s %s" % (where, words), r.stderr])


if __name__ == "__main__":
    ptest.Test("listener_conf").run(main)
