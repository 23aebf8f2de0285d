# SPDX-License-Identifier: BSD-2-Clause
"""
Shared by the t/integ/acl_*.py scenarios: where the real acl.so is (the
build tree's modules/acl/.libs; configure builds it only when it finds
libpcre2-8), a configuration with the module loaded (and, when asked,
fieldrec after it to read the decision label at LOG, and the auth
module), the module's entry and rules written as libconfig, an origin
on a chosen address and port (origin_at: another loopback address with
the same port, so a name resolving to both could reach either), and the
client side every scenario uses: one HTTP request on a fresh connection
(from a chosen source address, to an IPv4 or IPv6 listener), a row of
requests on keep-alive connections, CONNECT, SOCKS5 (also with a name
that is an address literal) and SOCKS4 requests, and Judge: the verdict
of each HTTP request against what the origin saw, the 403 body, and the
label fieldrec recorded at LOG.
"""
import itertools
import os
import re
import socket
import threading

import ptest
import httptest as H
import sockstest as S

ACL_SO = os.path.join(ptest.BUILDDIR, "modules", "acl", ".libs", "acl.so")
FIELDREC_SO = os.path.join(ptest.TESTMODDIR, "fieldrec.so")

# Tags are unique in the whole scenario: several Judges share origins.
_tags = itertools.count(1)


def missing():
    """What this machine lacks for the acl scenarios, or None."""
    if not os.path.exists(ACL_SO):
        return "acl.so not built at %s (configure builds it with " \
            "libpcre2-8)" % ACL_SO
    return None


def have_fieldrec():
    return os.path.exists(FIELDREC_SO)


