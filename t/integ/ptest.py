# SPDX-License-Identifier: BSD-2-Clause
"""
ptest: a small library for portico's integration tests.

Each scenario in t/integ/<name>.py starts the real portico binary with a
real configuration (a template from t/conf/, or text built here), drives it
with real clients against real servers this library starts on loopback,
and reports TAP on stdout.  Python 3 standard library only.

Environment (given by `make check`, defaults for running by hand from the
build directory):
  PORTICO        the binary                     (./portico)
  PT_SRCDIR      top of the source tree         (two levels above this file)
  PT_BUILDDIR    top of the build tree          (.)
  PT_TESTMODDIR  hookrec.so and badabi.so       (t/modules/.libs)
  PT_KEEP=1      keep the temporary directories, even when all passed
  PT_SLOW=N      multiply every time bound by N (default: 3 when the binary
                 is built with AddressSanitizer, else 1)
  PT_SANITIZERS  "yes" or "no": whether the build uses the sanitizers (set by
                 `make check` from configure's --enable-sanitizers; by hand,
                 the binary is looked at). "no sanitizer report" is only a
                 check where a report could be written.
  PT_HAVE        the needs (see NEEDS below) this machine is known to have,
                 space-separated; .ci/run probes for them and sets it. A
                 skip whose need is listed there is a failure: CI has what
                 the check wanted, so the check must run.

Skips. A check that cannot run here is skipped with t.skip(desc, why,
need=NAME), NAME one of NEEDS: what the machine lacks. A skip that names
no need (and whose <why> matches none of the phrasings NEEDS knows) is a
failure: a check dropped for any other reason is a broken check, not a
machine without a feature.

Rules every scenario follows: ephemeral ports on 127.0.0.1/::1, one temp
dir, every loop bounded in count and time, every process stopped by PID in
a finally block (Test.run does it), no timing assertion beyond generous
bounds.
"""

import array
import ctypes
import errno
import fcntl
import hashlib
import os
import re
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))

PORTICO = os.path.abspath(os.environ.get("PORTICO", "./portico"))
SRCDIR = os.path.abspath(os.environ.get("PT_SRCDIR",
                                        os.path.join(HERE, "..", "..")))
BUILDDIR = os.path.abspath(os.environ.get("PT_BUILDDIR", "."))
TESTMODDIR = os.path.abspath(os.environ.get("PT_TESTMODDIR",
                                            "t/modules/.libs"))
CONFDIR = os.path.join(SRCDIR, "t", "conf")
if not os.path.isdir(CONFDIR):
    CONFDIR = os.path.join(HERE, "..", "conf")
KEEP = os.environ.get("PT_KEEP", "") not in ("", "0")
CLK_TCK = os.sysconf("SC_CLK_TCK")

MiB = 1024 * 1024


def _detect_slow():
    if os.environ.get("PT_SLOW"):
        try:
            return max(1.0, float(os.environ["PT_SLOW"]))
        except ValueError:
            return 1.0
    try:
        with open(PORTICO, "rb") as f:
            data = f.read(64 * MiB)
        if b"__asan_init" in data or b"AddressSanitizer" in data:
            return 3.0
    except OSError:
        pass
    return 1.0


SLOW = _detect_slow()


def _detect_sanitizers():
    v = os.environ.get("PT_SANITIZERS", "").strip().lower()
    if v in ("yes", "1", "true"):
        return True
    if v in ("no", "0", "false"):
        return False
    try:
        with open(PORTICO, "rb") as f:
            data = f.read(64 * MiB)
        return (b"__asan_init" in data or b"__ubsan_handle" in data or
                b"AddressSanitizer" in data)
    except OSError:
        return False


SANITIZERS = _detect_sanitizers()


# The fixed vocabulary of what a machine may lack. name: (what it is, a
# pattern recognising older free-text reasons that name it). .ci/run probes
# each of these on its own (not with this file's code) and exports the ones
# it found in PT_HAVE. Add a need here and a probe in .ci/run together.
NEEDS = {
    "ipv6": ("an IPv6 loopback (::1 can be bound)",
             r"(?i)\bipv6\b|\[::1\]"),
    "root": ("running as root (euid 0)",
             r"(?i)\b(needs?|not|as|without) root\b|privileg"),
    "cpus2": ("at least 2 usable CPUs (affinity and cgroup cpu.max)",
              r"(?i)\bone cpu\b|only \d+ usable cpu|usable cpus?\b"),
    "curl": ("the curl program in PATH", r"(?i)\bcurl\b"),
    "blackhole": ("a loopback listener whose full accept queue drops SYNs "
                  "(connect and handshake timeouts)",
                  r"(?i)black.?hole|drops? syns"),
    "127.0.0.2": ("127.0.0.2 can be bound (all of 127/8 on lo)",
                  r"127\.0\.0\.2"),
    "nobody": ("a user named nobody", r"(?i)\bnobody\b"),
    "netns": ("a network namespace of the test's own (unshare(2) "
              "CLONE_NEWNET, as root)", r"(?i)network namespace"),
    "enetunreach": ("an address whose TCP connect fails with ENETUNREACH "
                    "(224.0.0.1 or 255.255.255.255)",
                    r"(?i)enetunreach|network unreachable"),
    "loadgen": ("bench/loadgen built (`make` builds it)",
                r"(?i)\bloadgen\b"),
    "tcp_migrate_req": ("net.ipv4.tcp_migrate_req is 1, or 0 and writable "
                        "(Linux >= 5.14, as root)", r"tcp_migrate_req"),
    "argon2": ("libargon2 found by configure (portico-passwd built; Debian "
               "package libargon2-dev)", r"(?i)libargon2|portico-passwd"),
    "auth.so": ("the auth module built (configure found libargon2, "
                "libcrypto and libcrypt)", r"auth\.so"),
    "acl.so": ("the acl module built (configure found libpcre2-8)",
               r"acl\.so"),
    "argon2cli": ("the argon2 program (Debian package argon2)",
                  r"(?i)\bargon2 program"),
    "mkpasswd": ("mkpasswd (Debian package whois)", r"(?i)\bmkpasswd\b"),
    "htpasswd": ("htpasswd (Debian package apache2-utils)",
                 r"(?i)\bhtpasswd\b"),
    "fail2ban": ("fail2ban-regex in PATH (Debian's fail2ban)",
                 r"(?i)fail2ban"),
    "squid": ("the squid program (Debian package squid)",
              r"(?i)\bsquid program"),
    "haproxy": ("the haproxy program (Debian package haproxy)",
                r"(?i)\bhaproxy program"),
    "dante": ("Dante's SOCKS server danted (Debian package dante-server)",
              r"(?i)\bdanted\b|dante-server"),
    "squid_ncsa": ("Squid's basic_ncsa_auth (Debian package squid) and "
                   "htpasswd (apache2-utils)", r"basic_ncsa_auth|htpasswd"),
    "tls.so": ("the tls module built (configure found OpenSSL 3 libssl)",
               r"tls\.so"),
    "openssl": ("the openssl program (Debian package openssl)",
                r"(?i)\bopenssl program"),
    "chromium": ("Debian's chromium (headless) in PATH",
                 r"(?i)\bchromium program"),
    "prometheus": ("promtool and prometheus in PATH (Debian package "
                   "prometheus)", r"(?i)\bpromtool\b|\bprometheus\b"),
    "systemd-analyze": ("systemd-analyze in PATH (Debian package systemd)",
                        r"(?i)systemd-analyze"),
    "http2": ("portico built with HTTP/2 (configure found libnghttp2 >= "
              "1.52; Debian package libnghttp2-dev)",
              r"(?i)without HTTP/2|libnghttp2"),
    "h2": ("python3-h2 importable (Debian package python3-h2, looked for in "
           "/usr/lib/python3/dist-packages too)",
           r"(?i)python3-h2|\bh2 not importable"),
    "libfuzzer": ("clang linking a libFuzzer program (Debian packages "
                  "clang and libclang-rt-dev): .ci/run's fuzz step",
                  r"(?i)libfuzzer"),
    "nghttp": ("the nghttp program (Debian package nghttp2-client)",
               r"(?i)\bnghttp program"),
}


