#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A real browser through the HTTPS proxy: headless Chromium (Debian's
chromium) with --proxy-server=https://127.0.0.1:PORT fetches a page from
the loopback origin through portico's TLS listener.

- the page's DOM comes back (chromium --dump-dom), the origin saw the
  request with portico's Via, and portico logged the TLS handshakes;
- the same with the proxy's certificate not trusted (another key's
  SPKI pinned): no page, and the origin never sees the request, so the
  browser did check the proxy's certificate.

Chromium is told to trust the proxy's certificate by its SPKI hash
(--ignore-certificate-errors-spki-list) and to send loopback requests to
the proxy too (--proxy-bypass-list=<-loopback>).
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402
import pagetest as PG  # noqa: E402


def chromium(t, exe, port, spki, url, tag):
    profile = t.path("chromium-%s" % tag)
    try:
        cp = subprocess.run(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--user-data-dir=" + profile,
             "--proxy-server=https://127.0.0.1:%d" % port,
             "--proxy-bypass-list=<-loopback>",
             "--ignore-certificate-errors-spki-list=" + spki,
             "--dump-dom", url],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, timeout=ptest.bound(60),
            env=dict(os.environ, HOME=t.tmp))
        return cp.stdout.decode(errors="replace"), \
            cp.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "", "timeout"


def main(t):
    why = T.missing()
    if why:
        t.skip("tls with chromium", why)
        return
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        t.skip("headless chromium through the HTTPS proxy",
               "no chromium program in PATH", need="chromium")
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    other, _ = ca.issue("other.test", dns=["other.test"])
    o = H.origin(t)
    port = ptest.free_port()
    p = t.portico(T.conf(t, T.listener(port, cert, key), log_level="debug"))
    w0 = p.workers()

    dom, err = chromium(t, exe, port, PG.spki_hash(cert),
                        o.url + "/echo?id=chromium", "good")
    r = o.reqs_for("id=chromium")
    t.check('"target": "/echo?id=chromium"' in dom,
            "headless chromium gets the page through the HTTPS proxy",
            lambda: [dom[:300]] + ptest.tail(err, 8))
    t.check(r and "portico" in (H.field(r[0]["headers"], "via") or ""),
            "the origin saw chromium's request with portico's Via",
            r[0]["headers"] if r else "no request")
    t.check(p.log_lines(r"tls: TLSv1\.3 "),
            "portico logged chromium's TLS handshake",
            lambda: ptest.tail(p.log(), 10))

    dom, err = chromium(t, exe, port, PG.spki_hash(other),
                        o.url + "/echo?id=untrusted", "bad")
    t.check("id=untrusted" not in dom and not o.reqs_for("id=untrusted"),
            "with the proxy's certificate not trusted: no page, the "
            "origin never sees the request", lambda: [dom[:300]] +
            ptest.tail(err, 8))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("tls_chromium").run(main)
