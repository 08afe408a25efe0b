"""The registry of methods. A method = a name, a scenario ("read" for now),
a function returning the timed command (argv list, run as one process and
timed wall-clock by the harness), how to tell whether it can run, how to pull
its statistics out of the run's output, and how to verify (untimed) that it
read the same bytes as everyone else.

To add a method: register(Method(name=..., command=lambda ctx: [...], ...)).
Later scenarios (write, copy, tar, Spark) add methods with scenario="write"
etc. and may use `prepare` (untimed, before every timed run, e.g. to empty a
destination) and `after` (untimed, after every timed run).
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from . import native, util, verify
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
    after: Optional[Callable[[Ctx], None]] = None
    scenario: str = "read"
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

    def verify_(ctx):
        if not ctx.helpers.plainread_checksum:
            return None, "not verified: plainread built without libxxhash"
        return verify.verify_checksum_cmd([ctx.helpers.plainread, "-t", str(threads), "--checksum", ctx.set_dir],
                                          ctx.refs)

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

    def verify_(ctx):
        return verify.verify_checksum_cmd(ctx.bfo.read_cmd(engine, [ctx.set_dir], json_out=False, checksum=True),
                                          ctx.refs)

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


def select(names=None, quick=False, scenario="read"):
    ms = [m for m in REGISTRY.values() if m.scenario == scenario]
    if names:
        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            raise SystemExit(f"unknown method(s): {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
        return [REGISTRY[n] for n in names]
    if quick:
        return [m for m in ms if m.quick]
    return ms
