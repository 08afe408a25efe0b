"""Small shared helpers: logging, child processes that can always be stopped,
signal handling, cache dropping, size parsing and formatting."""

import hashlib
import os
import signal
import statistics
import subprocess
import sys
import time

_T0 = time.monotonic()
VERBOSE = False


def log(msg, *, end="\n"):
    """Progress messages go to stderr so stdout stays the tables."""
    sys.stderr.write(f"[{time.monotonic() - _T0:7.1f}s] {msg}{end}")
    sys.stderr.flush()


def debug(msg):
    if VERBOSE:
        log(msg)


def warn(msg):
    log(f"WARNING: {msg}")


class Interrupted(BaseException):
    """Raised in the main thread on SIGTERM/SIGHUP (SIGINT raises KeyboardInterrupt).
    A BaseException so that `except Exception` blocks never swallow it."""

    def __init__(self, signum):
        super().__init__(f"interrupted by signal {signal.Signals(signum).name}")
        self.signum = signum


# --------------------------------------------------------------------------
# Child processes. Every child is started in its own session (its own process
# group), so a Ctrl-C on the terminal reaches only this script, which then
# stops exactly the process groups it started (by id) before it unmounts.
# --------------------------------------------------------------------------
_children = set()


def _kill_group(p, sig=signal.SIGKILL):
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_children():
    for p in list(_children):
        _kill_group(p)
        try:
            p.wait(timeout=10)
        except Exception:
            pass
        _children.discard(p)


class Result:
    __slots__ = ("args", "returncode", "stdout", "stderr", "seconds")

    def __init__(self, args, returncode, stdout, stderr, seconds):
        self.args, self.returncode, self.stdout, self.stderr, self.seconds = args, returncode, stdout, stderr, seconds

    @property
    def ok(self):
        return self.returncode == 0


def run(args, *, capture=True, stdout=None, stderr=None, stdin=None, input=None, timeout=None, check=False, cwd=None,
        env=None, text=True):
    """Run a command to completion and time it (wall clock, perf_counter).

    capture=True collects stdout and stderr; stdout= may instead name an open
    file or subprocess.DEVNULL. On any exception (including Ctrl-C) the
    child's whole process group is killed before the exception propagates."""
    debug("run: " + " ".join(map(str, args)))
    out = stdout if stdout is not None else (subprocess.PIPE if capture else None)
    err = stderr if stderr is not None else (subprocess.PIPE if capture else None)
    if input is not None:
        stdin = subprocess.PIPE
    t0 = time.perf_counter()
    try:
        p = subprocess.Popen([str(a) for a in args], stdin=stdin, stdout=out, stderr=err, cwd=cwd, env=env,
                             text=text, start_new_session=True)
    except OSError as e:     # missing or busy binary (e.g. bfo being rebuilt): a failed run, not a crash
        r = Result(args, 127, "", f"cannot run {args[0]}: {e}", time.perf_counter() - t0)
        if check:
            raise RuntimeError(r.stderr) from e
        return r
    _children.add(p)
    try:
        o, e = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        o, e = p.communicate()
        _children.discard(p)
        r = Result(args, 124, o, (e or "") + f"\ntimed out after {timeout:.0f}s (killed)",
                   time.perf_counter() - t0)
        if check:
            raise RuntimeError(f"command timed out: {' '.join(map(str, args))}")
        return r
    except BaseException:
        _kill_group(p)
        p.wait()
        raise
    finally:
        _children.discard(p)
    seconds = time.perf_counter() - t0
    r = Result(args, p.returncode, o, e, seconds)
    if check and p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(map(str, args))}\n{(e or '').strip()}")
    return r


def popen(args, **kw):
    """Start a tracked child (its own process group); the caller must wait()."""
    p = subprocess.Popen([str(a) for a in args], start_new_session=True, **kw)
    _children.add(p)
    return p


def forget(p):
    _children.discard(p)


# --------------------------------------------------------------------------
# Signals
# --------------------------------------------------------------------------
_cleaning = False


def _handler(signum, frame):
    if _cleaning:
        log(f"signal {signal.Signals(signum).name} ignored: cleaning up, please wait")
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Interrupted(signum)


def install_signal_handlers():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _handler)


