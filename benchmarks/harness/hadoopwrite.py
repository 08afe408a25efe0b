"""H4: one MapReduce job leaves one file per record: BatchFileOutputFormat against what users do without BFO,
on the local disk (durable), on HDFS behind a link with latency, and on S3.

    sudo benchmarks/bench --scenario h4                               # everything (hours: see benchmarks/README.md)
    sudo benchmarks/bench --scenario h4 --files 2000 --repeat 1 --h4-sets 4k   # a smoke run of every place

The job is hadoop-input's `unpack` example (bin/bfo-unpack, Hadoop's embedded local runner, 2 map slots as H1):
SequenceFiles of (name, bytes) records in, one file per record out. Its input is made off the clock from a
generated set (sets.py: `4k`, 100,000 x 4 KiB in 100 directories; `tree`, 22,000 files of a real tree's sizes in
1,800 directories) with the `pack` example (BatchFileInputFormat, the identity Mapper, SequenceFileOutputFormat:
keys the files' full paths, which unpack's --base strips). Methods, each at its users' defaults:

  bfo       BatchFileOutputFormat (libbfo batches on the local disk; Hadoop streams in flight and renames at the
            job commit on HDFS; multipart uploads completed at the job commit on S3A)
  plain     a RecordWriter that calls FileSystem.create per record, under FileOutputCommitter at its defaults
            (hadoop-input's PerFileOutputFormat)
  multiple  MultipleOutputs, each record to a base path of its own (names get MultipleOutputs' -m-NNNNN suffix;
            every file of a task stays open until the task ends): where it applies, the local disk

Places: `local` (a fresh ext4 image for every run as root; durable: the job, then `sync`, both timed, for every
method), `hdfs` at each --h4-hdfs-rtt and `s3` at each --h4-s3-rtt (L1's bed: harness/link.py, farstores.py: a
NameNode and 2 DataNodes, MinIO, in a network namespace behind delaybridge). Caches are dropped before every run.

Verification, every run: the job's file and byte counters equal the set's; the output tree (read back from the
image after a remount, or copied to the local disk with FsShell -get) holds exactly the set's files, name for
name and byte for byte (SHA-256), modes as the plain path's; _SUCCESS is there; nothing staged is left. A run
that fails or differs makes the row FAILED and bench exit 1.
"""

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import time
from pathlib import Path

from . import farstores, hadoop, latency, native, report, runner, sets, util
from .link import Link
from .workspace import FreshFs, WorkdirLock

SETS = ("4k", "tree")
HDFS_RTT_MS = (0.5, 2.0)
S3_RTT_MS = (10.0,)
ROUNDS = 3
METHODS = {"bfo": "BatchFileOutputFormat", "plain": "FileSystem.create per record",
           "multiple": "MultipleOutputs"}
LOCAL_ONLY = {"multiple"}
SUFFIX = re.compile(r"-m-[0-9]{5}$")
TARGETS = {("local", None): 3.0, ("hdfs", 2.0): 3.0, ("s3", 10.0): 5.0}


def run_h4(args):
    """The H4 scenario (benchmarks/bench --scenario h4). Returns the exit status."""
    return util.scenario_entry(_run_h4, args)


def _plan(args, root):
    where = set((args.h4_where or ("local,hdfs,s3" if root else "local")).split(","))
    bad = where - {"local", "hdfs", "s3"}
    if bad:
        raise RuntimeError(f"--h4-where takes local, hdfs, s3; not {', '.join(sorted(bad))}")
    if not root and where != {"local"}:
        raise RuntimeError("the HDFS and S3 places need root (a network namespace, TAP devices)")
    places = [("local", None)] if "local" in where else []
    places += [("hdfs", r) for r in latency._floats(args.h4_hdfs_rtt, HDFS_RTT_MS)] if "hdfs" in where else []
    places += [("s3", r) for r in latency._floats(args.h4_s3_rtt, S3_RTT_MS)] if "s3" in where else []
    return places


