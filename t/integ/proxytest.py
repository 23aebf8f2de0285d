# SPDX-License-Identifier: BSD-2-Clause
"""
proxytest: what the t/integ/proxy_*.py scenarios share, on top of ptest,
httptest and statustest: HAProxy's PROXY protocol (doc/proxy-protocol.txt
in HAProxy's source) as a balancer sends it, and the proxy's side of it
read back.

- v1() and v2(): headers built byte by byte here (v1's text line; v2's
  binary block with its TLVs and a CRC32C computed by crc32c(), the
  Castagnoli CRC, reflected polynomial 0x82F63B78, checked against the
  standard check value and against headers a real HAProxy sent);
- send_header(): a raw TCP client (from a chosen source address) that
  sends a header in one write, byte by byte, or in timed pieces;
  http_after(): a header, then an HTTP request through the proxy on that
  connection; refused(): a header the proxy must refuse, and what came
  back (the proxy must close without a byte);
- counts(): the portico_proxy_protocol_* families of a status listener's
  /metrics (refusals by reason, headers by version), and delta checks;
- the core refusing the `proxy_protocol` key (a binary without the
  feature) is told apart from any other start failure: conf_refused().
"""
import socket
import struct
import time

import ptest
import httptest as H
import statustest as ST

# The reasons /metrics counts refusals by (portico_proxy_protocol_refused_
# total{reason=...}), in the contract's order.
REASONS = ("source", "signature", "malformed", "too_long", "crc", "timeout",
           "closed")
REFUSED = "portico_proxy_protocol_refused_total"
HEADERS = "portico_proxy_protocol_headers_total"

SIG_V2 = b"\r\n\r\n\x00\r\nQUIT\n"
V1_MAX = 107            # a v1 line, CRLF included
V2_MAX = 2048           # a v2 header in all, the 16 fixed bytes included

CMD_LOCAL, CMD_PROXY = 0x0, 0x1
AF_UNSPEC, AF_INET, AF_INET6, AF_UNIX = 0x0, 0x1, 0x2, 0x3
T_UNSPEC, T_STREAM, T_DGRAM = 0x0, 0x1, 0x2

PP2_TYPE_ALPN = 0x01
PP2_TYPE_AUTHORITY = 0x02
PP2_TYPE_CRC32C = 0x03
PP2_TYPE_NOOP = 0x04
PP2_TYPE_UNIQUE_ID = 0x05
PP2_TYPE_SSL = 0x20
PP2_SUBTYPE_SSL_VERSION = 0x21
PP2_SUBTYPE_SSL_CN = 0x22
PP2_TYPE_NETNS = 0x30
PP2_TYPE_CUSTOM = 0xE0


# ---------------------------------------------------------------------------
# CRC32C (Castagnoli), as PP2_TYPE_CRC32C wants it

def _crc_table():
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


_CRC_TABLE = _crc_table()


def crc32c(data, crc=0):
    """CRC32C of <data>, continuing from <crc> (0 to start)."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# A v2 header a real HAProxy 2.6 sent (send-proxy-v2 proxy-v2-options
# crc32c,unique-id, client 127.0.0.2:38483): its CRC32C TLV holds
# 6f2db525. crc_selftest() checks crc32c() on it and on "123456789".
HAPROXY_V2 = bytes.fromhex(
    "0d0a0d0a000d0a515549540a211100287f0000027f000001965399910300046f2db5"
    "2505001270742d3132372e302e302e322d3338343833")


def crc_selftest():
    """None when crc32c() gives the standard check value 0xE3069283 for
    "123456789" and HAProxy's own CRC for HAPROXY_V2, else why not."""
    if crc32c(b"123456789") != 0xE3069283:
        return "crc32c('123456789') = %08x, not e3069283" % \
            crc32c(b"123456789")
    i = HAPROXY_V2.index(b"\x03\x00\x04", 28)
    zeroed = HAPROXY_V2[:i + 3] + b"\0\0\0\0" + HAPROXY_V2[i + 7:]
    got = crc32c(zeroed)
    want = struct.unpack("!I", HAPROXY_V2[i + 3:i + 7])[0]
    if got != want:
        return "HAProxy's header: crc32c %08x, HAProxy sent %08x" % (
            got, want)
    return None


