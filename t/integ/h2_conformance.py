#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
HTTP/2 conformance of the proxy's server side, case by case as h2spec
does it: RFC 9113, RFC 7541 (HPACK) and RFC 8441 3, against a plain
"http" listener that takes HTTP/2 by prior knowledge (h2c). Each case is
one check, on a connection of its own; the client writes frames and
header blocks by hand (literal fields without indexing, so it can send
what python3-h2 refuses to; python3-h2's hpack decodes the answers). The
origins are httptest's and h2test's SlowOrigin, the CONNECT targets
h2test's TunnelTarget, a source that sends and closes, and one that
resets, all on loopback. (h2_attacks.py has the floods and the
stream-ID guards.) By section:

  3.4    SETTINGS is the proxy's first frame; a broken preface gets no
         HTTP/2 frame (the listener takes HTTP/1.1 too: an HTTP/1.1
         error, then the close); PING in place of the client's SETTINGS
  4.1-3  unknown frame types and flags, the reserved bit; frame sizes;
         HPACK errors (RFC 7541); frames inside a header block
  5.1-5  frames on idle, half-closed (remote) and closed streams; even
         and decreasing stream IDs; MAX_CONCURRENT_STREAMS; a stream
         depending on itself; unknown settings and extension frames
  6.1-10 each frame type on a wrong stream, with a wrong padding, length
         or value; SETTINGS acknowledged, PING answered; flow control:
         window overflows, DATA past the window, the client's
         INITIAL_WINDOW_SIZE 1000 and 0; CONTINUATION sequences
  8.1-5  trailers, content-length against DATA, malformed fields and
         pseudo-fields, connection-specific fields both ways, GET, POST,
         HEAD, 40 KB, concurrent streams; CONNECT: malformed ones, a
         tunnel, the target's FIN and RST, HEADERS on a tunnel

Verdicts (the checks say which applies):
  connection error X  GOAWAY X, then the close (EOF or a reset; 5.4.1)
  stream error X      RST_STREAM X on the stream, or the connection error
                      X (5.4.1 lets any stream error be the connection's)
  malformed           the stream error PROTOCOL_ERROR (or :status 400
                      where 8.2.1's SHOULD allows), and the request never
                      reached the origin: looked at once a later request
                      through the same worker was answered
  ignored             a PING sent after it is answered, with no GOAWAY,
                      no RST_STREAM and no close first
  served              :status 200 and END_STREAM, with the origin's body
                      where the case says so
Every wait is bounded (ptest.bound) and ends as soon as the reaction
comes; a case that looks for something not to happen (no DATA past a
window) stops at a PING's answer, so a slow machine can only make it
see less, never fail it.

Known departures, left out or judged otherwise (comments at the cases):
6.9.2 a SETTINGS_INITIAL_WINDOW_SIZE change overflowing an open stream's
window (libnghttp2 1.52 resets the stream instead of the connection
error) and 5.1 DATA on a stream the client ended more than 128 IDs ago
(ignored by design, worker/h2_ids.c) are not checked; 5.1.1 HEADERS on a
never-used ID far below the highest is a connection error PROTOCOL_ERROR
or STREAM_CLOSED.

Needs python3-h2 (need "h2") and a portico built with libnghttp2 (need
"http2"). By hand, the cases whose section or name has a substring:
  python3 t/integ/h2_conformance.py 6.9 CONTINUATION
"""
import hashlib
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import h2test as h2t  # noqa: E402  (puts Debian's dist-packages on the path)

try:
    import hpack  # noqa: E402
except ImportError:             # h2test.ready() says why and skips
    hpack = None

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# frame types (RFC 9113 6)
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, \
    WINDOW_UPDATE, CONTINUATION = range(10)
TYPE_NAMES = {0: "DATA", 1: "HEADERS", 2: "PRIORITY", 3: "RST_STREAM",
              4: "SETTINGS", 5: "PUSH_PROMISE", 6: "PING", 7: "GOAWAY",
              8: "WINDOW_UPDATE", 9: "CONTINUATION"}
# flags
END_STREAM = ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIO = 0x20
# error codes (RFC 9113 7)
ERR = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR",
       3: "FLOW_CONTROL_ERROR", 4: "SETTINGS_TIMEOUT", 5: "STREAM_CLOSED",
       6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL",
       9: "COMPRESSION_ERROR", 10: "CONNECT_ERROR", 11: "ENHANCE_YOUR_CALM",
       12: "INADEQUATE_SECURITY", 13: "HTTP_1_1_REQUIRED"}
PROTOCOL_ERROR, FLOW_CONTROL_ERROR, STREAM_CLOSED = 1, 3, 5
FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL = 6, 7, 8
COMPRESSION_ERROR, CONNECT_ERROR = 9, 10
# settings (RFC 9113 6.5.2, RFC 8441 3)
S_HEADER_TABLE_SIZE, S_ENABLE_PUSH, S_MAX_CONCURRENT_STREAMS, \
    S_INITIAL_WINDOW_SIZE, S_MAX_FRAME_SIZE, S_MAX_HEADER_LIST_SIZE = \
    range(1, 7)
S_ENABLE_CONNECT_PROTOCOL = 8
SETTING_NAMES = {1: "HEADER_TABLE_SIZE", 2: "ENABLE_PUSH",
                 3: "MAX_CONCURRENT_STREAMS", 4: "INITIAL_WINDOW_SIZE",
                 5: "MAX_FRAME_SIZE", 6: "MAX_HEADER_LIST_SIZE",
                 8: "ENABLE_CONNECT_PROTOCOL"}

REACT = ptest.bound(5)      # the longest wait for a reaction
HANG = int(ptest.bound(30))  # /hang's answer-never bound (released at stop)


def ename(code):
    if code is None:
        return "(no code)"
    return ERR.get(code, "0x%x" % code)


def flag_names(ftype, flags):
    out = []
    if ftype in (DATA, HEADERS) and flags & END_STREAM:
        out.append("END_STREAM")
    if ftype in (SETTINGS, PING) and flags & ACK:
        out.append("ACK")
    if ftype in (HEADERS, CONTINUATION, PUSH_PROMISE) and flags & END_HEADERS:
        out.append("END_HEADERS")
    if ftype in (DATA, HEADERS, PUSH_PROMISE) and flags & PADDED:
        out.append("PADDED")
    if ftype == HEADERS and flags & PRIO:
        out.append("PRIORITY")
    known = {DATA: 0x9, HEADERS: 0x2d, SETTINGS: 1, PING: 1,
             CONTINUATION: 4, PUSH_PROMISE: 0xc}.get(ftype, 0)
    if flags & ~known & 0xff:
        out.append("0x%02x" % (flags & ~known & 0xff))
    return "|".join(out) if out else "-"


# ---------------------------------------------------------------------------
# HPACK by hand: literal fields without indexing, new name (RFC 7541
# 6.2.2): stateless, and able to carry what a real encoder refuses

def hp_int(value, prefix_bits, first=0):
    """An HPACK integer (RFC 7541 5.1) with a <prefix_bits> prefix whose
    other bits are <first>."""
    maxp = (1 << prefix_bits) - 1
    if value < maxp:
        return bytes([first | value])
    out = [first | maxp]
    value -= maxp
    while value >= 128:
        out.append((value & 0x7f) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hp_str(s):
    if isinstance(s, str):
        s = s.encode("latin-1")
    return hp_int(len(s), 7) + s


def hblock(fields):
    return b"".join(b"\x00" + hp_str(n) + hp_str(v) for n, v in fields)


# ---------------------------------------------------------------------------
# frames

def frame(ftype, flags, sid, payload=b""):
    """A frame, its header written by hand: any stream ID (the reserved
    bit too), any flags, any length."""
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", sid) + payload


def settings_payload(pairs):
    return b"".join(struct.pack(">HI", k, v) for k, v in pairs)


class Frame:
    def __init__(self, ftype, flags, sid, payload):
        self.type, self.flags, self.sid, self.payload = \
            ftype, flags, sid, payload
        self.headers = None     # the decoded block (HEADERS, complete)

    def code(self):
        if self.type == RST_STREAM and len(self.payload) >= 4:
            return struct.unpack(">I", self.payload[:4])[0]
        if self.type == GOAWAY and len(self.payload) >= 8:
            return struct.unpack(">I", self.payload[4:8])[0]
        return None

    def describe(self):
        name = TYPE_NAMES.get(self.type, "type 0x%x" % self.type)
        d = "%s(stream=%d, flags=%s, len=%d" % (
            name, self.sid, flag_names(self.type, self.flags),
            len(self.payload))
        if self.type == RST_STREAM:
            d += ", %s" % ename(self.code())
        elif self.type == GOAWAY and len(self.payload) >= 8:
            last = struct.unpack(">I", self.payload[:4])[0] & 0x7fffffff
            d += ", last=%d, %s" % (last, ename(self.code()))
            if len(self.payload) > 8:
                d += ", debug=%r" % self.payload[8:80]
        elif self.type == SETTINGS and not self.flags & ACK:
            items = []
            for i in range(0, len(self.payload) - 5, 6):
                k, v = struct.unpack(">HI", self.payload[i:i + 6])
                items.append("%s=%d" % (SETTING_NAMES.get(k, k), v))
            d += ", " + ", ".join(items)
        elif self.type == WINDOW_UPDATE and len(self.payload) == 4:
            d += ", +%d" % (struct.unpack(">I", self.payload)[0] & 0x7fffffff)
        elif self.type == HEADERS and self.headers is not None:
            d += ", :status %s" % dict(self.headers).get(":status")
        return d + ")"


def describe_sent(raw):
    """The frames in <raw> (bytes we sent, after the preface), in words."""
    out = []
    p = n = 0
    while p + 9 <= len(raw) and n < 200:
        length = int.from_bytes(raw[p:p + 3], "big")
        sid = struct.unpack(">I", raw[p + 5:p + 9])[0]
        payload = raw[p + 9:p + 9 + length]
        d = Frame(raw[p + 3], raw[p + 4], sid & 0x7fffffff,
                  payload).describe()
        if sid & 0x80000000:
            d = d[:-1] + ", R-bit set)"
        out.append(d)
        p += 9 + length
        n += 1
    if p < len(raw):
        out.append("%d raw bytes %r" % (len(raw) - p, raw[p:p + 40]))
    return out


def fmt_fields(hs):
    return "[" + ", ".join("%s: %s" % (n, v if len(v) < 40 else
                                       v[:37] + "...") for n, v in hs) + "]"


# ---------------------------------------------------------------------------
# a hand-driven client connection

class Stream:
    """What the proxy sent on one stream."""

    def __init__(self):
        self.status = None      # final :status (str)
        self.headers = []       # the final response's fields
        self.body = bytearray()
        self.data_lens = []     # the DATA frames' payload lengths
        self.ended = False      # END_STREAM came
        self.rst = None         # RST_STREAM code

    @property
    def done(self):
        return self.ended or self.rst is not None


class Conn:
    """One HTTP/2 connection to the proxy driven frame by frame. Every
    frame received is parsed (header blocks decoded), described in .seen
    and folded into .streams; PINGs and SETTINGS are acknowledged, and
    DATA is given back by WINDOW_UPDATE while .give_back."""

    def __init__(self, port):
        self.s = ptest.connect(port, timeout=REACT)
        # each frame as it is written (Nagle would hold the small ones
        # for the proxy's delayed ACK, ~40 ms a case)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.setblocking(False)
        self.buf = b""
        self.closed = None          # how it ended, once it did
        self.dec = hpack.Decoder()
        self.dec.max_header_list_size = 1 << 20
        self.partial = None         # (HEADERS Frame, block so far)
        self.sent_notes = []
        self.seen = []
        self.non_frame = b""
        self.server_settings = {}
        self.streams = {}
        self.goaway = None          # (code, last stream id)
        self.give_back = True
        self.pings = 0

    def stream(self, sid):
        return self.streams.setdefault(sid, Stream())

    # -- sending ----------------------------------------------------------
    def send(self, data, note=None):
        if note:
            self.sent_notes.append(note)
        elif data.startswith(PREFACE):
            self.sent_notes.append("client preface")
            self.sent_notes.extend(describe_sent(data[len(PREFACE):]))
        else:
            self.sent_notes.extend(describe_sent(data))
        try:
            self.s.settimeout(REACT)
            self.s.sendall(data)
        except OSError as e:
            if not self.closed:
                self.closed = "send failed: %s" % ptest.err_kind(e)
        finally:
            self.s.setblocking(False)

    def send_frame(self, ftype, flags, sid, payload=b""):
        self.send(frame(ftype, flags, sid, payload))

    def headers(self, sid, hs, flags=END_HEADERS | END_STREAM, block=None,
                prefix=b""):
        """HEADERS on <sid>: <prefix> (pad length, priority) and the
        block of <hs> (or <block> as it is)."""
        blk = block if block is not None else hblock(hs)
        raw = frame(HEADERS, flags, sid, prefix + blk)
        d = describe_sent(raw)[0]
        d += (" " + fmt_fields(hs)) if block is None else \
            " block=%s" % blk[:60].hex()
        self.send(raw, note=d)

    def ping(self, data):
        self.send_frame(PING, 0, 0, data)

    # -- receiving --------------------------------------------------------
    def _fill(self, deadline):
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                r, _, _ = select.select([self.s], [], [], left)
            except (OSError, ValueError):
                self.closed = self.closed or "select failed"
                return False
            if not r:
                return False
            try:
                d = self.s.recv(65536)
            except BlockingIOError:
                continue
            except OSError as e:
                self.closed = ptest.err_kind(e)
                return False
            if not d:
                self.closed = "eof"
                return False
            self.buf += d
            return True

    def recv_frame(self, deadline):
        """The next frame, or None (out of time, or closed: .closed)."""
        while True:
            if len(self.buf) >= 9:
                length = int.from_bytes(self.buf[:3], "big")
                if length > (1 << 20) or (not self.seen and
                                          not self.buf.startswith(b"\x00")):
                    # not HTTP/2 (an HTTP/1.1 answer)
                    self.non_frame += self.buf
                    self.buf = b""
                    if not self._fill(deadline):
                        return None
                    continue
                if len(self.buf) >= 9 + length:
                    sid = struct.unpack(">I", self.buf[5:9])[0] & 0x7fffffff
                    f = Frame(self.buf[3], self.buf[4], sid,
                              self.buf[9:9 + length])
                    self.buf = self.buf[9 + length:]
                    self._on_frame(f)
                    self.seen.append(f.describe())
                    return f
            if self.closed or not self._fill(deadline):
                if self.closed and self.buf:
                    self.non_frame += self.buf
                    self.buf = b""
                return None

    def _on_frame(self, f):
        if f.type == SETTINGS and not f.flags & ACK:
            for i in range(0, len(f.payload) - 5, 6):
                k, v = struct.unpack(">HI", f.payload[i:i + 6])
                self.server_settings[k] = v
            self.send(frame(SETTINGS, ACK, 0), note="SETTINGS(ACK) [auto]")
        elif f.type == PING and not f.flags & ACK:
            self.send(frame(PING, ACK, 0, f.payload), note="PING(ACK) [auto]")
        elif f.type == GOAWAY:
            last = struct.unpack(">I", f.payload[:4])[0] & 0x7fffffff \
                if len(f.payload) >= 4 else None
            self.goaway = (f.code(), last)
        elif f.type == RST_STREAM:
            self.stream(f.sid).rst = f.code()
        elif f.type == HEADERS:
            p = f.payload
            if f.flags & PADDED and p:
                p = p[1:len(p) - p[0]]
            if f.flags & PRIO:
                p = p[5:]
            if f.flags & END_STREAM:
                self.stream(f.sid).ended = True
            if f.flags & END_HEADERS:
                f.headers = self._decode(p)
                self._on_fields(f.sid, f.headers)
            else:
                self.partial = (f, p)
        elif f.type == CONTINUATION and self.partial:
            hf, blk = self.partial
            blk += f.payload
            if f.flags & END_HEADERS:
                hf.headers = self._decode(blk)
                f.headers = hf.headers
                self.partial = None
                self._on_fields(hf.sid, hf.headers)
            else:
                self.partial = (hf, blk)
        elif f.type == DATA:
            st = self.stream(f.sid)
            p = f.payload
            if f.flags & PADDED and p:
                p = p[1:len(p) - p[0]]
            st.body += p
            st.data_lens.append(len(f.payload))
            if f.flags & END_STREAM:
                st.ended = True
            if self.give_back and f.payload:
                # the window back, as a client would (not the stream's
                # once it ended: nothing but PRIORITY on a closed stream)
                n = struct.pack(">I", len(f.payload))
                out = frame(WINDOW_UPDATE, 0, 0, n)
                if not f.flags & END_STREAM:
                    out += frame(WINDOW_UPDATE, 0, f.sid, n)
                self.send(out, note="WINDOW_UPDATE [auto]")

    def _on_fields(self, sid, fields):
        st = self.stream(sid)
        code = dict(fields).get(":status")
        if code and not code.startswith("1") and st.status is None:
            st.status, st.headers = code, fields

    def _decode(self, blk):
        try:
            return [(n, v) for n, v in self.dec.decode(blk)]
        except Exception as e:
            return [("x-decode-error", str(e))]

    def until(self, pred, timeout=None):
        """Reads frames until pred() holds, the connection ended or
        <timeout> passed. Returns pred()."""
        deadline = time.monotonic() + (timeout or REACT)
        while not pred():
            if self.recv_frame(deadline) is None:
                break
        return pred()

    def wait_close(self, timeout=None):
        return self.until(lambda: self.closed is not None, timeout)

    def handshake(self, settings=()):
        """The preface and our SETTINGS; waits for the proxy's SETTINGS
        and its ACK of ours. None when done, else what went wrong."""
        self.send(PREFACE + frame(SETTINGS, 0, 0, settings_payload(settings)))
        got = set()
        deadline = time.monotonic() + REACT
        while got != {"settings", "ack"}:
            f = self.recv_frame(deadline)
            if f is None:
                return "handshake: %s" % (self.closed or "out of time")
            if f.type == SETTINGS:
                got.add("ack" if f.flags & ACK else "settings")
            if f.type == GOAWAY:
                return "handshake: %s" % f.describe()
        return None

    def observed(self):
        out = list(self.seen)
        if self.non_frame:
            out.append("non-HTTP/2 bytes %r" % self.non_frame[:60])
        if self.closed:
            out.append("connection ended (%s)" % self.closed)
        return out or ["nothing"]

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------
# verdicts: (ok, what was observed)

def _then_close(c, f, codes):
    """A GOAWAY <f> came: the verdict of a connection error, which ends
    with the close (5.4.1: after the GOAWAY of an error, MUST close)."""
    closed = c.wait_close()
    note = "GOAWAY %s, %s" % (ename(f.code()), "then the close (%s)" %
                              c.closed if closed else
                              "no close within %.0f s" % REACT)
    return f.code() in codes and closed, note


def conn_error(c, *codes):
    deadline = time.monotonic() + REACT
    while True:
        f = c.recv_frame(deadline)
        if f is None:
            if c.closed:
                return False, "closed without a GOAWAY"
            return False, "no GOAWAY and no close within %.0f s" % REACT
        if f.type == GOAWAY:
            return _then_close(c, f, codes)


def stream_error(c, sid, *codes):
    deadline = time.monotonic() + REACT
    ended = False
    while True:
        f = c.recv_frame(deadline)
        if f is None:
            if c.closed:
                return False, "closed without RST_STREAM or GOAWAY"
            return False, "no RST_STREAM or GOAWAY within %.0f s" % REACT
        if f.type == RST_STREAM and f.sid == sid:
            return f.code() in codes, "RST_STREAM %s" % ename(f.code())
        if f.type == GOAWAY:
            ok, note = _then_close(c, f, codes)
            return ok, note + " (a connection error)"
        if f.sid == sid and f.type in (HEADERS, DATA) and \
                f.flags & END_STREAM and not ended:
            # answered: a RST_STREAM may still follow; anything the
            # proxy has to say about it comes before a PING's answer
            ended = True
            c.ping(b"ended?!!")
        if ended and f.type == PING and f.flags & ACK and \
                f.payload == b"ended?!!":
            return False, "stream %d ended (:status %s) with no " \
                "RST_STREAM" % (sid, c.stream(sid).status)


def stream_error_or_400(c, sid):
    """Malformed (8.1.1): RST_STREAM or GOAWAY PROTOCOL_ERROR, or the
    :status 400 8.2.1 allows (SHOULD)."""
    deadline = time.monotonic() + REACT
    while True:
        f = c.recv_frame(deadline)
        if f is None:
            return False, "no RST_STREAM, GOAWAY or 400 within %.0f s (%s)" \
                % (REACT, c.closed or "open")
        if f.type == RST_STREAM and f.sid == sid:
            return f.code() == PROTOCOL_ERROR, "RST_STREAM %s" % \
                ename(f.code())
        if f.type == GOAWAY:
            return _then_close(c, f, (PROTOCOL_ERROR,))
        st = c.stream(sid)
        if st.status is not None:
            return st.status == "400", ":status %s" % st.status


def alive(c, sid_ok=None):
    """Ignored: a PING is answered, and no GOAWAY, no close, and no
    RST_STREAM (but on <sid_ok>) came first."""
    c.pings += 1
    data = b"alive?%02d" % (c.pings % 100)
    c.ping(data)
    deadline = time.monotonic() + REACT
    bad = None
    while True:
        f = c.recv_frame(deadline)
        if f is None:
            return False, "connection ended (%s)" % c.closed if c.closed \
                else "no PING ACK within %.0f s" % REACT
        if f.type == GOAWAY:
            return False, "GOAWAY %s" % ename(f.code())
        if f.type == RST_STREAM and f.sid != sid_ok:
            bad = "RST_STREAM %s on stream %d" % (ename(f.code()), f.sid)
        if f.type == PING and f.flags & ACK and f.payload == data:
            return bad is None, bad or "PING answered"


def first_frame(c, *types):
    """The first frame of one of <types> that comes, or None."""
    deadline = time.monotonic() + REACT
    while True:
        f = c.recv_frame(deadline)
        if f is None or f.type in types:
            return f


def read_response(c, sid, timeout=None):
    """(status, fields, body, how) of stream <sid>: how it ended,
    END_STREAM, RST_STREAM X, GOAWAY X, the close, or out of time."""
    st = c.stream(sid)
    c.until(lambda: st.done or c.goaway is not None, timeout)
    if st.ended:
        how = "END_STREAM"
    elif st.rst is not None:
        how = "RST_STREAM %s" % ename(st.rst)
    elif c.goaway is not None:
        how = "GOAWAY %s" % ename(c.goaway[0])
    else:
        how = "ended: %s" % c.closed if c.closed else "out of time"
    return st.status, st.headers, bytes(st.body), how


def response(c, sid, want="200", body=None):
    """Served: :status <want> and END_STREAM (and the body <body>)."""
    st, _, got, how = read_response(c, sid)
    ok = st == want and how == "END_STREAM" and (body is None or
                                                 got == body)
    return ok, ":status %s, %d body bytes%s, %s" % (
        st, len(got), "" if body is None or got == body else
        " (not the origin's)", how)


# ---------------------------------------------------------------------------
# the test's servers and the cases' context

class ResetTarget(ptest._Server):
    """A CONNECT target that reads the tunnel's first bytes, then resets
    its TCP connection (SO_LINGER 0, then the close)."""

    def handle(self, c):
        c.settimeout(ptest.bound(10))
        c.recv(100)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))


class Env:
    """The proxy, the servers and what a case is doing: its connection
    (.c, whose frames the check's details show) and a counter for the
    tags that name each case's requests."""

    def __init__(self, t, port):
        self.t, self.port = t, port
        self.o = H.origin(t)
        self.auth = self.o.address
        self.slow = h2t.SlowOrigin(size=100, together=2)
        self.echo = h2t.TunnelTarget()
        self.never = h2t.TunnelTarget()     # the malformed CONNECTs'
        self.rst = ResetTarget()
        t.servers += [self.slow, self.echo, self.never, self.rst]
        self.src = t.source_server(1000)
        self.n = 0
        self.c = None

    def conn(self, settings=(), handshake=True):
        self.c = Conn(self.port)
        if handshake:
            err = self.c.handshake(settings)
            if err:
                raise RuntimeError(err)
        return self.c

    def tag(self):
        """A tag no other request has: tag=c<N>& (the & ends it)."""
        self.n += 1
        return "tag=c%d&" % self.n

    def path(self, route="/echo"):
        return "%s?%s" % (route, self.tag())

    def hang(self):
        """A route the origin never answers (a stream that stays open)."""
        return "/hang?s=%d&%s" % (HANG, self.tag())

    def req(self, method="GET", path=None, extra=(), scheme="http",
            authority=None):
        hs = [(":method", method)]
        if scheme is not None:
            hs.append((":scheme", scheme))
        hs.append((":authority", authority or self.auth))
        hs.append((":path", path if path is not None else self.path()))
        return hs + list(extra)

    def reached(self, tag):
        """The origin's requests with <tag> anywhere in their head."""
        with self.o.lock:
            return [r for r in self.o.requests if tag in r["raw_head"]]

    def settle(self):
        """A GET through the proxy on a connection of its own, answered:
        what the worker did with the case's request is done by then."""
        c = Conn(self.port)
        try:
            if c.handshake() is None:
                c.headers(1, self.req(path="/len?n=1&settle=1"))
                read_response(c, 1)
        finally:
            c.close()


def nofwd(e, tag, verdict):
    """A malformed request also never reaches the origin (8.1.1)."""
    ok, note = verdict
    e.settle()
    got = e.reached(tag)
    if got:
        return False, note + "; and it reached the origin: %r" % \
            got[0]["raw_head"][:200]
    return ok, note + "; not at the origin"


def setup_failed(why):
    return False, "setup: %s" % why


# ---------------------------------------------------------------------------
# the cases: (section, what is sent, the reaction expected, function)

CASES = []


def case(section, name, expect):
    def deco(fn):
        CASES.append((section, name, expect, fn))
        return fn
    return deco


# -- the cases that are one frame on a connection, and a connection error

def frame_case(section, name, code, ftype, flags, sid, payload=b""):
    """A case: one frame (<ftype> <flags> on <sid>, <payload>) after the
    handshake, answered with the connection error <code>."""
    def fn(e):
        c = e.conn()
        c.send_frame(ftype, flags, sid, payload)
        return conn_error(c, code)
    CASES.append((section, name, "connection error %s" % ERR[code], fn))


# -- 3.4 the connection preface ---------------------------------------------

@case("RFC 9113 3.4", "the proxy's first frame",
      "SETTINGS without ACK")
def c_preface_ok(e):
    c = e.conn(handshake=False)
    c.send(PREFACE + frame(SETTINGS, 0, 0))
    f = c.recv_frame(time.monotonic() + REACT)
    if f is None:
        return False, "nothing (%s)" % c.closed
    return f.type == SETTINGS and not f.flags & ACK, f.describe()


def bad_preface(c):
    """A broken preface (3.4: a connection error PROTOCOL_ERROR, GOAWAY
    may be left out): the listener takes HTTP/1.1 too, and reads it as
    a bad HTTP/1.1 request. No HTTP/2 frame, then the close."""
    c.wait_close()
    first = c.non_frame.split(b"\r\n", 1)[0]
    return c.closed is not None and not c.seen, \
        "%d frames, then %s; HTTP/1.1 answer %r" % (
            len(c.seen), c.closed or "no close", first)


@case("RFC 9113 3.4", "\"INVALID CONNECTION PREFACE\" in place of the "
      "preface", "no HTTP/2 frame, the close (an HTTP/1.1 error first)")
def c_preface_bad(e):
    c = e.conn(handshake=False)
    c.send(b"INVALID CONNECTION PREFACE\r\n\r\n", note="raw bytes "
           "'INVALID CONNECTION PREFACE\\r\\n\\r\\n'")
    return bad_preface(c)


@case("RFC 9113 3.4", "a preface wrong in its last bytes (PRI * "
      "HTTP/2.0 ... XX)", "no HTTP/2 frame, the close (an HTTP/1.1 error "
      "first)")
def c_preface_bad2(e):
    c = e.conn(handshake=False)
    c.send(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + frame(SETTINGS, 0, 0),
           note="raw 'PRI * HTTP/2.0\\r\\n\\r\\nXX\\r\\n\\r\\n' + SETTINGS")
    return bad_preface(c)


@case("RFC 9113 3.4", "the preface followed by PING, not SETTINGS",
      "connection error PROTOCOL_ERROR")
def c_preface_noset(e):
    c = e.conn(handshake=False)
    c.send(PREFACE + frame(PING, 0, 0, b"12345678"))
    return conn_error(c, PROTOCOL_ERROR)


# -- 4.1 frame format -------------------------------------------------------

@case("RFC 9113 4.1", "unknown frame types (0x20 on stream 0, 0xff on an "
      "idle stream)", "ignored")
def c_unknown_type(e):
    c = e.conn()
    c.send_frame(0x20, 0, 0, b"unknown")
    c.send_frame(0xff, 0xff, 1, b"unknown on an idle stream")
    return alive(c)


@case("RFC 9113 4.1", "PING with unknown flags (0x16)",
      "PING ACK with the payload, the unknown flags not echoed")
def c_unknown_flags_ping(e):
    c = e.conn()
    c.send_frame(PING, 0x16, 0, b"unkflags")
    f = first_frame(c, PING, GOAWAY)
    if f is None:
        return False, "no PING ACK (%s)" % (c.closed or "open")
    return f.type == PING and f.flags == ACK and f.payload == b"unkflags", \
        "%s payload %r" % (f.describe(), f.payload)


@case("RFC 9113 4.1", "HEADERS with unknown flags (0x10|0x40|0x80)",
      "served")
def c_unknown_flags_headers(e):
    c = e.conn()
    c.headers(1, e.req(), flags=END_HEADERS | END_STREAM | 0xd0)
    return response(c, 1)


@case("RFC 9113 4.1", "HEADERS with the reserved bit set in the stream ID",
      "the bit ignored: served")
def c_reserved_bit(e):
    c = e.conn()
    c.headers(1 | 0x80000000, e.req())
    return response(c, 1)


# -- 4.2 frame size ---------------------------------------------------------

@case("RFC 9113 4.2", "DATA of 2^14 octets (the default MAX_FRAME_SIZE)",
      "taken: served")
def c_data_16384(e):
    c = e.conn()
    win = c.server_settings.get(S_INITIAL_WINDOW_SIZE, 65535)
    if win < 16384:
        return setup_failed("the proxy's window %d < 16384" % win)
    c.headers(1, e.req("POST", extra=[("content-length", "16384")]),
              flags=END_HEADERS)
    c.send_frame(DATA, END_STREAM, 1, b"x" * 16384)
    return response(c, 1)


@case("RFC 9113 4.2", "DATA of 16385 octets, past MAX_FRAME_SIZE",
      "stream error FRAME_SIZE_ERROR")
def c_data_too_big(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(DATA, END_STREAM, 1, b"x" * 16385)
    return stream_error(c, 1, FRAME_SIZE_ERROR)


@case("RFC 9113 4.2", "HEADERS past MAX_FRAME_SIZE",
      "connection error FRAME_SIZE_ERROR")
def c_headers_too_big(e):
    c = e.conn()
    c.headers(1, e.req(extra=[("x-big", "a" * 16400)]))
    return conn_error(c, FRAME_SIZE_ERROR)


frame_case("RFC 9113 4.2, 6.5", "SETTINGS of 3 octets (not a multiple of 6)",
           FRAME_SIZE_ERROR, SETTINGS, 0, 0, b"\x00\x03\x00")


frame_case("RFC 9113 4.2, 6.7", "PING of 7 octets",
           FRAME_SIZE_ERROR, PING, 0, 0, b"1234567")


frame_case("RFC 9113 4.2, 6.7", "PING of 9 octets",
           FRAME_SIZE_ERROR, PING, 0, 0, b"123456789")


frame_case("RFC 9113 4.2, 6.9", "WINDOW_UPDATE of 3 octets on stream 0",
           FRAME_SIZE_ERROR, WINDOW_UPDATE, 0, 0, b"\x00\x00\x01")


@case("RFC 9113 4.2, 6.9", "WINDOW_UPDATE of 5 octets on an open stream",
      "connection error FRAME_SIZE_ERROR")
def c_wu_len5_stream(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(WINDOW_UPDATE, 0, 1, b"\x00\x00\x00\x01\x00")
    return conn_error(c, FRAME_SIZE_ERROR)


@case("RFC 9113 4.2, 6.3", "PRIORITY of 4 octets",
      "stream error FRAME_SIZE_ERROR")
def c_prio_len(e):
    c = e.conn()
    c.send_frame(PRIORITY, 0, 1, b"\x00\x00\x00\x00")
    return stream_error(c, 1, FRAME_SIZE_ERROR)


@case("RFC 9113 4.2, 6.4", "RST_STREAM of 3 octets",
      "connection error FRAME_SIZE_ERROR")
def c_rst_len(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(RST_STREAM, 0, 1, b"\x00\x00\x08")
    return conn_error(c, FRAME_SIZE_ERROR)


frame_case("RFC 9113 4.2, 6.8", "GOAWAY of 4 octets (short of its fields)",
           FRAME_SIZE_ERROR, GOAWAY, 0, 0, b"\x00\x00\x00\x00")


# -- 4.3 field section compression (RFC 7541) -------------------------------

@case("RFC 7541 6.1", "an indexed field with index 0",
      "connection error COMPRESSION_ERROR")
def c_hpack_idx0(e):
    c = e.conn()
    c.headers(1, None, block=b"\x80")
    return conn_error(c, COMPRESSION_ERROR)


@case("RFC 7541 2.3.3", "an indexed field past the static and dynamic "
      "tables (70)", "connection error COMPRESSION_ERROR")
def c_hpack_bad_index(e):
    c = e.conn()
    blk = b"\x82\x86\x84" + hblock([(":authority", e.auth)]) + b"\xc6"
    c.headers(1, None, block=blk)
    return conn_error(c, COMPRESSION_ERROR)


@case("RFC 7541 2.3.3", "a literal whose name index is past the tables "
      "(100)", "connection error COMPRESSION_ERROR")
def c_hpack_bad_name_index(e):
    c = e.conn()
    blk = b"\x82\x86\x84" + hblock([(":authority", e.auth)]) + \
        hp_int(100, 4, 0x00) + hp_str("v")
    c.headers(1, None, block=blk)
    return conn_error(c, COMPRESSION_ERROR)


@case("RFC 7541 6.3", "a dynamic table size update past "
      "SETTINGS_HEADER_TABLE_SIZE (4097 > 4096)",
      "connection error COMPRESSION_ERROR")
def c_hpack_tsu_big(e):
    c = e.conn()
    c.headers(1, None, block=hp_int(4097, 5, 0x20) + hblock(e.req()))
    return conn_error(c, COMPRESSION_ERROR)


@case("RFC 7541 4.2", "a dynamic table size update after a field",
      "connection error COMPRESSION_ERROR")
def c_hpack_tsu_late(e):
    c = e.conn()
    hs = e.req()
    c.headers(1, None, block=hblock(hs[:1]) + hp_int(100, 5, 0x20) +
              hblock(hs[1:]))
    return conn_error(c, COMPRESSION_ERROR)


@case("RFC 7541 5.2", "a Huffman string with more than 7 bits of padding",
      "connection error COMPRESSION_ERROR")
def c_hpack_huff_pad(e):
    c = e.conn()
    blk = hblock(e.req()) + b"\x00" + bytes([0x80 | 2]) + b"\xff\xff" + \
        hp_str("v")
    c.headers(1, None, block=blk)
    return conn_error(c, COMPRESSION_ERROR)


@case("RFC 7541 5.1", "an integer that overflows (0x3f, 10 x 0xff, 0x01)",
      "connection error COMPRESSION_ERROR")
def c_hpack_int_overflow(e):
    c = e.conn()
    c.headers(1, None, block=b"\x3f" + b"\xff" * 10 + b"\x01" +
              hblock(e.req()))
    return conn_error(c, COMPRESSION_ERROR)


@case("RFC 9113 4.3, 6.10", "PRIORITY in the middle of a header block",
      "connection error PROTOCOL_ERROR")
def c_prio_in_block(e):
    c = e.conn()
    blk = hblock(e.req())
    c.headers(1, None, block=blk[:10], flags=END_STREAM)
    c.send_frame(PRIORITY, 0, 1, struct.pack(">IB", 0, 15))
    c.send_frame(CONTINUATION, END_HEADERS, 1, blk[10:])
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 4.3, 6.10", "HEADERS of another stream in the middle of a "
      "header block", "connection error PROTOCOL_ERROR")
def c_headers_in_block(e):
    c = e.conn()
    blk = hblock(e.req())
    c.headers(1, None, block=blk[:10], flags=END_STREAM)
    c.headers(3, e.req())
    c.send_frame(CONTINUATION, END_HEADERS, 1, blk[10:])
    return conn_error(c, PROTOCOL_ERROR)


# -- 5.1 stream states ------------------------------------------------------

frame_case("RFC 9113 5.1", "idle stream: DATA",
           PROTOCOL_ERROR, DATA, END_STREAM, 1, b"test")


frame_case("RFC 9113 5.1", "idle even (server) stream: DATA",
           PROTOCOL_ERROR, DATA, END_STREAM, 2, b"test")


frame_case("RFC 9113 5.1", "idle stream: RST_STREAM",
           PROTOCOL_ERROR, RST_STREAM, 0, 1, struct.pack(">I", CANCEL))


frame_case("RFC 9113 5.1", "idle stream: WINDOW_UPDATE",
           PROTOCOL_ERROR, WINDOW_UPDATE, 0, 1, struct.pack(">I", 100))


# (also the audit's 6.10 "CONTINUATION without any HEADERS": the same frame)
@case("RFC 9113 5.1, 6.10", "idle stream: CONTINUATION (no HEADERS before)",
      "connection error PROTOCOL_ERROR")
def c_idle_cont(e):
    c = e.conn()
    c.send_frame(CONTINUATION, END_HEADERS, 1, hblock(e.req()))
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 5.1", "idle stream: PRIORITY", "ignored")
def c_idle_prio(e):
    c = e.conn()
    c.send_frame(PRIORITY, 0, 3, struct.pack(">IB", 0, 15))
    return alive(c)


def half_closed(e):
    """A connection whose stream 1 is half-closed (remote): its request
    ended, and the origin never answers. The PING's answer says the
    proxy took the HEADERS. (Conn, None) or (Conn, why not)."""
    c = e.conn()
    c.headers(1, e.req(path=e.hang()))
    ok, why = alive(c)
    return c, None if ok else why


@case("RFC 9113 5.1", "half-closed (remote): DATA",
      "stream error STREAM_CLOSED")
def c_hcr_data(e):
    c, why = half_closed(e)
    if why:
        return setup_failed(why)
    c.send_frame(DATA, END_STREAM, 1, b"test")
    return stream_error(c, 1, STREAM_CLOSED)


@case("RFC 9113 5.1", "half-closed (remote): HEADERS",
      "stream error STREAM_CLOSED")
def c_hcr_headers(e):
    c, why = half_closed(e)
    if why:
        return setup_failed(why)
    c.headers(1, e.req())
    return stream_error(c, 1, STREAM_CLOSED)


@case("RFC 9113 5.1, 6.10", "half-closed (remote): CONTINUATION",
      "stream error STREAM_CLOSED, or PROTOCOL_ERROR (no HEADERS to "
      "continue)")
def c_hcr_cont(e):
    c, why = half_closed(e)
    if why:
        return setup_failed(why)
    c.send_frame(CONTINUATION, END_HEADERS, 1, hblock([("x-a", "b")]))
    return stream_error(c, 1, STREAM_CLOSED, PROTOCOL_ERROR)


@case("RFC 9113 5.1", "half-closed (remote): WINDOW_UPDATE and PRIORITY",
      "ignored, then served")
def c_hcr_wu(e):
    # The slow origin answers once two requests wait at once: stream 1
    # stays half-closed (remote) until stream 3 comes.
    c = e.conn()
    slow = e.slow.address
    c.headers(1, e.req(authority=slow))
    c.send_frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 1000))
    c.send_frame(PRIORITY, 0, 1, struct.pack(">IB", 0, 100))
    ok, note = alive(c)
    if not ok or c.stream(1).done:
        return False, "%s; stream 1 %s" % (note, "ended" if
                                           c.stream(1).done else "open")
    c.headers(3, e.req(authority=slow))
    ok1, n1 = response(c, 1)
    ok3, n3 = response(c, 3)
    return ok1 and ok3, "%s; stream 1: %s; stream 3: %s" % (note, n1, n3)


def served_one(e, c, sid=1):
    """Stream <sid> of <c> asked and answered: None, or why not."""
    c.headers(sid, e.req())
    st, _, _, how = read_response(c, sid)
    return None if how == "END_STREAM" else "stream %d: :status %s, %s" % (
        sid, st, how)


@case("RFC 9113 5.1", "closed (END_STREAM both ways): DATA",
      "connection error STREAM_CLOSED")
def c_closed_data(e):
    c = e.conn()
    why = served_one(e, c)
    if why:
        return setup_failed(why)
    c.send_frame(DATA, END_STREAM, 1, b"test")
    return conn_error(c, STREAM_CLOSED)


@case("RFC 9113 5.1", "closed (END_STREAM both ways): HEADERS",
      "connection error STREAM_CLOSED")
def c_closed_headers(e):
    c = e.conn()
    why = served_one(e, c)
    if why:
        return setup_failed(why)
    c.headers(1, e.req())
    return conn_error(c, STREAM_CLOSED)


@case("RFC 9113 5.1, 6.10", "closed: CONTINUATION",
      "connection error STREAM_CLOSED or PROTOCOL_ERROR")
def c_closed_cont(e):
    c = e.conn()
    why = served_one(e, c)
    if why:
        return setup_failed(why)
    c.send_frame(CONTINUATION, END_HEADERS, 1, hblock([("x-a", "b")]))
    return conn_error(c, STREAM_CLOSED, PROTOCOL_ERROR)


@case("RFC 9113 5.1", "closed: WINDOW_UPDATE and RST_STREAM right after "
      "it ended", "ignored")
def c_closed_wu(e):
    c = e.conn()
    why = served_one(e, c)
    if why:
        return setup_failed(why)
    c.send_frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 1000))
    c.send_frame(RST_STREAM, 0, 1, struct.pack(">I", CANCEL))
    return alive(c)


@case("RFC 9113 5.1", "closed by the client's RST_STREAM: DATA",
      "stream error STREAM_CLOSED")
def c_rst_then_data(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(RST_STREAM, 0, 1, struct.pack(">I", CANCEL))
    c.send_frame(DATA, END_STREAM, 1, b"test")
    return stream_error(c, 1, STREAM_CLOSED)


@case("RFC 9113 5.1", "closed by the client's RST_STREAM: PRIORITY",
      "ignored")
def c_rst_then_prio(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(RST_STREAM, 0, 1, struct.pack(">I", CANCEL))
    c.send_frame(PRIORITY, 0, 1, struct.pack(">IB", 0, 15))
    return alive(c)


# Not checked (RFC 9113 5.1): DATA on a stream the client ended more than
# 128 stream IDs before (stream 1 served, then 1001, then DATA on 1). By
# design it is ignored: worker/h2_ids.c remembers the last H2_IDS_RECENT
# (128) client IDs, and takes a DATA frame on an older one as crossing
# our RST_STREAM of a long-lived tunnel; 5.1 lets the time such frames
# are ignored be limited.


# -- 5.1.1 stream identifiers -----------------------------------------------

@case("RFC 9113 5.1.1", "HEADERS on an even stream",
      "connection error PROTOCOL_ERROR")
def c_even(e):
    c = e.conn()
    c.headers(2, e.req())
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 5.1.1", "a decreasing stream ID (5, then 3)",
      "connection error PROTOCOL_ERROR")
def c_decreasing(e):
    c = e.conn()
    c.headers(5, e.req())
    c.headers(3, e.req())
    return conn_error(c, PROTOCOL_ERROR)


# RFC 9113 5.1.1 asks for PROTOCOL_ERROR: stream 3 was never used. But
# worker/h2_ids.c remembers only the last 128 client IDs, and an ID
# below the highest and older than those is taken as a stream that
# ended: GOAWAY STREAM_CLOSED. Either is a connection error, which is
# what matters (the stream is never served), so either passes.
@case("RFC 9113 5.1.1", "HEADERS on a never-used stream ID far below the "
      "highest (1 and 1001 served, then 3)", "connection error "
      "PROTOCOL_ERROR or STREAM_CLOSED (h2_ids.c's 128-ID window), not "
      "forwarded")
def c_decreasing_far(e):
    c = e.conn()
    c.headers(1, e.req())
    c.headers(1001, e.req())
    c.until(lambda: (c.stream(1).done and c.stream(1001).done) or
            c.goaway is not None)
    if not (c.stream(1).ended and c.stream(1001).ended):
        return setup_failed("streams 1 and 1001 not both served")
    tag = e.tag()
    c.headers(3, e.req(path="/echo?" + tag))
    return nofwd(e, tag, conn_error(c, PROTOCOL_ERROR, STREAM_CLOSED))


# -- 5.1.2 stream concurrency -----------------------------------------------

@case("RFC 9113 5.1.2", "one stream past SETTINGS_MAX_CONCURRENT_STREAMS "
      "(all waiting on the origin)",
      "stream error PROTOCOL_ERROR or REFUSED_STREAM on that stream")
def c_max_streams(e):
    c = e.conn()
    mx = c.server_settings.get(S_MAX_CONCURRENT_STREAMS)
    if mx is None or mx > 500:
        return setup_failed("the proxy announced MAX_CONCURRENT_STREAMS "
                            "%s" % mx)
    raw = b"".join(frame(HEADERS, END_HEADERS | END_STREAM, 1 + 2 * i,
                         hblock(e.req(path=e.hang())))
                   for i in range(mx + 1))
    c.send(raw, note="%d HEADERS (GET /hang) on streams 1..%d" % (
        mx + 1, 1 + 2 * mx))
    # (the ACK of its SETTINGS went first: nghttp2 1.52 then makes it a
    # connection error PROTOCOL_ERROR, which 5.4.1 allows)
    return stream_error(c, 1 + 2 * mx, PROTOCOL_ERROR, REFUSED_STREAM)


# -- 5.3 to 5.5 -------------------------------------------------------------

@case("RFC 9113 5.3.1", "PRIORITY: a stream depending on itself",
      "stream error PROTOCOL_ERROR")
def c_prio_self(e):
    c = e.conn()
    c.send_frame(PRIORITY, 0, 1, struct.pack(">IB", 1, 15))
    return stream_error(c, 1, PROTOCOL_ERROR)


@case("RFC 9113 5.3.1", "HEADERS with a priority depending on itself",
      "stream error PROTOCOL_ERROR")
def c_headers_prio_self(e):
    c = e.conn()
    c.headers(1, e.req(), flags=END_HEADERS | END_STREAM | PRIO,
              prefix=struct.pack(">IB", 1, 15))
    return stream_error(c, 1, PROTOCOL_ERROR)


# RFC 9113 5.4.1 (after the GOAWAY of a connection error, the close) is
# part of every "connection error" verdict here.

@case("RFC 9113 5.5, 6.5.2", "unknown SETTINGS identifiers (0xff, 0x4242)",
      "SETTINGS ACK, then ignored")
def c_unknown_setting(e):
    c = e.conn()
    c.send_frame(SETTINGS, 0, 0, settings_payload([(0xff, 1), (0x4242, 7)]))
    f = first_frame(c, SETTINGS, GOAWAY)
    if f is None or f.type != SETTINGS or not f.flags & ACK:
        return False, f.describe() if f else "no SETTINGS ACK"
    return alive(c)


@case("RFC 9113 5.5", "an unknown extension frame in the middle of a "
      "header block", "connection error PROTOCOL_ERROR")
def c_unknown_in_block(e):
    c = e.conn()
    blk = hblock(e.req())
    c.headers(1, None, block=blk[:10], flags=END_STREAM)
    c.send_frame(0x20, 0, 1, b"unknown")
    c.send_frame(CONTINUATION, END_HEADERS, 1, blk[10:])
    return conn_error(c, PROTOCOL_ERROR)


# -- 6.1 DATA ---------------------------------------------------------------

frame_case("RFC 9113 6.1", "DATA on stream 0",
           PROTOCOL_ERROR, DATA, END_STREAM, 0, b"test")


@case("RFC 9113 6.1", "DATA whose pad length is the payload's length",
      "connection error PROTOCOL_ERROR")
def c_data_pad(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(DATA, END_STREAM | PADDED, 1, b"\x05test")
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 6.1", "DATA with a valid padding", "served")
def c_data_pad_ok(e):
    c = e.conn()
    c.headers(1, e.req("POST", extra=[("content-length", "4")]),
              flags=END_HEADERS)
    c.send_frame(DATA, END_STREAM | PADDED, 1, b"\x03test\x00\x00\x00")
    return response(c, 1)


# -- 6.2 HEADERS ------------------------------------------------------------

@case("RFC 9113 6.2", "HEADERS on stream 0",
      "connection error PROTOCOL_ERROR")
def c_headers_0(e):
    c = e.conn()
    c.headers(0, e.req())
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 6.2", "HEADERS whose pad length is past the payload",
      "connection error PROTOCOL_ERROR")
def c_headers_pad(e):
    c = e.conn()
    blk = hblock(e.req())
    c.headers(1, None, block=blk, flags=END_HEADERS | END_STREAM | PADDED,
              prefix=bytes([len(blk) + 10]))
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 6.2", "HEADERS with PADDED and PRIORITY, both valid",
      "served")
def c_headers_pad_prio_ok(e):
    c = e.conn()
    c.headers(1, None, block=hblock(e.req()) + b"\x00" * 6,
              flags=END_HEADERS | END_STREAM | PADDED | PRIO,
              prefix=b"\x06" + struct.pack(">IB", 0, 200))
    return response(c, 1)


@case("RFC 9113 6.2, 6.10", "HEADERS without END_HEADERS, then DATA",
      "connection error PROTOCOL_ERROR")
def c_headers_then_data(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=0)
    c.send_frame(DATA, END_STREAM, 1, b"test")
    return conn_error(c, PROTOCOL_ERROR)


# -- 6.3 to 6.8 -------------------------------------------------------------

frame_case("RFC 9113 6.3", "PRIORITY on stream 0",
           PROTOCOL_ERROR, PRIORITY, 0, 0, struct.pack(">IB", 1, 15))


frame_case("RFC 9113 6.4", "RST_STREAM on stream 0",
           PROTOCOL_ERROR, RST_STREAM, 0, 0, struct.pack(">I", CANCEL))


frame_case("RFC 9113 6.5", "SETTINGS with ACK and a payload",
           FRAME_SIZE_ERROR,
           SETTINGS, ACK, 0, settings_payload([(S_ENABLE_PUSH, 0)]))


frame_case("RFC 9113 6.5", "SETTINGS on stream 1",
           PROTOCOL_ERROR,
           SETTINGS, 0, 1, settings_payload([(S_ENABLE_PUSH, 0)]))


frame_case("RFC 9113 6.5.2", "SETTINGS_ENABLE_PUSH 2",
           PROTOCOL_ERROR,
           SETTINGS, 0, 0, settings_payload([(S_ENABLE_PUSH, 2)]))


frame_case("RFC 9113 6.5.2", "SETTINGS_INITIAL_WINDOW_SIZE 2^31",
           FLOW_CONTROL_ERROR,
           SETTINGS, 0, 0, settings_payload([(S_INITIAL_WINDOW_SIZE,1 << 31)]))


frame_case("RFC 9113 6.5.2", "SETTINGS_MAX_FRAME_SIZE 16383 (below the least)",
           PROTOCOL_ERROR,
           SETTINGS, 0, 0, settings_payload([(S_MAX_FRAME_SIZE,16383)]))


frame_case("RFC 9113 6.5.2", "SETTINGS_MAX_FRAME_SIZE 2^24 (past the most)",
           PROTOCOL_ERROR,
           SETTINGS, 0, 0, settings_payload([(S_MAX_FRAME_SIZE,1 << 24)]))


@case("RFC 9113 6.5.3", "SETTINGS (MAX_HEADER_LIST_SIZE 65536)",
      "acknowledged: SETTINGS with ACK, empty")
def c_settings_acked(e):
    c = e.conn()
    c.send_frame(SETTINGS, 0, 0, settings_payload([(S_MAX_HEADER_LIST_SIZE,
                                                    65536)]))
    f = first_frame(c, SETTINGS, GOAWAY)
    if f is None:
        return False, "no SETTINGS ACK (%s)" % (c.closed or "open")
    return f.type == SETTINGS and f.flags == ACK and not f.payload, \
        f.describe()


frame_case("RFC 8441 3", "SETTINGS_ENABLE_CONNECT_PROTOCOL 2 (0 or 1 only)",
           PROTOCOL_ERROR,
           SETTINGS, 0, 0, settings_payload([(S_ENABLE_CONNECT_PROTOCOL,2)]))


@case("RFC 9113 6.6, 8.4", "PUSH_PROMISE from the client",
      "connection error PROTOCOL_ERROR")
def c_push_promise(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(PUSH_PROMISE, END_HEADERS, 1,
                 struct.pack(">I", 2) + hblock(e.req()))
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 6.7", "PING", "answered: PING ACK with the same payload")
def c_ping(e):
    return alive(e.conn())


@case("RFC 9113 6.7", "a PING with ACK from the client, then a PING",
      "only the second answered")
def c_ping_ack(e):
    c = e.conn()
    c.send_frame(PING, ACK, 0, b"unsolicd")
    c.send_frame(PING, 0, 0, b"solicitd")
    f = first_frame(c, PING, GOAWAY)
    if f is None:
        return False, "no PING ACK (%s)" % (c.closed or "open")
    return f.type == PING and f.flags == ACK and f.payload == b"solicitd", \
        "%s payload %r" % (f.describe(), f.payload)


frame_case("RFC 9113 6.7", "PING on stream 1",
           PROTOCOL_ERROR, PING, 0, 1, b"12345678")


frame_case("RFC 9113 6.8", "GOAWAY on stream 1",
           PROTOCOL_ERROR, GOAWAY, 0, 1, struct.pack(">II", 0, 0))


# -- 6.9 WINDOW_UPDATE and flow control -------------------------------------

frame_case("RFC 9113 6.9", "WINDOW_UPDATE of 0 on the connection",
           PROTOCOL_ERROR, WINDOW_UPDATE, 0, 0, struct.pack(">I", 0))


@case("RFC 9113 6.9", "WINDOW_UPDATE of 0 on an open stream",
      "stream error PROTOCOL_ERROR")
def c_wu0_stream(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 0))
    return stream_error(c, 1, PROTOCOL_ERROR)


@case("RFC 9113 6.9.1", "the connection's window past 2^31-1",
      "connection error FLOW_CONTROL_ERROR")
def c_wu_overflow_conn(e):
    c = e.conn()
    c.send_frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 0x7fffffff))
    c.send_frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 0x7fffffff))
    return conn_error(c, FLOW_CONTROL_ERROR)


