"""Checks and inputs of the write (W1) and copy (M1) scenarios.

- listing(): lstat of every entry of a tree (type, mode, owner, mtime, size,
  symlink target), optionally with the SHA-256 of every regular file (read
  with threads, like verify.References.sha256);
- check_written(): a W1 tree against the stream it came from (exactly these
  files, these bytes, these modes; nothing else: no .bfo-journal, no
  .bfo-tmp.*, no stem leftovers; the file system's root holds only the
  target and lost+found);
- compare_trees(): an M1 or M2 copy against its source (contents by hash and
  metadata: type, mode, uid/gid, mtime to the nanosecond, symlink targets,
  directories included, the copy's root included);
- quick_count(): the cheap check after every timed run (file count, bytes,
  leftovers), while the tree is still in the page cache;
- add_meta_extras(): a few entries with other owners, modes, times and
  symbolic links, added to an M1 source so the metadata checks have
  something to check (the 4k and mixed sets hold only root-owned 0644
  files and 0755 directories).
"""

import concurrent.futures
import os
import stat
from pathlib import Path

from . import util


LEFTOVER_PREFIXES = (".bfo-",)     # .bfo-journal, .bfo-tmp.*, stems: bfo's own names
EXTRAS_DIR = "zz-meta"


def _type(mode):
    if stat.S_ISREG(mode):
        return "f"
    if stat.S_ISDIR(mode):
        return "d"
    if stat.S_ISLNK(mode):
        return "l"
    return "o"


def listing(top, hashes=False):
    """{relpath: dict(type, mode, uid, gid, mtime_ns, size, target[, sha256])}
    for top itself ('.') and everything below it (symlinks not followed)."""
    top = str(top)
    out = {}

    def rec(path, rel):
        st = os.lstat(path)
        t = _type(st.st_mode)
        e = {"type": t, "mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid,
             "mtime_ns": st.st_mtime_ns, "size": st.st_size if t == "f" else None,
             "target": os.readlink(path) if t == "l" else None}
        out[rel] = e
        return t

    rec(top, ".")
    stack = [(top, "")]
    while stack:
        d, drel = stack.pop()
        with os.scandir(d) as it:
            for ent in it:
                rel = f"{drel}{ent.name}"
                if rec(ent.path, rel) == "d":
                    stack.append((ent.path, rel + "/"))
    if hashes:
        files = sorted(k for k, v in out.items() if v["type"] == "f")
        ex = concurrent.futures.ThreadPoolExecutor(max_workers=8)
        try:
            for rel, h in zip(files, ex.map(lambda r: util.sha256_file(os.path.join(top, r)), files)):
                out[rel]["sha256"] = h
        finally:
            ex.shutdown(wait=True, cancel_futures=True)
    return out


def _examples(xs, n=3):
    xs = sorted(xs)
    return f"{len(xs)} (e.g. {xs[:n]})"


def _root_check(fs_root, target_name):
    """Entries at the file system's root besides the target (lost+found is fine)."""
    if fs_root is None:
        return []
    return sorted(n for n in os.listdir(fs_root) if n not in (target_name, "lost+found"))


