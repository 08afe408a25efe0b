"""H1: MapReduce over many small text files, BatchTextInputFormat against the
incumbents, on Hadoop's embedded local runner (hadoop-input/bin/bfo-wordcount).

As root: a fresh sparse ext4 image on a direct-I/O loop device holds the set
(kept and reused with --keep); every job runs with a cold cache (sync and
drop_caches, then the job's own jars and the JDK read back into the page
cache, untimed, so that only the input is cold). Not root: a directory,
warm cache.

The set: --files (default 100,000) small text files of real-looking prose and
code (slices of the Python standard library's sources and of the licence
texts on this machine, 512 B - 16 KiB, log-uniform), in 100 directories,
created in shuffled order, mostly LF, some CRLF, some without a last newline,
no .crc files; plus a copy of the first 2,000 of them in a subset directory.

Jobs (one run each, the same split size for every format, recursive input):
  read-only  map-only, counts records and line bytes (WordCount --read-only)
  wordcount  WordCount with a combiner, one reducer
each with BatchTextInputFormat (bfo) and CombineTextInputFormat (combine) on
the whole set, and with bfo and TextInputFormat (text: one map task per file)
on the subset. As root, bfo also runs as user nobody on the whole set: the
job a task without access to the block device runs (the io_uring engine, or
bfo-java's Java engine where io_uring is refused), as on most clusters. Checks: the record and byte counts equal the generator's own
count (TextInputFormat's line rules), the WordCount outputs are identical
across formats on the same input and their total equals the generator's word
count. Times: the job (submission to completion, printed by the driver) split
into submission (listing and split planning, which getSplits does in the
client) and run (the map and reduce tasks), and the process (with JVM start).
"""

import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import native, report, runner, util
from .workspace import DirWorkspace, ImageWorkspace, WorkdirLock

MODULE = native.REPO / "hadoop-input"
LAUNCHER = MODULE / "bin" / "bfo-wordcount"
GEN_VERSION = 1
DIRS = 100
SUBSET = 2000
MIN_SIZE, MAX_SIZE = 512, 16 << 10
SPLIT_MAXSIZE = 128 << 20          # the same for every format
MAP_SLOTS = 2                      # mapreduce.local.map.tasks.maximum (the machine has 2 cores)
NOBODY, NOGROUP = "nobody", "nogroup"   # the unprivileged rows' user
EOL_RE = re.compile(rb"\r\n|\r|\n")
WORD_RE = re.compile(rb"[^ \t\n\r\f]+")    # java.util.StringTokenizer's default delimiters


# --------------------------------------------------------------------------
# The data set
# --------------------------------------------------------------------------
def _corpus():
    """(prose line lists, code line lists) from text that is on every Debian machine with python3."""
    import sysconfig
    code, prose = [], []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for p in sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py")):
        try:
            lines = p.read_bytes().splitlines(keepends=False)
        except OSError:
            continue
        if len(lines) >= 20:
            code.append(lines)
        # comments and docstring-looking lines are prose
        words = [ln.strip().lstrip(b"#").strip() for ln in lines
                 if ln.strip().startswith(b"#") or (ln[:1] in (b" ", b"") and b" " in ln.strip()
                                                    and not re.search(rb"[=(){}\[\]:]", ln))]
        words = [w for w in words if len(w) > 20]
        if len(words) >= 20:
            prose.append(words)
    for d in (Path("/usr/share/common-licenses"),):
        for p in sorted(d.glob("*")) if d.is_dir() else []:
            try:
                lines = p.read_bytes().splitlines()
            except OSError:
                continue
            if len(lines) >= 20:
                prose.append(lines)
    if len(code) < 5 or len(prose) < 5:
        rnd = random.Random(1)
        vocab = [bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(1, 10)))
                 for _ in range(5000)]
        synth = [[b" ".join(rnd.choice(vocab) for _ in range(rnd.randint(0, 14))) for _ in range(400)]
                 for _ in range(50)]
        code = code or synth
        prose = prose or synth
    return prose, code


