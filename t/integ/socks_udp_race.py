#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A datagram and the end of its association in one batch of events
(issue 9): the client sends datagrams to the relay and closes the control
connection at once, so the worker may see the datagrams, the replies
coming back to the remote-facing socket and the control connection's EOF
in the same epoll batch. The association is closed from the EOF while
events for its sockets are still pending in that batch; its memory must
stay valid (and not be handed to the next association) until the batch is
over. Repeated ITER times, bounded in time, with a DATAGRAM module loaded
(whose judgements run in the middle of it) and without; then a fresh
association still relays, no worker died, and (in the sanitizer build)
no report was written. Run it under --enable-sanitizers: that is where a
use after free shows.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

ITER = 150
BURST = 24              # more than one recvmmsg batch (16)


def hammer(t, port, echo, label):
    sent = 0
    done = 0
    errors = []
    deadline = time.monotonic() + ptest.bound(30)
    for i in range(ITER):
        if time.monotonic() > deadline:
            break
        a = S.Udp(port, timeout=ptest.bound(5))
        if not a.ok():
            errors.append("association %d: %s" % (i, a.describe()))
            a.close()
            break
        # one reply on its way first, so the remote-facing socket has
        # events too
        a.send("127.0.0.1", echo.port, b"warm %d" % i)
        a.recv(ptest.bound(2))
        try:
            for k in range(BURST):
                host = "localhost" if k % 4 == 3 else "127.0.0.1"
                a.send(host, echo.port, b"%d.%d" % (i, k) + b"x" * 900)
                sent += 1
            # RST rather than FIN on even rounds: both end it
            if i % 2 == 0:
                a.ctl.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except OSError as e:
            errors.append("round %d: %s" % (i, ptest.err_kind(e)))
        a.close()
        done += 1
    t.check(done == ITER and not errors, "%s: %d associations ended by "
            "the client right behind %d datagrams each" % (label, ITER,
                                                           BURST),
            errors[:5] + ["%d done" % done])
    fresh = S.Udp(port, timeout=ptest.bound(5))
    ok = False
    got = None
    if fresh.ok():
        fresh.send("127.0.0.1", echo.port, b"fresh")
        got = fresh.recv(ptest.bound(3))
        ok = got is not None and got[3] == b"fresh"
    fresh.close()
    t.check(ok, "%s: afterwards a new association relays" % label,
            "%s; reply %r" % (fresh.describe(), got))


def main(t):
    echo = S.udp_echo(t)
    for label, mods in (
            ("plain", ""),
            ("with a DATAGRAM module",
             'modules = ( { name = "udpcheck"; path = "%s/udpcheck.so"; '
             'deny_port = %d; } );' % (ptest.TESTMODDIR,
                                       ptest.free_port()))):
        p, port = S.start(t, workers=1, modules=mods,
                          conf_name="%s.conf" % label.split()[0])
        w0 = p.workers()
        hammer(t, port, echo, label)
        H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("socks_udp_race").run(main)
