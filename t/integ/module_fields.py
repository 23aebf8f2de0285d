#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The request fields of ABI 1.1, seen through two instances of the test
module fieldrec (t/modules/fieldrec.c): fieldrec sets, fieldrec2 (which
runs after it in every phase) reads.

- HTTP through curl: AUTH..DIAL hooks see the path and query as sent,
  User-Agent and X-Test through pt_req_header (case-insensitive, the first
  of two, without surrounding white space); LOG sees User-Agent too
  (fieldrec2 has PT_MODF_LOG_HEADERS, ABI 1.4: the core keeps it), but
  not X-Test, and still the path;
- the user a hook set at AUTH from X-User reaches both modules' LOG; the
  label and the tag "class" set by fieldrec at ACCESS are read by
  fieldrec2 at ACCESS and LOG; the tag calls return what module.h says
  (four slots, -ENOSPC, -EINVAL for a long name or value, removal frees a
  slot, a set replaces);
- keep-alive: user, label and tags of one request are gone in the next,
  each request has its own increasing txn;
- listener names: a named listener is seen by its name, an unnamed one
  by its address as written, each with its index; SOCKS has no path and
  no header, but its own txn;
- pt_conn_close from a module's timer ends a CONNECT tunnel: the client
  sees EOF, LOG has the reason, CLOSE runs once;
- a WebSocket tunnel's LOG still has the path, though the head's buffer
  went to the relay.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

ENOSPC, EINVAL = 28, 22
LONG = "/long/" + "p" * 600 + "?q=" + "z" * 400
TAG_RCS = "0,0,0,0,-%d,-%d,-%d,0,0" % (ENOSPC, EINVAL, EINVAL)


records = ptest.records


def of_conn(recs, conn, ev=None):
    return [kv for e, kv in recs if kv.get("conn") == conn and
            (ev is None or e == ev)]


def start(t):
    web = ptest.free_port()
    socks = ptest.free_port()
    certs = ptest.free_port()
    rec1, rec2 = t.path("f1.rec"), t.path("f2.rec")
    listeners = ",\n".join([
        '  { address = "127.0.0.1:%d"; protocol = "http"; name = "web"; }'
        % web,
        '  { address = "127.0.0.1:%d"; protocol = "socks5"; }' % socks,
        '  { address = "127.0.0.1:%d"; protocol = "http"; name = "certs"; }'
        % certs,
    ])
    mods = ('modules = ( { name = "fieldrec"; path = "%s/fieldrec.so"; '
            'record = "%s"; user_header = "X-User"; label = "rule-7"; '
            'tags = true; close_header = "X-Close"; '
            'accept_user = "cn=alice"; accept_user_listener = "certs"; },\n'
            '  { name = "fieldrec2"; path = "%s/fieldrec2.so"; '
            'record = "%s"; } );' % (ptest.TESTMODDIR, rec1,
                                     ptest.TESTMODDIR, rec2))
    conf = t.conf("socks", WORKERS=1, LISTENERS=listeners,
                  LIMITS="header_timeout = 10; idle_timeout = 30;",
                  RESOLVER="", MODULES=mods,
                  EXTRA='http = { connect_ports = "*"; };')
    p = t.portico(conf)
    return p, web, socks, certs, rec1, rec2


def wait_ev(rec, pred, timeout=None):
    ptest.wait_for(lambda: pred(records(rec)), timeout or ptest.bound(5))
    return records(rec)


def new_conn(recs, seen):
    conns = []
    for e, kv in recs:
        c = kv.get("conn")
        if c and e == "ACCEPT" and c not in seen:
            seen.add(c)
            conns.append(c)
    return conns


