#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Listeners behind a balancer: `proxy_protocol = { from = [ ... ]; }` and
HAProxy's PROXY protocol (v1 and v2), driven by raw-socket clients that
play the balancer, in a network namespace of the test's own (the
addresses a header names, 192.0.2.0/24 and 2001:db8::/32, are only data:
no packet could reach them even if portico tried). One portico, two
workers, with HTTP listeners (one on [::1]), a TLS listener and a SOCKS5
listener expecting a header, one expecting it only from 127.0.0.2, one
without proxy_protocol, a status listener for /metrics, the accesslog
module (JSON), and the acl module when it is built.

- served, each with an HTTP request through the proxy to a loopback
  origin, in one write with the header and byte by byte: v1 TCP4, TCP6;
  v2 PROXY INET, INET6; v2 with AUTHORITY, UNIQUE_ID and a right CRC32C;
  v2 with TLVs to skip (ALPN, NOOP, SSL with sub-TLVs, NETNS, a custom
  one); a header in five pieces over a second; two requests on one
  keep-alive connection; a v1 line of exactly 107 bytes; a v2 header of
  exactly 2048. The JSON access log has client and client_port = the
  header's source, balancer and balancer_port = the test's socket,
  proxy_authority and proxy_unique_id when those TLVs came;
- v1 UNKNOWN (short and long), v2 LOCAL (empty, and with an address
  block that must be skipped whole), v2 PROXY UNSPEC: served with the
  connection's own endpoints: client 127.0.0.1, no balancer field;
- the listener on [::1] (from ::1/128): balancer "::1"; the listener
  whose from is 127.0.0.2/32, from 127.0.0.2: balancer 127.0.0.2; the
  listener without proxy_protocol: no balancer fields, and
  a PROXY line sent there is not taken for a header (the origin never
  sees the request after it);
- refused, the connection closed without one byte answered, each
  reason's /metrics counter moved by exactly the number of cases (and no
  other reason's, nor the headers'): source (a listener whose from is
  127.0.0.2/32, from 127.0.0.1; the main listener from 127.0.0.2),
  signature (no header: a plain GET, an absolute-form GET, a leading
  CRLF, a lower-case "proxy", a v2 signature one byte off, a TLS
  ClientHello, a SOCKS5 greeting), malformed (v1: double space, bad
  address, port 65536, lone LF, lone CR, unknown protocol, a missing
  field, a family mismatch, a bad port; v2: versions 1 and 3, command 2,
  DGRAM, an unknown family, short address blocks, a truncated TLV),
  too_long (v1 without CRLF in 107 bytes, at once and byte by byte, a
  108-byte line; v2 of 2049 bytes, and one whose length field says
  65535), crc (a wrong CRC32C, and a byte changed after it was
  computed), closed (EOF inside a v1 line, a v2 header, the v1 and v2
  signatures; a reset inside a header), timeout (nothing sent, half a v1
  line, half a v2 header, and a byte every 0.4 s that never ends the
  line: the bound is on the whole header, not on silence); a connection
  closed before its first byte counts as closed;
- the error log names "proxy protocol" and the reason (the first
  refusal at least: later ones may be rate-limited);
- acl (when built): a rule denying src 192.0.2.66/32 answers 403 to a
  request whose header names 192.0.2.66 (v1 and v2), not to 192.0.2.10;
  a rule denying src 127.0.0.1/32 for DELETE does not match a header
  naming 192.0.2.10 over a connection from 127.0.0.1, and matches
  UNKNOWN's (the real endpoints');
- TLS (tls.so and openssl): a v2 header, then the TLS handshake and an
  HTTPS-proxy request (the header and the ClientHello in separate
  writes, and in one write), and a v1 header byte by byte; logged with
  the header's client on listener tls;
