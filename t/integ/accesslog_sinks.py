#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The accesslog module's writes under contention and against a sink that
stops reading:

- four workers, six client threads, one JSON file with a small buffer
  (many writes from every worker at once): every line of the file is one
  whole record that parses, one per connection, from every worker;
- a FIFO whose reader stops reading: 600 connections go through as fast
  as 200 did while the reader kept up (within a generous factor: the
  worker never waits for the FIFO), the records that did not fit are
  dropped and counted, and once the reader reads again the next records
  arrive with a record saying how many were dropped: kept + dropped is
  every connection; the master's totals say the same number;
- the FIFO's reader goes away (EPIPE): the worker lives on, connections
  are served;
- as root, a file on a 64 KiB tmpfs that fills up: connections go
  through as fast as before, the error log says why records are not
  written, and once there is room again (the file truncated) the next
  records arrive with the count of those dropped: whole records before
  and after, plus the dropped ones, are every connection; at most one
  line (the one the full disk cut) does not parse.
"""
import errno
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import accesslogtest as AL  # noqa: E402


def tcp_conf(t, echo, log_text, workers):
    port = ptest.free_port()
    conf = AL.conf(t, ['  { name = "echo"; address = "127.0.0.1:%d"; '
                       'protocol = "tcp"; to = "%s"; }' % (port, echo.address)],
                   [AL.module([log_text])], workers=workers)
    return conf, port


def whole_lines(t, echo):
    log = t.path("shared.log")
    conf, port = tcp_conf(t, echo, 'file = "%s"; format = "json"; '
                          'buffer = 8192; flush = 5;' % log, 4)
    p = t.portico(conf)
    loop = ptest.ClientLoop(port, threads=6, per_thread=300,
                            max_seconds=ptest.bound(30)).start()
    loop.join(ptest.bound(40))
    ptest.wait_for(lambda: len(AL.json_records(log)[0]) >= loop.total,
                   ptest.bound(5))
    recs, bad = AL.json_records(log)
    _, partial = AL.read_lines(log)
    t.check(loop.good == 1800 and not bad and not partial and
            len(recs) == loop.total and
            {r["worker"] for r in recs} == {0, 1, 2, 3},
            "four workers, six clients, one file: 1800 records, every line "
            "whole and parsing, from every worker",
            lambda: [loop.summary(), "records %d, bad %d, partial %r" % (
                len(recs), len(bad), partial[:100])] + bad[:5])
    t.stop_portico(p)


class Reader:
    """Reads the FIFO in a thread while <reading> is set."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.data = bytearray()
        self.reading = threading.Event()
        self.reading.set()
        self.stopping = False
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _run(self):
        while not self.stopping:
            if not self.reading.is_set():
                time.sleep(0.01)
                continue
            try:
                d = os.read(self.fd, 65536)
            except OSError as e:
                if e.errno != errno.EAGAIN:
                    return
                d = None
            if d:
                self.data += d
            else:
                time.sleep(0.005)

    def records(self):
        lines = bytes(self.data).split(b"\n")[:-1]
        out, bad = [], []
        import json
        for ln in lines:
            try:
                out.append(json.loads(ln.decode("utf-8")))
            except ValueError:
                bad.append(ln[:200])
        return out, bad

    def close(self):
        self.stopping = True
        self.th.join(2)
        try:
            os.close(self.fd)
        except OSError:
            pass


def timed(port, n):
    t0 = time.monotonic()
    ok = 0
    for _ in range(n):
        ok += ptest.echo_once(port, timeout=ptest.bound(5))[0]
    return ok, time.monotonic() - t0


