#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
curl through a `protocol = "socks5"` listener to a loopback HTTP origin,
with every SOCKS flavour curl speaks: --socks5 (curl resolves, IPv4
address in the request), --socks5-hostname (the proxy resolves
"localhost"), --socks4, --socks4a, and socks5://user:pass@ with no auth
module (curl offers 0x00 and 0x02; the request goes through). Bodies are
byte-exact (sha256 of 1 MiB + 7, and 64 KiB with chunked framing); the
origin sees the requests in origin form, nothing added by the proxy.
"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import httptest as H  # noqa: E402
import sockstest as S  # noqa: E402

N = ptest.MiB + 7


def main(t):
    if not H.have_curl():
        t.skip("curl through SOCKS", "no curl")
        return
    o = H.origin(t)
    p, port = S.start(t, workers=2)
    w0 = p.workers()
    proxy = "127.0.0.1:%d" % port
    want = H.sha(H.pattern(N))

    cases = [
        ("--socks5", ["--socks5", proxy], "127.0.0.1"),
        ("--socks5-hostname", ["--socks5-hostname", proxy], "localhost"),
        ("--socks4", ["--socks4", proxy], "127.0.0.1"),
        ("--socks4a", ["--socks4a", proxy], "localhost"),
        ("socks5://user:pass@", ["--proxy", "socks5://user:pass@%s" % proxy],
         "127.0.0.1"),
        ("socks5h://user:pass@", ["--proxy",
                                  "socks5h://user:pass@%s" % proxy],
         "localhost"),
    ]
    for label, args, host in cases:
        tag = label.strip("-").replace(":", "").replace("/", "") \
            .replace("@", "")
        url = "http://%s:%d/len?n=%d&id=%s" % (host, o.port, N, tag)
        cp = H.curl(args + [url])
        g = o.reqs_for("id=" + tag)
        t.check(cp.returncode == 0 and len(cp.stdout) == N and
                H.sha(cp.stdout) == want,
                "curl %s http://%s:PORT/: %d bytes, sha256 equal"
                % (label, host, N),
                lambda: ["curl exit %d, %d bytes: %s" % (
                    cp.returncode, len(cp.stdout), cp.stderr)] +
                ["origin saw %r" % [(r["target"], r["headers"])
                                    for r in g]] + H.log_tail(p)())
        t.check(len(g) == 1 and g[0]["target"].startswith("/len?") and
                not H.fields(g[0]["headers"], "via") and
                not H.fields(g[0]["headers"], "forwarded"),
                "curl %s: the origin sees one request in origin form, no "
                "Via or Forwarded (a tunnel, not an HTTP proxy)" % label,
                lambda: ["origin saw %r" % [(r["target"], r["headers"])
                                            for r in g]])

    # chunked framing and a POST body, both ways exact
    body = H.pattern(300000)
    # curl reads the body from a file (stdin is closed by H.curl)
    path = t.path("post.bin")
    with open(path, "wb") as f:
        f.write(body)
    cp = H.curl(["--socks5-hostname", proxy, "--data-binary", "@" + path,
                 "-H", "Content-Type: application/octet-stream",
                 "http://localhost:%d/echo?id=post" % o.port])
    g = o.reqs_for("id=post")
    t.check(cp.returncode == 0 and len(g) == 1 and
            g[0]["body_len"] == len(body) and
            g[0]["body_sha256"] == H.sha(body),
            "curl --socks5-hostname POST of 300000 bytes: the origin gets "
            "them exact", lambda: ["curl exit %d: %s" % (
                cp.returncode, cp.stderr), "origin %r" % [
                (r["target"], r["body_len"]) for r in g]])
    cp = H.curl(["--socks4a", proxy,
                 "http://localhost:%d/chunked?n=65536&chunk=1000&id=ch"
                 % o.port])
    t.check(cp.returncode == 0 and cp.stdout == H.pattern(65536),
            "curl --socks4a, a chunked 64 KiB body: exact",
            lambda: ["curl exit %d, %d bytes: %s" % (
                cp.returncode, len(cp.stdout), cp.stderr)])

    # several curls at once on two workers
    res = {}

    def one(i):
        res[i] = H.curl(["--socks5", proxy, "http://127.0.0.1:%d/len?n=%d"
                         "&id=par%d" % (o.port, 200000 + i, i)])
    ths = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(ptest.bound(30))
    bad = ["%d: exit %s, %d bytes, %s" % (i, r.returncode, len(r.stdout),
                                          r.stderr)
           for i, r in sorted(res.items())
           if r.returncode != 0 or r.stdout != H.pattern(200000 + i)]
    t.check(len(res) == 8 and not bad, "8 curls at once through --socks5: "
            "every body exact", bad)
    t.check(not o.bad, "the origin found nothing wrong in any request",
            o.bad)
    H.finish(t, p, w0)


if __name__ == "__main__":
    ptest.Test("socks_curl").run(main)