def _have():
    """The needs PT_HAVE says this machine has, or None outside CI."""
    v = os.environ.get("PT_HAVE")
    if v is None:
        return None
    return set(v.replace(",", " ").split())


HAVE = _have()


def need_of(why):
    """The NEEDS name a free-text skip reason names, or None."""
    for name, (_, rx) in NEEDS.items():
        if re.search(rx, why or ""):
            return name
    return None


def bound(seconds):
    """A time bound, stretched for slow (sanitizer) builds."""
    return seconds * SLOW


def together(t, *calls, timeout=120):
    """Runs each (function, args...) in a thread of its own and waits for
    all (each at most bound(<timeout>) s). For the parts of a scenario
    that mostly wait on a proxy's timers: side by side they take the time
    of the longest. Their checks go to the TAP stream (thread-safe) as
    they come; an exception in a part is a failed check naming it."""
    def guarded(fn, args):
        try:
            fn(*args)
        except Exception:
            import traceback
            t.check(False, "%s ran to its end without an exception"
                    % fn.__name__, traceback.format_exc().splitlines())
    ths = [threading.Thread(target=guarded, args=(c[0], c[1:]), daemon=True)
           for c in calls]
    for th in ths:
        th.start()
    for th in ths:
        th.join(bound(timeout))


def pss_kib(pid):
    """Proportional set size of <pid> in KiB (VmRSS when the kernel has no
    smaps_rollup), or None once it is gone."""
    for path, key in (("/proc/%d/smaps_rollup" % pid, "Pss:"),
                      ("/proc/%d/status" % pid, "VmRSS:")):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return int(line.split()[1])
        except OSError:
            continue
    return None


def exclusive(t, timeout=900):
    """Waits (bounded) until no other heavy scenario of this user runs on
    the machine, and holds that until this process exits. Heavy: one that
    saturates the CPUs (bench_quick, loadgen) or measures latency or a
    rate that another's load would bend (hostile_*, module_budget,
    limits_*). Under `make -j` two of them would measure each other.
    Returns the seconds waited."""
    import fcntl
    import tempfile
    path = os.path.join(tempfile.gettempdir(),
                        "portico-heavy-%d.lock" % os.getuid())
    f = open(path, "a")
    t.at_exit(f.close)
    t0 = time.monotonic()
    while True:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() - t0 > timeout:
                t.diag("another heavy scenario still runs after %d s: "
                       "going on anyway" % timeout)
                break
            time.sleep(0.2)
    waited = time.monotonic() - t0
    if waited > 0.5:
        t.diag("waited %.1f s for another heavy scenario" % waited)
    return waited


# ---------------------------------------------------------------------------
# TAP

class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        self.lock = threading.Lock()

    def _emit(self, text):
        sys.stdout.write(text)
        sys.stdout.flush()

    def check(self, cond, desc, details=None):
        """One TAP test point. <details>: str, list or callable (called only
        on failure) giving '# ' lines."""
        with self.lock:
            self.n += 1
            desc = desc.replace("#", "No.").replace("\n", " ")
            if cond:
                self._emit("ok %d - %s\n" % (self.n, desc))
            else:
                self.failed += 1
                self._emit("not ok %d - %s\n" % (self.n, desc))
                if callable(details):
                    try:
                        details = details()
                    except Exception as e:  # never lose the verdict
                        details = "details unavailable: %r" % (e,)
                if details is not None:
                    self.diag(details)
        return bool(cond)

    def skip(self, desc, why, need=None):
        """A check that cannot run here, for lack of <need> (a NEEDS name;
        when None, the first need whose pattern matches <why>). It is a
        failure when no need is named, or when PT_HAVE says this machine
        has it (CI knows better than the scenario: something is broken)."""
        desc = desc.replace("#", "No.").replace("\n", " ")
        why = (why or "").replace("#", "No.").replace("\n", " ")
        if need is None:
            need = need_of(why)
        elif need not in NEEDS:
            raise ValueError("skip: unknown need %r (know %s)"
                             % (need, ", ".join(sorted(NEEDS))))
        with self.lock:
            self.n += 1
            if need is None:
                self.failed += 1
                self._emit("not ok %d - %s (skipped: %s, which names no "
                           "need)\n# a skip must name what the machine "
                           "lacks, one of: %s\n"
                           % (self.n, desc, why, ", ".join(sorted(NEEDS))))
            elif HAVE is not None and need in HAVE:
                self.failed += 1
                self._emit("not ok %d - %s (skipped for want of %s, but "
                           "PT_HAVE says this machine has it: %s)\n"
                           % (self.n, desc, need, why))
            else:
                self._emit("ok %d - %s # SKIP needs %s: %s\n"
                           % (self.n, desc, need, why))

    def diag(self, details):
        if isinstance(details, (list, tuple)):
            lines = []
            for d in details:
                lines.extend(str(d).splitlines())
        else:
            lines = str(details).splitlines()
        out = []
        for line in lines[:200]:
            out.append("# " + line + "\n")
        if len(lines) > 200:
            out.append("# ... %d more lines\n" % (len(lines) - 200))
        self._emit("".join(out))

    def plan(self):
        self._emit("1..%d\n" % self.n)