def can_bind(host):
    """Whether a TCP socket can be bound to IPv4 <host> (127.0.0.2 and
    the rest of 127/8 are on lo on Linux, not everywhere)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, 0))
        return True
    except OSError:
        return False
    finally:
        s.close()


# ---------------------------------------------------------------------------
# configuration

def value(v):
    """libconfig text for a rule's value: a scalar, an array [ ] when
    every element has one type, else a list ( )."""
    if isinstance(v, (list, tuple)):
        kinds = set(type(x) for x in v)
        inner = ", ".join(value(x) for x in v)
        return ("[ %s ]" if len(kinds) <= 1 else "( %s )") % inner
    return ptest._conf_value(v, 0)


def rule(**kw):
    """One rule as a libconfig group on one line; keys in the order
    given ("action" first when there is one makes the text readable)."""
    return "{ " + " ".join("%s = %s;" % (k, value(v))
                           for k, v in kw.items()) + " }"


def acl_entry(rules=None, default=None, allow_private=None, extra=""):
    """The acl module's entry in modules = ( ... ). <rules>: list of dicts
    (see rule) or of ready texts; None leaves the key out, as do
    default=None and allow_private=None (the module's defaults)."""
    parts = ['name = "acl";', 'path = "%s";' % ACL_SO]
    if default is not None:
        parts.append('default = "%s";' % default)
    if allow_private is not None:
        parts.append("allow_private = %s;" % ("true" if allow_private
                                              else "false"))
    if extra:
        parts.append(extra)
    text = "{ " + " ".join(parts)
    if rules is not None:
        lines = [r if isinstance(r, str) else rule(**r) for r in rules]
        text += "\n    rules = (\n      " + ",\n      ".join(lines) + \
            "\n    );"
    return text + " }"


def fieldrec_entry(rec, extra=""):
    """fieldrec after acl: its LOG line has the label acl set."""
    return '{ name = "fieldrec"; path = "%s"; record = "%s"; %s}' % (
        FIELDREC_SO, rec, extra + " " if extra else "")


def http_listener(name, port, extra=""):
    n = 'name = "%s"; ' % name if name else ""
    return '{ %saddress = "127.0.0.1:%d"; protocol = "http"; %s}' % (
        n, port, extra + " " if extra else "")


def socks_listener(name, port, extra=""):
    n = 'name = "%s"; ' % name if name else ""
    return '{ %saddress = "127.0.0.1:%d"; protocol = "socks5"; %s}' % (
        n, port, extra + " " if extra else "")


def conf(t, listeners, modules, log="error.log", workers=1, dns=None,
         log_level="info", limits=""):
    """A whole configuration: <listeners> and <modules> are lists of
    entry texts; <dns> a httptest.DnsServer the resolver asks."""
    res = ('resolver = { servers = "%s"; timeout = 1; };\n' % dns.address
           if dns is not None else "")
    return """workers = %d;
error_log = "%s";
log_level = "%s";
pid_file = "%s";
shutdown_timeout = 5;
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; %s};
http = { connect_ports = "*"; };
%slisteners = (
  %s
);
modules = (
  %s
);
""" % (workers, t.path(log), log_level, t.path(log + ".pid"), limits, res,
       ",\n  ".join(listeners), ",\n  ".join(modules))


def start(t, listeners, modules, log="error.log", **kw):
    """Portico on conf(); its error log is <tmp>/<log> (one per instance:
    several in one scenario must not share it)."""
    return t.portico(conf(t, listeners, modules, log=log, **kw),
                     conf_name=log.replace(".log", ".conf"))


def totals(p):
    """{name: int} of the master's last totals line."""
    tot = p.log_lines(r"master: totals: |\btotals: ")
    if not tot:
        return {}
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", tot[-1])}


def origin_at(t, host, port):
    """A httptest origin on <host>:<port> (another address's origin may
    have that port: a name resolving to both then reaches either)."""
    o = H.Origin.__new__(H.Origin)
    o.requests, o.bad, o.serial = [], [], 0
    o.hang_release = threading.Event()
    ptest._Server.__init__(o, host, port)
    t.servers.append(o)
    return o


# ---------------------------------------------------------------------------
# clients

def conn_from(port, src=None, timeout=None, host="127.0.0.1"):
    """A H.Conn to the proxy on <host>:<port>, from <src> (an address
    of this machine) when given."""
    timeout = timeout or ptest.bound(10)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                      socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        if src:
            s.bind((src, 0))
        s.connect((host, port))
    except BaseException:
        s.close()
        raise
    return H.Conn(s, timeout)


def request(port, method, url, src=None, headers=(), body=None,
            host="127.0.0.1"):
    """One request on a fresh connection to the proxy at <host>:<port>
    (closed after). Returns the Resp or the error as a string."""
    try:
        c = conn_from(port, src, host=host)
    except Exception as e:
        return "connect: %s" % ptest.err_kind(e)
    try:
        if body is None and method in ("POST", "PUT"):
            body = b"acl body"
        c.send(H.request_bytes(method, url, headers, body))
        return H.read_response(c, method)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
    finally:
        c.close()


def keepalive(port, reqs):
    """[(method, url)] sent one after another on one connection, opening
    another when the proxy closed it (after a refusal it may). Returns the
    status (or error string) of each."""
    out = []
    c = None
    for method, url in reqs:
        body = b"acl body" if method in ("POST", "PUT") else None
        r = None
        for attempt in range(2):
            try:
                if c is None:
                    c = conn_from(port)
                c.send(H.request_bytes(method, url, body=body))
                r = H.read_response(c, method).status
                break
            except Exception as e:
                r = "%s: %s" % (type(e).__name__, e)
                if c is not None:
                    c.close()
                c = None
        out.append(r)
    if c is not None:
        c.close()
    return out


def connect_http(port, host, tport, src=None):
    """CONNECT host:tport; on 200 a byte through the tunnel to an echo
    server. Returns (status or error string, echoed ok)."""
    try:
        c = conn_from(port, src)
    except Exception as e:
        return "connect: %s" % ptest.err_kind(e), False
    try:
        hp = ptest.hostport(host, tport) if ":" in host else \
            "%s:%d" % (host, tport)
        c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (hp, hp))
        r = H.read_response(c, "CONNECT")
        if r.status != 200:
            return r.status, False
        c.send(b"ping\n")
        return 200, c.read_exact(5) == b"ping\n"
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), False
    finally:
        c.close()


def socks5(port, host, tport):
    """SOCKS5 CONNECT: (REP or error string, echoed ok, closed after a
    refusal). The target is an echo server."""
    r, c = S.connect5(port, host, tport, timeout=ptest.bound(10))
    try:
        if not isinstance(r, S.Reply):
            return r, False, None
        if r.rep != 0:
            _, how, _ = S.ending(c, ptest.bound(3))
            return r.rep, False, S.closes(how)
        ok, _ = S.echo_check(c, b"ping5")
        return 0, ok, None
    finally:
        c.close()


