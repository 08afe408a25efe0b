"""The read, write (W1) and copy (M1) scenarios: the loops around runner.run_methods.

Read, per set: the set's image (generated once, or reused with --keep), every method read from it.

W1, per destination file system (ext4, xfs): the 4k set's files (same names,
same bytes, same order as the read benchmark's 4k set) as one stream file in
bfo write's simple format (and a second stream file with the first
--fsync-files of them for the fsync-per-file baseline), generated once into
the scratch dir; every method run, verification included, writes onto a
brand-new file system (mkfs before every run).

M1, per set (4k, mixed) and destination file system: the set's image is the
source (generated, synced, a few metadata extras added), every method run
copies it onto a brand-new destination file system (mkfs before every run).

M2, per set (4k, mixed): as M1 without the extras, but the copy goes to
another machine over ssh: harness/remote.py's network namespace (veth pair,
1 Gbit/s each way, its own sshd), made once for the whole run; every method
run copies the set into an empty directory on a brand-new file system (the
receiver's, mkfs before every run).
"""

import json
import time

from . import methods as methods_mod
from . import report, runner, sets, util, verify, writecopy
from .workspace import FreshFs

W1_SPEC = "4k"


def _emit(md, block, outdir, results):
    md.append(block)
    print("\n" + block, flush=True)
    (outdir / "results.json").write_text(json.dumps(results, indent=1, default=str))


def _applicable(chosen, explicit, fs):
    return [m for m in chosen if explicit or not m.fs or fs in m.fs]


def run_read(*, set_names, files_4k, fs, keep, chosen, repeat, do_verify, root, timeout, workdir, scratch,
             helpers, bfo, results, md, outdir, cache):
    """Returns True when some method FAILED."""
    failed = False
    for name in set_names:
        spec = sets.REGISTRY[name]
        params = spec.params({"files": files_4k} if name == "4k" else None)
        with runner.open_set(spec, params, workdir=workdir, keep=keep, fs=fs, root=root) as (ws, plan, info):
            ctx = methods_mod.Ctx(set_name=name, ws=ws, files=plan.files, bytes=plan.bytes, helpers=helpers,
                                  bfo=bfo, refs=verify.References(ws.set_dir, helpers), root=root,
                                  scratch=scratch)
            util.log(f"set {name}: {len(chosen)} methods x {repeat} rounds, {cache} cache")
            results["sets"][name] = info
            info["methods"] = {}
            runner.run_methods(ctx, chosen, repeat=repeat, do_verify=do_verify, root=root, timeout=timeout,
                               into=info["methods"])
            info["reference"] = ctx.refs.xxh_source
            if "allocated_bytes" in ctx.extra:
                info["image_allocated_bytes"] = ctx.extra["allocated_bytes"]
        info["complete"] = True
        if any(r["status"] == "FAILED" for r in info["methods"].values()):
            failed = True
        _emit(md, report.set_heading(info, cache) + "\n\n" + report.set_table(info) + "\n", outdir, results)
    return failed