def curl_get(t, p, web, origin, rec1, rec2, seen):
    url = origin.url + "/echo?x=1&y=two"
    r = H.curl(["-x", "http://127.0.0.1:%d" % web, "-A", "fieldtest/1.0",
                "-H", "x-TeSt:   hello  ", "-H", "X-Test: second",
                "-H", "X-User: bob", "-o", "/dev/null", "-w", "%{http_code}",
                url])
    t.check(r.returncode == 0 and r.stdout == b"200",
            "curl GET through the proxy with the modules: 200",
            lambda: [repr(r.stdout), r.stderr] + H.log_tail(p)())
    r2 = wait_ev(rec2, lambda rs: any(e == "CLOSE" for e, _ in rs))
    r1 = records(rec1)
    conns = new_conn(r1, seen)
    t.check(len(conns) == 1, "one connection recorded",
            lambda: [str(conns)])
    if len(conns) != 1:
        return
    c = conns[0]
    for ph in ("AUTH", "ACCESS", "DIAL"):
        lines = of_conn(r1, c, ph)
        kv = lines[0] if lines else {}
        t.check(len(lines) == 1 and kv.get("path") == "/echo?x=1&y=two" and
                kv.get("ua") == "fieldtest/1.0" and
                kv.get("xtest") == "hello",
                "%s sees the path and query, User-Agent, and the first "
                "X-Test trimmed (name in another case)" % ph,
                lambda: [str(lines)])
    auth = of_conn(r1, c, "AUTH")
    t.check(auth and auth[0].get("user") == "bob",
            "AUTH: the user a hook set from X-User is req->user at once",
            lambda: [str(auth)])
    acc2 = of_conn(r2, c, "ACCESS")
    t.check(acc2 and acc2[0].get("label") == "rule-7" and
            acc2[0].get("class") == "per-user" and
            acc2[0].get("user") == "bob",
            "ACCESS: the second module reads the label and tag the first "
            "set", lambda: [str(acc2)])
    tags = [kv for e, kv in r1 if e == "TAGS" and kv.get("conn") == c]
    t.check(tags and tags[0].get("rcs") == TAG_RCS,
            "pt_req_set_tag: four slots, then -ENOSPC, -EINVAL for a "
            "16-byte name and a 64-byte value, removal frees a slot, a "
            "set replaces (%s)" % TAG_RCS, lambda: [str(tags)])
    for name, rs in (("fieldrec", r1), ("fieldrec2", r2)):
        log = of_conn(rs, c, "LOG")
        kv = log[0] if log else {}
        t.check(len(log) == 1 and kv.get("user") == "bob" and
                kv.get("label") == "rule-7" and
                kv.get("class") == "per-user" and
                kv.get("path") == "/echo?x=1&y=two" and
                kv.get("status") == "200" and
                kv.get("ua") == "fieldtest/1.0" and
                kv.get("xtest") == "-" and
                kv.get("listener") == "web" and kv.get("lidx") == "0" and
                int(kv.get("txn", "0")) >= 1,
                "%s LOG: user, label, tag, path, status 200, listener "
                "\"web\" index 0, a txn; User-Agent kept for LOG "
                "(PT_MODF_LOG_HEADERS), X-Test not" % name,
                lambda: [str(log)])
    cl = of_conn(r2, c, "CLOSE")
    t.check(len(cl) == 1 and cl[0].get("listener") == "web" and
            cl[0].get("user") == "-" and cl[0].get("path") == "-",
            "CLOSE once; curl's connection closed idle after its request, "
            "whose user and path are no longer the connection's",
            lambda: [str(cl)])


