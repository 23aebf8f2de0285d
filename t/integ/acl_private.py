#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Private destinations through the acl module (the real acl.so): loopback
is private, so a proxy on this machine is exactly what allow_private
guards against. A test DNS server resolves priv.test to 127.0.0.1 and
mapped.test to ::ffff:127.0.0.1 only.

- allow_private left out (false) and default allow: a name resolving to
  127.0.0.1 is refused: HTTP GET (raw and curl -x) and CONNECT 403,
  SOCKS5 REP 0x02 (by name, IPv4 127.0.0.1, IPv6 ::ffff:127.0.0.1), SOCKS4
  and 4a CD 0x5B, the connection ending after a SOCKS refusal; literals
  127.0.0.1, 127.0.0.2, [::ffff:127.0.0.1], [::ffff:7f00:1], [::1], and
  0.0.0.0, [::ffff:0.0.0.0] and [::] (which Linux connects to loopback),
  "localhost", and a
  name whose only address is ::ffff:127.0.0.1, refused; the origins and
  the echo server see none of it; so are SOCKS5 names (ATYP 3)
  "127.0.0.1" and "localhost". fieldrec, loaded after acl, sees the label
  "private" at LOG; with log_level debug the core's error log has a
  "denied" line for each refusal, the access log (the accesslog module,
  json) a record labelled "private"; the master's totals count
  acl_private for each; a tcp listener forwarding to 127.0.0.1 (the
  operator's own destination) relays;
- allow_private = true: the same requests pass (200, REP 0, CD 0x5A);
- allow_private false with an allowing rule whose dst lies inside the
  private range (127.0.0.1/32, 127.0.0.0/8): they pass, with that rule's
  label (a POST that rule does not cover, after GETs it allowed kept an
  upstream connection, is still refused); an allowing rule with dst
  0.0.0.0/0, or 126.0.0.0/7 (wider than 127/8), or one by host name
  alone, does not excuse a private destination (403 / 0x02 / 0x5B, label
  "private").

The NAT64 (64:ff9b::/96) and 6to4 forms are left to the unit tests: this
machine may route them off the host, and a bug here must never send a
packet there.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import acltest as ACL  # noqa: E402
import accesslogtest as AL  # noqa: E402
import authtest as A  # noqa: E402


class Env:
    pass


def start(t, e, name, rules=None, default="allow", allow_private=None,
          log_level="info", access_log=None):
    hport, sport = ptest.free_port(), ptest.free_port()
    e.tport = ptest.free_port()
    rec = t.path(name + ".rec")
    tcp = '{ name = "t"; address = "127.0.0.1:%d"; protocol = "tcp"; ' \
        'to = "127.0.0.1:%d"; }' % (e.tport, e.echo.port)
    p = ACL.start(t, [ACL.http_listener("h", hport),
                      ACL.socks_listener("s", sport), tcp],
                  [ACL.acl_entry(rules, default=default,
                                 allow_private=allow_private),
                   ACL.fieldrec_entry(rec)] + (
                       [AL.module(['file = "%s"; format = "json";' %
                                   access_log])] if access_log else []),
                  log=name + ".log", dns=e.dns, log_level=log_level)
    names = [r["name"] for r in rules or [] if "name" in r]
    j = ACL.Judge(t, e.o, hport, rec, secret=names + ["private"])
    return p, j, hport, sport


def socks_all(t, e, sport, j, lbl, refused, label=None):
    """SOCKS5 by name, IPv4, IPv6 ::ffff:127.0.0.1; SOCKS4 and 4a: all
    refused (0x02 / 0x5B, the connection ends, the echo server sees
    nothing, the label at LOG <label>) or all passing. Returns how many
    were refused."""
    n = 0
    for host in ("priv.test", "127.0.0.1", "::ffff:127.0.0.1"):
        if host.startswith("::") and not refused:
            continue    # an IPv4-mapped destination only needs refusing
        before, lbefore = e.echo.accepted, len(j.logs())
        rep, ok, closed = ACL.socks5(sport, host, e.echo.port)
        got = [kv.get("label") for kv in
               j.new_log(lbefore, S.PROTO_SOCKS5)] if label else []
        if refused:
            n += 1
            t.check(rep == 0x02 and closed and e.echo.accepted == before and
                    (not label or got == [label]),
                    "%sSOCKS5 CONNECT %s: REP 0x02, the connection ends, "
                    "the echo server saw nothing%s" % (
                        lbl, host, ", label " + label if label else ""),
                    (S.rep_name(rep), closed, e.echo.accepted - before, got))
        else:
            t.check(rep == 0 and ok and (not label or got == [label]),
                    "%sSOCKS5 CONNECT %s: REP 0, the tunnel echoes%s" % (
                        lbl, host, ", label " + label if label else ""),
                    (S.rep_name(rep), ok, got))
    for ip, name in (("127.0.0.1", None), (None, "priv.test")):
        before = e.echo.accepted
        cd, ok, closed = ACL.socks4(sport, ip, e.echo.port, name=name)
        what = "SOCKS4a %s" % name if name else "SOCKS4 %s" % ip
        if refused:
            n += 1
            t.check(cd == 0x5B and closed and e.echo.accepted == before,
                    "%s%s: CD 0x5B, the connection ends, the echo server "
                    "saw nothing" % (lbl, what),
                    (cd, closed, e.echo.accepted - before))
        else:
            t.check(cd == 0x5A and ok, "%s%s: CD 0x5A, the tunnel echoes"
                    % (lbl, what), (cd, ok))
    return n


def main(t):
    why = ACL.missing()
    if why:
        t.skip("acl private destinations", why, need="acl.so")
        return
    if not ACL.have_fieldrec():
        t.check(False, "fieldrec.so is built (make check builds it)",
                ACL.FIELDREC_SO)
        return
    e = Env()
    e.o = H.origin(t)
    e.o2 = H.origin(t, "127.0.0.2") if ACL.can_bind("127.0.0.2") else None
    e.o6 = H.origin(t, "::1") if ptest.have_ipv6() else None
    e.echo = t.echo_server()
    e.dns = H.dns_server(t, {"priv.test": {"A": ["127.0.0.1"]},
                             "mapped.test": {"AAAA": ["::ffff:127.0.0.1"]}})
    refused_default(t, e)
    allowed_all(t, e)
    dst_rules(t, e)


def refused_default(t, e):
    al = t.path("access.json") if not AL.missing() else None
    if al is None:
        t.check(False, "accesslog.so is built (always: it needs no "
                "library)", AL.missing())
    p, j, hport, sport = start(t, e, "private", log_level="debug",
                               access_log=al)
    w0 = p.workers()
    lbl = "allow_private left out: "
    n = 0
    for host, desc in (("priv.test", "a name resolving to 127.0.0.1"),
                       ("127.0.0.1", "the literal 127.0.0.1"),
                       ("[::ffff:127.0.0.1]", "the IPv4-mapped literal"),
                       ("[::ffff:7f00:1]", "the IPv4-mapped literal in "
                        "hex"),
                       ("mapped.test", "a name whose only address is "
                        "::ffff:127.0.0.1"),
                       ("0.0.0.0", "0.0.0.0 (Linux connects it to "
                        "127.0.0.1)"),
                       ("[::ffff:0.0.0.0]", "[::ffff:0.0.0.0]"),
                       ("localhost", "localhost")):
        j.http(host, 403, lbl + desc, label="private")
        n += 1
    if e.o6:
        for host, desc in (("[::1]", "the literal [::1]"),
                           ("[::]", "[::] (Linux connects it to ::1)")):
            j.http(host, 403, lbl + desc, origin=e.o6, label="private")
            n += 1
    else:
        t.skip(lbl + "[::1] and [::]", "no IPv6 loopback", need="ipv6")
    if e.o2:
        j.http("127.0.0.2", 403, lbl + "the literal 127.0.0.2",
               origin=e.o2, label="private")
        n += 1
    else:
        t.skip(lbl + "the literal 127.0.0.2", "cannot bind 127.0.0.2",
               need="127.0.0.2")
    if H.have_curl():
        tag = j.tag()
        st, head = A.curl_head(hport, j.url("priv.test", tag))
        n += 1
        t.check(st == 403 and not e.o.reqs_for("/" + tag),
                lbl + "curl -x http://priv.test/: 403", head)
    else:
        t.skip(lbl + "curl -x", "no curl", need="curl")
    before = e.echo.accepted
    st, ok = ACL.connect_http(hport, "priv.test", e.echo.port)
    n += 1
    t.check(st == 403 and e.echo.accepted == before,
            lbl + "CONNECT priv.test: 403, the echo server saw nothing",
            (st, e.echo.accepted - before))
    n += socks_all(t, e, sport, j, lbl, True, label="private")
    for name in ("127.0.0.1", "localhost"):
        before = e.echo.accepted
        rep, closed = ACL.socks5_name(sport, name, e.echo.port)
        n += 1
        t.check(rep == 0x02 and closed and e.echo.accepted == before,
                lbl + "SOCKS5 ATYP 3 (a name) \"%s\": REP 0x02" % name,
                (S.rep_name(rep), closed, e.echo.accepted - before))
    # a tcp listener's destination is the operator's, not the client's
    ok, why = ptest.echo_once(e.tport)
    t.check(ok, lbl + "a tcp listener forwarding to 127.0.0.1 relays (its "
            "destination is the operator's to, not refused for being "
            "private)", why)
    # the core logs each refusal at debug
    lines = p.wait_log(r"(ACCESS|DIAL): denied", count=n,
                       timeout=ptest.bound(3))
    t.check(len(lines) == n, lbl + "the error log (log_level debug) has "
            "one \"denied\" line per refusal (%d)" % n, lines)
    H.finish(t, p, w0, lbl)
    tot = ACL.totals(p)
    t.check(tot.get("acl_private") == n, lbl + "the master's totals: "
            "acl_private=%d" % n, tot)
    if al is not None:
        recs, bad = AL.json_records(al)
        recs = AL.transactions(recs)
        priv = [r for r in recs if r.get("label") == "private"]
        http = [r for r in priv if r.get("proto") == "http"]
        t.check(len(priv) == n and not bad and http and
                all(r.get("status") == 403 for r in http),
                lbl + "the access log (accesslog, json) has %d records "
                "labelled \"private\", the HTTP ones with status 403" % n,
                ["%d labelled private; bad lines %r" % (len(priv), bad)] +
                [str(r) for r in recs[:30]])


def allowed_all(t, e):
    p, j, hport, sport = start(t, e, "allowed", allow_private=True)
    w0 = p.workers()
    lbl = "allow_private = true: "
    j.http("priv.test", 200, lbl + "a name resolving to 127.0.0.1",
           label="default")
    j.http("127.0.0.1", 200, lbl + "the literal 127.0.0.1",
           label="default")
    if e.o6:
        j.http("[::1]", 200, lbl + "the literal [::1]", origin=e.o6,
               label="default")
    if e.o2:
        j.http("127.0.0.2", 200, lbl + "the literal 127.0.0.2",
               origin=e.o2, label="default")
    st, ok = ACL.connect_http(hport, "priv.test", e.echo.port)
    t.check(st == 200 and ok, lbl + "CONNECT priv.test: 200, the tunnel "
            "echoes", (st, ok))
    socks_all(t, e, sport, j, lbl, False, label="default")
    H.finish(t, p, w0, lbl)
    tot = ACL.totals(p)
    t.check(tot.get("acl_private") == 0, lbl + "acl_private=0", tot)


def dst_rules(t, e):
    rules = [dict(name="one", action="allow", dst=["127.0.0.1/32"]),
             dict(name="lab", action="allow", dst=["127.0.0.0/8"])]
    p, j, hport, sport = start(t, e, "dst", rules, default="deny")
    w0 = p.workers()
    lbl = "allow_private false, dst 127.0.0.1/32 then 127.0.0.0/8: "
    j.http("priv.test", 200, lbl + "priv.test (127.0.0.1)", label="one")
    j.http("127.0.0.1", 200, lbl + "the literal 127.0.0.1", label="one")
    if e.o2:
        j.http("127.0.0.2", 200, lbl + "the literal 127.0.0.2 (the /8 "
               "rule)", origin=e.o2, label="lab")
    st, ok = ACL.connect_http(hport, "priv.test", e.echo.port)
    t.check(st == 200 and ok, lbl + "CONNECT priv.test: 200, the tunnel "
            "echoes", (st, ok))
    socks_all(t, e, sport, j, lbl, False, label="one")
    H.finish(t, p, w0, "dst rules: ")

    # an excused GET keeps an upstream connection; a POST the rule does
    # not cover must still meet the private check
    rules = [dict(name="lab-get", action="allow", dst=["127.0.0.0/8"],
                  method="GET")]
    p, j, hport, sport = start(t, e, "dst-get", rules, default="allow")
    w0 = p.workers()
    tags = [j.tag() for _ in range(4)]
    url = "http://priv.test:%d/%%s" % e.o.port
    got = ACL.keepalive(hport, [("GET", url % tags[0]),
                                ("POST", url % tags[1]),
                                ("GET", url % tags[2]),
                                ("POST", url % tags[3])])
    seen = [bool(e.o.reqs_for("/" + x)) for x in tags]
    t.check(got == [200, 403, 200, 403] and seen == [True, False, True,
                                                     False],
            "allow dst 127.0.0.0/8 for GET only, default allow: GET, POST, "
            "GET, POST to priv.test one after another: 200, 403 (private), "
            "200, 403, the origin saw only the GETs",
            "statuses %r, seen %r" % (got, seen))
    H.finish(t, p, w0, "dst for GET only: ")

    rules = [dict(name="byname", action="allow", host=["priv.test"]),
             dict(name="wider", action="allow", dst=["126.0.0.0/7"],
                  port=e.o.port),
             dict(name="all", action="allow", dst=["0.0.0.0/0"])]
    p, j, hport, sport = start(t, e, "dst-all", rules, default="deny",
                               allow_private=False)
    w0 = p.workers()
    lbl = "allow_private = false, rules by host, dst 126/7, dst 0/0: "
    n = 0
    j.http("priv.test", 403, lbl + "an allow by host name does not excuse "
           "a private destination", label="private")
    j.http("127.0.0.1", 403, lbl + "dst 126.0.0.0/7 (wider than 127/8, "
           "not inside it) does not excuse 127.0.0.1", label="private")
    n += 2
    if e.o2:
        j.http("127.0.0.2", 403, lbl + "nor 127.0.0.2", origin=e.o2,
               label="private")
        n += 1
    before = e.echo.accepted
    st, ok = ACL.connect_http(hport, "127.0.0.1", e.echo.port)
    n += 1
    t.check(st == 403 and e.echo.accepted == before,
            lbl + "dst 0.0.0.0/0 does not excuse 127.0.0.1: CONNECT 403",
            (st, e.echo.accepted - before))
    n += socks_all(t, e, sport, j, lbl, True, label="private")
    H.finish(t, p, w0, "dst 0.0.0.0/0: ")
    tot = ACL.totals(p)
    t.check(tot.get("acl_private") == n, lbl + "the master's totals: "
            "acl_private=%d" % n, tot)


if __name__ == "__main__":
    ptest.Test("acl_private").run(main)
