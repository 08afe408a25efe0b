"""The scale sets: millions of files shaped like the `tree` set (issue 57 item 1).

`tree1m` (1,000,000 files) and `tree10m` (10,000,000) take the tree set's shape (sets.plan_tree): the
same ratio of directories to files (1,800 to 22,000: 81,818 and 818,182 directories), each new directory
below one of the last 8 made (5% at the top), 1 to 7 deep, files spread over directories by log-normal
weights (median 1, 1% of the directories 50x), sizes log-normal with median 1,300 bytes and sigma 1.8 as
the tree's, drawn again while above one block (4,096 bytes): small in bytes (about 1 KB a file, so 1M
files hold about 1 GB and occupy about 4 GB at 4 KiB blocks), no large files.

Everything a directory holds comes from its own seeded generator (the set's seed and the directory's
number), so any worker makes any directory alone and a rerun makes the same bytes:

- the plan (directories, parents, each one's file count) is a few lists, not one op per file, and costs
  seconds at 10M; its totals (files, bytes, blocks) are summed per directory;
- generation is parallel: the directories in depth-first order (as a package install makes them: a
  directory, then its files) cut into chunks, handed to `workers` processes;
- it is resumable: each worker appends a directory's number to its own log under STATE (the set's
  directory name + ".gen", beside it, so the set holds only its files) once the directory's files are
  written; a rerun after a kill skips the directories logged and makes the others again (their files are
  rewritten whole, with the same names and bytes). A torn last line of a log (a kill mid-write) is not
  taken. When everything is made, STATE/complete holds the totals and the seconds spent.

Contents: a header naming the file ("tree1m:REL:SIZE\\n"), then bytes cut from a seeded 4 MiB random pool
at an offset from the directory's generator: every file differs.
"""

import json
import math
import multiprocessing
import os
import random
import time
from pathlib import Path

from . import sets, util

GEN_VERSION = 1
MAX_SIZE = 4096         # one block: sizes above it are drawn again
POOL = 4 << 20
CHUNK_DIRS = 64         # directories per task handed to a worker


def _dir_rng(seed, d):
    return random.Random(seed * 1_000_003 + d)


def file_sizes(seed, d, n, max_size=MAX_SIZE):
    """The sizes of directory d's n files (f00000, f00001, ...): log-normal like the tree set's, below max_size."""
    rng = _dir_rng(seed, d)
    mu = math.log(1300)
    out = []
    for _ in range(n):
        while True:
            s = int(math.exp(rng.gauss(mu, 1.8)))
            if s <= max_size:
                break
        out.append(s)
    return out, rng


def layout(p):
    """(names, order, counts): every directory's relative path ("" for the top), the depth-first order they
    are made in, and each one's file count (summing to p["files"])."""
    rng = random.Random(p["seed"])
    nd = p["dirs"]
    parent, depth = [0] * nd, [0] * nd
    for i in range(1, nd):
        if rng.random() < 0.05:
            par = 0
        else:
            cands = [j for j in range(max(0, i - 8), i) if depth[j] < 7]
            par = rng.choice(cands) if cands else 0
        parent[i], depth[i] = par, depth[par] + 1
    names, kids = [""] * nd, [[] for _ in range(nd)]
    for i in range(1, nd):
        kids[parent[i]].append(i)
        names[i] = f"{names[parent[i]]}/d{i:06d}".lstrip("/")
    weights = [math.exp(rng.gauss(0, 1.0)) * (50 if rng.random() < 0.01 else 1) for _ in range(nd)]
    weights[0] = 0.0        # (the top holds directories only)
    total = sum(weights)
    share = [p["files"] * w / total for w in weights]
    counts = [int(s) for s in share]
    # largest remainders: the counts add up to exactly p["files"], the same on every run
    rest = sorted(range(nd), key=lambda i: (counts[i] - share[i], i))[:p["files"] - sum(counts)]
    for i in rest:
        counts[i] += 1
    order, stack = [], [0]
    while stack:
        d = stack.pop()
        order.append(d)
        stack += reversed(kids[d])
    return names, order, counts


class ScalePlan:
    """What sets.Plan tells the harness (files, bytes, blocks, dirs), without one op per file."""

    def __init__(self, p):
        self.params = p
        self.names, self.order, self.counts = layout(p)
        self.dirs = [self.names[d] for d in self.order if d]
        self.ops = None
        self.dirs_in_ops = True
        files = nbytes = alloc = 0
        for d in self.order:
            if self.counts[d]:
                sizes, _ = file_sizes(p["seed"], d, self.counts[d], p["max_size"])
                files += len(sizes)
                nbytes += sum(sizes)
                alloc += sum(sets._alloc(s) for s in sizes)
        self.files, self.bytes, self.alloc_bytes = files, nbytes, alloc
        self.peak_alloc_bytes = self.written_bytes = alloc
        self.written_bytes = nbytes


class ScaleSpec(sets.SetSpec):
    """A set of millions of files, made in parallel and resumably (see the module's text). `scale`: it is
    left out of the default set list unless bench is given --scale."""
    scale = True

    def plan(self, params):
        return ScalePlan(params)

    def image_geometry(self, plan):
        size, inodes, need = super().image_geometry(plan)
        return size, inodes, need

    def generate(self, params, plan, set_dir, workers=2):
        return generate(self.name, params, plan, set_dir, workers=workers)