# ---------------------------------------------------------------------------
# headers

def v1(proto, src=None, dst=None, sport=None, dport=None):
    """'PROXY <proto> <src> <dst> <sport> <dport>\\r\\n'; "PROXY UNKNOWN
    \\r\\n" when proto is UNKNOWN and no address is given."""
    if src is None:
        return ("PROXY %s\r\n" % proto).encode()
    return ("PROXY %s %s %s %d %d\r\n" % (proto, src, dst, sport,
                                           dport)).encode()


def v1_unknown_of(length):
    """'PROXY UNKNOWN xxx...\\r\\n' of exactly <length> bytes (>= 17)."""
    pad = length - len(b"PROXY UNKNOWN \r\n")
    return b"PROXY UNKNOWN " + b"x" * pad + b"\r\n"


def tlv(typ, value):
    if isinstance(value, str):
        value = value.encode()
    return bytes([typ]) + struct.pack("!H", len(value)) + value


def v2(cmd=CMD_PROXY, src=None, dst=None, sport=0, dport=0, tlvs=(),
       crc=False, bad_crc=False, family=None, transport=T_STREAM,
       version=2, addr=None, length=None, after_crc=None):
    """A v2 header. <src>/<dst>: address text (their family makes the
    family byte, AF_UNSPEC when None); <family>/<transport>/<version>:
    forced values; <addr>: the address block's bytes instead of the one
    built from src, dst, sport, dport; <tlvs>: TLV bytes (see tlv());
    <crc>: a CRC32C TLV last, computed over the whole header with its
    value zeroed (<bad_crc>: off by one bit); <after_crc>: f(header)
    applied after the CRC was computed (to corrupt a byte the CRC
    covers); <length>: the length field, instead of the true one."""
    if family is None:
        if src is None:
            family = AF_UNSPEC
        elif ":" in src:
            family = AF_INET6
        else:
            family = AF_INET
    if addr is None:
        if family == AF_INET:
            addr = socket.inet_pton(socket.AF_INET, src) + \
                socket.inet_pton(socket.AF_INET, dst) + \
                struct.pack("!HH", sport, dport)
        elif family == AF_INET6:
            addr = socket.inet_pton(socket.AF_INET6, src) + \
                socket.inet_pton(socket.AF_INET6, dst) + \
                struct.pack("!HH", sport, dport)
        else:
            addr = b""
    body = addr + b"".join(tlvs)
    if crc:
        body += tlv(PP2_TYPE_CRC32C, b"\0\0\0\0")
    n = len(body) if length is None else length
    head = SIG_V2 + bytes([(version << 4) | cmd, (family << 4) | transport]) \
        + struct.pack("!H", n) + body
    if crc:
        c = crc32c(head)
        if bad_crc:
            c ^= 1
        head = head[:-4] + struct.pack("!I", c)
    if after_crc is not None:
        head = after_crc(head)
    return head


def v2_of(total, src="192.0.2.13", dst="198.51.100.1", sport=40020,
          dport=3128):
    """A v2 PROXY INET header of exactly <total> bytes, the room after
    the addresses filled by one NOOP TLV (skipped by any reader)."""
    fixed = 16 + 12 + 3
    return v2(src=src, dst=dst, sport=sport, dport=dport,
              tlvs=[tlv(PP2_TYPE_NOOP, b"\0" * (total - fixed))])


# ---------------------------------------------------------------------------
# clients

