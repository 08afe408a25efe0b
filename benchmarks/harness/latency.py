"""L1: Hadoop and Spark over 20,000 small text files on HDFS and S3 behind a link with real latency, and the
same jobs on the local disk.

    benchmarks/bench --scenario l1            (root: network namespace, TAP devices, drop_caches)

The bed (harness/link.py, harness/farstores.py): a network namespace behind delaybridge (frames held for the
one-way delay each way), in it an HDFS (a NameNode and two DataNodes, each its own JVM) and MinIO (S3); on this
side the jobs: Hadoop's local runner, a YARN minicluster (its default FS the HDFS over the link) and Spark
local[*]. The set (H1's generator: prose and code, 512 B - 16 KiB, 100 directories) is generated on the local
disk, copied into HDFS and S3 with FsShell -put -t 8 at zero delay (off the clock), then for each place in turn
(local; HDFS at each --l1-hdfs-rtt; S3 at each --l1-s3-rtt) the link's delay is set, its round trip checked
(link.check_rtt: fails the run when off by more than 20% + 0.1 ms), and every job runs --repeat times in
turn, each with cold caches (drop_caches empties the DataNodes' block files and MinIO's objects, then the
jobs' own jars are read back).

Jobs (each bfo against its incumbent, each at its users' defaults):
  mr-read / mr-wc      local runner: read-only job / WordCount, BatchTextInputFormat vs CombineTextInputFormat
  yarn-read / yarn-wc  the same on the YARN minicluster (the job jar, as `hadoop jar` runs it)
  spark-sumlen         Spark sum(length(content)): format("bfo") vs binaryFile
  spark-meta           metadata only (sum(length)): format("bfo") vs binaryFile
  spark-wc             word count over lines: format("bfo").option("format","text") vs spark.read.text

Checks: a run that fails, records or line bytes other than the generator's, WordCount outputs that differ
from each other (any format, runner or place), Spark results that differ between bfo and its baseline or
between places: the row is marked FAILED and bench exits 1.
"""

import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import farstores, hadoop, native, report, runner, spark, util
from .link import Link
from .workspace import WorkdirLock

FILES = 20_000
ROUNDS = 3
HDFS_RTT_MS = (0.5, 2.0)
S3_RTT_MS = (2.0, 10.0)
PROBE_FILES = 3
LOAD_THREADS = 16
JOBS = {   # name: (kind, job or query, bfo method, baseline method)
    "mr-read": ("mr", "read-only", "bfo", "combine"),
    "mr-wc": ("mr", "wordcount", "bfo", "combine"),
    "yarn-read": ("yarn", "read-only", "bfo", "combine"),
    "yarn-wc": ("yarn", "wordcount", "bfo", "combine"),
    "spark-sumlen": ("spark", "sumlen", "bfo", "binaryFile"),
    "spark-meta": ("spark", "metalen", "bfo", "binaryFile"),
    "spark-wc": ("spark", "wordcount", "bfo", "text"),
}
METHOD_NAMES = {"bfo": "bfo", "combine": "CombineTextInputFormat", "binaryFile": "binaryFile", "text": "text"}
TITLES = {"mr-read": "MapReduce read-only, local runner", "mr-wc": "WordCount, local runner",
          "yarn-read": "MapReduce read-only, YARN", "yarn-wc": "WordCount, YARN",
          "spark-sumlen": "Spark sum(length(content))", "spark-meta": "Spark metadata only",
          "spark-wc": "Spark word count"}


def run_l1(args):
    """The L1 scenario (benchmarks/bench --scenario l1). Returns the exit status."""
    return util.scenario_entry(_run_l1, args)


def _floats(arg, default):
    if not arg:
        return list(default)
    try:
        return [float(x) for x in arg.split(",") if x]
    except ValueError:
        raise RuntimeError(f"not a list of milliseconds: {arg}")