@case("RFC 9113 6.9.1", "a stream's window past 2^31-1 (its response "
      "pending)", "stream error FLOW_CONTROL_ERROR")
def c_wu_overflow_stream(e):
    c, why = half_closed(e)
    if why:
        return setup_failed(why)
    c.send_frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 0x7fffffff))
    c.send_frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 0x7fffffff))
    return stream_error(c, 1, FLOW_CONTROL_ERROR)


@case("RFC 9113 6.9.1", "DATA past the stream's window",
      "stream error FLOW_CONTROL_ERROR")
def c_data_beyond_window(e):
    c = e.conn()
    win = c.server_settings.get(S_INITIAL_WINDOW_SIZE, 65535)
    c.headers(1, e.req("POST", path=e.hang()), flags=END_HEADERS)
    raw, left = b"", win + 1
    while left > 0:
        n = min(left, 16384)
        raw += frame(DATA, 0, 1, b"x" * n)
        left -= n
    c.send(raw, note="DATA frames on stream 1, %d bytes in all (the "
           "proxy's window %d), in one write" % (win + 1, win))
    return stream_error(c, 1, FLOW_CONTROL_ERROR)


@case("RFC 9113 6.9.1", "the client's SETTINGS_INITIAL_WINDOW_SIZE 1000, a "
      "40960-byte response, no WINDOW_UPDATE",
      "no more than 1000 octets of DATA")