def _content(rnd, prose, code):
    size = int(round(MIN_SIZE * (MAX_SIZE / MIN_SIZE) ** rnd.random()))
    src = rnd.choice(code if rnd.random() < 0.4 else prose)
    i = rnd.randrange(len(src))
    out, n = [], 0
    while n < size:
        ln = src[i % len(src)]
        out.append(ln)
        n += len(ln) + 1
        i += 1
    r = rnd.random()
    eol = b"\r\n" if r < 0.03 else b"\n"
    body = eol.join(out)
    if rnd.random() >= 0.05:
        body += eol          # 5 % have no last newline
    return body


def _count(body):
    """(records, line bytes, words) as TextInputFormat and WordCount's tokenizer see the file."""
    if not body:
        return 0, 0, 0
    eols = EOL_RE.findall(body)
    records = len(eols) + (0 if body.endswith((b"\n", b"\r")) else 1)
    return records, len(body) - sum(len(e) for e in eols), len(WORD_RE.findall(body))


def generate(root, files, subset, seed=2020):
    """Writes the set under root/all and root/subset; returns its reference counts."""
    prose, code = _corpus()
    order = list(range(files))
    random.Random(seed).shuffle(order)          # created in shuffled order: inode order != name order
    ref = {"all": [0, 0, 0, 0, 0], "subset": [0, 0, 0, 0, 0]}   # files, bytes, records, line bytes, words
    t0 = time.monotonic()
    last = t0
    for k, i in enumerate(order):
        body = _content(random.Random(seed * 1_000_003 + i), prose, code)
        rel = f"d{i % DIRS:03d}/f{i:06d}.txt"
        counts = (1, len(body)) + _count(body)
        for part in (("all", "subset") if i < subset else ("all",)):
            p = root / part / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(body)
            ref[part] = [a + b for a, b in zip(ref[part], counts)]
        now = time.monotonic()
        if now - last > 10:
            util.log(f"  generated {k + 1:,} of {files:,} files")
            last = now
    os.sync()
    keys = ("files", "bytes", "records", "line_bytes", "words")
    return {part: dict(zip(keys, v)) for part, v in ref.items()}, time.monotonic() - t0


# --------------------------------------------------------------------------
# The jobs
# --------------------------------------------------------------------------
def _build(workdir, no_build):
    """The module's jar and classpath, copied to a snapshot dir (a rebuild during the run stays out)."""
    target = MODULE / "target"
    jars = [j for j in target.glob("bfo-hadoop-input-*.jar") if not j.name.endswith(("-job.jar", "-sources.jar"))]
    if not jars or not (target / "classpath.txt").is_file():
        if no_build:
            raise RuntimeError(f"no built jar in {target}: mvn -B -pl hadoop-input -am package -DskipTests")
        log = Path(workdir) / "hadoop-input-build.log"
        util.log(f"building hadoop-input with Maven (log: {log})")
        with open(log, "w") as lf:
            r = util.run(["mvn", "-B", "-q", "-pl", "hadoop-input", "-am", "package", "-DskipTests",
                          "-Dbfo.native.skipTests=true", "-Dbfo.sanitize.skip=true"],
                         capture=False, stdout=lf, stderr=lf, cwd=native.REPO, timeout=3600)
        jars = [j for j in target.glob("bfo-hadoop-input-*.jar")
                if not j.name.endswith(("-job.jar", "-sources.jar"))]
        if not r.ok or not jars:
            raise RuntimeError(f"building hadoop-input failed (exit {r.returncode}, see {log})")
    snap = Path(workdir) / "bin" / f"h1-{os.getpid()}"
    shutil.rmtree(snap, ignore_errors=True)
    snap.mkdir(parents=True)
    shutil.copy2(jars[0], snap / jars[0].name)
    cp = []
    for i, e in enumerate((target / "classpath.txt").read_text().strip().split(":")):
        p = Path(e)
        if p.is_relative_to(native.REPO):          # reactor outputs (bfo-java) may be rebuilt meanwhile
            dst = snap / f"cp{i}-{p.name}"
            (shutil.copytree if p.is_dir() else shutil.copy2)(p, dst)
            p = dst
        cp.append(str(p))
    (snap / "classpath.txt").write_text(":".join(cp))
    return snap, [snap / jars[0].name] + [Path(c) for c in cp if c.endswith(".jar")]


