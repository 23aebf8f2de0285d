#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
A client that closes while its HTTP request waits is not served behind
its back (issue 9): nothing is dialed and nothing reaches the origin.

- a module keeps ACCESS waiting (AGAIN, resumed after 300 ms): a client
  that sends a GET and closes at once leaves the origin without a
  connection, and LOG says why; one that stays gets its 200;
- the resolver is slow (a DNS server answering after 800 ms): the same.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402

WAIT_MS = 300
DNS_DELAY = 0.8


class SlowDns(H.DnsServer):
    """Answers like DnsServer, each answer DNS_DELAY seconds late."""

    def _answer(self, data):
        time.sleep(DNS_DELAY)
        return super()._answer(data)


def start(t, name, module, resolver=""):
    port = ptest.free_port()
    rec = t.path(name + ".rec")
    text = """workers = 1;
error_log = "%s/error.log";
log_level = "info";
pid_file = "%s/portico.pid";
shutdown_timeout = 5;
listeners = ( { address = "127.0.0.1:%d"; protocol = "http"; } );
limits = { header_timeout = 10; connect_timeout = 5; idle_timeout = 30; };
%s
modules = ( { name = "answer"; path = "%s/answer.so"; record = "%s"; %s } );
""" % (t.tmp, t.tmp, port, resolver, ptest.TESTMODDIR, rec, module)
    return t.portico(text, conf_name=name + ".conf"), port, rec


def logs(rec):
    try:
        with open(rec) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return [dict(w.split("=", 1) for w in ln.split()[1:] if "=" in w)
            for ln in lines if ln.startswith("LOG ")]


def send_and_close(port, url, pause):
    s = ptest.connect(port)
    s.sendall(b"GET " + url.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    if pause:
        time.sleep(pause)
    s.close()


def gone(t, o, port, rec, url, tag, wait, label, pause=0):
    """<pause> 0: the FIN comes with the request; else that much later,
    while the request waits."""
    before = o.accepted
    n = len(logs(rec))
    send_and_close(port, url, pause)
    # Long enough for the wait to end and a dial to reach the origin.
    time.sleep(wait + 0.7 * ptest.SLOW)
    ptest.wait_for(lambda: len(logs(rec)) > n, ptest.bound(5))
    got = logs(rec)[n:]
    t.check(o.accepted == before and not o.reqs_for(tag),
            "%s: a client that sent a GET and closed while it waited: the "
            "origin sees no connection" % label,
            "origin accepted %d" % (o.accepted - before))
    t.check(len(got) == 1 and got[0].get("error") ==
            "client_closed_while_its_request_waited",
            "%s: LOG says the client closed while its request waited"
            % label, got)


def main(t):
    o = H.origin(t)

    p, port, rec = start(t, "module", 'phase = "ACCESS"; '
                         'verdict = "CONTINUE"; again_ms = %d;' % WAIT_MS)
    gone(t, o, port, rec, o.url + "/echo?id=gone1", "id=gone1",
         WAIT_MS / 1000.0, "ACCESS waiting")
    gone(t, o, port, rec, o.url + "/echo?id=gone3", "id=gone3",
         WAIT_MS / 1000.0, "ACCESS waiting, FIN 100 ms after the request",
         pause=0.1)
    r = H.get(port, o.url + "/echo?id=stays")
    t.check(isinstance(r, H.Resp) and r.status == 200,
            "ACCESS waiting: a client that stays gets its 200",
            lambda: H.describe(r))
    t.stop_portico(p)

    # Two names: the second request must not find the first in the cache.
    dns = SlowDns({"slow.test": {"A": ["127.0.0.1"]},
                   "slow2.test": {"A": ["127.0.0.1"]}})
    t.at_exit(dns.stop)
    p, port, rec = start(
        t, "dns", 'phase = "DIAL"; verdict = "CONTINUE";',
        'resolver = { servers = "%s"; timeout = 5; };' % dns.address)
    gone(t, o, port, rec, "http://slow.test:%d/echo?id=gone2" % o.port,
         "id=gone2", DNS_DELAY * 2, "resolver waiting")
    gone(t, o, port, rec, "http://slow2.test:%d/echo?id=gone4" % o.port,
         "id=gone4", DNS_DELAY * 2,
         "resolver waiting, FIN 200 ms after the request", pause=0.2)
    t.check(dns.count("slow.test") > 0 and dns.count("slow2.test") > 0,
            "the names were being resolved", dns.queries)
    t.stop_portico(p)


if __name__ == "__main__":
    ptest.Test("http_client_gone").run(main)
