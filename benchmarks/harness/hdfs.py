"""H2: MapReduce over many small text files on HDFS, BatchTextInputFormat
(its FileSystem-API path: bfo.read.fs.threads files read ahead per split)
against CombineTextInputFormat, both at their defaults and the same split
size, on Hadoop's embedded local runner (hadoop-input/bin/bfo-wordcount).

The HDFS: Hadoop's own command-line minicluster (MiniHadoopClusterManager
-nomr: a NameNode and one DataNode in a JVM of their own, storage under the
workdir), started once; the set (H1's generator, --files, default 20,000)
is copied in with FsShell -put, off the clock. As root every job runs with a
cold cache (drop_caches empties the DataNode's block files from the page
cache; the NameNode keeps its namespace in memory, as a running NameNode
does). Jobs and checks as H1's: the read-only job and WordCount, records,
line bytes and words against the generator's count, WordCount outputs
identical across formats. --repeat N (default 3) runs every job N times in
turn; the table shows medians. --sweep-fs-threads 1,2,4,8,16 adds rows of
the read-only job with BatchTextInputFormat at each bfo.read.fs.threads (the
files read at once per split), the measurement behind its default.
A second table gives the CPU seconds each job cost its own JVM and the HDFS
JVM: on a machine of few cores the NameNode's and DataNode's share bounds the
speed-up any input format can reach.
"""

import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import hadoop, report, runner, util
from .workspace import WorkdirLock

FILES = 20_000
ROUNDS = 3
JOBS = [("read-only", "read-only", "bfo"), ("read-only", "read-only", "combine"),
        ("wordcount", "wordcount", "bfo"), ("wordcount", "wordcount", "combine")]
TARGET = 2.0
MANAGER = "org.apache.hadoop.mapreduce.MiniHadoopClusterManager"


def run_h2(args):
    """The H2 scenario (benchmarks/bench --scenario h2). Returns the exit status."""
    return util.scenario_entry(_run_h2, args)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _java_opts():
    opens = []
    for p in ("java.lang", "java.util", "java.nio", "sun.nio.ch", "java.lang.reflect", "java.io", "java.net",
              "java.util.concurrent"):
        opens += ["--add-opens", f"java.base/{p}=ALL-UNNAMED"]
    return opens


def _start_hdfs(work, log):
    """MiniHadoopClusterManager with HDFS only; returns (process, hdfs:// URI)."""
    cp_file = hadoop.MODULE / "target" / "cluster-classpath.txt"
    if not cp_file.is_file():
        raise RuntimeError(f"no {cp_file}: mvn -B -pl hadoop-input -am package -DskipTests")
    conf = work / "conf" / "core-site.xml"     # also FsShell's configuration (it insists on a core-site.xml)
    conf.parent.mkdir()
    port = _free_port()
    cmd = (["java", "-Xmx2g"] + _java_opts() + ["-Djava.net.preferIPv4Stack=true", "-cp", cp_file.read_text().strip(),
                                              MANAGER, "-nomr", "-format", "-datanodes", "1", "-nnport", str(port),
                                              "-writeConfig", str(conf),
                                              "-D", f"hdfs.minidfs.basedir={work / 'dfs'}"])
    p = util.popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    deadline = time.monotonic() + 300
    # the manager writes the file (not atomically) once the NameNode and DataNode are up: wait for its end
    while not (conf.is_file() and (text := conf.read_text()).rstrip().endswith("</configuration>")):
        if p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the HDFS did not start (see {log.name})")
        time.sleep(0.5)
    m = re.search(r"<name>fs.defaultFS</name>\s*<value>([^<]+)</value>", text)
    uri = m.group(1) if m and m.group(1).startswith("hdfs://") else f"hdfs://127.0.0.1:{port}"
    return p, uri


def _stop(p):
    if p and p.poll() is None:
        util._kill_group(p, 15)
        try:
            p.wait(timeout=60)
        except Exception:
            util._kill_group(p)
            p.wait()
    if p:
        util.forget(p)


