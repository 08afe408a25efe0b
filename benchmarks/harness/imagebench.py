"""The scenarios that run methods of harness/methods.py on set images: read (every set), W1 (write the 4k
set's files onto fresh file systems), M1 (copy sets onto a fresh file system) and M2 (copy sets to another
machine over ssh, onto a fresh file system there). One shell for the four: argument checks, the bfo binary
and its snapshot, the results directory, the scratch directory and the interrupted/error paths; the loops
are scenarios.run_read / run_w1 / run_m1 / run_m2."""

import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

from . import methods as methods_mod
from . import native, report, runner, scenarios, sets, util
from .workspace import WorkdirLock

QUICK_FILES = 20_000
M1_SETS = ("4k", "mixed")
M2_SETS = ("4k", "mixed")
SCALE_SETS = {"1m": ["tree1m"], "10m": ["tree1m", "tree10m"]}     # bench --scale [1m|10m]


def _plan(args):
    """The sets, file systems, methods and rounds asked for; SystemExit with a message for a bad one."""
    sc = args.scenario
    if sc == "read":
        set_names = args.sets.split(",") if args.sets else (["4k"] if args.quick else
                                                            [n for n, s in sets.REGISTRY.items() if not s.scale])
    elif sc in ("m1", "m2"):
        set_names = args.sets.split(",") if args.sets else (["4k"] if args.quick else
                                                            list(M1_SETS if sc == "m1" else M2_SETS))
    else:
        if args.sets and args.sets != "4k":
            raise SystemExit("w1 writes the 4k set's files (--files N to scale); use --fs for the file systems")
        set_names = ["4k"]
    if sc in ("read", "m1", "m2") and not args.sets and args.scale:
        set_names += SCALE_SETS[args.scale]
    for n in set_names:
        if n not in sets.REGISTRY:
            raise SystemExit(f"unknown set {n!r}; known: {', '.join(sets.REGISTRY)}")
    fs_list = (args.fs or ("ext4,xfs" if sc == "w1" else "ext4")).split(",")
    dest_fs = args.dest_fs.split(",")
    for f in fs_list + dest_fs:
        if f not in ("ext4", "xfs"):
            raise SystemExit(f"unknown file system {f!r}: ext4 or xfs")
    if sc != "w1" and len(fs_list) != 1:
        raise SystemExit("--fs takes one file system except with --scenario w1")
    methods_mod.DEVSEQ.update(request=util.parse_size(args.devseq_request), in_flight=args.devseq_depth)
    return SimpleNamespace(
        set_names=set_names, fs_list=fs_list, dest_fs=dest_fs,
        chosen=methods_mod.select(args.methods.split(",") if args.methods else None, quick=args.quick, scenario=sc),
        repeat=args.repeat or (1 if args.quick else 3),
        files_4k=args.files or (QUICK_FILES if args.quick else None))


