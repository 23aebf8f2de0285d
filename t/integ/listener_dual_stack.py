#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
"[::]:port" listeners and IPv4 (master/conf.c conf_dual_stack):

- "[::]:P1" alone is dual-stack: a client on 127.0.0.1 and one on ::1
  both reach its target;
- "[::]:P2" with `ipv6only = true` refuses 127.0.0.1 and serves ::1;
- "[::]:P3" beside "*:P3" is IPv6 only, so both bind: 127.0.0.1 reaches
  the "*:P3" listener's target, ::1 the other's (two echo servers tell
  them apart);
- a SOCKS5 client on 127.0.0.1 of a dual-stack listener gets its
  addresses as IPv4 (ATYP 1, RFC 1928 5 and 7): CONNECT's BND.ADDR and
  UDP ASSOCIATE's relay, through which a datagram makes the round trip;
- udp_advertise with an address of each family on a dual-stack listener:
  an IPv4 client's UDP ASSOCIATE reply names the IPv4 one, an IPv6
  client's the IPv6 one (only the replies are read: nothing is sent to
  those documentation addresses);
- a reload that drops "*:P3" makes "[::]:P3" dual-stack (a new socket):
  127.0.0.1 then reaches the IPv6 listener's target.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import sockstest as S  # noqa: E402

CONF = """
workers = 2;
error_log = "@TMP@/error.log";
log_level = "info";
pid_file = "@TMP@/portico.pid";
shutdown_timeout = 5;
listeners = (
  { address = "[::]:@P1@"; protocol = "tcp"; to = "@A@"; },
  { address = "[::]:@P2@"; protocol = "tcp"; to = "@A@"; ipv6only = true; },
  { address = "[::]:@P3@"; protocol = "tcp"; to = "@A@"; },
@SPLIT4@
  { address = "[::]:@P4@"; protocol = "socks5"; },
  { address = "[::]:@P5@"; protocol = "socks5";
    udp_advertise = [ "203.0.113.7", "2001:db8::7" ]; }
);
"""


def main(t):
    if not ptest.have_ipv6():
        t.skip("dual-stack listeners", "no IPv6 loopback", need="ipv6")
        return
    echo_a = t.echo_server()
    echo_b = t.echo_server()
    p1, p2, p3, p4, p5 = (ptest.free_port() for _ in range(5))
    split4 = '  { address = "*:%d"; protocol = "tcp"; to = "%s"; },' % (
        p3, echo_b.address)
    conf = ptest.fill(CONF, TMP=t.tmp, P1=p1, P2=p2, P3=p3, P4=p4, P5=p5,
                      A=echo_a.address, SPLIT4=split4)
    p = t.portico(conf)

    for host in ("127.0.0.1", "::1"):
        ok, why = ptest.echo_once(p1, host=host)
        t.check(ok, "[::]:P1 (dual-stack) relays a client on %s" % host, why)

    t.check(ptest.try_connect(p2) == "refused",
            "[::]:P2 with ipv6only = true refuses 127.0.0.1",
            ptest.try_connect(p2))
    ok, why = ptest.echo_once(p2, host="::1")
    t.check(ok, "and relays a client on ::1", why)

    def reaches(port, host, server):
        before = server.accepted
        ok, why = ptest.echo_once(port, host=host)
        return ok and server.accepted > before, why or \
            "accepted %d -> %d" % (before, server.accepted)

    ok, why = reaches(p3, "127.0.0.1", echo_b)
    t.check(ok, "beside *:P3, 127.0.0.1:P3 is the IPv4 listener's", why)
    ok, why = reaches(p3, "::1", echo_a)
    t.check(ok, "and [::1]:P3 the IPv6 one's", why)

    # -- SOCKS5 from IPv4 on a dual-stack listener ----------------------
    r, c = S.connect5(p4, "127.0.0.1", echo_a.port)
    t.check(S.ok5(r) and r.atyp == S.ATYP_V4 and r.host == "127.0.0.1",
            "SOCKS5 CONNECT from 127.0.0.1 on [::]:P4: BND.ADDR is IPv4 "
            "127.0.0.1 (ATYP 1)", repr(r))
    c.close()
    ue = S.udp_echo(t)
    u = S.Udp(p4)
    t.at_exit(u.close)
    t.check(u.ok() and u.reply.atyp == S.ATYP_V4 and
            u.reply.host == "127.0.0.1",
            "UDP ASSOCIATE from 127.0.0.1: the relay is IPv4 127.0.0.1",
            u.describe())
    got = None
    if u.ok():
        u.send("127.0.0.1", ue.port, b"dual-stack datagram")
        got = u.recv(ptest.bound(5))
    t.check(got is not None and got[3] == b"dual-stack datagram",
            "a datagram through it comes back from the echo", repr(got))
    u.close()

    # -- udp_advertise, one address per family --------------------------
    u4 = S.Udp(p5)
    t.at_exit(u4.close)
    t.check(u4.ok() and u4.reply.atyp == S.ATYP_V4 and
            u4.reply.host == "203.0.113.7",
            "udp_advertise [IPv4, IPv6]: a client on 127.0.0.1 is told the "
            "IPv4 address 203.0.113.7", u4.describe())
    u4.close()
    s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s6.bind(("::1", 0))
    u6 = S.Udp(p5, sock=s6, ctl=S.Client.to(p5, host="::1"))
    t.at_exit(u6.close)
    t.check(u6.ok() and u6.reply.atyp == S.ATYP_V6 and
            u6.reply.host == "2001:db8::7",
            "and a client on ::1 the IPv6 address 2001:db8::7",
            u6.describe())
    u6.close()

    # -- reload: without *:P3, [::]:P3 takes IPv4 too -------------------
    p.set_conf(ptest.fill(CONF, TMP=t.tmp, P1=p1, P2=p2, P3=p3, P4=p4,
                          P5=p5, A=echo_a.address, SPLIT4=""))
    p.hup()
    t.check(bool(p.wait_log(r"reloaded ")), "the reload went through",
            lambda: ptest.tail(p.log()))
    res = ptest.wait_for(lambda: reaches(p3, "127.0.0.1", echo_a)[0],
                         ptest.bound(5), interval=0.1)
    t.check(res, "after it, 127.0.0.1:P3 reaches the [::]:P3 listener's "
            "target", lambda: reaches(p3, "127.0.0.1", echo_a)[1])
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("listener_dual_stack").run(main)
