#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Parents across reloads (SIGHUP): what changed takes effect, what did not
keeps its health.

- A front portico with parent p1 at a port nothing listens on
  (`max_fails = 1; down_time = 60`) and `via = [ "p1", "direct" ]`: the
  first request finds p1 refusing, is served straight, and p1 is marked
  down (/metrics portico_parent_up{parent="p1"} 0).
- Reload adding p2 (a second portico) with `via = [ "p1", "p2" ]`: p1,
  unchanged, is still down after the reload (not tried again: its failure
  count stays), and the request goes through p2 (p2's access log has it).
- Reload moving p1 to p2's address (a changed parent is another parent):
  p1 starts up, and carries the request.
- Reload removing p2: /metrics no longer has it.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import parenttest as P  # noqa: E402
import accesslogtest as AL  # noqa: E402
import statustest as ST  # noqa: E402


def metric(stat, name, par):
    s, _ = ST.scrape(stat)
    return None if s is None else ST.value(s, name, parent=par)


def front_conf(t, port, stat, parents, via):
    return P.conf(t, "front", [P.listener("in", port, "http", via=via),
                               '{ name = "st"; address = "127.0.0.1:%d"; '
                               'protocol = "status"; }' % stat],
                  parents=parents)


def main(t):
    why = AL.missing()
    if why:
        t.skip("parents across reloads", why)
        return
    origin = H.origin(t)
    dead = ptest.free_port()
    bp, port, stat = ptest.free_port(), ptest.free_port(), ptest.free_port()
    blog = t.path("b.json")
    b = P.start_portico(t, P.conf(t, "b", [P.listener("in", bp, "http")],
                                  modules=[AL.module(
                                      ['file = "%s"; format = "json";'
                                       % blog])]), [bp], "b.conf")
    p1_dead = P.entry(name="p1", address="127.0.0.1:%d" % dead,
                      protocol="http", max_fails=1, down_time=60)
    p2 = P.entry(name="p2", address="127.0.0.1:%d" % bp, protocol="http")
    text = front_conf(t, port, stat, [p1_dead], ["p1", "direct"])
    a = P.start_portico(t, text, [port, stat], "front.conf")

    r = H.get(port, origin.url + "/first")
    t.check(getattr(r, "status", None) == 200,
            "p1 refuses: the request is served straight", lambda: [r])
    ptest.wait_for(lambda: metric(stat, "portico_parent_up", "p1") == 0,
                   ptest.bound(5))
    f0 = metric(stat, "portico_parent_failures_total", "p1")
    t.check(metric(stat, "portico_parent_up", "p1") == 0 and f0 == 1,
            "p1 is down after one failure (max_fails = 1)",
            lambda: [metric(stat, "portico_parent_up", "p1"), f0])

    def reload(parents, via, what):
        n = len(a.log_lines(r"reloaded "))
        gen = a.workers()
        a.set_conf(front_conf(t, port, stat, parents, via))
        a.hup()
        ok = ptest.wait_for(lambda: len(a.log_lines(r"reloaded ")) > n and
                            a.workers() != gen, ptest.bound(15))
        t.check(ok, "SIGHUP reloads (a new worker generation): %s" % what,
                t.log_details(a))

    reload([p1_dead, p2], ["p1", "p2"], "p2 added")
    ptest.wait_for(lambda: metric(stat, "portico_parent_up", "p2") == 1,
                   ptest.bound(10))
    r = H.get(port, origin.url + "/after-reload")
    ptest.wait_for(lambda: any(x.get("target", "").endswith("/after-reload")
                               for x in AL.transactions(
                                   AL.json_records(blog)[0])),
                   ptest.bound(5))
    at_b = [x for x in AL.transactions(AL.json_records(blog)[0])
            if x.get("target", "").endswith("/after-reload")]
    f1 = metric(stat, "portico_parent_failures_total", "p1")
    t.check(getattr(r, "status", None) == 200 and len(at_b) == 1,
            "after a reload adding p2: the request goes through p2",
            lambda: [r, at_b])
    t.check(metric(stat, "portico_parent_up", "p1") == 0 and f1 == f0,
            "p1, unchanged by the reload, is still down and was not tried "
            "again (its failure count stays)", lambda: [f0, f1])

    p1_live = P.entry(name="p1", address="127.0.0.1:%d" % bp,
                      protocol="http", max_fails=1, down_time=60)
    reload([p1_live, p2], ["p1", "p2"], "p1 moved")
    ptest.wait_for(lambda: metric(stat, "portico_parent_up", "p1") == 1,
                   ptest.bound(10))
    r = H.get(port, origin.url + "/moved")
    req1 = metric(stat, "portico_parent_requests_total", "p1")
    t.check(getattr(r, "status", None) == 200 and
            metric(stat, "portico_parent_up", "p1") == 1 and req1 == 1,
            "p1 moved to a live address is another parent: up after the "
            "reload, and it carries the request", lambda: [r, req1])

    reload([p1_live], ["p1"], "p2 removed")
    ptest.wait_for(lambda: metric(stat, "portico_parent_up", "p2") is None,
                   ptest.bound(10))
    t.check(metric(stat, "portico_parent_up", "p2") is None and
            metric(stat, "portico_parent_up", "p1") == 1,
            "a reload removing p2: /metrics no longer has it",
            lambda: [metric(stat, "portico_parent_up", "p2")])
    t.stop_portico(a)
    t.stop_portico(b)


if __name__ == "__main__":
    ptest.Test("parent_reload").run(main)
