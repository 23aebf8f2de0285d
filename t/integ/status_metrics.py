#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The status listener (protocol = "status"), with two workers, the acl
module (default deny), a loopback origin and a tiny DNS server:

- GET /metrics answers 200 with Content-Type text/plain; version=0.0.4;
  the text passes `promtool check metrics` (lint included: HELP and TYPE
  for every family, _total on counters, base units);
- between two scrapes the test makes known traffic through the proxy:
  4 GETs of 100,000 bytes, 2 origin 404s, a POST of 50,000 bytes, 3
  requests the acl refuses by host, 2 requests to a name the DNS server
  knows and 1 to a name it does not; the deltas match exactly:
  connections accepted, transactions by protocol and status class,
  denials (the core's and the acl module's counters, and per rule: a
  labelled module counter), DNS misses + hits,
  DNS failures; payload bytes each way lie between the bodies' sizes and
  those plus a bound for heads; a histogram's count is the sum of the
  transactions, its buckets cumulative, +Inf equal to the count;
- every per-worker family sums to its total; worker_info names the two
  worker pids portico runs, state running, generation 1;
- GET /status is one JSON object with the documented keys, its numbers
  agreeing with /metrics (master pid, counters);
- other paths 404, other methods 405 (with Allow), HEAD gives the head
  only; keep-alive: two pipelined GETs answered in order on one
  connection, which stays open; Connection: close and HTTP/1.0 close;
  a head over 8 KiB is 431, then a clean close (lingering);
- the acl module judges status requests: a status listener a rule
  denies answers 403 (counted as a denial and as status 4xx), and the
  one that serves is allowed only by a rule with protocol = "status";
- a reload shows generation 2 and reloads{result="ok"} 1; a bad reload
  reloads{result="failed"} 1 and last_reload_success 0; module counters
  go on counting across the reload;
- a SOCKS5 UDP association: datagrams relayed each way and a fragment
  dropped as invalid are counted as such.
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import statustest as S  # noqa: E402
import sockstest as K  # noqa: E402

CONF = """
workers = 2;
error_log = "@TMP@/error.log";
pid_file = "@TMP@/portico.pid";
shutdown_timeout = 5;
resolver = { servers = "@DNS@"; timeout = 1; };
listeners = (
  { name = "web"; address = "127.0.0.1:@W@"; protocol = "http"; },
  { name = "stat"; address = "127.0.0.1:@S@"; protocol = "status"; },
  { name = "stat2"; address = "127.0.0.1:@S2@"; protocol = "status"; },
  { name = "socks"; address = "127.0.0.1:@K@"; protocol = "socks5"; }
);
modules = ( { name = "acl"; path = "@SO@"; default = "deny";
  allow_private = true;
  rules = (
    { name = "blocked"; action = "deny"; host = [ "blocked.invalid" ]; },
    { name = "nostat2"; action = "deny"; listener = "stat2"; },
    { name = "scrape"; action = "allow"; protocol = "status";
      src = [ "127.0.0.1" ]; },
    { name = "web"; action = "allow"; protocol = [ "http", "socks5",
      "udp" ]; } ); } );
@EXTRA@
"""

BIG = 100000
POST = 50000
HEAD_SLACK = 16384      # response and request heads, per direction


def conf_text(t, ports, dns, extra=""):
    return ptest.fill(CONF, TMP=t.tmp, SO=S.ACL_SO, W=ports[0], S=ports[1],
                      S2=ports[2], K=ports[3], DNS=dns.address, EXTRA=extra)


def delta(a, b, name, **labels):
    va, vb = S.value(a, name, **labels), S.value(b, name, **labels)
    if va is None or vb is None:
        return None
    return vb - va