def keepalive(t, p, web, origin, rec2, seen):
    conn = H.Conn.to(web, timeout=ptest.bound(10))
    reqs = [("/a?1", [("X-User", "carol"), ("X-Test", "one"),
                      ("User-Agent", "ka/1")]),
            ("/b?2", [("X-Test", "two"), ("user-agent", "x" * 280)]),
            (LONG, [])]
    statuses = []
    for path, hs in reqs:
        conn.send(H.request_bytes("GET", origin.url + path, hs))
        r = H.read_response(conn)
        statuses.append(getattr(r, "status", r))
    conn.close()
    t.check(statuses == [200, 200, 200],
            "keep-alive: three requests on one connection answered",
            lambda: [str(statuses)])
    r2 = wait_ev(rec2, lambda rs: sum(1 for e, kv in rs
                                      if e == "CLOSE") >= 2)
    conns = new_conn(r2, seen)
    t.check(len(conns) == 1, "keep-alive: one connection", lambda: [
        str(conns)])
    if len(conns) != 1:
        return
    c = conns[0]
    logs = of_conn(r2, c, "LOG")
    txns = [int(kv.get("txn", 0)) for kv in logs]
    t.check(len(logs) == 3 and txns == sorted(set(txns)) and txns[0] >= 1,
            "keep-alive: three LOGs with increasing txn numbers",
            lambda: [str(logs)])
    if len(logs) != 3:
        return
    t.check([kv.get("path") for kv in logs] == ["/a?1", "/b?2", LONG],
            "keep-alive: each LOG has its own request's path (the last "
            "%d bytes long)" % len(LONG),
            lambda: [str(logs)])
    t.check([kv.get("user") for kv in logs] == ["carol", "-", "-"] and
            all(kv.get("label") == "rule-7" and
                kv.get("class") == "per-user" for kv in logs),
            "keep-alive: the user set for one request is gone in the next; "
            "label and tag are set again for each", lambda: [str(logs)])
    t.check([kv.get("ua") for kv in logs] == ["ka/1", "x" * 256, "-"],
            "keep-alive: each LOG has its own request's User-Agent (cut at "
            "PT_LOG_HEADER_MAX, 256 bytes), none from the one before",
            lambda: [str(logs)])
    acc = of_conn(r2, c, "ACCESS")
    t.check([kv.get("ua") for kv in acc] == ["ka/1", "x" * 280, "-"],
            "keep-alive: before LOG the whole User-Agent from the head",
            lambda: [str(acc)])
    t.check([kv.get("xtest") for kv in acc] == ["one", "two", "-"],
            "keep-alive: each request's header seen, none from the last",
            lambda: [str(acc)])
    auth = of_conn(r2, c, "AUTH")
    t.check(len(auth) == 3 and auth[1].get("user") == "-" and
            auth[1].get("label") == "-" and auth[1].get("class") == "-",
            "keep-alive: the second request's AUTH sees no user, label or "
            "tag of the first", lambda: [str(auth)])
    t.check(len(of_conn(r2, c, "CLOSE")) == 1,
            "keep-alive: CLOSE once for three transactions")


def socks(t, p, socks_port, echo, rec2, seen):
    r, c = S.connect5(socks_port, "127.0.0.1", echo.port,
                      auth=("dave", "pw"))
    ok, why = S.echo_check(c, b"ping" * 10) if S.ok5(r) else (False, repr(r))
    c.close()
    t.check(ok, "SOCKS5 CONNECT through the modules echoes",
            lambda: [why] + H.log_tail(p)())
    r2 = wait_ev(rec2, lambda rs: sum(1 for e, kv in rs
                                      if e == "CLOSE") >= 3)
    conns = new_conn(r2, seen)
    if len(conns) != 1:
        t.check(False, "SOCKS: one connection", lambda: [str(conns)])
        return
    logs = of_conn(r2, conns[0], "LOG")
    kv = logs[0] if logs else {}
    t.check(len(logs) == 1 and kv.get("listener") ==
            "127.0.0.1:%d" % socks_port and kv.get("lidx") == "1" and
            kv.get("path") == "-" and kv.get("user") == "dave" and
            kv.get("label") == "rule-7" and kv.get("class") == "per-user" and
            kv.get("proto") == S.PROTO_SOCKS5,
            "SOCKS LOG: unnamed listener by its address, index 1, no path, "
            "the SOCKS user, label and tag", lambda: [str(logs)])
    dial = of_conn(r2, conns[0], "DIAL")
    t.check(dial and dial[0].get("xtest") == "-" and dial[0].get("ua") == "-",
            "SOCKS: pt_req_header finds nothing", lambda: [str(dial)])


