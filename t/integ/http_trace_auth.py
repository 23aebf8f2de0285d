#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
OPTIONS and TRACE with Max-Forwards: 0 are answered by the proxy itself
(RFC 9110 7.6.2), but only after AUTH and ACCESS let them through, and a
TRACE echo never carries the client's Proxy-Authorization or any other
Proxy-* field (issue 9):

- AUTH denies: TRACE and OPTIONS get 407, not an echo;
- ACCESS denies: 403;
- both pass: TRACE gets 200 message/http echoing the request line and
  its other fields, without Proxy-Authorization (nor the credentials in
  any form) and Proxy-Foo; AUTH and ACCESS ran, DIAL did not, nothing
  reached the origin;
- and portico.conf(5) says so.
"""
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402


def start(t, name, deny=None):
    port = ptest.free_port()
    rec = t.path(name + ".rec")
    text = """workers = 1;
error_log = "%s/error.log";
log_level = "info";
pid_file = "%s/portico.pid";
shutdown_timeout = 5;
listeners = ( { address = "127.0.0.1:%d"; protocol = "http"; } );
modules = ( { name = "hookrec"; path = "%s/hookrec.so"; record = "%s"; %s } );
""" % (t.tmp, t.tmp, port, ptest.TESTMODDIR, rec,
       'deny_phase = "%s";' % deny if deny else "")
    return t.portico(text, conf_name=name + ".conf"), port, rec


def ask(port, method, url, extra=b""):
    c = H.Conn.to(port, timeout=ptest.bound(10))
    try:
        c.send(method.encode() + b" " + url.encode() + b" HTTP/1.1\r\n"
               b"Host: x\r\nMax-Forwards: 0\r\nX-Trace: yes\r\n" + extra +
               b"\r\n")
        r = H.read_response(c, method=method)
        return r, bytes(r.body) if isinstance(r, H.Resp) and \
            r.body is not None else b""
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), b""
    finally:
        c.close()


def phases(rec):
    try:
        with open(rec) as f:
            return [ln.split()[0] for ln in f.read().splitlines()
                    if ln and not ln.startswith(("INIT", "EXIT"))]
    except OSError:
        return []


def manual(t):
    """portico.conf(5) says what the checks above show: the proxy answers
    them itself only once AUTH and ACCESS let them through (it said
    "without running the AUTH and ACCESS phases", issue 29)."""
    with open(os.path.join(ptest.SRCDIR, "man", "portico.conf.5")) as f:
        text = " ".join(f.read().split())
    i = text.find(".Ql Max-Forwards is used by OPTIONS and TRACE only")
    para = text[i:i + 900] if i >= 0 else ""
    t.check(para and "without running the AUTH" not in para and
            "once the AUTH and ACCESS phases let it through" in para,
            "portico.conf(5): OPTIONS and TRACE with Max-Forwards: 0 are "
            "answered after AUTH and ACCESS, as they are", para[:400])


def main(t):
    manual(t)
    o = H.origin(t)
    url = o.url + "/echo?id=trace"
    secret = base64.b64encode(b"alice:secret")
    cred = b"Proxy-Authorization: Basic " + secret + b"\r\n" + \
        b"Proxy-Foo: bar\r\n"

    p, port, rec = start(t, "auth", "AUTH")
    for m in ("TRACE", "OPTIONS"):
        r, body = ask(port, m, url, cred)
        t.check(isinstance(r, H.Resp) and r.status == 407 and
                secret not in body,
                "AUTH denies: %s with Max-Forwards: 0 gets 407, no answer "
                "of its own" % m, lambda: H.describe(r))
    t.stop_portico(p)

    p, port, rec = start(t, "access", "ACCESS")
    for m in ("TRACE", "OPTIONS"):
        r, body = ask(port, m, url, cred)
        t.check(isinstance(r, H.Resp) and r.status == 403,
                "ACCESS denies: %s with Max-Forwards: 0 gets 403" % m,
                lambda: H.describe(r))
    t.stop_portico(p)

    p, port, rec = start(t, "pass")
    r, body = ask(port, "TRACE", url, cred)
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.get("content-type") == "message/http" and
            body.startswith(b"TRACE " + url.encode() + b" HTTP/1.1\r\n") and
            b"\r\nX-Trace: yes\r\n" in body and body.endswith(b"\r\n\r\n"),
            "both pass: TRACE gets 200 message/http echoing the request "
            "line and its other fields", lambda: [H.describe(r), body])
    t.check(isinstance(r, H.Resp) and b"proxy-" not in body.lower() and
            secret not in body and b"alice" not in body,
            "the echo carries no Proxy-Authorization, no Proxy-Foo, no "
            "credentials", body)
    r2, _ = ask(port, "OPTIONS", url, cred)
    t.check(isinstance(r2, H.Resp) and r2.status == 200 and
            "TRACE" in (r2.get("allow") or ""),
            "both pass: OPTIONS gets 200 with Allow", lambda: H.describe(r2))
    ptest.wait_for(lambda: phases(rec).count("LOG") >= 2, ptest.bound(5))
    ph = phases(rec)
    t.check(ph == ["ACCEPT", "AUTH", "ACCESS", "LOG"] * 2,
            "each ran ACCEPT, AUTH, ACCESS and LOG, no DIAL", ph)
    t.check(o.accepted == 0, "nothing reached the origin", o.accepted)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("http_trace_auth").run(main)
