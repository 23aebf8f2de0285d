#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The acl module's rules (the real modules/acl acl.so) against loopback
origins, with allow_private = true (private destinations are
acl_private.py's), a test DNS server resolving every allowed name to
127.0.0.1 (dst3.test to 127.0.0.3), and fieldrec loaded after acl to read
the decision label at LOG.

- each condition alone, in a rule set whose default is allow: src (a
  client bound to 127.0.0.2), dst (127.0.0.3, literal and by name, judged
  after DNS; an IPv4-mapped address meets IPv4 networks), host exact /
  .suffix (and *.suffix) / ~regex (anchored and not) / an address as
  text (HTTP and SOCKS4), host_file (two
  files; names, .suffix lines, hosts-file lines, comments), port (one,
  and a range whose both ends count), src and dst ::1/128 over IPv6,
  user (set by fieldrec from X-User at AUTH; one name, and "*"),
  listener (by name, and unnamed ones by their address, IPv4 and IPv6),
  method
  (case-sensitive), and a rule of two conditions (both must match). Each
  refused request is a 403 whose body names no rule, the origin never
  sees it, and the label is the rule's name; the request that differs in
  that one condition passes;
- a host denied at ACCESS is never resolved (the DNS server is never
  asked for it);
- a listener with acl = { enabled = false; } lets a denied host through;
- a keep-alive connection: after a 403 the next request on it (if the
  proxy kept it open) is judged on its own; after a 200, a denied one
  gets 403;
- CONNECT and SOCKS5/SOCKS4a targets meet the same host and port rules;
- a name resolving to a denied and an allowed address: the denied one
  is never connected to;
- matching: exact "example.test" does not match "a.example.test"; a
  ".suffix" matches the domain and its subdomains but not "xsuffix.test";
  "~^ads\\.example\\.test$" does not match "ads.example.test.evil.test";
  upper-case names are matched by lower-case rules, and lower-case names
  by rules written in mixed case; one trailing dot is ignored (exact,
  suffix, regex, host_file);
- the host judged is the request URI's (a Host field naming another is
  not what counts); a SOCKS5 name that is an address literal still meets
  dst rules;
- rules of one kind in a row (regex, exact and .suffix, host_file, src
  and dst with nested networks): the first matching rule decides, not
  the narrowest; a verdict for a host is not reused for a request to
  that host on another port or with another method; a regex with a
  backtracking verb ((*COMMIT), (*PRUNE)) beside others does not stop
  them matching;
- two workers and eight clients at once, on keep-alive connections,
  each get the rules' answer for every name;
- a dst rule is judged for each request, also when an upstream
  connection kept from an allowed request could serve it;
- a rule without conditions matches everything; without a default key,
  what no rule matches is denied;
- first match: an allow before a deny for the same host allows, a deny
  before an allow denies; default deny refuses what no rule matched
  (label "default"), default allow lets it through; an unnamed rule's
  label is "ruleN";
- protocol: http, connect, websocket, socks5, socks4, tcp each denied
  alone, the others passing (curl -p -x and raw CONNECT, a WebSocket
  upgrade, raw SOCKS5/SOCKS4 clients, a tcp forwarding listener);
- a mixed libconfig list port = ( N, "lo-hi" ) is accepted;
- user with the real auth module (skipped without auth.so): a named user
  is refused with 403 (not 407) over HTTP, REP 0x02 over SOCKS5; "*"
  refuses an authenticated user, not an anonymous request, nor one
  whose credentials no module verified (auth = { required = false; });
- the master's totals: acl_denied counts the refusals; for ten plain
  requests, acl_allowed and acl_denied count one each.
