#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A reload with a broken configuration changes nothing: the log says
'reload failed: FILE:LINE: ...; keeping the running configuration', the old
listeners still answer, held connections still relay, the worker pids are
the same. Same for a file that parses but is invalid (an unknown key, a
resolver.servers that c-ares would refuse in every worker), and for a new
listener whose address is taken (validate and bind before touching the
running generation). A good file afterwards reloads normally.
"""
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def unchanged(t, p, port, held, gen, label, extra_ports=()):
    ok, why = ptest.echo_once(port)
    t.check(ok, "%s: the old listener still answers" % label, why)
    for ep in extra_ports:
        ok, why = ptest.echo_once(ep)
        t.check(ok, "%s: listener %d still answers" % (label, ep), why)
    ok, why = held.ping()
    t.check(ok, "%s: a held connection still relays" % label, why)
    t.check(p.workers() == gen and not p.draining(),
            "%s: the same workers, no new generation" % label,
            "before %s, now %s" % (gen, p.all_children()))
    t.check(p.running(), "%s: the master still runs" % label)


def main(t):
    echo = t.echo_server()
    port = ptest.free_port()
    listen = "127.0.0.1:%d" % port
    good = t.conf("forward", WORKERS=2, RELAY="copy",
                  LISTENERS=ptest.listeners((listen, echo.address)))
    p = t.portico(good)
    gen = p.workers()
    held = ptest.Held(port)
    t.at_exit(held.close)
    ok, why = held.ping()
    t.check(ok, "a held connection relays", why)
    failed = 0

    # 1. a syntax error
    bad = good.replace("shutdown_timeout = 30;",
                       "shutdown_timeout = 30;\nworkers == 3;  # ERROR")
    line = ptest.line_of(bad, "# ERROR")
    p.set_conf(bad)
    p.hup()
    failed += 1
    want = "reload failed: %s:%d:" % (p.conf_path, line)
    lines = p.wait_log(r"reload failed: ", count=failed)
    t.check(len(lines) >= failed and want in lines[-1],
            "syntax error: the log says '%s ...'" % want,
            lambda: ["reload failed lines: %s" % lines] +
            ptest.tail(p.log()))
    t.check(bool(lines) and "keeping the running configuration" in lines[-1],
            "syntax error: the log says it keeps the running configuration",
            str(lines[-1:]))
    unchanged(t, p, port, held, gen, "syntax error")

    # 2. parses, but invalid: an unknown key inside limits
    bad = good.replace("max_connections = 10000;",
                       "max_connections = 10000; idle_timeot = 3;")
    line = ptest.line_of(bad, "idle_timeot")
    p.set_conf(bad)
    p.hup()
    failed += 1
    want = "reload failed: %s:%d:" % (p.conf_path, line)
    lines = p.wait_log(r"reload failed: ", count=failed)
    t.check(len(lines) >= failed and want in lines[-1],
            "unknown key: the log says '%s ...'" % want,
            lambda: ["reload failed lines: %s" % lines] +
            ptest.tail(p.log()))
    unchanged(t, p, port, held, gen, "unknown key")

    # 2b. valid to libconfig, but resolver.servers is not: once only each
    # worker found out, at start-up, and the new generation died
    bad = good + ('resolver = {\n  cache_size = 100;\n'
                  '  servers = "127.0.0.1,127.0.0.1:5x3";  # ERROR\n};\n')
    line = ptest.line_of(bad, "# ERROR")
    p.set_conf(bad)
    p.hup()
    failed += 1
    want = "reload failed: %s:%d: servers:" % (p.conf_path, line)
    lines = p.wait_log(r"reload failed: ", count=failed)
    t.check(len(lines) >= failed and want in lines[-1],
            "bad resolver.servers: the log says '%s ...'" % want,
            lambda: ["reload failed lines: %s" % lines] +
            ptest.tail(p.log()))
    t.check(not p.log_lines(r"dns: "), "bad resolver.servers: no worker "
            "tried it", lambda: p.log_lines(r"dns: "))
    unchanged(t, p, port, held, gen, "bad resolver.servers")

    # 3. valid, but a new listener's address is taken: nothing changes
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(4)
    t.at_exit(busy.close)
    bport = busy.getsockname()[1]
    bad = t.conf("forward", WORKERS=2, RELAY="copy",
                 LISTENERS=ptest.listeners(
                     (listen, echo.address),
                     ("127.0.0.1:%d" % bport, echo.address)))
    p.set_conf(bad)
    p.hup()
    failed += 1
    lines = p.wait_log(r"reload failed", count=failed)
    t.check(len(lines) >= failed,
            "address in use: the log says 'reload failed'",
            lambda: ptest.tail(p.log()))
    t.check(len(lines) >= failed and "127.0.0.1:%d" % bport in lines[-1],
            "address in use: the failure names the address",
            str(lines[-1:]))
    t.check(not p.log_lines(r"reloaded "), "no reload happened",
            str(p.log_lines(r"reloaded ")))
    unchanged(t, p, port, held, gen, "address in use")
    busy.close()

    # 4. a good file reloads, adds a listener, keeps the old one; its
    # resolver.servers has an IPv6 address without a port, which c-ares
    # refuses as written and the master rewrites as "[::1]:53"
    port2 = ptest.free_port()
    fixed = t.conf("forward", WORKERS=2, RELAY="copy",
                   LISTENERS=ptest.listeners(
                       (listen, echo.address),
                       ("127.0.0.1:%d" % port2, echo.address)))
    fixed += 'resolver = { servers = "[::1],127.0.0.1:53"; };\n'
    p.set_conf(fixed)
    p.hup()
    lines = p.wait_log(r"reloaded %s: generation \d+" % p.conf_path)
    t.check(bool(lines), "a good file then reloads ('reloaded FILE: "
            "generation G')", lambda: ptest.tail(p.log()))
    new = p.wait_workers(2, ptest.bound(10), exclude=gen.values())
    t.check(bool(new), "a new generation of two workers runs",
            str(p.all_children()))
    ok, why = ptest.echo_once(port)
    t.check(ok, "after the good reload the old listener answers", why)
    got = ptest.wait_for(lambda: ptest.listening(port2), ptest.bound(5))
    ok, why = ptest.echo_once(port2) if got else (False, "not listening")
    t.check(ok, "after the good reload the new listener answers", why)
    ok, why = held.ping()
    t.check(ok, "the connection held since the start still relays", why)
    # a worker that failed its resolver start-up would be dead by now
    later = p.wait_workers(2, ptest.bound(2), exclude=gen.values())
    t.check(bool(new) and later == new and not p.log_lines(r"dns: "),
            "the new workers took resolver.servers \"[::1],...\" and "
            "none died", lambda: ["first %s, now %s" % (new, later)] +
            p.log_lines(r"dns: |exited|respawn"))
    held.close()
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("reload_bad").run(main)
