#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
The accesslog module across rotation, reload and stop, two workers, a
tcp listener to an echo server (one record per connection) and a JSON
file:

- rotation under load: while clients keep connecting, the file is
  renamed and SIGUSR1 sent, then again with `portico -s reopen`: a new
  file appears, later records go to it, the renamed file stops growing,
  and across the three files every connection the clients made has
  exactly one record (none lost, none twice);
- when run as root: workers as nobody, the log in a directory only root
  may write to; the rename and SIGUSR1 still give a new file (created by
  the master, owned by nobody) that the workers write to;
- the shipped etc/logrotate.d/portico, its paths pointed at the test's
  directory, run by the real logrotate -f under load: the log is renamed
  (access.log.1), the postrotate SIGUSR1 gives a new file, and every
  connection has exactly one record across the two;
- flush = 10000 ms (records wait in the buffers): SIGUSR1 flushes them
  into the renamed file at once; a reload (SIGHUP) flushes the old
  workers' records at once (the drain hook); a graceful stop (SIGQUIT)
  and a fast stop (SIGTERM) leave every record in the file.
"""
import os
import pwd
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402
import accesslogtest as AL  # noqa: E402


def records(*paths):
    out = []
    bad = []
    for p in paths:
        r, b = AL.json_records(p)
        out += AL.transactions(r)
        bad += b
    return out, bad


def start(t, echo, log, flush=None, workers=2, header="", name=None):
    port = ptest.free_port()
    extra = " flush = %d;" % flush if flush else ""
    mod = AL.module(['file = "%s"; format = "json";%s' % (log, extra)])
    conf = AL.conf(t, ['  { name = "echo"; address = "127.0.0.1:%d"; '
                       'protocol = "tcp"; to = "%s"; }' % (port, echo.address)],
                   [mod], workers=workers, header=header)
    p = t.portico(conf, conf_name=name or "portico.conf")
    return p, port


def size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return -1


def rotation(t, echo):
    log = t.path("access.log")
    p, port = start(t, echo, log)
    loop = ptest.ClientLoop(port, threads=3, per_thread=10 ** 6,
                            max_per_thread=2000, max_seconds=ptest.bound(20),
                            pause=0.002).start()
    ptest.wait_for(lambda: size(log) > 0, ptest.bound(5))
    time.sleep(0.3)
    os.rename(log, log + ".1")
    p.usr1()
    t.check(ptest.wait_for(lambda: size(log) > 0, ptest.bound(5)),
            "rename + SIGUSR1 under load: the new file gets records")
    time.sleep(0.5)
    s1 = size(log + ".1")
    time.sleep(0.5)
    t.check(size(log + ".1") == s1,
            "the renamed file stops growing once the workers reopened",
            "%d -> %d" % (s1, size(log + ".1")))
    os.rename(log, log + ".2")
    r = ptest.run_portico(["-c", p.conf_path, "-s", "reopen"])
    t.check(r.returncode == 0 and
            ptest.wait_for(lambda: size(log) > 0, ptest.bound(5)),
            "portico -s reopen: a third file gets records",
            [r.stdout, r.stderr])
    time.sleep(0.3)
    loop.stop_now.set()
    loop.join(ptest.bound(20))
    rc = t.stop_portico(p, signal.SIGQUIT)
    recs, bad = records(log + ".1", log + ".2", log)
    keys = [(r["worker"], r["txn"]) for r in recs]
    n1 = len(records(log + ".1")[0])
    n2 = len(records(log + ".2")[0])
    n3 = len(records(log)[0])
    t.check(rc == 0 and not bad and loop.good > 100 and
            len(recs) == loop.total and len(set(keys)) == len(keys) and
            n1 > 0 and n2 > 0 and n3 > 0,
            "across two rotations under load: one record per connection "
            "(%d), none lost, none twice, in three files" % loop.total,
            lambda: [loop.summary(), "records %d (%d %d %d), unique %d, "
                     "bad %d" % (len(recs), n1, n2, n3, len(set(keys)),
                                 len(bad))] + bad[:5])
    workers = {r["worker"] for r in recs}
    t.check(workers == {0, 1}, "both workers wrote records",
            str(workers))


def with_logrotate(t, echo):
    if not AL.have("logrotate"):
        t.diag("logrotate not installed: etc/logrotate.d/portico not run")
        return
    logdir = t.path("lr")
    os.mkdir(logdir, 0o755)
    log = os.path.join(logdir, "access.log")
    p, port = start(t, echo, log, name="lr.conf")
    with open(os.path.join(ptest.SRCDIR, "etc", "logrotate.d",
                           "portico")) as f:
        rule = f.read()
    rule = rule.replace("/var/log/portico", logdir).replace(
        "/run/portico/portico.pid", t.path("portico.pid"))
    rconf = t.path("logrotate.conf")
    ptest.write_file(rconf, rule)
    os.chmod(rconf, 0o644)
    loop = ptest.ClientLoop(port, threads=2, per_thread=10 ** 6,
                            max_per_thread=2000, max_seconds=ptest.bound(20),
                            pause=0.002).start()
    ptest.wait_for(lambda: size(log) > 0, ptest.bound(5))
    import subprocess
    cp = subprocess.run(["logrotate", "-f", "-s", t.path("lr.state"), rconf],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        timeout=ptest.bound(30))
    got = ptest.wait_for(lambda: size(log) > 0, ptest.bound(5))
    time.sleep(0.3)
    loop.stop_now.set()
    loop.join(ptest.bound(20))
    t.stop_portico(p)
    recs, bad = records(log + ".1", log)
    keys = {(r["worker"], r["txn"]) for r in recs}
    t.check(cp.returncode == 0 and got and os.path.exists(log + ".1") and
            not bad and len(recs) == loop.total == len(keys) and
            len(records(log)[0]) > 0,
            "etc/logrotate.d/portico run by logrotate -f under load: "
            "access.log.1 and a new access.log, one record per connection "
            "across the two", lambda: [cp.stderr.decode(), loop.summary(),
                                       "records %d unique %d" % (
                                           len(recs), len(keys))])


def as_nobody(t, echo):
    if os.geteuid() != 0:
        t.skip("rotation with workers as nobody", "needs root", need="root")
        return
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        t.skip("rotation with workers as nobody", "no nobody",
               need="nobody")
        return
    logdir = t.path("logdir")
    os.mkdir(logdir, 0o755)
    os.chmod(t.tmp, 0o755)
    log = os.path.join(logdir, "access.log")
    p, port = start(t, echo, log, header='user = "nobody";\n',
                    name="nobody.conf")
    ok = sum(ptest.echo_once(port)[0] for _ in range(5))
    ptest.wait_for(lambda: len(records(log)[0]) >= 5, ptest.bound(5))
    st = os.stat(log)
    t.check(ok == 5 and st.st_uid == nobody.pw_uid and
            st.st_mode & 0o777 == 0o640,
            "user = nobody: the master made the file for nobody, mode "
            "0640", "uid %d mode %o" % (st.st_uid, st.st_mode & 0o777))
    os.rename(log, log + ".1")
    p.usr1()
    t.check(ptest.wait_for(lambda: os.path.exists(log), ptest.bound(5)),
            "user = nobody: SIGUSR1 makes a new file in root's directory")
    time.sleep(0.3)
    ok = sum(ptest.echo_once(port)[0] for _ in range(5))
    got = ptest.wait_for(lambda: len(records(log)[0]) >= 5, ptest.bound(5))
    t.check(ok == 5 and got and len(records(log + ".1")[0]) == 5 and
            os.stat(log).st_uid == nobody.pw_uid and
            not p.log_lines(r"accesslog: reopen"),
            "user = nobody: the workers (as nobody) write the later records "
            "to the new file, none to the old, no reopen error",
            lambda: ["new %d old %d" % (len(records(log)[0]),
                                        len(records(log + ".1")[0]))] +
            p.log_lines(r"accesslog"))
    t.stop_portico(p)


def flushes(t, echo):
    # reopen
    log = t.path("slow.log")
    p, port = start(t, echo, log, flush=10000, name="slow.conf")
    ok = sum(ptest.echo_once(port)[0] for _ in range(20))
    time.sleep(0.3)
    t.check(ok == 20 and len(records(log)[0]) == 0,
            "flush = 10000: 20 records wait in the buffers",
            "%d in the file" % len(records(log)[0]))
    os.rename(log, log + ".old")
    p.usr1()
    got = ptest.wait_for(lambda: len(records(log + ".old")[0]) == 20,
                         ptest.bound(3))
    t.check(got and len(records(log)[0]) == 0,
            "SIGUSR1 flushes the buffered records into the renamed file at "
            "once", "old %d new %d" % (len(records(log + ".old")[0]),
                                       len(records(log)[0])))
    # reload
    ok = sum(ptest.echo_once(port)[0] for _ in range(20))
    time.sleep(0.3)
    before = len(records(log)[0])
    p.hup()
    got = ptest.wait_for(lambda: len(records(log)[0]) == 20, ptest.bound(3))
    t.check(ok == 20 and before == 0 and got,
            "reload (SIGHUP): the old workers' 20 buffered records are "
            "written at once", "before %d after %d" % (
                before, len(records(log)[0])))
    p.wait_workers(2, ptest.bound(10))
    # graceful stop
    ok = sum(ptest.echo_once(port)[0] for _ in range(20))
    time.sleep(0.3)
    before = len(records(log)[0])
    t0 = time.monotonic()
    rc = t.stop_portico(p, signal.SIGQUIT)
    t.check(ok == 20 and before == 20 and rc == 0 and
            len(records(log)[0]) == 40 and
            time.monotonic() - t0 < ptest.bound(5),
            "graceful stop (SIGQUIT): every buffered record is written",
            "before %d after %d rc %s" % (before, len(records(log)[0]), rc))
    # fast stop
    log2 = t.path("fast.log")
    p, port = start(t, echo, log2, flush=10000, name="fast.conf")
    ok = sum(ptest.echo_once(port)[0] for _ in range(20))
    time.sleep(0.3)
    before = len(records(log2)[0])
    rc = t.stop_portico(p, signal.SIGTERM)
    t.check(ok == 20 and before == 0 and len(records(log2)[0]) == 20,
            "fast stop (SIGTERM): every buffered record is written",
            "before %d after %d" % (before, len(records(log2)[0])))


def main(t):
    why = AL.missing()
    if why:
        t.skip("accesslog rotation", why)
        return
    echo = t.echo_server()
    rotation(t, echo)
    with_logrotate(t, echo)
    flushes(t, echo)
    as_nobody(t, echo)


if __name__ == "__main__":
    ptest.Test("accesslog_rotate").run(main)
