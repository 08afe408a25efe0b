"""Tables, results directory, JSON, markdown and the chart."""

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import util
from .native import BENCH_DIR, HERE

BASELINES = ("plain-1t", "plain-4t", "tar")
LIMIT = "device-seq"


def results_dir(explicit, workdir, suffix=""):
    """benchmarks/results/<timestamp><suffix>/, or a fallback in the work dir
    when benchmarks/results is not writable (e.g. not root)."""
    stamp = time.strftime("%Y%m%d-%H%M%S") + suffix
    candidates = [Path(explicit)] if explicit else [BENCH_DIR / "results", Path(workdir) / "results"]
    for base in candidates:
        try:
            base.mkdir(parents=True, exist_ok=True)
            d = base / stamp
            n = 1
            while d.exists():
                n += 1
                d = base / f"{stamp}-{n}"
            d.mkdir()
            if base != candidates[0]:
                util.warn(f"{candidates[0]} not writable; results go to {d}")
            return d
        except OSError:
            continue
    raise RuntimeError(f"cannot create a results directory under {candidates}")


def _fmt_s(x):
    return "-" if x is None else (f"{x:.3f}" if x < 100 else f"{x:.1f}")


def set_table(set_rec):
    """Markdown table for one set's method records."""
    methods = set_rec["methods"]
    mb = set_rec["bytes"] / 1e6
    med = {n: r["median"] for n, r in methods.items() if r.get("median")}
    bases = [b for b in BASELINES if b in methods]      # columns only for baselines that were selected
    lim = [f"x {LIMIT}"] if LIMIT in med else []       # only when the device limit was measured
    headers = ["method", "median s", "min-max s", "MB/s"] + [f"vs {b}" for b in bases] + \
              lim + ["verified", "note"]
    rows = []
    for name, r in methods.items():
        m = r.get("median")
        if r["status"] == "n/a":
            rows.append([name, "not available", "", "", *[""] * len(bases), *[""] * len(lim), "",
                         r.get("reason") or ""])
            continue
        ver = {True: "yes", False: "FAILED", None: "-"}[r.get("verified")]
        if r["status"] == "FAILED" and r.get("verified") is not False:
            ver = "FAILED"
        if m is None:
            rows.append([name, "-", "", "", *[""] * len(bases), *[""] * len(lim), ver, r.get("reason") or ""])
            continue
        rng = f"{_fmt_s(r['min'])}-{_fmt_s(r['max'])}" if r.get("n", 0) > 1 else ""
        sp = [f"{med[b] / m:.2f}x" if b in med else "-" for b in bases]
        dev = [f"{m / med[LIMIT]:.1f}"] if lim else []
        note = r.get("note") or ""
        if r.get("verified") is False:
            note = (f"wrong bytes: {r.get('verify_detail')}; " + note).strip("; ")
        if r["status"] == "FAILED" and r.get("reason"):
            note = (note + " " + r["reason"]).strip()
        rows.append([name, _fmt_s(m), rng, f"{mb / m:.1f}", *sp, *dev, ver, note])
    align = ["l", "r", "r", "r"] + ["r"] * len(bases) + ["r"] * len(lim) + ["l", "l"]
    return util.md_table(headers, rows, align)


def set_heading(set_rec, cache):
    p = set_rec
    return (f"### {p['set']}: {p['files']:,} files, {p['bytes'] / 1e6:,.1f} MB ({cache} cache)\n\n"
            f"{p['description']}.")


def legend(cache):
    return ("median of the runs; MB/s = set bytes (decimal MB) / median seconds; "
            "vs X = X's median seconds / this method's median seconds (above 1 = faster than X); "
            f"x {LIMIT} = this method's seconds / {LIMIT}'s seconds (1.0 = the device's sequential limit). "
            + ("Every run starts with a cold cache (sync; echo 3 > /proc/sys/vm/drop_caches)."
               if cache == "cold" else "WARM CACHE: not root, caches were not dropped; these numbers are "
                                       "not comparable with cold-cache results."))


def write_all(outdir, results, md_text):
    outdir = Path(outdir)
    (outdir / "results.json").write_text(json.dumps(results, indent=1, sort_keys=False, default=str) + "\n")
    (outdir / "table.md").write_text(md_text)
    chart(outdir / "results.json", outdir / "chart.png")


def _has_matplotlib(python):
    try:
        r = util.run([python, "-c", "import matplotlib"], timeout=60)
        return r.ok
    except Exception:  # noqa: BLE001
        return False


def chart(results_json, png):
    """Draw the chart in this interpreter when it has matplotlib, else with the
    system python3 (Debian's python3-matplotlib), else skip with a notice."""
    # matplotlib wants a writable config dir; HOME may not be ours (setpriv, sudo -u)
    mpl_tmp = None
    if "MPLCONFIGDIR" not in os.environ and not os.access(os.path.expanduser("~"), os.W_OK):
        mpl_tmp = tempfile.mkdtemp(prefix="bfo-bench-mpl-")
        os.environ["MPLCONFIGDIR"] = mpl_tmp
    try:
        return _chart(results_json, png)
    finally:
        if mpl_tmp:
            shutil.rmtree(mpl_tmp, ignore_errors=True)
            del os.environ["MPLCONFIGDIR"]


def _chart(results_json, png):
    try:
        import matplotlib  # noqa: F401
        from . import chart as chart_mod
        if not chart_mod.draw(json.loads(Path(results_json).read_text()), png):
            util.log("no timings to draw, chart.png skipped")
            return False
        return True
    except ImportError:
        pass
    for py in ("/usr/bin/python3", shutil.which("python3")):
        if py and os.path.realpath(py) != os.path.realpath(sys.executable) and _has_matplotlib(py):
            r = util.run([py, HERE / "chart.py", results_json, png], timeout=300)
            if r.ok:
                return True
            if r.returncode == 3:
                util.log("no timings to draw, chart.png skipped")
                return False
            util.warn(f"chart failed: {(r.stderr or '').strip()[-500:]}")
            return False
    util.log("NOTICE: matplotlib not installed, chart.png skipped (apt-get install python3-matplotlib)")
    return False
