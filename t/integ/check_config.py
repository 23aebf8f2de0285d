#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
portico -t: a good file exits 0, a bad one exits 1 and names FILE:LINE on
stderr; -t binds nothing (its address may be in use); -V prints a version;
-h the options; a bad file also stops a real start (exit 1, same message).

Configurations: t/conf/check_config/*.conf, each bad one with the offending
line marked "# ERROR".
"""
import os
import re
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

# file -> regex the message must also match (case-insensitive)
BAD = [
    ("syntax", r""),
    ("unknown_key", r"wrokers"),
    ("unknown_key_nested", r"idle_timout"),
    ("unknown_key_listener", r"\btoo\b"),
    ("wrong_type", r"shutdown_timeout|integer"),
    ("out_of_range", r"max_connections"),
    ("workers_range", r"workers"),
    ("bad_address", r"99999|port"),
    ("bad_address_host", r"127\.0\.0\.1|port"),
    ("bad_target", r"port"),
    ("duplicate_listener", r"duplicate"),
    ("bad_listener_name", r"front door"),
    ("duplicate_listener_name", r"duplicate listener name \"front\""),
    ("bad_protocol", r"gopher"),
    ("bad_relay", r"sendfile|method|splice"),
    ("no_listeners", r"listener|nothing|empty"),
    ("missing_module", r"nosuchmod"),
    ("bad_abi", r"badabi"),
    ("bad_user", r"no-such-user-pt"),
    ("bad_cpu_list", r"cpu_affinity|CPU"),
    ("bad_resolver_servers", r"servers: entry 2 \"127\.0\.0\.1:5x3\""),
    ("bad_response_timeout", r"response_timeout: 0 out of range"),
    ("bad_udp_replies", r"udp_replies|\"contacted\" or \"any\""),
    ("bad_ipv6only", r"only for an IPv6 address"),
    ("bad_pp_network", r"\"10\.0\.0\.1/8\""),
    ("bad_pp_no_from", r"proxy_protocol: missing \"from\""),
    ("bad_pp_key", r"version.*unknown option"),
    ("bad_udp_advertise_family", r"udp_advertise: an IPv6 address for a "
     r"listener that takes only IPv4 clients"),
    ("bad_udp_advertise_v6only", r"udp_advertise: an IPv4 address for a "
     r"listener that takes only IPv6 clients"),
    ("bad_udp_advertise_two", r"a second IPv4 address"),
    ("bad_int_wrap", r"4294967298 does not fit a plain integer .*"
     r"4294967298L"),
    ("bad_pid_dir", r"pid_file: .*no-such-dir/portico.pid.*its directory "
     r"does not exist"),
    ("bad_via_unknown", r"via: no parent is named \"nope\""),
    ("bad_parent_own_listener", r"address: \"127\.0\.0\.1:\d+\" is "
     r"portico's own listener \"front\""),
    ("bad_password_file", r"password_file: \".*/no-such-password\": No such "
     r"file"),
]


def main(t):
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(8)
    t.at_exit(busy.close)
    busy_port = busy.getsockname()[1]
    subst = dict(LISTEN="127.0.0.1:%d" % busy_port,
                 TO="127.0.0.1:%d" % ptest.free_port(),
                 PORT6=ptest.free_port("::1") if ptest.have_ipv6()
                 else ptest.free_port())

    # -- the good file, on a busy address: -t binds nothing ---------------
    text = t.conf("check_config/good", **subst)
    if not ptest.have_ipv6():
        text = re.sub(r".*\[::1\].*\n", "", text)
    good = ptest.write_conf(t.tmp, text, "good.conf")
    r = ptest.run_portico(["-t", "-c", good])
    t.check(r.returncode == 0,
            "-t accepts a good file (with a module) whose address is in use",
            ["exit %s" % r.returncode, "stdout: " + r.stdout,
             "stderr: " + r.stderr])
    t.check(not os.path.exists(t.path("portico.pid")),
            "-t writes no pid file")
    # the busy socket is still ours alone: nobody else listens there
    t.check(ptest.listening(busy_port), "-t left the busy listener alone")

    r = ptest.run_portico(["-t", "-c", t.path("does-not-exist.conf")])
    t.check(r.returncode == 1 and "does-not-exist.conf" in r.stderr,
            "-t on a missing file exits 1 and names the file",
            ["exit %s" % r.returncode, "stderr: " + r.stderr])

    # -- every bad file -----------------------------------------------------
    for name, rx in BAD:
        text = t.conf("check_config/" + name, **subst)
        path = ptest.write_conf(t.tmp, text, name + ".conf")
        line = ptest.line_of(text, "# ERROR")
        r = ptest.run_portico(["-t", "-c", path])
        want = "%s:%d:" % (path, line)
        det = ["exit %s, expected 1" % r.returncode,
               "expected on stderr: %s" % want,
               "stderr: " + r.stderr.strip(), "stdout: " + r.stdout.strip()]
        t.check(r.returncode == 1, "-t %s.conf exits 1" % name, det)
        t.check(want in r.stderr,
                "-t %s.conf names %s.conf:%d" % (name, name, line), det)
        if rx:
            t.check(re.search(rx, r.stderr, re.I) is not None,
                    "-t %s.conf says what is wrong (/%s/)" % (name, rx), det)
        if name == "bad_abi":
            t.check(re.search(r"ABI|version", r.stderr) is not None,
                    "-t bad_abi.conf says the ABI version is wrong", det)
        if name == "missing_module":
            t.check("nosuchmod.so" in r.stderr,
                    "-t missing_module.conf names the missing file", det)

    # -- a bad file also stops a real start ---------------------------------
    text = t.conf("check_config/unknown_key", **subst)
    path = ptest.write_conf(t.tmp, text, "start-bad.conf")
    line = ptest.line_of(text, "# ERROR")
    r = ptest.run_portico(["-f", "-c", path], timeout=ptest.bound(20))
    t.check(r.returncode == 1 and "%s:%d:" % (path, line) in r.stderr,
            "starting on a bad file exits 1 with FILE:LINE on stderr",
            ["exit %s" % r.returncode, "stderr: " + r.stderr])

    # -- -V ---------------------------------------------------------------
    r = ptest.run_portico(["-V"])
    out = r.stdout + r.stderr
    # The source tree (a distribution's too) has configure.ac: failing to
    # read the version there is a failure, not a reason to drop the check.
    with open(os.path.join(ptest.SRCDIR, "configure.ac")) as f:
        m = re.search(r"AC_INIT\(\[portico\],\s*\[([^\]]+)\]", f.read())
    version = m.group(1) if m else None
    t.check(r.returncode == 0 and re.search(r"\d+\.\d+", out) is not None,
            "-V exits 0 and prints a version",
            ["exit %s" % r.returncode, "output: " + out])
    t.check(version is not None and version in out,
            "-V prints the configured version %s" % version,
            "output: " + out)

    # -- -h, and an unknown option -------------------------------------------
    r = ptest.run_portico(["-h"])
    t.check(r.returncode == 0 and r.stdout.startswith("usage: portico") and
            all(o in r.stdout for o in ("-c file", "-t ", "-s sig", "-V ")),
            "-h exits 0 and prints every option on stdout",
            ["exit %s" % r.returncode, "stdout: " + r.stdout])
    r = ptest.run_portico(["-x"])
    t.check(r.returncode == 2 and "usage: portico" in r.stderr,
            "an unknown option exits 2 with the usage on stderr",
            ["exit %s" % r.returncode, "stderr: " + r.stderr])


if __name__ == "__main__":
    ptest.Test("check_config").run(main)
