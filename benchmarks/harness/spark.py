"""Benchmark S1: Spark over many small files, `bfo` against binaryFile and text.

On the 4k set (100,000 x 4 KiB by default; --files N to scale), each query
runs in its own JVM (io.github.bfo.spark.S1Bench from spark-source's test
classes, local[*]): the query first runs on the 3-file probe directory (class
loading and code generation off the clock), then the harness drops the caches
(root) and the query runs once on the set, timed inside the JVM. --repeat N (default
3) runs the whole list N times in turn and reports medians with min-max.

  count      spark.read.format(M).load(DIR).count()             bfo vs binaryFile
  sumlen     sum(length(content))                               bfo vs binaryFile
  metalen    sum(length): metadata only, no content column      bfo vs binaryFile
  wordcount  split/explode/groupBy word count over lines        bfo format=text vs text

sumlen and metalen run again with the set copied into HDFS (a MiniDFSCluster
with one DataNode in the query's JVM, its storage under the workdir, loaded
by the first HDFS run off the clock); the cache drop empties the DataNode's
block files, the NameNode keeps its metadata in memory as a running one does.

Every method runs at Spark's own defaults (openCostInBytes 4 MiB,
maxPartitionBytes 128 MiB: what a user gets; bfo then packs by its own cost
model), and results must be equal (count; files and bytes; distinct words,
words and a checksum) or the method is FAILED.  BFO_S1_SPARK_CONF (k=v,...)
runs every method with those settings instead: the table is then titled
TUNED, never to be read as users' figures.
"""

import json
import os
import subprocess
import time
from pathlib import Path

from . import native, runner, sets, util

SPARK_DIR = native.REPO / "spark-source"
MAIN = "io.github.bfo.spark.S1Bench"
# What Spark 4 needs on Java 17 (the same list as spark-source/pom.xml's surefire argLine).
JVM_FLAGS = ["-XX:+IgnoreUnrecognizedVMOptions"] + [
    f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
        "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref", "sun.nio.ch", "sun.nio.cs",
        "sun.security.action", "sun.util.calendar")] + [
    "-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true"]

# (query, method, where) run, in order; and the comparisons reported. where: "local" (the set on its file
# system), "hdfs" (the set copied into an HDFS in the query's JVM: S1Bench -Dbfo.s1.hdfs) or "cluster"
# (local-cluster[2,1,1024]: two executors in JVMs of their own, Spark's jars from a Spark home made here,
# bfo from the bundle jar through spark.jars, as a user runs it)
RUNS = [("count", "bfo", "local"), ("count", "binaryFile", "local"), ("sumlen", "bfo", "local"),
        ("sumlen", "binaryFile", "local"), ("metalen", "bfo", "local"), ("metalen", "binaryFile", "local"),
        ("wordcount", "bfo", "local"), ("wordcount", "text", "local"),
        ("sumlen", "bfo", "hdfs"), ("sumlen", "binaryFile", "hdfs"), ("metalen", "bfo", "hdfs"),
        ("metalen", "binaryFile", "hdfs"), ("sumlen", "bfo", "cluster"), ("sumlen", "binaryFile", "cluster"),
        ("sumlen", "bfo", "nobody"), ("sumlen", "binaryFile", "nobody")]
COMPARE = [
    ("count()", ("count", "bfo", "local"), ("count", "binaryFile", "local"), None),
    ("sum(length(content))", ("sumlen", "bfo", "local"), ("sumlen", "binaryFile", "local"), 3.0),
    ("metadata only: sum(length)", ("metalen", "bfo", "local"), ("metalen", "binaryFile", "local"), 2.0),
    ("word count", ("wordcount", "bfo", "local"), ("wordcount", "text", "local"), 1.5),
    ("HDFS: sum(length(content))", ("sumlen", "bfo", "hdfs"), ("sumlen", "binaryFile", "hdfs"), 2.0),
    ("HDFS: metadata only", ("metalen", "bfo", "hdfs"), ("metalen", "binaryFile", "hdfs"), None),
    ("executor JVMs: sum(length(content))", ("sumlen", "bfo", "cluster"), ("sumlen", "binaryFile", "cluster"),
     None),
    (f"as uid {util.NOBODY_UID}, soft RLIMIT_NOFILE {util.USER_NOFILE}: sum(length(content))",
     ("sumlen", "bfo", "nobody"), ("sumlen", "binaryFile", "nobody"), None),
]
CLUSTER_MASTER = "local-cluster[2,1,1024]"