def _java_files():
    """The JDK's big files (class library image), read back after a cache drop."""
    java = shutil.which("java")
    if not java:
        return []
    home = Path(os.path.realpath(java)).parent.parent
    return [p for p in (home / "lib" / "modules",) if p.is_file()]


def _cold(root, warm_files):
    if root:
        util.drop_caches()
        for p in warm_files:      # the program, not the input: off the clock, and the same for every format
            with open(p, "rb") as f:
                while f.read(1 << 20):
                    pass


def _parse(stdout):
    """(job seconds, submit seconds, run seconds, {group: {counter: value}}) from the driver's output."""
    job = submit = run = None
    counters, group = {}, None
    for line in stdout.splitlines():
        m = re.search(r" in ([0-9.]+) s$", line)
        if line.startswith("job: ") and m:
            job = float(m.group(1))
            continue
        m = re.match(r"\s+submit \(listing, split planning\) ([0-9.]+) s, run ([0-9.]+) s$", line)
        if m:
            submit, run = float(m.group(1)), float(m.group(2))
            continue
        if line.startswith("    ") and "=" in line and group is not None:
            k, _, v = line.strip().rpartition("=")
            try:
                counters[group][k] = int(v)
            except ValueError:
                pass
        elif line.startswith("  ") and not line.startswith("   "):
            group = line.strip()
            counters.setdefault(group, {})
    return job, submit, run, counters


def _find(counters, name):
    for g in counters.values():
        if name in g:
            return g[name]
    return None


def _output_digest(out_dir):
    """(sha256 of the sorted output lines, number of lines, sum of the counts)."""
    lines = []
    for p in sorted(Path(out_dir).glob("part-*")):
        lines += p.read_bytes().splitlines()
    lines.sort()
    total = sum(int(ln.rsplit(b"\t", 1)[1]) for ln in lines)
    return hashlib.sha256(b"\n".join(lines)).hexdigest(), len(lines), total


def _nobody_copy(snap, program_files):
    """The launcher and the classpath where nobody can read them (root's ~/.m2 is mode 0700), and a
    directory nobody owns for the job's output and hadoop.tmp.dir: (dir, the program files to warm)."""
    d = Path(tempfile.mkdtemp(prefix="bfo-h1-nobody-", dir="/tmp"))
    os.chmod(d, 0o755)
    (d / "bin").mkdir()
    for f in (LAUNCHER, LAUNCHER.parent / "log4j.properties"):
        shutil.copy2(f, d / "bin" / f.name)
    (d / "target").mkdir()
    cp = []
    for i, e in enumerate([str(program_files[0])] + (snap / "classpath.txt").read_text().strip().split(":")):
        src = Path(e)
        dst = d / "target" / (src.name if i == 0 else f"cp{i}-{src.name}")
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
        if i > 0:
            cp.append(str(dst))
    (d / "target" / "classpath.txt").write_text(":".join(cp))
    for p in [d] + list(d.rglob("*")):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    os.chmod(d / "bin" / LAUNCHER.name, 0o755)
    (d / "work").mkdir()
    shutil.chown(d / "work", NOBODY, NOGROUP)
    return d, [p for p in (d / "target").iterdir() if p.suffix == ".jar"]


def _reachable_by_others(path):
    """The directory (of the input) and its parents searchable by any user; else the first that is not."""
    for p in [Path(path)] + list(Path(path).parents):
        if not os.stat(p).st_mode & 0o001:
            return p
    return None


