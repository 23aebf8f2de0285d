#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Egress: outgoing connections leave from the address the configuration
chose (an acl rule's `egress`, else the listener's, else the kernel's),
seen by origins that answer every request with the connection's source
address and number. The whole scenario runs in a network namespace of
its own when it can (loopback only; an IPv6 prefix routed to lo there);
without one, what needs it is skipped with need="netns".

1. acl rules: port A leaves from 127.0.0.2, port B from 127.0.0.3, over
   HTTP GET, CONNECT and SOCKS5 CONNECT; a rule on the destination
   address (decided at DIAL) from 127.0.0.4; a destination of the other
   family than the rule's egress fails (502, SOCKS5 0x01) with a line in
   the error log, never going out from the kernel's address; /metrics
   and /status count connections per egress as configured.
2. listeners: one bound to 127.0.0.4 with egress "same" leaves from
   127.0.0.4; one with egress "127.0.0.6", and a tcp listener with
   "127.0.0.7", from theirs.
3. keep-alive: two GETs on one client connection with the same egress
   share one origin connection; a PUT (another rule, another egress) on
   the same client connection gets its own, and the next GET finds the
   first again; requests through two listeners with different egresses
   to one origin never share a connection (one worker, one pool); a
   connection kept from the kernel's address is not reused by a request
   whose rule (decided at DIAL) wants another.
4. (netns) egress "2001:db8:1::/64": 1,000 connections to an origin on
   ::1 come from at least 990 addresses, all inside the prefix; with
   egress_stable = "user" and the auth module each user keeps one address
   across connections and across a reload, and users differ.
5. a SOCKS5 UDP association's datagrams reach a UDP echo server from the
   rule's egress, and the replies come back.
6. portico -t names the file and line of bad egress values.
"""
import base64
import os
import re
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import acltest as ACL  # noqa: E402
import authtest as A  # noqa: E402
import accesslogtest as AL  # noqa: E402

PREFIX = "2001:db8:1::"
PLEN = 64


def origin(t, host="127.0.0.1"):
    """An httptest origin: its echo answers with the connection's source
    address (peer) and number (conn)."""
    o = H.Origin(host)
    t.servers.append(o)
    return o


def sources(o):
    """The source address of each connection <o> served a request on."""
    with o.lock:
        return list({r["conn"]: r["peer"] for r in o.requests}.values())


def answer(r):
    """(source, connection number) of an echo, or the error."""
    if not isinstance(r, H.Resp):
        return ("error", str(r))
    if r.status != 200:
        return ("status", r.status)
    try:
        js = r.json()
        return (js["peer"], js["conn"])
    except (ValueError, KeyError) as e:
        return ("error", "not an echo: %r" % e)


def ask(conn, method, url, headers=()):
    """One request on H.Conn <conn>; (source, conn number) or an error."""
    try:
        conn.send(H.request_bytes(method, url, headers,
                                  b"egress" if method == "PUT" else None))
        return answer(H.read_response(conn, method))
    except Exception as e:
        return ("error", "%s: %s" % (type(e).__name__, e))


def get_once(port, url, host="127.0.0.1", headers=()):
    try:
        c = H.Conn.to(port, host, ptest.bound(10))
    except OSError as e:
        return ("error", "connect: %s" % e)
    try:
        return ask(c, "GET", url, headers)
    finally:
        c.close()


def via_connect(port, ohost, oport):
    """CONNECT to the origin, then a GET through the tunnel."""
    try:
        c = H.Conn.to(port, timeout=ptest.bound(10))
    except OSError as e:
        return ("error", "connect: %s" % e)
    try:
        hp = ptest.hostport(ohost, oport)
        c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (hp, hp))
        r = H.read_response(c, "CONNECT")
        if r.status != 200:
            return ("status", r.status)
        c.send("GET /t HTTP/1.1\r\nHost: %s\r\n\r\n" % hp)
        return answer(H.read_response(c))
    except Exception as e:
        return ("error", "%s: %s" % (type(e).__name__, e))
    finally:
        c.close()


def via_socks(port, ohost, oport):
    r, c = S.connect5(port, ohost, oport)
    try:
        if not S.ok5(r):
            return ("socks", r.rep if isinstance(r, S.Reply) else r)
        c.send("GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
        return answer(H.read_response(c))
    except Exception as e:
        return ("error", "%s: %s" % (type(e).__name__, e))
    finally:
        c.close()


def route_local(prefix, plen):
    """ip -6 route add local <prefix>/<plen> dev lo, by rtnetlink (no
    iproute2 needed): every address of the prefix is this host's, so a
    socket bound to one (IP_FREEBIND) is answered. None, or why not."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # ROUTE
    try:
        s.bind((0, 0))
        lo = socket.if_nametoindex("lo")
        dst = socket.inet_pton(socket.AF_INET6, prefix)
        attrs = struct.pack("HH", 4 + 16, 1) + dst            # RTA_DST
        attrs += struct.pack("HHI", 8, 4, lo)                 # RTA_OIF
        # rtmsg: family, dst_len, src_len, tos, table (local), protocol
        # (boot), scope (host), type (RTN_LOCAL), flags
        rtm = struct.pack("BBBBBBBBI", socket.AF_INET6, plen, 0, 0, 255, 3,
                          254, 2, 0)
        body = rtm + attrs
        # NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE
        hdr = struct.pack("IHHII", 16 + len(body), 24, 0x1 | 0x4 | 0x200 |
                          0x400, 1, 0)
        s.send(hdr + body)
        s.settimeout(5)
        ack = s.recv(4096)
        err = struct.unpack("i", ack[16:20])[0] if len(ack) >= 20 else -1
        if err != 0:
            return "RTM_NEWROUTE: %s" % os.strerror(-err)
        return None
    except OSError as e:
        return "rtnetlink: %s" % e
    finally:
        s.close()


def in_prefix(addr):
    try:
        a = socket.inet_pton(socket.AF_INET6, addr)
    except OSError:
        return False
    p = socket.inet_pton(socket.AF_INET6, PREFIX)
    return a[:PLEN // 8] == p[:PLEN // 8] and a[PLEN // 8:] != bytes(
        16 - PLEN // 8)


def start(t, name, listeners, modules=()):
    """Portico with <listeners> and <modules> (entry texts), one worker
    (one keep-alive pool), its error log <tmp>/<name>.log."""
    return ACL.start(t, listeners, list(modules), log=name + ".log")


def metric(text, name, egress):
    m = re.search(r'(?m)^portico_%s\{egress="%s"\} (\d+)$' % (
        name, re.escape(egress)), text)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------
# 1, 3 and 5: acl rules

def part_acl(t, v6):
    if ACL.missing():
        t.skip("egress of acl rules", ACL.missing())
        return
    oa, ob, oc = origin(t), origin(t), origin(t)
    o6 = origin(t, "::1") if v6 else None
    echo = S.udp_echo(t)
    hp, sp, st = ptest.free_port(), ptest.free_port(), ptest.free_port()
    rec = t.path("fieldrec.rec")
    rules = [
        dict(name="udp", action="allow", protocol="udp",
             egress="127.0.0.5"),
        dict(name="put", action="allow", method="PUT", port=oa.port,
             egress="127.0.0.3"),
        dict(name="a", action="allow", port=oa.port, egress="127.0.0.2"),
        dict(name="b", action="allow", port=ob.port, egress="127.0.0.3"),
        dict(name="kernel", action="allow", method="PUT", port=oc.port),
        dict(name="dst", action="allow", dst="127.0.0.1/32", port=oc.port,
             egress="127.0.0.4"),
    ]
    if v6:
        rules.append(dict(name="v4only", action="allow", port=o6.port,
                          egress="127.0.0.2"))
    p = start(t, "acl", [
        '{ name = "web"; address = "127.0.0.1:%d"; protocol = "http"; }'
        % hp,
        '{ name = "socks"; address = "127.0.0.1:%d"; protocol = "socks5"; }'
        % sp,
        '{ name = "status"; address = "127.0.0.1:%d"; protocol = "status";'
        ' acl = { enabled = false; }; }' % st,
    ], [ACL.acl_entry(rules, default="deny", allow_private=True)] +
        ([ACL.fieldrec_entry(rec)] if ACL.have_fieldrec() else []))

    ua = "http://127.0.0.1:%d/a" % oa.port
    ub = "http://127.0.0.1:%d/b" % ob.port
    r = get_once(hp, ua)
    t.check(r[0] == "127.0.0.2", "1. GET, rule a: the origin sees "
            "127.0.0.2", r)
    r = get_once(hp, ub)
    t.check(r[0] == "127.0.0.3", "1. GET, rule b: the origin sees "
            "127.0.0.3", r)
    r = via_connect(hp, "127.0.0.1", oa.port)
    t.check(r[0] == "127.0.0.2", "1. CONNECT, rule a: 127.0.0.2", r)
    r = via_connect(hp, "127.0.0.1", ob.port)
    t.check(r[0] == "127.0.0.3", "1. CONNECT, rule b: 127.0.0.3", r)
    r = via_socks(sp, "127.0.0.1", oa.port)
    t.check(r[0] == "127.0.0.2", "1. SOCKS5 CONNECT, rule a: 127.0.0.2", r)
    r = via_socks(sp, "127.0.0.1", ob.port)
    t.check(r[0] == "127.0.0.3", "1. SOCKS5 CONNECT, rule b: 127.0.0.3", r)
    r = via_socks(sp, "localhost", oa.port)
    t.check(r[0] == "127.0.0.2", "1. SOCKS5 CONNECT to a name, rule a: "
            "127.0.0.2", r)

    # 3. keep-alive on one client connection
    c = H.Conn.to(hp, timeout=ptest.bound(10))
    g1 = ask(c, "GET", ua + "/1")
    g2 = ask(c, "GET", ua + "/2")
    pu = ask(c, "PUT", ua + "/3")
    g3 = ask(c, "GET", ua + "/4")
    ask(c, "PUT", "http://127.0.0.1:%d/c/0" % oc.port)
    c.close()
    t.check(g1[0] == "127.0.0.2" and g1 == g2, "3. two GETs with one "
            "egress share one origin connection", (g1, g2))
    t.check(pu[0] == "127.0.0.3" and pu[1] != g1[1], "3. a PUT of "
            "another rule (egress 127.0.0.3) gets a connection of its own",
            (g1, pu))
    t.check(g3 == g1, "3. the next GET finds the first connection again "
            "(kept in the pool under its own egress)", (g1, g3))
    # A rule decided at DIAL (dst) after a connection kept from the
    # kernel's address: the GET must not ride on it.
    c = H.Conn.to(hp, timeout=ptest.bound(10))
    uc = "http://127.0.0.1:%d/c" % oc.port
    k1 = ask(c, "PUT", uc + "/1")
    k2 = ask(c, "GET", uc + "/2")
    k3 = ask(c, "GET", uc + "/3")
    c.close()
    t.check(k1[0] == "127.0.0.1", "3. a rule without egress: the kernel's "
            "address", k1)
    t.check(k2[0] == "127.0.0.4" and k2[1] != k1[1], "3. a rule on the "
            "destination (decided at DIAL) with egress 127.0.0.4 does not "
            "reuse the connection kept from the kernel's address", (k1, k2))
    t.check(k3 == k2, "3. and the next such request reuses its own",
            (k2, k3))

    # 5. UDP
    u = S.Udp(sp)
    try:
        t.check(u.ok(), "5. UDP ASSOCIATE granted", u.describe())
        got = None
        if u.ok():
            for i in range(5):
                u.send("127.0.0.1", echo.port, b"egress %d" % i)
                got = u.recv(ptest.bound(1))
                if got is not None:
                    break
        t.check(got is not None and got[3].startswith(b"egress"),
                "5. the datagram's echo comes back", got)
        srcs = set(s[0][0] for s in echo.seen)
        t.check(srcs == {"127.0.0.5"}, "5. the UDP echo server saw the "
                "datagrams from 127.0.0.5 (the udp rule's egress)", srcs)
    finally:
        u.close()

    # the other family: refused, logged, never the kernel's address
    if v6:
        before = len(sources(o6))
        r = get_once(hp, "http://[::1]:%d/v6" % o6.port)
        t.check(r == ("status", 502), "1. an IPv6 destination of a rule "
                "whose egress is IPv4 only: 502", r)
        r2, c2 = S.connect5(sp, "::1", o6.port)
        c2.close()
        t.check(isinstance(r2, S.Reply) and r2.rep == 1, "1. and over "
                "SOCKS5: general failure (0x01)", r2)
        t.check(len(sources(o6)) == before, "1. nothing reached the IPv6 "
                "origin", sources(o6))
        lines = p.wait_log(r'egress "127\.0\.0\.2" has no IPv6 address',
                           timeout=ptest.bound(5))
        t.check(lines, "1. the error log says why", t.log_details(p))
    else:
        t.skip("an IPv6 destination of an IPv4 egress", "no IPv6 loopback",
               need="ipv6")

    if t.check(ACL.have_fieldrec(), "the test module fieldrec.so is built",
               ACL.FIELDREC_SO):
        part_acl_log(t, rec)

    # metrics: one series per egress as configured
    r = H.get(st, "http://127.0.0.1:%d/metrics" % st)
    text = r.body.decode() if isinstance(r, H.Resp) else ""
    n2 = metric(text, "egress_connects_total", "127.0.0.2")
    n5 = metric(text, "egress_connects_total", "127.0.0.5")
    t.check(n2 is not None and n2 >= 4 and n5 is not None and n5 >= 1,
            "metrics: portico_egress_connects_total per egress (127.0.0.2: "
            "%s, 127.0.0.5: %s)" % (n2, n5), lambda: text[-3000:])
    if v6:
        f2 = metric(text, "egress_failures_total", "127.0.0.2")
        t.check(f2 is not None and f2 >= 2, "metrics: "
                "portico_egress_failures_total{egress=\"127.0.0.2\"} counts "
                "the refused IPv6 destinations (%s)" % f2)
    r = H.get(st, "http://127.0.0.1:%d/status" % st)
    try:
        js = r.json()["counters_labelled"]["egress_connects"]
    except Exception as e:
        js = "%r" % e
    t.check(isinstance(js, dict) and js.get("egress=127.0.0.3", 0) >= 3,
            "/status: counters_labelled.egress_connects by egress", js)
    t.stop_portico(p)


def part_acl_log(t, rec):
    """pt_conn_egress() (ABI 1.6), as fieldrec wrote it at each phase:
    the bound address from ESTABLISHED on, LOG included; nothing before,
    nothing for the kernel's choice or a dial that failed, and reset
    between the requests of one client connection."""
    ptest.wait_for(lambda: {k.get("path") for e, k in ptest.records(rec)
                            if e == "LOG" and k.get("proto") in ("1", "6")}
                   >= {"/c/0", "-"}, ptest.bound(5))
    recs = ptest.records(rec)

    def egress(phase, path=None, proto=None):
        return [k.get("egress") for e, k in recs if e == phase and
                (path is None or k.get("path") == path) and
                (proto is None or k.get("proto") == str(proto))]
    seen = {ph: egress(ph, "/a") for ph in ("ACCESS", "DIAL", "ESTABLISHED",
                                            "LOG")}
    t.check(seen == {"ACCESS": ["-"], "DIAL": ["-"],
                     "ESTABLISHED": ["127.0.0.2"], "LOG": ["127.0.0.2"]},
            "pt_conn_egress: none before ESTABLISHED, the bound address "
            "from there to LOG", seen)
    got = (egress("LOG", "/a/2"), egress("LOG", "/a/3"),
           egress("LOG", "/c/0"), egress("LOG", "/c/2"))
    t.check(got == (["127.0.0.2"], ["127.0.0.3"], ["-"], ["127.0.0.4"]),
            "pt_conn_egress per request of one client connection: a kept "
            "connection's, another rule's, none for the kernel's choice, "
            "the one a DIAL rule chose", got)
    v6 = egress("LOG", "/v6")
    t.check(v6 in ([], ["-"]), "pt_conn_egress: none for a dial the egress "
            "could not make", v6)
    udp = egress("LOG", proto=6)
    t.check(udp == ["127.0.0.5"], "pt_conn_egress: a UDP association's "
            "relay socket", udp)


# ---------------------------------------------------------------------------
# 2 and 3: listeners

def part_listeners(t):
    if not ACL.can_bind("127.0.0.4"):
        t.skip("listener egress", "127.0.0.2 and the rest of 127/8 are "
               "not on lo", need="127.0.0.2")
        return
    o = origin(t)
    ps, pl, pt = ptest.free_port(), ptest.free_port(), ptest.free_port()
    alog = t.path("access.json")
    p = start(t, "listeners", [
        '{ name = "same"; address = "127.0.0.4:%d"; protocol = "http"; '
        'egress = "same"; }' % ps,
        '{ name = "six"; address = "127.0.0.1:%d"; protocol = "http"; '
        'egress = "127.0.0.6"; }' % pl,
        '{ name = "tcp"; address = "127.0.0.1:%d"; protocol = "tcp"; '
        'to = "127.0.0.1:%d"; egress = "127.0.0.7"; }' % (pt, o.port),
    ], [] if AL.missing() else
        [AL.module(['file = "%s"; format = "json";' % alog])])
    url = "http://127.0.0.1:%d/l" % o.port
    r1 = get_once(ps, url, host="127.0.0.4")
    t.check(r1[0] == "127.0.0.4", "2. a listener on 127.0.0.4 with egress "
            "\"same\": the origin sees 127.0.0.4", r1)
    r2 = get_once(pl, url)
    t.check(r2[0] == "127.0.0.6", "2. egress \"127.0.0.6\" on a listener",
            r2)
    r3 = get_once(ps, url, host="127.0.0.4")
    r4 = get_once(pl, url)
    t.check(r3 == r1 and r4 == r2 and r1[1] != r2[1], "3. one pool, two "
            "egresses: each listener's requests reuse only their own "
            "origin connection", (r1, r2, r3, r4))
    try:
        c = H.Conn.to(pt, timeout=ptest.bound(10))
        r5 = ask(c, "GET", "/tcp")
        c.close()
    except OSError as e:
        r5 = ("error", str(e))
    t.check(r5[0] == "127.0.0.7", "2. a tcp listener's target sees its "
            "egress 127.0.0.7", r5)
    if AL.missing():
        t.skip("2. the access log's egress field", AL.missing())
    else:
        recs = AL.wait_json(alog, lambda rs: len(rs) >= 5)
        got = sorted((r.get("listener"), r.get("egress")) for r in recs)
        t.check(got == [("same", "127.0.0.4")] * 2 +
                [("six", "127.0.0.6")] * 2 + [("tcp", "127.0.0.7")],
                "2. the JSON access log's egress field names the address "
                "each transaction left from", got)
    t.stop_portico(p)


# ---------------------------------------------------------------------------
# 4: a prefix (netns)

def part_prefix(t):
    o = origin(t, "::1")
    port = ptest.free_port()
    p = start(t, "prefix", [
        '{ address = "127.0.0.1:%d"; protocol = "http"; '
        'egress = "%s/%d"; }' % (port, PREFIX, PLEN)])
    url = "http://[::1]:%d/p" % o.port
    results = []
    lock = threading.Lock()
    deadline = time.monotonic() + ptest.bound(120)

    def run(n):
        for _ in range(n):
            if time.monotonic() > deadline:
                return
            r = get_once(port, url)
            with lock:
                results.append(r)
    threads = [threading.Thread(target=run, args=(250,)) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(ptest.bound(150))
    srcs = [r[0] for r in results]
    bad = [r for r in results if not in_prefix(r[0])]
    t.check(len(results) == 1000 and not bad, "4. 1,000 requests through "
            "egress %s/%d: every one answered, from inside the prefix"
            % (PREFIX, PLEN), (len(results), bad[:5]))
    t.check(len(set(srcs)) >= 990, "4. from at least 990 distinct "
            "addresses (%d)" % len(set(srcs)))
    t.check(len(sources(o)) >= 990, "4. each on an origin connection of "
            "its own (a random address is not reused: %d)"
            % len(sources(o)))
    t.stop_portico(p)


def part_stable(t):
    why = A.missing()
    if why and "curl" not in why:
        t.skip("egress_stable = \"user\"", why)
        return
    o = origin(t, "::1")
    users = [("alice", "a-pw"), ("bob", "b-pw"), ("carol", "c-pw")]
    ulist = A.write_users(t, [(u, A.argon2id(pw)) for u, pw in users])
    port = ptest.free_port()
    p = start(t, "stable", [
        '{ address = "127.0.0.1:%d"; protocol = "http"; '
        'egress = "%s/%d"; egress_stable = "user"; }' % (port, PREFIX, PLEN)],
        ['{ name = "auth"; path = "%s"; userlist = "%s"; }' % (A.AUTH_SO,
                                                              ulist)])
    url = "http://[::1]:%d/u" % o.port

    def addrs(rounds):
        out = {}
        for u, pw in users:
            cred = base64.b64encode(("%s:%s" % (u, pw)).encode())
            hdr = [("Proxy-Authorization", "Basic " + cred.decode())]
            out[u] = [get_once(port, url, headers=hdr)[0]
                      for _ in range(rounds)]
        return out
    before = addrs(3)
    ok = all(len(set(v)) == 1 and in_prefix(v[0]) for v in before.values())
    t.check(ok, "4. egress_stable = \"user\": each user keeps one address "
            "inside the prefix over 3 connections", before)
    firsts = [v[0] for v in before.values()]
    t.check(len(set(firsts)) == len(users), "4. different users get "
            "different addresses", before)
    gen = p.workers()
    p.hup()
    ok = ptest.wait_for(lambda: p.log_lines(r"reloaded ") and
                        p.workers() != gen, ptest.bound(15))
    t.check(ok, "4. SIGHUP reloads (a new worker generation)",
            t.log_details(p))
    after = addrs(2)
    same = all(set(after[u]) == {before[u][0]} for u, _ in users)
    t.check(same, "4. after the reload every user leaves from the same "
            "address as before", (before, after))
    t.stop_portico(p)


# ---------------------------------------------------------------------------
# 6: portico -t

def part_check(t):
    port = ptest.free_port()
    bad = [
        ('egress = "10.0.0.0/8";', r"egress: .*must be IPv6"),
        ('egress = "nowhere";', r"egress: .*expected \"same\""),
        ('egress = "2001:db8::1/64";', r"egress: .*bits set"),
        ('egress = [ "192.0.2.1", "192.0.2.2" ];',
         r"egress: .*a second IPv4"),
        ('egress = "192.0.2.1"; egress_stable = "user";',
         r"egress_stable: only with an IPv6 prefix"),
        ('egress_stable = "user";', r"egress_stable: without an egress"),
        ('egress = "2001:db8::/64"; egress_stable = "sometimes";',
         r"egress_stable: expected \"user\" or \"source\""),
    ]
    for i, (line, rx) in enumerate(bad):
        text = ("listeners = (\n"
                '  { address = "127.0.0.1:%d"; protocol = "http";\n'
                "    %s }\n);\n" % (port, line))
        path = ptest.write_conf(t.tmp, text, "bad%d.conf" % i)
        r = ptest.run_portico(["-t", "-c", path])
        want = re.escape(path) + r":3: " + rx
        t.check(r.returncode == 1 and re.search(want, r.stderr),
                "6. -t refuses %s naming %s:3" % (line, os.path.basename(
                    path)), ["exit %s" % r.returncode, r.stderr])
    text = ("listeners = (\n"
            '  { address = "127.0.0.1:%d"; protocol = "status";\n'
            '    egress = "127.0.0.2"; }\n);\n' % port)
    path = ptest.write_conf(t.tmp, text, "status.conf")
    r = ptest.run_portico(["-t", "-c", path])
    t.check(r.returncode == 1 and (path + ":3: egress: a status listener")
            in r.stderr, "6. -t refuses an egress on a status listener",
            r.stderr)
    text = ("listeners = (\n"
            '  { address = "127.0.0.1:%d"; protocol = "tcp";\n'
            '    to = "[::1]:80";\n'
            '    egress = "127.0.0.2"; }\n);\n' % port)
    path = ptest.write_conf(t.tmp, text, "tcp.conf")
    r = ptest.run_portico(["-t", "-c", path])
    t.check(r.returncode == 1 and (path + ":4: egress: \"127.0.0.2\" has "
                                   "no IPv6 address") in r.stderr,
            "6. -t refuses a tcp listener whose target the egress cannot "
            "reach", r.stderr)
    if not ACL.missing():
        text = ("listeners = (\n"
                '  { address = "127.0.0.1:%d"; protocol = "http"; }\n);\n'
                "modules = ( { name = \"acl\"; path = \"%s\";\n"
                "  rules = ( { name = \"r\"; action = \"allow\";\n"
                "    egress = \"2001:db8::/200\"; } ); } );\n"
                % (port, ACL.ACL_SO))
        path = ptest.write_conf(t.tmp, text, "acl.conf")
        r = ptest.run_portico(["-t", "-c", path])
        t.check(r.returncode == 1 and re.search(
            re.escape(path) + r":6: .*rule 1 \(\"r\"\): egress: "
            r"\"2001:db8::/200\"", r.stderr), "6. -t names the line of an "
            "acl rule's bad egress", r.stderr)
    text = ("listeners = (\n"
            '  { address = "127.0.0.1:%d"; protocol = "http";\n'
            '    egress = [ "127.0.0.2", "2001:db8:1::/64" ];\n'
            '    egress_stable = "source"; },\n'
            '  { address = "127.0.0.1:%d"; protocol = "socks5";\n'
            '    egress = "same"; }\n);\n' % (port, ptest.free_port()))
    path = ptest.write_conf(t.tmp, text, "good.conf")
    r = ptest.run_portico(["-t", "-c", path])
    t.check(r.returncode == 0, "6. -t accepts a pair with a prefix, "
            "egress_stable and \"same\"", r.stderr)


def main(t):
    why = ptest.private_netns()
    netns = why is None
    if netns:
        why = route_local(PREFIX, PLEN)
        if why:
            netns = False
            t.check(False, "the prefix routed to lo in the namespace", why)
    v6 = ptest.have_ipv6()
    part_check(t)
    part_acl(t, v6)
    part_listeners(t)
    if netns and v6:
        part_prefix(t)
        part_stable(t)
    elif not v6:
        t.skip("4. egress prefix", "no IPv6 loopback", need="ipv6")
    else:
        t.skip("4. egress prefix (1,000 connections, egress_stable)",
               "needs a network namespace of its own: %s" % why,
               need="netns")


if __name__ == "__main__":
    ptest.Test("egress").run(main)
