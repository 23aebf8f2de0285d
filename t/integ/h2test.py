# SPDX-License-Identifier: BSD-2-Clause
"""
h2test: what the t/integ/h2_*.py scenarios share, on top of ptest: an
HTTP/2 client over Debian's python3-h2, and the loopback servers behind
the proxy that HTTP/2 needs and httptest.Origin is not.

- Client: one HTTP/2 connection with prior knowledge (h2c) or over a TLS
  socket that chose h2 by ALPN. One thread: a select loop over the
  socket (non-blocking, so neither side can wedge the other with a full
  buffer) that sends what flow control allows and reads what comes.
  Streams collect :status, headers (names as received, not lowercased
  by us), body and how they ended (END_STREAM or RST_STREAM). A stream
  may be held: its received bytes are not acknowledged, so no
  WINDOW_UPDATE is sent for it (the connection window is given back, so
  one held stream stalls itself and nothing else), until release().
  h2 raises on a peer that breaks the protocol, flow control included
  (more DATA than the window we gave): the client then records the error
  and is dead, which every waiting check sees.
- TunnelTarget: an echo server for CONNECT tunnels that remembers, per
  connection, its first line (the test's tag), the bytes read and how
  the connection ended (the client's EOF or a reset); with note_eof it
  answers the EOF with "[eof after N bytes]" before closing (a
  half-close made visible).
- SlowOrigin: an HTTP/1.1 origin whose answers wait: <delay> seconds,
  or until <together> requests wait at once (a barrier: proof that the
  proxy forwarded that many streams concurrently; 503 if they never do
  within the bound).

python3-h2 is Debian's (/usr/lib/python3/dist-packages): a python3 that
is not Debian's (pyenv, a venv) does not see it, so that directory is
tried last, after the interpreter's own paths. The package is pure
Python.
"""
import base64
import hashlib
import os
import select
import socket
import ssl
import sys
import threading
import time

import ptest

_DEBIAN = "/usr/lib/python3/dist-packages"
try:
    import h2  # noqa: F401
except ImportError:
    if os.path.isdir(os.path.join(_DEBIAN, "h2")):
        sys.path.append(_DEBIAN)
try:
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    _IMPORT_ERROR = None
except ImportError as e:
    _IMPORT_ERROR = str(e)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# SETTINGS identifiers (RFC 9113 6.5.2, RFC 8441 3)
MAX_CONCURRENT_STREAMS = 0x3
ENABLE_CONNECT_PROTOCOL = 0x8

# Our SETTINGS_INITIAL_WINDOW_SIZE: the default, which the client keeps.
STREAM_WINDOW = 65535

CANCEL = 0x8                    # RST_STREAM error code (RFC 9113 7)

# Our connection window: large, so that the bytes of a held stream never
# starve the others at the connection level.
CONN_WINDOW = 1 << 30


NO_BUILD = "portico built without libnghttp2 (configure: HTTP/2: no)"


def missing():
    """Why the h2 scenarios cannot run here, or None."""
    if _IMPORT_ERROR is not None:
        return "python3-h2 not importable (%s)" % _IMPORT_ERROR
    return None


def ready(t, what, others=()):
    """Whether scenario <what> can run: portico built with HTTP/2,
    python3-h2 importable, and each of <others> (functions saying why
    not, or None: modules the scenario loads, always built where their
    library is) says so. Otherwise it is skipped, naming the need."""
    if not ptest.have_h2_build():
        t.skip(what, NO_BUILD, need="http2")
        return False
    why = missing()
    if why:
        t.skip(what, why, need="h2")
        return False
    for other in others:
        why = other()
        if why:
            t.skip(what, why)
            return False
    return True


def logged_proxy(t, log_module):
    """A portico with one h2c listener and <log_module> (accesslogtest's
    module(), to which the JSON log's file line is given): (portico,
    port, path of the JSON access log)."""
    port = ptest.free_port()
    jlog = t.path("access.json")
    p = t.portico(conf(t, [listener("h2", port)], [log_module(
        ['file = "%s"; format = "json";' % jlog])]))
    return p, port, jlog