- SOCKS5: a header naming 127.0.0.2, then UDP ASSOCIATE: datagrams from
  127.0.0.2 (the header's client) are relayed to a UDP echo origin and
  back; datagrams from 127.0.0.1 (the balancer's address) are not, before
  or after the first good one; the access log's socks records name
  client 127.0.0.2 and balancer 127.0.0.1.
"""
import os
import shutil
import socket
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import accesslogtest as AL  # noqa: E402
import acltest as ACL  # noqa: E402
import tlstest as TL  # noqa: E402
import proxytest as PP  # noqa: E402

FROM = '[ "127.0.0.1/32", "::1/128" ]'
ABSENT = object()       # a key that must be absent or null


class Env:
    """What every part of the scenario needs: ports, the origin, the log."""

    def __init__(self, t):
        self.t = t
        self.tags = 0
        self.v1 = 0             # headers each part made the proxy accept
        self.v2 = 0

    def tag(self):
        self.tags += 1
        return "pp%03d" % self.tags

    def url(self, tag):
        return "http://127.0.0.1:%d/len?n=5&t=%s" % (self.origin.port, tag)

    def records(self, tag, n=1):
        """The access log's records of <tag> (waits, bounded, for n)."""
        def mine(rs):
            return [r for r in rs if "t=%s" % tag in (r.get("target") or "")]
        rs = AL.wait_json(self.jlog, lambda rs: len(mine(rs)) >= n)
        return mine(rs)


def conf(env, tls, acl):
    pp = "proxy_protocol = { from = %s; };" % FROM
    ls = ['  { name = "pp"; address = "127.0.0.1:%d"; protocol = "http"; %s }'
          % (env.pp, pp),
          '  { name = "only2"; address = "127.0.0.1:%d"; protocol = "http"; '
          'proxy_protocol = { from = [ "127.0.0.2/32" ]; }; }' % env.only2,
          '  { name = "plain"; address = "127.0.0.1:%d"; protocol = "http"; }'
          % env.plain,
          '  { name = "socks"; address = "127.0.0.1:%d"; protocol = "socks5";'
          ' %s }' % (env.socks, pp),
          '  { name = "stat"; address = "127.0.0.1:%d"; protocol = "status"; }'
          % env.stat]
    if env.pp6:
        ls.append('  { name = "pp6"; address = "[::1]:%d"; protocol = "http";'
                  ' %s }' % (env.pp6, pp))
    mods = [AL.module(['file = "%s"; format = "json";' % env.jlog])]
    if tls:
        ls.append('  { name = "tls"; address = "127.0.0.1:%d"; '
                  'protocol = "http"; transport = "tls";\n    tls = { '
                  'certificate = "%s"; key = "%s"; }; %s }'
                  % (env.tls, tls[0], tls[1], pp))
        mods.append('{ name = "tls"; path = "%s"; }' % TL.TLS_SO)
    if acl:
        mods.append(ACL.acl_entry([
            dict(name="bad-client", action="deny", src=["192.0.2.66/32"]),
            dict(name="real-peer", action="deny", src=["127.0.0.1/32"],
                 method=["DELETE"])], default="allow", allow_private=True))
    return """workers = 2;
error_log = "%s/error.log";
log_level = "info";
pid_file = "%s/portico.pid";
shutdown_timeout = 5;
limits = { header_timeout = %d; connect_timeout = 5; idle_timeout = 30; };
http = { connect_ports = "*"; };
listeners = (
%s
);
modules = (
  %s
);
""" % (env.t.tmp, env.t.tmp, env.ht, ",\n".join(ls), ",\n  ".join(mods))


# ---------------------------------------------------------------------------
# served

def diff(r, want):
    """{key: (got, wanted)} of the record's fields that differ."""
    out = {}
    for k, v in want.items():
        if v is ABSENT:
            if r.get(k) is not None:
                out[k] = (r.get(k), "absent or null")
        elif k not in r:
            out[k] = ("absent", v)
        elif r[k] != v:
            out[k] = (r[k], v)
    return out


def served(env, desc, port, header, how, client=None, version=None,
           listener="pp", host="127.0.0.1", src=None, authority=ABSENT,
           unique_id=ABSENT, status=200, method="GET", more=0):
    """<header> then a request (and <more> on the same connection): each
    answered <status> (the origin saw it when 200), and logged on
    <listener> with client (address, port) = <client>, or the socket's
    own without balancer fields when <client> is None (UNKNOWN, LOCAL,
    UNSPEC, no proxy_protocol)."""
    t = env.t
    tags = [env.tag() for _ in range(1 + more)]
    resps, local = PP.http_after(port, header, env.url(tags[0]), how, src,
                                 host, method,
                                 [env.url(x) for x in tags[1:]])
    if version == 1:
        env.v1 += 1
    elif version == 2:
        env.v2 += 1
    sts = [r.status if isinstance(r, H.Resp) else r for r in resps]
    seen = [len(env.origin.reqs_for("t=%s" % x)) for x in tags]
    ok = sts == [status] * len(tags) and \
        seen == [1 if status == 200 else 0] * len(tags)
    if client is None:
        want = dict(client=local[0], client_port=local[1], balancer=ABSENT,
                    balancer_port=ABSENT)
    else:
        want = dict(client=client[0], client_port=client[1],
                    balancer=local[0], balancer_port=local[1])
    want.update(listener=listener, status=status, method=method,
                proxy_authority=authority, proxy_unique_id=unique_id)
    recs = [env.records(x) if ok else [] for x in tags]
    diffs = [diff(rs[0], want) if len(rs) == 1 else "%d records" % len(rs)
             for rs in recs]
    ok = ok and not any(diffs)
    return t.check(ok, "%s: %s%s, logged with client %s, balancer %s" % (
        desc, "answered %d" % status, " (%d requests)" % len(tags)
        if more else "", "%s:PORT" % client[0] if client else
        "= the connection's peer", "= the socket's address and port" if
        client else "null"),
        lambda: ["statuses %s (want %d), the origin saw %s" % (
            sts, status, seen), "header %r" % header[:120],
            "differs (got, want): %s" % diffs] +
        [x for r in resps for x in H.describe(r)][:20] +
        ["records: %s" % recs] + H.log_tail(env.p, 12)())


def serving(env):
    t = env.t
    p = env.pp
    before = PP.counts(env.stat)
    v1 = PP.v1
    # v1
    served(env, "v1 TCP4 in the same write as the request", p,
           v1("TCP4", "192.0.2.10", "198.51.100.1", 40001, 3128), "whole",
           ("192.0.2.10", 40001), 1)
    served(env, "v1 TCP4 byte by byte", p,
           v1("TCP4", "192.0.2.10", "198.51.100.1", 40002, 3128), "bytes",
           ("192.0.2.10", 40002), 1)
    served(env, "v1 TCP6 in one write", p,
           v1("TCP6", "2001:db8::7", "2001:db8::1", 40003, 3128), "whole",
           ("2001:db8::7", 40003), 1)
    served(env, "v1 TCP6 byte by byte", p,
           v1("TCP6", "2001:db8::7", "2001:db8::1", 40004, 3128), "bytes",
           ("2001:db8::7", 40004), 1)
    served(env, "v1 TCP4 in five pieces over a second", p,
           v1("TCP4", "192.0.2.10", "198.51.100.1", 40005, 3128),
           [(6, 0), (5, 0.25), (11, 0.25), (13, 0.25), (3, 0.25)],
           ("192.0.2.10", 40005), 1)
    served(env, "v1 TCP4, two requests on the keep-alive connection after "
           "it", p, v1("TCP4", "192.0.2.12", "198.51.100.1", 40006, 3128),
           "whole", ("192.0.2.12", 40006), 1, more=1)
    # v2
    served(env, "v2 PROXY INET in the same write as the request", p,
           PP.v2(src="192.0.2.10", dst="198.51.100.1", sport=40011,
                 dport=3128), "whole", ("192.0.2.10", 40011), 2)
    served(env, "v2 PROXY INET byte by byte", p,
           PP.v2(src="192.0.2.10", dst="198.51.100.1", sport=40012,
                 dport=3128), "bytes", ("192.0.2.10", 40012), 2)
    served(env, "v2 PROXY INET6 in one write", p,
           PP.v2(src="2001:db8::7", dst="2001:db8::1", sport=40013,
                 dport=3128), "whole", ("2001:db8::7", 40013), 2)
    served(env, "v2 PROXY INET6 byte by byte", p,
           PP.v2(src="2001:db8::7", dst="2001:db8::1", sport=40014,
                 dport=3128), "bytes", ("2001:db8::7", 40014), 2)
    served(env, "v2 with AUTHORITY, UNIQUE_ID and a right CRC32C, in one "
           "write: both TLVs logged", p,
           PP.v2(src="192.0.2.11", dst="198.51.100.1", sport=40015,
                 dport=443, tlvs=[PP.tlv(PP.PP2_TYPE_AUTHORITY,
                                         "www.example.test"),
                                  PP.tlv(PP.PP2_TYPE_UNIQUE_ID,
                                         "pt-unique-0015")], crc=True),
           "whole", ("192.0.2.11", 40015), 2,
           authority="www.example.test", unique_id="pt-unique-0015")
    served(env, "v2 INET6 with UNIQUE_ID, AUTHORITY and a right CRC32C, "
           "byte by byte: both TLVs logged", p,
           PP.v2(src="2001:db8::7", dst="2001:db8::1", sport=40016,
                 dport=443, tlvs=[PP.tlv(PP.PP2_TYPE_UNIQUE_ID,
                                         "pt-unique-0016"),
                                  PP.tlv(PP.PP2_TYPE_AUTHORITY,
                                         "origin.example.test")],
                 crc=True),
           "bytes", ("2001:db8::7", 40016), 2,
           authority="origin.example.test", unique_id="pt-unique-0016")
    ssl_tlv = PP.tlv(PP.PP2_TYPE_SSL, b"\x07\x00\x00\x00\x00" +
                     PP.tlv(PP.PP2_SUBTYPE_SSL_VERSION, "TLSv1.3") +
                     PP.tlv(PP.PP2_SUBTYPE_SSL_CN, "client.example.test"))
    served(env, "v2 with TLVs to skip (ALPN, NOOP, SSL and sub-TLVs, "
           "NETNS, a custom type)", p,
           PP.v2(src="192.0.2.10", dst="198.51.100.1", sport=40017,
                 dport=443, tlvs=[PP.tlv(PP.PP2_TYPE_ALPN, "h2"),
                                  PP.tlv(PP.PP2_TYPE_NOOP, b"\0" * 7),
                                  ssl_tlv,
                                  PP.tlv(PP.PP2_TYPE_NETNS, "blue"),
                                  PP.tlv(PP.PP2_TYPE_CUSTOM, b"\xff\x00")]),
           "whole", ("192.0.2.10", 40017), 2)
    served(env, "v2 header of exactly 2048 bytes (a NOOP TLV fills it)", p,
           PP.v2_of(PP.V2_MAX, src="192.0.2.13", sport=40018), "whole",
           ("192.0.2.13", 40018), 2)
    # the connection's own endpoints
    served(env, "v1 UNKNOWN (short form)", p, b"PROXY UNKNOWN\r\n", "whole",
           None, 1)
    served(env, "v1 UNKNOWN with addresses after it, byte by byte", p,
           b"PROXY UNKNOWN 192.0.2.77 198.51.100.1 40019 3128\r\n", "bytes",
           None, 1)
    served(env, "v1 UNKNOWN line of exactly 107 bytes, CRLF included", p,
           PP.v1_unknown_of(PP.V1_MAX), "whole", None, 1)
    served(env, "v2 LOCAL without addresses (a health check's)", p,
           PP.v2(cmd=PP.CMD_LOCAL), "whole", None, 2)
    served(env, "v2 LOCAL with an INET address block (192.0.2.99), skipped "
           "whole", p, PP.v2(cmd=PP.CMD_LOCAL, src="192.0.2.99",
                             dst="198.51.100.1", sport=40021, dport=3128),
           "bytes", None, 2)
    served(env, "v2 PROXY UNSPEC", p, PP.v2(family=PP.AF_UNSPEC,
                                            transport=PP.T_UNSPEC),
           "whole", None, 2)
    # other listeners
    if env.pp6:
        served(env, "the [::1] listener (from ::1/128), v1 TCP4", env.pp6,
               v1("TCP4", "192.0.2.14", "198.51.100.1", 40022, 3128),
               "whole", ("192.0.2.14", 40022), 1, listener="pp6",
               host="::1")
    else:
        t.skip("a listener on [::1] behind a header", "no IPv6 loopback",
               need="ipv6")
    if env.two:
        served(env, "the listener whose from is 127.0.0.2/32, from "
               "127.0.0.2", env.only2,
               v1("TCP4", "192.0.2.15", "198.51.100.1", 40023, 3128),
               "whole", ("192.0.2.15", 40023), 1, listener="only2",
               src="127.0.0.2")
    else:
        t.skip("a header from 127.0.0.2 on a from = 127.0.0.2/32 listener",
               "cannot bind 127.0.0.2", need="127.0.0.2")
    served(env, "a listener without proxy_protocol, no header", env.plain,
           b"", "whole", None, None, listener="plain")
    # a header where none is expected is the request line of a bad request
    tag = env.tag()
    resps, _ = PP.http_after(env.plain, PP.v1("TCP4", "192.0.2.16",
                                              "198.51.100.1", 40024, 3128),
                             env.url(tag))
    r = resps[0]
    st = r.status if isinstance(r, H.Resp) else None
    time.sleep(0.3)
    bad = [x for x in AL.transactions(AL.json_records(env.jlog)[0])
           if x.get("client") == "192.0.2.16"]
    t.check(st != 200 and not env.origin.reqs_for("t=" + tag) and not bad,
            "a PROXY line sent to a listener without proxy_protocol is not "
            "a header: no 200, the request after it never reaches the "
            "origin, 192.0.2.16 is never a client",
            lambda: H.describe(r) + ["records naming 192.0.2.16: %s" % bad])
    after, wrong = PP.wait_counts(env.stat, before, headers={
        "1": env.v1, "2": env.v2})
    t.check(not wrong, "/metrics: %s counts the %d v1 and %d v2 headers "
            "accepted, and no refusal" % (PP.HEADERS, env.v1, env.v2),
            wrong)


# ---------------------------------------------------------------------------
# refused

def group(env, reason, cases, timing=None):
    """Runs <cases> [(desc, fn)], fn() -> (bytes, how, seconds), each a
    check that the proxy closed without a byte; then the /metrics check:
    <reason> moved by exactly len(cases), nothing else moved. A case
    whose fn returns how 'sent-reset' is only counted (a client that
    reset cannot read). <timing>: (low, high) seconds every case's close
    must fall between."""
    t = env.t
    before = PP.counts(env.stat)
    if before.get("error"):
        t.check(False, "/metrics answers before the %s cases" % reason,
                before["error"])
        return
    results = [None] * len(cases)

    def run(i, fn):
        try:
            results[i] = fn()
        except Exception as e:
            results[i] = (b"", "exception %s: %s" % (type(e).__name__, e), 0)
    if timing:
        ths = [threading.Thread(target=run, args=(i, c[1]), daemon=True)
               for i, c in enumerate(cases)]
        for th in ths:
            th.start()
        for th in ths:
            th.join(ptest.bound(60))
    else:
        for i, c in enumerate(cases):
            run(i, c[1])
    for (desc, _), res in zip(cases, results):
        if res is None:
            t.check(False, "%s: the client ended" % desc)
            continue
        got, how, secs = res[:3]
        if how == "sent-reset":
            continue
        ok = PP.closes_silently(got, how)
        if timing:
            ok = ok and timing[0] <= secs <= timing[1]
        t.check(ok, "%s: closed (%s) without a byte answered%s" % (
            desc, reason, ", after %.1f-%.1f s" % timing if timing else ""),
            lambda: ["read %r, then %s after %.2f s" % (got[:200], how,
                                                         secs)] +
            H.log_tail(env.p, 10)())
    after, wrong = PP.wait_counts(env.stat, before,
                                  refused={reason: len(cases)})
    t.check(not wrong, '/metrics: %s{reason="%s"} moved by exactly %d, '
            'no other reason nor the headers counter moved'
            % (PP.REFUSED, reason, len(cases)), wrong)


def refusals(env, hello):
    p = env.pp
    R = PP.refused
    tcp4 = PP.v1("TCP4", "192.0.2.10", "198.51.100.1", 40101, 3128)
    good2 = PP.v2(src="192.0.2.10", dst="198.51.100.1", sport=40102,
                  dport=3128)
    req = PP.request_bytes(env.url(env.tag()))

    # source: the first refusal of all, so the error log has its line
    cases = [("a v1 header and a request from 127.0.0.1 on a listener "
              "whose from is 127.0.0.2/32",
              lambda: R(env.only2, tcp4 + req)),
             ("a v2 header from 127.0.0.1 on that listener",
              lambda: R(env.only2, good2 + req))]
    if env.two:
        cases.append(("a v1 header from 127.0.0.2 on the listener whose "
                      "from is 127.0.0.1/32 and ::1/128",
                      lambda: R(p, tcp4 + req, src="127.0.0.2")))
    else:
        env.t.skip("a header from 127.0.0.2 refused as source",
                   "cannot bind 127.0.0.2", need="127.0.0.2")
    group(env, "source", cases)
    lines = env.p.wait_log(r"(?i)proxy protocol.*\bsource\b")
    env.t.check(lines, "the error log has a line naming proxy protocol and "
                "the reason (source)", H.log_tail(env.p, 20))

    group(env, "signature", [
        ("GET / HTTP/1.1 without a header (a client that bypassed the "
         "balancer)", lambda: R(p, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"\r\n")),
        ("an absolute-form proxy request without a header",
         lambda: R(p, req)),
        ("a leading CRLF, then a request", lambda: R(p, b"\r\n" + req)),
        ("a lower-case 'proxy tcp4' line",
         lambda: R(p, tcp4.lower() + req)),
        ("a v2 signature whose 12th byte is wrong",
         lambda: R(p, PP.SIG_V2[:11] + b"\x0b" + good2[12:] + req)),
        ("a TLS ClientHello without a header" + (
            " on the TLS listener" if env.tls else ""),
         lambda: R(env.tls or p, hello)),
        ("a SOCKS5 greeting without a header on the SOCKS5 listener",
         lambda: R(env.socks, b"\x05\x01\x00")),
    ])

    group(env, "malformed", [
        ("v1 with a double space", lambda: R(
            p, b"PROXY TCP4  192.0.2.10 198.51.100.1 40103 3128\r\n" + req)),
        ("v1 with a bad IPv4 address (192.0.2.300)", lambda: R(
            p, b"PROXY TCP4 192.0.2.300 198.51.100.1 40104 3128\r\n" + req)),
        ("v1 with port 65536", lambda: R(
            p, b"PROXY TCP4 192.0.2.10 198.51.100.1 65536 3128\r\n" + req)),
        ("v1 ending in a lone LF", lambda: R(
            p, b"PROXY TCP4 192.0.2.10 198.51.100.1 40105 3128\n" + req)),
        ("v1 with a lone CR", lambda: R(
            p, b"PROXY TCP4 192.0.2.10 198.51.100.1 40106 3128\rx\r\n" +
            req)),
        ("v1 with an unknown protocol (TCP5)", lambda: R(
            p, b"PROXY TCP5 192.0.2.10 198.51.100.1 40107 3128\r\n" + req)),
        ("v1 without the destination port", lambda: R(
            p, b"PROXY TCP4 192.0.2.10 198.51.100.1 40108\r\n" + req)),
        ("v1 TCP6 with IPv4 addresses", lambda: R(
            p, b"PROXY TCP6 192.0.2.10 198.51.100.1 40109 3128\r\n" + req)),
        ("v1 with a port that is not a number", lambda: R(
            p, b"PROXY TCP4 192.0.2.10 198.51.100.1 40x10 3128\r\n" + req)),
        ("v2 of version 1", lambda: R(p, PP.v2(
            src="192.0.2.10", dst="198.51.100.1", sport=1, dport=2,
            version=1) + req)),
        ("v2 of version 3", lambda: R(p, PP.v2(
            src="192.0.2.10", dst="198.51.100.1", sport=1, dport=2,
            version=3) + req)),
        ("v2 with command 2", lambda: R(p, PP.v2(
            cmd=2, src="192.0.2.10", dst="198.51.100.1", sport=1,
            dport=2) + req)),
        ("v2 PROXY INET over DGRAM", lambda: R(p, PP.v2(
            src="192.0.2.10", dst="198.51.100.1", sport=1, dport=2,
            transport=PP.T_DGRAM) + req)),
        ("v2 PROXY of an unknown family (4)", lambda: R(p, PP.v2(
            family=4, addr=b"\0" * 12) + req)),
        ("v2 PROXY INET whose address block is 8 bytes", lambda: R(p, PP.v2(
            family=PP.AF_INET, addr=b"\xc0\x00\x02\x0a\xc6\x33\x64\x01") +
            req)),
        ("v2 PROXY INET6 whose address block is 12 bytes", lambda: R(
            p, PP.v2(family=PP.AF_INET6, addr=b"\x20\x01\x0d\xb8" + b"\0" * 8)
            + req)),
        ("v2 with a TLV whose length runs past the header", lambda: R(
            p, PP.v2(src="192.0.2.10", dst="198.51.100.1", sport=1, dport=2,
                     tlvs=[b"\x05\x00\x10abcd"]) + req)),
    ])

    pad = PP.v1_unknown_of(PP.V1_MAX + 1)
    group(env, "too_long", [
        ("v1 UNKNOWN with 200 bytes and no CRLF", lambda: R(
            p, b"PROXY UNKNOWN " + b"x" * 200)),
        ("v1 UNKNOWN line of 108 bytes, CRLF included",
         lambda: R(p, pad + req)),
        ("the same 108-byte line byte by byte",
         lambda: R(p, pad, how="bytes", wait=ptest.bound(5))),
        ("v2 header of 2049 bytes", lambda: R(
            p, PP.v2_of(PP.V2_MAX + 1) + req)),
        ("v2 whose length field says 65535 (then 2100 bytes)", lambda: R(
            p, PP.v2(src="192.0.2.10", dst="198.51.100.1", sport=1, dport=2,
                     tlvs=[PP.tlv(PP.PP2_TYPE_NOOP, b"\0" * 2076)],
                     length=65535))),
    ])

    def corrupt(h):
        i = h.index(b"www.example.test")
        return h[:i] + b"W" + h[i + 1:]
    group(env, "crc", [
        ("v2 INET with a CRC32C one bit off", lambda: R(p, PP.v2(
            src="192.0.2.10", dst="198.51.100.1", sport=40110, dport=3128,
            crc=True, bad_crc=True) + req)),
        ("v2 INET6 with AUTHORITY changed after the CRC32C was computed",
         lambda: R(p, PP.v2(
             src="2001:db8::7", dst="2001:db8::1", sport=40111, dport=443,
             tlvs=[PP.tlv(PP.PP2_TYPE_AUTHORITY, "www.example.test")],
             crc=True, after_crc=corrupt) + req)),
    ])

    group(env, "closed", [
        ("EOF inside a v1 line", lambda: R(p, tcp4[:20], shut=True)),
        ("EOF inside a v2 header", lambda: R(p, good2[:20], shut=True)),
        ("EOF after 'PROX'", lambda: R(p, b"PROX", shut=True)),
        ("EOF after the v2 signature", lambda: R(p, PP.SIG_V2, shut=True)),
        ("a reset inside a v1 line", lambda: R(p, tcp4[:20], rst=True)),
    ])
    group(env, "closed", [
        ("a connection closed before its first byte",
         lambda: R(p, b"", shut=True)),
    ])

    ht = env.ht
    group(env, "timeout", [
        ("nothing sent", lambda: R(p, b"", wait=ht + ptest.bound(5))),
        ("half a v1 line", lambda: R(p, tcp4[:25],
                                     wait=ht + ptest.bound(5))),
        ("half a v2 header", lambda: R(p, good2[:20],
                                       wait=ht + ptest.bound(5))),
        ("a v1 UNKNOWN line, one byte every 0.4 s", lambda: PP.trickle(
            p, b"PROXY UNKNOWN " + b"x" * 90, 0.4, ht + ptest.bound(5))),
    ], timing=(max(0.5, ht - 1.5), ht + ptest.bound(3)))


# ---------------------------------------------------------------------------
# acl, TLS, SOCKS

def acl_part(env):
    before = PP.counts(env.stat)
    env.v1 = env.v2 = 0
    p = env.pp
    served(env, "acl: v1 naming 192.0.2.66 (rule bad-client)", p,
           PP.v1("TCP4", "192.0.2.66", "198.51.100.1", 40201, 3128), "whole",
           ("192.0.2.66", 40201), 1, status=403)
    served(env, "acl: v2 naming 192.0.2.66 (rule bad-client)", p,
           PP.v2(src="192.0.2.66", dst="198.51.100.1", sport=40202,
                 dport=3128), "bytes", ("192.0.2.66", 40202), 2, status=403)
    served(env, "acl: v1 naming 192.0.2.10 is allowed", p,
           PP.v1("TCP4", "192.0.2.10", "198.51.100.1", 40203, 3128), "whole",
           ("192.0.2.10", 40203), 1)
    served(env, "acl: DELETE behind a header naming 192.0.2.10, over a "
           "connection from 127.0.0.1 (rule real-peer does not match: the "
           "header's address is judged)", p,
           PP.v1("TCP4", "192.0.2.10", "198.51.100.1", 40204, 3128), "whole",
           ("192.0.2.10", 40204), 1, method="DELETE")
    served(env, "acl: DELETE behind UNKNOWN (the real peer 127.0.0.1 is "
           "judged: rule real-peer)", p, b"PROXY UNKNOWN\r\n", "whole",
           None, 1, method="DELETE", status=403)
    _, wrong = PP.wait_counts(env.stat, before, headers={"1": env.v1,
                                                         "2": env.v2})
    env.t.check(not wrong, "/metrics: the acl part's headers counted",
                wrong)


def client_hello():
    """The bytes of a TLS ClientHello (python's ssl, nothing sent)."""
    ctx = ssl.create_default_context()
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="127.0.0.1")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def tls_after(port, header, how, cafile, url, together):
    """<header>, then TLS (python's ssl over memory BIOs on the same raw
    socket: <together> puts the header and the ClientHello in one
    write), then GET <url> through the proxy. Returns (status or error
    text, (local address, port))."""
    s = PP.connect_from(port)
    local = s.getsockname()[:2]
    try:
        ctx = ssl.create_default_context(cafile=cafile)
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_hostname="127.0.0.1")
        pending = header if together else b""
        if not together:
            PP.send_header(s, header, how)
        for _ in range(100):
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            data = out.read()
            if pending or data:
                s.sendall(pending + data)
                pending = b""
            d = s.recv(65536)
            if not d:
                return "EOF in the TLS handshake", local
            inc.write(d)
        obj.write(PP.request_bytes(url))
        s.sendall(out.read())
        got = b""
        for _ in range(10000):
            try:
                chunk = obj.read(65536)
            except ssl.SSLWantReadError:
                d = s.recv(65536)
                if not d:
                    break
                inc.write(d)
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if not chunk:
                break
            got += chunk
            data = out.read()
            if data:
                s.sendall(data)
        return H.status_of(got) or "answer %r" % got[:100], local
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), local
    finally:
        s.close()