def traffic(t, port, origin):
    """The known traffic; returns how many client connections it made."""
    n = 0
    for i in range(4):
        r = H.get(port, origin.url + "/len?n=%d&i=%d" % (BIG, i))
        n += 1
        t.check(getattr(r, "status", None) == 200 and r.body_len == BIG,
                "GET %d of %d bytes through the proxy" % (i + 1, BIG),
                lambda: H.describe(r))
    for i in range(2):
        r = H.get(port, origin.url + "/status?code=404&i=%d" % i)
        n += 1
        t.check(getattr(r, "status", None) == 404,
                "origin 404 %d through the proxy" % (i + 1),
                lambda: H.describe(r))
    try:
        r, conn = H.roundtrip(port, "POST", origin.url + "/len?n=10",
                              body=b"x" * POST)
        conn.close()
    except Exception as e:
        r = "%s" % e
    n += 1
    t.check(getattr(r, "status", None) == 200, "POST of %d bytes" % POST,
            lambda: H.describe(r))
    for i in range(3):
        r = H.get(port, "http://blocked.invalid/x%d" % i)
        n += 1
        t.check(getattr(r, "status", None) == 403,
                "blocked.invalid %d: the acl answers 403" % (i + 1),
                lambda: H.describe(r))
    for i in range(2):
        r = H.get(port, "http://web.test:%d/len?n=10&d=%d" % (origin.port, i))
        n += 1
        t.check(getattr(r, "status", None) == 200,
                "web.test %d resolves through the DNS server" % (i + 1),
                lambda: H.describe(r))
    r = H.get(port, "http://nx.test:%d/" % origin.port)
    n += 1
    t.check(getattr(r, "status", None) is not None and
            500 <= r.status < 600, "nx.test does not resolve: a 5xx",
            lambda: H.describe(r))
    return n


def txn_delta(a, b, proto):
    """Transactions of <proto> counted between scrapes a and b."""
    return sum(v - (S.value(a, "portico_transactions_total", **lab) or 0)
               for lab, v in S.series(b, "portico_transactions_total")
               if lab["protocol"] == proto)


def check_traffic(t, a, b, nconn, extra=0):
    d = lambda name, **kw: delta(a, b, name, **kw)  # noqa: E731
    t.check(d("portico_connections_accepted_total") == nconn + 1,
            "accepted grew by the traffic's %d connections and the "
            "scrape's own" % nconn,
            lambda: ["delta %s" % d("portico_connections_accepted_total")])
    want = {("http", "2xx"): 4 + 1 + 2, ("http", "4xx"): 2 + 3,
            ("http", "5xx"): 1, ("status", "2xx"): 1 + extra}
    got = {}
    for lab, v in S.series(b, "portico_transactions_total"):
        dv = v - (S.value(a, "portico_transactions_total", **lab) or 0)
        if dv:
            got[(lab["protocol"], lab["class"])] = dv
    t.check(got == want, "transactions by protocol and class: exactly the "
            "traffic's (and the previous scrape's)",
            lambda: ["want %s" % want, "got %s" % got])
    t.check(d("portico_denied_total") == 3 and
            d("portico_module_acl_denied_total") == 3,
            "3 denials, in the core's and the acl module's counters",
            lambda: [d("portico_denied_total"),
                     d("portico_module_acl_denied_total")])
    rules = {(k, r): d("portico_module_acl_rule_%s_total" % k, rule=r)
             for k, r in (("denied", "blocked"), ("allowed", "web"),
                          ("allowed", "scrape"), ("denied", "default"))}
    want_rules = {("denied", "blocked"): 3, ("allowed", "web"): 9,
                  ("allowed", "scrape"): 1 + extra, ("denied", "default"): 0}
    t.check(rules == want_rules and
            d("portico_module_acl_allowed_total") == 10 + extra,
            "per ACL rule: 3 denied by \"blocked\", 9 allowed by \"web\" "
            "(every request that dialled), 1 scrape allowed by \"scrape\"",
            lambda: ["want %s" % want_rules, "got %s" % rules,
                     d("portico_module_acl_allowed_total")])
    down = d("portico_bytes_total", direction="down")
    up = d("portico_bytes_total", direction="up")
    t.check(down is not None and 4 * BIG <= down <= 4 * BIG + HEAD_SLACK,
            "bytes down: the 4 bodies of %d and heads" % BIG,
            lambda: ["down %s" % down])
    t.check(up is not None and POST <= up <= POST + HEAD_SLACK,
            "bytes up: the POST body of %d and heads" % POST,
            lambda: ["up %s" % up])
    hits = d("portico_dns_cache_hits_total")
    miss = d("portico_dns_cache_misses_total")
    fail = d("portico_dns_failures_total")
    look = d("portico_dns_lookup_duration_seconds_count")
    # web.test twice (the second a hit when the same worker took it, or
    # not resolved at all when it reuses the first one's upstream
    # connection), nx.test once: a miss that fails.
    t.check(hits is not None and 2 <= hits + miss <= 3 and miss >= 2 and
            fail == 1 and look == miss,
            "DNS: web.test and nx.test missed, at most one hit, 1 failure, "
            "one lookup per miss", lambda: [
                "hits %s misses %s failures %s lookups %s" % (
                    hits, miss, fail, look)])
    conn = d("portico_upstream_connect_duration_seconds_count")
    t.check(conn is not None and 1 <= conn <= 9,
            "upstream connects observed (1..9 for 9 forwarded requests)",
            lambda: ["connects %s" % conn])