def _run_job(*, snap, job, fmt, inp, out, ref, root, warm_files, timeout, tmp, nobody=None, settings=()):
    if out.exists():
        shutil.rmtree(out)
    launcher = LAUNCHER
    env = dict(os.environ, BFO_WORDCOUNT_TARGET=str(snap))
    prefix = []
    if nobody:
        launcher = nobody / "bin" / LAUNCHER.name
        env.update(BFO_WORDCOUNT_TARGET=str(nobody / "target"), HOME=str(nobody / "work"))
        # uid 65534 with a login's soft descriptor limit (1024; HotSpot raises it to the hard one itself)
        prefix = util.as_nobody([])
        out, tmp = nobody / "work" / out.name, nobody / "work" / "hadoop-tmp"
    cmd = prefix + [launcher,
           "-D", "mapreduce.input.fileinputformat.input.dir.recursive=true",
           "-D", f"mapreduce.input.fileinputformat.split.maxsize={SPLIT_MAXSIZE}",
           "-D", f"mapreduce.local.map.tasks.maximum={MAP_SLOTS}",
           "-D", f"hadoop.tmp.dir={tmp}",
           "-D", f"mapreduce.jobtracker.staging.root.dir={tmp}/staging",   # the local runner's default: /tmp/hadoop
           "--input-format", fmt]
    for kv in settings:
        cmd[len(prefix) + 1:len(prefix) + 1] = ["-D", kv]
    cmd += ["--read-only", inp] if job == "read-only" else [inp, out]
    _cold(root, warm_files)
    r = util.run(cmd, timeout=timeout, env=env)
    res = {"format": fmt, "process_seconds": r.seconds, "exit": r.returncode, "command": " ".join(map(str, cmd))}
    job_s, submit_s, run_s, counters = _parse(r.stdout or "")
    res.update(seconds=job_s, submit_seconds=submit_s, run_seconds=run_s, counters=counters)
    problems = []
    if not r.ok:
        problems.append(f"exit {r.returncode}: " + " | ".join((r.stderr or "").strip().splitlines()[-3:]))
    else:
        records = _find(counters, "Map input records")
        m = re.search(r"number of splits:\s*(\d+)", r.stderr or "")   # JobSubmitter's INFO line
        res["map_tasks"] = int(m.group(1)) if m else None
        if records != ref["records"]:
            problems.append(f"{records} records, expected {ref['records']}")
        if job == "read-only":
            lb = _find(counters, "LINE_BYTES")
            if lb != ref["line_bytes"]:
                problems.append(f"{lb} line bytes, expected {ref['line_bytes']}")
        else:
            digest, lines, total = _output_digest(out)
            res.update(output_sha256=digest, output_lines=lines, output_words=total)
            if total != ref["words"]:
                problems.append(f"{total} words counted, expected {ref['words']}")
            shutil.rmtree(out, ignore_errors=True)
    res["problems"] = problems
    return res


# --------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------
JOBS = [  # (table key, job, format, input part, user: None = the harness's, NOBODY = unprivileged, root only)
    ("read-only", "read-only", "bfo", "all", None),
    ("read-only", "read-only", "combine", "all", None),
    ("read-only", "read-only", "bfo", "all", NOBODY),
    ("wordcount", "wordcount", "bfo", "all", None),
    ("wordcount", "wordcount", "combine", "all", None),
    ("wordcount", "wordcount", "bfo", "all", NOBODY),
    ("read-only subset", "read-only", "bfo", "subset", None),
    ("read-only subset", "read-only", "text", "subset", None),
    ("wordcount subset", "wordcount", "bfo", "subset", None),
    ("wordcount subset", "wordcount", "text", "subset", None),
]
FORMAT_NAMES = {"bfo": "BatchTextInputFormat", "combine": "CombineTextInputFormat", "text": "TextInputFormat"}


def _fmt(x, nd=2):
    return "-" if x is None else f"{x:.{nd}f}"


