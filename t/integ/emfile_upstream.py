#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
An accepted connection that finds no descriptor for its upstream socket
waits for one; it is not answered 502.

One worker runs with RLIMIT_NOFILE = 64 (24 connection places). SOCKS5 UDP
associations take descriptors beyond their places: a control connection
and a relay socket each, and a socket towards IPv4 destinations once a
datagram goes out. Associations are opened, and datagrams sent, until the
worker holds 63 descriptors: one is free. A GET to the HTTP listener is
then accepted with that last descriptor, and its upstream socket() fails
with EMFILE.
- The first GET is still waiting 0.5 s later (not answered), and is
  answered 502 once connect_timeout (2 s) has passed since it began to
  wait; the error log says it waited.
- The second (its descriptor free again) is still waiting 0.5 s later;
  once one association closes it is answered 200 with the origin's body.
- A fresh GET is served as usual, and the exit totals count one
  upstream_failed (the first GET's end), not one per try.
"""
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

NOFILE = 64
FIT = 24                # (64 - 64 / 4) / 2: worker_max_connections()
CONNECT_S = 2


def fds(wpid, want=None):
    """The worker's descriptor count, once it has settled (at <want> when
    given)."""
    last = [ptest.fd_count(wpid)]

    def settled():
        n = ptest.fd_count(wpid)
        done = n == want if want is not None else n == last[0]
        last[0] = n
        return done
    ptest.wait_for(settled, ptest.bound(2), interval=0.05)
    return last[0]


def main(t):
    o = H.origin(t)
    ue = S.udp_echo(t)
    sport = ptest.free_port()
    hport = ptest.free_port()
    conf = S.socks_conf(t, sport, limits=dict(connect_timeout=CONNECT_S),
                        more_listeners=['  { address = "127.0.0.1:%d"; '
                                        'protocol = "http"; }' % hport])
    p = t.portico(conf, nofile=NOFILE)
    wpid = p.workers().get(0)
    t.check(wpid is not None, "one worker runs", str(p.all_children()))
    url = o.url + "/len?n=1024"

    def served():
        r = H.get(hport, url, timeout=ptest.bound(10))
        return isinstance(r, H.Resp) and r.status == 200 and \
            r.body_len == 1024, H.describe(r)
    # No GET before: its upstream connection, kept for reuse, would serve
    # the GET below without a new socket (or be shed to make one).

    # Associations (2 descriptors each) while at least 3 stay free, and
    # places stay for the GETs; then datagrams (1 each, the association's
    # IPv4 socket) until exactly one descriptor is free.
    us, sent = [], 0
    n = fds(wpid)
    while n <= NOFILE - 4 and len(us) < FIT - 4:
        u = S.Udp(sport, timeout=ptest.bound(5))
        t.at_exit(u.close)
        if not u.ok():
            break
        us.append(u)
        n = fds(wpid, n + 2)
    for u in us:
        if n >= NOFILE - 1:
            break
        u.send("127.0.0.1", ue.port, b"x")
        sent += 1
        n = fds(wpid, n + 1)
    t.diag("%d associations, %d with an IPv4 socket: the worker holds %d "
           "descriptors of %d" % (len(us), sent, n, NOFILE))
    t.check(n == NOFILE - 1, "set-up: the worker has exactly one "
            "descriptor free", "%d held" % n)

    def waiting(what):
        """A GET on a fresh connection, checked to be unanswered 0.5 s
        later; returns (its Conn, when it was sent)."""
        c = H.Conn.to(hport, timeout=ptest.bound(5))
        t.at_exit(c.close)
        c.send(H.request_bytes("GET", url))
        sent = time.monotonic()
        c.settimeout(0.5)
        try:
            early = c.sock.recv(65536)
        except socket.timeout:
            early = None
        t.check(early is None, "%s: with no descriptor for its upstream "
                "socket, the accepted GET waits (no answer in 0.5 s)"
                % what, repr(early)[:120])
        t.check(ptest.fd_count(wpid) == NOFILE, "%s: the GET holds the "
                "last descriptor meanwhile" % what,
                str(ptest.fd_count(wpid)))
        c.settimeout(ptest.bound(CONNECT_S + 5))
        return c, sent

    def response(c):
        try:
            return H.read_response(c)
        except Exception as e:
            return "%s: %s" % (type(e).__name__, e)

    c, sent = waiting("first GET")
    r = response(c)
    took = time.monotonic() - sent
    t.check(isinstance(r, H.Resp) and r.status == 502 and
            CONNECT_S - 0.5 <= took <= ptest.bound(CONNECT_S + 3),
            "first GET: answered 502 once connect_timeout (%d s) has "
            "passed" % CONNECT_S, lambda: ["after %.1f s" % took] +
            H.describe(r))
    t.check(p.log_lines(r"no descriptor for the upstream socket .*waiting"),
            "the error log says the connection waited for a descriptor",
            lambda: ptest.tail(p.log(), 10))
    c.close()
    n = fds(wpid, NOFILE - 1)
    t.check(n == NOFILE - 1, "the first GET's descriptor is free again",
            "%d held" % n)

    c, sent = waiting("second GET")
    us.pop().close()
    r = response(c)
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body_len == 1024, "second GET: an association closes, the "
            "GET is answered 200 with the origin's 1024 bytes",
            H.describe(r))
    c.close()
    for u in us:
        u.close()
    ok, why = served()
    t.check(ok, "a fresh GET is served after", why)
    t.stop_portico(p)
    tot = p.log_lines(r"totals: ")
    m = re.search(r"upstream_failed=(\d+)", tot[-1]) if tot else None
    t.check(m is not None and int(m.group(1)) == 1,
            "the first GET's end is one upstream failure, its tries are "
            "none (upstream_failed=1 in the exit totals)", str(tot[-1:]))


if __name__ == "__main__":
    ptest.Test("emfile_upstream").run(main)
