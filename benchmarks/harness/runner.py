"""Running things: set up a set (workspace + generation), time commands with
a cold cache, verify methods, collect machine information."""

import contextlib
import os
import platform
import subprocess
import time
from pathlib import Path

from . import sets, util
from .workspace import DirWorkspace, ImageWorkspace


@contextlib.contextmanager
def open_set(spec, params, *, workdir, keep, fs, root):
    """Yield (workspace, plan, info) with the set generated, synced and
    described; the workspace is cleaned up on the way out, whatever happens."""
    plan = spec.plan(params)
    size, inodes, need = spec.image_geometry(plan)
    if root:
        ws = ImageWorkspace(workdir, spec.name, params, keep, fs=fs, size_bytes=size, inodes=inodes,
                            need_bytes=need)
    else:
        ws = DirWorkspace(workdir, spec.name, params, keep)
    util.log(sets.describe(spec.name, params, plan))
    with ws:
        info = {"set": spec.name, "description": spec.description, "params": params, "files": plan.files,
                "bytes": plan.bytes, "alloc_bytes": plan.alloc_bytes, "dirs": len(plan.dirs),
                "written_bytes": plan.written_bytes}
        if ws.reused:
            m = ws.manifest()
            info["generate_seconds"] = None
            info["reused"] = True
            if m.get("files") != plan.files or m.get("bytes") != plan.bytes:
                raise RuntimeError(f"kept set {ws.root} holds {m.get('files')} files / {m.get('bytes')} bytes, "
                                   f"plan says {plan.files} / {plan.bytes}")
        else:
            where = f"{ws.device} -> {ws.root}" if ws.device else str(ws.root)
            util.log(f"generating {spec.name} in {where}")
            secs = sets.generate(spec, params, plan, ws.set_dir)
            util.log(f"generated {spec.name} in {secs:.1f}s")
            info["generate_seconds"] = secs
            info["reused"] = False
            ws.write_manifest({"files": plan.files, "bytes": plan.bytes})
        info["workspace"] = ws.info
        yield ws, plan, info


def cold(root):
    """Before every timed run: sync and drop the page cache (root), or nothing."""
    if root:
        util.drop_caches()


def warm(paths):
    """Read files into the page cache (cat > /dev/null): inputs that must not be on the clock."""
    for p in paths or ():
        util.run(["cat", str(p)], capture=False, stdout=subprocess.DEVNULL, check=True)


def timed_run(cmd, *, root, capture_stdout=False, timeout=None, stdin=None, warm_paths=None):
    """Drop caches, read warm_paths back into the page cache (untimed), then
    run cmd once (stdin from the file `stdin` when given), timed wall-clock."""
    cold(root)
    warm(warm_paths)
    f = open(stdin, "rb") if stdin else None
    try:
        if capture_stdout:
            return util.run(cmd, timeout=timeout, stdin=f)
        return util.run(cmd, stdout=subprocess.DEVNULL, timeout=timeout, stdin=f)
    finally:
        if f:
            f.close()


def _first(text):
    lines = (text or "").strip().splitlines()
    return lines[-1][:300] if lines else ""


def _summarize(r, m):
    good = [x["seconds"] for x in r["runs"] if x["returncode"] == 0 and not x.get("check_error")]
    r.update(util.summarize(good))
    r["note"] = m.note(r["runs"]) if (m.note and r["runs"]) else ""
    mism = [x["stats"].get("_engine_mismatch") for x in r["runs"]
            if isinstance(x.get("stats"), dict) and x["stats"].get("_engine_mismatch")]
    if mism:
        r["note"] = (r["note"] + " " + mism[-1]).strip()