def _names(arg, known, what):
    names = (arg or ",".join(known)).split(",")
    bad = [n for n in names if n not in known]
    if bad:
        raise RuntimeError(f"{what} takes {', '.join(known)}; not {', '.join(bad)}")
    return names


# --------------------------------------------------------------------------
# The input: a generated set, packed into SequenceFiles (off the clock)
# --------------------------------------------------------------------------
def _make_input(name, files, work, env):
    """The set generated under work/NAME/set, packed into work/NAME/seq; its reference {rel: (size, sha256)}."""
    spec = sets.REGISTRY[name]
    params = spec.params({"files": files} if name == "4k" and files else None)
    plan = spec.plan(params)
    set_dir = work / name / "set"
    util.log(f"H4 set {sets.describe(name, params, plan)}: generating in {set_dir}")
    sets.generate(spec, params, plan, set_dir)
    ref = {}
    for op, pieces in sets.contents(spec, params, plan):
        if op[0] == "write":
            h = hashlib.sha256()
            for p in pieces:
                h.update(p)
            ref[op[1]] = (op[2], h.hexdigest())
        elif op[0] == "delete":
            ref.pop(op[1], None)
    seq = work / name / "seq"
    r = util.run([hadoop.LAUNCHER.parent / "bfo-unpack", "--pack", "-D",
                  f"hadoop.tmp.dir={work / 'hadoop-tmp'}", str(set_dir), f"file://{seq}"], env=env, timeout=3600)
    if not r.ok:
        raise RuntimeError(f"packing {name} failed (exit {r.returncode}): {(r.stderr or '')[-600:]}")
    _, _, _, counters = hadoop._parse(r.stdout or "")
    if hadoop._find(counters, "Map output records") != len(ref):
        raise RuntimeError(f"packing {name}: {hadoop._find(counters, 'Map output records')} records, "
                           f"{len(ref)} files")
    util.log(f"  packed into {seq} ({sum(p.stat().st_size for p in seq.glob('part-*')) / 1e6:,.1f} MB)")
    return {"set": name, "params": params, "files": len(ref), "bytes": sum(s for s, _ in ref.values()),
            "dirs": len(plan.dirs), "set_dir": set_dir, "seq": seq, "ref": ref}


# --------------------------------------------------------------------------
# One run
# --------------------------------------------------------------------------
def _out_uri(bed, place, name):
    if place == "local":
        return f"file://{bed.fresh.new()}/{name}"
    if place == "hdfs":
        return f"{bed.hdfs.uri}/h4/{name}"
    return f"{bed.s3.uri}/h4/{name}"


def _fsshell(bed, place, args, timeout=7200):
    conf = bed.hdfs.client_conf if place == "hdfs" else bed.s3.client_conf
    extra = bed.s3a_cp if place == "s3" else ""
    cp = ":".join(x for x in [str(conf), farstores.cluster_classpath(), extra] if x)
    return util.run(["java", "-Xmx1g", *farstores.java_opts(), "-cp", cp, "org.apache.hadoop.fs.FsShell", *args],
                    timeout=timeout)


def _tree(root, strip_suffix):
    """{rel: (size, sha256, mode)} of the regular files under root, .crc files left out; (set of dirs)."""
    files, dirs = {}, set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for d in dirnames:
            dirs.add(os.path.normpath(os.path.join(rel_dir, d)))
        for f in filenames:
            if f.startswith(".") and f.endswith(".crc"):
                continue
            p = os.path.join(dirpath, f)
            rel = os.path.normpath(os.path.join(rel_dir, f))
            st = os.lstat(p)
            rel = SUFFIX.sub("", rel) if strip_suffix else rel
            files[rel] = (st.st_size, util.sha256_file(p), stat.S_IMODE(st.st_mode))
    return files, dirs