def table(results):
    rows = []
    for key in dict.fromkeys(k for k, *_ in JOBS):
        runs = [r for r in results["runs"] if r["key"] == key]
        base = next((r for r in runs if r["format"] != "bfo"), None)
        for r in runs:
            bfo = r
            ratio = ratio_run = ratio_submit = None
            if r["format"] == "bfo" and base and bfo.get("seconds") and base.get("seconds"):
                ratio = base["seconds"] / bfo["seconds"]
                if bfo.get("run_seconds") and base.get("run_seconds"):
                    ratio_run = base["run_seconds"] / bfo["run_seconds"]
                if bfo.get("submit_seconds") and base.get("submit_seconds"):
                    ratio_submit = base["submit_seconds"] / bfo["submit_seconds"]
            label = r.get("label") or FORMAT_NAMES[r["format"]] + (
                f" as {r['user']} (uid {util.NOBODY_UID}, soft RLIMIT_NOFILE {util.USER_NOFILE})" if r.get("user") else "")
            rows.append([key, label, f"{r['files']:,}", r.get("map_tasks") or "-",
                         _fmt(r.get("seconds")), _fmt(r.get("submit_seconds")), _fmt(r.get("run_seconds")),
                         _fmt(r.get("process_seconds")),
                         f"{ratio:.2f}x" if ratio else "", f"{ratio_submit:.2f}x" if ratio_submit else "",
                         f"{ratio_run:.2f}x" if ratio_run else "",
                         "yes" if not r["problems"] else "NO: " + "; ".join(r["problems"]),
                         ",".join(f"{k}={v:,}" for k, v in r.get("counters", {}).get("BFO engine (files)",
                                                                                        {}).items())])
    return util.md_table(["job", "input format", "files", "maps", "job s", "submit s", "run s", "process s",
                          "speed-up job", "speed-up submit", "speed-up run", "verified", "bfo engine (files)"],
                         rows, align=["l", "l"] + ["r"] * 9 + ["l", "l"])


def run_h1(args):
    """The H1 scenario (benchmarks/bench --scenario h1). Returns the exit status."""
    return util.scenario_entry(_run_h1, args)


