#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Proxy credentials live for one request's AUTH phase only (issue 9):

- after an AUTH DENY (407) the LOG hooks see no password, and the next
  request on the same keep-alive connection, sent without credentials,
  reaches AUTH with neither the old user nor the old password;
- after an AUTH ERROR (500) the LOG hooks see no password either.

hookrec records what AUTH and LOG see (and denies AUTH); for the ERROR
the answer module refuses AUTH and records what LOG sees.
"""
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402


def start(t, name, answer=None):
    """hookrec records every hook and, without <answer>, denies AUTH;
    with <answer> ("DENY" or "ERROR"), the answer module refuses AUTH
    after hookrec recorded it."""
    port = ptest.free_port()
    hrec, arec = t.path(name + ".hookrec"), t.path(name + ".answer")
    mods = '{ name = "hookrec"; path = "%s/hookrec.so"; record = "%s"; %s }' \
        % (ptest.TESTMODDIR, hrec, "" if answer else 'deny_phase = "AUTH";')
    if answer:
        mods += (',\n  { name = "answer"; path = "%s/answer.so"; '
                 'record = "%s"; phase = "AUTH"; verdict = "%s"; }'
                 % (ptest.TESTMODDIR, arec, answer))
    text = """workers = 1;
error_log = "%s/error.log";
log_level = "info";
pid_file = "%s/portico.pid";
shutdown_timeout = 5;
listeners = ( { address = "127.0.0.1:%d"; protocol = "http"; } );
modules = ( %s );
""" % (t.tmp, t.tmp, port, mods)
    return t.portico(text, conf_name=name + ".conf"), port, hrec, arec


def records(path, what):
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return [dict(w.split("=", 1) for w in ln.split()[1:] if "=" in w)
            for ln in lines if ln.split()[:1] == [what]]


def main(t):
    o = H.origin(t)
    cred = b"Proxy-Authorization: Basic " + \
        base64.b64encode(b"alice:secret") + b"\r\n"

    p, port, hrec, arec = start(t, "deny")
    c = H.Conn.to(port, timeout=ptest.bound(10))
    resps = []
    try:
        for extra in (cred, b""):
            c.send(b"GET " + (o.url + "/echo").encode() +
                   b" HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n")
            resps.append(H.read_response(c))
    except Exception as e:
        resps.append("%s: %s" % (type(e).__name__, e))
    c.close()
    t.check(len(resps) == 2 and all(isinstance(r, H.Resp) and
                                    r.status == 407 for r in resps),
            "two requests on one connection, both refused at AUTH with 407",
            resps)
    ptest.wait_for(lambda: len(records(hrec, "LOG")) >= 2, ptest.bound(5))
    auth = records(hrec, "AUTH")
    logs = records(hrec, "LOG")
    t.check(len(auth) == 2 and auth[0].get("user") == "alice" and
            auth[0].get("pass") == "secret",
            "the first request's AUTH sees alice's credentials", auth)
    t.check(len(logs) == 2 and logs[0].get("user") == "alice" and
            logs[0].get("pass") == "-",
            "after the AUTH DENY, LOG sees the user but no password", logs)
    t.check(len(auth) == 2 and auth[1].get("user") == "-" and
            auth[1].get("pass") == "-",
            "the next keep-alive request, without credentials, reaches "
            "AUTH with no user and no password", auth)
    t.check(len(logs) == 2 and logs[1].get("pass") == "-",
            "its LOG sees no password either", logs)
    t.stop_portico(p)

    p, port, hrec, arec = start(t, "error", answer="ERROR")
    c = H.Conn.to(port, timeout=ptest.bound(10))
    try:
        c.send(b"GET " + (o.url + "/echo").encode() +
               b" HTTP/1.1\r\nHost: x\r\n" + cred + b"\r\n")
        r = H.read_response(c)
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    c.close()
    ptest.wait_for(lambda: records(arec, "LOG"), ptest.bound(5))
    logs = records(arec, "LOG")
    t.check(isinstance(r, H.Resp) and r.status == 500 and len(logs) == 1 and
            logs[0].get("pass") == "-",
            "after an AUTH ERROR (500), LOG sees no password", [r, logs])
    t.check(o.accepted == 0, "nothing reached the origin", o.accepted)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("http_credentials").run(main)
