#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
LOG and CLOSE against the connections a client opened, seen through the
test module fieldrec (t/modules/fieldrec.c), one worker so connection ids
and the record's order are the worker's own:

- every connection accepted runs ACCEPT once and CLOSE exactly once,
  after its last LOG;
- LOG runs once per transaction: four on one HTTP keep-alive connection
  (txn increasing), one per CONNECT tunnel, SOCKS5 CONNECT, SOCKS5 UDP
  ASSOCIATE; one for an ACCEPT refusal, on HTTP as on SOCKS (error
  "denied by module"); one (400) for a client that leaves inside a
  request head; one (408) for a client that sends nothing until
  header_timeout; none for a client that connects and leaves without a
  byte, nor for a keep-alive connection closed idle after its requests;
- twenty concurrent connections of each kind at once: CLOSE per
  connection still exactly once;
- on_drain runs in the old worker at a reload (SIGHUP), and in the
  worker at SIGQUIT; the old worker closes an idle keep-alive
  connection without another LOG, and still answers a request in
  flight.
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

HEADER_TIMEOUT = 2


records = ptest.records


class Rec:
    """The record file, read in steps: each step looks only at the
    connections accepted since the last one."""

    def __init__(self, path):
        self.path = path
        self.seen = set()

    def step(self, nconns, timeout=None):
        """Waits until <nconns> new connections have run CLOSE; returns
        ({conn: [(event, kv, index)]}, all records)."""
        def new(recs):
            out = {}
            for i, (e, kv) in enumerate(recs):
                # conn ids restart in every worker: the pid tells them
                # apart across a reload
                c = (kv.get("pid"), kv.get("conn"))
                if c[1] is None or c in self.seen:
                    continue
                out.setdefault(c, []).append((e, kv, i))
            return out

        def done():
            conns = new(records(self.path))
            closed = sum(1 for evs in conns.values()
                         if any(e == "CLOSE" for e, _, _ in evs))
            return conns if closed >= nconns else None
        conns = ptest.wait_for(done, timeout or ptest.bound(8)) or \
            new(records(self.path))
        # A moment for a CLOSE that should not be there.
        time.sleep(0.1)
        conns = new(records(self.path))
        self.seen.update(conns)
        return conns


def check_conns(t, what, conns, nconns, nlogs, status=None, error=None):
    """Each of <nconns> connections: ACCEPT once, CLOSE once and last,
    <nlogs> LOGs (with <status> and <error> when given)."""
    t.check(len(conns) == nconns, "%s: %d connection(s) seen by ACCEPT"
            % (what, nconns), lambda: [str(sorted(conns))])
    bad = []
    for c, evs in sorted(conns.items()):
        names = [e for e, _, _ in evs]
        logs = [kv for e, kv, _ in evs if e == "LOG"]
        if names.count("ACCEPT") != 1 or names.count("CLOSE") != 1 or \
                names[-1] != "CLOSE" or len(logs) != nlogs:
            bad.append("conn %s: %s" % (c, names))
            continue
        if status is not None and any(kv.get("status") != str(status)
                                      for kv in logs):
            bad.append("conn %s: statuses %s" % (c, [kv.get("status")
                                                     for kv in logs]))
        if error is not None and any(kv.get("error") != error
                                     for kv in logs):
            bad.append("conn %s: errors %s" % (c, [kv.get("error")
                                                   for kv in logs]))
    t.check(not bad, "%s: CLOSE exactly once, after %d LOG(s)%s%s"
            % (what, nlogs, "" if status is None else
               ", status %s" % status,
               "" if error is None else ", error \"%s\"" % error),
            lambda: bad[:10])
    return conns


