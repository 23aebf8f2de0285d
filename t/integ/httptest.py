# SPDX-License-Identifier: BSD-2-Clause
"""
httptest: what the t/integ/http_*.py scenarios share, on top of ptest.

- Origin: a threaded HTTP/1.1 origin on raw sockets (framing under our
  control byte by byte). Routes, by path (query arguments after '?'):

    /echo (and any unknown path)
        200 with a JSON body describing the request it received: method,
        target, version, headers (a list of [name, value] in order), body
        length and sha256, trailers, connection number, the request's
        sequence number on that connection, and the connection's source
        address (peer).
        ?closeafter=S  close the connection S seconds after answering
                       (an idle pooled connection the origin drops)
        ?dropnext=1    read the next request on this connection and close
                       it without a word (the keep-alive race)
    /len?n=N           N bytes of pattern with Content-Length
    /chunked?n=N&chunk=C&trailers=1&pause=MS (MS between chunks)
                       N bytes in chunks of C (first one with a chunk
                       extension), trailers X-Trailer-A and X-Trailer-Sha
    /close?n=N         N bytes delimited by closing the connection
    /status?code=204|304|...
                       that status; 304 carries a Content-Length of the
                       representation and no body
    /early?code=103|100
                       an interim response, then 200 with a short body
    /ambiguous         Content-Length and Transfer-Encoding both
    /badlen            Content-Length: abc
    /twolen            two different Content-Length fields
    /cookies           three Set-Cookie fields (one with a comma)
    /hop               hop-by-hop fields in the response (and X-Resp-End)
    /bighead?n=N       a response head with an N-byte field
    /badchunk          a chunked body with a bad chunk size after 5 bytes
    /truncate          Content-Length: 1000, 500 bytes, then close
    /hang              reads the request, never answers
    /reject            403 and close at once, without reading the body
                       (?rst=1: the close with the body unread, a reset)
    /ws                WebSocket (RFC 6455) handshake, then echoes frames

  Every response to a body-bearing route has X-Body-Sha256 and X-Body-Len.
  Expect: 100-continue is answered with 100 Continue before the body is
  read. Every request is recorded in Origin.requests; Origin.accepted
  counts connections.

- DnsServer: UDP, answers A/AAAA from a table, NXDOMAIN otherwise.
- Client side: Conn (a buffered socket to the proxy), Resp, request
  builders, a WebSocket frame codec, curl().
- http_conf(): the t/conf/http.conf template filled in.
"""

import base64
import hashlib
import json
import os
import socket
import struct
import subprocess
import threading
import time
import urllib.parse

import ptest

WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC11B63"

_BLOCK = hashlib.sha256(b"portico").digest() * 32          # 1 KiB
_BLOCK = b"".join(hashlib.sha256(_BLOCK + bytes([i])).digest() * 32
                  for i in range(256))                       # 256 KiB
_pattern_cache = {}


def pattern(n):
    """n deterministic bytes (not compressible by accident)."""
    if n in _pattern_cache:
        return _pattern_cache[n]
    reps = n // len(_BLOCK) + 1
    data = (_BLOCK * reps)[:n]
    if n <= 16 * ptest.MiB:
        _pattern_cache[n] = data
    return data