def _run_h1(args):
    root = util.is_root()
    cache = "cold" if root else "warm"
    files = args.files or 100_000
    subset = min(SUBSET, files)
    timeout = args.timeout
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    params = {"files": files, "subset": subset, "version": GEN_VERSION, "min": MIN_SIZE, "max": MAX_SIZE}
    results = {"kind": "bench", "scenario": "h1", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": list(sys.argv), "cache": cache, "params": params, "split_maxsize": SPLIT_MAXSIZE,
               "map_slots": MAP_SLOTS, "runs": [], "complete": False}
    if not root:
        util.log("NOT ROOT: a directory on the current file system, WARM cache. Run as root for cold-cache numbers.")
    with WorkdirLock(workdir):
        snap, program_files = _build(workdir, args.no_build)
        warm_files = program_files + _java_files()
        outdir = report.results_dir(args.results_dir, workdir, suffix="-h1")
        util.log(f"results: {outdir}")
        mean = (MAX_SIZE - MIN_SIZE) / math.log(MAX_SIZE / MIN_SIZE)
        need = int((files + subset) * (mean + 4096) * 1.3)
        size = max(1 << 30, (int(need * 1.5) + (256 << 20) + (64 << 20) - 1) // (64 << 20) * (64 << 20))
        inodes = int((files + subset) * 1.3) + 10000
        ws_cls = ImageWorkspace if root else DirWorkspace
        scratch = workdir / f"h1-scratch-{os.getpid()}"
        scratch.mkdir(exist_ok=True)
        failed = False
        nobody = None
        try:
            with ws_cls(workdir, "h1", params, args.keep, fs="ext4", size_bytes=size, inodes=inodes,
                        need_bytes=need) as ws:
                data = ws.set_dir
                if ws.reused:
                    ref = ws.manifest()["reference"]
                    results["generate_seconds"] = None
                else:
                    util.log(f"generating {files:,} text files (+ a {subset:,}-file subset) in {ws.root}")
                    ref, secs = generate(data, files, subset)
                    ws.write_manifest({"reference": ref})
                    results["generate_seconds"] = secs
                    util.log(f"generated in {secs:.0f} s: {ref['all']['bytes'] / 1e6:,.1f} MB, "
                             f"{ref['all']['records']:,} lines, {ref['all']['words']:,} words")
                results["reference"] = ref
                results["workspace"] = ws.info
                if root and not args.no_unprivileged:
                    closed = _reachable_by_others(data)
                    if closed:
                        raise RuntimeError(f"user {NOBODY} cannot reach the set: {closed} is not searchable by "
                                           f"others (choose another --workdir, or --no-unprivileged)")
                    nobody, nobody_jars = _nobody_copy(snap, program_files)
                    warm_files = warm_files + nobody_jars
                for key, job, fmt, part, user in JOBS:
                    if user and not nobody:
                        continue
                    util.log(f"H1 {key}: {FORMAT_NAMES[fmt]} on {ref[part]['files']:,} files, {cache} cache"
                             + (f", as {user}" if user else ""))
                    r = _run_job(snap=snap, job=job, fmt=fmt, inp=data / part, out=scratch / f"out-{key}-{fmt}",
                                 ref=ref[part], root=root, warm_files=warm_files, timeout=timeout,
                                 tmp=scratch / "hadoop-tmp", nobody=nobody if user else None)
                    r.update(key=key, job=job, part=part, files=ref[part]["files"], user=user)
                    util.log(f"  job {_fmt(r['seconds'])} s (submit {_fmt(r['submit_seconds'])} s, run "
                             f"{_fmt(r['run_seconds'])} s), process {r['process_seconds']:.2f} s"
                             + ("" if not r["problems"] else "  PROBLEMS: " + "; ".join(r["problems"])))
                    results["runs"].append(r)
                    (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
                # the same WordCount output whatever the format
                for key in ("wordcount", "wordcount subset"):
                    digests = {(r["format"], r["user"]): r.get("output_sha256") for r in results["runs"]
                               if r["key"] == key}
                    if len(set(digests.values())) != 1 or None in digests.values():
                        for r in results["runs"]:
                            if r["key"] == key:
                                r["problems"].append("WordCount outputs differ between formats")
                failed = any(r["problems"] for r in results["runs"])
        finally:
            with util.cleaning():
                shutil.rmtree(scratch, ignore_errors=True)
                shutil.rmtree(snap, ignore_errors=True)
                if nobody:
                    shutil.rmtree(nobody, ignore_errors=True)
    results["complete"] = True
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    m = runner.machine_info(workdir)
    a = ref["all"]
    md = (f"# BFO H1 benchmark (MapReduce, local runner), {results['started']}\n\n"
          f"{files:,} small text files ({a['bytes'] / 1e6:,.1f} MB, {a['records']:,} lines) on "
          f"{'a fresh ext4 image on a direct-I/O loop device' if root else 'a directory'}, {cache} cache, one run "
          f"per job; TextInputFormat and its bfo comparison on the first {subset:,} files. Split size "
          f"{SPLIT_MAXSIZE >> 20} MiB for every format, {MAP_SLOTS} map slots. job = submission to completion; "
          f"submit = listing and split planning (getSplits, in the client); run = the tasks; process = with "
          f"JVM start. Speed-up = the other format's time / BatchTextInputFormat's.\n\n" + table(results) + "\n")
    results["machine"] = m
    return finish(outdir, results, md, failed)


def finish(outdir, results, md, failed):
    """Writes results.json and table.md, prints the table; the scenario's exit status."""
    (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (outdir / "table.md").write_text(md)
    print("\n" + md, flush=True)
    print(f"results: {outdir}/results.json, table.md")
    if failed:
        print("SOME JOBS FAILED OR GAVE WRONG RESULTS: see the verified column", file=sys.stderr)
        return 1
    return 0
