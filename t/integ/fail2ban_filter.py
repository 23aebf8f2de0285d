#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The fail2ban filter etc/fail2ban/filter.d/portico-auth.conf against the
auth module's failure line, written with the error log's real prefix:

- the prefix (date, level, pid, "worker N: ") is taken from a line the
  real portico binary wrote (a worker's "started on cpu" notice), so a
  change to common/log.c's format that the filter does not follow fails
  here;
- failure lines for IPv4, IPv6, IPv4-mapped IPv6, a client with a port,
  pt_clog's "*id peer " prefix, and users with spaces, quotes (escaped or
  not), UTF-8 and an injected "client=" each give the client's address;
- lines that are not failures (a success, the master, a host name instead
  of an address, "auth: failure" inside another message, a cut line) and
  failures that are not the client's doing (reason=overload, helper-error)
  give nothing;
- with Debian's fail2ban installed, fail2ban-regex itself reads the filter
  and the lines; the same filter is also applied through the expansion
  fail2ban 1.0 makes of <ADDR>/<HOST> (server/failregex.py), so the check
  runs where fail2ban is missing and the two must agree where it is not.
"""
import configparser
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

FILTER = os.path.join(ptest.SRCDIR, "etc", "fail2ban", "filter.d",
                      "portico-auth.conf")
JAIL = os.path.join(ptest.SRCDIR, "etc", "fail2ban", "jail.d",
                    "portico.conf.example")

# fail2ban 1.0's tags (server/ipdns.py IP_4_RE, IP_6_RE; failregex.py
# R_HOST): an optional ::ffff: before an IPv4 address is not part of it.
IP4 = r"(?:\d{1,3}\.){3}\d{1,3}"
IP6 = r"(?:[0-9a-fA-F]{1,4}::?|::){1,7}(?:[0-9a-fA-F]{1,4}|(?<=:):)"
ADDR = r"\[?(?:(?:::f{4,6}:)?(?P<ip4>%s)|(?P<ip6>%s))\]?" % (IP4, IP6)
HOST = r"(?:%s|(?P<dns>[\w\-.^_]*\w))" % ADDR
DATE_FIELDS = {"%Y": r"\d{4}", "%m": r"\d{2}", "%d": r"\d{2}",
               "%H": r"\d{2}", "%M": r"\d{2}", "%S": r"\d{2}"}

L = "listener=public "
MESSAGE_CASES = [
    # (message after "worker N: ", host fail2ban must extract or None);
    # the format is modules/auth/README's "Failure log line".
    ('auth: failure client=192.0.2.7 user="alice" proto=http ' + L +
     'reason=bad-password', "192.0.2.7"),
    ('auth: failure client=2001:db8::17 user="bob smith" proto=socks5 ' + L +
     'reason=unknown-user', "2001:db8::17"),
    ('auth: failure client=::ffff:198.51.100.3 user="carol" proto=connect '
     'listener=[::]:3128 reason=bad-password', "198.51.100.3"),
    ('auth: failure client=192.0.2.11:40000 user="dave" proto=http ' + L +
     'reason=bad-password', "192.0.2.11"),
    ('auth: failure client=[2001:db8::5]:40000 user="erin" proto=socks5 ' +
     L + 'reason=bad-password', "2001:db8::5"),
    ('auth: failure client=192.0.2.12 user="a \\x22quoted\\x22 name" '
     'proto=http ' + L + 'reason=bad-password', "192.0.2.12"),
    ('auth: failure client=192.0.2.13 user="" proto=socks4 ' + L +
     'reason=socks4', "192.0.2.13"),
    ('auth: failure client=192.0.2.14 user="j\\xc3\\xbcrgen m\u00fcller" '
     'proto=websocket ' + L + 'reason=bad-password', "192.0.2.14"),
    ('auth: failure client=192.0.2.15 user="mallory" proto=http ' + L +
     'reason=throttled', "192.0.2.15"),
    # A user name chosen to move the banned address (were quotes not
    # escaped): the address is the one before the user, never one in it.
    ('auth: failure client=203.0.113.9 user="x" proto=http ' + L +
     'reason=bad-password client=6.6.6.6" proto=http ' + L +
     'reason=bad-password', "203.0.113.9"),
    ('auth: failure client=203.0.113.10 user="x\\" client=6.6.6.6 '
     'user=\\"y" proto=socks5 ' + L + 'reason=unknown-user', "203.0.113.10"),
    # Not failures, or failures that are not the client's doing.
    ('auth: failure client=192.0.2.20 user="alice" proto=http ' + L +
     'reason=overload', None),
    ('auth: failure client=192.0.2.21 user="alice" proto=http ' + L +
     'reason=helper-error', None),
    ('auth: success client=192.0.2.22 user="alice" proto=http ' + L, None),
    ('auth: failure client=evil.example.com user="x" proto=http ' + L +
     'reason=bad-password', None),
    ('bad request: auth: failure client=6.6.6.6 user="x" proto=http ' + L +
     'reason=bad-password', None),
    ('auth: failure client=192.0.2.23 user="alice" proto=http ' + L, None),
    ('auth: failure user="alice" proto=http ' + L + 'reason=bad-password',
     None),
]


def real_prefix(t):
    """'<date> [level] <pid> worker N: ' from a line portico wrote."""
    echo = t.echo_server()
    port = ptest.free_port()
    conf = t.conf("forward", WORKERS=1, RELAY="copy",
                  LISTENERS=ptest.listeners(
                      ("127.0.0.1:%d" % port,
                       echo.address)))
    p = t.portico(conf)
    lines = p.wait_log(r"worker \d+: started on cpu")
    t.check(lines, "a worker wrote its start line", lambda: p.log())
    if not lines:
        return None, None
    m = re.match(r"^(.*? worker \d+: )started on cpu", lines[0])
    t.check(m, "the start line has a 'worker N: ' prefix", lines[0])
    if not m:
        return None, None
    t.stop_portico(p)
    return m.group(1), lines[0]


def sample_lines(prefix):
    """[(line, host or None)]: every message under the real prefix, at the
    real level and at [warn], and with pt_clog's '*id peer ' prefix."""
    warn = re.sub(r"\[\w+\]", "[warn]", prefix, count=1)
    out = []
    for msg, host in MESSAGE_CASES:
        out.append((prefix + msg, host))
        out.append((warn + msg, host))
        out.append((warn + "*12 192.0.2.99:5555 " + msg, host))
    # Not a worker: the master never checks credentials.
    out.append((re.sub(r"worker \d+: $", "master: ", prefix) +
                MESSAGE_CASES[0][0], None))
    return out