def c_small_window(e):
    c = e.conn(settings=[(S_INITIAL_WINDOW_SIZE, 1000)])
    c.give_back = False
    c.headers(1, e.req(path="/len?n=40960&" + e.tag()))
    st = c.stream(1)
    # the window's worth, then whatever the proxy sent before a PING's
    # answer: nothing more may come
    c.until(lambda: len(st.body) >= 1000 or st.done or c.goaway is not None)
    ok, note = alive(c)
    got = len(st.body)
    return ok and 0 < got <= 1000 and not st.done, \
        "%d octets of DATA, stream %s; %s" % (
            got, "ended" if st.done else "open", note)


# Not checked (RFC 9113 6.9.2): a SETTINGS_INITIAL_WINDOW_SIZE change that
# takes an open stream's window past 2^31-1 is a connection error
# FLOW_CONTROL_ERROR, but libnghttp2 (1.52) answers RST_STREAM
# FLOW_CONTROL_ERROR on the stream: the library's behaviour, not
# portico's.

@case("RFC 9113 6.9.2", "the client's SETTINGS_INITIAL_WINDOW_SIZE 0, "
      "then 65535", "HEADERS and no DATA while 0, then the body")
def c_iws_zero(e):
    c = e.conn(settings=[(S_INITIAL_WINDOW_SIZE, 0)])
    c.headers(1, e.req(path="/len?n=1000&" + e.tag()))
    st = c.stream(1)
    c.until(lambda: st.status is not None or st.done or c.goaway is not None)
    if st.status is None:
        return False, "no HEADERS while the window was 0"
    ok, note = alive(c)
    if not ok or st.body or st.done:
        return False, "while 0: %s, %d octets of DATA, stream %s" % (
            note, len(st.body), "ended" if st.done else "open")
    c.send_frame(SETTINGS, 0, 0, settings_payload([(S_INITIAL_WINDOW_SIZE,
                                                    65535)]))
    _, _, body, how = read_response(c, 1)
    return how == "END_STREAM" and body == H.pattern(1000), \
        "none while 0; then %d body bytes%s, %s" % (
            len(body), "" if body == H.pattern(1000) else " (wrong)", how)


