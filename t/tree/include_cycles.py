#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The files of worker/ include each other in no circle but conn <-> req.

The graph: every file of worker/ is a node named without its .c or .h
(x.c and x.h are one node), and x -> y is an edge when x.c or x.h includes
"worker/y.h". Its strongly connected components (Tarjan) are the groups of
files that reach each other through includes: none of them can be read,
tested or changed without the others. One group is allowed, conn and req
(the connection and the names modules set on its transaction, each
reading the other's struct). Any other group of more than one node fails,
named, with the shortest cycle through each of its files written as the
includes that make it.

It reads whatever worker/*.c and worker/*.h exist, so it follows files
being added, split or removed. By hand, from anywhere:
    python3 t/tree/include_cycles.py [SRCDIR]
SRCDIR is the top of a source tree (default: PT_SRCDIR, as `make check`
sets it, else two levels above this file). Prints TAP; exits 1 when a
check fails.
"""
import glob
import os
import re
import sys

# The only groups allowed to include each other, as sets of nodes.
ALLOWED = [frozenset(("conn", "req"))]

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"(?:worker/)?(\w+)\.h"',
                     re.MULTILINE)


def graph(worker_dir):
    """{node: {included node: file that includes it}} for worker_dir."""
    files = sorted(glob.glob(os.path.join(worker_dir, "*.c")) +
                   glob.glob(os.path.join(worker_dir, "*.h")))
    nodes = {os.path.basename(f)[:-2] for f in files}
    headers = {os.path.basename(f)[:-2] for f in files if f.endswith(".h")}
    g = {n: {} for n in nodes}
    for f in files:
        x = os.path.basename(f)[:-2]
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for y in INCLUDE.findall(text):
            # An include of a header outside worker/ (common/, portico/)
            # or of the file's own header is no edge.
            if y in headers and y != x:
                g[x].setdefault(y, os.path.basename(f))
    return g


def components(g):
    """The strongly connected components of <g> (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def cycle_through(g, comp, start):
    """The shortest cycle from <start> back to it inside <comp> (breadth
    first), as its nodes in order, or None."""
    prev = {start: None}
    queue = [start]
    for v in queue:
        for w in sorted(g[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path))
            if w in comp and w not in prev:
                prev[w] = v
                queue.append(w)
    return None


def cycles(g, comp):
    """The shortest cycle through each node of <comp>, each cycle once,
    written as the includes that make it: "x.c -> y.h, y.h -> z.h"."""
    seen, out = set(), []
    for v in sorted(comp):
        path = cycle_through(g, comp, v)
        if path is None:
            continue
        steps = list(zip(path, path[1:] + path[:1]))
        key = frozenset(steps)
        if key in seen:
            continue
        seen.add(key)
        out.append(", ".join("%s -> %s.h" % (g[a][b], b) for a, b in steps))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    srcdir = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "PT_SRCDIR", os.path.join(here, "..", ".."))
    worker_dir = os.path.join(os.path.abspath(srcdir), "worker")
    n = failed = 0

    def check(ok, desc, details=()):
        nonlocal n, failed
        n += 1
        if ok:
            print("ok %d - %s" % (n, desc))
        else:
            failed += 1
            print("not ok %d - %s" % (n, desc))
            for line in details:
                print("# " + line)

    g = graph(worker_dir)
    edges = sum(len(v) for v in g.values())
    check(len(g) > 0 and edges > 0,
          "worker/ has files that include each other",
          ["%s: %d files, %d includes" % (worker_dir, len(g), edges)])
    bad = [c for c in components(g)
           if len(c) > 1 and frozenset(c) not in ALLOWED]
    details = []
    for c in sorted(bad, key=lambda c: (-len(c), min(c))):
        details.append("%d files include each other: %s"
                       % (len(c), ", ".join(sorted(c))))
        details.extend("  " + s for s in cycles(g, c))
    check(not bad, "the include graph of worker/ has no cycle but "
          "conn <-> req", details)
    print("1..%d" % n)
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
