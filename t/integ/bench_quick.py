#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
bench/fairness --quick --peers portico, end to end: it runs against the
built portico and bench/loadgen, writes JSON lines that parse (one per run,
with peer, scenario, concurrency and loadgen's JSON), a machine.json, and a
RESULTS.md (from bench/report.py) with, for every scenario the campaign ran
(machine.json lists them, so scenarios added to bench/fairness are covered),
portico runs without an error and a portico figure in that scenario's table
(or a row saying it is unsupported where bench/fairness declares so);
bench/fairness exits 0 (it exits 1 when a portico run had errors or a
scenario could not run for portico); it takes no more than 30 s plus 8 s per
test and leaves no process behind. Under the sanitizers it runs one
scenario per protocol and module (SANITIZER_SCENARIOS) rather than all.
A tls-resumed run in which no client came back for a second handshake
(the window too short for the load: nothing was offered, so nothing could
fail to resume), or a request run in which no request completed and
nothing failed (every connection still in its TLS handshake, on the
sanitizer build of a loaded machine), is run again longer by
bench/fairness; should every try be too short, tls-resumed checks only
that portico ran without errors and says it was not judged, and any other
scenario fails. Sessions offered and not resumed still fail.

Skipped (need "loadgen") when bench/loadgen has not been built
(PT_BUILDDIR/bench/loadgen, or LOADGEN).
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

SANITIZER_SCENARIOS = ("http-1k,http-close,connect-echo,socks-handshakes,"
                       "socks-auth,udp,idle-http,http-acl,http-accesslog,"
                       "http-limits,http-scraped,https-1k,tls-resumed,"
                       "tls-connect")
LOADGEN_KEYS = ("scenario", "rate", "errors", "latency_us", "saturated")


def session_members(sid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue
        fields = s[s.rindex(")") + 2:].split()
        if int(fields[3]) == sid:
            out.append("%s %s" % (d, s[s.index("(") + 1:s.rindex(")")]))
    return out


def main(t):
    ptest.exclusive(t)
    loadgen = os.environ.get("LOADGEN") or os.path.join(
        ptest.BUILDDIR, "bench", "loadgen")
    script = os.path.join(ptest.SRCDIR, "bench", "fairness")
    if not os.access(loadgen, os.X_OK):
        t.skip("bench/fairness --quick", "no %s yet" % loadgen,
               need="loadgen")
        return
    out = t.path("results")
    env = dict(os.environ, PORTICO=ptest.PORTICO, LOADGEN=loadgen)
    t0 = time.monotonic()
    args = [script, "--quick", "--peers", "portico", "--out", out]
    if ptest.SANITIZERS:
        # The plain build runs every scenario (the harness); here each of
        # portico's own paths once (each protocol, each module), at a
        # third of the speed: half the scenarios, half the time.
        args += ["--scenarios", SANITIZER_SCENARIOS]
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    t.at_exit(lambda: p.poll() is None and os.killpg(p.pid, 15))
    try:
        log, _ = p.communicate(timeout=ptest.bound(600))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 15)
        log, _ = p.communicate()
    took = time.monotonic() - t0
    t.check(p.returncode == 0, "bench/fairness --quick exits 0",
            lambda: ["exit %s" % p.returncode] + ptest.tail(log, 40))
    # Quick means a few seconds per test (proxy start, a 1 s run, stop): a
    # budget per test, so scenarios added to bench/fairness do not break
    # this, with room for a loaded machine.
    m = re.search(r"quick campaign, (\d+) tests", log)
    ntests = int(m.group(1)) if m else 0
    limit = ptest.bound(30 + 8 * ntests)
    t.check(m and took < limit, "it took under %.0f s for its %d tests "
            "(%.0f s)" % (limit, ntests, took), lambda: ptest.tail(log, 20))
    left = []
    for _ in range(50):
        left = session_members(p.pid)
        if not left:
            break
        time.sleep(0.1)
    t.check(not left, "no process of the campaign is left behind",
            lambda: left)

    recs, bad = [], []
    try:
        with open(os.path.join(out, "runs.jsonl")) as f:
            for line in f:
                if line.strip():
                    try:
                        recs.append(json.loads(line))
                    except ValueError:
                        bad.append(line)
    except OSError as e:
        bad.append(str(e))
    t.check(recs and not bad, "every line of runs.jsonl is JSON (%d lines)"
            % len(recs), lambda: bad[:5])
    runs = [r for r in recs if r.get("status") == "run"]
    t.check(runs and all(all(k in r for k in ("peer", "scenario",
                                               "concurrency", "run",
                                               "loadgen"))
                         for r in runs),
            "each run line has peer, scenario, concurrency, run and loadgen",
            lambda: runs[:3])
    mine = [r for r in runs if r.get("peer") == "portico"]
    with_json = [r for r in mine if isinstance(r.get("loadgen"), dict) and
                 all(k in r["loadgen"] for k in LOADGEN_KEYS)]
    t.check(mine and len(with_json) == len(mine),
            "every portico run carries loadgen's JSON (%d runs)" % len(mine),
            lambda: [r for r in mine if r not in with_json][:3])
    t.check(any(r.get("peer") == "direct" for r in runs),
            "the direct (no proxy) line was measured")
    # The auth scenarios run with the auth module of the same build, or
    # are recorded as unsupported, naming the module, where it was not
    # built (no libargon2).
    auth_so = os.path.join(os.path.dirname(ptest.PORTICO), "modules",
                           "auth", ".libs", "auth.so")
    for scen in ("http-auth", "socks-auth", "socks-auth-argon2"):
        if ptest.SANITIZERS and scen not in SANITIZER_SCENARIOS.split(","):
            continue        # not asked for in this build
        got = [r for r in recs if r.get("peer") == "portico" and
               r.get("scenario") == scen]
        if os.path.exists(auth_so):
            t.check(got and all(r.get("status") == "run" for r in got),
                    "%s: portico runs it with the auth module" % scen,
                    lambda: got)
        else:
            t.check(got and got[0].get("status") == "unsupported" and
                    "auth module" in str(got[0]),
                    "%s: recorded as unsupported, naming the auth module "
                    "that was not built" % scen, lambda: got)
    try:
        with open(os.path.join(out, "machine.json")) as f:
            m = json.load(f)
        ok = m.get("cpus") and m.get("kernel") and "portico" in m.get("versions", {})
    except (OSError, ValueError) as e:
        ok, m = False, str(e)
    t.check(ok, "machine.json records CPUs, kernel and versions",
            lambda: str(m)[:500])

    # report.py from the JSON, into a file of our own.
    md = t.path("RESULTS.md")
    r = subprocess.run([sys.executable,
                        os.path.join(ptest.SRCDIR, "bench", "report.py"),
                        out, "--output", md, "--no-charts"],
                       capture_output=True, text=True, timeout=60)
    text = ""
    try:
        with open(md) as f:
            text = f.read()
    except OSError:
        pass
    t.check(r.returncode == 0 and text, "report.py writes a RESULTS.md",
            lambda: [r.stdout, r.stderr])
    # Every scenario the quick campaign ran (machine.json lists them, so
    # scenarios added to bench/fairness are covered too): portico's runs
    # had no error, and its table in RESULTS.md has a portico figure.
    scens = m.get("scenarios") if isinstance(m, dict) else None
    t.check(isinstance(scens, list) and scens,
            "machine.json lists the scenarios the campaign ran",
            lambda: str(m)[:500])
    titles = report_titles()
    for scen in scens or []:
        t.check(*scenario_verdict(scen, recs, text, titles))


def report_titles():
    """scenario -> (the title of its section in RESULTS.md, the start of
    portico's row there), as report.py has them: a scenario shown as rows
    of another's table (report.ROWS_OF, e.g. tls-connect-ktls in
    tls-connect's) has that table's title and a labelled row."""
    sys.path.insert(0, os.path.join(ptest.SRCDIR, "bench"))
    try:
        import report
        t = {s[0]: (s[1], "| portico |") for s in report.SCENARIOS}
        for sub, (host, label) in getattr(report, "ROWS_OF", {}).items():
            if host in t:
                t[sub] = (t[host][0], "| portico, %s |" % label)
        return t
    finally:
        sys.path.pop(0)


def sections(text, title):
    """The lines of each of RESULTS.md's '## <title>' sections; a title
    with %s (one table per level, e.g. "..., 1,000 held") names several."""
    rx = re.compile("^" + re.escape(title).replace(re.escape("%s"), ".+")
                    + "$")
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("## "):
            cur = [] if rx.match(line[3:].strip()) else None
            if cur is not None:
                out.append(cur)
            continue
        if cur is not None:
            cur.append(line)
    return out


def scenario_verdict(scen, recs, text, titles):
    """(ok, description, details) for portico in scenario <scen>."""
    mine = [r for r in recs if r.get("peer") == "portico" and
            r.get("scenario") == scen]
    tries = [r for r in mine if r.get("status") == "run"]
    # A try too short to judge was run again, longer (judged_run in
    # bench/fairness): the last try stands for the run; every try's
    # errors still count.
    runs = [r for r in tries if not r.get("superseded")]
    other = [r for r in mine if r.get("status") != "run"]
    # One portico row in each of the scenario's tables (one per level).
    title, row = titles.get(scen, ("?", "| portico |"))
    tables = [[l for l in sec if l.startswith(row)]
              for sec in sections(text, title)]
    rows = [r for tab in tables for r in tab]
    desc = "%s: portico ran without errors and RESULTS.md has its figure" \
        % scen
    why = []
    if scen not in titles:
        why.append("bench/report.py has no table for %s" % scen)
    if [r for r in other if r.get("status") == "unsupported"]:
        # bench/fairness declares it (supports()): the row must say so.
        desc = "%s: recorded as unsupported for portico, and so shown" % scen
        if not (tables and all(len(tab) == 1 and "unsupported" in tab[0]
                               for tab in tables)):
            why.append("rows %r" % rows)
        return not why, desc, why
    if other:
        why.append("could not run: %r" % other)
    if not runs:
        why.append("no portico run")
    bad = [r for r in tries if (r in runs and not r.get("kept") and
                                not r.get("warmup") and
                                not r.get("inconclusive") and
                                r.get("discard") != "saturated") or
           any(((r.get("loadgen") or {}).get("errors") or {}).values())]
    if runs and all(r.get("inconclusive") for r in runs):
        # Still too short after the longer tries. tls-resumed with no
        # client back for a second handshake: resumption could not have
        # failed, so it is not passed either; what remains to check is
        # that portico served every try without an error. No request
        # completed in the longest window (2 s): that is portico's fault.
        desc = "%s: portico ran without errors; not judged after %d " \
            "tries (%s)" % (scen, len(tries), runs[-1].get("discard"))
        if scen != "tls-resumed":
            desc = "%s: portico completed a request in one of %d tries, " \
                "each window twice the last" % (scen, len(tries))
            why.append("none did; the longest window %s s" % max(
                (r.get("wall_s") or 0) for r in tries))
        why += ["run %s: loadgen errors %r" % (
            r.get("run"), (r.get("loadgen") or {}).get("errors"))
            for r in bad[:3]]
        return not why, desc, why
    for r in bad[:3]:
        why.append("run %s at %s: %s, loadgen errors %r" % (
            r.get("run"), r.get("concurrency"), r.get("discard"),
            (r.get("loadgen") or {}).get("errors")))
    # Its own table: the ratio to itself; rows in another's table (a
    # labelled row): a number in the figure's column.
    figure = bool(tables) and all(
        len(tab) == 1 and ("| 1.00 |" in tab[0] or ">=" in tab[0] or
                           "<=" in tab[0] or
                           (row != "| portico |" and re.match(
                               r"\| [^|]+ \| [0-9]", tab[0])))
        for tab in tables)
    if not figure:
        why.append("RESULTS.md rows for portico: %r" % rows)
    return not why, desc, why

if __name__ == "__main__":
    ptest.Test("bench_quick").run(main)
