"""T1: GNU tar create, plain vs --sort=inode vs --use-bfo (the tar plugin).

Per set (default 4k and mixed), on the set's own ext4 image (a direct-I/O
loop device, as the read scenario makes it), cold cache before every run
(root):

  tar-plain    tar -cf - -C MNT SET | cat > /dev/null
  tar-inode    tar --sort=inode -cf - ...
  tar-bfo      tar --use-bfo -cf - ...     (tar-plugin/bin/tar, libbfo_tar.so)
  bfo-read     bfo read MNT/SET             (a reference, not a tar: the set
               read in one libbfo batch planned over all of it, which
               tar-bfo, reading bounded lots in tar's order, cannot beat)
  tar-warm     tar -cf - -C MNT SET | cat, with every file of the set read
               into the page cache (untimed) after the drop: tar with no
               device to wait for, the floor any read-ahead can reach (a
               reference; its ratio to tar-plain is the most any read-ahead
               can gain on this machine)

The archive goes to a pipe read by a consumer (cat), never to /dev/null
(GNU tar does not read the files when the archive is /dev/null), so every
file is read.  The pipe holds 1 MiB (F_SETPIPE_SZ), for every method, so
the archive write is not the bottleneck: through a default 64 KiB pipe,
tar (10 KiB records) and cat wake each other every 64 KiB, and on two
cores that costs more CPU than reading a cached 1 GiB tree (warm, plain
tar of the mixed set: 1.5 s through 64 KiB, 0.8 s through 1 MiB).  Before the
timed rounds, tar-plain and tar-bfo each write their archive to a file
(untimed) and the two must be byte-identical; the same for --sort=inode
with and without --use-bfo.  Rounds visit the methods in turn; the median
of --repeat rounds is reported, with ratios against tar-plain and
tar-inode measured in the same run on the same data.

T2: GNU tar extract, then sync, plain vs --use-bfo.  Per set (default 4k,
3k5 and mixed), the archive is made once (plain GNU tar, from the set's
image, into the work dir: not the destination) and each timed run extracts
it onto a brand-new file system (mkfs before every run, as W1/M1), cold
cache before every run:

  xtar-plain   cd DST && tar -xf ARCHIVE && sync
  xtar-bfo     cd DST && tar --use-bfo -xf ARCHIVE && sync
               (the plugin commits at exit itself; the same sync is
               timed for fairness)
  cat-copy     cd DST && cat ARCHIVE > one-file && sync
               (a reference, not a tar: the archive read and its bytes
               written as one file, with nothing to create per member)

In the first round each extracted tree is listed (untimed, after a
remount, so from the device) and the two trees must be identical: every
entry's type, mode, owner, mtime (ns), size, link target and sha256.
"""

import fcntl
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

from . import report, runner, sets, util, writecopy
from .workspace import FreshFs

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "tar-plugin"
FRONT = PLUGIN_DIR / "bin" / "tar"
PLUGIN = PLUGIN_DIR / "build" / "libbfo_tar.so"
T1_SETS = ("4k", "mixed")
T2_SETS = ("4k", "3k5", "mixed")   # issue 20: T2 at least 1.5x on 3-4 KB files too

METHODS = {
    "tar-plain": ([], "GNU tar -cf - DIR | cat"),
    "tar-inode": (["--sort=inode"], "GNU tar --sort=inode -cf - DIR | cat"),
    "tar-bfo": (["--use-bfo"], "tar --use-bfo -cf - DIR | cat (libbfo_tar.so preloaded)"),
    # A reference, not a tar: the same files read by libbfo in one batch
    # planned over the whole set, with no tar, no archive and no memory
    # bound on the plan: what tar-bfo's bounded lots cannot beat.
    "bfo-read": (None, "bfo read DIR (the set in one libbfo batch; no tar, no archive)"),
    # A reference: plain tar with nothing to wait for (the files read into
    # the page cache, untimed, before the clock starts): tar's own CPU and
    # the pipe, the floor of any read-ahead on this machine.
    "tar-warm": ([], "GNU tar -cf - DIR | cat, the set's files in the page cache first (untimed)"),
    # An ordinary user's tar (util.as_nobody): uid 65534, soft descriptor limit 1024.
    "tar-plain-nobody": ([], f"GNU tar -cf - DIR | cat, {util.NOBODY_LABEL}"),
    "tar-bfo-nobody": (["--use-bfo"], f"tar --use-bfo -cf - DIR | cat, {util.NOBODY_LABEL}"),
}
BFO_CLI = REPO / "bfo-native" / "build" / "bfo"


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
    cmd = [str(FRONT)] + METHODS[method][0] + ["-cf", out, "-C", str(parent), name]
    return util.as_nobody(cmd) if method.endswith(util.NOBODY_SUFFIX) else cmd


