#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
An HTTPS proxy: the real tls.so on an HTTP listener, a test CA and
certificate made by the openssl program, real clients speaking TLS to
portico and HTTP proxy requests inside it.

- curl --proxy https://127.0.0.1:PORT --proxy-cacert ca.pem: a GET
  reaches the loopback origin and its answer comes back;
- a 10 MiB download and a 10 MiB upload through TLS, checked by sha256;
- CONNECT inside TLS: curl -p through the tunnel, and python's ssl with
  2 MiB both ways through a tunnel to an echo server; a tunnel whose
  origin closes ends with our close_notify (a clean TLS EOF, not a
  truncation); a slow reader with a small receive buffer gets every
  byte of a 3 MiB tunnel (writes that meet a full socket resume);
- a WebSocket inside TLS (python ssl): upgrade, text and 1 MiB binary
  frames echo, the close handshake ends in EOF;
- a client that ends a kept-alive connection with close_notify gets
  ours back (python's unwrap), then EOF;
- ALPN: a client offering h2 and http/1.1 gets h2 where portico was
  built with HTTP/2 (http/1.1 otherwise), one offering only http/1.1
  gets http/1.1;
- TLS 1.2 works (the default minimum), a TLS 1.1-only client is refused
  with a protocol_version alert, while a listener with min_version
  TLSv1.1 lets the same client in (so the refusal is the option's);
- max_version and ciphers pin TLS 1.2 and one cipher; ciphersuites
  picks the TLS 1.3 suite; max_version below min_version fails -t;
- ktls = true: a tunnel carries 1 MiB both ways, and the debug log says
  whether the kernel took the record layer (ktls=tx,rx) or not
  (ktls=off, this kernel without its tls module);
- plaintext HTTP sent to the TLS port gets a plain 400 that says so and
  a FIN at once, and the origin never hears of it; the access log (JSON) has a
  line for the requests made over TLS and none for a failed handshake;
- a client that stops in the middle of its ClientHello, and one that
  sends nothing, are closed at header_timeout (2 s) while other clients
  are served meanwhile;
- the master's totals count handshakes and failed ones; no worker died.
"""
import hashlib
import json
import os
import socket
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import tlstest as T  # noqa: E402

ACCESSLOG_SO = os.path.join(ptest.BUILDDIR, "modules", "accesslog",
                            ".libs", "accesslog.so")

HEADER_TIMEOUT = 2
TEN_MIB = 10 * ptest.MiB


def client_hello(cafile):
    """The bytes of a real ClientHello (python's ssl, memory BIOs)."""
    ctx = T.client_ctx(cafile)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="127.0.0.1")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def tls_connect_tunnel(port, ca, target):
    """A TLS connection to the proxy with a CONNECT to <target> done:
    (H.Conn, status line)."""
    s = T.connect(port, ca, ragged_ok=False, timeout=ptest.bound(20))
    conn = H.Conn(s, ptest.bound(20))
    conn.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target))
    head = conn.read_head()
    return conn, head.split(b"\r\n", 1)[0].decode("latin-1")


