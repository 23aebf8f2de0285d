#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
TLS session resumption across workers: the ticket keys are made in the
master with each listener's certificates, before the fork, so a ticket
one worker issued opens on every worker.

- openssl s_client -sess_out: a full handshake that leaves a session
  (TLS 1.3, then TLS 1.2), with an HTTP request answered inside it;
- openssl s_client -sess_in, repeated: every connection resumes
  ("Reused", and the debug log says "resumed"), at least one of them on
  another worker than the one that issued the ticket;
- a resumed TLS 1.3 connection is given a new ticket (clients use one
  once), which resumes in turn;
- a reload keeps the ticket keys (they derive from a secret the master
  keeps): the session from before it resumes on the new workers.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402

TRIES = 12


def run(port, ca, o, tag, extra):
    """One s_client connection with a GET inside; (new|reused|?, ok)."""
    req = ("GET %s/echo?id=%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
           "\r\n" % (o.url, tag))
    rc, out = T.s_client(port, ca, extra=["-ign_eof"] + extra, data=req)
    m = re.search(r"^(New|Reused), (TLSv1\.[23])", out, re.M)
    how = (m.group(1).lower(), m.group(2)) if m else ("?", None)
    return how, "HTTP/1.1 200" in out, out


def last_handshake(p):
    """(worker, resumed) of the newest handshake line in the log."""
    lines = p.log_lines(r"worker \d+: .* tls: TLSv")
    if not lines:
        return None, None
    m = re.search(r"worker (\d+): .* tls: TLSv\S+ \S+( resumed)?", lines[-1])
    return int(m.group(1)), bool(m.group(2))


def scenario(t, p, port, ca, o, version, flag):
    sess = t.path("sess-%s.pem" % version)
    how, ok, out = run(port, ca, o, "first-" + version,
                       [flag, "-sess_out", sess])
    issuer, _ = last_handshake(p)
    t.check(how == ("new", version) and ok and os.path.exists(sess),
            "%s: a full handshake leaves a session, the GET inside is "
            "answered" % version, lambda: ptest.tail(out, 12))
    others, resumed, total = set(), 0, 0
    for i in range(TRIES):
        how, ok, out = run(port, ca, o, "again-%s-%d" % (version, i),
                           [flag, "-sess_in", sess])
        w, r = last_handshake(p)
        total += 1
        if how == ("reused", version) and ok and r:
            resumed += 1
            if w != issuer:
                others.add(w)
        if others and total >= 3:
            break
    t.check(resumed == total,
            "%s: every -sess_in connection resumes (%d of %d)"
            % (version, resumed, total), lambda: ptest.tail(out, 12))
    t.check(bool(others), "%s: a ticket issued by worker %s resumes on "
            "another worker (%s)" % (version, issuer, sorted(others)),
            lambda: p.log_lines(r"tls: TLSv")[-TRIES:])
    if version == "TLSv1.3":
        # Clients use a TLS 1.3 ticket once (RFC 8446 C.4): a resumed
        # connection must bring a new one, which resumes in turn.
        renewed = t.path("sess-renewed.pem")
        how, ok, out = run(port, ca, o, "renew", [flag, "-sess_in", sess,
                                                  "-sess_out", renewed])
        with open(sess, "rb") as f:
            before = f.read()
        after = b""
        if os.path.exists(renewed):
            with open(renewed, "rb") as f:
                after = f.read()
        how2, ok2, out2 = run(port, ca, o, "renewed",
                              [flag, "-sess_in", renewed])
        t.check(how == ("reused", version) and after and after != before
                and how2 == ("reused", version) and ok2,
                "TLSv1.3: a resumed connection is given a new ticket, "
                "and that one resumes", lambda: ptest.tail(out2, 12))
    return sess


def main(t):
    why = T.missing()
    if why:
        t.skip("tls resumption", why)
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    o = H.origin(t)
    port = ptest.free_port()
    conf = T.conf(t, T.listener(port, cert, key), workers=2,
                  log_level="debug")
    p = t.portico(conf)
    sess13 = scenario(t, p, port, ca.pem, o, "TLSv1.3", "-tls1_3")
    scenario(t, p, port, ca.pem, o, "TLSv1.2", "-tls1_2")

    gen = p.workers()
    p.hup()
    p.wait_log(r"reloaded %s: generation \d+" % p.conf_path)
    p.wait_workers(2, ptest.bound(10), exclude=gen.values())
    how, ok, out = run(port, ca.pem, o, "after-reload",
                       ["-tls1_3", "-sess_in", sess13])
    t.check(how == ("reused", "TLSv1.3") and ok,
            "after a reload the session from before resumes on the new "
            "workers", lambda: ptest.tail(out, 12))
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("tls_resume").run(main)
