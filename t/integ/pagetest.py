# SPDX-License-Identifier: BSD-2-Clause
"""
pagetest: a page of 30 resources on four origins and a WebSocket, loaded by
headless Chromium through an HTTPS proxy. Shared by t/integ/h2_chromium.py
(which checks what came back) and bench/h2-pageload (which times it), so
the page the issue's bench times is the page the test checks. Python 3
standard library and the `openssl` program only: no ptest, so that the
bench can load it without a build tree's environment.

The origins, all on 127.0.0.1 and each on a port of its own:
  - three HTTPS origins (HTTP/1.1 inside TLS, a certificate made here):
    Chromium reaches them through CONNECT tunnels;
  - one plain-HTTP origin, reached by requests to the proxy; it serves the
    page itself;
  - one WebSocket echo origin (ws://, which Chromium also tunnels with
    CONNECT).

The page (/page?run=RUN on the plain origin) asks for 30 resources, 8 on
each HTTPS origin and 6 on the plain one, each a fetch(), an <img> or a
<script> (the kinds taking turns), opens a WebSocket and sends one
message, and writes what came back into <pre id="summary">: how many
resources came back with the right content, which failed, and the echo.
Its load event is held until then by an image (/hold) that the plain
origin answers only once the script asks for /release: so the page's load
event, which is when `chromium --dump-dom` dumps the DOM, comes after all
of it, and its time (written into <pre id="timing"> by the load handler)
is the time to load the whole page. Every wait in the page is bounded (a
resource or the echo that takes more than PAGE_TIMEOUT_MS fails).
"""
import base64
import hashlib
import http.server
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse

RESOURCES = 30
PER_HTTPS = 8                           # on each of the three
PER_PLAIN = RESOURCES - 3 * PER_HTTPS   # 6 on the plain origin
KINDS = ("fetch", "img", "script")
PAGE_TIMEOUT_MS = 20000
HOLD_TIMEOUT_S = 40                     # the origin's bound on /hold
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
# A 1x1 transparent GIF.
GIF = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIB"
                       "RAA7")

# What keeps Chromium's own traffic (updates, sync, safe browsing, field
# trials) away from the proxy, so that the proxy sees the page and nothing
# else. What these flags leave (the network time query, component update
# checks, the account check of the Google API keys Debian's launcher sets)
# goes to Google's hosts, which the bypass list sends direct (where there
# is no network, they fail at once).
CHROMIUM_QUIET = ["--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-default-apps", "--disable-extensions",
                  "--no-default-browser-check", "--no-first-run",
                  "--disable-domain-reliability",
                  "--metrics-recording-only"]
# Every loopback request goes to the proxy too (Chromium bypasses
# loopback by default), Google's hosts do not.
BYPASS = "<-loopback>;*.google.com;*.googleapis.com;*.gstatic.com"
# The new profile's preferences: no network prediction. Otherwise
# Chromium preconnects to the page's origin when the navigation starts,
# a second TLS connection to the proxy that is closed unused once the
# first one says h2: one handshake more than the page needs.
PREFERENCES = {"net": {"network_prediction_options": 2}}


# --- certificates ------------------------------------------------------------

def openssl(args, data=None, timeout=30):
    cp = subprocess.run(["openssl"] + list(args), input=data,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        timeout=timeout)
    if cp.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (args[0], cp.stderr[-500:]))
    return cp.stdout


def self_signed(d, name):
    """(cert, key) paths in <d>: a self-signed ECDSA P-256 certificate for
    IP 127.0.0.1 and DNS <name>."""
    cert, key = os.path.join(d, name + ".pem"), os.path.join(d, name + ".key")
    openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out",
             cert, "-days", "30", "-subj", "/CN=" + name, "-addext",
             "subjectAltName=DNS:%s,IP:127.0.0.1" % name])
    return cert, key


def spki_hash(cert):
    """base64 SHA-256 of the certificate's SubjectPublicKeyInfo: what
    Chromium's --ignore-certificate-errors-spki-list takes."""
    pub = openssl(["x509", "-in", cert, "-noout", "-pubkey"])
    der = openssl(["pkey", "-pubin", "-outform", "der"], data=pub)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


# --- origins -----------------------------------------------------------------

