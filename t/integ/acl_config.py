#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The acl module's configuration errors and reloads (the real acl.so).

- portico -t on a good configuration (every condition used once, a
  host_file with comments, blank lines and a .suffix line): exit 0;
- portico -t exits 1 and names FILE:LINE of the offending entry (the line
  marked "# ERROR", which is not the rule's first line) and what is wrong,
  for: a bad CIDR "10.0.0.300/8", host bits set "10.1.2.3/8" (src), a bad
  IPv6 prefix in dst, the bad element on its own line of an array, a
  port range "80-70", port 70000, protocol "ftp", an unknown listener
  name, action "maybe", a regex "~(" (PCRE2's message and an offset), an
  unknown rule key, an empty list, a rule name with a space, a host_file
  that does not exist; default "maybe" and
  an unknown key of the module's entry; a host_file with a bad line
  fails naming "<host_file>:<its line>"; a bad file also stops a real
  start (exit 1);
- reload: rules denying host a.test (403), SIGHUP with rules allowing it
  (a new generation, 200); SIGHUP with a broken file: "reload failed"
  naming FILE:LINE, the same workers, a.test still 200;
- host_file reloads: a list with b.test (b 403, c 200); the file edited to
  list c.test and SIGHUP (b 200, c 403); the file given a bad line and
  SIGHUP: "reload failed" naming the file and line, the old list still
  serves; a reload that leaves allow_private out refuses b.test
  (127.0.0.1).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import acltest as ACL  # noqa: E402

# (what, the offending line's text, regex of what the message must say)
BAD = [
    ("bad CIDR", 'src = [ "10.0.0.300/8" ];', r"10\.0\.0\.300/8"),
    ("host bits set", 'src = [ "10.1.2.3/8" ];', r"10\.1\.2\.3/8"),
    ("bad IPv6 prefix length in dst", 'dst = [ "::1/129" ];', r"::1/129"),
    ("port range 80-70", 'port = [ "80-70" ];', r"80-70"),
    ("port 70000", "port = [ 70000 ];", r"70000"),
    ("protocol ftp", 'protocol = [ "ftp" ];', r"ftp"),
    ("unknown listener name", 'listener = [ "nosuch" ];', r"nosuch"),
    ("action maybe", 'action = "maybe";', r"maybe|\baction\b.*allow.*deny"),
    ("regex ~(", 'host = [ "~(" ];',
     r"(?i)missing closing parenthesis.*offset \d+|offset \d+.*missing "
     r"closing parenthesis"),
    ("unknown rule key", 'hots = [ "a.test" ];', r"hots"),
    ("an empty list", "host = [ ];", r"host"),
    ("a rule name with a space", 'name = "bad name!";',
     r"bad name!|\bname\b.*(letters|1-64|A-Z)"),
    ("a host_file that does not exist", 'host_file = "/nonexistent/acl";',
     r"/nonexistent/acl"),
]


def conf_text(t, port, bad_line, log="check.log", hostfile=None):
    """A configuration whose second rule has <bad_line> (marked # ERROR)
    on a line of its own, after the rule's first line."""
    hf = ('      { name = "listed"; action = "deny";\n'
          '        host_file = "%s"; },\n' % hostfile) if hostfile else ""
    action = "" if bad_line.startswith("action") else \
        '        action = "deny";\n'
    return """workers = 1;
error_log = "%s";
pid_file = "%s";
listeners = (
  { name = "web"; address = "127.0.0.1:%d"; protocol = "http"; }
);
modules = (
  { name = "acl"; path = "%s";
    default = "deny";
    allow_private = false;
    rules = (
      { name = "lan"; action = "allow"; src = [ "10.0.0.0/8", "::1/128" ]; },
%s      { %s
%s        %s  # ERROR
      },
      { name = "web"; action = "allow"; port = [ 80, 443 ];
        protocol = [ "http", "connect" ]; }
    );
  }
);
""" % (t.path(log), t.path(log + ".pid"), port, ACL.ACL_SO, hf,
       "" if bad_line.startswith("name") else 'name = "second";', action,
       bad_line)


def check_t(t, text, name):
    path = ptest.write_conf(t.tmp, text, name)
    cp = ptest.run_portico(["-t", "-c", path])
    return path, cp, cp.stdout + cp.stderr


def main(t):
    why = ACL.missing()
    if why:
        t.skip("acl configuration errors and reloads", why, need="acl.so")
        return
    port = ptest.free_port()
    hf = t.path("blocked")
    ptest.write_file(hf, "# blocked names\n\nlisted.test\n"
                     "  .tracker.test\nUPPER.Test\n")
    good = conf_text(t, port, 'host = [ "ads.test", ".ads.test", '
                     '"~^ad[0-9]+\\\\.test$" ]; port = [ "8000-8080" ]; '
                     'dst = [ "192.0.2.0/24", "2001:db8::/32" ]; '
                     'user = [ "*" ]; listener = [ "web" ]; '
                     'method = [ "GET", "HEAD" ]; protocol = [ "http", '
                     '"connect", "websocket", "socks5", "socks4", "tcp", '
                     '"udp" ];', hostfile=hf)
    path, cp, out = check_t(t, good, "good.conf")
    t.check(cp.returncode == 0, "portico -t on a good configuration (every "
            "condition, a host_file): exit 0", [path, out] +
            good.splitlines())

    for what, bad, rx in BAD:
        text = conf_text(t, port, bad)
        line = ptest.line_of(text, "# ERROR")
        path, cp, out = check_t(t, text, "bad.conf")
        want = "%s:%d:" % (path, line)
        det = ["exit %s" % cp.returncode, "expected %s" % want, out]
        t.check(cp.returncode == 1, "-t, %s: exit 1" % what, det)
        t.check(want in out, "-t, %s: the message names FILE:%d" % (
            what, line), det)
        t.check(re.search(rx, out) is not None,
                "-t, %s: the message says what (/%s/)" % (what, rx), det)

    # the bad element on a line of its own inside an array
    text = conf_text(t, port, 'src = [ "10.0.0.0/8",\n'
                     '                "10.0.0.300/8" ];')
    line = ptest.line_of(text, "# ERROR")
    path, cp, out = check_t(t, text, "bad.conf")
    t.check(cp.returncode == 1 and "%s:%d:" % (path, line) in out,
            "-t, a bad CIDR as the second element of an array, on its own "
            "line: exit 1 naming that line (%d)" % line,
            ["exit %s" % cp.returncode, out])

    # a bad host_file line
    bad_hf = t.path("blocked-bad")
    ptest.write_file(bad_hf, "# list\nfine.test\n\n.sfx.test\nnot a name!\n"
                     "after.test\n")
    text = conf_text(t, port, 'host = [ "x.test" ];', hostfile=bad_hf)
    path, cp, out = check_t(t, text, "badhf.conf")
    t.check(cp.returncode == 1 and "%s:5:" % bad_hf in out,
            "-t, a host_file whose line 5 is \"not a name!\": exit 1, the "
            "message names %s:5" % os.path.basename(bad_hf),
            ["exit %s" % cp.returncode, out])

    # the module's own keys
    for what, old, new, rx in (
            ("default maybe", 'default = "deny";', 'default = "maybe";  '
             '# ERROR', r"maybe|default"),
            ("unknown module key", 'default = "deny";', 'default = "deny"; '
             'defualt = "allow";  # ERROR', r"defualt")):
        text = conf_text(t, port, 'host = [ "x.test" ];').replace(
            "  # ERROR\n", "\n").replace(old, new)
        line = ptest.line_of(text, "# ERROR")
        path, cp, out = check_t(t, text, "bad.conf")
        t.check(cp.returncode == 1 and "%s:%d:" % (path, line) in out and
                re.search(rx, out) is not None, "-t, %s: exit 1, FILE:%d, "
                "the message says what" % (what, line),
                ["exit %s" % cp.returncode, out])

    # a real start on a bad file
    text = conf_text(t, port, 'src = [ "10.1.2.3/8" ];')
    line = ptest.line_of(text, "# ERROR")
    path = ptest.write_conf(t.tmp, text, "start-bad.conf")
    cp = ptest.run_portico(["-f", "-c", path], timeout=ptest.bound(20))
    t.check(cp.returncode == 1 and "%s:%d:" % (path, line) in cp.stderr,
            "starting on a file with host bits set: exit 1, FILE:LINE on "
            "stderr", ["exit %s" % cp.returncode, cp.stderr])
    t.check(not ptest.listening(port), "and nothing listens on its port")

    reloads(t)


def reload_conf(t, port, rules, default, dns):
    return ACL.conf(t, [ACL.http_listener("web", port)],
                    [ACL.acl_entry(rules, default=default,
                                   allow_private=True)],
                    log="reload.log", dns=dns)


def reloads(t):
    o = H.origin(t)
    dns = H.dns_server(t, {n: {"A": ["127.0.0.1"]} for n in
                           ("a.test", "b.test", "c.test")})
    port = ptest.free_port()
    text = reload_conf(t, port, [dict(name="no-a", action="deny",
                                      host="a.test")], "allow", dns)
    p = t.portico(text, conf_name="reload.conf")
    j = ACL.Judge(t, o, port, secret=["no-a", "yes-a", "file"])
    j.http("a.test", 403, "rules deny a.test")
    j.http("c.test", 200, "rules deny a.test, default allow")

    def hup(n, what):
        gen = p.workers()
        p.hup()
        ok = ptest.wait_for(lambda: len(p.log_lines(r"reloaded ")) >= n and
                            p.wait_workers(1, 0.01, exclude=gen.values()),
                            ptest.bound(10))
        t.check(ok, "SIGHUP %s: a new generation" % what,
                t.log_details(p))

    p.set_conf(reload_conf(t, port, [dict(name="yes-a", action="allow",
                                          host="a.test")], "deny", dns))
    hup(1, "with rules allowing a.test")
    j.http("a.test", 200, "after the reload a.test passes")
    j.http("c.test", 403, "after the reload the default denies c.test")

    gen = p.workers()
    bad = reload_conf(t, port, [dict(name="yes-a", action="allow",
                                     host="a.test"),
                                dict(name="bad", action="allow",
                                     src="10.0.0.300/8")], "deny", dns)
    line = ptest.line_of(bad, "10.0.0.300/8")
    p.set_conf(bad)
    p.hup()
    lines = p.wait_log(r"reload failed: ", timeout=ptest.bound(10))
    want = "%s:%d:" % (p.conf_path, line)
    t.check(bool(lines) and want in lines[-1] and "10.0.0.300/8" in
            lines[-1], "a broken configuration: \"reload failed\" names %s "
            "and the bad CIDR" % want, lines or t.log_details(p))
    t.check(p.workers() == gen, "the same workers keep serving",
            (gen, p.workers()))
    j.http("a.test", 200, "after the failed reload the old rules serve: "
           "a.test passes")
    j.http("c.test", 403, "after the failed reload the old default denies "
           "c.test")

    # host_file edited
    hf = t.path("reload-hosts")
    ptest.write_file(hf, "# list\nb.test\n")
    p.set_conf(reload_conf(t, port, [dict(name="file", action="deny",
                                          host_file=hf)], "allow", dns))
    hup(2, "with a host_file listing b.test")
    j.http("b.test", 403, "host_file lists b.test")
    j.http("c.test", 200, "host_file does not list c.test")
    ptest.write_file(hf, "# list\nc.test\n")
    hup(3, "after the host_file was edited to list c.test")
    j.http("b.test", 200, "the edited host_file no longer lists b.test")
    j.http("c.test", 403, "the edited host_file lists c.test")
    gen = p.workers()
    failed = len(p.log_lines(r"reload failed: "))
    ptest.write_file(hf, "c.test\nbad name here\n")
    p.hup()
    lines = p.wait_log(r"reload failed: ", count=failed + 1,
                       timeout=ptest.bound(10))
    t.check(len(lines) > failed and "%s:2:" % hf in lines[-1],
            "a host_file with a bad line 2: \"reload failed\" names "
            "%s:2" % os.path.basename(hf), lines or t.log_details(p))
    t.check(p.workers() == gen, "the same workers keep serving",
            (gen, p.workers()))
    j.http("c.test", 403, "the old list still serves: c.test denied")
    j.http("b.test", 200, "the old list still serves: b.test passes")
    # allow_private turned off by a reload
    p.set_conf(ACL.conf(t, [ACL.http_listener("web", port)],
                        [ACL.acl_entry(None, default="allow")],
                        log="reload.log", dns=dns))
    hup(4, "with allow_private left out")
    j.http("b.test", 403, "after the reload a private destination (b.test, "
           "127.0.0.1) is refused")
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("acl_config").run(main)
