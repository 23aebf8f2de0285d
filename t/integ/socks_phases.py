#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The module phases on a SOCKS listener, seen through hookrec (which hooks
every phase, AUTH included, so SOCKS5 clients use username/password):

- one SOCKS5 CONNECT runs ACCEPT, AUTH, ACCESS, DIAL, ESTABLISHED and LOG
  once each, in that order; from AUTH on proto is 3 (PT_PROTO_SOCKS5);
  ACCESS, DIAL and LOG see the host and port asked for (an IPv4 address,
  "localhost", ::1), DIAL and LOG the resolved target; LOG has status 0
  and the tunnel's byte counts both ways (with or without the handshake
  bytes, but exact);
- a closed port gives LOG status 5; deny_phase ACCESS: no DIAL or
  ESTABLISHED, LOG status 2; deny_phase DIAL: no ESTABLISHED, LOG status
  2; deny_phase ACCEPT: the connection is closed, nothing dialled;
- a client that leaves while its name resolves or its dial hangs: one
  LOG, no ESTABLISHED, and the worker is well;
- SOCKS4 is refused (CD 0x5B) when a module hooks AUTH, and its LOG says
  proto 4;
- an ACCEPT that answers AGAIN (again_ms) holds the handshake until the
  module resumes it; then the CONNECT works;
- an ESTABLISHED that answers AGAIN (again_phase) while the origin sends
  a banner and closes: after the wait the reply, then the banner and EOF
  reach the client, which sent nothing (the upstream socket's edges came
  while the connection was parked; each comes once, and the relay must
  not miss them).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

USER, PASS = "alice", "s3cret"
ORDER = ["ACCEPT", "AUTH", "ACCESS", "DIAL", "ESTABLISHED", "LOG"]


def start(t, name, deny=None, extra="", **kw):
    mods, rec = S.hookrec(t, name, deny=deny, extra=extra)
    p, port = S.start(t, conf_name=name + ".conf", modules=mods, **kw)
    return p, port, rec


def new_conns(rec, seen):
    """Connections in <rec> not in <seen> (which is updated)."""
    out = {k: v for k, v in S.by_conn(rec).items() if k not in seen}
    seen.update(out)
    return out


def one_tunnel(t, p, port, rec, seen, host, echo_port, want_target,
               payload):
    r, c = S.connect5(port, host, echo_port, auth=(USER, PASS))
    ok, why = S.echo_check(c, payload) if S.ok5(r) else (False, repr(r))
    c.close()
    t.check(ok, "CONNECT to %s through hookrec: the tunnel echoes" % host,
            lambda: [why] + H.log_tail(p)())
    ptest.wait_for(lambda: any(ph == "LOG" for k, v in
                               S.by_conn(rec).items() if k not in seen
                               for ph, _ in v), ptest.bound(5))
    conns = new_conns(rec, seen)
    evs = list(conns.values())[0] if len(conns) == 1 else []
    names = [ph for ph, _ in evs]
    t.check(len(conns) == 1 and names == ORDER,
            "%s: ACCEPT AUTH ACCESS DIAL ESTABLISHED LOG, once each, in "
            "order, on one connection" % host, "records %r" % (
                {k: [ph for ph, _ in v] for k, v in conns.items()},))
    d = {ph: f for ph, f in evs}
    after_auth = [d.get(ph, {}).get("proto") for ph in ORDER[1:]]
    t.check(after_auth == [S.PROTO_SOCKS5] * 5,
            "%s: proto is %s (SOCKS5) from AUTH to LOG" % (
                host, S.PROTO_SOCKS5), "proto per phase %r" % after_auth)
    hp = [(d.get(ph, {}).get("host"), d.get(ph, {}).get("port"))
          for ph in ("ACCESS", "DIAL", "LOG")]
    t.check(hp == [(host, str(echo_port))] * 3,
            "%s: ACCESS, DIAL and LOG see host=%s port=%d" % (
                host, host, echo_port), "host/port %r" % hp)
    tg = [d.get(ph, {}).get("target") for ph in ("DIAL", "LOG")]
    t.check(tg == [want_target] * 2, "%s: DIAL and LOG see target=%s"
            % (host, want_target), "targets %r" % tg)
    log = d.get("LOG", {})
    u, pw = USER.encode(), PASS.encode()
    hs_in = 3 + 3 + len(u) + len(pw) + len(S.addr_bytes(host, echo_port)) \
        + 3
    n = len(payload)
    ins = {n, n + hs_in}
    outs = set(range(n, n + 2 + 2 + 22 + 1))
    t.check(log.get("status") == "0" and
            int(log.get("in", -1)) in ins and
            int(log.get("out", -1)) in outs,
            "%s: LOG status 0, in=%d and out=%d (the tunnel's bytes, "
            "or with the handshake's)" % (host, n, n),
            "LOG %r (handshake in %d bytes)" % (log, hs_in))