class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60

    def setup(self):
        # The TLS handshake happens here, in the connection's own thread,
        # not in the accepting one: a slow handshake holds up no other.
        ctx = self.server.tls
        if ctx is not None:
            self.request.settimeout(self.timeout)
            self.request = ctx.wrap_socket(self.request, server_side=True)
        super().setup()

    def log_message(self, fmt, *args):
        pass

    def _send(self, status, ctype, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Access-Control-Allow-Origin", "*")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        self.server.record(self, u.path, q)
        if self.server.kind == "ws":
            return self._websocket(q)
        if u.path.startswith("/r/"):
            rid = u.path[3:]
            kind = q.get("kind", "fetch")
            if kind == "img":
                return self._send(200, "image/gif", GIF)
            if kind == "script":
                return self._send(200, "application/javascript",
                                  ("window.__res = window.__res || {}; "
                                   "window.__res[%s] = 1;\n" %
                                   json.dumps(rid)).encode())
            return self._send(200, "text/plain", ("res:" + rid).encode())
        if self.server.page is not None:
            if u.path == "/page":
                return self._send(200, "text/html; charset=utf-8",
                                  self.server.page(q.get("run", "")))
            if u.path == "/hold":
                self.server.held(q.get("run", "")).wait(HOLD_TIMEOUT_S)
                return self._send(200, "image/gif", GIF)
            if u.path == "/release":
                self.server.held(q.get("run", "")).set()
                return self._send(200, "text/plain", b"released")
        self._send(404, "text/plain", b"not here\n")

    def _websocket(self, q):
        key = self.headers.get("Sec-WebSocket-Key")
        if not key or "websocket" not in (self.headers.get("Upgrade") or
                                          "").lower():
            return self._send(426, "text/plain", b"websocket only\n")
        accept = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID)
                                  .digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        for _ in range(1000):
            fr = _ws_read(self.rfile)
            if fr is None:
                return
            op, data = fr
            if op == 8:
                # The close answered, the client closes first (RFC 6455
                # 7.1.1): reading to its end (bounded) leaves nothing
                # unread, so this side's close is no reset.
                self.wfile.write(_ws_frame(8, data[:2] or b"\x03\xe8"))
                self.wfile.flush()
                self.connection.settimeout(5)
                try:
                    while self.rfile.read1(4096):
                        pass
                except OSError:
                    pass
                return
            if op == 9:
                self.wfile.write(_ws_frame(10, data))
                continue
            if op in (1, 2):
                self.server.record(self, "ws-message", {
                    "run": q.get("run", ""), "data": data.decode(
                        "utf-8", "replace")})
                self.wfile.write(_ws_frame(op, data))
            self.wfile.flush()


def _ws_read(f):
    """(opcode, payload) of one client frame (masked, unfragmented
    messages only: what a browser sends for one short message), or None
    at the end."""
    h = f.read(2)
    if len(h) < 2:
        return None
    op, n = h[0] & 0x0F, h[1] & 0x7F
    if n == 126:
        n = int.from_bytes(f.read(2), "big")
    elif n == 127:
        n = int.from_bytes(f.read(8), "big")
    if n > 1 << 20:
        return None
    mask = f.read(4) if h[1] & 0x80 else b"\0\0\0\0"
    data = f.read(n)
    if len(data) < n:
        return None
    return op, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def _ws_frame(op, data):
    n = len(data)
    if n < 126:
        head = bytes([0x80 | op, n])
    elif n < 65536:
        head = bytes([0x80 | op, 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x80 | op, 127]) + n.to_bytes(8, "big")
    return head + data


