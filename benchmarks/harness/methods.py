"""The registry of methods. A method = a name, a scenario ("read", "w1":
write many small files durably, "m1": copy a tree, "m2": copy a tree to
another machine over ssh),
a function returning the timed command (argv list, run as one process and
timed wall-clock by the harness), how to tell whether it can run, how to pull
its statistics out of the run's output, and how to verify (untimed) that it
read the same bytes as everyone else.

To add a method: register(Method(name=..., command=lambda ctx: [...], ...)).
The write and copy scenarios use `prepare` (untimed, before every timed run:
a fresh destination file system), `stdin`/`warm` (the input stream, read
into the page cache after the cache drop so input reading is on nobody's
clock) and `after` (untimed, after every timed run: a quick check of what was
written, then the destination is released).
"""

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from . import native, util, verify, writecopy
from .workspace import PROBE_FILES


@dataclass
class Ctx:
    """Everything a method needs about the set being measured."""
    set_name: str
    ws: object                  # workspace.ImageWorkspace / DirWorkspace
    files: int
    bytes: int
    helpers: object             # native.Helpers
    bfo: object                 # native.Bfo
    refs: object                # verify.References
    root: bool
    scratch: Path               # a private directory in the work dir
    extra: dict = field(default_factory=dict)
    dest: object = None         # workspace.FreshFs: the write/copy destination (w1, m1)
    fs: Optional[str] = None    # the destination's file system (w1, m1)

    @property
    def set_dir(self):
        return self.ws.set_dir

    @property
    def device(self):
        return self.ws.device


@dataclass
class Method:
    name: str
    description: str
    group: str                                  # baseline | bfo | limit
    command: Callable[[Ctx], list]
    available: Callable[[Ctx], Optional[str]] = lambda ctx: None     # -> reason it cannot run, or None
    verify: Optional[Callable[[Ctx], tuple]] = None                   # -> (ok, detail)
    stats: Optional[Callable[[util.Result], dict]] = None             # -> dict recorded per run
    capture_stdout: bool = False                # False: stdout goes to /dev/null during timed runs
    prepare: Optional[Callable[[Ctx], None]] = None
    after: Optional[Callable[[Ctx, util.Result], Optional[str]]] = None   # -> error of a check, or None
    extra: Optional[Callable[[Ctx], dict]] = None     # untimed figures measured after a run, added to its stats
    scenario: str = "read"                      # read | w1 | m1 | m2
    stdin: Optional[Callable[[Ctx], Path]] = None     # file the timed command reads on stdin
    warm: Optional[Callable[[Ctx], list]] = None      # files read into the page cache after the cache drop
    files: Optional[Callable[[Ctx], int]] = None      # files one timed run handles (default: the set's)
    bytes: Optional[Callable[[Ctx], int]] = None      # bytes one timed run handles (default: the set's)
    fs: tuple = ()                              # file systems the method applies to (empty: all)
    reference: Optional[str] = None             # "xxh128" / "sha256": reference its verify compares with
    quick: bool = False                         # part of --quick
    note: Optional[Callable[[list], str]] = None  # runs' stats -> short note for the table


REGISTRY = {}


def register(m):
    REGISTRY[m.name] = m
    return m


