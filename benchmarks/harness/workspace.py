"""Where a set lives while it is measured.

ImageWorkspace (root): a fresh sparse image file in the work dir, formatted
(ext4 by default), attached with `losetup --find --show --direct-io=on` so the
loop device behaves like a device rather than a second page cache, mounted
noatime. Always unmounted, detached and deleted on exit, including on errors
and signals; with keep=True the image file stays (unmounted, detached) and is
reused by the next run when its manifest matches the set's parameters.

DirWorkspace (not root): a plain directory under the work dir on the current
file system; warm cache only, no device.

Both hold, at their root: the set's directory (named after the set), a tiny
probe directory (.bfo-probe, used to check that a bfo engine works before it
is timed), and the manifest (.bfo-bench-manifest.json).
"""

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

from . import util

MANIFEST = ".bfo-bench-manifest.json"
PROBE_DIR = ".bfo-probe"
PROBE_FILES = 3
LAYOUT_VERSION = 1     # bump when generators change: kept images are then rebuilt


def set_key(name, params, fs):
    h = hashlib.sha1(json.dumps([LAYOUT_VERSION, name, params, fs], sort_keys=True).encode()).hexdigest()[:8]
    return f"{name}-{h}"


def findmnt(path):
    """(source, fstype, options, target) of the mount holding path."""
    r = util.run(["findmnt", "-n", "-T", str(path), "-o", "SOURCE,FSTYPE,OPTIONS,TARGET"])
    if not r.ok or not r.stdout.strip():
        return None, None, None, None
    parts = r.stdout.split()
    return (parts + [None] * 4)[:4]


class WorkdirLock:
    """One bench/sweep per work dir at a time; while holding the lock, leftovers
    of an earlier run that was killed hard (SIGKILL, power loss) are ours to clean."""

    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.fd = None

    def __enter__(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.workdir / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise RuntimeError(f"another bench/sweep is running in {self.workdir} (lock held)") from None
            raise
        if util.is_root():
            clean_stale(self.workdir)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)
        return False


def _loop_backings():
    """{'/dev/loopN': backing file path} for attached loop devices."""
    out = {}
    for d in Path("/sys/block").glob("loop*"):
        try:
            out[f"/dev/{d.name}"] = (d / "loop" / "backing_file").read_text().strip()
        except OSError:
            pass
    return out


def _owner_alive(name):
    """Whether the process whose PID ends name (mnt-KEY-PID, KEY.tmpPID.img, scratch-PID,
    bfo-snapshot-PID) still runs: then what it made is in use, not left over. A name without a PID
    has no owner here."""
    from . import remote
    m = re.search(r"(?:mnt-.*-|\.tmp|scratch-|bfo-snapshot-)(\d+)(?:\.img)?$", name)
    return bool(m) and remote.pid_alive(int(m.group(1)))


def clean_stale(workdir):
    """Unmount, detach and delete what runs that ended without cleaning up left in workdir; what a
    running process made (another bench, a bed kept up by hand) is left alone."""
    from . import remote
    remote.clean_stale(workdir)      # M2's namespace and sshd first: what ran there may hold a mount busy
    wd = str(Path(workdir).resolve())
    with open("/proc/self/mounts") as f:
        mounts = [line.split()[:2] for line in f]
    for dev, mnt in reversed(mounts):
        m = mnt.replace("\\040", " ")
        if m.startswith(wd + "/mnt-") and not _owner_alive(m):
            util.warn(f"unmounting leftover {m} from an earlier run")
            _umount(m)
            try:
                os.rmdir(m)
            except OSError:
                pass
    with open("/proc/self/mounts") as f:
        mounted = {line.split()[0] for line in f}
    for dev, backing in _loop_backings().items():
        if backing.startswith(wd + "/") and dev not in mounted and not _owner_alive(backing):
            util.warn(f"detaching leftover {dev} ({backing}) from an earlier run")
            util.run(["losetup", "-d", dev])
    for img in Path(wd).glob("*.tmp*.img"):
        if not _owner_alive(img.name):
            util.warn(f"deleting leftover image {img}")
            img.unlink()
    for d in Path(wd).glob("mnt-*"):
        try:
            d.rmdir()
        except OSError:
            pass
    for d in list(Path(wd).glob("scratch-*")) + list(Path(wd).glob("bin/bfo-snapshot-*")):
        if not _owner_alive(d.name):
            shutil.rmtree(d, ignore_errors=True)