def _plan(args):
    """[(place, rtt_ms)] in the order they run."""
    where = set((args.l1_where or "local,hdfs,s3").split(","))
    bad = where - {"local", "hdfs", "s3"}
    if bad:
        raise RuntimeError(f"--l1-where takes local, hdfs, s3; not {', '.join(sorted(bad))}")
    places = [("local", None)] if "local" in where else []
    places += [("hdfs", r) for r in _floats(args.l1_hdfs_rtt, HDFS_RTT_MS)] if "hdfs" in where else []
    places += [("s3", r) for r in _floats(args.l1_s3_rtt, S3_RTT_MS)] if "s3" in where else []
    return places


def _jobs(args):
    names = (args.l1_jobs or ",".join(JOBS)).split(",")
    bad = [n for n in names if n not in JOBS]
    if bad:
        raise RuntimeError(f"--l1-jobs takes {', '.join(JOBS)}; not {', '.join(bad)}")
    return names


# --------------------------------------------------------------------------
# Builds and classpaths
# --------------------------------------------------------------------------
def _job_jar(snap):
    jars = sorted((hadoop.MODULE / "target").glob("bfo-hadoop-input-*-job.jar"))
    if not jars:
        raise RuntimeError("no hadoop-input/target/bfo-hadoop-input-*-job.jar: mvn -B -pl hadoop-input -am package")
    dst = snap / jars[0].name
    shutil.copy2(jars[0], dst)
    return dst


def _with_s3a(snap, s3a_cp):
    """A second launcher target: the snapshot's jar and classpath plus hadoop-aws and its SDK."""
    d = snap.parent / (snap.name + "-s3a")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    for j in snap.glob("bfo-hadoop-input-*.jar"):
        os.link(j, d / j.name)
    (d / "classpath.txt").write_text((snap / "classpath.txt").read_text().strip() + ":" + s3a_cp)
    return d