def tls_part(env, cafile):
    t = env.t
    before = PP.counts(env.stat)
    n1 = n2 = 0
    for desc, header, how, together, client, ver in (
            ("v2 INET, then the TLS handshake in another write",
             PP.v2(src="192.0.2.20", dst="198.51.100.1", sport=40301,
                   dport=443), "whole", False, ("192.0.2.20", 40301), 2),
            ("v2 INET and the ClientHello in one write",
             PP.v2(src="192.0.2.21", dst="198.51.100.1", sport=40302,
                   dport=443, tlvs=[PP.tlv(PP.PP2_TYPE_UNIQUE_ID,
                                           "pt-tls-40302")], crc=True),
             "whole", True, ("192.0.2.21", 40302), 2),
            ("v1 TCP6 byte by byte, then the TLS handshake",
             PP.v1("TCP6", "2001:db8::20", "2001:db8::1", 40303, 443),
             "bytes", False, ("2001:db8::20", 40303), 1)):
        tag = env.tag()
        st, local = tls_after(env.tls, header, how, cafile, env.url(tag),
                              together)
        n1 += ver == 1
        n2 += ver == 2
        rs = env.records(tag) if st == 200 else []
        want = dict(client=client[0], client_port=client[1],
                    balancer=local[0], balancer_port=local[1],
                    listener="tls", status=200)
        d = diff(rs[0], want) if len(rs) == 1 else "%d records" % len(rs)
        t.check(st == 200 and len(env.origin.reqs_for("t=" + tag)) == 1
                and not d, "TLS listener behind a header: %s; an HTTPS-proxy "
                "GET answered 200, logged with the header's client" % desc,
                lambda: ["status %r" % (st,), "differs: %s" % (d,),
                         "records %s" % rs] + H.log_tail(env.p)())
    _, wrong = PP.wait_counts(env.stat, before, headers={"1": n1, "2": n2})
    t.check(not wrong, "/metrics: the TLS listener's headers counted", wrong)


