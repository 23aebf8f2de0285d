#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A reload while keep-alive responses are on their way (worker/http.c,
http_next_request and http_close_answered):

- a response whose head promised keep-alive before the SIGHUP: when it
  ends, the client sends its next request at once (a POST with a body,
  which no client retries by itself) and gets it answered, with
  Connection: close, then a clean close; it used to meet a closed socket;
- a client pipelining 300 GETs behind a response in progress at the
  SIGHUP: the answers it gets are whole, and the connection ends with a
  FIN, not a reset that could cost it the last answer (lingering close);
- a keep-alive client that stays quiet after its response is closed
  within a few seconds (the grace is 1 s), so the old worker can go;
- a client sending a POST every 100 ms on one connection across a
  reload (the drain most likely finds it between an answer and its next
  request, http_on_drain's grace): every POST is answered, the last with
  Connection: close, and the origin gets each once.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

SLOW = "/chunked?n=4096&chunk=512&pause=150&id=%s"   # about 1 s of body


def slow_request(port, o, tag):
    """A keep-alive connection that has asked for a response of about a
    second (the caller sends SIGHUP while it comes). Returns the Conn."""
    c = H.Conn.to(port, timeout=ptest.bound(10))
    c.send(H.request_bytes("GET", o.url + SLOW % tag))
    return c


def main(t):
    o = H.origin(t)
    p, port = H.start(t, limits={"idle_timeout": 60})
    n = [0]

    def hup():
        n[0] += 1
        p.hup()
        return p.wait_log(r"reloaded .*generation %d" % (n[0] + 1),
                          timeout=ptest.bound(10))

    # -- the next request right after a keep-alive response ---------------
    c = slow_request(port, o, "ka")
    r1 = None
    try:
        time.sleep(0.2)
        t.check(bool(hup()), "SIGHUP while the response is on its way")
        r1 = H.read_response(c)
        time.sleep(0.05)        # a client a little slower than the proxy
        body = os.urandom(3000)
        c.send(H.request_bytes("POST", o.url + "/echo?id=ka-post",
                               body=body))
        r2 = H.read_response(c)
        ok = r2.status == 200 and r2.closes()
        why = r2.describe()
    except Exception as e:
        ok, why = False, "%s: %s" % (type(e).__name__, e)
    t.check(r1 is not None and r1.status == 200 and not r1.closes() and
            r1.body_len == 4096, "the slow response completes, having "
            "promised keep-alive", repr(r1))
    t.check(ok, "the POST sent right after it is answered (200, "
            "Connection: close)", why)
    t.check(len(o.reqs_for("ka-post")) == 1, "the origin got the POST once",
            lambda: o.requests[-3:])
    data, how = H.outcome(c, ptest.bound(5))
    t.check(how == "eof" and not data, "then the connection ends with a "
            "FIN", (how, data[:60]))
    c.close()

    # -- pipelined requests behind a response in progress -----------------
    c = slow_request(port, o, "pl")
    time.sleep(0.2)
    t.check(bool(hup()), "SIGHUP with a response on its way (pipelining)")
    # More than the proxy reads at once: some stay in the kernel, unread
    # when it closes after answering the next one.
    pad = "x" * 200
    c.send(b"".join(H.request_bytes("GET", o.url + "/len?n=100&id=pl%d&p=%s"
                                    % (i, pad)) for i in range(300)))
    got, err = [], None
    try:
        while True:
            r = H.read_response(c)
            got.append(r)
            if r.closes():
                break
    except Exception as e:
        err = "%s: %s" % (type(e).__name__, e)
    data, how = H.outcome(c, ptest.bound(5))
    t.check(len(got) >= 2 and all(r.status == 200 for r in got) and
            got[-1].closes() and err is None,
            "the pipelined answers come whole, the last with "
            "Connection: close", [repr(r) for r in got] + [err])
    t.check(how == "eof", "then a FIN, not a reset (lingering close)",
            (how, data[:60]))
    c.close()

    # -- a quiet keep-alive client goes soon -------------------------------
    c = slow_request(port, o, "quiet")
    time.sleep(0.2)
    hup()
    r = H.read_response(c)
    t0 = time.monotonic()
    data, how = H.outcome(c, ptest.bound(10))
    el = time.monotonic() - t0
    t.check(r.status == 200 and how == "eof" and el < 5,
            "a client quiet after its response is closed within 5 s "
            "(%.1f s)" % el, (r, how, el))
    c.close()

    # -- a POST every 100 ms across the reload -----------------------------
    c = H.Conn.to(port, timeout=ptest.bound(10))
    answered, err, closed, sent = 0, None, False, 0
    try:
        for i in range(40):
            c.send(H.request_bytes("POST", o.url + "/echo?id=tick%d" % i,
                                   body=b"tick %d" % i))
            sent += 1
            r = H.read_response(c)
            if r.status != 200:
                err = "POST %d: %s" % (i, r.describe())
                break
            answered += 1
            if r.closes():
                closed = True
                break
            if i == 2:
                hup()
            time.sleep(0.1)
    except Exception as e:
        err = "after %d answers: %s: %s" % (answered, type(e).__name__, e)
    c.close()
    t.check(closed and err is None and answered == sent,
            "a POST every 100 ms across the reload: all %d answered, the "
            "last with Connection: close" % sent, err)
    t.check(all(len(o.reqs_for("tick%d" % i)) == 1 for i in range(sent)),
            "the origin got each of them once", lambda: o.requests[-5:])
    t.check(not o.bad, "the origin found nothing wrong", o.bad)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("reload_keepalive").run(main)
