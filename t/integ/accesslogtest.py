# SPDX-License-Identifier: BSD-2-Clause
"""
Shared by the t/integ/accesslog_*.py scenarios: where the real
accesslog.so (and acl.so, auth.so) are, a configuration with the module
and its logs, and readers for the records it writes (JSON lines parsed
strictly, squid lines by Squid's documented layout and by a real
analyser's regular expression).
"""
import json
import os
import re
import shutil
import socket
import threading

import ptest

AL_SO = os.path.join(ptest.BUILDDIR, "modules", "accesslog", ".libs",
                     "accesslog.so")
ACL_SO = os.path.join(ptest.BUILDDIR, "modules", "acl", ".libs", "acl.so")

# Squid's native layout, from squid.conf.documented (logformat squid):
#   %ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru %[un %Sh/%<a %mt
SQUID_RE = re.compile(
    r"^(?P<time>\d+\.\d{3}) +(?P<elapsed>\d+) (?P<client>\S+) "
    r"(?P<code>[A-Z_]+)/(?P<status>\d{3}) (?P<bytes>\d+) (?P<method>\S+) "
    r"(?P<url>\S+) (?P<user>\S+) (?P<hier>[A-Z_]+)/(?P<peer>\S+) "
    r"(?P<type>\S+)$")

# Apache's combined layout, as goaccess and awstats read it.
COMBINED_RE = re.compile(
    r'^(?P<host>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<time>[^\]]+)\] '
    r'"(?P<request>(?:[^"\\]|\\.)*)" (?P<status>\d{3}) (?P<bytes>\d+|-) '
    r'"(?P<referer>(?:[^"\\]|\\.)*)" "(?P<agent>(?:[^"\\]|\\.)*)"$')


def missing():
    if not os.path.exists(AL_SO):
        return "accesslog.so not built at %s" % AL_SO
    return None


def listener(name, port, protocol="http", extra=""):
    return ('  { name = "%s"; address = "127.0.0.1:%d"; protocol = "%s"; %s}'
            % (name, port, protocol, extra))


def module(logs, extra=""):
    """The modules entry of accesslog with <logs> (a list of strings,
    each the inside of one log group). PT_AL_WRITER=loop (or thread) in
    the environment sets every log's writer, to run a scenario with
    either."""
    w = os.environ.get("PT_AL_WRITER")
    if w:
        logs = [l if "writer" in l else l + ' writer = "%s";' % w
                for l in logs]
    return ('{ name = "accesslog"; path = "%s"; logs = ( %s ); %s}'
            % (AL_SO, ", ".join("{ %s }" % l for l in logs), extra))


def conf(t, listeners, modules, workers=1, extra="", shutdown=5,
         header=""):
    return """%sworkers = %d;
error_log = "%s/error.log";
log_level = "info";
pid_file = "%s/portico.pid";
shutdown_timeout = %d;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
http = { connect_ports = "*"; };
listeners = (
%s
);
modules = (
%s
);
%s
""" % (header, workers, t.tmp, t.tmp, shutdown, ",\n".join(listeners),
       ",\n".join(modules), extra)


def read_lines(path):
    """(complete lines, trailing partial line) of <path>, bytes."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return [], b""
    parts = data.split(b"\n")
    return parts[:-1], parts[-1]


def json_records(path):
    """(records, bad): every complete line parsed strictly as JSON (no
    NaN, no duplicate keys); bad lists the lines that are not one
    object."""
    recs, bad = [], []

    def pairs(kv):
        d = {}
        for k, v in kv:
            if k in d:
                raise ValueError("duplicate key %s" % k)
            d[k] = v
        return d

    def nan(x):
        raise ValueError("not JSON: %s" % x)

    lines, _ = read_lines(path)
    for ln in lines:
        try:
            text = ln.decode("utf-8", errors="strict")
            r = json.loads(text, object_pairs_hook=pairs,
                           parse_constant=nan)
            if not isinstance(r, dict):
                raise ValueError("not an object")
            recs.append(r)
        except ValueError as e:
            bad.append("%s: %r" % (e, ln[:300]))
    return recs, bad


def transactions(recs):
    """The records that are transactions (not dropped-count events)."""
    return [r for r in recs if "event" not in r]


def wait_json(path, pred, timeout=None):
    """Waits until pred(records) holds; the records."""
    ptest.wait_for(lambda: pred(transactions(json_records(path)[0])),
                   timeout or ptest.bound(5))
    return transactions(json_records(path)[0])


def squid_lines(path):
    lines, _ = read_lines(path)
    return [ln.decode("latin-1") for ln in lines]


class DgramSink:
    """A UNIX datagram socket standing in for /dev/log: keeps every
    datagram it receives, in a thread, until stopped."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.got = []
        self.lock = threading.Lock()
        self.stopping = False
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _run(self):
        while not self.stopping:
            try:
                d = self.sock.recv(70000)
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.got.append(d)

    def messages(self):
        with self.lock:
            return list(self.got)

    def stop(self):
        self.stopping = True
        self.th.join(2)
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def have(prog):
    return shutil.which(prog) is not None
