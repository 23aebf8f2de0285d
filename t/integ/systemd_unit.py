#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The systemd unit the build generates (etc/portico.service from
etc/portico.service.in, with configure's sbindir and sysconfdir):

- it says what portico needs: Type=notify, ExecStart in the foreground
  (-f) with -c, ExecReload sending SIGHUP to $MAINPID, a draining stop
  (KillSignal=SIGQUIT, KillMode=mixed), LimitNOFILE, the hardening
  directives and the capability bounding set; no @placeholder@ is left;
- `systemd-analyze verify` accepts it without a complaint (on a copy whose
  commands name the built binary: verify wants the installed path to
  exist), and complains about a copy with a misspelt key (so the check
  can fail).
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402


def verify(path):
    """(exit status, complaints naming the unit) of systemd-analyze."""
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=ptest.bound(60))
    out = r.stdout.decode(errors="replace").splitlines()
    name = os.path.basename(path)
    return r.returncode, [ln for ln in out if name in ln]


def main(t):
    unit = os.path.join(os.path.dirname(ptest.PORTICO), "etc",
                        "portico.service")
    if not t.check(os.path.exists(unit), "the build generated %s" % unit):
        return
    with open(unit) as f:
        text = f.read()
    keys = {}
    for ln in text.splitlines():
        m = re.match(r"^([A-Za-z]+)=(.*)$", ln)
        if m:
            keys.setdefault(m.group(1), []).append(m.group(2))

    def one(k):
        return (keys.get(k) or [""])[-1]

    t.check("@" not in re.sub(r"(?m)^#.*$", "", text),
            "no @placeholder@ left", text)
    t.check(one("Type") == "notify", "Type=notify", one("Type"))
    start = one("ExecStart").split()
    t.check(len(start) == 4 and start[0].endswith("/sbin/portico") and
            start[1] == "-f" and start[2] == "-c" and
            start[3].endswith("/portico/portico.conf"),
            "ExecStart=<sbindir>/portico -f -c <sysconfdir>/portico/"
            "portico.conf", one("ExecStart"))
    t.check("/bin/kill -HUP $MAINPID" in keys.get("ExecReload", []),
            "ExecReload sends SIGHUP to $MAINPID", keys.get("ExecReload"))
    t.check(one("KillSignal") == "SIGQUIT" and one("KillMode") == "mixed",
            "stop drains: KillSignal=SIGQUIT to the master (KillMode=mixed)",
            "%s %s" % (one("KillSignal"), one("KillMode")))
    t.check(one("LimitNOFILE").isdigit(), "LimitNOFILE is set",
            one("LimitNOFILE"))
    caps = set(one("CapabilityBoundingSet").split())
    t.check({"CAP_NET_BIND_SERVICE", "CAP_SETUID", "CAP_SETGID"} <= caps,
            "CapabilityBoundingSet keeps CAP_NET_BIND_SERVICE, CAP_SETUID "
            "and CAP_SETGID", str(caps))
    t.check(one("ProtectSystem") == "strict" and
            one("PrivateTmp") == "yes" and one("NoNewPrivileges") == "yes",
            "ProtectSystem=strict, PrivateTmp=yes, NoNewPrivileges=yes",
            str(keys))

    if shutil.which("systemd-analyze") is None:
        t.skip("systemd-analyze verify accepts the unit",
               "no systemd-analyze program", need="systemd-analyze")
        return
    os.mkdir(t.path("units"))
    copy = t.path("units", "portico.service")
    ptest.write_file(copy, text.replace(start[0], ptest.PORTICO))
    rc, complaints = verify(copy)
    t.check(rc == 0 and not complaints,
            "systemd-analyze verify accepts the unit", complaints)
    bad = t.path("units", "portico-typo.service")
    ptest.write_file(bad, text.replace(start[0], ptest.PORTICO)
                     .replace("KillMode=", "KilMode="))
    rc, complaints = verify(bad)
    t.check(complaints, "systemd-analyze verify complains about a misspelt "
            "key (the check can fail)", "exit %d, nothing said" % rc)


ptest.Test("systemd_unit").run(main)