def _nobody_rows(methods, paths, readable, writable=()):
    """The rows as uid 65534, when that user can run them here; else None, said once."""
    why = util.nobody_cannot(paths, readable=readable, writable=writable)
    if why:
        util.warn(f"rows as an ordinary user left out: {why}")
        return [m for m in methods if not m.endswith(util.NOBODY_SUFFIX)]
    return list(methods)


def _nobody_file(path):
    """path, empty and writable by uid 65534 (the plugin's stats of a row run as that user)."""
    Path(path).write_text("")
    os.chown(path, util.NOBODY_UID, util.NOBODY_GID)


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def verify_same_archives(parent, name, scratch, timeout, nobody=False):
    """Untimed: plain and --use-bfo archives are byte-identical (default
    order and --sort=inode; nobody: both made as uid 65534 at the soft
    descriptor limit 1024).  Returns {check: 'ok' or a problem}."""
    out = {}
    for label, extra in (("default order", []), ("--sort=inode", ["--sort=inode"])):
        digests = {}
        for use_bfo in (False, True):
            f = Path(scratch) / f"t1-{'bfo' if use_bfo else 'plain'}.tar"
            cmd = [str(FRONT)] + (["--use-bfo"] if use_bfo else []) + extra + ["-cf", str(f), "-C", str(parent), name]
            if nobody:
                _nobody_file(f)
                cmd = util.as_nobody(cmd)
            r = util.run(cmd, env=_env(), timeout=timeout)
            if not r.ok:
                raise RuntimeError(f"T1 verify: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[:500]}")
            digests[use_bfo] = _sha256(f)
            f.unlink()
        out[label] = "ok" if digests[False] == digests[True] else "DIFFERENT ARCHIVES"
    return out


F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
PIPE_BYTES = 1 << 20      # the default pipe-max-size: no privilege needed


def timed(method, parent, name, *, root, timeout, stats_file):
    """One cold run: the archive into a 1 MiB pipe read by cat (started
    before the clock; after tar exits it has at most the pipe's 1 MiB left)."""
    runner.cold(root)
    if method == "tar-warm":
        util.run(["bash", "-c", f"find {_quote(Path(parent) / name)} -type f -print0 | xargs -0r cat > /dev/null"],
                 check=True, timeout=timeout)
    if method == "bfo-read":
        return util.run([BFO_CLI, "read", "--no-progress", Path(parent) / name], stdout=subprocess.DEVNULL,
                        timeout=timeout)
    env = _env()
    if method.startswith("tar-bfo"):
        env["BFO_TAR_STATS"] = str(stats_file)
        if method.endswith(util.NOBODY_SUFFIX):
            _nobody_file(stats_file)
    rfd, wfd = os.pipe()
    try:
        fcntl.fcntl(wfd, F_SETPIPE_SZ, PIPE_BYTES)
    except OSError as e:
        util.warn(f"T1: pipe of {PIPE_BYTES} bytes refused ({e}); the default pipe is used")
    cat = subprocess.Popen(["cat"], stdin=rfd, stdout=subprocess.DEVNULL)
    os.close(rfd)
    try:
        r = util.run(_tar_cmd(method, parent, name, "-"), env=env, timeout=timeout, stdout=wfd)
    finally:
        os.close(wfd)
        try:
            cat.wait(timeout=60)
        except subprocess.TimeoutExpired:
            cat.kill()
            cat.wait()
    if r.ok and cat.returncode != 0:
        r.returncode = 1
        r.stderr = (r.stderr or "") + f"\ncat exited with {cat.returncode}"
    return r


def _quote(s):
    return "'" + str(s).replace("'", "'\\''") + "'"


