#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""
portico-passwd: add (--stdin), update and delete round trip on a userlist
holding comments, blank lines and other schemes' users, which are kept byte
for byte; the file is replaced (a new inode, no temporary file left) with
its mode and owner (chowned to nobody when running as root); the written
Argon2id PHC string verifies with libargon2 (t/helpers/argon2check) and
carries the documented default costs, or the ones given with -m/-t/-p; bad
user names, empty passwords, a missing file without -c and an unknown user
on -D are refused with exit 1, a message and the file untouched; -c creates
mode 0640 whatever the umask; the terminal path (a pty) asks twice without
echo and refuses a mismatch; runs at once on one file lose no user.

Skipped, naming the need "argon2", when configure found no libargon2 (then
portico-passwd is not built).
"""
import os
import pty
import pwd
import re
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptest  # noqa: E402

PASSWD = os.path.join(ptest.BUILDDIR, "portico-passwd")
CHECK = os.path.join(ptest.BUILDDIR, "t", "helpers", "argon2check")
PHC = re.compile(rb"^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$"
                 rb"[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$")
# Cheap costs for the runs that do not look at the defaults.
FAST = ["-m", "256", "-t", "1"]

ORIG = (b"# portico userlist\n"
        b"\n"
        b"  # an indented comment, then a line of blanks\n"
        b" \t \n"
        b"alice:$2b$05$abcdefghijklmnopqrstuOZnTsoKikm3a.RXHfZ1cMeWBdcm2qYu\n"
        b"carol:$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9\n"
        b"# dave was here\n"
        b"erin:$6$salt$hash\n")

sanitizer_reports = []


def run(args, stdin=b"", umask=None, tty=False):
    """portico-passwd <args> -> (rc, stderr text). No controlling terminal
    unless <tty>: a new session."""
    def pre():
        if umask is not None:
            os.umask(umask)
    p = subprocess.run([PASSWD] + args, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, start_new_session=not tty,
                       preexec_fn=pre, timeout=ptest.bound(60))
    err = p.stderr.decode("utf-8", "replace")
    if re.search(r"AddressSanitizer|runtime error:|LeakSanitizer", err):
        sanitizer_reports.append(err)
    return p.returncode, err


def verifies(phc, password):
    p = subprocess.run([CHECK, phc], input=password, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=ptest.bound(60))
    return p.returncode == 0


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data, mode=0o640):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def entry(data, user):
    """The hash on <user>'s line(s) of <data>, a list."""
    return [ln.split(b":", 1)[1] for ln in data.split(b"\n")
            if ln.startswith(user + b":")]


