#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The real portico under valgrind's memcheck, with the main modules loaded
and the main scenarios driven through it; then every process's valgrind
log read back: errors and leaks per process, a table, and an exit status.
Not run by `make check` or CI (CI has ASan/LSan; this takes from 20 s to
minutes): run it by hand after a change to memory handling, and record
the result in doc/fuzzing.md, section "Valgrind", which has the last
run's table. That run (2026-12-01, main 8e50f50, valgrind-3.19.0): 10
processes (a master and four workers per stop), no error, nothing
definitely or indirectly lost.

From the build directory (a plain build: -g -O2, no sanitizers):

    PORTICO=./portico python3 ../t/valgrind/run.py [--logs DIR]
        [--stops quit,term] [--slow N] [--workers N]

What runs, once per stop (SIGQUIT, a graceful stop, then SIGTERM, a fast
one; --stops picks), each a fresh portico under
`valgrind --tool=memcheck --leak-check=full --trace-children=yes
--log-file=DIR/<stop>/vg.%p.log` (one log per process: the master, each
worker it forks, any program it runs), two workers:

- modules auth (a userlist with an Argon2id hash made by the argon2
  program), acl (default deny, allow_private, a rule denying 127.0.0.2, a
  host regex, allow for authenticated users and for status scrapes),
  limits (a class on the source address), accesslog (JSON to a file) and,
  when tls.so and the openssl program are here, tls on one listener (a
  test CA's certificate);
- listeners: http, socks5, status, and the https one;
- the resolver asks a DNS server of the test's on loopback (no query
  leaves the machine);
- traffic on each generation: GETs without credentials (407), with a
  wrong password (407) and with Basic credentials (200, by address and by
  a name the DNS server knows), three on one keep-alive connection, a
  CONNECT tunnel echoing 64 KiB, a SOCKS5 CONNECT with RFC 1929 echoing
  64 KiB, SOCKS5 with a wrong password, a SOCKS5 UDP ASSOCIATE with
  datagrams through a UDP echo, a GET through the https listener (curl),
  a /metrics scrape, and requests the acl refuses (403: to 127.0.0.2,
  where an origin listens, and to a name its regex denies);
- three reloads that fail (a libconfig syntax error, a regex the acl
  refuses, a missing userlist), then a SIGHUP with a CONNECT tunnel
  open: the new generation's workers start, the tunnel still echoes
  through the draining old worker, which exits once it is closed; the
  same traffic on the new generation;
- the stop with connections open (a CONNECT and a SOCKS5 tunnel, an
  idle keep-alive connection, a UDP association, half a request head):
  SIGQUIT lets them finish (the tunnel echoes after the signal), SIGTERM
  closes them.

Then each vg.PID.log: "ERROR SUMMARY" and the leak summary (definitely,
indirectly, possibly lost, still reachable). A process with an error or a
definite or indirect leak fails (valgrind counts those leaks as errors
here, --errors-for-leak-kinds=definite,indirect), as does one whose log
has no summary (killed before its exit). "Possibly lost" is reported, not
failed: it is c-ares's live channel at the worker's _exit, whose blocks
come from worker/dns_mem.c's size classes and are seen through pointers
past their header only (the same 74,472 bytes in every worker).

