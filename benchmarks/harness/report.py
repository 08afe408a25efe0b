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


def wm_legend(cache, scenario="w1"):
    return ("median of the runs (min-max beside it); every run, and every untimed verification run, writes onto "
            "a new destination (" + ("a new file system, mkfs before each" if cache == "cold" else "a new directory")
            + ") and is timed wall-clock from process start to exit; "
            "MB/s = file bytes (decimal MB) / median seconds. "
            + ("Every run starts with a cold cache (sync; echo 3 > /proc/sys/vm/drop_caches)"
               + ("; the input stream is then read back into the page cache (cat > /dev/null) before the clock "
                  "starts." if scenario == "w1" else ": source and destination both cold.")
               if cache == "cold" else "WARM CACHE: not root: no fresh file systems (fresh directories instead), "
                                       "caches not dropped; not comparable with cold-cache results."))


def m2_legend(cache):
    return (wm_legend(cache, "m2") + " The receiver is another machine on this kernel (a network namespace with "
            "its own sshd, joined by a veth pair limited to 1 Gbit/s each way): one cache drop empties both sides. "
            "Every timed command ends with `sync -f DST` (the receiver's file system). MB/s = the set's file bytes "
            "(decimal MB) / median seconds; files/s = regular files / median seconds.")


def any_block(info, cache, partial=False):
    """The markdown block of one set record, whatever its scenario."""
    tag = " **INTERRUPTED: partial**" if partial else ""
    sc = info.get("scenario", "read")
    if sc == "w1":
        return w1_heading(info, cache) + tag + "\n\n" + w1_table(info) + "\n\n" + w1_notes(info) + "\n"
    if sc == "m1":
        return m1_heading(info, cache) + tag + "\n\n" + m1_table(info) + "\n\n" + m1_notes(info) + "\n"
    if sc == "m2":
        return m2_heading(info, cache) + tag + "\n\n" + m2_table(info) + "\n\n" + m2_notes(info) + "\n"
    return set_heading(info, cache) + tag + "\n\n" + set_table(info) + "\n"


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


# --------------------------------------------------------------------------
# W1 (write) and M1 (copy) tables
# --------------------------------------------------------------------------
W1_FSYNC = "plain-write-fsync"
W1_SYNC = "plain-write-sync"
W1_TARGET_FSYNC = 20.0      # bfo at least this many times faster than fsync per file
W1_TARGET_SYNC = 1.1        # bfo at most this times the write-then-one-sync time
M1_BFO = "bfo-cp"
M1_TARGET_CP = 3.0          # bfo cp -a at least this many times faster than cp -a then sync


def _full(r):
    """Median seconds scaled to the whole set (the fsync baseline runs on a subset)."""
    return r["median"] * (r.get("scale") or 1.0) if r.get("median") else None


def _ver(r):
    ver = {True: "yes", False: "FAILED", None: "-"}[r.get("verified")]
    return "FAILED" if r["status"] == "FAILED" else ver


def _note(r):
    note = r.get("note") or ""
    if r.get("verified") is False:
        note = (f"verification: {r.get('verify_detail')}; " + note).strip("; ")
    if r["status"] == "FAILED" and r.get("reason"):
        note = (note + " " + r["reason"]).strip()
    return note


def w1_heading(rec, cache):
    size = rec.get("params", {}).get("size", 4096)
    each = f"{size // 1024} KiB" if size % 1024 == 0 else f"{size:,} bytes"
    return (f"### W1 on {rec['fs']}: write {rec['files']:,} files x {each} ({rec['bytes'] / 1e6:,.1f} MB) durably "
            f"({cache} cache, " + (f"a fresh {rec['fs']} per run" if cache == "cold" else "a new directory per run")
            + f")\n\n{rec['description']}.")