def run_methods(ctx, methods, *, repeat, do_verify, root, timeout=None, into=None):
    """Availability, untimed verification, then `repeat` rounds of every
    method (cold cache before each run). Fills and returns {name: record}
    (`into`, when given, so an interrupted run keeps what it measured)."""
    rec = into if into is not None else {}
    for m in methods:
        r = {"name": m.name, "group": m.group, "description": m.description, "runs": [], "status": "ok",
             "reason": None, "verified": None, "verify_detail": None, "median": None, "min": None, "max": None,
             "n": 0, "note": ""}
        try:
            r["files"] = m.files(ctx) if m.files else ctx.files
            r["bytes"] = m.bytes(ctx) if m.bytes else ctx.bytes
            r["scale"] = ctx.files / r["files"] if r["files"] else 1.0
        except Exception as e:  # noqa: BLE001
            r["files"], r["bytes"], r["scale"] = ctx.files, ctx.bytes, 1.0
            util.warn(f"{m.name}: cannot size its input: {e}")
        try:
            reason = m.available(ctx)
        except Exception as e:  # noqa: BLE001 - a method that cannot even say is unavailable
            reason = f"availability check failed: {e}"
        if reason:
            r["status"] = "n/a"
            r["reason"] = reason
            util.log(f"  {m.name}: not available: {reason}")
        rec[m.name] = r
    live = [m for m in methods if rec[m.name]["status"] == "ok"]

    if do_verify:
        # references first, while the freshly generated (or probed) set may still be cached
        t0 = time.monotonic()
        kinds = {m.reference for m in live if m.reference}
        try:
            if "xxh128" in kinds:
                ctx.refs.xxh128()
            if "sha256" in kinds:
                ctx.refs.sha256()
        except RuntimeError as e:
            util.warn(f"reference checksums: {e}")
        if kinds:
            util.log(f"  references computed [{time.monotonic() - t0:.1f}s]")
        for m in live:
            r = rec[m.name]
            if m.verify is None:
                r["verify_detail"] = "n/a (reads the device, not files)"
                continue
            cold(root)   # verify the same (cold) path that is timed
            t0 = time.monotonic()
            try:
                ok, detail = m.verify(ctx)
            except Exception as e:  # noqa: BLE001
                ok, detail = False, f"verification error: {e}"
            r["verified"] = ok
            r["verify_detail"] = detail
            if ok is False:
                r["status"] = "FAILED"
            util.log(f"  verify {m.name}: {'OK' if ok else ('FAILED' if ok is False else 'skipped')} "
                     f"({detail}) [{time.monotonic() - t0:.1f}s]")
    else:
        for m in live:
            rec[m.name]["verify_detail"] = "not verified (--no-verify)"

    for i in range(repeat):
        for m in live:
            r = rec[m.name]
            if m.prepare:
                m.prepare(ctx)
            cmd = m.command(ctx)
            res = timed_run(cmd, root=root, capture_stdout=m.capture_stdout, timeout=timeout,
                            stdin=m.stdin(ctx) if m.stdin else None,
                            warm_paths=m.warm(ctx) if m.warm else None)
            stats = None
            if m.stats:
                try:
                    stats = m.stats(res)
                except Exception as e:  # noqa: BLE001
                    stats = {"_error": f"cannot parse stats: {e}"}
            if m.extra and res.returncode == 0:
                # untimed: e.g. the same read again in a warm JVM; its own cold cache
                cold(root)
                try:
                    stats = {**(stats or {}), **m.extra(ctx)}
                except Exception as e:  # noqa: BLE001 - a figure that cannot be measured is named, not fatal
                    stats = {**(stats or {}), "_extra_error": f"{type(e).__name__}: {e}"}
            run = {"seconds": res.seconds, "returncode": res.returncode, "stats": stats}
            if res.returncode != 0:
                run["error"] = _first(res.stderr)
                # the lines before the summary name the file and the error (kept for the next look)
                run["stderr_tail"] = [x[:300] for x in (res.stderr or "").strip().splitlines()[-20:]]
                r["status"] = "FAILED"
                r.setdefault("reason", None)
                r["reason"] = r["reason"] or f"exit {res.returncode}: {run['error']}"
            if m.after:
                # untimed: e.g. a quick check of what a write/copy produced, then the fs is released
                try:
                    check = m.after(ctx, res)
                except Exception as e:  # noqa: BLE001 - a check that cannot run is a failed check
                    check = f"{type(e).__name__}: {e}"
                if check:
                    run["check_error"] = check
                    r["status"] = "FAILED"
                    r["reason"] = r.get("reason") or f"check after the run: {check}"
            r["runs"].append(run)
            _summarize(r, m)
            util.log(f"  [{i + 1}/{repeat}] {m.name:<12} {res.seconds:8.3f}s"
                     + (f"  exit {res.returncode}: {run.get('error', '')}" if res.returncode else "")
                     + (f"  CHECK FAILED: {run['check_error']}" if run.get("check_error") else ""))
    for m in methods:
        _summarize(rec[m.name], m)
    return rec


def _read(path):
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def storage_info(workdir):
    """The disk under the work dir (where the images live): what the loop devices really read."""
    from .workspace import findmnt
    src, fstype, opts, target = findmnt(workdir)
    info = {"workdir": str(workdir), "source": src, "fs": fstype, "mount_options": opts, "mount_point": target}
    try:
        st = os.stat(workdir)
        blk = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve()
        disk = blk if (blk / "queue").exists() else blk.parent      # a partition's queue is its disk's
        info.update(disk=disk.name, rotational=_read(disk / "queue" / "rotational").strip() or None,
                    scheduler=_read(disk / "queue" / "scheduler").strip() or None,
                    model=_read(disk / "device" / "model").strip() or None,
                    size_bytes=int(_read(disk / "size").strip() or 0) * 512 or None)
    except OSError:
        pass
    return info


def machine_info(workdir=None):
    cpu_model = None
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
    mem = None
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) * 1024
    osname = None
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            osname = line.split("=", 1)[1].strip('"')
    tarv = util.run(["tar", "--version"]).stdout.splitlines()[0] if util.which("tar") else None
    return {"hostname": platform.node(), "kernel": platform.release(), "kernel_version": platform.version(),
            "os": osname, "arch": platform.machine(), "cpu_count": os.cpu_count(), "cpu_model": cpu_model,
            "mem_bytes": mem, "python": platform.python_version(), "tar": tarv, "root": os.geteuid() == 0,
            "uid": os.geteuid(), "loadavg_start": _read("/proc/loadavg").split()[:3],
            "storage": storage_info(workdir) if workdir else None}
