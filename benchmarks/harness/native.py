"""Native pieces: the C helpers compiled by the harness (plainread, devread,
plainwrite)
and the `bfo` command (located, built with CMake when missing, probed)."""

import json
import os
from pathlib import Path

from . import util

HERE = Path(__file__).resolve().parent          # benchmarks/harness
BENCH_DIR = HERE.parent                          # benchmarks
REPO = BENCH_DIR.parent                          # the BFO repository
BFO_NATIVE = REPO / "bfo-native"
DEFAULT_BFO = BFO_NATIVE / "build" / "bfo"


# --------------------------------------------------------------------------
# C helpers
# --------------------------------------------------------------------------
class Helpers:
    """Compiles benchmarks/harness/*.c with `cc -O2` into <workdir>/bin."""

    def __init__(self, bindir):
        self.bindir = Path(bindir)
        self.plainread = None
        self.plainread_checksum = False
        self.devread = None
        self.plainwrite = None

    def _compile(self, name, extra_flags, libs):
        src = HERE / f"{name}.c"
        out = self.bindir / name
        flags_file = self.bindir / f".{name}.flags"
        flags = " ".join(extra_flags + libs)
        if (out.exists() and out.stat().st_mtime >= src.stat().st_mtime and flags_file.exists()
                and flags_file.read_text() == flags):
            return out, None
        self.bindir.mkdir(parents=True, exist_ok=True)
        tmp = self.bindir / f".{name}.tmp.{os.getpid()}"
        cc = os.environ.get("CC", "cc")
        r = util.run([cc, "-O2", "-Wall", *extra_flags, "-o", tmp, src, *libs])
        if not r.ok:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
            return None, (r.stderr or "").strip()
        os.replace(tmp, out)
        flags_file.write_text(flags)
        return out, None

    def build(self):
        out, err = self._compile("plainread", [], ["-lxxhash", "-lpthread"])
        if out:
            self.plainread, self.plainread_checksum = out, True
        else:
            util.warn("could not build plainread with libxxhash (apt-get install libxxhash-dev); "
                      "building it without --checksum:\n" + err)
            out, err = self._compile("plainread", ["-DPLAINREAD_NO_XXHASH"], ["-lpthread"])
            if not out:
                raise RuntimeError("cannot compile benchmarks/harness/plainread.c:\n" + err)
            self.plainread, self.plainread_checksum = out, False
        out, err = self._compile("devread", [], ["-lpthread"])
        if not out:
            util.warn("cannot compile devread.c, device-seq unavailable:\n" + err)
        self.devread = out
        out, err = self._compile("plainwrite", [], [])
        if not out:
            util.warn("cannot compile plainwrite.c, the plain-write methods are unavailable:\n" + err)
        self.plainwrite = out
        return self


