#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Parents failing and coming back, and how a `via` choice spreads the
load. Two portico parents (p1 and p2, each with a Via pseudonym of its
own, "p-one" and "p-two", which the counting origin sees and so tells
which parent carried each request) behind a front portico with two
workers (the parents' health is shared between them).

1. ordered, via = [ "p1", "p2" ]: every GET goes through p1; p1 stopped
   by its PID: every request is served through p2, no error seen by the
   client (GET, and a SOCKS5 CONNECT), and after max_fails (3) failures
   the front logs p1 down; p1 started again on its port: only the probe
   brings it back ("up again (probe)"), and GETs go through p1 again
   within down_time plus one probe tick (0.5 s) of its return, with a
   generous margin, none failing meanwhile.
2. a POST whose parent (a scripted one) dies after part of the body: the
   client gets 502 naming that parent, the body never goes to the next
   parent (the origin behind p2 saw no such request), and the dying
   parent got one request.
3. hash-user (the front's auth module, 8 users): 100 requests, each
   user's all through one parent, and both parents serve some users.
4. round-robin: 100 GETs, each parent within 10% of half.
5. both parents stopped: at most max_fails requests get 502 naming a
   parent, then 503 with Retry-After (1 to down_time s) at once (under
   a second each); a SOCKS5 CONNECT gets general failure (0x01); a
   listener via [ "p1", "p2", "direct" ] goes straight to the origin.
6. a loop: portico L1 via L2, L2 via L1 (each its own default Via
   pseudonym): a GET comes back to L1, which answers 508, and the client
   gets it; a CONNECT round the loop ends (502) without reaching the
   echo; the origin saw nothing, and each request went round once (the
   connections each instance accepted, from its totals line).
"""
import errno
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import authtest as A  # noqa: E402
import parenttest as P  # noqa: E402

DOWN = 3            # the front's down_time for p1 and p2, seconds
MAX_FAILS = 3
PROBE_TICK = 0.5    # worker/parent.c: PARENT_PROBE_TICK_MS
TAGS = {"p-one": "p1", "p-two": "p2"}


def start_parent(t, name, tag, port):
    """A parent portico on <port> whose Via entry is "1.1 <tag>"."""
    text = P.conf(t, name, [P.listener(name, port, "http")],
                  http='connect_ports = "*"; via_pseudonym = "%s";' % tag)
    return P.start_portico(t, text, [port], name + ".conf")


def hold_port(t, port):
    """Keeps <port> ours while no parent listens there: a socket bound
    to it (SO_REUSEPORT, as portico binds) but not listening, so a
    connect is refused as to a stopped parent, and another scenario's
    ephemeral port cannot be it (p1 is started again on it, and the
    front probes it)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", port))
    t.at_exit(s.close)
    return s


def served_by(origin, path):
    """Which parent (p1, p2, or what else) carried each request the
    origin got for <path>, in order."""
    out = []
    for r in origin.snapshot():
        if r["path"] != path:
            continue
        via = ", ".join(P.header(r, "via"))
        tags = [tg for tg in TAGS if re.search(r"\b1\.1 %s\b" % tg, via)]
        out.append(TAGS[tags[0]] if len(tags) == 1 else "via=%r" % via)
    return out


def get(port, url, auth=None):
    r = P.http_via(port, url, auth=auth)
    return r.status if isinstance(r, H.Resp) else r


def ordered(t, front, ports, origin, echo, p1_port, parents):
    url = origin.url + "/ord"
    st = [get(ports["ord"], url) for _ in range(4)]
    t.check(st == [200] * 4 and served_by(origin, "/ord") == ["p1"] * 4,
            "1. ordered: with both up, every GET goes through p1",
            (st, served_by(origin, "/ord")))

    parents["p1"].stop()
    url = origin.url + "/ord-p1-gone"
    st = [get(ports["ord"], url) for _ in range(10)]
    by = served_by(origin, "/ord-p1-gone")
    t.check(st == [200] * 10 and by == ["p2"] * 10,
            "1. p1 stopped: 10 GETs all answered 200, all through p2",
            (st, by))
    before = len(echo.peers)
    r, c = P.socks5_connect(ports["ord_s"], "127.0.0.1", echo.port)
    try:
        ok, why = S.echo_check(c, os.urandom(4096)) if S.ok5(r) else \
            (False, repr(r))
    finally:
        c.close()
    t.check(ok and len(echo.peers) == before + 1,
            "1. p1 stopped: a SOCKS5 CONNECT goes through p2, 4 KiB echoed",
            why)
    down = front.wait_log(r'parent "p1" \(127\.0\.0\.1:%d\) is down after '
                          r'%d failures in a row' % (p1_port, MAX_FAILS))
    t.check(len(down) == 1, "1. the front logs p1 down once, after %d "
            "failures in a row" % MAX_FAILS, t.log_details(front))
    fails = front.log_lines(r'parent "p1": ')
    t.check(1 <= len(fails) <= MAX_FAILS,
            "1. p1 was tried by at most max_fails (%d) requests, then "
            "skipped (%d tried)" % (MAX_FAILS, len(fails)), fails)

    # p1 comes back; the probe notices, traffic follows.
    parents["p1"] = start_parent(t, "p1b", "p-one", p1_port)
    t_up = time.monotonic()
    url = origin.url + "/ord-back"
    statuses, first_p1 = [], None
    deadline = t_up + ptest.bound(DOWN + PROBE_TICK + 8)
    n = 0
    while time.monotonic() < deadline and n < 200:
        n += 1
        statuses.append(get(ports["ord"], url))
        by = served_by(origin, "/ord-back")
        if by and by[-1] == "p1":
            first_p1 = time.monotonic() - t_up
            break
        time.sleep(0.2)
    upl = front.wait_log(r'parent "p1" \(127\.0\.0\.1:%d\) is up again '
                         r'\(probe\)' % p1_port, timeout=ptest.bound(2))
    t.check(upl, "1. the front logs p1 up again, by the probe",
            t.log_details(front))
    limit = ptest.bound(DOWN + PROBE_TICK + 2.0)
    t.check(first_p1 is not None and first_p1 <= limit,
            "1. GETs go through p1 again %.1f s after it listens (within "
            "down_time %d s + one probe tick + 2 s of margin)" % (
                first_p1 if first_p1 is not None else -1, DOWN),
            (statuses, served_by(origin, "/ord-back")))
    t.check(all(s == 200 for s in statuses),
            "1. no GET failed while p1 came back (%d sent)" % len(statuses),
            statuses)
    url = origin.url + "/ord-after"
    st = [get(ports["ord"], url) for _ in range(3)]
    t.check(st == [200] * 3 and served_by(origin, "/ord-after") == ["p1"] * 3,
            "1. and the next GETs go through p1 too",
            (st, served_by(origin, "/ord-after")))


def partial_post(t, front, ports, origin, dying):
    url = "http://127.0.0.1:%d/partial" % origin.port
    total, sent = 256 * 1024, 64 * 1024
    head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d"
            "\r\n\r\n" % (url, origin.port, total)).encode()
    status, why, body = None, None, b""
    c = H.Conn.to(ports["post"], timeout=ptest.bound(10))
    try:
        c.send(head + os.urandom(sent))
        r = H.read_response(c, "POST")
        status, body = r.status, r.body
        why = H.describe(r)
    except Exception as e:
        why = "%s: %s" % (type(e).__name__, e)
    finally:
        c.close()
    got = dying.snapshot()
    t.check(len(got) == 1 and got[0]["method"] == "POST" and
            32 * 1024 <= got[0]["body_got"] < total,
            "2. the scripted parent got the POST and part of its body, then "
            "died", got)
    t.check(status == 502 and b'parent "dying"' in body,
            "2. the client is answered 502, naming the parent", why)
    time.sleep(0.5)
    t.check(origin.count(path="/partial") == 0,
            "2. the POST was not sent to the next parent (nothing reached "
            "the origin behind p2)", origin.snapshot()[-3:])


def hash_user(t, ports, origin, users):
    url = origin.url + "/hu-%s"
    statuses = []
    for i in range(100):
        u, pw = users[i % len(users)]
        statuses.append(get(ports["hu"], url % u, auth=(u, pw)))
    t.check(statuses == [200] * 100, "3. hash-user: 100 requests of %d "
            "users, all 200" % len(users),
            [s for s in statuses if s != 200][:5])
    per = {u: served_by(origin, "/hu-%s" % u) for u, _ in users}
    t.check(all(len(set(v)) == 1 and set(v) <= {"p1", "p2"} and
                len(v) >= 100 // len(users) for v in per.values()),
            "3. hash-user: each user's requests all go through one parent",
            {u: sorted(set(v)) for u, v in per.items()})
    used = {v[0] for v in per.values() if v}
    t.check(used == {"p1", "p2"}, "3. hash-user: both parents serve some "
            "users", {u: v[:1] for u, v in per.items()})


def round_robin(t, ports, origin):
    url = origin.url + "/rr"
    st = [get(ports["rr"], url) for _ in range(100)]
    by = served_by(origin, "/rr")
    n1, n2 = by.count("p1"), by.count("p2")
    t.check(st == [200] * 100 and n1 + n2 == 100,
            "4. round-robin: 100 GETs, all 200, each through p1 or p2",
            (st, by))
    t.check(45 <= n1 <= 55 and 45 <= n2 <= 55,
            "4. round-robin: within 10%% of half each (p1 %d, p2 %d)"
            % (n1, n2))


def all_down(t, front, ports, origin, parents):
    parents["p1"].stop()
    parents["p2"].stop()
    url = origin.url + "/down"
    answers = []
    for _ in range(MAX_FAILS + 1):
        r = P.http_via(ports["ord"], url)
        answers.append(r)
        if not isinstance(r, H.Resp) or r.status != 502:
            break
    fives = answers[:-1]
    last = answers[-1]
    t.check(len(fives) <= MAX_FAILS and all(
        re.search(rb'parent \\?"p[12]\\?"', r.body) for r in fives),
        "5. both parents stopped: at most max_fails (%d) requests get 502 "
        "naming a parent (%d did)" % (MAX_FAILS, len(fives)),
        [x for r in fives for x in H.describe(r)])
    t.check(isinstance(last, H.Resp) and last.status == 503,
            "5. then 503", lambda: H.describe(last))
    slow, bad = [], []
    for _ in range(5):
        t0 = time.monotonic()
        r = P.http_via(ports["ord"], url)
        dt = time.monotonic() - t0
        ra = r.get("retry-after") if isinstance(r, H.Resp) else None
        if not (isinstance(r, H.Resp) and r.status == 503 and ra and
                ra.isdigit() and 1 <= int(ra) <= DOWN):
            bad.append(H.describe(r))
        if dt > ptest.bound(1.0):
            slow.append(dt)
    t.check(not bad, "5. every parent down: 503 with Retry-After (1 to "
            "down_time s), five times", bad)
    t.check(not slow, "5. each answered at once (under %.1f s)"
            % ptest.bound(1.0), slow)
    t0 = time.monotonic()
    r, c = P.socks5_connect(ports["ord_s"], "127.0.0.1", 9)
    c.close()
    dt = time.monotonic() - t0
    t.check(isinstance(r, S.Reply) and r.rep == 0x01 and
            dt <= ptest.bound(1.0),
            "5. a SOCKS5 CONNECT gets general failure (0x01) at once",
            "%r in %.2f s" % (r, dt))
    t.check(origin.count(path="/down") == 0, "5. nothing reached the "
            "origin", origin.snapshot()[-3:])
    r = P.http_via(ports["ord_d"], origin.url + "/down-direct")
    reqs = [q for q in origin.snapshot() if q["path"] == "/down-direct"]
    via = ", ".join(P.header(reqs[0], "via")) if reqs else ""
    t.check(isinstance(r, H.Resp) and r.status == 200 and len(reqs) == 1
            and re.fullmatch(r"1\.1 portico-[^ ,]+-%d" % ports["ord"], via),
            "5. via [ p1, p2, \"direct\" ] with both down: 200, straight "
            "to the origin (Via names the front only)",
            lambda: H.describe(r) + [via])
    downs = front.log_lines(r'parent "p[12]" .* is down after')
    t.check(any('"p2"' in ln for ln in downs),
            "5. the front logs p2 down", downs)


def loop(t, origin, echo):
    p1, p2 = ptest.free_port(), ptest.free_port()
    l1 = P.start_portico(t, P.conf(
        t, "loop1", [P.listener("l1", p1, "http", "l2")],
        [P.entry(name="l2", address="127.0.0.1:%d" % p2, protocol="http")]),
        [p1], "loop1.conf")
    l2 = P.start_portico(t, P.conf(
        t, "loop2", [P.listener("l2", p2, "http", "l1")],
        [P.entry(name="l1", address="127.0.0.1:%d" % p1, protocol="http")]),
        [p2], "loop2.conf")
    t0 = time.monotonic()
    r = P.http_via(p1, origin.url + "/loop")
    dt = time.monotonic() - t0
    t.check(isinstance(r, H.Resp) and r.status == 508,
            "6. a GET round the loop L1 -> L2 -> L1: 508 (in %.2f s)" % dt,
            lambda: H.describe(r))
    before = len(echo.peers)
    t0 = time.monotonic()
    r, c = P.connect_via(p1, "127.0.0.1", echo.port)
    dt = time.monotonic() - t0
    if c is not None:
        c.close()
    t.check(isinstance(r, H.Resp) and r.status == 502 and
            len(echo.peers) == before,
            "6. a CONNECT round the loop: 502 (in %.2f s), the echo never "
            "reached" % dt, lambda: H.describe(r))
    t.check(origin.count(path="/loop") == 0, "6. the origin saw nothing",
            origin.snapshot()[-3:])
    t.stop_portico(l1)
    t.stop_portico(l2)
    # Once round the loop each: L1 took the client's connection and L2's
    # (GET: 2, CONNECT: 2), L2 one from L1 each; a loop that went on
    # would have taken connections until a limit ran out.
    n1, n2 = A.totals(l1).get("accepted"), A.totals(l2).get("accepted")
    t.check(n1 is not None and n1 <= 4 and n2 is not None and n2 <= 2,
            "6. each request went round the loop once: L1 accepted %s "
            "connections (at most 4), L2 %s (at most 2)" % (n1, n2),
            lambda: ptest.tail(l1.log(), 5) + ptest.tail(l2.log(), 5))


def main(t):
    origin = P.start_counting_origin(t)
    echo = P.start_echo(t)
    p1_port, p2_port = ptest.free_port(), ptest.free_port()
    parents = {"p1": start_parent(t, "p1", "p-one", p1_port),
               "p2": start_parent(t, "p2", "p-two", p2_port)}
    hold_port(t, p1_port)
    hold_port(t, p2_port)
    dying = P.start_script_parent(t, die_after=32 * 1024)

    why_auth = A.missing()
    users = []
    modules = []
    if why_auth and "curl" not in why_auth:
        t.skip("3. hash-user (the front's auth module)", why_auth)
    else:
        users = [("user%d" % i, "pw-%d" % i) for i in range(8)]
        ulist = A.write_users(t, [(u, A.argon2id(pw)) for u, pw in users],
                              "front.users")
        modules = ['{ name = "auth"; path = "%s"; userlist = "%s"; }'
                   % (A.AUTH_SO, ulist)]
    open_ = 'auth = { required = false; };' if modules else ""
    ports = {k: ptest.free_port() for k in ("ord", "ord_s", "ord_d", "post",
                                            "hu", "rr")}
    pe = dict(protocol="http", max_fails=MAX_FAILS, down_time=DOWN)
    parents_conf = [
        P.entry(name="p1", address="127.0.0.1:%d" % p1_port, **pe),
        P.entry(name="p2", address="127.0.0.1:%d" % p2_port, **pe),
        P.entry(name="dying", address="127.0.0.1:%d" % dying.port,
                protocol="http"),
    ]
    listeners = [
        P.listener("ord", ports["ord"], "http", ["p1", "p2"], open_),
        P.listener("ord_s", ports["ord_s"], "socks5", ["p1", "p2"], open_),
        P.listener("ord_d", ports["ord_d"], "http", ["p1", "p2", "direct"],
                   open_),
        P.listener("post", ports["post"], "http", ["dying", "p2"], open_),
        P.listener("rr", ports["rr"], "http",
                   '{ parents = [ "p1", "p2" ]; strategy = "round-robin"; }',
                   open_),
    ]
    if modules:
        listeners.append(P.listener(
            "hu", ports["hu"], "http",
            '{ parents = [ "p1", "p2" ]; strategy = "hash-user"; }'))
    lports = [ports[k] for k in ("ord", "ord_s", "ord_d", "post", "rr")] + \
        ([ports["hu"]] if modules else [])
    front = P.start_portico(t, P.conf(t, "front", listeners, parents_conf,
                                      modules=modules, workers=2),
                            lports, "front.conf")
    t.diag("front: %s; p1 %d, p2 %d, dying %d" % (ports, p1_port, p2_port,
                                                 dying.port))

    ordered(t, front, ports, origin, echo, p1_port, parents)
    partial_post(t, front, ports, origin, dying)
    if modules:
        hash_user(t, ports, origin, users)
    round_robin(t, ports, origin)
    all_down(t, front, ports, origin, parents)
    # A parent stopped by SIGTERM cuts the connections it holds, idle
    # ones to the origin too: a reset between requests is no fault of a
    # request's.
    bad = [b for b in origin.bad if not re.match(
        r"conn \d+: \[Errno %d\]" % errno.ECONNRESET, b)]
    t.check(not bad, "the origin found nothing wrong in any request", bad)
    t.stop_portico(front)
    loop(t, origin, echo)


if __name__ == "__main__":
    ptest.Test("parent_failover").run(main)
