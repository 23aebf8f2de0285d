# SPDX-License-Identifier: BSD-2-Clause
"""
Shared by the t/integ/tls_*.py scenarios: where the real tls.so is (the
build tree's modules/tls/.libs), a test CA and server certificates made
by the `openssl` command in the scenario's temporary directory, a
configuration with the module loaded, and TLS clients (python's ssl,
curl --proxy https://, openssl s_client).
"""
import os
import re
import shutil
import socket
import ssl
import subprocess

import ptest
import httptest as H

TLS_SO = os.path.join(ptest.BUILDDIR, "modules", "tls", ".libs", "tls.so")


def missing():
    """What this machine lacks for the tls scenarios, or None."""
    if not os.path.exists(TLS_SO):
        return "tls.so not built at %s" % TLS_SO
    if shutil.which("openssl") is None:
        return "no openssl program in PATH"
    if not H.have_curl():
        return "no curl"
    return None


def openssl(args, data=None, timeout=None):
    """Runs `openssl <args>`; CompletedProcess with text output."""
    return subprocess.run(["openssl"] + list(args), input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True,
                          timeout=timeout or ptest.bound(30))


def _ok(cp, what):
    if cp.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (what, cp.stderr[-500:]))


def _newkey(kind):
    if kind == "rsa":
        return ["-newkey", "rsa:2048"]
    return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]


class CA:
    """A test certificate authority in <dir>: ca.pem signs the server
    certificates made by issue()."""

    def __init__(self, t, name="ca"):
        self.t = t
        self.key = t.path("%s.key" % name)
        self.pem = t.path("%s.pem" % name)
        self.serial = t.path("%s.srl" % name)
        self.name = name
        _ok(openssl(["req", "-x509"] + _newkey("ec") + [
            "-nodes", "-keyout", self.key, "-out", self.pem, "-days", "90",
            "-subj", "/CN=portico test CA %s" % name]), "req CA")

    def issue(self, name, dns=(), ips=("127.0.0.1",), days=90, kind="ec",
              key=None, cn=None):
        """(cert, key) paths <name>.pem, <name>.key: a certificate for
        CN=<cn> (default <name>) with
        subjectAltName DNS:<dns...>, IP:<ips...>, valid <days> days, for
        a new key of <kind> ("ec" or "rsa"), or for the existing <key>."""
        cert = self.t.path("%s.pem" % name)
        csr = self.t.path("%s.csr" % name)
        if key is None:
            key = self.t.path("%s.key" % name)
            args = _newkey(kind) + ["-nodes", "-keyout", key]
        else:
            args = ["-key", key]
        _ok(openssl(["req", "-new"] + args + [
            "-out", csr, "-subj", "/CN=%s" % (cn or name)]), "req " + name)
        ext = self.t.path("%s.ext" % name)
        alt = ["DNS:%s" % d for d in dns] + ["IP:%s" % i for i in ips]
        ptest.write_file(ext, "subjectAltName=%s\n" % ",".join(alt) if alt
                         else "basicConstraints=CA:FALSE\n")
        _ok(openssl(["x509", "-req", "-in", csr, "-CA", self.pem, "-CAkey",
                     self.key, "-CAserial", self.serial, "-CAcreateserial",
                     "-out", cert, "-days", str(days), "-extfile", ext]),
            "x509 " + name)
        return cert, key


    def crl(self, revoked=()):
        """A CRL (PEM) signed by this CA that revokes the certificate
        files <revoked>; its path."""
        d = self.t.path("%s-db" % self.name)
        os.makedirs(d, exist_ok=True)
        index, number = os.path.join(d, "index.txt"), \
            os.path.join(d, "crlnumber")
        ptest.write_file(index, "")
        ptest.write_file(number, "01\n")
        cnf = os.path.join(d, "ca.cnf")
        ptest.write_file(cnf, "[ca]\ndefault_ca = d\n[d]\ndatabase = %s\n"
                         "default_md = sha256\ndefault_crl_days = 30\n"
                         "crlnumber = %s\n" % (index, number))
        for c in revoked:
            _ok(openssl(["ca", "-config", cnf, "-revoke", c, "-keyfile",
                         self.key, "-cert", self.pem]), "ca -revoke")
        out = self.t.path("%s-crl.pem" % self.name)
        _ok(openssl(["ca", "-config", cnf, "-gencrl", "-keyfile", self.key,
                     "-cert", self.pem, "-out", out]), "ca -gencrl")
        return out


    def ocsp(self, cert, out, status="V", ndays=2):
        """An OCSP response (DER, in <out>) signed by this CA saying
        certificate <cert> is good ("V") or revoked ("R")."""
        def field(opt):
            cp = openssl(["x509", "-in", cert, "-noout", opt, "-nameopt",
                          "compat"])
            _ok(cp, "x509 " + opt)
            return cp.stdout.split("=", 1)[1].strip()
        import datetime
        end = datetime.datetime.strptime(field("-enddate"),
                                         "%b %d %H:%M:%S %Y GMT")
        d = self.t.path("%s-ocsp" % self.name)
        os.makedirs(d, exist_ok=True)
        index = os.path.join(d, "index.txt")
        revoked = end.strftime("%y%m%d%H%M%SZ") if status == "R" else ""
        ptest.write_file(index, "%s\t%s\t%s\t%s\tunknown\t%s\n" % (
            status, end.strftime("%y%m%d%H%M%SZ"), revoked,
            field("-serial"), field("-subject")))
        req = os.path.join(d, "req.der")
        _ok(openssl(["ocsp", "-issuer", self.pem, "-cert", cert, "-reqout",
                     req, "-no_nonce"]), "ocsp request")
        _ok(openssl(["ocsp", "-index", index, "-rsigner", self.pem,
                     "-rkey", self.key, "-CA", self.pem, "-reqin", req,
                     "-respout", out, "-ndays", str(ndays)]), "ocsp response")
        return out


