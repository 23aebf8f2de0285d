#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A reload that moves a listener to another port: the old port stops
answering (connection refused within a few seconds), the new one answers.
A listener whose address is unchanged keeps answering and follows its new
target. Connections opened before the reload still relay.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def main(t):
    echo_a = t.echo_server()
    echo_b = t.echo_server()
    p1, p2, keep = ptest.free_port(), ptest.free_port(), ptest.free_port()
    conf1 = t.conf("forward", WORKERS=2, RELAY="splice",
                   LISTENERS=ptest.listeners(
                       ("127.0.0.1:%d" % p1, echo_a.address),
                       ("127.0.0.1:%d" % keep, echo_a.address)))
    p = t.portico(conf1)
    for port in (p1, keep):
        ok, why = ptest.echo_once(port)
        t.check(ok, "before the reload, port %d answers" % port, why)
    held_old = ptest.Held(p1)
    held_keep = ptest.Held(keep)
    t.at_exit(held_old.close)
    t.at_exit(held_keep.close)
    t.check(held_old.ping()[0] and held_keep.ping()[0],
            "two held connections relay")
    b_before = echo_b.accepted

    conf2 = t.conf("forward", WORKERS=2, RELAY="splice",
                   LISTENERS=ptest.listeners(
                       ("127.0.0.1:%d" % p2, echo_a.address),
                       ("127.0.0.1:%d" % keep, echo_b.address)))
    p.set_conf(conf2)
    p.hup()
    lines = p.wait_log(r"reloaded ")
    t.check(bool(lines), "the log says 'reloaded'",
            lambda: ptest.tail(p.log()))

    res = ptest.wait_for(lambda: ptest.try_connect(p1) == "refused",
                         ptest.bound(5), interval=0.1)
    t.check(res, "the old port %d refuses connections within %.0f s"
            % (p1, ptest.bound(5)),
            lambda: ["last try: %s" % ptest.try_connect(p1),
                     "listening: %s" % ptest.listening(p1)] +
            ptest.tail(p.log(), 15))
    got = ptest.wait_for(lambda: ptest.listening(p2), ptest.bound(5))
    ok, why = ptest.echo_once(p2) if got else (False, "not listening")
    t.check(ok, "the new port %d answers" % p2, why)
    good = sum(1 for _ in range(10) if ptest.echo_once(p2)[0])
    t.check(good == 10, "10 of 10 connections to the new port echo",
            "%d of 10" % good)

    ok, why = ptest.echo_once(keep)
    t.check(ok, "the unchanged address %d still answers" % keep, why)
    t.check(echo_b.accepted > b_before,
            "and its connections now go to the new target",
            "new target accepted %d -> %d" % (b_before, echo_b.accepted))

    ok, why = held_old.ping()
    t.check(ok, "a connection opened on the old port before the reload "
            "still relays", why)
    ok, why = held_keep.ping()
    t.check(ok, "a connection on the unchanged port still relays", why)
    held_old.close()
    held_keep.close()
    gone = ptest.wait_for(lambda: not p.draining(), ptest.bound(10))
    t.check(gone, "the old generation exits once its connections end",
            lambda: str(p.all_children()))
    t.check(ptest.try_connect(p1) == "refused",
            "the old port stays closed", ptest.try_connect(p1))

    # A reload that names another pid_file moves it, so -s finds the
    # master through the new configuration.
    old_pid = p.pid_file
    conf3 = conf2.replace("portico.pid", "moved.pid")
    p.set_conf(conf3)
    p.hup()
    t.check(bool(p.wait_log(r"pid file now .*moved\.pid")),
            "a reload to another pid_file says so", lambda: ptest.tail(
                p.log()))
    new_pid = t.path("moved.pid")
    t.check(os.path.exists(new_pid) and not os.path.exists(old_pid) and
            open(new_pid).read().strip() == str(p.proc.pid),
            "the new pid file names the master, the old one is gone",
            [os.path.exists(new_pid), os.path.exists(old_pid)])
    r = ptest.run_portico(["-c", p.conf_path, "-s", "reload"])
    t.check(r.returncode == 0, "-s reload through the new configuration "
            "finds the master", [r.returncode, r.stderr])
    p.pid_file = new_pid
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("reload_port").run(main)