def check_written(fs_root, target_name, expected, mode=0o644):
    """A W1 target against the stream's {relpath: (size, sha256)}. -> (ok, detail)."""
    target = Path(fs_root) / target_name
    if not target.is_dir():
        return False, f"{target} missing"
    got = listing(target, hashes=True)
    want_dirs = {"."}
    for rel in expected:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            want_dirs.add("/".join(parts[:i]))
    files = {k: v for k, v in got.items() if v["type"] == "f"}
    dirs = {k for k, v in got.items() if v["type"] == "d"}
    others = sorted(k for k, v in got.items() if v["type"] not in ("f", "d"))
    missing = set(expected) - set(files)
    extra = (set(files) - set(expected)) | (dirs - want_dirs) | set(others)
    missing_dirs = want_dirs - dirs
    differ = [k for k in set(expected) & set(files)
              if files[k]["size"] != expected[k][0] or files[k]["sha256"] != expected[k][1]]
    badmode = [k for k in set(expected) & set(files) if files[k]["mode"] != mode]
    leftovers = [k for k in got if any(part.startswith(LEFTOVER_PREFIXES) for part in k.split("/"))]
    at_root = _root_check(fs_root, target_name)
    problems = []
    if differ:
        problems.append(f"different bytes: {_examples(differ)}")
    if missing:
        problems.append(f"missing: {_examples(missing)}")
    if missing_dirs:
        problems.append(f"missing directories: {_examples(missing_dirs)}")
    if leftovers:
        problems.append(f"leftovers: {_examples(leftovers)}")
    if extra - set(leftovers):
        problems.append(f"unexpected: {_examples(extra - set(leftovers))}")
    if badmode:
        problems.append(f"mode not {mode:o}: {_examples(badmode)}")
    if at_root:
        problems.append(f"unexpected at the file system's root: {at_root[:5]}")
    if problems:
        return False, "; ".join(problems)
    return True, (f"{len(files):,} files, {sum(v['size'] for v in files.values()):,} bytes, same sha256 as "
                  f"the stream, modes {mode:o}, {len(dirs) - 1} directories, nothing else")


META_FIELDS = ("type", "mode", "uid", "gid", "mtime_ns", "size", "target")


def compare_trees(src_list, dst, fs_root=None, target_name=None, mtime_res_ns=1, ignore_root=False):
    """An M1/M2 copy (directory dst) against the source's listing (with hashes).
    -> (ok, detail). Every field of META_FIELDS and the contents must match,
    for every entry including the root; nothing may be missing or extra.
    mtime_res_ns: mtimes compared to this resolution (1: the nanosecond; 10**9
    for a method whose format carries whole seconds, the copy's mtime being the
    source's truncated to the second)."""
    got = listing(dst, hashes=True)
    if ignore_root:     # dst existed: a copy of sources into it, its own metadata not the copy's
        src_list = {k: v for k, v in src_list.items() if k != "."}
        got = {k: v for k, v in got.items() if k != "."}
    missing = set(src_list) - set(got)
    extra = set(got) - set(src_list)
    by_field = {}
    content = []
    for k in set(src_list) & set(got):
        a, b = src_list[k], got[k]
        for f in META_FIELDS:
            va, vb = a.get(f), b.get(f)
            if f == "mtime_ns" and mtime_res_ns != 1 and va is not None and vb is not None:
                va, vb = va // mtime_res_ns, vb // mtime_res_ns
            if va != vb:
                by_field.setdefault(f, []).append(k)
        if a["type"] == "f" and a.get("sha256") != b.get("sha256"):
            content.append(k)
    at_root = _root_check(fs_root, target_name) if fs_root else []
    problems = []
    if content:
        problems.append(f"different contents: {_examples(content)}")
    for f, ks in sorted(by_field.items()):
        k0 = sorted(ks)[0]
        problems.append(f"{f} differs: {_examples(ks, 2)} ({k0}: {src_list[k0].get(f)} -> {got[k0].get(f)})")
    if missing:
        problems.append(f"missing: {_examples(missing)}")
    if extra:
        problems.append(f"unexpected: {_examples(extra)}")
    if at_root:
        problems.append(f"unexpected at the file system's root: {at_root[:5]}")
    if problems:
        return False, "; ".join(problems)
    nf = sum(1 for v in got.values() if v["type"] == "f")
    nl = sum(1 for v in got.values() if v["type"] == "l")
    nd = sum(1 for v in got.values() if v["type"] == "d")
    res = "ns" if mtime_res_ns == 1 else ("to the second" if mtime_res_ns == 10**9 else f"/{mtime_res_ns} ns")
    return True, (f"{nf:,} files, {nd} directories, {nl} symlinks: same sha256, type, mode, uid/gid, "
                  f"mtime ({res}), size, link targets")


