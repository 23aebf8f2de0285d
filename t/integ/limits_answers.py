#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The limits module (the real modules/limits limits.so): each connection
and request limit alone, with the answer it gives, then a full key
table.

- max_connections = 2 per source on an HTTP listener: with two
  connections held, a third gets 429 with Retry-After (answered at its
  request; decided at ACCEPT) and the origin sees nothing; the debug log
  names the class; once one held connection closes, a request passes;
- the same class on a listener with `limits = { enabled = false; }`:
  no limit there;
- max_connections = 1 on a SOCKS5 listener: the second CONNECT gets
  reply 0x02; on a tcp listener the second connection is closed without
  a byte;
- request_rate 1/s with a burst of 5: of 8 requests made at once, 5 (or
  6, if a second passed meanwhile) pass and the rest get 429 with
  Retry-After: 1;
- a status listener counts every refusal per class
  (portico_module_limits_class_refused_total{class=...}), the master's
  totals line in all (limits_refused);
- `portico -t` names the file and line of a bad class option, and warns
  of more classes than one connection joins (8); a connection matching
  nine has the one it was not held to logged;
- table_size = 8 (one group), max_connections = 1 per source: eight
  sources each hold a connection (eight keys, all with members); a ninth
  and tenth source share the class's overflow key, so the tenth is
  refused (never unlimited); once all are closed, another new source
  gets a key of its own again (least recently used evicted); the totals
  count limits_table_overflow.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import limitstest as L  # noqa: E402

CONF = """
workers = 1;
error_log = "@TMP@/error.log";
log_level = "debug";
shutdown_timeout = 5;
listeners = (
  { name = "web"; address = "127.0.0.1:@A@"; protocol = "http"; },
  { name = "socks"; address = "127.0.0.1:@B@"; protocol = "socks5"; },
  { name = "fwd"; address = "127.0.0.1:@C@"; protocol = "tcp";
    to = "127.0.0.1:@O@"; },
  { name = "rate"; address = "127.0.0.1:@D@"; protocol = "http"; },
  { name = "free"; address = "127.0.0.1:@E@"; protocol = "http";
    limits = { enabled = false; }; },
  { name = "stat"; address = "127.0.0.1:@S@"; protocol = "status";
    limits = { enabled = false; }; }
);
modules = ( { name = "limits"; path = "@SO@";
  classes = (
    { name = "web-conns"; match = { listener = [ "web", "free" ]; };
      max_connections = 2; },
    { name = "socks-conns"; match = { listener = "socks"; };
      max_connections = 1; },
    { name = "fwd-conns"; match = { listener = "fwd"; };
      max_connections = 1; },
    { name = "web-requests"; match = { listener = "rate"; };
      request_rate = 1;
      request_rate_burst = 5; }
  ); } );
"""

TABLE_CONF = """
workers = 1;
error_log = "@TMP@/error2.log";
shutdown_timeout = 5;
listeners = (
  { name = "fwd"; address = "127.0.0.1:@C@"; protocol = "tcp";
    to = "127.0.0.1:@O@"; }
);
modules = ( { name = "limits"; path = "@SO@"; table_size = 8;
  classes = ( { name = "one-each"; key = "source"; max_connections = 1; } );
} );
"""

BAD_CONF = """
error_log = "stderr";
listeners = ( { name = "web"; address = "127.0.0.1:@A@"; protocol = "http"; } );
modules = ( { name = "limits"; path = "@SO@";
  classes = ( { name = "x";
    max_connections = 2;
    bandwidth_dowm = 5; } ); } );
"""


def held(port, n):
    out = []
    for _ in range(n):
        out.append(ptest.connect(port))
    return out


def retry_get(port, url, want, tries=40):
    r = None
    for _ in range(tries):
        r = H.get(port, url)
        if getattr(r, "status", None) == want:
            return r
        time.sleep(0.05)
    return r