def _umount(mnt):
    for attempt in range(20):
        r = util.run(["umount", str(mnt)])
        if r.ok:
            return True
        if "not mounted" in (r.stderr or ""):
            return True
        time.sleep(0.25 if attempt < 8 else 1.0)
    util.warn(f"umount {mnt} keeps failing ({(r.stderr or '').strip()}); lazy unmount")
    return util.run(["umount", "-l", str(mnt)]).ok


class _Base:
    kind = "?"

    def __init__(self, workdir, set_name, params, keep):
        self.workdir = Path(workdir).resolve()
        self.set_name = set_name
        self.params = params
        self.keep = keep
        self.root = None        # mount point or directory
        self.reused = False
        self.resumed = False    # a kept set whose generation was cut short: made on, not anew
        self.device = None
        self.info = {}

    @property
    def set_dir(self):
        return self.root / self.set_name

    @property
    def probe_dir(self):
        return self.root / PROBE_DIR

    def manifest_wanted(self):
        return {"layout_version": LAYOUT_VERSION, "set": self.set_name, "params": self.params}

    def read_manifest(self):
        try:
            return json.loads((self.root / MANIFEST).read_text())
        except (OSError, ValueError):
            return None

    def manifest_matches(self):
        m = self.read_manifest()
        if not m or not m.get("complete"):
            return False
        want = self.manifest_wanted()
        return all(m.get(k) == v for k, v in want.items()) and self.set_dir.is_dir() and self.probe_dir.is_dir()

    def generation_cut_short(self):
        """A kept set whose resumable generation (scaleset.py) was cut short by a kill: its state
        (SET.gen/params.json beside the set) names these parameters and it has no manifest yet."""
        try:
            st = json.loads((self.root / f"{self.set_name}.gen" / "params.json").read_text())
        except (OSError, ValueError):
            return False
        return st.get("params") == json.loads(json.dumps(self.params)) and self.probe_dir.is_dir()

    def write_manifest(self, extra):
        m = dict(self.manifest_wanted(), complete=True, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), **extra)
        tmp = self.root / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(m, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.root / MANIFEST)
        os.sync()

    def make_probe(self):
        self.probe_dir.mkdir(exist_ok=True)
        for i in range(PROBE_FILES):
            (self.probe_dir / f"p{i}").write_bytes(bytes([i + 1]) * (1000 * (i + 1)))

    def manifest(self):
        return self.read_manifest() or {}

    def __enter__(self):
        try:
            self.open()
        except BaseException:
            with util.cleaning():
                self.close()
            raise
        return self

    def __exit__(self, *exc):
        with util.cleaning():
            util.kill_children()   # nothing of ours may keep the mount busy
            self.close()
        return False


