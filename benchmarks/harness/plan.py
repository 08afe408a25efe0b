"""H3: split planning for millions of files, BatchTextInputFormat against
CombineTextInputFormat (at its defaults, the same split.maxsize), one
getSplits per JVM of -Xmx1g (io.github.bfo.bench.SplitPlanBench in
benchmarks.jar, Hadoop from benchmarks/target/classpath.txt).

Inputs:
  synthetic  --synthetic-files (default 10,000,000) files of synth:/// (hadoop-input's
             SyntheticFileSystem, shared through its -tests jar: 1,000 files a directory,
             1 - 64 KiB, three replicas on 100 hosts in 10 racks, made on the fly)
  local      --files (default 1,000,000) empty files in directories of 1,000 on a fresh
             ext4 image on a direct-I/O loop device (root; a directory otherwise),
             cold cache before every run (root)

Every run is limited to --run-limit seconds (default 900): CombineTextInputFormat
lists local files through LocalFileSystem, which without libhadoop forks `ls`
per file (about 5 ms each: 1,000,000 files would take well over an hour); a run
over the limit is reported as "did not finish in T s". An OutOfMemoryError in
getSplits is reported with the seconds it took. Checks: the splits cover as many
files and bytes as the input has.
"""

import json
import os
import shutil
import sys
import time
import zipfile
from pathlib import Path

from . import native, report, runner, util
from .workspace import DirWorkspace, ImageWorkspace, WorkdirLock

JAR = native.BENCH_DIR / "target" / "benchmarks.jar"
CLASSPATH = native.BENCH_DIR / "target" / "classpath.txt"
MAIN = "io.github.bfo.bench.SplitPlanBench"
HEAP = "1g"
SPLIT_MAXSIZE = 128 << 20
PER_DIR = 1000
GEN_VERSION = 1
FORMATS = {"bfo": "BatchTextInputFormat", "combine": "CombineTextInputFormat"}
LOG4J = ("log4j.rootLogger=WARN, err\nlog4j.logger.io.github.bfo=INFO\n"
         "log4j.appender.err=org.apache.log4j.ConsoleAppender\nlog4j.appender.err.target=System.err\n"
         "log4j.appender.err.layout=org.apache.log4j.PatternLayout\n"
         "log4j.appender.err.layout.ConversionPattern=%d{HH:mm:ss} %p %c{1}: %m%n\n")


def _build(workdir, no_build):
    """benchmarks.jar (with SplitPlanBench) and Hadoop's jars, the jar copied to a snapshot dir."""
    def fresh():
        if not JAR.is_file() or not CLASSPATH.is_file():
            return False
        with zipfile.ZipFile(JAR) as z:
            return MAIN.replace(".", "/") + ".class" in z.namelist()
    if not fresh():
        if no_build:
            raise RuntimeError(f"no {JAR} with {MAIN}: mvn -B -pl hadoop-input,benchmarks -am package -DskipTests")
        log = Path(workdir) / "h3-build.log"
        util.log(f"building hadoop-input and benchmarks with Maven (log: {log})")
        with open(log, "w") as lf:
            r = util.run(["mvn", "-B", "-q", "-pl", "hadoop-input,benchmarks", "-am", "package", "-DskipTests",
                          "-Dbfo.native.skipTests=true", "-Dbfo.sanitize.skip=true", "-Dbfo.fuzz.skip=true"],
                         capture=False, stdout=lf, stderr=lf, cwd=native.REPO, timeout=3600)
        if not r.ok or not fresh():
            raise RuntimeError(f"building benchmarks failed (exit {r.returncode}, see {log})")
    snap = Path(workdir) / "bin" / f"h3-{os.getpid()}"
    shutil.rmtree(snap, ignore_errors=True)
    snap.mkdir(parents=True)
    shutil.copy2(JAR, snap / JAR.name)
    (snap / "log4j.properties").write_text(LOG4J)
    # the reactor's own artifacts are inside benchmarks.jar (shaded); Hadoop comes from the local repository
    cp = [snap / JAR.name] + [Path(e) for e in CLASSPATH.read_text().strip().split(":")
                              if e and not Path(e).is_relative_to(native.REPO) and "/io/github/bfo/" not in e]
    return snap, cp