# --------------------------------------------------------------------------
# The runs
# --------------------------------------------------------------------------
class Bed:
    """Everything a run needs: snapshots, classpaths, the stores, the YARN cluster, the reference counts."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def server_pids(self):
        return (self.hdfs.server_pids() if self.hdfs else []) + (self.s3.server_pids() if self.s3 else [])


def _server_cpu(pids):
    total = 0.0
    for p in pids:
        try:
            total += _proc_cpu(p)
        except OSError:
            pass
    return total


def _proc_cpu(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _input(bed, place, part):
    if place == "local":
        return str(bed.local / part)
    if place == "hdfs":
        return f"{bed.hdfs.uri}/l1/{part}"
    return f"{bed.s3.uri}/l1/{part}"


def _mr_run(bed, place, kind, job, fmt, out_name):
    """One MapReduce job (local runner or YARN) through hadoop-input/bin/bfo-wordcount; a result dict."""
    out = bed.work / "out" / out_name
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    target = bed.snap_s3a if place == "s3" else bed.snap
    env = dict(os.environ, BFO_WORDCOUNT_TARGET=str(target))
    cmd = [hadoop.LAUNCHER]
    if kind == "yarn":
        cmd += ["-conf", bed.yarn.conf_file]
    settings = {"mapreduce.input.fileinputformat.input.dir.recursive": "true",
                "mapreduce.input.fileinputformat.split.maxsize": str(hadoop.SPLIT_MAXSIZE),
                "mapreduce.local.map.tasks.maximum": str(hadoop.MAP_SLOTS),
                "hadoop.tmp.dir": str(bed.work / "hadoop-tmp"),
                "mapreduce.jobtracker.staging.root.dir": str(bed.work / "hadoop-tmp" / "staging")}
    if kind == "yarn":
        settings.update(bed.yarn_conf)
    if place == "s3":
        settings.update(bed.s3.hadoop_conf())
    for k, v in settings.items():
        cmd += ["-D", f"{k}={v}"]
    cmd += ["--input-format", fmt]
    inp = _input(bed, place, "all")
    cmd += ["--read-only", inp] if job == "read-only" else [inp, f"file://{out}"]
    hadoop._cold(bed.root, bed.warm_files)
    cpu0 = _server_cpu(bed.server_pids())
    r = util.run(cmd, timeout=bed.timeout, env=env)
    res = {"process_seconds": r.seconds, "exit": r.returncode, "server_cpu_seconds": _server_cpu(bed.server_pids()) - cpu0,
           "command": " ".join(map(str, cmd)).replace(bed.s3.secret if bed.s3 else "\0", "SECRET")}
    job_s, submit_s, run_s, counters = hadoop._parse(r.stdout or "")
    res.update(seconds=job_s, submit_seconds=submit_s, run_seconds=run_s,
               engines=counters.get("BFO engine (files)", {}))
    problems = []
    ref = bed.ref
    if not r.ok:
        problems.append(f"exit {r.returncode}: " + " | ".join((r.stderr or "").strip().splitlines()[-3:]))
    else:
        records = hadoop._find(counters, "Map input records")
        if records != ref["records"]:
            problems.append(f"{records} records, expected {ref['records']}")
        if job == "read-only":
            lb = hadoop._find(counters, "LINE_BYTES")
            if lb != ref["line_bytes"]:
                problems.append(f"{lb} line bytes, expected {ref['line_bytes']}")
        else:
            digest, lines, total = hadoop._output_digest(out)
            res.update(output_sha256=digest, output_lines=lines, output_words=total)
            if total != ref["words"]:
                problems.append(f"{total} words counted, expected {ref['words']}")
    shutil.rmtree(out, ignore_errors=True)
    res["result"] = res.get("output_sha256") or (None if problems else "records and line bytes as generated")
    res["problems"] = problems
    return res


class SparkSide:
    """One Spark driver JVM (L1Bench, local[*]) for one side of a place: it warms up on the probe directory
    every query it will run, then runs each timed query when told, after the harness dropped the caches."""

    MAIN = "io.github.bfo.spark.L1Bench"

    def __init__(self, bed, place, side, queries):
        self.bed, self.place, self.side = bed, place, side
        cmd = [util.which("java"), f"-Xmx{bed.spark_heap}", *spark.JVM_FLAGS, "-cp",
               bed.spark_cp_s3a if place == "s3" else bed.spark_cp]
        if place == "s3":
            cmd += [f"-Dspark.hadoop.{k}={v}" for k, v in bed.s3.hadoop_conf().items()]
        self.cmd = cmd + [self.MAIN]
        self.log = open(bed.outdir / f"spark-{place}-{side}.log", "ab")
        self.p = util.popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                            bufsize=1)
        self._expect("STARTED", 600)
        for method, query in queries:
            self.p.stdin.write(f"WARM {method} {query} {_input(bed, place, 'probe')}\n")
            self.p.stdin.flush()
            line = self._expect(None, 600)
            if line != "READY":
                raise RuntimeError(f"Spark {side} on {place}: warm-up of {query} with {method}: {line}")

    def _expect(self, want, timeout):
        """The driver's next line that is ours (READY, STARTED or JSON); raises when it ends first."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.p.stdout], [], [], max(0, left))
            if not ready:
                raise RuntimeError(f"Spark driver ({self.side} on {self.place}): no answer in {timeout} s")
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"Spark driver ({self.side} on {self.place}) exited "
                                   f"({self.p.wait()}; see {self.log.name})")
            line = line.strip()
            if line in ("STARTED", "READY") or line.startswith("{"):
                if want and line != want:
                    raise RuntimeError(f"Spark driver: {line!r}, expected {want}")
                return line

    def run(self, method, query):
        bed = self.bed
        runner.cold(bed.root)
        cpu0 = _server_cpu(bed.server_pids())
        t0 = time.monotonic()
        self.p.stdin.write(f"RUN {method} {query} {_input(bed, self.place, 'all')}\n")
        self.p.stdin.flush()
        try:
            js = json.loads(self._expect(None, bed.timeout))
        except (RuntimeError, ValueError) as e:
            js = {"error": str(e)}
        r = dict(js, process_seconds=time.monotonic() - t0, server_cpu_seconds=_server_cpu(bed.server_pids()) - cpu0)
        r["problems"] = [js["error"]] if "error" in js else []
        if not r["problems"] and query in ("sumlen", "metalen"):
            want = f"{bed.ref['files']} files, {bed.ref['bytes']} bytes"
            if r.get("result") != want:
                r["problems"].append(f"result {r.get('result')!r}, expected {want!r}")
        return r

    def close(self):
        if self.p and self.p.poll() is None:
            try:
                self.p.stdin.write("QUIT\n")
                self.p.stdin.flush()
                self.p.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                util._kill_group(self.p)
                self.p.wait()
        if self.p:
            util.forget(self.p)
            self.p = None
        self.log.close()


