#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The known HTTP/2 attacks against one worker (issue 34), one at a time,
each refused. A plain "http" listener takes HTTP/2 by prior knowledge;
the attacker is a hand-driven client (frames built with python3-hyperframe
and header blocks by hand, so it can send what python3-h2 refuses to).
While each attack runs (3 s at least: an attack that ends its connection
sooner is repeated on new ones), hostiletest's canary (a separate
process) makes 1 KiB GETs through the same worker on connections of its
own, and the attack is judged as the hostile_*.py ones are: the same
worker pid, CPU below 70% of the window,
PSS growth below 4 MiB (a connection's own bound is 100 streams of two
16 KiB buffers, 3.2 MiB; x3 under the sanitizers), the canary never
failed and its p99 stayed under its bound; afterwards the worker's
connections and sockets are back, and a fresh HTTP/2 client (python3-h2,
one that keeps the rules) and an HTTP/1.1 client (curl -x) are served.

  first read       a client whose preface the worker finds at accept (the
                   worker is paused a moment so that it is so) and whose
                   request follows the proxy's SETTINGS: served. The
                   attackers below connect, wait until a worker took the
                   connection and found nothing to read, then send their
                   preface, so that they meet the guard they are meant
                   for whatever this check finds.
  rapid reset      HEADERS + RST_STREAM pairs in a tight loop (CVE-2023-
                   44487), up to 20,000 pairs or 10 s a connection: the
                   proxy ends the connection (GOAWAY, then the close)
                   before the last pair, and the origin sees fewer than
                   200 of them.
  CONTINUATION     HEADERS without END_HEADERS, then CONTINUATION frames
                   without end (CVE-2024-28182): paced one at a time, the
                   connection ends after at most 16 (nghttp2 takes 8); as
                   a flood, it ends too; nothing reaches the origin.
  HPACK bomb       one 4,038-byte dynamic-table entry referenced ~61,000
                   times (236 MB decoded; max_header_size is 64 KiB) in
                   64 KiB of HEADERS and CONTINUATION: the stream is
                   refused (431, RST_STREAM or GOAWAY: which one is
                   stated), nothing reaches the origin, a normal stream on
                   a connection kept is served, and a bomb costs the
                   worker < 20 ms of CPU (what its 64 KiB cost, not what
                   they stand for); more follow for the window, 20 ms
                   apart.
  SETTINGS/PING    floods from clients that never read their socket: the
                   proxy closes each (its queue of ACKs is bounded; seen
                   in the kernel's socket table, unread).
  empty DATA       empty DATA frames without end on an open POST stream
                   (CVE-2019-9518): two runs of 32 are let be (the stream
                   completes with its body); a flood ends the connection
                   with GOAWAY ENHANCE_YOUR_CALM, also one of frames that
                   are all padding.
  zero window      on a proxy of its own with idle_timeout = 2: a client
                   that gives its window back gets a 10 MiB body whole;
                   one that never sends WINDOW_UPDATE gets no more than
                   its window, the worker's memory does not grow by the
                   body, the stream is reset, then the connection closed,
                   each within idle_timeout + 3 s.
  stream IDs       HEADERS on a closed stream, on a lower (never used)
                   stream (also one a PRIORITY frame named, which
                   nghttp2 holds as idle), after stream 2^31-1 (the next
                   id also written
                   with the reserved bit): connection errors (GOAWAY
                   PROTOCOL_ERROR or STREAM_CLOSED, RFC 9113 5.1.1), and
                   none reaches the origin.
  closed streams   RFC 9113 5.1: DATA and trailers that cross the
                   proxy's RST_STREAM (a POST whose target refuses) are
                   ignored and the next stream is served; a late
                   WINDOW_UPDATE or RST_STREAM on an ended stream is
                   ignored; DATA after the client's END_STREAM, or
                   after its own RST_STREAM (in one write with the
                   HEADERS), is a connection error STREAM_CLOSED.
  client GOAWAY    the client's GOAWAY after a served stream gets the
                   proxy's GOAWAY NO_ERROR naming it, then EOF.
  refused heads    a head whose last field crosses max_header_size,
                   across HEADERS and CONTINUATION frames, is answered
                   431, and with the request ended no RST_STREAM
                   follows; one that goes on past it is reset; a Host
                   field naming another authority than :authority is
                   RST_STREAM PROTOCOL_ERROR (RFC 9113 8.3.1) and never
                   reaches the origin; one equal but for case or the
                   default port is no error; a :path that is an absolute
                   URI (:scheme ftp, which nghttp2 does not check) is
                   RST_STREAM PROTOCOL_ERROR and never reaches the
                   origin.
  concurrency      110 streams at once, with MAX_CONCURRENT_STREAMS 100:
                   the 10 extra are refused (RST_STREAM REFUSED_STREAM or
                   PROTOCOL_ERROR, RFC 9113 5.1.2), the first 100 are
                   served; before and after the client acknowledged the
                   proxy's SETTINGS.

Needs python3-h2 (Debian's, in /usr/lib/python3/dist-packages, looked for
there when the running Python does not have it: need "h2") and a portico
built with libnghttp2 (need "http2"). By hand, some of the attacks only:
  python3 t/integ/h2_attacks.py rapid_reset zero_window
"""
import os
import select
import signal
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import hostiletest as X  # noqa: E402

# Debian's python3-h2 lives where Debian's python3 looks; the test runner
# may be another Python (pyenv's) that does not see it.
try:
    import h2  # noqa: F401
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
try:
    import h2.config  # noqa: E402
    import h2.connection  # noqa: E402
    import h2.events  # noqa: E402
    import hpack.hpack  # noqa: E402
    import hyperframe.frame as HF  # noqa: E402
    NO_H2 = None
except ImportError as ex:
    NO_H2 = "python3-h2 not importable: %s" % ex

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# The floods allocate and free a block per frame: AddressSanitizer's
# quarantine (256 MB by default) would keep them all, and a memory bound
# would measure it. A small one leaves the bounds about portico.
ASAN_ENV = {"ASAN_OPTIONS": "abort_on_error=0:quarantine_size_mb=4"}
IDLE_TIMEOUT = 30
ZW_IDLE_TIMEOUT = 2         # the zero-window proxy's limits.idle_timeout
MAX_STREAMS = 100           # portico's SETTINGS_MAX_CONCURRENT_STREAMS

# RFC 9113 7, by code
ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR",
          3: "FLOW_CONTROL_ERROR", 4: "SETTINGS_TIMEOUT", 5: "STREAM_CLOSED",
          6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL",
          9: "COMPRESSION_ERROR", 10: "CONNECT_ERROR",
          11: "ENHANCE_YOUR_CALM", 12: "INADEQUATE_SECURITY",
          13: "HTTP_1_1_REQUIRED"}
S_HEADER_TABLE_SIZE, S_MAX_CONCURRENT_STREAMS, S_INITIAL_WINDOW_SIZE = 1, 3, 4


def ename(code):
    return ERRORS.get(code, "0x%x" % code) if code is not None else "-"


class Env:
    pass


# ---------------------------------------------------------------------------
# a client that breaks the rules

def hint(n, prefix):
    """An HPACK integer (RFC 7541 5.1) with a <prefix>-bit prefix."""
    return bytes(hpack.hpack.encode_integer(n, prefix))


def plain_block(fields):
    """A header block of literal fields without indexing (RFC 7541 6.2.2),
    no Huffman: it leaves the dynamic tables alone, so blocks built here
    and there never disagree about them."""
    out = bytearray()
    for n, v in fields:
        n = n.encode() if isinstance(n, str) else n
        v = v.encode() if isinstance(v, str) else v
        out += b"\x00" + hint(len(n), 7) + n + hint(len(v), 7) + v
    return bytes(out)


def request_fields(authority, path, method="GET"):
    return [(":method", method), (":scheme", "http"),
            (":authority", authority), (":path", path)]


def headers_frame(sid, block, end_stream=True, end_headers=True):
    f = HF.HeadersFrame(sid)
    f.data = block
    if end_stream:
        f.flags.add("END_STREAM")
    if end_headers:
        f.flags.add("END_HEADERS")
    return f.serialize()


def continuation_frame(sid, block, end_headers=False):
    f = HF.ContinuationFrame(sid)
    f.data = block
    if end_headers:
        f.flags.add("END_HEADERS")
    return f.serialize()


def rst_frame(sid, code=8):
    return HF.RstStreamFrame(sid, error_code=code).serialize()


def data_frame(sid, data, end_stream=False):
    f = HF.DataFrame(sid, data=data)
    if end_stream:
        f.flags.add("END_STREAM")
    return f.serialize()


def settings_frame(settings=None, ack=False):
    f = HF.SettingsFrame(0, settings=settings or {})
    if ack:
        f = HF.SettingsFrame(0)
        f.flags.add("ACK")
    return f.serialize()


def raw_frame(ftype, flags, sid, payload):
    """A frame header written by hand: any stream id, the reserved bit
    included, which hyperframe will not write."""
    n = len(payload)
    return struct.pack(">BHBBL", n >> 16, n & 0xffff, ftype, flags,
                       sid) + payload


class Raw:
    """A hand-driven HTTP/2 client connection to portico: the preface and
    a SETTINGS frame (<settings>), then what the scenario sends. poll()
    reads and parses what the proxy sent: its SETTINGS (acknowledged when
    <ack>), per stream the final :status, DATA bytes, END_STREAM and
    RST_STREAM code, and the GOAWAY; <end> says how the socket ended
    ('eof', 'reset', ...), None while open."""

    def __init__(self, port, settings=None, ack=True, timeout=10.0,
                 pids=None):
        self.sock = ptest.connect(port, timeout=timeout)
        self.port = port
        self.cport = self.sock.getsockname()[1]
        if pids:
            # Not before a worker took the connection and found nothing
            # to read: a preface in its first read leaves the socket
            # out of epoll (first_read()), and the attack would meet
            # that bug instead of the guard it is meant for.
            ptest.wait_for(lambda: ptest.owner_of(self.sock, port, pids),
                           ptest.bound(2), interval=0.005)
            time.sleep(0.02)
        self.ack = ack
        self.dec = hpack.Decoder()
        self.dec.max_header_list_size = 1 << 20
        self.buf = bytearray()
        self.hb = None              # (stream, header block so far)
        self.server_settings = None
        self.goaway = None          # (error code, last stream id, debug)
        self.rst = {}               # stream: error code
        self.status = {}            # stream: final status (str)
        self.data = {}              # stream: DATA bytes
        self.ended = set()          # streams the proxy ended
        self.counts = {}            # frame type name: count
        self.end = None
        self.end_t = None
        self.send_error = None
        self.send(PREFACE + settings_frame(settings))

    def send(self, data):
        """sendall; False (and send_error set) once the socket fails."""
        try:
            self.sock.sendall(data)
            return True
        except OSError as e:
            self.send_error = ptest.err_kind(e)
            return False

    def poll(self, timeout=0.0):
        """One read (waiting up to <timeout>), parsed. False once ended."""
        if self.end is not None:
            return False
        try:
            r, _, _ = select.select([self.sock], [], [], timeout)
        except (OSError, ValueError):
            r = [self.sock]
        if not r:
            return True
        try:
            d = self.sock.recv(1 << 16)
        except socket.timeout:
            return True
        except OSError as e:
            self._ended(ptest.err_kind(e))
            return False
        if not d:
            self._ended("eof")
            return False
        self.buf += d
        self._parse()
        return True

    def _ended(self, how):
        self.end = how
        self.end_t = time.monotonic()

    def until(self, pred, timeout):
        """Reads until pred() is true or the connection ended or <timeout>
        passed. Returns pred()."""
        deadline = time.monotonic() + timeout
        while not pred() and time.monotonic() < deadline:
            if not self.poll(min(0.1, max(0.0, deadline -
                                          time.monotonic()))):
                break
        return pred()

    def settled(self, timeout):
        """Waits for the proxy's SETTINGS (acknowledged when <ack>)."""
        return self.until(lambda: self.server_settings is not None, timeout)

    def wait_end(self, timeout):
        """Reads until the proxy ends the connection: its end, or None."""
        self.until(lambda: self.end is not None, timeout)
        return self.end

    def _parse(self):
        while len(self.buf) >= 9:
            f, length = HF.Frame.parse_frame_header(memoryview(self.buf[:9]))
            if len(self.buf) < 9 + length:
                break
            body = bytes(self.buf[9:9 + length])
            del self.buf[:9 + length]
            f.parse_body(memoryview(body))
            self._on(f)

    def _on(self, f):
        name = type(f).__name__.replace("Frame", "")
        self.counts[name] = self.counts.get(name, 0) + 1
        sid = f.stream_id
        if isinstance(f, HF.SettingsFrame):
            if "ACK" not in f.flags:
                self.server_settings = dict(f.settings)
                if self.ack:
                    self.send(settings_frame(ack=True))
        elif isinstance(f, HF.GoAwayFrame):
            self.goaway = (f.error_code, f.last_stream_id,
                           bytes(f.additional_data))
        elif isinstance(f, HF.RstStreamFrame):
            self.rst[sid] = f.error_code
        elif isinstance(f, (HF.HeadersFrame, HF.ContinuationFrame)):
            if isinstance(f, HF.HeadersFrame):
                self.hb = (sid, bytearray(f.data))
                if "END_STREAM" in f.flags:
                    self.ended.add(sid)
            elif self.hb is not None:
                self.hb[1].extend(f.data)
            if "END_HEADERS" in f.flags and self.hb is not None:
                for k, v in self.dec.decode(bytes(self.hb[1]), raw=True):
                    if k == b":status" and not v.startswith(b"1"):
                        self.status[self.hb[0]] = v.decode()
                self.hb = None
        elif isinstance(f, HF.DataFrame):
            self.data[sid] = self.data.get(sid, 0) + len(f.data)
            if "END_STREAM" in f.flags:
                self.ended.add(sid)

    def done(self, sid):
        """The proxy ended stream <sid> (END_STREAM or RST_STREAM)."""
        return sid in self.ended or sid in self.rst

    def outcome(self, sid):
        """What stream <sid> got, in words."""
        return "status %s, %d bytes, ended %s, rst %s; goaway %s; end %s" % (
            self.status.get(sid), self.data.get(sid, 0), sid in self.ended,
            ename(self.rst.get(sid)), self.goaway_text(), self.end)

    def goaway_text(self):
        if self.goaway is None:
            return "none"
        return "%s last %d %r" % (ename(self.goaway[0]), self.goaway[1],
                                  self.goaway[2][:60])

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def raw(t, port, p, **kw):
    """A Raw client of <port>, once a worker of Portico <p> took it."""
    r = Raw(port, pids=list(p.workers().values()), **kw)
    t.at_exit(r.close)
    return r


# ---------------------------------------------------------------------------
# clients that keep the rules

def h2_get(port, authority, path, timeout=None):
    """One GET through the proxy with python3-h2: (status, body bytes)
    or (None, why)."""
    timeout = timeout or ptest.bound(10)
    try:
        s = ptest.connect(port, timeout=timeout)
    except OSError as e:
        return None, "connect: %s" % ptest.err_kind(e)
    try:
        c = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding=None))
        c.initiate_connection()
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, [(k.encode(), v.encode()) for k, v in
                             request_fields(authority, path)],
                       end_stream=True)
        s.sendall(c.data_to_send())
        status, n = None, 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            d = s.recv(65536)
            if not d:
                return None, "eof after status %s, %d bytes" % (status, n)
            for ev in c.receive_data(d):
                if isinstance(ev, h2.events.ResponseReceived):
                    status = int(dict(ev.headers)[b":status"])
                elif isinstance(ev, h2.events.DataReceived):
                    n += len(ev.data)
                    c.acknowledge_received_data(ev.flow_controlled_length,
                                                ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    return status, n
                elif isinstance(ev, h2.events.StreamReset):
                    return None, "reset %s" % ename(ev.error_code)
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    return None, "goaway %s" % ename(ev.error_code)
            s.sendall(c.data_to_send())
        return None, "timeout after status %s, %d bytes" % (status, n)
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()


def served_after(t, p, o, port, label, workers):
    """After an attack: the same worker, a fresh HTTP/2 client and an
    HTTP/1.1 client through curl -x are served."""
    w = p.workers()
    t.check(w == workers, "%s: afterwards the same worker runs (no crash, "
            "no respawn)" % label, lambda: ["before %s, now %s" % (
                workers, w)] + ptest.tail(p.log(), 20))
    st, n = h2_get(port, o.address, "/len?n=4096&fresh=h2")
    t.check(st == 200 and n == 4096, "%s: afterwards a fresh HTTP/2 client "
            "gets 200 and its 4096 bytes" % label, "got %s %s" % (st, n))
    if not H.have_curl():
        t.skip("%s: afterwards curl -x is served" % label,
               "no curl program", need="curl")
        return
    r = H.curl(["-o", "-", "-w", "\n%{http_code}", "-x",
                "http://127.0.0.1:%d" % port,
                o.url + "/len?n=4096&fresh=curl"])
    out = r.stdout.rsplit(b"\n", 1)
    ok = r.returncode == 0 and len(out) == 2 and out[1] == b"200" and \
        len(out[0]) == 4096
    t.check(ok, "%s: afterwards an HTTP/1.1 client (curl -x) gets 200 and "
            "its 4096 bytes" % label, "rc %s, %r, stderr %s" % (
                r.returncode, r.stdout[-40:], r.stderr[-300:]))


def judged(t, e, w, label, cpu_max=0.7, mem_kib=4096, extra=None):
    w.end()
    w.judge(cpu_max=cpu_max, mem_kib=X.mem(mem_kib))
    w.recover(X.fresh_get(e.port, e.o), extra=extra)
    served_after(t, e.p, e.o, e.port, label, e.w0)


# ---------------------------------------------------------------------------
# the attacks

def first_read(t, e):
    """A client whose preface and SETTINGS were already there when the
    worker accepted it (the worker paused a moment, SIGSTOP by pid, so it
    is so every time), and who sends its request after the proxy's
    SETTINGS, as a client that waits for them does: served."""
    lab = "preface in the first read"
    wpid = list(e.p.workers().values())[0]
    got = []
    for i in range(3):
        os.kill(wpid, signal.SIGSTOP)
        try:
            r = Raw(e.port)
            t.at_exit(r.close)
            time.sleep(0.1)
        finally:
            os.kill(wpid, signal.SIGCONT)
        r.settled(ptest.bound(5))
        r.send(headers_frame(1, plain_block(request_fields(
            e.o.address, "/len?n=100&first=%d" % i))))
        r.until(lambda: r.done(1), ptest.bound(5))
        got.append(r.outcome(1))
        ok = r.status.get(1) == "200" and r.data.get(1) == 100
        r.close()
        if not ok:
            break
    t.check(ok, "%s: a client whose preface the worker read at accept, "
            "and whose request came after the SETTINGS, is served (3 of "
            "3)" % lab, lambda: got + ["origin saw %d of them" % len(
                e.o.reqs_for("first="))] + ptest.tail(e.p.log(), 5))


def rapid_reset(t, e):
    lab = "rapid reset"
    w = X.Watch(t, e.p, e.canary, e.base, lab)
    pairs = 20000
    tag = "rr=1"
    req0 = len(e.o.reqs_for(tag))
    block = plain_block(request_fields(e.o.address, "/len?n=10&" + tag))

    def attack():
        """One connection: pairs until the proxy ends it (20,000 or 10 s
        at most). (Raw, pairs written, last stream written, seconds)."""
        r = raw(t, e.port, e.p)
        r.settled(ptest.bound(5))
        sent, sid, t0 = 0, 1, time.monotonic()
        while sent < pairs and time.monotonic() - t0 < 10:
            out = bytearray()
            for _ in range(100):
                out += headers_frame(sid, block) + rst_frame(sid)
                sid += 2
            if not r.send(bytes(out)):
                break
            sent += 100
            r.poll(0)
            if r.goaway is not None or r.end is not None:
                break
        took = time.monotonic() - t0
        r.wait_end(ptest.bound(5))
        r.close()
        return r, sent, sid - 2, took
    r, sent, last_sid, took = attack()
    t.diag("%s: %d pairs written in %.2f s (last stream %d); GOAWAY %s; "
           "send error %s; the connection %s" % (
               lab, sent, took, last_sid, r.goaway_text(), r.send_error,
               r.end))
    t.check(r.end in ("eof", "reset"), "%s: the proxy closes the "
            "connection" % lab, "end %s, goaway %s" % (r.end,
                                                        r.goaway_text()))
    # What the proxy took: the GOAWAY's last stream, or, without one,
    # what the client could write before the close.
    t.check((r.goaway is not None and r.goaway[1] < last_sid) or
            (r.goaway is None and sent < pairs),
            "%s: it ends it before the last of the %d pairs (GOAWAY %s; "
            "%d written)" % (lab, pairs, r.goaway_text(), sent),
            "last stream written %d" % last_sid)
    # The same on new connections for the rest of the window: the
    # canary is measured throughout.
    conns, ended, total = 1, int(r.end in ("eof", "reset")), sent
    codes = set([ename(r.goaway[0])] if r.goaway else [])
    while time.monotonic() - w.t0 < X.window(3.0) and conns < 100:
        r, sent, _, _ = attack()
        conns += 1
        ended += r.end in ("eof", "reset")
        total += sent
        codes |= set([ename(r.goaway[0])] if r.goaway else [])
    reqs = e.o.reqs_for(tag)[req0:]
    oconns = len(set(q["conn"] for q in reqs))
    t.diag("%s: %d connections, %d pairs written in all; GOAWAY codes %s; "
           "origin: %d of the requests, on %d connections" % (
               lab, conns, total, sorted(codes), len(reqs), oconns))
    t.check(ended == conns, "%s: the proxy closes each of the %d attacking "
            "connections" % (lab, conns), "%d closed" % ended)
    t.check(len(reqs) < 200 and oconns < 200, "%s: the origin saw fewer "
            "than 200 of the requests, on fewer than 200 connections"
            % lab, "%d requests, %d connections" % (len(reqs), oconns))
    judged(t, e, w, lab)


def continuation(t, e):
    lab = "CONTINUATION"
    w = X.Watch(t, e.p, e.canary, e.base, lab)
    tag = "cont=1"
    req0 = len(e.o.reqs_for(tag))
    head = plain_block(request_fields(e.o.address, "/len?n=10&" + tag))
    piece = plain_block([("x-c", "c" * 16)])
    # Paced: one frame, then a look, so the count is the proxy's.
    r = raw(t, e.port, e.p)
    r.settled(ptest.bound(5))
    r.send(headers_frame(1, head, end_headers=False))
    n = 0
    while n < 64 and r.end is None and r.goaway is None:
        if not r.send(continuation_frame(1, piece)):
            break
        n += 1
        r.poll(ptest.bound(0.05))
    r.wait_end(ptest.bound(5))
    t.diag("%s: paced, %d frames sent; GOAWAY %s, connection %s" % (
        lab, n, r.goaway_text(), r.end))
    t.check(r.end in ("eof", "reset") and n <= 16, "%s: paced one at a "
            "time, the proxy ends the connection after at most 16 frames"
            % lab, "%d sent; goaway %s, end %s" % (n, r.goaway_text(),
                                                   r.end))
    r.close()
    # A flood: frames in a tight loop (bounded: 200,000 or 10 s a
    # connection), on new connections for the rest of the window.
    batch = continuation_frame(1, piece) * 1000
    conns = ended = frames = 0
    while conns < 1 or (time.monotonic() - w.t0 < X.window(3.0) and
                        conns < 100):
        r = raw(t, e.port, e.p)
        r.settled(ptest.bound(5))
        r.send(headers_frame(1, head, end_headers=False))
        n, t0 = 0, time.monotonic()
        while n < 200000 and time.monotonic() - t0 < 10:
            if not r.send(batch):
                break
            n += 1000
            r.poll(0)
            if r.end is not None:
                break
        r.wait_end(ptest.bound(5))
        conns += 1
        ended += r.end in ("eof", "reset")
        frames += n
        r.close()
    t.diag("%s: flood, %d connections, %d frames written in all; the last "
           "one: GOAWAY %s, end %s, send error %s" % (
               lab, conns, frames, r.goaway_text(), r.end, r.send_error))
    t.check(ended == conns, "%s: a flood of them: the proxy closes each "
            "of the %d connections" % (lab, conns), "%d closed" % ended)
    t.check(len(e.o.reqs_for(tag)) == req0, "%s: no request reached the "
            "origin" % lab, "%d did" % (len(e.o.reqs_for(tag)) - req0))
    judged(t, e, w, lab)


BOMB_ENTRY = 4000           # bytes of the entry's value
BOMB_MS = 20                # worker CPU a bomb may cost, ms
BOMB_PAUSE = 0.02           # s between the window's bombs


def hpack_bomb(t, e):
    lab = "HPACK bomb"
    w = X.Watch(t, e.p, e.canary, e.base, lab)
    wpid = w.pids[0]
    tag = "bomb=1"
    req0 = len(e.o.reqs_for(tag))
    per, conts = 16384, 3

    def bomb(r, sid, first):
        """One header block: the pseudo-fields, with <first> the entry
        (4,000 bytes + 6 + 32 of overhead: the 4,096 bytes of the default
        table, so dynamic index 62, RFC 7541 2.3.3) added with
        incremental indexing, then one-byte references to it, in a
        HEADERS and 3 CONTINUATION frames of 16 KiB (nghttp2 takes 8).
        Returns the references."""
        b = plain_block(request_fields(e.o.address, "/len?n=10&" + tag))
        if first:
            b += b"\x40" + hint(6, 7) + b"x-bomb" + hint(BOMB_ENTRY, 7) + \
                b"b" * BOMB_ENTRY
        ref = b"\xbe"
        out = headers_frame(sid, b + ref * (per - len(b)),
                            end_headers=False)
        for i in range(conts):
            out += continuation_frame(sid, ref * per,
                                      end_headers=(i == conts - 1))
        r.send(out)
        return per - len(b) + conts * per

    def how(r, sid):
        return ("status %s" % r.status[sid] if sid in r.status else
                "RST_STREAM %s" % ename(r.rst[sid]) if sid in r.rst else
                "GOAWAY %s" % ename(r.goaway[0]) if r.goaway is not None
                else "the close (%s)" % r.end if r.end else "nothing")
    r = raw(t, e.port, e.p)
    r.settled(ptest.bound(5))
    cpu0 = ptest.cpu_seconds(wpid)
    refs = bomb(r, 1, True)
    r.until(lambda: r.done(1) or r.goaway is not None, ptest.bound(10))
    cpu1 = ptest.cpu_seconds(wpid) - cpu0
    t.diag("%s: %d references to a %d-byte entry (%d MB decoded) in %d "
           "KiB of header block: %s; worker CPU %.0f ms" % (
               lab, refs, BOMB_ENTRY + 38, refs * (BOMB_ENTRY + 38) >> 20,
               (per * (conts + 1)) >> 10, how(r, 1), cpu1 * 1000))
    t.check(r.status.get(1) == "431" or 1 in r.rst or
            r.goaway is not None, "%s: the stream is refused: %s (431, "
            "RST_STREAM or GOAWAY)" % (lab, how(r, 1)), r.outcome(1))
    kept = r.goaway is None and r.end is None
    if kept:
        # The connection is kept: its HPACK state must still be right.
        r.send(headers_frame(3, plain_block(request_fields(
            e.o.address, "/len?n=1024&after=bomb"))))
        r.until(lambda: r.done(3), ptest.bound(10))
        t.check(r.status.get(3) == "200" and r.data.get(3) == 1024 and
                3 in r.ended, "%s: the connection is kept and a normal "
                "stream on it is served" % lab, r.outcome(3))
    else:
        t.diag("%s: the connection was ended (%s, %s): no stream after"
               % (lab, r.goaway_text(), r.end))
    # More of them for the window, one at a time (each answered before
    # the next) with a pause of BOMB_PAUSE between, on this connection
    # while it lasts: back to back, the window would be a tenth of a
    # second and all theirs, and its CPU share would judge nothing.
    bombs, cpu0, sid, hows = 0, ptest.cpu_seconds(wpid), 5, set()
    while time.monotonic() - w.t0 < X.window(3.0) and bombs < 300:
        if bombs > 0:
            time.sleep(BOMB_PAUSE)
        if r.end is not None or r.goaway is not None:
            r.close()
            r = raw(t, e.port, e.p)
            r.settled(ptest.bound(5))
            sid, first = 1, True
        else:
            first = False
        bomb(r, sid, first)
        r.until(lambda: r.done(sid) or r.goaway is not None,
                ptest.bound(10))
        hows.add(how(r, sid))
        bombs += 1
        sid += 2
    cpu = ptest.cpu_seconds(wpid) - cpu0
    r.close()
    t.diag("%s: %d more bombs in %.1f s: %s; worker CPU %.2f s (%.0f ms a "
           "bomb)" % (lab, bombs, time.monotonic() - w.t0, sorted(hows),
                      cpu, 1000 * cpu / max(1, bombs)))
    t.check(hows <= {"status 431"} | {"RST_STREAM %s" % ename(c) for c in
                                       range(14)} |
            {"GOAWAY %s" % ename(c) for c in range(14)},
            "%s: each of %d more is refused too" % (lab, bombs),
            str(sorted(hows)))
    # A head past max_header_size is refused at its first bytes over;
    # what follows is only decoded: 64 KiB of references cost what 64
    # KiB of any frames cost, not the 240 MB they stand for.
    cap = BOMB_MS * (3 if ptest.SANITIZERS else 1)
    t.check(bombs > 0 and cpu * 1000 / bombs < cap, "%s: a bomb costs the "
            "worker < %d ms of CPU" % (lab, cap), "%.0f ms a bomb over %d"
            % (1000 * cpu / max(1, bombs), bombs))
    t.check(len(e.o.reqs_for(tag)) == req0, "%s: no request reached the "
            "origin" % lab, "%d did" % (len(e.o.reqs_for(tag)) - req0))
    judged(t, e, w, lab)


def ack_flood(t, e, kind):
    """<kind> 'SETTINGS' or 'PING': clients that flood them and never
    read."""
    lab = "%s flood" % kind
    w = X.Watch(t, e.p, e.canary, e.base, lab)
    if kind == "SETTINGS":
        one = settings_frame()
    else:
        one = HF.PingFrame(0, opaque_data=b"floodme!").serialize()
    batch = one * 2000
    conns = closed_n = frames = 0
    first = None
    while conns < 1 or (time.monotonic() - w.t0 < X.window(3.0) and
                        conns < 100):
        r = raw(t, e.port, e.p, ack=False)
        r.sock.settimeout(0.5)
        n, t0 = 0, time.monotonic()
        while n < 400000 and time.monotonic() - t0 < 5:
            if not r.send(batch):
                break
            n += 2000
        r.sock.settimeout(ptest.bound(10))
        # Not read: the proxy's end of it is seen in the kernel's table.
        closed = ptest.wait_server_closed(e.port, [r.cport],
                                          ptest.bound(5))
        conns += 1
        closed_n += bool(closed)
        frames += n
        if first is None:
            t.diag("%s: %d frames written in %.2f s, unread; send error "
                   "%s; closed by the proxy: %s" % (
                       lab, n, time.monotonic() - t0, r.send_error,
                       closed))
            # What it said (now read): ACKs, a GOAWAY maybe.
            r.wait_end(ptest.bound(5))
            first = "read afterwards: %s; GOAWAY %s; end %s" % (
                r.counts, r.goaway_text(), r.end)
            t.diag("%s: %s" % (lab, first))
        r.close()
    t.diag("%s: %d connections, %d frames in all" % (lab, conns, frames))
    t.check(closed_n == conns, "%s: the proxy closes each of %d "
            "connections that flood %s and read no ACK" % (
                lab, conns, kind), "%d closed; the first: %s" % (
                    closed_n, first))
    judged(t, e, w, lab)


def settings_flood(t, e):
    ack_flood(t, e, "SETTINGS")


def ping_flood(t, e):
    ack_flood(t, e, "PING")


def empty_data(t, e):
    lab = "empty DATA flood"
    # Within the run the proxy allows (H2_EMPTY_RUN_MAX, 32): two runs of
    # 32 empty frames, a frame with a payload between, and the body is
    # whole at the origin.
    r = raw(t, e.port, e.p)
    r.settled(ptest.bound(5))
    tag = "empty=within"
    r.send(headers_frame(1, plain_block(request_fields(
        e.o.address, "/echo?" + tag, method="POST")), end_stream=False) +
        data_frame(1, b"first") + data_frame(1, b"") * 32 +
        data_frame(1, b"mid") + data_frame(1, b"") * 32 +
        data_frame(1, b"last", end_stream=True))
    r.until(lambda: r.done(1) or r.goaway is not None, ptest.bound(10))
    t.check(r.status.get(1) == "200" and 1 in r.ended and r.goaway is None,
            "%s: runs of 32 empty DATA frames are let be: 200 from the "
            "origin, no GOAWAY" % lab, lambda: [r.outcome(1),
                                                 r.goaway_text()])
    reqs = e.o.reqs_for(tag)
    t.check(len(reqs) == 1 and reqs[0]["body_len"] == 12,
            "%s: the origin got the 12 bytes of body, once" % lab,
            ["%s %s" % (q["target"], q["body_len"]) for q in reqs])
    r.close()

    # The flood: the 33rd empty frame in a row ends the connection. It
    # ends so soon that it is repeated on new connections for the
    # window, as the module comment says.
    # Every other connection floods DATA frames that are all padding.
    w = X.Watch(t, e.p, e.canary, e.base, lab)
    padded = HF.DataFrame(1, data=b"", pad_length=4)
    padded.flags.add("PADDED")
    batches = (data_frame(1, b"") * 10000, padded.serialize() * 10000)
    conns, frames, calm, first = 0, 0, 0, None
    t0 = time.monotonic()
    while conns < 500 and time.monotonic() - t0 < X.window(3.0):
        r = raw(t, e.port, e.p)
        r.settled(ptest.bound(5))
        r.send(headers_frame(1, plain_block(request_fields(
            e.o.address, "/echo?empty=flood", method="POST")),
            end_stream=False) + data_frame(1, b"first"))
        n = 0
        while n < 1000000 and r.end is None and r.send(
                batches[conns % 2]):
            n += 10000
            r.poll(0)
        r.until(lambda: r.end is not None, ptest.bound(5))
        conns, frames = conns + 1, frames + n
        ok = (r.goaway is not None and r.end is not None and
              ename(r.goaway[0]) == "ENHANCE_YOUR_CALM")
        calm += ok
        if first is None or not ok:
            first = "%d empty frames written; GOAWAY %s; end %s; send " \
                "error %s" % (n, r.goaway_text(), r.end, r.send_error)
        r.close()
    t.diag("%s: %d connections, %d empty DATA frames written in all; the "
           "first (or the last not ended): %s" % (lab, conns, frames, first))
    t.check(conns > 0 and calm == conns, "%s: the proxy ends each of %d "
            "flooding connections: GOAWAY ENHANCE_YOUR_CALM, then the "
            "close" % (lab, conns), "%d ended so; %s" % (calm, first))
    judged(t, e, w, lab)


def zero_window(t, e):
    lab = "zero window"
    p, port = e.zp, e.zport
    wpid = list(p.workers().values())[0]
    size = 10 * ptest.MiB
    # The control: a client that gives the window back as it reads gets
    # the whole body, so what the one below gets is flow control's doing.
    t0 = time.monotonic()
    st, n = h2_get(port, e.o.address, "/len?n=%d&zw=0" % size,
                   timeout=ptest.bound(20))
    t.check(st == 200 and n == size, "%s: a client that sends "
            "WINDOW_UPDATE as it reads gets the whole 10 MiB" % lab,
            "got %s %s after %.1f s" % (st, n, time.monotonic() - t0))
    act0 = e.o.active
    pss0 = ptest.pss_kib(wpid)
    r = raw(t, port, p)
    r.settled(ptest.bound(5))
    t0 = time.monotonic()
    r.send(headers_frame(1, plain_block(request_fields(
        e.o.address, "/len?n=%d&zw=1" % size))))
    # the client's windows (65,535 each) are spent, then nothing
    r.until(lambda: r.data.get(1, 0) >= 65535 or r.done(1),
            ptest.bound(10))
    peak = [pss0]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.05):
            v = ptest.pss_kib(wpid)
            if v is not None and v > peak[0]:
                peak[0] = v
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t.at_exit(stop.set)
    got_at_stall = r.data.get(1, 0)
    r.until(lambda: r.done(1), ptest.bound(ZW_IDLE_TIMEOUT + 5))
    t_rst = time.monotonic() - t0
    r.wait_end(ptest.bound(ZW_IDLE_TIMEOUT + 5))
    t_end = time.monotonic() - t0
    stop.set()
    th.join(1)
    grew = (peak[0] or 0) - (pss0 or 0)
    t.diag("%s: %d bytes of %d received before the stall; stream: %s at "
           "%.1f s; connection ended %s at %.1f s; worker PSS %s -> peak "
           "%s KiB" % (lab, got_at_stall, size, r.outcome(1), t_rst,
                       r.end, t_end, pss0, peak[0]))
    t.check(0 < r.data.get(1, 0) <= 65535, "%s: no more than the client's "
            "window (65,535 bytes) is sent" % lab, r.outcome(1))
    t.check(grew < X.mem(4096), "%s: the worker's memory does not grow by "
            "the body (PSS growth %d KiB < %d KiB with a 10 MiB body "
            "waiting)" % (lab, grew, X.mem(4096)))
    bound_s = ptest.bound(ZW_IDLE_TIMEOUT + 3)
    t.check(1 in r.rst and 1 not in r.ended and t_rst < bound_s,
            "%s: with idle_timeout = %d the stream is reset within %.0f s"
            % (lab, ZW_IDLE_TIMEOUT, bound_s), "%s at %.1f s" % (
                r.outcome(1), t_rst))
    t.check(r.end in ("eof", "reset") and t_end < t_rst + bound_s,
            "%s: then the connection is closed, within %.0f s more" % (
                lab, bound_s), "end %s at %.1f s" % (r.end, t_end))
    gone = ptest.wait_for(lambda: e.o.active <= act0, ptest.bound(5))
    t.check(gone, "%s: the origin's connection for it is closed" % lab,
            "origin active %d, before %d" % (e.o.active, act0))
    r.close()
    served_after(t, p, e.o, port, lab, e.zw0)


