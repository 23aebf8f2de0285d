#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A destination host means the same bytes to the ACL, the resolver and the
connect (worker/host.c), through every protocol that names one: SOCKS5
CONNECT, SOCKS4a, SOCKS5 UDP, HTTP absolute-form and CONNECT. The real
acl module (deny host "blocked.test", ".sfx.test", dst 127.0.0.3) with
the fieldrec test module after it, which writes the host each judged
transaction or datagram had (hosthex=), and a DNS server of the test's
own on loopback that keeps every question's labels as they came. All
in a network namespace of the test's own with only loopback up, so a
host misread as a public address sends nothing anywhere.

- Differential: every byte value in every position of "ab.cd", through
  all five: either the name is refused (400, SOCKS5 0x04, SOCKS4 0x5B, a
  datagram dropped) before any module sees it, or every question the DNS
  server received is exactly, label for label, a name a module judged;
  and every judged name is already in its one form (lower case, only
  letters, digits, '-', '_' and single dots, no final dot);
- the bypass as an attacker sent it: "bl\\ocked.test", "www.sf\\x.test",
  "BLOCKED.test." through all five: refused or denied, and the DNS never
  asked for blocked.test nor www.sfx.test, the origin never reached;
- numbers: "0177.0.0.2", "0x7f.0.0.2", "2130706434", "127.2" are judged
  and connected to as 127.0.0.2 (an origin there answers), never asked of
  the DNS (a UDP datagram to "0177.0.0.2" too); "0177.0.0.3" is denied
  by the rule on 127.0.0.3/32; numbers
  that are no address ("1.2.3.4.5", "foo.123", "08.0.0.1", "4294967296")
  are refused.
"""
import os
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import acltest as ACL  # noqa: E402
import sockstest as S  # noqa: E402

NAME_RX = re.compile(rb"^[a-z0-9_-]+(\.[a-z0-9_-]+)*\Z")
PROTOS = ("socks5", "socks4a", "udp", "http", "connect")


def recv_some(s, timeout, whole=None):
    """What <s> sends until it closes, <timeout> passes, an HTTP head has
    come, or (with <whole>) <whole> bytes have: a SOCKS reply granting a
    tunnel is followed by nothing, and waiting out <timeout> after it cost
    5 s a tunnel (15 s under the sanitizers)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            d = s.recv(4096)
            if not d:
                break
            data += d
            if b"\r\n\r\n" in data or (whole and len(data) >= whole):
                break
    except OSError:
        pass
    return data


class Driver:
    """One attempt per call: the proxy's answer, reduced to a word."""

    def __init__(self, px):
        self.px = px
        self.udp = None

    @staticmethod
    def _talk(port, talk):
        """<talk>(socket) on a new connection to <port>: its word for the
        answer, or "error ..." when the connection failed."""
        s = ptest.connect(port, timeout=ptest.bound(5))
        try:
            return talk(s)
        except OSError as e:
            return "error %s" % e
        finally:
            s.close()

    def socks5(self, name, port):
        def talk(s):
            s.sendall(b"\x05\x01\x00")
            if ptest.recv_exact(s, 2) != b"\x05\x00":
                return "no method"
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name +
                      struct.pack("!H", port))
            r = recv_some(s, ptest.bound(5), 10)     # IPv4 BND.ADDR
            return "rep %d" % r[1] if len(r) >= 2 else "closed"
        return self._talk(self.px.sport, talk)

    def socks4a(self, name, port):
        def talk(s):
            s.sendall(b"\x04\x01" + struct.pack("!H", port) +
                      b"\x00\x00\x00\x01u\x00" + name + b"\x00")
            r = recv_some(s, ptest.bound(5), 8)
            return "cd %d" % r[1] if len(r) >= 2 else "closed"
        return self._talk(self.px.sport, talk)

    def http(self, name, port):
        return self._http(b"GET http://%s:%d/hn HTTP/1.1\r\nHost: h.test\r\n"
                          b"Connection: close\r\n\r\n" % (name, port))

    def connect(self, name, port):
        return self._http(b"CONNECT %s:%d HTTP/1.1\r\nHost: h.test\r\n\r\n"
                          % (name, port))

    def _http(self, req):
        def talk(s):
            s.sendall(req)
            m = re.match(rb"HTTP/1\.1 (\d{3})", recv_some(s, ptest.bound(5)))
            return "status %s" % m.group(1).decode() if m else "closed"
        return self._talk(self.px.port, talk)

    def udp_send(self, name, port):
        """A datagram to <name>:<port> on one association (no answer is
        awaited: a name that resolves nowhere gets none)."""
        if self.udp is None:
            self.udp_ctl = ptest.connect(self.px.sport,
                                         timeout=ptest.bound(5))
            self.udp_ctl.sendall(b"\x05\x01\x00")
            ptest.recv_exact(self.udp_ctl, 2)
            self.udp_ctl.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")
            r = ptest.recv_exact(self.udp_ctl, 10)
            self.relay = (socket.inet_ntoa(r[4:8]),
                          struct.unpack("!H", r[8:10])[0])
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind(("127.0.0.1", 0))
        self.udp.sendto(b"\x00\x00\x00\x03" + bytes([len(name)]) + name +
                        struct.pack("!H", port) + b"hn", self.relay)
        return "sent"

    def attempt(self, proto, name, port):
        if proto == "udp":
            return self.udp_send(name, port)
        return getattr(self, proto)(name, port)

    def close(self):
        if self.udp is not None:
            self.udp.close()
            self.udp_ctl.close()
            self.udp = None