def _one(bed, place, rtt, name, side, rnd):
    kind, job, bfo_m, base_m = JOBS[name]
    method = bfo_m if side == "bfo" else base_m
    util.log(f"L1 [{rnd + 1}/{bed.rounds}] {place}{'' if rtt is None else f' {rtt:g} ms'} {name}: "
             f"{METHOD_NAMES[method]}")
    if kind == "spark":
        r = bed.spark[side].run(method, job)
    else:
        r = _mr_run(bed, place, kind, job, method, f"{place}-{name}-{method}")
    r.update(place=place, rtt_ms=rtt, job=name, side=side, method=method, round=rnd)
    if bed.link_problem:
        r["problems"].append(bed.link_problem)
    secs = r.get("seconds")
    util.log(f"  {'-' if secs is None else f'{secs:.2f}'} s" + (f"  PROBLEMS: {'; '.join(r['problems'])}"
                                                               if r["problems"] else ""))
    return r


# --------------------------------------------------------------------------
# Loading and the bed
# --------------------------------------------------------------------------
def _fsshell(bed, conf_dir, extra_cp, args, log, timeout=3600):
    cp = ":".join(x for x in [str(conf_dir), farstores.cluster_classpath(), extra_cp] if x)
    return util.run(["java", "-Xmx1g", *farstores.java_opts(), "-cp", cp, "org.apache.hadoop.fs.FsShell", *args],
                    capture=False, stdout=log, stderr=log, timeout=timeout)


def _load(bed, place, log):
    """The set and the probe into the store, off the clock (at zero delay): FsShell -put -d -t 16 (HDFS; the probe on
    S3), plain PUTs for the set on S3 (farstores.s3_put_tree); then S3A or HDFS lists what it holds."""
    t0 = time.monotonic()
    if place == "hdfs":
        base, conf, extra = bed.hdfs.uri, bed.hdfs.client_conf, ""
        sets = [f"{k}={v}" for k, v in farstores.LOAD_CONF.items()]
    else:
        base, conf, extra = bed.s3.uri, bed.s3.client_conf, bed.s3a_cp
        sets = [f"{k}={v}" for k, v in bed.s3.hadoop_conf().items()]
    gen = [x for kv in sets for x in ("-D", kv)]
    for part in ("all", "probe"):
        if place == "s3" and part == "all":
            bed.s3.put_tree(bed.local / part, f"l1/{part}")     # see farstores.s3_put_tree
            continue
        # HDFS, and S3A's own writing checked on the probe
        r = _fsshell(bed, conf, extra, gen + ["-mkdir", "-p", f"{base}/l1"], log)
        # -d: no <file>._COPYING_ and rename per file (a load parameter, as the threads)
        r = r if not r.ok else _fsshell(bed, conf, extra, gen + ["-put", "-d", "-t", str(LOAD_THREADS),
                                                                   str(bed.local / part), f"{base}/l1/{part}"], log)
        if not r.ok:
            raise RuntimeError(f"copying the set into {place} failed (exit {r.returncode}, see {log.name})")
    # what a client lists there: the same number of files and bytes as generated
    r = util.run(["java", "-Xmx512m", *farstores.java_opts(), "-cp",
                  ":".join(x for x in [str(conf), farstores.cluster_classpath(), extra] if x),
                  "org.apache.hadoop.fs.FsShell", *gen, "-count", f"{base}/l1/all"], timeout=600)
    lines = [ln for ln in (r.stdout or "").splitlines() if ln.strip().endswith("/l1/all")]
    fields = lines[-1].split() if lines else []
    if not r.ok or len(fields) < 3 or fields[1] != str(bed.ref["files"]) or fields[2] != str(bed.ref["bytes"]):
        raise RuntimeError(f"{place} holds {fields[1:3] if len(fields) >= 3 else r.stderr[-300:]} files/bytes "
                           f"after the copy, not {bed.ref['files']} / {bed.ref['bytes']}")
    return time.monotonic() - t0


