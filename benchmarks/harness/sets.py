"""The registry of data sets. A set = a name, default parameters, a planner
(deterministic: sizes and operations from a seeded RNG, so its byte count and
file count are known before anything is written) and a generator that carries
out the plan in a directory.

To add a set: write plan_X(params) -> Plan and register(SetSpec(...)).
"""

import functools
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

from . import util

POOL_BYTES = 64 << 20     # random pool that file contents are cut from
BLOCK = 4096


@dataclass
class Plan:
    """What a generator will do. ops: ("write", relpath, size) / ("delete", relpath) / ("sync",) /
    ("mkdir", relpath). dirs: every directory, parents first; made before the first op unless
    dirs_in_ops (then each by its "mkdir" op, where the plan puts it)."""
    dirs: list
    ops: list
    files: int = 0          # files present at the end
    bytes: int = 0          # their total size
    alloc_bytes: int = 0    # their total size rounded up to 4 KiB blocks
    peak_alloc_bytes: int = 0
    written_bytes: int = 0  # everything written, including what was deleted later
    dirs_in_ops: bool = False

    def finish(self):
        live = {}
        alloc = peak = written = 0
        for op in self.ops:
            if op[0] == "write":
                if op[1] in live:
                    alloc -= _alloc(live[op[1]])
                live[op[1]] = op[2]
                alloc += _alloc(op[2])
                written += op[2]
                peak = max(peak, alloc)
            elif op[0] == "delete":
                alloc -= _alloc(live.pop(op[1]))
        self.files = len(live)
        self.bytes = sum(live.values())
        self.alloc_bytes = alloc
        self.peak_alloc_bytes = peak
        self.written_bytes = written
        return self


def _alloc(n):
    return (n + BLOCK - 1) // BLOCK * BLOCK


def _loguniform(rng, lo, hi):
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


@dataclass
class SetSpec:
    """scale (class attribute): a set of millions of files, left out of the default list unless --scale."""
    scale = False
    name: str
    description: str
    defaults: dict
    planner: object
    image_slack: float = 1.5      # image size ~ peak allocation x slack + metadata

    def params(self, overrides=None):
        p = dict(self.defaults)
        for k, v in (overrides or {}).items():
            if k in p and v is not None:
                p[k] = type(p[k])(v)
        return p

    def plan(self, params):
        return self.planner(params).finish()

    def image_geometry(self, plan):
        """(image size, inode count, bytes it will really occupy on the backing fs)."""
        inodes = int(plan.files * 1.2 + len(plan.dirs) + 10000)
        meta = inodes * 256 + len(plan.dirs) * 64 * 1024 + (192 << 20)   # inode tables, dirs, journal, slack
        size = int(plan.peak_alloc_bytes * self.image_slack) + meta
        size = max(size, 512 << 20)
        size = (size + (64 << 20) - 1) // (64 << 20) * (64 << 20)
        return size, inodes, plan.peak_alloc_bytes + inodes * 256 + (128 << 20)


REGISTRY = {}


def register(spec):
    REGISTRY[spec.name] = spec
    return spec


# --------------------------------------------------------------------------
# Planners
# --------------------------------------------------------------------------
def _dirs(n):
    return [f"d{i:03d}" for i in range(n)]


def plan_small(p):
    """N files of one size in D directories, created in shuffled order."""
    rng = random.Random(p["seed"])
    dirs = _dirs(p["dirs"])
    order = list(range(p["files"]))
    rng.shuffle(order)
    ops = [("write", f"{dirs[i % len(dirs)]}/f{i:06d}", p["size"]) for i in order]
    return Plan(dirs=dirs, ops=ops + [("sync",)])


def plan_mixed(p):
    """Log-uniform sizes until the total reaches target_bytes, shuffled creation."""
    rng = random.Random(p["seed"])
    dirs = _dirs(p["dirs"])
    sizes, total = [], 0
    while total < p["target_bytes"]:
        s = _loguniform(rng, p["min_size"], p["max_size"])
        sizes.append(s)
        total += s
    order = list(range(len(sizes)))
    rng.shuffle(order)
    ops = [("write", f"{dirs[i % len(dirs)]}/f{i:06d}", sizes[i]) for i in order]
    return Plan(dirs=dirs, ops=ops + [("sync",)])