# --------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------
_W = {}


def _winit(name, params, names, counts, set_dir, state):
    pool = random.Random(params["seed"] * 7919 + 17).randbytes(POOL)
    _W.update(name=name, params=params, names=names, counts=counts, set_dir=set_dir, pool=memoryview(pool),
              log=os.open(Path(state) / f"done.{os.getpid()}", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC,
                          0o644))


def make_dir(name, params, names, counts, set_dir, pool, d):
    """Make directory d and its files; the number of files written."""
    rel = names[d]
    path = os.path.join(set_dir, rel) if rel else set_dir
    os.makedirs(path, exist_ok=True)
    sizes, rng = file_sizes(params["seed"], d, counts[d], params["max_size"])
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    for j, size in enumerate(sizes):
        frel = f"{rel}/f{j:05d}".lstrip("/")
        header = f"{name}:{frel}:{size}\n".encode()[:size]
        off = rng.randrange(0, POOL - size + 1)
        data = header + pool[off:off + size - len(header)]
        fd = os.open(os.path.join(set_dir, frel), flags, 0o644)
        try:
            mv = memoryview(data)
            while len(mv):
                mv = mv[os.write(fd, mv):]
        finally:
            os.close(fd)
    return len(sizes)


def _wchunk(ds):
    w = _W
    n = 0
    for d in ds:
        n += make_dir(w["name"], w["params"], w["names"], w["counts"], w["set_dir"], w["pool"], d)
        os.write(w["log"], f"{d}\n".encode())        # one write: a kill leaves a whole line or a torn one
    return len(ds), n


def done_dirs(state):
    """The directories the logs under state say are made (whole lines only)."""
    done = set()
    for f in Path(state).glob("done.*"):
        data = f.read_bytes()
        for line in data[:data.rfind(b"\n") + 1].split(b"\n"):
            if line:
                done.add(int(line))
    return done


def state_dir(set_dir):
    set_dir = Path(set_dir)
    return set_dir.parent / (set_dir.name + ".gen")


def generate(name, params, plan, set_dir, workers=2, progress_every=10.0):
    """Make the set in set_dir, resuming a killed run; (seconds this run, dict of what it did)."""
    set_dir = Path(set_dir)
    state = state_dir(set_dir)
    stamp = {"set": name, "params": params, "version": GEN_VERSION}
    state.mkdir(parents=True, exist_ok=True)
    stamp_f = state / "params.json"
    if stamp_f.exists() and json.loads(stamp_f.read_text()) != json.loads(json.dumps(stamp)):
        raise RuntimeError(f"{set_dir}: a generation of other parameters is there ({stamp_f}); remove "
                           f"{set_dir} and {state} first")
    stamp_f.write_text(json.dumps(stamp))
    set_dir.mkdir(parents=True, exist_ok=True)
    t0 = last = time.monotonic()
    done = done_dirs(state)
    todo = [d for d in plan.order if d not in done]
    info = {"dirs_skipped": len(plan.order) - len(todo), "dirs_made": 0, "files_made": 0, "workers": workers}
    if (state / "complete").exists() and not todo:
        info["seconds"] = 0.0
        return 0.0, info
    if info["dirs_skipped"]:
        util.log(f"  {name}: resuming: {info['dirs_skipped']:,} of {len(plan.order):,} directories already made")
    chunks = [todo[k:k + CHUNK_DIRS] for k in range(0, len(todo), CHUNK_DIRS)]
    args = (name, params, plan.names, plan.counts, str(set_dir), str(state))
    with multiprocessing.get_context("fork").Pool(workers, initializer=_winit, initargs=args) as pool:
        for nd, nf in pool.imap_unordered(_wchunk, chunks):
            info["dirs_made"] += nd
            info["files_made"] += nf
            now = time.monotonic()
            if now - last > progress_every:
                util.log(f"  generating {name}: {info['dirs_made'] + info['dirs_skipped']:,} of "
                         f"{len(plan.order):,} directories, {info['files_made']:,} files this run, "
                         f"{now - t0:.0f} s")
                last = now
    os.sync()
    secs = time.monotonic() - t0
    info["seconds"] = secs
    (state / "complete").write_text(json.dumps({"files": plan.files, "bytes": plan.bytes,
                                                "dirs": len(plan.dirs), **info}))
    return secs, info


def _scale_defaults(files, seed):
    return {"files": files, "dirs": round(files * 1800 / 22000), "max_size": MAX_SIZE, "seed": seed}


TREE1M = sets.register(ScaleSpec(
    name="tree1m",
    description="the tree set's shape at 1,000,000 files: 81,818 directories 1 to 7 deep, sizes log-normal "
                "around 1.3 KB below one block (about 1 GB); made in parallel, resumable (bench --scale, "
                "or --sets tree1m)",
    defaults=_scale_defaults(1_000_000, 57),
    planner=None, image_slack=1.3))

TREE10M = sets.register(ScaleSpec(
    name="tree10m",
    description="the same at 10,000,000 files in 818,182 directories (about 10 GB, 40 GB of 4 KiB blocks; "
                "bench --scale)",
    defaults=_scale_defaults(10_000_000, 5710),
    planner=None, image_slack=1.3))