def _check_link(link, place, tries=3):
    """The link's round trip, checked (link.check_rtt) up to `tries` times: a busy moment of a shared machine
    should not throw away a long run, a link that does not give its delay must fail it. Returns the record."""
    for attempt in range(1, tries + 1):
        r = dict(link.check_rtt(strict=False), place=place, attempt=attempt)
        if r["ok"]:
            return r
        util.warn(f"the link's round trip is off (attempt {attempt} of {tries})")
        time.sleep(2)
    return r


def _probe_copy(local):
    """The probe directory (class loading and code generation off the clock): the first files of the set."""
    src = sorted((local / "all").glob("d000/*.txt"))[:PROBE_FILES]
    (local / "probe").mkdir()
    for p in src:
        shutil.copy2(p, local / "probe" / p.name)


def _yarn_conf(bed, s3a_cp):
    """What a client of the YARN cluster sets besides the cluster's own configuration (-conf FILE): the job runs
    on YARN from the job jar (bfo inside, as `hadoop jar` ships it), containers get the Hadoop installation's
    classpath (not the minicluster's "propagate the client's classpath", which would hand them bfo from the
    client), plus hadoop-aws for the S3 rows, and the --add-opens Hadoop needs on Java 17."""
    opts = " ".join(farstores.java_opts())
    cp = farstores.cluster_classpath().split(":") + [j for j in s3a_cp.split(":") if j]
    return {"mapreduce.framework.name": "yarn", "yarn.is.minicluster": "false",
            "mapreduce.job.jar": str(bed.job_jar), "mapreduce.application.classpath": ",".join(cp),
            "yarn.app.mapreduce.am.command-opts": opts, "mapreduce.map.java.opts": opts,
            "mapreduce.reduce.java.opts": opts}


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------
def _merge(runs):
    ok = [r for r in runs if not r["problems"] and r.get("seconds")]
    secs = [r["seconds"] for r in ok]
    st = util.summarize(secs)
    return {"median": st["median"], "min": st["min"], "max": st["max"], "n": len(runs), "ok": len(ok) == len(runs),
            "server_cpu": statistics.median([r.get("server_cpu_seconds") or 0 for r in runs]) if runs else None,
            "problems": sorted({p for r in runs for p in r["problems"]}),
            "results": sorted({str(r.get("result")) for r in runs})}


def summarize(results):
    """{(place, rtt, job, side): merged} and the verification across places."""
    cells = {}
    for r in results["runs"]:
        cells.setdefault((r["place"], r["rtt_ms"], r["job"], r["side"]), []).append(r)
    merged = {k: _merge(v) for k, v in cells.items()}
    # the same answer from bfo and its baseline, in every place: one result per job
    for name in JOBS:
        keys = [k for k in merged if k[2] == name]
        answers = {a for k in keys for a in merged[k]["results"]}
        if len(answers) > 1:
            for k in keys:
                merged[k]["problems"] = merged[k]["problems"] + [f"results differ: {sorted(answers)}"]
                merged[k]["ok"] = False
    return merged


