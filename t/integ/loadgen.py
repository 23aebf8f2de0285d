#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
bench/loadgen, the load generator the benchmarks use, measured against
known answers so its numbers can be trusted:

- `loadgen serve` (HTTP origin, TCP echo, UDP echo) on loopback;
- http straight to the origin and through a real portico: the JSON line
  parses, rate > 0, no error, exit 0;
- a wrong --expect-size counts size errors and exits 1; a closed port
  counts refusals; a server that accepts and resets (SO_LINGER 0) counts
  resets;
- tunnel through portico CONNECT: bytes both ways, no error; with
  --no-send to a source, bytes down only;
- socks-handshakes and udp through a portico socks5 listener: no error,
  every datagram delivered; socks-handshakes --exchange to the echo:
  bytes both ways, no error; --exchange outside socks-handshakes, or
  with --payload, is bad usage;
- idle with 20 connections prints "holding 20";
- --tls through portico's tls listener (an HTTPS proxy; where tls.so is
  built): kept-alive GETs, http-close (a full handshake each), a CONNECT
  tunnel inside TLS, no errors, TLS 1.3 with TLS_AES_128_GCM_SHA256
  negotiated; --tls-resume: every handshake by a client coming back
  (counted as "repeat") offered its ticket, and every one that offered
  one resumed; --tls against a plain HTTP listener counts errors and exits 1;
  --tls without --proxy is bad usage.

The binary: PT_BUILDDIR/bench/loadgen.
"""
import email.utils
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import tlstest as T  # noqa: E402

LOADGEN = os.path.join(ptest.BUILDDIR, "bench", "loadgen")


def run(t, args, timeout=None):
    """(exit status, parsed JSON or None, stdout, stderr) of one loadgen
    run with --json."""
    cmd = [LOADGEN] + args + ["--json"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE,
                           timeout=timeout or ptest.bound(15))
    except subprocess.TimeoutExpired:
        return None, None, "", "timed out: %s" % " ".join(cmd)
    out = p.stdout.decode(errors="replace")
    err = p.stderr.decode(errors="replace")
    js = None
    lines = [x for x in out.splitlines() if x.startswith("{")]
    if len(lines) == 1:
        try:
            js = json.loads(lines[0])
        except ValueError:
            js = None
    return p.returncode, js, out, err


def details(res):
    rc, js, out, err = res
    return ["exit %s" % rc, "stdout: " + out, "stderr: " + err]


def errors(js):
    return sum(js["errors"].values()) if js else None


def clean(t, res, what, extra=None):
    """Checks one run: JSON, rate > 0 (tunnels: none), no error, exit 0."""
    rc, js, out, err = res
    ok = (js is not None and rc == 0 and
          (js["rate"] > 0 or js["scenario"] == "tunnel") and
          errors(js) == 0 and (extra is None or extra(js)))
    t.check(ok, what, lambda: details(res))
    return js


class Resetter:
    """Accepts and closes at once with SO_LINGER 0: a RST to each client."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(512)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]
        self.stopping = False
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _run(self):
        while not self.stopping:
            try:
                c, _ = self.s.accept()
            except OSError:
                continue
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
            # Wait for the request, so the RST answers it.
            try:
                c.settimeout(1)
                c.recv(4096)
            except OSError:
                pass
            c.close()

    def stop(self):
        self.stopping = True
        self.th.join(2)
        self.s.close()


class Dribbler:
    """An origin that answers every request with <response>, one byte per
    send (TCP_NODELAY), so loadgen's parser sees every split."""

    def __init__(self, response, close=False):
        self.response = response
        self.close = close
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]
        self.stopping = False
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _run(self):
        while not self.stopping:
            try:
                c, _ = self.s.accept()
            except OSError:
                continue
            threading.Thread(target=self._conn, args=(c,),
                             daemon=True).start()

    def _conn(self, c):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.settimeout(2)
        buf = b""
        try:
            while not self.stopping:
                while b"\r\n\r\n" not in buf:
                    d = c.recv(4096)
                    if not d:
                        return
                    buf += d
                buf = buf[buf.index(b"\r\n\r\n") + 4:]
                for i in range(len(self.response)):
                    c.send(self.response[i:i + 1])
                if self.close:
                    return
        except OSError:
            pass
        finally:
            c.close()

    def stop(self):
        self.stopping = True
        self.th.join(2)
        self.s.close()