def check_curl(t, port, ca, o):
    cp = H.curl(T.curl_args(port, ca) + ["-D", "-", o.url + "/echo?id=get1"])
    out = cp.stdout.decode("latin-1")
    t.check(cp.returncode == 0 and out.startswith("HTTP/1.1 200") and
            '"target": "/echo?id=get1"' in out,
            "curl --proxy https:// GET: 200 from the origin through TLS",
            lambda: ["curl rc %d: %s" % (cp.returncode, cp.stderr[-400:]),
                     out[:400]])
    t.check(len(o.reqs_for("id=get1")) == 1,
            "the origin got the GET once", lambda: o.requests[-3:])

    # 10 MiB down
    dl = t.path("download.bin")
    cp = H.curl(T.curl_args(port, ca) + [
        "-D", t.path("dl.head"), "-o", dl,
        o.url + "/len?n=%d&id=down" % TEN_MIB], timeout=ptest.bound(60))
    with open(t.path("dl.head"), "rb") as f:
        head = f.read().decode("latin-1")
    want = [ln.split(":", 1)[1].strip() for ln in head.split("\r\n")
            if ln.lower().startswith("x-body-sha256:")]
    got = H.sha(open(dl, "rb").read()) if os.path.exists(dl) else None
    t.check(cp.returncode == 0 and want and got == want[0] and
            os.path.getsize(dl) == TEN_MIB,
            "a 10 MiB download through TLS arrives whole (sha256)",
            lambda: ["curl rc %d: %s" % (cp.returncode, cp.stderr[-300:]),
                     "want %s got %s" % (want, got)])

    # 10 MiB up
    up = t.path("upload.bin")
    data = os.urandom(TEN_MIB)
    with open(up, "wb") as f:
        f.write(data)
    cp = H.curl(T.curl_args(port, ca) + [
        "-o", "/dev/null", "-w", "%{http_code}", "-H", "Expect:",
        "--data-binary", "@" + up, o.url + "/echo?id=up10"],
        timeout=ptest.bound(60))
    r = o.reqs_for("id=up10")
    t.check(cp.returncode == 0 and cp.stdout == b"200" and len(r) == 1 and
            r[0]["body_len"] == TEN_MIB and
            r[0]["body_sha256"] == H.sha(data),
            "a 10 MiB upload through TLS reaches the origin whole (sha256)",
            lambda: ["curl rc %d %r: %s" % (cp.returncode, cp.stdout,
                                             cp.stderr[-300:]),
                     [(x["body_len"], x["body_sha256"]) for x in r]])

    # CONNECT with curl
    cp = H.curl(T.curl_args(port, ca) + [
        "-p", "-o", "/dev/null", "-w", "%{http_code}",
        o.url + "/echo?id=tunnel1"])
    t.check(cp.returncode == 0 and cp.stdout == b"200" and
            len(o.reqs_for("id=tunnel1")) == 1,
            "curl -p: a GET through a CONNECT tunnel inside TLS",
            lambda: "curl rc %d %r: %s" % (cp.returncode, cp.stdout,
                                            cp.stderr[-300:]))


def check_tunnel(t, port, ca, echo, source):
    try:
        conn, status = tls_connect_tunnel(port, ca, echo.address)
    except Exception as e:
        conn, status = None, "%s: %s" % (type(e).__name__, e)
    t.check(status.startswith("HTTP/1.1 200"),
            "CONNECT inside TLS (python ssl): 200", status)
    if conn is not None and status.startswith("HTTP/1.1 200"):
        payload = os.urandom(2 * ptest.MiB)
        got = bytearray()
        err = []
        # One thread, in turns: OpenSSL (so python's ssl) does not allow
        # a read and a write on one connection from two threads at once.
        step = 128 * 1024
        try:
            for i in range(0, len(payload), step):
                conn.sock.sendall(payload[i:i + step])
                got.extend(conn.read_exact(len(payload[i:i + step])))
        except Exception as e:
            err.append("%s: %s" % (type(e).__name__, e))
        t.check(not err and bytes(got) == payload,
                "2 MiB through the tunnel and back, byte-exact",
                lambda: "got %d bytes, %s" % (len(got), err))
        conn.close()

    # a client that stops reading: the proxy's writes meet a full socket
    # in the middle of TLS records and must resume them exactly
    try:
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.settimeout(ptest.bound(20))
        raw.connect(("127.0.0.1", port))
        s = T.client_ctx(ca).wrap_socket(raw, server_hostname="127.0.0.1",
                                         suppress_ragged_eofs=False)
        conn = H.Conn(s, ptest.bound(20))
        conn.send("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n"
                  % source.address)
        status = conn.read_head().split(b"\r\n", 1)[0]
        time.sleep(1.0)
        h, n, stalls = hashlib.sha256(), 0, 0
        while True:
            if not conn.buf and not conn._fill():
                break
            h.update(conn.buf)
            n += len(conn.buf)
            conn.buf = bytearray()
            if n < ptest.MiB and stalls < 20:
                stalls += 1
                time.sleep(0.05)
        how = "eof with close_notify"
        digest = h.hexdigest()
    except Exception as e:
        status, n, digest, how = b"", 0, None, "%s: %s" % (
            type(e).__name__, e)
    t.check(status.startswith(b"HTTP/1.1 200") and
            digest == source.digest and how == "eof with close_notify",
            "a slow reader (small receive buffer, pauses) gets every byte "
            "of a tunnel, then a close_notify", lambda: "%r %d bytes, %s" % (
                status, n, how))

    # the origin closes: the proxy's close_notify, then EOF
    try:
        conn, status = tls_connect_tunnel(port, ca, source.address)
        data = conn.read_until_eof(limit=4 * ptest.MiB)
        how = "eof with close_notify"
    except ssl.SSLEOFError as e:
        data, how = b"", "truncated: %s" % e
    except Exception as e:
        data, how = b"", "%s: %s" % (type(e).__name__, e)
    t.check(how == "eof with close_notify" and
            hashlib.sha256(data).hexdigest() == source.digest,
            "a tunnel whose origin closes: every byte, then a close_notify "
            "(not a truncated stream)", lambda: "%d bytes, %s" % (
                len(data), how))