Output: TAP lines (ptest), then the table; exit status 0 when every check
passed and every process is clean, 1 otherwise. The logs are kept (their
directory is printed). t/valgrind/portico.supp holds the suppressions
(see its comments for why each is there).
"""
import argparse
import base64
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
INTEG = os.path.join(HERE, "..", "integ")
sys.path.insert(0, INTEG)

# valgrind's memcheck is 20-50 times slower than the program alone:
# every ptest.bound() the helpers use is stretched by this (before ptest
# reads it).
if "--slow" in sys.argv:
    i = sys.argv.index("--slow")
    if i + 1 < len(sys.argv):
        os.environ["PT_SLOW"] = sys.argv[i + 1]
os.environ.setdefault("PT_SLOW", "20")

import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import authtest as A  # noqa: E402
import statustest as ST  # noqa: E402
import acltest as ACL  # noqa: E402
import accesslogtest as AL  # noqa: E402
import limitstest as L  # noqa: E402
import tlstest as T  # noqa: E402

SUPP = os.path.join(HERE, "portico.supp")
ERROR_EXIT = 42         # valgrind's exit status for a process with errors
USER, PASSWORD = "vguser", "vg-s3cret"
TUNNEL = 64 * 1024

STOPS = {"quit": signal.SIGQUIT, "term": signal.SIGTERM}


def valgrind_argv(logdir):
    argv = ["valgrind", "--tool=memcheck", "--leak-check=full",
            "--show-leak-kinds=definite,indirect,possible",
            "--errors-for-leak-kinds=definite,indirect",
            "--track-fds=no", "--trace-children=yes",
            "--child-silent-after-fork=no", "--num-callers=30",
            "--log-file=%s/vg.%%p.log" % logdir,
            "--error-exitcode=%d" % ERROR_EXIT]
    if os.path.exists(SUPP):
        argv.append("--suppressions=%s" % SUPP)
    return argv


class VgPortico(ptest.Portico):
    """ptest.Portico, started as `valgrind ... portico -f -c FILE`. The
    master's pid is valgrind's (it runs the program in its own process);
    workers are its forks, named portico-wN as usual (valgrind passes
    PR_SET_NAME through)."""

    def __init__(self, test, conf, logdir, **kw):
        self.logdir = logdir
        super().__init__(test, conf, **kw)

    def start(self):
        env = dict(os.environ)
        self.err_f = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(
            valgrind_argv(self.logdir) +
            [ptest.PORTICO, "-f", "-c", self.conf_path] + self.args,
            stdin=subprocess.DEVNULL, stdout=self.err_f, stderr=self.err_f,
            preexec_fn=ptest._preexec(self.nofile),
            start_new_session=True, env=env, close_fds=True)
        self.pid = self.proc.pid
        self.seen.add(self.pid)
        self.wait_started(ptest.bound(15))
        return self


# ---------------------------------------------------------------------------
# configuration

def make_conf(t, ctx, name):
    tls_listener = ""
    tls_module = ""
    if ctx["tls"]:
        tls_listener = ",\n" + T.listener(ctx["ports"]["tls"], ctx["cert"],
                                          ctx["key"], name="https")
        tls_module = ',\n  { name = "tls"; path = "%s"; }' % T.TLS_SO
    return """workers = %(workers)d;