def main(t):
    echo = t.echo_server()
    echo6 = t.echo_server("::1") if ptest.have_ipv6() else None

    dns = H.dns_server(t, {"silent.test": "drop"})
    p, port, rec = start(t, "plain",
                         resolver={"servers": dns.address, "timeout": 1},
                         limits={"connect_timeout": 2})
    w0 = p.workers()
    seen = {}
    new_conns(rec, seen)
    one_tunnel(t, p, port, rec, seen, "127.0.0.1", echo.port,
               "127.0.0.1:%d" % echo.port, os.urandom(1000))
    one_tunnel(t, p, port, rec, seen, "localhost", echo.port,
               "127.0.0.1:%d" % echo.port, os.urandom(777))
    # an IPv4-mapped IPv6 address reaches DIAL (and the connect) as the
    # IPv4 address it names, so a rule on 127/8 or 10/8 holds for it
    one_tunnel(t, p, port, rec, seen, "::ffff:127.0.0.1", echo.port,
               "127.0.0.1:%d" % echo.port, os.urandom(555))
    if echo6:
        one_tunnel(t, p, port, rec, seen, "::1", echo6.port,
                   "[::1]:%d" % echo6.port, os.urandom(4321))
    else:
        t.skip("phases for a CONNECT to ::1", "no IPv6 loopback")

    # a closed port
    dead = ptest.free_port()
    r, c = S.connect5(port, "127.0.0.1", dead, auth=(USER, PASS))
    c.close()
    ptest.wait_for(lambda: any(ph == "LOG" for k, v in
                               S.by_conn(rec).items() if k not in seen
                               for ph, _ in v), ptest.bound(5))
    conns = new_conns(rec, seen)
    logs = [f for v in conns.values() for ph, f in v if ph == "LOG"]
    t.check(isinstance(r, S.Reply) and r.rep == 5 and len(logs) == 1 and
            logs[0].get("status") == "5" and
            "ESTABLISHED" not in [ph for v in conns.values() for ph, _ in v],
            "a closed port: reply 0x05, no ESTABLISHED, one LOG with "
            "status 5", "reply %r, records %r" % (r, conns))

    # the client leaves while the proxy waits: for a name that never
    # resolves, for a dial that never completes
    hole, full = H.blackhole(t)
    waits = [("a name lookup", "silent.test", echo.port)]
    if full:
        waits.append(("a dial", "127.0.0.1", hole))
    for label, host, hport in waits:
        c = S.Client.to(port)
        try:
            c.send(b"\x05\x01\x02")
            c.greet(send=False)
            c.userpass(USER, PASS)
            c.send(b"\x05\x01\x00" + S.addr_bytes(host, hport))
        except Exception as e:
            t.diag("%s: %s" % (label, e))
        ptest.wait_for(lambda: any(
            ph in ("DIAL", "LOG") if host[0].isdigit() else ph == "ACCESS"
            for k, v in S.by_conn(rec).items() if k not in seen
            for ph, _ in v), ptest.bound(3))
        c.close()
        # LOG comes at once, or after the resolver or connect timeout
        ptest.wait_for(lambda: any(ph == "LOG" for k, v in
                                   S.by_conn(rec).items() if k not in seen
                                   for ph, _ in v), 2 + ptest.bound(3))
        time.sleep(0.3)
        conns = new_conns(rec, seen)
        logs = [f for v in conns.values() for ph, f in v if ph == "LOG"]
        t.check(len(conns) == 1 and len(logs) == 1 and
                "ESTABLISHED" not in [ph for v in conns.values()
                                      for ph, _ in v],
                "the client leaves during %s: one LOG, no ESTABLISHED" %
                label, "records %r" % (conns,))
    r, c = S.connect5(port, "127.0.0.1", echo.port, auth=(USER, PASS))
    ok, why = S.echo_check(c, b"still") if S.ok5(r) else (False, r)
    c.close()
    ptest.wait_for(lambda: any(ph == "LOG" for k, v in
                               S.by_conn(rec).items() if k not in seen
                               for ph, _ in v), ptest.bound(3))
    fields = {ph: f for v in new_conns(rec, seen).values() for ph, f in v}
    t.check(fields.get("AUTH", {}).get("user") == USER and
            fields.get("AUTH", {}).get("pass") == PASS and
            fields.get("ACCESS", {}).get("user") == USER and
            fields.get("ACCESS", {}).get("pass") == "-",
            "AUTH sees the RFC 1929 user and password; later phases the "
            "user only", fields)
    t.check(ok and p.workers() == w0, "the proxy still serves, no worker "
            "died", lambda: [why] + H.log_tail(p)())

    # SOCKS4 with an AUTH hook: refused, logged with proto 4
    r, c = S.connect4(port, "127.0.0.1", echo.port, userid=b"bob")
    c.close()
    t.check(isinstance(r, S.Reply4) and r.cd == 0x5B,
            "SOCKS4 when a module hooks AUTH: CD 0x5B (no password to "
            "show it)", repr(r))
    ptest.wait_for(lambda: any(ph == "LOG" for k, v in
                               S.by_conn(rec).items() if k not in seen
                               for ph, _ in v), ptest.bound(5))
    conns = new_conns(rec, seen)
    logs = [f for v in conns.values() for ph, f in v if ph == "LOG"]
    t.check(len(logs) == 1 and logs[0].get("proto") == S.PROTO_SOCKS4,
            "the refused SOCKS4 request has one LOG with proto %s"
            % S.PROTO_SOCKS4, "records %r" % (conns,))
    H.finish(t, p, w0)

    # denials
    for phase, absent in (("ACCESS", ("DIAL", "ESTABLISHED")),
                          ("DIAL", ("ESTABLISHED",))):
        p, port, rec = start(t, "deny-" + phase.lower(), deny=phase)
        before = echo.accepted
        r, c = S.connect5(port, "127.0.0.1", echo.port, auth=(USER, PASS))
        c.close()
        recs = S.wait_logs(rec, 1)
        evs = [ph for v in recs.values() for ph, _ in v]
        logs = [f for v in recs.values() for ph, f in v if ph == "LOG"]
        t.check(isinstance(r, S.Reply) and r.rep == 2 and
                not any(a in evs for a in absent) and len(logs) == 1 and
                logs[0].get("status") == "2",
                "deny_phase %s: reply 0x02, no %s, one LOG with status 2"
                % (phase, " or ".join(absent)),
                "reply %r, phases %r, LOG %r" % (r, evs, logs))
        time.sleep(0.1)
        t.check(echo.accepted == before, "deny_phase %s: nothing reached "
                "the target" % phase, "accepted %d" % (
                    echo.accepted - before))
        t.stop_portico(p)

    p, port, rec = start(t, "deny-accept", deny="ACCEPT")
    before = echo.accepted
    c = S.Client.to(port)
    try:
        c.send(b"\x05\x01\x02")
    except OSError:
        pass
    data, how, dt = S.ending(c, ptest.bound(5))
    c.close()
    t.check(S.closes(how) and data in (b"", b"\x05\xff") and
            echo.accepted == before,
            "deny_phase ACCEPT: the connection is closed (nothing or 05 "
            "FF said), nothing dialled", "read %r, then %s" % (data, how))
    t.stop_portico(p)

    # ACCEPT answers AGAIN, the module resumes 300 ms later
    p, port, rec = start(t, "again", extra="again_ms = 300; ")
    t0 = time.monotonic()
    r, c = S.connect5(port, "127.0.0.1", echo.port, auth=(USER, PASS))
    ok, why = S.echo_check(c, b"after the wait") if S.ok5(r) else \
        (False, repr(r))
    dt = time.monotonic() - t0
    c.close()
    recs = S.wait_logs(rec, 1)
    evs = [ph for v in recs.values() for ph, _ in v]
    t.check(ok and dt >= 0.25 and evs[:2] == ["ACCEPT", "ACCEPT-RESUMED"]
            and evs[2:] == ORDER[1:],
            "an ACCEPT that answers AGAIN holds the handshake until the "
            "module resumes it, then the CONNECT works", "%s after %.2f s; "
            "phases %r" % (why, dt, evs))
    t.stop_portico(p)

    # ESTABLISHED answers AGAIN while the origin speaks and closes
    banner = t.source_server(7)
    p, port, rec = start(t, "again_est", extra='again_ms = 300; '
                         'again_phase = "ESTABLISHED"; ')
    bad = []
    for i in range(3):
        t0 = time.monotonic()
        r, c = S.connect5(port, "127.0.0.1", banner.port, auth=(USER, PASS))
        data, how, _ = S.ending(c, ptest.bound(5)) if S.ok5(r) else \
            (b"", "", 0)
        dt = time.monotonic() - t0
        c.close()
        if not S.ok5(r) or len(data) != 7 or how != "eof" or dt < 0.25:
            bad.append("reply %r, %d bytes, %s after %.2f s" % (
                r, len(data), how, dt))
    recs = S.wait_logs(rec, 3)
    evs = [ph for v in recs.values() for ph, _ in v]
    t.check(not bad and evs.count("ESTABLISHED-RESUMED") == 3,
            "an ESTABLISHED that answers AGAIN while the origin sends 7 "
            "bytes and closes: after the wait, the reply, the 7 bytes and "
            "EOF (3 times)", lambda: bad + [repr(evs)] + H.log_tail(p)())
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("socks_phases").run(main)
