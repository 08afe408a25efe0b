#!/usr/bin/env python3
"""Tests of the scale sets' generator (scaleset.py, benchmarks/genset) on a small scale; about 20 seconds.

    python3 benchmarks/harness/test_scaleset.py [WORKDIR]    (prints "N passed, N failed", exit 0 when none failed)

- reproducible: the same seed made twice (2 workers, so the directories are made in another order each time)
  gives the same listing: every path, every size and a SHA-256 of every file's bytes;
- another seed gives another set;
- the set is what the plan says: its file count, byte total and directory count; no file above one block;
- resumable: a generation killed (SIGKILL, its whole process group) after some directories are logged, then
  run again, skips the logged directories, makes the rest, and ends with the listing of an uninterrupted one;
  a third run makes nothing.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENSET = HERE.parent / "genset"
sys.path.insert(0, str(HERE.parent))

from harness import scaleset  # noqa: E402

RESULTS = {"passed": 0, "failed": 0}


def check(ok, what):
    RESULTS["passed" if ok else "failed"] += 1
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def listing(root):
    """{rel: (size, sha256)} of every file, and the set of directories."""
    files, dirs = {}, set()
    for dp, dn, fn in os.walk(root):
        rel = os.path.relpath(dp, root)
        dirs.add(rel)
        for f in fn:
            data = Path(dp, f).read_bytes()
            files[os.path.normpath(os.path.join(rel, f))] = (len(data), hashlib.sha256(data).hexdigest())
    return files, dirs


def digest(files):
    return hashlib.sha256(json.dumps(sorted(files.items())).encode()).hexdigest()


def genset(d, *extra):
    r = subprocess.run([sys.executable, str(GENSET), "tree1m", str(d), *extra], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    work = Path(tempfile.mkdtemp(prefix="test-scaleset-", dir=sys.argv[1] if len(sys.argv) > 1 else None))
    try:
        small = ["--files", "4000"]
        a, b, c = genset(work / "a", *small), genset(work / "b", *small), genset(work / "c", *small, "--seed", "58")
        fa, da = listing(work / "a")
        fb, _ = listing(work / "b")
        fc, _ = listing(work / "c")
        check(len(fa) == a["files"] == 4000 and sum(s for s, _ in fa.values()) == a["bytes"],
              f"the set holds the planned files and bytes ({len(fa):,} files, {a['bytes']:,} bytes)")
        check(len(da) - 1 == a["dirs"], f"and the planned directories ({len(da) - 1} below the top)")
        check(max(s for s, _ in fa.values()) <= scaleset.MAX_SIZE, "no file above one block")
        check(digest(fa) == digest(fb) and a["bytes"] == b["bytes"],
              f"same seed, same listing, sizes and hashes ({digest(fa)[:16]})")
        check(digest(fa) != digest(fc) and len(fc) == 4000, "another seed, another set")

        # resumable: kill a bigger generation once some directories are logged
        big = ["--files", "20000", "-j", "2"]
        p = subprocess.Popen([sys.executable, str(GENSET), "tree1m", str(work / "k"), *big],
                             stdout=subprocess.DEVNULL, start_new_session=True)
        state = scaleset.state_dir(work / "k")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120 and p.poll() is None:
            if state.exists() and len(scaleset.done_dirs(state)) >= 20:
                break
            time.sleep(0.02)
        killed = p.poll() is None
        if killed:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        logged = len(scaleset.done_dirs(state))
        check(killed and not (state / "complete").exists(),
              f"a generation was killed part-way ({logged} directories logged)")
        r = genset(work / "k", *big)
        check(r["dirs_skipped"] >= logged > 0 and r["dirs_made"] + r["dirs_skipped"] == r["dirs"] + 1,
              f"the rerun skipped {r['dirs_skipped']} directories made before, made {r['dirs_made']}")
        fresh = genset(work / "f", *big)
        fk, _ = listing(work / "k")
        ff, _ = listing(work / "f")
        check(len(fk) == fresh["files"] == 20000 and digest(fk) == digest(ff),
              "the resumed set equals one made without a kill")
        r3 = genset(work / "k", *big)
        check(r3["dirs_made"] == 0 and r3["seconds"] == 0, "a run after a complete one makes nothing")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] or not RESULTS["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