# --------------------------------------------------------------------------
# bfo
# --------------------------------------------------------------------------
class Bfo:
    """The bfo command: path, availability, version, per-engine probes."""

    def __init__(self, path, reason=None):
        self.path = Path(path) if path else None
        self.reason = reason            # why it is not available (None when it is)
        self.version = None
        self.probes = {}                # engine -> (ok, reason, json)

    @property
    def available(self):
        return self.path is not None and self.reason is None

    @classmethod
    def locate(cls, explicit=None, build=True, logdir=None):
        if explicit:
            p = Path(explicit)
            if not (p.is_file() and os.access(p, os.X_OK)):
                return cls(None, f"{p} is not an executable file")
            return cls(p)._with_version()
        p = DEFAULT_BFO
        if p.is_file() and os.access(p, os.X_OK):
            return cls(p)._with_version()
        if not build:
            return cls(None, f"{p} missing (building disabled)")
        reason = cls._build(logdir)
        if reason:
            return cls(None, reason)
        if p.is_file() and os.access(p, os.X_OK):
            return cls(p)._with_version()
        return cls(None, f"{p} still missing after building")

    @staticmethod
    def _build(logdir):
        """cmake -S bfo-native -B bfo-native/build && cmake --build bfo-native/build"""
        if not util.which("cmake"):
            return "bfo missing and cmake not installed"
        if not (BFO_NATIVE / "CMakeLists.txt").exists():
            return f"bfo missing and {BFO_NATIVE}/CMakeLists.txt not found"
        if not os.access(BFO_NATIVE, os.W_OK):
            return f"bfo missing and {BFO_NATIVE} not writable to build it"
        logfile = Path(logdir or "/tmp") / "bfo-build.log"
        util.log(f"bfo not built: building it with CMake (log: {logfile})")
        with open(logfile, "w") as lf:
            for cmd in (["cmake", "-S", "bfo-native", "-B", "bfo-native/build"],
                        ["cmake", "--build", "bfo-native/build", "-j", str(os.cpu_count() or 2)]):
                lf.write("$ " + " ".join(cmd) + "\n")
                lf.flush()
                r = util.run(cmd, capture=False, stdout=lf, stderr=lf, cwd=REPO, timeout=1800)
                if not r.ok:
                    return f"building bfo failed (exit {r.returncode}, see {logfile})"
        return None

    def _with_version(self):
        try:
            r = util.run([self.path, "--version"], timeout=20)
            self.version = (r.stdout or r.stderr or "").strip().splitlines()[0] if (r.stdout or r.stderr) else None
        except Exception as e:  # noqa: BLE001 - a broken binary just has no version
            self.version = None
            util.debug(f"bfo --version: {e}")
        return self

    def snapshot(self, bindir):
        """Copy the binary and the libbfo it loads into bindir and use that copy:
        a rebuild of bfo-native/build during a long run (the machine is shared)
        then cannot mix two builds in one results table. The binary's RUNPATH
        starts with $ORIGIN, so the copied libbfo next to it is the one loaded.
        Returns the snapshot's record ({} when not available)."""
        import hashlib
        import shutil
        if not self.available:
            return {}
        bindir = Path(bindir)
        bindir.mkdir(parents=True, exist_ok=True)
        libs = {}
        r = util.run(["ldd", self.path], timeout=30)
        for line in (r.stdout or "").splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0].startswith("libbfo") and parts[1] == "=>":
                libs[parts[0]] = os.path.realpath(parts[2])
        rp = util.run(["readelf", "-d", self.path], timeout=30) if util.which("readelf") else None
        if libs and rp is not None and "$ORIGIN" not in (rp.stdout or ""):
            util.warn("bfo has no $ORIGIN runpath: not snapshotting it")
            return {}
        rec = {"from": str(self.path), "path": str(bindir / "bfo"), "files": {}}
        for name, src in [("bfo", os.path.realpath(self.path))] + sorted(libs.items()):
            dst = bindir / name
            tmp = bindir / f".{name}.tmp"
            shutil.copy2(src, tmp)
            os.replace(tmp, dst)
            rec["files"][name] = {"from": src, "sha256": hashlib.sha256(dst.read_bytes()).hexdigest(),
                                  "mtime": time_iso(os.path.getmtime(src))}
        self.path = bindir / "bfo"
        self.probes = {}
        return rec

    def read_cmd(self, engine, paths, *, json_out=True, checksum=False, knobs=None):
        cmd = [self.path, "read", "--engine", engine]
        if json_out:
            cmd.append("--json")
        if checksum:
            cmd.append("--checksum")
        for k, v in (knobs or {}).items():
            cmd += [f"--{k}", str(v)]
        return cmd + [str(p) for p in paths]

    def probe(self, engine, probe_dir, expect_files):
        """Run `bfo read --engine E --json PROBE_DIR` on a tiny directory; the
        engine is usable when it exits 0 and ends with the JSON line."""
        if engine in self.probes:
            return self.probes[engine]
        if not self.available:
            res = (False, self.reason, None)
        else:
            try:
                r = util.run(self.read_cmd(engine, [probe_dir]), timeout=120)
                js = parse_json_tail(r.stdout)
                if r.returncode != 0:
                    first = (r.stderr or r.stdout or "").strip().splitlines()
                    res = (False, f"exit {r.returncode}: {first[0] if first else 'no message'}", js)
                elif js is None:
                    res = (False, "`bfo read --json` printed no JSON line (not implemented yet?)", None)
                elif js.get("files") != expect_files:
                    res = (False, f"probe read {js.get('files')} files, expected {expect_files}", js)
                else:
                    res = (True, None, js)
            except Exception as e:  # noqa: BLE001
                res = (False, f"probe failed: {e}", None)
        self.probes[engine] = res
        return res


def time_iso(t):
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))


def parse_json_tail(stdout):
    """The last non-empty stdout line parsed as a JSON object, else None."""
    if not stdout:
        return None
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if not line:
            continue
        try:
            v = json.loads(line)
        except ValueError:
            return None
        return v if isinstance(v, dict) else None
    return None