# ---------------------------------------------------------------------------
# ports, files, configuration

def have_ipv6():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        try:
            s.bind(("::1", 0))
        finally:
            s.close()
        return True
    except OSError:
        return False


def have_h2_build():
    """Was this portico built with libnghttp2 (HTTP/2 to the proxy)?
    configure writes HAVE_NGHTTP2 into config.h."""
    try:
        with open(os.path.join(BUILDDIR, "config.h")) as f:
            return "#define HAVE_NGHTTP2 1" in f.read()
    except OSError:
        return False


_given_ports = set()


def free_port(host="127.0.0.1"):
    """A port nobody listens on now (bind port 0, read it, close), and
    one this process was not given before: the kernel may hand the port
    it just got back again, and two listeners of one configuration then
    collide ("duplicate listener", seen once in CI)."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(100):
        s = socket.socket(fam, socket.SOCK_STREAM)
        try:
            s.bind((host, 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        if port not in _given_ports:
            break
    _given_ports.add(port)
    return port


def hostport(host, port):
    """'127.0.0.1:80' or '[::1]:80' as portico's configuration wants it."""
    if ":" in host:
        return "[%s]:%d" % (host, port)
    return "%s:%d" % (host, port)


def _conf_value(v, indent):
    pad = "  " * indent
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, dict):
        inner = "".join("%s  %s = %s;\n" % (pad, k, _conf_value(x, indent + 1))
                        for k, x in v.items())
        return "{\n" + inner + pad + "}"
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, dict) for x in v) and v:
            inner = ",\n".join(pad + "  " + _conf_value(x, indent + 1)
                               for x in v)
            return "(\n" + inner + "\n" + pad + ")"
        return "[" + ", ".join(_conf_value(x, indent) for x in v) + "]"
    raise TypeError("cannot write %r as libconfig" % (v,))


def conf_text(d):
    """libconfig text from a dict: dicts are groups, lists of dicts are
    lists ( ... ), other lists are arrays [ ... ]."""
    return "".join("%s = %s;\n" % (k, _conf_value(v, 0)) for k, v in d.items())


def template(name, **subst):
    """t/conf/<name>.conf with every @KEY@ replaced by subst[KEY]."""
    path = os.path.join(CONFDIR, name if name.endswith(".conf")
                        else name + ".conf")
    with open(path) as f:
        text = f.read()
    return fill(text, **subst)


def fill(text, **subst):
    def rep(m):
        k = m.group(1)
        if k not in subst:
            raise KeyError("configuration template needs @%s@" % k)
        return str(subst[k])
    return re.sub(r"@([A-Z][A-Z0-9_]*)@", rep, text)


def listeners(*pairs, protocol="tcp"):
    """Text for the body of `listeners = ( ... );`: one tcp forwarder per
    (listen address, target address) pair."""
    return ",\n".join('  { address = "%s"; protocol = "%s"; to = "%s"; }'
                       % (a, protocol, b) for a, b in pairs)


def write_file(path, text):
    """Writes <text> atomically (rename), as an operator's editor would."""
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)
    return path


def write_conf(dirpath, conf, name="portico.conf"):
    """Writes a dict (see conf_text) or text into <dirpath>/<name>."""
    text = conf if isinstance(conf, str) else conf_text(conf)
    return write_file(os.path.join(dirpath, name), text)


def line_of(text, needle):
    """1-based number of the first line of <text> containing <needle>."""
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise ValueError("%r not in the text" % (needle,))


def tail(text, n=40):
    lines = text.splitlines()
    return lines[-n:]


def records(path, rest="error"):
    """A test module's record file as [(event, {key: value})]: the first
    word of a line is the event, the others key=value; " <rest>=" takes
    the rest of the line, spaces and all. [] while the file is missing."""
    out = []
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        tail = None
        if rest and " %s=" % rest in line:
            line, tail = line.split(" %s=" % rest, 1)
        parts = line.split()
        if not parts:
            continue
        kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if tail is not None:
            kv[rest] = tail
        out.append((parts[0], kv))
    return out


def wait_for(pred, timeout, interval=0.05):
    """Polls pred() until it returns a true value or <timeout> seconds pass
    (already stretched by the caller if wanted). Returns the last value."""
    deadline = time.monotonic() + timeout
    n = 0
    while True:
        v = pred()
        if v:
            return v
        n += 1
        if time.monotonic() >= deadline or n > 100000:
            return v
        time.sleep(interval)


# ---------------------------------------------------------------------------
# /proc

def proc_stat(pid):
    """(comm, state, ppid, utime+stime seconds) or None if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except (OSError, ValueError):
        return None
    lp, rp = data.find("("), data.rfind(")")
    comm = data[lp + 1:rp]
    rest = data[rp + 2:].split()
    # rest[0] is field 3 (state); utime is field 14, stime field 15.
    state, ppid = rest[0], int(rest[1])
    cpu = (int(rest[11]) + int(rest[12])) / CLK_TCK
    return comm, state, ppid, cpu


def alive(pid):
    st = proc_stat(pid)
    return st is not None and st[1] not in ("Z", "X")


def comm(pid):
    st = proc_stat(pid)
    return st[0] if st else None


def cpu_seconds(pid):
    st = proc_stat(pid)
    return st[3] if st else None


def children(ppid):
    """{pid: comm} of the live children of <ppid>."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        st = proc_stat(int(d))
        if st and st[2] == ppid and st[1] not in ("Z", "X"):
            out[int(d)] = st[0]
    return out


