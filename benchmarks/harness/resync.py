"""M3: the copy after the first one (issue 36). A tree of small files (the 4k set: 100,000 x 4 KiB) is copied
once; then 1% of its files are rewritten (same size, new bytes and mtime), 0.5% added and 0.5% deleted, and the
rerun that makes the copy equal again is timed (cold caches on both ends, durable); then a rerun with nothing
changed is timed. bfo (`bfo cp -a --delete SRC DST`) against rsync (`rsync -a --delete SRC DST`), between
machines (harness/remote.py's network namespace: its own sshd behind a 1 Gbit/s veth; the bytes on the wire from
the veth's counters) and on one machine (SRC and DST on two loop file systems), as root and as an ordinary user
(--m3-user, default nobody: both ends run as that user, so no raw inode tables). Medians of --repeat rounds.

One round for one method and place: a new destination file system; the first copy (timed too: the first copy's
own benchmark is M2); the change, applied to the source (a new random choice every time, so the source drifts
but keeps its size); `sync`, drop caches; the changed rerun, timed, then `sync -f DST` for every method alike
(bfo cp is durable when it returns); the trees compared (contents by hash, modes, owners, ns mtimes, links:
writecopy.compare_trees); drop caches; the no-change rerun, timed; compared again.

    sudo benchmarks/bench --scenario m3                          # the full table (100,000 files, 3 rounds)
    sudo benchmarks/bench --scenario m3 --files 2000 --repeat 1  # a smoke run (a few minutes)
"""

import os
import pwd
import random
import shlex
import sys
import time
import traceback
from pathlib import Path

from . import native, report, runner, sets, util, writecopy
from .workspace import FreshFs, WorkdirLock

CHANGE_REWRITE = 0.01
CHANGE_ADD = 0.005
CHANGE_DELETE = 0.005
DST_NAME = "m3"
TARGET = {"remote": {"root": 4.0, "user": 2.0, "changed": 2.0}, "local": {"changed": 2.0, "nochange": 2.0}}


def _veth_bytes(machine):
    """tx + rx bytes of the host's veth end (everything ssh carried both ways)."""
    base = Path("/sys/class/net") / machine.veth_host / "statistics"
    return int((base / "tx_bytes").read_text()) + int((base / "rx_bytes").read_text())


def _change(set_dir, rng):
    """Rewrite 1%, add 0.5%, delete 0.5% of the regular files below set_dir; returns the counts."""
    files = []
    for d, _dirs, names in os.walk(set_dir):
        files.extend(os.path.join(d, n) for n in names)
    files.sort()
    n = len(files)
    pick = rng.sample(files, int(n * (CHANGE_REWRITE + CHANGE_DELETE)))
    rewrite, delete = pick[:int(n * CHANGE_REWRITE)], pick[int(n * CHANGE_REWRITE):]
    for p in rewrite:
        size = os.path.getsize(p)
        with open(p, "wb") as f:
            f.write(rng.randbytes(size))
    for p in delete:
        os.unlink(p)
    dirs = sorted({os.path.dirname(p) for p in files})
    stamp = time.time_ns()
    for i in range(int(n * CHANGE_ADD)):
        with open(os.path.join(rng.choice(dirs), f"m3new-{stamp}-{i:06d}"), "wb") as f:
            f.write(rng.randbytes(4096))
    os.sync()
    return {"rewritten": len(rewrite), "added": int(n * CHANGE_ADD), "deleted": len(delete)}


class M3:
    """The commands of one method at one place, run as one user."""

    def __init__(self, *, bfo, machine, user, workdir):
        self.bfo, self.machine, self.user = bfo, machine, user
        self.dir = Path(workdir) / f"m3-{os.getpid()}"
        self.dir.mkdir(mode=0o755, exist_ok=True)
        self.ssh = machine.ssh_argv() if machine else None
        self.far_bfo, self.far_rsync = str(bfo.path), "rsync"
        if user != "root" and machine:
            # the client runs ssh as the user (its own copy of the key); the far side logs in as root and
            # drops to the user at once (a wrapper for bfo, --rsync-path for rsync)
            key = self.dir / "id_user"
            key.write_bytes(Path(machine.key).read_bytes())
            os.chmod(key, 0o600)
            util.run(["chown", user, key], check=True)
            i = self.ssh.index("-i")
            self.ssh[i + 1] = str(key)
            wrapper = self.dir / "bfo-as-user"
            wrapper.write_text(f"#!/bin/sh\nexec runuser -u {shlex.quote(user)} -- {shlex.quote(str(bfo.path))} "
                               "\"$@\"\n")
            os.chmod(wrapper, 0o755)
            self.far_bfo = str(wrapper)
            self.far_rsync = f"runuser -u {shlex.quote(user)} -- rsync"

    def _as_user(self, argv):
        return argv if self.user == "root" else ["runuser", "-u", self.user, "--"] + argv

    def command(self, method, src, dst):
        """argv of one sync of src (a directory: copied to dst/its name) into dst (local, or HOST:dst)."""
        far = self.machine is not None
        target = f"{self.machine.login}:{dst}" if far else str(dst)
        rsh = " ".join(shlex.quote(a) for a in self.ssh) if far else None
        if method == "bfo":
            argv = [str(self.bfo.path), "cp", "-a", "--delete", "--stats"]
            if far:
                argv += ["--rsh", rsh, "--remote-bfo", self.far_bfo]
        else:
            argv = ["rsync", "-a", "--delete"]
            if far:
                argv += ["-e", rsh, f"--rsync-path={self.far_rsync}"]
        return ["bash", "-c", 'set -o pipefail; d="$1"; shift; "$@" && sync -f "$d"', "bash", str(dst)] + \
            self._as_user(argv + [str(src), target])

    def close(self):
        with util.cleaning():
            for p in self.dir.glob("*"):
                p.unlink()
            self.dir.rmdir()


