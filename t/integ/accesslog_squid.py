#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
portico's squid-format lines set beside lines the real Squid (Debian's)
writes for the same requests, with Squid's own `access_log ... squid`:

- a GET to the same origin, a CONNECT to the same echo server, and a
  request to a host both proxies deny (Squid: http_access deny on a
  dstdomain; portico: an acl rule): each pair of lines has the same
  layout (time with milliseconds, elapsed right-aligned in 6 columns,
  client, code/status, bytes, method, URL, user, hierarchy/peer, type),
  the same code and status, method, URL, user and hierarchy; only the
  numbers that depend on the proxy (time, elapsed, bytes) and the
  content type (portico does not see the reply's) may differ.

Squid strips query strings by default (strip_query_terms on): portico's
log has query = false, which does the same (the '?' stays).
"""
import os
import re
import signal
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import accesslogtest as AL  # noqa: E402

LAYOUT = re.compile(r"^\d+\.\d{3} [ \d]{5}\d+ \S+ [A-Z_]+/\d{3} \d+ \S+ \S+ "
                    r"\S+ [A-Z_]+/\S+ \S+$")


def squid_bin():
    for p in (shutil.which("squid"), "/usr/sbin/squid"):
        if p and os.path.exists(p):
            return p
    return None


def start_squid(t, port):
    d = t.path("squid")
    os.mkdir(d)
    os.chmod(d, 0o777)          # Squid as root runs as "proxy"
    os.chmod(t.tmp, 0o755)
    conf = os.path.join(d, "squid.conf")
    ptest.write_file(conf, """http_port 127.0.0.1:%d
acl blocked dstdomain blocked.test
acl localnet src 127.0.0.0/8
http_access deny blocked
http_access allow localnet
http_access deny all
cache deny all
cache_mem 0 MB
access_log stdio:%s/access.log squid
cache_log %s/cache.log
pid_filename %s/squid.pid
coredump_dir %s
shutdown_lifetime 0 seconds
logfile_rotate 0
dns_nameservers 127.0.0.1
via off
""" % (port, d, d, d, d))
    os.chmod(conf, 0o644)
    proc = subprocess.Popen([squid_bin(), "-N", "-f", conf],
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

    def stop():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(ptest.bound(10))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
    t.at_exit(stop)
    up = ptest.wait_for(lambda: ptest.listening(port), ptest.bound(20))
    return proc, os.path.join(d, "access.log"), up, stop


def drive(port, origin, echo):
    """The three requests through the proxy at <port>."""
    out = []
    cp = H.curl(["-x", "http://127.0.0.1:%d" % port, "-o", "/dev/null",
                 "-w", "%{http_code}", origin.url + "/len?n=100"])
    out.append(cp.stdout)
    c = H.Conn.to(port, timeout=ptest.bound(10))
    c.send("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" %
           (echo.port, echo.port))
    head = c.read_head()
    c.send(b"x" * 1000)
    c.read_exact(1000)
    c.close()
    out.append(head[:12])
    cp = H.curl(["-x", "http://127.0.0.1:%d" % port, "-o", "/dev/null",
                 "-w", "%{http_code}", "http://blocked.test/page"])
    out.append(cp.stdout)
    return out


def main(t):
    why = AL.missing()
    if why:
        t.skip("portico's squid lines beside Squid's", why)
        return
    if not H.have_curl():
        t.skip("portico's squid lines beside Squid's", "no curl",
               need="curl")
        return
    if squid_bin() is None:
        t.skip("portico's squid lines beside Squid's",
               "no squid program", need="squid")
        return
    if not os.path.exists(AL.ACL_SO):
        t.skip("portico's squid lines beside Squid's", "acl.so not built",
               need="acl.so")
        return
    origin = H.origin(t)
    echo = t.echo_server()
    sport = ptest.free_port()
    proc, slog, up, stop = start_squid(t, sport)
    t.check(up, "Squid listens", lambda: ptest.tail(
        open(os.path.join(t.path("squid"), "cache.log")).read()
        if os.path.exists(os.path.join(t.path("squid"), "cache.log"))
        else "", 20))
    if not up:
        return
    got_s = drive(sport, origin, echo)
    stop()

    pport = ptest.free_port()
    plog = t.path("portico.squid")
    mods = ['{ name = "acl"; path = "%s"; default = "allow"; '
            'allow_private = true; rules = ( { name = "blocked"; '
            'action = "deny"; host = [ "blocked.test" ]; } ); }' % AL.ACL_SO,
            AL.module(['file = "%s"; format = "squid"; query = false;'
                       % plog])]
    p = t.portico(AL.conf(t, [AL.listener("web", pport)], mods))
    got_p = drive(pport, origin, echo)
    ptest.wait_for(lambda: len(AL.squid_lines(plog)) >= 3, ptest.bound(5))
    t.stop_portico(p)
    t.check(got_s == got_p == [b"200", b"HTTP/1.1 200", b"403"],
            "both proxies: GET 200, CONNECT 200, the denied host 403",
            "squid %s, portico %s" % (got_s, got_p))

    sq, pq = AL.squid_lines(slog), AL.squid_lines(plog)
    t.check(len(sq) == 3 and len(pq) == 3, "three lines each",
            lambda: ["squid:"] + sq + ["portico:"] + pq)
    # paired by URL: a tunnel's line is written when it closes, which may
    # come after the next request's
    def by_url(lines):
        out = {}
        for ln in lines:
            m = AL.SQUID_RE.match(ln)
            if m:
                out[m.group("url")] = ln
        return out
    bs, bp = by_url(sq), by_url(pq)
    urls = (origin.url + "/len?", "127.0.0.1:%d" % echo.port,
            "http://blocked.test/page")
    names = ("GET", "CONNECT", "denied GET")
    for what, url in zip(names, urls):
        ls, lp = bs.get(url, ""), bp.get(url, "")
        a, b = AL.SQUID_RE.match(ls), AL.SQUID_RE.match(lp)
        same = a and b and all(a.group(k) == b.group(k) for k in (
            "client", "code", "status", "method", "url", "user", "hier",
            "peer"))
        t.check(bool(LAYOUT.match(ls)) and bool(LAYOUT.match(lp)) and
                bool(same) and len(ls.split()) == len(lp.split()),
                "%s: portico's line has Squid's layout and the same client, "
                "code/status, method, URL, user and hierarchy/peer" % what,
                ["squid:   " + ls, "portico: " + lp, "all squid:"] + sq +
                ["all portico:"] + pq)


if __name__ == "__main__":
    ptest.Test("accesslog_squid").run(main)