def stream_ids(t, e):
    lab = "stream IDs"
    w = X.Watch(t, e.p, e.canary, e.base, lab)

    def one(sub, first, again, tag, raw_again=None, pre=b""):
        """<pre>, then a GET on stream <first>, served; then HEADERS for
        stream <again>: a connection error, nothing reaches the
        origin."""
        r = raw(t, e.port, e.p)
        r.settled(ptest.bound(5))
        r.send(pre + headers_frame(first, plain_block(request_fields(
            e.o.address, "/len?n=100&%s=1" % tag))))
        r.until(lambda: r.done(first), ptest.bound(10))
        ok1 = r.status.get(first) == "200" and r.data.get(first) == 100
        t.check(ok1, "%s: %s: stream %d is served" % (lab, sub, first),
                r.outcome(first))
        req0 = len(e.o.reqs_for("%s=2" % tag))
        r.send(raw_again if raw_again is not None else
               headers_frame(again, plain_block(request_fields(
                   e.o.address, "/len?n=100&%s=2" % tag))))
        r.until(lambda: r.goaway is not None or r.done(again),
                ptest.bound(3))
        r.wait_end(ptest.bound(2))
        t.diag("%s: %s: then stream %d: %s" % (lab, sub, again,
                                                r.outcome(again)))
        t.check(r.goaway is not None and r.goaway[0] in (1, 5) and
                r.end in ("eof", "reset"),
                "%s: %s: a connection error (GOAWAY PROTOCOL_ERROR or "
                "STREAM_CLOSED, then the close)" % (lab, sub),
                r.outcome(again))
        t.check(len(e.o.reqs_for("%s=2" % tag)) == req0,
                "%s: %s: it never reaches the origin" % (lab, sub),
                "%d did" % (len(e.o.reqs_for("%s=2" % tag)) - req0))
        r.close()
    one("a closed stream's id again", 1, 1, "reuse")
    one("a lower stream id than the last", 5, 3, "back")
    # a PRIORITY frame makes stream 1 an idle stream nghttp2 holds; the
    # HEADERS that would open it after 3 is still a lower ID (5.1.1)
    one("a lower stream id that a PRIORITY named", 3, 1, "prio",
        pre=raw_frame(0x2, 0, 1, struct.pack(">LB", 0, 15)))
    top = (1 << 31) - 1
    one("stream 2^31-1, then another", top, 1, "top")
    # the same, the next id written with the reserved bit (2^31 + 1)
    again = raw_frame(1, 0x5, (1 << 31) | 1, plain_block(request_fields(
        e.o.address, "/len?n=100&topr=2")))
    one("stream 2^31-1, then 2^31+1 (the reserved bit)", top, 1, "topr",
        raw_again=again)
    time.sleep(max(0.0, w.t0 + X.window(1.5, 1.0) - time.monotonic()))
    judged(t, e, w, lab)