def stray_dropped(a, echo, stray, data):
    """(ok, why): <data> sent through <a>'s relay from socket <stray>
    (bound to another address than the association's client) reaches
    neither the echo origin nor comes back."""
    before = echo.count()
    a.send("127.0.0.1", echo.port, data, sock=stray)
    stray.settimeout(1.0)
    try:
        back = stray.recvfrom(70000)
    except socket.timeout:
        back = None
    except OSError as e:
        back = "error %s" % e
    if back is not None or echo.count() != before:
        return False, "relayed: the stray socket got %r, the echo origin " \
            "saw %d datagram(s)" % (back, echo.count() - before)
    return True, None


def roundtrip(a, echo, data):
    try:
        a.send("127.0.0.1", echo.port, data)
    except OSError as e:
        return False, "send: %s" % e
    got = a.recv(ptest.bound(3))
    if got is None:
        return False, "no datagram back within %.0f s" % ptest.bound(3)
    if got[0] != 0 or got[1] != "127.0.0.1" or got[2] != echo.port or \
            got[3] != data:
        return False, "back: %r" % (got[:3],)
    return True, None


def socks_part(env):
    t = env.t
    echo = S.udp_echo(t)
    before = PP.counts(env.stat)

    def socks_recs(rs):
        return [r for r in rs if r.get("listener") == "socks"]
    # the records the refusals on this listener may have left come before
    n0 = len(socks_recs(AL.transactions(AL.json_records(env.jlog)[0])))
    for ver, header, first in (
            (1, PP.v1("TCP4", "127.0.0.2", "127.0.0.1", 40401, env.socks),
             "good"),
            (2, PP.v2(src="127.0.0.2", dst="127.0.0.1", sport=40402,
                      dport=env.socks), "stray")):
        what = "v%d header naming 127.0.0.2" % ver
        s = PP.connect_from(env.socks)
        stray = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stray.bind(("127.0.0.1", 0))
        a = None
        try:
            PP.send_header(s, header)
            a = S.Udp(env.socks, bind="127.0.0.2",
                      ctl=S.Client(s, ptest.bound(10)))
            if not t.check(a.ok(), "SOCKS5 behind a %s: UDP ASSOCIATE "
                           "answered REP 0 with a relay port" % what,
                           lambda: [a.describe()] + H.log_tail(env.p)()):
                continue
            if first == "stray":
                ok, why = stray_dropped(a, echo, stray, b"stray first")
                t.check(ok, "%s: a datagram from 127.0.0.1 (the balancer's "
                        "address) before any other is not relayed" % what,
                        why)
            ok, why = roundtrip(a, echo, b"from the header's client " +
                                os.urandom(8).hex().encode())
            t.check(ok, "%s: a datagram from 127.0.0.2 (the header's "
                    "client) is relayed to the UDP echo origin and back"
                    % what, why)
            ok, why = stray_dropped(a, echo, stray, b"stray after")
            t.check(ok, "%s: a datagram from 127.0.0.1 after it is not "
                    "relayed" % what, why)
            ok, why = roundtrip(a, echo, b"canary " +
                                os.urandom(8).hex().encode())
            t.check(ok, "%s: the association still relays 127.0.0.2's "
                    "datagrams after that" % what, why)
        finally:
            if a is not None:
                a.close()
            else:
                s.close()
            stray.close()
    _, wrong = PP.wait_counts(env.stat, before, headers={"1": 1, "2": 1})
    t.check(not wrong, "/metrics: the SOCKS5 listener's headers counted",
            wrong)

    rs = socks_recs(AL.wait_json(env.jlog, lambda rs: len(socks_recs(rs))
                                 >= n0 + 2, timeout=ptest.bound(8)))[n0:]
    bad = [r for r in rs if r.get("client") != "127.0.0.2" or
           r.get("client_port") not in (40401, 40402) or
           r.get("balancer") != "127.0.0.1"]
    t.check(rs and not bad, "the access log's records of the two "
            "associations name client 127.0.0.2 and the header's port, "
            "balancer 127.0.0.1", lambda: ["records: %s" % rs])


