#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Behind a real HAProxy (Debian's haproxy), as operators run it: a frontend
in mode tcp on loopback, `balance roundrobin` over two porticos, each
server `send-proxy-v2 proxy-v2-options crc32c,unique-id check` (so every
connection starts with a v2 header carrying a CRC32C and the frontend's
unique id, and HAProxy's health checks send LOCAL headers), `retries 0`
(a connection a portico refused would show as a failed request, not be
hidden by a retry). Each portico has an HTTP listener with
proxy_protocol from 127.0.0.1/32, a status listener, a JSON access log,
and (when acl.so is built) a rule denying src 127.0.0.3/32.

- the health checks keep both servers UP (HAProxy's stats socket: status
  UP, last check L4OK, no UP->DOWN change) and reach each portico as
  accepted v2 headers (its /metrics), none refused;
- 20 requests through HAProxy, from clients bound to 127.0.0.2 and
  127.0.0.3 in turn, spread over both porticos; each access log record of
  them names client = the client's own address and port (never
  HAProxy's 127.0.0.1), balancer 127.0.0.1 and a port, and
  proxy_unique_id = HAProxy's unique id for that client ("pt-%ci-%cp");
- with the acl rule: 127.0.0.3's requests get 403 and never reach the
  origin, 127.0.0.2's get 200;
- a SIGHUP of one portico while 4 threads make keep-alive-less requests
  through HAProxy (at least 100 each, and 100 after the reload, bounded
  in count and time): every request gets 200, the reloaded portico
  serves after its reload, its records still name the header's client;
- no portico counted a refused header; HAProxy is stopped by its PID.
"""
import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import accesslogtest as AL  # noqa: E402
import acltest as ACL  # noqa: E402
import proxytest as PP  # noqa: E402

INTER_MS = 300          # HAProxy's check interval


def haproxy_program():
    return shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK)
        else None)


class HAProxy:
    """HAProxy in the foreground (-db) with <cfg>, its output in
    <tmp>/haproxy.log, stopped by PID (SIGTERM, then SIGKILL)."""

    def __init__(self, t, prog, cfg, sock, port):
        self.t, self.prog, self.cfg, self.sock = t, prog, cfg, sock
        self.port = port
        self.log_path = t.path("haproxy.log")
        self.proc = None

    def check_config(self):
        cp = subprocess.run([self.prog, "-c", "-f", self.cfg],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT,
                            universal_newlines=True,
                            timeout=ptest.bound(20))
        return cp.returncode, cp.stdout

    def start(self):
        self.out = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.prog, "-db", "-f", self.cfg], stdin=subprocess.DEVNULL,
            stdout=self.out, stderr=self.out, start_new_session=True,
            preexec_fn=ptest._preexec(None), close_fds=True)
        self.t.at_exit(self.stop)
        ok = ptest.wait_for(lambda: self.proc.poll() is not None or (
            ptest.listening(self.port) and os.path.exists(self.sock)),
            ptest.bound(10))
        return ok and self.proc.poll() is None

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def command(self, cmd):
        """The stats socket's answer to <cmd>, or None."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(ptest.bound(5))
        try:
            s.connect(self.sock)
            s.sendall(cmd.encode() + b"\n")
            out = b""
            while len(out) < 1 << 20:
                d = s.recv(65536)
                if not d:
                    break
                out += d
            return out.decode("utf-8", "replace")
        except OSError:
            return None
        finally:
            s.close()

    def servers(self, backend="porticos"):
        """{server name: row of `show stat` as a dict}, or {}."""
        text = self.command("show stat")
        if not text or not text.startswith("# "):
            return {}
        rows = csv.DictReader(io.StringIO(text[2:]))
        return {r["svname"]: r for r in rows
                if r.get("pxname") == backend and
                r.get("svname") not in ("FRONTEND", "BACKEND")}

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.poll() if self.proc else None
        try:
            os.kill(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(ptest.bound(10))
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(ptest.bound(5))
        self.out.close()
        return self.proc.returncode


def haproxy_cfg(t, fe, backends, sock):
    servers = "".join(
        "    server %s 127.0.0.1:%d send-proxy-v2 proxy-v2-options "
        "crc32c,unique-id check inter %dms rise 1 fall 2\n"
        % (name, port, INTER_MS) for name, port in backends)
    return """global
    maxconn 512
    stats socket %s mode 600 level admin
    log stderr format raw local0 info

defaults
    mode tcp
    log global
    option tcplog
    retries 0
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout check 2s

frontend fe
    bind 127.0.0.1:%d
    unique-id-format pt-%%ci-%%cp
    default_backend porticos

backend porticos
    balance roundrobin
%s""" % (sock, fe, servers)


def portico_conf(t, name, port, stat, jlog, acl):
    mods = [AL.module(['file = "%s"; format = "json";' % jlog])]
    if acl:
        mods.append(ACL.acl_entry([dict(name="no-3", action="deny",
                                        src=["127.0.0.3/32"])],
                                  default="allow", allow_private=True))
    return """workers = 1;
error_log = "%s";
log_level = "info";
pid_file = "%s";
shutdown_timeout = 10;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
http = { connect_ports = "*"; };
listeners = (
  { name = "lb"; address = "127.0.0.1:%d"; protocol = "http";
    proxy_protocol = { from = [ "127.0.0.1/32" ]; }; },
  { name = "stat"; address = "127.0.0.1:%d"; protocol = "status"; }
);
modules = (
  %s
);
""" % (t.path(name + ".log"), t.path(name + ".pid"), port, stat,
       ",\n  ".join(mods))


def through(fe, src, url):
    """One GET of <url> through HAProxy on a fresh connection from <src>:
    (status or error text, the client's port)."""
    try:
        s = PP.connect_from(fe, src)
    except Exception as e:
        return "connect: %s" % ptest.err_kind(e), None
    cport = s.getsockname()[1]
    conn = H.Conn(s, ptest.bound(10))
    try:
        conn.send(PP.request_bytes(url))
        return H.read_response(conn).status, cport
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), cport
    finally:
        conn.close()


def tagged(jlog, prefix):
    """{tag: record} of the records whose target has t=<prefix>..."""
    out = {}
    for r in AL.transactions(AL.json_records(jlog)[0]):
        tgt = r.get("target") or ""
        i = tgt.find("t=" + prefix)
        if i >= 0:
            out[tgt[i + 2:]] = r
    return out


def main(t):
    prog = haproxy_program()
    if prog is None:
        t.skip("porticos behind a real HAProxy", "no haproxy program in "
               "PATH (Debian package haproxy)", need="haproxy")
        return
    why = AL.missing()
    if why:
        t.skip("porticos behind a real HAProxy (the access log shows the "
               "client)", why)
        return
    if not (ACL.can_bind("127.0.0.2") and ACL.can_bind("127.0.0.3")):
        t.skip("porticos behind a real HAProxy: clients from 127.0.0.2 and "
               "127.0.0.3", "cannot bind 127.0.0.2", need="127.0.0.2")
        return
    acl = ACL.missing() is None
    if not acl:
        t.skip("an acl src rule behind HAProxy", ACL.missing(),
               need="acl.so")
    origin = H.origin(t)
    fe = ptest.free_port()
    names = ("p1", "p2")
    ports = {n: ptest.free_port() for n in names}
    stats = {n: ptest.free_port() for n in names}
    jlogs = {n: t.path(n + ".json") for n in names}
    texts = {n: portico_conf(t, n, ports[n], stats[n], jlogs[n], acl)
             for n in names}
    out = PP.conf_refused(ptest.write_conf(t.tmp, texts["p1"], "p1.conf"))
    if out is not None:
        PP.report_conf_refused(t, out, "an HTTP listener with "
                               "proxy_protocol = { from = "
                               "[ \"127.0.0.1/32\" ]; }")
        return
    ps = {n: t.portico(texts[n], conf_name=n + ".conf") for n in names}
    w0 = {n: ps[n].workers() for n in names}

    sock = t.path("haproxy.sock")
    cfg = ptest.write_file(t.path("haproxy.cfg"), haproxy_cfg(
        t, fe, [(n, ports[n]) for n in names], sock))
    hap = HAProxy(t, prog, cfg, sock, fe)
    rc, text = hap.check_config()
    if not t.check(rc == 0, "haproxy -c accepts the test's configuration",
                   [text]):
        return
    if not t.check(hap.start(), "HAProxy started: its frontend listens and "
                   "its stats socket answers", lambda: ptest.tail(
                       hap.log(), 30)):
        return

    # -- health checks ---------------------------------------------------
    def both_up():
        sv = hap.servers()
        return sv if all(sv.get(n, {}).get("status") == "UP" and
                         sv.get(n, {}).get("check_status") == "L4OK"
                         for n in names) else None
    base = {n: PP.counts(stats[n]) for n in names}
    sv = ptest.wait_for(both_up, ptest.bound(10), interval=0.1)
    t.check(sv, "HAProxy's health checks find both porticos UP (last check "
            "L4OK)", lambda: ["show stat: %s" % {
                n: {k: r.get(k) for k in ("status", "check_status",
                                          "chkfail", "chkdown")}
                for n, r in hap.servers().items()}] + ptest.tail(
                    hap.log(), 20))
    time.sleep(max(1.5, INTER_MS * 6 / 1000.0))
    for n in names:
        c = PP.counts(stats[n])
        d = PP.delta(base[n], c) if not c.get("error") and \
            not base[n].get("error") else None
        t.check(d is not None and d["headers"].get("2", 0) >= 3 and
                not d["refused"] and not d["headers"].get("1"),
                "%s: HAProxy's health checks arrive as v2 (LOCAL) headers, "
                "accepted (at least 3 in %.1f s), none refused"
                % (n, max(1.5, INTER_MS * 6 / 1000.0)),
                lambda: ["delta %s" % (d,), "counts %s" % (c,)] +
                H.log_tail(ps[n], 10)())

    # -- 20 requests from 127.0.0.2 and 127.0.0.3 ------------------------
    sent = {}
    for i in range(20):
        src = ("127.0.0.2", "127.0.0.3")[i % 2]
        tag = "hp%02d" % i
        st, cport = through(fe, src, "http://127.0.0.1:%d/len?n=5&t=%s"
                            % (origin.port, tag))
        sent[tag] = (src, cport, st)
    want_st = {"127.0.0.2": 200, "127.0.0.3": 403 if acl else 200}
    wrong = {k: v for k, v in sent.items() if v[2] != want_st[v[0]]}
    t.check(not wrong, "20 requests through HAProxy: 127.0.0.2's answered "
            "200, 127.0.0.3's %d%s" % (want_st["127.0.0.3"],
                                       " (the acl rule no-3)" if acl else ""),
            lambda: ["wrong: %s" % wrong] + ptest.tail(hap.log(), 10))
    if acl:
        reached = [k for k, v in sent.items() if v[0] == "127.0.0.3" and
                   origin.reqs_for("t=" + k)]
        t.check(not reached, "127.0.0.3's requests never reach the origin",
                "reached: %s" % reached)
    ptest.wait_for(lambda: sum(len(tagged(jlogs[n], "hp")) for n in names)
                   >= 20, ptest.bound(5))
    recs = {n: tagged(jlogs[n], "hp") for n in names}
    t.check(all(recs[n] for n in names) and
            sum(len(recs[n]) for n in names) == 20,
            "the 20 requests are spread over both porticos (roundrobin), "
            "each logged once", "records: %s" % {
                n: sorted(recs[n]) for n in names})
    t.diag("records per portico: %s" % {n: len(recs[n]) for n in names})
    for n in names:
        bad = []
        for tag, r in sorted(recs[n].items()):
            src, cport, st = sent.get(tag, (None, None, None))
            want = dict(client=src, client_port=cport, balancer="127.0.0.1",
                        proxy_unique_id="pt-%s-%s" % (src, cport),
                        listener="lb", status=want_st.get(src))
            d = {k: (r.get(k), v) for k, v in want.items()
                 if r.get(k) != v}
            if not isinstance(r.get("balancer_port"), int) or \
                    r.get("balancer_port") == cport:
                d["balancer_port"] = (r.get("balancer_port"),
                                      "HAProxy's own port")
            if d:
                bad.append((tag, d))
        t.check(recs[n] and not bad, "%s: every record names the client's "
                "own address and port (127.0.0.2 or 127.0.0.3, never "
                "HAProxy's 127.0.0.1), balancer 127.0.0.1 and a port, and "
                "HAProxy's unique id" % n,
                lambda: ["differs (got, want): %s" % bad[:10]])

    # -- a reload under load ---------------------------------------------
    enough = threading.Event()
    t.at_exit(enough.set)

    def once(i, k):
        st, _ = through(fe, "127.0.0.2", "http://127.0.0.1:%d/len?n=100&"
                        "t=ld%d.%d" % (origin.port, i, k))
        return (st == 200), None if st == 200 else str(st)
    loop = ptest.ClientLoop(fe, threads=4, per_thread=100,
                            max_per_thread=200, until=enough,
                            max_seconds=ptest.bound(40), once=once).start()
    t.at_exit(lambda: (loop.stop_now.set(), loop.join(5)))
    ptest.wait_for(lambda: loop.total >= 60 or not loop.running(),
                   ptest.bound(10))
    p1 = ps["p1"]
    p1.hup()
    lines = p1.wait_log(r"reloaded ", timeout=ptest.bound(15))
    n_at_reload = len(tagged(jlogs["p1"], "ld"))
    total_at_reload = loop.total
    ptest.wait_for(lambda: loop.total >= total_at_reload + 100 or
                   not loop.running(), ptest.bound(20))
    enough.set()
    loop.join(ptest.bound(60))
    t.check(lines, "p1 reloaded on SIGHUP while the load ran",
            H.log_tail(p1, 15))
    t.check(loop.total > 0 and loop.good == loop.total and
            loop.total >= total_at_reload + 100,
            "a SIGHUP of p1 under load (4 threads through HAProxy): every "
            "request got 200, and 100 more were made after the reload",
            lambda: [loop.summary(), "at the reload: %d made" %
                     total_at_reload] + ptest.tail(hap.log(), 20))
    t.diag("load: %s" % loop.summary())
    ptest.wait_for(lambda: sum(len(tagged(jlogs[n], "ld")) for n in names)
                   >= loop.total, ptest.bound(5))
    ld = {n: tagged(jlogs[n], "ld") for n in names}
    t.check(len(ld["p1"]) > n_at_reload,
            "p1 served requests after its reload",
            "p1's load records: %d at the reload, %d at the end" % (
                n_at_reload, len(ld["p1"])))
    bad = [(n, tag, r.get("client"), r.get("balancer"))
           for n in names for tag, r in ld[n].items()
           if r.get("client") != "127.0.0.2" or
           r.get("balancer") != "127.0.0.1" or r.get("status") != 200]
    t.check(sum(len(ld[n]) for n in names) == loop.total and not bad,
            "every request of the load is logged once, with client "
            "127.0.0.2 and balancer 127.0.0.1, on both porticos, before and "
            "after the reload", lambda: ["%d records for %d requests" % (
                sum(len(ld[n]) for n in names), loop.total),
                "wrong: %s" % bad[:10]])

    # -- the end -----------------------------------------------------------
    sv = hap.servers()
    t.check(all(sv.get(n, {}).get("status") == "UP" and
                sv.get(n, {}).get("chkdown") == "0" for n in names),
            "both porticos are still UP in HAProxy, never marked DOWN",
            lambda: ["show stat: %s" % {
                n: {k: r.get(k) for k in ("status", "check_status",
                                          "chkfail", "chkdown", "lastchg")}
                for n, r in sv.items()}])
    for n in names:
        c = PP.counts(stats[n])
        ref = c.get("refused") or {}
        t.check(not c.get("error") and not any(ref.values()) and
                c["headers"].get("2", 0) >= 10,
                "%s: /metrics counts v2 headers and not one refusal" % n,
                lambda: ["counts %s" % (c,)] + ptest.tail(ps[n].log(), 10))
    rc = hap.stop()
    t.check(rc is not None and not ptest.alive(hap.proc.pid),
            "HAProxy stopped by its PID", "exit %s" % rc)
    H.finish(t, ps["p2"], w0["p2"], "p2: ")
    t.stop_portico(p1)


if __name__ == "__main__":
    ptest.Test("proxy_haproxy").run(main)