class Parts:
    """A scenario's parts, run one after another: an exception in one is
    one failed check naming it, and the others still run. .got[name] is
    what a part returned (None when it raised)."""

    def __init__(self, t):
        self.t = t
        self.got = {}

    def __call__(self, name, fn, *args):
        try:
            self.got[name] = fn(*args)
        except Exception as e:
            self.t.check(False, "%s: ran to its end" % name,
                         "%s: %s" % (type(e).__name__, e))
            self.got[name] = None
        return self.got[name]


# ---------------------------------------------------------------------------
# the client

class Stream:
    """One stream of a Client. Read its fields; Client methods act on it."""

    def __init__(self, sid, hold=False):
        self.id = sid
        self.status = None      # int :status of the final response
        self.headers = []       # [(name, value)] of it, str, as received
        self.interim = []       # [(status, headers)] of 1xx responses
        self.trailers = None
        self.data = bytearray()
        self.ended = False      # END_STREAM received
        self.reset = None       # error code of an RST_STREAM received
        self.out = bytearray()  # to send, as the windows allow
        self.out_end = False    # END_STREAM once .out is sent
        self.end_sent = False
        self.sent = 0
        self.hold = hold
        self.held = 0           # bytes received and not acknowledged

    @property
    def done(self):
        """The proxy is done with it: END_STREAM or RST_STREAM came."""
        return self.ended or self.reset is not None

    @property
    def clean_end(self):
        """END_STREAM came, and no RST_STREAM other than a NO_ERROR one
        after it (RFC 9113 8.1: a peer done with its side may close the
        stream so)."""
        return self.ended and self.reset in (None, 0)

    def get(self, name):
        """The first response field <name> (any case), or None."""
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def sha(self):
        return hashlib.sha256(self.data).hexdigest()

    def describe(self):
        ends = (["END_STREAM"] if self.ended else []) + \
            (["RST_STREAM %d" % self.reset] if self.reset is not None else [])
        return ("stream %d: status %s, %d bytes, %s, headers %s%s" % (
            self.id, self.status, len(self.data),
            " then ".join(ends) or "open", self.headers,
            ", trailers %s" % self.trailers if self.trailers else ""))


def request_headers(method, authority, path=None, scheme="http",
                    extra=()):
    """A request's fields: pseudo-fields first, then <extra> pairs. A
    CONNECT without path or scheme is the plain tunnel form (RFC 9113
    8.5); None leaves a pseudo-field out."""
    hs = [(":method", method)]
    if scheme is not None:
        hs.append((":scheme", scheme))
    if authority is not None:
        hs.append((":authority", authority))
    if path is not None:
        hs.append((":path", path))
    return hs + list(extra)


def connect_headers(authority, extra=()):
    return request_headers("CONNECT", authority, None, None, extra)