def _verify(bed, inp, place, method, out, counters):
    """Problems with a finished run's output (empty: the set's files exactly)."""
    problems = []
    written = hadoop._find(counters, "FILES") if method == "bfo" else hadoop._find(counters, "Map output records")
    if method == "multiple":
        written = hadoop._find(counters, "Map input records")
    if written != inp["files"]:
        problems.append(f"{written} files written, expected {inp['files']}")
    if place == "local":
        local = Path(out[len("file://"):])
        bed.fresh.remount()          # what is checked is what reached the device
    else:
        local = bed.work / "verify"
        shutil.rmtree(local, ignore_errors=True)
        r = _fsshell(bed, place, ["-get", "-t", "16", out, str(local)])
        if not r.ok:
            return problems + [f"cannot copy the output back (FsShell -get exit {r.returncode})"]
    files, dirs = _tree(local, method == "multiple")
    success = files.pop("_SUCCESS", None)
    if success is None:
        problems.append("no _SUCCESS")
    left = sorted(d for d in dirs if d.startswith("_temporary")) + sorted(f for f in files if f.startswith("_"))
    if left:
        problems.append(f"staging left: {left[:3]}")
    files = {k: v for k, v in files.items() if not k.startswith("_")}
    ref = inp["ref"]
    missing = [k for k in ref if k not in files]
    extra = [k for k in files if k not in ref]
    wrong = [k for k in ref if k in files and files[k][:2] != ref[k]]
    for what, names in (("missing", missing), ("extra", extra), ("different", wrong)):
        if names:
            problems.append(f"{len(names)} {what} files (e.g. {names[0]})")
    modes = {v[2] for v in files.values()}
    if place != "s3":
        bed.modes.setdefault((inp["set"], place), {})[method] = sorted(modes)
    if place != "local":
        shutil.rmtree(local, ignore_errors=True)
    return problems


def _run_one(bed, inp, place, rtt, method, rnd):
    out = _out_uri(bed, place, f"out-{method}-{rnd}")
    settings = {"mapreduce.local.map.tasks.maximum": str(hadoop.MAP_SLOTS),
                "hadoop.tmp.dir": str(bed.work / "hadoop-tmp"),
                "mapreduce.jobtracker.staging.root.dir": str(bed.work / "hadoop-tmp" / "staging")}
    if place == "s3":
        settings.update(bed.s3.hadoop_conf())
    cmd = [hadoop.LAUNCHER.parent / "bfo-unpack"]
    for k, v in settings.items():
        cmd += ["-D", f"{k}={v}"]
    cmd += ["--output-format", method, "--base", f"file:{inp['set_dir']}", f"file://{inp['seq']}", out]
    env = dict(os.environ, BFO_WORDCOUNT_TARGET=str(bed.snap_s3a if place == "s3" else bed.snap))
    hadoop._cold(bed.root, bed.warm_files)
    cpu0 = latency._server_cpu(bed.server_pids())
    r = util.run(cmd, timeout=bed.timeout, env=env)
    sync_s = None
    if place == "local" and r.ok:
        t0 = time.perf_counter()
        os.sync()              # durable: every method's files on the device, as its user would need them
        sync_s = time.perf_counter() - t0
    job_s, submit_s, run_s, counters = hadoop._parse(r.stdout or "")
    res = {"set": inp["set"], "place": place, "rtt_ms": rtt, "method": method, "round": rnd, "exit": r.returncode,
           "seconds": None if job_s is None else job_s + (sync_s or 0.0), "job_seconds": job_s,
           "sync_seconds": sync_s, "submit_seconds": submit_s, "run_seconds": run_s,
           "process_seconds": r.seconds, "server_cpu_seconds": latency._server_cpu(bed.server_pids()) - cpu0,
           "counters": {g: c for g, c in counters.items() if g in ("BFO output", "File Output Format Counters")}}
    problems = []
    if r.returncode == 124:
        res["did_not_finish"] = bed.timeout       # the incumbent's honest row: not a time, not a wrong result
    elif not r.ok:
        problems.append(f"exit {r.returncode}: " + " | ".join((r.stderr or "").strip().splitlines()[-3:]))
    elif not bed.no_verify:
        problems += _verify(bed, inp, place, method, out, counters)
    if bed.link_problem:
        problems.append(bed.link_problem)
    res["problems"] = problems
    if place != "local":
        _fsshell(bed, place, ["-rm", "-r", "-f", "-skipTrash", out], timeout=3600)   # off the clock
    secs = res["seconds"]
    util.log(f"  {'-' if secs is None else f'{secs:.2f}'} s"
             + (f" (job {job_s:.2f} + sync {sync_s:.2f})" if sync_s is not None and job_s is not None else "")
             + (f"  PROBLEMS: {'; '.join(problems)}" if problems else ""))
    return res


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------
def _merge(runs):
    ok = [r for r in runs if not r["problems"] and r.get("seconds")]
    st = util.summarize([r["seconds"] for r in ok])
    dnf = [r["did_not_finish"] for r in runs if r.get("did_not_finish")]
    return dict(st, n=len(runs), dnf=max(dnf) if dnf else None,
                ok=len(ok) + len(dnf) == len(runs) and bool(runs),
                problems=sorted({p for r in runs for p in r["problems"]}),
                sync=util.summarize([r["sync_seconds"] for r in ok if r.get("sync_seconds") is not None])["median"],
                server_cpu=util.summarize([r.get("server_cpu_seconds") or 0 for r in runs])["median"])