def raw_served(t, e, sid, tag):
    """A Raw client whose GET on stream <sid> (/len?n=100&<tag>) the
    proxy answered, or gave up on."""
    r = raw(t, e.port, e.p)
    r.settled(ptest.bound(5))
    r.send(headers_frame(sid, plain_block(request_fields(
        e.o.address, "/len?n=100&" + tag))))
    r.until(lambda: r.done(sid), ptest.bound(10))
    return r


def ends_in(t, r, code, desc):
    """Reads Raw <r> to its end and checks a GOAWAY <code>, then EOF or a
    reset (stream 1's outcome in the details); closes it."""
    r.wait_end(ptest.bound(5))
    t.check(r.goaway is not None and r.goaway[0] == code and
            r.end in ("eof", "reset"), desc, r.outcome(1))
    r.close()


def closed_streams(t, e):
    """Frames the client sends on streams already closed (RFC 9113 5.1),
    which nghttp2 no longer holds: worker/h2_ids.c judges them."""
    lab = "closed streams"
    refused = ptest.free_port()
    trailers = plain_block([("x-trailer", "1")])

    # Crossing our RST_STREAM: ignored, the connection goes on.
    r = raw(t, e.port, e.p)
    r.settled(ptest.bound(5))
    # (a first DATA frame: without content-length the head waits to
    # learn whether a body follows)
    r.send(headers_frame(1, plain_block(request_fields(
        "127.0.0.1:%d" % refused, "/upload?cross=1", "POST")),
        end_stream=False) + data_frame(1, b"y" * 100))
    r.until(lambda: 1 in r.rst or r.end is not None, ptest.bound(10))
    t.check(r.status.get(1, "")[:1] == "5" and r.rst.get(1) == 0,
            "%s: a POST whose target refuses, body still coming: a 5xx "
            "and RST_STREAM NO_ERROR (RFC 9113 8.1)" % lab, r.outcome(1))
    r.send(data_frame(1, b"x" * 1000) +
           headers_frame(1, trailers, end_stream=True) +
           headers_frame(3, plain_block(request_fields(
               e.o.address, "/len?n=100&cross=3"))))
    r.until(lambda: r.done(3) or r.goaway is not None, ptest.bound(10))
    t.check(r.goaway is None and r.status.get(3) == "200" and
            r.data.get(3) == 100 and r.end is None,
            "%s: DATA and trailers the client sent on it after our "
            "RST_STREAM are ignored (5.1): the next stream is served, "
            "no GOAWAY" % lab, r.outcome(3))
    r.close()

    # After the client's END_STREAM: DATA is STREAM_CLOSED; a late
    # WINDOW_UPDATE or RST_STREAM is not.
    r = raw_served(t, e, 1, "ended=1")
    r.send(raw_frame(0x8, 0, 1, struct.pack(">L", 1000)) + rst_frame(1, 0) +
           headers_frame(3, plain_block(request_fields(
               e.o.address, "/len?n=100&ended=3"))))
    r.until(lambda: r.done(3) or r.goaway is not None, ptest.bound(10))
    t.check(r.status.get(1) == "200" and r.status.get(3) == "200" and
            r.goaway is None,
            "%s: WINDOW_UPDATE and RST_STREAM on a stream both sides "
            "ended are ignored (5.1), the next stream is served" % lab,
            "%s; %s" % (r.outcome(1), r.outcome(3)))
    # its frame header a byte at a time: the proxy reads it in pieces
    r.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    late = data_frame(1, b"late")
    for i in range(9):
        r.send(late[i:i + 1])
        time.sleep(0.02)
    r.send(late[9:])
    ends_in(t, r, 5, "%s: DATA on a stream the client ended (its header "
            "sent a byte at a time): a connection error STREAM_CLOSED "
            "(5.1), then the close" % lab)

    # The client's own RST_STREAM, then DATA, in one write with the
    # HEADERS that opened the stream (h2spec 5.1/8).
    r = raw(t, e.port, e.p)
    r.settled(ptest.bound(5))
    r.send(headers_frame(1, plain_block(request_fields(
        e.o.address, "/len?n=100&rst=1")), end_stream=False) +
        rst_frame(1, 8) + data_frame(1, b"late", end_stream=True))
    ends_in(t, r, 5, "%s: DATA after the client's own RST_STREAM, all in "
            "one write with the HEADERS: STREAM_CLOSED (5.1; a connection "
            "error, 5.4.1)" % lab)


