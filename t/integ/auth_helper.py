#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The auth module's helper backend (modules/auth/helper.c), built into the
test module t/modules/helpertest.c, through the real binary: HTTP logins
on a listener with the module are checked by external Squid basic-auth
helpers; a second listener without the module is open.

Squid's real basic_ncsa_auth (Debian package squid) against a file made
with htpasswd (apache2-utils), plain protocol, 2 children:
- right password (bcrypt, and an MD5 entry) -> 200 through curl -x
  --proxy-user; wrong password, unknown user, no credentials -> 407;
- a password with a space, % and # reaches the helper escaped as Squid
  escapes it (basic_ncsa_auth unescapes it and accepts it).

A helper script of the test's own (plain protocol, 2 children, timeout
2 s):
- a helper that hangs: that login fails (407) after the timeout, not
  before, with an error-log line naming the timeout; meanwhile a login
  through the other child and a request on the open listener are answered
  at once (the worker is not stalled); both children hung: the next login
  is refused at once with 503 (every slot busy), and after the timeout
  logins work again (the hung children were killed and restarted);
- a helper that exits: that login fails with an error line, the child is
  restarted, the next logins work, and the exited process is reaped (no
  zombie) although the worker has no SIGCHLD handler.

The same script with the channel-ID protocol (concurrency 32, answers in
random order): 50 parallel logins through 2 children are all answered,
each with its own user's verdict.

A helper program that does not exist: logged with the reason and
retried with back-off, logins fail at once, the worker lives on.

At stop, every helper process the worker started is gone.
"""
import base64
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest  # noqa: E402

NCSA = "/usr/lib/squid/basic_ncsa_auth"

# A helper speaking Squid's protocol: "[ID ]user password" in, escaped;
# OK when the password is "pw-<user>". User "hang" never gets an answer,
# user "exit" makes the process exit. With "conc", each request is
# answered from its own thread after a random delay: out of order.
HELPER = r'''
import os, random, sys, threading, time, urllib.parse
conc = sys.argv[1] == "conc"
lock = threading.Lock()

def answer(ident, user, pw):
    if user == "hang":
        time.sleep(3600)
    if user == "exit":
        os._exit(0)
    if conc:
        time.sleep(random.random() * 0.03)
    word = "OK" if pw == "pw-" + user else "ERR bad password"
    with lock:
        sys.stdout.write((ident + " " if conc else "") + word + "\n")
        sys.stdout.flush()

for line in sys.stdin:
    f = line.rstrip("\n").split(" ")
    ident = f.pop(0) if conc else ""
    user = urllib.parse.unquote(f[0])
    pw = urllib.parse.unquote(f[1]) if len(f) > 1 else ""
    if conc:
        threading.Thread(target=answer, args=(ident, user, pw),
                         daemon=True).start()
    else:
        answer(ident, user, pw)
'''


def start_origin(t):
    """The test suite's loopback origin (httptest.origin); only its port
    matters here: logins are judged by the status they get."""
    return httptest.origin(t).port


def start(t, name, command, children, timeout, concurrency=0):
    """portico with two HTTP listeners: <auth> with the module, <open>
    without. Returns (p, auth, open)."""
    auth, opn = ptest.free_port(), ptest.free_port()
    conf = """
workers = 1;
error_log = "%(tmp)s/%(name)s.log";
log_level = "info";
pid_file = "%(tmp)s/%(name)s.pid";
shutdown_timeout = 5;
listeners = (
  { address = "127.0.0.1:%(auth)d"; protocol = "http"; helpertest = { }; },
  { address = "127.0.0.1:%(opn)d"; protocol = "http"; }
);
limits = { header_timeout = 30; connect_timeout = 5; idle_timeout = 30; };
modules = ( { name = "helpertest"; path = "%(moddir)s/helpertest.so";
  helper = { command = "%(command)s"; children = %(children)d;
             timeout = %(timeout)d; concurrency = %(conc)d; }; } );
