#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
What parent_chain.py leaves out: telling a parent who the client is, and
SOCKS4 parents.

- send_proxy = "v1" and "v2": the front portico A sends a PROXY header
  with its client's address to the parent portico B (a listener with
  proxy_protocol), so B's access log and its acl see the real client:
  clients from 127.0.0.2 and 127.0.0.3 show as themselves at B, with A as
  the balancer; a GET and a CONNECT each. A connection that named one
  client is never reused for another: .2 then .3 on keep-alive-capable
  requests each show their own address at B.
- B's acl denies 127.0.0.3: through A, the .3 client is refused by B
  (A answers 403 for the GET B refused), the .2 one served.
- protocol = "socks4": a CONNECT through A to an echo goes to B as SOCKS4a
  (the name) by default and as SOCKS4 (the address, resolved by A) with
  resolve = "local": bytes both ways intact; B's log shows the two
  requests' protocols (socks4) and targets.

Loopback only; the client addresses are 127.0.0.2 and .3 (skipped, with
the need named, where they cannot be bound).
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import parenttest as P  # noqa: E402
import acltest as ACL  # noqa: E402
import accesslogtest as AL  # noqa: E402


def from_addr(src, port, data):
    """<data> sent to 127.0.0.1:<port> from <src>, the answer head's
    status (or an error string) and the connection."""
    s = socket.socket()
    s.settimeout(ptest.bound(10))
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    c = H.Conn(s)
    c.send(data)
    return c


def get_from(src, port, url):
    try:
        c = from_addr(src, port, H.request_bytes("GET", url, [
            ("Host", url.split("/")[2])]))
        r = H.read_response(c)
        c.close()
        return r.status if r else None
    except Exception as e:  # noqa: BLE001
        return "%s: %s" % (type(e).__name__, e)


def connect_from(src, port, hp, payload):
    try:
        c = from_addr(src, port, ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                                  % (hp, hp)).encode())
        r = H.read_response(c, "CONNECT")
        if r is None or r.status != 200:
            c.close()
            return getattr(r, "status", None), None
        c.send(payload)
        got = c.read_exact(len(payload))
        c.close()
        return 200, got
    except Exception as e:  # noqa: BLE001
        return "%s: %s" % (type(e).__name__, e), None


def b_conf(t, name, port, log, acl):
    mods = [AL.module(['file = "%s"; format = "json";' % log])]
    if acl:
        mods.append(ACL.acl_entry([dict(name="no-3", action="deny",
                                        src=["127.0.0.3/32"])],
                                  default="allow", allow_private=True))
    return P.conf(t, name, [P.listener(
        "in", port, "auto",
        extra='proxy_protocol = { from = [ "127.0.0.1/32" ]; };')],
        modules=mods)


def send_proxy(t, version, origin, echo, acl):
    bp, ap = ptest.free_port(), ptest.free_port()
    blog = t.path("b-%s.json" % version)
    b = P.start_portico(t, b_conf(t, "b-" + version, bp, blog, acl), [bp],
                        "b-%s.conf" % version)
    a = P.start_portico(t, P.conf(t, "a-" + version, [
        P.listener("in", ap, "http", via="b")], parents=[
        P.entry(name="b", address="127.0.0.1:%d" % bp, protocol="http",
                send_proxy=version)]), [ap], "a-%s.conf" % version)
    st2 = get_from("127.0.0.2", ap, origin.url + "/two")
    st3 = get_from("127.0.0.3", ap, origin.url + "/three")
    cst, got = connect_from("127.0.0.2", ap, "127.0.0.1:%d" % echo.port,
                            b"tunnel bytes " * 100)
    t.check(st2 == 200 and cst == 200 and got == b"tunnel bytes " * 100,
            "send_proxy %s: a GET and a CONNECT from 127.0.0.2 served "
            "through the parent" % version, lambda: [st2, cst, got])
    t.check(st3 == (403 if acl else 200),
            "send_proxy %s: the parent's acl judges the client's own "
            "address (127.0.0.3 %s)" % (version, "refused, 403" if acl
                                        else "served"), lambda: [st3])
    ptest.wait_for(lambda: len(AL.transactions(AL.json_records(blog)[0]))
                   >= 3, ptest.bound(5))
    recs = AL.transactions(AL.json_records(blog)[0])
    by = {}
    for r in recs:
        key = "connect" if r.get("method") == "CONNECT" else \
            r.get("target", "").rsplit("/", 1)[-1]
        by[key] = r
    t.check(by.get("two", {}).get("client") == "127.0.0.2" and
            by.get("connect", {}).get("client") == "127.0.0.2" and
            by.get("three", {}).get("client") == "127.0.0.3" and
            all(r.get("balancer") == "127.0.0.1" for r in by.values()),
            "send_proxy %s: the parent logs each client's own address, "
            "the front portico as the balancer (a connection that named "
            ".2 did not carry .3's request)" % version,
            lambda: recs)
    t.stop_portico(a)
    t.stop_portico(b)