class Client:
    """An HTTP/2 client connection (see the module comment).

        c = Client(port).open()
        s = c.request(request_headers("GET", "127.0.0.1:80", "/x"))
        c.wait(s, ptest.bound(10))
    """

    def __init__(self, port=None, host="127.0.0.1", sock=None,
                 timeout=10.0):
        if sock is None:
            sock = ptest.connect(port, host, timeout)
        self.sock = sock
        self.sock.setblocking(False)
        self.tls = isinstance(sock, ssl.SSLSocket)
        self.timeout = timeout
        cfg = h2.config.H2Configuration(
            client_side=True, header_encoding=None,
            # a CONNECT has no :scheme and :path, and the error checks
            # send requests h2 would refuse to: we choose what goes out
            validate_outbound_headers=False,
            # the checks look at what the proxy sent, as it sent it
            validate_inbound_headers=False)
        self.h2 = h2.connection.H2Connection(cfg)
        # h2 4.1 takes a GOAWAY as the end of everything and raises on
        # the DATA that follows it, where RFC 9113 6.8 has the streams up
        # to its last stream ID go on: a received GOAWAY leaves us open.
        sm = self.h2.state_machine
        trans = dict(type(sm)._transitions)
        cs, ci = h2.connection.ConnectionState, h2.connection.ConnectionInputs
        trans[(cs.CLIENT_OPEN, ci.RECV_GOAWAY)] = (None, cs.CLIENT_OPEN)
        sm._transitions = trans
        self.streams = {}
        self.server_settings = {}   # {id: value} as the proxy sent them
        self.settings_frames = 0
        self.goaways = []           # [(error code, last stream id)]
        self.outbuf = bytearray()
        self._inflight = None       # a TLS write to retry as it was
        self._turn = 0              # where _feed starts its next pass
        self.first_bytes = b""      # the first bytes read (diagnosis)
        self.eof = False
        self.error = None           # why the connection is unusable
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(CONN_WINDOW - 65535)

    # -- life ---------------------------------------------------------
    def open(self, timeout=None):
        """Sends the preface and our SETTINGS, waits for the proxy's
        SETTINGS. Returns self, dead (.error says why) if none came:
        its streams then never complete, so every check that uses it
        still runs, and fails with its own description."""
        ok = self.run_until(lambda: self.settings_frames > 0,
                            timeout or ptest.bound(self.timeout))
        if not ok and self.error is None:
            self.error = "no SETTINGS from the proxy"
        return self

    @property
    def dead(self):
        return self.error is not None or self.eof

    def why(self):
        """What became of the connection, for a check's details."""
        return "error=%s eof=%s goaway=%s first bytes %r" % (
            self.error, self.eof, self.goaways, self.first_bytes[:64])

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # -- streams ------------------------------------------------------
    def request(self, headers, body=None, end=True, hold=False):
        """Opens a stream with <headers> ([(name, value)], str). <body>
        is queued as DATA; END_STREAM follows it when <end>. Returns the
        Stream."""
        if self.dead:
            # never sent: an ID of its own all the same, for the details
            sid = max(self.streams, default=-1) + 2
            st = self.streams[sid] = Stream(sid, hold)
            return st
        sid = self.h2.get_next_available_stream_id()
        st = self.streams[sid] = Stream(sid, hold)
        enc = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        if not body:
            self.h2.send_headers(sid, enc, end_stream=end)
            st.end_sent = end
        else:
            self.h2.send_headers(sid, enc)
            st.out += body
            st.out_end = end
        self.pump(0)
        return st

    def send(self, st, data, end=False):
        """Queues <data> on stream <st> (sent as the windows allow)."""
        st.out += data
        st.out_end = st.out_end or end
        self.pump(0)

    def end(self, st):
        """END_STREAM on <st> once what is queued is sent."""
        self.send(st, b"", end=True)

    def reset(self, st, code=CANCEL):
        """RST_STREAM on <st> (unless the connection is dead)."""
        st.out = bytearray()
        st.out_end = False
        if self.dead:
            return
        try:
            self.h2.reset_stream(st.id, code)
        except h2.exceptions.ProtocolError as e:
            self.error = "h2 (reset): %s: %s" % (type(e).__name__, e)
        self.pump(0)

    def release(self, st):
        """Stops holding <st>: a WINDOW_UPDATE gives back what it held."""
        st.hold = False
        if st.held and not st.done and not self.dead:
            try:
                self.h2.increment_flow_control_window(st.held, st.id)
            except h2.exceptions.StreamClosedError:
                pass
        st.held = 0
        self.pump(0)

    # -- the loop -----------------------------------------------------
    def run_until(self, pred, timeout):
        """Pumps until pred() holds (True), or <timeout> s pass or the
        connection is dead (pred() then)."""
        deadline = time.monotonic() + timeout
        while True:
            if pred():
                return True
            left = deadline - time.monotonic()
            if left <= 0 or self.dead:
                self.pump(0)
                return bool(pred())
            self.pump(min(left, 0.1))

    def wait(self, streams, timeout=None):
        """Until every stream in <streams> (one or a list) is done."""
        if isinstance(streams, Stream):
            streams = [streams]
        return self.run_until(lambda: all(s.done for s in streams),
                              timeout or ptest.bound(self.timeout))

    def wait_status(self, st, timeout=None):
        """Until <st> has its final :status (or ended without one)."""
        return self.run_until(lambda: st.status is not None or st.done,
                              timeout or ptest.bound(self.timeout))

    def pump(self, timeout):
        """One round: queue what the windows allow, send what the socket
        takes, read what came (waiting at most <timeout> s for either)."""
        if self.dead:
            return
        try:
            self._feed()
        except h2.exceptions.ProtocolError as e:
            self.error = "h2 (sending): %s: %s" % (type(e).__name__, e)
            return
        self.outbuf += self.h2.data_to_send()
        if self.tls and self.sock.pending():
            timeout = 0
        wl = [self.sock] if (self.outbuf or self._inflight) else []
        try:
            r, w, _ = select.select([self.sock], wl, [], timeout)
        except (OSError, ValueError) as e:
            self.error = "select: %s" % e
            return
        if w:
            self._write()
        if r or (self.tls and self.sock.pending()):
            self._read()

    def _write(self):
        if self._inflight is None:
            self._inflight = bytes(self.outbuf[:65536])
        try:
            n = self.sock.send(self._inflight)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            return
        except OSError as e:
            self.error = "send: %s" % ptest.err_kind(e)
            return
        del self.outbuf[:n]
        self._inflight = None

    def _read(self):
        try:
            data = self.sock.recv(262144)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except ssl.SSLZeroReturnError:      # close_notify
            self.eof = True
            return
        except ssl.SSLError as e:
            self.error = "recv: TLS: %s" % e
            return
        except OSError as e:
            self.eof = True
            self.error = "recv: %s" % ptest.err_kind(e)
            return
        if not data:
            self.eof = True
            return
        if len(self.first_bytes) < 64:
            self.first_bytes += data[:64 - len(self.first_bytes)]
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            self.error = "h2: %s: %s" % (type(e).__name__, e)
            return
        self._on_events(events)
        self.outbuf += self.h2.data_to_send()

    def _feed(self):
        """Hands queued DATA to h2 within the stream and connection
        windows until nothing moves or a good amount waits. Fair, so
        that busy streams all move whatever the proxy's windows: each
        pass gives each stream at most one frame and its share of the
        connection window, and starts one stream further on than the
        last."""
        moved = True
        while moved and len(self.outbuf) < 1024 * 1024:
            moved = False
            busy = [st for st in self.streams.values()
                    if (st.out or st.out_end) and not st.end_sent and
                    st.reset is None]
            if not busy:
                break
            self._turn = (self._turn + 1) % len(busy)
            share = max(4096, self.h2.outbound_flow_control_window //
                        len(busy))
            for st in busy[self._turn:] + busy[:self._turn]:
                if st.end_sent or st.reset is not None:
                    continue
                if not st.out:
                    if st.out_end:
                        self._send_data(st, b"", True)
                        moved = True
                    continue
                try:
                    room = min(self.h2.local_flow_control_window(st.id),
                               self.h2.max_outbound_frame_size, share)
                except h2.exceptions.StreamClosedError:
                    st.out = bytearray()
                    continue
                if room <= 0:
                    continue
                chunk = bytes(st.out[:room])
                del st.out[:room]
                self._send_data(st, chunk, st.out_end and not st.out)
                moved = True
            self.outbuf += self.h2.data_to_send()

    def _send_data(self, st, chunk, end):
        try:
            self.h2.send_data(st.id, chunk, end_stream=end)
        except h2.exceptions.StreamClosedError:
            st.out = bytearray()
            st.end_sent = True
            return
        st.sent += len(chunk)
        if end:
            st.end_sent = True

    def _on_events(self, events):
        E = h2.events
        for ev in events:
            st = self.streams.get(getattr(ev, "stream_id", None))
            if isinstance(ev, E.RemoteSettingsChanged):
                self.settings_frames += 1
                for code, ch in ev.changed_settings.items():
                    self.server_settings[int(code)] = ch.new_value
            elif isinstance(ev, E.ConnectionTerminated):
                self.goaways.append((int(ev.error_code), ev.last_stream_id))
            elif st is None:
                continue
            elif isinstance(ev, E.InformationalResponseReceived):
                st.interim.append(_decode(ev.headers))
            elif isinstance(ev, E.ResponseReceived):
                hs = _decode(ev.headers)
                st.headers = [(k, v) for k, v in hs if not k.startswith(":")]
                try:
                    st.status = int(dict(hs).get(":status", ""))
                except ValueError:
                    st.status = -1
            elif isinstance(ev, E.TrailersReceived):
                st.trailers = _decode(ev.headers)
            elif isinstance(ev, E.DataReceived):
                st.data += ev.data
                n = ev.flow_controlled_length
                if st.hold:
                    # the connection's share back, the stream's kept
                    st.held += n
                    if n:
                        self.h2.increment_flow_control_window(n)
                else:
                    self.h2.acknowledge_received_data(n, st.id)
            elif isinstance(ev, E.StreamEnded):
                st.ended = True
            elif isinstance(ev, E.StreamReset):
                st.reset = int(ev.error_code)