def _stderr_json(res):
    for line in reversed((res.stderr or "").strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


# --------------------------------------------------------------------------
# plain open/read/close
# --------------------------------------------------------------------------
def _plain(threads, quick):
    def avail(ctx):
        return None if ctx.helpers.plainread else "plainread not built"

    def verify_(ctx, wrap=lambda c: c):
        if not ctx.helpers.plainread_checksum:
            return None, "not verified: plainread built without libxxhash"
        return verify.verify_checksum_cmd(wrap([ctx.helpers.plainread, "-t", str(threads), "--checksum",
                                                ctx.set_dir]), ctx.refs)

    return Method(
        name=f"plain-{threads}t",
        description=f"open/read/close every file, readdir order (recursive walk), {threads} thread"
                    + ("s sharing one work index" if threads > 1 else ""),
        group="baseline",
        command=lambda ctx: [ctx.helpers.plainread, "-t", str(threads), ctx.set_dir],
        available=avail, verify=verify_, stats=_stderr_json, quick=quick, reference="xxh128")


register(_plain(1, True))
register(_plain(4, True))


# --------------------------------------------------------------------------
# GNU tar
# --------------------------------------------------------------------------
def _tar_args(ctx):
    return ["tar", "-C", str(ctx.ws.root), "-cf", "-", ctx.set_name]


register(Method(
    name="tar",
    description="GNU tar -cf - DIR | cat >/dev/null (piped: tar skips reading when the archive is /dev/null)",
    group="baseline",
    # "$@" keeps the path quoting exact; pipefail reports tar's failure
    command=lambda ctx: ["bash", "-c", 'set -o pipefail; "$@" | cat >/dev/null', "bash", *_tar_args(ctx)],
    available=lambda ctx: None if util.which("tar") else "tar not installed",
    verify=lambda ctx: verify.verify_tar(_tar_args(ctx), ctx.set_name, ctx.refs), reference="sha256"))


# --------------------------------------------------------------------------
# bfo read, one method per engine
# --------------------------------------------------------------------------
def _bfo_note(runs):
    js = [r.get("stats") for r in runs if r.get("stats")]
    if not js:
        return ""
    j = js[-1]
    parts = []
    eng = j.get("engine")
    if eng:
        parts.append(f"engine={eng}")
    for k in ("ios", "regions", "fallback_files", "files_failed"):
        if j.get(k):
            parts.append(f"{k}={j[k]}")
    sec = j.get("seconds") or {}
    if isinstance(sec, dict) and sec.get("meta") is not None:
        parts.append(f"meta={sec['meta']:.2f}s")
    return " ".join(parts)


def _bfo(engine, quick):
    def avail(ctx):
        if not ctx.bfo.available:
            return f"bfo not available: {ctx.bfo.reason}"
        if engine == "raw":
            if not ctx.root:
                return "raw engine needs root (read access to the block device)"
            if ctx.device is None:
                return "raw engine needs a block device (image workspace)"
        ok, reason, js = ctx.bfo.probe(engine, ctx.ws.probe_dir, PROBE_FILES)
        if not ok:
            return reason
        return None

    def verify_(ctx, wrap=lambda c: c):
        return verify.verify_checksum_cmd(wrap(ctx.bfo.read_cmd(engine, [ctx.set_dir], json_out=False,
                                                                checksum=True)), ctx.refs)

    def stats(res):
        js = native.parse_json_tail(res.stdout)
        if js is not None and engine != "auto" and js.get("engine") not in (None, engine):
            js["_engine_mismatch"] = f"asked {engine}, ran {js.get('engine')}"
        return js

    return Method(
        name=f"bfo-{engine}",
        description=f"bfo read --engine {engine} --json DIR",
        group="bfo",
        command=lambda ctx: ctx.bfo.read_cmd(engine, [ctx.set_dir]),
        available=avail, verify=verify_, stats=stats, capture_stdout=True, quick=quick, note=_bfo_note,
        reference="xxh128")


for _e, _q in (("auto", True), ("raw", False), ("uring", False), ("portable", False)):
    register(_bfo(_e, _q))


def _nobody(m, quick=None):
    """The method m again as an ordinary user would run it: its command as uid 65534 with the soft
    RLIMIT_NOFILE 1024 (util.as_nobody), verified the same way (also as that user)."""
    def avail(ctx):
        why = m.available(ctx)
        if why:
            return why
        return util.nobody_cannot([ctx.set_dir], readable=[ctx.set_dir])

    def verify_(ctx):
        return m.verify(ctx, wrap=util.as_nobody)

    return Method(name=m.name + util.NOBODY_SUFFIX, description=f"{m.description}, {util.NOBODY_LABEL}",
                  group=m.group, command=lambda ctx: util.as_nobody(m.command(ctx)), available=avail,
                  verify=verify_ if m.verify else None, stats=m.stats, capture_stdout=m.capture_stdout,
                  quick=m.quick if quick is None else quick, note=m.note, reference=m.reference)


# An ordinary user's read: auto (no device access: the io_uring engine) and uring by name, and plain
# reading by 4 threads beside them, all at a login's descriptor limit.
register(_nobody(REGISTRY["bfo-auto"]))
register(_nobody(REGISTRY["bfo-uring"]))
register(_nobody(REGISTRY["plain-4t"], quick=False))


# --------------------------------------------------------------------------
# the device's sequential limit
# --------------------------------------------------------------------------
# Large requests, many in flight: on this virtio disk 8 MiB x 16 reaches
# ~1.3-1.5 GB/s where 4 MiB x 4 gives ~0.9-1.1 GB/s (the limit must be the best
# the device does). bench --devseq-request/--devseq-depth change them.
DEVSEQ = {"request": 8 << 20, "in_flight": 16}


def _data_ranges(image):
    """Allocated ranges of the (sparse) image file: [(offset, length)]."""
    out = []
    fd = os.open(image, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        off = 0
        while off < size:
            try:
                start = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, end - start))
            off = end
    finally:
        os.close(fd)
    return out


