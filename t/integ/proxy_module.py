#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
What a module sees of a connection that came through a balancer (ABI 1.6),
recorded by t/modules/fieldrec behind an HTTP listener with
proxy_protocol:

- a v1 header naming 192.0.2.10: every phase, ACCEPT first, sees
  pt_req.peer = 192.0.2.10 and pt_conn_balancer() = 127.0.0.1 (the
  connection's own peer), so an ACCEPT-time rule already judges the client;
- a v2 header with AUTHORITY and UNIQUE_ID TLVs: pt_req_tag finds them as
  proxy_authority and proxy_unique_id, at ACCESS and at LOG, for the second
  request of the connection too (they are the connection's, not one
  request's);
- a v2 LOCAL header (a balancer's health check): the real addresses, no
  balancer;
- a header sent in one write with a request larger than what is read
  with it (3 KiB of head, a 300 KiB body): the request reaches the origin
  whole (the bytes read ahead with the header, then the socket).

The addresses in the headers are data only: nothing is sent to them.
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

records = ptest.records
V2_SIG = b"\r\n\r\n\x00\r\nQUIT\n"


def v2(cmd, fam, addrs, tlvs=b""):
    body = addrs + tlvs
    return V2_SIG + bytes([0x20 | cmd, fam]) + struct.pack("!H",
                                                           len(body)) + body


def tlv(t, value):
    return bytes([t]) + struct.pack("!H", len(value)) + value


def inet(src, dst, sport, dport):
    return (socket.inet_aton(src) + socket.inet_aton(dst) +
            struct.pack("!HH", sport, dport))


def get_on(sock, origin, path):
    sock.sendall(H.request_bytes("GET", origin.url + path,
                                 [("Host", "127.0.0.1:%d" % origin.port)]))


def start(t, rec):
    web = ptest.free_port()
    listeners = ('  { address = "127.0.0.1:%d"; protocol = "http"; '
                 'name = "lb"; proxy_protocol = { from = [ "127.0.0.1/32" ];'
                 ' }; }' % web)
    mods = ('modules = ( { name = "fieldrec"; path = "%s/fieldrec.so"; '
            'record = "%s"; } );' % (ptest.TESTMODDIR, rec))
    conf = t.conf("socks", WORKERS=1, LISTENERS=listeners,
                  LIMITS="header_timeout = 10; idle_timeout = 30;",
                  RESOLVER="", MODULES=mods, EXTRA="")
    return t.portico(conf), web


def conn_lines(rec, before):
    """The phase lines of the one connection accepted after <before>."""
    rs = [(e, kv) for e, kv in records(rec) if kv.get("conn")]
    conns = sorted({kv["conn"] for e, kv in rs if e == "ACCEPT"} - before,
                   key=int)
    return conns, rs


def served(t, what, sock, n=1):
    got = []
    c = H.Conn(sock)
    for _ in range(n):
        r = H.read_response(c)
        got.append(r.status if r else None)
    t.check(got == [200] * n, "%s: served (%s)" % (what, got))


def main(t):
    origin = H.origin(t)
    rec = t.path("f.rec")
    p, web = start(t, rec)
    seen = set()

    # v1: the client is 192.0.2.10, the balancer 127.0.0.1.
    s = ptest.connect(web)
    s.sendall(b"PROXY TCP4 192.0.2.10 127.0.0.1 40000 %d\r\n" % web)
    get_on(s, origin, "/one")
    served(t, "v1 TCP4", s)
    s.close()
    ptest.wait_for(lambda: any(e == "CLOSE" for e, _ in records(rec)),
                   ptest.bound(5))
    conns, rs = conn_lines(rec, seen)
    seen.update(conns)
    mine = [(e, kv) for e, kv in rs if conns and kv["conn"] == conns[0]]
    phases = [e for e, _ in mine]
    t.check(len(conns) == 1 and phases[:1] == ["ACCEPT"] and
            "LOG" in phases and
            all(kv.get("peer") == "192.0.2.10" and
                kv.get("balancer") == "127.0.0.1" for _, kv in mine),
            "v1: every phase from ACCEPT to CLOSE sees peer 192.0.2.10 "
            "and balancer 127.0.0.1", lambda: [str(mine)])

    # v2 with TLVs, two requests on the connection.
    addrs = inet("198.51.100.7", "127.0.0.1", 40001, web)
    tl = tlv(0x02, b"www.example.test") + tlv(0x05, b"req-7f3a")
    s = ptest.connect(web)
    s.sendall(v2(1, 0x11, addrs, tl))
    get_on(s, origin, "/a")
    get_on(s, origin, "/b")
    served(t, "v2 with TLVs, two requests", s, 2)
    s.close()
    ptest.wait_for(lambda: len([1 for e, _ in records(rec)
                                if e == "CLOSE"]) >= 2, ptest.bound(5))
    conns, rs = conn_lines(rec, seen)
    seen.update(conns)
    mine = [(e, kv) for e, kv in rs if conns and kv["conn"] == conns[0]]
    tagged = [kv for e, kv in mine if e in ("ACCESS", "LOG")]
    t.check(len(conns) == 1 and len(tagged) == 4 and
            all(kv.get("peer") == "198.51.100.7" and
                kv.get("balancer") == "127.0.0.1" and
                kv.get("ppauth") == "www.example.test" and
                kv.get("ppuid") == "req-7f3a" for kv in tagged),
            "v2: ACCESS and LOG of both requests see the client, the "
            "balancer and the AUTHORITY and UNIQUE_ID tags",
            lambda: [str(mine)])

    # v2 LOCAL: the connection's own addresses.
    s = ptest.connect(web)
    s.sendall(v2(0, 0x00, b""))
    get_on(s, origin, "/local")
    served(t, "v2 LOCAL", s)
    s.close()
    ptest.wait_for(lambda: len([1 for e, _ in records(rec)
                                if e == "CLOSE"]) >= 3, ptest.bound(5))
    conns, rs = conn_lines(rec, seen)
    mine = [(e, kv) for e, kv in rs if conns and kv["conn"] == conns[0]]
    t.check(len(conns) == 1 and mine and
            all(kv.get("peer") == "127.0.0.1" and
                kv.get("balancer") == "-" and kv.get("ppauth") == "-"
                for _, kv in mine),
            "v2 LOCAL: peer is the connection's own, no balancer, no tags",
            lambda: [str(mine)])
    big_request(t, web, origin)
    t.stop_portico(p)


def big_request(t, web, origin):
    body = bytes(range(256)) * 1200
    head = H.request_bytes("POST", origin.url + "/big?t=ahead",
                           [("Host", "127.0.0.1:%d" % origin.port),
                            ("X-Pad", "p" * 3000),
                            ("Content-Length", str(len(body)))])
    s = ptest.connect(web)
    s.sendall(b"PROXY TCP4 192.0.2.11 127.0.0.1 40002 %d\r\n" % web + head +
              body)
    served(t, "a header with a 3 KiB head and a 300 KiB body in one write",
           s)
    s.close()
    got = origin.reqs_for("t=ahead")
    t.check(len(got) == 1 and got[0].get("body_len") == len(body) and
            got[0].get("body_sha256") == H.sha(body),
            "the origin got the whole body, byte for byte",
            lambda: [str({k: v for k, v in r.items() if k != "body"})
                     for r in got])


if __name__ == "__main__":
    ptest.Test("proxy_module").run(main)