def spark_home(workdir):
    """A Spark home for local-cluster executors: jars/ links Spark's own jars (spark-source's provided
    dependencies, no bfo, no JNA); returns (home, the bundle jar users add with spark.jars)."""
    home = Path(workdir) / "s1-spark-home"
    listing = Path(workdir) / "s1-spark-provided.txt"
    log = Path(workdir) / "spark-s1-build.log"
    with open(log, "a") as lf:
        for cmd in (["mvn", "-B", "-q", "-o", "-pl", "spark-source", "dependency:build-classpath",
                     f"-Dmdep.outputFile={listing}", "-Dmdep.includeScope=provided"],
                    ["mvn", "-B", "-q", "-o", "-pl", "spark-source,spark-bundle", "package", "-DskipTests",
                     "-DskipITs"]):
            r = util.run(cmd, capture=False, stdout=lf, stderr=lf, cwd=native.REPO, timeout=3600)
            if not r.ok:
                raise RuntimeError(f"S1 cluster rows: {' '.join(cmd)} failed (see {log})")
    bundles = sorted((native.REPO / "spark-bundle" / "target").glob("bfo-spark-*.jar"))
    bundles = [b for b in bundles if not b.name.endswith(("-sources.jar", "-tests.jar"))]
    if not bundles:
        raise RuntimeError("S1 cluster rows: no spark-bundle/target/bfo-spark-*.jar")
    util.run(["rm", "-rf", str(home)])
    (home / "jars").mkdir(parents=True)
    for jar in listing.read_text().strip().split(":"):
        if jar:
            (home / "jars" / Path(jar).name).symlink_to(jar)
    return home, bundles[0]


def classpath(workdir, rebuild=False):
    """spark-source's test classpath (compiled with Maven; bfo-java must be installed: see README)."""
    cp_file = Path(workdir) / "spark-s1.classpath"
    log = Path(workdir) / "spark-s1-build.log"
    util.log(f"S1: compiling spark-source and its test classes (log: {log})")
    with open(log, "w") as lf:
        r = util.run(["mvn", "-B", "-q", "-o", "-pl", "spark-source", "test-compile", "dependency:build-classpath",
                      f"-Dmdep.outputFile={cp_file}", "-Dmdep.includeScope=test"],
                     capture=False, stdout=lf, stderr=lf, cwd=native.REPO, timeout=3600)
        if not r.ok:
            r = util.run(["mvn", "-B", "-q", "-pl", "spark-source", "test-compile", "dependency:build-classpath",
                          f"-Dmdep.outputFile={cp_file}", "-Dmdep.includeScope=test"],
                         capture=False, stdout=lf, stderr=lf, cwd=native.REPO, timeout=3600)
    if not r.ok or not cp_file.is_file():
        raise RuntimeError(f"building spark-source failed (exit {r.returncode}, see {log}); "
                           "run `mvn -B -q -pl bfo-native,bfo-java install -DskipTests` first")
    target = SPARK_DIR / "target"
    return f"{target / 'test-classes'}:{target / 'classes'}:{cp_file.read_text().strip()}"


def nobody_classpath(cp, workdir):
    """The classpath copied where uid 65534 can read it (root's ~/.m2 is mode 0700), with a home of that
    user's for the JVM: (classpath, dir).  The place "nobody" runs the query as an ordinary user would."""
    import shutil
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="bfo-s1-nobody-", dir="/tmp"))
    os.chmod(d, 0o755)
    out = []
    for i, e in enumerate(x for x in cp.split(":") if x):
        src = Path(e)
        if src.is_dir():
            dst = d / f"dir{i}"
            shutil.copytree(src, dst)
        elif src.is_file():
            dst = d / f"{i:04d}-{src.name}"
            shutil.copy2(src, dst)
        else:
            continue
        out.append(str(dst))
    util.run(["chmod", "-R", "a+rX", str(d)], check=True)
    (d / "home").mkdir()
    os.chown(d / "home", util.NOBODY_UID, util.NOBODY_GID)
    return ":".join(out), d


