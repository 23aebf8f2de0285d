#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Session ticket keys: derived per period from a secret (the master's own,
or ticket_key_file's), so they rotate on a schedule without any message
between processes, and hosts that share the file resume each other's
sessions. openssl s_client -sess_out/-sess_in is the client.

- ticket_rotate = 2: a session resumes at once; once two periods have
  passed, it no longer does (a full handshake, still answered);
- two portico masters (two "hosts") with the same ticket_key_file: a
  session from one resumes on the other; two without the file (each its
  own secret): it does not;
- session_tickets = false: no ticket, so -sess_in makes a full
  handshake;
- two listeners of one master: a session from one does not resume on
  the other (per-listener keys and session context);
- -t: a ticket_key_file shorter than 32 bytes and a missing one fail
  with their lines; a file others can read passes with a warning.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402


def conn(port, ca, o, flag, sess):
    """One s_client connection with a GET inside: ('new'|'reused'|'?',
    answered, output)."""
    req = ("GET %s/echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
           % o.url)
    rc, out = T.s_client(port, ca, extra=["-ign_eof", flag, sess],
                         data=req)
    m = re.search(r"^(New|Reused), TLSv1\.3", out, re.M)
    return (m.group(1).lower() if m else "?"), "HTTP/1.1 200" in out, out


def pair(t, ca, o, name, a_port, b_port, sess):
    """A session from a_port tried on b_port: 'reused' or 'new'."""
    how, ok, out = conn(a_port, ca, o, "-sess_out", sess)
    if how != "new" or not ok:
        t.diag(["%s: first connection %s" % (name, how)] +
               ptest.tail(out, 8))
    if "New Session Ticket arrived" not in out:
        return "no ticket"
    how, ok, out = conn(b_port, ca, o, "-sess_in", sess)
    return how if ok else "unanswered"


def main(t):
    why = T.missing()
    if why:
        t.skip("tls tickets", why)
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    o = H.origin(t)
    keyfile = t.path("ticket.key")
    with open(keyfile, "wb") as f:
        f.write(os.urandom(80))
    os.chmod(keyfile, 0o600)

    # one master: rotation, tickets off, two listeners
    rot, off, other = (ptest.free_port() for _ in range(3))
    p = t.portico(T.conf(t, ",\n".join([
        T.listener(rot, cert, key, name="rot", extra="ticket_rotate = 2;"),
        T.listener(off, cert, key, name="off",
                   extra="session_tickets = false;"),
        T.listener(other, cert, key, name="other")]), workers=2))

    sess = t.path("rot.sess")
    how, ok, _ = conn(rot, ca.pem, o, "-sess_out", sess)
    t0 = time.time()
    how2, ok2, out = conn(rot, ca.pem, o, "-sess_in", sess)
    t.check(how == "new" and how2 == "reused" and ok and ok2,
            "ticket_rotate = 2: the session resumes at once",
            lambda: ptest.tail(out, 10))
    # the ticket's period is t0 // 2 at the latest; it opens until the
    # period after the next one begins
    wait = (int(t0) // 2 + 2) * 2 - time.time() + 0.3
    time.sleep(max(0.0, min(wait, 4.5)))
    how, ok, out = conn(rot, ca.pem, o, "-sess_in", sess)
    t.check(how == "new" and ok, "two periods later the keys have rotated: "
            "a full handshake, answered", lambda: ptest.tail(out, 10))

    how = pair(t, ca.pem, o, "off", off, off, t.path("off.sess"))
    t.check(how == "no ticket", "session_tickets = false: no ticket is "
            "issued", how)
    how = pair(t, ca.pem, o, "other", other, other, t.path("o1.sess"))
    t.check(how == "reused", "a listener resumes its own sessions", how)
    how = pair(t, ca.pem, o, "cross", other, rot, t.path("o2.sess"))
    t.check(how == "new", "a session from another listener does not resume",
            how)
    t.stop_portico(p)

    # two hosts: same ticket_key_file, then each its own secret
    results = {}
    for label, extra in (("file", 'ticket_key_file = "%s";' % keyfile),
                         ("own", "")):
        ports = [ptest.free_port(), ptest.free_port()]
        hosts = []
        for i, port in enumerate(ports):
            sub = t.path("host-%s-%d" % (label, i))
            os.makedirs(sub, exist_ok=True)
            text = T.conf(t, T.listener(port, cert, key, extra=extra))
            text = text.replace(t.tmp + "/error.log", sub + "/error.log")
            text = text.replace(t.tmp + "/portico.pid", sub + "/portico.pid")
            hosts.append(ptest.Portico(t, text, conf_name="%s-%d.conf" % (
                label, i)).start())
        results[label] = pair(t, ca.pem, o, label, ports[0], ports[1],
                              t.path("%s.sess" % label))
        for h in hosts:
            t.stop_portico(h)
    t.check(results["file"] == "reused",
            "two hosts with one ticket_key_file resume each other's "
            "sessions", results)
    t.check(results["own"] == "new",
            "two hosts each with its own secret do not", results)

    # -t
    port = ptest.free_port()
    short = t.path("short.key")
    with open(short, "wb") as f:
        f.write(b"x" * 31)
    for path, needle, what in ((short, "at least 32", "a short key file"),
                               (t.path("none.key"), "No such file",
                                "a missing key file")):
        text = T.conf(t, T.listener(port, cert, key,
                                    extra='\n      ticket_key_file = "%s";'
                                    % path))
        cpath = ptest.write_conf(t.tmp, text, "tk.conf")
        cp = ptest.run_portico(["-t", "-c", cpath])
        want = "%s:%d: ticket_key_file" % (cpath, ptest.line_of(
            text, "ticket_key_file"))
        t.check(cp.returncode != 0 and want in cp.stderr and
                needle in cp.stderr, "-t: %s fails with its line" % what,
                cp.stderr)
    os.chmod(keyfile, 0o644)
    text = T.conf(t, T.listener(port, cert, key,
                                extra='\n      ticket_key_file = "%s";'
                                % keyfile))
    cpath = ptest.write_conf(t.tmp, text, "tk.conf")
    cp = ptest.run_portico(["-t", "-c", cpath])
    t.check(cp.returncode == 0 and "can be read by others" in cp.stderr,
            "-t: a key file others can read passes with a warning",
            cp.stderr)


if __name__ == "__main__":
    ptest.Test("tls_tickets").run(main)
