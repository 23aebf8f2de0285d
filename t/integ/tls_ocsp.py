#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
OCSP stapling from a file: ocsp_response beside a certificate (made here
by `openssl ocsp` as the test CA's responder), sent to clients that ask
(openssl s_client -status), the right one per certificate.

- a listener with ocsp_response staples it: "OCSP Response Status:
  successful", "Cert Status: good", for its certificate's serial;
- with SNI, the certificate of a `certificates` entry comes with its own
  response;
- a listener without one sends none;
- -t: a response for another certificate fails ("does not answer for its
  certificate", with its line), as does a file that is not DER OCSP; a
  response that says revoked passes with a warning;
- a reload takes a new response file.
"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import tlstest as T  # noqa: E402


def serial(cert):
    cp = T.openssl(["x509", "-in", cert, "-noout", "-serial"])
    return cp.stdout.split("=", 1)[1].strip()


def stapled(port, ca, name=None):
    """(status, cert status, serial) of the stapled response, or None."""
    rc, out = T.s_client(port, ca, servername=name, extra=["-status"])
    if "OCSP response: no response sent" in out:
        return None
    st = re.search(r"OCSP Response Status: (\w+)", out)
    cs = re.search(r"Cert Status: (\w+)", out)
    sn = re.search(r"Serial Number: ([0-9A-F]+)", out)
    return (st.group(1) if st else "?", cs.group(1) if cs else "?",
            sn.group(1) if sn else "?")


def chain(t, cert, ca, name):
    """The certificate followed by its issuer: a chain file."""
    path = t.path("%s-chain.pem" % name)
    with open(path, "w") as f:
        f.write(open(cert).read() + open(ca.pem).read())
    return path


def main(t):
    why = T.missing()
    if why:
        t.skip("tls ocsp", why)
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    acert, akey = ca.issue("a.test", dns=["a.test"], ips=())
    full, afull = chain(t, cert, ca, "proxy"), chain(t, acert, ca, "a")
    live = t.path("live.ocsp")
    ca.ocsp(cert, live)
    aresp = ca.ocsp(acert, t.path("a.ocsp"))
    port, plain = ptest.free_port(), ptest.free_port()
    text = T.conf(t, ",\n".join([
        T.listener(port, full, key, extra='ocsp_response = "%s";\n'
                   '      certificates = ( { certificate = "%s"; '
                   'key = "%s"; ocsp_response = "%s"; } );'
                   % (live, afull, akey, aresp)),
        T.listener(plain, cert, key, name="plain")]))
    p = t.portico(text)

    got = stapled(port, ca.pem)
    t.check(got == ("successful", "good", serial(cert)),
            "the listener staples its certificate's response (good)", got)
    got = stapled(port, ca.pem, "a.test")
    t.check(got == ("successful", "good", serial(acert)),
            "SNI a.test: that certificate's own response", got)
    t.check(stapled(plain, ca.pem) is None,
            "a listener without ocsp_response sends none")

    # reload with a response that says revoked: served, with a warning
    ca.ocsp(cert, t.path("revoked.ocsp"), status="R")
    shutil.copy(t.path("revoked.ocsp"), live)
    p.hup()
    p.wait_log(r"reloaded %s" % p.conf_path)
    got = ptest.wait_for(lambda: (stapled(port, ca.pem) or ("",))[1:2] ==
                         ("revoked",) and stapled(port, ca.pem),
                         ptest.bound(10))
    t.check(got and got[1] == "revoked",
            "a reload takes the new response file", got)
    t.check(p.log_lines(r"tls: ocsp_response \"%s\" says the certificate "
                        r"is revoked" % re.escape(live)),
            "a response saying revoked is logged as a warning",
            lambda: ptest.tail(p.log(), 10))
    t.stop_portico(p)

    for resp, needle, what in (
            (aresp, "does not answer for its certificate",
             "a response for another certificate"),
            (cert, "not an OCSP response", "a file that is not one")):
        bad = text.replace('ocsp_response = "%s";\n' % live,
                           'ocsp_response = "%s";\n' % resp)
        path = ptest.write_conf(t.tmp, bad, "bad.conf")
        cp = ptest.run_portico(["-t", "-c", path])
        want = "%s:%d: ocsp_response" % (path, ptest.line_of(
            bad, 'ocsp_response = "%s";' % resp))
        t.check(cp.returncode != 0 and want in cp.stderr and
                needle in cp.stderr, "-t: %s fails with its line" % what,
                cp.stderr)


if __name__ == "__main__":
    ptest.Test("tls_ocsp").run(main)
