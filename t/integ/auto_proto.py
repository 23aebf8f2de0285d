#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
protocol = "auto": one port serves HTTP and SOCKS, told apart by the first
byte (4 or 5: SOCKS; anything else: HTTP):

- curl -x (HTTP), --socks5-hostname, --socks4 and --socks4a all fetch the
  same body byte-exact through one listener;
- a CONNECT and a SOCKS5 UDP ASSOCIATE work there too;
- a client that sends nothing is closed at header_timeout;
- with a module that makes ACCEPT wait (hookrec, again_ms), a SOCKS5
  CONNECT (greeting, credentials and request in one write) and an HTTP
  CONNECT still
  work there: the sniffed socket is handed over with its interest off
  while the hook waits;
- udp_advertise is accepted on an auto listener, refused on an http one.
"""
import hashlib
import http.server
import os
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

BODY = os.urandom(200000)


class Origin(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *a):
        pass


def conf(t, port, extra="", modules=""):
    return ('workers = 1;\nerror_log = "%s";\nlog_level = "info";\n'
            'pid_file = "%s";\nlimits = { header_timeout = 2; };\n'
            'http = { connect_ports = "*"; };\n%s\n'
            'listeners = ( { address = "127.0.0.1:%d"; protocol = "auto";'
            ' %s } );\n' % (t.path("error.log"), t.path("portico.pid"),
                            modules, port, extra))


def http_connect(port, target):
    """Bytes echoed back through a CONNECT tunnel to <target>."""
    s = ptest.connect(port)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n" % target.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            break
        head += d
    s.sendall(b"ping")
    got = ptest.recv_exact(s, 4) if head.startswith(b"HTTP/1.1 200") \
        else b""
    s.close()
    return got, head


def with_accept_hook(t, port, echo):
    mods = ('modules = ( { name = "hookrec"; path = "%s/hookrec.so"; '
            'record = "%s"; again_ms = 50; } );' % (
                ptest.TESTMODDIR, t.path("hookrec.rec")))
    p = t.portico(conf(t, port, modules=mods), conf_name="hooked.conf")
    host, eport = echo.address.rsplit(":", 1)
    c = ptest.connect(port)
    got = b""
    try:
        # hookrec hooks AUTH too: username/password it is
        c.sendall(b"\x05\x01\x02\x01\x01u\x01p\x05\x01\x00\x01" +
                  socket.inet_aton(host) + struct.pack("!H", int(eport)))
        head = ptest.recv_exact(c, 14)
        if head[:6] == b"\x05\x02\x01\x00\x05\x00":
            c.sendall(b"hooked")
            got = ptest.recv_exact(c, 6)
    except OSError as e:
        head = repr(e).encode()
    c.close()
    t.check(got == b"hooked", "ACCEPT hook waiting 50 ms: a SOCKS5 CONNECT "
            "on the auto listener works", repr(head))
    got, head = http_connect(port, echo.address)
    t.check(got == b"ping", "ACCEPT hook waiting 50 ms: an HTTP CONNECT "
            "on the auto listener works", head)
    t.stop_portico(p)


def curl(args):
    r = subprocess.run(["curl", "-s", "--max-time", str(ptest.bound(10))] +
                       args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return r.returncode, r.stdout


def main(t):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    t.at_exit(srv.shutdown)
    oport = srv.server_address[1]
    echo = t.echo_server()
    port = ptest.free_port()
    p = t.portico(conf(t, port, 'udp_advertise = "127.0.0.1";'))
    url = "http://127.0.0.1:%d/x" % oport
    want = hashlib.sha256(BODY).hexdigest()
    for label, args in [
            ("HTTP (curl -x)", ["-x", "http://127.0.0.1:%d" % port, url]),
            ("SOCKS5 (curl --socks5-hostname)",
             ["--socks5-hostname", "127.0.0.1:%d" % port,
              "http://localhost:%d/x" % oport]),
            ("SOCKS4 (curl --socks4)", ["--socks4", "127.0.0.1:%d" % port,
                                         url]),
            ("SOCKS4a (curl --socks4a)",
             ["--socks4a", "127.0.0.1:%d" % port,
              "http://localhost:%d/x" % oport])]:
        rc, out = curl(args)
        t.check(rc == 0 and hashlib.sha256(out).hexdigest() == want,
                "%s through the auto listener: body exact" % label,
                "curl exit %d, %d bytes" % (rc, len(out)))

    # CONNECT on the same port
    got, head = http_connect(port, echo.address)
    t.check(got == b"ping", "CONNECT tunnel on the auto listener", head)

    # SOCKS5 UDP ASSOCIATE on the same port
    uecho = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    uecho.bind(("127.0.0.1", 0))
    t.at_exit(uecho.close)

    def udp_echo():
        try:
            while True:
                d, a = uecho.recvfrom(70000)
                uecho.sendto(d, a)
        except OSError:
            pass
    threading.Thread(target=udp_echo, daemon=True).start()
    c = ptest.connect(port)
    c.sendall(b"\x05\x01\x00")
    ok = ptest.recv_exact(c, 2) == b"\x05\x00"
    c.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")
    r = ptest.recv_exact(c, 10)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(ptest.bound(3))
    reply = b""
    if ok and r[1] == 0:
        rport = struct.unpack("!H", r[8:10])[0]
        u.sendto(b"\x00\x00\x00\x01" + socket.inet_aton("127.0.0.1") +
                 struct.pack("!H", uecho.getsockname()[1]) + b"dgram",
                 (socket.inet_ntoa(r[4:8]), rport))
        try:
            reply = u.recvfrom(70000)[0]
        except socket.timeout:
            pass
    u.close()
    c.close()
    t.check(reply.endswith(b"dgram"), "UDP ASSOCIATE on the auto listener",
            repr(r))

    # a silent client is closed at header_timeout
    s = ptest.connect(port)
    s.settimeout(ptest.bound(8))
    t0 = time.monotonic()
    try:
        closed = s.recv(1) == b""
    except (ConnectionResetError, socket.timeout):
        closed = False
    s.close()
    t.check(closed and time.monotonic() - t0 < ptest.bound(6),
            "a client that sends nothing is closed at header_timeout")
    t.stop_portico(p)

    bad = conf(t, port, 'udp_advertise = "127.0.0.1";').replace(
        '"auto"', '"http"')
    path = t.path("bad.conf")
    ptest.write_file(path, bad)
    r = ptest.run_portico(["-t", "-c", path])
    t.check(r.returncode == 1 and "udp_advertise" in r.stderr,
            "udp_advertise on an http listener fails -t", r.stderr)
    with_accept_hook(t, port, echo)


if __name__ == "__main__":
    ptest.Test("auto_proto").run(main)