def client_goaway(t, e):
    """The client's GOAWAY: the proxy's own GOAWAY, then the close."""
    lab = "client GOAWAY"
    r = raw_served(t, e, 1, "cgoaway=1")
    r.send(raw_frame(0x7, 0, 0, struct.pack(">LL", 0, 0)))
    r.wait_end(ptest.bound(5))
    t.check(r.status.get(1) == "200" and r.goaway is not None and
            r.goaway[0] == 0 and r.goaway[1] == 1 and r.end == "eof",
            "%s: after a served stream, the client's GOAWAY NO_ERROR gets "
            "the proxy's (NO_ERROR, last stream 1; RFC 9113 6.8), then "
            "EOF" % lab, r.outcome(1))
    r.close()


def heads(t, e):
    """Request heads refused on their stream, the connection kept."""
    lab = "refused heads"
    ping = raw_frame(0x6, 0, 0, b"12345678")

    # A head whose last field crosses max_header_size (64 KiB), across
    # HEADERS and CONTINUATION frames: 431.
    r = raw(t, e.port, e.p)
    r.settled(ptest.bound(5))

    def big_head(sid, fields, tag):
        block = plain_block(request_fields(
            e.o.address, "/len?n=10&%s=1" % tag) + fields)
        step = len(block) // 5 + 1
        parts = [block[i:i + step] for i in range(0, len(block), step)]
        out = headers_frame(sid, parts[0], end_headers=False)
        for i, part in enumerate(parts[1:]):
            out += continuation_frame(sid, part,
                                      end_headers=(i == len(parts) - 2))
        r.send(out)
        r.until(lambda: r.done(sid) or r.goaway is not None,
                ptest.bound(10))
        return len(block), len(parts) - 1

    n, conts = big_head(1, [("x-big-%02d" % i, "v" * 4000)
                            for i in range(15)] +
                        [("x-big-last", "v" * 8000)], "big")
    t.check(r.status.get(1) == "431" and 1 in r.ended,
            "%s: a head of %d bytes in HEADERS and %d CONTINUATION "
            "frames, its last field past max_header_size: :status 431" % (
                lab, n, conts), r.outcome(1))
    # The request had END_STREAM: after the 431 the stream is closed,
    # and nothing more is sent on it (5.1). A PING's answer comes after
    # whatever the proxy had to send.
    r.send(ping)
    r.until(lambda: r.counts.get("Ping", 0) > 0, ptest.bound(5))
    t.check(r.counts.get("Ping", 0) > 0 and 1 not in r.rst,
            "%s: the request had ended, so no RST_STREAM follows the 431 "
            "(RFC 9113 5.1, nothing but PRIORITY on a closed stream)" % lab,
            r.outcome(1))
    # One that goes on past it: reset at the next field (the rest is
    # only decoded: the HPACK bomb's defence), the connection kept.
    n, conts = big_head(3, [("x-big-%02d" % i, "v" * 4000)
                            for i in range(20)], "bigger")
    t.check(3 in r.rst and r.goaway is None,
            "%s: a head of %d bytes whose fields go on past the limit: "
            "RST_STREAM, the connection kept" % (lab, n), r.outcome(3))
    t.check(len(e.o.reqs_for("big=1")) == 0 and
            len(e.o.reqs_for("bigger=1")) == 0,
            "%s: neither large head reached the origin" % lab)

    # Host naming another authority than :authority (RFC 9113 8.3.1).
    r.send(headers_frame(5, plain_block(request_fields(
        e.o.address, "/len?n=10&hostdiff=1") +
        [("host", "other.invalid:1")])))
    r.until(lambda: r.done(5) or r.goaway is not None, ptest.bound(10))
    t.check(r.rst.get(5) == 1 and 5 not in r.status,
            "%s: a Host naming another authority than :authority: "
            "RST_STREAM PROTOCOL_ERROR (malformed, RFC 9113 8.3.1 and "
            "8.1.1)" % lab, r.outcome(5))
    t.check(len(e.o.reqs_for("hostdiff=1")) == 0,
            "%s: it never reached the origin" % lab)
    # The same authority but for case and http's default port: served.
    # (stream 7 goes to 127.0.0.1:80: a refusal there is its answer)
    r.send(headers_frame(7, plain_block(
        [(":method", "GET"), (":scheme", "http"),
         (":authority", "127.0.0.1:80"), (":path", "/")] +
        [("host", "127.0.0.1")])) +
        headers_frame(9, plain_block(request_fields(
            e.o.address, "/len?n=10&hostsame=1") +
            [("host", e.o.address.upper())])))
    r.until(lambda: (r.done(7) and r.done(9)) or r.goaway is not None,
            ptest.bound(10))
    t.check(7 in r.status and 7 not in r.rst and
            r.status.get(9) == "200" and
            r.data.get(9) == 10 and r.goaway is None,
            "%s: a Host equal to :authority but for case, or for the "
            "default port, is no error (the streams are answered)" % lab,
            "%s; %s" % (r.outcome(7), r.outcome(9)))
    # A :path that is not a path (RFC 9113 8.3.1): an absolute URI, with a
    # :scheme nghttp2 does not check :path for. Taken as HTTP/1.1's
    # absolute form, it would go to the host it names, not :authority's.
    r.send(headers_frame(11, plain_block(
        [(":method", "GET"), (":scheme", "ftp"),
         (":authority", "other.invalid:80"),
         (":path", "http://%s/len?n=10&abspath=1" % e.o.address)])))
    r.until(lambda: r.done(11) or r.goaway is not None, ptest.bound(10))
    t.check(r.rst.get(11) == 1 and 11 not in r.status,
            "%s: a :path that is an absolute URI (:scheme ftp): RST_STREAM "
            "PROTOCOL_ERROR (malformed, RFC 9113 8.3.1)" % lab,
            r.outcome(11))
    t.check(len(e.o.reqs_for("abspath=1")) == 0,
            "%s: it never reached the origin" % lab)
    r.close()