def _timed_round(label, rnd, m, run, info, times, stats_file):
    """One round of method m: run(stats_file) is timed into times[m], or its failure goes to info. Returns
    (ok, the plugin's stats line or None): only the --use-bfo methods are given the stats file."""
    if stats_file.exists():
        stats_file.unlink()
    r = run(stats_file)
    if not r.ok:
        info["methods"][m] = {"status": "FAILED", "error": (r.stderr or "").strip()[-500:]}
        util.warn(f"{label} {m}: failed: {(r.stderr or '').strip()[-300:]}")
        return False, None
    times[m].append(r.seconds)
    util.log(f"  round {rnd + 1} {m}: {r.seconds:.2f}s")
    return True, stats_file.read_text().strip() if stats_file.exists() else None


def _publish(info, times, methods, stats, block_of, *, results, md, outdir):
    """The methods' times summarized into info (a method that failed in any round stays FAILED), then its
    table block printed and the results written."""
    for m, ts in times.items():
        if ts and info["methods"].get(m, {}).get("status") != "FAILED":
            info["methods"][m] = {"status": "ok", "seconds": util.summarize(ts), "runs": ts,
                                  "description": methods[m][1]}
    info["plugin_stats"] = stats
    block = block_of(info)
    md.append(block)
    print("\n" + block, flush=True)
    if outdir:
        (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
        (outdir / "table.md").write_text("\n".join(md))


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
            methods = _nobody_rows(METHODS, [FRONT, PLUGIN, ws.set_dir], [PLUGIN, ws.set_dir])
            if do_verify:
                info["verify"] = verify_same_archives(parent, member, scratch, timeout)
                util.log(f"T1 {name}: archives plain vs --use-bfo: {info['verify']}")
                if "tar-bfo-nobody" in methods:
                    info["verify_nobody"] = verify_same_archives(parent, member, scratch, timeout, nobody=True)
                    util.log(f"T1 {name}: archives plain vs --use-bfo, as uid {util.NOBODY_UID}: "
                             f"{info['verify_nobody']}")
                if any(v != "ok" for v in list(info["verify"].values()) + list(info.get("verify_nobody", {}).values())):
                    failed = True
            times = {m: [] for m in methods}
            stats = ""
            util.log(f"T1 {name}: {len(methods)} methods x {repeat} rounds, {cache} cache")
            for rnd in range(repeat):
                for m in methods:
                    ok, st = _timed_round(
                        f"T1 {name}", rnd, m,
                        lambda sf, m=m: timed(m, parent, member, root=root, timeout=timeout, stats_file=sf),
                        info, times, Path(scratch) / "t1-bfo-stats")
                    failed |= not ok
                    stats = st or stats
            _publish(info, times, METHODS, stats, lambda i: t1_heading(i, cache) + "\n\n" + t1_table(i) + "\n",
                     results=results, md=md, outdir=outdir)
    return failed


def t1_heading(info, cache):
    return (f"## T1 tar create: {info['set']} ({info['files']:,} files, {util.human_bytes(info['bytes'])}), "
            f"{cache} cache\n\n{info['description']}; archive to a 1 MiB pipe read by cat. Archives plain vs "
            f"--use-bfo: {info.get('verify', 'not verified')}"
            + (f"; as uid {util.NOBODY_UID}: {info['verify_nobody']}" if info.get("verify_nobody") else "")
            + f". Plugin: {info.get('plugin_stats') or '-'}. Rows -nobody: {util.NOBODY_LABEL}.")


def _table(info, methods, against):
    """Median, range and the speed-up against each (column, baseline method) of against."""
    med = {m: r["seconds"]["median"] for m, r in info["methods"].items() if r.get("status") == "ok"}
    rows = []
    for m in methods:
        r = info["methods"].get(m)
        if not r and m.endswith(util.NOBODY_SUFFIX):
            continue        # rows as an ordinary user: not run here (said in the log)
        if not r or r.get("status") != "ok":
            rows.append([m, "FAILED", ""] + [""] * len(against))
            continue
        s = r["seconds"]
        rows.append([m, f"{s['median']:.2f}", f"{s['min']:.2f}-{s['max']:.2f}"] +
                    [f"{med[b] / s['median']:.2f}x" if b in med else "" for _, b in against])
    return util.md_table(["method", "median s", "range s"] + [title for title, _ in against], rows)


def t1_table(info):
    return _table(info, METHODS, [("vs plain", "tar-plain"), ("vs --sort=inode", "tar-inode"),
                                  ("vs plain as nobody", "tar-plain-nobody")])


T2_METHODS = {
    "xtar-plain": ([], "cd DST && GNU tar -xf ARCHIVE && sync"),
    "xtar-bfo": (["--use-bfo"], "cd DST && tar --use-bfo -xf ARCHIVE && sync (libbfo_tar.so preloaded)"),
    # A reference, not a tar: the archive's bytes read and written back as
    # one file, then sync: the same reading and about the same writing as an
    # extraction, with no file to create and no metadata.
    "cat-copy": (None, "cd DST && cat ARCHIVE > one-file && sync (no tar)"),
    # An ordinary user's extraction into a directory of theirs (util.as_nobody), then sync.
    "xtar-plain-nobody": ([], f"cd DST && GNU tar -xf ARCHIVE && sync, {util.NOBODY_LABEL}"),
    "xtar-bfo-nobody": (["--use-bfo"], f"cd DST && tar --use-bfo -xf ARCHIVE && sync, {util.NOBODY_LABEL}"),
}


def _t2_timed(method, archive, dest_dir, *, root, timeout, stats_file):
    """One cold run: extract ARCHIVE into dest_dir, then sync."""
    runner.cold(root)
    if method == "cat-copy":
        return util.run(["bash", "-c", f"cd {_quote(dest_dir)} && cat {_quote(archive)} > one-file && sync"],
                        timeout=timeout)
    tar = " ".join(_quote(a) for a in [str(FRONT)] + T2_METHODS[method][0] + ["-xf", str(archive)])
    env = _env()
    if method.startswith("xtar-bfo"):
        env["BFO_TAR_STATS"] = str(stats_file)
    cmd = ["bash", "-c", f"cd {_quote(dest_dir)} && {tar} && sync"]
    if method.endswith(util.NOBODY_SUFFIX):
        os.chown(dest_dir, util.NOBODY_UID, util.NOBODY_GID)
        if method.startswith("xtar-bfo"):
            _nobody_file(stats_file)
        cmd = util.as_nobody(cmd)
    return util.run(cmd, env=env, timeout=timeout)


def _t2_compare(a, b):
    """Two listings (writecopy.listing with hashes, '.' left out: it is the
    mount point, not extracted) -> 'ok' or what differs."""
    a = {k: v for k, v in a.items() if k not in (".", "lost+found")}
    b = {k: v for k, v in b.items() if k not in (".", "lost+found")}
    probs = []
    if set(a) != set(b):
        probs.append(f"entries only in plain: {sorted(set(a) - set(b))[:3]}, "
                     f"only with --use-bfo: {sorted(set(b) - set(a))[:3]}")
    diff = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    if diff:
        probs.append(f"{len(diff)} entries differ, e.g. {diff[0]}: {a[diff[0]]} vs {b[diff[0]]}")
    if probs:
        return "DIFFERENT TREES: " + "; ".join(probs)
    nf = sum(1 for v in a.values() if v["type"] == "f")
    return f"ok ({nf:,} files, {len(a) - nf:,} other entries: same contents and metadata)"


def run_t2(*, set_names, files_4k, fs, repeat, do_verify, root, timeout, workdir, keep, scratch, results, md,
           outdir, cache, no_build=False):
    """Returns True when some method FAILED."""
    build_plugin(no_build)
    failed = False
    for name in set_names:
        spec = sets.REGISTRY[name]
        params = spec.params({"files": files_4k} if name == "4k" else None)
        archive = Path(scratch) / f"t2-{name}.tar"
        with runner.open_set(spec, params, workdir=workdir, keep=keep, fs=fs, root=root) as (ws, plan, sinfo):
            r = util.run([gnu_tar(), "-cf", archive, "-C", ws.set_dir.parent, ws.set_dir.name], env=_env(),
                         timeout=timeout)
            if not r.ok:
                raise RuntimeError(f"T2: making the archive failed: {r.stderr.strip()[:500]}")
            size, inodes, need = spec.image_geometry(plan)
            info = {"set": name, "scenario": "t2", "description": sinfo["description"], "params": params,
                    "files": plan.files, "bytes": plan.bytes, "archive_bytes": archive.stat().st_size,
                    "source": sinfo, "methods": {}}
        results["sets"][f"t2-{name}"] = info
        methods = _nobody_rows(T2_METHODS, [FRONT, PLUGIN, archive], [PLUGIN, archive])
        util.log(f"T2 {name}: archive {util.human_bytes(info['archive_bytes'])}; {len(methods)} methods x "
                 f"{repeat} rounds, {cache} cache, a new {fs} per run")
        times = {m: [] for m in methods}
        trees = {}
        stats = ""
        try:
            with FreshFs(workdir, f"t2dst-{name}", fs, size, inodes + 1000, root, need_bytes=need) as dest:
                for rnd in range(repeat):
                    for m in methods:
                        droot = dest.new()
                        ok, st = _timed_round(
                            f"T2 {name}", rnd, m,
                            lambda sf, m=m, d=droot: _t2_timed(m, archive, d, root=root, timeout=timeout,
                                                               stats_file=sf),
                            info, times, Path(scratch) / "t2-bfo-stats")
                        if not ok:
                            failed = True
                            continue
                        stats = st or stats
                        if do_verify and rnd == 0 and m.startswith("xtar-"):
                            dest.remount()
                            trees[m] = writecopy.listing(dest.root, hashes=True)
                    info["filesystems_made"] = dest.count
                    info["workspace"] = dest.info
        finally:
            with util.cleaning():
                archive.unlink()
        if do_verify:
            info["verify"] = (_t2_compare(trees["xtar-plain"], trees["xtar-bfo"])
                              if "xtar-plain" in trees and "xtar-bfo" in trees else "not verified (a method failed)")
            util.log(f"T2 {name}: trees plain vs --use-bfo: {info['verify']}")
            if not info["verify"].startswith("ok"):
                failed = True
            if "xtar-bfo-nobody" in methods:
                info["verify_nobody"] = (_t2_compare(trees["xtar-plain-nobody"], trees["xtar-bfo-nobody"])
                                         if "xtar-plain-nobody" in trees and "xtar-bfo-nobody" in trees
                                         else "not verified (a method failed)")
                util.log(f"T2 {name}: trees plain vs --use-bfo as uid {util.NOBODY_UID}: {info['verify_nobody']}")
                if not info["verify_nobody"].startswith("ok"):
                    failed = True
        _publish(info, times, T2_METHODS, stats,
                 lambda i: t2_heading(i, cache, fs) + "\n\n" + t2_table(i) + "\n",
                 results=results, md=md, outdir=outdir)
    return failed


def t2_heading(info, cache, fs):
    return (f"## T2 tar extract + sync: {info['set']} ({info['files']:,} files, {util.human_bytes(info['bytes'])}; "
            f"archive {util.human_bytes(info['archive_bytes'])}), {cache} cache, a new {fs} per run\n\n"
            f"{info['description']}. Trees plain vs --use-bfo: {info.get('verify', 'not verified')}"
            + (f"; as uid {util.NOBODY_UID}: {info['verify_nobody']}" if info.get("verify_nobody") else "")
            + f". Plugin: {info.get('plugin_stats') or '-'}. Rows -nobody: {util.NOBODY_LABEL}.")


def t2_table(info):
    return _table(info, T2_METHODS, [("vs plain", "xtar-plain"), ("vs plain as nobody", "xtar-plain-nobody")])


def main(args):
    """bench --scenario t1 / t2 entry point (the lock on workdir is taken here)."""
    sc = args.scenario
    root = util.is_root()
    cache = "cold" if root else "warm"
    from .workspace import WorkdirLock
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {"kind": "bench", "scenario": sc, "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": list(os.sys.argv), "cache": cache, "machine": runner.machine_info(workdir),
               "sets": {}, "complete": False}
    set_names = args.sets.split(",") if args.sets else (["4k"] if args.quick else
                                                         list(T2_SETS if sc == "t2" else T1_SETS))
    for n in set_names:
        if n not in sets.REGISTRY:
            raise SystemExit(f"unknown set {n!r}; known: {', '.join(sets.REGISTRY)}")
    repeat = args.repeat or (1 if args.quick else 3)
    files_4k = args.files or (20_000 if args.quick else None)
    md = [f"# BFO {sc.upper()} tar benchmark, {results['started']}\n",
          f"{results['machine']['os']}, kernel {results['machine']['kernel']}, "
          f"{results['machine']['cpu_count']} CPUs; {cache} cache; repeat {repeat}\n"]
    failed = False
    with WorkdirLock(workdir):
        outdir = report.results_dir(args.results_dir, workdir, suffix=f"-{sc}")
        util.log(f"results: {outdir}")
        scratch = workdir / f"scratch-{os.getpid()}"
        scratch.mkdir(exist_ok=True)
        try:
            failed = (run_t2 if sc == "t2" else run_t1)(set_names=set_names, files_4k=files_4k, fs=(args.fs or "ext4"), repeat=repeat,
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