def tables(results):
    cells = {}
    for r in results["runs"]:
        cells.setdefault((r["set"], r["place"], r["rtt_ms"], r["method"]), []).append(r)
    merged = {k: _merge(v) for k, v in cells.items()}
    rows, grow = [], []
    for s in results["sets"]:
        for place, rtt in results["plan"]:
            b = merged.get((s, place, rtt, "bfo"))
            if not b:
                continue
            where = place if rtt is None else f"{place} {rtt:g} ms"
            for m in results["methods"]:
                c = merged.get((s, place, rtt, m))
                if not c:
                    continue
                if not c["ok"]:
                    fmt = "FAILED"
                elif c["dnf"]:
                    fmt = f"did not finish in {c['dnf']:.0f} s"
                else:
                    fmt = f"{c['median']:.2f}" + (f" ({c['min']:.1f}-{c['max']:.1f})" if c["n"] > 1 else "")
                sp = (c["median"] / b["median"] if m != "bfo" and c["ok"] and not c["dnf"] and b["ok"]
                      and b["median"] else None)
                sp_text = f"{sp:.1f}x" if sp else (f"> {c['dnf'] / b['median']:.1f}x" if c["dnf"] and b["ok"]
                                                    and b["median"] else "")
                target = TARGETS.get((place, rtt)) if m == "plain" and s == "4k" else None
                rows.append([s, where, METHODS[m], fmt, "-" if c["sync"] is None else f"{c['sync']:.2f}", sp_text,
                             f">= {target:g}x: {'yes' if sp and sp >= target else 'no'}" if target and sp else "",
                             ("yes" if not c["dnf"] else "-") if c["ok"] else "NO: " + "; ".join(c["problems"])[:300]])
        rtts = sorted({rtt for p, rtt in results["plan"] if p == "hdfs"})
        if len(rtts) >= 2:
            g = {}
            for m in ("bfo", "plain"):
                a, z = merged.get((s, "hdfs", rtts[0], m)), merged.get((s, "hdfs", rtts[-1], m))
                g[m] = (z["median"] - a["median"] if a and z and a["ok"] and z["ok"] and a["median"] is not None
                        and z["median"] is not None else None)
            if g["bfo"] is not None and g["plain"]:
                frac = g["bfo"] / g["plain"]
                grow.append([s, f"hdfs {rtts[0]:g} -> {rtts[-1]:g} ms", f"{g['bfo']:+.2f}", f"{g['plain']:+.2f}",
                             f"{frac:.2f}", "yes" if frac < 0.25 else "no"])
    main = util.md_table(["set", "where (RTT)", "method", "s (job + sync)", "sync s", "bfo's speed-up", "target",
                          "verified"], rows, align=["l", "l", "l"] + ["r"] * 4 + ["l"])
    growth = util.md_table(["set", "round trip", "bfo growth s", "plain growth s", "bfo / plain growth", "< 1/4"],
                           grow, align=["l", "l"] + ["r"] * 4) if grow else ""
    return merged, main, growth