class Proxy:
    def __init__(self, t, port, sport, p, rec):
        self.t, self.port, self.sport, self.p, self.rec = \
            t, port, sport, p, rec

    def judged(self):
        """[(phase, host bytes)] of every ACCESS and DATAGRAM line."""
        try:
            with open(self.rec) as f:
                text = f.read()
        except OSError:
            return []
        out = []
        for m in re.finditer(r"^(ACCESS|DATAGRAM) .* hosthex=(\S+) ",
                             text, re.M):
            out.append((m.group(1), b"" if m.group(2) == "-" else
                        bytes.fromhex(m.group(2))))
        return out


def differential(t, px, dns):
    d = Driver(px)
    outcomes = {p: {} for p in PROTOS}
    t0 = time.monotonic()
    for proto in PROTOS:
        for pos in range(5):
            for b in range(256):
                name = bytearray(b"ab.cd")
                name[pos] = b
                if proto == "socks4a" and b == 0:
                    continue        # SOCKS4a cannot carry a NUL
                w = d.attempt(proto, bytes(name), 9)
                outcomes[proto][w] = outcomes[proto].get(w, 0) + 1
    # UDP names are judged as datagrams arrive: wait for the last one.
    ptest.wait_for(lambda: px.judged() and any(
        ph == "DATAGRAM" and h == b"ab.c_" for ph, h in px.judged()),
        ptest.bound(5))
    d.close()
    t.diag("differential: %.1f s, outcomes %r" % (time.monotonic() - t0,
                                                   outcomes))
    judged = px.judged()
    names = {h for _, h in judged if not re.match(rb"^[0-9.:]+$", h)}
    bad = sorted(h for h in names if not NAME_RX.match(h) or len(h) > 253)
    t.check(names and not bad, "differential: every name a module judged "
            "(%d) is in its one form: lower case, letters, digits, '-', "
            "'_', single dots, no final dot" % len(names), bad[:10])
    with dns.lock:
        raw = list(dns.raw_queries)
    split = {tuple(h.split(b".")) for h in names}
    strays = sorted({q for q in raw if q not in split})
    t.check(raw and not strays, "differential: every question the DNS "
            "server got (%d) is, label for label, a name a module judged "
            "(nothing reread between the ACL and the resolver)" % len(raw),
            strays[:10])
    # What should have gone through: a byte a label may hold (letters
    # folded), or a dot that leaves no label empty; in a URI the host
    # also ends at '/', '?' or '#' ("http://a/.cd" is host "a").
    want = set()
    for pos in range(5):
        for b in range(256):
            name = bytearray(b"ab.cd")
            name[pos] = b
            low = bytes(name).lower()
            for cand in (low, re.split(rb"[/?#]", low)[0]):
                if re.match(rb"^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?\Z", cand):
                    want.add(cand.rstrip(b"."))
    t.check(names == want, "differential: exactly the variants that are "
            "names reached a module (%d), each as its one form; every "
            "other was refused first" % len(want),
            (sorted(names - want)[:10], sorted(want - names)[:10]))
    refused_words = {"socks5": "rep 4", "socks4a": "cd 91",
                     "http": "status 400", "connect": "status 400"}
    for proto, word in refused_words.items():
        t.check(outcomes[proto].get(word, 0) > 0, "differential: %s "
                "refuses a name that is no host with %s" % (proto, word),
                outcomes[proto])


def bypass(t, px, dns, origin):
    d = Driver(px)
    before = len(origin.requests)
    results = {}
    for name in (b"bl\\ocked.test", b"www.sf\\x.test", b"BLOCKED.test.",
                 b"bl\\111cked.test", b"blocked\\.test"):
        for proto in PROTOS:
            results[(proto, name)] = d.attempt(proto, name, origin.port)
    time.sleep(0.2)
    d.close()
    ok_words = {"rep 4", "rep 2", "cd 91", "status 400", "status 403",
                "sent"}
    wrong = {k: v for k, v in results.items() if v not in ok_words}
    t.check(not wrong, "bypass: backslashed and case-folded names of "
            "denied hosts are refused or denied through all five", wrong)
    with dns.lock:
        asked = [q for q in dns.raw_queries
                 if q in ((b"blocked", b"test"), (b"www", b"sfx", b"test"))]
    t.check(not asked, "bypass: the DNS was never asked for blocked.test "
            "or www.sfx.test", asked)
    t.check(len(origin.requests) == before, "bypass: the origin behind "
            "blocked.test was never reached", origin.requests[before:])
    den = [h for ph, h in px.judged() if h in (b"blocked.test",)]
    t.check(den, "bypass: \"BLOCKED.test.\" was judged as blocked.test "
            "(and denied)", px.judged()[-5:])