def pty_run(t, args, answers, tmo):
    """Runs portico-passwd on a new pty as its controlling terminal and
    answers each prompt with the next of <answers>. -> (rc, all output)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execv(PASSWD, [PASSWD] + args)
        finally:
            os._exit(127)
    out = b""
    left = list(answers)
    deadline = time.monotonic() + tmo
    status = None
    try:
        # Read until the terminal closes (EIO once the child has exited and
        # nothing holds the slave side), so no output is lost...
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if not r:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:   # EIO: the child closed the terminal
                chunk = b""
            if not chunk:
                break
            out += chunk
            # A prompt ends in ": " with nothing after it yet.
            if left and out.endswith(b": "):
                os.write(fd, left.pop(0) + b"\n")
                out += b"\n<answered>\n"
        # ...then reap it, within the same bound.
        while status is None and time.monotonic() < deadline:
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid == pid:
                status = st
            else:
                time.sleep(0.02)
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            t.diag("pty run killed after %gs: %r" % (tmo, out))
        os.close(fd)
    rc = os.waitstatus_to_exitcode(status) if status is not None else -9
    text = out.decode("utf-8", "replace")
    if re.search(r"AddressSanitizer|runtime error:", text):
        sanitizer_reports.append(text)
    return rc, out


def main(t):
    if not (os.access(PASSWD, os.X_OK) and os.access(CHECK, os.X_OK)):
        t.skip("portico-passwd round trip",
               "libargon2 not found by configure: portico-passwd and "
               "t/helpers/argon2check not built", need="argon2")
        return
    d = t.path("lists")
    os.mkdir(d)
    f = os.path.join(d, "users")
    write(f, ORIG, 0o640)
    uid, gid = os.geteuid(), os.getegid()
    if os.geteuid() == 0:
        try:
            nb = pwd.getpwnam("nobody")
            uid, gid = nb.pw_uid, nb.pw_gid
            os.chown(f, uid, gid)
        except KeyError:
            t.skip("owner kept when not root's", "no user named nobody",
                   need="nobody")
    else:
        t.skip("owner kept when not the caller's", "not running as root",
               need="root")
    ino = os.stat(f).st_ino

    # -- add, with the default costs ---------------------------------------
    rc, err = run(["--stdin", f, "bob"], b"s3cret pass\n")
    t.check(rc == 0 and "added user bob" in err,
            "add via --stdin exits 0 and says so", "rc=%d %s" % (rc, err))
    data = read(f)
    t.check(data.startswith(ORIG) and data.count(b"\n") ==
            ORIG.count(b"\n") + 1 and data.endswith(b"\n"),
            "add keeps every other line byte for byte and appends one line",
            repr(data))
    h = entry(data, b"bob")
    m = PHC.match(h[0]) if len(h) == 1 else None
    t.check(m is not None and m.groups() == (b"19456", b"2", b"1"),
            "the new line is user:$argon2id$v=19$m=19456,t=2,p=1$salt$hash "
            "(the documented defaults, 16-byte salt, 32-byte hash)", repr(h))
    if m:
        t.check(verifies(h[0], b"s3cret pass"),
                "libargon2 verifies the written hash with the password "
                "(its newline not part of it)")
        t.check(not verifies(h[0], b"s3cret pas") and
                not verifies(h[0], b"s3cret pass\n"),
                "libargon2 refuses it with another password")
    st = os.stat(f)
    t.check(st.st_mode & 0o7777 == 0o640, "mode 0640 kept",
            oct(st.st_mode))
    t.check((st.st_uid, st.st_gid) == (uid, gid),
            "owner %d:%d kept" % (uid, gid), (st.st_uid, st.st_gid))
    t.check(st.st_ino != ino, "the file was replaced (rename), not "
            "written in place", (ino, st.st_ino))
    t.check(os.listdir(d) == ["users"], "no temporary file left beside it",
            os.listdir(d))

    # -- a second add with a salt of its own --------------------------------
    rc, err = run(["-i"] + FAST + [f, "frank"], b"s3cret pass\n")
    h2 = entry(read(f), b"frank")
    t.check(rc == 0 and len(h2) == 1 and h2[0].split(b"$")[4] !=
            h[0].split(b"$")[4],
            "the same password gets another salt for another user",
            (rc, err, h, h2))

    # -- update in place, with given costs ----------------------------------
    os.chmod(f, 0o604)
    before = read(f)
    rc, err = run(["--stdin", "-m", "8192", "-t", "1", "-p", "2", f,
                   "carol"], b"n3w\r\n")
    after = read(f)
    bl, al = before.split(b"\n"), after.split(b"\n")
    idx = [i for i, ln in enumerate(bl) if ln.startswith(b"carol:")]
    same = (len(bl) == len(al) and len(idx) == 1 and
            all(bl[i] == al[i] for i in range(len(bl)) if i != idx[0]))
    t.check(rc == 0 and "updated user carol" in err and same,
            "update replaces carol's line where it was, every other line "
            "kept byte for byte", lambda: [rc, err, before, after])
    hc = entry(after, b"carol")
    mc = PHC.match(hc[0]) if len(hc) == 1 else None
    t.check(mc is not None and mc.groups() == (b"8192", b"1", b"2") and
            verifies(hc[0], b"n3w"),
            "-m 8192 -t 1 -p 2 are written, and the hash verifies with the "
            "new password (a CRLF line end is not part of it)", repr(hc))
    st = os.stat(f)
    t.check(st.st_mode & 0o7777 == 0o604 and
            (st.st_uid, st.st_gid) == (uid, gid),
            "update keeps mode 0604 and the owner",
            (oct(st.st_mode), st.st_uid, st.st_gid))

    # -- delete -------------------------------------------------------------
    before = read(f)
    rc, err = run(["-D", f, "alice"])
    want = b"".join(ln + b"\n" for ln in before.split(b"\n")[:-1]
                    if not ln.startswith(b"alice:"))
    t.check(rc == 0 and "deleted user alice" in err and read(f) == want,
            "delete removes alice's line and nothing else",
            lambda: [rc, err, read(f)])
    for u in (b"carol", b"bob", b"frank"):
        run(["--delete", f, u.decode()])
    t.check(read(f) == ORIG.replace(ORIG.split(b"\n")[4] + b"\n", b"")
            .replace(ORIG.split(b"\n")[5] + b"\n", b""),
            "after deleting every user it added or changed, the file is the "
            "original without alice and carol, byte for byte",
            lambda: repr(read(f)))

    # -- refusals leave the file as it was ----------------------------------
    keep, kino = read(f), os.stat(f).st_ino

    def untouched():
        return read(f) == keep and os.stat(f).st_ino == kino

    rc, err = run(["-D", f, "nosuch"])
    t.check(rc == 1 and "no user nosuch" in err and untouched(),
            "delete of an unknown user: exit 1, says so, file untouched",
            (rc, err))
    bad = [("a:b", "':'"), ("a b", "space"), ("a\tb", "control"),
           ("a\nb", "control"), ("x\x7f", "control"), ("#x", "'#'"),
           ("", "empty"), ("u" * 256, "255")]
    for user, why in bad:
        rc, err = run(["--stdin", f, user], b"pw\n")
        t.check(rc == 1 and "user name" in err and why in err and
                untouched(),
                "user %r refused (%s), file untouched" % (user[:12], why),
                (rc, err))
    rc, err = run(["--stdin"] + FAST + [f, "u" * 255], b"pw\n")
    t.check(rc == 0, "a 255-byte user name is taken", (rc, err))
    run(["-D", f, "u" * 255])
    keep, kino = read(f), os.stat(f).st_ino
    for pw, what in ((b"\n", "an empty line"), (b"", "nothing"),
                     (b"a\0b\n", "a NUL byte")):
        rc, err = run(["--stdin", f, "bob"], pw)
        t.check(rc == 1 and err.strip() and untouched(),
                "password of %s on stdin refused" % what, (rc, err))
    rc, err = run(["--stdin", "-m", "0", f, "bob"], b"pw\n")
    t.check(rc == 1 and "-m" in err and untouched(), "-m 0 refused",
            (rc, err))
    rc, err = run(["--stdin", "-m", "4", f, "bob"], b"pw\n")
    t.check(rc == 1 and "argon2id" in err and untouched(),
            "-m below libargon2's minimum refused with its message",
            (rc, err))
    rc, err = run([f, "bob"])
    t.check(rc == 1 and "--stdin" in err and untouched(),
            "without a terminal and without --stdin: exit 1, points to "
            "--stdin", (rc, err))

    # -- a missing file is created (DESIGN.md: FILE USER), -c or not -------
    g = os.path.join(d, "new")
    rc, err = run(["--stdin"] + FAST + [g, "bob"], b"pw\n", umask=0o077)
    st = os.stat(g) if os.path.exists(g) else None
    t.check(rc == 0 and st is not None and st.st_mode & 0o7777 == 0o640 and
            len(entry(read(g), b"bob")) == 1 and
            read(g).count(b"\n") == 1,
            "a missing file is created mode 0640 (umask 077) with the one "
            "user, without -c", (rc, err, st and oct(st.st_mode)))
    h = os.path.join(d, "no-such-dir", "users")
    rc, err = run(["--stdin"] + FAST + [h, "bob"], b"pw\n")
    t.check(rc == 1 and "no-such-dir" in err and
            not os.path.exists(os.path.dirname(h)),
            "a missing directory: exit 1, named, nothing created", (rc, err))
    rc, err = run(["-D", os.path.join(d, "absent"), "bob"])
    t.check(rc == 1 and "absent" in err and
            not os.path.exists(os.path.join(d, "absent")),
            "-D on a missing file: exit 1, nothing created", (rc, err))
    before = read(g)
    rc, err = run(["--stdin", "-c"] + FAST + [g, "carl"], b"pw\n")
    t.check(rc == 0 and read(g).startswith(before),
            "-c on an existing file keeps its users (no truncation)",
            (rc, err))
    write(g, b"dave:$6$a$b", 0o600)
    rc, err = run(["--stdin"] + FAST + [g, "erin"], b"pw\n")
    t.check(rc == 0 and read(g).startswith(b"dave:$6$a$b\nerin:$argon2id$")
            and read(g).endswith(b"\n"),
            "a last line without a newline gets one before the new user",
            (rc, err, read(g)))
    write(g, b"x\nbob:$6$a$b\nbob:$6$c$d\ny\n", 0o600)
    rc, err = run(["--stdin"] + FAST + [g, "bob"], b"pw\n")
    got = read(g).split(b"\n")
    t.check(rc == 0 and len(got) == 4 and got[0] == b"x" and
            got[2] == b"y" and got[1].startswith(b"bob:$argon2id$") and
            "second line" in err and "not a user:HASH" in err,
            "a duplicate user's second line is dropped, said on stderr, "
            "lines without ':' kept and warned about", (rc, err, got))

    # -- a symbolic link stays one ------------------------------------------
    lnk = os.path.join(d, "link")
    os.symlink("new", lnk)
    rc, err = run(["--stdin"] + FAST + [lnk, "lou"], b"pw\n")
    t.check(rc == 0 and os.path.islink(lnk) and
            len(entry(read(g), b"lou")) == 1,
            "through a symbolic link: the target is replaced, the link kept",
            (rc, err))

    # -- several runs at once on one file -----------------------------------
    write(g, b"# shared\n", 0o640)
    procs = []
    for i in range(6):
        procs.append(subprocess.Popen(
            [PASSWD, "--stdin"] + FAST + [g, "c%d" % i],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True))
    for p in procs:
        p.stdin.write(b"pw\n")
        p.stdin.close()
    rcs = []
    for p in procs:
        try:
            rcs.append(p.wait(timeout=ptest.bound(60)))
        except subprocess.TimeoutExpired:
            p.kill()
            rcs.append(p.wait())
    got = read(g)
    t.check(rcs == [0] * 6 and all(len(entry(got, b"c%d" % i)) == 1
                                   for i in range(6)) and
            got.startswith(b"# shared\n"),
            "6 runs at once on one file: every user is in it once (flock)",
            (rcs, got))

    # -- the terminal ---------------------------------------------------------
    rc, out = pty_run(t, FAST + [f, "tess"], [b"Tty-Pass", b"Tty-Pass"],
                      ptest.bound(30))
    ht = entry(read(f), b"tess")
    t.check(rc == 0 and out.count(b"assword for tess: ") == 2,
            "on a terminal the password is asked twice, exit 0",
            (rc, out))
    t.check(b"Tty-Pass" not in out,
            "the password is not echoed on the terminal", out)
    t.check(len(ht) == 1 and verifies(ht[0], b"Tty-Pass"),
            "the hash written from the terminal verifies", ht)
    keep, kino = read(f), os.stat(f).st_ino
    rc, out = pty_run(t, FAST + [f, "tess"], [b"one", b"two"],
                      ptest.bound(30))
    t.check(rc == 1 and b"do not match" in out and untouched(),
            "two different answers: exit 1, says they do not match, file "
            "untouched", (rc, out))
    rc, out = pty_run(t, FAST + [f, "tess"], [b""], ptest.bound(30))
    t.check(rc == 1 and b"empty" in out and untouched(),
            "an empty password on the terminal refused", (rc, out))

    rc, out = pty_run(t, [os.path.join(d, "missing", "users"), "tess"], [],
                      ptest.bound(30))
    t.check(rc == 1 and b"missing" in out and b"assword" not in out,
            "a file in a missing directory is refused before the password "
            "is asked", (rc, out))

    if ptest.SANITIZERS:
        t.check(not sanitizer_reports, "no sanitizer report",
                lambda: sanitizer_reports[:3])


ptest.Test("passwd").run(main)