def answers(t, p, ports, origin, echo):
    # max_connections on HTTP: 429 with Retry-After at the request.
    hold = held(ports["A"], 2)
    time.sleep(0.2)
    r = H.get(ports["A"], origin.url + "/x?via=third")
    t.check(getattr(r, "status", None) == 429 and
            r.get("retry-after") is not None and
            not origin.reqs_for("via=third"),
            "max_connections = 2: a third connection's request gets 429 "
            "with Retry-After, the origin sees nothing",
            lambda: [r if isinstance(r, str) else r.describe()])
    t.check(bool(p.wait_log(r"ACCESS: denied: web-conns", 1)),
            "the refusal's reason in the log is the class name",
            H.log_tail(p))
    free = held(ports["E"], 3)
    r = H.get(ports["E"], origin.url + "/x?via=free")
    t.check(getattr(r, "status", None) == 200,
            "limits = { enabled = false; }: the same class does not apply "
            "on that listener (3 held, a 4th passes)",
            lambda: [r if isinstance(r, str) else r.describe()])
    for s in free:
        s.close()
    hold.pop().close()
    r = retry_get(ports["A"], origin.url + "/x?via=after", 200)
    t.check(getattr(r, "status", None) == 200,
            "once a held connection closes, its slot is free again",
            lambda: [r if isinstance(r, str) else r.describe()])
    for s in hold:
        s.close()

    # SOCKS5: reply 0x02.
    s1 = ptest.connect(ports["B"])
    time.sleep(0.2)
    rep, c = S.connect5(ports["B"], "127.0.0.1", echo.port)
    t.check(getattr(rep, "rep", None) == 0x02,
            "max_connections = 1 on SOCKS5: the second CONNECT gets reply "
            "0x02 (not allowed by ruleset)", lambda: ["%r" % (rep,)])
    c.close()
    s1.close()

    # tcp: a plain close.
    f1 = ptest.connect(ports["C"])
    ok1 = L.echoes(f1)
    f2 = ptest.connect(ports["C"])
    gone = L.closed_without_bytes(f2, ptest.bound(5))
    t.check(ok1 and gone,
            "max_connections = 1 on a tcp listener: the first echoes, the "
            "second is closed without a byte",
            lambda: ["first echoed: %s, second closed: %s" % (ok1, gone)])
    t.check(bool(p.wait_log(r"ACCEPT: denied: fwd-conns", 1)),
            "the tcp refusal is logged at ACCEPT with the class name",
            H.log_tail(p))
    f1.close()
    f2.close()

    # request_rate: a burst of 5, then 429 with Retry-After: 1.
    got = []
    for i in range(8):
        r = H.get(ports["D"], origin.url + "/x?via=rate%d" % i)
        got.append((getattr(r, "status", r),
                    r.get("retry-after") if not isinstance(r, str)
                    else None))
    ok = [s for s, _ in got if s == 200]
    refused = [(s, ra) for s, ra in got if s == 429]
    t.check(len(ok) in (5, 6) and len(ok) + len(refused) == 8 and
            all(ra == "1" for _, ra in refused) and
            [s for s, _ in got[:5]] == [200] * 5,
            "request_rate 1/s burst 5: the first 5 of 8 quick requests "
            "pass, the rest get 429 with Retry-After: 1",
            lambda: ["%r" % (got,)])
    return len(refused)


def echo_soon(port, src):
    """A connection from <src> that echoes, tried 40 times at most:
    (socket, whether it echoed)."""
    for _ in range(40):
        s = L.connect_from(port, src)
        if L.echoes(s, timeout=1.0):
            return s, True
        s.close()
        time.sleep(0.05)
    return s, False


def table_full(t, origin_port):
    srcs = ["127.0.0.%d" % i for i in range(10, 21)]
    port = ptest.free_port()
    conf = ptest.fill(TABLE_CONF, TMP=t.tmp, SO=L.LIMITS_SO, C=port,
                      O=origin_port)
    p = t.portico(conf)
    keys = []
    for src in srcs[:8]:
        s = L.connect_from(port, src)
        keys.append((s, L.echoes(s)))
    t.check(all(ok for _, ok in keys),
            "a table of 8 keys: 8 sources each hold a connection",
            lambda: ["%r" % ([ok for _, ok in keys],)])
    s9 = L.connect_from(port, srcs[8])
    ok9 = L.echoes(s9)
    s10 = L.connect_from(port, srcs[9])
    gone10 = L.closed_without_bytes(s10, ptest.bound(5))
    t.check(ok9 and gone10,
            "table full (every key has a member): the 9th and 10th sources "
            "share the class's overflow key, so the 10th is refused: "
            "stricter, never unlimited",
            lambda: ["9th echoed: %s, 10th closed: %s" % (ok9, gone10)])
    for s, _ in keys:
        s.close()
    s9.close()
    s10.close()
    # The closes above reach the worker as events of their own, which a
    # loaded machine may deliver after the next accept: each new source
    # is tried until the worker has seen the members leave (bounded).
    s11, ok11 = echo_soon(port, srcs[10])
    s12, ok12 = echo_soon(port, srcs[0])
    t.check(ok11 and ok12,
            "with the members gone, new sources get keys of their own "
            "again (the least recently used evicted)",
            lambda: ["11th: %s, 12th: %s" % (ok11, ok12)])
    s11.close()
    s12.close()
    t.stop_portico(p)
    tot = L.totals(p)
    t.check(tot.get("limits_table_overflow", 0) >= 2 and
            tot.get("limits_refused", 0) >= 1,
            "the totals count the overflow and the refusal",
            lambda: ["%s" % tot])