def _load(snap, conf_dir, local, uri, log):
    """FsShell -put with 8 threads, off the clock (a small file's close waits for the DataNode's report: HDFS
    retries it from 400 ms unless told to start sooner; load parameters, not benchmark ones)."""
    cp = ":".join([str(conf_dir), str(next(snap.glob("bfo-hadoop-input-*.jar"))),
                   (snap / "classpath.txt").read_text().strip()])
    t0 = time.monotonic()
    r = util.run(["java", "-Xmx1g"] + _java_opts() + ["-cp", cp, "org.apache.hadoop.fs.FsShell",
                                                       "-D", "dfs.client.block.write.locateFollowingBlock.initial"
                                                             ".delay.ms=10",
                                                       "-put", "-t", "8", str(local), f"{uri}/h2"],
                 capture=False, stdout=log, stderr=log, timeout=7200)
    if not r.ok:
        raise RuntimeError(f"copying the set into HDFS failed (exit {r.returncode}, see {log.name})")
    return time.monotonic() - t0


def _cpu_seconds(pid):
    """User + system CPU seconds of process pid (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _cpu_table(medians):
    """Where the CPU went: the job's JVM (client: split planning, reads, map, the local runner) against the
    HDFS JVM (NameNode and DataNode). The machine has few cores, so this bounds what a faster client can win:
    the job cannot take less than the HDFS side's CPU divided by the cores."""
    rows = []
    for r in medians:
        c, h = r.get("client_cpu_seconds"), r.get("hdfs_cpu_seconds")
        rows.append([r["key"], r.get("label") or hadoop.FORMAT_NAMES[r["format"]], hadoop._fmt(r.get("seconds")),
                     hadoop._fmt(c), hadoop._fmt(h), hadoop._fmt(c + h) if c is not None and h is not None else "-",
                     f"{1e3 * h / r['files']:.2f}" if h is not None else "-"])
    return util.md_table(["job", "input format", "job s", "client CPU s", "HDFS CPU s", "total CPU s",
                          "HDFS CPU ms/file"], rows, align=["l", "l"] + ["r"] * 5)


def _sweep(args):
    if not args.sweep_fs_threads:
        return []
    try:
        return [int(n) for n in args.sweep_fs_threads.split(",")]
    except ValueError:
        raise RuntimeError(f"--sweep-fs-threads takes numbers: {args.sweep_fs_threads}")


def _median_row(runs):
    ok = [r for r in runs if not r["problems"] and r.get("seconds")]
    pick = lambda k: statistics.median([r[k] for r in ok if r.get(k) is not None]) if ok else None   # noqa: E731
    out = dict(runs[0])
    out.update(seconds=pick("seconds"), submit_seconds=pick("submit_seconds"), run_seconds=pick("run_seconds"),
               process_seconds=pick("process_seconds") or 0.0, client_cpu_seconds=pick("client_cpu_seconds"),
               hdfs_cpu_seconds=pick("hdfs_cpu_seconds"), all_seconds=[r.get("seconds") for r in runs],
               problems=sorted({p for r in runs for p in r["problems"]}))
    return out