DRIBBLES = (
    ("an interim 100, then chunked with an extension and a trailer",
     b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n"
     b"A\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n", False, 15),
    ("Content-Length, keep-alive",
     b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n"
     b"hello0123456789", False, 15),
    ("HTTP/1.0, no length: the body ends at the close",
     b"HTTP/1.0 200 OK\r\n\r\nhello0123456789", True, 15),
)


def start_serve(t):
    """(http port, echo port, source/sink port, udp port, stop) of a
    `loadgen serve`; stop() gives its exit status and stderr."""
    for _ in range(3):
        hport, eport = ptest.free_port(), ptest.free_port()
        kport = ptest.free_port()
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("127.0.0.1", 0))
        uport = u.getsockname()[1]
        u.close()
        errpath = t.path("serve.err")
        with open(errpath, "wb") as ef:
            p = subprocess.Popen([LOADGEN, "serve", "--http", str(hport),
                                  "--tcp-echo", str(eport), "--tcp-sink",
                                  str(kport), "--tcp-source", "0",
                                  "--udp-echo", str(uport)],
                                 stdout=subprocess.DEVNULL,
                                 stderr=ef)

        def stop(p=p, errpath=errpath):
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(ptest.bound(5))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            with open(errpath, errors="replace") as f:
                return p.returncode, f.read()
        t.at_exit(stop)
        if ptest.wait_for(lambda: ptest.listening(hport) and
                          ptest.listening(eport) and
                          ptest.listening(kport) or p.poll() is not None,
                          ptest.bound(5)) and p.poll() is None:
            return hport, eport, kport, uport, stop
        stop()
    raise RuntimeError("loadgen serve did not start")