"""
import base64
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import acltest as ACL  # noqa: E402
import authtest as A  # noqa: E402

NAMES = ["plain.test", "a.exact.test", "exact.test", "xsuffix.test",
         "ads.example.test.evil.test", "xads.example.test", "unlisted.test",
         "combo.test", "example.test", "order1.test", "wild.test",
         "a.wild.test", "re12.test", "re12.test.evil.test", "none.test",
         "a.example.test", "proto.test", "x.filesfx.test", "cache.test",
         "keep.test", "exact1.test", "a.exact2.test", "n12345.big.test",
         "ab.verb.test", "bc.verb.test", "cd.verb.test", "zz.test",
         "bad7.test", "n00123.big.test", "a.sfx.test"]


HAVE_CURL = H.have_curl()


def distinct_origins(t, n, avoid):
    """<n> origins on 127.0.0.1 whose ports (and port+1) are all
    different from each other and from <avoid>."""
    out = []
    taken = set(avoid)
    for _ in range(n * 10):
        o = H.origin(t)
        if o.port in taken or o.port + 1 in taken or o.port - 1 in taken:
            continue
        taken.update((o.port, o.port + 1))
        out.append(o)
        if len(out) == n:
            break
    return out


def main(t):
    why = ACL.missing()
    if why:
        t.skip("acl module rules", why, need="acl.so")
        return
    if not ACL.have_fieldrec():
        t.check(False, "fieldrec.so is built (make check builds it)",
                ACL.FIELDREC_SO)
        return
    two = ACL.can_bind("127.0.0.2")
    table = {n: {"A": ["127.0.0.1"]} for n in NAMES}
    table["dst3.test"] = {"A": ["127.0.0.3"]}
    table["two.test"] = {"A": ["127.0.0.3", "127.0.0.1"]}
    dns = H.dns_server(t, table)
    conditions(t, dns, two)
    kinds_and_order(t, dns)
    catch_all(t, dns)
    default_omitted(t, dns)
    runs_and_cache(t, dns)
    regex_verbs(t, dns)
    pooled(t, dns)
    concurrent(t, dns)
    if two:
        cidr_runs(t, dns)
    else:
        t.skip("nested CIDR rules", "cannot bind 127.0.0.2",
               need="127.0.0.2")
    protocols(t, dns)
    mixed_list(t)
    with_auth(t, dns)


def conditions(t, dns, two):
    o = H.origin(t)
    # 127.0.0.3 on the same port: two.test (127.0.0.3 first) would reach
    # it without the dst rule
    o3 = ACL.origin_at(t, "127.0.0.3", o.port) if two else None
    o9 = ACL.origin_at(t, "127.0.0.9", o.port) if two else None
    oport, orange, ocombo = distinct_origins(t, 3, [o.port] + (
        [o3.port] if o3 else []))
    v6 = ptest.have_ipv6()
    o6 = H.origin(t, "::1") if v6 else None
    echo = t.echo_server()
    web, unnamed, closed, off, socks = (ptest.free_port() for _ in range(5))
    web6 = ptest.free_port("::1") if v6 else None
    unnamed6 = ptest.free_port("::1") if v6 else None
    hf = t.path("hosts-a")
    ptest.write_file(hf, "# blocked names\nlisted.test\n\n"
                     "  .filesfx.test  \n# hosts-file lines\n"
                     "0.0.0.0 hostsfmt.test\n127.0.0.1 hostsfmt2.test\n"
                     "# the end\n")
    hf2 = t.path("hosts-b")
    ptest.write_file(hf2, "second.test\n")
    rules = [
        dict(name="r-src", action="deny", src=["127.0.0.2/32"]),
        dict(name="r-address6", action="deny", method="HEAD",
             listener=["[::1]:%s" % unnamed6]),
        dict(name="r-src6", action="deny", src=["::1/128"]),
        dict(name="r-exact", action="deny", host=["exact.test"]),
        dict(name="r-suffix", action="deny", host=[".suffix.test"]),
        dict(name="r-star", action="deny", host=["*.star.test"]),
        dict(name="r-regex", action="deny",
             host=["~^ads\\.example\\.test$"]),
        dict(name="r-unanchored", action="deny", host="~track"),
        dict(name="r-iphost", action="deny", host="127.0.0.9"),
        dict(name="r-mixed", action="deny",
             host=["MiXeD.Test", "~^UP\\.Case\\.test$"]),
        dict(name="r-file", action="deny", host_file=[hf, hf2]),
        dict(name="r-port", action="deny", port=oport.port),
        dict(name="r-range", action="deny",
             port=["%d-%d" % (orange.port, orange.port + 1)]),
        dict(name="r-user", action="deny", user=["mallory"]),
        dict(name="r-anyuser", action="deny", user=["*"], method=["PUT"]),
        dict(name="r-listener", action="deny", listener=["closed"]),
        dict(name="r-address", action="deny",
             listener=["127.0.0.1:%d" % unnamed]),
        dict(name="r-method", action="deny", method=["POST", "get"]),
        dict(name="r-combo", action="deny", host=["combo.test"],
             port=[ocombo.port]),
        # last: every rule above is judged at ACCESS, before DNS
        dict(name="r-dst", action="deny", dst=["127.0.0.3/32"]),
        dict(name="r-dst6", action="deny", dst=["::1/128"]),
    ]
    if not v6:      # a listener rule must name a listener that exists
        rules = [r for r in rules if r["name"] != "r-address6"]
    names = [r["name"] for r in rules]
    rec = t.path("rules.rec")
    p = ACL.start(t, [ACL.http_listener("web", web),
                      ACL.http_listener(None, unnamed),
                      ACL.http_listener("closed", closed),
                      ACL.http_listener("off", off,
                                        "acl = { enabled = false; };"),
                      ACL.socks_listener("socks", socks)] +
                  (['{ name = "v6"; address = "[::1]:%d"; protocol = "http"; '
                    '}' % web6, '{ address = "[::1]:%d"; protocol = "http"; '
                    '}' % unnamed6] if v6 else []),
                  [ACL.acl_entry(rules, default="allow", allow_private=True),
                   ACL.fieldrec_entry(rec, 'user_header = "X-User";')],
                  log="rules.log", dns=dns)
    w0 = p.workers()
    j = ACL.Judge(t, o, web, rec, secret=names)
    denied = 0

    def deny(host, label, desc, **kw):
        nonlocal denied
        denied += 1
        return j.http(host, 403, desc, label=label, **kw)

    j.http("plain.test", 200, "no rule matches: the default allows",
           label="default")
    # src
    if two:
        deny("plain.test", "r-src", "src 127.0.0.2/32, the client bound to "
             "127.0.0.2", src="127.0.0.2")
    else:
        t.skip("src 127.0.0.2/32 denies a client from 127.0.0.2",
               "cannot bind 127.0.0.2", need="127.0.0.2")
    j.http("plain.test", 200, "src 127.0.0.2/32 does not match a client "
           "from 127.0.0.1", src="127.0.0.1", label="default")
    # host, exact
    deny("exact.test", "r-exact", "host exact")
    deny("EXACT.Test", "r-exact", "host exact, the request in upper case")
    deny("exact.test.", "r-exact", "host exact, one trailing dot ignored")
    j.http("a.exact.test", 200, "exact exact.test does not match a "
           "subdomain", label="default")
    # host, .suffix
    deny("suffix.test", "r-suffix", ".suffix.test matches the domain")
    deny("a.suffix.test", "r-suffix", ".suffix.test matches a subdomain")
    deny("b.a.suffix.test", "r-suffix", ".suffix.test matches a "
         "sub-subdomain")
    deny("A.SUFFIX.Test", "r-suffix", ".suffix.test matches in upper "
         "case")
    deny("star.test", "r-star", "*.star.test (the other spelling of "
         ".star.test) matches the domain")
    deny("a.star.test", "r-star", "*.star.test matches a subdomain")
    j.http("xsuffix.test", 200, ".suffix.test does not match xsuffix.test "
           "(not a label boundary)", label="default")
    # host, ~regex
    deny("ads.example.test", "r-regex", "~^ads\\.example\\.test$")
    deny("ADS.Example.Test", "r-regex", "the regex is case-insensitive")
    j.http("ads.example.test.evil.test", 200, "the anchored regex does not "
           "match a longer name", label="default")
    j.http("xads.example.test", 200, "the anchored regex does not match a "
           "name with a prefix", label="default")
    deny("www.tracking.test", "r-unanchored", "~track is not anchored: it "
         "matches inside a name")
    # host_file
    deny("listed.test", "r-file", "host_file: a listed name")
    deny("LISTED.test", "r-file", "host_file: a listed name in upper case")
    deny("hostsfmt.test", "r-file", "host_file: a hosts-file line "
         "\"0.0.0.0 name\"")
    deny("hostsfmt2.test", "r-file", "host_file: a hosts-file line "
         "\"127.0.0.1 name\"")
    deny("second.test", "r-file", "host_file: a name listed in the second "
         "file of two")
    deny("filesfx.test", "r-file", "host_file: a .suffix line matches the "
         "domain")
    deny("x.filesfx.test", "r-file", "host_file: a .suffix line matches a "
         "subdomain")
    j.http("unlisted.test", 200, "host_file: an unlisted name passes",
           label="default")
    # one trailing dot, and rules written in mixed case
    deny("ads.example.test.", "r-regex", "the anchored regex, the name with "
         "one trailing dot")
    deny("a.suffix.test.", "r-suffix", ".suffix.test, a subdomain with one "
         "trailing dot")
    deny("listed.test.", "r-file", "host_file, a listed name with one "
         "trailing dot")
    deny("x.filesfx.test.", "r-file", "host_file .suffix line, a subdomain "
         "with one trailing dot")
    deny("mixed.test", "r-mixed", "a rule written \"MiXeD.Test\" matches "
         "mixed.test")
    deny("up.case.test", "r-mixed", "a regex written with upper case "
         "matches a lower-case name")
    asked = [n for n in ("exact.test", "suffix.test", "a.suffix.test",
                         "ads.example.test", "listed.test",
                         "x.filesfx.test", "www.tracking.test")
             if dns.count(n)]
    t.check(not asked and dns.count("a.exact.test") > 0,
            "names denied at ACCESS were never resolved (the DNS server "
            "was asked only for allowed ones)",
            "asked for %r; queries %r" % (asked, dns.queries))
    # port
    deny("plain.test", "r-port", "port %d (one port)" % oport.port,
         origin=oport)
    deny("plain.test", "r-range", "port range, its low end",
         origin=orange)
    # nothing listens on the range's high end: a 403 (not a 502) shows
    # the rule refused it before any connect
    deny("plain.test", "r-range", "port range, its high end (nobody "
         "listens there)", port=orange.port + 1)
    j.http("plain.test", 200, "a port in no rule passes", label="default")
    # user (fieldrec sets it from X-User at AUTH)
    deny("plain.test", "r-user", "user mallory", headers=[("X-User",
                                                           "mallory")])
    j.http("plain.test", 200, "user bob is not mallory",
           headers=[("X-User", "bob")], label="default")
    deny("plain.test", "r-anyuser", "user \"*\" (and PUT): any user",
         method="PUT", headers=[("X-User", "bob")])
    j.http("plain.test", 200, "user \"*\" does not match a request "
           "without a user", method="PUT", label="default")
    # listener
    deny("plain.test", "r-listener", "listener \"closed\" by name",
         via=closed)
    deny("plain.test", "r-address", "an unnamed listener by its address "
         "127.0.0.1:PORT", via=unnamed)
    # method
    deny("plain.test", "r-method", "method POST", method="POST")
    j.http("plain.test", 200, "method \"get\" in a rule does not match GET "
           "(case-sensitive)", label="default")
    # two conditions
    deny("combo.test", "r-combo", "host and port both match",
         origin=ocombo)
    j.http("combo.test", 200, "the host alone does not match a rule of "
           "host and port", label="default")
    j.http("plain.test", 200, "the port alone does not match a rule of "
           "host and port", origin=ocombo, label="default")
    # dst, judged after DNS
    if o3 is not None:
        deny("127.0.0.3", "r-dst", "dst 127.0.0.3/32, a literal",
             origin=o3)
        deny("dst3.test", "r-dst", "dst 127.0.0.3/32, a name resolving to "
             "it", origin=o3)
        deny("[::ffff:127.0.0.3]", "r-dst", "dst 127.0.0.3/32 holds the "
             "IPv4-mapped [::ffff:127.0.0.3]", origin=o3)
        j.http("127.0.0.1", 200, "dst 127.0.0.3/32 does not match "
               "127.0.0.1", label="default")
        # one address of two denied: that one is never connected to
        tag = j.tag()
        r = ACL.request(web, "GET", j.url("two.test", tag))
        st = r.status if isinstance(r, H.Resp) else r
        t.check(not o3.reqs_for("/" + tag) and (
            st == 403 or st == 200 and o.reqs_for("/" + tag)),
            "a name resolving to 127.0.0.3 and 127.0.0.1, dst 127.0.0.3/32 "
            "denied: 127.0.0.3 is never connected to (the request is "
            "refused or goes to 127.0.0.1)", lambda: H.describe(r))
        t.diag("two.test (127.0.0.3 denied, 127.0.0.1 not): %s" % st)
        if st == 403:
            denied += 1
    else:
        t.skip("dst 127.0.0.3/32", "cannot bind 127.0.0.2 (nor "
               "127.0.0.3)", need="127.0.0.2")
    if o9 is not None:
        deny("127.0.0.9", "r-iphost", "host \"127.0.0.9\": an address the "
             "client gave is matched as its text", origin=o9)
        before = o9.accepted
        cd, ok, closed = ACL.socks4(socks, "127.0.0.9", o9.port)
        denied += 1
        t.check(cd == 0x5B and o9.accepted == before, "SOCKS4 to 127.0.0.9 "
                "(host \"127.0.0.9\"): CD 0x5B, nothing connected there",
                cd)
    else:
        t.skip("host \"127.0.0.9\"", "cannot bind 127.0.0.2 (nor "
               "127.0.0.9)", need="127.0.0.2")
    if v6:
        deny("plain.test", "r-src6", "src ::1/128, a client on an IPv6 "
             "listener", via=web6, via_host="::1")
        deny("[::1]", "r-dst6", "dst ::1/128, the literal [::1]", origin=o6)
        deny("plain.test", "r-address6", "an unnamed listener [::1]:PORT by "
             "its address (and HEAD)", method="HEAD", via=unnamed6,
             via_host="::1")
    else:
        t.skip("src and dst ::1/128", "no IPv6 loopback", need="ipv6")

    # keep-alive: a 403, then the next request on the same connection
    c = ACL.conn_from(web)
    tag1, tag2 = j.tag(), j.tag()
    try:
        c.send(H.request_bytes("GET", j.url("exact.test", tag1)))
        r1 = H.read_response(c)
        try:
            c.send(H.request_bytes("GET", j.url("plain.test", tag2)))
            r2 = H.read_response(c)
        except (H.Closed, OSError) as e:
            r2 = "closed: %s" % e
    except Exception as e:
        r1, r2 = "%s: %s" % (type(e).__name__, e), None
    c.close()
    denied += 1
    t.check(isinstance(r1, H.Resp) and r1.status == 403 and
            (not isinstance(r2, H.Resp) and str(r2).startswith("closed") or
             isinstance(r2, H.Resp) and r2.status == 200 and
             o.reqs_for("/" + tag2)) and not o.reqs_for("/" + tag1),
            "keep-alive: a 403, then the next request on the connection is "
            "judged on its own (200) or the connection was closed",
            lambda: H.describe(r1) + H.describe(r2))

    # keep-alive: a 200, then a request the rules deny on that connection
    c = ACL.conn_from(web)
    tag1, tag2 = j.tag(), j.tag()
    try:
        c.send(H.request_bytes("GET", j.url("plain.test", tag1)))
        r1 = H.read_response(c)
        c.send(H.request_bytes("GET", j.url("exact.test", tag2)))
        r2 = H.read_response(c)
    except Exception as e:
        r1, r2 = "%s: %s" % (type(e).__name__, e), None
    c.close()
    denied += 1
    t.check(isinstance(r1, H.Resp) and r1.status == 200 and
            isinstance(r2, H.Resp) and r2.status == 403 and
            o.reqs_for("/" + tag1) and not o.reqs_for("/" + tag2),
            "keep-alive: a 200, then a request for a denied host on the "
            "same connection gets 403 (each request is judged)",
            lambda: H.describe(r1) + H.describe(r2))

    # the host judged is the one the proxy connects to
    tag = j.tag()
    r = ACL.request(web, "GET", j.url("exact.test", tag),
                    headers=[("Host", "plain.test:%d" % o.port)])
    denied += 1
    t.check(isinstance(r, H.Resp) and r.status == 403 and
            not o.reqs_for("/" + tag), "GET http://exact.test/ with Host: "
            "plain.test: 403 (the URI's host is judged)",
            lambda: H.describe(r))
    if o3 is not None:
        before = o3.accepted
        rep, closed = ACL.socks5_name(socks, "127.0.0.3", o3.port)
        denied += 1
        t.check(rep == 0x02 and o3.accepted == before, "SOCKS5 ATYP 3 (a "
                "name) \"127.0.0.3\": dst 127.0.0.3/32 still applies, REP "
                "0x02", (S.rep_name(rep), o3.accepted - before))

    # CONNECT and SOCKS meet the same rules
    before = oport.accepted
    st, ok = ACL.connect_http(web, "plain.test", oport.port)
    denied += 1
    t.check(st == 403 and oport.accepted == before, "CONNECT to the denied "
            "port: 403, nothing connected there", st)
    st, ok = ACL.connect_http(web, "EXACT.test.", echo.port)
    denied += 1
    t.check(st == 403, "CONNECT EXACT.test.:PORT (upper case, trailing "
            "dot): 403", st)
    st, ok = ACL.connect_http(web, "plain.test", echo.port)
    t.check(st == 200 and ok, "CONNECT plain.test: 200, the tunnel echoes",
            st)
    before = oport.accepted
    rep, ok, closed = ACL.socks5(socks, "plain.test", oport.port)
    denied += 1
    t.check(rep == 0x02 and closed and oport.accepted == before,
            "SOCKS5 to the denied port: REP 0x02, nothing connected there",
            S.rep_name(rep))
    rep, ok, closed = ACL.socks5(socks, "EXACT.TEST.", echo.port)
    denied += 1
    t.check(rep == 0x02 and closed, "SOCKS5 to EXACT.TEST. (a name, upper "
            "case, trailing dot): REP 0x02", S.rep_name(rep))
    before = echo.accepted
    cd, ok, closed = ACL.socks4(socks, None, echo.port, name="x.filesfx.test")
    denied += 1
    t.check(cd == 0x5B and closed and echo.accepted == before,
            "SOCKS4a to x.filesfx.test (host_file .suffix; it resolves): CD "
            "0x5B, the echo server saw nothing", cd)
    before = echo.accepted
    rep, closed = ACL.socks5_name(socks, "exact.test\0.x", echo.port)
    t.check(rep not in (0, None) and echo.accepted == before,
            "SOCKS5 to a name \"exact.test\\0.x\" (a NUL inside): refused, "
            "nothing connected (no rule sees one name, the resolver "
            "another)", (S.rep_name(rep), echo.accepted - before))
    if rep == 0x02:
        denied += 1
    rep, ok, closed = ACL.socks5(socks, "plain.test", echo.port)
    t.check(rep == 0 and ok, "SOCKS5 to plain.test: REP 0, the tunnel "
            "echoes", S.rep_name(rep))

    # curl -x
    if HAVE_CURL:
        st, head = A.curl_head(web, j.url("EXACT.test", j.tag()))
        denied += 1
        t.check(st == 403, "curl -x http://EXACT.test/: 403", head)
        tag = j.tag()
        st, head = A.curl_head(web, j.url("a.exact.test", tag))
        t.check(st == 200 and o.reqs_for("/" + tag), "curl -x "
                "http://a.exact.test/: 200", head)
    else:
        t.skip("curl -x through the acl", "no curl", need="curl")

    # acl off on one listener: the denied name passes (and now resolves)
    j.http("exact.test", 200, "a listener with acl = { enabled = false; } "
           "lets a denied host through", via=off)
    H.finish(t, p, w0)
    tot = ACL.totals(p)
    t.check(tot.get("acl_denied") == denied, "the master's totals: "
            "acl_denied=%d (every refusal above)" % denied, tot)
    t.check(tot.get("acl_allowed", 0) > 0 and tot.get("acl_private") == 0,
            "the master's totals: acl_allowed counted, acl_private=0 with "
            "allow_private = true", tot)


def kinds_and_order(t, dns):
    o = H.origin(t)
    rules = [
        dict(name="allow-exact", action="allow", host="example.test"),
        dict(name="allow-first", action="allow", host="order1.test"),
        dict(name="deny-second", action="deny", host="order1.test"),
        dict(name="deny-first", action="deny", host="order2.test"),
        dict(name="allow-second", action="allow", host="order2.test"),
        dict(action="allow", host=".wild.test"),
        dict(name="allow-re", action="allow", host="~^re[0-9]+\\.test$"),
    ]
    port = ptest.free_port()
    rec = t.path("order.rec")
    p = ACL.start(t, [ACL.http_listener("web", port)],
                  [ACL.acl_entry(rules, default="deny", allow_private=True),
                   ACL.fieldrec_entry(rec)], log="order.log", dns=dns)
    w0 = p.workers()
    j = ACL.Judge(t, o, port, rec, secret=[r["name"] for r in rules
                                           if "name" in r])
    j.http("example.test", 200, "exact allow", label="allow-exact")
    j.http("Example.TEST", 200, "exact allow, other letter case",
           label="allow-exact")
    j.http("a.example.test", 403, "exact example.test does not match "
           "a.example.test: default deny", label="default")
    j.http("order1.test", 200, "an allow before a deny for the same host: "
           "first match allows", label="allow-first")
    j.http("order2.test", 403, "a deny before an allow for the same host: "
           "first match denies", label="deny-first")
    j.http("wild.test", 200, "an unnamed rule's label is ruleN (N from 1): "
           ".wild.test matches wild.test", label="rule6")
    j.http("a.wild.test", 200, "the unnamed .wild.test rule matches "
           "a.wild.test", label="rule6")
    j.http("re12.test", 200, "~^re[0-9]+\\.test$ allows re12.test",
           label="allow-re")
    j.http("re12.test.evil.test", 403, "the anchored regex does not allow "
           "re12.test.evil.test: default deny", label="default")
    j.http("none.test", 403, "no rule matches: default deny",
           label="default")
    H.finish(t, p, w0)
    tot = ACL.totals(p)
    t.check(tot.get("acl_allowed") == 6 and tot.get("acl_denied") == 4 and
            tot.get("acl_private") == 0, "the master's totals: "
            "acl_allowed=6 acl_denied=4 acl_private=0 (one per request)",
            tot)


def ws_upgrade(port, url):
    """A WebSocket handshake through the proxy: the status or an error
    string."""
    key = base64.b64encode(os.urandom(16)).decode()
    r = ACL.request(port, "GET", url, headers=[
        ("Upgrade", "websocket"), ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")])
    return r.status if isinstance(r, H.Resp) else r


def curl_connect(t, j, o, port, lbl, refused):
    """CONNECT through curl -p -x: the tunnel to the origin."""
    if not HAVE_CURL:
        t.skip(lbl + "curl -p -x", "no curl", need="curl")
        return
    tag = j.tag()
    cp = H.curl(["-p", "-x", "http://127.0.0.1:%d" % port, "-o",
                 "/dev/null", "-w", "%{http_connect} %{http_code}",
                 j.url("proto.test", tag)])
    out = cp.stdout.decode().split()
    if refused:
        t.check(out[:1] == ["403"] and not o.reqs_for("/" + tag),
                lbl + "curl -p -x (CONNECT): 403, the origin saw nothing",
                (cp.returncode, out, cp.stderr))
    else:
        t.check(out == ["200", "200"] and o.reqs_for("/" + tag),
                lbl + "curl -p -x (CONNECT): 200 and the origin's 200",
                (cp.returncode, out, cp.stderr))


PROTOCOLS = ("http", "connect", "websocket", "socks5", "socks4", "tcp")


def runs_and_cache(t, dns):
    """Rules of one kind in a row (which the module may judge together)
    and answers it may keep per host: first match still decides, and a
    verdict for one request of a host is not reused for another whose
    port or method differs."""
    o = H.origin(t)
    oc = distinct_origins(t, 1, [o.port])[0]
    big = t.path("big-hosts")
    with open(big, "w") as f:
        f.write("".join("n%05d.big.test\n" % i for i in range(20000)))
    rules = [
        dict(name="c-port", action="deny", host="~^cache", port=oc.port),
        dict(name="c-post", action="deny", host="~^cache", method="POST"),
        dict(name="k-first", action="allow", host="~^keep"),
        dict(name="k-second", action="deny", host="~keep"),
        dict(name="k-third", action="allow", host="~^x.*keep"),
        dict(name="e-exact", action="allow", host="exact1.test"),
        dict(name="e-suffix", action="deny", host=".exact1.test"),
        dict(name="e-exact2", action="deny", host="exact2.test"),
        dict(name="e-suffix2", action="allow", host=".exact2.test"),
        dict(name="f-delete", action="deny", host_file=big,
             method="DELETE"),
    ]
    port = ptest.free_port()
    rec = t.path("runs.rec")
    p = ACL.start(t, [ACL.http_listener("web", port)],
                  [ACL.acl_entry(rules, default="allow", allow_private=True),
                   ACL.fieldrec_entry(rec)], log="runs.log", dns=dns)
    w0 = p.workers()
    j = ACL.Judge(t, o, port, rec, secret=[r["name"] for r in rules])
    lbl = "runs and caches: "
    for i in range(2):
        again = " (again)" if i else ""
        j.http("cache.test", 200, lbl + "host ~^cache on another port" +
               again, label="default")
        j.http("cache.test", 403, lbl + "host ~^cache on the denied port" +
               again, origin=oc, label="c-port")
        j.http("CACHE.test.", 403, lbl + "CACHE.test. on the denied port" +
               again, origin=oc, label="c-port")
        j.http("cache.test", 403, lbl + "host ~^cache, POST" + again,
               method="POST", label="c-post")
    j.http("cache.test", 200, lbl + "host ~^cache, GET after the refusals",
           label="default")
    j.http("keep.test", 200, lbl + "the first of three matching regex "
           "rules decides", label="k-first")
    j.http("xkeep.test", 403, lbl + "the second regex rule decides before "
           "a later one that also matches", label="k-second")
    j.http("a.keep.test", 403, lbl + "~keep, not ~^keep", label="k-second")
    j.http("exact1.test", 200, lbl + "an exact allow before a .suffix deny "
           "of the same domain", label="e-exact")
    j.http("a.exact1.test", 403, lbl + "the .suffix deny for a subdomain",
           label="e-suffix")
    j.http("exact2.test", 403, lbl + "an exact deny before a .suffix allow "
           "of the same domain", label="e-exact2")
    j.http("a.exact2.test", 200, lbl + "the .suffix allow for a "
           "subdomain", label="e-suffix2")
    for i in range(2):
        again = " (again)" if i else ""
        j.http("n12345.big.test", 200, lbl + "a host_file name, GET" + again,
               label="default")
        j.http("n12345.big.test", 403, lbl + "a host_file name, DELETE" +
               again, method="DELETE", label="f-delete")
    H.finish(t, p, w0, lbl)


def regex_verbs(t, dns):
    """A PCRE2 regex keeps its meaning when it sits beside others (in one
    rule's host list, or in a row of regex rules the module may join
    into one expression): a backtracking verb such as (*COMMIT) in one
    must not stop another from matching."""
    o = H.origin(t)
    port = ptest.free_port()
    rec = t.path("verbs.rec")
    rules = [
        dict(name="v-list", action="deny",
             host=["~a(*COMMIT)x", "~^ab\\.verb\\.test$"]),
        dict(name="v-1", action="deny", host="~b(*COMMIT)x"),
        dict(name="v-2", action="deny", host="~^qq"),
        dict(name="v-3", action="deny", host="~^bc\\.verb\\.test$"),
        dict(name="v-4", action="deny", host="~^zz"),
        dict(name="v-prune", action="deny", port=1),
        dict(name="v-5", action="deny", host="~c(*PRUNE)x"),
        dict(name="v-6", action="deny", host="~^qq"),
        dict(name="v-7", action="deny", host="~^cd\\.verb\\.test$"),
        dict(name="v-8", action="deny", host="~^zz"),
    ]
    p = ACL.start(t, [ACL.http_listener("web", port)],
                  [ACL.acl_entry(rules, default="allow", allow_private=True),
                   ACL.fieldrec_entry(rec)], log="verbs.log", dns=dns)
    w0 = p.workers()
    j = ACL.Judge(t, o, port, rec, secret=[r["name"] for r in rules])
    lbl = "regexes side by side: "
    j.http("ab.verb.test", 403, lbl + "host = [ \"~a(*COMMIT)x\", "
           "\"~^ab\\.verb\\.test$\" ]: the second matches", label="v-list")
    j.http("bc.verb.test", 403, lbl + "four regex rules in a row, the "
           "first with (*COMMIT): the third matches", label="v-3")
    j.http("cd.verb.test", 403, lbl + "four regex rules in a row, the "
           "first with (*PRUNE): the third matches", label="v-7")
    j.http("zz.test", 403, lbl + "and the last of a row matches",
           label="v-4")
    j.http("plain.test", 200, lbl + "a name none matches passes",
           label="default")
    H.finish(t, p, w0, lbl)


def cidr_runs(t, dns):
    """src and dst rules in rows with nested networks: the first rule
    that holds the address decides, not the narrowest one."""
    o = H.origin(t)
    o3 = ACL.origin_at(t, "127.0.0.3", o.port)
    o11 = ACL.origin_at(t, "127.0.1.1", o.port)
    o4 = ACL.origin_at(t, "127.0.0.4", o.port)
    o6 = ACL.origin_at(t, "127.0.0.6", o.port)
    o7 = ACL.origin_at(t, "127.0.0.7", o.port)
    v6 = ptest.have_ipv6()
    rules = [
        dict(name="s-two", action="allow", src="127.0.0.2/32"),
        dict(name="s-four", action="deny", src="127.0.0.4/30"),
        dict(name="s-shadow", action="allow", src="127.0.0.4/32"),
        dict(name="s-v6", action="deny", src="::1/128"),
        dict(name="s-ten", action="deny", src="10.0.0.0/8"),
        dict(name="dd-deny", action="deny", dst="127.0.0.6/32"),
        dict(name="dd-allow", action="allow", dst="127.0.0.6/32"),
        dict(name="de-allow", action="allow", dst="127.0.0.7/32"),
        dict(name="de-deny", action="deny", dst="127.0.0.7/32"),
        dict(name="d-three", action="deny", dst="127.0.0.3/32"),
        dict(name="d-24", action="allow", dst="127.0.0.0/24"),
        dict(name="d-8", action="deny", dst="127.0.0.0/8"),
        dict(name="d-shadow", action="allow", dst="127.0.0.4/32"),
    ]
    port = ptest.free_port()
    port6 = ptest.free_port("::1") if v6 else None
    rec = t.path("cidr.rec")
    p = ACL.start(t, [ACL.http_listener("web", port)] + (
        ['{ name = "v6"; address = "[::1]:%d"; protocol = "http"; }' % port6]
        if v6 else []),
                  [ACL.acl_entry(rules, default="deny", allow_private=True),
                   ACL.fieldrec_entry(rec)], log="cidr.log", dns=dns)
    w0 = p.workers()
    j = ACL.Judge(t, o, port, rec, secret=[r["name"] for r in rules])
    lbl = "nested CIDRs: "
    j.http("127.0.0.1", 200, lbl + "127.0.0.1 in dst 127.0.0.0/24",
           label="d-24")
    j.http("127.0.0.3", 403, lbl + "dst 127.0.0.3/32 deny before the /24 "
           "allow", origin=o3, label="d-three")
    j.http("127.0.0.4", 200, lbl + "127.0.0.4: the /24 allow before a /32 "
           "allow and the /8 deny", origin=o4, label="d-24")
    j.http("127.0.1.1", 403, lbl + "127.0.1.1: outside the /24, the /8 "
           "deny", origin=o11, label="d-8")
    j.http("127.0.0.3", 200, lbl + "from 127.0.0.2: the src allow comes "
           "first", origin=o3, src="127.0.0.2", label="s-two")
    j.http("127.0.0.1", 403, lbl + "from 127.0.0.5: src 127.0.0.4/30 deny",
           src="127.0.0.5", label="s-four")
    j.http("127.0.0.1", 403, lbl + "from 127.0.0.4: the /30 deny before the "
           "/32 allow", src="127.0.0.4", label="s-four")
    j.http("127.0.0.6", 403, lbl + "one network in two rules, the deny "
           "first", origin=o6, label="dd-deny")
    j.http("127.0.0.7", 200, lbl + "one network in two rules, the allow "
           "first", origin=o7, label="de-allow")
    j.http("[::ffff:127.0.0.3]", 403, lbl + "[::ffff:127.0.0.3] meets the "
           "IPv4 row", origin=o3, label="d-three")
    j.http("[::ffff:127.0.1.1]", 403, lbl + "[::ffff:127.0.1.1] meets the "
           "/8 of the IPv4 row", origin=o11, label="d-8")
    if v6:
        j.http("127.0.0.1", 403, lbl + "a client from ::1 meets src ::1/128 "
               "in the row", via=port6, via_host="::1", label="s-v6")
    else:
        t.skip(lbl + "src ::1/128 in a row", "no IPv6 loopback",
               need="ipv6")
    H.finish(t, p, w0, lbl)


def concurrent(t, dns):
    """Two workers, eight clients at once, each sending a mix of denied
    and allowed names on keep-alive connections: every answer is the
    rules' (the per-worker answers kept by host never cross names)."""
    o = H.origin(t)
    port = ptest.free_port()
    big = t.path("conc-hosts")
    with open(big, "w") as f:
        f.write("".join("n%05d.big.test\n" % i for i in range(300)))
    rules = [dict(name="re", action="deny", host="~^bad[0-9]*\\.test$"),
             dict(name="file", action="deny", host_file=big),
             dict(name="sfx", action="deny", host=".sfx.test")]
    p = ACL.start(t, [ACL.http_listener("web", port)],
                  [ACL.acl_entry(rules, default="allow", allow_private=True)],
                  log="conc.log", dns=dns, workers=2)
    w0 = p.workers()
    mix = [("bad7.test", 403), ("plain.test", 200), ("n00123.big.test", 403),
           ("n12345.big.test", 200), ("a.sfx.test", 403),
           ("keep.test", 200), ("BAD7.test.", 403), ("cache.test", 200)]
    wrong = []

    def client(k):
        reqs = [(m[0], m[1], "http://%s:%d/conc/%d/%d" % (m[0], o.port, k,
                                                           i))
                for i, m in enumerate(mix * 3)]
        got = ACL.keepalive(port, [("GET", u) for _, _, u in reqs])
        for (host, want, u), st in zip(reqs, got):
            if st != want:
                wrong.append("%s: %r, expected %d" % (u, st, want))
    threads = [threading.Thread(target=client, args=(k,), daemon=True)
               for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(ptest.bound(60))
    seen_denied = [r["target"] for r in o.requests if "/conc/" in
                   r["target"] and r.get("headers") and any(
                       v.split(":")[0].lower().rstrip(".") in
                       ("bad7.test", "n00123.big.test", "a.sfx.test")
                       for k, v in r["headers"] if k.lower() == "host")]
    t.check(not wrong and not seen_denied and
            not any(th.is_alive() for th in threads),
            "2 workers, 8 clients x 24 keep-alive requests of 8 names at "
            "once: every answer is the rules' (403 or 200), the origin saw "
            "no denied name", wrong[:20] + seen_denied[:5])
    H.finish(t, p, w0, "concurrent: ")


def pooled(t, dns):
    """A dst rule is judged for every request, also one that could reuse
    an upstream connection the proxy keeps from an allowed one."""
    o = H.origin(t)
    port = ptest.free_port()
    rules = [dict(name="no-post-local", action="deny", dst="127.0.0.1/32",
                  method="POST")]
    p = ACL.start(t, [ACL.http_listener("web", port)],
                  [ACL.acl_entry(rules, default="allow", allow_private=True)],
                  log="pooled.log", dns=dns)
    w0 = p.workers()
    j = ACL.Judge(t, o, port, secret=["no-post-local"])
    tags = [j.tag() for _ in range(4)]
    got = ACL.keepalive(port, [
        ("GET", j.url("plain.test", tags[0])),
        ("POST", j.url("plain.test", tags[1])),
        ("GET", j.url("plain.test", tags[2])),
        ("POST", j.url("plain.test", tags[3]))])
    seen = [bool(o.reqs_for("/" + x)) for x in tags]
    t.check(got == [200, 403, 200, 403] and seen == [True, False, True,
                                                     False],
            "dst 127.0.0.1/32 and POST denied: GET, POST, GET, POST one "
            "after another (an upstream connection kept from the GETs): "
            "200, 403, 200, 403, the origin saw only the GETs",
            "statuses %r, seen %r" % (got, seen))
    H.finish(t, p, w0, "pooled: ")


def default_omitted(t, dns):
    """Without a default key, what no rule matches is denied."""
    o = H.origin(t)
    port = ptest.free_port()
    rec = t.path("nodefault.rec")
    p = ACL.start(t, [ACL.http_listener("web", port)],
                  [ACL.acl_entry([dict(name="ok", action="allow",
                                       host="example.test")],
                                 allow_private=True),
                   ACL.fieldrec_entry(rec)], log="nodefault.log", dns=dns)
    w0 = p.workers()
    j = ACL.Judge(t, o, port, rec, secret=["ok"])
    j.http("example.test", 200, "no default key: a rule allows",
           label="ok")
    j.http("none.test", 403, "no default key: what no rule matches is "
           "denied", label="default")
    H.finish(t, p, w0, "no default key: ")


def catch_all(t, dns):
    """A rule with no condition matches everything."""
    o = H.origin(t)
    port = ptest.free_port()
    rec = t.path("catch.rec")
    rules = [dict(name="ok", action="allow", host="example.test"),
             dict(name="catch", action="deny")]
    p = ACL.start(t, [ACL.http_listener("web", port)],
                  [ACL.acl_entry(rules, default="allow", allow_private=True),
                   ACL.fieldrec_entry(rec)], log="catch.log", dns=dns)
    w0 = p.workers()
    j = ACL.Judge(t, o, port, rec, secret=["ok", "catch"])
    j.http("example.test", 200, "before a rule without conditions",
           label="ok")
    j.http("none.test", 403, "a rule without conditions matches anything "
           "(the default allow is never reached)", label="catch")
    H.finish(t, p, w0, "catch-all: ")


def protocols(t, dns):
    o = H.origin(t)
    echo = t.echo_server()
    for proto in PROTOCOLS:
        hport, sport, tport = (ptest.free_port() for _ in range(3))
        rules = [dict(name="no-" + proto, action="deny", protocol=proto)]
        tcp = '{ name = "t"; address = "127.0.0.1:%d"; protocol = "tcp"; ' \
            'to = "127.0.0.1:%d"; }' % (tport, echo.port)
        p = ACL.start(t, [ACL.http_listener("h", hport),
                          ACL.socks_listener("s", sport), tcp],
                      [ACL.acl_entry(rules, default="allow",
                                     allow_private=True)],
                      log="proto-%s.log" % proto, dns=dns)
        w0 = p.workers()
        j = ACL.Judge(t, o, hport, secret=["no-" + proto])
        lbl = "protocol = \"%s\" denied alone: " % proto
        j.http("proto.test", 403 if proto == "http" else 200,
               lbl + "GET")
        curl_connect(t, j, o, hport, lbl, proto == "connect")
        before = echo.accepted
        st, ok = ACL.connect_http(hport, "proto.test", echo.port)
        if proto == "connect":
            t.check(st == 403 and echo.accepted == before,
                    lbl + "raw CONNECT: 403, the echo server saw nothing",
                    (st, echo.accepted - before))
        else:
            t.check(st == 200 and ok, lbl + "raw CONNECT: 200, the tunnel "
                    "echoes", (st, ok))
        tag = j.tag()
        st = ws_upgrade(hport, "http://proto.test:%d/ws?%s" % (o.port, tag))
        if proto == "websocket":
            t.check(st == 403 and not o.reqs_for(tag), lbl + "a WebSocket "
                    "upgrade: 403, the origin saw nothing", st)
        else:
            t.check(st == 101 and o.reqs_for(tag), lbl + "a WebSocket "
                    "upgrade: 101 from the origin", st)
        before = echo.accepted
        rep, ok, closed = ACL.socks5(sport, "proto.test", echo.port)
        if proto == "socks5":
            t.check(rep == 0x02 and closed and echo.accepted == before,
                    lbl + "SOCKS5: REP 0x02, the connection ends, the "
                    "echo server saw nothing", (S.rep_name(rep), closed,
                                                echo.accepted - before))
        else:
            t.check(rep == 0 and ok, lbl + "SOCKS5: REP 0, the tunnel "
                    "echoes", (S.rep_name(rep), ok))
        before = echo.accepted
        cd, ok, closed = ACL.socks4(sport, "127.0.0.1", echo.port)
        if proto == "socks4":
            t.check(cd == 0x5B and closed and echo.accepted == before,
                    lbl + "SOCKS4: CD 0x5B, the connection ends, the echo "
                    "server saw nothing", (cd, closed, echo.accepted -
                                           before))
        else:
            t.check(cd == 0x5A and ok, lbl + "SOCKS4: CD 0x5A, the tunnel "
                    "echoes", (cd, ok))
        before = echo.accepted
        ok, why = ptest.echo_once(tport)
        if proto == "tcp":
            t.check(not ok and echo.accepted == before, lbl + "a tcp "
                    "listener's connection is closed, the echo server saw "
                    "nothing", (why, echo.accepted - before))
        else:
            t.check(ok, lbl + "a tcp listener relays to the echo server",
                    why)
        H.finish(t, p, w0, "protocol %s: " % proto)


def mixed_list(t):
    """port = ( N, "lo-hi" ): a libconfig list of an int and a string."""
    port = ptest.free_port()
    text = ACL.conf(t, [ACL.http_listener("web", port)], [ACL.acl_entry(
        ['{ name = "web"; action = "allow"; port = ( 80, "8000-8080" ); }'],
        default="deny")], log="mixed.log")
    path = ptest.write_conf(t.tmp, text, "mixed.conf")
    cp = ptest.run_portico(["-t", "-c", path])
    t.check(cp.returncode == 0, "port = ( 80, \"8000-8080\" ) (a list of "
            "an int and a range) passes portico -t",
            [cp.stdout, cp.stderr])


def with_auth(t, dns):
    why = A.missing()
    if why:
        t.skip("user rules with the real auth module", why)
        return
    o = H.origin(t)
    ulist = A.write_users(t, [("bob", A.argon2id("b-pw")),
                              ("mallory", A.argon2id("m-pw"))], "users-acl")
    main_port, open_port, socks = (ptest.free_port() for _ in range(3))
    echo = t.echo_server()
    rules = [dict(name="no-mallory", action="deny", user="mallory"),
             dict(name="no-user-put", action="deny", user="*",
                  method="PUT")]
    auth = '{ name = "auth"; path = "%s"; userlist = "%s"; }' % (
        A.AUTH_SO, ulist)
    p = ACL.start(t, [ACL.http_listener("main", main_port),
                      ACL.http_listener("open", open_port,
                                        "auth = { required = false; };"),
                      ACL.socks_listener("socks", socks)],
                  [auth, ACL.acl_entry(rules, default="allow",
                                       allow_private=True)],
                  log="auth.log", dns=dns)
    w0 = p.workers()
    url = "http://plain.test:%d/auth/%%s" % o.port

    def curl(port, tag, who, method=None):
        if method is None:
            st, head = A.curl_head(port, url % tag, who)
        else:
            cp = H.curl(["-D", "-", "-o", "/dev/null", "-X", method, "-x",
                         "http://127.0.0.1:%d" % port] +
                        (["-U", who] if who else []) + [url % tag])
            head = cp.stdout.decode("latin-1")
            m = re.match(r"HTTP/1\.1 (\d{3})", head)
            st = int(m.group(1)) if m else 0
        return st, head, bool(o.reqs_for("/auth/" + tag))

    st, head, seen = curl(main_port, "bob", "bob:b-pw")
    t.check(st == 200 and seen, "auth + acl: bob (no rule names him) "
            "200", head)
    st, head, seen = curl(main_port, "mallory", "mallory:m-pw")
    t.check(st == 403 and not seen and "no-mallory" not in head,
            "auth + acl: user = \"mallory\": mallory with the right "
            "password gets 403 (not 407), the origin saw nothing", head)
    st, head, seen = curl(main_port, "nocred", None)
    t.check(st == 407 and not seen, "auth + acl: no credentials where "
            "they are required: still 407 (auth comes first)", head)
    st, head, seen = curl(main_port, "put", "bob:b-pw", "PUT")
    t.check(st == 403 and not seen, "auth + acl: user = \"*\" (and PUT): "
            "bob, authenticated, gets 403 for a PUT", head)
    st, head, seen = curl(open_port, "anon", None, "PUT")
    t.check(st == 200 and seen, "auth + acl: user = \"*\" (and PUT): an "
            "anonymous PUT where credentials are optional passes", head)
    # No module checks credentials on "open" (auth does not apply
    # there): a name sent there is a claim, not a user, so user = "*"
    # does not match it, whatever the password.
    st, head, seen = curl(open_port, "named", "bob:not-his-password", "PUT")
    t.check(st == 200 and seen, "auth + acl: user = \"*\" (and PUT) on "
            "listener open, where auth does not apply: credentials nobody "
            "checks make no user (200 with a wrong password)", head)
    rep, c = S.connect5(socks, "plain.test", echo.port, auth=("bob", "b-pw"))
    ok, _ = S.echo_check(c, b"bob") if S.ok5(rep) else (False, None)
    c.close()
    t.check(ok, "auth + acl: SOCKS5 as bob: REP 0, the tunnel echoes", rep)
    before = echo.accepted
    rep, c = S.connect5(socks, "plain.test", echo.port,
                        auth=("mallory", "m-pw"))
    c.close()
    t.check(isinstance(rep, S.Reply) and rep.rep == 0x02 and
            echo.accepted == before, "auth + acl: SOCKS5 as mallory (right "
            "password): REP 0x02 from the acl, the echo server saw nothing",
            rep)
    H.finish(t, p, w0, "auth: ")


if __name__ == "__main__":
    ptest.Test("acl_rules").run(main)