def run(args):
    """bench --scenario read / w1 / m1 / m2. Returns the exit status."""
    root = util.is_root()
    cache = "cold" if root else "warm"
    sc = args.scenario
    p = _plan(args)
    set_names, fs_list, dest_fs, chosen, repeat, files_4k = (p.set_names, p.fs_list, p.dest_fs, p.chosen,
                                                             p.repeat, p.files_4k)

    if sc == "m2" and not root:
        util.log("ERROR: M2 needs root (a network namespace, a veth pair, qdiscs, an sshd, loop file systems)")
        return 2
    if not root:
        util.log("NOT ROOT: no image, no cache dropping. Results are WARM-CACHE (data in the page cache), "
                 "the raw engine and device-seq are unavailable. Run as root for cold-cache numbers.")
        if args.workdir == "/var/tmp/bfo-bench" and not os.access("/var/tmp/bfo-bench", os.W_OK) \
                and os.path.exists("/var/tmp/bfo-bench"):
            args.workdir = f"/var/tmp/bfo-bench-{os.getuid()}"
            util.log(f"using work dir {args.workdir} (the default one is not writable)")
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    results = {"kind": "bench", "scenario": sc, "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": sys.argv, "cache": cache, "repeat": repeat, "machine": runner.machine_info(workdir),
               "sets": {}, "complete": False}
    failed = False
    outdir = None
    md = []
    try:
        with WorkdirLock(workdir):
            helpers = native.Helpers(workdir / "bin").build()
            bfo = native.Bfo(None, "no bfo method selected")
            if any(m.group == "bfo" for m in chosen):
                bfo = native.Bfo.locate(args.bfo, build=not args.no_build, logdir=workdir)
                if bfo.available and not args.no_bfo_snapshot:
                    results["bfo_snapshot"] = bfo.snapshot(workdir / "bin" / f"bfo-snapshot-{os.getpid()}")
                if bfo.available:
                    util.log(f"bfo: {bfo.path} ({bfo.version or 'no --version'})")
                else:
                    util.log(f"bfo: not available: {bfo.reason}")
            results["bfo"] = {"path": str(bfo.path) if bfo.path else None, "version": bfo.version,
                              "reason": bfo.reason}
            outdir = report.results_dir(args.results_dir, workdir, suffix="" if sc == "read" else f"-{sc}")
            util.log(f"results: {outdir}")
            title = {"read": "read", "w1": "W1 write", "m1": "M1 copy", "m2": "M2 copy between machines"}[sc]
            md = [f"# BFO {title} benchmark, {results['started']}\n",
                  f"{results['machine']['os']}, kernel {results['machine']['kernel']}, "
                  f"{results['machine']['cpu_count']} CPUs ({results['machine']['cpu_model']}), "
                  f"{(results['machine']['mem_bytes'] or 0) / 2**30:.0f} GiB; {cache} cache; repeat {repeat}; "
                  f"bfo: {bfo.version or bfo.reason}\n",
                  (report.legend(cache) if sc == "read" else
                   report.m2_legend(cache) if sc == "m2" else report.wm_legend(cache, sc)) + "\n"]
            scratch = workdir / f"scratch-{os.getpid()}"
            scratch.mkdir(exist_ok=True)
            try:
                common = dict(chosen=chosen, repeat=repeat, do_verify=not args.no_verify, root=root,
                              timeout=args.timeout, workdir=workdir, scratch=scratch, helpers=helpers, bfo=bfo,
                              results=results, md=md, outdir=outdir, cache=cache)
                if sc == "w1":
                    failed = scenarios.run_w1(fs_list=fs_list, files=files_4k, file_size=args.file_size,
                                              fsync_files=args.fsync_files,
                                              explicit=bool(args.methods), **common)
                elif sc == "m1":
                    failed = scenarios.run_m1(set_names=set_names, files_4k=files_4k, src_fs=fs_list[0],
                                              dest_fs=dest_fs, extras=not args.no_extras, keep=args.keep, **common)
                elif sc == "m2":
                    failed = scenarios.run_m2(set_names=set_names, files_4k=files_4k, src_fs=fs_list[0],
                                              dest_fs=dest_fs, keep=args.keep, **common)
                else:
                    failed = scenarios.run_read(set_names=set_names, files_4k=files_4k, fs=fs_list[0],
                                                keep=args.keep, **common)
            finally:
                with util.cleaning():
                    for f in scratch.glob("*"):
                        f.unlink()
                    scratch.rmdir()
                    snap = workdir / "bin" / f"bfo-snapshot-{os.getpid()}"
                    if snap.is_dir():
                        shutil.rmtree(snap, ignore_errors=True)
        results["complete"] = True
    except (KeyboardInterrupt, util.Interrupted) as e:
        results["interrupted"] = str(e) or "SIGINT"
        util.log(f"interrupted ({results['interrupted']}); cleaned up: unmounted, detached, "
                 + ("images kept (--keep)" if args.keep else "images removed"))
        if outdir:
            for info in results["sets"].values():
                if not info.get("complete") and info.get("methods"):
                    md.append(report.any_block(info, cache, partial=True))
            report.write_all(outdir, results, "\n".join(md) + "\n\n**INTERRUPTED**\n")
        return 128 + getattr(e, "signum", 2)
    except Exception as e:  # noqa: BLE001 - report, keep what was measured, exit 2
        if not isinstance(e, RuntimeError):
            traceback.print_exc()
        util.log(f"ERROR: {e}")
        if outdir:
            results["error"] = str(e)
            report.write_all(outdir, results, "\n".join(md) + f"\n\n**ERROR**: {e}\n")
        return 2
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    report.write_all(outdir, results, "\n".join(md))
    print(f"results: {outdir}/results.json, table.md, chart.png")
    if failed:
        print("SOME METHODS FAILED (wrong bytes or errors): see the verified/note columns", file=sys.stderr)
        return 1
    return 0
