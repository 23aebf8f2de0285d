#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A failed login costs what a verification of the userlist's costliest
entry costs, whoever the user is, so the time of a 407 does not tell a
user with cheap Argon2id parameters from a name that is not in the list
(issue 29: 4 ms against 23 ms gave the user away).

A userlist of three users with different costs: "dear" (about 0.1 s of
CPU on this machine, m=32 MiB), "near" (the same memory, two thirds of
dear's passes) and "cheap" (t=1, m=1 MiB); fail_threshold = 0 and
cache_ttl = 0, so every login is verified. Interleaved rounds of logins,
each on its own connection, timed from the request to the head of the
answer; the verification threads' CPU time read around each:

- every wrong password and the unknown user get 407, the right password
  200; /metrics counts one verification per login and one failure per
  407;
- a wrong password for cheap, and for near, takes at least 0.7 and at
  most 1.4 times what an unknown user takes (medians): neither faster
  (the user shows) nor a whole costliest verification on top of its own
  (near would then take nearly twice as long, and show as well);
- a wrong password for cheap costs the verification threads at least
  half the CPU an unknown user does (the padding is spent, not slept);
- the right password for cheap is not padded: under half an unknown
  user's time.

Medians of 15 tries and wide bounds: a shared machine bends single
timings, not the ratio of medians taken side by side.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import authtest as A  # noqa: E402
import statustest as S  # noqa: E402

ROUNDS = 15

# (label, credentials, expected status)
KINDS = (("unknown", "nobody:d-pw", 407),
         ("cheap", "cheap:wrong", 407),
         ("near", "near:wrong", 407),
         ("cheap-ok", "cheap:c-pw", 200))


def read_status(s):
    m = re.match(rb"HTTP/1\.1 (\d{3})", ptest.recv_head(s) or b"")
    return int(m.group(1)) if m else 0


def login(port, oport, worker, tag, cred):
    """(status, seconds from the request to the answer's head, the
    verification threads' CPU ticks meanwhile)."""
    s = ptest.connect(port, timeout=ptest.bound(30))
    try:
        cpu0 = A.verifier_cpu(worker)
        t0 = time.monotonic()
        s.sendall(A.basic_get(oport, "/tm/%s" % tag, cred))
        st = read_status(s)
        dt = time.monotonic() - t0
        cpu = A.verifier_cpu(worker) - cpu0
    finally:
        s.close()
    return st, dt, cpu


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else 0.0


def metrics(stport):
    samples, raw = S.scrape(stport)
    if samples is None:
        return {"error": raw}
    return {k: S.value(samples, "portico_module_auth_%s_total" % k)
            for k in ("verifications", "failures")}


def near_hash(dear):
    """An Argon2id hash with dear's memory and two thirds of its passes."""
    m = re.search(r"\$m=(\d+),t=(\d+),p=(\d+)\$", dear)
    t_cost = max(1, (2 * int(m.group(2)) + 2) // 3)
    return A.argon2id("n-pw", t_cost=t_cost, m_kib=int(m.group(1)))


def main(t):
    why = A.missing()
    if why:
        t.skip("auth timing scenario", why)
        return
    ptest.exclusive(t)
    o = H.origin(t)
    dear = A.argon2id_lasting("d-pw", 0.1)
    ulist = A.write_users(t, [("dear", dear), ("near", near_hash(dear)),
                              ("cheap", A.argon2id("c-pw", 1, 1024))])
    port, stport = ptest.free_port(), ptest.free_port()
    lst = ('{ address = "127.0.0.1:%d"; protocol = "http"; },\n'
           '{ address = "127.0.0.1:%d"; protocol = "status"; '
           'auth = { required = false; }; }' % (port, stport))
    p = t.portico(A.conf(t, lst, ulist, mod_extra="fail_threshold = 0; "
                         "cache_ttl = 0;"))
    worker = p.workers()[0]
    t.diag("dear %s" % dear.split("$")[3])
    # One round unmeasured: first touches of memory, the first samples.
    for label, cred, _ in KINDS:
        login(port, o.port, worker, "warm-" + label, cred)
    m0 = metrics(stport)
    got = {k[0]: [] for k in KINDS}
    bad = []
    for i in range(ROUNDS):
        for label, cred, want in KINDS:
            st, dt, cpu = login(port, o.port, worker, "%s%d" % (label, i),
                                cred)
            got[label].append((dt, cpu))
            if st != want:
                bad.append((label, i, st))
    m1 = metrics(stport)
    t.check(not bad, "every wrong password and the unknown user: 407; the "
            "right password: 200", bad)
    nfail = 3 * ROUNDS
    t.check(m1.get("verifications") == m0.get("verifications", -1) +
            4 * ROUNDS and m1.get("failures") == m0.get("failures", -1) +
            nfail, "/metrics: one verification per login, one failure per "
            "407 (nothing cached, nothing coalesced, nothing throttled)",
            (m0, m1))
    med = {k: median([x[0] for x in v]) for k, v in got.items()}
    cpu = {k: sum(x[1] for x in v) for k, v in got.items()}
    t.diag("medians (ms): %s; verifier CPU (ticks): %s" % (
        ", ".join("%s %.1f" % (k, v * 1e3) for k, v in med.items()),
        ", ".join("%s %d" % kv for kv in cpu.items())))
    u = med["unknown"]
    for k in ("cheap", "near"):
        t.check(med[k] >= 0.7 * u, "a wrong password for %s takes at "
                "least 0.7 x what an unknown user takes (medians)" % k,
                (med[k], u))
        t.check(med[k] <= 1.4 * u, "and at most 1.4 x: not a whole "
                "costliest verification on top of its own", (med[k], u))
    t.check(cpu["cheap"] >= 0.5 * cpu["unknown"], "the verification "
            "threads spend at least half the CPU on a wrong password for "
            "cheap as on an unknown user (ticks over all tries)", cpu)
    t.check(med["cheap-ok"] < 0.5 * u, "the right password for cheap is "
            "not padded: under half an unknown user's time",
            (med["cheap-ok"], u))
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("auth_timing").run(main)
