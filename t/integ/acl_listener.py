#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The acl module (the real modules/acl acl.so) and listeners, with a
loopback origin:

- a listener with no acl group is guarded: default deny answers 403 and
  the origin never sees the request; the label and the reason reach the
  debug log ("acl: denied by default");
- `acl = { enabled = false; }` on a listener: the module does not apply
  there, the same request passes (the origin sees it);
- a tcp listener forwarding to the origin on 127.0.0.1 (a private
  address) passes when a rule allows it (listener + protocol tcp): its
  destination is the operator's `to`, not a client's choice, so the
  private list does not apply; another tcp listener that no rule allows
  is closed without a byte;
- the master's totals count acl_allowed=1, acl_denied=2, acl_private=0;
- `portico -t` names the line of the value at fault (ABI 1.2 where): a
  bad listener option on its own line, a port of 70000 on its own line
  inside a rule.
"""
import os
import re
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

ACL_SO = os.path.join(ptest.BUILDDIR, "modules", "acl", ".libs", "acl.so")

CONF = """
workers = 1;
error_log = "@TMP@/error.log";
log_level = "debug";
shutdown_timeout = 5;
listeners = (
  { name = "guarded"; address = "127.0.0.1:@A@"; protocol = "http"; },
  { name = "off"; address = "127.0.0.1:@B@"; protocol = "http";
    acl = {
      enabled = @ENABLED@; }; },
  { name = "fwd"; address = "127.0.0.1:@C@"; protocol = "tcp";
    to = "127.0.0.1:@O@"; },
  { name = "fwd2"; address = "127.0.0.1:@D@"; protocol = "tcp";
    to = "127.0.0.1:@O@"; }
);
modules = ( { name = "acl"; path = "@SO@"; default = "deny";
  rules = (
    { name = "forward"; action = "allow"; listener = "fwd";
      protocol = "tcp";
      port = @PORT@; } ); } );
"""


def conf_text(t, ports, origin_port, enabled="false", port=None):
    return ptest.fill(CONF, TMP=t.tmp, SO=ACL_SO, A=ports[0], B=ports[1],
                      C=ports[2], D=ports[3], O=origin_port,
                      ENABLED=enabled,
                      PORT=port if port is not None else origin_port)


def forward_get(port, path):
    """A raw GET through a tcp forwarder: the response bytes (b"" when
    the forwarder closed without any)."""
    s = socket.create_connection(("127.0.0.1", port),
                                 timeout=ptest.bound(5))
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                  % path.encode())
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            data += chunk
        return data
    finally:
        s.close()


def main(t):
    if not os.path.exists(ACL_SO):
        t.skip("acl module scenarios", "acl.so not built at %s (PCRE2 "
               "missing at configure)" % ACL_SO)
        return
    origin = H.origin(t)
    ports = [ptest.free_port() for _ in range(4)]
    p = t.portico(conf_text(t, ports, origin.port))

    r = H.get(ports[0], origin.url + "/echo?via=guarded")
    t.check(getattr(r, "status", None) == 403 and
            not origin.reqs_for("via=guarded"),
            "a listener without an acl group is guarded: default deny is "
            "403 and the origin sees nothing", lambda: [H.describe(r)
                                                       if not isinstance(r, str) else r])
    t.check(bool(p.wait_log(r"ACCESS: denied: acl: denied by default", 1)),
            "the refusal's reason names the default", H.log_tail(p))

    r = H.get(ports[1], origin.url + "/echo?via=off")
    t.check(getattr(r, "status", None) == 200 and
            len(origin.reqs_for("via=off")) == 1,
            "acl = { enabled = false; }: the module does not apply, the "
            "request reaches the origin", lambda: [r if isinstance(r, str)
                                                   else H.describe(r)])

    data = forward_get(ports[2], "/echo?via=fwd")
    t.check(data.startswith(b"HTTP/1.1 200") and
            len(origin.reqs_for("via=fwd")) == 1,
            "a tcp listener allowed by a rule reaches its own `to` on "
            "127.0.0.1: the private list is not applied to it",
            lambda: [data[:200]] + ptest.tail(p.log(), 10))
    data = forward_get(ports[3], "/echo?via=fwd2")
    t.check(data == b"" and not origin.reqs_for("via=fwd2"),
            "a tcp listener no rule allows is closed without a byte",
            lambda: [data[:200]])
    t.stop_portico(p)
    tot = {k: int(v) for k, v in re.findall(
        r"(\w+)=(\d+)", (p.log_lines(r"master: totals: ") or [""])[-1])}
    t.check(tot.get("acl_allowed") == 1 and tot.get("acl_denied") == 2 and
            tot.get("acl_private") == 0,
            "the totals count 1 allowed, 2 denied, 0 private",
            lambda: ["%s" % tot])

    # Errors name the line of the value at fault, not the group's.
    cases = [
        ("a listener's acl option of the wrong type",
         conf_text(t, ports, origin.port, enabled='"no"'),
         'enabled = "no"', ["acl", "enabled"]),
        ("a port out of range inside a rule",
         conf_text(t, ports, origin.port, port=70000),
         "port = 70000", ["acl", "70000", "rule 1 (\"forward\")"]),
    ]
    for i, (what, bad, needle, words) in enumerate(cases):
        path = t.path("bad%d.conf" % i)
        ptest.write_file(path, bad)
        where = "%s:%d:" % (path, ptest.line_of(bad, needle))
        r = ptest.run_portico(["-t", "-c", path])
        t.check(r.returncode == 1 and where in r.stderr and
                all(w in r.stderr for w in words),
                "-t refuses %s, naming its own line" % what,
                lambda: ["want %s %s" % (where, words), r.stderr])


if __name__ == "__main__":
    ptest.Test("acl_listener").run(main)