def _devseq_prepare(ctx):
    if "ranges_file" in ctx.extra:
        return
    ranges = _data_ranges(ctx.ws.image)
    f = ctx.scratch / f"ranges-{ctx.ws.key}.txt"
    f.write_text("".join(f"{o} {n}\n" for o, n in ranges))
    ctx.extra["ranges_file"] = f
    ctx.extra["allocated_bytes"] = sum(n for _, n in ranges)


def _devseq_avail(ctx):
    if not ctx.root or ctx.device is None:
        return "needs root and a block device (image workspace)"
    if not ctx.helpers.devread:
        return "devread not built"
    return None


def _devseq_cmd(ctx):
    _devseq_prepare(ctx)
    return [ctx.helpers.devread, ctx.device, str(ctx.bytes), str(DEVSEQ["request"]), str(DEVSEQ["in_flight"]),
            ctx.extra["ranges_file"]]


def _devseq_note(runs):
    js = [r.get("stats") for r in runs if r.get("stats")]
    if not js:
        return ""
    j = js[-1]
    return f"{j.get('ios')} x {util.fmt_size(j.get('request', 0))} O_DIRECT, {j.get('in_flight')} in flight"


register(Method(
    name="device-seq",
    description="O_DIRECT sequential read of the loop device, same byte count as the set's data, large requests "
                "(8 MiB), many in flight (16), ascending, allocated ranges of the image only (holes of a sparse "
                "image cost no I/O)",
    group="limit",
    command=_devseq_cmd, available=_devseq_avail, verify=None, stats=_stderr_json, quick=True,
    prepare=_devseq_prepare, note=_devseq_note))


# ==========================================================================
# W1: write many small files durably (scenario "w1")
# ==========================================================================
# Every method writes the same files (names and bytes) from the same input: a
# stream file in bfo write's simple format, read into the page cache after
# the cache drop and before the clock starts. Each run writes into DEST/w1 on
# a brand-new file system (ctx.dest.new(): mkfs before every run).
W1_TARGET = "w1"
# The --stats line of bfo write / bfo cp, e.g.
#   bfo write: 100000 entries, 409.6 MB, 0 errors; engine stem, 7 batches, 7 syncs, 100000 clones; seconds: ...
#   bfo cp: 100000 files, 101 other entries, 409.6 MB, 0 errors in 2.1 s; read engine uring, write engine ...
# parsed field by field, so a field added or dropped by a newer bfo does not lose the others.
_STATS_FIELDS = {
    "files": r"(\d+) (?:files|entries)\b", "others": r"(\d+) other entries", "mb": r"([\d.]+) MB",
    "errors": r"(\d+) errors", "seconds": r"\bin ([\d.]+) s\b", "read_engine": r"read engine (\w+)",
    "engine": r"(?<!read )engine (\w+)", "batches": r"(\d+) batches", "syncs": r"(\d+) syncs",
    "clones": r"(\d+) clones", "manifest": r"manifest ([\d.]+)", "data": r"data ([\d.]+)",
    "sync": r"\bsync ([\d.]+)", "close": r"\bclose ([\d.]+)"}