def _fmt(m):
    if m is None:
        return "-"
    if not m["ok"] or m["median"] is None:
        return "FAILED"
    spread = f" ({m['min']:.1f}-{m['max']:.1f})" if m["n"] > 1 else ""
    return f"{m['median']:.2f}{spread}"


def tables(results, merged):
    places = list(dict.fromkeys((r["place"], r["rtt_ms"]) for r in results["runs"]))
    rows = []
    for name in JOBS:
        local = merged.get(("local", None, name, "bfo"))
        local_base = merged.get(("local", None, name, "base"))
        for place, rtt in places:
            b, c = merged.get((place, rtt, name, "bfo")), merged.get((place, rtt, name, "base"))
            if not b and not c:
                continue
            ratio = c["median"] / b["median"] if b and c and b["ok"] and c["ok"] and b["median"] else None
            vs_local = (b["median"] / local["median"] if place != "local" and b and local and b["ok"] and local["ok"]
                        else None)
            base_local = (c["median"] / local_base["median"] if place != "local" and c and local_base and c["ok"]
                          and local_base["ok"] else None)
            ok = (b is None or b["ok"]) and (c is None or c["ok"])
            probs = sorted(set((b or {}).get("problems", []) + (c or {}).get("problems", [])))
            base_m = METHOD_NAMES[JOBS[name][3]]
            rows.append([TITLES[name], place if rtt is None else f"{place} {rtt:g} ms", _fmt(b), f"{base_m} {_fmt(c)}",
                         f"{ratio:.1f}x" if ratio else "-", f"{vs_local:.2f}x" if vs_local else "-",
                         f"{base_local:.2f}x" if base_local else "-",
                         "yes" if ok else "NO: " + "; ".join(probs)[:300]])
    main = util.md_table(["job", "where (RTT)", "bfo s", "baseline s", "speed-up", "bfo vs local",
                          "baseline vs local", "verified"], rows, align=["l", "l"] + ["r"] * 5 + ["l"])
    # growth from the lower to the higher round trip, per store
    grow = []
    for store in ("hdfs", "s3"):
        rtts = sorted({rtt for p, rtt in places if p == store})
        if len(rtts) < 2:
            continue
        lo, hi = rtts[0], rtts[-1]
        for name in JOBS:
            g = {}
            for side in ("bfo", "base"):
                a, z = merged.get((store, lo, name, side)), merged.get((store, hi, name, side))
                g[side] = (z["median"] - a["median"]) if a and z and a["ok"] and z["ok"] else None
            if g["bfo"] is None or g["base"] is None:
                continue
            frac = g["bfo"] / g["base"] if g["base"] > 0 else None
            grow.append([TITLES[name], f"{store} {lo:g} -> {hi:g} ms", f"{g['bfo']:+.2f}", f"{g['base']:+.2f}",
                         f"{frac:.2f}" if frac is not None else "-",
                         "-" if frac is None else "yes" if frac < 0.25 else "no"])
    growth = util.md_table(["job", "round trip", "bfo growth s", "baseline growth s", "bfo / baseline growth",
                            "< 1/4"], grow, align=["l", "l"] + ["r"] * 4) if grow else ""
    return main, growth