# -- 6.10 CONTINUATION ------------------------------------------------------

@case("RFC 9113 6.10", "HEADERS and three CONTINUATION frames", "served")
def c_cont_ok(e):
    c = e.conn()
    blk = hblock(e.req(extra=[("x-pad", "p" * 100)]))
    c.headers(1, None, block=blk[:20], flags=END_STREAM)
    c.send_frame(CONTINUATION, 0, 1, blk[20:60])
    c.send_frame(CONTINUATION, 0, 1, blk[60:100])
    c.send_frame(CONTINUATION, END_HEADERS, 1, blk[100:])
    return response(c, 1)


@case("RFC 9113 6.10", "CONTINUATION without END_HEADERS, then DATA",
      "connection error PROTOCOL_ERROR")
def c_cont_then_data(e):
    c = e.conn()
    blk = hblock(e.req("POST"))
    c.headers(1, None, block=blk[:10], flags=0)
    c.send_frame(CONTINUATION, 0, 1, blk[10:])
    c.send_frame(DATA, END_STREAM, 1, b"test")
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 6.10", "CONTINUATION on stream 0",
      "connection error PROTOCOL_ERROR")
def c_cont_0(e):
    c = e.conn()
    blk = hblock(e.req())
    c.headers(1, None, block=blk[:10], flags=END_STREAM)
    c.send_frame(CONTINUATION, END_HEADERS, 0, blk[10:])
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 6.10", "CONTINUATION after HEADERS with END_HEADERS",
      "connection error PROTOCOL_ERROR")