def _timed(cmd, machine, timeout):
    """Drop caches (both ends share this kernel), run cmd: seconds, wire bytes, the result."""
    runner.cold(True)
    before = _veth_bytes(machine) if machine else 0
    r = util.run(cmd, timeout=timeout)
    return r.seconds, (_veth_bytes(machine) - before if machine else None), r


def _round(m3, method, place, ws, dest, rng, timeout):
    """One round (see the module's text): {phase: {seconds, wire, ...}}."""
    src = ws.set_dir
    out = {}
    root = dest.new()
    dst = Path(root) / DST_NAME
    dst.mkdir()
    if m3.user != "root":
        util.run(["chown", "-R", m3.user, root], check=True)
    copy = dst / Path(src).name
    cmd = m3.command(method, src, dst)
    for phase in ("first", "changed", "nochange"):
        if phase == "changed":
            out["change"] = _change(src, rng)
        secs, wire, r = _timed(cmd, m3.machine, timeout)
        if not r.ok:
            raise RuntimeError(f"M3 {method} {place} {phase}: exit {r.returncode}: "
                               f"{(r.stderr or '').strip()[-400:]}")
        out[phase] = {"seconds": secs, "wire_bytes": wire, "stderr": (r.stderr or "").strip()[-600:]}
        if phase != "first":
            dest.remount()
            want = writecopy.listing(src, hashes=True)
            if m3.user != "root":
                # an ordinary user's copy is the user's (cp -a and rsync -a alike): everything else must match
                pw = pwd.getpwnam(m3.user)
                for e in want.values():
                    e["uid"], e["gid"] = pw.pw_uid, pw.pw_gid
            ok, why = writecopy.compare_trees(want, copy, mtime_res_ns=1)
            out[phase]["verified"] = ok
            out[phase]["verify_detail"] = why
            if not ok:
                # said and kept in the table: a method whose copy differs is not a fair row
                util.warn(f"M3 {method} {place} {phase}: the copy differs from the source: {why}")
    util.log(f"  {method} {place} as {m3.user}: first {out['first']['seconds']:.2f} s, changed "
             f"{out['changed']['seconds']:.2f} s, no change {out['nochange']['seconds']:.2f} s"
             + (f"; wire {out['changed']['wire_bytes'] / 1e6:.1f} / {out['nochange']['wire_bytes'] / 1e6:.2f} MB"
                if m3.machine else ""))
    return out


def _median(rounds, phase, key="seconds"):
    v = [r[phase][key] for r in rounds if r.get(phase) and r[phase].get(key) is not None]
    return util.summarize(v)["median"]


def _table(info):
    rows, lines = [], []
    for (place, user), res in info["runs"].items():
        b, r = res.get("bfo", []), res.get("rsync", [])
        for phase in ("first", "changed", "nochange"):
            tb, tr = _median(b, phase), _median(r, phase)
            wb, wr = _median(b, phase, "wire_bytes"), _median(r, phase, "wire_bytes")
            bad = [f"{m} copy differs ({x[phase]['verify_detail'][:120]})" for m, v in (("bfo", b), ("rsync", r))
                   for x in v if phase != "first" and x.get(phase) and x[phase].get("verified") is False]
            rows.append([f"{place}, {user}", phase, f"{tb:.2f}" if tb else "-", f"{tr:.2f}" if tr else "-",
                         f"{tr / tb:.2f}x" if tb and tr else "-",
                         f"{wb / 1e6:.2f}" if wb is not None else "-", f"{wr / 1e6:.2f}" if wr is not None else "-",
                         "; ".join(bad[:2]) or "same as the source"])
    lines.append(util.md_table(["place, user", "run", "bfo s", "rsync s", "bfo faster by", "bfo MB on the wire",
                                "rsync MB on the wire", "verified"], rows, align=["l", "l"] + ["r"] * 5 + ["l"]))
    return "\n".join(lines)


