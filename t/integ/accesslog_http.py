#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The accesslog module (the real accesslog.so) on an HTTP listener, with
three logs at once: JSON, squid and combined, each to its own file.

- a GET sent on a python socket (so the test knows its port and every
  byte): the JSON record has the time (ISO 8601, ms, UTC, within the
  test's clock), client address and port, listener name, proto, method,
  target URI, status 200, bytes from the client (the request head as
  sent) and to it (the response as received), upstream address and port
  (the origin), a duration, worker 0, a transaction number, User-Agent
  and Referer, no user, no label, no error;
- the squid line has the same facts in Squid's layout, the combined line
  in Apache's;
- curl through the proxy: a second record, with curl's User-Agent;
- keep-alive: two requests on one connection, two records with
  increasing txn and each its own path, User-Agent and Referer (the
  second request has none: no header of the first leaks into it);
- a request whose target, User-Agent and Referer hold quotes,
  backslashes, control bytes and invalid UTF-8: the JSON line parses and
  gives back each valid byte, the squid and combined lines stay one line
  with their fields;
- a User-Agent and Referer holding U+2028, U+2029 and U+0085 (as their
  UTF-8 bytes): the JSON record is one line even to str.splitlines, gives
  the text back through json.loads, and the file never holds their raw
  bytes (they are written as \\u escapes);
- query = false: the query string is not in that log's target;
- a listener with accesslog = { enabled = false; }: served, not logged;
- `portico -t` refuses a bad log entry, naming the file and the line of
  the setting at fault;
- records are in the files soon after the requests (the flush timer),
  not only at exit.
"""
import json
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import accesslogtest as AL  # noqa: E402


def raw_get(port, url, headers):
    """(status, bytes sent, bytes received, client port) of one GET on its
    own connection (Connection: close)."""
    s = socket.create_connection(("127.0.0.1", port), ptest.bound(10))
    cport = s.getsockname()[1]
    req = b"GET " + url + b" HTTP/1.1\r\nHost: x\r\n" + b"".join(
        k + b": " + v + b"\r\n" for k, v in headers) + \
        b"Connection: close\r\n\r\n"
    s.sendall(req)
    got = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
    s.close()
    m = re.match(rb"HTTP/1\.1 (\d{3})", got)
    return (int(m.group(1)) if m else 0), len(req), len(got), cport


def main(t):
    why = AL.missing()
    if why:
        t.skip("accesslog HTTP", why)
        return
    if not H.have_curl():
        t.skip("accesslog HTTP", "no curl", need="curl")
        return
    origin = H.origin(t)
    port = ptest.free_port()
    jlog, slog, clog, qlog = (t.path("access.json"), t.path("access.squid"),
                              t.path("access.combined"), t.path("noq.json"))
    mod = AL.module(['file = "%s"; format = "json";' % jlog,
                     'file = "%s"; format = "squid";' % slog,
                     'file = "%s"; format = "combined";' % clog,
                     'file = "%s"; format = "json"; query = false;' % qlog])
    quiet = ptest.free_port()
    conf = AL.conf(t, [AL.listener("web", port),
                       AL.listener("quiet", quiet,
                                   extra="accesslog = { enabled = false; }; ")],
                   [mod])
    p = t.portico(conf)
    w0 = p.workers()
    # a listener that opted out: served, never logged
    qst, _, _, _ = raw_get(quiet, ("http://127.0.0.1:%d/len?n=1&tag=quiet" %
                                   origin.port).encode(), [])

    # -- one GET, every field ------------------------------------------
    url = ("http://127.0.0.1:%d/len?n=1000&tag=get1" % origin.port).encode()
    t0 = time.time()
    st, sent, got, cport = raw_get(port, url, [
        (b"User-Agent", b"pt-test/1.0 (x)"),
        (b"Referer", b"http://ref.example/page")])
    t.check(st == 200, "GET through the proxy: 200", "status %s" % st)
    recs = AL.wait_json(jlog, lambda rs: len(rs) >= 1)
    r = recs[0] if recs else {}
    t1 = time.time()
    want = {
        "client": "127.0.0.1", "client_port": cport, "listener": "web",
        "user": None, "proto": "http", "method": "GET",
        "target": url.decode(), "status": 200, "bytes_in": sent,
        "bytes_out": got, "upstream": "127.0.0.1",
        "upstream_port": origin.port, "label": None, "error": None,
        "worker": 0, "user_agent": "pt-test/1.0 (x)",
        "referer": "http://ref.example/page"}
    diff = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
    t.check(len(recs) == 1 and not diff,
            "JSON record of the GET: client address and port, listener, "
            "proto, method, target, status, bytes both ways, upstream, "
            "worker, User-Agent, Referer; no user, label or error",
            lambda: ["differs (got, want): %s" % diff, str(recs)])
    ts = r.get("time", "")
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})Z$", ts)
    when = None
    if m:
        import calendar
        when = calendar.timegm(time.strptime(m.group(1),
                                             "%Y-%m-%dT%H:%M:%S")) + \
            int(m.group(2)) / 1000.0
    t.check(when is not None and t0 - 1 <= when <= t1 + 1,
            "time: ISO 8601 UTC with milliseconds, when the request ended",
            "time %r, test clock %.3f..%.3f" % (ts, t0, t1))
    t.check(isinstance(r.get("txn"), int) and r.get("txn", 0) >= 1 and
            isinstance(r.get("duration_ms"), int) and
            0 <= r.get("duration_ms", -1) <= (t1 - t0) * 1000 + 1000,
            "txn >= 1 and a duration within the request's time",
            lambda: [str(r)])
    # the record was written by the timer, long before any exit
    t.check(len(recs) == 1 and time.time() - t0 < ptest.bound(3),
            "the record is in the file within the flush timer")

    sq = AL.squid_lines(slog)
    m = AL.SQUID_RE.match(sq[0]) if len(sq) == 1 else None
    g = m.groupdict() if m else {}
    t.check(m is not None and g["client"] == "127.0.0.1" and
            g["code"] == "TCP_MISS" and g["status"] == "200" and
            int(g["bytes"]) == got and g["method"] == "GET" and
            g["url"] == url.decode() and g["user"] == "-" and
            g["hier"] == "HIER_DIRECT" and g["peer"] == "127.0.0.1" and
            abs(float(g["time"]) - when) < 0.002 if when else False,
            "squid line: Squid's layout with the same time, client, "
            "TCP_MISS/200, bytes, method, URL, HIER_DIRECT/origin",
            lambda: [str(sq)])
    cl = [ln.decode() for ln in AL.read_lines(clog)[0]]
    m = AL.COMBINED_RE.match(cl[0]) if len(cl) == 1 else None
    g = m.groupdict() if m else {}
    t.check(m is not None and g["host"] == "127.0.0.1" and
            g["user"] == "-" and
            g["request"] == "GET %s HTTP/1.1" % url.decode() and
            g["status"] == "200" and g["bytes"] == "1000" and
            g["referer"] == "http://ref.example/page" and
            g["agent"] == "pt-test/1.0 (x)" and
            g["time"].endswith(" +0000"),
            "combined line: client, request line, status, the body's 1000 "
            "bytes (Apache's %b: no headers), Referer, User-Agent, time in "
            "UTC", lambda: [str(cl)])
    q = AL.wait_json(qlog, lambda rs: len(rs) >= 1)
    t.check(len(q) == 1 and q[0].get("target") ==
            "http://127.0.0.1:%d/len?" % origin.port,
            "query = false: the query string is left out (the '?' stays, "
            "as with Squid's strip_query_terms)",
            lambda: [str(q)])

    # -- curl ----------------------------------------------------------
    cp = H.curl(["-x", "http://127.0.0.1:%d" % port, "-o", "/dev/null",
                 "-w", "%{http_code}", origin.url + "/len?n=10&tag=curl"])
    def tagged(rs, tag):
        return [x for x in rs if (x.get("target") or "").endswith(tag)]
    recs = AL.wait_json(jlog, lambda rs: tagged(rs, "tag=curl"))
    r = (tagged(recs, "tag=curl") or [{}])[0]
    t.check(cp.stdout == b"200" and
            r.get("target") == origin.url + "/len?n=10&tag=curl" and
            (r.get("user_agent") or "").startswith("curl/") and
            r.get("status") == 200 and r.get("referer") is None and
            r.get("txn", 0) > recs[0].get("txn", 0),
            "curl: a second record, curl's User-Agent, no Referer, a later "
            "txn", lambda: [repr(cp.stdout), repr(cp.stderr), str(recs)] +
            H.log_tail(p)())

    # -- keep-alive ----------------------------------------------------
    c = H.Conn.to(port, timeout=ptest.bound(10))
    c.send(H.request_bytes("GET", origin.url + "/len?n=5&tag=ka1",
                           [("User-Agent", "ka/1"), ("Referer", "r1")]))
    a = H.read_response(c)
    c.send(H.request_bytes("GET", origin.url + "/len?n=7&tag=ka2", []))
    b = H.read_response(c)
    c.close()
    recs = AL.wait_json(jlog, lambda rs: tagged(rs, "tag=ka2"))
    ka = tagged(recs, "tag=ka1") + tagged(recs, "tag=ka2")
    t.check(getattr(a, "status", 0) == 200 and
            getattr(b, "status", 0) == 200 and len(ka) == 2 and
            ka[0]["target"].endswith("tag=ka1") and
            ka[1]["target"].endswith("tag=ka2") and
            ka[0]["user_agent"] == "ka/1" and ka[0]["referer"] == "r1" and
            ka[1]["user_agent"] is None and ka[1]["referer"] is None and
            ka[0]["client_port"] == ka[1]["client_port"] and
            ka[0]["txn"] < ka[1]["txn"],
            "keep-alive: one record per request, each with its own target "
            "and headers, increasing txn, one client port",
            lambda: [str(ka)])

    # -- hostile bytes ---------------------------------------------------
    # What HTTP lets through: quotes, backslashes, tabs and bytes >= 0x80
    # (invalid UTF-8 among them) in field values; a control byte gets a
    # 400, whose record must parse too.
    evil_path = b"/len?n=3&q=%22a'b"
    evil_ua = (b'ua "quoted" \\back\\ \t \xc3\xa9 \xff\xc0\xaf '
               b'\xed\xa0\x80 \xe2\x82')
    evil_ref = b'"}{"injected":1, \xfe\\'
    st, _, _, _ = raw_get(port, ("http://127.0.0.1:%d" % origin.port).encode()
                          + evil_path, [(b"User-Agent", evil_ua),
                                        (b"Referer", evil_ref)])
    st2, _, _, _ = raw_get(port, ("http://127.0.0.1:%d/len?n=1&ctl=1" %
                                  origin.port).encode(),
                           [(b"User-Agent", b"a\x01b\x1b[31m")])
    # Three sinks, three buffers: each is flushed on its own, so wait for
    # every one of them (a sanitized build may be a timer tick behind).
    ptest.wait_for(lambda: len(AL.transactions(AL.json_records(jlog)[0]))
                   >= 6 and len(AL.squid_lines(slog)) >= 6 and
                   len(AL.read_lines(clog)[0]) >= 6, ptest.bound(5))
    recs, bad = AL.json_records(jlog)
    recs = AL.transactions(recs)
    ev = [r for r in recs if "q=%22a" in (r.get("target") or "")]

    def sane(b):
        return b.decode("utf-8", errors="replace")
    t.check(st == 200 and not bad and len(ev) == 1 and
            ev[0]["user_agent"] == sane(evil_ua) and
            ev[0]["referer"] == sane(evil_ref) and
            "injected" not in ev[0] and len(ev[0]) == 20,
            "quotes, backslashes, a tab and invalid UTF-8 in User-Agent and "
            "Referer: every JSON line parses, the values come back as sent "
            "(each invalid byte as U+FFFD), no key injected",
            lambda: ["status %s" % st] + bad + [str(ev)])
    bad400 = [x for x in recs if x.get("status") == 400]
    t.check(st2 == 400 and len(recs) == 6 and len(bad400) == 1 and
            bad400[0]["error"] and bad400[0]["target"] is None,
            "a control byte in a header: 400, and its record (status, "
            "error, no target) parses", lambda: ["status %s" % st2,
                                                 str(bad400)])
    sq = AL.squid_lines(slog)
    t.check(len(sq) == 6 and all(AL.SQUID_RE.match(s) for s in sq) and
            " NONE_NONE/400 " in sq[5] and " NONE " in sq[5],
            "squid: six lines, each in Squid's layout; the unparsed request "
            "is NONE_NONE/400 with method NONE, as Squid writes it",
            lambda: sq)
    cl = [ln.decode("latin-1") for ln in AL.read_lines(clog)[0]]
    m = AL.COMBINED_RE.match(cl[4]) if len(cl) == 6 else None
    t.check(len(cl) == 6 and all(AL.COMBINED_RE.match(s) for s in cl) and
            all(0x20 <= ord(ch) < 0x7f for s in cl for ch in s) and
            m is not None and m.group("agent") == (
                'ua \\x22quoted\\x22 \\x5cback\\x5c \\x09 \\xc3\\xa9 '
                '\\xff\\xc0\\xaf \\xed\\xa0\\x80 \\xe2\\x82') and
            AL.COMBINED_RE.match(cl[5]).group("request") == "-",
            "combined: six lines in Apache's layout, printable ASCII only, "
            "quotes and bytes >= 0x80 as \\xHH; the unparsed request's "
            "request line is \"-\"", lambda: cl)

    # -- line separators -------------------------------------------------
    # U+2028, U+2029 and U+0085 are valid raw in JSON, but Python's
    # str.splitlines and JavaScript before ES2019 end a line there. HTTP
    # allows their bytes (obs-text) in a header value, not in a target.
    seps_ua = "ls\u2028ps\u2029nel\u0085 \u00e9\u2028\u65e5"
    seps_ref = "\u0085r\u2029"
    st3, _, _, _ = raw_get(port, ("http://127.0.0.1:%d/len?n=1&tag=seps" %
                                  origin.port).encode(),
                           [(b"User-Agent", seps_ua.encode()),
                            (b"Referer", seps_ref.encode())])
    AL.wait_json(jlog, lambda rs: tagged(rs, "tag=seps"))
    with open(jlog, "rb") as f:
        data = f.read()
    mine = [ln for ln in data.split(b"\n") if b"tag=seps" in ln]
    text = mine[0].decode("utf-8", errors="replace") if mine else ""
    try:
        back = json.loads(text)
    except ValueError as e:
        back = {"error": str(e)}
    raw = [b for b in (b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xc2\x85")
           if b in data]
    t.check(st3 == 200 and len(mine) == 1 and
            len(text.splitlines()) == 1 and
            len(data.decode("utf-8", errors="replace").splitlines()) ==
            data.count(b"\n") and
            back.get("user_agent") == seps_ua and
            back.get("referer") == seps_ref and not raw,
            "U+2028, U+2029 and U+0085 in User-Agent and Referer: the JSON "
            "record is one line to str.splitlines too, json.loads gives the "
            "text back, and the file holds none of their raw bytes",
            lambda: ["status %s, raw %r" % (st3, raw), repr(mine),
                     str(back)])

    recs = AL.transactions(AL.json_records(jlog)[0])
    t.check(qst == 200 and not [r for r in recs
                                if r.get("listener") == "quiet"] and
            not [ln for ln in AL.squid_lines(slog) if "tag=quiet" in ln],
            "accesslog = { enabled = false; } on a listener: its request "
            "is served and logged nowhere", "status %s" % qst)
    H.finish(t, p, w0)

    # -- configuration errors ---------------------------------------------
    bad_conf = AL.conf(t, [AL.listener("web", port)], [AL.module(
        ['file = "%s"; format = "json";' % jlog,
         'file = "%s";\n format = "xml";' % slog])])
    path = ptest.write_conf(t.tmp, bad_conf, "bad.conf")
    r = ptest.run_portico(["-t", "-c", path])
    line = ptest.line_of(bad_conf, 'format = "xml"')
    t.check(r.returncode == 1 and ("bad.conf:%d:" % line) in r.stderr and
            "format" in r.stderr,
            "portico -t: an unknown format is refused with the file and "
            "the line of the setting", ["line %d" % line, r.stderr])
    # A path of the scenario's own: another process may own /tmp/x.
    never = os.path.join(t.tmp, "never.log")
    for text, what in (('stdout = true; file = "/x";', "two outputs"),
                       ('file = "relative.log";', "a relative path"),
                       ('file = "%s"; colour = 1;' % never, "an unknown key"),
                       ('syslog = true; mode = 420;', "mode on syslog"),
                       ('file = "%s"; mode = 0680;' % never,
                        "mode 0680 (8 is no octal digit)")):
        c = AL.conf(t, [AL.listener("web", port)], [AL.module([text])])
        path = ptest.write_conf(t.tmp, c, "bad2.conf")
        r = ptest.run_portico(["-t", "-c", path])
        t.check(r.returncode == 1 and "bad2.conf:" in r.stderr and
                "accesslog" in r.stderr,
                "portico -t refuses %s, naming the file and line" % what,
                r.stderr)
    t.check(not os.path.exists(never), "portico -t creates no log file")

    # mode is octal as written (libconfig has no octal: 0600 reads 600)
    for text, want in (("mode = 0600;", 0o600), ('mode = "0604";', 0o604)):
        f = os.path.join(t.tmp, "mode-%o.log" % want)
        c = AL.conf(t, [AL.listener("web", ptest.free_port())],
                    [AL.module(['file = "%s"; %s' % (f, text)])])
        q = t.portico(c, conf_name="mode.conf")
        st = os.stat(f) if os.path.exists(f) else None
        t.check(st is not None and st.st_mode & 0o777 == want,
                "%s creates the log file with mode %04o" % (text, want),
                "mode %s" % (oct(st.st_mode & 0o777) if st else None))
        t.stop_portico(q)


if __name__ == "__main__":
    ptest.Test("accesslog_http").run(main)