def start(t, name, workers=1):
    ports = {k: ptest.free_port() for k in ("web", "sock", "dh", "ds")}
    rec = t.path(name + ".rec")
    listeners = ",\n".join([
        '  { address = "127.0.0.1:%d"; protocol = "http"; name = "web"; }'
        % ports["web"],
        '  { address = "127.0.0.1:%d"; protocol = "socks5"; name = "sock"; }'
        % ports["sock"],
        '  { address = "127.0.0.1:%d"; protocol = "http"; '
        'name = "deny-http"; }' % ports["dh"],
        '  { address = "127.0.0.1:%d"; protocol = "socks5"; '
        'name = "deny-socks"; }' % ports["ds"],
    ])
    mods = ('modules = ( { name = "fieldrec"; path = "%s/fieldrec.so"; '
            'record = "%s"; deny_listener = "deny"; } );'
            % (ptest.TESTMODDIR, rec))
    conf = t.conf("socks", WORKERS=workers, LISTENERS=listeners,
                  LIMITS="header_timeout = %d; idle_timeout = 30;"
                  % HEADER_TIMEOUT, RESOLVER="", MODULES=mods,
                  EXTRA='http = { connect_ports = "*"; };')
    p = t.portico(conf, conf_name=name + ".conf")
    return p, ports, rec


AUTH = ("erin", "pw")


def http_keepalive(port, origin, n):
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    st = []
    for i in range(n):
        conn.send(H.request_bytes("GET", origin.url + "/echo?i=%d" % i))
        r = H.read_response(conn)
        st.append(getattr(r, "status", None))
    conn.close()
    return st == [200] * n, st


def connect_tunnel(port, echo):
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    target = "127.0.0.1:%d" % echo.port
    conn.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target))
    head = conn.read_head()
    conn.send(b"abc")
    got = conn.read_exact(3)
    conn.close()
    return head.startswith(b"HTTP/1.1 200") and got == b"abc", head


def socks_connect(port, echo):
    r, c = S.connect5(port, "127.0.0.1", echo.port, auth=AUTH)
    ok, why = S.echo_check(c, b"xyz" * 5) if S.ok5(r) else (False, repr(r))
    c.close()
    return ok, why


def socks_udp(port, uecho):
    u = S.Udp(port, auth=AUTH, timeout=ptest.bound(5))
    if not u.ok():
        u.close()
        return False, u.describe()
    u.send("127.0.0.1", uecho.port, b"dgram")
    got = u.recv(ptest.bound(3))
    u.close()
    return got is not None and got[3] == b"dgram", repr(got)


def denied_http(port):
    st, data, how, _ = H.raw_exchange(port, b"GET http://127.0.0.1:1/ "
                                      b"HTTP/1.1\r\nHost: x\r\n\r\n",
                                      timeout=ptest.bound(5))
    return data == b"" and how in ("eof", "reset"), (data[:80], how)


def denied_socks(port):
    c = S.Client.to(port, timeout=ptest.bound(5))
    try:
        m = c.greet([S.M_USERPASS])
        return False, "method %r" % (m,)
    except Exception as e:
        return True, repr(e)
    finally:
        c.close()


def vanish_mid_head(port):
    s = ptest.connect(port, "127.0.0.1", ptest.bound(5))
    s.sendall(b"GET http://127.0.0.1:1/x HTTP/1.1\r\nHost: 127.0")
    time.sleep(0.05)
    s.close()
    return True, None


def silent_close(port):
    s = ptest.connect(port, "127.0.0.1", ptest.bound(5))
    time.sleep(0.05)
    s.close()
    return True, None


def run_many(fn, n):
    """<n> runs of fn at once; (all ok, first failure)."""
    res = [None] * n

    def one(i):
        try:
            res[i] = fn()
        except Exception as e:
            res[i] = (False, "%s: %s" % (type(e).__name__, e))
    ths = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(ptest.bound(20))
    bad = [r for r in res if not r or not r[0]]
    return not bad, bad[:1]


