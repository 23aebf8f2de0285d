#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Single-flight in the auth module: logins with the same credentials that
arrive while those credentials are being verified in the worker wait for
that verification instead of running their own (counted as
auth_coalesced). One worker, threads = 1: a "blocker" login of another
user (an Argon2id hash scaled to ~0.3 s of this machine's CPU) holds the
only thread, so each burst of 20 logins sent meanwhile is in the worker
together.
Counters are read on the status listener's /metrics.

- 20 HTTP logins bob:b-pw: 20 x 200, 1 verification for them, 19
  coalesced; the cache was filled (the next login is a hit);
- 20 SOCKS5 logins carol:c-pw: 20 x status 0 and CONNECT succeeded,
  1 verification, 19 coalesced;
- the client that started a verification leaves, with 6 of the 19 that
  wait on it: the other 13 are served by that verification (it ran for
  them), the worker lives on (same pid);
- everyone of a burst leaves before the thread took the job: it is
  never verified (cancelled), and the next login of that user works.
  Shown under any timing (Proxy.abandoned): three blockers hold the
  thread, the worker has read every login before its client closes,
  and an attempt counts only if the second blocker was still unanswered
  once the worker had closed every burst connection (else another user
  is tried, three at most);
- SOCKS5: the starter and 3 of 9 waiters leave, the 6 others log in;
  then everyone of a SOCKS5 burst leaves (FIN, no request sent) before
  the thread took the job: never verified either (the core closes a
  SOCKS client gone while its login is judged, worker/socks.c);
- no connection that left is resumed twice or given a failure line;
- a reload while 10 logins wait on one verification: the old worker
  serves them all and exits by itself, the new generation logs in;
- 20 HTTP logins bob:wrong: 20 x 407 and 20 failure lines; 20 SOCKS5
  carol:wrong: 20 x RFC 1929 status 1 and 20 failure lines; each is an
  attempt of its own source for the throttle (fail_threshold = 40: the
  right password from 127.0.0.1 is now refused, reason=throttled).

The helper backend (helper = { command = ...; }) the same way: a helper
of the test's own that takes 0.3 s to answer sees one request for 20
good logins (all 200), and one for 20 wrong ones (20 x 407, 20 failure
lines).
"""
import os
import re
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import authtest as A  # noqa: E402
import statustest as S  # noqa: E402
import sockstest as K  # noqa: E402

N = 20


def http_req(oport, tag, cred):
    return A.basic_get(oport, "/co/%s" % tag, cred)


def read_head(s):
    """The status code of the response on <s>, or an error text."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError as e:
        return "error %r" % (e,)
    m = re.match(rb"HTTP/1\.1 (\d{3})", data)
    return int(m.group(1)) if m else "no status in %r" % data[:60]


class Proxy:
    def __init__(self, t, o, p, port, sport, stport):
        self.t, self.o, self.p = t, o, p
        self.port, self.sport, self.stport = port, sport, stport
        self.nblock = 0

    def metrics(self):
        samples, raw = S.scrape(self.stport)
        if samples is None:
            return {"error": raw}
        out = {}
        for name in ("verifications", "coalesced", "cache_hits",
                     "failures"):
            v = S.value(samples, "portico_module_auth_%s_total" % name)
            out[name] = int(v) if v is not None else None
        return out

    def blocker(self, queued=False):
        """A login of a new slow user; its socket. It takes the only
        thread (returns once the thread verifies), or with <queued> waits
        behind what the thread has (returns once the worker read it, so
        it queued before anything sent after)."""
        self.nblock += 1
        worker = self.p.workers()[0]
        base = A.verifier_cpu(worker)
        s = ptest.connect(self.port, timeout=ptest.bound(20))
        s.sendall(http_req(self.o.port, "blk%d" % self.nblock,
                           "slow%d:s-pw" % self.nblock))
        if queued:
            ptest.wait_read(self.port, [s], ptest.bound(10))
        else:
            # The burst comes once the thread verifies this one (a burst
            # first would find the thread idle; a fixed pause was too
            # short for a sanitized build on a loaded machine).
            A.wait_verifying(worker, base, ptest.bound(10))
        return s

    def abandoned(self, port, start, send):
        """A burst of logins of one user on listener <port>, all gone
        before the thread took their job: (verifications it cost,
        coalesced, the four blockers' status codes), or None when this
        attempt could not show it.

        <start>() opens the burst's clients (sockets, or objects with
        .sock), <send>(clients) sends their logins. Arranged so that the
        thread cannot take the burst's job before the worker saw every
        client leave, whatever the machine's speed: a blocker on the
        thread and two queued behind it hold the thread for three slow
        verifications; the logins are read by the worker before their
        clients close (a FIN read with a request is a half-close, whose
        answer is still wanted); and the attempt counts only if the
        second blocker is still unanswered once the worker has closed its
        end of every burst connection (then the thread is on the first
        or second, or has just taken the third: never the burst's). A
        fourth blocker, queued last, is answered only after all the
        thread had left to do, so a verification of the burst would be
        counted by then."""
        m0 = self.metrics()
        t0 = time.monotonic()
        cs = start()
        raw = [getattr(c, "sock", c) for c in cs]
        cports = [r.getsockname()[1] for r in raw]
        bs = [self.blocker(), self.blocker(queued=True),
              self.blocker(queued=True)]
        send(cs)
        read = ptest.wait_read(port, raw, ptest.bound(10))
        for c in cs:
            c.close()
        closed = ptest.wait_server_closed(port, cports, ptest.bound(10))
        early = select.select([bs[1]], [], [], 0)[0] != []
        t_closed = time.monotonic() - t0
        bs.append(self.blocker(queued=True))
        heads = [read_head(b) for b in bs]
        for b in bs:
            b.close()
        m1 = self.metrics()
        if not (read and closed) or early:
            self.t.diag("abandoned burst not arranged (logins read %s, "
                        "closes seen %s, second blocker answered before "
                        "%s; blockers %r, %.2f s): again"
                        % (read, closed, early, heads, t_closed))
            return None
        return (m1.get("verifications") - m0.get("verifications"),
                m1.get("coalesced") - (m0.get("coalesced") or 0), heads)

    def http_socks(self, n):
        return [ptest.connect(self.port, timeout=ptest.bound(20))
                for _ in range(n)]

    def http_burst(self, cred, tag):
        """N HTTP logins sent together behind a blocker: status codes."""
        socks = self.http_socks(N)
        b = self.blocker()
        for i, s in enumerate(socks):
            s.sendall(http_req(self.o.port, "%s%d" % (tag, i), cred))
        codes = [read_head(s) for s in socks]
        blk = read_head(b)
        for s in socks + [b]:
            s.close()
        self.t.check(blk == 200, "the blocker login is served", blk)
        return codes

    def socks_logins(self, n, cred):
        """<n> SOCKS5 clients choose username/password, a blocker takes
        the thread, then each sends <cred> (RFC 1929 bytes), the first
        20 ms ahead so it starts the verification. (clients, the methods
        chosen, the blocker's socket)."""
        cs = [K.Client.to(self.sport, timeout=ptest.bound(20))
              for _ in range(n)]
        for c in cs:
            c.send(b"\x05\x01\x02")
        methods = [c.read_exact(2) for c in cs]
        b = self.blocker()
        for i, c in enumerate(cs):
            c.send(cred)
            if i == 0:
                time.sleep(0.02)
        ptest.wait_read(self.sport, [c.sock for c in cs], ptest.bound(10))
        return cs, methods, b

    def socks_burst(self, user, pw):
        """N SOCKS5 logins sent together behind a blocker: [(RFC 1929
        status, CONNECT reply code or None)]."""
        cs = [K.Client.to(self.sport, timeout=ptest.bound(20))
              for _ in range(N)]
        out = []
        try:
            for c in cs:
                c.send(b"\x05\x01\x02")
            for c in cs:
                if c.read_exact(2) != b"\x05\x02":
                    raise H.BadInput("method 0x02 not chosen")
            b = self.blocker()
            for c in cs:
                c.send(b"\x01" + bytes([len(user)]) + user +
                       bytes([len(pw)]) + pw)
            for c in cs:
                try:
                    st = c.userpass(None, None, send=False)[1]
                except (OSError, H.Closed) as e:
                    out.append(("error %r" % (e,), None))
                    continue
                rep = None
                if st == 0:
                    try:
                        rep = c.request("127.0.0.1", self.o.port).rep
                    except (OSError, H.Closed, H.BadInput) as e:
                        rep = "error %r" % (e,)
                out.append((st, rep))
            blk = read_head(b)
            b.close()
            self.t.check(blk == 200, "the blocker login is served", blk)
        finally:
            for c in cs:
                c.close()
        return out


def abandon(px, port, user, start, send):
    """Proxy.abandoned with <user>, then <user>1 and <user>2 while an
    attempt could not show it: (the user of the attempt that did, its
    result), or (None, None)."""
    for u in (user, user + "1", user + "2"):
        got = px.abandoned(port, start, lambda cs, u=u: send(cs, u))
        if got is not None:
            return u, got
    return None, None


def good_bursts(t, px):
    m0 = px.metrics()
    codes = px.http_burst("bob:b-pw", "good")
    m1 = px.metrics()
    t.check(codes == [200] * N, "20 HTTP logins with the same good "
            "credentials at once: all 200", codes)
    t.check(m1.get("verifications") == m0.get("verifications", 0) + 2 and
            m1.get("coalesced") == 19, "one verification for the 20 (and "
            "one for the blocker), 19 coalesced (auth_coalesced on "
            "/metrics)", (m0, m1))
    st, head = A.curl_head(px.port, px.o.url + "/co/after", "bob:b-pw")
    m2 = px.metrics()
    t.check(st == 200 and m2.get("cache_hits") == 1 and
            m2.get("verifications") == m1.get("verifications"),
            "the cache was filled: the next login is a hit", (st, m1, m2))

    res = px.socks_burst(b"carol", b"c-pw")
    m3 = px.metrics()
    t.check(res == [(0, 0)] * N, "20 SOCKS5 logins with the same good "
            "credentials at once: all RFC 1929 status 0, CONNECT 0x00",
            res)
    t.check(m3.get("verifications") == m2.get("verifications") + 2 and
            m3.get("coalesced") == 38, "SOCKS5: one verification for the "
            "20, 19 more coalesced", (m2, m3))


def leaving(t, px, workers):
    """The starter and 6 waiters leave; then a whole burst leaves."""
    m0 = px.metrics()
    socks = px.http_socks(N)
    b = px.blocker()
    socks[0].sendall(http_req(px.o.port, "lead", "dave:d-pw"))
    time.sleep(0.02)
    for i, s in enumerate(socks[1:], 1):
        s.sendall(http_req(px.o.port, "w%d" % i, "dave:d-pw"))
    ptest.wait_read(px.port, socks, ptest.bound(10))
    for s in socks[:7]:
        s.close()
    codes = [read_head(s) for s in socks[7:]]
    blk = read_head(b)
    for s in socks[7:] + [b]:
        s.close()
    m1 = px.metrics()
    t.check(blk == 200 and codes == [200] * (N - 7), "the starter and 6 "
            "waiters left while they waited: the 13 others are served",
            (blk, codes))
    t.check(m1.get("verifications") == m0.get("verifications") + 2 and
            m1.get("coalesced") == (m0.get("coalesced") or 0) + 19,
            "by the starter's verification, which ran for them (one, "
            "19 coalesced)", (m0, m1))

    # All of a burst leave before the thread took their job.
    def http_send(socks, user):
        for i, s in enumerate(socks):
            s.sendall(http_req(px.o.port, "gone%d" % i, user + ":e-pw"))

    user, got = abandon(px, px.port, "erin", lambda: px.http_socks(6),
                        http_send)
    t.check(got == (4, 5, [200] * 4), "six logins of one user, all "
            "gone before the thread took theirs: never verified (only the "
            "four blockers are), 5 coalesced", (user, got))
    st, head = A.curl_head(px.port, px.o.url + "/co/erin",
                           (user or "erin") + ":e-pw")
    t.check(st == 200, "the next login of that user works", head)

    # SOCKS5: the starter and 3 of 9 waiters leave.
    cs, methods, b = px.socks_logins(10, b"\x01\x04gina\x04g-pw")
    for c in cs[:4]:
        c.close()
    st = []
    for c in cs[4:]:
        try:
            st.append(c.userpass(None, None, send=False)[1])
        except (OSError, H.Closed) as e:
            st.append("error %r" % (e,))
        c.close()
    blk = read_head(b)
    b.close()
    t.check(methods == [b"\x05\x02"] * 10 and blk == 200 and
            st == [0] * 6, "SOCKS5: the starter and 3 waiters left: the 6 "
            "others get status 0", (methods, blk, st))

    # SOCKS5: all of a burst leave (FIN, no request) before the thread
    # took their job.
    methods = []

    def socks_start():
        cs = [K.Client.to(px.sport, timeout=ptest.bound(20))
              for _ in range(6)]
        for c in cs:
            c.send(b"\x05\x01\x02")
        methods.extend(c.read_exact(2) for c in cs)
        return cs

    def socks_send(cs, user):
        for c in cs:
            c.send(b"\x01" + bytes([len(user)]) + user.encode() +
                   b"\x04i-pw")

    user, got = abandon(px, px.sport, "ivan", socks_start, socks_send)
    t.check(set(methods) == {b"\x05\x02"} and got == (4, 5, [200] * 4),
            "six SOCKS5 logins of one user, all gone (FIN, no request "
            "sent) before the thread took theirs: never verified (only "
            "the four blockers are), 5 coalesced", (user, methods, got))
    t.check(px.p.workers() == workers, "the worker never died",
            (workers, px.p.workers()))
    bad = px.p.log_lines(r"pt_conn_resume without AGAIN|auth: failure "
                         r".*user=\"(dave|erin\d?|gina|ivan\d?)\"")
    t.check(not bad, "no connection that left was resumed again or "
            "answered (no stray resume, no failure line)", bad)


def reload(t, px):
    """SIGHUP while logins wait: the draining worker still serves them."""
    gen = px.p.workers()
    socks = px.http_socks(10)
    b = px.blocker()
    for i, s in enumerate(socks):
        s.sendall(http_req(px.o.port, "rl%d" % i, "frank:f-pw"))
    time.sleep(0.05)
    px.p.hup()
    codes = [read_head(s) for s in socks]
    blk = read_head(b)
    for s in socks + [b]:
        s.close()
    t.check(blk == 200 and codes == [200] * 10, "a reload while 10 logins "
            "wait on one verification: all served", (blk, codes))
    ok = ptest.wait_for(lambda: px.p.workers() and px.p.workers() != gen
                        and not px.p.draining(), ptest.bound(10))
    t.check(ok, "the old worker exited by itself, a new one runs",
            (gen, px.p.workers(), px.p.draining()))
    st, head = A.curl_head(px.port, px.o.url + "/co/rl", "frank:f-pw")
    t.check(st == 200, "the new generation logs frank in", head)


def bad_bursts(t, px):
    m0 = px.metrics()
    codes = px.http_burst("bob:wrong", "bad")
    t.check(codes == [407] * N, "20 HTTP logins with the same wrong "
            "password at once: 20 x 407", codes)
    res = px.socks_burst(b"carol", b"wrong")
    t.check(res == [(1, None)] * N, "20 SOCKS5 logins with the same wrong "
            "password: 20 x RFC 1929 status 1", res)
    m1 = px.metrics()
    t.check(m1.get("failures") == m0.get("failures") + 2 * N and
            m1.get("coalesced") ==
            (m0.get("coalesced") or 0) + 2 * (N - 1),
            "auth_failures counts each of the 40 refusals, 38 of them "
            "coalesced", (m0, m1))
    f = A.failures(px.p)
    hb = [x for x in f if x.get("user") == "bob" and x.get("proto") ==
          "http" and x.get("reason") == "bad-password" and
          x.get("client") == "127.0.0.1"]
    sb = [x for x in f if x.get("user") == "carol" and x.get("proto") ==
          "socks5" and x.get("reason") == "bad-password"]
    t.check(len(hb) == N and len(sb) == N, "a failure line for each: 20 "
            "http user=bob, 20 socks5 user=carol", (len(hb), len(sb), f[:3]))
    # fail_threshold = 40: each waiter was an attempt from 127.0.0.1.
    st, head = A.curl_head(px.port, px.o.url + "/co/thr", "bob:b-pw")
    last = A.failures(px.p)[-1:]
    t.check(st == 407 and last and last[0].get("reason") == "throttled",
            "the throttle counted 40 failures for 127.0.0.1: the right "
            "password is now refused (reason=throttled)", (st, last))


# Plain protocol: "user password" in, OK or ERR out, after 0.3 s; each
# request is appended to the file named by argv[1].
HELPER = r'''
import sys, time, urllib.parse
for line in sys.stdin:
    f = line.rstrip("\n").split(" ")
    with open(sys.argv[1], "a") as log:
        log.write(line)
    time.sleep(0.3)
    ok = urllib.parse.unquote(f[1] if len(f) > 1 else "") == "h-pw"
    sys.stdout.write("OK\n" if ok else "ERR bad password\n")
    sys.stdout.flush()
'''


def helper(t, o):
    script, seen = t.path("helper.py"), t.path("helper.seen")
    ptest.write_file(script, HELPER)
    port, stport = ptest.free_port(), ptest.free_port()
    lst = ('{ address = "127.0.0.1:%d"; protocol = "http"; },\n'
           '{ address = "127.0.0.1:%d"; protocol = "status"; }'
           % (port, stport))
    conf = A.conf(t, lst, "-", mod_extra='helper = { command = "%s %s %s"; '
                  'children = 1; timeout = 10; };'
                  % (sys.executable, script, seen))
    conf = conf.replace('userlist = "-"; ', "")
    # A helper program that does not exist fails -t, with its line:
    # not every login failing once the proxy runs.
    bad = conf.replace('command = "%s ' % sys.executable,
                       'command = "/nonexistent/helper ')
    bpath = ptest.write_conf(t.tmp, bad, "helper-missing.conf")
    r = ptest.run_portico(["-t", "-c", bpath])
    t.check(r.returncode == 1 and "helper-missing.conf:" in r.stderr and
            "/nonexistent/helper" in r.stderr and
            "no such executable" in r.stderr,
            "portico -t: a helper command naming no program fails, "
            "naming it", r.stderr)
    t0 = time.monotonic()
    p = t.portico(conf.replace("/error.log", "/error-helper.log"),
                  conf_name="helper.conf")
    t.diag("helper: started in %.1f s" % (time.monotonic() - t0))
    px = Proxy(t, o, p, port, None, stport)

    def requests():
        try:
            with open(seen) as f:
                return f.read().splitlines()
        except OSError:
            return []

    for cred, want, label in (("hank:h-pw", 200, "good"),
                              ("hank:bad", 407, "wrong")):
        m0 = px.metrics()
        socks = px.http_socks(N)
        for i, s in enumerate(socks):
            s.sendall(http_req(o.port, "h%s%d" % (label, i), cred))
        codes = [read_head(s) for s in socks]
        for s in socks:
            s.close()
        m1 = px.metrics()
        t.check(codes == [want] * N, "helper: 20 %s logins at once: 20 x "
                "%d" % (label, want), codes)
        t.check(len(requests()) == (1 if label == "good" else 2) and
                m1.get("coalesced") == (m0.get("coalesced") or 0) + 19,
                "helper: the helper was asked once for the 20, 19 "
                "coalesced", (requests(), m0, m1))
    f = [x for x in A.failures(p) if x.get("user") == "hank"]
    t.check(len(f) == N and all(x.get("reason") == "bad-password"
                                for x in f), "helper: a failure line for "
            "each wrong login", (len(f), f[:2]))
    t.stop_portico(p)


def main(t):
    why = A.missing()
    if why:
        t.skip("auth single-flight scenarios", why)
        return
    t0 = time.monotonic()
    o = H.origin(t)
    slow = A.argon2id_lasting("s-pw", 0.3)
    users = [("slow%d" % i, slow) for i in range(1, 48)]
    for u in ("bob", "carol", "dave", "erin", "erin1", "erin2", "frank",
              "gina", "ivan", "ivan1", "ivan2"):
        users.append((u, A.argon2id(u[0] + "-pw")))
    ulist = A.write_users(t, users)
    port, sport, stport = (ptest.free_port(), ptest.free_port(),
                           ptest.free_port())
    lst = ('{ name = "main"; address = "127.0.0.1:%d"; protocol = "http"; },'
           '\n{ name = "socks"; address = "127.0.0.1:%d"; '
           'protocol = "socks5"; },\n{ address = "127.0.0.1:%d"; '
           'protocol = "status"; auth = { required = false; }; }'
           % (port, sport, stport))
    p = t.portico(A.conf(t, lst, ulist, mod_extra="threads = 1; "
                         "fail_threshold = 40; fail_window = 60; "
                         "fail_penalty = 60;"))
    workers = p.workers()
    px = Proxy(t, o, p, port, sport, stport)
    good_bursts(t, px)
    leaving(t, px, workers)
    reload(t, px)
    bad_bursts(t, px)
    t.stop_portico(p)
    t.diag("threads: %.1f s" % (time.monotonic() - t0))
    helper(t, o)
    t.diag("wall time %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    ptest.Test("auth_coalesce").run(main)