def plan_aged(p):
    """Round-robin creation across directories (their files interleave on
    disk), then `rounds` times: delete a random `churn` fraction, sync, write
    new files of other sizes round-robin until the total is back at
    target_bytes, sync. Freed space is reused, so each directory's files end
    up scattered between other directories' files."""
    rng = random.Random(p["seed"])
    dirs = _dirs(p["dirs"])
    ops, live, total, serial = [], [], 0, 0

    def fill(tag):
        nonlocal total, serial
        while total < p["target_bytes"]:
            s = _loguniform(rng, p["min_size"], p["max_size"])
            path = f"{dirs[serial % len(dirs)]}/{tag}{serial:06d}"
            serial += 1
            ops.append(("write", path, s))
            live.append((path, s))
            total += s
        ops.append(("sync",))

    fill("g0-")
    for r in range(1, p["rounds"] + 1):
        victims = set(rng.sample(range(len(live)), int(len(live) * p["churn"])))
        keep = []
        for i, (path, s) in enumerate(live):
            if i in victims:
                ops.append(("delete", path))
                total -= s
            else:
                keep.append((path, s))
        live[:] = keep
        ops.append(("sync",))
        fill(f"g{r}-")
    return Plan(dirs=dirs, ops=ops)


def plan_tree(p):
    """A tree shaped like a system's /usr/share (measured on this machine's: 47,466 files in 3,337
    directories, median 1,291 bytes, 90% below 12.7 KB, 99% below 171 KB, 39 files above 1 MiB
    holding 30% of the bytes; half the directories hold 4 files or fewer, a few thousands). Each
    new directory goes below one of the last few made, 1 to 7 deep (a package's directories come
    together); files spread over directories by log-normal weights (median weight 1, a few
    directories 50x); sizes log-normal, median 1,300 bytes, sigma 1.8, at most 1 MiB, and `large`
    files of 1-16 MiB. Made as a package install makes it: depth first, each directory created,
    then its files."""
    rng = random.Random(p["seed"])
    parent, depth = [None], [0]
    for i in range(1, p["dirs"]):
        if rng.random() < 0.05:
            parent.append(0)
        else:
            cands = [j for j in range(max(0, i - 8), i) if depth[j] < 7]
            parent.append(rng.choice(cands) if cands else 0)
        depth.append(depth[parent[-1]] + 1)
    names, kids = [""], [[] for _ in range(p["dirs"])]
    for i in range(1, p["dirs"]):
        kids[parent[i]].append(i)
        names.append(f"{names[parent[i]]}/d{i:04d}".lstrip("/"))
    weights = [math.exp(rng.gauss(0, 1.0)) * (50 if rng.random() < 0.01 else 1) for _ in range(p["dirs"])]
    weights[0] = 0      # (the top holds directories only)
    where = rng.choices(range(p["dirs"]), weights=weights, k=p["files"])
    files = [[] for _ in range(p["dirs"])]
    for k, d in enumerate(where):
        size = min(int(math.exp(rng.gauss(math.log(1300), 1.8))), 1 << 20)
        files[d].append((k, size))
    for k in rng.sample(range(p["files"]), p["large"]):
        d = where[k]
        files[d] = [(j, _loguniform(rng, 1 << 20, 16 << 20) if j == k else s) for j, s in files[d]]
    ops, dirs, stack = [], [], [0]
    while stack:
        d = stack.pop()
        if d:
            dirs.append(names[d])
            ops.append(("mkdir", names[d]))
        ops += [("write", f"{names[d]}/f{j:05d}".lstrip("/"), s) for j, s in files[d]]
        stack += reversed(kids[d])
    return Plan(dirs=dirs, ops=ops + [("sync",)], dirs_in_ops=True)


_SAFE_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-@,=")