def _bfo_stats(prefix):
    def stats(res):
        for line in reversed((res.stderr or "").splitlines()):
            if not line.startswith(prefix):
                continue
            d = {"line": line.strip()}
            for k, rx in _STATS_FIELDS.items():
                m = re.search(rx, line)
                if m:
                    v = m.group(1)
                    d[k] = float(v) if "." in v else (int(v) if v.isdigit() else v)
            return d
        return None
    return stats


def _bfo_w_note(runs):
    js = [r.get("stats") for r in runs if r.get("stats")]
    if not js:
        return ""
    j = js[-1]
    out = []
    if j.get("read_engine"):
        out.append(f"read={j['read_engine']}")
    for k in ("engine", "batches", "syncs", "clones"):
        if j.get(k) is not None and (k != "clones" or j[k]):
            out.append(f"{k}={j[k]}")
    for k in ("data", "sync", "close"):   # close: the shared syncfs of deferred batches
        if isinstance(j.get(k), float):
            out.append(f"{k}={j[k]:.2f}s")
    if j.get("errors"):
        out.append(f"errors={j['errors']}")
    return " ".join(out)


def _plainwrite_note(runs):
    js = [r.get("stats") for r in runs if r.get("stats")]
    if not js:
        return ""
    sec = js[-1].get("seconds") or {}
    return f"write={sec.get('write', 0):.2f}s sync={sec.get('sync', 0):.2f}s (last run)"


def _w1_ref(ctx, subset):
    return ctx.extra["subset_ref" if subset else "stream_ref"]


def _w1_run_checked(ctx, cmd, stdin, expected):
    """Untimed verification run: fresh fs, cold cache, warm input, run, remount, check."""
    from . import runner
    ctx.dest.new()
    try:
        res = runner.timed_run(cmd(ctx), root=ctx.root, capture_stdout=True, stdin=stdin, warm_paths=[stdin])
        if res.returncode != 0:
            return False, f"exit {res.returncode}: {runner._first(res.stderr)}"
        ctx.dest.remount()
        return writecopy.check_written(ctx.dest.root, W1_TARGET, expected)
    finally:
        ctx.dest.close()


def _w1(name, description, group, cmd, *, subset=False, stats=None, note=None, fs=(), avail=None, quick=True):
    def stdin(ctx):
        return ctx.extra["subset" if subset else "stream"]

    def prepare(ctx):
        ctx.dest.new()

    def after(ctx, res):
        try:
            if res.returncode != 0:
                return None          # the failure is already recorded
            ref = _w1_ref(ctx, subset)
            return writecopy.quick_count(ctx.dest.root / W1_TARGET, len(ref), sum(v[0] for v in ref.values()),
                                         ctx.dest.root, W1_TARGET)
        finally:
            ctx.dest.close()

    def available(ctx):
        if fs and ctx.fs not in fs:
            return f"only on {'/'.join(fs)}"
        return avail(ctx) if avail else None

    return Method(
        name=name, description=description, group=group, command=cmd, scenario="w1",
        available=available, stats=stats, note=note, prepare=prepare, after=after,
        stdin=stdin, warm=lambda ctx: [stdin(ctx)],
        verify=lambda ctx: _w1_run_checked(ctx, cmd, stdin(ctx), _w1_ref(ctx, subset)),
        files=lambda ctx: len(_w1_ref(ctx, subset)),
        bytes=lambda ctx: sum(v[0] for v in _w1_ref(ctx, subset).values()),
        fs=tuple(fs), quick=quick)


def _bfo_avail(ctx):
    return None if ctx.bfo.available else f"bfo not available: {ctx.bfo.reason}"


def _bfo_write(name, label, opts, fs=()):
    return _w1(
        name, f"bfo write --stats {' '.join(opts) + ' ' if opts else ''}DIR < STREAM ({label}); durability batch "
              "(the default): every file durable when it returns",
        "bfo", lambda ctx: [ctx.bfo.path, "write", "--stats", *opts, ctx.dest.root / W1_TARGET],
        stats=_bfo_stats("bfo write:"), note=_bfo_w_note, fs=fs, avail=_bfo_avail)


register(_bfo_write("bfo-write", "default batches: 64 MiB or 16,384 files", []))
register(_bfo_write("bfo-write-1batch", "one batch, one durability point",
                    ["--batch-bytes", "1G", "--batch-files", "1000000"]))