def run_one(cp, set_dir, probe_dir, method, query, *, root, conf, heap, timeout, hdfs=None, cluster=None,
            nobody=None):
    cmd = [util.which("java"), f"-Xmx{heap}", *JVM_FLAGS, "-cp", cp]
    env = None
    if hdfs:
        cmd.append(f"-Dbfo.s1.hdfs={hdfs}")
    if cluster:
        home, bundle = cluster
        cmd += [f"-Dspark.master={CLUSTER_MASTER}", f"-Dspark.jars={bundle}"]
        # what bin/load-spark-env.sh gives a Spark installation's processes; nothing else on executors' path
        env = {k: v for k, v in os.environ.items() if k not in (
            "SPARK_CLASSPATH", "SPARK_DIST_CLASSPATH", "SPARK_CONF_DIR", "HADOOP_CONF_DIR", "SPARK_TESTING")}
        env.update(SPARK_HOME=str(home), SPARK_SCALA_VERSION="2.13", SPARK_LOCAL_IP="127.0.0.1")
    for c in conf:
        cmd.append(f"-D{c}")
    cmd += [MAIN, str(set_dir), str(probe_dir), method, query]
    if nobody:
        env = dict(os.environ, HOME=str(nobody / "home"))
        cmd = util.as_nobody(cmd)
    util.debug(" ".join(cmd))
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, env=env)
    try:
        line = p.stdout.readline()
        while line and line.strip() != "READY":
            line = p.stdout.readline()
        if not line:
            err = p.stderr.read()
            p.wait()
            return {"status": "FAILED", "error": (err.strip().splitlines() or ["no output"])[-1][:300]}
        runner.cold(root)
        p.stdin.write("GO\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.wait()
        return {"status": "FAILED", "error": f"timeout after {timeout}s"}
    js = native.parse_json_tail(out)
    if p.returncode != 0 or js is None:
        return {"status": "FAILED", "error": ((err or "").strip().splitlines() or ["no output"])[-1][:300]}
    js["status"] = "ok"
    js["process_seconds"] = time.monotonic() - t0
    return js


def _merge_rounds(rounds):
    """One run's rounds -> the record the table reads: status ok only when every round is, seconds the median
    of the rounds, result the first round's (same_result checks all of them)."""
    ok = [r for r in rounds if r["status"] == "ok"]
    rec = dict(rounds[0], rounds=rounds)
    if len(ok) != len(rounds):
        bad = next(r for r in rounds if r["status"] != "ok")
        return dict(rec, status="FAILED", error=bad.get("error"))
    st = util.summarize([r["seconds"] for r in rounds])
    return dict(rec, seconds=st["median"], min_seconds=st["min"], max_seconds=st["max"],
                results_agree=len({r.get("result") for r in rounds}) == 1)


def _compare_row(runs, title, a, b, target):
    """A table row, and whether the two runs gave the same result in every round."""
    ra, rb = runs["/".join(a)], runs["/".join(b)]
    ok = ra["status"] == "ok" and rb["status"] == "ok"
    # the same query must give the same result; the metadata row compares the number of files
    same = ok and ra["results_agree"] and rb["results_agree"] and (
        ra["result"] == rb["result"] if a[0] == b[0] else ra["result"].split()[0] == rb["result"].split()[0])
    ratio = rb["seconds"] / ra["seconds"] if ok and ra["seconds"] > 0 else None

    def secs(r):
        if r["status"] != "ok":
            return "FAILED"
        spread = f" ({r['min_seconds']:.2f}-{r['max_seconds']:.2f})" if len(r["rounds"]) > 1 else ""
        return f"{r['seconds']:.2f}{spread}"
    return [title, secs(ra), f"{b[1]} {secs(rb)}", f"{ratio:.1f}x" if ratio else "-",
            f">= {target}x" if target else "-",
            ("yes" if same else "NO") + f" ({ra.get('result') or ra.get('error')})"], same


def run_s1(*, files, conf, heap, workdir, keep, root, timeout, results, md, outdir, cache, fs="ext4", repeat=1,
           where=None):
    """Returns True when some run FAILED or results differ. Rounds run the whole list in turn (not one query
    repeat times in a row), so the load of a noisy machine falls on every method alike; medians reported."""
    spec = sets.REGISTRY["4k"]
    params = spec.params({"files": files})
    cp = classpath(workdir)
    conf = [c for c in (conf or "").split(",") if c]
    failed = False
    with runner.open_set(spec, params, workdir=workdir, keep=keep, fs=fs, root=root) as (ws, plan, info):
        info = dict(info, scenario="s1", conf=conf, repeat=repeat, runs={})
        results["sets"]["s1-4k"] = info
        hdfs = Path(workdir) / "s1-hdfs"   # loaded by the first HDFS run, from this set
        cluster = spark_home(workdir)
        util.run(["rm", "-rf", str(hdfs)])
        rounds = {}
        runs = [r for r in RUNS if not where or r[2] in where]
        nobody = ncp = None
        if any(r[2] == "nobody" for r in runs):
            why = util.nobody_cannot([ws.set_dir, ws.probe_dir], readable=[ws.set_dir, ws.probe_dir])
            if why:
                util.warn(f"S1 rows as an ordinary user left out: {why}")
                runs = [r for r in runs if r[2] != "nobody"]
            else:
                ncp, nobody = nobody_classpath(cp, workdir)
        for rnd in range(1, repeat + 1):
            for query, method, place in runs:
                util.log(f"S1 [{rnd}/{repeat}] {query} with {method} on {place} ({cache} cache)")
                r = run_one(ncp if place == "nobody" else cp, ws.set_dir, ws.probe_dir, method, query, root=root,
                            conf=conf, heap=heap, timeout=timeout, hdfs=hdfs if place == "hdfs" else None,
                            cluster=cluster if place == "cluster" else None,
                            nobody=nobody if place == "nobody" else None)
                rounds.setdefault(f"{query}/{method}/{place}", []).append(r)
                util.log(f"  -> {r.get('seconds', 0):.2f}s in-JVM, {r.get('partitions')} partitions: "
                         f"{r.get('result') or r.get('error')}")
            info["runs"] = {k: _merge_rounds(v) for k, v in rounds.items()}
            (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
        if any(r["status"] != "ok" for r in info["runs"].values()):
            failed = True
        rows = []
        for title, a, b, target in COMPARE:
            if a not in runs:
                continue
            row, same = _compare_row(info["runs"], title, a, b, target)
            rows.append(row)
            failed = failed or not same
        util.run(["rm", "-rf", str(hdfs)])
        if nobody:
            util.run(["rm", "-rf", str(nobody)])
        info["complete"] = True
        block = (f"## S1: Spark on the 4k set, {plan.files:,} files, {plan.bytes / 1e6:,.1f} MB, {cache} cache, "
                 + (f"median of {repeat} rounds (min-max)" if repeat > 1 else "one run each")
                 + "\n\nSpark local[*], "
                 + (f"TUNED conf (not users' defaults): {', '.join(conf)}" if conf else "Spark's default settings")
                 + "; time of the query inside the JVM "
                 "(after a warm-up on the probe dir and a cache drop)\n\n"
                 + util.md_table(["query", "bfo s", "baseline s", "speed-up", "target", "same result"], rows) + "\n")
        md.append(block)
        print("\n" + block, flush=True)
        (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
    return failed


def _where(arg):
    """--s1-where local,hdfs,cluster: the rows to run (default all)."""
    if not arg:
        return None
    where = set(arg.split(","))
    bad = where - {r[2] for r in RUNS}
    if bad:
        raise SystemExit(f"--s1-where takes local, hdfs, cluster, nobody; not {', '.join(sorted(bad))}")
    return where


def main(args):
    """`bench --scenario s1`: the 4k set (--files N), --repeat (rounds, default 3; medians), --workdir, --keep,
    --timeout, --results-dir; the Spark
    confs from BFO_S1_SPARK_CONF (comma-separated k=v; unset: Spark's defaults, as users have them), the driver
    heap from BFO_S1_HEAP (default 2g). Exit 0, 1 (a run failed or results differ) or 2 (error)."""
    from . import report
    from .workspace import WorkdirLock
    root = util.is_root()
    cache = "cold" if root else "warm"
    if not root:
        util.log("NOT ROOT: no image, no cache dropping: results are WARM-CACHE.")
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {"kind": "bench", "scenario": "s1", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": __import__("sys").argv, "cache": cache, "machine": runner.machine_info(workdir), "sets": {},
               "complete": False}
    md = [f"# BFO S1 Spark benchmark, {results['started']}\n"]
    try:
        with WorkdirLock(workdir):
            outdir = report.results_dir(args.results_dir, workdir, suffix="-s1")
            util.log(f"results: {outdir}")
            failed = run_s1(files=args.files, conf=os.environ.get("BFO_S1_SPARK_CONF"),
                            heap=os.environ.get("BFO_S1_HEAP", "2g"), workdir=workdir, keep=args.keep, root=root,
                            timeout=args.timeout, results=results, md=md, outdir=outdir, cache=cache,
                            fs=args.fs or "ext4", repeat=args.repeat or (1 if args.quick else 3),
                            where=_where(args.s1_where))
        results["complete"] = True
        (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
        (outdir / "table.md").write_text("\n".join(md) + "\n")
        print(f"results: {outdir}/results.json, table.md")
        return 1 if failed else 0
    except (KeyboardInterrupt, util.Interrupted):
        util.log("interrupted; cleaned up")
        return 130
    except RuntimeError as e:
        util.log(f"ERROR: {e}")
        return 2
