# SPDX-License-Identifier: BSD-2-Clause
"""
bench/report_relay.py: the "Relay method" section of bench/RESULTS.md, for
bench/report.py: the relay grid of bench/fairness (issue 30), one table per
family (CONNECT tunnels, SOCKS5 tunnels, interactive round trips, HTTP
bodies, iperf3 through a tunnel), a row per shape and level, a column per
peer.

The figure is work per CPU-second of the proxy (MiB, or round trips), the
median over the runs at that level: the proxy's own cost, which the load
generator beside it on a two-core machine does not colour the way it
colours MiB/s. A run counts when loadgen (or iperf3) counted no error;
one where the load side saturated counts too, since the proxy's cost per
unit of work stays fair then (it is marked). Under each figure, MiB/s and
the proxy CPU's busy share (CPU-seconds per second).

Python 3 standard library only.
"""

import statistics

# (family title, what it measures, unit of work, [scenarios])
FAMILIES = [
    ("CONNECT tunnels", "HTTP CONNECT tunnels; up: loadgen writes into a "
     "sink, down: the client only reads from a source, both: writes read "
     "back through an echo (MiB up plus down); the size is each write's, by "
     "loadgen (up, both) or by the origin (down, both)", "MiB",
     ["connect-up-1k", "connect-up-16k", "connect-up-256k",
      "connect-down-1k", "connect-down-16k", "connect-down-256k",
      "connect-both-1k", "connect-both-16k", "connect-both-256k"]),
    ("SOCKS5 tunnels", "the same through SOCKS5 CONNECT, 16 KiB writes",
     "MiB", ["socks-up-16k", "socks-down-16k", "socks-both-16k"]),
    ("Interactive tunnels", "100-byte requests through a tunnel, each "
     "echoed back before the next is sent: round trips", "round trips",
     ["connect-rr", "socks-rr"]),
    ("HTTP bodies", "GETs through the HTTP proxy of 1 MiB and 100 MiB "
     "objects: Content-Length (body), delimited by close (body-eof, a new "
     "connection each), chunked (body-chunked: portico reads the framing, "
     "so it copies whatever the method)", "MiB",
     ["body-1m", "body-100m", "body-eof-1m", "body-eof-100m",
      "body-chunked-1m", "body-chunked-100m"]),
    ("iperf3 through a tunnel", "iperf3 3.x (Debian's, its defaults: 128 "
     "KiB writes) through bench/shim, which opens a tunnel through the "
     "proxy for each of iperf3's connections; level = parallel streams "
     "(-P); the shim's own CPU per GiB (on the load CPU) is the last "
     "column", "MiB",
     ["iperf-connect-up", "iperf-connect-down", "iperf-connect-both",
      "iperf-socks-up", "iperf-socks-down", "iperf-socks-both"]),
]
GRID = {s for f in FAMILIES for s in f[3]}
ORDER = ["portico", "portico-copy", "portico-splice", "floor", "3proxy",
         "3proxy-splice"]
# Goals of issue 30: portico's CPU per GiB within 15% of the floor's, and
# at least 1.5 times 3proxy's bytes per CPU-second.
FLOOR_GOAL = 1.15
PEER_GOAL = 1.5


def work(rec, unit):
    lg = rec.get("loadgen") or {}
    try:
        if unit == "round trips":
            return float(lg["rate"])
        return float(lg.get("mib_s_up", 0)) + float(lg.get("mib_s_down", 0))
    except (TypeError, ValueError, KeyError):
        return None


def usable(rec):
    """A measured run whose figure can be trusted (no error counted)."""
    if rec.get("status") != "run" or rec.get("warmup"):
        return False
    if not rec.get("kept") and rec.get("discard") != "saturated":
        return False
    errs = (rec.get("loadgen") or {}).get("errors") or {}
    return not any(errs.values()) and (rec.get("peer") == "direct" or (
        rec.get("proxy_cpu_s") and rec.get("wall_s")))