def generate(root, files):
    """files empty files, PER_DIR a directory (dNNNNN/part-NNNNNNNN, as the synthetic names)."""
    t0 = time.monotonic()
    last = t0
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for d in range((files + PER_DIR - 1) // PER_DIR):
        dd = root / f"d{d:05d}"
        dd.mkdir(parents=True)
        fd = os.open(dd, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for i in range(d * PER_DIR, min(files, (d + 1) * PER_DIR)):
                os.close(os.open(f"part-{i:08d}", flags, 0o644, dir_fd=fd))
        finally:
            os.close(fd)
        now = time.monotonic()
        if now - last > 10:
            util.log(f"  created {min(files, (d + 1) * PER_DIR):,} of {files:,} files")
            last = now
    os.sync()
    return time.monotonic() - t0


def _run(*, snap, cp, fmt, source, limit, outdir, cold):
    """One getSplits in its own JVM; the parsed JSON line plus how the process ended."""
    name = f"{source['kind']}-{fmt}"
    cmd = ["java", f"-Xmx{HEAP}", f"-Xlog:gc:file={outdir / ('gc-' + name + '.log')}",
           f"-Dlog4j.configuration=file:{snap / 'log4j.properties'}", "-cp", ":".join(map(str, cp)), MAIN,
           "--format", fmt, "--split-maxsize", str(SPLIT_MAXSIZE)]
    if source["kind"] == "synthetic":
        cmd += ["--synthetic", str(source["files"]), "--per-dir", str(PER_DIR)]
    else:
        cmd += ["--input", f"file://{source['path']}", "--expect-files", str(source["files"])]
    if cold:
        util.drop_caches()
    r = util.run(cmd, timeout=limit)
    res = {"format": fmt, "input": source["kind"], "files": source["files"], "exit": r.returncode,
           "process_seconds": r.seconds, "command": " ".join(map(str, cmd)), "limit": limit}
    line = next((ln for ln in reversed((r.stdout or "").splitlines()) if ln.startswith("{")), None)
    if line:
        res.update(json.loads(line))
        res["input_path"] = res.pop("input")
        res["input"] = source["kind"]
    planner = [ln for ln in (r.stderr or "").splitlines() if "BFO splits:" in ln]
    if planner:
        res["planner_log"] = planner[-1]
    if r.returncode == 124:
        res["status"] = "timeout"
    elif not line:
        res["status"] = "failed"
        res["error"] = " | ".join((r.stderr or "").strip().splitlines()[-3:])
    return res


def _mib(x):
    return "-" if x is None else f"{x / (1 << 20):,.0f}"


def _outcome(r):
    st = r.get("status")
    if st == "ok":
        return f"{r['seconds']:.1f}"
    if st == "oom":
        return f"OutOfMemoryError after {r['seconds']:.0f} s"
    if st == "timeout":
        return f"did not finish in {r['limit']:.0f} s"
    if st == "wrong":
        return f"{r['seconds']:.1f} (WRONG: {r.get('split_files')} files, {r.get('split_bytes')} bytes)"
    return "failed: " + (r.get("error") or f"exit {r.get('exit')}")


def table(runs):
    rows = []
    for r in runs:
        ok = r.get("status") == "ok"
        rows.append([r["input"], f"{r['files']:,}", FORMATS[r["format"]], _outcome(r),
                     f"{r['splits']:,}" if ok else "-",
                     _mib(r.get("peak_used")), _mib(r.get("max_live")), _mib(r.get("retained")) if ok else "-",
                     f"{r['process_seconds']:.1f}"])
    return util.md_table(["input", "files", "input format", "getSplits s", "splits", "peak heap MiB",
                          "max after GC MiB", "retained MiB", "process s"],
                         rows, align=["l", "r", "l"] + ["r"] * 6)


LEGEND = ("getSplits s: wall time of getSplits in a JVM of -Xmx1g (default collector, G1); peak heap: the most "
          "heap in use at any moment (the heap pools' total just before each collection, from GC notifications, "
          "or at the end), garbage included; max after GC: the largest total just after a collection (an upper "
          "bound of what was live); retained: after a full GC with the splits still referenced (what the job "
          "client keeps and serialises). The heap figures count from the JVM's start (Hadoop's classes and "
          "configuration: about 10 MiB).")


def run_h3(args):
    """The H3 scenario (benchmarks/bench --scenario h3). Returns the exit status."""
    return util.scenario_entry(_run_h3, args)


def _run_h3(args):
    root = util.is_root()
    synthetic = 10_000_000 if args.synthetic_files is None else args.synthetic_files
    files = 1_000_000 if args.files is None else args.files
    limit = args.run_limit
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {"kind": "bench", "scenario": "h3", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": list(sys.argv), "heap": HEAP, "split_maxsize": SPLIT_MAXSIZE, "per_dir": PER_DIR,
               "run_limit": limit, "runs": [], "complete": False}
    with WorkdirLock(workdir):
        snap, cp = _build(workdir, args.no_build)
        outdir = report.results_dir(args.results_dir, workdir, suffix="-h3")
        util.log(f"results: {outdir}")

        def save():
            (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))

        def measure(source, cold):
            for fmt in FORMATS:
                util.log(f"H3 {source['kind']}: {FORMATS[fmt]} on {source['files']:,} files (limit {limit:.0f} s)")
                r = _run(snap=snap, cp=cp, fmt=fmt, source=source, limit=limit, outdir=outdir, cold=cold)
                util.log(f"  {_outcome(r)}; peak heap {_mib(r.get('peak_used'))} MiB, max after GC "
                         f"{_mib(r.get('max_live'))} MiB" + (f"; {r['planner_log']}" if r.get("planner_log") else ""))
                results["runs"].append(r)
                save()
        try:
            if synthetic:
                measure({"kind": "synthetic", "files": synthetic}, cold=False)
            if files:
                params = {"files": files, "per_dir": PER_DIR, "version": GEN_VERSION}
                inodes = files + files // PER_DIR + 10_000
                size = max(1 << 30, (inodes * 256 * 2 + (512 << 20)) // (64 << 20) * (64 << 20))
                ws_cls = ImageWorkspace if root else DirWorkspace
                with ws_cls(workdir, "h3", params, args.keep, fs="ext4", size_bytes=size, inodes=inodes,
                            need_bytes=inodes * 300) as ws:
                    if not ws.reused:
                        util.log(f"creating {files:,} empty files in {ws.set_dir}")
                        results["generate_seconds"] = generate(ws.set_dir, files)
                        ws.write_manifest({})
                        util.log(f"  created in {results['generate_seconds']:.0f} s")
                    results["workspace"] = ws.info
                    measure({"kind": "local", "files": files, "path": str(ws.set_dir)}, cold=root)
        finally:
            with util.cleaning():
                shutil.rmtree(snap, ignore_errors=True)
    results["complete"] = True
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    results["machine"] = runner.machine_info(workdir)
    cache = "cold" if root else "warm"
    md = (f"# BFO H3 benchmark (split planning), {results['started']}\n\n"
          f"getSplits of BatchTextInputFormat and CombineTextInputFormat (its defaults, split.maxsize "
          f"{SPLIT_MAXSIZE >> 20} MiB for both), recursive input, each in its own JVM of -Xmx{HEAP}: "
          f"synthetic = {synthetic:,} files of synth:/// (1,000 a directory, 1 - 64 KiB, 3 replicas on 100 hosts "
          f"in 10 racks); local = {files:,} empty files on "
          f"{'a fresh ext4 image on a direct-I/O loop device' if root else 'a directory'}, {cache} cache. "
          f"Runs limited to {limit:.0f} s.\n\n{LEGEND}\n\n" + table(results["runs"]) + "\n")
    save()
    (outdir / "table.md").write_text(md)
    print("\n" + md, flush=True)
    print(f"results: {outdir}/results.json, table.md")
    bad = [r for r in results["runs"] if r["format"] == "bfo" and r.get("status") != "ok"]
    wrong = [r for r in results["runs"] if r.get("status") == "wrong"]
    if bad or wrong:
        print("BatchTextInputFormat failed or a plan was wrong: see the table", file=sys.stderr)
        return 1
    return 0