def check_consistency(t, s):
    txn = sum(v for _, v in S.series(s, "portico_transactions_total"))
    for h in ("request_duration", "upstream_connect_duration",
              "dns_lookup_duration"):
        name = "portico_%s_seconds" % h
        bks = sorted(((float(lab["le"]), v) for lab, v in
                      S.series(s, name + "_bucket")), key=lambda x: x[0])
        cnt = S.value(s, name + "_count")
        vals = [v for _, v in bks]
        t.check(bks and vals == sorted(vals) and bks[-1][0] == float("inf")
                and vals[-1] == cnt and S.value(s, name + "_sum") >= 0,
                "%s: buckets cumulative, +Inf = count" % name,
                lambda: [bks, cnt])
    t.check(S.value(s, "portico_request_duration_seconds_count") == txn,
            "request_duration count = every transaction counted",
            lambda: [txn, S.value(s, "portico_request_duration_seconds_count")])
    bad = []
    for (name, labels), v in s.items():
        if not name.startswith("portico_worker_") or \
                name == "portico_worker_info":
            continue
        lab = dict(labels)
        lab.pop("worker")
        total = S.value(s, "portico_" + name[len("portico_worker_"):], **lab)
        per = sum(v2 for l2, v2 in S.series(s, name)
                  if {k: x for k, x in l2.items() if k != "worker"} == lab)
        if total is None or per != total:
            bad.append("%s %s: slots %s, total %s" % (name, lab, per, total))
    t.check(not bad, "every per-worker family sums to its total",
            lambda: bad[:10])


def check_udp(t, stat, socks):
    echo = K.udp_echo(t)
    a0 = S.scrape(stat)[0]
    u = K.Udp(socks)
    ok = 0
    counts = {}
    want = {("portico_udp_datagrams_total", "direction", "up"): 4,
            ("portico_udp_datagrams_total", "direction", "down"): 4,
            ("portico_udp_datagrams_dropped_total", "reason", "invalid"): 1,
            ("portico_udp_datagrams_dropped_total", "reason", "denied"): 0}
    try:
        if u.ok():
            for i in range(3):
                u.send("127.0.0.1", echo.port, b"d%d" % i)
                got = u.recv(ptest.bound(3))
                ok += got is not None and got[3] == b"d%d" % i
            u.send("127.0.0.1", echo.port, b"frag", frag=1)
            u.send("127.0.0.1", echo.port, b"canary")
            got = u.recv(ptest.bound(3))
            ok += got is not None and got[3] == b"canary"
        # The worker counts a datagram after its sendmmsg: the client
        # may hold the echo before the count, so the scrape is repeated
        # (for a short bound) until the counts are there.
        deadline = time.monotonic() + ptest.bound(2)
        while True:
            counts = {k: delta(a0, S.scrape(stat)[0], k[0],
                               **{k[1]: k[2]}) for k in want}
            if counts == want or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        u.close()
    t.check(ok == 4, "UDP ASSOCIATE: 3 datagrams and a canary echoed, a "
            "fragment dropped", lambda: [u.describe(), ok])
    t.check(counts == want, "UDP counters: 4 datagrams each way, 1 dropped "
            "as invalid", lambda: ["want %s" % want, "got %s" % counts])


