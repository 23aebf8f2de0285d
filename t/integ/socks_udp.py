#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
SOCKS5 UDP ASSOCIATE (RFC 1928 section 7) against loopback UDP echo
servers:

- the reply names a UDP relay on the listener's address (or the
  listener's udp_advertise address), a bound port;
- round trips of 1, 1200, 4096, 65000 and 65497 bytes (a 65507-byte
  datagram, the largest) to an IPv4 destination, and to names (one from
  the test's DNS server, and "localhost"): the reply datagrams carry the
  echo server's address and port in their header, FRAG 0, the data
  exact; two destinations on one association keep their own addresses;
- dropped, and the association goes on: FRAG != 0, malformed headers, a
  datagram to an unknown name, a datagram from another source address
  (127.0.0.2) to the relay port (the echo server sees nothing, the client
  nothing, and a canary datagram sent right after comes back: a relay
  that drops everything fails every such check);
- the client's UDP port: the DST.PORT given in the request, else the
  source port of the first datagram; replies go there, never to another
  port of the same address (whose datagrams may be dropped);
- two associations at once are independent;
- replies come only from addresses the client sent to (udp_replies
  "contacted", the default): a datagram from 127.0.0.2 to the relay's
  outward port is dropped while the contacted origin's reply arrives;
  with udp_replies = "any" both arrive, the stranger's header naming
  127.0.0.2;
- a lookup pending when the control connection closes, or timing out,
  harms nothing;
- when the control connection closes, the relay forwards nothing more;
- idle_timeout (2 s): datagrams keep an association alive past it; an
  idle one is ended (datagrams from a stranger are no activity, and are
  not forwarded); the same
  for a SOCKS5 tunnel, kept alive by talking, closed when idle (the proxy closes the control connection), and its
  relay forwards nothing more.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

IDLE = 2
SIZES = (1, 1200, 4096, 65000, 65507 - 10)


def roundtrip(a, host, port, data, want_host="127.0.0.1", timeout=None):
    """Sends <data> to host:port through association <a>; returns
    (ok, why)."""
    try:
        a.send(host, port, data)
    except OSError as e:
        return False, "send: %s" % ptest.err_kind(e)
    got = a.recv(timeout or ptest.bound(3))
    if got is None:
        return False, "no reply datagram within %.0f s" % ptest.bound(3)
    frag, h, p, d = got
    if frag != 0 or h != want_host or p != port or d != data:
        return False, "reply frag %r from %s:%s, %d bytes (equal %s)" % (
            frag, h, p, len(d), d == data)
    return True, None


def dropped(echo, before, a, wait=1.0, live=None):
    """(ok, why): the echo server saw no datagram since <before> and <a>
    got none within <wait> seconds, and yet a canary datagram sent right
    after through <live> (an association known to work; <a> itself when
    None) does come back, and is all the echo server sees: a relay that
    dropped everything must not pass for one that drops the right
    datagrams."""
    got = a.recv(wait)
    seen = echo.seen[before:]
    canary = b"canary " + os.urandom(8).hex().encode()
    ok, why = roundtrip(live or a, "127.0.0.1", echo.port, canary)
    after = echo.seen[before:]
    if got is not None or seen:
        return False, "not dropped: the client got %r, the echo server " \
            "saw %r" % (got, seen)
    if not ok:
        return False, "the canary sent after it did not come back: %s" % why
    if len(after) != 1 or after[0][1] != len(canary):
        return False, "the echo server saw %r, only the canary was due" % (
            after,)
    return True, None


def stranger_reply(t, a, mode):
    """An origin the client sent to, and a stranger (127.0.0.2) that
    learned the relay's outward port, both send to it: "contacted" lets
    only the origin's through, "any" both."""
    origin = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        origin.bind(("127.0.0.1", 0))
        stranger.bind(("127.0.0.2", 0))
        origin.settimeout(ptest.bound(3))
        oport = origin.getsockname()[1]
        a.send("127.0.0.1", oport, b"hello origin")
        try:
            _, outward = origin.recvfrom(100)
        except OSError as e:
            t.check(False, "udp_replies %s: the origin got the client's "
                    "datagram" % mode, ptest.err_kind(e))
            return
        # The stranger first: a relay that lets it through shows it
        # before the origin's reply.
        stranger.sendto(b"unsolicited", outward)
        time.sleep(0.05)
        origin.sendto(b"solicited", outward)
        got = []
        r = a.recv(ptest.bound(3))
        while r is not None and len(got) < 3:
            got.append((r[1], r[2], r[3]))
            r = a.recv(0.5)
        want = [("127.0.0.1", oport, b"solicited")]
        if mode == "any":
            want.insert(0, ("127.0.0.2", stranger.getsockname()[1],
                            b"unsolicited"))
        t.check(got == want, "udp_replies %s: %s" % (mode, (
            "the origin's reply arrives, a datagram from 127.0.0.2 to the "
            "relay's outward port does not" if mode == "contacted" else
            "the stranger's datagram (header naming 127.0.0.2) and the "
            "origin's reply both arrive")), "got %r" % (got,))
    finally:
        origin.close()
        stranger.close()


def main(t):
    echo = S.udp_echo(t)
    echo2 = S.udp_echo(t)
    echo6 = S.udp_echo(t, "::1") if ptest.have_ipv6() else None
    dns = H.dns_server(t, {"udp.test": {"A": ["127.0.0.1"]},
                           "silent.test": "drop"})
    port2 = ptest.free_port()
    port_any = ptest.free_port()
    more = [S.listener(port2, extra='udp_advertise = "127.0.0.3";'),
            S.listener(port_any, extra='udp_replies = "any";')]
    port6 = ptest.free_port("::1") if echo6 else None
    if port6:
        more.append(S.listener(port6, host="::1"))
    p, port = S.start(t, workers=2,
                      resolver={"servers": dns.address, "timeout": 1},
                      more_listeners=more)
    w0 = p.workers()

    a = S.Udp(port)
    t.check(a.ok() and a.reply.atyp == S.ATYP_V4 and
            a.reply.host == "127.0.0.1" and S.udp_port_bound(a.reply.port),
            "UDP ASSOCIATE: REP 0, BND.ADDR 127.0.0.1 (the listener's "
            "address), BND.PORT a bound UDP port",
            lambda: [a.describe()] + H.log_tail(p)())
    if not a.ok():
        a.close()
        H.finish(t, p, w0)
        return

    for n in SIZES:
        data = os.urandom(n)
        ok, why = roundtrip(a, "127.0.0.1", echo.port, data)
        t.check(ok, "%d bytes to 127.0.0.1:PORT and back, the header "
                "naming the echo server" % n, why)
    for name in ("udp.test", "localhost"):
        for n in (1, 4096, 65000):
            data = os.urandom(n)
            ok, why = roundtrip(a, name, echo.port, data)
            t.check(ok, "%d bytes to %s:PORT (a name) and back, the header "
                    "naming 127.0.0.1:PORT" % (n, name), why)
    if echo6:
        for n in (1, 4096):
            data = os.urandom(n)
            ok, why = roundtrip(a, "::1", echo6.port, data, want_host="::1")
            t.check(ok, "%d bytes to [::1]:PORT (ATYP 4) from an IPv4 "
                    "association and back, the header naming ::1" % n, why)
    else:
        t.skip("datagrams to [::1]", "no IPv6 loopback", need="ipv6")
    for dest in ("127.0.0.1", "udp.test"):
        msgs = [b"%03d." % i + os.urandom(1200) for i in range(40)]
        for m in msgs:
            a.send(dest, echo.port, m)
        got = []
        for _ in range(40):
            g = a.recv(ptest.bound(3))
            if g is None:
                break
            got.append(g[3])
        t.check(sorted(got) == msgs, "a burst of 40 datagrams of 1204 "
                "bytes to %s (more than one batch): all 40 come back exact"
                % dest, "got %d, %d of them sent" % (
                    len(got), len(set(got) & set(msgs))))
    d1, d2 = b"one" * 10, b"two" * 20
    a.send("127.0.0.1", echo.port, d1)
    a.send("127.0.0.1", echo2.port, d2)
    got = [a.recv(ptest.bound(3)), a.recv(ptest.bound(3))]
    want = sorted([(0, "127.0.0.1", echo.port, d1),
                   (0, "127.0.0.1", echo2.port, d2)])
    t.check(None not in got and sorted(got) == want,
            "two destinations on one association: each reply names its "
            "own source", "got %r" % ([g[:3] if g else g for g in got],))

    # dropped, the association goes on
    before = echo.count()
    a.send("127.0.0.1", echo.port, b"fragment", frag=1)
    ok, why = dropped(echo, before, a)
    t.check(ok, "a datagram with FRAG 1 is dropped (the echo server sees "
            "nothing, nor does the client; a datagram after it comes back)",
            why)
    before = echo.count()
    a.send("nx.test", echo.port, b"nowhere")
    ok, why = dropped(echo, before, a, 0.5)
    t.check(ok, "a datagram to an unknown name is dropped (one after it "
            "comes back)", why)
    foreign = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t.at_exit(foreign.close)
    try:
        foreign.bind(("127.0.0.2", 0))
        bound2 = True
    except OSError as e:
        bound2 = False
        t.diag("cannot bind 127.0.0.2: %s" % e)
    if bound2:
        before = echo.count()
        foreign.sendto(S.udp_header("127.0.0.1", echo.port) + b"intruder",
                       a.relay)
        foreign.settimeout(0.2)
        try:
            back = foreign.recvfrom(70000)
        except socket.timeout:
            back = None
        ok, why = dropped(echo, before, a)
        t.check(ok and back is None,
                "a datagram from 127.0.0.2 (not the control connection's "
                "address) to the relay is dropped (one from the client "
                "after it comes back)",
                "%s; 127.0.0.2 got %r" % (why, back))
    else:
        t.skip("a datagram from another address is dropped",
               "cannot bind 127.0.0.2", need="127.0.0.2")
    before = echo.count()
    for junk in (b"\x00\x00\x00",                       # no ATYP
                 b"\x00\x01\x00" + S.addr_bytes("127.0.0.1", echo.port)
                 + b"rsv",                                 # RSV != 0
                 b"\x00\x00\x00\x09\x7f\x00\x00\x01\x00\x50x",  # ATYP 9
                 b"\x00\x00\x00\x01\x7f\x00"):           # short IPv4
        a.send_raw(junk)
    ok, why = dropped(echo, before, a, 0.5)
    t.check(ok, "malformed datagrams (no ATYP, RSV != 0, ATYP 9, a short "
            "address) are dropped (one after them comes back)", why)
    ok, why = roundtrip(a, "127.0.0.1", echo.port, b"after the drops")
    t.check(ok, "the association still works after the drops", why)

    # the first datagram fixed the client's port: a datagram from another
    # port of ours is dropped or answered to the first port, never to the
    # other one
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other.bind(("127.0.0.1", 0))
    other.settimeout(0.2)
    t.at_exit(other.close)
    a.send("127.0.0.1", echo.port, b"from another port", sock=other)
    got = a.recv(1.0)
    try:
        stray = other.recvfrom(70000)
    except socket.timeout:
        stray = None
    ok, why = roundtrip(a, "127.0.0.1", echo.port, b"first port again")
    t.check(stray is None and (got is None or
                               got[3] == b"from another port") and ok,
            "the first datagram fixed the client's port: a datagram from "
            "another local port gets no reply at that port, and the first "
            "port still gets its replies",
            "the other port got %r, the first %r; then %s" % (
                stray, got, why or "the first port works"))

    # DST.PORT in the request fixes the port before any datagram
    fixed = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    fixed.bind(("127.0.0.1", 0))
    b = S.Udp(port, dst=("127.0.0.1", fixed.getsockname()[1]), sock=fixed)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.bind(("127.0.0.1", 0))
    sender.settimeout(0.2)
    t.at_exit(sender.close)
    got = stray = None
    if b.ok():
        b.send("127.0.0.1", echo.port, b"not the announced port",
               sock=sender)
        got = b.recv(1.0)
        try:
            stray = sender.recvfrom(70000)
        except socket.timeout:
            stray = None
    ok, why = roundtrip(b, "127.0.0.1", echo.port, b"announced port") \
        if b.ok() else (False, b.describe())
    t.check(b.ok() and stray is None and (
        got is None or got[3] == b"not the announced port") and ok,
        "DST.PORT given in the request: a datagram from another port gets "
        "no reply at that port (the announced one gets its replies)",
        "%s; that port got %r, the announced one %r; then %s" % (
            b.describe(), stray, got, why or "the announced port works"))
    t.check(ok, "DST.PORT given in the request: datagrams from that port "
            "are relayed and answered there", why)
    t.check(b.ok() and b.relay != a.relay, "two associations at once "
            "have their own relay ports", "%r and %r" % (a.relay, b.relay))
    ok, why = roundtrip(a, "127.0.0.1", echo2.port, b"first association")
    ok2, why2 = roundtrip(b, "127.0.0.1", echo2.port, b"second one")
    t.check(ok and ok2, "both associations relay at the same time",
            "%s / %s" % (why, why2))
    b.close()

    stranger_reply(t, a, "contacted")
    c = S.Udp(port_any)
    if c.ok():
        stranger_reply(t, c, "any")
    else:
        t.check(False, "udp_replies \"any\": an association", c.describe())
    c.close()

    # udp_advertise
    c = S.Udp(port2)
    ok, why = False, c.describe()
    if c.ok():
        c.send("127.0.0.1", echo.port, b"advertised",
               relay=("127.0.0.1", c.reply.port))
        got = c.recv(ptest.bound(3))
        ok = got is not None and got[3] == b"advertised"
        why = "got %r" % (got,)
    t.check(c.ok() and c.reply.host == "127.0.0.3",
            "udp_advertise = \"127.0.0.3\": the reply's BND.ADDR is "
            "127.0.0.3", c.describe())
    t.check(ok, "udp_advertise: the relay (bound on the listener's "
            "address) relays at the advertised port", why)
    c.close()

    # names that never resolve (the DNS server stays silent): the control
    # connection closes while a lookup is pending, or the lookup times
    # out (resolver timeout 1 s) under a live association; both leave the
    # worker well
    c1 = S.Udp(port)
    if c1.ok():
        c1.send("silent.test", echo.port, b"pending at close")
    c1.close()
    c2 = S.Udp(port)
    if c2.ok():
        c2.send("silent.test", echo.port, b"pending, then timed out")
        c2.send("silent.test", echo.port, b"a second one while pending")
    time.sleep(1.5)
    ok, why = roundtrip(c2, "udp.test", echo.port, b"after the timeout") \
        if c2.ok() else (False, c2.describe())
    c2.close()
    c3 = S.Udp(port)
    ok3, why3 = roundtrip(c3, "127.0.0.1", echo.port, b"fresh") \
        if c3.ok() else (False, c3.describe())
    c3.close()
    t.check(ok and ok3 and p.workers() == w0, "a name lookup pending when "
            "the control connection closes, and one that times out: the "
            "association goes on, a new one works, no worker died",
            lambda: ["%s / %s; workers %s, were %s" % (
                why, why3, p.workers(), w0)] + H.log_tail(p)())

    # an IPv6 listener: the relay is on ::1
    if port6:
        ctl6 = S.Client.to(port6, host="::1")
        u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        u6.bind(("::1", 0))
        a6 = S.Udp(port6, sock=u6, ctl=ctl6)
        ok, why = (False, a6.describe())
        if a6.ok():
            ok, why = roundtrip(a6, "::1", echo6.port, b"v6 all the way",
                                want_host="::1")
        t.check(a6.ok() and a6.reply.host == "::1" and ok,
                "a listener on [::1]: BND.ADDR ::1, datagrams from ::1 to "
                "an IPv6 echo server and back", "%s; %s" % (
                    a6.describe(), why))
        a6.close()
    else:
        t.skip("an IPv6 listener relays UDP", "no IPv6 loopback",
               need="ipv6")

    # the control connection closes: the relay forwards nothing more
    relay = a.relay
    a.ctl.close()
    time.sleep(0.5)
    before = echo.count()
    a.send("127.0.0.1", echo.port, b"after the end", relay=relay)
    live = S.Udp(port)
    ok, why = dropped(echo, before, a, live=live) if live.ok() else (
        False, live.describe())
    live.close()
    t.check(ok, "after the control connection closed, a datagram to the "
            "old relay port is not forwarded (one through a new association "
            "is)", why)
    unbound = ptest.wait_for(lambda: not S.udp_port_bound(relay[1]),
                             ptest.bound(3))
    t.check(unbound, "after the control connection closed, the relay "
            "port is released", "UDP port %d still bound" % relay[1])
    a.close()
    H.finish(t, p, w0)

    # idle_timeout
    p, port = S.start(t, conf_name="idle.conf", workers=1,
                      limits={"idle_timeout": IDLE})
    w0 = p.workers()
    a = S.Udp(port)
    tcp_echo = t.echo_server()
    r, tun = S.connect5(port, "127.0.0.1", tcp_echo.port)
    t.at_exit(tun.close)
    tbad = [] if S.ok5(r) else ["CONNECT: %r" % (r,)]
    bad = []
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < IDLE * 1.75 and i < 50:
        i += 1
        if not tbad:
            ok, why = S.echo_check(tun, b"ping %d" % i)
            if not ok:
                tbad.append("%d after %.1f s: %s" % (
                    i, time.monotonic() - t0, why))
        ts = time.monotonic()
        ok, why = roundtrip(a, "127.0.0.1", echo.port, b"keepalive %d" % i)
        if not ok:
            seen = [(x - ts, n) for x, (_, n, _) in
                    zip(echo.times, echo.seen) if x >= ts]
            bad.append("%d after %.1f s: %s; the echo server saw %s "
                       "(seconds after the send, bytes)" % (
                           i, time.monotonic() - t0, why, seen))
            break
        time.sleep(0.4)
    data, how = H.outcome(a.ctl, 0.01) if a.ok() else (b"", "?")
    t.check(a.ok() and not bad and how == "timeout",
            "datagrams every 0.4 s keep an association alive past "
            "idle_timeout (%d s)" % IDLE, lambda: [a.describe()] + bad +
            ["control connection: %s" % how])
    t.check(not tbad, "a SOCKS5 tunnel that talks every 0.4 s outlives "
            "idle_timeout", tbad)
    # a stranger keeps sending to the relay port: that is no activity
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t.at_exit(stranger.close)
    try:
        stranger.bind(("127.0.0.2", 0))
    except OSError as e:
        stranger = None
        t.diag("cannot bind 127.0.0.2: %s" % e)
    stop = threading.Event()
    t.at_exit(stop.set)
    pestered = []       # (bytes sent) or an error name, per datagram
    echo_before = echo.count()

    def pester():
        for _ in range(100):
            if stop.wait(0.3):
                return
            try:
                pestered.append(stranger.sendto(
                    S.udp_header("127.0.0.1", echo.port) + b"stranger",
                    a.relay))
            except OSError as e:
                pestered.append(ptest.err_kind(e))
    th = threading.Thread(target=pester, daemon=True)
    if a.ok() and stranger is not None:
        th.start()
    t_idle = time.monotonic()
    data, how = H.outcome(a.ctl, IDLE + ptest.bound(4))
    stop.set()
    dt = time.monotonic() - t_idle
    if th.is_alive():
        th.join(1)
    t.check(S.closes(how) and 1.0 <= dt <= IDLE + ptest.bound(3),
            "an idle association is ended after idle_timeout%s: the proxy "
            "closes the control connection" % (
                " (a stranger at 127.0.0.2 sending to the relay every 0.3 s "
                "does not keep it alive)" if stranger else ""),
            "%s after %.1f s (read %r)" % (how, dt, data[:20]))
    if stranger is not None:
        strays = echo.seen[echo_before:]    # the client sent nothing
        sent = [x for x in pestered if isinstance(x, int)]
        t.check(len(sent) >= 3 and len(sent) == len(pestered) and
                not strays,
                "the stranger's datagrams went to the relay port (%d, no "
                "send error) and none was forwarded" % len(sent),
                "sends %r; the echo server saw %r" % (pestered, strays))
    else:
        t.skip("a stranger at 127.0.0.2 does not keep an association "
               "alive", "cannot bind 127.0.0.2", need="127.0.0.2")
    tdata, thow = H.outcome(tun, max(0.5, IDLE + ptest.bound(4) - dt))
    dt2 = time.monotonic() - t_idle
    t.check(S.closes(thow) and 1.0 <= dt2 <= IDLE + ptest.bound(3),
            "an idle SOCKS5 tunnel is closed after idle_timeout",
            "%s after %.1f s (read %r)" % (thow, dt2, tdata[:20]))
    before = echo.count()
    a.send("127.0.0.1", echo.port, b"after idle")
    live = S.Udp(port)
    ok, why = dropped(echo, before, a, live=live) if live.ok() else (
        False, live.describe())
    live.close()
    t.check(ok, "the ended association forwards nothing more (a new one "
            "does)", why)
    a.close()
    H.finish(t, p, w0, "idle: ")


if __name__ == "__main__":
    ptest.Test("socks_udp").run(main)
