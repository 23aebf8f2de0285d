#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
HTTP/2 to the proxy (h2c), the edges between a stream and the HTTP/1.1
code that serves it (issue 34): what h2_proxy.py, h2_connect.py and
h2_attacks.py leave out. The client is python3-h2 (t/integ/h2test.py);
the origins are httptest's and two of this file's, on loopback.

- interim responses (RFC 9113 8.1, RFC 9110 15.2): an origin's 100
  Continue, and its 103 Early Hints with a Link field, before a 200 reach
  the client as informational HEADERS (the HTTP/1.1 code passes 1xx to
  an HTTP/1.1 client, and a stream's request is HTTP/1.1): :status 100
  or 103 (with link), without END_STREAM, then the final :status 200 and
  its body; the 1xx is never taken for the final status; a POST with
  expect: 100-continue and content-length: its head reaches the origin
  and the origin's 100 the client before the client sends a byte of its
  body, then 200, and the origin gets the exact body; the same without
  content-length, where the HEADERS do not say whether a body follows
  but the expectation does (RFC 9110 10.1.1: a proxy forwards such a
  request at once);
- a response the stream cannot carry: Transfer-Encoding "gzip, chunked"
  (a coding besides chunked) and "gzip" alone (running to the close)
  are answered :status 502 on that stream, the coded bytes never reach
  the client, and the connection serves the next stream; the access
  log's record of each is a 502 of an h2 stream whose error names the
  transfer coding;
- the drain's two steps (h2.c h2_on_drain, h2_on_drain_timer) on SIGHUP:
  GOAWAY NO_ERROR with last stream ID 2^31-1, then about 1 s later
  (H2_DRAIN_GRACE_MS) GOAWAY NO_ERROR naming the last stream taken; a
  stream opened between the two is served (200, its body) and is that
  last stream; one opened after the second never reaches the origin; a
  stream in flight across both completes; then the close; and the same
  two steps on SIGQUIT (graceful stop; SIGTERM is the fast stop,
  portico(8), which drains nothing);
- egress "same" (portico.conf(5)): listeners on 127.0.0.2 and 127.0.0.3
  with egress "same": the streams of an h2 connection to each reach the
  origin from that address (a stream's pt_conn takes its connection's
  local address);
- the limits module's request_rate per stream: request_rate 1 with a
  burst of 3 per source: of 8 streams one after another on one
  connection, the first 3 pass and the rest (all but one, if a second
  went by) get :status 429 with retry-after 1 and never reach the origin;
  the connection stays up, and a stream once the bucket refilled passes.
"""
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import acltest as ACL  # noqa: E402
import accesslogtest as AL  # noqa: E402
import limitstest as L  # noqa: E402
import h2test as h2t  # noqa: E402

NO_ERROR = 0
# RFC 9113 6.8: the last stream ID of a graceful shutdown's first GOAWAY.
ALL_STREAMS = (1 << 31) - 1

GZIP_BODY = b"\x1f\x8b\x08\x00coded bytes, never the content"


class CodedOrigin(ptest._Server):
    """An HTTP/1.1 origin answering in a transfer coding besides chunked:
    /gzip-chunked "Transfer-Encoding: gzip, chunked" (the chunks carry
    GZIP_BODY), /gzip "Transfer-Encoding: gzip" and the body up to the
    close. .targets: the request targets, in order."""

    def __init__(self, host="127.0.0.1"):
        self.targets = []
        super().__init__(host)

    def handle(self, c):
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        target = buf.split(b"\r\n", 1)[0].split(b" ")[1].decode("latin-1")
        with self.lock:
            self.targets.append(target)
        if "/gzip-chunked" in target:
            c.sendall(b"HTTP/1.1 200 OK\r\n"
                      b"Transfer-Encoding: gzip, chunked\r\n\r\n" +
                      b"%x\r\n" % len(GZIP_BODY) + GZIP_BODY +
                      b"\r\n0\r\n\r\n")
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
                      b"Connection: close\r\n\r\n" + GZIP_BODY)
            c.shutdown(socket.SHUT_WR)
        c.settimeout(ptest.bound(5))
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass


def client(port, host="127.0.0.1"):
    return h2t.Client(port, host=host).open()


def origin_req(o, tag):
    """The one request the origin recorded with <tag>, or None."""
    g = o.reqs_for(tag)
    return g[0] if len(g) == 1 else None


def interim_status(st):
    """The :status of each informational response <st> received."""
    return [dict(hs).get(":status") for hs in st.interim]


# ---------------------------------------------------------------------------

def interim(t, p, port, o):
    au = "127.0.0.1:%d" % o.port
    c = client(port)
    t.at_exit(c.close)

    st = c.request(h2t.request_headers("GET", au, "/early?code=100&id=e100"))
    c.wait(st)
    t.check(interim_status(st) == ["100"] and st.status == 200 and
            st.clean_end and bytes(st.data) == b"final\n" and not c.dead,
            "an origin's 100 Continue before its 200: informational "
            "HEADERS :status 100 without END_STREAM, then :status 200, "
            "the body \"final\\n\" and END_STREAM (RFC 9113 8.1)",
            lambda: h2t.describe(st) + ["interim %s" % st.interim, c.why()])

    st = c.request(h2t.request_headers("GET", au, "/early?code=103&id=e103"))
    c.wait(st)
    links = [v for hs in st.interim for k, v in hs if k == "link"]
    t.check(interim_status(st) == ["103"] and
            links == ["</s.css>; rel=preload"] and st.status == 200 and
            st.clean_end and bytes(st.data) == b"final\n" and
            st.get("link") is None and not c.dead,
            "an origin's 103 Early Hints with Link: informational HEADERS "
            ":status 103 with link: </s.css>; rel=preload, then :status "
            "200 (the 103 never taken for the final status) and its body",
            lambda: h2t.describe(st) + ["interim %s" % st.interim, c.why()])

    body = os.urandom(30000)
    for tag, extra in (
            ("exp-cl", [("content-length", str(len(body)))]),
            ("exp-nocl", [])):
        st = c.request(h2t.request_headers(
            "POST", au, "/echo?id=%s" % tag,
            extra=[("expect", "100-continue")] + extra), end=False)
        c.run_until(lambda: st.interim or st.status is not None or st.done,
                    ptest.bound(3))
        before = (list(interim_status(st)), st.status, st.sent,
                  bool(o.reqs_for("id=" + tag)))
        c.send(st, body, end=True)
        c.wait(st)
        req = origin_req(o, "id=" + tag)
        t.check(before == (["100"], None, 0, True) and st.status == 200 and
                st.clean_end and req is not None and
                req.get("sent_100") and req["body_len"] == len(body) and
                req["body_sha256"] == H.sha(body),
                "POST with expect: 100-continue%s: the head reaches the "
                "origin and its 100 the client before the client sent a "
                "byte of the body (RFC 9110 10.1.1: the proxy forwards the "
                "expectation at once), then 200, and the origin gets the "
                "exact 30000 bytes" %
                (" and content-length" if extra else
                 ", without content-length"),
                lambda: ["before the body: interim %s, status %s, sent "
                         "%d, the origin had the head: %s" % before] +
                h2t.describe(st) +
                ["origin %r" % (req and {k: req[k] for k in (
                    "method", "headers", "body_len")},), c.why()])
    t.check(not c.dead, "the connection is still up after the interim "
            "responses", c.why())
    c.close()


def coded(t, p, port, o):
    co = CodedOrigin()
    t.servers.append(co)
    c = client(port)
    t.at_exit(c.close)
    for path, what in (("/gzip-chunked", "\"gzip, chunked\""),
                       ("/gzip", "\"gzip\" (the body runs to the close)")):
        st = c.request(h2t.request_headers("GET", co.address, path))
        c.wait(st)
        reached = [x for x in co.targets if x.endswith(path)]
        t.check(st.status == 502 and st.done and
                b"coded bytes" not in bytes(st.data) and
                st.get("transfer-encoding") is None and len(reached) == 1,
                "an origin's Transfer-Encoding: %s: :status 502 on the "
                "stream, none of the coded bytes (a stream cannot carry a "
                "transfer coding, RFC 9113 8.2.2)" % what,
                lambda: h2t.describe(st) + ["origin got %s" % co.targets,
                                            c.why()] + H.log_tail(p)())
        au = "127.0.0.1:%d" % o.port
        st2 = c.request(h2t.request_headers(
            "GET", au, "/len?n=100&id=after%s" % path.replace("/", "-")))
        c.wait(st2)
        t.check(st2.status == 200 and st2.clean_end and
                bytes(st2.data) == H.pattern(100) and not c.dead,
                "after the 502 for %s the same connection serves the next "
                "stream (200, its 100 bytes)" % what,
                lambda: h2t.describe(st2) + [c.why()])
    c.close()
    return co.address


def coded_log(t, jlog, address):
    """The access log's records of coded()'s two 502s."""
    if address is None:
        t.check(False, "the transfer coding streams ran", "no address")
        return
    recs = AL.wait_json(jlog, lambda rs: len(
        [r for r in rs if address in (r.get("target") or "")]) >= 2)
    mine = [r for r in recs if address in (r.get("target") or "")]
    t.check(len(mine) == 2 and all(
        r.get("status") == 502 and r.get("client_proto") == "h2" and
        "transfer coding" in (r.get("error") or "") for r in mine),
        "access log: each of the two is a 502 record of an h2 stream whose "
        "error names the transfer coding", lambda: [str(r) for r in mine])


def drain_steps(t, c, o, tag, slow=None):
    """The drain as a client sees it, once the signal is sent: the notice
    GOAWAY, a stream opened at once (before the second GOAWAY), the final
    GOAWAY, a stream opened after it (with <slow> in flight). Returns a
    dict of what happened."""
    au = "127.0.0.1:%d" % o.port
    got = {}
    c.run_until(lambda: c.goaways or c.dead, ptest.bound(10))
    got["t1"] = time.monotonic()
    got["first"] = list(c.goaways)
    got["between"] = c.request(h2t.request_headers(
        "GET", au, "/len?n=5000&id=%s-between" % tag))
    c.run_until(lambda: len(c.goaways) >= 2 or c.dead, ptest.bound(10))
    got["t2"] = time.monotonic()
    got["goaways"] = list(c.goaways)
    got["after"] = None
    # Only while a stream keeps the connection open: with none, the
    # proxy closes right after the second GOAWAY, and a HEADERS racing
    # that close is a question of microseconds, not of the drain.
    if slow is not None and len(c.goaways) >= 2 and not c.dead:
        try:
            got["after"] = c.request(h2t.request_headers(
                "GET", au, "/len?n=10&id=%s-after" % tag))
        except Exception as e:
            got["after"] = "%s: %s" % (type(e).__name__, e)
    streams = [got["between"]] + ([slow] if slow is not None else [])
    c.wait(streams, ptest.bound(15))
    c.run_until(lambda: c.eof, ptest.bound(10))
    return got


def check_drain(t, c, o, tag, sig, got, slow=None):
    g, first, between = got["goaways"], got["first"], got["between"]
    t.check(first[:1] == [(NO_ERROR, ALL_STREAMS)],
            "%s: the first GOAWAY is NO_ERROR with last stream ID 2^31-1 "
            "(the shutdown notice, RFC 9113 6.8)" % sig,
            lambda: ["goaways %s" % g, c.why()])
    dt = got["t2"] - got["t1"]
    t.check(len(g) == 2 and g[1] == (NO_ERROR, between.id) and
            0.8 <= dt <= ptest.bound(5),
            "%s: about 1 s later a second GOAWAY NO_ERROR names the last "
            "stream taken: %d, the one opened between the two" %
            (sig, between.id),
            lambda: ["goaways %s, %.2f s apart" % (g, dt), c.why()])
    t.check(between.status == 200 and between.clean_end and
            bytes(between.data) == H.pattern(5000) and
            origin_req(o, "id=%s-between" % tag) is not None,
            "%s: the stream opened between the two GOAWAYs is served (200, "
            "its 5000 bytes)" % sig, lambda: h2t.describe(between) +
            [c.why()])
    if slow is not None:
        t.check(slow.status == 200 and slow.clean_end and
                len(slow.data) == 5000 and
                slow.sha() == slow.get("x-body-sha256"),
                "%s: a stream in flight across both GOAWAYs completes with "
                "its whole body" % sig, lambda: h2t.describe(slow) +
                [c.why()])
        after = got["after"]
        t.check(isinstance(after, h2t.Stream) and after.status is None and
                not o.reqs_for("id=%s-after" % tag),
                "%s: a stream opened after the second GOAWAY (above its "
                "last stream ID) is not served and never reaches the "
                "origin" % sig, lambda: h2t.describe(after) + [c.why()])
    t.check(c.eof and c.error is None,
            "%s: then the proxy closes the connection" % sig, c.why())


def drain_on_reload(t, p, port, o):
    slow_o = h2t.SlowOrigin(size=5000, delay=3.0)
    t.servers.append(slow_o)
    c = client(port)
    t.at_exit(c.close)
    # A stream waiting at the origin across the whole drain keeps the
    # connection open past the second GOAWAY.
    slow = c.request(h2t.request_headers("GET", slow_o.address, "/slow"))
    c.run_until(lambda: slow_o.requests, ptest.bound(5))
    p.hup()
    got = drain_steps(t, c, o, "hup", slow)
    check_drain(t, c, o, "hup", "SIGHUP", got, slow)
    c.close()
    t.check(bool(p.wait_log(r"reloaded .*generation 2",
                            timeout=ptest.bound(10))),
            "the reload happened (generation 2)", H.log_tail(p))


def drain_on_quit(t, o):
    port = ptest.free_port()
    q = t.portico(h2t.conf(t, [h2t.listener("quit", port)], name="quit"),
                  conf_name="quit.conf")
    c = client(port)
    t.at_exit(c.close)
    st = c.request(h2t.request_headers("GET", "127.0.0.1:%d" % o.port,
                                       "/len?n=10&id=quit-before"))
    c.wait(st)
    ok = st.status == 200
    q.quit()
    got = drain_steps(t, c, o, "quit")
    t.check(ok, "SIGQUIT: the connection served a stream before",
            lambda: h2t.describe(st))
    check_drain(t, c, o, "quit", "SIGQUIT", got)
    c.close()
    rc = q.wait_exit(ptest.bound(10))
    t.check(rc == 0, "SIGQUIT: the master exits 0 once the connection is "
            "done", lambda: ["exit %s" % rc] + H.log_tail(q)())
    t.stop_portico(q, sig=signal.SIGQUIT)


def egress_same(t, o):
    if not ACL.can_bind("127.0.0.3"):
        t.skip("egress \"same\" on HTTP/2 streams", "127.0.0.2 and the "
               "rest of 127/8 are not on lo", need="127.0.0.2")
        return
    pa, pb = ptest.free_port(), ptest.free_port()
    lst = ['  { name = "%s"; address = "%s:%d"; protocol = "http"; '
           'egress = "same"; }' % (n, a, pt)
           for n, a, pt in (("two", "127.0.0.2", pa),
                            ("three", "127.0.0.3", pb))]
    q = t.portico(h2t.conf(t, lst, name="egress"), conf_name="egress.conf")
    au = "127.0.0.1:%d" % o.port
    for host, pt in (("127.0.0.2", pa), ("127.0.0.3", pb)):
        c = client(pt, host)
        t.at_exit(c.close)
        tags = ["id=eg-%s-%d" % (host, i) for i in range(3)]
        sts = [c.request(h2t.request_headers("GET", au, "/echo?" + tag))
               for tag in tags]
        c.wait(sts)
        peers = [(origin_req(o, tag) or {}).get("peer") for tag in tags]
        t.check(all(s.status == 200 for s in sts) and
                peers == [host] * 3,
                "egress \"same\" on a listener on %s: 3 streams of one h2 "
                "connection reach the origin from %s" % (host, host),
                lambda: ["peers %s" % peers] +
                [s.describe()[:200] for s in sts] + [c.why()])
        c.close()
    t.stop_portico(q)


LIMITS_BURST = 3


def limits(t, o):
    why = L.missing()
    if why:
        t.skip("request_rate per HTTP/2 stream", why)
        return
    port = ptest.free_port()
    mod = ('{ name = "limits"; path = "%s"; classes = ( { name = '
           '"h2-requests"; key = "source"; request_rate = 1; '
           'request_rate_burst = %d; } ); }' % (L.LIMITS_SO, LIMITS_BURST))
    q = t.portico(h2t.conf(t, [h2t.listener("rate", port)], [mod],
                           name="limits"), conf_name="limits.conf")
    au = "127.0.0.1:%d" % o.port
    c = client(port)
    t.at_exit(c.close)
    got = []
    for i in range(8):
        st = c.request(h2t.request_headers("GET", au,
                                           "/len?n=10&id=rate-%d-" % i))
        c.wait(st)
        got.append(st)
    ok = [s for s in got if s.status == 200]
    refused = [s for s in got if s.status == 429]
    reached = [i for i in range(8) if o.reqs_for("id=rate-%d-" % i)]
    t.check([s.status for s in got[:LIMITS_BURST]] == [200] * LIMITS_BURST
            and len(ok) in (LIMITS_BURST, LIMITS_BURST + 1) and
            len(ok) + len(refused) == 8 and
            all(s.get("retry-after") == "1" and s.clean_end
                for s in refused) and len(reached) == len(ok),
            "request_rate 1/s burst %d per source: of 8 streams one after "
            "another on one connection, the first %d pass, the rest get "
            ":status 429 with retry-after 1 and never reach the origin"
            % (LIMITS_BURST, LIMITS_BURST),
            lambda: ["statuses %s, origin saw %s" % (
                [s.status for s in got], reached)] +
            [s.describe()[:200] for s in refused[:2]] + [c.why()])
    t.check(not c.dead, "the connection stays up after the 429s", c.why())
    time.sleep(1.2)
    st = c.request(h2t.request_headers("GET", au, "/len?n=10&id=rate-later"))
    c.wait(st)
    t.check(st.status == 200 and bytes(st.data) == H.pattern(10),
            "a stream on the same connection once the bucket has a token "
            "again passes (200)", lambda: h2t.describe(st) + [c.why()])
    c.close()
    t.stop_portico(q)


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, sid, payload):
    return (len(payload).to_bytes(3, "big") + bytes([ftype, flags]) +
            sid.to_bytes(4, "big") + payload)


# 256 KiB of PING frames: bytes the proxy has not read when it closes.
PINGS = frame(6, 0, 0, b"12345678") * (256 * 1024 // 17)


def frames(b):
    """[(type, stream, payload)] of the whole frames at the start of b."""
    out, i = [], 0
    while i + 9 <= len(b):
        n = int.from_bytes(b[i:i + 3], "big")
        if i + 9 + n > len(b):
            break
        out.append((b[i + 3], int.from_bytes(b[i + 5:i + 9], "big"),
                    b[i + 9:i + 9 + n]))
        i += 9 + n
    return out


def goaway_frames(b):
    """[(last stream id, error code)] of the GOAWAY frames in b."""
    return [(int.from_bytes(p[0:4], "big") & 0x7fffffff,
             int.from_bytes(p[4:8], "big"))
            for ty, _, p in frames(b) if ty == 7 and len(p) >= 8]


def send_all_now(s, data):
    """Sends what the socket takes within a few seconds, never blocking
    on a peer that stopped reading. (sent, len(data))."""
    s.setblocking(False)
    sent = 0
    deadline = time.monotonic() + ptest.bound(3)
    while sent < len(data) and time.monotonic() < deadline:
        try:
            sent += s.send(data[sent:])
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            break
    s.setblocking(True)
    return sent, len(data)


def read_to_end(s):
    """Everything until the peer's close: (bytes, "eof" | "reset" |
    "timeout")."""
    s.settimeout(ptest.bound(5))
    got = b""
    while True:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            return got, "reset"
        except socket.timeout:
            return got, "timeout"
        if not d:
            return got, "eof"
        got += d


def goaway_not_reset(t, port):
    """A connection error with the client's bytes still unread: the
    GOAWAY that says why must reach the client. A plain close with
    unread bytes is a reset on Linux, and a client whose stack drops
    what it had not read on a reset (Windows) loses the GOAWAY, or a
    GOAWAY still in portico's send queue is lost; portico closes these
    connections lingering (worker/linger.c), as HTTP/1.1's answered
    ones, so the client sees the GOAWAY and then an orderly close. The client sends DATA on stream 0 (a connection error, RFC
    9113 6.1) and 256 KiB of PING behind it in one go, and reads only
    half a second later."""
    s = socket.create_connection(("127.0.0.1", port), ptest.bound(5))
    t.at_exit(s.close)
    sent, total = send_all_now(s, PREFACE + frame(4, 0, 0, b"") +
                               frame(0, 0, 0, b"data on 0") + PINGS)
    time.sleep(0.5)
    got, end = read_to_end(s)
    goaways = goaway_frames(got)
    goaway = goaways[-1][1] if goaways else None
    t.check(goaway == 1 and end == "eof",
            "a connection error with 256 KiB of the client's bytes unread: "
            "the client reads GOAWAY PROTOCOL_ERROR, then the close (not "
            "a reset)",
            "GOAWAY code %r, end %s, %d bytes read, %d of %d sent" % (
                goaway, end, len(got), sent, total))
    s.close()


def quit_linger(t):
    """The same at a stop. The connection closes lingering after the
    drain's last GOAWAY, and the stopping worker waits for its lingering
    sockets before it exits: an exit would close them, and what the
    client sends then would be answered with a reset, which also throws
    away whatever of the answer the kernel had not sent yet. The client
    reads to the EOF, waits until a worker that did not wait would have
    exited, and sends 256 KiB: taken, no reset."""
    port = ptest.free_port()
    q = t.portico(h2t.conf(t, [h2t.listener("qlinger", port)],
                           name="qlinger"), conf_name="qlinger.conf")
    s = socket.create_connection(("127.0.0.1", port), ptest.bound(5))
    t.at_exit(s.close)
    s.sendall(PREFACE + frame(4, 0, 0, b""))
    s.settimeout(ptest.bound(5))
    got = b""
    while not any(ty == 4 for ty, _, _ in frames(got)):
        got += s.recv(65536)
    q.quit()
    rest, end = read_to_end(s)
    g = goaway_frames(got + rest)
    time.sleep(0.4)
    sent, total = send_all_now(s, PINGS)
    time.sleep(0.3)
    after = "nothing"
    try:
        s.send(frame(6, 0, 0, b"12345678"))
        s.settimeout(0.2)
        after = "eof" if s.recv(10) == b"" else "bytes"
    except socket.timeout:
        after = "nothing"
    except (ConnectionResetError, BrokenPipeError) as e:
        after = type(e).__name__
    t.check(len(g) >= 2 and end == "eof" and sent == total and
            after in ("nothing", "eof"),
            "SIGQUIT: two GOAWAYs, the EOF, and the 256 KiB the client "
            "sends 0.4 s later are taken, not answered with a reset (the "
            "worker waited for its lingering close)",
            "GOAWAYs %s, end %s, %d of %d sent, then %s" % (
                g, end, sent, total, after))
    s.close()
    rc = q.wait_exit(ptest.bound(10))
    t.check(rc == 0, "SIGQUIT: the master exits 0 after the lingering close",
            lambda: ["exit %s" % rc] + H.log_tail(q)())
    t.stop_portico(q, sig=signal.SIGQUIT)


def max_streams(t):
    """http2_max_streams = 3: the SETTINGS say 3 (SETTINGS 0x3, RFC 9113
    6.5.2), and three streams are served at once (the origin holds them
    together)."""
    slow = h2t.SlowOrigin(size=100, together=3)
    t.servers.append(slow)
    port = ptest.free_port()
    q = t.portico(h2t.conf(t, [h2t.listener(
        "three", port, extra="http2_max_streams = 3; ")], name="three"),
        conf_name="three.conf")
    c = client(port)
    t.at_exit(c.close)
    sts = [c.request(h2t.request_headers("GET", slow.address,
                                         "/together?i=%d" % i))
           for i in range(3)]
    c.wait(sts, ptest.bound(20))
    t.check(c.server_settings.get(3) == 3 and
            all(s.status == 200 and s.ended for s in sts),
            "http2_max_streams = 3: SETTINGS_MAX_CONCURRENT_STREAMS 3, "
            "and 3 streams served at once",
            lambda: ["settings %s" % c.server_settings] +
            [h2t.describe(s) for s in sts] + [c.why()])
    c.close()
    t.stop_portico(q)


def main(t):
    if not h2t.ready(t, "HTTP/2 edges", [AL.missing]):
        return
    o = H.origin(t)
    p, port, jlog = h2t.logged_proxy(t, AL.module)
    w0 = p.workers()
    part = h2t.Parts(t)
    parts = part.got
    part("interim responses", interim, t, p, port, o)
    part("transfer codings", coded, t, p, port, o)
    part("transfer codings, access log", coded_log, t, jlog,
         parts["transfer codings"])
    part("egress same", egress_same, t, o)
    part("request_rate per stream", limits, t, o)
    part("drain on SIGQUIT", drain_on_quit, t, o)
    part("GOAWAY before unread bytes", goaway_not_reset, t, port)
    part("lingering at the stop", quit_linger, t)
    part("http2_max_streams", max_streams, t)
    w = p.workers()
    t.check(w == w0, "the worker pids are unchanged (no worker died)",
            lambda: ["before %s, now %s" % (w0, w)] + H.log_tail(p)())
    part("drain on reload", drain_on_reload, t, p, port, o)
    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("h2_edges").run(main)