def close_tunnel(t, p, web, echo, rec2, seen):
    conn = H.Conn.to(web, timeout=ptest.bound(10))
    target = "127.0.0.1:%d" % echo.port
    conn.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\nX-Close: 1\r\n\r\n"
              % (target, target))
    head = conn.read_head()
    t0 = time.monotonic()
    conn.send(b"hello")
    got, how = H.outcome(conn, ptest.bound(5))
    took = time.monotonic() - t0
    conn.close()
    t.check(head.startswith(b"HTTP/1.1 200") and got == b"hello" and
            how == "eof" and took < ptest.bound(3),
            "pt_conn_close from a module timer ends a CONNECT tunnel "
            "(echo, then EOF)", lambda: [repr(head), repr(got), how,
                                         "%.2f s" % took])
    r2 = wait_ev(rec2, lambda rs: sum(1 for e, kv in rs
                                      if e == "CLOSE") >= 4)
    conns = new_conn(r2, seen)
    if len(conns) != 1:
        t.check(False, "tunnel: one connection", lambda: [str(conns)])
        return
    logs = of_conn(r2, conns[0], "LOG")
    t.check(len(logs) == 1 and logs[0].get("error") == "fieldrec close" and
            logs[0].get("path") == "-" and logs[0].get("proto") == "2",
            "tunnel LOG: once, req->error is pt_conn_close's reason, no "
            "path for CONNECT", lambda: [str(logs)])
    t.check(len(of_conn(r2, conns[0], "CLOSE")) == 1, "tunnel: CLOSE once")


def websocket(t, p, web, origin, rec2, seen):
    conn = H.Conn.to(web, timeout=ptest.bound(10))
    conn.send(H.request_bytes("GET", origin.url + "/ws?id=wsf", [
        ("Upgrade", "websocket"), ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("Sec-WebSocket-Version", "13")]))
    r = H.read_response(conn, keep_body=False)
    ok = getattr(r, "status", None) == 101
    if ok:
        conn.send(H.ws_frame(1, b"x" * 3000))
        fr = H.ws_read(conn)
        ok = fr is not None and fr[2] == b"x" * 3000
    conn.close()
    t.check(ok, "WebSocket through the modules: 101, a frame echoes",
            lambda: H.describe(r))
    r2 = wait_ev(rec2, lambda rs: sum(1 for e, kv in rs
                                      if e == "CLOSE") >= 5)
    conns = new_conn(r2, seen)
    logs = of_conn(r2, conns[0], "LOG") if len(conns) == 1 else []
    t.check(len(logs) == 1 and logs[0].get("path") == "/ws?id=wsf" and
            logs[0].get("proto") == "5" and logs[0].get("status") == "101",
            "WebSocket LOG, after the relay took the head's buffer: the "
            "path as sent, status 101", lambda: [str(conns), str(logs)])


def conn_user(t, p, port, origin, rec2, seen):
    """A user set before the first transaction (an ACCEPT hook here, a TLS
    client certificate in a transport) is the connection's: every
    keep-alive request starts with it, and a user an AUTH hook sets holds
    for its own request only."""
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    statuses = []
    for hs in ([("X-User", "carol")], [], []):
        conn.send(H.request_bytes("GET", origin.url + "/echo", hs))
        r = H.read_response(conn)
        statuses.append(getattr(r, "status", r))
    conn.close()
    r2 = wait_ev(rec2, lambda rs: any(
        e == "CLOSE" and kv.get("listener") == "certs" for e, kv in rs))
    conns = [c for c in new_conn(r2, seen)
             if of_conn(r2, c, "ACCEPT")[0].get("listener") == "certs"]
    c = conns[0] if len(conns) == 1 else None
    users = [kv.get("user") for kv in of_conn(r2, c, "LOG")]
    close = [kv.get("user") for kv in of_conn(r2, c, "CLOSE")]
    t.check(statuses == [200, 200, 200] and
            users == ["carol", "cn=alice", "cn=alice"] and
            close == ["cn=alice"],
            "the connection's user (set at ACCEPT) starts every keep-alive "
            "request and reaches CLOSE; an AUTH hook's user holds for its "
            "request only", lambda: [str(statuses), str(users), str(close)])


def main(t):
    if not H.have_curl():
        t.skip("module fields", "no curl", need="curl")
        return
    origin = H.origin(t)
    echo = t.echo_server()
    p, web, socks_port, certs, rec1, rec2 = start(t)
    seen1, seen2 = set(), set()
    curl_get(t, p, web, origin, rec1, rec2, seen1)
    new_conn(records(rec2), seen2)
    keepalive(t, p, web, origin, rec2, seen2)
    socks(t, p, socks_port, echo, rec2, seen2)
    close_tunnel(t, p, web, echo, rec2, seen2)
    websocket(t, p, web, origin, rec2, seen2)
    conn_user(t, p, certs, origin, rec2, seen2)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("module_fields").run(main)