def c_cont_after_end(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(CONTINUATION, END_HEADERS, 1, hblock([("x-a", "b")]))
    return conn_error(c, PROTOCOL_ERROR)


@case("RFC 9113 6.10", "CONTINUATION on another stream",
      "connection error PROTOCOL_ERROR")
def c_cont_other_stream(e):
    c = e.conn()
    blk = hblock(e.req())
    c.headers(1, None, block=blk[:10], flags=END_STREAM)
    c.send_frame(CONTINUATION, END_HEADERS, 3, blk[10:])
    return conn_error(c, PROTOCOL_ERROR)


# -- 8.1 message framing ----------------------------------------------------

@case("RFC 9113 8.1", "a second HEADERS (trailers) without END_STREAM",
      "stream error PROTOCOL_ERROR")
def c_trailers_noend(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(DATA, 0, 1, b"test")
    c.headers(1, [("x-trailer", "t")], flags=END_HEADERS)
    return stream_error(c, 1, PROTOCOL_ERROR)


@case("RFC 9113 8.1", "trailers with END_STREAM", "served")
def c_trailers_ok(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(DATA, 0, 1, b"test")
    c.headers(1, [("x-trailer", "t")], flags=END_HEADERS | END_STREAM)
    return response(c, 1)


@case("RFC 9113 8.1", "trailers with a pseudo-field (:method)",
      "stream error PROTOCOL_ERROR")
def c_trailers_pseudo(e):
    c = e.conn()
    c.headers(1, e.req("POST"), flags=END_HEADERS)
    c.send_frame(DATA, 0, 1, b"test")
    c.headers(1, [(":method", "GET"), ("x-trailer", "t")],
              flags=END_HEADERS | END_STREAM)
    return stream_error(c, 1, PROTOCOL_ERROR)


@case("RFC 9113 8.1.1", "content-length 1, DATA of 4 octets",
      "stream error PROTOCOL_ERROR")
def c_cl_more(e):
    c = e.conn()
    c.headers(1, e.req("POST", extra=[("content-length", "1")]),
              flags=END_HEADERS)
    c.send_frame(DATA, END_STREAM, 1, b"test")
    return stream_error(c, 1, PROTOCOL_ERROR)


@case("RFC 9113 8.1.1", "content-length 8, DATA of 4 octets and "
      "END_STREAM", "stream error PROTOCOL_ERROR")
def c_cl_less(e):
    c = e.conn()
    c.headers(1, e.req("POST", extra=[("content-length", "8")]),
              flags=END_HEADERS)
    c.send_frame(DATA, END_STREAM, 1, b"test")
    return stream_error(c, 1, PROTOCOL_ERROR)


@case("RFC 9113 8.1.1", "content-length 8 on HEADERS with END_STREAM",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_cl_none(e):
    c = e.conn()
    tag = e.tag()
    c.headers(1, e.req("POST", path="/echo?" + tag,
                       extra=[("content-length", "8")]))
    return nofwd(e, tag, stream_error(c, 1, PROTOCOL_ERROR))


@case("RFC 9113 8.1.1", "content-length 4 in two DATA frames (2 + 2)",
      "served")
def c_cl_ok(e):
    c = e.conn()
    c.headers(1, e.req("POST", extra=[("content-length", "4")]),
              flags=END_HEADERS)
    c.send_frame(DATA, 0, 1, b"te")
    c.send_frame(DATA, END_STREAM, 1, b"st")
    return response(c, 1)


# -- 8.2 fields -------------------------------------------------------------

def malformed(e, build, or_400=False):
    """A request whose fields build(tag) gives (the tag in :path or a
    field): malformed, and never at the origin."""
    c = e.conn()
    tag = e.tag()
    c.headers(1, build(tag))
    v = stream_error_or_400(c, 1) if or_400 else \
        stream_error(c, 1, PROTOCOL_ERROR)
    return nofwd(e, tag, v)


def with_fields(e, extra, or_400=False):
    return malformed(e, lambda tag: e.req(path="/echo?" + tag, extra=extra),
                     or_400)


def without(hs, name):
    return [(n, v) for n, v in hs if n != name]


@case("RFC 9113 8.2.1", "an uppercase field name (X-Test)",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_upper(e):
    return with_fields(e, [("X-Test", "ok")])


def _conn_specific(n, v):
    @case("RFC 9113 8.2.2", "the connection-specific field %s: %s" % (n, v),
          "malformed: stream error PROTOCOL_ERROR, not forwarded")
    def _c(e):
        return with_fields(e, [(n, v)])


for _n, _v in (("connection", "keep-alive"), ("keep-alive", "timeout=5"),
               ("proxy-connection", "keep-alive"),
               ("transfer-encoding", "chunked"), ("upgrade", "h2c")):
    _conn_specific(_n, _v)


@case("RFC 9113 8.2.2", "te: trailers", "served")
def c_te_trailers(e):
    c = e.conn()
    c.headers(1, e.req(extra=[("te", "trailers")]))
    return response(c, 1)


@case("RFC 9113 8.2.2", "te: trailers, deflate",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_te_other(e):
    return with_fields(e, [("te", "trailers, deflate")])


for _name, _n, _v in (("a field name with a space", "x test", "v"),
                      ("a field name with a colon inside", "x:test", "v"),
                      ("a field value with LF", "x-test",
                       "a\nx-injected: b"),
                      ("a field value with NUL", "x-test", "a\x00b"),
                      ("a field value with leading whitespace", "x-test",
                       " v")):
    def _bad_field(name, n, v):
        @case("RFC 9113 8.2.1", "%s (%r: %r)" % (name, n, v),
              "malformed: RST_STREAM PROTOCOL_ERROR or 400, not forwarded")
        def _c(e):
            return with_fields(e, [(n, v)], or_400=True)
    _bad_field(_name, _n, _v)


# -- 8.3 control data -------------------------------------------------------

@case("RFC 9113 8.3", "an unknown pseudo-field (:foo)",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_pseudo_unknown(e):
    return with_fields(e, [(":foo", "bar")])


@case("RFC 9113 8.3", "a response pseudo-field (:status) in a request",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_pseudo_status(e):
    return with_fields(e, [(":status", "200")])


@case("RFC 9113 8.3", "a pseudo-field after a regular field",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_pseudo_late(e):
    def b(tag):
        hs = e.req(path="/echo?" + tag)
        return hs[:3] + [("x-test", "ok")] + hs[3:]
    return malformed(e, b)


@case("RFC 9113 8.3.1", "a duplicated :method",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_dup_method(e):
    return malformed(e, lambda tag: [(":method", "GET")] +
                     e.req(path="/echo?" + tag))


@case("RFC 9113 8.3.1", "a duplicated :scheme",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_dup_scheme(e):
    return malformed(e, lambda tag: [(":scheme", "http")] +
                     e.req(path="/echo?" + tag))


@case("RFC 9113 8.3.1", "a duplicated :path",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_dup_path(e):
    return malformed(e, lambda tag: e.req(path="/echo?" + tag) +
                     [(":path", "/echo?" + tag)])


@case("RFC 9113 8.3.1", "a duplicated :authority",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_dup_auth(e):
    def b(tag):
        hs = e.req(path="/echo?" + tag)
        return hs[:3] + [(":authority", e.auth)] + hs[3:]
    return malformed(e, b)


@case("RFC 9113 8.3.1", "no :method",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_no_method(e):
    return malformed(e, lambda tag: without(e.req(path="/echo?" + tag),
                                            ":method"))


@case("RFC 9113 8.3.1", "no :scheme",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_no_scheme(e):
    return malformed(e, lambda tag: without(e.req(path="/echo?" + tag),
                                            ":scheme"))


@case("RFC 9113 8.3.1", "no :path",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_no_path(e):
    return malformed(e, lambda tag: without(e.req(), ":path") +
                     [("x-tag", tag)])


@case("RFC 9113 8.3.1", "an empty :path",
      "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_empty_path(e):
    return malformed(e, lambda tag: without(e.req(), ":path") +
                     [(":path", ""), ("x-tag", tag)])


@case("RFC 9113 8.3.1", "a host field naming another authority than "
      ":authority", "malformed: stream error PROTOCOL_ERROR, not forwarded")
def c_host_mismatch(e):
    return with_fields(e, [("host", "other.example:81")])


@case("RFC 9113 8.3.1", "a :path that is an absolute URI, :scheme ftp, "
      ":authority another host", "malformed: RST_STREAM PROTOCOL_ERROR (or "
      "a 4xx or 5xx), never forwarded to the host in :path")
def c_path_absolute(e):
    c = e.conn()
    tag = e.tag()
    c.headers(1, [(":method", "GET"), (":scheme", "ftp"),
                  (":authority", "other.invalid:80"),
                  (":path", "http://%s/echo?%s" % (e.auth, tag))])
    st, _, _, how = read_response(c, 1)
    ok = how == "RST_STREAM PROTOCOL_ERROR" or (
        st is not None and st[0] in "45")
    return nofwd(e, tag, (ok, ":status %s, %s" % (st, how)))


# -- 8.1 to 8.3: requests served --------------------------------------------

@case("RFC 9113 8.1", "a GET through the proxy",
      "served: 200 and the origin's 100 bytes, the origin saw it once")
def c_get(e):
    c = e.conn()
    tag = e.tag()
    c.headers(1, e.req(path="/len?n=100&" + tag))
    ok, note = response(c, 1, body=H.pattern(100))
    n = len(e.o.reqs_for(tag))
    return ok and n == 1, "%s; the origin saw it %d times" % (note, n)


@case("RFC 9113 8.1", "a POST with an 11-byte body",
      "served, the origin got the body")
def c_post(e):
    c = e.conn()
    tag = e.tag()
    c.headers(1, e.req("POST", path="/echo?" + tag), flags=END_HEADERS)
    c.send_frame(DATA, END_STREAM, 1, b"hello world")
    ok, note = response(c, 1)
    got = [r["body"] for r in e.o.reqs_for(tag)]
    return ok and got == ["hello world"], "%s; the origin got %r" % (
        note, got)


@case("RFC 9113 8.1, 4.2", "a 40960-byte response, the window given back",
      "served whole, no DATA frame past 16384 octets")
def c_big(e):
    c = e.conn()
    c.headers(1, e.req(path="/len?n=40960&" + e.tag()))
    ok, note = response(c, 1, body=H.pattern(40960))
    lens = c.stream(1).data_lens
    return ok and max(lens or [0]) <= 16384, "%s; DATA frames of %s" % (
        note, lens)


@case("RFC 9113 8.1", "three streams at once", "each served")
def c_concurrent(e):
    c = e.conn()
    for sid in (1, 3, 5):
        c.headers(sid, e.req(path="/len?n=100&" + e.tag()))
    got = [response(c, sid, body=H.pattern(100)) for sid in (1, 3, 5)]
    return all(ok for ok, _ in got), "; ".join(n for _, n in got)


CONN_SPECIFIC = ("connection", "keep-alive", "proxy-connection",
                 "transfer-encoding", "upgrade", "x-resp-hop")


@case("RFC 9113 8.2.2", "an origin's Connection (naming X-Resp-Hop), "
      "Keep-Alive, Proxy-Connection, Upgrade and Transfer-Encoding",
      "none of them in the responses, field names lower case")
def c_resp_hop(e):
    c = e.conn()
    c.headers(1, e.req(path="/hop?" + e.tag()))
    c.headers(3, e.req(path="/chunked?n=100&" + e.tag()))
    notes, ok = [], True
    for sid in (1, 3):
        st, hs, body, how = read_response(c, sid)
        names = [n for n, _ in hs]
        bad = [n for n in names if n.lower() in CONN_SPECIFIC or
               n != n.lower()]
        ok = ok and st == "200" and how == "END_STREAM" and not bad
        notes.append("stream %d: :status %s, %s, fields %s" % (
            sid, st, how, names))
    kept = "x-resp-end" in [n for n, _ in c.stream(1).headers]
    return ok and kept, "; ".join(notes) + ("" if kept else
                                            "; x-resp-end lost")


@case("RFC 9113 8.1, RFC 9110 9.3.2", "HEAD",
      ":status 200 and END_STREAM, no content")
def c_head(e):
    c = e.conn()
    c.headers(1, e.req("HEAD", path="/len?n=100&" + e.tag()))
    st, _, body, how = read_response(c, 1)
    return st == "200" and how == "END_STREAM" and body == b"", \
        ":status %s, %d body bytes in %d DATA frames, %s" % (
            st, len(body), len(c.stream(1).data_lens), how)


@case("RFC 9113 6.5.2, RFC 7541 4.2", "the client's "
      "SETTINGS_HEADER_TABLE_SIZE 0", "two responses that decode with no "
      "dynamic table entry")
def c_table_size_0(e):
    c = e.conn(settings=[(S_HEADER_TABLE_SIZE, 0)])
    c.dec.max_allowed_table_size = 0
    res = []
    for sid in (1, 3):
        c.headers(sid, e.req())
        st, hs, _, how = read_response(c, sid)
        res.append((st, how))
        if any(n == "x-decode-error" for n, _ in hs):
            return False, "decode error %s" % hs
    ents = len(c.dec.header_table.dynamic_entries)
    ok = res == [("200", "END_STREAM")] * 2 and ents == 0
    return ok, "responses %s, %d dynamic entries" % (res, ents)


# -- 8.5 CONNECT ------------------------------------------------------------

def connect_fields(authority):
    return [(":method", "CONNECT"), (":authority", authority)]


@case("RFC 9113 8.5", "CONNECT with :scheme",
      "malformed: stream error PROTOCOL_ERROR, no tunnel")
def c_connect_scheme(e):
    return malformed_connect(e, connect_fields(e.never.address)[:1] +
                             [(":scheme", "http")] +
                             connect_fields(e.never.address)[1:])


@case("RFC 9113 8.5", "CONNECT with :path",
      "malformed: stream error PROTOCOL_ERROR, no tunnel")
def c_connect_path(e):
    return malformed_connect(e, connect_fields(e.never.address) +
                             [(":path", "/")])


@case("RFC 9113 8.5", "CONNECT without :authority",
      "malformed: stream error PROTOCOL_ERROR, no tunnel")
def c_connect_noauth(e):
    return malformed_connect(e, [(":method", "CONNECT")])


def malformed_connect(e, hs):
    """A malformed CONNECT: reset, and the target (e.never, named where
    there is an :authority) never sees a connection."""
    c = e.conn()
    c.headers(1, hs, flags=END_HEADERS)
    ok, note = stream_error(c, 1, PROTOCOL_ERROR)
    e.settle()
    n = e.never.accepted
    return ok and n == 0, "%s; %d connections at the target" % (note, n)


def open_tunnel(e, c, target, sid=1):
    """A CONNECT to <target> on <c>: None once :status 200 came, else why
    not."""
    c.headers(sid, connect_fields(target), flags=END_HEADERS)
    st = c.stream(sid)
    c.until(lambda: st.status is not None or st.done or c.goaway is not None)
    if st.status == "200" and not st.done:
        return None
    return "CONNECT: :status %s, %s" % (st.status, "; ".join(c.seen[-3:]))


@case("RFC 9113 8.5", "CONNECT to a listening target",
      "a tunnel: :status 200 without END_STREAM")
def c_connect_ok(e):
    c = e.conn()
    why = open_tunnel(e, c, e.echo.address)
    c.send_frame(RST_STREAM, 0, 1, struct.pack(">I", CANCEL))
    return why is None, why or ":status 200, the stream open"


@case("RFC 9113 8.5", "a tunnel whose target sends 1000 bytes and closes "
      "(FIN)", "the bytes as DATA, then END_STREAM")
def c_tunnel_fin(e):
    c = e.conn()
    why = open_tunnel(e, c, e.src.address)
    if why:
        return setup_failed(why)
    _, _, body, how = read_response(c, 1)
    ok = how == "END_STREAM" and \
        hashlib.sha256(body).hexdigest() == e.src.digest
    return ok, "%d bytes%s, %s" % (
        len(body), "" if ok else " (sha256 differs)", how)


@case("RFC 9113 8.5", "a tunnel whose target resets its TCP connection",
      "stream error CONNECT_ERROR")
def c_tunnel_rst(e):
    c = e.conn()
    why = open_tunnel(e, c, e.rst.address)
    if why:
        return setup_failed(why)
    c.send_frame(DATA, 0, 1, b"R")
    return stream_error(c, 1, CONNECT_ERROR)


def tunnel_echoed(e, c):
    """A tunnel on stream 1 to the echo target, a line through it and
    back: None, or why not."""
    why = open_tunnel(e, c, e.echo.address)
    if why:
        return why
    c.send_frame(DATA, 0, 1, b"hello\n")
    st = c.stream(1)
    c.until(lambda: bytes(st.body) == b"hello\n" or st.done or
            c.goaway is not None)
    return None if bytes(st.body) == b"hello\n" else "no echo: %r" % \
        bytes(st.body)


@case("RFC 9113 8.5", "HEADERS with END_STREAM on a tunnel",
      "stream error (RST_STREAM with an error code)")
def c_tunnel_headers_end(e):
    c = e.conn()
    why = tunnel_echoed(e, c)
    if why:
        return setup_failed(why)
    c.headers(1, [("x-trailer", "t")], flags=END_HEADERS | END_STREAM)
    return stream_error(c, 1, *range(1, 14))


@case("RFC 9113 8.5", "HEADERS without END_STREAM on a tunnel",
      "stream error (RST_STREAM with an error code)")
def c_tunnel_headers(e):
    c = e.conn()
    why = tunnel_echoed(e, c)
    if why:
        return setup_failed(why)
    c.headers(1, [("x-trailer", "t")], flags=END_HEADERS)
    return stream_error(c, 1, *range(1, 14))


# ---------------------------------------------------------------------------

def run_case(t, e, section, name, expect, fn):
    e.c = None
    t0 = time.monotonic()
    try:
        ok, note = fn(e)
    except Exception as ex:
        ok, note = False, "%s: %s" % (type(ex).__name__, ex)
    took = time.monotonic() - t0
    c = e.c
    sent = list(c.sent_notes) if c else []
    got = c.observed() if c else ["nothing"]
    if c is not None:
        c.close()
    t.check(ok, "%s: %s: %s" % (section, name, expect), lambda: [
        "observed: %s (%.1f s)" % (note, took), "sent:"] +
        ["  " + s for s in sent[:40]] + ["received:"] +
        ["  " + s for s in got[:40]])


def main(t):
    if not h2t.ready(t, "HTTP/2 conformance"):
        return
    only = sys.argv[1:]
    port = ptest.free_port()
    e = Env(t, port)
    p = t.portico(H.http_conf(t, port))
    w0 = p.workers()
    t0 = time.monotonic()
    n = 0
    for section, name, expect, fn in CASES:
        if only and not any(s in section or s in name for s in only):
            continue
        run_case(t, e, section, name, expect, fn)
        n += 1
    t.diag("%d cases in %.1f s" % (n, time.monotonic() - t0))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("h2_conformance").run(main)
