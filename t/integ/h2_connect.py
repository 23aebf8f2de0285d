#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
CONNECT over HTTP/2 with prior knowledge (h2c), plain and extended
(RFC 8441, WebSocket), issue 34's first slice. The client is python3-h2
(t/integ/h2test.py); the targets are loopback servers of the test.

- CONNECT (:method and :authority only): :status 200, then DATA both
  ways: 1 MiB through an echo (sha256 both ways); the client's
  END_STREAM reaches the target as EOF (it answers after it, on the
  half-closed stream) and the target's close ends the stream with
  END_STREAM; a target that sends 1000 bytes and closes first: every
  byte, then END_STREAM (no RST_STREAM with an error);
- 8 CONNECT streams moving 1 MiB each at the same time: every stream
  had echo bytes back before the first echo was whole, each exact;
- one stream held (the client neither reads it nor sends WINDOW_UPDATE
  for it) while its target sends 8 MiB: it gets no more than its
  window, and 4 other tunnels on the connection move 1 MiB each to the
  end meanwhile; released, it gets all 8 MiB;
- the client stops reading its socket for 1 s while 4 tunnels download
  8 MiB each with 16 MiB windows (the proxy's writes stop part way
  through frames whose payloads wait in the streams' buffers) and resets
  one of them meanwhile: the other three get every byte (sha256) and
  END_STREAM, the connection stays up, and a new tunnel on it echoes;
- a CONNECT to a refusing port: a 5xx, and the tunnel already open on
  the connection and a new one still work;
- RST_STREAM on one of three tunnels: its target sees its connection
  closed, the other two still echo and stay open at their targets;
- HEADERS with END_STREAM (trailers) on a tunnel: RST_STREAM
  PROTOCOL_ERROR (RFC 9113 8.5 allows DATA, RST_STREAM, WINDOW_UPDATE
  and PRIORITY only), its target sees its connection closed, and the
  other tunnel on the connection still echoes;
- extended CONNECT (:protocol websocket, :scheme http, :path): the
  proxy announced ENABLE_CONNECT_PROTOCOL; the origin gets an HTTP/1.1
  GET with Upgrade: websocket, Connection: Upgrade, a Sec-WebSocket-Key
  of 16 bytes, Sec-WebSocket-Version 13 and Host; the client gets
  :status 200 with no connection-specific fields; WebSocket frames
  (text, 200 KiB binary) echo through as DATA, and the origin's close
  ends the stream;
- the access log (JSON): a CONNECT stream is one record with proto
  "connect", method CONNECT, client_proto "h2" and its stream ID; the
  refused one has its 5xx.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import accesslogtest as AL  # noqa: E402
import h2test as h2t  # noqa: E402

CONN_SPECIFIC = ("connection", "keep-alive", "proxy-connection",
                 "transfer-encoding", "upgrade")


def tunnel(c, target, hold=False):
    """A CONNECT stream to <target> whose :status came (or not: the
    checks see it)."""
    st = c.request(h2t.connect_headers(target), end=False, hold=hold)
    c.wait_status(st)
    return st


def echoes(c, st, msg):
    """Sends <msg> on tunnel <st>; True when it comes back after what the
    stream already had."""
    before = len(st.data)
    c.send(st, msg)
    c.run_until(lambda: len(st.data) >= before + len(msg) or st.done,
                ptest.bound(10))
    return bytes(st.data[before:]) == msg


def client(port):
    return h2t.Client(port).open()


# ---------------------------------------------------------------------------

def basics(t, port, echo, note, closer):
    """Returns [(client port, Stream)] for the access log check."""
    c = client(port)
    t.at_exit(c.close)
    cport = c.sock.getsockname()[1]
    st = tunnel(c, echo.address)
    t.check(st.status == 200 and not st.done,
            "CONNECT (no :scheme, no :path) to an echo server: :status 200, "
            "the stream stays open", lambda: h2t.describe(st) + [c.why()])
    blob = b"big-1\n" + os.urandom(ptest.MiB - 6)
    c.send(st, blob, end=True)
    c.run_until(lambda: len(st.data) >= len(blob) or st.done,
                ptest.bound(30))
    t.check(st.status == 200 and bytes(st.data) == blob,
            "1 MiB through the tunnel comes back whole (sha256 equal)",
            lambda: ["got %d of %d bytes, sha equal %s" % (
                len(st.data), len(blob), st.sha() == H.sha(blob))] +
            h2t.describe(st) + [c.why()])
    c.wait(st)
    rec = echo.wait_end("big-1", ptest.bound(5))
    t.check(rec is not None and rec["n"] == len(blob) and
            rec["end"] == "eof" and st.clean_end,
            "the target read exactly 1 MiB, then the EOF the client's "
            "END_STREAM became; its close ended the stream with END_STREAM",
            lambda: ["target %r" % (rec,)] + h2t.describe(st))

    st2 = tunnel(c, note.address)
    c.send(st2, b"half-close\n", end=True)
    c.wait(st2)
    t.check(st2.status == 200 and
            bytes(st2.data) == b"half-close\n[eof after 11 bytes]\n" and
            st2.clean_end,
            "END_STREAM from the client is a half-close: the target sees "
            "EOF and answers after it, the answer reaches the client, then "
            "END_STREAM", lambda: h2t.describe(st2) + [c.why()])

    st3 = tunnel(c, closer.address)
    c.wait(st3)
    t.check(st3.status == 200 and len(st3.data) == closer.nbytes and
            st3.sha() == closer.digest and st3.clean_end,
            "a target that sends %d bytes and closes first: every byte, then "
            "END_STREAM (no error RST_STREAM)" % closer.nbytes,
            lambda: h2t.describe(st3) + [c.why()])
    c.close()
    return [(cport, st)]


def eight(t, port, echo):
    c = client(port)
    t.at_exit(c.close)
    sts = [tunnel(c, echo.address) for _ in range(8)]
    blobs = {}
    for i, st in enumerate(sts):
        blobs[st.id] = b"eight-%d\n" % i + os.urandom(ptest.MiB)
        c.send(st, blobs[st.id], end=True)
    first = {}

    def whole(s):
        return len(s.data) >= len(blobs[s.id]) or s.done

    def pred():
        if not first and any(whole(s) for s in sts):
            first.update({s.id: len(s.data) for s in sts})
        return all(whole(s) for s in sts)
    c.run_until(pred, ptest.bound(60))
    good = [s for s in sts if s.status == 200 and
            bytes(s.data) == blobs[s.id]]
    t.check(len(good) == 8, "8 CONNECT streams at once, 1 MiB each both "
            "ways: each echo comes back whole (sha256 equal)",
            lambda: [s.describe()[:200] for s in sts if s not in good] +
            [c.why()])
    t.check(first and all(n > 0 for n in first.values()),
            "they moved at the same time: when the first echo was whole, "
            "all 8 had echo bytes back", "received per stream then: %s"
            % first)
    c.close()


def stalled(t, port, echo, source):
    c = client(port)
    t.at_exit(c.close)
    held = tunnel(c, source.address, hold=True)
    sts = [tunnel(c, echo.address) for _ in range(4)]
    blobs = {}
    for i, st in enumerate(sts):
        blobs[st.id] = b"stall-%d\n" % i + os.urandom(ptest.MiB)
        c.send(st, blobs[st.id], end=True)
    c.run_until(lambda: all(len(s.data) >= len(blobs[s.id]) or s.done
                            for s in sts), ptest.bound(60))
    good = [s for s in sts if s.status == 200 and
            bytes(s.data) == blobs[s.id]]
    window = h2t.STREAM_WINDOW
    t.check(held.status == 200 and len(good) == 4,
            "one tunnel held (no reading, no WINDOW_UPDATE for it) while "
            "its target sends %d bytes: 4 other tunnels each move 1 MiB "
            "both ways to the end" % source.nbytes,
            lambda: [held.describe()[:200]] +
            [s.describe()[:200] for s in sts if s not in good] + [c.why()])
    t.check(held.status == 200 and 0 < len(held.data) <= window and
            not held.done and c.error is None,
            "the held stream got no more than its window (%d bytes) and "
            "stays open" % window, lambda: ["held got %d bytes" %
                                            len(held.data), c.why()])
    c.release(held)
    c.wait(held, ptest.bound(60))
    t.check(len(held.data) == source.nbytes and held.sha() == source.digest
            and held.clean_end,
            "released (WINDOW_UPDATE), the held stream gets all %d bytes "
            "(sha256), then END_STREAM (the target closed)" % source.nbytes,
            lambda: h2t.describe(held) + [c.why()])
    c.close()


def socket_held(t, port, echo, source):
    """The client stops reading its socket while 4 tunnels download with
    16 MiB windows, so the proxy's writes stop part way through DATA
    frames whose payloads wait in the streams' own buffers; one of them
    is reset meanwhile."""
    c = client(port)
    t.at_exit(c.close)
    c.h2.update_settings({h2t.h2.settings.SettingCodes.INITIAL_WINDOW_SIZE:
                          1 << 24})
    c.pump(0)
    sts = [tunnel(c, source.address) for _ in range(4)]
    time.sleep(1.0)
    c.reset(sts[1])
    time.sleep(0.3)
    rest = [sts[0], sts[2], sts[3]]
    c.run_until(lambda: all(s.done for s in rest), ptest.bound(60))
    good = [s for s in rest if len(s.data) == source.nbytes and
            s.sha() == source.digest and s.clean_end]
    t.check(len(good) == 3 and c.error is None and not c.goaways,
            "the client read nothing for 1 s while 4 tunnels on one "
            "connection downloaded %d bytes each, and reset one of them "
            "meanwhile: the other 3 get every byte (sha256), then "
            "END_STREAM, and the connection stays up" % source.nbytes,
            lambda: [s.describe()[:200] for s in rest if s not in good] +
            [c.why(), "GOAWAY %r" % (c.goaways,)])
    st = tunnel(c, echo.address)
    t.check(st.status == 200 and echoes(c, st, b"after the stall\n"),
            "a new tunnel on that connection echoes",
            lambda: [st.describe(), c.why()])
    c.close()


def refused(t, port, echo):
    """Returns [(client port, Stream)] of the refused CONNECT."""
    c = client(port)
    t.at_exit(c.close)
    cport = c.sock.getsockname()[1]
    st = tunnel(c, echo.address)
    ok0 = echoes(c, st, b"before\n")
    dead = ptest.free_port()
    bad = tunnel(c, "127.0.0.1:%d" % dead)
    c.wait(bad)
    t.check(bad.status is not None and 500 <= bad.status < 600,
            "CONNECT to a port that refuses: a 5xx (502 expected)",
            lambda: h2t.describe(bad) + [c.why()])
    ok1 = echoes(c, st, b"after\n")
    st2 = tunnel(c, echo.address)
    ok2 = st2.status == 200 and echoes(c, st2, b"new\n")
    t.check(ok0 and ok1 and ok2, "the tunnel open beside it still echoes, "
            "and a new CONNECT on the connection works",
            lambda: [st.describe(), st2.describe(), c.why()])
    c.end(st)
    c.end(st2)
    c.wait([st, st2])
    c.close()
    return [(cport, bad)]


def rst_one(t, port, echo):
    c = client(port)
    t.at_exit(c.close)
    sts = {}
    for tag in ("rst-a", "rst-b", "rst-c"):
        sts[tag] = tunnel(c, echo.address)
        echoes(c, sts[tag], tag.encode() + b"\n")
    ready = all(len(echo.by_tag(tag)) == 1 for tag in sts)
    c.reset(sts["rst-b"])
    rec = echo.wait_end("rst-b", ptest.bound(10))
    t.check(ready and rec is not None and rec["end"] in ("eof", "reset"),
            "RST_STREAM on one of three tunnels: its target sees its "
            "connection closed", "target record %r" % (rec,))
    ok = [echoes(c, sts[tag], b"still there\n") for tag in ("rst-a",
                                                           "rst-c")]
    open_ = [[r["end"] for r in echo.by_tag(tag)] == [None]
             for tag in ("rst-a", "rst-c")]
    t.check(all(ok) and all(open_) and not c.dead,
            "the other two tunnels still echo and stay open at their "
            "targets", lambda: ["echo %s, open %s" % (ok, open_),
                                c.why()])
    c.close()


def trailers(t, port, echo):
    """HEADERS (trailers, END_STREAM) on a tunnel: a stream error (RFC
    9113 8.5: DATA, RST_STREAM, WINDOW_UPDATE and PRIORITY only), not
    the tunnel's orderly end."""
    c = client(port)
    t.at_exit(c.close)
    sts = {}
    for tag in ("trl-a", "trl-b"):
        sts[tag] = tunnel(c, echo.address)
        echoes(c, sts[tag], tag.encode() + b"\n")
    st = sts["trl-a"]
    c.h2.send_headers(st.id, [(b"x-trailer", b"t")], end_stream=True)
    c.pump(0)
    c.run_until(lambda: st.done or c.dead, ptest.bound(10))
    rec = echo.wait_end("trl-a", ptest.bound(10))
    t.check(st.reset == 1 and rec is not None and rec["end"] is not None,
            "HEADERS with END_STREAM on a tunnel: RST_STREAM PROTOCOL_ERROR "
            "(RFC 9113 8.5), and its target sees its connection closed",
            lambda: [st.describe(), "target record %r" % (rec,), c.why()])
    t.check(echoes(c, sts["trl-b"], b"still there\n") and not c.dead,
            "the other tunnel on the connection still echoes",
            lambda: [sts["trl-b"].describe(), c.why()])
    c.close()


def websocket(t, port, o):
    c = client(port)
    t.at_exit(c.close)
    announced = c.server_settings.get(h2t.ENABLE_CONNECT_PROTOCOL)
    au = "127.0.0.1:%d" % o.port
    st = c.request([(":method", "CONNECT"), (":protocol", "websocket"),
                    (":scheme", "http"), (":authority", au),
                    (":path", "/ws?id=ext1"),
                    ("sec-websocket-version", "13"),
                    ("origin", "http://example.test")], end=False)
    c.wait_status(st)
    g = o.reqs_for("id=ext1")
    hs = g[0]["headers"] if g else []
    names = [k for k, _ in st.headers]
    t.check(announced == 1 and st.status == 200 and not st.done,
            "extended CONNECT (:protocol websocket), after the proxy "
            "announced ENABLE_CONNECT_PROTOCOL: :status 200, the stream "
            "open", lambda: ["ENABLE_CONNECT_PROTOCOL %s" % announced] +
            h2t.describe(st) + [c.why()])
    t.check(len(g) == 1 and g[0]["method"] == "GET" and
            g[0]["target"] == "/ws?id=ext1" and
            g[0]["version"] == "HTTP/1.1" and
            "websocket" in H.tokens(hs, "upgrade") and
            "upgrade" in H.tokens(hs, "connection") and
            h2t.ws_key_ok(H.field(hs, "sec-websocket-key") or "") and
            H.field(hs, "sec-websocket-version") == "13" and
            H.fields(hs, "host") == [au],
            "the origin gets GET /ws?... HTTP/1.1 with Upgrade: websocket, "
            "Connection: Upgrade, a 16-byte Sec-WebSocket-Key, "
            "Sec-WebSocket-Version 13 and Host", "origin saw %r" % (
                g[0]["raw_head"] if g else None,))
    t.check(st.status == 200 and all(n == n.lower() for n in names) and
            not [n for n in names if n.lower() in CONN_SPECIFIC],
            "the 200 carries no connection-specific field (no upgrade, "
            "no connection), names lower case", lambda: h2t.describe(st))

    text, blob = b"hello over h2", os.urandom(200 * 1024)
    c.send(st, H.ws_frame(1, text) + H.ws_frame(2, blob))
    c.run_until(lambda: len(h2t.ws_parse(bytes(st.data))[0]) >= 2 or
                st.done, ptest.bound(20))
    frames, _ = h2t.ws_parse(bytes(st.data))
    t.check(frames[:2] == [(True, 1, text), (True, 2, blob)],
            "a text frame and a 200 KiB binary frame echo back through the "
            "stream's DATA", lambda: ["frames %r" % ([(f, o_, len(d))
                                                     for f, o_, d in
                                                     frames],)] +
            [st.describe()[:200], c.why()])
    c.send(st, H.ws_frame(8, b"\x03\xe8bye"))
    c.run_until(lambda: any(op == 8 for _, op, _ in
                            h2t.ws_parse(bytes(st.data))[0]) or st.done,
                ptest.bound(10))
    c.end(st)
    c.wait(st)
    frames, _ = h2t.ws_parse(bytes(st.data))
    t.check(frames and frames[-1][1] == 8 and st.clean_end,
            "a close frame: the origin's close comes back, and its close "
            "of the connection ends the stream with END_STREAM",
            lambda: ["last frame %r" % (frames[-1:],)] +
            [st.describe()[:200], c.why()])
    c.close()


def access_log(t, jlog, tunnels, refusals):
    want = tunnels + refusals

    def find(recs, cport, sid):
        return [r for r in recs if r.get("client_port") == cport and
                r.get("stream") == sid]
    recs = AL.wait_json(jlog, lambda rs: all(find(rs, cp, st.id)
                                             for cp, st in want))
    rows = [(find(recs, cp, st.id), st) for cp, st in tunnels]
    t.check(rows and all(len(rs) == 1 and rs[0].get("proto") == "connect"
                         and rs[0].get("method") == "CONNECT" and
                         rs[0].get("client_proto") == "h2" and
                         rs[0].get("status") == 200 for rs, _ in rows),
            "access log: a CONNECT stream is one record, proto \"connect\", "
            "method CONNECT, client_proto \"h2\", its stream ID, status 200",
            lambda: ["stream %d: %s" % (st.id, rs) for rs, st in rows] +
            ["last records: %s" % recs[-3:]])
    rows = [(find(recs, cp, st.id), st) for cp, st in refusals]
    t.check(rows and all(len(rs) == 1 and rs[0].get("client_proto") == "h2"
                         and rs[0].get("proto") == "connect" and
                         500 <= (rs[0].get("status") or 0) < 600
                         for rs, _ in rows),
            "access log: the refused CONNECT stream's record has its 5xx",
            lambda: ["stream %d: %s" % (st.id, rs) for rs, st in rows])


def main(t):
    if not h2t.ready(t, "CONNECT over HTTP/2 (h2c)", [AL.missing]):
        return
    echo = h2t.TunnelTarget()
    note = h2t.TunnelTarget(note_eof=True)
    t.servers += [echo, note]
    closer = t.source_server(1000)
    source = t.source_server(8 * ptest.MiB)
    o = H.origin(t)
    p, port, jlog = h2t.logged_proxy(t, AL.module)
    w0 = p.workers()
    part = h2t.Parts(t)
    parts = part.got
    part("basics", basics, t, port, echo, note, closer)
    part("8 at once", eight, t, port, echo)
    part("stalled", stalled, t, port, echo, source)
    part("socket held", socket_held, t, port, echo, source)
    part("refused", refused, t, port, echo)
    part("RST_STREAM", rst_one, t, port, echo)
    part("trailers on a tunnel", trailers, t, port, echo)
    part("extended CONNECT", websocket, t, port, o)
    part("access log", access_log, t, jlog, parts["basics"] or [],
         parts["refused"] or [])
    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("h2_connect").run(main)
