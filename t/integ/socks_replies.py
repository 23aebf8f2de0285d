#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
SOCKS replies byte by byte, with a raw client:

- CONNECT to the longest DNS name (253 characters) works for SOCKS5 and
  SOCKS4a; a 255-byte name fails cleanly (0x04 or 0x01);
- a CONNECT that succeeds answers VER 5, REP 0, RSV 0 and the real bound
  address of the proxy's upstream socket: BND.ADDR/BND.PORT equal the peer
  address the echo server sees (for an IPv4 and a domain destination);
- failures, each followed by the proxy closing the connection: closed port
  0x05, unknown name 0x04, connect timeout 0x06, network unreachable 0x03
  (TCP to a multicast address, refused by the kernel), unknown command
  0x07,
  BIND 0x07, unknown ATYP 0x08; SOCKS4: closed port, BIND and an unknown
  4a name answer 0x5B; a refusal to a client with 100 KB of data behind
  its request ends with a FIN, not a reset; a malformed RFC 1929 message
  pipelined behind the greeting gets the method choice and 01 01;
- a first byte that is neither 4 nor 5 (and a wrong version in the
  request) closes the connection at once without a byte; a client that
  stalls or trickles (empty, mid-greeting, mid-request, after the method
  selection, SOCKS4 without its NUL, one byte every 0.3 s) is closed at
  header_timeout (2 s);
- method selection: GSSAPI only gets 0xFF; 0x00+0x02 gets 0x00 without an
  AUTH module; 0x02 alone gets 0x02 and any credentials pass; with hookrec
  (which hooks AUTH) only 0x02 is offered: 0x00 alone gets 0xFF and a
  close, 0x00+0x02 gets 0x02; deny_phase AUTH answers 01 01 and closes;
  deny_phase ACCESS and DIAL answer 0x02 and the target is never dialled
  (ACCESS) or reached (DIAL).
