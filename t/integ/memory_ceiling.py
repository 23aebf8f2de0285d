#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
limits.worker_memory: at the ceiling a worker stops accepting, as at
max_connections, and the connections it holds keep working. One HTTP
worker with worker_memory = "256k" (about 90 idle connections' worth);
200 connections that send nothing are opened. Then: the warning names the
limit; a keep-alive connection opened before still gets its responses
(its buffers are given beyond the ceiling); a new connection that sends a
whole GET is neither answered nor closed for 1.5 s (it waits in the
kernel's queue); once 150 of the idle ones are closed, that waiting GET is
answered. `-t` refuses a malformed or too small ceiling with file:line,
and accepts "auto", "none", 0 and sizes with k/m/g.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

HOLD = 200


def check_t(t, value, good):
    """portico -t with limits.worker_memory = <value> (conf syntax)."""
    path = t.path("wm-%d.conf" % abs(hash(value)))
    ptest.write_file(path, 'listeners = ({ address = "127.0.0.1:%d"; '
                     'protocol = "http"; });\nlimits = {\n  worker_memory = '
                     '%s;\n};\n' % (ptest.free_port(), value))
    r = ptest.run_portico(["-t", "-c", path], timeout=ptest.bound(10))
    out = (r.stdout or "") + (r.stderr or "")
    if good:
        t.check(r.returncode == 0, "-t accepts worker_memory = %s" % value,
                out[-300:])
    else:
        t.check(r.returncode != 0 and "%s:3" % path in out and
                "worker_memory" in out,
                "-t refuses worker_memory = %s, naming file:line" % value,
                "status %s: %s" % (r.returncode, out[-300:]))


def main(t):
    for v in ('"auto"', '"none"', '0', '"512m"', '"1G"', '1048576'):
        check_t(t, v, True)
    for v in ('"12x"', '"lots"', '1000', '"-5m"', 'true'):
        check_t(t, v, False)

    o = H.origin(t)
    p, port = H.start(t, limits=dict(worker_memory="256k",
                                     header_timeout=60, idle_timeout=60))
    w0 = p.workers()
    early = H.Conn.to(port, timeout=ptest.bound(10))
    t.at_exit(early.close)
    try:
        early.send(H.request_bytes("GET", o.url + "/len?n=20000"))
        r = H.read_response(early)
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    t.check(getattr(r, "status", None) == 200 and r.body_len == 20000,
            "a keep-alive connection is served below the ceiling",
            H.describe(r))

    idle = []
    t.at_exit(lambda: [s.close() for s in idle])
    for _ in range(HOLD):
        try:
            idle.append(ptest.connect(port, timeout=ptest.bound(5)))
        except OSError:
            break
    t.check(len(idle) == HOLD, "%d idle connections opened (accepted or "
            "queued)" % HOLD, "%d" % len(idle))
    got = p.wait_log(r"worker_memory reached on 127\.0\.0\.1:%d" % port,
                     timeout=ptest.bound(10))
    t.check(got, "the worker logs that it stopped at worker_memory",
            H.log_tail(p))

    # Each held connection's state is counted; more than 200 of them
    # cannot fit 256 KiB, so the last ones wait in the kernel's queue.
    late = H.Conn.to(port, timeout=ptest.bound(10))
    t.at_exit(late.close)
    late.send(H.request_bytes("GET", o.url + "/len?n=100"))
    data, how = H.outcome(late, 1.5)
    t.check(how == "timeout" and not data,
            "a new connection beyond the ceiling is neither answered nor "
            "closed: it waits in the queue", "%s, %r" % (how, data[:80]))

    try:
        early.send(H.request_bytes("GET", o.url + "/len?n=20000"))
        r = H.read_response(early)
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    t.check(getattr(r, "status", None) == 200 and r.body_len == 20000,
            "at the ceiling, a connection accepted before is still served",
            H.describe(r))

    for s in idle[:150]:
        s.close()
    del idle[:150]
    late.settimeout(ptest.bound(10))
    try:
        r = H.read_response(late)
    except Exception as e:
        r = "%s: %s" % (type(e).__name__, e)
    t.check(getattr(r, "status", None) == 200 and r.body_len == 100,
            "once memory is freed, the waiting connection is accepted and "
            "answered", H.describe(r))
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("memory_ceiling").run(main)
