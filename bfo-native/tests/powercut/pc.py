#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Power cuts, not kills: bfo's durability promises against a real kernel.

Runs as root on a kernel with device-mapper (dm-flakey, dm-log-writes,
dm-snapshot): in CI inside scripts/vm-run on Debian 12's 6.1 (ctest label
vm, test vm_powercut).  On ext4 and XFS, each workload is cut two ways:

 flakey     xfstests' way: the workload runs on a dm-flakey device; at a
            random moment (some after it returned) the table is switched to
            drop_writes (suspend --nolockfs, load, resume: no freeze, no
            sync), the workload killed, the file system unmounted (its last
            writes dropped), the table switched back, caches dropped, the
            file system mounted (journal replay), `bfo recover` run (a share
            of the recoveries is itself cut and run again), and the tree
            checked.
 logwrites  generic/482's and CrashMonkey's way: a whole run is recorded
            with dm-log-writes, then replayed (pc_replay_log) onto a fresh
            device up to every flush and FUA entry after the workload began,
            plus a sample of entries between them; at each point a
            dm-snapshot of the replay is mounted, recovered and checked.

Workloads: write (bfo write --replace, several batches over older versions),
cp-first (bfo cp -a into an empty DST), cp-update (bfo cp -a --update over an
older copy), cp-delete (bfo cp -a --delete: files rewritten, removed, added,
a file that became a directory and a directory that became a file),
sendrecv (bfo send -a | bfo recv -a --delete over an older copy), remote
(bfo cp -a --delete to h:DST through a remote shell that runs the far side
here: the list and the back channel), tar
(tar --use-bfo -xf over older versions).

Invariants after every cut, each counted:
 torn       every entry is absent, its old version whole or its new version
            whole, with its metadata (type, mode, mtime, size, bytes, link
            target); nothing in DST that is neither
 promise    a cut after the command returned 0: DST is the new tree exactly
 delete     (--delete workloads) a path SRC and DST share is never missing,
            a replaced path (rewritten, type change) is never missing, and
            nothing is removed while any new entry is not yet in place
 recover    bfo recover exits 0 and leaves no .bfo-journal and no .bfo-tmp.*
            anywhere; cut while it runs, it is run again
 untouched  a tree beside DST, durable before the run, is as it was

Exit: 0 every check passed (and at least one cut was made and checked per
workload and fs asked for), 1 a violation (each printed with its seed),
77 no device-mapper or no file system tool (the reason printed).
"""
import argparse
import ctypes
import fcntl
import hashlib
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SKIP = 77
PFX = "bfo-pc-%d" % os.getpid()

# ------------------------------------------------------------------ shell


def run(argv, check=True, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s%s" % (" ".join(argv), r.returncode, r.stderr, r.stdout))
    return r


TIMES = {}


class timed:
    """Seconds spent per step, summed (printed at the end: where a cut's time goes)."""

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        self.t = time.monotonic()

    def __exit__(self, *exc):
        TIMES[self.what] = TIMES.get(self.what, 0.0) + time.monotonic() - self.t


def log(msg):
    print("pc: " + msg, flush=True)


class Cleanup:
    """What was set up, undone in reverse order whatever happens."""

    def __init__(self):
        self.mounts, self.dms, self.loops = [], [], []

    def umount(self, mnt):
        for _ in range(50):
            if LIBC.umount2(mnt.encode(), 0) == 0:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("umount %s: still busy after 5 s" % mnt)
        if mnt in self.mounts:
            self.mounts.remove(mnt)

    def all(self):
        for m in reversed(self.mounts):
            run(["umount", "-l", m], check=False)
        self.mounts = []
        for d in reversed(self.dms):
            run(["dmsetup", "resume", d], check=False)
            run(["dmsetup", "remove", "--retry", d], check=False)
        self.dms = []
        for l in reversed(self.loops):
            run(["losetup", "-d", l], check=False)
        self.loops = []


CL = Cleanup()


def loop(img, mb):
    with open(img, "wb") as f:
        f.truncate(mb << 20)
    dev = run(["losetup", "--find", "--show", img]).stdout.strip()
    CL.loops.append(dev)
    return dev


def sectors(dev):
    return int(run(["blockdev", "--getsz", dev]).stdout)


# The cut is three device-mapper ioctls made here (linux/dm-ioctl.h), not
# three dmsetup processes: under TCG each of those took a few hundred ms,
# during which the workload went on.
DM_IOCTL_SIZE, DM_SPEC_SIZE = 312, 40
DM_DEV_CREATE, DM_DEV_REMOVE, DM_DEV_SUSPEND, DM_TABLE_LOAD = 0xC138FD03, 0xC138FD04, 0xC138FD06, 0xC138FD09
DM_SUSPEND_FLAG, DM_SKIP_LOCKFS_FLAG = 1 << 1, 1 << 10


def dm_ioctl(ctl, cmd, name, flags=0, spec=None):
    import struct
    data = b""
    count = 0
    if spec:
        start, length, ttype, params = spec
        pbytes = params.encode() + b"\0"
        pbytes += b"\0" * (-(DM_SPEC_SIZE + len(pbytes)) % 8)
        data = struct.pack("=QQiI16s", start, length, 0, 0, ttype.encode()) + pbytes
        count = 1
    size = DM_IOCTL_SIZE + len(data)
    buf = bytearray(struct.pack("=3IIIIiIIIQ128s129s7s", 4, 0, 0, size, DM_IOCTL_SIZE, count, 0, flags, 0, 0,
                                0, name.encode(), b"", b"") + data)
    fcntl.ioctl(ctl, cmd, buf)
    return buf


def dm_create(name, table):
    """The device, its table live, and its node (no udev in the VM)."""
    start, length, ttype, params = table.split(" ", 3)
    path = "/dev/mapper/" + name
    with open("/dev/mapper/control", "rb+", buffering=0) as ctl:
        buf = dm_ioctl(ctl, DM_DEV_CREATE, name)
        CL.dms.append(name)
        dev = int.from_bytes(buf[40:48], "little")
        dm_ioctl(ctl, DM_TABLE_LOAD, name, 0, (int(start), int(length), ttype, params))
        dm_ioctl(ctl, DM_DEV_SUSPEND, name, 0)
    if os.path.exists(path):
        os.unlink(path)
    os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(os.major(dev), os.minor(dev)))
    return path