def sha(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------
# a buffered socket

class Closed(Exception):
    pass


class BadInput(Exception):
    pass


class Conn:
    """A socket with a read buffer: read_line, read_exact, read_until_eof.
    Timeouts raise socket.timeout; EOF in the middle raises Closed."""

    def __init__(self, sock, timeout=10.0):
        self.sock = sock
        self.buf = bytearray()
        self.eof = False
        self.sock.settimeout(timeout)

    @classmethod
    def to(cls, port, host="127.0.0.1", timeout=10.0):
        return cls(ptest.connect(port, host, timeout), timeout)

    def settimeout(self, t):
        self.sock.settimeout(t)

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("latin-1")
        self.sock.sendall(data)

    def _fill(self):
        if self.eof:
            return False
        d = self.sock.recv(262144)
        if not d:
            self.eof = True
            return False
        self.buf += d
        return True

    def read_line(self, limit=1024 * 1024):
        """One line ending in LF (returned with its line end)."""
        start = 0
        while True:
            i = self.buf.find(b"\n", start)
            if i >= 0:
                line = bytes(self.buf[:i + 1])
                del self.buf[:i + 1]
                return line
            start = len(self.buf)
            if len(self.buf) > limit:
                raise BadInput("line over %d bytes" % limit)
            if not self._fill():
                if self.buf:
                    raise Closed("EOF in a line")
                return b""

    def read_head(self, limit=1024 * 1024):
        """Bytes up to and including the blank line; b'' at a clean EOF."""
        start = 0
        while True:
            i = self.buf.find(b"\r\n\r\n", max(0, start - 3))
            if i >= 0:
                head = bytes(self.buf[:i + 4])
                del self.buf[:i + 4]
                return head
            start = len(self.buf)
            if len(self.buf) > limit:
                raise BadInput("head over %d bytes" % limit)
            if not self._fill():
                if self.buf:
                    raise Closed("EOF in a head (%d bytes)" % len(self.buf))
                return b""

    def read_exact(self, n, sink=None):
        """n bytes (into sink(data) when given: no buffering of big
        bodies)."""
        out = bytearray() if sink is None else None
        left = n
        while left > 0:
            if not self.buf and not self._fill():
                raise Closed("EOF with %d of %d bytes to read" % (left, n))
            take = min(left, len(self.buf))
            piece = bytes(self.buf[:take])
            del self.buf[:take]
            if sink is None:
                out += piece
            else:
                sink(piece)
            left -= take
        return bytes(out) if sink is None else None

    def read_until_eof(self, limit=64 * ptest.MiB, sink=None):
        out = bytearray()
        if self.buf:
            if sink:
                sink(bytes(self.buf))
            else:
                out += self.buf
            self.buf = bytearray()
        while len(out) <= limit and self._fill():
            if sink:
                sink(bytes(self.buf))
            else:
                out += self.buf
            self.buf = bytearray()
        return bytes(out)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def parse_fields(lines):
    out = []
    for ln in lines:
        if b":" not in ln:
            raise BadInput("no colon in %r" % ln[:60])
        k, v = ln.split(b":", 1)
        out.append((k.decode("latin-1"), v.strip(b" \t").decode("latin-1")))
    return out


def field(headers, name):
    name = name.lower()
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def fields(headers, name):
    name = name.lower()
    return [v for k, v in headers if k.lower() == name]


def tokens(headers, name):
    """Comma-separated tokens of every <name> field, lower case."""
    out = []
    for v in fields(headers, name):
        out.extend(t.strip().lower() for t in v.split(",") if t.strip())
    return out


def read_chunked(conn, sink=None, limit=64 * ptest.MiB):
    """Reads a chunked body. Returns (body bytes or None, trailers,
    raw_size_lines)."""
    body = bytearray() if sink is None else None
    total = 0
    exts = []
    while True:
        line = conn.read_line(8192)
        if not line:
            raise Closed("EOF before a chunk size")
        if not line.endswith(b"\r\n"):
            raise BadInput("chunk size line without CRLF: %r" % line[:40])
        sz = line[:-2].split(b";", 1)
        if len(sz) > 1:
            exts.append(sz[1])
        s = sz[0].strip(b" \t")
        if not s or any(ch not in b"0123456789abcdefABCDEF" for ch in s):
            raise BadInput("bad chunk size %r" % line[:40])
        n = int(s, 16)
        if n == 0:
            break
        total += n
        if total > limit:
            raise BadInput("chunked body over %d bytes" % limit)
        if sink is None:
            body += conn.read_exact(n)
        else:
            conn.read_exact(n, sink)
        if conn.read_exact(2) != b"\r\n":
            raise BadInput("chunk data not followed by CRLF")
    tlines = []
    while True:
        line = conn.read_line(65536)
        if not line:
            raise Closed("EOF in the trailer section")
        if line == b"\r\n":
            break
        tlines.append(line.rstrip(b"\r\n"))
    return (bytes(body) if body is not None else None), \
        parse_fields(tlines), exts


# ---------------------------------------------------------------------------
# the origin

def _parse_request_head(head):
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        raise BadInput("request line %r" % lines[0][:80])
    method, target, version = (p.decode("latin-1") for p in parts)
    return method, target, version, parse_fields(lines[1:])


class Origin(ptest._Server):
    """See the module comment."""

    def __init__(self, host="127.0.0.1"):
        self.requests = []
        self.bad = []           # what the origin found wrong in a request
        self.serial = 0
        self.hang_release = threading.Event()
        super().__init__(host)

    @property
    def url(self):
        return "http://%s" % ptest.hostport(self.host, self.port)

    def reqs_for(self, tag):
        """Recorded requests whose target contains <tag>."""
        with self.lock:
            return [r for r in self.requests if tag in r["target"]]

    def stop(self):
        self.hang_release.set()
        super().stop()

    def handle(self, c):
        with self.lock:
            self.serial += 1
            cid = self.serial
        peer = c.getpeername()[0]
        conn = Conn(c, 120)
        seq = 0
        while not self.stopping.is_set() and seq < 10000:
            try:
                head = conn.read_head()
            except (Closed, BadInput, OSError) as e:
                if not self.stopping.is_set():
                    with self.lock:
                        self.bad.append("conn %d: %s" % (cid, e))
                return
            if not head:
                return
            seq += 1
            try:
                method, target, version, headers = _parse_request_head(head)
            except BadInput as e:
                with self.lock:
                    self.bad.append("conn %d: %s" % (cid, e))
                return
            req = dict(method=method, target=target, version=version,
                       headers=[list(h) for h in headers], conn=cid, seq=seq,
                       peer=peer,
                       raw_head=head.decode("latin-1"), body_len=None,
                       body_sha256=None, trailers=[], body=None,
                       t=time.monotonic())
            with self.lock:
                self.requests.append(req)
            try:
                if not self._serve_one(conn, req, headers):
                    return
            except (Closed, BadInput, ValueError) as e:
                with self.lock:
                    self.bad.append("conn %d: %s %s: %s" % (
                        cid, method, target, e))
                return

    def _serve_one(self, conn, req, headers):
        c = conn.sock
        u = urllib.parse.urlsplit(req["target"])
        path = u.path
        q = dict(urllib.parse.parse_qsl(u.query))
        ctok = tokens(headers, "connection")
        if req["version"] == "HTTP/1.0":
            keep = "keep-alive" in ctok
        else:
            keep = "close" not in ctok
        if path == "/reject":
            # a final status at once, the body never read
            c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 5\r\n"
                      b"Connection: close\r\n\r\nnope\n")
            if q.get("rst") == "1":
                time.sleep(0.1)
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             struct.pack("ii", 1, 0))
                return False
            c.shutdown(socket.SHUT_WR)
            conn.settimeout(2)
            try:
                conn.read_until_eof(16 * 1024 * 1024)
            except OSError:
                pass
            return False
        # the request body
        if (field(headers, "expect") or "").lower() == "100-continue":
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            req["sent_100"] = True
        te = tokens(headers, "transfer-encoding")
        cl = fields(headers, "content-length")
        body = b""
        if te:
            if te[-1] != "chunked":
                return False
            body, trailers, _ = read_chunked(conn)
            req["trailers"] = [list(x) for x in trailers]
        elif cl:
            body = conn.read_exact(int(cl[0]))
        req["body_len"] = len(body)
        req["body_sha256"] = sha(body)
        if len(body) <= 65536:
            req["body"] = body.decode("latin-1")
        is_head = req["method"] == "HEAD"
        conn_hdr = b"" if keep else b"Connection: close\r\n"

        def send(status, hdrs, payload=b"", length=True):
            h = b"HTTP/1.1 " + status + b"\r\n" + b"".join(
                k + b": " + v + b"\r\n" for k, v in hdrs)
            if length:
                h += b"Content-Length: %d\r\n" % len(payload)
            h += conn_hdr + b"\r\n"
            c.sendall(h + (b"" if is_head else payload))

        if path == "/len":
            data = pattern(int(q.get("n", "0")))
            send(b"200 OK", [(b"X-Body-Sha256", sha(data).encode()),
                             (b"X-Body-Len", b"%d" % len(data))], data)
            return keep
        if path == "/chunked":
            data = pattern(int(q.get("n", "0")))
            step = max(1, int(q.get("chunk", "4096")))
            h = (b"HTTP/1.1 200 OK\r\nX-Body-Sha256: %s\r\nX-Body-Len: %d\r\n"
                 b"Transfer-Encoding: chunked\r\n" % (sha(data).encode(),
                                                      len(data)))
            if q.get("trailers"):
                h += b"Trailer: X-Trailer-A, X-Trailer-Sha\r\n"
            c.sendall(h + conn_hdr + b"\r\n")
            if is_head:
                return keep
            off, first = 0, True
            pause = int(q.get("pause", "0")) / 1000.0
            while off < len(data):
                if pause and not first:
                    time.sleep(pause)
                piece = data[off:off + step]
                ext = b";ext=1" if first else b""
                first = False
                c.sendall(b"%x%s\r\n" % (len(piece), ext) + piece + b"\r\n")
                off += len(piece)
            tail = b"0\r\n"
            if q.get("trailers"):
                tail += b"X-Trailer-A: 1\r\nX-Trailer-Sha: %s\r\n" % \
                    sha(data).encode()
            c.sendall(tail + b"\r\n")
            return keep
        if path == "/close":
            data = pattern(int(q.get("n", "0")))
            c.sendall(b"HTTP/1.1 200 OK\r\nX-Body-Sha256: %s\r\n"
                      b"X-Body-Len: %d\r\n\r\n" % (sha(data).encode(),
                                                   len(data)))
            if not is_head:
                c.sendall(data)
            c.shutdown(socket.SHUT_WR)
            return False
        if path == "/status":
            code = int(q.get("code", "200"))
            if code == 304:
                c.sendall(b"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n"
                          b"Content-Length: 1234\r\n" + conn_hdr + b"\r\n")
            elif code == 204:
                c.sendall(b"HTTP/1.1 204 No Content\r\nX-A: 1\r\n" +
                          conn_hdr + b"\r\n")
            else:
                send(b"%d Whatever" % code, [], b"status %d\n" % code)
            return keep
        if path == "/early":
            code = int(q.get("code", "103"))
            if code == 103:
                c.sendall(b"HTTP/1.1 103 Early Hints\r\n"
                          b"Link: </s.css>; rel=preload\r\n\r\n")
            else:
                c.sendall(b"HTTP/1.1 %d Continue\r\n\r\n" % code)
            time.sleep(0.05)
            send(b"200 OK", [], b"final\n")
            return keep
        if path == "/ambiguous":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n"
                      b"5\r\nhello\r\n0\r\n\r\n")
            return keep
        if path == "/badlen":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nhello")
            return False
        if path == "/twolen":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                      b"Content-Length: 6\r\n\r\nhello!")
            return False
        if path == "/hop":
            send(b"200 OK", [(b"Connection", b"X-Resp-Hop"),
                             (b"X-Resp-Hop", b"1"),
                             (b"Keep-Alive", b"timeout=5, max=100"),
                             (b"Proxy-Connection", b"keep-alive"),
                             (b"Upgrade", b"h2c"),
                             (b"X-Resp-End", b"kept")], b"hop\n")
            return keep
        if path == "/bighead":
            n = int(q.get("n", "20000"))
            send(b"200 OK", [(b"X-Big", b"h" * n)], b"big head\n")
            return keep
        if path == "/badchunk":
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"5\r\nhello\r\nzz\r\nworld\r\n0\r\n\r\n")
            return False
        if path == "/truncate":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" +
                      b"t" * 500)
            return False
        if path == "/cookies":
            send(b"200 OK", [(b"Set-Cookie", b"a=1; Path=/"),
                             (b"Set-Cookie", b"b=2; Expires=Wed, 21 Oct 2037 "
                              b"07:28:00 GMT"),
                             (b"Set-Cookie", b"c=3")], b"cookies\n")
            return keep
        if path == "/hang":
            self.hang_release.wait(float(q.get("s", "60")))
            return False
        if path == "/ws":
            return self._websocket(conn, req, headers)
        # echo
        out = {k: v for k, v in req.items() if k != "raw_head"}
        payload = json.dumps(out).encode()
        send(b"200 OK", [(b"Content-Type", b"application/json")], payload)
        if not keep:
            return False
        if q.get("closeafter"):
            time.sleep(float(q["closeafter"]))
            return False
        if q.get("dropnext"):
            try:
                nxt = conn.read_head()
            except (Closed, BadInput, OSError):
                return False
            with self.lock:
                req["dropped_next"] = nxt.split(b"\r\n", 1)[0].decode(
                    "latin-1")
            return False
        return True

    def _websocket(self, conn, req, headers):
        c = conn.sock
        key = field(headers, "sec-websocket-key")
        if not key or "websocket" not in tokens(headers, "upgrade") or \
                "upgrade" not in tokens(headers, "connection"):
            c.sendall(b"HTTP/1.1 426 Upgrade Required\r\nContent-Length: 0"
                      b"\r\nConnection: close\r\n\r\n")
            return False
        accept = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID)
                                  .digest())
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n"
                  % accept)
        for _ in range(100000):
            fr = ws_read(conn, expect_masked=True)
            if fr is None:
                return False
            fin, op, data = fr
            if op == 8:
                conn.send(ws_frame(8, data[:2] or b"\x03\xe8", mask=False))
                c.shutdown(socket.SHUT_WR)
                # wait (bounded) for the client's close
                conn.settimeout(5)
                try:
                    conn.read_until_eof(1024)
                except OSError:
                    pass
                return False
            if op == 9:
                conn.send(ws_frame(10, data, mask=False))
                continue
            conn.send(ws_frame(op, data, fin=fin, mask=False))
        return False


