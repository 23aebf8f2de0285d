#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
HTTP/2 by ALPN on a TLS listener (the tls module; issue 34, first
slice). A test CA and certificate made by the openssl program; the
client is python's ssl with python3-h2 (t/integ/h2test.py).

- a client offering h2 and http/1.1 gets h2; over it a GET (:scheme
  http, :authority naming the origin) gets the body exactly, and a
  CONNECT stream echoes;
- a client offering only http/1.1 gets http/1.1 and a GET over
  HTTP/1.1 works; so does a client that offers no ALPN at all;
- nghttp (nghttp2-client) over TLS, :scheme and :authority set for a
  forward proxy, fetches through it;
- http2 = false on the listener: a client offering h2 and http/1.1 gets
  http/1.1, and HTTP/1.1 works.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402
import h2test as h2t  # noqa: E402


def tls_listener(name, port, cert, key, extra=""):
    """A TLS listener; <extra>: more settings of the listener itself."""
    return ('  { name = "%s"; address = "127.0.0.1:%d"; protocol = "http"; '
            'transport = "tls";\n    tls = { certificate = "%s"; '
            'key = "%s"; }; %s}' % (name, port, cert, key, extra))


def tls_module():
    return '{ name = "tls"; path = "%s"; }' % T.TLS_SO


def alpn_of(port, ca, offer):
    """(the protocol the listener chose for <offer>, the TLS socket)."""
    s = T.connect(port, ca, alpn=offer, timeout=ptest.bound(10))
    return s.selected_alpn_protocol(), s


def http11_get(s, url):
    """A GET over the TLS socket <s> as HTTP/1.1: the Resp or an error
    string."""
    try:
        c = H.Conn(s, ptest.bound(10))
        c.send(H.request_bytes("GET", url))
        return H.read_response(c)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)


def h2_over_tls(t, port, ca, o, echo):
    proto, s = alpn_of(port, ca, ["h2", "http/1.1"])
    t.check(proto == "h2", "ALPN: a client offering h2 and http/1.1 gets h2",
            "selected %r" % proto)
    c = h2t.Client(sock=s).open()
    t.at_exit(c.close)
    au = "127.0.0.1:%d" % o.port
    st = c.request(h2t.request_headers("GET", au,
                                       "/len?n=100000&id=tls-h2"))
    c.wait(st)
    g = o.reqs_for("id=tls-h2")
    t.check(st.status == 200 and bytes(st.data) == H.pattern(100000) and
            len(g) == 1 and g[0]["target"] == "/len?n=100000&id=tls-h2" and
            H.fields(g[0]["headers"], "host") == [au],
            "over h2 in TLS: a GET (:scheme http, :authority the origin) "
            "gets its 100000 bytes; the origin got GET with Host: %s" % au,
            lambda: h2t.describe(st) + [c.why(), "origin %r" % (g,)])
    tun = c.request(h2t.connect_headers(echo.address), end=False)
    c.wait_status(tun)
    msg = b"tls-tunnel\n" + os.urandom(64 * 1024)
    if tun.status == 200:
        c.send(tun, msg)
        c.run_until(lambda: len(tun.data) >= len(msg) or tun.done,
                    ptest.bound(10))
    t.check(tun.status == 200 and bytes(tun.data) == msg,
            "over h2 in TLS: a CONNECT stream echoes 64 KiB",
            lambda: h2t.describe(tun) + [c.why()])
    c.close()


def http11_over_tls(t, port, ca, o):
    proto, s = alpn_of(port, ca, ["http/1.1"])
    r = http11_get(s, o.url + "/len?n=1000&id=tls-h1")
    s.close()
    t.check(proto == "http/1.1" and isinstance(r, H.Resp) and
            r.status == 200 and r.body == H.pattern(1000),
            "ALPN: a client offering only http/1.1 gets http/1.1, and a GET "
            "over HTTP/1.1 works", lambda: ["selected %r" % proto] +
            H.describe(r))
    proto, s = alpn_of(port, ca, None)
    r = http11_get(s, o.url + "/len?n=1000&id=tls-none")
    s.close()
    t.check(proto is None and isinstance(r, H.Resp) and r.status == 200,
            "a client offering no ALPN speaks HTTP/1.1 and is served",
            lambda: ["selected %r" % proto] + H.describe(r))


def nghttp(t, port, o):
    if shutil.which("nghttp") is None:
        t.skip("nghttp over TLS through the proxy", "no nghttp program in "
               "PATH (Debian package nghttp2-client)", need="nghttp")
        return
    au = "127.0.0.1:%d" % o.port
    # nghttp does not check the certificate; -H replaces the :scheme and
    # :authority it would take from the URI (the proxy's), which makes it
    # a forward-proxy client over TLS.
    try:
        cp = subprocess.run(
            ["nghttp", "-H", ":scheme: http", "-H", ":authority: " + au,
             "https://127.0.0.1:%d/len?n=100000&id=tls-nghttp" % port],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, timeout=ptest.bound(30))
    except subprocess.TimeoutExpired as e:
        cp = subprocess.CompletedProcess(e.cmd, -1, e.stdout or b"",
                                         b"timeout")
    g = o.reqs_for("id=tls-nghttp")
    t.check(cp.returncode == 0 and cp.stdout == H.pattern(100000) and
            len(g) == 1 and H.fields(g[0]["headers"], "host") == [au],
            "nghttp over TLS (h2 by ALPN, :scheme http, :authority the "
            "origin) gets the 100000 bytes through the proxy",
            lambda: ["exit %d, %d bytes, stderr %r" % (
                cp.returncode, len(cp.stdout), cp.stderr[-300:]),
                "origin %r" % (g,)])


def no_http2(t, ca, cert, key, o):
    port = ptest.free_port()
    try:
        q = t.portico(h2t.conf(t, [tls_listener("noh2", port, cert, key,
                                                "http2 = false; ")],
                               [tls_module()], name="noh2"),
                      conf_name="noh2.conf")
    except RuntimeError as e:
        t.check(False, "portico starts with http2 = false on a TLS "
                "listener", str(e).splitlines()[-10:])
        return
    proto, s = alpn_of(port, ca, ["h2", "http/1.1"])
    r = http11_get(s, o.url + "/len?n=1000&id=tls-noh2")
    s.close()
    t.check(proto == "http/1.1" and isinstance(r, H.Resp) and
            r.status == 200 and r.body == H.pattern(1000),
            "http2 = false: a client offering h2 and http/1.1 gets "
            "http/1.1, and HTTP/1.1 works", lambda: ["selected %r" % proto] +
            H.describe(r))
    t.stop_portico(q)


def main(t):
    if not h2t.ready(t, "HTTP/2 by ALPN on a TLS listener", [T.missing]):
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy")
    o = H.origin(t)
    echo = h2t.TunnelTarget()
    t.servers.append(echo)
    port = ptest.free_port()
    p = t.portico(h2t.conf(t, [tls_listener("tls", port, cert, key)],
                           [tls_module()]))
    w0 = p.workers()
    part = h2t.Parts(t)
    part("h2 over TLS", h2_over_tls, t, port, ca.pem, o, echo)
    part("HTTP/1.1 over TLS", http11_over_tls, t, port, ca.pem, o)
    part("nghttp", nghttp, t, port, o)
    H.finish(t, p, w0)
    part("http2 = false", no_http2, t, ca.pem, cert, key, o)
    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)


if __name__ == "__main__":
    ptest.Test("h2_tls").run(main)