def dm_remove(name):
    with open("/dev/mapper/control", "rb+", buffering=0) as ctl:
        for k in range(50):
            try:
                dm_ioctl(ctl, DM_DEV_REMOVE, name)
                break
            except OSError as e:
                if e.errno != 16 or k == 49:      # EBUSY: a last reference going away
                    raise
                time.sleep(0.1)
    CL.dms.remove(name)
    try:
        os.unlink("/dev/mapper/" + name)
    except FileNotFoundError:
        pass


def dm_load(name, table):
    start, length, ttype, params = table.split(" ", 3)
    with open("/dev/mapper/control", "rb+", buffering=0) as ctl:
        dm_ioctl(ctl, DM_DEV_SUSPEND, name, DM_SUSPEND_FLAG | DM_SKIP_LOCKFS_FLAG)
        try:
            dm_ioctl(ctl, DM_TABLE_LOAD, name, 0, (int(start), int(length), ttype, params))
        finally:
            dm_ioctl(ctl, DM_DEV_SUSPEND, name, 0)      # resume: the loaded table goes live


def mkfs(fs, dev):
    if fs == "xfs":
        run(["mkfs.xfs", "-f", "-q", dev])
    else:
        run(["mkfs.ext4", "-F", "-q", "-E", "nodiscard", dev])


# mount(2), umount2(2), syncfs(2) and BLKFLSBUF called here, not through
# mount, umount, sync and blockdev: a process costs a few hundred ms under TCG.
LIBC = ctypes.CDLL(None, use_errno=True)


class Result:
    def __init__(self, rc, err):
        self.returncode, self.stderr = rc, err


def mount(fs, dev, mnt):
    if LIBC.mount(dev.encode(), mnt.encode(), fs.encode(), 0, None) == 0:
        CL.mounts.append(mnt)
        return Result(0, "")
    return Result(1, os.strerror(ctypes.get_errno()))


def drop_caches(dev):
    fd = os.open(dev, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, 0x1261)               # BLKFLSBUF
    finally:
        os.close(fd)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def syncfs(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if LIBC.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), "syncfs " + path)
    finally:
        os.close(fd)

# ------------------------------------------------------------------ trees


def scan(root):
    """rel -> entry: ('d', mode) | ('f', mode, mtime_ns, size, sha) | ('l', target)."""
    out = {}
    if not os.path.lexists(root):
        return out
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", stat.S_IMODE(st.st_mode))
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    h = hashlib.sha1(f.read()).hexdigest()
                out[rel] = ("f", stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_size, h)
            else:
                out[rel] = ("?", st.st_mode)
    return out


def gen_file(p, rng, size=None):
    if size is None:
        size = rng.choice([0, 1, 100, 4095, 4096, 5000, 20000, 70000, rng.randrange(1, 200000)])
    with open(p, "wb") as f:
        f.write(rng.randbytes(size))
    os.chmod(p, rng.choice([0o644, 0o600, 0o755, 0o640]))
    t = 1500000000 + rng.randrange(10 ** 8)
    os.utime(p, ns=(t * 10 ** 9 + rng.randrange(10 ** 9), t * 10 ** 9 + rng.randrange(10 ** 9)))