"""
import errno
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

HEADER_TIMEOUT = 2
CONNECT_TIMEOUT = 2


def raw(port, greet, rest=b"", methods_reply=True, timeout=None):
    """Sends <greet> (then <rest> after the method selection). Returns
    (method or None, Reply/Reply4/error or None, trailing bytes, how the
    connection ended, seconds from the last send to the end)."""
    c = S.Client.to(port, timeout=timeout or ptest.bound(10))
    method = reply = None
    try:
        c.send(greet)
        if methods_reply:
            method = c.greet(send=False)
        if rest:
            c.send(rest)
            if rest[0] == 5:
                reply = c.read_reply()
            elif rest[0] == 4:
                reply = S.Reply4(c.read_exact(8))
    except Exception as e:
        reply = "%s: %s" % (type(e).__name__, e)
    try:
        data, how, dt = S.ending(c, ptest.bound(5))
    finally:
        c.close()
    return method, reply, data, how, dt


def fail_check(t, port, label, want_rep, host, dport, cmd=1, req=None):
    req = req or (b"\x05" + bytes([cmd, 0]) + S.addr_bytes(host, dport))
    m, r, rest, how, dt = raw(port, b"\x05\x01\x00", req)
    t.check(m == 0 and isinstance(r, S.Reply) and r.ver == 5 and
            r.rep == want_rep and rest == b"" and S.closes(how),
            "%s: reply %s, then the connection is closed" % (
                label, S.rep_name(want_rep)),
            lambda: ["method %r, reply %r, then %r and %s after %.2f s" % (
                m, r, rest[:40], how, dt)])
    return r


def four_fail(t, port, label, msg):
    c = S.Client.to(port, timeout=ptest.bound(10))
    try:
        c.send(msg)
        r = S.Reply4(c.read_exact(8))
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    rest, how, dt = S.ending(c, ptest.bound(5))
    c.close()
    t.check(isinstance(r, S.Reply4) and r.vn == 0 and r.cd == 0x5B and
            rest == b"" and S.closes(how),
            "SOCKS4 %s: VN 0 CD 0x5B, then closed" % label,
            lambda: ["reply %r, then %r and %s" % (r, rest[:40], how)])


def unreachable():
    """An address whose connect fails here at once with ENETUNREACH, no
    packet sent (TCP to a multicast address is refused by the kernel), or
    None."""
    for host in ("224.0.0.1", "255.255.255.255"):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            rc = s.connect_ex((host, 80))
        finally:
            s.close()
        if rc == errno.ENETUNREACH:
            return host
    return None


def stall_cases(port):
    """Runs every stalled/trickling client at once; returns {label:
    (bytes read, how, seconds from connect to the end)}."""
    name = b"n" * 200 + b".test"
    trickle = b"\x05\x01\x00" + b"\x05\x01\x00\x03" + bytes([len(name)]) + \
        name + b"\x00\x50"
    cases = {
        "nothing sent": [b""],
        "half a greeting (05 02 00)": [b"\x05\x02\x00"],
        "a greeting and half a request": [b"\x05\x01\x00",
                                          b"\x05\x01\x00\x01\x7f\x00"],
        "0x02 chosen, no credentials": [b"\x05\x01\x02"],
        "half an RFC 1929 message": [b"\x05\x01\x02", b"\x01\x05us"],
        "SOCKS4 without the USERID's NUL": [
            b"\x04\x01\x00\x50\x7f\x00\x00\x01user"],
        "SOCKS4a without the host's NUL": [
            b"\x04\x01\x00\x50\x00\x00\x00\x01user\x00local"],
        "a byte every 0.3 s": "trickle",
    }
    out = {}
    lock = threading.Lock()

    def run(label, pieces):
        t0 = time.monotonic()
        try:
            c = S.Client.to(port, timeout=ptest.bound(10))
        except Exception as e:
            with lock:
                out[label] = (b"", "connect " + ptest.err_kind(e), 0.0)
            return
        got = bytearray()
        how = "timeout"
        try:
            if pieces == "trickle":
                c.settimeout(0.3)
                end = t0 + HEADER_TIMEOUT + ptest.bound(4)
                for b in trickle:
                    if time.monotonic() > end:
                        break
                    try:
                        c.send(bytes([b]))
                    except OSError as e:
                        how = "send " + ptest.err_kind(e)
                        break
                    try:
                        d = c.sock.recv(4096)
                        if not d:
                            how = "eof"
                            break
                        got += d
                    except socket.timeout:
                        pass
                    except ConnectionResetError:
                        how = "reset"
                        break
            else:
                for p in pieces:
                    if p:
                        c.send(p)
                    time.sleep(0.05)
            if how == "timeout":
                data, how = H.outcome(c, HEADER_TIMEOUT + ptest.bound(4))
                got += data
        except Exception as e:
            how = "error " + ptest.err_kind(e)
        finally:
            c.close()
        with lock:
            out[label] = (bytes(got), how, time.monotonic() - t0)

    ths = [threading.Thread(target=run, args=(k, v), daemon=True)
           for k, v in cases.items()]
    for th in ths:
        th.start()
    for th in ths:
        th.join(HEADER_TIMEOUT + ptest.bound(10))
    return out


def plain(t, dns):
    echo = S.peer_echo(t)
    echo6 = S.peer_echo(t, "::1") if ptest.have_ipv6() else None
    p, port = S.start(t, workers=1,
                      limits={"header_timeout": HEADER_TIMEOUT,
                              "connect_timeout": CONNECT_TIMEOUT},
                      resolver={"servers": dns.address, "timeout": 1})
    w0 = p.workers()

    # success: the reply names the upstream socket
    dests = [("IPv4 destination", "127.0.0.1", echo, S.ATYP_V4),
             ("domain destination", "echo.test", echo, S.ATYP_V4)]
    if echo6:
        dests.append(("IPv6 destination", "::1", echo6, S.ATYP_V6))
    else:
        t.skip("CONNECT to [::1]: BND is the upstream socket", "no IPv6")
    for label, host, srv, atyp in dests:
        before = len(srv.peers)
        r, c = S.connect5(port, host, srv.port)
        ok, why = S.echo_check(c, b"hello " + host.encode()) if S.ok5(r) \
            else (False, "no tunnel")
        c.close()
        ptest.wait_for(lambda: len(srv.peers) > before, ptest.bound(3))
        peer = srv.peers[before] if len(srv.peers) > before else None
        t.check(S.ok5(r) and r.rsv == 0 and ok,
                "CONNECT to %s: VER 5 REP 0 RSV 0, then the tunnel echoes"
                % label, lambda: ["reply %r, %s" % (r, why)] +
                H.log_tail(p)())
        t.check(S.ok5(r) and r.atyp == atyp and peer is not None and
                (r.host, r.port) == peer and r.port != 0,
                "CONNECT to %s: BND.ADDR/BND.PORT are the upstream "
                "socket's address (the peer the echo server sees)" % label,
                lambda: "reply %r, the echo server saw %r" % (r, peer))

    # the longest names
    r, c = S.connect5(port, LONG, echo.port)
    ok, why = S.echo_check(c, b"long") if S.ok5(r) else (False, r)
    c.close()
    t.check(ok, "CONNECT to a 253-character name works", why)
    r, c = S.connect4(port, "0.0.0.1", echo.port, name=LONG)
    ok, why = S.echo_check(c, b"long4a") if S.ok4(r) else (False, r)
    c.close()
    t.check(ok, "SOCKS4a CONNECT to a 253-character name works", why)
    m, r, rest, how, dt = raw(port, b"\x05\x01\x00", b"\x05\x01\x00" +
                              S.addr_bytes("x" * 255, echo.port))
    t.check(isinstance(r, S.Reply) and r.rep in (0x01, 0x04) and
            S.closes(how), "CONNECT to a 255-byte name (no DNS name can "
            "be that long): 0x04 or 0x01, then closed",
            "reply %r, then %s" % (r, how))

    # failures
    dead = ptest.free_port()
    fail_check(t, port, "CONNECT to a closed port", 0x05, "127.0.0.1", dead)
    # A client that sent data behind its request (100 KB, more than the
    # proxy reads before the reply): the refusal, then a FIN, not a reset
    # (the close lingers), so no stack can drop the reply.
    r, c = S.connect5(port, "127.0.0.1", dead, early=b"e" * 100000)
    data, how, _ = S.ending(c, ptest.bound(5))
    c.close()
    t.check(isinstance(r, S.Reply) and r.rep == 0x05 and how == "eof",
            "CONNECT to a closed port with 100 KB of data behind the "
            "request: 0x05, then a FIN, not a reset",
            "reply %r, then %s" % (r, how))
    fail_check(t, port, "CONNECT to an unknown name (NXDOMAIN)", 0x04,
               "nx.test", echo.port)
    t0 = time.monotonic()
    m, r, rest, how, dt = raw(port, b"\x05\x01\x00", b"\x05\x01\x00" +
                              S.addr_bytes("silent.test", echo.port))
    dt = time.monotonic() - t0
    t.check(isinstance(r, S.Reply) and r.rep in (0x01, 0x04, 0x06) and
            S.closes(how) and dt < 1 + ptest.bound(3),
            "CONNECT to a name the DNS server never answers (resolver "
            "timeout 1 s): a failure reply (0x01, 0x04 or 0x06) within "
            "%.0f s, then closed" % (1 + ptest.bound(3)),
            "reply %r, then %s after %.1f s" % (r, how, dt))
    hole, full = H.blackhole(t)
    if full:
        t0 = time.monotonic()
        r = fail_check(t, port, "CONNECT to a port that never answers "
                       "(connect_timeout %d)" % CONNECT_TIMEOUT, 0x06,
                       "127.0.0.1", hole)
        dt = time.monotonic() - t0
        t.check(dt < CONNECT_TIMEOUT + ptest.bound(3),
                "the connect timeout reply came within %.0f s"
                % (CONNECT_TIMEOUT + ptest.bound(3)), "after %.1f s" % dt)
    else:
        t.skip("CONNECT timeout answers 0x06", "cannot make a black hole")
        t.skip("the connect timeout reply came in time", "no black hole")
    nowhere = unreachable()
    if nowhere:
        fail_check(t, port, "CONNECT to %s (the kernel says network "
                   "unreachable)" % nowhere, 0x03, nowhere, 80)
    else:
        t.skip("network unreachable answers 0x03",
               "no address gives ENETUNREACH here")
    before = echo.accepted
    fail_check(t, port, "unknown command 0x09", 0x07, "127.0.0.1",
               echo.port, cmd=9)
    fail_check(t, port, "BIND (not implemented)", 0x07, "127.0.0.1",
               echo.port, cmd=2)
    fail_check(t, port, "unknown ATYP 0x05", 0x08, None, None,
               req=b"\x05\x01\x00\x05\x7f\x00\x00\x01" +
               struct.pack("!H", echo.port))
    time.sleep(0.2)
    t.check(echo.accepted == before, "command and ATYP errors dial "
            "nothing", "the echo server accepted %d" % (
                echo.accepted - before))

    # SOCKS4 failures
    four_fail(t, port, "CONNECT to a closed port",
              struct.pack("!BBH", 4, 1, dead) + b"\x7f\x00\x00\x01u\x00")
    four_fail(t, port, "BIND (CD 2)",
              struct.pack("!BBH", 4, 2, echo.port) +
              b"\x7f\x00\x00\x01u\x00")
    four_fail(t, port, "4a with an unknown name",
              struct.pack("!BBH", 4, 1, echo.port) +
              b"\x00\x00\x00\x01u\x00nx.test\x00")

    # not SOCKS at all: closed at once, nothing said
    for label, first in (("first byte 0x06", b"\x06\x01\x00"),
                         ("an HTTP request", b"GET / HTTP/1.1\r\n"
                          b"Host: x\r\n\r\n"),
                         ("first byte 0x00", b"\x00\x00\x00\x00")):
        m, r, rest, how, dt = raw(port, first, methods_reply=False)
        t.check(rest == b"" and S.closes(how) and dt < 1.5,
                "%s: closed at once (< 1.5 s), no reply" % label,
                "read %r, then %s after %.2f s" % (rest[:40], how, dt))
    m, r, rest, how, dt = raw(port, b"\x05\x01\x00",
                              b"\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50")
    t.check(m == 0 and S.closes(how) and not isinstance(r, S.Reply) and
            rest == b"" and dt < 1.5,
            "a request with version 4 after a SOCKS5 greeting: closed at "
            "once, no reply", "method %r, reply %r, then %r, %s after %.2f s"
            % (m, r, rest[:40], how, dt))

    # method selection without an AUTH module
    m, r, rest, how, dt = raw(port, b"\x05\x01\x01")
    t.check(m == 0xFF and rest == b"" and S.closes(how),
            "a greeting with only GSSAPI (0x01): 05 FF, then closed",
            "method %r, then %r, %s" % (m, rest[:20], how))
    c = S.Client.to(port)
    try:
        m = c.greet([S.M_NONE, S.M_USERPASS])
    except Exception as e:
        m = repr(e)
    c.close()
    t.check(m == 0, "no AUTH module: 0x00 and 0x02 offered, 0x00 chosen",
            "chose %r" % (m,))
    c = S.Client.to(port)
    try:
        m = c.greet([S.M_USERPASS])
        st = c.userpass("nobody", "anything")
        r = c.request("127.0.0.1", echo.port)
        ok, why = S.echo_check(c, b"authed") if S.ok5(r) else (False, r)
    except Exception as e:
        st, ok, why = None, False, repr(e)
    c.close()
    t.check(m == 2 and st == (1, 0) and ok,
            "no AUTH module: 0x02 alone is chosen, any credentials pass "
            "(01 00), the CONNECT works", "method %r, status %r, %s" % (
                m, st, why))

    # stalls and trickles
    out = stall_cases(port)
    for label in sorted(out):
        got, how, dt = out[label]
        t.check(S.closes(how) and 1.0 <= dt <= HEADER_TIMEOUT +
                ptest.bound(3) and got in (b"", b"\x05\x00", b"\x05\x02"),
                "%s: closed at header_timeout (%d s)" % (label,
                                                         HEADER_TIMEOUT),
                "read %r, then %s after %.2f s" % (got[:40], how, dt))
    ok, why = True, None
    r, c = S.connect5(port, "127.0.0.1", echo.port)
    ok, why = S.echo_check(c, b"still") if S.ok5(r) else (False, repr(r))
    c.close()
    t.check(ok, "the proxy still serves afterwards", why)
    H.finish(t, p, w0)


def with_hookrec(t):
    echo = S.peer_echo(t)
    mods, rec = S.hookrec(t, "auth-hooked")
    p, port = S.start(t, conf_name="hooked.conf", modules=mods,
                      limits={"header_timeout": HEADER_TIMEOUT})
    m, r, rest, how, dt = raw(port, b"\x05\x01\x00")
    t.check(m == 0xFF and rest == b"" and S.closes(how),
            "an AUTH hook: a client offering only 0x00 gets 05 FF, then "
            "closed", "method %r, then %r, %s" % (m, rest[:20], how))
    c = S.Client.to(port)
    try:
        m = c.greet([S.M_NONE, S.M_USERPASS])
        st = c.userpass("alice", "secret")
        r = c.request("127.0.0.1", echo.port)
        ok, why = S.echo_check(c, b"hooked") if S.ok5(r) else (False, r)
    except Exception as e:
        st, ok, why = None, False, repr(e)
    c.close()
    t.check(m == 2 and st == (1, 0) and ok,
            "an AUTH hook: 0x00 and 0x02 offered, 0x02 chosen, 01 00, "
            "the CONNECT works", "method %r, status %r, %s" % (m, st, why))
    # A malformed RFC 1929 message (version 5), sent in one write with
    # the greeting: the method choice, a failure status, the close.
    c = S.Client.to(port)
    c.send(b"\x05\x01\x02" + b"\x05\x05alice\x06secret")
    data, how, dt = S.ending(c, ptest.bound(5))
    c.close()
    t.check(data == b"\x05\x02\x01\x01" and how == "eof",
            "greeting and a malformed RFC 1929 message in one write: 05 02, "
            "01 01, then a FIN", "got %r, %s" % (data, how))
    t.stop_portico(p)

    mods, rec = S.hookrec(t, "deny-auth", deny="AUTH")
    p, port = S.start(t, conf_name="deny-auth.conf", modules=mods)
    before = echo.accepted
    c = S.Client.to(port)
    try:
        m = c.greet([S.M_USERPASS])
        st = c.userpass("alice", "wrong")
    except Exception as e:
        m, st = None, repr(e)
    rest, how, dt = S.ending(c, ptest.bound(5))
    c.close()
    t.check(m == 2 and st == (1, 1) and rest == b"" and S.closes(how),
            "deny_phase AUTH: RFC 1929 answers 01 01, then the connection "
            "is closed", "method %r, status %r, then %r, %s" % (
                m, st, rest[:20], how))
    t.stop_portico(p)

    for phase in ("ACCESS", "DIAL"):
        mods, rec = S.hookrec(t, "deny-" + phase.lower(), deny=phase)
        p, port = S.start(t, conf_name="deny-%s.conf" % phase.lower(),
                          modules=mods)
        before = echo.accepted
        r, c = S.connect5(port, "127.0.0.1", echo.port, auth=("a", "b"))
        rest, how, dt = S.ending(c, ptest.bound(5))
        c.close()
        t.check(isinstance(r, S.Reply) and r.rep == 0x02 and rest == b""
                and S.closes(how), "deny_phase %s: reply 0x02 (not allowed),"
                " then closed" % phase, "reply %r, then %r, %s" % (
                    r, rest[:20], how))
        time.sleep(0.2)
        t.check(echo.accepted == before, "deny_phase %s: the target is "
                "never dialled" % phase, "the echo server accepted %d" % (
                    echo.accepted - before))
        r, c = S.connect4(port, "127.0.0.1", echo.port)
        c.close()
        t.check(isinstance(r, S.Reply4) and r.cd == 0x5B,
                "deny_phase %s: SOCKS4 gets CD 0x5B" % phase, repr(r))
        t.stop_portico(p)


# the longest name DNS allows: 253 characters, labels of at most 63
LONG = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 56, "test"])


def main(t):
    assert len(LONG) == 253
    dns = H.dns_server(t, {"echo.test": {"A": ["127.0.0.1"]},
                           LONG: {"A": ["127.0.0.1"]},
                           "silent.test": "drop"})
    plain(t, dns)
    with_hookrec(t)


if __name__ == "__main__":
    ptest.Test("socks_replies").run(main)
