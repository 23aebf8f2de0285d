#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The auth module's verification slots are bounded (threads + queue per
worker): with threads = 1 and queue = 1 and an expensive Argon2id hash
(t=4, m=64 MiB), 12 clients logging in at once on 12 connections (12
users: the same credentials would wait for one verification,
auth_coalesce.py):

- every client gets an answer: 200 for the ones verified, 503 with
  Retry-After: 1 for the ones beyond the slots, nothing else;
- some of each (the bound holds, and it is not refusing everything);
- auth_overload in the master's totals and the reason=overload failure
  lines count the 503s;
- a SOCKS5 login while the slots are busy gets an RFC 1929 failure at
  once;
- the worker has one verification thread, at nice 10, on the master's
  CPUs (the defaults thread_nice = 10, thread_cpus = "any");
- clients that send their credentials and close before the verification
  ends change nothing: the worker lives on and the next login works.
"""
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import authtest as A  # noqa: E402

N = 12


def request(origin_port, tag, cred):
    return A.basic_get(origin_port, "/ov/%s" % tag, cred)


def client(i, port, oport, barrier, out):
    s = None
    try:
        s = ptest.connect(port, timeout=ptest.bound(30))
        barrier.wait(ptest.bound(30))
        s.sendall(request(oport, i, "bob%d:b-pw" % i))
        data = b""
        while b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
        out[i] = data.partition(b"\r\n\r\n")[0].decode("latin-1")
    except (OSError, threading.BrokenBarrierError) as e:
        out[i] = "error: %r" % (e,)
    finally:
        if s is not None:
            s.close()


def socks_login(sport, user, pw):
    """The RFC 1929 status byte, or a text for a failure before it."""
    s = ptest.connect(sport, timeout=ptest.bound(10))
    try:
        s.sendall(b"\x05\x01\x02")
        if ptest.recv_exact(s, 2) != b"\x05\x02":
            return "method not accepted"
        s.sendall(b"\x01" + bytes([len(user)]) + user + bytes([len(pw)]) + pw)
        r = ptest.recv_exact(s, 2)
        return r[1] if len(r) == 2 else "short reply %r" % r
    except OSError as e:
        return "error %r" % e
    finally:
        s.close()


def auth_threads(pid):
    """[(tid, nice, cpus)] of <pid>'s threads named pt-auth."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() != "pt-auth":
                    continue
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                nice = int(f.read().rsplit(")", 1)[1].split()[16])
        except OSError:
            continue
        out.append((int(tid), nice, ptest.cpus_allowed(int(tid))))
    return out


def check_threads(t, p, worker):
    th = ptest.wait_for(lambda: auth_threads(worker), ptest.bound(5)) or []
    t.check(len(th) == 1, "threads = 1: one pt-auth thread in the worker",
            th)
    t.check(th and all(n == 10 for _, n, _ in th), "it runs at nice 10 "
            "(thread_nice's default), the worker's loop first", th)
    mc = ptest.cpus_allowed(p.pid)
    t.check(th and all(c == mc for _, _, c in th), "and on every CPU the "
            "master had (thread_cpus = \"any\")", (th, mc))