# ---------------------------------------------------------------------------
# WebSocket frames

def ws_frame(op, data, fin=True, mask=True):
    b0 = (0x80 if fin else 0) | op
    n = len(data)
    mbit = 0x80 if mask else 0
    if n < 126:
        h = struct.pack("!BB", b0, mbit | n)
    elif n < 65536:
        h = struct.pack("!BBH", b0, mbit | 126, n)
    else:
        h = struct.pack("!BBQ", b0, mbit | 127, n)
    if not mask:
        return h + data
    key = os.urandom(4)
    return h + key + _xor(data, key)


def _xor(data, key):
    if not data:
        return b""
    k = (key * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")) \
        .to_bytes(len(data), "big")


def ws_read(conn, expect_masked=False):
    """(fin, opcode, payload) or None at EOF before a frame."""
    try:
        h = conn.read_exact(2)
    except Closed:
        return None
    fin = bool(h[0] & 0x80)
    op = h[0] & 0x0F
    masked = bool(h[1] & 0x80)
    n = h[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", conn.read_exact(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", conn.read_exact(8))[0]
    if masked != expect_masked:
        raise BadInput("frame masking %s, expected %s" % (masked,
                                                         expect_masked))
    key = conn.read_exact(4) if masked else None
    data = conn.read_exact(n)
    if masked:
        data = _xor(data, key)
    return fin, op, data


# ---------------------------------------------------------------------------
# a DNS server

class DnsServer:
    """UDP on 127.0.0.1: answers A/AAAA from <table> {name: {'A': [ip],
    'AAAA': [ip]}}, NOERROR with no answer for a known name without that
    type, NXDOMAIN otherwise. Counts queries per (name, type)."""

    def __init__(self, table, ttl=60, host="127.0.0.1"):
        self.table = {k.lower().rstrip("."): v for k, v in table.items()}
        self.ttl = ttl
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.address = "%s:%d" % (host, self.port)
        self.queries = []
        # Each question's labels as bytes, as they came on the wire.
        self.raw_queries = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping.is_set():
            try:
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                resp = self._answer(data)
            except Exception:
                continue
            if resp:
                try:
                    self.sock.sendto(resp, peer)
                except OSError:
                    pass

    def _answer(self, data):
        if len(data) < 12:
            return None
        qid, flags, qd = struct.unpack("!HHH", data[:6])
        if qd != 1:
            return None
        off = 12
        labels, raw = [], []
        while True:
            ln = data[off]
            off += 1
            if ln == 0:
                break
            raw.append(bytes(data[off:off + ln]))
            labels.append(data[off:off + ln].decode("ascii", "replace"))
            off += ln
        qtype, qclass = struct.unpack("!HH", data[off:off + 4])
        question = data[12:off + 4]
        name = ".".join(labels).lower()
        tname = {1: "A", 28: "AAAA"}.get(qtype, str(qtype))
        with self.lock:
            self.queries.append((name, tname))
            self.raw_queries.append(tuple(raw))
        rd = flags & 0x0100
        entry = self.table.get(name)
        answers = []
        rcode = 0
        if entry == "drop":
            return None
        if entry is None:
            rcode = 3
        else:
            for ip in entry.get(tname, []):
                if tname == "A":
                    rdata = socket.inet_pton(socket.AF_INET, ip)
                else:
                    rdata = socket.inet_pton(socket.AF_INET6, ip)
                answers.append(b"\xc0\x0c" + struct.pack(
                    "!HHIH", qtype, 1, self.ttl, len(rdata)) + rdata)
        rflags = 0x8000 | 0x0400 | rd | 0x0080 | rcode
        hdr = struct.pack("!HHHHHH", qid, rflags, 1, len(answers), 0, 0)
        return hdr + question + b"".join(answers)

    def count(self, name, qtype=None):
        with self.lock:
            return sum(1 for n, q in self.queries if n == name.lower() and
                       (qtype is None or q == qtype))

    def stop(self):
        self.stopping.set()
        try:
            self.sock.close()
        except OSError:
            pass
        self.thread.join(2)


# ---------------------------------------------------------------------------
# client side

class Resp:
    def __init__(self, version, status, reason, headers, raw_head):
        self.version, self.status, self.reason = version, status, reason
        self.headers = headers
        self.raw_head = raw_head
        self.body = b""
        self.body_len = 0
        self.body_sha = sha(b"")
        self.trailers = []
        self.framing = None     # "length", "chunked", "close", "none"
        self.interim = []       # 1xx responses before this one

    def get(self, name):
        return field(self.headers, name)

    def all(self, name):
        return fields(self.headers, name)

    def tokens(self, name):
        return tokens(self.headers, name)

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def closes(self):
        return "close" in self.tokens("connection")

    def __repr__(self):
        return "<%s %d %s, %d header fields, %s body of %d bytes%s>" % (
            self.version, self.status, self.reason, len(self.headers),
            self.framing, self.body_len,
            (", interim %s" % [r.status for r in self.interim])
            if self.interim else "")

    def describe(self):
        head = self.raw_head.decode("latin-1", "replace").rstrip()
        b = self.body[:300]
        return ["response head:"] + ["  " + ln for ln in head.splitlines()] \
            + ["body (%d bytes, %s): %r" % (self.body_len, self.framing, b)]


def read_response(conn, method="GET", keep_body=True, interim=True):
    """The next response on <conn>, framed per RFC 9112 6.3. 1xx responses
    before the final one are collected in .interim (unless interim is
    False: then a 1xx is returned as it is). Raises Closed at EOF."""
    got = []
    for _ in range(64):
        head = conn.read_head()
        if not head:
            raise Closed("EOF before a response")
        lines = head[:-4].split(b"\r\n")
        sl = lines[0].split(b" ", 2)
        if len(sl) < 2 or not sl[0].startswith(b"HTTP/"):
            raise BadInput("status line %r" % lines[0][:80])
        r = Resp(sl[0].decode(), int(sl[1]),
                 sl[2].decode("latin-1") if len(sl) > 2 else "",
                 parse_fields(lines[1:]), head)
        if 100 <= r.status < 200 and r.status != 101:
            r.framing = "none"
            if not interim:
                return r
            got.append(r)
            continue
        break
    else:
        raise BadInput("too many interim responses")
    r.interim = got
    h = hashlib.sha256()
    body = bytearray()

    def sink(d):
        h.update(d)
        r.body_len += len(d)
        if keep_body:
            body.extend(d)
    if method == "HEAD" or r.status in (101, 204, 304) or \
            (method == "CONNECT" and 200 <= r.status < 300):
        r.framing = "none"
    elif r.tokens("transfer-encoding"):
        r.framing = "chunked"
        _, r.trailers, _ = read_chunked(conn, sink)
    elif r.get("content-length") is not None:
        r.framing = "length"
        conn.read_exact(int(r.get("content-length")), sink)
    else:
        r.framing = "close"
        conn.read_until_eof(sink=sink)
    r.body = bytes(body)
    r.body_sha = h.hexdigest()
    return r


def describe(r):
    """Lines describing a Resp, or the error string get() returned."""
    if isinstance(r, Resp):
        return r.describe()
    return ["no response: %s" % (r,)]


def request_bytes(method, url, headers=(), body=None, version="HTTP/1.1",
                  host=True, chunked=False, trailers=()):
    """A request in absolute form. <headers>: list of (name, value).
    Host is added from the URL unless host is False or given in headers.
    A body gets a Content-Length unless chunked (then sent in chunks of
    64 KiB, with <trailers>)."""
    u = urllib.parse.urlsplit(url)
    hs = list(headers)
    if host and not any(k.lower() == "host" for k, _ in hs):
        hs.insert(0, ("Host", u.netloc))
    if body is not None and not chunked and \
            not any(k.lower() == "content-length" for k, _ in hs):
        hs.append(("Content-Length", str(len(body))))
    if chunked:
        hs.append(("Transfer-Encoding", "chunked"))
    out = ("%s %s %s\r\n" % (method, url, version)).encode("latin-1")
    out += b"".join(("%s: %s\r\n" % (k, v)).encode("latin-1") for k, v in hs)
    out += b"\r\n"
    if body is not None:
        if chunked:
            parts = []
            for off in range(0, len(body), 65536):
                piece = body[off:off + 65536]
                parts.append(b"%x\r\n" % len(piece) + piece + b"\r\n")
            parts.append(b"0\r\n" + b"".join(
                ("%s: %s\r\n" % (k, v)).encode("latin-1")
                for k, v in trailers) + b"\r\n")
            out += b"".join(parts)
        else:
            out += body
    return out


def roundtrip(port, method, url, headers=(), body=None, timeout=None,
              **kw):
    """One request on a fresh connection. Returns (Resp, Conn)."""
    conn = Conn.to(port, timeout=timeout or ptest.bound(10))
    conn.send(request_bytes(method, url, headers, body, **kw))
    return read_response(conn, method), conn


def get(port, url, **kw):
    """One GET on a fresh connection, which is then closed. Returns the
    Resp or the error as a string."""
    try:
        r, conn = roundtrip(port, "GET", url, **kw)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
    conn.close()
    return r


def outcome(conn, timeout):
    """Reads what is left until EOF (or timeout). Returns (data, how) with
    how 'eof', 'reset' or 'timeout'."""
    conn.settimeout(0.25)
    data = bytearray(conn.buf)
    conn.buf = bytearray()
    if conn.eof:
        return bytes(data), "eof"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(data) < 16 * ptest.MiB:
        try:
            d = conn.sock.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return bytes(data), "reset"
        except OSError as e:
            return bytes(data), "error:%s" % e
        if not d:
            conn.eof = True
            return bytes(data), "eof"
        data += d
    return bytes(data), "timeout"


def status_of(data):
    """The status code at the start of <data>, or None."""
    if data.startswith(b"HTTP/"):
        try:
            return int(data.split(b" ", 2)[1])
        except (IndexError, ValueError):
            return None
    return None


def raw_exchange(port, data, timeout=None, half_close=False, pause=None):
    """Sends raw bytes (a list is sent piece by piece with <pause> between)
    and reads until EOF. Returns (status or None, everything read, how the
    read ended: 'eof', 'reset' or 'timeout', seconds taken)."""
    timeout = timeout or ptest.bound(5)
    t0 = time.monotonic()
    try:
        conn = Conn.to(port, timeout=timeout)
    except Exception as e:
        return None, b"", "connect:" + ptest.err_kind(e), 0.0
    try:
        pieces = data if isinstance(data, list) else [data]
        for i, p in enumerate(pieces):
            if i and pause:
                time.sleep(pause)
            try:
                conn.send(p)
            except OSError:
                break
        if half_close:
            try:
                conn.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        got, how = outcome(conn, timeout)
        return status_of(got), got, how, time.monotonic() - t0
    finally:
        conn.close()


def next_head(sock, buf):
    """For a scripted origin: reads from <sock> until <buf> holds a
    whole head. Returns (head without its blank line, the bytes after
    it), or (None, buf) when the peer closed first."""
    while b"\r\n\r\n" not in buf:
        d = sock.recv(65536)
        if not d:
            return None, buf
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest


def split_response(data):
    """(head text, body bytes) of the first response in raw <data>."""
    i = data.find(b"\r\n\r\n")
    if i < 0:
        return data.decode("latin-1"), b""
    return data[:i].decode("latin-1"), data[i + 4:]


def head_fields(head_text):
    lines = head_text.split("\r\n")[1:]
    out = []
    for ln in lines:
        if ":" in ln:
            k, v = ln.split(":", 1)
            out.append((k, v.strip()))
    return out


def curl(args, timeout=None):
    """curl with no proxy settings from the environment. Returns
    CompletedProcess (bytes stdout, text stderr)."""
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy",
                                "no_proxy")}
    env["HOME"] = os.environ.get("HOME", "/tmp")
    try:
        return subprocess.run(["curl", "-q", "-sS", "--noproxy", ""] +
                              list(args), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout or ptest.bound(30), env=env)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, -1, e.stdout or b"",
                                           b"timeout")