def socks5_name(port, name, tport):
    """SOCKS5 CONNECT with ATYP 3 (a name) even when <name> is an address
    literal: (REP or error string, closed after a refusal)."""
    try:
        c = S.Client.to(port, timeout=ptest.bound(10))
    except Exception as e:
        return "connect: %s" % ptest.err_kind(e), None
    try:
        if c.greet([S.M_NONE]) != S.M_NONE:
            return "no method", None
        n = name.encode()
        c.send(b"\x05\x01\x00\x03" + bytes([len(n)]) + n +
               tport.to_bytes(2, "big"))
        r = c.read_reply()
        if r.rep == 0:
            return 0, None
        _, how, _ = S.ending(c, ptest.bound(3))
        return r.rep, S.closes(how)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e), None
    finally:
        c.close()


def socks4(port, ip, tport, name=None):
    """SOCKS4 (or 4a with <name>) CONNECT: (CD or error string, echoed
    ok, closed after a refusal)."""
    r, c = S.connect4(port, ip, tport, name=name, timeout=ptest.bound(10))
    try:
        if not isinstance(r, S.Reply4):
            return r, False, None
        if r.cd != 0x5A:
            _, how, _ = S.ending(c, ptest.bound(3))
            return r.cd, False, S.closes(how)
        ok, _ = S.echo_check(c, b"ping4")
        return 0x5A, ok, None
    finally:
        c.close()


# ---------------------------------------------------------------------------
# verdicts

class Judge:
    """Sends HTTP requests through one proxy port and checks each answer
    against what the origin saw. Every URL carries a unique tag in its
    path so the origin's record and fieldrec's LOG line can be found."""

    def __init__(self, t, origin, port, rec=None, secret=()):
        self.t = t
        self.o = origin
        self.port = port
        self.rec = rec
        # words no 403 body may contain (the rules' names)
        self.secret = list(secret)

    def tag(self):
        return "acl%04d" % next(_tags)

    def url(self, host, tag, port=None):
        return "http://%s:%d/%s" % (host, port or self.o.port, tag)

    def http(self, host, want, desc, method="GET", src=None, port=None,
             origin=None, headers=(), label=None, via=None,
             via_host="127.0.0.1"):
        """<method> http://<host>:<origin port>/<tag> through the proxy
        (or <via>): <want> 200 (the origin saw it) or 403 (it did not,
        and the body names no rule). <label>: the label fieldrec must see
        at LOG. Returns whether it passed."""
        o = origin or self.o
        tag = self.tag()
        url = self.url(host, tag, port or o.port)
        r = request(via or self.port, method, url, src=src, headers=headers,
                    host=via_host)
        seen = o.reqs_for("/" + tag)
        st = r.status if isinstance(r, H.Resp) else r
        ok = st == want
        why = []
        if want == 200:
            ok = ok and len(seen) == 1 and seen[0]["method"] == method
        else:
            ok = ok and not seen
            if isinstance(r, H.Resp):
                body = r.body.decode("latin-1").lower()
                leak = [w for w in self.secret if w.lower() in body]
                if leak:
                    ok = False
                    why.append("the 403 body names %r" % leak)
        if label is not None and self.rec:
            got = self.label_of(tag)
            if got != label:
                ok = False
                why.append("label at LOG %r, expected %r" % (got, label))
        return self.t.check(ok, "%s %s: %s%s" % (
            method, url.replace(tag, "..."), want, (", label " + label)
            if label is not None and self.rec else "") + " (" + desc + ")",
            lambda: why + ["status %r, the origin saw %d request(s)" % (
                st, len(seen))] + H.describe(r))

    def label_of(self, tag, timeout=None):
        """The label of the LOG line whose path has <tag> (waits)."""
        def find():
            for ev, kv in ptest.records(self.rec):
                if ev == "LOG" and kv.get("mod") == "fieldrec" and \
                        tag in kv.get("path", ""):
                    return kv.get("label")
            return None
        return ptest.wait_for(find, timeout or ptest.bound(5))

    def logs(self, ev="LOG"):
        return [kv for e, kv in ptest.records(self.rec)
                if e == ev and kv.get("mod") == "fieldrec"]

    def new_log(self, before, proto=None, timeout=None):
        """The LOG lines after the first <before> ones, of protocol
        <proto> (a PT_PROTO_ number as text) when given; waits for one."""
        def new():
            return [kv for kv in self.logs()[before:]
                    if proto is None or kv.get("proto") == proto]
        return ptest.wait_for(new, timeout or ptest.bound(5)) or []