error_log = "%(tmp)s/%(name)s.error.log";
log_level = "info";
pid_file = "%(tmp)s/%(name)s.pid";
shutdown_timeout = 300;
limits = { header_timeout = 120; connect_timeout = 60; idle_timeout = 300; };
http = { connect_ports = "*"; };
resolver = { servers = "%(dns)s"; timeout = 10; };
listeners = (
  { name = "web"; address = "127.0.0.1:%(web)d"; protocol = "http"; },
  { name = "socks"; address = "127.0.0.1:%(socks)d"; protocol = "socks5"; },
  { name = "stat"; address = "127.0.0.1:%(stat)d"; protocol = "status"; }\
%(tls_listener)s
);
modules = (
  { name = "auth"; path = "%(auth)s"; userlist = "%(users)s";
    realm = "valgrind"; },
  { name = "acl"; path = "%(acl)s"; default = "deny"; allow_private = true;
    rules = (
      { name = "no-dot2"; action = "deny"; dst = [ "127.0.0.2" ]; },
      { name = "ads"; action = "deny"; host = [ "~^ads?[0-9]*\\\\." ]; },
      { name = "scrape"; action = "allow"; protocol = "status";
        src = [ "127.0.0.1" ]; },
      { name = "staff"; action = "allow"; user = [ "*" ]; }
    ); },
  { name = "limits"; path = "%(limits)s";
    classes = (
      { name = "per-source"; key = "source"; max_connections = 64;
        request_rate = 1000; request_rate_burst = 1000; }
    ); },
  { name = "accesslog"; path = "%(al)s";
    logs = ( { file = "%(jlog)s"; format = "json"; } ); }%(tls_module)s
);
""" % dict(workers=ctx["workers"], tmp=t.tmp, name=name,
           dns=ctx["dns"].address, web=ctx["ports"]["web"],
           socks=ctx["ports"]["socks"], stat=ctx["ports"]["stat"],
           tls_listener=tls_listener, auth=A.AUTH_SO, users=ctx["users"],
           acl=ACL.ACL_SO, limits=L.LIMITS_SO, al=AL.AL_SO,
           jlog=ctx["jlog"], tls_module=tls_module)


# ---------------------------------------------------------------------------
# traffic

def basic():
    return "Basic " + base64.b64encode(
        ("%s:%s" % (USER, PASSWORD)).encode()).decode()


def http_get(port, url, auth=True):
    hs = [("Proxy-Authorization", basic())] if auth else []
    return H.get(port, url, headers=hs, timeout=ptest.bound(10))


def status(r):
    return r.status if isinstance(r, H.Resp) else r


def connect_tunnel(port, host, tport):
    """(Conn, Resp or error) of a CONNECT with credentials."""
    conn = H.Conn.to(port, timeout=ptest.bound(10))
    try:
        conn.send("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n"
                  "Proxy-Authorization: %s\r\n\r\n"
                  % (host, tport, host, tport, basic()))
        return conn, H.read_response(conn, "CONNECT")
    except Exception as e:
        return conn, "%s: %s" % (type(e).__name__, e)


def echo(conn, n):
    payload = os.urandom(n)
    return S.echo_check(conn, payload)


def traffic(t, ctx, p, gen):
    """One round of every kind of traffic; checks each answer."""
    lab = "gen %d: " % gen
    o, ports = ctx["origin"], ctx["ports"]
    web = ports["web"]
    tag = "g%d" % gen

    r = http_get(web, o.url + "/%s/noauth" % tag, auth=False)
    t.check(status(r) == 407 and not o.reqs_for("/%s/noauth" % tag),
            lab + "GET without credentials: 407, the origin never sees it",
            lambda: H.describe(r))
    r = http_get(web, o.url + "/%s/auth" % tag)
    t.check(status(r) == 200 and o.reqs_for("/%s/auth" % tag),
            lab + "GET with Basic credentials: 200, the origin saw it",
            lambda: H.describe(r) + H.log_tail(p)())
    r = http_get(web, "http://origin.vg.test:%d/%s/named" % (o.port, tag))
    t.check(status(r) == 200 and o.reqs_for("/%s/named" % tag),
            lab + "GET to a name the test's DNS server knows: 200",
            lambda: H.describe(r) + H.log_tail(p)())

    r = H.get(web, o.url + "/%s/badpw" % tag, timeout=ptest.bound(10),
              headers=[("Proxy-Authorization", "Basic " + base64.b64encode(
                  ("%s:wrong" % USER).encode()).decode())])
    t.check(status(r) == 407 and not o.reqs_for("/%s/badpw" % tag),
            lab + "GET with a wrong password: 407", lambda: H.describe(r))
    codes = []
    try:
        ka = H.Conn.to(web, timeout=ptest.bound(10))
        for i in range(3):
            ka.send(H.request_bytes("GET", o.url + "/%s/ka%d" % (tag, i),
                                    [("Proxy-Authorization", basic())]))
            codes.append(H.read_response(ka).status)
        ka.close()
    except Exception as e:
        codes.append("%s: %s" % (type(e).__name__, e))
    t.check(codes == [200] * 3, lab + "three GETs on one keep-alive "
            "connection: 200 each", codes)

    conn, r = connect_tunnel(web, "127.0.0.1", ctx["echo"].port)
    ok = status(r) == 200
    if ok:
        ok, why = echo(conn, TUNNEL)
    else:
        why = H.describe(r)
    conn.close()
    t.check(ok, lab + "CONNECT tunnel: 200, %d bytes each way" % TUNNEL,
            why)

    r, c = S.connect5(ports["socks"], "127.0.0.1", ctx["echo"].port,
                      auth=(USER, PASSWORD), timeout=ptest.bound(10))
    ok = S.ok5(r)
    why = r
    if ok:
        ok, why = echo(c, TUNNEL)
    c.close()
    t.check(ok, lab + "SOCKS5 CONNECT with RFC 1929: %d bytes each way"
            % TUNNEL, why)

    r, c = S.connect5(ports["socks"], "127.0.0.1", ctx["echo"].port,
                      auth=(USER, "wrong"), timeout=ptest.bound(10))
    c.close()
    t.check(isinstance(r, str) and "RFC 1929 status" in r and
            "status 0 " not in r,
            lab + "SOCKS5 with a wrong password: refused in RFC 1929", r)

    u = S.Udp(ports["socks"], auth=(USER, PASSWORD),
              timeout=ptest.bound(10))
    got = []
    if u.ok():
        for i in range(4):
            data = b"dgram %d %d " % (gen, i) + os.urandom(100 * (i + 1))
            u.send("127.0.0.1", ctx["uecho"].port, data)
            rep = u.recv(ptest.bound(3))
            got.append(rep is not None and rep[3] == data)
    u.close()
    t.check(u.ok() and got == [True] * 4,
            lab + "SOCKS5 UDP ASSOCIATE: 4 datagrams through the echo",
            lambda: [u.describe(), got])

    if ctx["tls"]:
        cp = H.curl(T.curl_args(ports["tls"], ctx["ca"]) +
                    ["-U", "%s:%s" % (USER, PASSWORD), "-o", "/dev/null",
                     "-w", "%{http_code}", o.url + "/%s/tls" % tag])
        t.check(cp.stdout == b"200" and o.reqs_for("/%s/tls" % tag),
                lab + "GET through the https listener (curl): 200",
                lambda: [cp.returncode, cp.stdout, cp.stderr])

    samples, text = ST.scrape(ports["stat"])
    t.check(samples is not None and
            ST.value(samples, "portico_config_generation") == gen and
            ST.series(samples, "portico_module_limits_class_refused_total"),
            lab + "GET /metrics: 200, generation %d, the limits class has its "
            "counters" % gen,
            lambda: text if samples is None else
            [ln for ln in text.splitlines() if "limits" in ln][:20])

    if ctx["dot2"] is not None:
        d2 = ctx["dot2"]
        r = http_get(web, d2.url + "/%s/denied" % tag)
        t.check(status(r) == 403 and not d2.reqs_for("/%s/denied" % tag),
                lab + "GET to 127.0.0.2 (denied by dst): 403, its origin "
                "never sees it", lambda: H.describe(r))
    r = http_get(web, "http://ads1.vg.test:%d/%s/ads" % (o.port, tag))
    t.check(status(r) == 403 and not o.reqs_for("/%s/ads" % tag),
            lab + "GET to a name the host regex denies: 403",
            lambda: H.describe(r))


def hold_open(t, ctx, label):
    """Connections left open for the stop: a CONNECT tunnel, a SOCKS5
    tunnel, an idle keep-alive connection after one GET, the control
    connection of a UDP association, a request head half sent. Returns
    H.Conn-like objects (close(), and the first three readable)."""
    ports = ctx["ports"]
    out, why = [], []
    c, r = connect_tunnel(ports["web"], "127.0.0.1", ctx["echo"].port)
    out.append(c)
    why.append(status(r))
    r, c = S.connect5(ports["socks"], "127.0.0.1", ctx["echo"].port,
                      auth=(USER, PASSWORD), timeout=ptest.bound(10))
    out.append(c)
    why.append(S.ok5(r) and echo(c, 1000)[0])
    c = H.Conn.to(ports["web"], timeout=ptest.bound(10))
    out.append(c)
    try:
        c.send(H.request_bytes("GET", ctx["origin"].url + "/held",
                               [("Proxy-Authorization", basic())]))
        why.append(H.read_response(c).status)
    except Exception as e:
        why.append("%s: %s" % (type(e).__name__, e))
    u = S.Udp(ports["socks"], auth=(USER, PASSWORD),
              timeout=ptest.bound(10))
    out.append(u)
    why.append(u.ok())
    c = H.Conn.to(ports["web"], timeout=ptest.bound(10))
    c.send(b"GET http://127.0.0.1/half HTTP/1.1\r\nHost: 127")
    out.append(c)
    t.check(why == [200, True, 200, True], "%s: connections held open "
            "for the stop (CONNECT, SOCKS5, keep-alive, UDP, half a "
            "head)" % label, why)
    return out


def bad_reloads(t, ctx, p, label, workers):
    """Reloads that fail, each with the log's "reload failed" and the
    workers unchanged (the master's error paths: libconfig's, a module's
    configuration, a module's file), then the good file back."""
    good = p.conf_text
    # A missing "=": libconfig's parser meets a string where it wants
    # the "=", the token libconfig leaks (t/valgrind/portico.supp).
    bad = [("a syntax error (a missing =)",
            good.replace('log_level = "info";', 'log_level "info";')),
           ("a regex the acl module refuses",
            good.replace("~^ads?[0-9]*", "~(ads")),
           ("a userlist that does not exist",
            good.replace(ctx["users"], ctx["users"] + ".missing"))]
    n = len(p.log_lines(r"reload failed"))
    for what, text in bad:
        assert text != good
        p.set_conf(text)
        p.hup()
        n += 1
        lines = p.wait_log(r"reload failed", count=n,
                           timeout=ptest.bound(10))
        t.check(len(lines) >= n and
                sorted(p.workers().values()) == workers,
                "%s: a reload with %s fails, the workers unchanged"
                % (label, what), lambda: lines + H.log_tail(p)())
    p.set_conf(good)


# ---------------------------------------------------------------------------
# valgrind's logs

NUM = r"([\d,]+)"
LEAK_KINDS = ("definitely lost", "indirectly lost", "possibly lost",
              "still reachable", "suppressed")


def _n(s):
    return int(s.replace(",", ""))


def read_vg_log(path):
    """{pid, parent, errors, <leak kind>: bytes, complete, stacks}."""
    with open(path, errors="replace") as f:
        text = f.read()
    m = re.search(r"vg\.(\d+)\.log$", path)
    d = dict(path=path, pid=int(m.group(1)) if m else None, parent=None,
             errors=None, complete=False, command=None)
    for k in LEAK_KINDS:
        d[k] = 0
    m = re.search(r"^==\d+== Parent PID: (\d+)", text, re.M)
    if m:
        d["parent"] = int(m.group(1))
    m = re.search(r"^==\d+== Command: (.*)$", text, re.M)
    if m:
        d["command"] = m.group(1)
    errs = re.findall(r"^==\d+== ERROR SUMMARY: %s errors" % NUM, text,
                      re.M)
    if errs:
        d["errors"] = _n(errs[-1])
        d["complete"] = True
    for k in LEAK_KINDS:
        m = re.findall(r"^==\d+==\s+%s: %s bytes" % (k, NUM), text, re.M)
        if m:
            d[k] = _n(m[-1])
    # The first lines of each error or leak record, for the report.
    d["records"] = re.findall(
        r"^==\d+== ((?:Invalid|Conditional|Syscall|Use of|Mismatched|"
        r"Source and|Argument|.* are (?:definitely|indirectly) lost).*)$",
        text, re.M)
    return d


def roles(ctx_run):
    """{pid: role} of the processes the run saw."""
    out = {ctx_run["master"]: "master"}
    for gen, pids in ctx_run["workers"].items():
        for pid in pids:
            out[pid] = "worker gen %d" % gen
    return out


def report_run(t, label, logdir, ctx_run):
    rows = []
    rl = roles(ctx_run)
    logs = sorted(glob.glob(os.path.join(logdir, "vg.*.log")))
    for path in logs:
        d = read_vg_log(path)
        role = rl.get(d["pid"])
        if role is None:
            role = ("child of master" if d["parent"] == ctx_run["master"]
                    else "other")
        d["role"] = role
        d["run"] = label
        rows.append(d)
        t.check(d["complete"], "%s: %s %s: the log has its summary (the "
                "process exited by itself)" % (label, role, d["pid"]),
                lambda: ptest.tail(open(path, errors="replace").read(), 20))
        t.check(d["complete"] and d["errors"] == 0 and
                d["definitely lost"] == 0 and d["indirectly lost"] == 0,
                "%s: %s %s: no error, nothing definitely or indirectly "
                "lost" % (label, role, d["pid"]),
                lambda: ["log %s" % path] + d["records"][:20])
    want = set(rl)
    have = set(d["pid"] for d in rows)
    t.check(want <= have, "%s: a valgrind log for every process seen "
            "(master and each worker)" % label,
            lambda: "missing: %s" % sorted(want - have))
    return rows


def table(rows):
    head = ("run", "process", "pid", "errors", "definitely", "indirectly",
            "possibly", "still reachable", "suppressed")
    lines = [head]
    for d in rows:
        lines.append((d["run"], d["role"], str(d["pid"]),
                      "-" if d["errors"] is None else str(d["errors"]),
                      "%d" % d["definitely lost"],
                      "%d" % d["indirectly lost"],
                      "%d" % d["possibly lost"],
                      "%d" % d["still reachable"],
                      "%d" % d["suppressed"]))
    w = [max(len(r[i]) for r in lines) for i in range(len(head))]
    out = []
    for i, r in enumerate(lines):
        out.append("| " + " | ".join(c.ljust(w[j]) for j, c in enumerate(r))
                   + " |")
        if i == 0:
            out.append("|" + "|".join("-" * (x + 2) for x in w) + "|")
    return out


# ---------------------------------------------------------------------------

def one_run(t, ctx, label, sig, logdir):
    """A portico under valgrind: traffic, reload with a tunnel held
    across it, traffic on generation 2, stop with <sig>. Returns the
    processes seen."""
    os.makedirs(logdir, exist_ok=True)
    for f in glob.glob(os.path.join(logdir, "vg.*.log")):
        os.unlink(f)
    t0 = time.monotonic()
    p = VgPortico(t, make_conf(t, ctx, label), logdir,
                  conf_name=label + ".conf", workers=ctx["workers"])
    p.start()
    run = dict(master=p.pid, workers={1: sorted(p.workers().values())})
    t.diag("%s: master %d, workers %s, started in %.0f s"
           % (label, p.pid, run["workers"][1], time.monotonic() - t0))

    traffic(t, ctx, p, 1)

    # A tunnel held open across the reload: the old worker drains it.
    held, r = connect_tunnel(ctx["ports"]["web"], "127.0.0.1",
                             ctx["echo"].port)
    ok = status(r) == 200 and echo(held, 1000)[0]
    t.check(ok, "%s: a CONNECT tunnel open before the reload" % label,
            lambda: H.describe(r))
    old = run["workers"][1]
    bad_reloads(t, ctx, p, label, old)
    p.hup()
    new = p.wait_workers(ctx["workers"], ptest.bound(15), exclude=old)
    t.check(bool(new), "%s: SIGHUP: a new generation's workers run" % label,
            H.log_tail(p))
    run["workers"][2] = sorted((new or {}).values())
    ok, why = echo(held, 1000) if ok else (False, "no tunnel")
    t.check(ok and all(ptest.alive(x) for x in old),
            "%s: the tunnel still echoes through the draining old worker"
            % label, why)
    held.close()
    gone = ptest.wait_for(lambda: not any(ptest.alive(x) for x in old),
                          ptest.bound(15))
    t.check(gone, "%s: the old worker exits once its tunnel is closed"
            % label, lambda: [(x, ptest.comm(x)) for x in old])
    t.check(bool(p.wait_log(r"generation 2 ready", timeout=ptest.bound(5))),
            "%s: the log says generation 2 is ready" % label, H.log_tail(p))

    traffic(t, ctx, p, 2)

    # Connections open at the stop: a graceful stop lets them finish (they
    # still work after SIGQUIT, then the client closes them), a fast one
    # closes them (every connection's teardown at exit).
    held = hold_open(t, ctx, label)
    t1 = time.monotonic()
    if sig == signal.SIGQUIT:
        p.quit()
        t.check(bool(p.wait_log(r"shutting down gracefully",
                                timeout=ptest.bound(5))),
                "%s: the log says 'shutting down gracefully'" % label,
                H.log_tail(p))
        ok, why = echo(held[0], 1000)
        t.check(ok and p.running(), "%s: after SIGQUIT the held tunnel "
                "still echoes, the master waits" % label, why)
        for c in held:
            c.close()
        p.wait_exit(ptest.bound(15))
    rc = t.stop_portico(p, sig)
    if sig == signal.SIGTERM:
        ends = [H.outcome(c, ptest.bound(2))[1] for c in held[:3]]
        t.check(all(e in ("eof", "reset") for e in ends),
                "%s: SIGTERM closed the held connections" % label, ends)
        for c in held:
            c.close()
    t.check(rc == 0,
            "%s: the master exits with status 0 after SIG%s (%s would be "
            "valgrind's verdict of errors)" % (label, label.upper(),
                                               ERROR_EXIT),
            lambda: ["exit status %s" % rc] + ptest.tail(p.log(), 20))
    t.diag("%s: stopped in %.0f s, the run took %.0f s"
           % (label, time.monotonic() - t1, time.monotonic() - t0))
    return run


def main(t, args):
    for what, why, need in (
            (A.missing(), "auth", None), (ACL.missing(), "acl", None),
            (AL.missing(), "accesslog", None), (L.missing(), "limits", None)):
        if what:
            t.skip("valgrind run (needs the %s module)" % why, what, need)
            return
    if shutil.which("valgrind") is None:
        t.check(False, "valgrind is in PATH (Debian package valgrind)")
        return
    ver = subprocess.run(["valgrind", "--version"], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.strip()
    t.diag("%s, slow x%g, logs in %s" % (ver, ptest.SLOW, args.logs))

    ctx = dict(workers=args.workers, tls=T.missing() is None)
    ctx["ports"] = {k: ptest.free_port() for k in
                    ("web", "socks", "stat", "tls")}
    ctx["origin"] = H.origin(t)
    ctx["echo"] = t.echo_server()
    ctx["uecho"] = S.udp_echo(t)
    ctx["dot2"] = H.origin(t, "127.0.0.2") if ACL.can_bind("127.0.0.2") \
        else None
    if ctx["dot2"] is None:
        t.skip("a request to 127.0.0.2 denied", "127.0.0.2 cannot be bound",
               need="127.0.0.2")
    ctx["dns"] = H.dns_server(t, {"origin.vg.test": {"A": ["127.0.0.1"]},
                                  "ads1.vg.test": {"A": ["127.0.0.1"]}})
    ctx["users"] = A.write_users(t, [(USER, A.argon2id(PASSWORD))])
    ctx["jlog"] = t.path("access.json")
    if ctx["tls"]:
        ca = T.CA(t)
        ctx["ca"] = ca.pem
        ctx["cert"], ctx["key"] = ca.issue("proxy")
    else:
        t.skip("tls on a listener", T.missing())

    rows = []
    for label in args.stops:
        logdir = os.path.join(args.logs, label)
        run = one_run(t, ctx, label, STOPS[label], logdir)
        rows += report_run(t, label, logdir, run)

    recs, bad = AL.json_records(ctx["jlog"])
    tx = AL.transactions(recs)
    t.check(not bad and len(tx) >= 10 * len(args.stops),
            "the access log holds one JSON record per transaction (%d)"
            % len(tx), bad[:5])

    out = ["", "valgrind: %s; portico %s" % (ver, ptest.PORTICO)] + \
        table(rows)
    failed = [d for d in rows if not d["complete"] or d["errors"] or
              d["definitely lost"] or d["indirectly lost"]]
    out.append("%d processes, %d with errors or definite/indirect leaks; "
               "logs in %s" % (len(rows), len(failed), args.logs))
    t.diag(out)
    print("\n".join(out), file=sys.stderr)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logs", help="directory for valgrind's logs (kept; "
                    "default: a new one under /tmp)")
    ap.add_argument("--stops", default="quit,term",
                    help="the runs, by how they stop: quit (SIGQUIT) "
                    "and/or term (SIGTERM); default quit,term")
    ap.add_argument("--slow", type=float, default=None,
                    help="stretch every time bound by this (default 20)")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    a.stops = [s for s in a.stops.split(",") if s]
    for s in a.stops:
        if s not in STOPS:
            ap.error("--stops: %r is neither quit nor term" % s)
    if a.logs is None:
        import tempfile
        a.logs = tempfile.mkdtemp(prefix="portico-vg-")
    a.logs = os.path.abspath(a.logs)
    return a


if __name__ == "__main__":
    args = parse_args()
    t = ptest.Test("valgrind")
    try:
        t.run(lambda t: main(t, args))
    except SystemExit:
        pass
    sys.exit(1 if t.tap.failed else 0)