register(_bfo_write("bfo-write-batched", "engine batched forced, default batches",
                    ["--write-engine", "batched"], fs=("xfs",)))
register(_bfo_write("bfo-write-stem", "engine stem forced, default batches", ["--write-engine", "stem"],
                    fs=("xfs",)))


def _plainwrite_avail(ctx):
    return None if ctx.helpers.plainwrite else "plainwrite not built"


register(_w1(
    "plain-write-sync",
    "plainwrite DIR < STREAM: create+write+close per file, 1 thread, then one syncfs of the file system "
    "(durable only at the end)",
    "baseline", lambda ctx: [ctx.helpers.plainwrite, ctx.dest.root / W1_TARGET],
    stats=_stderr_json, note=_plainwrite_note, avail=_plainwrite_avail))
register(_w1(
    "plain-write-fsync",
    "plainwrite --fsync DIR < STREAM: create+write+fsync+close per file (each file durable when closed), "
    "1 thread, then one syncfs; on a subset of the files (--fsync-files), extrapolated",
    "baseline", lambda ctx: [ctx.helpers.plainwrite, "--fsync", ctx.dest.root / W1_TARGET],
    subset=True, stats=_stderr_json, note=_plainwrite_note, avail=_plainwrite_avail))


# ==========================================================================
# M1: copy a tree to another file system (scenario "m1")
# ==========================================================================
# SRC is the set's directory on its image; DST is DEST/copy on a brand-new
# file system (mkfs before every run), not existing before the run (cp's
# rule: DST becomes the copy; bfo cp, with rsync's rule, is given SRC/). Every method is durable when it returns:
# bfo cp by itself (durability batch), the others through `sync -f DST`
# (syncfs of the destination file system: the same durability as `sync`
# for the copy, without waiting for other tenants' dirty data).
M1_TARGET = "copy"


def _m1_dst(ctx):
    return ctx.dest.root / M1_TARGET


def _m1(name, description, group, cmd, *, stats=None, note=None, avail=None):
    def prepare(ctx):
        ctx.dest.new()

    def after(ctx, res):
        try:
            if res.returncode != 0:
                return None
            return writecopy.quick_count(_m1_dst(ctx), ctx.files, ctx.bytes, ctx.dest.root, M1_TARGET)
        finally:
            ctx.dest.close()

    def verify_(ctx):
        from . import runner
        ctx.dest.new()
        try:
            res = runner.timed_run(cmd(ctx), root=ctx.root, capture_stdout=True)
            if res.returncode != 0:
                return False, f"exit {res.returncode}: {runner._first(res.stderr)}"
            ctx.dest.remount()
            return writecopy.compare_trees(ctx.extra["src_list"], _m1_dst(ctx), ctx.dest.root, M1_TARGET)
        finally:
            ctx.dest.close()

    return Method(name=name, description=description, group=group, command=cmd, scenario="m1",
                  available=avail or (lambda ctx: None), stats=stats, note=note, prepare=prepare, after=after,
                  verify=verify_, quick=True)


def _sh(script):
    """A bash script with SRC and DST as $1 and $2 (exact quoting), pipefail on."""
    return lambda ctx: ["bash", "-c", "set -o pipefail; " + script, "bash", ctx.set_dir, _m1_dst(ctx)]


register(_m1("bfo-cp", "bfo cp -a --stats SRC/ DST (durability batch: durable when it returns; SRC/: the contents, "
             "rsync's rule, so DST is the copy)", "bfo",
             lambda ctx: [ctx.bfo.path, "cp", "-a", "--stats", f"{ctx.set_dir}/", _m1_dst(ctx)],
             stats=_bfo_stats("bfo cp:"), note=_bfo_w_note, avail=_bfo_avail))
register(_m1("cp-a-sync", "cp -a SRC DST && sync -f DST", "baseline",
             _sh('cp -a "$1" "$2" && sync -f "$2"'),
             avail=lambda ctx: None if util.which("cp") else "cp not installed"))
register(_m1("rsync-sync", "rsync -a SRC/ DST/ && sync -f DST", "baseline",
             _sh('rsync -a "$1/" "$2/" && sync -f "$2"'),
             avail=lambda ctx: None if util.which("rsync") else "rsync not installed (apt-get install rsync)"))