def run_w1(*, fs_list, files, file_size=None, fsync_files, chosen, explicit, repeat, do_verify, root, timeout,
           workdir, scratch, helpers, bfo, results, md, outdir, cache):
    """Returns True when some method FAILED."""
    spec = sets.REGISTRY[W1_SPEC]
    params = spec.params({"files": files, "size": file_size})
    plan = spec.plan(params)
    stream = scratch / "w1.stream"
    n_sub = fsync_files if fsync_files and 0 < fsync_files < plan.files else None
    subset = scratch / f"w1-first-{n_sub}.stream" if n_sub else stream
    util.log(f"W1: writing the input stream ({plan.files:,} files, {plan.bytes / 1e6:,.1f} MB) to {stream}"
             + (f" and the first {n_sub:,} files to {subset}" if n_sub else ""))
    t0 = time.monotonic()
    ref = sets.write_stream(spec, params, plan, [(stream, None)] + ([(subset, n_sub)] if n_sub else []))
    gen_s = time.monotonic() - t0
    subset_ref = dict(list(ref.items())[:n_sub]) if n_sub else ref
    size, inodes, need = spec.image_geometry(plan)
    failed = False
    if not root:
        from .workspace import findmnt
        here = findmnt(workdir)[1] or "dir"
        util.log(f"W1 not root: no new file systems; every run writes into a new directory under {workdir} "
                 f"({here}), warm cache")
        fs_list = [here]
    for fs in fs_list:
        key = f"w1-{fs}"
        ms = _applicable(chosen, explicit, fs)
        info = {"set": key, "scenario": "w1", "fs": fs,
                "description": f"the {W1_SPEC} set's files ({params['size']:,} bytes each, {len(plan.dirs)} "
                               "directories, the same names and bytes, in its shuffled creation order) from one "
                               "stream file in bfo write's simple format (`f 644 - SIZE PATH`: no times set), read "
                               "into the page cache after the cache drop, "
                               "written into DIR=MNT/w1 on a new file system made before every run",
                "params": params, "files": plan.files, "bytes": plan.bytes, "dirs": len(plan.dirs),
                "stream": {"path": str(stream), "bytes": stream.stat().st_size, "generate_seconds": gen_s,
                           "subset_path": str(subset), "subset_files": len(subset_ref),
                           "subset_bytes": subset.stat().st_size},
                "methods": {}}
        results["sets"][key] = info
        util.log(f"W1 on {fs}: {len(ms)} methods x {repeat} rounds, {cache} cache, a new {fs} per run")
        with FreshFs(workdir, "w1dst", fs, size, inodes, root, need_bytes=need) as dest:
            ctx = methods_mod.Ctx(set_name=key, ws=None, files=plan.files, bytes=plan.bytes, helpers=helpers,
                                  bfo=bfo, refs=None, root=root, scratch=scratch, dest=dest, fs=fs,
                                  extra={"stream": stream, "stream_ref": ref, "subset": subset,
                                         "subset_ref": subset_ref})
            runner.run_methods(ctx, ms, repeat=repeat, do_verify=do_verify, root=root, timeout=timeout,
                               into=info["methods"])
            info["workspace"] = dest.info
            info["filesystems_made"] = dest.count
        info["complete"] = True
        if any(r["status"] == "FAILED" for r in info["methods"].values()):
            failed = True
        block = (report.w1_heading(info, cache) + "\n\n" + report.w1_table(info) + "\n\n" + report.w1_notes(info)
                 + "\n")
        _emit(md, block, outdir, results)
    for p in {stream, subset}:
        try:
            p.unlink()
        except FileNotFoundError:
            pass
    return failed


def _source_listing(set_dir, label):
    """The copy scenarios' source: its listing with hashes, regular files and their bytes."""
    t0 = time.monotonic()
    src_list = writecopy.listing(set_dir, hashes=True)
    util.log(f"{label}: source listed and hashed ({len(src_list):,} entries) [{time.monotonic() - t0:.1f}s]")
    files = [v for v in src_list.values() if v["type"] == "f"]
    return src_list, len(files), sum(v["size"] for v in files)


def run_m1(*, set_names, files_4k, src_fs, dest_fs, extras, chosen, repeat, do_verify, root, timeout, workdir,
           keep, scratch, helpers, bfo, results, md, outdir, cache):
    """Returns True when some method FAILED."""
    failed = False
    for name in set_names:
        spec = sets.REGISTRY[name]
        params = spec.params({"files": files_4k} if name == "4k" else None)
        with runner.open_set(spec, params, workdir=workdir, keep=keep, fs=src_fs, root=root) as (ws, plan, sinfo):
            n_extra = writecopy.add_meta_extras(ws.set_dir, root=root) if extras else 0
            try:
                src_list, nfiles, nbytes = _source_listing(ws.set_dir, f"M1 {name}")
                size, inodes, need = spec.image_geometry(plan)
                for dfs in dest_fs:
                    key = f"m1-{name}-{dfs}"
                    info = {"set": name, "scenario": "m1", "fs": dfs, "src_fs": src_fs,
                            "description": f"SRC = the {name} set's directory on its {src_fs} image ({sinfo['description']}"
                                           + (f"; plus {n_extra} entries in SRC/{writecopy.EXTRAS_DIR}/ with other "
                                              "owners, modes, times and symbolic links" if n_extra else "")
                                           + f"), DST = MNT/copy on a new {dfs} made before every run",
                            "params": params, "files": nfiles, "bytes": nbytes, "entries": len(src_list),
                            "extras": n_extra, "source": sinfo, "methods": {}}
                    results["sets"][key] = info
                    util.log(f"M1 {name} -> {dfs}: {len(chosen)} methods x {repeat} rounds, {cache} cache")
                    with FreshFs(workdir, f"m1dst-{name}", dfs, size, inodes + 1000, root, need_bytes=need) as dest:
                        ctx = methods_mod.Ctx(set_name=name, ws=ws, files=nfiles, bytes=nbytes, helpers=helpers,
                                              bfo=bfo, refs=None, root=root, scratch=scratch, dest=dest, fs=dfs,
                                              extra={"src_list": src_list})
                        runner.run_methods(ctx, chosen, repeat=repeat, do_verify=do_verify, root=root,
                                           timeout=timeout, into=info["methods"])
                        info["workspace"] = dest.info
                        info["filesystems_made"] = dest.count
                    info["complete"] = True
                    if any(r["status"] == "FAILED" for r in info["methods"].values()):
                        failed = True
                    block = (report.m1_heading(info, cache) + "\n\n" + report.m1_table(info) + "\n\n"
                             + report.m1_notes(info) + "\n")
                    _emit(md, block, outdir, results)
            finally:
                if n_extra and keep:
                    with util.cleaning():
                        writecopy.remove_meta_extras(ws.set_dir)
    return failed