def concurrency(t, e):
    lab = "concurrency"
    w = X.Watch(t, e.p, e.canary, e.base, lab)
    extra = 10

    def opened(sub, acked):
        tag = "conc%d" % acked
        r = raw(t, e.port, e.p, ack=acked)
        if acked:
            r.settled(ptest.bound(5))
            # the ACK is out; give the proxy a moment to take it in
            time.sleep(0.1)
        out = bytearray()
        sids = [1 + 2 * i for i in range(MAX_STREAMS + extra)]
        for sid in sids:
            out += headers_frame(sid, plain_block(request_fields(
                e.evil.address, "/slow?s=1&%s=%d" % (tag, sid))))
        # 100 KiB of answers: past the 64 KiB the connection's window
        # starts with, so more of it is given
        out += HF.WindowUpdateFrame(0, window_increment=1 << 20).serialize()
        r.send(bytes(out))
        r.until(lambda: all(r.done(s) for s in sids), ptest.bound(20))
        first, rest = sids[:MAX_STREAMS], sids[MAX_STREAMS:]
        served = [s for s in first if r.status.get(s) == "200" and
                  r.data.get(s) == 1024 and s in r.ended]
        refused = {s: r.rst.get(s) for s in rest}
        t.diag("%s: %s: %d of the first %d served; the %d others: %s; "
               "GOAWAY %s; end %s" % (
                   lab, sub, len(served), MAX_STREAMS, extra,
                   sorted(set(ename(c) for c in refused.values())),
                   r.goaway_text(), r.end))
        if acked:
            # Once the limit is acknowledged, nghttp2 (1.52) makes the
            # excess a connection error, GOAWAY PROTOCOL_ERROR, where RFC
            # 9113 5.1.2 asks for a stream error; a client past the limit
            # it agreed to loses its own connection, nobody else's (the
            # canary and the checks after this scenario say so).
            t.check(r.goaway is not None and r.goaway[0] == 1 and
                    r.end in ("eof", "reset"),
                    "%s: %s: a client past the limit it acknowledged: "
                    "GOAWAY PROTOCOL_ERROR, then the close" % (lab, sub),
                    lambda: [r.goaway_text(), str(r.end)])
            r.close()
            return
        t.check(all(c in (1, 7) for c in refused.values()),
                "%s: %s: each of the %d streams past %d is refused "
                "(RST_STREAM REFUSED_STREAM or PROTOCOL_ERROR)" % (
                    lab, sub, extra, MAX_STREAMS),
                lambda: ["%d: %s" % (s, r.outcome(s)) for s in rest])
        t.check(len(served) == MAX_STREAMS, "%s: %s: the first %d are "
                "served (200, 1 KiB each)" % (lab, sub, MAX_STREAMS),
                lambda: ["%d served" % len(served)] +
                ["%d: %s" % (s, r.outcome(s)) for s in first
                 if s not in served][:5])
        r.close()
    opened("before it acknowledged the SETTINGS", False)
    opened("after it acknowledged the SETTINGS", True)
    judged(t, e, w, lab, extra=lambda: (e.evil.active == 0, "%d slow "
                                          "origin connections"
                                          % e.evil.active))


