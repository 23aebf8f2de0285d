#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A transaction that fails while bytes are still queued for a peer that
does not read resets that peer's socket (SO_LINGER 0) rather than leaving
it to the kernel as an orphan in FIN-WAIT-1, which would hold the queued
memory for minutes after portico closed it, as many times as a client
that never reads cares to open connections (worker/conn.c, conn_abort):

- a CONNECT tunnel from an origin that sends without end to a client that
  never reads: idle_timeout ends it; no socket of portico's is left in
  FIN-WAIT-1 toward that client, and the client reads a reset;
- the same through a SOCKS5 tunnel;
- an HTTP GET of a 1 GiB body the client never reads (the response is cut
  at idle_timeout);
- and where nothing is queued, the end is still a FIN: an idle tunnel
  closed at idle_timeout reads as EOF, not as a reset.

FIN-WAIT-1 is read from /proc/net/tcp (state 04) for the one connection:
local port portico's listener, remote port the client's.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

IDLE = 1                        # limits.idle_timeout, seconds
ESTAB = "01"


class Flood(ptest.SourceServer):
    """Sends 1 GiB on each connection, after a response head announcing
    it when <http>; a reset from portico ends it quietly (that is what
    this scenario expects)."""

    def __init__(self, http=False):
        self.http = http
        super().__init__(1 << 30)

    def handle(self, c):
        try:
            if self.http:
                c.recv(65536)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                          % self.nbytes)
            super().handle(c)
        except OSError:
            pass


def state_toward(listen_port, client):
    """The state of portico's socket toward <client> (hex, as
    /proc/net/tcp has it), or None once it is gone."""
    cport = client.getsockname()[1]
    for lp, rp, st, _, _ in ptest._proc_net_tcp():
        if lp == listen_port and rp == cport:
            return st
    return None


def ending(c, timeout):
    """'reset', 'eof' or 'timeout': how the stream to <c> ends, read to
    its end."""
    c.settimeout(timeout)
    try:
        while c.recv(1 << 20):
            pass
        return "eof"
    except ConnectionResetError:
        return "reset"
    except socket.timeout:
        return "timeout"


def stuck(t, p, label, listen_port, c):
    """<c> holds a tunnel or response it never reads: wait for portico to
    give up on it (its socket leaves ESTABLISHED), then check how."""
    ended = ptest.wait_for(lambda: state_toward(listen_port, c) != ESTAB,
                           IDLE + ptest.bound(10))
    time.sleep(0.2)
    st = state_toward(listen_port, c)
    how = ending(c, ptest.bound(5))
    t.check(ended and st is None,
            "%s: closed at idle_timeout with its bytes unsent, portico "
            "leaves no orphan socket (FIN-WAIT-1) behind" % label,
            lambda: ["state of portico's socket: %s" % st] +
            ptest.tail(p.log(), 10))
    t.check(how == "reset", "%s: the client reads a reset, not a FIN "
            "behind data it will never take" % label, "ended: %s" % how)
    c.close()


def main(t):
    flood = Flood()
    t.servers.append(flood)
    flood_http = Flood(http=True)
    t.servers.append(flood_http)
    echo = ptest.EchoServer()
    t.servers.append(echo)

    # -- HTTP: a CONNECT tunnel and a response body ---------------------
    p, port = H.start(t, limits={"idle_timeout": IDLE})
    w0 = p.workers()
    c = ptest.connect(port)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n"
              % flood.port)
    stuck(t, p, "CONNECT tunnel from an endless origin", port, c)

    c = ptest.connect(port)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.sendall(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n"
              % flood_http.port)
    stuck(t, p, "GET of a 1 GiB body", port, c)

    # Nothing queued: an idle tunnel ends with a FIN.
    c = ptest.connect(port)
    c.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n"
              % echo.port)
    r = H.read_response(H.Conn(c), method="CONNECT")
    how = ending(c, IDLE + ptest.bound(10)) if r.status == 200 else None
    t.check(r.status == 200 and how == "eof",
            "an idle tunnel with nothing queued still ends with a FIN at "
            "idle_timeout (EOF, not a reset)",
            "status %s, ended: %s" % (r.status, how))
    c.close()
    H.finish(t, p, w0)

    # -- SOCKS5 ---------------------------------------------------------
    p, port = S.start(t, limits={"idle_timeout": IDLE})
    w0 = p.workers()
    rep, c = S.connect5(port, "127.0.0.1", flood.port)
    t.check(S.ok5(rep), "SOCKS5 CONNECT to the endless origin",
            lambda: str(rep))
    if S.ok5(rep):
        stuck(t, p, "SOCKS5 tunnel from an endless origin", port, c.sock)
    t.check(p.workers() == w0, "SOCKS: the worker pids are unchanged")
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("abort_orphans").run(main)
