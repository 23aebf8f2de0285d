#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
bench/report.py: turns one bench/fairness campaign into Markdown and charts.

    bench/report.py DIR [DIR...] [--output FILE] [--no-charts]
                    [--side-by-side SBSDIR] [--haproxy-chain CHAINDIR]
                    [--parent-chain PCDIR] [--h2-pageload PLDIR]
                    [--h2 H2DIR] [--h2-floor H2FDIR]

DIR is a results directory written by bench/fairness (runs.jsonl, one JSON
line per run or per test that could not run, and machine.json). With
several, each scenario's table comes from the last DIR that has it (rows
of different campaigns are never mixed in one table). Writes FILE
(default: RESULTS.md beside this script, i.e. bench/RESULTS.md) with one
table per scenario: per proxy, the median of the kept runs at the best
concurrency level whose runs were all kept, the min-max of those runs, the
ratio to portico, the level, latency, and why a proxy has no figure
(unsupported, not installed, did not start, errors, load generator
saturated). Bar charts (SVG and PNG, one per scenario) go to DIR/charts/
when gnuplot is installed, and are linked from FILE.

With --side-by-side (once per campaign, oldest first), SBSDIR is a
bench/sidebyside results directory: its SIDEBYSIDE.md (the module costs
measured with both instances on one CPU at once) is added as a section at
the end. With --haproxy-chain CHAINDIR, a bench/haproxy-chain results
directory's CHAIN.md (portico behind HAProxy) is added the same way,
after them; with --parent-chain PCDIR, a bench/parent-chain results
directory's PARENT-CHAIN.md (portico through a parent portico, against
3proxy's chain), after them; with --h2-pageload PLDIR, a
bench/h2-pageload results directory's H2-PAGELOAD.md (Chromium's page
loads through the HTTPS proxy, HTTP/2 against HTTP/1.1), after them;
with --h2 H2DIR, a bench/h2-bench results directory's H2.md (HTTP/2
to portico against HTTP/1.1 and nghttpx's chain), after them; with
--h2-floor H2FDIR, a bench/h2-floor results directory's H2-FLOOR.md
(what HTTP/2 framing costs a tunnel's bytes at least), last.

The tables are generated: never edit FILE by hand, rerun this script.
Python 3 standard library only.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_relay  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# scenario -> (title, unit, value function name, higher is better, what)
SCENARIOS = [
    ("http-1k", "HTTP GET 1 KiB, keep-alive", "requests/s", "rate", True,
     "GET /bytes/1024 through the proxy, absolute-form, keep-alive where "
     "the proxy allows it"),
    ("http-100k", "HTTP GET 100 KiB, keep-alive", "MiB/s", "down", True,
     "GET /bytes/102400, body bytes received per second"),
    ("http-1m", "HTTP GET 1 MiB, keep-alive", "MiB/s", "down", True,
     "GET /bytes/1048576, body bytes received per second"),
    ("http-close", "HTTP GET 1 KiB, new connection per request",
     "requests/s", "rate", True,
     "connect, one GET /bytes/1024, close; repeated"),
    ("http-auth", "HTTP GET 1 KiB with Basic auth", "requests/s", "rate",
     True, "as http-1k with Proxy-Authorization: Basic on every request"),
    ("http-acl", "HTTP GET 1 KiB through the ACL module", "requests/s",
     "rate", True, "as http-1k through the acl module: 100 regex host "
     "rules, a host_file of 1,000,000 names, 100 CIDR rules on the "
     "destination, then the rule that allows the origin, so every rule is "
     "tried (portico only: set against portico's own http-1k of the same "
     "campaign below the table)"),
    ("http-accesslog", "HTTP GET 1 KiB with the access log", "requests/s",
     "rate", True, "as http-1k with the accesslog module writing every "
     "request as a JSON line to a file and as a squid line to syslog (a "
     "UNIX datagram socket read on the load CPU) (portico only: set against "
     "portico's own http-1k of the same campaign below the table)"),
    ("http-scraped", "HTTP GET 1 KiB while /metrics is scraped",
     "requests/s", "rate", True, "as http-1k with a status listener that a "
     "client on the load CPU scrapes (GET /metrics, kept alive) every 100 "
     "ms (portico only: set against portico's own http-1k of the same "
     "campaign below the table)"),
    ("http-limits", "HTTP GET 1 KiB through the limits module",
     "requests/s", "rate", True, "as http-1k through the limits module "
     "with a class on every request, keyed by source address "
     "(max_connections, request_rate, connection_rate), far above the "
     "load so nothing is refused (portico only: set against portico's own "
     "http-1k of the same campaign below the table)"),
    ("connect", "HTTP CONNECT tunnel throughput", "MiB/s", "both", True,
     "CONNECT to a TCP sink, 16 KiB writes, bytes per second "
     "(upload: see FAIRNESS.md)"),
    ("socks-handshakes", "SOCKS5 handshakes", "setups/s", "rate", True,
     "connect, no-auth greeting, CONNECT to a target that accepts, reply, "
     "close"),
    ("socks-auth", "SOCKS5 handshakes with username/password", "setups/s",
     "rate", True, "as socks-handshakes with RFC 1929 username/password "
     "(portico: auth module, Argon2id userlist, credential cache on)"),
    ("socks-auth-argon2", "SOCKS5 handshakes, Argon2id verified every time",
     "setups/s", "rate", True, "as socks-auth with portico's credential "
     "cache off (cache_ttl = 0): one Argon2id verification (m=19456 t=2 "
     "p=1) per setup, on the module's threads"),
    ("socks-tunnel", "SOCKS5 tunnel throughput", "MiB/s", "both", True,
     "SOCKS5 CONNECT to a TCP sink, 16 KiB writes, bytes per second "
     "(upload: see FAIRNESS.md)"),
    ("connect-echo", "HTTP CONNECT tunnel both ways through an echo",
     "MiB/s", "both", True,
     "CONNECT to a TCP echo, 16 KiB writes read back, bytes per second "
     "up plus down; direct is the ceiling"),
    ("socks-echo", "SOCKS5 tunnel both ways through an echo", "MiB/s",
     "both", True,
     "SOCKS5 CONNECT to a TCP echo, 16 KiB writes read back, bytes per "
     "second up plus down; direct is the ceiling"),
    ("connect-down", "HTTP CONNECT tunnel download", "MiB/s", "down", True,
     "CONNECT to a target that sends without end, the client only reads"),
    ("socks-down", "SOCKS5 tunnel download", "MiB/s", "down", True,
     "SOCKS5 CONNECT to a target that sends without end, the client only "
     "reads"),
    ("tls-handshakes", "TLS full handshakes (HTTPS proxy)", "handshakes/s",
     "rate", True, "connect, a full TLS 1.3 handshake with the proxy "
     "(TLS_AES_128_GCM_SHA256, X25519, the campaign's ECDSA P-256 "
     "certificate), one GET /bytes/1024 inside it, close; repeated"),
    ("tls-resumed", "TLS resumed handshakes (HTTPS proxy)", "handshakes/s",
     "rate", True, "as tls-handshakes, each client resuming its last "
     "session with the ticket the proxy gave it (runs where fewer than 90% "
     "of the handshakes that offered a ticket resumed are thrown away)"),
    ("https-1k", "HTTPS proxy GET 1 KiB, kept-alive TLS", "requests/s",
     "rate", True, "as http-1k inside kept-alive TLS 1.3 connections to "
     "the proxy (TLS_AES_128_GCM_SHA256)"),
    ("tls-connect", "CONNECT tunnel throughput inside TLS", "MiB/s", "both",
     True, "CONNECT inside TLS 1.3 to the proxy (TLS_AES_128_GCM_SHA256), "
     "16 KiB writes through the tunnel into a TCP sink: the proxy decrypts "
     "and relays; rows marked kTLS are portico with ktls = true, the kernel "
     "doing the record layer"),
    ("udp", "SOCKS5 UDP ASSOCIATE, 512 B datagrams", "datagrams/s", "rate",
     True, "one association, a window of datagrams in flight to a UDP echo "
     "(concurrency = window)"),
    # "pss": one table per level (the title takes it), the figure is the
    # growth of PSS while the connections are held, per connection.
    ("idle-http", "Memory per idle HTTP client connection, %s held",
     "KiB/conn", "pss", False, "client connections to the HTTP proxy that "
     "send nothing; PSS of the proxy and all its children while they are "
     "held, minus before, per connection (lower is better)"),
    ("idle-connect", "Memory per idle CONNECT tunnel, %s held", "KiB/conn",
     "pss", False, "CONNECT tunnels to an echo, idle once up; PSS growth "
     "of the proxy and all its children per tunnel (lower is better)"),
    ("idle-socks", "Memory per idle SOCKS5 tunnel, %s held", "KiB/conn",
     "pss", False, "SOCKS5 CONNECT tunnels to an echo, idle once up; PSS "
     "growth of the proxy and all its children per tunnel (lower is "
     "better)"),
]
# Rate scenarios whose table also shows the figure per CPU-second of the
# proxy (TLS work is CPU work: on a shared machine it is the steadier
# figure, and the clients are often the limit of the per-second one).
PER_CPU_RATE = ("tls-handshakes", "tls-resumed", "https-1k")
# Scenarios shown as extra rows of another's table: scenario -> (table,
# label added to the peer's name).
ROWS_OF = {"tls-connect-ktls": ("tls-connect", "kTLS")}
PEER_ORDER = ["portico", "direct", "tinyproxy", "squid", "privoxy", "dante",
              "microsocks", "portico-copy", "portico-splice", "floor"]


def value(rec, kind):
    lg = rec.get("loadgen") or {}
    try:
        if kind == "rate":
            return float(lg["rate"])
        if kind == "down":
            return float(lg["mib_s_down"])
        if kind == "both":
            return float(lg.get("mib_s_up", 0)) + float(lg.get("mib_s_down", 0))
        if kind == "rss":
            return rec["rss_kib"] / 1024.0
        if kind == "pss":
            # Campaigns before pss_base_kib was recorded: RSS growth.
            c = float(rec["concurrency"])
            if rec.get("pss_base_kib") is not None:
                return (rec["pss_kib"] - rec["pss_base_kib"]) / c
            return (rec["rss_kib"] - rec["rss_base_kib"]) / c
    except (KeyError, TypeError, ValueError):
        return None
    return None


def per_cpu(rec, kind):
    """MiB moved (or, in PER_CPU_RATE scenarios, requests done) per
    CPU-second of the proxy over the run (bench/fairness records the
    proxy's CPU time and the run's wall time), or None."""
    v = value(rec, kind)
    cpu, wall = rec.get("proxy_cpu_s"), rec.get("wall_s")
    if kind == "rate" and rec.get("scenario") not in PER_CPU_RATE:
        return None
    if v is None or not cpu or not wall or kind not in ("down", "both",
                                                        "rate"):
        return None
    return v * wall / cpu


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "KiB/conn":
        return "%.2f" % v if v < 10 else "%.1f" % v
    if unit in ("MiB/s", "MiB"):
        return "%.1f" % v if v < 100 else "%.0f" % v
    return "%.0f" % v


def load(d):
    recs = []
    with open(os.path.join(d, "runs.jsonl")) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                recs.append(json.loads(line))
            except ValueError:
                sys.exit("report.py: %s/runs.jsonl line %d is not JSON" % (d, n))
    try:
        with open(os.path.join(d, "machine.json")) as f:
            machine = json.load(f)
    except (OSError, ValueError):
        machine = {}
    return recs, machine


def summarise(recs, kind, higher):
    """One peer, one scenario -> dict with the figure or why there is none."""
    status = [r for r in recs if r.get("status") != "run"]
    # A superseded run was too short to judge and was run again, longer
    # (bench/fairness judged_run): the longer one stands for it.
    runs = [r for r in recs if r.get("status") == "run" and
            not r.get("warmup") and not r.get("superseded")]
    if not runs:
        if status:
            r = status[0]
            why = r.get("status", "?")
            if r.get("reason") and why != "not installed":
                why += " (%s)" % r["reason"].strip()
            return {"why": why}
        return None
    levels = {}
    for r in runs:
        levels.setdefault(r.get("concurrency"), []).append(r)
    best = None
    for c, rs in levels.items():
        vals = [value(r, kind) for r in rs if r.get("kept")]
        if len(vals) != len(rs) or None in vals or not vals:
            continue
        med = statistics.median(vals)
        if best is None or (med > best["median"] if higher else med < best["median"]):
            lg = [r.get("loadgen") or {} for r in rs]
            lat = [x.get("latency_us") or {} for x in lg]
            p50 = [l.get("p50") for l in lat if l.get("p50") is not None]
            p99 = [l.get("p99") for l in lat if l.get("p99") is not None]
            dp = [x.get("delivered_pct") for x in lg if x.get("delivered_pct") is not None]
            pss = [r["pss_kib"] / 1024.0 for r in rs if r.get("pss_kib")]
            mpc = [per_cpu(r, kind) for r in rs]
            mpc = [x for x in mpc if x is not None]
            best = {"median": med, "min": min(vals), "max": max(vals),
                    "level": c, "n": len(vals), "runs": vals,
                    "p50": statistics.median(p50) if p50 else None,
                    "p99": statistics.median(p99) if p99 else None,
                    "delivered": min(dp) if dp else None,
                    "pss": statistics.median(pss) if pss else None,
                    "per_cpu": statistics.median(mpc) if mpc else None,
                    "levels_tried": len(levels)}
    if best:
        best["discarded_levels"] = sum(
            1 for rs in levels.values() if not all(r.get("kept") for r in rs))
        return best
    # No level with every run kept: say why, with a lower bound when the
    # only reason was the load generator saturating.
    reasons = {}
    for r in runs:
        if not r.get("kept"):
            d = (r.get("discard") or "?").split(":")[0]
            reasons[d] = reasons.get(d, 0) + 1
    if set(reasons) == {"saturated"}:
        vals = [value(r, kind) for r in runs]
        vals = [v for v in vals if v is not None]
        mpc = [per_cpu(r, kind) for r in runs]
        mpc = [x for x in mpc if x is not None]
        if vals:
            # The proxy's cost per unit of work stays a fair figure when
            # the load generator was the limit.
            return {"why": "loadgen saturated at every level",
                    "bound": max(vals) if higher else min(vals),
                    "per_cpu": statistics.median(mpc) if mpc else None}
    errs = {}
    for r in runs:
        for k, v in ((r.get("loadgen") or {}).get("errors") or {}).items():
            if v:
                errs[k] = errs.get(k, 0) + v
    why = "no level without discarded runs (%s)" % ", ".join(
        "%s: %d" % kv for kv in sorted(reasons.items()))
    if errs:
        why += "; loadgen errors " + ", ".join("%s %d" % kv for kv in sorted(errs.items()))
    return {"why": why}


def extra_cell(s, scen, kind):
    if scen == "udp":
        return " %s%% |" % fmt(s["delivered"], "")
    if kind in ("rss", "pss"):
        return " %s |" % fmt(s["pss"], "MiB")
    if unit_of(scen) == "MiB/s":
        return " %s |" % fmt(s.get("per_cpu"), "MiB")
    if scen in PER_CPU_RATE:
        return " %s |" % fmt(s.get("per_cpu"), "")
    return ""


def unit_of(scen):
    return {x[0]: x[2] for x in SCENARIOS}.get(scen)


def order(peers):
    known = [p for p in PEER_ORDER if p in peers]
    return known + sorted(p for p in peers if p not in PEER_ORDER)


def chart(d, scen, title, unit, rows, gp):
    """rows: [(peer, median, min, max)] -> (svg, png) paths or None."""
    cdir = os.path.join(d, "charts")
    os.makedirs(cdir, exist_ok=True)
    dat = os.path.join(cdir, scen + ".dat")
    with open(dat, "w") as f:
        for p, med, lo, hi in rows:
            colour = {"portico": 0x4472c4, "direct": 0x9e9e9e}.get(p, 0xed7d31)
            f.write('"%s" %g %g %g %d\n' % (p, med, lo, hi, colour))
    outs = []
    for term, ext in (("svg size 640,360 dynamic font 'sans,11'", "svg"),
                      (gp["png"], "png")):
        path = os.path.join(cdir, scen + "." + ext)
        script = """
set terminal %s
set output '%s'
set title "%s"
set ylabel "%s"
set style fill solid 0.6 border -1
set boxwidth 0.6
set yrange [0:*]
set grid ytics
set xtics nomirror
set key off
plot '%s' using 0:2:5:xtic(1) with boxes lc rgb variable, \\
     '' using 0:2:3:4 with yerrorbars lc rgb "black" pt 0
""" % (term, path, title.replace('"', "'"), unit, dat)
        with open(os.path.join(cdir, scen + ".gp"), "w") as f:
            f.write(script)
        r = subprocess.run(["gnuplot"], input=script, text=True,
                           capture_output=True)
        if r.returncode != 0 or not os.path.exists(path):
            sys.stderr.write("report.py: gnuplot failed for %s: %s\n" %
                             (scen, r.stderr.strip()[:300]))
            return None
        outs.append(path)
    return outs


def gnuplot_setup():
    if not shutil.which("gnuplot"):
        return None
    r = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True,
                       text=True)
    terms = r.stdout + r.stderr
    png = "pngcairo size 640,360 font 'sans,10'" if "pngcairo" in terms else "png size 640,360"
    return {"png": png}


