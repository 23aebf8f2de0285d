#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
How a module's refusal is answered (pt_conn_answer, ABI 1.1), through the
test module t/modules/answer.c on an HTTP and a SOCKS5 listener of one
portico per configuration, checked with curl -x and raw clients:

- AUTH DENY without an answer: 407 with Proxy-Authenticate: Basic
  realm="portico"; RFC 1929 status 1;
- AUTH DENY with a realm holding quotes and a backslash: the realm comes
  back as a quoted-string, escaped; the module's SOCKS code becomes the
  RFC 1929 status;
- ACCESS DENY without an answer: 403 (no Retry-After, no challenge),
  SOCKS5 reply 0x02;
- ACCESS DENY with 429, Retry-After and a reason: curl sees 429 and
  Retry-After; SOCKS5 gets the module's reply code; the reason is LOG's
  req->error and in the debug log; the origin sees nothing;
- the same answered after an AGAIN (pt_conn_resume with DENY): 503 with
  its Retry-After;
- a module ERROR is a 500 and SOCKS5 0x01 whatever answer was set.
A status listener beside them answers the same refusals in its own words:
503 Service Unavailable with the Retry-After (after an AGAIN), 500
Internal Server Error for an ERROR at ACCESS, and closes.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402


def conf_text(t, name, opts, hport, sport, stport, level="info"):
    rec = t.path(name + ".rec")
    return rec, """workers = 1;
error_log = "%(tmp)s/%(name)s.log";
log_level = "%(level)s";
pid_file = "%(tmp)s/portico.pid";
shutdown_timeout = 5;
listeners = (
  { address = "127.0.0.1:%(hport)d"; protocol = "http"; },
  { address = "127.0.0.1:%(sport)d"; protocol = "socks5"; },
  { address = "127.0.0.1:%(stport)d"; protocol = "status"; }
);
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
modules = ( { name = "answer"; path = "%(moddir)s/answer.so";
              record = "%(rec)s"; %(opts)s } );
""" % dict(tmp=t.tmp, name=name, level=level, hport=hport, sport=sport,
           stport=stport, moddir=ptest.TESTMODDIR, rec=rec, opts=opts)


def start(t, name, opts, level="info"):
    hport, sport, stport = (ptest.free_port(), ptest.free_port(),
                            ptest.free_port())
    rec, text = conf_text(t, name, opts, hport, sport, stport, level)
    p = t.portico(text, conf_name=name + ".conf")
    p.stport = stport
    return p, hport, sport, rec


def status_get(p):
    """(Resp or error text) of GET /metrics on p's status listener."""
    c = H.Conn.to(p.stport, timeout=ptest.bound(10))
    try:
        c.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        return H.read_response(c)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
    finally:
        c.close()


def logs(rec):
    try:
        with open(rec) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return [dict(w.split("=", 1) for w in ln.split()[1:] if "=" in w)
            for ln in lines if ln.startswith("LOG ")]


def raw_get(port, url, extra=b""):
    """(Resp or error text) of one GET through the proxy on a raw socket."""
    c = H.Conn.to(port, timeout=ptest.bound(10))
    try:
        c.send(b"GET " + url.encode() + b" HTTP/1.1\r\nHost: x\r\n" +
               extra + b"\r\n")
        return H.read_response(c)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
    finally:
        c.close()


def curl_head(proxy_port, url, extra=()):
    """(status, {lower-case name: value}, raw) of curl -x's response head."""
    cp = H.curl(["-D", "-", "-o", "/dev/null", "-x",
                 "http://127.0.0.1:%d" % proxy_port] + list(extra) + [url])
    text = cp.stdout.decode("latin-1")
    lines = text.split("\r\n")
    status = 0
    if lines and lines[0].startswith("HTTP/"):
        status = int(lines[0].split()[1])
    hdrs = {}
    for k, v in H.head_fields(text.split("\r\n\r\n")[0]):
        hdrs[k.lower()] = v
    return status, hdrs, text or cp.stderr


def socks_outcome(sport, echo, auth=("alice", "pw")):
    """The reply code (int) of a SOCKS5 CONNECT to <echo>, or the text
    connect5 returns for a failure before the reply."""
    r, c = S.connect5(sport, "127.0.0.1", echo.port, auth=auth)
    c.close()
    return r.rep if isinstance(r, S.Reply) else r


