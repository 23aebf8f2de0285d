#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A transport whose socket carries the connection's bytes as they are (as a
TLS socket with kTLS does) says so through pt_transport.plain (ABI 1.3),
and a tunnel relayed with relay.method "splice" then moves them with
splice() on that socket, past the transport's read() and write(). The
test module plainwire (t/modules/plainwire.c) does a small handshake
("PLN1", "OK"), then its read() and write() are counted recv() and send();
its per-connection line tells which bytes went through them.

Through a tcp listener to an echo, 4 MiB are sent, half-closed, and read
back byte-exact, on one listener per answer of plain():

- splice, "rx,tx": no payload byte through read() or write();
- splice, "rx": the upload spliced, the download (towards the client)
  through write();
- splice, "tx": the upload through read(), the download spliced;
- splice, "none" (and so any transport before ABI 1.3): everything
  through read() and write(), as before;
- copy, "rx,tx": everything through read() and write(), and the core
  never asks plain(): copying does not depend on it.

A tunnel open at a fast stop: the transport's free() sees pt_conn_cut()
true (ABI 1.5) and the client a reset.

A real kTLS socket cannot be had on a kernel without the tls ULP (the
development machine's), so this is the ABI's proof; the tls module's own
answer (BIO_get_ktls_send/recv) is not exercised here.
"""
import hashlib
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

SIZE = 4 * ptest.MiB
MODES = ("rx,tx", "rx", "tx", "none")

CONF = """
workers = 1;
error_log = "@TMP@/error-@RELAY@.log";
log_level = "info";
pid_file = "@TMP@/portico-@RELAY@.pid";
shutdown_timeout = 5;
relay = { method = "@RELAY@"; };
listeners = (
@LISTENERS@
);
modules = ( { name = "plainwire"; path = "@MODDIR@/plainwire.so"; } );
"""

LISTENER = """  { address = "127.0.0.1:%d"; protocol = "tcp"; to = "%s";
    transport = "plainwire"; plainwire = { plain = "%s"; }; }"""


def sha(b):
    return hashlib.sha256(b).hexdigest()


def round_trip(port, payload):
    """Handshake, <payload> out, half-close, everything back until EOF.
    Returns (data, why)."""
    why = []
    got = bytearray()
    try:
        conn = H.Conn.to(port, timeout=ptest.bound(20))
    except OSError as e:
        return b"", "connect: %s" % e
    try:
        conn.send(b"PLN1")
        ok = conn.read_exact(2)
        if ok != b"OK":
            return b"", "handshake answered %r" % ok
    except Exception as e:
        conn.close()
        return b"", "handshake: %s: %s" % (type(e).__name__, e)

    def reader():
        try:
            got.extend(conn.read_until_eof(limit=2 * len(payload)))
        except Exception as e:
            why.append("%s: %s" % (type(e).__name__, e))
    th = threading.Thread(target=reader, daemon=True)
    th.start()
    try:
        conn.sock.sendall(payload)
        conn.sock.shutdown(socket.SHUT_WR)
    except OSError as e:
        why.append("send: %s" % e)
    th.join(ptest.bound(30))
    if th.is_alive():
        why.append("still reading after %ds" % ptest.bound(30))
    conn.close()
    return bytes(got), "; ".join(why)


def counts(p, before):
    """The plainwire lines after the first <before>: [(read, written,
    asked)]."""
    out = []
    for ln in p.log_lines(r"plainwire: read=\d+"):
        m = re.search(r"read=(\d+) written=(\d+) asked=(\d+)", ln)
        out.append(tuple(int(x) for x in m.groups()))
    return out[before:]


def one(t, p, relay, mode, port):
    payload = os.urandom(SIZE)
    before = len(counts(p, 0))
    data, why = round_trip(port, payload)
    t.check(not why and sha(data) == sha(payload),
            "%s, plain %s: 4 MiB come back byte-exact, then EOF"
            % (relay, mode),
            lambda: ["got %d bytes: %s" % (len(data), why)] +
            ptest.tail(p.log(), 20))
    got = ptest.wait_for(lambda: counts(p, before), ptest.bound(5)) or []
    if not got:
        t.check(False, "%s, plain %s: the transport logged its counts"
                % (relay, mode), lambda: ptest.tail(p.log(), 20))
        return
    rd, wr, asked = got[0]
    if relay == "copy":
        t.check(rd == SIZE and wr == SIZE and asked == 0,
                "copy: every byte through read() and write(); plain() "
                "never asked", "read=%d written=%d asked=%d" % (rd, wr,
                                                                 asked))
        return
    want_rd = 0 if "rx" in mode else SIZE
    want_wr = 0 if "tx" in mode else SIZE
    t.check(rd == want_rd and wr == want_wr and asked > 0,
            "splice, plain %s: %s bytes through read(), %s through write()"
            % (mode, "no" if want_rd == 0 else "all",
               "none" if want_wr == 0 else "all"),
            "read=%d written=%d asked=%d (payload %d)" % (rd, wr, asked,
                                                          SIZE))


def main(t):
    echo = t.echo_server()
    for relay in ("splice", "copy"):
        modes = MODES if relay == "splice" else ("rx,tx",)
        ports = [ptest.free_port() for _ in modes]
        lst = ",\n".join(LISTENER % (pt, echo.address, m)
                         for pt, m in zip(ports, modes))
        conf = ptest.fill(CONF, TMP=t.tmp, MODDIR=ptest.TESTMODDIR,
                          RELAY=relay, LISTENERS=lst)
        p = t.portico(conf, conf_name="plain-%s.conf" % relay)
        for pt, m in zip(ports, modes):
            one(t, p, relay, m, pt)
        if relay == "copy":
            cut(t, p, ports[0])
        t.stop_portico(p)


def cut(t, p, port):
    """A tunnel open at a fast stop: the transport is told it is cut
    (pt_conn_cut, ABI 1.5), so it writes no close of its own, and the
    client sees a reset."""
    before = len(p.log_lines(r"plainwire: .* cut=1"))
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    t.at_exit(conn.close)
    conn.send(b"PLN1")
    ok = conn.read_exact(2) == b"OK"
    conn.send(b"held")
    ok = ok and conn.read_exact(4) == b"held"
    t.check(ok, "a tunnel through plainwire relays before the fast stop")
    p.term()
    how = ptest.Held.ending(conn, ptest.bound(5))
    t.check(how == "reset", "at the fast stop its client sees a reset", how)
    t.check(ptest.wait_for(lambda: len(p.log_lines(
        r"plainwire: .* cut=1")) > before, ptest.bound(5)),
            "and the transport's free() saw pt_conn_cut() true",
            lambda: p.log_lines(r"plainwire: "))
    p.wait_exit(ptest.bound(10))


if __name__ == "__main__":
    ptest.Test("transport_plain").run(main)