def campaign_lines(m, name):
    v = m.get("versions", {})

    def ver(k):
        x = str(v[k])
        return x[len(k) + 1:] if x.startswith(k + " ") else x
    mline = "%s CPUs, %s, governor %s, %s, %s MiB" % (
        m.get("cpus", "?"), m.get("cpu_model", "?"), m.get("governor", "?"),
        m.get("kernel", "?"), (m.get("memory_kib") or 0) // 1024)
    return mline, [
        "- Campaign `%s`: %s, %s, seed %s, %s s per run, %s run(s) per "
        "level (after a warm-up run in full mode)%s; proxy on CPU %s, loadgen "
        "and origin on CPU %s; portico at %s." % (
            name, m.get("date", "?"), m.get("mode", "?"), m.get("seed", "?"),
            m.get("seconds", "?"), m.get("runs", "?"),
            ", interleaved (each round: every test restarted, a warm-up run, "
            "one run)" if m.get("interleave") else "", m.get("proxy_cpu", "?"),
            m.get("load_cpu", "?"), m.get("portico_commit", "?")),
        "  - Machine: %s; load average at start %s%s." % (
            mline, m.get("loadavg", "?"),
            "; net.unix.max_dgram_qlen %s (the syslog reader's queue)" %
            m["unix_max_dgram_qlen"] if "unix_max_dgram_qlen" in m
            else ""),
        "  - Versions: " + "; ".join("%s %s" % (k, ver(k))
                                     for k in order(set(v))
                                     if k != "direct" and ver(k))]


def per_cpu_median(recs):
    """Median requests per CPU-second of the proxy over kept runs."""
    v = sorted(r["loadgen"]["requests"] / r["proxy_cpu_s"] for r in recs
               if r.get("kept") and r.get("proxy_cpu_s") and
               (r.get("loadgen") or {}).get("requests"))
    return v[len(v) // 2] if v else None


def against_plain(what, recs, plain_recs, sums):
    """<what> against portico's http-1k of the same campaign: rates, and
    requests per CPU-second of the proxy (the proxy is the limit)."""
    out = []
    mine = (sums.get("portico") or {}).get("median")
    plain = (summarise(plain_recs, "rate", True) or {}).get("median") \
        if plain_recs else None
    if mine and plain:
        out.append("")
        out.append("%s against without it (portico's http-1k, same "
                   "campaign): %s against %s requests/s, ratio %.3f "
                   "(goal: 0.95 or more)." % (
                       what, fmt(mine, "requests/s"),
                       fmt(plain, "requests/s"), mine / plain))
        a, b = per_cpu_median(recs), per_cpu_median(plain_recs)
        if a and b:
            out.append("Per CPU-second of the proxy: %s against %s "
                       "requests, ratio %.3f." % (fmt(a, "requests/s"),
                                                  fmt(b, "requests/s"),
                                                  a / b))
    return out


def tls_lines(m, scen, by, peers):
    """What the TLS tables share (certificate, what was negotiated, kTLS)
    and, for tls-resumed, how many handshakes each peer resumed."""
    t = m.get("tls") or {}
    out = [""]
    neg = sorted({((r.get("loadgen") or {}).get("tls") or {}).get("negotiated")
                  for p in peers for r in by.get((scen, p), [])
                  if r.get("status") == "run"} - {None, ""})
    out.append("TLS: %s; negotiated in every run: %s; kTLS: %s." % (
        t.get("certificate", "?"), " / ".join(neg) or "-",
        t.get("ktls", "?")))
    if scen == "tls-connect":
        ks = [r for p in peers for r in by.get(("tls-connect-ktls", p), [])
              if r.get("status") == "run" and r.get("ktls_tx") is not None]
        if ks:
            out.append("")
            out.append("kTLS rows: relay.method \"splice\" (a kTLS socket "
                       "carries plaintext, so the tunnel is spliced); kernel "
                       "TLS sessions /proc/net/tls_stat counted per run: %s." %
                       ", ".join("%s c=%s TX %s RX %s" % (
                           r.get("peer"), r.get("concurrency"),
                           r.get("ktls_tx"), r.get("ktls_rx")) for r in ks))
    if scen == "tls-resumed":
        parts = []
        for p in peers:
            h = o = r_ = 0
            for r in by.get((scen, p), []):
                x = (r.get("loadgen") or {}).get("tls") or {}
                if r.get("status") == "run" and not r.get("warmup"):
                    h += x.get("handshakes", 0)
                    o += x.get("offered", 0)
                    r_ += x.get("resumed", 0)
            if h:
                parts.append("%s %s of %s offered a ticket (%s handshakes)"
                             % (p, "{:,}".format(r_), "{:,}".format(o),
                                "{:,}".format(h)))
        if parts:
            out.append("")
            out.append("Handshakes resumed, all runs (a client's first "
                       "connection has no ticket to offer): %s." %
                       ", ".join(parts))
    return out


def accesslog_lines(by, plain_recs, sums):
    """http-accesslog against portico's http-1k of the same campaign, and
    how many records reached the file and syslog."""
    out = against_plain("With the access log",
                        by.get(("http-accesslog", "portico"), []),
                        plain_recs, sums)
    recs = [r for r in by.get(("http-accesslog", "portico"), [])
            if isinstance(r.get("al_lines"), int)]
    if recs:
        r = recs[-1]
        out.append("")
        out.append("Records written by the last run's end: %s JSON lines in "
                   "the file, %s squid datagrams read from the syslog "
                   "socket (a difference is records dropped when the "
                   "reader fell behind)." % (
                       "{:,}".format(r["al_lines"]),
                       "{:,}".format(r.get("al_dgrams") or 0)))
    return out


def scraped_lines(by, plain_recs, sums):
    """http-scraped against portico's http-1k of the same campaign, and
    how many scrapes were answered."""
    out = against_plain("While scraped every 100 ms",
                        by.get(("http-scraped", "portico"), []),
                        plain_recs, sums)
    recs = [r for r in by.get(("http-scraped", "portico"), [])
            if isinstance(r.get("scrapes"), int)]
    if recs:
        r = recs[-1]
        out.append("")
        out.append("Scrapes answered by the last run's end: %s (%s failed)."
                   % ("{:,}".format(r["scrapes"]),
                      r.get("scrape_errors") or 0))
    return out


def acl_lines(by, plain_recs, sums):
    """http-acl against portico's http-1k of the same campaign, and what
    loading the host_file cost."""
    out = against_plain("With the ACL", by.get(("http-acl", "portico"), []),
                        plain_recs, sums)
    recs = [r for r in by.get(("http-acl", "portico"), [])
            if r.get("acl_load_ms") is not None]
    if recs:
        def med(k):
            v = sorted(r[k] for r in recs if isinstance(r.get(k), int))
            return v[len(v) // 2] if v else None
        out.append("")
        out.append("host_file: %s names loaded in %s ms (median of %d starts, "
                   "in the master before the fork); RSS after start: master "
                   "%s MiB, worker %s MiB (the worker shares the master's "
                   "pages copy-on-write)." % (
                       "{:,}".format(med("acl_names") or 0), med("acl_load_ms"),
                       len(recs), "%.1f" % ((med("acl_master_kib") or 0) / 1024),
                       "%.1f" % ((med("acl_worker_kib") or 0) / 1024)))
    return out


def side_by_side(d, odir, name="SIDEBYSIDE.md", per="per round: "
                 "`sidebyside.jsonl`", title="Module costs side by side"):
    """The lines of <d>/<name> (bench/sidebyside's SIDEBYSIDE.md,
    bench/haproxy-chain's CHAIN.md, bench/parent-chain's PARENT-CHAIN.md,
    bench/h2-pageload's H2-PAGELOAD.md or bench/h2-bench's H2.md) as a
    section: its own heading one level down, the rest as it is."""
    path = os.path.join(d, name)
    with open(path) as f:
        text = f.read().rstrip("\n").split("\n")
    title = text[0].lstrip("# ").strip() if text and text[0].startswith(
        "# ") else title
    title += " (%s)" % os.path.basename(d.rstrip("/"))
    return ["", "## %s" % title, "",
            "From `%s` (%s)." % (os.path.relpath(d, odir), per)] + text[1:]


def main():
    args = sys.argv[1:]
    out = os.path.join(HERE, "RESULTS.md")
    charts = True
    dirs = []
    sbs = []
    chains = []
    pchains = []
    pageloads = []
    h2s = []
    h2floors = []
    usage = ("usage: report.py DIR [DIR...] [--output FILE] [--no-charts] "
             "[--side-by-side SBSDIR] [--haproxy-chain CHAINDIR] "
             "[--parent-chain PCDIR] [--h2-pageload PLDIR] [--h2 H2DIR] "
             "[--h2-floor H2FDIR]")
    while args:
        a = args.pop(0)
        if a in ("-o", "--output"):
            out = args.pop(0)
        elif a == "--no-charts":
            charts = False
        elif a == "--side-by-side":
            sbs.append(os.path.abspath(args.pop(0)))
        elif a == "--haproxy-chain":
            chains.append(os.path.abspath(args.pop(0)))
        elif a == "--parent-chain":
            pchains.append(os.path.abspath(args.pop(0)))
        elif a == "--h2-pageload":
            pageloads.append(os.path.abspath(args.pop(0)))
        elif a == "--h2":
            h2s.append(os.path.abspath(args.pop(0)))
        elif a == "--h2-floor":
            h2floors.append(os.path.abspath(args.pop(0)))
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a.startswith("-"):
            sys.exit(usage)
        else:
            dirs.append(os.path.abspath(a))
    if not dirs:
        sys.exit(usage)
    out = os.path.abspath(out)
    odir = os.path.dirname(out)
    gp = gnuplot_setup() if charts else None
    if charts and gp is None:
        print("gnuplot not installed, no charts")

    # Each scenario's table comes from one campaign only (the last DIR
    # that has it): rows of different campaigns are never compared.
    camp = []
    src = {}
    for d in dirs:
        recs, m = load(d)
        camp.append((d, recs, m))
        for r in recs:
            src[r.get("scenario")] = len(camp) - 1
    allrecs = [r for i, (d, recs, m) in enumerate(camp) for r in recs
               if src.get(r.get("scenario")) == i]
    by = {}
    for r in allrecs:
        by.setdefault((r.get("scenario"), r.get("peer")), []).append(r)
    peers_all = order({r.get("peer") for r in allrecs})

    L = []
    L.append("# Benchmark results")
    L.append("")
    L.append("Generated by `bench/report.py` from %s (in each: raw runs "
             "`runs.jsonl`, machine `machine.json`, configurations `conf/`). "
             "Do not edit by hand: rerun `bench/fairness`, then "
             "`bench/report.py DIR...`. How the comparison is kept fair, and "
             "why each peer is configured as it is: [FAIRNESS.md](%s)."
             % (", ".join("`%s`" % os.path.relpath(d, odir) for d in dirs),
                os.path.relpath(os.path.join(HERE, "FAIRNESS.md"), odir)))
    if os.path.exists(os.path.join(odir, "HISTORY.md")):
        L.append("")
        L.append("Earlier figures, measured by hand before this harness "
                 "existed: [HISTORY.md](HISTORY.md).")
    L.append("")
    L.append("## Machine and campaigns")
    L.append("")
    mlines = {}
    settings = {}
    for i, (d, recs, m) in enumerate(camp):
        if i not in src.values():
            continue
        mlines[i], lines = campaign_lines(m, os.path.basename(d))
        L.extend(lines)
        settings.update(m.get("settings", {}))
    L.append("")
    L.append("| proxy | settings |")
    L.append("|---|---|")
    for p in peers_all:
        L.append("| %s | %s |" % (p, settings.get(p, "-")))
    L.append("")
    L.append("A figure is the median of the kept runs at the best "
             "concurrency level whose runs were all kept (no error counted "
             "by loadgen, loadgen not saturated); min-max is over those "
             "runs. A proxy without a figure says why.")

    views = []
    for scen, title, unit, kind, higher, what in SCENARIOS:
        if kind != "pss":
            views.append((scen, title, unit, kind, higher, what, None))
            continue
        # One table per level: 1,000 and 10,000 idle connections are two
        # questions, not two tries at one.
        lv = sorted({r.get("concurrency") for r in allrecs
                     if r.get("scenario") == scen} - {None})
        for c in lv:
            views.append((scen, title % "{:,}".format(c), unit, kind, higher,
                          what, c))

    def own_1k(scen):
        """portico's http-1k runs of the campaign that gave <scen>'s
        table, whichever campaign gave the http-1k table."""
        recs = camp[src[scen]][1]
        return [r for r in recs if r.get("scenario") == "http-1k" and
                r.get("peer") == "portico"]

    for scen, title, unit, kind, higher, what, level in views:
        peers = [p for p in peers_all if (scen, p) in by]
        if not peers:
            continue

        def at_level(rs):
            if level is None:
                return rs
            return [r for r in rs if r.get("concurrency") in (level, None)]
        sums = {p: summarise(at_level(by[(scen, p)]), kind, higher)
                for p in peers}
        base = (sums.get("portico") or {}).get("median")
        lvls = sorted({r.get("concurrency") for p in peers
                       for r in at_level(by[(scen, p)])
                       if r.get("status") == "run"} - {None})
        L.append("")
        L.append("## %s" % title)
        L.append("")
        ci = src[scen]
        d, _, m = camp[ci]
        L.append("What: %s. Levels tried: %s. Settings: campaign `%s`, %s "
                 "mode, %s s runs, %s per level; machine: %s." % (
                     what, ", ".join(map(str, lvls)) or "-",
                     os.path.basename(d), m.get("mode", "?"),
                     m.get("seconds", "?"), m.get("runs", "?"), mlines[ci]))
        if scen in ("tls-handshakes", "tls-resumed", "https-1k",
                    "tls-connect"):
            L.extend(tls_lines(m, scen, by, peers_all))
        if scen in ("socks-handshakes", "socks-auth", "socks-auth-argon2"):
            L.append("")
            L.append("Target: %s." % m.get(
                "handshake_target", "loadgen serve --tcp-sink (waits for "
                "the proxy to close; unfair to Dante, see FAIRNESS.md)"))
        L.append("")
        extra = ""
        if scen == "udp":
            extra = "delivered (lowest run) |"
        elif kind in ("rss", "pss"):
            extra = "PSS held, MiB (median) |"
        elif unit == "MiB/s":
            extra = "MiB per proxy CPU-s (median) |"
        elif scen in PER_CPU_RATE:
            extra = "%s per proxy CPU-s (median) |" % unit.split("/")[0]
        L.append(("| proxy | %s (median) | min-max | ratio to portico | "
                  "best level | runs | latency p50 / p99 (µs) | %s" % (unit, extra)).rstrip())
        L.append("|---|---|---|---|---|---|---|%s" % ("---|" if extra else ""))
        rows = []
        shown = [(p, sums[p]) for p in peers]
        # Rows another scenario of the same campaign adds to this table
        # (tls-connect-ktls: portico with kTLS on, or why not).
        for sub, (table, label) in ROWS_OF.items():
            if table != scen or src.get(sub) != src[scen]:
                continue
            shown += [("%s, %s" % (p, label),
                       summarise(at_level(by[(sub, p)]), kind, higher))
                      for p in peers_all if (sub, p) in by and p != "direct"]
        for p, s in shown:
            if s is None:
                continue
            if "median" not in s:
                cell = s["why"]
                if "bound" in s:
                    cell = "%s %s (%s)" % (">=" if higher else "<=",
                                           fmt(s["bound"], unit), s["why"])
                L.append("| %s | %s | - | - | - | - | - |%s" % (
                    p, cell, (extra_cell(s, scen, kind) if "bound" in s
                              else " - |") if extra else ""))
                continue
            ratio = "%.2f" % (s["median"] / base) if base else "-"
            lat = "-"
            if s["p50"] is not None:
                lat = "%s / %s" % (fmt(s["p50"], ""), fmt(s["p99"], ""))
            note = ""
            if s["discarded_levels"]:
                note = " (%d of %d levels discarded)" % (s["discarded_levels"], s["levels_tried"])
            L.append("| %s | %s | %s-%s | %s | %s | %d%s | %s |%s" % (
                p, fmt(s["median"], unit), fmt(s["min"], unit),
                fmt(s["max"], unit), ratio, s["level"], s["n"], note, lat,
                extra_cell(s, scen, kind)))
            rows.append((p, s["median"], s["min"], s["max"]))
        if scen == "http-acl":
            L.extend(acl_lines(by, own_1k(scen), sums))
        if scen == "http-accesslog":
            L.extend(accesslog_lines(by, own_1k(scen), sums))
        if scen == "http-scraped":
            L.extend(scraped_lines(by, own_1k(scen), sums))
        if scen == "http-limits":
            L.extend(against_plain("With the limits module",
                                   by.get(("http-limits", "portico"), []),
                                   own_1k(scen), sums))
        if gp and rows:
            c = chart(camp[src[scen]][0], scen if level is None else
                      "%s-%d" % (scen, level), title, unit, rows, gp)
            if c:
                L.append("")
                L.append("![%s](%s) ([PNG](%s))" % (
                    title, os.path.relpath(c[0], odir), os.path.relpath(c[1], odir)))

    L.extend(report_relay.relay_lines(allrecs))

    # What was thrown away, so a reader can see it was not hidden.
    disc = {}
    for r in allrecs:
        if r.get("status") == "run" and not r.get("warmup") and not r.get("kept"):
            k = (r.get("peer"), r.get("scenario"), (r.get("discard") or "?")[:80])
            disc[k] = disc.get(k, 0) + 1
    L.append("")
    L.append("## Discarded runs")
    L.append("")
    if not disc:
        L.append("None.")
    else:
        L.append("| proxy | scenario | reason | runs |")
        L.append("|---|---|---|---|")
        for (p, s, why), n in sorted(disc.items()):
            L.append("| %s | %s | %s | %d |" % (p, s, why.replace("|", "/"), n))
    for d in sbs:
        L.extend(side_by_side(d, odir))
    for d in chains:
        L.extend(side_by_side(d, odir, "CHAIN.md", "per run: `runs.jsonl`",
                              "portico behind HAProxy"))
    for d in pchains:
        L.extend(side_by_side(d, odir, "PARENT-CHAIN.md",
                              "per run: `runs.jsonl`",
                              "portico through a parent portico"))
    for d in pageloads:
        L.extend(side_by_side(d, odir, "H2-PAGELOAD.md",
                              "per load: `runs.jsonl`",
                              "Page load through the HTTPS proxy"))
    for d in h2s:
        L.extend(side_by_side(d, odir, "H2.md", "per run: `runs.jsonl`",
                              "HTTP/2 to portico"))
    for d in h2floors:
        L.extend(side_by_side(d, odir, "H2-FLOOR.md",
                              "per run: `runs.jsonl`",
                              "HTTP/2 DATA framing: the floor"))
    with open(out, "w") as f:
        f.write("\n".join(L) + "\n")
    print("report.py: wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