class DirWorkspace(_Base):
    """Not root: a directory on the current file system (warm cache only)."""
    kind = "directory"

    def __init__(self, workdir, set_name, params, keep, fs=None, size_bytes=None, inodes=None, need_bytes=0,
                 probe=True):
        super().__init__(workdir, set_name, params, keep)
        self.key = set_key(set_name, params, "dir")
        self.created = False
        self.probe = probe

    def open(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not os.access(self.workdir, os.W_OK):
            raise RuntimeError(f"work dir {self.workdir} is not writable; pass --workdir DIR")
        self.root = self.workdir / (self.key if self.keep else f"{self.key}.tmp{os.getpid()}")
        if self.root.exists():
            if self.keep and self.manifest_matches():
                self.reused = True
                util.log(f"reusing kept directory {self.root}")
            elif self.keep and self.generation_cut_short():
                self.resumed = True
                util.log(f"kept directory {self.root}: its generation was cut short; resuming it")
            else:
                shutil.rmtree(self.root)
        if not self.reused and not self.resumed:
            self.root.mkdir(parents=True)
            self.created = True
            if self.probe:
                self.make_probe()
        src, fstype, opts, target = findmnt(self.root)
        self.info = {"workspace": "directory", "path": str(self.root), "fs": fstype, "fs_source": src,
                     "mount_options": opts, "mount_point": target, "cache": "warm"}

    def close(self):
        if self.root is None:
            return
        if self.keep:
            util.log(f"kept {self.root}")
        elif self.root.exists():
            shutil.rmtree(self.root, ignore_errors=True)
        self.root = None


class ImageWorkspace(_Base):
    """Root: sparse image file -> mkfs -> losetup --direct-io=on -> mount."""
    kind = "image"

    def __init__(self, workdir, set_name, params, keep, fs="ext4", size_bytes=1 << 30, inodes=None, need_bytes=0,
                 probe=True):
        super().__init__(workdir, set_name, params, keep)
        self.probe = probe      # False: an empty file system (write/copy destinations)
        self.need_bytes = need_bytes     # about what the image will really occupy
        self.fs = fs
        self.size_bytes = size_bytes
        self.inodes = inodes
        self.key = set_key(set_name, params, fs)
        self.image = self.workdir / (f"{self.key}.img" if keep else f"{self.key}.tmp{os.getpid()}.img")
        self.mnt = self.workdir / f"mnt-{self.key}-{os.getpid()}"
        self.image_created = False
        self.mounted = False

    # -- steps -------------------------------------------------------------
    def _mkfs(self):
        if self.fs == "ext4":
            cmd = ["mkfs.ext4", "-q", "-F", "-m", "0", "-L", "bfo-bench",
                   # initialise inode tables and journal now, so no ext4lazyinit
                   # thread writes in the background while we time reads
                   "-E", "lazy_itable_init=0,lazy_journal_init=0"]
            if self.inodes:
                cmd += ["-N", str(self.inodes)]
        elif self.fs == "xfs":
            cmd = ["mkfs.xfs", "-q", "-f", "-L", "bfo-bench"]
        else:
            raise RuntimeError(f"unsupported file system {self.fs}")
        self.info["mkfs"] = " ".join(cmd)
        util.run(cmd + [self.image], check=True)

    def _attach(self):
        r = util.run(["losetup", "--find", "--show", "--direct-io=on", self.image], check=True)
        self.device = r.stdout.strip()
        name = os.path.basename(self.device)
        try:
            dio = Path(f"/sys/block/{name}/loop/dio").read_text().strip() == "1"
        except OSError:
            dio = None
        if dio is False:
            util.warn(f"{self.device}: direct I/O could not be enabled; the backing file's page cache "
                      "is still dropped before every run, but results are less device-like")
        self.info.update(device=self.device, loop_direct_io=dio)

    def _mount(self):
        self.mnt.mkdir(parents=True, exist_ok=True)
        opts = "noatime"
        util.run(["mount", "-t", self.fs, "-o", opts, self.device, self.mnt], check=True)
        self.mounted = True
        self.root = self.mnt
        self.info["mount_options"] = opts

    def open(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        reuse = self.keep and self.image.exists()
        if reuse:
            try:
                self._attach()
                self._mount()
            except RuntimeError as e:
                util.warn(f"kept image {self.image} unusable ({e}); rebuilding it")
                self.close(delete=True)
                reuse = False
            else:
                if self.manifest_matches() and os.path.getsize(self.image) >= self.size_bytes:
                    self.reused = True
                    util.log(f"reusing kept image {self.image} ({self.device})")
                elif self.generation_cut_short() and os.path.getsize(self.image) >= self.size_bytes:
                    self.resumed = True
                    util.log(f"kept image {self.image}: its generation was cut short; resuming it")
                else:
                    util.log(f"kept image {self.image} does not match the set parameters; rebuilding it")
                    self.close(delete=True)
                    reuse = False
        if not self.reused and not self.resumed:
            self._check_space()
            with open(self.image, "wb") as f:
                f.truncate(self.size_bytes)
            self.image_created = True
            self._mkfs()
            self._attach()
            self._mount()
            if self.probe:
                self.make_probe()
        src, fstype, opts, target = findmnt(self.workdir)
        self.info.update(workspace="image", image=str(self.image), image_bytes=self.size_bytes, fs=self.fs,
                         inodes=self.inodes, mount_point=str(self.mnt), backing_fs=fstype, backing_source=src,
                         cache="cold")

    def _check_space(self):
        st = os.statvfs(self.workdir)
        free = st.f_bavail * st.f_frsize
        need = self.need_bytes
        if need and free < need * 1.1:
            raise RuntimeError(f"not enough space in {self.workdir}: {util.human_bytes(free)} free, "
                               f"about {util.human_bytes(need)} needed")

    def close(self, delete=None):
        delete = (not self.keep) if delete is None else delete
        if self.mounted:
            os.sync()
            _umount(self.mnt)
            self.mounted = False
        if self.device:
            r = util.run(["losetup", "-d", self.device])
            if not r.ok:
                util.warn(f"losetup -d {self.device}: {(r.stderr or '').strip()}")
            self.device = None
        try:
            self.mnt.rmdir()
        except OSError:
            pass
        if delete:
            try:
                self.image.unlink()
            except FileNotFoundError:
                pass
        elif self.image.exists():
            util.log(f"kept image {self.image}")
        self.root = None


class FreshFs:
    """A destination for the write and copy scenarios: a brand-new, empty file
    system for every run. new() unmounts, detaches and deletes the previous
    one, then makes a fresh sparse image, mkfs, losetup --direct-io=on, mount
    (root); not root, a fresh empty directory under the work dir instead.
    remount() (untimed, before a verification) unmounts and mounts it again so
    what is checked is what reached the device, not the page cache. Use it as
    a context manager: whatever happens, nothing stays mounted or attached."""

    def __init__(self, workdir, name, fs, size_bytes, inodes, root, need_bytes=0):
        self.workdir = Path(workdir).resolve()
        self.name = name
        self.fs = fs
        self.size_bytes = size_bytes
        self.inodes = inodes
        self.need_bytes = need_bytes
        self.is_root = root
        self.ws = None
        self.count = 0          # file systems made so far
        self.info = {}

    @property
    def root(self):
        return self.ws.root if self.ws else None

    @property
    def device(self):
        return self.ws.device if self.ws else None

    def new(self):
        self.close()
        if self.is_root:
            ws = ImageWorkspace(self.workdir, self.name, {"fs": self.fs}, False, fs=self.fs,
                                size_bytes=self.size_bytes, inodes=self.inodes, need_bytes=self.need_bytes,
                                probe=False)
        else:
            ws = DirWorkspace(self.workdir, self.name, {}, False, probe=False)
        self.ws = ws.__enter__()      # closes what it made when opening fails
        self.count += 1
        self.info = dict(ws.info, fresh="new file system per run (mkfs)" if self.is_root
                         else "new empty directory per run (not root)")
        return self.ws.root

    def remount(self):
        ws = self.ws
        if isinstance(ws, ImageWorkspace) and ws.mounted:
            os.sync()
            _umount(ws.mnt)
            ws.mounted = False
            ws._mount()

    def close(self):
        if self.ws is not None:
            ws, self.ws = self.ws, None
            ws.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with util.cleaning():
            self.close()
        return False