def _run_h2(args):
    root = util.is_root()
    files = args.files or FILES
    rounds = max(1, args.repeat or ROUNDS)
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {"kind": "bench", "scenario": "h2", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": list(sys.argv), "cache": "cold" if root else "warm", "files": files, "rounds": rounds,
               "split_maxsize": hadoop.SPLIT_MAXSIZE, "runs": [], "complete": False}
    with WorkdirLock(workdir):
        snap, program_files = hadoop._build(workdir, args.no_build)
        warm = program_files + hadoop._java_files()
        outdir = report.results_dir(args.results_dir, workdir, suffix="-h2")
        util.log(f"results: {outdir}")
        work = workdir / f"h2-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        (work / "local").mkdir(parents=True)
        cluster = None
        try:
            util.log(f"generating {files:,} text files in {work / 'local'}")
            ref, secs = hadoop.generate(work / "local", files, 0)
            ref = ref["all"]
            with open(outdir / "hdfs.log", "w") as log:   # kept with the results
                cluster, uri = _start_hdfs(work, log)
                util.log(f"HDFS at {uri} (pid {cluster.pid}); copying the set in")
                results["load_seconds"] = _load(snap, work / "conf", work / "local" / "all", uri, log)
                util.log(f"  loaded in {results['load_seconds']:.0f} s")
                shutil.rmtree(work / "local")
                jobs = [(k, j, f, ()) for k, j, f in JOBS]
                jobs += [(f"read-only, fs.threads={n}", "read-only", "bfo", (f"bfo.read.fs.threads={n}",))
                         for n in _sweep(args)]
                for rnd in range(rounds):
                    for key, job, fmt, settings in jobs:
                        util.log(f"H2 [{rnd + 1}/{rounds}] {key}: {hadoop.FORMAT_NAMES[fmt]} on hdfs, "
                                 f"{results['cache']} cache")
                        cpu0 = (_children_cpu(), _cpu_seconds(cluster.pid))
                        r = hadoop._run_job(snap=snap, job=job, fmt=fmt, inp=f"{uri}/h2", out=work / f"out-{key}-{fmt}",
                                            ref=ref, root=root, warm_files=warm, timeout=args.timeout,
                                            tmp=work / "hadoop-tmp", settings=settings)
                        r.update(key=key, job=job, part="all", files=files, user=None, round=rnd,
                                 client_cpu_seconds=_children_cpu() - cpu0[0],
                                 hdfs_cpu_seconds=_cpu_seconds(cluster.pid) - cpu0[1])
                        util.log(f"  job {hadoop._fmt(r['seconds'])} s (submit {hadoop._fmt(r['submit_seconds'])} s,"
                                 f" run {hadoop._fmt(r['run_seconds'])} s)"
                                 + ("" if not r["problems"] else "  PROBLEMS: " + "; ".join(r["problems"])))
                        results["runs"].append(r)
                        (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
        finally:
            with util.cleaning():
                _stop(cluster)
                shutil.rmtree(work, ignore_errors=True)
                shutil.rmtree(snap, ignore_errors=True)
    digests = {r.get("output_sha256") for r in results["runs"] if r["key"] == "wordcount"}
    if len(digests) != 1 or None in digests:
        for r in results["runs"]:
            if r["key"] == "wordcount":
                r["problems"].append("WordCount outputs differ between formats or rounds")
    keys = dict.fromkeys((r["key"], r["format"]) for r in results["runs"])
    medians = [_median_row([r for r in results["runs"] if (r["key"], r["format"]) == k]) for k in keys]
    for r in medians:     # a sweep row sits with the read-only job and its baseline
        if r["key"].startswith("read-only, "):
            r["label"] = "BatchTextInputFormat, " + r["key"].split(", ", 1)[1]
            r["key"] = "read-only"
    failed = any(r["problems"] for r in results["runs"])
    results["complete"] = True
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    results["machine"] = runner.machine_info(workdir)
    md = (f"# BFO H2 benchmark (MapReduce on HDFS, local runner), {results['started']}\n\n"
          f"{files:,} small text files ({ref['bytes'] / 1e6:,.1f} MB) in a MiniDFSCluster (one DataNode), "
          f"{results['cache']} cache, median of {rounds} rounds; split size {hadoop.SPLIT_MAXSIZE >> 20} MiB for "
          f"both formats, {hadoop.MAP_SLOTS} map slots, every other setting at its default. Target: "
          f"BatchTextInputFormat at least {TARGET:.0f}x CombineTextInputFormat.\n\n"
          + hadoop.table({"runs": medians}) + "\n\nCPU seconds (medians) of the job's JVM and of the HDFS JVM:\n\n"
          + _cpu_table(medians) + "\n")
    return hadoop.finish(outdir, results, md, failed)