@functools.lru_cache(maxsize=4)
def _copy_walk(root):
    """(kind, rel, size) of root's directories and regular files in `cp -a`'s order: each
    directory's entries in readdir order, a subdirectory's tree right where it is met. Symbolic
    links and special files are left out (no read method reads them); a name with other characters
    than _SAFE_NAME is replaced by one of the same length (tools' checksum listings escape such
    names). Unreadable directories are left out."""
    out, seq = [], [0]

    def name_of(n):
        if set(n) <= _SAFE_NAME and not n.startswith("-"):
            return n
        seq[0] += 1
        return f"x{seq[0]:05d}".ljust(len(n.encode()), "x")[:max(6, len(n.encode()))]

    def walk(path, rel):
        try:
            with os.scandir(path) as it:
                ents = list(it)
        except OSError:
            return
        for e in ents:
            r = f"{rel}/{name_of(e.name)}".lstrip("/")
            try:
                if e.is_dir(follow_symlinks=False):
                    out.append(("mkdir", r, 0))
                    walk(e.path, r)
                elif e.is_file(follow_symlinks=False):
                    out.append(("write", r, e.stat(follow_symlinks=False).st_size))
            except OSError:
                pass
    walk(root, "")
    return tuple(out)      # (cached: the set's parameters and its plan walk it once)


def plan_copy(p):
    """A copy of a real tree (this machine's /usr/share): its
    directories, names and file sizes, made in `cp -a`'s order; the bytes are generated (see
    contents()), which changes nothing for a read."""
    ops, dirs = [], []
    for kind, rel, size in _copy_walk(p["root"]):
        if kind == "mkdir":
            dirs.append(rel)
            ops.append(("mkdir", rel))
        else:
            ops.append(("write", rel, size))
    return Plan(dirs=dirs, ops=ops + [("sync",)], dirs_in_ops=True)


class CopySpec(SetSpec):
    """A set copied from a tree of this machine: its parameters carry the tree's file count and
    bytes, so a kept image of another tree is not taken for it."""

    def params(self, overrides=None):
        p = super().params(overrides)
        files = [x for x in _copy_walk(p["root"]) if x[0] == "write"]
        p["fingerprint"] = f"{len(files)}:{sum(x[2] for x in files)}"
        return p


register(SetSpec(
    name="4k",
    description="files of 4 KiB (100,000 unless --files) in 100 directories, created in shuffled order "
                "across directories (readdir order, inode order and disk order all differ)",
    defaults={"files": 100_000, "size": 4096, "dirs": 100, "seed": 4096},
    planner=plan_small))

register(SetSpec(
    name="3k5",
    description="files of 3,500 bytes (120,000) in 100 directories, created in shuffled order: a size "
                "below one block, so every file ends in a partial block",
    defaults={"files": 120_000, "size": 3500, "dirs": 100, "seed": 3500},
    planner=plan_small))

register(SetSpec(
    name="mixed",
    description="sizes log-uniform from 1 KiB to 1 MiB, about 1 GiB in total, 100 directories, shuffled creation",
    defaults={"target_bytes": 1 << 30, "min_size": 1024, "max_size": 1 << 20, "dirs": 100, "seed": 1},
    planner=plan_mixed))

register(SetSpec(
    name="aged",
    description="about 400 MB, 1 KiB-256 KiB files written round-robin across 100 directories, then 3 rounds "
                "of deleting 30% and rewriting other sizes: free space reused, directories scattered on disk",
    defaults={"target_bytes": 400_000_000, "min_size": 1024, "max_size": 256 << 10, "dirs": 100,
              "rounds": 3, "churn": 0.3, "seed": 7},
    planner=plan_aged,
    image_slack=1.3))

register(SetSpec(
    name="tree",
    description="a tree shaped like a system's /usr/share: 22,000 files in 1,800 directories 1 to 7 deep "
                "(most holding a few files, a few thousands), sizes log-normal around 1.3 KB and 20 files of "
                "1-16 MiB, made depth first as a package install makes it",
    defaults={"files": 22_000, "dirs": 1_800, "large": 20, "seed": 22},
    planner=plan_tree))


register(CopySpec(
    name="usr",
    description="a copy of this machine's /usr/share (directories, names and sizes; generated bytes), "
                "made in cp -a's order: a real tree, which differs from machine to machine (its file "
                "count and bytes are in the table's set line)",
    defaults={"root": "/usr/share", "fingerprint": ""},
    planner=plan_copy))