def run_m2(*, set_names, files_4k, src_fs, dest_fs, chosen, repeat, do_verify, root, timeout, workdir, keep,
           scratch, helpers, bfo, results, md, outdir, cache):
    """Returns True when some method FAILED."""
    from .remote import RATE, RATE_BITS, RemoteMachine
    if not root:
        raise RuntimeError("M2 needs root: it makes a network namespace, a veth pair, qdiscs, an sshd and loop "
                           "file systems")
    failed = False
    with RemoteMachine(workdir) as machine:
        results["m2_machine"] = machine.info
        for name in set_names:
            spec = sets.REGISTRY[name]
            params = spec.params({"files": files_4k} if name == "4k" else None)
            with runner.open_set(spec, params, workdir=workdir, keep=keep, fs=src_fs, root=root) as (ws, plan,
                                                                                                   sinfo):
                src_list, nfiles, nbytes = _source_listing(ws.set_dir, f"M2 {name}")
                size, inodes, need = spec.image_geometry(plan)
                for dfs in dest_fs:
                    key = f"m2-{name}-{dfs}"
                    info = {"set": name, "scenario": "m2", "fs": dfs, "src_fs": src_fs,
                            "description": f"SRC = the {name} set's directory on its {src_fs} image "
                                           f"({sinfo['description']}) on this host; DST = MNT/{methods_mod.M2_DST} "
                                           f"on a new {dfs} made before every run, written by the machine "
                                           f"{machine.login} (network namespace {machine.ns}, veth with tbf "
                                           f"{RATE} each way, its own sshd); the copy is DST/{name}",
                            "params": params, "files": nfiles, "bytes": nbytes, "entries": len(src_list),
                            "link_rate_bits": RATE_BITS, "link_seconds": nbytes / (RATE_BITS / 8),
                            "source": sinfo, "methods": {}}
                    results["sets"][key] = info
                    util.log(f"M2 {name} -> {machine.login} {dfs}: {len(chosen)} methods x {repeat} rounds, "
                             f"{cache} cache")
                    with FreshFs(workdir, f"m2dst-{name}", dfs, size, inodes + 1000, root, need_bytes=need) as dest:
                        ctx = methods_mod.Ctx(set_name=name, ws=ws, files=nfiles, bytes=nbytes, helpers=helpers,
                                              bfo=bfo, refs=None, root=root, scratch=scratch, dest=dest, fs=dfs,
                                              extra={"src_list": src_list, "machine": machine})
                        runner.run_methods(ctx, chosen, repeat=repeat, do_verify=do_verify, root=root,
                                           timeout=timeout, into=info["methods"])
                        info["workspace"] = dest.info
                        info["filesystems_made"] = dest.count
                    info["complete"] = True
                    if any(r["status"] == "FAILED" for r in info["methods"].values()):
                        failed = True
                    block = (report.m2_heading(info, cache) + "\n\n" + report.m2_table(info) + "\n\n"
                             + report.m2_notes(info) + "\n")
                    _emit(md, block, outdir, results)
    return failed