def quick_count(top, files, nbytes, fs_root=None, target_name=None):
    """Cheap check after a timed run: file count, bytes, no .bfo-* leftovers.
    -> None when fine, else what is wrong."""
    top = str(top)
    if not os.path.isdir(top):
        return f"{top} missing"
    n = b = 0
    leftovers = []
    stack = [top]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for ent in it:
                if ent.name.startswith(LEFTOVER_PREFIXES):
                    leftovers.append(ent.path)
                if ent.is_dir(follow_symlinks=False):
                    stack.append(ent.path)
                elif ent.is_file(follow_symlinks=False):
                    n += 1
                    b += ent.stat(follow_symlinks=False).st_size
    probs = []
    if n != files or b != nbytes:
        probs.append(f"{n:,} files / {b:,} bytes, expected {files:,} / {nbytes:,}")
    if leftovers:
        probs.append(f"leftovers: {leftovers[:3]}")
    at_root = _root_check(fs_root, target_name) if fs_root else []
    if at_root:
        probs.append(f"unexpected at the file system's root: {at_root[:5]}")
    return "; ".join(probs) or None


def add_meta_extras(set_dir, root=True):
    """Entries whose metadata the copy must keep, in SET/zz-meta/: files with
    other owners, modes (set-id and sticky bits included) and nanosecond
    mtimes, an empty file, a mode-700 and an empty directory, relative,
    absolute, dangling and directory symbolic links with their own times (one
    with its own owner). No hard links (rsync -a does not keep them without -H).
    Not root: no other owners and no set-id bits (a copy made without root
    could not keep them). Returns how many entries (zz-meta itself included)."""
    base = Path(set_dir) / EXTRAS_DIR
    if base.exists():
        remove_meta_extras(set_dir)
    base.mkdir()
    t_old = 978350400_123456789          # 2001-01-01 12:00:00.123456789 UTC
    t_lnk = 1012608000_500000000         # 2002-02-02 00:00:00.5

    def chown(p, uid, gid, follow=True):
        if root:
            (os.chown if follow else os.lchown)(p, uid, gid)

    def wfile(rel, data, mode, uid=0, gid=0, mtime_ns=t_old):
        p = base / rel
        p.write_bytes(data)
        if root:
            os.chown(p, uid, gid)
        else:
            mode &= 0o777
        os.chmod(p, mode)                # after chown: chown clears set-id bits
        os.utime(p, ns=(mtime_ns, mtime_ns))

    data = bytes(range(256)) * 16
    wfile("owned-1234", data, 0o640, 1234, 5678)
    wfile("private", data[:1000], 0o600)
    wfile("exec", b"#!/bin/sh\necho hi\n", 0o755, mtime_ns=t_old + 1)
    wfile("setuid", b"not really a program\n", 0o4755, mtime_ns=t_old + 2)
    wfile("setgid-sticky", b"x", 0o3644, mtime_ns=t_old + 3)
    wfile("empty", b"", 0o644)
    sub = base / "sub700"
    sub.mkdir()
    (sub / "inner").write_bytes(data[:100])
    os.utime(sub / "inner", ns=(t_old, t_old))
    links = {"rel-link": "../zz-meta/owned-1234", "abs-link": "/etc/hostname", "dangling": "does/not/exist",
             "dir-link": "sub700"}
    for name, target in links.items():
        os.symlink(target, base / name)
        os.utime(base / name, ns=(t_lnk, t_lnk), follow_symlinks=False)
    chown(base / "dangling", 99, 98, follow=False)
    empty = base / "empty-dir"
    empty.mkdir()
    os.chmod(empty, 0o711)
    os.utime(empty, ns=(t_old + 7, t_old + 7))
    os.chmod(sub, 0o700)
    os.utime(sub, ns=(t_old + 5, t_old + 5))
    chown(base, 1234, 5678)
    os.chmod(base, 0o750)
    os.utime(base, ns=(t_old + 9, t_old + 9))
    os.sync()
    return sum(1 for _ in base.rglob("*")) + 1


def remove_meta_extras(set_dir):
    import shutil
    base = Path(set_dir) / EXTRAS_DIR
    if base.exists() or base.is_symlink():
        shutil.rmtree(base)
        # the set directory's mtime changed with the extras; nothing reads it
        os.sync()


def stream_info(ref):
    return {"files": len(ref), "bytes": sum(s for s, _ in ref.values())}
