#!/usr/bin/env python3
"""An interrupted bfo cp resumes with the same command and moves only what is missing (issue 57 item 6).

    python3 benchmarks/harness/test_resume.py [--files 100000] [--rounds 3] [--seed S] [--work DIR] [--bfo PATH]

The tree1m set's shape at --files files (benchmarks/genset, made once under WORK and kept) is copied with
`bfo cp -a SRC/ DST`; the copy gets SIGINT at a random point (the seed is printed: a failure is replayed
with --seed), --rounds times, each time the same command run again; then once to the end. After every
interrupted run:
- rsync -a --dry-run --itemize-changes SRC/ DST/ names what is missing or differs (the independent view);
- the next run's --stats: the files it copied equal the files rsync named (no more: what a run finished
  is not copied again; no fewer: nothing is left), and its exit status is 0 (130 for an interrupted one).
At the end rsync names nothing (DST equals SRC: contents by rsync's quick check, modes, times, owners) and
a last rerun copies 0 files. Prints "N passed, N failed"; exit 0 when none failed, 77 without rsync.
About a minute at 100,000 files on a quiet machine (--files 1000000 for the note).
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = {"passed": 0, "failed": 0}


def check(ok, what):
    RESULTS["passed" if ok else "failed"] += 1
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def missing(src, dst):
    """rsync's view: the regular files it would transfer, and every line it printed."""
    r = subprocess.run(["rsync", "-a", "--dry-run", "--itemize-changes", f"{src}/", f"{dst}/"],
                       capture_output=True, text=True, check=True)
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    return sum(1 for ln in lines if ln.startswith(">f")), lines


def copied(stderr):
    """The files a run copied, from its --stats line ("bfo cp: N files, ...")."""
    m = re.search(r"bfo cp: (\d+) files, ", stderr)
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--work", default="/var/tmp/bfo-resume")
    ap.add_argument("--bfo", default=str(HERE.parent.parent / "bfo-native/build/bfo"))
    a = ap.parse_args()
    if not shutil.which("rsync"):
        print("skipped: rsync is not installed (it is the independent view of what is missing)")
        return 77
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"seed {seed} (replay: --seed {seed})", flush=True)
    rng = random.Random(seed)
    work = Path(a.work)
    src, dst = work / f"src-{a.files}", work / "dst"
    gen = subprocess.run([sys.executable, str(HERE.parent / "genset"), "tree1m", str(src), "--files", str(a.files)],
                         capture_output=True, text=True, check=True)
    info = json.loads(gen.stdout.strip().splitlines()[-1])
    shutil.rmtree(dst, ignore_errors=True)
    cmd = [a.bfo, "cp", "-a", "--stats", f"{src}/", str(dst)]

    # how long a whole copy takes here, to spread the interrupts over it: the first run, timed, then
    # thrown away
    t0 = time.monotonic()
    subprocess.run(cmd, capture_output=True, check=True)
    whole = time.monotonic() - t0
    shutil.rmtree(dst)
    print(f"{info['files']:,} files; a whole copy takes {whole:.1f} s here", flush=True)

    want = info["files"]   # what rsync says the next run must copy (the first: everything)
    for k in range(a.rounds + 1):
        last = k == a.rounds
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        delay = None
        if not last:
            delay = rng.uniform(0.05, 0.9) * whole / (k + 1)
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGINT)
        out, err = p.communicate()
        n = copied(err)
        before = want
        want, lines = missing(src, dst)
        what = ("whole" if p.returncode == 0 else f"SIGINT after {delay:.2f} s" if delay is not None
                else f"exit {p.returncode}")
        print(f"  run {k + 1} ({what}): copied {n} of the {before} missing; rsync now names {want} files "
              f"({len(lines)} entries)", flush=True)
        if p.returncode == 0:
            check(n == before and want == 0, f"run {k + 1} ran to its end and copied exactly the {before} "
                                             f"files missing ({n}; {want} left)"
                  + ("" if n == before and want == 0 else f": {err.strip()[-300:]!r}"))
        else:
            check(p.returncode == 130 and not last, f"run {k + 1}: exit {p.returncode} (130 after SIGINT)"
                  + ("" if p.returncode == 130 else f": {err.strip()[-300:]!r}"))
            # it moved only what was missing, and what it moved stays: rsync's count fell by its count
            check(n is not None and n <= before and want == before - n,
                  f"run {k + 1}: copied {n} of {before} missing, and {want} are missing after it")
        if p.returncode == 0 and not last:
            break               # (it finished before the signal: nothing left to resume)
    check(want == 0 and not lines, f"DST equals SRC in rsync's eyes ({len(lines)} entries differ: {lines[:3]})")
    r = subprocess.run(cmd + ["--delete"], capture_output=True, text=True)
    check(r.returncode == 0 and copied(r.stderr) == 0, f"a last rerun copies nothing: {copied(r.stderr)}")
    shutil.rmtree(dst, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] or not RESULTS["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