def _decode(headers):
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]


def fetch(port, authority, path, method="GET", extra=(), body=None,
          timeout=None):
    """One request on a connection of its own. Returns the Stream, or
    the error as a string."""
    c = None
    try:
        c = Client(port).open()
        st = c.request(request_headers(method, authority, path, extra=extra),
                       body=body)
        c.wait(st, timeout)
        if not st.done:
            return "stream %d not done: %s; %s" % (st.id, st.describe(),
                                                   c.why())
        return st
    except Exception as e:
        return "%s: %s%s" % (type(e).__name__, e,
                             "; " + c.why() if c is not None else "")
    finally:
        if c is not None:
            c.close()


def describe(x):
    """Lines describing a Stream, or the error string in its place."""
    if isinstance(x, Stream):
        return [x.describe()]
    return ["no stream: %s" % (x,)]


def frames_in(data):
    """The HTTP/2 frames at the start of <data>, as [(type, flags, stream
    id, length)], as long as their headers parse as frames of known
    types with sane lengths: [] for anything that is not HTTP/2."""
    out, off = [], 0
    while off + 9 <= len(data):
        n = int.from_bytes(data[off:off + 3], "big")
        typ, flags = data[off + 3], data[off + 4]
        sid = int.from_bytes(data[off + 5:off + 9], "big") & 0x7fffffff
        if typ > 0x9 or n > 16384:
            break
        out.append((typ, flags, sid, n))
        off += 9 + n
    return out


