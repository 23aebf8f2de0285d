# SPDX-License-Identifier: BSD-2-Clause
"""
Shared by the t/integ/limits_*.py scenarios: where the real limits.so is
(the build tree's modules/limits/.libs), the master's totals line as a
dict, connections from a chosen loopback source, and a byte meter for the
bandwidth scenarios.
"""
import os
import re
import socket
import time

import ptest

LIMITS_SO = os.path.join(ptest.BUILDDIR, "modules", "limits", ".libs",
                         "limits.so")


def missing():
    if not os.path.exists(LIMITS_SO):
        return "limits.so not built at %s" % LIMITS_SO
    return None


def totals(p):
    """The last `master: totals:` line as {name: int}."""
    line = (p.log_lines(r"master: totals: ") or [""])[-1]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def class_counters(sport, what):
    """{class: value} of portico_module_limits_class_<what>_total on the
    status listener at <sport> (None when it does not answer)."""
    import statustest as ST
    samples, _ = ST.scrape(sport)
    if samples is None:
        return None
    return {lab.get("class"): int(v) for lab, v in ST.series(
        samples, "portico_module_limits_class_%s_total" % what)}


def can_bind(host):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, 0))
        return True
    except OSError:
        return False
    finally:
        s.close()


def connect_from(port, src, timeout=5.0):
    """A TCP connection to 127.0.0.1:<port> from <src> (an address of
    127/8)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def closed_without_bytes(s, timeout):
    """Whether <s> ends (EOF or reset) within <timeout> without a byte."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except OSError:
        return False


def echoes(s, payload=b"ping", timeout=5.0):
    """Whether <s> (a tcp forwarder to an echo origin) echoes."""
    s.settimeout(timeout)
    try:
        s.sendall(payload)
        got = b""
        while len(got) < len(payload):
            d = s.recv(len(payload) - len(got))
            if not d:
                return False
            got += d
        return got == payload
    except OSError:
        return False


class Meter:
    """Bytes as they arrive, with the time of each read, so a rate can
    be taken over any window."""

    def __init__(self):
        self.n = 0
        self.samples = []       # (time, total so far)

    def feed(self, k):
        self.n += k
        self.samples.append((time.monotonic(), self.n))

    def at(self, when):
        """Bytes received by time <when>."""
        n = 0
        for t, total in self.samples:
            if t > when:
                break
            n = total
        return n
