#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The module phases on an HTTP listener, seen through hookrec:

- one GET runs ACCEPT once for the connection, then AUTH, ACCESS, DIAL,
  ESTABLISHED and LOG for the request, with proto, host, port, target and
  the final status and byte counts in LOG;
- two requests on one connection give two LOG lines;
- a DENY at AUTH becomes 407 with Proxy-Authenticate, and the client may
  retry on the same connection; at ACCESS it becomes 403 and the origin
  never sees the request; at DIAL, 403 too;
- credentials from Proxy-Authorization reach AUTH and never the origin.
"""
import base64
import http.server
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

HTTP_PROTO = "1"    # PT_PROTO_HTTP in include/portico/module.h


class Origin(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []

    def do_GET(self):
        Origin.seen.append((self.path, dict(self.headers)))
        body = b"hello from the origin\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def start_origin(t):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    t.at_exit(srv.shutdown)
    return srv.server_address[1]


def records(path):
    try:
        with open(path) as f:
            return [l.split() for l in f.read().splitlines() if l.strip()]
    except OSError:
        return []


def kv(rec):
    return dict(p.split("=", 1) for p in rec[1:] if "=" in p)


def request(port, target, extra=b"", sock=None):
    s = sock or ptest.connect(port)
    s.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n" + extra +
              b"\r\n")
    s.settimeout(ptest.bound(5))
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        if not d:
            break
        data += d
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(body) < length:
        d = s.recv(65536)
        if not d:
            break
        body += d
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
    return s, status, head, body


def start(t, name, origin, extra=""):
    port = ptest.free_port()
    rec = t.path(name + ".rec")
    conf = t.conf("modules", WORKERS=1, LISTEN="127.0.0.1:%d" % port,
                  TO="127.0.0.1:1", REC=rec, EXTRA=extra)
    conf = conf.replace('protocol = "tcp"; to = "127.0.0.1:1";',
                        'protocol = "http";')
    p = t.portico(conf, conf_name=name + ".conf")
    return p, port, rec


def main(t):
    origin = start_origin(t)
    target = b"http://127.0.0.1:%d/phases" % origin

    p, port, rec = start(t, "plain", origin)
    s, status, head, body = request(port, target)
    t.check(status == 200 and body == b"hello from the origin\n",
            "a GET through the proxy works", head)
    s, status, _, _ = request(port, target, sock=s)
    t.check(status == 200, "a second GET on the same connection works")
    s.close()
    got = ptest.wait_for(lambda: sum(1 for r in records(rec)
                                     if r[0] == "LOG") >= 2, ptest.bound(5))
    recs = records(rec)
    evs = [r[0] for r in recs if r[0] != "INIT"]
    want = ["ACCEPT", "AUTH", "ACCESS", "DIAL", "ESTABLISHED", "LOG",
            "AUTH", "ACCESS", "DIAL", "ESTABLISHED", "LOG"]
    t.check(evs[:len(want)] == want,
            "phases in order: ACCEPT once, then AUTH ACCESS DIAL "
            "ESTABLISHED LOG per request (the second one on the parked "
            "upstream)", evs)
    logs = [kv(r) for r in recs if r[0] == "LOG"]
    t.check(bool(got) and all(l.get("status") == "200" for l in logs),
            "LOG sees status 200", logs)
    t.check(bool(logs) and logs[0].get("host") == "127.0.0.1" and
            logs[0].get("port") == str(origin) and
            logs[0].get("proto") == HTTP_PROTO,
            "LOG sees host, port and proto", logs[:1])
    t.check(bool(logs) and logs[0].get("target") ==
            "127.0.0.1:%d" % origin, "DIAL/LOG see the resolved target",
            logs[:1])
    t.check(bool(logs) and int(logs[0].get("in", 0)) > 0 and
            int(logs[0].get("out", 0)) >= len(b"hello from the origin\n"),
            "LOG has byte counts both ways", logs[:1])
    t.stop_portico(p)

    # AUTH deny -> 407, retry on the same connection gets 407 again
    Origin.seen.clear()
    p, port, rec = start(t, "auth", origin, 'deny_phase = "AUTH";')
    cred = base64.b64encode(b"alice:secret")
    s, status, head, body = request(
        port, target, b"Proxy-Authorization: Basic " + cred + b"\r\n")
    t.check(status == 407, "DENY at AUTH is 407", head)
    t.check(b"proxy-authenticate: basic" in head.lower(),
            "the 407 asks for Basic credentials", head)
    try:
        s2, status2, _, _ = request(port, target, sock=s)
        again = status2 == 407
    except OSError:
        again = False
    t.check(again, "after a 407 the client can try again on the same "
            "connection")
    s.close()
    t.check(not Origin.seen, "nothing reached the origin when AUTH denied",
            Origin.seen)
    t.stop_portico(p)

    # ACCESS deny -> 403
    p, port, rec = start(t, "access", origin, 'deny_phase = "ACCESS";')
    s, status, head, _ = request(port, target)
    s.close()
    t.check(status == 403, "DENY at ACCESS is 403", head)
    t.check(not Origin.seen, "nothing reached the origin when ACCESS "
            "denied", Origin.seen)
    t.stop_portico(p)

    # DIAL deny -> 403
    p, port, rec = start(t, "dial", origin, 'deny_phase = "DIAL";')
    s, status, head, _ = request(port, target)
    s.close()
    t.check(status == 403, "DENY at DIAL is 403", head)
    t.stop_portico(p)

    # credentials reach AUTH (and only AUTH), never the origin
    p, port, rec = start(t, "cred", origin)
    s, status, _, _ = request(
        port, target, b"Proxy-Authorization: Basic " + cred + b"\r\n")
    s.close()
    ptest.wait_for(lambda: any(r[0] == "LOG" for r in records(rec)),
                   ptest.bound(5))
    byphase = {r[0]: kv(r) for r in records(rec)}
    t.check(byphase.get("AUTH", {}).get("user") == "alice" and
            byphase.get("AUTH", {}).get("pass") == "secret",
            "AUTH sees the Basic credentials", byphase.get("AUTH"))
    t.check(byphase.get("ACCESS", {}).get("user") == "alice" and
            byphase.get("ACCESS", {}).get("pass") == "-",
            "after AUTH the user stays, the password is gone",
            byphase.get("ACCESS"))
    hdrs = Origin.seen[-1][1] if Origin.seen else {}
    t.check(status == 200 and not any(k.lower() == "proxy-authorization"
                                      for k in hdrs),
            "Proxy-Authorization is not forwarded", hdrs)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("http_phases").run(main)