def socks4(t, echo):
    bp, ap, aq = ptest.free_port(), ptest.free_port(), ptest.free_port()
    blog = t.path("b4.json")
    b = P.start_portico(t, P.conf(t, "b4", [P.listener("in", bp, "socks5")],
                                  modules=[AL.module(
                                      ['file = "%s"; format = "json";'
                                       % blog])]), [bp], "b4.conf")
    a = P.start_portico(t, P.conf(t, "a4", [
        P.listener("name", ap, "http", via="s4"),
        P.listener("addr", aq, "http", via="s4l")], parents=[
        P.entry(name="s4", address="127.0.0.1:%d" % bp, protocol="socks4",
                user="front"),
        P.entry(name="s4l", address="127.0.0.1:%d" % bp, protocol="socks4",
                resolve="local")]), [ap, aq], "a4.conf")
    payload = os.urandom(64 * 1024)
    for port, host, what in ((ap, "localhost", "SOCKS4a (the name)"),
                             (aq, "localhost", "SOCKS4 (the address A "
                              "resolved)")):
        r, c = P.connect_via(port, host, echo.port)
        got = None
        if c is not None and getattr(r, "status", None) == 200:
            try:
                c.send(payload)
                got = c.read_exact(len(payload))
            except Exception as e:  # noqa: BLE001
                got = "%s" % e
        if c is not None:
            c.close()
        t.check(got == payload, "socks4 parent: a CONNECT through %s "
                "moves 64 KiB both ways" % what,
                lambda: [r, got if not isinstance(got, bytes) else len(got)])
    ptest.wait_for(lambda: len(AL.transactions(AL.json_records(blog)[0]))
                   >= 2, ptest.bound(5))
    recs = AL.transactions(AL.json_records(blog)[0])
    targets = sorted(r.get("target", "") for r in recs)
    t.check(len(recs) == 2 and
            all(r.get("proto") == "socks4" for r in recs) and
            targets == sorted(["localhost:%d" % echo.port,
                               "127.0.0.1:%d" % echo.port]),
            "socks4 parent: the parent saw SOCKS4a with the name, then "
            "SOCKS4 with the address", lambda: recs)
    t.stop_portico(a)
    t.stop_portico(b)


def main(t):
    why = AL.missing()
    if why:
        t.skip("parents told the client, SOCKS4 parents", why)
        return
    origin = H.origin(t)
    echo = P.start_echo(t)
    socks4(t, echo)
    if not (ACL.can_bind("127.0.0.2") and ACL.can_bind("127.0.0.3")):
        t.skip("send_proxy: clients from 127.0.0.2 and 127.0.0.3",
               "cannot bind 127.0.0.2", need="127.0.0.2")
        return
    acl = ACL.missing() is None
    if not acl:
        t.skip("the parent's acl judging the client's own address",
               ACL.missing(), need="acl.so")
    send_proxy(t, "v1", origin, echo, acl)
    send_proxy(t, "v2", origin, echo, acl)


if __name__ == "__main__":
    ptest.Test("parent_send_proxy").run(main)