def read_filter():
    cp = configparser.ConfigParser()
    with open(FILTER, encoding="utf-8") as f:
        cp.read_file(f)
    d = cp["Definition"]
    return d.get("failregex").strip(), d.get("datepattern").strip()


def python_matches(lines, failregex, datepattern):
    """{line: host} for each line the filter matches, applied the way
    fail2ban does: the date is found and cut out, then the failregex with
    its tags expanded is searched in what is left."""
    date_rx = datepattern
    for k, v in DATE_FIELDS.items():
        date_rx = date_rx.replace(k, v)
    date_cre = re.compile(date_rx)
    rx = failregex.replace("<ADDR>", ADDR).replace("<HOST>", HOST)
    cre = re.compile(rx)
    out = {}
    for line in lines:
        dm = date_cre.search(line)
        if not dm:
            continue
        rest = line[:dm.start()] + line[dm.end():]
        m = cre.search(rest)
        if m:
            out[line] = m.group("ip4") or m.group("ip6")
    return out


def fail2ban_matches(t, path):
    """{line: host} per fail2ban-regex, or None when it failed."""
    try:
        r = subprocess.run(
            ["fail2ban-regex", "-o", "<ip> | <msg>", path, FILTER],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            timeout=ptest.bound(60))
    except subprocess.TimeoutExpired:
        t.check(False, "fail2ban-regex finished")
        return None
    t.check(r.returncode == 0, "fail2ban-regex ran (exit 0)",
            lambda: r.stderr.decode(errors="replace"))
    if r.returncode != 0:
        return None
    out = {}
    for ln in r.stdout.decode("utf-8", errors="replace").splitlines():
        host, sep, line = ln.partition(" | ")
        if sep:
            out[line] = host
    return out


def compare(t, who, got, samples):
    bad = []
    for line, want in samples:
        have = got.get(line)
        if have != want:
            bad.append("want %s, got %s: %s" % (want, have, line))
    matched = sum(1 for _, w in samples if w)
    t.check(not bad, "%s: the %d failure lines give their client, the %d "
            "others nothing" % (who, matched, len(samples) - matched), bad)


def main(t):
    failregex, datepattern = read_filter()
    t.check("<ADDR>" in failregex or "<HOST>" in failregex,
            "the failregex has an address tag", failregex)
    t.check(os.path.exists(JAIL), "the jail example exists", JAIL)
    prefix, line = real_prefix(t)
    if prefix is None:
        return
    t.diag("real prefix: %r" % prefix)
    samples = sample_lines(prefix)
    path = t.path("error.log.sample")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s, _ in samples))
    lines = [s for s, _ in samples]

    dm = re.match(datepattern.replace("%Y", r"\d{4}").replace(
        "%m", r"\d{2}").replace("%d", r"\d{2}").replace("%H", r"\d{2}").
        replace("%M", r"\d{2}").replace("%S", r"\d{2}"), line)
    t.check(dm, "the datepattern matches the date portico writes", line)
    py = python_matches(lines, failregex, datepattern)
    compare(t, "filter as fail2ban expands it", py, samples)

    if shutil.which("fail2ban-regex") is None:
        t.skip("fail2ban-regex agrees", "fail2ban-regex is not installed",
               need="fail2ban")
        return
    f2b = fail2ban_matches(t, path)
    if f2b is None:
        return
    compare(t, "fail2ban-regex", f2b, samples)
    t.check(f2b == py, "fail2ban-regex and the expansion here agree",
            lambda: ["only fail2ban: %r" % (sorted(set(f2b.items()) -
                                                   set(py.items())),),
                     "only here: %r" % (sorted(set(py.items()) -
                                               set(f2b.items())),)])


if __name__ == "__main__":
    ptest.Test("fail2ban_filter").run(main)