def lifecycle(t, echo, uecho, origin):
    p, ports, path = start(t, "close")
    rec = Rec(path)
    web, sock = ports["web"], ports["sock"]

    ok, st = http_keepalive(web, origin, 4)
    t.check(ok, "keep-alive: four requests answered", lambda: [str(st)])
    conns = check_conns(t, "HTTP keep-alive", rec.step(1), 1, 4, status=200)
    for c, evs in conns.items():
        txns = [int(kv["txn"]) for e, kv, _ in evs if e == "LOG"]
        t.check(txns == sorted(set(txns)),
                "HTTP keep-alive: the four LOGs have increasing txn",
                lambda: [str(txns)])

    ok, why = connect_tunnel(web, echo)
    t.check(ok, "CONNECT tunnel echoes", lambda: [repr(why)])
    check_conns(t, "CONNECT tunnel", rec.step(1), 1, 1, status=200)

    ok, why = socks_connect(sock, echo)
    t.check(ok, "SOCKS5 CONNECT echoes", lambda: [repr(why)])
    check_conns(t, "SOCKS5 CONNECT", rec.step(1), 1, 1, status=0)

    ok, why = socks_udp(sock, uecho)
    t.check(ok, "SOCKS5 UDP ASSOCIATE relays a datagram", lambda: [why])
    check_conns(t, "SOCKS5 UDP ASSOCIATE", rec.step(1), 1, 1)

    ok, why = denied_http(ports["dh"])
    t.check(ok, "HTTP ACCEPT refusal: closed without a byte",
            lambda: [repr(why)])
    check_conns(t, "HTTP ACCEPT refusal", rec.step(1), 1, 1,
                error="denied by module")

    ok, why = denied_socks(ports["ds"])
    t.check(ok, "SOCKS ACCEPT refusal: closed without a method",
            lambda: [repr(why)])
    check_conns(t, "SOCKS ACCEPT refusal", rec.step(1), 1, 1,
                error="denied by module")

    vanish_mid_head(web)
    check_conns(t, "client gone inside a request head", rec.step(1), 1, 1,
                status=400, error="client closed inside the request head")

    silent_close(web)
    check_conns(t, "client gone without a byte", rec.step(1), 1, 0)

    t0 = time.monotonic()
    st, data, how, took = H.raw_exchange(web, b"",
                                         timeout=HEADER_TIMEOUT + 5)
    t.check(st == 408, "a silent client gets 408 after header_timeout",
            lambda: [repr(data[:80]), how, "%.1f s" % took])
    check_conns(t, "silent client (408)", rec.step(1), 1, 1, status=408)

    # Everything at once, twenty of each.
    kinds = [("HTTP keep-alive x2", lambda: http_keepalive(web, origin, 2),
              2),
             ("CONNECT", lambda: connect_tunnel(web, echo), 1),
             ("SOCKS5 CONNECT", lambda: socks_connect(sock, echo), 1),
             ("UDP ASSOCIATE", lambda: socks_udp(sock, uecho), 1),
             ("HTTP refusal", lambda: denied_http(ports["dh"]), 1),
             ("SOCKS refusal", lambda: denied_socks(ports["ds"]), 1),
             ("mid-head", lambda: vanish_mid_head(web), 1),
             ("no byte", lambda: silent_close(web), 0)]
    results = {}
    ths = []
    for name, fn, _ in kinds:
        def run(name=name, fn=fn):
            results[name] = run_many(fn, 20)
        th = threading.Thread(target=run)
        th.start()
        ths.append(th)
    for th in ths:
        th.join(ptest.bound(60))
    t.check(all(results.get(n, (False,))[0] for n, _, _ in kinds),
            "twenty of each kind at once: every client got what it expected",
            lambda: ["%s: %s" % (n, results.get(n)) for n, _, _ in kinds])
    want_logs = sum(20 * n for _, _, n in kinds)
    conns = rec.step(20 * len(kinds), ptest.bound(20))
    closes = sum(1 for evs in conns.values() for e, _, _ in evs
                 if e == "CLOSE")
    logs = sum(1 for evs in conns.values() for e, _, _ in evs if e == "LOG")
    bad = [c for c, evs in conns.items()
           if [e for e, _, _ in evs].count("CLOSE") != 1 or
           evs[-1][0] != "CLOSE"]
    t.check(len(conns) == 20 * len(kinds) and closes == len(conns) and
            not bad, "concurrent: %d connections, CLOSE once each and last"
            % (20 * len(kinds)), lambda: ["%d conns, %d CLOSE" % (
                len(conns), closes)] + bad[:5])
    t.check(logs == want_logs, "concurrent: %d LOGs, one per transaction"
            % want_logs, lambda: ["%d LOGs" % logs])
    t.stop_portico(p)


