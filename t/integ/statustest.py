# SPDX-License-Identifier: BSD-2-Clause
"""
statustest: what the t/integ/status_*.py scenarios share, on top of
ptest and httptest: a request to a status listener, the Prometheus text
format read back into numbers, and promtool.
"""
import os
import re
import shutil
import subprocess

import ptest
import httptest as H

ACL_SO = os.path.join(ptest.BUILDDIR, "modules", "acl", ".libs", "acl.so")

# What /status must hold (man/portico.conf.5, STATUS LISTENER).
JSON_KEYS = ("version", "abi", "pid", "start_time", "generation",
             "workers_configured", "reloads", "workers", "counters",
             "modules", "transactions", "histograms", "slots")


def request(port, method="GET", path="/metrics", version="HTTP/1.1",
            headers=(), body=None):
    """One request on a fresh connection to a status listener. Returns
    the httptest Resp, or the error as a string."""
    hs = [("Host", "127.0.0.1:%d" % port)] + list(headers)
    if body is not None:
        hs.append(("Content-Length", str(len(body))))
    raw = ("%s %s %s\r\n" % (method, path, version)).encode() + b"".join(
        ("%s: %s\r\n" % kv).encode() for kv in hs) + b"\r\n" + (body or b"")
    try:
        conn = H.Conn.to(port, timeout=ptest.bound(10))
        try:
            conn.send(raw)
            return H.read_response(conn, method)
        finally:
            conn.close()
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)


_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, frozenset of (label, value)): float} of every sample."""
    out = {}
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        m = _LINE.match(ln)
        if m is None:
            raise ValueError("not a sample line: %r" % ln)
        labels = frozenset(_LABEL.findall(m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def value(samples, name, **labels):
    """The sample <name>{labels}, or None."""
    return samples.get((name, frozenset(labels.items())))


def series(samples, name):
    """[(labels dict, value)] of every sample named <name>."""
    return [(dict(k[1]), v) for k, v in samples.items() if k[0] == name]


def scrape(port):
    """(samples, raw text) of GET /metrics, or (None, error text)."""
    r = request(port)
    if isinstance(r, str) or r.status != 200:
        return None, r if isinstance(r, str) else r.describe()
    text = r.body.decode("utf-8")
    return parse(text), text


def promtool():
    return shutil.which("promtool")


def promtool_check(text):
    """(ok, output) of `promtool check metrics` on <text>: lint problems
    (a missing HELP, a counter without _total) fail it too."""
    r = subprocess.run([promtool(), "check", "metrics"],
                       input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=ptest.bound(30))
    out = r.stdout.decode("utf-8", "replace")
    return r.returncode == 0 and out.strip() == "", out