# ---------------------------------------------------------------------------
# servers behind the proxy

class TunnelTarget(ptest._Server):
    """See the module comment. .tunnels: one dict per connection: tag (its
    first line, or its first 40 bytes), n (bytes read), end ("eof",
    "reset" or None while open)."""

    def __init__(self, note_eof=False, host="127.0.0.1"):
        self.note_eof = note_eof
        self.tunnels = []
        super().__init__(host)

    def handle(self, c):
        rec = dict(tag=None, n=0, end=None)
        with self.lock:
            self.tunnels.append(rec)
        head = b""
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                if rec["tag"] is None:
                    head += d
                    if b"\n" in head or len(head) >= 40:
                        rec["tag"] = head.split(b"\n", 1)[0][:40] \
                            .decode("latin-1")
                rec["n"] += len(d)
                c.sendall(d)
            if self.note_eof:
                c.sendall(b"[eof after %d bytes]\n" % rec["n"])
            c.shutdown(socket.SHUT_WR)
            rec["end"] = "eof"
        except ConnectionResetError:
            rec["end"] = "reset"
        except OSError:
            rec["end"] = "error"

    def by_tag(self, tag):
        with self.lock:
            return [r for r in self.tunnels if r["tag"] == tag]

    def wait_end(self, tag, timeout):
        """The record of the connection tagged <tag> once it ended (or as
        it is when <timeout> passes; None if it never came)."""
        got = ptest.wait_for(lambda: [r for r in self.by_tag(tag)
                                      if r["end"]], timeout)
        rs = got or self.by_tag(tag)
        return rs[0] if rs else None


