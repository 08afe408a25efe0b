"""Java read methods (scenario "read"): the BFO Java API against the plain
Java ways of reading a tree, each one cold-cache JVM run of
io.github.bfo.bench.JavaRead (benchmarks/java/, packed in
benchmarks/target/benchmarks.jar with bfo-java, JNA and libbfo):

  bfo-java               BatchFileReader.readTree(DIR), every byte consumed
  bfo-java-list          Files.walk(DIR) into a list, then BatchFileReader.read(list)
  readallbytes-loop      Files.walk(DIR) + Files.readAllBytes per file, 1 thread
  readallbytes-parallel  Files.walk(DIR).parallel().map(Files::readAllBytes)

The harness times the whole process (JVM start-up included, like every other
method); JavaRead also prints the time of the read itself measured inside the
JVM (walk included), recorded per run as stats["seconds"] and shown in the
note column as "in-JVM". For bfo-java, each timed run is followed by an
untimed one with --rounds 3 whose last read (cold cache, warm JIT) is
shown as "warm JVM": the first read of a fresh JVM also pays the JIT
compiling the read path on the same cores. Verification: the same run
with --sha256 prints sha256 per file, compared with the sha256 reference.

The jar is built with Maven when missing (`mvn -pl benchmarks -am package
-DskipTests`, log in the work dir) and copied into the work dir before use,
so a rebuild during a long run cannot mix two builds in one table.
"""

import os
import shutil
import statistics

from . import methods, native, util, verify

JAR = native.BENCH_DIR / "target" / "benchmarks.jar"
MAIN = "io.github.bfo.bench.JavaRead"

_state = {"jar": None, "reason": None, "tried": False}


def _java():
    return util.which("java")


def _jar(ctx):
    """The snapshot of benchmarks.jar in the work dir (built when missing), or None and the reason."""
    if _state["tried"]:
        return _state["jar"], _state["reason"]
    _state["tried"] = True
    if not _java():
        _state["reason"] = "java not installed (openjdk-17-jdk-headless)"
        return None, _state["reason"]
    if not JAR.is_file():
        if not util.which("mvn"):
            _state["reason"] = f"{JAR} missing and mvn not installed to build it"
            return None, _state["reason"]
        log = ctx.scratch.parent / "bfo-java-build.log"
        util.log(f"{JAR.name} missing: building it with Maven (log: {log})")
        with open(log, "w") as lf:
            r = util.run(["mvn", "-B", "-q", "-pl", "benchmarks", "-am", "package", "-DskipTests"],
                         capture=False, stdout=lf, stderr=lf, cwd=native.REPO, timeout=3600)
        if not r.ok or not JAR.is_file():
            _state["reason"] = f"building {JAR.name} failed (exit {r.returncode}, see {log})"
            return None, _state["reason"]
    snap = ctx.scratch.parent / "bin" / "benchmarks.jar"
    snap.parent.mkdir(parents=True, exist_ok=True)
    tmp = snap.with_suffix(".tmp")
    shutil.copy2(JAR, tmp)
    os.replace(tmp, snap)
    _state["jar"] = snap
    return snap, None


def _cmd(method, extra=()):
    def cmd(ctx):
        jar, _ = _jar(ctx)
        return [_java(), "-cp", jar, MAIN, ctx.set_dir, method, *extra]
    return cmd


def _avail(method):
    def avail(ctx):
        jar, reason = _jar(ctx)
        if jar is None:
            return reason
        # a 3-file probe, as for bfo: the JVM, the jar and (for bfo-java) libbfo load
        r = util.run([_java(), "-cp", jar, MAIN, ctx.ws.probe_dir, method], timeout=300)
        js = native.parse_json_tail(r.stdout)
        if r.returncode != 0 or js is None:
            first = (r.stderr or r.stdout or "").strip().splitlines()
            return f"probe failed (exit {r.returncode}): {first[-1] if first else 'no output'}"
        return None
    return avail