def drains(t, path, ev, pids):
    return [kv for e, kv in records(path) if e == ev and
            int(kv.get("pid", 0)) in pids]


def drain(t, origin):
    p, ports, path = start(t, "drain", workers=2)
    old = set(p.workers().values())
    ptest.wait_for(lambda: len(drains(t, path, "INIT", old)) == 2,
                   ptest.bound(5))
    t.check(not drains(t, path, "DRAIN", old),
            "no on_drain while the workers accept")
    # A keep-alive connection idle after one request, and one with a
    # request in flight, across the reload.
    idle = H.Conn.to(ports["web"], timeout=ptest.bound(10))
    idle.send(H.request_bytes("GET", origin.url + "/echo?k=1"))
    r = H.read_response(idle)
    t.check(getattr(r, "status", None) == 200,
            "drain: a keep-alive request answered", lambda: H.describe(r))
    conn = H.Conn.to(ports["web"], timeout=ptest.bound(10))
    conn.send(b"GET http://127.0.0.1:1/ HTTP/1.1\r\n")
    p.hup()
    new = p.wait_workers(2, ptest.bound(10), exclude=old)
    got = ptest.wait_for(lambda: len(drains(t, path, "DRAIN", old)) >= 2,
                         ptest.bound(10))
    d = drains(t, path, "DRAIN", old)
    t.check(bool(new) and got and len(d) == 2 and
            len({kv["pid"] for kv in d}) == 2,
            "reload: on_drain once in each old worker", lambda: [str(d)])
    conn.send(b"Host: x\r\n\r\n")
    r = H.read_response(conn)
    conn.close()
    t.check(getattr(r, "status", None) in (502, 504),
            "reload: the request in flight is still answered by the old "
            "worker", lambda: H.describe(r))
    data, how = H.outcome(idle, ptest.bound(5))
    idle.close()
    t.check(data == b"" and how == "eof",
            "drain: the idle keep-alive connection is closed by the old "
            "worker", lambda: [repr(data[:80]), how])
    recs = records(path)
    key = [(kv.get("pid"), kv.get("conn")) for e, kv in recs
           if e == "LOG" and kv.get("path") == "/echo?k=1"]
    ptest.wait_for(lambda: key and any(
        e == "CLOSE" and (kv.get("pid"), kv.get("conn")) == key[0]
        for e, kv in records(path)), ptest.bound(5))
    evs = [e for e, kv in records(path)
           if key and (kv.get("pid"), kv.get("conn")) == key[0]]
    t.check(len(key) == 1 and evs.count("LOG") == 1 and
            evs.count("CLOSE") == 1 and evs[-1] == "CLOSE",
            "drain: closing the idle keep-alive connection adds no LOG; "
            "CLOSE once", lambda: [str(key), str(evs)])
    newp = set(new.values()) if new else set()
    t.check(not drains(t, path, "DRAIN", newp),
            "reload: no on_drain in the new workers")
    p.quit()
    p.wait_exit(ptest.bound(15))
    d = drains(t, path, "DRAIN", newp)
    t.check(len(d) == 2 and len({kv["pid"] for kv in d}) == 2,
            "SIGQUIT: on_drain once in each worker", lambda: [str(d)])
    t.stop_portico(p)


def main(t):
    echo = t.echo_server()
    uecho = S.udp_echo(t)
    origin = H.origin(t)
    lifecycle(t, echo, uecho, origin)
    drain(t, origin)


if __name__ == "__main__":
    ptest.Test("module_close").run(main)