def connect_from(port, src=None, host="127.0.0.1", timeout=None):
    """A TCP socket to the proxy at host:port, bound to <src> when given,
    with TCP_NODELAY (so byte-by-byte writes leave as they are made)."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout or ptest.bound(10))
    try:
        if src:
            s.bind((src, 0))
        s.connect((host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except BaseException:
        s.close()
        raise
    return s


def send_header(s, header, how="whole", after=b"", pause=0.002):
    """Writes <header> on socket <s>: "whole" (with <after> in the same
    write), "bytes" (one byte a write, <pause> s apart, then <after>), or
    a list of (piece length, pause before it) for timed pieces."""
    if how == "whole":
        s.sendall(header + after)
        return
    if how == "bytes":
        for i in range(len(header)):
            s.sendall(header[i:i + 1])
            time.sleep(pause)
    else:
        off = 0
        for n, wait in how:
            time.sleep(wait)
            s.sendall(header[off:off + n])
            off += n
        if off < len(header):
            s.sendall(header[off:])
    if after:
        s.sendall(after)


def request_bytes(url, method="GET", close=True):
    hs = [("Connection", "close")] if close else []
    return H.request_bytes(method, url, hs)


def http_after(port, header, url, how="whole", src=None, host="127.0.0.1",
               method="GET", extra_urls=()):
    """<header> then a request for <url> (absolute form, through the
    proxy) on one connection (with <extra_urls> after it on the same
    keep-alive connection, the last one with Connection: close).
    Returns ([Resp or 'error text', ...], the socket's (address, port))
    — the port is the balancer's port as the proxy sees it."""
    out = []
    local = (None, None)
    try:
        s = connect_from(port, src, host)
    except Exception as e:
        return ["connect: %s" % ptest.err_kind(e)], local
    local = s.getsockname()[:2]
    conn = H.Conn(s, ptest.bound(10))
    try:
        urls = [url] + list(extra_urls)
        first = request_bytes(urls[0], method, close=len(urls) == 1)
        send_header(s, header, how, after=first if how == "whole" else b"")
        if how != "whole":
            s.sendall(first)
        for i, u in enumerate(urls):
            if i:
                conn.send(request_bytes(u, method, close=i == len(urls) - 1))
            try:
                out.append(H.read_response(conn, method))
            except Exception as e:
                out.append("%s: %s" % (type(e).__name__, e))
                break
    except Exception as e:
        out.append("%s: %s" % (type(e).__name__, e))
    finally:
        conn.close()
    return out, local


def refused(port, data, how="whole", src=None, host="127.0.0.1", shut=False,
            rst=False, wait=None):
    """Sends <data> (see send_header for <how>; a failed write is not an
    error: the proxy may have closed already) and reads what the proxy
    sends until it closes. <shut>: half-close after the data (EOF before
    the header ended); <rst>: close at once with a reset (nothing then
    read back). Returns (bytes read, 'eof'|'reset'|'timeout'|..., seconds
    from the connect to the end)."""
    t0 = time.monotonic()
    try:
        s = connect_from(port, src, host)
    except Exception as e:
        return b"", "connect:" + ptest.err_kind(e), 0.0
    conn = H.Conn(s, ptest.bound(10))
    try:
        try:
            if data:
                send_header(s, data, how)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        if rst:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
            return b"", "sent-reset", time.monotonic() - t0
        got, end = H.outcome(conn, wait or ptest.bound(5))
        return got, end, time.monotonic() - t0
    finally:
        conn.close()


def trickle(port, data, every, limit):
    """Sends <data> one byte every <every> s (never all of it within
    <limit> s: the caller makes it long enough) until the proxy closes.
    Returns (bytes read, how it ended, seconds, bytes sent)."""
    t0 = time.monotonic()
    try:
        s = connect_from(port)
    except Exception as e:
        return b"", "connect:" + ptest.err_kind(e), 0.0, 0
    sent = 0
    got = b""
    how = "timeout"
    try:
        s.settimeout(every)
        while sent < len(data) and time.monotonic() - t0 < limit:
            try:
                s.sendall(data[sent:sent + 1])
                sent += 1
            except OSError:
                how = "reset"
                break
            try:
                d = s.recv(4096)
            except socket.timeout:
                continue
            except ConnectionResetError:
                how = "reset"
                break
            if not d:
                how = "eof"
                break
            got += d
        return got, how, time.monotonic() - t0, sent
    finally:
        s.close()


def closes_silently(got, how):
    return got == b"" and how in ("eof", "reset")


# ---------------------------------------------------------------------------
# /metrics

def counts(status_port):
    """{"refused": {reason: n}, "headers": {"1": n, "2": n}, "have":
    set of the families present} from a status listener's /metrics, or
    (None with "error" set). Series of one reason (or version) with more
    labels are added up."""
    samples, raw = ST.scrape(status_port)
    if samples is None:
        return {"error": raw}
    ref = {r: 0 for r in REASONS}
    hd = {"1": 0, "2": 0}
    have = set()
    for lab, v in ST.series(samples, REFUSED):
        have.add(REFUSED)
        r = lab.get("reason", "?")
        ref[r] = ref.get(r, 0) + int(v)
    for lab, v in ST.series(samples, HEADERS):
        have.add(HEADERS)
        k = lab.get("version", "?")
        hd[k] = hd.get(k, 0) + int(v)
    return {"refused": ref, "headers": hd, "have": have, "error": None}


def delta(before, after):
    """{"refused": {...}, "headers": {...}} of after - before."""
    out = {"refused": {}, "headers": {}}
    for k in ("refused", "headers"):
        for name in set(before[k]) | set(after[k]):
            d = after[k].get(name, 0) - before[k].get(name, 0)
            if d:
                out[k][name] = d
    return out


def wait_counts(status_port, before, refused=None, headers=None,
                timeout=None):
    """Scrapes until the counters moved at least by <refused> ({reason:
    n}) and <headers> ({version: n}) since <before> (bounded), then once
    more a moment later (a counter that goes on past the mark shows).
    Returns (after, [what differs from exactly that])."""
    want_r = dict(refused or {})
    want_h = dict(headers or {})

    def reached():
        c = counts(status_port)
        if c.get("error"):
            return None
        d = delta(before, c)
        if all(d["refused"].get(r, 0) >= n for r, n in want_r.items()) \
                and all(d["headers"].get(v, 0) >= n
                        for v, n in want_h.items()):
            return c
        return None
    ptest.wait_for(reached, timeout or ptest.bound(5), interval=0.1)
    time.sleep(0.2)
    after = counts(status_port)
    if after.get("error"):
        return after, ["/metrics: %s" % after["error"]]
    d = delta(before, after)
    wrong = []
    for r in set(REASONS) | set(d["refused"]):
        got, want = d["refused"].get(r, 0), want_r.get(r, 0)
        if got != want:
            wrong.append('%s{reason="%s"} moved by %d, expected %d' % (
                REFUSED, r, got, want))
    for v in set(("1", "2")) | set(d["headers"]):
        got, want = d["headers"].get(v, 0), want_h.get(v, 0)
        if got != want:
            wrong.append('%s{version="%s"} moved by %d, expected %d' % (
                HEADERS, v, got, want))
    if (want_r and REFUSED not in after["have"]) or \
            (want_h and HEADERS not in after["have"]):
        wrong.append("/metrics has no %s" % " or ".join(
            f for f in (REFUSED, HEADERS) if f not in after["have"]))
    return after, wrong


# ---------------------------------------------------------------------------
# a binary without the feature

def conf_refused(path):
    """None when `portico -t -c <path>` accepts the configuration, else
    its output. (A binary without the PROXY protocol says "no module
    "proxy_protocol" in "modules" for these listener options".)"""
    cp = ptest.run_portico(["-t", "-c", path])
    if cp.returncode == 0:
        return None
    return (cp.stdout + cp.stderr).strip() or "exit %d" % cp.returncode


def report_conf_refused(t, out, what):
    """One failed check saying the binary refused the configuration, and
    why that most likely is."""
    feature = "proxy_protocol" in out
    t.check(False, "portico -t accepts %s" % what, [
        out,
        "this binary does not know the listener setting proxy_protocol: "
        "it was built without the PROXY protocol feature, so none of this "
        "scenario's checks can run" if feature else
        "the configuration was refused for another reason than "
        "proxy_protocol: a fault of the scenario's configuration?"])