def main(t):
    why = A.missing()
    if why:
        t.skip("auth overload scenarios", why)
        return
    o = H.origin(t)
    # One hash for every user: a hash does not name its user.
    h = A.argon2id_lasting("b-pw", 0.4, m_kib=65536)
    ulist = A.write_users(t, [("bob", h)] + [("bob%d" % i, h)
                                             for i in range(N + 8)])
    port, sport = ptest.free_port(), ptest.free_port()
    lst = ('{ name = "main"; address = "127.0.0.1:%d"; protocol = "http"; },'
           '\n{ name = "socks"; address = "127.0.0.1:%d"; '
           'protocol = "socks5"; }' % (port, sport))
    p = t.portico(A.conf(t, lst, ulist, mod_extra="threads = 1; queue = 1;"
                         " cache_ttl = 0;"))
    workers = p.workers()
    check_threads(t, p, list(workers.values())[0])

    out = [None] * N
    barrier = threading.Barrier(N)
    ths = [threading.Thread(target=client, args=(i, port, o.port, barrier,
                                                 out)) for i in range(N)]
    for th in ths:
        th.start()
    # While the first logins are verified, a SOCKS5 login is refused.
    time.sleep(0.05)
    socks = socks_login(sport, b"bob%d" % N, b"b-pw")
    for th in ths:
        th.join(ptest.bound(60))
    t.check(not any(th.is_alive() for th in ths), "every client finished")
    codes = [int(m.group(1)) if m else o_ for o_, m in
             ((x, re.match(r"HTTP/1\.1 (\d{3})", x or "")) for x in out)]
    ok = codes.count(200)
    busy = [x for x in out if x and x.startswith("HTTP/1.1 503")]
    t.check(ok + len(busy) == N, "every login answered 200 or 503", codes)
    t.check(ok >= 1 and len(busy) >= 1, "some verified, some refused for "
            "overload (%d and %d)" % (ok, len(busy)), codes)
    t.check(busy and all(re.search(r"(?i)\r\nRetry-After: 1(\r\n|$)", x)
                         for x in busy), "each 503 says Retry-After: 1",
            busy[:2])
    t.check(socks not in (0, "method not accepted") and
            isinstance(socks, int), "a SOCKS5 login while the slots are "
            "busy: RFC 1929 failure status", socks)

    # Clients gone while their verification runs.
    for i in range(3):
        s = ptest.connect(port)
        s.sendall(request(o.port, "gone%d" % i, "bob:b-pw"))
        s.close()
    time.sleep(ptest.bound(1.5))
    st, head = A.curl_head(port, o.url + "/ov/after", "bob:b-pw")
    t.check(st == 200, "after clients left mid-verification, a login "
            "works", head)
    t.check(p.workers() == workers, "the worker never died",
            (workers, p.workers()))

    t.stop_portico(p)
    tot = A.totals(p)
    overl = [f for f in A.failures(p) if f.get("reason") == "overload"]
    # The clients that left may have found the slots busy too.
    want = len(busy) + (0 if isinstance(socks, str) else 1)
    t.check(want <= tot.get("auth_overload", -1) <= want + 3 and
            tot.get("auth_overload") == len(overl),
            "auth_overload and the overload lines count the refusals (%d, "
            "and up to 3 of the clients that left)" % want,
            (tot, len(overl)))

    abandoned(t, o, ulist)


def abandoned(t, o, ulist):
    """Logins whose clients leave before a thread took them are never
    verified: a burst of clients that give up does not fill the slots
    with dead Argon2id work (bench/fairness saw its next runs refused for
    overload before this)."""
    port = ptest.free_port()
    lst = '{ name = "main"; address = "127.0.0.1:%d"; protocol = "http"; }' \
        % port
    p = t.portico(A.conf(t, lst, ulist, mod_extra="threads = 1; queue = 8;"
                         " cache_ttl = 0;"), conf_name="abandoned.conf")
    # One login keeps the only thread busy (t=4, 64 MiB) ...
    out = [None]
    th = threading.Thread(target=client, args=(0, port, o.port,
                                               threading.Barrier(1), out))
    # (users bob0, then bob1..bob6 below: logins of one user would wait
    # on the first instead of queueing.)
    # Started only once it verifies (the pool thread, "pt-auth", takes
    # CPU): a fixed pause let CI's loaded machine send the six first.
    worker = p.workers()[0]
    base = A.verifier_cpu(worker)
    th.start()
    busy = A.wait_verifying(worker, base, ptest.bound(10))
    t.check(busy, "abandoned logins: the first login is being verified "
            "(its thread takes CPU)", (base, A.verifier_cpu(worker)))
    # ... while six clients log in behind it and leave, each once the
    # worker has read its login (a FIN read with the request would be a
    # half-close, whose answer is still wanted).
    left = [ptest.connect(port) for i in range(6)]
    for i, s in enumerate(left):
        s.sendall(request(o.port, "left%d" % i, "bob%d:b-pw" % (i + 1)))
    ports = [s.getsockname()[1] for s in left]
    read = ptest.wait_read(port, left, ptest.bound(10))
    for s in left:
        s.close()
    closed = ptest.wait_server_closed(port, ports, ptest.bound(10))
    # Still verifying the first once the worker closed all six: none of
    # theirs can have been taken by the thread.
    first_busy = th.is_alive()
    th.join(ptest.bound(30))
    st, head = A.curl_head(port, o.url + "/ov/after-left", "bob:b-pw")
    t.check(out[0] and out[0].startswith("HTTP/1.1 200") and st == 200,
            "abandoned logins: the waiting client and a later one are "
            "verified", (out[0], head))
    t.stop_portico(p)
    tot = A.totals(p)
    # The six queue behind the first, which the thread is verifying, and
    # are cancelled (without the cancel all eight are verified). One
    # more if the first ended before the worker saw all six close (a
    # test process held up that long on a loaded machine): the thread
    # then took the next in line while its client was still there.
    want = (2,) if first_busy else (2, 3)
    t.check(read and closed and tot.get("auth_verifications") in want and
            tot.get("auth_overload") == 0,
            "abandoned logins: six clients that left before a thread took "
            "their login cost no verification (auth_verifications 2: the "
            "first and the later one; 3 allowed only when the first had "
            "ended before the worker saw the six close; 8 without the "
            "cancel)", (read, closed, first_busy, tot))


if __name__ == "__main__":
    ptest.Test("auth_overload").run(main)
