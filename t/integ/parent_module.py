#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Modules choose parents (ABI 1.7), the core carries the choice out: a
first portico whose listener has no `via` sends some requests through a
second portico as an HTTP parent because a module said so.

- t/modules/fieldrec with `via = "up"; via_header = "X-Via";`: a request
  with X-Via reaches the origin through the parent (the parent's Via is on
  it, and the parent's access log has it), and every phase from
  ESTABLISHED on sees pt_conn_parent() = "up"; a request without goes
  straight (pt_conn_parent() none, the origin sees no parent's Via);
  pt_via_format gives the choice back as configured.
- The acl module's rule `via`: requests to one host go through the
  parent, to another straight; the first portico's JSON log names the
  parent for the first only.
- A module's via naming no parent of the file is refused by `-t`,
  naming the file and line.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import acltest as ACL  # noqa: E402
import accesslogtest as AL  # noqa: E402

records = ptest.records


def conf(t, name, port, extra, mods):
    return """workers = 1;
error_log = "%s";
log_level = "info";
pid_file = "%s";
shutdown_timeout = 5;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
%s
listeners = ( { name = "in"; address = "127.0.0.1:%d"; protocol = "http"; } );
modules = ( %s );
""" % (t.path(name + ".log"), t.path(name + ".pid"), extra, port,
       ",\n  ".join(mods))


def get(port, origin, path, headers=()):
    return H.get(port, origin.url + path, headers=headers)


def vias(origin_req):
    return [v for k, v in origin_req["headers"] if k.lower() == "via"]


def log_recs(path):
    return AL.transactions(AL.json_records(path)[0])


def main(t):
    for why in (AL.missing(), ACL.missing()):
        if why:
            t.skip("modules choose parents", why)
            return
    origin = H.origin(t)
    up_port, in_port = ptest.free_port(), ptest.free_port()
    up_log = t.path("up.json")
    up = t.portico(conf(t, "up", up_port, "",
                        [AL.module(['file = "%s"; format = "json";'
                                    % up_log])]), conf_name="up.conf")
    rec = t.path("f.rec")
    in_log = t.path("in.json")
    parents = ('parents = ( { name = "up"; address = "127.0.0.1:%d"; '
               'protocol = "http"; } );' % up_port)
    mods = [ACL.fieldrec_entry(rec, 'via = "up"; via_header = "X-Via";'),
            AL.module(['file = "%s"; format = "json";' % in_log])]
    p = t.portico(conf(t, "in", in_port, parents, mods), conf_name="in.conf")

    n0 = len(origin.requests)
    r1 = get(in_port, origin, "/chosen", [("X-Via", "1")])
    r2 = get(in_port, origin, "/straight")
    reqs = origin.requests[n0:]
    t.check(getattr(r1, "status", None) == 200 and
            getattr(r2, "status", None) == 200 and len(reqs) == 2,
            "both requests served", lambda: [r1, r2, len(reqs)])
    by = {q["target"].rsplit("/", 1)[-1]: q for q in reqs}
    chosen, straight = by.get("chosen"), by.get("straight")
    t.check(chosen is not None and len(vias(chosen)) == 2 and
            straight is not None and len(vias(straight)) == 1,
            "the module's choice went through the parent (two Via at the "
            "origin), the other request straight (one)",
            lambda: [chosen and vias(chosen), straight and vias(straight)])
    ptest.wait_for(lambda: any(e == "LOG" for e, kv in records(rec)
                               if kv.get("path") == "/straight"),
                   ptest.bound(5))
    lines = records(rec)
    ch = {e: kv for e, kv in lines if kv.get("path") == "/chosen"}
    st = {e: kv for e, kv in lines if kv.get("path") == "/straight"}
    t.check(ch.get("ESTABLISHED", {}).get("parent") == "up" and
            ch.get("LOG", {}).get("parent") == "up" and
            ch.get("ACCESS", {}).get("parent") == "-",
            "pt_conn_parent: none at ACCESS, \"up\" from ESTABLISHED to "
            "LOG", lambda: [ch])
    t.check(st.get("LOG", {}).get("parent") == "-" and
            st.get("ESTABLISHED", {}).get("parent") == "-",
            "pt_conn_parent: none for the request that went straight",
            lambda: [st])
    t.check(ch.get("LOG", {}).get("via") == "up",
            "pt_via_format gives the module's choice as configured",
            lambda: [ch.get("LOG")])
    ptest.wait_for(lambda: len(log_recs(up_log)) >= 1, ptest.bound(5))
    up_recs = log_recs(up_log)
    t.check([r.get("target", "").endswith("/chosen") for r in up_recs] ==
            [True], "the parent served the chosen request only",
            lambda: up_recs)

    # The acl module's rule via.
    t.stop_portico(p)
    acl = ACL.acl_entry([
        '{ action = "allow"; port = [ %d ]; host = [ "localhost" ]; '
        'via = "up"; }' % origin.port,
        dict(action="allow")], allow_private=True)
    p = t.portico(conf(t, "in2", in_port, parents,
                       [acl, AL.module(['file = "%s"; format = "json";'
                                        % in_log])]), conf_name="in2.conf")
    ra = H.get(in_port, "http://localhost:%d/by-rule" % origin.port)
    rb = get(in_port, origin, "/by-default")
    t.check(getattr(ra, "status", None) == 200 and
            getattr(rb, "status", None) == 200,
            "acl: both requests served", lambda: [ra, rb])
    ptest.wait_for(lambda: len(log_recs(in_log)) >= 4, ptest.bound(5))
    mine = {os.path.basename(r.get("target", "")): r
            for r in log_recs(in_log)}
    t.check(mine.get("by-rule", {}).get("parent") == "up" and
            "parent" not in mine.get("by-default", {"parent": 1}),
            "acl: the rule's via carried its request through the parent "
            "(the log names it), the other went straight",
            lambda: [mine.get("by-rule"), mine.get("by-default")])
    t.stop_portico(p)
    t.stop_portico(up)

    # -t: a module's via must name a parent of the file.
    bad = conf(t, "bad", in_port, parents,
               [ACL.fieldrec_entry(rec, 'via = "nope";')])
    path = ptest.write_conf(t.tmp, bad, "bad.conf")
    cp = ptest.run_portico(["-t", "-c", path])
    out = cp.stdout + cp.stderr
    t.check(cp.returncode != 0 and "bad.conf:" in out and
            "no parent is named \"nope\"" in out,
            "-t refuses a module's via naming no parent, with file:line",
            lambda: out)


if __name__ == "__main__":
    ptest.Test("parent_module").run(main)