def main(t):
    if not H.have_curl():
        t.skip("module answers", "no curl")
        return
    o = H.origin(t)
    echo = t.echo_server()
    url = o.url + "/echo?id=%s"

    # AUTH, no answer: the core's defaults
    p, hport, sport, rec = start(t, "auth", 'phase = "AUTH";')
    st, hd, raw = curl_head(hport, url % "a1", ["-U", "alice:pw"])
    t.check(st == 407 and hd.get("proxy-authenticate") ==
            'Basic realm="portico", charset="UTF-8"',
            "AUTH DENY, no answer: curl -x gets 407 with Proxy-Authenticate:"
            ' Basic realm="portico", charset="UTF-8"', raw)
    r = socks_outcome(sport, echo)
    t.check(r == "RFC 1929 status 1 (ver 1)",
            "AUTH DENY, no answer: RFC 1929 status 1", r)
    t.stop_portico(p)

    # AUTH with a realm to escape and an RFC 1929 status
    p, hport, sport, rec = start(
        t, "realm", 'phase = "AUTH"; realm = "staff \\"only\\" \\\\ area"; '
        'socks_reply = 3;')
    st, hd, raw = curl_head(hport, url % "a2")
    t.check(st == 407 and hd.get("proxy-authenticate") ==
            'Basic realm="staff \\"only\\" \\\\ area", charset="UTF-8"',
            "AUTH DENY with realm 'staff \"only\" \\ area': the challenge "
            "quotes it, quotes and backslash escaped", raw)
    r = raw_get(hport, url % "a3")
    t.check(isinstance(r, H.Resp) and r.status == 407 and
            r.get("proxy-authenticate") ==
            'Basic realm="staff \\"only\\" \\\\ area", charset="UTF-8"',
            "the same on a raw socket", lambda: H.describe(r))
    r = socks_outcome(sport, echo)
    t.check(r == "RFC 1929 status 3 (ver 1)",
            "AUTH DENY with socks_reply 3: RFC 1929 status 3", r)
    t.stop_portico(p)

    # ACCESS, no answer
    p, hport, sport, rec = start(t, "access", 'phase = "ACCESS";')
    st, hd, raw = curl_head(hport, url % "b1")
    t.check(st == 403 and "retry-after" not in hd and
            "proxy-authenticate" not in hd,
            "ACCESS DENY, no answer: 403, without Retry-After or challenge",
            raw)
    r = socks_outcome(sport, echo)
    t.check(r == 0x02, "ACCESS DENY, no answer: SOCKS5 reply 0x02",
            S.rep_name(r))
    t.stop_portico(p)

    # ACCESS, 429 with Retry-After, a SOCKS5 code and a reason
    before = o.accepted
    p, hport, sport, rec = start(
        t, "quota", 'phase = "ACCESS"; http_status = 429; retry_after = 30; '
        'socks_reply = 5; reason = "over quota";', level="debug")
    st, hd, raw = curl_head(hport, url % "c1")
    t.check(st == 429 and hd.get("retry-after") == "30",
            "ACCESS DENY with 429: curl -x gets 429 and Retry-After: 30", raw)
    r = raw_get(hport, url % "c2")
    t.check(isinstance(r, H.Resp) and r.status == 429 and
            r.get("retry-after") == "30" and
            r.get("proxy-authenticate") is None,
            "the same on a raw socket, with no challenge",
            lambda: H.describe(r))
    r = socks_outcome(sport, echo)
    t.check(r == 0x05, "ACCESS DENY with socks_reply 5: SOCKS5 reply 0x05",
            S.rep_name(r))
    ptest.wait_for(lambda: len(logs(rec)) >= 3, ptest.bound(5))
    got = logs(rec)
    t.check(len(got) == 3 and all(g.get("error") == "over_quota"
                                  for g in got),
            "LOG sees the module's reason as req->error, for HTTP and "
            "SOCKS", got)
    t.check([g.get("status") for g in got[:2]] == ["429", "429"],
            "LOG sees status 429", got)
    lines = p.log_lines(r"ACCESS: denied: over quota")
    t.check(len(lines) == 3, "the debug log names the phase and the "
            "reason of each refusal", lambda: ptest.tail(p.log(), 20))
    t.check(o.accepted == before and not o.reqs_for("id=c"),
            "nothing reached the origin", o.accepted - before)
    t.stop_portico(p)

    # the answer set before pt_conn_resume(DENY)
    p, hport, sport, rec = start(
        t, "async", 'phase = "ACCESS"; again_ms = 100; http_status = 503; '
        'retry_after = 120;')
    st, hd, raw = curl_head(hport, url % "d1")
    t.check(st == 503 and hd.get("retry-after") == "120",
            "DENY after AGAIN with 503: curl -x gets 503 and Retry-After: "
            "120", raw)
    r = raw_get(hport, url % "d2")
    t.check(isinstance(r, H.Resp) and r.status == 503 and
            r.get("retry-after") == "120",
            "the same on a raw socket", lambda: H.describe(r))
    r = socks_outcome(sport, echo)
    t.check(r == 0x02, "DENY after AGAIN, no SOCKS code: reply 0x02",
            S.rep_name(r))
    r = status_get(p)
    t.check(isinstance(r, H.Resp) and r.status == 503 and
            r.reason == "Service Unavailable" and
            r.get("retry-after") == "120" and r.closes(),
            "the status listener: 503 Service Unavailable, Retry-After: "
            "120, Connection: close", lambda: H.describe(r))
    t.stop_portico(p)

    # an ERROR is not a refusal the module shapes
    p, hport, sport, rec = start(
        t, "error", 'phase = "DIAL"; verdict = "ERROR"; http_status = 429; '
        'socks_reply = 5;')
    st, hd, raw = curl_head(hport, url % "e1")
    t.check(st == 500 and "retry-after" not in hd,
            "ERROR at DIAL: 500 whatever the module set", raw)
    r = socks_outcome(sport, echo)
    t.check(r == 0x01, "ERROR at DIAL: SOCKS5 reply 0x01", S.rep_name(r))
    t.stop_portico(p)

    # an ERROR where a status request goes too (it is never dialled)
    p, hport, sport, rec = start(
        t, "error2", 'phase = "ACCESS"; verdict = "ERROR"; '
        'http_status = 429;')
    r = raw_get(hport, url % "e2")
    t.check(isinstance(r, H.Resp) and r.status == 500,
            "ERROR at ACCESS: 500", lambda: H.describe(r))
    r = status_get(p)
    t.check(isinstance(r, H.Resp) and r.status == 500 and
            r.reason == "Internal Server Error" and
            r.get("retry-after") is None and r.closes(),
            "the status listener: 500 Internal Server Error, whatever the "
            "module set, and closes", lambda: H.describe(r))
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("module_answers").run(main)
