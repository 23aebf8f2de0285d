#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Certificates load in the master, are checked by `portico -t`, and reload
on SIGHUP; a broken certificate or key on reload keeps the running ones.

- `portico -t` with a key that does not match its certificate fails,
  naming the key's file and line and both files; the same for a key in a
  `certificates` entry (its own line); a certificate that is not PEM and
  a missing key file fail with their lines too;
- `portico -t` warns (and passes) for a certificate that expires in 10
  days, with the certificate's file:line; one valid 60 days gets no
  warning;
- SIGHUP after the certificate file is replaced in place (a renewal):
  new connections get the new certificate, and a TLS tunnel opened
  before the reload still relays;
- SIGHUP with a mismatched key, then with a certificate file that is no
  longer PEM: 'reload failed: FILE:LINE: ...; keeping the running
  configuration', the same workers, and new connections still get the
  certificate loaded before;
- a good file then reloads and serves its certificate.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402


def served(port, ca):
    try:
        return T.peer_der(port, ca)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)


def check_t(t, ca, cert, key, other_key, acert):
    """portico -t on broken and expiring configurations."""
    port = ptest.free_port()

    def run(text, name):
        path = ptest.write_conf(t.tmp, text, name)
        return path, ptest.run_portico(["-t", "-c", path])

    text = T.conf(t, T.listener(port, cert, other_key))
    path, cp = run(text, "mismatch.conf")
    line = ptest.line_of(text, other_key)
    want = "%s:%d:" % (path, line)
    t.check(cp.returncode != 0 and want in cp.stderr and
            'key "%s" does not match certificate "%s"' % (other_key, cert)
            in cp.stderr,
            "-t: a key that does not match its certificate fails with "
            "file:line and both file names", (cp.returncode, cp.stderr))

    sni = ('certificates = ( { certificate = "%s";\n      key = "%s"; } );'
           % (acert, other_key))
    text = T.conf(t, T.listener(port, cert, key, extra=sni))
    path, cp = run(text, "mismatch_sni.conf")
    want = "%s:%d:" % (path, ptest.line_of(text, 'key = "%s"; }' %
                                               other_key))
    t.check(cp.returncode != 0 and want in cp.stderr and acert in cp.stderr,
            "-t: a mismatched key in a certificates entry names that "
            "entry's key line", (want, cp.returncode, cp.stderr))

    text = T.conf(t, T.listener(port, other_key, key))
    path, cp = run(text, "notpem.conf")
    t.check(cp.returncode != 0 and "%s:%d:" % (path, ptest.line_of(
        text, 'certificate = "%s"' % other_key)) in cp.stderr and
        "no start line" in cp.stderr,
        "-t: a certificate file that is not a certificate fails with its "
        "line", cp.stderr)

    text = T.conf(t, T.listener(port, cert, t.path("nope.key")))
    path, cp = run(text, "nokey.conf")
    t.check(cp.returncode != 0 and "nope.key" in cp.stderr and
            "No such file" in cp.stderr, "-t: a missing key file fails",
            cp.stderr)

    soon, soon_key = ca.issue("soon.test", days=10)
    text = T.conf(t, T.listener(port, soon, soon_key))
    path, cp = run(text, "soon.conf")
    want = "%s:%d: tls: certificate \"%s\" expires in " % (
        path, ptest.line_of(text, 'certificate = "%s"' % soon), soon)
    t.check(cp.returncode == 0 and want in cp.stderr and
            "configuration is valid" in cp.stderr,
            "-t: a certificate that expires in 10 days passes with a "
            "warning naming its file:line", (cp.returncode, cp.stderr))
    # Started on it, the warning is in the error log too (it is written
    # while the configuration loads, before the log file is open).
    q = t.portico(text, conf_name="soon-start.conf")

    def in_file():
        try:
            with open(q.error_log, errors="replace") as f:
                return "expires in " in f.read()
        except OSError:
            return False
    t.check(ptest.wait_for(in_file, ptest.bound(5)),
            "started on it: the error log file (not only stderr) has the "
            "warning", lambda: ptest.tail(q.log()))
    t.stop_portico(q)
    text = T.conf(t, T.listener(port, cert, key))
    path, cp = run(text, "fine.conf")
    t.check(cp.returncode == 0 and "expire" not in cp.stderr,
            "-t: a certificate valid 60 days passes without a warning",
            (cp.returncode, cp.stderr))


