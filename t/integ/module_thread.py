#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A module's own thread decides AUTH and hands each verdict back to the
worker with pt_post (t/modules/threadauth.c): 200 HTTP requests on 200
concurrent connections through one worker, users "good*" allowed and
"bad*" refused by the thread.

- every request is answered: 200 for the allowed users (the origin sees
  exactly those), 407 for the refused ones;
- the module resumed each request exactly once (one resume line per
  connection, none doubled, jobs == resumes == requests), with many
  decisions outstanding at once;
- its counters reach the master's totals line: threadauth_resumes=200,
  threadauth_allowed and threadauth_denied as observed;
- the thread is not pinned with the worker: its affinity (from /proc and
  from its own log line) is the CPUs the master had, while the worker's
  main thread is pinned to one;
- a fast stop (SIGTERM) while decisions are still on the thread: the
  worker waits for their posts, resumes each once, then exits cleanly.
"""
import base64
import http.server
import os
import re
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest  # noqa: E402

N = 200


class Origin(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen = []
    lock = threading.Lock()

    def do_GET(self):
        with Origin.lock:
            Origin.seen.append(self.path)
        body = b"hello " + self.path.encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 512
    daemon_threads = True


def start_origin(t):
    srv = Server(("127.0.0.1", 0), Origin)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    t.at_exit(srv.shutdown)
    return srv.server_address[1]


def user_of(i):
    return ("bad%d" if i % 3 == 0 else "good%d") % i


def client(i, port, origin, barrier, out):
    """One connection, one request; out[i] = (status, body) or an error
    string."""
    cred = base64.b64encode(("%s:pw" % user_of(i)).encode()).decode()
    req = ("GET http://127.0.0.1:%d/r%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
           "Proxy-Authorization: Basic %s\r\nConnection: close\r\n\r\n"
           % (origin, i, origin, cred)).encode()
    s = None
    try:
        s = ptest.connect(port, timeout=ptest.bound(30))
        barrier.wait(ptest.bound(30))
        s.sendall(req)
        data = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
            head, sep, body = data.partition(b"\r\n\r\n")
            m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
            if sep and m and len(body) >= int(m.group(1)):
                break
        m = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
        out[i] = (int(m.group(1)), data.partition(b"\r\n\r\n")[2]) if m \
            else "no status line: %r" % data[:80]
    except (OSError, threading.BrokenBarrierError) as e:
        out[i] = "error: %r" % (e,)
    finally:
        if s is not None:
            s.close()


def thread_cpus(worker, name):
    """Cpus_allowed_list of <worker>'s thread named <name>, or None."""
    task = "/proc/%d/task" % worker
    try:
        for tid in os.listdir(task):
            with open("%s/%s/comm" % (task, tid)) as f:
                if f.read().strip() == name:
                    return ptest.cpus_allowed(int(tid))
    except OSError:
        pass
    return None