def date_checks(t):
    """serve --date: answers carry a Date field (RFC 9110's IMF-fixdate,
    within a few seconds of now); without it, none."""
    for flag in (True, False):
        port = ptest.free_port()
        p = subprocess.Popen([LOADGEN, "serve", "--http", str(port)] +
                             (["--date"] if flag else []),
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            ptest.wait_for(lambda: ptest.listening(port) or
                           p.poll() is not None, ptest.bound(5))
            s = socket.create_connection(("127.0.0.1", port),
                                         timeout=ptest.bound(5))
            s.sendall(b"GET /bytes/4 HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                d = s.recv(4096)
                if not d:
                    break
                data += d
            s.close()
        finally:
            p.terminate()
            p.wait(ptest.bound(5))
        dates = [ln[6:] for ln in data.decode("latin-1").split("\r\n")
                 if ln.lower().startswith("date: ")]
        ok = not dates
        if flag and len(dates) == 1:
            try:
                when = email.utils.parsedate_to_datetime(dates[0])
                ok = abs(when.timestamp() - time.time()) < 5 and \
                    dates[0].endswith(" GMT")
            except (TypeError, ValueError):
                ok = False
        t.check(ok, "serve %s: %s" % ("--date" if flag else "without --date",
                                      "one Date field, now, in IMF-fixdate"
                                      if flag else "no Date field"),
                lambda: data)


def main(t):
    ptest.exclusive(t)
    if not os.access(LOADGEN, os.X_OK):
        t.check(False, "bench/loadgen is built", LOADGEN)
        return
    hport, eport, kport, uport, stop_serve = start_serve(t)
    tgt = "127.0.0.1:%d" % hport
    short = ["--duration", "0.5", "--warmup", "0.1", "--connections", "8"]
    brief = ["--duration", "0.3", "--warmup", "0", "--connections", "8"]

    js = clean(t, run(t, ["http", "--target", tgt] + short),
               "http straight to loadgen serve: JSON, rate > 0, no errors")
    if js:
        keys = {"scenario", "proxy", "target", "connections", "duration",
                "requests", "rate", "mib_s_up", "mib_s_down", "latency_us",
                "errors", "delivered_pct", "loadgen_cpu_pct", "saturated"}
        t.check(keys <= set(js) and js["proxy"] is None and
                set(js["latency_us"]) == {"p50", "p90", "p99", "p999"} and
                set(js["errors"]) == {"status", "size", "reset", "refused",
                                      "timeout", "other"} and
                isinstance(js["saturated"], bool) and
                js["latency_us"]["p50"] > 0,
                "the JSON line has every field", js)
    clean(t, run(t, ["http", "--target", tgt, "--path", "/chunked/3000",
                     "--expect-size", "3000"] + short),
          "http, chunked bodies of the expected size: no errors")
    clean(t, run(t, ["http-close", "--target", tgt] + short),
          "http-close straight to loadgen serve: no errors")

    date_checks(t)

    res = run(t, ["http", "--target", tgt, "--expect-size", "1000"] + brief)
    t.check(res[1] is not None and res[1]["errors"]["size"] > 0 and
            res[0] == 1, "a wrong --expect-size: size errors, exit 1",
            lambda: details(res))

    closed = ptest.free_port()
    res = run(t, ["http", "--target", "127.0.0.1:%d" % closed] + brief)
    t.check(res[1] is not None and res[1]["errors"]["refused"] > 0 and
            res[0] == 1, "a closed port: refusals counted, exit 1",
            lambda: details(res))

    rst = Resetter()
    t.at_exit(rst.stop)
    res = run(t, ["http", "--target", "127.0.0.1:%d" % rst.port] + brief)
    t.check(res[1] is not None and res[1]["errors"]["reset"] > 0 and
            res[0] == 1, "a server that resets: resets counted, exit 1",
            lambda: details(res))

    for what, resp, close, size in DRIBBLES:
        d = Dribbler(resp, close)
        t.at_exit(d.stop)
        clean(t, run(t, ["http", "--target", "127.0.0.1:%d" % d.port,
                         "--expect-size", str(size), "--connections", "2",
                         "--duration", "0.5", "--warmup", "0"]),
              "a response one byte per segment, %s: no errors" % what)

    # SIGTERM ends a long run early, with its report
    proc = subprocess.Popen([LOADGEN, "http", "--target", tgt, "--duration",
                             "60", "--warmup", "0.2", "--connections", "4",
                             "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    time.sleep(1)
    proc.terminate()
    try:
        out, err = proc.communicate(timeout=ptest.bound(10))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    try:
        js = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        js = None
    t.check(js is not None and proc.returncode == 0 and js["rate"] > 0 and
            js["duration"] < 30,
            "SIGTERM ends a 60 s run early with its JSON, rates over the "
            "time it ran", ["exit %s" % proc.returncode, out, err])

    res = subprocess.run([LOADGEN, "http", "--bogus"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t.check(res.returncode == 2, "bad usage: exit 2", res.returncode)

    # through portico, HTTP
    p, port = H.start(t, http={"connect_ports": "*"})
    proxy = "127.0.0.1:%d" % port
    js = clean(t, run(t, ["http", "--proxy", proxy, "--target", tgt] +
                      short),
               "http through portico: rate > 0, no errors")
    if js:
        t.check(js["proxy"] == proxy, "the JSON names the proxy", js)
    clean(t, run(t, ["tunnel", "--proxy", proxy, "--proxy-type", "http",
                     "--target", "127.0.0.1:%d" % eport] + short),
          "tunnel through portico CONNECT to an echo: bytes both ways",
          extra=lambda j: j["mib_s_up"] > 0 and j["mib_s_down"] > 0)
    clean(t, run(t, ["tunnel", "--proxy", proxy, "--proxy-type", "http",
                     "--target", "127.0.0.1:%d" % kport] + short),
          "tunnel through portico CONNECT to a sink that also sends: bytes "
          "both ways, no errors",
          extra=lambda j: j["mib_s_up"] > 0 and j["mib_s_down"] > 0)
    clean(t, run(t, ["tunnel", "--proxy", proxy, "--proxy-type", "http",
                     "--target", "127.0.0.1:%d" % kport, "--no-send"] +
                 short),
          "tunnel --no-send through portico CONNECT to a source: bytes "
          "down only, no errors",
          extra=lambda j: j["mib_s_up"] == 0 and j["mib_s_down"] > 0)
    res = run(t, ["http", "--target", tgt, "--no-send"] + brief)
    t.check(res[0] == 2, "--no-send outside tunnel: bad usage, exit 2",
            lambda: details(res))
    t.stop_portico(p)

    # through portico, SOCKS5
    sp, sport = S.start(t)
    sproxy = "127.0.0.1:%d" % sport
    # Short and narrow: each setup leaves the proxy's upstream side in
    # TIME_WAIT, on an ephemeral port the machine may need.
    clean(t, run(t, ["socks-handshakes", "--proxy", sproxy, "--target",
                     "127.0.0.1:%d" % eport, "--connections", "2",
                     "--duration", "0.5", "--warmup", "0.1"]),
          "socks-handshakes through portico: setups/s > 0, no errors")
    # Each setup then one round trip of 100 bytes to the echo: as many
    # bytes back as went out, counted in the window.
    clean(t, run(t, ["socks-handshakes", "--proxy", sproxy, "--target",
                     "127.0.0.1:%d" % eport, "--exchange", "100",
                     "--connections", "2", "--duration", "0.5",
                     "--warmup", "0.1"]),
          "socks-handshakes --exchange 100 through portico to an echo: "
          "setups/s > 0, bytes both ways, no errors",
          extra=lambda j: j["mib_s_up"] > 0 and j["mib_s_down"] > 0)
    for bad in (["http", "--target", tgt, "--exchange", "100"],
                ["socks-handshakes", "--proxy", sproxy, "--target",
                 "127.0.0.1:%d" % eport, "--exchange", "100", "--payload",
                 "10"]):
        res = run(t, bad + brief)
        t.check(res[0] == 2, "%s --exchange%s: bad usage, exit 2" % (
            bad[0], " --payload" if "--payload" in bad else ""),
            lambda: details(res))
    clean(t, run(t, ["udp", "--proxy", sproxy, "--target",
                     "127.0.0.1:%d" % uport, "--duration", "1",
                     "--warmup", "0.2", "--timeout", "1"]),
          "udp through portico: round trips > 0, no errors, all delivered",
          extra=lambda j: j["delivered_pct"] == 100)
    clean(t, run(t, ["tunnel", "--proxy", sproxy, "--proxy-type", "socks5",
                     "--target", "127.0.0.1:%d" % eport] + short),
          "tunnel through portico SOCKS5 to an echo: bytes both ways",
          extra=lambda j: j["mib_s_up"] > 0 and j["mib_s_down"] > 0)
    # The source talks first: its bytes may share a read with the reply.
    clean(t, run(t, ["tunnel", "--proxy", sproxy, "--proxy-type", "socks5",
                     "--target", "127.0.0.1:%d" % kport] + short),
          "tunnel through portico SOCKS5 to a sink that also sends: bytes "
          "both ways, no errors",
          extra=lambda j: j["mib_s_up"] > 0 and j["mib_s_down"] > 0)

    # idle: the line a harness waits for
    proc = subprocess.Popen([LOADGEN, "idle", "--proxy", sproxy,
                             "--proxy-type", "socks5", "--target",
                             "127.0.0.1:%d" % eport, "--connections", "20",
                             "--duration", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=ptest.bound(15))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = out.decode(errors="replace").splitlines()
    t.check(lines[:1] == ["holding 20"] and proc.returncode == 0,
            "idle, 20 SOCKS5 tunnels: prints \"holding 20\", exit 0",
            lambda: ["exit %s" % proc.returncode] + lines +
            err.decode(errors="replace").splitlines())
    t.stop_portico(sp)

    tls_cases(t, tgt, kport, short)

    rc, err = stop_serve()
    t.check(rc == 0 and err == "", "loadgen serve exits 0 on SIGTERM, "
            "nothing on stderr", ["exit %s" % rc] + err.splitlines())


def tls_cases(t, tgt, kport, short):
    """--tls and --tls-resume through portico's tls listener."""
    res = run(t, ["http", "--tls", "--target", tgt] + short)
    t.check(res[0] == 2, "--tls without --proxy: bad usage, exit 2",
            lambda: details(res))
    why = T.missing()
    if why:
        t.skip("loadgen --tls through portico's tls listener", why)
        return
    ca = T.CA(t)
    cert, key = ca.issue("proxy.test", dns=["proxy.test"])
    port, plain = ptest.free_port(), ptest.free_port()
    conf = T.conf(t, T.listener(port, cert, key) + ",\n" +
                  '  { address = "127.0.0.1:%d"; protocol = "http"; }' %
                  plain)
    p = t.portico(conf, conf_name="tls.conf")
    proxy = "127.0.0.1:%d" % port
    suite = "TLSv1.3 TLS_AES_128_GCM_SHA256"

    def tls_ok(j, offered=None):
        x = j.get("tls") or {}
        return (x.get("negotiated") == suite and
                (offered is None or (x.get("offered", 0) > 0 and
                                     x.get("resumed") == x.get("offered"))))
    clean(t, run(t, ["http", "--tls", "--proxy", proxy, "--target", tgt,
                     "--expect-size", "1024"] + short),
          "http --tls through portico's tls listener: rate > 0, no errors, "
          "TLS 1.3 TLS_AES_128_GCM_SHA256", extra=tls_ok)
    clean(t, run(t, ["http-close", "--tls", "--proxy", proxy, "--target",
                     tgt, "--duration", "1", "--warmup", "0.2",
                     "--connections", "4"]),
          "http-close --tls: a full handshake per request, each counted, "
          "those of clients coming back too, none resumed",
          extra=lambda j: tls_ok(j) and j["tls"]["handshakes"] > 0 and
          0 < j["tls"].get("repeat", 0) <= j["tls"]["handshakes"] and
          j["tls"]["resumed"] == 0 and j["tls"]["offered"] == 0)
    clean(t, run(t, ["http-close", "--tls-resume", "--proxy", proxy,
                     "--target", tgt, "--duration", "1", "--warmup", "0.2",
                     "--connections", "4"]),
          "http-close --tls-resume: every client coming back offered its "
          "ticket, and every handshake that offered one resumed",
          extra=lambda j: tls_ok(j, offered=True) and
          j["tls"].get("repeat") == j["tls"]["offered"])
    clean(t, run(t, ["tunnel", "--tls", "--proxy", proxy, "--proxy-type",
                     "http", "--target", "127.0.0.1:%d" % kport] + short),
          "tunnel --tls: CONNECT inside TLS to a sink that also sends, "
          "bytes both ways, no errors",
          extra=lambda j: tls_ok(j) and j["mib_s_up"] > 0 and
          j["mib_s_down"] > 0)
    res = run(t, ["http", "--tls", "--proxy", "127.0.0.1:%d" % plain,
                  "--target", tgt, "--duration", "0.5", "--warmup", "0",
                  "--connections", "2"])
    t.check(res[1] is not None and res[0] == 1 and errors(res[1]) > 0 and
            res[1]["requests"] == 0,
            "--tls to a plain HTTP listener: errors counted, exit 1",
            lambda: details(res))
    t.stop_portico(p)


ptest.Test("loadgen").run(main)