def main(t):
    why = T.missing()
    if why:
        t.skip("tls reload", why)
        return
    ca = T.CA(t)
    cert1, key = ca.issue("proxy.test", dns=["proxy.test"], days=60)
    acert, akey = ca.issue("a.test", dns=["a.test"], days=60)
    other = t.path("other.key")
    T.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt",
               "ec_paramgen_curve:P-256", "-out", other])
    check_t(t, ca, cert1, key, other, acert)

    # the live certificate file, replaced in place on renewal
    live = t.path("live.pem")
    shutil.copy(cert1, live)
    echo = t.echo_server()
    port = ptest.free_port()
    good = T.conf(t, T.listener(port, live, key), workers=2)
    p = t.portico(good)
    gen = p.workers()
    t.check(served(port, ca.pem) == T.pem_der(cert1),
            "the listener serves the certificate it started with")

    s = T.connect(port, ca.pem, timeout=ptest.bound(10))
    held = H.Conn(s, ptest.bound(10))
    held.send("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n" % echo.address)
    t.check(held.read_head().startswith(b"HTTP/1.1 200"),
            "a TLS tunnel is open before the reload")

    # renewal: same key, new certificate in the same file
    cert2, _ = ca.issue("proxy2.test", dns=["proxy.test"], days=60, key=key)
    shutil.copy(cert2, live)
    p.hup()
    lines = p.wait_log(r"reloaded %s: generation \d+" % p.conf_path)
    t.check(bool(lines), "SIGHUP: reloaded", lambda: ptest.tail(p.log()))
    new = p.wait_workers(2, ptest.bound(10), exclude=gen.values())
    got = ptest.wait_for(lambda: served(port, ca.pem) == T.pem_der(cert2),
                         ptest.bound(5))
    t.check(new and got, "after SIGHUP new connections get the renewed "
            "certificate", lambda: [str(p.all_children())] +
            ptest.tail(p.log()))
    try:
        held.send(b"ping-after-reload\n")
        echoed = held.read_exact(18)
    except Exception as e:
        echoed = repr(e)
    t.check(echoed == b"ping-after-reload\n",
            "the tunnel opened before the reload still relays", echoed)
    held.close()
    gen = p.workers()

    failed = 0
    # a mismatched key
    bad = T.conf(t, T.listener(port, live, other), workers=2)
    p.set_conf(bad)
    p.hup()
    failed += 1
    want = "reload failed: %s:%d:" % (p.conf_path, ptest.line_of(bad, other))
    lines = p.wait_log(r"reload failed: ", count=failed)
    t.check(len(lines) >= failed and want in lines[-1] and
            "does not match" in lines[-1] and
            "keeping the running configuration" in lines[-1],
            "SIGHUP with a mismatched key: '%s ... keeping the running "
            "configuration'" % want, lines[-1:])
    t.check(p.workers() == gen and
            served(port, ca.pem) == T.pem_der(cert2),
            "the same workers still serve the certificate loaded before",
            str(p.all_children()))

    # the certificate file broken in place, configuration unchanged
    p.set_conf(good)
    with open(live, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64\n")
    p.hup()
    failed += 1
    want = "reload failed: %s:%d:" % (p.conf_path, ptest.line_of(
        good, 'certificate = "%s"' % live))
    lines = p.wait_log(r"reload failed: ", count=failed)
    t.check(len(lines) >= failed and want in lines[-1],
            "SIGHUP with a broken certificate file: '%s ...'" % want,
            lines[-1:])
    t.check(p.workers() == gen and
            served(port, ca.pem) == T.pem_der(cert2),
            "the running certificate still serves after the broken reload",
            str(p.all_children()))

    # fixed: a third certificate
    cert3, _ = ca.issue("proxy3.test", dns=["proxy.test"], days=60, key=key)
    shutil.copy(cert3, live)
    p.hup()
    new = p.wait_workers(2, ptest.bound(10), exclude=gen.values())
    got = ptest.wait_for(lambda: served(port, ca.pem) == T.pem_der(cert3),
                         ptest.bound(5))
    t.check(new and got, "a good reload then serves its certificate",
            lambda: ptest.tail(p.log()))
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("tls_reload").run(main)