register(_m1("tar-sync",
             "mkdir DST && tar --format=posix -C SRC -cf - . | tar -C DST -xf - && sync -f DST (posix format: "
             "GNU tar's default format keeps whole seconds only)", "baseline",
             _sh('mkdir "$2" && tar --format=posix -C "$1" -cf - . | tar -C "$2" -xf - && sync -f "$2"'),
             avail=lambda ctx: None if util.which("tar") else "tar not installed"))



# As an ordinary user (util.as_nobody): the set's top-level directories (not
# the metadata extras, whose root-owned private files no ordinary user can
# read) copied into DST, made beforehand and owned by that user; the copy
# keeps what such a user's copy keeps (modes, times, bytes; the owner is the
# user).
def _m1_nobody_sources(ctx):
    return sorted(str(p) for p in Path(ctx.set_dir).iterdir() if p.name != writecopy.EXTRAS_DIR)


def _m1_nobody_expected(ctx):
    src = {k: dict(v, uid=util.NOBODY_UID, gid=util.NOBODY_GID) for k, v in ctx.extra["src_list"].items()
           if k.split("/")[0] != writecopy.EXTRAS_DIR}
    files = [v for v in src.values() if v["type"] == "f"]
    return src, len(files), sum(v["size"] for v in files)


def _m1_nobody(name, description, group, script, *, stats=None, note=None, avail=None):
    """script: bash, bfo as $1, DST as $2 and the sources as the rest, run as the user."""
    def cmd(ctx):
        return util.as_nobody(["bash", "-c", "set -o pipefail; " + script, "bash", str(ctx.bfo.path or "bfo"),
                               _m1_dst(ctx), *_m1_nobody_sources(ctx)])

    def make_dst(ctx):
        ctx.dest.new()
        d = _m1_dst(ctx)
        d.mkdir()
        os.chown(d, util.NOBODY_UID, util.NOBODY_GID)

    def available(ctx):
        return (avail(ctx) if avail else None) or util.nobody_cannot([ctx.set_dir], readable=[ctx.set_dir])

    def after(ctx, res):
        try:
            if res.returncode != 0:
                return None
            _, nf, nb = _m1_nobody_expected(ctx)
            return writecopy.quick_count(_m1_dst(ctx), nf, nb, ctx.dest.root, M1_TARGET)
        finally:
            ctx.dest.close()

    def verify_(ctx):
        from . import runner
        make_dst(ctx)
        try:
            res = runner.timed_run(cmd(ctx), root=ctx.root, capture_stdout=True)
            if res.returncode != 0:
                return False, f"exit {res.returncode}: {runner._first(res.stderr)}"
            ctx.dest.remount()
            src, _, _ = _m1_nobody_expected(ctx)
            return writecopy.compare_trees(src, _m1_dst(ctx), ctx.dest.root, M1_TARGET, ignore_root=True)
        finally:
            ctx.dest.close()

    def files(ctx):
        return _m1_nobody_expected(ctx)[1]

    def nbytes(ctx):
        return _m1_nobody_expected(ctx)[2]

    return Method(name=name + util.NOBODY_SUFFIX, description=f"{description}, {util.NOBODY_LABEL}",
                  group=group, command=cmd, scenario="m1", available=available, stats=stats, note=note,
                  prepare=make_dst, after=after, verify=verify_, quick=True, files=files, bytes=nbytes)


register(_m1_nobody("bfo-cp", "bfo cp -a --stats SRC/* DST (the set's directories into DST, made beforehand)",
                    "bfo", 'b=$1 d=$2; shift 2; exec "$b" cp -a --stats "$@" "$d"', stats=_bfo_stats("bfo cp:"),
                    note=_bfo_w_note, avail=_bfo_avail))
register(_m1_nobody("cp-a-sync", "cp -a SRC/* DST && sync -f DST", "baseline",
                    'd=$2; shift 2; cp -a "$@" "$d" && sync -f "$d"',
                    avail=lambda ctx: None if util.which("cp") else "cp not installed"))


