#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The DATAGRAM phase: every destination of a SOCKS5 UDP association is
judged by the modules before a datagram goes there (t/modules/udpcheck.so:
deny_port refuses a destination address's port, again_port answers
AGAIN, deny_host refuses a name; each judgement is a log line).

One association sends ROUNDS rounds of one datagram to each of: an
allowed and a denied UDP echo server (both on 127.0.0.1), the AGAIN
port, "localhost" (resolved from the hosts file) at the allowed and the
denied port, "udp.test" (from the test's DNS server, a pending lookup) at
the allowed port, and "blocked.test" (denied by name). Then:

- allowed destinations echo every datagram; the denied ones receive
  NOTHING (their servers count), and the DNS server never sees a query
  for blocked.test (a name refused by name is not looked up);
- each destination is judged once: an address once (host the address,
  target the address), a name twice (host the name, target unset, then
  target the address it resolved to), so a rule on the address holds for
  a name too; proto is 6 (PT_PROTO_UDP) in every judgement; AGAIN counts
  as DENY;
- the cache is bounded: after more destinations than it holds, the
  denied one is judged again, and still refused;
- an IPv4-mapped IPv6 destination is judged with its IPv4 address as
  target;
- the exit totals' udp_denied equals the datagrams sent to refused
  destinations, the association's LOG sees proto 6, the reason in
  req->error, and bytes_in counting the datagrams to addresses and to
  names alike;
- with the allocation counter preloaded (as in allocs.py), associations
  that judge their destinations and datagrams on a live one allocate
  nothing on the heap in steady state.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import allocs as A  # noqa: E402

ROUNDS = 5
PROTO_UDP = "6"         # PT_PROTO_UDP in include/portico/module.h
HANDSHAKE_IN = 3 + 10   # greeting (no-auth only), request with an IPv4
JUDGED = re.compile(r"udpcheck: judged proto=(\d+) host=(\S*) port=(\d+) "
                    r"target=(\S+) verdict=(\w+)")


def modules(deny, again):
    return ('modules = ( { name = "udpcheck"; path = "%s/udpcheck.so"; '
            'deny_port = %d; again_port = %d; deny_host = "blocked.test"; '
            '} );' % (ptest.TESTMODDIR, deny, again))


def judgements(p):
    """[(proto, host, port, target, verdict)] from the log."""
    out = []
    for ln in p.log_lines(r"udpcheck: judged "):
        m = JUDGED.search(ln)
        if m:
            out.append((m.group(1), m.group(2), int(m.group(3)),
                        m.group(4), m.group(5)))
    return out


def main(t):
    ok_echo = S.udp_echo(t)
    deny_echo = S.udp_echo(t)
    again_echo = S.udp_echo(t)
    dns = H.dns_server(t, {"udp.test": {"A": ["127.0.0.1"]},
                           "blocked.test": {"A": ["127.0.0.1"]}})
    okp, denyp, againp = ok_echo.port, deny_echo.port, again_echo.port
    p, port = S.start(t, workers=1,
                      resolver={"servers": dns.address, "timeout": 1},
                      modules=modules(denyp, againp))
    w0 = p.workers()
    a = S.Udp(port)
    t.check(a.ok(), "UDP ASSOCIATE with a DATAGRAM module: REP 0",
            lambda: [a.describe()] + H.log_tail(p)())
    if not a.ok():
        a.close()
        H.finish(t, p, w0)
        return

    allowed = [("127.0.0.1", okp), ("localhost", okp), ("udp.test", okp)]
    refused = [("127.0.0.1", denyp), ("localhost", denyp),
               ("127.0.0.1", againp), ("blocked.test", okp)]
    sent_in = 0         # payload bytes to allowed destinations
    denied_sent = 0
    replies = {d: 0 for d in allowed}
    canaries = 0
    bad = []

    def roundtrip(host, dport, data):
        """Sends and waits for the echo: one name lookup at a time (a
        datagram to a name while another resolves is dropped, UDP-style,
        and a hosts-file answer comes from the loop)."""
        nonlocal sent_in
        a.send(host, dport, data)
        sent_in += len(data)
        got = a.recv(ptest.bound(3))
        if got is None or got[:3] != (0, "127.0.0.1", okp) or \
                got[3] != data:
            bad.append("%s:%d: reply %r" % (host, dport, got))
            return False
        return True

    for r in range(ROUNDS):
        for host, dport in allowed + refused:
            data = b"round %d to %s:%d" % (r, host.encode(), dport)
            if (host, dport) in allowed:
                if roundtrip(host, dport, data):
                    replies[(host, dport)] += 1
                continue
            a.send(host, dport, data)
            denied_sent += 1
            # a datagram to an address after it: the refused one was
            # handled (its lookup answered) when this one comes back
            roundtrip("127.0.0.1", okp, b"canary")
            canaries += 1
    t.check(not bad and all(n == ROUNDS for n in replies.values()),
            "allowed destinations (127.0.0.1, localhost and udp.test at the "
            "allowed port) echo every datagram (%d each)" % ROUNDS,
            lambda: bad + ["replies per destination: %r" % replies])
    got = a.recv(0.5)
    t.check(got is None, "nothing else comes back", "got %r" % (got,))
    t.check(deny_echo.count() == 0,
            "the echo server on the denied port receives nothing (%d "
            "datagrams sent to it by address and by name)" % (2 * ROUNDS),
            "it saw %d" % deny_echo.count())
    t.check(again_echo.count() == 0,
            "AGAIN counts as DENY: the server on the AGAIN port receives "
            "nothing", "it saw %d" % again_echo.count())
    t.check(ok_echo.count() == 3 * ROUNDS + canaries,
            "the allowed server saw exactly the allowed datagrams (%d)" % (
                3 * ROUNDS + canaries), "it saw %d" % ok_echo.count())
    t.check(dns.count("blocked.test") == 0 and dns.count("udp.test") >= 1,
            "a name refused by name is not looked up (blocked.test: no "
            "query; udp.test: looked up)", "queries %r" % dns.queries)

    j = judgements(p)
    want = {
        ("127.0.0.1", okp, "127.0.0.1:%d" % okp, "continue"),
        ("127.0.0.1", denyp, "127.0.0.1:%d" % denyp, "deny"),
        ("127.0.0.1", againp, "127.0.0.1:%d" % againp, "again"),
        ("localhost", okp, "-", "continue"),
        ("localhost", okp, "127.0.0.1:%d" % okp, "continue"),
        ("localhost", denyp, "-", "continue"),
        ("localhost", denyp, "127.0.0.1:%d" % denyp, "deny"),
        ("udp.test", okp, "-", "continue"),
        ("udp.test", okp, "127.0.0.1:%d" % okp, "continue"),
        ("blocked.test", okp, "-", "deny"),
    }
    seen = [x[1:] for x in j]
    t.check(sorted(seen) == sorted(want),
            "each destination judged once: an address once, a name before "
            "it is resolved (no target) and after (target the address); "
            "%d judgements for %d rounds" % (len(want), ROUNDS),
            lambda: ["judgements: %r" % seen,
                     "missing: %r" % sorted(want - set(seen)),
                     "extra: %r" % [x for x in seen if x not in want]])
    t.check(j and all(x[0] == PROTO_UDP for x in j),
            "DATAGRAM hooks see proto %s (PT_PROTO_UDP)" % PROTO_UDP,
            "protos %r" % sorted(set(x[0] for x in j)))

    # more destinations than the cache holds: the denied one is judged
    # again, and still refused
    for k in range(12):
        a.send("127.0.0.1", ptest.free_port(), b"filler")
        sent_in += len(b"filler")
    time.sleep(0.2)
    a.send("127.0.0.1", denyp, b"after eviction")
    denied_sent += 1
    a.send("127.0.0.1", okp, b"canary 2")
    sent_in += len(b"canary 2")
    got = a.recv(ptest.bound(3))
    again = [x for x in judgements(p)
             if x[1:] == ("127.0.0.1", denyp, "127.0.0.1:%d" % denyp,
                          "deny")]
    t.check(got is not None and got[3] == b"canary 2" and
            deny_echo.count() == 0 and len(again) == 2,
            "after 12 more destinations (beyond the cache), the denied one "
            "is judged again and still refused",
            "judged %d times; its server saw %d; canary %r" % (
                len(again), deny_echo.count(), got))

    # an IPv4-mapped IPv6 address reaches the IPv4 host: the hooks see
    # the IPv4 address, so a rule on it cannot be avoided that way
    a.send("::ffff:127.0.0.1", denyp, b"mapped")
    denied_sent += 1
    a.send("127.0.0.1", okp, b"canary 3")
    sent_in += len(b"canary 3")
    got = a.recv(ptest.bound(3))
    mapped = [x for x in judgements(p) if x[1] == "::ffff:127.0.0.1"]
    t.check(got is not None and got[3] == b"canary 3" and
            deny_echo.count() == 0 and
            mapped == [(PROTO_UDP, "::ffff:127.0.0.1", denyp,
                        "127.0.0.1:%d" % denyp, "deny")],
            "a datagram to ::ffff:127.0.0.1 is judged with target "
            "127.0.0.1 (the IPv4 host it reaches), and refused",
            "judgements %r; its server saw %d; canary %r" % (
                mapped, deny_echo.count(), got))

    a.close()
    logs = p.wait_log(r"udpcheck: LOG ", 1, timeout=ptest.bound(5))
    m = re.search(r"proto=(\d+) .* in=(\d+) out=(\d+) error=(.*)$",
                  logs[-1]) if logs else None
    t.check(m is not None and m.group(1) == PROTO_UDP,
            "the association's LOG sees proto %s" % PROTO_UDP, str(logs))
    t.check(m is not None and
            m.group(4) == "datagrams to a denied destination dropped",
            "the association's LOG sees why datagrams were dropped "
            "(req->error)", str(logs))
    t.check(m is not None and int(m.group(2)) == HANDSHAKE_IN + sent_in,
            "bytes_in counts the datagrams to addresses and to names "
            "(%d payload bytes, %d of the handshake)" % (sent_in,
                                                          HANDSHAKE_IN),
            str(logs))
    info = p.wait_log(r"UDP association: %d datagrams to denied "
                      r"destinations dropped" % denied_sent, 1,
                      timeout=ptest.bound(3))
    t.check(bool(info), "the association's close logs %d datagrams to "
            "denied destinations" % denied_sent,
            H.log_tail(p))
    rc = H.finish(t, p, w0)
    t.check(rc == 0, "SIGTERM: exit status 0", "exit %s" % rc)
    tot = p.log_lines(r"totals: ")
    m = re.search(r" udp_denied=(\d+)", tot[-1]) if tot else None
    t.check(m is not None and int(m.group(1)) == denied_sent,
            "exit totals: udp_denied=%d, the datagrams sent to refused "
            "destinations" % denied_sent, str(tot[-1:]))

    steady_state(t, ok_echo, dns, denyp, againp)


def steady_state(t, echo, dns, denyp, againp):
    """Associations judging their destinations, and datagrams on one,
    with the allocation counter preloaded: nothing on the heap."""
    if not os.path.exists(A.HELPER):
        t.check(False, "the allocation counter is built", A.HELPER)
        return
    preload = [A.HELPER]
    asan = A.asan_runtime()
    if asan:
        preload.insert(0, asan)
    cdir = t.path("allocs")
    os.mkdir(cdir)
    env = {"LD_PRELOAD": " ".join(preload), "PT_ALLOCCOUNT_DIR": cdir,
           "PT_ALLOCCOUNT_TRACE": "1"}
    conf = S.socks_conf(t, ptest.free_port(),
                        resolver={"servers": dns.address, "timeout": 1},
                        modules=modules(denyp, againp))
    p = ptest.Portico(t, conf, env=env).start()
    port = p.listener_ports()[0]
    w0 = p.workers()
    counter = A.Counter(cdir, w0.get(0))

    def exchange(u, data):
        """To each destination, allowed then refused, each followed by a
        round trip, so that one name resolves at a time."""
        for host in ("127.0.0.1", "localhost", "udp.test"):
            for dport in (echo.port, denyp):
                if dport == denyp:
                    u.send(host, dport, b"refused")
                u.send("127.0.0.1" if dport == denyp else host, echo.port,
                       data)
                got = u.recv(ptest.bound(5))
                if got is None or got[3] != data:
                    return False, "to %s:%d: reply %r" % (host, dport, got)
        return True, None

    def session():
        u = S.Udp(port, timeout=ptest.bound(10))
        try:
            if not u.ok():
                return False, u.describe()
            return exchange(u, b"judged")
        finally:
            u.close()

    live = S.Udp(port, timeout=ptest.bound(10))

    def datagram():
        if not live.ok():
            return False, live.describe()
        return exchange(live, b"datagram")

    for label, op in (("UDP ASSOCIATE sessions judging 6 destinations",
                       session),
                      ("datagrams to judged destinations on one "
                       "association", datagram)):
        fails = []
        for i in range(20):
            ok, why = op()
            if not ok:
                fails.append("warm-up %d: %s" % (i, why))
                break
        before = A.quiet(counter, ptest.bound(3))
        n = 0
        for i in range(60):
            ok, why = op()
            if not ok:
                fails.append("%d: %s" % (i, why))
                break
            n += 1
        after = A.quiet(counter, ptest.bound(3))
        t.check(n == 60 and before is not None and after is not None and
                after[A.W_TOTAL] == before[A.W_TOTAL],
                "%s: 60 of them, 0 heap allocations in the worker" % label,
                lambda: fails + (["by kind: " + counter.kinds(before, after)]
                                 + counter.callers(before, after)
                                 if before and after else
                                 ["counter unreadable: %s" % counter.path]))
    live.close()
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("socks_udp_check").run(main)