class Origin(http.server.ThreadingHTTPServer):
    """One origin on 127.0.0.1, in threads of this process. <kind>:
    "https", "http" or "ws". Every request is recorded (seen()); the
    stop() method ends it."""
    daemon_threads = True

    def __init__(self, kind, cert=None, key=None, page=None):
        self.kind = kind
        self.page = page
        self.tls = None
        if kind == "https":
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(cert, key)
            self.tls.set_alpn_protocols(["http/1.1"])
        self.lock = threading.Lock()
        self.requests = []
        self.holds = {}
        self.errors = 0
        super().__init__(("127.0.0.1", 0), _Handler)
        self.port = self.server_address[1]
        self.thread = threading.Thread(target=self.serve_forever,
                                       kwargs={"poll_interval": 0.1},
                                       daemon=True)
        self.thread.start()

    @property
    def base(self):
        scheme = {"https": "https", "http": "http", "ws": "ws"}[self.kind]
        return "%s://127.0.0.1:%d" % (scheme, self.port)

    def handle_error(self, request, client_address):
        # A client that goes away mid-handshake or mid-request (Chromium
        # closing a connection it no longer needs) is no failure of the
        # origin's: counted, not printed.
        with self.lock:
            self.errors += 1

    def record(self, h, path, q):
        with self.lock:
            self.requests.append({"path": path, "q": q,
                                  "method": h.command,
                                  "via": h.headers.get("Via"),
                                  "t": time.monotonic()})

    def held(self, run):
        with self.lock:
            return self.holds.setdefault(run, threading.Event())

    def seen(self, run=None):
        """The requests recorded (of one run)."""
        with self.lock:
            return [r for r in self.requests
                    if run is None or r["q"].get("run") == run]

    def stop(self):
        with self.lock:
            for e in self.holds.values():
                e.set()
        self.shutdown()
        self.server_close()
        self.thread.join(5)


class Site:
    """The five origins and the page; stop() ends them all."""

    def __init__(self, workdir):
        self.cert, self.key = self_signed(workdir, "origin.test")
        self.https = []
        self.plain = self.ws = None
        try:
            self.https = [Origin("https", self.cert, self.key)
                          for _ in range(3)]
            self.plain = Origin("http", page=self.page)
            self.ws = Origin("ws")
        except BaseException:
            self.stop()
            raise

    def origins(self):
        return [o for o in self.https + [self.plain, self.ws]
                if o is not None]

    def stop(self):
        for o in self.origins():
            o.stop()

    def url(self, run):
        return "%s/page?run=%s" % (self.plain.base, run)

    def resources(self, run):
        """[(id, origin, kind, url)] of the page's 30 resources."""
        out = []
        for oi, o in enumerate(self.https + [self.plain]):
            n = PER_PLAIN if o is self.plain else PER_HTTPS
            for i in range(n):
                rid = "o%d-%d" % (oi, i)
                kind = KINDS[i % len(KINDS)]
                out.append((rid, o, kind, "%s/r/%s?kind=%s&run=%s" % (
                    o.base, rid, kind, run)))
        return out

    def page(self, run):
        res = [{"id": rid, "kind": kind, "url": url}
               for rid, _, kind, url in self.resources(run)]
        return (PAGE % {
            "run": json.dumps(run), "res": json.dumps(res),
            "ws": json.dumps("%s/ws?run=%s" % (self.ws.base, run)),
            "timeout": PAGE_TIMEOUT_MS,
            "hold": "/hold?run=" + urllib.parse.quote(run)}).encode()


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>portico h2 page</title></head>
<body>
<pre id="summary">pending</pre>
<pre id="failed"></pre>
<pre id="timing"></pre>
<img id="hold" width="1" height="1" alt="" src="%(hold)s">
<script>
"use strict";
const RUN = %(run)s, RES = %(res)s, WS = %(ws)s, LIMIT = %(timeout)d;
function bounded(p, what) {
  return Promise.race([p, new Promise((_, no) =>
    setTimeout(() => no(new Error(what + ": no answer in " + LIMIT +
                                  " ms")), LIMIT))]);
}
function load(r) {
  if (r.kind === "fetch")
    return fetch(r.url, {cache: "no-store"}).then(a => {
      if (!a.ok) throw new Error("status " + a.status);
      return a.text();
    }).then(t => { if (t !== "res:" + r.id) throw new Error("body " + t); });
  return new Promise((yes, no) => {
    const e = document.createElement(r.kind);
    e.onload = () => {
      if (r.kind === "img" && e.naturalWidth !== 1)
        return no(new Error("image width " + e.naturalWidth));
      if (r.kind === "script" && !(window.__res && window.__res[r.id]))
        return no(new Error("script did not run"));
      yes();
    };
    e.onerror = () => no(new Error(r.kind + " error"));
    e.src = r.url;
    document.body.appendChild(e);
  });
}
function echo() {
  return new Promise((yes, no) => {
    const s = new WebSocket(WS), msg = "echo:" + RUN;
    s.onopen = () => s.send(msg);
    s.onmessage = m => { s.close(); m.data === msg ? yes(m.data) :
                         no(new Error("echo " + m.data)); };
    s.onerror = () => no(new Error("websocket error"));
    s.onclose = c => no(new Error("websocket closed " + c.code));
  });
}
const t = {};
const resources = Promise.allSettled(RES.map(r =>
  bounded(load(r), r.id))).then(all => {
  t.done = performance.now();
  return all;
});
const ws = bounded(echo(), "websocket").then(d => { t.ws = performance.now();
  return d; });