def gen_tree(root, rng, nfiles, big=0):
    os.makedirs(root, exist_ok=True)
    dirs = [root]
    for i in range(max(1, nfiles // 12)):
        d = os.path.join(rng.choice(dirs), "d%02d" % i)
        os.makedirs(d, exist_ok=True)
        dirs.append(d)
    for i in range(nfiles):
        gen_file(os.path.join(rng.choice(dirs), "f%03d" % i), rng)
    for i in range(max(1, nfiles // 25)):
        os.symlink("f%03d" % rng.randrange(nfiles), os.path.join(rng.choice(dirs), "l%02d" % i))
    if big:
        gen_file(os.path.join(root, "big"), rng, big)
    for d in reversed(dirs[1:]):
        os.utime(d, ns=(1600000000 * 10 ** 9, 1600000000 * 10 ** 9))


def mutate(root, rng):
    """SRC v2: files rewritten, removed, added, a file that becomes a directory
    and a directory that becomes a file."""
    files = sorted(p for p in scan(root) if p.rsplit("/", 1)[-1].startswith("f"))
    rng.shuffle(files)
    n = len(files)
    for p in files[: n // 6]:                    # rewritten
        gen_file(os.path.join(root, p), rng)
    for p in files[n // 6: n // 3]:              # removed
        os.unlink(os.path.join(root, p))
    f2d = files[n // 3]                          # a file that becomes a directory
    os.unlink(os.path.join(root, f2d))
    os.mkdir(os.path.join(root, f2d))
    gen_file(os.path.join(root, f2d, "inside"), rng)
    dirs = sorted((p for p, e in scan(root).items() if e[0] == "d" and p.count("/") == 0), reverse=True)
    if dirs:                                     # a directory that becomes a file
        shutil.rmtree(os.path.join(root, dirs[0]))
        gen_file(os.path.join(root, dirs[0]), rng)
    for i in range(n // 6):                      # added
        gen_file(os.path.join(root, "new%03d" % i), rng)

# ------------------------------------------------------------------ workloads


class Workload:
    """old: the tree DST holds before (made durable); new: the tree after;
    delete: whether the command deletes (--delete); argv: the command."""
    delete = False

    def __init__(self, a, work, rng):
        self.a, self.work, self.rng = a, work, rng
        self.src = os.path.join(work, "src-" + self.name)
        self.oldref = os.path.join(work, "old-" + self.name)
        self.make()
        self.old = scan(self.oldref)
        self.new = self.expect()

    def expect(self):
        return scan(self.src)

    def prepare(self, dst):
        if os.path.exists(self.oldref):
            run(["cp", "-a", self.oldref + "/.", dst])

    def start(self, dst):
        return subprocess.Popen(self.argv(dst), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True, env=self.env())

    def env(self):
        return None


class WriteW(Workload):
    """bfo write --replace: a tar stream in batches of 40 files / 1 MiB over
    older versions of half of its files."""
    name = "write"

    def make(self):
        gen_tree(self.src, self.rng, self.a.files, big=3 << 20)
        os.makedirs(self.oldref)
        for p, e in sorted(scan(self.src).items()):
            if e[0] == "f" and self.rng.random() < 0.5:
                d = os.path.join(self.oldref, os.path.dirname(p))
                os.makedirs(d, exist_ok=True)
                gen_file(os.path.join(self.oldref, p), self.rng)
        self.tar = os.path.join(self.work, self.name + ".tar")
        run(["tar", "--format=pax", "-cf", self.tar, "-C", self.src, "."])

    def expect(self):
        new = scan(self.oldref)
        new.update(scan(self.src))
        return new

    def argv(self, dst):
        return [self.a.bfo, "write", "--tar", "--replace", "--batch-files", "40", "--batch-bytes", "1M", dst]

    def start(self, dst):
        return subprocess.Popen(self.argv(dst), stdin=open(self.tar, "rb"), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)


class CpFirst(Workload):
    name = "cp-first"

    def make(self):
        gen_tree(self.src, self.rng, self.a.files, big=3 << 20)

    def argv(self, dst):
        return [self.a.bfo, "cp", "-a", self.src + "/.", dst]


class CpUpdate(Workload):
    """--update over an older copy: a fifth of the files newer in SRC."""
    name = "cp-update"

    def make(self):
        gen_tree(self.oldref, self.rng, self.a.files)
        run(["cp", "-a", self.oldref, self.src])
        for p, e in sorted(scan(self.src).items()):
            if e[0] == "f" and self.rng.random() < 0.2:
                gen_file(os.path.join(self.src, p), self.rng)
                os.utime(os.path.join(self.src, p), ns=(2 * 10 ** 18, 1900000000 * 10 ** 9 + 1))

    def argv(self, dst):
        return [self.a.bfo, "cp", "-a", "--update", self.src + "/.", dst]


class CpDelete(Workload):
    name = "cp-delete"
    delete = True

    def make(self):
        gen_tree(self.oldref, self.rng, self.a.files)
        run(["cp", "-a", self.oldref, self.src])
        mutate(self.src, self.rng)

    def argv(self, dst):
        return [self.a.bfo, "cp", "-a", "--delete", self.src + "/.", dst]


class Pipe:
    """bfo send -a SRC/. | bfo recv -a --delete DST, each in a session of its
    own (killall signals both): exit 0 when both did.  A SIGTERM goes to the sender alone
    (term_pid), as t_sync's to the local side of a remote sync: the
    receiver sees its stream end early."""

    def __init__(self, bfo, src, dst):
        self.s = subprocess.Popen([bfo, "send", "-a", src + "/."], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        self.r = subprocess.Popen([bfo, "recv", "-a", "--delete", dst], stdin=self.s.stdout,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        self.s.stdout.close()
        self.pid = self.term_pid = self.s.pid
        self.stderr = self.r.stderr
        self.returncode = None

    def killall(self, sig):
        for q in (self.s, self.r):
            try:
                os.killpg(q.pid, sig)
            except ProcessLookupError:
                pass

    def poll(self):
        a, b = self.s.poll(), self.r.poll()
        if a is None or b is None:
            return None
        self.returncode = a or b
        return self.returncode

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("bfo send | bfo recv", timeout)
            time.sleep(0.005)
        return self.returncode

    def communicate(self):
        err = self.r.stderr.read()
        self.wait()
        return None, err


class SendRecv(CpDelete):
    name = "sendrecv"

    def start(self, dst):
        return Pipe(self.a.bfo, self.src, dst)


class Remote(CpDelete):
    """bfo cp -a --delete SRC/. h:DST through a remote shell that runs the
    far side here (t_sync's): stream version 2, the list first and the
    receiver's answers on the back channel.  A SIGTERM goes to the local
    bfo alone, as t_sync's kill case."""
    name = "remote"

    def make(self):
        CpDelete.make(self)
        self.rsh = os.path.join(self.work, "rsh")
        with open(self.rsh, "w") as f:
            f.write('#!/bin/sh\nshift\nexec sh -c "$*"\n')
        os.chmod(self.rsh, 0o755)

    def argv(self, dst):
        return [self.a.bfo, "cp", "-a", "--delete", "--rsh", self.rsh, "--remote-bfo", self.a.bfo,
                self.src + "/.", "h:" + dst]

    def start(self, dst):
        p = Workload.start(self, dst)
        p.term_pid = p.pid
        return p


class TarX(WriteW):
    """tar --use-bfo -xf over older versions (GNU tar replaces files)."""
    name = "tar"

    def argv(self, dst):
        return [os.path.join(REPO, "tar-plugin", "bin", "tar"), "--use-bfo", "-xf", self.tar, "-C", dst]

    def env(self):
        e = dict(os.environ)
        e["BFO_TAR_PLUGIN"] = self.a.plugin
        return e

    def start(self, dst):
        return subprocess.Popen(self.argv(dst), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True, env=self.env())


class JavaW(WriteW):
    """BatchFileWriter (PcJavaWriter.java): 25 entries per write(), durability
    BATCH, replace on, over older versions of half the files.  What a write()
    returned as durable ("durable PATH" lines) must survive any later cut."""
    name = "java"

    def make(self):
        WriteW.make(self)
        self.reported, self.on_batch = [], None

    def argv(self, dst):
        return [self.a.java, "-Dbfo.library.path=" + self.a.build, "-cp", self.a.java_cp,
                os.path.join(HERE, "PcJavaWriter.java"), dst, self.src, "25"]

    def start(self, dst):
        self.reported = []
        p = subprocess.Popen(self.argv(dst), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)

        def reader():
            for line in p.stdout:
                if line.startswith("durable "):
                    self.reported.append(line[8:].rstrip("\n"))
                elif line.startswith("batch") and self.on_batch:
                    self.on_batch(len(self.reported))
        p.reader = threading.Thread(target=reader, daemon=True)
        p.reader.start()
        return p


WORKLOADS = {w.name: w for w in (WriteW, CpFirst, CpUpdate, CpDelete, SendRecv, Remote, TarX, JavaW)}

# ------------------------------------------------------------------ checks


class Checks:
    KINDS = ("torn", "promise", "delete", "recover", "untouched")

    def __init__(self):
        self.n = {k: 0 for k in self.KINDS}
        self.bad = {k: 0 for k in self.KINDS}
        self.examples = []

    def ok(self, kind, cond, what):
        self.n[kind] += 1
        if not cond:
            self.bad[kind] += 1
            if len(self.examples) < 400:
                self.examples.append("%s: %s" % (kind, what))
            log("VIOLATION %s: %s" % (kind, what))
        return cond

    def add(self, o):
        for k in self.KINDS:
            self.n[k] += o.n[k]
            self.bad[k] += o.bad[k]

    def total_bad(self):
        return sum(self.bad.values())

    def line(self):
        return ", ".join("%s %d/%d" % (k, self.n[k] - self.bad[k], self.n[k]) for k in self.KINDS)


def same(a, b):
    """Entries equal for the invariants (directories: type and mode)."""
    return a == b


def kill_all(p, sig):
    if hasattr(p, "killall"):
        p.killall(sig)
    else:
        os.killpg(p.pid, sig)


def check_tree(ck, w, dst, returned, where, promised=()):
    """The invariants on DST after recovery.  returned: the command had
    returned 0 before the cut; promised: entries the API had reported
    durable before it."""
    now = scan(dst)
    old, new = w.old, w.new
    for p in promised:
        if new.get(p, ("d",))[0] != "d":
            ck.ok("promise", now.get(p) == new[p], "%s: %s was reported durable before the cut, and is %r" % (
                where, p, now.get(p)))
    for p in sorted(set(now) | set(old) | set(new)):
        if p.split("/")[0] == ".bfo-journal" or p.rsplit("/", 1)[-1].startswith(".bfo-tmp."):
            continue                              # the recover check counts these
        e, o, n = now.get(p), old.get(p), new.get(p)
        if e is None:
            ck.ok("torn", not (o is not None and n is not None and o == n and not w.delete and o[0] != "d"),
                  "%s: %s vanished (in the old and the new tree alike)" % (where, p))
            continue
        ck.ok("torn", same(e, o) or same(e, n) or (e[0] == "d" and ((o and o[0] == "d") or (n and n[0] == "d"))),
              "%s: %s is %r: neither old %r nor new %r" % (where, p, e, o, n))
    if returned:
        ck.ok("promise", now == new or only_dir_modes(now, new),
              "%s: returned 0 before the cut, but DST differs from the new tree: %s" % (where, diff(now, new)))
    if w.delete:
        missing_new = [p for p, n in new.items() if now.get(p) != n and n[0] != "d"]
        for p, o in old.items():
            n = new.get(p)
            if n is not None and n == o:
                ck.ok("delete", p in now, "%s: %s, in SRC and DST alike, is missing" % (where, p))
            elif n is not None:
                ck.ok("delete", p in now, "%s: %s (replaced: %s -> %s) is missing: removed before its "
                      "replacement was durable" % (where, p, o[0], n[0]))
        # what --delete removed, apart from the trees a type change replaces
        # (those are make_room's, checked above as "replaced ... missing")
        changed = [p for p, o in old.items() if p in new and new[p][0] != o[0]]
        removed = [p for p in old if p not in new and p not in now and
                   not any(p.startswith(c + "/") for c in changed)]
        ck.ok("delete", not (removed and missing_new),
              "%s: --delete removed %d entries (%s...) while %d new entries were not yet in place (%s...)" % (
                  where, len(removed), removed[0] if removed else "", len(missing_new),
                  missing_new[0] if missing_new else ""))
    return now


def only_dir_modes(a, b):
    return set(a) == set(b) and all(a[p] == b[p] or (a[p][0] == "d" and b[p][0] == "d") for p in a)


def diff(a, b):
    miss = sorted(set(b) - set(a))
    extra = sorted(set(a) - set(b))
    chg = sorted(p for p in set(a) & set(b) if a[p] != b[p])
    return "missing %d %s, extra %d %s, changed %d %s" % (len(miss), miss[:3], len(extra), extra[:3],
                                                         len(chg), chg[:3])


def leftovers(root):
    bad = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            if name == ".bfo-journal" or name.startswith(".bfo-tmp."):
                bad.append(os.path.relpath(os.path.join(dirpath, name), root))
    return bad


def recover(ck, a, mnt, dst, where):
    r = run([a.bfo, "recover", dst], check=False)
    ck.ok("recover", r.returncode == 0, "%s: bfo recover exit %d: %s" % (where, r.returncode, r.stderr.strip()))
    left = leftovers(mnt)
    ck.ok("recover", not left, "%s: left after bfo recover: %s" % (where, left[:5]))

# ------------------------------------------------------------------ flakey


def flakey_fs(a, fs, wl, seed, ncuts, ck_by):
    """ncuts cuts of each workload in wl on one flakey file system."""
    work = a.work
    img = os.path.join(work, "%s-flakey.img" % fs)
    ldev = loop(img, a.image_mb)
    n = sectors(ldev)
    up = "0 %d flakey %s 0 180 0" % (n, ldev)
    down = "0 %d flakey %s 0 0 180 1 drop_writes" % (n, ldev)
    name = "%s-flakey-%s" % (PFX, fs)
    dev = dm_create(name, up)
    mkfs(fs, dev)
    mnt = os.path.join(work, "mnt-" + fs)
    os.makedirs(mnt, exist_ok=True)
    if mount(fs, dev, mnt).returncode:
        raise RuntimeError("mount %s" % fs)
    rng = random.Random(seed)
    untouched = os.path.join(mnt, "untouched")
    gen_tree(untouched, rng, 30)
    syncfs(mnt)
    ref_untouched = scan(untouched)
    cuts = kills = 0
    for w in wl:
        ck = ck_by[(w.name, fs, "flakey")]
        dst = os.path.join(mnt, "dst")
        # an uninterrupted run: the duration, and the tree when whole
        os.makedirs(dst)
        w.prepare(dst)
        syncfs(mnt)
        t0 = time.monotonic()
        p = w.start(dst)
        first = None
        while p.poll() is None:
            if first is None and getattr(w, "reported", None):
                first = time.monotonic() - t0
            time.sleep(0.01)
        err = p.stderr.read()
        full = time.monotonic() - t0
        # cuts where the work is (a JVM's start is not)
        lo = 0.8 * first if first else 0.0
        if p.returncode != 0:
            raise RuntimeError("[%s %s] uninterrupted run: exit %d: %s" % (w.name, fs, p.returncode, err))
        check_tree(ck, w, dst, True, "%s/%s uninterrupted" % (w.name, fs))
        shutil.rmtree(dst)
        log("%s on %s: uninterrupted run %.2f s" % (w.name, fs, full))
        for i in range(ncuts + a.kills):
            where = "%s/%s flakey cut %d (seed %d)" % (w.name, fs, i, seed)
            with timed("fl prepare"):
                os.makedirs(dst)
                w.prepare(dst)
                syncfs(mnt)
            # a fifth of the cuts right after the command returned, the rest
            # anywhere in its run (and a little beyond)
            after = rng.random() < 0.2
            delay = rng.uniform(lo, full * 1.1)
            p = w.start(dst)
            if after:
                p.wait()
            else:
                try:
                    p.wait(timeout=delay)
                except subprocess.TimeoutExpired:
                    pass
            rc = p.poll()
            returned = rc == 0
            promised = list(getattr(w, "reported", ()))
            if i >= ncuts:                       # a kill, no cut: SIGTERM, as t_sync's
                where = where.replace("flakey cut", "SIGTERM")
                if rc is None:
                    if getattr(p, "term_pid", None):
                        try:                     # the sender; if it is done, the receiver
                            os.kill(p.term_pid, signal.SIGTERM)
                        except ProcessLookupError:
                            kill_all(p, signal.SIGTERM)
                    else:
                        kill_all(p, signal.SIGTERM)
                    try:
                        p.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        ck.ok("recover", False, "%s: still running 10 s after SIGTERM" % where)
                        kill_all(p, signal.SIGKILL)
                p.wait()
                with timed("fl recover"):
                    recover(ck, a, mnt, dst, where)
                with timed("fl check"):
                    check_tree(ck, w, dst, returned, where, promised)
                    shutil.rmtree(dst)
                kills += 1
                continue
            with timed("fl cut+remount"):
                dm_load(name, down)                  # the cut
                if rc is None:
                    kill_all(p, signal.SIGKILL)
                p.wait()
                CL.umount(mnt)
                dm_load(name, up)
                drop_caches(dev)
                r = mount(fs, dev, mnt)
            if not ck.ok("recover", r.returncode == 0, "%s: mount after the cut: %s" % (where, r.stderr)):
                raise RuntimeError("the file system did not survive a cut")
            if rng.random() < a.cut_recover:       # cut bfo recover itself, then run it again
                rp = subprocess.Popen([a.bfo, "recover", dst], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
                time.sleep(rng.uniform(0, 0.3))
                dm_load(name, down)
                if rp.poll() is None:
                    os.killpg(rp.pid, signal.SIGKILL)
                rp.wait()
                CL.umount(mnt)
                dm_load(name, up)
                drop_caches(dev)
                r = mount(fs, dev, mnt)
                ck.ok("recover", r.returncode == 0, "%s: mount after a cut during bfo recover" % where)
                where += " (recovery cut once)"
            with timed("fl recover"):
                recover(ck, a, mnt, dst, where)
            with timed("fl check"):
                check_tree(ck, w, dst, returned, where + (" after exit 0" if returned else
                                                          " after %.3f s" % delay), promised)
                ck.ok("untouched", scan(untouched) == ref_untouched, "%s: the tree beside DST changed" % where)
                shutil.rmtree(dst)
            cuts += 1
        log("%s on %s, flakey: %d cuts%s: %s" % (w.name, fs, ncuts, ", %d SIGTERMs" % a.kills if a.kills else "",
                                                ck.line()))
    CL.umount(mnt)
    dm_remove(name)
    return cuts

# ------------------------------------------------------------------ log-writes


def replay_index(a, logdev):
    ents = []
    for line in run([a.replay, "index", logdev]).stdout.splitlines():
        i, off, flags, sec, nsec, mark = line.split(" ", 5)
        ents.append((int(i), int(off), int(flags), mark, int(nsec)))
    return ents


def logwrites_fs(a, fs, w, seed, ck, sample):
    """One recorded run of w on fs, replayed to every flush/FUA point after
    the workload began and to `sample` points between them."""
    work = a.work
    rng = random.Random(seed)
    ddev = loop(os.path.join(work, "%s-lw-data.img" % fs), a.image_mb)
    ldev = loop(os.path.join(work, "%s-lw-log.img" % fs), a.image_mb * 4)
    n = sectors(ddev)
    name = "%s-lw-%s" % (PFX, fs)
    dev = dm_create(name, "0 %d log-writes %s %s" % (n, ddev, ldev))
    mkfs(fs, dev)
    mnt = os.path.join(work, "mnt-" + fs)
    os.makedirs(mnt, exist_ok=True)
    if mount(fs, dev, mnt).returncode:
        raise RuntimeError("mount %s" % fs)
    untouched = os.path.join(mnt, "untouched")
    gen_tree(untouched, rng, 30)
    ref_untouched = scan(untouched)
    dst = os.path.join(mnt, "dst")
    os.makedirs(dst)
    w.prepare(dst)
    syncfs(mnt)
    run(["dmsetup", "message", name, "0", "mark", "begin"])
    if hasattr(w, "on_batch"):
        w.on_batch = lambda n: run(["dmsetup", "message", name, "0", "mark", "durable-%d" % n])
    p = w.start(dst)
    if hasattr(p, "reader"):
        p.wait()
        p.reader.join()
        err = p.stderr.read()
        w.on_batch = None
    else:
        err = p.communicate()[1]
    if p.returncode != 0:
        raise RuntimeError("[%s %s] recorded run: exit %d: %s" % (w.name, fs, p.returncode, err))
    run(["dmsetup", "message", name, "0", "mark", "returned"])
    CL.umount(mnt)
    dm_remove(name)
    ents = replay_index(a, ldev)
    marks = {e[3]: e[0] for e in ents if e[3] != "-"}
    b, ret = marks["begin"], marks["returned"]
    # point k: entries 0..k-1 reached the device
    flushes = [e[0] + 1 for e in ents if e[0] > b and e[2] & 3]
    between = [e[0] + 1 for e in ents if e[0] > b and not e[2] & 3]
    points = sorted(set(flushes + rng.sample(between, min(sample, len(between))) + [b + 1, len(ents)]))
    # a point with no write since the one before holds the same state: once
    dedup, last = [], None
    for k in points:
        if last is None or any(ents[j][4] for j in range(last, k)):
            dedup.append(k)
        last = k
    same = len(points) - len(dedup)
    points = dedup
    # replay onto a fresh device; each point checked on a snapshot of it
    rdev = loop(os.path.join(work, "%s-lw-replay.img" % fs), a.image_mb)
    cdev = loop(os.path.join(work, "%s-lw-cow.img" % fs), a.image_mb)
    at, off = 0, ents[0][1] if ents else 512
    offs = {e[0]: e[1] for e in ents}
    offs[len(ents)] = None
    for k in points:
        with timed("lw replay"):
            run([a.replay, "apply", ldev, rdev, str(at), str(off), str(k)])
        at, off = k, offs.get(k)
        where = "%s/%s log-writes entry %d of %d (%s, seed %d)" % (
            w.name, fs, k, len(ents), "flush/FUA" if k in flushes else "between", seed)
        sname = "%s-snap-%s" % (PFX, fs)
        with timed("lw snapshot+mount"):
            sdev = dm_create(sname, "0 %d snapshot %s %s N 8" % (n, rdev, cdev))
            r = mount(fs, sdev, mnt)
        if ck.ok("recover", r.returncode == 0, "%s: mount: %s" % (where, r.stderr.strip())):
            with timed("lw recover"):
                recover(ck, a, mnt, dst, where)
            with timed("lw check"):
                done = [int(m[8:]) for m, i in marks.items() if m.startswith("durable-") and i < k]
                check_tree(ck, w, dst, k > ret, where, w.reported[:max(done)] if done else ())
                ck.ok("untouched", scan(untouched) == ref_untouched, "%s: the tree beside DST changed" % where)
        with timed("lw umount+remove"):
            if r.returncode == 0:
                CL.umount(mnt)
            dm_remove(sname)
        if off is None:
            break
    log("%s on %s, log-writes: %d entries, %d flush/FUA points, %d states checked (%d points between "
        "flushes; %d points skipped, the same state as the point before): %s" % (
            w.name, fs, len(ents), len(flushes), len(points), len(set(points) - set(flushes)), same, ck.line()))
    return len(points)

# ------------------------------------------------------------------ main


def why_not(a):
    if os.geteuid() != 0:
        return "not root: device-mapper and mounts need root"
    for prog in ("dmsetup", "losetup", "blockdev", "mkfs.ext4"):
        if not shutil.which(prog):
            return "%s is not installed" % prog
    run(["modprobe", "-a", "dm_mod", "dm_flakey", "dm_log_writes", "dm_snapshot"], check=False)
    if not os.path.exists("/dev/mapper/control"):
        return "no device-mapper (/dev/mapper/control): this kernel lacks it; run in scripts/vm-run"
    tg = run(["dmsetup", "targets"], check=False).stdout
    for t in ("flakey", "log-writes", "snapshot"):
        if t not in tg:
            return "device-mapper has no %s target" % t
    for f in (a.bfo, a.replay):
        if not os.access(f, os.X_OK):
            return "%s is not built" % f
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("BFO_BUILD", os.path.join(REPO, "bfo-native", "build")))
    ap.add_argument("--fs", default="ext4,xfs")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--method", default="flakey,logwrites")
    ap.add_argument("--cuts", type=int, default=20, help="flakey cuts per workload and fs")
    ap.add_argument("--runs", type=int, default=1, help="recorded runs per workload and fs (log-writes)")
    ap.add_argument("--sample", type=int, default=4, help="log-writes points between flushes per run")
    ap.add_argument("--files", type=int, default=60, help="files per tree")
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    ap.add_argument("--long", action="store_true", help="the note's run: 200 cuts, 3 recorded runs, 20 samples")
    ap.add_argument("--image-mb", type=int, default=320)
    ap.add_argument("--kills", type=int, default=0,
                    help="SIGTERMs per workload and fs besides the cuts (no cut: kill, recover, check)")
    ap.add_argument("--cut-recover", type=float, default=0.25, help="share of recoveries cut once")
    a = ap.parse_args()
    if a.long:
        a.cuts, a.runs, a.sample = max(a.cuts, 200), max(a.runs, 3), max(a.sample, 20)
    a.bfo = os.path.join(a.build, "bfo")
    a.replay = os.path.join(a.build, "pc_replay_log")
    a.plugin = os.path.join(a.build, "libbfo_tar.so")
    a.java = shutil.which("java")
    jar = os.path.join(REPO, "bfo-java", "target", "bfo-java-0.1.0-SNAPSHOT.jar")
    jna = os.path.expanduser("~/.m2/repository/net/java/dev/jna/jna/5.19.1/jna-5.19.1.jar")
    a.java_cp = jar + ":" + jna
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    why = why_not(a)
    if why:
        print("pc: SKIPPED: " + why)
        return SKIP
    fss = [f for f in a.fs.split(",") if shutil.which("mkfs." + f)]
    if not fss:
        print("pc: SKIPPED: no mkfs for %s" % a.fs)
        return SKIP
    names = a.workloads.split(",")
    if "tar" in names and not os.path.exists(a.plugin):
        print("pc: SKIPPED: the tar plugin is not built (%s)" % a.plugin)
        return SKIP
    if "java" in names and not (a.java and os.path.exists(jar) and os.path.exists(jna)):
        log("java workload SKIPPED: needs java, %s (mvn -pl bfo-java package) and %s" % (jar, jna))
        names.remove("java")
    methods = a.method.split(",")
    log("seed %d (rerun with --seed %d); %s; workloads %s; %s; %d cuts, %d recorded runs, %d samples" % (
        seed, seed, ",".join(fss), ",".join(names), ",".join(methods), a.cuts, a.runs, a.sample))
    a.work = os.environ.get("BFO_PC_WORK") or "/dev/shm/%s" % PFX
    os.makedirs(a.work)
    ck_by = {}
    counts = {}
    t0 = time.monotonic()
    try:
        rng = random.Random(seed)
        wl = [WORKLOADS[n](a, a.work, random.Random(rng.getrandbits(32))) for n in names]
        for fs in fss:
            for w in wl:
                for m in methods:
                    ck_by[(w.name, fs, m)] = Checks()
            if "flakey" in methods:
                counts[("flakey", fs)] = flakey_fs(a, fs, wl, rng.getrandbits(32), a.cuts, ck_by)
            if "logwrites" in methods:
                for w in wl:
                    pts = 0
                    for _ in range(a.runs):
                        pts += logwrites_fs(a, fs, w, rng.getrandbits(32), ck_by[(w.name, fs, "logwrites")],
                                            a.sample)
                    counts[("logwrites", fs, w.name)] = pts
    finally:
        CL.all()
        shutil.rmtree(a.work, ignore_errors=True)
    total = Checks()
    log("summary (seed %d, %.0f s): checks passed/made per invariant" % (seed, time.monotonic() - t0))
    for (wn, fs, m), ck in sorted(ck_by.items()):
        what = "%d cuts" % a.cuts if m == "flakey" else "%d points" % counts.get(("logwrites", fs, wn), 0)
        log("  %-9s %-4s %-9s %-10s %s" % (wn, fs, m, what, ck.line()))
        total.add(ck)
    log("  all: %s" % total.line())
    log("time by step: " + ", ".join("%s %.0f s" % kv for kv in sorted(TIMES.items())))
    if any(sum(ck.n.values()) == 0 for ck in ck_by.values()):
        log("FAIL: a workload was not checked at all")
        return 1
    if total.total_bad():
        log("FAIL: %d violations (seed %d)" % (total.total_bad(), seed))
        return 1
    log("PASS: %d checks, 0 violations" % sum(total.n.values()))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        CL.all()
        sys.exit(130)
