"""Same-bytes checks: every method must read exactly the bytes of every file.

Two per-file references, computed once per set (untimed) and cached:
- xxh128: `xxh128sum` over every file (an independent tool) when installed,
  else `plainread -t 1 --checksum`. plainread and `bfo read --checksum` print
  the same xxh128sum format and are compared with it.
- sha256: Python reads every file; tar's archive members are hashed the same
  way and compared with it.
"""

import concurrent.futures
import hashlib
import os
import subprocess
import tarfile
from pathlib import Path

from . import util


def walk_files(set_dir):
    """Every regular file under set_dir (no symlinks followed), sorted."""
    out, stack = [], [str(set_dir)]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    out.append(e.path)
    out.sort()
    return out


def normalize(path, set_dir):
    """A path printed by a tool -> path relative to the set directory."""
    p = os.path.normpath(path)
    base = os.path.normpath(str(set_dir))
    if p.startswith(base + os.sep):
        return p[len(base) + 1:]
    if os.path.isabs(p):
        return os.path.relpath(p, base)
    return p


def parse_checksums(text, set_dir):
    """xxh128sum-format lines -> ({relpath: hex}, [problems])."""
    out, problems = {}, []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        if line.startswith("{"):        # a JSON stats line, not a checksum
            continue
        h, sep, path = line.partition("  ")
        if not sep or len(h) != 32:
            problems.append(f"unparsable line: {line[:100]!r}")
            continue
        rel = normalize(path, set_dir)
        if rel in out:
            problems.append(f"printed twice: {rel}")
        out[rel] = h.lower()
    return out, problems


def compare(ref, got, problems=(), what="checksum"):
    """-> (ok, detail)."""
    missing = sorted(set(ref) - set(got))
    extra = sorted(set(got) - set(ref))
    differ = sorted(k for k in set(ref) & set(got) if ref[k] != got[k])
    problems = list(problems)
    if not (missing or extra or differ or problems):
        return True, f"{len(ref):,} files, same {what}s"
    parts = []
    if differ:
        parts.append(f"{len(differ)} differ (e.g. {differ[:3]})")
    if missing:
        parts.append(f"{len(missing)} missing (e.g. {missing[:3]})")
    if extra:
        parts.append(f"{len(extra)} unexpected (e.g. {extra[:3]})")
    if problems:
        parts.append(f"{len(problems)} problems (e.g. {problems[:2]})")
    return False, "; ".join(parts)


class References:
    def __init__(self, set_dir, helpers):
        self.set_dir = Path(set_dir)
        self.helpers = helpers
        self._xxh = None
        self._sha = None
        self.xxh_source = None

    def xxh128(self):
        if self._xxh is None:
            if util.which("xxh128sum"):
                files = walk_files(self.set_dir)
                r = util.run(["xargs", "-0", "xxh128sum", "--"], input="\0".join(files))
                if not r.ok:
                    raise RuntimeError(f"xxh128sum reference failed: {(r.stderr or '').strip()[:500]}")
                self.xxh_source = "xxh128sum"
            elif self.helpers.plainread_checksum:
                r = util.run([self.helpers.plainread, "-t", "1", "--checksum", self.set_dir])
                if not r.ok:
                    raise RuntimeError(f"plainread reference failed: {(r.stderr or '').strip()[:500]}")
                self.xxh_source = "plainread"
            else:
                raise RuntimeError("no xxh128 reference: install xxhash (xxh128sum) or libxxhash-dev")
            self._xxh, problems = parse_checksums(r.stdout, self.set_dir)
            if problems:
                raise RuntimeError(f"reference checksums unparsable: {problems[:3]}")
        return self._xxh

    def sha256(self):
        if self._sha is None:
            files = walk_files(self.set_dir)
            # hashlib and file reads release the GIL: threads make a cold pass several times faster
            ex = concurrent.futures.ThreadPoolExecutor(max_workers=8)
            try:
                hashes = list(ex.map(util.sha256_file, files))
            finally:   # on Ctrl-C, do not wait for the queued files
                ex.shutdown(wait=True, cancel_futures=True)
            self._sha = {normalize(p, self.set_dir): h for p, h in zip(files, hashes)}
        return self._sha


def verify_checksum_cmd(cmd, refs, *, ok_codes=(0,)):
    """Run a command printing xxh128sum lines; compare with the reference."""
    ref = refs.xxh128()
    r = util.run(cmd)
    if r.returncode not in ok_codes:
        first = (r.stderr or "").strip().splitlines()
        return False, f"exit {r.returncode}: {first[0] if first else ''}"
    got, problems = parse_checksums(r.stdout, refs.set_dir)
    ok, detail = compare(ref, got, problems)
    return ok, detail + f" (reference: {refs.xxh_source})"


def verify_tar(tar_args, member_prefix, refs):
    """Stream `tar -cf - ...` through tarfile, sha256 each regular member,
    compare with sha256 of the files read directly."""
    ref = refs.sha256()
    p = util.popen(tar_args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got, problems = {}, []
    try:
        with tarfile.open(fileobj=p.stdout, mode="r|") as tf:
            for m in tf:
                if not m.isreg():
                    if m.islnk() or m.issym():
                        problems.append(f"link member {m.name}")
                    continue
                name = m.name
                if name.startswith("./"):
                    name = name[2:]
                if member_prefix and name.startswith(member_prefix + "/"):
                    name = name[len(member_prefix) + 1:]
                f = tf.extractfile(m)
                h = hashlib.sha256()
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    h.update(b)
                if name in got:
                    problems.append(f"member twice: {name}")
                got[name] = h.hexdigest()
        err = p.stderr.read().decode(errors="replace")
        rc = p.wait()
    except BaseException:
        util._kill_group(p)
        p.wait()
        raise
    finally:
        util.forget(p)
    if rc != 0:
        return False, f"tar exit {rc}: {err.strip()[:200]}"
    ok, detail = compare(ref, got, problems, what="sha256")
    return ok, detail