def main(t):
    why = L.missing()
    if why:
        t.skip("limits module scenarios", why)
        return
    origin = H.origin(t)
    echo = t.echo_server()
    ports = {k: ptest.free_port() for k in "ABCDES"}
    conf = ptest.fill(CONF, TMP=t.tmp, SO=L.LIMITS_SO, O=echo.port,
                      **ports)
    p = t.portico(conf)
    nrate = answers(t, p, ports, origin, echo)
    per = L.class_counters(ports["S"], "refused")
    t.check(per == {"web-conns": 1, "socks-conns": 1, "fwd-conns": 1,
                    "web-requests": nrate},
            "/metrics counts each refusal per class: "
            "portico_module_limits_class_refused_total{class=...}",
            lambda: ["%r" % per])
    t.stop_portico(p)
    tot = L.totals(p)
    t.check(tot.get("limits_refused") == 3 + nrate and
            not any(k.startswith("limits_web") for k in tot),
            "the totals line counts them in all (limits_refused), without "
            "a field per class", lambda: ["%s" % tot])

    bad = os.path.join(t.tmp, "bad.conf")
    text = ptest.fill(BAD_CONF, A=ptest.free_port(), SO=L.LIMITS_SO)
    ptest.write_file(bad, text)
    r = ptest.run_portico(["-t", "-c", bad])
    line = ptest.line_of(text, "bandwidth_dowm")
    t.check(r.returncode == 1 and ("bad.conf:%d:" % line) in r.stderr and
            "bandwidth_dowm" in r.stderr,
            "portico -t: a misspelt class option is an error at its own "
            "file:line", lambda: [r.stderr])

    # Nine classes that all match: a connection joins eight; -t warns,
    # and the worker says which class did not apply.
    nine = "".join('{ name = "c%d"; max_connections = 100; },\n' % i
                   for i in range(8)) + \
        '{ name = "ninth"; max_connections = 1; }'
    nport = ptest.free_port()
    text = ptest.fill(BAD_CONF, A=nport, SO=L.LIMITS_SO)
    text = text.replace('{ name = "x";\n    max_connections = 2;\n'
                        '    bandwidth_dowm = 5; }', nine).replace(
        'error_log = "stderr";', 'error_log = "%s/nine.log";\n'
        'pid_file = "%s/nine.pid";' % (t.tmp, t.tmp))
    path = os.path.join(t.tmp, "nine.conf")
    ptest.write_file(path, text)
    r = ptest.run_portico(["-t", "-c", path])
    t.check(r.returncode == 0 and "9 classes" in r.stderr and
            "first 8" in r.stderr,
            "portico -t: nine classes pass with a warning that a "
            "connection is held to the first 8", lambda: [r.stderr, text])
    q = t.portico(text, conf_name="nine.conf")
    ptest.try_connect(nport)
    line = q.wait_log(r'class "ninth" does not apply', timeout=ptest.bound(5))
    t.check(bool(line), "a connection matching nine classes: the log names "
            "the class it was not held to", lambda: ptest.tail(q.log()))
    t.stop_portico(q)

    # A request_rate class on a status listener: its 429 says Too Many
    # Requests and when to come back, as on an HTTP listener.
    sport = ptest.free_port()
    text = """
error_log = "%s/stat429.log";
pid_file = "%s/stat429.pid";
listeners = ( { name = "stat"; address = "127.0.0.1:%d"; protocol = "status"; } );
modules = ( { name = "limits"; path = "%s";
  classes = ( { name = "scrapes"; request_rate = 1;
    match = { listener = "stat"; }; } ); } );
""" % (t.tmp, t.tmp, sport, L.LIMITS_SO)
    q = t.portico(text, conf_name="stat429.conf")
    got = []
    for _ in range(3):
        st, raw, how, _ = H.raw_exchange(
            sport, b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
            b"Connection: close\r\n\r\n",
            timeout=ptest.bound(5))
        got.append((st, raw))
    refused = [raw for st, raw in got if st == 429]
    t.check(refused and all(raw.startswith(b"HTTP/1.1 429 Too Many "
                                           b"Requests\r\n") and
                            b"\r\nRetry-After: " in raw for raw in refused),
            "a status listener's request_rate refusal: 429 Too Many "
            "Requests with Retry-After", lambda: [g[1][:200] for g in got])
    t.stop_portico(q)

    if not L.can_bind("127.0.0.20"):
        t.skip("key table full", "127.0.0.2 and the rest of 127/8 cannot "
               "be bound here", need="127.0.0.2")
        return
    table_full(t, echo.port)


if __name__ == "__main__":
    ptest.Test("limits_answers").run(main)