def w1_table(rec):
    ms = rec["methods"]
    n_all = rec["files"]
    F = _full(ms[W1_FSYNC]) if W1_FSYNC in ms else None
    S = _full(ms[W1_SYNC]) if W1_SYNC in ms else None
    headers = ["method", "files", "median s", "min-max s", "ms/file", f"s for {n_all:,} files", "files/s", "MB/s",
               "vs fsync-per-file", "x write-then-sync", "verified", "note"]
    rows = []
    for name, r in ms.items():
        if r["status"] == "n/a":
            rows.append([name, "", "not available", "", "", "", "", "", "", "", "", r.get("reason") or ""])
            continue
        m = r.get("median")
        if m is None:
            rows.append([name, f"{r.get('files', n_all):,}", "-", "", "", "", "", "", "", "", _ver(r), _note(r)])
            continue
        files = r.get("files") or n_all
        full = _full(r)
        scaled = (r.get("scale") or 1.0) != 1.0
        rng = f"{_fmt_s(r['min'])}-{_fmt_s(r['max'])}" if r.get("n", 0) > 1 else ""
        rows.append([name, f"{files:,}", _fmt_s(m), rng, f"{1000 * m / files:.3f}",
                     _fmt_s(full) + (" (extrapolated)" if scaled else ""), f"{files / m:,.0f}",
                     f"{(r.get('bytes') or 0) / 1e6 / m:.1f}",
                     f"{F / full:.1f}x" if F else "-", f"{full / S:.2f}" if S else "-", _ver(r), _note(r)])
    align = ["l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "l", "l"]
    return util.md_table(headers, rows, align)


def w1_notes(rec):
    ms = rec["methods"]
    n_all = rec["files"]
    f = ms.get(W1_FSYNC)
    F = _full(f) if f else None
    S = _full(ms[W1_SYNC]) if W1_SYNC in ms else None
    out = ["Note: vs fsync-per-file = plain-write-fsync's seconds for all files / this method's (above 1 = faster); "
           "x write-then-sync = this method's seconds / plain-write-sync's (1.00 = as fast as writing "
           "everything and syncing once; above 1 = slower)."]
    if f and f.get("median") and (f.get("scale") or 1.0) != 1.0:
        out.append(f"plain-write-fsync ran on a {f['files']:,}-file subset (the first {f['files']:,} files of the "
                   f"same stream, a second stream file); its {n_all:,}-file time is the measured median x "
                   f"{f['scale']:.1f} ({1000 * f['median'] / f['files']:.3f} ms per file), and vs fsync-per-file "
                   "uses that extrapolated time.")
    lines = []
    for name, r in ms.items():
        if not name.startswith("bfo") or not r.get("median"):
            continue
        full = _full(r)
        parts = []
        if F:
            sp = F / full
            parts.append(f"{sp:.1f}x faster than fsync per file (target >= {W1_TARGET_FSYNC:.0f}x: "
                         f"{'met' if sp >= W1_TARGET_FSYNC else 'NOT met'})")
        if S:
            ra = full / S
            parts.append(f"{ra:.2f}x the write-then-one-sync time (target <= {W1_TARGET_SYNC}x: "
                         f"{'met' if ra <= W1_TARGET_SYNC else 'NOT met'})")
        if parts:
            lines.append(f"- {name}: " + "; ".join(parts))
    if lines:
        out.append(f"Targets on {rec['fs']} (medians):\n" + "\n".join(lines))
    return "\n\n".join(out)


def m1_heading(rec, cache):
    return (f"### M1: copy {rec['set']} ({rec['files']:,} files, {rec['bytes'] / 1e6:,.1f} MB) from {rec['src_fs']} "
            + (f"to a fresh {rec['fs']} ({cache} cache, a fresh destination file system per run)\n\n" if cache == "cold"
               else f"to a new directory on {rec['fs']} ({cache} cache, a new directory per run)\n\n")
            + f"{rec['description']}.")


def m1_table(rec):
    ms = rec["methods"]
    b = ms.get(M1_BFO, {}).get("median")
    headers = ["method", "median s", "min-max s", "MB/s", "files/s", f"{M1_BFO} faster by", "verified", "note"]
    rows = []
    for name, r in ms.items():
        if r["status"] == "n/a":
            rows.append([name, "not available", "", "", "", "", "", r.get("reason") or ""])
            continue
        m = r.get("median")
        if m is None:
            rows.append([name, "-", "", "", "", "", _ver(r), _note(r)])
            continue
        rng = f"{_fmt_s(r['min'])}-{_fmt_s(r['max'])}" if r.get("n", 0) > 1 else ""
        # a row as an ordinary user against bfo cp as that user; its own files and bytes (no extras)
        nob = name.endswith(util.NOBODY_SUFFIX)
        bb = ms.get(M1_BFO + util.NOBODY_SUFFIX, {}).get("median") if nob else b
        nf, nb = (r.get("files") or rec["files"], r.get("bytes") or rec["bytes"]) if nob else (rec["files"], rec["bytes"])
        rows.append([name, _fmt_s(m), rng, f"{nb / 1e6 / m:.1f}", f"{nf / m:,.0f}",
                     f"{m / bb:.2f}x" if bb else "-", _ver(r), _note(r)])
    return util.md_table(headers, rows, ["l", "r", "r", "r", "r", "r", "l", "l"])


def m1_notes(rec):
    ms = rec["methods"]
    out = [f"Note: {M1_BFO} faster by = this method's median seconds / {M1_BFO}'s (above 1: {M1_BFO} is faster; "
           f"rows -{util.NOBODY_SUFFIX.lstrip('-')}: {util.NOBODY_LABEL}, the set's directories without the "
           f"metadata extras, against {M1_BFO}{util.NOBODY_SUFFIX}). "
           "Every method ends with the copy durable: bfo cp by itself (durability batch), the others with "
           "`sync -f DST` (syncfs of the destination file system)."]
    b = ms.get(M1_BFO, {}).get("median")
    c = ms.get("cp-a-sync", {}).get("median")
    if b and c:
        sp = c / b
        out.append(f"Target: {M1_BFO} at least {M1_TARGET_CP:.0f}x faster than cp -a then sync: {sp:.2f}x "
                   f"({'met' if sp >= M1_TARGET_CP else 'NOT met'}).")
    return "\n\n".join(out)


# --------------------------------------------------------------------------
# M2 (copy to another machine over ssh)
# --------------------------------------------------------------------------
M2_BFO = "bfo-cp-ssh"
M2_RSYNC = "rsync-ssh"
M2_TAR = "tar-ssh"
M2_RAW = "ssh-raw"
M2_TARGET_RSYNC = 3.0       # bfo at least this many times faster than rsync -a
M2_TARGET_TAR = 1.5         # ... than tar | ssh
M2_TARGET_LINK = 1.5        # ... within this factor of the link's own time for the bytes, on the mixed set
M2_LINK_SET = "mixed"


def m2_heading(rec, cache):
    return (f"### M2: copy {rec['set']} ({rec['files']:,} files, {rec['bytes'] / 1e6:,.1f} MB) over ssh to another "
            f"machine, onto a fresh {rec['fs']} ({cache} cache, a fresh destination file system per run)\n\n"
            f"{rec['description']}.")


def m2_table(rec):
    ms = rec["methods"]
    b = ms.get(M2_BFO, {}).get("median")
    link = rec.get("link_seconds")
    headers = ["method", "median s", "min-max s", "MB/s", "files/s", f"x {M2_BFO}", "x link", "verified", "note"]
    rows = []
    for name, r in ms.items():
        if r["status"] == "n/a":
            rows.append([name, "not available", "", "", "", "", "", "", r.get("reason") or ""])
            continue
        m = r.get("median")
        if m is None:
            rows.append([name, "-", "", "", "", "", "", _ver(r), _note(r)])
            continue
        rng = f"{_fmt_s(r['min'])}-{_fmt_s(r['max'])}" if r.get("n", 0) > 1 else ""
        files = "-" if r["group"] == "limit" else f"{rec['files'] / m:,.0f}"
        rows.append([name, _fmt_s(m), rng, f"{rec['bytes'] / 1e6 / m:.1f}", files,
                     f"{m / b:.2f}" if b else "-", f"{m / link:.2f}" if link else "-", _ver(r), _note(r)])
    if link:
        rate = rec.get("link_rate_bits") or 1e9
        rows.append([f"link ({rate / 1e9:g} Gbit/s)", _fmt_s(link), "", f"{rec['bytes'] / 1e6 / link:.1f}", "-",
                     f"{link / b:.2f}" if b else "-", "1.00", "-",
                     f"computed: {rec['bytes']:,} bytes / ({rate / 1e9:g}e9/8) bytes/s, not measured"])
    return util.md_table(headers, rows, ["l", "r", "r", "r", "r", "r", "r", "l", "l"])


def _met(ok):
    return "met" if ok else "NOT met"


def m2_notes(rec):
    ms = rec["methods"]
    out = [f"Note: x {M2_BFO} = this method's median seconds / {M2_BFO}'s (above 1: bfo is faster by that "
           "factor); x link = this method's median / the link's own time for the set's file bytes at its rate "
           f"(1.00 = the wire's limit for the data alone; {M2_RAW} is that byte count in one ssh stream, the "
           "practical limit through ssh)."]
    b = ms.get(M2_BFO, {}).get("median")
    if not b:
        out.append(f"Targets: {M2_BFO} has no successful timed run: not met.")
        return "\n\n".join(out)
    lines = []
    raw = ms.get(M2_RAW, {}).get("median")
    for other, target in ((M2_RSYNC, M2_TARGET_RSYNC), (M2_TAR, M2_TARGET_TAR)):
        o = ms.get(other, {}).get("median")
        if o:
            ceiling = (f"; a copy as fast as {M2_RAW} would be {o / raw:.2f}x faster than {other}" if raw else "")
            lines.append(f"- {M2_BFO} at least {target:g}x faster than {other}: {o / b:.2f}x ({_met(o / b >= target)})"
                         + ceiling)
        elif other in ms:
            lines.append(f"- {M2_BFO} at least {target:g}x faster than {other}: {other} has no successful run")
    link = rec.get("link_seconds")
    if link:
        ratio = b / link
        if rec["set"] == M2_LINK_SET:
            lines.append(f"- {M2_BFO} within {M2_TARGET_LINK:g}x of the link time on the {M2_LINK_SET} set: "
                         f"{ratio:.2f}x ({b:.2f} s vs {link:.2f} s; {_met(ratio <= M2_TARGET_LINK)})")
        else:
            lines.append(f"- (the link-time target is for the {M2_LINK_SET} set; here {M2_BFO} takes {ratio:.2f}x "
                         f"the link time, {b:.2f} s vs {link:.2f} s)")
    if raw:
        lines.append(f"- for reference: {M2_RAW} (the same bytes in one ssh stream) {raw:.2f} s = {raw / link:.2f}x "
                     f"the link time; {M2_BFO} takes {b / raw:.2f}x that")
    out.append(f"Targets ({rec['set']} set, medians):\n" + "\n".join(lines))
    return "\n\n".join(out)
