#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A real Prometheus (Debian's prometheus package) scrapes portico's status
listener, one worker, with a configuration of the test's own (scrape
interval 1 s, storage in the temporary directory, web on loopback):

- its HTTP API lists the portico target as up (/api/v1/targets) and
  answers queries on portico's series (/api/v1/query): up is 1, build
  info is there, and portico_transactions_total{protocol="http",
  class="2xx"} reaches the 3 requests the test made through the proxy;
- a scraper that pipelines 300 GET /metrics and reads nothing (megabytes
  of answers waiting on a full socket) does not stop the same worker:
  requests through the proxy are still answered at once, and the
  worker's CPU time stays small while the scraper holds its answers.

Skipped, naming the need, when prometheus is not installed.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import statustest as S  # noqa: E402

CONF = """
workers = 1;
error_log = "@TMP@/error.log";
shutdown_timeout = 5;
listeners = (
  { address = "127.0.0.1:@W@"; protocol = "http"; },
  { address = "127.0.0.1:@S@"; protocol = "status"; }
);
"""

PROM_CONF = """
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: portico
    static_configs:
      - targets: ["127.0.0.1:%d"]
"""


def api(port, path):
    """The decoded JSON of a Prometheus API GET, or None."""
    try:
        with urllib.request.build_opener(
                urllib.request.ProxyHandler({})).open(
                "http://127.0.0.1:%d%s" % (port, path),
                timeout=ptest.bound(5)) as r:
            return json.loads(r.read().decode())
    except Exception:
        return None


def query(port, expr):
    """The first sample's value of an instant query, or None."""
    q = urllib.parse.quote(expr)
    js = api(port, "/api/v1/query?query=" + q)
    try:
        return float(js["data"]["result"][0]["value"][1])
    except (TypeError, KeyError, IndexError, ValueError):
        return None


def start_prometheus(t, target_port):
    port = ptest.free_port()
    cfg = t.path("prometheus.yml")
    ptest.write_file(cfg, PROM_CONF % target_port)
    out = open(t.path("prometheus.log"), "wb")
    proc = subprocess.Popen(
        ["prometheus", "--config.file=" + cfg,
         "--storage.tsdb.path=" + t.path("tsdb"),
         "--web.listen-address=127.0.0.1:%d" % port,
         "--log.level=warn"],
        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        cwd=t.tmp)
    out.close()

    def stop():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(ptest.bound(10))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
    t.at_exit(stop)
    return proc, port


def slow_scraper(t, stat, web, origin, worker_pid):
    s = socket.create_connection(("127.0.0.1", stat), timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        one = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        s.setblocking(False)
        sent, want = 0, one * 300
        deadline = time.monotonic() + ptest.bound(5)
        while sent < len(want) and time.monotonic() < deadline:
            try:
                sent += s.send(want[sent:])
            except BlockingIOError:
                break
        time.sleep(0.3)
        cpu0 = ptest.cpu_seconds(worker_pid)
        t0 = time.monotonic()
        ok = 0
        for i in range(20):
            r = H.get(web, origin.url + "/len?n=1024&s=%d" % i)
            ok += getattr(r, "status", None) == 200
        took = time.monotonic() - t0
        cpu = ptest.cpu_seconds(worker_pid) - cpu0
        t.check(ok == 20 and took < ptest.bound(5),
                "a scraper holding unread answers does not stop the "
                "worker: 20 proxied GETs answered in %.2f s" % took,
                lambda: ["ok %d took %.2f" % (ok, took)])
        t.check(cpu < 2.0 * ptest.SLOW,
                "the worker does not spin on the full socket (%.2f s of "
                "CPU for 20 requests)" % cpu, lambda: ["cpu %.3f" % cpu])
    finally:
        s.close()


def main(t):
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        t.skip("a real Prometheus scrapes portico", "prometheus or "
               "promtool not in PATH (Debian package prometheus)",
               need="prometheus")
        return
    origin = H.origin(t)
    web, stat = ptest.free_port(), ptest.free_port()
    p = t.portico(ptest.fill(CONF, TMP=t.tmp, W=web, S=stat))
    for i in range(3):
        r = H.get(web, origin.url + "/len?n=1000&p=%d" % i)
        t.check(getattr(r, "status", None) == 200,
                "GET %d through the proxy" % (i + 1), lambda: H.describe(r))

    proc, pport = start_prometheus(t, stat)
    ready = ptest.wait_for(lambda: proc.poll() is None and
                           api(pport, "/api/v1/status/buildinfo"),
                           ptest.bound(30), interval=0.2)
    t.check(bool(ready), "prometheus started on 127.0.0.1:%d" % pport,
            lambda: ptest.tail(open(t.path("prometheus.log")).read(), 20))
    if not ready:
        return

    def target_up():
        js = api(pport, "/api/v1/targets")
        try:
            act = js["data"]["activeTargets"]
            return act if act and act[0]["health"] == "up" else None
        except (TypeError, KeyError, IndexError):
            return None
    act = ptest.wait_for(target_up, ptest.bound(20), interval=0.25)
    t.check(bool(act) and act[0]["labels"]["instance"] ==
            "127.0.0.1:%d" % stat and act[0]["lastError"] == "",
            "/api/v1/targets: the portico target is up, no scrape error",
            lambda: [json.dumps(api(pport, "/api/v1/targets"))[:800]])

    expr = 'portico_transactions_total{protocol="http",class="2xx"}'
    got = ptest.wait_for(lambda: (lambda v: v if v == 3 else None)(
        query(pport, expr)), ptest.bound(20), interval=0.25)
    t.check(got == 3, "/api/v1/query %s = 3, the test's requests" % expr,
            lambda: ["last %s" % query(pport, expr)])
    t.check(query(pport, 'up{job="portico"}') == 1 and
            query(pport, "portico_build_info") == 1 and
            query(pport, "portico_workers") == 1 and
            (query(pport, "portico_connections_accepted_total") or 0) >= 4,
            "up is 1; build_info, workers and accepted are stored",
            lambda: [query(pport, 'up{job="portico"}'),
                     query(pport, "portico_build_info"),
                     query(pport, "portico_connections_accepted_total")])

    slow_scraper(t, stat, web, origin, p.workers()[0])
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("status_prometheus").run(main)