def fifo(t, echo):
    path = t.path("access.fifo")
    os.mkfifo(path, 0o600)
    rd = Reader(path)
    t.at_exit(rd.close)
    conf, port = tcp_conf(t, echo, 'file = "%s"; format = "json"; '
                          'buffer = 16384; flush = 20;' % path, 1)
    p = t.portico(conf)
    w0 = p.workers()
    ok1, t1 = timed(port, 200)
    ptest.wait_for(lambda: len(rd.records()[0]) >= 200, ptest.bound(5))
    rd.reading.clear()
    time.sleep(0.1)
    ok2, t2 = timed(port, 600)
    t.check(ok1 == 200 and ok2 == 600 and t2 < 3 * 3 * t1 + ptest.bound(2),
            "a FIFO nobody reads: 600 connections take about 3 times as "
            "long as 200 did with a reader (no wait on the FIFO)",
            "200 in %.2f s, then 600 in %.2f s" % (t1, t2))
    time.sleep(0.3)
    rd.reading.set()
    ok3, _ = timed(port, 5)

    def settled():
        recs, _ = rd.records()
        kept = [r for r in recs if "event" not in r]
        dropped = sum(r.get("dropped", 0) for r in recs)
        return len(kept) + dropped >= 805
    ptest.wait_for(settled, ptest.bound(5))
    recs, bad = rd.records()
    kept = [r for r in recs if "event" not in r]
    events = [r for r in recs if r.get("event") == "dropped"]
    dropped = sum(r["dropped"] for r in events)
    t.check(not bad and events and dropped > 0 and
            len(kept) + dropped == 805 and ok3 == 5,
            "the reader reads again: later records arrive, with a record "
            "of how many were dropped; kept + dropped = 805 connections",
            lambda: ["kept %d dropped %d events %s bad %d" % (
                len(kept), dropped, events, len(bad))] + bad[:3])
    # the reader goes away: EPIPE, the worker lives on
    rd.close()
    ok4, _ = timed(port, 20)
    t.check(ok4 == 20 and p.workers() == w0,
            "the FIFO's reader gone (EPIPE): 20 more connections served, "
            "the worker unchanged", lambda: ptest.tail(p.log(), 10))
    rc = t.stop_portico(p)
    tot = p.log_lines(r"master: totals: ")
    m = re.search(r"accesslog_dropped=(\d+)", tot[-1]) if tot else None
    # Exactly: a dropped-count line the reader never took is no record
    # (its records were counted when dropped), and the worker exits on its
    # own (not killed with records it still held).
    t.check(rc == 0 and m is not None and int(m.group(1)) == dropped + 20 and
            not p.log_lines(r"killing them"),
            "the totals count the dropped records (those reported, and the "
            "20 the reader never took), each once", lambda: tot[-1:] +
            ["reported %d" % dropped] + ptest.tail(p.log(), 10))


def full_fs(t, echo):
    import subprocess
    if os.geteuid() != 0:
        t.skip("a log on a full file system", "needs root", need="root")
        return
    mnt = t.path("small")
    os.mkdir(mnt)
    cp = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                         mnt], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if cp.returncode != 0:
        t.skip("a log on a full file system", "cannot mount a tmpfs: not "
               "root enough here (%s)" % cp.stderr.decode().strip(),
               need="root")
        return
    t.at_exit(lambda: subprocess.run(["umount", "-l", mnt]))
    log = os.path.join(mnt, "access.log")
    conf, port = tcp_conf(t, echo, 'file = "%s"; format = "json"; '
                          'buffer = 16384; flush = 20;' % log, 1)
    p = t.portico(conf, conf_name="full.conf")
    ok1, t1 = timed(port, 100)
    ok2, t2 = timed(port, 400)
    t.check(ok1 == 100 and ok2 == 400 and t2 < 3 * 4 * t1 + ptest.bound(2),
            "a full file system: 400 connections take about 4 times as long "
            "as 100 did with room", "100 in %.2f s, then 400 in %.2f s" %
            (t1, t2))
    t.check(bool(p.wait_log(r"accesslog: write .*No space left",
                            timeout=ptest.bound(3))),
            "the error log says the log cannot be written (ENOSPC)",
            lambda: ptest.tail(p.log(), 10))

    def parse(data):
        good, bad = [], 0
        for ln in data.split(b"\n")[:-1]:
            if not ln:
                continue
            try:
                good.append(json.loads(ln.decode("utf-8")))
            except ValueError:
                bad += 1
        return good, bad
    import json
    with open(log, "rb") as f:
        before = f.read()
    os.truncate(log, 0)
    ok3, _ = timed(port, 20)

    def after():
        with open(log, "rb") as f:
            return parse(f.read())
    g1, b1 = parse(before)

    def settled():
        g = g1 + after()[0]
        return len([r for r in g if "event" not in r]) + \
            sum(r.get("dropped", 0) for r in g) >= 520
    ptest.wait_for(settled, ptest.bound(5))
    g2, b2 = after()
    kept = [r for r in g1 + g2 if "event" not in r]
    dropped = sum(r.get("dropped", 0) for r in g1 + g2)
    t.check(ok3 == 20 and dropped > 0 and b1 + b2 <= 1 and
            len(kept) + dropped == 520,
            "room again: later records and a dropped count arrive; whole "
            "records + dropped = 520 connections, at most one cut line",
            "kept %d (%d before, %d after), dropped %d, cut %d" % (
                len(kept), len([r for r in g1 if "event" not in r]),
                len([r for r in g2 if "event" not in r]), dropped, b1 + b2))
    t.stop_portico(p)


def main(t):
    why = AL.missing()
    if why:
        t.skip("accesslog sinks", why)
        return
    echo = t.echo_server()
    whole_lines(t, echo)
    fifo(t, echo)
    full_fs(t, echo)


if __name__ == "__main__":
    ptest.Test("accesslog_sinks").run(main)
