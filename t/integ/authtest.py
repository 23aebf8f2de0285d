# SPDX-License-Identifier: BSD-2-Clause
"""
Shared by the t/integ/auth_*.py scenarios: where the real auth.so is (the
build tree's modules/auth/.libs), userlist hashes made with real tools
(argon2, mkpasswd, htpasswd), a configuration with the module loaded, and
curl through the proxy.
"""
import base64
import math
import os
import re
import resource
import secrets
import shutil
import subprocess

import ptest
import httptest as H

AUTH_SO = os.path.join(ptest.BUILDDIR, "modules", "auth", ".libs",
                       "auth.so")


def missing():
    """What this machine lacks for the auth scenarios, or None."""
    if not os.path.exists(AUTH_SO):
        return "auth.so not built at %s" % AUTH_SO
    if shutil.which("argon2") is None:
        return "no argon2 program in PATH"
    if not H.have_curl():
        return "no curl"
    return None


def _run(argv, data=None):
    cp = subprocess.run(argv, input=data, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=ptest.bound(30))
    if cp.returncode != 0:
        raise RuntimeError("%s: %s" % (argv, cp.stderr))
    return cp.stdout.decode().strip()


def argon2id(password, t_cost=1, m_kib=1024, p=1):
    """An Argon2id PHC string made by Debian's argon2 program."""
    salt = secrets.token_hex(8)
    return _run(["argon2", salt, "-id", "-t", str(t_cost), "-k", str(m_kib),
                 "-p", str(p), "-e"], password.encode())


def argon2id_lasting(password, seconds, m_kib=32768):
    """An Argon2id PHC string (<m_kib> of memory) whose verification takes
    about <seconds> or more of CPU time on this machine: its t_cost is
    scaled from the CPU time of a timed run of the argon2 program at t=8
    (which also pays the program's start and first touch of the memory,
    so the estimate errs long). A login that must hold a verification
    thread while a test does something then holds it about as long on a
    fast machine as on a slow one, where a fixed t_cost lasted 0.2 s on
    one machine and too little on another."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    argon2id(password, t_cost=8, m_kib=m_kib)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    per_pass = max((r1.ru_utime + r1.ru_stime -
                    r0.ru_utime - r0.ru_stime) / 8, 0.001)
    t_cost = min(max(int(math.ceil(seconds / per_pass)), 1), 1000)
    return argon2id(password, t_cost=t_cost, m_kib=m_kib)


def mkpasswd(password, method):
    """mkpasswd -m <method> (Debian package whois), or None."""
    if shutil.which("mkpasswd") is None:
        return None
    return _run(["mkpasswd", "-m", method, "--stdin"], password.encode())


def htpasswd(user, password, flag):
    """The hash of `htpasswd -nb<flag>` (apache2-utils), or None."""
    if shutil.which("htpasswd") is None:
        return None
    line = _run(["htpasswd", "-nb" + flag, user, password])
    return line.split(":", 1)[1]


def write_users(t, entries, name="users"):
    """Writes [(user, hash)] (or raw lines) as a userlist; its path."""
    path = t.path(name)
    lines = ["# test userlist"]
    for e in entries:
        lines.append(e if isinstance(e, str) else "%s:%s" % e)
    ptest.write_file(path, "\n".join(lines) + "\n")
    return path


def conf(t, listeners, userlist, workers=1, mod_extra="", log_level="info"):
    """A configuration with <listeners> (text of listener entries) and
    the auth module on <userlist>."""
    return """workers = %d;
error_log = "%s/error.log";
log_level = "%s";
pid_file = "%s/portico.pid";
shutdown_timeout = 5;
limits = { header_timeout = 30; connect_timeout = 5; idle_timeout = 30; };
listeners = (
%s
);
modules = ( { name = "auth"; path = "%s"; userlist = "%s"; %s } );
""" % (workers, t.tmp, log_level, t.tmp, listeners, AUTH_SO, userlist,
       mod_extra)


def curl_proxy(port, urls, user=None, extra=()):
    """curl -x through <port>: (exit code, [status per url], stderr,
    connections opened)."""
    args = ["-o", "/dev/null", "-w", "%{http_code} %{num_connects}\\n",
            "-x", "http://127.0.0.1:%d" % port]
    if user is not None:
        args += ["-U", user]
    cp = H.curl(args + list(extra) + list(urls))
    out = cp.stdout.decode()
    codes = [int(m.group(1)) for m in re.finditer(r"(\d{3}) \d+", out)]
    conns = sum(int(m.group(1)) for m in re.finditer(r"\d{3} (\d+)", out))
    return cp.returncode, codes, cp.stderr.decode(errors="replace"), conns


def curl_head(port, url, user=None):
    """(status, raw head) of one request through <port>."""
    args = ["-D", "-", "-o", "/dev/null", "-x", "http://127.0.0.1:%d" % port]
    if user is not None:
        args += ["-U", user]
    cp = H.curl(args + [url])
    text = cp.stdout.decode("latin-1")
    m = re.match(r"HTTP/1\.1 (\d{3})", text)
    return (int(m.group(1)) if m else 0), text


def curl_socks(port, url, cred=None, v4=False):
    """(exit code, status) of curl through a SOCKS listener."""
    if v4:
        proxy = ["--socks4", "127.0.0.1:%d" % port]
    else:
        proxy = ["--socks5", "%s127.0.0.1:%d" % (
            (cred + "@") if cred else "", port)]
    cp = H.curl(["-o", "/dev/null", "-w", "%{http_code}"] + proxy + [url])
    return cp.returncode, cp.stdout.decode()


def failures(p):
    """The auth failure lines of <p>'s error log, as dicts."""
    out = []
    for ln in p.log_lines(r"auth: failure "):
        m = re.search(r'auth: failure client=(\S+) user="([^"]*)" '
                      r'proto=(\S+) listener=(\S+) reason=(\S+)$', ln)
        out.append(dict(zip(("client", "user", "proto", "listener",
                             "reason"), m.groups())) if m else {"raw": ln})
    return out


def totals(p):
    """{name: int} of the master's last totals line."""
    tot = p.log_lines(r"master: totals: ")
    if not tot:
        return {}
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", tot[-1])}


def verifier_cpu(pid):
    """CPU ticks (utime + stime) of <pid>'s verification threads (the
    auth pool's, named "pt-auth"): they grow while one verifies."""
    n = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                st = f.read()
        except OSError:
            continue
        if st[st.index("(") + 1:st.rindex(")")] == "pt-auth":
            f = st[st.rindex(")") + 2:].split()
            n += int(f[11]) + int(f[12])
    return n


def wait_verifying(pid, base, timeout):
    """Waits (bounded) until <pid>'s verification threads took CPU since
    <base> (a verifier_cpu reading): a login is on a thread. True if so.
    A scenario that queues logins behind one starts them only then: on a
    loaded machine a fixed pause let them reach the thread first."""
    return bool(ptest.wait_for(lambda: verifier_cpu(pid) > base, timeout,
                               interval=0.01))


def basic_get(origin_port, path, cred):
    """The bytes of a GET of http://127.0.0.1:<origin_port><path> with
    Basic credentials <cred> ("user:password") and Connection: close."""
    auth = base64.b64encode(cred.encode()).decode()
    return ("GET http://127.0.0.1:%d%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
            "Proxy-Authorization: Basic %s\r\nConnection: close\r\n\r\n"
            % (origin_port, path, origin_port, auth)).encode()