# ---------------------------------------------------------------------------

def main(t):
    why = ptest.private_netns()
    if why:
        t.skip("PROXY protocol listeners", why, need="netns")
        return
    why = AL.missing()
    if why:
        t.skip("PROXY protocol listeners (the access log shows the "
               "client)", why)
        return
    why = PP.crc_selftest()
    t.check(why is None, "the test's CRC32C gives the standard check value "
            "and a real HAProxy's", why)
    env = Env(t)
    env.ht = max(2, int(round(ptest.bound(3))))
    env.two = ACL.can_bind("127.0.0.2")
    env.origin = H.origin(t)
    env.jlog = t.path("access.json")
    env.pp, env.only2, env.plain, env.socks, env.stat = (
        ptest.free_port() for _ in range(5))
    env.pp6 = ptest.free_port("::1") if ptest.have_ipv6() else None
    env.tls = None
    tls = None
    if not os.path.exists(TL.TLS_SO):
        t.skip("a TLS listener behind a header", "tls.so not built at %s"
               % TL.TLS_SO, need="tls.so")
    elif shutil.which("openssl") is None:
        t.skip("a TLS listener behind a header", "no openssl program",
               need="openssl")
    else:
        ca = TL.CA(t)
        tls = ca.issue("server", ips=("127.0.0.1",))
        env.tls = ptest.free_port()
    acl = ACL.missing() is None
    if not acl:
        t.skip("acl src rules meet the header's address", ACL.missing(),
               need="acl.so")
    text = conf(env, tls, acl)
    path = ptest.write_conf(t.tmp, text)
    out = PP.conf_refused(path)
    if out is not None:
        PP.report_conf_refused(t, out, "listeners with proxy_protocol = { "
                               "from = [ ... ]; } (HTTP, TLS, SOCKS5)")
        return
    env.p = t.portico(text)
    w0 = env.p.workers()

    serving(env)
    refusals(env, client_hello())
    if acl:
        acl_part(env)
    if tls:
        tls_part(env, ca.pem)
    if env.two:
        socks_part(env)
    else:
        t.skip("SOCKS5 UDP behind a header naming 127.0.0.2",
               "cannot bind 127.0.0.2", need="127.0.0.2")
    lines = env.p.log_lines(r"(?i)proxy protocol")
    t.diag("reasons named in the error log: %s" % sorted(
        r for r in PP.REASONS if any(r in ln for ln in lines)))
    H.finish(t, env.p, w0)


if __name__ == "__main__":
    ptest.Test("proxy_protocol").run(main)
