"""T1: GNU tar create, plain vs --sort=inode vs --use-bfo (the tar plugin).

Per set (default 4k and mixed), on the set's own ext4 image (a direct-I/O
loop device, as the read scenario makes it), cold cache before every run
(root):

  tar-plain    tar -cf - -C MNT SET | cat > /dev/null
  tar-inode    tar --sort=inode -cf - ...
  tar-bfo      tar --use-bfo -cf - ...     (tar-plugin/bin/tar, libbfo_tar.so)

The archive goes to a pipe read by a consumer (cat), never to /dev/null
(GNU tar does not read the files when the archive is /dev/null), so the
archive write is not the bottleneck and every file is read.  Before the
timed rounds, tar-plain and tar-bfo each write their archive to a file
(untimed) and the two must be byte-identical; the same for --sort=inode
with and without --use-bfo.  Rounds visit the methods in turn; the median
of --repeat rounds is reported, with ratios against tar-plain and
tar-inode measured in the same run on the same data.

T2 (extract with batch writes) is not part of this harness yet: the
plugin's extract path passes through to libc.
"""

import hashlib
import json
import os
import time
from pathlib import Path

from . import report, runner, sets, util

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "tar-plugin"
FRONT = PLUGIN_DIR / "bin" / "tar"
PLUGIN = PLUGIN_DIR / "build" / "libbfo_tar.so"
T1_SETS = ("4k", "mixed")

METHODS = {
    "tar-plain": ([], "GNU tar -cf - DIR | cat"),
    "tar-inode": (["--sort=inode"], "GNU tar --sort=inode -cf - DIR | cat"),
    "tar-bfo": (["--use-bfo"], "tar --use-bfo -cf - DIR | cat (libbfo_tar.so preloaded)"),
}


def gnu_tar():
    for p in ("/usr/bin/tar", "/bin/tar"):
        if os.access(p, os.X_OK):
            return p
    raise SystemExit("T1: GNU tar not found in /usr/bin or /bin")


def build_plugin(no_build):
    """The plugin from tar-plugin/build, built (after libbfo) when missing."""
    if PLUGIN.exists():
        return
    if no_build:
        raise SystemExit(f"T1: {PLUGIN} missing (build tar-plugin, or drop --no-build)")
    native = REPO / "bfo-native"
    if not (native / "build" / "libbfo.so").exists():
        util.log("T1: building libbfo")
        util.run(["cmake", "-S", native, "-B", native / "build"], check=True)
        util.run(["cmake", "--build", native / "build", "--parallel", "2"], check=True)
    util.log("T1: building the tar plugin")
    util.run(["cmake", "-S", PLUGIN_DIR, "-B", PLUGIN_DIR / "build"], check=True)
    util.run(["cmake", "--build", PLUGIN_DIR / "build"], check=True)


def _env():
    env = dict(os.environ, BFO_TAR_PLUGIN=str(PLUGIN), BFO_TAR_REAL=gnu_tar(), LC_ALL="C")
    env.pop("BFO_TAR", None)
    env.pop("TAR_OPTIONS", None)
    return env


def _tar_cmd(method, parent, name, out):
    return [str(FRONT)] + METHODS[method][0] + ["-cf", out, "-C", str(parent), name]


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def verify_same_archives(parent, name, scratch, timeout):
    """Untimed: plain and --use-bfo archives are byte-identical (default
    order and --sort=inode).  Returns {check: 'ok' or a problem}."""
    out = {}
    for label, extra in (("default order", []), ("--sort=inode", ["--sort=inode"])):
        digests = {}
        for use_bfo in (False, True):
            f = Path(scratch) / f"t1-{'bfo' if use_bfo else 'plain'}.tar"
            cmd = [str(FRONT)] + (["--use-bfo"] if use_bfo else []) + extra + ["-cf", str(f), "-C", str(parent), name]
            r = util.run(cmd, env=_env(), timeout=timeout)
            if not r.ok:
                raise RuntimeError(f"T1 verify: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[:500]}")
            digests[use_bfo] = _sha256(f)
            f.unlink()
        out[label] = "ok" if digests[False] == digests[True] else "DIFFERENT ARCHIVES"
    return out


def timed(method, parent, name, *, root, timeout, stats_file):
    """One cold run: the archive into a pipe read by cat."""
    runner.cold(root)
    tar = " ".join(_quote(a) for a in _tar_cmd(method, parent, name, "-"))
    env = _env()
    if method == "tar-bfo":
        env["BFO_TAR_STATS"] = str(stats_file)
    return util.run(["bash", "-c", f"set -o pipefail; {tar} | cat > /dev/null"], env=env, timeout=timeout)


def _quote(s):
    return "'" + str(s).replace("'", "'\\''") + "'"


