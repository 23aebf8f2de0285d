#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A host_file of 1,000,000 lines (the size of a public block list): names
"hNNNNNN.block.test" and, every 100th line, a ".sNNNNNN.sfx.test" suffix
line, every 1000th a hosts-file line "0.0.0.0 hNNNNNN.block.test", with
a comment and a blank line among them. portico starts within
a generous bound (60 s, stretched for slow builds); a listed name is
denied (403, the origin sees nothing), a subdomain of a listed .suffix
is denied, the suffix's own domain is denied, an unlisted name (and the
parent domain block.test) passes. A reload with the same file is taken.

Information, not assertions (TAP comments): how long the master took
to start and the resident memory (VmRSS) of the master and the worker.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import acltest as ACL  # noqa: E402

LINES = 1000000


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def write_list(path):
    with open(path, "w") as f:
        f.write("# a generated block list\n\n")
        step = 10000
        for base in range(0, LINES, step):
            f.write("".join(
                ".s%06d.sfx.test\n" % i if i % 100 == 50 else
                "0.0.0.0 h%06d.block.test\n" % i if i % 1000 == 7 else
                "h%06d.block.test\n" % i for i in range(base, base + step)))


def main(t):
    why = ACL.missing()
    if why:
        t.skip("a host_file of a million lines", why, need="acl.so")
        return
    hf = t.path("million")
    t0 = time.monotonic()
    write_list(hf)
    t.diag("wrote %d lines (%.1f MiB) in %.1f s" % (
        LINES + 2, os.path.getsize(hf) / ptest.MiB, time.monotonic() - t0))
    o = H.origin(t)
    dns = H.dns_server(t, {n: {"A": ["127.0.0.1"]} for n in
                           ("h1000001.block.test", "h1000002.block.test",
                            "block.test", "x.h123456.block.test",
                            "sfx.test", "h000050.block.test")})
    port = ptest.free_port()
    text = ACL.conf(t, [ACL.http_listener("web", port)],
                    [ACL.acl_entry([dict(name="blocklist", action="deny",
                                         host_file=hf)],
                                   default="allow", allow_private=True)],
                    log="million.log", dns=dns)
    t0 = time.monotonic()
    p = t.portico(text, conf_name="million.conf", wait=False)
    try:
        p.wait_started(timeout=ptest.bound(60))
        started = True
    except RuntimeError as e:
        started = False
        t.diag(str(e))
    dt = time.monotonic() - t0
    t.check(started, "portico starts with a %d-line host_file within "
            "%.0f s" % (LINES, ptest.bound(60)), t.log_details(p))
    if not started:
        return
    t.diag("start-up (exec to listening with its worker): %.2f s" % dt)
    w0 = p.workers()
    t.diag("VmRSS: master %s KiB, worker %s KiB" % (
        rss_kib(p.pid), ", ".join("%s" % rss_kib(w) for w in w0.values())))
    j = ACL.Judge(t, o, port, secret=["blocklist"])
    j.http("h123456.block.test", 403, "a listed name")
    j.http("h000000.block.test", 403, "the first listed name")
    j.http("h999999.block.test", 403, "the last listed name")
    j.http("h123007.block.test", 403, "a name from a hosts-file line "
           "\"0.0.0.0 name\"")
    j.http("x.s000150.sfx.test", 403, "a subdomain of a listed .suffix")
    j.http("s999950.sfx.test", 403, "the domain of the last .suffix line")
    j.http("h1000001.block.test", 200, "an unlisted name of the same form")
    j.http("block.test", 200, "the parent domain of the listed names")
    j.http("x.h123456.block.test", 200, "a subdomain of a listed exact "
           "name")
    j.http("sfx.test", 200, "the parent of the .suffix lines")
    j.http("h000050.block.test", 200, "a name whose line is a .suffix "
           "line's")
    # a reload parses the file again
    gen = p.workers()
    t0 = time.monotonic()
    p.hup()
    ok = ptest.wait_for(lambda: p.log_lines(r"reloaded ") and
                        p.wait_workers(1, 0.01, exclude=gen.values()),
                        ptest.bound(60))
    dt = time.monotonic() - t0
    t.check(ok, "a reload with the same file is taken (a new generation)",
            t.log_details(p))
    if ok:
        t.diag("reload: %.2f s; VmRSS: master %s KiB, worker %s KiB" % (
            dt, rss_kib(p.pid), ", ".join(
                "%s" % rss_kib(w) for w in p.workers().values())))
    j.http("h654321.block.test", 403, "after the reload a listed name is "
           "still denied")
    j.http("h1000002.block.test", 200, "after the reload an unlisted name "
           "passes")
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("acl_hostfile").run(main)
