#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A real browser over HTTP/2 to the proxy (issue 34): headless Chromium
(Debian's chromium) with --proxy-server=https://127.0.0.1:PORT loads
t/integ/pagetest.py's page through portico's TLS listener, which offers
h2 by ALPN. The page has 30 resources (fetch(), <img> and <script>) on
three HTTPS origins, reached through CONNECT tunnels, and on the plain
HTTP origin that serves the page, and opens a WebSocket to an echo
origin (ws://, tunnelled too).

- the page's summary (chromium --dump-dom) says all 30 resources came
  back with the right content and the WebSocket echoed its message;
- each origin saw its own requests: each HTTPS origin its 8, the plain
  origin its 6 with the page (with portico's Via), the echo origin the
  upgrade and the message;
- portico's access log (JSON) has every one of them with client_proto
  "h2" and a stream number: a GET per plain-origin request, a CONNECT
  per tunnel to each HTTPS origin and to the echo origin, all on one
  connection (one client port), each on a stream of its own;
- /metrics of a status listener: the tls module counted ONE handshake
  (portico_module_tls_handshakes_total), portico_http2_connections_total
  is 1, portico_http2_streams_total is the number of h2 transactions;
- the same page through a second TLS listener with `http2 = false`
  loads as well, over HTTP/1.1 (no client_proto in the log), and there
  every tunnel and request connection is a TLS connection of its own:
  more than one handshake, one per accepted connection. So the one
  handshake above is HTTP/2's doing, not a counter that counts nothing.

Chromium runs as pagetest.chromium_argv starts it: a fresh profile with
network prediction off (else a preconnect opens a second TLS connection
to the proxy, closed unused once the first says h2) and Google's hosts
bypassing the proxy (its update, time and account checks would open
connections of their own), so what reaches the proxy is the page's.

Timing is not asserted here (bench/h2-pageload measures it).
"""
import os
import shutil
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402
import accesslogtest as AL  # noqa: E402
import statustest as S  # noqa: E402
import pagetest as PG  # noqa: E402


def tls_listener(name, port, cert, key, extra=""):
    """A TLS listener; <extra>: more settings of the listener itself."""
    return ('  { name = "%s"; address = "127.0.0.1:%d"; protocol = "http"; '
            'transport = "tls";\n    tls = { certificate = "%s"; '
            'key = "%s"; }; %s}' % (name, port, cert, key, extra))


def scrape(port):
    """The samples of /metrics, or the error text."""
    samples, text = S.scrape(port)
    return text if samples is None else samples


def delta(before, after, name):
    """How much the unlabelled counter <name> went up between two
    scrapes, or None."""
    if isinstance(before, str) or isinstance(after, str):
        return None
    a, b = S.value(after, name), S.value(before, name)
    return None if a is None else a - (b or 0)


def load(t, exe, site, port, spkis, run):
    """Chromium loads the page of <run> through the proxy on <port>: (the
    page's summary dict, rc, stderr tail)."""
    argv = PG.chromium_argv(exe, port, spkis, t.path("profile-" + run),
                            site.url(run))
    rc, dom, err = PG.run_chromium(argv, ptest.bound(90), t.tmp)
    return PG.summary(dom), rc, dom, err


def explain(t, p, jlog, listener):
    """What portico saw of a page load that failed: the transactions of
    <listener> by client connection, and the error log."""
    recs = AL.transactions(AL.json_records(jlog)[0])
    t.diag(["the page failed; portico's transactions on listener %s:"
            % listener] + by_connection(
                [r for r in recs if r.get("listener") == listener]) +
           ["error log:"] + ptest.tail(p.log(), 30))


def page_checks(t, site, run, s, rc, dom, err, label):
    """The checks of what the page and the origins saw; whether the page
    came back whole."""
    ok = t.check(rc == 0 and "ok" in s, "%s: chromium ran and dumped the "
                 "page's summary" % label,
                 lambda: ["rc %r" % rc, dom[:400]] + ptest.tail(err, 15))
    ok &= t.check(s.get("ok") == PG.RESOURCES and s.get("failed") == 0 and
                  s.get("of") == PG.RESOURCES,
                  "%s: all %d resources came back with their content (%d "
                  "fetch(), img and script on each of 3 HTTPS origins, %d "
                  "on the plain one)" % (label, PG.RESOURCES, PG.PER_HTTPS,
                                         PG.PER_PLAIN),
                  lambda: [repr({k: v for k, v in s.items()
                                 if k != "failures"})] +
                  s.get("failures", [])[:30])
    ok &= t.check(s.get("ws") == "echo echo:" + run,
                  "%s: the WebSocket echo came back" % label,
                  lambda: "the page says: %s" % s.get("ws"))
    # What each origin saw of this run.
    for i, o in enumerate(site.https):
        want = sorted(rid for rid, ro, _, _ in site.resources(run)
                      if ro is o)
        got = sorted(r["path"][3:] for r in o.seen(run)
                     if r["path"].startswith("/r/"))
        t.check(got == want, "%s: HTTPS origin %d saw its %d requests, "
                "once each" % (label, i + 1, len(want)),
                lambda: ["want %s" % want, "got %s" % got])
    want = sorted(["/page", "/hold", "/release"] +
                  ["/r/" + rid for rid, ro, _, _ in site.resources(run)
                   if ro is site.plain])
    seen = site.plain.seen(run)
    got = sorted(r["path"] for r in seen)
    t.check(got == want and all("portico" in (r["via"] or "") for r in seen),
            "%s: the plain origin saw the page, its %d resources, the hold "
            "and the release, each once, with portico's Via" % (
                label, PG.PER_PLAIN),
            lambda: ["want %s" % want, "got %s" % [(r["path"], r["via"])
                                                  for r in seen]])
    ws = site.ws.seen(run)
    t.check([r["path"] for r in ws] == ["/ws", "ws-message"] and
            ws[1]["q"].get("data") == "echo:" + run,
            "%s: the echo origin saw the upgrade and the message" % label,
            lambda: repr(ws))
    return ok


def classify(site, run, recs):
    """The access-log records of one page load: {"plain": the GETs of
    the plain origin that carry <run> (page, resources, hold, release),
    "https": [the CONNECTs to each HTTPS origin], "ws": the CONNECTs to
    the echo origin, "other": the rest (Chromium's favicon request)}."""
    by = {"plain": [], "https": [[] for _ in site.https], "ws": [],
          "other": []}
    plain = site.plain.base + "/"
    for r in recs:
        tg = r.get("target") or ""
        if tg.startswith(plain) and ("run=%s" % run) in tg:
            by["plain"].append(r)
            continue
        for i, o in enumerate(site.https):
            if tg == "127.0.0.1:%d" % o.port:
                by["https"][i].append(r)
                break
        else:
            if tg == "127.0.0.1:%d" % site.ws.port:
                by["ws"].append(r)
            else:
                by["other"].append(r)
    return by


def path_of(r):
    return urllib.parse.urlsplit(r.get("target") or "").path


def short(r):
    return "port %s %s %s %s client_proto=%s stream=%s status=%s %s" % (
        r.get("client_port"), r.get("listener"), r.get("method"),
        r.get("target"), r.get("client_proto"), r.get("stream"),
        r.get("status"), r.get("error") or "")


def by_connection(recs):
    """Lines: each client connection (port) and its transactions."""
    ports = {}
    for r in recs:
        ports.setdefault(r.get("client_port"), []).append(r)
    out = []
    for port, rs in sorted(ports.items(), key=lambda kv: str(kv[0])):
        out.append("connection from port %s: %d transactions" % (
            port, len(rs)))
        out += ["  " + short(r) for r in rs]
    return out


def page_records(site, run, jlog, listener):
    """Waits (bounded) until the access log has the page's transactions
    on <listener>: the plain origin's and at least one tunnel to each
    other origin. The tunnels are logged when they close, which they
    did when Chromium exited. The records of <listener>."""
    want = len(expected_plain(site, run))

    def complete(recs):
        by = classify(site, run, [r for r in recs
                                  if r.get("listener") == listener])
        return len(by["plain"]) >= want and all(by["https"]) and by["ws"]
    recs = AL.wait_json(jlog, complete, ptest.bound(15))
    return [r for r in recs if r.get("listener") == listener]


def expected_plain(site, run):
    return sorted(["/page", "/hold", "/release"] +
                  ["/r/" + rid for rid, ro, _, _ in site.resources(run)
                   if ro is site.plain])


def main(t):
    why = T.missing() or AL.missing()
    if why:
        t.skip("chromium over HTTP/2 to the HTTPS proxy", why)
        return
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        t.skip("chromium over HTTP/2 to the HTTPS proxy",
               "no chromium program in PATH", need="chromium")
        return
    if not t.check(ptest.have_h2_build(), "portico was built with "
                   "libnghttp2 (configure: HTTP/2: yes)",
                   "config.h has no HAVE_NGHTTP2: install libnghttp2-dev "
                   "and configure again"):
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    site = PG.Site(t.tmp)
    t.at_exit(site.stop)
    spkis = [PG.spki_hash(cert), PG.spki_hash(site.cert)]
    h2port, h1port, stat = (ptest.free_port() for _ in range(3))
    jlog = t.path("access.json")
    listeners = [
        tls_listener("h2", h2port, cert, key),
        tls_listener("h1", h1port, cert, key, "http2 = false; "),
        '  { name = "stat"; address = "127.0.0.1:%d"; protocol = "status"; }'
        % stat]
    conf = T.conf(t, ",\n".join(listeners), log_level="debug",
                  modules_extra=",\n  " + AL.module(
                      ['file = "%s"; format = "json";' % jlog]))
    p = t.portico(conf)
    w0 = p.workers()

    # --- HTTP/2 -----------------------------------------------------------
    m0 = scrape(stat)
    t.check(not isinstance(m0, str), "/metrics answers before the page "
            "load", lambda: m0)
    s, rc, dom, err = load(t, exe, site, h2port, spkis, "h2")
    if not page_checks(t, site, "h2", s, rc, dom, err, "h2"):
        explain(t, p, jlog, "h2")
    t.diag("h2 page: load event %s ms, 30 resources %s ms, echo %s ms" % (
        s.get("load_ms"), s.get("resources_ms"), s.get("ws_ms")))

    mine = page_records(site, "h2", jlog, "h2")
    by = classify(site, "h2", mine)
    want = expected_plain(site, "h2")
    got = sorted(path_of(r) for r in by["plain"])
    t.check(got == want and all(
        r.get("method") == "GET" and r.get("client_proto") == "h2" and
        isinstance(r.get("stream"), int) and r.get("status") == 200
        for r in by["plain"]),
        "h2 access log: the %d requests to the plain origin (page, %d "
        "resources, hold, release) are GETs with client_proto h2, a "
        "stream number and status 200" % (len(want), PG.PER_PLAIN),
        lambda: ["want %s" % want] + [short(r) for r in by["plain"]])
    tunnels = [r for rs in by["https"] for r in rs]
    t.check(all(any(r.get("status") == 200 for r in rs)
                for rs in by["https"]) and
            all(r.get("method") == "CONNECT" and
                r.get("client_proto") == "h2" and
                isinstance(r.get("stream"), int) for r in tunnels),
            "h2 access log: each HTTPS origin was reached through CONNECT "
            "streams with client_proto h2 (%s per origin)" %
            "/".join(str(len(x)) for x in by["https"]),
            lambda: [short(r) for r in tunnels])
    t.check(len(by["ws"]) == 1 and by["ws"][0].get("method") == "CONNECT"
            and by["ws"][0].get("client_proto") == "h2" and
            by["ws"][0].get("status") == 200,
            "h2 access log: the WebSocket went through one CONNECT stream "
            "with client_proto h2", lambda: [short(r) for r in by["ws"]])
    ports = {r.get("client_port") for r in mine}
    ids = [r.get("stream") for r in mine]
    t.check(len(ports) == 1 and len(set(ids)) == len(ids) and
            all(isinstance(i, int) and i % 2 == 1 for i in ids),
            "h2 access log: all %d transactions of the page came on one "
            "connection, each on a stream of its own (odd: the client's)"
            % len(mine), lambda: by_connection(mine))
    if by["other"]:
        t.diag(["other transactions on the h2 listener:"] +
               [short(r) for r in by["other"]])

    m1 = scrape(stat)
    hs = delta(m0, m1, "portico_module_tls_handshakes_total")
    conns = delta(m0, m1, "portico_http2_connections_total")
    streams = delta(m0, m1, "portico_http2_streams_total")
    t.diag("h2: %s TLS handshakes, %s HTTP/2 connections, %s streams, "
           "%d transactions logged (%d CONNECT)" % (
               hs, conns, streams, len(mine),
               sum(r.get("method") == "CONNECT" for r in mine)))
    t.check(hs == 1, "the whole page came through ONE TLS handshake to "
            "portico (portico_module_tls_handshakes_total went up by 1)",
            lambda: "went up by %r" % hs)
    t.check(conns == 1, "portico_http2_connections_total went up by 1",
            lambda: "went up by %r" % conns)
    t.check(streams == len(mine) and streams >= len(want) + 4,
            "portico_http2_streams_total went up by the %d h2 transactions "
            "logged" % len(mine), lambda: "went up by %r" % streams)

    # --- the same page over HTTP/1.1 (http2 = false) -------------------------
    s, rc, dom, err = load(t, exe, site, h1port, spkis, "h1")
    if not page_checks(t, site, "h1", s, rc, dom, err, "http2 = false"):
        explain(t, p, jlog, "h1")

    mine1 = page_records(site, "h1", jlog, "h1")
    t.check(mine1 and all("client_proto" not in r and "stream" not in r
                          for r in mine1),
            "http2 = false: the page's %d transactions came over HTTP/1.1 "
            "(no client_proto, no stream in the log)" % len(mine1),
            lambda: [short(r) for r in mine1])
    m2 = scrape(stat)
    hs1 = delta(m1, m2, "portico_module_tls_handshakes_total")
    bad1 = delta(m1, m2, "portico_module_tls_handshake_failed_total")
    acc1 = delta(m1, m2, "portico_connections_accepted_total")
    t.diag("http2 = false: %s TLS handshakes (%s failed), %s connections "
           "accepted (one of them the scrape)" % (hs1, bad1, acc1))
    # A connection Chromium gives up before its handshake ends counts as
    # a failed handshake: each accepted TLS connection is one or the
    # other.
    t.check(hs1 is not None and hs1 > 1 and bad1 is not None and
            acc1 is not None and hs1 + bad1 == acc1 - 1 and
            delta(m1, m2, "portico_http2_connections_total") == 0,
            "http2 = false: a TLS handshake per connection, more than one "
            "(%s), and no HTTP/2 connection" % hs1,
            lambda: "handshakes %r, failed %r, accepted %r (with one "
            "scrape)" % (hs1, bad1, acc1))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("h2_chromium").run(main)