# ==========================================================================
# M2: copy a tree to another machine over ssh (scenario "m2")
# ==========================================================================
# The other machine is harness/remote.py's network namespace (veth pair,
# 1 Gbit/s tbf each way, its own sshd), ctx.extra["machine"]. SRC is the
# set's directory on its image; DST is DEST/m2, an empty directory made on a
# brand-new file system before every run (the receiver's); every method
# copies SRC into DST, so the copy is DST/<set name>. Every timed command
# ends with `sync -f DST` (syncfs of the receiver's file system; bfo recv is
# durable by itself, the sync is there for all alike). Same ssh options for
# every method (remote.RemoteMachine.ssh_opts): no cipher or compression
# choice, the user's defaults.
M2_DST = "m2"


def _m2_dst(ctx):
    return ctx.dest.root / M2_DST


def _m2_copy(ctx):
    return _m2_dst(ctx) / ctx.set_name


def _m2_machine(ctx):
    return ctx.extra["machine"]


def _m2_far(ctx):
    """[USER@]HOST:DST of the copy methods (the path as the far side's shell sees it)."""
    m = _m2_machine(ctx)
    return f"{m.login}:{_m2_dst(ctx)}"


def _m2_sync(argv):
    """argv, then (when it succeeded) sync -f DST; pipefail on. DST is $1, argv follows."""
    return lambda ctx: ["bash", "-c", 'set -o pipefail; d="$1"; shift; "$@" && sync -f "$d"', "bash",
                        _m2_dst(ctx), *argv(ctx)]


def _m2_only_copy(ctx):
    """DST holds the copy and nothing else. -> None or what is wrong."""
    there = sorted(os.listdir(_m2_dst(ctx)))
    return None if there == [ctx.set_name] else f"{_m2_dst(ctx)} holds {there[:5]}, expected [{ctx.set_name!r}]"


def _m2_new_dest(ctx):
    ctx.dest.new()
    os.mkdir(_m2_dst(ctx), 0o755)


def _m2(name, description, group, cmd, *, stats=None, note=None, avail=None, mtime_res_ns=1):
    def prepare(ctx):
        _m2_new_dest(ctx)

    def after(ctx, res):
        try:
            if res.returncode != 0:
                return None
            return (writecopy.quick_count(_m2_copy(ctx), ctx.files, ctx.bytes, ctx.dest.root, M2_DST)
                    or _m2_only_copy(ctx))
        finally:
            ctx.dest.close()

    def verify_(ctx):
        from . import runner
        _m2_new_dest(ctx)
        try:
            res = runner.timed_run(cmd(ctx), root=ctx.root, capture_stdout=True)
            if res.returncode != 0:
                return False, f"exit {res.returncode}: {runner._first(res.stderr)}"
            ctx.dest.remount()
            bad = _m2_only_copy(ctx)
            if bad:
                return False, bad
            return writecopy.compare_trees(ctx.extra["src_list"], _m2_copy(ctx), ctx.dest.root, M2_DST,
                                           mtime_res_ns=mtime_res_ns)
        finally:
            ctx.dest.close()

    def available(ctx):
        if "machine" not in ctx.extra:
            return "no receiver machine"
        return avail(ctx) if avail else None

    return Method(name=name, description=description, group=group, command=cmd, scenario="m2",
                  available=available, stats=stats, note=note, prepare=prepare, after=after,
                  verify=verify_, quick=True)


def _which(cmd, pkg):
    return lambda ctx: None if util.which(cmd) else f"{cmd} not installed (apt-get install {pkg})"


def _m2_tar_cmd(fmt):
    def cmd(ctx):
        m = _m2_machine(ctx)
        create = ["tar"] + ([f"--format={fmt}"] if fmt else []) + ["-C", str(ctx.set_dir.parent), "-cf", "-",
                                                                   ctx.set_name]
        remote = f"tar -C {shlex.quote(str(_m2_dst(ctx)))} -xf -"
        # "$@" = the tar command, then the ssh command: exact quoting, pipefail reports either side's failure
        n = len(create)
        return ["bash", "-c", f'set -o pipefail; "${{@:1:{n}}}" | "${{@:{n + 1}}}"', "bash", *create,
                *m.ssh_argv(), m.login, remote]
    return cmd