def _targets(info):
    out = []
    for (place, user), res in info["runs"].items():
        b, r = res.get("bfo", []), res.get("rsync", [])

        def ratio(phase):
            tb, tr = _median(b, phase), _median(r, phase)
            return tr / tb if tb and tr else None
        if place == "remote":
            for phase, want in (("changed", 2.0), ("nochange", 4.0 if user == "root" else 2.0)):
                x = ratio(phase)
                out.append(f"- remote, {user}, {phase} rerun: at least {want:g}x rsync -a --delete: "
                           + (f"{x:.2f}x ({'met' if x >= want else 'NOT met'})" if x else "not measured"))
            wb, wr = _median(b, "changed", "wire_bytes"), _median(r, "changed", "wire_bytes")
            if wb is not None and wr is not None:
                out.append(f"- remote, {user}, changed rerun: no more bytes on the wire than rsync: {wb / 1e6:.2f} MB "
                           f"vs {wr / 1e6:.2f} MB ({'met' if wb <= wr else 'NOT met'})")
        else:
            for phase in ("changed", "nochange"):
                x = ratio(phase)
                out.append(f"- local, {user}, {phase} rerun: at least 2x rsync -a --delete: "
                           + (f"{x:.2f}x ({'met' if x >= 2 else 'NOT met'})" if x else "not measured"))
    return "\n".join(out)


def run_m3(args):
    """bench --scenario m3. Returns the exit status."""
    from .remote import RATE, RemoteMachine
    if not util.is_root():
        util.log("ERROR: M3 needs root (a network namespace, an sshd, loop file systems, cache drops); the "
                 "ordinary user's rows run as --m3-user")
        return 2
    files = args.files or (20_000 if args.quick else 100_000)
    repeat = args.repeat or (1 if args.quick else 3)
    users = ["root"] + ([] if args.no_unprivileged else [args.m3_user])
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = {"kind": "bench", "scenario": "m3", "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
               "argv": sys.argv, "cache": "cold", "repeat": repeat, "machine": runner.machine_info(workdir),
               "files": files, "users": users, "complete": False}
    outdir = report.results_dir(args.results_dir, workdir, suffix="-m3")
    util.log(f"results: {outdir}")
    info = {"runs": {}}
    try:
        with WorkdirLock(workdir):
            bfo = native.Bfo.locate(args.bfo, build=not args.no_build, logdir=workdir)
            if not bfo.available:
                raise RuntimeError(f"bfo is not available: {bfo.reason}")
            if not args.no_bfo_snapshot:
                results["bfo_snapshot"] = bfo.snapshot(workdir / "bin" / f"bfo-snapshot-{os.getpid()}")
            if not util.which("rsync"):
                raise RuntimeError("rsync is not installed (apt-get install rsync)")
            spec = sets.REGISTRY["4k"]
            params = spec.params({"files": files})
            with runner.open_set(spec, params, workdir=workdir, keep=False, fs="ext4", root=True) as (ws, plan,
                                                                                                    sinfo):
                # the set is the source of every run and drifts with each change: readable by the user
                util.run(["chmod", "-R", "a+rX", ws.root], check=True)
                os.chmod(ws.root, 0o755)
                size, inodes, need = spec.image_geometry(plan)
                with RemoteMachine(workdir) as machine, \
                        FreshFs(workdir, "m3dst", "ext4", size * 2, inodes * 2 + 1000, True, need_bytes=need) as dest:
                    results["m3_machine"] = machine.info
                    rng = random.Random(36)
                    for user in users:
                        for place in ("remote", "local"):
                            m3 = M3(bfo=bfo, machine=machine if place == "remote" else None, user=user,
                                    workdir=workdir)
                            try:
                                res = info["runs"].setdefault((place, user), {})
                                for rnd in range(repeat):
                                    for method in ("bfo", "rsync"):
                                        res.setdefault(method, []).append(
                                            _round(m3, method, place, ws, dest, rng, args.timeout))
                            finally:
                                m3.close()
        results["complete"] = True
    except (KeyboardInterrupt, util.Interrupted) as e:
        results["interrupted"] = str(e) or "SIGINT"
        util.log(f"interrupted ({results['interrupted']})")
    except Exception as e:  # noqa: BLE001 - report what was measured, exit 2
        if not isinstance(e, RuntimeError):
            traceback.print_exc()
        util.log(f"ERROR: {e}")
        results["error"] = str(e)
    results["runs"] = {f"{p}/{u}": v for (p, u), v in info["runs"].items()}
    md = (f"# BFO M3 benchmark (re-sync), {results['started']}\n\n"
          f"{files:,} files of 4 KiB; each rerun after rewriting {CHANGE_REWRITE:.1%}, adding {CHANGE_ADD:.1%} and "
          f"deleting {CHANGE_DELETE:.1%} of them; between machines over a {RATE} veth (bytes from its counters); "
          f"cold caches on both ends, durable (sync -f DST after every method); medians of {repeat}.\n\n"
          f"bfo: `bfo cp -a --delete SRC [HOST:]DST`; rsync: `rsync -a --delete SRC [HOST:]DST`.\n\n"
          + _table(info) + "\n\nTargets (issue 36):\n\n" + _targets(info) + "\n")
    (Path(outdir) / "results.json").write_text(__import__("json").dumps(results, indent=1, default=str) + "\n")
    (Path(outdir) / "table.md").write_text(md)
    print(md)
    print(f"results: {outdir}/results.json, table.md")
    return 0 if results["complete"] else 2