def have_curl():
    try:
        return subprocess.run(["curl", "--version"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# ---------------------------------------------------------------------------
# portico

def http_conf(t, port, workers=1, http=None, limits=None, resolver=None,
              extra=""):
    """t/conf/http.conf with an HTTP listener on 127.0.0.1:<port>.
    http/limits/resolver: dicts of settings (ptest.conf_text values);
    http defaults to connect_ports = "*"."""
    if http is None:
        http = {"connect_ports": "*"}
    lim = dict(header_timeout=10, connect_timeout=5, idle_timeout=30)
    lim.update(limits or {})

    def body(d):
        return " ".join("%s = %s;" % (k, ptest._conf_value(v, 1))
                        for k, v in d.items())
    res = ("resolver = { %s };" % body(resolver)) if resolver else ""
    return t.conf("http", LISTEN="127.0.0.1:%d" % port, WORKERS=workers,
                  HTTP=body(http), LIMITS=body(lim), RESOLVER=res,
                  EXTRA=extra)


def start(t, **kw):
    """(Portico, port) of an HTTP proxy started with http_conf(**kw)."""
    port = ptest.free_port()
    p = t.portico(http_conf(t, port, **kw))
    return p, port


def finish(t, p, workers_before, label=""):
    """Checks the workers never died, stops portico, checks it left
    nothing behind."""
    w = p.workers()
    t.check(w == workers_before, "%sthe worker pids are unchanged (no "
            "worker died)" % label, lambda: ["before %s, now %s" % (
                workers_before, w)] + ptest.tail(p.log(), 30))
    return t.stop_portico(p)


def origin(t, host="127.0.0.1"):
    o = Origin(host)
    t.servers.append(o)
    return o


def dns_server(t, table, ttl=60):
    d = DnsServer(table, ttl)
    t.at_exit(d.stop)
    return d


def log_tail(p, n=25):
    return lambda: ["log tail:"] + ptest.tail(p.log(), n)


# A listener whose SYNs go unanswered lives in ptest, shared with timeouts.py.
blackhole = ptest.blackhole