ATTACKS = (rapid_reset, continuation, hpack_bomb, settings_flood,
           ping_flood, empty_data, stream_ids, closed_streams,
           client_goaway, heads, concurrency, zero_window)


def http2_built(t):
    """None when this portico speaks HTTP/2; else why not. A listener
    that asks for http2 is refused by a build without libnghttp2."""
    path = t.path("probe.conf")
    ptest.write_file(path, H.http_conf(t, ptest.free_port()).replace(
        'protocol = "http"; }', 'protocol = "http"; http2 = true; }'))
    r = ptest.run_portico(["-t", "-c", path])
    if r.returncode != 0 and "without HTTP/2" in r.stderr:
        return "portico built without HTTP/2 (no libnghttp2)"
    if r.returncode != 0:
        raise RuntimeError("portico -t: %s" % r.stderr[-400:])
    return None


def main(t):
    if NO_H2:
        t.skip("HTTP/2 attacks", NO_H2, need="h2")
        return
    why = http2_built(t)
    if why:
        t.skip("HTTP/2 attacks", why, need="http2")
        return
    only = set(sys.argv[1:])
    X.exclusive(t)
    e = Env()
    e.o = H.origin(t)
    e.evil = X.evil_origin(t)
    e.port = ptest.free_port()
    e.p = t.portico(H.http_conf(t, e.port, limits=dict(
        idle_timeout=IDLE_TIMEOUT)), env=ASAN_ENV)
    e.w0 = e.p.workers()
    st, n = h2_get(e.port, e.o.address, "/len?n=1024")
    t.check(st == 200 and n == 1024, "a GET over HTTP/2 (prior knowledge) "
            "through the proxy before the attacks", "got %s %s" % (st, n))
    if not only or "first_read" in only:
        first_read(t, e)
    e.canary = X.Canary(t, e.port, e.o.port)
    e.base = X.baseline(t, e.canary)
    for f in ATTACKS:
        if only and f.__name__ not in only:
            continue
        if f is zero_window:
            # a proxy of its own, whose idle_timeout the others would
            # meet; its pid file and log beside the first one's
            e.zport = ptest.free_port()
            conf = H.http_conf(t, e.zport, limits=dict(
                idle_timeout=ZW_IDLE_TIMEOUT))
            for name in ("portico.pid", "error.log"):
                conf = conf.replace(t.path(name), t.path("zw-" + name))
            e.zp = t.portico(conf, conf_name="zw.conf", env=ASAN_ENV)
            e.zw0 = e.zp.workers()
        t1 = time.monotonic()
        f(t, e)
        t.diag("%s took %.1f s" % (f.__name__, time.monotonic() - t1))
        if f is zero_window:
            H.finish(t, e.zp, e.zw0, "zero window proxy: ")
    e.canary.stop()
    H.finish(t, e.p, e.w0)


if __name__ == "__main__":
    ptest.Test("h2_attacks").run(main)
