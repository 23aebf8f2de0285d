#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
http.response_timeout: the time from the request having been written to
the origin in full to the first byte of its response.

- an origin that accepts, reads the request and never answers gets the
  client a 504 after response_timeout, well before idle_timeout; the
  error log names the origin, LOG sees status 504, and the origin's
  connection is closed (not kept for reuse);
- a request pipelined behind it is not served: the 504 closes the client
  connection;
- an origin slow to answer, but within response_timeout, is served, and
  so is one that sends its head in time and its body slowly for longer
  than response_timeout;
- an origin that sends its head in time and then stalls inside the body
  is cut at idle_timeout, not at response_timeout; one that stalls inside
  its head (a byte of the head came) likewise, with a 504;
- a request body that stalls for longer than response_timeout is no wait
  for the origin, and is served once complete; an origin that answers
  100 Continue, reads the body and goes silent gets the client its 100
  and then a 504;
- a CONNECT tunnel silent for longer than response_timeout still works;
- with response_timeout longer than idle_timeout, the silent origin gets
  its 504 at response_timeout and a stalled body is still cut at
  idle_timeout.
"""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

RESP = 2                        # http.response_timeout, seconds
IDLE = int(ptest.bound(8))      # limits.idle_timeout, seconds


class Origin(ptest._Server):
    """An origin whose path says how it misbehaves:
    /silent       reads the request, never answers; records when the
                  proxy closed the connection
    /slow?ms=N    answers after N ms
    /trickle?n=N  sends its head at once, then N body bytes, one every
                  0.5 s
    /stallbody    sends a head (Content-Length 1000) and 100 bytes, then
                  nothing
    /stallhead    sends the first line of a head, then nothing
    /body         reads a Content-Length body, then answers at once
    /continue     answers 100 Continue, reads the body, then nothing
    """

    def __init__(self):
        self.seen = []          # (path, time read)
        self.closed = {}        # path -> seconds from request to EOF
        super().__init__()

    @property
    def url(self):
        return "http://" + self.address

    def _wait_eof(self, c, path, t0):
        c.settimeout(120)
        try:
            while c.recv(4096):
                pass
        except OSError:
            pass
        with self.lock:
            self.closed[path] = time.monotonic() - t0

    def handle(self, c):
        conn = H.Conn(c, 120)
        while True:
            try:
                head = conn.read_head()
            except (H.Closed, H.BadInput, OSError):
                return
            if not head:
                return
            target = head.split(b" ", 2)[1].decode("latin-1")
            path = target.split("/", 3)[-1]
            t0 = time.monotonic()
            with self.lock:
                self.seen.append((path, t0))
            if path.startswith("silent"):
                self._wait_eof(c, path, t0)
                return
            if path.startswith("slow"):
                time.sleep(int(path.split("=")[1]) / 1000.0)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
                          b"slow\n")
                continue
            if path.startswith("trickle"):
                n = int(path.split("=")[1])
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                          % n)
                for _ in range(n):
                    time.sleep(0.5)
                    c.sendall(b"t")
                continue
            if path.startswith("stallbody"):
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" +
                          b"b" * 100)
                self._wait_eof(c, path, t0)
                return
            if path.startswith("body") or path.startswith("continue"):
                n = 0
                for ln in head.split(b"\r\n"):
                    if ln.lower().startswith(b"content-length:"):
                        n = int(ln.split(b":")[1])
                if path.startswith("continue"):
                    c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                conn.read_exact(n)
                if path.startswith("continue"):
                    self._wait_eof(c, path, t0)
                    return
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"
                          b"ok\n")
                continue
            if path.startswith("stallhead"):
                c.sendall(b"HTTP/1.1 200 OK\r\n")
                self._wait_eof(c, path, t0)
                return
            c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


def records(path):
    try:
        with open(path) as f:
            return [l.split() for l in f.read().splitlines() if l.strip()]
    except OSError:
        return []


def log_statuses(rec):
    return [dict(p.split("=", 1) for p in r[1:] if "=" in p).get("status")
            for r in records(rec) if r[0] == "LOG"]


def send_get(port, url, extra=b""):
    s = ptest.connect(port, timeout=IDLE + ptest.bound(10))
    s.sendall(b"GET " + url.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n" +
              extra)
    return s


def read_all(s, limit=1 << 20):
    """Bytes until EOF (or reset), and the time EOF came."""
    data = b""
    try:
        while len(data) < limit:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except (ConnectionResetError, socket.timeout):
        pass
    return data, time.monotonic()


def start(t, name, resp, idle, rec=None):
    port = ptest.free_port()
    extra = ""
    if rec is not None:
        extra = ('modules = ( { name = "hookrec"; path = "%s/hookrec.so"; '
                 'record = "%s"; } );' % (ptest.TESTMODDIR, rec))
    conf = H.http_conf(t, port, http={"connect_ports": "*",
                                      "response_timeout": resp},
                       limits={"idle_timeout": idle}, extra=extra)
    # Two of these run at once: each its own pid file and error log.
    conf = conf.replace("/portico.pid", "/%s.pid" % name).replace(
        "/error.log", "/%s-error.log" % name)
    p = t.portico(conf, conf_name=name + ".conf")
    return p, port


def stalls(t, o, port, idle, label):
    """The body and head stalls, side by side: both cut at idle_timeout."""
    out = {}

    def one(path):
        s = send_get(port, o.url + "/" + path)
        t0 = time.monotonic()
        first = b""
        try:
            first = s.recv(65536)
        except OSError:
            pass
        t1 = time.monotonic()
        rest, t2 = read_all(s)
        s.close()
        out[path] = (first + rest, t1 - t0, t2 - t1, t2 - t0)

    ths = [threading.Thread(target=one, args=(p,), daemon=True)
           for p in ("stallbody", "stallhead")]
    for th in ths:
        th.start()
    for th in ths:
        th.join(idle + ptest.bound(20))
    data, _, after_first, _ = out.get("stallbody", (b"", 0, 0, 0))
    t.check(data.startswith(b"HTTP/1.1 200 ") and
            data.endswith(b"b" * 100),
            "%sa head in time, then a stalled body: the client gets the "
            "head and the 100 bytes" % label, data[:200])
    t.check(idle - 0.5 <= after_first <= idle + ptest.bound(3),
            "%sthe stalled body is cut at idle_timeout = %d s after its "
            "last byte, not at response_timeout" % (label, idle),
            "closed %.2f s after the last byte" % after_first)
    t.diag("%sstalled body closed %.2f s after its last byte" % (
        label, after_first))
    data, _, _, total = out.get("stallhead", (b"", 0, 0, 0))
    t.check(H.status_of(data) == 504 and
            idle - 0.5 <= total <= idle + ptest.bound(3),
            "%sa stall inside the response head (one line came) gets 504 "
            "at idle_timeout = %d s" % (label, idle),
            "status %s after %.2f s: %r" % (H.status_of(data), total,
                                            data[:200]))


def silent(t, o, p, port, rec):
    """The silent origin, with a request pipelined behind."""
    s = send_get(port, o.url + "/silent",
                 b"GET " + o.url.encode() + b"/slow=1 HTTP/1.1\r\n"
                 b"Host: x\r\n\r\n")
    t0 = time.monotonic()
    data, t1 = read_all(s)
    s.close()
    el = t1 - t0
    t.check(H.status_of(data) == 504,
            "an origin that never answers: 504 Gateway Timeout",
            data[:300])
    t.check(RESP - 0.1 <= el <= RESP + ptest.bound(3) and el < IDLE - 1,
            "the 504 comes after response_timeout = %d s, well before "
            "idle_timeout = %d s" % (RESP, IDLE), "after %.2f s" % el)
    t.diag("504 after %.2f s" % el)
    t.check(data.count(b"HTTP/1.1 ") == 1 and b"connection: close" in
            data.lower(), "the 504 closes the client connection: the "
            "pipelined request is not served", data[:400])
    ptest.wait_for(lambda: "silent" in o.closed, ptest.bound(5))
    t.check("silent" in o.closed and
            o.closed["silent"] <= RESP + ptest.bound(3),
            "the silent origin's connection is closed with the 504, not "
            "kept for reuse", o.closed)
    t.check([x for x, _ in o.seen] == ["silent"],
            "the origin saw only the first request", o.seen)
    line = p.wait_log(r"origin 127\.0\.0\.1:%d .*response_timeout" % o.port,
                      timeout=ptest.bound(5))
    t.check(bool(line), "the error log names the origin that did not "
            "answer", H.log_tail(p))
    ptest.wait_for(lambda: "504" in log_statuses(rec), ptest.bound(5))
    t.check(log_statuses(rec) == ["504"], "LOG sees status 504",
            records(rec))


def slow_but_served(t, o, port):
    """Slow, but within the timeout; a body slower than the timeout."""
    for url, want in (("/slow=%d" % int(RESP * 1000 / 4), b"slow\n"),
                      ("/trickle=%d" % (2 * RESP + 2), b"t" * (2 * RESP + 2))):
        t0 = time.monotonic()
        r = H.get(port, o.url + url, timeout=IDLE + ptest.bound(10))
        ok = not isinstance(r, str) and r.status == 200 and r.body == want
        what = H.describe(r)
        t.check(ok, "%s is served (%.2f s)" % (url, time.monotonic() - t0),
                what)


def body_stall(t, o, port):
    """A request body that stalls for longer than response_timeout: the
    wait for the origin starts only once the body is all sent."""
    s = ptest.connect(port, timeout=IDLE + ptest.bound(10))
    s.sendall(b"POST " + o.url.encode() + b"/body HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 10\r\n\r\n12345")
    time.sleep(RESP + 1)
    s.sendall(b"67890")
    data = b""
    try:
        while b"ok\n" not in data:
            d = s.recv(4096)
            if not d:
                break
            data += d
    except OSError as e:
        data += repr(e).encode()
    s.close()
    t.check(H.status_of(data) == 200 and data.endswith(b"ok\n"),
            "a request body stalled for response_timeout + 1 s is no wait "
            "for the origin: served", data[:300])


def continue_then_silence(t, o, port):
    """100 Continue, the body, then nothing: a 504 follows the 100."""
    s = ptest.connect(port, timeout=IDLE + ptest.bound(10))
    s.sendall(b"POST " + o.url.encode() + b"/continue HTTP/1.1\r\n"
              b"Host: x\r\nExpect: 100-continue\r\n"
              b"Content-Length: 4\r\n\r\n")
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            d = s.recv(4096)
            if not d:
                break
            data += d
    except OSError as e:
        data += repr(e).encode()
    got100 = data.startswith(b"HTTP/1.1 100 ")
    if got100:
        s.sendall(b"body")
    t0 = time.monotonic()
    rest, t1 = read_all(s)
    s.close()
    data += rest
    final = data.split(b"\r\n\r\n", 1)[-1]
    t.check(got100 and H.status_of(final) == 504 and
            RESP - 0.1 <= t1 - t0 <= RESP + ptest.bound(3),
            "100 Continue, the body, then silence: the client gets the 100, "
            "then a 504 after response_timeout",
            "after %.2f s: %r" % (t1 - t0, data[:400]))


def quiet_tunnel(t, echo, port):
    """CONNECT: a tunnel silent for longer than response_timeout lives on."""
    s = ptest.connect(port, timeout=ptest.bound(10))
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
        echo.address.encode(), echo.address.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            break
        head += d
    t.check(head.startswith(b"HTTP/1.1 200"), "CONNECT to an echo server",
            head)
    time.sleep(RESP + 1.5)
    got = b""
    try:
        s.sendall(b"ping")
        while len(got) < 4:
            d = s.recv(4)
            if not d:
                break
            got += d
    except OSError as e:
        got = repr(e).encode()
    s.close()
    t.check(got == b"ping", "a CONNECT tunnel silent for response_timeout "
            "+ 1.5 s still relays", got)


def longer_than_idle(t, o, p, port, idle, resp):
    """response_timeout longer than idle_timeout: each limit keeps its
    job."""
    s = send_get(port, o.url + "/silent2")
    t0 = time.monotonic()
    data, t1 = read_all(s)
    s.close()
    t.check(H.status_of(data) == 504 and
            resp - 0.1 <= t1 - t0 <= resp + ptest.bound(3),
            "response_timeout = %d s > idle_timeout = %d s: the silent "
            "origin gets 504 at response_timeout" % (resp, idle),
            "status %s after %.2f s" % (H.status_of(data), t1 - t0))
    stalls(t, o, port, idle, "response_timeout > idle_timeout: ")


def main(t):
    o, o2 = Origin(), Origin()
    t.servers += [o, o2]
    echo = t.echo_server()
    rec = t.path("hooks.rec")
    p, port = start(t, "main", RESP, IDLE, rec)
    idle2, resp2 = 1, 3
    p2, port2 = start(t, "longer", resp2, idle2)
    w0 = p.workers()

    # The silent origin first and alone on its proxy (its checks count
    # every request the origin saw and every LOG record), beside the
    # second proxy's parts; then the rest side by side.
    ptest.together(t, (silent, t, o, p, port, rec),
                   (longer_than_idle, t, o2, p2, port2, idle2, resp2))
    t.stop_portico(p2)
    ptest.together(t, (slow_but_served, t, o, port),
                   (body_stall, t, o, port),
                   (continue_then_silence, t, o, port),
                   (quiet_tunnel, t, echo, port),
                   (stalls, t, o, port, IDLE, ""))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("http_response_timeout").run(main)