def main(t):
    origin = start_origin(t)
    port = ptest.free_port()
    extra = ('cpu_affinity = "auto";\nmodules = ( { name = "threadauth"; '
             'path = "%s/threadauth.so"; allow_prefix = "good"; '
             'delay_ms = 3; } );' % ptest.TESTMODDIR)
    p = t.portico(httptest.http_conf(t, port, workers=1, extra=extra,
                                     limits={"header_timeout": 60}))
    (worker,) = p.workers().values()

    # The thread's affinity, seen from outside and from its own line.
    master_cpus = ptest.cpus_allowed(p.pid)
    got = ptest.wait_for(lambda: thread_cpus(worker, "pt-threadauth"),
                         ptest.bound(5))
    t.check(got == master_cpus, "the module thread may run on every CPU "
            "the master had", "thread %s, master %s" % (got, master_cpus))
    line = p.wait_log(r"threadauth: thread cpus=")
    t.check(line and ("count=%d" % len(master_cpus or [])) in line[0],
            "the thread logged the same affinity", line)
    if master_cpus and len(master_cpus) > 1:
        wcpus = ptest.cpus_allowed(worker)
        t.check(wcpus is not None and len(wcpus) == 1,
                "the worker itself is pinned to one CPU", wcpus)
        t.check(got is not None and len(got) == len(master_cpus) and
                got != wcpus, "so the thread is not on the worker's pin "
                "alone", "thread %s, worker %s" % (got, wcpus))
    else:
        t.skip("the thread avoids the worker's pin", "one CPU only")

    out = [None] * N
    barrier = threading.Barrier(N)
    ths = [threading.Thread(target=client,
                            args=(i, port, origin, barrier, out))
           for i in range(N)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(ptest.bound(60))
    alive = sum(th.is_alive() for th in ths)
    t.check(alive == 0, "every client finished", "%d still running" % alive)

    errors = [(i, o) for i, o in enumerate(out) if not isinstance(o, tuple)]
    t.check(not errors, "every request got an answer", errors[:5])
    want = {i: (407 if user_of(i).startswith("bad") else 200)
            for i in range(N)}
    wrong = [(i, user_of(i), o[0]) for i, o in enumerate(out)
             if isinstance(o, tuple) and o[0] != want[i]]
    t.check(not wrong, "the thread's verdict decides: 200 for good*, 407 "
            "for bad*", wrong[:5])
    bodies = [i for i, o in enumerate(out) if isinstance(o, tuple) and
              o[0] == 200 and o[1] != b"hello /r%d\n" % i]
    t.check(not bodies, "each allowed client got its own answer",
            bodies[:5])
    allowed = sum(1 for v in want.values() if v == 200)
    denied = N - allowed
    with Origin.lock:
        seen = sorted(Origin.seen)
    t.check(seen == sorted("/r%d" % i for i in range(N) if want[i] == 200),
            "the origin saw exactly the allowed requests",
            "%d seen, %d allowed" % (len(seen), allowed))

    resumes = p.log_lines(r"threadauth: resume conn=")
    conns = [re.search(r"conn=(\d+)", ln).group(1) for ln in resumes]
    t.check(len(resumes) == N, "one resume logged per request",
            "%d resume lines for %d requests" % (len(resumes), N))
    t.check(len(set(conns)) == len(conns), "no connection resumed twice")
    verdicts = [re.search(r"verdict=(\w+)", ln).group(1) for ln in resumes]
    t.check(verdicts.count("deny") == denied,
            "the logged verdicts match the answers",
            "%d deny logged, %d 407 seen" % (verdicts.count("deny"),
                                             denied))

    t.stop_portico(p)
    fin = p.log_lines(r"threadauth: worker=0 jobs=")
    t.check(len(fin) == 1, "exit_worker stopped and joined the thread",
            fin)
    m = re.search(r"jobs=(\d+) resumes=(\d+) doubled=(\d+) "
                  r"max_outstanding=(\d+)", fin[0] if fin else "")
    t.check(m and (int(m.group(1)), int(m.group(2)), int(m.group(3))) ==
            (N, N, 0), "jobs == resumes == requests, none doubled",
            fin)
    t.check(m and int(m.group(4)) >= 10, "many decisions were outstanding "
            "at once", fin)
    tot = p.log_lines(r"\] \d+ master: totals: ")
    t.check(tot and ("threadauth_resumes=%d" % N) in tot[-1].split(),
            "the master's totals count every resume", tot[-1:])
    t.check(tot and ("threadauth_allowed=%d" % allowed) in tot[-1].split()
            and ("threadauth_denied=%d" % denied) in tot[-1].split(),
            "and the allowed and denied ones", tot[-1:])

    fast_stop(t)


def fast_stop(t):
    # The thread sleeps <seq> ms for job <seq>: 40 jobs take ~0.8 s.
    port = ptest.free_port()
    extra = ('modules = ( { name = "threadauth"; path = "%s/threadauth.so";'
             ' delay_ms = 1000; } );' % ptest.TESTMODDIR)
    # Its own error log: the first instance's lines are not this one's.
    conf = httptest.http_conf(t, port, workers=1, extra=extra).replace(
        "/error.log", "/error-fast-stop.log")
    p = t.portico(conf)
    socks = []
    for i in range(40):
        s = ptest.connect(port)
        cred = base64.b64encode(b"good%d:pw" % i)
        s.sendall(b"GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n"
                  b"Proxy-Authorization: Basic " + cred + b"\r\n\r\n")
        socks.append(s)
    p.wait_log(r"threadauth: resume conn=", timeout=ptest.bound(5))
    rc = t.stop_portico(p)
    for s in socks:
        s.close()
    t.check(rc == 0, "fast stop with decisions in flight: exit status 0",
            rc)
    lines = p.log().splitlines()
    stop_at = [i for i, ln in enumerate(lines) if "shutting down" in ln]
    late = [ln for ln in lines[stop_at[0] if stop_at else len(lines):]
            if "threadauth: resume conn=" in ln]
    t.check(late, "some decisions were posted back after the stop began",
            lambda: ptest.tail(lines, 10))
    fin = p.log_lines(r"threadauth: worker=0 jobs=")
    m = re.search(r"jobs=(\d+) resumes=(\d+) doubled=(\d+)",
                  fin[0] if fin else "")
    t.check(m and m.group(1) == m.group(2) and m.group(3) == "0" and
            int(m.group(1)) > 0, "every waiting request was resumed once "
            "before the worker exited", fin)
    tot = p.log_lines(r"master: totals: ")
    t.check(m and tot and ("threadauth_resumes=%s" % m.group(2)) in
            tot[-1].split(), "the totals agree", tot[-1:])


if __name__ == "__main__":
    ptest.Test("module_thread").run(main)