# --------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------
def contents(spec, params, plan):
    """Yield (op, pieces) for every op of the plan, in order: for a write, the
    file's bytes as a list of buffers (a header naming the file, then bytes cut
    at a random offset from a seeded random pool: all files differ); None
    otherwise. generate() and write_stream() both use it: the same bytes."""
    rng = random.Random(params.get("seed", 0) * 7919 + 17)
    pool = rng.randbytes(POOL_BYTES)
    pool_mv = memoryview(pool)
    for op in plan.ops:
        if op[0] == "write":
            rel, size = op[1], op[2]
            header = f"{spec.name}:{rel}:{size}\n".encode()[:size]
            if size <= POOL_BYTES:
                off = rng.randrange(0, POOL_BYTES - size + 1)
                yield op, [header, pool_mv[off:off + size - len(header)]]
            else:               # (a copied tree's file larger than the pool: the pool over again)
                rest = size - len(header)
                yield op, [header] + [pool_mv[:min(POOL_BYTES, rest - k)] for k in range(0, rest, POOL_BYTES)]
        else:
            yield op, None


def generate(spec, params, plan, set_dir, progress_every=10.0):
    """Carry out plan in set_dir (file contents: see contents()); the seconds it took. A scale set
    (scaleset.py) makes itself: in parallel, resuming a killed generation."""
    if getattr(spec, "scale", False):
        return spec.generate(params, plan, set_dir)[0]
    set_dir = Path(set_dir)
    set_dir.mkdir(parents=True, exist_ok=True)
    for d in [] if plan.dirs_in_ops else plan.dirs:
        (set_dir / d).mkdir(exist_ok=True)
    t0 = last = time.monotonic()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    nops = len(plan.ops)
    for k, (op, pieces) in enumerate(contents(spec, params, plan)):
        kind = op[0]
        if kind == "write":
            fd = os.open(set_dir / op[1], flags, 0o644)
            try:
                for piece in pieces:
                    mv = memoryview(piece)
                    while len(mv):
                        n = os.write(fd, mv)
                        mv = mv[n:]
            finally:
                os.close(fd)
        elif kind == "delete":
            os.unlink(set_dir / op[1])
        elif kind == "mkdir":
            (set_dir / op[1]).mkdir(exist_ok=True)
        elif kind == "sync":
            os.sync()
        now = time.monotonic()
        if now - last > progress_every:
            util.log(f"  generating {spec.name}: {100 * (k + 1) / nops:.0f}%")
            last = now
    os.sync()
    return time.monotonic() - t0


def write_stream(spec, params, plan, outs, mode=0o644):
    """Write the plan's files (writes only, in plan order) as `bfo write`'s
    simple stream format ("f MODE - SIZE PATH\\n" + bytes; "-": no time set)
    into the files of outs, a list of (path, max_files or None): the first
    max_files files of the plan go to that stream. Returns
    {relpath: (size, sha256 hex)} of every file written (plan order)."""
    import hashlib
    files = [open(p, "wb", buffering=1 << 20) for p, _ in outs]
    limits = [n for _, n in outs]
    ref = {}
    try:
        for op, pieces in contents(spec, params, plan):
            if op[0] == "delete":
                raise ValueError("write_stream: the plan deletes files; only write-only plans stream")
            if op[0] != "write":
                continue
            rel, size = op[1], op[2]
            if "\n" in rel:
                raise ValueError(f"write_stream: newline in {rel!r}")
            h = hashlib.sha256()
            for piece in pieces:
                h.update(piece)
            line = f"f {mode:o} - {size} {rel}\n".encode()
            for f, lim in zip(files, limits):
                if lim is None or len(ref) < lim:
                    f.write(line)
                    for piece in pieces:
                        f.write(piece)
            ref[rel] = (size, h.hexdigest())
    finally:
        for f in files:
            f.close()
    return ref


def describe(name, params, plan):
    return (f"{name}: {plan.files:,} files, {plan.bytes / 1e6:,.1f} MB in {len(plan.dirs)} directories "
            f"(params {params})")


from . import scaleset  # noqa: E402,F401  (registers tree1m and tree10m, which build on this module)