""" % dict(tmp=t.tmp, name=name, auth=auth, opn=opn,
           moddir=ptest.TESTMODDIR, command=command, children=children,
           timeout=timeout, conc=concurrency)
    p = t.portico(conf, conf_name=name + ".conf")
    return p, auth, opn


def curl_status(port, origin, user=None, path="/"):
    args = ["-o", "/dev/null", "-w", "%{http_code}", "-x",
            "http://127.0.0.1:%d" % port]
    if user is not None:
        args += ["--proxy-user", user]
    r = httptest.curl(args + ["http://127.0.0.1:%d%s" % (origin, path)])
    out = r.stdout.decode(errors="replace").strip()
    return int(out) if out.isdigit() else "curl: %r %r" % (out, r.stderr)


def raw_status(port, origin, user, pw, timeout=30):
    """One request on its own connection; the status or an error."""
    cred = base64.b64encode(("%s:%s" % (user, pw)).encode()).decode()
    req = ("GET http://127.0.0.1:%d/%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
           "Proxy-Authorization: Basic %s\r\nConnection: close\r\n\r\n"
           % (origin, user.replace(" ", "_"), origin, cred)).encode()
    s = None
    try:
        s = ptest.connect(port, timeout=ptest.bound(timeout))
        s.sendall(req)
        data = b""
        while len(data) < 65536:
            d = s.recv(65536)
            if not d:
                break
            data += d
            if b"\r\n" in data:
                break
        m = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
        return int(m.group(1)) if m else "no status: %r" % data[:60]
    except OSError as e:
        return "error: %r" % (e,)
    finally:
        if s is not None:
            s.close()


class Background(threading.Thread):
    """raw_status() on a thread, timed."""

    def __init__(self, *args):
        super().__init__(daemon=True)
        self.args = args
        self.result = None
        self.elapsed = None

    def run(self):
        t0 = time.monotonic()
        self.result = raw_status(*self.args)
        self.elapsed = time.monotonic() - t0


def helper_pids(p, path):
    return [int(m.group(1)) for m in
            (re.search(r"pid=(\d+) started", ln) for ln in
             p.log_lines(r"auth: helper .* started", path)) if m]


def gone(pid):
    """Reaped: not even a zombie."""
    return ptest.proc_stat(pid) is None


def ncsa(t, origin):
    pw = t.path("users")
    for args in (["-B", "-c", pw, "alice", "right pass"],
                 [pw, "bob", "b0b"],
                 ["-B", pw, "carol", "x y%z#1"]):
        r = subprocess.run(["htpasswd", "-b"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
        t.check(r.returncode == 0, "htpasswd %s" % args[-2], r.stdout)
    with open(pw) as f:
        text = f.read()
    t.check(re.search(r"^alice:\$2y\$", text, re.M) and
            re.search(r"^bob:\$apr1\$", text, re.M),
            "the file has a bcrypt and an MD5 entry", text)

    p, auth, opn = start(t, "ncsa", "%s %s" % (NCSA, pw), 2, 5)
    (worker,) = p.workers().values()
    path = t.path("ncsa.log")
    started = p.wait_log(r"auth: helper .* started", count=2, path=path)
    t.check(len(started) == 2, "two basic_ncsa_auth children started",
            started)

    t.check(curl_status(auth, origin, "alice:right pass") == 200,
            "basic_ncsa_auth: right password (bcrypt) -> 200")
    t.check(curl_status(auth, origin, "bob:b0b") == 200,
            "basic_ncsa_auth: right password (MD5) -> 200")
    t.check(curl_status(auth, origin, "carol:x y%z#1") == 200,
            "a password with a space, % and # is escaped as Squid does "
            "and accepted")
    t.check(curl_status(auth, origin, "alice:wrong") == 407,
            "wrong password -> 407")
    t.check(curl_status(auth, origin, "alice:right") == 407,
            "a prefix of the password -> 407")
    t.check(curl_status(auth, origin, "mallory:right pass") == 407,
            "unknown user -> 407")
    t.check(curl_status(auth, origin) == 407, "no credentials -> 407")
    t.check(curl_status(opn, origin) == 200,
            "the listener without the module needs none")
    res = [re.search(r"user=(\S+) result=(-?\d+)", ln).groups()
           for ln in p.log_lines(r"helpertest: conn=\d+ user=\S+ result=",
                                 path)]
    t.check(res == [("alice", "1"), ("bob", "1"), ("carol", "1"),
                    ("alice", "0"), ("alice", "0"), ("mallory", "0")],
            "each login was answered by the helper, OK or ERR", res)
    pids = helper_pids(p, path)
    t.check(p.workers() == {0: worker} or list(p.workers().values()) ==
            [worker], "the worker did not die")
    t.stop_portico(p)
    left = [x for x in pids if not gone(x)]
    t.check(pids and not left, "stop reaped every basic_ncsa_auth child",
            "pids %s, left %s" % (pids, left))


def hang_and_exit(t, origin, script):
    p, auth, opn = start(t, "plain", "%s %s plain" % (sys.executable, script),
                         2, 3)
    (worker,) = p.workers().values()
    path = t.path("plain.log")
    p.wait_log(r"auth: helper .* started", count=2, path=path)
    t.check(raw_status(auth, origin, "u1", "pw-u1") == 200,
            "the script helper accepts a right password")

    # One child hangs; the other still answers, and so does the worker.
    hang = Background(auth, origin, "hang", "x")
    hang.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    other = raw_status(auth, origin, "u2", "pw-u2")
    opened = raw_status(opn, origin, "u3", "nothing")
    quick = time.monotonic() - t0
    t.check(other == 200, "while one child hangs, a login through the "
            "other is answered", other)
    t.check(opened == 200, "and a request on the open listener is served",
            opened)
    t.check(hang.is_alive(), "both while the hung login still waits",
            "%.2f s" % quick)
    hang.join(ptest.bound(15))
    t.check(hang.result == 407, "the hung login fails (407)", hang.result)
    t.check(hang.elapsed is not None and 2.7 <= hang.elapsed <
            ptest.bound(8), "after the timeout (3 s), not before",
            hang.elapsed)
    lines = p.log_lines(r"auth: helper .* did not answer within 3000 ms",
                        path)
    t.check(len(lines) == 1, "one error-log line names the timeout", lines)
    t.check(p.log_lines(r"helpertest: conn=\d+ user=hang result=-110",
                        path), "the login's result is -ETIMEDOUT")

    # Both children hung: every slot is busy, the next login is refused
    # at once (503), and logins work again once they were replaced.
    hangs = [Background(auth, origin, "hang", "x") for _ in range(2)]
    for h in hangs:
        h.start()
        time.sleep(0.2)
    time.sleep(0.2)
    t0 = time.monotonic()
    busy = raw_status(auth, origin, "u4", "pw-u4")
    quick = time.monotonic() - t0
    t.check(busy == 503 and all(h.is_alive() for h in hangs),
            "both children busy: a login is refused at once with 503",
            "%s after %.2f s" % (busy, quick))
    for h in hangs:
        h.join(ptest.bound(15))
    t.check([h.result for h in hangs] == [407, 407],
            "both hung logins fail", [h.result for h in hangs])
    p.wait_log(r"auth: helper .* started", count=5, path=path)
    after = [raw_status(auth, origin, "u%d" % i, "pw-u%d" % i)
             for i in range(5, 9)]
    t.check(after == [200] * 4, "after the hung children were killed and "
            "restarted, logins work again", after)

    # A helper that exits.
    before = set(helper_pids(p, path))
    ex = raw_status(auth, origin, "exit", "x")
    t.check(ex == 407, "the login whose helper exits fails", ex)
    # Its stdin's write end or its stdout's EOF: whichever the loop sees
    # first names it.
    lines = p.wait_log(r"auth: helper .* (exited|closed its input)",
                       path=path)
    t.check(len(lines) == 1 and "1 request(s) failed" in lines[0],
            "an error-log line says the helper went away and its request "
            "failed", lines)
    t.check(p.log_lines(r"helpertest: conn=\d+ user=exit result=-32",
                        path), "the login's result is -EPIPE")
    p.wait_log(r"auth: helper .* started", count=6, path=path)
    new = set(helper_pids(p, path)) - before
    t.check(len(new) == 1, "a new child was started in its place", new)
    after = [raw_status(auth, origin, "v%d" % i, "pw-v%d" % i)
             for i in range(4)]
    t.check(after == [200] * 4, "the next logins work", after)
    dead = [x for x in before if ptest.proc_stat(x) is not None and
            not ptest.alive(x)]
    ok = ptest.wait_for(lambda: all(gone(x) for x in before
                                    if not ptest.alive(x)), ptest.bound(5))
    t.check(ok, "the exited and killed children were reaped, no zombie "
            "left", dead)
    t.check(list(p.workers().values()) == [worker],
            "the worker never died")
    pids = helper_pids(p, path)
    t.stop_portico(p)
    left = [x for x in pids if not gone(x)]
    t.check(not left, "stop reaped every child", left)


def missing(t, origin):
    p, auth, opn = start(t, "missing", "/nonexistent/helper -x", 1, 3)
    path = t.path("missing.log")
    lines = p.wait_log(r"auth: helper /nonexistent/helper child=0 "
                       r"cannot start; retry in \d+ ms: No such file",
                       path=path)
    t.check(lines, "a helper that cannot be started is logged with the "
            "reason", t.log_details(p))
    (worker,) = p.workers().values()
    t.check(raw_status(auth, origin, "u", "pw-u") == 407,
            "while none runs, a login fails (at once)")
    t.check(p.log_lines(r"helpertest: conn=\d+ user=u refused rc=-107",
                        path), "refused with -ENOTCONN")
    t.check(raw_status(opn, origin, "u", "x") == 200,
            "the open listener still serves")
    got = p.wait_log(r"cannot start", count=3, path=path)
    t.check(len(got) >= 3, "the start is retried", got)
    t.check(list(p.workers().values()) == [worker],
            "the worker did not die for it")
    t.stop_portico(p)


def concurrent(t, origin, script):
    p, auth, opn = start(t, "conc", "%s %s conc" % (sys.executable, script),
                         2, 10, concurrency=32)
    path = t.path("conc.log")
    p.wait_log(r"auth: helper .* started", count=2, path=path)
    n = 50
    out = [None] * n

    def user(i):
        return "user %d" % i    # a space: escaped on the way

    def one(i):
        out[i] = raw_status(auth, origin, user(i),
                            ("pw-" if i % 5 else "bad-") + user(i))
    ths = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(ptest.bound(30))
    want = [200 if i % 5 else 407 for i in range(n)]
    wrong = [(i, out[i]) for i in range(n) if out[i] != want[i]]
    t.check(not wrong, "50 parallel logins through 2 children (channel "
            "IDs, answers out of order): each answered with its own "
            "verdict", wrong[:8])
    res = p.log_lines(r"helpertest: conn=\d+ user=user \S+ result=", path)
    t.check(len(res) == n, "every login went to a helper", len(res))
    t.check(len(helper_pids(p, path)) == 2, "no child was restarted",
            helper_pids(p, path))
    pids = helper_pids(p, path)
    t.stop_portico(p)
    left = [x for x in pids if not gone(x)]
    t.check(not left, "stop reaped every child", left)


def main(t):
    origin = start_origin(t)
    script = t.path("helper.py")
    with open(script, "w") as f:
        f.write(HELPER)
    if not os.access(NCSA, os.X_OK) or shutil.which("htpasswd") is None:
        t.skip("Squid's basic_ncsa_auth against an htpasswd file",
               "no %s (Debian package squid) or no htpasswd "
               "(apache2-utils)" % NCSA, need="squid_ncsa")
    elif not httptest.have_curl():
        t.skip("Squid's basic_ncsa_auth through curl", "no curl",
               need="curl")
    else:
        ncsa(t, origin)
    hang_and_exit(t, origin, script)
    concurrent(t, origin, script)
    missing(t, origin)


if __name__ == "__main__":
    ptest.Test("auth_helper").run(main)
