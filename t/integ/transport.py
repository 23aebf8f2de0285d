#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A module transport wraps a listener's client leg (the path the tls module
takes). The test module xorwire (t/modules/xorwire.c) wants the handshake
"XOR1" (answers "OK") and XORs every later byte with 0x5a on the client
leg only:

- after the handshake, 1 MiB sent XORed reaches the echo server in clear
  and comes back XORed, byte-exact, with half-close, in splice and copy
  mode (splice must step aside on a wrapped leg);
- a wrong handshake closes the connection before the echo server sees one;
- a client that never finishes the handshake is closed at header_timeout;
- `transport` naming a module without one, or one not loaded, fails -t.
"""
import hashlib
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

KEY = 0x5A
TABLE = bytes(b ^ KEY for b in range(256))


def xor(data):
    return data.translate(TABLE)


def handshake(port):
    s = ptest.connect(port)
    s.sendall(b"XOR1")
    return s, ptest.recv_exact(s, 2)


def roundtrip(t, port, label):
    payload = os.urandom(1 * ptest.MiB)
    s, ok = handshake(port)
    t.check(ok == b"OK", "%s: the handshake is answered 'OK'" % label,
            repr(ok))
    got = bytearray()

    def reader():
        while True:
            d = s.recv(65536)
            if not d:
                return
            got.extend(d)
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    s.sendall(xor(payload))
    s.shutdown(socket.SHUT_WR)
    th.join(ptest.bound(20))
    s.close()
    back = xor(bytes(got))
    t.check(hashlib.sha256(back).digest() == hashlib.sha256(payload).digest(),
            "%s: 1 MiB comes back byte-exact through the transport" % label,
            "sent %d, got %d" % (len(payload), len(got)))


def main(t):
    echo = t.echo_server()
    for relay in ("splice", "copy"):
        port = ptest.free_port()
        conf = t.conf("transport", RELAY=relay,
                      LISTEN="127.0.0.1:%d" % port, TO=echo.address)
        p = t.portico(conf, conf_name="transport-%s.conf" % relay)
        roundtrip(t, port, relay)

        before = echo.accepted
        s = ptest.connect(port)
        s.sendall(b"NOPE")
        s.settimeout(ptest.bound(5))
        try:
            closed = s.recv(10) == b""
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
        s.close()
        t.check(closed, "%s: a wrong handshake is closed" % relay)
        t.check(echo.accepted == before,
                "%s: ... before reaching the echo server" % relay)

        s = ptest.connect(port)
        s.settimeout(ptest.bound(8))
        try:
            closed = s.recv(10) == b""
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
        s.close()
        t.check(closed, "%s: a silent client is closed at header_timeout"
                % relay)
        t.stop_portico(p)

    # Configuration errors.
    port = ptest.free_port()
    bad = t.conf("transport", RELAY="copy", LISTEN="127.0.0.1:%d" % port,
                 TO=echo.address).replace('transport = "xorwire"',
                                          'transport = "nosuch"')
    path = t.path("bad-transport.conf")
    ptest.write_file(path, bad)
    r = ptest.run_portico(["-t", "-c", path])
    t.check(r.returncode == 1 and "nosuch" in r.stderr,
            "-t refuses a transport module that is not loaded",
            r.stderr)


if __name__ == "__main__":
    ptest.Test("transport").run(main)