class cleaning:
    """Context manager: while cleaning up, further signals are noted, not raised."""

    def __enter__(self):
        global _cleaning
        self.prev = _cleaning
        _cleaning = True

    def __exit__(self, *exc):
        global _cleaning
        _cleaning = self.prev
        return False


# --------------------------------------------------------------------------
# System
# --------------------------------------------------------------------------
def scenario_entry(body, args):
    """Runs a scenario's body(args): its exit status, 128+N when interrupted (the body's context managers
    have cleaned up by then: unmounted, detached), 2 on a RuntimeError (logged)."""
    try:
        return body(args)
    except (KeyboardInterrupt, Interrupted) as e:
        log(f"interrupted ({e or 'SIGINT'}); cleaned up: unmounted, detached")
        return 128 + getattr(e, "signum", 2)
    except RuntimeError as e:
        log(f"ERROR: {e}")
        return 2


def is_root():
    return os.geteuid() == 0


def drop_caches():
    """sync, then drop the page cache, dentries and inodes (root only)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def which(name):
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) + ["/usr/sbin", "/sbin"]:
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


# --------------------------------------------------------------------------
# Sizes and numbers
# --------------------------------------------------------------------------
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(s):
    """'64K' -> 65536 (powers of 1024, like bfo's SIZE arguments)."""
    s = str(s).strip().upper().rstrip("B").rstrip("I")
    num = s.rstrip("KMGT")
    return int(float(num) * _SUFFIX[s[len(num):]])


def fmt_size(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def summarize(values):
    """median/min/max of a list of floats (None when empty)."""
    if not values:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def md_table(headers, rows, align=None):
    """A GitHub-markdown table (also readable as plain text)."""
    cols = len(headers)
    cells = [[str(c) for c in headers]] + [[("" if c is None else str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(cols)]
    align = align or ["l"] + ["r"] * (cols - 1)

    def line(r):
        out = []
        for i, c in enumerate(r):
            out.append(c.ljust(widths[i]) if align[i] == "l" else c.rjust(widths[i]))
        return "| " + " | ".join(out) + " |"

    sep = "| " + " | ".join(("-" * widths[i]) if align[i] == "l" else ("-" * (widths[i] - 1) + ":")
                           for i in range(cols)) + " |"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def sha256_file(path):
    """SHA-256 of a file's bytes, hex (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


# --------------------------------------------------------------------------
# An ordinary user's rows (issue 34): the harness runs as root (it makes loop
# images and drops caches); these rows run the method's command as uid 65534
# with the soft RLIMIT_NOFILE of a login or a service (1024; the hard limit
# stays root's), where root's own limit here is 20,000.
# --------------------------------------------------------------------------
NOBODY_UID = NOBODY_GID = 65534
USER_NOFILE = 1024
NOBODY_SUFFIX = "-nobody"
NOBODY_LABEL = f"as uid {NOBODY_UID}, soft RLIMIT_NOFILE {USER_NOFILE} (an ordinary user's default)"


def as_nobody(cmd):
    """cmd as uid 65534 (no groups) with the soft descriptor limit 1024."""
    return (["prlimit", f"--nofile={USER_NOFILE}:", "--", "setpriv", f"--reuid={NOBODY_UID}",
             f"--regid={NOBODY_GID}", "--clear-groups", "--"] + [str(a) for a in cmd])


def nobody_cannot(paths, *, readable=(), writable=()):
    """Why uid 65534 cannot run a row here (None: it can): root and setpriv/prlimit needed, every path in
    paths reachable (searchable parents) and executable or readable, readable ones readable, writable ones
    writable."""
    if not is_root():
        return "rows as an ordinary user need root (setpriv)"
    for tool in ("setpriv", "prlimit"):
        if not which(tool):
            return f"{tool} not installed (util-linux)"
    checks = [("-e", p) for p in paths] + [("-r", p) for p in readable] + [("-w", p) for p in writable]
    for flag, p in checks:
        r = run(as_nobody(["test", flag, str(p)]))
        if r.returncode != 0:
            return (f"uid {NOBODY_UID} cannot {'reach' if flag == '-e' else 'read' if flag == '-r' else 'write'} "
                    f"{p} (a parent not searchable by others?)")
    return None