def cpus_allowed(pid):
    """Cpus_allowed_list of <pid> as a sorted list of ints, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    return parse_cpu_list(line.split(":", 1)[1].strip())
    except OSError:
        return None
    return None


def parse_cpu_list(s):
    cpus = []
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return sorted(cpus)


def usable_cpus():
    """The CPUs portico's "auto" may use, as it counts them: this
    process's affinity, cut to the cgroup v2 CPU quota (cpu.max)."""
    cpus = sorted(os.sched_getaffinity(0))
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max" and int(period) > 0 and int(quota) > 0:
            limit = -(-int(quota) // int(period))
            cpus = cpus[:max(1, limit)]
    except (OSError, ValueError):
        pass
    return cpus


def _proc_net_tcp():
    """Yields (local_port, remote_port, state, inode, rx_queue) for every
    TCP socket of this network namespace, v4 and v6. rx_queue: bytes
    received that its owner has not read yet."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            p = line.split()
            if len(p) < 10:
                continue
            lport = int(p[1].rsplit(":", 1)[1], 16)
            rport = int(p[2].rsplit(":", 1)[1], 16)
            rxq = int(p[4].split(":")[1], 16)
            yield lport, rport, p[3], int(p[9]), rxq


def listening(port):
    """True when some socket listens on TCP <port> (no connection made)."""
    return any(lp == port and st == "0A"
               for lp, _, st, _, _ in _proc_net_tcp())


def socket_inodes(pid):
    """Set of socket inodes open in <pid>."""
    out = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(int(link[8:-1]))
    return out


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


def owner_of(conn, listen_port, pids):
    """Which of <pids> holds the accepted end of client socket <conn>
    (connected to <listen_port>): the socket whose local port is
    <listen_port> and remote port is conn's local port. None if unknown."""
    cport = conn.getsockname()[1]
    inodes = {ino for lp, rp, st, ino, _ in _proc_net_tcp()
              if lp == listen_port and rp == cport and st != "0A" and ino}
    if not inodes:
        return None
    for pid in pids:
        if socket_inodes(pid) & inodes:
            return pid
    return None


def private_netns():
    """Moves this test process, and all it starts after, into a network
    namespace of its own whose only interface is loopback (brought up:
    127.0.0.0/8 and ::1). Call it first in main(), before any socket or
    thread. A scenario that could send a packet elsewhere if portico had
    a bug (a host read as another address) runs there: no packet can
    leave the machine. None, or why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x40000000) != 0:        # CLONE_NEWNET
        return "no network namespace of its own: unshare: %s" % \
            os.strerror(ctypes.get_errno())
    iff_up = 0x1
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        fcntl.ioctl(s, 0x8914, struct.pack("16sh14x", b"lo", iff_up))
    except OSError as e:            # SIOCSIFFLAGS
        return "no network namespace of its own: lo up: %s" % e
    finally:
        s.close()
    return None


def server_ends(listen_port, client_ports):
    """{client port: (state, rx_queue)} of the accepted ends (local port
    <listen_port>) of the loopback connections from <client_ports>; a
    port whose server end is gone is absent."""
    ports = set(client_ports)
    return {rp: (st, rxq) for lp, rp, st, _, rxq in _proc_net_tcp()
            if lp == listen_port and rp in ports and st != "0A"}


def wait_read(listen_port, socks, timeout):
    """Waits (bounded) until the server on <listen_port> has read all that
    each client socket of <socks> sent: the receive queue of its end is
    empty. True if so. A test that means "the client left while its
    request was being served" waits here before the close: a FIN read
    together with the request is a half-close, and the answer is still
    wanted."""
    ports = [s.getsockname()[1] for s in socks]
    return bool(wait_for(lambda: all(
        e[1] == 0 for e in [server_ends(listen_port, ports).get(p, ("", 1))
                            for p in ports]), timeout, interval=0.01))


def wait_server_closed(listen_port, client_ports, timeout):
    """Waits (bounded) until the server on <listen_port> has closed its end
    of each connection from <client_ports> (LAST_ACK, CLOSING or gone:
    not ESTABLISHED, not CLOSE_WAIT). True if so. The ports are taken
    before the clients close (getsockname() fails after)."""
    return bool(wait_for(lambda: not any(
        st in ("01", "08") for st, _ in
        server_ends(listen_port, client_ports).values()), timeout,
        interval=0.01))


# ---------------------------------------------------------------------------
# servers

class _Server:
    """A threaded TCP server on loopback. Subclasses define handle(sock)."""

    def __init__(self, host="127.0.0.1", port=0, backlog=512):
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.host = host
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(backlog)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.accepted = 0
        self.active = 0
        self.errors = []
        self.conns = set()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self):
        return hostport(self.host, self.port)

    def _serve(self):
        while not self.stopping.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError as e:
                if self.stopping.is_set():
                    return
                if e.errno in (errno.EMFILE, errno.ENFILE):
                    time.sleep(0.05)
                    continue
                self.errors.append("accept: %s" % e)
                time.sleep(0.05)
                continue
            with self.lock:
                self.accepted += 1
                self.active += 1
                self.conns.add(c)
            threading.Thread(target=self._run, args=(c,), daemon=True).start()

    def _run(self, c):
        try:
            c.settimeout(120)
            self.handle(c)
        except OSError as e:
            if not self.stopping.is_set():
                with self.lock:
                    self.errors.append("%s: %s" % (type(self).__name__, e))
        finally:
            with self.lock:
                self.active -= 1
                self.conns.discard(c)
            try:
                c.close()
            except OSError:
                pass

    def handle(self, c):
        raise NotImplementedError

    def stop(self):
        self.stopping.set()
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(2)


class EchoServer(_Server):
    """Echoes every byte. After the client's FIN it finishes echoing, then
    closes (half-close aware)."""

    def handle(self, c):
        while True:
            data = c.recv(65536)
            if not data:
                break
            c.sendall(data)
        c.shutdown(socket.SHUT_WR)


class SinkServer(_Server):
    """Reads until EOF; records (bytes, sha256 hex) per connection."""

    def __init__(self, *a, **kw):
        self.results = []
        super().__init__(*a, **kw)

    def handle(self, c):
        h, n = hashlib.sha256(), 0
        while True:
            data = c.recv(65536)
            if not data:
                break
            h.update(data)
            n += len(data)
        with self.lock:
            self.results.append((n, h.hexdigest()))


class SourceServer(_Server):
    """Sends <nbytes> of pseudo-random data on every connection, then
    closes; <digest> is their sha256."""

    def __init__(self, nbytes, *a, **kw):
        self.nbytes = nbytes
        self.block = os.urandom(256 * 1024)
        h = hashlib.sha256()
        left = nbytes
        while left > 0:
            h.update(self.block[:min(left, len(self.block))])
            left -= min(left, len(self.block))
        self.digest = h.hexdigest()
        super().__init__(*a, **kw)

    def handle(self, c):
        left = self.nbytes
        while left > 0:
            n = min(left, len(self.block))
            c.sendall(self.block[:n])
            left -= n
        c.shutdown(socket.SHUT_WR)


# ---------------------------------------------------------------------------
# clients

def connect(port, host="127.0.0.1", timeout=5.0):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
    except BaseException:
        s.close()
        raise
    return s


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            break
        buf += d
    return bytes(buf)


def recv_head(s):
    """What <s> sends up to the end of a message head (CRLF CRLF), with
    whatever came after it in the same reads; None at EOF before it. For
    the scripted origins of the scenarios."""
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        if not d:
            return None
        data += d
    return data


def err_kind(e):
    """A short name for a client-side failure."""
    if isinstance(e, ConnectionRefusedError):
        return "refused"
    if isinstance(e, ConnectionResetError):
        return "reset"
    if isinstance(e, BrokenPipeError):
        return "broken-pipe"
    if isinstance(e, socket.timeout):
        return "timeout"
    if isinstance(e, OSError):
        return "oserror:%s" % (errno.errorcode.get(e.errno, e.errno),)
    return type(e).__name__


def echo_once(port, payload=None, host="127.0.0.1", timeout=5.0,
              half_close=True):
    """One short connection through <port> to an echo server. Returns
    (True, None) or (False, 'why')."""
    if payload is None:
        payload = os.urandom(32)
    try:
        s = connect(port, host, timeout)
    except Exception as e:
        return False, "connect: " + err_kind(e)
    try:
        s.sendall(payload)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        got = recv_exact(s, len(payload))
        if got != payload:
            return False, "short or wrong echo (%d of %d bytes)" % (
                len(got), len(payload))
        if half_close:
            rest = s.recv(1)
            if rest:
                return False, "extra bytes after the echo"
        return True, None
    except Exception as e:
        return False, "io: " + err_kind(e)
    finally:
        s.close()


def try_connect(port, host="127.0.0.1", timeout=2.0):
    """'ok', 'refused', or another failure name."""
    try:
        s = connect(port, host, timeout)
    except Exception as e:
        return err_kind(e)
    s.close()
    return "ok"


class Held:
    """A connection through the proxy kept open; ping() proves it still
    relays both ways."""

    def __init__(self, port, host="127.0.0.1", timeout=5.0):
        self.port = port
        self.sock = connect(port, host, timeout)
        self.n = 0

    def ping(self):
        self.n += 1
        msg = b"ping %d %s\n" % (self.n, os.urandom(6).hex().encode())
        try:
            self.sock.sendall(msg)
            got = recv_exact(self.sock, len(msg))
        except Exception as e:
            return False, err_kind(e)
        if got != msg:
            return False, "got %r" % (got[:40],)
        return True, None

    def closed_by_peer(self, timeout):
        """True when the proxy side closes (EOF or reset) within timeout."""
        return self.ending(timeout) in ("eof", "reset")

    def ending(self, timeout):
        """How the proxy side ends the connection within <timeout>: 'eof'
        (a FIN), 'reset', 'data' (bytes came instead) or another failure
        name."""
        self.sock.settimeout(timeout)
        try:
            d = self.sock.recv(1)
            return "eof" if d == b"" else "data"
        except Exception as e:
            return err_kind(e)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Transfer:
    """Sends <nbytes> through the proxy to an echo server while reading the
    echo back, in threads; result() gives sha256 of both sides.

    half_close: shut down the write side after the last byte (the echo must
    still arrive in full). pace(): called before every read (may sleep: a
    slow reader); pace_event: when set, pace stops slowing down."""

    def __init__(self, port, nbytes, host="127.0.0.1", half_close=True,
                 chunk=65536, read_chunk=65536, slow_until=None,
                 slow_sleep=0.005, timeout=60.0):
        self.port, self.nbytes, self.host = port, nbytes, host
        self.half_close = half_close
        self.chunk, self.read_chunk = chunk, read_chunk
        self.slow_until, self.slow_sleep = slow_until, slow_sleep
        self.timeout = timeout
        self.sent_h = hashlib.sha256()
        self.recv_h = hashlib.sha256()
        self.sent = 0
        self.received = 0
        self.eof = False
        self.error = None
        self.done = threading.Event()
        self.sock = None

    def start(self):
        self.sock = connect(self.port, self.host, bound(10))
        self.sock.settimeout(self.timeout)
        self._ts = threading.Thread(target=self._send, daemon=True)
        self._tr = threading.Thread(target=self._recv, daemon=True)
        self._ts.start()
        self._tr.start()
        return self

    def _send(self):
        try:
            block = os.urandom(1024 * 1024)
            off = 0
            while self.sent < self.nbytes:
                n = min(self.chunk, self.nbytes - self.sent)
                if off + n > len(block):
                    off = 0
                    block = os.urandom(1024 * 1024)
                data = block[off:off + n]
                off += n
                self.sock.sendall(data)
                self.sent_h.update(data)
                self.sent += n
            if self.half_close:
                self.sock.shutdown(socket.SHUT_WR)
        except Exception as e:
            if self.error is None:
                self.error = "send after %d bytes: %s" % (self.sent,
                                                          err_kind(e))

    def _recv(self):
        try:
            deadline = time.monotonic() + self.timeout * 4
            while time.monotonic() < deadline:
                if self.slow_until is not None and \
                        not self.slow_until.is_set():
                    time.sleep(self.slow_sleep)
                    rc = min(self.read_chunk, 16384)
                else:
                    rc = self.read_chunk
                if not self.half_close and self.received >= self.nbytes:
                    break
                d = self.sock.recv(rc)
                if not d:
                    self.eof = True
                    break
                self.recv_h.update(d)
                self.received += len(d)
            else:
                self.error = self.error or "receive: out of time"
        except Exception as e:
            if self.error is None:
                self.error = "receive after %d bytes: %s" % (self.received,
                                                             err_kind(e))
        finally:
            self.done.set()

    def wait(self, timeout):
        self.done.wait(timeout)
        self._ts.join(max(0.1, timeout / 10))
        return self.done.is_set()

    def ok(self):
        return (self.done.is_set() and self.error is None and
                self.sent == self.nbytes and self.received == self.nbytes and
                self.sent_h.hexdigest() == self.recv_h.hexdigest() and
                (self.eof or not self.half_close))

    def describe(self):
        return ("sent %d of %d, received %d, eof=%s, error=%s, sha equal=%s"
                % (self.sent, self.nbytes, self.received, self.eof,
                   self.error,
                   self.sent_h.hexdigest() == self.recv_h.hexdigest()))

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass


class NotifySocket:
    """A test NOTIFY_SOCKET (systemd's sd_notify protocol): an AF_UNIX
    datagram socket at <name> (a path, or "@name" for an abstract one),
    with SO_PASSCRED so recv() gives (pid of the sender, {key: value})."""

    def __init__(self, name):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.s.bind(name if name[0] != "@" else "\0" + name[1:])
        self.name = name
        self.got = []

    def recv(self, timeout):
        self.s.settimeout(timeout)
        try:
            data, anc, _, _ = self.s.recvmsg(
                4096, socket.CMSG_SPACE(struct.calcsize("3i")))
        except socket.timeout:
            return None, None
        pid = None
        for level, typ, d in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                pid = array.array("i", d[:struct.calcsize("3i")])[0]
        kv = {}
        for line in data.decode(errors="replace").split("\n"):
            if "=" in line:
                k, v = line.split("=", 1)
                kv[k] = v
        self.got.append((pid, kv))
        return pid, kv

    def until(self, key, timeout):
        """Datagrams until one has <key>: (that one, [all received])."""
        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, kv = self.recv(max(0.01, deadline - time.monotonic()))
            if kv is None:
                break
            seen.append((pid, kv))
            if key in kv:
                return (pid, kv), seen
        return (None, None), seen

    def close(self):
        self.s.close()
        if self.name[0] != "@":
            try:
                os.unlink(self.name)
            except OSError:
                pass


class ClientLoop:
    """Bounded short-connection echo load from <threads> threads: each
    thread makes connections until it made <per_thread> and <until> is set
    (or it made <max_per_thread>, or <max_seconds> passed). <once>, when
    given, replaces the echo: once(thread, n) makes one connection and
    returns (True, None) or (False, 'why')."""

    def __init__(self, port, threads=4, per_thread=500, max_per_thread=None,
                 until=None, max_seconds=60.0, pause=0.0, host="127.0.0.1",
                 timeout=10.0, payload_size=24, once=None):
        self.port, self.host = port, host
        self.threads = threads
        self.per_thread = per_thread
        self.max_per_thread = max_per_thread or per_thread
        self.until = until
        self.max_seconds = max_seconds
        self.pause = pause
        self.timeout = timeout
        self.payload_size = payload_size
        self.once = once
        self.lock = threading.Lock()
        self.total = 0
        self.good = 0
        self.failures = []      # (monotonic time, why)
        self.stop_now = threading.Event()
        self._threads = []

    def start(self):
        for i in range(self.threads):
            t = threading.Thread(target=self._run, args=(i,), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _run(self, i):
        t0 = time.monotonic()
        n = 0
        while n < self.max_per_thread and not self.stop_now.is_set():
            if n >= self.per_thread and (self.until is None or
                                         self.until.is_set()):
                break
            if time.monotonic() - t0 > self.max_seconds:
                break
            if self.once is not None:
                ok, why = self.once(i, n)
            else:
                payload = b"%d.%d." % (i, n) + os.urandom(self.payload_size)
                ok, why = echo_once(self.port, payload, self.host,
                                    self.timeout)
            n += 1
            with self.lock:
                self.total += 1
                if ok:
                    self.good += 1
                else:
                    self.failures.append((time.monotonic(), why))
            if self.pause:
                time.sleep(self.pause)

    def running(self):
        return any(t.is_alive() for t in self._threads)

    def join(self, timeout):
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not self.running()

    def summary(self):
        kinds = {}
        for _, why in self.failures:
            kinds[why] = kinds.get(why, 0) + 1
        return "%d connections, %d good, failures: %s" % (
            self.total, self.good, kinds or "none")


# ---------------------------------------------------------------------------
# portico

LOG_RE = re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) \[(\w+)\] (\d+) "
                    r"([^:]+): (.*)$")


def run_portico(args, timeout=None, **kw):
    """Runs portico to completion (for -t, -V, -s). Returns
    CompletedProcess with text stdout/stderr."""
    return subprocess.run([PORTICO] + list(args), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True,
                          timeout=timeout or bound(20), **kw)


def _preexec(nofile):
    """In the child before exec: the descriptor limit asked for, and
    SIGTERM when this test process dies (a killed test must not leave a
    portico running; the master then stops its workers)."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # loaded here,
    except Exception:                                    # not in the child
        prctl = None
    pr_set_pdeathsig = 1

    def f():
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        if prctl is not None:
            prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    return f


def blackhole(t):
    """(port, works): a listener that never accepts, its queue full, so
    SYNs to it go unanswered (connect and handshake timeouts). works is
    False when the kernel still completes a handshake to it."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    t.at_exit(srv.close)
    fillers = []
    for _ in range(4):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(srv.getsockname())
        except (BlockingIOError, OSError):
            pass
        fillers.append(c)
    t.at_exit(lambda: [c.close() for c in fillers])
    time.sleep(0.2)
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(srv.getsockname())
        full = False
    except socket.timeout:
        full = True
    except OSError:
        full = False
    probe.close()
    return srv.getsockname()[1], full


class Portico:
    """The real binary, `portico -f -c FILE`, in the foreground.

    conf: text or dict (written to <tmp>/<conf_name>). start() waits until
    the expected number of workers exist and every listener in the
    configuration is listening. stderr and stdout go to <tmp>/stderr.log.
    """

    def __init__(self, test, conf, conf_name="portico.conf", workers=None,
                 nofile=None, args=(), wait=True, env=None):
        self.test = test
        self.tmp = test.tmp
        self.conf_path = write_conf(self.tmp, conf, conf_name)
        self.conf_text = conf if isinstance(conf, str) else conf_text(conf)
        self.expect_workers = workers
        self.nofile = nofile
        self.args = list(args)
        self.wait_ready = wait
        self.env = env
        self.proc = None
        self.seen = set()           # every pid of ours ever seen
        self.stderr_path = os.path.join(
            self.tmp, "stderr-%d.log" % len(test.porticos))
        self.returncode = None
        self.error_log = self._conf_str("error_log")
        self.pid_file = self._conf_str("pid_file")
        test.porticos.append(self)

    # -- configuration facts ------------------------------------------
    def _conf_str(self, key, text=None):
        m = re.search(r"^\s*%s\s*=\s*\"([^\"]*)\"" % key,
                      text or self.conf_text, re.M)
        return m.group(1) if m else None

    def listener_ports(self, text=None):
        out = []
        for m in re.finditer(r"address\s*=\s*\"([^\"]+)\"",
                             text or self.conf_text):
            a = m.group(1)
            port = a.rsplit(":", 1)[-1]
            if port.isdigit():
                out.append(int(port))
        return out

    def _workers_wanted(self):
        if self.expect_workers is not None:
            return self.expect_workers
        m = re.search(r"^\s*workers\s*=\s*(\d+)", self.conf_text, re.M)
        if m:
            return int(m.group(1))
        return len(usable_cpus())

    def set_conf(self, conf):
        """Rewrites the configuration file (for a reload)."""
        self.conf_text = conf if isinstance(conf, str) else conf_text(conf)
        write_conf(self.tmp, conf, os.path.basename(self.conf_path))

    # -- life ------------------------------------------------------------
    def start(self):
        if not os.path.exists(PORTICO):
            raise RuntimeError("no portico binary at %s (set PORTICO)"
                               % PORTICO)
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "abort_on_error=0")
        if self.env:
            env.update(self.env)
        self.err_f = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(
            [PORTICO, "-f", "-c", self.conf_path] + self.args,
            stdin=subprocess.DEVNULL, stdout=self.err_f, stderr=self.err_f,
            preexec_fn=_preexec(self.nofile),
            start_new_session=True, env=env, close_fds=True)
        self.pid = self.proc.pid
        self.seen.add(self.pid)
        if self.wait_ready:
            self.wait_started()
        return self

    def wait_started(self, timeout=None):
        """Until <workers> workers run and every listener listens."""
        timeout = timeout or bound(10)
        want = self._workers_wanted()
        ports = self.listener_ports()

        def ready():
            if self.proc.poll() is not None:
                return "exited"
            if len(self.workers()) < want:
                return False
            return all(listening(p) for p in ports)
        r = wait_for(ready, timeout)
        if r != True:  # noqa: E712 (may be a string)
            raise RuntimeError(
                "portico did not start (%s): %d of %d workers, listening "
                "%s; exit %s\n%s" % (
                    "exited" if r == "exited" else "timeout",
                    len(self.workers()), want,
                    {p: listening(p) for p in ports}, self.proc.poll(),
                    "\n".join(tail(self.log(), 30))))
        return True

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout):
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.returncode

    def stop(self, sig=signal.SIGTERM, timeout=None):
        """Stops the master by PID (sig, then SIGKILL after timeout) and
        kills by PID any child of ours left behind. Returns exit status."""
        if self.proc is None:
            return None
        timeout = timeout or bound(10)
        self.all_children()
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
            if self.wait_exit(timeout) is None:
                self.test.tap.diag("portico %d ignored signal %d for %.0f s:"
                                   " killing it" % (self.pid, sig, timeout))
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.wait_exit(bound(5))
        self.returncode = self.proc.poll()
        self._reap_leftovers()
        try:
            self.err_f.close()
        except Exception:
            pass
        return self.returncode

    def _reap_leftovers(self):
        """Kills (by PID) processes of ours still alive: orphaned workers."""
        left = []
        for pid in sorted(self.seen):
            if pid == self.pid:
                continue
            c = comm(pid)
            if c is not None and alive(pid) and c.startswith("portico"):
                left.append(pid)
        if left:
            # Give them a moment: workers may be exiting on their own.
            wait_for(lambda: not any(alive(p) for p in left), bound(3))
        stuck = [p for p in left if alive(p) and
                 (comm(p) or "").startswith("portico")]
        for pid in stuck:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.leftovers = stuck
        return stuck

    # -- processes -------------------------------------------------------
    def all_children(self):
        """{pid: comm} of the master's live children (remembered)."""
        if self.proc is None or self.proc.poll() is not None:
            return {}
        ch = children(self.pid)
        self.seen.update(ch)
        return ch

    def workers(self):
        """{slot: pid} of current-generation workers (comm portico-wN)."""
        out = {}
        for pid, c in self.all_children().items():
            m = re.match(r"portico-w(\d+)$", c)
            if m:
                out[int(m.group(1))] = pid
        return out

    def draining(self):
        """pids of old-generation workers (comm portico-drain)."""
        return sorted(p for p, c in self.all_children().items()
                      if c == "portico-drain")

    def wait_workers(self, n, timeout, exclude=(), interval=0.05):
        """Until exactly <n> current workers run, none in <exclude>."""
        def pred():
            w = self.workers()
            if len(w) == n and not (set(w.values()) & set(exclude)):
                return w
            return None
        return wait_for(pred, timeout, interval)

    # -- signals ---------------------------------------------------------
    def signal(self, sig):
        os.kill(self.pid, sig)

    def hup(self):
        self.signal(signal.SIGHUP)

    def quit(self):
        self.signal(signal.SIGQUIT)

    def term(self):
        self.signal(signal.SIGTERM)

    def usr1(self):
        self.signal(signal.SIGUSR1)

    # -- logs --------------------------------------------------------------
    def stderr_text(self):
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log(self, path=None):
        """The error log (a file, or stderr when error_log is stderr or
        unset), plus the lines the process wrote to stderr that are not
        in it (start-up lines may be written to both)."""
        path = path or self.error_log
        text = ""
        if path and path != "stderr":
            try:
                with open(path, errors="replace") as f:
                    text = f.read()
            except OSError:
                text = ""
        se = self.stderr_text()
        if not se:
            return text
        if not text:
            return se
        have = set(text.splitlines())
        extra = [ln for ln in se.splitlines() if ln not in have]
        if not extra:
            return text
        if not text.endswith("\n"):
            text += "\n"
        return text + "\n".join(extra) + "\n"

    def log_lines(self, pattern, path=None):
        rx = re.compile(pattern)
        return [ln for ln in self.log(path).splitlines() if rx.search(ln)]

    def wait_log(self, pattern, count=1, timeout=None, path=None):
        """Until at least <count> log lines match <pattern>. Returns them
        (maybe fewer on timeout)."""
        timeout = timeout or bound(10)
        got = wait_for(lambda: len(self.log_lines(pattern, path)) >= count
                       and self.log_lines(pattern, path), timeout)
        return got or self.log_lines(pattern, path)

    def sanitizer_reports(self):
        text = self.stderr_text()
        if self.error_log and self.error_log != "stderr":
            try:
                with open(self.error_log, errors="replace") as f:
                    text += f.read()
            except OSError:
                pass
        return [ln for ln in text.splitlines()
                if "AddressSanitizer" in ln or "LeakSanitizer" in ln or
                "runtime error:" in ln or "UndefinedBehaviorSanitizer" in ln]


# ---------------------------------------------------------------------------
# the test harness

class Test:
    """One scenario: a TAP stream, a temp dir, and everything to clean up.

        t = ptest.Test("forward_bytes")
        def main(t): ...
        t.run(main)
    """

    def __init__(self, name):
        self.name = name
        self.tap = Tap()
        self.tmp = tempfile.mkdtemp(prefix="pt-%s-" % name)
        self.porticos = []
        self.servers = []
        self.cleanups = []

    # shortcuts
    def check(self, cond, desc, details=None):
        return self.tap.check(cond, desc, details)

    def skip(self, desc, why, need=None):
        self.tap.skip(desc, why, need)

    def diag(self, d):
        self.tap.diag(d)

    def path(self, *p):
        return os.path.join(self.tmp, *p)

    def echo_server(self, host="127.0.0.1"):
        s = EchoServer(host)
        self.servers.append(s)
        return s

    def sink_server(self, host="127.0.0.1"):
        s = SinkServer(host)
        self.servers.append(s)
        return s

    def source_server(self, nbytes, host="127.0.0.1"):
        s = SourceServer(nbytes, host)
        self.servers.append(s)
        return s

    def portico(self, conf, **kw):
        """Starts portico (see Portico); stopped by run() at the end."""
        return Portico(self, conf, **kw).start()

    def base_conf(self, **over):
        """Subsitutions every template may use."""
        d = dict(TMP=self.tmp, MODDIR=TESTMODDIR, SHUTDOWN=30)
        d.update(over)
        return d

    def conf(self, name, **subst):
        d = self.base_conf()
        d.update(subst)
        return template(name, **d)

    def at_exit(self, fn):
        self.cleanups.append(fn)

    def log_details(self, p, n=30):
        return lambda: ["log tail:"] + tail(p.log(), n)

    def stop_portico(self, p, sig=signal.SIGTERM):
        """Stops <p>, then checks it left no process and no sanitizer
        report behind."""
        rc = p.stop(sig)
        self.check(not getattr(p, "leftovers", []),
                   "no portico process left behind after the master exited",
                   lambda: "had to kill: %s" % (p.leftovers,))
        # A fast stop closes every connection: a worker the master had
        # to SIGKILL after shutdown_timeout was hung (a module's thread,
        # a loop that never ends), whatever else the scenario saw.
        if sig == signal.SIGTERM:
            killed = p.log_lines(r"workers still running: killing them")
            self.check(not killed, "every worker left by itself at the "
                       "stop (none killed after shutdown_timeout)",
                       lambda: killed + tail(p.log(), 10))
        # Only a sanitizer build can write a report: elsewhere this check
        # could not fail, so it is not counted.
        if SANITIZERS:
            rep = p.sanitizer_reports()
            self.check(not rep, "no sanitizer report",
                       lambda: rep[:40])
        return rc

    def _cleanup(self):
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:
                self.tap.diag("cleanup: %r" % (e,))
        for p in self.porticos:
            try:
                was_running = p.running()
                p.stop()
                if was_running and SANITIZERS:
                    rep = p.sanitizer_reports()
                    if rep:
                        self.check(False, "no sanitizer report", rep[:40])
            except Exception as e:
                self.tap.diag("stopping portico: %r" % (e,))
        for s in self.servers:
            try:
                s.stop()
            except Exception:
                pass

    def run(self, main):
        def on_term(signum, frame):
            raise SystemExit("signal %d" % signum)
        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGHUP, on_term)
        # The test process holds many sockets in some scenarios.
        try:
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            if soft < 4096 and (hard == resource.RLIM_INFINITY or
                                hard > soft):
                resource.setrlimit(resource.RLIMIT_NOFILE,
                                   (min(4096, hard) if hard !=
                                    resource.RLIM_INFINITY else 4096, hard))
        except (OSError, ValueError):
            pass
        self.tap.diag("%s: portico=%s slow=x%g sanitizers=%s tmp=%s" % (
            self.name, PORTICO, SLOW, "yes" if SANITIZERS else "no",
            self.tmp))
        try:
            if not os.access(PORTICO, os.X_OK):
                self.check(False, "portico binary is executable",
                           "PORTICO=%s" % PORTICO)
            else:
                main(self)
        except BaseException as e:
            self.check(False, "scenario ran to its end without an exception",
                       traceback.format_exc())
            if isinstance(e, KeyboardInterrupt):
                pass
        finally:
            try:
                self._cleanup()
            finally:
                self.tap.plan()
                if self.tap.failed or KEEP:
                    sys.stdout.write("# kept %s\n" % self.tmp)
                else:
                    _rmtree(self.tmp)
                sys.stdout.flush()
        sys.exit(0)


def _rmtree(path):
    import shutil
    shutil.rmtree(path, ignore_errors=True)


def hold_many(port, n, host="127.0.0.1", timeout=5.0):
    """Opens <n> held connections; returns (list of Held, errors)."""
    held, errs = [], []
    for _ in range(n):
        try:
            held.append(Held(port, host, timeout))
        except Exception as e:
            errs.append(err_kind(e))
    return held, errs


def nonblocking_connects(port, n, host="127.0.0.1"):
    """Starts <n> connections without waiting for accept(); returns the
    sockets (connected at the TCP level once the kernel queues them)."""
    socks = []
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(n):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        socks.append(s)
    # wait (bounded) for the handshakes the kernel completes
    deadline = time.monotonic() + 5
    pending = list(socks)
    while pending and time.monotonic() < deadline:
        _, w, _ = select.select([], pending, [], 0.2)
        pending = [s for s in pending if s not in w]
    for s in socks:
        s.setblocking(True)
        s.settimeout(5)
    return socks