def check_status_http(t, port):
    r = S.request(port, path="/nope")
    t.check(getattr(r, "status", None) == 404, "GET /nope: 404",
            lambda: H.describe(r))
    r = S.request(port, method="POST", path="/metrics", body=b"x=1")
    t.check(getattr(r, "status", None) == 405 and
            r.get("allow") == "GET, HEAD" and r.closes(),
            "POST /metrics: 405 with Allow, and (a body unread) close",
            lambda: H.describe(r))
    r = S.request(port, method="HEAD", path="/metrics")
    t.check(getattr(r, "status", None) == 200 and
            int(r.get("content-length") or 0) > 1000 and r.body_len == 0,
            "HEAD /metrics: the head with its length, no body",
            lambda: H.describe(r))
    # Keep-alive and pipelining.
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    try:
        req = b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n"
        conn.send(req + b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        r1 = H.read_response(conn)
        r2 = H.read_response(conn)
        time.sleep(0.2)
        conn.send(req)
        r3 = H.read_response(conn)
        ok = (r1.status == 200 and r1.get("content-type") ==
              "application/json" and r2.status == 200 and
              r2.body.startswith(b"# HELP") and r3.status == 200 and
              not r1.closes() and not r3.closes())
        t.check(ok, "two pipelined requests answered in order, a third "
                "later on the same connection", lambda: [r1, r2, r3])
    except Exception as e:
        t.check(False, "keep-alive and pipelining", ["%s" % e])
    finally:
        conn.close()
    for what, raw in (
            ("Connection: close", b"GET /status HTTP/1.1\r\nHost: x\r\n"
             b"Connection: close\r\n\r\n"),
            ("HTTP/1.0", b"GET /status HTTP/1.0\r\n\r\n")):
        st, got, how, _ = H.raw_exchange(port, raw)
        t.check(st == 200 and how == "eof", "%s: answered, then closed" %
                what, lambda: [st, how, got[:200]])
    st, got, how, _ = H.raw_exchange(
        port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " +
        b"a" * 9000 + b"\r\n\r\n")
    t.check(st == 431 and how == "eof",
            "a head over 8 KiB: 431, then a clean close (the rest of the "
            "head is drained, not answered with a reset that could cost "
            "the 431)", lambda: [st, how, got[:200]])


def main(t):
    if not os.path.exists(S.ACL_SO):
        t.skip("status listener scenarios", "acl.so not built at %s (PCRE2 "
               "missing at configure)" % S.ACL_SO)
        return
    origin = H.origin(t)
    dns = H.dns_server(t, {"web.test": {"A": ["127.0.0.1"]}})
    ports = [ptest.free_port() for _ in range(4)]
    text = conf_text(t, ports, dns)
    p = t.portico(text)
    web, stat, stat2, socks = ports

    r = S.request(stat)
    t.check(getattr(r, "status", None) == 200 and
            r.get("content-type") ==
            "text/plain; version=0.0.4; charset=utf-8",
            "GET /metrics: 200, Prometheus text format 0.0.4",
            lambda: H.describe(r))
    if not isinstance(r, str):
        if S.promtool():
            ok, out = S.promtool_check(r.body.decode())
            t.check(ok, "promtool check metrics: no error, no lint "
                    "problem", lambda: out.splitlines()[:20])
        else:
            t.skip("promtool check metrics", "promtool not in PATH "
                   "(Debian package prometheus)", need="prometheus")

    a, raw_a = S.scrape(stat)
    nconn = traffic(t, web, origin)
    # A worker counts a transaction once it has written the answer, so on
    # a loaded machine the scrape may come first: scrape again until the
    # traffic's 13 are in (each scrape is one more status transaction).
    extra = 0
    deadline = time.monotonic() + ptest.bound(5)
    while True:
        b, raw_b = S.scrape(stat)
        if a is None or b is None or time.monotonic() > deadline or \
                txn_delta(a, b, "http") >= 13:
            break
        extra += 1
        time.sleep(0.05)
    if a is None or b is None:
        t.check(False, "two scrapes", [raw_a, raw_b])
        return
    check_traffic(t, a, b, nconn + extra, extra)
    check_consistency(t, b)

    wk = p.workers()
    pids = sorted(wk.values())
    info = S.series(b, "portico_worker_info")
    t.check(sorted(int(lab["pid"]) for lab, _ in info) == pids and
            all(wk.get(int(lab["slot"])) == int(lab["pid"])
                for lab, _ in info) and
            all(lab["state"] == "running" and lab["generation"] == "1"
                for lab, _ in info) and
            sorted(lab["slot"] for lab, _ in info) == ["0", "1"] and
            S.value(b, "portico_workers") == 2 and
            S.value(b, "portico_config_generation") == 1,
            "worker_info: slots 0 and 1 running portico's worker pids, "
            "generation 1", lambda: [pids, info])

    r = S.request(stat, path="/status")
    try:
        js = r.json()
    except Exception as e:
        js = None
        t.check(False, "/status parses as JSON", [str(e), H.describe(r)])
    if js is not None:
        missing = [k for k in S.JSON_KEYS if k not in js]
        master = int(open(t.path("portico.pid")).read().strip())
        t.check(not missing and js["pid"] == master and
                js["generation"] == 1 and len(js["slots"]) == 2 and
                js["counters"]["denied"] >= 3 and
                js["modules"]["acl_denied"] >= 3 and
                sorted(w["pid"] for w in js["workers"]) == pids and
                js["transactions"]["http"]["2xx"] >= 7 and
                "+Inf" in js["histograms"]["request_duration"]["buckets"],
                "/status: one JSON object with the documented keys, "
                "agreeing with /metrics", lambda: ["missing %s" % missing,
                                                   json.dumps(js)[:600]])

    check_status_http(t, stat)
    check_udp(t, stat, socks)

    before = S.scrape(stat)[0]
    r = S.request(stat2)
    after = S.scrape(stat)[0]
    t.check(getattr(r, "status", None) == 403 and r.closes(),
            "a status listener the acl denies answers 403 and closes",
            lambda: H.describe(r))
    t.check(delta(before, after, "portico_module_acl_denied_total") == 1 and
            delta(before, after, "portico_module_acl_rule_denied_total",
                  rule="nostat2") == 1 and
            delta(before, after, "portico_transactions_total",
                  protocol="status", **{"class": "4xx"}) == 1,
            "counted: one more acl denial, one status 4xx",
            lambda: [delta(before, after, "portico_module_acl_denied_total")])

    # Reloads: a good one, then a bad one.
    denied = S.value(after, "portico_module_acl_denied_total")
    p.hup()
    ok = p.wait_log(r"reloaded .*generation 2", 1, timeout=ptest.bound(10))
    s = None
    if ok:
        s = ptest.wait_for(lambda: (lambda x: x if x and S.value(
            x, "portico_config_generation") == 2 and all(
            lab["generation"] == "2" for lab, _ in S.series(
                x, "portico_worker_info") if lab["state"] == "running")
            else None)(S.scrape(stat)[0]), ptest.bound(10))
    t.check(bool(s) and
            S.value(s, "portico_config_reloads_total", result="ok") == 1 and
            S.value(s, "portico_config_last_reload_success") == 1 and
            S.value(s, "portico_config_last_reload_time_seconds") > 0 and
            S.value(s, "portico_module_acl_denied_total") >= denied,
            "after a reload: generation 2, one ok reload, the new workers "
            "at generation 2, module counters kept", lambda: [
                sorted((k, v) for k, v in (s or {}).items()
                       if "config" in k[0] or "worker_info" in k[0])])
    ptest.write_file(t.path("portico.conf"), text + "\nbroken = ;\n")
    p.hup()
    p.wait_log(r"reload failed", 1, timeout=ptest.bound(10))
    s = ptest.wait_for(lambda: (lambda x: x if x and S.value(
        x, "portico_config_reloads_total", result="failed") == 1
        else None)(S.scrape(stat)[0]), ptest.bound(5))
    t.check(bool(s) and
            S.value(s, "portico_config_last_reload_success") == 0 and
            S.value(s, "portico_config_generation") == 2,
            "a bad reload: reloads{result=\"failed\"} 1, last reload "
            "failed, generation still 2", lambda: [sorted(
                (k, v) for k, v in (s or {}).items() if "config" in k[0])])
    last = S.scrape(stat)[0] or {}
    t.stop_portico(p)
    # The master's exit totals say what /metrics said last.
    tot = dict(re.findall(r"(\w+)=(\d+)", (p.log_lines(
        r"master: totals: ") or [""])[-1]))
    want = {"udp_up": S.value(last, "portico_udp_datagrams_total",
                              direction="up"),
            "udp_down": S.value(last, "portico_udp_datagrams_total",
                                direction="down"),
            "udp_denied": S.value(last, "portico_udp_datagrams_dropped_total",
                                  reason="denied"),
            "udp_dropped": sum(v for lb, v in S.series(
                last, "portico_udp_datagrams_dropped_total")
                if list(lb) == ["reason"] and lb["reason"] != "denied")}
    got = {k: int(tot[k]) if k in tot else None for k in want}
    t.check(got == {k: int(v) if v is not None else -1
                    for k, v in want.items()} and got["udp_up"] >= 4,
            "the exit totals' udp_up, udp_down, udp_denied and udp_dropped "
            "equal the last scrape's", lambda: ["want %s" % want,
                                               "got %s" % got])


if __name__ == "__main__":
    ptest.Test("status_metrics").run(main)