def run_t1(*, set_names, files_4k, fs, repeat, do_verify, root, timeout, workdir, keep, scratch, results, md,
           outdir, cache, no_build=False):
    """Returns True when some method FAILED."""
    build_plugin(no_build)
    failed = False
    for name in set_names:
        spec = sets.REGISTRY[name]
        params = spec.params({"files": files_4k} if name == "4k" else None)
        with runner.open_set(spec, params, workdir=workdir, keep=keep, fs=fs, root=root) as (ws, plan, sinfo):
            parent, member = ws.set_dir.parent, ws.set_dir.name
            info = {"set": name, "scenario": "t1", "description": sinfo["description"], "params": params,
                    "files": plan.files, "bytes": plan.bytes, "source": sinfo, "methods": {}}
            results["sets"][f"t1-{name}"] = info
            if do_verify:
                info["verify"] = verify_same_archives(parent, member, scratch, timeout)
                util.log(f"T1 {name}: archives plain vs --use-bfo: {info['verify']}")
                if any(v != "ok" for v in info["verify"].values()):
                    failed = True
            times = {m: [] for m in METHODS}
            stats = {}
            util.log(f"T1 {name}: {len(METHODS)} methods x {repeat} rounds, {cache} cache")
            for rnd in range(repeat):
                for m in METHODS:
                    sf = Path(scratch) / "t1-bfo-stats"
                    if sf.exists():
                        sf.unlink()
                    r = timed(m, parent, member, root=root, timeout=timeout, stats_file=sf)
                    if not r.ok:
                        failed = True
                        info["methods"][m] = {"status": "FAILED", "error": (r.stderr or "").strip()[-500:]}
                        util.warn(f"T1 {name} {m}: failed: {(r.stderr or '').strip()[-300:]}")
                        continue
                    times[m].append(r.seconds)
                    if m == "tar-bfo" and sf.exists():
                        stats = sf.read_text().strip()
                    util.log(f"  round {rnd + 1} {m}: {r.seconds:.2f}s")
            for m, ts in times.items():
                if ts:
                    info["methods"][m] = {"status": "ok", "seconds": util.summarize(ts), "runs": ts,
                                          "description": METHODS[m][1]}
            info["plugin_stats"] = stats
            block = t1_heading(info, cache) + "\n\n" + t1_table(info) + "\n"
            md.append(block)
            print("\n" + block, flush=True)
            if outdir:
                (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
                (outdir / "table.md").write_text("\n".join(md))
    return failed


def t1_heading(info, cache):
    return (f"## T1 tar create: {info['set']} ({info['files']:,} files, {util.human_bytes(info['bytes'])}), "
            f"{cache} cache\n\n{info['description']}; archive to a pipe read by cat. Archives plain vs "
            f"--use-bfo: {info.get('verify', 'not verified')}. Plugin: {info.get('plugin_stats') or '-'}")


def t1_table(info):
    med = {m: r["seconds"]["median"] for m, r in info["methods"].items() if r.get("status") == "ok"}
    rows = []
    for m in METHODS:
        r = info["methods"].get(m)
        if not r or r.get("status") != "ok":
            rows.append([m, "FAILED", "", "", ""])
            continue
        s = r["seconds"]
        rows.append([m, f"{s['median']:.2f}", f"{s['min']:.2f}-{s['max']:.2f}",
                     f"{med['tar-plain'] / s['median']:.2f}x" if "tar-plain" in med else "",
                     f"{med['tar-inode'] / s['median']:.2f}x" if "tar-inode" in med else ""])
    return util.md_table(["method", "median s", "range s", "vs plain", "vs --sort=inode"], rows)


def main(args, *, root, cache):
    """bench --scenario t1 entry point (the lock on workdir is taken here)."""
    from .workspace import WorkdirLock
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {"kind": "bench", "scenario": "t1", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": list(os.sys.argv), "cache": cache, "machine": runner.machine_info(workdir),
               "sets": {}, "complete": False}
    set_names = args.sets.split(",") if args.sets else (["4k"] if args.quick else list(T1_SETS))
    for n in set_names:
        if n not in sets.REGISTRY:
            raise SystemExit(f"unknown set {n!r}; known: {', '.join(sets.REGISTRY)}")
    repeat = args.repeat or (1 if args.quick else 3)
    files_4k = args.files or (20_000 if args.quick else None)
    md = [f"# BFO T1 tar benchmark, {results['started']}\n",
          f"{results['machine']['os']}, kernel {results['machine']['kernel']}, "
          f"{results['machine']['cpu_count']} CPUs; {cache} cache; repeat {repeat}\n"]
    failed = False
    with WorkdirLock(workdir):
        outdir = report.results_dir(args.results_dir, workdir, suffix="-t1")
        util.log(f"results: {outdir}")
        scratch = workdir / f"scratch-{os.getpid()}"
        scratch.mkdir(exist_ok=True)
        try:
            failed = run_t1(set_names=set_names, files_4k=files_4k, fs=(args.fs or "ext4"), repeat=repeat,
                            do_verify=not args.no_verify, root=root, timeout=args.timeout, workdir=workdir,
                            keep=args.keep, scratch=scratch, results=results, md=md, outdir=outdir, cache=cache,
                            no_build=args.no_build)
            results["complete"] = True
        finally:
            with util.cleaning():
                for f in scratch.glob("*"):
                    f.unlink()
                scratch.rmdir()
            (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
            (outdir / "table.md").write_text("\n".join(md))
    util.log(f"results: {outdir}")
    return 1 if failed else 0
