#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
Chains through parent proxies, on loopback: a client talks to portico
(the front), the front forwards through a parent, the parent to the
counting origin (GET, POST) or the TCP echo (CONNECT, SOCKS5 CONNECT).
Each chain has an HTTP and a SOCKS5 listener on the front whose `via`
names its parent.

- portico as an HTTP parent, with credentials (its auth module and a
  userlist; the front's password in a password_file);
- portico as a SOCKS5 parent, with credentials (RFC 1929), resolve =
  "remote" (the name goes to the parent, whose resolver is asked, never
  the front's) and resolve = "local" (the front's resolver is asked, the
  parent's never);
- Debian's Squid as an HTTP parent with Basic auth (basic_ncsa_auth);
- Debian's danted as a SOCKS5 parent.

For each: GET (1 KiB back, the origin got it once, with the front's Via
and the parent's where the parent is an HTTP proxy, and no
Proxy-Authorization: the client's own credentials go nowhere), POST of
100 KiB (arrives whole), CONNECT and SOCKS5 CONNECT (64 KiB echoed, one
connection at the echo; to a target that speaks first, with bytes the
client sent before the answer: the banner, then the echo, nothing lost
or doubled), and curl through each listener. Ten GETs on one keep-alive
client connection through each chain; the front holds no more
descriptors after (a tunnel through a SOCKS parent is not kept), and a
GET of a listener without via after one through a SOCKS parent gets an
origin connection of its own. The parents' own records agree: Squid's
access.log names the front's user, danted's log the targets, the
resolvers' query counts where names were resolved.

Then what the parents answer: a scripted HTTP parent records the heads
it gets (the request line in absolute form, exactly one
Proxy-Authorization, the front's, never the client's, Via) and its own
403/407/502/503 to a GET reach the client as they are, body and all;
its 403 to CONNECT becomes 502 naming the parent (SOCKS5: not allowed,
0x02); a SOCKS5 parent's "connection refused" (0x05) reaches a SOCKS5
client as 0x05 and an HTTP CONNECT as 502. Credentials the parent
refuses: an HTTP parent's 407 to a GET is passed on, a CONNECT or SOCKS5
request through it fails (502, 0x01), as through a SOCKS5 parent that
refuses the front's password.
"""
import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402
import authtest as A  # noqa: E402
import parenttest as P  # noqa: E402

# The parent portico's user, and the front's credentials for it.
USER, PASSWORD = "svc", "pa:ss word"
SQUID_USER, SQUID_PASSWORD = "sqsvc", "squid-pw"
SCRIPT_USER, SCRIPT_PASSWORD = "scriptuser", "script-pw"
# What a client sends the front on its own: it must go no further.
CLIENT = ("client", "own-secret")
CLIENT_B64 = P.basic(*CLIENT).split()[1]

POST_LEN = 100 * 1024
TUNNEL_LEN = 64 * 1024


def via_text(r):
    """Every Via of a recorded request, joined as one list."""
    return ", ".join(P.header(r, "via"))


def tunnel(r, c, what):
    """64 KiB through an open tunnel: (ok, why)."""
    payload = os.urandom(TUNNEL_LEN)
    if not ((isinstance(r, H.Resp) and r.status == 200) or S.ok5(r)):
        return False, "%s: %r" % (what, r)
    try:
        c.send(payload)
        got = c.read_exact(len(payload))
    except Exception as e:
        return False, "%s: %s: %s" % (what, type(e).__name__, e)
    if got != payload:
        return False, "%s: %d bytes back, not the same" % (what, len(got))
    return True, None


def curl_status(args, url):
    cp = H.curl(["-o", "-", "-w", "\n%{http_code}"] + args + [url])
    out = cp.stdout
    body, _, code = out.rpartition(b"\n")
    return cp.returncode, code.decode(errors="replace"), body, cp.stderr


# ---------------------------------------------------------------------------
# one chain

class Chain:
    """One parent and the front's two listeners through it."""

    def __init__(self, key, label, parent, host, via_rx, hport, sport):
        self.key, self.label, self.parent = key, label, parent
        self.host = host
        self.via_rx = via_rx      # what the origin's Via must match
        self.hport, self.sport = hport, sport


BANNER = b"SSH-2.0-portico-test\r\n"
EARLY = b"early bytes, before the proxy answered"


class Banner(ptest._Server):
    """Says BANNER first (as an SSH or SMTP server does), then echoes."""

    def handle(self, c):
        c.sendall(BANNER)
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)


def run_chain(t, ch, origin, echo, banner):
    lab = ch.label
    url = "http://%s:%d/%s" % (ch.host, origin.port, ch.key)
    own = [("Proxy-Authorization", P.basic(*CLIENT))]

    # GET
    r = P.http_via(ch.hport, url + "/get", headers=own)
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == P.GET_BODY, "%s: GET -> 200 with the origin's 1 KiB"
            % lab, lambda: H.describe(r))
    reqs = [q for q in origin.snapshot() if q["path"] == "/%s/get" % ch.key]
    via = via_text(reqs[0]) if reqs else ""
    t.check(len(reqs) == 1 and re.fullmatch(ch.via_rx, via) is not None,
            "%s: the origin got the GET once, Via %s" % (lab, ch.via_rx),
            reqs)
    t.check(reqs and not P.header(reqs[0], "proxy-authorization") and
            CLIENT_B64 not in reqs[0]["raw_head"],
            "%s: no Proxy-Authorization at the origin, and nothing of the "
            "client's own credentials" % lab, reqs)

    # POST
    body = os.urandom(POST_LEN)
    r = P.http_via(ch.hport, url + "/post", method="POST", body=body,
                   headers=own)
    posts = [q for q in origin.snapshot()
             if q["path"] == "/%s/post" % ch.key]
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == b"%d" % POST_LEN and len(posts) == 1 and
            posts[0]["body_len"] == POST_LEN and
            posts[0]["body_sha256"] == hashlib.sha256(body).hexdigest() and
            not P.header(posts[0], "proxy-authorization"),
            "%s: POST of %d bytes -> 200, the origin got it once, whole, "
            "without Proxy-Authorization" % (lab, POST_LEN),
            lambda: H.describe(r) + [posts])

    # CONNECT
    before = len(echo.peers)
    r, c = P.connect_via(ch.hport, ch.host, echo.port, auth=CLIENT)
    try:
        ok, why = tunnel(r, c, "CONNECT")
    finally:
        if c is not None:
            c.close()
    t.check(ok and len(echo.peers) - before == 1, "%s: CONNECT -> 200, "
            "%d KiB echoed, one connection at the echo" % (
                lab, TUNNEL_LEN // 1024),
            lambda: [why, "echo connections: %d" % (len(echo.peers) -
                                                   before)] + H.describe(r))

    # SOCKS5 CONNECT
    before = len(echo.peers)
    r, c = P.socks5_connect(ch.sport, ch.host, echo.port)
    try:
        ok, why = tunnel(r, c, "SOCKS5 CONNECT")
    finally:
        c.close()
    t.check(ok and len(echo.peers) - before == 1, "%s: SOCKS5 CONNECT -> "
            "succeeded, %d KiB echoed, one connection at the echo" % (
                lab, TUNNEL_LEN // 1024),
            lambda: [why, repr(r), "echo connections: %d" %
                     (len(echo.peers) - before)])

    # a target that speaks first, a client that sends before the answer
    for what in ("CONNECT", "SOCKS5 CONNECT"):
        if what == "CONNECT":
            c = H.Conn.to(ch.hport, timeout=ptest.bound(10))
            hp = ptest.hostport(ch.host, banner.port)
            c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n%s"
                   % (hp, hp, EARLY.decode()))
        else:
            r, c = S.connect5(ch.sport, ch.host, banner.port, early=EARLY)
        try:
            if what == "CONNECT":
                r = H.read_response(c, "CONNECT")
            got = c.read_exact(len(BANNER) + len(EARLY))
        except Exception as e:
            got = ("%s: %s" % (type(e).__name__, e)).encode()
        finally:
            c.close()
        t.check(got == BANNER + EARLY,
                "%s: %s to a target that speaks first, with bytes sent "
                "before the answer: the banner, then the echo, whole"
                % (lab, what), lambda: [repr(r), repr(got)])

    # real clients
    if not H.have_curl():
        t.skip("%s: curl through both listeners" % lab, "no curl",
               need="curl")
        return
    rc, code, got, err = curl_status(
        ["-x", "http://127.0.0.1:%d" % ch.hport], url + "/curl-http")
    t.check(rc == 0 and code == "200" and got == P.GET_BODY,
            "%s: curl -x through the HTTP listener: 200, 1 KiB" % lab,
            ["exit %d, status %s, %d bytes, %s" % (rc, code, len(got),
                                                   err)])
    rc, code, got, err = curl_status(
        ["--socks5-hostname", "127.0.0.1:%d" % ch.sport],
        url + "/curl-socks")
    t.check(rc == 0 and code == "200" and got == P.GET_BODY,
            "%s: curl --socks5-hostname through the SOCKS5 listener: 200, "
            "1 KiB" % lab, ["exit %d, status %s, %d bytes, %s"
                            % (rc, code, len(got), err)])


# ---------------------------------------------------------------------------
# the peers

def parent_portico(t, dns):
    """portico as the parent: an HTTP and a SOCKS5 listener, both asking
    for credentials (auth module), its own resolver. (Portico, http port,
    socks port)."""
    ulist = A.write_users(t, [(USER, A.argon2id(PASSWORD))], "parent.users")
    hp, sp = ptest.free_port(), ptest.free_port()
    text = P.conf(t, "parent", [P.listener("phttp", hp, "http"),
                              P.listener("psocks", sp, "socks5")],
                modules=['{ name = "auth"; path = "%s"; userlist = "%s"; }'
                         % (A.AUTH_SO, ulist)], dns=dns)
    p = P.start_portico(t, text, [hp, sp], "parent.conf")
    return p, hp, sp


def main(t):
    origin = P.start_counting_origin(t)
    echo = P.start_echo(t)
    banner = Banner()
    t.servers.append(banner)
    names = ["pp.chain.test", "remote.chain.test", "local.chain.test"]
    table = {n: {"A": ["127.0.0.1"]} for n in names}
    dns_front = H.dns_server(t, table)
    dns_parent = H.dns_server(t, table)
    pw_file = t.path("parent.password")
    ptest.write_file(pw_file, PASSWORD + "\n")

    parents, chains, listeners, ports = [], [], [], []
    peers = {}

    def add_chain(key, label, parent_entry, host, via_rx):
        hp, sp = ptest.free_port(), ptest.free_port()
        parents.append(parent_entry)
        name = re.search(r'name = "([^"]+)"', parent_entry).group(1)
        listeners.append(P.listener(key + "-h", hp, "http", name))
        listeners.append(P.listener(key + "-s", sp, "socks5", name))
        ports.extend([hp, sp])
        ch = Chain(key, label, name, host, via_rx, hp, sp)
        ch.kind = re.search(r'protocol = "([^"]+)"', parent_entry).group(1)
        chains.append(ch)
        return ch

    # The peers first, the front's ports last: a port taken long before
    # it is bound may be another scenario's by then.
    why_auth = A.missing()
    pportico = None
    if why_auth and "curl" not in why_auth:
        t.skip("portico as an HTTP and a SOCKS5 parent with credentials",
               why_auth)
    else:
        pportico, php, psp = parent_portico(t, dns_parent)
        peers["portico"] = pportico
    why_squid = P.missing_squid() or P.missing_ncsa()
    if why_squid:
        t.skip("portico -> Squid (HTTP parent, Basic auth)", why_squid,
               need="squid" if P.missing_squid() else "squid_ncsa")
    else:
        sq = P.start_squid_parent(t, ptest.free_port(),
                                  users={SQUID_USER: SQUID_PASSWORD})
        if t.check(sq.up, "Squid answers on its loopback port", sq.why):
            peers["squid"] = sq
    why_dante = P.missing_dante()
    if why_dante:
        t.skip("portico -> danted (SOCKS5 parent)", why_dante,
               need="dante")
    else:
        dp = P.start_dante_parent(t, ptest.free_port())
        if t.check(dp.up, "danted answers on its loopback port", dp.why):
            peers["dante"] = dp
    script = P.start_script_parent(t)

    # The front's Via entry is "portico-<host>-<first listener's port>":
    # {FRONT} below.
    if pportico is not None:
        add_chain("pp", "portico -> portico (HTTP parent, credentials)",
                  P.entry(name="pp", address="127.0.0.1:%d" % php,
                          protocol="http", user=USER,
                          password_file=pw_file),
                  "pp.chain.test", r"1\.1 {FRONT}, 1\.1 portico")
        add_chain("psr", "portico -> portico (SOCKS5 parent, credentials, "
                  "resolve remote)",
                  P.entry(name="ps_remote", address="127.0.0.1:%d" % psp,
                          protocol="socks5", user=USER, password=PASSWORD,
                          resolve="remote"),
                  "remote.chain.test", r"1\.1 {FRONT}")
        add_chain("psl", "portico -> portico (SOCKS5 parent, credentials, "
                  "resolve local)",
                  P.entry(name="ps_local", address="127.0.0.1:%d" % psp,
                          protocol="socks5", user=USER,
                          password_file=pw_file, resolve="local"),
                  "local.chain.test", r"1\.1 {FRONT}")
        parents.append(P.entry(name="pp_bad", address="127.0.0.1:%d" % php,
                               protocol="http", user=USER, password="wrong",
                               max_fails=100))
        parents.append(P.entry(name="ps_bad", address="127.0.0.1:%d" % psp,
                               protocol="socks5", user=USER,
                               password="wrong", max_fails=100))
        bad_ports = {k: ptest.free_port() for k in
                     ("pp_bad_h", "pp_bad_s", "ps_bad_h", "ps_bad_s")}
        for k, port in bad_ports.items():
            listeners.append(P.listener(k, port, "http" if k.endswith("_h")
                                        else "socks5", k[:-2]))
        ports.extend(bad_ports.values())
    if "squid" in peers:
        add_chain("sq", "portico -> Squid (HTTP parent, Basic auth)",
                  P.entry(name="squid", address="127.0.0.1:%d"
                          % peers["squid"].port, protocol="http",
                          user=SQUID_USER, password=SQUID_PASSWORD),
                  "127.0.0.1",
                  r"1\.1 {FRONT}, 1\.1 portico-parent \(squid/[^)]*\)")
    if "dante" in peers:
        add_chain("da", "portico -> danted (SOCKS5 parent)",
                  P.entry(name="dante", address="127.0.0.1:%d"
                          % peers["dante"].port, protocol="socks5"),
                  "127.0.0.1", r"1\.1 {FRONT}")
    add_chain("sc", "portico -> scripted HTTP parent",
              P.entry(name="script", address="127.0.0.1:%d" % script.port,
                      protocol="http", user=SCRIPT_USER,
                      password=SCRIPT_PASSWORD), "127.0.0.1", r".*")
    script_chain = chains.pop()
    direct_port = ptest.free_port()
    listeners.append(P.listener("direct", direct_port, "http"))
    ports.append(direct_port)

    front_via = r"portico-[^ ,]+-%d" % ports[0]
    for ch in chains:
        ch.via_rx = ch.via_rx.replace("{FRONT}", front_via)
    front = P.start_portico(t, P.conf(t, "front", listeners, parents,
                                    dns=dns_front), ports, "front.conf")
    t.diag("front on %s; parents: %s" % (
        ", ".join("%s %d/%d" % (c.key, c.hport, c.sport)
                  for c in chains + [script_chain]),
        {k: getattr(v, "port", None) for k, v in peers.items()}))

    for ch in chains:
        run_chain(t, ch, origin, echo, banner)

    # -- what the parents themselves saw -----------------------------------
    if pportico is not None:
        counts = {n: (dns_front.count(n), dns_parent.count(n))
                  for n in names}
        t.check(counts["pp.chain.test"][0] == 0 and
                counts["pp.chain.test"][1] > 0,
                "HTTP parent: the parent resolved the name, the front never "
                "asked its resolver", counts)
        t.check(counts["remote.chain.test"][0] == 0 and
                counts["remote.chain.test"][1] > 0,
                "SOCKS5 parent, resolve remote: the name went to the "
                "parent, whose resolver was asked; the front's never was",
                counts)
        t.check(counts["local.chain.test"][0] > 0 and
                counts["local.chain.test"][1] == 0,
                "SOCKS5 parent, resolve local: the front resolved the name, "
                "the parent's resolver was never asked", counts)
    if "squid" in peers:
        sq = peers["squid"]
        # To the echo and to the banner, each for CONNECT and SOCKS5
        # CONNECT, and curl's SOCKS5 request: 5 tunnels.
        sq.wait_access_log(r" TCP_TUNNEL/200 ", count=5)
        lines = sq.access_log_lines()
        ok = [ln for ln in lines if "/200 " in ln]
        t.check(any(" GET " in ln and "/sq/get" in ln for ln in ok) and
                any(" POST " in ln and "/sq/post" in ln for ln in ok) and
                sum(" CONNECT " in ln for ln in ok) == 5 and
                all(ln.split()[7] == SQUID_USER for ln in ok) and
                not any(" TCP_DENIED/" in ln for ln in lines),
                "Squid's access.log: the GETs, the POST and the five "
                "tunnels, each as the front's user, no 407", lines)
    if "dante" in peers:
        dp = peers["dante"]
        dp.wait_log(r"tcp/connect \]: .*127\.0\.0\.1\.%d " % echo.port,
                    count=2)
        lines = dp.log_lines()
        t.check(any(re.search(r"tcp/connect .*127\.0\.0\.1\.%d(\s|$)"
                              % origin.port, ln) for ln in lines) and
                sum("tcp/connect ]" in ln and "127.0.0.1.%d " % echo.port
                    in ln for ln in lines) >= 2,
                "danted's log: connections to the origin and both tunnels "
                "to the echo", lines)

    part_keepalive(t, front, chains, origin, direct_port)
    part_script(t, script_chain, script, origin, echo, front_via)
    if pportico is not None:
        part_refusals(t, origin, echo, bad_ports,
                      next(c for c in chains if c.key == "psr"))
    if "dante" in peers:
        closed = ptest.free_port()
        r, c = P.socks5_connect(next(c for c in chains if c.key == "da")
                                .sport, "127.0.0.1", closed)
        c.close()
        t.check(isinstance(r, S.Reply) and r.rep == 0x05,
                "danted's 'connection refused' (0x05) for a closed port "
                "reaches the SOCKS5 client as 0x05", repr(r))

    t.check(not origin.bad, "the origin found nothing wrong in any request",
            origin.bad)
    t.stop_portico(front)
    if pportico is not None:
        t.stop_portico(pportico)
    for k in ("squid", "dante"):
        if k in peers:
            peers[k].stop()
            t.check(peers[k].gone(), "%s stopped by its PID, no child left"
                    % k, lambda: ["exit %s, killed %s" % (
                        peers[k].returncode, peers[k].leftovers)])


# ---------------------------------------------------------------------------
# keep-alive through parents

def part_keepalive(t, front, chains, origin, direct_port):
    """Ten GETs on one client connection through each chain; the front
    keeps no more descriptors after than before (a kept connection per
    HTTP parent at most), and a request of the direct listener never
    rides on a tunnel that went through a SOCKS parent."""
    worker = list(front.workers().values())[0]
    fds0 = ptest.fd_count(worker)
    for ch in chains:
        path = "/%s/ka" % ch.key
        url = "http://%s:%d%s" % (ch.host, origin.port, path)
        st = []
        c = H.Conn.to(ch.hport, timeout=ptest.bound(10))
        try:
            for i in range(10):
                c.send(H.request_bytes("GET", url + "?i=%d" % i))
                r = H.read_response(c)
                st.append(r.status if r.body == P.GET_BODY else r)
        except Exception as e:
            st.append("%s: %s" % (type(e).__name__, e))
        finally:
            c.close()
        t.check(st == [200] * 10 and origin.count(path=path) == 10,
                "%s: 10 GETs on one keep-alive client connection, each "
                "200 and at the origin once" % ch.label,
                (st, origin.count(path=path)))
    ok = ptest.wait_for(lambda: ptest.fd_count(worker) <= fds0 + 3,
                        ptest.bound(3))
    t.check(ok, "keep-alive through the parents: the front's worker holds "
            "%s descriptors after, %d before (no more than one kept "
            "connection per HTTP parent more)" % (ptest.fd_count(worker),
                                                   fds0))
    for ch in [ch for ch in chains if ch.kind == "socks5"]:
        P.http_via(ch.hport, "http://127.0.0.1:%d/%s/tunnelled"
                   % (origin.port, ch.key))
        P.http_via(direct_port, "http://127.0.0.1:%d/%s/direct"
                   % (origin.port, ch.key))
        reqs = {q["path"]: q for q in origin.snapshot()}
        a = reqs.get("/%s/tunnelled" % ch.key)
        b = reqs.get("/%s/direct" % ch.key)
        t.check(a is not None and b is not None and a["conn"] != b["conn"],
                "%s: a GET of the direct listener after one through the "
                "SOCKS parent to the same origin does not ride on its "
                "tunnel" % ch.label, [(q["path"], q["conn"], q["peer_addr"])
                                      for q in (a, b) if q])


# ---------------------------------------------------------------------------
# a scripted parent: what it gets, what it answers

def part_script(t, ch, script, origin, echo, front_via):
    own = [("Proxy-Authorization", P.basic(*CLIENT))]
    url = "http://127.0.0.1:%d/script" % origin.port
    mine = P.basic(SCRIPT_USER, SCRIPT_PASSWORD)
    r = P.http_via(ch.hport, url + "/get", headers=own)
    t.check(isinstance(r, H.Resp) and r.status == 200 and
            r.body == b"script parent", "scripted parent: GET -> its 200",
            lambda: H.describe(r))
    reqs = [q for q in script.snapshot() if q["method"] == "GET"]
    raw = reqs[0]["raw_head"] if reqs else ""
    t.check(len(reqs) == 1 and raw.startswith("GET %s/get HTTP/1.1\r\n"
                                              % url),
            "scripted parent: the request line in absolute form", raw)
    t.check(reqs and P.header(reqs[0], "proxy-authorization") == [mine] and
            CLIENT_B64 not in raw,
            "scripted parent: exactly one Proxy-Authorization, the front's "
            "(the client's own never reaches the parent)", raw)
    t.check(reqs and re.fullmatch(r"1\.1 " + front_via,
                                  via_text(reqs[0])) is not None,
            "scripted parent: Via names the front", raw)

    # One kept connection to the parent serves any origin's requests.
    n0 = len(script.snapshot())
    sts = [P.http_via(ch.hport, "http://127.0.0.1:%d/script/pool%d"
                      % (port, i)) for i, port in
           enumerate((origin.port, echo.port, origin.port))]
    got = script.snapshot()[n0:]
    t.check(all(isinstance(r, H.Resp) and r.status == 200 for r in sts)
            and len(got) == 3 and len({q["peer"] for q in got}) == 1,
            "scripted parent: three GETs on three client connections, to "
            "two origins, ride on one kept connection to the parent",
            [(q["target"], q["peer"]) for q in got])

    for st in (403, 407, 502, 503):
        r = P.http_via(ch.hport, url + "/status/%d" % st, headers=own)
        t.check(isinstance(r, H.Resp) and r.status == st and
                r.body == b"script parent %d" % st,
                "scripted parent: its own %d to a GET reaches the client, "
                "body and all" % st, lambda: H.describe(r))

    r, c = P.connect_via(ch.hport, "127.0.0.1", echo.port, auth=CLIENT)
    if c is not None:
        c.close()
    t.check(isinstance(r, H.Resp) and r.status == 502 and
            b'"script"' in r.body,
            "scripted parent: its 403 to CONNECT becomes 502, naming the "
            "parent", lambda: H.describe(r))
    conns = [q for q in script.snapshot() if q["method"] == "CONNECT"]
    raw = conns[0]["raw_head"] if conns else ""
    t.check(len(conns) == 1 and
            raw.startswith("CONNECT 127.0.0.1:%d HTTP/1.1\r\n" % echo.port)
            and P.header(conns[0], "proxy-authorization") == [mine] and
            CLIENT_B64 not in raw and
            re.fullmatch(r"1\.1 " + front_via, via_text(conns[0])),
            "scripted parent: the CONNECT names the target, carries the "
            "front's credentials only, and Via", raw)
    r, c = P.socks5_connect(ch.sport, "127.0.0.1", echo.port)
    c.close()
    t.check(isinstance(r, S.Reply) and r.rep == 0x02,
            "scripted parent: its 403 to the CONNECT of a SOCKS5 client "
            "reads as not allowed (0x02)", repr(r))
    t.check(origin.count(path="/script/get") == 0,
            "scripted parent: nothing went past it to the origin",
            origin.snapshot()[-3:])


# ---------------------------------------------------------------------------
# refusals by the parent portico

def part_refusals(t, origin, echo, bad, psr):
    r = P.http_via(bad["pp_bad_h"], "http://127.0.0.1:%d/bad/get"
                   % origin.port)
    t.check(isinstance(r, H.Resp) and r.status == 407,
            "HTTP parent refusing the front's credentials: its 407 to a "
            "GET is passed on", lambda: H.describe(r))
    r, c = P.connect_via(bad["pp_bad_h"], "127.0.0.1", echo.port)
    if c is not None:
        c.close()
    t.check(isinstance(r, H.Resp) and r.status == 502 and
            b'"pp_bad"' in r.body,
            "HTTP parent refusing the front's credentials: CONNECT -> 502 "
            "naming the parent", lambda: H.describe(r))
    r, c = P.socks5_connect(bad["pp_bad_s"], "127.0.0.1", echo.port)
    c.close()
    t.check(isinstance(r, S.Reply) and r.rep == 0x01,
            "HTTP parent refusing the front's credentials: SOCKS5 CONNECT "
            "-> general failure (0x01)", repr(r))
    r = P.http_via(bad["ps_bad_h"], "http://127.0.0.1:%d/bad/get2"
                   % origin.port)
    t.check(isinstance(r, H.Resp) and r.status == 502 and
            b'"ps_bad"' in r.body,
            "SOCKS5 parent refusing the front's password: GET -> 502 naming "
            "the parent", lambda: H.describe(r))
    r, c = P.socks5_connect(bad["ps_bad_s"], "127.0.0.1", echo.port)
    c.close()
    t.check(isinstance(r, S.Reply) and r.rep == 0x01,
            "SOCKS5 parent refusing the front's password: SOCKS5 CONNECT "
            "-> general failure (0x01)", repr(r))
    t.check(origin.count(path="/bad/get") == 0 and
            origin.count(path="/bad/get2") == 0,
            "nothing refused reached the origin", origin.snapshot()[-3:])

    closed = ptest.free_port()
    r, c = P.socks5_connect(psr.sport, "127.0.0.1", closed)
    c.close()
    t.check(isinstance(r, S.Reply) and r.rep == 0x05,
            "SOCKS5 parent's 'connection refused' (0x05) for a closed port "
            "reaches the SOCKS5 client as 0x05", repr(r))
    r, c = P.connect_via(psr.hport, "127.0.0.1", closed)
    if c is not None:
        c.close()
    t.check(isinstance(r, H.Resp) and r.status == 502,
            "SOCKS5 parent's 0x05: an HTTP CONNECT through it gets 502",
            lambda: H.describe(r))


if __name__ == "__main__":
    ptest.Test("parent_chain").run(main)