def numbers(t, px, dns, o2):
    d = Driver(px)
    with dns.lock:
        nq = len(dns.raw_queries)
    nj = len(px.judged())
    res = {}
    for name in (b"0177.0.0.2", b"0x7f.0.0.2", b"2130706434", b"127.2",
                 b"0177.0.0.2."):
        for proto in ("socks5", "socks4a", "http", "connect"):
            res[(proto, name)] = d.attempt(proto, name, o2.port)
    want = {"socks5": "rep 0", "socks4a": "cd 90", "http": "status 200",
            "connect": "status 200"}
    wrong = {k: v for k, v in res.items() if v != want[k[0]]}
    t.check(not wrong, "numbers: 0177.0.0.2, 0x7f.0.0.2, 2130706434, "
            "127.2 reach 127.0.0.2 (its origin answers) through SOCKS5, "
            "SOCKS4a, HTTP and CONNECT", wrong)
    judged = [h for _, h in px.judged()[nj:]]
    t.check(b"127.0.0.2" in judged and not any(h.startswith(b"0") or
                                              h == b"127.2" for h in judged),
            "numbers: the ACL judged them as 127.0.0.2, never in the form "
            "sent", sorted(set(judged))[-8:])
    deny = {p: d.attempt(p, b"0177.0.0.3", o2.port)
            for p in ("socks5", "socks4a", "http", "connect")}
    t.check(deny == {"socks5": "rep 2", "socks4a": "cd 91",
                     "http": "status 403", "connect": "status 403"},
            "numbers: 0177.0.0.3 is denied by the rule on 127.0.0.3/32",
            deny)
    refused = {}
    for name in (b"1.2.3.4.5", b"foo.123", b"08.0.0.1", b"4294967296",
                 b"1..2", b"0x100000000"):
        for p in ("socks5", "socks4a", "http", "connect"):
            refused[(p, name)] = d.attempt(p, name, o2.port)
    bad = {k: v for k, v in refused.items() if v not in
           ("rep 4", "cd 91", "status 400")}
    t.check(not bad, "numbers: forms that are no address are refused "
            "(0x04, 0x5B, 400)", bad)
    # A datagram to "0177.0.0.2" goes to 127.0.0.2: its echo comes back
    # from there.
    echo = S.udp_echo(t, "127.0.0.2")
    d.udp_send(b"0177.0.0.2", echo.port)
    d.udp.settimeout(ptest.bound(5))
    try:
        dg = d.udp.recv(2048)
    except OSError as e:
        dg = repr(e)
    t.check(echo.count() == 1 and isinstance(dg, bytes) and
            dg.startswith(b"\x00\x00\x00\x01\x7f\x00\x00\x02") and
            dg.endswith(b"hn"), "numbers: a UDP datagram to 0177.0.0.2 "
            "reaches 127.0.0.2 and its answer comes back from there", dg)
    d.close()
    with dns.lock:
        later = dns.raw_queries[nq:]
    t.check(not later, "numbers: none was asked of the DNS", later)


def main(t):
    # On a bug, "0177.0.0.2" went to 177.0.0.2: here nothing can leave.
    why = ptest.private_netns()
    if why:
        t.skip("destination names", why, need="netns")
        return
    why = ACL.missing()
    if why:
        t.skip("destination names", why)
        return
    if not ACL.have_fieldrec():
        t.skip("destination names", "fieldrec.so not built")
        return
    if not ACL.can_bind("127.0.0.2"):
        t.skip("destination names", "cannot bind 127.0.0.2",
               need="127.0.0.2")
        return
    origin = H.origin(t)
    o2 = H.origin(t, "127.0.0.2")
    dns = H.dns_server(t, {"blocked.test": {"A": ["127.0.0.1"]},
                           "www.sfx.test": {"A": ["127.0.0.1"]}})
    port, sport = ptest.free_port(), ptest.free_port()
    rec = t.path("fieldrec.rec")
    acl = ACL.acl_entry(rules=[
        {"action": "deny", "host": ["blocked.test", ".sfx.test"]},
        {"action": "deny", "dst": ["127.0.0.3/32"]}],
        default="allow", allow_private=True)
    p = ACL.start(t, [ACL.http_listener("web", port),
                      ACL.socks_listener("socks", sport)],
                  [acl, ACL.fieldrec_entry(rec)], dns=dns)
    px = Proxy(t, port, sport, p, rec)
    differential(t, px, dns)
    bypass(t, px, dns, origin)
    numbers(t, px, dns, o2)
    t.check(p.workers(), "the worker lived through it all")
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("host_names").run(main)