# --------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------
def _run_h4(args):
    root = util.is_root()
    t_start = time.monotonic()
    rounds = max(1, args.repeat or ROUNDS)
    base_rounds = min(rounds, max(1, args.h4_base_repeat or rounds))
    plan = _plan(args, root)
    set_names = _names(args.h4_sets, SETS, "--h4-sets")
    methods = _names(args.h4_methods, list(METHODS), "--h4-methods")
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {"kind": "hadoop-write", "scenario": "h4", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": list(sys.argv), "cache": "cold" if root else "warm (not root)", "rounds": rounds,
               "baseline_rounds": base_rounds, "plan": plan, "sets": set_names, "methods": methods, "inputs": {},
               "runs": [], "links": [], "complete": False}
    need_s3 = any(p == "s3" for p, _ in plan)
    need_far = any(p != "local" for p, _ in plan)
    with WorkdirLock(workdir):
        outdir = report.results_dir(args.results_dir, workdir, suffix="-h4")
        util.log(f"results: {outdir}")
        snap, program_files = hadoop._build(workdir, args.no_build)
        work = workdir / f"h4-{os.getpid()}"
        bed = latency.Bed(root=root, timeout=args.timeout, work=work, snap=snap, snap_s3a=None, hdfs=None, s3=None,
                          link_problem=None, no_verify=args.no_verify, modes={}, fresh=None)
        try:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            bed.warm_files = program_files + hadoop._java_files()
            bed.s3a_cp = farstores.s3a_classpath(workdir)[0] if need_s3 else ""
            bed.snap_s3a = latency._with_s3a(snap, bed.s3a_cp) if need_s3 else snap
            minio = farstores.minio_binary(workdir, args.no_build)[0] if need_s3 else None
            env = dict(os.environ, BFO_WORDCOUNT_TARGET=str(snap))
            inputs = {s: _make_input(s, args.files, work, env) for s in set_names}
            results["inputs"] = {s: {k: v for k, v in i.items() if k not in ("ref", "set_dir", "seq")}
                                 for s, i in inputs.items()}
            biggest = max(i["bytes"] + 8192 * i["files"] for i in inputs.values())
            bed.fresh = FreshFs(workdir, f"h4-out-{os.getpid()}", "ext4", max(1 << 30, 3 * biggest),
                                max(i["files"] for i in inputs.values()) * 3 + 100_000, root)
            bridge = None
            if need_far:
                bridge, err = native.Helpers(workdir / "bin")._compile("delaybridge", [], [])
                if not bridge:
                    raise RuntimeError("cannot compile benchmarks/harness/delaybridge.c:\n" + err)
            with bed.fresh, (Link(bridge, 0.0) if need_far else _NoLink()) as link:
                if need_far:
                    results["links"].append(latency._check_link(link, "start"))
                    if any(p == "hdfs" for p, _ in plan):
                        bed.hdfs = farstores.FarHdfs(link, work / "hdfs", 2, log_dir=outdir).start()
                    if need_s3:
                        bed.s3 = farstores.FarS3(link, work / "s3", minio, log_dir=outdir).start()
                for place, rtt in plan:
                    bed.link_problem = None
                    if place != "local":
                        link.set_delay(rtt / 2e3)
                        lk = latency._check_link(link, place)
                        results["links"].append(lk)
                        if not lk["ok"]:
                            bed.link_problem = (f"link check failed: round trip {lk['rtt_median_ms']:.3f} ms, "
                                                f"set {lk['rtt_set_ms']:g} ms")
                    for s in set_names:
                        for rnd in range(rounds):
                            for m in methods:
                                if (m in LOCAL_ONLY and place != "local" and not args.h4_methods) or (
                                        m != "bfo" and rnd >= base_rounds):
                                    continue
                                util.log(f"H4 [{rnd + 1}/{rounds}] {s} {place}"
                                         f"{'' if rtt is None else f' {rtt:g} ms'}: {METHODS[m]}")
                                results["runs"].append(_run_one(bed, inputs[s], place, rtt, m, rnd))
                                (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
                if need_far:
                    link.set_delay(0.0)
        finally:
            with util.cleaning():
                for srv in (bed.s3, bed.hdfs):
                    if srv:
                        srv.close()
                shutil.rmtree(work, ignore_errors=True)
                shutil.rmtree(snap, ignore_errors=True)
                if bed.snap_s3a and bed.snap_s3a != snap:
                    shutil.rmtree(bed.snap_s3a, ignore_errors=True)
    return _write_report(results, bed, outdir, workdir, t_start)


def _write_report(results, bed, outdir, workdir, t_start):
    """results.json and table.md in outdir, the table on stdout; the exit status (1: a run failed or differed)."""
    rounds, base_rounds = results["rounds"], results["baseline_rounds"]
    merged, main, growth = tables(results)
    failed = any(not m["ok"] for m in merged.values())
    for (s, place), modes in bed.modes.items():
        if len({tuple(v) for v in modes.values()}) > 1:
            failed = True
            main += f"\n\nMODES DIFFER on {s} {place}: {modes}"
    results.update(complete=True, finished=time.strftime("%Y-%m-%d %H:%M:%S %z"),
                   total_seconds=time.monotonic() - t_start, machine=runner.machine_info(workdir),
                   merged=[dict(zip(("set", "place", "rtt_ms", "method"), k), **v) for k, v in merged.items()],
                   modes={f"{s} {p}": m for (s, p), m in bed.modes.items()})
    links = "; ".join(f"{lk['place']} set {lk['rtt_set_ms']:g} ms: {lk['rtt_median_ms']:.3f} ms"
                      + ("" if lk["ok"] else " (OFF)") for lk in results["links"] if lk["place"] != "start")
    sizes = "; ".join(f"{s}: {i['files']:,} files, {i['bytes'] / 1e6:,.1f} MB in {i['dirs']:,} directories"
                      for s, i in results["inputs"].items())
    md = (f"# BFO H4 benchmark (one MapReduce job writes one file per record), {results['started']}\n\n"
          f"{sizes}; the `unpack` example on Hadoop's local runner ({hadoop.MAP_SLOTS} map slots), input packed "
          f"SequenceFiles on the local disk; {results['cache']} caches; every method at its defaults; local: a "
          f"fresh ext4 per run, the job then `sync` (both timed); median (min-max) of {rounds} rounds"
          + (f" ({base_rounds} for the incumbents)" if base_rounds != rounds else "")
          + (f". Link round trips measured (ICMP, median): {links}" if links else "")
          + f". Whole scenario: {results['total_seconds'] / 60:.1f} min.\n\n" + main + "\n"
          + (f"\nGrowth from the lower to the higher round trip (target: bfo's under a quarter of the plain "
             f"path's):\n\n{growth}\n" if growth else ""))
    (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (outdir / "table.md").write_text(md)
    print("\n" + md, flush=True)
    print(f"results: {outdir}/results.json, table.md")
    if failed:
        print("SOME RUNS FAILED OR GAVE WRONG RESULTS: see the verified column", file=sys.stderr)
        return 1
    return 0


class _NoLink:
    """No link: a local-only run (no namespace, no bridge)."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