def cell(runs, unit):
    """{per_cpu, rate, busy, n, saturated, shim} medians over <runs>."""
    pc, rate, busy, shim = [], [], [], []
    direct = []
    for r in runs:
        w = work(r, unit)
        if w is None:
            continue
        if r.get("peer") == "direct":
            direct.append(w)
            continue
        cpu, wall = r["proxy_cpu_s"], r["wall_s"]
        pc.append(w * wall / cpu)
        rate.append(w)
        busy.append(cpu / wall)
        if r.get("shim_cpu_s") and w > 0:
            shim.append(r["shim_cpu_s"] / (w * wall / 1024.0))
    if direct:
        return {"direct": statistics.median(direct), "n": len(direct)}
    if not pc:
        return None
    return {"per_cpu": statistics.median(pc), "rate": statistics.median(rate),
            "busy": statistics.median(busy), "n": len(pc),
            "saturated": any(not r.get("kept") for r in runs),
            "shim": statistics.median(shim) if shim else None}


def num(v):
    if v is None:
        return "-"
    return "{:,.0f}".format(v) if v >= 100 else "%.1f" % v


def relay_lines(allrecs):
    """Markdown lines of the section, or [] when no grid scenario ran."""
    grid = [r for r in allrecs if r.get("scenario") in GRID]
    if not grid:
        return []
    # direct runs in three scenarios only (no proxy: MiB/s alone); the
    # floor is the grid's reference.
    peers = {r.get("peer") for r in grid if r.get("peer") != "direct" or
             r.get("status") == "run"}
    peers = [p for p in ORDER if p in peers] + sorted(peers - set(ORDER))
    L = ["", "## Relay method", "",
         "The relay grid of issue 30: what each peer moves per CPU-second "
         "of the proxy (the resource a proxy owns; on this two-core machine "
         "the load generator beside it colours raw throughput), the median "
         "of the runs at each level. Under each figure: the throughput and "
         "the proxy CPU's busy share; * marks runs where the load side "
         "saturated (the cost per unit of work still counts). portico is "
         "the default configuration (relay.method \"auto\"); portico-copy "
         "and portico-splice force a method; floor is bench/floor, the "
         "least a tunnel costs (splice through one pipe per direction, "
         "nothing else); direct (loadgen straight to the origin, three "
         "shapes) shows what the load side reaches without a proxy. Goals: portico's CPU per GiB at most %.2f times "
         "the floor's (column \"÷ floor\": floor's figure over portico's) "
         "and at least %.1f times 3proxy's work per CPU-second (column "
         "\"÷ 3proxy\"). \"best of copy, splice\": which forced method did "
         "more per CPU-second, and what auto did against it." %
         (FLOOR_GOAL, PEER_GOAL)]
    total = {"rows": 0, "auto_ok": 0, "copy": 0, "splice": 0,
             "auto_copy": [], "floor_peer_n": 0, "floor_peer_ok": 0}
    runs = {}
    for r in grid:
        if usable(r):
            runs.setdefault((r["scenario"], r.get("concurrency"), r["peer"]),
                            []).append(r)
    why = {}
    for r in grid:
        if r.get("status") not in ("run", None) and r.get("reason"):
            why.setdefault((r["scenario"], r["peer"]), r["reason"])
    for title, what, unit, scens in FAMILIES:
        present = [s for s in scens if any(r.get("scenario") == s
                                           for r in grid)]
        if not present:
            continue
        per = "MiB" if unit == "MiB" else "round trips"
        L += ["", "### %s" % title, "",
              "What: %s. Figure: %s per proxy CPU-second." % (what, per),
              ""]
        head = ["shape", "level"] + peers + ["best of copy, splice",
                                             "÷ floor", "÷ 3proxy"]
        tally = {"rows": 0, "auto_ok": 0, "copy": 0, "splice": 0,
                 "floor_ok": 0, "floor_n": 0, "peer_ok": 0, "peer_n": 0}
        if title.startswith("iperf3"):
            head.append("shim CPU-s per GiB")
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * len(head))
        for s in present:
            lv = sorted({r.get("concurrency") for r in grid
                         if r.get("scenario") == s and
                         r.get("concurrency") is not None})
            if not lv:
                lv = [None]
            for c in lv:
                cells = {p: cell(runs.get((s, c, p), []), unit)
                         for p in peers}
                row = [s, str(c) if c is not None else "-"]
                for p in peers:
                    x = cells[p]
                    if x is None:
                        w = why.get((s, p))
                        row.append("- (%s)" % w if w else "-")
                        continue
                    if "direct" in x:
                        row.append("no proxy<br>%s%s/s" % (
                            num(x["direct"]), " MiB" if unit == "MiB"
                            else ""))
                        continue
                    row.append("%s<br>%s%s/s, %.0f%%%s" % (
                        num(x["per_cpu"]), num(x["rate"]),
                        " MiB" if unit == "MiB" else "",
                        100 * x["busy"], " *" if x["saturated"] else ""))
                a = cells.get("portico")
                cp, sp = cells.get("portico-copy"), cells.get("portico-splice")
                if cp and sp:
                    b = "splice" if sp["per_cpu"] >= cp["per_cpu"] else "copy"
                    best = max(cp["per_cpu"], sp["per_cpu"])
                    tally["rows"] += 1
                    tally[b] += 1
                    tally["auto_ok"] += bool(a and a["per_cpu"] >= 0.9 * best)
                    if a:
                        total["auto_copy"].append(a["per_cpu"] /
                                                  cp["per_cpu"])
                    row.append("%s (%.2fx the other)%s" % (
                        b, best / min(cp["per_cpu"], sp["per_cpu"]),
                        "; auto %.2f of it" % (a["per_cpu"] / best)
                        if a else ""))
                else:
                    row.append("-")
                fl, tp = cells.get("floor"), cells.get("3proxy")
                if a and fl:
                    q = fl["per_cpu"] / a["per_cpu"]
                    tally["floor_n"] += 1
                    tally["floor_ok"] += q <= FLOOR_GOAL
                    row.append("%.2f %s" % (q, "(goal met)" if
                                            q <= FLOOR_GOAL else "(over)"))
                else:
                    row.append("-")
                if fl and tp:
                    total["floor_peer_n"] += 1
                    total["floor_peer_ok"] += (fl["per_cpu"] / tp["per_cpu"]
                                               >= PEER_GOAL)
                if a and tp:
                    q = a["per_cpu"] / tp["per_cpu"]
                    tally["peer_n"] += 1
                    tally["peer_ok"] += q >= PEER_GOAL
                    row.append("%.2f %s" % (q, "(goal met)" if
                                            q >= PEER_GOAL else "(under)"))
                else:
                    row.append("-")
                if title.startswith("iperf3"):
                    sh = [cells[p]["shim"] for p in peers
                          if cells[p] and cells[p]["shim"] is not None]
                    row.append("%.2f-%.2f" % (min(sh), max(sh)) if sh
                               else "-")
                L.append("| " + " | ".join(row) + " |")
        if tally["rows"]:
            L += ["", "In %d rows: splice did more per CPU-second than copy "
                  "in %d, copy in %d; auto reached 0.9 of the better of the "
                  "two or more in %d; portico was within the floor goal in "
                  "%d of %d and at the 3proxy goal in %d of %d." % (
                      tally["rows"], tally["splice"], tally["copy"],
                      tally["auto_ok"], tally["floor_ok"], tally["floor_n"],
                      tally["peer_ok"], tally["peer_n"])]
        for k in ("rows", "auto_ok", "copy", "splice"):
            total[k] += tally[k]
    if total["rows"]:
        ac = sorted(total["auto_copy"])
        L += ["", "### The default", "",
              "relay.method \"auto\" is the default: in %d rows of this "
              "grid splice did more per proxy CPU-second than copy in %d "
              "and copy in %d, so neither forced method is right for every "
              "shape; auto reached 0.9 of the better one or more in %d of "
              "%d rows, and did %.2f-%.2f times what copy (the default "
              "before it) did (median %.2f). Where a floor and 3proxy ran "
              "side by side, the floor itself reached %.1f times 3proxy's "
              "work per CPU-second in %d of %d rows: the 3proxy goal is "
              "above what a bare splice relay does there on this machine." % (
                  total["rows"], total["splice"], total["copy"],
                  total["auto_ok"], total["rows"], ac[0], ac[-1],
                  ac[len(ac) // 2], PEER_GOAL, total["floor_peer_ok"],
                  total["floor_peer_n"])]
    return L