def fingerprint(pem_path):
    """SHA-256 of the certificate's DER, hex lower case."""
    cp = openssl(["x509", "-in", pem_path, "-noout", "-fingerprint",
                  "-sha256"])
    _ok(cp, "fingerprint")
    return cp.stdout.split("=", 1)[1].strip().replace(":", "").lower()


def conf(t, listeners, workers=1, log_level="info", limits="",
         modules_extra="", http='connect_ports = "*";'):
    """A configuration with <listeners> (text of listener entries) and
    the tls module (plus <modules_extra>, text of more module entries)."""
    return """workers = %d;
error_log = "%s/error.log";
log_level = "%s";
pid_file = "%s/portico.pid";
shutdown_timeout = 5;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30;
  %s };
http = { %s };
listeners = (
%s
);
modules = ( { name = "tls"; path = "%s"; }%s );
""" % (workers, t.tmp, log_level, t.tmp, limits, http, listeners, TLS_SO,
       modules_extra)


def listener(port, cert, key, protocol="http", name="tls", extra=""):
    """One listener entry whose transport is tls (the DESIGN.md form)."""
    return ('  { name = "%s"; address = "127.0.0.1:%d"; protocol = "%s"; '
            'transport = "tls";\n    tls = { certificate = "%s"; '
            'key = "%s"; %s }; }' % (name, port, protocol, cert, key, extra))


def client_ctx(cafile, server_name=True, alpn=None):
    """A python ssl client context that trusts <cafile> only."""
    ctx = ssl.create_default_context(cafile=cafile)
    if not server_name:
        ctx.check_hostname = False
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


def connect(port, cafile, server_hostname="127.0.0.1", timeout=10.0,
            alpn=None, ragged_ok=True):
    """A TLS connection to 127.0.0.1:<port>, verified against <cafile>
    (the certificate must name <server_hostname>; python then sends it
    as SNI unless it is an address). ragged_ok=False: an EOF without
    close_notify raises ssl.SSLEOFError instead of reading as b''."""
    raw = ptest.connect(port, timeout=timeout)
    try:
        ctx = client_ctx(cafile, alpn=alpn)
        s = ctx.wrap_socket(raw, server_hostname=server_hostname,
                            suppress_ragged_eofs=ragged_ok)
    except BaseException:
        raw.close()
        raise
    s.settimeout(timeout)
    return s


def curl_args(port, cafile):
    """curl's arguments for an HTTPS proxy on 127.0.0.1:<port>."""
    return ["--proxy", "https://127.0.0.1:%d" % port,
            "--proxy-cacert", cafile]


def s_client(port, cafile, servername=None, extra=(), data=""):
    """`openssl s_client` to 127.0.0.1:<port>: (returncode, output). The
    connection ends once <data> is sent (stdin closes)."""
    args = ["s_client", "-connect", "127.0.0.1:%d" % port, "-CAfile",
            cafile, "-verify_return_error"]
    args += ["-servername", servername] if servername else ["-noservername"]
    cp = openssl(args + list(extra), data=data)
    return cp.returncode, cp.stdout + cp.stderr


def peer_subject(out):
    """The CN of the certificate s_client printed, or None."""
    m = re.search(r"^subject=.*?CN\s*=\s*([^,/\n]+)", out, re.M)
    return m.group(1).strip() if m else None


def peer_der(port, cafile, server_hostname="127.0.0.1"):
    """The DER bytes of the certificate the listener presents."""
    s = connect(port, cafile, server_hostname)
    try:
        return s.getpeercert(binary_form=True)
    finally:
        s.close()


def pem_der(pem_path):
    with open(pem_path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def raw_socket(port, timeout=10.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s