register(_m2(
    "bfo-cp-ssh",
    "bfo cp -a --stats --rsh SSH --remote-bfo BFO SRC root@HOST:DST, then sync -f DST (bfo recv on the far side, "
    "durability batch: durable when it returns; the sync is for all methods alike)", "bfo",
    _m2_sync(lambda ctx: [ctx.bfo.path, "cp", "-a", "--stats", "--rsh", _m2_machine(ctx).rsh(),
                          "--remote-bfo", ctx.bfo.path, ctx.set_dir, _m2_far(ctx)]),
    stats=_bfo_stats("bfo cp:"), note=_bfo_w_note, avail=_bfo_avail))
register(_m2(
    "rsync-ssh", "rsync -a -e SSH SRC root@HOST:DST, then sync -f DST", "baseline",
    _m2_sync(lambda ctx: ["rsync", "-a", "-e", _m2_machine(ctx).rsh(), ctx.set_dir, _m2_far(ctx)]),
    avail=_which("rsync", "rsync")))
register(_m2(
    "scp-ssh",
    "scp -r -p SSH-OPTIONS SRC root@HOST:DST (SFTP, scp's default), then sync -f DST; -p: without it scp sets no "
    "times; SFTP carries whole seconds, so mtimes are checked to the second", "baseline",
    _m2_sync(lambda ctx: ["scp", "-r", "-p", *_m2_machine(ctx).ssh_opts(), ctx.set_dir, _m2_far(ctx)]),
    avail=_which("scp", "openssh-client"), mtime_res_ns=10**9,
    note=lambda runs: "mtimes to the second (SFTP)"))
register(_m2(
    "tar-ssh",
    "tar --format=posix -C PARENT -cf - NAME | ssh ... 'tar -C DST -xf -', then sync -f DST (posix format: GNU "
    "tar's default keeps whole seconds only)", "baseline",
    _m2_sync(_m2_tar_cmd("posix")), avail=_which("tar", "tar")))
register(_m2(
    "tar-ssh-gnu",
    "tar -C PARENT -cf - NAME | ssh ... 'tar -C DST -xf -', then sync -f DST: GNU tar's default format (no "
    "extended header per file, mtimes in whole seconds, checked to the second)", "baseline",
    _m2_sync(_m2_tar_cmd(None)), avail=_which("tar", "tar"), mtime_res_ns=10**9,
    note=lambda runs: "mtimes to the second (GNU format)"))


def _m2_raw_cmd(ctx, remote="cat > /dev/null"):
    m = _m2_machine(ctx)
    return ["bash", "-c", 'set -o pipefail; n="$1"; shift; head -c "$n" /dev/zero | "$@"', "bash", str(ctx.bytes),
            *m.ssh_argv(), m.login, remote]


def _m2_raw_verify(ctx):
    r = util.run(_m2_raw_cmd(ctx, "wc -c"))
    if not r.ok:
        return False, f"exit {r.returncode}: {(r.stderr or '').strip()[:200]}"
    got = (r.stdout or "").strip()
    return (got == str(ctx.bytes)), f"the far side counted {got} bytes of {ctx.bytes}"


register(Method(
    name="ssh-raw",
    description="head -c BYTES /dev/zero | ssh ... 'cat > /dev/null': the set's byte count in one stream over the "
                "same ssh (the practical limit of the link through ssh; no files, nothing written)",
    group="limit", command=_m2_raw_cmd, scenario="m2",
    available=lambda ctx: None if "machine" in ctx.extra else "no receiver machine",
    verify=_m2_raw_verify, quick=True))


def select(names=None, quick=False, scenario="read"):
    ms = [m for m in REGISTRY.values() if m.scenario == scenario]
    if names:
        unknown = [n for n in names if n not in REGISTRY or REGISTRY[n].scenario != scenario]
        if unknown:
            raise SystemExit(f"unknown method(s) for scenario {scenario}: {', '.join(unknown)}; known: "
                             f"{', '.join(m.name for m in ms)}")
        return [REGISTRY[n] for n in names]
    if quick:
        return [m for m in ms if m.quick]
    return ms


# The Java read methods (bfo-java, readallbytes-loop, ...) live in javaread.py.
from . import javaread  # noqa: E402,F401