Promise.allSettled([resources, ws]).then(([rs, w]) => {
  const all = rs.value, bad = [];
  all.forEach((a, i) => { if (a.status !== "fulfilled")
    bad.push(RES[i].id + " " + RES[i].kind + ": " + a.reason.message); });
  const got = all.length - bad.length;
  document.getElementById("failed").textContent = bad.join("\\n");
  document.getElementById("summary").textContent =
    "resources ok=" + got + " failed=" + bad.length + " of=" + all.length +
    " ws=" + (w.status === "fulfilled" ? "echo " + w.value :
              "failed " + w.reason.message);
}).finally(() => fetch("/release?run=" + encodeURIComponent(RUN),
                       {cache: "no-store"}));
window.addEventListener("load", () => {
  const n = performance.getEntriesByType("navigation")[0];
  document.getElementById("timing").textContent =
    "load_ms=" + n.loadEventStart.toFixed(1) +
    " resources_ms=" + (t.done || -1).toFixed(1) +
    " ws_ms=" + (t.ws || -1).toFixed(1) +
    " protocol=" + n.nextHopProtocol;
});
</script>
</body></html>
"""


# --- what came back -------------------------------------------------------

def summary(dom):
    """The page's results from Chromium's --dump-dom output: a dict with
    ok, failed, of (ints), ws ("echo ..." or "failed ..."), failures
    (list of lines), and the timing figures (floats, ms; absent when the
    load event did not run)."""
    out = {}
    m = re.search(r'<pre id="summary">resources ok=(\d+) failed=(\d+) '
                  r'of=(\d+) ws=([^<]*)</pre>', dom)
    if m:
        out.update(ok=int(m.group(1)), failed=int(m.group(2)),
                   of=int(m.group(3)), ws=_unescape(m.group(4)))
    m = re.search(r'<pre id="failed">([^<]*)</pre>', dom)
    out["failures"] = [x for x in _unescape(m.group(1)).split("\n") if x] \
        if m else []
    m = re.search(r'<pre id="timing">([^<]*)</pre>', dom)
    if m:
        for k, v in re.findall(r"(\w+)=(\S+)", m.group(1)):
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def _unescape(s):
    return (s.replace("&lt;", "<").replace("&gt;", ">")
            .replace("&quot;", '"').replace("&amp;", "&"))


# --- Chromium ------------------------------------------------------------

def chromium_argv(exe, proxy_port, spkis, profile, url, extra=()):
    """The command line: headless, the profile <profile> (a directory
    made here, with PREFERENCES), every request to a loopback origin
    through the HTTPS proxy on 127.0.0.1:<proxy_port>, the certificates
    whose SPKI hashes are in <spkis> trusted, the DOM printed once the
    page has loaded."""
    os.makedirs(os.path.join(profile, "Default"), exist_ok=True)
    with open(os.path.join(profile, "Default", "Preferences"), "w") as f:
        json.dump(PREFERENCES, f)
    return [exe, "--headless", "--no-sandbox", "--disable-gpu",
            "--user-data-dir=" + profile,
            "--proxy-server=https://127.0.0.1:%d" % proxy_port,
            "--proxy-bypass-list=" + BYPASS,
            "--ignore-certificate-errors-spki-list=" + ",".join(spkis)] + \
        CHROMIUM_QUIET + list(extra) + ["--dump-dom", url]


def run_chromium(argv, timeout, home):
    """Runs Chromium to its end (at most <timeout> s: then its whole
    process group, which it leads, is killed). (rc, stdout, stderr);
    rc None on a timeout."""
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True,
                         env=dict(os.environ, HOME=home))
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = None
        _killpg(p.pid)
        out, err = p.communicate(timeout=10)
    # Its helpers (renderer, GPU, network service) are in its group; one
    # still there after it exited would outlive the run.
    _killpg(p.pid)
    return rc, out.decode(errors="replace"), err.decode(errors="replace")


def _killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p