def _verify(method):
    def verify_(ctx):
        ref = ctx.refs.sha256()
        r = util.run(_cmd(method, ("--sha256",))(ctx))
        if r.returncode != 0:
            first = (r.stderr or "").strip().splitlines()
            return False, f"exit {r.returncode}: {first[0] if first else ''}"
        got, problems = {}, []
        for line in (r.stdout or "").splitlines():
            if not line.strip() or line.startswith("{"):
                continue
            h, sep, path = line.partition("  ")
            if not sep or len(h) != 64:
                problems.append(f"unparsable line: {line[:100]!r}")
                continue
            rel = verify.normalize(path, ctx.set_dir)
            if rel in got:
                problems.append(f"printed twice: {rel}")
            got[rel] = h
        return verify.compare(ref, got, problems, what="sha256")
    return verify_


def _stats(res):
    return native.parse_json_tail(res.stdout)


WARM_ROUNDS = 3   # C2 is still compiling the read's path through the second read of a fresh JVM


def _warm(method):
    """Untimed, after each timed run: JavaRead --rounds 3, every round cold
    (the harness drops the caches before the JVM starts, JavaRead before each
    later round); the last round's in-JVM read is a warm JVM's."""
    def extra(ctx):
        r = util.run(_cmd(method, ("--rounds", str(WARM_ROUNDS)))(ctx), timeout=900)
        js = native.parse_json_tail(r.stdout)
        later = (js or {}).get("later_seconds") or []
        if r.returncode != 0 or len(later) != WARM_ROUNDS - 1:
            first = (r.stderr or "").strip().splitlines()
            raise RuntimeError(f"--rounds {WARM_ROUNDS}: exit {r.returncode}: "
                               f"{first[-1] if first else 'rounds missing'}")
        return {"warm_seconds": later[-1]}
    return extra


def _note(runs):
    js = [r.get("stats") for r in runs if isinstance(r.get("stats"), dict) and r["stats"].get("seconds") is not None]
    if not js:
        return ""
    inner = statistics.median(j["seconds"] for j in js)
    setup = statistics.median(j.get("setup_seconds", 0) for j in js)
    ok = [r["seconds"] for r in runs if r.get("returncode") == 0]
    parts = [f"in-JVM read {inner:.2f}s"]
    warm = [j["warm_seconds"] for j in js if j.get("warm_seconds") is not None]
    if warm:
        parts[0] += f" (warm JVM {statistics.median(warm):.2f}s)"
    if setup:
        parts.append(f"+ libbfo load {setup:.2f}s")
    if ok:
        parts.append(f"+ JVM {max(statistics.median(ok) - inner - setup, 0):.2f}s")
    j = js[-1]
    if j.get("engine"):
        parts.append(f"engine={j['engine']}" + ("" if j.get("native", True) else " (libbfo NOT loaded)"))
        if j.get("meta_seconds") is not None:
            parts.append(f"meta={j['meta_seconds']:.2f}s")
    return " ".join(parts)


def _method(name, description, group, quick):
    return methods.Method(
        name=name, description=description, group=group, command=_cmd(name), available=_avail(name),
        verify=_verify(name), stats=_stats, capture_stdout=True, reference="sha256", quick=quick, note=_note,
        extra=_warm(name) if name == "bfo-java" else None)


for _name, _desc, _group, _quick in (
        ("bfo-java", "JavaRead bfo-java: BatchFileReader.readTree(DIR) (libbfo through JNA), every byte summed",
         "bfo", False),
        ("bfo-java-list", "JavaRead bfo-java-list: Files.walk(DIR) to a list, then BatchFileReader.read(list)",
         "bfo", False),
        ("readallbytes-loop", "JavaRead readallbytes-loop: Files.walk(DIR), Files.readAllBytes per file, 1 thread",
         "baseline", False),
        ("readallbytes-parallel", "JavaRead readallbytes-parallel: Files.walk(DIR).parallel()"
         ".map(Files::readAllBytes) (common pool)", "baseline", False)):
    methods.register(_method(_name, _desc, _group, _quick))
