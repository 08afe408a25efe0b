#!/usr/bin/env python3
"""Bar charts of a results.json (bench) or sweep results.json.

Usable as a module (draw(results, png)) or on its own, by any python3 that
has matplotlib:  python3 chart.py results.json chart.png
It imports nothing else from the harness on purpose.
"""

import json
import sys

COLORS = {"baseline": "#8c8c8c", "bfo": "#1f77b4", "limit": "#2ca02c"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def draw_bench(results, png):
    plt = _plt()
    sets = [s for s in results["sets"].values() if any(m.get("median") for m in s["methods"].values())]
    if not sets:
        return False
    fig, axes = plt.subplots(len(sets), 1, figsize=(10, 1.2 + 0.55 * max(len(s["methods"]) for s in sets)
                                                     * len(sets) + 0.6 * len(sets)), squeeze=False)
    cache = results.get("cache", "cold")
    scenario = results.get("scenario", "read")
    base_name = {"w1": "plain-write-sync", "m1": "bfo-cp", "m2": "bfo-cp-ssh"}.get(scenario, "plain-1t")
    for ax, s in zip(axes[:, 0], sets):
        ms = list(s["methods"].values())
        # a method timed on a subset (W1's fsync-per-file baseline) is drawn extrapolated to the whole set
        sc = [m.get("scale") or 1.0 for m in ms]
        names = [m["name"] + (" (FAILED)" if m["status"] == "FAILED" else "")
                 + (f" (x{k:.0f}, extrapolated)" if k != 1.0 else "") for m, k in zip(ms, sc)]
        med = [(m.get("median") or 0) * k for m, k in zip(ms, sc)]
        lo = [(m["median"] - m["min"]) * k if m.get("median") else 0 for m, k in zip(ms, sc)]
        hi = [(m["max"] - m["median"]) * k if m.get("median") else 0 for m, k in zip(ms, sc)]
        colors = ["#d62728" if m["status"] == "FAILED" else COLORS.get(m["group"], "#9467bd") for m in ms]
        y = list(range(len(ms)))[::-1]
        ax.barh(y, med, xerr=[lo, hi], color=colors, capsize=3)
        ax.set_yticks(y)
        ax.set_yticklabels(names)
        base = next((v for v, m in zip(med, ms) if m["name"] == base_name and v), None)
        for yy, v, m, k in zip(y, med, ms, sc):
            if not v:
                ax.text(0, yy, " not available" if m["status"] == "n/a" else " no successful run",
                        va="center", fontsize=8, color="#666666")
                continue
            lab = f"  {v:.2f}s"
            if base and scenario in ("m1", "m2"):
                lab += f"  ({v / base:.1f}x {base_name}'s time)"
            elif base and scenario == "w1":
                lab += f"  ({v / base:.2f}x {base_name})"
            elif base:
                lab += f"  ({base / v:.1f}x vs {base_name})"
            ax.text((m.get("max") or v / k) * k, yy, lab, va="center", fontsize=8)
        ax.set_xlabel(f"seconds, median (whiskers: min-max), {cache} cache")
        where = {"w1": f" written on {s.get('fs')}", "m1": f" copied {s.get('src_fs')} -> {s.get('fs')}",
                 "m2": f" copied over ssh (1 Gbit/s) {s.get('src_fs')} -> {s.get('fs')}"}
        ax.set_title(f"{s['set']}: {s['files']:,} files, {s['bytes'] / 1e6:,.0f} MB{where.get(scenario, '')}",
                     fontsize=10)
        ax.set_xlim(0, max((m.get("max") or 0) * k for m, k in zip(ms, sc)) * 1.5)
    title = {"w1": "W1 write", "m1": "M1 copy", "m2": "M2 copy between machines"}.get(scenario, "read")
    fig.suptitle(f"BFO {title} benchmark - {results.get('started', '')} - "
                 f"{results['machine'].get('kernel', '')}, {results['machine'].get('cpu_count')} CPUs",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(png, dpi=110)
    return True


def draw_sweep(results, png):
    plt = _plt()
    panels = []
    for sname, s in results["sets"].items():
        for eng, e in s["engines"].items():
            for knob, rows in e["knobs"].items():
                pts = [r for r in rows if r.get("median")]
                if pts:
                    panels.append((f"{sname} / {eng} / {knob}", pts, e.get("default", {}).get("median")))
    if not panels:
        return False
    cols = 3
    rows_n = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(12, 3.0 * rows_n), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (title, pts, dflt) in zip(axes.flat, panels):
        x = list(range(len(pts)))
        ax.bar(x, [p["median"] for p in pts], color="#1f77b4",
               yerr=[[p["median"] - p["min"] for p in pts], [p["max"] - p["median"] for p in pts]], capsize=3)
        ax.set_xticks(x)
        ax.set_xticklabels([str(p["value"]) for p in pts])
        if dflt:
            ax.axhline(dflt, color="#d62728", linestyle="--", linewidth=1, label="defaults")
            ax.legend(fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("seconds")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    return True


def draw_latency(results, png):
    """L1: a panel per job, seconds against the link's round trip, bfo and the baseline on HDFS and S3; the same
    job on the local disk as horizontal lines."""
    plt = _plt()
    merged = [m for m in results.get("merged", []) if m.get("ok") and m.get("median")]
    jobs = list(dict.fromkeys(m["job"] for m in merged))
    if not jobs:
        return False
    titles = results.get("titles", {})
    cols = 2
    rows_n = (len(jobs) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(11, 3.3 * rows_n), squeeze=False)
    for ax in axes.flat[len(jobs):]:
        ax.axis("off")
    style = {("hdfs", "bfo"): ("#1f77b4", "-", "o"), ("hdfs", "base"): ("#1f77b4", "--", "s"),
             ("s3", "bfo"): ("#ff7f0e", "-", "o"), ("s3", "base"): ("#ff7f0e", "--", "s")}
    for ax, job in zip(axes.flat, jobs):
        ms = [m for m in merged if m["job"] == job]
        names = results.get("method_names", {}).get(job, {})
        for (place, side), (color, ls, mk) in style.items():
            pts = sorted((m["rtt_ms"], m["median"], m["min"], m["max"]) for m in ms
                         if m["place"] == place and m["side"] == side)
            if not pts:
                continue
            x = [p[0] for p in pts]
            y = [p[1] for p in pts]
            ax.errorbar(x, y, yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]], color=color,
                        linestyle=ls, marker=mk, capsize=3, label=f"{names.get(side, side)}, {place.upper()}")
        for m in ms:
            if m["place"] == "local":
                ax.axhline(m["median"], color="#2ca02c", linestyle="-" if m["side"] == "bfo" else "--",
                           linewidth=1, label=f"{names.get(m['side'], m['side'])}, local disk")
        ax.set_yscale("log")
        ax.set_xlabel("round trip, ms")
        ax.set_ylabel("seconds (median)")
        ax.set_title(titles.get(job, job), fontsize=10)
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"BFO L1: {results.get('files', 0):,} small files behind a link with latency - "
                 f"{results.get('started', '')}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(png, dpi=100)
    return True


def draw(results, png):
    if results.get("kind") == "latency":
        return draw_latency(results, png)
    if results.get("kind") == "sweep":
        return draw_sweep(results, png)
    return draw_bench(results, png)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py results.json chart.png")
    with open(sys.argv[1]) as f:
        ok = draw(json.load(f), sys.argv[2])
    if not ok:
        print("nothing to draw", file=sys.stderr)
    sys.exit(0 if ok else 3)