def check_websocket(t, port, ca, o):
    import base64
    key = base64.b64encode(os.urandom(16)).decode()
    try:
        s = T.connect(port, ca, timeout=ptest.bound(20))
        conn = H.Conn(s, ptest.bound(20))
        conn.send(H.request_bytes("GET", o.url + "/ws?id=tlsws", [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")]))
        r = H.read_response(conn)
    except Exception as e:
        t.check(False, "WebSocket through TLS: upgrade", repr(e))
        return
    want = base64.b64encode(hashlib.sha1(key.encode() + H.WS_GUID)
                            .digest()).decode()
    t.check(r.status == 101 and r.get("sec-websocket-accept") == want,
            "WebSocket through TLS: 101 with the right accept",
            H.describe(r))
    if r.status != 101:
        return
    try:
        conn.send(H.ws_frame(1, b"hello over tls"))
        a = H.ws_read(conn)
        big = os.urandom(ptest.MiB)
        conn.send(H.ws_frame(2, big))
        b = H.ws_read(conn)
        conn.send(H.ws_frame(8, b"\x03\xe8bye"))
        c = H.ws_read(conn)
        rest, how = H.outcome(conn, ptest.bound(5))
        ok = (a == (True, 1, b"hello over tls") and b == (True, 2, big) and
              c is not None and c[1] == 8 and rest == b"" and how == "eof")
        info = "%r %r %r %r %s" % (a, (b or (0, 0, b""))[2][:8], c,
                                   rest[:20], how)
    except Exception as e:
        ok, info = False, "%s: %s" % (type(e).__name__, e)
    t.check(ok, "WebSocket through TLS: text and 1 MiB frames echo, the "
            "close handshake ends in EOF", info)
    conn.close()


def check_versions(t, port, low_port, ca):
    want = "h2" if ptest.have_h2_build() else "http/1.1"
    s = T.connect(port, ca, alpn=["h2", "http/1.1"])
    t.check(s.selected_alpn_protocol() == want,
            "ALPN: a client offering h2 and http/1.1 gets %s" % want,
            repr(s.selected_alpn_protocol()))
    s.close()
    s = T.connect(port, ca, alpn=["http/1.1"])
    t.check(s.selected_alpn_protocol() == "http/1.1",
            "ALPN: a client offering only http/1.1 gets http/1.1",
            repr(s.selected_alpn_protocol()))
    s.close()
    raw = ptest.connect(port)
    ctx = T.client_ctx(ca)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    try:
        s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        v = s.version()
        s.close()
    except Exception as e:
        v = repr(e)
        raw.close()
    t.check(v == "TLSv1.2", "a TLS 1.2 client is served (default minimum)",
            v)

    args = ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"]
    rc, out = T.s_client(port, ca, extra=args)
    t.check("alert protocol version" in out and
            "Cipher is (NONE)" in out,
            "a TLS 1.1-only client is refused with a protocol_version "
            "alert", ptest.tail(out, 8))
    rc, out = T.s_client(low_port, ca, extra=args)
    t.check("Protocol  : TLSv1.1" in out and "Cipher is (NONE)" not in out
            and "alert" not in out,
            "the same client gets TLS 1.1 from a listener with "
            "min_version = \"TLSv1.1\" (the refusal is the option's)",
            ptest.tail(out, 12))


def check_ktls(t, p, port, ca, echo):
    """ktls = true: the kernel does the record layer where it can (this
    kernel may lack its tls module: then OpenSSL keeps it); either way the
    bytes are the same."""
    try:
        conn, status = tls_connect_tunnel(port, ca, echo.address)
        payload = os.urandom(ptest.MiB)
        got = bytearray()
        for i in range(0, len(payload), 128 * 1024):
            conn.sock.sendall(payload[i:i + 128 * 1024])
            got.extend(conn.read_exact(len(payload[i:i + 128 * 1024])))
        conn.close()
        ok = status.startswith("HTTP/1.1 200") and bytes(got) == payload
        info = status
    except Exception as e:
        ok, info = False, "%s: %s" % (type(e).__name__, e)
    lines = p.wait_log(r"tls: TLSv1\.3 \S+ ktls=")
    t.check(ok and lines, "ktls = true: 1 MiB through a tunnel and back, "
            "byte-exact; the handshake line says %s" % (
                lines[-1].rsplit(" ", 1)[-1] if lines else "nothing"),
            lambda: [info] + lines[-2:])


def check_unwrap(t, port, ca, o):
    """A client that ends a kept-alive HTTP connection with its own
    close_notify (python's unwrap waits for ours) gets it back."""
    try:
        s = T.connect(port, ca, timeout=ptest.bound(10))
        conn = H.Conn(s, ptest.bound(10))
        conn.send(H.request_bytes("GET", o.url + "/echo?id=unwrap"))
        r = H.read_response(conn)
        t0 = time.monotonic()
        raw = s.unwrap()
        dt = time.monotonic() - t0
        rest = raw.recv(16)
        raw.close()
        ok, info = r.status == 200 and rest == b"", "%.2fs" % dt
    except Exception as e:
        ok, info = False, "%s: %s" % (type(e).__name__, e)
    t.check(ok, "a client's close_notify on a kept-alive connection is "
            "answered with ours, then EOF", info)


def check_ciphers(t, pin, suites, ca, cert, key):
    """max_version, ciphers and ciphersuites decide what is negotiated."""
    got = []
    for port in (pin, suites):
        try:
            s = T.connect(port, ca)
            got.append((s.version(), s.cipher()[0]))
            s.close()
        except Exception as e:
            got.append(repr(e))
    t.check(got[0] == ("TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256"),
            'max_version = "TLSv1.2" and ciphers: a TLS 1.3 client gets '
            'TLS 1.2 with that cipher', got[0])
    t.check(got[1] == ("TLSv1.3", "TLS_CHACHA20_POLY1305_SHA256"),
            "ciphersuites: the TLS 1.3 suite named", got[1])
    text = T.conf(t, T.listener(pin, cert, key, extra='min_version = '
                                '"TLSv1.3";\n      max_version = "TLSv1.2";'))
    path = ptest.write_conf(t.tmp, text, "minmax.conf")
    cp = ptest.run_portico(["-t", "-c", path])
    t.check(cp.returncode != 0 and "%s:%d: max_version" % (
        path, ptest.line_of(text, 'max_version = "TLSv1.2"')) in cp.stderr
        and "below min_version" in cp.stderr,
        "-t: max_version below min_version fails with its line", cp.stderr)
    # A tls group on a listener whose transport is not tls: refused, not
    # a listener serving in the clear with its certificates ignored.
    text = T.conf(t, T.listener(pin, cert, key).replace(
        'transport = "tls";', ""))
    path = ptest.write_conf(t.tmp, text, "notransport.conf")
    cp = ptest.run_portico(["-t", "-c", path])
    t.check(cp.returncode != 0 and "%s:%d:" % (
        path, ptest.line_of(text, "tls = {")) in cp.stderr and
        "no transport" in cp.stderr,
        "-t: a tls group on a listener without transport = \"tls\" fails "
        "with its line", cp.stderr)


def check_plaintext(t, port, o):
    before = len(o.requests)
    s = ptest.connect(port, timeout=ptest.bound(5))
    t0 = time.monotonic()
    s.sendall(b"GET %s/echo?id=plain HTTP/1.1\r\nHost: x\r\n\r\n"
              % o.url.encode())
    got, how = b"", "eof"
    try:
        while len(got) < 65536:
            d = s.recv(4096)
            if not d:
                break
            got += d
    except ConnectionResetError:
        how = "reset"
    except socket.timeout:
        how = "timeout"
    dt = time.monotonic() - t0
    s.close()
    t.check(how == "eof" and got.startswith(b"HTTP/1.1 400 ") and
            b"plain HTTP was sent to a TLS listener" in got and
            dt < HEADER_TIMEOUT / 2,
            "plaintext HTTP on the TLS port: a plain 400 saying so (as "
            "nginx answers), then a FIN, at once (%.2fs)" % dt,
            "%s after %.2fs, got %r" % (how, dt, got[:200]))
    t.check(len(o.requests) == before and not o.reqs_for("id=plain"),
            "the origin never heard of the plaintext request")


def closed_at(s, t0, limit):
    """Seconds from <t0> until <s> is closed by the peer, or None."""
    s.settimeout(limit)
    try:
        while s.recv(4096):
            pass
    except (ConnectionResetError, socket.timeout):
        pass
    except OSError:
        pass
    return time.monotonic() - t0


def check_stall(t, port, ca, o):
    hello = client_hello(ca)
    t0 = time.monotonic()
    half = ptest.connect(port, timeout=ptest.bound(10))
    half.sendall(hello[:len(hello) // 2])
    mute = ptest.connect(port, timeout=ptest.bound(10))
    # meanwhile, other clients are served, each well within the timeout
    served, slow = 0, []
    for i in range(5):
        t1 = time.monotonic()
        cp = H.curl(T.curl_args(port, ca) + [
            "-o", "/dev/null", "-w", "%{http_code}",
            o.url + "/echo?id=during%d" % i])
        dt = time.monotonic() - t1
        if cp.stdout == b"200" and dt < HEADER_TIMEOUT / 2:
            served += 1
        else:
            slow.append((cp.stdout, round(dt, 2), cp.stderr[-200:]))
    t.check(served == 5, "5 clients are served while two stall in the "
            "handshake", slow)
    limit = HEADER_TIMEOUT + ptest.bound(3)
    d1 = closed_at(half, t0, limit)
    d2 = closed_at(mute, t0, limit)
    half.close()
    mute.close()
    ok = all(HEADER_TIMEOUT - 0.3 <= d <= HEADER_TIMEOUT + ptest.bound(1.5)
             for d in (d1, d2))
    t.check(ok, "a client stalled mid-ClientHello and a mute one are closed "
            "at header_timeout (%ds): %.2fs, %.2fs" % (HEADER_TIMEOUT, d1, d2))


def main(t):
    why = T.missing()
    if why:
        t.skip("tls scenarios", why)
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    o = H.origin(t)
    echo = t.echo_server()
    source = t.source_server(3 * ptest.MiB + 17)
    port, low, kport, pin, suites = (ptest.free_port() for _ in range(5))
    conf = T.conf(t, ",\n".join([
        T.listener(port, cert, key),
        T.listener(low, cert, key, name="low",
                   extra='min_version = "TLSv1.1"; '
                   'ciphers = "DEFAULT@SECLEVEL=0";'),
        T.listener(kport, cert, key, name="ktls", extra="ktls = true;"),
        T.listener(pin, cert, key, name="pin",
                   extra='max_version = "TLSv1.2"; '
                   'ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256";'),
        T.listener(suites, cert, key, name="suites",
                   extra='ciphersuites = "TLS_CHACHA20_POLY1305_SHA256";')]),
        workers=2, limits="header_timeout = %d;" % HEADER_TIMEOUT,
        log_level="debug", modules_extra=', { name = "accesslog"; path = '
        '"%s"; logs = ( { file = "%s"; format = "json"; } ); }' % (
            ACCESSLOG_SO, t.path("access.log")))
    conf = conf.replace("header_timeout = 10;", "")
    p = t.portico(conf)
    w0 = p.workers()

    check_curl(t, port, ca.pem, o)
    check_tunnel(t, port, ca.pem, echo, source)
    check_websocket(t, port, ca.pem, o)
    check_versions(t, port, low, ca.pem)
    check_ciphers(t, pin, suites, ca.pem, cert, key)
    check_unwrap(t, port, ca.pem, o)
    check_ktls(t, p, kport, ca.pem, echo)
    check_plaintext(t, port, o)
    check_stall(t, port, ca.pem, o)

    t.check(not o.bad, "the origin found nothing wrong in what it got",
            o.bad)
    H.finish(t, p, w0)
    tot = {}
    for ln in p.log_lines(r"master: totals: ")[-1:]:
        for kv in ln.split("totals: ", 1)[1].split():
            k, _, v = kv.partition("=")
            tot[k] = int(v) if v.isdigit() else v
    recs = []
    with open(t.path("access.log")) as f:
        for line in f:
            recs.append(json.loads(line))
    hs = [r for r in recs if (r.get("error") or "").startswith(
        "transport handshake")]
    t.check(not hs and any(r.get("status") == 200 and r.get("proto") ==
                           "http" for r in recs),
            "the access log has the requests made over TLS, and no line for "
            "a connection whose handshake failed or stalled (the error log "
            "says why)", lambda: ["%d records, %d of failed handshakes: %r" %
                                  (len(recs), len(hs), hs[:2])])
    t.check(tot.get("tls_handshakes", 0) >= 15 and
            tot.get("tls_handshake_failed", 0) >= 4,
            "the totals count handshakes and failed ones "
            "(plaintext, TLS 1.1, two stalls)", repr(tot))
    check_cut(t, ca.pem, cert, key, echo)


def check_cut(t, ca, cert, key, echo):
    """A CONNECT tunnel inside TLS open at a fast stop is reset, with no
    close_notify: the client must not read the cut as the data's end."""
    port = ptest.free_port()
    p = t.portico(T.conf(t, T.listener(port, cert, key)),
                  conf_name="cut.conf")
    conn, status = tls_connect_tunnel(port, ca, echo.address)
    conn.send(b"held")
    t.check(" 200" in status and conn.read_exact(4) == b"held",
            "a CONNECT tunnel inside TLS relays before the fast stop", status)
    # Read below TLS: a close_notify would be a record's bytes, a FIN an
    # empty read, the reset an error.
    raw = socket.socket(fileno=os.dup(conn.sock.fileno()))
    p.term()
    raw.settimeout(ptest.bound(5))
    try:
        d = raw.recv(64)
        how = "a TLS record (close_notify?): %r" % d[:8] if d else "FIN"
    except ConnectionResetError:
        how = "reset"
    except Exception as e:
        how = ptest.err_kind(e)
    t.check(how == "reset", "at the fast stop it is reset, with no TLS "
            "close_notify before", how)
    raw.close()
    conn.close()
    p.wait_exit(ptest.bound(10))
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("tls_proxy").run(main)