# --------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------
def _run_l1(args):
    if not util.is_root():
        raise RuntimeError("L1 needs root (a network namespace, TAP devices, drop_caches)")
    t_start = time.monotonic()
    files = args.files or FILES
    rounds = max(1, args.repeat or ROUNDS)
    # the incumbents' time is mostly round trips paid in turn (little spread, most of the scenario's time)
    base_rounds = min(rounds, max(1, args.l1_base_repeat or rounds))
    plan = _plan(args)
    jobs = _jobs(args)
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {"kind": "latency", "scenario": "l1", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": list(sys.argv), "cache": "cold", "files": files, "rounds": rounds,
               "baseline_rounds": base_rounds, "jobs": jobs,
               "plan": plan, "runs": [], "links": [], "complete": False}
    need_s3 = any(p == "s3" for p, _ in plan)
    need_far = any(p != "local" for p, _ in plan)
    need_yarn = any(JOBS[j][0] == "yarn" for j in jobs) and need_far
    with WorkdirLock(workdir):
        outdir = report.results_dir(args.results_dir, workdir, suffix="-l1")
        util.log(f"results: {outdir}")
        helpers = native.Helpers(workdir / "bin")
        bridge, err = helpers._compile("delaybridge", [], [])
        if not bridge:
            raise RuntimeError("cannot compile benchmarks/harness/delaybridge.c:\n" + err)
        snap, program_files = hadoop._build(workdir, args.no_build)
        work = workdir / f"l1-{os.getpid()}"
        bed = Bed(root=True, rounds=rounds, timeout=args.timeout, work=work, snap=snap, local=work / "local",
                  hdfs=None, s3=None, yarn=None, spark={}, outdir=outdir, link_problem=None, snap_s3a=None,
                  spark_heap=os.environ.get("BFO_S1_HEAP", "2g"))
        try:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            bed.job_jar = _job_jar(snap)
            bed.warm_files = program_files + hadoop._java_files() + [bed.job_jar]
            bed.s3a_cp, s3a_bytes = farstores.s3a_classpath(workdir) if need_s3 else ("", 0)
            results["s3a_jars"] = {"classpath": bed.s3a_cp, "bytes": s3a_bytes}
            bed.snap_s3a = _with_s3a(snap, bed.s3a_cp) if need_s3 else snap
            if any(JOBS[j][0] == "spark" for j in jobs):
                bed.spark_cp = spark.classpath(workdir)
                bed.spark_cp_s3a = bed.spark_cp + ":" + bed.s3a_cp
            minio = None
            if need_s3:
                minio, built = farstores.minio_binary(workdir, args.no_build)
                results["minio"] = {"binary": str(minio), "bytes": minio.stat().st_size, "build": built}
            util.log(f"generating {files:,} text files in {bed.local}")
            ref, secs = hadoop.generate(bed.local, files, 0)
            bed.ref = ref["all"]
            _probe_copy(bed.local)
            results.update(reference=bed.ref, generate_seconds=secs)
            util.log(f"  {bed.ref['bytes'] / 1e6:,.1f} MB, {bed.ref['records']:,} lines, {bed.ref['words']:,} words "
                     f"in {secs:.0f} s")
            with Link(bridge, 0.0, rate=args.l1_rate) as link, open(outdir / "servers.log", "ab") as slog:
                results["link"] = link.info
                if need_far:
                    results["links"].append(_check_link(link, "start"))
                    if any(p == "hdfs" for p, _ in plan) or need_yarn:     # (YARN's default file system)
                        bed.hdfs = farstores.FarHdfs(link, work / "hdfs", 2, log_dir=outdir).start()
                    if any(p == "hdfs" for p, _ in plan):
                        results["load_hdfs_seconds"] = _load(bed, "hdfs", slog)
                        util.log(f"  HDFS loaded in {results['load_hdfs_seconds']:.0f} s")
                    if need_s3:
                        bed.s3 = farstores.FarS3(link, work / "s3", minio, log_dir=outdir).start()
                        results["minio"]["version"] = bed.s3.version
                        results["load_s3_seconds"] = _load(bed, "s3", slog)
                        util.log(f"  S3 loaded in {results['load_s3_seconds']:.0f} s")
                    if need_yarn:
                        bed.yarn = farstores.Yarn(work / "yarn", bed.hdfs.uri, outdir).start()
                        bed.yarn_conf = _yarn_conf(bed, bed.s3a_cp)
                for place, rtt in plan:
                    bed.link_problem = None
                    if place != "local":
                        link.set_delay(rtt / 2e3)
                        lk = _check_link(link, place)
                        results["links"].append(lk)
                        if not lk["ok"]:
                            bed.link_problem = (f"link check failed: round trip {lk['rtt_median_ms']:.3f} ms, "
                                                f"set {lk['rtt_set_ms']:g} ms")
                    # YARN needs the HDFS (its default file system): not in a local-only run
                    run_jobs = [j for j in jobs if JOBS[j][0] != "yarn" or bed.yarn]
                    sparks = [j for j in run_jobs if JOBS[j][0] == "spark"]
                    try:
                        # a driver JVM per side, warmed up on the probe, for all of the place's Spark queries
                        bed.spark = {side: SparkSide(bed, place, side, [(JOBS[j][2 if side == "bfo" else 3],
                                                                         JOBS[j][1]) for j in sparks])
                                     for side in ("bfo", "base")} if sparks else {}
                        for rnd in range(rounds):
                            for name in run_jobs:
                                for side in ("bfo", "base"):
                                    if side == "base" and rnd >= base_rounds:
                                        continue
                                    results["runs"].append(_one(bed, place, rtt, name, side, rnd))
                                    (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
                    finally:
                        for sp in bed.spark.values():
                            sp.close()
                        bed.spark = {}
                    if place != "local":
                        results["links"][-1]["bridge"] = link.stats()
                link.set_delay(0.0)
        finally:
            with util.cleaning():
                for s in (bed.yarn, bed.s3, bed.hdfs):
                    if s:
                        s.close()
                shutil.rmtree(work, ignore_errors=True)
                shutil.rmtree(snap, ignore_errors=True)
                if bed.snap_s3a:
                    shutil.rmtree(bed.snap_s3a, ignore_errors=True)
    merged = summarize(results)
    failed = any(not m["ok"] for m in merged.values())
    main, growth = tables(results, merged)
    results["complete"] = True
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    results["total_seconds"] = time.monotonic() - t_start
    results["machine"] = runner.machine_info(workdir)
    results["merged"] = [dict(zip(("place", "rtt_ms", "job", "side"), k), **v) for k, v in merged.items()]
    results["titles"] = TITLES
    results["method_names"] = {j: {"bfo": "bfo", "base": METHOD_NAMES[JOBS[j][3]]} for j in JOBS}
    links = "; ".join(f"{lk['place']} set {lk['rtt_set_ms']:g} ms: {lk['rtt_median_ms']:.3f} ms"
                      + ("" if lk["ok"] else " (OFF)") for lk in results["links"] if lk["place"] != "start")
    md = (f"# BFO L1 benchmark (Hadoop and Spark on HDFS and S3 behind a link with latency), {results['started']}\n\n"
          f"{files:,} small text files ({bed.ref['bytes'] / 1e6:,.1f} MB); HDFS: a NameNode and 2 DataNodes, each "
          f"a JVM, in a network namespace; S3: MinIO there; the jobs on this side (local runner, YARN minicluster, "
          f"Spark local[*]); cold caches on both sides before every run; median (min-max) of {rounds} rounds"
          + (f" ({base_rounds} for the incumbents)" if base_rounds != rounds else "") + "; "
          f"every method at its defaults. Link round trips measured (ICMP, median): {links}. Whole scenario: "
          f"{results['total_seconds'] / 60:.1f} min.\n\n" + main + "\n"
          + (f"\nGrowth from the lower to the higher round trip (target: bfo's under a quarter of the baseline's):"
             f"\n\n{growth}\n" if growth else ""))
    (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (outdir / "table.md").write_text(md)
    print("\n" + md, flush=True)
    report.chart(outdir / "results.json", outdir / "chart.png")
    print(f"results: {outdir}/results.json, table.md")
    if failed:
        print("SOME RUNS FAILED OR GAVE WRONG RESULTS: see the verified column", file=sys.stderr)
        return 1
    return 0
