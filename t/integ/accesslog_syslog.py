#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The accesslog module's syslog output, to UNIX datagram sockets the test
binds in place of /dev/log, two logs at once with a JSON file beside:

- the local form of RFC 3164 (what syslog(3) sends to /dev/log, what
  rsyslog's imuxsock and journald read): "<PRI>Mmm dd hh:mm:ss
  tag[pid]: " and a squid line, one datagram per record, no newline,
  PRI = local0.info (134) by default, pid the worker's;
- RFC 5424 with facility daemon, severity notice and a tag:
  "<29>1 TIMESTAMP HOST tag pid - - " and a JSON record that parses;
- 30 requests: 30 datagrams on each socket, 30 lines in the file;
- no daemon at the socket's path when portico starts: requests are
  served all the same (records kept, then dropped and counted); once a
  reader binds the path (and the flush timer tried again), the next
  records arrive, and so does a record
  saying how many were dropped; the totals line counts them.
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

R3164 = re.compile(r"^<(\d+)>([A-Z][a-z]{2}) ([ \d]\d) (\d\d:\d\d:\d\d) "
                   r"([^\[\s]+)\[(\d+)\]: (.*)$", re.S)
R5424 = re.compile(r"^<(\d+)>1 (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) "
                   r"(\S+) (\S+) (\d+) - - (.*)$", re.S)


def get(port, origin, n, tag):
    ok = 0
    for i in range(n):
        c = H.Conn.to(port, timeout=ptest.bound(10))
        c.send(H.request_bytes("GET", origin.url + "/len?n=10&%s=%d" %
                               (tag, i), [("Connection", "close")]))
        r = H.read_response(c)
        c.close()
        ok += getattr(r, "status", 0) == 200
    return ok


def main(t):
    why = AL.missing()
    if why:
        t.skip("accesslog to syslog", why)
        return
    origin = H.origin(t)
    port = ptest.free_port()
    s1, s2 = t.path("log1.sock"), t.path("log2.sock")
    late = t.path("late.sock")
    jlog = t.path("access.json")
    d1, d2 = AL.DgramSink(s1), AL.DgramSink(s2)
    t.at_exit(d1.stop)
    t.at_exit(d2.stop)
    mod = AL.module([
        'syslog = "%s"; format = "squid";' % s1,
        'syslog = "%s"; format = "json"; syslog_format = "rfc5424"; '
        'facility = "daemon"; severity = "notice"; tag = "pxy";' % s2,
        'file = "%s"; format = "json";' % jlog,
        'syslog = "%s"; format = "json"; buffer = 8192;' % late])
    p = t.portico(AL.conf(t, [AL.listener("web", port)], [mod]))
    w0 = p.workers()
    wpid = list(w0.values())[0]

    ok = get(port, origin, 30, "a")
    t.check(ok == 30, "30 GETs answered", "%d" % ok)
    ptest.wait_for(lambda: len(d1.messages()) >= 30 and
                   len(d2.messages()) >= 30, ptest.bound(5))
    m1, m2 = d1.messages(), d2.messages()
    recs = AL.wait_json(jlog, lambda rs: len(rs) >= 30)
    t.check(len(m1) == 30 and len(m2) == 30 and len(recs) == 30,
            "30 records: 30 datagrams on each syslog socket, 30 lines in "
            "the file", "%d %d %d" % (len(m1), len(m2), len(recs)))
    p1 = [R3164.match(m.decode("latin-1")) for m in m1]
    sq = [AL.SQUID_RE.match(m.group(7)) if m else None for m in p1]
    t.check(all(p1) and all(sq) and
            all(m.group(1) == "134" and m.group(5) == "portico" and
                int(m.group(6)) == wpid for m in p1) and
            not any(m.endswith(b"\n") for m in m1) and
            all(s.group("url").endswith("a=%d" % i)
                for i, s in enumerate(sq)),
            "RFC 3164 local form: <134> (local0.info), the time, "
            "portico[worker pid]: and a squid line, no newline, in order",
            lambda: [repr(m) for m in m1[:3]])
    p2 = [R5424.match(m.decode("utf-8")) for m in m2]
    good = True
    for m in p2:
        try:
            good = good and m is not None and \
                json.loads(m.group(6))["status"] == 200
        except (ValueError, KeyError):
            good = False
    t.check(good and all(m.group(1) == "29" and m.group(4) == "pxy" and
                         int(m.group(5)) == wpid and
                         m.group(3) == socket.gethostname()
                         for m in p2 if m),
            "RFC 5424: <29> (daemon.notice), a UTC timestamp, the host "
            "name, tag pxy, the pid, and a JSON record that parses",
            lambda: [repr(m) for m in m2[:3]])

    # -- a daemon that starts late ---------------------------------------
    t0 = time.monotonic()
    ok = get(port, origin, 40, "b")
    took = time.monotonic() - t0
    t.check(ok == 40 and took < ptest.bound(10),
            "no syslog daemon at one log's path: 40 more GETs answered",
            "%d in %.1f s" % (ok, took))
    d3 = AL.DgramSink(late)
    t.at_exit(d3.stop)
    # the worker tries a failing log again at its flush timer (100 ms)
    time.sleep(0.4)
    get(port, origin, 2, "c")
    def parsed():
        out = []
        for m in d3.messages():
            mm = R3164.match(m.decode("utf-8"))
            try:
                out.append(json.loads(mm.group(7)) if mm else None)
            except ValueError:
                out.append(None)
        return out

    def settled():
        rs = [r for r in parsed() if r]
        return len([r for r in rs if "event" not in r]) + \
            sum(r.get("dropped", 0) for r in rs) >= 72
    ptest.wait_for(settled, ptest.bound(5))
    m3 = d3.messages()
    recs3 = parsed()
    dropped = sum(r.get("dropped", 0) for r in recs3 if r)
    kept = [r for r in recs3 if r and "event" not in r]
    t.check(all(recs3) and dropped > 0 and
            len(kept) + dropped == 72 and
            any(r["target"].endswith("c=1") for r in kept),
            "the daemon binds its socket: later records arrive, with a "
            "record of how many were dropped meanwhile (kept + dropped = "
            "all 72)", lambda: ["dropped %d, kept %d" % (dropped, len(kept))]
            + [repr(m)[:200] for m in m3[:5]])
    H.finish(t, p, w0)
    tot = p.log_lines(r"master: totals: ")
    m = re.search(r"accesslog_dropped=(\d+)", tot[-1]) if tot else None
    t.check(m is not None and int(m.group(1)) == dropped,
            "the master's totals count the dropped records",
            lambda: tot[-1:] + ["dropped %d" % dropped])


if __name__ == "__main__":
    ptest.Test("accesslog_syslog").run(main)