class SlowOrigin(ptest._Server):
    """See the module comment. Every answer is 200 with <size> bytes of
    httptest's pattern (Content-Length, X-Body-Sha256) and keep-alive;
    503 when the barrier broke. .requests: [(request line, {field:
    value} lower case)]."""

    def __init__(self, size=1000, delay=0.0, together=None,
                 host="127.0.0.1"):
        import httptest as H
        self.body = H.pattern(size)
        self.delay = delay
        self.barrier = threading.Barrier(together) if together else None
        self.requests = []
        super().__init__(host)

    def handle(self, c):
        buf = b""
        while not self.stopping.is_set():
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            fields = {}
            for ln in lines[1:]:
                k, _, v = ln.partition(":")
                fields[k.strip().lower()] = v.strip()
            with self.lock:
                self.requests.append((lines[0], fields))
            ok = True
            if self.barrier is not None:
                try:
                    self.barrier.wait(ptest.bound(10))
                except threading.BrokenBarrierError:
                    ok = False
            if self.delay:
                time.sleep(self.delay)
            body = self.body if ok else b"the barrier broke\n"
            c.sendall(b"HTTP/1.1 %s\r\nContent-Length: %d\r\n"
                      b"X-Body-Sha256: %s\r\n\r\n" % (
                          b"200 OK" if ok else b"503 Service Unavailable",
                          len(body),
                          hashlib.sha256(body).hexdigest().encode()) + body)


def ws_key_ok(value):
    """A Sec-WebSocket-Key is the base64 of 16 bytes (RFC 6455 4.1)."""
    try:
        return len(base64.b64decode(value, validate=True)) == 16
    except (ValueError, TypeError):
        return False


def ws_parse(buf):
    """The WebSocket frames (server to client: unmasked) at the start of
    <buf>: ([(fin, opcode, payload)], bytes left over)."""
    out = []
    while len(buf) >= 2:
        fin, op, n = bool(buf[0] & 0x80), buf[0] & 0x0f, buf[1] & 0x7f
        off = 2
        if n == 126:
            if len(buf) < 4:
                break
            n, off = int.from_bytes(buf[2:4], "big"), 4
        elif n == 127:
            if len(buf) < 10:
                break
            n, off = int.from_bytes(buf[2:10], "big"), 10
        if buf[1] & 0x80:
            off += 4            # masked: wrong from a server, kept masked
        if len(buf) < off + n:
            break
        out.append((fin, op, bytes(buf[off:off + n])))
        buf = buf[off + n:]
    return out, bytes(buf)


# ---------------------------------------------------------------------------
# configuration

def conf(t, listeners, modules=(), name="portico", workers=1, shutdown=5,
         log_level="info", http=""):
    """A configuration with <listeners> and <modules> (lists of entry
    texts); its error log and pid file are named after <name>, so two
    instances of one scenario may run at once. <http>: more settings of
    the http group."""
    return """workers = %d;
error_log = "%s/%s-error.log";
log_level = "%s";
pid_file = "%s/%s.pid";
shutdown_timeout = %d;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
http = { connect_ports = "*"; %s};
listeners = (
%s
);
modules = (
%s
);
""" % (workers, t.tmp, name, log_level, t.tmp, name, shutdown, http,
       ",\n".join(listeners), ",\n".join(modules))


def listener(name, port, extra="", protocol="http"):
    """One listener entry on 127.0.0.1:<port>; <extra>: more settings."""
    return ('  { name = "%s"; address = "127.0.0.1:%d"; protocol = "%s"; %s}'
            % (name, port, protocol, extra))
